//! A session's SQL cursors: `DECLARE`, `FETCH`, `MOVE`, `CLOSE`, and what `pg_cursors`
//! shows of them.
//!
//! DECLARE plans and starts its query as a SELECT would, but keeps the stream of its rows
//! in the session instead of sending them: the rows are computed as FETCH asks for them,
//! under the snapshot the DECLARE took, so a cursor returns the rows of its declaration
//! as in PostgreSQL. Its plan looks at the DECLARE's cancel flag, and every FETCH or MOVE
//! of the cursor runs under that flag too (the session picks it, [`Cursors::flag_of`]):
//! a cancel or a `statement_timeout` stops a FETCH inside its scan, not only between
//! batches. Such an error fails the transaction, and with it the cursor, so a flag once
//! set is never needed again.
//!
//! A FETCH returns its rows as a stream that owns the cursor while it runs (a second use
//! meanwhile fails with 55000 `portal "c" cannot be run`); where a FETCH stops inside a
//! batch, the rest of the batch waits in the cursor for the next one. [`fetch`] explains
//! directions and positions.
//!
//! A cursor lives until CLOSE or the end of the transaction that declared it. `WITH
//! HOLD` keeps it after COMMIT (or, declared outside a transaction block, after its own
//! statement): its remaining rows are then read, which releases the transaction's
//! snapshot, as PostgreSQL materializes such cursors at commit. Up to `work_mem` of them
//! stay in memory; beyond that they go to one of the session's temporary files
//! (iolab_engine::exec::temp_files: counted, timed, held to `temp_file_limit`, listed by
//! `pg_ls_tmpdir()`) in Arrow's IPC format and are read back from it. ROLLBACK drops the
//! cursors its transaction declared.
//!
//! Bounds: at most [`MAX_CURSORS`] open per session; a cursor keeps at most one batch of
//! rows beside its plan's own buffers.
//!
//! [`fetch`]: crate::sql::fetch

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, SpillMetrics};
use datafusion::physical_plan::spill::{get_record_batch_memory_size, SpillManager};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::sql::sqlparser::ast;
use futures::StreamExt;
use iolab_catalog::{sqlstate, PgError, PgResult};
use iolab_engine::exec::cancel::CancelFlag;

use crate::errors::from_datafusion;
use crate::sql::ddl::ident_name;
use crate::sql::fetch::{self, Count, FetchStmt, Position, Step};
use crate::sql::{Outcome, StatementRun};

/// At most this many cursors are open in one session.
pub const MAX_CURSORS: usize = 256;

/// One open cursor.
pub struct Cursor {
    /// The DECLARE statement's text.
    pub statement: String,
    pub holdable: bool,
    pub created: DateTime<Utc>,
    /// The columns its rows are sent with.
    pub schema: SchemaRef,
    /// The cancel flag its plan looks at; none once its rows come from a file.
    flag: Option<CancelFlag>,
    /// Declared in the open transaction block (its ROLLBACK drops the cursor).
    declared_in_block: bool,
    /// Its place in the order of the session's DECLAREs ([`Cursors::declared`]).
    order: u64,
    rows: Arc<tokio::sync::Mutex<CursorRows>>,
}

impl Cursor {
    /// A cursor over `stream`, whose plan looks at `flag`.
    pub fn new(
        statement: String,
        holdable: bool,
        in_block: bool,
        schema: SchemaRef,
        stream: SendableRecordBatchStream,
        flag: CancelFlag,
    ) -> Cursor {
        Cursor {
            statement,
            holdable,
            created: Utc::now(),
            schema,
            flag: Some(flag),
            declared_in_block: in_block,
            order: 0,
            rows: Arc::new(tokio::sync::Mutex::new(CursorRows {
                stream,
                pending: None,
                at: Position::default(),
            })),
        }
    }

    /// Reads its remaining rows (into memory, or a temporary file beyond `work_mem`) and
    /// from now on returns them from there.
    async fn materialize(&mut self, name: &str, hold: &Hold) -> PgResult<()> {
        if self.flag.is_none() {
            return Ok(());
        }
        let mut rows = self.rows.try_lock().map_err(|_| busy(name))?;
        rows.materialize(hold).await?;
        self.flag = None;
        Ok(())
    }
}

/// A cursor's rows not yet returned, and its position.
struct CursorRows {
    stream: SendableRecordBatchStream,
    /// The rest of the batch the last read stopped in.
    pending: Option<RecordBatch>,
    at: Position,
}

