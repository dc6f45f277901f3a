//! INSERT … VALUES / INSERT … SELECT / INSERT … DEFAULT VALUES: the source runs through
//! DataFusion, each batch is converted to the table's column types with PostgreSQL's
//! assignment casts, the columns it leaves out get their defaults (`defaults`), and the
//! rows are appended to the heap by the statement's transaction. With RETURNING, each batch as stored (and
//! where each row went) also goes through the RETURNING list (see `returning`).

use std::sync::Arc;
use std::time::Instant;

use datafusion::arrow::array::{new_null_array, ArrayRef};
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
use crate::sql::{Outcome, StatementRun};

/// Rows between two progress lines in the server log.
pub const PROGRESS_EVERY_ROWS: u64 = 1_000_000;

/// Runs an INSERT: its command tag (`INSERT 0 n`), or with RETURNING its rows.
pub async fn insert(run: &StatementRun, insert: &ast::Insert) -> PgResult<Outcome> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(PgError::unsupported(
            "INSERT into a table function is not supported",
        ));
    };
    crate::sql::view::refuse_write(&run.db, name, "insert into")?;
    let (schema, table_name) = split_name(name)?;
    let table = run.db.catalog.resolve(schema.as_deref(), &table_name)?;
    let arbiters = match &insert.on {
        Some(on) => Some(crate::sql::on_conflict::arbiters(&run.db, &table, on)?),
        None => None,
    };
    let targets = match &insert.source {
        Some(_) => target_columns(&table, &insert.columns)?,
        None => Vec::new(), // DEFAULT VALUES
    };
    let column_defaults = run.db.catalog.column_defaults(table.oid);
    let overriding = defaults::says_overriding_system_value(insert);
    defaults::check_identity(
        insert.source.as_deref(),
        &table,
        &targets,
        &column_defaults,
        overriding,
    )?;
    let stream = match &insert.source {
        Some(source) => {
            let mut source = source.clone();
            defaults::replace_default_keywords(&mut source, &table, &targets, &column_defaults)?;
            run.query_stream(&ast::Statement::Query(source)).await?
        }
        None => one_empty_row()?,
    };
    let fill = Defaults::for_statement(run, &table, &targets).await?;
    let mut returning = match &insert.returning {
        Some(items) => {
            let target = returning::Target {
                table: table.clone(),
                alias: insert.table_alias.as_ref().map(|a| ident_name(&a.alias)),
                reads_others: false,
            };
            Some(Returning::plan(run, &target, items).await?)
        }
        None => None,
    };
    let sink = Sink {
        defaults: &fill,
        arbiters: arbiters.as_deref().unwrap_or_default(),
        returning: returning.as_mut(),
    };
    let inserted = insert_returning(run, &table, &targets, stream, sink).await?;
    match returning {
        Some(returning) => returning.into_outcome("INSERT 0"),
        None => Ok(Outcome::Done(format!("INSERT 0 {inserted}"))),
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
pub fn parameter_types(db: &Database, insert: &ast::Insert) -> PgResult<Vec<(usize, PgType)>> {
    let (ast::TableObject::TableName(name), Some(source)) = (&insert.table, &insert.source) else {
        return Ok(vec![]);
    };
    let ast::SetExpr::Values(values) = source.body.as_ref() else {
        return Ok(vec![]);
    };
    let (schema, table_name) = split_name(name)?;
    let table = db.catalog.resolve(schema.as_deref(), &table_name)?;
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
        returning: None,
    };
    insert_returning(run, table, targets, stream, sink).await
}

/// Where an INSERT's rows go besides the table.
pub struct Sink<'a> {
    /// What the columns the source leaves out get.
    pub defaults: &'a Defaults,
    /// ON CONFLICT DO NOTHING's arbiter indexes (`on_conflict`); empty without one.
    pub arbiters: &'a [u32],
    /// The RETURNING list, given the rows inserted.
    pub returning: Option<&'a mut Returning>,
}

/// [`insert_stream`], with defaults, ON CONFLICT DO NOTHING and RETURNING as `sink` says.
pub async fn insert_returning(
    run: &StatementRun,
    table: &TableDef,
    targets: &[usize],
    stream: datafusion::execution::SendableRecordBatchStream,
    sink: Sink<'_>,
) -> PgResult<u64> {
    let Sink {
        defaults,
        arbiters,
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
    let started = Instant::now();
    let mut next_progress = PROGRESS_EVERY_ROWS;
    let result = for_each_batch(run, stream, |batch| {
        let arrays = table_arrays(run, table, targets, &batch, defaults)?;
        inserter.insert_arrays(&arrays, batch.num_rows())?;
        if let Some(returning) = returning.as_deref_mut() {
            let arrays = without_rows(arrays, batch.num_rows(), inserter.skipped())?;
            returning.add(&arrays, inserter.placed())?;
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
    result?;
    Ok(inserter.inserted)
}

/// `arrays` (of `rows` rows) without the rows `left_out` (ascending).
fn without_rows(arrays: Vec<ArrayRef>, rows: usize, left_out: &[usize]) -> PgResult<Vec<ArrayRef>> {
    if left_out.is_empty() {
        return Ok(arrays);
    }
    let mut keep = vec![true; rows];
    for &row in left_out {
        keep[row] = false;
    }
    let mask = datafusion::arrow::array::BooleanArray::from(keep);
    arrays
        .iter()
        .map(|a| {
            datafusion::arrow::compute::filter(a.as_ref(), &mask).map_err(|e| PgError::internal(e.to_string()))
        })
        .collect()
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
