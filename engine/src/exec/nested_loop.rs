//! `IndexNestedLoopExec`: PostgreSQL's Nested Loop whose inner side is an Index Scan taking
//! the outer row's join key (`Index Cond: (id = o.cust_id)`), as a DataFusion operator.
//!
//! # How it runs
//!
//! On a blocking thread, for each batch of the outer side in turn and each of its rows in
//! order, the inner Index Scan runs once for the value of the outer row's key
//! ([`Prober::probe`]: a descent of the index and the heap tuples of the entries equal to
//! the value; nothing for NULL). The inner rows of consecutive outer rows are collected,
//! each remembering its outer row, until [`SCAN_BATCH_ROWS`] are held or the outer batch
//! ends. Then, on those pairs:
//!
//! 1. the inner side's own filter (the inner table's conjuncts its index does not answer);
//! 2. the join's other equi-keys (the index takes one) and its filter, on each pair;
//! 3. the output of the join type, outer row by outer row: an inner join returns the pairs;
//!    a left join (the outer side preserved) also each outer row without a pair, its inner
//!    columns NULL; a semi join each outer row with a pair, once; an anti join each
//!    without.
//!
//! So the rows come out in the outer side's order, which the node declares. A semi or anti
//! join with no filter stops each probe at its first visible row.
//!
//! # Reading ahead (iolab's; `nestloop_prefetch`)
//!
//! One probe at a time, each page is read when the probe needs it: a cold lookup waits for
//! its leaf, then for its heap page, and the device sees one read at a time — PostgreSQL
//! 18's nested loop (the index prefetching proposed for PostgreSQL 19 addresses it). iolab
//! takes the outer rows [`READ_AHEAD_KEYS`] at a time instead (`Prober::probe_all`):
//!
//! 1. each row's descent stops above the leaves, which gives the block of the leaf its
//!    scan starts at (the internal pages are few and stay in the pool);
//! 2. a read stream reads those leaves ahead, in the rows' order, keeping them pinned (half
//!    the stream's pin budget of them at a time); once it is done, each scan runs from its
//!    leaf (moving right if the leaf split meanwhile, reading the leaves past it as it
//!    goes), collecting TIDs — not while the stream runs, since its reads run when it
//!    hands their blocks out, and a scan waiting for one of them would wait forever;
//! 3. a second stream reads the TIDs' heap pages ahead, in the same order (a run of TIDs on
//!    one page is one block), and the visible tuples are collected as the pages arrive.
//!
//! Both streams keep up to `effective_io_concurrency` reads in flight, so a cold loop's
//! reads overlap; rows and their order are those of one probe at a time. An index-only
//! inner scan reads its leaves ahead and the few heap pages the visibility map does not
//! mark one at a time. With `nestloop_prefetch = off` or `effective_io_concurrency = 0`,
//! one probe at a time.
//!
//! Bounds: one outer batch at a time, at most `SCAN_BATCH_ROWS` inner rows plus one probe's,
//! and [`SCAN_CHANNEL_BATCHES`] output batches between the thread and the consumer, which
//! stops the thread when it goes away; a canceled statement stops at the next outer batch
//! or heap page.
//!
//! The inner scan's node keeps what all the probes did (`Prober`'s metrics), which EXPLAIN
//! ANALYZE prints with `loops=` the outer rows.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatchOptions, UInt32Array};
use datafusion::arrow::compute::kernels::cmp::eq;
use datafusion::arrow::compute::{and, filter_record_batch, take, take_record_batch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{DataFusionError, JoinSide, JoinType, Result as DfResult, ScalarValue};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::joins::utils::JoinFilter;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, Partitioning,
    PlanProperties,
};
use datafusion::physical_plan::{Statistics, StatisticsArgs};
use futures::StreamExt;

use crate::exec::context::StatementContext;
use crate::exec::index_scan::{IndexScanExec, Prober};
use crate::exec::scan::{to_df, SCAN_CHANNEL_BATCHES};
use crate::plan::PathEstimate;

/// What the join returns for an outer row (module comment, step 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopKind {
    Inner,
    /// The outer side preserved: PostgreSQL's `Nested Loop Left Join`.
    Left,
    Semi,
    Anti,
}

