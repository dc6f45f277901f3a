//! `SELECT … FOR UPDATE | FOR SHARE [OF t] [NOWAIT | SKIP LOCKED]`: row locks, taken as
//! PostgreSQL's LockRows node takes them.
//!
//! The query runs without its LIMIT and OFFSET and with the locked table's `ctid` as one
//! more output column; each row it gives is locked in the order it comes
//! (`HeapDeleter::lock`: the row's `t_xmax` marked lock-only, held until the transaction
//! ends, so that UPDATE, DELETE and other lockers wait for it while readers do not):
//!
//! | the row | what happens |
//! |---|---|
//! | free, or locked by this transaction already | locked and returned |
//! | changed or locked by a transaction still running | waited for, then looked at again; `NOWAIT`: 55P03; `SKIP LOCKED`: left out |
//! | deleted by a transaction that committed | left out |
//! | updated by a transaction that committed | its newest version is locked and the query runs again over it (`recheck`): returned with its new values if it still qualifies, left out (still locked) if not — READ COMMITTED's EvalPlanQual |
//!
//! OFFSET and LIMIT then count the rows returned, as PostgreSQL's Limit above its
//! LockRows does: the rows OFFSET passes over are locked too, no row after the LIMIT is,
//! and a `SKIP LOCKED` query with `LIMIT 1` returns the first row nobody holds. The
//! rows returned are kept in memory until sent (as RETURNING's are).
//!
//! iolab locks the rows of one table, the query's only FROM item (`OF` may name it): a
//! join, a subquery in FROM, a view or several lock clauses are refused (0A000), and so
//! are, as in PostgreSQL, the clauses that make one output row out of many (GROUP BY,
//! HAVING, DISTINCT, aggregates, window functions, UNION / INTERSECT / EXCEPT). Every
//! lock is exclusive (no MultiXact): FOR SHARE lockers wait for each other too.

use datafusion::arrow::array::UInt32Array;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNode;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast;
use futures::StreamExt;
use iolab_catalog::{sqlstate, PgError, PgResult, TableDef};
use iolab_engine::heap::delete::{HeapDeleter, Locked};

use crate::errors::from_datafusion;
use crate::sql::ddl::{ident_name, split_name};
use crate::sql::recheck::Recheck;
use crate::sql::{dml, parse, Outcome, Parsed, StatementRun};

/// `FOR NO KEY UPDATE` and `FOR KEY SHARE` respelled `FOR UPDATE` and `FOR SHARE`, which
/// sqlparser reads (iolab's every lock is exclusive, so the two weaker strengths are
/// taken as the stronger ones); `None` when there is nothing to respell.
pub fn respell_strengths(text: &str) -> Option<String> {
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
    if !text.to_ascii_uppercase().contains("KEY") {
        return None;
    }
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize()
        .ok()?;
    let word = |t: &Token| match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    };
    // Indexes of the words, whitespace left out.
    let words: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i], Token::Whitespace(_)))
        .collect();
    let mut dropped = vec![false; tokens.len()];
    let word_at = |n: usize| words.get(n).and_then(|&i| word(&tokens[i]));
    for n in 0..words.len() {
        if word_at(n).as_deref() != Some("FOR") {
            continue;
        }
        let next = [1, 2, 3].map(|k| word_at(n + k));
        let weaker = match next.each_ref().map(Option::as_deref) {
            [Some("NO"), Some("KEY"), Some("UPDATE")] => words[n + 1]..words[n + 3],
            [Some("KEY"), Some("SHARE"), _] => words[n + 1]..words[n + 2],
            _ => continue,
        };
        dropped[weaker].fill(true);
    }
    if !dropped.contains(&true) {
        return None;
    }
    let kept = (tokens.iter().zip(&dropped)).filter(|(_, &d)| !d);
    Some(kept.map(|(t, _)| t.to_string()).collect())
}

/// Is `stmt` a query that locks rows (`SELECT … FOR UPDATE | SHARE` at its top)?
pub fn locks_rows(stmt: &ast::Statement) -> bool {
    matches!(stmt, ast::Statement::Query(q) if !q.locks.is_empty())
}

