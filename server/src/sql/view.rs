//! CREATE [OR REPLACE] VIEW and DROP VIEW, the dependencies that views put on the
//! relations they read (DROP TABLE / DROP VIEW refused, or CASCADE), and the refusal to
//! write through a view.
//!
//! CREATE VIEW plans the query as any SELECT is planned (`view_planning`), takes the
//! result columns' names (PostgreSQL's: `count(*)` is `count`) and types (a table's
//! column passed through keeps its declared type, `varchar(20)`; others have the type a
//! client sees in a RowDescription), applies the column list, and stores the query's text, the
//! columns and the relations the plan reads directly. OR REPLACE keeps the view's OID and
//! follows PostgreSQL's rule for the columns (`iolab_catalog::view::check_replacement`).
//! Each change is logged in the transaction's [`DdlLog`] so ROLLBACK undoes it.
//!
//! iolab does not update through views: INSERT, UPDATE and DELETE on a view fail with
//! 0A000 (PostgreSQL updates simple views itself).

use std::sync::Arc;

use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::sql::sqlparser::ast::{self, ObjectName};
use iolab_catalog::view::check_replacement;
use iolab_catalog::{sqlstate, PgError, PgResult, PgType, ViewColumn, ViewDef};
use iolab_engine::exec::table::HeapTable;
use iolab_engine::Database;

use crate::session::Notice;
use crate::sql::ddl::{check_identifier, ident_name, split_name};
use crate::sql::ddl_log::{DdlEntry, DdlLog};
use crate::sql::{Parsed, StatementRun};

/// CREATE [OR REPLACE] VIEW name [(column, …)] AS query.
pub async fn create_view(
    run: &StatementRun,
    create: &ast::CreateView,
    log: &mut DdlLog,
) -> PgResult<()> {
    let refuse = |what: &str| Err(PgError::unsupported(format!("{what} are not supported")));
    if create.materialized {
        return refuse("materialized views");
    }
    if create.temporary {
        return refuse("temporary views");
    }
    if create.if_not_exists || create.or_alter {
        return Err(PgError::syntax("syntax error at or near \"NOT\""));
    }
    if !matches!(create.options, ast::CreateTableOptions::None) {
        return refuse("view options");
    }
    let (schema, name) = split_name(&create.name)?;
    check_identifier(&name)?;
    // The text is parsed again as it will be whenever the view is used.
    let query = create.query.to_string();
    let Parsed::Sql(stmt) = crate::sql::parse(&query, &query, 0)? else {
        return Err(PgError::internal(
            "a view's query parsed as another statement",
        ));
    };
    let (plan, views) = crate::sql::plan_statement_at(&run.state, &stmt, &[], &[]).await?;
    let arrow = Arc::new(plan.schema().as_arrow().clone());
    let named = crate::sql::colnames::rename(&stmt, arrow);
    let mut columns = view_columns(&named, &create.columns)?;
    for (i, column) in columns.iter_mut().enumerate() {
        if let Some(ty) = table_column_type(&plan, i) {
            if &ty.arrow_type() == named.field(i).data_type() {
                (column.type_oid, column.typmod) = (ty.oid(), ty.typmod());
            }
        }
    }
    let def = ViewDef {
        oid: 0,
        schema: schema.unwrap_or_else(|| "public".into()),
        name,
        columns,
        query,
        depends_on: crate::sql::view_planning::relations_read(&plan, &views),
    };
    // PostgreSQL makes such a view temporary itself; iolab has no temporary views.
    let temporary = def.depends_on.iter().find_map(|&oid| {
        let table = run.db.catalog.table_by_oid(oid)?;
        (table.persistence == iolab_catalog::Persistence::Temporary).then_some(table.name)
    });
    if let Some(table) = temporary {
        return Err(
            PgError::unsupported("temporary views are not supported").with_detail(format!(
                "View \"{}\" would read temporary table \"{table}\".",
                def.name
            )),
        );
    }
    let db = &run.db;
    if create.or_replace {
        if let Some(old) = db.catalog.view(&def.schema, &def.name) {
            check_replacement(&old.columns, &def.columns, |oid, typmod| {
                crate::pgcatalog::types::format_type(oid, Some(typmod))
            })?;
            log.record(db, DdlEntry::ReplacedView(old))?;
            db.catalog.create_view(def, true)?;
            return Ok(());
        }
    }
    let (created, _) = db.catalog.create_view(def, false)?;
    log.record(db, DdlEntry::CreatedView { oid: created.oid })
}

