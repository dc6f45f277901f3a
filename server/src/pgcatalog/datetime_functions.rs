//! PostgreSQL's date/time constructors and interval normalizers that DataFusion lacks:
//! `make_timestamp`, `make_interval`, `justify_hours`, `justify_days`, `justify_interval`,
//! `isfinite`, `localtimestamp`, `localtime`; and `extract` as a `numeric`. (`make_timestamptz` is `make_timestamp(…)::timestamptz` or
//! `timezone(zone, make_timestamp(…))`, written so by `sql::session_time`, which also turns
//! `make_interval`'s named arguments into positions.)

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, IntervalMonthDayNanoArray, TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Float64Type, Int64Type, IntervalMonthDayNano, IntervalUnit,
};
use datafusion::arrow::datatypes::{Decimal128Type, Field, FieldRef};
use datafusion::error::Result;
use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    TypeSignature, Volatility,
};
use datafusion::scalar::ScalarValue;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::values::{days_from_civil, days_in_month, USECS_PER_DAY};

use super::functions::pg;
use super::zoned_time::{argument_arrays, result, rows_of, timestamp};

/// `make_interval`'s parameters, in order; each defaults to 0.
pub const MAKE_INTERVAL_PARAMETERS: [&str; 7] =
    ["years", "months", "weeks", "days", "hours", "mins", "secs"];

type Body = fn(&[ArrayRef], usize) -> Result<ArrayRef>;

/// One function of this module: its name, argument types and result.
#[derive(Debug)]
struct DateTimeFunction {
    name: &'static str,
    signature: Signature,
    returns: DataType,
    body: Body,
}

/// A function is the one of its name (there is one of each).
impl PartialEq for DateTimeFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for DateTimeFunction {}

impl std::hash::Hash for DateTimeFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

/// Registers the functions of this module into a session's state.
pub fn register(state: &mut SessionState) -> Result<()> {
    let interval = || DataType::Interval(IntervalUnit::MonthDayNano);
    let ints = |n: usize| {
        let mut types = vec![DataType::Int64; n];
        types[n - 1] = DataType::Float64;
        types
    };
    // Whole numbers, and the seconds (the seventh) a float.
    let make_interval_forms = (0..=MAKE_INTERVAL_PARAMETERS.len())
        .map(|n| match n {
            0 => TypeSignature::Nullary,
            7 => TypeSignature::Exact(ints(7)),
            n => TypeSignature::Exact(vec![DataType::Int64; n]),
        })
        .collect();
    let functions = [
        DateTimeFunction {
            name: "make_timestamp",
            signature: Signature::exact(ints(6), Volatility::Immutable),
            returns: timestamp(),
            body: make_timestamp,
        },
        DateTimeFunction {
            name: "make_interval",
            signature: Signature::one_of(make_interval_forms, Volatility::Immutable),
            returns: interval(),
            body: make_interval,
        },
        DateTimeFunction {
            name: "justify_hours",
            signature: Signature::exact(vec![interval()], Volatility::Immutable),
            returns: interval(),
            body: |args, _| justify(args, |i| days_from_time(i)),
        },
        DateTimeFunction {
            name: "justify_days",
            signature: Signature::exact(vec![interval()], Volatility::Immutable),
            returns: interval(),
            body: |args, _| justify(args, |i| months_from_days(i, false)),
        },
        DateTimeFunction {
            name: "justify_interval",
            signature: Signature::exact(vec![interval()], Volatility::Immutable),
            returns: interval(),
            body: |args, _| {
                justify(args, |i| {
                    let moved = months_from_days(carry_days(i), true);
                    balance_days_and_time(moved)
                })
            },
        },
        // The session's wall clock now: `sql::session_time` writes these as
        // `timezone(zone, now())`, so their bodies never run.
        DateTimeFunction {
            name: "localtimestamp",
            signature: Signature::nullary(Volatility::Stable),
            returns: timestamp(),
            body: |_, _| Err(planned_with_the_session_zone()),
        },
        DateTimeFunction {
            name: "localtime",
            signature: Signature::nullary(Volatility::Stable),
            returns: DataType::Time64(datafusion::arrow::datatypes::TimeUnit::Microsecond),
            body: |_, _| Err(planned_with_the_session_zone()),
        },
        DateTimeFunction {
            name: "isfinite",
            signature: Signature::any(1, Volatility::Immutable),
            returns: DataType::Boolean,
            body: isfinite,
        },
    ];
    for f in functions {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(f)))?;
    }
    state.register_udf(Arc::new(ScalarUDF::new_from_impl(Extract::new())))?;
    Ok(())
}

impl ScalarUDFImpl for DateTimeFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(self.returns.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (rows, arrays) = argument_arrays(&args)?;
        result((self.body)(&arrays, rows)?, &args.args)
    }
}

fn planned_with_the_session_zone() -> datafusion::error::DataFusionError {
    pg(PgError::internal(
        "localtimestamp and localtime are planned with the session's time zone",
    ))
}

