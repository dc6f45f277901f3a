//! Transactional DDL: how a transaction's CREATE, DROP and TRUNCATE are undone by ROLLBACK,
//! and what is left to do at COMMIT.
//!
//! In PostgreSQL DDL is transactional: `BEGIN; DROP TABLE t; ROLLBACK;` leaves `t` and its
//! rows as they were, and a table created in a transaction that rolls back is gone. iolab
//! changes its catalog at once (other sessions see a new table, or miss a dropped one,
//! before the transaction ends: there are no relation locks to make them wait), so each DDL
//! statement instead leaves an entry in its transaction's log saying how to undo it, and
//! the statements that would remove files keep them until COMMIT:
//!
//! | statement | at ROLLBACK (newest entry first) | at COMMIT |
//! |---|---|---|
//! | CREATE TABLE, CREATE TABLE AS, SELECT INTO | remove the table, its indexes and files | — |
//! | CREATE INDEX | remove the index and its file | — |
//! | DROP TABLE | put the table, its indexes and statistics back | remove their files |
//! | DROP INDEX | put the index back | remove its file |
//! | TRUNCATE | give the table and its indexes their old files (and the table its statistics) back, remove the new files | remove the old files |
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
//! Not covered: a server crash inside a transaction keeps the catalog as the transaction
//! left it (a dropped table stays dropped and a truncated one empty, their old files
//! orphaned; a created one stays).

use std::sync::Arc;

use iolab_catalog::{DroppedTable, IndexDef, PgResult, TableDef};
use iolab_engine::btree;
use iolab_engine::Database;

/// One DDL statement's way back (see the module comment).
#[derive(Debug)]
pub enum DdlEntry {
    CreatedTable {
        oid: u32,
    },
    CreatedIndex {
        oid: u32,
    },
    DroppedTable(DroppedTable),
    DroppedIndex(IndexDef),
    /// `table` as it was before (old relfilenode and statistics) and its new relfilenode;
    /// each index as it was before, with its new relfilenode.
    Truncated {
        table: TableDef,
        new_relfilenode: u32,
        indexes: Vec<(IndexDef, u32)>,
    },
}

/// The DDL of one transaction, oldest first.
#[derive(Default)]
pub struct DdlLog {
    db: Option<Arc<Database>>,
    entries: Vec<DdlEntry>,
}

impl DdlLog {
    pub fn record(&mut self, db: &Arc<Database>, entry: DdlEntry) {
        self.db.get_or_insert_with(|| db.clone());
        self.entries.push(entry);
    }

    /// The transaction committed: remove the files its DROPs and TRUNCATEs kept. A file
    /// that cannot be removed is logged and left (the transaction stays committed, as in
    /// PostgreSQL, which warns about it).
    pub fn commit(&mut self) {
        let (Some(db), entries) = (self.db.take(), std::mem::take(&mut self.entries)) else {
            return;
        };
        for entry in entries {
            let result = match &entry {
                DdlEntry::CreatedTable { .. } | DdlEntry::CreatedIndex { .. } => Ok(()),
                DdlEntry::DroppedTable(dropped) => {
                    remove_files(&db, dropped.table.relfilenode, &dropped.indexes)
                }
                DdlEntry::DroppedIndex(index) => btree::drop_index_files(&db, index),
                DdlEntry::Truncated { table, indexes, .. } => {
                    let old: Vec<IndexDef> =
                        indexes.iter().map(|(index, _)| index.clone()).collect();
                    remove_files(&db, table.relfilenode, &old)
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

    /// The transaction rolled back: undo its DDL, newest first.
    pub fn rollback(&mut self) {
        let (Some(db), entries) = (self.db.take(), std::mem::take(&mut self.entries)) else {
            return;
        };
        for entry in entries.iter().rev() {
            if let Err(e) = undo(&db, entry) {
                tracing::error!("could not undo DDL at ROLLBACK ({entry:?}): {}", e.message);
            }
        }
    }
}

impl Drop for DdlLog {
    fn drop(&mut self) {
        self.rollback();
    }
}

fn undo(db: &Database, entry: &DdlEntry) -> PgResult<()> {
    match entry {
        DdlEntry::CreatedTable { oid } => match db.catalog.table_by_oid(*oid) {
            Some(table) => remove_table(db, &table),
            None => Ok(()),
        },
        DdlEntry::CreatedIndex { oid } => match db.catalog.index_by_oid(*oid) {
            Some(index) => {
                db.catalog.drop_index(*oid)?;
                btree::drop_index_files(db, &index)
            }
            None => Ok(()),
        },
        DdlEntry::DroppedTable(dropped) => db.catalog.restore_table(dropped.clone()),
        DdlEntry::DroppedIndex(index) => db.catalog.create_index(index.clone()).map(drop),
        DdlEntry::Truncated {
            table,
            new_relfilenode,
            indexes,
        } => {
            db.catalog.set_relfilenode(
                table.oid,
                table.relfilenode,
                table.reltuples,
                table.relpages,
            )?;
            db.remove_relation_file(*new_relfilenode)?;
            for (index, new) in indexes {
                db.catalog
                    .set_index_relfilenode(index.oid, index.relfilenode)?;
                btree::drop_index_files(
                    db,
                    &IndexDef {
                        relfilenode: *new,
                        ..index.clone()
                    },
                )?;
            }
            Ok(())
        }
    }
}

/// Removes a table's catalog entry (its indexes' too) and their files at once.
fn remove_table(db: &Database, table: &TableDef) -> PgResult<()> {
    let dropped = db.catalog.drop_table(table.oid)?;
    remove_files(db, dropped.table.relfilenode, &dropped.indexes)
}

/// A table's file and its indexes' files (their catalog entries are gone or moved on).
fn remove_files(db: &Database, relfilenode: u32, indexes: &[IndexDef]) -> PgResult<()> {
    db.remove_relation_file(relfilenode)?;
    for index in indexes {
        btree::drop_index_files(db, index)?;
    }
    Ok(())
}
