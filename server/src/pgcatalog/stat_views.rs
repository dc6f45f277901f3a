//! The I/O statistics views and functions of PostgreSQL 18, over the database's
//! [`IoStatsHub`] and its AIO handles:
//!
//! | SQL | rows |
//! |---|---|
//! | `pg_stat_io` (view), `pg_stat_get_io()` | 79: one per (backend type, object, context) PostgreSQL 18 tracks |
//! | `pg_stat_get_backend_io(pid)` | the rows of that live process's backend type; none for an unknown pid |
//! | `pg_aios` (view), `pg_get_aios()` | one per AIO handle in use |
//! | `pg_stat_aio`, `pg_stat_io_history`, `pg_stat_aio_history` (iolab's) | see `stat_aio` |
//! | `pg_stat_activity` | one per client session, see `activity` |
//! | `pg_stat_wal` (view), `pg_stat_get_wal()` | one, see `wal` |
//! | `pg_stat_recovery_prefetch` (view), `pg_stat_get_recovery_prefetch()` | one, see `wal` |
//! | `pg_stat_database` | the shared objects' and `postgres`', see `stat_database` |
//! | `pg_stat_checkpointer` | one: checkpoints by time and by request, done, write and sync time, buffers written |
//! | `pg_locks` | one per transaction id held (ExclusiveLock) or waited for (ShareLock, not granted); see `locks` |
//! | `pg_stat_progress_vacuum`, `_analyze`, `_create_index`, `_copy` | one per session running the command; see `progress` |
//! | `pg_stat_statements`, `pg_stat_statements_info` | one per statement text (constants as `$n`): calls, execution time, rows, buffers; see `stat_statements` |
//! | `pg_stat_bgwriter` | one: buffers the background writer wrote, rounds it stopped at `bgwriter_lru_maxpages`, buffers allocated |
//! | `pg_stat_reset_shared([target])` | resets `pg_stat_io` for `io`, `pg_stat_wal` for `wal`, `pg_stat_recovery_prefetch` for `recovery_prefetch`, `pg_stat_checkpointer` for `checkpointer`, `pg_stat_bgwriter` for `bgwriter`, iolab's `pg_stat_aio` for `aio`, all of them for NULL / no argument |
//! | `pg_stat_reset_backend_stats(pid)` | resets one process's statistics |
//! | `pg_stat_force_next_flush()` | nothing: iolab's counters are shared as they count |
//! | `pg_statio_{all,user}_{tables,indexes}`, `pg_stat_{all,user}_{tables,indexes}`, `pg_stat_reset()` | per table and index, see `relation_stats` |
//!
//! The columns are PostgreSQL 18's followed by iolab's (see `iolab_stats::views`). The
//! views are computed each time a statement scans them, so filters, joins and aggregates
//! over them see the statistics as of that statement; the table functions take their
//! snapshot when the statement is planned (their argument must be a constant, such as
//! `pg_backend_pid()`).
//!
//! Each session's per-process statistics exist from its start to its end: see
//! [`ActivityRegistration`](super::activity::ActivityRegistration).

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::Result;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::scalar::ScalarValue;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::exec::temp_files::TEMP_FILES_DIR;
use iolab_engine::Database;
use iolab_stats::views;
use iolab_stats::IoStatsHub;

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::functions::{def, ints, per_row, pg, texts, Def};
use super::progress::ProgressView;
use super::tables::CatalogSchema;
use super::time_range::TimeRange;
use super::view_scan::ViewScanExec;
use super::{activity, relation_stats, stat_aio, stat_database, stat_statements, wal};

/// PostgreSQL 18's targets of `pg_stat_reset_shared`, in its hint's order. `checkpointer`,
/// `io`, `wal` and `recovery_prefetch` have statistics in iolab; the others are accepted and reset
/// nothing. iolab's own target `aio` (`pg_stat_aio`) is accepted too but left out of
/// the hint, which stays PostgreSQL's.
const RESET_TARGETS: [&str; 7] = [
    "archiver",
    "bgwriter",
    "checkpointer",
    "io",
    "recovery_prefetch",
    "slru",
    "wal",
];

/// Which view a [`StatView`] computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Which {
    Io,
    Aios,
    Aio,
    Activity,
    IoHistory,
    AioHistory,
    StatioAllTables,
    StatioUserTables,
    StatioAllIndexes,
    StatioUserIndexes,
    StatAllTables,
    StatUserTables,
    StatAllIndexes,
    StatUserIndexes,
    Wal,
    RecoveryPrefetch,
    Database,
    Checkpointer,
    Bgwriter,
    Locks,
    Progress(ProgressView),
    Statements,
    StatementsInfo,
}

