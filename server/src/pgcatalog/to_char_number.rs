//! `to_char(number, text)`: PostgreSQL's number templates, for `smallint`, `integer`,
//! `bigint`, `real`, `double precision` and `numeric` values.
//!
//! ## The template
//!
//! A template is read once into a list of items and a description of the number it
//! expects: `pre` digit places before the decimal point and `post` after it. Items:
//!
//! | item | writes |
//! |---|---|
//! | `9` | a digit, or a blank before the number's first digit |
//! | `0` | a digit, or `0` before the first digit: from the first `0` of the template on, every place is zero-padded |
//! | `.` `D` | the decimal point |
//! | `,` `G` | a comma once a digit has been written, a blank before |
//! | `S` | the sign, `+` or `-`, next to the number when it leads the template, at its place when it follows it |
//! | `MI` `PL` `SG` | `-` (or a blank), `+` (or a blank), and either, at their place |
//! | `PR` | a negative number in angle brackets (`<5>`), blanks around a positive one |
//! | `L` | the currency symbol: a blank, as PostgreSQL writes it in the C locale |
//! | `V` | shifts: each digit place after it multiplies the value by 10 |
//! | `TH` `th` | the ordinal ending of a non-negative whole number |
//! | `RN` `rn` | the value as a Roman numeral (1–3999), right-aligned in 15 characters |
//! | `EEEE` | scientific notation, `d.dde+XX` |
//! | `FM` | fill mode: no padding blanks, no sign blank, no trailing fractional zeros (but those a `0` place asks for) |
//! | `"text"`, anything else | itself |
//!
//! Without `S`, `MI`, `SG` or `PR` a sign place stands right before the number's first
//! character: a blank, or `-`. A number whose integer digits do not fit the `9`/`0`
//! places is written as `#` in each place. A zero with nothing written after its decimal
//! point is written `0` in its last integer place (`to_char(0, '999')` is `   0`).
//!
//! The value is rounded to `post` places first: half away from zero for `numeric` and
//! whole numbers, as C's `printf` rounds the exact binary value for `real` and `double
//! precision`, whose digits beyond their precision (15 and 6) are written as zeros.

// A template's errors are PostgreSQL errors, raised at most once per call.
#![allow(clippy::result_large_err)]

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use iolab_catalog::{sqlstate, PgError};

/// One item of a number template.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Item {
    Nine,
    Zero,
    Point,
    Comma,
    /// `S`.
    Sign,
    Minus,
    Plus,
    PlusMinus,
    Brackets,
    Currency,
    Shift,
    Ordinal {
        upper: bool,
    },
    Roman {
        upper: bool,
    },
    Exponent,
    Text(String),
}

/// A parsed template.
#[derive(Debug, Default)]
struct Template {
    items: Vec<Item>,
    fill_mode: bool,
    /// Digit places before the decimal point (those after `V` too) and after it.
    pre: usize,
    post: usize,
    /// Digit places after `V`: the value is multiplied by 10 to this power.
    shift: u32,
    /// The index among the integer places of the first `0`, if any.
    first_zero: Option<usize>,
    /// How many fractional places up to and including the last `0` after the point.
    kept_fraction: usize,
}

fn template_error(message: &str) -> PgError {
    PgError::new(sqlstate::SYNTAX_ERROR, message.to_string())
}

/// The keywords of number templates (`NUM_keywords`), longest first where one starts
/// another.
const KEYWORDS: &[(&str, fn() -> Option<Item>)] = &[
    ("EEEE", || Some(Item::Exponent)),
    ("eeee", || Some(Item::Exponent)),
    ("FM", || None),
    ("fm", || None),
    ("MI", || Some(Item::Minus)),
    ("mi", || Some(Item::Minus)),
    ("PL", || Some(Item::Plus)),
    ("pl", || Some(Item::Plus)),
    ("PR", || Some(Item::Brackets)),
    ("pr", || Some(Item::Brackets)),
    ("RN", || Some(Item::Roman { upper: true })),
    ("rn", || Some(Item::Roman { upper: false })),
    ("SG", || Some(Item::PlusMinus)),
    ("sg", || Some(Item::PlusMinus)),
    ("TH", || Some(Item::Ordinal { upper: true })),
    ("th", || Some(Item::Ordinal { upper: false })),
    ("9", || Some(Item::Nine)),
    ("0", || Some(Item::Zero)),
    (".", || Some(Item::Point)),
    ("D", || Some(Item::Point)),
    ("d", || Some(Item::Point)),
    (",", || Some(Item::Comma)),
    ("G", || Some(Item::Comma)),
    ("g", || Some(Item::Comma)),
    ("S", || Some(Item::Sign)),
    ("s", || Some(Item::Sign)),
    ("L", || Some(Item::Currency)),
    ("l", || Some(Item::Currency)),
    ("V", || Some(Item::Shift)),
    ("v", || Some(Item::Shift)),
];

