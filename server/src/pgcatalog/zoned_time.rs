//! Functions of date/time values in a named time zone: `timezone(zone, value)` (what
//! `x AT TIME ZONE zone` is), `date_add`/`date_subtract(timestamptz, interval, zone)`,
//! `age`, which reads a `timestamptz` on the session's wall clock, and `generate_series`
//! of `timestamptz` values, which steps on it (a day across a daylight-saving change is
//! 23 or 25 hours).
//!
//! A `timestamptz` is an instant (µs since 1970 UTC); a `timestamp` a wall-clock reading.
//! `timezone(zone, timestamptz)` is the wall clock in `zone` at that instant;
//! `timezone(zone, timestamp)` the instant at which `zone`'s wall clock shows that time
//! (the later one where the clock repeats or skips, as in PostgreSQL). The zone is text —
//! an abbreviation, a tz database name, a POSIX offset (`SessionZone::named`) — or an
//! interval east of UTC. The one-argument forms (`AT LOCAL`, `date_add(t, i)`) mean the
//! session's zone: `sql::session_time` writes the zone in when a statement is planned, so
//! these functions depend on their arguments only (immutable: a plan made for one
//! `TimeZone` is only reused under it, see `sql::plan_cache`).

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, IntervalMonthDayNanoArray, PrimitiveArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, IntervalMonthDayNano, IntervalMonthDayNanoType, IntervalUnit, TimeUnit,
    TimestampMicrosecondType,
};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::error::Result;
use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::scalar::ScalarValue;
use iolab_catalog::types::TIMESTAMPTZ_ZONE;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::values::{calendar_difference, SessionZone};

use super::functions::{arg_type_name, is_text, pg};
use super::int4_series::Int4Series;
use crate::sql::session_time::SessionTimeOptions;

/// Registers the functions of this module into a session's state.
pub fn register(state: &mut SessionState) -> Result<()> {
    state.register_udf(Arc::new(ScalarUDF::new_from_impl(Timezone::new())))?;
    state.register_udf(Arc::new(ScalarUDF::new_from_impl(Age::new())))?;
    state.register_udtf("generate_series", Arc::new(GenerateSeries));
    for subtract in [false, true] {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(DateAdd::new(subtract))))?;
    }
    Ok(())
}

/// `timestamptz`'s Arrow type, as the catalog stores it.
pub fn timestamptz() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some(TIMESTAMPTZ_ZONE.into()))
}

/// `timestamp`'s Arrow type.
pub fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, None)
}

fn undefined_function(name: &str, args: &[DataType]) -> datafusion::error::DataFusionError {
    let args: Vec<String> = args.iter().map(arg_type_name).collect();
    pg(PgError::new(
        sqlstate::UNDEFINED_FUNCTION,
        format!("function {name}({}) does not exist", args.join(", ")),
    )
    .with_hint(
        "No function matches the given name and argument types. You might need to add explicit type casts.",
    ))
}

/// The type a date/time argument is taken as: a zoned timestamp stays one (in µs), any
/// other timestamp, a date, or text becomes `timestamptz` when `prefer_zoned`, else a
/// `timestamp` stays unzoned.
fn date_time_argument(t: &DataType, prefer_zoned: bool) -> Option<DataType> {
    match t {
        DataType::Timestamp(_, Some(_)) => Some(timestamptz()),
        DataType::Timestamp(_, None) if !prefer_zoned => Some(timestamp()),
        DataType::Timestamp(_, None) | DataType::Date32 | DataType::Null => Some(timestamptz()),
        t if is_text(t) => Some(timestamptz()),
        _ => None,
    }
}

/// The zone a `timezone` or `date_add` argument names, per row: text or an interval.
enum ZoneArgument {
    Same(Option<SessionZone>),
    PerRow(Vec<Option<SessionZone>>),
}

impl ZoneArgument {
    fn read(value: &ColumnarValue, rows: usize) -> Result<ZoneArgument> {
        let one_row = matches!(value, ColumnarValue::Scalar(_));
        let array = value.to_array(if one_row { 1 } else { rows })?;
        let zones = (0..array.len())
            .map(|row| zone_at(&array, row))
            .collect::<Result<Vec<_>>>()?;
        Ok(if one_row {
            ZoneArgument::Same(zones.into_iter().next().flatten())
        } else {
            ZoneArgument::PerRow(zones)
        })
    }

    fn at(&self, row: usize) -> Option<&SessionZone> {
        match self {
            ZoneArgument::Same(zone) => zone.as_ref(),
            ZoneArgument::PerRow(zones) => zones[row].as_ref(),
        }
    }
}

