//! Keeping a table's indexes up to date while rows are inserted (INSERT, COPY, UPDATE's
//! new versions), and INSERT … ON CONFLICT.
//!
//! The heap inserter reports each tuple it places ([`IndexMaintainer::add`]); after each
//! batch of rows [`IndexMaintainer::flush`] inserts the batch's entries into every index,
//! sorted, checking unique ones (`unique.rs`): a duplicate fails the statement with 23505,
//! and an equal key of a transaction still running is waited for.
//!
//! # ON CONFLICT
//!
//! The unique indexes named by the ON CONFLICT clause (its *arbiters*) decide which rows
//! are left out, as PostgreSQL's speculative insertion does, in two steps per row:
//!
//! 1. before the tuple is written, each arbiter is searched for the row's key
//!    ([`IndexMaintainer::conflicts`]); a live equal key leaves the row out (DO UPDATE
//!    then updates that row instead), a running transaction's is waited for first. This finds almost every conflict without writing
//!    anything, but another session may insert the key right after the search;
//! 2. so the tuple is written and its entries go in at once, arbiters first, each checked
//!    under the index's writer lock ([`IndexMaintainer::flush_row`]); a conflict found
//!    there (the race of step 1) makes the row's tuple dead — deleted by its own
//!    transaction — and the row goes back to step 1, which now finds the other row.
//!
//! A conflict in a unique index that is not an arbiter still fails the statement.

use std::sync::Arc;

use iolab_catalog::{PgResult, TableDef};

use super::key::Key;
use super::unique::{self, UniqueStop};
use super::{BtreeIndex, Tid};
use crate::accounting::IoAccount;
use crate::exec::StatementContext;
use crate::heap::codec::TupleLayout;
use crate::heap::delete::HeapDeleter;
use crate::heap::liveness::{self, Liveness};
use crate::storage::relfile::RelFile;

/// Keeps a table's indexes up to date for one statement (see the module comment).
pub struct IndexMaintainer {
    table: String,
    /// Arbiters first, when there are any.
    indexes: Vec<MaintainedIndex>,
    /// The inserting statement: its transaction judges equal keys of unique indexes, waits
    /// for the transactions it meets there, and its cancel flag ends such a wait.
    ctx: Arc<StatementContext>,
    heap: Arc<RelFile>,
}

struct MaintainedIndex {
    oid: u32,
    index: BtreeIndex,
    /// The key columns (table column numbers, in index order).
    columns: Vec<usize>,
    /// The key columns' names, for a unique index (its error message names them).
    unique_columns: Option<Vec<String>>,
    /// An ON CONFLICT DO NOTHING arbiter.
    arbiter: bool,
    /// Entries of the current batch; at most one batch of rows.
    pending: Vec<(Vec<Key<'static>>, Tid)>,
}

impl MaintainedIndex {
    /// The index key of a tuple encoded with `layout`.
    fn key_of(&self, layout: &TupleLayout, tuple: &[u8]) -> PgResult<Vec<Key<'static>>> {
        (self.columns.iter())
            .map(|&c| Ok(Key::from_datum(layout.datum(tuple, c)?).into_owned()))
            .collect()
    }
}

impl IndexMaintainer {
    /// The maintainer of `table`'s indexes for a statement; `None` when it has none.
    pub fn for_table(
        ctx: &Arc<StatementContext>,
        table: &TableDef,
    ) -> PgResult<Option<IndexMaintainer>> {
        let db = &ctx.db;
        let defs = db.catalog.indexes_of(table.oid);
        if defs.is_empty() {
            return Ok(None);
        }
        let indexes = defs
            .iter()
            .map(|def| {
                Ok(MaintainedIndex {
                    oid: def.oid,
                    index: BtreeIndex::open(db, def)?,
                    columns: def.columns.clone(),
                    unique_columns: def.unique.then(|| {
                        (def.columns.iter())
                            .map(|&c| table.columns[c].name.clone())
                            .collect()
                    }),
                    arbiter: false,
                    pending: Vec::new(),
                })
            })
            .collect::<PgResult<_>>()?;
        Ok(Some(IndexMaintainer {
            table: table.name.clone(),
            indexes,
            ctx: ctx.clone(),
            heap: db.relfile(table.relfilenode)?,
        }))
    }

    /// Makes the unique indexes `oids` the ON CONFLICT DO NOTHING arbiters.
    pub fn set_arbiters(&mut self, oids: &[u32]) {
        for ix in &mut self.indexes {
            ix.arbiter = oids.contains(&ix.oid);
            assert!(
                !ix.arbiter || ix.unique_columns.is_some(),
                "an arbiter is a unique index"
            );
        }
        self.indexes.sort_by_key(|ix| !ix.arbiter);
    }

