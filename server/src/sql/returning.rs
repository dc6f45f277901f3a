//! RETURNING of INSERT, UPDATE and DELETE: a select list over the rows the command wrote.
//!
//! ```text
//! UPDATE t AS x SET b = b || '!' WHERE a < 3 RETURNING *, a + 1 AS next, ctid
//!
//! 1. before anything is written, the list is planned as a query of its own
//!        SELECT "x"."a", "x"."b", a + 1 AS next, ctid FROM "t" AS "x"
//!    against a stand-in for t: an empty table of t's columns and `ctid`, alone in its
//!    catalog. That gives PostgreSQL's errors (42703 for a column t does not have) before
//!    a row is written, the result's columns (names as PostgreSQL chooses them, types:
//!    the RowDescription, and the extended protocol's Describe before anything runs),
//!    and the list as DataFusion expressions over (t's columns…, ctid).
//! 2. as the command writes, each batch of written rows — the values stored (INSERT and
//!    UPDATE: the new versions, DELETE: the old ones) and where each row is (its ctid) —
//!    goes through those expressions; the results are kept.
//! 3. when everything is written, the kept rows are the statement's result: a
//!    RowDescription, the DataRows, then the command's own tag (`INSERT 0 n`, `UPDATE n`,
//!    `DELETE n`; n is also the number of rows).
//! ```
//!
//! The rows are computed before the statement commits, so an expression that fails
//! (division by zero) fails the statement, as in PostgreSQL. Like PostgreSQL (which
//! keeps RETURNING rows in a tuplestore until the command ends) the rows are all kept
//! before the first is sent; bound: one result row per row written, in memory.
//!
//! Not supported (0A000, saying which): PostgreSQL 18's `old.` / `new.` references,
//! subqueries, whole-row references (`RETURNING t`), and columns of the other tables of
//! `UPDATE … FROM` / `DELETE … USING`. Aggregates and window functions are refused with
//! PostgreSQL's errors (42803, 42P20).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{
    CatalogProvider, CatalogProviderList, MemTable, MemoryCatalogProvider,
    MemoryCatalogProviderList, MemorySchemaProvider, SchemaProvider,
};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast::{self, SelectItem, SelectItemQualifiedWildcardKind};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use iolab_catalog::{sqlstate, PgError, PgResult, TableDef};
use iolab_engine::exec::table::{table_schema, CTID};
use iolab_engine::Database;

use crate::errors::from_datafusion;
use crate::sql::ddl::{ident_name, split_name};
use crate::sql::{colnames, plan_statement, Outcome, StatementRun};

/// The table a command writes, as its RETURNING list sees it.
#[derive(Clone, Debug)]
pub struct Target {
    pub table: TableDef,
    /// `x` of `t AS x` (as PostgreSQL folds it).
    pub alias: Option<String>,
    /// Does the command read other tables too (UPDATE … FROM, DELETE … USING)?
    pub reads_others: bool,
}

impl Target {
    /// The name the table's columns go by: its alias, else its own.
    fn reference(&self) -> &str {
        self.alias.as_deref().unwrap_or(&self.table.name)
    }
}

/// The RETURNING list of an INSERT, UPDATE or DELETE, and the table it reads; `None` for
/// other statements and for commands without one.
pub fn target_of<'s>(
    db: &Database,
    temp: Option<&str>,
    stmt: &'s ast::Statement,
) -> PgResult<Option<(Target, &'s [SelectItem])>> {
    let (relation, alias, reads_others, items) = match stmt {
        ast::Statement::Insert(ins) => {
            let ast::TableObject::TableName(name) = &ins.table else {
                return Ok(None);
            };
            let alias = ins.table_alias.as_ref().map(|a| ident_name(&a.alias));
            (name, alias, false, &ins.returning)
        }
        ast::Statement::Update(update) => {
            let Some((name, alias)) = named_table(&update.table.relation) else {
                return Ok(None);
            };
            (name, alias, update.from.is_some(), &update.returning)
        }
        ast::Statement::Delete(delete) => {
            let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                &delete.from;
            let Some((name, alias)) = from.first().and_then(|f| named_table(&f.relation)) else {
                return Ok(None);
            };
            (name, alias, delete.using.is_some(), &delete.returning)
        }
        _ => return Ok(None),
    };
    let Some(items) = items else {
        return Ok(None);
    };
    let (schema, table_name) = split_name(relation)?;
    let table = db
        .catalog
        .resolve_in(temp, schema.as_deref(), &table_name)?;
    let target = Target {
        table,
        alias,
        reads_others,
    };
    Ok(Some((target, items.as_slice())))
}

