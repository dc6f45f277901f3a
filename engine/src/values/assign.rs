//! PostgreSQL's assignment casts: a computed column → the table column's exact Arrow type.
//!
//! `INSERT INTO t(a) SELECT …` and `VALUES (…)` compute columns of whatever type DataFusion
//! infers (`Int64` for `1`, `Float64` for `10000 * random()`, `Utf8` for `'12'`, `Null` for
//! `NULL`). Before the rows are stored, [`assign_cast`] converts each column with the rules
//! PostgreSQL applies to an assignment (all verified on PostgreSQL 18):
//!
//! - float → integer rounds to nearest, ties to even (`rint`): 2.5 → 2, 3.5 → 4, -2.5 → -2;
//!   numeric → integer rounds half away from zero: 2.5 → 3; out of range (and NaN) is 22003
//!   `integer out of range` / `smallint out of range` / `bigint out of range`;
//! - integer/numeric → float converts; float8 → float4 fails with `value out of range:
//!   overflow` / `underflow`;
//! - → numeric(p,s) rounds half away from zero to `s` places; float8 goes through its 15
//!   significant digits (float4: 6) as PostgreSQL does, so 1.005::float8 becomes 1.01;
//!   too many integer digits is `numeric field overflow` with PostgreSQL's detail;
//! - anything → text/varchar/char uses the text output (`true`/`false` for booleans);
//!   varchar(n)/char(n) reject longer values (22001) unless the excess is spaces, which are
//!   cut; char(n) is blank-padded;
//! - text → anything uses the type's input function (`'12'` → 12, `'abc'` → 22P02);
//! - timestamp ↔ timestamptz reads or shows the wall clock in the session's TimeZone;
//!   date → timestamp(tz) is midnight; timestamp(tz) → date drops the time;
//! - `NULL` literals become a null array of the target type;
//! - other pairs (boolean → integer, date → integer, …) are 42804 `column "x" is of type
//!   integer but expression is of type boolean`, as PostgreSQL reports them.

use super::datetime::{
    DATE_MAX_DAYS, DATE_MIN_DAYS, DATE_NEG_INFINITY, DATE_POS_INFINITY, TS_MAX_MICROS,
    TS_MIN_MICROS, TS_NEG_INFINITY, TS_POS_INFINITY, USECS_PER_DAY,
};
use super::input::{
    self, decimal_to_scaled, numeric_field_overflow, numeric_infinite_overflow,
    numeric_nan_unsupported, pow10_i128, ColumnParser,
};
use super::output_text::{format_decimal, timestamp_micros, write_text};
use super::{arrow_type_name, TextFormat};
use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, Date32Array, Decimal128Array,
    Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, StringArray, StringBuilder,
    TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Decimal32Type, Decimal64Type, Float16Type,
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, IntervalUnit, TimeUnit,
    TimestampMicrosecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use iolab_catalog::types::TIMESTAMPTZ_ZONE;
use iolab_catalog::{sqlstate, PgError, PgType};
use std::sync::Arc;

/// Converts `array` to `target.arrow_type()` with PostgreSQL's assignment rules, reading and
/// writing times in UTC. `column` names the column in type-mismatch errors.
pub fn assign_cast(array: &ArrayRef, target: PgType, column: &str) -> Result<ArrayRef, PgError> {
    assign_cast_with(array, target, column, &TextFormat::default())
}

