//! Turning every error into what PostgreSQL would have sent: a SQLSTATE and its message.
//!
//! iolab's own code raises `PgError`s with the right code already. Errors that come out
//! of sqlparser and DataFusion carry only text (and, for schema errors, a little
//! structure), so they are classified here by their kind and wording into PostgreSQL's
//! error classes, with PostgreSQL 18's message text where the error carries enough to
//! write it:
//!
//! | what went wrong                         | SQLSTATE | PostgreSQL's words                                  |
//! |-----------------------------------------|----------|-----------------------------------------------------|
//! | a token the grammar does not expect     | 42601    | `syntax error at or near "x"`                       |
//! | a quote, identifier or comment left open| 42601    | `unterminated quoted string at or near "'ab"`       |
//! | a table that is not there               | 42P01    | `relation "x" does not exist`                       |
//! | a qualifier with no table in FROM       | 42P01    | `missing FROM-clause entry for table "x"`           |
//! | a column that is not there              | 42703    | `column "x" does not exist`, `column t.x does not exist` |
//! | a column two tables have                | 42702    | `column reference "x" is ambiguous`                 |
//! | a function / operator for other types   | 42883    | `function f(text) does not exist`, `operator does not exist: integer + text` |
//! | a type name that is not a type          | 42704    | `type "x" does not exist`                           |
//! | an ungrouped column, an aggregate in WHERE | 42803 | `column "t.a" must appear in the GROUP BY clause …` |
//! | ORDER BY / GROUP BY position too large  | 42P10    | `ORDER BY position 5 is not in select list`         |
//! | a WHERE that is not boolean             | 42804    | `argument of WHERE must be type boolean, not type integer` |
//! | text that is not a value of the type    | 22P02 (numbers, boolean), 22007 / 22008 (dates, times) | `invalid input syntax for type integer: "x"` |
//! | a value too large for its type          | 22003    | `smallint out of range`, `numeric field overflow`   |
//! | division by zero                        | 22012    | `division by zero`                                  |
//! | sqrt / ln / power outside their domain  | 2201F / 2201E | `cannot take square root of a negative number` |
//! | negative LIMIT / OFFSET                 | 2201W / 2201X | `LIMIT must not be negative`                   |
//! | `$n` with no value                      | 42P02    | `there is no parameter $1`                          |
//! | what PostgreSQL has and iolab has not   | 0A000    | (iolab's own words)                                 |
//!
//! DataFusion types are named as PostgreSQL names them (`Int32` is `integer`, `Utf8` is
//! `text`). Where DataFusion typed a value differently from PostgreSQL (an integer
//! literal is `Int64` there, `integer` in PostgreSQL), the message names DataFusion's
//! type. Only what cannot be classified is XX000.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::{Column, SchemaError};
use datafusion::error::DataFusionError;
use datafusion::sql::sqlparser::parser::ParserError;
use iolab_catalog::{sqlstate, PgError, PgType};
use iolab_engine::exec::schema::PERSISTENT_PUBLIC;
use pgwire::error::{ErrorInfo, PgWireError};

const FUNCTION_HINT: &str =
    "No function matches the given name and argument types. You might need to add explicit type casts.";
const OPERATOR_HINT: &str =
    "No operator matches the given name and argument types. You might need to add explicit type casts.";

/// SQLSTATEs this module sends that the catalog's `sqlstate` list does not name.
mod code {
    pub const DUPLICATE_ALIAS: &str = "42712";
    pub const INVALID_COLUMN_REFERENCE: &str = "42P10";
    pub const UNDEFINED_PARAMETER: &str = "42P02";
    pub const CANNOT_COERCE: &str = "42846";
    pub const INVALID_ARGUMENT_FOR_LOG: &str = "2201E";
    pub const INVALID_ARGUMENT_FOR_POWER: &str = "2201F";
    pub const INVALID_ROW_COUNT_IN_LIMIT: &str = "2201W";
    pub const INVALID_ROW_COUNT_IN_OFFSET: &str = "2201X";
}

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
    if let Some(pg) = temp_file_limit_exceeded(&err.to_string()) {
        return pg;
    }
    match err {
        DataFusionError::External(e) => match e.downcast::<PgError>() {
            Ok(pg) => *pg,
            Err(other) => PgError::internal(other.to_string()),
        },
        DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => {
            from_datafusion(*inner)
        }
        // Planning can collect several errors; PostgreSQL stops at the first.
        DataFusionError::Collection(errors) => match errors.into_iter().next() {
            Some(first) => from_datafusion(first),
            None => PgError::internal("an empty collection of errors"),
        },
        DataFusionError::Shared(inner) => from_datafusion(
            std::sync::Arc::try_unwrap(inner)
                .unwrap_or_else(|a| DataFusionError::Execution(a.to_string())),
        ),
        DataFusionError::SQL(e, _) => from_parser(&e, None),
        DataFusionError::NotImplemented(msg) => {
            classify_message(&msg).unwrap_or_else(|| PgError::unsupported(clean(&msg)))
        }
        DataFusionError::ArrowError(e, _) => from_arrow_message(&e.to_string()),
        DataFusionError::SchemaError(e, _) => from_schema_error(&e),
        DataFusionError::Plan(msg) => from_plan_message(&msg),
        DataFusionError::Execution(msg) => from_execution_message(&msg),
        // A function call no signature accepts surfaces as an internal error.
        DataFusionError::Internal(msg) => {
            classify_message(&msg).unwrap_or_else(|| PgError::internal(clean(&msg)))
        }
        DataFusionError::ResourcesExhausted(msg) => {
            PgError::new("53200", format!("out of memory: {}", clean(&msg)))
        }
        other => from_execution_message(&other.to_string()),
    }
}