/// `stmt` without its row locks: the query whose rows they lock, with the same result
/// columns (for the extended protocol's Describe); `None` when it locks none.
pub fn without_locks(stmt: &ast::Statement) -> Option<ast::Statement> {
    let ast::Statement::Query(q) = stmt else {
        return None;
    };
    if q.locks.is_empty() {
        return None;
    }
    let mut q = q.clone();
    q.locks.clear();
    Some(ast::Statement::Query(q))
}

/// What a row lock does when a running transaction holds the row.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Wait {
    Block,
    NoWait,
    SkipLocked,
}

/// A `SELECT … FOR UPDATE` taken apart (see the module comment).
struct LockRows {
    /// The query: no LIMIT, OFFSET or lock clause, the locked rows' `ctid` last.
    query: ast::Statement,
    table: TableDef,
    /// How the query's columns name the table (`x` of `t AS x`, else its name).
    reference: String,
    wait: Wait,
    limit: Option<ast::Expr>,
    offset: Option<ast::Expr>,
    /// `FOR UPDATE` or `FOR SHARE`, for messages.
    strength: String,
}

/// Runs a `SELECT … FOR UPDATE | SHARE`: the rows it locked and returns.
pub async fn run(run: &StatementRun, stmt: &ast::Statement) -> PgResult<Outcome> {
    let lock = LockRows::new(run, stmt)?;
    let plan = match run.logical_plan(&lock.query).await {
        Ok(plan) => plan,
        Err(e) => {
            // An aggregate's query does not plan with `ctid` added: say why as PostgreSQL.
            if let Ok(plan) = run.logical_plan(&without_locks(stmt).expect("locks")).await {
                refuse_grouping_plan(&plan, &lock.strength)?;
            }
            return Err(e);
        }
    };
    refuse_grouping_plan(&plan, &lock.strength)?;
    let offset = clause_value(run, lock.offset.as_ref(), "OFFSET", "2201X").await?;
    let limit = clause_value(run, lock.limit.as_ref(), "LIMIT", "2201W").await?;
    let optimized = run.state.optimize(&plan).map_err(from_datafusion)?;
    let physical = run.physical_plan_of_optimized(&optimized).await?;
    let mut rows = datafusion::physical_plan::execute_stream(physical, run.state.task_ctx())
        .map_err(from_datafusion)?;
    let width = rows.schema().fields().len() - 1;
    let columns: Vec<usize> = (0..width).collect();
    let schema = std::sync::Arc::new(rows.schema().project(&columns).map_err(arrow_error)?);

    let mut deleter = HeapDeleter::new(
        &run.ctx,
        run.db.relfile(lock.table.relfilenode)?,
        run.ctx.new_account(),
        true,
    )?;
    let mut taker = Taker {
        lock: &lock,
        to_pass: offset.unwrap_or(0),
        to_return: limit.unwrap_or(u64::MAX),
        returned: Vec::new(),
        recheck: None,
    };
    let result = async {
        while taker.to_return > 0 {
            let Some(batch) = rows.next().await else {
                break;
            };
            run.ctx.check_cancel()?;
            let batch = batch.map_err(from_datafusion)?;
            taker.take(run, &mut deleter, &batch).await?;
        }
        Ok::<_, PgError>(())
    }
    .await;
    deleter.finish();
    run.ctx.add_usage(&deleter.acct.usage);
    result?;
    let returned = (taker.returned.iter())
        .map(|b| b.project(&columns).map_err(arrow_error))
        .collect::<PgResult<Vec<_>>>()?;
    let schema = crate::sql::colnames::rename(stmt, schema);
    let stream =
        datafusion::physical_plan::memory::MemoryStream::try_new(returned, schema.clone(), None)
            .map_err(from_datafusion)?;
    Ok(Outcome::Rows {
        schema,
        stream: Box::pin(stream),
        tag: "SELECT",
    })
}

