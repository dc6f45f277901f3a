//! Transactional DDL: how a transaction's CREATE, DROP and TRUNCATE are undone by ROLLBACK,
//! and what is left to do at COMMIT.
//!
//! In PostgreSQL DDL is transactional: `BEGIN; DROP TABLE t; ROLLBACK;` leaves `t` and its
//! rows as they were, and a table created in a transaction that rolls back is gone. iolab
//! changes its catalog at once (other sessions see a new table before the transaction
//! ends; one naming a dropped table waits for the drop's lock, found through
//! [`dropped_by_open_transaction`]), so each DDL statement instead leaves an entry in its
//! transaction's log saying how to undo it, and the statements that would remove files
//! keep them until COMMIT:
//!
//! | statement | at ROLLBACK (newest entry first) | at COMMIT |
//! |---|---|---|
//! | CREATE TABLE, CREATE TABLE AS, SELECT INTO | remove the table, its indexes, the sequences its columns own, and their files | — |
//! | CREATE INDEX | remove the index and its file | — |
//! | DROP TABLE | put the table, its indexes, statistics, defaults and owned sequences back | remove their files |
//! | DROP INDEX | put the index back | remove its file |
//! | CREATE SEQUENCE | remove the sequence and its position file | — |
//! | DROP SEQUENCE | put the sequence back | remove its position file |
//! | CREATE VIEW | remove the view | — |
//! | CREATE OR REPLACE VIEW of an existing view | put the old definition back | — |
//! | DROP VIEW (also a view dropped by CASCADE) | put the view back | — |
//! | TRUNCATE | give the table and its indexes their old files (and the table its statistics) back, with the activity counted meanwhile (`pg_stat_*`), remove the new files | move the activity counted under the old files to the new ones, remove the old files |
//! | ALTER … RENAME TO (any relation) | give the relation its old name back | — |
//! | ALTER TABLE changing columns or storage parameters (each subcommand) | put the table's state from before back: definition, defaults, indexes, statistics, owned sequences (`iolab_catalog::alter`) | — |
//! | ALTER INDEX … SET / RESET (…) | put the old storage parameters back | — |
//!
//! ALTER TABLE … DROP COLUMN also logs the indexes and the owned sequence it drops with the
//! column as DROP INDEX / DROP SEQUENCE would (their files go at COMMIT), and the views
//! CASCADE drops, each *before* the table's state: undoing newest first, the state comes
//! back first (with those indexes and the sequence), and their own entries find them there.
//!
//! TRUNCATE therefore gives the indexes new, empty files as it gives the table one, rather
//! than emptying them in place.
//!
//! A statement outside a transaction block has a log of its own, committed when it succeeds
//! and rolled back when it fails (so a CREATE TABLE AS whose query fails leaves no table).
//! A log dropped with entries (the session ended inside a block, or a statement's future was
//! dropped) rolls back. Undoing is best effort: a step that fails (say, a table's name was
//! taken by another session meanwhile) is logged and the others still run.
//!
//! # Crashes
//!
//! Every open transaction's entries are also in `global/pending_ddl.json`, rewritten (and
//! fsynced) whenever they change; a DROP or TRUNCATE writes its entry *before* it changes
//! the catalog, and COMMIT forgets the entries before it removes any file. A transaction
//! with an id (it also changed rows) first writes that id beside its entries, then its
//! commit record to the WAL ([`DdlLog::committing`]). At start-up, after redo,
//! ([`recover`]) the entries left in the file belong to transactions that either never
//! committed, and are undone as a ROLLBACK would, or committed (their id is committed in
//! the commit log: the crash came between the commit record and the forgetting), and are
//! completed as COMMIT would. Every step is a no-op when already done, so a crash during
//! a rollback or during recovery is recovered too. A crash between creating a table or
//! index and writing its entry leaves that (empty) relation in place.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use iolab_catalog::alter::TableState;
use iolab_catalog::store::write_durably;
use iolab_catalog::{DroppedTable, IndexDef, PgError, PgResult, SequenceDef, TableDef, ViewDef};
use iolab_engine::btree;
use iolab_engine::txn::{Xid, XidStatus};
use iolab_engine::Database;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

