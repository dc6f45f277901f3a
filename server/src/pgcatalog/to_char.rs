//! `to_char(timestamp | timestamptz | date | interval, text)` with PostgreSQL's template
//! patterns (DataFusion's own `to_char` reads chrono's `%Y` patterns and copies `YYYY`
//! through as text: a wrong answer, not an error); `to_char` of a number is
//! [`super::to_char_number`]'s.
//!
//! ## Reading a template
//!
//! The template is read left to right. At each place, in this order:
//!
//! - `FM` (fill mode) or `TM` (translation mode: names are English, and not padded)
//!   prefixes the pattern that follows; `FX` is a pattern that writes nothing;
//! - `"text"` is copied without its quotes (a backslash in it takes the next character as
//!   it is); outside quotes `\"` writes `"`;
//! - the longest pattern of [`PATTERNS`] that the text starts with, case as written
//!   (`MONTH`, `Month` and `month` name the case of the output; `YYYY` and `yyyy` are the
//!   same), followed by an optional `TH`/`th` suffix (an English ordinal ending, upper or
//!   lower case) and an optional `SP` (accepted, as PostgreSQL accepts it, and ignored);
//! - anything else is copied as it is.
//!
//! ## What each pattern writes
//!
//! Numbers are zero-padded to the pattern's width (`HH24` 2, `YYYY` 4, `MS` 3, `US` 6, …)
//! unless fill mode is on; names are blank-padded to 9 (`Month`, `Day`) or 4 (`RM`)
//! characters unless fill mode is on. Years before 1 AD are written as PostgreSQL
//! writes them: `YYYY` of 44 BC is `0044` and `BC` says which era. A `timestamptz` is
//! written in the session's `TimeZone` (`TZ` its abbreviation, `TZH`/`TZM`/`OF` its
//! offset); a `timestamp` has offset 0 and no abbreviation; a `date` is its midnight in
//! that zone, as PostgreSQL casts a date to timestamptz for `to_char`.
//!
//! An interval writes its own fields: years, months (`MM`, of the year), days (`DD`),
//! hours (`HH24` beyond 24 too), minutes, seconds. Patterns that need a calendar date or a
//! zone (`Month`, `Day`, `D`, `W`, `J`, ISO weeks, `BC`, `TZ`, …) fail for an interval
//! with PostgreSQL's 22007; of those, PostgreSQL writes a made-up value for `DDD`, `W`,
//! `WW`, `IW`, `IDDD`, `J`, `RM` and the ISO years where iolab fails.
//!
//! The result is bounded by the template: each pattern writes at most a few dozen
//! characters (the widest is a year's digits).

// A template's errors are PostgreSQL errors, raised at most once per call.
#![allow(clippy::result_large_err)]

use chrono::{DateTime, Datelike, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Date64Type, IntervalMonthDayNanoType, IntervalUnit, TimeUnit,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType,
};
use datafusion::error::Result;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::values::output_text::text_value;
use iolab_engine::values::TextFormat;

use super::batch::V;
use super::functions::{def, per_row, pg, Def};
use super::to_char_number;

/// The functions of this module, for `functions::definitions`.
pub(super) fn functions() -> Vec<Def> {
    vec![def("to_char", 2..=2, DataType::Utf8, |ctx, args, rows| {
        let fmt = crate::session::text_format_for(&ctx.settings.lock());
        let value = &args[0];
        per_row(rows, |row| {
            let Some(template) = text_value(args[1].as_ref(), row, &fmt) else {
                return Ok(V::Null);
            };
            if value.is_null(row) {
                return Ok(V::Null);
            }
            if to_char_number::is_number(value) {
                let text = to_char_number::format_number(value, row, &template).map_err(pg)?;
                return Ok(V::Text(text));
            }
            let fields = fields_of(value, row, &fmt).map_err(pg)?;
            format_fields(&fields, &template).map(V::Text).map_err(pg)
        })
    })]
}

/// The fields of one value that the patterns write.
#[derive(Clone, Debug, PartialEq)]
pub struct Fields {
    /// Astronomical year (0 is 1 BC) of a timestamp; an interval's years.
    year: i64,
    /// 1–12 for a timestamp; an interval's months beyond its years (−11–11).
    month: i64,
    /// Day of the month; an interval's days.
    day: i64,
    /// 0–23; an interval's hours (any number).
    hour: i64,
    minute: i64,
    second: i64,
    micros: i64,
    /// What only a timestamp has: its date (for names, weeks, days of the year), its
    /// offset east of UTC in seconds and its zone's abbreviation (`timestamptz` only).
    calendar: Option<Calendar>,
}

