//! The shared buffer pool: a fixed set of 8 KiB frames caching relation blocks.
//!
//! # What it does
//!
//! Every page the engine reads or writes passes through here. A caller asks for block `b` of
//! relation `r` ([`BufferPool::read_buffer`]) and gets a [`PinnedBuffer`]: a frame holding
//! that block that cannot be evicted while the pin lives. If the block is cached that costs a
//! hash lookup and an atomic increment ("hit"); otherwise the pool picks a victim frame, writes
//! it back if it is dirty, and reads the block from the relation file ("read"). The pool is
//! only a cache: after a crash it starts empty and the relation files are the truth.
//!
//! # The pieces
//!
//! ```text
//!   mapping (128 partitions)             descriptors (one per frame)       frames (one mmap)
//!   ┌───────────────────────────┐        ┌─────────────────────────────┐  ┌──────────────┐
//!   │ (relfilenode, blkno) → id │──id──▶ │ state: pins|usage|flags     │  │ 8 KiB × N,   │
//!   │ Mutex<HashMap> per hash   │        │ header: tag, owner RelFile  │─▶│ 4096-aligned │
//!   └───────────────────────────┘        │ io_done condvar, content lk │  └──────────────┘
//!                                        └─────────────────────────────┘
//!   clock hand (atomic) sweeps descriptors round-robin looking for a victim
//! ```
//!
//! * **State word** (`AtomicU64`): bits 0..32 pin count, bits 32..36 usage count (0..=5),
//!   then flags `TAG_VALID` (the frame is assigned a block), `VALID` (the frame holds that
//!   block's contents), `DIRTY` (contents differ from disk), `IO_IN_PROGRESS` (one thread is
//!   reading or writing the frame). Pins and usage counts change with lock-free CAS.
//! * **Header** (`Mutex`): the tag and the owning `Arc<RelFile>` (so a dirty victim can be
//!   written back without a relation lookup). The same mutex and the `io_done` condvar let
//!   threads sleep until another thread's I/O on the frame finishes.
//! * **Content lock** (`RwLock<()>`): readers of the page take it shared, writers exclusive;
//!   write-back takes it shared and writes a private copy (with the checksum set), so readers
//!   are never blocked by an eviction or checkpoint.
//!
//! # Replacement: clock sweep
//!
//! Each pin from a lookup raises the frame's usage count (up to [`MAX_USAGE_COUNT`]). A thread
//! that needs a victim advances the shared clock hand: an unpinned frame with usage > 0 has
//! its usage decremented and is passed over; an unpinned frame with usage 0 is taken (pinned
//! by CAS from pin count 0). Pinned frames are skipped. If the sweep sees `2 × nbuffers`
//! pinned frames in a row with nothing to decrement, every frame is pinned and the request
//! fails with "no unpinned buffers available" instead of spinning forever. Frequently used
//! pages thus survive up to five passes of the hand; a page used once goes on the next pass.
//! Large scans pass a [`BufferRing`] so that they recycle a few frames of their own instead.
//!
//! # Installing a block (the retag)
//!
//! The victim is pinned only by us, but a concurrent lookup may still find it under its old
//! tag, and another thread may be installing the same new block. The retag therefore locks
//! the mapping partitions of the old and the new tag (in index order) and the header, then
//! re-checks: if the new tag is already mapped, another thread won the race and we use its
//! buffer; if the victim gained a pin or became dirty meanwhile, we try another victim.
//! Otherwise the old mapping is removed, the new one inserted, and the state set to
//! `TAG_VALID | IO_IN_PROGRESS` with our single pin — all before any lock is released. So
//! whoever finds the new mapping finds either `VALID` or an I/O in progress, and sleeps on the
//! condvar until the reading thread finishes. A failed read (I/O error or checksum failure)
//! removes the mapping again and wakes the sleepers, who retry from the lookup; nothing
//! invalid ever stays mapped.
//!
//! # Pins a read stream may hold
//!
//! A read stream keeps blocks pinned ahead of its consumer, so the pool bounds how many. Each
//! stream's share is [`BufferPool::pin_limit`], a 64th of the pool (PostgreSQL divides the
//! pool among its backends the same way). With the default 128MB that is 256 pins, 2 MiB
//! ahead: a lone scan of large reads then keeps only two to sixteen reads at the device,
//! too few to reach its throughput. So a stream that wants more than its share may borrow
//! pins ([`BufferPool::lend_stream_pins`]), up to an eighth of the pool in all (2 048 pins,
//! 16 MiB, at 128MB: sixteen reads of 1 MiB), from a budget of an eighth of the pool shared
//! by every stream, and gives them back when it ends. With many scans at once the budget
//! runs out and each keeps its share: the pins streams hold stay within their shares plus an
//! eighth of the pool. Local buffers serve one session and lend nothing. (A 16th of the pool
//! was the first limit; with 1 MiB reads an eighth took the dense bitmap heap scan's medians
//! on a 128MB pool from 611–745 ms to 592–662 ms in paired runs,
//! docs/benchmarks/bitmap-scan.md.)
//!
//! # Local buffers
//!
//! The same structure serves a session's temporary relations as its **local buffers**
//! ([`BufferPool::new_local`], `temp_buffers` frames, see `crate::temp`). A relation file
//! knows which pool caches it; every entry point that takes a relation forwards a
//! temporary relation's request from the shared pool to its local buffers
//! ([`BufferPool::serving`]), so callers holding `db.pool` need not care. Local buffers
//! take no ring, and their I/O counts as `local` blocks and `temp relation` I/O.
//!
//! # Lock order
//!
//! mapping partition (lower index first) → descriptor header → (condvar wait releases the
//! header). The content lock is never taken while holding a partition or header lock, and
//! nothing is ever waited for while holding a partition lock.
//!
//! # Invariants (asserted)
//!
//! * The pin count never underflows; usage count ≤ [`MAX_USAGE_COUNT`].
//! * A tag changes only while its changer holds the only pin (retag) or there are no pins at
//!   all (discard), so the tag of a pinned, valid buffer never changes.
//! * A mapped buffer is `TAG_VALID` and either `VALID` or `IO_IN_PROGRESS`.
//! * At most one thread performs I/O on a frame at a time.
//! * A block is cached by the pool its relation belongs to: temporary relations only in
//!   local buffers, all others only in the shared pool.
//!
//! # Bounds
//!
//! Frames: exactly `nbuffers`, allocated once. Mapping entries: at most `nbuffers` in total.
//! A pin costs no allocation; a miss allocates only if a mapping partition outgrows its
//! preallocated capacity. Write-back uses an 8 KiB stack copy per write.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolab_catalog::{sqlstate, PgError};
use iolab_stats::BufferUsage;

use crate::accounting::IoAccount;
use parking_lot::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use super::memory::FrameMemory;
use super::ring::{BufferRing, RingKind};
use crate::accounting::Buffers;
use crate::storage::page::{page_is_new, page_set_checksum, page_verify, BLCKSZ};
use crate::storage::relfile::RelFile;

/// Index of a frame/descriptor in the pool (0-based).
pub type BufferId = u32;

/// Largest usage count a buffer can accumulate (PostgreSQL's `BM_MAX_USAGE_COUNT`).
pub const MAX_USAGE_COUNT: u64 = 5;

/// Number of mapping-table partitions (PostgreSQL's `NUM_BUFFER_PARTITIONS`).
pub const MAPPING_PARTITIONS: usize = 128;

/// SQLSTATE for "no unpinned buffers available" (configuration_limit_exceeded).
pub const NO_UNPINNED_BUFFERS: &str = "53400";

const REFCOUNT_ONE: u64 = 1;
const REFCOUNT_MASK: u64 = (1 << 32) - 1;
const USAGE_SHIFT: u32 = 32;
const USAGE_ONE: u64 = 1 << USAGE_SHIFT;
const USAGE_MASK: u64 = 0xf << USAGE_SHIFT;
const TAG_VALID: u64 = 1 << 40;
const VALID: u64 = 1 << 41;
const DIRTY: u64 = 1 << 42;
const IO_IN_PROGRESS: u64 = 1 << 43;

#[inline]
fn refcount(state: u64) -> u64 {
    state & REFCOUNT_MASK
}

#[inline]
fn usage_count(state: u64) -> u64 {
    (state & USAGE_MASK) >> USAGE_SHIFT
}

/// Which block a buffer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BufferTag {
    pub relfilenode: u32,
    pub blkno: u32,
}

impl BufferTag {
    fn key(self) -> u64 {
        (self.relfilenode as u64) << 32 | self.blkno as u64
    }

    /// Mapping partition: a multiplicative hash so consecutive blocks spread out. Uses bits
    /// 32..39 of the product, independent of the bits the hash map itself keys on.
    fn partition(self) -> usize {
        ((self.key().wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize) % MAPPING_PARTITIONS
    }
}

/// A fast hasher for [`BufferTag`] (multiply-rotate, like FxHash); tags are not attacker
/// controlled, so SipHash's DoS resistance is not needed on this hot path.
#[derive(Default, Clone, Copy)]
struct TagHasher(u64);

impl Hasher for TagHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[derive(Default, Clone, Copy)]
struct BuildTagHasher;

impl BuildHasher for BuildTagHasher {
    type Hasher = TagHasher;
    fn build_hasher(&self) -> TagHasher {
        TagHasher::default()
    }
}

type MappingPartition = HashMap<BufferTag, BufferId, BuildTagHasher>;

/// Header fields protected by the descriptor mutex.
struct DescHeader {
    tag: Option<BufferTag>,
    rel: Option<Arc<RelFile>>,
}

/// Book-keeping for one frame.
struct BufferDesc {
    state: AtomicU64,
    header: Mutex<DescHeader>,
    /// Signalled (with `header` held) whenever `IO_IN_PROGRESS` is cleared.
    io_done: Condvar,
    content_lock: RwLock<()>,
}

impl BufferDesc {
    fn new() -> BufferDesc {
        BufferDesc {
            state: AtomicU64::new(0),
            header: Mutex::new(DescHeader {
                tag: None,
                rel: None,
            }),
            io_done: Condvar::new(),
            content_lock: RwLock::new(()),
        }
    }

    /// Apply `f` to the state word with a CAS loop; returns the previous state.
    fn update_state(&self, mut f: impl FnMut(u64) -> u64) -> u64 {
        let mut old = self.state.load(Ordering::Acquire);
        loop {
            let new = f(old);
            match self
                .state
                .compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(prev) => return prev,
                Err(actual) => old = actual,
            }
        }
    }

    /// Pin a buffer found through the mapping (caller holds its partition lock) and bump its
    /// usage count: up to the maximum normally, only from 0 to 1 under a ring strategy.
    fn pin_from_lookup(&self, with_strategy: bool) {
        self.update_state(|old| {
            debug_assert!(old & TAG_VALID != 0, "mapped buffer without a valid tag");
            let usage = usage_count(old);
            let bump = if with_strategy {
                usage == 0
            } else {
                usage < MAX_USAGE_COUNT
            };
            old + REFCOUNT_ONE + if bump { USAGE_ONE } else { 0 }
        });
    }

    /// Pin an unpinned buffer whose usage count is at most `max_usage` (clock sweep, ring
    /// reuse). Fails if it is pinned or more popular.
    fn try_pin_unpinned(&self, max_usage: u64) -> bool {
        let mut old = self.state.load(Ordering::Acquire);
        while refcount(old) == 0 && usage_count(old) <= max_usage {
            match self.state.compare_exchange_weak(
                old,
                old + REFCOUNT_ONE,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => old = actual,
            }
        }
        false
    }

    /// Clear `IO_IN_PROGRESS`, set `set` and clear `clear`, then wake every waiter.
    fn finish_io(&self, set: u64, clear: u64) {
        let _header = self.header.lock();
        let prev = self.update_state(|old| (old | set) & !(clear | IO_IN_PROGRESS));
        assert!(
            prev & IO_IN_PROGRESS != 0,
            "finishing I/O that was not in progress"
        );
        self.io_done.notify_all();
    }

    /// Sleep until no I/O is in progress on this buffer; returns the state then.
    fn wait_for_io(&self) -> u64 {
        let mut header = self.header.lock();
        loop {
            let state = self.state.load(Ordering::Acquire);
            if state & IO_IN_PROGRESS == 0 {
                return state;
            }
            self.io_done.wait(&mut header);
        }
    }

    /// Like [`wait_for_io`](Self::wait_for_io), but gives up after `timeout`.
    fn wait_for_io_timeout(&self, timeout: Duration) -> u64 {
        let mut header = self.header.lock();
        let state = self.state.load(Ordering::Acquire);
        if state & IO_IN_PROGRESS != 0 {
            self.io_done.wait_for(&mut header, timeout);
        }
        self.state.load(Ordering::Acquire)
    }
}

/// What became of another thread's read of a buffer we pinned ([`BufferPool::wait_for_read`]).
pub enum ReadByOther {
    /// The block is valid now (counted as a hit).
    Valid(PinnedBuffer),
    /// Still being read after the timeout.
    Pending(PinnedBuffer),
    /// The read failed and the buffer was unmapped; our pin is released. Read it again.
    Failed,
}