/// PostgreSQL's error when a session's temporary files would outgrow `temp_file_limit`:
/// the session's temporary files refuse the write with its message
/// (iolab_engine::exec::temp_files), which reaches here inside DataFusion's and Arrow's.
fn temp_file_limit_exceeded(message: &str) -> Option<PgError> {
    const MESSAGE: &str = "temporary file size exceeds \"temp_file_limit\" (";
    let start = message.find(MESSAGE)?;
    let rest = &message[start..];
    let end = rest.find("kB)")? + "kB)".len();
    Some(PgError::new(
        sqlstate::CONFIGURATION_LIMIT_EXCEEDED,
        rest[..end].to_string(),
    ))
}

/// Classifies a sqlparser error; `sql` (when given) turns "Line: l, Column: c" into a
/// character position for psql's caret.
pub fn from_parser(err: &ParserError, sql: Option<&str>) -> PgError {
    let (text, from_tokenizer) = match err {
        ParserError::ParserError(s) => (s, false),
        ParserError::TokenizerError(s) => (s, true),
        ParserError::RecursionLimitExceeded => {
            return PgError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                "stack depth limit exceeded",
            )
        }
    };
    let (body, location) = split_location(text);
    if from_tokenizer {
        if let Some(pg) = unterminated_token(&body, location, sql) {
            return pg;
        }
    }
    let near = body
        .rsplit("found: ")
        .next()
        .filter(|_| body.contains("found: "))
        .map(|s| s.trim().to_string());
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

/// A quoted string, quoted identifier, dollar-quoted string or comment that runs to the
/// end of the input. PostgreSQL's lexer reports it as one token from its opening
/// delimiter to the end: `unterminated quoted string at or near "'abc"`, with the
/// position of the opening delimiter. sqlparser reports some of them at their start and
/// some at the end of the input, so the start is looked for in the text.
fn unterminated_token(
    body: &str,
    location: Option<(usize, usize)>,
    sql: Option<&str>,
) -> Option<PgError> {
    #[derive(PartialEq)]
    enum Opener {
        Quote,
        Identifier,
        Dollar,
        Comment,
    }
    let (what, opener) = if body.starts_with("Unterminated string literal")
        || body.starts_with("Unterminated encoded string literal")
        || body.starts_with("Unterminated national string literal")
    {
        ("unterminated quoted string", Opener::Quote)
    } else if body.starts_with("Unterminated dollar-quoted") {
        ("unterminated dollar-quoted string", Opener::Dollar)
    } else if body.starts_with("Expected close delimiter '\"'") {
        ("unterminated quoted identifier", Opener::Identifier)
    } else if body.starts_with("Unexpected EOF while in a multi-line comment") {
        ("unterminated /* comment", Opener::Comment)
    } else {
        return None;
    };
    let Some(sql) = sql else {
        return Some(PgError::syntax(what));
    };
    let start = match opener {
        Opener::Quote | Opener::Identifier => {
            let delimiter = if opener == Opener::Quote { '\'' } else { '"' };
            location
                .and_then(|(line, col)| byte_index(sql, line, col))
                .filter(|&b| {
                    sql[b..].starts_with(delimiter) || sql[b..].starts_with(['E', 'e', 'N', 'n'])
                })
                .or_else(|| unclosed_quote(sql, delimiter))
        }
        Opener::Dollar => unclosed_dollar_quote(sql),
        Opener::Comment => unclosed_comment(sql),
    };
    Some(match start {
        Some(b) => PgError::syntax(format!("{what} at or near \"{}\"", &sql[b..]))
            .with_position(sql[..b].chars().count() + 1),
        None => PgError::syntax(what),
    })
}

/// Byte index of the 1-based (line, column) in `sql`.
fn byte_index(sql: &str, line: usize, col: usize) -> Option<usize> {
    let line_start = if line == 1 {
        0
    } else {
        sql.match_indices('\n').nth(line - 2).map(|(i, _)| i + 1)?
    };
    sql[line_start..]
        .char_indices()
        .nth(col.checked_sub(1)?)
        .map(|(i, _)| line_start + i)
}

/// The byte index of a `delimiter` that opens and is not closed (doubled delimiters
/// inside are part of the text).
fn unclosed_quote(sql: &str, delimiter: char) -> Option<usize> {
    let mut open: Option<usize> = None;
    let mut chars = sql.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c != delimiter {
            continue;
        }
        match open {
            None => open = Some(i),
            Some(_) if chars.peek().map(|&(_, n)| n) == Some(delimiter) => {
                chars.next();
            }
            Some(_) => open = None,
        }
    }
    open
}

/// The byte index of a `$tag$` that is never closed by the same tag.
fn unclosed_dollar_quote(sql: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(rel) = sql[from..].find('$') {
        let start = from + rel;
        let rest = &sql[start + 1..];
        let tag_len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let is_tag =
            rest[tag_len..].starts_with('$') && !rest.starts_with(|c: char| c.is_ascii_digit());
        if !is_tag {
            from = start + 1;
            continue;
        }
        let tag = &sql[start..start + tag_len + 2];
        let body = start + tag.len();
        match sql[body..].find(tag) {
            Some(close) => from = body + close + tag.len(),
            None => return Some(start),
        }
    }
    None
}

