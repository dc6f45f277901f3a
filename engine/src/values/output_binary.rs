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
//! | an array (a one-level list, [`array_element`]) | i32 dimensions (1, or 0 when empty), i32 1 if any element is NULL, u32 element OID; for one dimension i32 length and i32 lower bound 1; then each element as i32 length (−1 for NULL) and its own send format |
//!
//! Arrow types without a PostgreSQL counterpart are reported as `text` and sent as their text
//! output, so the bytes always match the OID.

use super::datetime::{
    DATE_NEG_INFINITY, DATE_POS_INFINITY, PG_EPOCH_DAYS, PG_EPOCH_MICROS, TS_NEG_INFINITY,
    TS_POS_INFINITY,
};
use super::output_text::{dictionary_entry, timestamp_micros, write_text};
use super::TextFormat;
use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, Decimal128Type, Float16Type, Float32Type, Float64Type,
    Int16Type, Int32Type, Int64Type, Int8Type, IntervalMonthDayNanoType, IntervalUnit, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
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

/// PostgreSQL's `array_send` of a one-dimensional array holding `elements`.
fn write_binary_array(elements: &dyn Array, fmt: &TextFormat, out: &mut Vec<u8>) {
    let ndim: i32 = if elements.is_empty() { 0 } else { 1 };
    out.extend_from_slice(&ndim.to_be_bytes());
    out.extend_from_slice(&i32::from(elements.null_count() > 0).to_be_bytes());
    out.extend_from_slice(&pg_type_for(elements.data_type()).oid().to_be_bytes());
    if ndim == 1 {
        out.extend_from_slice(&(elements.len() as i32).to_be_bytes());
        out.extend_from_slice(&1i32.to_be_bytes());
    }
    for i in 0..elements.len() {
        let at = out.len();
        out.extend_from_slice(&(-1i32).to_be_bytes());
        if write_binary_with(elements, i, fmt, out) {
            let len = (out.len() - at - 4) as i32;
            out[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
    }
}

/// The element type of a list sent as a one-dimensional PostgreSQL array: lists of lists
/// (several dimensions) are sent as text.
pub fn array_element(dt: &DataType) -> Option<&DataType> {
    match dt {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            let element = f.data_type();
            (array_element(element).is_none()).then_some(element)
        }
        _ => None,
    }
}

/// Appends the binary send format of `array[row]` for the type [`pg_type_for`] reports.
/// Returns `false` (and appends nothing) for NULL. Values sent as text use UTC and the
/// default float digits; use [`write_binary_with`] to pass the session's [`TextFormat`].
pub fn write_binary(array: &dyn Array, row: usize, out: &mut Vec<u8>) -> bool {
    write_binary_with(array, row, &TextFormat::default(), out)
}

/// [`write_binary`] with the session's text format for values that are sent as text.
pub fn write_binary_with(
    array: &dyn Array,
    row: usize,
    fmt: &TextFormat,
    out: &mut Vec<u8>,
) -> bool {
    if array.is_null(row) {
        return false;
    }
    match array.data_type() {
        DataType::Null => return false,
        DataType::Boolean => out.push(u8::from(array.as_boolean().value(row))),
        DataType::Int8 => out.extend_from_slice(
            &i16::from(array.as_primitive::<Int8Type>().value(row)).to_be_bytes(),
        ),
        DataType::UInt8 => out.extend_from_slice(
            &i16::from(array.as_primitive::<UInt8Type>().value(row)).to_be_bytes(),
        ),
        DataType::Int16 => {
            out.extend_from_slice(&array.as_primitive::<Int16Type>().value(row).to_be_bytes())
        }
        DataType::Int32 => {
            out.extend_from_slice(&array.as_primitive::<Int32Type>().value(row).to_be_bytes())
        }
        DataType::UInt16 => out.extend_from_slice(
            &i32::from(array.as_primitive::<UInt16Type>().value(row)).to_be_bytes(),
        ),
        DataType::Int64 => {
            out.extend_from_slice(&array.as_primitive::<Int64Type>().value(row).to_be_bytes())
        }
        DataType::UInt32 => out.extend_from_slice(
            &i64::from(array.as_primitive::<UInt32Type>().value(row)).to_be_bytes(),
        ),
        DataType::UInt64 => encode_numeric(
            i128::from(array.as_primitive::<UInt64Type>().value(row)),
            0,
            out,
        ),
        DataType::Float16 => out.extend_from_slice(
            &array
                .as_primitive::<Float16Type>()
                .value(row)
                .to_f32()
                .to_be_bytes(),
        ),
        DataType::Float32 => {
            out.extend_from_slice(&array.as_primitive::<Float32Type>().value(row).to_be_bytes())
        }
        DataType::Float64 => {
            out.extend_from_slice(&array.as_primitive::<Float64Type>().value(row).to_be_bytes())
        }
        DataType::Decimal128(_, scale) => encode_numeric(
            array.as_primitive::<Decimal128Type>().value(row),
            *scale,
            out,
        ),
        DataType::Utf8 => out.extend_from_slice(array.as_string::<i32>().value(row).as_bytes()),
        DataType::LargeUtf8 => {
            out.extend_from_slice(array.as_string::<i64>().value(row).as_bytes())
        }
        DataType::Utf8View => out.extend_from_slice(array.as_string_view().value(row).as_bytes()),
        DataType::Date32 => out.extend_from_slice(
            &pg_date(array.as_primitive::<Date32Type>().value(row)).to_be_bytes(),
        ),
        DataType::Date64 => {
            let days = array
                .as_primitive::<Date64Type>()
                .value(row)
                .div_euclid(86_400_000);
            let days = days.clamp(i64::from(i32::MIN) + 1, i64::from(i32::MAX) - 1) as i32;
            out.extend_from_slice(&pg_date(days).to_be_bytes())
        }
        DataType::Timestamp(unit, _) => {
            let micros = timestamp_micros(array, *unit, row);
            out.extend_from_slice(&pg_timestamp(micros).to_be_bytes())
        }
        // PostgreSQL's interval: µs, days, months.
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
            out.extend_from_slice(&(v.nanoseconds / 1000).to_be_bytes());
            out.extend_from_slice(&v.days.to_be_bytes());
            out.extend_from_slice(&v.months.to_be_bytes());
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
            if array_element(array.data_type()).is_some() =>
        {
            let elements = match array.data_type() {
                DataType::List(_) => array.as_list::<i32>().value(row),
                DataType::LargeList(_) => array.as_list::<i64>().value(row),
                _ => array.as_fixed_size_list().value(row),
            };
            write_binary_array(elements.as_ref(), fmt, out);
        }
        DataType::Dictionary(..) => {
            return match dictionary_entry(array, row) {
                Some((values, index)) => write_binary_with(values.as_ref(), index, fmt, out),
                None => write_text(array, row, fmt, out),
            };
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
    let count = if n == 0 {
        0
    } else {
        (top_weight - low_weight + 1) as usize
    };
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
    let weight = if ndigits == 0 {
        0
    } else {
        (top_weight - first as i32) as i16
    };
    let sign = if v < 0 { NEG } else { POS };
    out.extend_from_slice(&ndigits.to_be_bytes());
    out.extend_from_slice(&weight.to_be_bytes());
    out.extend_from_slice(&sign.to_be_bytes());
    out.extend_from_slice(&dscale.to_be_bytes());
    for g in &groups[first..last] {
        out.extend_from_slice(&g.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    //! Expected bytes are PostgreSQL 18.4's `numeric_send(x)`, `int4send(x)`, … output.
    use super::*;
    use crate::values::datetime::{days_from_civil, USECS_PER_DAY};
    use datafusion::arrow::array::{
        ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
        Int16Array, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray, UInt64Array,
    };
    use datafusion::arrow::datatypes::TimeUnit;
    use std::sync::Arc;

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn numeric(v: i128, scale: i8) -> String {
        let mut out = Vec::new();
        encode_numeric(v, scale, &mut out);
        hex(&out)
    }

    #[test]
    fn numeric_send_matches_postgres() {
        // (unscaled value, scale) → numeric_send(value) on PostgreSQL 18
        let cases: &[(i128, i8, &str)] = &[
            (0, 0, "0000000000000000"),
            (150, 2, "000200000000000200011388"),
            (-150, 2, "000200004000000200011388"),
            (12345678, 3, "0003000100000003000109291a7c"),
            (1, 4, "0001ffff000000040001"),
            (12, 5, "0002ffff00000005000107d0"),
            (100000000000000000000, 0, "00010005000000000001"),
            (10000, 0, "00010001000000000001"),
            (9999, 0, "0001000000000000270f"),
            (1, 1, "0001ffff0000000103e8"),
            (-1, 6, "0001fffe400000060064"),
            (100000000, 6, "00010000000000060064"),
            (1000000, 6, "00010000000000060001"),
            (0, 2, "0000000000000002"),
            (1000000000000, 6, "00010001000000060064"), // 1000000::numeric(20,6)
            (-1234500000, 6, "000200004000000604d21388"), // -1234.5::numeric(38,6)
            (
                123456789012345678901234567890123456,
                6,
                "000a000700000006000c0d801ed204d2162e23340d801ed204d215e0",
            ),
            (
                12345678901234567890123456789012345678,
                0,
                "000a000900000000000c0d801ed204d2162e23340d801ed204d2162e",
            ),
            (-1, 38, "0001fff6400000260064"),
            (
                18446744073709551615,
                0,
                "000500040000000007341a5802e103bb064f",
            ),
            (15, -9, "00010002000000000096"), // 1.5e10 with a negative scale
        ];
        for (v, s, want) in cases {
            assert_eq!(numeric(*v, *s), *want, "{v} scale {s}");
        }
    }

    fn send(array: ArrayRef, row: usize) -> Option<String> {
        let mut out = Vec::new();
        write_binary(array.as_ref(), row, &mut out).then(|| hex(&out))
    }

    #[test]
    fn fixed_width_types_match_postgres() {
        assert_eq!(
            send(Arc::new(Int16Array::from(vec![-2])), 0).unwrap(),
            "fffe"
        );
        assert_eq!(
            send(Arc::new(Int32Array::from(vec![1])), 0).unwrap(),
            "00000001"
        );
        assert_eq!(
            send(Arc::new(Int64Array::from(vec![-1])), 0).unwrap(),
            "ffffffffffffffff"
        );
        assert_eq!(
            send(Arc::new(Float32Array::from(vec![1.5])), 0).unwrap(),
            "3fc00000"
        );
        assert_eq!(
            send(Arc::new(Float64Array::from(vec![-0.1])), 0).unwrap(),
            "bfb999999999999a"
        );
        assert_eq!(
            send(Arc::new(BooleanArray::from(vec![true])), 0).unwrap(),
            "01"
        );
        assert_eq!(
            send(Arc::new(StringArray::from(vec!["hé"])), 0).unwrap(),
            "68c3a9"
        );
        let day = days_from_civil(2024, 1, 31) as i32;
        let dates = Date32Array::from(vec![day, 0, i32::MAX]);
        let dates: ArrayRef = Arc::new(dates);
        assert_eq!(send(dates.clone(), 0).unwrap(), "0000225c");
        assert_eq!(send(dates.clone(), 1).unwrap(), "ffffd533");
        assert_eq!(send(dates, 2).unwrap(), "7fffffff");
        let micros =
            i64::from(day) * USECS_PER_DAY + (12 * 3600 + 34 * 60 + 56) * 1_000_000 + 789_000;
        let ts = TimestampMicrosecondArray::from(vec![Some(micros), Some(i64::MIN), None]);
        assert_eq!(send(Arc::new(ts.clone()), 0).unwrap(), "0002b33be00ca608");
        assert_eq!(send(Arc::new(ts.clone()), 1).unwrap(), "8000000000000000");
        assert_eq!(send(Arc::new(ts.clone()), 2), None);
        assert_eq!(
            send(Arc::new(ts.with_timezone("+00:00")), 0).unwrap(),
            "0002b33be00ca608"
        );
        let dec = Decimal128Array::from(vec![150])
            .with_precision_and_scale(10, 2)
            .unwrap();
        assert_eq!(send(Arc::new(dec), 0).unwrap(), "000200000000000200011388");
        assert_eq!(
            send(Arc::new(UInt64Array::from(vec![u64::MAX])), 0).unwrap(),
            "000500040000000007341a5802e103bb064f"
        );
    }

    #[test]
    fn reported_type_and_bytes_agree() {
        assert_eq!(pg_type_for(&DataType::Int8), PgType::Int2);
        assert_eq!(
            pg_type_for(&DataType::UInt64),
            PgType::Numeric {
                precision: 20,
                scale: 0
            }
        );
        assert_eq!(
            pg_type_for(&DataType::Timestamp(TimeUnit::Nanosecond, None)),
            PgType::Timestamp
        );
        assert_eq!(
            pg_type_for(&DataType::Dictionary(
                Box::new(DataType::Int32),
                Box::new(DataType::Utf8)
            )),
            PgType::Text
        );
        let interval = DataType::Interval(datafusion::arrow::datatypes::IntervalUnit::MonthDayNano);
        assert_eq!(pg_type_for(&interval), PgType::Interval);
        // Int8 is reported as int2, so it is sent as two bytes.
        let small: ArrayRef = Arc::new(datafusion::arrow::array::Int8Array::from(vec![-1]));
        assert_eq!(send(small, 0).unwrap(), "ffff");
        // An interval as PostgreSQL sends one: µs, days, months.
        let iv: ArrayRef = Arc::new(datafusion::arrow::array::IntervalMonthDayNanoArray::from(
            vec![datafusion::arrow::datatypes::IntervalMonthDayNano::new(
                2, 1, 3_000,
            )],
        ));
        assert_eq!(
            send(iv, 0).unwrap(),
            "0000000000000003".to_string() + "00000001" + "00000002"
        );
        // Types iolab has no PostgreSQL type for are reported (and sent) as text.
        let duration: ArrayRef = Arc::new(
            datafusion::arrow::array::DurationMicrosecondArray::from(vec![1_000_000]),
        );
        assert_eq!(pg_type_for(duration.data_type()), PgType::Text);
        let dict: datafusion::arrow::array::DictionaryArray<
            datafusion::arrow::datatypes::Int32Type,
        > = vec!["x", "y"].into_iter().collect();
        assert_eq!(send(Arc::new(dict), 1).unwrap(), hex(b"y"));
    }
}
