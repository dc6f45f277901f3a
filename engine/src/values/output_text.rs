//! PostgreSQL's text output: Arrow values → the text a client sees.
//!
//! [`write_text`] appends one value in the text format of the PostgreSQL type the column is
//! reported as ([`super::pg_type_for`]), the way PostgreSQL 18's output functions write it:
//!
//! | Arrow | text (verified on PostgreSQL 18) |
//! |---|---|
//! | Boolean | `t`, `f` |
//! | Float32/Float64 | shortest round-trip digits, exponent outside 1e-4 ≤ \|x\| < 1e15 (float8) or 1e6 (float4): `1e+15`, `1.5e-07`, `-0`, `NaN`, `-Infinity` |
//! | Decimal128(p,s) | exactly `s` fraction digits: `1.50`, `-0.001` |
//! | Date32/Date64 | `2024-01-31`, `0044-03-15 BC`, `infinity` |
//! | Timestamp(_, None) | `2024-01-31 12:34:56.789` (fraction trimmed) |
//! | Timestamp(_, Some) | `2024-01-31 12:34:56.789+00`, `…+05:30`, `…-00:53:28` in the session zone |
//! | Interval, Duration | `1 year 2 mons -3 days +04:05:06.5` (IntervalStyle `postgres`) |
//! | List | `{1,2,NULL}`, `{"a b","x\\y"}` |
//! | Struct | `(1,"a b",)` |
//! | Binary | `\x0102ff` (bytea hex) |
//!
//! Anything else falls back to Arrow's display formatter.

use super::datetime::{
    civil_from_days, SessionZone, DATE_NEG_INFINITY, DATE_POS_INFINITY, TS_NEG_INFINITY,
    TS_POS_INFINITY, USECS_PER_DAY,
};
use super::TextFormat;
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    ArrowDictionaryKeyType, ArrowNativeType, DataType, Date32Type, Date64Type, Decimal128Type,
    Decimal256Type, Decimal32Type, Decimal64Type, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Float16Type, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, Int8Type, IntervalDayTimeType, IntervalMonthDayNanoType, IntervalUnit,
    IntervalYearMonthType, Time32MillisecondType, Time32SecondType, Time64MicrosecondType,
    Time64NanosecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use std::fmt::Write as _;

/// Appends the text of `array[row]` to `out`. Returns `false` (and appends nothing) for NULL.
pub fn write_text(array: &dyn Array, row: usize, fmt: &TextFormat, out: &mut Vec<u8>) -> bool {
    if array.is_null(row) {
        return false;
    }
    match array.data_type() {
        DataType::Null => return false,
        DataType::Boolean => out.push(if array.as_boolean().value(row) {
            b't'
        } else {
            b'f'
        }),
        DataType::Int8 => write_i64(i64::from(array.as_primitive::<Int8Type>().value(row)), out),
        DataType::Int16 => write_i64(i64::from(array.as_primitive::<Int16Type>().value(row)), out),
        DataType::Int32 => write_i64(i64::from(array.as_primitive::<Int32Type>().value(row)), out),
        DataType::Int64 => write_i64(array.as_primitive::<Int64Type>().value(row), out),
        DataType::UInt8 => write_u64(u64::from(array.as_primitive::<UInt8Type>().value(row)), out),
        DataType::UInt16 => write_u64(
            u64::from(array.as_primitive::<UInt16Type>().value(row)),
            out,
        ),
        DataType::UInt32 => write_u64(
            u64::from(array.as_primitive::<UInt32Type>().value(row)),
            out,
        ),
        DataType::UInt64 => write_u64(array.as_primitive::<UInt64Type>().value(row), out),
        DataType::Float16 => {
            let v = array.as_primitive::<Float16Type>().value(row).to_f32();
            format_float4(v, fmt.extra_float_digits, out)
        }
        DataType::Float32 => format_float4(
            array.as_primitive::<Float32Type>().value(row),
            fmt.extra_float_digits,
            out,
        ),
        DataType::Float64 => format_float8(
            array.as_primitive::<Float64Type>().value(row),
            fmt.extra_float_digits,
            out,
        ),
        DataType::Decimal32(_, s) => format_decimal(
            i128::from(array.as_primitive::<Decimal32Type>().value(row)),
            *s,
            out,
        ),
        DataType::Decimal64(_, s) => format_decimal(
            i128::from(array.as_primitive::<Decimal64Type>().value(row)),
            *s,
            out,
        ),
        DataType::Decimal128(_, s) => {
            format_decimal(array.as_primitive::<Decimal128Type>().value(row), *s, out)
        }
        DataType::Decimal256(_, s) => {
            let v = array.as_primitive::<Decimal256Type>().value(row);
            format_decimal_digits(v.to_string().as_bytes(), *s, out)
        }
        DataType::Utf8 => out.extend_from_slice(array.as_string::<i32>().value(row).as_bytes()),
        DataType::LargeUtf8 => {
            out.extend_from_slice(array.as_string::<i64>().value(row).as_bytes())
        }
        DataType::Utf8View => out.extend_from_slice(array.as_string_view().value(row).as_bytes()),
        DataType::Binary => format_bytea(array.as_binary::<i32>().value(row), out),
        DataType::LargeBinary => format_bytea(array.as_binary::<i64>().value(row), out),
        DataType::BinaryView => format_bytea(array.as_binary_view().value(row), out),
        DataType::FixedSizeBinary(_) => format_bytea(array.as_fixed_size_binary().value(row), out),
        DataType::Date32 => format_date(array.as_primitive::<Date32Type>().value(row), out),
        DataType::Date64 => {
            let ms = array.as_primitive::<Date64Type>().value(row);
            format_date(
                ms.div_euclid(86_400_000)
                    .clamp(i64::from(i32::MIN + 1), i64::from(i32::MAX - 1)) as i32,
                out,
            )
        }
        DataType::Timestamp(unit, zone) => {
            let micros = timestamp_micros(array, *unit, row);
            match zone {
                None => format_timestamp(micros, out),
                Some(_) => format_timestamptz(micros, &fmt.time_zone, out),
            }
        }
        DataType::Time32(TimeUnit::Second) => {
            let s = array.as_primitive::<Time32SecondType>().value(row);
            format_time(i64::from(s) * 1_000_000, out)
        }
        DataType::Time32(_) => {
            let ms = array.as_primitive::<Time32MillisecondType>().value(row);
            format_time(i64::from(ms) * 1000, out)
        }
        DataType::Time64(TimeUnit::Microsecond) => format_time(
            array.as_primitive::<Time64MicrosecondType>().value(row),
            out,
        ),
        DataType::Time64(_) => {
            let ns = array.as_primitive::<Time64NanosecondType>().value(row);
            format_time(div_round(ns, 1000), out)
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
            format_interval(v.months, v.days, div_round(v.nanoseconds, 1000), out)
        }
        DataType::Interval(IntervalUnit::DayTime) => {
            let v = array.as_primitive::<IntervalDayTimeType>().value(row);
            format_interval(0, v.days, i64::from(v.milliseconds) * 1000, out)
        }
        DataType::Interval(IntervalUnit::YearMonth) => format_interval(
            array.as_primitive::<IntervalYearMonthType>().value(row),
            0,
            0,
            out,
        ),
        DataType::Duration(unit) => {
            let micros = match unit {
                TimeUnit::Second => array
                    .as_primitive::<DurationSecondType>()
                    .value(row)
                    .saturating_mul(1_000_000),
                TimeUnit::Millisecond => array
                    .as_primitive::<DurationMillisecondType>()
                    .value(row)
                    .saturating_mul(1000),
                TimeUnit::Microsecond => array.as_primitive::<DurationMicrosecondType>().value(row),
                TimeUnit::Nanosecond => div_round(
                    array.as_primitive::<DurationNanosecondType>().value(row),
                    1000,
                ),
            };
            // As PostgreSQL's timestamp subtraction does: whole days, then the time.
            let days = micros / USECS_PER_DAY;
            format_interval(
                0,
                days.clamp(i32::MIN as i64, i32::MAX as i64) as i32,
                micros % USECS_PER_DAY,
                out,
            )
        }
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            write_array_literal(list.value(row).as_ref(), fmt, out)
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            write_array_literal(list.value(row).as_ref(), fmt, out)
        }
        DataType::FixedSizeList(..) => {
            let list = array.as_fixed_size_list();
            write_array_literal(list.value(row).as_ref(), fmt, out)
        }
        DataType::Struct(_) => write_record(array, row, fmt, out),
        DataType::Dictionary(..) => match dictionary_entry(array, row) {
            Some((values, index)) => return write_text(values.as_ref(), index, fmt, out),
            None => write_with_arrow(array, row, out),
        },
        _ => write_with_arrow(array, row, out),
    }
    true
}

