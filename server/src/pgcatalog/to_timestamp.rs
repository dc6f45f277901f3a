//! `to_timestamp(text, template)` and `to_date(text, template)`: text read with the
//! patterns `to_char` writes (`super::to_char`'s table), and `to_timestamp(seconds)`.
//! DataFusion's functions of these names read chrono's `%Y` formats.
//!
//! ## Reading
//!
//! The template is walked left to right, the input alongside it, as PostgreSQL does
//! outside `FX` mode:
//!
//! - a pattern reads its field: a number of digits — exactly the pattern's width (`YYYY`
//!   4, `MM` 2, `US` 6) when another pattern follows with nothing between (`YYYYMMDD`),
//!   else as many as there are — or a name (`Mon`, `Month`, `Day`, `AM`, `BC`) in any
//!   case; blanks before a field are skipped; a `TH` suffix in the template skips one in
//!   the input;
//! - a blank in the template skips any blanks in the input; another non-pattern character
//!   skips one separator (any character that is not a letter or digit) in the input, or
//!   nothing when there is none; `"text"` skips as many characters as it has;
//! - `FM`, `TM`, `FX` and `SP` are accepted and change nothing.
//!
//! Fields not given are year 0 (1 BC, as PostgreSQL), January, the 1st, midnight. `YY`
//! and `YYY` years of fewer digits are taken nearest 2020 (`24` is 2024, `99` 1999).
//! `TZH`/`TZM` give the offset; without them a `to_timestamp` is read in the session's
//! zone, which `sql::session_time` passes as a third argument.

// A reading's errors are PostgreSQL errors, raised at most once per call.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Date32Array, PrimitiveArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, TimestampMicrosecondType};
use datafusion::error::Result;
use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature,
    Volatility,
};
use iolab_catalog::types::TIMESTAMPTZ_ZONE;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::values::{days_from_civil, days_in_month, SessionZone, USECS_PER_DAY};

use super::functions::pg;
use super::to_char::{pattern_at, Pattern, DAYS, MONTHS};
use super::zoned_time::{argument_arrays, result, timestamptz};

/// Registers `to_timestamp` and `to_date` into a session's state (in place of
/// DataFusion's).
pub fn register(state: &mut SessionState) -> Result<()> {
    for date in [false, true] {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(ToTimestamp::new(date))))?;
    }
    Ok(())
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ToTimestamp {
    /// `to_date` (a date), else `to_timestamp` (a timestamptz).
    date: bool,
    signature: Signature,
}

