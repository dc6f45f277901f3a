//! PostgreSQL 18's `pg_buffercache` extension (version 1.6), built in: what the buffer pool
//! holds, and eviction from it, so that "cold cache" experiments need no restart.
//!
//! | SQL | result |
//! |---|---|
//! | `pg_buffercache` (view) | one row per buffer: `bufferid` from 1, the block it holds (NULLs when it holds none), `isdirty`, `usagecount`, `pinning_backends` |
//! | `pg_buffercache_summary()` | one row: used / unused / dirty / pinned buffers, average usage count of the used ones |
//! | `pg_buffercache_usage_counts()` | six rows, usage count 0 to 5: buffers, dirty, pinned |
//! | `pg_buffercache_evict(bufferid)` | `buffer_evicted`, `buffer_flushed` |
//! | `pg_buffercache_evict_relation(regclass)` | `buffers_evicted`, `buffers_flushed`, `buffers_skipped` |
//! | `pg_buffercache_evict_all()` | the same, for every buffer |
//!
//! Columns, types, NULLs and messages are PostgreSQL 18.4's. iolab has no extensions: these
//! live in `pg_catalog` from the start, and `CREATE EXTENSION pg_buffercache` is accepted
//! and does nothing (`crate::sql::ddl::create_extension`). Every relation is in database
//! `postgres` (OID 5) and tablespace `pg_default` (1663), and has only a main fork (0).
//!
//! Eviction ([`BufferPool::evict_relation`](iolab_engine::buffer::BufferPool::evict_relation)
//! and friends) writes dirty buffers first, counted in `pg_stat_io` as writes of this
//! backend in context `normal`, as PostgreSQL counts them.
//!
//! The functions can be called in two places:
//!
//! * in FROM (`SELECT * FROM pg_buffercache_evict_relation('t')`): the columns are the
//!   function's OUT parameters. The argument must be a constant. The function runs when
//!   the statement is executed, not when it is planned (the extended protocol plans a
//!   statement at Parse and again at Execute), so `EXPLAIN` without ANALYZE evicts nothing.
//! * in a select list (`SELECT pg_buffercache_evict(bufferid) FROM pg_buffercache WHERE
//!   …`), once per row: the result is the record as PostgreSQL prints it, `(87,84,0)`, but
//!   typed `text` rather than `record` (iolab has no composite types). DataFusion
//!   computes a select list before ORDER BY … LIMIT, where PostgreSQL postpones volatile
//!   functions past them: to evict a few buffers, limit in a subquery (`SELECT
//!   pg_buffercache_evict(bufferid) FROM (SELECT bufferid FROM pg_buffercache … LIMIT 3) b`).
//!
//! Not built in: `pg_buffercache_pages()` (the view's set-returning function, which needs
//! a column definition list) and `pg_buffercache_numa` (PostgreSQL 18 built without NUMA
//! support reports an error for it).

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::Float64Array;
use datafusion::arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::DFSchema;
use datafusion::datasource::TableType;
use datafusion::error::Result;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{ColumnarValue, Expr};
use datafusion::physical_plan::memory::{LazyBatchGenerator, LazyMemoryExec};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::scalar::ScalarValue;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::accounting::{IoAccount, StatsSink};
use iolab_engine::buffer::{BufferSnapshot, EvictCounts, MAX_USAGE_COUNT};
use iolab_engine::Database;
use iolab_settings::SessionSettings;
use iolab_stats::BackendType;
use parking_lot::RwLock;

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::functions::{arg_type_name, def, ints, per_row, pg, relation_oids, Ctx, Def};
use super::snapshot::Snapshot;
use super::tables::{extra_tables, CatalogSchema};
use super::{oids, SessionInfo};

/// `relforknumber` of every buffer: iolab relations have only a main fork.
const MAIN_FORKNUM: i64 = 0;

/// What one of the objects computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Function {
    /// The `pg_buffercache` view.
    View,
    Summary,
    UsageCounts,
    Evict,
    EvictRelation,
    EvictAll,
}

impl Function {
    /// The table functions, in the order `\dx+ pg_buffercache` lists them.
    const TABLE_FUNCTIONS: [Function; 5] = [
        Function::Evict,
        Function::EvictAll,
        Function::EvictRelation,
        Function::Summary,
        Function::UsageCounts,
    ];

