//! SET, SET LOCAL, SET TIME ZONE, SHOW, SHOW ALL, RESET, RESET ALL — all driven by the
//! settings table of the `iolab-settings` crate.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::physical_plan::memory::MemoryStream;
use datafusion::sql::sqlparser::ast::{self, Expr, Set, Value};
use iolab_catalog::{sqlstate, PgError, PgResult};
use iolab_settings::{SessionSettings, SettingError};

use crate::session::{Notice, Session};
use crate::sql::transaction_modes;
use crate::sql::Outcome;

/// The PgError of a settings error.
pub fn setting_error(e: SettingError) -> PgError {
    let mut pg = PgError::new(e.sqlstate, e.message);
    pg.detail = e.detail;
    pg.hint = e.hint;
    pg.context = e.context;
    pg
}

/// The result schema of `SHOW name` (one text column named after the setting).
pub fn show_schema(name: &str) -> SchemaRef {
    if name.eq_ignore_ascii_case("all") {
        return Arc::new(Schema::new(vec![
            Field::new("name", DataType::Utf8, false),
            Field::new("setting", DataType::Utf8, true),
            Field::new("description", DataType::Utf8, true),
        ]));
    }
    // The setting's own spelling (`SHOW timezone` is headed `TimeZone`), as PostgreSQL shows.
    let name = if name.eq_ignore_ascii_case("time zone") {
        "TimeZone"
    } else {
        name
    };
    let column = iolab_settings::SETTINGS
        .iter()
        .find(|d| d.name.eq_ignore_ascii_case(name))
        .map_or_else(|| name.to_lowercase(), |d| d.name.to_string());
    Arc::new(Schema::new(vec![Field::new(column, DataType::Utf8, true)]))
}

/// Runs a settings statement; `None` when `stmt` is not one.
pub fn run(
    session: &mut Session,
    stmt: &ast::Statement,
    notices: &mut Vec<Notice>,
) -> PgResult<Option<Outcome>> {
    match stmt {
        ast::Statement::ShowVariable { variable } => {
            let name = variable
                .iter()
                .map(|i| i.value.clone())
                .collect::<Vec<_>>()
                .join(" ");
            show(session, &name).map(Some)
        }
        ast::Statement::Set(set) => set_statement(session, set, notices).map(Some),
        ast::Statement::Reset(reset) => {
            let text = reset.to_string();
            let name = text.trim_start_matches("RESET").trim();
            if name.eq_ignore_ascii_case("all") {
                session.settings.reset_all();
            } else {
                session.settings.reset(name).map_err(setting_error)?;
            }
            Ok(Some(Outcome::Done("RESET".into())))
        }
        _ => Ok(None),
    }
}

fn show(session: &Session, name: &str) -> PgResult<Outcome> {
    let schema = show_schema(name);
    let columns: Vec<Arc<dyn datafusion::arrow::array::Array>> = if name.eq_ignore_ascii_case("all")
    {
        let rows = session.settings.show_all();
        vec![
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.0).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                rows.iter().map(|r| Some(r.1.clone())).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                rows.iter().map(|r| Some(r.2)).collect::<Vec<_>>(),
            )),
        ]
    } else {
        let key = if name.eq_ignore_ascii_case("time zone") {
            "TimeZone"
        } else {
            name
        };
        let value = session.settings.get(key).map_err(setting_error)?;
        vec![Arc::new(StringArray::from(vec![value]))]
    };
    let batch = RecordBatch::try_new(schema.clone(), columns)
        .map_err(|e| PgError::internal(e.to_string()))?;
    let stream = MemoryStream::try_new(vec![batch], schema.clone(), None)
        .map_err(crate::errors::from_datafusion)?;
    Ok(Outcome::Rows {
        schema,
        stream: Box::pin(stream),
        tag: "SHOW",
    })
}

