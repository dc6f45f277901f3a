//! Which relations a statement locks, and in which mode, as PostgreSQL 18 decides; and
//! `LOCK [TABLE]`. The lock table itself is `iolab_engine::txn::relation_locks`; the
//! session takes a statement's locks before it plans it and keeps them to the end of its
//! transaction.
//!
//! | statement | lock |
//! |---|---|
//! | SELECT, EXPLAIN, COPY (query) TO, DECLARE, CREATE TABLE … AS, CREATE VIEW | `AccessShareLock` on each relation read |
//! | SELECT … FOR UPDATE / SHARE | `RowShareLock` on each relation read |
//! | UPDATE, DELETE | `RowExclusiveLock` on the target, `AccessShareLock` on the others |
//! | INSERT, COPY t FROM | `RowExclusiveLock` on the target (`AccessShareLock` on what its query reads) |
//! | COPY t TO | `AccessShareLock` |
//! | VACUUM, ANALYZE | `ShareUpdateExclusiveLock` on each table (every table without a list) |
//! | CREATE INDEX | `ShareLock` on the table |
//! | DROP TABLE / VIEW, TRUNCATE, ALTER TABLE / VIEW, VACUUM FULL | `AccessExclusiveLock` |
//! | DROP INDEX, ALTER INDEX | `AccessExclusiveLock` on the index and its table |
//! | CLUSTER | `AccessExclusiveLock` on the table (every table with a clustered index) |
//! | REINDEX | `ShareLock` on each table, `AccessExclusiveLock` on each index it rebuilds |
//! | `LOCK [TABLE] [ONLY] name [*] [, …] [IN mode MODE] [NOWAIT]` | that mode, `ACCESS EXCLUSIVE` by default |
//!
//! Each table a statement plans a scan of (what it reads, an UPDATE's or DELETE's target)
//! has each of its indexes locked in the table's mode too, as PostgreSQL's planner opens
//! them; VACUUM locks the indexes it cleans in `RowExclusiveLock`, ANALYZE those it reads
//! in `AccessShareLock`. A view read stands for its query's relations: the view and,
//! recursively, what it reads are locked in the same mode. A name that is no relation (a
//! CTE, a function in FROM, a catalog view) or a relation that does not exist locks
//! nothing here; the statement reports it. Temporary tables are the session's own and are
//! not locked.

use std::ops::ControlFlow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use datafusion::sql::sqlparser::ast;
use iolab_catalog::{sqlstate, Persistence, PgError, PgResult};
use iolab_engine::exec::StatementContext;
use iolab_engine::txn::relation_locks::{LockMode, OtherWait, WaitPolicy};
use iolab_engine::Database;
use iolab_settings::SessionSettings;
use iolab_stats::{BackendActivity, WaitEvent};

use crate::sql::alter_parse::AlterStatement;
use crate::sql::cluster::ClusterStmt;
use crate::sql::ddl::split_name;
use crate::sql::reindex::ReindexStmt;
use crate::sql::tokens::{tokenize, Tok, TokenParser};
use crate::sql::vacuum::VacuumStmt;
use crate::sql::{Outcome, Parsed};
use crate::statement_timer::telling_its_end;

/// One lock a statement takes.
#[derive(Clone, Debug, PartialEq)]
pub struct LockRequest {
    pub oid: u32,
    /// The relation's name, for messages.
    pub name: String,
    pub mode: LockMode,
}

/// A parsed `LOCK` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct LockStmt {
    /// `(schema, name)` of each relation listed.
    pub relations: Vec<(Option<String>, String)>,
    pub mode: LockMode,
    pub nowait: bool,
}

/// Is `words` (the statement's first words, upper case) a LOCK statement?
pub fn is_lock(words: &[&str]) -> bool {
    words.first() == Some(&"LOCK")
}