/// The text of `array[row]` as a `String`, `None` for NULL.
pub fn text_value(array: &dyn Array, row: usize, fmt: &TextFormat) -> Option<String> {
    let mut out = Vec::new();
    if !write_text(array, row, fmt, &mut out) {
        return None;
    }
    // Every writer above appends UTF-8: strings come from UTF-8 arrays, the rest is ASCII.
    Some(
        String::from_utf8(out)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

fn write_with_arrow(array: &dyn Array, row: usize, out: &mut Vec<u8>) {
    match ArrayFormatter::try_new(array, &FormatOptions::default()) {
        Ok(f) => {
            let _ = write!(VecWriter(out), "{}", f.value(row));
        }
        Err(e) => {
            let _ = write!(VecWriter(out), "<{e}>");
        }
    }
}

struct VecWriter<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for VecWriter<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// The values array and index a dictionary-encoded `array[row]` refers to (`None` for other
/// arrays and for unusual key types).
pub(crate) fn dictionary_entry(array: &dyn Array, row: usize) -> Option<(&ArrayRef, usize)> {
    fn entry<K: ArrowDictionaryKeyType>(array: &dyn Array, row: usize) -> (&ArrayRef, usize) {
        let dict = array.as_dictionary::<K>();
        (dict.values(), dict.keys().values()[row].as_usize())
    }
    let DataType::Dictionary(key, _) = array.data_type() else {
        return None;
    };
    Some(match key.as_ref() {
        DataType::Int8 => entry::<Int8Type>(array, row),
        DataType::Int16 => entry::<Int16Type>(array, row),
        DataType::Int32 => entry::<Int32Type>(array, row),
        DataType::Int64 => entry::<Int64Type>(array, row),
        DataType::UInt8 => entry::<UInt8Type>(array, row),
        DataType::UInt16 => entry::<UInt16Type>(array, row),
        DataType::UInt32 => entry::<UInt32Type>(array, row),
        DataType::UInt64 => entry::<UInt64Type>(array, row),
        _ => return None,
    })
}

/// µs since 1970 of a timestamp in any unit; `i64::MAX`/`MIN` stay the infinity sentinels.
pub(crate) fn timestamp_micros(array: &dyn Array, unit: TimeUnit, row: usize) -> i64 {
    let v = match unit {
        TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(row),
        TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().value(row),
        TimeUnit::Microsecond => {
            return array.as_primitive::<TimestampMicrosecondType>().value(row)
        }
        TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().value(row),
    };
    timestamp_to_micros(v, unit)
}

/// Converts a timestamp value of `unit` to µs (rounding nanoseconds half away from zero).
pub(crate) fn timestamp_to_micros(v: i64, unit: TimeUnit) -> i64 {
    if v == i64::MAX || v == i64::MIN {
        return v;
    }
    match unit {
        TimeUnit::Second => v.saturating_mul(1_000_000),
        TimeUnit::Millisecond => v.saturating_mul(1000),
        TimeUnit::Microsecond => v,
        TimeUnit::Nanosecond => div_round(v, 1000),
    }
}

/// `v / d` rounded half away from zero.
fn div_round(v: i64, d: i64) -> i64 {
    let q = v / d;
    let r = v % d;
    if r.abs() * 2 >= d {
        q + v.signum()
    } else {
        q
    }
}

// ---------------------------------------------------------------------------------------------
// numbers

pub(crate) fn write_u64(mut n: u64, out: &mut Vec<u8>) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

pub(crate) fn write_i64(v: i64, out: &mut Vec<u8>) {
    if v < 0 {
        out.push(b'-');
    }
    write_u64(v.unsigned_abs(), out)
}

fn write_u128(mut n: u128, out: &mut Vec<u8>) {
    if n <= u128::from(u64::MAX) {
        return write_u64(n as u64, out);
    }
    let mut buf = [0u8; 40];
    let mut i = buf.len();
    while n > 0 {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
    }
    out.extend_from_slice(&buf[i..]);
}

/// `numeric_out` of a Decimal128 value at `scale`: exactly `scale` fraction digits
/// (a negative scale multiplies: `12` at scale -1 is `120`).
pub fn format_decimal(v: i128, scale: i8, out: &mut Vec<u8>) {
    if v < 0 {
        out.push(b'-');
    }
    let magnitude = v.unsigned_abs();
    if scale <= 0 {
        write_u128(magnitude, out);
        if magnitude != 0 {
            out.extend(std::iter::repeat_n(b'0', scale.unsigned_abs() as usize));
        }
        return;
    }
    let start = out.len();
    write_u128(magnitude, out);
    insert_decimal_point(out, start, scale as usize);
}

/// Decimal digits (with an optional leading `-`) of an unscaled value, formatted at `scale`.
fn format_decimal_digits(text: &[u8], scale: i8, out: &mut Vec<u8>) {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if negative {
        out.push(b'-');
    }
    let start = out.len();
    out.extend_from_slice(digits);
    if scale <= 0 {
        if digits != b"0" {
            out.extend(std::iter::repeat_n(b'0', scale.unsigned_abs() as usize));
        }
    } else {
        insert_decimal_point(out, start, scale as usize);
    }
}

/// Turns the digits `out[start..]` into `int.frac` with `scale` fraction digits.
fn insert_decimal_point(out: &mut Vec<u8>, start: usize, scale: usize) {
    let len = out.len() - start;
    if len <= scale {
        // 0.00ddd: pad with zeros in front
        let pad = scale + 1 - len;
        out.splice(start..start, std::iter::repeat_n(b'0', pad));
    }
    let point = out.len() - scale;
    out.insert(point, b'.');
}

/// A small stack buffer for Rust's float formatting.
struct StackBuf {
    buf: [u8; 80],
    len: usize,
}

impl StackBuf {
    fn new() -> StackBuf {
        StackBuf {
            buf: [0; 80],
            len: 0,
        }
    }
    fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Splits Rust's `{:e}` text (`-1.2345e-7`) into sign, digits and decimal exponent.
fn split_scientific(text: &[u8]) -> (bool, ([u8; 40], usize), i32) {
    let (negative, rest) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    let e = rest.iter().position(|&c| c == b'e').unwrap_or(rest.len());
    let mut digits = [0u8; 40];
    let mut n = 0;
    for &c in &rest[..e] {
        if c.is_ascii_digit() && n < digits.len() {
            digits[n] = c;
            n += 1;
        }
    }
    let exp = std::str::from_utf8(&rest[(e + 1).min(rest.len())..])
        .ok()
        .and_then(|s| s.parse::<i32>().ok())
        .unwrap_or(0);
    (negative, (digits, n), exp)
}

/// Writes `d.ddd × 10^exp` PostgreSQL's way: fixed notation for `-4 <= exp < fixed_below`,
/// otherwise `d.ddde±XX`. Trailing zeros of `digits` must already be gone.
fn write_pg_float_digits(
    negative: bool,
    digits: &[u8],
    exp: i32,
    fixed_below: i32,
    out: &mut Vec<u8>,
) {
    if negative {
        out.push(b'-');
    }
    if exp < -4 || exp >= fixed_below {
        out.push(digits[0]);
        if digits.len() > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if exp < 0 { b'-' } else { b'+' });
        let e = exp.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        write_u64(u64::from(e), out);
    } else if exp >= 0 {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.extend_from_slice(digits);
            out.extend(std::iter::repeat_n(b'0', int_len - digits.len()));
        } else {
            out.extend_from_slice(&digits[..int_len]);
            out.push(b'.');
            out.extend_from_slice(&digits[int_len..]);
        }
    } else {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-exp - 1) as usize));
        out.extend_from_slice(digits);
    }
}

