//! DELETE and UPDATE: the rows to change are found by a query DataFusion plans (so the
//! WHERE clause, USING / FROM joins and the SET expressions work as in any SELECT, with
//! the same scans, indexes and EXPLAIN), then changed in the heap by the statement's
//! transaction (`iolab_engine::heap::delete`).
//!
//! ```text
//! DELETE FROM t [AS x] [USING from_item, …] [WHERE condition]
//!     → SELECT x.ctid FROM t AS x [, from_item, …] [WHERE condition]
//!       (with RETURNING: SELECT x.ctid, x.a, x.b… — the old values too)
//! UPDATE t [AS x] SET a = expr, (b, c) = (expr, expr) [FROM from_item, …] [WHERE condition]
//!     → SELECT x.ctid, expr, x.b…  (the new value of every column, in table order) …
//! ```
//!
//! Each batch of the query is applied as it arrives: DELETE stamps each row's tuple;
//! UPDATE stamps the old version, appends the new ones (through the table's indexes) and
//! points each old version at its new one. What the command writes is invisible to its own
//! query (the command id), so it never meets its own new versions. A row found twice (a
//! join) is changed once: the second time its tuple carries this transaction already.
//! Rows another transaction is changing are waited for (see the engine module); rows it
//! updated and committed meanwhile are changed in their newest version if that still
//! meets the condition (`recheck`).
//!
//! RETURNING gets the rows changed — UPDATE's new versions, DELETE's old ones, each with
//! its ctid — only those really changed (not a row found twice, not one another
//! transaction deleted first); see `returning`.
//!
//! Not supported (0A000): `WHERE CURRENT OF`, assignments to part of a column (`a[1] =
//! …`, `a.f = …`), and what `returning` does not support.

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use datafusion::arrow::compute::filter;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::sql::sqlparser::ast;
use iolab_catalog::{sqlstate, PgError, PgResult, PgType, TableDef};
use iolab_engine::heap::delete::{Deleted, HeapDeleter};
use iolab_engine::heap::heapam::HeapInserter;
use iolab_engine::Database;

use crate::sql::ddl::{ident_name, split_name};
use crate::sql::insert::{for_each_batch, table_arrays, table_inserter};
use crate::sql::recheck::Recheck;
use crate::sql::returning::{self, Returning};
use crate::sql::{parse, Outcome, Parsed, StatementRun};

/// The query that finds the rows of a DELETE or UPDATE, and what it changes.
pub struct RowQuery {
    pub query: ast::Statement,
    pub table: TableDef,
    /// `x` of `DELETE FROM t AS x`.
    pub alias: Option<String>,
}

/// The table a DELETE or UPDATE changes, and the name its columns go by in the query.
struct Target {
    table: TableDef,
    alias: Option<String>,
    /// `x` of `t AS x`, else the table's name (quoted).
    reference: String,
    /// `t AS x` as written.
    from_item: String,
}

/// The query that finds the rows a DELETE or UPDATE changes, and the changed table; `None`
/// for other statements. Without `with_ctid` the query leaves out the rows' `ctid` (for
/// the extended protocol's Describe, which plans it for its parameters' types without the
/// `ctid` column).
pub fn row_query(
    db: &Database,
    temp: Option<&str>,
    stmt: &ast::Statement,
    with_ctid: bool,
) -> PgResult<Option<RowQuery>> {
    build_row_query(db, temp, stmt, with_ctid, false)
}

