//! INSERT … VALUES / INSERT … SELECT / INSERT … DEFAULT VALUES: the source runs through
//! DataFusion, each batch is converted to the table's column types with PostgreSQL's
//! assignment casts, the columns it leaves out get their defaults (`defaults`), and the
//! rows are appended to the heap by the statement's transaction. With RETURNING, each batch as stored (and
//! where each row went) also goes through the RETURNING list (see `returning`).

use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{new_null_array, ArrayRef, UInt32Array};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::sql::sqlparser::ast;
use futures::StreamExt;
use iolab_catalog::{sqlstate, PgError, PgResult, PgType, TableDef};
use iolab_engine::btree::IndexMaintainer;
use iolab_engine::heap::heapam::HeapInserter;
use iolab_engine::values::assign::{failing_row_detail, first_null};
use iolab_engine::values::{assign_cast_with, check_not_null, TextFormat};
use iolab_engine::Database;

use crate::sql::ddl::{ident_name, split_name};
use crate::sql::defaults::{self, Defaults};
use crate::sql::returning::{self, Returning};
use crate::sql::upsert::{Upsert, Upserting};
use crate::sql::{Outcome, StatementRun};

/// Rows between two progress lines in the server log.
pub const PROGRESS_EVERY_ROWS: u64 = 1_000_000;

/// Runs an INSERT: its command tag (`INSERT 0 n`), or with RETURNING its rows.
pub async fn insert(run: &StatementRun, insert: &ast::Insert) -> PgResult<Outcome> {
    let prepared = prepare(run, insert).await?;
    let stream = match &prepared.source {
        Some(source) => {
            run.query_stream_in_order(&ast::Statement::Query(source.clone()))
                .await?
        }
        None => one_empty_row()?,
    };
    let mut returning = match &insert.returning {
        Some(items) => {
            let target = returning::Target {
                table: prepared.table.clone(),
                alias: insert.table_alias.as_ref().map(|a| ident_name(&a.alias)),
                reads_others: false,
            };
            Some(Returning::plan(run, &target, items).await?)
        }
        None => None,
    };
    let counts = prepared.write(run, stream, returning.as_mut()).await?;
    match returning {
        Some(returning) => returning.into_outcome("INSERT 0"),
        None => Ok(Outcome::Done(format!("INSERT 0 {}", counts.written()))),
    }
}

/// An INSERT checked and planned up to its source's rows: what INSERT and EXPLAIN run.
pub struct PreparedInsert {
    pub table: TableDef,
    targets: Vec<usize>,
    /// Does the statement list its columns? (Without, a shorter source row fills the
    /// first columns and the rest get their defaults, as in PostgreSQL.)
    column_list: bool,
    /// The source query, its DEFAULT items replaced; `None` for DEFAULT VALUES.
    pub source: Option<Box<ast::Query>>,
    /// ON CONFLICT, if any.
    pub on_conflict: Option<OnConflict>,
}

/// An INSERT's ON CONFLICT clause, planned.
pub struct OnConflict {
    /// The arbiter indexes (`on_conflict`).
    arbiters: Vec<u32>,
    /// DO UPDATE's SET list and condition; `None` for DO NOTHING.
    upsert: Option<Upsert>,
    /// What EXPLAIN shows: the arbiters' names when the clause names a target, and DO
    /// UPDATE's WHERE condition as written.
    pub shown_arbiters: Option<Vec<String>>,
    pub filter: Option<String>,
}

impl OnConflict {
    /// `NOTHING` or `UPDATE`.
    pub fn resolution(&self) -> &'static str {
        match self.upsert {
            Some(_) => "UPDATE",
            None => "NOTHING",
        }
    }
}

/// What an INSERT wrote.
#[derive(Clone, Copy, Debug, Default)]
pub struct InsertCounts {
    pub inserted: u64,
    /// Rows ON CONFLICT DO UPDATE updated.
    pub updated: u64,
    /// Proposed rows that met an arbiter's key (EXPLAIN's `Conflicting Tuples`), and those
    /// of them DO UPDATE's WHERE turned away.
    pub conflicting: u64,
    pub filtered: u64,
}

impl InsertCounts {
    /// The rows the command tag counts: inserted and updated.
    pub fn written(&self) -> u64 {
        self.inserted + self.updated
    }
}

