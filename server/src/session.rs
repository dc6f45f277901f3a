//! One client connection's state: its settings, its transaction block, its DataFusion
//! state, and the statement it is running.
//!
//! `Session::run` is the one entry point for every statement, whichever protocol it came
//! by: it applies the transaction rules (see `sql/mod.rs`), builds the statement's
//! context and dispatches to the code that runs the statement.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use datafusion::catalog::CatalogProvider;
use datafusion::catalog::{MemoryCatalogProvider, TableProvider};
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::SessionConfig;
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast;
use iolab_catalog::{sqlstate, PgError, PgResult};
use iolab_engine::exec::cancel::CancelFlag;
use iolab_engine::exec::context::StreamSettings;
use iolab_engine::exec::context::TempSpace;
use iolab_engine::exec::schema::{PublicSchema, SessionCatalog, TempSchema, PERSISTENT_PUBLIC};
use iolab_engine::exec::temp_files::TempFiles;
use iolab_engine::exec::work_mem::{self, WorkMemPool};
use iolab_engine::exec::StatementContext;
use iolab_engine::plan::hash_join_batches::HashJoinBatches;
use iolab_engine::plan::merge_joins::MergeJoinsNullsLast;
use iolab_engine::plan::min_max::MinMaxThroughIndex;
use iolab_engine::plan::nested_loops::IndexNestedLoops;
use iolab_engine::plan::ordered_scans::OrderedScans;
use iolab_engine::plan::param_scans::ParamIndexScans;
use iolab_engine::plan::partitions::OnePartitionWhenCheap;
use iolab_engine::plan::PlannerSettings;
use iolab_engine::temp::SessionTemp;
use iolab_engine::txn::OwnXids;
use iolab_engine::values::TextFormat;
use iolab_engine::Database;
use iolab_settings::SessionSettings;
use parking_lot::Mutex;

use crate::pgcatalog::SessionInfo;
use crate::server::Server;
use crate::sql::ddl_log::DdlLog;
use crate::sql::{self, ddl, insert, Outcome, Parsed, StatementGuard, StatementRun, TxnBlock};
use crate::statement_timer::{stopping_when_canceled, telling_its_end};

/// A NOTICE or WARNING to send before a statement's result.
#[derive(Clone, Debug)]
pub struct Notice {
    pub severity: &'static str,
    pub code: &'static str,
    pub message: String,
    /// `DETAIL:` (the objects a DROP … CASCADE dropped).
    pub detail: Option<String>,
}

impl Notice {
    pub fn notice(message: impl Into<String>) -> Notice {
        Notice {
            severity: "NOTICE",
            code: "00000",
            message: message.into(),
            detail: None,
        }
    }

    /// An INFO message (VACUUM VERBOSE's, CLUSTER VERBOSE's).
    pub fn info(message: impl Into<String>) -> Notice {
        Notice {
            severity: "INFO",
            code: "00000",
            message: message.into(),
            detail: None,
        }
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Notice {
        Notice {
            severity: "WARNING",
            code,
            message: message.into(),
            detail: None,
        }
    }
}

pub struct Session {
    pub server: Arc<Server>,
    pub pid: i32,
    pub user: String,
    pub settings: SessionSettings,
    /// The configuration generation (`config_reload`) its settings reflect.
    config_generation: u64,
    pub txn: TxnBlock,
    df_state: SessionState,
    /// `df_state`'s configuration without its catalogs and functions: what a statement
    /// run from a generic physical plan (`sql::generic_plan`) needs, cheaper to copy.
    generic_plan_state: SessionState,
    /// The cancel flag of the running statement.
    pub cancel: CancelFlag,
    /// The same, where another task finds it (a cancel request's watcher, `wire::simple`).
    pub running: Arc<parking_lot::Mutex<CancelFlag>>,
    /// The running statement's `statement_timeout`.
    statement_timer: Option<crate::statement_timer::StatementTimer>,
    /// A COPY FROM STDIN in progress.
    pub copy_in: Option<crate::copy::CopyIn>,
    /// The statements of its Query message after that COPY, run when its data is in.
    pub rest_of_message: Option<crate::wire::simple::RestOfMessage>,
    /// This session's `pg_stat_activity` entry (none for sessions made without a
    /// connection).
    pub activity: Option<Arc<iolab_stats::BackendActivity>>,
    /// Its session timeouts as its connection's watchdog sees them (`wire::timeouts`).
    pub timeouts: Arc<crate::wire::timeouts::Timeouts>,
    /// What the session remembers of the sequences it used (`currval`, `lastval`).
    pub sequences: Arc<crate::pgcatalog::sequence_functions::SessionSequences>,
    /// The optimized plans of its statements with parameters (`sql::prepared_plans`).
    prepared_plans: Arc<sql::prepared_plans::PreparedPlans>,
    /// Its open cursors (DECLARE … CLOSE).
    pub cursors: sql::cursor::Cursors,
    /// Its SQL prepared statements (PREPARE … DEALLOCATE).
    pub prepared: sql::prepare::PreparedStatements,
    /// How many named statements its Parse messages keep (the protocol's own, which
    /// pgwire stores; at most `sql::prepare::MAX_PREPARED`, as the SQL ones).
    pub protocol_statements: usize,
    /// What Describe found of its statements (`sql::describe`).
    pub descriptions: sql::describe::Descriptions,
    /// While EXECUTE runs one: its count of runs that took the generic plan.
    executing: Option<Arc<AtomicU64>>,
    /// An Execute has run since the extended protocol's last Sync (`join_pipeline`).
    pipelining: bool,
    /// The table locks its transaction holds (`sql::relation_locks`).
    pub relation_locks: sql::relation_locks::SessionLocks,
    /// The context of the statement run last (its buffer usage, for
    /// `pg_stat_statements`); cleared before each statement.
    pub last_statement: Option<Arc<StatementContext>>,
    /// Its statements' texts as `pg_stat_statements` shows them.
    pub normalized_texts: crate::statement_stats::NormalizedTexts,
    /// The memory its sorts and hash aggregations may hold before they write temporary
    /// files (`work_mem`; iolab_engine::exec::work_mem).
    work_mem: Arc<WorkMemPool>,
    /// Its temporary files (iolab_engine::exec::temp_files).
    temp_files: Arc<TempFiles>,
    /// Its temporary schema and local buffers, from its first temporary table on.
    /// (Declared last: dropped after the transaction block, which may undo a CREATE.)
    pub temp: Arc<SessionTemp>,
}

pub type SharedSession = Arc<tokio::sync::Mutex<Session>>;

impl Session {
    pub fn new(server: Arc<Server>, pid: i32, user: String, settings: SessionSettings) -> Session {
        let cursors = sql::cursor::Cursors::default();
        let prepared = sql::prepare::PreparedStatements::default();
        let temp = Arc::new(SessionTemp::default());
        let work_mem = Arc::new(WorkMemPool::new());
        let db = &server.db;
        let temp_files = Arc::new(TempFiles::new(db.data_dir(), pid, db.io_stats.clone()));
        let runtime = work_mem::runtime_env(work_mem.clone(), temp_files.clone())
            .expect("a runtime takes a memory pool and a temporary file factory");
        let mut df_state = base_state(&server, &cursors, &prepared, &temp, runtime);
        // For the hash joins' batch counts (iolab_engine::exec::hash_join_batches).
        df_state.config_mut().set_extension(work_mem.clone());
        let generic_plan_state = SessionStateBuilder::new()
            .with_config(df_state.config().clone())
            .with_runtime_env(df_state.runtime_env().clone())
            .build();
        Session {
            server,
            pid,
            user,
            settings,
            config_generation: crate::config_reload::generation(),
            txn: TxnBlock::default(),
            df_state,
            generic_plan_state,
            prepared_plans: Default::default(),
            cancel: CancelFlag::new(),
            running: Arc::default(),
            statement_timer: None,
            copy_in: None,
            rest_of_message: None,
            activity: None,
            timeouts: Default::default(),
            sequences: Arc::default(),
            cursors,
            prepared,
            protocol_statements: 0,
            descriptions: Default::default(),
            executing: None,
            pipelining: false,
            relation_locks: sql::relation_locks::SessionLocks::new(pid),
            last_statement: None,
            normalized_texts: Default::default(),
            work_mem,
            temp_files,
            temp,
        }
    }