fn out_of_range(what: &str, value: String) -> datafusion::error::DataFusionError {
    pg(PgError::new(
        sqlstate::DATETIME_FIELD_OVERFLOW,
        format!("{what} field value out of range: {value}"),
    ))
}

/// `make_timestamp(year, month, day, hour, min, sec)`.
fn make_timestamp(args: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
    let ints: Vec<_> = args[..5]
        .iter()
        .map(|a| a.as_primitive::<Int64Type>())
        .collect();
    let seconds = args[5].as_primitive::<Float64Type>();
    let values = (0..rows)
        .map(|row| {
            if ints.iter().any(|a| a.is_null(row)) || seconds.is_null(row) {
                return Ok(None);
            }
            let [year, month, day, hour, minute] = [0, 1, 2, 3, 4].map(|i| ints[i].value(row));
            let second = seconds.value(row);
            // Years BC count from -1 (astronomical year 0).
            let astronomical = if year < 0 { year + 1 } else { year };
            let valid_date = year != 0
                && (1..=12).contains(&month)
                && (1..=i64::from(days_in_month(astronomical, month as u32))).contains(&day);
            if !valid_date {
                return Err(out_of_range("date", format!("{year}-{month:02}-{day:02}")));
            }
            let valid_time = (0..24).contains(&hour)
                && (0..60).contains(&minute)
                && (0.0..60.0).contains(&second);
            if !valid_time {
                return Err(out_of_range(
                    "time",
                    format!("{hour:02}:{minute:02}:{second:02}"),
                ));
            }
            let days = days_from_civil(astronomical, month as u32, day as u32);
            let micros = ((hour * 60 + minute) * 60) * 1_000_000 + (second * 1e6).round() as i64;
            Ok(Some(days * USECS_PER_DAY + micros))
        })
        .collect::<Result<TimestampMicrosecondArray>>()?;
    Ok(Arc::new(values))
}

/// `make_interval(years, months, weeks, days, hours, mins, secs)`, missing ones 0.
fn make_interval(args: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
    let mut fields = [0i64; 6];
    let values = (0..rows)
        .map(|row| {
            if args.iter().any(|a| a.is_null(row)) {
                return Ok(None);
            }
            let mut seconds = 0.0;
            for (i, a) in args.iter().enumerate() {
                if i == 6 {
                    seconds = a.as_primitive::<Float64Type>().value(row);
                } else {
                    fields[i] = a.as_primitive::<Int64Type>().value(row);
                }
            }
            let [years, months, weeks, days, hours, minutes] = fields;
            let interval = || -> Option<IntervalMonthDayNano> {
                let months = i32::try_from(years.checked_mul(12)?.checked_add(months)?).ok()?;
                let days = i32::try_from(weeks.checked_mul(7)?.checked_add(days)?).ok()?;
                let micros = (hours.checked_mul(60)?.checked_add(minutes)?)
                    .checked_mul(60_000_000)?
                    .checked_add((seconds * 1e6).round() as i64)?;
                Some(IntervalMonthDayNano::new(
                    months,
                    days,
                    micros.checked_mul(1000)?,
                ))
            };
            interval().map(Some).ok_or_else(|| {
                pg(PgError::new(
                    sqlstate::DATETIME_FIELD_OVERFLOW,
                    "interval out of range",
                ))
            })
        })
        .collect::<Result<IntervalMonthDayNanoArray>>()?;
    Ok(Arc::new(values))
}

/// An interval as (months, days, µs).
type Fields = (i32, i32, i64);

fn justify(args: &[ArrayRef], f: fn(Fields) -> Fields) -> Result<ArrayRef> {
    let values: IntervalMonthDayNanoArray = args[0]
        .as_primitive::<datafusion::arrow::datatypes::IntervalMonthDayNanoType>()
        .iter()
        .map(|v| {
            v.map(|v| {
                let (months, days, micros) = f((v.months, v.days, v.nanoseconds / 1000));
                IntervalMonthDayNano::new(months, days, micros * 1000)
            })
        })
        .collect();
    Ok(Arc::new(values))
}

/// Whole days of the time part moved into the days.
fn carry_days((months, days, micros): Fields) -> Fields {
    let whole = micros / USECS_PER_DAY;
    (
        months,
        days.saturating_add(whole as i32),
        micros - whole * USECS_PER_DAY,
    )
}

/// Days and time of one sign (`1 day -01:00` is `23:00:00`).
fn balance_days_and_time((months, days, micros): Fields) -> Fields {
    if days > 0 && micros < 0 {
        (months, days - 1, micros + USECS_PER_DAY)
    } else if days < 0 && micros > 0 {
        (months, days + 1, micros - USECS_PER_DAY)
    } else {
        (months, days, micros)
    }
}

/// `justify_hours`: 24 hours are a day.
fn days_from_time(i: Fields) -> Fields {
    balance_days_and_time(carry_days(i))
}