/// Checks `insert` and plans what it needs before its source runs.
pub async fn prepare(run: &StatementRun, insert: &ast::Insert) -> PgResult<PreparedInsert> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(PgError::unsupported(
            "INSERT into a table function is not supported",
        ));
    };
    crate::sql::view::refuse_write(&run.db, name, "insert into")?;
    let (schema, table_name) = split_name(name)?;
    let table = run.resolve_table(schema.as_deref(), &table_name)?;
    let on_conflict = match &insert.on {
        Some(on) => Some(plan_on_conflict(run, &table, insert, on).await?),
        None => None,
    };
    let mut targets = match &insert.source {
        Some(_) => target_columns(&table, &insert.columns)?,
        None => Vec::new(), // DEFAULT VALUES
    };
    // Without a column list, a VALUES row shorter than the table fills its first columns.
    if let (true, Some(source)) = (insert.columns.is_empty(), &insert.source) {
        if let ast::SetExpr::Values(values) = source.body.as_ref() {
            let width = values.rows.first().map_or(0, |row| row.len());
            targets.truncate(width);
        }
    }
    let column_defaults = run.db.catalog.column_defaults(table.oid);
    let overriding = defaults::says_overriding_system_value(insert);
    defaults::check_identity(
        insert.source.as_deref(),
        &table,
        &targets,
        &column_defaults,
        overriding,
    )?;
    let source = match &insert.source {
        Some(source) => {
            let mut source = source.clone();
            defaults::replace_default_keywords(&mut source, &table, &targets, &column_defaults)?;
            Some(source)
        }
        None => None,
    };
    Ok(PreparedInsert {
        table,
        targets,
        column_list: !insert.columns.is_empty(),
        source,
        on_conflict,
    })
}

async fn plan_on_conflict(
    run: &StatementRun,
    table: &TableDef,
    insert: &ast::Insert,
    on: &ast::OnInsert,
) -> PgResult<OnConflict> {
    let arbiters = crate::sql::on_conflict::arbiters(&run.db, table, on)?;
    let ast::OnInsert::OnConflict(clause) = on else {
        unreachable!("arbiters accepts ON CONFLICT only");
    };
    let (upsert, filter) = match &clause.action {
        ast::OnConflictAction::DoNothing => (None, None),
        ast::OnConflictAction::DoUpdate(update) => {
            let alias = insert.table_alias.as_ref().map(|a| &a.alias);
            let upsert = Upsert::plan(run, table, alias, update).await?;
            (
                Some(upsert),
                update.selection.as_ref().map(|c| format!("({c})")),
            )
        }
    };
    let shown_arbiters = clause.conflict_target.as_ref().map(|_| {
        (arbiters.iter())
            .filter_map(|&oid| run.db.catalog.index_by_oid(oid).map(|i| i.name))
            .collect()
    });
    Ok(OnConflict {
        arbiters,
        upsert,
        shown_arbiters,
        filter,
    })
}

impl PreparedInsert {
    /// Inserts the rows of `stream` (the source's), giving them to `returning` too.
    pub async fn write(
        &self,
        run: &StatementRun,
        stream: datafusion::execution::SendableRecordBatchStream,
        returning: Option<&mut Returning>,
    ) -> PgResult<InsertCounts> {
        let mut targets = self.targets.clone();
        if !self.column_list {
            // … and so does a query's row.
            targets.truncate(stream.schema().fields().len());
        }
        let fill = Defaults::for_statement(run, &self.table, &targets).await?;
        let sink = Sink {
            defaults: &fill,
            arbiters: self.on_conflict.as_ref().map_or(&[], |c| &c.arbiters),
            upsert: self.on_conflict.as_ref().and_then(|c| c.upsert.as_ref()),
            returning,
        };
        insert_returning(run, &self.table, &targets, stream, sink).await
    }
}

/// The source of `INSERT … DEFAULT VALUES`: one row without columns.
fn one_empty_row() -> PgResult<datafusion::execution::SendableRecordBatchStream> {
    use datafusion::arrow::datatypes::Schema;
    use datafusion::arrow::record_batch::RecordBatchOptions;
    let schema = Arc::new(Schema::empty());
    let options = RecordBatchOptions::new().with_row_count(Some(1));
    let batch = RecordBatch::try_new_with_options(schema.clone(), vec![], &options)
        .map_err(|e| PgError::internal(e.to_string()))?;
    let stream =
        datafusion::physical_plan::memory::MemoryStream::try_new(vec![batch], schema, None)
            .map_err(crate::errors::from_datafusion)?;
    Ok(Box::pin(stream))
}