    /// Before a statement: the server's values after a `pg_reload_conf()` this session has
    /// not yet adopted, unless it is inside a transaction block (then at its first
    /// statement after the block). See `config_reload`.
    pub fn adopt_reloaded_configuration(&mut self) {
        let generation = crate::config_reload::generation();
        if generation == self.config_generation {
            return;
        }
        if let Some((server, generation)) = crate::config_reload::current() {
            if self.settings.adopt_reloaded(&server) {
                self.config_generation = generation;
            }
        }
    }

    /// `pg_stat_activity`: a statement (or a Query message of several) starts.
    pub fn report_active(&self, query: &str) {
        if let Some(a) = &self.activity {
            let idle = a.status();
            if idle.state != iolab_stats::BackendState::Idle {
                self.db()
                    .io_stats
                    .database
                    .idle_in_transaction(since(idle.state_change));
            }
            a.statement_started(query, self.txn.in_block);
        }
    }

    /// Hands the session's timeout settings to its connection's watchdog.
    pub fn publish_timeouts(&self) {
        let s = &self.settings;
        self.timeouts.publish(
            s.idle_session_timeout_ms(),
            s.idle_in_transaction_session_timeout_ms(),
            s.transaction_timeout_ms(),
        );
    }

    /// `pg_stat_activity`: the session now waits for its client.
    pub fn report_idle(&self) {
        use iolab_stats::BackendState;
        self.publish_timeouts();
        let Some(a) = &self.activity else { return };
        let state = match (self.txn.in_block, self.txn.is_failed()) {
            (false, _) => BackendState::Idle,
            (true, false) => BackendState::IdleInTransaction,
            (true, true) => BackendState::IdleInTransactionAborted,
        };
        a.set_wait_event(iolab_stats::WaitEvent::None);
        let active = a.status();
        if active.state == BackendState::Active {
            self.db()
                .io_stats
                .database
                .active(since(active.state_change));
        }
        a.statement_ended(state, &self.settings.application_name());
    }

    /// Plans a query without running it (the extended protocol's Describe).
    pub async fn plan_only(
        &self,
        stmt: &ast::Statement,
        param_types: &[Option<datafusion::arrow::datatypes::DataType>],
    ) -> PgResult<datafusion::logical_expr::LogicalPlan> {
        let mut state = self.df_state.clone();
        crate::pgcatalog::register_functions(&mut state, &self.catalog_info());
        // A lock clause leaves the result's columns as they are.
        let unlocked = crate::sql::row_locks::without_locks(stmt);
        let stmt = unlocked.as_ref().unwrap_or(stmt);
        crate::sql::plan_statement(&state, stmt, param_types).await
    }

    /// The result columns of an INSERT, UPDATE or DELETE with RETURNING, its `$n` typed as
    /// `param_types` say; `None` for other statements (the extended protocol's Describe).
    pub async fn returning_schema(
        &self,
        stmt: &ast::Statement,
        param_types: &[Option<datafusion::arrow::datatypes::DataType>],
    ) -> PgResult<Option<datafusion::arrow::datatypes::SchemaRef>> {
        let mut state = self.df_state.clone();
        crate::pgcatalog::register_functions(&mut state, &self.catalog_info());
        crate::sql::returning::describe(&state, self.db(), self.temp.schema(), stmt, param_types)
            .await
    }

    /// What the plan cache has for `parsed` with `params`, its names resolving in
    /// `catalog` (see `sql::plan_cache`): statements with parameters of their own, and
    /// every statement of a session with `plan_cache_mode = force_custom_plan`, are
    /// planned afresh.
    fn cached_plan(
        &self,
        parsed: &Parsed,
        params: &Option<Vec<datafusion::scalar::ScalarValue>>,
        catalog: &str,
    ) -> sql::CachedPlan {
        let setting = |name: &str| self.settings.get(name).unwrap_or_default();
        let Parsed::Sql(stmt) = parsed else {
            return sql::CachedPlan::None;
        };
        if !matches!(**stmt, ast::Statement::Query(_))
            || sql::row_locks::locks_rows(stmt)
            || params.as_ref().is_some_and(|p| !p.is_empty())
            || setting("plan_cache_mode") == "force_custom_plan"
        {
            return sql::CachedPlan::None;
        }
        let options = self.df_state.config_options();
        let context = self.plan_context(catalog);
        let now_type = datafusion::arrow::datatypes::DataType::Timestamp(
            datafusion::arrow::datatypes::TimeUnit::Nanosecond,
            options.execution.time_zone.as_deref().map(Into::into),
        );
        sql::CachedPlan::lookup(&self.server.plan_cache, context, stmt, &now_type)
    }

    /// The session's kept plans of statements with parameters and what a plan made now
    /// is made from (`sql::prepared_plans`), unless `plan_cache_mode = force_custom_plan`.
    fn prepared_plans_context(
        &self,
        catalog: &str,
    ) -> Option<sql::prepared_plans::PreparedContext> {
        let mode = self.settings.get("plan_cache_mode").unwrap_or_default();
        if mode == "force_custom_plan" {
            return None;
        }
        Some(sql::prepared_plans::PreparedContext {
            plans: self.prepared_plans.clone(),
            context: self.plans_context_in(catalog),
            force_generic: mode == "force_generic_plan",
            generic_runs: self.executing.clone(),
        })
    }