impl LoopKind {
    /// The kind of DataFusion's `join_type` run with its `outer_side` as the outer side, if
    /// a nested loop can run it so.
    pub fn of(join_type: JoinType, outer_side: JoinSide) -> Option<LoopKind> {
        use JoinType as J;
        let left = outer_side == JoinSide::Left;
        Some(match join_type {
            J::Inner => LoopKind::Inner,
            J::Left if left => LoopKind::Left,
            J::Right if !left => LoopKind::Left,
            J::LeftSemi if left => LoopKind::Semi,
            J::RightSemi if !left => LoopKind::Semi,
            J::LeftAnti if left => LoopKind::Anti,
            J::RightAnti if !left => LoopKind::Anti,
            _ => return None,
        })
    }
}

/// The parts of the join the nested loop runs, as the planner found them
/// (`plan::nested_loops`).
#[derive(Clone)]
pub struct NestedLoopParts {
    pub outer: Arc<dyn ExecutionPlan>,
    pub outer_side: JoinSide,
    /// An [`IndexScanExec`] that takes the outer key.
    pub inner: Arc<dyn ExecutionPlan>,
    /// Over the inner scan's output.
    pub inner_filter: Option<Arc<dyn PhysicalExpr>>,
    /// The inner side's columns, as the join sees them: columns of the inner scan's output.
    pub inner_columns: Vec<usize>,
    /// The key the inner scan takes, over the outer side's output.
    pub outer_key: Arc<dyn PhysicalExpr>,
    /// The join's other equi-keys: (over the outer side, over the inner side's columns).
    pub other_keys: Vec<(Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>)>,
    pub join_type: JoinType,
    pub filter: Option<JoinFilter>,
    /// The join's columns (left side's, then right side's; the outer side's alone for a
    /// semi or anti join) that it returns.
    pub projection: Option<Vec<usize>>,
    /// The join's output, after the projection.
    pub schema: SchemaRef,
    pub estimate: PathEstimate,
}

/// `Nested Loop` over an outer side and a parameterized inner Index Scan.
pub struct IndexNestedLoopExec {
    parts: NestedLoopParts,
    kind: LoopKind,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl IndexNestedLoopExec {
    pub fn new(parts: NestedLoopParts) -> IndexNestedLoopExec {
        let kind = LoopKind::of(parts.join_type, parts.outer_side)
            .expect("the planner chose a join a nested loop runs");
        let inner = parts.inner.downcast_ref::<IndexScanExec>();
        assert!(
            inner.is_some_and(IndexScanExec::takes_outer_value),
            "the inner scan is an index scan taking the outer key"
        );
        let ordering = outer_ordering(&parts, kind);
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new_with_orderings(parts.schema.clone(), ordering),
            Partitioning::UnknownPartitioning(parts.outer.output_partitioning().partition_count()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        IndexNestedLoopExec {
            parts,
            kind,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    pub fn outer(&self) -> &Arc<dyn ExecutionPlan> {
        &self.parts.outer
    }

    /// The inner Index Scan, as a plan node (for its metrics) and as itself.
    pub fn inner(&self) -> (&Arc<dyn ExecutionPlan>, &IndexScanExec) {
        let scan = (self.parts.inner.downcast_ref::<IndexScanExec>())
            .expect("checked when the node was made");
        (&self.parts.inner, scan)
    }

    pub fn inner_filter(&self) -> Option<&Arc<dyn PhysicalExpr>> {
        self.parts.inner_filter.as_ref()
    }

    /// The join's equi-keys other than the index's, and its filter.
    pub fn join_quals(
        &self,
    ) -> (
        &[(Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>)],
        Option<&JoinFilter>,
    ) {
        (&self.parts.other_keys, self.parts.filter.as_ref())
    }

    pub fn outer_side(&self) -> JoinSide {
        self.parts.outer_side
    }

    /// The join's column of each output column (`projection`'s).
    pub fn projection(&self) -> Option<&[usize]> {
        self.parts.projection.as_deref()
    }

    /// Where the join's column `i` comes from: the outer side's column, or (`false`) the
    /// inner scan's output column.
    pub fn join_column(&self, i: usize) -> (bool, usize) {
        let outer_columns = self.parts.outer.schema().fields().len();
        let inner_columns = self.parts.inner_columns.len();
        let (from_outer, at) = match (self.kind, self.parts.outer_side) {
            (LoopKind::Semi | LoopKind::Anti, _) => (true, i),
            (_, JoinSide::Left) if i < outer_columns => (true, i),
            (_, JoinSide::Left) => (false, i - outer_columns),
            (_, _) if i < inner_columns => (false, i),
            (_, _) => (true, i - inner_columns),
        };
        match from_outer {
            true => (true, at),
            false => (false, self.parts.inner_columns[at]),
        }
    }

    pub fn inner_columns(&self) -> &[usize] {
        &self.parts.inner_columns
    }

    /// The join as PostgreSQL names it: a semi join that can find one row per outer row
    /// at most is an inner join (as PostgreSQL's planner reduces such semi joins).
    pub fn kind(&self) -> LoopKind {
        match self.kind {
            LoopKind::Semi if self.inner().1.finds_one_row() => LoopKind::Inner,
            k => k,
        }
    }

    pub fn estimate(&self) -> PathEstimate {
        self.parts.estimate
    }
}

/// The outer side's order, as far as the output has its columns: the node's rows keep it.
fn outer_ordering(parts: &NestedLoopParts, kind: LoopKind) -> Vec<Vec<PhysicalSortExpr>> {
    let Some(ordering) = parts.outer.output_ordering() else {
        return Vec::new();
    };
    // Where the outer side's columns are among the join's.
    let offset = match (kind, parts.outer_side) {
        (LoopKind::Inner | LoopKind::Left, JoinSide::Right) => parts.inner_columns.len(),
        _ => 0,
    };
    let keys: Vec<PhysicalSortExpr> = (ordering.iter())
        .map_while(|key| {
            let column = key.expr.downcast_ref::<Column>()?;
            let joined = offset + column.index();
            let at = match &parts.projection {
                Some(p) => p.iter().position(|&c| c == joined)?,
                None => joined,
            };
            Some(PhysicalSortExpr::new(
                Arc::new(Column::new(parts.schema.field(at).name(), at)),
                key.options,
            ))
        })
        .collect();
    if keys.is_empty() {
        Vec::new()
    } else {
        vec![keys]
    }
}

impl fmt::Debug for IndexNestedLoopExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IndexNestedLoopExec({:?})", self.kind)
    }
}

impl DisplayAs for IndexNestedLoopExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Nested Loop {:?} Join, inner: ", self.kind)?;
        self.inner().1.fmt_as(_t, f)
    }
}

