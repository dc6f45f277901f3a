//! Statement routing: what iolab runs itself and what it hands to DataFusion.
//!
//! A query string is split into statements (`split`), each is parsed with sqlparser's
//! PostgreSQL dialect (after a few words sqlparser does not know are handled: `CREATE
//! UNLOGGED TABLE`, `CHECKPOINT`, `VACUUM`, `ANALYZE`, `CREATE EXTENSION`), and then
//! - transaction control, settings, DDL, INSERT and COPY are run by iolab (`txn`,
//!   `ddl`, `insert`, `copy`, `show`), and so are DELETE and UPDATE once DataFusion has
//!   found their rows (`dml`);
//! - queries (SELECT, VALUES, WITH …) are planned and run by DataFusion against the
//!   heap tables, with a [`StatementContext`] attached so the scans know the statement's
//!   snapshot, transaction, cancel flag and I/O counters; the views a statement names are
//!   planned from their stored text into its plan first (`view_planning`);
//! - EXPLAIN plans its statement the same way (and with ANALYZE runs it), then prints the
//!   plan in PostgreSQL's layout (`crate::explain`);
//! - a query over the statistics views reuses the optimized plan of an earlier statement
//!   that differed from it only in its filters' constants (`plan_cache`, `normalize`).
//!
//! Every statement runs in a transaction: its own (autocommit) or the session's open
//! transaction block. A statement that writes gets a transaction id; it commits when
//! the statement succeeds (autocommit) or at COMMIT, and aborts on error, on cancel and
//! when the client goes away (a [`StatementGuard`] sees to that even if the future
//! running the statement is dropped half-way).

pub mod alias_lists;
pub mod alter_parse;
pub mod alter_system;
pub mod alter_table;
pub mod array_literals;
pub mod array_text;
pub mod bind;
pub mod calls;
pub mod checked_arithmetic;
pub mod cluster;
pub mod colnames;
pub mod constraints;
pub mod ctas_columns;
pub mod cursor;
pub mod datetime_text;
pub mod ddl;
pub mod ddl_log;
pub mod defaults;
pub mod describe;
pub mod dml;
pub mod fetch;
pub mod generic_plan;
pub mod insert;
pub mod integer_constants;
pub mod lateral_values;
pub mod normalize;
pub mod on_conflict;
pub mod params;
pub mod plan_cache;
pub mod prepare;
pub mod prepared_plans;
pub mod recheck;
pub mod reindex;
pub mod relation_locks;
pub mod reloptions;
pub mod returning;
pub mod row_locks;
pub mod savepoint;
pub mod sequence;
pub mod session_time;
pub mod set_functions;
pub mod split;
pub mod subquery_predicates;
pub mod tokens;
pub mod transaction_modes;
pub mod typed_literals;
pub mod unsigned_results;
pub mod upsert;
pub mod vacuum;
pub mod view;
pub mod view_planning;

use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::execution::context::SessionState;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::sqlparser::ast::{self, SelectInto};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use iolab_catalog::{sqlstate, PgError, PgResult};
use iolab_engine::exec::cancel::CancelFlag;
use iolab_engine::exec::StatementContext;
use iolab_engine::txn::Xid;
use iolab_engine::Database;

use crate::errors::{from_datafusion, from_parser};

/// A statement after parsing.
#[derive(Clone, Debug)]
pub enum Parsed {
    Sql(Box<ast::Statement>),
    /// `CREATE UNLOGGED TABLE …` (sqlparser does not know UNLOGGED; the word is cut out).
    CreateUnlogged(Box<ast::Statement>),
    Checkpoint,
    /// `VACUUM …` or `ANALYZE …` (see `vacuum`).
    Vacuum(vacuum::VacuumStmt),
    /// `CREATE EXTENSION …` (sqlparser wants its options in one order, after WITH).
    CreateExtension(ddl::CreateExtension),
    /// `CREATE SEQUENCE …` / `ALTER SEQUENCE …` (see `sequence`).
    Sequence(sequence::SequenceStmt),
    /// `ALTER TABLE | INDEX | VIEW …`, `ALTER SEQUENCE … RENAME` (see `alter_parse`).
    Alter(alter_parse::AlterStatement),
    /// `FETCH …` or `MOVE …` (see `fetch`).
    Fetch(fetch::FetchStmt),
    /// `PREPARE name [(types)] AS statement` (see `prepare`).
    Prepare(prepare::PrepareStmt),
    /// `ALTER SYSTEM …` (see `alter_system`).
    AlterSystem(iolab_settings::auto_conf::AlterSystem),
    /// `LOCK [TABLE] …` (see `relation_locks`).
    Lock(relation_locks::LockStmt),
    /// `CLUSTER …` (see `cluster`).
    Cluster(cluster::ClusterStmt),
    /// `REINDEX …` (see `reindex`).
    Reindex(reindex::ReindexStmt),
}

impl Parsed {
    /// The sqlparser statement of a plain SQL statement.
    pub fn into_statement(self) -> ast::Statement {
        match self {
            Parsed::Sql(s) | Parsed::CreateUnlogged(s) => *s,
            other => unreachable!("{other:?} has no sqlparser statement"),
        }
    }

    /// Does the statement write table data (and so need a transaction id)? CREATE TABLE …
    /// AS does: it loads its query's rows; so does a call of `pg_current_xact_id()`, which
    /// gives the transaction an id.
    pub fn writes(&self) -> bool {
        match self {
            Parsed::Sql(s) => {
                matches!(
                    **s,
                    ast::Statement::Insert(_)
                        | ast::Statement::Copy { .. }
                        | ast::Statement::Update(_)
                        | ast::Statement::Delete(_)
                ) || is_create_table_as(s)
                    || row_locks::locks_rows(s)
                    || crate::explain::writes(s)
                    || crate::pgcatalog::xact_functions::assigns_xid(s)
            }
            Parsed::CreateUnlogged(s) => is_create_table_as(s),
            _ => false,
        }
    }
}