    /// What a plan over tables made now is made from (`plan_context`) and the catalog's
    /// generation: any change to the catalog may change such a plan.
    fn plans_context_in(&self, catalog: &str) -> String {
        let generation = self.server.db.catalog.generation();
        format!("{}\ncatalog {generation}", self.plan_context(catalog))
    }

    /// [`plans_context_in`](Self::plans_context_in) the catalog a statement without
    /// `ctid` resolves in: the key of a kept description (`sql::describe`).
    pub fn plans_context(&self) -> String {
        self.plans_context_in(DATABASE)
    }

    /// What a plan made now is made from, for the keys of kept plans: the DataFusion
    /// catalog names resolve in, the settings that read constants or resolve names, and
    /// the generation of the views' definitions (planned into the statements that name
    /// them).
    fn plan_context(&self, catalog: &str) -> String {
        let setting = |name: &str| self.settings.get(name).unwrap_or_default();
        [
            catalog.to_string(),
            setting("TimeZone"),
            setting("DateStyle"),
            setting("IntervalStyle"),
            setting("search_path"),
            // One partition or several (`run_in_transaction`).
            setting("max_parallel_workers_per_gather"),
            format!("views {}", self.server.db.catalog.views_generation()),
        ]
        .join("\n")
    }

    /// How this session reads and writes values as text.
    pub fn text_format(&self) -> TextFormat {
        text_format_for(&self.settings)
    }

    /// What the catalog views and functions need to know about this session.
    pub fn catalog_info(&self) -> SessionInfo {
        SessionInfo::new(
            self.db().clone(),
            self.pid,
            self.user.clone(),
            self.settings.clone(),
        )
        .with_sequences(self.sequences.clone())
        .with_cancel(self.cancel.clone())
        .with_temp_schema(self.temp.schema())
    }

    /// psql's meta-command queries that DataFusion cannot run, answered from the catalog.
    pub fn intercept(&self, sql: &str) -> Option<PgResult<Outcome>> {
        let answer = crate::pgcatalog::intercept(sql, &self.catalog_info())?;
        Some(answer.and_then(|(schema, batches)| {
            let stream = datafusion::physical_plan::memory::MemoryStream::try_new(
                batches,
                schema.clone(),
                None,
            )
            .map_err(crate::errors::from_datafusion)?;
            Ok(Outcome::Rows {
                schema,
                stream: Box::pin(stream),
                tag: "SELECT",
            })
        }))
    }

    pub fn db(&self) -> &Arc<Database> {
        &self.server.db
    }

    /// An error in a transaction block: the block fails (until ROLLBACK), and as
    /// PostgreSQL aborts the transaction — or its newest savepoint's subtransaction — at
    /// the error, the table locks taken since go now.
    pub fn fail_block(&mut self) {
        if self.txn.in_block {
            self.txn.fail_if_in_block();
            let kept = self.txn.savepoints.locks_kept_on_error();
            self.relation_locks.release_since(&self.server.db, kept);
        }
    }

    /// Runs one parsed statement. `text` is its SQL (for error positions and logs).
    pub async fn run(
        &mut self,
        parsed: &Parsed,
        params: Option<Vec<datafusion::scalar::ScalarValue>>,
        notices: &mut Vec<Notice>,
    ) -> PgResult<Outcome> {
        if let Some(result) = self.run_transaction_control(parsed, notices).await {
            return result.inspect_err(|_| self.txn.fail_if_in_block());
        }
        if let Some(bound) = self.executed(parsed) {
            // EXECUTE: the prepared statement runs with the values given.
            let (statement, values, generic_runs) =
                bound.inspect_err(|_| self.txn.fail_if_in_block())?;
            self.executing = Some(generic_runs);
            let result = Box::pin(self.run(&statement, Some(values), notices)).await;
            self.executing = None;
            return result;
        }
        // Outside a block the statement is its own transaction, for settings too (SET LOCAL
        // lasts one statement). A statement whose future was dropped left one open.
        let own_transaction = !self.txn.in_block;
        if own_transaction {
            self.relation_locks.release(&self.server.db);
            if self.settings.in_transaction() {
                self.settings.abort_transaction();
            }
            self.txn.ddl.rollback();
            self.settings.begin_transaction();
        }
        let mut result = self.run_in_transaction(parsed, params, notices).await;
        if result.is_err() {
            self.fail_block();
        }
        let database = self.db().io_stats.clone();
        if let Err(e) = &result {
            if e.code == sqlstate::T_R_DEADLOCK_DETECTED {
                database.database.deadlock();
            }
        }
        if own_transaction {
            // The transaction ends with the statement: for rows computed as they are sent,
            // once they have been.
            result = match result {
                Ok(Outcome::Rows {
                    schema,
                    stream,
                    tag,
                }) => {
                    let counted = database.clone();
                    let (temp, db) = (self.temp.clone(), self.db().clone());
                    let stream = telling_its_end(stream, move |complete| {
                        counted.database.transaction_ended(complete);
                        // ON COMMIT actions once the rows are out (they may be a
                        // temporary table's).
                        if let Err(e) = temp.transaction_ended(&db, complete) {
                            tracing::error!("ON COMMIT action failed: {e}");
                        }
                    });
                    Ok(Outcome::Rows {
                        schema,
                        stream,
                        tag,
                    })
                }
                done => {
                    database.database.transaction_ended(done.is_ok());
                    let ended = self.temp.transaction_ended(self.db(), done.is_ok());
                    done.and_then(|outcome| ended.map(|_| outcome))
                }
            };
            if result.is_ok() {
                self.settings.commit_transaction();
                self.txn.ddl.commit();
            } else {
                self.settings.abort_transaction();
                self.txn.ddl.rollback();
            }
            result = self.relation_locks.release_after(&self.server.db, result);
        }
        result
    }

    /// Runs BEGIN, COMMIT, ROLLBACK and the savepoint statements; refuses every other
    /// statement in a failed block (`None`: the statement is not refused and runs).
    async fn run_transaction_control(
        &mut self,
        parsed: &Parsed,
        notices: &mut Vec<Notice>,
    ) -> Option<PgResult<Outcome>> {
        use sql::savepoint;
        let stmt = match parsed {
            Parsed::Sql(stmt) => Some(&**stmt),
            _ => None,
        };
        match stmt {
            Some(ast::Statement::Commit { chain, .. }) => {
                return Some(self.end_block(true, *chain, notices).await)
            }
            Some(ast::Statement::Rollback {
                chain,
                savepoint: None,
            }) => return Some(self.end_block(false, *chain, notices).await),
            Some(ast::Statement::Rollback {
                savepoint: Some(name),
                ..
            }) => return Some(savepoint::rollback_to(self, name)),
            _ => {}
        }
        if self.txn.in_block && self.txn.is_failed() {
            return Some(Err(sql::in_failed_transaction()));
        }
        match stmt? {
            ast::Statement::StartTransaction { modes, .. } => Some(self.begin(modes, notices)),
            ast::Statement::Savepoint { name } => Some(savepoint::set(self, name)),
            ast::Statement::ReleaseSavepoint { name } => Some(savepoint::release(self, name)),
            _ => None,
        }
    }

