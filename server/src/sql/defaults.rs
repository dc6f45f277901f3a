//! Column defaults: how CREATE TABLE records them and how INSERT and COPY fill them in.
//!
//! A default is `nextval` of a sequence (`serial`, identity columns, or a written
//! `DEFAULT nextval('s')`) or any other expression, kept as SQL text (see
//! `iolab_catalog::sequence_catalog`). They are filled in two ways:
//!
//! - a column the INSERT's column list (or COPY's) leaves out gets its default for every
//!   row, after the source rows arrive ([`Defaults::fill`]): `nextval` reserves one value
//!   per row of the batch in one call; a volatile expression (`random()`,
//!   `clock_timestamp()`) is evaluated for every row, as PostgreSQL does; another
//!   expression once per statement, before the first row, and that value goes into every
//!   row (right for constants and for `now()`, which PostgreSQL also fixes per statement);
//! - the `DEFAULT` keyword as an item of INSERT's VALUES is replaced by the default's
//!   expression before the VALUES run ([`replace_default_keywords`]), so each row calls
//!   `nextval` on its own.
//!
//! Identity columns `GENERATED ALWAYS` take no value from INSERT but `DEFAULT`, unless
//! the statement says `OVERRIDING SYSTEM VALUE` ([`check_identity`]).

use std::sync::Arc;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::Schema;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::DFSchema;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast;
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use iolab_catalog::{
    sqlstate, ColumnDefault, DefaultValue, Identity, PgError, PgResult, SequenceDef, TableDef,
};
use iolab_engine::values::{assign_cast_with, TextFormat};
use iolab_engine::Database;

use crate::errors::from_datafusion;
use crate::pgcatalog::sequence_functions::{resolve_sequence, SessionSequences};
use crate::sql::StatementRun;

/// What CREATE TABLE records for `DEFAULT expr`: a call of `nextval` with a constant
/// argument (`nextval('s')`, `nextval('s'::regclass)`) as the sequence it names, which
/// must exist; anything else as its text.
pub fn parse_default(db: &Database, expr: &ast::Expr) -> PgResult<DefaultValue> {
    if let Some(name) = nextval_argument(expr) {
        let def = resolve_sequence(&db.catalog, None, None, Some(&name))?;
        return Ok(DefaultValue::NextVal {
            sequence_oid: def.oid,
        });
    }
    Ok(DefaultValue::Expr {
        sql: expr.to_string(),
    })
}