/// [`assign_cast`] in the session's [`TextFormat`] (TimeZone for timestamp ↔ timestamptz and
/// text conversions, extra_float_digits for float → text).
pub fn assign_cast_with(
    array: &ArrayRef,
    target: PgType,
    column: &str,
    fmt: &TextFormat,
) -> Result<ArrayRef, PgError> {
    let source = array.data_type();
    match source {
        DataType::Null => return Ok(new_null_array(&target.arrow_type(), array.len())),
        DataType::Dictionary(_, values) => {
            let plain = cast(array, values).map_err(|e| PgError::internal(e.to_string()))?;
            return assign_cast_with(&plain, target, column, fmt);
        }
        DataType::LargeUtf8 | DataType::Utf8View | DataType::RunEndEncoded(..) => {
            let value_type = match source {
                DataType::RunEndEncoded(_, v) => v.data_type().clone(),
                _ => DataType::Utf8,
            };
            let plain = cast(array, &value_type).map_err(|e| PgError::internal(e.to_string()))?;
            return assign_cast_with(&plain, target, column, fmt);
        }
        _ => {}
    }
    let mismatch = || {
        PgError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "column \"{column}\" is of type {} but expression is of type {}",
                target.sql_name(),
                arrow_type_name(source)
            ),
        )
        .with_hint("You will need to rewrite or cast the expression.")
    };
    if source == &DataType::Utf8
        && !matches!(
            target,
            PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_)
        )
    {
        return from_text(array.as_string::<i32>(), target, fmt);
    }
    match target {
        PgType::Bool => match source {
            DataType::Boolean => Ok(array.clone()),
            _ => Err(mismatch()),
        },
        PgType::Int2 => {
            let read = number_reader(array.as_ref()).ok_or_else(mismatch)?;
            let values = to_integers(
                array.as_ref(),
                &read,
                i64::from(i16::MIN),
                i64::from(i16::MAX),
                "smallint",
            )?;
            Ok(Arc::new(
                values
                    .into_iter()
                    .map(|v| v.map(|v| v as i16))
                    .collect::<Int16Array>(),
            ))
        }
        PgType::Int4 => {
            if source == &DataType::Int32 {
                return Ok(array.clone());
            }
            let read = number_reader(array.as_ref()).ok_or_else(mismatch)?;
            let values = to_integers(
                array.as_ref(),
                &read,
                i64::from(i32::MIN),
                i64::from(i32::MAX),
                "integer",
            )?;
            Ok(Arc::new(
                values
                    .into_iter()
                    .map(|v| v.map(|v| v as i32))
                    .collect::<Int32Array>(),
            ))
        }
        PgType::Int8 => {
            if source == &DataType::Int64 {
                return Ok(array.clone());
            }
            let read = number_reader(array.as_ref()).ok_or_else(mismatch)?;
            let values = to_integers(array.as_ref(), &read, i64::MIN, i64::MAX, "bigint")?;
            Ok(Arc::new(values.into_iter().collect::<Int64Array>()))
        }
        PgType::Float4 => {
            if source == &DataType::Float32 {
                return Ok(array.clone());
            }
            let read = number_reader(array.as_ref()).ok_or_else(mismatch)?;
            let mut out = Vec::with_capacity(array.len());
            for row in 0..array.len() {
                out.push(if array.is_null(row) {
                    None
                } else {
                    Some(to_float4(read(row))?)
                });
            }
            Ok(Arc::new(Float32Array::from(out)))
        }
        PgType::Float8 => {
            if source == &DataType::Float64 {
                return Ok(array.clone());
            }
            let read = number_reader(array.as_ref()).ok_or_else(mismatch)?;
            let out: Float64Array = (0..array.len())
                .map(|row| (!array.is_null(row)).then(|| to_float8(read(row))))
                .collect();
            Ok(Arc::new(out))
        }
        PgType::Numeric { precision, scale } => {
            let read = number_reader(array.as_ref()).ok_or_else(mismatch)?;
            let mut out = Vec::with_capacity(array.len());
            for row in 0..array.len() {
                out.push(if array.is_null(row) {
                    None
                } else {
                    Some(to_numeric(read(row), precision, scale)?)
                });
            }
            let out =
                Decimal128Array::from(out).with_data_type(DataType::Decimal128(precision, scale));
            Ok(Arc::new(out))
        }
        PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => to_text(array, target, fmt),
        PgType::Date => {
            let mut out = Vec::with_capacity(array.len());
            for row in 0..array.len() {
                if array.is_null(row) {
                    out.push(None);
                    continue;
                }
                let days = match source {
                    DataType::Date32 => array.as_primitive::<Date32Type>().value(row),
                    DataType::Date64 => {
                        let ms = array.as_primitive::<Date64Type>().value(row);
                        checked_date(ms.div_euclid(86_400_000))?
                    }
                    DataType::Timestamp(unit, zone) => {
                        let micros = timestamp_micros(array.as_ref(), *unit, row);
                        match micros {
                            TS_POS_INFINITY => DATE_POS_INFINITY,
                            TS_NEG_INFINITY => DATE_NEG_INFINITY,
                            _ => {
                                let local = match zone {
                                    None => micros,
                                    Some(_) => fmt.time_zone.utc_to_local(micros).0,
                                };
                                checked_date(local.div_euclid(USECS_PER_DAY))?
                            }
                        }
                    }
                    _ => return Err(mismatch()),
                };
                out.push(Some(days));
            }
            Ok(Arc::new(Date32Array::from(out)))
        }
        PgType::Interval => match source {
            DataType::Interval(IntervalUnit::MonthDayNano) => Ok(array.clone()),
            DataType::Interval(_) => datafusion::arrow::compute::cast(array, &target.arrow_type())
                .map_err(|_| mismatch()),
            _ => Err(mismatch()),
        },
        PgType::Timestamp | PgType::Timestamptz => {
            let with_zone = target == PgType::Timestamptz;
            if let DataType::Timestamp(TimeUnit::Microsecond, zone) = source {
                if zone.is_some() == with_zone {
                    if with_zone && zone.as_deref() != Some(TIMESTAMPTZ_ZONE) {
                        let values = array.as_primitive::<TimestampMicrosecondType>().clone();
                        return Ok(Arc::new(values.with_timezone(TIMESTAMPTZ_ZONE)));
                    }
                    return Ok(array.clone());
                }
            }
            let mut out = Vec::with_capacity(array.len());
            for row in 0..array.len() {
                if array.is_null(row) {
                    out.push(None);
                    continue;
                }
                let micros = match source {
                    DataType::Timestamp(unit, zone) => {
                        let v = timestamp_micros(array.as_ref(), *unit, row);
                        match (zone.is_some(), with_zone) {
                            _ if v == TS_POS_INFINITY || v == TS_NEG_INFINITY => v,
                            (false, true) => fmt.time_zone.local_to_utc(v),
                            (true, false) => fmt.time_zone.utc_to_local(v).0,
                            _ => v,
                        }
                    }
                    DataType::Date32 | DataType::Date64 => {
                        let days = match source {
                            DataType::Date32 => array.as_primitive::<Date32Type>().value(row),
                            _ => checked_date(
                                array
                                    .as_primitive::<Date64Type>()
                                    .value(row)
                                    .div_euclid(86_400_000),
                            )?,
                        };
                        match days {
                            DATE_POS_INFINITY => TS_POS_INFINITY,
                            DATE_NEG_INFINITY => TS_NEG_INFINITY,
                            _ => {
                                let local = i64::from(days) * USECS_PER_DAY;
                                if with_zone {
                                    fmt.time_zone.local_to_utc(local)
                                } else {
                                    local
                                }
                            }
                        }
                    }
                    _ => return Err(mismatch()),
                };
                if micros != TS_POS_INFINITY
                    && micros != TS_NEG_INFINITY
                    && !(TS_MIN_MICROS..=TS_MAX_MICROS).contains(&micros)
                {
                    return Err(PgError::new(
                        sqlstate::DATETIME_FIELD_OVERFLOW,
                        "timestamp out of range",
                    ));
                }
                out.push(Some(micros));
            }
            let out = TimestampMicrosecondArray::from(out);
            Ok(Arc::new(if with_zone {
                out.with_timezone(TIMESTAMPTZ_ZONE)
            } else {
                out
            }))
        }
    }
}