/// `justify_days` (and `justify_interval`'s middle step, which counts the time's sign
/// too): 30 days are a month, and months and days get one sign.
fn months_from_days((months, days, micros): Fields, with_time: bool) -> Fields {
    let whole = days / 30;
    let (months, days) = (months.saturating_add(whole), days - whole * 30);
    let days_negative = days < 0 || (with_time && days == 0 && micros < 0);
    let days_positive = days > 0 || (with_time && days == 0 && micros > 0);
    if months > 0 && days_negative {
        (months - 1, days + 30, micros)
    } else if months < 0 && days_positive {
        (months + 1, days - 30, micros)
    } else {
        (months, days, micros)
    }
}

/// `isfinite(date | timestamp | timestamptz | interval)`: not ±infinity.
fn isfinite(args: &[ArrayRef], rows: usize) -> Result<ArrayRef> {
    let a = &args[0];
    let finite: BooleanArray = match a.data_type() {
        DataType::Date32 => a
            .as_primitive::<datafusion::arrow::datatypes::Date32Type>()
            .iter()
            .map(|v| v.map(|d| d != i32::MAX && d != i32::MIN))
            .collect(),
        DataType::Timestamp(..) => {
            let micros = cast(a, &timestamp())?;
            micros
                .as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>()
                .iter()
                .map(|v| v.map(|t| t != i64::MAX && t != i64::MIN))
                .collect()
        }
        // Intervals and anything else iolab holds are finite.
        _ => (0..rows)
            .map(|row| (!a.is_null(row)).then_some(true))
            .collect(),
    };
    Ok(Arc::new(finite))
}

/// `extract(field from value)` as PostgreSQL 14+ computes it: `date_part`'s value as a
/// `numeric` — of scale 6 for seconds and epochs (`1719792000.000000`; but an epoch of a
/// date is whole), 3 for milliseconds, 0 for the other fields. `sql::session_time` writes
/// `EXTRACT(f FROM x)` as `extract('f', x)`, and reads it on the session's wall clock as it
/// does `date_part`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Extract {
    date_part: Arc<ScalarUDF>,
}

impl Extract {
    fn new() -> Extract {
        Extract {
            date_part: datafusion::functions::datetime::date_part(),
        }
    }

    fn scale(field: Option<&ScalarValue>, value: &DataType) -> i8 {
        let field = field
            .and_then(|f| match f {
                ScalarValue::Utf8(s) | ScalarValue::LargeUtf8(s) | ScalarValue::Utf8View(s) => {
                    s.clone()
                }
                _ => None,
            })
            .unwrap_or_default()
            .to_ascii_lowercase();
        match field.as_str() {
            "epoch" if matches!(value, DataType::Date32 | DataType::Date64) => 0,
            "epoch" | "second" | "seconds" | "julian" => 6,
            "millisecond" | "milliseconds" => 3,
            _ => 0,
        }
    }
}

impl ScalarUDFImpl for Extract {
    fn name(&self) -> &str {
        "extract"
    }

    fn signature(&self) -> &Signature {
        self.date_part.signature()
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Decimal128(38, 0))
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let value = args
            .arg_fields
            .get(1)
            .map_or(DataType::Null, |f| f.data_type().clone());
        let field = args.scalar_arguments.first().copied().flatten();
        let scale = Extract::scale(field, &value);
        Ok(Arc::new(Field::new(
            self.name(),
            DataType::Decimal128(38, scale),
            true,
        )))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let returns = args.return_field.data_type().clone();
        let DataType::Decimal128(_, scale) = returns else {
            unreachable!("extract returns a numeric");
        };
        let field = match args.args.first() {
            Some(ColumnarValue::Scalar(field)) => field.to_string().to_ascii_lowercase(),
            _ => String::new(),
        };
        // DataFusion's seconds and milliseconds are whole; its microseconds (seconds with
        // their fraction, in µs) are the digits of both, at scale 6 and 3.
        let from_micros = matches!(
            field.as_str(),
            "second" | "seconds" | "millisecond" | "milliseconds"
        );
        let rows = rows_of(&args);
        let mut inner = args;
        if from_micros {
            inner.args[0] = ColumnarValue::Scalar(ScalarValue::Utf8(Some("microsecond".into())));
        }
        let field_value = match &inner.args[0] {
            ColumnarValue::Scalar(f) => Some(f.clone()),
            ColumnarValue::Array(_) => None,
        };
        inner.return_field = self.date_part.return_field_from_args(ReturnFieldArgs {
            arg_fields: &inner.arg_fields,
            scalar_arguments: &[field_value.as_ref(), None],
        })?;
        let all_args = inner.args.clone();
        let parts = self.date_part.invoke_with_args(inner)?.into_array(rows)?;
        let numeric: ArrayRef = if from_micros {
            let whole = cast(&parts, &DataType::Decimal128(38, 0))?;
            Arc::new(
                whole
                    .as_primitive::<Decimal128Type>()
                    .clone()
                    .with_precision_and_scale(38, scale)?,
            )
        } else {
            cast(&parts, &returns)?
        };
        result(numeric, &all_args)
    }
}