fn named_table(relation: &ast::TableFactor) -> Option<(&ast::ObjectName, Option<String>)> {
    match relation {
        ast::TableFactor::Table { name, alias, .. } => {
            Some((name, alias.as_ref().map(|a| ident_name(&a.name))))
        }
        _ => None,
    }
}

/// The result columns of `stmt`'s RETURNING list (`None` without one), its `$n` typed as
/// `param_types` say: the extended protocol's Describe.
pub async fn describe(
    state: &SessionState,
    db: &Database,
    temp: Option<&str>,
    stmt: &ast::Statement,
    param_types: &[Option<DataType>],
) -> PgResult<Option<SchemaRef>> {
    let Some((target, items)) = target_of(db, temp, stmt)? else {
        return Ok(None);
    };
    let planned = Planned::new(state, &target, items, param_types).await?;
    Ok(Some(planned.schema))
}

/// A RETURNING list planned, and the rows it has given so far.
pub struct Returning {
    /// What each expression reads: the table's columns, then `ctid`.
    input: SchemaRef,
    /// Does `input` end with `ctid`? (Not when the table has a column of that name, which
    /// PostgreSQL refuses and iolab allows; `ctid` then reads that column, as in SELECT.)
    has_ctid: bool,
    /// One expression per result column, over `input`.
    exprs: Vec<Arc<dyn PhysicalExpr>>,
    /// The result's columns, named as PostgreSQL names them.
    schema: SchemaRef,
    /// The name the table's columns go by (EXPLAIN VERBOSE's `Output:`).
    reference: String,
    /// The result rows so far.
    batches: Vec<RecordBatch>,
}

impl Returning {
    /// Plans `items` over the rows `target` gets, with the statement's parameter values.
    pub async fn plan(
        run: &StatementRun,
        target: &Target,
        items: &[SelectItem],
    ) -> PgResult<Returning> {
        Returning::new(&run.state, run.params.as_deref(), target, items).await
    }

    /// Plans `items` in `state` with `params` for their `$n`.
    async fn new(
        state: &SessionState,
        params: Option<&[ScalarValue]>,
        target: &Target,
        items: &[SelectItem],
    ) -> PgResult<Returning> {
        let types: Vec<_> = params
            .iter()
            .copied()
            .flatten()
            .map(|v| Some(v.data_type()))
            .collect();
        let Planned {
            state,
            projection,
            schema,
        } = Planned::new(state, target, items, &types).await?;
        let projection = match params {
            Some(values) => bind(projection, values)?,
            None => projection,
        };
        let projection = simplified(&state, projection)?;
        let LogicalPlan::Projection(projection) = projection else {
            unreachable!("Planned::new keeps a projection");
        };
        let exprs = projection
            .expr
            .iter()
            .map(|e| state.create_physical_expr(e.clone(), projection.input.schema()))
            .collect::<datafusion::error::Result<Vec<_>>>()
            .map_err(from_datafusion)?;
        Ok(Returning {
            input: table_schema(&target.table, true),
            has_ctid: target.table.column_index(CTID).is_none(),
            exprs,
            schema,
            reference: target.reference().to_string(),
            batches: Vec::new(),
        })
    }