impl Which {
    const VIEWS: [(&'static str, Which); 27] = [
        ("pg_stat_io", Which::Io),
        ("pg_aios", Which::Aios),
        ("pg_stat_aio", Which::Aio),
        ("pg_stat_activity", Which::Activity),
        ("pg_stat_io_history", Which::IoHistory),
        ("pg_stat_aio_history", Which::AioHistory),
        ("pg_statio_all_tables", Which::StatioAllTables),
        ("pg_statio_user_tables", Which::StatioUserTables),
        ("pg_statio_all_indexes", Which::StatioAllIndexes),
        ("pg_statio_user_indexes", Which::StatioUserIndexes),
        ("pg_stat_all_tables", Which::StatAllTables),
        ("pg_stat_user_tables", Which::StatUserTables),
        ("pg_stat_all_indexes", Which::StatAllIndexes),
        ("pg_stat_user_indexes", Which::StatUserIndexes),
        ("pg_stat_wal", Which::Wal),
        ("pg_stat_recovery_prefetch", Which::RecoveryPrefetch),
        ("pg_stat_database", Which::Database),
        ("pg_stat_checkpointer", Which::Checkpointer),
        ("pg_stat_bgwriter", Which::Bgwriter),
        ("pg_locks", Which::Locks),
        (
            "pg_stat_progress_vacuum",
            Which::Progress(ProgressView::Vacuum),
        ),
        (
            "pg_stat_progress_analyze",
            Which::Progress(ProgressView::Analyze),
        ),
        (
            "pg_stat_progress_create_index",
            Which::Progress(ProgressView::CreateIndex),
        ),
        ("pg_stat_progress_copy", Which::Progress(ProgressView::Copy)),
        (
            "pg_stat_progress_cluster",
            Which::Progress(ProgressView::Cluster),
        ),
        ("pg_stat_statements", Which::Statements),
        ("pg_stat_statements_info", Which::StatementsInfo),
    ];

    pub(super) fn name(self) -> &'static str {
        Which::VIEWS
            .iter()
            .find(|(_, which)| *which == self)
            .map(|(name, _)| *name)
            .expect("every view is listed")
    }

    pub(super) fn schema(self) -> SchemaRef {
        match self {
            Which::Io => views::pg_stat_io_schema(),
            Which::Aios => views::pg_aios_schema(),
            Which::Aio => stat_aio::pg_stat_aio_schema(),
            Which::Activity => activity::schema(),
            Which::IoHistory => stat_aio::pg_stat_io_history_schema(),
            Which::AioHistory => stat_aio::pg_stat_aio_history_schema(),
            Which::StatioAllTables | Which::StatioUserTables => {
                relation_stats::statio_tables_schema()
            }
            Which::StatioAllIndexes | Which::StatioUserIndexes => {
                relation_stats::statio_indexes_schema()
            }
            Which::StatAllTables | Which::StatUserTables => relation_stats::stat_tables_schema(),
            Which::StatAllIndexes | Which::StatUserIndexes => relation_stats::stat_indexes_schema(),
            Which::Wal => wal::pg_stat_wal_schema(),
            Which::RecoveryPrefetch => wal::pg_stat_recovery_prefetch_schema(),
            Which::Database => stat_database::schema(),
            Which::Checkpointer => wal::pg_stat_checkpointer_schema(),
            Which::Bgwriter => wal::pg_stat_bgwriter_schema(),
            Which::Locks => super::locks::schema(),
            Which::Progress(view) => view.schema(),
            Which::Statements => stat_statements::schema(),
            Which::StatementsInfo => stat_statements::info_schema(),
        }
    }

    fn is_history(self) -> bool {
        matches!(self, Which::IoHistory | Which::AioHistory)
    }