    fn name(self) -> &'static str {
        match self {
            Function::View => "pg_buffercache",
            Function::Summary => "pg_buffercache_summary",
            Function::UsageCounts => "pg_buffercache_usage_counts",
            Function::Evict => "pg_buffercache_evict",
            Function::EvictRelation => "pg_buffercache_evict_relation",
            Function::EvictAll => "pg_buffercache_evict_all",
        }
    }

    /// The columns (OUT parameters), as PostgreSQL 18 declares them.
    fn columns(self) -> &'static str {
        match self {
            Function::View => "bufferid integer, relfilenode oid, reltablespace oid, reldatabase oid, relforknumber smallint, relblocknumber bigint, isdirty boolean, usagecount smallint, pinning_backends integer",
            Function::Summary => "buffers_used integer, buffers_unused integer, buffers_dirty integer, buffers_pinned integer, usagecount_avg double precision",
            Function::UsageCounts => "usage_count integer, buffers integer, dirty integer, pinned integer",
            Function::Evict => "buffer_evicted boolean, buffer_flushed boolean",
            Function::EvictRelation | Function::EvictAll => {
                "buffers_evicted integer, buffers_flushed integer, buffers_skipped integer"
            }
        }
    }

    fn schema(self) -> SchemaRef {
        schema_of(&parse_columns(self.columns()))
    }

    /// The type of the one IN parameter, if any.
    fn parameter(self) -> Option<&'static str> {
        match self {
            Function::Evict => Some("integer"),
            Function::EvictRelation => Some("regclass"),
            _ => None,
        }
    }
}

/// The argument of a call, resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arg {
    None,
    /// NULL: the STRICT functions return a row of NULLs.
    Null,
    /// `pg_buffercache_evict`: a buffer id as given (valid from 1 to `shared_buffers`).
    Buffer(i64),
    /// `pg_buffercache_evict_relation`: the relation's file number (0: no storage).
    Relation(u32),
}

/// One evaluation of a view or function: what it needs when it runs.
#[derive(Clone)]
struct Job {
    function: Function,
    arg: Arg,
    db: Arc<Database>,
    pid: i32,
    track_io_timing: bool,
}

impl Job {
    fn rows(&self) -> Result<Vec<Vec<V>>, PgError> {
        let pool = &self.db.pool;
        Ok(match self.function {
            Function::View => view_rows(&pool.snapshot()),
            Function::Summary => vec![summary_row(&pool.snapshot())],
            Function::UsageCounts => usage_count_rows(&pool.snapshot()),
            Function::Evict | Function::EvictRelation | Function::EvictAll => {
                vec![evict(
                    &self.db,
                    self.function,
                    self.arg,
                    self.pid,
                    self.track_io_timing,
                )?]
            }
        })
    }

    fn batch(&self) -> Result<RecordBatch> {
        build_batch(&self.function.schema(), &self.rows().map_err(pg)?)
    }
}

/// The rows of the `pg_buffercache` view.
fn view_rows(buffers: &[BufferSnapshot]) -> Vec<Vec<V>> {
    buffers
        .iter()
        .map(|b| {
            let id = V::Int(b.buffer_id as i64 + 1);
            match b.tag {
                // PostgreSQL shows a buffer's block only once it is valid (read in).
                Some(tag) if b.valid => vec![
                    id,
                    V::oid(tag.relfilenode),
                    V::oid(oids::DEFAULT_TABLESPACE),
                    V::oid(oids::DATABASE_OID),
                    V::Int(MAIN_FORKNUM),
                    V::Int(tag.blkno as i64),
                    V::Bool(b.dirty),
                    V::Int(b.usage_count as i64),
                    V::Int(b.pins as i64),
                ],
                _ => {
                    let mut row = vec![V::Null; 9];
                    row[0] = id;
                    row
                }
            }
        })
        .collect()
}

