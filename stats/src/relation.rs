//! Counts per relation: blocks for PostgreSQL's `pg_statio_*_tables` and
//! `pg_statio_*_indexes`; scans and rows for `pg_stat_*_tables` and `pg_stat_*_indexes`.
//!
//! For every relation, how many of its blocks were found in the buffer pool (hits) and how
//! many had to be read (one per block, whether the read combined it with others or not).
//! The buffer pool counts both into the operation's `IoAccount`, keyed by the relation's
//! file (relfilenode), next to the `pg_stat_io` counters; they reach the shared totals
//! here when the account flushes (at statement end and at least once a second), and the
//! views map files to tables and indexes through the catalog.
//!
//! A table also counts its sequential scans (a Seq Scan, and the heap scan of CREATE INDEX,
//! as in PostgreSQL) and the rows they returned, and the rows Bitmap Heap Scans fetched
//! from it (every visible row of the pages visited, before recheck and filter). An index
//! counts its scans (one per descent, EXPLAIN's `Index Searches:`), the index entries they
//! returned, and the table rows plain Index Scans fetched through it. The last scan's time
//! is the flush's that carried it (PostgreSQL stamps the end of the transaction that did it).
//!
//! # Rows, at transaction end
//!
//! Rows inserted, updated and deleted are told here as they are written, under their
//! transaction id, and stay aside until that transaction ends
//! ([`RelationTotals::end_transaction`], called by the transaction manager), as in
//! PostgreSQL: then they count in `n_tup_ins`, `n_tup_upd`, `n_tup_del` whatever the
//! outcome. If it committed, an insert adds a live row, a delete turns one dead, an update
//! leaves a dead version behind, and each is a modification (`n_mod_since_analyze`); if it
//! aborted, the rows it inserted and the new versions it wrote are dead, and what it
//! deleted lives on. Inserts also count in `n_ins_since_vacuum`. ANALYZE replaces the
//! live and dead counts with its estimates and restarts `n_mod_since_analyze`; VACUUM
//! replaces them with what it found and restarts `n_ins_since_vacuum`; each also counts
//! itself and its time. A committed TRUNCATE moves the old file's counts to the new file with no live or
//! dead rows (PostgreSQL keeps a table's counts across TRUNCATE); a rolled-back one moves
//! what the new file gathered back to the old.
//!
//! Bounds: an operation touches a handful of relations (a table and an index or two), kept
//! in a short list; the shared map holds one entry per relation file ever counted, and
//! drops a file's entry when the file is removed (DROP; TRUNCATE moves it); rows set aside
//! wait under one entry per open writing transaction (at most one per session), one
//! entry per table it wrote to.

use std::collections::HashMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use crate::persist::{Corrupt, Decoder, Encoder};

/// What operations counted of one relation: blocks hit and read; scans of it and the rows
/// or entries they returned.
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
    /// Sequential scans of this table.
    pub seq_scans: u64,
    /// Rows those scans returned.
    pub seq_tuples_read: u64,
    /// When the flush that last carried a sequential scan of this table happened.
    pub last_seq_scan: Option<DateTime<Utc>>,
    /// Rows Bitmap Heap Scans fetched from this table.
    pub bitmap_tuples_fetched: u64,
    /// Updates whose new version went to another page than the old (PostgreSQL counts
    /// these as they happen, not at transaction end).
    pub newpage_updates: u64,
}

crate::persist::persisted_fields!(RelationCounts {
    hit: u64,
    read: u64,
    index_scans: u64,
    index_tuples_read: u64,
    index_tuples_fetched: u64,
    last_index_scan: opt_time,
    seq_scans: u64,
    seq_tuples_read: u64,
    last_seq_scan: opt_time,
    bitmap_tuples_fetched: u64,
    newpage_updates: u64,
});

crate::persist::persisted_fields!(TableRows {
    inserted: u64,
    updated: u64,
    deleted: u64,
    live: i64,
    dead: i64,
    modified_since_analyze: i64,
    inserted_since_vacuum: i64,
    last_vacuum: opt_time,
    last_analyze: opt_time,
    vacuum_count: u64,
    analyze_count: u64,
    total_vacuum_ms: f64,
    total_analyze_ms: f64,
});

impl RelationCounts {
    fn add(&mut self, other: &RelationCounts) {
        self.hit += other.hit;
        self.read += other.read;
        self.index_scans += other.index_scans;
        self.index_tuples_read += other.index_tuples_read;
        self.index_tuples_fetched += other.index_tuples_fetched;
        self.last_index_scan = self.last_index_scan.max(other.last_index_scan);
        self.seq_scans += other.seq_scans;
        self.seq_tuples_read += other.seq_tuples_read;
        self.last_seq_scan = self.last_seq_scan.max(other.last_seq_scan);
        self.bitmap_tuples_fetched += other.bitmap_tuples_fetched;
        self.newpage_updates += other.newpage_updates;
    }
}