fn strip_trailing_zeros(digits: &[u8]) -> &[u8] {
    let mut n = digits.len();
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    &digits[..n]
}

/// `float8out`: shortest round-trip digits when `extra_float_digits > 0`, else `%.{15+efd}g`.
pub fn format_float8(v: f64, extra_float_digits: i32, out: &mut Vec<u8>) {
    // Shortest digits of a whole number below 10^15 (counters, zeros) are its integer
    // digits; -0 keeps its sign through the general path.
    let whole = v.fract() == 0.0 && v.abs() < 1e15 && !(v == 0.0 && v.is_sign_negative());
    if whole && extra_float_digits > 0 {
        write_i64(v as i64, out)
    } else if !special_float(v.is_nan(), v.is_infinite(), v < 0.0, out) {
        format_float(v, 15, extra_float_digits, out)
    }
}

/// `float4out`: shortest round-trip digits when `extra_float_digits > 0`, else `%.{6+efd}g`.
pub fn format_float4(v: f32, extra_float_digits: i32, out: &mut Vec<u8>) {
    if !special_float(v.is_nan(), v.is_infinite(), v < 0.0, out) {
        format_float(v, 6, extra_float_digits, out)
    }
}

fn special_float(nan: bool, infinite: bool, negative: bool, out: &mut Vec<u8>) -> bool {
    if nan {
        out.extend_from_slice(b"NaN");
    } else if infinite {
        out.extend_from_slice(if negative { b"-Infinity" } else { b"Infinity" });
    } else {
        return false;
    }
    true
}