/// Result of trying to install a new tag in a victim buffer.
enum Retag {
    /// The victim now carries the new tag, with `IO_IN_PROGRESS` and our single pin.
    Done,
    /// Another thread mapped the block first; use its buffer.
    AlreadyMapped,
    /// The victim was pinned or dirtied by someone else meanwhile; pick another.
    VictimBusy,
}

/// Counts of buffers by state, for tests and views.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub nbuffers: usize,
    /// Buffers holding a block's contents.
    pub valid: usize,
    /// Valid buffers whose contents differ from disk.
    pub dirty: usize,
    /// Buffers with at least one pin.
    pub pinned: usize,
}

/// One buffer's state, in the shape of a `pg_buffercache` row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferSnapshot {
    pub buffer_id: BufferId,
    pub tag: Option<BufferTag>,
    pub valid: bool,
    pub dirty: bool,
    pub pins: u32,
    pub usage_count: u8,
}

/// The shared buffer pool. Create it with [`BufferPool::new`] and share the `Arc`.
pub struct BufferPool {
    frames: FrameMemory,
    descs: Box<[BufferDesc]>,
    mapping: Box<[Mutex<MappingPartition>]>,
    /// Ever-increasing clock position; the frame under the hand is `hand % nbuffers`.
    clock_hand: AtomicU64,
    /// Buffers the clock sweep has handed out (`pg_stat_bgwriter.buffers_alloc`).
    allocations: AtomicU64,
    /// The WAL flushed up to a page's LSN before the page is written (WAL before data).
    wal: std::sync::OnceLock<Arc<crate::wal::Wal>>,
    /// A session's local buffers (`temp_buffers`) for its temporary relations, rather than
    /// the shared pool: counted as `local` blocks and `temp relation` I/O.
    local: bool,
    /// Pins lent to read streams beyond their shares, all streams together (at most
    /// `nbuffers / STREAM_LOAN_BUDGET_DIVISOR`; see "Pins a read stream may hold").
    stream_pins_lent: AtomicUsize,
}

/// The pins lent to all read streams at once are at most the pool divided by this.
const STREAM_LOAN_BUDGET_DIVISOR: usize = 8;
/// One stream's share and loan together are at most the pool divided by this.
const STREAM_PINS_WITH_LOAN_DIVISOR: usize = 8;

/// Pins a read stream borrowed beyond its share ([`BufferPool::lend_stream_pins`]), given
/// back when dropped.
pub struct PinLoan {
    pool: Arc<BufferPool>,
    pins: usize,
}

impl PinLoan {
    pub fn pins(&self) -> usize {
        self.pins
    }
}

impl Drop for PinLoan {
    fn drop(&mut self) {
        if self.pins > 0 {
            let before = self
                .pool
                .stream_pins_lent
                .fetch_sub(self.pins, Ordering::AcqRel);
            assert!(before >= self.pins, "a loan returns only what was lent");
        }
    }
}

/// What one walk of the background writer did ([`BufferPool::clean_ahead`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CleanedAhead {
    /// The clock position the next walk starts from.
    pub next: u64,
    pub written: usize,
    /// It stopped at its most writes.
    pub hit_limit: bool,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("stats", &self.stats())
            .finish()
    }
}

impl BufferPool {
    /// A pool of `nbuffers` frames (at least 1) in 4 KiB pages, allocated and pre-faulted now.
    pub fn new(nbuffers: usize) -> Arc<BufferPool> {
        BufferPool::with_memory(FrameMemory::new(nbuffers))
    }

    /// A pool with one buffer per frame of `frames` (see [`FrameMemory::allocate`] for huge
    /// pages).
    pub fn with_memory(frames: FrameMemory) -> Arc<BufferPool> {
        let nbuffers = frames.nframes();
        assert!(nbuffers >= 1, "a buffer pool needs at least one buffer");
        assert!(nbuffers <= u32::MAX as usize, "too many buffers");
        let descs: Box<[BufferDesc]> = (0..nbuffers).map(|_| BufferDesc::new()).collect();
        let per_partition = nbuffers.div_ceil(MAPPING_PARTITIONS) * 2;
        let mapping: Box<[Mutex<MappingPartition>]> = (0..MAPPING_PARTITIONS)
            .map(|_| {
                Mutex::new(HashMap::with_capacity_and_hasher(
                    per_partition,
                    BuildTagHasher,
                ))
            })
            .collect();
        Arc::new(BufferPool {
            frames,
            descs,
            mapping,
            clock_hand: AtomicU64::new(0),
            allocations: AtomicU64::new(0),
            wal: std::sync::OnceLock::new(),
            local: false,
            stream_pins_lent: AtomicUsize::new(0),
        })
    }

    /// A session's local buffers: `nbuffers` frames in 4 KiB pages, backed by the kernel
    /// as they are first used (PostgreSQL, too, allocates local buffers as they are
    /// needed). Only relation files tied to this pool ([`RelFile::set_local_buffers`]) are
    /// read through it.
    pub fn new_local(nbuffers: usize) -> Result<Arc<BufferPool>, PgError> {
        let mut pool = BufferPool::with_memory(FrameMemory::untouched(nbuffers)?);
        Arc::get_mut(&mut pool).expect("a new pool").local = true;
        Ok(pool)
    }

    /// Whether this is a session's local buffers.
    pub fn is_local(&self) -> bool {
        self.local
    }

    /// What an I/O through `ring` counts as in this pool.
    pub fn buffers(&self, ring: Option<RingKind>) -> Buffers {
        if self.local {
            Buffers::Local
        } else {
            Buffers::Shared(ring)
        }
    }

    /// The pool that holds `rel`'s blocks: its session's local buffers for a temporary
    /// relation, this pool otherwise. Every entry point that takes a relation asks this
    /// first, so a caller holding the shared pool reads a temporary relation correctly.
    /// A temporary relation whose session has gone cannot be read (its buffers went with
    /// the session).
    pub fn serving(self: &Arc<Self>, rel: &RelFile) -> Result<Arc<BufferPool>, PgError> {
        Ok(self.elsewhere(rel)?.unwrap_or_else(|| Arc::clone(self)))
    }

    /// `Some(local pool)` when `rel` belongs to local buffers other than this pool (for a
    /// relation in shared buffers this costs one load, no reference count).
    fn elsewhere(&self, rel: &RelFile) -> Result<Option<Arc<BufferPool>>, PgError> {
        match rel.local_buffers() {
            None => Ok(None),
            Some(None) => Err(crate::temp::other_sessions_error()),
            Some(Some(local)) if std::ptr::eq(&*local, self) => Ok(None),
            Some(Some(local)) => Ok(Some(local)),
        }
    }

    /// From now on, a page is written only once the WAL is flushed up to its LSN.
    pub fn set_wal(&self, wal: Arc<crate::wal::Wal>) {
        assert!(self.wal.set(wal).is_ok(), "the pool's WAL is set once");
    }

    /// Whether the block is in the pool now (recovery's prefetcher: a block in the pool
    /// needs no advice). The answer may be stale as soon as it is given.
    pub fn is_buffered(&self, relfilenode: u32, blkno: u32) -> bool {
        let tag = BufferTag { relfilenode, blkno };
        self.mapping[tag.partition()].lock().contains_key(&tag)
    }

    pub fn nbuffers(&self) -> usize {
        self.descs.len()
    }

    /// Pins one read stream may hold: the pool shared among up to 64 concurrent streams
    /// (PostgreSQL divides it among its backends: NBuffers / (MaxBackends + auxiliary
    /// processes)), at least 1.
    pub fn pin_limit(&self) -> usize {
        match self.local {
            // Local buffers serve one session: a quarter of them, as PostgreSQL's
            // GetLocalPinLimit.
            true => (self.nbuffers() / 4).max(1),
            false => (self.nbuffers() / 64).max(1),
        }
    }

    /// Up to `extra` pins beyond a stream's share ([`pin_limit`](Self::pin_limit)): as many as
    /// the budget shared by all streams has left, and no more than bring the stream to an eighth
    /// of the pool. None from local buffers. See "Pins a read stream may hold".
    pub fn lend_stream_pins(self: &Arc<Self>, extra: usize) -> PinLoan {
        let most =
            (self.nbuffers() / STREAM_PINS_WITH_LOAN_DIVISOR).saturating_sub(self.pin_limit());
        let wanted = if self.local { 0 } else { extra.min(most) };
        let budget = self.nbuffers() / STREAM_LOAN_BUDGET_DIVISOR;
        let mut pins = 0;
        if wanted > 0 {
            // Ok: `pins` taken; Err: the budget is spent and `pins` stays 0.
            let _ =
                self.stream_pins_lent
                    .fetch_update(Ordering::AcqRel, Ordering::Acquire, |lent| {
                        pins = wanted.min(budget.saturating_sub(lent));
                        (pins > 0).then_some(lent + pins)
                    });
        }
        PinLoan {
            pool: Arc::clone(self),
            pins,
        }
    }

    /// Pins lent to read streams now, all together.
    pub fn stream_pins_lent(&self) -> usize {
        self.stream_pins_lent.load(Ordering::Acquire)
    }

    /// Whether a sequential scan of a relation of `rel_nblocks` blocks should use a
    /// bulk-read ring: when it is larger than a quarter of the pool.
    pub fn wants_ring(&self, rel_nblocks: u32) -> bool {
        rel_nblocks as usize > self.nbuffers() / 4
    }

    fn desc(&self, id: BufferId) -> &BufferDesc {
        &self.descs[id as usize]
    }

    /// The frame of buffer `id` as a shared slice.
    ///
    /// # Safety
    /// The caller must hold the buffer's content lock (either mode) and a pin.
    unsafe fn frame(&self, id: BufferId) -> &[u8] {
        std::slice::from_raw_parts(self.frames.frame_ptr(id as usize), BLCKSZ)
    }

    /// The frame of buffer `id` as a mutable slice.
    ///
    /// # Safety
    /// The caller must hold the buffer's content lock exclusively and a pin.
    #[allow(clippy::mut_from_ref)]
    unsafe fn frame_mut(&self, id: BufferId) -> &mut [u8] {
        std::slice::from_raw_parts_mut(self.frames.frame_ptr(id as usize), BLCKSZ)
    }

    fn unpin(&self, id: BufferId) {
        let prev = self
            .desc(id)
            .state
            .fetch_sub(REFCOUNT_ONE, Ordering::AcqRel);
        assert!(
            refcount(prev) > 0,
            "buffer {id} unpinned more often than pinned"
        );
    }

    fn pinned(self: &Arc<Self>, id: BufferId, tag: BufferTag) -> PinnedBuffer {
        PinnedBuffer {
            pool: Arc::clone(self),
            id,
            tag,
        }
    }

    /// Pin the buffer mapped to `tag`, if any.
    fn lookup_and_pin(&self, tag: BufferTag, with_strategy: bool) -> Option<BufferId> {
        let partition = self.mapping[tag.partition()].lock();
        let id = *partition.get(&tag)?;
        self.desc(id).pin_from_lookup(with_strategy);
        Some(id)
    }

    /// Read block `blkno` of `rel` into the pool (or find it there) and pin it: a one-block
    /// [`start_read`](Self::start_read) executed at once by this thread.
    ///
    /// Counts a hit or a read (with read time if `track_io_timing`), and the write-back of a
    /// dirty victim on the way. A block whose checksum or header does not verify yields
    /// `XX001` ("invalid page in block … of relation …") and is not cached, so the next
    /// request reads it again.
    pub fn read_buffer(
        self: &Arc<Self>,
        rel: &Arc<RelFile>,
        blkno: u32,
        strategy: Option<&mut BufferRing>,
        acct: &mut IoAccount,
    ) -> Result<PinnedBuffer, PgError> {
        if let Some(local) = self.elsewhere(rel)? {
            return local.read_buffer(rel, blkno, None, acct);
        }
        let at = self.buffers(strategy.as_deref().map(BufferRing::kind));
        match self.start_read(rel, blkno, 1, strategy, acct, true)? {
            StartedRead::Hit(buffer) => Ok(buffer),
            StartedRead::BeingRead(_) => unreachable!("start_read waited for the other read"),
            StartedRead::Miss(mut read) => {
                let timer = acct.start_timer();
                acct.aio_event(iolab_stats::AioEvent::Started);
                acct.set_wait_event(iolab_stats::WaitEvent::DataFileRead);
                let submitted = Instant::now();
                let result = read.execute();
                acct.set_wait_event(iolab_stats::WaitEvent::None);
                acct.read_latency(at, submitted.elapsed());
                acct.read_waited(at, timer, true);
                read.finish(result)?;
                Ok(read.into_buffers().pop().expect("a one-block read"))
            }
        }
    }

    /// Block `blkno` of `rel` pinned for a caller that will overwrite the whole page
    /// (redo of a full page image; PostgreSQL's `RBM_ZERO_AND_LOCK`): the buffer it has in
    /// the pool (counted as a hit), else a zeroed one without reading the file, whose old
    /// page (perhaps torn by a crash) would not even verify. Nothing is read, so nothing is
    /// counted as read.
    pub fn read_buffer_for_overwrite(
        self: &Arc<Self>,
        rel: &Arc<RelFile>,
        blkno: u32,
        acct: &mut IoAccount,
    ) -> Result<PinnedBuffer, PgError> {
        if let Some(local) = self.elsewhere(rel)? {
            return local.read_buffer_for_overwrite(rel, blkno, acct);
        }
        let tag = BufferTag {
            relfilenode: rel.relfilenode(),
            blkno,
        };
        match self.pin_or_map(rel, tag, None, acct, true)? {
            FoundOrMapped::Hit(buffer) => Ok(buffer),
            FoundOrMapped::BeingRead(_) => unreachable!("pin_or_map waited for the other read"),
            FoundOrMapped::Mapped(id) => Ok(self.publish_zeroed(id, tag, VALID)),
        }
    }

