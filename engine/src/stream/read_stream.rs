//! The read stream: turns a sequence of block numbers into a sequence of pinned buffers,
//! reading ahead so that the device is busy before the consumer needs the blocks.
//!
//! # Why
//!
//! A scan that reads one block, processes it, then reads the next leaves the device idle
//! while it computes and itself idle while the device works; each read also pays a system
//! call. The stream instead keeps up to `distance` blocks pinned ahead of the consumer,
//! merges runs of consecutive blocks into one read of up to `io_combine_limit` blocks, and
//! starts those reads early: as asynchronous I/O (`io_method` worker or io_uring) or, with
//! `io_method = sync`, as `posix_fadvise(WILLNEED)` advice followed later by a synchronous
//! `preadv`. This is PostgreSQL 18's `read_stream.c`, rebuilt; the names of its state follow
//! it.
//!
//! # How far ahead: the distance
//!
//! The look-ahead distance starts at 1 block (or `io_combine_limit` for a stream created
//! "full"). Every time the consumer has to wait for a read, the distance doubles, up to the
//! most buffers the stream may pin; every time a read turns out to be unnecessary (the first
//! block is already in the pool) it shrinks by one, down to 1. So a stream over cached data
//! settles at distance 1 and costs a hash lookup per block, while a stream that misses grows
//! quickly until enough I/O is in flight to hide the device's latency. The distance is 0
//! once the block source is exhausted.
//!
//! Limits: at most `max_ios` reads in progress (`effective_io_concurrency`, or
//! `maintenance_io_concurrency` for maintenance streams; 0 means "execute each read
//! synchronously when needed, no advice"); at most `max_pinned_buffers =
//! (max_ios + 1) × io_combine_limit` pins, capped by the buffer ring's size and the pool's
//! per-stream share, beyond which a stream may borrow pins while few other streams do
//! (buffer/pool.rs, "Pins a read stream may hold").
//!
//! # The queues
//!
//! ```text
//!   block source ─▶ pending read (consecutive blocks, not yet started, ≤ io_combine_limit)
//!                        │ start: BufferPool::start_read → hit (1 buffer) or miss (n buffers, one I/O)
//!                        ▼
//!   queue (oldest first, one entry per block, every entry pinned):
//!     [ 17 ready ][ 18 ready ][ 19..34 reading: I/O #7 ][ 35..50 reading: I/O #8 ]
//!        ▲ consumer takes the head; when the head is "reading", it waits for that I/O
//!          (always the oldest in progress) and the distance doubles.
//! ```
//!
//! Worked example, io_combine_limit 4, max_ios 2, cold blocks 0..: distance 1 → read {0};
//! the consumer waits → distance 2 → read {1,2}; wait → 4 → read {3,4,5,6}; wait → 8 → reads
//! {7..10} and {11..14} in flight at once — the look-ahead now covers two combined reads.
//!
//! # Advice
//!
//! Whether a read gets `posix_fadvise(WILLNEED)` is the `read_stream_advice` setting:
//!
//! * `pg18` (default, PostgreSQL 18): a read that does not continue the previous one starts
//!   a new region, remembered in `seq_until_processed`, and is advised if something is
//!   already pinned; reads continuing the region are advised until the consumer's
//!   synchronous read reaches the region's first block — from then on the kernel sees the
//!   sequential `preadv` pattern and does readahead itself.
//! * `pg17` (PostgreSQL 17): only reads that do not continue the previous one are advised,
//!   and while reads are sequential the distance only grows to `io_combine_limit` — which
//!   made bitmap heap scans over runs of adjacent blocks stall (the problem PostgreSQL 18
//!   fixed).
//! * `always`: every read is advised, even in streams that promise sequential access.
//! * `never`: no advice.
//!
//! Sequential streams (Seq Scan) never advise under pg17/pg18, as in PostgreSQL, and direct
//! I/O disables advice (the page cache is bypassed).
//!
//! Under `io_method = worker` the stream does not advise itself; it marks its reads
//! advisable when the policy allows advice at all (`always`, or pg17/pg18 on a stream that
//! is not sequential), and the I/O worker that finds such a read waiting in its queue
//! advises it (see `aio/worker.rs`).
//!
//! Under `io_method = io_uring` with buffered files (iolab's addition) the stream advises a
//! read, by the policy, right before it submits it. Without advice the kernel's io-wq thread
//! that runs a buffered read finds its pages missing and opens a readahead window, up to the
//! device's `read_ahead_kb` (8 MiB on this project's machines), for reads that are not
//! sequential: the dense bitmap heap scan then kept under 2 requests at the device and took
//! 1.9–2.1 s, against 1.0–1.25 s with the advice, which reads exactly the blocks asked for
//! (paired cold runs, docs/benchmarks/bitmap-scan.md).
//!
//! # All-cached fast path
//!
//! When nothing is in flight, one buffer is queued and the distance is 1, the stream is in
//! its all-cached state: each call hands out that buffer and pins the next block with a
//! one-block `start_read`, skipping the look-ahead bookkeeping until a block misses.
//!
//! # Submitting in batches
//!
//! Reads started during one look-ahead are submitted together (one `io_uring_enter`, one
//! pass over the worker queue). Once the stream runs at its distance, though, every block
//! the consumer takes frees room for one more read, and topping up after each block would
//! cost one system call — and with O_DIRECT one device notification, a VM exit here — per
//! read. So while reads are in flight the stream looks ahead only when there is room for a
//! *refill batch* of `max_ios / 8` reads (1 to 8): that many free I/O slots, and that many
//! shares of `distance / max_ios` blocks free within the distance. The device then sees
//! between `max_ios − batch + 1` and `max_ios` reads, in return for up to `batch` times fewer
//! submissions. With nothing in flight the stream always looks ahead, and `sync` (whose
//! reads are executed one by one when needed) refills after every block, as before.
//!
//! # Reading through gaps (iolab's `read_stream_gap_limit`)
//!
//! A bitmap heap scan over a dense bitmap asks for most blocks of a range but not all: at
//! 82 % of the blocks (the seed query) the runs of requested blocks average five, so the
//! reads average 40 kB however large `io_combine_limit` is, and the device, which is
//! limited by requests as much as by bytes, sees several times more of them than a
//! sequential scan of the same range. With `read_stream_gap_limit = N` a block that is at
//! most N blocks past the pending read's end joins it, together with the blocks between
//! (the *gap blocks*), as long as the read stays within `io_combine_limit`:
//!
//! ```text
//!   requested 0 1 . 3 4 . . 7 8 9 . . . 13      gap limit 2, io_combine_limit 8
//!   reads     [0 1 g 3 4 g g 7] [8 9]   [13 …]   (a gap of 3 stays a hole)
//! ```
//!
//! Gap blocks are read into the pool and pinned like any other (they count against the
//! distance and the pin budget, and as reads in `pg_stat_io` and `Buffers:`), but the
//! consumer never sees them: the stream releases each one as it reaches the head of the
//! queue. A read never starts with a gap block (a read cut short leaves the gap blocks
//! after it behind, and the next read starts at the requested block after them), and ends
//! with one only where the pool cuts it at a block it already holds. The price is the bytes
//! of the gap blocks; the gain, fewer and larger reads. 0 (the default) is PostgreSQL's
//! behaviour.
//!
//! # Looking ahead while waiting (iolab's rule)
//!
//! PostgreSQL 18 counts the read the consumer is waiting for among the `max_ios` in
//! progress, so at `effective_io_concurrency = 1` the next read starts only after the
//! consumer has its block: the device sees one read at a time, as at eic 0, and each read
//! also pays its advice (sync) or hand-off (worker, io_uring). That made eic 1 slower than
//! eic 0 on both systems. iolab counts `max_ios` as the reads *ahead* of the one the
//! consumer needs now: before waiting, the stream looks ahead as if that read were done,
//! so one more read is in flight while it waits — at eic 1, block n + 1 is read while the
//! consumer waits for block n (PostgreSQL 16's "prefetch one page ahead"). The extra read
//! stays within the backend's I/O budget: the rule applies only while `max_ios` is below
//! `io_max_concurrency`, and never to eic 0 (no look-ahead at all).
//!
//! Not under `io_method = worker` past eic 1: there the read waited for is usually still
//! queued, and the scan takes it back and runs it itself (`aio/worker.rs`); pushing the
//! next reads to the workers first made the sparse bitmap scan slower at eic 16 (0.33 →
//! 0.50 s, three paired runs) and did not help at eic 1 (which now reads in the session,
//! below).
//!
//! ## One read ahead in the session
//!
//! At `effective_io_concurrency = 1` with buffered files, a `worker` or `io_uring` stream
//! runs its reads itself, as a `sync` stream does: it advises the read ahead and `preadv`s
//! each block when the consumer needs it, with the rule above (two reads at the device).
//! Handing a single read to the I/O method gains nothing to overlap and costs a hand-off
//! per block: two thread switches under `worker`, a system call to submit and a completion
//! to reap under `io_uring`, where the read a buffered stream advises and then `preadv`s
//! has the kernel's readahead behind it. Both made eic 1 slower than eic 0 (worker: sparse
//! bitmap scan 1.51 against 1.13 s; io_uring: dense 2.50 against 2.31 s in a matrix run).
//! Reading in the session took worker's sparse scan at eic 1 from 0.94 to 0.47 s, and
//! io_uring's from 0.39 to 0.31 s (dense 2.23 to 1.81 s), below eic 0 (paired runs,
//! docs/benchmarks/bitmap-scan.md). Direct I/O cannot be advised, so there eic 1 keeps the
//! I/O method.
//!
//! ## Reads in the session
//!
//! A stream created with `reads_in_session` (a nested loop's inner scans: single blocks
//! scattered over a relation, many of them already in the kernel's page cache) runs its
//! reads the same way under every I/O method when the files are buffered: advice ahead,
//! `preadv` when the block is needed. A cached block then costs an advice call and a copy,
//! where `worker` paid two thread hand-offs and `io_uring` a submission and a completion
//! per block; an uncached one is read by the kernel after the advice, several at once
//! (docs/benchmarks/nested-loops.md). With direct I/O the reads go to the I/O method.
//!
//! # Dropping behind (iolab's `read_stream_drop_behind`)
//!
//! With `read_stream_drop_behind = N`, a stream that moves forward through a buffered
//! relation tells the kernel to drop every N blocks it has handed out from the page cache,
//! and the rest at its end (`drop_behind.rs`). 0 (the default) is PostgreSQL's behaviour.
//! Index scans' streams, whose blocks jump back and forth, never drop.
//!
//! # Invariants (asserted)
//!
//! * The queue never holds more than `max_pinned_buffers` entries, plus one read's worth.
//! * In-progress reads complete in queue order: a "reading" head belongs to the oldest I/O.
//! * Dropping a stream first waits for every read it started (no I/O may still write into a
//!   frame after its pin is gone), then unpins everything.