fn checked_date(days: i64) -> Result<i32, PgError> {
    if (DATE_MIN_DAYS..=DATE_MAX_DAYS).contains(&days) {
        Ok(days as i32)
    } else {
        Err(PgError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            "date out of range",
        ))
    }
}

/// One value of a numeric source column.
#[derive(Clone, Copy, Debug)]
enum Number {
    Int(i128),
    Float8(f64),
    Float4(f32),
    /// unscaled value, scale
    Decimal(i128, i8),
}

type NumberReader<'a> = Box<dyn Fn(usize) -> Number + 'a>;

/// Reads the rows of a numeric column of any Arrow numeric type; `None` for other types.
fn number_reader(array: &dyn Array) -> Option<NumberReader<'_>> {
    macro_rules! int {
        ($t:ty) => {{
            let a = array.as_primitive::<$t>();
            Box::new(move |row| Number::Int(i128::from(a.value(row)))) as NumberReader<'_>
        }};
    }
    Some(match array.data_type() {
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Float16 => {
            let a = array.as_primitive::<Float16Type>();
            Box::new(move |row| Number::Float4(a.value(row).to_f32()))
        }
        DataType::Float32 => {
            let a = array.as_primitive::<Float32Type>();
            Box::new(move |row| Number::Float4(a.value(row)))
        }
        DataType::Float64 => {
            let a = array.as_primitive::<Float64Type>();
            Box::new(move |row| Number::Float8(a.value(row)))
        }
        DataType::Decimal32(_, s) => {
            let (a, s) = (array.as_primitive::<Decimal32Type>(), *s);
            Box::new(move |row| Number::Decimal(i128::from(a.value(row)), s))
        }
        DataType::Decimal64(_, s) => {
            let (a, s) = (array.as_primitive::<Decimal64Type>(), *s);
            Box::new(move |row| Number::Decimal(i128::from(a.value(row)), s))
        }
        DataType::Decimal128(_, s) => {
            let (a, s) = (array.as_primitive::<Decimal128Type>(), *s);
            Box::new(move |row| Number::Decimal(a.value(row), s))
        }
        _ => return None,
    })
}

fn int_out_of_range(type_name: &str) -> PgError {
    PgError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{type_name} out of range"),
    )
}

/// `v / d` (d > 0) rounded half away from zero.
fn div_round_half_away(v: i128, d: i128) -> i128 {
    let q = v / d;
    let r = v % d;
    if r.abs() >= d - r.abs() {
        q + v.signum()
    } else {
        q
    }
}

fn to_integers(
    array: &dyn Array,
    read: &NumberReader<'_>,
    min: i64,
    max: i64,
    type_name: &str,
) -> Result<Vec<Option<i64>>, PgError> {
    let mut out = Vec::with_capacity(array.len());
    for row in 0..array.len() {
        if array.is_null(row) {
            out.push(None);
            continue;
        }
        let v: i128 = match read(row) {
            Number::Int(v) => v,
            // rint(), then the range test PostgreSQL makes on the double: min <= x < -min.
            Number::Float8(f) => float_to_int(f, min, type_name)?,
            Number::Float4(f) => float_to_int(f64::from(f), min, type_name)?,
            Number::Decimal(v, s) if s > 0 => div_round_half_away(v, pow10_i128(s as u32)),
            Number::Decimal(v, s) => v
                .checked_mul(pow10_i128(u32::from(s.unsigned_abs()).min(38)))
                .ok_or_else(|| int_out_of_range(type_name))?,
        };
        if v < i128::from(min) || v > i128::from(max) {
            return Err(int_out_of_range(type_name));
        }
        out.push(Some(v as i64));
    }
    Ok(out)
}

fn float_to_int(f: f64, min: i64, type_name: &str) -> Result<i128, PgError> {
    let r = f.round_ties_even();
    let lower = min as f64; // exactly -2^15, -2^31 or -2^63
    if r.is_nan() || r < lower || r >= -lower {
        return Err(int_out_of_range(type_name));
    }
    Ok(r as i128)
}

/// A decimal's exact text read as a double, as PostgreSQL's `numeric_float8` does.
fn decimal_to_f64(v: i128, scale: i8) -> f64 {
    // Both operands exact and one rounding: correctly rounded.
    if v.unsigned_abs() < (1u128 << 53) && (0..=22).contains(&scale) {
        return v as f64 / 10f64.powi(i32::from(scale));
    }
    let mut text = Vec::new();
    format_decimal(v, scale, &mut text);
    std::str::from_utf8(&text)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(f64::NAN)
}