    /// PostgreSQL's `StartReadBuffers`: pin block `blkno` of `rel` and, if it is not in the
    /// pool, up to `max_blocks - 1` following blocks that are not in the pool either, as one
    /// [`PendingRead`] for the caller to execute (now, or asynchronously) and finish.
    ///
    /// * The first block valid in the pool → [`StartedRead::Hit`] (counted as a hit).
    /// * The first block being read by another thread → with `wait_for_others`, wait for
    ///   that read, then a hit (or, if it failed, try ourselves); without, return it pinned
    ///   as [`StartedRead::BeingRead`] — a read stream must not block here, since the read
    ///   may be one of its own not yet executed, or another thread's that waits for one of
    ///   ours.
    /// * Otherwise a victim buffer is mapped to it with `IO_IN_PROGRESS`, and the read grows
    ///   over the next blocks while they are unmapped, inside the relation and inside the
    ///   same segment file; it stops at the first block that is mapped (valid or being read:
    ///   the next call handles it) or when no victim is free.
    ///
    /// The read is counted when started (one I/O of n blocks, as PostgreSQL 18 counts).
    pub fn start_read(
        self: &Arc<Self>,
        rel: &Arc<RelFile>,
        blkno: u32,
        max_blocks: u32,
        mut strategy: Option<&mut BufferRing>,
        acct: &mut IoAccount,
        wait_for_others: bool,
    ) -> Result<StartedRead, PgError> {
        assert!(max_blocks >= 1, "a read needs at least one block");
        if let Some(local) = self.elsewhere(rel)? {
            return local.start_read(rel, blkno, max_blocks, None, acct, wait_for_others);
        }
        let at = self.buffers(strategy.as_deref().map(BufferRing::kind));
        let tag_of = |blkno| BufferTag {
            relfilenode: rel.relfilenode(),
            blkno,
        };
        let first_tag = tag_of(blkno);
        let first = match self.pin_or_map(
            rel,
            first_tag,
            strategy.as_deref_mut(),
            acct,
            wait_for_others,
        )? {
            FoundOrMapped::Hit(buffer) => return Ok(StartedRead::Hit(buffer)),
            FoundOrMapped::BeingRead(buffer) => return Ok(StartedRead::BeingRead(buffer)),
            FoundOrMapped::Mapped(id) => id,
        };
        let mut buffers = vec![self.pinned(first, first_tag)];
        let segment_blocks = rel.segment_blocks();
        let rel_blocks = rel.nblocks();
        while (buffers.len() as u32) < max_blocks {
            let next = blkno + buffers.len() as u32;
            if next % segment_blocks == 0 || next >= rel_blocks {
                break;
            }
            let tag = tag_of(next);
            if self.mapping[tag.partition()].lock().contains_key(&tag) {
                break;
            }
            // Prefer the frame after the previous one: a read into consecutive frames is one
            // contiguous piece of memory (one DMA segment instead of one per block).
            let prefer = buffers.last().map(|b| b.id + 1);
            let Ok(victim) = self.get_victim_preferring(strategy.as_deref_mut(), acct, prefer)
            else {
                break; // no free buffer (or a failed write-back): read what we have
            };
            match self.retag(victim, tag, rel) {
                Retag::Done => buffers.push(self.pinned(victim, tag)),
                Retag::AlreadyMapped | Retag::VictimBusy => {
                    self.unpin(victim);
                    break;
                }
            }
        }
        acct.read_started(at, first_tag.relfilenode, buffers.len() as u32);
        Ok(StartedRead::Miss(PendingRead {
            rel: Arc::clone(rel),
            first_blkno: blkno,
            buffers: buffers.into_iter().map(Some).collect(),
            finished: false,
        }))
    }

    /// The first step of every read: pin the buffer holding `tag` if the pool has it valid
    /// (counted as a hit), or being read by another thread (with `wait_for_others`, wait for
    /// that read; if it failed, go on as if the block were absent); else map a victim to
    /// `tag` with `IO_IN_PROGRESS` for the caller to fill.
    fn pin_or_map(
        self: &Arc<Self>,
        rel: &Arc<RelFile>,
        tag: BufferTag,
        mut strategy: Option<&mut BufferRing>,
        acct: &mut IoAccount,
        wait_for_others: bool,
    ) -> Result<FoundOrMapped, PgError> {
        let at = self.buffers(strategy.as_deref().map(BufferRing::kind));
        loop {
            if let Some(id) = self.lookup_and_pin(tag, strategy.is_some()) {
                let mut state = self.desc(id).state.load(Ordering::Acquire);
                if state & VALID == 0 && !wait_for_others {
                    return Ok(FoundOrMapped::BeingRead(self.pinned(id, tag)));
                }
                if state & VALID == 0 {
                    state = self.desc(id).wait_for_io();
                }
                if state & VALID != 0 {
                    acct.hit(at, tag.relfilenode);
                    return Ok(FoundOrMapped::Hit(self.pinned(id, tag)));
                }
                // The read we waited for failed and unmapped the buffer: try ourselves.
                self.unpin(id);
                continue;
            }
            let victim = self.get_victim(strategy.as_deref_mut(), acct)?;
            match self.retag(victim, tag, rel) {
                Retag::Done => return Ok(FoundOrMapped::Mapped(victim)),
                Retag::AlreadyMapped | Retag::VictimBusy => self.unpin(victim),
            }
        }
    }

    /// Zero the frame of buffer `id`, just mapped to `tag` by a retag (pinned, with
    /// `IO_IN_PROGRESS`), and publish it with `flags` — a page that is not read because its
    /// caller makes it anew (an extension, a full-page redo).
    fn publish_zeroed(self: &Arc<Self>, id: BufferId, tag: BufferTag, flags: u64) -> PinnedBuffer {
        let desc = self.desc(id);
        {
            let _exclusive = desc.content_lock.write();
            // SAFETY: exclusive content lock and our pin.
            unsafe { self.frame_mut(id) }.fill(0);
        }
        desc.finish_io(flags, 0);
        self.pinned(id, tag)
    }

    /// Wait up to `timeout` for the read another thread is doing into `buffer` (from
    /// [`StartedRead::BeingRead`]).
    pub fn wait_for_read(
        &self,
        buffer: PinnedBuffer,
        timeout: Duration,
        acct: &mut IoAccount,
        at: Buffers,
    ) -> ReadByOther {
        assert!(
            std::ptr::eq(&*buffer.pool, self),
            "waiting on another pool's buffer"
        );
        let state = self.desc(buffer.id).wait_for_io_timeout(timeout);
        if state & VALID != 0 {
            acct.hit(at, buffer.relfilenode());
            ReadByOther::Valid(buffer)
        } else if state & IO_IN_PROGRESS != 0 {
            ReadByOther::Pending(buffer)
        } else {
            // The read failed and unmapped the buffer (its tag is gone, so no tag check).
            let id = buffer.into_id();
            self.unpin(id);
            ReadByOther::Failed
        }
    }

    /// Verify and publish the block in buffer `id` just read, or undo its mapping. The
    /// caller holds a pin and `IO_IN_PROGRESS`.
    fn finish_block(
        &self,
        id: BufferId,
        tag: BufferTag,
        rel: &RelFile,
        read_ok: bool,
    ) -> Result<(), PgError> {
        let verified = if read_ok {
            // SAFETY: we hold IO_IN_PROGRESS and a pin, so no other thread reads or writes
            // the frame until finish_io publishes it.
            let frame = unsafe { self.frame(id) };
            page_verify(frame, tag.blkno).map_err(|corruption| {
                tracing::warn!(
                    blkno = tag.blkno,
                    relation = %rel.path().display(),
                    %corruption,
                    "page verification failed"
                );
                PgError::new(
                    sqlstate::DATA_CORRUPTED,
                    format!(
                        "invalid page in block {} of relation {}",
                        tag.blkno,
                        rel.path().display()
                    ),
                )
            })
        } else {
            Ok(())
        };
        if read_ok && verified.is_ok() {
            self.desc(id).finish_io(VALID, 0);
        } else {
            self.unmap_failed(id, tag);
        }
        verified
    }

    /// Pointer to the frame of buffer `id`, for I/O into it. The caller holds a pin and
    /// `IO_IN_PROGRESS` on it (a [`PendingRead`]).
    fn frame_ptr(&self, id: BufferId) -> *mut u8 {
        self.frames.frame_ptr(id as usize)
    }

    /// Undo the mapping of a buffer whose read failed, and wake the threads waiting for it.
    fn unmap_failed(&self, id: BufferId, tag: BufferTag) {
        let desc = self.desc(id);
        let mut partition = self.mapping[tag.partition()].lock();
        let removed = partition.remove(&tag);
        assert_eq!(
            removed,
            Some(id),
            "failed buffer {id} was not mapped to {tag:?}"
        );
        let mut header = desc.header.lock();
        assert_eq!(header.tag, Some(tag));
        header.tag = None;
        header.rel = None;
        let prev = desc
            .update_state(|old| old & !(TAG_VALID | VALID | DIRTY | IO_IN_PROGRESS | USAGE_MASK));
        assert!(prev & IO_IN_PROGRESS != 0);
        desc.io_done.notify_all();
    }

    /// Extend `rel` by one block and return it pinned: zeroed, valid and dirty (the caller
    /// `page_init`s it). Counts the extension as one block written (as PostgreSQL 16+ does)
    /// and the buffer as dirtied.
    pub fn new_block(
        self: &Arc<Self>,
        rel: &Arc<RelFile>,
        mut strategy: Option<&mut BufferRing>,
        acct: &mut IoAccount,
    ) -> Result<(u32, PinnedBuffer), PgError> {
        if let Some(local) = self.elsewhere(rel)? {
            return local.new_block(rel, None, acct);
        }
        let at = self.buffers(strategy.as_deref().map(BufferRing::kind));
        let mut victim = self.get_victim(strategy.as_deref_mut(), acct)?;
        let timer = acct.start_timer();
        acct.set_wait_event(iolab_stats::WaitEvent::DataFileExtend);
        let extended = rel.extend_by(1);
        acct.set_wait_event(iolab_stats::WaitEvent::None);
        let blkno = match extended {
            Ok(blkno) => blkno,
            Err(e) => {
                self.unpin(victim);
                return Err(PgError::io(
                    &format!("could not extend file \"{}\"", rel.path().display()),
                    &e,
                ));
            }
        };
        acct.extended(at, 1, timer);
        let tag = BufferTag {
            relfilenode: rel.relfilenode(),
            blkno,
        };
        loop {
            match self.retag(victim, tag, rel) {
                Retag::Done => {
                    *acct.blocks(at.is_local()).dirtied += 1;
                    return Ok((blkno, self.publish_zeroed(victim, tag, VALID | DIRTY)));
                }
                Retag::AlreadyMapped => {
                    // Someone read the new (all-zero) block before we installed it.
                    self.unpin(victim);
                    let buffer = self.read_buffer(rel, blkno, strategy, acct)?;
                    buffer.mark_dirty(acct);
                    return Ok((blkno, buffer));
                }
                Retag::VictimBusy => {
                    self.unpin(victim);
                    victim = self.get_victim(strategy.as_deref_mut(), acct)?;
                }
            }
        }
    }

    /// Find a buffer to reuse and return it pinned and clean: from the ring if it has a
    /// reusable buffer, else from the clock sweep. Dirty victims are written back here.
    /// A victim that held a valid page counts as an eviction, or as a reuse when it came
    /// from the ring (`pg_stat_io.evictions` / `reuses`).
    fn get_victim(
        &self,
        strategy: Option<&mut BufferRing>,
        acct: &mut IoAccount,
    ) -> Result<BufferId, PgError> {
        self.get_victim_preferring(strategy, acct, None)
    }

    /// [`get_victim`](Self::get_victim), taking buffer `prefer` instead when it is clean,
    /// unpinned and unpopular (usage ≤ 1 under a ring, 0 otherwise). Under a ring it then
    /// takes the place of the ring's current slot. Multi-block reads prefer the frame after
    /// the previous block's, so their frames are consecutive in memory.
    fn get_victim_preferring(
        &self,
        strategy: Option<&mut BufferRing>,
        acct: &mut IoAccount,
        prefer: Option<BufferId>,
    ) -> Result<BufferId, PgError> {
        let nbuffers = self.nbuffers();
        // Local buffers take no ring (as in PostgreSQL): a caller's ring holds shared ids.
        let strategy = strategy.filter(|_| !self.local);
        let kind = strategy.as_deref().map(BufferRing::kind);
        let ring = strategy.and_then(|ring| ring.prepare(nbuffers).then_some(ring));
        let max_usage = if ring.is_some() { 1 } else { 0 };
        let preferred = |pool: &Self| {
            prefer.filter(|&id| (id as usize) < nbuffers && pool.pin_if_clean(id, max_usage))
        };
        let (id, reused) = match ring {
            Some(ring) => match ring.advance() {
                Some(id) if prefer.is_none_or(|p| p == id) && self.desc(id).try_pin_unpinned(1) => {
                    ring.note_reuse();
                    (id, true)
                }
                _ => {
                    let id = match preferred(self) {
                        Some(id) => id,
                        None => self.clock_sweep()?,
                    };
                    ring.replace_current(id);
                    (id, false)
                }
            },
            None => match preferred(self) {
                Some(id) => (id, false),
                None => (self.clock_sweep()?, false),
            },
        };
        let state = self.desc(id).state.load(Ordering::Acquire);
        if state & VALID != 0 {
            acct.victim(self.buffers(kind), reused);
        }
        if state & DIRTY != 0 {
            match self.write_pinned(id, Some((acct, kind))) {
                Ok(_) => {}
                Err(err) => {
                    self.unpin(id);
                    return Err(err);
                }
            }
        }
        Ok(id)
    }