#[derive(Clone, Debug, PartialEq)]
struct Calendar {
    date: chrono::NaiveDate,
    offset_secs: i32,
    abbreviation: Option<String>,
}

/// The fields of `value`'s row `row`: a timestamptz in the session's zone.
fn fields_of(value: &ArrayRef, row: usize, fmt: &TextFormat) -> Result<Fields, PgError> {
    let micros = |unit: &TimeUnit| -> i64 {
        match unit {
            TimeUnit::Second => value.as_primitive::<TimestampSecondType>().value(row) * 1_000_000,
            TimeUnit::Millisecond => {
                value.as_primitive::<TimestampMillisecondType>().value(row) * 1_000
            }
            TimeUnit::Microsecond => value.as_primitive::<TimestampMicrosecondType>().value(row),
            TimeUnit::Nanosecond => value
                .as_primitive::<TimestampNanosecondType>()
                .value(row)
                .div_euclid(1_000),
        }
    };
    match value.data_type() {
        DataType::Timestamp(unit, None) => Ok(of_timestamp(micros(unit), 0, None)),
        DataType::Timestamp(unit, Some(_)) => {
            let utc = micros(unit);
            let (local, offset) = fmt.time_zone.utc_to_local(utc);
            Ok(of_timestamp(
                local,
                offset,
                Some(fmt.time_zone.abbreviation_at_utc(utc)),
            ))
        }
        // A date is written as PostgreSQL casts it: a timestamptz, midnight in the zone.
        DataType::Date32 | DataType::Date64 => {
            let local = match value.data_type() {
                DataType::Date32 => {
                    i64::from(value.as_primitive::<Date32Type>().value(row)) * 86_400_000_000
                }
                _ => value.as_primitive::<Date64Type>().value(row) * 1_000,
            };
            let utc = fmt.time_zone.local_to_utc(local);
            let (local, offset) = fmt.time_zone.utc_to_local(utc);
            Ok(of_timestamp(
                local,
                offset,
                Some(fmt.time_zone.abbreviation_at_utc(utc)),
            ))
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = value.as_primitive::<IntervalMonthDayNanoType>().value(row);
            let time_micros = v.nanoseconds / 1_000;
            Ok(Fields {
                year: i64::from(v.months / 12),
                month: i64::from(v.months % 12),
                day: i64::from(v.days),
                hour: time_micros / 3_600_000_000,
                minute: time_micros / 60_000_000 % 60,
                second: time_micros / 1_000_000 % 60,
                micros: time_micros % 1_000_000,
                calendar: None,
            })
        }
        other => Err(undefined_to_char(other)),
    }
}

/// PostgreSQL's 42883 for `to_char` of a type it has no template for.
pub(super) fn undefined_to_char(value_type: &DataType) -> PgError {
    PgError::new(
        sqlstate::UNDEFINED_FUNCTION,
        format!(
            "function to_char({}, text) does not exist",
            crate::wire::encode::pg_type_of(value_type).0.name()
        ),
    )
    .with_hint(
        "No function matches the given name and argument types. \
         You might need to add explicit type casts.",
    )
}

/// The fields of wall-clock time `local_micros` (µs since 1970-01-01 00:00).
fn of_timestamp(local_micros: i64, offset_secs: i32, abbreviation: Option<String>) -> Fields {
    let at =
        DateTime::from_timestamp_micros(local_micros).map_or(NaiveDateTime::MIN, |t| t.naive_utc());
    Fields {
        year: i64::from(at.year()),
        month: i64::from(at.month()),
        day: i64::from(at.day()),
        hour: i64::from(at.hour()),
        minute: i64::from(at.minute()),
        second: i64::from(at.second()),
        micros: local_micros.rem_euclid(1_000_000),
        calendar: Some(Calendar {
            date: at.date(),
            offset_secs,
            abbreviation,
        }),
    }
}