    async fn run_in_transaction(
        &mut self,
        parsed: &Parsed,
        params: Option<Vec<datafusion::scalar::ScalarValue>>,
        notices: &mut Vec<Notice>,
    ) -> PgResult<Outcome> {
        if let Parsed::Sql(stmt) = parsed {
            if let Some(outcome) = crate::show::run(self, stmt, notices)? {
                return Ok(outcome);
            }
        }
        let db = self.db().clone();
        sql::transaction_modes::refuse_if_read_only(
            &self.settings,
            &db,
            self.temp.schema(),
            parsed,
        )?;
        let begin =
            || (db.txns.begin()).map_err(|e| PgError::io("could not reserve transaction ids", &e));
        // A block writes under its newest savepoint's subtransaction, if it has one.
        let (xid, own) = match (self.txn.in_block, parsed.writes()) {
            (true, writes) => {
                let top = match self.txn.xid {
                    None if writes => *self.txn.xid.insert(begin()?),
                    top => top.unwrap_or(0),
                };
                let xid = match writes {
                    true => self.txn.savepoints.writing_xid(&db, top)?,
                    false => top,
                };
                (xid, self.txn.savepoints.own_xids(top))
            }
            (false, true) => {
                let xid = begin()?;
                (xid, OwnXids::of(xid))
            }
            (false, false) => (0, OwnXids::default()),
        };
        let top = own.top;
        let cid = self.txn.next_cid;
        self.txn.next_cid += 1;
        let (snapshot, transaction_snapshot) =
            self.txn
                .snapshot
                .for_statement(&db, &self.settings, self.txn.in_block, own, cid);
        // A FETCH or MOVE runs under its cursor's flag, which the cursor's plan looks at.
        self.cancel = match parsed {
            Parsed::Fetch(f) => self.cursors.flag_of(&f.cursor).unwrap_or_default(),
            _ => CancelFlag::new(),
        };
        *self.running.lock() = self.cancel.clone();
        self.statement_timer = crate::statement_timer::StatementTimer::start(
            self.settings.statement_timeout_ms(),
            self.cancel.clone(),
        );
        let ctx = Arc::new(StatementContext {
            db: db.clone(),
            snapshot,
            transaction_snapshot,
            xid,
            cid,
            track_io_timing: self.settings.track_io_timing(),
            pid: self.pid,
            io: StreamSettings::from_settings(&self.settings),
            planner: PlannerSettings::from_settings(&self.settings),
            cancel: self.cancel.clone(),
            usage: Mutex::new(Default::default()),
            planning_usage: Mutex::new(Default::default()),
            temp: Some(TempSpace {
                files: self.temp_files.clone(),
                maintenance_work_mem_bytes: self.settings.maintenance_work_mem_kb().max(1024)
                    as usize
                    * 1024,
            }),
            params: params.clone().unwrap_or_default(),
        });
        if let Some(a) = &self.activity {
            a.transaction_ids((top != 0).then_some(top), ctx.snapshot.xmin());
        }
        self.last_statement = Some(ctx.clone());
        let autocommit_xid = (!self.txn.in_block && xid != 0).then_some(xid);
        let block_failed = self.txn.in_block.then(|| self.txn.failed.clone());
        let guard = StatementGuard::new(
            db.clone(),
            self.cancel.clone(),
            autocommit_xid,
            block_failed,
            self.settings.synchronous_commit_on(),
            self.pid,
        );
        let in_block = self.txn.in_block;
        let activity = self.activity.as_deref();
        let statement = (parsed, self.temp.schema(), in_block);
        (self.relation_locks)
            .take(&db, &ctx, &self.settings, activity, statement)
            .await?;
        let catalog = if mentions_ctid(parsed) {
            DATABASE_WITH_CTID
        } else {
            DATABASE
        };
        let cached = self.cached_plan(parsed, &params, catalog);
        let prepared = self.prepared_plans_context(catalog);
        let generic = prepared
            .as_ref()
            .is_some_and(|p| p.takes_generic_plan(parsed, &params, &ctx.planner));
        // A cached plan reads statistics views only (in one partition) and calls none of the
        // session's functions: they need not be registered. A generic physical plan needs
        // no catalogs either.
        let hit = matches!(cached, sql::CachedPlan::Hit { .. });
        let mut state = if cached.has_generic_plan() || generic {
            self.generic_plan_state.clone()
        } else {
            self.df_state.clone()
        };
        state.config_mut().set_extension(ctx.clone());
        self.work_mem.set_limits(
            self.settings.work_mem_kb(),
            self.settings.hash_mem_multiplier(),
        );
        self.temp_files.begin_statement(
            &ctx,
            self.settings.temp_file_limit_kb(),
            self.settings.log_temp_files_kb(),
        );
        state.config_mut().options_mut().catalog.default_catalog = catalog.into();
        // enable_hashjoin = off: equi-joins merge (DataFusion's sort-merge join), as
        // PostgreSQL's planner would choose, unless merge joins are off too.
        state.config_mut().options_mut().optimizer.prefer_hash_join =
            self.settings.enable_hashjoin() || !self.settings.enable_mergejoin();
        // No parallel workers: one partition, so that a Seq Scan returns its rows in the
        // table's order, as PostgreSQL's does without a Gather.
        if hit || self.settings.max_parallel_workers_per_gather() == 0 {
            state.config_mut().options_mut().execution.target_partitions = 1;
        }
        let config = state.config_options().clone();
        state.execution_props_mut().mark_start_execution(config);
        // now() is the transaction's start, as in PostgreSQL (`pg_stat_activity.xact_start`).
        if let Some(started) = self.activity.as_ref().and_then(|a| a.xact_start()) {
            state.execution_props_mut().query_execution_start_time = Some(started);
        }
        let info = (!hit && !generic).then(|| self.catalog_info());
        if let Some(info) = &info {
            crate::pgcatalog::register_functions(&mut state, info);
        }
        let run = StatementRun {
            db,
            ctx,
            cached,
            state,
            text_format: self.text_format(),
            params,
            sequences: self.sequences.clone(),
            prepared,
            temp: self.temp.clone(),
        };
        if !self.txn.in_block {
            self.txn.next_cid = 0;
        }
        if let Parsed::Sql(stmt) = parsed {
            if let ast::Statement::Copy { .. } = &**stmt {
                // COPY FROM STDIN keeps the guard until its data has arrived.
                return crate::copy::start(self, run, guard, stmt).await;
            }
        }
        let mut result = self.dispatch(&run, parsed, notices).await;
        if let (Some(xid), Ok(_)) = (autocommit_xid, &result) {
            if let Err(e) = self.txn.ddl.committing(xid) {
                result = Err(e);
            }
        }
        guard.finish(result.is_ok())?;
        for (name, value, local) in info.iter().flat_map(SessionInfo::take_setting_changes) {
            self.settings
                .set(&name, &value, local)
                .map_err(crate::show::setting_error)?;
        }
        // The rows are computed as they are sent: a cancel or the statement's timeout
        // still stops them, and the timer ends with them.
        let timer = self.statement_timer.take();
        let cancel = self.cancel.clone();
        result.map(|outcome| outcome.map_rows(|s| stopping_when_canceled(s, cancel, timer)))
    }

