//! Transaction modes, as PostgreSQL has them: `BEGIN` / `START TRANSACTION` with modes,
//! `SET TRANSACTION`, `SET SESSION CHARACTERISTICS AS TRANSACTION`, and what they do.
//!
//! # Setting them
//!
//! `ISOLATION LEVEL …` sets `transaction_isolation`, `READ ONLY` / `READ WRITE` sets
//! `transaction_read_only`, for the transaction only (a SET LOCAL); with `SESSION
//! CHARACTERISTICS` they set `default_transaction_isolation` / `_read_only`, which every
//! transaction starts with. Once the transaction has run a query, its isolation level no
//! longer changes and a read-only transaction does not become read-write (25001), whether
//! through SET TRANSACTION or `SET transaction_isolation`; outside a block, SET
//! TRANSACTION only warns (25P01). (`DEFERRABLE` is not parsed.)
//!
//! # Isolation levels
//!
//! READ UNCOMMITTED and READ COMMITTED take a snapshot for each statement. REPEATABLE READ
//! takes one at the transaction's first query and keeps it to the end
//! ([`TransactionSnapshot`]); a statement that would change or lock a row another
//! transaction changed after that snapshot fails with 40001 (`heap/delete.rs`) instead of
//! following the row to its newest version. SERIALIZABLE is run as REPEATABLE READ: iolab
//! has no predicate locks, so two serializable transactions each writing what the other
//! read (write skew) both commit, where PostgreSQL fails one.
//!
//! # Read-only transactions
//!
//! A read-only transaction refuses what PostgreSQL's `PreventCommandIfReadOnly` refuses,
//! with 25006 "cannot execute INSERT in a read-only transaction": INSERT, UPDATE, DELETE
//! and COPY FROM into a table that is not temporary, row locks, and DDL (CREATE, ALTER,
//! DROP, TRUNCATE, temporary tables included). Queries, VACUUM and ANALYZE run.

use datafusion::sql::sqlparser::ast::{
    self, TransactionAccessMode as Access, TransactionIsolationLevel as Level, TransactionMode,
};
use iolab_catalog::{sqlstate, Persistence, PgError, PgResult};
use iolab_engine::txn::{OwnXids, Snapshot};
use iolab_engine::values::input::parse_bool;
use iolab_engine::Database;
use iolab_settings::SessionSettings;

use super::Parsed;
use crate::show::setting_error;

/// The snapshot of a transaction block: whether a query has run, and the snapshot
/// REPEATABLE READ keeps from its first query.
#[derive(Default)]
pub struct TransactionSnapshot {
    queried: bool,
    kept: Option<Snapshot>,
}

impl TransactionSnapshot {
    /// Has the block run a query (taken a snapshot)?
    pub fn queried(&self) -> bool {
        self.queried
    }

    /// The snapshot of a statement of the block (`in_block`) or of a statement alone,
    /// with the statement's own xids and command id; and whether it is the
    /// transaction's.
    pub fn for_statement(
        &mut self,
        db: &Database,
        settings: &SessionSettings,
        in_block: bool,
        own: OwnXids,
        cid: u32,
    ) -> (Snapshot, bool) {
        if !in_block {
            return (db.txns.snapshot(own, cid), false);
        }
        self.queried = true;
        if !keeps_snapshot(&settings.transaction_isolation()) {
            return (db.txns.snapshot(own, cid), false);
        }
        let snapshot = match &self.kept {
            Some(kept) => kept.for_command(own, cid),
            None => self.kept.insert(db.txns.snapshot(own, cid)).clone(),
        };
        (snapshot, true)
    }
}

/// Does this `transaction_isolation` keep one snapshot for the transaction?
fn keeps_snapshot(isolation: &str) -> bool {
    matches!(isolation, "repeatable read" | "serializable")
}

/// The value of `transaction_isolation` for an isolation level.
fn level_name(level: &Level) -> PgResult<&'static str> {
    Ok(match level {
        Level::ReadUncommitted => "read uncommitted",
        Level::ReadCommitted => "read committed",
        Level::RepeatableRead => "repeatable read",
        Level::Serializable => "serializable",
        other => {
            return Err(PgError::syntax(format!(
                "syntax error at or near \"{other}\""
            )))
        }
    })
}

/// The transaction setting `mode` sets, and its value.
fn setting_of(mode: &TransactionMode) -> PgResult<(&'static str, &'static str)> {
    Ok(match mode {
        TransactionMode::IsolationLevel(level) => ("transaction_isolation", level_name(level)?),
        TransactionMode::AccessMode(Access::ReadOnly) => ("transaction_read_only", "on"),
        TransactionMode::AccessMode(Access::ReadWrite) => ("transaction_read_only", "off"),
    })
}

/// Applies `modes` to the current transaction (BEGIN's, or SET TRANSACTION's in a block
/// that has run `queried` a query or not).
pub fn apply(
    settings: &mut SessionSettings,
    modes: &[TransactionMode],
    queried: bool,
) -> PgResult<()> {
    let mut changed = settings.clone();
    for mode in modes {
        let (name, value) = setting_of(mode)?;
        check_change(&changed, name, value, queried)?;
        changed.set(name, value, true).map_err(setting_error)?;
    }
    *settings = changed;
    Ok(())
}

/// `SET SESSION CHARACTERISTICS AS TRANSACTION modes`: the `default_` settings later
/// transactions start with.
pub fn set_session_characteristics(
    settings: &mut SessionSettings,
    modes: &[TransactionMode],
) -> PgResult<()> {
    let mut changed = settings.clone();
    for mode in modes {
        let (name, value) = setting_of(mode)?;
        (changed.set(&format!("default_{name}"), value, false)).map_err(setting_error)?;
    }
    *settings = changed;
    Ok(())
}