fn format_float<F: std::fmt::LowerExp>(
    v: F,
    type_digits: i32,
    extra_float_digits: i32,
    out: &mut Vec<u8>,
) {
    let mut buf = StackBuf::new();
    let fixed_below = if extra_float_digits > 0 {
        // Rust's `{:e}` prints the shortest digits that read back to the same value (Ryu-like),
        // which is what PostgreSQL prints since version 12.
        let _ = write!(buf, "{v:e}");
        type_digits
    } else {
        let precision = (type_digits + extra_float_digits).max(1);
        let _ = write!(buf, "{:.*e}", (precision - 1) as usize, v);
        precision
    };
    let (negative, (digits, n), exp) = split_scientific(buf.as_bytes());
    write_pg_float_digits(
        negative,
        strip_trailing_zeros(&digits[..n]),
        exp,
        fixed_below,
        out,
    );
}

fn format_bytea(bytes: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(2 + bytes.len() * 2);
    out.extend_from_slice(b"\\x");
    for &b in bytes {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 15) as usize]);
    }
}

// ---------------------------------------------------------------------------------------------
// dates and times

fn write_2(v: u32, out: &mut Vec<u8>) {
    out.push(b'0' + (v / 10 % 10) as u8);
    out.push(b'0' + (v % 10) as u8);
}

/// `YYYY-MM-DD`, year at least four digits; returns whether it is BC (for the caller's suffix).
fn write_ymd(days: i64, out: &mut Vec<u8>) -> bool {
    let (year, month, day) = civil_from_days(days);
    let bc = year <= 0;
    let shown = if bc { 1 - year } else { year } as u64;
    if shown < 1000 {
        out.extend(std::iter::repeat_n(b'0', 4 - digits_of(shown)));
    }
    write_u64(shown, out);
    out.push(b'-');
    write_2(month, out);
    out.push(b'-');
    write_2(day, out);
    bc
}

fn digits_of(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 10 {
        v /= 10;
        n += 1;
    }
    n
}

/// `date_out`: `2024-01-31`, `0044-03-15 BC`, `infinity`, `-infinity`.
pub fn format_date(days: i32, out: &mut Vec<u8>) {
    match days {
        DATE_POS_INFINITY => out.extend_from_slice(b"infinity"),
        DATE_NEG_INFINITY => out.extend_from_slice(b"-infinity"),
        _ => {
            if write_ymd(i64::from(days), out) {
                out.extend_from_slice(b" BC");
            }
        }
    }
}

/// `HH:MM:SS[.ffffff]` of µs into a day (hours may exceed 23 for intervals), trailing
/// fraction zeros trimmed.
fn write_hms(micros: u64, out: &mut Vec<u8>) {
    let secs = micros / 1_000_000;
    let fraction = micros % 1_000_000;
    let hours = secs / 3600;
    if hours < 10 {
        out.push(b'0');
    }
    write_u64(hours, out);
    out.push(b':');
    write_2((secs / 60 % 60) as u32, out);
    out.push(b':');
    write_2((secs % 60) as u32, out);
    if fraction != 0 {
        out.push(b'.');
        let mut digits = [b'0'; 6];
        let mut f = fraction;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (f % 10) as u8;
            f /= 10;
        }
        out.extend_from_slice(strip_trailing_zeros(&digits));
    }
}

/// `time_out` of µs since midnight.
pub fn format_time(micros: i64, out: &mut Vec<u8>) {
    write_hms(micros.rem_euclid(USECS_PER_DAY) as u64, out)
}

/// Returns whether the timestamp was an infinity (and wrote it).
fn write_infinity(micros: i64, out: &mut Vec<u8>) -> bool {
    match micros {
        TS_POS_INFINITY => out.extend_from_slice(b"infinity"),
        TS_NEG_INFINITY => out.extend_from_slice(b"-infinity"),
        _ => return false,
    }
    true
}

fn write_local_timestamp(local: i64, out: &mut Vec<u8>) -> bool {
    let days = local.div_euclid(USECS_PER_DAY);
    let bc = write_ymd(days, out);
    out.push(b' ');
    write_hms(local.rem_euclid(USECS_PER_DAY) as u64, out);
    bc
}

/// `timestamp_out`: `2024-01-31 12:34:56.789`.
pub fn format_timestamp(micros: i64, out: &mut Vec<u8>) {
    if !write_infinity(micros, out) && write_local_timestamp(micros, out) {
        out.extend_from_slice(b" BC");
    }
}

/// `timestamptz_out` in `zone`: `2024-01-31 12:34:56.789+00`, `+05:30`, `-00:53:28`.
pub fn format_timestamptz(micros: i64, zone: &SessionZone, out: &mut Vec<u8>) {
    if write_infinity(micros, out) {
        return;
    }
    let (local, east) = zone.utc_to_local(micros);
    let bc = write_local_timestamp(local, out);
    write_offset(east, out);
    if bc {
        out.extend_from_slice(b" BC");
    }
}

/// `+hh`, `+hh:mm` or `+hh:mm:ss` for an offset east of UTC in seconds.
pub fn write_offset(east_secs: i32, out: &mut Vec<u8>) {
    out.push(if east_secs < 0 { b'-' } else { b'+' });
    let a = east_secs.unsigned_abs();
    write_2(a / 3600, out);
    if !a.is_multiple_of(3600) {
        out.push(b':');
        write_2(a / 60 % 60, out);
        if !a.is_multiple_of(60) {
            out.push(b':');
            write_2(a % 60, out);
        }
    }
}

/// `interval_out` with IntervalStyle `postgres`: `1 year 2 mons -3 days +04:05:06.5`.
pub fn format_interval(months: i32, days: i32, micros: i64, out: &mut Vec<u8>) {
    // Each field after a negative one carries an explicit sign, as PostgreSQL writes it.
    let mut is_zero = true;
    let mut after_negative = false;
    let mut field = |value: i64, unit: &[u8], out: &mut Vec<u8>| {
        if value == 0 {
            return;
        }
        if !is_zero {
            out.push(b' ');
        }
        if after_negative && value > 0 {
            out.push(b'+');
        }
        write_i64(value, out);
        out.push(b' ');
        out.extend_from_slice(unit);
        if value != 1 {
            out.push(b's');
        }
        after_negative = value < 0;
        is_zero = false;
    };
    field(i64::from(months / 12), b"year", out);
    field(i64::from(months % 12), b"mon", out);
    field(i64::from(days), b"day", out);
    if is_zero || micros != 0 {
        if !is_zero {
            out.push(b' ');
        }
        if micros < 0 {
            out.push(b'-');
        } else if after_negative {
            out.push(b'+');
        }
        write_hms(micros.unsigned_abs(), out);
    }
}