impl ToTimestamp {
    fn new(date: bool) -> ToTimestamp {
        let text = || DataType::Utf8;
        let mut forms = vec![TypeSignature::Exact(vec![text(), text()])];
        if !date {
            forms.push(TypeSignature::Exact(vec![DataType::Float64]));
            forms.push(TypeSignature::Exact(vec![text(), text(), text()]));
        }
        ToTimestamp {
            date,
            signature: Signature::one_of(forms, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for ToTimestamp {
    fn name(&self) -> &str {
        if self.date {
            "to_date"
        } else {
            "to_timestamp"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(if self.date {
            DataType::Date32
        } else {
            timestamptz()
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (rows, arrays) = argument_arrays(&args)?;
        let out: ArrayRef = match arrays.as_slice() {
            [seconds] => Arc::new(from_epoch(seconds)?),
            [text, template, zone @ ..] => {
                let zone = match zone.first() {
                    Some(z) if !z.is_null(0) => {
                        let z = cast(z, &DataType::Utf8)?;
                        SessionZone::parse(z.as_string::<i32>().value(0))
                    }
                    _ => None,
                }
                .unwrap_or_else(SessionZone::utc);
                let (text, template) = (
                    cast(text, &DataType::Utf8)?,
                    cast(template, &DataType::Utf8)?,
                );
                let (text, template) = (text.as_string::<i32>(), template.as_string::<i32>());
                let read = (0..rows).map(|row| {
                    if text.is_null(row) || template.is_null(row) {
                        return Ok(None);
                    }
                    let fields = read_fields(text.value(row), template.value(row))?;
                    if self.date {
                        fields.days().map(Some)
                    } else {
                        fields.instant(&zone).map(Some)
                    }
                });
                let values = read
                    .collect::<Result<Vec<Option<i64>>, PgError>>()
                    .map_err(pg)?;
                if self.date {
                    let days: Date32Array =
                        values.into_iter().map(|d| d.map(|d| d as i32)).collect();
                    Arc::new(days)
                } else {
                    let micros: PrimitiveArray<TimestampMicrosecondType> =
                        values.into_iter().collect();
                    Arc::new(micros.with_timezone(TIMESTAMPTZ_ZONE))
                }
            }
            _ => unreachable!("the signature takes one to three arguments"),
        };
        result(out, &args.args)
    }
}

/// `to_timestamp(seconds since 1970)`; infinities stay.
fn from_epoch(seconds: &ArrayRef) -> Result<PrimitiveArray<TimestampMicrosecondType>> {
    let seconds = cast(seconds, &DataType::Float64)?;
    let micros = seconds
        .as_primitive::<Float64Type>()
        .iter()
        .map(|s| {
            s.map(|s| match s {
                s if s == f64::INFINITY => Ok(i64::MAX),
                s if s == f64::NEG_INFINITY => Ok(i64::MIN),
                s if s.is_finite() && (s * 1e6).abs() < 9.2e18 => Ok((s * 1e6).round() as i64),
                _ => Err(pg(PgError::new(
                    sqlstate::DATETIME_FIELD_OVERFLOW,
                    format!("timestamp out of range: \"{s}\""),
                ))),
            })
            .transpose()
        })
        .collect::<Result<PrimitiveArray<TimestampMicrosecondType>>>()?;
    Ok(micros.with_timezone(TIMESTAMPTZ_ZONE))
}

/// The fields a text gave.
#[derive(Debug, Default)]
struct Fields {
    year: i64,
    /// The year was given with fewer digits than four by `YY`/`YYY` (taken near 2020).
    short_year: bool,
    bc: bool,
    month: Option<i64>,
    day: Option<i64>,
    day_of_year: Option<i64>,
    julian: Option<i64>,
    hour: i64,
    /// `Some(pm)` when the hour was read on the 12-hour clock.
    twelve_hour: Option<bool>,
    minute: i64,
    second: i64,
    micros: i64,
    /// Offset east of UTC in seconds, from `TZH`/`TZM`.
    offset: Option<i64>,
    input: String,
}

fn out_of_range(input: &str) -> PgError {
    PgError::new(
        sqlstate::DATETIME_FIELD_OVERFLOW,
        format!("date/time field value out of range: \"{input}\""),
    )
}

impl Fields {
    /// The local wall-clock time read, in µs since 1970 (validated).
    fn local(&self) -> Result<i64, PgError> {
        Ok(self.days()? * USECS_PER_DAY + self.time()?)
    }

    fn days(&self) -> Result<i64, PgError> {
        if let Some(julian) = self.julian {
            return Ok(julian - 2_440_588);
        }
        let mut year = self.year;
        if self.short_year {
            year = match year {
                y if y < 70 => y + 2000,
                y if y < 100 => y + 1900,
                y if y < 520 => y + 2000,
                y if y < 1000 => y + 1000,
                y => y,
            };
        }
        if self.bc {
            year = 1 - year;
        }
        if let (Some(day_of_year), None) = (self.day_of_year, self.month) {
            return Ok(days_from_civil(year, 1, 1) + day_of_year - 1);
        }
        let month = self.month.unwrap_or(1);
        let day = self.day.unwrap_or(1);
        if !(1..=12).contains(&month)
            || day < 1
            || day > i64::from(days_in_month(year, month as u32))
        {
            return Err(out_of_range(&self.input));
        }
        Ok(days_from_civil(year, month as u32, day as u32))
    }

    fn time(&self) -> Result<i64, PgError> {
        let hour = match self.twelve_hour {
            Some(pm) => {
                if !(1..=12).contains(&self.hour) {
                    return Err(PgError::new(
                        sqlstate::DATETIME_FIELD_OVERFLOW,
                        format!("hour \"{}\" is invalid for the 12-hour clock", self.hour),
                    )
                    .with_hint("Use the 24-hour clock, or give an hour between 1 and 12."));
                }
                self.hour % 12 + if pm { 12 } else { 0 }
            }
            None => self.hour,
        };
        if !(0..=24).contains(&hour)
            || !(0..60).contains(&self.minute)
            || !(0..=60).contains(&self.second)
        {
            return Err(out_of_range(&self.input));
        }
        Ok(((hour * 60 + self.minute) * 60 + self.second) * 1_000_000 + self.micros)
    }

    fn instant(&self, zone: &SessionZone) -> Result<i64, PgError> {
        let local = self.local()?;
        Ok(match self.offset {
            Some(east) => local - east * 1_000_000,
            None => zone.local_to_utc(local),
        })
    }
}

/// The name PostgreSQL's messages give a pattern (as the template spelled it).
fn invalid_value(value: &str, pattern: &str, detail: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_DATETIME_FORMAT,
        format!("invalid value \"{value}\" for \"{pattern}\""),
    )
    .with_detail(detail)
}

/// The width a numeric pattern reads when another pattern follows it directly.
fn width(pattern: Pattern) -> Option<usize> {
    use Pattern::*;
    Some(match pattern {
        Year(n) | IsoYear(n) => n as usize,
        Fraction(n) => n as usize,
        Month | DayOfMonth | Hour24 | Hour12 | Minute | Second | ZoneMinutes | Century
        | WeekOfYear | IsoWeek | ZoneHours => 2,
        DayOfYear | IsoDayOfYear | Millis => 3,
        SecondsOfDay => 5,
        Micros => 6,
        Quarter | DayOfWeek | IsoDayOfWeek | WeekOfMonth => 1,
        Julian => 7,
        _ => return None,
    })
}

/// Reads `text` as `template` says (see the module comment).
fn read_fields(text: &str, template: &str) -> Result<Fields, PgError> {
    let mut fields = Fields {
        input: text.to_string(),
        ..Fields::default()
    };
    let mut input = text;
    let mut rest = template;
    let mut negative_offset = false;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = ["FM", "fm", "TM", "tm"]
            .iter()
            .find_map(|p| rest.strip_prefix(p))
        {
            rest = after;
            continue;
        }
        if let Some((len, pattern)) = pattern_at(rest) {
            let name = &rest[..len];
            rest = &rest[len..];
            let suffix = ["TH", "th"].iter().find_map(|s| rest.strip_prefix(s));
            if let Some(after) = suffix {
                rest = after;
            }
            if let Some(after) = rest.strip_prefix("SP") {
                rest = after;
            }
            input = input.trim_start_matches(' ');
            let adjacent = pattern_at(rest).is_some_and(|(_, next)| width(next).is_some());
            input = read_pattern(
                &mut fields,
                pattern,
                name,
                input,
                adjacent,
                &mut negative_offset,
            )?;
            if suffix.is_some()
                && input.len() >= 2
                && input.as_bytes()[..2].iter().all(u8::is_ascii_alphabetic)
            {
                input = &input[2..];
            }
            continue;
        }
        if c == '"' {
            let quoted_end = rest[1..].find('"').map_or(rest.len(), |i| i + 2);
            let skipped = rest[1..quoted_end.saturating_sub(1).max(1)].chars().count();
            rest = &rest[quoted_end..];
            input = skip_chars(input, skipped);
            continue;
        }
        rest = &rest[c.len_utf8()..];
        if c == ' ' {
            input = input.trim_start_matches(' ');
        } else if let Some(next) = input.chars().next() {
            if !next.is_alphanumeric() || next == c {
                input = &input[next.len_utf8()..];
            }
        }
    }
    if let Some(offset) = fields.offset.as_mut() {
        if negative_offset {
            *offset = -offset.abs();
        }
    }
    Ok(fields)
}

fn skip_chars(input: &str, n: usize) -> &str {
    match input.char_indices().nth(n) {
        Some((i, _)) => &input[i..],
        None => "",
    }
}

/// Reads one pattern's field from the start of `input`; returns what follows it.
fn read_pattern<'a>(
    fields: &mut Fields,
    pattern: Pattern,
    name: &str,
    input: &'a str,
    adjacent: bool,
    negative_offset: &mut bool,
) -> Result<&'a str, PgError> {
    use Pattern::*;
    let names = |list: &[&str], abbreviated: bool| -> Result<(usize, &'a str), PgError> {
        let found = list.iter().enumerate().find_map(|(i, full)| {
            let name = if abbreviated { &full[..3] } else { full };
            let candidate = input.get(..name.len())?;
            candidate
                .eq_ignore_ascii_case(name)
                .then_some((i, &input[name.len()..]))
        });
        found.ok_or_else(|| {
            let shown: String = input
                .chars()
                .take(if abbreviated { 3 } else { 9 })
                .collect();
            invalid_value(
                &shown,
                name,
                "The given value did not match any of the allowed values for this field.",
            )
        })
    };
    let word = |words: &[&str]| -> Option<(usize, &'a str)> {
        words.iter().enumerate().find_map(|(i, w)| {
            let candidate = input.get(..w.len())?;
            candidate
                .eq_ignore_ascii_case(w)
                .then_some((i, &input[w.len()..]))
        })
    };
    let unmatched = || {
        let shown: String = input.chars().take(name.len()).collect();
        invalid_value(
            &shown,
            name,
            "The given value did not match any of the allowed values for this field.",
        )
    };
    Ok(match pattern {
        MonthName(_) => {
            let (i, after) = names(&MONTHS, false)?;
            fields.month = Some(i as i64 + 1);
            after
        }
        MonthAbbrev(_) => {
            let (i, after) = names(&MONTHS, true)?;
            fields.month = Some(i as i64 + 1);
            after
        }
        DayName(_) => names(&DAYS, false)?.1,
        DayAbbrev(_) => names(&DAYS, true)?.1,
        Am(_) | Pm(_) | AmDots(_) | PmDots(_) => {
            let (i, after) = word(&["A.M.", "P.M.", "AM", "PM"]).ok_or_else(unmatched)?;
            fields.twelve_hour = Some(i % 2 == 1);
            after
        }
        Ad(_) | Bc(_) | AdDots(_) | BcDots(_) => {
            let (i, after) = word(&["A.D.", "B.C.", "AD", "BC"]).ok_or_else(unmatched)?;
            fields.bc = i % 2 == 1;
            after
        }
        Fx => input,
        Zone(_) | Offset | RomanMonth(_) | YearComma => {
            return Err(PgError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!("formatting field \"{name}\" is only supported in to_char"),
            ))
        }
        numeric => {
            let signed = matches!(numeric, ZoneHours);
            let (negative, body) = match input.strip_prefix('-') {
                Some(after) if signed => (true, after),
                _ => (
                    false,
                    input.strip_prefix('+').filter(|_| signed).unwrap_or(input),
                ),
            };
            let most = if adjacent {
                width(numeric).unwrap_or(usize::MAX)
            } else {
                usize::MAX
            };
            let digits = body
                .bytes()
                .take(most)
                .take_while(u8::is_ascii_digit)
                .count();
            if digits == 0 {
                let shown: String = input.chars().take(width(numeric).unwrap_or(1)).collect();
                return Err(invalid_value(&shown, name, "Value must be an integer."));
            }
            let value: i64 = body[..digits]
                .parse()
                .map_err(|_| invalid_value(&body[..digits], name, "Value must be an integer."))?;
            match numeric {
                Year(n) => {
                    fields.year = value;
                    fields.short_year = n < 4 && digits < 4;
                }
                IsoYear(_) | Century | Quarter | WeekOfYear | WeekOfMonth | DayOfWeek
                | IsoDayOfWeek | IsoWeek | IsoDayOfYear => {}
                Month => fields.month = Some(value),
                DayOfMonth => fields.day = Some(value),
                DayOfYear => fields.day_of_year = Some(value),
                Julian => fields.julian = Some(value),
                Hour24 => fields.hour = value,
                Hour12 => {
                    fields.hour = value;
                    fields.twelve_hour.get_or_insert(false);
                }
                Minute => fields.minute = value,
                Second => fields.second = value,
                SecondsOfDay => {
                    (fields.hour, fields.minute, fields.second) =
                        (value / 3600, value / 60 % 60, value % 60)
                }
                Millis => fields.micros = scaled(value, digits, 3) * 1000,
                Micros => fields.micros = scaled(value, digits, 6),
                Fraction(n) => {
                    fields.micros = scaled(value, digits, n as usize) * 10_i64.pow(6 - u32::from(n))
                }
                ZoneHours => {
                    *negative_offset = negative;
                    fields.offset = Some(fields.offset.unwrap_or(0) + value * 3600);
                }
                ZoneMinutes => fields.offset = Some(fields.offset.unwrap_or(0) + value * 60),
                _ => {}
            }
            &body[digits..]
        }
    })
}

/// A fraction's digits as a count of `10^-places` (`.5` of `MS` is 500).
fn scaled(value: i64, digits: usize, places: usize) -> i64 {
    if digits >= places {
        value / 10_i64.pow((digits - places) as u32)
    } else {
        value * 10_i64.pow((places - digits) as u32)
    }
}