/// [`row_query`]; with `old_values` a DELETE's query gives each row's values after its
/// `ctid` (for RETURNING).
pub(crate) fn build_row_query(
    db: &Database,
    temp: Option<&str>,
    stmt: &ast::Statement,
    with_ctid: bool,
    old_values: bool,
) -> PgResult<Option<RowQuery>> {
    let (target, columns, others, selection) = match stmt {
        ast::Statement::Delete(delete) => {
            if !delete.tables.is_empty() || !delete.order_by.is_empty() || delete.limit.is_some() {
                return Err(PgError::syntax("syntax error in DELETE"));
            }
            let ast::FromTable::WithFromKeyword(from) = &delete.from else {
                return Err(PgError::syntax("syntax error at or near \"DELETE\""));
            };
            let [only] = from.as_slice() else {
                return Err(PgError::syntax("syntax error at or near \",\""));
            };
            if let ast::TableFactor::Table { name, .. } = &only.relation {
                crate::sql::view::refuse_write(db, name, "delete from")?;
            }
            let target = target(db, temp, only)?;
            let others = delete.using.as_deref().unwrap_or_default();
            let columns = match old_values {
                true => old_columns(&target),
                false => vec![],
            };
            (target, columns, others, delete.selection.as_ref())
        }
        ast::Statement::Update(update) => {
            if update.or.is_some() || !update.order_by.is_empty() || update.limit.is_some() {
                return Err(PgError::syntax("syntax error in UPDATE"));
            }
            if let ast::TableFactor::Table { name, .. } = &update.table.relation {
                crate::sql::view::refuse_write(db, name, "update")?;
            }
            let target = target(db, temp, &update.table)?;
            let defaults = db.catalog.column_defaults(target.table.oid);
            let values = new_values(&target, &update.assignments, &defaults)?;
            let others: &[ast::TableWithJoins] = match &update.from {
                None => &[],
                Some(ast::UpdateTableFromKind::AfterSet(from)) => from,
                Some(ast::UpdateTableFromKind::BeforeSet(_)) => {
                    return Err(PgError::syntax("syntax error at or near \"FROM\""))
                }
            };
            (target, values, others, update.selection.as_ref())
        }
        _ => return Ok(None),
    };
    let ctid = with_ctid.then(|| format!("{}.ctid", target.reference));
    let mut columns: Vec<String> = ctid.into_iter().chain(columns).collect();
    if columns.is_empty() {
        columns.push("1".into());
    }
    let mut sql = format!("SELECT {} FROM {}", columns.join(", "), target.from_item);
    for other in others {
        sql.push_str(", ");
        sql.push_str(&other.to_string());
    }
    if let Some(selection) = selection {
        sql.push_str(" WHERE ");
        sql.push_str(&selection.to_string());
    }
    match parse(&sql, &sql, 0)? {
        Parsed::Sql(query) => Ok(Some(RowQuery {
            query: *query,
            table: target.table,
            alias: target.alias,
        })),
        _ => Err(PgError::internal(
            "the row query of a DELETE or UPDATE did not parse",
        )),
    }
}

/// Runs a DELETE or UPDATE: its command tag (`DELETE n`, `UPDATE n`), or with RETURNING
/// its rows.
pub async fn run(run: &StatementRun, stmt: &ast::Statement) -> PgResult<Outcome> {
    let returning_list = returning::target_of(&run.db, run.temp.schema(), stmt)?;
    let found = build_row_query(
        &run.db,
        run.temp.schema(),
        stmt,
        true,
        returning_list.is_some(),
    )?
    .expect("a DELETE or UPDATE");
    let rows = run.query_stream(&found.query).await?;
    let mut returning = match returning_list {
        Some((target, items)) => Some(Returning::plan(run, &target, items).await?),
        None => None,
    };
    let changed = apply_returning(run, stmt, &found.table, rows, returning.as_mut()).await?;
    let tag = match stmt {
        ast::Statement::Delete(_) => "DELETE",
        _ => "UPDATE",
    };
    match returning {
        Some(returning) => returning.into_outcome(tag),
        None => Ok(Outcome::Done(format!("{tag} {changed}"))),
    }
}

/// Applies `stmt` (a DELETE or UPDATE of `table`) to the rows of its row query; the
/// number of rows changed.
pub async fn apply(
    run: &StatementRun,
    stmt: &ast::Statement,
    table: &TableDef,
    rows: SendableRecordBatchStream,
) -> PgResult<u64> {
    apply_returning(run, stmt, table, rows, None).await
}

