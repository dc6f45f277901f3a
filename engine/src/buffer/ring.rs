//! Buffer access strategies: a small private ring of buffers that one large operation recycles
//! instead of flooding the whole pool (PostgreSQL's `BufferAccessStrategy`).
//!
//! # Why
//!
//! A sequential scan of a table larger than the pool would, through the normal clock sweep,
//! evict every other page in the pool — including the hot pages other queries keep using — and
//! gain nothing, because by the time the scan wraps around its own early pages are gone too.
//! So a big scan (or a bulk load) gets a ring: when it needs a buffer for a block that is not
//! cached, it first tries the buffer in its ring's next slot. If that buffer is unpinned and
//! nobody else used it in the meantime (usage count ≤ 1), the scan takes it again, so the scan
//! as a whole touches only `ring size` buffers. Otherwise the pool's clock sweep supplies a
//! buffer and it replaces the slot's old one.
//!
//! ```text
//!   slots:   [ b17 | b40 | b3 | b9 ]      current = 2 → next miss tries slot 3 (b9):
//!                        ^               unpinned, usage ≤ 1 → reuse b9 ("reuse")
//!                                        pinned or popular    → clock sweep, slot 3 := new
//! ```
//!
//! Hits never enter the ring: a block already cached stays where it is.
//!
//! # Size
//!
//! [`BufferRing::bulk_read`] holds 256 KiB (32 buffers), [`BufferRing::bulk_write`] 16 MiB (2048
//! buffers), [`BufferRing::vacuum`] 2 MiB (256 buffers), like PostgreSQL 17; PostgreSQL 18's
//! larger bulk-read ring (room for `effective_io_concurrency` combined reads) can be built with
//! [`BufferRing::with_buffers`]. Every ring is capped at 1/8 of the pool when it is first used;
//! a pool too small for even one slot (fewer than 8 buffers) leaves the ring empty, and misses
//! then use the clock sweep. The slot vector is allocated once, at first use, and never grows:
//! its length is the ring's bound.
//!
//! A dirty buffer taken from the ring is written back before reuse and counted as written
//! (PostgreSQL's bulk-read ring would rather skip it; writing is simpler and equally correct).
//! The pool decides *whether* a scan should use a ring: see `BufferPool::wants_ring`.

use super::pool::BufferId;
use crate::storage::page::BLCKSZ;

/// What kind of operation the ring serves (PostgreSQL's `BAS_*` and `pg_stat_io` contexts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RingKind {
    BulkRead,
    BulkWrite,
    Vacuum,
}

impl RingKind {
    /// Name of the matching `pg_stat_io.context`.
    pub fn io_context(self) -> &'static str {
        match self {
            RingKind::BulkRead => "bulkread",
            RingKind::BulkWrite => "bulkwrite",
            RingKind::Vacuum => "vacuum",
        }
    }
}

/// A private ring of buffer ids for one scan or bulk operation. Not shared between threads.
#[derive(Debug)]
pub struct BufferRing {
    kind: RingKind,
    /// Ring size asked for, before the 1/8-of-pool cap.
    requested: usize,
    /// Buffer in each slot (`None` until the slot is first filled); allocated at first use,
    /// never resized.
    slots: Vec<Option<BufferId>>,
    /// `nbuffers` of the pool the ring was sized for at first use.
    pool_buffers: Option<usize>,
    /// Slot used by the last miss.
    current: usize,
    /// Misses served by reusing the ring's own buffer.
    reuses: u64,
    /// Misses served by the clock sweep (filling or replacing a slot).
    evictions: u64,
}

impl BufferRing {
    /// A ring of `nbuffers` buffers (before the 1/8-of-pool cap applied at first use); 0
    /// means "no ring".
    pub fn with_buffers(kind: RingKind, nbuffers: usize) -> BufferRing {
        BufferRing {
            kind,
            requested: nbuffers,
            slots: Vec::new(),
            pool_buffers: None,
            current: 0,
            reuses: 0,
            evictions: 0,
        }
    }

    /// 256 KiB ring for large sequential scans.
    pub fn bulk_read() -> BufferRing {
        BufferRing::with_buffers(RingKind::BulkRead, 256 * 1024 / BLCKSZ)
    }

    /// PostgreSQL 18's bulk-read ring for a read stream: 256 KiB plus room for
    /// `effective_io_concurrency` reads of `io_combine_limit` blocks, capped at the larger of
    /// 256 KiB and the stream's pin limit.
    pub fn bulk_read_for_stream(
        io_combine_limit: usize,
        effective_io_concurrency: usize,
        pin_limit: usize,
    ) -> BufferRing {
        let base = 256 * 1024 / BLCKSZ;
        let wanted = base + io_combine_limit * effective_io_concurrency;
        BufferRing::with_buffers(RingKind::BulkRead, wanted.min(base.max(pin_limit)))
    }

