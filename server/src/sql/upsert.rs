//! `INSERT … ON CONFLICT (target) DO UPDATE SET … [WHERE …]`: PostgreSQL's upsert.
//!
//! ```text
//! INSERT INTO t AS x VALUES (…) ON CONFLICT (k) DO UPDATE SET v = x.v + excluded.v WHERE x.v < 10
//! ```
//!
//! The insert runs as ON CONFLICT DO NOTHING does (`on_conflict`, and the engine's
//! `btree::maintain`): each proposed row goes in, or is left out together with where the
//! row that has its key is. Rows are taken in their order, as PostgreSQL takes them, so
//! that statements proposing keys in one order wait for each other in that order and do
//! not deadlock: the insert stops before the first row it would insert after a run of
//! rows left out, and those rows update the rows they met before it goes on:
//!
//! 1. the rows they conflict with are read by TID (`heap::fetch`). One that this command
//!    wrote itself (inserted, or updated already), or one two proposed rows meet, is
//!    PostgreSQL's 21000 `ON CONFLICT DO UPDATE command cannot affect row a second time`;
//! 2. the new values (each column's assigned expression, or the column itself) and the
//!    WHERE condition were planned once, before anything was written, as
//!    `SELECT <new values>, (<condition>) IS TRUE FROM t AS x, excluded` against empty
//!    stand-ins of the two (so PostgreSQL's errors come before any write), into
//!    expressions over (x's columns, ctid, excluded's columns, ctid); each batch of
//!    (existing row, proposed row) pairs goes through them. A bare column name both have
//!    is ambiguous (42702), as in PostgreSQL;
//! 3. the rows whose condition holds are updated as UPDATE updates (`dml`): old version
//!    stamped, new version appended through the indexes (a unique violation there fails
//!    the statement), the two linked.
//!
//! A conflicting row another transaction deleted or updated between steps 1 and 3 sends
//! its proposed row, and every proposed row after it, back to step 1 before any of those
//! is written: to be inserted, or to meet the newer version (as PostgreSQL's READ
//! COMMITTED does, without a serialization error). Rows after it wait, so that the
//! statement still takes its rows in their order (going on past it and coming back
//! would hold a later row while waiting for an earlier one: a deadlock with a statement
//! taking the same keys in the same order). The command tag and
//! RETURNING count the rows inserted and the rows updated.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringArray};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::sql::sqlparser::ast;
use iolab_catalog::{PgError, PgResult, TableDef};
use iolab_engine::exec::table::table_schema;
use iolab_engine::heap::delete::{Deleted, HeapDeleter};
use iolab_engine::heap::fetch;
use iolab_engine::heap::heapam::HeapInserter;

use crate::errors::from_datafusion;
use crate::sql::returning::{bind, simplified, stand_ins_state};
use crate::sql::{dml, parse, plan_statement, Parsed, StatementRun};

/// The SET list and WHERE condition of a DO UPDATE, planned (see the module comment).
pub struct Upsert {
    table: TableDef,
    /// What the expressions read: the target's columns and ctid, then excluded's.
    input: SchemaRef,
    /// The new value of each column of the table, then the condition.
    exprs: Vec<Arc<dyn PhysicalExpr>>,
}

/// What became of a batch's conflicting rows.
pub struct Updated {
    /// The proposed rows that updated a row, the new versions' values (table columns) and
    /// where they went: RETURNING's input.
    pub rows: Vec<usize>,
    pub values: Vec<ArrayRef>,
    pub placed: Vec<(u32, u16)>,
    /// The first proposed row whose conflicting row was deleted or updated meanwhile,
    /// and the conflicting rows after it: to be proposed again, before anything after.
    pub again: Vec<usize>,
    /// Conflicting rows the WHERE condition left as they were.
    pub filtered: u64,
}

