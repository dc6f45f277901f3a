//! Reading an `interval` as PostgreSQL's input function reads it (`interval_in`), so that
//! `interval '1 day 02:00'`, `'01:30'::interval`, `'2 weeks ago'` and `'P1Y2M'` work,
//! and so does the text iolab itself writes for an interval (`1 year 2 mons 3 days
//! 04:05:06.789`).
//!
//! The text is read as a list of fields, optionally after `@`:
//!
//! - a number with a unit, the unit glued to it or not (`3 days`, `3days`, `-1.5 h`):
//!   units are PostgreSQL's words and abbreviations (`microsecond(s)`/`us`/`usec`,
//!   `ms`/`msec`, `s`/`sec`, `m`/`min`, `h`/`hr`, `d`/`day`, `w`/`week`, `mon`/`month`,
//!   `y`/`yr`/`year`, `decade`, `century`, `millennium`);
//! - a time, `[-]h:m[:s[.fraction]]`;
//! - a year-month pair of the SQL standard, `[-]y-m`;
//! - a bare number: days when a time follows it, seconds when it is the last field;
//! - `ago`, last: the whole interval negated.
//!
//! Or it is an ISO 8601 duration: `P[nY][nM][nW][nD][T[nH][nM][nS]]`.
//!
//! Fractions spill down as PostgreSQL's do: a fraction of a year becomes whole months
//! (rounded), a fraction of a month 30-day days and the rest time, a fraction of a week
//! or day time. The result is months, days and microseconds, each field keeping its own
//! sign (`1 day -1 hour` stays so).

use iolab_catalog::{sqlstate, PgError};

/// Why a text is not an interval: PostgreSQL's 22007 and 22015.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalInputError {
    /// `invalid input syntax for type interval`.
    Syntax,
    /// `interval field value out of range` (`1:60`, `1-12`, more than `i32` months).
    OutOfRange,
}

use IntervalInputError::{OutOfRange, Syntax};

/// `interval_in`: [`parse_interval`] with PostgreSQL's errors (22007, 22015).
pub fn interval_in(text: &str) -> Result<IntervalValue, PgError> {
    parse_interval(text).map_err(|e| match e {
        Syntax => super::input::datetime_syntax("interval", text),
        OutOfRange => PgError::new(
            sqlstate::INTERVAL_FIELD_OVERFLOW,
            format!("interval field value out of range: \"{text}\""),
        ),
    })
}

/// An interval's three parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntervalValue {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

const USECS_PER_SEC: f64 = 1_000_000.0;
const USECS_PER_DAY: f64 = 86_400.0 * USECS_PER_SEC;

/// What one unit word adds: months, days or microseconds per unit.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Unit {
    Months(f64),
    Days(f64),
    Micros(f64),
}

fn unit(word: &str) -> Option<Unit> {
    Some(match word {
        "microsecond" | "microseconds" | "microsecon" | "us" | "usec" | "usecs" | "useconds" => {
            Unit::Micros(1.0)
        }
        "millisecond" | "milliseconds" | "millisecon" | "ms" | "msec" | "msecs" | "mseconds" => {
            Unit::Micros(1_000.0)
        }
        "second" | "seconds" | "s" | "sec" | "secs" => Unit::Micros(USECS_PER_SEC),
        "minute" | "minutes" | "m" | "min" | "mins" => Unit::Micros(60.0 * USECS_PER_SEC),
        "hour" | "hours" | "h" | "hr" | "hrs" => Unit::Micros(3_600.0 * USECS_PER_SEC),
        "day" | "days" | "d" => Unit::Days(1.0),
        "week" | "weeks" | "w" => Unit::Days(7.0),
        "month" | "months" | "mon" | "mons" => Unit::Months(1.0),
        "year" | "years" | "y" | "yr" | "yrs" => Unit::Months(12.0),
        "decade" | "decades" | "dec" | "decs" => Unit::Months(120.0),
        "century" | "centuries" | "c" | "cent" => Unit::Months(1_200.0),
        "millennium" | "millennia" | "mil" | "mils" => Unit::Months(12_000.0),
        _ => return None,
    })
}

/// The parts being added up, fractions spilled down (see the module comment).
#[derive(Default)]
struct Sum {
    months: f64,
    days: f64,
    micros: f64,
}

impl Sum {
    fn add(&mut self, n: f64, unit: Unit) {
        match unit {
            // Years and longer: whole months, rounded; a month's fraction: 30-day days.
            Unit::Months(per) if per >= 12.0 => self.months += (n * per).round(),
            Unit::Months(per) => {
                let months = n * per;
                self.months += months.trunc();
                self.add(months.fract() * 30.0, Unit::Days(1.0));
            }
            Unit::Days(per) => {
                let days = n * per;
                self.days += days.trunc();
                self.micros += days.fract() * USECS_PER_DAY;
            }
            Unit::Micros(per) => self.micros += n * per,
        }
    }