fn to_float8(n: Number) -> f64 {
    match n {
        Number::Int(v) => v as f64,
        Number::Float8(f) => f,
        Number::Float4(f) => f64::from(f),
        Number::Decimal(v, s) => decimal_to_f64(v, s),
    }
}

fn to_float4(n: Number) -> Result<f32, PgError> {
    Ok(match n {
        Number::Int(v) => v as f32,
        Number::Float4(f) => f,
        Number::Float8(f) => {
            let r = f as f32;
            if r.is_infinite() && f.is_finite() {
                return Err(PgError::new(
                    sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                    "value out of range: overflow",
                ));
            }
            if r == 0.0 && f != 0.0 {
                return Err(PgError::new(
                    sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                    "value out of range: underflow",
                ));
            }
            r
        }
        Number::Decimal(v, s) => {
            // numeric → real goes through the text, and so does its error.
            let mut text = Vec::new();
            format_decimal(v, s, &mut text);
            input::parse_float4(std::str::from_utf8(&text).unwrap_or("NaN"))?
        }
    })
}

/// Rounds a float to `significant` digits (`%.{n}g`) and reads that decimal as numeric.
fn float_to_numeric(f: f64, significant: usize, precision: u8, scale: i8) -> Result<i128, PgError> {
    if f.is_nan() {
        return Err(numeric_nan_unsupported());
    }
    if f.is_infinite() {
        return Err(numeric_infinite_overflow(precision, scale));
    }
    let text = format!("{:.*e}", significant - 1, f);
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let negative = mantissa.starts_with('-');
    let digits: Vec<u8> = mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|d| d - b'0')
        .collect();
    let exp: i64 = exp.parse().unwrap_or(0);
    let first_nonzero = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    let exp10 = exp - (digits.len() as i64 - 1);
    decimal_to_scaled(
        negative,
        digits[first_nonzero..].to_vec(),
        exp10,
        precision,
        scale,
    )
}

fn to_numeric(n: Number, precision: u8, scale: i8) -> Result<i128, PgError> {
    match n {
        Number::Int(v) => rescale(v, 0, precision, scale),
        Number::Float8(f) => float_to_numeric(f, 15, precision, scale),
        Number::Float4(f) => float_to_numeric(f64::from(f), 6, precision, scale),
        Number::Decimal(v, s) => rescale(v, s, precision, scale),
    }
}

/// `v × 10^-from` at scale `to`, rounded half away from zero, checked against `precision`.
fn rescale(v: i128, from: i8, precision: u8, to: i8) -> Result<i128, PgError> {
    let shift = i32::from(to) - i32::from(from);
    let scaled = if shift >= 0 {
        if shift > 38 {
            if v == 0 {
                return Ok(0);
            }
            return Err(numeric_field_overflow(precision, to));
        }
        v.checked_mul(pow10_i128(shift as u32))
            .ok_or_else(|| numeric_field_overflow(precision, to))?
    } else if -shift > 38 {
        0
    } else {
        div_round_half_away(v, pow10_i128((-shift) as u32))
    };
    if scaled.unsigned_abs() >= pow10_i128(u32::from(precision.min(38))) as u128 {
        return Err(numeric_field_overflow(precision, to));
    }
    Ok(scaled)
}

/// Any column → text / varchar(n) / char(n).
fn to_text(array: &ArrayRef, target: PgType, fmt: &TextFormat) -> Result<ArrayRef, PgError> {
    let unlimited = matches!(target, PgType::Text | PgType::Varchar(None));
    if array.data_type() == &DataType::Utf8 {
        let strings = array.as_string::<i32>();
        if unlimited {
            return Ok(array.clone());
        }
        // Only copy when some value is too long or needs padding.
        let mut changed = false;
        for row in 0..strings.len() {
            if strings.is_valid(row) {
                let s = strings.value(row);
                let stored = input::stored_text(s, target)?;
                changed |= stored.len() != s.len();
            }
        }
        if !changed {
            return Ok(array.clone());
        }
        let mut b = StringBuilder::with_capacity(strings.len(), strings.value_data().len());
        for row in 0..strings.len() {
            if strings.is_valid(row) {
                b.append_value(input::stored_text(strings.value(row), target)?);
            } else {
                b.append_null();
            }
        }
        return Ok(Arc::new(b.finish()));
    }
    let mut b = StringBuilder::with_capacity(array.len(), array.len() * 8);
    let mut scratch = Vec::new();
    let booleans = array.as_boolean_opt();
    for row in 0..array.len() {
        scratch.clear();
        // boolean → text is `true` / `false`, not the output function's `t` / `f`.
        let present = match booleans {
            Some(bools) if bools.is_valid(row) => {
                scratch.extend_from_slice(if bools.value(row) { b"true" } else { b"false" });
                true
            }
            _ => write_text(array.as_ref(), row, fmt, &mut scratch),
        };
        if !present {
            b.append_null();
            continue;
        }
        let s = std::str::from_utf8(&scratch).map_err(|e| PgError::internal(e.to_string()))?;
        b.append_value(input::stored_text(s, target)?);
    }
    Ok(Arc::new(b.finish()))
}