/// One DDL statement's way back (see the module comment).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum DdlEntry {
    CreatedTable {
        oid: u32,
    },
    CreatedIndex {
        oid: u32,
    },
    DroppedTable(DroppedTable),
    DroppedIndex(IndexDef),
    CreatedSequence {
        oid: u32,
    },
    DroppedSequence(SequenceDef),
    CreatedView {
        oid: u32,
    },
    /// The definition a CREATE OR REPLACE VIEW replaced.
    ReplacedView(ViewDef),
    DroppedView(ViewDef),
    /// `table` as it was before (old relfilenode and statistics) and its new relfilenode;
    /// each index as it was before, with its new relfilenode.
    Truncated {
        table: TableDef,
        new_relfilenode: u32,
        indexes: Vec<(IndexDef, u32)>,
    },
    /// Relation `oid` was called `old_name`.
    Renamed {
        oid: u32,
        old_name: String,
    },
    /// A table's columns or storage parameters before one ALTER TABLE subcommand.
    AlteredTable(Box<TableState>),
    /// Index `oid`'s storage parameters before ALTER INDEX … SET / RESET.
    AlteredIndexOptions {
        oid: u32,
        reloptions: Vec<String>,
    },
    /// REINDEX gave `index` (as it was before) the new file `new_relfilenode`.
    Reindexed {
        index: IndexDef,
        new_relfilenode: u32,
    },
    /// CLUSTER marked an index of table `table_oid`; `index` was marked before.
    ClusteredOn {
        table_oid: u32,
        index: Option<u32>,
    },
}

/// The DDL of one transaction, oldest first.
#[derive(Default)]
pub struct DdlLog {
    db: Option<Arc<Database>>,
    /// This log's key in the pending file (0 until the first entry).
    txn: u64,
    /// The transaction's id, once it is about to commit with one.
    xid: Option<Xid>,
    entries: Vec<DdlEntry>,
}

impl DdlLog {
    /// Adds `entry` and writes it to the pending file before returning: a statement whose
    /// undo must survive a crash records it before changing anything.
    pub fn record(&mut self, db: &Arc<Database>, entry: DdlEntry) -> PgResult<()> {
        self.db.get_or_insert_with(|| db.clone());
        if self.txn == 0 {
            self.txn = NEXT_TXN.fetch_add(1, Ordering::Relaxed);
        }
        self.entries.push(entry);
        self.persist()
    }

    /// Adds an index TRUNCATE gave a new file to the newest entry (a `Truncated` one), and
    /// writes it to the pending file.
    pub fn record_truncated_index(&mut self, index: IndexDef, new: u32) -> PgResult<()> {
        match self.entries.last_mut() {
            Some(DdlEntry::Truncated { indexes, .. }) => indexes.push((index, new)),
            _ => return Err(PgError::internal("no TRUNCATE entry to add an index to")),
        }
        self.persist()
    }

    /// The transaction is about to write its commit record as `xid`: the pending file
    /// says so first, so that recovery after a crash before [`commit`](Self::commit)
    /// completes this DDL instead of undoing it.
    pub fn committing(&mut self, xid: Xid) -> PgResult<()> {
        if self.entries.is_empty() {
            return Ok(());
        }
        self.xid = Some(xid);
        self.persist()
    }

    fn persist(&self) -> PgResult<()> {
        match PENDING.get() {
            Some(pending) => pending.set(self.txn, self.xid, &self.entries),
            None => Ok(()),
        }
    }

    /// Drops the entries from the pending file (the transaction has ended).
    fn forget(&self) {
        if let Some(pending) = PENDING.get() {
            if let Err(e) = pending.set(self.txn, None, &[]) {
                tracing::warn!("could not update {}: {}", pending.path.display(), e.message);
            }
        }
    }

    /// The transaction committed: forget its entries, then [`complete`] them.
    pub fn commit(&mut self) {
        let (Some(db), entries) = (self.db.take(), std::mem::take(&mut self.entries)) else {
            return;
        };
        self.forget();
        complete(&db, entries);
    }