/// `pg_buffercache_summary()`: as PostgreSQL counts, dirty and the usage average over
/// valid buffers, pinned over all.
fn summary_row(buffers: &[BufferSnapshot]) -> Vec<V> {
    let used: Vec<&BufferSnapshot> = buffers.iter().filter(|b| b.valid).collect();
    let usage_total: u64 = used.iter().map(|b| b.usage_count as u64).sum();
    let average = if used.is_empty() {
        V::Null
    } else {
        V::Float(usage_total as f64 / used.len() as f64)
    };
    vec![
        V::Int(used.len() as i64),
        V::Int((buffers.len() - used.len()) as i64),
        V::Int(used.iter().filter(|b| b.dirty).count() as i64),
        V::Int(buffers.iter().filter(|b| b.pins > 0).count() as i64),
        average,
    ]
}

/// `pg_buffercache_usage_counts()`: every buffer by usage count, empty ones included.
fn usage_count_rows(buffers: &[BufferSnapshot]) -> Vec<Vec<V>> {
    (0..=MAX_USAGE_COUNT as u8)
        .map(|usage| {
            let with: Vec<&BufferSnapshot> =
                buffers.iter().filter(|b| b.usage_count == usage).collect();
            vec![
                V::Int(usage as i64),
                V::Int(with.len() as i64),
                V::Int(with.iter().filter(|b| b.dirty).count() as i64),
                V::Int(with.iter().filter(|b| b.pins > 0).count() as i64),
            ]
        })
        .collect()
}

/// Runs one of the evict functions; its row of OUT values.
fn evict(
    db: &Database,
    function: Function,
    arg: Arg,
    pid: i32,
    track_io_timing: bool,
) -> Result<Vec<V>, PgError> {
    let mut acct = IoAccount::new(
        track_io_timing,
        Some(StatsSink {
            hub: Arc::clone(&db.io_stats),
            backend_type: BackendType::ClientBackend,
            pid,
        }),
    );
    let pool = &db.pool;
    let counts = match (function, arg) {
        (Function::Evict | Function::EvictRelation, Arg::Null) => {
            return Ok(vec![
                V::Null;
                if function == Function::Evict { 2 } else { 3 }
            ])
        }
        (Function::Evict, Arg::Buffer(id)) => {
            if id < 1 || id > pool.nbuffers() as i64 {
                return Err(PgError::internal(format!("bad buffer ID: {id}")));
            }
            let counts = pool.evict_buffer((id - 1) as u32, &mut acct)?;
            return Ok(vec![
                V::Bool(counts.evicted == 1),
                V::Bool(counts.flushed == 1),
            ]);
        }
        (Function::EvictRelation, Arg::Relation(0)) => EvictCounts::default(),
        (Function::EvictRelation, Arg::Relation(relfilenode)) => {
            pool.evict_relation(relfilenode, &mut acct)?
        }
        (Function::EvictAll, Arg::None) => pool.evict_all(&mut acct)?,
        (f, a) => return Err(PgError::internal(format!("{} called with {a:?}", f.name()))),
    };
    Ok(vec![
        V::Int(counts.evicted as i64),
        V::Int(counts.flushed as i64),
        V::Int(counts.skipped as i64),
    ])
}

/// The file number of relation `oid`, as `pg_buffercache_evict_relation` opens it: not a
/// temporary one, whose blocks are in its session's local buffers.
fn relfilenode_of(snapshot: &Snapshot, oid: u32) -> Result<u32, PgError> {
    let rel = snapshot
        .relation(oid)
        .ok_or_else(|| PgError::internal(format!("could not open relation with OID {oid}")))?;
    if rel.persistence == 't' {
        return Err(PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "relation uses local buffers, pg_buffercache_evict_relation() is intended to be used for shared buffers only",
        ));
    }
    Ok(rel.relfilenode)
}

// ---------------------------------------------------------------------------------------
// The view and the table functions
// ---------------------------------------------------------------------------------------

/// The rows of a [`Job`], computed when the plan is executed.
struct JobTable {
    job: Job,
}

impl fmt::Debug for JobTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JobTable({})", self.job.function.name())
    }
}

#[async_trait]
impl TableProvider for JobTable {
    fn schema(&self) -> SchemaRef {
        self.job.function.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let generator: Arc<RwLock<dyn LazyBatchGenerator>> = Arc::new(RwLock::new(Once {
            job: self.job.clone(),
            done: false,
        }));
        Ok(Arc::new(
            LazyMemoryExec::try_new(self.schema(), vec![generator])?
                .with_projection(projection.cloned()),
        ))
    }
}