/// Text (an untyped literal, as DataFusion types it) → any type, through its input function.
fn from_text(strings: &StringArray, target: PgType, fmt: &TextFormat) -> Result<ArrayRef, PgError> {
    if target == PgType::Bool {
        let out: Result<BooleanArray, PgError> = strings
            .iter()
            .map(|v| v.map(input::parse_bool).transpose())
            .collect();
        return Ok(Arc::new(out?));
    }
    let mut parser = ColumnParser::with_capacity(target, strings.len());
    for v in strings.iter() {
        parser.append(v, fmt)?;
    }
    Ok(parser.finish())
}

/// The first row that is NULL, if any.
pub fn first_null(array: &dyn Array) -> Option<usize> {
    if array.data_type() == &DataType::Null {
        return (!array.is_empty()).then_some(0);
    }
    if array.null_count() == 0 {
        return None;
    }
    (0..array.len()).find(|&row| array.is_null(row))
}

/// 23502 `null value in column "a" of relation "t" violates not-null constraint` if `array`
/// has a NULL. The caller may add [`failing_row_detail`] for the row ([`first_null`]).
pub fn check_not_null(array: &dyn Array, column: &str, table: &str) -> Result<(), PgError> {
    match first_null(array) {
        None => Ok(()),
        Some(_) => Err(PgError::new(
            sqlstate::NOT_NULL_VIOLATION,
            format!("null value in column \"{column}\" of relation \"{table}\" violates not-null constraint"),
        )),
    }
}

/// PostgreSQL's `Failing row contains (null, x).` for `row` of a batch's columns (values
/// longer than 64 bytes are clipped and followed by `...`).
pub fn failing_row_detail(columns: &[ArrayRef], row: usize, fmt: &TextFormat) -> String {
    const MAX_FIELD: usize = 64;
    let mut detail = String::from("Failing row contains (");
    let mut value = Vec::new();
    for (i, column) in columns.iter().enumerate() {
        if i > 0 {
            detail.push_str(", ");
        }
        value.clear();
        if !write_text(column.as_ref(), row, fmt, &mut value) {
            detail.push_str("null");
            continue;
        }
        let text = String::from_utf8_lossy(&value);
        if text.len() > MAX_FIELD {
            let mut cut = MAX_FIELD;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            detail.push_str(&text[..cut]);
            detail.push_str("...");
        } else {
            detail.push_str(&text);
        }
    }
    detail.push_str(").");
    detail
}

#[cfg(test)]
mod tests {
    //! Expected results are PostgreSQL 18.4's for `INSERT INTO t(col) VALUES (expr)`.
    use super::*;
    use crate::values::datetime::days_from_civil;
    use datafusion::arrow::array::{
        Date32Array, Float32Array, Int8Array, NullArray, StringViewArray, UInt64Array,
    };
    use datafusion::arrow::datatypes::Int32Type;

