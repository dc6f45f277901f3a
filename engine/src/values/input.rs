//! PostgreSQL's input functions: text → Arrow values.
//!
//! Each `parse_*` function accepts what the PostgreSQL 18 input function of that type accepts
//! and fails with the same SQLSTATE and message (`invalid input syntax for type integer: "abc"`,
//! `value "99999999999" is out of range for type integer`, …). [`ColumnParser`] appends parsed
//! values to an Arrow builder of the column's type, for COPY and for `INSERT … VALUES ('12')`.
//!
//! What is accepted, in brief (all verified against PostgreSQL 18, see the tests):
//! - integers: surrounding whitespace, a sign, `_` between digits, `0x` / `0o` / `0b` prefixes;
//! - floats: `strtod` syntax including `NaN`, `Infinity`, `inf` and hexadecimal; values that
//!   overflow or underflow to zero are out of range;
//! - numeric: decimal with `_`, exponent, prefixed integers; rounded half away from zero to the
//!   column's scale; too many integer digits is `numeric field overflow`;
//! - boolean: any prefix of `true`/`false`/`yes`/`no`, `on`/`off` (two letters at least), `1`/`0`;
//! - date and timestamps: ISO `2024-01-31[ T]12:34:56.789[Z|±hh[:mm[:ss]]]`, `20240131`,
//!   month names (`Jan 31 2024`, `31-Jan-2024`), `m/d/y` in the session's date order, `BC`,
//!   `am`/`pm`, zone abbreviations (`UTC`, `EST`, …) and tz-database names, and the special
//!   words `epoch`, `infinity`, `-infinity`, `now`, `today`, `tomorrow`, `yesterday`.

use super::datetime::{
    days_from_civil, days_in_month, DATE_MAX_DAYS, DATE_MIN_DAYS, DATE_NEG_INFINITY,
    DATE_POS_INFINITY, TS_MAX_MICROS, TS_MIN_MICROS, TS_NEG_INFINITY, TS_POS_INFINITY,
    USECS_PER_DAY,
};
use super::{DateOrder, SessionZone, TextFormat};
use datafusion::arrow::array::{
    ArrayBuilder, ArrayRef, BooleanBuilder, Date32Builder, Decimal128Builder, Float32Builder,
    Float64Builder, Int16Builder, Int32Builder, Int64Builder, IntervalMonthDayNanoBuilder,
    StringBuilder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::IntervalMonthDayNano;
use iolab_catalog::types::TIMESTAMPTZ_ZONE;
use iolab_catalog::{sqlstate, PgError, PgType};
use std::borrow::Cow;
use std::sync::Arc;

/// `isspace` in the C locale, which is what PostgreSQL's input functions skip.
#[inline]
pub(crate) fn is_pg_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn trim_pg_space(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_ascii() && is_pg_space(c as u8))
}

/// 22P02 `invalid input syntax for type <type>: "<input>"`.
pub fn invalid_syntax(type_name: &str, input: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_TEXT_REPRESENTATION,
        format!("invalid input syntax for type {type_name}: \"{input}\""),
    )
}

fn out_of_range_value(type_name: &str, input: &str) -> PgError {
    PgError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("value \"{input}\" is out of range for type {type_name}"),
    )
}

// ---------------------------------------------------------------------------------------------
// boolean

/// `boolin`: `t`, `true`, `yes`, `on`, `1` and the false words, any unambiguous prefix,
/// any case, surrounding whitespace.
pub fn parse_bool(s: &str) -> Result<bool, PgError> {
    let t = trim_pg_space(s);
    let is_prefix_of = |word: &str, min: usize| {
        t.len() >= min && t.len() <= word.len() && word[..t.len()].eq_ignore_ascii_case(t)
    };
    let value = match t.as_bytes().first().map(u8::to_ascii_lowercase) {
        Some(b't') if is_prefix_of("true", 1) => Some(true),
        Some(b'f') if is_prefix_of("false", 1) => Some(false),
        Some(b'y') if is_prefix_of("yes", 1) => Some(true),
        Some(b'n') if is_prefix_of("no", 1) => Some(false),
        Some(b'o') if is_prefix_of("on", 2) => Some(true),
        Some(b'o') if is_prefix_of("off", 2) => Some(false),
        Some(b'1') if t.len() == 1 => Some(true),
        Some(b'0') if t.len() == 1 => Some(false),
        _ => None,
    };
    value.ok_or_else(|| invalid_syntax("boolean", s))
}

// ---------------------------------------------------------------------------------------------
// integers

pub fn parse_int2(s: &str) -> Result<i16, PgError> {
    parse_integer(s, i64::from(i16::MIN), i64::from(i16::MAX), "smallint").map(|v| v as i16)
}

pub fn parse_int4(s: &str) -> Result<i32, PgError> {
    parse_integer(s, i64::from(i32::MIN), i64::from(i32::MAX), "integer").map(|v| v as i32)
}

pub fn parse_int8(s: &str) -> Result<i64, PgError> {
    parse_integer(s, i64::MIN, i64::MAX, "bigint")
}

#[inline]
fn digit_value(c: u8, radix: u64) -> Option<u64> {
    let v = match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        b'A'..=b'F' => c - b'A' + 10,
        _ => return None,
    };
    (u64::from(v) < radix).then_some(u64::from(v))
}

/// The radix a `0x` / `0o` / `0b` prefix at `b[i..]` selects, and where the digits begin.
fn radix_prefix(b: &[u8], i: usize) -> (u64, usize) {
    if b.get(i) == Some(&b'0') {
        match b.get(i + 1) {
            Some(b'x' | b'X') => return (16, i + 2),
            Some(b'o' | b'O') => return (8, i + 2),
            Some(b'b' | b'B') => return (2, i + 2),
            _ => {}
        }
    }
    (10, i)
}

/// Digits of `radix` with single `_` between them, from `b[i..]`, accumulated into a magnitude
/// no larger than `limit`. Returns (magnitude, digits seen, end) or `None` on overflow; a
/// misplaced `_` ends the digits (the caller then sees junk and reports bad syntax).
fn scan_digits_with_underscores(
    b: &[u8],
    mut i: usize,
    radix: u64,
    limit: u64,
) -> Option<(u64, usize, usize)> {
    let mut magnitude: u64 = 0;
    let mut digits = 0;
    while i < b.len() {
        let c = b[i];
        if let Some(d) = digit_value(c, radix) {
            magnitude = magnitude.checked_mul(radix)?.checked_add(d)?;
            if magnitude > limit {
                return None;
            }
            digits += 1;
            i += 1;
        } else if c == b'_'
            && (digits > 0 || radix != 10)
            && b.get(i + 1)
                .is_some_and(|&n| digit_value(n, radix).is_some())
        {
            i += 1;
        } else {
            break;
        }
    }
    Some((magnitude, digits, i))
}

/// `int2in` / `int4in` / `int8in` into the range `min..=max`.
fn parse_integer(s: &str, min: i64, max: i64, type_name: &str) -> Result<i64, PgError> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_pg_space(b[i]) {
        i += 1;
    }
    let negative = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let (radix, start) = radix_prefix(b, i);
    let limit = if negative {
        min.unsigned_abs()
    } else {
        max as u64
    };
    let Some((magnitude, digits, mut end)) = scan_digits_with_underscores(b, start, radix, limit)
    else {
        return Err(out_of_range_value(type_name, s));
    };
    while end < b.len() && is_pg_space(b[end]) {
        end += 1;
    }
    if digits == 0 || end != b.len() {
        return Err(invalid_syntax(type_name, s));
    }
    Ok(if negative {
        (magnitude as i64).wrapping_neg()
    } else {
        magnitude as i64
    })
}

// ---------------------------------------------------------------------------------------------
// floats

pub fn parse_float8(s: &str) -> Result<f64, PgError> {
    let t = trim_pg_space(s);
    let (value, nonzero) =
        parse_float_text::<f64>(t).ok_or_else(|| invalid_syntax("double precision", s))?;
    if (value == 0.0 && nonzero) || (value.is_infinite() && !is_infinity_word(t)) {
        return Err(PgError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("\"{t}\" is out of range for type double precision"),
        ));
    }
    Ok(value)
}

pub fn parse_float4(s: &str) -> Result<f32, PgError> {
    let t = trim_pg_space(s);
    let (value, nonzero) = parse_float_text::<f32>(t).ok_or_else(|| invalid_syntax("real", s))?;
    if (value == 0.0 && nonzero) || (value.is_infinite() && !is_infinity_word(t)) {
        return Err(PgError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("\"{t}\" is out of range for type real"),
        ));
    }
    Ok(value)
}

fn is_infinity_word(t: &str) -> bool {
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity")
}

/// A float type `strtod`-style text can be read into.
trait FloatText: Copy + std::str::FromStr {
    const NAN: Self;
    const INFINITY: Self;
    fn neg(self) -> Self;
    fn from_f64(v: f64) -> Self;
}

impl FloatText for f64 {
    const NAN: f64 = f64::NAN;
    const INFINITY: f64 = f64::INFINITY;
    fn neg(self) -> f64 {
        -self
    }
    fn from_f64(v: f64) -> f64 {
        v
    }
}

impl FloatText for f32 {
    const NAN: f32 = f32::NAN;
    const INFINITY: f32 = f32::INFINITY;
    fn neg(self) -> f32 {
        -self
    }
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
}

/// Reads trimmed `strtod` syntax: returns the value and whether the mantissa had a non-zero
/// digit (to tell underflow from zero); `None` for bad syntax.
fn parse_float_text<F: FloatText>(t: &str) -> Option<(F, bool)> {
    let (negative, body) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let signed = |v: F| if negative { v.neg() } else { v };
    if body.eq_ignore_ascii_case("nan") {
        return Some((F::NAN, false));
    }
    if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        return Some((signed(F::INFINITY), true));
    }
    let bytes = body.as_bytes();
    if bytes.len() > 2 && bytes[0] == b'0' && matches!(bytes[1], b'x' | b'X') {
        let v = parse_hex_float(&body[2..])?;
        return Some((signed(F::from_f64(v)), v != 0.0));
    }
    // Decimal: digits [. digits] [e [sign] digits], with at least one mantissa digit.
    let mut i = 0;
    let mut mantissa_digits = 0;
    let mut nonzero = false;
    while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
        if bytes[i].is_ascii_digit() {
            mantissa_digits += 1;
            nonzero |= bytes[i] != b'0';
        }
        i += 1;
    }
    if mantissa_digits == 0 {
        return None;
    }
    if i < bytes.len() {
        if !matches!(bytes[i], b'e' | b'E') {
            return None;
        }
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if j == bytes.len() || !bytes[j..].iter().all(u8::is_ascii_digit) {
            return None;
        }
    }
    // Rust's parser is correctly rounded like glibc's strtod/strtof.
    let v: F = body.parse().ok()?;
    Some((signed(v), nonzero))
}