/// One template pattern (see the module comment); `Lower`/`Title` name the output's case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pattern {
    AdDots(Case),
    Ad(Case),
    BcDots(Case),
    Bc(Case),
    AmDots(Case),
    Am(Case),
    PmDots(Case),
    Pm(Case),
    Century,
    DayName(Case),
    DayAbbrev(Case),
    DayOfYear,
    DayOfMonth,
    DayOfWeek,
    Fraction(u8),
    Fx,
    Hour24,
    Hour12,
    IsoDayOfYear,
    IsoDayOfWeek,
    IsoWeek,
    IsoYear(u8),
    Julian,
    Minute,
    Month,
    MonthName(Case),
    MonthAbbrev(Case),
    Millis,
    Offset,
    Quarter,
    RomanMonth(Case),
    SecondsOfDay,
    Second,
    ZoneHours,
    ZoneMinutes,
    Zone(Case),
    Micros,
    WeekOfYear,
    WeekOfMonth,
    YearComma,
    Year(u8),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Case {
    Upper,
    Title,
    Lower,
}

use Case::{Lower, Title, Upper};

/// PostgreSQL 18's patterns as they are written (`DCH_keywords`), each with both the
/// upper- and lower-case spellings it accepts.
const PATTERNS: &[(&str, Pattern)] = &[
    ("A.D.", Pattern::AdDots(Upper)),
    ("a.d.", Pattern::AdDots(Lower)),
    ("AD", Pattern::Ad(Upper)),
    ("ad", Pattern::Ad(Lower)),
    ("B.C.", Pattern::BcDots(Upper)),
    ("b.c.", Pattern::BcDots(Lower)),
    ("BC", Pattern::Bc(Upper)),
    ("bc", Pattern::Bc(Lower)),
    ("A.M.", Pattern::AmDots(Upper)),
    ("a.m.", Pattern::AmDots(Lower)),
    ("AM", Pattern::Am(Upper)),
    ("am", Pattern::Am(Lower)),
    ("P.M.", Pattern::PmDots(Upper)),
    ("p.m.", Pattern::PmDots(Lower)),
    ("PM", Pattern::Pm(Upper)),
    ("pm", Pattern::Pm(Lower)),
    ("CC", Pattern::Century),
    ("cc", Pattern::Century),
    ("DAY", Pattern::DayName(Upper)),
    ("Day", Pattern::DayName(Title)),
    ("day", Pattern::DayName(Lower)),
    ("DDD", Pattern::DayOfYear),
    ("ddd", Pattern::DayOfYear),
    ("DD", Pattern::DayOfMonth),
    ("dd", Pattern::DayOfMonth),
    ("DY", Pattern::DayAbbrev(Upper)),
    ("Dy", Pattern::DayAbbrev(Title)),
    ("dy", Pattern::DayAbbrev(Lower)),
    ("D", Pattern::DayOfWeek),
    ("d", Pattern::DayOfWeek),
    ("FF1", Pattern::Fraction(1)),
    ("FF2", Pattern::Fraction(2)),
    ("FF3", Pattern::Fraction(3)),
    ("FF4", Pattern::Fraction(4)),
    ("FF5", Pattern::Fraction(5)),
    ("FF6", Pattern::Fraction(6)),
    ("ff1", Pattern::Fraction(1)),
    ("ff2", Pattern::Fraction(2)),
    ("ff3", Pattern::Fraction(3)),
    ("ff4", Pattern::Fraction(4)),
    ("ff5", Pattern::Fraction(5)),
    ("ff6", Pattern::Fraction(6)),
    ("FX", Pattern::Fx),
    ("fx", Pattern::Fx),
    ("HH24", Pattern::Hour24),
    ("hh24", Pattern::Hour24),
    ("HH12", Pattern::Hour12),
    ("hh12", Pattern::Hour12),
    ("HH", Pattern::Hour12),
    ("hh", Pattern::Hour12),
    ("IDDD", Pattern::IsoDayOfYear),
    ("iddd", Pattern::IsoDayOfYear),
    ("ID", Pattern::IsoDayOfWeek),
    ("id", Pattern::IsoDayOfWeek),
    ("IW", Pattern::IsoWeek),
    ("iw", Pattern::IsoWeek),
    ("IYYY", Pattern::IsoYear(4)),
    ("iyyy", Pattern::IsoYear(4)),
    ("IYY", Pattern::IsoYear(3)),
    ("iyy", Pattern::IsoYear(3)),
    ("IY", Pattern::IsoYear(2)),
    ("iy", Pattern::IsoYear(2)),
    ("I", Pattern::IsoYear(1)),
    ("i", Pattern::IsoYear(1)),
    ("J", Pattern::Julian),
    ("j", Pattern::Julian),
    ("MI", Pattern::Minute),
    ("mi", Pattern::Minute),
    ("MM", Pattern::Month),
    ("mm", Pattern::Month),
    ("MONTH", Pattern::MonthName(Upper)),
    ("Month", Pattern::MonthName(Title)),
    ("month", Pattern::MonthName(Lower)),
    ("MON", Pattern::MonthAbbrev(Upper)),
    ("Mon", Pattern::MonthAbbrev(Title)),
    ("mon", Pattern::MonthAbbrev(Lower)),
    ("MS", Pattern::Millis),
    ("ms", Pattern::Millis),
    ("OF", Pattern::Offset),
    ("of", Pattern::Offset),
    ("Q", Pattern::Quarter),
    ("q", Pattern::Quarter),
    ("RM", Pattern::RomanMonth(Upper)),
    ("rm", Pattern::RomanMonth(Lower)),
    ("SSSSS", Pattern::SecondsOfDay),
    ("sssss", Pattern::SecondsOfDay),
    ("SSSS", Pattern::SecondsOfDay),
    ("ssss", Pattern::SecondsOfDay),
    ("SS", Pattern::Second),
    ("ss", Pattern::Second),
    ("TZH", Pattern::ZoneHours),
    ("TZM", Pattern::ZoneMinutes),
    ("TZ", Pattern::Zone(Upper)),
    ("tz", Pattern::Zone(Lower)),
    ("US", Pattern::Micros),
    ("us", Pattern::Micros),
    ("WW", Pattern::WeekOfYear),
    ("ww", Pattern::WeekOfYear),
    ("W", Pattern::WeekOfMonth),
    ("w", Pattern::WeekOfMonth),
    ("Y,YYY", Pattern::YearComma),
    ("y,yyy", Pattern::YearComma),
    ("YYYY", Pattern::Year(4)),
    ("yyyy", Pattern::Year(4)),
    ("YYY", Pattern::Year(3)),
    ("yyy", Pattern::Year(3)),
    ("YY", Pattern::Year(2)),
    ("yy", Pattern::Year(2)),
    ("Y", Pattern::Year(1)),
    ("y", Pattern::Year(1)),
];