fn is_create_table_as(stmt: &ast::Statement) -> bool {
    matches!(stmt, ast::Statement::CreateTable(create) if create.query.is_some())
}

/// [`parse`] for a statement a session sent: its date/time literals are read with the
/// session's text settings (`fmt`; see `typed_literals`).
pub fn parse_in_session(
    text: &str,
    whole: &str,
    offset: usize,
    fmt: &iolab_engine::values::TextFormat,
) -> PgResult<Parsed> {
    parse_reading(text, whole, offset, typed_literals::Reading::Session(fmt))
}

/// Parses one statement's text (`offset` = its position in the whole query string, for
/// error positions), where no session's settings apply (a view's query, a COPY's).
pub fn parse(text: &str, whole: &str, offset: usize) -> PgResult<Parsed> {
    parse_reading(text, whole, offset, typed_literals::Reading::AnySession)
}

/// [`parse`], its date/time literals read as `reading` says.
pub(crate) fn parse_reading(
    text: &str,
    whole: &str,
    offset: usize,
    reading: typed_literals::Reading,
) -> PgResult<Parsed> {
    let words: Vec<String> = split::strip_comments(text)
        .split_whitespace()
        .take(3)
        .map(|w| w.trim_end_matches(';').to_ascii_uppercase())
        .collect();
    let words: Vec<&str> = words.iter().map(|s| s.as_str()).collect();
    if vacuum::is_vacuum_or_analyze(text) {
        return vacuum::parse(text, whole, offset).map(Parsed::Vacuum);
    }
    match words.as_slice() {
        ["CHECKPOINT"] => return Ok(Parsed::Checkpoint),
        // sqlparser does not read DO: without this, an anonymous code block would be a
        // syntax error rather than what it is, a statement iolab does not run.
        ["DO", ..] => {
            return Err(PgError::unsupported(
                "statement not supported: DO (iolab runs no procedural language)",
            ));
        }
        words if alter_system::is_alter_system(words) => {
            return alter_system::parse(text, whole, offset).map(Parsed::AlterSystem);
        }
        [first, ..] if fetch::is_fetch_or_move(first) => {
            return fetch::parse(text).map(Parsed::Fetch);
        }
        words if cluster::is_cluster(words) => {
            return cluster::parse(text, whole, offset).map(Parsed::Cluster);
        }
        words if reindex::is_reindex(words) => {
            return reindex::parse(text, whole, offset).map(Parsed::Reindex);
        }
        words if relation_locks::is_lock(words) => {
            return relation_locks::parse_lock(text, whole, offset).map(Parsed::Lock);
        }
        words if prepare::is_prepare(words) => {
            return prepare::parse(text, whole, offset, reading).map(Parsed::Prepare);
        }
        ["CREATE", "EXTENSION", ..] => {
            if let Some(create) = ddl::parse_create_extension(text) {
                return Ok(Parsed::CreateExtension(create));
            }
        }
        ["ALTER", "TABLE" | "INDEX" | "VIEW" | "SEQUENCE", ..]
            if alter_parse::parse(text).is_some() =>
        {
            return alter_parse::parse(text)
                .expect("checked above")
                .map(Parsed::Alter)
                .map_err(|e| syntax_error_in(&e, text, whole, offset));
        }
        ["CREATE" | "ALTER", "SEQUENCE", ..] => {
            if let Some(stmt) = sequence::parse(text) {
                return stmt.map(Parsed::Sequence);
            }
        }
        _ => {}
    }
    // sqlparser does not know CREATE UNLOGGED TABLE: the word is blanked out (positions stay).
    let unlogged_table = matches!(words.as_slice(), ["CREATE", "UNLOGGED", "TABLE"]);
    let text: Cow<'_, str> = if unlogged_table {
        let at = text
            .to_ascii_uppercase()
            .find("UNLOGGED")
            .expect("word seen above");
        let mut cut = text.to_string();
        cut.replace_range(at..at + "UNLOGGED".len(), "        ");
        Cow::Owned(cut)
    } else {
        Cow::Borrowed(text)
    };
    // Nor a statement `TABLE t [ORDER BY …] [LIMIT …]`, PostgreSQL's `SELECT * FROM t …`
    // (positions after the word move by the difference in length).
    let text: Cow<'_, str> = match words.first() {
        Some(&"TABLE") => {
            let at = text
                .to_ascii_uppercase()
                .find("TABLE")
                .expect("word seen above");
            Cow::Owned(format!("{}SELECT * FROM{}", &text[..at], &text[at + 5..]))
        }
        _ => text,
    };
    // Nor INSERT's OVERRIDING SYSTEM VALUE (blanked out and marked on the statement).
    let overriding_cut = match words.first() {
        Some(&"INSERT") => defaults::cut_overriding_system_value(&text),
        _ => None,
    };
    let overriding = overriding_cut.is_some();
    let text: Cow<'_, str> = match overriding_cut {
        Some(cut) => Cow::Owned(cut),
        None => text,
    };
    // Nor the options of an identity column in any order but its own.
    let identity_cut = match words.as_slice() {
        ["CREATE", "TABLE" | "UNLOGGED", ..] => sequence::order_identity_options(&text),
        _ => None,
    };
    let text: Cow<'_, str> = match identity_cut {
        Some(ordered) => Cow::Owned(ordered),
        None => text,
    };
    let copy_spelled = match words.first() {
        Some(&"COPY") => crate::copy::spell_boolean_options(&text),
        _ => None,
    };
    let text: Cow<'_, str> = match copy_spelled {
        Some(spelled) => Cow::Owned(spelled),
        None => text,
    };
    let text: Cow<'_, str> = match row_locks::respell_strengths(&text) {
        Some(spelled) => Cow::Owned(spelled),
        None => text,
    };
    let ctas_columns = match words.as_slice() {
        ["CREATE", "TABLE" | "UNLOGGED", ..] => ctas_columns::cut_column_list(&text),
        _ => None,
    };
    let (text, ctas_names) = match ctas_columns {
        Some((names, cut)) => (Cow::Owned(cut), Some(names)),
        None => (text, None),
    };
    let mut stmt = parse_sql(&text, whole, offset)?;
    if overriding {
        defaults::mark_overriding_system_value(&mut stmt);
    }
    if let Some(names) = ctas_names {
        ctas_columns::restore_column_list(&mut stmt, names);
    }
    crate::explain::check_options(&stmt, &text, whole, offset)?;
    crate::pgcatalog::qualify_catalog_relations(&mut stmt);
    crate::pgcatalog::show_reg_literals_as_names(&mut stmt);
    typed_literals::rewrite(&mut stmt, &text, reading)?;
    session_time::rewrite_syntax(&mut stmt);
    set_functions::name_function_columns(&mut stmt);
    set_functions::expand_select_list_series(&mut stmt)?;
    let unlogged_into = matches!(
        select_into(&mut stmt),
        Some(SelectInto { unlogged: true, .. })
    );
    Ok(if unlogged_table || unlogged_into {
        Parsed::CreateUnlogged(stmt)
    } else {
        Parsed::Sql(stmt)
    })
}