// ---------------------------------------------------------------------------------------------
// arrays and records

/// `array_out`: `{1,2,NULL}`, nested lists as `{{1,2},{3,4}}`, elements quoted when needed.
fn write_array_literal(values: &dyn Array, fmt: &TextFormat, out: &mut Vec<u8>) {
    out.push(b'{');
    let nested = matches!(
        values.data_type(),
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
    );
    let mut element = Vec::new();
    for i in 0..values.len() {
        if i > 0 {
            out.push(b',');
        }
        if nested {
            if !write_text(values, i, fmt, out) {
                out.extend_from_slice(b"NULL");
            }
            continue;
        }
        element.clear();
        if !write_text(values, i, fmt, &mut element) {
            out.extend_from_slice(b"NULL");
            continue;
        }
        let needs_quotes = element.is_empty()
            || element.eq_ignore_ascii_case(b"NULL")
            || element.iter().any(|&c| {
                matches!(c, b'{' | b'}' | b',' | b'"' | b'\\') || super::input::is_pg_space(c)
            });
        if needs_quotes {
            out.push(b'"');
            for &c in &element {
                if c == b'"' || c == b'\\' {
                    out.push(b'\\');
                }
                out.push(c);
            }
            out.push(b'"');
        } else {
            out.extend_from_slice(&element);
        }
    }
    out.push(b'}');
}

/// `record_out`: `(1,"a b",)`, NULL fields empty, quotes doubled inside quotes.
fn write_record(array: &dyn Array, row: usize, fmt: &TextFormat, out: &mut Vec<u8>) {
    let record = array.as_struct();
    out.push(b'(');
    let mut field = Vec::new();
    for (i, column) in record.columns().iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        field.clear();
        if !write_text(column.as_ref(), row, fmt, &mut field) {
            continue;
        }
        let needs_quotes = field.is_empty()
            || field.iter().any(|&c| {
                matches!(c, b'(' | b')' | b',' | b'"' | b'\\') || super::input::is_pg_space(c)
            });
        if needs_quotes {
            out.push(b'"');
            for &c in &field {
                if c == b'"' || c == b'\\' {
                    out.push(c);
                }
                out.push(c);
            }
            out.push(b'"');
        } else {
            out.extend_from_slice(&field);
        }
    }
    out.push(b')');
}

#[cfg(test)]
mod tests {
    //! Expected texts were printed by PostgreSQL 18.4 for the same values.
    use super::*;
    use crate::values::datetime::days_from_civil;
    use datafusion::arrow::array::{
        ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, DictionaryArray,
        DurationMicrosecondArray, Float32Array, Float64Array, Int32Array, Int64Array,
        IntervalMonthDayNanoArray, LargeStringArray, ListArray, StringArray, StringViewArray,
        StructArray, TimestampMicrosecondArray, TimestampMillisecondArray,
        TimestampNanosecondArray, TimestampSecondArray, UInt64Array,
    };
    use datafusion::arrow::datatypes::{Field, Int32Type, IntervalMonthDayNano};
    use std::sync::Arc;

    fn text(array: &dyn Array, row: usize, fmt: &TextFormat) -> Option<String> {
        text_value(array, row, fmt)
    }

    fn f8(v: f64, efd: i32) -> String {
        let mut out = Vec::new();
        format_float8(v, efd, &mut out);
        String::from_utf8(out).unwrap()
    }

    fn f4(v: f32, efd: i32) -> String {
        let mut out = Vec::new();
        format_float4(v, efd, &mut out);
        String::from_utf8(out).unwrap()
    }

    /// `SELECT x, x::float8::text, x::float4::text` with extra_float_digits = 1 (the default).
    #[test]
    fn floats_shortest_like_postgres() {
        let cases: &[(&str, &str, &str)] = &[
            ("0", "0", "0"),
            ("-0", "-0", "-0"),
            ("1", "1", "1"),
            ("-1", "-1", "-1"),
            ("0.1", "0.1", "0.1"),
            ("1.5", "1.5", "1.5"),
            ("100", "100", "100"),
            ("1e14", "100000000000000", "1e+14"),
            ("1e15", "1e+15", "1e+15"),
            ("123456789012345", "123456789012345", "1.2345679e+14"),
            ("1234567890123456", "1.234567890123456e+15", "1.234568e+15"),
            ("1e16", "1e+16", "1e+16"),
            ("1e20", "1e+20", "1e+20"),
            ("1e21", "1e+21", "1e+21"),
            ("1e22", "1e+22", "1e+22"),
            ("0.0001", "0.0001", "0.0001"),
            ("0.00001", "1e-05", "1e-05"),
            ("0.000123", "0.000123", "0.000123"),
            ("1.5e-7", "1.5e-07", "1.5e-07"),
            ("3.14159265358979", "3.14159265358979", "3.1415927"),
            ("1e6", "1000000", "1e+06"),
            ("1234567", "1234567", "1.234567e+06"),
            ("12345678", "12345678", "1.2345678e+07"),
            ("123456", "123456", "123456"),
            ("1e5", "100000", "100000"),
            ("0.1234567", "0.1234567", "0.1234567"),
            ("-123.456", "-123.456", "-123.456"),
            ("0.3", "0.3", "0.3"),
            ("1e-10", "1e-10", "1e-10"),
            ("123456.7", "123456.7", "123456.7"),
            ("9999999", "9999999", "9.999999e+06"),
            ("99999999", "99999999", "1e+08"),
            ("1e7", "10000000", "1e+07"),
            ("1.0000001", "1.0000001", "1.0000001"),
            ("16777217", "16777217", "1.6777216e+07"),
            ("2.5", "2.5", "2.5"),
            ("Infinity", "Infinity", "Infinity"),
            ("-Infinity", "-Infinity", "-Infinity"),
        ];
        for (x, want8, want4) in cases {
            let v: f64 = x.parse().unwrap();
            assert_eq!(f8(v, 1), *want8, "float8 {x}");
            assert_eq!(f4(v as f32, 1), *want4, "float4 {x}");
        }
        let doubles_only: &[(&str, &str)] = &[
            ("1.7976931348623157e308", "1.7976931348623157e+308"),
            ("5e-324", "5e-324"),
            ("2.2250738585072014e-308", "2.2250738585072014e-308"),
            ("3.4028235e38", "3.4028235e+38"),
            ("1.4e-45", "1.4e-45"),
            ("1e100", "1e+100"),
            ("1.23e-100", "1.23e-100"),
        ];
        for (x, want) in doubles_only {
            assert_eq!(f8(x.parse().unwrap(), 1), *want, "{x}");
        }
        assert_eq!(f8(f64::NAN, 1), "NaN");
        assert_eq!(f4(f32::NAN, 1), "NaN");
        // 0.1::float4::float8 shows the float4's binary value in full.
        assert_eq!(f8(f64::from(0.1f32), 1), "0.10000000149011612");
        assert_eq!(f8(0.1 + 0.2, 1), "0.30000000000000004");
    }