/// The sequence name in `nextval('name')` or `nextval('name'::regclass)`.
fn nextval_argument(expr: &ast::Expr) -> Option<String> {
    let ast::Expr::Function(f) = expr else {
        return None;
    };
    let name = f.name.0.last()?.as_ident()?.value.to_lowercase();
    if name != "nextval" {
        return None;
    }
    let arg = match crate::sql::calls::only_argument(f)? {
        ast::Expr::Cast {
            expr, data_type, ..
        } if data_type.to_string().eq_ignore_ascii_case("regclass") => expr.as_ref(),
        other => other,
    };
    match arg {
        ast::Expr::Value(v) => match &v.value {
            ast::Value::SingleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// A default as `pg_get_expr(pg_attrdef.adbin)` shows it: `nextval('t_id_seq'::regclass)`.
pub fn default_text(sequences: &[SequenceDef], value: &DefaultValue) -> String {
    match value {
        DefaultValue::NextVal { sequence_oid } => {
            let name = sequences
                .iter()
                .find(|s| s.oid == *sequence_oid)
                .map(|s| crate::pgcatalog::snapshot::quote_ident(&s.name))
                .unwrap_or_else(|| sequence_oid.to_string());
            format!("nextval('{}'::regclass)", name.replace('\'', "''"))
        }
        DefaultValue::Expr { sql } => sql.clone(),
    }
}

/// The default as an expression to put in place of `DEFAULT` in VALUES.
fn default_expr(value: Option<&DefaultValue>) -> PgResult<ast::Expr> {
    let sql = match value {
        None => "NULL".to_string(),
        Some(DefaultValue::NextVal { sequence_oid }) => format!("nextval({sequence_oid})"),
        Some(DefaultValue::Expr { sql }) => sql.clone(),
    };
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&sql)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| crate::errors::from_parser(&e, Some(&sql)))
}

/// Is `item` the keyword DEFAULT (as sqlparser reads it in VALUES: an unquoted name)?
fn is_default_keyword(item: &ast::Expr) -> bool {
    matches!(item, ast::Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}

/// Replaces each `DEFAULT` item of an INSERT's VALUES by its column's default (NULL
/// where the column has none). `targets[i]` is the table column of item `i`.
pub fn replace_default_keywords(
    source: &mut ast::Query,
    table: &TableDef,
    targets: &[usize],
    defaults: &[ColumnDefault],
) -> PgResult<()> {
    let ast::SetExpr::Values(values) = source.body.as_mut() else {
        return Ok(());
    };
    for row in &mut values.rows {
        for (item, &column) in row.iter_mut().zip(targets) {
            if is_default_keyword(item) {
                let name = &table.columns[column].name;
                let value = defaults
                    .iter()
                    .find(|d| &d.column == name)
                    .map(|d| &d.value);
                *item = default_expr(value)?;
            }
        }
    }
    Ok(())
}

/// An INSERT's source with its `DEFAULT` items replaced (see
/// [`replace_default_keywords`]): what the extended protocol's Parse plans to learn the
/// types of the `$n`.
pub fn source_with_defaults(
    db: &Database,
    temp: Option<&str>,
    ins: &ast::Insert,
) -> PgResult<Option<ast::Query>> {
    let (ast::TableObject::TableName(name), Some(source)) = (&ins.table, &ins.source) else {
        return Ok(None);
    };
    let (schema, table_name) = crate::sql::ddl::split_name(name)?;
    let table = db
        .catalog
        .resolve_in(temp, schema.as_deref(), &table_name)?;
    let targets = crate::sql::insert::target_columns(&table, &ins.columns)?;
    let mut source = (**source).clone();
    let defaults = db.catalog.column_defaults(table.oid);
    replace_default_keywords(&mut source, &table, &targets, &defaults)?;
    Ok(Some(source))
}

/// PostgreSQL's refusal of a value for a `GENERATED ALWAYS` identity column: an INSERT
/// whose column list names one takes only `DEFAULT` for it (in VALUES), unless it says
/// `OVERRIDING SYSTEM VALUE`. Call before [`replace_default_keywords`].
pub fn check_identity(
    source: Option<&ast::Query>,
    table: &TableDef,
    targets: &[usize],
    defaults: &[ColumnDefault],
    overriding_system_value: bool,
) -> PgResult<()> {
    if overriding_system_value {
        return Ok(());
    }
    for (i, &column) in targets.iter().enumerate() {
        let name = &table.columns[column].name;
        let always = defaults
            .iter()
            .any(|d| &d.column == name && d.identity == Some(Identity::Always));
        if !always {
            continue;
        }
        let only_defaults = match source.map(|q| q.body.as_ref()) {
            Some(ast::SetExpr::Values(values)) => values
                .rows
                .iter()
                .all(|row| row.get(i).is_some_and(is_default_keyword)),
            _ => false,
        };
        if !only_defaults {
            return Err(PgError::new(
                sqlstate::GENERATED_ALWAYS,
                format!("cannot insert a non-DEFAULT value into column \"{name}\""),
            )
            .with_detail(format!(
                "Column \"{name}\" is an identity column defined as GENERATED ALWAYS."
            ))
            .with_hint("Use OVERRIDING SYSTEM VALUE to override."));
        }
    }
    Ok(())
}

/// UPDATE's `SET column = value`: the default's SQL when `value` is `DEFAULT`, `None`
/// for any other value, or PostgreSQL's refusal of a value other than DEFAULT for a
/// `GENERATED ALWAYS` identity column.
pub fn update_default(
    defaults: &[ColumnDefault],
    column: &str,
    value: &ast::Expr,
) -> PgResult<Option<String>> {
    let default = defaults.iter().find(|d| d.column == column);
    if is_default_keyword(value) {
        return Ok(Some(default_expr(default.map(|d| &d.value))?.to_string()));
    }
    if default.is_some_and(|d| d.identity == Some(Identity::Always)) {
        return Err(PgError::new(
            sqlstate::GENERATED_ALWAYS,
            format!("column \"{column}\" can only be updated to DEFAULT"),
        )
        .with_detail(format!(
            "Column \"{column}\" is an identity column defined as GENERATED ALWAYS."
        )));
    }
    Ok(None)
}

/// `text` with INSERT's `OVERRIDING SYSTEM VALUE` blanked out (positions kept), if it has
/// one (outside quotes).
pub fn cut_overriding_system_value(text: &str) -> Option<String> {
    let upper = text.to_ascii_uppercase();
    let words: Vec<(usize, &str)> = upper
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - upper.as_ptr() as usize, w))
        .collect();
    let at = words
        .windows(3)
        .find(|w| w[0].1 == "OVERRIDING" && w[1].1 == "SYSTEM" && w[2].1 == "VALUE")?;
    let (start, end) = (at[0].0, at[2].0 + "VALUE".len());
    // Not inside a string literal: an even number of quotes before it.
    if text[..start].matches('\'').count() % 2 == 1 {
        return None;
    }
    let mut cut = text.to_string();
    cut.replace_range(start..end, &" ".repeat(end - start));
    Some(cut)
}