/// `SELECT … INTO [UNLOGGED] [TABLE] t FROM …`, PostgreSQL's other spelling of `CREATE
/// [UNLOGGED] TABLE t AS SELECT … FROM …`: rewrites `stmt` into the latter (the select
/// without its INTO) and returns the INTO clause; anything else is left alone.
fn select_into(stmt: &mut Box<ast::Statement>) -> Option<SelectInto> {
    let ast::Statement::Query(query) = &mut **stmt else {
        return None;
    };
    let ast::SetExpr::Select(select) = &mut *query.body else {
        return None;
    };
    let into = select.into.take()?;
    let create = ast::helpers::stmt_create_table::CreateTableBuilder::new(into.name.clone())
        .temporary(into.temporary)
        .query(Some(query.clone()))
        .build();
    **stmt = ast::Statement::CreateTable(create);
    Some(into)
}

/// A parser error in statement `text`, its position counted in the whole query string
/// the client sent (`text` starts at byte `offset` of `whole`).
fn syntax_error_in(e: &ParserError, text: &str, whole: &str, offset: usize) -> PgError {
    let mut err = from_parser(e, Some(text));
    if let Some(p) = err.position {
        err.position = Some(whole[..offset].chars().count() + p);
    }
    err
}

fn parse_sql(text: &str, whole: &str, offset: usize) -> PgResult<Box<ast::Statement>> {
    let syntax_error = |e: &ParserError| syntax_error_in(e, text, whole, offset);
    let mut statements =
        Parser::parse_sql(&PostgreSqlDialect {}, text).map_err(|e| syntax_error(&e))?;
    if let Some(alias) = statements.first().and_then(wildcard_alias) {
        // sqlparser reads `SELECT * FORM t` as `*` with the alias FORM; PostgreSQL has no
        // aliases on `*` and stops at that word.
        let at = alias.span.start;
        return Err(syntax_error(&ParserError::ParserError(format!(
            "Expected: end of statement, found: {} at Line: {}, Column: {}",
            alias.value, at.line, at.column
        ))));
    }
    match statements.len() {
        1 => Ok(Box::new(statements.remove(0))),
        0 => Err(PgError::internal("empty statement reached the parser")),
        _ => Err(PgError::syntax(
            "cannot insert multiple commands into a prepared statement",
        )),
    }
}

/// The alias sqlparser allowed on a `*` of a top-level SELECT, if any.
fn wildcard_alias(stmt: &ast::Statement) -> Option<&ast::Ident> {
    let ast::Statement::Query(q) = stmt else {
        return None;
    };
    let ast::SetExpr::Select(select) = q.body.as_ref() else {
        return None;
    };
    select.projection.iter().find_map(|item| match item {
        ast::SelectItem::Wildcard(opts) | ast::SelectItem::QualifiedWildcard(_, opts) => {
            opts.opt_alias.as_ref()
        }
        _ => None,
    })
}

/// The result of one statement.
pub enum Outcome {
    /// Rows to send: schema, batches, and the tag word (`SELECT`, `SHOW`…; the row count
    /// is appended when sent).
    Rows {
        schema: SchemaRef,
        stream: SendableRecordBatchStream,
        tag: &'static str,
    },
    /// A finished command with its complete tag, e.g. `INSERT 0 5`.
    Done(String),
    /// BEGIN (tag) — the transaction block is now open.
    TxnStart(String),
    /// COMMIT / ROLLBACK (tag) — the transaction block is closed.
    TxnEnd(String),
    /// COPY … FROM STDIN started: the client now sends data (see `copy`).
    CopyIn { columns: usize },
    /// COPY … TO STDOUT: the rows to format and send as CopyData.
    CopyOut {
        columns: usize,
        stream: SendableRecordBatchStream,
        encoder: iolab_engine::values::CopyEncoder,
        text_format: iolab_engine::values::TextFormat,
    },
}

impl Outcome {
    /// Whether rows follow (a query's, COPY TO's), computed as they are sent.
    pub fn has_rows(&self) -> bool {
        matches!(self, Outcome::Rows { .. } | Outcome::CopyOut { .. })
    }