/// Parses `LOCK [TABLE] [ONLY] name [*] [, …] [IN mode MODE] [NOWAIT]`.
pub fn parse_lock(text: &str, whole: &str, offset: usize) -> PgResult<LockStmt> {
    let mut p = TokenParser::new(tokenize(text, usize::MAX)?, text, whole, offset);
    p.pos += 1; // LOCK
    for word in ["table", "only"] {
        if p.is_word(word) {
            p.pos += 1;
        }
    }
    let mut relations = Vec::new();
    loop {
        let mut name = p.word()?;
        let mut schema = None;
        if p.is_punct('.') {
            p.pos += 1;
            schema = Some(std::mem::replace(&mut name, p.word()?));
        }
        relations.push((schema, name));
        if p.is_punct('*') {
            p.pos += 1;
        }
        if !p.is_punct(',') {
            break;
        }
        p.pos += 1;
        if p.is_word("only") {
            p.pos += 1;
        }
    }
    let mut mode = LockMode::AccessExclusive;
    if p.is_word("in") {
        p.pos += 1;
        mode = lock_mode(&mut p)?;
        if !p.is_word("mode") {
            return Err(p.syntax_error());
        }
        p.pos += 1;
    }
    let nowait = p.is_word("nowait");
    if nowait {
        p.pos += 1;
    }
    if p.is_punct(';') {
        p.pos += 1;
    }
    if p.peek().is_some() {
        return Err(p.syntax_error());
    }
    Ok(LockStmt {
        relations,
        mode,
        nowait,
    })
}

/// `ACCESS SHARE`, `ROW EXCLUSIVE`, `SHARE UPDATE EXCLUSIVE`, … (the words before MODE).
fn lock_mode(p: &mut TokenParser) -> PgResult<LockMode> {
    use LockMode::*;
    let mut words = Vec::new();
    while let Some(Tok::Word {
        text,
        quoted: false,
    }) = p.peek()
    {
        if text == "mode" {
            break;
        }
        if !matches!(
            text.as_str(),
            "access" | "row" | "share" | "update" | "exclusive"
        ) {
            return Err(p.syntax_error());
        }
        words.push(text.clone());
        p.pos += 1;
    }
    let mode = match words.join(" ").as_str() {
        "access share" => AccessShare,
        "row share" => RowShare,
        "row exclusive" => RowExclusive,
        "share update exclusive" => ShareUpdateExclusive,
        "share" => Share,
        "share row exclusive" => ShareRowExclusive,
        "exclusive" => Exclusive,
        "access exclusive" => AccessExclusive,
        _ => return Err(p.syntax_error()),
    };
    Ok(mode)
}

/// The locks `parsed` takes, in the order it takes them (a relation may come more than
/// once, in different modes).
pub fn requests(db: &Database, temp: Option<&str>, parsed: &Parsed) -> PgResult<Vec<LockRequest>> {
    let mut locks = Locks {
        db,
        temp,
        open_drops: true,
        requests: Vec::new(),
    };
    match parsed {
        Parsed::Sql(stmt) | Parsed::CreateUnlogged(stmt) => locks.statement(stmt),
        Parsed::Vacuum(vacuum) => locks.vacuum(vacuum),
        Parsed::Alter(alter) => locks.alter(alter),
        Parsed::Lock(lock) => locks.lock(lock)?,
        Parsed::Cluster(cluster) => locks.cluster(cluster),
        Parsed::Reindex(reindex) => locks.reindex(reindex),
        Parsed::Checkpoint
        | Parsed::CreateExtension(_)
        | Parsed::Sequence(_)
        | Parsed::Fetch(_)
        | Parsed::Prepare(_)
        | Parsed::AlterSystem(_) => {}
    }
    Ok(locks.requests)
}

/// `LOCK` once its locks are held: each relation must still be there (one that a
/// transaction had dropped is gone if that transaction committed), else 42P01.
pub fn locked_relations_exist(db: &Database, temp: Option<&str>, lock: &LockStmt) -> PgResult<()> {
    let mut locks = Locks {
        db,
        temp,
        open_drops: false,
        requests: Vec::new(),
    };
    locks.lock(lock)
}

struct Locks<'a> {
    db: &'a Database,
    temp: Option<&'a str>,
    /// Whether a relation dropped by a transaction still open is locked (to wait for it).
    open_drops: bool,
    requests: Vec<LockRequest>,
}