/// [`apply`], giving the rows changed to `returning` too (a DELETE's row query must then
/// have the old values: `build_row_query` with `old_values`). Rows another transaction
/// updated meanwhile are looked at again in their newest versions (`recheck`), until none
/// is left.
async fn apply_returning(
    run: &StatementRun,
    stmt: &ast::Statement,
    table: &TableDef,
    rows: SendableRecordBatchStream,
    mut returning: Option<&mut Returning>,
) -> PgResult<u64> {
    let is_delete = matches!(stmt, ast::Statement::Delete(_));
    let rel = run.db.relfile(table.relfilenode)?;
    let mut deleter = HeapDeleter::new(&run.ctx, rel, run.ctx.new_account(), !is_delete)?;
    let mut inserter = match is_delete {
        true => None,
        false => Some(table_inserter(run, table)?.for_update()),
    };
    let mut rows = Some(rows);
    let mut recheck: Option<Recheck> = None;
    let result = loop {
        let Some(stream) = rows.take() else {
            break Ok(());
        };
        let mut replaced = Vec::new();
        let applied = for_each_batch(run, stream, |batch| {
            let changes = Changes {
                batch: &batch,
                deleter: &mut deleter,
                returning: returning.as_deref_mut(),
                replaced: &mut replaced,
            };
            match inserter.as_mut() {
                None => delete(run, changes),
                Some(inserter) => update(run, table, inserter, changes),
            }
        })
        .await;
        if applied.is_err() || replaced.is_empty() {
            break applied;
        }
        if recheck.is_none() {
            match Recheck::new(run, stmt, is_delete && returning.is_some()) {
                Ok(made) => recheck = Some(made),
                Err(e) => break Err(e),
            }
        }
        let recheck = recheck.as_ref().expect("made above");
        match recheck.rows(run, &mut deleter, &replaced).await {
            Ok(newest) => rows = newest,
            Err(e) => break Err(e),
        }
    };
    if let Some(inserter) = inserter.as_mut() {
        inserter.finish();
        run.ctx.add_usage(&inserter.acct.usage);
    }
    deleter.finish();
    run.ctx.add_usage(&deleter.acct.usage);
    result?;
    Ok(deleter.deleted)
}

/// One batch of a row query's rows to delete or update: each row's `ctid` (the first
/// column), then an UPDATE's new values or a DELETE's old values (for RETURNING).
struct Changes<'a> {
    batch: &'a RecordBatch,
    deleter: &'a mut HeapDeleter,
    returning: Option<&'a mut Returning>,
    /// Where the rows another transaction replaced meanwhile were found: to be looked at
    /// again (`recheck`).
    replaced: &'a mut Vec<(u32, u16)>,
}

impl Changes<'_> {
    /// Stamps the rows' versions; which of them this command stamped.
    fn stamp(&mut self, run: &StatementRun, tids: &[(u32, u16)]) -> PgResult<BooleanArray> {
        let check_cancel = || run.ctx.check_cancel();
        let mut stamped = Vec::with_capacity(tids.len());
        for &tid in tids {
            let done = self.deleter.try_delete(tid, &check_cancel)?;
            if done == Deleted::Updated {
                self.replaced.push(tid);
            }
            stamped.push(done == Deleted::Now);
        }
        Ok(BooleanArray::from(stamped))
    }
}

/// Deletes a batch's rows.
fn delete(run: &StatementRun, mut changes: Changes) -> PgResult<()> {
    let tids = ctids(changes.batch.column(0).as_ref())?;
    let deleted = changes.stamp(run, &tids)?;
    if let Some(returning) = changes.returning {
        let old_values: Vec<ArrayRef> = changes.batch.columns()[1..].to_vec();
        returning.add(&only(&old_values, &deleted)?, &only_tids(&tids, &deleted))?;
    }
    Ok(())
}

/// Replaces a batch's rows with the new values that follow their `ctid`s.
fn update(
    run: &StatementRun,
    table: &TableDef,
    inserter: &mut HeapInserter,
    mut changes: Changes,
) -> PgResult<()> {
    let tids = ctids(changes.batch.column(0).as_ref())?;
    let all_columns: Vec<usize> = (0..table.columns.len()).collect();
    let new_rows = changes
        .batch
        .project(&(1..=all_columns.len()).collect::<Vec<_>>())
        .map_err(arrow_error)?;
    let arrays = table_arrays(
        run,
        table,
        &all_columns,
        &new_rows,
        &crate::sql::defaults::Defaults::none(),
    )?;
    // The old versions first: only rows still there get a new version.
    let keep = changes.stamp(run, &tids)?;
    let (kept, new) = add_new_versions(table, changes.deleter, inserter, &tids, &arrays, &keep)?;
    if let Some(returning) = changes.returning {
        returning.add(&kept, &new)?;
    }
    Ok(())
}