/// `strtod`'s hexadecimal form after `0x`: hex digits, optional `.` fraction, optional
/// `p[sign]digits` binary exponent.
fn parse_hex_float(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut mantissa: u64 = 0;
    let mut exponent: i64 = 0;
    let mut digits = 0;
    let mut seen_point = false;
    while i < b.len() {
        if b[i] == b'.' && !seen_point {
            seen_point = true;
        } else if let Some(d) = digit_value(b[i], 16) {
            digits += 1;
            if mantissa < (1 << 59) {
                mantissa = mantissa * 16 + d;
                if seen_point {
                    exponent -= 4;
                }
            } else if !seen_point {
                exponent += 4;
            }
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() {
        if !matches!(b[i], b'p' | b'P') {
            return None;
        }
        let e: i64 = s[i + 1..].parse().ok()?;
        exponent = exponent.saturating_add(e.clamp(-100_000, 100_000));
    }
    let e = exponent.clamp(-2000, 2000) as i32;
    // Scale in two steps so that neither power of two overflows on its own.
    Some(mantissa as f64 * 2f64.powi(e / 2) * 2f64.powi(e - e / 2))
}

// ---------------------------------------------------------------------------------------------
// numeric

/// 22003 `numeric field overflow` with PostgreSQL's detail for `numeric(precision, scale)`.
pub fn numeric_field_overflow(precision: u8, scale: i8) -> PgError {
    let integer_digits = i32::from(precision) - i32::from(scale);
    let bound = if integer_digits == 0 {
        "1".to_string()
    } else {
        format!("10^{integer_digits}")
    };
    PgError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, "numeric field overflow").with_detail(
        format!(
            "A field with precision {precision}, scale {scale} must round to an absolute value less than {bound}."
        ),
    )
}

/// 22003 for `Infinity` into `numeric(precision, scale)`.
pub fn numeric_infinite_overflow(precision: u8, scale: i8) -> PgError {
    PgError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        "numeric field overflow",
    )
    .with_detail(format!(
        "A field with precision {precision}, scale {scale} cannot hold an infinite value."
    ))
}

/// `NaN` cannot be stored in iolab's `Decimal128` numeric columns.
pub fn numeric_nan_unsupported() -> PgError {
    PgError::new(
        sqlstate::FEATURE_NOT_SUPPORTED,
        "numeric NaN is not supported",
    )
    .with_detail("iolab stores numeric values as 128-bit fixed-point numbers, which have no NaN.")
}

/// 10^n for n in 0..=38.
pub(crate) fn pow10_i128(n: u32) -> i128 {
    debug_assert!(n <= 38);
    10i128.pow(n)
}

/// `numeric_in` followed by the typmod coercion to `numeric(precision, scale)`: the result is
/// the value times 10^scale, rounded half away from zero, as Arrow's `Decimal128` holds it.
pub fn parse_numeric(s: &str, precision: u8, scale: i8) -> Result<i128, PgError> {
    let t = trim_pg_space(s);
    let bad = || invalid_syntax("numeric", s);
    let b = t.as_bytes();
    let (negative, start) = match b.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let body = &t[start..];
    if body.eq_ignore_ascii_case("nan") {
        return Err(numeric_nan_unsupported());
    }
    if body.eq_ignore_ascii_case("inf") || body.eq_ignore_ascii_case("infinity") {
        return Err(numeric_infinite_overflow(precision, scale));
    }
    let (radix, digits_start) = radix_prefix(b, start);
    if radix != 10 {
        // Prefixed integers: no fraction, no exponent.
        let Some((magnitude, digits, end)) =
            scan_digits_with_underscores(b, digits_start, radix, u64::MAX)
        else {
            return Err(numeric_field_overflow(precision, scale));
        };
        if digits == 0 || end != b.len() {
            return Err(bad());
        }
        let decimal = magnitude
            .to_string()
            .into_bytes()
            .iter()
            .map(|d| d - b'0')
            .collect();
        return decimal_to_scaled(negative, decimal, 0, precision, scale);
    }
    // Decimal digits (with `_` between digits), an optional fraction, an optional exponent.
    let mut digits: Vec<u8> = Vec::with_capacity(b.len());
    let mut fraction_digits: i64 = 0;
    let mut i = start;
    let mut seen_point = false;
    let mut any_digit = false;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            any_digit = true;
            if !(digits.is_empty() && c == b'0') {
                digits.push(c - b'0');
            }
            if seen_point {
                fraction_digits += 1;
            }
        } else if c == b'.' && !seen_point {
            seen_point = true;
        } else if c == b'_'
            && i > start
            && b[i - 1].is_ascii_digit()
            && b.get(i + 1).is_some_and(u8::is_ascii_digit)
        {
            // separator between digits
        } else {
            break;
        }
        i += 1;
    }
    if !any_digit {
        return Err(bad());
    }
    let mut exponent: i64 = 0;
    if i < b.len() && matches!(b[i], b'e' | b'E') {
        i += 1;
        let exp_negative = match b.get(i) {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            _ => false,
        };
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            exponent = (exponent * 10 + i64::from(b[i] - b'0')).min(1_000_000_000);
            i += 1;
        }
        if i == exp_start {
            return Err(bad());
        }
        if exp_negative {
            exponent = -exponent;
        }
    }
    if i != b.len() {
        return Err(bad());
    }
    // Leading zeros of the fraction were dropped from `digits` but still count as places.
    decimal_to_scaled(
        negative,
        digits,
        exponent - fraction_digits,
        precision,
        scale,
    )
}

/// The decimal `digits × 10^exp10` (digits most significant first, no leading zeros) as a
/// Decimal128 at `scale`, rounded half away from zero and checked against `precision`.
pub(crate) fn decimal_to_scaled(
    negative: bool,
    digits: Vec<u8>,
    exp10: i64,
    precision: u8,
    scale: i8,
) -> Result<i128, PgError> {
    if digits.iter().all(|&d| d == 0) {
        return Ok(0);
    }
    let shift = exp10.saturating_add(i64::from(scale));
    let (kept, round_up): (&[u8], bool) = if shift >= 0 {
        (&digits[..], false)
    } else {
        let drop = shift.unsigned_abs();
        if drop > digits.len() as u64 {
            (&[], false)
        } else {
            let keep = digits.len() - drop as usize;
            (&digits[..keep], digits[keep] >= 5)
        }
    };
    let zeros = shift.max(0) as u64;
    if kept.len() as u64 + zeros > 38 {
        return Err(numeric_field_overflow(precision, scale));
    }
    let mut magnitude: i128 = 0;
    for &d in kept {
        magnitude = magnitude * 10 + i128::from(d);
    }
    magnitude *= pow10_i128(zeros as u32);
    magnitude += i128::from(round_up);
    if magnitude >= pow10_i128(u32::from(precision.min(38))) {
        return Err(numeric_field_overflow(precision, scale));
    }
    Ok(if negative { -magnitude } else { magnitude })
}

// ---------------------------------------------------------------------------------------------
// character types

/// The name a length error prints: `character varying(3)` / `character(3)`.
fn too_long(ty: &str, n: u32) -> PgError {
    PgError::new(
        sqlstate::STRING_DATA_RIGHT_TRUNCATION,
        format!("value too long for type {ty}({n})"),
    )
}

/// Fits `s` into `n` characters the way PostgreSQL's varchar/bpchar input and assignment do:
/// extra characters may only be spaces, which are cut off. Returns the (maybe shorter) slice.
fn fit_length<'a>(s: &'a str, n: u32, ty: &str) -> Result<&'a str, PgError> {
    let n = n as usize;
    if s.len() <= n {
        return Ok(s); // bytes ≥ characters
    }
    match s.char_indices().nth(n) {
        None => Ok(s),
        Some((cut, _)) if s.as_bytes()[cut..].iter().all(|&b| b == b' ') => Ok(&s[..cut]),
        Some(_) => Err(too_long(ty, n as u32)),
    }
}

/// `varchar(n)`: at most `n` characters; trailing spaces beyond `n` are cut.
pub fn check_varchar(s: &str, n: u32) -> Result<&str, PgError> {
    fit_length(s, n, "character varying")
}

/// `char(n)`: at most `n` characters (trailing spaces beyond are cut), then blank-padded to `n`.
pub fn bpchar_value(s: &str, n: u32) -> Result<Cow<'_, str>, PgError> {
    let fitted = fit_length(s, n, "character")?;
    let chars = if fitted.is_ascii() {
        fitted.len()
    } else {
        fitted.chars().count()
    };
    if chars >= n as usize {
        return Ok(Cow::Borrowed(fitted));
    }
    let mut padded = String::with_capacity(fitted.len() + n as usize - chars);
    padded.push_str(fitted);
    padded.extend(std::iter::repeat_n(' ', n as usize - chars));
    Ok(Cow::Owned(padded))
}

/// Text of `ty` (`text`, `varchar(n)`, `char(n)`) as it is stored.
pub fn stored_text(s: &str, ty: PgType) -> Result<Cow<'_, str>, PgError> {
    match ty {
        PgType::Varchar(Some(n)) => check_varchar(s, n).map(Cow::Borrowed),
        PgType::Bpchar(n) => bpchar_value(s, n),
        _ => Ok(Cow::Borrowed(s)),
    }
}

// ---------------------------------------------------------------------------------------------
// date and timestamps

