//! Counts per relation: blocks for PostgreSQL's `pg_statio_*_tables` and
//! `pg_statio_*_indexes`, and index scans for `pg_stat_*_indexes`.
//!
//! For every relation, how many of its blocks were found in the buffer pool (hits) and how
//! many had to be read (one per block, whether the read combined it with others or not).
//! The buffer pool counts both into the operation's `IoAccount`, keyed by the relation's
//! file (relfilenode), next to the `pg_stat_io` counters; they reach the shared totals
//! here when the account flushes (at statement end and at least once a second), and the
//! views map files to tables and indexes through the catalog.
//!
//! An index also counts its scans (one per descent, EXPLAIN's `Index Searches:`), the index
//! entries they returned, and the table rows plain Index Scans fetched through it; its
//! last scan's time is the flush's that carried it (PostgreSQL stamps the end of the
//! transaction that did it).
//!
//! Bounds: an operation touches a handful of relations (a table and an index or two), kept
//! in a short list; the shared map holds one entry per relation file ever read or hit,
//! and drops a file's entry when the file is removed (DROP, TRUNCATE).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

/// Hits and reads of one relation's blocks; scans of it when it is an index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RelationCounts {
    pub hit: u64,
    pub read: u64,
    /// Index searches (descents).
    pub index_scans: u64,
    /// Index entries those scans returned.
    pub index_tuples_read: u64,
    /// Live table rows plain Index Scans fetched through this index.
    pub index_tuples_fetched: u64,
    /// When the flush that last carried a scan of this index happened.
    pub last_index_scan: Option<DateTime<Utc>>,
}

/// One operation's counts not yet flushed, by relation file.
#[derive(Debug, Default)]
pub struct PendingRelationCounts {
    /// `(relfilenode, counts)`; the last entry is the one counted last, found first.
    entries: Vec<(u32, RelationCounts)>,
}

impl PendingRelationCounts {
    #[inline]
    pub fn hit(&mut self, relfilenode: u32) {
        self.entry(relfilenode).hit += 1;
    }

    #[inline]
    pub fn read(&mut self, relfilenode: u32, nblocks: u64) {
        self.entry(relfilenode).read += nblocks;
    }

    /// One index search of index file `relfilenode`.
    #[inline]
    pub fn index_scan(&mut self, relfilenode: u32) {
        self.entry(relfilenode).index_scans += 1;
    }

    /// `n` entries returned by a scan of index file `relfilenode`.
    #[inline]
    pub fn index_tuples_read(&mut self, relfilenode: u32, n: u64) {
        self.entry(relfilenode).index_tuples_read += n;
    }

    /// `n` live table rows fetched through index file `relfilenode`.
    #[inline]
    pub fn index_tuples_fetched(&mut self, relfilenode: u32, n: u64) {
        self.entry(relfilenode).index_tuples_fetched += n;
    }

    #[inline]
    fn entry(&mut self, relfilenode: u32) -> &mut RelationCounts {
        let at = match self.entries.iter().rposition(|(r, _)| *r == relfilenode) {
            Some(at) => at,
            None => {
                self.entries.push((relfilenode, RelationCounts::default()));
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
pub struct RelationTotals {
    totals: Mutex<HashMap<u32, RelationCounts>>,
}

impl RelationTotals {
    /// Adds an operation's pending counts and empties them.
    pub fn add(&self, pending: &mut PendingRelationCounts) {
        if pending.is_empty() {
            return;
        }
        let now = Utc::now();
        let mut totals = self.totals.lock();
        for (relfilenode, counts) in pending.entries.drain(..) {
            let total = totals.entry(relfilenode).or_default();
            total.hit += counts.hit;
            total.read += counts.read;
            total.index_scans += counts.index_scans;
            total.index_tuples_read += counts.index_tuples_read;
            total.index_tuples_fetched += counts.index_tuples_fetched;
            if counts.index_scans > 0 {
                total.last_index_scan = Some(now);
            }
        }
    }

    /// The totals of every relation file counted so far.
    pub fn snapshot(&self) -> HashMap<u32, RelationCounts> {
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
        let mut pending = PendingRelationCounts::default();
        pending.hit(10);
        pending.read(11, 16);
        pending.hit(10);
        pending.read(10, 1);
        let totals = RelationTotals::default();
        totals.add(&mut pending);
        assert!(pending.is_empty());
        pending.read(11, 4);
        totals.add(&mut pending);
        pending.index_scan(12);
        pending.index_tuples_read(12, 30);
        pending.index_tuples_fetched(12, 7);
        totals.add(&mut pending);
        let s = totals.snapshot();
        assert_eq!((s[&10].hit, s[&10].read), (2, 1));
        assert_eq!((s[&11].hit, s[&11].read), (0, 20));
        assert_eq!(s[&11].last_index_scan, None);
        let ix = s[&12];
        assert_eq!(
            (
                ix.index_scans,
                ix.index_tuples_read,
                ix.index_tuples_fetched
            ),
            (1, 30, 7)
        );
        assert!(ix.last_index_scan.is_some());
        totals.forget(10);
        assert!(!totals.snapshot().contains_key(&10));
        totals.reset();
        assert!(totals.snapshot().is_empty());
    }
}