    /// The same values under SET extra_float_digits = 0, -3, -15 and 3.
    #[test]
    fn floats_with_extra_float_digits_like_postgres() {
        let values = [
            "0",
            "-0",
            "0.1",
            "1e14",
            "1e15",
            "123456789012345",
            "1234567890123456",
            "1e-5",
            "3.14159265358979",
            "1e6",
            "1234567",
            "0.1234567",
            "1e-10",
            "123456.7",
            "2.5",
            "NaN",
            "-Infinity",
            "100",
            "0.3",
            "1e-4",
            "0.00012345678",
        ];
        let expected: &[(i32, [&str; 21], [&str; 21])] = &[
            (
                0,
                [
                    "0",
                    "-0",
                    "0.1",
                    "100000000000000",
                    "1e+15",
                    "123456789012345",
                    "1.23456789012346e+15",
                    "1e-05",
                    "3.14159265358979",
                    "1000000",
                    "1234567",
                    "0.1234567",
                    "1e-10",
                    "123456.7",
                    "2.5",
                    "NaN",
                    "-Infinity",
                    "100",
                    "0.3",
                    "0.0001",
                    "0.00012345678",
                ],
                [
                    "0",
                    "-0",
                    "0.1",
                    "1e+14",
                    "1e+15",
                    "1.23457e+14",
                    "1.23457e+15",
                    "1e-05",
                    "3.14159",
                    "1e+06",
                    "1.23457e+06",
                    "0.123457",
                    "1e-10",
                    "123457",
                    "2.5",
                    "NaN",
                    "-Infinity",
                    "100",
                    "0.3",
                    "0.0001",
                    "0.000123457",
                ],
            ),
            (
                -3,
                [
                    "0",
                    "-0",
                    "0.1",
                    "1e+14",
                    "1e+15",
                    "1.23456789012e+14",
                    "1.23456789012e+15",
                    "1e-05",
                    "3.14159265359",
                    "1000000",
                    "1234567",
                    "0.1234567",
                    "1e-10",
                    "123456.7",
                    "2.5",
                    "NaN",
                    "-Infinity",
                    "100",
                    "0.3",
                    "0.0001",
                    "0.00012345678",
                ],
                [
                    "0",
                    "-0",
                    "0.1",
                    "1e+14",
                    "1e+15",
                    "1.23e+14",
                    "1.23e+15",
                    "1e-05",
                    "3.14",
                    "1e+06",
                    "1.23e+06",
                    "0.123",
                    "1e-10",
                    "1.23e+05",
                    "2.5",
                    "NaN",
                    "-Infinity",
                    "100",
                    "0.3",
                    "0.0001",
                    "0.000123",
                ],
            ),
            (
                -15,
                [
                    "0",
                    "-0",
                    "0.1",
                    "1e+14",
                    "1e+15",
                    "1e+14",
                    "1e+15",
                    "1e-05",
                    "3",
                    "1e+06",
                    "1e+06",
                    "0.1",
                    "1e-10",
                    "1e+05",
                    "2",
                    "NaN",
                    "-Infinity",
                    "1e+02",
                    "0.3",
                    "0.0001",
                    "0.0001",
                ],
                [
                    "0",
                    "-0",
                    "0.1",
                    "1e+14",
                    "1e+15",
                    "1e+14",
                    "1e+15",
                    "1e-05",
                    "3",
                    "1e+06",
                    "1e+06",
                    "0.1",
                    "1e-10",
                    "1e+05",
                    "2",
                    "NaN",
                    "-Infinity",
                    "1e+02",
                    "0.3",
                    "0.0001",
                    "0.0001",
                ],
            ),
            (
                3,
                [
                    "0",
                    "-0",
                    "0.1",
                    "100000000000000",
                    "1e+15",
                    "123456789012345",
                    "1.234567890123456e+15",
                    "1e-05",
                    "3.14159265358979",
                    "1000000",
                    "1234567",
                    "0.1234567",
                    "1e-10",
                    "123456.7",
                    "2.5",
                    "NaN",
                    "-Infinity",
                    "100",
                    "0.3",
                    "0.0001",
                    "0.00012345678",
                ],
                [
                    "0",
                    "-0",
                    "0.1",
                    "1e+14",
                    "1e+15",
                    "1.2345679e+14",
                    "1.234568e+15",
                    "1e-05",
                    "3.1415927",
                    "1e+06",
                    "1.234567e+06",
                    "0.1234567",
                    "1e-10",
                    "123456.7",
                    "2.5",
                    "NaN",
                    "-Infinity",
                    "100",
                    "0.3",
                    "0.0001",
                    "0.00012345678",
                ],
            ),
        ];
        for (efd, want8, want4) in expected {
            for (i, x) in values.iter().enumerate() {
                let v: f64 = x.parse().unwrap();
                assert_eq!(f8(v, *efd), want8[i], "float8 {x} efd {efd}");
                assert_eq!(f4(v as f32, *efd), want4[i], "float4 {x} efd {efd}");
            }
        }
    }