    /// Computes the result rows of written rows: `values` in the table's columns (and
    /// types), `ctids` where each row is.
    pub fn add(&mut self, values: &[ArrayRef], ctids: &[(u32, u16)]) -> PgResult<()> {
        assert_eq!(
            values.len() + usize::from(self.has_ctid),
            self.input.fields().len(),
            "a value for every column of the table"
        );
        assert!(
            values.iter().all(|v| v.len() == ctids.len()),
            "one ctid per row"
        );
        if ctids.is_empty() {
            return Ok(());
        }
        let mut columns = values.to_vec();
        if self.has_ctid {
            columns.push(Arc::new(StringArray::from_iter_values(
                ctids
                    .iter()
                    .map(|(block, offset)| format!("({block},{offset})")),
            )));
        }
        let written = RecordBatch::try_new(self.input.clone(), columns).map_err(arrow_error)?;
        let result = self
            .exprs
            .iter()
            .zip(self.schema.fields())
            .map(|(expr, field)| {
                let array = expr
                    .evaluate(&written)
                    .and_then(|v| v.into_array(written.num_rows()))
                    .map_err(from_datafusion)?;
                if array.data_type() == field.data_type() {
                    Ok(array)
                } else {
                    cast(&array, field.data_type()).map_err(arrow_error)
                }
            })
            .collect::<PgResult<Vec<_>>>()?;
        self.batches
            .push(RecordBatch::try_new(self.schema.clone(), result).map_err(arrow_error)?);
        Ok(())
    }

    /// The result to send: the rows, then `tag` and their number (`INSERT 0` → `INSERT 0 3`).
    pub fn into_outcome(self, tag: &'static str) -> PgResult<Outcome> {
        let stream = datafusion::physical_plan::memory::MemoryStream::try_new(
            self.batches,
            self.schema.clone(),
            None,
        )
        .map_err(from_datafusion)?;
        Ok(Outcome::Rows {
            schema: self.schema,
            stream: Box::pin(stream),
            tag,
        })
    }

    /// EXPLAIN VERBOSE's `Output:` of the ModifyTable node: each item as PostgreSQL
    /// deparses it (`t.a`, `(t.a + 1)`).
    pub fn output(&self) -> Vec<String> {
        use iolab_settings::quote_identifier;
        let reference = quote_identifier(&self.reference);
        let column = |i: usize| {
            let name = self.input.field(i).name();
            format!("{reference}.{}", quote_identifier(name))
        };
        let input = crate::explain::exprs::Input {
            column: &column,
            schema: &self.input,
            init_plan: &|_| None,
            outer_value: &|e| e.to_string(),
        };
        self.exprs
            .iter()
            .map(|e| crate::explain::exprs::deparse(e, &input))
            .collect()
    }
}

/// A RETURNING list planned against the stand-in table.
struct Planned {
    /// The state it was planned in (the statement's, with the stand-in's catalog).
    state: SessionState,
    /// `Projection` of the list over the stand-in's scan.
    projection: LogicalPlan,
    /// The result's columns as PostgreSQL names them.
    schema: SchemaRef,
}

impl Planned {
    async fn new(
        state: &SessionState,
        target: &Target,
        items: &[SelectItem],
        param_types: &[Option<DataType>],
    ) -> PgResult<Planned> {
        let query = select_over_target(target, items)?;
        let state = stand_in_state(state, &target.table)?;
        let plan = plan_statement(&state, &query, param_types)
            .await
            .map_err(|e| other_tables_error(target, e))?;
        let projection = projection_of(plan)?;
        let LogicalPlan::Projection(p) = &projection else {
            unreachable!("projection_of returns a projection");
        };
        // Every column may be NULL on the wire; the stand-in's NOT NULL marks would only
        // make a batch check fail where an expression's nullability is guessed wrong.
        let fields: Vec<Field> = (p.schema.fields().iter())
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        let schema = colnames::rename(&query, Arc::new(Schema::new(fields)));
        Ok(Planned {
            state,
            projection,
            schema,
        })
    }
}