fn set_statement(session: &mut Session, set: &Set, notices: &mut Vec<Notice>) -> PgResult<Outcome> {
    let (name, value, local) = match set {
        Set::SingleAssignment {
            scope,
            variable,
            values,
            ..
        } => {
            let local = matches!(scope, Some(ast::ContextModifier::Local));
            let name = variable.to_string();
            let value = if values.len() == 1 && is_default(&values[0]) {
                None
            } else {
                Some(
                    values
                        .iter()
                        .map(value_text)
                        .collect::<PgResult<Vec<_>>>()?
                        .join(", "),
                )
            };
            (name, value, local)
        }
        Set::SetTimeZone { local, value } => {
            // `SET TIME ZONE LOCAL` is PostgreSQL's other spelling of DEFAULT.
            let local_zone =
                matches!(value, Expr::Identifier(id) if id.value.eq_ignore_ascii_case("local"));
            let v = if is_default(value) || local_zone {
                None
            } else {
                Some(value_text(value)?)
            };
            ("TimeZone".to_string(), v, *local)
        }
        Set::SetTransaction {
            modes,
            snapshot: None,
            session: characteristics,
        } => return set_transaction(session, modes, *characteristics, notices),
        other => {
            return Err(PgError::unsupported(format!("{other} is not supported")));
        }
    };
    if local && !session.txn.in_block {
        // PostgreSQL: SET LOCAL outside a transaction block warns and lasts one statement.
        notices.push(Notice::warning(
            "25P01",
            "SET LOCAL can only be used in transaction blocks",
        ));
    }
    if let (true, Some(v)) = (session.txn.in_block, &value) {
        let queried = session.txn.snapshot.queried();
        transaction_modes::check_change(&session.settings, &name, v, queried)?;
    }
    let mut changed = session.settings.clone();
    match value {
        Some(v) => changed.set(&name, &v, local),
        None => changed.reset(&name),
    }
    .map_err(setting_error)?;
    refuse_resizing_local_buffers(session, &changed)?;
    session.settings = changed;
    Ok(Outcome::Done("SET".into()))
}

/// `SET TRANSACTION modes` (this transaction's; outside a block a warning) or `SET SESSION
/// CHARACTERISTICS AS TRANSACTION modes` (the defaults of the next ones).
fn set_transaction(
    session: &mut Session,
    modes: &[ast::TransactionMode],
    characteristics: bool,
    notices: &mut Vec<Notice>,
) -> PgResult<Outcome> {
    if characteristics {
        transaction_modes::set_session_characteristics(&mut session.settings, modes)?;
    } else if !session.txn.in_block {
        notices.push(Notice::warning(
            "25P01",
            "SET TRANSACTION can only be used in transaction blocks",
        ));
    } else {
        let queried = session.txn.snapshot.queried();
        transaction_modes::apply(&mut session.settings, modes, queried)?;
    }
    Ok(Outcome::Done("SET".into()))
}

/// PostgreSQL's check: once a session has local buffers (its first temporary table),
/// `temp_buffers` keeps their number.
fn refuse_resizing_local_buffers(session: &Session, changed: &SessionSettings) -> PgResult<()> {
    let Some(space) = session.temp.space_if_made() else {
        return Ok(());
    };
    let wanted = changed.temp_buffers_blocks();
    if wanted as usize == space.buffers.nbuffers() {
        return Ok(());
    }
    Err(PgError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        format!("invalid value for parameter \"temp_buffers\": {wanted}"),
    )
    .with_detail(
        "\"temp_buffers\" cannot be changed after any temporary tables have been accessed in the session.",
    ))
}

fn is_default(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(id) if id.value.eq_ignore_ascii_case("default"))
}

/// The text of a SET value as PostgreSQL takes it: quoted strings, numbers, identifiers.
fn value_text(e: &Expr) -> PgResult<String> {
    Ok(match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s)
            | Value::DoubleQuotedString(s)
            | Value::EscapedStringLiteral(s) => s.clone(),
            Value::Number(n, _) => n.to_string(),
            Value::Boolean(b) => {
                if *b {
                    "on".into()
                } else {
                    "off".into()
                }
            }
            other => other.to_string(),
        },
        Expr::Identifier(id) => id.value.clone(),
        Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => format!("-{}", value_text(expr)?),
        Expr::CompoundIdentifier(parts) => parts
            .iter()
            .map(|p| p.value.clone())
            .collect::<Vec<_>>()
            .join("."),
        other => {
            return Err(PgError::new(
                sqlstate::SYNTAX_ERROR,
                format!("syntax error at or near \"{other}\""),
            ));
        }
    })
}