/// The byte index of a `/*` that is never closed.
fn unclosed_comment(sql: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(rel) = sql[from..].find("/*") {
        let start = from + rel;
        match sql[start + 2..].find("*/") {
            Some(close) => from = start + 2 + close + 2,
            None => return Some(start),
        }
    }
    None
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

/// PostgreSQL's name for a DataFusion type written as DataFusion prints it (`Int32`,
/// `Utf8View`, `Decimal128(10, 2)`, `Timestamp(µs)`); unknown ones keep DataFusion's name.
fn pg_type_name(arrow: &str) -> String {
    let arrow = arrow.trim();
    let Ok(dt) = arrow.parse::<DataType>() else {
        return arrow.to_lowercase();
    };
    if let Some(t) = PgType::for_arrow(&dt) {
        return t.sql_name().to_string();
    }
    match dt {
        DataType::Null => "unknown",
        DataType::Time32(_) | DataType::Time64(_) => "time without time zone",
        DataType::Interval(_) | DataType::Duration(_) => "interval",
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "bytea",
        _ => return arrow.to_lowercase(),
    }
    .to_string()
}

/// The errors DataFusion reports with a little structure.
fn from_schema_error(e: &SchemaError) -> PgError {
    match e {
        SchemaError::FieldNotFound {
            field,
            valid_fields,
        } => undefined_column(field, valid_fields),
        SchemaError::AmbiguousReference { field } => PgError::new(
            sqlstate::AMBIGUOUS_COLUMN,
            format!("column reference \"{}\" is ambiguous", field.name),
        ),
        SchemaError::DuplicateQualifiedField { qualifier, .. } => PgError::new(
            code::DUPLICATE_ALIAS,
            format!(
                "table name \"{}\" specified more than once",
                qualifier.table()
            ),
        ),
        SchemaError::DuplicateUnqualifiedField { name } => PgError::new(
            sqlstate::DUPLICATE_COLUMN,
            format!("column \"{name}\" specified more than once"),
        ),
    }
}

/// `zz` or `t.zz` that no table in FROM has; `x.a` where no table in FROM is called x.
fn undefined_column(field: &Column, valid_fields: &[Column]) -> PgError {
    if field.name.is_empty() {
        // sqlparser accepts `""`; PostgreSQL's lexer does not.
        return PgError::syntax("zero-length delimited identifier at or near \"\"\"\"");
    }
    match &field.relation {
        None => PgError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!("column \"{}\" does not exist", field.name),
        ),
        Some(relation) => {
            let table = relation.table();
            let in_from = valid_fields
                .iter()
                .any(|c| c.relation.as_ref().is_some_and(|r| r.table() == table));
            if in_from {
                PgError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!("column {table}.{} does not exist", field.name),
                )
            } else {
                PgError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("missing FROM-clause entry for table \"{table}\""),
                )
            }
        }
    }
}

fn from_plan_message(msg: &str) -> PgError {
    classify_message(msg).unwrap_or_else(|| PgError::new(sqlstate::SYNTAX_ERROR, clean(msg)))
}

fn from_execution_message(msg: &str) -> PgError {
    classify_message(msg).unwrap_or_else(|| PgError::internal(clean(msg)))
}