    async fn dispatch(
        &mut self,
        run: &StatementRun,
        parsed: &Parsed,
        notices: &mut Vec<Notice>,
    ) -> PgResult<Outcome> {
        let db = run.db.clone();
        let stmt = match parsed {
            Parsed::Checkpoint => {
                tokio::task::block_in_place(|| {
                    db.checkpoint(self.server.settings.track_io_timing())
                })?;
                return Ok(Outcome::Done("CHECKPOINT".into()));
            }
            Parsed::AlterSystem(change) => {
                let superuser = self.settings.is_superuser();
                sql::alter_system::run(db.data_dir(), change, self.txn.in_block, superuser)?;
                return Ok(Outcome::Done("ALTER SYSTEM".into()));
            }
            // Its locks were taken with the statement's.
            Parsed::Lock(lock) => {
                sql::relation_locks::locked_relations_exist(&db, self.temp.schema(), lock)?;
                return Ok(Outcome::Done("LOCK TABLE".into()));
            }
            Parsed::Cluster(stmt) => {
                let in_block = self.txn.in_block;
                return sql::cluster::run(run, stmt, in_block, &mut self.txn.ddl, notices);
            }
            Parsed::Reindex(stmt) => {
                let in_block = self.txn.in_block;
                return sql::reindex::run(run, stmt, in_block, &mut self.txn.ddl, notices);
            }
            Parsed::Vacuum(stmt) => {
                let in_block = self.txn.in_block;
                let log = &mut self.txn.ddl;
                return sql::vacuum::run(run, stmt, &self.settings, in_block, log, notices);
            }
            Parsed::CreateExtension(create) => {
                ddl::create_extension(create)?;
                return Ok(Outcome::Done("CREATE EXTENSION".into()));
            }
            Parsed::Sequence(seq) => {
                if let Some(n) = sql::sequence::run(&db, seq, &mut self.txn.ddl)? {
                    notices.push(Notice {
                        code: if seq.alter {
                            "00000"
                        } else {
                            sqlstate::DUPLICATE_TABLE
                        },
                        ..Notice::notice(n)
                    });
                }
                let tag = if seq.alter {
                    "ALTER SEQUENCE"
                } else {
                    "CREATE SEQUENCE"
                };
                return Ok(Outcome::Done(tag.into()));
            }
            Parsed::Alter(alter) => {
                return sql::alter_table::run(run, alter, &mut self.txn.ddl, notices).await;
            }
            Parsed::CreateUnlogged(stmt) => {
                let ast::Statement::CreateTable(create) = &**stmt else {
                    return Err(PgError::syntax("syntax error at or near \"UNLOGGED\""));
                };
                let temp_buffers = self.settings.temp_buffers_blocks() as usize;
                let log = &mut self.txn.ddl;
                return create_table(run, create, true, temp_buffers, log, notices).await;
            }
            Parsed::Fetch(fetch) => return self.cursors.fetch(fetch).await,
            Parsed::Prepare(prepare) => {
                let text = self.sent_text();
                let text = text.unwrap_or_else(|| format!("PREPARE {}", prepare.name));
                let (name, prepared) = sql::prepare::prepare(self, prepare, text).await?;
                self.prepared.add(name, prepared)?;
                return Ok(Outcome::Done("PREPARE".into()));
            }
            Parsed::Sql(stmt) => stmt,
        };
        match &**stmt {
            s if sql::row_locks::locks_rows(s) => sql::row_locks::run(run, stmt).await,
            ast::Statement::Query(_) => {
                let stream = run.query_stream(stmt).await?;
                let schema = sql::colnames::rename(stmt, stream.schema());
                Ok(Outcome::Rows {
                    schema,
                    stream,
                    tag: "SELECT",
                })
            }
            ast::Statement::CreateTable(create) => {
                let temp_buffers = self.settings.temp_buffers_blocks() as usize;
                let log = &mut self.txn.ddl;
                create_table(run, create, false, temp_buffers, log, notices).await
            }
            ast::Statement::Drop { object_type, .. } => {
                notices.extend(ddl::drop(&db, self.temp.schema(), stmt, &mut self.txn.ddl)?);
                let tag = match object_type {
                    ast::ObjectType::Index => "DROP INDEX",
                    ast::ObjectType::Sequence => "DROP SEQUENCE",
                    ast::ObjectType::View => "DROP VIEW",
                    _ => "DROP TABLE",
                };
                Ok(Outcome::Done(tag.into()))
            }
            ast::Statement::CreateView(create) => {
                sql::view::create_view(run, create, &mut self.txn.ddl).await?;
                Ok(Outcome::Done("CREATE VIEW".into()))
            }
            ast::Statement::CreateIndex(create) => {
                // The one notice: `relation "x" already exists, skipping` (42P07).
                for message in ddl::create_index(run, create, &mut self.txn.ddl).await? {
                    notices.push(Notice {
                        code: sqlstate::DUPLICATE_TABLE,
                        ..Notice::notice(message)
                    });
                }
                Ok(Outcome::Done("CREATE INDEX".into()))
            }
            ast::Statement::Truncate(t) => {
                let names: Vec<_> = t.table_names.iter().map(|t| t.name.clone()).collect();
                ddl::truncate(&db, self.temp.schema(), &names, &mut self.txn.ddl)?;
                Ok(Outcome::Done("TRUNCATE TABLE".into()))
            }
            ast::Statement::Insert(ins) => insert::insert(run, ins).await,
            ast::Statement::Delete(_) | ast::Statement::Update(_) => sql::dml::run(run, stmt).await,
            ast::Statement::Explain { .. } => crate::explain::run(run, &self.settings, stmt).await,
            ast::Statement::Declare { stmts } if stmts.len() == 1 => {
                let (in_block, flag) = (self.txn.in_block, self.cancel.clone());
                let text = self.sent_text();
                let cursors = &mut self.cursors;
                sql::cursor::declare(cursors, run, &stmts[0], in_block, flag, text).await
            }
            ast::Statement::Close { cursor } => sql::cursor::close(&mut self.cursors, cursor),
            ast::Statement::Deallocate { name, .. } => {
                let name = sql::prepare::deallocated(name);
                self.prepared.remove(name.as_deref())?;
                let tag = if name.is_some() {
                    "DEALLOCATE"
                } else {
                    "DEALLOCATE ALL"
                };
                Ok(Outcome::Done(tag.into()))
            }
            ast::Statement::Discard { object_type } => self.discard(object_type),
            ast::Statement::CreateSequence {
                temporary: true, ..
            } => Err(PgError::unsupported(
                "temporary sequences are not supported",
            )),
            other => Err(PgError::unsupported(format!(
                "statement not supported: {}",
                first_words(&other.to_string())
            ))),
        }
    }

