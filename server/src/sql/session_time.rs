//! Date/time expressions in the session's `TimeZone` and `DateStyle`, as PostgreSQL
//! evaluates them.
//!
//! iolab stores a `timestamptz` as an instant in UTC, and DataFusion computes on it in UTC:
//! left alone, `now()::date`, `extract(hour from t)` and `date_trunc('day', t)` would give
//! UTC's date, hour and midnight whatever the session's zone, and `'2024-07-01
//! 12:00'::timestamptz` would be read as noon UTC. [`SessionTimeRule`], the last of
//! DataFusion's analyzer rules (after type coercion has made every implicit cast
//! explicit), rewrites what depends on the zone into functions of the zone, which it
//! writes in:
//!
//! | planned | becomes (Z: the session's zone) |
//! |---|---|
//! | `tstz::timestamp`, `tstz::date`, `tstz::time` | `timezone(Z, tstz)` (then `::date`, `::time`) |
//! | `timestamp::timestamptz`, `date::timestamptz` | `timezone(Z, timestamp)` |
//! | `date_part(f, tstz)`, `extract` | `date_part(f, timezone(Z, tstz))`; `epoch` as is |
//! | `date_part('timezone', tstz)`, `…_hour`, `…_minute` | the offset: `epoch(timezone(Z, t)) - epoch(t)` |
//! | `date_trunc(f, tstz)` | `timezone(Z, date_trunc(f, timezone(Z, tstz)))` |
//! | `tstz + interval`, `tstz - interval` | `date_add(tstz, interval, Z)`, `date_subtract(…)` |
//! | `generate_series(tstz, tstz, step)` (a select list's) | its timestamps typed as in Z |
//! | `current_date`, `current_time` | `timezone(Z, now())::date`, `::time` |
//! | `age(a, b)` of `timestamptz` values | `age(timezone(Z, a), timezone(Z, b))` |
//! | `age(t)` | `age(date_trunc('day', timezone(Z, now())), t on the wall clock)` |
//! | `timezone(x)` (`AT LOCAL`), `date_add(t, i)` | `timezone(Z, x)`, `date_add(t, i, Z)` |
//! | `to_timestamp(text, template)` | `to_timestamp(text, template, Z)` |
//! | `localtimestamp`, `localtime` | `timezone(Z, now())`, `::time` |
//! | text `::date`, `::timestamp[tz]`, `::interval` | iolab's input function (`datetime_text`) |
//! | date/time `::text` | iolab's output function |
//!
//! In a UTC session the zone changes nothing, and only the rows from `age(t)` down (and
//! the offset fields of `date_part`) are rewritten. A cast of a constant is computed at
//! once, so `t > '2024-07-01'` compares with a constant the scan can use. The zone and
//! `DateStyle` come from [`SessionTimeOptions`], which the server sets on the state that
//! plans each statement; a plan is reused only under the same `TimeZone` and `DateStyle`
//! (`sql::plan_cache`), as PostgreSQL reads a literal once, when it parses the statement.
//!
//! [`DateTimeTypesRule`], placed before type coercion, gives two expressions PostgreSQL's
//! result types: `date ± interval` is a timestamp, `date_part` a double precision.
//!
//! Before planning, [`rewrite_syntax`] turns what DataFusion's SQL planner does not know
//! into functions: `x AT TIME ZONE z` into `timezone(z, x)`, the three-argument
//! `date_trunc(f, t, z)` into `timezone(z, date_trunc(f, timezone(z, t)))`,
//! `EXTRACT(f FROM x)` into `extract('f', x)` (a numeric), `make_timestamptz` into `make_timestamp`, and
//! `make_interval`'s named arguments into positions; and it makes `::timestamp` count
//! microseconds, as iolab's columns do.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, IntervalUnit, TimeUnit};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{extensions_options, DFSchema, DFSchemaRef, Result};
use datafusion::config::ConfigExtension;
use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::expr::{Cast, ScalarFunction, TryCast};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    lit, BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator, ScalarUDF, Union,
};
use datafusion::optimizer::analyzer::type_coercion::coerce_union_schema;
use datafusion::optimizer::AnalyzerRule;
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast::{
    self, Function, FunctionArg, FunctionArgExpr, FunctionArguments, VisitMut, VisitorMut,
};
use iolab_engine::values::SessionZone;
use iolab_settings::SessionSettings;