impl ExecutionPlan for IndexNestedLoopExec {
    fn name(&self) -> &str {
        "IndexNestedLoopExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        Ok(PathEstimate::statistics(
            Some(self.parts.estimate),
            None,
            &self.parts.schema,
        ))
    }

    /// The outer side only: the inner scan is run by the node, never polled.
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.parts.outer]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let [outer] = <[_; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("a nested loop has one child".into()))?;
        Ok(Arc::new(IndexNestedLoopExec::new(NestedLoopParts {
            outer,
            ..self.parts.clone()
        })))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let stmt = StatementContext::from_task(&context).map_err(to_df)?;
        let outer = self.parts.outer.execute(partition, context)?;
        let first_only = matches!(self.kind, LoopKind::Semi | LoopKind::Anti)
            && self.parts.inner_filter.is_none()
            && self.parts.other_keys.is_empty()
            && self.parts.filter.is_none();
        let job = LoopJob {
            prober: (self.inner().1)
                .prober(stmt.clone(), partition)
                .map_err(to_df)?,
            read_ahead: stmt.io.nestloop_prefetch && stmt.io.effective_io_concurrency > 0,
            stmt,
            kind: self.kind,
            limit: first_only.then_some(1),
            parts: self.parts.clone(),
            removed_by_join_filter: MetricBuilder::new(&self.metrics)
                .counter("rows_removed_by_join_filter", partition),
        };
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(SCAN_CHANNEL_BATCHES);
        let runtime = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || job.run(&runtime, outer, tx));
        let stream =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.parts.schema.clone(),
            stream,
        )))
    }
}

type BatchSender = tokio::sync::mpsc::Sender<DfResult<RecordBatch>>;

/// Outer rows whose inner scans are read ahead together (module comment, "Reading ahead").
const READ_AHEAD_KEYS: usize = 512;