    /// The same outcome with its rows' stream passed through `wrap` (unchanged when no
    /// rows follow).
    pub fn map_rows(
        self,
        wrap: impl FnOnce(SendableRecordBatchStream) -> SendableRecordBatchStream,
    ) -> Outcome {
        match self {
            Outcome::Rows {
                schema,
                stream,
                tag,
            } => Outcome::Rows {
                schema,
                stream: wrap(stream),
                tag,
            },
            Outcome::CopyOut {
                columns,
                stream,
                encoder,
                text_format,
            } => Outcome::CopyOut {
                columns,
                stream: wrap(stream),
                encoder,
                text_format,
            },
            other => other,
        }
    }
}

/// The session's transaction block: BEGIN … COMMIT, or the implicit block the statements
/// of one Query message share.
#[derive(Default)]
pub struct TxnBlock {
    pub in_block: bool,
    /// An implicit block (PostgreSQL's for a Query message of several statements): it
    /// ends with the message, committed or, after an error, rolled back; a BEGIN in it
    /// makes it explicit. Statements that cannot run in a block refuse it too, but
    /// savepoints need an explicit one.
    pub implicit: bool,
    /// The block's transaction id, assigned at its first write.
    pub xid: Option<Xid>,
    /// Its open savepoints and live subtransactions.
    pub savepoints: savepoint::Savepoints,
    /// Next command id in the block.
    pub next_cid: u32,
    /// Set when a statement in the block failed: everything but COMMIT/ROLLBACK is refused.
    pub failed: Arc<AtomicBool>,
    /// The DDL to undo at ROLLBACK and to finish at COMMIT (outside a block: the current
    /// statement's).
    pub ddl: ddl_log::DdlLog,
    /// Whether the block has run a query, and REPEATABLE READ's snapshot.
    pub snapshot: transaction_modes::TransactionSnapshot,
}

impl TxnBlock {
    /// An error outside a statement's own run (parsing, binding, sending its rows):
    /// an open block fails, as the statement's guard fails it otherwise.
    pub fn fail_if_in_block(&self) {
        if self.in_block {
            self.failed.store(true, Ordering::Relaxed);
        }
    }

    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// In a block opened by BEGIN (or START TRANSACTION).
    pub fn explicit(&self) -> bool {
        self.in_block && !self.implicit
    }
}

/// Everything one running statement needs.
pub struct StatementRun {
    pub db: Arc<Database>,
    pub ctx: Arc<StatementContext>,
    /// DataFusion's state with `ctx` attached.
    pub state: SessionState,
    /// How values are read and written as text (TimeZone, extra_float_digits, DateStyle).
    pub text_format: iolab_engine::values::TextFormat,
    /// Values of `$1`, `$2`… (extended protocol).
    pub params: Option<Vec<datafusion::scalar::ScalarValue>>,
    /// What the plan cache has for this statement (see [`CachedPlan`]).
    pub cached: CachedPlan,
    /// The session's memory of its sequences (column defaults call `nextval`).
    pub sequences: Arc<crate::pgcatalog::sequence_functions::SessionSequences>,
    /// The session's kept plans of statements with parameters, and this statement's
    /// context in their keys; `None` under `plan_cache_mode = force_custom_plan`.
    pub prepared: Option<prepared_plans::PreparedContext>,
    /// The session's temporary schema (none until its first temporary table).
    pub temp: Arc<iolab_engine::temp::SessionTemp>,
}

/// What the plan cache has for a statement (a query over the statistics views, in a
/// session that did not turn the cache off with `plan_cache_mode = force_custom_plan`).
pub enum CachedPlan {
    /// Not a statement the cache takes, or one found uncacheable: plan it as usual.
    None,
    /// Plans made earlier: bind `normal`'s parameters to them.
    Hit {
        plan: Arc<plan_cache::CachedStatement>,
        normal: normalize::Normalized,
    },
    /// Plan `normal` and cache it as `key` (or remember it as uncacheable).
    Miss {
        cache: Arc<plan_cache::PlanCache>,
        key: plan_cache::PlanKey,
        normal: normalize::Normalized,
    },
}

impl CachedPlan {
    /// Is there a generic physical plan to run (see `generic_plan`)?
    pub fn has_generic_plan(&self) -> bool {
        matches!(self, CachedPlan::Hit { plan, .. } if plan.physical.is_some())
    }

    /// Looks `stmt` up in `cache`; `context` is the key's context (the catalog names
    /// resolve in, the settings that read constants), `now_type` DataFusion's type of
    /// `now()`.
    pub fn lookup(
        cache: &Arc<plan_cache::PlanCache>,
        context: String,
        stmt: &ast::Statement,
        now_type: &datafusion::arrow::datatypes::DataType,
    ) -> CachedPlan {
        use plan_cache::{Lookup, PlanKey};
        let Some(normal) = normalize::normalize(stmt) else {
            return CachedPlan::None;
        };
        let key = PlanKey {
            text: normal.text.clone(),
            param_types: normal.types(now_type),
            context,
        };
        match cache.get(&key) {
            Lookup::Plan(plan) => CachedPlan::Hit { plan, normal },
            Lookup::Uncacheable => CachedPlan::None,
            Lookup::Missing => CachedPlan::Miss {
                cache: cache.clone(),
                key,
                normal,
            },
        }
    }
}

impl StatementRun {
    /// Looks a table up by name as this session sees it: its temporary schema first
    /// ([`iolab_catalog::Catalog::resolve_in`]).
    pub fn resolve_table(
        &self,
        schema: Option<&str>,
        name: &str,
    ) -> PgResult<iolab_catalog::TableDef> {
        self.db.catalog.resolve_in(self.temp.schema(), schema, name)
    }

    pub fn xid(&self) -> PgResult<Xid> {
        if self.ctx.xid == 0 {
            return Err(PgError::internal(
                "statement writes but has no transaction id",
            ));
        }
        Ok(self.ctx.xid)
    }