/// A table's rows as transactions ended and as VACUUM and ANALYZE last saw them (see
/// "Rows, at transaction end" in the module comment).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TableRows {
    /// Rows inserted, updated and deleted by ended transactions, committed or not
    /// (`n_tup_ins`, `n_tup_upd`, `n_tup_del`).
    pub inserted: u64,
    pub updated: u64,
    pub deleted: u64,
    pub live: i64,
    pub dead: i64,
    pub modified_since_analyze: i64,
    pub inserted_since_vacuum: i64,
    pub last_vacuum: Option<DateTime<Utc>>,
    pub last_analyze: Option<DateTime<Utc>>,
    pub vacuum_count: u64,
    pub analyze_count: u64,
    /// Milliseconds, as PostgreSQL 18's `total_vacuum_time`.
    pub total_vacuum_ms: f64,
    pub total_analyze_ms: f64,
}

/// Everything kept of one relation file.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RelationStats {
    pub counts: RelationCounts,
    pub rows: TableRows,
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

    /// A sequential scan of table file `relfilenode` started.
    pub fn seq_scan(&mut self, relfilenode: u32) {
        self.entry(relfilenode).seq_scans += 1;
    }

    /// `n` rows returned by a sequential scan of table file `relfilenode`.
    #[inline]
    pub fn seq_tuples_read(&mut self, relfilenode: u32, n: u64) {
        self.entry(relfilenode).seq_tuples_read += n;
    }

    /// `n` rows fetched by a Bitmap Heap Scan of table file `relfilenode`.
    #[inline]
    pub fn bitmap_tuples_fetched(&mut self, relfilenode: u32, n: u64) {
        self.entry(relfilenode).bitmap_tuples_fetched += n;
    }

    /// `n` updates of table file `relfilenode` put their new version on another page.
    pub fn newpage_updates(&mut self, relfilenode: u32, n: u64) {
        self.entry(relfilenode).newpage_updates += n;
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

/// The server's totals by relation file, and the rows of open transactions.
#[derive(Debug, Default)]
pub struct RelationTotals {
    state: Mutex<TotalsState>,
}

#[derive(Debug, Default)]
struct TotalsState {
    by_file: HashMap<u32, RelationStats>,
    /// Rows written by each open transaction: `xid → [(relfilenode, changes)]`.
    open: HashMap<u32, Vec<(u32, RowChanges)>>,
}

/// What a transaction did to one table's rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RowChanges {
    pub inserted: u64,
    pub updated: u64,
    pub deleted: u64,
}

/// One kind of row change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowChange {
    Insert,
    Update,
    Delete,
}

impl RelationTotals {
    /// Adds an operation's pending counts and empties them.
    pub fn add(&self, pending: &mut PendingRelationCounts) {
        if pending.is_empty() {
            return;
        }
        let now = Some(Utc::now());
        let mut state = self.state.lock();
        for (relfilenode, mut counts) in pending.entries.drain(..) {
            if counts.index_scans > 0 {
                counts.last_index_scan = now;
            }
            if counts.seq_scans > 0 {
                counts.last_seq_scan = now;
            }
            state
                .by_file
                .entry(relfilenode)
                .or_default()
                .counts
                .add(&counts);
        }
    }

    /// Transaction `xid` (still open) made `change` to `rows` rows of table file
    /// `relfilenode`.
    pub fn changed(&self, xid: u32, relfilenode: u32, change: RowChange, rows: u64) {
        if rows == 0 {
            return;
        }
        let mut state = self.state.lock();
        let tables = state.open.entry(xid).or_default();
        let at = match tables.iter().position(|(r, _)| *r == relfilenode) {
            Some(at) => at,
            None => {
                tables.push((relfilenode, RowChanges::default()));
                tables.len() - 1
            }
        };
        let counts = &mut tables[at].1;
        match change {
            RowChange::Insert => counts.inserted += rows,
            RowChange::Update => counts.updated += rows,
            RowChange::Delete => counts.deleted += rows,
        }
    }