    fn finish(self, negate: bool) -> Result<IntervalValue, IntervalInputError> {
        let sign = if negate { -1.0 } else { 1.0 };
        let part = |v: f64, max: f64| {
            let v = (v * sign).round();
            (v.abs() <= max).then_some(v).ok_or(OutOfRange)
        };
        Ok(IntervalValue {
            months: part(self.months, f64::from(i32::MAX))? as i32,
            days: part(self.days, f64::from(i32::MAX))? as i32,
            micros: part(self.micros, 9.2e18)? as i64,
        })
    }
}

/// Reads `text` as PostgreSQL reads an interval.
pub fn parse_interval(text: &str) -> Result<IntervalValue, IntervalInputError> {
    let lower = text.trim().to_ascii_lowercase();
    let body = lower.strip_prefix('@').unwrap_or(&lower).trim();
    if let Some(iso) = body.strip_prefix('p') {
        return parse_iso(iso);
    }
    let tokens = tokens(body);
    if tokens.is_empty() {
        return Err(Syntax);
    }
    let mut sum = Sum::default();
    let mut negate = false;
    let mut i = 0;
    while i < tokens.len() {
        let token = tokens[i].as_str();
        let next = tokens.get(i + 1).map(String::as_str);
        if token == "ago" {
            if i == 0 || i + 1 != tokens.len() {
                return Err(Syntax);
            }
            negate = true;
        } else if token.contains(':') {
            sum.micros += time_micros(token)?;
        } else if let Some((years, months)) = year_month(token)? {
            sum.months += years * 12.0 + months;
        } else if let Ok(n) = token.parse::<f64>() {
            if !n.is_finite() || !token.bytes().any(|b| b.is_ascii_digit()) {
                return Err(Syntax);
            }
            match next.and_then(unit) {
                Some(u) => {
                    sum.add(n, u);
                    i += 1;
                }
                None if next.is_some_and(|t| t.contains(':')) => sum.add(n, Unit::Days(1.0)),
                None if next.is_none() || next == Some("ago") => {
                    sum.add(n, Unit::Micros(USECS_PER_SEC))
                }
                None => return Err(Syntax),
            }
        } else {
            return Err(Syntax);
        }
        i += 1;
    }
    sum.finish(negate)
}