    /// The view's rows now, only the columns `projection` (all when `None`); of a
    /// history, only the samples in `range`.
    pub(super) fn batch(
        self,
        db: &Database,
        projection: Option<&[usize]>,
        range: TimeRange,
    ) -> Result<RecordBatch> {
        let whole = match self {
            Which::Io => db.io_stats.pg_stat_io_batch(),
            Which::Aios => views::pg_aios_batch(&db.aio_rows()),
            Which::Aio => stat_aio::pg_stat_aio_batch(db)?,
            Which::Activity => activity::batch(db)?,
            Which::StatioAllTables | Which::StatioUserTables => {
                relation_stats::statio_tables_batch(db)?
            }
            Which::StatioAllIndexes | Which::StatioUserIndexes => {
                relation_stats::statio_indexes_batch(db)?
            }
            Which::StatAllTables | Which::StatUserTables => relation_stats::stat_tables_batch(db)?,
            Which::StatAllIndexes | Which::StatUserIndexes => {
                relation_stats::stat_indexes_batch(db)?
            }
            Which::Wal => wal::pg_stat_wal_batch(db)?,
            Which::RecoveryPrefetch => wal::pg_stat_recovery_prefetch_batch(db)?,
            Which::Database => stat_database::batch(db)?,
            Which::Checkpointer => wal::pg_stat_checkpointer_batch(db)?,
            Which::Bgwriter => wal::pg_stat_bgwriter_batch(db)?,
            Which::Locks => super::locks::batch(db)?,
            Which::Progress(view) => view.batch(db)?,
            Which::Statements => stat_statements::batch(db)?,
            Which::StatementsInfo => stat_statements::info_batch(db)?,
            // Long (an hour of samples): only the projected columns are built.
            Which::IoHistory => return stat_aio::pg_stat_io_history_batch(db, projection, range),
            Which::AioHistory => return stat_aio::pg_stat_aio_history_batch(db, projection, range),
        };
        Ok(match projection {
            Some(columns) => whole.project(columns)?,
            None => whole,
        })
    }
}

/// Is `name` one of the statistics views (whose rows are computed when a statement
/// scans them)?
pub fn is_view_name(name: &str) -> bool {
    Which::VIEWS.iter().any(|(view, _)| *view == name)
}

/// A statistics view: its rows are computed when a statement scans it.
pub(crate) struct StatView {
    which: Which,
    db: Arc<Database>,
}

impl std::fmt::Debug for StatView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StatView({:?})", self.which)
    }
}

#[async_trait]
impl TableProvider for StatView {
    fn schema(&self) -> SchemaRef {
        self.which.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    /// A history takes comparisons of `time` with constants (see `time_range`), as
    /// inexact filters: DataFusion still applies them.
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                if self.which.is_history() && TimeRange::understands(f) {
                    TableProviderFilterPushDown::Inexact
                } else {
                    TableProviderFilterPushDown::Unsupported
                }
            })
            .collect())
    }

    /// The rows are computed when the plan runs (see `view_scan`). A `limit` is left to
    /// the plan above, which DataFusion keeps.
    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(Arc::new(ViewScanExec::new(
            self.which,
            self.db.clone(),
            projection.cloned(),
            filters.to_vec(),
        )?))
    }
}

/// Adds the statistics views to a session's `pg_catalog` schema.
pub fn register_views(pg_catalog: &CatalogSchema, db: &Arc<Database>) {
    use datafusion::catalog::SchemaProvider;
    for (name, which) in Which::VIEWS {
        let view = Arc::new(StatView {
            which,
            db: db.clone(),
        });
        if let Err(e) = pg_catalog.register_table(name.to_string(), view) {
            tracing::error!("could not register {name}: {e}");
        }
    }
}

/// A table function of PostgreSQL's: the arity it accepts and the batch it returns for
/// its (constant) arguments.
struct StatFunction {
    name: &'static str,
    arity: usize,
    db: Arc<Database>,
    rows: Rows,
}

/// A table function's rows for its (constant) arguments.
type Rows = fn(&Database, &[Option<i64>]) -> Result<RecordBatch>;

impl std::fmt::Debug for StatFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StatFunction({})", self.name)
    }
}

impl TableFunctionImpl for StatFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        if exprs.len() != self.arity {
            let types = vec!["integer"; exprs.len()].join(", ");
            return Err(pg(PgError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {}({types}) does not exist", self.name),
            )
            .with_hint(
                "No function matches the given name and argument types. You might need to add explicit type casts.",
            )));
        }
        let values = exprs
            .iter()
            .map(|e| constant_int(self.name, e))
            .collect::<Result<Vec<_>>>()?;
        let batch = (self.rows)(&self.db, &values)?;
        Ok(Arc::new(MemTable::try_new(
            batch.schema(),
            vec![vec![batch]],
        )?))
    }
}