    fn arr<A: Array + 'static>(a: A) -> ArrayRef {
        Arc::new(a)
    }

    fn code_msg(e: PgError) -> (&'static str, String) {
        (e.code, e.message)
    }

    #[test]
    fn floats_round_to_even_numerics_away_from_zero() {
        // INSERT INTO at(i) VALUES (2.5::float8),(3.5::float8),(-2.5::float8),
        //                          (2.5::numeric),(-2.5::numeric),(3.5::numeric) → 2 4 -2 3 -3 4
        let floats = arr(Float64Array::from(vec![
            2.5,
            3.5,
            -2.5,
            0.49999999999999994,
            1e9 + 0.5,
        ]));
        let out = assign_cast(&floats, PgType::Int4, "i").unwrap();
        let out = out.as_primitive::<Int32Type>();
        assert_eq!(out.values().to_vec(), vec![2, 4, -2, 0, 1_000_000_000]);
        let decimals = arr(Decimal128Array::from(vec![25, -25, 35, 24])
            .with_precision_and_scale(5, 1)
            .unwrap());
        let out = assign_cast(&decimals, PgType::Int4, "i").unwrap();
        assert_eq!(
            out.as_primitive::<Int32Type>().values().to_vec(),
            vec![3, -3, 4, 2]
        );
        // (-32768.5)::float8::smallint and (-32768.4) → -32768; 2.5::float4 → 2; 32767.4 → 32767
        let small = arr(Float64Array::from(vec![-32768.5, -32768.4, 32767.4]));
        let out = assign_cast(&small, PgType::Int2, "s").unwrap();
        assert_eq!(
            out.as_primitive::<Int16Type>().values().to_vec(),
            vec![-32768, -32768, 32767]
        );
        // (-9223372036854775808)::float8::bigint works
        let big = arr(Float64Array::from(vec![-9223372036854775808.0]));
        assert_eq!(
            assign_cast(&big, PgType::Int8, "b")
                .unwrap()
                .as_primitive::<Int64Type>()
                .value(0),
            i64::MIN
        );
    }

    #[test]
    fn integer_range_errors() {
        let e = |a: ArrayRef, t: PgType| code_msg(assign_cast(&a, t, "c").unwrap_err());
        assert_eq!(
            e(arr(Float64Array::from(vec![3e9])), PgType::Int4),
            ("22003", "integer out of range".into())
        );
        assert_eq!(
            e(arr(Float64Array::from(vec![f64::NAN])), PgType::Int4),
            ("22003", "integer out of range".into())
        );
        assert_eq!(
            e(arr(Int64Array::from(vec![40000])), PgType::Int2),
            ("22003", "smallint out of range".into())
        );
        assert_eq!(
            e(arr(Float64Array::from(vec![1e19])), PgType::Int8),
            ("22003", "bigint out of range".into())
        );
        assert_eq!(
            e(
                arr(Float64Array::from(vec![9223372036854775807.0])),
                PgType::Int8
            )
            .1,
            "bigint out of range"
        );
        assert_eq!(
            e(arr(Float32Array::from(vec![32767.5])), PgType::Int2).1,
            "smallint out of range"
        );
        let d = Decimal128Array::from(vec![30_000_000_000])
            .with_precision_and_scale(20, 1)
            .unwrap();
        assert_eq!(e(arr(d), PgType::Int4).1, "integer out of range");
        let d = Decimal128Array::from(vec![21474836475])
            .with_precision_and_scale(20, 1)
            .unwrap();
        assert_eq!(e(arr(d), PgType::Int4).1, "integer out of range"); // 2147483647.5
        let d = Decimal128Array::from(vec![21474836474])
            .with_precision_and_scale(20, 1)
            .unwrap();
        assert_eq!(
            assign_cast(&arr(d), PgType::Int4, "i")
                .unwrap()
                .as_primitive::<Int32Type>()
                .value(0),
            i32::MAX
        );
        assert_eq!(
            e(arr(UInt64Array::from(vec![u64::MAX])), PgType::Int8).1,
            "bigint out of range"
        );
        let lit = arr(Int64Array::from(vec![Some(7), None]));
        let out = assign_cast(&lit, PgType::Int4, "i").unwrap();
        assert_eq!(out.data_type(), &DataType::Int32);
        assert!(out.is_null(1));
    }

    #[test]
    fn to_float_and_numeric() {
        // 16777217::bigint into real → 1.6777216e+07
        let out = assign_cast(&arr(Int64Array::from(vec![16777217])), PgType::Float4, "f").unwrap();
        assert_eq!(out.as_primitive::<Float32Type>().value(0), 16777216.0);
        let e = assign_cast(&arr(Float64Array::from(vec![1e39])), PgType::Float4, "f").unwrap_err();
        assert_eq!(
            code_msg(e),
            ("22003", "value out of range: overflow".into())
        );
        let e =
            assign_cast(&arr(Float64Array::from(vec![1e-50])), PgType::Float4, "f").unwrap_err();
        assert_eq!(
            code_msg(e),
            ("22003", "value out of range: underflow".into())
        );
        // INSERT INTO at(f) VALUES (1e39): numeric → real goes through the text.
        let big = Decimal128Array::from(vec![10i128.pow(37)])
            .with_precision_and_scale(38, -2)
            .unwrap();
        let e = assign_cast(&arr(big), PgType::Float4, "f").unwrap_err();
        assert_eq!(
            e.message,
            "\"1000000000000000000000000000000000000000\" is out of range for type real"
        );
        let d = Decimal128Array::from(vec![1250])
            .with_precision_and_scale(6, 3)
            .unwrap();
        let out = assign_cast(&arr(d), PgType::Float8, "f").unwrap();
        assert_eq!(out.as_primitive::<Float64Type>().value(0), 1.25);

        let n52 = PgType::Numeric {
            precision: 5,
            scale: 2,
        };
        let numeric = |a: ArrayRef| {
            assign_cast(&a, n52, "n").map(|o| o.as_primitive::<Decimal128Type>().value(0))
        };
        // 1.005::float8 → 1.01; 12.345::float8 → 12.35; 12.345::float4 → 12.35; 1e-3 → 0.00
        assert_eq!(numeric(arr(Float64Array::from(vec![1.005]))).unwrap(), 101);
        assert_eq!(
            numeric(arr(Float64Array::from(vec![12.345]))).unwrap(),
            1235
        );
        assert_eq!(
            numeric(arr(Float32Array::from(vec![12.345f32]))).unwrap(),
            1235
        );
        assert_eq!(numeric(arr(Float64Array::from(vec![1e-3]))).unwrap(), 0);
        assert_eq!(numeric(arr(Float64Array::from(vec![0.125]))).unwrap(), 13);
        let e = numeric(arr(Decimal128Array::from(vec![999995])
            .with_precision_and_scale(6, 3)
            .unwrap()))
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str(), e.detail.as_deref()),
            (
                "22003",
                "numeric field overflow",
                Some("A field with precision 5, scale 2 must round to an absolute value less than 10^3.")
            )
        );
        let e = numeric(arr(Float64Array::from(vec![f64::INFINITY]))).unwrap_err();
        assert_eq!(
            e.detail.as_deref(),
            Some("A field with precision 5, scale 2 cannot hold an infinite value.")
        );
        assert_eq!(
            numeric(arr(Float64Array::from(vec![1.5e300])))
                .unwrap_err()
                .message,
            "numeric field overflow"
        );
        assert_eq!(numeric(arr(Int32Array::from(vec![123]))).unwrap(), 12300);
        // 1.5::numeric(2,1)::numeric(1,0) → 2; 9.5 → overflow "less than 10^1"
        let n10 = PgType::Numeric {
            precision: 1,
            scale: 0,
        };
        let d = arr(Decimal128Array::from(vec![15, 95])
            .with_precision_and_scale(2, 1)
            .unwrap());
        let e = assign_cast(&d, n10, "n").unwrap_err();
        assert_eq!(
            e.detail.as_deref(),
            Some(
                "A field with precision 1, scale 0 must round to an absolute value less than 10^1."
            )
        );
        let d = arr(Decimal128Array::from(vec![15])
            .with_precision_and_scale(2, 1)
            .unwrap());
        assert_eq!(
            assign_cast(&d, n10, "n")
                .unwrap()
                .as_primitive::<Decimal128Type>()
                .value(0),
            2
        );
        // (0.1::float8 + 0.2::float8)::numeric → 0.3 (15 significant digits)
        let out = assign_cast(
            &arr(Float64Array::from(vec![0.1 + 0.2])),
            PgType::unconstrained_numeric(),
            "n",
        )
        .unwrap();
        assert_eq!(out.as_primitive::<Decimal128Type>().value(0), 300_000);
        assert_eq!(out.data_type(), &DataType::Decimal128(38, 6));
        // 123456789.123::float4::numeric → 123457000
        let out = assign_cast(
            &arr(Float32Array::from(vec![123456789.123f32])),
            PgType::Numeric {
                precision: 20,
                scale: 0,
            },
            "n",
        )
        .unwrap();
        assert_eq!(out.as_primitive::<Decimal128Type>().value(0), 123457000);
    }

    #[test]
    fn to_text_types() {
        let fmt = TextFormat::default();
        let texts = |a: ArrayRef, t: PgType| -> Result<Vec<Option<String>>, PgError> {
            let out = assign_cast_with(&a, t, "t", &fmt)?;
            Ok(out
                .as_string::<i32>()
                .iter()
                .map(|v| v.map(str::to_string))
                .collect())
        };
        let v3 = PgType::Varchar(Some(3));
        assert_eq!(
            texts(
                arr(StringArray::from(vec![Some("abc   "), None, Some("ab")])),
                v3
            )
            .unwrap(),
            vec![Some("abc".to_string()), None, Some("ab".to_string())]
        );
        let e = texts(arr(StringArray::from(vec!["abcd"])), v3).unwrap_err();
        assert_eq!(
            code_msg(e),
            (
                "22001",
                "value too long for type character varying(3)".into()
            )
        );
        let e = texts(arr(Int32Array::from(vec![12345])), v3).unwrap_err();
        assert_eq!(e.message, "value too long for type character varying(3)");
        let e = texts(arr(BooleanArray::from(vec![true])), v3).unwrap_err(); // 'true' is 4 long
        assert_eq!(e.code, "22001");
        assert_eq!(
            texts(arr(BooleanArray::from(vec![true, false])), PgType::Text).unwrap(),
            vec![Some("true".into()), Some("false".into())]
        );
        let d = Decimal128Array::from(vec![12500])
            .with_precision_and_scale(6, 3)
            .unwrap();
        assert_eq!(
            texts(arr(d), PgType::Text).unwrap(),
            vec![Some("12.500".into())]
        );
        assert_eq!(
            texts(arr(Float64Array::from(vec![1.5, 1e20])), PgType::Text).unwrap(),
            vec![Some("1.5".into()), Some("1e+20".into())]
        );
        let c3 = PgType::Bpchar(3);
        assert_eq!(
            texts(arr(StringArray::from(vec!["ab", "abc  ", " "])), c3).unwrap(),
            vec![Some("ab ".into()), Some("abc".into()), Some("   ".into())]
        );
        assert_eq!(
            texts(arr(StringViewArray::from(vec!["view"])), PgType::Text).unwrap(),
            vec![Some("view".into())]
        );
        let same = arr(StringArray::from(vec!["x"]));
        assert!(Arc::ptr_eq(
            &same,
            &assign_cast(&same, PgType::Text, "t").unwrap()
        ));
    }

    #[test]
    fn from_text_literals() {
        let s = arr(StringArray::from(vec![Some("12"), None]));
        let out = assign_cast(&s, PgType::Int4, "i").unwrap();
        assert_eq!(out.as_primitive::<Int32Type>().value(0), 12);
        assert!(out.is_null(1));
        let e = assign_cast(&arr(StringArray::from(vec!["abc"])), PgType::Int4, "i").unwrap_err();
        assert_eq!(
            code_msg(e),
            (
                "22P02",
                "invalid input syntax for type integer: \"abc\"".into()
            )
        );
        let out = assign_cast(&arr(StringArray::from(vec!["yes"])), PgType::Bool, "b").unwrap();
        assert!(out.as_boolean().value(0));
        let out = assign_cast(
            &arr(StringArray::from(vec!["2024-01-31 12:00+02"])),
            PgType::Timestamptz,
            "t",
        )
        .unwrap();
        assert_eq!(out.data_type(), &PgType::Timestamptz.arrow_type());
        let out = assign_cast(
            &arr(StringViewArray::from(vec!["1.25"])),
            PgType::Numeric {
                precision: 5,
                scale: 1,
            },
            "n",
        )
        .unwrap();
        assert_eq!(out.as_primitive::<Decimal128Type>().value(0), 13);
    }

    #[test]
    fn dates_and_timestamps_in_the_session_zone() {
        // SET TimeZone '-03': '2024-01-31 10:00'::timestamp::timestamptz → 10:00:00-03,
        // '2024-01-31 10:00+00'::timestamptz::timestamp → 07:00:00,
        // '2024-01-31'::date::timestamptz → 00:00:00-03, '2024-01-31 01:00+00'::timestamptz::date → 2024-01-30
        let fmt = TextFormat::default().with_time_zone("-03").unwrap();
        let hour = 3_600_000_000i64;
        let day = days_from_civil(2024, 1, 31);
        let local_10 = day * USECS_PER_DAY + 10 * hour;
        let ts = arr(TimestampMicrosecondArray::from(vec![local_10]));
        let out = assign_cast_with(&ts, PgType::Timestamptz, "t", &fmt).unwrap();
        assert_eq!(out.data_type(), &PgType::Timestamptz.arrow_type());
        assert_eq!(
            out.as_primitive::<TimestampMicrosecondType>().value(0),
            local_10 + 3 * hour
        );
        let tz = arr(TimestampMicrosecondArray::from(vec![local_10]).with_timezone("+00:00"));
        let out = assign_cast_with(&tz, PgType::Timestamp, "t", &fmt).unwrap();
        assert_eq!(
            out.as_primitive::<TimestampMicrosecondType>().value(0),
            local_10 - 3 * hour
        );
        let dates = arr(Date32Array::from(vec![day as i32, i32::MAX]));
        let out = assign_cast_with(&dates, PgType::Timestamptz, "t", &fmt).unwrap();
        let out = out.as_primitive::<TimestampMicrosecondType>();
        assert_eq!(out.value(0), day * USECS_PER_DAY + 3 * hour);
        assert_eq!(out.value(1), i64::MAX);
        let out = assign_cast_with(&dates, PgType::Timestamp, "t", &fmt).unwrap();
        assert_eq!(
            out.as_primitive::<TimestampMicrosecondType>().value(0),
            day * USECS_PER_DAY
        );
        let early = arr(
            TimestampMicrosecondArray::from(vec![day * USECS_PER_DAY + hour])
                .with_timezone("+00:00"),
        );
        let out = assign_cast_with(&early, PgType::Date, "d", &fmt).unwrap();
        assert_eq!(out.as_primitive::<Date32Type>().value(0), day as i32 - 1);
        // DataFusion's now() is a nanosecond timestamptz.
        let now = arr(
            datafusion::arrow::array::TimestampNanosecondArray::from(vec![
                1_706_704_496_123_456_789,
            ])
            .with_timezone("+00:00"),
        );
        let out = assign_cast(&now, PgType::Timestamptz, "t").unwrap();
        assert_eq!(
            out.as_primitive::<TimestampMicrosecondType>().value(0),
            1_706_704_496_123_457
        );
        let out = assign_cast(&now, PgType::Date, "d").unwrap();
        assert_eq!(out.as_primitive::<Date32Type>().value(0), day as i32);
    }

    #[test]
    fn nulls_and_type_mismatches() {
        for t in [
            PgType::Int4,
            PgType::Text,
            PgType::Numeric {
                precision: 5,
                scale: 2,
            },
            PgType::Timestamptz,
            PgType::Bool,
        ] {
            let out = assign_cast(&arr(NullArray::new(3)), t, "c").unwrap();
            assert_eq!(out.data_type(), &t.arrow_type());
            assert_eq!(out.null_count(), 3);
        }
        // INSERT INTO at(i) VALUES (true) / at(bo) VALUES (1) / at(i) VALUES ('2024-01-31'::date)
        let e = assign_cast(&arr(BooleanArray::from(vec![true])), PgType::Int4, "i").unwrap_err();
        assert_eq!(
            code_msg(e.clone()),
            (
                "42804",
                "column \"i\" is of type integer but expression is of type boolean".into()
            )
        );
        assert_eq!(
            e.hint.as_deref(),
            Some("You will need to rewrite or cast the expression.")
        );
        let e = assign_cast(&arr(Int32Array::from(vec![1])), PgType::Bool, "bo").unwrap_err();
        assert_eq!(
            e.message,
            "column \"bo\" is of type boolean but expression is of type integer"
        );
        let e = assign_cast(&arr(Date32Array::from(vec![1])), PgType::Int4, "i").unwrap_err();
        assert_eq!(
            e.message,
            "column \"i\" is of type integer but expression is of type date"
        );
        let e = assign_cast(&arr(Int8Array::from(vec![1])), PgType::Date, "d").unwrap_err();
        assert_eq!(
            e.message,
            "column \"d\" is of type date but expression is of type smallint"
        );
    }

    #[test]
    fn not_null_checks() {
        let a = arr(Int32Array::from(vec![Some(1), None]));
        let b = arr(StringArray::from(vec![Some("x"), Some("x")]));
        assert!(check_not_null(b.as_ref(), "b", "nn").is_ok());
        let e = check_not_null(a.as_ref(), "a", "nn").unwrap_err();
        assert_eq!(
            code_msg(e),
            (
                "23502",
                "null value in column \"a\" of relation \"nn\" violates not-null constraint".into()
            )
        );
        assert_eq!(first_null(a.as_ref()), Some(1));
        assert_eq!(
            failing_row_detail(&[a, b], 1, &TextFormat::default()),
            "Failing row contains (null, x)."
        );
        assert!(check_not_null(&NullArray::new(1), "a", "t").is_err());
    }
}
