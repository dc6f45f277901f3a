//! Date, timestamp and interval literals read as PostgreSQL reads them:
//! `timestamp '2024-01-01 10:30'`, `date 'Jan 5 2024'`, `'2024-01-01 10:30+02'::timestamptz`,
//! `interval '1 day 02:00'`, `'01:30'::interval`, `CAST('2 weeks ago' AS interval)`.
//!
//! DataFusion reads such a literal's text with arrow's parsers, which want seconds in a
//! time, know no month names, no `BC`, and none of PostgreSQL's interval forms (clock
//! times, `ago`, `@`, ISO 8601 durations, SQL's `1-2`, nor the text iolab itself writes
//! for an interval, `1 year 2 mons 3 days 04:05:06.789`). So before planning, the text of
//! every such literal is read here with iolab's own input functions
//! (`iolab_engine::values::input`, `interval_input`) and replaced by a plain form arrow
//! reads to the same value: `YYYY-MM-DD HH:MM:SS.ffffff` (with `+00:00` for a
//! timestamptz), `N months N days N microseconds`. A text PostgreSQL refuses fails here
//! with PostgreSQL's error.
//!
//! A statement a session sent is read with that session's DateStyle, TimeZone and clock
//! (`01/02/2024`, a timestamptz without a zone, `now`; [`Reading`]). A text parsed where
//! no session's settings apply (a view's query, a COPY's) has a date or timestamp
//! rewritten only when its value does not depend on the session: it is read three ways
//! (DateStyle's MDY, DMY and YMD orders, two time zones, two clocks for `now`/`today`)
//! and rewritten when all three agree. Left to DataFusion: infinities, years outside
//! 1–9999, and literals with a field qualifier (`interval '1' day`).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast;
use iolab_catalog::PgResult;
use iolab_engine::values::input::{parse_date, parse_timestamp, parse_timestamptz};
use iolab_engine::values::interval_input::interval_in;
use iolab_engine::values::{DateOrder, TextFormat};

/// The kinds of literal rewritten here.
#[derive(Clone, Copy)]
enum Kind {
    Date,
    Timestamp,
    Timestamptz,
    Interval,
}

fn kind_of(data_type: &ast::DataType) -> Option<Kind> {
    use ast::TimezoneInfo as Tz;
    Some(match data_type {
        ast::DataType::Date => Kind::Date,
        ast::DataType::Timestamp(_, Tz::None | Tz::WithoutTimeZone) => Kind::Timestamp,
        ast::DataType::Timestamp(_, Tz::WithTimeZone | Tz::Tz) => Kind::Timestamptz,
        ast::DataType::Interval { fields: None, .. } => Kind::Interval,
        _ => return None,
    })
}

/// How a date or timestamp literal is read (see the module comment).
#[derive(Clone, Copy)]
pub enum Reading<'a> {
    /// Before the session is known: only when every session reads it alike.
    AnySession,
    /// As the session with these text settings reads it.
    Session(&'a TextFormat),
}

/// Rewrites the date/time literals of `stmt` (see the module comment); `text` is the
/// statement's SQL, looked at first: most statements have none.
pub fn rewrite(stmt: &mut ast::Statement, text: &str, reading: Reading) -> PgResult<()> {
    let mentions =
        |word: &[u8]| (text.as_bytes().windows(word.len())).any(|w| w.eq_ignore_ascii_case(word));
    if !mentions(b"interval") && !mentions(b"date") && !mentions(b"timestamp") {
        return Ok(());
    }
    let mut failed = None;
    let _ = ast::visit_expressions_mut(stmt, |e| {
        let literal = match e {
            ast::Expr::Interval(ast::Interval {
                value,
                leading_field: None,
                last_field: None,
                ..
            }) => string_literal(value).map(|s| (Kind::Interval, s)),
            ast::Expr::Cast {
                expr, data_type, ..
            } => kind_of(data_type).zip(string_literal(expr)),
            ast::Expr::TypedString(ast::TypedString {
                data_type,
                value:
                    ast::ValueWithSpan {
                        value: ast::Value::SingleQuotedString(s),
                        ..
                    },
                ..
            }) => kind_of(data_type).map(|k| (k, s)),
            _ => None,
        };
        let Some((kind, literal)) = literal else {
            return ControlFlow::Continue(());
        };
        match plain_form(kind, literal, reading) {
            Ok(Some(plain)) => *literal = plain,
            Ok(None) => {}
            Err(e) => {
                failed = Some(e);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    failed.map_or(Ok(()), Err)
}

/// The text of `e` when it is a string literal.
fn string_literal(e: &mut ast::Expr) -> Option<&mut String> {
    match e {
        ast::Expr::Value(ast::ValueWithSpan {
            value: ast::Value::SingleQuotedString(s),
            ..
        }) => Some(s),
        _ => None,
    }
}

/// The form arrow reads for the literal `text` of `kind`; `None` to leave it as it is.
fn plain_form(kind: Kind, text: &str, reading: Reading) -> PgResult<Option<String>> {
    fn read<T: PartialEq>(
        text: &str,
        reading: Reading,
        parse: fn(&str, &TextFormat) -> PgResult<T>,
    ) -> PgResult<Option<T>> {
        match reading {
            Reading::AnySession => same_every_way(text, parse),
            Reading::Session(fmt) => parse(text, fmt).map(Some),
        }
    }
    let micros_text = |micros: i64, suffix: &str| {
        let at = chrono::DateTime::from_timestamp_micros(micros)?.naive_utc();
        (1..=9999)
            .contains(&chrono::Datelike::year(&at))
            .then(|| format!("{}{suffix}", at.format("%Y-%m-%d %H:%M:%S%.6f")))
    };
    Ok(match kind {
        Kind::Interval => {
            let v = interval_in(text)?;
            Some(format!(
                "{} months {} days {} microseconds",
                v.months, v.days, v.micros
            ))
        }
        Kind::Date => read(text, reading, parse_date)?.and_then(|days| {
            // `infinity` (i32::MAX) is left for the cast to read.
            let date = chrono::NaiveDate::from_num_days_from_ce_opt(days.checked_add(719_163)?)?;
            let year = chrono::Datelike::year(&date);
            (1..=9999)
                .contains(&year)
                .then(|| date.format("%Y-%m-%d").to_string())
        }),
        Kind::Timestamp => read(text, reading, parse_timestamp)?.and_then(|m| micros_text(m, "")),
        Kind::Timestamptz => {
            read(text, reading, parse_timestamptz)?.and_then(|m| micros_text(m, "+00:00"))
        }
    })
}

/// `parse(text)` read three ways (see the module comment): the value when all agree,
/// `None` when they differ or only some fail, the error when all fail.
fn same_every_way<T: PartialEq>(
    text: &str,
    parse: fn(&str, &TextFormat) -> PgResult<T>,
) -> PgResult<Option<T>> {
    let way = |date_order, zone_east, now_micros| TextFormat {
        date_order,
        time_zone: iolab_engine::values::SessionZone::fixed(zone_east),
        now_micros: Some(now_micros),
        ..TextFormat::default()
    };
    let ways = [
        way(DateOrder::Mdy, 0, 0),
        way(DateOrder::Dmy, 5 * 3600, 1_000_000_000_000_000),
        way(DateOrder::Ymd, -7 * 3600, 1_000_000_000_000_000),
    ];
    let [a, b, c] = ways.map(|fmt| parse(text, &fmt));
    Ok(match (a, b, c) {
        (Ok(a), Ok(b), Ok(c)) if a == b && b == c => Some(a),
        (Err(e), Err(_), Err(_)) => return Err(e),
        _ => None,
    })
}