/// The longest pattern `text` starts with.
pub(super) fn pattern_at(text: &str) -> Option<(usize, Pattern)> {
    (PATTERNS.iter())
        .filter(|(name, _)| text.starts_with(name))
        .max_by_key(|(name, _)| name.len())
        .map(|&(name, p)| (name.len(), p))
}

pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(super) const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const ROMAN_MONTHS: [&str; 12] = [
    "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII",
];

/// Writes `fields` as `template` says (see the module comment).
pub fn format_fields(fields: &Fields, template: &str) -> Result<String, PgError> {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    let (mut fill_mode, mut translation_mode) = (false, false);
    while let Some(c) = rest.chars().next() {
        if let Some(after) = ["FM", "fm"].iter().find_map(|p| rest.strip_prefix(p)) {
            fill_mode = true;
            rest = after;
            continue;
        }
        if let Some(after) = ["TM", "tm"].iter().find_map(|p| rest.strip_prefix(p)) {
            translation_mode = true;
            rest = after;
            continue;
        }
        if let Some((len, pattern)) = pattern_at(rest) {
            rest = &rest[len..];
            let ordinal = ["TH", "th"].iter().find(|s| rest.starts_with(**s)).copied();
            if let Some(suffix) = ordinal {
                rest = &rest[suffix.len()..];
            }
            if let Some(after) = rest.strip_prefix("SP") {
                rest = after;
            }
            let written = write_pattern(fields, pattern, fill_mode, translation_mode)?;
            out.push_str(&written);
            if let Some(suffix) = ordinal {
                out.push_str(&ordinal_suffix(&written, suffix == "TH"));
            }
            (fill_mode, translation_mode) = (false, false);
            continue;
        }
        (fill_mode, translation_mode) = (false, false);
        if c == '"' {
            let mut chars = rest[1..].char_indices();
            let mut end = rest.len();
            while let Some((i, q)) = chars.next() {
                match q {
                    '"' => {
                        end = i + 2;
                        break;
                    }
                    '\\' => match chars.next() {
                        Some((_, escaped)) => out.push(escaped),
                        None => out.push('\\'),
                    },
                    other => out.push(other),
                }
            }
            rest = &rest[end..];
            continue;
        }
        if let Some(after) = rest.strip_prefix("\\\"") {
            out.push('"');
            rest = after;
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    Ok(out)
}

/// `st`, `nd`, `rd` or `th` for the number that ends `written` (upper case for `TH`).
pub(super) fn ordinal_suffix(written: &str, upper: bool) -> String {
    let digits: String = written.chars().filter(char::is_ascii_digit).collect();
    let n: u64 = digits
        .get(digits.len().saturating_sub(2)..)
        .and_then(|d| d.parse().ok())
        .unwrap_or(0);
    let suffix = match (n % 100, n % 10) {
        (11..=13, _) => "th",
        (_, 1) => "st",
        (_, 2) => "nd",
        (_, 3) => "rd",
        _ => "th",
    };
    match upper {
        true => suffix.to_uppercase(),
        false => suffix.to_string(),
    }
}

fn invalid_for_interval() -> PgError {
    PgError::new(
        sqlstate::INVALID_DATETIME_FORMAT,
        "invalid format specification for an interval value",
    )
    .with_hint("Intervals are not tied to specific calendar dates.")
}

/// `n` zero-padded to `width` digits unless in fill mode (a sign does not count).
fn number(n: i64, width: usize, fill_mode: bool) -> String {
    match fill_mode {
        true => n.to_string(),
        false if n < 0 => format!("-{:0width$}", n.unsigned_abs()),
        false => format!("{n:0width$}"),
    }
}

/// `name` in `case`, blank-padded to `width` unless in fill mode.
fn name(name: &str, case: Case, width: usize, fill_mode: bool) -> String {
    let cased = match case {
        Upper => name.to_uppercase(),
        Title => name.to_string(),
        Lower => name.to_lowercase(),
    };
    match fill_mode {
        true => cased,
        false => format!("{cased:<width$}"),
    }
}

fn cased(text: &str, case: Case) -> String {
    match case {
        Lower => text.to_lowercase(),
        _ => text.to_string(),
    }
}

/// The text one pattern writes for `f`.
/// `fm`: fill mode; `tm`: translation mode (names unpadded, as PostgreSQL writes
/// translated names).
fn write_pattern(f: &Fields, pattern: Pattern, fm: bool, tm: bool) -> Result<String, PgError> {
    use Pattern as P;
    // A timestamp's year as written: 1 BC is 1 (BC says so); an interval's as it is.
    let (written_year, bc) = match (&f.calendar, f.year) {
        (Some(_), y) if y <= 0 => (1 - y, true),
        (_, y) => (y, false),
    };
    let after_noon = f.hour.rem_euclid(24) >= 12 && f.hour >= 0;
    let calendar = || f.calendar.as_ref().ok_or_else(invalid_for_interval);
    let iso = || -> Result<chrono::IsoWeek, PgError> { Ok(calendar()?.date.iso_week()) };
    Ok(match pattern {
        P::Fx => String::new(),
        P::AdDots(case) | P::BcDots(case) => {
            calendar()?;
            cased(if bc { "B.C." } else { "A.D." }, case)
        }
        P::Ad(case) | P::Bc(case) => {
            calendar()?;
            cased(if bc { "BC" } else { "AD" }, case)
        }
        P::AmDots(case) | P::PmDots(case) => cased(if after_noon { "P.M." } else { "A.M." }, case),
        P::Am(case) | P::Pm(case) => cased(if after_noon { "PM" } else { "AM" }, case),
        P::Century => {
            let century = match f.calendar {
                None => f.year / 100,
                Some(_) if f.year > 0 => (f.year + 99) / 100,
                Some(_) => -((99 - (f.year - 1)) / 100),
            };
            number(century, 2, fm)
        }
        P::DayName(case) => {
            let day = calendar()?.date.weekday().num_days_from_sunday();
            name(DAYS[day as usize], case, 9, fm || tm)
        }
        P::DayAbbrev(case) => {
            let day = calendar()?.date.weekday().num_days_from_sunday();
            name(&DAYS[day as usize][..3], case, 0, true)
        }
        P::DayOfYear => number(i64::from(calendar()?.date.ordinal()), 3, fm),
        P::DayOfMonth => number(f.day, 2, fm),
        P::DayOfWeek => {
            let day = calendar()?.date.weekday().num_days_from_sunday();
            number(i64::from(day) + 1, 1, fm)
        }
        P::Fraction(digits) => {
            let scaled = f.micros / 10_i64.pow(6 - u32::from(digits));
            number(scaled, usize::from(digits), false)
        }
        P::Hour24 => number(f.hour, 2, fm),
        P::Hour12 => {
            let h = f.hour % 12;
            number(if h == 0 { 12 } else { h }, 2, fm)
        }
        P::IsoDayOfYear => {
            let w = iso()?;
            let day = calendar()?.date.weekday().number_from_monday();
            number(i64::from((w.week() - 1) * 7 + day), 3, fm)
        }
        P::IsoDayOfWeek => number(
            i64::from(calendar()?.date.weekday().number_from_monday()),
            1,
            fm,
        ),
        P::IsoWeek => number(i64::from(iso()?.week()), 2, fm),
        P::IsoYear(digits) => {
            let year = i64::from(iso()?.year());
            let year = if year <= 0 { 1 - year } else { year };
            year_digits(year, digits, fm)
        }
        P::Julian => {
            let days = calendar()?.date.num_days_from_ce();
            (i64::from(days) + 1_721_425).to_string()
        }
        P::Minute => number(f.minute, 2, fm),
        P::Month => number(f.month, 2, fm),
        P::MonthName(case) => {
            calendar()?;
            name(MONTHS[f.month as usize - 1], case, 9, fm || tm)
        }
        P::MonthAbbrev(case) => {
            calendar()?;
            name(&MONTHS[f.month as usize - 1][..3], case, 0, true)
        }
        P::Millis => number(f.micros / 1_000, 3, false),
        P::Micros => number(f.micros, 6, false),
        P::Offset => {
            let offset = calendar()?.offset_secs;
            let sign = if offset < 0 { '-' } else { '+' };
            let abs = offset.unsigned_abs();
            let hours = format!("{sign}{}", number(i64::from(abs / 3600), 2, fm));
            match (abs % 3600 / 60, abs % 60) {
                (0, 0) => hours,
                (m, 0) => format!("{hours}:{m:02}"),
                (m, s) => format!("{hours}:{m:02}:{s:02}"),
            }
        }
        // An interval of no months has no quarter.
        P::Quarter if f.month == 0 => String::new(),
        P::Quarter => number((f.month - 1) / 3 + 1, 1, fm),
        P::RomanMonth(case) => {
            calendar()?;
            name(ROMAN_MONTHS[f.month as usize - 1], case, 4, fm)
        }
        P::SecondsOfDay => (f.hour * 3600 + f.minute * 60 + f.second).to_string(),
        P::Second => number(f.second, 2, fm),
        P::ZoneHours => {
            let offset = calendar()?.offset_secs;
            let sign = if offset < 0 { '-' } else { '+' };
            format!("{sign}{:02}", offset.unsigned_abs() / 3600)
        }
        P::ZoneMinutes => {
            let offset = calendar()?.offset_secs;
            number(i64::from(offset.unsigned_abs() % 3600 / 60), 2, fm)
        }
        P::Zone(case) => {
            let abbreviation = calendar()?.abbreviation.clone().unwrap_or_default();
            cased(&abbreviation, case)
        }
        P::WeekOfYear => number(i64::from((calendar()?.date.ordinal() - 1) / 7 + 1), 2, fm),
        P::WeekOfMonth => {
            calendar()?;
            number((f.day - 1) / 7 + 1, 1, fm)
        }
        P::YearComma => format!("{},{:03}", written_year / 1000, written_year % 1000),
        P::Year(digits) => year_digits(written_year, digits, fm),
    })
}

/// The last `digits` digits of `year` (all of them for 4), zero-padded unless in fill
/// mode.
fn year_digits(year: i64, digits: u8, fm: bool) -> String {
    match digits {
        4 => number(year, 4, fm),
        d => {
            let modulus = 10_i64.pow(u32::from(d));
            number(year % modulus, usize::from(d), fm)
        }
    }
}