/// What went wrong reading a date/time, before it is given the type's name.
#[derive(Debug, PartialEq)]
enum DtError {
    /// 22007 invalid input syntax
    Syntax,
    /// 22008 date/time field value out of range
    Field,
    /// 22008 with the DateStyle hint (a month or day field that fits another order)
    MonthDayField,
    /// 22009 time zone displacement out of range
    Displacement,
    /// 22023 time zone "x" not recognized
    UnknownZone(String),
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Special {
    Epoch,
    Infinity,
    NegInfinity,
    Now,
    Today,
    Tomorrow,
    Yesterday,
}

#[derive(Clone, Copy, Debug)]
enum ZoneSpec {
    Fixed(i32),
    Named(SessionZone),
}

/// The fields of a date/time string, as read but not yet validated.
#[derive(Debug, Default)]
struct DtFields {
    /// (value, digits written)
    year: Option<(i64, usize)>,
    month: Option<u32>,
    day: Option<u32>,
    bc: bool,
    /// hour, minute, second, microseconds (may be 1_000_000 after rounding)
    time: Option<(u32, u32, u32, i64)>,
    pm: Option<bool>,
    zone: Option<ZoneSpec>,
    special: Option<Special>,
    /// Numbers that are a day or a year once a month name tells the format.
    loose: Vec<(u64, usize)>,
    tokens: usize,
}

impl DtFields {
    fn has_date(&self) -> bool {
        self.year.is_some() || self.day.is_some()
    }
}

fn month_from_name(w: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    if w.len() < 3 {
        return None;
    }
    if w == "sept" {
        return Some(9);
    }
    MONTHS
        .iter()
        .position(|m| w.len() == 3 && m.starts_with(w) || *m == w)
        .map(|p| p as u32 + 1)
}

fn is_day_name(w: &str) -> bool {
    const DAYS: [&str; 7] = [
        "sunday",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
    ];
    matches!(w, "tues" | "wednes" | "thur" | "thurs")
        || DAYS
            .iter()
            .any(|d| w.len() == 3 && d.starts_with(w) || *d == w)
}

/// Zone abbreviations PostgreSQL's default set knows and iolab reads (hours east).
fn zone_abbreviation(w: &str) -> Option<i32> {
    let hours_x2: i32 = match w {
        "z" | "zulu" | "utc" | "gmt" | "ut" | "uct" | "wet" => 0,
        "est" => -10,
        "edt" => -8,
        "cst" => -12,
        "cdt" => -10,
        "mst" => -14,
        "mdt" => -12,
        "pst" => -16,
        "pdt" => -14,
        "akst" => -18,
        "akdt" => -16,
        "hst" => -20,
        "cet" | "met" | "west" | "bst" => 2,
        "cest" | "mest" | "eet" | "sast" => 4,
        "eest" | "msk" => 6,
        "awst" => 16,
        "jst" | "kst" => 18,
        "acst" => 19,
        "aest" => 20,
        "acdt" => 21,
        "aedt" => 22,
        "nzst" => 24,
        "nzdt" => 26,
        _ => return None,
    };
    Some(hours_x2 * 1800)
}

/// Two-digit (and one-digit) years: 00–69 are 2000–2069, 70–99 are 1970–1999.
fn adjust_year(value: i64, digits: usize) -> i64 {
    if digits <= 2 {
        if value < 70 {
            value + 2000
        } else {
            value + 1900
        }
    } else {
        value
    }
}

fn scan_while(b: &[u8], mut i: usize, f: impl Fn(u8) -> bool) -> usize {
    while i < b.len() && f(b[i]) {
        i += 1;
    }
    i
}

fn parse_small(digits: &str) -> Result<u32, DtError> {
    if digits.len() > 9 {
        return Err(DtError::Field);
    }
    digits.parse().map_err(|_| DtError::Syntax)
}

/// Splits a date/time string into its fields (PostgreSQL's ParseDateTime + DecodeDateTime,
/// for the forms listed in the module comment).
fn read_datetime(s: &str, order: DateOrder) -> Result<DtFields, DtError> {
    let b = s.as_bytes();
    let mut f = DtFields::default();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if is_pg_space(c) || c == b',' {
            i += 1;
            continue;
        }
        f.tokens += 1;
        if c.is_ascii_digit() {
            let j = scan_while(b, i, |c| c.is_ascii_digit());
            match b.get(j) {
                Some(b':') => i = read_time(s, i, &mut f)?,
                Some(&sep @ (b'-' | b'/' | b'.'))
                    if !f.has_date() && b.get(j + 1).is_some_and(u8::is_ascii_alphanumeric) =>
                {
                    i = read_date(s, i, sep, order, &mut f)?
                }
                _ => {
                    read_number(&s[i..j], &mut f)?;
                    i = j;
                }
            }
        } else if c == b'+' || c == b'-' {
            match b.get(i + 1) {
                Some(d) if d.is_ascii_digit() => i = read_offset(s, i, &mut f)?,
                Some(a) if a.is_ascii_alphabetic() => {
                    let j = scan_while(b, i + 1, |c| c.is_ascii_alphabetic());
                    let w = s[i..j].to_ascii_lowercase();
                    match w.as_str() {
                        "-infinity" => set_special(&mut f, Special::NegInfinity)?,
                        "+infinity" => set_special(&mut f, Special::Infinity)?,
                        _ => return Err(DtError::Syntax),
                    }
                    i = j;
                }
                _ => return Err(DtError::Syntax),
            }
        } else if c.is_ascii_alphabetic() {
            let mut j = scan_while(b, i, |c| c.is_ascii_alphabetic());
            if b.get(j) == Some(&b'/') {
                j = scan_while(b, j, |c| c.is_ascii_alphanumeric() || b"/_-+".contains(&c));
            } else if j == i + 1
                && matches!(c, b'T' | b't')
                && b.get(j).is_some_and(u8::is_ascii_digit)
            {
                // ISO 8601's `T` between date and time, after a space-separated date
                f.tokens -= 1;
                i = j;
                continue;
            }
            let month_first_date = matches!(b.get(j), Some(b'-' | b'/' | b'.'))
                && b.get(j + 1).is_some_and(u8::is_ascii_digit)
                && !f.has_date()
                && month_from_name(&s[i..j].to_ascii_lowercase()).is_some();
            if month_first_date {
                i = read_date(s, i, b[j], order, &mut f)?; // `Jan-31-2024`
                continue;
            }
            read_word(&s[i..j], &mut f)?;
            i = j;
        } else {
            return Err(DtError::Syntax);
        }
    }
    Ok(f)
}

fn set_special(f: &mut DtFields, sp: Special) -> Result<(), DtError> {
    if f.special.is_some() {
        return Err(DtError::Syntax);
    }
    f.special = Some(sp);
    Ok(())
}

fn read_word(w: &str, f: &mut DtFields) -> Result<(), DtError> {
    let lower = w.to_ascii_lowercase();
    let l = lower.as_str();
    match l {
        "epoch" => return set_special(f, Special::Epoch),
        "infinity" => return set_special(f, Special::Infinity),
        "now" => return set_special(f, Special::Now),
        "today" => return set_special(f, Special::Today),
        "tomorrow" => return set_special(f, Special::Tomorrow),
        "yesterday" => return set_special(f, Special::Yesterday),
        "allballs" => {
            if f.time.is_some() {
                return Err(DtError::Syntax);
            }
            f.time = Some((0, 0, 0, 0));
            f.zone.get_or_insert(ZoneSpec::Fixed(0));
            return Ok(());
        }
        "am" | "pm" => {
            if f.pm.is_some() {
                return Err(DtError::Syntax);
            }
            f.pm = Some(l == "pm");
            return Ok(());
        }
        "bc" => {
            f.bc = true;
            return Ok(());
        }
        "ad" => return Ok(()),
        _ => {}
    }
    if let Some(m) = month_from_name(l) {
        if f.month.is_some() {
            return Err(DtError::Syntax);
        }
        f.month = Some(m);
        return Ok(());
    }
    if is_day_name(l) {
        return Ok(());
    }
    if let Some(east) = zone_abbreviation(l) {
        return set_zone(f, ZoneSpec::Fixed(east));
    }
    if l.contains('/') {
        return match SessionZone::parse(w) {
            Some(zone) => set_zone(f, ZoneSpec::Named(zone)),
            None => Err(DtError::UnknownZone(lower)),
        };
    }
    Err(DtError::Syntax)
}

fn set_zone(f: &mut DtFields, zone: ZoneSpec) -> Result<(), DtError> {
    if f.zone.is_some() {
        return Err(DtError::Syntax);
    }
    f.zone = Some(zone);
    Ok(())
}

/// A number standing alone: `20240131`, `240131`, or a day/year next to a month name.
fn read_number(digits: &str, f: &mut DtFields) -> Result<(), DtError> {
    if !f.has_date() && f.month.is_none() && (digits.len() == 8 || digits.len() == 6) {
        let year_len = digits.len() - 4;
        let year: i64 = digits[..year_len].parse().map_err(|_| DtError::Syntax)?;
        f.year = Some((adjust_year(year, year_len), year_len));
        f.month = Some(parse_small(&digits[year_len..year_len + 2])?);
        f.day = Some(parse_small(&digits[year_len + 2..])?);
        return Ok(());
    }
    let value: u64 = digits.parse().map_err(|_| DtError::Field)?;
    f.loose.push((value, digits.len()));
    Ok(())
}

/// `y-m-d`, `m/d/y`, `d.m.y`, `2024-Jan-31`, `31-Jan-2024`, … starting at `s[i..]`.
fn read_date(
    s: &str,
    mut i: usize,
    sep: u8,
    order: DateOrder,
    f: &mut DtFields,
) -> Result<usize, DtError> {
    let b = s.as_bytes();
    let mut parts: Vec<&str> = Vec::with_capacity(3);
    loop {
        let j = if b[i].is_ascii_digit() {
            scan_while(b, i, |c| c.is_ascii_digit())
        } else {
            scan_while(b, i, |c| c.is_ascii_alphabetic())
        };
        parts.push(&s[i..j]);
        i = j;
        if parts.len() == 3
            || b.get(i) != Some(&sep)
            || !b.get(i + 1).is_some_and(u8::is_ascii_alphanumeric)
        {
            break;
        }
        i += 1;
    }
    if parts.len() != 3 {
        return Err(DtError::Syntax);
    }
    // `2024-01-31T12:00`: the T ends the date.
    if matches!(b.get(i), Some(b'T' | b't')) && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        i += 1;
    }
    let num = |p: &str| -> Result<(i64, usize), DtError> {
        if p.len() > 10 {
            return Err(DtError::Field);
        }
        p.parse::<i64>()
            .map(|v| (v, p.len()))
            .map_err(|_| DtError::Syntax)
    };
    let is_alpha = |p: &str| p.as_bytes()[0].is_ascii_alphabetic();
    let (year, month, day);
    if let Some(k) = parts.iter().position(|p| is_alpha(p)) {
        if parts.iter().filter(|p| is_alpha(p)).count() != 1 || f.month.is_some() {
            return Err(DtError::Syntax);
        }
        month = month_from_name(&parts[k].to_ascii_lowercase()).ok_or(DtError::Syntax)?;
        let nums: Vec<&str> = parts.iter().copied().filter(|p| !is_alpha(p)).collect();
        let (a, b2) = (num(nums[0])?, num(nums[1])?);
        // A field of three or more digits, or above 31, is the year.
        if k == 1 && (a.1 >= 3 || a.0 > 31) {
            (year, day) = (a, b2);
        } else {
            (day, year) = (a, b2);
        }
    } else {
        let (p0, p1, p2) = (num(parts[0])?, num(parts[1])?, num(parts[2])?);
        let ymd = parts[0].len() >= 3 || order == DateOrder::Ymd;
        if ymd {
            (year, month, day) = (p0, p1.0 as u32, p2);
        } else if order == DateOrder::Dmy {
            (day, month, year) = (p0, p1.0 as u32, p2);
        } else {
            (month, day, year) = (p0.0.min(99) as u32, p1, p2);
        }
    }
    f.year = Some((adjust_year(year.0, year.1), year.1));
    f.month = Some(month);
    f.day = Some(day.0.clamp(0, 99) as u32);
    Ok(i)
}

