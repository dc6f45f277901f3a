//! PostgreSQL's system information and catalog functions as DataFusion scalar UDFs.
//!
//! Every function here is one [`PgFunction`]: a name, the argument counts it accepts, its
//! result type and a body that maps argument columns to a result column. Arguments are
//! taken in any type and converted inside the body (a relation may arrive as an OID of
//! any integer type, or as its name in text, e.g. after `'t'::regclass`), so DataFusion
//! never has to find a coercion PostgreSQL would have found through its own types.
//!
//! The functions that read the session — `current_setting`, `current_user`,
//! `current_schema`, `pg_table_is_visible` — see the [`SessionInfo`] given to
//! [`register`], which the server does once per statement. `set_config` changes a
//! working copy of the settings (so a later `current_setting` in the same statement sees
//! the change) and records the call in [`SessionInfo::setting_changes`]; the server
//! applies those to the session after the statement, as PostgreSQL would have done while
//! running it. With constant arguments (the usual `SELECT set_config('x', 'v', false)`)
//! `set_config` runs while the statement is planned, so its change is recorded before
//! the statement's rows are streamed; with arguments from a table it runs as the rows
//! are produced.
//!
//! The `reg*in` / `reg*out` functions implement the `::regclass`, `::regtype`,
//! `::regnamespace` and `::regrole` casts that `rewrite` turns into function calls.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::RangeInclusive;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, TimeUnit};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::simplify::{ExprSimplifyResult, SimplifyContext};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use datafusion::scalar::ScalarValue;
use iolab_catalog::{sqlstate, PgError, PgType};
use iolab_settings::{SessionSettings, SettingError};
use parking_lot::Mutex;

use super::batch::{build_array, V};
use super::snapshot::{parse_identifier, quote_ident, Relation, Snapshot};
use super::tables::SharedCatalogState;
use super::{oids, types, SessionInfo};

/// A function body: argument columns (all of the same length) and the row count, to the
/// result values.
type Body = dyn Fn(&Ctx, &[ArrayRef], usize) -> Result<Vec<V>> + Send + Sync;

/// What the function bodies read: the session as of the current statement.
pub struct Ctx {
    pub shared: Arc<SharedCatalogState>,
    pub pid: i32,
    pub user: String,
    /// The session's settings, changed by `set_config` as the statement runs.
    pub settings: Mutex<SessionSettings>,
    pub setting_changes: Arc<Mutex<Vec<(String, String, bool)>>>,
    /// What the session remembers of its sequences (`currval`, `lastval`).
    pub sequences: Arc<super::sequence_functions::SessionSequences>,
    /// The running statement's cancel flag (`pg_sleep` looks at it).
    cancel: Option<iolab_engine::exec::cancel::CancelFlag>,
}

impl Ctx {
    /// The running statement's cancel error, if it was canceled.
    pub(super) fn check_cancel(&self) -> iolab_catalog::PgResult<()> {
        self.cancel.as_ref().map_or(Ok(()), |c| c.check())
    }

    pub(super) fn snapshot(&self) -> Snapshot {
        let mut s = self.shared.snapshot();
        s.settings = self.settings.lock().clone();
        s.user = self.user.clone();
        s
    }
}

/// One PostgreSQL function.
pub struct PgFunction {
    name: &'static str,
    aliases: Vec<String>,
    arity: RangeInclusive<usize>,
    signature: Signature,
    returns: DataType,
    /// Run while the statement is planned when every argument is a constant (see
    /// `set_config`).
    at_plan_time: bool,
    /// Called once per row even when its arguments are constants (`nextval`).
    each_row: bool,
    ctx: Arc<Ctx>,
    body: Arc<Body>,
}

impl fmt::Debug for PgFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PgFunction({})", self.name)
    }
}

impl PartialEq for PgFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && Arc::ptr_eq(&self.ctx, &other.ctx)
    }
}

impl Eq for PgFunction {}

impl Hash for PgFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

/// Is `f` one of iolab's functions (bound to the session and statement that registered
/// them)?
pub fn is_session_function(f: &ScalarUDF) -> bool {
    let implementation: &dyn std::any::Any = f.inner().as_ref();
    implementation.is::<PgFunction>()
}

impl ScalarUDFImpl for PgFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !self.arity.contains(&arg_types.len()) {
            let args: Vec<String> = arg_types.iter().map(arg_type_name).collect();
            return Err(pg(PgError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {}({}) does not exist", self.name, args.join(", ")),
            )
            .with_hint(
                "No function matches the given name and argument types. You might need to add explicit type casts.",
            )));
        }
        Ok(self.returns.clone())
    }

    fn simplify(&self, args: Vec<Expr>, _info: &SimplifyContext) -> Result<ExprSimplifyResult> {
        if !self.at_plan_time || !args.iter().all(|a| matches!(a, Expr::Literal(..))) {
            return Ok(ExprSimplifyResult::Original(args));
        }
        let arrays = args
            .iter()
            .map(|a| match a {
                Expr::Literal(v, _) => v.to_array(),
                _ => unreachable!("checked above"),
            })
            .collect::<Result<Vec<_>>>()?;
        let values = (self.body)(&self.ctx, &arrays, 1)?;
        let out = build_array(&self.returns, &values)?;
        Ok(ExprSimplifyResult::Simplified(Expr::Literal(
            ScalarValue::try_from_array(&out, 0)?,
            None,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let all_scalar = args
            .args
            .iter()
            .all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let rows = if all_scalar && !self.each_row {
            1
        } else {
            args.number_rows
        };
        let all_scalar = all_scalar && rows == 1 && !self.each_row;
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<Result<Vec<_>>>()?;
        let values = (self.body)(&self.ctx, &arrays, rows)?;
        debug_assert_eq!(
            values.len(),
            rows,
            "{} must return one value per row",
            self.name
        );
        let out = build_array(&self.returns, &values)?;
        if all_scalar {
            Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?))
        } else {
            Ok(ColumnarValue::Array(out))
        }
    }
}

