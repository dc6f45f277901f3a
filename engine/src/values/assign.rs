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
use super::output_text::{format_decimal, timestamp_to_micros, write_text};
use super::{arrow_type_name, TextFormat};
use datafusion::arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, Date32Array, Decimal128Array,
    Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, StringArray, StringBuilder,
    TimestampMicrosecondArray,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Decimal32Type, Decimal64Type, Float16Type,
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
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
    if source == &DataType::Utf8 && !matches!(target, PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_)) {
        return from_text(array.as_string::<i32>(), target, fmt);
    }
    match target {
        PgType::Bool => match source {
            DataType::Boolean => Ok(array.clone()),
            _ => Err(mismatch()),
        },
        PgType::Int2 => {
            let read = number_reader(array.as_ref()).ok_or_else(mismatch)?;
            let values = to_integers(array.as_ref(), &read, i64::from(i16::MIN), i64::from(i16::MAX), "smallint")?;
            Ok(Arc::new(values.into_iter().map(|v| v.map(|v| v as i16)).collect::<Int16Array>()))
        }
        PgType::Int4 => {
            if source == &DataType::Int32 {
                return Ok(array.clone());
            }
            let read = number_reader(array.as_ref()).ok_or_else(mismatch)?;
            let values = to_integers(array.as_ref(), &read, i64::from(i32::MIN), i64::from(i32::MAX), "integer")?;
            Ok(Arc::new(values.into_iter().map(|v| v.map(|v| v as i32)).collect::<Int32Array>()))
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
                out.push(if array.is_null(row) { None } else { Some(to_float4(read(row))?) });
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
            let out = Decimal128Array::from(out)
                .with_data_type(DataType::Decimal128(precision, scale));
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
                        let micros = timestamp_micros_of(array.as_ref(), *unit, row);
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
                        let v = timestamp_micros_of(array.as_ref(), *unit, row);
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
                            _ => checked_date(array.as_primitive::<Date64Type>().value(row).div_euclid(86_400_000))?,
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
                    return Err(PgError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "timestamp out of range"));
                }
                out.push(Some(micros));
            }
            let out = TimestampMicrosecondArray::from(out);
            Ok(Arc::new(if with_zone { out.with_timezone(TIMESTAMPTZ_ZONE) } else { out }))
        }
    }
}

fn checked_date(days: i64) -> Result<i32, PgError> {
    if (DATE_MIN_DAYS..=DATE_MAX_DAYS).contains(&days) {
        Ok(days as i32)
    } else {
        Err(PgError::new(sqlstate::DATETIME_FIELD_OVERFLOW, "date out of range"))
    }
}

fn timestamp_micros_of(array: &dyn Array, unit: TimeUnit, row: usize) -> i64 {
    let v = match unit {
        TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(row),
        TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().value(row),
        TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().value(row),
        TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().value(row),
    };
    timestamp_to_micros(v, unit)
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
    PgError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, format!("{type_name} out of range"))
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
    std::str::from_utf8(&text).ok().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN)
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
                return Err(PgError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: overflow"));
            }
            if r == 0.0 && f != 0.0 {
                return Err(PgError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, "value out of range: underflow"));
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
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).map(|d| d - b'0').collect();
    let exp: i64 = exp.parse().unwrap_or(0);
    let first_nonzero = digits.iter().position(|&d| d != 0).unwrap_or(digits.len());
    let exp10 = exp - (digits.len() as i64 - 1);
    decimal_to_scaled(negative, digits[first_nonzero..].to_vec(), exp10, precision, scale)
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
        v.checked_mul(pow10_i128(shift as u32)).ok_or_else(|| numeric_field_overflow(precision, to))?
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
    if array.null_count() == 0 && array.data_type() != &DataType::Null {
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