/// `h:m[:s[.frac]]` starting at `s[i..]`.
fn read_time(s: &str, i: usize, f: &mut DtFields) -> Result<usize, DtError> {
    if f.time.is_some() {
        return Err(DtError::Syntax);
    }
    let b = s.as_bytes();
    let mut fields = [0u32; 3];
    let mut count = 0;
    let mut j = i;
    while count < 3 {
        let end = scan_while(b, j, |c| c.is_ascii_digit());
        if end == j {
            return Err(DtError::Syntax);
        }
        fields[count] = parse_small(&s[j..end])?;
        count += 1;
        j = end;
        if count < 3 && b.get(j) == Some(&b':') {
            j += 1;
        } else {
            break;
        }
    }
    if count < 2 {
        return Err(DtError::Syntax);
    }
    let mut micros = 0;
    if count == 3 && b.get(j) == Some(&b'.') {
        let end = scan_while(b, j + 1, |c| c.is_ascii_digit());
        // PostgreSQL rounds the fraction with rint(): ties to even.
        let fraction: f64 = format!("0.{}", &s[j + 1..end]).parse().unwrap_or(0.0);
        micros = (fraction * 1e6).round_ties_even() as i64;
        j = end;
    }
    f.time = Some((fields[0], fields[1], fields[2], micros));
    Ok(j)
}

/// `+hh`, `+hhmm`, `+hh:mm`, `+hh:mm:ss` (and `-`) starting at `s[i..]`: a zone offset east.
fn read_offset(s: &str, i: usize, f: &mut DtFields) -> Result<usize, DtError> {
    let b = s.as_bytes();
    let sign = if b[i] == b'-' { -1 } else { 1 };
    let mut j = i + 1;
    let end = scan_while(b, j, |c| c.is_ascii_digit());
    let first = &s[j..end];
    j = end;
    let (h, m, sec) = if b.get(j) == Some(&b':') {
        let mut parts = vec![parse_small(first)?];
        while b.get(j) == Some(&b':') && parts.len() < 3 {
            let e = scan_while(b, j + 1, |c| c.is_ascii_digit());
            if e == j + 1 {
                return Err(DtError::Syntax);
            }
            parts.push(parse_small(&s[j + 1..e])?);
            j = e;
        }
        (parts[0], parts[1], parts.get(2).copied().unwrap_or(0))
    } else {
        match first.len() {
            1 | 2 => (parse_small(first)?, 0, 0),
            3 | 4 => {
                let v = parse_small(first)?;
                (v / 100, v % 100, 0)
            }
            _ => return Err(DtError::Displacement),
        }
    };
    if h > 15 || m > 59 || sec > 59 {
        return Err(DtError::Displacement);
    }
    set_zone(f, ZoneSpec::Fixed(sign * (h * 3600 + m * 60 + sec) as i32))?;
    Ok(j)
}

/// A validated date and time of day: (days since 1970, µs into the day, zone if written).
struct DateTimeValue {
    days: i64,
    time_micros: i64,
    zone: Option<ZoneSpec>,
}

enum Decoded {
    Special(Special),
    Value(DateTimeValue),
}

/// `YYYY-MM-DD[( |T)HH:MM[:SS[.ffffff]]][Z|±HH[:MM]]` read directly: the form COPY data
/// and clients mostly send. Anything else, including out-of-range fields, returns `None`
/// and takes the general path (which also finds the right error).
fn read_iso(s: &str) -> Option<DateTimeValue> {
    let b = s.as_bytes();
    let digits = |from: usize, n: usize| -> Option<u32> {
        let part = b.get(from..from + n)?;
        part.iter().try_fold(0u32, |acc, &c| {
            c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
        })
    };
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let (year, month, day) = (i64::from(digits(0, 4)?), digits(5, 2)?, digits(8, 2)?);
    if year == 0 || !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return None;
    }
    let days = days_from_civil(year, month, day);
    if b.len() == 10 {
        return Some(DateTimeValue {
            days,
            time_micros: 0,
            zone: None,
        });
    }
    if !matches!(b[10], b' ' | b'T') || b.get(13) != Some(&b':') {
        return None;
    }
    let (hour, minute) = (digits(11, 2)?, digits(14, 2)?);
    let (mut second, mut micros, mut i) = (0, 0, 16);
    if b.get(i) == Some(&b':') {
        second = digits(17, 2)?;
        i = 19;
        if b.get(i) == Some(&b'.') {
            let end = scan_while(b, i + 1, |c| c.is_ascii_digit());
            let n = end - i - 1;
            if n == 0 || n > 6 {
                return None; // rounding of 7+ digits: the general path
            }
            micros = digits(i + 1, n)? * 10u32.pow(6 - n as u32);
            i = end;
        }
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let zone = match b.get(i) {
        None => None,
        Some(b'Z') if i + 1 == b.len() => Some(ZoneSpec::Fixed(0)),
        Some(&sign @ (b'+' | b'-')) => {
            let h = digits(i + 1, 2)?;
            let m = match b.len() - i {
                3 => 0,
                6 if b[i + 3] == b':' => digits(i + 4, 2)?,
                _ => return None,
            };
            if h > 15 || m > 59 {
                return None;
            }
            let east = (h * 3600 + m * 60) as i32;
            Some(ZoneSpec::Fixed(if sign == b'-' { -east } else { east }))
        }
        Some(_) => return None,
    };
    let time_micros =
        (i64::from(hour * 3600 + minute * 60 + second)) * 1_000_000 + i64::from(micros);
    Some(DateTimeValue {
        days,
        time_micros,
        zone,
    })
}

fn decode(s: &str, fmt: &TextFormat) -> Result<Decoded, DtError> {
    match read_iso(s) {
        Some(v) => Ok(Decoded::Value(v)),
        None => decode_general(s, fmt),
    }
}

fn decode_general(s: &str, fmt: &TextFormat) -> Result<Decoded, DtError> {
    let mut f = read_datetime(s, fmt.date_order)?;
    if let Some(sp) = f.special {
        // A special word stands alone (`today`, `now` may take a time, which iolab ignores
        // only for `today`/`tomorrow`/`yesterday` followed by a time of day).
        let extra = f.tokens - 1;
        let time_ok = matches!(sp, Special::Today | Special::Tomorrow | Special::Yesterday)
            && extra == 1
            && f.time.is_some();
        if extra != 0 && !time_ok {
            return Err(DtError::Syntax);
        }
        if time_ok {
            let now_local = fmt.time_zone.utc_to_local(fmt.now()).0;
            let mut days = now_local.div_euclid(USECS_PER_DAY);
            days += match sp {
                Special::Tomorrow => 1,
                Special::Yesterday => -1,
                _ => 0,
            };
            let time_micros = time_of_day(&f)?;
            return Ok(Decoded::Value(DateTimeValue {
                days,
                time_micros,
                zone: f.zone,
            }));
        }
        return Ok(Decoded::Special(sp));
    }
    if !f.has_date() || f.month.is_none() {
        if f.month.is_some() && f.loose.len() == 2 {
            let (a, b) = (f.loose[0], f.loose[1]);
            let (year, day) = if a.1 >= 3 || a.0 > 31 { (a, b) } else { (b, a) };
            f.year = Some((adjust_year(year.0.min(1 << 40) as i64, year.1), year.1));
            f.day = Some(day.0.min(99) as u32);
            f.loose.clear();
        } else {
            return Err(DtError::Syntax);
        }
    }
    if !f.loose.is_empty() {
        return Err(DtError::Syntax);
    }
    let (mut year, _) = f.year.ok_or(DtError::Syntax)?;
    let month = f.month.ok_or(DtError::Syntax)?;
    let day = f.day.ok_or(DtError::Syntax)?;
    if year <= 0 {
        return Err(DtError::Field);
    }
    if f.bc {
        year = 1 - year;
    }
    if !(1..=12).contains(&month) {
        return Err(DtError::MonthDayField);
    }
    if day < 1 || day > days_in_month(year, month) {
        return Err(DtError::Field);
    }
    if year.abs() > 100_000_000 {
        return Err(DtError::Field);
    }
    let days = days_from_civil(year, month, day);
    let time_micros = time_of_day(&f)?;
    Ok(Decoded::Value(DateTimeValue {
        days,
        time_micros,
        zone: f.zone,
    }))
}

fn time_of_day(f: &DtFields) -> Result<i64, DtError> {
    let Some((mut h, m, s, micros)) = f.time else {
        return if f.pm.is_some() {
            Err(DtError::Syntax)
        } else {
            Ok(0)
        };
    };
    if let Some(pm) = f.pm {
        if !(1..=12).contains(&h) {
            return Err(DtError::Field);
        }
        if pm && h < 12 {
            h += 12;
        } else if !pm && h == 12 {
            h = 0;
        }
    }
    if h > 24 || m > 59 || s > 60 || (h == 24 && (m != 0 || s != 0 || micros != 0)) {
        return Err(DtError::Field);
    }
    Ok(((i64::from(h) * 60 + i64::from(m)) * 60 + i64::from(s)) * 1_000_000 + micros)
}

/// 22007 `invalid input syntax for type <type>: "<input>"` of a date/time type.
pub(crate) fn datetime_syntax(type_name: &str, s: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_DATETIME_FORMAT,
        format!("invalid input syntax for type {type_name}: \"{s}\""),
    )
}

fn datetime_error(err: DtError, type_name: &str, s: &str) -> PgError {
    match err {
        DtError::Syntax => datetime_syntax(type_name, s),
        DtError::Field => PgError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            format!("date/time field value out of range: \"{s}\""),
        ),
        DtError::MonthDayField => PgError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            format!("date/time field value out of range: \"{s}\""),
        )
        .with_hint("Perhaps you need a different \"DateStyle\" setting."),
        DtError::Displacement => PgError::new(
            "22009",
            format!("time zone displacement out of range: \"{s}\""),
        ),
        DtError::UnknownZone(zone) => PgError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("time zone \"{zone}\" not recognized"),
        ),
    }
}