    /// Plans (or takes from the plan cache) and starts a query with DataFusion.
    pub async fn query_stream(&self, stmt: &ast::Statement) -> PgResult<SendableRecordBatchStream> {
        self.stream(stmt, false).await
    }

    /// [`query_stream`](Self::query_stream) returning the rows in the order its plan
    /// produces them in one process, as PostgreSQL's serial plan does: an INSERT … SELECT
    /// or CREATE TABLE … AS stores them in that order. (In several partitions, DataFusion
    /// would interleave their batches: `INSERT … SELECT … FROM generate_series(1, n)`
    /// would store the rows out of order, its table's physical order would not be the
    /// series', and a primary key filled by those inserts would split its pages in the
    /// middle instead of at the end: PostgreSQL's pages are 90 % full, these were 70 %.)
    pub async fn query_stream_in_order(
        &self,
        stmt: &ast::Statement,
    ) -> PgResult<SendableRecordBatchStream> {
        self.stream(stmt, true).await
    }

    async fn stream(
        &self,
        stmt: &ast::Statement,
        in_order: bool,
    ) -> PgResult<SendableRecordBatchStream> {
        if let Some(physical) = self.generic_plan()? {
            return datafusion::physical_plan::execute_stream(physical, self.state.task_ctx())
                .map_err(from_datafusion);
        }
        let kept = self.kept_plan(stmt).await?;
        if let (Some(kept), false) = (&kept, in_order) {
            if let Some(physical) = self.generic_run_of(kept).await? {
                return datafusion::physical_plan::execute_stream(physical, self.state.task_ctx())
                    .map_err(from_datafusion);
            }
        }
        let optimized = match (self.cached_plan().await, &kept, &self.params) {
            (Some(plan), _, _) => plan,
            (None, Some(kept), Some(values)) => {
                bind(&self.state, kept.logical.clone(), values.clone()).map_err(from_datafusion)?
            }
            _ => {
                let plan = self.logical_plan(stmt).await?;
                self.state.optimize(&plan).map_err(from_datafusion)?
            }
        };
        let physical = match in_order {
            true => self.planner_in_one_partition(&optimized).await?,
            false => self.physical_plan_of_optimized(&optimized).await?,
        };
        if let Some(kept) = &kept {
            if let Some(cost) = iolab_engine::plan::partitions::plan_cost(physical.as_ref()) {
                let planning = prepared_plans::planning_charge(&kept.logical, &self.ctx.planner);
                kept.custom_ran(cost + planning);
            }
        }
        datafusion::physical_plan::execute_stream(physical, self.state.task_ctx())
            .map_err(from_datafusion)
    }

    /// The physical plan of `stmt`, a statement with parameters, if this run takes its
    /// generic plan (`prepared_plans`): what EXPLAIN shows of it.
    pub async fn generic_run(
        &self,
        stmt: &ast::Statement,
    ) -> PgResult<Option<Arc<dyn ExecutionPlan>>> {
        match self.kept_plan(stmt).await? {
            Some(kept) => self.generic_run_of(&kept).await,
            None => Ok(None),
        }
    }

