//! SQL's prepared statements: `PREPARE name [(type, …)] AS statement`, `EXECUTE name
//! [(value, …)]`, `EXPLAIN [(…)] EXECUTE …`, `DEALLOCATE [PREPARE] name | ALL`, and what
//! `pg_prepared_statements` shows of them.
//!
//! PREPARE parses its statement once and describes it as the extended protocol's Parse
//! does (`describe`: parameter types declared, else inferred; result columns). EXECUTE
//! reads each value as a text parameter of its type would be read at Bind (`bind`: the
//! same conversions and errors; a value that is not a literal is computed first), then
//! runs the statement as the extended protocol runs a bound portal, so it keeps its
//! optimized plan between runs in the same way (`prepared_plans`). The statement — a
//! SELECT, VALUES, INSERT, UPDATE or DELETE, as in PostgreSQL — is parsed from the text
//! after AS on its own, so what iolab reads before sqlparser (`FOR NO KEY UPDATE`…)
//! reads the same there.
//!
//! Bounds: at most [`MAX_PREPARED`] per session. Protocol-level prepared statements
//! (Parse) live in the connection and are not listed; they have a bound of their own,
//! the same number (`wire::extended`).

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use datafusion::arrow::array::{Array, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::execution::context::SessionState;
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use iolab_catalog::{sqlstate, PgError, PgResult, PgType};
use parking_lot::Mutex;
use pgwire::api::Type;

use crate::errors::{from_datafusion, from_parser};
use crate::sql::bind::param_value;
use crate::sql::ddl::{column_type, ident_name};
use crate::sql::Parsed;

/// At most this many prepared statements per session.
pub const MAX_PREPARED: usize = 1000;

/// `PREPARE name [(type, …)] AS statement`, parsed.
#[derive(Clone, Debug)]
pub struct PrepareStmt {
    pub name: String,
    /// The types written after the name.
    pub types: Vec<ast::DataType>,
    pub statement: Box<Parsed>,
}

/// Is this (upper-case first words) a PREPARE statement?
pub fn is_prepare(words: &[&str]) -> bool {
    words.first() == Some(&"PREPARE")
}

/// Reads a PREPARE statement: its head with sqlparser, the statement after AS with
/// iolab's own `parse` (`whole`, `offset`: where `text` is in the query string).
pub fn parse(
    text: &str,
    whole: &str,
    offset: usize,
    reading: crate::sql::typed_literals::Reading,
) -> PgResult<PrepareStmt> {
    let at = statement_start(text)?;
    let head = format!("{} SELECT 1", &text[..at]);
    let stmt = Parser::parse_sql(&PostgreSqlDialect {}, &head)
        .map_err(|e| from_parser(&e, Some(&head)))?
        .pop();
    let Some(ast::Statement::Prepare {
        name, data_types, ..
    }) = stmt
    else {
        return Err(PgError::syntax("syntax error in PREPARE"));
    };
    let statement = crate::sql::parse_reading(&text[at..], whole, offset + at, reading)?;
    let preparable = |s: &ast::Statement| {
        matches!(
            s,
            ast::Statement::Query(_)
                | ast::Statement::Insert(_)
                | ast::Statement::Update(_)
                | ast::Statement::Delete(_)
        )
    };
    if !matches!(&statement, Parsed::Sql(s) if preparable(s)) {
        let word = text[at..].split_whitespace().next().unwrap_or_default();
        return Err(PgError::syntax(format!(
            "syntax error at or near \"{word}\""
        )));
    }
    Ok(PrepareStmt {
        name: ident_name(&name),
        types: data_types,
        statement: Box::new(statement),
    })
}

/// The byte offset in `text` just after the AS that ends PREPARE's head (the first AS
/// outside parentheses).
fn statement_start(text: &str) -> PgResult<usize> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize_with_location()
        .map_err(|e| PgError::syntax(e.to_string()))?;
    let mut depth = 0i32;
    for t in &tokens {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::Word(w) if depth == 0 && w.keyword == Keyword::AS && w.quote_style.is_none() => {
                let end = t.span.end;
                return Ok(byte_offset(text, end.line, end.column));
            }
            _ => {}
        }
    }
    Err(PgError::syntax("syntax error at end of input"))
}

/// The byte offset of 1-based (`line`, `column`) — columns count characters — in `text`.
fn byte_offset(text: &str, line: u64, column: u64) -> usize {
    let line_start: usize = (text.split_inclusive('\n'))
        .take(line.saturating_sub(1) as usize)
        .map(str::len)
        .sum();
    let in_line = &text[line_start..];
    line_start
        + (in_line.char_indices())
            .nth(column.saturating_sub(1) as usize)
            .map_or(in_line.len(), |(i, _)| i)
}