fn range_error(what: &str, s: &str) -> PgError {
    PgError::new(
        sqlstate::DATETIME_FIELD_OVERFLOW,
        format!("{what} out of range: \"{s}\""),
    )
}

/// `date_in`: days since 1970-01-01 (Arrow `Date32`); a time of day or zone is ignored.
pub fn parse_date(s: &str, fmt: &TextFormat) -> Result<i32, PgError> {
    let days = match decode(s, fmt).map_err(|e| datetime_error(e, "date", s))? {
        Decoded::Special(sp) => match sp {
            Special::Epoch => 0,
            Special::Infinity => return Ok(DATE_POS_INFINITY),
            Special::NegInfinity => return Ok(DATE_NEG_INFINITY),
            Special::Now | Special::Today | Special::Tomorrow | Special::Yesterday => {
                let today = fmt
                    .time_zone
                    .utc_to_local(fmt.now())
                    .0
                    .div_euclid(USECS_PER_DAY);
                today
                    + match sp {
                        Special::Tomorrow => 1,
                        Special::Yesterday => -1,
                        _ => 0,
                    }
            }
        },
        Decoded::Value(v) => v.days,
    };
    if !(DATE_MIN_DAYS..=DATE_MAX_DAYS).contains(&days) {
        return Err(range_error("date", s));
    }
    Ok(days as i32)
}

/// Local µs since 1970 of a decoded value, range-checked.
fn local_micros(v: &DateTimeValue, s: &str) -> Result<i64, PgError> {
    if !(DATE_MIN_DAYS..=DATE_MAX_DAYS).contains(&v.days) {
        return Err(range_error("timestamp", s));
    }
    v.days
        .checked_mul(USECS_PER_DAY)
        .and_then(|d| d.checked_add(v.time_micros))
        .filter(|t| (TS_MIN_MICROS..=TS_MAX_MICROS).contains(t))
        .ok_or_else(|| range_error("timestamp", s))
}

/// `timestamp_in`: local µs since 1970-01-01 (Arrow `Timestamp(Microsecond, None)`);
/// a written zone is ignored, as PostgreSQL ignores it.
pub fn parse_timestamp(s: &str, fmt: &TextFormat) -> Result<i64, PgError> {
    match decode(s, fmt).map_err(|e| datetime_error(e, "timestamp", s))? {
        Decoded::Special(sp) => Ok(match sp {
            Special::Epoch => 0,
            Special::Infinity => TS_POS_INFINITY,
            Special::NegInfinity => TS_NEG_INFINITY,
            Special::Now => fmt.time_zone.utc_to_local(fmt.now()).0,
            Special::Today | Special::Tomorrow | Special::Yesterday => {
                let today = fmt
                    .time_zone
                    .utc_to_local(fmt.now())
                    .0
                    .div_euclid(USECS_PER_DAY);
                let shift = match sp {
                    Special::Tomorrow => 1,
                    Special::Yesterday => -1,
                    _ => 0,
                };
                (today + shift) * USECS_PER_DAY
            }
        }),
        Decoded::Value(v) => local_micros(&v, s),
    }
}

