//! VACUUM's pass over an index: the entries pointing at heap tuples VACUUM removed go
//! (PostgreSQL's `btbulkdelete`).
//!
//! The pass reads the index in block order (as PostgreSQL's `btvacuumscan` does, so the
//! reads are sequential) and changes each leaf that has such entries in place: a plain
//! entry goes (the line pointers after it move down), a posting list loses those TIDs (and
//! becomes a plain entry when one is left, or goes when none is), then the leaf is
//! compacted. The WAL gets the line pointer moves and the shortened posting lists, and
//! compacts again at redo, as PostgreSQL's `btree_xlog_vacuum` does. The high key and the sibling links stay, so the tree's
//! shape does not change; a leaf may end up empty, which readers and writers handle as any
//! leaf (PostgreSQL would later delete such pages; iolab keeps them).
//!
//! The pass holds the index's writer lock (no insert changes a leaf under it), and each
//! leaf's exclusive lock while it rewrites it; readers copy a leaf under its shared lock,
//! so each sees a leaf before or after, never halfway.

use iolab_catalog::PgResult;

use crate::accounting::IoAccount;
use crate::btree::page::{
    check_page, first_data_offset, form_leaf_with, remove_items, shrink_item, tuple_at,
};
use crate::btree::{writer_lock, BtreeIndex, Tid};
use crate::buffer::BufferRing;
use crate::storage::page;
use crate::wal::{self, Change};

/// What one pass over an index did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IndexVacuumed {
    /// The index's pages when the pass ended.
    pub pages: u32,
    /// Entries (TIDs) removed.
    pub removed: u64,
}

/// Sorted dead TIDs with the start of each heap block's run, so that a lookup (one per
/// index entry) reads two positions and searches a block's few offsets instead of
/// searching them all (PostgreSQL's TID store answers the same question).
struct DeadTids<'a> {
    tids: &'a [Tid],
    /// `block_start[b]..block_start[b + 1]`: block `b`'s TIDs in `tids`.
    block_start: Vec<u32>,
}

impl<'a> DeadTids<'a> {
    fn new(tids: &'a [Tid]) -> DeadTids<'a> {
        assert!(tids.windows(2).all(|w| w[0] < w[1]), "dead TIDs sorted");
        let blocks = tids.last().map_or(0, |t| t.0 as usize + 1);
        let mut block_start = vec![0u32; blocks + 1];
        for &(block, _) in tids {
            block_start[block as usize + 1] += 1;
        }
        for b in 0..blocks {
            block_start[b + 1] += block_start[b];
        }
        DeadTids { tids, block_start }
    }

    fn contains(&self, tid: Tid) -> bool {
        let b = tid.0 as usize;
        if b + 1 >= self.block_start.len() {
            return false;
        }
        let run = &self.tids[self.block_start[b] as usize..self.block_start[b + 1] as usize];
        run.binary_search(&tid).is_ok()
    }
}

impl BtreeIndex {
    /// Removes every entry whose heap TID is in `dead` (sorted, without duplicates),
    /// reading through `ring`.
    pub fn bulk_delete(
        &self,
        dead: &[Tid],
        mut ring: Option<&mut BufferRing>,
        acct: &mut IoAccount,
    ) -> PgResult<IndexVacuumed> {
        let dead = DeadTids::new(dead);
        let lock = writer_lock(self.rel.relfilenode());
        let _writer = lock.lock();
        let is_dead = |tid: &Tid| dead.contains(*tid);
        let mut removed = 0u64;
        let nblocks = self.rel.nblocks();
        // Block 0 is the meta page.
        for blkno in 1..nblocks {
            let buffer = self
                .pool
                .read_buffer(&self.rel, blkno, ring.as_deref_mut(), acct)?;
            let mut page = buffer.page_mut();
            if page::page_is_new(&page) {
                // A block the file was extended by for a split or a new root that a crash
                // cut short before its record: nothing links to it (PostgreSQL's
                // btvacuumpage treats such a page as free).
                continue;
            }
            let opaque = check_page(&page, blkno, &self.name)?;
            if !opaque.is_leaf() {
                continue;
            }
            // Which entries go, and which posting lists lose some of their TIDs.
            let mut gone = Vec::new();
            let mut shrunk = Vec::new();
            let mut removed_here = 0u64;
            for off in first_data_offset(&opaque)..=page::page_max_offset(&page) {
                let t = tuple_at(&page, off)?;
                let tids: Vec<Tid> = t.heap_tids().collect();
                let live: Vec<Tid> = tids.iter().copied().filter(|t| !is_dead(t)).collect();
                removed_here += (tids.len() - live.len()) as u64;
                if live.is_empty() {
                    gone.push(off);
                } else if live.len() < tids.len() {
                    let key = t.key(&self.columns)?;
                    shrunk.push((off, form_leaf_with(&self.columns, &key, &live)));
                }
            }
            if removed_here == 0 {
                continue;
            }
            removed += removed_here;
            let before = page.to_vec();
            for (off, item) in &shrunk {
                shrink_item(&mut page, *off, item);
            }
            let moves = remove_items(&mut page, &gone);
            let between = page.to_vec();
            page::page_repair_fragmentation(&mut page);
            let change = Change::Compacted {
                before: &before,
                moves: &moves,
                between: &between,
            };
            wal::log_change(&self.rel, &buffer, &mut page, change, acct);
        }
        Ok(IndexVacuumed {
            pages: self.rel.nblocks(),
            removed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dead_tids_answer_as_a_search_would() {
        let tids: Vec<Tid> = vec![(0, 3), (0, 7), (2, 1), (5, 2), (5, 9)];
        let dead = DeadTids::new(&tids);
        for block in 0..8 {
            for offset in 0..12 {
                let tid = (block, offset);
                assert_eq!(dead.contains(tid), tids.contains(&tid), "{tid:?}");
            }
        }
        assert!(!DeadTids::new(&[]).contains((0, 1)));
    }
}
