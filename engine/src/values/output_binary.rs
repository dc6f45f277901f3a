//! PostgreSQL's binary send formats: Arrow values → the bytes of a binary-format column.
//!
//! A column is reported to the client with the OID of [`pg_type_for`] its Arrow type, and
//! [`write_binary`] writes exactly what that type's send function would:
//!
//! | PostgreSQL type | bytes |
//! |---|---|
//! | bool | 1 byte, 0 or 1 |
//! | int2 / int4 / int8 | big-endian two's complement |
//! | float4 / float8 | big-endian IEEE 754 |
//! | numeric | i16 ndigits, i16 weight, u16 sign, u16 dscale, ndigits × u16 base-10000 digits |
//! | text | the UTF-8 bytes |
//! | date | i32 days since 2000-01-01 (`i32::MAX`/`MIN` = ±infinity) |
//! | timestamp, timestamptz | i64 µs since 2000-01-01 00:00 (UTC for timestamptz; `i64::MAX`/`MIN` = ±infinity) |
//!
//! Arrow types without a PostgreSQL counterpart are reported as `text` and sent as their text
//! output, so the bytes always match the OID.

use super::datetime::{
    DATE_NEG_INFINITY, DATE_POS_INFINITY, PG_EPOCH_DAYS, PG_EPOCH_MICROS, TS_NEG_INFINITY,
    TS_POS_INFINITY,
};
use super::output_text::{timestamp_micros, write_text};
use super::TextFormat;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Float16Type, Float32Type, Float64Type,
    Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use iolab_catalog::PgType;

/// The PostgreSQL type a result column of Arrow type `dt` is reported as (`text` when
/// PostgreSQL has no counterpart). Dictionary columns are reported as their values' type.
pub fn pg_type_for(dt: &DataType) -> PgType {
    match dt {
        DataType::Dictionary(_, values) => pg_type_for(values),
        _ => PgType::for_arrow(dt).unwrap_or(PgType::Text),
    }
}

/// Appends the binary send format of `array[row]` for the type [`pg_type_for`] reports.
/// Returns `false` (and appends nothing) for NULL. Values sent as text use UTC and the
/// default float digits; use [`write_binary_with`] to pass the session's [`TextFormat`].
pub fn write_binary(array: &dyn Array, row: usize, out: &mut Vec<u8>) -> bool {
    write_binary_with(array, row, &TextFormat::default(), out)
}

/// [`write_binary`] with the session's text format for values that are sent as text.
pub fn write_binary_with(array: &dyn Array, row: usize, fmt: &TextFormat, out: &mut Vec<u8>) -> bool {
    if array.is_null(row) {
        return false;
    }
    match array.data_type() {
        DataType::Null => return false,
        DataType::Boolean => out.push(u8::from(array.as_boolean().value(row))),
        DataType::Int8 => {
            out.extend_from_slice(&i16::from(array.as_primitive::<Int8Type>().value(row)).to_be_bytes())
        }
        DataType::UInt8 => {
            out.extend_from_slice(&i16::from(array.as_primitive::<UInt8Type>().value(row)).to_be_bytes())
        }
        DataType::Int16 => {
            out.extend_from_slice(&array.as_primitive::<Int16Type>().value(row).to_be_bytes())
        }
        DataType::Int32 => {
            out.extend_from_slice(&array.as_primitive::<Int32Type>().value(row).to_be_bytes())
        }
        DataType::UInt16 => out
            .extend_from_slice(&i32::from(array.as_primitive::<UInt16Type>().value(row)).to_be_bytes()),
        DataType::Int64 => {
            out.extend_from_slice(&array.as_primitive::<Int64Type>().value(row).to_be_bytes())
        }
        DataType::UInt32 => out
            .extend_from_slice(&i64::from(array.as_primitive::<UInt32Type>().value(row)).to_be_bytes()),
        DataType::UInt64 => {
            encode_numeric(i128::from(array.as_primitive::<UInt64Type>().value(row)), 0, out)
        }
        DataType::Float16 => out.extend_from_slice(
            &array.as_primitive::<Float16Type>().value(row).to_f32().to_be_bytes(),
        ),
        DataType::Float32 => {
            out.extend_from_slice(&array.as_primitive::<Float32Type>().value(row).to_be_bytes())
        }
        DataType::Float64 => {
            out.extend_from_slice(&array.as_primitive::<Float64Type>().value(row).to_be_bytes())
        }
        DataType::Decimal128(_, scale) => {
            encode_numeric(array.as_primitive::<Decimal128Type>().value(row), *scale, out)
        }
        DataType::Utf8 => out.extend_from_slice(array.as_string::<i32>().value(row).as_bytes()),
        DataType::LargeUtf8 => {
            out.extend_from_slice(array.as_string::<i64>().value(row).as_bytes())
        }
        DataType::Utf8View => out.extend_from_slice(array.as_string_view().value(row).as_bytes()),
        DataType::Date32 => {
            out.extend_from_slice(&pg_date(array.as_primitive::<Date32Type>().value(row)).to_be_bytes())
        }
        DataType::Date64 => {
            let days = array.as_primitive::<Date64Type>().value(row).div_euclid(86_400_000);
            let days = days.clamp(i64::from(i32::MIN) + 1, i64::from(i32::MAX) - 1) as i32;
            out.extend_from_slice(&pg_date(days).to_be_bytes())
        }
        DataType::Timestamp(unit, _) => {
            let micros = timestamp_micros(array, *unit, row);
            out.extend_from_slice(&pg_timestamp(micros).to_be_bytes())
        }
        DataType::Dictionary(..) => {
            let dict = array.as_any_dictionary();
            let index = dict.normalized_keys()[row];
            return write_binary_with(dict.values().as_ref(), index, fmt, out);
        }
        _ => return write_text(array, row, fmt, out),
    }
    true
}