fn parse(text: &str) -> Result<Template, PgError> {
    let mut t = Template::default();
    let mut rest = text;
    let (mut seen_point, mut seen_shift) = (false, false);
    let has = |t: &Template, item: &Item| t.items.contains(item);
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            let end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
            let inner = rest[1..end.max(1)].trim_end_matches('"').to_string();
            t.items.push(Item::Text(inner));
            rest = &rest[end..];
            continue;
        }
        let Some(&(name, make)) = KEYWORDS.iter().find(|(name, _)| rest.starts_with(name)) else {
            t.items.push(Item::Text(c.to_string()));
            rest = &rest[c.len_utf8()..];
            continue;
        };
        rest = &rest[name.len()..];
        let Some(item) = make() else {
            t.fill_mode = true;
            continue;
        };
        match &item {
            Item::Nine | Item::Zero => {
                if has(&t, &Item::Brackets) {
                    return Err(template_error("\"9\" must be ahead of \"PR\""));
                }
                if item == Item::Zero && t.first_zero.is_none() && !seen_point {
                    t.first_zero = Some(t.pre);
                }
                if seen_shift {
                    t.shift += 1;
                    t.pre += 1;
                } else if seen_point {
                    t.post += 1;
                    if item == Item::Zero {
                        t.kept_fraction = t.post;
                    }
                } else {
                    t.pre += 1;
                }
            }
            Item::Point => {
                if seen_point {
                    return Err(template_error("multiple decimal points"));
                }
                if seen_shift {
                    return Err(template_error(
                        "cannot use \"V\" and decimal point together",
                    ));
                }
                seen_point = true;
            }
            Item::Shift => {
                if seen_point {
                    return Err(template_error(
                        "cannot use \"V\" and decimal point together",
                    ));
                }
                seen_shift = true;
            }
            Item::Sign if has(&t, &Item::Sign) => {
                return Err(template_error("cannot use \"S\" twice"))
            }
            Item::Sign
                if [Item::Minus, Item::Plus, Item::PlusMinus, Item::Brackets]
                    .iter()
                    .any(|i| has(&t, i)) =>
            {
                return Err(template_error(
                    "cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together",
                ))
            }
            Item::Minus | Item::Plus | Item::PlusMinus if has(&t, &Item::Sign) => {
                return Err(template_error(
                    "cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together",
                ))
            }
            Item::Brackets
                if [Item::Sign, Item::Minus, Item::Plus, Item::PlusMinus]
                    .iter()
                    .any(|i| has(&t, i)) =>
            {
                return Err(template_error(
                    "cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together",
                ))
            }
            Item::Exponent if has(&t, &Item::Exponent) => {
                return Err(template_error("cannot use \"EEEE\" twice"))
            }
            _ => {}
        }
        t.items.push(item);
    }
    if has(&t, &Item::Exponent)
        && (t.fill_mode
            || (t.items.iter()).any(|i| {
                matches!(
                    i,
                    Item::Brackets
                        | Item::Minus
                        | Item::Plus
                        | Item::PlusMinus
                        | Item::Roman { .. }
                        | Item::Shift
                )
            }))
    {
        return Err(
            template_error("\"EEEE\" is incompatible with other formats").with_detail(
                "\"EEEE\" may only be used together with digit and decimal point patterns.",
            ),
        );
    }
    Ok(t)
}

/// A number as the template writes it: its sign and its digits, rounded.
#[derive(Debug, PartialEq)]
pub struct Digits {
    negative: bool,
    /// The integer digits without leading zeros (empty for zero).
    integer: String,
    /// Whether the number's text has a decimal point: the template's point is written
    /// only then (a float whose digits all go before it has none).
    point: bool,
    /// `post` fractional digits, fewer for a float beyond its precision.
    fraction: String,
}