    /// The transaction rolled back: undo its DDL, newest first.
    pub fn rollback(&mut self) {
        let (Some(db), entries) = (self.db.take(), std::mem::take(&mut self.entries)) else {
            return;
        };
        undo_all(&db, &entries);
        self.forget();
    }

    /// How many entries the log holds: a savepoint's mark for
    /// [`rollback_to`](Self::rollback_to).
    pub fn mark(&self) -> usize {
        self.entries.len()
    }

    /// ROLLBACK TO SAVEPOINT: undoes the DDL after the first `kept` entries, newest
    /// first; the pending file keeps the rest.
    pub fn rollback_to(&mut self, kept: usize) {
        let Some(db) = self.db.clone() else {
            return;
        };
        if kept >= self.entries.len() {
            return;
        }
        undo_all(&db, &self.entries[kept..]);
        self.entries.truncate(kept);
        if let Err(e) = self.persist() {
            tracing::warn!("could not update the pending DDL file: {}", e.message);
        }
    }
}

impl Drop for DdlLog {
    fn drop(&mut self) {
        self.rollback();
    }
}

/// Undoes `entries`, newest first (best effort: see the module comment).
fn undo_all(db: &Arc<Database>, entries: &[DdlEntry]) {
    for entry in entries.iter().rev() {
        if let Err(e) = undo(db, entry) {
            tracing::error!("could not undo DDL at ROLLBACK ({entry:?}): {}", e.message);
        }
    }
}

/// What COMMIT does once the transaction's entries are forgotten: remove the files its
/// DROPs and TRUNCATEs kept (and move TRUNCATE's activity counts to the new files). A file
/// that cannot be removed is logged and left (the transaction stays committed, as in
/// PostgreSQL, which warns about it).
fn complete(db: &Database, entries: Vec<DdlEntry>) {
    for entry in entries {
        let result = match &entry {
            DdlEntry::CreatedTable { .. }
            | DdlEntry::CreatedIndex { .. }
            | DdlEntry::CreatedSequence { .. }
            | DdlEntry::CreatedView { .. }
            | DdlEntry::ReplacedView(_)
            | DdlEntry::DroppedView(_)
            | DdlEntry::Renamed { .. }
            | DdlEntry::AlteredTable(_)
            | DdlEntry::AlteredIndexOptions { .. }
            | DdlEntry::ClusteredOn { .. } => Ok(()),
            DdlEntry::DroppedTable(dropped) => remove_sequence_files(db, &dropped.sequences)
                .and_then(|()| remove_files(db, dropped.table.relfilenode, &dropped.indexes)),
            DdlEntry::DroppedSequence(def) => db.catalog.sequence_values.remove(def.oid),
            DdlEntry::DroppedIndex(index) => btree::drop_index_files(db, index),
            DdlEntry::Truncated {
                table,
                new_relfilenode,
                indexes,
            } => {
                let counts = &db.io_stats.relation_counts;
                counts.move_counts(table.relfilenode, *new_relfilenode, true);
                for (old, new) in indexes {
                    counts.move_counts(old.relfilenode, *new, true);
                }
                remove_files(db, table.relfilenode, indexes.iter().map(|(old, _)| old))
            }
            DdlEntry::Reindexed {
                index,
                new_relfilenode,
            } => {
                (db.io_stats.relation_counts).move_counts(
                    index.relfilenode,
                    *new_relfilenode,
                    true,
                );
                btree::drop_index_files(db, index)
            }
        };
        if let Err(e) = result {
            tracing::warn!(
                "could not remove files at COMMIT ({entry:?}): {}",
                e.message
            );
        }
    }
}

