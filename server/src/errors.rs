//! Turning every error into what PostgreSQL would have sent: a SQLSTATE and its message.
//!
//! iolab's own code raises `PgError`s with the right code already. Errors that come out
//! of sqlparser and DataFusion carry only text, so they are classified here by their
//! kind and wording into PostgreSQL's error classes (42601 syntax, 42P01 unknown table,
//! 42703 unknown column, 42883 unknown function or operator, 22P02 bad input, 22012
//! division by zero, 0A000 unsupported …). Only what cannot be classified is XX000.

use datafusion::error::DataFusionError;
use datafusion::sql::sqlparser::parser::ParserError;
use iolab_catalog::{sqlstate, PgError};
use pgwire::error::{ErrorInfo, PgWireError};

/// A `PgError` raised by iolab's own operators, wherever DataFusion wrapped it.
fn find_pg_error(err: &(dyn std::error::Error + 'static)) -> Option<PgError> {
    let mut current = Some(err);
    while let Some(e) = current {
        if let Some(pg) = e.downcast_ref::<PgError>() {
            return Some(pg.clone());
        }
        if let Some(DataFusionError::External(inner)) = e.downcast_ref::<DataFusionError>() {
            if let Some(pg) = inner.downcast_ref::<PgError>() {
                return Some(pg.clone());
            }
        }
        current = e.source();
    }
    None
}

/// Classifies a DataFusion error.
pub fn from_datafusion(err: DataFusionError) -> PgError {
    if let Some(pg) = find_pg_error(&err) {
        return pg;
    }
    match err {
        DataFusionError::External(e) => match e.downcast::<PgError>() {
            Ok(pg) => *pg,
            Err(other) => PgError::internal(other.to_string()),
        },
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => from_datafusion(*inner),
        DataFusionError::Shared(inner) => from_datafusion(
            std::sync::Arc::try_unwrap(inner).unwrap_or_else(|a| DataFusionError::Execution(a.to_string())),
        ),
        DataFusionError::SQL(e, _) => from_parser(&e, None),
        DataFusionError::NotImplemented(msg) => PgError::unsupported(clean(&msg)),
        DataFusionError::ArrowError(e, _) => from_arrow_message(&e.to_string()),
        DataFusionError::SchemaError(e, _) => from_plan_message(&e.to_string()),
        DataFusionError::Plan(msg) => from_plan_message(&msg),
        DataFusionError::Execution(msg) => from_execution_message(&msg),
        DataFusionError::ResourcesExhausted(msg) => {
            PgError::new("53200", format!("out of memory: {}", clean(&msg)))
        }
        other => from_execution_message(&other.to_string()),
    }
}

/// Classifies a sqlparser error; `sql` (when given) turns "Line: l, Column: c" into a
/// character position for psql's caret.
pub fn from_parser(err: &ParserError, sql: Option<&str>) -> PgError {
    let text = match err {
        ParserError::ParserError(s) | ParserError::TokenizerError(s) => s.clone(),
        ParserError::RecursionLimitExceeded => {
            return PgError::new(sqlstate::PROGRAM_LIMIT_EXCEEDED, "stack depth limit exceeded")
        }
    };
    let (body, location) = split_location(&text);
    let near = body.rsplit("found: ").next().filter(|_| body.contains("found: ")).map(|s| s.trim().to_string());
    let message = match near.as_deref() {
        Some("EOF") => "syntax error at end of input".to_string(),
        Some(tok) => format!("syntax error at or near \"{}\"", tok.trim_matches('"')),
        None => format!("syntax error: {body}"),
    };
    let mut pg = PgError::syntax(message);
    if let (Some(sql), Some((line, col))) = (sql, location) {
        if let Some(pos) = char_position(sql, line, col) {
            pg = pg.with_position(pos);
        }
    } else if let (Some(sql), Some("EOF")) = (sql, near.as_deref()) {
        pg = pg.with_position(sql.trim_end().chars().count() + 1);
    }
    pg
}

/// Splits "…  at Line: 1, Column: 15" off a parser message.
fn split_location(text: &str) -> (String, Option<(usize, usize)>) {
    if let Some(idx) = text.rfind(" at Line: ") {
        let loc = &text[idx + " at Line: ".len()..];
        let mut parts = loc.split(", Column: ");
        let line = parts.next().and_then(|l| l.trim().parse().ok());
        let col = parts.next().and_then(|c| c.trim().parse().ok());
        if let (Some(l), Some(c)) = (line, col) {
            return (text[..idx].to_string(), Some((l, c)));
        }
    }
    (text.to_string(), None)
}

/// 1-based character position of (line, column) in `sql`.
fn char_position(sql: &str, line: usize, col: usize) -> Option<usize> {
    let mut pos = 0;
    for (i, l) in sql.split('\n').enumerate() {
        if i + 1 == line {
            return Some(pos + col);
        }
        pos += l.chars().count() + 1;
    }
    None
}

fn clean(msg: &str) -> String {
    msg.trim().trim_end_matches('.').to_string()
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let i = s.find(start)? + start.len();
    let rest = &s[i..];
    let j = rest.find(end)?;
    Some(&rest[..j])
}

fn from_plan_message(msg: &str) -> PgError {
    let msg = msg.trim();
    if let Some(rest) = msg.strip_prefix("table '").or_else(|| msg.strip_prefix("Error during planning: table '")) {
        let name = rest.split('\'').next().unwrap_or(rest);
        let name = name.rsplit('.').next().unwrap_or(name);
        return PgError::undefined_table(name);
    }
    if msg.contains("No field named") {
        let raw = between(msg, "No field named ", ".").unwrap_or("?");
        let name = raw.trim_matches('"').rsplit('.').next().unwrap_or(raw).trim_matches('"');
        return PgError::new(sqlstate::UNDEFINED_COLUMN, format!("column \"{name}\" does not exist"));
    }
    if msg.contains("Ambiguous reference to unqualified field") {
        let name = msg.rsplit(' ').next().unwrap_or("?");
        return PgError::new(sqlstate::AMBIGUOUS_COLUMN, format!("column reference \"{name}\" is ambiguous"));
    }
    if msg.contains("Invalid function") {
        let name = between(msg, "Invalid function '", "'").unwrap_or("?");
        return PgError::new(sqlstate::UNDEFINED_FUNCTION, format!("function {name} does not exist"))
            .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.");
    }
    if msg.contains("Unsupported SQL type") || msg.contains("Unsupported ast node") {
        return PgError::unsupported(clean(msg));
    }
    if msg.contains("Cannot infer common argument type")
        || msg.contains("Cannot coerce arithmetic expression")
        || msg.contains("There isn't a common type")
    {
        return PgError::new(sqlstate::UNDEFINED_FUNCTION, format!("operator does not exist: {}", clean(msg)))
            .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts.");
    }
    if msg.contains("No function matches") || msg.contains("does not support inputs of type") || msg.contains("Failed to coerce arguments") {
        return PgError::new(sqlstate::UNDEFINED_FUNCTION, format!("function does not exist: {}", clean(msg)))
            .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.");
    }
    if msg.contains("must appear in the GROUP BY clause") || msg.contains("Projection references non-aggregate values") {
        return PgError::new(sqlstate::GROUPING_ERROR, clean(msg));
    }
    if msg.contains("Schema contains duplicate") || msg.contains("duplicate qualified field") {
        return PgError::new(sqlstate::DUPLICATE_COLUMN, clean(msg));
    }
    if msg.contains("not implemented") || msg.contains("Unsupported") || msg.contains("unsupported") {
        return PgError::unsupported(clean(msg));
    }
    PgError::new(sqlstate::SYNTAX_ERROR, clean(msg))
}

fn from_arrow_message(msg: &str) -> PgError {
    if msg.contains("Divide by zero") || msg.contains("divide by zero") {
        return PgError::new(sqlstate::DIVISION_BY_ZERO, "division by zero");
    }
    if msg.contains("Cannot cast string") || msg.contains("Cast error: Cannot cast") {
        // e.g. Cannot cast string 'abc' to value of Int32 type
        let value = between(msg, "string '", "'").unwrap_or("");
        let ty = between(msg, "value of ", " type").unwrap_or("");
        let pg = match ty {
            "Int16" => "smallint",
            "Int32" => "integer",
            "Int64" => "bigint",
            "Float32" => "real",
            "Float64" => "double precision",
            "Boolean" => "boolean",
            "Date32" => "date",
            t if t.starts_with("Decimal") => "numeric",
            t if t.starts_with("Timestamp") => "timestamp",
            _ => "",
        };
        if !pg.is_empty() {
            return PgError::new(sqlstate::INVALID_TEXT_REPRESENTATION, format!("invalid input syntax for type {pg}: \"{value}\""));
        }
        return PgError::new(sqlstate::INVALID_TEXT_REPRESENTATION, clean(msg));
    }
    if msg.contains("Overflow") || msg.contains("overflow") || msg.contains("out of range") {
        return PgError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, clean(msg.trim_start_matches("Arrow error: ")));
    }
    PgError::new(sqlstate::DATA_EXCEPTION, clean(msg.trim_start_matches("Arrow error: ")))
}