/// Locks the rows of the query's batches in order and keeps those to return.
struct Taker<'a> {
    lock: &'a LockRows,
    /// Rows OFFSET still passes over, and rows LIMIT still lets through.
    to_pass: u64,
    to_return: u64,
    /// The rows locked and returned, `ctid` still last.
    returned: Vec<RecordBatch>,
    recheck: Option<Recheck>,
}

impl Taker<'_> {
    /// Locks the rows of `batch` until the LIMIT is reached.
    async fn take(
        &mut self,
        run: &StatementRun,
        deleter: &mut HeapDeleter,
        batch: &RecordBatch,
    ) -> PgResult<()> {
        let tids = dml::ctids(batch.column(batch.num_columns() - 1).as_ref())?;
        // Rows of `batch` locked and not yet moved to `returned`.
        let mut kept: Vec<u32> = Vec::new();
        for (row, &tid) in tids.iter().enumerate() {
            if self.to_return == 0 {
                break;
            }
            let locked = self.lock_row(run, deleter, tid)?;
            let rechecked = match locked {
                Locked::Now => None,
                Locked::Gone | Locked::Busy => continue,
                Locked::Updated => match self.newest_qualifying(run, deleter, tid).await? {
                    Some(newest) => Some(newest),
                    None => continue,
                },
            };
            if self.to_pass > 0 {
                self.to_pass -= 1;
                continue;
            }
            self.to_return -= 1;
            match rechecked {
                None => kept.push(row as u32),
                Some(newest) => {
                    self.keep(batch, &mut kept)?;
                    self.returned.push(newest);
                }
            }
        }
        self.keep(batch, &mut kept)
    }

    /// Moves the rows `kept` of `batch` to `returned`.
    fn keep(&mut self, batch: &RecordBatch, kept: &mut Vec<u32>) -> PgResult<()> {
        if kept.is_empty() {
            return Ok(());
        }
        let rows = UInt32Array::from(std::mem::take(kept));
        let taken = datafusion::arrow::compute::take_record_batch(batch, &rows);
        self.returned.push(taken.map_err(arrow_error)?);
        Ok(())
    }

    /// Locks the row version at `tid` as the lock clause says; `Busy` only under
    /// `SKIP LOCKED`.
    fn lock_row(
        &self,
        run: &StatementRun,
        deleter: &mut HeapDeleter,
        tid: (u32, u16),
    ) -> PgResult<Locked> {
        let wait = self.lock.wait == Wait::Block;
        let locked =
            tokio::task::block_in_place(|| deleter.lock(tid, wait, &|| run.ctx.check_cancel()))?;
        if locked == Locked::Busy && self.lock.wait == Wait::NoWait {
            return Err(PgError::new(
                sqlstate::LOCK_NOT_AVAILABLE,
                format!(
                    "could not obtain lock on row in relation \"{}\"",
                    self.lock.table.name
                ),
            ));
        }
        Ok(locked)
    }

    /// The row whose version at `tid` a committed UPDATE replaced: its newest version
    /// locked and, if the query still gives it, the query's row for it.
    async fn newest_qualifying(
        &mut self,
        run: &StatementRun,
        deleter: &mut HeapDeleter,
        mut tid: (u32, u16),
    ) -> PgResult<Option<RecordBatch>> {
        let newest = loop {
            let Some(newest) = tokio::task::block_in_place(|| deleter.newest_version(tid))? else {
                return Ok(None);
            };
            match self.lock_row(run, deleter, newest)? {
                Locked::Now => break newest,
                Locked::Gone | Locked::Busy => return Ok(None),
                Locked::Updated => tid = newest,
            }
        };
        if self.recheck.is_none() {
            let lock = self.lock;
            let query = lock.query.clone();
            self.recheck = Some(Recheck::of_query(
                query,
                lock.table.clone(),
                &lock.reference,
            )?);
        }
        let recheck = self.recheck.as_ref().expect("made above");
        let Some(mut rows) = recheck.rows(run, deleter, &[newest]).await? else {
            return Ok(None);
        };
        let mut found = None;
        while let Some(batch) = rows.next().await {
            let batch = batch.map_err(from_datafusion)?;
            if batch.num_rows() > 0 {
                assert!(
                    found.is_none() && batch.num_rows() == 1,
                    "one row per version"
                );
                found = Some(batch);
            }
        }
        Ok(found)
    }
}