    /// Pin buffer `id` if it is unpinned, clean and has usage ≤ `max_usage`.
    fn pin_if_clean(&self, id: BufferId, max_usage: u64) -> bool {
        let desc = self.desc(id);
        if !desc.try_pin_unpinned(max_usage) {
            return false;
        }
        if desc.state.load(Ordering::Acquire) & DIRTY != 0 {
            self.unpin(id);
            return false;
        }
        true
    }

    /// Advance the clock hand until an unpinned buffer with usage count 0 can be pinned.
    fn clock_sweep(&self) -> Result<BufferId, PgError> {
        let nbuffers = self.nbuffers() as u64;
        let patience = 2 * nbuffers;
        let mut pinned_in_a_row = 0u64;
        loop {
            let id = (self.clock_hand.fetch_add(1, Ordering::Relaxed) % nbuffers) as BufferId;
            let desc = self.desc(id);
            let mut old = desc.state.load(Ordering::Acquire);
            loop {
                if refcount(old) != 0 {
                    pinned_in_a_row += 1;
                    if pinned_in_a_row >= patience {
                        return Err(PgError::new(
                            NO_UNPINNED_BUFFERS,
                            "no unpinned buffers available",
                        ));
                    }
                    break;
                }
                let (new, taken) = if usage_count(old) > 0 {
                    (old - USAGE_ONE, false)
                } else {
                    (old + REFCOUNT_ONE, true)
                };
                match desc.state.compare_exchange_weak(
                    old,
                    new,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) if taken => {
                        debug_assert!(old & IO_IN_PROGRESS == 0, "unpinned buffer doing I/O");
                        self.allocations.fetch_add(1, Ordering::Relaxed);
                        return Ok(id);
                    }
                    Ok(_) => {
                        pinned_in_a_row = 0;
                        break;
                    }
                    Err(actual) => old = actual,
                }
            }
        }
    }

    /// Buffers the clock sweep has handed out so far.
    pub fn buffers_alloc(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// The background writer's walk ahead of the clock hand (see `bgwriter`): from clock
    /// position `from` (or the hand, if the hand has passed it) until `want` reusable
    /// buffers (unpinned, usage count 0) were seen and at least `min_scan` buffers looked
    /// at, never more than one lap ahead of the hand; the dirty reusable ones are written,
    /// at most `max_writes`, counted in `acct`.
    pub fn clean_ahead(
        &self,
        from: u64,
        want: usize,
        min_scan: usize,
        max_writes: usize,
        acct: &mut IoAccount,
    ) -> Result<CleanedAhead, PgError> {
        let nbuffers = self.nbuffers() as u64;
        let hand = self.clock_hand.load(Ordering::Relaxed);
        let mut round = CleanedAhead {
            next: from.max(hand),
            written: 0,
            hit_limit: false,
        };
        let (mut seen, mut reusable) = (0, 0);
        while round.next < hand + nbuffers && (reusable < want || seen < min_scan) {
            let id = (round.next % nbuffers) as BufferId;
            let desc = self.desc(id);
            let state = desc.state.load(Ordering::Acquire);
            if refcount(state) == 0 && usage_count(state) == 0 {
                if state & (VALID | DIRTY) == (VALID | DIRTY) {
                    if round.written >= max_writes {
                        round.hit_limit = true;
                        break;
                    }
                    if desc.try_pin_unpinned(0) {
                        let wrote = self.write_pinned(id, Some((&mut *acct, None)));
                        self.unpin(id);
                        round.written += usize::from(wrote?);
                    }
                }
                reusable += 1;
            }
            round.next += 1;
            seen += 1;
        }
        Ok(round)
    }

    /// Lock the mapping partitions `a` and `b` in index order (once if equal).
    fn lock_partitions(
        &self,
        a: usize,
        b: usize,
    ) -> (
        MutexGuard<'_, MappingPartition>,
        Option<MutexGuard<'_, MappingPartition>>,
    ) {
        match a.cmp(&b) {
            std::cmp::Ordering::Equal => (self.mapping[a].lock(), None),
            std::cmp::Ordering::Less => {
                let first = self.mapping[a].lock();
                (first, Some(self.mapping[b].lock()))
            }
            std::cmp::Ordering::Greater => {
                let first = self.mapping[b].lock();
                let second = self.mapping[a].lock();
                (second, Some(first))
            }
        }
    }

    /// Move victim `id` (pinned only by us, clean) to `tag`; see "Installing a block".
    fn retag(&self, id: BufferId, tag: BufferTag, rel: &Arc<RelFile>) -> Retag {
        assert_eq!(
            self.local,
            rel.is_temporary(),
            "{} cached in the wrong pool",
            rel.path().display()
        );
        let desc = self.desc(id);
        // Only a thread holding the sole pin may change a tag, and we hold a pin, so the old
        // tag read here is still current once we hold the locks (asserted below).
        let old_tag = desc.header.lock().tag;
        let new_partition = tag.partition();
        let old_partition = old_tag.map_or(new_partition, BufferTag::partition);
        let (mut new_map, mut old_map) = self.lock_partitions(new_partition, old_partition);
        let mut header = desc.header.lock();
        assert_eq!(
            header.tag, old_tag,
            "tag of pinned buffer {id} changed under us"
        );
        if new_map.contains_key(&tag) {
            return Retag::AlreadyMapped;
        }
        let state = desc.state.load(Ordering::Acquire);
        if refcount(state) != 1 || state & (DIRTY | IO_IN_PROGRESS) != 0 {
            return Retag::VictimBusy;
        }
        // Nobody can change the state now: new pins need a partition lock we hold or a pin
        // count of zero, and the header is ours.
        let new_state = REFCOUNT_ONE | USAGE_ONE | TAG_VALID | IO_IN_PROGRESS;
        if desc
            .state
            .compare_exchange(state, new_state, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Retag::VictimBusy;
        }
        if let Some(old_tag) = old_tag {
            let map = old_map.as_mut().unwrap_or(&mut new_map);
            let removed = map.remove(&old_tag);
            assert_eq!(
                removed,
                Some(id),
                "buffer {id} was not mapped to its tag {old_tag:?}"
            );
        } else {
            assert!(state & TAG_VALID == 0);
        }
        new_map.insert(tag, id);
        header.tag = Some(tag);
        header.rel = Some(Arc::clone(rel));
        Retag::Done
    }

    /// Write buffer `id` back if it is valid and dirty; the caller holds a pin. Returns
    /// whether it wrote. Counts into `acct` (with the context of its ring) if given.
    fn write_pinned(
        &self,
        id: BufferId,
        acct: Option<(&mut IoAccount, Option<RingKind>)>,
    ) -> Result<bool, PgError> {
        let desc = self.desc(id);
        let (tag, rel) = {
            let mut header = desc.header.lock();
            loop {
                let state = desc.state.load(Ordering::Acquire);
                assert!(refcount(state) > 0, "writing unpinned buffer {id}");
                if state & IO_IN_PROGRESS != 0 {
                    // Another thread is writing it; once it finishes it may be clean.
                    desc.io_done.wait(&mut header);
                    continue;
                }
                if state & (VALID | DIRTY) != (VALID | DIRTY) {
                    return Ok(false);
                }
                desc.state.fetch_or(IO_IN_PROGRESS, Ordering::AcqRel);
                break;
            }
            let tag = header.tag.expect("valid buffer without a tag");
            let rel = Arc::clone(
                header
                    .rel
                    .as_ref()
                    .expect("valid buffer without a relation"),
            );
            (tag, rel)
        };
        let mut aligned = AlignedBlock([0u8; BLCKSZ]);
        let copy = &mut aligned.0;
        {
            let _shared = desc.content_lock.read_recursive();
            // Cleared before copying: nothing changes while we hold the shared lock, and a
            // change made after it is released sets DIRTY again, to be written by a later
            // flush (which first waits for our IO_IN_PROGRESS to clear, keeping writes in order).
            desc.state.fetch_and(!DIRTY, Ordering::AcqRel);
            // SAFETY: shared content lock and a pin.
            copy.copy_from_slice(unsafe { self.frame(id) });
        }
        // WAL before data: the changes up to the page's LSN must be durable first.
        let lsn = crate::storage::page::page_lsn(copy);
        if let Some(wal) = self.wal.get().filter(|_| lsn != 0) {
            let by = acct.as_ref().and_then(|(acct, _)| acct.stats_owner());
            if let Err(e) = wal.flush(lsn, by) {
                desc.finish_io(DIRTY, 0);
                return Err(PgError::io(
                    &format!("could not flush WAL to {}", crate::wal::format_lsn(lsn)),
                    &e,
                ));
            }
        }
        // A never-initialised page stays all zeros on disk, where it verifies as new.
        if !page_is_new(copy) {
            page_set_checksum(copy, tag.blkno);
        }
        let timer = acct.as_ref().and_then(|(acct, _)| acct.start_timer());
        let waiting = |event| {
            if let Some((acct, _)) = &acct {
                acct.set_wait_event(event);
            }
        };
        waiting(iolab_stats::WaitEvent::DataFileWrite);
        let submitted = Instant::now();
        let result = rel.write_block(tag.blkno, copy);
        let latency = submitted.elapsed();
        waiting(iolab_stats::WaitEvent::None);
        // On failure the buffer becomes dirty again in the same step that ends the I/O, so no
        // other flusher can see it clean in between; a later flush retries.
        desc.finish_io(if result.is_err() { DIRTY } else { 0 }, 0);
        match result {
            Ok(()) => {
                if let Some((acct, ring)) = acct {
                    acct.wrote(self.buffers(ring), timer, latency);
                    acct.wrote_block(&rel, tag.blkno);
                }
                Ok(true)
            }
            Err(e) => Err(PgError::io(
                &format!(
                    "could not write block {} in file \"{}\"",
                    tag.blkno,
                    rel.path().display()
                ),
                &e,
            )),
        }
    }

    /// Pin buffer `id` if its tag satisfies `pred` (pinning under the header lock, so the tag
    /// cannot change between the check and the pin).
    fn pin_if(&self, id: BufferId, pred: impl Fn(BufferTag) -> bool) -> bool {
        let desc = self.desc(id);
        let header = desc.header.lock();
        match header.tag {
            Some(tag) if pred(tag) => {
                desc.state.fetch_add(REFCOUNT_ONE, Ordering::AcqRel);
                true
            }
            _ => false,
        }
    }

    fn flush_matching(
        &self,
        pred: impl Fn(BufferTag) -> bool,
        mut acct: Option<&mut IoAccount>,
    ) -> Result<usize, PgError> {
        let mut written = 0;
        for id in 0..self.nbuffers() as BufferId {
            let state = self.desc(id).state.load(Ordering::Acquire);
            if state & (VALID | DIRTY) != (VALID | DIRTY) || !self.pin_if(id, &pred) {
                continue;
            }
            let result = self.write_pinned(id, acct.as_deref_mut().map(|a| (a, None)));
            self.unpin(id);
            if result? {
                written += 1;
            }
        }
        Ok(written)
    }

    /// Write every dirty buffer (checksums set on the way out); returns how many were
    /// written. The caller then fsyncs the relation files (CHECKPOINT, shutdown). Do not hold
    /// a page lock (`page_mut`) while calling this.
    pub fn flush_all(&self) -> Result<usize, PgError> {
        self.flush_matching(|_| true, None)
    }

    /// [`flush_all`](Self::flush_all), counting the writes in `acct` (the checkpoint's).
    pub fn flush_all_counted(&self, acct: &mut IoAccount) -> Result<usize, PgError> {
        self.flush_matching(|_| true, Some(acct))
    }

    /// Write every dirty buffer of one relation.
    pub fn flush_relation(&self, relfilenode: u32) -> Result<usize, PgError> {
        self.flush_matching(|tag| tag.relfilenode == relfilenode, None)
    }

    /// [`flush_relation`](Self::flush_relation), counting the writes in `acct` (CREATE
    /// INDEX writes its finished index out this way).
    pub fn flush_relation_counted(
        &self,
        relfilenode: u32,
        acct: &mut IoAccount,
    ) -> Result<usize, PgError> {
        self.flush_matching(|tag| tag.relfilenode == relfilenode, Some(acct))
    }

    /// Forget every buffer of a relation without writing it (DROP TABLE, TRUNCATE). Callers
    /// must hold no pins on the relation; a pin held by another thread's eviction in progress
    /// is waited out, a pin that persists for a second is reported as an internal error.
    /// Returns the number of buffers dropped.
    pub fn discard_relation(&self, relfilenode: u32) -> Result<usize, PgError> {
        const PATIENCE: Duration = Duration::from_secs(1);
        let mut discarded = 0;
        for id in 0..self.nbuffers() as BufferId {
            let desc = self.desc(id);
            let tag = match desc.header.lock().tag {
                Some(tag) if tag.relfilenode == relfilenode => tag,
                _ => continue,
            };
            let mut waited_since: Option<Instant> = None;
            loop {
                let mut partition = self.mapping[tag.partition()].lock();
                let mut header = desc.header.lock();
                if header.tag != Some(tag) {
                    break; // evicted meanwhile
                }
                let state = desc.state.load(Ordering::Acquire);
                if refcount(state) == 0 {
                    let cleared = state & !(TAG_VALID | VALID | DIRTY | USAGE_MASK);
                    if desc
                        .state
                        .compare_exchange(state, cleared, Ordering::AcqRel, Ordering::Acquire)
                        .is_ok()
                    {
                        let removed = partition.remove(&tag);
                        assert_eq!(removed, Some(id));
                        header.tag = None;
                        header.rel = None;
                        discarded += 1;
                        break;
                    }
                    continue; // a sweeper pinned it just now
                }
                drop(header);
                drop(partition);
                let since = *waited_since.get_or_insert_with(Instant::now);
                if since.elapsed() > PATIENCE {
                    return Err(PgError::internal(format!(
                        "cannot drop buffer {id} of relation {relfilenode} block {}: it is still pinned",
                        tag.blkno
                    )));
                }
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        Ok(discarded)
    }

    /// Counts of valid, dirty and pinned buffers (a racy snapshot).
    pub fn stats(&self) -> PoolStats {
        let mut stats = PoolStats {
            nbuffers: self.nbuffers(),
            ..PoolStats::default()
        };
        for desc in self.descs.iter() {
            let state = desc.state.load(Ordering::Relaxed);
            stats.valid += (state & VALID != 0) as usize;
            stats.dirty += (state & (VALID | DIRTY) == (VALID | DIRTY)) as usize;
            stats.pinned += (refcount(state) > 0) as usize;
        }
        stats
    }

    /// Every buffer's tag and state, like `pg_buffercache` (each row consistent on its own).
    pub fn snapshot(&self) -> Vec<BufferSnapshot> {
        self.descs
            .iter()
            .enumerate()
            .map(|(id, desc)| {
                let header = desc.header.lock();
                let state = desc.state.load(Ordering::Acquire);
                BufferSnapshot {
                    buffer_id: id as BufferId,
                    tag: header.tag,
                    valid: state & VALID != 0,
                    dirty: state & DIRTY != 0,
                    pins: refcount(state) as u32,
                    usage_count: usage_count(state) as u8,
                }
            })
            .collect()
    }

    /// Evict every unpinned buffer of one relation (`pg_buffercache_evict_relation`), so
    /// that its next scan reads from the file: a cold cache without a restart. See
    /// [`evict_buffer`](Self::evict_buffer) for what happens to each buffer; writes of dirty
    /// buffers are counted into `acct` (context `normal`). Do not hold a page lock.
    pub fn evict_relation(
        &self,
        relfilenode: u32,
        acct: &mut IoAccount,
    ) -> Result<EvictCounts, PgError> {
        self.evict_matching(|tag| tag.relfilenode == relfilenode, acct)
    }

    /// Evict every unpinned buffer of the pool (`pg_buffercache_evict_all`).
    pub fn evict_all(&self, acct: &mut IoAccount) -> Result<EvictCounts, PgError> {
        self.evict_matching(|_| true, acct)
    }

    /// Evict buffer `id` (0-based) if it holds a valid block and nobody pins it
    /// (`pg_buffercache_evict`), as PostgreSQL 18's `EvictUnpinnedBuffer` does: pin it,
    /// write it back if it is dirty (`flushed`), then unmap it unless someone pinned or
    /// dirtied it meanwhile (`evicted`, else `skipped`). A buffer without a valid block
    /// counts in none of the three.
    pub fn evict_buffer(&self, id: BufferId, acct: &mut IoAccount) -> Result<EvictCounts, PgError> {
        if id as usize >= self.nbuffers() {
            return Err(PgError::internal(format!(
                "bad buffer ID: {}",
                id as u64 + 1
            )));
        }
        let mut counts = EvictCounts::default();
        self.evict_one(id, |_| true, acct, &mut counts)?;
        Ok(counts)
    }

    fn evict_matching(
        &self,
        pred: impl Fn(BufferTag) -> bool,
        acct: &mut IoAccount,
    ) -> Result<EvictCounts, PgError> {
        let mut counts = EvictCounts::default();
        for id in 0..self.nbuffers() as BufferId {
            // Unlocked pre-check, as PostgreSQL's: skips empty buffers cheaply.
            if self.desc(id).state.load(Ordering::Acquire) & VALID == 0 {
                continue;
            }
            self.evict_one(id, &pred, acct, &mut counts)?;
        }
        Ok(counts)
    }

    /// One buffer of an eviction: pin it if it is valid, unpinned and its tag satisfies
    /// `pred`; write it back if dirty; unmap it if we still hold the only pin and it is
    /// clean. The tag is changed by the holder of the only pin, as in a retag.
    fn evict_one(
        &self,
        id: BufferId,
        pred: impl Fn(BufferTag) -> bool,
        acct: &mut IoAccount,
        counts: &mut EvictCounts,
    ) -> Result<(), PgError> {
        let desc = self.desc(id);
        let tag = {
            let header = desc.header.lock();
            match header.tag {
                Some(tag) if pred(tag) => {}
                _ => return Ok(()),
            }
            let state = desc.state.load(Ordering::Acquire);
            if state & VALID == 0 {
                return Ok(());
            }
            // Pinned (or pinned by a sweeper between the load and this CAS): leave it.
            if !desc.try_pin_unpinned(MAX_USAGE_COUNT) {
                counts.skipped += 1;
                return Ok(());
            }
            header.tag.expect("checked above")
        };
        let written = match self.write_pinned(id, Some((acct, None))) {
            Ok(written) => written,
            Err(e) => {
                self.unpin(id);
                return Err(e);
            }
        };
        counts.flushed += written as u32;
        let mut partition = self.mapping[tag.partition()].lock();
        let mut header = desc.header.lock();
        assert_eq!(header.tag, Some(tag), "tag of pinned buffer {id} changed");
        let state = desc.state.load(Ordering::Acquire);
        let evicted = refcount(state) == 1
            && state & (DIRTY | IO_IN_PROGRESS) == 0
            && desc
                .state
                .compare_exchange(state, REFCOUNT_ONE, Ordering::AcqRel, Ordering::Acquire)
                .is_ok();
        if evicted {
            let removed = partition.remove(&tag);
            assert_eq!(removed, Some(id), "buffer {id} was not mapped to {tag:?}");
            header.tag = None;
            header.rel = None;
            counts.evicted += 1;
        } else {
            counts.skipped += 1;
        }
        drop(header);
        drop(partition);
        self.unpin(id);
        Ok(())
    }
}

/// What an eviction ([`BufferPool::evict_relation`], [`BufferPool::evict_all`],
/// [`BufferPool::evict_buffer`]) did: PostgreSQL 18's `buffers_evicted`,
/// `buffers_flushed` (dirty buffers written first, evicted or not) and `buffers_skipped`
/// (valid buffers left in place because they were pinned, or pinned or dirtied again
/// while being written).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EvictCounts {
    pub evicted: u32,
    pub flushed: u32,
    pub skipped: u32,
}

/// A pinned buffer: while it lives, the frame keeps holding its block. Dropping it unpins.
/// Access the contents through [`page`](Self::page) / [`page_mut`](Self::page_mut).
pub struct PinnedBuffer {
    pool: Arc<BufferPool>,
    id: BufferId,
    tag: BufferTag,
}

impl std::fmt::Debug for PinnedBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedBuffer")
            .field("id", &self.id)
            .field("tag", &self.tag)
            .finish()
    }
}