/// `SELECT items FROM t [AS x]`, `*` and `x.*` written out as the table's columns (the
/// stand-in also has `ctid`, which `*` does not take).
fn select_over_target(target: &Target, items: &[SelectItem]) -> PgResult<ast::Statement> {
    let reference = target.reference();
    let all_columns = || {
        let columns = target.table.columns.iter();
        columns
            .map(|c| format!("{}.{}", quote(reference), quote(&c.name)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut list = Vec::with_capacity(items.len());
    for item in items {
        match item {
            SelectItem::Wildcard(_) => list.push(all_columns()),
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) => {
                let parts: Vec<&ast::Ident> = name.0.iter().filter_map(|p| p.as_ident()).collect();
                match parts.as_slice() {
                    [only] if ident_name(only) == reference => list.push(all_columns()),
                    [only] => return Err(unknown_qualifier(target, &ident_name(only))),
                    _ => return Err(not_supported(&format!("{name}.*"))),
                }
            }
            SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. } => {
                check_expression(target, expr)?;
                list.push(item.to_string());
            }
            other => return Err(not_supported(&other.to_string())),
        }
    }
    let mut sql = format!(
        "SELECT {} FROM {}",
        list.join(", "),
        quote(&target.table.name)
    );
    if let Some(alias) = &target.alias {
        sql.push_str(" AS ");
        sql.push_str(&quote(alias));
    }
    let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, &sql)
        .map_err(|e| crate::errors::from_parser(&e, Some(&sql)))?;
    match statements.len() {
        1 => Ok(statements.remove(0)),
        _ => Err(PgError::internal(format!(
            "the RETURNING list did not make one query: {sql}"
        ))),
    }
}

/// Refuses what the stand-in cannot answer: `old.` / `new.`, subqueries, whole-row
/// references; and gives PostgreSQL's error for the table's own name behind an alias.
fn check_expression(target: &Target, expr: &ast::Expr) -> PgResult<()> {
    let reference = target.reference();
    let mut result = Ok(());
    let _ = ast::visit_expressions(expr, |e| {
        let refused = match e {
            ast::Expr::Subquery(_) | ast::Expr::Exists { .. } | ast::Expr::InSubquery { .. } => {
                Some(PgError::unsupported(
                    "subqueries in RETURNING are not supported",
                ))
            }
            ast::Expr::CompoundIdentifier(parts) => {
                let first = ident_name(&parts[0]);
                match first.as_str() {
                    _ if first == reference => None,
                    "old" | "new" => Some(PgError::unsupported(format!(
                        "RETURNING {}.… (PostgreSQL 18's OLD and NEW) is not supported",
                        first
                    ))),
                    _ if first == target.table.name && target.alias.is_some() => {
                        Some(invalid_table_reference(target))
                    }
                    _ => None,
                }
            }
            ast::Expr::Identifier(id)
                if ident_name(id) == reference
                    && target.table.column_index(&ident_name(id)).is_none() =>
            {
                Some(PgError::unsupported(format!(
                    "whole-row references in RETURNING are not supported: {id}"
                )))
            }
            _ => None,
        };
        match refused {
            Some(error) => {
                result = Err(error);
                std::ops::ControlFlow::Break(())
            }
            None => std::ops::ControlFlow::Continue(()),
        }
    });
    result
}

/// `x.*` or `x.a` where `x` is not the table: another table of the command (not
/// supported), else PostgreSQL's 42P01.
fn unknown_qualifier(target: &Target, name: &str) -> PgError {
    match name {
        "old" | "new" => PgError::unsupported(format!(
            "RETURNING {name}.* (PostgreSQL 18's OLD and NEW) is not supported"
        )),
        _ if name == target.table.name && target.alias.is_some() => invalid_table_reference(target),
        _ if target.reads_others => other_tables_unsupported(),
        _ => PgError::new(
            sqlstate::UNDEFINED_TABLE,
            format!("missing FROM-clause entry for table \"{name}\""),
        ),
    }
}

/// PostgreSQL's error for `t.a` where `t` goes by an alias.
fn invalid_table_reference(target: &Target) -> PgError {
    PgError::new(
        sqlstate::UNDEFINED_TABLE,
        format!(
            "invalid reference to FROM-clause entry for table \"{}\"",
            target.table.name
        ),
    )
    .with_hint(format!(
        "Perhaps you meant to reference the table alias \"{}\".",
        target.reference()
    ))
}

fn other_tables_unsupported() -> PgError {
    PgError::unsupported(
        "RETURNING can name only columns of the table written: columns of the other tables \
         of UPDATE … FROM and DELETE … USING are not supported",
    )
}

fn not_supported(item: &str) -> PgError {
    PgError::unsupported(format!("RETURNING {item} is not supported"))
}

/// A planning error: where the command reads other tables, a column or table the stand-in
/// does not have may be one of theirs, which is not supported rather than missing.
fn other_tables_error(target: &Target, error: PgError) -> PgError {
    let unknown = [sqlstate::UNDEFINED_COLUMN, sqlstate::UNDEFINED_TABLE];
    if target.reads_others && unknown.contains(&error.code) {
        other_tables_unsupported()
    } else {
        error
    }
}