/// Marks an INSERT as `OVERRIDING SYSTEM VALUE`. sqlparser has no field for it; its
/// `Insert::overwrite` (Hive's `INSERT OVERWRITE`, which PostgreSQL's grammar lacks and
/// the PostgreSQL dialect never sets) carries the mark.
pub fn mark_overriding_system_value(stmt: &mut ast::Statement) {
    if let ast::Statement::Insert(ins) = stmt {
        ins.overwrite = true;
    }
}

/// Did the INSERT say `OVERRIDING SYSTEM VALUE` (see [`mark_overriding_system_value`])?
pub fn says_overriding_system_value(ins: &ast::Insert) -> bool {
    ins.overwrite
}

/// How one column left out of an INSERT or COPY is filled.
enum Filler {
    Sequence(SequenceDef),
    /// One value (of the column's type) for every row.
    Constant(ScalarValue),
    /// A volatile expression, evaluated for each row and cast to the column's type.
    PerRow {
        expr: Arc<dyn PhysicalExpr>,
        ty: iolab_catalog::PgType,
        column: String,
        text_format: TextFormat,
    },
}

/// The defaults of the columns a statement leaves out.
pub struct Defaults {
    /// By table column; `None`: NULL.
    columns: Vec<Option<Filler>>,
    db: Option<Arc<Database>>,
    sequences: Arc<SessionSequences>,
}

impl Defaults {
    /// No defaults (every column is given, as in UPDATE).
    pub fn none() -> Defaults {
        Defaults {
            columns: Vec::new(),
            db: None,
            sequences: Arc::default(),
        }
    }

    /// The defaults of `table`'s columns that are not in `targets`; other expressions
    /// than `nextval` are evaluated here, once.
    pub async fn for_statement(
        run: &StatementRun,
        table: &TableDef,
        targets: &[usize],
    ) -> PgResult<Defaults> {
        let defaults = run.db.catalog.column_defaults(table.oid);
        let mut columns = Vec::with_capacity(table.columns.len());
        for (i, col) in table.columns.iter().enumerate() {
            let default = defaults.iter().find(|d| d.column == col.name);
            let filler = match default.map(|d| &d.value) {
                _ if targets.contains(&i) => None,
                None => None,
                Some(DefaultValue::NextVal { sequence_oid }) => {
                    let def =
                        resolve_sequence(&run.db.catalog, None, Some(*sequence_oid as i64), None)?;
                    Some(Filler::Sequence(def))
                }
                Some(DefaultValue::Expr { sql }) => {
                    let plan = plan_default(run, sql).await?;
                    match volatile_expression(run, &plan)? {
                        Some(expr) => Some(Filler::PerRow {
                            expr,
                            ty: col.ty,
                            column: col.name.clone(),
                            text_format: run.text_format.clone(),
                        }),
                        None => {
                            let value = evaluate(run, &plan).await?;
                            let cast =
                                assign_cast_with(&value, col.ty, &col.name, &run.text_format)?;
                            Some(Filler::Constant(
                                ScalarValue::try_from_array(&cast, 0).map_err(from_datafusion)?,
                            ))
                        }
                    }
                }
            };
            columns.push(filler);
        }
        Ok(Defaults {
            columns,
            db: Some(run.db.clone()),
            sequences: run.sequences.clone(),
        })
    }

    /// Column `column`'s default for `rows` rows; `None` when it has none (NULL).
    pub fn fill(&self, column: usize, rows: usize) -> PgResult<Option<ArrayRef>> {
        match (self.columns.get(column).and_then(|f| f.as_ref()), &self.db) {
            (Some(Filler::Sequence(def)), Some(db)) => {
                let values = self.sequences.next_values(&db.catalog, def, rows)?;
                let array: ArrayRef = Arc::new(datafusion::arrow::array::Int64Array::from(values));
                let ty = match def.ty {
                    t @ (iolab_catalog::PgType::Int2 | iolab_catalog::PgType::Int4) => t,
                    _ => iolab_catalog::PgType::Int8,
                };
                datafusion::arrow::compute::cast(&array, &ty.arrow_type())
                    .map(Some)
                    .map_err(|e| PgError::internal(e.to_string()))
            }
            (Some(Filler::Constant(v)), _) => {
                v.to_array_of_size(rows).map(Some).map_err(from_datafusion)
            }
            (
                Some(Filler::PerRow {
                    expr,
                    ty,
                    column,
                    text_format,
                }),
                _,
            ) => {
                // A batch of `rows` rows and no columns: each row gets its own value.
                let options = RecordBatchOptions::new().with_row_count(Some(rows));
                let batch =
                    RecordBatch::try_new_with_options(Arc::new(Schema::empty()), vec![], &options)
                        .map_err(|e| PgError::internal(e.to_string()))?;
                let values = expr
                    .evaluate(&batch)
                    .and_then(|v| v.into_array(rows))
                    .map_err(from_datafusion)?;
                assign_cast_with(&values, *ty, column, text_format).map(Some)
            }
            _ => Ok(None),
        }
    }
}