/// Everything the loop's thread needs.
struct LoopJob {
    parts: NestedLoopParts,
    kind: LoopKind,
    stmt: Arc<StatementContext>,
    prober: Prober,
    /// Rows each probe needs at most (the first, for a semi or anti join without filters).
    limit: Option<usize>,
    /// Read the probes' pages ahead (`nestloop_prefetch`, `effective_io_concurrency` > 0).
    read_ahead: bool,
    /// Pairs the join's other keys and filter rejected (EXPLAIN's `Rows Removed by Join
    /// Filter`).
    removed_by_join_filter: Count,
}

impl LoopJob {
    fn run(
        mut self,
        runtime: &tokio::runtime::Handle,
        mut outer: SendableRecordBatchStream,
        tx: BatchSender,
    ) {
        loop {
            let batch = match runtime.block_on(outer.next()) {
                None => break,
                Some(Ok(b)) => b,
                Some(Err(e)) => {
                    let _ = tx.blocking_send(Err(e));
                    break;
                }
            };
            match self.join_batch(&batch, &tx) {
                Ok(true) => {}
                Ok(false) => break, // the consumer went away
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    break;
                }
            }
        }
        // The inner scan's metrics are published before the consumer sees the end.
        drop(self);
        drop(tx);
    }

    /// Joins one outer batch, sending the output; false when the consumer has gone.
    fn join_batch(&mut self, outer: &RecordBatch, tx: &BatchSender) -> DfResult<bool> {
        self.stmt.check_cancel().map_err(to_df)?;
        let keys =
            (self.parts.outer_key.evaluate(outer)).and_then(|k| k.into_array(outer.num_rows()))?;
        let mut start = 0;
        while start < outer.num_rows() {
            let chunk = (start..outer.num_rows().min(start + READ_AHEAD_KEYS))
                .map(|row| ScalarValue::try_from_array(&keys, row))
                .collect::<DfResult<Vec<_>>>()?;
            let found = (self.prober)
                .probe_all(&chunk, self.limit, self.read_ahead)
                .map_err(to_df)?;
            // Pairs: the outer row of each inner row collected.
            let mut pair_outer: Vec<u32> = Vec::new();
            for (i, n) in found.iter().enumerate() {
                pair_outer.extend(std::iter::repeat_n((start + i) as u32, *n));
            }
            let end = start + found.len();
            let inner = self.prober.take_batch().map_err(to_df)?;
            let out = self.output(outer, start..end, pair_outer, inner)?;
            if out.num_rows() > 0 && tx.blocking_send(Ok(out)).is_err() {
                return Ok(false);
            }
            start = end;
        }
        Ok(true)
    }

    /// The output for outer rows `rows`, whose probes gave `inner` (the inner scan's
    /// rows), the `i`-th of outer row `pair_outer[i]` (module comment, steps 1 to 3).
    fn output(
        &mut self,
        outer: &RecordBatch,
        rows: std::ops::Range<usize>,
        pair_outer: Vec<u32>,
        inner: RecordBatch,
    ) -> DfResult<RecordBatch> {
        let p = &self.parts;
        let mut pair_outer = UInt32Array::from(pair_outer);
        let mut inner = inner;
        if let Some(f) = &p.inner_filter {
            let keep = predicate(f, &inner)?;
            (pair_outer, inner) = keep_pairs(&pair_outer, &inner, &keep)?;
            self.prober.filtered_out(keep.len() - keep.true_count());
        }
        let mut inner = inner.project(&p.inner_columns)?;
        let mut outer_rows = take_record_batch(outer, &pair_outer)?;
        if !p.other_keys.is_empty() || p.filter.is_some() {
            let keep = self.pair_test(&outer_rows, &inner)?;
            (self.removed_by_join_filter).add(keep.len() - keep.true_count());
            (pair_outer, inner) = keep_pairs(&pair_outer, &inner, &keep)?;
            outer_rows = filter_record_batch(&outer_rows, &keep)?;
        }
        // Pairs per outer row, in order.
        let mut pairs = vec![0u32; rows.len()];
        for r in pair_outer.values() {
            pairs[*r as usize - rows.start] += 1;
        }
        let columns = match self.kind {
            LoopKind::Inner => (
                self.sides(outer_rows.columns().to_vec(), inner.columns().to_vec()),
                pair_outer.len(),
            ),
            LoopKind::Left => {
                // Each pair, and each outer row without one with NULL inner columns.
                let mut outer_index = Vec::with_capacity(pair_outer.len());
                let mut inner_index = Vec::with_capacity(pair_outer.len());
                let mut next_pair = 0u32;
                for (r, &n) in rows.clone().zip(&pairs) {
                    if n == 0 {
                        outer_index.push(r as u32);
                        inner_index.push(None);
                    }
                    for _ in 0..n {
                        outer_index.push(r as u32);
                        inner_index.push(Some(next_pair));
                        next_pair += 1;
                    }
                }
                let rows = outer_index.len();
                let outer_rows = take_record_batch(outer, &UInt32Array::from(outer_index))?;
                // NULLs in columns the inner scan declares NOT NULL: arrays, not a batch.
                let inner_index = UInt32Array::from(inner_index);
                let inner = (inner.columns().iter())
                    .map(|c| take(c, &inner_index, None))
                    .collect::<Result<Vec<_>, _>>()?;
                (self.sides(outer_rows.columns().to_vec(), inner), rows)
            }
            LoopKind::Semi | LoopKind::Anti => {
                let wanted = self.kind == LoopKind::Semi;
                let kept: Vec<u32> = (rows.clone().zip(&pairs))
                    .filter(|(_, &n)| (n > 0) == wanted)
                    .map(|(r, _)| r as u32)
                    .collect();
                let rows = kept.len();
                let kept = take_record_batch(outer, &UInt32Array::from(kept))?;
                (kept.columns().to_vec(), rows)
            }
        };
        let (columns, row_count) = columns;
        let columns = match &p.projection {
            Some(projection) => projection.iter().map(|&c| columns[c].clone()).collect(),
            None => columns,
        };
        Ok(RecordBatch::try_new_with_options(
            p.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(row_count)),
        )?)
    }

    /// The join's columns from the outer and inner rows of its pairs: the left side's,
    /// then the right side's.
    fn sides(&self, outer: Vec<ArrayRef>, inner: Vec<ArrayRef>) -> Vec<ArrayRef> {
        let (mut left, right) = match self.parts.outer_side {
            JoinSide::Left => (outer, inner),
            _ => (inner, outer),
        };
        left.extend(right);
        left
    }

    /// Which pairs pass the join's other equi-keys and its filter.
    fn pair_test(&self, outer: &RecordBatch, inner: &RecordBatch) -> DfResult<BooleanArray> {
        let p = &self.parts;
        let mut keep = BooleanArray::from(vec![true; outer.num_rows()]);
        for (o, i) in &p.other_keys {
            let eval = |e: &Arc<dyn PhysicalExpr>, b: &RecordBatch| {
                e.evaluate(b).and_then(|v| v.into_array(b.num_rows()))
            };
            let equal = eq(&eval(o, outer)?, &eval(i, inner)?)?;
            keep = and(&keep, &equal)?;
        }
        if let Some(f) = &p.filter {
            let columns = (f.column_indices().iter())
                .map(|c| {
                    let from = if c.side == p.outer_side { outer } else { inner };
                    from.column(c.index).clone()
                })
                .collect();
            let batch = RecordBatch::try_new_with_options(
                f.schema().clone(),
                columns,
                &RecordBatchOptions::new().with_row_count(Some(outer.num_rows())),
            )?;
            keep = and(&keep, &predicate(f.expression(), &batch)?)?;
        }
        Ok(keep)
    }
}

/// `expr`'s value on each row of `batch`, NULL as false.
fn predicate(expr: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> DfResult<BooleanArray> {
    let value = (expr.evaluate(batch)).and_then(|v| v.into_array(batch.num_rows()))?;
    let value = (value.as_any().downcast_ref::<BooleanArray>())
        .ok_or_else(|| DataFusionError::Internal("a join condition that is not boolean".into()))?;
    Ok(match value.nulls() {
        Some(nulls) => BooleanArray::new(value.values() & nulls.inner(), None),
        None => value.clone(),
    })
}

/// The pairs `keep` keeps.
fn keep_pairs(
    pair_outer: &UInt32Array,
    inner: &RecordBatch,
    keep: &BooleanArray,
) -> DfResult<(UInt32Array, RecordBatch)> {
    let pairs = datafusion::arrow::compute::filter(pair_outer, keep)?;
    let pairs = pairs
        .as_any()
        .downcast_ref::<UInt32Array>()
        .expect("a filter keeps the type")
        .clone();
    Ok((pairs, filter_record_batch(inner, keep)?))
}