/// Produces a job's one batch when first polled.
struct Once {
    job: Job,
    done: bool,
}

impl fmt::Debug for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Once({})", self.job.function.name())
    }
}

impl fmt::Display for Once {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.job.function.name())
    }
}

impl LazyBatchGenerator for Once {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn generate_next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.done {
            return Ok(None);
        }
        self.done = true;
        self.job.batch().map(Some)
    }

    fn reset_state(&self) -> Arc<RwLock<dyn LazyBatchGenerator>> {
        Arc::new(RwLock::new(Once {
            job: self.job.clone(),
            done: false,
        }))
    }
}

/// Adds the `pg_buffercache` view to a session's `pg_catalog` schema.
pub fn register_view(pg_catalog: &CatalogSchema, db: &Arc<Database>) {
    use datafusion::catalog::SchemaProvider;
    let view = Arc::new(JobTable {
        job: Job {
            function: Function::View,
            arg: Arg::None,
            db: db.clone(),
            pid: 0,
            track_io_timing: false,
        },
    });
    if let Err(e) = pg_catalog.register_table(Function::View.name().to_string(), view) {
        tracing::error!("could not register pg_buffercache: {e}");
    }
}

/// A table function: resolves its argument when the statement is planned.
struct TableFunction {
    function: Function,
    db: Arc<Database>,
    pid: i32,
    user: String,
    settings: SessionSettings,
}

impl fmt::Debug for TableFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TableFunction({})", self.function.name())
    }
}

impl TableFunctionImpl for TableFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let name = self.function.name();
        let exprs = args.exprs();
        let parameter = self.function.parameter();
        if exprs.len() != parameter.iter().len() {
            return Err(pg(no_such_function(
                name,
                &vec!["integer"; exprs.len()].join(", "),
            )));
        }
        let arg = match exprs.first() {
            None => Arg::None,
            Some(e) => {
                let value = constant(name, e, args.session())?;
                if value.is_null() {
                    Arg::Null
                } else if self.function == Function::Evict {
                    let id = integer(self.function, &value).map_err(pg)?;
                    if i32::try_from(id).is_err() {
                        // A literal beyond `integer` is a `bigint` in PostgreSQL.
                        return Err(pg(no_such_function(name, "bigint")));
                    }
                    Arg::Buffer(id)
                } else {
                    let snapshot = Snapshot::new(
                        self.db.clone(),
                        self.settings.clone(),
                        self.user.clone(),
                        extra_tables(),
                    );
                    let oid = match &value {
                        ScalarValue::Utf8(Some(s))
                        | ScalarValue::Utf8View(Some(s))
                        | ScalarValue::LargeUtf8(Some(s)) => snapshot
                            .resolve_relation(s, &snapshot.relations())
                            .ok_or_else(|| pg(PgError::undefined_table(s)))?,
                        v => integer(self.function, v).map_err(pg)? as u32,
                    };
                    Arg::Relation(relfilenode_of(&snapshot, oid).map_err(pg)?)
                }
            }
        };
        Ok(Arc::new(JobTable {
            job: Job {
                function: self.function,
                arg,
                db: self.db.clone(),
                pid: self.pid,
                track_io_timing: self.settings.track_io_timing(),
            },
        }))
    }
}

/// PostgreSQL's error for a call no function matches; `types` as in `(integer, integer)`.
fn no_such_function(name: &str, types: &str) -> PgError {
    PgError::new(
        sqlstate::UNDEFINED_FUNCTION,
        format!("function {name}({types}) does not exist"),
    )
    .with_hint(
        "No function matches the given name and argument types. You might need to add explicit type casts.",
    )
}

/// A table function's argument, evaluated: any expression without columns
/// (`'t'::regclass`, `1 + 1`, `pg_backend_pid()`).
fn constant(function: &str, e: &Expr, session: &dyn Session) -> Result<ScalarValue> {
    if !e.column_refs().is_empty() || matches!(e, Expr::Placeholder(_)) {
        return Err(pg(PgError::unsupported(format!(
            "the argument of {function}() must be a constant in iolab"
        ))));
    }
    let physical = session.create_physical_expr(e.clone(), &DFSchema::empty())?;
    let one_row = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    match physical.evaluate(&one_row)? {
        ColumnarValue::Scalar(v) => Ok(v),
        ColumnarValue::Array(a) => ScalarValue::try_from_array(&a, 0),
    }
}