/// The error for a DataFusion message whose wording says what it is, whichever variant
/// carried it (the same words arrive as planning, execution and internal errors).
fn classify_message(msg: &str) -> Option<PgError> {
    let msg = msg.trim();
    let msg = msg.strip_prefix("Error during planning: ").unwrap_or(msg);
    if let Some(rest) = msg.strip_prefix("table '") {
        return Some(undefined_table(rest.split('\'').next().unwrap_or(rest)));
    }
    if msg.contains("No field named") {
        let raw = between(msg, "No field named ", ".").unwrap_or("?");
        let name = raw
            .trim_matches('"')
            .rsplit('.')
            .next()
            .unwrap_or(raw)
            .trim_matches('"');
        return Some(PgError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!("column \"{name}\" does not exist"),
        ));
    }
    if msg.contains("Ambiguous reference to unqualified field") {
        let name = msg.rsplit(' ').next().unwrap_or("?");
        return Some(PgError::new(
            sqlstate::AMBIGUOUS_COLUMN,
            format!("column reference \"{name}\" is ambiguous"),
        ));
    }
    if msg.contains("Invalid function") {
        // DataFusion does not say which argument types it was called with.
        let name = between(msg, "Invalid function '", "'").unwrap_or("?");
        return Some(
            PgError::new(
                sqlstate::UNDEFINED_FUNCTION,
                format!("function {name} does not exist"),
            )
            .with_hint(FUNCTION_HINT),
        );
    }
    if let Some(ty) = msg.strip_prefix("Unsupported SQL type ") {
        return Some(unknown_type(ty));
    }
    if let Some(rest) = msg.strip_prefix("Unsupported CAST from ") {
        if let Some((from, to)) = rest.split_once(" to ") {
            return Some(PgError::new(
                code::CANNOT_COERCE,
                format!(
                    "cannot cast type {} to {}",
                    pg_type_name(from),
                    pg_type_name(clean(to).as_str())
                ),
            ));
        }
    }
    // A subquery where DataFusion cannot decorrelate it (a join's ON, ORDER BY): PostgreSQL
    // runs it, iolab cannot yet.
    if msg.contains("subquery can only be used in") {
        return Some(PgError::unsupported(format!(
            "a subquery in this position is not supported ({})",
            clean(msg)
        )));
    }
    if let Some(rest) = msg.strip_prefix("Unsupported ast node in sqltorel: ") {
        let node: String = rest.chars().take_while(|c| c.is_alphanumeric()).collect();
        return Some(PgError::unsupported(format!(
            "{node} expressions are not supported"
        )));
    }
    if let Some(operands) = between(
        msg,
        "Cannot coerce arithmetic expression ",
        " to valid types",
    ) {
        return Some(operator_does_not_exist(operands));
    }
    if msg.contains("Cannot infer common argument type")
        || msg.contains("There isn't a common type")
    {
        let operands = msg
            .rsplit("operation ")
            .next()
            .filter(|_| msg.contains("operation "))
            .unwrap_or(msg);
        return Some(operator_does_not_exist(operands));
    }
    if msg.contains("No function matches")
        || msg.contains("does not support inputs of type")
        || msg.contains("Failed to coerce arguments")
        || msg.contains("failed to match any signature")
        || (msg.contains("Function '") && (msg.contains(" expects ") || msg.contains(" requires ")))
    {
        return Some(function_does_not_exist(msg));
    }
    if msg.contains("must appear in the GROUP BY clause")
        || msg.contains("Projection references non-aggregate values")
    {
        let column = between(msg, "column \"", "\"")
            .map(str::to_string)
            .or_else(|| {
                // HAVING clause references: t.a > Int64(1) must appear in the GROUP BY clause …
                between(msg, "HAVING clause references: ", " must appear")
                    .and_then(first_qualified_column)
            });
        let message = match column {
            Some(column) => {
                format!("column \"{column}\" must appear in the GROUP BY clause or be used in an aggregate function")
            }
            None => clean(msg),
        };
        return Some(PgError::new(sqlstate::GROUPING_ERROR, message));
    }
    if msg.contains("Aggregate functions are not allowed in the WHERE clause") {
        return Some(PgError::new(
            sqlstate::GROUPING_ERROR,
            "aggregate functions are not allowed in WHERE",
        ));
    }
    if let Some(n) = between(msg, "Order by column out of bounds, specified: ", ",") {
        return Some(PgError::new(
            code::INVALID_COLUMN_REFERENCE,
            format!("ORDER BY position {n} is not in select list"),
        ));
    }
    if let Some(n) = between(
        msg,
        "Cannot find column with position ",
        " in SELECT clause",
    ) {
        return Some(PgError::new(
            code::INVALID_COLUMN_REFERENCE,
            format!("GROUP BY position {n} is not in select list"),
        ));
    }
    if msg.contains("Inconsistent data length across values list") {
        return Some(PgError::syntax("VALUES lists must all be the same length"));
    }
    if msg.starts_with("LIMIT must be >= 0") {
        return Some(PgError::new(
            code::INVALID_ROW_COUNT_IN_LIMIT,
            "LIMIT must not be negative",
        ));
    }
    if msg.starts_with("OFFSET must be >= 0") {
        return Some(PgError::new(
            code::INVALID_ROW_COUNT_IN_OFFSET,
            "OFFSET must not be negative",
        ));
    }
    if msg.starts_with("Cannot create filter with non-boolean predicate") {
        let ty = msg.rsplit("returning ").next().unwrap_or("?");
        return Some(PgError::new(
            sqlstate::DATATYPE_MISMATCH,
            format!(
                "argument of WHERE must be type boolean, not type {}",
                pg_type_name(ty)
            ),
        ));
    }
    if let Some(placeholder) = between(msg, "Placeholder '", "' was not provided a value") {
        return Some(PgError::new(
            code::UNDEFINED_PARAMETER,
            format!("there is no parameter {placeholder}"),
        ));
    }
    if msg.starts_with("Projections require unique expression names") {
        // PostgreSQL allows `SELECT a, a`; DataFusion does not.
        return Some(PgError::unsupported(format!(
            "columns with the same name in one select list are not supported: {}",
            clean(msg)
        )));
    }
    if msg.contains("Schema contains duplicate") || msg.contains("duplicate qualified field") {
        return Some(PgError::new(sqlstate::DUPLICATE_COLUMN, clean(msg)));
    }
    if msg.contains("more than one row") || msg.contains("ScalarSubquery") {
        return Some(PgError::new(
            sqlstate::CARDINALITY_VIOLATION,
            "more than one row returned by a subquery used as an expression",
        ));
    }
    if let Some(pg) = math_domain_error(msg) {
        return Some(pg);
    }
    if msg.contains("Divide by zero")
        || msg.contains("divide by zero")
        || msg.contains("Cast error")
        || msg.contains("Cannot cast")
        || msg.contains("Compute error")
        || msg.contains("Arithmetic overflow")
        || msg.contains("Parser error")
        || msg.contains("Invalid argument error")
    {
        return Some(from_arrow_message(msg));
    }
    if msg.contains("Overflow") || msg.contains("overflow") {
        return Some(PgError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            clean(msg),
        ));
    }
    if msg.contains("not implemented") || msg.contains("Unsupported") || msg.contains("unsupported")
    {
        return Some(PgError::unsupported(clean(msg)));
    }
    None
}

/// The first `table.column` in an expression as DataFusion prints it (`t.a > Int64(1)`).
fn first_qualified_column(expr: &str) -> Option<String> {
    expr.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.'))
        .find(|word| {
            let mut parts = word.split('.');
            let (Some(table), Some(column), None) = (parts.next(), parts.next(), parts.next())
            else {
                return false;
            };
            let identifier = |s: &str| s.starts_with(|c: char| c.is_alphabetic() || c == '_');
            identifier(table) && identifier(column)
        })
        .map(str::to_string)
}

/// `relation "x" does not exist` for DataFusion's fully qualified `catalog.schema.table`
/// (the schema is left out when it is `public`, the one on the search path).
fn undefined_table(qualified: &str) -> PgError {
    let parts: Vec<&str> = qualified.split('.').collect();
    let name = match parts.as_slice() {
        // Written `public.t` (see `iolab_engine::exec::schema`).
        [.., PERSISTENT_PUBLIC, table] => format!("public.{table}"),
        [.., schema, table] if *schema != "public" => format!("{schema}.{table}"),
        [.., table] => table.to_string(),
        [] => qualified.to_string(),
    };
    PgError::undefined_table(&name)
}