impl LockRows {
    fn new(run: &StatementRun, stmt: &ast::Statement) -> PgResult<LockRows> {
        let ast::Statement::Query(query) = stmt else {
            return Err(PgError::internal("row locks are taken by queries"));
        };
        let mut query = query.clone();
        let [clause] = std::mem::take(&mut query.locks).try_into().map_err(|_| {
            PgError::unsupported("iolab takes one FOR UPDATE or FOR SHARE clause per query")
        })?;
        let strength = format!("FOR {}", clause.lock_type);
        let wait = match clause.nonblock {
            None => Wait::Block,
            Some(ast::NonBlock::Nowait) => Wait::NoWait,
            Some(ast::NonBlock::SkipLocked) => Wait::SkipLocked,
        };
        let not_allowed =
            |what: &str| PgError::unsupported(format!("{strength} is not allowed with {what}"));
        if query.fetch.is_some() {
            return Err(PgError::unsupported(format!(
                "{strength} with FETCH FIRST is not supported by iolab"
            ))
            .with_hint("Use LIMIT instead."));
        }
        let (limit, offset) = match query.limit_clause.take() {
            None => (None, None),
            Some(ast::LimitClause::LimitOffset {
                limit,
                offset,
                limit_by,
            }) if limit_by.is_empty() => (limit, offset.map(|o| o.value)),
            Some(_) => return Err(PgError::syntax("syntax error at or near \"LIMIT\"")),
        };
        let select = match query.body.as_mut() {
            ast::SetExpr::Select(select) => select,
            ast::SetExpr::SetOperation { .. } => {
                return Err(not_allowed("UNION/INTERSECT/EXCEPT"));
            }
            ast::SetExpr::Values(_) => {
                return Err(PgError::unsupported(format!(
                    "{strength} cannot be applied to VALUES"
                )));
            }
            _ => {
                return Err(PgError::unsupported(format!(
                    "{strength} is supported on a plain SELECT only"
                )))
            }
        };
        if select.distinct.is_some() {
            return Err(not_allowed("DISTINCT clause"));
        }
        if !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty()) {
            return Err(not_allowed("GROUP BY clause"));
        }
        if select.having.is_some() {
            return Err(not_allowed("HAVING clause"));
        }
        let one_table = match select.from.as_slice() {
            [only] if only.joins.is_empty() => match &only.relation {
                ast::TableFactor::Table { name, alias, .. } => Some((name, alias)),
                _ => None,
            },
            _ => None,
        };
        let Some((name, alias)) = one_table else {
            return Err(PgError::unsupported(format!(
                "{strength} of a join, of several tables or of a subquery is not supported"
            ))
            .with_detail("iolab locks the rows of the query's one table."));
        };
        let (schema, table_name) = split_name(name)?;
        if (run.db.catalog)
            .view(schema.as_deref().unwrap_or("public"), &table_name)
            .is_some()
        {
            return Err(
                PgError::unsupported(format!("{strength} of a view is not supported"))
                    .with_hint("Lock the rows of the tables it reads instead."),
            );
        }
        let table = run.resolve_table(schema.as_deref(), &table_name)?;
        let reference = match alias {
            Some(alias) => ident_name(&alias.name),
            None => table.name.clone(),
        };
        if let Some(of) = &clause.of {
            let (_, named) = split_name(of)?;
            if named != reference {
                return Err(PgError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("relation \"{named}\" in {strength} clause not found in FROM clause"),
                ));
            }
        }
        let column = |name: &str| {
            ast::Expr::CompoundIdentifier(vec![
                ast::Ident::with_quote('"', &reference),
                ast::Ident::with_quote('"', name),
            ])
        };
        // `*` names the table's columns: the query reads a table that has `ctid` too.
        let mut projection = Vec::with_capacity(select.projection.len() + 1);
        for item in std::mem::take(&mut select.projection) {
            match item {
                ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                    projection.extend(
                        (table.columns.iter())
                            .map(|c| ast::SelectItem::UnnamedExpr(column(&c.name))),
                    );
                }
                item => projection.push(item),
            }
        }
        projection.push(ast::SelectItem::UnnamedExpr(column("ctid")));
        select.projection = projection;
        Ok(LockRows {
            query: ast::Statement::Query(query),
            table,
            reference,
            wait,
            limit,
            offset,
            strength,
        })
    }
}