impl CursorRows {
    /// Up to `most` (> 0) next rows; `None` once they ran out (the cursor is then at its
    /// end).
    async fn next_rows(&mut self, most: Count) -> datafusion::error::Result<Option<RecordBatch>> {
        assert_ne!(most, Count::Rows(0), "a read of no rows");
        loop {
            let batch = match self.pending.take() {
                Some(b) => b,
                None => match self.stream.next().await {
                    Some(b) => b?,
                    None => {
                        self.at.at_end = true;
                        return Ok(None);
                    }
                },
            };
            let n = batch.num_rows();
            let take = match most {
                Count::All => n,
                Count::Rows(m) => n.min(usize::try_from(m).unwrap_or(usize::MAX)),
            };
            if take == 0 {
                continue;
            }
            if take < n {
                self.pending = Some(batch.slice(take, n - take));
            }
            self.at.pos += take as u64;
            self.at.at_start = false;
            return Ok(Some(batch.slice(0, take)));
        }
    }

    /// Moves over up to `count` rows, returning how many there were.
    async fn pass_over(&mut self, count: Count) -> PgResult<u64> {
        let mut passed = 0;
        let mut left = count;
        while left != Count::Rows(0) && !self.at.at_end {
            let Some(batch) = self.next_rows(left).await.map_err(from_datafusion)? else {
                break;
            };
            passed += batch.num_rows() as u64;
            left = less(left, batch.num_rows());
        }
        Ok(passed)
    }

    async fn materialize(&mut self, hold: &Hold) -> PgResult<()> {
        let schema = self.stream.schema();
        let mut in_memory: Vec<RecordBatch> = self.pending.take().into_iter().collect();
        let mut held: usize = in_memory.iter().map(get_record_batch_memory_size).sum();
        let mut file = None;
        let spill = SpillManager::new(
            hold.runtime.clone(),
            SpillMetrics::new(&ExecutionPlanMetricsSet::new(), 0),
            schema.clone(),
        );
        while let Some(batch) = self.stream.next().await {
            let batch = batch.map_err(from_datafusion)?;
            held += get_record_batch_memory_size(&batch);
            in_memory.push(batch);
            if held > hold.work_mem_bytes {
                let file = match &mut file {
                    Some(file) => file,
                    None => file.insert(
                        spill
                            .create_in_progress_file("WITH HOLD cursor")
                            .map_err(from_datafusion)?,
                    ),
                };
                for batch in in_memory.drain(..) {
                    file.append_batch(&batch).map_err(from_datafusion)?;
                }
                held = 0;
            }
        }
        let rows: SendableRecordBatchStream = Box::pin(RecordBatchStreamAdapter::new(
            schema.clone(),
            futures::stream::iter(in_memory.into_iter().map(Ok)),
        ));
        self.stream = match file
            .map(|mut f| f.finish())
            .transpose()
            .map_err(from_datafusion)?
        {
            // The file's rows come first, then those still in memory.
            Some(Some(done)) => {
                let from_file = spill
                    .read_spill_as_stream(done, None)
                    .map_err(from_datafusion)?;
                Box::pin(RecordBatchStreamAdapter::new(schema, from_file.chain(rows)))
            }
            _ => rows,
        };
        Ok(())
    }
}

/// Where a WITH HOLD cursor's rows go: the session's runtime (its temporary files), and
/// `work_mem`, the most it keeps in memory.
pub struct Hold {
    pub runtime: Arc<RuntimeEnv>,
    pub work_mem_bytes: usize,
}

/// `count` less `n` rows.
fn less(count: Count, n: usize) -> Count {
    match count {
        Count::All => Count::All,
        Count::Rows(m) => Count::Rows(m.saturating_sub(n as u64)),
    }
}

fn busy(name: &str) -> PgError {
    PgError::new(
        sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
        format!("portal \"{name}\" cannot be run"),
    )
}

fn not_found(name: &str) -> PgError {
    PgError::new(
        sqlstate::INVALID_CURSOR_NAME,
        format!("cursor \"{name}\" does not exist"),
    )
}

/// What `pg_cursors` shows of a cursor.
#[derive(Clone, Debug)]
pub struct CursorInfo {
    pub name: String,
    pub statement: String,
    pub is_holdable: bool,
    pub created: DateTime<Utc>,
}