use super::calls::call;
use super::datetime_text::{reads_into, writes_from, Direction, TextCast, TextSettings};
use crate::pgcatalog::functions::is_text;
use crate::pgcatalog::zoned_time::{timestamp, DateAdd, Timezone};

extensions_options! {
    /// The session's settings date/time expressions depend on, for [`SessionTimeRule`].
    pub struct SessionTimeOptions {
        /// `TimeZone` as stored.
        pub time_zone: String, default = "UTC".to_string()
        /// `DateStyle` as stored.
        pub date_style: String, default = "ISO, MDY".to_string()
    }
}

impl ConfigExtension for SessionTimeOptions {
    const PREFIX: &'static str = "iolab_session_time";
}

impl SessionTimeOptions {
    /// The options a state was given (the defaults when it was given none).
    pub fn of(config: &ConfigOptions) -> SessionTimeOptions {
        config
            .extensions
            .get::<SessionTimeOptions>()
            .cloned()
            .unwrap_or_default()
    }

    /// The session's zone (UTC for a setting it cannot read, which SET never stores).
    pub fn zone(&self) -> SessionZone {
        SessionZone::parse(&self.time_zone).unwrap_or_else(SessionZone::utc)
    }
}

/// Gives `state` the session's `TimeZone` and `DateStyle` for [`SessionTimeRule`].
pub fn set_options(state: &mut SessionState, settings: &SessionSettings) {
    let text = TextSettings::of(settings);
    let mut options = SessionTimeOptions::default();
    options.time_zone = text.time_zone;
    options.date_style = text.date_style;
    state.config_mut().options_mut().extensions.insert(options);
}

/// See the module comment.
#[derive(Debug, Default)]
pub struct SessionTimeRule;

impl AnalyzerRule for SessionTimeRule {
    fn name(&self) -> &str {
        "iolab_session_time"
    }

    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let options = SessionTimeOptions::of(config);
        let zone = options.zone();
        let rewriter = Rewriter {
            zoned: !zone.is_utc(),
            arrow_zone: zone.arrow_name(),
            settings: TextSettings {
                time_zone: options.time_zone,
                date_style: options.date_style,
            },
            timezone: Arc::new(ScalarUDF::new_from_impl(Timezone::new())),
            date_add: Arc::new(ScalarUDF::new_from_impl(DateAdd::new(false))),
            date_subtract: Arc::new(ScalarUDF::new_from_impl(DateAdd::new(true))),
            now: datafusion::functions::datetime::now(config),
        };
        rewrite_expressions(plan, |e, schemas| rewriter.rewrite(e, schemas))
    }
}

/// `plan` with `rewrite` applied to every expression of every node (subqueries too),
/// bottom up, each node's output names kept. `rewrite` is given the schemas that type the
/// node's expressions: its inputs' (a join's condition: the node's own, which has both
/// sides), or none at all (VALUES, constants).
pub fn rewrite_expressions(
    plan: LogicalPlan,
    rewrite: impl Fn(Expr, &[DFSchemaRef]) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    rewrite_expressions_of(plan, |_| true, rewrite)
}

/// `plan` with every node's output types derived again, bottom up, after a rewrite changed
/// the types of some expressions: a UNION takes the common type of its inputs' columns, as
/// the analyzer will make it (DataFusion's own derivation keeps a UNION's old types).
pub fn recompute_schemas(plan: LogicalPlan) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| match node {
        LogicalPlan::Union(Union { inputs, .. }) => {
            let schema = Arc::new(coerce_union_schema(&inputs)?);
            Ok(Transformed::yes(LogicalPlan::Union(Union {
                inputs,
                schema,
            })))
        }
        other => other.recompute_schema().map(Transformed::yes),
    })
    .map(|t| t.data)
}