/// The types PostgreSQL gives the `$n` that are whole items of an INSERT's VALUES list:
/// their target columns' (`INSERT INTO t (a, b) VALUES ($1, $2)` takes an `a` and a `b`),
/// as `(n, type)`. DataFusion would leave them untyped (the extended protocol's Parse then
/// reports them as text). Except `numeric`, which stays text: iolab cannot read a binary
/// numeric parameter, and a client told `numeric` may send one.
pub fn parameter_types(
    db: &Database,
    temp: Option<&str>,
    insert: &ast::Insert,
) -> PgResult<Vec<(usize, PgType)>> {
    let (ast::TableObject::TableName(name), Some(source)) = (&insert.table, &insert.source) else {
        return Ok(vec![]);
    };
    let ast::SetExpr::Values(values) = source.body.as_ref() else {
        return Ok(vec![]);
    };
    let (schema, table_name) = split_name(name)?;
    let table = db
        .catalog
        .resolve_in(temp, schema.as_deref(), &table_name)?;
    let targets = target_columns(&table, &insert.columns)?;
    let mut types = Vec::new();
    for row in &values.rows {
        for (item, &column) in row.iter().zip(&targets) {
            let ast::Expr::Value(value) = item else {
                continue;
            };
            let ast::Value::Placeholder(placeholder) = &value.value else {
                continue;
            };
            let ty = table.columns[column].ty;
            let n = placeholder.strip_prefix('$').and_then(|n| n.parse().ok());
            match n {
                Some(n) if n > 0 && !matches!(ty, PgType::Numeric { .. }) => types.push((n, ty)),
                _ => {}
            }
        }
    }
    Ok(types)
}

/// The table column index each source column goes to.
pub fn target_columns(table: &TableDef, columns: &[ast::ObjectName]) -> PgResult<Vec<usize>> {
    if columns.is_empty() {
        return Ok((0..table.columns.len()).collect());
    }
    let mut targets = Vec::with_capacity(columns.len());
    for col in columns {
        let name = col
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(ident_name)
            .unwrap_or_default();
        let idx = table.column_index(&name).ok_or_else(|| {
            PgError::new(
                sqlstate::UNDEFINED_COLUMN,
                format!(
                    "column \"{name}\" of relation \"{}\" does not exist",
                    table.name
                ),
            )
        })?;
        if targets.contains(&idx) {
            return Err(PgError::syntax(format!(
                "column \"{name}\" specified more than once"
            )));
        }
        targets.push(idx);
    }
    Ok(targets)
}

/// Inserts every batch of `stream` into `table`; source column i goes to `targets[i]`.
pub async fn insert_stream(
    run: &StatementRun,
    table: &TableDef,
    targets: &[usize],
    stream: datafusion::execution::SendableRecordBatchStream,
) -> PgResult<u64> {
    let sink = Sink {
        defaults: &Defaults::none(),
        arbiters: &[],
        upsert: None,
        returning: None,
    };
    Ok(insert_returning(run, table, targets, stream, sink)
        .await?
        .written())
}

/// Where an INSERT's rows go besides the table.
pub struct Sink<'a> {
    /// What the columns the source leaves out get.
    pub defaults: &'a Defaults,
    /// ON CONFLICT's arbiter indexes (`on_conflict`); empty without one.
    pub arbiters: &'a [u32],
    /// ON CONFLICT DO UPDATE's SET list and condition.
    pub upsert: Option<&'a Upsert>,
    /// The RETURNING list, given the rows inserted.
    pub returning: Option<&'a mut Returning>,
}