    /// Are there arbiters (an ON CONFLICT DO NOTHING insert)?
    pub fn has_arbiters(&self) -> bool {
        self.indexes.first().is_some_and(|ix| ix.arbiter)
    }

    /// A tuple (as encoded with `layout`) was placed at `tid`.
    pub fn add(&mut self, layout: &TupleLayout, tuple: &[u8], tid: Tid) -> PgResult<()> {
        for ix in &mut self.indexes {
            let key = ix.key_of(layout, tuple)?;
            ix.pending.push((key, tid));
        }
        Ok(())
    }

    /// Inserts the entries added since the last flush.
    pub fn flush(&mut self, acct: &mut IoAccount) -> PgResult<()> {
        for ix in &mut self.indexes {
            let result = match ix.unique_columns.is_some() {
                false => ix.index.insert_entries(&mut ix.pending, &self.table, acct),
                true => insert_unique(&self.ctx, &self.heap, ix, &self.table, acct).map(|_| ()),
            };
            ix.pending.clear();
            result?;
        }
        Ok(())
    }

    /// Step 1 of ON CONFLICT (module comment): the live row that has the key of the tuple
    /// (encoded with `layout`) in an arbiter, if any. Waits for running transactions met.
    pub fn conflicts(
        &self,
        layout: &TupleLayout,
        tuple: &[u8],
        acct: &mut IoAccount,
    ) -> PgResult<Option<Tid>> {
        let db = &self.ctx.db;
        let mut judge = |tid: Tid, acct: &mut IoAccount| {
            liveness::liveness(
                &db.pool,
                &self.heap,
                db.txns.clog(),
                &self.ctx.snapshot.own,
                tid,
                acct,
            )
        };
        for ix in self.indexes.iter().take_while(|ix| ix.arbiter) {
            let key = ix.key_of(layout, tuple)?;
            if key.iter().any(Key::is_null) {
                continue; // NULLs are distinct
            }
            loop {
                match ix.index.first_conflict(&key, &mut judge, acct)? {
                    None => break,
                    Some((_, Liveness::InProgress(holder))) => self.wait_for(holder)?,
                    Some((tid, _)) => return Ok(Some(tid)),
                }
            }
        }
        Ok(None)
    }

    /// Step 2 of ON CONFLICT: inserts the entries of the one tuple added since the last
    /// flush. `false`: an arbiter had its key after all; the tuple is now dead and has no
    /// entries beyond the arbiters checked before.
    pub fn flush_row(&mut self, acct: &mut IoAccount) -> PgResult<bool> {
        let mut conflict = None;
        for ix in &mut self.indexes {
            assert!(ix.pending.len() <= 1, "one row at a time");
            let result = match ix.unique_columns.is_some() {
                _ if conflict.is_some() => Ok(true),
                false => ix
                    .index
                    .insert_entries(&mut ix.pending, &self.table, acct)
                    .map(|()| true),
                true => insert_unique(&self.ctx, &self.heap, ix, &self.table, acct),
            };
            if !result.as_ref().is_ok_and(|kept| *kept) {
                conflict = ix.pending.first().map(|(_, tid)| *tid);
            }
            ix.pending.clear();
            result?;
        }
        match conflict {
            None => Ok(true),
            Some(tid) => self.kill(tid, acct).map(|()| false),
        }
    }

    /// Makes the tuple this statement just wrote at `tid` dead: deleted by its own
    /// transaction (visible to nobody, removable by VACUUM once the transaction ends).
    fn kill(&mut self, tid: Tid, acct: &mut IoAccount) -> PgResult<()> {
        let ctx = &self.ctx;
        let mut deleter = HeapDeleter::new(ctx, self.heap.clone(), std::mem::take(acct), true)?;
        let result = deleter.delete(tid, &|| ctx.check_cancel());
        *acct = std::mem::take(&mut deleter.acct);
        result.map(|_| ())
    }

    fn wait_for(&self, holder: crate::txn::Xid) -> PgResult<()> {
        self.ctx.wait_for_transaction(holder)
    }
}

/// Inserts the pending entries of unique index `ix`, waiting for the transactions that
/// hold equal keys (see `unique.rs`). A live equal key fails with 23505, or for an arbiter
/// returns `false` (the entries before it are in).
fn insert_unique(
    ctx: &StatementContext,
    heap: &Arc<RelFile>,
    ix: &mut MaintainedIndex,
    table: &str,
    acct: &mut IoAccount,
) -> PgResult<bool> {
    let db = &ctx.db;
    let mut judge = |tid: Tid, acct: &mut IoAccount| {
        liveness::liveness(&db.pool, heap, db.txns.clog(), &ctx.snapshot.own, tid, acct)
    };
    let mut from = 0;
    loop {
        let entries = &mut ix.pending[from..];
        match ix
            .index
            .insert_checked(entries, table, acct, Some(&mut judge))?
        {
            Ok(()) => return Ok(true),
            Err(UniqueStop::Duplicate(_)) if ix.arbiter => return Ok(false),
            Err(UniqueStop::Duplicate(i)) => {
                let key = &entries[i].0;
                let types = ix.index.key_columns().types();
                let columns = ix.unique_columns.as_deref().expect("a unique index");
                return Err(unique::duplicate_key(ix.index.name(), columns, types, key));
            }
            Err(UniqueStop::WaitFor { holder, next }) => {
                from += next;
                ctx.wait_for_transaction(holder)?;
            }
        }
    }
}