use std::collections::VecDeque;
use std::sync::Arc;

use iolab_catalog::PgError;
use iolab_settings::ReadStreamAdvice;
use iolab_stats::AioEvent;

use crate::accounting::{Buffers, IoAccount};
use crate::aio::{AioSystem, InFlightIo, Issuer};
use crate::buffer::{
    BufferPool, BufferRing, PinLoan, PinnedBuffer, ReadByOther, RingKind, StartedRead,
};
use crate::storage::relfile::RelFile;
use crate::stream::drop_behind::DropBehind;

/// The refill batch is `max_ios / REFILL_FRACTION` reads, at most `MAX_REFILL_BATCH`.
const REFILL_FRACTION: usize = 8;
const MAX_REFILL_BATCH: usize = 8;

/// How a stream is set up (PostgreSQL's stream flags and the settings it reads).
#[derive(Clone, Debug)]
pub struct ReadStreamConfig {
    /// Reads in progress at once; 0 = synchronous execution, no advice.
    pub max_ios: usize,
    /// Largest read in blocks (`io_combine_limit`).
    pub io_combine_limit: u32,
    pub advice: ReadStreamAdvice,
    /// Most unrequested blocks read through to join two reads (`read_stream_gap_limit`).
    pub gap_limit: u32,
    /// Drop consumed blocks from the page cache in steps of this many (`read_stream_drop_behind`,
    /// 0 = never; see `drop_behind.rs`). Only for streams whose blocks go forward.
    pub drop_behind: u32,
    /// The caller promises sequential access (PostgreSQL's `READ_STREAM_SEQUENTIAL`).
    pub sequential: bool,
    /// Skip the ramp-up (`READ_STREAM_FULL`).
    pub full: bool,
    /// With buffered files, advise the reads and run them in the session, as under
    /// `io_method = sync`, whatever the I/O method (see "Reads in the session").
    pub reads_in_session: bool,
    /// Pins this stream may hold (the backend's share of the pool).
    pub pin_limit: usize,
    /// Session pid (for `pg_aios`).
    pub pid: i32,
}

/// Statistics of one stream, for EXPLAIN (IO)-style output.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReadStreamStats {
    /// Reads started (I/Os).
    pub ios: u64,
    /// Blocks covered by those reads.
    pub io_blocks: u64,
    /// Of those, blocks read only to join two reads (`read_stream_gap_limit`).
    pub gap_blocks: u64,
    /// Ranges dropped from the page cache behind the consumer (`read_stream_drop_behind`).
    pub drops: u64,
    /// Times the consumer had to wait for a read that was not complete.
    pub stalls: u64,
    /// Sum and count of the distance sampled at each read start, and its maximum.
    pub distance_sum: u64,
    pub distance_samples: u64,
    pub distance_max: u64,
    /// Sum of reads in progress sampled at each read start.
    pub inprogress_sum: u64,
    /// `max_pinned_buffers`.
    pub capacity: u64,
}

impl ReadStreamStats {
    /// Add `other`'s figures (another stream of the same operation): sums, and the larger
    /// maximum distance and capacity.
    pub fn add(&mut self, other: &ReadStreamStats) {
        self.ios += other.ios;
        self.io_blocks += other.io_blocks;
        self.gap_blocks += other.gap_blocks;
        self.drops += other.drops;
        self.stalls += other.stalls;
        self.distance_sum += other.distance_sum;
        self.distance_samples += other.distance_samples;
        self.distance_max = self.distance_max.max(other.distance_max);
        self.inprogress_sum += other.inprogress_sum;
        self.capacity = self.capacity.max(other.capacity);
    }
}

/// What a stream did, in order; recorded only when tracing is on ([`ReadStream::trace`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// A read of `nblocks` blocks from `blkno` was started; `advised`: advice was issued.
    Read {
        blkno: u32,
        nblocks: u32,
        advised: bool,
    },
    /// Block `blkno` was found in the pool.
    Hit { blkno: u32 },
    /// Blocks `from..to` were dropped from the page cache (`read_stream_drop_behind`).
    DroppedBehind { from: u32, to: u32 },
    /// Block `blkno` was being read already (by another thread, or by an earlier read of
    /// this stream); the consumer waits for that read.
    BeingRead { blkno: u32 },
    /// The consumer waited for the read starting at `blkno`; the distance became `distance`.
    Waited { blkno: u32, distance: usize },
    /// `reads` started reads were handed to the I/O method in one submission.
    Submitted { reads: usize },
}

enum Slot {
    Ready(PinnedBuffer),
    /// Pinned by the read with this sequence number, which is still in progress.
    Reading(u64),
    /// Pinned while another read of the block is in progress (another thread's, or an
    /// earlier read of this stream's for a block the source repeated).
    BeingRead(PinnedBuffer),
}

/// One pinned block of the queue. `data` is `None` for a gap block: read to join two
/// reads, released without being handed out.
struct Entry<T> {
    blkno: u32,
    data: Option<T>,
    slot: Slot,
}

struct InProgress {
    seq: u64,
    first_blkno: u32,
    nblocks: u32,
    advised: bool,
    io: InFlightIo,
}

/// Blocks collected into the next read, not started yet (`None`: a gap block). Never
/// ends with a gap block.
struct PendingBlocks<T> {
    blkno: u32,
    data: VecDeque<Option<T>>,
}

/// A read stream over one relation. See the module comment.
pub struct ReadStream<T: Send> {
    aio: Arc<AioSystem>,
    pool: Arc<BufferPool>,
    rel: Arc<RelFile>,
    ring: Option<BufferRing>,
    source: Box<dyn FnMut() -> Option<(u32, T)> + Send>,
    issuer: Issuer,
    pub acct: IoAccount,

    max_ios: usize,
    /// The stream runs its reads itself when it needs them, after advice (`sync`, and every
    /// method with buffered files at `effective_io_concurrency = 1`), instead of handing
    /// them to the I/O method.
    issuer_runs_reads: bool,
    combine_limit: u32,
    /// Most gap blocks one read may include (see "Reading through gaps").
    gap_limit: u32,
    max_pinned: usize,
    /// The pins `max_pinned` holds beyond the pool's share, given back when the stream ends.
    _pin_loan: PinLoan,
    policy: ReadStreamAdvice,
    advice_enabled: bool,
    /// Reads may be advised by the I/O worker that finds them queued (`worker`, buffered).
    worker_advice: bool,
    /// While reads are in flight, look ahead only once this many more could start (see
    /// "Submitting in batches"); 1 = refill after every block.
    refill_batch: usize,
    /// Before waiting for a read, start reads as if it were done (see "Looking ahead while
    /// waiting"): one read more than `max_ios` may then be in flight.
    look_ahead_while_waiting: bool,