/// The second half of an UPDATE (and of INSERT … ON CONFLICT DO UPDATE): the rows `keep`
/// marks, whose old versions at `tids` `deleter` has just stamped, get their new versions
/// `arrays` (in the table's columns) appended by `inserter`; those that moved to another
/// page are counted (`n_tup_newpage_upd`) and each old version is linked to its new one.
/// The new versions' values and where they went.
pub(crate) fn add_new_versions(
    table: &TableDef,
    deleter: &mut HeapDeleter,
    inserter: &mut HeapInserter,
    tids: &[(u32, u16)],
    arrays: &[ArrayRef],
    keep: &BooleanArray,
) -> PgResult<(Vec<ArrayRef>, Vec<(u32, u16)>)> {
    let kept = only(arrays, keep)?;
    let old = only_tids(tids, keep);
    inserter.insert_arrays(&kept, old.len())?;
    let new = inserter.placed().to_vec();
    assert_eq!(new.len(), old.len(), "a new version for each old one");
    let newpage = old.iter().zip(&new).filter(|(o, n)| o.0 != n.0).count();
    deleter
        .acct
        .relations()
        .newpage_updates(table.relfilenode, newpage as u64);
    for (&old, &new) in old.iter().zip(&new) {
        deleter.link_new_version(old, new)?;
    }
    Ok((kept, new))
}

/// The rows of `arrays` that `keep` marks.
pub(crate) fn only(arrays: &[ArrayRef], keep: &BooleanArray) -> PgResult<Vec<ArrayRef>> {
    arrays
        .iter()
        .map(|a| filter(a.as_ref(), keep))
        .collect::<Result<_, _>>()
        .map_err(arrow_error)
}

/// The `tids` that `keep` marks.
fn only_tids(tids: &[(u32, u16)], keep: &BooleanArray) -> Vec<(u32, u16)> {
    tids.iter()
        .zip(keep.values().iter())
        .filter_map(|(tid, k)| k.then_some(*tid))
        .collect()
}

/// Every column of the changed table, in table order, as the row query names it.
fn old_columns(target: &Target) -> Vec<String> {
    let columns = target.table.columns.iter();
    columns
        .map(|c| format!("{}.{}", target.reference, quote(&c.name)))
        .collect()
}

/// The changed table of `DELETE FROM t [AS x]` or `UPDATE t [AS x]`.
fn target(db: &Database, temp: Option<&str>, item: &ast::TableWithJoins) -> PgResult<Target> {
    let ast::TableFactor::Table { name, alias, .. } = &item.relation else {
        return Err(PgError::syntax(
            "syntax error: a DELETE or UPDATE changes one table",
        ));
    };
    if !item.joins.is_empty() {
        return Err(PgError::syntax("syntax error at or near \"JOIN\""));
    }
    if alias.as_ref().is_some_and(|a| !a.columns.is_empty()) {
        return Err(PgError::syntax("syntax error at or near \"(\""));
    }
    let (schema, table_name) = split_name(name)?;
    let table = db
        .catalog
        .resolve_in(temp, schema.as_deref(), &table_name)?;
    let reference = match alias {
        Some(alias) => alias.name.to_string(),
        None => quote(&table.name),
    };
    Ok(Target {
        table,
        alias: alias.as_ref().map(|a| a.name.value.clone()),
        reference,
        from_item: item.relation.to_string(),
    })
}

/// [`new_values`] of `INSERT INTO table [AS alias] … ON CONFLICT … DO UPDATE SET
/// assignments`, the columns named `alias` (an identifier as written) or the table's name.
pub(crate) fn upsert_values(
    table: &TableDef,
    alias: Option<&ast::Ident>,
    assignments: &[ast::Assignment],
    defaults: &[iolab_catalog::ColumnDefault],
) -> PgResult<Vec<String>> {
    let reference = match alias {
        Some(alias) => alias.to_string(),
        None => quote(&table.name),
    };
    let target = Target {
        table: table.clone(),
        alias: alias.map(|a| a.value.clone()),
        from_item: reference.clone(),
        reference,
    };
    new_values(&target, assignments, defaults)
}