/// [`insert_stream`], with defaults, ON CONFLICT and RETURNING as `sink` says.
pub async fn insert_returning(
    run: &StatementRun,
    table: &TableDef,
    targets: &[usize],
    stream: datafusion::execution::SendableRecordBatchStream,
    sink: Sink<'_>,
) -> PgResult<InsertCounts> {
    let Sink {
        defaults,
        arbiters,
        upsert,
        mut returning,
    } = sink;
    let source_width = stream.schema().fields().len();
    if source_width > targets.len() {
        return Err(PgError::syntax(
            "INSERT has more expressions than target columns",
        ));
    }
    if source_width < targets.len() {
        return Err(PgError::syntax(
            "INSERT has more target columns than expressions",
        ));
    }
    let mut inserter = table_inserter(run, table)?.skipping_conflicts_in(arbiters);
    if returning.is_some() {
        inserter = inserter.keep_placed();
    }
    if upsert.is_some() {
        inserter = inserter.stopping_after_conflicts();
    }
    let mut upserting = match upsert {
        Some(upsert) => Some(Upserting::start(run, upsert)?),
        None => None,
    };
    let mut counts = InsertCounts::default();
    let started = Instant::now();
    let mut next_progress = PROGRESS_EVERY_ROWS;
    let result = for_each_batch(run, stream, |batch| {
        let mut proposed = table_arrays(run, table, targets, &batch, defaults)?;
        // The batch row each row of `proposed` is.
        let mut positions: Vec<usize> = (0..batch.num_rows()).collect();
        let mut written = Written::default();
        loop {
            // The rows from the first whose conflicting row was deleted or updated
            // meanwhile on (see `upsert`'s module comment).
            let mut again = Vec::new();
            let mut start = 0;
            while start < positions.len() {
                let end = inserter.insert_arrays_from(&proposed, start..positions.len())?;
                let skipped = inserter.skipped().to_vec();
                counts.conflicting += skipped.len() as u64;
                if returning.is_some() {
                    let mut inserted = vec![false; positions.len()];
                    inserted[start..end].fill(true);
                    for &(row, _) in &skipped {
                        inserted[row] = false;
                    }
                    let rows: Vec<usize> = (positions.iter().zip(&inserted))
                        .filter_map(|(&p, &i)| i.then_some(p))
                        .collect();
                    let inserted = datafusion::arrow::array::BooleanArray::from(inserted);
                    let values = crate::sql::dml::only(&proposed, &inserted)?;
                    written.add(rows.into_iter(), values, inserter.placed());
                }
                start = end;
                let Some(upserting) = &mut upserting else {
                    continue;
                };
                let updated = upserting.update(run, &proposed, &skipped)?;
                counts.filtered += updated.filtered;
                if returning.is_some() {
                    let rows = updated.rows.iter().map(|&r| positions[r]);
                    written.add(rows, updated.values, &updated.placed);
                }
                if !updated.again.is_empty() {
                    again.extend(updated.again);
                    again.extend(start..positions.len());
                    break;
                }
            }
            if again.is_empty() {
                break;
            }
            // Insert (or update) those again.
            let again_rows = UInt32Array::from_iter_values(again.iter().map(|&r| r as u32));
            proposed = (proposed.iter())
                .map(|a| datafusion::arrow::compute::take(a, &again_rows, None))
                .collect::<Result<_, _>>()
                .map_err(|e| PgError::internal(e.to_string()))?;
            positions = again.iter().map(|&r| positions[r]).collect();
        }
        if let Some(returning) = returning.as_deref_mut() {
            let (values, tids) = written.in_row_order()?;
            returning.add(&values, &tids)?;
        }
        if inserter.inserted >= next_progress {
            tracing::info!(
                table = %table.name,
                rows = inserter.inserted,
                seconds = started.elapsed().as_secs_f64(),
                "INSERT in progress"
            );
            next_progress += PROGRESS_EVERY_ROWS;
        }
        Ok(())
    })
    .await;
    inserter.finish();
    run.ctx.add_usage(&inserter.acct.usage);
    counts.inserted = inserter.inserted;
    counts.updated = upserting.as_ref().map_or(0, Upserting::updated);
    if let Some(upserting) = upserting {
        upserting.finish(run);
    }
    result?;
    Ok(counts)
}

/// The rows a batch wrote (inserted, or updated by ON CONFLICT DO UPDATE), for RETURNING:
/// each with its row in the batch, to be returned in that order as PostgreSQL does.
#[derive(Default)]
struct Written {
    rows: Vec<usize>,
    values: Vec<Vec<ArrayRef>>,
    tids: Vec<(u32, u16)>,
}

impl Written {
    fn add(
        &mut self,
        rows: impl Iterator<Item = usize>,
        values: Vec<ArrayRef>,
        tids: &[(u32, u16)],
    ) {
        // An empty part adds nothing (and an upsert's has no columns); the first is kept
        // for the columns' types.
        if tids.is_empty() && !self.values.is_empty() {
            return;
        }
        self.rows.extend(rows);
        self.values.push(values);
        self.tids.extend_from_slice(tids);
        assert_eq!(
            self.rows.len(),
            self.tids.len(),
            "a batch row for each row written"
        );
    }