/// The value at `row` of `value` (a number) times 10^`shift`, rounded to `post` places
/// (floats: as C's `%.*f` writes them); `None` for NaN and infinities.
fn digits_of(
    value: &ArrayRef,
    row: usize,
    post: usize,
    shift: u32,
) -> Result<Option<Digits>, PgError> {
    if let Some(v) = whole_number(value, row) {
        return Ok(Some(decimal_digits(v, 0, post, shift)));
    }
    Ok(Some(match value.data_type() {
        DataType::Decimal128(_, scale) => {
            let v = value.as_primitive::<Decimal128Type>().value(row);
            decimal_digits(v, (*scale).max(0) as u32, post, shift)
        }
        // The shift is a multiplication in the value's own type, as PostgreSQL's.
        DataType::Float64 => {
            let v = value.as_primitive::<Float64Type>().value(row) * 10f64.powi(shift as i32);
            match v.is_finite() {
                true => float_digits(v, post, 15),
                false => return Ok(None),
            }
        }
        DataType::Float32 => {
            let v = value.as_primitive::<Float32Type>().value(row) * 10f32.powi(shift as i32);
            match v.is_finite() {
                true => float_digits(f64::from(v), post, 6),
                false => return Ok(None),
            }
        }
        other => return Err(super::to_char::undefined_to_char(other)),
    }))
}

/// The value at `row` of a column of whole numbers; `None` for other types.
fn whole_number(value: &ArrayRef, row: usize) -> Option<i128> {
    Some(match value.data_type() {
        DataType::Int8 => i128::from(value.as_primitive::<Int8Type>().value(row)),
        DataType::Int16 => i128::from(value.as_primitive::<Int16Type>().value(row)),
        DataType::Int32 => i128::from(value.as_primitive::<Int32Type>().value(row)),
        DataType::Int64 => i128::from(value.as_primitive::<Int64Type>().value(row)),
        _ => return None,
    })
}

/// The value at `row` of a column of `real` or `double precision`, as an f64.
fn float_value(value: &ArrayRef, row: usize) -> f64 {
    match value.data_type() {
        DataType::Float32 => f64::from(value.as_primitive::<Float32Type>().value(row)),
        _ => value.as_primitive::<Float64Type>().value(row),
    }
}

/// `v / 10^scale × 10^shift`, rounded half away from zero to `post` places.
fn decimal_digits(v: i128, scale: u32, post: usize, shift: u32) -> Digits {
    let negative = v < 0;
    let mut magnitude = v.unsigned_abs();
    // Bring the value to `post` fractional digits after the shift.
    let have = scale as i64 - i64::from(shift);
    let want = post as i64;
    if want >= have {
        magnitude = magnitude.saturating_mul(10u128.saturating_pow((want - have) as u32));
    } else {
        let divisor = 10u128.saturating_pow((have - want) as u32);
        let (q, r) = (magnitude / divisor, magnitude % divisor);
        magnitude = q + u128::from(r * 2 >= divisor);
    }
    let text = magnitude.to_string();
    let text = format!("{text:0>width$}", width = post + 1);
    let (integer, fraction) = text.split_at(text.len() - post);
    let integer = integer.trim_start_matches('0').to_string();
    Digits {
        negative: negative && (magnitude != 0),
        integer,
        point: post > 0,
        fraction: fraction.to_string(),
    }
}

/// A float's digits as `%.*f` writes them, with at most `precision` significant digits
/// (PostgreSQL's `DBL_DIG` / `FLT_DIG` limit: fractional places beyond are not written).
/// The sign is the value's: `-0.05` is written `-0`.
fn float_digits(v: f64, post: usize, precision: usize) -> Digits {
    let integer_len = format!("{:.0}", v.abs()).len();
    let shown = match integer_len >= precision {
        true => 0,
        false => post.min(precision - integer_len),
    };
    let text = format!("{:.*}", shown, v.abs());
    let (integer, fraction) = text.split_once('.').unwrap_or((&text, ""));
    Digits {
        negative: v < 0.0,
        integer: integer.trim_start_matches('0').to_string(),
        point: shown > 0,
        fraction: fraction.to_string(),
    }
}