/// An integer argument of `function` (digits in text too, as PostgreSQL reads an unknown
/// literal); other types match no function, as in PostgreSQL (`numeric` for `1.5`).
fn integer(function: Function, v: &ScalarValue) -> Result<i64, PgError> {
    use ScalarValue as S;
    match v {
        S::Utf8(Some(s)) | S::Utf8View(Some(s)) | S::LargeUtf8(Some(s)) => {
            s.trim().parse().map_err(|_| {
                PgError::new(
                    sqlstate::INVALID_TEXT_REPRESENTATION,
                    format!("invalid input syntax for type integer: \"{s}\""),
                )
            })
        }
        S::Int8(Some(_))
        | S::Int16(Some(_))
        | S::Int32(Some(_))
        | S::Int64(Some(_))
        | S::UInt8(Some(_))
        | S::UInt16(Some(_))
        | S::UInt32(Some(_))
        | S::UInt64(Some(_)) => match v.cast_to(&DataType::Int64) {
            Ok(S::Int64(Some(i))) => Ok(i),
            _ => Err(PgError::new(
                sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                "integer out of range",
            )),
        },
        other => Err(no_such_function(
            function.name(),
            &arg_type_name(&other.data_type()),
        )),
    }
}

/// Registers the table functions into the state that will plan a statement.
pub fn register_table_functions(state: &mut SessionState, info: &SessionInfo) {
    for function in Function::TABLE_FUNCTIONS {
        state.register_udtf(
            function.name(),
            Arc::new(TableFunction {
                function,
                db: info.db.clone(),
                pid: info.pid,
                user: info.user.clone(),
                settings: info.settings.clone(),
            }),
        );
    }
}

// ---------------------------------------------------------------------------------------
// The same functions in a select list
// ---------------------------------------------------------------------------------------

/// A row of OUT values as PostgreSQL prints a record: `(87,84,0)`, `(t,f)`, NULL as
/// nothing.
fn record_text(values: &[V]) -> String {
    let fields: Vec<String> = values
        .iter()
        .map(|v| match v {
            V::Null => String::new(),
            V::Bool(b) => if *b { "t" } else { "f" }.to_string(),
            V::Int(i) => i.to_string(),
            V::Numeric(n) => n.to_string(),
            V::Float(f) => {
                let mut out = Vec::new();
                iolab_engine::values::write_text(
                    &Float64Array::from(vec![*f]),
                    0,
                    &Default::default(),
                    &mut out,
                );
                String::from_utf8(out).unwrap_or_default()
            }
            V::Text(s) => s.clone(),
            V::TextArray(a) => format!("{{{}}}", a.join(",")),
        })
        .collect();
    format!("({})", fields.join(","))
}

/// Runs `function` with `arg` for the select-list form.
fn call(ctx: &Ctx, function: Function, arg: Arg) -> Result<V> {
    let job = Job {
        function,
        arg,
        db: ctx.shared.db.clone(),
        pid: ctx.pid,
        track_io_timing: ctx.settings.lock().track_io_timing(),
    };
    let rows = job.rows().map_err(pg)?;
    Ok(match rows.as_slice() {
        [row] if row.iter().all(|v| *v == V::Null) => V::Null,
        [row] => V::Text(record_text(row)),
        _ => {
            return Err(pg(PgError::internal(format!(
                "{} returned a set",
                function.name()
            ))))
        }
    })
}