fn from_execution_message(msg: &str) -> PgError {
    if msg.contains("Divide by zero") || msg.contains("divide by zero") {
        return PgError::new(sqlstate::DIVISION_BY_ZERO, "division by zero");
    }
    if msg.contains("Cast error") || msg.contains("Cannot cast") {
        return from_arrow_message(msg);
    }
    if msg.contains("Overflow") || msg.contains("overflow") {
        return PgError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, clean(msg));
    }
    if msg.contains("more than one row") || msg.contains("ScalarSubquery") {
        return PgError::new(sqlstate::CARDINALITY_VIOLATION, "more than one row returned by a subquery used as an expression");
    }
    PgError::internal(clean(msg))
}

/// The wire form of an error.
pub fn to_error_info(e: &PgError) -> ErrorInfo {
    let mut info = ErrorInfo::new(e.severity.as_str().to_string(), e.code.to_string(), e.message.clone());
    info.detail = e.detail.clone();
    info.hint = e.hint.clone();
    info.position = e.position.map(|p| p.to_string());
    info.where_context = e.context.clone();
    info
}

pub fn to_wire(e: PgError) -> PgWireError {
    PgWireError::UserError(Box::new(to_error_info(&e)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    #[test]
    fn parser_errors_are_42601_with_a_caret_position() {
        let sql = "SELECT * FORM t";
        let err = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap_err();
        let pg = from_parser(&err, Some(sql));
        assert_eq!(pg.code, "42601");
        assert_eq!(pg.message, "syntax error at or near \"FORM\"");
        assert_eq!(pg.position, Some(10));
    }

    #[test]
    fn plan_errors_get_postgres_codes() {
        assert_eq!(from_plan_message("table 'postgres.public.nope' not found").code, "42P01");
        assert_eq!(from_plan_message("Schema error: No field named zz. Valid fields are t.a.").code, "42703");
        assert_eq!(from_plan_message("Invalid function 'nosuch'.\nDid you mean 'xyz'?").code, "42883");
        assert_eq!(from_arrow_message("Cast error: Cannot cast string 'abc' to value of Int32 type").message,
            "invalid input syntax for type integer: \"abc\"");
        assert_eq!(from_arrow_message("Divide by zero error").code, "22012");
    }
}