/// [`rewrite_expressions`] in the nodes `applies` accepts only.
pub fn rewrite_expressions_of(
    plan: LogicalPlan,
    applies: impl Fn(&LogicalPlan) -> bool,
    rewrite: impl Fn(Expr, &[DFSchemaRef]) -> Result<Transformed<Expr>>,
) -> Result<LogicalPlan> {
    let no_columns = Arc::new(DFSchema::empty());
    plan.transform_up_with_subqueries(|node| {
        if !applies(&node) {
            return Ok(Transformed::no(node));
        }
        let schemas: Vec<DFSchemaRef> = node
            .inputs()
            .iter()
            .map(|i| i.schema().clone())
            .chain([node.schema().clone(), no_columns.clone()])
            .collect();
        let names = NamePreserver::new(&node);
        node.map_expressions(|e| {
            let saved = names.save(&e);
            let rewritten = e.transform_up(|e| rewrite(e, &schemas))?;
            Ok(if rewritten.transformed {
                Transformed::yes(saved.restore(rewritten.data))
            } else {
                rewritten
            })
        })
    })
    .map(|t| t.data)
}

struct Rewriter {
    /// Is the session's zone other than UTC?
    zoned: bool,
    /// The session's zone as Arrow names it (`Europe/Berlin`, `-05:00`).
    arrow_zone: String,
    settings: TextSettings,
    timezone: Arc<ScalarUDF>,
    date_add: Arc<ScalarUDF>,
    date_subtract: Arc<ScalarUDF>,
    now: Arc<ScalarUDF>,
}

fn is_zoned(t: &DataType) -> bool {
    matches!(t, DataType::Timestamp(_, Some(_)))
}

fn type_of(e: &Expr, schemas: &[DFSchemaRef]) -> Option<DataType> {
    schemas.iter().find_map(|s| e.get_type(s).ok())
}

/// `e`, cast to `original` when its type is another (a unit, a zone annotation).
fn as_type(e: Expr, now: Option<DataType>, original: &DataType) -> Expr {
    if now.as_ref() == Some(original) {
        e
    } else {
        Expr::Cast(Cast::new(Box::new(e), original.clone()))
    }
}

impl Rewriter {
    fn zone(&self) -> Expr {
        lit(self.settings.time_zone.clone())
    }

    /// `timezone(Z, e)`: a `timestamptz` as the session's wall clock, or the reverse.
    fn in_zone(&self, e: Expr) -> Expr {
        self.timezone.call(vec![self.zone(), e])
    }

    /// A `timestamptz` as the session's wall clock; anything else as it is.
    fn on_wall_clock(&self, e: &Expr, schemas: &[DFSchemaRef]) -> Expr {
        if type_of(e, schemas).is_some_and(|t| is_zoned(&t)) {
            self.in_zone(e.clone())
        } else {
            e.clone()
        }
    }