impl Locks<'_> {
    fn statement(&mut self, stmt: &ast::Statement) {
        use ast::Statement as S;
        use LockMode::*;
        match stmt {
            S::Explain { statement, .. } => self.statement(statement),
            S::Insert(insert) => {
                if let ast::TableObject::TableName(name) = &insert.table {
                    self.name(name, RowExclusive, None);
                }
                if let Some(source) = &insert.source {
                    self.read(&**source, AccessShare);
                }
            }
            S::Update(update) => {
                self.target(&update.table.relation);
                self.read(&update.table.joins, AccessShare);
                if let Some(from) = &update.from {
                    self.read(from, AccessShare);
                }
                self.read(&update.selection, AccessShare);
                self.read(&update.assignments, AccessShare);
            }
            S::Delete(delete) => {
                let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                    &delete.from;
                for table in from {
                    self.target(&table.relation);
                    self.read(&table.joins, AccessShare);
                }
                self.read(&delete.using, AccessShare);
                self.read(&delete.selection, AccessShare);
            }
            S::Copy { source, to, .. } => match source {
                ast::CopySource::Table { table_name, .. } => self.name(
                    table_name,
                    if *to { AccessShare } else { RowExclusive },
                    None,
                ),
                ast::CopySource::Query(query) => self.read(&**query, AccessShare),
            },
            S::CreateIndex(create) => self.name(&create.table_name, Share, None),
            S::Drop {
                object_type, names, ..
            } => match object_type {
                ast::ObjectType::Table | ast::ObjectType::View => names
                    .iter()
                    .for_each(|n| self.name(n, AccessExclusive, None)),
                ast::ObjectType::Index => names.iter().for_each(|n| self.index(n)),
                _ => {}
            },
            S::Truncate(truncate) => (truncate.table_names.iter())
                .for_each(|t| self.name(&t.name, AccessExclusive, None)),
            S::AlterTable(alter) => self.name(&alter.name, AccessExclusive, None),
            S::AlterIndex { name, .. } => self.index(name),
            S::AlterView { name, .. } => self.name(name, AccessExclusive, None),
            S::Query(query) => {
                let mode = match locks_rows(query) {
                    true => RowShare,
                    false => AccessShare,
                };
                self.read(&**query, mode);
            }
            // The relations any other statement reads (CREATE TABLE … AS, CREATE VIEW,
            // DECLARE, …).
            other => self.read(other, AccessShare),
        }
    }

    /// The table a DELETE or UPDATE changes.
    fn target(&mut self, relation: &ast::TableFactor) {
        if let ast::TableFactor::Table { name, .. } = relation {
            self.name(name, LockMode::RowExclusive, Some(LockMode::RowExclusive));
        }
    }

    /// Every relation `node` reads, in `mode`.
    fn read(&mut self, node: &impl ast::Visit, mode: LockMode) {
        let _ = ast::visit_relations(node, |name| {
            self.name(name, mode, Some(mode));
            ControlFlow::<()>::Continue(())
        });
    }

    /// The relation `name`, if it is one (a table, or a view and what it reads).
    fn name(&mut self, name: &ast::ObjectName, mode: LockMode, indexes: Option<LockMode>) {
        let Ok((schema, name)) = split_name(name) else {
            return;
        };
        self.relation(schema.as_deref(), &name, mode, indexes);
    }

    /// Locks table or view `schema.name`; `false` when there is none.
    fn relation(
        &mut self,
        schema: Option<&str>,
        name: &str,
        mode: LockMode,
        indexes: Option<LockMode>,
    ) -> bool {
        if let Ok(table) = self.db.catalog.resolve_in(self.temp, schema, name) {
            if table.persistence != Persistence::Temporary {
                self.table(table.oid, &table.name, mode, indexes);
            }
            return true;
        }
        let schema = schema.unwrap_or("public");
        if let Some(view) = self.db.catalog.view(schema, name) {
            self.view(view.oid, mode, indexes, 0);
            return true;
        }
        // Dropped by a transaction still open: wait for its end, then the statement
        // finds the relation back (ROLLBACK) or not (COMMIT: 42P01).
        let dropped = self
            .open_drops
            .then(|| super::ddl_log::dropped_by_open_transaction(schema, name));
        match dropped.flatten() {
            Some(oid) => {
                self.push(oid, name, mode);
                true
            }
            None => false,
        }
    }

    /// A view and, recursively, the relations its query reads.
    fn view(&mut self, oid: u32, mode: LockMode, indexes: Option<LockMode>, depth: usize) {
        // Views cannot read themselves; the bound only guards against a broken catalog.
        const DEEPEST: usize = 100;
        let Some(view) = self.db.catalog.view_by_oid(oid) else {
            if let Some(table) = self.db.catalog.table_by_oid(oid) {
                self.table(table.oid, &table.name, mode, indexes);
            }
            return;
        };
        self.push(view.oid, &view.name, mode);
        if depth < DEEPEST {
            for below in &view.depends_on {
                self.view(*below, mode, indexes, depth + 1);
            }
        }
    }

    /// DROP INDEX, ALTER INDEX: the index's table and the index.
    fn index(&mut self, name: &ast::ObjectName) {
        let Ok((schema, name)) = split_name(name) else {
            return;
        };
        let schema = schema.as_deref().unwrap_or("public");
        if let Some(index) = self.db.catalog.index(schema, &name) {
            if let Some(table) = self.db.catalog.table_by_oid(index.table_oid) {
                self.push(table.oid, &table.name, LockMode::AccessExclusive);
                self.push(index.oid, &index.name, LockMode::AccessExclusive);
            }
        }
    }

    /// A table in `mode`, and each of its indexes in `indexes` (PostgreSQL's planner
    /// opens every index of a table it plans a scan of in the table's mode).
    fn table(&mut self, oid: u32, name: &str, mode: LockMode, indexes: Option<LockMode>) {
        self.push(oid, name, mode);
        if let Some(index_mode) = indexes {
            for index in self.db.catalog.indexes_of(oid) {
                self.push(index.oid, &index.name, index_mode);
            }
        }
    }

    fn push(&mut self, oid: u32, name: &str, mode: LockMode) {
        let request = LockRequest {
            oid,
            name: name.to_string(),
            mode,
        };
        if !self.requests.contains(&request) {
            self.requests.push(request);
        }
    }

    /// VACUUM locks the indexes it cleans in `RowExclusiveLock`, ANALYZE those it
    /// reads in `AccessShareLock` (VACUUM ANALYZE: the stronger).
    fn vacuum(&mut self, vacuum: &VacuumStmt) {
        use LockMode::*;
        let (mode, indexes) = match (vacuum.full, vacuum.vacuum) {
            (true, _) => (AccessExclusive, None),
            (false, true) => (ShareUpdateExclusive, Some(RowExclusive)),
            (false, false) => (ShareUpdateExclusive, Some(AccessShare)),
        };
        if vacuum.relations.is_empty() {
            for table in self.db.catalog.tables() {
                if table.persistence != Persistence::Temporary {
                    self.table(table.oid, &table.name, mode, indexes);
                }
            }
        }
        for spec in &vacuum.relations {
            self.relation(spec.schema.as_deref(), &spec.name, mode, indexes);
        }
    }

    fn alter(&mut self, alter: &AlterStatement) {
        match alter.kind {
            iolab_catalog::alter::RelationKind::Index => self.index(&alter.name),
            iolab_catalog::alter::RelationKind::Sequence => {}
            _ => self.name(&alter.name, LockMode::AccessExclusive, None),
        }
    }

    /// CLUSTER: its table, or every table with a clustered index.
    fn cluster(&mut self, cluster: &ClusterStmt) {
        match &cluster.table {
            Some((schema, name)) => {
                self.relation(schema.as_deref(), name, LockMode::AccessExclusive, None);
            }
            None => {
                for (table, _) in crate::sql::cluster::clustered_tables(self.db) {
                    self.push(table.oid, &table.name, LockMode::AccessExclusive);
                }
            }
        }
    }

    /// REINDEX: each table in `ShareLock`, each index it rebuilds in `AccessExclusiveLock`.
    /// What does not exist locks nothing; the statement reports it.
    fn reindex(&mut self, reindex: &ReindexStmt) {
        let Ok(targets) = crate::sql::reindex::targets(self.db, self.temp, reindex) else {
            return;
        };
        for (table, indexes) in targets {
            if table.persistence == Persistence::Temporary {
                continue;
            }
            self.push(table.oid, &table.name, LockMode::Share);
            for index in indexes {
                self.push(index.oid, &index.name, LockMode::AccessExclusive);
            }
        }
    }

    fn lock(&mut self, lock: &LockStmt) -> PgResult<()> {
        for (schema, name) in &lock.relations {
            if self.relation(schema.as_deref(), name, lock.mode, None) {
                continue;
            }
            let index_schema = schema.as_deref().unwrap_or("public");
            if self.db.catalog.index(index_schema, name).is_some() {
                return Err(PgError::new(
                    sqlstate::WRONG_OBJECT_TYPE,
                    format!("cannot lock relation \"{name}\""),
                )
                .with_detail("This operation is not supported for indexes."));
            }
            return Err(match schema {
                Some(s) => PgError::undefined_table(&format!("{s}.{name}")),
                None => PgError::undefined_table(name),
            });
        }
        Ok(())
    }
}