/// A table function's argument: an integer constant (or NULL) once DataFusion has
/// folded it (`pg_backend_pid()` folds; a column of another table does not).
fn constant_int(function: &str, e: &Expr) -> Result<Option<i64>> {
    let Expr::Literal(v, _) = e else {
        return Err(pg(PgError::unsupported(format!(
            "the argument of {function}() must be a constant in iolab"
        ))));
    };
    Ok(match v {
        v if v.is_null() => None,
        ScalarValue::Int8(Some(i)) => Some(*i as i64),
        ScalarValue::Int16(Some(i)) => Some(*i as i64),
        ScalarValue::Int32(Some(i)) => Some(*i as i64),
        ScalarValue::Int64(Some(i)) => Some(*i),
        ScalarValue::UInt8(Some(i)) => Some(*i as i64),
        ScalarValue::UInt16(Some(i)) => Some(*i as i64),
        ScalarValue::UInt32(Some(i)) => Some(*i as i64),
        ScalarValue::UInt64(Some(i)) => Some(*i as i64),
        ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) => {
            Some(s.trim().parse().map_err(|_| {
                pg(PgError::new(
                    sqlstate::INVALID_TEXT_REPRESENTATION,
                    format!("invalid input syntax for type integer: \"{s}\""),
                ))
            })?)
        }
        other => {
            return Err(pg(PgError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {function}({}) does not exist", other.data_type()),
            )))
        }
    })
}

/// A pid argument as PostgreSQL's `integer`: values out of its range match no process.
fn pid_of(v: Option<i64>) -> Option<i32> {
    v.and_then(|v| i32::try_from(v).ok())
}