    fn rewrite(&self, e: Expr, schemas: &[DFSchemaRef]) -> Result<Transformed<Expr>> {
        let rewritten = match &e {
            Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
                self.cast(expr, field.data_type(), schemas)?
            }
            Expr::ScalarFunction(f) => self.function(f, schemas),
            Expr::BinaryExpr(b) => self.interval_arithmetic(b, schemas),
            _ => None,
        };
        // The rewritten expression keeps the type the plan gave the original.
        let Some(new) = rewritten else {
            return Ok(Transformed::no(e));
        };
        let Some(original) = type_of(&e, schemas) else {
            return Ok(Transformed::no(e));
        };
        let now = type_of(&new, schemas);
        Ok(Transformed::yes(as_type(new, now, &original)))
    }

    fn cast(&self, expr: &Expr, to: &DataType, schemas: &[DFSchemaRef]) -> Result<Option<Expr>> {
        let Some(from) = type_of(expr, schemas) else {
            return Ok(None);
        };
        if is_text(&from) && reads_into(to) {
            return self.text_cast(Direction::Read(to.clone()), expr).map(Some);
        }
        if writes_from(&from) && is_text(to) {
            return self.text_cast(Direction::Write, expr).map(Some);
        }
        if !self.zoned {
            return Ok(None);
        }
        let expr = expr.clone();
        Ok(match (&from, to) {
            (DataType::Timestamp(_, Some(_)), DataType::Timestamp(_, None)) => {
                Some(self.in_zone(expr))
            }
            (
                DataType::Timestamp(_, Some(_)),
                DataType::Date32 | DataType::Date64 | DataType::Time32(_) | DataType::Time64(_),
            ) => Some(Expr::Cast(Cast::new(
                Box::new(self.in_zone(expr)),
                to.clone(),
            ))),
            (DataType::Timestamp(_, None), DataType::Timestamp(_, Some(_))) => {
                Some(self.in_zone(expr))
            }
            (DataType::Date32 | DataType::Date64, DataType::Timestamp(_, Some(_))) => {
                Some(self.in_zone(Expr::Cast(Cast::new(Box::new(expr), timestamp()))))
            }
            _ => None,
        })
    }

    /// `expr` through an input or output function; a constant converted now.
    fn text_cast(&self, direction: Direction, expr: &Expr) -> Result<Expr> {
        let cast = TextCast::new(direction, self.settings.clone());
        if let Expr::Literal(value, _) = expr {
            let converted = cast.convert(&value.to_array()?)?;
            return Ok(Expr::Literal(
                ScalarValue::try_from_array(&converted, 0)?,
                None,
            ));
        }
        Ok(ScalarUDF::new_from_impl(cast).call(vec![expr.clone()]))
    }

    fn function(&self, f: &ScalarFunction, schemas: &[DFSchemaRef]) -> Option<Expr> {
        let args = &f.args;
        match (f.func.name(), args.as_slice()) {
            ("timezone", [value]) => Some(self.in_zone(value.clone())),
            ("localtimestamp", []) => Some(self.in_zone(self.now.call(vec![]))),
            ("localtime", []) => Some(Expr::Cast(Cast::new(
                Box::new(self.in_zone(self.now.call(vec![]))),
                DataType::Time64(TimeUnit::Microsecond),
            ))),
            ("date_add" | "date_subtract", [value, by]) => {
                Some(f.func.call(vec![value.clone(), by.clone(), self.zone()]))
            }
            ("to_timestamp", [text, template]) => {
                Some(
                    f.func
                        .call(vec![text.clone(), template.clone(), self.zone()]),
                )
            }
            ("date_part" | "extract", [Expr::Literal(field, _), value])
                if type_of(value, schemas).is_some_and(|t| is_zoned(&t)) =>
            {
                let field = field.to_string().to_ascii_lowercase();
                let part = |name: &str, e: Expr| f.func.call(vec![lit(name), e]);
                // Seconds east of UTC at each instant.
                let offset = || {
                    let local_epoch = part("epoch", self.in_zone(value.clone()));
                    let utc_epoch = part("epoch", value.clone());
                    Expr::Cast(Cast::new(
                        Box::new(local_epoch - utc_epoch),
                        DataType::Float64,
                    ))
                };
                let trunc = |e: Expr| datafusion::functions::math::trunc().call(vec![e]);
                match field.as_str() {
                    "epoch" => None,
                    "timezone" => Some(offset()),
                    "timezone_hour" => Some(trunc(offset() / lit(3600.0))),
                    "timezone_minute" => Some(trunc(offset() / lit(60.0)) % lit(60.0)),
                    _ if self.zoned => Some(
                        f.func
                            .call(vec![args[0].clone(), self.in_zone(value.clone())]),
                    ),
                    _ => None,
                }
            }
            ("date_trunc", [field, value])
                if self.zoned && type_of(value, schemas).is_some_and(|t| is_zoned(&t)) =>
            {
                let truncated = f
                    .func
                    .call(vec![field.clone(), self.in_zone(value.clone())]);
                Some(self.in_zone(truncated))
            }
            ("age", [value]) => {
                let today = datafusion::functions::datetime::date_trunc()
                    .call(vec![lit("day"), self.in_zone(self.now.call(vec![]))]);
                Some(f.func.call(vec![today, self.on_wall_clock(value, schemas)]))
            }
            ("age", [a, b]) if self.zoned => Some(f.func.call(vec![
                self.on_wall_clock(a, schemas),
                self.on_wall_clock(b, schemas),
            ])),
            // The select list's `generate_series` (DataFusion's, making a list) steps in
            // the zone its timestamps' type names.
            ("generate_series", [start, stop, step])
                if self.zoned && type_of(start, schemas).is_some_and(|t| is_zoned(&t)) =>
            {
                let in_session_zone = |e: &Expr| {
                    let zoned = DataType::Timestamp(
                        TimeUnit::Nanosecond,
                        Some(self.arrow_zone.as_str().into()),
                    );
                    Expr::Cast(Cast::new(Box::new(e.clone()), zoned))
                };
                Some(f.func.call(vec![
                    in_session_zone(start),
                    in_session_zone(stop),
                    step.clone(),
                ]))
            }
            ("current_date" | "current_time", []) if self.zoned => {
                let to = if f.func.name() == "current_date" {
                    DataType::Date32
                } else {
                    DataType::Time64(TimeUnit::Nanosecond)
                };
                let now = self.now.call(vec![]);
                Some(Expr::Cast(Cast::new(Box::new(self.in_zone(now)), to)))
            }
            _ => None,
        }
    }

    /// `tstz ± interval` on the session's wall clock.
    fn interval_arithmetic(&self, b: &BinaryExpr, schemas: &[DFSchemaRef]) -> Option<Expr> {
        if !self.zoned {
            return None;
        }
        let left = type_of(&b.left, schemas)?;
        let right = type_of(&b.right, schemas)?;
        let interval = |e: &Expr, t: &DataType| match t {
            DataType::Interval(IntervalUnit::MonthDayNano) => Some(e.clone()),
            DataType::Interval(_) => Some(Expr::Cast(Cast::new(
                Box::new(e.clone()),
                DataType::Interval(IntervalUnit::MonthDayNano),
            ))),
            _ => None,
        };
        let (value, by) = match (b.op, is_zoned(&left), is_zoned(&right)) {
            (Operator::Plus | Operator::Minus, true, false) => {
                (b.left.as_ref().clone(), interval(&b.right, &right)?)
            }
            (Operator::Plus, false, true) => (b.right.as_ref().clone(), interval(&b.left, &left)?),
            _ => return None,
        };
        let func = if b.op == Operator::Minus {
            &self.date_subtract
        } else {
            &self.date_add
        };
        Some(func.call(vec![value, by, self.zone()]))
    }
}

