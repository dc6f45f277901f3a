//! A session's temporary relations (`CREATE TEMP TABLE`) and its local buffers.
//!
//! As in PostgreSQL, a session that creates its first temporary table gets a schema of its
//! own, `pg_temp_N` (N: the lowest number no live session holds), and a pool of **local
//! buffers**: `temp_buffers` frames that only this session uses. The tables and indexes it
//! creates there live in the catalog like any other (so `pg_class`, `\d` and the planner
//! see them) with persistence `t`; their files are never logged, never fsynced, and their
//! blocks are cached only in the local buffers: each relation file is tied to that pool
//! when opened ([`RelFile::set_local_buffers`](crate::storage::relfile::RelFile)), and
//! the buffer pool's entry points forward a temporary relation's requests to it
//! ([`BufferPool::serving`]). Their I/O is counted as `local` blocks in EXPLAIN and as
//! object `temp relation` in `pg_stat_io`.
//!
//! The schema, its tables and the local buffers go when the [`TempSpace`] is dropped (the
//! session ends). Tables left by a server that stopped without ending its sessions are
//! removed at the next start ([`remove_orphans`]).
//!
//! Bounds: one pool of `temp_buffers` frames per session that uses temporary tables,
//! mapped at first use and backed by the kernel page by page as frames are first used.

use std::sync::Arc;

use iolab_catalog::{sqlstate, Persistence, PgError, PgResult};

use crate::buffer::BufferPool;
use crate::Database;

pub use iolab_catalog::store::{is_temp_schema, TEMP_SCHEMA_PREFIX};

/// One session's temporary schema and local buffers. Dropping it drops the schema's
/// tables.
pub struct TempSpace {
    db: Arc<Database>,
    /// `pg_temp_N`.
    pub schema: String,
    /// The session's local buffers.
    pub buffers: Arc<BufferPool>,
}

impl TempSpace {
    /// Claims the lowest free `pg_temp_N` and maps `nbuffers` local buffers for it.
    /// Tables still in the schema (left by a session whose cleanup failed) are removed
    /// first, as PostgreSQL does when a backend takes over a temporary schema.
    pub fn create(db: &Arc<Database>, nbuffers: usize) -> PgResult<TempSpace> {
        let buffers = BufferPool::new_local(nbuffers)?;
        let schema = {
            let mut taken = db.local_buffers.lock();
            taken.retain(|_, w| w.strong_count() > 0);
            let n = (1..)
                .find(|n| !taken.contains_key(&format!("{TEMP_SCHEMA_PREFIX}{n}")))
                .expect("a free number");
            let schema = format!("{TEMP_SCHEMA_PREFIX}{n}");
            taken.insert(schema.clone(), Arc::downgrade(&buffers));
            schema
        };
        let space = TempSpace {
            db: Arc::clone(db),
            schema,
            buffers,
        };
        space.drop_tables()?;
        Ok(space)
    }

    /// Drops every table (and with it its indexes and owned sequences) of the schema.
    fn drop_tables(&self) -> PgResult<()> {
        drop_tables_where(&self.db, |t| t.schema == self.schema)
    }
}

impl Drop for TempSpace {
    fn drop(&mut self) {
        if let Err(e) = self.drop_tables() {
            tracing::error!("could not remove temporary schema {}: {e}", self.schema);
        }
    }
}

/// The temporary schemas of the sessions that have one, by name.
pub fn live_schemas(db: &Database) -> Vec<String> {
    let all = db.local_buffers.lock();
    let mut names: Vec<String> = all
        .iter()
        .filter(|(_, w)| w.strong_count() > 0)
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();
    names
}

/// PostgreSQL's error for touching another session's temporary relation.
pub fn other_sessions_error() -> PgError {
    PgError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        "cannot access temporary tables of other sessions",
    )
}

/// At start-up: no session exists yet, so every temporary table in the catalog is left
/// over from the last run; remove them.
pub(crate) fn remove_orphans(db: &Database) -> PgResult<()> {
    drop_tables_where(db, |t| t.persistence == Persistence::Temporary)
}

fn drop_tables_where(
    db: &Database,
    which: impl Fn(&iolab_catalog::TableDef) -> bool,
) -> PgResult<()> {
    for table in db.catalog.tables().into_iter().filter(|t| which(t)) {
        assert_eq!(table.persistence, Persistence::Temporary);
        db.remove_table(table.oid)?;
    }
    Ok(())
}

/// A session's hold on its temporary schema: empty until its first temporary table.
/// Shared by the session, its statements and its DataFusion schema (which looks
/// unqualified names up in the temporary schema first).
#[derive(Default)]
pub struct SessionTemp {
    space: std::sync::OnceLock<TempSpace>,
    /// Tables created `ON COMMIT DELETE ROWS` or `ON COMMIT DROP`, by OID.
    on_commit: parking_lot::Mutex<Vec<(u32, OnCommit)>>,
}

/// What happens to a temporary table when a transaction commits (`ON COMMIT …`; the
/// default, `PRESERVE ROWS`, is nothing).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnCommit {
    DeleteRows,
    Drop,
}

impl SessionTemp {
    /// `pg_temp_N`, once the session has one.
    pub fn schema(&self) -> Option<&str> {
        self.space.get().map(|s| s.schema.as_str())
    }

    /// Table `oid` (temporary, just created) is to be emptied or dropped at commit.
    pub fn on_commit(&self, oid: u32, action: OnCommit) {
        self.on_commit.lock().push((oid, action));
    }

    /// The session's transaction ended. After a commit its `ON COMMIT DELETE ROWS`
    /// tables are emptied and its `ON COMMIT DROP` tables dropped, in place: the session
    /// alone sees them. (PostgreSQL does both just before the commit, inside the
    /// transaction; the difference cannot be observed.) A table whose creation was rolled
    /// back is forgotten.
    pub fn transaction_ended(&self, db: &Database, committed: bool) -> PgResult<()> {
        let mut actions = self.on_commit.lock();
        actions.retain(|(oid, _)| db.catalog.table_by_oid(*oid).is_some());
        if !committed {
            return Ok(());
        }
        let mut result = Ok(());
        actions.retain(|&(oid, action)| {
            let done = match action {
                OnCommit::DeleteRows => match db.catalog.table_by_oid(oid) {
                    Some(table) => db.empty_table_in_place(&table),
                    None => Ok(()),
                },
                OnCommit::Drop => db.remove_table(oid),
            };
            if let Err(e) = done {
                result = Err(e);
            }
            action == OnCommit::DeleteRows
        });
        result
    }

    /// The session's temporary schema, if it has made one.
    pub fn space_if_made(&self) -> Option<&TempSpace> {
        self.space.get()
    }

    /// The session's temporary schema, made now (with `nbuffers` local buffers) if it
    /// has none yet.
    pub fn space(&self, db: &Arc<Database>, nbuffers: usize) -> PgResult<&TempSpace> {
        if let Some(space) = self.space.get() {
            return Ok(space);
        }
        // Only the session's own thread makes its space, so this does not race.
        let _ = self.space.set(TempSpace::create(db, nbuffers)?);
        Ok(self.space.get().expect("set above"))
    }
}