/// The fields of `body`: split at blanks, and where digits meet letters (`3days`).
fn tokens(body: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for word in body.split_whitespace() {
        let mut current = String::new();
        let mut letters = None;
        for c in word.chars() {
            let is_letter = c.is_ascii_alphabetic();
            if letters.is_some_and(|l| l != is_letter) && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            letters = Some(is_letter);
            current.push(c);
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out
}

/// `[-|+]h:m[:s[.fraction]]` in microseconds.
fn time_micros(token: &str) -> Result<f64, IntervalInputError> {
    let (negative, rest) = match token.as_bytes().first().ok_or(Syntax)? {
        b'-' => (true, &token[1..]),
        b'+' => (false, &token[1..]),
        _ => (false, token),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if !(2..=3).contains(&parts.len()) || parts.iter().any(|p| p.is_empty()) {
        return Err(Syntax);
    }
    let number = |p: &str, point: bool| -> Result<f64, IntervalInputError> {
        let digits = p
            .bytes()
            .all(|b| b.is_ascii_digit() || (point && b == b'.'));
        digits.then(|| p.parse().ok()).flatten().ok_or(Syntax)
    };
    let hours = number(parts[0], false)?;
    let minutes = number(parts[1], false)?;
    let seconds = parts.get(2).map_or(Ok(0.0), |s| number(s, true))?;
    if minutes >= 60.0 || seconds >= 60.0 {
        return Err(OutOfRange);
    }
    let micros = ((hours * 60.0 + minutes) * 60.0 + seconds) * USECS_PER_SEC;
    Ok(if negative { -micros } else { micros })
}

/// `[-|+]years-months` (SQL standard), as (years, months) with the sign on both; `None`
/// for a token of another shape.
fn year_month(token: &str) -> Result<Option<(f64, f64)>, IntervalInputError> {
    let (negative, rest) = match token.as_bytes().first() {
        Some(b'-') => (true, &token[1..]),
        Some(b'+') => (false, &token[1..]),
        _ => (false, token),
    };
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let Some((years, months)) = rest.split_once('-').filter(|(y, m)| digits(y) && digits(m)) else {
        return Ok(None);
    };
    let (y, m): (f64, f64) = (
        years.parse().map_err(|_| Syntax)?,
        months.parse().map_err(|_| Syntax)?,
    );
    if m >= 12.0 {
        return Err(OutOfRange);
    }
    Ok(Some(if negative { (-y, -m) } else { (y, m) }))
}

/// `P[nY][nM][nW][nD][T[nH][nM][nS]]` after its `P`.
fn parse_iso(text: &str) -> Result<IntervalValue, IntervalInputError> {
    let mut sum = Sum::default();
    let mut in_time = false;
    let mut number = String::new();
    let mut any = false;
    for c in text.chars() {
        match c {
            't' if number.is_empty() && !in_time => in_time = true,
            '0'..='9' | '.' | '-' | '+' => number.push(c),
            designator => {
                let n: f64 = number.parse().map_err(|_| Syntax)?;
                number.clear();
                let u = match (designator, in_time) {
                    ('y', false) => Unit::Months(12.0),
                    ('m', false) => Unit::Months(1.0),
                    ('w', false) => Unit::Days(7.0),
                    ('d', false) => Unit::Days(1.0),
                    ('h', true) => Unit::Micros(3_600.0 * USECS_PER_SEC),
                    ('m', true) => Unit::Micros(60.0 * USECS_PER_SEC),
                    ('s', true) => Unit::Micros(USECS_PER_SEC),
                    _ => return Err(Syntax),
                };
                sum.add(n, u);
                any = true;
            }
        }
    }
    if !number.is_empty() || !any {
        return Err(Syntax);
    }
    sum.finish(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(months: i32, days: i32, micros: i64) -> Result<IntervalValue, IntervalInputError> {
        Ok(IntervalValue {
            months,
            days,
            micros,
        })
    }

    /// Each case as PostgreSQL 18 reads it (`SELECT interval '…'`).
    #[test]
    fn reads_what_postgresql_reads() {
        let h = 3_600_000_000_i64;
        let cases = [
            ("1 day 02:00", iv(0, 1, 2 * h)),
            ("01:30", iv(0, 0, 90 * 60_000_000)),
            ("25:04:05", iv(0, 0, 25 * h + 4 * 60_000_000 + 5_000_000)),
            (
                "1 year 2 mons 3 days 04:05:06.789",
                iv(14, 3, 4 * h + 306_789_000),
            ),
            (
                "-1 years -2 mons +3 days -04:05:06",
                iv(-14, 3, -(4 * h + 306_000_000)),
            ),
            ("2 weeks ago", iv(0, -14, 0)),
            ("1 day -1 hour", iv(0, 1, -h)),
            ("@ 3 mins", iv(0, 0, 180_000_000)),
            ("3days 4h", iv(0, 3, 4 * h)),
            ("1.5 years", iv(18, 0, 0)),
            ("1.5 months", iv(1, 15, 0)),
            ("1.5 weeks", iv(0, 10, 12 * h)),
            ("1.5 days", iv(0, 1, 12 * h)),
            ("2 decades", iv(240, 0, 0)),
            ("5", iv(0, 0, 5_000_000)),
            ("1 02:03:04", iv(0, 1, 2 * h + 3 * 60_000_000 + 4_000_000)),
            ("1-2", iv(14, 0, 0)),
            ("P1Y2M3DT4H5M6S", iv(14, 3, 4 * h + 306_000_000)),
            ("P2W", iv(0, 14, 0)),
            ("PT1.5S", iv(0, 0, 1_500_000)),
            ("10 ms 5 us", iv(0, 0, 10_005)),
            ("1.5 years 2 mons ago", iv(-20, 0, 0)),
            ("-1.5 months", iv(-1, -15, 0)),
            ("0.3 years", iv(4, 0, 0)),
            ("1 hour 30", iv(0, 0, h + 30_000_000)),
            ("1:02:03.5 ago", iv(0, 0, -(h + 123_500_000))),
        ];
        for (text, want) in cases {
            assert_eq!(parse_interval(text), want, "{text}");
        }
    }

    #[test]
    fn refuses_what_postgresql_refuses() {
        for text in [
            "",
            "xyz",
            "1 parsec",
            "ago",
            "3 ago days",
            "P",
            "P1X",
            "1 2",
        ] {
            assert_eq!(parse_interval(text), Err(Syntax), "{text}");
        }
        for text in ["1:60", "1-12"] {
            assert_eq!(parse_interval(text), Err(OutOfRange), "{text}");
        }
    }
}