/// `pg_buffercache_summary()`, `pg_buffercache_evict(…)`, `pg_buffercache_evict_relation(…)`
/// and `pg_buffercache_evict_all()` as scalar functions (their record as text).
pub(super) fn scalar_functions() -> Vec<Def> {
    vec![
        def(
            Function::Summary.name(),
            0..=0,
            DataType::Utf8,
            |ctx, _, rows| per_row(rows, |_| call(ctx, Function::Summary, Arg::None)),
        )
        .volatile(),
        def(
            Function::EvictAll.name(),
            0..=0,
            DataType::Utf8,
            |ctx, _, rows| per_row(rows, |_| call(ctx, Function::EvictAll, Arg::None)),
        )
        .volatile(),
        def(
            Function::Evict.name(),
            1..=1,
            DataType::Utf8,
            |ctx, args, rows| {
                let ids = ints(&args[0])?;
                per_row(rows, |i| {
                    let arg = ids[i].map(Arg::Buffer).unwrap_or(Arg::Null);
                    call(ctx, Function::Evict, arg)
                })
            },
        )
        .volatile(),
        def(
            Function::EvictRelation.name(),
            1..=1,
            DataType::Utf8,
            |ctx, args, rows| {
                let snapshot = ctx.snapshot();
                let oids = relation_oids(&snapshot, &snapshot.relations(), &args[0])?;
                per_row(rows, |i| {
                    let arg = match oids[i] {
                        None => Arg::Null,
                        Some(oid) => Arg::Relation(relfilenode_of(&snapshot, oid).map_err(pg)?),
                    };
                    call(ctx, Function::EvictRelation, arg)
                })
            },
        )
        .volatile(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_engine::buffer::BufferTag;

    fn buffer(id: u32, block: Option<u32>, dirty: bool, pins: u32, usage: u8) -> BufferSnapshot {
        BufferSnapshot {
            buffer_id: id,
            tag: block.map(|blkno| BufferTag {
                relfilenode: 16384,
                blkno,
            }),
            valid: block.is_some(),
            dirty,
            pins,
            usage_count: usage,
        }
    }

    #[test]
    fn columns_are_postgres_18s() {
        let view = Function::View.schema();
        let types: Vec<String> = view
            .fields()
            .iter()
            .map(|f| format!("{} {}", f.name(), f.data_type()))
            .collect();
        assert_eq!(
            types,
            [
                "bufferid Int32",
                "relfilenode Int64",
                "reltablespace Int64",
                "reldatabase Int64",
                "relforknumber Int16",
                "relblocknumber Int64",
                "isdirty Boolean",
                "usagecount Int16",
                "pinning_backends Int32"
            ]
        );
        assert_eq!(
            Function::Summary.schema().field(4).data_type(),
            &DataType::Float64
        );
    }

    #[test]
    fn rows_count_as_postgres_does() {
        let buffers = [
            buffer(0, Some(0), true, 0, 5),
            buffer(1, Some(1), false, 2, 1),
            buffer(2, None, false, 0, 0),
            // Being read: tagged, not yet valid, pinned by the reader.
            BufferSnapshot {
                valid: false,
                ..buffer(3, Some(2), false, 1, 1)
            },
        ];
        let view = view_rows(&buffers);
        assert_eq!(
            view[0],
            [
                V::Int(1),
                V::Int(16384),
                V::Int(1663),
                V::Int(5),
                V::Int(0),
                V::Int(0),
                V::Bool(true),
                V::Int(5),
                V::Int(0)
            ]
        );
        assert_eq!(view[1][8], V::Int(2));
        for row in [&view[2], &view[3]] {
            assert!(row[1..].iter().all(|v| *v == V::Null), "{row:?}");
        }
        assert_eq!(
            summary_row(&buffers),
            [V::Int(2), V::Int(2), V::Int(1), V::Int(2), V::Float(3.0)]
        );
        let counts = usage_count_rows(&buffers);
        assert_eq!(counts.len(), 6);
        assert_eq!(counts[0], [V::Int(0), V::Int(1), V::Int(0), V::Int(0)]);
        assert_eq!(counts[1], [V::Int(1), V::Int(2), V::Int(0), V::Int(2)]);
        assert_eq!(counts[5], [V::Int(5), V::Int(1), V::Int(1), V::Int(0)]);
        // An empty pool has no average.
        assert_eq!(summary_row(&buffers[2..3])[4], V::Null);
    }

    #[test]
    fn records_print_like_postgres() {
        assert_eq!(
            record_text(&[V::Int(87), V::Int(84), V::Int(0)]),
            "(87,84,0)"
        );
        assert_eq!(record_text(&[V::Bool(true), V::Bool(false)]), "(t,f)");
        assert_eq!(
            record_text(&[V::Int(1), V::Null, V::Float(1.9466604823747682)]),
            "(1,,1.9466604823747682)"
        );
        assert_eq!(record_text(&[V::Float(2.0)]), "(2)");
    }
}