fn undo(db: &Database, entry: &DdlEntry) -> PgResult<()> {
    match entry {
        DdlEntry::CreatedTable { oid } => match db.catalog.table_by_oid(*oid) {
            Some(table) => db.remove_table(table.oid),
            None => Ok(()),
        },
        DdlEntry::CreatedIndex { oid } => match db.catalog.index_by_oid(*oid) {
            Some(index) => {
                db.catalog.drop_index(*oid)?;
                btree::drop_index_files(db, &index)
            }
            None => Ok(()),
        },
        DdlEntry::DroppedTable(dropped) => match db.catalog.table_by_oid(dropped.table.oid) {
            Some(_) => Ok(()), // put back already
            None => db.catalog.restore_table(dropped.clone()),
        },
        DdlEntry::DroppedIndex(index) => match db.catalog.index_by_oid(index.oid) {
            Some(_) => Ok(()),
            None => db.catalog.create_index(index.clone()).map(drop),
        },
        DdlEntry::CreatedSequence { oid } => {
            if db.catalog.sequence_by_oid(*oid).is_some() {
                db.catalog.drop_sequence(*oid)?;
            }
            db.catalog.sequence_values.remove(*oid)
        }
        DdlEntry::DroppedSequence(def) => match db.catalog.sequence_by_oid(def.oid) {
            Some(_) => Ok(()),
            None => db.catalog.restore_sequence(def.clone()),
        },
        DdlEntry::CreatedView { oid } => match db.catalog.view_by_oid(*oid) {
            Some(_) => db.catalog.drop_view(*oid).map(drop),
            None => Ok(()),
        },
        DdlEntry::ReplacedView(def) | DdlEntry::DroppedView(def) => {
            db.catalog.restore_view(def.clone())
        }
        DdlEntry::Renamed { oid, old_name } => match db.catalog.rename_relation(*oid, old_name) {
            // Gone (its creation undone, or dropped): nothing to rename.
            Err(e) if e.code == iolab_catalog::sqlstate::INTERNAL_ERROR => Ok(()),
            other => other.map(drop),
        },
        DdlEntry::AlteredTable(state) => db.catalog.put_table_state((**state).clone()),
        DdlEntry::ClusteredOn { table_oid, index } => {
            db.catalog.set_clustered_index(*table_oid, *index).map(drop)
        }
        DdlEntry::AlteredIndexOptions { oid, reloptions } => match db.catalog.index_by_oid(*oid) {
            Some(_) => db
                .catalog
                .set_index_reloptions(*oid, reloptions.clone())
                .map(drop),
            None => Ok(()),
        },
        DdlEntry::Truncated {
            table,
            new_relfilenode,
            indexes,
        } => {
            if db.catalog.table_by_oid(table.oid).is_some() {
                db.catalog.set_relfilenode(
                    table.oid,
                    table.relfilenode,
                    table.reltuples,
                    table.relpages,
                )?;
            }
            let counts = &db.io_stats.relation_counts;
            counts.move_counts(*new_relfilenode, table.relfilenode, false);
            db.remove_relation_file(*new_relfilenode)?;
            for (index, new) in indexes {
                undo_index_file(db, index, *new)?;
            }
            Ok(())
        }
        DdlEntry::Reindexed {
            index,
            new_relfilenode,
        } => undo_index_file(db, index, *new_relfilenode),
    }
}

/// Gives `index` its old file back (if it still exists) and removes its new file `new`,
/// moving the activity counted meanwhile to the old one.
fn undo_index_file(db: &Database, index: &IndexDef, new: u32) -> PgResult<()> {
    (db.io_stats.relation_counts).move_counts(new, index.relfilenode, false);
    if db.catalog.index_by_oid(index.oid).is_some() {
        db.catalog
            .set_index_relfilenode(index.oid, index.relfilenode)?;
    }
    btree::drop_index_files(
        db,
        &IndexDef {
            relfilenode: new,
            ..index.clone()
        },
    )
}

/// The position files of dropped sequences.
fn remove_sequence_files(db: &Database, sequences: &[SequenceDef]) -> PgResult<()> {
    for s in sequences {
        db.catalog.sequence_values.remove(s.oid)?;
    }
    Ok(())
}

/// A table's file and its indexes' files (their catalog entries are gone or moved on).
fn remove_files<'a>(
    db: &Database,
    relfilenode: u32,
    indexes: impl IntoIterator<Item = &'a IndexDef>,
) -> PgResult<()> {
    db.remove_relation_file(relfilenode)?;
    for index in indexes {
        btree::drop_index_files(db, index)?;
    }
    Ok(())
}