/// Registers `pg_stat_get_io()`, `pg_stat_get_backend_io(pid)`, `pg_get_aios()`,
/// `pg_stat_get_wal()`, `pg_stat_get_recovery_prefetch()` and `pg_ls_tmpdir()` into the
/// state that will plan a statement.
pub fn register_table_functions(state: &mut SessionState, db: &Arc<Database>) {
    let functions: [(&'static str, usize, Rows); 6] = [
        ("pg_stat_get_io", 0, |db, _| {
            Which::Io.batch(db, None, TimeRange::default())
        }),
        ("pg_stat_get_backend_io", 1, |db, args| {
            // STRICT: a NULL pid returns no rows, as an unknown one does.
            let snapshot = pid_of(args[0]).and_then(|pid| db.io_stats.backend_snapshot(pid));
            Ok(views::backend_io_batch(snapshot.as_ref()))
        }),
        ("pg_get_aios", 0, |db, _| {
            Which::Aios.batch(db, None, TimeRange::default())
        }),
        ("pg_stat_get_wal", 0, |db, _| wal::pg_stat_wal_batch(db)),
        ("pg_stat_get_recovery_prefetch", 0, |db, _| {
            wal::pg_stat_recovery_prefetch_batch(db)
        }),
        ("pg_ls_tmpdir", 0, |db, _| temp_files_batch(db)),
    ];
    for (name, arity, rows) in functions {
        state.register_udtf(
            name,
            Arc::new(StatFunction {
                name,
                arity,
                db: db.clone(),
                rows,
            }),
        );
    }
}

/// `pg_ls_tmpdir()`: the temporary files of every session now (sorts and hash
/// aggregations beyond `work_mem`), one row each: `name`, `size` in bytes, `modification`.
fn temp_files_batch(db: &Database) -> Result<RecordBatch> {
    static SCHEMA: std::sync::LazyLock<SchemaRef> = std::sync::LazyLock::new(|| {
        schema_of(&parse_columns(
            "name text, size bigint, modification timestamp with time zone",
        ))
    });
    let dir = db.data_dir().join(TEMP_FILES_DIR);
    let mut rows = Vec::new();
    // A file removed while the directory is read is not listed.
    for entry in std::fs::read_dir(&dir).map_err(|e| {
        pg(PgError::internal(format!(
            "could not open directory \"{TEMP_FILES_DIR}\": {e}"
        )))
    })? {
        let Ok(entry) = entry else { continue };
        let Ok(meta) = entry.metadata() else { continue };
        if !meta.is_file() {
            continue;
        }
        let modified = meta
            .modified()
            .ok()
            .map(chrono::DateTime::<chrono::Utc>::from);
        rows.push(vec![
            V::text(entry.file_name().to_string_lossy()),
            V::Int(meta.len() as i64),
            relation_stats::time(modified),
        ]);
    }
    build_batch(&SCHEMA, &rows)
}

/// `pg_stat_reset_shared`, `pg_stat_reset_backend_stats` and `pg_stat_force_next_flush`
/// (all return `void`, shown as an empty text value as psql shows PostgreSQL's void).
/// PostgreSQL's backends publish their counters now and then, so scripts call
/// `pg_stat_force_next_flush()` before reading `pg_stat_io`; iolab's are always current.
pub(super) fn reset_functions() -> Vec<Def> {
    use datafusion::arrow::datatypes::DataType;
    vec![
        def(
            "pg_stat_reset_shared",
            0..=1,
            DataType::Utf8,
            |ctx, args, rows| {
                let targets = match args.first() {
                    Some(a) => texts(a)?,
                    None => vec![None; rows],
                };
                let hub = &ctx.shared.db.io_stats;
                per_row(rows, |i| {
                    reset_shared(hub, targets[i].as_deref())?;
                    Ok(V::text(""))
                })
            },
        )
        .volatile(),
        def(
            "pg_stat_reset_backend_stats",
            1..=1,
            DataType::Utf8,
            |ctx, args, rows| {
                let pids = ints(&args[0])?;
                let hub = &ctx.shared.db.io_stats;
                per_row(rows, |i| {
                    // STRICT: NULL in, NULL out.
                    Ok(match pids[i] {
                        None => V::Null,
                        Some(pid) => {
                            if let Some(pid) = pid_of(Some(pid)) {
                                hub.reset_backend(pid);
                            }
                            V::text("")
                        }
                    })
                })
            },
        )
        .volatile(),
        def(
            "pg_stat_force_next_flush",
            0..=0,
            DataType::Utf8,
            |_, _, rows| per_row(rows, |_| Ok(V::text(""))),
        )
        .volatile(),
    ]
}

/// `pg_stat_reset_shared(target)`; `None` resets every kind, as PostgreSQL 18 does.
fn reset_shared(hub: &IoStatsHub, target: Option<&str>) -> Result<()> {
    match target {
        None => {
            hub.reset_shared_io();
            hub.reset_shared_aio();
            hub.wal.reset();
            hub.recovery_prefetch.reset();
            hub.checkpointer.reset();
            hub.bgwriter.reset();
        }
        Some("io") => hub.reset_shared_io(),
        Some("aio") => hub.reset_shared_aio(),
        Some("wal") => hub.wal.reset(),
        Some("recovery_prefetch") => hub.recovery_prefetch.reset(),
        Some("checkpointer") => hub.checkpointer.reset(),
        Some("bgwriter") => hub.bgwriter.reset(),
        Some(t) if RESET_TARGETS.contains(&t) => {}
        Some(t) => {
            let quoted: Vec<String> = RESET_TARGETS.iter().map(|t| format!("\"{t}\"")).collect();
            let (last, rest) = quoted.split_last().expect("not empty");
            return Err(pg(PgError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("unrecognized reset target: \"{t}\""),
            )
            .with_hint(format!("Target must be {}, or {last}.", rest.join(", ")))));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn wal_targets_reset_only_their_counters_and_null_resets_both() {
        let hub = IoStatsHub::new();
        let bump = |hub: &IoStatsHub| {
            hub.wal.records.fetch_add(5, Ordering::Relaxed);
            hub.recovery_prefetch.hit.fetch_add(7, Ordering::Relaxed);
        };
        let counts = |hub: &IoStatsHub| {
            (
                hub.wal.snapshot().records,
                hub.recovery_prefetch.snapshot().hit,
            )
        };
        bump(&hub);
        let before = hub.wal.snapshot().stats_reset;
        reset_shared(&hub, Some("wal")).unwrap();
        assert_eq!(counts(&hub), (0, 7));
        assert!(hub.wal.snapshot().stats_reset >= before);
        reset_shared(&hub, Some("recovery_prefetch")).unwrap();
        assert_eq!(counts(&hub), (0, 0));
        bump(&hub);
        reset_shared(&hub, Some("io")).unwrap();
        reset_shared(&hub, Some("bgwriter")).unwrap();
        assert_eq!(
            counts(&hub),
            (5, 7),
            "other targets leave the WAL's counters"
        );
        reset_shared(&hub, None).unwrap();
        assert_eq!(counts(&hub), (0, 0));
    }

    #[test]
    fn timestamptz_zone_agrees_with_the_catalog() {
        assert_eq!(
            views::TIMESTAMPTZ_ZONE,
            iolab_catalog::types::TIMESTAMPTZ_ZONE
        );
    }

    #[test]
    fn reset_targets_and_hint_are_postgres_18s() {
        let hub = IoStatsHub::new();
        for t in RESET_TARGETS {
            reset_shared(&hub, Some(t)).unwrap();
        }
        reset_shared(&hub, None).unwrap();
        let e = reset_shared(&hub, Some("x")).unwrap_err();
        let datafusion::error::DataFusionError::External(e) = e else {
            panic!("{e}")
        };
        let e = e.downcast_ref::<PgError>().unwrap();
        assert_eq!(e.code, "22023");
        assert_eq!(e.message, "unrecognized reset target: \"x\"");
        assert_eq!(
            e.hint.as_deref(),
            Some("Target must be \"archiver\", \"bgwriter\", \"checkpointer\", \"io\", \"recovery_prefetch\", \"slru\", or \"wal\".")
        );
    }
}