/// The PostgreSQL name of an argument's Arrow type, for error messages.
pub(super) fn arg_type_name(dt: &DataType) -> String {
    match dt {
        DataType::Null => "unknown".to_string(),
        other => PgType::for_arrow(other)
            .map(|t| t.format_type())
            .unwrap_or_else(|| "unknown".to_string()),
    }
}

/// A PgError as a DataFusion error (the server unwraps it again).
pub fn pg(e: PgError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

fn setting_error(e: SettingError) -> DataFusionError {
    let mut p = PgError::new(e.sqlstate, e.message);
    p.detail = e.detail;
    p.hint = e.hint;
    pg(p)
}

// ---------------------------------------------------------------------------------------
// Reading arguments
// ---------------------------------------------------------------------------------------

pub(crate) fn is_text(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

/// Column `a` as text values.
pub(super) fn texts(a: &ArrayRef) -> Result<Vec<Option<String>>> {
    let c = cast(a, &DataType::Utf8)?;
    Ok(c.as_string::<i32>()
        .iter()
        .map(|v| v.map(str::to_string))
        .collect())
}

/// Column `a` as integers.
pub(super) fn ints(a: &ArrayRef) -> Result<Vec<Option<i64>>> {
    let c = if is_text(a.data_type()) {
        // '16384' as an oid literal
        let t = texts(a)?;
        return Ok(t
            .into_iter()
            .map(|v| v.and_then(|s| s.trim().parse().ok()))
            .collect());
    } else {
        cast(a, &DataType::Int64)?
    };
    Ok(c.as_primitive::<Int64Type>().iter().collect())
}

/// How many of `args` are NULL in each row (a NULL literal's array has no validity
/// bitmap: its logical nulls say so).
fn nulls_per_row(args: &[ArrayRef], rows: usize) -> Vec<usize> {
    let nulls: Vec<_> = args.iter().map(|a| a.logical_nulls()).collect();
    (0..rows)
        .map(|i| nulls.iter().flatten().filter(|n| n.is_null(i)).count())
        .collect()
}

/// Column `a` as double precision.
fn floats(a: &ArrayRef) -> Result<Vec<Option<f64>>> {
    let c = cast(a, &DataType::Float64)?;
    Ok(
        c.as_primitive::<datafusion::arrow::datatypes::Float64Type>()
            .iter()
            .collect(),
    )
}

/// PostgreSQL's `width_bucket(operand, low, high, count)`: which of `count` equal-width
/// buckets between `low` and `high` holds `operand` (1…count), 0 below the first and
/// count + 1 past the last; `low > high` numbers the buckets downwards.
fn width_bucket(x: f64, low: f64, high: f64, count: i64) -> std::result::Result<i64, PgError> {
    let invalid = |message: &str| PgError::new("2201G", message);
    if count <= 0 || count > i32::MAX as i64 {
        return Err(invalid("count must be greater than zero"));
    }
    if low == high {
        return Err(invalid("lower bound cannot equal upper bound"));
    }
    if x.is_nan() || low.is_nan() || high.is_nan() {
        return Err(invalid(
            "operand, lower bound, and upper bound cannot be NaN",
        ));
    }
    if !low.is_finite() || !high.is_finite() {
        return Err(invalid("lower and upper bounds must be finite"));
    }
    let n = count as f64;
    let bucket = if low < high {
        match x {
            x if x < low => 0,
            x if x >= high => count + 1,
            x => ((n * (x - low) / (high - low)).floor() as i64 + 1).min(count),
        }
    } else {
        match x {
            x if x > low => 0,
            x if x <= high => count + 1,
            x => ((n * (low - x) / (low - high)).floor() as i64 + 1).min(count),
        }
    };
    Ok(bucket)
}

pub(super) fn bools(a: &ArrayRef) -> Result<Vec<Option<bool>>> {
    let c = cast(a, &DataType::Boolean)?;
    Ok(c.as_boolean().iter().collect())
}

/// A relation argument: an OID (any integer type, or digits in text), or a relation name
/// in text (`'t'`, `'public.t'`), which must exist.
pub(super) fn relation_oids(
    s: &Snapshot,
    all: &[Relation],
    a: &ArrayRef,
) -> Result<Vec<Option<u32>>> {
    if is_text(a.data_type()) {
        texts(a)?
            .into_iter()
            .map(|v| match v {
                None => Ok(None),
                Some(name) => match s.resolve_relation(&name, all) {
                    Some(oid) => Ok(Some(oid)),
                    None => Err(pg(PgError::undefined_table(&name))),
                },
            })
            .collect()
    } else {
        Ok(ints(a)?.into_iter().map(|v| v.map(|i| i as u32)).collect())
    }
}

// ---------------------------------------------------------------------------------------
// The functions
// ---------------------------------------------------------------------------------------

pub(super) struct Def {
    name: &'static str,
    aliases: &'static [&'static str],
    arity: RangeInclusive<usize>,
    returns: DataType,
    volatility: Volatility,
    at_plan_time: bool,
    each_row: bool,
    body: Arc<Body>,
}

pub(super) fn def(
    name: &'static str,
    arity: RangeInclusive<usize>,
    returns: DataType,
    body: impl Fn(&Ctx, &[ArrayRef], usize) -> Result<Vec<V>> + Send + Sync + 'static,
) -> Def {
    Def {
        name,
        aliases: &[],
        arity,
        returns,
        volatility: Volatility::Stable,
        at_plan_time: false,
        each_row: false,
        body: Arc::new(body),
    }
}

impl Def {
    pub(super) fn aliases(mut self, aliases: &'static [&'static str]) -> Def {
        self.aliases = aliases;
        self
    }

    pub(super) fn volatile(mut self) -> Def {
        self.volatility = Volatility::Volatile;
        self
    }

    /// Runs once per row even with constant arguments, giving each row its own value.
    pub(super) fn each_row(mut self) -> Def {
        self.each_row = true;
        self
    }

    /// A volatile function with constant arguments runs when the statement is planned,
    /// once (see [`SessionInfo::setting_changes`]).
    fn at_plan_time(mut self) -> Def {
        self.at_plan_time = true;
        self
    }
}