impl Upsert {
    /// Plans `update` for an insert into `table` (`alias`: `INSERT INTO t AS alias`).
    pub async fn plan(
        run: &StatementRun,
        table: &TableDef,
        alias: Option<&ast::Ident>,
        update: &ast::DoUpdate,
    ) -> PgResult<Upsert> {
        let defaults = run.db.catalog.column_defaults(table.oid);
        let mut items = dml::upsert_values(table, alias, &update.assignments, &defaults)?;
        items.push(match &update.selection {
            Some(condition) => format!("({condition}) IS TRUE"),
            None => "true".to_string(),
        });
        let table_name = ast::Ident::with_quote('"', &table.name);
        let from = match alias {
            Some(alias) => format!("{table_name} AS {alias}"),
            None => table_name.to_string(),
        };
        let sql = format!("SELECT {} FROM {from}, excluded", items.join(", "));
        let Parsed::Sql(query) = parse(&sql, &sql, 0)? else {
            return Err(PgError::internal("the DO UPDATE list did not parse"));
        };
        let columns = table_schema(table, true);
        let state = stand_ins_state(
            &run.state,
            &[(&table.name, columns.clone()), ("excluded", columns)],
        )?;
        let param_types: Vec<_> = (run.params.iter().flatten())
            .map(|v| Some(v.data_type()))
            .collect();
        let plan = plan_statement(&state, &query, &param_types).await?;
        let plan = match &run.params {
            Some(values) => bind(plan, values)?,
            None => plan,
        };
        let LogicalPlan::Projection(projection) = simplified(&state, plan)? else {
            return Err(PgError::unsupported(
                "ON CONFLICT DO UPDATE is supported with expressions over the two rows only",
            ));
        };
        let input = projection.input.schema();
        let exprs = (projection.expr.iter())
            .map(|e| state.create_physical_expr(e.clone(), input))
            .collect::<datafusion::error::Result<Vec<_>>>()
            .map_err(from_datafusion)?;
        assert_eq!(exprs.len(), table.columns.len() + 1);
        let fields: Vec<Field> = (input.fields().iter())
            .map(|f| f.as_ref().clone().with_nullable(true))
            .collect();
        Ok(Upsert {
            table: table.clone(),
            input: Arc::new(Schema::new(fields)),
            exprs,
        })
    }

    /// Steps 1 to 3 of the module comment for the `conflicts` (each a row of `proposed`
    /// and where the row with its key is) of a batch whose rows, in the table's columns
    /// and types, are `proposed`.
    pub fn apply(
        &self,
        run: &StatementRun,
        proposed: &[ArrayRef],
        conflicts: &[(usize, (u32, u16))],
        deleter: &mut HeapDeleter,
        inserter: &mut HeapInserter,
    ) -> PgResult<Updated> {
        let mut updated = Updated {
            rows: Vec::new(),
            values: Vec::new(),
            placed: Vec::new(),
            again: Vec::new(),
            filtered: 0,
        };
        if conflicts.is_empty() {
            return Ok(updated);
        }
        let tids: Vec<_> = conflicts.iter().map(|&(_, tid)| tid).collect();
        let rel = run.db.relfile(self.table.relfilenode)?;
        let existing = fetch::fetch(&run.db.pool, &rel, &self.table, &tids, &mut deleter.acct)?;
        let mut seen = HashSet::with_capacity(tids.len());
        for (tid, &(xmin, cid)) in tids.iter().zip(&existing.written_by) {
            if (xmin == run.ctx.xid && cid == run.ctx.cid) || !seen.insert(*tid) {
                return Err(affects_row_twice());
            }
        }
        // (existing row, proposed row) pairs, in the stand-ins' columns.
        let rows: Vec<u32> = conflicts.iter().map(|&(row, _)| row as u32).collect();
        let rows = datafusion::arrow::array::UInt32Array::from(rows);
        let mut columns = existing.batch.columns().to_vec();
        for array in proposed {
            columns.push(datafusion::arrow::compute::take(array, &rows, None).map_err(arrow)?);
        }
        columns.push(Arc::new(StringArray::from(vec![None::<&str>; tids.len()])));
        let pairs = RecordBatch::try_new(self.input.clone(), columns).map_err(arrow)?;
        let mut results = (self.exprs.iter())
            .map(|e| {
                e.evaluate(&pairs)
                    .and_then(|v| v.into_array(pairs.num_rows()))
                    .map_err(from_datafusion)
            })
            .collect::<PgResult<Vec<_>>>()?;
        let condition = results.pop().expect("the condition");
        let condition = condition.as_boolean();
        // The old versions of the rows to update first: only those still there change.
        let mut keep = Vec::with_capacity(tids.len());
        for (i, &(row, tid)) in conflicts.iter().enumerate() {
            if !updated.again.is_empty() {
                updated.again.push(row);
                keep.push(false);
                continue;
            }
            let update = condition.value(i) && condition.is_valid(i);
            let changed =
                update && deleter.try_delete(tid, &|| run.ctx.check_cancel())? == Deleted::Now;
            if update && !changed {
                updated.again.push(row);
                keep.push(false);
                continue;
            }
            if changed {
                updated.rows.push(row);
            }
            updated.filtered += u64::from(!update);
            keep.push(changed);
        }
        let keep = datafusion::arrow::array::BooleanArray::from(keep);
        // The new values as the expressions typed them; `table_arrays` applies the
        // assignment casts to the columns' types.
        let fields: Vec<Field> = (results.iter().zip(&self.table.columns))
            .map(|(a, c)| Field::new(&c.name, a.data_type().clone(), true))
            .collect();
        let new_rows =
            RecordBatch::try_new(Arc::new(Schema::new(fields)), results).map_err(arrow)?;
        let all_columns: Vec<usize> = (0..self.table.columns.len()).collect();
        let arrays = crate::sql::insert::table_arrays(
            run,
            &self.table,
            &all_columns,
            &new_rows,
            &crate::sql::defaults::Defaults::none(),
        )?;
        let (kept, new) =
            dml::add_new_versions(&self.table, deleter, inserter, &tids, &arrays, &keep)?;
        updated.values = kept;
        updated.placed = new;
        Ok(updated)
    }
}