    distance: usize,
    queue: VecDeque<Entry<T>>,
    ios: VecDeque<InProgress>,
    next_seq: u64,
    pending: Option<PendingBlocks<T>>,
    unget: Option<(u32, T)>,
    /// Block a read must start at to continue the previous read.
    seq_blocknum: Option<u32>,
    /// First block of the sequential region being advised (pg18 rule).
    seq_until_processed: Option<u32>,
    fast_path: bool,
    /// Consumed blocks not yet dropped from the page cache (`None`: drop-behind is off).
    drop_behind: Option<DropBehind>,
    stats: ReadStreamStats,
    trace: Option<Vec<StreamEvent>>,
}

impl<T: Send> ReadStream<T> {
    /// A stream over `rel` whose blocks come from `source` (block number and per-block
    /// data, `None` at the end), reading through `ring` if given.
    pub fn new(
        aio: Arc<AioSystem>,
        pool: Arc<BufferPool>,
        rel: Arc<RelFile>,
        ring: Option<BufferRing>,
        config: &ReadStreamConfig,
        acct: IoAccount,
        source: impl FnMut() -> Option<(u32, T)> + Send + 'static,
    ) -> ReadStream<T> {
        // A temporary relation is read through its session's local buffers, without a
        // ring (if the session has gone, the first read says so).
        let pool = pool.serving(&rel).unwrap_or(pool);
        let ring = ring.filter(|_| !pool.is_local());
        let combine_limit = config.io_combine_limit.max(1);
        let synchronous = config.max_ios == 0;
        let max_ios = config.max_ios.max(1).min(aio.max_concurrency());
        let mut max_pinned = (max_ios + 1) * combine_limit as usize;
        if let Some(ring) = &ring {
            // A bulk-read ring may be filled by the stream; other rings only half.
            let ring_len = ring.len().min(pool.nbuffers() / 8).max(1);
            max_pinned = max_pinned.min(match ring.kind() {
                RingKind::BulkRead => ring_len,
                _ => (ring_len / 2).max(1),
            });
        }
        // Past its share, a stream may borrow pins while few other streams do (see
        // buffer/pool.rs, "Pins a read stream may hold").
        let pin_loan = pool.lend_stream_pins(max_pinned.saturating_sub(config.pin_limit));
        max_pinned = max_pinned.min(config.pin_limit + pin_loan.pins());
        if pool.is_local() {
            // The caller's limit is the shared pool's; local buffers have their own.
            max_pinned = max_pinned.min(pool.pin_limit());
        }
        let max_pinned = max_pinned.max(1);
        let direct = aio.is_direct();
        let sync_method = aio.method() == iolab_settings::IoMethod::Sync;
        let policy_advises = !direct
            && !synchronous
            && match config.advice {
                ReadStreamAdvice::Never => false,
                ReadStreamAdvice::Always => true,
                ReadStreamAdvice::Pg17 | ReadStreamAdvice::Pg18 => !config.sequential,
            };
        let method = aio.method();
        // Buffered, one read ahead: the scan reads itself under every method, as under sync
        // (see "One read ahead in the session").
        let one_ahead = !direct && config.max_ios == 1;
        // The reads run here, after advice (see "Reads in the session").
        let in_session = one_ahead || (config.reads_in_session && !direct);
        let issuer_runs_reads = synchronous || sync_method || in_session;
        // An advisable read is advised once: by the I/O worker that finds it queued (`worker`,
        // reads not run in the session), else by the stream itself (see "Advice").
        let worker_advice = policy_advises && aio.advises_in_workers() && !in_session;
        let advice_enabled = policy_advises && !worker_advice;
        let distance = if config.full {
            max_pinned.min(combine_limit as usize)
        } else {
            1
        };
        let refill_batch = if issuer_runs_reads {
            1
        } else {
            (max_ios / REFILL_FRACTION).clamp(1, MAX_REFILL_BATCH)
        };
        let look_ahead_while_waiting = !synchronous
            && max_ios < aio.max_concurrency()
            && (method != iolab_settings::IoMethod::Worker || in_session);
        ReadStream {
            aio,
            pool,
            rel,
            ring,
            source: Box::new(source),
            issuer: Issuer::new(config.pid),
            acct,
            max_ios,
            issuer_runs_reads,
            combine_limit,
            gap_limit: config.gap_limit,
            max_pinned,
            _pin_loan: pin_loan,
            policy: config.advice,
            advice_enabled,
            worker_advice,
            refill_batch,
            look_ahead_while_waiting,
            distance,
            queue: VecDeque::with_capacity(max_pinned + combine_limit as usize),
            ios: VecDeque::with_capacity(max_ios),
            next_seq: 0,
            pending: None,
            unget: None,
            seq_blocknum: None,
            seq_until_processed: None,
            fast_path: false,
            drop_behind: DropBehind::new(config.drop_behind).filter(|_| !direct),
            stats: ReadStreamStats {
                capacity: max_pinned as u64,
                ..ReadStreamStats::default()
            },
            trace: None,
        }
    }

    /// Start recording [`StreamEvent`]s (tests, debugging).
    pub fn trace(&mut self) {
        self.trace = Some(Vec::new());
    }