    /// Transaction `xid` ended, `committed` or not: its row changes count (see "Rows, at
    /// transaction end" in the module comment).
    pub fn end_transaction(&self, xid: u32, committed: bool) {
        let mut state = self.state.lock();
        let Some(tables) = state.open.remove(&xid) else {
            return;
        };
        for (relfilenode, c) in tables {
            let rows = &mut state.by_file.entry(relfilenode).or_default().rows;
            let (ins, upd, del) = (c.inserted as i64, c.updated as i64, c.deleted as i64);
            rows.inserted += c.inserted;
            rows.updated += c.updated;
            rows.deleted += c.deleted;
            rows.inserted_since_vacuum += ins;
            if committed {
                rows.live += ins - del;
                rows.dead += upd + del;
                rows.modified_since_analyze += ins + upd + del;
            } else {
                rows.dead += ins + upd;
            }
            // As PostgreSQL: counts that began mid-way (a reset) never go below zero.
            rows.live = rows.live.max(0);
        }
    }

    /// ANALYZE of table file `relfilenode` estimated `live` and `dead` rows in `took`.
    pub fn analyzed(&self, relfilenode: u32, live: f64, dead: f64, took: Duration) {
        let mut state = self.state.lock();
        let rows = &mut state.by_file.entry(relfilenode).or_default().rows;
        rows.live = live.round() as i64;
        rows.dead = dead.round() as i64;
        rows.modified_since_analyze = 0;
        rows.last_analyze = Some(Utc::now());
        rows.analyze_count += 1;
        rows.total_analyze_ms += took.as_secs_f64() * 1e3;
    }

    /// VACUUM of table file `relfilenode` counted `live` and `dead` rows in `took`.
    pub fn vacuumed(&self, relfilenode: u32, live: u64, dead: u64, took: Duration) {
        let mut state = self.state.lock();
        let rows = &mut state.by_file.entry(relfilenode).or_default().rows;
        rows.live = live as i64;
        rows.dead = dead as i64;
        rows.inserted_since_vacuum = 0;
        rows.last_vacuum = Some(Utc::now());
        rows.vacuum_count += 1;
        rows.total_vacuum_ms += took.as_secs_f64() * 1e3;
    }

    /// A relation's file `from` was replaced by `to` (TRUNCATE): `to` takes over the
    /// counts of `from`; with `emptied` (the TRUNCATE committed) `to` keeps only its own
    /// live and dead rows and inserts since VACUUM, as rows of the old file are gone.
    pub fn move_counts(&self, from: u32, to: u32, emptied: bool) {
        let mut state = self.state.lock();
        let Some(old) = state.by_file.remove(&from) else {
            return;
        };
        let new = state.by_file.entry(to).or_default();
        new.counts.add(&old.counts);
        let (r, o) = (&mut new.rows, &old.rows);
        r.inserted += o.inserted;
        r.updated += o.updated;
        r.deleted += o.deleted;
        r.modified_since_analyze += o.modified_since_analyze;
        if !emptied {
            r.live += o.live;
            r.dead += o.dead;
            r.inserted_since_vacuum += o.inserted_since_vacuum;
        }
        r.last_vacuum = r.last_vacuum.max(o.last_vacuum);
        r.last_analyze = r.last_analyze.max(o.last_analyze);
        r.vacuum_count += o.vacuum_count;
        r.analyze_count += o.analyze_count;
        r.total_vacuum_ms += o.total_vacuum_ms;
        r.total_analyze_ms += o.total_analyze_ms;
    }

    /// What is kept of every relation file so far.
    pub fn snapshot(&self) -> HashMap<u32, RelationStats> {
        self.state.lock().by_file.clone()
    }

    /// A relation file was removed: its counts go with it.
    pub fn forget(&self, relfilenode: u32) {
        self.state.lock().by_file.remove(&relfilenode);
    }

    /// `pg_stat_reset()`: every relation's counts back to zero (rows of open transactions
    /// still count when those end).
    pub fn reset(&self) {
        self.state.lock().by_file.clear();
    }

    /// Each relation file's statistics (not the rows of open transactions: there are
    /// none at shutdown).
    pub(crate) fn save(&self, e: &mut Encoder) {
        let state = self.state.lock();
        e.len(state.by_file.len());
        for (relfilenode, stats) in &state.by_file {
            e.u32(*relfilenode);
            stats.counts.save(e);
            stats.rows.save(e);
        }
    }