/// Does the query lock the rows it reads (`FOR UPDATE | NO KEY UPDATE | SHARE | KEY
/// SHARE`)?
fn locks_rows(query: &ast::Query) -> bool {
    !query.locks.is_empty()
}

/// A session's side of the lock table: takes each statement's locks and releases them
/// when its transaction ends — at COMMIT or ROLLBACK in a block, else when the statement
/// has sent its rows.
pub struct SessionLocks {
    pid: i32,
    /// Counts the session's transactions' ends: a statement's rows still being sent when
    /// the next transaction began release nothing (the session released its locks then).
    ends: Arc<AtomicU64>,
    /// The locks its transaction holds, in the order it took them (savepoints and errors
    /// give back the newest); empty: it holds none, and statements skip the lock table
    /// when they end.
    taken: Vec<(u32, LockMode)>,
}

impl SessionLocks {
    pub fn new(pid: i32) -> SessionLocks {
        SessionLocks {
            pid,
            ends: Arc::default(),
            taken: Vec::new(),
        }
    }

    /// Takes the locks `parsed` needs, waiting as the session's settings say
    /// (`lock_timeout`, `deadlock_timeout`; `LOCK … NOWAIT` does not wait) and showing
    /// `Lock` / `relation` in `pg_stat_activity` meanwhile.
    pub async fn take(
        &mut self,
        db: &Database,
        ctx: &StatementContext,
        settings: &SessionSettings,
        activity: Option<&BackendActivity>,
        (parsed, temp, in_block): (&Parsed, Option<&str>, bool),
    ) -> PgResult<()> {
        if let Parsed::Lock(_) = parsed {
            if !in_block {
                return Err(PgError::new(
                    sqlstate::NO_ACTIVE_SQL_TRANSACTION,
                    "LOCK TABLE can only be used in transaction blocks",
                ));
            }
        }
        let wanted = requests(db, temp, parsed)?;
        if wanted.is_empty() {
            return Ok(());
        }
        let policy = match parsed {
            Parsed::Lock(lock) if lock.nowait => WaitPolicy::NoWait,
            _ => WaitPolicy::Wait {
                lock_timeout: match settings.lock_timeout_ms() {
                    0 => None,
                    ms => Some(Duration::from_millis(ms as u64)),
                },
                deadlock_timeout: Duration::from_millis(settings.deadlock_timeout_ms() as u64),
            },
        };
        let other_waits = || transaction_waits(db);
        let check_cancel = || ctx.check_cancel();
        for lock in wanted {
            if let Some(a) = activity {
                a.set_wait_event(WaitEvent::LockRelation);
            }
            let taken = (db.relation_locks)
                .acquire(
                    self.pid,
                    lock.oid,
                    &lock.name,
                    lock.mode,
                    policy,
                    &check_cancel,
                    &other_waits,
                )
                .await;
            if let Some(a) = activity {
                a.set_wait_event(WaitEvent::None);
            }
            if let Err(e) = &taken {
                if e.code == sqlstate::T_R_DEADLOCK_DETECTED {
                    log_deadlock(db, e);
                }
            }
            if taken? {
                self.taken.push((lock.oid, lock.mode));
            }
        }
        Ok(())
    }