/// `to_char(value, template)` of row `row` (a number).
pub fn format_number(value: &ArrayRef, row: usize, template: &str) -> Result<String, PgError> {
    let t = parse(template)?;
    if let Some(upper) = (t.items.iter()).find_map(|i| match i {
        Item::Roman { upper } => Some(*upper),
        _ => None,
    }) {
        return Ok(roman(value, row, upper, t.fill_mode)?);
    }
    if t.items.contains(&Item::Exponent) {
        return scientific(value, row, &t);
    }
    let Some(digits) = digits_of(value, row, t.post, t.shift)? else {
        return Ok(not_a_number(value, row, &t));
    };
    if digits.integer.len() > t.pre {
        return Ok(write(&t, &overflowed(&t, &digits)));
    }
    Ok(write(&t, &digits))
}

/// What a number too wide for its places writes: `#` in each (and a point).
fn overflowed(t: &Template, d: &Digits) -> Digits {
    Digits {
        negative: d.negative,
        integer: "#".repeat(t.pre),
        point: true,
        fraction: "#".repeat(d.fraction.len()),
    }
}

/// NaN is written ` NaN`; an infinity as a number too wide for its places.
fn not_a_number(value: &ArrayRef, row: usize, t: &Template) -> String {
    let v = float_value(value, row);
    if v.is_nan() {
        return " NaN".into();
    }
    let wide = Digits {
        negative: v < 0.0,
        integer: String::new(),
        point: t.post > 0,
        fraction: "0".repeat(t.post),
    };
    write(t, &overflowed(t, &wide))
}

/// Writes `d` into the template's places (see the module comment).
fn write(t: &Template, d: &Digits) -> String {
    let overflow = d.integer.starts_with('#');
    // Fill mode drops trailing fractional zeros, but not those a `0` place keeps.
    let mut fraction = d.fraction.clone();
    if t.fill_mode && !overflow {
        while fraction.len() > t.kept_fraction && fraction.ends_with('0') {
            fraction.pop();
        }
    }
    // A zero with nothing after its point shows a 0 in its last integer place.
    let mut integer = d.integer.clone();
    if integer.is_empty() && fraction.bytes().all(|b| b == b'0') && (fraction.is_empty()) {
        integer.push('0');
    }
    let first_digit_place = t.pre - integer.len();
    let zero_from = t.first_zero.unwrap_or(usize::MAX).min(first_digit_place);
    let explicit_sign = (t.items.iter()).any(|i| {
        matches!(
            i,
            Item::Sign | Item::Minus | Item::PlusMinus | Item::Brackets
        )
    });
    let sign_char = |plus: char| if d.negative { '-' } else { plus };
    let mut out = String::new();
    let mut sign_pending = true;
    let (mut place, mut fraction_place) = (0usize, 0usize);
    let mut after_point = false;
    let mut written_digit = false;
    // The sign (and a `PR`'s `<`) that stands next to the number, before its first
    // character.
    let leading_sign = |out: &mut String, pending: &mut bool| {
        if !*pending {
            return;
        }
        *pending = false;
        let s = match t.items.first() {
            _ if has_leading(t, &Item::Sign) => Some(sign_char('+')),
            _ if t.items.contains(&Item::Brackets) => Some(if d.negative { '<' } else { ' ' }),
            _ if explicit_sign => None,
            _ => Some(sign_char(' ')),
        };
        match s {
            Some(' ') if t.fill_mode => {}
            Some(c) => out.push(c),
            None => {}
        }
    };
    for (index, item) in t.items.iter().enumerate() {
        match item {
            Item::Nine | Item::Zero if !after_point => {
                if place < first_digit_place {
                    if place >= zero_from {
                        leading_sign(&mut out, &mut sign_pending);
                        out.push('0');
                        written_digit = true;
                    } else if !t.fill_mode {
                        out.push(' ');
                    }
                } else {
                    leading_sign(&mut out, &mut sign_pending);
                    let digit = integer.as_bytes()[place - first_digit_place];
                    out.push(char::from(digit));
                    written_digit = true;
                }
                place += 1;
            }
            Item::Nine | Item::Zero => {
                if let Some(&digit) = fraction.as_bytes().get(fraction_place) {
                    out.push(char::from(digit));
                }
                fraction_place += 1;
            }
            Item::Point => {
                leading_sign(&mut out, &mut sign_pending);
                if d.point {
                    out.push('.');
                }
                after_point = true;
            }
            Item::Comma => match written_digit || after_point {
                true => out.push(','),
                false if !t.fill_mode => out.push(' '),
                false => {}
            },
            Item::Sign => {
                if !is_leading(t, index) {
                    out.push(sign_char('+'));
                }
            }
            Item::Minus => match (d.negative, t.fill_mode) {
                (true, _) => out.push('-'),
                (false, false) => out.push(' '),
                (false, true) => {}
            },
            Item::Plus => match (d.negative, t.fill_mode) {
                (false, _) => out.push('+'),
                (true, false) => out.push(' '),
                (true, true) => {}
            },
            Item::PlusMinus => out.push(sign_char('+')),
            Item::Brackets => match (d.negative, t.fill_mode) {
                (true, _) => out.push('>'),
                (false, false) => out.push(' '),
                (false, true) => {}
            },
            Item::Currency => out.push(' '),
            Item::Shift | Item::Exponent | Item::Roman { .. } => {}
            Item::Ordinal { upper } => {
                if !d.negative && !overflow {
                    out.push_str(&super::to_char::ordinal_suffix(&integer, *upper));
                }
            }
            Item::Text(text) => out.push_str(text),
        }
    }
    leading_sign(&mut out, &mut sign_pending);
    out
}