/// The statement's state seeing only the stand-in for `table`: an empty table of its
/// columns and `ctid`, under the name and in the schema unqualified names resolve to.
fn stand_in_state(state: &SessionState, table: &TableDef) -> PgResult<SessionState> {
    stand_ins_state(state, &[(&table.name, table_schema(table, true))])
}

/// The statement's state seeing only empty tables of the given names and columns, in the
/// schema unqualified names resolve to.
pub(crate) fn stand_ins_state(
    state: &SessionState,
    tables: &[(&str, SchemaRef)],
) -> PgResult<SessionState> {
    let options = &state.config_options().catalog;
    let (catalog_name, schema_name) = (
        options.default_catalog.clone(),
        options.default_schema.clone(),
    );
    let schema = MemorySchemaProvider::new();
    for (name, columns) in tables {
        let stand_in = MemTable::try_new(columns.clone(), vec![vec![]]).map_err(from_datafusion)?;
        schema
            .register_table(name.to_string(), Arc::new(stand_in))
            .map_err(from_datafusion)?;
    }
    let catalog = MemoryCatalogProvider::new();
    catalog
        .register_schema(&schema_name, Arc::new(schema))
        .map_err(from_datafusion)?;
    let catalogs = MemoryCatalogProviderList::new();
    catalogs.register_catalog(catalog_name, Arc::new(catalog));
    Ok(SessionStateBuilder::new_from_existing(state.clone())
        .with_catalog_list(Arc::new(catalogs))
        .build())
}