    /// A copy of `kept`'s generic plan with this run's values, if this run takes it
    /// (counted for `pg_prepared_statements`).
    async fn generic_run_of(
        &self,
        kept: &prepared_plans::KeptPlan,
    ) -> PgResult<Option<Arc<dyn ExecutionPlan>>> {
        let (Some(template), Some(values)) = (self.generic_plan_of(kept).await, &self.params)
        else {
            return Ok(None);
        };
        if let Some(runs) = self.prepared.as_ref().and_then(|p| p.generic_runs.as_ref()) {
            runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        generic_plan::instantiate(&template, values)
            .map(Some)
            .map_err(from_datafusion)
    }

    /// The generic plan of a kept statement, if this run takes it (made first when it is
    /// due: `prepared_plans`).
    async fn generic_plan_of(
        &self,
        kept: &prepared_plans::KeptPlan,
    ) -> Option<Arc<dyn ExecutionPlan>> {
        let force_generic = self.prepared.as_ref()?.force_generic;
        let planner = &self.ctx.planner;
        if let prepared_plans::RunPlan::MakeGeneric = kept.choose(planner, force_generic) {
            let template = generic_plan::template(&kept.logical, &self.state).await;
            let made = template.and_then(|t| {
                let cost = iolab_engine::plan::partitions::plan_cost(t.as_ref());
                tracing::debug!("generic plan made, its scans' cost {cost:?}");
                Some((t, cost?))
            });
            kept.generic_made(made, *planner);
        }
        match kept.choose(planner, force_generic) {
            prepared_plans::RunPlan::Generic(template) => Some(template),
            _ => None,
        }
    }

    /// The physical plan of an optimized `plan` in one partition, as
    /// [`query_stream_in_order`](Self::query_stream_in_order) plans.
    pub(crate) async fn planner_in_one_partition(
        &self,
        plan: &datafusion::logical_expr::LogicalPlan,
    ) -> PgResult<Arc<dyn ExecutionPlan>> {
        (self.state.query_planner())
            .create_physical_plan(plan, &self.one_partition_state())
            .await
            .map_err(from_datafusion)
    }

    /// The session's kept plan of `stmt`, a statement with parameters (`prepared_plans`),
    /// kept first if it is new and may be; `None` for any other statement.
    async fn kept_plan(
        &self,
        stmt: &ast::Statement,
    ) -> PgResult<Option<Arc<prepared_plans::KeptPlan>>> {
        let (Some(prepared), Some(values)) = (&self.prepared, &self.params) else {
            return Ok(None);
        };
        if values.is_empty() {
            return Ok(None);
        }
        let key = prepared.key_of(stmt, values);
        if let Some(kept) = prepared.plans.get(&key) {
            return Ok(Some(kept));
        }
        let types: Vec<_> = key.param_types.iter().cloned().map(Some).collect();
        let open = plan_statement(&self.state, stmt, &types).await?;
        let keepable = plan_cache::cacheable_over(&open, |table| {
            table.is::<iolab_engine::exec::table::HeapTable>()
                || crate::pgcatalog::is_statistics_view(table)
        });
        Ok(match keepable.then(|| self.state.optimize(&open)) {
            Some(Ok(optimized)) => prepared.plans.insert(key, Arc::new(optimized)),
            _ => None,
        })
    }

    pub async fn logical_plan(
        &self,
        stmt: &ast::Statement,
    ) -> PgResult<datafusion::logical_expr::LogicalPlan> {
        self.logical_plan_in(&self.state, stmt).await
    }

    /// [`logical_plan`](Self::logical_plan) in another state than the statement's own
    /// (one that sees more tables).
    pub async fn logical_plan_in(
        &self,
        state: &SessionState,
        stmt: &ast::Statement,
    ) -> PgResult<datafusion::logical_expr::LogicalPlan> {
        let types: Vec<_> = self
            .params
            .iter()
            .flatten()
            .map(|v| Some(v.data_type()))
            .collect();
        let plan = plan_statement(state, stmt, &types).await?;
        match &self.params {
            Some(values) => plan
                .with_param_values(values.clone())
                .map_err(from_datafusion),
            None => Ok(plan),
        }
    }

    /// The optimized plan of the statement with its constants bound, from the plan cache
    /// (planned and cached first if missing); `None` when the cache has none for it.
    async fn cached_plan(&self) -> Option<datafusion::logical_expr::LogicalPlan> {
        let (plan, normal) = match &self.cached {
            CachedPlan::None => return None,
            CachedPlan::Hit { plan, normal } => (plan.logical.clone(), normal),
            CachedPlan::Miss { cache, key, normal } => {
                let types: Vec<_> = key.param_types.iter().cloned().map(Some).collect();
                let optimized = plan_statement(&self.state, &normal.statement, &types)
                    .await
                    .ok()
                    .filter(plan_cache::cacheable)
                    .and_then(|plan| self.state.optimize(&plan).ok());
                let cached = match optimized {
                    Some(logical) => Some(Arc::new(plan_cache::CachedStatement {
                        physical: generic_plan::template(&logical, &self.one_partition_state())
                            .await,
                        logical: Arc::new(logical),
                    })),
                    None => None,
                };
                cache.insert(key.clone(), cached.clone());
                (cached?.logical.clone(), normal)
            }
        };
        match bind(&self.state, plan, self.parameter_values(normal)) {
            Ok(plan) => Some(plan),
            Err(e) => {
                tracing::warn!("a cached plan did not take its parameters ({e}); planning afresh");
                None
            }
        }
    }

    /// The cache's generic physical plan of the statement with this run's values, when
    /// it has one (see `generic_plan`).
    fn generic_plan(&self) -> PgResult<Option<Arc<dyn ExecutionPlan>>> {
        let CachedPlan::Hit { plan, normal } = &self.cached else {
            return Ok(None);
        };
        let Some(template) = &plan.physical else {
            return Ok(None);
        };
        generic_plan::instantiate(template, &self.parameter_values(normal))
            .map(Some)
            .map_err(from_datafusion)
    }

    /// The values of a normalized statement's parameters in this run.
    fn parameter_values(
        &self,
        normal: &normalize::Normalized,
    ) -> Vec<datafusion::scalar::ScalarValue> {
        let now = self.now();
        normal
            .params
            .iter()
            .map(|p| match p {
                normalize::Param::Constant(v) => v.clone(),
                normalize::Param::Now => now.clone(),
            })
            .collect()
    }

    /// What `now()` is in this statement: its start, in DataFusion's type for `now()`.
    fn now(&self) -> datafusion::scalar::ScalarValue {
        let started = self.state.execution_props().query_execution_start_time;
        let zone = self.state.config_options().execution.time_zone.clone();
        datafusion::scalar::ScalarValue::TimestampNanosecond(
            started.and_then(|t| t.timestamp_nanos_opt()),
            zone.map(Into::into),
        )
    }

    /// DataFusion's physical plan of `plan` (optimized first).
    pub async fn physical_plan(
        &self,
        plan: &datafusion::logical_expr::LogicalPlan,
    ) -> PgResult<Arc<dyn ExecutionPlan>> {
        self.physical_plan_of_optimized(&self.optimize(plan)?).await
    }

    /// `plan` after DataFusion's logical optimizer.
    pub fn optimize(
        &self,
        plan: &datafusion::logical_expr::LogicalPlan,
    ) -> PgResult<datafusion::logical_expr::LogicalPlan> {
        self.state.optimize(plan).map_err(from_datafusion)
    }

    /// DataFusion's physical plan of an optimized `plan`. A statement that reads only
    /// catalogs and statistics views — at most tens of thousands of rows, already in
    /// memory — is planned in one partition: splitting those rows over the CPUs
    /// (repartitions, partial and final aggregates, merges) costs more to plan and run
    /// than it saves.
    pub(crate) async fn physical_plan_of_optimized(
        &self,
        plan: &datafusion::logical_expr::LogicalPlan,
    ) -> PgResult<Arc<dyn ExecutionPlan>> {
        let planner = self.state.query_planner();
        let one_partition = self.state.config().target_partitions() == 1;
        let planned = if !one_partition && reads_only_in_memory_catalogs(plan) {
            planner
                .create_physical_plan(plan, &self.one_partition_state())
                .await
        } else {
            planner.create_physical_plan(plan, &self.state).await
        };
        planned.map_err(from_datafusion)
    }

    /// The statement's state, planning in one partition.
    fn one_partition_state(&self) -> SessionState {
        let mut state = self.state.clone();
        state.config_mut().options_mut().execution.target_partitions = 1;
        state
    }
}

/// A cached plan with `values` for its `$n`, its constants folded again (casts of the
/// new values, `now()`), so that scans see the filters' constants (see `time_range`).
pub(crate) fn bind(
    state: &SessionState,
    plan: Arc<datafusion::logical_expr::LogicalPlan>,
    values: Vec<datafusion::scalar::ScalarValue>,
) -> datafusion::error::Result<datafusion::logical_expr::LogicalPlan> {
    use datafusion::optimizer::simplify_expressions::SimplifyExpressions;
    use datafusion::optimizer::Optimizer;
    let plan = Arc::unwrap_or_clone(plan);
    if values.is_empty() {
        return Ok(plan);
    }
    let bound = plan.with_param_values(values)?;
    Optimizer::with_rules(vec![Arc::new(SimplifyExpressions::new())]).optimize(
        bound,
        state,
        |_, _| {},
    )
}

/// Does `plan` (subqueries included) scan tables, and only catalogs and statistics views?
pub(crate) fn reads_only_in_memory_catalogs(plan: &datafusion::logical_expr::LogicalPlan) -> bool {
    use datafusion::common::tree_node::TreeNodeRecursion;
    use datafusion::logical_expr::LogicalPlan;
    let (mut catalogs, mut others) = (0, 0);
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let catalog = datafusion::datasource::source_as_provider(&scan.source)
                .is_ok_and(|p| crate::pgcatalog::is_in_memory_catalog(p.as_ref()));
            if !catalog {
                others += 1;
                return Ok(TreeNodeRecursion::Stop);
            }
            catalogs += 1;
        }
        Ok(TreeNodeRecursion::Continue)
    });
    catalogs > 0 && others == 0
}

