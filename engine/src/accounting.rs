//! The accounting choke point: every buffer hit, read, write, eviction and advice call of
//! one I/O-issuing thread is recorded here, and nowhere else.
//!
//! An [`IoAccount`] belongs to one scan, insert or maintenance operation running on one
//! thread; it is passed as `&mut` down to the buffer pool, the read stream and the I/O
//! methods, so recording costs a few additions and never a lock. It keeps two views of the
//! same events:
//!
//! * `usage` — the operation's [`BufferUsage`], what EXPLAIN prints on its node
//!   (`Buffers: shared hit=… read=…`, `I/O Timings: shared wait=… read=…`), plus a latency
//!   histogram of its reads for EXPLAIN's `I/O Latency:` line;
//! * pending `pg_stat_io` counters by object and context, flushed to the server-wide
//!   statistics when the operation ends and at least once a second while it runs (more
//!   often while the history samples faster: `IoStatsHub::flush_interval`), the way
//!   PostgreSQL's pending statistics work.
//!
//! Three different times are kept apart, because conflating them hides where a scan's time
//! went (seed 001: `posix_fadvise` blocks when the device queue is full):
//!
//! * **wait** (`shared_wait_ns`): time spent *issuing* I/O — advice calls, pushing to the
//!   worker queue, `io_uring_enter` submissions;
//! * **read / write** (`shared_read_ns`, `shared_write_ns`): time the thread was *blocked*
//!   until an I/O it needed had finished (for a synchronous read: the `preadv` itself);
//! * **latency**: submission → completion of each I/O, wherever it ran; recorded always
//!   (one clock read per I/O, not per block), whereas wait/read/write times need
//!   `track_io_timing`, as in PostgreSQL.
//!
//! The account also carries the AIO layer's own events (`pg_stat_aio`: I/Os started,
//! submissions, queue-full fallbacks, waits) into the same pending statistics, and sets
//! the operation's process's **wait event** (`pg_stat_activity`) while it blocks on I/O:
//! the process is looked up once, when the account is made, and each wait is then two
//! relaxed atomic stores.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolab_stats::{
    AioEvent, AioLatencyOp, BackendActivity, BackendType, BufferUsage, IoContext, IoObject, IoOp,
    IoStatsHub, LatencyHistogram, PendingIoStats, PendingRelationCounts, RowChange, WaitEvent,
};

use crate::buffer::RingKind;
use crate::storage::page::BLCKSZ;

/// Where pending `pg_stat_io` counters go, and for whom.
#[derive(Clone)]
pub struct StatsSink {
    pub hub: Arc<IoStatsHub>,
    pub backend_type: BackendType,
    pub pid: i32,
}

/// The I/O record of one operation on one thread. See the module comment.
pub struct IoAccount {
    pub usage: BufferUsage,
    pub track_io_timing: bool,
    /// Read latency of this operation's I/Os (EXPLAIN's `I/O Latency:`).
    pub read_latency: LatencyHistogram,
    pending: PendingIoStats,
    /// Hits and reads by relation (`pg_statio_*`), flushed with `pending`.
    relations: PendingRelationCounts,
    sink: Option<StatsSink>,
    /// The process whose wait events this operation sets (`pg_stat_activity`).
    activity: Option<Arc<BackendActivity>>,
    last_flush: Instant,
    calls_since_flush_check: u32,
    /// The writer's writeback requests (`checkpoint_flush_after`, `bgwriter_flush_after`);
    /// none for writers that make none.
    pub writeback: Option<crate::buffer::writeback::WritebackQueue>,
}

impl Default for IoAccount {
    fn default() -> IoAccount {
        IoAccount::new(false, None)
    }
}

impl Deref for IoAccount {
    type Target = BufferUsage;
    fn deref(&self) -> &BufferUsage {
        &self.usage
    }
}

impl DerefMut for IoAccount {
    fn deref_mut(&mut self) -> &mut BufferUsage {
        &mut self.usage
    }
}

impl Drop for IoAccount {
    fn drop(&mut self) {
        self.flush();
    }
}

/// `pg_stat_io.context` of an operation using `ring` (none: `normal`).
pub fn io_context(ring: Option<RingKind>) -> IoContext {
    match ring {
        None => IoContext::Normal,
        Some(RingKind::BulkRead) => IoContext::BulkRead,
        Some(RingKind::BulkWrite) => IoContext::BulkWrite,
        Some(RingKind::Vacuum) => IoContext::Vacuum,
    }
}

/// Which buffers an I/O fills or empties: the shared pool (through a ring or not) or a
/// session's local buffers (its temporary tables; never through a ring, as in PostgreSQL).
/// It decides the `pg_stat_io` row (object `relation` or `temp relation`, the context)
/// and whether EXPLAIN counts `shared` or `local` blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Buffers {
    Shared(Option<RingKind>),
    Local,
}