/// A function of one row's values: `f(row)` for each row.
pub(super) fn per_row(rows: usize, f: impl FnMut(usize) -> Result<V>) -> Result<Vec<V>> {
    (0..rows).map(f).collect()
}

fn text_list() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}

/// A constant text function (`current_database()`, `current_user`, …).
fn constant(name: &'static str, value: impl Fn(&Ctx) -> V + Send + Sync + 'static) -> Def {
    def(name, 0..=0, DataType::Utf8, move |ctx, _, rows| {
        Ok(vec![value(ctx); rows])
    })
}

/// A `reg*in` cast: an OID passes through; a name is an OID written in digits, or found
/// by `lookup`, or the error `missing(name)`.
fn reg_in(
    name: &'static str,
    lookup: fn(&str) -> Option<u32>,
    missing: fn(&str) -> PgError,
) -> Def {
    def(name, 1..=1, DataType::Int64, move |_, args, rows| {
        if !is_text(args[0].data_type()) {
            return Ok(ints(&args[0])?
                .into_iter()
                .map(|o| o.map(V::Int).unwrap_or(V::Null))
                .collect());
        }
        let names = texts(&args[0])?;
        per_row(rows, |i| match names[i].as_deref() {
            None => Ok(V::Null),
            Some(n) => match n.trim().parse::<u32>().ok().or_else(|| lookup(n)) {
                Some(oid) => Ok(V::oid(oid)),
                None => Err(pg(missing(n))),
            },
        })
    })
}

/// A `reg*out` cast: text passes through; an OID is shown by `show`.
fn reg_out(name: &'static str, show: fn(i64) -> String) -> Def {
    def(name, 1..=1, DataType::Utf8, move |_, args, rows| {
        if is_text(args[0].data_type()) {
            return Ok(texts(&args[0])?.into_iter().map(V::opt_text).collect());
        }
        let oids = ints(&args[0])?;
        per_row(rows, |i| {
            Ok(oids[i].map(|o| V::Text(show(o))).unwrap_or(V::Null))
        })
    })
}

/// A function of one relation (its `regclass` argument): `value` of the relation each row
/// names; NULL for an unknown OID, or where `value` gives none.
fn of_relation(name: &'static str, returns: DataType, value: fn(&Relation) -> Option<V>) -> Def {
    def(name, 1..=1, returns, move |ctx, args, rows| {
        let s = ctx.snapshot();
        let all = s.relations();
        let oids = relation_oids(&s, &all, &args[0])?;
        per_row(rows, |i| {
            let relation = oids[i].and_then(|o| all.iter().find(|r| r.oid == o));
            Ok(relation.and_then(value).unwrap_or(V::Null))
        })
    })
}

/// PostgreSQL's error for a fork name other than main, fsm, vm and init.
pub(super) fn invalid_fork_name() -> PgError {
    PgError::new(sqlstate::INVALID_PARAMETER_VALUE, "invalid fork name")
        .with_hint("Valid fork names are \"main\", \"fsm\", \"vm\", and \"init\".")
}

fn relation_size(name: &'static str) -> Def {
    def(name, 1..=2, DataType::Int64, move |ctx, args, rows| {
        let s = ctx.snapshot();
        let all = s.relations();
        let oids = relation_oids(&s, &all, &args[0])?;
        let forks = if args.len() > 1 {
            texts(&args[1])?
        } else {
            vec![None; rows]
        };
        per_row(rows, |i| {
            let Some(oid) = oids[i] else {
                return Ok(V::Null);
            };
            if let Some(fork) = &forks[i] {
                match fork.as_str() {
                    "main" => {}
                    "fsm" | "vm" | "init" => return Ok(V::Int(0)),
                    _ => return Err(pg(invalid_fork_name())),
                }
            }
            // The total counts the table's indexes too (iolab has no TOAST).
            let indexes = if name == "pg_total_relation_size" {
                s.indexes_size(oid)
            } else {
                0
            };
            Ok(s.relation_size(oid)
                .map(|bytes| V::Int(bytes + indexes))
                .unwrap_or(V::Null))
        })
    })
}

/// Always true: every object of these kinds iolab has is in `pg_catalog`, which is on
/// every search path.
fn visible(name: &'static str) -> Def {
    def(name, 1..=1, DataType::Boolean, |_, _, rows| {
        Ok(vec![V::Bool(true); rows])
    })
}

/// Always true: iolab has one superuser and no privileges to check.
fn privilege(name: &'static str) -> Def {
    def(name, 2..=4, DataType::Boolean, |_, _, rows| {
        Ok(vec![V::Bool(true); rows])
    })
}

/// Always NULL (text): deparsers of objects iolab does not have (expressions, constraints,
/// indexes, statistics objects, triggers).
fn null_text(name: &'static str, arity: RangeInclusive<usize>) -> Def {
    def(name, arity, DataType::Utf8, |_, _, rows| {
        Ok(vec![V::Null; rows])
    })
}

/// `pg_size_pretty`: bytes in the largest unit that keeps the number at least 10 (or,
/// above bytes, below 10240 with PostgreSQL's half-unit rounding), e.g. `8192 bytes`,
/// `16 kB`, `1365 MB`.
pub fn size_pretty(bytes: i64) -> String {
    // (unit, limit on the value in this unit's half-units, bits to the next unit)
    const UNITS: &[&str] = &["bytes", "kB", "MB", "GB", "TB", "PB"];
    if bytes.unsigned_abs() < 10 * 1024 {
        return format!("{bytes} bytes");
    }
    // Half-units of kB: truncating division, as PostgreSQL divides.
    let mut half = bytes / (1 << 9);
    for (i, unit) in UNITS.iter().enumerate().skip(1) {
        let last = i == UNITS.len() - 1;
        if last || half.unsigned_abs() < 20 * 1024 - 1 {
            let rounded = if half < 0 {
                (half - 1) / 2
            } else {
                (half + 1) / 2
            };
            return format!("{rounded} {unit}");
        }
        half /= 1 << 10;
    }
    unreachable!("the last unit always matches")
}