/// The projection of a planned RETURNING list, which must read the written row only:
/// aggregates and window functions get PostgreSQL's errors, other shapes (set-returning
/// functions) are not supported.
fn projection_of(plan: LogicalPlan) -> PgResult<LogicalPlan> {
    let mut refused = None;
    let _ = plan.apply(|node| {
        refused = match node {
            LogicalPlan::Aggregate(_) => Some(PgError::new(
                sqlstate::GROUPING_ERROR,
                "aggregate functions are not allowed in RETURNING",
            )),
            LogicalPlan::Window(_) => Some(PgError::new(
                WINDOWING_ERROR,
                "window functions are not allowed in RETURNING",
            )),
            _ => None,
        };
        Ok(if refused.is_some() {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    if let Some(error) = refused {
        return Err(error);
    }
    let reads_the_row = |input: &LogicalPlan| {
        let mut node = input;
        while let LogicalPlan::SubqueryAlias(alias) = node {
            node = &alias.input;
        }
        matches!(node, LogicalPlan::TableScan(_))
    };
    match &plan {
        LogicalPlan::Projection(p) if reads_the_row(&p.input) => Ok(plan),
        _ => Err(PgError::unsupported(
            "RETURNING is supported with expressions over the written row only (not \
             set-returning functions)",
        )),
    }
}

/// `projection` with the values of its `$n`.
pub(crate) fn bind(projection: LogicalPlan, values: &[ScalarValue]) -> PgResult<LogicalPlan> {
    projection
        .with_param_values(values.to_vec())
        .map_err(from_datafusion)
}

/// `plan` type-coerced and its expressions simplified, as DataFusion's optimizer hands
/// plans to its physical planner (whose `coalesce`, for one, expects to have become a
/// CASE); unlike the whole optimizer this keeps the projection over the full row.
pub(crate) fn simplified(state: &SessionState, plan: LogicalPlan) -> PgResult<LogicalPlan> {
    use datafusion::optimizer::simplify_expressions::SimplifyExpressions;
    use datafusion::optimizer::Optimizer;
    let analyzed = state
        .analyzer()
        .execute_and_check(plan, state.config_options(), |_, _| {})
        .map_err(from_datafusion)?;
    Optimizer::with_rules(vec![Arc::new(SimplifyExpressions::new())])
        .optimize(analyzed, state, |_, _| {})
        .map_err(from_datafusion)
}

/// SQLSTATE 42P20 (`windowing_error`).
const WINDOWING_ERROR: &str = "42P20";

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn arrow_error(e: datafusion::arrow::error::ArrowError) -> PgError {
    PgError::internal(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{Array, AsArray, Int32Array};
    use datafusion::arrow::datatypes::{Int32Type, Int64Type};
    use datafusion::prelude::SessionConfig;
    use iolab_catalog::{ColumnDef, Persistence, PgType};

    /// `t(a int NOT NULL, b text)`.
    fn table() -> TableDef {
        let column = |name: &str, ty, not_null| ColumnDef {
            name: name.into(),
            ty,
            not_null,
        };
        TableDef {
            oid: 16384,
            schema: "public".into(),
            name: "t".into(),
            relfilenode: 16384,
            persistence: Persistence::Permanent,
            columns: vec![
                column("a", PgType::Int4, true),
                column("b", PgType::Text, false),
            ],
            reltuples: -1.0,
            relpages: 0,
            stored: Default::default(),
            reloptions: Vec::new(),
        }
    }

    fn target(alias: Option<&str>, reads_others: bool) -> Target {
        Target {
            table: table(),
            alias: alias.map(str::to_string),
            reads_others,
        }
    }

    /// The items of `RETURNING list`.
    fn items(list: &str) -> Vec<SelectItem> {
        let sql = format!("DELETE FROM t RETURNING {list}");
        match Parser::parse_sql(&PostgreSqlDialect {}, &sql)
            .unwrap()
            .remove(0)
        {
            ast::Statement::Delete(d) => d.returning.unwrap(),
            other => panic!("{other:?}"),
        }
    }

    fn select(target: &Target, list: &str) -> PgResult<String> {
        select_over_target(target, &items(list)).map(|s| s.to_string())
    }

    fn state() -> SessionState {
        let config = SessionConfig::new().with_default_catalog_and_schema("postgres", "public");
        SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .build()
    }

    #[test]
    fn wildcards_are_the_table_columns_without_ctid() {
        let plain = target(None, false);
        assert_eq!(
            select(&plain, "*, ctid").unwrap(),
            r#"SELECT "t"."a", "t"."b", ctid FROM "t""#
        );
        let aliased = target(Some("x"), false);
        assert_eq!(
            select(&aliased, "x.*, a + 1 AS n").unwrap(),
            r#"SELECT "x"."a", "x"."b", a + 1 AS n FROM "t" AS "x""#
        );
    }

    #[test]
    fn qualifiers_that_are_not_the_table() {
        let aliased = target(Some("x"), false);
        let err = select(&aliased, "t.a").unwrap_err();
        assert_eq!(err.code, sqlstate::UNDEFINED_TABLE);
        assert_eq!(
            err.message,
            "invalid reference to FROM-clause entry for table \"t\""
        );
        assert_eq!(
            err.hint.as_deref(),
            Some("Perhaps you meant to reference the table alias \"x\".")
        );
        let err = select(&target(None, false), "zz.*").unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            ("42P01", "missing FROM-clause entry for table \"zz\"")
        );
        // With UPDATE … FROM, `u.*` may be another table's: not supported, not missing.
        assert_eq!(
            select(&target(None, true), "u.*").unwrap_err().code,
            "0A000"
        );
    }

    #[test]
    fn refused_forms_say_what_is_not_supported() {
        let plain = target(None, false);
        for (list, words) in [
            ("old.a", "OLD and NEW"),
            ("new.*", "OLD and NEW"),
            ("(SELECT 1)", "subqueries"),
            ("a IN (SELECT 1)", "subqueries"),
            ("t", "whole-row"),
        ] {
            let err = select(&plain, list).unwrap_err();
            assert_eq!(err.code, "0A000", "{list}: {err:?}");
            assert!(err.message.contains(words), "{list}: {}", err.message);
        }
        // A table named like the qualifier is the table, not PostgreSQL 18's OLD.
        let old = Target {
            alias: Some("old".into()),
            ..plain
        };
        assert!(select(&old, "old.a").is_ok());
    }

    #[tokio::test]
    async fn rows_written_go_through_the_list() {
        let target = target(Some("x"), false);
        let items = items("a + 1 AS next, upper(b), ctid, *, coalesce(b, 'none')");
        let mut returning = Returning::new(&state(), None, &target, &items)
            .await
            .unwrap();
        let names: Vec<&str> = (returning.schema.fields().iter())
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(names, ["next", "upper", "ctid", "a", "b", "coalesce"]);
        let a: ArrayRef = Arc::new(Int32Array::from(vec![1, 2]));
        let b: ArrayRef = Arc::new(StringArray::from(vec![Some("p"), None]));
        returning.add(&[a, b], &[(0, 1), (3, 7)]).unwrap();
        // Nothing written (a batch whose rows were all changed by someone else): nothing kept.
        let no_a: ArrayRef = Arc::new(Int32Array::from(Vec::<i32>::new()));
        let no_b: ArrayRef = Arc::new(StringArray::from(Vec::<&str>::new()));
        returning.add(&[no_a, no_b], &[]).unwrap();
        let batch = &returning.batches[0];
        assert_eq!(returning.batches.len(), 1);
        let next = batch.column(0).as_primitive::<Int32Type>();
        assert_eq!((next.value(0), next.value(1)), (2, 3));
        assert_eq!(batch.column(1).as_string::<i32>().value(0), "P");
        assert!(batch.column(1).is_null(1));
        let ctids = batch.column(2).as_string::<i32>();
        assert_eq!((ctids.value(0), ctids.value(1)), ("(0,1)", "(3,7)"));
        assert_eq!(batch.column(4).null_count(), 1);
        let coalesced = batch.column(5).as_string::<i32>();
        assert_eq!((coalesced.value(0), coalesced.value(1)), ("p", "none"));
        assert_eq!(returning.output()[0], "(x.a + 1)");
    }

    #[tokio::test]
    async fn planning_errors_are_postgres_errors() {
        let plain = target(None, false);
        let error = |list: &'static str| {
            let plain = plain.clone();
            async move {
                Returning::new(&state(), None, &plain, &items(list))
                    .await
                    .err()
                    .expect("an error")
            }
        };
        let err = error("nope").await;
        assert_eq!(
            (err.code, err.message.as_str()),
            ("42703", "column \"nope\" does not exist")
        );
        let err = error("count(*)").await;
        assert_eq!(
            (err.code, err.message.as_str()),
            ("42803", "aggregate functions are not allowed in RETURNING")
        );
        let err = error("row_number() OVER ()").await;
        assert_eq!(
            (err.code, err.message.as_str()),
            ("42P20", "window functions are not allowed in RETURNING")
        );
        // With UPDATE … FROM an unknown column may be the other table's.
        let others = target(None, true);
        let err = Returning::new(&state(), None, &others, &items("z"))
            .await
            .err()
            .unwrap();
        assert_eq!(err.code, "0A000");
    }

    #[tokio::test]
    async fn a_column_named_ctid_is_read_as_the_column() {
        // PostgreSQL refuses such a column; iolab has one, and the row has no extra ctid.
        let mut with_ctid = target(None, false);
        with_ctid.table.columns[1].name = "ctid".into();
        let mut returning = Returning::new(&state(), None, &with_ctid, &items("ctid, *"))
            .await
            .unwrap();
        let a: ArrayRef = Arc::new(Int32Array::from(vec![1]));
        let ctid: ArrayRef = Arc::new(StringArray::from(vec!["mine"]));
        returning.add(&[a, ctid], &[(0, 1)]).unwrap();
        let batch = &returning.batches[0];
        assert_eq!(batch.num_columns(), 3);
        assert_eq!(batch.column(0).as_string::<i32>().value(0), "mine");
    }

    #[tokio::test]
    async fn parameters_take_their_values() {
        let plain = target(None, false);
        let values = [ScalarValue::Int32(Some(10))];
        let mut returning = Returning::new(&state(), Some(&values), &plain, &items("a + $1"))
            .await
            .unwrap();
        let a: ArrayRef = Arc::new(Int32Array::from(vec![5]));
        let b: ArrayRef = Arc::new(StringArray::from(vec!["q"]));
        returning.add(&[a, b], &[(0, 1)]).unwrap();
        let column = returning.batches[0].column(0);
        let value = datafusion::arrow::compute::cast(column, &DataType::Int64).unwrap();
        assert_eq!(value.as_primitive::<Int64Type>().value(0), 15);
    }
}