/// A DO UPDATE in progress: the deleter of old versions and the inserter of new ones.
pub struct Upserting<'a> {
    upsert: &'a Upsert,
    deleter: HeapDeleter,
    inserter: HeapInserter,
}

impl<'a> Upserting<'a> {
    pub fn start(run: &StatementRun, upsert: &'a Upsert) -> PgResult<Upserting<'a>> {
        let table = &upsert.table;
        Ok(Upserting {
            upsert,
            deleter: HeapDeleter::new(
                &run.ctx,
                run.db.relfile(table.relfilenode)?,
                run.ctx.new_account(),
                true,
            )?,
            inserter: crate::sql::insert::table_inserter(run, table)?.for_update(),
        })
    }

    /// Updates the rows the rows `skipped` of `proposed` conflict with (each `(row,
    /// tid)`).
    pub fn update(
        &mut self,
        run: &StatementRun,
        proposed: &[ArrayRef],
        skipped: &[(usize, (u32, u16))],
    ) -> PgResult<Updated> {
        (self.upsert).apply(
            run,
            proposed,
            skipped,
            &mut self.deleter,
            &mut self.inserter,
        )
    }

    /// Rows updated so far.
    pub fn updated(&self) -> u64 {
        self.inserter.inserted
    }

    /// Flushes the statistics and counts the I/O in the statement's usage.
    pub fn finish(mut self, run: &StatementRun) {
        self.inserter.finish();
        self.deleter.finish();
        run.ctx.add_usage(&self.inserter.acct.usage);
        run.ctx.add_usage(&self.deleter.acct.usage);
    }
}

/// PostgreSQL's error when a command would update a row it wrote.
fn affects_row_twice() -> PgError {
    PgError::new(
        "21000",
        "ON CONFLICT DO UPDATE command cannot affect row a second time",
    )
    .with_hint(
        "Ensure that no rows proposed for insertion within the same command have duplicate \
         constrained values.",
    )
}

fn arrow(e: datafusion::arrow::error::ArrowError) -> PgError {
    PgError::internal(e.to_string())
}