fn size_pretty_value(a: &ArrayRef, i: usize) -> Result<V> {
    if a.is_null(i) {
        return Ok(V::Null);
    }
    match a.data_type() {
        DataType::Float32
        | DataType::Float64
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => {
            let f = cast(&a.slice(i, 1), &DataType::Float64)?;
            let v = f
                .as_primitive::<datafusion::arrow::datatypes::Float64Type>()
                .value(0);
            if v.fract() != 0.0 && v.abs() < 10240.0 {
                let text = texts(&a.slice(i, 1))?.remove(0).unwrap_or_default();
                return Ok(V::Text(format!("{text} bytes")));
            }
            Ok(V::Text(size_pretty(v.round() as i64)))
        }
        _ => Ok(ints(&a.slice(i, 1))?[0]
            .map(|b| V::Text(size_pretty(b)))
            .unwrap_or(V::Null)),
    }
}

/// Every function, bound to one session.
fn definitions() -> Vec<Def> {
    let mut d: Vec<Def> = [
        "pg_function_is_visible",
        "pg_type_is_visible",
        "pg_conversion_is_visible",
        "pg_collation_is_visible",
        "pg_operator_is_visible",
        "pg_opclass_is_visible",
        "pg_opfamily_is_visible",
        "pg_statistics_obj_is_visible",
        "pg_ts_config_is_visible",
        "pg_ts_dict_is_visible",
        "pg_ts_parser_is_visible",
        "pg_ts_template_is_visible",
    ]
    .into_iter()
    .map(visible)
    .collect();
    d.extend(vec![
        def("version", 0..=0, DataType::Utf8, |ctx, _, rows| {
            let version = ctx
                .settings
                .lock()
                .get("server_version")
                .unwrap_or_else(|_| "18.0".into());
            let text = format!(
                "PostgreSQL {version} (iolab {}) on {}-pc-{}-gnu, compiled by rustc, 64-bit",
                env!("CARGO_PKG_VERSION"),
                std::env::consts::ARCH,
                std::env::consts::OS
            );
            Ok(vec![V::Text(text); rows])
        }),
        def(
            "current_setting",
            1..=2,
            DataType::Utf8,
            |ctx, args, rows| {
                let names = texts(&args[0])?;
                let missing_ok = if args.len() > 1 {
                    bools(&args[1])?
                } else {
                    vec![Some(false); rows]
                };
                let settings = ctx.settings.lock();
                per_row(rows, |i| {
                    let Some(name) = &names[i] else {
                        return Ok(V::Null);
                    };
                    if missing_ok[i] == Some(true) {
                        return settings
                            .get_if_exists(name)
                            .map(V::opt_text)
                            .map_err(setting_error);
                    }
                    settings.get(name).map(V::Text).map_err(setting_error)
                })
            },
        ),
        def("set_config", 3..=3, DataType::Utf8, |ctx, args, rows| {
            let names = texts(&args[0])?;
            let values = texts(&args[1])?;
            let local = bools(&args[2])?;
            per_row(rows, |i| {
                let Some(name) = &names[i] else {
                    return Err(pg(PgError::new(
                        sqlstate::NULL_VALUE_NOT_ALLOWED,
                        "SET requires parameter name",
                    )));
                };
                let is_local = local[i].unwrap_or(false);
                let mut settings = ctx.settings.lock();
                let shown = settings
                    .set_config(name, values[i].as_deref(), is_local)
                    .map_err(setting_error)?;
                let applied = values[i].clone().unwrap_or_else(|| shown.clone());
                ctx.setting_changes
                    .lock()
                    .push((name.clone(), applied, is_local));
                Ok(V::Text(shown))
            })
        })
        .volatile()
        .at_plan_time(),
        // Reads the configuration files again (`config_reload`); true once done, as
        // PostgreSQL's is once the signal is sent. Superusers only, as in PostgreSQL.
        def(
            "pg_reload_conf",
            0..=0,
            DataType::Boolean,
            |ctx, _, rows| {
                if !ctx.settings.lock().is_superuser() {
                    return Err(pg(PgError::new(
                        sqlstate::INSUFFICIENT_PRIVILEGE,
                        "permission denied for function pg_reload_conf",
                    )));
                }
                crate::config_reload::reload()
                    .map_err(|e| pg(PgError::new(sqlstate::FEATURE_NOT_SUPPORTED, e)))?;
                Ok(vec![V::Bool(true); rows])
            },
        )
        .volatile(),
        def("pg_backend_pid", 0..=0, DataType::Int32, |ctx, _, rows| {
            Ok(vec![V::Int(ctx.pid as i64); rows])
        }),
        constant("current_database", |_| V::text(oids::DATABASE_NAME))
            .aliases(&["current_catalog"]),
        constant("current_user", |ctx| V::text(&ctx.user)).aliases(&["user", "current_role"]),
        constant("session_user", |ctx| V::text(&ctx.user)),
        def("current_schema", 0..=0, DataType::Utf8, |ctx, _, rows| {
            Ok(vec![V::opt_text(ctx.snapshot().current_schema()); rows])
        }),
        def("width_bucket", 4..=4, DataType::Int32, |_, args, rows| {
            let [operand, low, high] = [0, 1, 2].map(|i| floats(&args[i]));
            let (operand, low, high) = (operand?, low?, high?);
            let count = ints(&args[3])?;
            per_row(rows, |i| match (operand[i], low[i], high[i], count[i]) {
                (Some(x), Some(lo), Some(hi), Some(n)) => width_bucket(x, lo, hi, n)
                    .map(|b| V::Int(b as i64))
                    .map_err(pg),
                _ => Ok(V::Null),
            })
        }),
        def("num_nulls", 1..=100, DataType::Int32, |_, args, rows| {
            let nulls = nulls_per_row(args, rows);
            Ok(nulls.into_iter().map(|n| V::Int(n as i64)).collect())
        }),
        def("num_nonnulls", 1..=100, DataType::Int32, |_, args, rows| {
            let nulls = nulls_per_row(args, rows);
            let values = nulls.into_iter().map(|n| V::Int((args.len() - n) as i64));
            Ok(values.collect())
        }),
        // The session's temporary schema, 0 until it has one.
        def(
            "pg_my_temp_schema",
            0..=0,
            DataType::Int64,
            |ctx, _, rows| {
                let own = ctx.snapshot().temp_schema;
                let oid = own.as_deref().and_then(oids::namespace_oid).unwrap_or(0);
                Ok(vec![V::oid(oid); rows])
            },
        ),
        def(
            "pg_is_other_temp_schema",
            1..=1,
            DataType::Boolean,
            |ctx, args, rows| {
                let own = ctx.snapshot().temp_schema;
                let own = own.as_deref().and_then(oids::namespace_oid);
                let oids = ints(&args[0])?;
                per_row(rows, |i| {
                    Ok(match oids[i] {
                        Some(oid) => {
                            let temp = oids::namespace_name(oid as u32)
                                .is_some_and(|n| iolab_catalog::store::is_temp_schema(&n));
                            V::Bool(temp && own != Some(oid as u32))
                        }
                        None => V::Null,
                    })
                })
            },
        ),
        def("current_schemas", 1..=1, text_list(), |ctx, args, rows| {
            let s = ctx.snapshot();
            let implicit = bools(&args[0])?;
            per_row(rows, |i| {
                Ok(match implicit[i] {
                    Some(b) => V::TextArray(s.current_schemas(b)),
                    None => V::Null,
                })
            })
        }),
        relation_size("pg_relation_size"),
        relation_size("pg_table_size"),
        relation_size("pg_total_relation_size"),
        // NULL for relations without storage (views).
        of_relation("pg_relation_filenode", DataType::Int64, |r| {
            (r.relfilenode != 0).then(|| V::oid(r.relfilenode))
        }),
        // The relation's first file, relative to the data directory, as iolab lays files
        // out (`base/<relfilenode>`; PostgreSQL puts them in a directory per database).
        // NULL for views and for iolab's catalogs, which are computed, not stored.
        of_relation("pg_relation_filepath", DataType::Utf8, |r| {
            let stored = r.relfilenode != 0 && r.oid >= iolab_catalog::store::FIRST_NORMAL_OID;
            stored.then(|| V::Text(format!("base/{}", r.relfilenode)))
        }),
        // When the server started, and read its configuration (once, at start).
        def(
            "pg_postmaster_start_time",
            0..=0,
            DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
            |ctx, _, rows| {
                let started = ctx.shared.db.io_stats.started.timestamp_micros();
                Ok(vec![V::Int(started); rows])
            },
        )
        .aliases(&["pg_conf_load_time"]),
        // When the statement started (now() is when its transaction did): the clock when
        // the statement is planned.
        def(
            "statement_timestamp",
            0..=0,
            DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
            |_, _, rows| Ok(vec![V::Int(chrono::Utc::now().timestamp_micros()); rows]),
        )
        .volatile()
        .at_plan_time(),
        // The time now, changing within a statement (unlike now()).
        def(
            "clock_timestamp",
            0..=0,
            DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
            |_, _, rows| per_row(rows, |_| Ok(V::Int(chrono::Utc::now().timestamp_micros()))),
        )
        .volatile()
        .each_row(),
        // The same clock as text in the session's zone, as `timeofday()` writes it:
        // `Sun Dec 06 08:47:15.123456 2026 UTC`.
        def("timeofday", 0..=0, DataType::Utf8, |ctx, _, rows| {
            let zone = crate::session::text_format_for(&ctx.settings.lock()).time_zone;
            per_row(rows, |_| {
                let utc = chrono::Utc::now().timestamp_micros();
                let (local, _) = zone.utc_to_local(utc);
                let local = chrono::DateTime::from_timestamp_micros(local)
                    .expect("the clock is within chrono's range")
                    .naive_utc();
                let text = local.format("%a %b %d %H:%M:%S%.6f %Y");
                Ok(V::Text(format!("{text} {}", zone.abbreviation_at_utc(utc))))
            })
        })
        .volatile()
        .each_row(),
        def(
            "pg_indexes_size",
            1..=1,
            DataType::Int64,
            |ctx, args, rows| {
                let s = ctx.snapshot();
                let all = s.relations();
                let oids = relation_oids(&s, &all, &args[0])?;
                per_row(rows, |i| {
                    Ok(oids[i]
                        .and_then(|o| s.relation(o))
                        .map(|r| V::Int(s.indexes_size(r.oid)))
                        .unwrap_or(V::Null))
                })
            },
        ),
        def(
            "pg_database_size",
            1..=1,
            DataType::Int64,
            |ctx, args, rows| {
                let s = ctx.snapshot();
                let total: i64 = s
                    .tables
                    .iter()
                    .map(|t| s.relation_size(t.oid).unwrap_or(0) + s.indexes_size(t.oid))
                    .sum();
                let keys = texts(&args[0])?;
                per_row(rows, |i| match keys[i].as_deref() {
                    None => Ok(V::Null),
                    Some(k) if k == oids::DATABASE_NAME || k == oids::DATABASE_OID.to_string() => {
                        Ok(V::Int(total))
                    }
                    Some(k) => Err(pg(PgError::new(
                        sqlstate::INVALID_CATALOG_NAME,
                        format!("database \"{k}\" does not exist"),
                    ))),
                })
            },
        ),
        def("pg_size_pretty", 1..=1, DataType::Utf8, |_, args, rows| {
            per_row(rows, |i| size_pretty_value(&args[0], i))
        }),
        def(
            "pg_table_is_visible",
            1..=1,
            DataType::Boolean,
            |ctx, args, rows| {
                let s = ctx.snapshot();
                let all = s.relations();
                let oids = ints(&args[0])?;
                per_row(rows, |i| {
                    let Some(oid) = oids[i] else {
                        return Ok(V::Null);
                    };
                    Ok(match all.iter().find(|r| r.oid as i64 == oid) {
                        Some(r) => V::Bool(s.is_visible(r, &all)),
                        None => V::Null,
                    })
                })
            },
        ),
        def("pg_get_userbyid", 1..=1, DataType::Utf8, |_, args, rows| {
            let oids = ints(&args[0])?;
            per_row(rows, |i| {
                Ok(match oids[i] {
                    None => V::Null,
                    Some(o) => V::text(
                        oids::role_name(o as u32)
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("unknown (OID={o})")),
                    ),
                })
            })
        }),
        def("format_type", 2..=2, DataType::Utf8, |_, args, rows| {
            let oids = ints(&args[0])?;
            let mods = ints(&args[1])?;
            per_row(rows, |i| {
                Ok(match oids[i] {
                    None => V::Null,
                    Some(o) => V::Text(types::format_type(o as u32, mods[i].map(|m| m as i32))),
                })
            })
        }),
        def("obj_description", 1..=2, DataType::Utf8, |_, args, rows| {
            let objs = ints(&args[0])?;
            let classes = if args.len() > 1 {
                texts(&args[1])?
            } else {
                vec![None; rows]
            };
            per_row(rows, |i| {
                let Some(obj) = objs[i] else {
                    return Ok(V::Null);
                };
                let class = match classes[i].as_deref() {
                    Some("pg_class") => Some(oids::PG_CLASS),
                    Some("pg_namespace") => Some(oids::PG_NAMESPACE),
                    Some("pg_am") => Some(oids::PG_AM),
                    Some(_) => Some(0),
                    None => None,
                };
                Ok(V::opt_text(
                    oids::DESCRIPTIONS
                        .iter()
                        .find(|d| d.0 as i64 == obj && class.is_none_or(|c| c == d.1))
                        .map(|d| d.2),
                ))
            })
        }),
        def(
            "shobj_description",
            2..=2,
            DataType::Utf8,
            |_, args, rows| {
                let objs = ints(&args[0])?;
                let classes = texts(&args[1])?;
                per_row(rows, |i| {
                    let class = match classes[i].as_deref() {
                        Some("pg_database") => oids::PG_DATABASE,
                        Some("pg_tablespace") => oids::PG_TABLESPACE,
                        _ => 0,
                    };
                    Ok(V::opt_text(
                        oids::SHARED_DESCRIPTIONS
                            .iter()
                            .find(|d| Some(d.0 as i64) == objs[i] && d.1 == class)
                            .map(|d| d.2),
                    ))
                })
            },
        ),
        null_text("col_description", 2..=2),
        def(
            "pg_encoding_to_char",
            1..=1,
            DataType::Utf8,
            |_, args, rows| {
                let ids = ints(&args[0])?;
                per_row(rows, |i| {
                    Ok(ids[i]
                        .map(|id| V::text(oids::encoding_name(id)))
                        .unwrap_or(V::Null))
                })
            },
        ),
        def(
            "pg_char_to_encoding",
            1..=1,
            DataType::Int32,
            |_, args, rows| {
                let names = texts(&args[0])?;
                per_row(rows, |i| {
                    Ok(match names[i].as_deref() {
                        None => V::Null,
                        Some(n) => V::Int(
                            (0..42)
                                .find(|id| oids::encoding_name(*id).eq_ignore_ascii_case(n))
                                .unwrap_or(-1),
                        ),
                    })
                })
            },
        ),
        def("parse_ident", 1..=2, text_list(), |_, args, rows| {
            let t = texts(&args[0])?;
            per_row(rows, |i| match t[i].as_deref() {
                None => Ok(V::Null),
                Some(s) => parse_identifier(s)
                    .map(V::TextArray)
                    .map_err(|m| pg(PgError::new(sqlstate::INVALID_PARAMETER_VALUE, m))),
            })
        }),
        privilege("has_table_privilege"),
        privilege("has_schema_privilege"),
        privilege("has_database_privilege"),
        privilege("has_column_privilege"),
        privilege("has_any_column_privilege"),
        privilege("has_function_privilege"),
        privilege("has_sequence_privilege"),
        privilege("has_tablespace_privilege"),
        privilege("pg_has_role"),
        null_text("pg_get_ruledef", 1..=2),
        def(
            "pg_get_indexdef",
            1..=3,
            DataType::Utf8,
            |ctx, args, rows| {
                let s = ctx.snapshot();
                let all = s.relations();
                let oids = relation_oids(&s, &all, &args[0])?;
                let columns = match args.get(1) {
                    Some(a) => ints(a)?,
                    None => vec![Some(0); rows],
                };
                per_row(rows, |i| {
                    let Some(index) = oids[i].and_then(|o| s.index_def(o)) else {
                        return Ok(V::Null);
                    };
                    Ok(V::opt_text(match columns[i] {
                        None => None,
                        Some(0) => s.indexdef(index),
                        Some(c) => s.indexdef_column(index, c as usize),
                    }))
                })
            },
        ),
        // iolab's own: verifies a B-tree index against its table (structure, and every
        // live row's key and TID) and returns its number of entries for live rows.
        def(
            "iolab_btree_check",
            1..=1,
            DataType::Int64,
            |ctx, args, rows| {
                let s = ctx.snapshot();
                let all = s.relations();
                let oids = relation_oids(&s, &all, &args[0])?;
                let settings = ctx.settings.lock().clone();
                per_row(rows, |i| {
                    let Some(oid) = oids[i] else {
                        return Ok(V::Null);
                    };
                    let Some(index) = s.index_def(oid) else {
                        let name = all
                            .iter()
                            .find(|r| r.oid == oid)
                            .map(|r| r.name.clone())
                            .unwrap_or_else(|| oid.to_string());
                        return Err(pg(PgError::new(
                            sqlstate::WRONG_OBJECT_TYPE,
                            format!("\"{name}\" is not an index"),
                        )));
                    };
                    let config =
                        iolab_engine::exec::context::StreamSettings::from_settings(&settings)
                            .stream_config(false, true, s.db.pool.pin_limit(), ctx.pid);
                    let report = iolab_engine::btree::check_index(
                        &s.db,
                        index,
                        config,
                        ctx.pid,
                        settings.track_io_timing(),
                    )
                    .map_err(pg)?;
                    Ok(V::Int((report.entries - report.dead_entries) as i64))
                })
            },
        )
        .volatile(),
        def(
            "pg_get_constraintdef",
            1..=2,
            DataType::Utf8,
            |ctx, args, rows| {
                let s = ctx.snapshot();
                let oids = ints(&args[0])?;
                per_row(rows, |i| {
                    Ok(V::opt_text(oids[i].and_then(|o| {
                        super::constraint_rows::definition(&s, u32::try_from(o).ok()?)
                    })))
                })
            },
        ),
        // The expressions iolab keeps (column defaults in `pg_attrdef.adbin`) are SQL text
        // already; other node trees it does not have.
        def("pg_get_expr", 2..=3, DataType::Utf8, |_, args, rows| {
            if !is_text(args[0].data_type()) {
                return Ok(vec![V::Null; rows]);
            }
            Ok(texts(&args[0])?.into_iter().map(V::opt_text).collect())
        }),
        null_text("pg_get_statisticsobjdef_columns", 1..=1),
        null_text("pg_get_partkeydef", 1..=1),
        // A view's definition: iolab's layout of the query text it keeps.
        def(
            "pg_get_viewdef",
            1..=2,
            DataType::Utf8,
            |ctx, args, rows| {
                let s = ctx.snapshot();
                let all = s.relations();
                let oids = relation_oids(&s, &all, &args[0])?;
                per_row(rows, |i| {
                    Ok(V::opt_text(oids[i].and_then(|o| s.view_definition(o))))
                })
            },
        ),
        null_text("pg_get_triggerdef", 1..=2),
        null_text("pg_get_serial_sequence", 2..=2),
        null_text("pg_get_function_identity_arguments", 1..=1),
        null_text("pg_get_function_result", 1..=1),
        null_text("pg_get_function_arguments", 1..=1),
        def(
            "pg_tablespace_location",
            1..=1,
            DataType::Utf8,
            |_, _, rows| Ok(vec![V::text(""); rows]),
        ),
        def(
            "pg_relation_is_publishable",
            1..=1,
            DataType::Boolean,
            |ctx, args, rows| {
                let s = ctx.snapshot();
                let all = s.relations();
                let oids = relation_oids(&s, &all, &args[0])?;
                per_row(rows, |i| {
                    Ok(V::Bool(
                        oids[i].is_some_and(|o| s.tables.iter().any(|t| t.oid == o)),
                    ))
                })
            },
        ),
        def(
            "pg_is_in_recovery",
            0..=0,
            DataType::Boolean,
            |_, _, rows| Ok(vec![V::Bool(false); rows]),
        ),
        def("pg_typeof", 1..=1, DataType::Utf8, |_, args, rows| {
            let name = match args[0].data_type() {
                DataType::Null => "unknown".to_string(),
                DataType::List(f) => format!("{}[]", arg_type_name(f.data_type())),
                dt => PgType::for_arrow(dt)
                    .map(|t| types::format_type(t.oid(), Some(-1)))
                    .unwrap_or_else(|| "text".to_string()),
            };
            Ok(vec![V::Text(name); rows])
        }),
        // Also what casts of arrays to text become (`sql/array_text.rs`).
        def(
            crate::sql::array_text::ARRAY_OUT,
            1..=1,
            DataType::Utf8,
            |ctx, args, rows| {
                let fmt = crate::session::text_format_for(&ctx.settings.lock());
                per_row(rows, |row| {
                    Ok(
                        iolab_engine::values::text_value(args[0].as_ref(), row, &fmt)
                            .map_or(V::Null, V::Text),
                    )
                })
            },
        ),
        def("array_lower", 2..=2, DataType::Int64, |_, args, rows| {
            array_bound(&args[0], &args[1], rows, false)
        }),
        def("array_upper", 2..=2, DataType::Int64, |_, args, rows| {
            array_bound(&args[0], &args[1], rows, true)
        }),
        def("to_regclass", 1..=1, DataType::Int64, |ctx, args, rows| {
            let s = ctx.snapshot();
            let all = s.relations();
            let names = texts(&args[0])?;
            per_row(rows, |i| {
                Ok(names[i]
                    .as_deref()
                    .and_then(|n| s.resolve_relation(n, &all))
                    .map(V::oid)
                    .unwrap_or(V::Null))
            })
        }),
        def("to_regtype", 1..=1, DataType::Int64, |_, args, rows| {
            let names = texts(&args[0])?;
            per_row(rows, |i| {
                Ok(names[i]
                    .as_deref()
                    .and_then(types::type_oid_by_name)
                    .map(V::oid)
                    .unwrap_or(V::Null))
            })
        }),
        // The ::regclass / ::regtype / ::regnamespace / ::regrole casts (see `rewrite`).
        def("regclassin", 1..=1, DataType::Int64, |ctx, args, rows| {
            let s = ctx.snapshot();
            let all = s.relations();
            let oids = relation_oids(&s, &all, &args[0])?;
            per_row(rows, |i| Ok(oids[i].map(V::oid).unwrap_or(V::Null)))
        }),
        def("regclassout", 1..=1, DataType::Utf8, |ctx, args, rows| {
            let s = ctx.snapshot();
            let all = s.relations();
            let oids = relation_oids(&s, &all, &args[0])?;
            per_row(rows, |i| {
                Ok(oids[i]
                    .map(|o| V::Text(s.regclass_text(o, &all)))
                    .unwrap_or(V::Null))
            })
        }),
        reg_in("regtypein", types::type_oid_by_name, |n| {
            PgError::new(
                sqlstate::UNDEFINED_OBJECT,
                format!("type \"{n}\" does not exist"),
            )
        }),
        reg_out("regtypeout", |o| match o {
            0 => "-".to_string(),
            o if types::type_row(o as u32).is_none() => o.to_string(),
            o => types::format_type(o as u32, None),
        }),
        reg_in(
            "regnamespacein",
            |n| {
                let unquoted = parse_identifier(n)
                    .ok()
                    .and_then(|p| p.into_iter().next())
                    .unwrap_or_default();
                oids::namespace_oid(&unquoted)
            },
            |n| {
                PgError::new(
                    sqlstate::INVALID_SCHEMA_NAME,
                    format!("schema \"{n}\" does not exist"),
                )
            },
        ),
        reg_out("regnamespaceout", |o| {
            oids::namespace_name(o as u32)
                .map(|n| quote_ident(&n))
                .unwrap_or_else(|| o.to_string())
        }),
        reg_in(
            "regrolein",
            |n| oids::role_oid(n.trim().trim_matches('"')),
            |n| {
                PgError::new(
                    sqlstate::UNDEFINED_OBJECT,
                    format!("role \"{n}\" does not exist"),
                )
            },
        ),
        reg_out("regroleout", |o| match o {
            0 => "-".to_string(),
            o => oids::role_name(o as u32)
                .map(quote_ident)
                .unwrap_or_else(|| o.to_string()),
        }),
    ]);
    d.extend(super::stat_views::reset_functions());
    d.extend(super::wal::functions());
    d.extend(super::relation_stats::functions());
    d.extend(super::sleep::functions());
    d.extend(super::prewarm::functions());
    d.extend(super::activity::signal_functions());
    d.extend(super::locks::functions());
    d.extend(super::stat_statements::functions());
    d.extend(super::buffercache::scalar_functions());
    d.extend(super::format::functions());
    d.extend(super::to_char::functions());
    d.extend(super::xact_functions::functions());
    d.extend(super::sequence_functions::definitions());
    d
}

