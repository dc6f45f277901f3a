//! Interval literals in PostgreSQL's syntax: `interval '1 day 02:00'`, `'01:30'::interval`,
//! `CAST('2 weeks ago' AS interval)`.
//!
//! DataFusion reads an interval's text with arrow's parser, which knows neither clock
//! times, `ago`, `@`, ISO 8601 durations, SQL's `1-2`, nor the text iolab itself writes
//! for an interval (`1 year 2 mons 3 days 04:05:06.789`). So before planning, the text
//! of every such literal is read here as PostgreSQL reads it
//! (`iolab_engine::values::interval_input`) and replaced by the plain `N months N days N
//! microseconds` that arrow reads to the same value; a text PostgreSQL refuses fails here
//! with PostgreSQL's error. A literal with a field qualifier (`interval '1' day`) is left
//! to DataFusion.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast;
use iolab_catalog::{sqlstate, PgError, PgResult};
use iolab_engine::values::interval_input::{parse_interval, IntervalInputError};

/// Rewrites the interval literals of `stmt` (see the module comment); `text` is the
/// statement's SQL, looked at first: most statements have no interval at all.
pub fn rewrite(stmt: &mut ast::Statement, text: &str) -> PgResult<()> {
    if !text
        .as_bytes()
        .windows(8)
        .any(|w| w.eq_ignore_ascii_case(b"interval"))
    {
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
            }) => string_literal(value),
            ast::Expr::Cast {
                expr,
                data_type: ast::DataType::Interval { fields: None, .. },
                ..
            } => string_literal(expr),
            _ => None,
        };
        let Some(literal) = literal else {
            return ControlFlow::Continue(());
        };
        match parse_interval(literal) {
            Ok(v) => {
                *literal = format!(
                    "{} months {} days {} microseconds",
                    v.months, v.days, v.micros
                );
                ControlFlow::Continue(())
            }
            Err(e) => {
                failed = Some(input_error(e, literal));
                ControlFlow::Break(())
            }
        }
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

fn input_error(e: IntervalInputError, text: &str) -> PgError {
    match e {
        IntervalInputError::Syntax => PgError::new(
            sqlstate::INVALID_DATETIME_FORMAT,
            format!("invalid input syntax for type interval: \"{text}\""),
        ),
        IntervalInputError::OutOfRange => PgError::new(
            sqlstate::INTERVAL_FIELD_OVERFLOW,
            format!("interval field value out of range: \"{text}\""),
        ),
    }
}