    /// 16 MiB ring for COPY FROM, CREATE TABLE AS and other bulk writes.
    pub fn bulk_write() -> BufferRing {
        BufferRing::with_buffers(RingKind::BulkWrite, 16 * 1024 * 1024 / BLCKSZ)
    }

    /// 2 MiB ring for VACUUM and ANALYZE.
    pub fn vacuum() -> BufferRing {
        BufferRing::with_buffers(RingKind::Vacuum, 2 * 1024 * 1024 / BLCKSZ)
    }

    pub fn kind(&self) -> RingKind {
        self.kind
    }

    /// Number of slots (the most buffers this ring recycles); before first use, the requested
    /// size.
    pub fn len(&self) -> usize {
        match self.pool_buffers {
            Some(_) => self.slots.len(),
            None => self.requested,
        }
    }

    /// True for a ring without slots, which leaves every miss to the clock sweep.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Misses that reused a buffer already in the ring (`pg_stat_io.reuses`).
    pub fn reuses(&self) -> u64 {
        self.reuses
    }

    /// Misses that took a buffer from the clock sweep (`pg_stat_io.evictions`).
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// Size the ring for a pool of `pool_buffers` buffers: on first use, allocate
    /// `min(requested, pool_buffers / 8)` slots; afterwards check it is the same pool size
    /// (buffer ids in the slots index that pool). Returns whether the ring has any slot.
    pub(crate) fn prepare(&mut self, pool_buffers: usize) -> bool {
        match self.pool_buffers {
            None => {
                self.slots = vec![None; self.requested.min(pool_buffers / 8)];
                self.pool_buffers = Some(pool_buffers);
            }
            Some(sized_for) => {
                assert_eq!(sized_for, pool_buffers, "a ring must stay with one pool");
            }
        }
        !self.slots.is_empty()
    }

    /// Move to the next slot and return the buffer it holds, if any.
    pub(crate) fn advance(&mut self) -> Option<BufferId> {
        assert!(
            !self.slots.is_empty(),
            "advance on an empty or unprepared ring"
        );
        self.current = (self.current + 1) % self.slots.len();
        self.slots[self.current]
    }

    /// The current slot's buffer was reused.
    pub(crate) fn note_reuse(&mut self) {
        self.reuses += 1;
    }

    /// The clock sweep supplied `id`; it takes over the current slot.
    pub(crate) fn replace_current(&mut self, id: BufferId) {
        assert!(
            !self.slots.is_empty(),
            "replace_current on an empty or unprepared ring"
        );
        self.slots[self.current] = Some(id);
        self.evictions += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_caps() {
        assert_eq!(BufferRing::bulk_read().len(), 32);
        assert_eq!(BufferRing::bulk_write().len(), 2048);
        assert_eq!(BufferRing::vacuum().len(), 256);
        assert_eq!(BufferRing::bulk_read().kind().io_context(), "bulkread");

        let mut ring = BufferRing::bulk_write();
        assert!(ring.prepare(16384));
        assert_eq!(ring.len(), 2048);
        let mut ring = BufferRing::bulk_write();
        assert!(ring.prepare(1000));
        assert_eq!(ring.len(), 125);
        assert!(ring.prepare(1000));
        let mut ring = BufferRing::bulk_read();
        assert!(!ring.prepare(7));
        assert!(ring.is_empty());
        assert!(!BufferRing::with_buffers(RingKind::BulkRead, 0).prepare(1000));
    }

    #[test]
    #[should_panic(expected = "one pool")]
    fn a_ring_stays_with_its_pool() {
        let mut ring = BufferRing::bulk_read();
        ring.prepare(1000);
        ring.prepare(2000);
    }

    #[test]
    fn slots_are_visited_round_robin() {
        let mut ring = BufferRing::with_buffers(RingKind::BulkRead, 3);
        assert!(ring.prepare(100));
        for id in 0..3 {
            assert_eq!(ring.advance(), None);
            ring.replace_current(id * 10);
        }
        assert_eq!(ring.advance(), Some(0));
        assert_eq!(ring.advance(), Some(10));
        assert_eq!(ring.advance(), Some(20));
        assert_eq!(ring.advance(), Some(0));
        assert_eq!(ring.evictions(), 3);
    }
}