/// `array_lower(a, dim)` / `array_upper(a, dim)`: 1 / the length for dimension 1 of a
/// non-empty array, NULL otherwise (iolab's arrays are one-dimensional).
fn array_bound(a: &ArrayRef, dims: &ArrayRef, rows: usize, upper: bool) -> Result<Vec<V>> {
    let dims = ints(dims)?;
    let lengths: Vec<Option<i64>> = match a.data_type() {
        DataType::List(_) => {
            let l = a.as_list::<i32>();
            (0..rows)
                .map(|i| (!l.is_null(i)).then(|| l.value_length(i) as i64))
                .collect()
        }
        DataType::LargeList(_) => {
            let l = a.as_list::<i64>();
            (0..rows)
                .map(|i| (!l.is_null(i)).then(|| l.value_length(i)))
                .collect()
        }
        _ => vec![None; rows],
    };
    per_row(rows, |i| {
        Ok(match (lengths[i], dims[i]) {
            (Some(n), Some(1)) if n > 0 => V::Int(if upper { n } else { 1 }),
            _ => V::Null,
        })
    })
}

/// Registers every function into `state` for the session described by `info`.
pub fn register(
    state: &mut SessionState,
    info: &SessionInfo,
    shared: Arc<SharedCatalogState>,
) -> Result<()> {
    let ctx = Arc::new(Ctx {
        shared,
        pid: info.pid,
        user: info.user.clone(),
        settings: Mutex::new(info.settings.clone()),
        setting_changes: info.setting_changes.clone(),
        sequences: info.sequences.clone(),
        cancel: info.cancel.clone(),
    });
    for d in definitions() {
        let signature = if *d.arity.start() == 0 && *d.arity.end() == 0 {
            Signature::nullary(d.volatility)
        } else if *d.arity.start() == 0 {
            Signature::one_of(
                vec![TypeSignature::Nullary, TypeSignature::VariadicAny],
                d.volatility,
            )
        } else {
            Signature::variadic_any(d.volatility)
        };
        let f = PgFunction {
            name: d.name,
            aliases: d.aliases.iter().map(|a| a.to_string()).collect(),
            arity: d.arity,
            signature,
            returns: d.returns,
            at_plan_time: d.at_plan_time,
            each_row: d.each_row,
            ctx: ctx.clone(),
            body: d.body,
        };
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(f)))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_like_postgres() {
        // Values checked with pg_size_pretty() on PostgreSQL 18.
        for (bytes, text) in [
            (0, "0 bytes"),
            (-1, "-1 bytes"),
            (8192, "8192 bytes"),
            (10239, "10239 bytes"),
            (10240, "10 kB"),
            (16384, "16 kB"),
            (-10240, "-10 kB"),
            (-10241, "-10 kB"),
            (10485248, "10 MB"),
            (10485249, "10 MB"),
            (-10485759, "-10 MB"),
            (1431306240, "1365 MB"),
            (1536 * 1024 * 1024, "1536 MB"),
            (10240_i64 * 1024 * 1024 * 1024 * 1024, "10 PB"),
            (i64::MAX, "8192 PB"),
            (-i64::MAX, "-8192 PB"),
        ] {
            assert_eq!(size_pretty(bytes), text, "{bytes}");
        }
    }
}