/// DataFusion's plan of `stmt`, its `$n` typed as `param_types` say where all are known
/// (see [`params`]).
pub async fn plan_statement(
    state: &SessionState,
    stmt: &ast::Statement,
    param_types: &[Option<datafusion::arrow::datatypes::DataType>],
) -> PgResult<datafusion::logical_expr::LogicalPlan> {
    Ok(plan_statement_at(state, stmt, param_types, &[]).await?.0)
}

/// [`plan_statement`] of the query of the views `within` (outermost first; none: a
/// client's statement), with the views it names, planned (see `view_planning`).
pub(crate) async fn plan_statement_at(
    state: &SessionState,
    stmt: &ast::Statement,
    param_types: &[Option<datafusion::arrow::datatypes::DataType>],
    within: &[u32],
) -> PgResult<(
    datafusion::logical_expr::LogicalPlan,
    Vec<Arc<view_planning::StoredView>>,
)> {
    let views = view_planning::plan_views(state, stmt, within).await?;
    let with_views;
    let state = if views.is_empty() {
        state
    } else {
        with_views = view_planning::with_views(state, &views);
        &with_views
    };
    let (df_stmt, wrapped) = for_datafusion(stmt, param_types)?;
    let plan = state
        .statement_to_plan(df_stmt)
        .await
        .map_err(from_datafusion)?;
    let plan = array_text::rewrite_casts(plan, state)?;
    let plan =
        integer_constants::integer_constants_as_int4(plan, wrapped).map_err(from_datafusion)?;
    let plan = checked_arithmetic::sum_bigint_as_numeric(plan).map_err(from_datafusion)?;
    let plan = unsigned_results::as_postgres_integers(plan).map_err(from_datafusion)?;
    let plan = if wrapped {
        params::unwrap_prepare(plan)
    } else {
        plan
    };
    Ok((plan, views))
}

/// `stmt` rewritten for DataFusion's planner (value-only LATERAL subqueries inlined, short
/// alias lists completed, repeated names hidden, `public.t` made persistent, series
/// arguments typed, array texts made constructors, `$n` typed), and whether the typing
/// wrapped it in a PREPARE. Not async: the rewritten copies (an AST is large) stay out of
/// `plan_statement_at`'s future, which nests once per view a statement reads.
fn for_datafusion(
    stmt: &ast::Statement,
    param_types: &[Option<datafusion::arrow::datatypes::DataType>],
) -> PgResult<(datafusion::sql::parser::Statement, bool)> {
    refuse_row_locks(stmt)?;
    refuse_windowed_ordered_set_aggregates(stmt)?;
    let inlined = lateral_values::inline(stmt);
    let stmt = inlined.as_ref().unwrap_or(stmt);
    let completed = alias_lists::complete(stmt)?;
    let stmt = completed.as_ref().unwrap_or(stmt);
    let deduplicated = colnames::hide_duplicate_names(stmt);
    let stmt = deduplicated.as_ref().unwrap_or(stmt);
    let persistent = public_means_persistent(stmt);
    let stmt = persistent.as_ref().unwrap_or(stmt);
    let typed_series = set_functions::typed_series_arguments(stmt);
    let stmt = typed_series.as_ref().unwrap_or(stmt);
    let arrays = array_literals::as_constructors(stmt)?;
    let stmt = arrays.as_ref().unwrap_or(stmt);
    let typed = params::typed(stmt, param_types);
    let wrapped = typed.is_some();
    let df_stmt = datafusion::sql::parser::Statement::Statement(Box::new(
        typed.unwrap_or_else(|| stmt.clone()),
    ));
    Ok((df_stmt, wrapped))
}