/// `type "x" does not exist` (42704) for a name PostgreSQL does not know either; a
/// PostgreSQL type iolab lacks is 0A000.
fn unknown_type(written: &str) -> PgError {
    /// PostgreSQL's built-in types that iolab does not (yet) have.
    const POSTGRES_TYPES: &[&str] = &[
        "bit",
        "bit varying",
        "varbit",
        "bytea",
        "money",
        "inet",
        "cidr",
        "macaddr",
        "macaddr8",
        "uuid",
        "json",
        "jsonb",
        "xml",
        "point",
        "line",
        "lseg",
        "box",
        "path",
        "polygon",
        "circle",
        "tsvector",
        "tsquery",
        "interval",
        "time",
        "timetz",
        "time with time zone",
        "time without time zone",
        "oid",
        "regclass",
        "regtype",
        "regproc",
        "int4range",
        "int8range",
        "numrange",
        "tsrange",
        "tstzrange",
        "daterange",
        "pg_lsn",
        "txid_snapshot",
        "name",
        "\"char\"",
        "serial",
        "bigserial",
        "smallserial",
        "serial4",
        "serial8",
        "serial2",
        "record",
        "void",
        "jsonpath",
    ];
    let written = clean(written);
    let lower = written.to_lowercase();
    let base = lower
        .split('(')
        .next()
        .unwrap_or(&lower)
        .trim()
        .trim_end_matches("[]")
        .to_string();
    if POSTGRES_TYPES.contains(&base.as_str()) {
        return PgError::unsupported(format!("type {base} is not supported"));
    }
    PgError::new(
        sqlstate::UNDEFINED_OBJECT,
        format!("type \"{}\" does not exist", written.trim_matches('"')),
    )
}

/// `operator does not exist: integer + text` from DataFusion's `Int32 + Utf8`.
fn operator_does_not_exist(operands: &str) -> PgError {
    const OPERATORS: &[&str] = &[
        " + ", " - ", " * ", " / ", " % ", " = ", " != ", " <> ", " < ", " <= ", " > ", " >= ",
        " || ", " LIKE ", " ILIKE ", " ~ ", " & ", " | ", " # ", " << ", " >> ",
    ];
    let operands = clean(operands);
    let split = OPERATORS
        .iter()
        .filter_map(|op| operands.find(op).map(|i| (i, *op)))
        .min_by_key(|(i, _)| *i);
    let message = match split {
        Some((i, op)) => format!(
            "operator does not exist: {} {} {}",
            pg_type_name(&operands[..i]),
            op.trim(),
            pg_type_name(&operands[i + op.len()..])
        ),
        None => format!("operator does not exist: {operands}"),
    };
    PgError::new(sqlstate::UNDEFINED_FUNCTION, message).with_hint(OPERATOR_HINT)
}

/// `function sum(text) does not exist` from DataFusion's signature errors: "No function
/// matches the given name and argument types 'abs(Utf8)'", or "Function 'sum' failed to
/// match any signature … received String (DataType: Utf8)".
fn function_does_not_exist(msg: &str) -> PgError {
    let signature = between(msg, "argument types '", "'").and_then(|sig| {
        let (name, args) = sig.split_once('(')?;
        let args = args.strip_suffix(')')?;
        let args: Vec<String> = if args.trim().is_empty() {
            vec![]
        } else {
            split_top_level(args)
                .iter()
                .map(|a| pg_type_name(a))
                .collect()
        };
        Some(format!("{name}({})", args.join(", ")))
    });
    let signature = signature.or_else(|| {
        let name = between(msg, "Function '", "'").or_else(|| between(msg, "function '", "'"))?;
        // Aggregates name the one argument's type in every candidate they tried.
        Some(match between(msg, "(DataType: ", ")") {
            Some(ty) => format!("{name}({})", pg_type_name(ty)),
            None => name.to_string(),
        })
    });
    let message = match signature {
        Some(sig) => format!("function {sig} does not exist"),
        None => format!("function does not exist: {}", clean(msg)),
    };
    PgError::new(sqlstate::UNDEFINED_FUNCTION, message).with_hint(FUNCTION_HINT)
}

/// Splits `Int32, Decimal128(10, 2)` at the commas outside parentheses.
fn split_top_level(list: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in list.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(list[start..].trim());
    parts
}

/// Errors from Arrow's kernels and casts, by the words of their `Display`.
fn from_arrow_message(msg: &str) -> PgError {
    let msg = msg.trim().trim_start_matches("Arrow error: ");
    if msg.contains("Divide by zero") || msg.contains("divide by zero") {
        return PgError::new(sqlstate::DIVISION_BY_ZERO, "division by zero");
    }
    // Int64Array overflow on abs(-9223372036854775808)
    if let Some(array) = between(msg, "Compute error: ", "Array overflow on") {
        return out_of_range(array);
    }
    // Can't cast value 40000 to type Int16
    if let Some(ty) = msg
        .split("Can't cast value ")
        .nth(1)
        .and_then(|rest| rest.split(" to type ").nth(1))
    {
        return out_of_range(clean(ty).as_str());
    }
    // Cannot cast string 'abc' to value of Int32 type / Cannot cast value 'x' to value of Boolean type
    if let Some(ty) = between(msg, "to value of ", " type") {
        let value = between(msg, "string '", "' to value")
            .or_else(|| between(msg, "value '", "' to value"))
            .unwrap_or("");
        return invalid_input(ty, value);
    }
    // Error parsing timestamp from 'x': timestamp must contain at least 10 characters
    if let Some(value) = between(msg, "Error parsing timestamp from '", "'") {
        return datetime_input("timestamp", value);
    }
    // 123.45 is too large to store in a Decimal128 of precision 4. Max is 99.99
    if msg.contains("to store in a Decimal") {
        if let Some(precision) =
            between(msg, "of precision ", ".").and_then(|p| p.trim().parse::<u32>().ok())
        {
            let scale = msg
                .rsplit("Max is ")
                .next()
                .and_then(|max| max.split_once('.'))
                .map(|(_, f)| f.trim().len());
            let pg = PgError::new(
                sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                "numeric field overflow",
            );
            return match scale {
                Some(scale) => pg.with_detail(format!(
                    "A field with precision {precision}, scale {scale} must round to an absolute value less than 10^{}.",
                    precision as usize - scale.min(precision as usize)
                )),
                None => pg,
            };
        }
    }
    // Arithmetic overflow: Overflow happened on: 2147483647 + 1
    if let Some(operation) = msg.split("Overflow happened on: ").nth(1) {
        return integer_overflow(operation);
    }
    if let Some(pg) = math_domain_error(msg) {
        return pg;
    }
    if msg.contains("Overflow") || msg.contains("overflow") || msg.contains("out of range") {
        return PgError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, clean(msg));
    }
    PgError::new(sqlstate::DATA_EXCEPTION, clean(msg))
}