/// The view's columns: the query's result columns, renamed by the column list.
fn view_columns(
    result: &datafusion::arrow::datatypes::Schema,
    names: &[ast::ViewColumnDef],
) -> PgResult<Vec<ViewColumn>> {
    if names.len() > result.fields().len() {
        return Err(PgError::syntax(
            "CREATE VIEW specifies more column names than columns",
        ));
    }
    let mut columns: Vec<ViewColumn> = Vec::with_capacity(result.fields().len());
    for (i, field) in result.fields().iter().enumerate() {
        let name = match names.get(i) {
            Some(c) => ident_name(&c.name),
            None => field.name().clone(),
        };
        if columns.iter().any(|c| c.name == name) {
            return Err(PgError::new(
                sqlstate::DUPLICATE_COLUMN,
                format!("column \"{name}\" specified more than once"),
            ));
        }
        let (ty, typmod) = crate::wire::encode::pg_type_of(field.data_type());
        columns.push(ViewColumn {
            name,
            type_oid: ty.oid(),
            typmod,
        });
    }
    Ok(columns)
}

/// The declared type of result column `i` of `plan` when it is a table's column passed
/// through unchanged (so a view over a `varchar(20)` column has a `varchar(20)` column,
/// as in PostgreSQL; a computed column has the type of its values).
fn table_column_type(plan: &LogicalPlan, i: usize) -> Option<PgType> {
    match plan {
        LogicalPlan::Projection(p) => {
            let mut expr = p.expr.get(i)?;
            while let Expr::Alias(alias) = expr {
                expr = &alias.expr;
            }
            let Expr::Column(column) = expr else {
                return None;
            };
            let j = p.input.schema().index_of_column(column).ok()?;
            table_column_type(&p.input, j)
        }
        LogicalPlan::SubqueryAlias(a) => table_column_type(&a.input, i),
        LogicalPlan::Filter(f) => table_column_type(&f.input, i),
        LogicalPlan::Sort(s) => table_column_type(&s.input, i),
        LogicalPlan::Limit(l) => table_column_type(&l.input, i),
        LogicalPlan::TableScan(scan) => {
            let provider = datafusion::datasource::source_as_provider(&scan.source).ok()?;
            let table = provider.downcast_ref::<HeapTable>()?;
            let name = scan.projected_schema.field(i).name();
            let k = table.def.column_index(name)?;
            Some(table.def.columns[k].ty)
        }
        _ => None,
    }
}

/// A relation a DROP removes, as PostgreSQL names it in messages (`table t`).
pub struct Dropping {
    pub oid: u32,
    /// `table` or `view`.
    pub kind: &'static str,
    pub name: String,
}

/// The views that depend on `targets` (and are not among them), in PostgreSQL's order, each
/// with PostgreSQL's DETAIL line (`view v depends on table t`).
fn dependents(db: &Database, targets: &[Dropping]) -> Vec<(ViewDef, String)> {
    let mut found: Vec<ViewDef> = Vec::new();
    for t in targets {
        for v in db.catalog.dependent_views(t.oid) {
            let new = !found.iter().any(|f| f.oid == v.oid);
            if new && !targets.iter().any(|t| t.oid == v.oid) {
                found.push(v);
            }
        }
    }
    let describe = |oid: u32| -> Option<String> {
        if let Some(t) = targets.iter().find(|t| t.oid == oid) {
            return Some(format!("{} {}", t.kind, t.name));
        }
        found
            .iter()
            .find(|v| v.oid == oid)
            .map(|v| format!("view {}", v.name))
    };
    found
        .iter()
        .map(|v| {
            let on = v.depends_on.iter().find_map(|d| describe(*d));
            let line = format!(
                "view {} depends on {}",
                v.name,
                on.expect("a dependent reads a target or another dependent")
            );
            (v.clone(), line)
        })
        .collect()
}

