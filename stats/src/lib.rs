//! I/O counters and their snapshots. This crate depends on no other crate of iolab's.
//!
//! `BufferUsage` is what one statement (or one scan node) did to the buffer pool, in the
//! shape of PostgreSQL's `BufferUsage` (`Buffers: shared hit=… read=… dirtied=… written=…`
//! and `I/O Timings: shared read=… write=…`). It is owned by one thread and summed with
//! `add`, never shared behind a lock.

pub mod usage;

pub use usage::BufferUsage;
