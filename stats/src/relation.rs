//! Block counts per relation: PostgreSQL's `pg_statio_*_tables` and `pg_statio_*_indexes`.
//!
//! For every relation, how many of its blocks were found in the buffer pool (hits) and how
//! many had to be read (one per block, whether the read combined it with others or not).
//! The buffer pool counts both into the operation's `IoAccount`, keyed by the relation's
//! file (relfilenode), next to the `pg_stat_io` counters; they reach the shared totals
//! here when the account flushes (at statement end and at least once a second), and the
//! views map files to tables and indexes through the catalog.
//!
//! Bounds: an operation touches a handful of relations (a table and an index or two), kept
//! in a short list; the shared map holds one entry per relation file ever read or hit,
//! and drops a file's entry when the file is removed (DROP, TRUNCATE).

use std::collections::HashMap;

use parking_lot::Mutex;

/// Hits and reads of one relation's blocks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelationBlocks {
    pub hit: u64,
    pub read: u64,
}

/// One operation's counts not yet flushed, by relation file.
#[derive(Debug, Default)]
pub struct PendingRelationBlocks {
    /// `(relfilenode, counts)`; the last entry is the one counted last, found first.
    entries: Vec<(u32, RelationBlocks)>,
}

impl PendingRelationBlocks {
    #[inline]
    pub fn hit(&mut self, relfilenode: u32) {
        self.entry(relfilenode).hit += 1;
    }

    #[inline]
    pub fn read(&mut self, relfilenode: u32, nblocks: u64) {
        self.entry(relfilenode).read += nblocks;
    }

    #[inline]
    fn entry(&mut self, relfilenode: u32) -> &mut RelationBlocks {
        let at = match self.entries.iter().rposition(|(r, _)| *r == relfilenode) {
            Some(at) => at,
            None => {
                self.entries.push((relfilenode, RelationBlocks::default()));
                self.entries.len() - 1
            }
        };
        &mut self.entries[at].1
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The server's totals by relation file.
#[derive(Debug, Default)]
pub struct RelationBlockCounts {
    totals: Mutex<HashMap<u32, RelationBlocks>>,
}

impl RelationBlockCounts {
    /// Adds an operation's pending counts and empties them.
    pub fn add(&self, pending: &mut PendingRelationBlocks) {
        if pending.is_empty() {
            return;
        }
        let mut totals = self.totals.lock();
        for (relfilenode, counts) in pending.entries.drain(..) {
            let total = totals.entry(relfilenode).or_default();
            total.hit += counts.hit;
            total.read += counts.read;
        }
    }

    /// The totals of every relation file counted so far.
    pub fn snapshot(&self) -> HashMap<u32, RelationBlocks> {
        self.totals.lock().clone()
    }

    /// A relation file was removed: its counts go with it.
    pub fn forget(&self, relfilenode: u32) {
        self.totals.lock().remove(&relfilenode);
    }

    /// `pg_stat_reset()`: every relation's counts back to zero.
    pub fn reset(&self) {
        self.totals.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_counts_add_up_by_relation() {
        let mut pending = PendingRelationBlocks::default();
        pending.hit(10);
        pending.read(11, 16);
        pending.hit(10);
        pending.read(10, 1);
        let totals = RelationBlockCounts::default();
        totals.add(&mut pending);
        assert!(pending.is_empty());
        pending.read(11, 4);
        totals.add(&mut pending);
        let s = totals.snapshot();
        assert_eq!(s[&10], RelationBlocks { hit: 2, read: 1 });
        assert_eq!(s[&11], RelationBlocks { hit: 0, read: 20 });
        totals.forget(10);
        assert!(!totals.snapshot().contains_key(&10));
        totals.reset();
        assert!(totals.snapshot().is_empty());
    }
}