/// Before `targets` are dropped: without `cascade`, fails with 2BP01 if views depend on
/// them; with it, drops those views (logged in `log`) and returns PostgreSQL's notice.
pub fn drop_dependents(
    db: &Arc<Database>,
    targets: &[Dropping],
    cascade: bool,
    log: &mut DdlLog,
) -> PgResult<Option<Notice>> {
    let deps = dependents(db, targets);
    let Some(first) = targets.first() else {
        return Ok(None);
    };
    if deps.is_empty() {
        return Ok(None);
    }
    if !cascade {
        let lines: Vec<&str> = deps.iter().map(|(_, l)| l.as_str()).collect();
        return Err(PgError::new(
            sqlstate::DEPENDENT_OBJECTS_STILL_EXIST,
            format!(
                "cannot drop {} {} because other objects depend on it",
                first.kind, first.name
            ),
        )
        .with_detail(lines.join("\n"))
        .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    // Last listed first, so that no view outlives one it reads (a cycle aside).
    for (view, _) in deps.iter().rev() {
        log.record(db, DdlEntry::DroppedView(view.clone()))?;
        db.catalog.drop_view(view.oid)?;
    }
    let notice = match deps.as_slice() {
        [(view, _)] => Notice::notice(format!("drop cascades to view {}", view.name)),
        many => {
            let lines: Vec<String> = many
                .iter()
                .map(|(v, _)| format!("drop cascades to view {}", v.name))
                .collect();
            Notice {
                detail: Some(lines.join("\n")),
                ..Notice::notice(format!("drop cascades to {} other objects", many.len()))
            }
        }
    };
    Ok(Some(notice))
}

/// DROP VIEW [IF EXISTS] a, b [CASCADE | RESTRICT]; returns the notices.
pub fn drop_views(
    db: &Arc<Database>,
    names: &[ObjectName],
    if_exists: bool,
    cascade: bool,
    log: &mut DdlLog,
) -> PgResult<Vec<Notice>> {
    let mut notices = Vec::new();
    let mut targets: Vec<Dropping> = Vec::new();
    for name in names {
        let (schema, view) = split_name(name)?;
        let schema = schema.unwrap_or_else(|| "public".into());
        if let Some(def) = db.catalog.view(&schema, &view) {
            if !targets.iter().any(|t| t.oid == def.oid) {
                targets.push(Dropping {
                    oid: def.oid,
                    kind: "view",
                    name: def.name,
                });
            }
            continue;
        }
        let hint = if db.catalog.table(&schema, &view).is_some() {
            Some("Use DROP TABLE to remove a table.")
        } else if db.catalog.index(&schema, &view).is_some() {
            Some("Use DROP INDEX to remove an index.")
        } else if db.catalog.sequence(&schema, &view).is_some() {
            Some("Use DROP SEQUENCE to remove a sequence.")
        } else {
            None
        };
        match hint {
            Some(hint) => {
                return Err(PgError::new(
                    sqlstate::WRONG_OBJECT_TYPE,
                    format!("\"{view}\" is not a view"),
                )
                .with_hint(hint))
            }
            None if if_exists => notices.push(Notice::notice(format!(
                "view \"{view}\" does not exist, skipping"
            ))),
            None => {
                return Err(PgError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("view \"{view}\" does not exist"),
                ))
            }
        }
    }
    notices.extend(drop_dependents(db, &targets, cascade, log)?);
    for t in &targets {
        let def = db
            .catalog
            .view_by_oid(t.oid)
            .ok_or_else(|| PgError::internal(format!("view {} vanished", t.name)))?;
        // The way back is written down before the view goes.
        log.record(db, DdlEntry::DroppedView(def))?;
        db.catalog.drop_view(t.oid)?;
    }
    Ok(notices)
}

/// Is `schema.name` (`public` by default) a view?
pub fn is_view(db: &Database, schema: Option<&str>, name: &str) -> bool {
    db.catalog.view(schema.unwrap_or("public"), name).is_some()
}

/// PostgreSQL's 42809 for a statement that needs a table and was given view `name`.
pub fn wrong_kind(message: String) -> PgError {
    PgError::new(sqlstate::WRONG_OBJECT_TYPE, message)
}

/// Fails with 0A000 when `name` is a view: iolab does not write through views. `verb`
/// is PostgreSQL's (`insert into`, `update`, `delete from`).
pub fn refuse_write(db: &Database, name: &ObjectName, verb: &str) -> PgResult<()> {
    let (schema, name) = split_name(name)?;
    if db
        .catalog
        .view(schema.as_deref().unwrap_or("public"), &name)
        .is_none()
    {
        return Ok(());
    }
    Err(
        PgError::unsupported(format!("cannot {verb} view \"{name}\""))
            .with_detail("iolab does not update views (PostgreSQL updates simple views itself).")
            .with_hint("Change the tables the view reads instead."),
    )
}