/// Whether the template's `S` stands before its first digit place.
fn has_leading(t: &Template, item: &Item) -> bool {
    (t.items.iter())
        .position(|i| i == item)
        .is_some_and(|at| is_leading(t, at))
}

fn is_leading(t: &Template, index: usize) -> bool {
    !t.items[..index]
        .iter()
        .any(|i| matches!(i, Item::Nine | Item::Zero | Item::Point))
}

/// `RN`: the value rounded to a whole number, as a Roman numeral, right-aligned in 15
/// characters (fill mode: not padded); `#` × 15 outside 1–3999.
fn roman(value: &ArrayRef, row: usize, upper: bool, fill_mode: bool) -> Result<String, PgError> {
    let n = match digits_of(value, row, 0, 0)? {
        Some(d) if !d.negative && d.integer.len() <= 4 => d.integer.parse::<u32>().unwrap_or(0),
        _ => 0,
    };
    if !(1..=3999).contains(&n) {
        return Ok("#".repeat(15));
    }
    const UNITS: [(u32, &str); 13] = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut left = n;
    let mut text = String::new();
    for (unit, letters) in UNITS {
        while left >= unit {
            text.push_str(letters);
            left -= unit;
        }
    }
    if !upper {
        text = text.to_lowercase();
    }
    Ok(match fill_mode {
        true => text,
        false => format!("{text:>15}"),
    })
}

/// `EEEE`: ` d.ddde±XX` (or `-` first) with `post` digits after the point. Floats round
/// as C's `%e` does; whole numbers and `numeric` take their exponent before rounding, as
/// PostgreSQL's `numeric_out_sci` does, so that 99.995 with two places is `10.00e+01`.
fn scientific(value: &ArrayRef, row: usize, t: &Template) -> Result<String, PgError> {
    let (negative, mantissa, exponent) = match value.data_type() {
        DataType::Float32 | DataType::Float64 => {
            let v = float_value(value, row);
            if !v.is_finite() {
                return Ok(format!(" #.{}", "#".repeat(t.post + 4)));
            }
            let text = format!("{:.*e}", t.post, v.abs());
            let (mantissa, exponent) = text.split_once('e').expect("{:e} writes an e");
            (
                v < 0.0,
                mantissa.to_string(),
                exponent.parse().expect("an exponent"),
            )
        }
        DataType::Decimal128(_, scale) => {
            let raw = value.as_primitive::<Decimal128Type>().value(row);
            decimal_scientific(raw, (*scale).max(0) as u32, t.post)
        }
        other => {
            let raw =
                whole_number(value, row).ok_or_else(|| super::to_char::undefined_to_char(other))?;
            decimal_scientific(raw, 0, t.post)
        }
    };
    let sign = if negative { '-' } else { ' ' };
    let exp_sign = if exponent < 0 { '-' } else { '+' };
    Ok(format!("{sign}{mantissa}e{exp_sign}{:02}", exponent.abs()))
}