    #[test]
    fn numeric_shows_the_column_scale() {
        let d = |v: i128, p: u8, s: i8| {
            let a = Decimal128Array::from(vec![v])
                .with_precision_and_scale(p, s)
                .unwrap();
            text(&a, 0, &TextFormat::default()).unwrap()
        };
        assert_eq!(d(150, 10, 2), "1.50");
        assert_eq!(d(-150, 10, 2), "-1.50");
        assert_eq!(d(-1, 10, 3), "-0.001");
        assert_eq!(d(0, 10, 2), "0.00");
        assert_eq!(d(5, 10, 0), "5");
        assert_eq!(d(12500, 6, 3), "12.500"); // 12.50::numeric(6,3)::text
        assert_eq!(d(12, 5, -1), "120"); // 123.456::numeric(5,-1)
        assert_eq!(d(0, 5, -1), "0");
        assert_eq!(
            d(i128::MAX, 38, 0),
            "170141183460469231731687303715884105727"
        );
        assert_eq!(
            d(-12345678901234567890123456789012345678, 38, 38),
            "-0.12345678901234567890123456789012345678"
        );
    }

    #[test]
    fn dates_and_timestamps_like_postgres() {
        let fmt = TextFormat::default();
        let days = |y, m, d| days_from_civil(y, m, d) as i32;
        let dates = Date32Array::from(vec![
            days(2024, 1, 31),
            days(0, 1, 1),
            days(-4712, 1, 1),
            days(44, 3, 14),
            days(5_874_897, 12, 31),
            i32::MAX,
            i32::MIN,
        ]);
        let want = [
            "2024-01-31",
            "0001-01-01 BC",
            "4713-01-01 BC",
            "0044-03-14",
            "5874897-12-31",
            "infinity",
            "-infinity",
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(text(&dates, i, &fmt).unwrap(), *w);
        }
        let us = |y, mo, d, h: i64, mi: i64, s: i64, f: i64| {
            days_from_civil(y, mo, d) * USECS_PER_DAY + ((h * 60 + mi) * 60 + s) * 1_000_000 + f
        };
        let stamps = TimestampMicrosecondArray::from(vec![
            us(2024, 1, 31, 12, 34, 56, 789_000),
            us(2024, 1, 31, 12, 34, 56, 0),
            us(2024, 1, 31, 12, 34, 56, 123_457),
            us(-2023, 1, 31, 12, 34, 56, 0),
            i64::MAX,
            i64::MIN,
            us(2024, 1, 31, 0, 0, 0, 500_000),
        ]);
        let want = [
            "2024-01-31 12:34:56.789",
            "2024-01-31 12:34:56",
            "2024-01-31 12:34:56.123457",
            "2024-01-31 12:34:56 BC",
            "infinity",
            "-infinity",
            "2024-01-31 00:00:00.5",
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(text(&stamps, i, &fmt).unwrap(), *w);
        }
        let tz = stamps.clone().with_timezone("+00:00");
        let want_utc = [
            "2024-01-31 12:34:56.789+00",
            "2024-01-31 12:34:56+00",
            "2024-01-31 12:34:56.123457+00",
            "2024-01-31 12:34:56+00 BC",
            "infinity",
            "-infinity",
            "2024-01-31 00:00:00.5+00",
        ];
        for (i, w) in want_utc.iter().enumerate() {
            assert_eq!(text(&tz, i, &fmt).unwrap(), *w);
        }
        // SET timezone = '5.5' / '+05:30' / '-03' / 'Asia/Kolkata' / 'Europe/Berlin'
        let in_zone = |zone: &str, micros: i64| {
            let f = TextFormat::default().with_time_zone(zone).unwrap();
            let a = TimestampMicrosecondArray::from(vec![micros]).with_timezone("+00:00");
            text(&a, 0, &f).unwrap()
        };
        let noon = us(2024, 1, 31, 12, 34, 56, 0);
        assert_eq!(
            in_zone("5.5", noon - 19_800_000_000),
            "2024-01-31 12:34:56+05:30"
        );
        assert_eq!(
            in_zone("+05:30", noon + 19_800_000_000),
            "2024-01-31 12:34:56-05:30"
        );
        assert_eq!(
            in_zone("-03", noon + 10_800_000_000),
            "2024-01-31 12:34:56-03"
        );
        assert_eq!(
            in_zone("America/St_Johns", noon + 12_600_000_000),
            "2024-01-31 12:34:56-03:30"
        );
        assert_eq!(
            in_zone("Asia/Kolkata", noon - 19_800_000_000),
            "2024-01-31 12:34:56+05:30"
        );
        assert_eq!(
            in_zone("Asia/Kolkata", us(1900, 1, 1, 0, 0, 0, 0) - 19_270_000_000),
            "1900-01-01 00:00:00+05:21:10"
        );
        assert_eq!(
            in_zone("Europe/Berlin", us(1850, 1, 1, 12, 0, 0, 0) - 3_208_000_000),
            "1850-01-01 12:00:00+00:53:28"
        );
        assert_eq!(
            in_zone("Europe/Berlin", us(2024, 7, 1, 10, 0, 0, 0)),
            "2024-07-01 12:00:00+02"
        );
        assert_eq!(
            in_zone(
                "Europe/Berlin",
                us(-2023, 1, 31, 12, 34, 56, 0) - 3_208_000_000
            ),
            "2024-01-31 12:34:56+00:53:28 BC"
        );
        // Other units convert to microseconds.
        let s = TimestampSecondArray::from(vec![1_706_704_496]);
        assert_eq!(text(&s, 0, &fmt).unwrap(), "2024-01-31 12:34:56");
        let ms = TimestampMillisecondArray::from(vec![1_706_704_496_789]);
        assert_eq!(text(&ms, 0, &fmt).unwrap(), "2024-01-31 12:34:56.789");
        let ns = TimestampNanosecondArray::from(vec![1_706_704_496_123_456_789]);
        assert_eq!(text(&ns, 0, &fmt).unwrap(), "2024-01-31 12:34:56.123457");
        let d64 = datafusion::arrow::array::Date64Array::from(vec![1_706_659_200_000]);
        assert_eq!(text(&d64, 0, &fmt).unwrap(), "2024-01-31");
    }