impl PinnedBuffer {
    pub fn blkno(&self) -> u32 {
        self.tag.blkno
    }

    pub fn relfilenode(&self) -> u32 {
        self.tag.relfilenode
    }

    pub fn tag(&self) -> BufferTag {
        self.tag
    }

    pub fn buffer_id(&self) -> BufferId {
        self.id
    }

    fn desc(&self) -> &BufferDesc {
        self.pool.desc(self.id)
    }

    /// Shared access to the page (content lock in shared mode; re-entrant for readers).
    pub fn page(&self) -> PageReadGuard<'_> {
        let guard = self.desc().content_lock.read_recursive();
        // SAFETY: shared content lock held for the guard's lifetime, and our pin.
        let bytes = unsafe { self.pool.frame(self.id) };
        PageReadGuard {
            _lock: guard,
            bytes,
        }
    }

    /// Exclusive access to the page. Call [`mark_dirty`](Self::mark_dirty) while holding it
    /// (or right after the change), never before taking it.
    pub fn page_mut(&self) -> PageWriteGuard<'_> {
        let guard = self.desc().content_lock.write();
        PageWriteGuard {
            _lock: guard,
            pool: &self.pool,
            id: self.id,
        }
    }

    /// Mark the page changed; counts `shared_dirtied` (`local_dirtied` in local buffers) on
    /// the clean → dirty transition.
    pub fn mark_dirty(&self, usage: &mut BufferUsage) {
        let prev = self.desc().state.fetch_or(DIRTY, Ordering::AcqRel);
        assert!(
            prev & VALID != 0 && refcount(prev) > 0,
            "mark_dirty on an invalid buffer"
        );
        if prev & DIRTY == 0 {
            *usage.blocks(self.pool.local).dirtied += 1;
        }
    }

    pub fn is_dirty(&self) -> bool {
        self.desc().state.load(Ordering::Acquire) & DIRTY != 0
    }

    /// Give up the handle without unpinning (the caller takes over the pin).
    fn into_id(self) -> BufferId {
        let me = std::mem::ManuallyDrop::new(self);
        // SAFETY: `me` is never used or dropped again; this drops its Arc exactly once.
        drop(unsafe { std::ptr::read(&me.pool) });
        me.id
    }
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        if cfg!(debug_assertions) {
            // A pinned buffer keeps its tag; it may only lose it when a failed read by
            // another thread unmaps it (BufferPool::wait_for_read).
            let header = self.desc().header.lock();
            assert!(
                header.tag == Some(self.tag) || header.tag.is_none(),
                "tag of pinned buffer {} changed",
                self.id
            );
        }
        self.pool.unpin(self.id);
    }
}

/// A block's worth of memory aligned for `O_DIRECT` (the write-back copy).
#[repr(C, align(4096))]
struct AlignedBlock([u8; BLCKSZ]);

/// What [`BufferPool::pin_or_map`] found for one block.
enum FoundOrMapped {
    /// Valid in the pool; pinned, counted as a hit.
    Hit(PinnedBuffer),
    /// Being read by another thread (only without `wait_for_others`); pinned.
    BeingRead(PinnedBuffer),
    /// Absent: this victim buffer is now mapped to the block, pinned, `IO_IN_PROGRESS`.
    Mapped(BufferId),
}

/// What [`BufferPool::start_read`] found.
#[derive(Debug)]
pub enum StartedRead {
    /// The first block was valid in the pool: one pinned buffer, no I/O.
    Hit(PinnedBuffer),
    /// The first block (and maybe more) must be read.
    Miss(PendingRead),
    /// Another read of the first block is in progress; the buffer is pinned. Wait for it
    /// with [`BufferPool::wait_for_read`].
    BeingRead(PinnedBuffer),
}

/// Consecutive blocks `first_blkno ..` of one relation whose buffers this thread pinned and
/// marked `IO_IN_PROGRESS`: their frames wait to be filled by one read. Execute it (here with
/// [`execute`](Self::execute), or through an I/O method), then [`finish`](Self::finish) it
/// with the result, which verifies and publishes each block; then take the buffers with
/// [`into_buffers`](Self::into_buffers).
///
/// Dropping an unfinished read abandons it: its blocks are unmapped and waiters retry. The
/// owner must make sure no I/O into the frames is still running at that point (the AIO
/// layer waits for every in-flight I/O before it lets a read go).
pub struct PendingRead {
    rel: Arc<RelFile>,
    first_blkno: u32,
    /// `buffers[i]` holds block `first_blkno + i`; `None` once released after a failure.
    buffers: Vec<Option<PinnedBuffer>>,
    finished: bool,
}

impl std::fmt::Debug for PendingRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PendingRead({})", self.target_desc())
    }
}

impl PendingRead {
    pub fn rel(&self) -> &Arc<RelFile> {
        &self.rel
    }

    pub fn first_blkno(&self) -> u32 {
        self.first_blkno
    }

    pub fn nblocks(&self) -> u32 {
        self.buffers.len() as u32
    }

    /// Bytes the read covers.
    pub fn len_bytes(&self) -> usize {
        self.buffers.len() * BLCKSZ
    }