    /// The values and ctids of the rows written, in batch row order.
    fn in_row_order(self) -> PgResult<(Vec<ArrayRef>, Vec<(u32, u16)>)> {
        let arrow = |e: datafusion::arrow::error::ArrowError| PgError::internal(e.to_string());
        if self.values.len() == 1 {
            let values = self.values.into_iter().next().expect("one part");
            return Ok((values, self.tids));
        }
        let mut order: Vec<u32> = (0..self.rows.len() as u32).collect();
        order.sort_by_key(|&i| self.rows[i as usize]);
        let order = UInt32Array::from(order);
        let columns = self.values.first().map_or(0, Vec::len);
        let values = (0..columns)
            .map(|c| {
                let parts: Vec<&dyn datafusion::arrow::array::Array> =
                    self.values.iter().map(|v| v[c].as_ref()).collect();
                let all = datafusion::arrow::compute::concat(&parts).map_err(arrow)?;
                datafusion::arrow::compute::take(&all, &order, None).map_err(arrow)
            })
            .collect::<PgResult<Vec<_>>>()?;
        let tids = order
            .values()
            .iter()
            .map(|&i| self.tids[i as usize])
            .collect();
        Ok((values, tids))
    }
}

/// The statement's inserter into `table`: through its indexes, filling the space the free
/// space map knows of and clearing the visibility map's marks (INSERT, COPY, UPDATE).
pub fn table_inserter(run: &StatementRun, table: &TableDef) -> PgResult<HeapInserter> {
    Ok(HeapInserter::new(
        run.db.pool.clone(),
        run.db.relfile(table.relfilenode)?,
        iolab_engine::heap::codec::TupleLayout::for_table(table),
        run.xid()?,
        run.ctx.cid,
        run.ctx.new_account(),
    )
    .with_indexes(IndexMaintainer::for_table(&run.ctx, table)?)
    .with_maps(run.db.fsm.clone(), run.db.vm.clone()))
}

/// Hands each batch of `stream` to `apply`, on a thread that may block (the heap's page
/// reads and writes, waits for other transactions), checking for cancellation in between.
pub async fn for_each_batch(
    run: &StatementRun,
    mut stream: datafusion::execution::SendableRecordBatchStream,
    mut apply: impl FnMut(RecordBatch) -> PgResult<()>,
) -> PgResult<()> {
    while let Some(batch) = stream.next().await {
        run.ctx.check_cancel()?;
        let batch = batch.map_err(crate::errors::from_datafusion)?;
        tokio::task::block_in_place(|| apply(batch))?;
    }
    Ok(())
}

/// Converts a source batch to the table's full row shape with assignment casts and the
/// defaults of the columns it leaves out.
pub fn table_arrays(
    run: &StatementRun,
    table: &TableDef,
    targets: &[usize],
    batch: &RecordBatch,
    defaults: &Defaults,
) -> PgResult<Vec<ArrayRef>> {
    let cast = targets
        .iter()
        .enumerate()
        .map(|(src, &dst)| {
            let col = &table.columns[dst];
            assign_cast_with(batch.column(src), col.ty, &col.name, &run.text_format)
        })
        .collect::<PgResult<Vec<_>>>()?;
    complete_rows(
        table,
        targets,
        cast,
        batch.num_rows(),
        &run.text_format,
        defaults,
    )
}

/// Puts column `i` of `given` (of the table's types) into table column `targets[i]`,
/// fills the other columns with their defaults (or NULL), and checks NOT NULL.
pub fn complete_rows(
    table: &TableDef,
    targets: &[usize],
    given: Vec<ArrayRef>,
    rows: usize,
    fmt: &TextFormat,
    defaults: &Defaults,
) -> PgResult<Vec<ArrayRef>> {
    let mut arrays: Vec<Option<ArrayRef>> = vec![None; table.columns.len()];
    for (array, &dst) in given.into_iter().zip(targets) {
        arrays[dst] = Some(array);
    }
    let arrays: Vec<ArrayRef> = arrays
        .into_iter()
        .enumerate()
        .map(|(i, a)| match a {
            Some(a) => Ok(a),
            None => Ok(defaults
                .fill(i, rows)?
                .unwrap_or_else(|| new_null_array(&table.columns[i].ty.arrow_type(), rows))),
        })
        .collect::<PgResult<_>>()?;
    for (col, array) in table.columns.iter().zip(&arrays) {
        if let (true, Some(row)) = (col.not_null, first_null(array.as_ref())) {
            let err = check_not_null(array.as_ref(), &col.name, &table.name)
                .expect_err("the column has a NULL");
            return Err(err.with_detail(failing_row_detail(&arrays, row, fmt)));
        }
    }
    Ok(arrays)
}