impl Buffers {
    /// Shared buffers without a ring.
    pub const SHARED: Buffers = Buffers::Shared(None);

    pub fn object(self) -> IoObject {
        match self {
            Buffers::Shared(_) => IoObject::Relation,
            Buffers::Local => IoObject::TempRelation,
        }
    }

    pub fn context(self) -> IoContext {
        match self {
            Buffers::Shared(ring) => io_context(ring),
            Buffers::Local => IoContext::Normal,
        }
    }

    pub fn is_local(self) -> bool {
        self == Buffers::Local
    }
}

impl IoAccount {
    /// An account whose pending `pg_stat_io` counters go to `sink` (none: only `usage`).
    pub fn new(track_io_timing: bool, sink: Option<StatsSink>) -> IoAccount {
        let activity = sink.as_ref().and_then(|s| s.hub.activity.get(s.pid));
        IoAccount {
            usage: BufferUsage::default(),
            track_io_timing,
            read_latency: LatencyHistogram::new(),
            pending: PendingIoStats::new(),
            relations: PendingRelationCounts::default(),
            sink,
            activity,
            last_flush: Instant::now(),
            calls_since_flush_check: 0,
            writeback: None,
        }
    }

    /// Start of a timed interval: `Some(now)` when `track_io_timing` is on.
    #[inline]
    /// Whose `pg_stat_io` rows this account counts into: backend type and pid (none
    /// without a sink).
    pub fn stats_owner(&self) -> Option<(iolab_stats::BackendType, i32)> {
        self.sink.as_ref().map(|s| (s.backend_type, s.pid))
    }

    pub fn start_timer(&self) -> Option<Instant> {
        self.track_io_timing.then(Instant::now)
    }

    fn elapsed_ns(started: Option<Instant>) -> u64 {
        started.map_or(0, |s| s.elapsed().as_nanos() as u64)
    }

    /// A block of relation file `relfilenode` was found valid in the pool.
    pub fn hit(&mut self, at: Buffers, relfilenode: u32) {
        *self.usage.blocks(at.is_local()).hit += 1;
        self.relations.hit(relfilenode);
        self.pending
            .count_op(at.object(), at.context(), IoOp::Hit, 0, 0);
    }

    /// A read of `nblocks` blocks of relation file `relfilenode` was started (counted once
    /// per I/O in `pg_stat_io`, as PostgreSQL 18; per block in `pg_statio_*`).
    pub fn read_started(&mut self, at: Buffers, relfilenode: u32, nblocks: u32) {
        *self.usage.blocks(at.is_local()).read += nblocks as u64;
        self.relations.read(relfilenode, nblocks as u64);
        self.usage.io_reads += 1;
        self.pending.count_op(
            at.object(),
            at.context(),
            IoOp::Read,
            nblocks as u64 * BLCKSZ as u64,
            0,
        );
    }

    /// Scans and rows by relation (`pg_stat_*_tables`, `pg_stat_*_indexes`), flushed with
    /// the block counts.
    #[inline]
    pub fn relations(&mut self) -> &mut PendingRelationCounts {
        &mut self.relations
    }

    /// Transaction `xid` made `change` to `rows` rows of table file `relfilenode`: told to
    /// the shared statistics at once, which count them when the transaction ends.
    pub fn rows_changed(&mut self, xid: u32, relfilenode: u32, change: RowChange, rows: u64) {
        if let Some(sink) = &self.sink {
            sink.hub
                .relation_counts
                .changed(xid, relfilenode, change, rows);
        }
    }

    /// Time spent issuing I/O (advice, submission), from `started` until now.
    pub fn issued(&mut self, at: Buffers, started: Option<Instant>) {
        if started.is_some() {
            let ns = Self::elapsed_ns(started);
            *self.usage.blocks(at.is_local()).wait_ns += ns;
            self.pending.count_wait(at.object(), at.context(), ns);
        }
    }

    /// The thread was blocked on a read from `started` until now; `stalled` says whether it
    /// really had to wait (the I/O was not complete yet).
    pub fn read_waited(&mut self, at: Buffers, started: Option<Instant>, stalled: bool) {
        self.usage.io_stalls += stalled as u64;
        if started.is_some() {
            let ns = Self::elapsed_ns(started);
            *self.usage.blocks(at.is_local()).read_ns += ns;
            // Time only: the read itself was counted when it started.
            self.pending
                .count_ops(at.object(), at.context(), IoOp::Read, 0, 0, ns);
        }
    }

    /// Submission → completion latency of one read.
    pub fn read_latency(&mut self, at: Buffers, latency: Duration) {
        let ns = latency.as_nanos() as u64;
        self.read_latency.record_ns(ns);
        self.pending
            .record_latency(at.object(), at.context(), IoOp::Read, ns);
        self.pending.record_aio_latency(AioLatencyOp::Read, ns);
    }