/// PostgreSQL's refusals of aggregates and window functions under a lock clause (found
/// in the plan, where they are one node each; subqueries may have them).
fn refuse_grouping_plan(plan: &LogicalPlan, strength: &str) -> PgResult<()> {
    let mut found = None;
    let _ = plan.apply(|node| {
        found = match node {
            LogicalPlan::Aggregate(_) => Some("aggregate functions"),
            LogicalPlan::Window(_) => Some("window functions"),
            _ => None,
        };
        Ok(match found {
            Some(_) => datafusion::common::tree_node::TreeNodeRecursion::Stop,
            None => datafusion::common::tree_node::TreeNodeRecursion::Continue,
        })
    });
    match found {
        Some(what) => Err(PgError::unsupported(format!(
            "{strength} is not allowed with {what}"
        ))),
        None => Ok(()),
    }
}

/// The value of a LIMIT or OFFSET expression (`None`: none, `ALL` or NULL), computed
/// with the statement's parameters; negative is PostgreSQL's `sqlstate` error.
async fn clause_value(
    run: &StatementRun,
    expr: Option<&ast::Expr>,
    clause: &str,
    sqlstate: &'static str,
) -> PgResult<Option<u64>> {
    let Some(expr) = expr else {
        return Ok(None);
    };
    let sql = format!("SELECT CAST(({expr}) AS BIGINT)");
    let Parsed::Sql(query) = parse(&sql, &sql, 0)? else {
        return Err(PgError::internal(format!("{clause} did not parse")));
    };
    let plan = run.logical_plan(&query).await?;
    let physical = run.physical_plan_of_optimized(&plan).await?;
    let batches = datafusion::physical_plan::collect(physical, run.state.task_ctx())
        .await
        .map_err(from_datafusion)?;
    use datafusion::arrow::array::{Array, AsArray};
    let value = batches
        .iter()
        .find(|b| b.num_rows() > 0)
        .map(|b| {
            b.column(0)
                .as_primitive::<datafusion::arrow::datatypes::Int64Type>()
        })
        .and_then(|a| a.is_valid(0).then(|| a.value(0)));
    match value {
        Some(v) if v < 0 => Err(PgError::new(
            sqlstate,
            format!("{clause} must not be negative"),
        )),
        v => Ok(v.map(|v| v as u64)),
    }
}

fn arrow_error(e: datafusion::arrow::error::ArrowError) -> PgError {
    PgError::internal(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::respell_strengths;

    #[test]
    fn weaker_lock_strengths_are_respelled() {
        assert_eq!(
            respell_strengths("SELECT * FROM t FOR NO KEY UPDATE SKIP LOCKED").as_deref(),
            Some("SELECT * FROM t FOR UPDATE SKIP LOCKED")
        );
        assert_eq!(
            respell_strengths("select * from t for key share").as_deref(),
            Some("select * from t for share")
        );
        // Words in strings and names, and other statements, are left alone.
        assert_eq!(respell_strengths("SELECT 'FOR KEY SHARE' FROM t"), None);
        assert_eq!(respell_strengths("SELECT key FROM t FOR UPDATE"), None);
        assert_eq!(
            respell_strengths("CREATE TABLE t (a int PRIMARY KEY)"),
            None
        );
    }
}