    /// `block N in file "base/…"` or `blocks N..M in file "base/…"` (pg_aios.target_desc).
    pub fn target_desc(&self) -> String {
        let last = self.first_blkno + self.nblocks() - 1;
        let path = self.rel.path().display();
        if last == self.first_blkno {
            format!("block {} in file \"{path}\"", self.first_blkno)
        } else {
            format!("blocks {}..{last} in file \"{path}\"", self.first_blkno)
        }
    }

    /// The frames to read into, in block order: one `iovec` per run of frames that are
    /// consecutive in memory.
    pub fn iovecs(&self) -> Vec<libc::iovec> {
        assert!(!self.finished, "iovecs of a finished read");
        let mut iovecs: Vec<libc::iovec> = Vec::with_capacity(self.buffers.len());
        for b in &self.buffers {
            let b = b.as_ref().expect("unfinished read holds every buffer");
            let frame = b.pool.frame_ptr(b.id) as *mut u8;
            match iovecs.last_mut() {
                // SAFETY: pointer arithmetic only, to compare addresses.
                Some(last) if unsafe { (last.iov_base as *mut u8).add(last.iov_len) } == frame => {
                    last.iov_len += BLCKSZ;
                }
                _ => iovecs.push(libc::iovec {
                    iov_base: frame as *mut libc::c_void,
                    iov_len: BLCKSZ,
                }),
            }
        }
        iovecs
    }

    /// The file descriptor and byte offset the read starts at.
    pub fn fd_and_offset(&self) -> std::io::Result<(std::os::unix::io::RawFd, u64)> {
        self.rel.raw_fd_and_offset(self.first_blkno)
    }

    /// Perform the read on this thread with `preadv`, continuing after short reads, until all
    /// bytes are read, end of file, or an error. Returns the bytes read.
    pub fn execute(&self) -> std::io::Result<usize> {
        let (fd, offset) = self.fd_and_offset()?;
        let mut iovecs = self.iovecs();
        preadv_fully(fd, offset, &mut iovecs)
    }

    /// Complete the read with the result of its I/O (bytes read, or the error): verify each
    /// block read in full and make it valid; unmap the others. Returns the first error:
    /// the I/O error, a short read, or a block that failed verification.
    pub fn finish(&mut self, result: std::io::Result<usize>) -> Result<(), PgError> {
        assert!(!self.finished, "a read is finished once");
        self.finished = true;
        let total = self.len_bytes();
        let mut first_error = match &result {
            Ok(bytes) if *bytes >= total => None,
            Ok(bytes) => Some(PgError::new(
                sqlstate::DATA_CORRUPTED,
                format!(
                    "could not read blocks {}..{} in file \"{}\": read only {bytes} of {total} bytes",
                    self.first_blkno,
                    self.first_blkno + self.nblocks() - 1,
                    self.rel.path().display()
                ),
            )),
            Err(e) => Some(PgError::io(
                &format!("could not read {}", self.target_desc()),
                e,
            )),
        };
        let bytes = *result.as_ref().unwrap_or(&0);
        for (i, slot) in self.buffers.iter_mut().enumerate() {
            let buffer = slot.as_ref().expect("unfinished read holds every buffer");
            let read_ok = bytes >= (i + 1) * BLCKSZ;
            let verified = buffer
                .pool
                .finish_block(buffer.id, buffer.tag, &self.rel, read_ok);
            if !read_ok || verified.is_err() {
                let buffer = slot.take().expect("checked above");
                let pool = Arc::clone(&buffer.pool);
                pool.unpin(buffer.into_id());
            }
            if let Err(e) = verified {
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            None => Ok(()),
            Some(e) => Err(e),
        }
    }

    /// The pinned, valid buffers of a read that finished without error.
    pub fn into_buffers(mut self) -> Vec<PinnedBuffer> {
        assert!(self.finished, "into_buffers before finish");
        std::mem::take(&mut self.buffers)
            .into_iter()
            .map(|b| b.expect("a successful read keeps every buffer"))
            .collect()
    }
}

impl Drop for PendingRead {
    fn drop(&mut self) {
        if !self.finished && !self.buffers.is_empty() {
            let _ = self.finish(Err(std::io::Error::other("read abandoned")));
        }
    }
}

/// `preadv` into `iovecs` from `offset` until they are full, end of file or an error
/// (EINTR is retried); returns the bytes read. Adjusts `iovecs` as it goes.
pub fn preadv_fully(
    fd: std::os::unix::io::RawFd,
    offset: u64,
    iovecs: &mut [libc::iovec],
) -> std::io::Result<usize> {
    let total: usize = iovecs.iter().map(|v| v.iov_len).sum();
    let mut done = 0usize;
    let mut first = 0usize;
    while done < total {
        let batch = (iovecs.len() - first).min(libc::UIO_MAXIOV as usize);
        // SAFETY: the iovecs describe frames this thread owns for the read (IO_IN_PROGRESS).
        let n = unsafe {
            libc::preadv(
                fd,
                iovecs[first..].as_ptr(),
                batch as i32,
                (offset + done as u64) as libc::off_t,
            )
        };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if n == 0 {
            break;
        }
        let mut n = n as usize;
        done += n;
        while n > 0 {
            let v = &mut iovecs[first];
            if n >= v.iov_len {
                n -= v.iov_len;
                first += 1;
            } else {
                // SAFETY: advancing within the same frame.
                v.iov_base = unsafe { (v.iov_base as *mut u8).add(n) } as *mut libc::c_void;
                v.iov_len -= n;
                n = 0;
            }
        }
    }
    Ok(done)
}

/// Shared view of a pinned page; holds the content lock in shared mode.
pub struct PageReadGuard<'a> {
    _lock: RwLockReadGuard<'a, ()>,
    bytes: &'a [u8],
}

impl Deref for PageReadGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.bytes
    }
}

/// Exclusive view of a pinned page; holds the content lock in exclusive mode.
pub struct PageWriteGuard<'a> {
    _lock: RwLockWriteGuard<'a, ()>,
    pool: &'a BufferPool,
    id: BufferId,
}

impl Deref for PageWriteGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: exclusive content lock held by this guard, and the owner's pin.
        unsafe { self.pool.frame(self.id) }
    }
}