// ---------------------------------------------------------------------------------------
// Result types, before type coercion
// ---------------------------------------------------------------------------------------

/// Gives two expressions PostgreSQL's result types, before type coercion (which then types
/// the plan around the change):
///
/// - `date ± interval` is a `timestamp` (`date '2024-07-01' + interval '1 hour'` is
///   `2024-07-01 01:00:00`); DataFusion keeps a date and drops the hour. The date is cast.
/// - `date_part(f, x)` is a `double precision`, seconds with their fraction (`5.25`);
///   DataFusion's is an integer for most fields, whole seconds and milliseconds. Seconds
///   and milliseconds become `date_part('microsecond', x)` divided.
#[derive(Debug, Default)]
pub struct DateTimeTypesRule;

impl AnalyzerRule for DateTimeTypesRule {
    fn name(&self) -> &str {
        "iolab_date_time_types"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_expressions(plan, |e, schemas| {
            Ok(match pg_result_type(&e, schemas) {
                Some(new) => Transformed::yes(new),
                None => Transformed::no(e),
            })
        })
    }
}

/// `e` rewritten to its PostgreSQL result type (see [`DateTimeTypesRule`]), or `None`.
fn pg_result_type(e: &Expr, schemas: &[DFSchemaRef]) -> Option<Expr> {
    let as_type = |e: Expr, t: DataType| Expr::Cast(Cast::new(Box::new(e), t));
    match e {
        Expr::BinaryExpr(b) => {
            let is_date = |e: &Expr| {
                matches!(
                    type_of(e, schemas),
                    Some(DataType::Date32 | DataType::Date64)
                )
            };
            let is_interval = |e: &Expr| matches!(type_of(e, schemas), Some(DataType::Interval(_)));
            let mut b = b.clone();
            match b.op {
                Operator::Plus | Operator::Minus if is_date(&b.left) && is_interval(&b.right) => {
                    b.left = Box::new(as_type(*b.left, timestamp()));
                }
                Operator::Plus if is_interval(&b.left) && is_date(&b.right) => {
                    b.right = Box::new(as_type(*b.right, timestamp()));
                }
                _ => return None,
            }
            Some(Expr::BinaryExpr(b))
        }
        Expr::ScalarFunction(f) if f.func.name() == "date_part" && f.args.len() == 2 => {
            let Expr::Literal(field, _) = &f.args[0] else {
                return None;
            };
            let field = field.to_string().to_ascii_lowercase();
            let divisor = match field.as_str() {
                "second" | "seconds" => 1e6,
                "millisecond" | "milliseconds" => 1e3,
                _ if type_of(e, schemas) == Some(DataType::Float64) => return None,
                _ => return Some(as_type(e.clone(), DataType::Float64)),
            };
            let micros = f.func.call(vec![lit("microsecond"), f.args[1].clone()]);
            Some(as_type(micros, DataType::Float64) / lit(divisor))
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// Syntax DataFusion's planner does not take
// ---------------------------------------------------------------------------------------

/// `x AT TIME ZONE z` → `timezone(z, x)`; `date_trunc(f, t, z)` →
/// `timezone(z, date_trunc(f, timezone(z, t)))`; `::timestamp[tz]` → `::timestamp[tz](6)`
/// (DataFusion's `timestamp` counts nanoseconds, which end in 2262; iolab's, like
/// PostgreSQL's, count microseconds); `transaction_timestamp()` → `now()`;
/// `make_timestamptz(…)` → `make_timestamp(…)::timestamptz` (or `timezone(zone, …)`);
/// `make_interval`'s named arguments → positions; `EXTRACT(f FROM x)` → `extract('f', x)`
/// (a `numeric`, where DataFusion's is `date_part`'s float).
pub fn rewrite_syntax(stmt: &mut ast::Statement) {
    struct Rewrite;
    impl VisitorMut for Rewrite {
        type Break = ();
        fn post_visit_expr(&mut self, e: &mut ast::Expr) -> ControlFlow<()> {
            match e {
                ast::Expr::Cast { data_type, .. }
                | ast::Expr::TypedString(ast::TypedString { data_type, .. }) => {
                    if let ast::DataType::Timestamp(precision @ None, _) = data_type {
                        *precision = Some(6);
                    }
                }
                ast::Expr::AtTimeZone {
                    timestamp,
                    time_zone,
                } => {
                    let value =
                        std::mem::replace(timestamp.as_mut(), ast::Expr::value(ast::Value::Null));
                    *e = call("timezone", vec![time_zone.as_ref().clone(), value]);
                }
                ast::Expr::Extract { field, expr, .. } => {
                    let field = field.to_string().to_ascii_lowercase();
                    let value =
                        std::mem::replace(expr.as_mut(), ast::Expr::value(ast::Value::Null));
                    *e = call(
                        "extract",
                        vec![
                            ast::Expr::value(ast::Value::SingleQuotedString(field)),
                            value,
                        ],
                    );
                }
                ast::Expr::Function(f) if function_named(f, "transaction_timestamp") => {
                    *e = call("now", Vec::new());
                }
                ast::Expr::Function(f) if function_named(f, "make_timestamptz") => {
                    let mut args = unnamed_args(f);
                    let zone = (args.len() == 7).then(|| args.pop()).flatten();
                    let local = call("make_timestamp", args);
                    *e = match zone {
                        Some(zone) => call("timezone", vec![zone, local]),
                        None => ast::Expr::Cast {
                            kind: ast::CastKind::DoubleColon,
                            expr: Box::new(local),
                            data_type: ast::DataType::Timestamp(Some(6), ast::TimezoneInfo::Tz),
                            array: false,
                            format: None,
                        },
                    };
                }
                ast::Expr::Function(f) if function_named(f, "make_interval") => {
                    if let Some(positional) = make_interval_positions(f) {
                        *e = call("make_interval", positional);
                    }
                }
                ast::Expr::Function(f) if is_zoned_date_trunc(f) => {
                    let Ok([field, value, zone]) = <[ast::Expr; 3]>::try_from(unnamed_args(f))
                    else {
                        return ControlFlow::Continue(());
                    };
                    let local = call("timezone", vec![zone.clone(), value]);
                    let truncated = call("date_trunc", vec![field, local]);
                    *e = call("timezone", vec![zone, truncated]);
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Rewrite);
}

fn function_named(f: &Function, name: &str) -> bool {
    matches!(
        f.name.0.last(),
        Some(ast::ObjectNamePart::Identifier(i)) if i.value.eq_ignore_ascii_case(name)
    )
}

/// A call's arguments, all unnamed (else none).
fn unnamed_args(f: &Function) -> Vec<ast::Expr> {
    let FunctionArguments::List(list) = &f.args else {
        return Vec::new();
    };
    list.args
        .iter()
        .filter_map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect()
}

/// `make_interval(days => 3)` as `make_interval(0, 0, 0, 3)`: named arguments in their
/// places, those left out 0 (DataFusion takes named arguments only without gaps). `None`
/// when no argument is named.
fn make_interval_positions(f: &Function) -> Option<Vec<ast::Expr>> {
    use crate::pgcatalog::datetime_functions::MAKE_INTERVAL_PARAMETERS;
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let mut slots: Vec<Option<ast::Expr>> = vec![None; MAKE_INTERVAL_PARAMETERS.len()];
    let mut named = false;
    for (position, arg) in list.args.iter().enumerate() {
        let (slot, value) = match arg {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => (position, e),
            FunctionArg::Named {
                name,
                arg: FunctionArgExpr::Expr(e),
                ..
            }
            | FunctionArg::ExprNamed {
                name: ast::Expr::Identifier(name),
                arg: FunctionArgExpr::Expr(e),
                ..
            } => {
                named = true;
                let slot = MAKE_INTERVAL_PARAMETERS
                    .iter()
                    .position(|p| p.eq_ignore_ascii_case(&name.value))?;
                (slot, e)
            }
            _ => return None,
        };
        *slots.get_mut(slot)? = Some(value.clone());
    }
    if !named {
        return None;
    }
    let last = slots.iter().rposition(Option::is_some)?;
    let zero = || ast::Expr::value(ast::Value::Number("0".into(), false));
    Some(
        slots
            .into_iter()
            .take(last + 1)
            .map(|s| s.unwrap_or_else(zero))
            .collect(),
    )
}

fn is_zoned_date_trunc(f: &Function) -> bool {
    function_named(f, "date_trunc")
        && matches!(&f.args, FunctionArguments::List(l) if l.args.len() == 3)
}