    /// How many locks the transaction has taken (a savepoint's mark).
    pub fn taken(&self) -> usize {
        self.taken.len()
    }

    /// Releases the locks taken after the first `kept` (ROLLBACK TO a savepoint set then,
    /// or an error under it).
    pub fn release_since(&mut self, db: &Database, kept: usize) {
        for (relation, mode) in self.taken.drain(kept.min(self.taken.len())..) {
            db.relation_locks.release(self.pid, relation, mode);
        }
    }

    /// The transaction ended: every lock goes.
    pub fn release(&mut self, db: &Database) {
        self.ends.fetch_add(1, Ordering::AcqRel);
        if !self.taken.is_empty() {
            self.taken.clear();
            db.relation_locks.release_all(self.pid);
        }
    }

    /// The statement's transaction ends with `outcome`: now, when its rows have been
    /// sent, or (COPY FROM STDIN) when its data has come (`release` then).
    pub fn release_after(
        &mut self,
        db: &Arc<Database>,
        outcome: PgResult<Outcome>,
    ) -> PgResult<Outcome> {
        if let Ok(Outcome::CopyIn { .. }) = &outcome {
            return outcome;
        }
        let streams = matches!(&outcome, Ok(o) if o.has_rows());
        if !streams || self.taken.is_empty() {
            self.release(db);
            return outcome;
        }
        let (db, pid, ends) = (db.clone(), self.pid, self.ends.clone());
        let end = ends.load(Ordering::Acquire);
        outcome.map(|o| {
            o.map_rows(|stream| {
                telling_its_end(stream, move |_| {
                    if ends.load(Ordering::Acquire) == end {
                        db.relation_locks.release_all(pid);
                    }
                })
            })
        })
    }
}