/// A session's open cursors, by name.
#[derive(Default)]
pub struct Cursors {
    open: BTreeMap<String, Cursor>,
    /// How many cursors the session has declared (each one's `order` is the count
    /// before it).
    declared: u64,
    /// What `pg_cursors` shows, brought up to date after every change.
    listing: Arc<parking_lot::Mutex<Vec<CursorInfo>>>,
}

impl Cursors {
    /// The list `pg_cursors` shows (kept up to date).
    pub fn listing(&self) -> Arc<parking_lot::Mutex<Vec<CursorInfo>>> {
        self.listing.clone()
    }

    fn list(&self) {
        *self.listing.lock() = (self.open.iter())
            .map(|(name, c)| CursorInfo {
                name: name.clone(),
                statement: c.statement.clone(),
                is_holdable: c.holdable,
                created: c.created,
            })
            .collect();
    }

    /// Checks that a cursor named `name` may be declared.
    pub fn check_new(&self, name: &str) -> PgResult<()> {
        if self.open.contains_key(name) {
            return Err(PgError::new(
                "42P03",
                format!("cursor \"{name}\" already exists"),
            ));
        }
        if self.open.len() >= MAX_CURSORS {
            return Err(PgError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                format!("too many open cursors (at most {MAX_CURSORS} per session)"),
            )
            .with_hint("Close cursors no longer needed with CLOSE."));
        }
        Ok(())
    }

    /// Opens `cursor` (checked with [`Cursors::check_new`]); one declared WITH HOLD
    /// outside a transaction block has its rows read at once.
    pub async fn declare(&mut self, name: String, mut cursor: Cursor, hold: &Hold) -> PgResult<()> {
        self.check_new(&name)?;
        if cursor.holdable && !cursor.declared_in_block {
            cursor.materialize(&name, hold).await?;
        }
        cursor.order = self.declared;
        self.declared += 1;
        self.open.insert(name, cursor);
        self.list();
        Ok(())
    }

    /// CLOSE `name`, or every cursor (`None`: CLOSE ALL).
    pub fn close(&mut self, name: Option<&str>) -> PgResult<()> {
        match name {
            None => self.open.clear(),
            Some(name) => {
                self.open.remove(name).ok_or_else(|| not_found(name))?;
            }
        }
        self.list();
        Ok(())
    }

    /// How many cursors the session has declared so far: a savepoint's mark for
    /// [`Cursors::close_declared_since`].
    pub fn declared(&self) -> u64 {
        self.declared
    }

    /// ROLLBACK TO SAVEPOINT: closes the cursors declared since the savepoint, whose
    /// mark was `declared`.
    pub fn close_declared_since(&mut self, declared: u64) {
        self.open.retain(|_, c| c.order < declared);
        self.list();
    }

    /// The cancel flag a FETCH or MOVE of `name` runs under (see the module comment).
    pub fn flag_of(&self, name: &str) -> Option<CancelFlag> {
        self.open.get(name).and_then(|c| c.flag.clone())
    }

    /// The columns of `name`'s rows, if it is open.
    pub fn schema_of(&self, name: &str) -> Option<SchemaRef> {
        self.open.get(name).map(|c| c.schema.clone())
    }

    /// Runs a FETCH (its rows, computed as they are sent) or a MOVE (`MOVE n`).
    pub async fn fetch(&self, stmt: &FetchStmt) -> PgResult<Outcome> {
        let cursor = self
            .open
            .get(&stmt.cursor)
            .ok_or_else(|| not_found(&stmt.cursor))?;
        let mut rows = (cursor.rows.clone())
            .try_lock_owned()
            .map_err(|_| busy(&stmt.cursor))?;
        let (skip, take) = match fetch::resolve(stmt.direction, rows.at, stmt.moving)? {
            Step::OnRow => {
                let on_row = !rows.at.at_start && !rows.at.at_end;
                return Ok(Outcome::Done(format!("MOVE {}", u8::from(on_row))));
            }
            Step::Read { skip, take } => (skip, take),
        };
        if skip > 0 {
            rows.pass_over(Count::Rows(skip)).await?;
        }
        if stmt.moving {
            let moved = rows.pass_over(take).await?;
            return Ok(Outcome::Done(format!("MOVE {moved}")));
        }
        let batches = futures::stream::unfold((rows, take), |(mut rows, left)| async move {
            if left == Count::Rows(0) || rows.at.at_end {
                return None;
            }
            match rows.next_rows(left).await {
                Ok(Some(batch)) => {
                    let left = less(left, batch.num_rows());
                    Some((Ok(batch), (rows, left)))
                }
                Ok(None) => None,
                Err(e) => Some((Err(e), (rows, Count::Rows(0)))),
            }
        });
        let schema = cursor.schema.clone();
        Ok(Outcome::Rows {
            schema: schema.clone(),
            stream: Box::pin(RecordBatchStreamAdapter::new(schema, batches)),
            tag: "FETCH",
        })
    }

    /// The end of the transaction block: COMMIT (`commit`) keeps the WITH HOLD cursors,
    /// their rows read; ROLLBACK keeps only those declared before the block.
    pub async fn end_transaction(&mut self, commit: bool, hold: &Hold) -> PgResult<()> {
        self.open
            .retain(|_, c| c.holdable && (commit || !c.declared_in_block));
        let mut failed = None;
        for (name, cursor) in self.open.iter_mut() {
            if let Err(e) = cursor.materialize(name, hold).await {
                failed = Some(e);
                break;
            }
        }
        if failed.is_some() {
            // The commit fails: the block's cursors go as at ROLLBACK.
            self.open.retain(|_, c| !c.declared_in_block);
        }
        for cursor in self.open.values_mut() {
            cursor.declared_in_block = false;
        }
        self.list();
        failed.map_or(Ok(()), Err)
    }
}