impl DerefMut for PageWriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: exclusive content lock held by this guard, and the owner's pin; the
        // returned borrow is tied to `&mut self`, so it is unique.
        unsafe { self.pool.frame_mut(self.id) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::ring::BufferRing;
    use crate::storage::page::{page_add_item, page_init, page_item, page_item_mut};
    use crate::storage::relfile::tests::TempDir;
    use std::os::unix::fs::FileExt;

    /// Streams borrow pins beyond their share up to an eighth of the pool each, from a budget
    /// of an eighth of the pool; a loan dropped goes back to the budget; local buffers lend
    /// none.
    #[test]
    fn stream_pin_loans_are_bounded_and_returned() {
        let pool = BufferPool::new(1024);
        assert_eq!(pool.pin_limit(), 16);
        // One stream: at most 1024 / 8 = 128 pins in all, so 112 beyond its share.
        assert_eq!(pool.lend_stream_pins(0).pins(), 0);
        assert_eq!(pool.lend_stream_pins(10).pins(), 10);
        assert_eq!(pool.stream_pins_lent(), 0, "a dropped loan is returned");
        let mut loans = vec![pool.lend_stream_pins(1000)];
        assert_eq!(loans[0].pins(), 112);
        // The budget, 1024 / 8 = 128, has 16 left, then none.
        loans.push(pool.lend_stream_pins(1000));
        assert_eq!(loans[1].pins(), 16);
        assert_eq!(pool.lend_stream_pins(1000).pins(), 0);
        assert_eq!(pool.stream_pins_lent(), 128);
        // A stream that ends gives its loan back for the next.
        loans.remove(0);
        assert_eq!(pool.stream_pins_lent(), 16);
        loans.push(pool.lend_stream_pins(1000));
        assert_eq!(loans[1].pins(), 112);
        assert_eq!(pool.stream_pins_lent(), 128);
        drop(loans);
        assert_eq!(pool.stream_pins_lent(), 0);

        let local = BufferPool::new_local(1024).unwrap();
        assert_eq!(local.lend_stream_pins(1000).pins(), 0);
    }

    /// The item every test page carries: relfilenode, block number, a counter, padding.
    fn item_for(relfilenode: u32, blkno: u32, counter: u64) -> Vec<u8> {
        let mut item = Vec::with_capacity(64);
        item.extend_from_slice(&relfilenode.to_le_bytes());
        item.extend_from_slice(&blkno.to_le_bytes());
        item.extend_from_slice(&counter.to_le_bytes());
        item.extend((0..48u32).map(|i| (i ^ blkno) as u8));
        item
    }

    fn counter_of(page: &[u8]) -> u64 {
        u64::from_le_bytes(page_item(page, 1).unwrap()[8..16].try_into().unwrap())
    }

    fn check_page(page: &[u8], relfilenode: u32, blkno: u32) {
        let item = page_item(page, 1).expect("test page has an item");
        assert_eq!(
            &item[..8],
            &item_for(relfilenode, blkno, 0)[..8],
            "wrong block in buffer"
        );
        assert_eq!(&item[16..], &item_for(relfilenode, blkno, 0)[16..]);
    }

    /// A relation of `nblocks` checksummed test pages written straight to disk.
    fn make_rel(dir: &TempDir, relfilenode: u32, nblocks: u32) -> Arc<RelFile> {
        let rel = RelFile::open(&dir.0, relfilenode).unwrap();
        let mut page = vec![0u8; BLCKSZ];
        for blkno in 0..nblocks {
            page_init(&mut page, 0);
            page_add_item(&mut page, &item_for(relfilenode, blkno, 0)).unwrap();
            page_set_checksum(&mut page, blkno);
            rel.write_block(blkno, &page).unwrap();
        }
        Arc::new(rel)
    }

    fn read(
        pool: &Arc<BufferPool>,
        rel: &Arc<RelFile>,
        blkno: u32,
        usage: &mut IoAccount,
    ) -> PinnedBuffer {
        let buffer = pool.read_buffer(rel, blkno, None, usage).unwrap();
        check_page(&buffer.page(), rel.relfilenode(), blkno);
        buffer
    }

    fn bump_counter(buffer: &PinnedBuffer, usage: &mut IoAccount) {
        let mut page = buffer.page_mut();
        let item = page_item_mut(&mut page, 1).unwrap();
        let counter = u64::from_le_bytes(item[8..16].try_into().unwrap());
        item[8..16].copy_from_slice(&(counter + 1).to_le_bytes());
        buffer.mark_dirty(usage);
    }

    fn buffers_of(pool: &BufferPool, relfilenode: u32) -> usize {
        pool.snapshot()
            .iter()
            .filter(|b| b.valid && b.tag.is_some_and(|t| t.relfilenode == relfilenode))
            .count()
    }

    #[test]
    fn overwrite_reads_nothing_and_finds_what_the_pool_has() {
        let dir = TempDir::new("pool-overwrite");
        let pool = BufferPool::new(8);
        let rel = make_rel(&dir, 16384, 4);
        // Block 1 on disk is torn (garbage): an overwrite must not read or verify it.
        rel.write_block(1, &[0xA5; BLCKSZ]).unwrap();
        let mut usage = IoAccount::default();
        let buffer = pool.read_buffer_for_overwrite(&rel, 1, &mut usage).unwrap();
        assert!(buffer.page().iter().all(|&b| b == 0), "a zeroed page");
        assert_eq!((usage.shared_read, usage.shared_hit), (0, 0));
        drop(buffer);
        // Block 2 already in the pool (changed there): the overwrite gets that buffer.
        let cached = read(&pool, &rel, 2, &mut usage);
        bump_counter(&cached, &mut usage);
        drop(cached);
        assert_eq!((usage.shared_read, usage.shared_hit), (1, 0));
        let buffer = pool.read_buffer_for_overwrite(&rel, 2, &mut usage).unwrap();
        assert_eq!(counter_of(&buffer.page()), 1);
        assert_eq!((usage.shared_read, usage.shared_hit), (1, 1));
        // The zeroed block 1 stays mapped and valid: a later read is a hit.
        drop(buffer);
        assert!(pool.read_buffer(&rel, 1, None, &mut usage).is_ok());
        assert_eq!((usage.shared_read, usage.shared_hit), (1, 2));
    }

    #[test]
    fn new_blocks_round_trip_through_eviction() {
        let dir = TempDir::new("pool-evict");
        let pool = BufferPool::new(16);
        let rel = Arc::new(RelFile::open(&dir.0, 16384).unwrap());
        let mut usage = IoAccount::default();
        for expected in 0..100 {
            let (blkno, buffer) = pool.new_block(&rel, None, &mut usage).unwrap();
            assert_eq!(blkno, expected);
            assert!(buffer.is_dirty());
            assert!(buffer.page().iter().all(|&b| b == 0));
            let mut page = buffer.page_mut();
            page_init(&mut page, 0);
            page_add_item(&mut page, &item_for(16384, blkno, 0)).unwrap();
            buffer.mark_dirty(&mut usage);
        }
        assert_eq!(rel.nblocks(), 100);
        assert_eq!(usage.shared_dirtied, 100);
        // 100 extensions, plus the 84 dirty pages evicted to make room.
        assert_eq!(usage.shared_written, 100 + 84);
        assert_eq!(pool.stats().dirty, 16);

        // Change every third block, then read everything back through more evictions.
        for blkno in (0..100).step_by(3) {
            bump_counter(&read(&pool, &rel, blkno, &mut usage), &mut usage);
        }
        for _ in 0..2 {
            for blkno in 0..100 {
                let buffer = read(&pool, &rel, blkno, &mut usage);
                assert_eq!(
                    counter_of(&buffer.page()),
                    (blkno % 3 == 0) as u64,
                    "block {blkno}"
                );
            }
        }
        let flushed = pool.flush_all().unwrap();
        assert_eq!(pool.stats().dirty, 0);
        assert!(flushed <= 16);
        assert_eq!(pool.flush_all().unwrap(), 0);

        // On disk every page carries a valid checksum and the right contents.
        let mut page = vec![0u8; BLCKSZ];
        for blkno in 0..100 {
            rel.read_block(blkno, &mut page).unwrap();
            page_verify(&page, blkno).unwrap();
            check_page(&page, 16384, blkno);
            assert_eq!(counter_of(&page), (blkno % 3 == 0) as u64);
        }
        assert_eq!(pool.stats().pinned, 0);
    }

    #[test]
    fn counters_are_exact_for_a_known_sequence() {
        let dir = TempDir::new("pool-counters");
        let rel = make_rel(&dir, 500, 100);
        let pool = BufferPool::new(16);
        let mut usage = IoAccount::default();

        for blkno in 0..16 {
            read(&pool, &rel, blkno, &mut usage);
        }
        assert_eq!((usage.shared_read, usage.shared_hit), (16, 0));
        for blkno in 0..16 {
            read(&pool, &rel, blkno, &mut usage);
        }
        assert_eq!((usage.shared_read, usage.shared_hit), (16, 16));
        for blkno in 0..4 {
            let buffer = read(&pool, &rel, blkno, &mut usage);
            bump_counter(&buffer, &mut usage);
            bump_counter(&buffer, &mut usage); // already dirty: not counted again
        }
        assert_eq!(
            (usage.shared_hit, usage.shared_dirtied, usage.shared_written),
            (20, 4, 0)
        );
        assert_eq!(usage.shared_read_ns, 0, "no timing without track_io_timing");

        // Sixteen new blocks push out all sixteen old ones; the four dirty ones are written.
        let mut timed = IoAccount::new(true, None);
        for blkno in 16..32 {
            pool.read_buffer(&rel, blkno, None, &mut timed).unwrap();
        }
        assert_eq!(
            (timed.shared_read, timed.shared_hit, timed.shared_written),
            (16, 0, 4)
        );
        assert!(timed.shared_read_ns > 0 && timed.shared_write_ns > 0);
        assert_eq!(buffers_of(&pool, 500), 16);
        assert_eq!(pool.stats().dirty, 0);
        for blkno in 16..32 {
            read(&pool, &rel, blkno, &mut timed);
        }
        assert_eq!(timed.shared_hit, 16);

        // The written-back changes come back from disk.
        let mut again = IoAccount::default();
        for blkno in 0..4 {
            assert_eq!(counter_of(&read(&pool, &rel, blkno, &mut again).page()), 2);
        }
        assert_eq!((again.shared_read, again.shared_hit), (4, 0));
    }

    #[test]
    fn a_temporary_relation_is_cached_only_in_its_local_buffers() {
        let dir = TempDir::new("pool-local");
        let temp = make_rel(&dir, 600, 40);
        let shared = BufferPool::new(64);
        let local = BufferPool::new_local(16).unwrap();
        temp.set_local_buffers(&local);
        let mut usage = IoAccount::default();

        // Asked of the shared pool, every block goes to the local buffers.
        for blkno in 0..16 {
            read(&shared, &temp, blkno, &mut usage);
        }
        for blkno in 0..4 {
            let buffer = read(&shared, &temp, blkno, &mut usage);
            bump_counter(&buffer, &mut usage);
        }
        assert_eq!(buffers_of(&shared, 600), 0);
        assert_eq!(buffers_of(&local, 600), 16);
        assert_eq!(
            (usage.local_read, usage.local_hit, usage.local_dirtied),
            (16, 4, 4)
        );
        assert_eq!(
            (usage.shared_read, usage.shared_hit, usage.shared_dirtied),
            (0, 0, 0)
        );

        // Sixteen more blocks evict the first ones; the dirty ones are written as local.
        for blkno in 16..32 {
            read(&shared, &temp, blkno, &mut usage);
        }
        assert_eq!((usage.local_read, usage.local_written), (32, 4));
        assert_eq!(local.stats().pinned, 0);
        for blkno in 0..4 {
            assert_eq!(
                counter_of(&read(&shared, &temp, blkno, &mut usage).page()),
                1
            );
        }

        // The session gone, its relation cannot be read.
        drop(local);
        let err = shared.read_buffer(&temp, 0, None, &mut usage).unwrap_err();
        assert_eq!(err.code, "0A000");
    }

    #[test]
    fn ring_scan_leaves_most_of_the_pool_untouched() {
        let dir = TempDir::new("pool-ring");
        let hot = make_rel(&dir, 600, 20);
        let big = make_rel(&dir, 601, 200);
        let pool = BufferPool::new(64);
        assert!(pool.wants_ring(big.nblocks()));
        assert!(!pool.wants_ring(16));
        assert!(pool.wants_ring(17));
        let mut usage = IoAccount::default();
        for _ in 0..2 {
            for blkno in 0..20 {
                read(&pool, &hot, blkno, &mut usage);
            }
        }
        let mut ring = BufferRing::bulk_read();
        let mut scan = IoAccount::default();
        for blkno in 0..200 {
            let buffer = pool
                .read_buffer(&big, blkno, Some(&mut ring), &mut scan)
                .unwrap();
            check_page(&buffer.page(), 601, blkno);
        }
        assert_eq!(scan.shared_read, 200);
        assert_eq!(ring.len(), 8, "bulk-read ring capped at 1/8 of 64 buffers");
        assert_eq!(ring.evictions(), 8);
        assert_eq!(ring.reuses(), 192);
        assert_eq!(buffers_of(&pool, 600), 20);
        assert!(buffers_of(&pool, 601) <= 8);

        let mut after = IoAccount::default();
        for blkno in 0..20 {
            read(&pool, &hot, blkno, &mut after);
        }
        assert_eq!((after.shared_hit, after.shared_read), (20, 0));

        // Without a ring the same scan floods the pool.
        for blkno in 0..200 {
            read(&pool, &big, blkno, &mut usage);
        }
        assert!(buffers_of(&pool, 600) < 20);
    }

    #[test]
    fn ring_writes_back_dirty_buffers_it_reuses() {
        let dir = TempDir::new("pool-ring-dirty");
        let rel = make_rel(&dir, 610, 40);
        let pool = BufferPool::new(16);
        let mut ring = BufferRing::bulk_write(); // capped at 2 buffers
        let mut usage = IoAccount::default();
        for blkno in 0..40 {
            let buffer = pool
                .read_buffer(&rel, blkno, Some(&mut ring), &mut usage)
                .unwrap();
            bump_counter(&buffer, &mut usage);
        }
        assert_eq!(ring.len(), 2);
        assert_eq!(usage.shared_written, 38);
        assert_eq!(pool.flush_relation(610).unwrap(), 2);
        let mut page = vec![0u8; BLCKSZ];
        for blkno in 0..40 {
            rel.read_block(blkno, &mut page).unwrap();
            page_verify(&page, blkno).unwrap();
            assert_eq!(counter_of(&page), 1);
        }
    }

    #[test]
    fn corrupt_block_is_reported_and_not_cached() {
        let dir = TempDir::new("pool-corrupt");
        let rel = make_rel(&dir, 700, 100);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(rel.segment_path(0))
            .unwrap();
        let at = 37 * BLCKSZ as u64 + 5000;
        let mut byte = [0u8; 1];
        file.read_exact_at(&mut byte, at).unwrap();
        file.write_all_at(&[byte[0] ^ 0x10], at).unwrap();

        let pool = BufferPool::new(16);
        let mut usage = IoAccount::default();
        for attempt in 1..=2 {
            let err = pool.read_buffer(&rel, 37, None, &mut usage).unwrap_err();
            assert_eq!(err.code, sqlstate::DATA_CORRUPTED);
            assert_eq!(err.message, "invalid page in block 37 of relation base/700");
            assert_eq!(usage.shared_read, attempt, "a failed block is read again");
            assert!(pool
                .snapshot()
                .iter()
                .all(|b| b.tag.is_none() && b.pins == 0));
        }
        read(&pool, &rel, 38, &mut usage);
        assert_eq!(
            pool.stats(),
            PoolStats {
                nbuffers: 16,
                valid: 1,
                dirty: 0,
                pinned: 0
            }
        );

        // Beyond the end of the file (a truncated file): PostgreSQL 18's short-read error,
        // and again nothing stays mapped.
        let err = pool.read_buffer(&rel, 100, None, &mut usage).unwrap_err();
        assert_eq!(err.code, sqlstate::DATA_CORRUPTED);
        assert_eq!(
            err.message,
            "could not read blocks 100..100 in file \"base/700\": read only 0 of 8192 bytes"
        );
        assert_eq!(pool.stats().valid, 1);
        assert_eq!(buffers_of(&pool, 700), 1);

        // A zero (never written) block is fine.
        rel.extend_to(101).unwrap();
        let buffer = pool.read_buffer(&rel, 100, None, &mut usage).unwrap();
        assert!(page_is_new(&buffer.page()));
    }

    #[test]
    fn concurrent_readers_read_each_block_once() {
        let dir = TempDir::new("pool-conc");
        let rel = make_rel(&dir, 800, 64);
        let pool = BufferPool::new(128);
        let barrier = std::sync::Barrier::new(4);
        let usages: Vec<IoAccount> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4u32)
                .map(|t| {
                    let (pool, rel, barrier) = (&pool, &rel, &barrier);
                    s.spawn(move || {
                        let mut usage = IoAccount::default();
                        barrier.wait();
                        for pass in 0..3u32 {
                            for i in 0..64u32 {
                                // Threads 0 and 1 go forward, 2 and 3 backward, in lockstep-ish.
                                let blkno = if t < 2 { i } else { 63 - i };
                                let buffer = read(pool, rel, blkno, &mut usage);
                                if pass == 0 && t % 2 == 0 {
                                    std::thread::yield_now();
                                }
                                drop(buffer);
                            }
                        }
                        usage
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let reads: u64 = usages.iter().map(|u| u.shared_read).sum();
        let hits: u64 = usages.iter().map(|u| u.shared_hit).sum();
        assert_eq!(reads, 64, "every block read from disk exactly once");
        assert_eq!(hits, 4 * 3 * 64 - 64);
        assert_eq!(pool.stats().pinned, 0);
        assert_eq!(buffers_of(&pool, 800), 64);
    }

    /// Four threads read and update random blocks of a relation six times larger than the
    /// pool; every update must survive eviction, and every buffer must hold its own block.
    #[test]
    fn concurrent_updates_survive_eviction() {
        let dir = TempDir::new("pool-stress");
        let rel = make_rel(&dir, 900, 100);
        let pool = BufferPool::new(16);
        let per_thread = 400u64;
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (pool, rel) = (&pool, &rel);
                s.spawn(move || {
                    let mut rng = 0x1234_5678_9abc_def0u64 ^ (t * 0x9e37_79b9);
                    let mut usage = IoAccount::default();
                    for _ in 0..per_thread {
                        rng ^= rng << 13;
                        rng ^= rng >> 7;
                        rng ^= rng << 17;
                        let blkno = (rng % 100) as u32;
                        let buffer = read(pool, rel, blkno, &mut usage);
                        bump_counter(&buffer, &mut usage);
                        // Some extra reads in between to churn the pool.
                        let other = ((rng >> 20) % 100) as u32;
                        read(pool, rel, other, &mut usage);
                    }
                });
            }
        });
        pool.flush_all().unwrap();
        let mut total = 0;
        let mut page = vec![0u8; BLCKSZ];
        for blkno in 0..100 {
            rel.read_block(blkno, &mut page).unwrap();
            page_verify(&page, blkno).unwrap();
            check_page(&page, 900, blkno);
            total += counter_of(&page);
        }
        assert_eq!(total, 4 * per_thread, "lost updates");
        assert_eq!(pool.stats().pinned, 0);
    }

    #[test]
    fn concurrent_extension_hands_out_distinct_blocks() {
        let dir = TempDir::new("pool-extend");
        let rel = Arc::new(RelFile::open(&dir.0, 950).unwrap());
        let pool = BufferPool::new(32);
        let mut blocks: Vec<u32> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let (pool, rel) = (&pool, &rel);
                    s.spawn(move || {
                        let mut usage = IoAccount::default();
                        (0..25)
                            .map(|_| {
                                let (blkno, buffer) =
                                    pool.new_block(rel, None, &mut usage).unwrap();
                                let mut page = buffer.page_mut();
                                page_init(&mut page, 0);
                                page_add_item(&mut page, &item_for(950, blkno, 0)).unwrap();
                                blkno
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        blocks.sort_unstable();
        assert_eq!(blocks, (0..100).collect::<Vec<_>>());
        assert_eq!(rel.nblocks(), 100);
        let mut usage = IoAccount::default();
        for blkno in 0..100 {
            read(&pool, &rel, blkno, &mut usage);
        }
    }

    #[test]
    fn all_pinned_is_an_error_not_a_panic() {
        let dir = TempDir::new("pool-pinned");
        let rel = make_rel(&dir, 1000, 10);
        let pool = BufferPool::new(4);
        let mut usage = IoAccount::default();
        let mut held: Vec<PinnedBuffer> =
            (0..4).map(|b| read(&pool, &rel, b, &mut usage)).collect();
        assert_eq!(pool.stats().pinned, 4);
        let err = pool.read_buffer(&rel, 4, None, &mut usage).unwrap_err();
        assert_eq!(err.code, "53400");
        assert_eq!(err.message, "no unpinned buffers available");
        let err = pool.new_block(&rel, None, &mut usage).unwrap_err();
        assert_eq!(err.code, "53400");
        // Pinned blocks are still hits.
        read(&pool, &rel, 2, &mut usage);
        held.pop();
        read(&pool, &rel, 4, &mut usage);
        // Pins of the same block stack.
        let again = read(&pool, &rel, 0, &mut usage);
        assert_eq!(again.buffer_id(), held[0].buffer_id());
        assert_eq!(pool.snapshot()[held[0].buffer_id() as usize].pins, 2);
    }

    #[test]
    fn discard_drops_buffers_without_writing() {
        let dir = TempDir::new("pool-discard");
        let rel = make_rel(&dir, 1100, 10);
        let other = make_rel(&dir, 1101, 2);
        let pool = BufferPool::new(16);
        let mut usage = IoAccount::default();
        for blkno in 0..10 {
            bump_counter(&read(&pool, &rel, blkno, &mut usage), &mut usage);
        }
        bump_counter(&read(&pool, &other, 1, &mut usage), &mut usage);
        assert_eq!(pool.stats().dirty, 11);
        assert_eq!(pool.discard_relation(1100).unwrap(), 10);
        assert_eq!(
            pool.stats(),
            PoolStats {
                nbuffers: 16,
                valid: 1,
                dirty: 1,
                pinned: 0
            }
        );
        assert_eq!(pool.flush_relation(1100).unwrap(), 0);
        assert_eq!(pool.flush_relation(1101).unwrap(), 1);
        // The discarded changes never reached the file.
        let mut fresh = IoAccount::default();
        for blkno in 0..10 {
            assert_eq!(counter_of(&read(&pool, &rel, blkno, &mut fresh).page()), 0);
        }
        assert_eq!(fresh.shared_read, 10);

        // A buffer pinned by someone else is reported, not silently dropped.
        let pinned = read(&pool, &rel, 3, &mut fresh);
        let err = pool.discard_relation(1100).unwrap_err();
        assert_eq!(err.code, sqlstate::INTERNAL_ERROR);
        drop(pinned);
        assert!(pool.discard_relation(1100).unwrap() >= 1);
        assert_eq!(buffers_of(&pool, 1100), 0);
    }

    #[test]
    fn pinning_a_hit_raises_usage_up_to_the_maximum() {
        let dir = TempDir::new("pool-usage");
        let rel = make_rel(&dir, 1200, 2);
        let pool = BufferPool::new(8);
        let mut usage = IoAccount::default();
        let id = read(&pool, &rel, 0, &mut usage).buffer_id();
        assert_eq!(pool.snapshot()[id as usize].usage_count, 1);
        for _ in 0..10 {
            read(&pool, &rel, 0, &mut usage);
        }
        assert_eq!(
            pool.snapshot()[id as usize].usage_count,
            MAX_USAGE_COUNT as u8
        );
        // Under a ring, a hit only lifts usage from 0 to 1.
        let mut ring = BufferRing::bulk_read();
        let id1 = pool
            .read_buffer(&rel, 1, Some(&mut ring), &mut usage)
            .unwrap()
            .buffer_id();
        pool.read_buffer(&rel, 1, Some(&mut ring), &mut usage)
            .unwrap();
        assert_eq!(pool.snapshot()[id1 as usize].usage_count, 1);
    }

    #[test]
    fn evicted_blocks_are_read_again_not_hit() {
        let dir = TempDir::new("pool-evict-rel");
        let rel = make_rel(&dir, 1300, 10);
        let other = make_rel(&dir, 1301, 2);
        let pool = BufferPool::new(16);
        let mut usage = IoAccount::default();
        for blkno in 0..10 {
            read(&pool, &rel, blkno, &mut usage);
        }
        for blkno in 0..2 {
            read(&pool, &other, blkno, &mut usage);
        }
        let counts = pool.evict_relation(1300, &mut usage).unwrap();
        assert_eq!(
            counts,
            EvictCounts {
                evicted: 10,
                flushed: 0,
                skipped: 0
            }
        );
        assert_eq!(buffers_of(&pool, 1300), 0);
        assert_eq!(buffers_of(&pool, 1301), 2, "other relations stay cached");
        assert_eq!(pool.stats().valid, 2);
        // Evicting again finds nothing.
        assert_eq!(
            pool.evict_relation(1300, &mut usage).unwrap(),
            EvictCounts::default()
        );

        let mut fresh = IoAccount::default();
        for blkno in 0..10 {
            read(&pool, &rel, blkno, &mut fresh);
        }
        assert_eq!((fresh.shared_read, fresh.shared_hit), (10, 0));
        read(&pool, &other, 0, &mut fresh);
        assert_eq!(fresh.shared_hit, 1);

        // Everything at once.
        let all = pool.evict_all(&mut fresh).unwrap();
        assert_eq!((all.evicted, all.flushed, all.skipped), (12, 0, 0));
        assert_eq!(pool.stats().valid, 0);
    }

    #[test]
    fn eviction_skips_pinned_buffers() {
        let dir = TempDir::new("pool-evict-pinned");
        let rel = make_rel(&dir, 1400, 6);
        let pool = BufferPool::new(8);
        let mut usage = IoAccount::default();
        for blkno in 0..6 {
            read(&pool, &rel, blkno, &mut usage);
        }
        let held = read(&pool, &rel, 3, &mut usage);
        let counts = pool.evict_relation(1400, &mut usage).unwrap();
        assert_eq!((counts.evicted, counts.flushed, counts.skipped), (5, 0, 1));
        // The pinned buffer keeps its block, and it is still a hit.
        check_page(&held.page(), 1400, 3);
        let mut fresh = IoAccount::default();
        drop(read(&pool, &rel, 3, &mut fresh));
        assert_eq!((fresh.shared_hit, fresh.shared_read), (1, 0));
        let id = held.buffer_id();
        assert_eq!(
            pool.evict_buffer(id, &mut fresh).unwrap(),
            EvictCounts {
                evicted: 0,
                flushed: 0,
                skipped: 1
            }
        );
        drop(held);
        assert_eq!(pool.evict_buffer(id, &mut fresh).unwrap().evicted, 1);
        assert_eq!(pool.snapshot()[id as usize].tag, None);
        // An empty buffer is neither evicted nor skipped; an id past the pool is an error.
        assert_eq!(
            pool.evict_buffer(id, &mut fresh).unwrap(),
            EvictCounts::default()
        );
        let err = pool.evict_buffer(8, &mut fresh).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            ("XX000", "bad buffer ID: 9")
        );
        assert_eq!(pool.stats().pinned, 0);
    }

    #[test]
    fn eviction_writes_dirty_buffers_first() {
        let dir = TempDir::new("pool-evict-dirty");
        let rel = make_rel(&dir, 1500, 8);
        let pool = BufferPool::new(16);
        let mut usage = IoAccount::default();
        for blkno in 0..8 {
            let buffer = read(&pool, &rel, blkno, &mut usage);
            if blkno % 2 == 0 {
                bump_counter(&buffer, &mut usage);
            }
        }
        assert_eq!(pool.stats().dirty, 4);
        let mut evicting = IoAccount::default();
        let counts = pool.evict_relation(1500, &mut evicting).unwrap();
        assert_eq!((counts.evicted, counts.flushed, counts.skipped), (8, 4, 0));
        assert_eq!(evicting.shared_written, 4, "the write-backs are counted");
        assert_eq!(
            pool.stats(),
            PoolStats {
                nbuffers: 16,
                ..PoolStats::default()
            }
        );
        // The changes survive: read from the file, checksums verified on the way in.
        let mut fresh = IoAccount::default();
        for blkno in 0..8 {
            let buffer = read(&pool, &rel, blkno, &mut fresh);
            assert_eq!(counter_of(&buffer.page()), (blkno % 2 == 0) as u64);
        }
        assert_eq!(fresh.shared_read, 8);
        // A dirty buffer evicted on its own reports the write.
        let buffer = read(&pool, &rel, 5, &mut fresh);
        bump_counter(&buffer, &mut fresh);
        let id = buffer.buffer_id();
        drop(buffer);
        let one = pool.evict_buffer(id, &mut fresh).unwrap();
        assert_eq!((one.evicted, one.flushed), (1, 1));
        let mut page = vec![0u8; BLCKSZ];
        rel.read_block(5, &mut page).unwrap();
        page_verify(&page, 5).unwrap();
        assert_eq!(counter_of(&page), 1);
    }

    #[test]
    fn the_background_writer_cleans_unpinned_unused_dirty_buffers_ahead_of_the_hand() {
        let dir = TempDir::new("pool-clean-ahead");
        let rel = make_rel(&dir, 1501, 8);
        let pool = BufferPool::new(16);
        let mut usage = IoAccount::default();
        let mut ids = Vec::new();
        for blkno in 0..8 {
            let buffer = read(&pool, &rel, blkno, &mut usage);
            bump_counter(&buffer, &mut usage);
            ids.push(buffer.buffer_id());
        }
        // The clock sweep has passed blocks 0..6 (usage count 0); 6 and 7 were just used.
        for &id in &ids[..6] {
            pool.desc(id).state.fetch_sub(USAGE_ONE, Ordering::AcqRel);
        }
        let pinned = read(&pool, &rel, 5, &mut usage);
        let hand = pool.clock_hand.load(Ordering::Relaxed);
        let mut writer = IoAccount::default();
        // At most 3 writes: it stops there, and the next walk goes on from that buffer.
        let first = pool.clean_ahead(0, 100, 0, 3, &mut writer).unwrap();
        assert_eq!((first.written, first.hit_limit), (3, true));
        assert!(first.next >= hand && first.next < hand + 16, "{first:?}");
        let second = pool
            .clean_ahead(first.next, 100, 0, 100, &mut writer)
            .unwrap();
        assert_eq!((second.written, second.hit_limit), (2, false));
        assert_eq!(second.next, hand + 16, "never more than one lap ahead");
        assert_eq!(writer.shared_written, 5);
        // Written: 0..5; left dirty: the pinned block 5 and the used blocks 6 and 7.
        assert_eq!(pool.stats().dirty, 3);
        drop(pinned);
        let mut page = vec![0u8; BLCKSZ];
        for blkno in 0..8 {
            rel.read_block(blkno, &mut page).unwrap();
            assert_eq!(
                counter_of(&page),
                u64::from(blkno < 5),
                "block {blkno} on disk"
            );
        }
        // Nothing reusable needed and no walk asked for: it looks at nothing.
        let idle = pool
            .clean_ahead(second.next, 0, 0, 100, &mut writer)
            .unwrap();
        assert_eq!((idle.next, idle.written), (hand + 16, 0));
    }

    #[test]
    fn concurrent_updates_survive_eviction_calls() {
        let dir = TempDir::new("pool-evict-stress");
        let rel = make_rel(&dir, 1600, 40);
        let pool = BufferPool::new(32);
        let per_thread = 400u64;
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..3u64)
                .map(|t| {
                    let (pool, rel) = (&pool, &rel);
                    s.spawn(move || {
                        let mut rng = 0x0bad_cafe_1234_5678u64 ^ (t * 0x9e37_79b9);
                        let mut usage = IoAccount::default();
                        for _ in 0..per_thread {
                            rng ^= rng << 13;
                            rng ^= rng >> 7;
                            rng ^= rng << 17;
                            let buffer = read(pool, rel, (rng % 40) as u32, &mut usage);
                            bump_counter(&buffer, &mut usage);
                        }
                    })
                })
                .collect();
            let (pool, done) = (&pool, &done);
            s.spawn(move || {
                let mut usage = IoAccount::default();
                let mut id = 0;
                while !done.load(Ordering::Relaxed) {
                    pool.evict_relation(1600, &mut usage).unwrap();
                    pool.evict_buffer(id % 32, &mut usage).unwrap();
                    pool.evict_all(&mut usage).unwrap();
                    id += 1;
                }
            });
            for w in workers {
                w.join().unwrap();
            }
            done.store(true, Ordering::Relaxed);
        });
        pool.flush_all().unwrap();
        let mut total = 0;
        let mut page = vec![0u8; BLCKSZ];
        for blkno in 0..40 {
            rel.read_block(blkno, &mut page).unwrap();
            page_verify(&page, blkno).unwrap();
            check_page(&page, 1600, blkno);
            total += counter_of(&page);
        }
        assert_eq!(total, 3 * per_thread, "lost updates");
        assert_eq!(pool.stats().pinned, 0);
    }
}