#[cfg(test)]
mod tests {

    use datafusion::arrow::array::{ArrayRef, Int32Array};
    use iolab_catalog::{ColumnDef, IndexDef, Persistence, PgType};

    use super::*;
    use crate::heap::heapam::HeapInserter;
    use crate::heap::tuple;
    use crate::storage::page;
    use crate::storage::relfile::tests::TempDir;
    use crate::{Database, DatabaseOptions};

    /// Step 2 of ON CONFLICT (module comment): a tuple whose key another transaction
    /// committed after step 1 looked is made dead, and gets no entry.
    #[test]
    fn a_conflict_met_at_the_insert_kills_the_tuple() {
        let dir = TempDir::new("maintain-speculative");
        let mut options = DatabaseOptions {
            shared_buffers: 64,
            ..DatabaseOptions::default()
        };
        options.aio.method = iolab_settings::IoMethod::Sync;
        let db = Database::open(&dir.0, &options).unwrap();
        let column = ColumnDef {
            name: "a".into(),
            ty: PgType::Int4,
            not_null: false,
        };
        let table = (db.catalog)
            .create_table("public", "t", Persistence::Permanent, vec![column], false)
            .unwrap()
            .unwrap();
        db.create_relation_file(&table).unwrap();
        let ctx = |xid| Arc::new(StatementContext::for_tests(&db, xid));
        let oid = db.catalog.allocate_oid().unwrap();
        let def = IndexDef {
            unique: true,
            ..IndexDef::on_column(oid, "t_a_key".into(), &table, 0)
        };
        super::super::create_index(&db, &ctx(0), &table, &def).unwrap();
        let rel = db.relfile(table.relfilenode).unwrap();
        let one: Vec<ArrayRef> = vec![Arc::new(Int32Array::from(vec![1]))];
        let inserter = |xid| {
            HeapInserter::new(
                db.pool.clone(),
                rel.clone(),
                vec![PgType::Int4],
                xid,
                0,
                IoAccount::default(),
            )
        };

        // Transaction 1 inserts a = 1 through the index and commits.
        let first = db.txns.begin().unwrap();
        let maintainer = IndexMaintainer::for_table(&ctx(first), &table).unwrap();
        let mut ins = inserter(first).with_indexes(maintainer);
        ins.insert_arrays(&one, 1).unwrap();
        ins.finish();
        db.txns.commit(first).unwrap();

        // Transaction 2 wrote a = 1 to the heap after its step 1 found nothing (before
        // transaction 1 committed); now its entry goes in as step 2 does.
        let second = db.txns.begin().unwrap();
        let mut heap_only = inserter(second).keep_placed();
        heap_only.insert_arrays(&one, 1).unwrap();
        let tid = heap_only.placed()[0];
        heap_only.finish();
        let mut maintainer = IndexMaintainer::for_table(&ctx(second), &table)
            .unwrap()
            .unwrap();
        maintainer.set_arbiters(&[oid]);
        let mut acct = IoAccount::default();
        let tuple = {
            let buffer = db.pool.read_buffer(&rel, tid.0, None, &mut acct).unwrap();
            let page = buffer.page();
            page::page_item(&page, tid.1).unwrap().to_vec()
        };
        let layout = TupleLayout::new(vec![PgType::Int4]);
        maintainer.add(&layout, &tuple, tid).unwrap();
        assert!(!maintainer.flush_row(&mut acct).unwrap(), "a conflict");

        // The tuple is deleted by its own transaction, and key 1 has transaction 1's
        // entry only.
        let buffer = db.pool.read_buffer(&rel, tid.0, None, &mut acct).unwrap();
        let xmax = tuple::xmax(page::page_item(&buffer.page(), tid.1).unwrap());
        assert_eq!(xmax, second);
        let index = BtreeIndex::open(&db, &def).unwrap();
        let entries = index.equal_key_tids(&[Key::Int(1)], &mut acct).unwrap();
        assert_eq!(entries.len(), 1);
        assert_ne!(entries[0], tid);
        // Step 1 now finds transaction 1's row.
        let conflict = maintainer.conflicts(&layout, &tuple, &mut acct).unwrap();
        assert_eq!(conflict, Some(entries[0]));
    }
}