/// Runs `DECLARE name [NO SCROLL] CURSOR [WITH HOLD | WITHOUT HOLD] FOR query`: plans and
/// starts the query under the statement's cancel flag `flag` and opens the cursor;
/// `text` is what the client sent (`pg_cursors.statement`).
pub async fn declare(
    cursors: &mut Cursors,
    run: &StatementRun,
    declare: &ast::Declare,
    in_block: bool,
    flag: CancelFlag,
    text: Option<String>,
) -> PgResult<Outcome> {
    let [name] = declare.names.as_slice() else {
        return Err(PgError::syntax("DECLARE names one cursor"));
    };
    let name = ident_name(name);
    let Some(query) = &declare.for_query else {
        return Err(PgError::syntax("DECLARE CURSOR needs FOR and a query"));
    };
    if declare.binary == Some(true) {
        return Err(PgError::unsupported("binary cursors are not supported")
            .with_hint("Fetch in binary format through the extended protocol instead."));
    }
    if declare.scroll == Some(true) {
        return Err(PgError::unsupported("SCROLL cursors are not supported")
            .with_hint("iolab's cursors read forward only, as NO SCROLL cursors do."));
    }
    let holdable = declare.hold == Some(true);
    if !holdable && !in_block {
        return Err(PgError::new(
            sqlstate::NO_ACTIVE_SQL_TRANSACTION,
            "DECLARE CURSOR can only be used in transaction blocks",
        ));
    }
    let stmt = ast::Statement::Query(query.clone());
    if crate::sql::row_locks::locks_rows(&stmt) {
        return Err(PgError::unsupported(
            "DECLARE CURSOR … FOR UPDATE/SHARE is not supported",
        ));
    }
    cursors.check_new(&name)?;
    let stream = run.query_stream(&stmt).await?;
    let schema = crate::sql::colnames::rename(&stmt, stream.schema());
    let statement = text.unwrap_or_else(|| {
        let stmt = ast::Statement::Declare {
            stmts: vec![declare.clone()],
        };
        stmt.to_string()
    });
    let cursor = Cursor::new(statement, holdable, in_block, schema, stream, flag);
    let hold = Hold {
        runtime: run.state.runtime_env().clone(),
        work_mem_bytes: run.ctx.planner.work_mem_bytes as usize,
    };
    cursors.declare(name, cursor, &hold).await?;
    Ok(Outcome::Done("DECLARE CURSOR".into()))
}

/// Runs `CLOSE name` or `CLOSE ALL`.
pub fn close(cursors: &mut Cursors, which: &ast::CloseCursor) -> PgResult<Outcome> {
    match which {
        ast::CloseCursor::All => {
            cursors.close(None)?;
            Ok(Outcome::Done("CLOSE CURSOR ALL".into()))
        }
        ast::CloseCursor::Specific { name } => {
            cursors.close(Some(&ident_name(name)))?;
            Ok(Outcome::Done("CLOSE CURSOR".into()))
        }
    }
}