    /// For `EXECUTE name (values)` or `EXPLAIN … EXECUTE …`: the statement to run (the
    /// prepared one, or its EXPLAIN), its parameter values and its count of generic runs.
    #[allow(clippy::type_complexity)]
    fn executed(
        &mut self,
        parsed: &Parsed,
    ) -> Option<PgResult<(Parsed, Vec<ScalarValue>, Arc<AtomicU64>)>> {
        let Parsed::Sql(stmt) = parsed else {
            return None;
        };
        let (execute, explain) = match &**stmt {
            ast::Statement::Explain { statement, .. } => (&**statement, Some(&**stmt)),
            s => (s, None),
        };
        let ast::Statement::Execute {
            name, parameters, ..
        } = execute
        else {
            return None;
        };
        let bound = sql::prepare::executed_name(name).and_then(|name| {
            let fmt = self.text_format();
            self.prepared.bind(&name, parameters, &self.df_state, &fmt)
        });
        Some(
            bound.and_then(|(statement, values, runs)| match (explain, statement) {
                (None, statement) => Ok((statement, values, runs)),
                (Some(ast::Statement::Explain { .. }), Parsed::Sql(inner)) => {
                    let mut explain = explain.expect("matched").clone();
                    if let ast::Statement::Explain { statement, .. } = &mut explain {
                        *statement = inner;
                    }
                    Ok((Parsed::Sql(Box::new(explain)), values, runs))
                }
                _ => Err(PgError::unsupported(
                    "EXPLAIN of this prepared statement is not supported",
                )),
            }),
        )
    }

    /// What the client sent for the running statement (`pg_stat_activity.query`), if the
    /// session has a connection.
    fn sent_text(&self) -> Option<String> {
        self.activity.as_ref().map(|a| a.status().query)
    }

    /// `DISCARD ALL | PLANS | SEQUENCES | TEMP`: forgets what the session keeps.
    fn discard(&mut self, what: &ast::DiscardObject) -> PgResult<Outcome> {
        let all = matches!(what, ast::DiscardObject::ALL);
        if all && self.txn.in_block {
            return Err(PgError::new(
                sqlstate::ACTIVE_SQL_TRANSACTION,
                "DISCARD ALL cannot run inside a transaction block",
            ));
        }
        if all {
            self.cursors.close(None)?;
            self.prepared.remove(None)?;
            self.settings.reset_all();
        }
        if all || matches!(what, ast::DiscardObject::PLANS) {
            self.prepared_plans = Arc::default();
        }
        if all || matches!(what, ast::DiscardObject::SEQUENCES) {
            self.sequences = Arc::default();
        }
        if all || matches!(what, ast::DiscardObject::TEMP) {
            // The session's temporary tables go, as a DROP of them would; its temporary
            // schema and local buffers stay.
            if let Some(schema) = self.temp.schema() {
                let db = self.db().clone();
                let tables = db.catalog.tables().into_iter();
                let tables = tables.filter(|t| t.schema == schema).collect();
                sql::ddl::drop_tables(&db, tables, true, &mut self.txn.ddl)?;
            }
        }
        Ok(Outcome::Done(format!("DISCARD {what}")))
    }

    fn begin(
        &mut self,
        modes: &[ast::TransactionMode],
        notices: &mut Vec<Notice>,
    ) -> PgResult<Outcome> {
        if self.txn.in_block {
            if !self.txn.implicit {
                notices.push(Notice::warning(
                    "25001",
                    "there is already a transaction in progress",
                ));
            }
            // PostgreSQL applies the modes to the transaction in progress, as SET
            // TRANSACTION would.
            let queried = self.txn.snapshot.queried();
            sql::transaction_modes::apply(&mut self.settings, modes, queried)?;
            // BEGIN in a Query message's implicit block makes it explicit, silently.
            self.txn.implicit = false;
        } else {
            self.open_block(false);
            if let Err(e) = sql::transaction_modes::apply(&mut self.settings, modes, false) {
                self.txn = TxnBlock::default();
                self.settings.abort_transaction();
                return Err(e);
            }
        }
        Ok(Outcome::TxnStart("BEGIN".into()))
    }

    /// COMMIT (`commit` = true) or ROLLBACK, `chain`ing a new block or not.
    async fn end_block(
        &mut self,
        commit: bool,
        chain: bool,
        notices: &mut Vec<Notice>,
    ) -> PgResult<Outcome> {
        let tag = if commit { "COMMIT" } else { "ROLLBACK" };
        if !self.txn.explicit() && chain {
            return Err(PgError::new(
                sqlstate::NO_ACTIVE_SQL_TRANSACTION,
                format!("{tag} AND CHAIN can only be used in transaction blocks"),
            ));
        }
        if !self.txn.explicit() {
            notices.push(Notice::warning(
                "25P01",
                "there is no transaction in progress",
            ));
            // In an implicit block it still ends the block, as PostgreSQL's does.
            if !self.txn.in_block {
                return Ok(Outcome::TxnEnd(tag.into()));
            }
        }
        self.finish_block(commit, chain).await
    }

    /// Opens the implicit block of a Query message's statements, unless a block is open.
    pub fn begin_implicit_block(&mut self) {
        if !self.txn.in_block {
            self.open_block(true);
        }
    }

    /// Opens a transaction block (BEGIN's, or an `implicit` one) where none is open.
    fn open_block(&mut self, implicit: bool) {
        debug_assert!(!self.txn.in_block, "a block is open already");
        self.relation_locks.release(&self.server.db);
        self.txn = TxnBlock {
            in_block: true,
            implicit,
            ..TxnBlock::default()
        };
        // A statement whose future was dropped may have left the settings' transaction.
        if self.settings.in_transaction() {
            self.settings.abort_transaction();
        }
        self.settings.begin_transaction();
    }