/// The zone in row `row` of a text or interval column (`None` for NULL).
fn zone_at(array: &ArrayRef, row: usize) -> Result<Option<SessionZone>> {
    if array.is_null(row) {
        return Ok(None);
    }
    if let DataType::Interval(IntervalUnit::MonthDayNano) = array.data_type() {
        let v = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
        if v.months != 0 || v.days != 0 {
            let text = iolab_engine::values::text_value(array.as_ref(), row, &Default::default())
                .unwrap_or_default();
            return Err(pg(PgError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("interval time zone \"{text}\" must not include months or days"),
            )));
        }
        let east = v.nanoseconds.div_euclid(1_000_000_000);
        return i32::try_from(east)
            .ok()
            .filter(|e| e.abs() <= 15 * 3600 + 59 * 60 + 59)
            .map(|e| Some(SessionZone::fixed(e)))
            .ok_or_else(|| {
                pg(PgError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    "interval time zone is out of range",
                ))
            });
    }
    let text = cast(array, &DataType::Utf8)?;
    let name = text.as_string::<i32>().value(row);
    SessionZone::named(name).map(Some).ok_or_else(|| {
        pg(PgError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("time zone \"{name}\" not recognized"),
        ))
    })
}

/// A timestamp column's values in µs (its zone annotation kept).
fn micros(value: &ColumnarValue, rows: usize) -> Result<TimestampMicrosecondArray> {
    let array = value.to_array(rows)?;
    let zone = match array.data_type() {
        DataType::Timestamp(_, zone) => zone.clone(),
        _ => None,
    };
    let array = cast(&array, &DataType::Timestamp(TimeUnit::Microsecond, zone))?;
    Ok(array.as_primitive::<TimestampMicrosecondType>().clone())
}

fn out_of_range() -> datafusion::error::DataFusionError {
    pg(PgError::new(
        sqlstate::DATETIME_FIELD_OVERFLOW,
        "timestamp out of range",
    ))
}

/// One value when every argument was one, else a column.
pub(crate) fn result(array: ArrayRef, args: &[ColumnarValue]) -> Result<ColumnarValue> {
    if args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_))) {
        return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(
            &array, 0,
        )?));
    }
    Ok(ColumnarValue::Array(array))
}

/// A function's arguments as columns, and their length (1 when every argument is one
/// value).
pub(crate) fn argument_arrays(args: &ScalarFunctionArgs) -> Result<(usize, Vec<ArrayRef>)> {
    let rows = rows_of(args);
    let arrays = args
        .args
        .iter()
        .map(|a| a.to_array(rows))
        .collect::<Result<Vec<_>>>()?;
    Ok((rows, arrays))
}

/// The rows a function computes: one when every argument is one value.
pub(crate) fn rows_of(args: &ScalarFunctionArgs) -> usize {
    if args
        .args
        .iter()
        .all(|a| matches!(a, ColumnarValue::Scalar(_)))
    {
        1
    } else {
        args.number_rows
    }
}

// ---------------------------------------------------------------------------------------
// timezone(zone, value)
// ---------------------------------------------------------------------------------------

/// `timezone([zone,] timestamptz) → timestamp` and `timezone([zone,] timestamp) →
/// timestamptz`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Timezone {
    signature: Signature,
}