/// sqrt, ln, log and power outside their domain, in PostgreSQL's words (DataFusion's
/// functions raise them with the same words, as execution or compute errors).
fn math_domain_error(msg: &str) -> Option<PgError> {
    [
        (
            "cannot take square root of a negative number",
            code::INVALID_ARGUMENT_FOR_POWER,
        ),
        (
            "zero raised to a negative power is undefined",
            code::INVALID_ARGUMENT_FOR_POWER,
        ),
        (
            "a negative number raised to a non-integer power yields a complex result",
            code::INVALID_ARGUMENT_FOR_POWER,
        ),
        (
            "cannot take logarithm of zero",
            code::INVALID_ARGUMENT_FOR_LOG,
        ),
        (
            "cannot take logarithm of a negative number",
            code::INVALID_ARGUMENT_FOR_LOG,
        ),
    ]
    .into_iter()
    .find(|(words, _)| msg.contains(words))
    .map(|(words, code)| PgError::new(code, words))
}

/// `smallint out of range` for a value that does not fit a DataFusion type.
fn out_of_range(arrow: &str) -> PgError {
    let message = match pg_type_name(arrow).as_str() {
        name @ ("smallint" | "integer" | "bigint") => format!("{name} out of range"),
        "numeric" => "numeric field overflow".to_string(),
        name => format!("value out of range for type {name}"),
    };
    PgError::new(sqlstate::NUMERIC_VALUE_OUT_OF_RANGE, message)
}

/// `integer out of range` for an integer operation that overflowed. Arrow does not say
/// the type; an operand beyond 32 bits means bigint, otherwise PostgreSQL's usual integer.
fn integer_overflow(operation: &str) -> PgError {
    let wide = operation
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter_map(|n| n.parse::<i128>().ok())
        .any(|n| i32::try_from(n).is_err());
    let name = if wide { "bigint" } else { "integer" };
    PgError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{name} out of range"),
    )
}

/// `invalid input syntax for type integer: "abc"` for text a cast could not read.
fn invalid_input(arrow: &str, value: &str) -> PgError {
    let dt = arrow.parse::<DataType>().ok();
    match dt {
        Some(DataType::Date32 | DataType::Date64) => datetime_input("date", value),
        Some(DataType::Timestamp(_, None)) => datetime_input("timestamp", value),
        Some(DataType::Timestamp(_, Some(_))) => datetime_input("timestamp with time zone", value),
        Some(DataType::Time32(_) | DataType::Time64(_)) => datetime_input("time", value),
        _ => PgError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!(
                "invalid input syntax for type {}: \"{value}\"",
                pg_type_name(arrow)
            ),
        ),
    }
}

/// Dates and times: text shaped like one whose fields are out of range (`2024-13-45`,
/// `25:00`) is 22008; anything else is 22007.
fn datetime_input(type_name: &str, value: &str) -> PgError {
    let trimmed = value.trim();
    let shaped = !trimmed.is_empty()
        && trimmed.chars().any(|c| c.is_ascii_digit())
        && trimmed
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '-' | ':' | '/' | '.' | ' ' | 'T' | '+'));
    if shaped {
        PgError::new(
            sqlstate::DATETIME_FIELD_OVERFLOW,
            format!("date/time field value out of range: \"{value}\""),
        )
    } else {
        PgError::new(
            sqlstate::INVALID_DATETIME_FORMAT,
            format!("invalid input syntax for type {type_name}: \"{value}\""),
        )
    }
}

/// The fields every ErrorResponse and NoticeResponse starts with: the severity (also
/// untranslated, in the `V` field PostgreSQL sends since 9.6), the code, the message.
pub fn message_fields(severity: &str, code: &str, message: String) -> ErrorInfo {
    let mut info = ErrorInfo::new(severity.to_string(), code.to_string(), message);
    info.severity_nonlocalized = Some(severity.to_string());
    info
}