/// One prepared statement.
pub struct PreparedStatement {
    pub statement: Parsed,
    /// The PREPARE statement as the client sent it.
    pub text: String,
    pub params: Vec<Type>,
    pub result: Option<SchemaRef>,
    pub prepared_at: DateTime<Utc>,
    /// Times it was executed.
    pub runs: u64,
    /// Runs that took the generic plan (`prepared_plans`), counted as they start.
    pub generic_runs: Arc<AtomicU64>,
}

/// What `pg_prepared_statements` shows of one.
#[derive(Clone, Debug)]
pub struct PreparedInfo {
    pub name: String,
    pub statement: String,
    pub prepared_at: DateTime<Utc>,
    pub parameter_types: Vec<String>,
    pub result_types: Option<Vec<String>>,
    pub runs: u64,
    pub generic_runs: Arc<AtomicU64>,
}

/// The error for a session that would keep more than [`MAX_PREPARED`] prepared
/// statements of one kind (SQL, or the protocol's Parse).
pub fn too_many_prepared() -> PgError {
    PgError::new(
        sqlstate::PROGRAM_LIMIT_EXCEEDED,
        format!("too many prepared statements (at most {MAX_PREPARED} per session)"),
    )
    .with_hint("Free those no longer needed with DEALLOCATE or a Close message.")
}

/// A session's prepared statements, by name.
#[derive(Default)]
pub struct PreparedStatements {
    by_name: BTreeMap<String, PreparedStatement>,
    /// What `pg_prepared_statements` shows, brought up to date after every change.
    listing: Arc<Mutex<Vec<PreparedInfo>>>,
}

impl PreparedStatements {
    /// The list `pg_prepared_statements` shows (kept up to date).
    pub fn listing(&self) -> Arc<Mutex<Vec<PreparedInfo>>> {
        self.listing.clone()
    }

    pub fn add(&mut self, name: String, prepared: PreparedStatement) -> PgResult<()> {
        if self.by_name.contains_key(&name) {
            return Err(PgError::new(
                sqlstate::DUPLICATE_PSTATEMENT,
                format!("prepared statement \"{name}\" already exists"),
            ));
        }
        if self.by_name.len() >= MAX_PREPARED {
            return Err(too_many_prepared());
        }
        self.by_name.insert(name, prepared);
        self.list();
        Ok(())
    }

    /// DEALLOCATE `name`, or all (`None`).
    pub fn remove(&mut self, name: Option<&str>) -> PgResult<()> {
        match name {
            None => self.by_name.clear(),
            Some(name) => {
                self.by_name.remove(name).ok_or_else(|| not_found(name))?;
            }
        }
        self.list();
        Ok(())
    }

    /// The statement EXECUTE `name` runs and its parameter values read from `args`
    /// (those not literals computed with `state`, the session's DataFusion state; text read
    /// as the session reads it, `fmt`).
    pub fn bind(
        &mut self,
        name: &str,
        args: &[ast::Expr],
        state: &SessionState,
        fmt: &iolab_engine::values::TextFormat,
    ) -> PgResult<(Parsed, Vec<ScalarValue>, Arc<AtomicU64>)> {
        let prepared = self.by_name.get_mut(name).ok_or_else(|| not_found(name))?;
        if args.len() != prepared.params.len() {
            return Err(PgError::syntax(format!(
                "wrong number of parameters for prepared statement \"{name}\""
            ))
            .with_detail(format!(
                "Expected {} parameters but got {}.",
                prepared.params.len(),
                args.len()
            )));
        }
        let texts = argument_texts(args, state)?;
        let values = (texts.iter().zip(&prepared.params))
            .map(|(text, ty)| param_value(text.as_deref().map(str::as_bytes), ty, false, fmt))
            .collect::<PgResult<Vec<_>>>()?;
        prepared.runs += 1;
        let statement = prepared.statement.clone();
        let generic_runs = prepared.generic_runs.clone();
        self.list();
        Ok((statement, values, generic_runs))
    }

    fn list(&self) {
        let names = |types: &mut dyn Iterator<Item = String>| types.collect::<Vec<_>>();
        *self.listing.lock() = (self.by_name.iter())
            .map(|(name, p)| PreparedInfo {
                name: name.clone(),
                statement: p.text.clone(),
                prepared_at: p.prepared_at,
                parameter_types: names(&mut p.params.iter().map(type_name)),
                result_types: p.result.as_ref().map(|schema| {
                    names(&mut schema.fields().iter().map(|f| {
                        PgType::for_arrow(f.data_type())
                            .map_or_else(|| "text".into(), |t| t.format_type())
                    }))
                }),
                runs: p.runs,
                generic_runs: p.generic_runs.clone(),
            })
            .collect();
    }
}