/// `raw / 10^scale` as a mantissa of `post` places and an exponent (see [`scientific`]).
fn decimal_scientific(raw: i128, scale: u32, post: usize) -> (bool, String, i32) {
    let significant = raw.unsigned_abs().to_string();
    let exponent = match raw {
        0 => 0,
        _ => significant.len() as i32 - 1 - scale as i32,
    };
    let shifted = decimal_digits(raw, significant.len() as u32 - 1, post, 0);
    let integer = match shifted.integer.is_empty() {
        true => "0".to_string(),
        false => shifted.integer,
    };
    let mantissa = match post {
        0 => integer,
        _ => format!("{integer}.{}", shifted.fraction),
    };
    (raw < 0, mantissa, exponent)
}

/// Is `value` a number `to_char` writes with a number template?
pub fn is_number(value: &ArrayRef) -> bool {
    matches!(
        value.data_type(),
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Decimal128(..)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Decimal128Array, Float64Array, Int64Array};
    use std::sync::Arc;

    fn numeric(text: &str) -> ArrayRef {
        let (int, frac) = text.split_once('.').unwrap_or((text, ""));
        let raw: i128 = format!("{int}{frac}").parse().unwrap();
        Arc::new(
            Decimal128Array::from(vec![raw])
                .with_precision_and_scale(38, frac.len() as i8)
                .unwrap(),
        )
    }

    /// Cases PostgreSQL 18 printed (`SELECT to_char(v::numeric, template)`).
    #[test]
    fn numeric_templates_write_what_postgresql_writes() {
        let cases = [
            ("0", "999", "   0"),
            ("-5", "999", "  -5"),
            ("-1234.5", "999", "-###"),
            ("12.345", "9.99", " #.##"),
            ("0.5", "9.99", "  .50"),
            ("0", "FM99.99", "0."),
            ("0.5", "FM99.99", ".5"),
            ("0", "FM99.90", ".00"),
            ("12.345", "FM99.99", "12.35"),
            ("-5", "099", "-005"),
            ("-1234.5", "9,999", "-1,235"),
            ("123456", "9,999", " #,###"),
            ("5", "S999", "  +5"),
            ("-5", "999S", "  5-"),
            ("-5", "MI999", "-  5"),
            ("5", "999MI", "  5 "),
            ("5", "PL999", "+   5"),
            ("-5", "PL999", "   -5"),
            ("-5", "SG999", "-  5"),
            ("-5", "999PR", "  <5>"),
            ("5", "999PR", "   5 "),
            ("12.345", "99V9", " 123"),
            ("5", "RN", "              V"),
            ("0", "RN", "###############"),
            ("12.345", "FMRN", "XII"),
            ("-1234.5", "9.99EEEE", "-1.23e+03"),
            ("99.995", "9.99EEEE", " 10.00e+01"),
            ("0", "9.99EEEE", " 0.00e+00"),
            ("0.5", "9.99EEEE", " 5.00e-01"),
            ("1", "9th", " 1st"),
            ("-5", "9th", "-5"),
            ("5", "L999", "    5"),
            ("-1234.5", "FM9G999D00", "-1,234.50"),
            ("0", "90.9", "  0.0"),
            ("-5", "9990", "   -5"),
            ("0", "FM00.00", "00.00"),
        ];
        for (value, template, want) in cases {
            let got = format_number(&numeric(value), 0, template).unwrap();
            assert_eq!(got, want, "to_char({value}, '{template}')");
        }
    }

    #[test]
    fn whole_numbers_and_floats() {
        let ints: ArrayRef = Arc::new(Int64Array::from(vec![1234567]));
        assert_eq!(format_number(&ints, 0, "9G999G999").unwrap(), " 1,234,567");
        let floats: ArrayRef = Arc::new(Float64Array::from(vec![2.5, f64::NAN, -0.05, 1e300]));
        assert_eq!(format_number(&floats, 0, "9.9").unwrap(), " 2.5");
        assert_eq!(format_number(&floats, 1, "999.99").unwrap(), " NaN");
        assert_eq!(format_number(&floats, 2, "999").unwrap(), "  -0");
        assert_eq!(format_number(&floats, 3, "999.99").unwrap(), " ###.");
    }

    #[test]
    fn bad_templates_fail_as_postgresql_s() {
        let one = numeric("1");
        for template in [
            "9.9.9",
            "99V9.9",
            "S9S",
            "S9MI",
            "9PR9",
            "9.99EEEEPR",
            "FM9.9EEEE",
        ] {
            let err = format_number(&one, 0, template).unwrap_err();
            assert_eq!(err.code, sqlstate::SYNTAX_ERROR, "{template}");
        }
    }
}