    #[test]
    fn intervals_in_postgres_style() {
        // SELECT x::interval for each input; months, days and µs as PostgreSQL stores them.
        let cases: &[((i32, i32, i64), &str)] = &[
            ((0, 1, 7_384_000_000), "1 day 02:03:04"),
            ((0, 0, 0), "00:00:00"),
            ((14, 0, 0), "1 year 2 mons"),
            ((0, -1, -7_384_000_000), "-1 days -02:03:04"),
            ((1, -1, 0), "1 mon -1 days"),
            ((0, 0, -1_500_000), "-00:00:01.5"),
            ((0, 0, 1), "00:00:00.000001"),
            ((14, 3, 3_600_000_000), "1 year 2 mons 3 days 01:00:00"),
            ((-12, 0, 0), "-1 years"),
            ((0, 0, 360_000_000_000), "100:00:00"),
            ((0, -1, 7_200_000_000), "-1 days +02:00:00"),
            ((0, 1, -7_200_000_000), "1 day -02:00:00"),
            ((25, 1, 1_250_000), "2 years 1 mon 1 day 00:00:01.25"),
            ((13, 0, 0), "1 year 1 mon"),
            ((-13, 5, 0), "-1 years -1 mons +5 days"),
        ];
        let fmt = TextFormat::default();
        for ((months, days, micros), want) in cases {
            let a = IntervalMonthDayNanoArray::from(vec![IntervalMonthDayNano::new(
                *months,
                *days,
                micros * 1000,
            )]);
            assert_eq!(text(&a, 0, &fmt).unwrap(), *want);
        }
        // timestamp - timestamp in DataFusion is a duration; PostgreSQL shows whole days.
        let d = DurationMicrosecondArray::from(vec![26 * 3_600_000_000, -90_000_000]);
        assert_eq!(text(&d, 0, &fmt).unwrap(), "1 day 02:00:00");
        assert_eq!(text(&d, 1, &fmt).unwrap(), "-00:01:30");
    }

    #[test]
    fn arrays_and_records_quote_like_postgres() {
        let fmt = TextFormat::default();
        // SELECT array[1,2,null]
        let ints = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2), None]),
            Some(vec![]),
            None,
        ]);
        assert_eq!(text(&ints, 0, &fmt).unwrap(), "{1,2,NULL}");
        assert_eq!(text(&ints, 1, &fmt).unwrap(), "{}");
        assert_eq!(text(&ints, 2, &fmt), None);
        // SELECT array['a b','c,d','"q"','','NULL','x\y','plain', ' a', '{x}']
        let strings = StringArray::from(vec![
            "a b", "c,d", "\"q\"", "", "NULL", "x\\y", "plain", " a", "{x}",
        ]);
        let field = Arc::new(Field::new("item", DataType::Utf8, true));
        let list = ListArray::new(
            field,
            datafusion::arrow::buffer::OffsetBuffer::from_lengths([9]),
            Arc::new(strings),
            None,
        );
        assert_eq!(
            text(&list, 0, &fmt).unwrap(),
            r#"{"a b","c,d","\"q\"","","NULL","x\\y",plain," a","{x}"}"#
        );
        // SELECT array[array[1,2],array[3,4]]
        let inner = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
            Some(vec![Some(1), Some(2)]),
            Some(vec![Some(3), Some(4)]),
        ]);
        let outer = ListArray::new(
            Arc::new(Field::new("item", inner.data_type().clone(), true)),
            datafusion::arrow::buffer::OffsetBuffer::from_lengths([2]),
            Arc::new(inner),
            None,
        );
        assert_eq!(text(&outer, 0, &fmt).unwrap(), "{{1,2},{3,4}}");
        // SELECT row(1,'a b',null,'x"y','','back\slash','(p)')
        let record = StructArray::from(vec![
            (
                Arc::new(Field::new("a", DataType::Int32, true)),
                Arc::new(Int32Array::from(vec![1])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("b", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec!["a b"])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("c", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec![None::<&str>])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("d", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec!["x\"y"])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("e", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec![""])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("f", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec!["back\\slash"])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("g", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec!["(p)"])) as ArrayRef,
            ),
        ]);
        assert_eq!(
            text(&record, 0, &fmt).unwrap(),
            r#"(1,"a b",,"x""y","","back\\slash","(p)")"#
        );
    }

    #[test]
    fn other_arrow_types() {
        let fmt = TextFormat::default();
        assert_eq!(
            text(&BooleanArray::from(vec![true, false]), 1, &fmt).unwrap(),
            "f"
        );
        assert_eq!(
            text(&Int64Array::from(vec![i64::MIN]), 0, &fmt).unwrap(),
            "-9223372036854775808"
        );
        assert_eq!(
            text(&UInt64Array::from(vec![u64::MAX]), 0, &fmt).unwrap(),
            "18446744073709551615"
        );
        assert_eq!(
            text(&LargeStringArray::from(vec!["large"]), 0, &fmt).unwrap(),
            "large"
        );
        assert_eq!(
            text(
                &StringViewArray::from(vec!["a view that is long enough"]),
                0,
                &fmt
            )
            .unwrap(),
            "a view that is long enough"
        );
        assert_eq!(
            text(&BinaryArray::from(vec![&[1u8, 2, 255][..]]), 0, &fmt).unwrap(),
            "\\x0102ff"
        );
        let half =
            datafusion::arrow::compute::cast(&Float32Array::from(vec![1.5f32]), &DataType::Float16)
                .unwrap();
        assert_eq!(text(half.as_ref(), 0, &fmt).unwrap(), "1.5");
        assert_eq!(
            text(&Float32Array::from(vec![1e21f32]), 0, &fmt).unwrap(),
            "1e+21"
        );
        assert_eq!(
            text(&Float64Array::from(vec![None, Some(1.0)]), 0, &fmt),
            None
        );
        let dict: DictionaryArray<Int32Type> = vec![Some("x"), None, Some("y"), Some("x")]
            .into_iter()
            .collect();
        assert_eq!(text(&dict, 3, &fmt).unwrap(), "x");
        assert_eq!(text(&dict, 1, &fmt), None);
        let null = datafusion::arrow::array::NullArray::new(2);
        assert_eq!(text(&null, 0, &fmt), None);
    }
}