/// The value of default expression `sql` for column `column` of type `ty`, computed now
/// as a one-row array of the column's type (ALTER TABLE … ADD COLUMN … DEFAULT: the value
/// the table's existing rows read); `None` when the expression is volatile (every row
/// would need a value of its own).
pub async fn evaluate_once(
    run: &StatementRun,
    sql: &str,
    ty: iolab_catalog::PgType,
    column: &str,
) -> PgResult<Option<ArrayRef>> {
    let plan = plan_default(run, sql).await?;
    if volatile_expression(run, &plan)?.is_some() {
        return Ok(None);
    }
    let value = evaluate(run, &plan).await?;
    assign_cast_with(&value, ty, column, &run.text_format).map(Some)
}

/// The plan of `SELECT sql`, a default expression.
async fn plan_default(run: &StatementRun, sql: &str) -> PgResult<LogicalPlan> {
    let stmt = Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&format!("SELECT {sql}"))
        .and_then(|mut p| p.parse_statement())
        .map_err(|e| crate::errors::from_parser(&e, Some(sql)))?;
    crate::sql::plan_statement(&run.state, &stmt, &[]).await
}

/// The default expression [`plan_default`] planned, compiled, if it is volatile
/// (otherwise it is evaluated once per statement).
fn volatile_expression(
    run: &StatementRun,
    plan: &LogicalPlan,
) -> PgResult<Option<Arc<dyn PhysicalExpr>>> {
    let LogicalPlan::Projection(projection) = plan else {
        return Ok(None);
    };
    let [expr] = projection.expr.as_slice() else {
        return Ok(None);
    };
    let expr = expr.clone().unalias();
    if !expr.is_volatile() {
        return Ok(None);
    }
    run.state
        .create_physical_expr(expr, &DFSchema::empty())
        .map(Some)
        .map_err(from_datafusion)
}

/// The value of the default expression [`plan_default`] planned, as a one-row array.
async fn evaluate(run: &StatementRun, plan: &LogicalPlan) -> PgResult<ArrayRef> {
    let physical = run.physical_plan(plan).await?;
    let batches = datafusion::physical_plan::collect(physical, run.state.task_ctx())
        .await
        .map_err(from_datafusion)?;
    batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .map(|b| b.column(0).slice(0, 1))
        .ok_or_else(|| PgError::internal("a default expression gave no value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn insert_source(sql: &str) -> ast::Query {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        let ast::Statement::Insert(ins) = stmt else {
            panic!("not an insert")
        };
        *ins.source.unwrap()
    }

    #[test]
    fn the_default_keyword_is_found_in_values() {
        let q = insert_source("INSERT INTO t VALUES (DEFAULT, 'x'), (5, \"default\")");
        let ast::SetExpr::Values(v) = q.body.as_ref() else {
            panic!()
        };
        assert!(is_default_keyword(&v.rows[0][0]));
        assert!(!is_default_keyword(&v.rows[1][0]));
        assert!(
            !is_default_keyword(&v.rows[1][1]),
            "a quoted name is a column"
        );
    }

    #[test]
    fn nextval_defaults_name_their_sequence() {
        let expr = |sql: &str| {
            Parser::new(&PostgreSqlDialect {})
                .try_with_sql(sql)
                .unwrap()
                .parse_expr()
                .unwrap()
        };
        assert_eq!(
            nextval_argument(&expr("nextval('t_id_seq'::regclass)")).as_deref(),
            Some("t_id_seq")
        );
        assert_eq!(
            nextval_argument(&expr("NEXTVAL('s')")).as_deref(),
            Some("s")
        );
        assert_eq!(nextval_argument(&expr("now()")), None);
        let seqs = vec![SequenceDef {
            oid: 16390,
            name: "t_id_seq".into(),
            ..iolab_catalog::SequenceOptions::default().define().unwrap()
        }];
        assert_eq!(
            default_text(
                &seqs,
                &DefaultValue::NextVal {
                    sequence_oid: 16390
                }
            ),
            "nextval('t_id_seq'::regclass)"
        );
        assert_eq!(
            default_expr(Some(&DefaultValue::NextVal {
                sequence_oid: 16390
            }))
            .unwrap()
            .to_string(),
            "nextval(16390)"
        );
    }
}
