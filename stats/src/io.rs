//! I/O statistics in the shape of PostgreSQL 18's `pg_stat_io`: who did the I/O (backend
//! type), on what (object), why (context), and which operation.
//!
//! # The dimensions and which cells exist
//!
//! PostgreSQL counts every I/O operation in a matrix indexed by
//! `[backend type][object][context][operation]`. Not every combination can happen — a
//! checkpointer never reads a relation, a temporary relation is never fsynced, WAL is
//! never read through a bulk-read ring — and the view says so: a combination that cannot
//! happen for any operation has **no row**, and an operation that cannot happen in an
//! existing row is **NULL** there (0 means "could happen, did not"). [`tracks_io_object`]
//! and [`tracks_io_op`] are those two rules, transcribed from PostgreSQL 18's
//! `pgstat_tracks_io_object` / `pgstat_tracks_io_op`; a unit test compares their result
//! with the NULL pattern of a live PostgreSQL 18.4 (`testdata/pg18_stat_io_nulls.txt`:
//! 79 rows).
//!
//! # From the issuing thread to the view
//!
//! ```text
//!   issuing thread (a session's scan, an I/O worker)       shared, one per server
//!   ┌─────────────────────────────┐   flush: one short   ┌──────────────────────────────┐
//!   │ PendingIoStats              │   lock, at least     │ IoStatsHub                   │
//!   │  count_op / count_wait /    │ ───────────────────► │  per backend type (pg_stat_io)│
//!   │  record_latency  (no locks) │   once per second    │  per live pid (…backend_io)  │
//!   └─────────────────────────────┘   and when idle      └──────────────────────────────┘
//! ```
//!
//! The choke point where the engine issues and completes I/O counts into a
//! [`PendingIoStats`] it owns: plain additions, no atomics, no locks. The owner flushes
//! it into the [`IoStatsHub`] when the statement ends and, if it keeps issuing I/O for
//! longer, whenever [`IoStatsHub::flush_interval`] has passed since its last flush: a
//! second — PostgreSQL's rule that pending statistics are at most about a second old —
//! or a tenth of the history's sampling interval when that is shorter (see
//! [`IoStatsHub::set_sampling_interval`]). Readers take snapshots of the hub; nothing a
//! reader does ever waits for an issuer's I/O.
//!
//! # What iolab adds to PostgreSQL's columns
//!
//! Per (object, context) cell, besides PostgreSQL's counts, bytes and times:
//! - `waits` / `wait_time`: how many advice or submission calls the issuer made to get
//!   I/O going (`posix_fadvise`, a push onto the worker queue, `io_uring_enter`) and the
//!   time spent in them — the cost of *issuing*, separate from the time *blocked* on the
//!   I/O that `read_time` measures;
//! - HDR histograms of read and write latency (submission → completion), from which the
//!   views report p50, p99, p99.9 and the maximum.
//!
//! Times are kept in nanoseconds and shown as PostgreSQL shows them: truncated to whole
//! microseconds, then multiplied by 0.001 into milliseconds (`pg_stat_us_to_ms`), so the
//! same microseconds print the same `double precision` digits as PostgreSQL's.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use hdrhistogram::Histogram;
use parking_lot::Mutex;

use crate::activity::ActivityRegistry;
use crate::aio::{AioCounts, AioEvent, AioLatencyOp};
use crate::history::StatsHistory;
use crate::persist::{Corrupt, Decoder, Encoder};

// ---------------------------------------------------------------------------------------
// Dimensions
// ---------------------------------------------------------------------------------------

/// The kind of process (in iolab: the kind of thread or session) that did the I/O, with
/// PostgreSQL 18's `backend_type` names. Declared in PostgreSQL's `BackendType` order,
/// which is the row order of `pg_stat_io`. (PostgreSQL's dead-end backends, archiver
/// and logger have no I/O statistics and are left out.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum BackendType {
    ClientBackend,
    AutovacuumLauncher,
    AutovacuumWorker,
    BackgroundWorker,
    Walsender,
    SlotsyncWorker,
    StandaloneBackend,
    BackgroundWriter,
    Checkpointer,
    IoWorker,
    Startup,
    Walreceiver,
    Walsummarizer,
    Walwriter,
}

impl BackendType {
    pub const COUNT: usize = 14;

    /// Every backend type, in `pg_stat_io`'s row order.
    pub const ALL: [BackendType; BackendType::COUNT] = [
        BackendType::ClientBackend,
        BackendType::AutovacuumLauncher,
        BackendType::AutovacuumWorker,
        BackendType::BackgroundWorker,
        BackendType::Walsender,
        BackendType::SlotsyncWorker,
        BackendType::StandaloneBackend,
        BackendType::BackgroundWriter,
        BackendType::Checkpointer,
        BackendType::IoWorker,
        BackendType::Startup,
        BackendType::Walreceiver,
        BackendType::Walsummarizer,
        BackendType::Walwriter,
    ];

    /// PostgreSQL's `backend_type` text (`pg_stat_io.backend_type`,
    /// `pg_stat_activity.backend_type`).
    pub fn name(self) -> &'static str {
        match self {
            BackendType::ClientBackend => "client backend",
            BackendType::AutovacuumLauncher => "autovacuum launcher",
            BackendType::AutovacuumWorker => "autovacuum worker",
            BackendType::BackgroundWorker => "background worker",
            BackendType::Walsender => "walsender",
            BackendType::SlotsyncWorker => "slotsync worker",
            BackendType::StandaloneBackend => "standalone backend",
            BackendType::BackgroundWriter => "background writer",
            BackendType::Checkpointer => "checkpointer",
            BackendType::IoWorker => "io worker",
            BackendType::Startup => "startup",
            BackendType::Walreceiver => "walreceiver",
            BackendType::Walsummarizer => "walsummarizer",
            BackendType::Walwriter => "walwriter",
        }
    }

    pub fn from_name(name: &str) -> Option<BackendType> {
        BackendType::ALL.into_iter().find(|b| b.name() == name)
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// Does PostgreSQL 18 keep per-process I/O statistics (`pg_stat_get_backend_io`) for
    /// this backend type? (`pgstat_tracks_backend_bktype`.) For the others the function
    /// returns no rows.
    pub fn tracks_backend_stats(self) -> bool {
        !matches!(
            self,
            BackendType::AutovacuumLauncher
                | BackendType::BackgroundWriter
                | BackendType::Checkpointer
                | BackendType::IoWorker
                | BackendType::Startup
        )
    }
}

/// What the I/O was on (`pg_stat_io.object`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IoObject {
    /// A permanent or unlogged relation, through the shared buffer pool.
    Relation,
    /// A temporary relation, through session-local buffers.
    TempRelation,
    /// The write-ahead log.
    Wal,
}

impl IoObject {
    pub const COUNT: usize = 3;
    pub const ALL: [IoObject; IoObject::COUNT] =
        [IoObject::Relation, IoObject::TempRelation, IoObject::Wal];

    pub fn name(self) -> &'static str {
        match self {
            IoObject::Relation => "relation",
            IoObject::TempRelation => "temp relation",
            IoObject::Wal => "wal",
        }
    }
}

/// Why the I/O happened (`pg_stat_io.context`): which buffer access strategy, if any,
/// the buffers came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IoContext {
    /// A large sequential scan through a bulk-read ring.
    BulkRead,
    /// A bulk load (COPY FROM, CREATE TABLE AS) through a bulk-write ring.
    BulkWrite,
    /// WAL segment initialisation.
    Init,
    /// No strategy: the normal buffer pool (and every fsync, wherever it came from).
    Normal,
    /// VACUUM and ANALYZE through a vacuum ring.
    Vacuum,
}