/// PostgreSQL's name of a parameter type (`integer`, `text`).
fn type_name(ty: &Type) -> String {
    PgType::for_arrow(&crate::sql::bind::param_arrow_type(ty))
        .map_or_else(|| ty.name().to_string(), |t| t.format_type())
}

fn not_found(name: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_SQL_STATEMENT_NAME,
        format!("prepared statement \"{name}\" does not exist"),
    )
}

/// EXECUTE's values as text (`None`: NULL): literals as written, anything else computed
/// by DataFusion and cast to text.
fn argument_texts(args: &[ast::Expr], state: &SessionState) -> PgResult<Vec<Option<String>>> {
    let literal = |e: &ast::Expr| -> Option<Option<String>> {
        match e {
            ast::Expr::Value(v) => match &v.value {
                ast::Value::Null => Some(None),
                ast::Value::Number(n, _) => Some(Some(n.clone())),
                ast::Value::SingleQuotedString(s) => Some(Some(s.clone())),
                ast::Value::Boolean(b) => Some(Some(b.to_string())),
                _ => None,
            },
            ast::Expr::UnaryOp {
                op: ast::UnaryOperator::Minus,
                expr,
            } => match &**expr {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Number(n, _) => Some(Some(format!("-{n}"))),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    };
    let mut texts: Vec<Option<Option<String>>> = args.iter().map(literal).collect();
    let computed: Vec<usize> = (0..args.len()).filter(|&i| texts[i].is_none()).collect();
    if !computed.is_empty() {
        let select = (computed.iter())
            .map(|&i| format!("CAST(({}) AS TEXT)", args[i]))
            .collect::<Vec<_>>()
            .join(", ");
        let values = compute(&format!("SELECT {select}"), state)?;
        for (&i, value) in computed.iter().zip(values) {
            texts[i] = Some(value);
        }
    }
    Ok(texts
        .into_iter()
        .map(|t| t.expect("every value read"))
        .collect())
}

/// The one row of `select` (constant expressions), as text.
fn compute(select: &str, state: &SessionState) -> PgResult<Vec<Option<String>>> {
    let select = crate::pgcatalog::rewrite_for_datafusion(select);
    let run = async {
        let ctx = datafusion::prelude::SessionContext::new_with_state(state.clone());
        ctx.sql(&select).await?.collect().await
    };
    let batches = tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(run))
        .map_err(from_datafusion)?;
    let batch = batches.first().filter(|b| b.num_rows() == 1);
    let batch = batch.ok_or_else(|| PgError::internal("EXECUTE's values computed no row"))?;
    (batch.columns().iter())
        .map(|c| {
            let text = cast(c, &DataType::Utf8).map_err(|e| from_datafusion(e.into()))?;
            let text = text
                .as_any()
                .downcast_ref::<StringArray>()
                .expect("cast to text");
            Ok((!text.is_null(0)).then(|| text.value(0).to_string()))
        })
        .collect()
}

/// Runs `PREPARE`: describes the statement and keeps it under its name.
pub async fn prepare(
    session: &crate::session::Session,
    prepare: &PrepareStmt,
    text: String,
) -> PgResult<(String, PreparedStatement)> {
    let declared = (prepare.types.iter())
        .map(|t| column_type(t).map(|pg| Type::from_oid(pg.oid()).or(Some(Type::TEXT))))
        .collect::<PgResult<Vec<_>>>()?;
    let described = crate::sql::describe::describe(session, &prepare.statement, &declared).await?;
    Ok((
        prepare.name.clone(),
        PreparedStatement {
            statement: (*prepare.statement).clone(),
            text,
            params: described.params,
            result: described.schema,
            prepared_at: Utc::now(),
            runs: 0,
            generic_runs: Arc::default(),
        },
    ))
}

/// The prepared statement's name an `EXECUTE` names.
pub fn executed_name(name: &Option<ast::ObjectName>) -> PgResult<String> {
    match name.as_ref().map(|n| n.0.as_slice()) {
        Some([part]) => Ok(part
            .as_ident()
            .map(ident_name)
            .unwrap_or_else(|| part.to_string())),
        _ => Err(PgError::syntax(
            "EXECUTE needs the name of a prepared statement",
        )),
    }
}

/// `DEALLOCATE [PREPARE] name | ALL`: the name, `None` for ALL.
pub fn deallocated(name: &ast::Ident) -> Option<String> {
    match name.quote_style.is_none() && name.value.eq_ignore_ascii_case("all") {
        true => None,
        false => Some(ident_name(name)),
    }
}