    /// The events recorded since [`trace`](Self::trace), emptied.
    pub fn take_events(&mut self) -> Vec<StreamEvent> {
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn record(&mut self, event: StreamEvent) {
        if let Some(trace) = &mut self.trace {
            trace.push(event);
        }
    }

    /// End the stream early: wait for its reads, release its pins, and return its account.
    pub fn into_account(mut self) -> IoAccount {
        self.drain();
        std::mem::take(&mut self.acct)
    }

    /// `max_pinned_buffers`: the most buffers this stream pins at once.
    pub fn max_pinned_buffers(&self) -> usize {
        self.max_pinned
    }

    pub fn stats(&self) -> ReadStreamStats {
        self.stats
    }

    /// The current look-ahead distance (0 once the source is exhausted).
    pub fn distance(&self) -> usize {
        self.distance
    }

    /// Which buffers this stream's I/O counts in.
    fn buffers(&self) -> Buffers {
        self.pool.buffers(self.ring.as_ref().map(BufferRing::kind))
    }

    fn next_from_source(&mut self) -> Option<(u32, T)> {
        self.unget.take().or_else(|| (self.source)())
    }

    fn pending_len(&self) -> usize {
        self.pending.as_ref().map_or(0, |p| p.data.len())
    }

    /// The next block's buffer (pinned, valid) and its per-block data, or `None` at the end.
    pub fn next_buffer(&mut self) -> Result<Option<(PinnedBuffer, T)>, PgError> {
        if self.fast_path {
            return self.next_fast();
        }
        loop {
            if self.queue.is_empty() {
                if self.distance == 0 {
                    self.drop_rest();
                    return Ok(None);
                }
                self.look_ahead()?;
                if self.queue.is_empty() {
                    self.drop_rest();
                    return Ok(None);
                }
            }
            match self.queue.front().map(|e| &e.slot) {
                Some(Slot::Reading(seq)) => {
                    let seq = *seq;
                    assert_eq!(
                        self.ios.front().map(|io| io.seq),
                        Some(seq),
                        "reads complete in queue order"
                    );
                    self.wait_oldest()?;
                }
                Some(Slot::BeingRead(_)) => self.resolve_being_read()?,
                _ => {}
            }
            let entry = self.queue.pop_front().expect("queue checked non-empty");
            let Slot::Ready(buffer) = entry.slot else {
                unreachable!("head of the queue is ready after waiting");
            };
            debug_assert_eq!(buffer.blkno(), entry.blkno);
            self.look_ahead()?;
            // A gap block was read only to join two reads: its pin goes, the next block comes.
            let Some(data) = entry.data else {
                continue;
            };
            self.fast_path = self.ios.is_empty()
                && self.queue.len() == 1
                && matches!(
                    self.queue.front(),
                    Some(Entry {
                        slot: Slot::Ready(_),
                        data: Some(_),
                        ..
                    })
                )
                && self.distance == 1
                && self.pending.is_none()
                && self.unget.is_none()
                && std::mem::size_of::<T>() == 0;
            self.handed_out(entry.blkno);
            self.acct.maybe_flush();
            return Ok(Some((buffer, data)));
        }
    }

    /// The all-cached path: hand out the one queued buffer, pin the next block.
    fn next_fast(&mut self) -> Result<Option<(PinnedBuffer, T)>, PgError> {
        let entry = self.queue.pop_front().expect("fast path holds one buffer");
        let (Slot::Ready(buffer), Some(data)) = (entry.slot, entry.data) else {
            unreachable!("fast path buffers are ready and were asked for");
        };
        match self.next_from_source() {
            None => {
                self.distance = 0;
                self.fast_path = false;
            }
            Some((blkno, data)) => {
                self.pending = Some(PendingBlocks {
                    blkno,
                    data: VecDeque::from([Some(data)]),
                });
                // A hit keeps the fast path; a miss starts an I/O and leaves it.
                let started = self.start_pending();
                self.submit_staged();
                started?;
                self.fast_path = self.ios.is_empty()
                    && self.queue.len() == 1
                    && matches!(self.queue.front().map(|e| &e.slot), Some(Slot::Ready(_)));
            }
        }
        self.handed_out(entry.blkno);
        self.acct.maybe_flush();
        Ok(Some((buffer, data)))
    }

    /// The head of the queue is a block someone else is reading. Wait for it in short
    /// steps, completing this stream's own reads meanwhile (one of them may be what the
    /// other thread waits for), so two streams can never wait for each other.
    fn resolve_being_read(&mut self) -> Result<(), PgError> {
        let at = self.buffers();
        loop {
            let entry = self.queue.front_mut().expect("head entry");
            let Slot::BeingRead(buffer) =
                std::mem::replace(&mut entry.slot, Slot::Reading(u64::MAX))
            else {
                unreachable!("head is being read");
            };
            let blkno = entry.blkno;
            let timeout = std::time::Duration::from_millis(1);
            match self.pool.wait_for_read(buffer, timeout, &mut self.acct, at) {
                ReadByOther::Valid(buffer) => {
                    self.queue.front_mut().expect("head").slot = Slot::Ready(buffer);
                    return Ok(());
                }
                ReadByOther::Failed => {
                    let buffer = self.pool.read_buffer(
                        &self.rel,
                        blkno,
                        self.ring.as_mut(),
                        &mut self.acct,
                    )?;
                    self.queue.front_mut().expect("head").slot = Slot::Ready(buffer);
                    return Ok(());
                }
                ReadByOther::Pending(buffer) => {
                    self.queue.front_mut().expect("head").slot = Slot::BeingRead(buffer);
                    if !self.ios.is_empty() {
                        self.wait_oldest()?;
                    }
                    self.aio.poll();
                }
            }
        }
    }

    /// Wait for the oldest read in progress and mark its entries ready; adapt the distance.
    /// First, if the backend's I/O budget has room, start the next reads as if this one
    /// were done (see "Looking ahead while waiting").
    fn wait_oldest(&mut self) -> Result<(), PgError> {
        let io = self.ios.pop_front().expect("a read in progress");
        if self.look_ahead_while_waiting {
            if let Err(e) = self.look_ahead() {
                self.ios.push_front(io);
                return Err(e);
            }
        }
        let seq = io.seq;
        let at = self.buffers();
        let stalls_before = self.acct.io_stalls;
        let buffers = match self.aio.wait(&mut self.issuer, io.io, &mut self.acct, at) {
            Ok(buffers) => buffers,
            Err(e) => {
                // The read's buffers are released; forget its entries so the stream stays
                // consistent (the caller normally stops here).
                self.queue
                    .retain(|entry| !matches!(entry.slot, Slot::Reading(s) if s == seq));
                return Err(e);
            }
        };
        self.stats.stalls += self.acct.io_stalls - stalls_before;
        assert_eq!(buffers.len(), io.nblocks as usize);
        let first = self
            .queue
            .iter()
            .position(|entry| matches!(entry.slot, Slot::Reading(s) if s == seq))
            .expect("a read's entries are queued");
        for (entry, buffer) in self.queue.iter_mut().skip(first).zip(buffers) {
            assert!(matches!(entry.slot, Slot::Reading(s) if s == seq));
            debug_assert_eq!(entry.blkno, buffer.blkno());
            entry.slot = Slot::Ready(buffer);
        }
        // PostgreSQL 17 grew the distance past io_combine_limit only for advised (random)
        // reads; 18 doubles it after every read that was waited for.
        self.distance = if self.policy == ReadStreamAdvice::Pg17
            && !io.advised
            && self.distance >= self.combine_limit as usize
        {
            (self.distance - 1).max(1)
        } else if self.policy == ReadStreamAdvice::Pg17 && !io.advised {
            (self.distance * 2).min(self.combine_limit as usize)
        } else {
            (self.distance * 2).min(self.max_pinned)
        };
        self.record(StreamEvent::Waited {
            blkno: io.first_blkno,
            distance: self.distance,
        });
        if self.advice_enabled && Some(io.first_blkno) == self.seq_until_processed {
            // The synchronous reads have caught up with the advised region.
            self.seq_until_processed = None;
        }
        Ok(())
    }

    /// Collect blocks from the source and start reads until the distance, the I/O limit
    /// or the end of the source is reached; then submit what was staged as one batch.
    fn look_ahead(&mut self) -> Result<(), PgError> {
        if !self.refill_due() {
            self.aio.poll();
            return Ok(());
        }
        let result = self.look_ahead_inner();
        self.submit_staged();
        self.aio.poll();
        result
    }

    /// Hand the reads started since the last submission to the I/O method, as one batch.
    fn submit_staged(&mut self) {
        let reads = self.issuer.staged();
        if reads == 0 {
            return;
        }
        let at = self.buffers();
        self.aio.submit_staged(&mut self.issuer, &mut self.acct, at);
        self.record(StreamEvent::Submitted { reads });
    }

    /// With reads in flight, is there room for a batch of `refill_batch` more — that many
    /// free I/O slots, and that many shares of the distance free? With nothing in flight (or
    /// the source exhausted) the look-ahead always runs.
    fn refill_due(&self) -> bool {
        if self.refill_batch == 1 || self.ios.is_empty() || self.distance == 0 {
            return true;
        }
        let free_ios = self.max_ios.saturating_sub(self.ios.len());
        let used = self.queue.len() + self.pending_len();
        let free_blocks = self.distance.saturating_sub(used);
        free_ios >= self.refill_batch
            && free_blocks * self.max_ios >= self.refill_batch * self.distance
    }

    fn look_ahead_inner(&mut self) -> Result<(), PgError> {
        while self.ios.len() < self.max_ios && self.queue.len() + self.pending_len() < self.distance
        {
            if self.pending_len() >= self.combine_limit as usize {
                if !self.start_pending()? {
                    return Ok(());
                }
                continue;
            }
            let Some((blkno, data)) = self.next_from_source() else {
                self.distance = 0;
                break;
            };
            let (gap_limit, combine_limit) = (self.gap_limit, self.combine_limit as usize);
            if let Some(p) = &mut self.pending {
                let len = p.data.len();
                // Consecutive (gap 0), or close enough to read through the gap.
                let joins = blkno
                    .checked_sub(p.blkno + len as u32)
                    .filter(|&gap| gap <= gap_limit && len + gap as usize + 1 <= combine_limit);
                if let Some(gap) = joins {
                    p.data.extend((0..gap).map(|_| None));
                    p.data.push_back(Some(data));
                    continue;
                }
                if !self.start_pending()? {
                    self.unget = Some((blkno, data));
                    return Ok(());
                }
            }
            self.pending = Some(PendingBlocks {
                blkno,
                data: VecDeque::from([Some(data)]),
            });
        }
        let len = self.pending_len();
        if len > 0
            && self.ios.len() < self.max_ios
            && (len >= self.combine_limit as usize
                || (len >= self.distance && self.queue.is_empty())
                || self.distance == 0)
        {
            self.start_pending()?;
        }
        Ok(())
    }

    /// Start the pending read, perhaps in several pieces (hits, or a read split where a
    /// block is already in the pool). Returns `false` if it could not all be started
    /// (I/O or pin limit); what is left stays pending.
    fn start_pending(&mut self) -> Result<bool, PgError> {
        while let Some(p) = &mut self.pending {
            // A read never starts with a gap block (one is left here when the read before
            // it was split).
            while p.data.front().is_some_and(Option::is_none) {
                p.data.pop_front();
                p.blkno += 1;
            }
            let len = p.data.len();
            if len == 0 {
                self.pending = None;
                break;
            }
            let blkno = p.blkno;
            if self.ios.len() >= self.max_ios {
                return Ok(false);
            }
            let allowed = self.max_pinned.saturating_sub(self.queue.len());
            if allowed == 0 && !self.queue.is_empty() {
                return Ok(false);
            }
            if allowed < len && !self.queue.is_empty() {
                self.distance = self.distance.min(self.queue.len() + allowed).max(1);
            }
            let mut nblocks = len.min(allowed.max(1)).min(self.combine_limit as usize);
            // Nor ends with one where a limit cuts it (the pool may still end it at one).
            while p.data[nblocks - 1].is_none() {
                nblocks -= 1;
            }
            let nblocks = nblocks as u32;
            let advise = self.advice_for(blkno);
            let at = self.buffers();
            let started = self.pool.start_read(
                &self.rel,
                blkno,
                nblocks,
                self.ring.as_mut(),
                &mut self.acct,
                false,
            )?;
            let p = self.pending.as_mut().expect("pending read");
            match started {
                StartedRead::BeingRead(buffer) => {
                    let data = p.data.pop_front().expect("pending block");
                    p.blkno += 1;
                    self.queue.push_back(Entry {
                        blkno,
                        data,
                        slot: Slot::BeingRead(buffer),
                    });
                    self.record(StreamEvent::BeingRead { blkno });
                }
                StartedRead::Hit(buffer) => {
                    let data = p.data.pop_front().expect("pending block");
                    p.blkno += 1;
                    self.queue.push_back(Entry {
                        blkno,
                        data,
                        slot: Slot::Ready(buffer),
                    });
                    if self.distance > 1 {
                        self.distance -= 1;
                    }
                    self.record(StreamEvent::Hit { blkno });
                }
                StartedRead::Miss(read) => {
                    let n = read.nblocks();
                    let seq = self.next_seq;
                    self.next_seq += 1;
                    for i in 0..n {
                        let data = p.data.pop_front().expect("pending block");
                        self.stats.gap_blocks += u64::from(data.is_none());
                        self.queue.push_back(Entry {
                            blkno: blkno + i,
                            data,
                            slot: Slot::Reading(seq),
                        });
                    }
                    p.blkno += n;
                    if advise {
                        self.aio.advise(&read, &mut self.acct, at);
                    }
                    self.stats.ios += 1;
                    self.stats.io_blocks += n as u64;
                    self.stats.distance_sum += self.distance as u64;
                    self.stats.distance_samples += 1;
                    self.stats.distance_max = self.stats.distance_max.max(self.distance as u64);
                    self.stats.inprogress_sum += self.ios.len() as u64;
                    let io = self.aio.start_read(
                        &mut self.issuer,
                        read,
                        self.issuer_runs_reads,
                        self.worker_advice,
                        &mut self.acct,
                    );
                    self.ios.push_back(InProgress {
                        seq,
                        first_blkno: blkno,
                        nblocks: n,
                        advised: advise,
                        io,
                    });
                    self.seq_blocknum = Some(blkno + n);
                    self.record(StreamEvent::Read {
                        blkno,
                        nblocks: n,
                        advised: advise,
                    });
                }
            }
            assert!(
                self.queue.len() <= self.max_pinned + self.combine_limit as usize,
                "read stream pinned more than its limit"
            );
        }
        Ok(true)
    }

    /// Whether a read starting at `blkno` gets advice (see "Advice" above). Updates the
    /// sequential-region state.
    fn advice_for(&mut self, blkno: u32) -> bool {
        if !self.advice_enabled {
            return false;
        }
        let continues = self.seq_blocknum == Some(blkno);
        match self.policy {
            ReadStreamAdvice::Never => false,
            ReadStreamAdvice::Always => true,
            ReadStreamAdvice::Pg17 => !continues,
            ReadStreamAdvice::Pg18 => {
                if continues {
                    self.seq_until_processed.is_some()
                } else {
                    self.seq_until_processed = Some(blkno);
                    !self.queue.is_empty()
                }
            }
        }
    }

    /// Wait for every read still in progress (ignoring errors) and release all pins.
    fn drain(&mut self) {
        self.submit_staged();
        let at = self.buffers();
        while let Some(io) = self.ios.pop_front() {
            let _ = self.aio.wait(&mut self.issuer, io.io, &mut self.acct, at);
        }
        self.queue.clear();
        self.pending = None;
        self.unget = None;
        self.fast_path = false;
        assert_eq!(self.issuer.in_flight(), 0, "stream left I/O in flight");
        self.drop_rest();
    }

    /// Block `blkno` goes to the consumer: drop what is due behind it (see `drop_behind.rs`).
    fn handed_out(&mut self, blkno: u32) {
        if let Some(due) = self.drop_behind.as_mut().and_then(|d| d.consumed(blkno)) {
            self.drop_cached(due);
        }
    }

    /// At the end of the stream: drop the rest of what was consumed.
    fn drop_rest(&mut self) {
        if let Some(rest) = self.drop_behind.as_ref().and_then(DropBehind::rest) {
            self.drop_cached(rest);
        }
    }

    /// Drop `blocks` from the page cache unless one of them is still queued, about to be
    /// read or being read by this stream (then they are offered again later). The call's
    /// time counts as wait time, as advice's does.
    fn drop_cached(&mut self, blocks: std::ops::Range<u32>) {
        let busy = self.queue.iter().any(|e| blocks.contains(&e.blkno))
            || self.pending.as_ref().is_some_and(|p| {
                p.blkno < blocks.end && blocks.start < p.blkno + p.data.len() as u32
            })
            || self.unget.as_ref().is_some_and(|(b, _)| blocks.contains(b));
        if busy {
            return;
        }
        let drop_behind = self.drop_behind.as_mut().expect("drop-behind is on");
        drop_behind.dropped(blocks.clone());
        self.stats.drops += 1;
        let at = self.buffers();
        let timer = self.acct.start_timer();
        // Advisory, as the advice is: a failure leaves pages cached, nothing else.
        if self.rel.drop_cached(blocks.clone()).is_ok() {
            self.acct.aio_event(AioEvent::DroppedBehind);
        }
        self.acct.issued(at, timer);
        self.record(StreamEvent::DroppedBehind {
            from: blocks.start,
            to: blocks.end,
        });
    }
}

impl<T: Send> Drop for ReadStream<T> {
    fn drop(&mut self) {
        self.drain();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aio::AioConfig;
    use crate::storage::page::{page_add_item, page_init, page_set_checksum, BLCKSZ};
    use crate::storage::relfile::tests::TempDir;
    use iolab_settings::IoMethod;
    use StreamEvent::{Hit, Read, Waited};

    struct Fixture {
        _dir: TempDir,
        aio: Arc<AioSystem>,
        pool: Arc<BufferPool>,
        rel: Arc<RelFile>,
    }

    /// A relation of `nblocks` valid pages, a pool of 256 buffers, and `method`.
    fn fixture(tag: &str, nblocks: u32, method: IoMethod) -> Fixture {
        let dir = TempDir::new(tag);
        let rel = RelFile::open(&dir.0, 1).unwrap();
        let mut page = vec![0u8; BLCKSZ];
        for blkno in 0..nblocks {
            page_init(&mut page, 0);
            page_add_item(&mut page, &blkno.to_le_bytes()).unwrap();
            page_set_checksum(&mut page, blkno);
            rel.write_block(blkno, &page).unwrap();
        }
        let config = AioConfig {
            method,
            io_workers: 2,
            max_concurrency: 64,
            max_issuers: 4,
        };
        let (aio, _) = AioSystem::start(&config, false, None).unwrap();
        Fixture {
            _dir: dir,
            aio,
            pool: BufferPool::new(256),
            rel: Arc::new(rel),
        }
    }

    fn config(
        max_ios: usize,
        combine: u32,
        advice: ReadStreamAdvice,
        sequential: bool,
    ) -> ReadStreamConfig {
        ReadStreamConfig {
            max_ios,
            io_combine_limit: combine,
            advice,
            gap_limit: 0,
            drop_behind: 0,
            sequential,
            full: false,
            reads_in_session: false,
            pin_limit: 1000,
            pid: 7,
        }
    }

    /// A traced stream over `blocks`, whose per-block data is the block number × 10.
    fn stream_over(f: &Fixture, cfg: &ReadStreamConfig, blocks: &[u32]) -> ReadStream<u32> {
        let script: Vec<u32> = blocks.to_vec();
        let mut i = 0;
        let mut stream = ReadStream::new(
            f.aio.clone(),
            f.pool.clone(),
            f.rel.clone(),
            None,
            cfg,
            IoAccount::default(),
            move || {
                let b = script.get(i).copied();
                i += 1;
                b.map(|b| (b, b * 10))
            },
        );
        stream.trace();
        stream
    }

    /// Consume `stream`, checking every buffer and that exactly `blocks` come out, in
    /// order, with nothing left pinned; returns the events.
    fn drain_stream(stream: &mut ReadStream<u32>, blocks: &[u32]) -> Vec<StreamEvent> {
        let mut seen = Vec::new();
        while let Some((buffer, data)) = stream.next_buffer().unwrap() {
            assert_eq!(
                data,
                buffer.blkno() * 10,
                "per-block data travels with its block"
            );
            let page = buffer.page();
            let item = crate::storage::page::page_item(&page, 1).unwrap();
            assert_eq!(item, buffer.blkno().to_le_bytes(), "buffer holds its block");
            seen.push(buffer.blkno());
        }
        assert_eq!(seen, blocks, "blocks come out in source order");
        assert_eq!(
            stream.pool.stats().pinned,
            0,
            "every pin is handed over and released"
        );
        stream.take_events()
    }

    /// A stream that wants more pins than the pool's share borrows them for its lifetime:
    /// it looks further ahead than the share allows, and the pins go back when it ends.
    #[test]
    fn stream_borrows_pins_beyond_its_share_while_it_lives() {
        let f = fixture("rs-pin-loan", 64, IoMethod::Worker);
        let share = f.pool.pin_limit();
        assert_eq!(share, 4, "a 64th of 256 buffers");
        let cfg = ReadStreamConfig {
            pin_limit: share,
            ..config(8, 4, ReadStreamAdvice::Never, false)
        };
        let blocks: Vec<u32> = (0..64).collect();
        let mut stream = stream_over(&f, &cfg, &blocks);
        // (8 + 1) × 4 wanted; an eighth of the pool, 32, allowed.
        assert_eq!(stream.stats().capacity, 32);
        assert_eq!(f.pool.stream_pins_lent(), 28);
        let events = drain_stream(&mut stream, &blocks);
        assert!(
            reads(&events).iter().any(|&(_, n)| n == 4),
            "reads of io_combine_limit blocks"
        );
        assert!(
            stream.stats().distance_max > share as u64,
            "{:?}",
            stream.stats()
        );
        drop(stream);
        assert_eq!(f.pool.stream_pins_lent(), 0);
    }

    /// Consume a stream over `blocks` (see [`drain_stream`]); returns the events.
    fn run(f: &Fixture, cfg: &ReadStreamConfig, blocks: &[u32]) -> Vec<StreamEvent> {
        drain_stream(&mut stream_over(f, cfg, blocks), blocks)
    }

    fn reads(events: &[StreamEvent]) -> Vec<(u32, u32)> {
        events
            .iter()
            .filter_map(|e| match e {
                Read { blkno, nblocks, .. } => Some((*blkno, *nblocks)),
                _ => None,
            })
            .collect()
    }

    fn warm(f: &Fixture, blocks: impl IntoIterator<Item = u32>) {
        let mut acct = IoAccount::default();
        for b in blocks {
            f.pool.read_buffer(&f.rel, b, None, &mut acct).unwrap();
        }
    }

    #[test]
    fn cold_sequential_ramps_up_and_combines() {
        let f = fixture("stream-ramp", 40, IoMethod::Sync);
        let blocks: Vec<u32> = (0..40).collect();
        let events = run(&f, &config(2, 4, ReadStreamAdvice::Pg18, true), &blocks);
        // Distance 1 → 2 → 4 → 8 (capped by (max_ios + 1) × 4 = 12): reads of 1, 2, then
        // full io_combine_limit reads.
        assert_eq!(
            reads(&events),
            vec![
                (0, 1),
                (1, 2),
                (3, 4),
                (7, 4),
                (11, 4),
                (15, 4),
                (19, 4),
                (23, 4),
                (27, 4),
                (31, 4),
                (35, 4),
                (39, 1)
            ]
        );
        let distances: Vec<usize> = events
            .iter()
            .filter_map(|e| match e {
                Waited { distance, .. } => Some(*distance),
                _ => None,
            })
            .collect();
        assert_eq!(&distances[..4], &[2, 4, 8, 12]);
        assert!(
            distances.iter().all(|&d| d <= 12),
            "distance capped at max_pinned_buffers"
        );
        assert!(
            events
                .iter()
                .all(|e| !matches!(e, Read { advised: true, .. })),
            "a sequential stream is never advised"
        );
    }

    #[test]
    fn reads_split_around_cached_blocks_and_hits_decay_the_distance() {
        let f = fixture("stream-split", 24, IoMethod::Sync);
        warm(&f, [5, 6, 12]);
        let blocks: Vec<u32> = (0..24).collect();
        let events = run(&f, &config(4, 8, ReadStreamAdvice::Pg18, true), &blocks);
        // Ramp-up as in the cold case, but no read covers a cached block: the pool ends a
        // read at the first mapped block ({3,4} stops before 5; {11..18} splits around 12
        // into {11} and {13..18}), and the hits on 5, 6, 12 take the distance down by one
        // each (so {7..10} is 4 blocks: distance 4 after 5 and 6 were hits).
        assert_eq!(
            reads(&events),
            vec![(0, 1), (1, 2), (3, 2), (7, 4), (11, 1), (13, 6), (19, 5)]
        );
        let hits: Vec<u32> = events
            .iter()
            .filter_map(|e| match e {
                Hit { blkno } => Some(*blkno),
                _ => None,
            })
            .collect();
        assert_eq!(hits, vec![5, 6, 12]);
    }

    /// Requested blocks with gaps of 1, 2, 3 and 5 between runs.
    const GAPPY: [u32; 19] = [
        0, 1, 3, 4, 7, 8, 9, 13, 14, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
    ];

    fn gap_config(gap_limit: u32) -> ReadStreamConfig {
        ReadStreamConfig {
            full: true,
            gap_limit,
            ..config(4, 8, ReadStreamAdvice::Never, false)
        }
    }

    #[test]
    fn gaps_up_to_the_limit_are_read_through() {
        let f = fixture("stream-gaps", 32, IoMethod::Sync);
        // Without the setting every read is one run of requested blocks.
        let plain = run(&f, &gap_config(0), &GAPPY);
        assert_eq!(
            reads(&plain),
            vec![(0, 2), (3, 2), (7, 3), (13, 2), (20, 8), (28, 2)]
        );
        f.pool
            .evict_relation(f.rel.relfilenode(), &mut IoAccount::default())
            .unwrap();
        // Gap limit 2: blocks 0 to 7 are one read (gap blocks 2, 5 and 6 read through),
        // which 8 and 9 would join but for io_combine_limit 8; the gaps of 3 (9 → 13) and
        // 5 (14 → 20) stay holes. The consumer still gets exactly the requested blocks
        // (`drain_stream` checks).
        let mut stream = stream_over(&f, &gap_config(2), &GAPPY);
        let events = drain_stream(&mut stream, &GAPPY);
        assert_eq!(
            reads(&events),
            vec![(0, 8), (8, 2), (13, 2), (20, 8), (28, 2)]
        );
        assert_eq!(stream.stats().gap_blocks, 3, "blocks 2, 5 and 6");
        assert_eq!(stream.stats().io_blocks, 22);
        drop(stream);
        assert_eq!(f.pool.stats().pinned, 0, "gap blocks are unpinned too");
    }

    #[test]
    fn a_read_through_a_gap_is_cut_at_a_cached_block() {
        let f = fixture("stream-gap-hit", 32, IoMethod::Sync);
        // 6, a gap block, is in the pool: the read 0..7 ends before it (with the gap
        // block 5 read), and the rest of that pending read starts at the requested block
        // 7, not at a gap, right away as any split read's rest does.
        warm(&f, [6]);
        let mut stream = stream_over(&f, &gap_config(2), &GAPPY);
        let events = drain_stream(&mut stream, &GAPPY);
        assert_eq!(
            reads(&events),
            vec![(0, 6), (7, 1), (8, 2), (13, 2), (20, 8), (28, 2)]
        );
        assert_eq!(stream.stats().gap_blocks, 2, "blocks 2 and 5");
    }

    #[test]
    fn all_cached_stream_stays_at_distance_one_without_io() {
        let f = fixture("stream-cached", 30, IoMethod::Sync);
        warm(&f, 0..30);
        let blocks: Vec<u32> = (0..30).collect();
        let events = run(&f, &config(16, 16, ReadStreamAdvice::Pg18, true), &blocks);
        assert!(reads(&events).is_empty());
        assert_eq!(events.len(), 30, "one hit per block: {events:?}");
    }

    /// Runs of two adjacent blocks separated by gaps (the pattern of seed 002).
    fn two_block_runs(n: u32) -> Vec<u32> {
        (0..n).flat_map(|i| [i * 5, i * 5 + 1]).collect()
    }

    fn advised(events: &[StreamEvent]) -> Vec<(u32, u32, bool)> {
        events
            .iter()
            .filter_map(|e| match e {
                Read {
                    blkno,
                    nblocks,
                    advised,
                } => Some((*blkno, *nblocks, *advised)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn advice_policies_on_two_block_runs() {
        let blocks = two_block_runs(12);
        let run_policy = |policy, tag| {
            let f = fixture(tag, 60, IoMethod::Sync);
            advised(&run(&f, &config(8, 16, policy, false), &blocks))
        };
        let pg18 = run_policy(ReadStreamAdvice::Pg18, "advice-pg18");
        let pg17 = run_policy(ReadStreamAdvice::Pg17, "advice-pg17");
        let always = run_policy(ReadStreamAdvice::Always, "advice-always");
        let never = run_policy(ReadStreamAdvice::Never, "advice-never");
        // Every read is a two-block run (or its first block during ramp-up).
        assert!(pg18.iter().all(|&(b, n, _)| n <= 2 && b % 5 <= 1));
        // During the ramp-up nothing is pinned when a read starts ({0}, {1}, {5,6}), so
        // there is nothing to gain from advice; from then on every read jumps, starts a new
        // region, and is advised.
        assert_eq!(pg18.iter().take(3).filter(|r| r.2).count(), 0, "{pg18:?}");
        assert!(pg18[3..].iter().all(|r| r.2), "{pg18:?}");
        // pg17 advises every jump (pinned or not) and never a continuation.
        assert!(
            pg17.iter().all(|&(b, _, adv)| adv == (b % 5 == 0)),
            "{pg17:?}"
        );
        assert!(always.iter().all(|r| r.2));
        assert!(never.iter().all(|r| !r.2));
    }

    #[test]
    fn pg18_keeps_advising_a_long_sequential_region_until_reads_catch_up() {
        // A random jump, then a long sequential region: pg18 advises its continuation reads
        // until the consumer's synchronous read reaches the region's first block; pg17
        // advises only the jump.
        // Ten scattered blocks first, so that the distance grows (every read is waited for),
        // then the region.
        let blocks: Vec<u32> = (0..10).map(|i| 200 + 7 * i).chain(0..64).collect();
        let f = fixture("advice-region-18", 300, IoMethod::Sync);
        let pg18 = advised(&run(
            &f,
            &config(8, 4, ReadStreamAdvice::Pg18, false),
            &blocks,
        ));
        let f = fixture("advice-region-17", 300, IoMethod::Sync);
        let pg17 = advised(&run(
            &f,
            &config(8, 4, ReadStreamAdvice::Pg17, false),
            &blocks,
        ));
        let advised_continuations = |reads: &[(u32, u32, bool)]| {
            reads.iter().filter(|r| r.0 > 0 && r.0 < 64 && r.2).count()
        };
        assert_eq!(advised_continuations(&pg17), 0, "{pg17:?}");
        assert!(advised_continuations(&pg18) > 0, "{pg18:?}");
        // ... but not forever: the last reads of the region are no longer advised.
        assert!(!pg18.last().unwrap().2, "{pg18:?}");
    }

    /// The most reads the stream had started and not yet waited for, over its trace.
    fn most_in_flight(events: &[StreamEvent]) -> usize {
        let (mut now, mut most) = (0usize, 0usize);
        for e in events {
            match e {
                Read { .. } => now += 1,
                Waited { .. } => now -= 1,
                _ => {}
            }
            most = most.max(now);
        }
        most
    }

    #[test]
    fn the_next_read_starts_before_the_consumer_waits() {
        // Every third block: one read per block.
        let blocks: Vec<u32> = (0..12).map(|i| i * 3).collect();
        for method in [IoMethod::Sync, IoMethod::IoUring, IoMethod::Worker] {
            let f = fixture("stream-wait-ahead", 40, method);
            let events = run(&f, &config(1, 16, ReadStreamAdvice::Always, false), &blocks);
            // eic 1: {0} and {3} one at a time while the distance ramps up (1, then 2, at
            // which block 6 waits as a pending read in case 7 continues it); from then on
            // the read of the next block starts right before the wait for the current one,
            // so two reads are in flight.
            let order: Vec<String> = events
                .iter()
                .filter_map(|e| match e {
                    Read { blkno, .. } => Some(format!("read {blkno}")),
                    Waited { blkno, .. } => Some(format!("wait {blkno}")),
                    _ => None,
                })
                .collect();
            let mut expected: Vec<String> = ["read 0", "wait 0", "read 3", "wait 3", "read 6"]
                .map(String::from)
                .into();
            for b in (9..36).step_by(3) {
                expected.push(format!("read {b}"));
                expected.push(format!("wait {}", b - 3));
            }
            expected.push("wait 33".into());
            assert_eq!(order, expected, "{method:?}");
            assert_eq!(most_in_flight(&events), 2, "{method:?}");
            // At eic 1 with buffered files every method advises every read itself.
            let unadvised = events
                .iter()
                .filter(|e| matches!(e, Read { advised: false, .. }))
                .count();
            assert_eq!(unadvised, 0, "{method:?} advises every read: {events:?}");
            // eic 0 reads each block when it is needed; and a stream already at
            // io_max_concurrency (64 here) does not go past it.
            let f = fixture("stream-wait-eic0", 40, method);
            let sync_reads = run(&f, &config(0, 16, ReadStreamAdvice::Always, false), &blocks);
            assert_eq!(most_in_flight(&sync_reads), 1, "{method:?}");
            let many: Vec<u32> = (0..100).map(|i| 200 + i * 2).collect();
            let f = fixture("stream-wait-cap", 400, method);
            let capped = run(&f, &config(64, 16, ReadStreamAdvice::Never, false), &many);
            assert!(most_in_flight(&capped) <= 64, "{method:?}");
        }
        // worker past eic 1 hands its reads to the workers, which advise them: the stream
        // advises none itself and keeps PostgreSQL's count (at most eic reads in flight).
        let f = fixture("stream-wait-worker", 40, IoMethod::Worker);
        let events = run(&f, &config(2, 16, ReadStreamAdvice::Always, false), &blocks);
        assert_eq!(most_in_flight(&events), 2, "{events:?}");
        assert!(
            events
                .iter()
                .all(|e| !matches!(e, Read { advised: true, .. })),
            "{events:?}"
        );
    }

    #[test]
    fn reads_in_flight_are_topped_up_in_batches() {
        // Every third block: no combining, one read per block.
        let blocks: Vec<u32> = (0..100).map(|i| i * 3).collect();
        for method in [IoMethod::Worker, IoMethod::IoUring] {
            let submissions = |max_ios: usize| -> Vec<usize> {
                let f = fixture("stream-batches", 300, method);
                let events = run(
                    &f,
                    &config(max_ios, 16, ReadStreamAdvice::Never, false),
                    &blocks,
                );
                assert_eq!(reads(&events).len(), 100, "{method:?}: one read per block");
                let batches: Vec<usize> = events
                    .iter()
                    .filter_map(|e| match e {
                        StreamEvent::Submitted { reads } => Some(*reads),
                        _ => None,
                    })
                    .collect();
                assert_eq!(
                    batches.iter().sum::<usize>(),
                    100,
                    "{method:?}: every read submitted"
                );
                batches
            };
            // max_ios 32: batches of 4 once the stream is at its distance. Only the ramp-up
            // (distance 1, 2, 4…) and the source's end may submit fewer.
            let batched = submissions(32);
            let small = batched.iter().filter(|&&n| n < 4).count();
            assert!(small <= 8, "{method:?}: {batched:?}");
            assert!(batched.len() <= 100 / 4 + 8, "{method:?}: {batched:?}");
            // max_ios 4: a batch of one, so the stream tops up after every block.
            let unbatched = submissions(4);
            assert!(
                unbatched.len() > batched.len() * 2,
                "{method:?}: {unbatched:?}"
            );
        }
    }

    #[test]
    fn worker_and_uring_methods_return_the_same_blocks() {
        for method in [IoMethod::Worker, IoMethod::IoUring] {
            let f = fixture("stream-methods", 300, method);
            warm(&f, [17, 18, 150]);
            let blocks: Vec<u32> = (0..300).chain([3, 250, 251, 7]).collect();
            let events = run(&f, &config(16, 16, ReadStreamAdvice::Pg18, false), &blocks);
            let read_blocks: u32 = reads(&events).iter().map(|r| r.1).sum();
            let found = events
                .iter()
                .filter(|e| matches!(e, Hit { .. } | StreamEvent::BeingRead { .. }))
                .count() as u32;
            assert_eq!(read_blocks + found, 304, "{method:?}");
            // (250 and 251 come again while the stream may still be reading them: the
            // stream must then wait for its own read instead of deadlocking.)
            // The stream advises under io_uring (buffered files); under worker the workers do.
            let advised = events
                .iter()
                .any(|e| matches!(e, Read { advised: true, .. }));
            assert_eq!(advised, method == IoMethod::IoUring, "{method:?}");
            assert!(f.aio.rows().is_empty(), "no handle left in use");
        }
    }

    /// Whether `rel` lives on tmpfs, whose pages are the files and cannot be dropped.
    fn on_tmpfs(rel: &RelFile) -> bool {
        let path =
            std::ffi::CString::new(rel.segment_path(0).into_os_string().into_encoded_bytes());
        let mut fs = std::mem::MaybeUninit::<libc::statfs>::zeroed();
        // SAFETY: a NUL-terminated path and a statfs buffer the call fills in.
        let rc = unsafe { libc::statfs(path.unwrap().as_ptr(), fs.as_mut_ptr()) };
        assert_eq!(rc, 0);
        // SAFETY: statfs succeeded and filled it in.
        unsafe { fs.assume_init() }.f_type == libc::TMPFS_MAGIC
    }

    /// Blocks of `rel`'s first segment that are in the page cache now (`mincore`).
    fn cached_blocks(rel: &RelFile) -> Vec<u32> {
        let file = std::fs::File::open(rel.segment_path(0)).unwrap();
        let len = file.metadata().unwrap().len() as usize;
        let page = 4096;
        let mut resident = vec![0u8; len.div_ceil(page)];
        // SAFETY: a read-only shared mapping of a file we opened, unmapped before return;
        // mincore writes one byte per page into `resident`, which has room for them all.
        unsafe {
            use std::os::unix::io::AsRawFd;
            let addr = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            );
            assert_ne!(addr, libc::MAP_FAILED);
            assert_eq!(libc::mincore(addr, len, resident.as_mut_ptr()), 0);
            libc::munmap(addr, len);
        }
        let per_block = BLCKSZ / page;
        (0..(len / BLCKSZ) as u32)
            .filter(|&b| {
                let first = b as usize * per_block;
                resident[first..first + per_block]
                    .iter()
                    .any(|r| r & 1 == 1)
            })
            .collect()
    }

    fn dropped_ranges(events: &[StreamEvent]) -> Vec<(u32, u32)> {
        events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::DroppedBehind { from, to } => Some((*from, *to)),
                _ => None,
            })
            .collect()
    }

    /// `read_stream_drop_behind`: every 16 consumed blocks (and the holes between them) leave
    /// the page cache, the rest at the end; blocks the stream never reached stay. Each drop
    /// starts at the 2 MiB boundary below (block 0 here), in case a large folio straddled
    /// the end of the one before (`drop_behind.rs`). (On tmpfs,
    /// whose pages are the files, only the calls are checked.)
    #[test]
    fn drop_behind_empties_the_page_cache_behind_the_consumer() {
        for method in [IoMethod::Sync, IoMethod::Worker, IoMethod::IoUring] {
            let f = fixture("stream-drop-behind", 40, method);
            f.rel.sync().unwrap();
            let droppable = !on_tmpfs(&f.rel);
            let all: Vec<u32> = (0..40).collect();
            let expect_cached = |want: &[u32]| {
                if droppable {
                    assert_eq!(cached_blocks(&f.rel), want, "{method:?}");
                }
            };
            expect_cached(&all);
            // A bitmap heap scan's kind of source: forward, with holes.
            let blocks: Vec<u32> = (0..40).filter(|b| b % 5 != 4).collect();
            let events = run(&f, &config(4, 4, ReadStreamAdvice::Pg18, false), &blocks);
            assert_eq!(dropped_ranges(&events), [], "{method:?}: off by default");
            expect_cached(&all);
            f.pool
                .evict_relation(f.rel.relfilenode(), &mut IoAccount::default())
                .unwrap();
            let cfg = ReadStreamConfig {
                drop_behind: 16,
                ..config(4, 4, ReadStreamAdvice::Pg18, false)
            };
            let events = run(&f, &cfg, &blocks);
            assert_eq!(
                dropped_ranges(&events),
                [(0, 16), (0, 32), (0, 39)],
                "{method:?}"
            );
            expect_cached(&[39]);
        }
    }

    #[test]
    fn effective_io_concurrency_zero_reads_synchronously() {
        use crate::accounting::StatsSink;
        use iolab_stats::{BackendType, IoStatsHub};
        let f = fixture("stream-eic0", 64, IoMethod::Worker);
        let hub = Arc::new(IoStatsHub::new());
        let acct = IoAccount::new(
            false,
            Some(StatsSink {
                hub: hub.clone(),
                backend_type: BackendType::ClientBackend,
                pid: 0,
            }),
        );
        let mut next = 0;
        let mut stream = ReadStream::new(
            f.aio.clone(),
            f.pool.clone(),
            f.rel.clone(),
            None,
            &config(0, 16, ReadStreamAdvice::Pg18, false),
            acct,
            move || {
                next += 1;
                (next <= 64).then_some((next - 1, ()))
            },
        );
        let mut blocks = 0;
        while stream.next_buffer().unwrap().is_some() {
            blocks += 1;
        }
        drop(stream);
        assert_eq!(blocks, 64);
        let aio = hub.aio_snapshot();
        let counts = aio.counts(BackendType::ClientBackend);
        assert!(counts.ios > 0, "the reads are counted: {counts:?}");
        assert_eq!(
            (
                counts.submissions,
                counts.completed_elsewhere,
                counts.queue_full
            ),
            (0, 0, 0),
            "no I/O went through the workers"
        );
    }

    #[test]
    fn dropping_a_stream_mid_way_waits_for_its_reads_and_unpins() {
        for method in [IoMethod::Sync, IoMethod::Worker, IoMethod::IoUring] {
            let f = fixture("stream-drop", 200, method);
            let mut next = 0;
            let mut stream = ReadStream::new(
                f.aio.clone(),
                f.pool.clone(),
                f.rel.clone(),
                None,
                &config(16, 8, ReadStreamAdvice::Pg18, false),
                IoAccount::default(),
                move || {
                    next += 1;
                    (next <= 200).then_some((next - 1, ()))
                },
            );
            for _ in 0..50 {
                stream.next_buffer().unwrap().unwrap();
            }
            drop(stream);
            assert_eq!(f.pool.stats().pinned, 0, "{method:?}");
            assert!(f.aio.rows().is_empty(), "{method:?}");
        }
    }

    /// Under io_uring a reaped read stays COMPLETED_IO, its pages unverified and its buffers
    /// in progress, until the stream reaches it. A corrupted page in it must still be an
    /// error for the stream, and a second reader that meanwhile asks for that block must
    /// wait — never see the unverified page as valid — and then get the error too.
    #[test]
    fn uring_verifies_reaped_reads_lazily_and_still_rejects_corruption() {
        let f = fixture("stream-lazy-verify", 64, IoMethod::IoUring);
        let corrupt: u32 = 40;
        let mut page = vec![0u8; BLCKSZ];
        page_init(&mut page, 0);
        page_add_item(&mut page, &corrupt.to_le_bytes()).unwrap();
        page_set_checksum(&mut page, corrupt);
        page[BLCKSZ - 1] ^= 0xff; // the item's data, after the checksum was set
        f.rel.write_block(corrupt, &page).unwrap();

        let mut cfg = config(16, 8, ReadStreamAdvice::Pg18, true);
        cfg.full = true;
        let mut next = 0;
        let mut stream = ReadStream::new(
            f.aio.clone(),
            f.pool.clone(),
            f.rel.clone(),
            None,
            &cfg,
            IoAccount::default(),
            move || {
                next += 1;
                (next <= 64).then_some((next - 1, ()))
            },
        );
        for want in 0..32 {
            let (buffer, ()) = stream.next_buffer().unwrap().unwrap();
            assert_eq!(buffer.blkno(), want);
        }
        // Let the kernel finish the reads ahead, and reap them (COMPLETED_IO only).
        let read_of_corrupt = |state: iolab_stats::AioState| {
            f.aio
                .rows()
                .into_iter()
                .any(|row| row.state == state && row.target_desc.starts_with("blocks 40..47 "))
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !read_of_corrupt(iolab_stats::AioState::CompletedIo) {
            assert!(
                std::time::Instant::now() < deadline,
                "the read of blocks 40..47 never reached COMPLETED_IO: {:?}",
                f.aio.rows()
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
            f.aio.poll();
        }

        let (pool, rel) = (f.pool.clone(), f.rel.clone());
        let second = std::thread::spawn(move || {
            pool.read_buffer(&rel, corrupt, None, &mut IoAccount::default())
                .map(|buffer| buffer.blkno())
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            !second.is_finished(),
            "the second reader must wait for the stream's unverified read"
        );
        assert!(read_of_corrupt(iolab_stats::AioState::CompletedIo));

        let error = loop {
            match stream.next_buffer() {
                Ok(Some((buffer, ()))) => assert!(buffer.blkno() < corrupt),
                Ok(None) => panic!("the corrupted block was returned"),
                Err(e) => break e,
            }
        };
        assert_eq!(error.code, iolab_catalog::sqlstate::DATA_CORRUPTED);
        assert!(
            error
                .message
                .starts_with("invalid page in block 40 of relation"),
            "{}",
            error.message
        );
        let second = second.join().unwrap().unwrap_err();
        assert_eq!(second.code, iolab_catalog::sqlstate::DATA_CORRUPTED);
        assert!(
            second
                .message
                .starts_with("invalid page in block 40 of relation"),
            "{}",
            second.message
        );
        drop(stream);
        assert_eq!(f.pool.stats().pinned, 0);
        assert!(f.aio.rows().is_empty());
    }
}