impl IoContext {
    pub const COUNT: usize = 5;
    pub const ALL: [IoContext; IoContext::COUNT] = [
        IoContext::BulkRead,
        IoContext::BulkWrite,
        IoContext::Init,
        IoContext::Normal,
        IoContext::Vacuum,
    ];

    pub fn name(self) -> &'static str {
        match self {
            IoContext::BulkRead => "bulkread",
            IoContext::BulkWrite => "bulkwrite",
            IoContext::Init => "init",
            IoContext::Normal => "normal",
            IoContext::Vacuum => "vacuum",
        }
    }

    /// Is this a buffer access strategy's ring (where buffers are *reused*)?
    pub fn is_strategy(self) -> bool {
        matches!(
            self,
            IoContext::BulkRead | IoContext::BulkWrite | IoContext::Vacuum
        )
    }
}

/// One kind of I/O operation. The names are PostgreSQL's `IOOp` names; each maps to one
/// count column of `pg_stat_io` (`reads`, `writes`, …).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IoOp {
    /// A valid buffer of the normal pool was evicted to make room (per block).
    Evict,
    /// A relation was extended (per extension call; `extend_bytes` has the volume).
    Extend,
    /// A file was fsynced.
    Fsync,
    /// A block was found valid in the buffer pool (per block).
    Hit,
    /// A read I/O was started (one multi-block read = 1; `read_bytes` has the volume).
    Read,
    /// A buffer already in a strategy ring was reused (per block).
    Reuse,
    /// A write I/O (`write_bytes` has the volume).
    Write,
    /// The kernel was asked to write back dirty data (per block).
    Writeback,
}

impl IoOp {
    pub const COUNT: usize = 8;
    pub const ALL: [IoOp; IoOp::COUNT] = [
        IoOp::Evict,
        IoOp::Extend,
        IoOp::Fsync,
        IoOp::Hit,
        IoOp::Read,
        IoOp::Reuse,
        IoOp::Write,
        IoOp::Writeback,
    ];

