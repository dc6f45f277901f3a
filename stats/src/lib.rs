//! I/O counters, latency histograms and the statistics views built on them. This crate
//! depends on no other crate of iolab's.
//!
//! - [`usage`]: `BufferUsage`, what one statement (or one scan node) did to the buffer
//!   pool, in the shape of PostgreSQL's `BufferUsage` (`Buffers: shared hit=… read=…
//!   dirtied=… written=…` and `I/O Timings: shared read=… write=…`). Owned by one thread
//!   and summed with `add`, never shared behind a lock.
//! - [`io`]: PostgreSQL 18's `pg_stat_io` dimensions (backend type, object, context,
//!   operation) and which of their combinations exist; the per-thread
//!   [`PendingIoStats`] the engine's I/O choke point counts into, and the server-wide
//!   [`IoStatsHub`] they are flushed to (per backend type and per live process), with
//!   resets and snapshots.
//! - [`views`]: `pg_stat_io`, `pg_stat_get_backend_io(pid)` and `pg_aios` as Arrow record
//!   batches with PostgreSQL 18's columns, plus iolab's wait and latency columns.
//! - [`aio`]: the counters of the AIO layer itself (`pg_stat_aio`), counted and flushed
//!   with `pg_stat_io`'s.
//! - [`activity`]: what each live process is doing (`pg_stat_activity`), with the wait
//!   events the engine's I/O paths set.
//! - [`history`]: the bounded ring of per-interval deltas behind `pg_stat_io_history` and
//!   `pg_stat_aio_history`.
//! - [`wal`]: `pg_stat_wal` and `pg_stat_recovery_prefetch`.
//! - [`persist`]: the statistics file a clean shutdown writes and the next start reads.

pub mod activity;
pub mod aio;
pub mod database;
pub mod history;
pub mod io;
pub mod persist;
pub mod progress;
pub mod relation;
pub mod statements;
pub mod usage;
pub mod views;
pub mod wal;

pub use activity::{
    ActivityRegistry, ActivityStatus, AuxiliaryActivity, BackendActivity, BackendSignals,
    BackendState, WaitEvent,
};
pub use aio::{AioCounts, AioEvent, AioLatencyOp};
pub use database::SessionEnd;
pub use history::StatsHistory;
pub use io::{
    tracks_io_object, tracks_io_op, AioSnapshot, BackendIoSnapshot, BackendType, IoCell, IoContext,
    IoCounters, IoObject, IoOp, IoSnapshot, IoStatsHub, LatencyHistogram, LatencySummary,
    PendingIoStats, FLUSH_INTERVAL,
};
pub use relation::{
    PendingRelationCounts, RelationCounts, RelationStats, RelationTotals, RowChange, RowChanges,
    TableRows,
};
pub use usage::BufferUsage;
pub use views::{AioOperation, AioResultStatus, AioRow, AioState};