impl Timezone {
    pub fn new() -> Timezone {
        Timezone {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Timezone {
    fn name(&self) -> &str {
        "timezone"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let coerced = match args {
            [value] => date_time_argument(value, false).map(|v| vec![v]),
            [zone, value] => {
                let zone = match zone {
                    DataType::Interval(_) => Some(DataType::Interval(IntervalUnit::MonthDayNano)),
                    t if is_text(t) || t == &DataType::Null => Some(DataType::Utf8),
                    _ => None,
                };
                zone.zip(date_time_argument(value, false))
                    .map(|(z, v)| vec![z, v])
            }
            _ => None,
        };
        coerced.ok_or_else(|| undefined_function("timezone", args))
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args.last() {
            Some(DataType::Timestamp(_, Some(_))) => Ok(timestamp()),
            Some(_) => Ok(timestamptz()),
            None => Err(undefined_function("timezone", args)),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [zone, value] = args.args.as_slice() else {
            // `AT LOCAL`'s one-argument form gets the session's zone when planned.
            return Err(pg(PgError::internal(
                "timezone(value) was not given the session's time zone",
            )));
        };
        let rows = rows_of(&args);
        let zones = ZoneArgument::read(zone, rows)?;
        let values = micros(value, rows)?;
        let to_local = values.timezone().is_some();
        let converted: PrimitiveArray<TimestampMicrosecondType> = (0..values.len())
            .map(|row| {
                let zone = zones.at(row)?;
                if values.is_null(row) {
                    return None;
                }
                let v = values.value(row);
                if v == i64::MAX || v == i64::MIN {
                    return Some(v); // ±infinity
                }
                Some(if to_local {
                    zone.utc_to_local(v).0
                } else {
                    zone.local_to_utc(v)
                })
            })
            .collect();
        let converted = if to_local {
            converted
        } else {
            converted.with_timezone(TIMESTAMPTZ_ZONE)
        };
        result(Arc::new(converted), &args.args)
    }
}

// ---------------------------------------------------------------------------------------
// date_add / date_subtract
// ---------------------------------------------------------------------------------------

/// `date_add(timestamptz, interval [, zone])` and `date_subtract(…)`: the interval added
/// (or subtracted) on the zone's wall clock, as `SessionZone::add_interval` describes.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DateAdd {
    subtract: bool,
    signature: Signature,
}

impl DateAdd {
    pub fn new(subtract: bool) -> DateAdd {
        DateAdd {
            subtract,
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for DateAdd {
    fn name(&self) -> &str {
        if self.subtract {
            "date_subtract"
        } else {
            "date_add"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let interval = |t: &DataType| {
            (matches!(t, DataType::Interval(_) | DataType::Null) || is_text(t))
                .then_some(DataType::Interval(IntervalUnit::MonthDayNano))
        };
        let zone = |t: &DataType| (is_text(t) || t == &DataType::Null).then_some(DataType::Utf8);
        let coerced = match args {
            [value, by] => date_time_argument(value, true)
                .zip(interval(by))
                .map(|(v, i)| vec![v, i]),
            [value, by, z] => date_time_argument(value, true)
                .zip(interval(by))
                .zip(zone(z))
                .map(|((v, i), z)| vec![v, i, z]),
            _ => None,
        };
        coerced.ok_or_else(|| undefined_function(self.name(), args))
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(timestamptz())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [value, by, zone] = args.args.as_slice() else {
            return Err(pg(PgError::internal(format!(
                "{}(value, interval) was not given the session's time zone",
                self.name()
            ))));
        };
        let rows = rows_of(&args);
        let values = micros(value, rows)?;
        let by = by.to_array(rows)?;
        let by: &IntervalMonthDayNanoArray = by.as_primitive();
        let zones = ZoneArgument::read(zone, rows)?;
        let sign = if self.subtract { -1 } else { 1 };
        let sums = (0..values.len())
            .map(|row| {
                let zone = zones.at(row);
                if values.is_null(row) || by.is_null(row) || zone.is_none() {
                    return Ok(None);
                }
                let i = by.value(row);
                let (months, days, micros) = (
                    i.months.checked_mul(sign).ok_or_else(out_of_range)?,
                    i.days.checked_mul(sign).ok_or_else(out_of_range)?,
                    i.nanoseconds / 1000 * i64::from(sign),
                );
                zone.and_then(|z| z.add_interval(values.value(row), months, days, micros))
                    .map(Some)
                    .ok_or_else(out_of_range)
            })
            .collect::<Result<PrimitiveArray<TimestampMicrosecondType>>>()?;
        result(Arc::new(sums.with_timezone(TIMESTAMPTZ_ZONE)), &args.args)
    }
}

// ---------------------------------------------------------------------------------------
// age
// ---------------------------------------------------------------------------------------

/// `age(a, b)`: `a - b` field by field (`calendar_difference`). A `timestamptz` is taken on the session's wall clock: `sql::session_time`
/// passes `timezone(Z, t)`, and writes `age(t)` as `age(midnight today, t)`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Age {
    signature: Signature,
}

impl Age {
    pub fn new() -> Age {
        Age {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Age {
    fn name(&self) -> &str {
        "age"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let zoned = args
            .iter()
            .any(|t| matches!(t, DataType::Timestamp(_, Some(_))));
        let coerced: Option<Vec<DataType>> =
            args.iter().map(|t| date_time_argument(t, zoned)).collect();
        match coerced {
            Some(types) if (1..=2).contains(&types.len()) => Ok(types),
            _ => Err(undefined_function("age", args)),
        }
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [a, b] = args.args.as_slice() else {
            return Err(pg(PgError::internal(
                "age(value) was not given today's date",
            )));
        };
        let rows = rows_of(&args);
        let (a, b) = (micros(a, rows)?, micros(b, rows)?);
        let ages = (0..a.len())
            .map(|row| {
                if a.is_null(row) || b.is_null(row) {
                    return Ok(None);
                }
                calendar_difference(a.value(row), b.value(row))
                    .map(|(months, days, micros)| {
                        Some(IntervalMonthDayNano::new(months, days, micros * 1000))
                    })
                    .ok_or_else(|| {
                        pg(PgError::new(
                            sqlstate::DATETIME_FIELD_OVERFLOW,
                            "interval out of range",
                        ))
                    })
            })
            .collect::<Result<IntervalMonthDayNanoArray>>()?;
        result(Arc::new(ages), &args.args)
    }
}

// ---------------------------------------------------------------------------------------
// generate_series
// ---------------------------------------------------------------------------------------

/// DataFusion's `generate_series` given timestamps in nanoseconds (the unit it steps in;
/// iolab's are microseconds) and, for `timestamptz`, the session's zone, so that it adds
/// each step on the session's wall clock as PostgreSQL does. The values stay instants;
/// only the zone their type names changes. Integer bounds are stepped as bigints, the
/// series read back as `integer`s when no bound is a `bigint` ([`Int4Series`]).
#[derive(Debug)]
pub struct GenerateSeries;

impl TableFunctionImpl for GenerateSeries {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let zone = SessionTimeOptions::of(args.session().config_options())
            .zone()
            .arrow_name();
        let int4 = is_int4_series(args.exprs());
        let exprs = args
            .exprs()
            .iter()
            .map(|e| match e {
                Expr::Literal(value, metadata) => {
                    in_nanoseconds(value, &zone).map(|v| Expr::Literal(v, metadata.clone()))
                }
                other => Ok(other.clone()),
            })
            .map(|e| e.and_then(step_as_interval))
            .map(|e| e.and_then(integer_as_bigint))
            .collect::<Result<Vec<_>>>()?;
        let exprs = bounds_as_timestamps(exprs)?;
        let series = datafusion::functions_table::generate_series::GenerateSeriesFunc {};
        let series = series.call_with_args(TableFunctionArgs::new(&exprs, args.session()))?;
        Ok(if int4 {
            Arc::new(Int4Series::new(series))
        } else {
            series
        })
    }
}

/// Are these a series' integer arguments, none of them a `bigint`?
fn is_int4_series(args: &[Expr]) -> bool {
    args.iter().all(|e| {
        matches!(e, Expr::Literal(v, _) if matches!(v.data_type(), DataType::Int16 | DataType::Int32))
    })
}

/// A text constant as one bound of a series whose other bound is a timestamp read as that
/// timestamp's type, as PostgreSQL reads an untyped literal
/// (`generate_series('2024-01-01'::timestamp, '2024-01-10', '1 day')`).
fn bounds_as_timestamps(mut exprs: Vec<Expr>) -> Result<Vec<Expr>> {
    let timestamp_type = |e: &Expr| match e {
        Expr::Literal(v, _) if matches!(v.data_type(), DataType::Timestamp(..)) => {
            Some(v.data_type())
        }
        _ => None,
    };
    if exprs.len() < 2 {
        return Ok(exprs);
    }
    for (text, other) in [(0, 1), (1, 0)] {
        let Some(ty) = timestamp_type(&exprs[other]) else {
            continue;
        };
        let cast = match &exprs[text] {
            Expr::Literal(value @ ScalarValue::Utf8(Some(_)), metadata) => {
                Expr::Literal(value.cast_to(&ty)?, metadata.clone())
            }
            _ => continue,
        };
        exprs[text] = cast;
    }
    Ok(exprs)
}

/// An integer constant of a narrower type (`generate_series(1::int, n::smallint)`) as a
/// bigint, the type DataFusion's series steps in; anything else as it is.
fn integer_as_bigint(e: Expr) -> Result<Expr> {
    match &e {
        Expr::Literal(v, metadata) if v.data_type().is_integer() && !v.is_null() => Ok(
            Expr::Literal(v.cast_to(&DataType::Int64)?, metadata.clone()),
        ),
        _ => Ok(e),
    }
}

/// A text constant read as an interval (`generate_series(t1, t2, '1 day')`, as PostgreSQL
/// reads an untyped literal), anything else as it is.
fn step_as_interval(e: Expr) -> Result<Expr> {
    let Expr::Literal(ScalarValue::Utf8(Some(text)), metadata) = &e else {
        return Ok(e);
    };
    let Ok(step) = iolab_engine::values::input::parse_interval_value(text) else {
        return Ok(e);
    };
    Ok(Expr::Literal(
        ScalarValue::IntervalMonthDayNano(Some(step)),
        metadata.clone(),
    ))
}

/// A timestamp constant in nanoseconds, a zoned one in `zone`; anything else as it is.
fn in_nanoseconds(value: &ScalarValue, zone: &str) -> Result<ScalarValue> {
    let DataType::Timestamp(_, value_zone) = value.data_type() else {
        return Ok(value.clone());
    };
    let zone: Option<Arc<str>> = value_zone.map(|_| zone.into());
    let nanoseconds = value.cast_to(&DataType::Timestamp(TimeUnit::Nanosecond, None))?;
    match nanoseconds {
        ScalarValue::TimestampNanosecond(Some(ns), _) => {
            Ok(ScalarValue::TimestampNanosecond(Some(ns), zone))
        }
        ScalarValue::TimestampNanosecond(None, _) if !value.is_null() => Err(out_of_range()),
        _ => Ok(ScalarValue::TimestampNanosecond(None, zone)),
    }
}