    /// PostgreSQL's name of the operation (`IOOP_READ` → `read`).
    pub fn name(self) -> &'static str {
        match self {
            IoOp::Evict => "evict",
            IoOp::Extend => "extend",
            IoOp::Fsync => "fsync",
            IoOp::Hit => "hit",
            IoOp::Read => "read",
            IoOp::Reuse => "reuse",
            IoOp::Write => "write",
            IoOp::Writeback => "writeback",
        }
    }

    /// Is the volume of this operation counted in bytes (`read_bytes`, `write_bytes`,
    /// `extend_bytes`)?
    pub fn has_bytes(self) -> bool {
        matches!(self, IoOp::Extend | IoOp::Read | IoOp::Write)
    }

    /// Is this operation timed (has a `*_time` column)?
    pub fn has_time(self) -> bool {
        !matches!(self, IoOp::Evict | IoOp::Hit | IoOp::Reuse)
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Does `pg_stat_io` have a row for (`bt`, `obj`, `ctx`)? PostgreSQL 18's
/// `pgstat_tracks_io_object`.
pub fn tracks_io_object(bt: BackendType, obj: IoObject, ctx: IoContext) -> bool {
    use BackendType as B;
    // WAL I/O happens only in the normal and init contexts.
    if obj == IoObject::Wal && !matches!(ctx, IoContext::Normal | IoContext::Init) {
        return false;
    }
    // Temporary relations are only read and written without a strategy.
    if obj == IoObject::TempRelation && ctx != IoContext::Normal {
        return false;
    }
    // Only processes that run queries have local buffers (background workers may, for
    // extensions' sake).
    let no_temp_relations = matches!(
        bt,
        B::AutovacuumLauncher
            | B::BackgroundWriter
            | B::Checkpointer
            | B::AutovacuumWorker
            | B::StandaloneBackend
            | B::Startup
            | B::Walsummarizer
            | B::Walwriter
            | B::Walreceiver
    );
    if no_temp_relations && obj == IoObject::TempRelation {
        return false;
    }
    // These only ever do WAL I/O.
    if matches!(bt, B::Walsummarizer | B::Walreceiver | B::Walwriter) && obj != IoObject::Wal {
        return false;
    }
    // Rows for contexts these never use are left out to keep the view readable.
    if matches!(bt, B::Checkpointer | B::BackgroundWriter) && ctx.is_strategy() {
        return false;
    }
    if bt == B::AutovacuumLauncher && ctx == IoContext::Vacuum {
        return false;
    }
    if matches!(bt, B::AutovacuumWorker | B::AutovacuumLauncher) && ctx == IoContext::BulkWrite {
        return false;
    }
    true
}

/// Is operation `op` counted (rather than NULL) in the row (`bt`, `obj`, `ctx`)?
/// PostgreSQL 18's `pgstat_tracks_io_op`. The bytes and time columns of an operation
/// follow its count column.
pub fn tracks_io_op(bt: BackendType, obj: IoObject, ctx: IoContext, op: IoOp) -> bool {
    use BackendType as B;
    if !tracks_io_object(bt, obj, ctx) {
        return false;
    }
    // The background writer only writes out dirty buffers; the checkpointer also reads
    // WAL (at the end of recovery).
    if bt == B::BackgroundWriter && matches!(op, IoOp::Read | IoOp::Evict | IoOp::Hit) {
        return false;
    }
    if bt == B::Checkpointer
        && ((obj != IoObject::Wal && op == IoOp::Read) || matches!(op, IoOp::Evict | IoOp::Hit))
    {
        return false;
    }
    if matches!(
        bt,
        B::AutovacuumLauncher | B::BackgroundWriter | B::Checkpointer
    ) && op == IoOp::Extend
    {
        return false;
    }
    if obj == IoObject::Wal
        && op == IoOp::Read
        && matches!(
            bt,
            B::Walreceiver
                | B::BackgroundWriter
                | B::AutovacuumLauncher
                | B::AutovacuumWorker
                | B::Walwriter
        )
    {
        return false;
    }
    // Temporary relations are not logged, so never fsynced, and no writeback is asked.
    if obj == IoObject::TempRelation && matches!(op, IoOp::Fsync | IoOp::Writeback) {
        return false;
    }
    // A bulk read never extends.
    if ctx == IoContext::BulkRead && op == IoOp::Extend {
        return false;
    }
    // Reuse means "reused a buffer of the strategy's ring".
    if !ctx.is_strategy() && op == IoOp::Reuse {
        return false;
    }
    if obj == IoObject::Wal && ctx == IoContext::Init && !matches!(op, IoOp::Write | IoOp::Fsync) {
        return false;
    }
    if obj == IoObject::Wal
        && ctx == IoContext::Normal
        && !matches!(op, IoOp::Write | IoOp::Read | IoOp::Fsync)
    {
        return false;
    }
    // A strategy user's fsyncs are counted in the normal context.
    if ctx.is_strategy() && op == IoOp::Fsync {
        return false;
    }
    true
}

// ---------------------------------------------------------------------------------------
// Latency histograms
// ---------------------------------------------------------------------------------------

/// Latencies are recorded in microseconds, from 1 µs to one minute, to 2 significant
/// figures (every value within 1 % of its true value).
pub const LATENCY_HIGHEST_US: u64 = 60_000_000;
const LATENCY_SIGNIFICANT_FIGURES: u8 = 2;

/// Memory bound: with these bounds a histogram has (19 buckets + 1) × 128 = 2 560 `u64`
/// counters, 20 KiB (checked by a unit test). A cell allocates its read and write
/// histogram only when the first latency is recorded into it, so one [`IoCounters`] holds
/// at most 15 cells × 2 = 30 histograms (600 KiB) and in practice the few cells a
/// workload touches (a session scanning tables: relation/normal and relation/bulkread
/// reads, 40 KiB; the same again in its [`PendingIoStats`]).
pub const LATENCY_HISTOGRAM_COUNTERS: usize = 2560;

/// Latencies of one operation in one cell: an HDR histogram in microseconds, plus the
/// exact largest value in nanoseconds.
#[derive(Clone, Debug)]
pub struct LatencyHistogram {
    histogram: Histogram<u64>,
    max_ns: u64,
}

/// The percentiles the views show, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencySummary {
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl LatencyHistogram {
    pub fn new() -> LatencyHistogram {
        LatencyHistogram {
            histogram: Histogram::new_with_bounds(
                1,
                LATENCY_HIGHEST_US,
                LATENCY_SIGNIFICANT_FIGURES,
            )
            .expect("constant bounds are valid"),
            max_ns: 0,
        }
    }

    /// Records one latency. Values above one minute are recorded as one minute (the exact
    /// maximum is kept apart).
    #[inline]
    pub fn record_ns(&mut self, ns: u64) {
        self.histogram.saturating_record(ns.div_ceil(1000));
        self.max_ns = self.max_ns.max(ns);
    }

    /// Number of recorded latencies.
    pub fn count(&self) -> u64 {
        self.histogram.len()
    }

    pub fn is_empty(&self) -> bool {
        self.histogram.is_empty()
    }

    /// The latency at quantile `q` (0.5 = median), in microseconds: the highest value
    /// equivalent to the recorded one at that rank (within 1 %), never above the maximum.
    pub fn value_at_quantile_us(&self, q: f64) -> f64 {
        if self.is_empty() {
            return 0.0;
        }
        let v = self.histogram.value_at_quantile(q) as f64;
        v.min(self.max_us())
    }

    /// How many recorded latencies are at most `us` microseconds (within the histogram's
    /// 1 % resolution): a cumulative bucket of a Prometheus histogram.
    pub fn count_at_or_below_us(&self, us: u64) -> u64 {
        self.histogram.count_between(0, us)
    }

    /// The sum of the recorded latencies in microseconds, from the histogram (within 1 %).
    pub fn approximate_sum_us(&self) -> f64 {
        self.histogram.mean() * self.histogram.len() as f64
    }

    /// The exact largest latency recorded, in microseconds.
    pub fn max_us(&self) -> f64 {
        self.max_ns as f64 / 1000.0
    }

    /// p50, p99, p99.9 and max; `None` when nothing was recorded.
    pub fn summary(&self) -> Option<LatencySummary> {
        if self.is_empty() {
            return None;
        }
        Some(LatencySummary {
            p50_us: self.value_at_quantile_us(0.5),
            p99_us: self.value_at_quantile_us(0.99),
            p999_us: self.value_at_quantile_us(0.999),
            max_us: self.max_us(),
        })
    }

    pub fn add(&mut self, other: &LatencyHistogram) {
        self.histogram
            .add(&other.histogram)
            .expect("histograms of the same bounds always add");
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Forgets every value, keeping the allocation.
    pub fn clear(&mut self) {
        self.histogram.reset();
        self.max_ns = 0;
    }

    /// The latencies recorded after `earlier` was copied from this histogram: the
    /// difference of the two. Its maximum is the highest value of the remaining
    /// buckets (within 1 %), since the exact maximum of an interval is not kept. When
    /// `earlier` is not a prefix of this one (the statistics were reset in between), the
    /// whole histogram.
    pub fn since(&self, earlier: Option<&LatencyHistogram>) -> LatencyHistogram {
        let mut histogram = self.histogram.clone();
        if let Some(e) = earlier {
            if histogram.subtract(&e.histogram).is_err() {
                histogram = self.histogram.clone();
            }
        }
        let max_ns = if histogram.is_empty() {
            0
        } else {
            (histogram.highest_equivalent(histogram.max()) * 1000).min(self.max_ns)
        };
        LatencyHistogram { histogram, max_ns }
    }
}

/// The statistics file's form of a histogram (`persist`): its non-empty buckets as (a
/// value of the bucket, count), then the exact maximum.
impl LatencyHistogram {
    pub(crate) fn save(&self, e: &mut Encoder) {
        let buckets: Vec<(u64, u64)> = (self.histogram.iter_recorded())
            .map(|b| (b.value_iterated_to(), b.count_at_value()))
            .collect();
        e.len(buckets.len());
        for (value, count) in buckets {
            e.u64(value);
            e.u64(count);
        }
        e.u64(self.max_ns);
    }

    pub(crate) fn restore(d: &mut Decoder<'_>) -> Result<LatencyHistogram, Corrupt> {
        let mut h = LatencyHistogram::new();
        for _ in 0..d.len()? {
            let (value, count) = (d.u64()?, d.u64()?);
            (h.histogram.record_n(value, count)).map_err(|_| Corrupt("a latency out of range"))?;
        }
        h.max_ns = d.u64()?;
        Ok(h)
    }

    pub(crate) fn save_optional(h: Option<&LatencyHistogram>, e: &mut Encoder) {
        e.present(h.is_some());
        if let Some(h) = h {
            h.save(e);
        }
    }

    pub(crate) fn restore_optional(
        d: &mut Decoder<'_>,
    ) -> Result<Option<Box<LatencyHistogram>>, Corrupt> {
        let h = d
            .present()?
            .then(|| LatencyHistogram::restore(d))
            .transpose()?;
        Ok(h.map(Box::new))
    }
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram::new()
    }
}

// ---------------------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------------------

/// Everything counted for one (object, context) pair.
#[derive(Clone, Debug, Default)]
pub struct IoCell {
    counts: [u64; IoOp::COUNT],
    /// Used by the operations with [`IoOp::has_bytes`] only.
    bytes: [u64; IoOp::COUNT],
    /// Nanoseconds; 0 unless the issuer timed the operation (`track_io_timing`).
    time_ns: [u64; IoOp::COUNT],
    waits: u64,
    wait_time_ns: u64,
    read_latency: Option<Box<LatencyHistogram>>,
    write_latency: Option<Box<LatencyHistogram>>,
}

impl IoCell {
    fn save(&self, e: &mut Encoder) {
        let IoCell {
            counts,
            bytes,
            time_ns,
            waits,
            wait_time_ns,
            read_latency,
            write_latency,
        } = self;
        for values in [counts, bytes, time_ns] {
            values.iter().for_each(|&v| e.u64(v));
        }
        e.u64(*waits);
        e.u64(*wait_time_ns);
        LatencyHistogram::save_optional(read_latency.as_deref(), e);
        LatencyHistogram::save_optional(write_latency.as_deref(), e);
    }

    fn restore(d: &mut Decoder<'_>) -> Result<IoCell, Corrupt> {
        let mut cell = IoCell::default();
        for values in [&mut cell.counts, &mut cell.bytes, &mut cell.time_ns] {
            for v in values.iter_mut() {
                *v = d.u64()?;
            }
        }
        cell.waits = d.u64()?;
        cell.wait_time_ns = d.u64()?;
        cell.read_latency = LatencyHistogram::restore_optional(d)?;
        cell.write_latency = LatencyHistogram::restore_optional(d)?;
        Ok(cell)
    }

    pub fn count(&self, op: IoOp) -> u64 {
        self.counts[op.index()]
    }

    pub fn bytes(&self, op: IoOp) -> u64 {
        self.bytes[op.index()]
    }

    pub fn time_ns(&self, op: IoOp) -> u64 {
        self.time_ns[op.index()]
    }

    /// Advice / submission calls made to issue I/O.
    pub fn waits(&self) -> u64 {
        self.waits
    }

    pub fn wait_time_ns(&self) -> u64 {
        self.wait_time_ns
    }

    /// The latency histogram of [`IoOp::Read`] or [`IoOp::Write`]; `None` for other
    /// operations and for cells that never recorded one.
    pub fn latency(&self, op: IoOp) -> Option<&LatencyHistogram> {
        match op {
            IoOp::Read => self.read_latency.as_deref(),
            IoOp::Write => self.write_latency.as_deref(),
            _ => None,
        }
    }

    fn latency_mut(&mut self, op: IoOp) -> &mut LatencyHistogram {
        let slot = match op {
            IoOp::Read => &mut self.read_latency,
            IoOp::Write => &mut self.write_latency,
            other => panic!("latencies are kept for reads and writes, not {other:?}"),
        };
        slot.get_or_insert_with(Box::default)
    }

    fn is_zero(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
            && self.bytes.iter().all(|&c| c == 0)
            && self.time_ns.iter().all(|&c| c == 0)
            && self.waits == 0
            && self.wait_time_ns == 0
            && self.read_latency.as_ref().is_none_or(|h| h.is_empty())
            && self.write_latency.as_ref().is_none_or(|h| h.is_empty())
    }

    fn add(&mut self, other: &IoCell) {
        for i in 0..IoOp::COUNT {
            self.counts[i] += other.counts[i];
            self.bytes[i] += other.bytes[i];
            self.time_ns[i] += other.time_ns[i];
        }
        self.waits += other.waits;
        self.wait_time_ns += other.wait_time_ns;
        for op in [IoOp::Read, IoOp::Write] {
            if let Some(h) = other.latency(op).filter(|h| !h.is_empty()) {
                self.latency_mut(op).add(h);
            }
        }
    }

    /// Zeroes every counter, keeping the histograms' allocations.
    fn clear(&mut self) {
        self.counts = [0; IoOp::COUNT];
        self.bytes = [0; IoOp::COUNT];
        self.time_ns = [0; IoOp::COUNT];
        self.waits = 0;
        self.wait_time_ns = 0;
        for h in [&mut self.read_latency, &mut self.write_latency]
            .into_iter()
            .flatten()
        {
            h.clear();
        }
    }
}

/// The I/O of one backend type (or one process): an [`IoCell`] per (object, context).
/// About 3.4 KiB plus the histograms the cells allocated (see
/// [`LATENCY_HISTOGRAM_COUNTERS`]).
#[derive(Clone, Debug, Default)]
pub struct IoCounters {
    cells: [[IoCell; IoContext::COUNT]; IoObject::COUNT],
}

impl IoCounters {
    fn save(&self, e: &mut Encoder) {
        self.cells.iter().flatten().for_each(|cell| cell.save(e));
    }

    fn restore(d: &mut Decoder<'_>) -> Result<IoCounters, Corrupt> {
        let mut counters = IoCounters::default();
        for cell in counters.cells.iter_mut().flatten() {
            *cell = IoCell::restore(d)?;
        }
        Ok(counters)
    }

    pub fn new() -> IoCounters {
        IoCounters::default()
    }

    pub fn cell(&self, obj: IoObject, ctx: IoContext) -> &IoCell {
        &self.cells[obj as usize][ctx as usize]
    }

    #[inline]
    fn cell_mut(&mut self, obj: IoObject, ctx: IoContext) -> &mut IoCell {
        &mut self.cells[obj as usize][ctx as usize]
    }

    /// Nothing counted anywhere.
    pub fn is_zero(&self) -> bool {
        self.cells.iter().flatten().all(IoCell::is_zero)
    }

    pub fn add(&mut self, other: &IoCounters) {
        for (mine, theirs) in self.cells.iter_mut().zip(&other.cells) {
            for (m, t) in mine.iter_mut().zip(theirs) {
                m.add(t);
            }
        }
    }

    /// Zeroes everything (histogram allocations are kept).
    pub fn clear(&mut self) {
        self.cells.iter_mut().flatten().for_each(IoCell::clear);
    }

    /// The operations counted in cells where backend type `bt` can never do them
    /// ([`tracks_io_op`] is false): `(object, context, op)`. Empty for a correct issuer;
    /// PostgreSQL asserts the same (`pgstat_bktype_io_stats_valid`).
    pub fn untracked_counts(&self, bt: BackendType) -> Vec<(IoObject, IoContext, IoOp)> {
        let mut out = Vec::new();
        for obj in IoObject::ALL {
            for ctx in IoContext::ALL {
                let cell = self.cell(obj, ctx);
                for op in IoOp::ALL {
                    let used = cell.count(op) != 0 || cell.bytes(op) != 0 || cell.time_ns(op) != 0;
                    if used && !tracks_io_op(bt, obj, ctx, op) {
                        out.push((obj, ctx, op));
                    }
                }
            }
        }
        out
    }
}

// ---------------------------------------------------------------------------------------
// Pending statistics of one issuing thread
// ---------------------------------------------------------------------------------------

/// How old pending statistics may get before their owner flushes them while it keeps
/// working (PostgreSQL's `PGSTAT_MIN_INTERVAL`), unless the history samples more often
/// (see [`IoStatsHub::set_sampling_interval`]).
pub const FLUSH_INTERVAL: Duration = Duration::from_secs(1);

/// The shortest flush interval a fast sampler can ask for: it bounds the flushes (one
/// short lock each) of one issuer to 100 a second.
pub const MIN_FLUSH_INTERVAL: Duration = Duration::from_millis(10);

/// Flushes per sampling interval: a sample then misses at most a tenth of an interval of
/// an issuer's I/O (it goes into the next sample), instead of seeing nothing at all in
/// the intervals between two flushes of one second.
const FLUSHES_PER_SAMPLE: u32 = 10;

/// The I/O statistics one issuing thread has not yet flushed into the [`IoStatsHub`].
/// Owned by that thread: every method is a few additions, without locks or atomics.
///
/// ```
/// use iolab_stats::{BackendType, IoContext, IoObject, IoOp, IoStatsHub, PendingIoStats};
///
/// let hub = IoStatsHub::new();
/// hub.register_backend(4242, BackendType::ClientBackend);
/// let mut pending = PendingIoStats::new();
/// // one 16-block read, 120 µs blocked on it, completed 180 µs after submission
/// pending.count_op(IoObject::Relation, IoContext::BulkRead, IoOp::Read, 16 * 8192, 120_000);
/// pending.record_latency(IoObject::Relation, IoContext::BulkRead, IoOp::Read, 180_000);
/// pending.count_op(IoObject::Relation, IoContext::BulkRead, IoOp::Hit, 0, 0);
/// hub.flush(&mut pending, BackendType::ClientBackend, 4242);
/// assert!(pending.is_empty());
/// let shared = hub.snapshot();
/// let cell = shared.counters(BackendType::ClientBackend).cell(IoObject::Relation, IoContext::BulkRead);
/// assert_eq!((cell.count(IoOp::Read), cell.bytes(IoOp::Read)), (1, 131072));
/// ```
#[derive(Clone, Debug)]
pub struct PendingIoStats {
    counters: IoCounters,
    aio: AioCounts,
    /// Something was counted since the last flush.
    dirty: bool,
    last_flush: Instant,
}

impl Default for PendingIoStats {
    fn default() -> Self {
        PendingIoStats::new()
    }
}

impl PendingIoStats {
    pub fn new() -> PendingIoStats {
        PendingIoStats {
            counters: IoCounters::new(),
            aio: AioCounts::default(),
            dirty: false,
            last_flush: Instant::now(),
        }
    }

    /// Counts one operation of `bytes` bytes (0 for the operations without a bytes
    /// column) that took `time_ns` (0 when `track_io_timing` is off).
    #[inline]
    pub fn count_op(&mut self, obj: IoObject, ctx: IoContext, op: IoOp, bytes: u64, time_ns: u64) {
        self.count_ops(obj, ctx, op, 1, bytes, time_ns);
    }

    /// Counts `n` operations of `bytes` bytes in all (e.g. `n` hits at once). With `n` = 0
    /// only adds time — PostgreSQL's way of adding the time a backend later waited for a
    /// read it already counted.
    #[inline]
    pub fn count_ops(
        &mut self,
        obj: IoObject,
        ctx: IoContext,
        op: IoOp,
        n: u64,
        bytes: u64,
        time_ns: u64,
    ) {
        debug_assert!(
            bytes == 0 || op.has_bytes(),
            "{} has no bytes column",
            op.name()
        );
        debug_assert!(
            time_ns == 0 || op.has_time(),
            "{} has no time column",
            op.name()
        );
        let cell = self.counters.cell_mut(obj, ctx);
        let i = op.index();
        cell.counts[i] += n;
        cell.bytes[i] += bytes;
        cell.time_ns[i] += time_ns;
        self.dirty = true;
    }

    /// Counts one advice or submission call (posix_fadvise, a push onto the worker
    /// queue, io_uring_enter) that took `ns`.
    #[inline]
    pub fn count_wait(&mut self, obj: IoObject, ctx: IoContext, ns: u64) {
        let cell = self.counters.cell_mut(obj, ctx);
        cell.waits += 1;
        cell.wait_time_ns += ns;
        self.dirty = true;
    }

    /// Records the latency (submission → completion) of one read or write.
    #[inline]
    pub fn record_latency(&mut self, obj: IoObject, ctx: IoContext, op: IoOp, ns: u64) {
        assert!(
            matches!(op, IoOp::Read | IoOp::Write),
            "latencies are kept for reads and writes, not {}",
            op.name()
        );
        self.counters
            .cell_mut(obj, ctx)
            .latency_mut(op)
            .record_ns(ns);
        self.dirty = true;
    }

    /// Counts one event of the AIO layer (`pg_stat_aio`).
    #[inline]
    pub fn count_aio(&mut self, event: AioEvent) {
        self.aio.count(event);
        self.dirty = true;
    }

    /// Records the submission → completion latency of one read, write or fsync for
    /// `pg_stat_aio`.
    #[inline]
    pub fn record_aio_latency(&mut self, op: AioLatencyOp, ns: u64) {
        self.aio.record_latency_ns(op, ns);
        self.dirty = true;
    }

    /// Nothing counted since the last flush.
    pub fn is_empty(&self) -> bool {
        !self.dirty
    }

    /// Should the owner flush now? True when something is pending and the last flush (or
    /// the creation) was at least `interval` ([`IoStatsHub::flush_interval`]) ago. A
    /// long-running issuer asks this every so often (say, per I/O it completes) so that
    /// the views never lag more than `interval` behind it.
    pub fn flush_due(&self, interval: Duration) -> bool {
        self.flush_due_at(Instant::now(), interval)
    }

    pub fn flush_due_at(&self, now: Instant, interval: Duration) -> bool {
        self.dirty && now.saturating_duration_since(self.last_flush) >= interval
    }

    /// What is pending (for EXPLAIN-style reporting by the owner itself).
    pub fn counters(&self) -> &IoCounters {
        &self.counters
    }

    fn clear(&mut self, now: Instant) {
        if self.dirty {
            self.counters.clear();
            self.aio.clear();
            self.dirty = false;
        }
        self.last_flush = now;
    }
}

// ---------------------------------------------------------------------------------------
// The shared hub
// ---------------------------------------------------------------------------------------

/// The server's I/O statistics: the totals per backend type (`pg_stat_io`) and the
/// totals of each live process (`pg_stat_get_backend_io(pid)`). One per server, shared
/// by every thread; all state is behind one mutex held only to add a flush or copy a
/// snapshot.
#[derive(Debug)]
pub struct IoStatsHub {
    state: Mutex<HubState>,
    /// What each live process is doing (`pg_stat_activity`).
    pub activity: ActivityRegistry,
    /// The sampled history (`pg_stat_io_history`, `pg_stat_aio_history`); `None` while
    /// no sampler runs.
    pub history: Mutex<Option<StatsHistory>>,
    /// [`flush_interval`](Self::flush_interval) in nanoseconds.
    flush_interval_ns: AtomicU64,
    /// Block hits and reads, and index scans, by relation file (`pg_statio_*`,
    /// `pg_stat_*_indexes`).
    pub relation_counts: crate::relation::RelationTotals,
    /// `pg_stat_wal` (and the WAL's writes and syncs).
    pub wal: crate::wal::WalCounters,
    /// `pg_stat_recovery_prefetch`.
    pub recovery_prefetch: crate::wal::RecoveryPrefetchCounters,
    /// `pg_stat_database`'s own counters.
    pub database: crate::database::DatabaseCounters,
    /// `pg_stat_checkpointer`.
    pub checkpointer: crate::wal::CheckpointerCounters,
    /// `pg_stat_bgwriter`.
    pub bgwriter: crate::wal::BgwriterCounters,
    /// `pg_stat_statements`.
    pub statements: crate::statements::StatementStats,
    /// When the server started (`pg_postmaster_start_time()`): the hub is made with it.
    pub started: DateTime<Utc>,
}

#[derive(Debug)]
struct HubState {
    /// Indexed by `BackendType as usize`.
    by_type: Vec<IoCounters>,
    /// When `pg_stat_io` was last reset (the hub's creation at first).
    stats_reset: DateTime<Utc>,
    /// `pg_stat_aio`, indexed by `BackendType as usize`, and its reset time.
    aio_by_type: Vec<AioCounts>,
    aio_stats_reset: DateTime<Utc>,
    /// Live processes of the backend types that keep per-process statistics.
    /// Bounded by the number of live sessions and threads (`max_connections` + workers).
    backends: HashMap<i32, BackendEntry>,
}

#[derive(Clone, Debug)]
struct BackendEntry {
    backend_type: BackendType,
    counters: IoCounters,
    stats_reset: Option<DateTime<Utc>>,
}

/// A copy of `pg_stat_io`'s data.
#[derive(Clone, Debug)]
pub struct IoSnapshot {
    pub(crate) by_type: Vec<IoCounters>,
    pub stats_reset: DateTime<Utc>,
}

impl IoSnapshot {
    pub fn counters(&self, bt: BackendType) -> &IoCounters {
        &self.by_type[bt.index()]
    }
}

/// A copy of `pg_stat_aio`'s data.
#[derive(Clone, Debug)]
pub struct AioSnapshot {
    by_type: Vec<AioCounts>,
    pub stats_reset: DateTime<Utc>,
}

impl AioSnapshot {
    pub fn counts(&self, bt: BackendType) -> &AioCounts {
        &self.by_type[bt.index()]
    }
}

/// A copy of one process's statistics (`pg_stat_get_backend_io(pid)`).
#[derive(Clone, Debug)]
pub struct BackendIoSnapshot {
    pub pid: i32,
    pub backend_type: BackendType,
    pub counters: IoCounters,
    /// NULL until `pg_stat_reset_backend_stats(pid)` was called.
    pub stats_reset: Option<DateTime<Utc>>,
}

impl Default for IoStatsHub {
    fn default() -> Self {
        IoStatsHub::new()
    }
}

impl IoStatsHub {
    /// The cumulative statistics, for the statistics file (`persist`): `pg_stat_io` and
    /// `pg_stat_aio` by backend type, then the relation, WAL, database, checkpointer,
    /// background writer and statement statistics.
    pub(crate) fn save(&self, e: &mut Encoder) {
        let state = self.state.lock();
        e.len(state.by_type.len());
        state.by_type.iter().for_each(|c| c.save(e));
        e.time(state.stats_reset);
        e.len(state.aio_by_type.len());
        state.aio_by_type.iter().for_each(|c| c.save(e));
        e.time(state.aio_stats_reset);
        drop(state);
        self.relation_counts.save(e);
        self.wal.save(e);
        self.database.save(e);
        self.checkpointer.save(e);
        self.bgwriter.save(e);
        self.statements.save(e);
    }

    /// Sets a new hub's statistics to those `save` wrote.
    pub(crate) fn restore(&mut self, d: &mut Decoder<'_>) -> Result<(), Corrupt> {
        let state = self.state.get_mut();
        if d.len()? != BackendType::COUNT {
            return Err(Corrupt("another count of backend types"));
        }
        for c in state.by_type.iter_mut() {
            *c = IoCounters::restore(d)?;
        }
        state.stats_reset = d.time()?;
        if d.len()? != BackendType::COUNT {
            return Err(Corrupt("another count of backend types"));
        }
        for c in state.aio_by_type.iter_mut() {
            *c = AioCounts::restore(d)?;
        }
        state.aio_stats_reset = d.time()?;
        self.relation_counts.restore(d)?;
        self.wal.restore(d)?;
        self.database.restore(d)?;
        self.checkpointer.restore(d)?;
        self.bgwriter.restore(d)?;
        self.statements.restore(d)
    }

    /// Empty statistics, reset "now" (PostgreSQL sets `stats_reset` when a server starts
    /// without saved statistics; `persist::load` restores saved ones).
    pub fn new() -> IoStatsHub {
        let now = Utc::now();
        IoStatsHub {
            state: Mutex::new(HubState {
                by_type: vec![IoCounters::new(); BackendType::COUNT],
                stats_reset: now,
                aio_by_type: vec![AioCounts::default(); BackendType::COUNT],
                aio_stats_reset: now,
                backends: HashMap::new(),
            }),
            activity: ActivityRegistry::default(),
            history: Mutex::new(None),
            flush_interval_ns: AtomicU64::new(FLUSH_INTERVAL.as_nanos() as u64),
            relation_counts: Default::default(),
            wal: Default::default(),
            recovery_prefetch: Default::default(),
            database: Default::default(),
            checkpointer: Default::default(),
            bgwriter: Default::default(),
            statements: Default::default(),
            started: Utc::now(),
        }
    }

    /// How long an issuer that keeps working may hold pending statistics: [`FLUSH_INTERVAL`],
    /// or less while a sampler takes samples more often than every ten seconds.
    pub fn flush_interval(&self) -> Duration {
        Duration::from_nanos(self.flush_interval_ns.load(Ordering::Relaxed))
    }

    /// A sampler now copies the counters every `interval`: issuers flush ten times per
    /// interval (between [`MIN_FLUSH_INTERVAL`] and [`FLUSH_INTERVAL`]), so that every
    /// sample sees the I/O of its own interval.
    pub fn set_sampling_interval(&self, interval: Duration) {
        let flush = (interval / FLUSHES_PER_SAMPLE).clamp(MIN_FLUSH_INTERVAL, FLUSH_INTERVAL);
        self.flush_interval_ns
            .store(flush.as_nanos() as u64, Ordering::Relaxed);
    }

    /// A process started: its per-process statistics start at zero, `stats_reset` NULL.
    /// Backend types without per-process statistics are not recorded.
    pub fn register_backend(&self, pid: i32, backend_type: BackendType) {
        if !backend_type.tracks_backend_stats() {
            return;
        }
        self.state.lock().backends.insert(
            pid,
            BackendEntry {
                backend_type,
                counters: IoCounters::new(),
                stats_reset: None,
            },
        );
    }

    /// A process ended: its per-process statistics go (its flushed I/O stays in the
    /// per-type totals).
    pub fn unregister_backend(&self, pid: i32) {
        self.state.lock().backends.remove(&pid);
    }

    /// Adds `pending` to the totals of `backend_type` and, when `pid` is a registered
    /// process, to that process's statistics; then clears `pending`.
    pub fn flush(&self, pending: &mut PendingIoStats, backend_type: BackendType, pid: i32) {
        let now = Instant::now();
        if pending.is_empty() {
            pending.clear(now);
            return;
        }
        debug_assert!(
            pending.counters.untracked_counts(backend_type).is_empty(),
            "a {} counted I/O PostgreSQL never counts for it (object, context, op): {:?}",
            backend_type.name(),
            pending.counters.untracked_counts(backend_type)
        );
        {
            let mut state = self.state.lock();
            state.by_type[backend_type.index()].add(&pending.counters);
            state.aio_by_type[backend_type.index()].add(&pending.aio);
            if let Some(entry) = state.backends.get_mut(&pid) {
                entry.counters.add(&pending.counters);
            }
        }
        pending.clear(now);
    }

    /// Flushes when [`PendingIoStats::flush_due`]; returns whether it did.
    pub fn flush_if_due(
        &self,
        pending: &mut PendingIoStats,
        backend_type: BackendType,
        pid: i32,
    ) -> bool {
        if !pending.flush_due(self.flush_interval()) {
            return false;
        }
        self.flush(pending, backend_type, pid);
        true
    }

    /// `pg_stat_reset_shared('io')`: zeroes the per-type totals and sets `stats_reset`.
    /// (Per-process statistics are a different kind and stay.)
    pub fn reset_shared_io(&self) {
        let mut state = self.state.lock();
        state.by_type.iter_mut().for_each(IoCounters::clear);
        state.stats_reset = Utc::now();
    }

    /// `pg_stat_reset_shared('aio')`: zeroes `pg_stat_aio` and sets its `stats_reset`.
    pub fn reset_shared_aio(&self) {
        let mut state = self.state.lock();
        state.aio_by_type.iter_mut().for_each(AioCounts::clear);
        state.aio_stats_reset = Utc::now();
    }

    /// `pg_stat_reset_backend_stats(pid)`: zeroes one process's statistics and sets its
    /// `stats_reset`. False (and nothing happens) for an unknown pid. Counts the process
    /// has pending and flushes later are added after the reset, as in PostgreSQL.
    pub fn reset_backend(&self, pid: i32) -> bool {
        let mut state = self.state.lock();
        match state.backends.get_mut(&pid) {
            Some(entry) => {
                entry.counters.clear();
                entry.stats_reset = Some(Utc::now());
                true
            }
            None => false,
        }
    }

    /// The read and write time (milliseconds) of every backend type's I/O of `object`, in
    /// every context: `pg_stat_database`'s `blk_read_time` and `blk_write_time`.
    pub fn io_time_ms(&self, object: IoObject) -> (f64, f64) {
        let state = self.state.lock();
        let (mut read, mut write) = (0u64, 0u64);
        for counters in &state.by_type {
            for context in IoContext::ALL {
                let cell = counters.cell(object, context);
                read += cell.time_ns(IoOp::Read);
                write += cell.time_ns(IoOp::Write);
            }
        }
        (read as f64 / 1e6, write as f64 / 1e6)
    }

    /// A copy of the per-type totals.
    pub fn snapshot(&self) -> IoSnapshot {
        let state = self.state.lock();
        IoSnapshot {
            by_type: state.by_type.clone(),
            stats_reset: state.stats_reset,
        }
    }

    /// `pg_stat_io`'s rows, built under the hub's lock: cheaper than building them from a
    /// [`snapshot`](Self::snapshot), which copies every latency histogram (20 KiB each).
    /// The lock is held for the few microseconds of the build.
    pub fn pg_stat_io_batch(&self) -> arrow_array::RecordBatch {
        let state = self.state.lock();
        crate::views::pg_stat_io_batch_of(&state.by_type, state.stats_reset)
    }

    /// A copy of `pg_stat_aio`'s counters.
    pub fn aio_snapshot(&self) -> AioSnapshot {
        let state = self.state.lock();
        AioSnapshot {
            by_type: state.aio_by_type.clone(),
            stats_reset: state.aio_stats_reset,
        }
    }

    /// Both snapshots taken under one lock, so that they describe the same moment.
    pub fn snapshots(&self) -> (IoSnapshot, AioSnapshot) {
        let state = self.state.lock();
        (
            IoSnapshot {
                by_type: state.by_type.clone(),
                stats_reset: state.stats_reset,
            },
            AioSnapshot {
                by_type: state.aio_by_type.clone(),
                stats_reset: state.aio_stats_reset,
            },
        )
    }

    /// A copy of one live process's statistics; `None` for an unknown pid or a backend
    /// type without per-process statistics.
    pub fn backend_snapshot(&self, pid: i32) -> Option<BackendIoSnapshot> {
        let state = self.state.lock();
        state.backends.get(&pid).map(|e| BackendIoSnapshot {
            pid,
            backend_type: e.backend_type,
            counters: e.counters.clone(),
            stats_reset: e.stats_reset,
        })
    }

    /// The pids with per-process statistics, in ascending order.
    pub fn backend_pids(&self) -> Vec<i32> {
        let mut pids: Vec<i32> = self.state.lock().backends.keys().copied().collect();
        pids.sort_unstable();
        pids
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The captured NULL pattern of PostgreSQL 18.4's `pg_stat_io`: per row the backend
    /// type, object, context and, for reads, writes, writebacks, extends, hits,
    /// evictions, reuses and fsyncs, whether the count is NULL.
    pub(crate) fn pg18_rows() -> Vec<(String, String, String, Vec<bool>)> {
        include_str!("../testdata/pg18_stat_io_nulls.txt")
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| {
                let f: Vec<&str> = l.split('|').collect();
                assert_eq!(f.len(), 20, "{l}");
                let nulls = f[3..].iter().map(|v| *v == "t").collect();
                (f[0].into(), f[1].into(), f[2].into(), nulls)
            })
            .collect()
    }

    /// Column positions (within the 17 flags after `context`) of each op's count.
    fn count_flag(op: IoOp) -> usize {
        match op {
            IoOp::Read => 0,
            IoOp::Write => 3,
            IoOp::Writeback => 6,
            IoOp::Extend => 8,
            IoOp::Hit => 11,
            IoOp::Evict => 12,
            IoOp::Reuse => 13,
            IoOp::Fsync => 14,
        }
    }

    #[test]
    fn rows_and_nulls_match_postgres_18() {
        let expected = pg18_rows();
        assert_eq!(expected.len(), 79);
        let mut rows = Vec::new();
        for bt in BackendType::ALL {
            for obj in IoObject::ALL {
                for ctx in IoContext::ALL {
                    if tracks_io_object(bt, obj, ctx) {
                        rows.push((bt, obj, ctx));
                    }
                }
            }
        }
        assert_eq!(rows.len(), expected.len());
        for ((bt, obj, ctx), (ebt, eobj, ectx, nulls)) in rows.into_iter().zip(&expected) {
            assert_eq!(
                (bt.name(), obj.name(), ctx.name()),
                (ebt.as_str(), eobj.as_str(), ectx.as_str())
            );
            for op in IoOp::ALL {
                assert_eq!(
                    !tracks_io_op(bt, obj, ctx, op),
                    nulls[count_flag(op)],
                    "{ebt}/{eobj}/{ectx} {}",
                    op.name()
                );
            }
        }
    }

    #[test]
    fn names_round_trip() {
        for bt in BackendType::ALL {
            assert_eq!(BackendType::from_name(bt.name()), Some(bt));
        }
        assert_eq!(BackendType::from_name("logger"), None);
        for (i, bt) in BackendType::ALL.into_iter().enumerate() {
            assert_eq!(bt.index(), i);
        }
        for (i, op) in IoOp::ALL.into_iter().enumerate() {
            assert_eq!(op.index(), i);
        }
    }

    #[test]
    fn per_backend_types_are_postgres_18s() {
        let tracked: Vec<&str> = BackendType::ALL
            .into_iter()
            .filter(|b| b.tracks_backend_stats())
            .map(BackendType::name)
            .collect();
        assert_eq!(
            tracked,
            [
                "client backend",
                "autovacuum worker",
                "background worker",
                "walsender",
                "slotsync worker",
                "standalone backend",
                "walreceiver",
                "walsummarizer",
                "walwriter"
            ]
        );
    }

    #[test]
    fn counting_adds_up() {
        let mut p = PendingIoStats::new();
        assert!(p.is_empty());
        let (rel, normal) = (IoObject::Relation, IoContext::Normal);
        p.count_op(rel, normal, IoOp::Read, 16 * 8192, 5_000);
        p.count_op(rel, normal, IoOp::Read, 4 * 8192, 1_000);
        p.count_ops(rel, normal, IoOp::Read, 0, 0, 7_000);
        p.count_ops(rel, normal, IoOp::Hit, 10, 0, 0);
        p.count_wait(rel, normal, 300);
        p.count_wait(rel, normal, 200);
        assert!(!p.is_empty());
        let c = p.counters().cell(rel, normal);
        assert_eq!(c.count(IoOp::Read), 2);
        assert_eq!(c.bytes(IoOp::Read), 20 * 8192);
        assert_eq!(c.time_ns(IoOp::Read), 13_000);
        assert_eq!(c.count(IoOp::Hit), 10);
        assert_eq!((c.waits(), c.wait_time_ns()), (2, 500));
        assert!(p
            .counters()
            .cell(rel, IoContext::BulkRead)
            .latency(IoOp::Read)
            .is_none());
    }

    #[test]
    fn flush_moves_pending_into_type_and_backend_and_clears_it() {
        let hub = IoStatsHub::new();
        hub.register_backend(7, BackendType::ClientBackend);
        let mut p = PendingIoStats::new();
        let (rel, bulk) = (IoObject::Relation, IoContext::BulkRead);
        p.count_op(rel, bulk, IoOp::Read, 131072, 0);
        p.count_op(rel, bulk, IoOp::Reuse, 0, 0);
        p.record_latency(rel, bulk, IoOp::Read, 250_000);
        hub.flush(&mut p, BackendType::ClientBackend, 7);
        assert!(p.is_empty());
        assert!(p.counters().is_zero());
        assert!(!p.flush_due(FLUSH_INTERVAL), "nothing pending");

        // A second flush adds; an unregistered pid only reaches the per-type totals.
        p.count_op(rel, bulk, IoOp::Read, 65536, 0);
        hub.flush(&mut p, BackendType::ClientBackend, 7);
        p.count_op(rel, bulk, IoOp::Read, 8192, 0);
        hub.flush(&mut p, BackendType::ClientBackend, 99);

        let shared = hub.snapshot();
        let c = shared.counters(BackendType::ClientBackend).cell(rel, bulk);
        assert_eq!(c.count(IoOp::Read), 3);
        assert_eq!(c.bytes(IoOp::Read), 131072 + 65536 + 8192);
        assert_eq!(c.count(IoOp::Reuse), 1);
        assert_eq!(c.latency(IoOp::Read).unwrap().count(), 1);
        assert!(shared.counters(BackendType::IoWorker).is_zero());

        let b = hub.backend_snapshot(7).unwrap();
        assert_eq!(b.backend_type, BackendType::ClientBackend);
        assert_eq!(b.counters.cell(rel, bulk).count(IoOp::Read), 2);
        assert_eq!(b.stats_reset, None);
        assert!(hub.backend_snapshot(99).is_none());

        hub.unregister_backend(7);
        assert!(hub.backend_snapshot(7).is_none());
        assert_eq!(
            hub.snapshot()
                .counters(BackendType::ClientBackend)
                .cell(rel, bulk)
                .count(IoOp::Read),
            3,
            "a process's I/O stays in its type's totals after it exits"
        );
    }

    #[test]
    fn flush_is_due_after_a_second_of_pending_work() {
        let mut p = PendingIoStats::new();
        let hub = IoStatsHub::new();
        let second = hub.flush_interval();
        assert_eq!(second, FLUSH_INTERVAL);
        let start = p.last_flush;
        assert!(!p.flush_due_at(start + second, second), "nothing pending");
        p.count_op(IoObject::Relation, IoContext::Normal, IoOp::Hit, 0, 0);
        assert!(!p.flush_due_at(start + Duration::from_millis(999), second));
        assert!(p.flush_due_at(start + second, second));
        hub.flush(&mut p, BackendType::ClientBackend, 1);
        assert!(!p.flush_due_at(Instant::now() + second, second));
    }

    #[test]
    fn a_fast_sampler_makes_issuers_flush_ten_times_per_sample() {
        let hub = IoStatsHub::new();
        hub.set_sampling_interval(Duration::from_millis(100));
        assert_eq!(hub.flush_interval(), Duration::from_millis(10));
        hub.set_sampling_interval(Duration::from_secs(1));
        assert_eq!(hub.flush_interval(), Duration::from_millis(100));
        // never more often than MIN_FLUSH_INTERVAL, never less often than once a second
        hub.set_sampling_interval(Duration::from_millis(20));
        assert_eq!(hub.flush_interval(), MIN_FLUSH_INTERVAL);
        hub.set_sampling_interval(Duration::from_secs(60));
        assert_eq!(hub.flush_interval(), FLUSH_INTERVAL);
    }

    #[test]
    fn resets_zero_and_stamp() {
        let hub = IoStatsHub::new();
        let created = hub.snapshot().stats_reset;
        hub.register_backend(5, BackendType::ClientBackend);
        let mut p = PendingIoStats::new();
        p.count_op(IoObject::Relation, IoContext::Normal, IoOp::Write, 8192, 10);
        hub.flush(&mut p, BackendType::ClientBackend, 5);

        std::thread::sleep(Duration::from_millis(2));
        hub.reset_shared_io();
        let s = hub.snapshot();
        assert!(s.stats_reset > created);
        assert!(s.counters(BackendType::ClientBackend).is_zero());
        let b = hub.backend_snapshot(5).unwrap();
        assert!(
            !b.counters.is_zero(),
            "per-process statistics are another kind"
        );
        assert_eq!(b.stats_reset, None);

        assert!(hub.reset_backend(5));
        let b = hub.backend_snapshot(5).unwrap();
        assert!(b.counters.is_zero());
        assert!(b.stats_reset.unwrap() >= s.stats_reset);
        assert!(!hub.reset_backend(6));
    }

    #[test]
    fn only_tracked_backend_types_get_per_process_entries() {
        let hub = IoStatsHub::new();
        hub.register_backend(1, BackendType::IoWorker);
        hub.register_backend(2, BackendType::Checkpointer);
        hub.register_backend(3, BackendType::Walwriter);
        assert_eq!(hub.backend_pids(), vec![3]);
    }

    #[test]
    fn histogram_is_as_large_as_documented() {
        let h = LatencyHistogram::new();
        assert_eq!(h.histogram.distinct_values(), LATENCY_HISTOGRAM_COUNTERS);
    }

    #[test]
    fn percentiles_of_known_samples() {
        let mut h = LatencyHistogram::new();
        // 1 µs .. 1000 µs, once each.
        for us in 1..=1000u64 {
            h.record_ns(us * 1000);
        }
        let s = h.summary().unwrap();
        let close = |got: f64, want: f64| (got - want).abs() <= want * 0.01 + 1e-9;
        assert!(close(s.p50_us, 500.0), "{s:?}");
        assert!(close(s.p99_us, 990.0), "{s:?}");
        assert!(close(s.p999_us, 999.0), "{s:?}");
        assert_eq!(s.max_us, 1000.0);
        assert!(s.p999_us <= s.max_us);

        // Skewed: 990 fast reads and 10 slow ones.
        let mut h = LatencyHistogram::new();
        for _ in 0..990 {
            h.record_ns(100_000);
        }
        for _ in 0..10 {
            h.record_ns(20_000_000);
        }
        let s = h.summary().unwrap();
        assert!(close(s.p50_us, 100.0), "{s:?}");
        assert!(close(s.p99_us, 100.0), "{s:?}");
        assert!(close(s.p999_us, 20_000.0), "{s:?}");
        assert_eq!(s.max_us, 20_000.0);

        // Beyond a minute: recorded as a minute, the exact maximum kept.
        let mut h = LatencyHistogram::new();
        h.record_ns(90_000_000_000);
        assert!(close(h.value_at_quantile_us(0.5), 60_000_000.0));
        assert_eq!(h.max_us(), 90_000_000.0);

        // Merging keeps both sides' values.
        let mut a = LatencyHistogram::new();
        let mut b = LatencyHistogram::new();
        a.record_ns(1_000);
        b.record_ns(3_000_000);
        a.add(&b);
        assert_eq!(a.count(), 2);
        assert_eq!(a.max_us(), 3000.0);
        a.clear();
        assert!(a.summary().is_none());
    }

    #[test]
    #[should_panic(expected = "latencies are kept for reads and writes")]
    fn latency_of_other_ops_is_refused() {
        let mut p = PendingIoStats::new();
        p.record_latency(IoObject::Relation, IoContext::Normal, IoOp::Fsync, 1);
    }

    #[test]
    fn untracked_counts_are_found() {
        let mut c = IoCounters::new();
        c.cell_mut(IoObject::Relation, IoContext::BulkRead).counts[IoOp::Fsync.index()] = 1;
        assert_eq!(
            c.untracked_counts(BackendType::ClientBackend),
            vec![(IoObject::Relation, IoContext::BulkRead, IoOp::Fsync)]
        );
        assert!(IoCounters::new()
            .untracked_counts(BackendType::Checkpointer)
            .is_empty());
    }
}