/// PostgreSQL's checks of `transaction_isolation` and `transaction_read_only` once the
/// transaction has run a query: the level stays, read-only stays read-only.
pub fn check_change(
    settings: &SessionSettings,
    name: &str,
    value: &str,
    queried: bool,
) -> PgResult<()> {
    if !queried {
        return Ok(());
    }
    if name.eq_ignore_ascii_case("transaction_isolation")
        && !value.eq_ignore_ascii_case(&settings.transaction_isolation())
    {
        return Err(PgError::new(
            sqlstate::ACTIVE_SQL_TRANSACTION,
            "SET TRANSACTION ISOLATION LEVEL must be called before any query",
        ));
    }
    if name.eq_ignore_ascii_case("transaction_read_only")
        && parse_bool(value).is_ok_and(|read_only| !read_only)
        && settings.transaction_read_only()
    {
        return Err(PgError::new(
            sqlstate::ACTIVE_SQL_TRANSACTION,
            "transaction read-write mode must be set before any query",
        ));
    }
    Ok(())
}

/// 25006 if a read-only transaction may not run `parsed` (see the module comment);
/// `temp` is the session's temporary schema.
pub fn refuse_if_read_only(
    settings: &SessionSettings,
    db: &Database,
    temp: Option<&str>,
    parsed: &Parsed,
) -> PgResult<()> {
    if !settings.transaction_read_only() {
        return Ok(());
    }
    match refused_command(db, temp, parsed) {
        Some(command) => Err(PgError::new(
            sqlstate::READ_ONLY_SQL_TRANSACTION,
            format!("cannot execute {command} in a read-only transaction"),
        )),
        None => Ok(()),
    }
}

/// The name PostgreSQL's message gives `parsed` if a read-only transaction refuses it.
fn refused_command(db: &Database, temp: Option<&str>, parsed: &Parsed) -> Option<String> {
    let stmt = match parsed {
        Parsed::Sql(stmt) => stmt,
        Parsed::CreateUnlogged(_) => return Some("CREATE TABLE".into()),
        Parsed::Sequence(seq) if seq.alter => return Some("ALTER SEQUENCE".into()),
        Parsed::Sequence(_) => return Some("CREATE SEQUENCE".into()),
        Parsed::Alter(alter) => return Some(alter.tag()),
        Parsed::CreateExtension(_) => return Some("CREATE EXTENSION".into()),
        Parsed::Cluster(_) => return Some("CLUSTER".into()),
        // Modes stronger than ROW EXCLUSIVE are for writing.
        Parsed::Lock(lock) => {
            let writes = lock.mode > iolab_engine::txn::relation_locks::LockMode::RowExclusive;
            return writes.then(|| "LOCK TABLE".into());
        }
        // PostgreSQL lets REINDEX run in a read-only transaction, as VACUUM.
        Parsed::Checkpoint
        | Parsed::Vacuum(_)
        | Parsed::Reindex(_)
        | Parsed::Fetch(_)
        | Parsed::Prepare(_)
        | Parsed::AlterSystem(_) => return None,
    };
    // Writes to a temporary table are allowed.
    let permanent = |name: &ast::ObjectName| {
        let Ok((schema, table)) = super::ddl::split_name(name) else {
            return false;
        };
        db.catalog
            .resolve_in(temp, schema.as_deref(), &table)
            .is_ok_and(|t| t.persistence != Persistence::Temporary)
    };
    let table_of = |t: &ast::TableWithJoins| match &t.relation {
        ast::TableFactor::Table { name, .. } => Some(name.clone()),
        _ => None,
    };
    Some(match &**stmt {
        ast::Statement::Insert(ins) => match &ins.table {
            ast::TableObject::TableName(name) if permanent(name) => "INSERT".into(),
            _ => return None,
        },
        ast::Statement::Update(update) => match table_of(&update.table) {
            Some(name) if permanent(&name) => "UPDATE".into(),
            _ => return None,
        },
        ast::Statement::Delete(delete) => {
            let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                &delete.from;
            match from.first().and_then(table_of) {
                Some(name) if permanent(&name) => "DELETE".into(),
                _ => return None,
            }
        }
        ast::Statement::Copy {
            source: ast::CopySource::Table { table_name, .. },
            to: false,
            ..
        } if permanent(table_name) => "COPY FROM".into(),
        ast::Statement::Query(q) => {
            let strongest = q
                .locks
                .iter()
                .map(|l| &l.lock_type)
                .max_by_key(|t| match t {
                    ast::LockType::Share => 0,
                    ast::LockType::Update => 1,
                })?;
            match strongest {
                ast::LockType::Share => "SELECT FOR SHARE".into(),
                ast::LockType::Update => "SELECT FOR UPDATE".into(),
            }
        }
        // EXPLAIN ANALYZE runs its statement.
        ast::Statement::Explain { statement, .. } if crate::explain::writes(stmt) => {
            return refused_command(db, temp, &Parsed::Sql(statement.clone()));
        }
        ast::Statement::CreateTable(_) => "CREATE TABLE".into(),
        ast::Statement::CreateIndex(_) => "CREATE INDEX".into(),
        ast::Statement::CreateView { .. } => "CREATE VIEW".into(),
        ast::Statement::CreateSchema { .. } => "CREATE SCHEMA".into(),
        ast::Statement::Truncate { .. } => "TRUNCATE TABLE".into(),
        ast::Statement::Comment { .. } => "COMMENT".into(),
        ast::Statement::Drop { object_type, .. } => {
            format!("DROP {}", object_type.to_string().to_uppercase())
        }
        _ => return None,
    })
}