/// PostgreSQL's server log entry for a deadlock: the circle, and each process's statement.
fn log_deadlock(db: &Database, e: &PgError) {
    let detail = e.detail.as_deref().unwrap_or_default();
    let statements: Vec<String> = (db.io_stats.activity.all().iter())
        .filter(|a| detail.contains(&format!("Process {} ", a.pid)))
        .map(|a| format!("Process {}: {}", a.pid, a.status().query))
        .collect();
    tracing::error!("deadlock detected\n{detail}\n{}", statements.join("\n"));
}

/// Waits for other transactions' rows (`txn::manager`), as edges between sessions for the
/// deadlock check.
fn transaction_waits(db: &Database) -> Vec<OtherWait> {
    let waits = db.txns.waits();
    if waits.is_empty() {
        return Vec::new();
    }
    let pids = crate::pgcatalog::locks::pids_by_xid(db);
    (waits.into_iter())
        .filter_map(|w| {
            Some(OtherWait {
                waiter: *pids.get(&w.waiter)?,
                holder: *pids.get(&w.holder_top)?,
                what: format!("ShareLock on transaction {}", w.holder),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(sql: &str) -> PgResult<LockStmt> {
        parse_lock(sql, sql, 0)
    }

    #[test]
    fn lock_statements_parse_as_postgresql_s() {
        let lock = p("LOCK t").unwrap();
        assert_eq!(lock.relations, vec![(None, "t".to_string())]);
        assert_eq!((lock.mode, lock.nowait), (LockMode::AccessExclusive, false));
        let lock = p("lock table only s.t *, ONLY u in share row exclusive mode nowait;").unwrap();
        assert_eq!(
            lock.relations,
            vec![(Some("s".into()), "t".into()), (None, "u".into())]
        );
        assert_eq!(
            (lock.mode, lock.nowait),
            (LockMode::ShareRowExclusive, true)
        );
        for (words, mode) in [
            ("ACCESS SHARE", LockMode::AccessShare),
            ("ROW SHARE", LockMode::RowShare),
            ("ROW EXCLUSIVE", LockMode::RowExclusive),
            ("SHARE UPDATE EXCLUSIVE", LockMode::ShareUpdateExclusive),
            ("SHARE", LockMode::Share),
            ("EXCLUSIVE", LockMode::Exclusive),
        ] {
            assert_eq!(p(&format!("LOCK t IN {words} MODE")).unwrap().mode, mode);
        }
        for bad in [
            "LOCK t IN FOO MODE",
            "LOCK t IN SHARE",
            "LOCK",
            "LOCK t IN ROW MODE",
            "LOCK t x",
        ] {
            let err = p(bad).unwrap_err();
            assert_eq!(err.code, sqlstate::SYNTAX_ERROR, "{bad}");
        }
        assert_eq!(
            p("LOCK t IN FOO MODE").unwrap_err().message,
            "syntax error at or near \"FOO\""
        );
    }
}