    pub(crate) fn restore(&mut self, d: &mut Decoder<'_>) -> Result<(), Corrupt> {
        let by_file = &mut self.state.get_mut().by_file;
        for _ in 0..d.len()? {
            let relfilenode = d.u32()?;
            let counts = RelationCounts::restore(d)?;
            let rows = TableRows::restore(d)?;
            by_file.insert(relfilenode, RelationStats { counts, rows });
        }
        Ok(())
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
        pending.seq_scan(10);
        pending.seq_tuples_read(10, 100);
        pending.bitmap_tuples_fetched(10, 9);
        totals.add(&mut pending);
        let s = totals.snapshot();
        assert_eq!((s[&10].counts.hit, s[&10].counts.read), (2, 1));
        assert_eq!((s[&11].counts.hit, s[&11].counts.read), (0, 20));
        assert_eq!(s[&11].counts.last_index_scan, None);
        assert_eq!(s[&11].counts.last_seq_scan, None);
        let ix = s[&12].counts;
        assert_eq!(
            (
                ix.index_scans,
                ix.index_tuples_read,
                ix.index_tuples_fetched
            ),
            (1, 30, 7)
        );
        assert!(ix.last_index_scan.is_some());
        let t = s[&10].counts;
        assert_eq!(
            (t.seq_scans, t.seq_tuples_read, t.bitmap_tuples_fetched),
            (1, 100, 9)
        );
        assert!(t.last_seq_scan.is_some());
        totals.forget(10);
        assert!(!totals.snapshot().contains_key(&10));
        totals.reset();
        assert!(totals.snapshot().is_empty());
    }

    #[test]
    fn inserted_rows_count_when_their_transaction_ends() {
        let totals = RelationTotals::default();
        totals.changed(100, 10, RowChange::Insert, 5);
        totals.changed(100, 10, RowChange::Insert, 7);
        totals.changed(101, 10, RowChange::Insert, 3);
        totals.changed(101, 11, RowChange::Insert, 2);
        assert_eq!(totals.snapshot().get(&10), None, "nothing before the end");
        totals.end_transaction(100, true);
        totals.end_transaction(101, false);
        totals.end_transaction(102, true); // inserted nothing
        let s = totals.snapshot();
        let r = s[&10].rows;
        assert_eq!((r.inserted, r.live, r.dead), (15, 12, 3));
        assert_eq!(
            (r.modified_since_analyze, r.inserted_since_vacuum),
            (12, 15)
        );
        assert_eq!((s[&11].rows.live, s[&11].rows.dead), (0, 2));
        // Updates and deletes: committed, each leaves a dead row; aborted, only the
        // updates' new versions are dead.
        totals.changed(103, 11, RowChange::Update, 4);
        totals.changed(103, 11, RowChange::Delete, 1);
        totals.end_transaction(103, true);
        totals.changed(104, 11, RowChange::Update, 2);
        totals.changed(104, 11, RowChange::Delete, 3);
        totals.end_transaction(104, false);
        let r = totals.snapshot()[&11].rows;
        assert_eq!(
            (r.updated, r.deleted, r.live, r.dead),
            (6, 4, 0, 9),
            "live clamped"
        );
        assert_eq!(r.modified_since_analyze, 5);

        totals.analyzed(10, 11.6, 3.0, Duration::from_millis(4));
        let r = totals.snapshot()[&10].rows;
        assert_eq!((r.live, r.dead, r.modified_since_analyze), (12, 3, 0));
        assert_eq!((r.analyze_count, r.inserted_since_vacuum), (1, 15));
        assert!(r.last_analyze.is_some() && r.total_analyze_ms >= 4.0);

        totals.vacuumed(10, 12, 3, Duration::from_millis(2));
        let r = totals.snapshot()[&10].rows;
        assert_eq!(
            (r.inserted_since_vacuum, r.vacuum_count, r.inserted),
            (0, 1, 15)
        );
        assert!(r.last_vacuum.is_some());
    }

    #[test]
    fn truncate_moves_counts_to_the_new_file() {
        let totals = RelationTotals::default();
        let mut pending = PendingRelationCounts::default();
        pending.seq_scan(10);
        totals.add(&mut pending);
        totals.changed(100, 10, RowChange::Insert, 5);
        totals.end_transaction(100, true);
        // TRUNCATE, then 2 rows into the new file, all in one transaction.
        totals.changed(101, 20, RowChange::Insert, 2);
        totals.end_transaction(101, true);
        totals.move_counts(10, 20, true);
        let s = totals.snapshot();
        assert!(!s.contains_key(&10));
        let t = s[&20];
        assert_eq!((t.counts.seq_scans, t.rows.inserted), (1, 7));
        assert_eq!((t.rows.live, t.rows.modified_since_analyze), (2, 7));
        // A TRUNCATE rolled back: the old file gets everything back.
        totals.move_counts(20, 10, false);
        assert_eq!(totals.snapshot()[&10].rows.live, 2);
        totals.move_counts(30, 10, false); // nothing counted under 30: no change
        assert_eq!(totals.snapshot()[&10].rows.inserted, 7);
    }
}
