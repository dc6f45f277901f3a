//! Dropping behind: a read stream that moves forward through a buffered relation tells the
//! kernel to drop the pages it has consumed from the page cache (`posix_fadvise(DONTNEED)`),
//! in steps of `read_stream_drop_behind` blocks. iolab's own setting; PostgreSQL reads every
//! buffered block into the page cache and leaves it there.
//!
//! # Why
//!
//! A block the stream has handed to its consumer is in the buffer pool; the page cache's
//! copy of it helps only a later reader after the pool has evicted it. A scan of a relation
//! larger than the cache evicts such copies before anyone reads them, and filling the cache
//! costs: the kernel allocates a page for every block read and later reclaims it. On a VM
//! that reports freed memory to its host, each such allocation also pays a host page fault
//! (`../shared/reference/machine-io-facts.md`: a cold buffered read of 1 GiB spends 1.8 s of
//! system time on them). A stream that drops behind it hands its pages back while they are
//! still in the kernel's free lists, so the next reads reuse them: the page cache holds
//! about one step plus the kernel's readahead window of the relation, whatever its size.
//! The price: a second scan of the relation reads it from the device again.
//! This is the read-side sibling of PostgreSQL's `backend_flush_after`, and what Linux's
//! uncached buffered I/O (`RWF_DONTCACHE`, 6.14) does per read.
//!
//! # The rule
//!
//! The stream reports each block it hands out. While blocks go forward they belong to one
//! *region*, and extend its range `[from, to)` of consumed blocks not yet dropped; once that
//! spans `step` blocks it is dropped, and `from` moves to `to`. A block behind `from`
//! starts a new region there (what the old one had not dropped yet is offered first). The
//! blocks in between that the stream did not hand out (holes of a bitmap heap scan, the
//! kernel's readahead of them) go too. At the end of the stream, or when it is dropped
//! early, the rest goes.
//!
//! The kernel keeps a file's pages in *folios* of up to 2 MiB (large folios, naturally
//! aligned in the file) and drops a folio only when the range covers all of it. A folio
//! that straddles the end of one drop would therefore stay cached for good, so each drop
//! starts at the 2 MiB boundary at or below `from` (but never before the region's first
//! block): the next drop covers the straddling folio again, whole this time.
//!
//! A range is dropped only when no block of it is still queued, being read or about to be
//! read by the stream (the stream checks before it calls); otherwise it keeps growing and
//! is offered again at the next block. Streams whose blocks jump back and forth (index
//! scans) are created without drop-behind.

use std::ops::Range;

/// Blocks in the largest folio the kernel's page cache uses (2 MiB).
pub const FOLIO_BLOCKS: u32 = 256;

/// The consumed blocks of one stream's region, not yet dropped.
#[derive(Debug)]
pub struct DropBehind {
    /// Blocks per drop (`read_stream_drop_behind`), > 0.
    step: u32,
    /// The region's first block (`None` before the first block).
    region_start: Option<u32>,
    /// Consumed blocks `from..to` not yet dropped (none when `from == to`).
    from: u32,
    to: u32,
}

impl DropBehind {
    /// Drop-behind in steps of `step` blocks; `None` when `step` is 0 (off).
    pub fn new(step: u32) -> Option<DropBehind> {
        (step > 0).then_some(DropBehind {
            step,
            region_start: None,
            from: 0,
            to: 0,
        })
    }

    /// Block `blkno` was handed out. Returns a range due to be dropped, if any; the caller
    /// drops it, or not (a block of it is still busy), and reports a drop with
    /// [`dropped`](Self::dropped).
    pub fn consumed(&mut self, blkno: u32) -> Option<Range<u32>> {
        let end = blkno.saturating_add(1);
        if self.region_start.is_none() || blkno < self.from {
            let rest = self.rest();
            (self.region_start, self.from, self.to) = (Some(blkno), blkno, end);
            return rest;
        }
        self.to = self.to.max(end);
        (self.to - self.from >= self.step).then(|| self.range())
    }

    /// What is left to drop, at the end of the stream.
    pub fn rest(&self) -> Option<Range<u32>> {
        (self.from < self.to).then(|| self.range())
    }

    /// `range`, which [`consumed`](Self::consumed) or [`rest`](Self::rest) offered, was
    /// dropped. (A range of a region left behind changes nothing.)
    pub fn dropped(&mut self, range: Range<u32>) {
        if range.end == self.to {
            self.from = self.to;
        }
    }

    /// `from..to`, widened down to a folio boundary within the region.
    fn range(&self) -> Range<u32> {
        let aligned = self.from - self.from % FOLIO_BLOCKS;
        aligned.max(self.region_start.unwrap_or(0))..self.to
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feed `blocks`, dropping whatever is offered; the dropped ranges.
    fn drops(step: u32, blocks: &[u32]) -> Vec<Range<u32>> {
        let mut d = DropBehind::new(step).unwrap();
        let mut out = Vec::new();
        let mut drop = |d: &mut DropBehind, r: Option<Range<u32>>| {
            if let Some(r) = r {
                out.push(r.clone());
                d.dropped(r);
            }
        };
        for &b in blocks {
            let due = d.consumed(b);
            drop(&mut d, due);
        }
        let rest = d.rest();
        drop(&mut d, rest);
        assert_eq!(d.rest(), None, "nothing left after the end");
        out
    }

    #[test]
    fn zero_is_off() {
        assert!(DropBehind::new(0).is_none());
    }

    #[test]
    fn a_sequential_stream_drops_in_steps_from_the_folio_boundary() {
        let blocks: Vec<u32> = (0..10).collect();
        assert_eq!(drops(4, &blocks), vec![0..4, 0..8, 0..10]);
        let blocks: Vec<u32> = (250..600).collect();
        assert_eq!(
            drops(100, &blocks),
            vec![250..350, 256..450, 256..550, 512..600]
        );
    }

    #[test]
    fn holes_between_consumed_blocks_are_dropped_with_them() {
        assert_eq!(
            drops(8, &[301, 303, 307, 309, 312, 520, 521]),
            vec![301..310, 301..521, 512..522]
        );
    }

    #[test]
    fn going_back_drops_what_was_consumed_and_starts_again() {
        assert_eq!(
            drops(100, &[650, 651, 652, 610, 611]),
            vec![650..653, 610..612]
        );
    }

    #[test]
    fn a_range_that_cannot_go_yet_keeps_growing() {
        let mut d = DropBehind::new(2).unwrap();
        assert_eq!(d.consumed(300), None);
        assert_eq!(d.consumed(301), Some(300..302));
        // Not dropped (busy): offered again, longer, at the next block.
        assert_eq!(d.consumed(302), Some(300..303));
        d.dropped(300..303);
        assert_eq!(d.rest(), None);
        assert_eq!(d.consumed(303), None);
        assert_eq!(d.rest(), Some(300..304));
        // A range of a region left behind is forgotten once offered.
        assert_eq!(d.consumed(10), Some(300..304));
        assert_eq!(d.rest(), Some(10..11));
        d.dropped(300..304);
        assert_eq!(d.rest(), Some(10..11));
    }
}