    /// The extended protocol's Execute of `parsed`. As in PostgreSQL, the statements
    /// Executed before a Sync share one transaction, which the Sync ends: from the
    /// second on they run in an implicit block (VACUUM refuses it, LOCK TABLE takes it),
    /// as a Query message's statements do. The first runs in it only if it writes, so
    /// that its rows go or stay with the rest; otherwise it is a transaction of its own,
    /// which is the same for a statement that writes nothing (and lets VACUUM run first).
    pub fn join_pipeline(&mut self, parsed: &Parsed) {
        if self.pipelining || parsed.writes() {
            self.begin_implicit_block();
        }
        self.pipelining = true;
    }

    /// Ends the implicit block of a Query message or of the Executes before a Sync, if
    /// one is open: commits it when every statement succeeded (`succeeded`), rolls it
    /// back otherwise.
    pub async fn end_implicit_block(&mut self, succeeded: bool) -> PgResult<()> {
        self.pipelining = false;
        if self.txn.in_block && self.txn.implicit {
            self.finish_block(succeeded, false).await?;
        }
        Ok(())
    }

    /// Ends the open block: commits it (`commit`, unless it failed) or rolls it back,
    /// `chain`ing a new block or not.
    async fn finish_block(&mut self, commit: bool, chain: bool) -> PgResult<Outcome> {
        let tag = if commit { "COMMIT" } else { "ROLLBACK" };
        let failed = self.txn.is_failed();
        let mut commit = commit && !failed;
        let mut committing_failed = None;
        // WITH HOLD cursors read their rows before the snapshot goes.
        let hold = sql::cursor::Hold {
            runtime: self.df_state.runtime_env().clone(),
            work_mem_bytes: self.settings.work_mem_kb().max(64) as usize * 1024,
        };
        if let Err(e) = self.cursors.end_transaction(commit, &hold).await {
            (commit, committing_failed) = (false, Some(e));
        }
        if let Some(xid) = self.txn.xid.take() {
            if commit {
                if let Err(e) = self.txn.ddl.committing(xid) {
                    (commit, committing_failed) = (false, Some(e));
                }
            }
            let db = self.db().clone();
            let own = self.txn.savepoints.own_xids(xid);
            let r = if commit {
                let by = Some((iolab_stats::BackendType::ClientBackend, self.pid));
                db.txns
                    .commit_with(&own, self.settings.synchronous_commit_on(), by)
            } else {
                db.txns.abort_all(&own)
            };
            r.map_err(|e| PgError::io("could not write commit log", &e))?;
        }
        let mut ddl = std::mem::take(&mut self.txn.ddl);
        self.txn = TxnBlock {
            in_block: chain,
            ..TxnBlock::default()
        };
        self.db().io_stats.database.transaction_ended(commit);
        match chain {
            true => self.settings.chain_transaction(commit),
            false if commit => self.settings.commit_transaction(),
            false => self.settings.abort_transaction(),
        }
        match commit {
            true => ddl.commit(),
            false => ddl.rollback(),
        }
        self.relation_locks.release(&self.server.db);
        self.temp.transaction_ended(self.db(), commit)?;
        if let Some(e) = committing_failed {
            return Err(e);
        }
        Ok(Outcome::TxnEnd(if commit {
            tag.into()
        } else {
            "ROLLBACK".into()
        }))
    }
}

impl Drop for Session {
    /// A session that ends inside a transaction block (the client went away) rolls it
    /// back: its rows and row locks go, and so does its DDL (as the block's log drops).
    fn drop(&mut self) {
        self.relation_locks.release(&self.server.db);
        if !self.txn.in_block {
            return;
        }
        if let Some(xid) = self.txn.xid.take() {
            let own = self.txn.savepoints.own_xids(xid);
            if let Err(e) = self.db().txns.abort_all(&own) {
                tracing::error!("could not abort transaction {xid}: {e}");
            }
        }
        self.db().io_stats.database.transaction_ended(false);
    }
}

/// The time from `then` to now (nothing if the clock went back).
fn since(then: chrono::DateTime<chrono::Utc>) -> std::time::Duration {
    (chrono::Utc::now() - then).to_std().unwrap_or_default()
}

/// How a session with `settings` reads and writes values as text (TimeZone,
/// extra_float_digits, DateStyle).
pub fn text_format_for(settings: &SessionSettings) -> TextFormat {
    sql::datetime_text::TextSettings::of(settings)
        .format()
        .with_extra_float_digits(settings.extra_float_digits())
}

/// CREATE [UNLOGGED] TABLE, with a column list or `AS query`, and PostgreSQL's tags:
/// `CREATE TABLE`, `SELECT n` for rows loaded by `AS query`, `CREATE TABLE AS` when `IF NOT
/// EXISTS` found the table (with the notice).
async fn create_table(
    run: &StatementRun,
    create: &ast::CreateTable,
    unlogged: bool,
    temp_buffers: usize,
    log: &mut DdlLog,
    notices: &mut Vec<Notice>,
) -> PgResult<Outcome> {
    if ddl::creates_temporary(create)? {
        // The session's temporary schema and local buffers, made at its first one.
        run.temp.space(&run.db, temp_buffers)?;
    }
    let (created, tag) = if create.query.is_some() {
        match ddl::create_table_as(run, create, unlogged, log).await? {
            Some(rows) => (true, format!("SELECT {rows}")),
            None => (false, "CREATE TABLE AS".to_string()),
        }
    } else {
        let created = ddl::create_table(run, create, unlogged, log)?;
        (created, "CREATE TABLE".to_string())
    };
    if !created {
        notices.push(Notice {
            code: sqlstate::DUPLICATE_TABLE,
            ..Notice::notice(ddl::table_exists_notice(create))
        });
    }
    Ok(Outcome::Done(tag))
}

fn first_words(sql: &str) -> String {
    sql.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

/// DataFusion's analyzer rules with iolab's date/time rules around type coercion:
/// PostgreSQL's result types before it, the session's zone and DateStyle after it
/// (`sql::session_time`).
fn analyzer_rules() -> Vec<Arc<dyn datafusion::optimizer::AnalyzerRule + Send + Sync>> {
    let mut rules = datafusion::optimizer::Analyzer::new().rules;
    let coercion = rules
        .iter()
        .position(|r| r.name() == "type_coercion")
        .unwrap_or(rules.len());
    rules.insert(coercion, Arc::new(sql::session_time::DateTimeTypesRule));
    rules.insert(
        0,
        Arc::new(sql::subquery_predicates::SubqueryPredicatesRule),
    );
    rules.push(Arc::new(sql::session_time::SessionTimeRule));
    rules.push(Arc::new(sql::checked_arithmetic::CheckedArithmeticRule));
    rules
}

/// DataFusion's state for a new session: our catalog, PostgreSQL-like options.
fn base_state(
    server: &Server,
    cursors: &sql::cursor::Cursors,
    prepared: &sql::prepare::PreparedStatements,
    temp: &Arc<SessionTemp>,
    runtime: Arc<datafusion::execution::runtime_env::RuntimeEnv>,
) -> SessionState {
    let db = &server.db;
    let mut config = SessionConfig::new()
        .with_default_catalog_and_schema(DATABASE, "public")
        .with_create_default_catalog_and_schema(false)
        .with_information_schema(false);
    config.options_mut().sql_parser.dialect = datafusion::config::Dialect::PostgreSQL;
    // A filter keeps all of its input's estimated rows: iolab's scans estimate their rows
    // after their quals (`PathEstimate::statistics`).
    config.options_mut().optimizer.default_filter_selectivity = 100;
    // `timestamptz`, `now()`: zoned timestamps (reported as timestamptz), in UTC as stored.
    config.options_mut().execution.time_zone =
        Some(iolab_catalog::types::TIMESTAMPTZ_ZONE.to_string());
    // A hash join's key bounds, which DataFusion offers its probe side's scan, are taken by
    // no scan of iolab's; a join that offers them cannot run in batches
    // (`iolab_engine::plan::hash_join_batches`).
    config
        .options_mut()
        .optimizer
        .enable_join_dynamic_filter_pushdown = false;
    // Cheap plans run in one partition (`iolab_engine::plan::partitions`).
    // Hash joins run in batches beyond the hash limit (`iolab_engine::plan::hash_join_batches`).
    let mut rules = datafusion::physical_optimizer::optimizer::PhysicalOptimizer::new().rules;
    // First: a scan planned again with conditions on InitPlan values
    // (`iolab_engine::plan::param_scans`) may give another order and partitioning.
    rules.insert(0, Arc::new(ParamIndexScans));
    rules.push(Arc::new(HashJoinBatches));
    // Before the sorts a merge join needs are added (`iolab_engine::plan::merge_joins`).
    let ensure = (rules.iter().position(|r| r.name() == "EnsureRequirements"))
        .expect("DataFusion adds sorts in EnsureRequirements");
    rules.insert(ensure, Arc::new(MergeJoinsNullsLast));
    let mut state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_physical_optimizer_rules(vec![Arc::new(OnePartitionWhenCheap::wrapping(
            vec![Arc::new(IndexNestedLoops)],
            rules,
        ))])
        .with_analyzer_rules(analyzer_rules())
        // After DataFusion's rules: min() / max() become ordered subqueries, and an ORDER BY
        // reaches the scan it sorts.
        .with_optimizer_rule(Arc::new(MinMaxThroughIndex))
        .with_optimizer_rule(Arc::new(OrderedScans))
        .with_runtime_env(runtime)
        .build();
    crate::pgcatalog::zoned_time::register(&mut state).expect("a new state takes functions");
    crate::pgcatalog::interval_scale::register(&mut state).expect("a new state takes functions");
    crate::pgcatalog::datetime_functions::register(&mut state)
        .expect("a new state takes functions");
    crate::pgcatalog::to_timestamp::register(&mut state).expect("a new state takes functions");
    crate::pgcatalog::percentile_disc::register(&mut state).expect("a new state takes functions");
    for (name, with_ctid) in [(DATABASE, false), (DATABASE_WITH_CTID, true)] {
        let catalog = MemoryCatalogProvider::new();
        catalog
            .register_schema(
                "public",
                Arc::new(PublicSchema::new(db.clone(), with_ctid, temp.clone())),
            )
            .expect("a new catalog accepts a schema");
        catalog
            .register_schema(
                PERSISTENT_PUBLIC,
                Arc::new(PublicSchema::persistent(db.clone(), with_ctid)),
            )
            .expect("a new catalog accepts a schema");
        let temp_schema = Arc::new(TempSchema::new(db.clone(), with_ctid, temp.clone()));
        catalog
            .register_schema("pg_temp", temp_schema)
            .expect("a new catalog accepts a schema");
        crate::pgcatalog::register_schemas(&catalog, db.clone());
        use crate::pgcatalog::computed_views::ComputedView;
        let cached_plans = ComputedView::cached_plans(server.plan_cache.clone());
        let cursors = ComputedView::cursors(cursors.listing());
        let prepared = ComputedView::prepared_statements(prepared.listing());
        let pg_catalog = catalog.schema("pg_catalog").expect("registered above");
        for (name, view) in [
            (
                "pg_cached_plans",
                Arc::new(cached_plans) as Arc<dyn TableProvider>,
            ),
            ("pg_cursors", Arc::new(cursors)),
            ("pg_prepared_statements", Arc::new(prepared)),
        ] {
            pg_catalog
                .register_table(name.into(), view)
                .expect("pg_catalog accepts views");
        }
        let catalog = SessionCatalog::new(catalog, db.clone(), with_ctid, temp.clone());
        state
            .catalog_list()
            .register_catalog(name.into(), Arc::new(catalog));
    }
    state
}

/// The database's name, and DataFusion's name for the same database seen by statements
/// that name the `ctid` system column (its tables have one more column).
const DATABASE: &str = "postgres";
const DATABASE_WITH_CTID: &str = "postgres_with_ctid";

/// Does the statement name the `ctid` system column (as `ctid` or `t.ctid`)?
fn mentions_ctid(parsed: &Parsed) -> bool {
    let Parsed::Sql(stmt) = parsed else {
        return false;
    };
    let changed =
        |s: &ast::Statement| matches!(s, ast::Statement::Delete(_) | ast::Statement::Update(_));
    let stmt: &ast::Statement = match &**stmt {
        ast::Statement::Explain { statement, .. } if changed(statement) => return true,
        s if changed(s) => return true, // their rows are found by ctid
        s if sql::row_locks::locks_rows(s) => return true, // and so are the rows locked
        ast::Statement::Explain { statement, .. } => statement,
        s => s,
    };
    // An INSERT's RETURNING reads the rows inserted (see `sql::returning`), not the tables.
    if let ast::Statement::Insert(ins) = stmt {
        return ins.source.as_deref().is_some_and(|q| names_ctid(q));
    }
    names_ctid(stmt)
}

/// Does `node` name a column `ctid` (as `ctid` or `t.ctid`)?
fn names_ctid(node: &impl ast::Visit) -> bool {
    let is_ctid = |i: &ast::Ident| i.value.eq_ignore_ascii_case("ctid");
    ast::visit_expressions(node, |e| match e {
        ast::Expr::Identifier(i) if is_ctid(i) => std::ops::ControlFlow::Break(()),
        ast::Expr::CompoundIdentifier(parts) if parts.last().is_some_and(is_ctid) => {
            std::ops::ControlFlow::Break(())
        }
        _ => std::ops::ControlFlow::Continue(()),
    })
    .is_break()
}

/// The error for a SQLSTATE-less internal state problem.
pub fn not_in_copy() -> PgError {
    PgError::new(
        sqlstate::PROTOCOL_VIOLATION,
        "unexpected message type during COPY",
    )
}