/// The wire form of an error.
pub fn to_error_info(e: &PgError) -> ErrorInfo {
    let mut info = message_fields(e.severity.as_str(), e.code, e.message.clone());
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
    use datafusion::common::Diagnostic;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn parse_error(sql: &str) -> PgError {
        let err = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap_err();
        from_parser(&err, Some(sql))
    }

    /// (code, message) of an error, for compact assertions.
    fn said(pg: PgError) -> (&'static str, String) {
        (pg.code, pg.message)
    }

    #[test]
    fn parser_errors_are_42601_with_a_caret_position() {
        // (`SELECT * FORM t` would be PostgreSQL's example, but sqlparser takes FORM for
        // an alias of `*` and complains at "t".)
        let pg = parse_error("SELECT 1 FROM t WHERE a = = 1");
        assert_eq!(pg.code, "42601");
        assert_eq!(pg.message, "syntax error at or near \"=\"");
        assert_eq!(pg.position, Some(27));

        let pg = parse_error("SELECT (1");
        assert_eq!(pg.message, "syntax error at end of input");
        assert_eq!(pg.position, Some(10));
    }

    #[test]
    fn unterminated_tokens_run_to_the_end_of_the_input() {
        for (sql, message, position) in [
            (
                "SELECT 'abc",
                "unterminated quoted string at or near \"'abc\"",
                8,
            ),
            (
                "SELECT 'it''s",
                "unterminated quoted string at or near \"'it''s\"",
                8,
            ),
            (
                "SELECT \"abc",
                "unterminated quoted identifier at or near \"\"abc\"",
                8,
            ),
            (
                "SELECT $$abc",
                "unterminated dollar-quoted string at or near \"$$abc\"",
                8,
            ),
            (
                "SELECT $x$a$x$, $y$b",
                "unterminated dollar-quoted string at or near \"$y$b\"",
                17,
            ),
            (
                "SELECT 1 /* x",
                "unterminated /* comment at or near \"/* x\"",
                10,
            ),
            (
                "SELECT 1,\n 'é",
                "unterminated quoted string at or near \"'é\"",
                12,
            ),
        ] {
            let pg = parse_error(sql);
            assert_eq!(
                (pg.code, pg.message.as_str(), pg.position),
                ("42601", message, Some(position)),
                "{sql}"
            );
        }
    }

    #[test]
    fn plan_errors_get_postgres_codes() {
        assert_eq!(
            from_plan_message("table 'postgres.public.nope' not found").code,
            "42P01"
        );
        assert_eq!(
            from_plan_message("Schema error: No field named zz. Valid fields are t.a.").code,
            "42703"
        );
        assert_eq!(
            from_plan_message("Invalid function 'nosuch'.\nDid you mean 'xyz'?").code,
            "42883"
        );
        assert_eq!(
            from_arrow_message("Cast error: Cannot cast string 'abc' to value of Int32 type")
                .message,
            "invalid input syntax for type integer: \"abc\""
        );
        assert_eq!(from_arrow_message("Divide by zero error").code, "22012");
    }

    #[test]
    fn wrapped_errors_are_classified_by_what_they_wrap() {
        let plan = || DataFusionError::Plan("table 'postgres.public.nope' not found".into());
        let diagnostic = DataFusionError::Diagnostic(
            Box::new(Diagnostic::new_error("x", None)),
            Box::new(plan()),
        );
        assert_eq!(
            said(from_datafusion(diagnostic)),
            ("42P01", "relation \"nope\" does not exist".into())
        );
        let collection =
            DataFusionError::Collection(vec![plan(), DataFusionError::Plan("other".into())]);
        assert_eq!(from_datafusion(collection).code, "42P01");
        let context = DataFusionError::Context("while planning".into(), Box::new(plan()));
        assert_eq!(from_datafusion(context).code, "42P01");
        // A schema other than public stays in the name.
        assert_eq!(
            from_plan_message("table 'postgres.nosuchschema.t' not found").message,
            "relation \"nosuchschema.t\" does not exist"
        );
    }

    #[test]
    fn unknown_columns_and_tables_in_select_lists() {
        let schema_error =
            |e| from_datafusion(DataFusionError::SchemaError(Box::new(e), Box::new(None)));
        let valid = vec![Column::new(Some("t"), "a")];
        assert_eq!(
            said(schema_error(SchemaError::FieldNotFound {
                field: Box::new(Column::new_unqualified("zz")),
                valid_fields: valid.clone()
            })),
            ("42703", "column \"zz\" does not exist".into())
        );
        assert_eq!(
            said(schema_error(SchemaError::FieldNotFound {
                field: Box::new(Column::new(Some("t"), "zz")),
                valid_fields: valid.clone()
            })),
            ("42703", "column t.zz does not exist".into())
        );
        assert_eq!(
            said(schema_error(SchemaError::FieldNotFound {
                field: Box::new(Column::new(Some("x"), "a")),
                valid_fields: valid.clone()
            })),
            ("42P01", "missing FROM-clause entry for table \"x\"".into())
        );
        assert_eq!(
            said(schema_error(SchemaError::FieldNotFound {
                field: Box::new(Column::new_unqualified("")),
                valid_fields: valid
            })),
            (
                "42601",
                "zero-length delimited identifier at or near \"\"\"\"".into()
            )
        );
        assert_eq!(
            said(schema_error(SchemaError::AmbiguousReference {
                field: Box::new(Column::new_unqualified("a"))
            })),
            ("42702", "column reference \"a\" is ambiguous".into())
        );
    }

    #[test]
    fn functions_and_operators_are_named_with_postgres_types() {
        assert_eq!(
            said(from_plan_message("Function 'abs' expects Numeric but received String. No function matches the given name and argument types 'abs(Utf8)'. You might need to add explicit type casts.\n\tCandidate functions:\n\tabs(Numeric(1))")),
            ("42883", "function abs(text) does not exist".into())
        );
        assert_eq!(
            said(from_datafusion(DataFusionError::Internal("Function 'sum' failed to match any signature, errors: Error during planning: Function 'sum' requires Decimal, but received String (DataType: Utf8).".into()))),
            ("42883", "function sum(text) does not exist".into())
        );
        assert_eq!(
            said(from_plan_message("No function matches the given name and argument types 'round(Int32, Decimal128(10, 2))'.")).1,
            "function round(integer, numeric) does not exist"
        );
        assert_eq!(
            said(from_plan_message(
                "Cannot coerce arithmetic expression Int32 + Utf8View to valid types"
            )),
            ("42883", "operator does not exist: integer + text".into())
        );
        assert_eq!(
            from_plan_message("Invalid function 'nosuchfn'.\nDid you mean 'to_char'?").message,
            "function nosuchfn does not exist"
        );
        assert_eq!(
            said(from_plan_message("Unsupported CAST from Binary to Int32")),
            ("42846", "cannot cast type bytea to integer".into())
        );
    }

    #[test]
    fn grouping_ordering_and_limits() {
        assert_eq!(
            said(from_plan_message("Column in SELECT must be in GROUP BY or an aggregate function: While expanding wildcard, column \"t.a\" must appear in the GROUP BY clause or must be part of an aggregate function, currently only \"count(Int64(1))\" appears in the SELECT clause satisfies this requirement")),
            ("42803", "column \"t.a\" must appear in the GROUP BY clause or be used in an aggregate function".into())
        );
        assert_eq!(
            said(from_plan_message("Aggregate functions are not allowed in the WHERE clause. Consider using HAVING instead")),
            ("42803", "aggregate functions are not allowed in WHERE".into())
        );
        assert_eq!(
            said(from_plan_message("HAVING clause references: t.a > Int64(1) must appear in the GROUP BY clause or be used in an aggregate function")),
            ("42803", "column \"t.a\" must appear in the GROUP BY clause or be used in an aggregate function".into())
        );
        assert_eq!(
            said(from_plan_message(
                "Order by column out of bounds, specified: 5, max: 1"
            )),
            ("42P10", "ORDER BY position 5 is not in select list".into())
        );
        assert_eq!(
            said(from_plan_message(
                "Cannot find column with position 2 in SELECT clause. Valid columns: 1 to 1"
            )),
            ("42P10", "GROUP BY position 2 is not in select list".into())
        );
        assert_eq!(
            said(from_plan_message("LIMIT must be >= 0, '-1' was provided")),
            ("2201W", "LIMIT must not be negative".into())
        );
        assert_eq!(
            said(from_plan_message("OFFSET must be >= 0, '-1' was provided")),
            ("2201X", "OFFSET must not be negative".into())
        );
        assert_eq!(
            said(from_plan_message(
                "Cannot create filter with non-boolean predicate 't.a' returning Int32"
            )),
            (
                "42804",
                "argument of WHERE must be type boolean, not type integer".into()
            )
        );
        assert_eq!(
            said(from_execution_message(
                "Placeholder '$1' was not provided a value for execution"
            )),
            ("42P02", "there is no parameter $1".into())
        );
    }

    #[test]
    fn types_that_do_not_exist_and_types_iolab_lacks() {
        assert_eq!(
            said(from_plan_message("Unsupported SQL type nosuchtype")),
            ("42704", "type \"nosuchtype\" does not exist".into())
        );
        assert_eq!(
            from_plan_message("Unsupported SQL type BIT(2)").code,
            "0A000"
        );
        assert_eq!(
            from_datafusion(DataFusionError::NotImplemented(
                "Unsupported SQL type uuid".into()
            ))
            .code,
            "0A000"
        );
    }

    #[test]
    fn values_that_do_not_fit() {
        assert_eq!(
            said(from_arrow_message(
                "Cast error: Can't cast value 40000 to type Int16"
            )),
            ("22003", "smallint out of range".into())
        );
        assert_eq!(
            said(from_arrow_message(
                "Cast error: Can't cast value 1e20 to type Int64"
            )),
            ("22003", "bigint out of range".into())
        );
        assert_eq!(
            said(from_arrow_message(
                "Arithmetic overflow: Overflow happened on: 2147483647 + 1"
            )),
            ("22003", "integer out of range".into())
        );
        assert_eq!(
            said(from_arrow_message(
                "Arithmetic overflow: Overflow happened on: 9223372036854775807 + 1"
            )),
            ("22003", "bigint out of range".into())
        );
        let pg = from_arrow_message("Invalid argument error: 123.45 is too large to store in a Decimal128 of precision 4. Max is 99.99");
        assert_eq!(
            (pg.code, pg.message.as_str()),
            ("22003", "numeric field overflow")
        );
        assert_eq!(
            pg.detail.as_deref(),
            Some(
                "A field with precision 4, scale 2 must round to an absolute value less than 10^2."
            )
        );
        assert_eq!(
            said(from_arrow_message(
                "Compute error: Execution error: cannot take square root of a negative number"
            )),
            (
                "2201F",
                "cannot take square root of a negative number".into()
            )
        );
        assert_eq!(
            said(from_execution_message(
                "cannot take square root of a negative number"
            ))
            .0,
            "2201F"
        );
        assert_eq!(
            said(from_arrow_message(
                "Compute error: zero raised to a negative power is undefined"
            ))
            .0,
            "2201F"
        );
        assert_eq!(
            said(from_arrow_message(
                "Compute error: Int64Array overflow on abs(-9223372036854775808)"
            )),
            ("22003", "bigint out of range".into())
        );
    }

    #[test]
    fn text_that_is_not_a_value() {
        assert_eq!(
            said(from_arrow_message(
                "Cast error: Cannot cast value 'maybe' to value of Boolean type"
            )),
            (
                "22P02",
                "invalid input syntax for type boolean: \"maybe\"".into()
            )
        );
        assert_eq!(
            said(from_arrow_message(
                "Cast error: Cannot cast string 'x' to value of Decimal128(38, 10) type"
            )),
            (
                "22P02",
                "invalid input syntax for type numeric: \"x\"".into()
            )
        );
        assert_eq!(
            said(from_arrow_message(
                "Cast error: Cannot cast string 'abc' to value of Date32 type"
            )),
            (
                "22007",
                "invalid input syntax for type date: \"abc\"".into()
            )
        );
        assert_eq!(
            said(from_arrow_message(
                "Cast error: Cannot cast string '2024-13-45' to value of Date32 type"
            )),
            (
                "22008",
                "date/time field value out of range: \"2024-13-45\"".into()
            )
        );
        assert_eq!(
            said(from_arrow_message(
                "Cast error: Cannot cast string '25:00' to value of Time64(ns) type"
            ))
            .0,
            "22008"
        );
        assert_eq!(said(from_arrow_message("Parser error: Error parsing timestamp from 'x': timestamp must contain at least 10 characters")),
            ("22007", "invalid input syntax for type timestamp: \"x\"".into()));
    }

    #[test]
    fn datafusion_types_get_postgres_names() {
        for (arrow, pg) in [
            ("Int16", "smallint"),
            ("Int32", "integer"),
            ("Int64", "bigint"),
            ("Float64", "double precision"),
            ("Utf8", "text"),
            ("Utf8View", "text"),
            ("Boolean", "boolean"),
            ("Decimal128(10, 2)", "numeric"),
            ("Date32", "date"),
            ("Binary", "bytea"),
            ("Null", "unknown"),
        ] {
            assert_eq!(pg_type_name(arrow), pg, "{arrow}");
        }
    }
}