/// An Arrow `Date32` as PostgreSQL's date: days since 2000-01-01, infinities kept.
pub fn pg_date(days: i32) -> i32 {
    match days {
        DATE_POS_INFINITY | DATE_NEG_INFINITY => days,
        _ => days - PG_EPOCH_DAYS,
    }
}

/// An Arrow µs timestamp as PostgreSQL's: µs since 2000-01-01, infinities kept.
pub fn pg_timestamp(micros: i64) -> i64 {
    match micros {
        TS_POS_INFINITY | TS_NEG_INFINITY => micros,
        _ => micros.saturating_sub(PG_EPOCH_MICROS),
    }
}

/// `numeric_send` of `v × 10^-scale`: the value in base-10000 digits aligned at the decimal
/// point, without leading or trailing zero digits, and `dscale` = the number of decimal
/// fraction digits PostgreSQL would print (the column's scale, 0 when negative).
pub fn encode_numeric(v: i128, scale: i8, out: &mut Vec<u8>) {
    const POS: u16 = 0x0000;
    const NEG: u16 = 0x4000;
    let dscale = scale.max(0) as u16;
    // Decimal digits of |v|, most significant first.
    let mut decimal = [0u8; 40];
    let mut n = 0;
    let mut m = v.unsigned_abs();
    while m > 0 {
        decimal[n] = (m % 10) as u8;
        m /= 10;
        n += 1;
    }
    decimal[..n].reverse();
    // Digit k stands for 10^(n - 1 - k - scale); group it into base-10000 digit
    // floor(power / 4), at position power mod 4.
    let top_power = n as i32 - 1 - i32::from(scale);
    let low_power = -i32::from(scale);
    let top_weight = top_power.div_euclid(4);
    let low_weight = low_power.div_euclid(4);
    let mut groups = [0u16; 24];
    let count = if n == 0 { 0 } else { (top_weight - low_weight + 1) as usize };
    debug_assert!(count <= groups.len());
    for (k, &d) in decimal[..n].iter().enumerate() {
        let power = top_power - k as i32;
        let slot = (top_weight - power.div_euclid(4)) as usize;
        groups[slot] += u16::from(d) * [1, 10, 100, 1000][power.rem_euclid(4) as usize];
    }
    // Trim zero digits at both ends (the top one is never zero when n > 0).
    let mut first = 0;
    let mut last = count;
    while first < last && groups[first] == 0 {
        first += 1;
    }
    while last > first && groups[last - 1] == 0 {
        last -= 1;
    }
    let ndigits = (last - first) as i16;
    let weight = if ndigits == 0 { 0 } else { (top_weight - first as i32) as i16 };
    let sign = if v < 0 { NEG } else { POS };
    out.extend_from_slice(&ndigits.to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&dscale.to_be_bytes());
    for g in &groups[first..last] {
        out.extend_from_slice(&g.to_be_bytes());
    }
}