/// `timestamptz_in`: µs since 1970-01-01 UTC. A written offset or zone wins; otherwise the
/// wall-clock time is read in the session's TimeZone.
pub fn parse_timestamptz(s: &str, fmt: &TextFormat) -> Result<i64, PgError> {
    const NAME: &str = "timestamp with time zone";
    match decode(s, fmt).map_err(|e| datetime_error(e, NAME, s))? {
        Decoded::Special(sp) => Ok(match sp {
            Special::Epoch => 0,
            Special::Infinity => TS_POS_INFINITY,
            Special::NegInfinity => TS_NEG_INFINITY,
            Special::Now => fmt.now(),
            Special::Today | Special::Tomorrow | Special::Yesterday => {
                let today = fmt
                    .time_zone
                    .utc_to_local(fmt.now())
                    .0
                    .div_euclid(USECS_PER_DAY);
                let shift = match sp {
                    Special::Tomorrow => 1,
                    Special::Yesterday => -1,
                    _ => 0,
                };
                fmt.time_zone.local_to_utc((today + shift) * USECS_PER_DAY)
            }
        }),
        Decoded::Value(v) => {
            let local = local_micros(&v, s)?;
            let utc = match v.zone {
                Some(ZoneSpec::Fixed(east)) => local - i64::from(east) * 1_000_000,
                Some(ZoneSpec::Named(zone)) => zone.local_to_utc(local),
                None => fmt.time_zone.local_to_utc(local),
            };
            if !(TS_MIN_MICROS..=TS_MAX_MICROS).contains(&utc) {
                return Err(range_error("timestamp", s));
            }
            Ok(utc)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// column parser

/// Appends text values of one PostgreSQL type to an Arrow builder of that type's
/// [`PgType::arrow_type`]. A value that fails to parse appends nothing.
///
/// ```ignore
/// let mut col = ColumnParser::new(PgType::Int4);
/// col.append(Some(" 42 "), &fmt)?;
/// col.append(None, &fmt)?;
/// let array = col.finish(); // Int32Array [42, NULL]
/// ```
pub struct ColumnParser {
    ty: PgType,
    builder: TypedBuilder,
}

enum TypedBuilder {
    Bool(BooleanBuilder),
    Int2(Int16Builder),
    Int4(Int32Builder),
    Int8(Int64Builder),
    Float4(Float32Builder),
    Float8(Float64Builder),
    Numeric(Decimal128Builder, u8, i8),
    Text(StringBuilder),
    Date(Date32Builder),
    Timestamp(TimestampMicrosecondBuilder),
    Timestamptz(TimestampMicrosecondBuilder),
    Interval(IntervalMonthDayNanoBuilder),
}

impl ColumnParser {
    pub fn new(ty: PgType) -> ColumnParser {
        ColumnParser::with_capacity(ty, 1024)
    }

    pub fn with_capacity(ty: PgType, rows: usize) -> ColumnParser {
        let builder = match ty {
            PgType::Bool => TypedBuilder::Bool(BooleanBuilder::with_capacity(rows)),
            PgType::Int2 => TypedBuilder::Int2(Int16Builder::with_capacity(rows)),
            PgType::Int4 => TypedBuilder::Int4(Int32Builder::with_capacity(rows)),
            PgType::Int8 => TypedBuilder::Int8(Int64Builder::with_capacity(rows)),
            PgType::Float4 => TypedBuilder::Float4(Float32Builder::with_capacity(rows)),
            PgType::Float8 => TypedBuilder::Float8(Float64Builder::with_capacity(rows)),
            PgType::Numeric { precision, scale } => TypedBuilder::Numeric(
                Decimal128Builder::with_capacity(rows).with_data_type(ty.arrow_type()),
                precision,
                scale,
            ),
            PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => {
                TypedBuilder::Text(StringBuilder::with_capacity(rows, rows * 16))
            }
            PgType::Date => TypedBuilder::Date(Date32Builder::with_capacity(rows)),
            PgType::Timestamp => {
                TypedBuilder::Timestamp(TimestampMicrosecondBuilder::with_capacity(rows))
            }
            PgType::Timestamptz => TypedBuilder::Timestamptz(
                TimestampMicrosecondBuilder::with_capacity(rows).with_timezone(TIMESTAMPTZ_ZONE),
            ),
            PgType::Interval => {
                TypedBuilder::Interval(IntervalMonthDayNanoBuilder::with_capacity(rows))
            }
        };
        ColumnParser { ty, builder }
    }

    pub fn pg_type(&self) -> PgType {
        self.ty
    }

    /// Parses `text` (`None` = SQL NULL) and appends it.
    pub fn append(&mut self, text: Option<&str>, fmt: &TextFormat) -> Result<(), PgError> {
        let Some(s) = text else {
            self.append_null();
            return Ok(());
        };
        match &mut self.builder {
            TypedBuilder::Bool(b) => b.append_value(parse_bool(s)?),
            TypedBuilder::Int2(b) => b.append_value(parse_int2(s)?),
            TypedBuilder::Int4(b) => b.append_value(parse_int4(s)?),
            TypedBuilder::Int8(b) => b.append_value(parse_int8(s)?),
            TypedBuilder::Float4(b) => b.append_value(parse_float4(s)?),
            TypedBuilder::Float8(b) => b.append_value(parse_float8(s)?),
            TypedBuilder::Numeric(b, p, sc) => b.append_value(parse_numeric(s, *p, *sc)?),
            TypedBuilder::Text(b) => b.append_value(stored_text(s, self.ty)?),
            TypedBuilder::Date(b) => b.append_value(parse_date(s, fmt)?),
            TypedBuilder::Timestamp(b) => b.append_value(parse_timestamp(s, fmt)?),
            TypedBuilder::Timestamptz(b) => b.append_value(parse_timestamptz(s, fmt)?),
            TypedBuilder::Interval(b) => b.append_value(parse_interval_value(s)?),
        }
        Ok(())
    }

    pub fn append_null(&mut self) {
        match &mut self.builder {
            TypedBuilder::Bool(b) => b.append_null(),
            TypedBuilder::Int2(b) => b.append_null(),
            TypedBuilder::Int4(b) => b.append_null(),
            TypedBuilder::Int8(b) => b.append_null(),
            TypedBuilder::Float4(b) => b.append_null(),
            TypedBuilder::Float8(b) => b.append_null(),
            TypedBuilder::Numeric(b, ..) => b.append_null(),
            TypedBuilder::Text(b) => b.append_null(),
            TypedBuilder::Date(b) => b.append_null(),
            TypedBuilder::Timestamp(b) | TypedBuilder::Timestamptz(b) => b.append_null(),
            TypedBuilder::Interval(b) => b.append_null(),
        }
    }

    pub fn len(&self) -> usize {
        self.as_builder().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn as_builder(&self) -> &dyn ArrayBuilder {
        match &self.builder {
            TypedBuilder::Bool(b) => b,
            TypedBuilder::Int2(b) => b,
            TypedBuilder::Int4(b) => b,
            TypedBuilder::Int8(b) => b,
            TypedBuilder::Float4(b) => b,
            TypedBuilder::Float8(b) => b,
            TypedBuilder::Numeric(b, ..) => b,
            TypedBuilder::Text(b) => b,
            TypedBuilder::Date(b) => b,
            TypedBuilder::Timestamp(b) | TypedBuilder::Timestamptz(b) => b,
            TypedBuilder::Interval(b) => b,
        }
    }

    /// The values appended so far, as an array of `ty.arrow_type()`; the parser is empty after.
    pub fn finish(&mut self) -> ArrayRef {
        let array: ArrayRef = match &mut self.builder {
            TypedBuilder::Bool(b) => Arc::new(b.finish()),
            TypedBuilder::Int2(b) => Arc::new(b.finish()),
            TypedBuilder::Int4(b) => Arc::new(b.finish()),
            TypedBuilder::Int8(b) => Arc::new(b.finish()),
            TypedBuilder::Float4(b) => Arc::new(b.finish()),
            TypedBuilder::Float8(b) => Arc::new(b.finish()),
            TypedBuilder::Numeric(b, ..) => Arc::new(b.finish()),
            TypedBuilder::Text(b) => Arc::new(b.finish()),
            TypedBuilder::Date(b) => Arc::new(b.finish()),
            TypedBuilder::Timestamp(b) | TypedBuilder::Timestamptz(b) => Arc::new(b.finish()),
            TypedBuilder::Interval(b) => Arc::new(b.finish()),
        };
        debug_assert_eq!(array.data_type(), &self.ty.arrow_type());
        array
    }
}

/// Parses `text` as `ty` and appends it to `builder`, which must be the builder of
/// `ty.arrow_type()` (as `make_builder` creates it); NULL is `None`.
pub fn parse_into(
    builder: &mut dyn ArrayBuilder,
    ty: PgType,
    text: Option<&str>,
    fmt: &TextFormat,
) -> Result<(), PgError> {
    fn get<B: ArrayBuilder>(builder: &mut dyn ArrayBuilder) -> Result<&mut B, PgError> {
        builder
            .as_any_mut()
            .downcast_mut::<B>()
            .ok_or_else(|| PgError::internal("parse_into: builder does not match the column type"))
    }
    macro_rules! put {
        ($b:ty, $parse:expr) => {{
            let b = get::<$b>(builder)?;
            match text {
                None => b.append_null(),
                Some(s) => b.append_value($parse(s)?),
            }
        }};
    }
    match ty {
        PgType::Bool => put!(BooleanBuilder, parse_bool),
        PgType::Int2 => put!(Int16Builder, parse_int2),
        PgType::Int4 => put!(Int32Builder, parse_int4),
        PgType::Int8 => put!(Int64Builder, parse_int8),
        PgType::Float4 => put!(Float32Builder, parse_float4),
        PgType::Float8 => put!(Float64Builder, parse_float8),
        PgType::Numeric { precision, scale } => {
            put!(Decimal128Builder, |s| parse_numeric(s, precision, scale))
        }
        PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => {
            put!(StringBuilder, |s| stored_text(s, ty))
        }
        PgType::Date => put!(Date32Builder, |s| parse_date(s, fmt)),
        PgType::Timestamp => put!(TimestampMicrosecondBuilder, |s| parse_timestamp(s, fmt)),
        PgType::Timestamptz => put!(TimestampMicrosecondBuilder, |s| parse_timestamptz(s, fmt)),
        PgType::Interval => put!(IntervalMonthDayNanoBuilder, parse_interval_value),
    }
    Ok(())
}

/// An interval's text as Arrow's value (µs kept as nanoseconds).
pub fn parse_interval_value(s: &str) -> Result<IntervalMonthDayNano, PgError> {
    let v = super::interval_input::interval_in(s)?;
    Ok(IntervalMonthDayNano::new(
        v.months,
        v.days,
        v.micros.saturating_mul(1000),
    ))
}

/// Parses a column of text values into an array of `ty.arrow_type()`.
pub fn parse_array<'a>(
    ty: PgType,
    values: impl IntoIterator<Item = Option<&'a str>>,
    fmt: &TextFormat,
) -> Result<ArrayRef, PgError> {
    let values = values.into_iter();
    let mut parser = ColumnParser::with_capacity(ty, values.size_hint().0);
    for v in values {
        parser.append(v, fmt)?;
    }
    Ok(parser.finish())
}

#[cfg(test)]
mod tests {
    //! Expected values and messages were checked on PostgreSQL 18.4 (`SELECT 'x'::type`).
    use super::*;
    use crate::values::datetime::days_from_civil;
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{DataType, Int32Type, TimeUnit};

    fn err<T: std::fmt::Debug>(r: Result<T, PgError>) -> (String, String) {
        let e = r.expect_err("expected an error");
        (e.code.to_string(), e.message)
    }

    #[test]
    fn integers_accept_what_postgres_accepts() {
        assert_eq!(parse_int4("1_000").unwrap(), 1000);
        assert_eq!(parse_int4("0x1F").unwrap(), 31);
        assert_eq!(parse_int4(" +12 ").unwrap(), 12);
        assert_eq!(parse_int4("0o17").unwrap(), 15);
        assert_eq!(parse_int4("0b101").unwrap(), 5);
        assert_eq!(parse_int4("-0x80000000").unwrap(), i32::MIN);
        assert_eq!(parse_int4("0x_1F").unwrap(), 31);
        assert_eq!(parse_int4("0x1_F").unwrap(), 31);
        assert_eq!(parse_int4("\t-42\n").unwrap(), -42);
        assert_eq!(parse_int2("-32768").unwrap(), i16::MIN);
        assert_eq!(parse_int8("-9223372036854775808").unwrap(), i64::MIN);
        assert_eq!(parse_int8("9223372036854775807").unwrap(), i64::MAX);
    }

    #[test]
    fn integer_errors_match_postgres() {
        let syntax = |s: &str| {
            (
                "22P02".to_string(),
                format!("invalid input syntax for type integer: \"{s}\""),
            )
        };
        for s in [
            "", "abc", "0x", "1__0", "_1", "1.5", "1e3", "- 1", "+-1", "1_", " ",
        ] {
            assert_eq!(err(parse_int4(s)), syntax(s), "{s:?}");
        }
        assert_eq!(
            err(parse_int4("99999999999")),
            (
                "22003".into(),
                "value \"99999999999\" is out of range for type integer".into()
            )
        );
        assert_eq!(
            err(parse_int4("0x80000000")),
            (
                "22003".into(),
                "value \"0x80000000\" is out of range for type integer".into()
            )
        );
        assert_eq!(
            err(parse_int2("100000")),
            (
                "22003".into(),
                "value \"100000\" is out of range for type smallint".into()
            )
        );
        assert_eq!(
            err(parse_int8("9223372036854775808")),
            (
                "22003".into(),
                "value \"9223372036854775808\" is out of range for type bigint".into()
            )
        );
        assert_eq!(
            err(parse_int2("x")).1,
            "invalid input syntax for type smallint: \"x\""
        );
        assert_eq!(
            err(parse_int8("x")).1,
            "invalid input syntax for type bigint: \"x\""
        );
    }

    #[test]
    fn floats_accept_strtod_syntax() {
        assert_eq!(parse_float8("inf").unwrap(), f64::INFINITY);
        assert_eq!(parse_float8("-inf").unwrap(), f64::NEG_INFINITY);
        assert_eq!(parse_float8("infinity").unwrap(), f64::INFINITY);
        assert!(parse_float8("  NaN ").unwrap().is_nan());
        assert!(parse_float8("+nan").unwrap().is_nan());
        assert!(parse_float8("-nan").unwrap().is_nan());
        assert_eq!(parse_float8("+inf").unwrap(), f64::INFINITY);
        assert_eq!(parse_float4("-Infinity").unwrap(), f32::NEG_INFINITY);
        assert_eq!(parse_float8("1e5").unwrap(), 100000.0);
        assert_eq!(parse_float8("1E5").unwrap(), 100000.0);
        assert_eq!(parse_float8("1.").unwrap(), 1.0);
        assert_eq!(parse_float8(".5").unwrap(), 0.5);
        assert_eq!(parse_float8("0x10").unwrap(), 16.0);
        assert_eq!(parse_float8("0x1.8p1").unwrap(), 3.0);
        let z = parse_float8("  -0  ").unwrap();
        assert!(z == 0.0 && z.is_sign_negative());
        assert_eq!(parse_float8("1e-310").unwrap(), 1e-310); // subnormal, accepted
        assert_eq!(parse_float4("1e-40").unwrap(), 1e-40f32);
        assert_eq!(parse_float4("0.1").unwrap(), 0.1f32);
    }

    #[test]
    fn float_errors_match_postgres() {
        assert_eq!(
            err(parse_float8("1e400")),
            (
                "22003".into(),
                "\"1e400\" is out of range for type double precision".into()
            )
        );
        assert_eq!(
            err(parse_float8(" 1e400 ")).1,
            "\"1e400\" is out of range for type double precision"
        );
        assert_eq!(
            err(parse_float8("1e-400")).1,
            "\"1e-400\" is out of range for type double precision"
        );
        assert_eq!(
            err(parse_float4("1e39")).1,
            "\"1e39\" is out of range for type real"
        );
        assert_eq!(
            err(parse_float4("1e-46")).1,
            "\"1e-46\" is out of range for type real"
        );
        assert_eq!(
            err(parse_float4("abc")),
            (
                "22P02".into(),
                "invalid input syntax for type real: \"abc\"".into()
            )
        );
        for s in ["abc", "1_000.5", ".e5", "1e", "", "e5", "."] {
            assert_eq!(
                err(parse_float8(s)),
                (
                    "22P02".into(),
                    format!("invalid input syntax for type double precision: \"{s}\"")
                ),
                "{s:?}"
            );
        }
    }

    #[test]
    fn numeric_rounds_half_away_and_checks_precision() {
        assert_eq!(parse_numeric("123.456", 5, 2).unwrap(), 12346);
        assert_eq!(parse_numeric("999.994", 5, 2).unwrap(), 99999);
        assert_eq!(parse_numeric("-2.5", 5, 0).unwrap(), -3);
        assert_eq!(parse_numeric("1e5", 38, 0).unwrap(), 100000);
        assert_eq!(parse_numeric(" 1.5 ", 10, 1).unwrap(), 15);
        assert_eq!(parse_numeric(".5", 10, 1).unwrap(), 5);
        assert_eq!(parse_numeric("5.", 10, 0).unwrap(), 5);
        assert_eq!(parse_numeric("0x1F", 10, 2).unwrap(), 3100);
        assert_eq!(parse_numeric("1_000.5", 10, 1).unwrap(), 10005);
        assert_eq!(parse_numeric("1_000_000", 10, 0).unwrap(), 1_000_000);
        assert_eq!(parse_numeric("1e-3", 5, 2).unwrap(), 0);
        assert_eq!(parse_numeric("-0.001", 5, 2).unwrap(), 0);
        assert_eq!(parse_numeric("-0.005", 5, 2).unwrap(), -1);
        assert_eq!(parse_numeric("0.00001", 3, 5).unwrap(), 1);
        assert_eq!(parse_numeric("123.456", 5, -1).unwrap(), 12); // 120 at scale -1
        assert_eq!(parse_numeric("1e+5", 10, 0).unwrap(), 100000);
        assert_eq!(parse_numeric("0e1000000", 10, 2).unwrap(), 0);
        assert_eq!(
            parse_numeric("12345678901234567890123456789012.345678", 38, 6).unwrap(),
            12345678901234567890123456789012345678
        );
    }

    #[test]
    fn numeric_errors_match_postgres() {
        let overflow = |p, s, bound: &str| {
            (
                "22003".to_string(),
                "numeric field overflow".to_string(),
                Some(format!(
                    "A field with precision {p}, scale {s} must round to an absolute value less than {bound}."
                )),
            )
        };
        let full = |r: Result<i128, PgError>| {
            let e = r.unwrap_err();
            (e.code.to_string(), e.message, e.detail)
        };
        assert_eq!(full(parse_numeric("999.995", 5, 2)), overflow(5, 2, "10^3"));
        assert_eq!(full(parse_numeric("1e1000", 5, 2)), overflow(5, 2, "10^3"));
        assert_eq!(full(parse_numeric("1", 3, 3)), overflow(3, 3, "1"));
        assert_eq!(full(parse_numeric("0.9996", 3, 3)), overflow(3, 3, "1"));
        assert_eq!(full(parse_numeric("0.1", 3, 5)), overflow(3, 5, "10^-2"));
        assert_eq!(
            full(parse_numeric("Infinity", 5, 2)),
            (
                "22003".into(),
                "numeric field overflow".into(),
                Some("A field with precision 5, scale 2 cannot hold an infinite value.".into())
            )
        );
        assert_eq!(err(parse_numeric("-inf", 5, 2)).0, "22003");
        assert_eq!(err(parse_numeric("NaN", 5, 2)).0, "0A000");
        for s in [
            "abc", "1e", "0b11.1", " - 1", "1 000", "", "_1", "1__0", ".",
        ] {
            assert_eq!(
                err(parse_numeric(s, 10, 2)),
                (
                    "22P02".into(),
                    format!("invalid input syntax for type numeric: \"{s}\"")
                ),
                "{s:?}"
            );
        }
    }

    #[test]
    fn booleans_accept_prefixes() {
        // SELECT 't'::bool, 'TRUE', 'yes', 'on', '1', ' y ', 'of', 'n', 'ye', 'tr', '0', 'off', 'no', 'fa'
        let cases = [
            ("t", true),
            ("TRUE", true),
            ("yes", true),
            ("on", true),
            ("1", true),
            (" y ", true),
            ("of", false),
            ("n", false),
            ("ye", true),
            ("tr", true),
            ("0", false),
            ("off", false),
            ("no", false),
            ("fa", false),
            ("False", false),
        ];
        for (s, v) in cases {
            assert_eq!(parse_bool(s).unwrap(), v, "{s:?}");
        }
        for s in ["o", "x", "", "10", "truex", "yess"] {
            assert_eq!(
                err(parse_bool(s)),
                (
                    "22P02".into(),
                    format!("invalid input syntax for type boolean: \"{s}\"")
                ),
                "{s:?}"
            );
        }
    }

    fn date(y: i64, m: u32, d: u32) -> i32 {
        days_from_civil(y, m, d) as i32
    }

    fn ts(y: i64, mo: u32, d: u32, h: i64, mi: i64, s: i64, us: i64) -> i64 {
        days_from_civil(y, mo, d) * USECS_PER_DAY + ((h * 60 + mi) * 60 + s) * 1_000_000 + us
    }

    #[test]
    fn dates_in_the_forms_postgres_reads() {
        let fmt = TextFormat::default();
        let d = |s: &str| parse_date(s, &fmt).unwrap();
        assert_eq!(d("2024-01-31"), date(2024, 1, 31));
        assert_eq!(d(" 2024-01-31 "), date(2024, 1, 31));
        assert_eq!(d("20240131"), date(2024, 1, 31));
        assert_eq!(d("240131"), date(2024, 1, 31));
        assert_eq!(d("2024-01-31 12:00"), date(2024, 1, 31));
        assert_eq!(d("1/2/2024"), date(2024, 1, 2));
        assert_eq!(d("1/2/5"), date(2005, 1, 2));
        assert_eq!(d("1/2/05"), date(2005, 1, 2));
        assert_eq!(d("1/2/105"), date(105, 1, 2));
        assert_eq!(d("1/2/75"), date(1975, 1, 2));
        assert_eq!(d("Jan 31 2024"), date(2024, 1, 31));
        assert_eq!(d("January 31, 2024"), date(2024, 1, 31));
        assert_eq!(d("31 Jan 2024"), date(2024, 1, 31));
        assert_eq!(d("2024 Jan 31"), date(2024, 1, 31));
        assert_eq!(d("2024-Jan-31"), date(2024, 1, 31));
        assert_eq!(d("31-Jan-2024"), date(2024, 1, 31));
        assert_eq!(d("Jan-31-2024"), date(2024, 1, 31));
        assert_eq!(d("2024.01.31"), date(2024, 1, 31));
        assert_eq!(d("2024-1-5"), date(2024, 1, 5));
        assert_eq!(d("0001-01-01 BC"), date(0, 1, 1));
        assert_eq!(d("4713-01-01 BC"), date(-4712, 1, 1));
        assert_eq!(d("4714-11-24 BC"), date(-4713, 11, 24));
        assert_eq!(d("5874897-12-31"), date(5_874_897, 12, 31));
        assert_eq!(d("infinity"), DATE_POS_INFINITY);
        assert_eq!(d("-infinity"), DATE_NEG_INFINITY);
        assert_eq!(d("epoch"), 0);
        assert_eq!(d("EPOCH"), 0);
        let dmy = TextFormat {
            date_order: DateOrder::Dmy,
            ..TextFormat::default()
        };
        assert_eq!(parse_date("1/2/2024", &dmy).unwrap(), date(2024, 2, 1));
    }

    #[test]
    fn date_errors_match_postgres() {
        let fmt = TextFormat::default();
        let e = |s: &str| parse_date(s, &fmt).unwrap_err();
        let x = e("x");
        assert_eq!(
            (x.code, x.message.as_str()),
            ("22007", "invalid input syntax for type date: \"x\"")
        );
        let m = e("2024-13-01");
        assert_eq!(
            (m.code, m.message.as_str()),
            (
                "22008",
                "date/time field value out of range: \"2024-13-01\""
            )
        );
        assert_eq!(
            m.hint.as_deref(),
            Some("Perhaps you need a different \"DateStyle\" setting.")
        );
        let f = e("2024-02-30");
        assert_eq!(
            (f.code, f.message.as_str()),
            (
                "22008",
                "date/time field value out of range: \"2024-02-30\""
            )
        );
        assert_eq!(f.hint, None);
        assert_eq!(
            e("24-01-05").hint.as_deref(),
            Some("Perhaps you need a different \"DateStyle\" setting.")
        );
        assert_eq!(
            e("0000-01-01").message,
            "date/time field value out of range: \"0000-01-01\""
        );
        assert_eq!(
            e("0000-01-01 BC").message,
            "date/time field value out of range: \"0000-01-01 BC\""
        );
        let r = e("4714-11-23 BC");
        assert_eq!(
            (r.code, r.message.as_str()),
            ("22008", "date out of range: \"4714-11-23 BC\"")
        );
        assert_eq!(
            e("5874898-01-01").message,
            "date out of range: \"5874898-01-01\""
        );
        assert_eq!(e("").message, "invalid input syntax for type date: \"\"");
    }

    #[test]
    fn timestamps_in_the_forms_postgres_reads() {
        let fmt = TextFormat::default();
        let t = |s: &str| parse_timestamp(s, &fmt).unwrap();
        assert_eq!(
            t("2024-01-31 12:34:56.789"),
            ts(2024, 1, 31, 12, 34, 56, 789_000)
        );
        assert_eq!(t("2024-01-31T12:34:56Z"), ts(2024, 1, 31, 12, 34, 56, 0));
        assert_eq!(t("2024-01-31T12:34:56+05"), ts(2024, 1, 31, 12, 34, 56, 0)); // zone ignored
        assert_eq!(
            t("2024-01-31 12:34:56.1234567"),
            ts(2024, 1, 31, 12, 34, 56, 123_457)
        );
        assert_eq!(
            t("2024-01-31 12:34:56.9999995"),
            ts(2024, 1, 31, 12, 34, 57, 0)
        );
        assert_eq!(t("1999-12-31 23:59:59.9999999"), ts(2000, 1, 1, 0, 0, 0, 0));
        assert_eq!(t("2024-01-31 24:00:00"), ts(2024, 2, 1, 0, 0, 0, 0));
        assert_eq!(t("2024-01-31 12:34:60"), ts(2024, 1, 31, 12, 35, 0, 0));
        assert_eq!(t("2024-01-31 12:34"), ts(2024, 1, 31, 12, 34, 0, 0));
        assert_eq!(t("2024-01-31"), ts(2024, 1, 31, 0, 0, 0, 0));
        assert_eq!(t("2024-01-31 12:34:56 BC"), ts(-2023, 1, 31, 12, 34, 56, 0));
        assert_eq!(
            t("2024-01-31 12:34:56.5 pm"),
            ts(2024, 1, 31, 12, 34, 56, 500_000)
        );
        assert_eq!(t("2024-01-31 12:00 am"), ts(2024, 1, 31, 0, 0, 0, 0));
        assert_eq!(t("2024-01-31 12:00 pm"), ts(2024, 1, 31, 12, 0, 0, 0));
        assert_eq!(t("2024-01-31 1:2:3.5"), ts(2024, 1, 31, 1, 2, 3, 500_000));
        assert_eq!(
            t("Wed Jan 31 12:34:56 2024"),
            ts(2024, 1, 31, 12, 34, 56, 0)
        );
        assert_eq!(t("2024-01-31 allballs"), ts(2024, 1, 31, 0, 0, 0, 0));
        assert_eq!(t("infinity"), TS_POS_INFINITY);
        assert_eq!(t("-infinity"), TS_NEG_INFINITY);
        assert_eq!(t(" epoch "), 0);
        let noon = TextFormat {
            now_micros: Some(ts(2024, 5, 6, 7, 8, 9, 0)),
            ..TextFormat::default()
        };
        assert_eq!(
            parse_timestamp("today", &noon).unwrap(),
            ts(2024, 5, 6, 0, 0, 0, 0)
        );
        assert_eq!(
            parse_timestamp("tomorrow", &noon).unwrap(),
            ts(2024, 5, 7, 0, 0, 0, 0)
        );
        assert_eq!(
            parse_timestamp("now", &noon).unwrap(),
            ts(2024, 5, 6, 7, 8, 9, 0)
        );
        assert_eq!(
            parse_timestamp("today 12:00", &noon).unwrap(),
            ts(2024, 5, 6, 12, 0, 0, 0)
        );
    }

    #[test]
    fn the_iso_fast_path_agrees_with_the_general_path() {
        let fmt = TextFormat::default();
        for s in [
            "2024-01-31",
            "2024-02-29 23:59:59.999999",
            "1999-12-31T00:00",
            "2024-01-31 12:34:56.5+05:30",
            "2024-01-31 12:34:56-08",
            "2024-01-31T12:34:56Z",
            "0001-01-01 00:00:00",
            "9999-12-31 23:59:59.1",
        ] {
            let fast = read_iso(s).unwrap_or_else(|| panic!("{s} takes the fast path"));
            let Ok(Decoded::Value(general)) = decode_general(s, &fmt) else {
                panic!("{s}")
            };
            assert_eq!(
                (fast.days, fast.time_micros),
                (general.days, general.time_micros),
                "{s}"
            );
            let zone = |z: Option<ZoneSpec>| match z {
                Some(ZoneSpec::Fixed(e)) => Some(e),
                _ => None,
            };
            assert_eq!(zone(fast.zone), zone(general.zone), "{s}");
        }
        for s in [
            "2024-01-31 24:00:00",
            "2024-13-01",
            "2024-01-31 12:34:56.1234567",
            " 2024-01-31",
            "2024-01-31 12:34:60",
        ] {
            assert!(read_iso(s).is_none(), "{s}");
        }
    }

    #[test]
    fn timestamp_errors_match_postgres() {
        let fmt = TextFormat::default();
        let e = |s: &str| parse_timestamp(s, &fmt).unwrap_err();
        let x = e("x");
        assert_eq!(
            (x.code, x.message.as_str()),
            ("22007", "invalid input syntax for type timestamp: \"x\"")
        );
        for s in [
            "2024-01-31 24:00:01",
            "2024-01-31 12:60:00",
            "2024-01-31 25:00",
            "2024-01-31 13:00 pm",
        ] {
            let f = e(s);
            assert_eq!(
                (f.code, f.message),
                (
                    "22008",
                    format!("date/time field value out of range: \"{s}\"")
                )
            );
        }
        assert_eq!(
            e("294277-01-01").message,
            "timestamp out of range: \"294277-01-01\""
        );
        assert_eq!(
            e("infinity 12:00").message,
            "invalid input syntax for type timestamp: \"infinity 12:00\""
        );
        let z = parse_timestamptz("2024-01-31 12:34:56 Foo/Bar", &fmt).unwrap_err();
        assert_eq!(
            (z.code, z.message.as_str()),
            ("22023", "time zone \"foo/bar\" not recognized")
        );
        let w = parse_timestamptz("2024-01-31 12:34:56 foo", &fmt).unwrap_err();
        assert_eq!(
            (w.code, w.message.as_str()),
            ("22007", "invalid input syntax for type timestamp with time zone: \"2024-01-31 12:34:56 foo\"")
        );
        let d = parse_timestamptz("2024-01-31 12:34:56 +16:00", &fmt).unwrap_err();
        assert_eq!(
            (d.code, d.message.as_str()),
            (
                "22009",
                "time zone displacement out of range: \"2024-01-31 12:34:56 +16:00\""
            )
        );
        assert_eq!(
            parse_timestamptz("2024-01-31 12:34:56 +05:60", &fmt)
                .unwrap_err()
                .code,
            "22009"
        );
    }

    #[test]
    fn timestamptz_offsets_and_session_zone() {
        // SET timezone = 'UTC'; SELECT '2024-01-31 12:34:56+02'::timestamptz → 10:34:56+00, …
        let utc = TextFormat::default();
        let tz = |s: &str, f: &TextFormat| parse_timestamptz(s, f).unwrap();
        assert_eq!(
            tz("2024-01-31 12:34:56+02", &utc),
            ts(2024, 1, 31, 10, 34, 56, 0)
        );
        assert_eq!(
            tz("2024-01-31 12:34:56+05:30", &utc),
            ts(2024, 1, 31, 7, 4, 56, 0)
        );
        assert_eq!(
            tz("2024-01-31 12:34:56Z", &utc),
            ts(2024, 1, 31, 12, 34, 56, 0)
        );
        assert_eq!(
            tz("2024-01-31 12:34:56", &utc),
            ts(2024, 1, 31, 12, 34, 56, 0)
        );
        assert_eq!(
            tz("2024-01-31 12:34:56 +0530", &utc),
            ts(2024, 1, 31, 7, 4, 56, 0)
        );
        assert_eq!(
            tz("2024-01-31 12:34:56-08:00:30", &utc),
            ts(2024, 1, 31, 20, 35, 26, 0)
        );
        assert_eq!(
            tz("2024-01-31 12:34:56 +15:00", &utc),
            ts(2024, 1, 30, 21, 34, 56, 0)
        );
        assert_eq!(
            tz("2024-01-31 12:34:56 UTC", &utc),
            ts(2024, 1, 31, 12, 34, 56, 0)
        );
        assert_eq!(
            tz("2024-01-31 12:34:56 EST", &utc),
            ts(2024, 1, 31, 17, 34, 56, 0)
        );
        assert_eq!(
            tz("2024-01-31 12:34:56 Europe/Berlin", &utc),
            ts(2024, 1, 31, 11, 34, 56, 0)
        );
        assert_eq!(
            tz("2024-01-31T12:34:56.123+01:00", &utc),
            ts(2024, 1, 31, 11, 34, 56, 123_000)
        );
        assert_eq!(tz(" epoch ", &utc), 0);
        // SET timezone = '+05:30' (POSIX: UTC−05:30): '2024-01-31 12:34:56' shows as …-05:30.
        let posix = TextFormat::default().with_time_zone("+05:30").unwrap();
        assert_eq!(
            tz("2024-01-31 12:34:56", &posix),
            ts(2024, 1, 31, 18, 4, 56, 0)
        );
        let minus3 = TextFormat::default().with_time_zone("-3").unwrap();
        assert_eq!(
            tz("2024-01-31 12:34:56", &minus3),
            ts(2024, 1, 31, 15, 34, 56, 0)
        );
        let berlin = TextFormat::default()
            .with_time_zone("Europe/Berlin")
            .unwrap();
        assert_eq!(tz("2024-07-01 12:00", &berlin), ts(2024, 7, 1, 10, 0, 0, 0));
        assert_eq!(
            tz("2024-10-27 02:30", &berlin),
            ts(2024, 10, 27, 1, 30, 0, 0)
        );
        let bad = TextFormat::default().with_time_zone("Foo").unwrap_err();
        assert_eq!(
            (bad.code, bad.message.as_str()),
            ("22023", "invalid value for parameter \"TimeZone\": \"Foo\"")
        );
    }

    #[test]
    fn character_types_check_lengths_like_postgres() {
        assert_eq!(check_varchar("abc", 3).unwrap(), "abc");
        assert_eq!(check_varchar("abc   ", 3).unwrap(), "abc");
        assert_eq!(check_varchar("äöü", 3).unwrap(), "äöü");
        let e = check_varchar("abcd", 3).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("22001", "value too long for type character varying(3)")
        );
        assert_eq!(bpchar_value("ab", 3).unwrap(), "ab ");
        assert_eq!(bpchar_value("abc  ", 3).unwrap(), "abc");
        assert_eq!(bpchar_value(" ", 3).unwrap(), "   ");
        assert_eq!(bpchar_value("é", 2).unwrap(), "é ");
        let e = bpchar_value("abcd", 3).unwrap_err();
        assert_eq!(e.message, "value too long for type character(3)");
        assert_eq!(
            stored_text("anything at all", PgType::Varchar(None)).unwrap(),
            "anything at all"
        );
    }

    #[test]
    fn column_parser_builds_the_column_type() {
        let fmt = TextFormat::default();
        for ty in [
            PgType::Bool,
            PgType::Int2,
            PgType::Int4,
            PgType::Int8,
            PgType::Float4,
            PgType::Float8,
            PgType::Numeric {
                precision: 10,
                scale: 2,
            },
            PgType::Text,
            PgType::Varchar(Some(5)),
            PgType::Bpchar(2),
            PgType::Date,
            PgType::Timestamp,
            PgType::Timestamptz,
        ] {
            let mut p = ColumnParser::new(ty);
            p.append(None, &fmt).unwrap();
            let a = p.finish();
            assert_eq!(a.data_type(), &ty.arrow_type());
            assert_eq!((a.len(), a.null_count()), (1, 1));
        }
        let mut p = ColumnParser::new(PgType::Int4);
        p.append(Some(" 42 "), &fmt).unwrap();
        assert!(p.append(Some("x"), &fmt).is_err());
        p.append(None, &fmt).unwrap();
        assert_eq!(p.len(), 2);
        let a = p.finish();
        assert_eq!(a.as_primitive::<Int32Type>().value(0), 42);
        assert!(a.is_null(1));
        assert!(p.is_empty());

        let mut p = ColumnParser::new(PgType::Timestamptz);
        p.append(Some("2024-01-31 12:34:56+02"), &fmt).unwrap();
        assert_eq!(
            p.finish().data_type(),
            &DataType::Timestamp(TimeUnit::Microsecond, Some(TIMESTAMPTZ_ZONE.into()))
        );

        let mut b = datafusion::arrow::array::make_builder(&PgType::Bpchar(3).arrow_type(), 4);
        parse_into(b.as_mut(), PgType::Bpchar(3), Some("ab"), &fmt).unwrap();
        parse_into(b.as_mut(), PgType::Bpchar(3), None, &fmt).unwrap();
        let a = b.finish();
        assert_eq!(a.as_string::<i32>().value(0), "ab ");
        assert!(a.is_null(1));
        assert!(parse_into(b.as_mut(), PgType::Int4, Some("1"), &fmt).is_err());

        let a = parse_array(
            PgType::Numeric {
                precision: 5,
                scale: 2,
            },
            [Some("1.5"), None],
            &fmt,
        )
        .unwrap();
        assert_eq!(
            a.as_primitive::<datafusion::arrow::datatypes::Decimal128Type>()
                .value(0),
            150
        );
    }
}