    /// One event of the AIO layer (`pg_stat_aio`).
    #[inline]
    pub fn aio_event(&mut self, event: AioEvent) {
        self.pending.count_aio(event);
    }

    /// The operation's process now waits for `event` (`WaitEvent::None`: no longer).
    #[inline]
    pub fn set_wait_event(&self, event: WaitEvent) {
        if let Some(a) = &self.activity {
            a.set_wait_event(event);
        }
    }

    /// One block written back (from `started`, for `track_io_timing`).
    pub fn wrote(&mut self, at: Buffers, started: Option<Instant>, latency: Duration) {
        let ns = Self::elapsed_ns(started);
        let blocks = self.usage.blocks(at.is_local());
        *blocks.written += 1;
        *blocks.write_ns += ns;
        let (object, ctx) = (at.object(), at.context());
        self.pending
            .count_op(object, ctx, IoOp::Write, BLCKSZ as u64, ns);
        let ns = latency.as_nanos() as u64;
        self.pending.record_latency(object, ctx, IoOp::Write, ns);
        self.pending.record_aio_latency(AioLatencyOp::Write, ns);
    }

    /// The relation was extended by `nblocks` blocks.
    pub fn extended(&mut self, at: Buffers, nblocks: u32, started: Option<Instant>) {
        let ns = Self::elapsed_ns(started);
        *self.usage.blocks(at.is_local()).written += nblocks as u64;
        self.pending.count_op(
            at.object(),
            at.context(),
            IoOp::Extend,
            nblocks as u64 * BLCKSZ as u64,
            ns,
        );
    }

    /// Runs `sync` (one file's fsync) under wait event `DataFileSync` and counts it, in
    /// context `normal` as PostgreSQL does, with its latency for `pg_stat_aio`.
    pub fn fsync<T>(&mut self, sync: impl FnOnce() -> T) -> T {
        let timer = self.start_timer();
        self.set_wait_event(WaitEvent::DataFileSync);
        let submitted = Instant::now();
        let result = sync();
        let latency = submitted.elapsed();
        self.set_wait_event(WaitEvent::None);
        let ns = Self::elapsed_ns(timer);
        self.pending
            .count_op(IoObject::Relation, IoContext::Normal, IoOp::Fsync, 0, ns);
        self.pending
            .record_aio_latency(AioLatencyOp::Fsync, latency.as_nanos() as u64);
        result
    }

    /// Block `blkno` of `rel` was written: remembered for a writeback request, and the
    /// requests made once `writeback`'s limit is reached.
    pub fn wrote_block(&mut self, rel: &Arc<crate::storage::relfile::RelFile>, blkno: u32) {
        if self
            .writeback
            .as_mut()
            .is_some_and(|q| q.schedule(rel, blkno))
        {
            self.issue_writebacks();
        }
    }

    /// Makes the pending writeback requests now (a writer's end, a checkpoint's writes
    /// done), counted as `writebacks` in context `normal`.
    pub fn issue_writebacks(&mut self) {
        let Some(queue) = self.writeback.as_mut() else {
            return;
        };
        let timer = self.track_io_timing.then(Instant::now);
        let blocks = queue.issue();
        if blocks > 0 {
            let ns = Self::elapsed_ns(timer);
            (self.pending).count_ops(
                IoObject::Relation,
                IoContext::Normal,
                IoOp::Writeback,
                blocks,
                0,
                ns,
            );
        }
    }

    /// A valid buffer was taken from the clock sweep (`evict`) or reused from the ring.
    pub fn victim(&mut self, at: Buffers, reused: bool) {
        let op = if reused { IoOp::Reuse } else { IoOp::Evict };
        self.pending.count_op(at.object(), at.context(), op, 0, 0);
    }

    /// Flush if the hub's flush interval (a second, or less while the history samples
    /// faster) has passed since the last flush. Long operations call this per block; the
    /// clock is read only every 256 calls (2 MiB of blocks).
    #[inline]
    pub fn maybe_flush(&mut self) {
        self.calls_since_flush_check = self.calls_since_flush_check.wrapping_add(1);
        if !self.calls_since_flush_check.is_multiple_of(256) {
            return;
        }
        if let Some(sink) = &self.sink {
            if self.last_flush.elapsed() >= sink.hub.flush_interval() {
                self.flush();
            }
        }
    }

    /// Move the pending `pg_stat_io` counters to the shared statistics.
    pub fn flush(&mut self) {
        self.last_flush = Instant::now();
        if let Some(sink) = &self.sink {
            if !self.pending.is_empty() {
                sink.hub
                    .flush(&mut self.pending, sink.backend_type, sink.pid);
            }
            sink.hub.relation_counts.add(&mut self.relations);
        }
    }
}