/// Each column's value after `SET assignments`, in table order: the assigned expression
/// as SQL text, or the column itself.
fn new_values(
    target: &Target,
    assignments: &[ast::Assignment],
    defaults: &[iolab_catalog::ColumnDefault],
) -> PgResult<Vec<String>> {
    let table = &target.table;
    let mut values: Vec<Option<String>> = vec![None; table.columns.len()];
    for assignment in assignments {
        let pairs: Vec<(&ast::ObjectName, &ast::Expr)> = match &assignment.target {
            ast::AssignmentTarget::ColumnName(name) => vec![(name, &assignment.value)],
            ast::AssignmentTarget::Tuple(names) => {
                let exprs: Vec<&ast::Expr> = match &assignment.value {
                    ast::Expr::Tuple(exprs) => exprs.iter().collect(),
                    _ => {
                        return Err(PgError::syntax(
                            "source for a multiple-column UPDATE item must be a sub-SELECT or \
                             ROW() expression",
                        ))
                    }
                };
                if exprs.len() != names.len() {
                    return Err(PgError::syntax(
                        "number of columns does not match number of values",
                    ));
                }
                names.iter().zip(exprs).collect()
            }
        };
        for (name, value) in pairs {
            let column = column_of(target, name)?;
            if values[column].is_some() {
                return Err(PgError::syntax(format!(
                    "multiple assignments to same column \"{}\"",
                    table.columns[column].name
                )));
            }
            // A bare parameter takes the column's type, as in PostgreSQL (the query alone
            // would leave it untyped: text).
            let is_parameter = matches!(
                value,
                ast::Expr::Value(v) if matches!(v.value, ast::Value::Placeholder(_))
            );
            let name = &table.columns[column].name;
            let default = crate::sql::defaults::update_default(defaults, name, value)?;
            values[column] = Some(match table.columns[column].ty {
                _ if default.is_some() => default.unwrap_or_default(),
                _ if !is_parameter => value.to_string(),
                PgType::Varchar(_) | PgType::Bpchar(_) => format!("CAST({value} AS text)"),
                ty => format!("CAST({value} AS {})", ty.typname()),
            });
        }
    }
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            v.unwrap_or_else(|| format!("{}.{}", target.reference, quote(&table.columns[i].name)))
        })
        .collect())
}

/// The column `name` assigns to: a bare name (PostgreSQL also takes `a[1]` and `a.f`).
fn column_of(target: &Target, name: &ast::ObjectName) -> PgResult<usize> {
    let table = &target.table;
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(ident_name)
        .collect();
    let no_such_column = |column: &str| {
        PgError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!(
                "column \"{column}\" of relation \"{}\" does not exist",
                table.name
            ),
        )
    };
    match parts.as_slice() {
        [column] => table
            .column_index(column)
            .ok_or_else(|| no_such_column(column)),
        // `t.a`: PostgreSQL reads `t` as a column (whose field `a` is set).
        [first, ..] if table.column_index(first).is_none() => {
            let qualified = *first == table.name
                || quote(first) == target.reference
                || *first == target.reference;
            let error = no_such_column(first);
            Err(if qualified {
                error.with_hint("SET target columns cannot be qualified with the relation name.")
            } else {
                error
            })
        }
        _ => Err(PgError::unsupported(format!(
            "assigning to part of a column is not supported: {name}"
        ))),
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The `(block, offset)` of each `ctid` text (`(12,3)`) of a batch, in row order.
pub(crate) fn ctids(column: &dyn Array) -> PgResult<Vec<(u32, u16)>> {
    let texts = column
        .as_string_opt::<i32>()
        .ok_or_else(|| PgError::internal("ctid is not text"))?;
    texts
        .iter()
        .map(|text| {
            text.and_then(|t| t.strip_prefix('('))
                .and_then(|t| t.strip_suffix(')'))
                .and_then(|t| t.split_once(','))
                .and_then(|(b, o)| Some((b.parse().ok()?, o.parse().ok()?)))
                .ok_or_else(|| PgError::internal(format!("bad ctid {text:?}")))
        })
        .collect()
}

fn arrow_error(e: datafusion::arrow::error::ArrowError) -> PgError {
    PgError::internal(e.to_string())
}