/// `stmt` with every relation written `public.t` named `"$public".t`, the schema that
/// holds `public`'s tables without the session's temporary ones (DataFusion would resolve
/// `public.t` as it resolves `t`, temporary tables first; see `iolab_engine::exec::schema`);
/// `None` when it names none.
fn public_means_persistent(stmt: &ast::Statement) -> Option<ast::Statement> {
    let is_public = |name: &ast::ObjectName| {
        name.0.len() == 2
            && matches!(&name.0[0], ast::ObjectNamePart::Identifier(i) if match i.quote_style {
                None => i.value.eq_ignore_ascii_case("public"),
                Some(_) => i.value == "public",
            })
    };
    let mut found = false;
    let _ = ast::visit_relations(stmt, |name| {
        found |= is_public(name);
        std::ops::ControlFlow::<()>::Continue(())
    });
    if !found {
        return None;
    }
    let mut stmt = stmt.clone();
    let _ = ast::visit_relations_mut(&mut stmt, |name| {
        if is_public(name) {
            name.0[0] = ast::ObjectNamePart::Identifier(ast::Ident::with_quote(
                '"',
                iolab_engine::exec::schema::PERSISTENT_PUBLIC,
            ));
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    Some(stmt)
}

/// `SELECT … FOR UPDATE | SHARE` anywhere but at the top of a query (`row_locks` takes
/// those off first) is refused: ignoring the clause would let a script believe it holds
/// a lock.
fn refuse_row_locks(stmt: &ast::Statement) -> PgResult<()> {
    use datafusion::sql::sqlparser::ast::Visit;
    struct FindLock;
    impl ast::Visitor for FindLock {
        type Break = String;
        fn pre_visit_query(&mut self, query: &ast::Query) -> std::ops::ControlFlow<String> {
            match query.locks.first() {
                Some(lock) => std::ops::ControlFlow::Break(lock.lock_type.to_string()),
                None => std::ops::ControlFlow::Continue(()),
            }
        }
    }
    match stmt.visit(&mut FindLock) {
        std::ops::ControlFlow::Break(kind) => Err(PgError::unsupported(format!(
            "FOR {kind} is supported at the top of a SELECT only"
        ))),
        std::ops::ControlFlow::Continue(()) => Ok(()),
    }
}

/// PostgreSQL's error for `f(…) WITHIN GROUP (ORDER BY …) OVER (…)`: an ordered-set
/// aggregate is not a window function (DataFusion's own message says less).
fn refuse_windowed_ordered_set_aggregates(stmt: &ast::Statement) -> PgResult<()> {
    use datafusion::sql::sqlparser::ast::Visit;
    struct FindWindowed;
    impl ast::Visitor for FindWindowed {
        type Break = String;
        fn pre_visit_expr(&mut self, expr: &ast::Expr) -> std::ops::ControlFlow<String> {
            match expr {
                ast::Expr::Function(f) if !f.within_group.is_empty() && f.over.is_some() => {
                    std::ops::ControlFlow::Break(f.name.to_string())
                }
                _ => std::ops::ControlFlow::Continue(()),
            }
        }
    }
    match stmt.visit(&mut FindWindowed) {
        std::ops::ControlFlow::Break(name) => Err(PgError::unsupported(format!(
            "OVER is not supported for ordered-set aggregate {name}"
        ))),
        std::ops::ControlFlow::Continue(()) => Ok(()),
    }
}

/// Ends a statement's transaction work if the statement does not get to do it itself:
/// dropped without [`StatementGuard::finish`] (an error path, a cancel, a client gone),
/// it cancels the statement's scans, aborts an autocommit transaction and marks an open
/// transaction block failed.
pub struct StatementGuard {
    db: Arc<Database>,
    cancel: CancelFlag,
    /// The autocommit transaction to end, if the statement has its own.
    autocommit_xid: Option<Xid>,
    block_failed: Option<Arc<AtomicBool>>,
    /// The session's `synchronous_commit`: wait for the commit record to be durable.
    synchronous_commit: bool,
    /// The session, for `pg_stat_io`'s WAL rows (its commit's WAL writes and syncs).
    pid: i32,
    finished: bool,
}

impl StatementGuard {
    pub fn new(
        db: Arc<Database>,
        cancel: CancelFlag,
        autocommit_xid: Option<Xid>,
        block_failed: Option<Arc<AtomicBool>>,
        synchronous_commit: bool,
        pid: i32,
    ) -> Self {
        StatementGuard {
            db,
            cancel,
            autocommit_xid,
            block_failed,
            synchronous_commit,
            pid,
            finished: false,
        }
    }

    /// The statement ended: commit (success, autocommit) or abort it.
    pub fn finish(mut self, success: bool) -> PgResult<()> {
        self.finished = true;
        if !success {
            self.cancel.cancel();
            if let Some(f) = &self.block_failed {
                f.store(true, Ordering::Relaxed);
            }
        }
        if let Some(xid) = self.autocommit_xid.take() {
            let result = if success {
                let by = Some((iolab_stats::BackendType::ClientBackend, self.pid));
                self.db.txns.commit_with(
                    &iolab_engine::txn::OwnXids::of(xid),
                    self.synchronous_commit,
                    by,
                )
            } else {
                self.db.txns.abort(xid)
            };
            result.map_err(|e| PgError::io("could not write commit log", &e))?;
        }
        Ok(())
    }
}

impl Drop for StatementGuard {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        self.cancel.cancel();
        if let Some(f) = &self.block_failed {
            f.store(true, Ordering::Relaxed);
        }
        if let Some(xid) = self.autocommit_xid.take() {
            if let Err(e) = self.db.txns.abort(xid) {
                tracing::error!("could not abort transaction {xid}: {e}");
            }
        }
    }
}

/// The error for a statement in a failed transaction block.
pub fn in_failed_transaction() -> PgError {
    PgError::new(
        sqlstate::IN_FAILED_SQL_TRANSACTION,
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}