/// Keys of transaction logs in the pending file, unique within a server run.
static NEXT_TXN: AtomicU64 = AtomicU64::new(1);

/// The server's pending file, once [`recover`] has run (a process serves one data
/// directory; without it, as in unit tests, logs are kept in memory only).
static PENDING: OnceLock<PendingFile> = OnceLock::new();

/// `global/pending_ddl.json`: the entries of every transaction still open, by log key.
struct PendingFile {
    path: PathBuf,
    open: Mutex<BTreeMap<u64, PendingTxn>>,
}

/// One open transaction's entries in the pending file, and its id once it is committing.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct PendingTxn {
    xid: Option<Xid>,
    entries: Vec<DdlEntry>,
}

impl PendingFile {
    /// Sets one log's entries (none: forget it) and rewrites the file: a new file, fsynced,
    /// renamed over the old one; no file when nothing is open.
    fn set(&self, txn: u64, xid: Option<Xid>, entries: &[DdlEntry]) -> PgResult<()> {
        let mut open = self.open.lock();
        if entries.is_empty() {
            if open.remove(&txn).is_none() {
                return Ok(());
            }
        } else {
            let entries = entries.to_vec();
            open.insert(txn, PendingTxn { xid, entries });
        }
        write_pending(&self.path, &open)
            .map_err(|e| PgError::io(&format!("could not write \"{}\"", self.path.display()), &e))
    }
}

/// The oid of table or view `schema.name` if a transaction still open dropped it. The
/// catalog has lost the name, but the drop's AccessExclusiveLock holds to that
/// transaction's end: a statement naming the relation waits for it, as in PostgreSQL.
pub fn dropped_by_open_transaction(schema: &str, name: &str) -> Option<u32> {
    let open = PENDING.get()?.open.lock();
    let mut entries = open.values().flat_map(|txn| &txn.entries);
    entries.find_map(|entry| match entry {
        DdlEntry::DroppedTable(d) if d.table.schema == schema && d.table.name == name => {
            Some(d.table.oid)
        }
        DdlEntry::DroppedView(v) if v.schema == schema && v.name == name => Some(v.oid),
        _ => None,
    })
}

fn write_pending(path: &Path, open: &BTreeMap<u64, PendingTxn>) -> std::io::Result<()> {
    if open.is_empty() {
        return match std::fs::remove_file(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    }
    let bytes = serde_json::to_vec(open).map_err(std::io::Error::other)?;
    write_durably(path, &bytes)
}

/// What [`recover`] did with the entries a crash left in the pending file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Entries of transactions that never committed, undone.
    pub undone: usize,
    /// Entries of transactions whose commit record was written, completed.
    pub completed: usize,
}

/// At start-up, after redo and before any session: undoes the DDL of transactions a crash
/// left open and completes that of transactions it caught between their commit record and
/// the end of their COMMIT (the entries in the pending file), then keeps the file for this
/// run.
pub fn recover(db: &Arc<Database>) -> PgResult<Recovered> {
    let path = db.data_dir().join("global").join("pending_ddl.json");
    let left: BTreeMap<u64, PendingTxn> = match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| PgError::internal(format!("\"{}\" is corrupt: {e}", path.display())))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
        Err(e) => {
            return Err(PgError::io(
                &format!("could not read \"{}\"", path.display()),
                &e,
            ))
        }
    };
    let mut recovered = Recovered::default();
    for txn in left.into_values().rev() {
        let committed = txn
            .xid
            .is_some_and(|xid| db.txns.clog().status(xid) == XidStatus::Committed);
        if committed {
            recovered.completed += txn.entries.len();
            complete(db, txn.entries);
        } else {
            for entry in txn.entries.iter().rev() {
                undo(db, entry)?;
                recovered.undone += 1;
            }
        }
    }
    write_pending(&path, &BTreeMap::new())
        .map_err(|e| PgError::io(&format!("could not remove \"{}\"", path.display()), &e))?;
    let _ = PENDING.set(PendingFile {
        path,
        open: Mutex::new(BTreeMap::new()),
    });
    Ok(recovered)
}
