//! PostgreSQL's bitmap scan nodes as DataFusion operators:
//!
//! ```text
//!   BitmapHeapScanExec          Bitmap Heap Scan on t        (Recheck Cond, Heap Blocks)
//!     └─ BitmapCombineExec      BitmapAnd / BitmapOr          (optional, any depth)
//!          ├─ BitmapIndexScanExec   Bitmap Index Scan on t_a_idx   (Index Cond)
//!          └─ BitmapIndexScanExec   Bitmap Index Scan on t_b_idx
//! ```
//!
//! The bitmap nodes produce a [`TidBitmap`], not record batches: they are [`BitmapPlan`]s,
//! which the Bitmap Heap Scan runs first, on its own blocking thread (PostgreSQL's
//! `MultiExecProcNode`), before it reads the heap pages the bitmap names (see
//! `heap/bitmap_heap.rs`). They are still `ExecutionPlan` children of the heap scan, so that
//! plans print and EXPLAIN shows them with their own rows, time and buffers; executing one
//! on its own is an error.
//!
//! * [`BitmapIndexScanExec`] adds the TIDs an index finds to the bitmap: a closure given by
//!   the planner (normally around `BtreeIndex::scan_range`), charged to the node's own
//!   [`IoAccount`]. Its `output_rows` is the number of TIDs, as PostgreSQL counts a Bitmap
//!   Index Scan's rows.
//! * [`BitmapCombineExec`] is BitmapAnd (intersect the children's bitmaps, stopping early
//!   once the result is empty) or BitmapOr (the children add into one bitmap), as
//!   PostgreSQL's nodes do; `output_rows` stays 0 (PostgreSQL prints `rows=0` for them).
//! * [`BitmapHeapScanExec`] builds the bitmap within `work_mem`, then returns the visible
//!   tuples of its pages, rechecking the index condition where the bitmap is lossy.
//!
//! Metrics: every node publishes its own I/O under the names `HeapScanExec` uses (see
//! `scan.rs`: `shared_hit`, `shared_read`, …, `io_reads`, `io_stalls`, times, read latency
//! gauges; the heap scan also the read-stream gauges `prefetch_*`, `io_size_avg_milli`,
//! `io_inprogress_avg_milli`). The heap scan adds the counters `exact_heap_blocks`,
//! `lossy_heap_blocks` (`Heap Blocks: exact=… lossy=…`) and `rows_removed_by_index_recheck`
//! (`Rows Removed by Index Recheck`); a Bitmap Index Scan counts `index_searches` (its
//! descents of the tree, PostgreSQL 18's `Index Searches:`). As for a Seq Scan, a node's
//! buffers are its own; a parent's EXPLAIN line adds its children's.
//!
//! The planner (`plan::paths`) builds these nodes with their conditions as physical
//! expressions over the table's schema (`Index Cond:`, `Recheck Cond:`) and its estimate.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_expr_common::physical_expr::fmt_sql;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType, SchedulingType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::StatisticsArgs;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, InputDistributionRequirements,
    Partitioning, PlanProperties,
};
use iolab_catalog::{PgResult, TableDef};

use crate::accounting::IoAccount;
use crate::bitmap::TidBitmap;
use crate::exec::context::StatementContext;
use crate::exec::scan::{publish_io_metrics, to_df, SCAN_CHANNEL_BATCHES};
use crate::heap::bitmap_heap::{BitmapHeapScanner, Recheck};
use crate::plan::index_cond::conjunction;
use crate::plan::PathEstimate;
use crate::stream::ReadStreamStats;
use crate::txn::VisibilityChecker;
use crate::Database;

/// What a bitmap node needs to build its bitmap.
pub struct BitmapBuild<'a> {
    pub stmt: &'a StatementContext,
    pub partition: usize,
    /// The bound of every bitmap built (`work_mem` in bytes).
    pub max_bytes: usize,
    /// The heap's size in blocks when the scan started (lets a bitmap that covers much of
    /// it keep its pages in an array: `bitmap/page_table.rs`).
    pub heap_blocks: u32,
}

impl BitmapBuild<'_> {
    /// A new, empty bitmap within `max_bytes` for this heap.
    pub fn new_bitmap(&self) -> TidBitmap {
        TidBitmap::for_heap(self.max_bytes, self.heap_blocks)
    }
}

/// A plan node that produces a TID bitmap (Bitmap Index Scan, BitmapAnd, BitmapOr).
pub trait BitmapPlan: ExecutionPlan {
    /// Add this node's TIDs to `bitmap`.
    fn add_to_bitmap(&self, build: &BitmapBuild<'_>, bitmap: &mut TidBitmap) -> PgResult<()>;

    /// A new bitmap of this node's TIDs, within `build.max_bytes`.
    fn build_bitmap(&self, build: &BitmapBuild<'_>) -> PgResult<TidBitmap> {
        let mut bitmap = build.new_bitmap();
        self.add_to_bitmap(build, &mut bitmap)?;
        Ok(bitmap)
    }
}

/// The bitmap node `plan` is, looking through wrappers an optimizer may have put around it
/// (a node with one child that is not itself a bitmap node, such as `CooperativeExec`).
pub fn as_bitmap_plan(plan: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn BitmapPlan>> {
    let any: Arc<dyn Any + Send + Sync> = plan.clone();
    let any = match any.downcast::<BitmapIndexScanExec>() {
        Ok(node) => return Some(node),
        Err(any) => any,
    };
    if let Ok(node) = any.downcast::<BitmapCombineExec>() {
        return Some(node);
    }
    match plan.children().as_slice() {
        [only] => as_bitmap_plan(only),
        _ => None,
    }
}

/// Properties of a bitmap node: no columns, one partition. Marked cooperative so that
/// DataFusion does not wrap these leaves in `CooperativeExec`: they never stream.
fn bitmap_node_properties() -> Arc<PlanProperties> {
    Arc::new(
        PlanProperties::new(
            EquivalenceProperties::new(Arc::new(Schema::empty())),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        )
        .with_scheduling_type(SchedulingType::Cooperative),
    )
}

fn not_executable(name: &str) -> DataFusionError {
    DataFusionError::Internal(format!(
        "{name} produces a bitmap and runs inside its Bitmap Heap Scan"
    ))
}

// ---------------------------------------------------------------------------------------------
// Bitmap Index Scan

/// Adds the TIDs an index finds to a bitmap; its I/O goes to the account it is given.
pub type TidScan = Arc<
    dyn Fn(&StatementContext, &mut IoAccount, &mut TidBitmap) -> PgResult<TidScanDone>
        + Send
        + Sync,
>;

/// What a [`TidScan`] did: its read stream, if it read through one (EXPLAIN (IO)), and
/// its descents of the tree (`Index Searches:`).
#[derive(Default)]
pub struct TidScanDone {
    pub stream: Option<ReadStreamStats>,
    pub searches: u64,
}

/// `Bitmap Index Scan on <index>`: runs an index scan into a bitmap.
#[derive(Clone)]
pub struct BitmapIndexScanExec {
    pub index_name: String,
    /// `Index Cond:` (their AND), over the table's schema.
    pub index_quals: Vec<Arc<dyn PhysicalExpr>>,
    estimate: Option<PathEstimate>,
    scan: TidScan,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl BitmapIndexScanExec {
    /// A Bitmap Index Scan on `index_name` whose TIDs come from `scan`.
    ///
    /// ```ignore
    /// let scan: TidScan = Arc::new(move |stmt, acct, bitmap| {
    ///     bitmap.try_add_tuples(index.scan_range(lower, upper, acct), false).map(|_| ())
    /// });
    /// BitmapIndexScanExec::new("eic_a_idx", vec![a_below_140], scan)
    /// ```
    pub fn new(
        index_name: impl Into<String>,
        index_quals: Vec<Arc<dyn PhysicalExpr>>,
        scan: TidScan,
    ) -> BitmapIndexScanExec {
        BitmapIndexScanExec {
            index_name: index_name.into(),
            index_quals,
            estimate: None,
            scan,
            properties: bitmap_node_properties(),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The planner's estimate for the node.
    pub fn with_estimate(mut self, estimate: PathEstimate) -> Self {
        self.estimate = Some(estimate);
        self
    }

    /// Some when the planner built the node.
    pub fn estimate(&self) -> Option<PathEstimate> {
        self.estimate
    }
}

impl fmt::Debug for BitmapIndexScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BitmapIndexScanExec({})", self.index_name)
    }
}

impl DisplayAs for BitmapIndexScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Bitmap Index Scan on {}", self.index_name)?;
        if let Some(cond) = conjunction(&self.index_quals) {
            write!(f, ", Index Cond: {}", fmt_sql(cond.as_ref()))?;
        }
        Ok(())
    }
}

impl BitmapPlan for BitmapIndexScanExec {
    fn add_to_bitmap(&self, build: &BitmapBuild<'_>, bitmap: &mut TidBitmap) -> PgResult<()> {
        let baseline = BaselineMetrics::new(&self.metrics, build.partition);
        let mut acct = build.stmt.new_account();
        let before = bitmap.tids_added();
        let result = {
            let _timer = baseline.elapsed_compute().timer();
            (self.scan)(build.stmt, &mut acct, bitmap)
        };
        baseline.record_output((bitmap.tids_added() - before) as usize);
        acct.flush();
        let done = result.as_ref().ok();
        let stream = done.and_then(|d| d.stream.as_ref());
        publish_io_metrics(&self.metrics, build.partition, &acct, stream);
        MetricBuilder::new(&self.metrics)
            .counter("index_searches", build.partition)
            .add(done.map_or(1, |d| d.searches) as usize);
        build.stmt.add_usage(&acct.usage);
        baseline.done();
        result.map(|_| ())
    }
}

impl ExecutionPlan for BitmapIndexScanExec {
    fn name(&self) -> &str {
        "BitmapIndexScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    /// A copy to run again (a generic plan's next run) with metrics of its own; the
    /// nodes above it, given the copy, make theirs anew.
    fn reset_state(self: Arc<Self>) -> DfResult<Arc<dyn ExecutionPlan>> {
        let mut copy = Arc::unwrap_or_clone(self);
        copy.metrics = ExecutionPlanMetricsSet::new();
        Ok(Arc::new(copy))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        _partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        Err(not_executable("Bitmap Index Scan"))
    }
}

// ---------------------------------------------------------------------------------------------
// BitmapAnd / BitmapOr

/// Which set operation a [`BitmapCombineExec`] performs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BitmapCombine {
    And,
    Or,
}

/// `BitmapAnd` / `BitmapOr` over two or more bitmap nodes.
pub struct BitmapCombineExec {
    pub op: BitmapCombine,
    estimate: Option<PathEstimate>,
    inputs: Vec<Arc<dyn BitmapPlan>>,
    /// The same nodes as plan children.
    children: Vec<Arc<dyn ExecutionPlan>>,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl BitmapCombineExec {
    pub fn new(op: BitmapCombine, inputs: Vec<Arc<dyn BitmapPlan>>) -> BitmapCombineExec {
        assert!(!inputs.is_empty(), "{op:?} of no bitmaps");
        let children = inputs
            .iter()
            .map(|input| Arc::clone(input) as Arc<dyn ExecutionPlan>)
            .collect();
        BitmapCombineExec {
            op,
            estimate: None,
            inputs,
            children,
            properties: bitmap_node_properties(),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The planner's estimate for the node.
    pub fn with_estimate(mut self, estimate: PathEstimate) -> Self {
        self.estimate = Some(estimate);
        self
    }

    /// Some when the planner built the node.
    pub fn estimate(&self) -> Option<PathEstimate> {
        self.estimate
    }

    /// `BitmapAnd` of `inputs`.
    pub fn and(inputs: Vec<Arc<dyn BitmapPlan>>) -> BitmapCombineExec {
        BitmapCombineExec::new(BitmapCombine::And, inputs)
    }

    /// `BitmapOr` of `inputs`.
    pub fn or(inputs: Vec<Arc<dyn BitmapPlan>>) -> BitmapCombineExec {
        BitmapCombineExec::new(BitmapCombine::Or, inputs)
    }

    /// The PostgreSQL node name.
    pub fn node_name(&self) -> &'static str {
        match self.op {
            BitmapCombine::And => "BitmapAnd",
            BitmapCombine::Or => "BitmapOr",
        }
    }

    fn combine(
        &self,
        build: &BitmapBuild<'_>,
        into: Option<&mut TidBitmap>,
    ) -> PgResult<Option<TidBitmap>> {
        let baseline = BaselineMetrics::new(&self.metrics, build.partition);
        let result = match (self.op, into) {
            (BitmapCombine::Or, Some(bitmap)) => {
                // Children add straight into the one bitmap (PostgreSQL hands a BitmapOr's
                // result to its index scans).
                for input in &self.inputs {
                    input.add_to_bitmap(build, bitmap)?;
                }
                None
            }
            (BitmapCombine::Or, None) => {
                let mut bitmap = build.new_bitmap();
                for input in &self.inputs {
                    input.add_to_bitmap(build, &mut bitmap)?;
                }
                Some(bitmap)
            }
            (BitmapCombine::And, into) => {
                let mut result = self.inputs[0].build_bitmap(build)?;
                for input in &self.inputs[1..] {
                    if result.is_empty() {
                        break; // nothing can come back: skip the other index scans
                    }
                    let other = input.build_bitmap(build)?;
                    let _timer = baseline.elapsed_compute().timer();
                    result.intersect(&other);
                }
                match into {
                    Some(bitmap) if bitmap.is_empty() => {
                        *bitmap = result;
                        None
                    }
                    Some(bitmap) => {
                        bitmap.union(&result);
                        None
                    }
                    None => Some(result),
                }
            }
        };
        baseline.done();
        Ok(result)
    }
}

impl fmt::Debug for BitmapCombineExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}Exec", self.node_name())
    }
}

impl DisplayAs for BitmapCombineExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.node_name())
    }
}

impl BitmapPlan for BitmapCombineExec {
    fn add_to_bitmap(&self, build: &BitmapBuild<'_>, bitmap: &mut TidBitmap) -> PgResult<()> {
        self.combine(build, Some(bitmap)).map(|_| ())
    }

    fn build_bitmap(&self, build: &BitmapBuild<'_>) -> PgResult<TidBitmap> {
        Ok(self
            .combine(build, None)?
            .expect("a combination without a target returns its bitmap"))
    }
}

impl ExecutionPlan for BitmapCombineExec {
    fn name(&self) -> &str {
        match self.op {
            BitmapCombine::And => "BitmapAndExec",
            BitmapCombine::Or => "BitmapOrExec",
        }
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.children.iter().collect()
    }

    fn input_distribution_requirements(&self) -> InputDistributionRequirements {
        InputDistributionRequirements::new(vec![Distribution::SinglePartition; self.children.len()])
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false; self.children.len()]
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
        let unchanged = children.len() == self.children.len()
            && children
                .iter()
                .zip(&self.children)
                .all(|(new, old)| Arc::ptr_eq(new, old));
        if unchanged {
            return Ok(self);
        }
        let inputs = children
            .iter()
            .map(|child| {
                as_bitmap_plan(child).ok_or_else(|| {
                    DataFusionError::Internal(format!(
                        "{} over a node that produces no bitmap: {}",
                        self.node_name(),
                        child.name()
                    ))
                })
            })
            .collect::<DfResult<Vec<_>>>()?;
        Ok(Arc::new(BitmapCombineExec {
            op: self.op,
            estimate: self.estimate,
            inputs,
            children,
            properties: bitmap_node_properties(),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        _partition: usize,
        _context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        Err(not_executable(self.node_name()))
    }
}

// ---------------------------------------------------------------------------------------------
// Bitmap Heap Scan

/// Makes a fresh [`Recheck`] for each execution (a recheck may keep state).
pub type RecheckFactory = Arc<dyn Fn() -> Recheck + Send + Sync>;

/// `Bitmap Heap Scan on <table>`: builds its child's bitmap, then reads the pages.
pub struct BitmapHeapScanExec {
    db: Arc<Database>,
    pub table: TableDef,
    /// Table column numbers of the output (`table.columns.len()` is `ctid`).
    pub projection: Vec<usize>,
    pub limit: Option<usize>,
    /// `work_mem` in bytes: the bound of the bitmap.
    pub work_mem_bytes: usize,
    /// `Recheck Cond:`, over the table's schema: the AND of [`covered_quals`](Self::covered_quals).
    pub recheck_cond: Option<Arc<dyn PhysicalExpr>>,
    covered: Vec<Arc<dyn PhysicalExpr>>,
    recheck: Option<RecheckFactory>,
    estimate: Option<PathEstimate>,
    bitmap: Arc<dyn BitmapPlan>,
    /// The same node as a plan child.
    bitmap_child: Arc<dyn ExecutionPlan>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl BitmapHeapScanExec {
    /// A Bitmap Heap Scan of `table` (whose columns are `table_schema`, perhaps with
    /// `ctid`) over the bitmap of `bitmap`, bounded by `work_mem_bytes`. Without
    /// [`with_recheck`](Self::with_recheck), lossy pages return every visible tuple.
    pub fn new(
        db: Arc<Database>,
        table: TableDef,
        table_schema: SchemaRef,
        projection: Vec<usize>,
        bitmap: Arc<dyn BitmapPlan>,
        work_mem_bytes: usize,
    ) -> BitmapHeapScanExec {
        let schema = Arc::new(
            table_schema
                .project(&projection)
                .expect("projection within the table"),
        );
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        let bitmap_child = Arc::clone(&bitmap) as Arc<dyn ExecutionPlan>;
        BitmapHeapScanExec {
            db,
            table,
            projection,
            limit: None,
            work_mem_bytes,
            recheck_cond: None,
            covered: Vec::new(),
            recheck: None,
            estimate: None,
            bitmap,
            bitmap_child,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The conditions the bitmap stands for, to test again on lossy pages (and exact pages
    /// marked recheck): the pushed-down conjuncts they are (EXPLAIN's `Recheck Cond:`), and
    /// a maker of the test.
    pub fn with_recheck(
        mut self,
        covered: Vec<Arc<dyn PhysicalExpr>>,
        recheck: RecheckFactory,
    ) -> Self {
        self.recheck_cond = conjunction(&covered);
        self.covered = covered;
        self.recheck = Some(recheck);
        self
    }

    /// The planner's estimate for the node.
    pub fn with_estimate(mut self, estimate: PathEstimate) -> Self {
        self.estimate = Some(estimate);
        self
    }

    /// Some when the planner built the node.
    pub fn estimate(&self) -> Option<PathEstimate> {
        self.estimate
    }

    /// The pushed-down conjuncts every returned row satisfies (the bitmap's conditions,
    /// rechecked where the bitmap is lossy).
    pub fn covered_quals(&self) -> &[Arc<dyn PhysicalExpr>] {
        &self.covered
    }

    /// Stop after `limit` rows (a LIMIT pushed into the scan).
    pub fn with_limit(mut self, limit: Option<usize>) -> Self {
        self.limit = limit;
        self
    }

    /// The bitmap-producing child.
    pub fn bitmap(&self) -> &Arc<dyn BitmapPlan> {
        &self.bitmap
    }
}

impl fmt::Debug for BitmapHeapScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BitmapHeapScanExec({})", self.table.name)
    }
}

impl DisplayAs for BitmapHeapScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Bitmap Heap Scan on {}", self.table.name)?;
        if let Some(cond) = &self.recheck_cond {
            write!(f, ", Recheck Cond: {}", fmt_sql(cond.as_ref()))?;
        }
        Ok(())
    }
}

impl ExecutionPlan for BitmapHeapScanExec {
    fn name(&self) -> &str {
        "BitmapHeapScanExec"
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        Ok(PathEstimate::statistics(
            self.estimate,
            self.limit,
            &self.schema,
        ))
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.bitmap_child]
    }

    fn input_distribution_requirements(&self) -> InputDistributionRequirements {
        InputDistributionRequirements::new(vec![Distribution::SinglePartition])
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
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
        let [child] = children.as_slice() else {
            return Err(DataFusionError::Internal(format!(
                "Bitmap Heap Scan with {} children",
                children.len()
            )));
        };
        if Arc::ptr_eq(child, &self.bitmap_child) {
            return Ok(self);
        }
        let bitmap = as_bitmap_plan(child).ok_or_else(|| {
            DataFusionError::Internal(format!(
                "Bitmap Heap Scan over a node that produces no bitmap: {}",
                child.name()
            ))
        })?;
        Ok(Arc::new(BitmapHeapScanExec {
            db: self.db.clone(),
            table: self.table.clone(),
            projection: self.projection.clone(),
            limit: self.limit,
            work_mem_bytes: self.work_mem_bytes,
            recheck_cond: self.recheck_cond.clone(),
            covered: self.covered.clone(),
            recheck: self.recheck.clone(),
            estimate: self.estimate,
            bitmap,
            bitmap_child: child.clone(),
            schema: self.schema.clone(),
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
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
        let job = HeapJob {
            db: self.db.clone(),
            rel_columns: crate::heap::codec::TupleLayout::for_table(&self.table),
            relfilenode: self.table.relfilenode,
            table_name: self.table.name.clone(),
            projection: self.projection.clone(),
            schema: self.schema.clone(),
            bitmap: self.bitmap.clone(),
            work_mem_bytes: self.work_mem_bytes,
            recheck: self.recheck.as_ref().map(|make| make()),
            limit: self.limit,
            partition,
            baseline: BaselineMetrics::new(&self.metrics, partition),
            metrics: self.metrics.clone(),
        };
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(SCAN_CHANNEL_BATCHES);
        tokio::task::spawn_blocking(move || job.run(stmt, tx));
        let stream =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            stream,
        )))
    }
}

/// Everything the scanning thread needs.
struct HeapJob {
    db: Arc<Database>,
    rel_columns: crate::heap::codec::TupleLayout,
    relfilenode: u32,
    table_name: String,
    projection: Vec<usize>,
    schema: SchemaRef,
    bitmap: Arc<dyn BitmapPlan>,
    work_mem_bytes: usize,
    recheck: Option<Recheck>,
    limit: Option<usize>,
    partition: usize,
    baseline: BaselineMetrics,
    metrics: ExecutionPlanMetricsSet,
}

impl HeapJob {
    fn run(
        self,
        stmt: Arc<StatementContext>,
        tx: tokio::sync::mpsc::Sender<DfResult<RecordBatch>>,
    ) {
        let HeapJob {
            db,
            rel_columns,
            relfilenode,
            table_name,
            projection,
            schema,
            bitmap,
            work_mem_bytes,
            recheck,
            limit,
            partition,
            baseline,
            metrics,
        } = self;
        let prepared = stmt
            .check_cancel()
            .and_then(|()| db.relfile(relfilenode))
            .and_then(|rel| {
                let build = BitmapBuild {
                    stmt: &stmt,
                    partition,
                    max_bytes: work_mem_bytes,
                    heap_blocks: rel.nblocks(),
                };
                Ok((bitmap.build_bitmap(&build)?, rel))
            });
        let (bitmap, rel) = match prepared {
            Ok(prepared) => prepared,
            Err(e) => {
                let _ = tx.blocking_send(Err(to_df(e)));
                baseline.done();
                return;
            }
        };
        let mut scanner = BitmapHeapScanner::new(
            db.aio.clone(),
            db.pool.clone(),
            rel,
            rel_columns,
            projection,
            schema,
            VisibilityChecker::new(stmt.snapshot.clone()),
            bitmap,
            recheck,
            &stmt.stream_config(false, false),
            stmt.new_account(),
        );
        let mut remaining = limit.unwrap_or(usize::MAX);
        while remaining > 0 {
            if let Err(e) = stmt.check_cancel() {
                let _ = tx.blocking_send(Err(to_df(e)));
                break;
            }
            let _timer = baseline.elapsed_compute().timer();
            match scanner.next_batch() {
                Ok(Some(mut batch)) => {
                    if batch.num_rows() > remaining {
                        batch = batch.slice(0, remaining);
                    }
                    remaining -= batch.num_rows();
                    baseline.record_output(batch.num_rows());
                    if tx.blocking_send(Ok(batch)).is_err() {
                        break; // the consumer is gone
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let _ = tx.blocking_send(Err(to_df(e)));
                    break;
                }
            }
        }
        scanner.flush_stats();
        publish_io_metrics(
            &metrics,
            partition,
            scanner.acct(),
            Some(&scanner.stream_stats()),
        );
        let counts = scanner.counts();
        for (name, value) in [
            ("exact_heap_blocks", counts.exact_pages),
            ("lossy_heap_blocks", counts.lossy_pages),
            (
                "rows_removed_by_index_recheck",
                counts.rows_removed_by_index_recheck,
            ),
        ] {
            MetricBuilder::new(&metrics)
                .counter(name, partition)
                .add(value as usize);
        }
        baseline.done();
        let u = scanner.acct().usage;
        tracing::debug!(
            "Bitmap Heap Scan of {table_name}: Heap Blocks: exact={} lossy={}; Buffers: shared hit={} read={}",
            counts.exact_pages,
            counts.lossy_pages,
            u.shared_hit,
            u.shared_read
        );
        stmt.add_usage(&u);
    }
}

#[cfg(test)]
pub(crate) mod tests {

    use datafusion::arrow::array::{Array, Int32Array};
    use datafusion::physical_plan::coop::CooperativeExec;
    use datafusion::physical_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
    use datafusion::prelude::SessionConfig;
    use iolab_settings::IoMethod;

    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{BinaryExpr, Column, Literal};
    use datafusion::scalar::ScalarValue;

    use super::*;
    use crate::exec::context::StreamSettings;
    use crate::exec::table::table_schema;
    use crate::heap::bitmap_heap::recheck_column;
    use crate::heap::bitmap_heap::tests::{eic_table, row, tids_where, EicTable};
    use crate::heap::codec::Datum;
    use iolab_catalog::PgType;

    pub(crate) fn task(t: &EicTable, eic: i32) -> Arc<TaskContext> {
        task_with(t, eic, Default::default())
    }

    /// A statement's task context with `effective_io_concurrency = eic` and `planner`.
    pub(crate) fn task_with(
        t: &EicTable,
        eic: i32,
        planner: crate::plan::PlannerSettings,
    ) -> Arc<TaskContext> {
        let stmt = StatementContext {
            track_io_timing: true,
            io: StreamSettings {
                effective_io_concurrency: eic,
                ..StreamSettings::default()
            },
            planner,
            ..StatementContext::for_tests(&t.db, 0)
        };
        let config = SessionConfig::new().with_extension(Arc::new(stmt));
        Arc::new(TaskContext::default().with_session_config(config))
    }

    /// `a <op> v` over the table's schema.
    pub(crate) fn a_is(op: Operator, v: i32) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(
            Arc::new(Column::new("a", 0)),
            op,
            Arc::new(Literal::new(ScalarValue::Int32(Some(v)))),
        ))
    }

    /// A Bitmap Index Scan on `a` for `test`, with TIDs found by reading the table.
    fn index_scan(
        t: &EicTable,
        cond: Vec<Arc<dyn PhysicalExpr>>,
        test: fn(i32) -> bool,
    ) -> Arc<BitmapIndexScanExec> {
        let tids = tids_where(t, test);
        let scan: TidScan = Arc::new(move |_stmt, _acct, bitmap| {
            bitmap
                .add_tuples(tids.iter().copied(), false)
                .map(|_| TidScanDone::default())
        });
        Arc::new(BitmapIndexScanExec::new("eic_a_idx", cond, scan))
    }

    fn heap_scan(
        t: &EicTable,
        bitmap: Arc<dyn BitmapPlan>,
        work_mem_bytes: usize,
        cond: Vec<Arc<dyn PhysicalExpr>>,
        test: fn(i32) -> bool,
    ) -> BitmapHeapScanExec {
        let recheck: RecheckFactory =
            Arc::new(move || recheck_column(0, move |a| matches!(a, Datum::Int4(v) if test(v))));
        BitmapHeapScanExec::new(
            t.db.clone(),
            t.def.clone(),
            table_schema(&t.def, false),
            vec![0, 1],
            bitmap,
            work_mem_bytes,
        )
        .with_recheck(cond, recheck)
    }

    pub(crate) async fn run(plan: Arc<dyn ExecutionPlan>, task: Arc<TaskContext>) -> Vec<i32> {
        let batches = datafusion::physical_plan::collect(plan, task)
            .await
            .unwrap();
        let mut a = Vec::new();
        for b in &batches {
            let col = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
            a.extend((0..b.num_rows()).map(|i| col.value(i)));
        }
        a.sort();
        a
    }

    pub(crate) fn metric(plan: &dyn ExecutionPlan, name: &str) -> usize {
        plan.metrics()
            .unwrap()
            .sum_by_name(name)
            .map_or(0, |v| v.as_usize())
    }

    /// The `a` values of the committed rows passing `test`, sorted.
    pub(crate) fn expected(nrows: u64, test: fn(i32) -> bool) -> Vec<i32> {
        let mut a: Vec<i32> = (0..nrows).map(|i| row(i).0).filter(|&a| test(a)).collect();
        a.sort();
        a
    }

    const NROWS: u64 = 30_000;

    #[tokio::test]
    async fn bitmap_heap_scan_publishes_its_metrics() {
        let t = eic_table("bhs-exec", NROWS, IoMethod::Worker);
        let below = |a: i32| a < 140;
        let index = index_scan(&t, vec![a_is(Operator::Lt, 140)], below);
        let ntids = tids_where(&t, below).len();
        t.evict();
        let plan = Arc::new(heap_scan(
            &t,
            index.clone(),
            4 << 20,
            vec![a_is(Operator::Lt, 140)],
            below,
        ));
        let rows = run(plan.clone(), task(&t, 16)).await;
        assert_eq!(rows, expected(NROWS, below));
        let exact = metric(plan.as_ref(), "exact_heap_blocks");
        assert!(exact > 100);
        assert_eq!(metric(plan.as_ref(), "lossy_heap_blocks"), 0);
        assert_eq!(metric(plan.as_ref(), "rows_removed_by_index_recheck"), 0);
        assert_eq!(metric(plan.as_ref(), "shared_read"), exact);
        assert!(metric(plan.as_ref(), "io_reads") > 0);
        // 17 × io_combine_limit: beyond the pool's share (8192 / 64), with borrowed pins.
        assert_eq!(metric(plan.as_ref(), "prefetch_capacity"), 272);
        assert_eq!(plan.metrics().unwrap().output_rows(), Some(rows.len()));
        // The index node's rows are its TIDs (the aborted rows' included).
        assert_eq!(index.metrics().unwrap().output_rows(), Some(ntids));
        assert_eq!(
            format!(
                "{}",
                datafusion::physical_plan::displayable(plan.as_ref()).indent(false)
            ),
            "Bitmap Heap Scan on eic, Recheck Cond: a < 140\n  \
             Bitmap Index Scan on eic_a_idx, Index Cond: a < 140\n"
        );

        // A tiny work_mem: lossy pages, rechecked, the same answer.
        t.evict();
        let plan = Arc::new(heap_scan(
            &t,
            index,
            1024,
            vec![a_is(Operator::Lt, 140)],
            below,
        ));
        let rows = run(plan.clone(), task(&t, 16)).await;
        assert_eq!(rows, expected(NROWS, below));
        assert!(metric(plan.as_ref(), "lossy_heap_blocks") > 0);
        assert!(metric(plan.as_ref(), "rows_removed_by_index_recheck") > 0);
        assert_eq!(
            metric(plan.as_ref(), "exact_heap_blocks") + metric(plan.as_ref(), "lossy_heap_blocks"),
            exact
        );
    }

    #[tokio::test]
    async fn bitmap_and_or() {
        let t = eic_table("bhs-and-or", NROWS, IoMethod::Sync);
        let below = |a: i32| a < 140;
        let above = |a: i32| a >= 70;
        let both = |a: i32| (70..140).contains(&a);
        let and: Arc<dyn BitmapPlan> = Arc::new(BitmapCombineExec::and(vec![
            index_scan(&t, vec![a_is(Operator::Lt, 140)], below),
            index_scan(&t, vec![a_is(Operator::GtEq, 70)], above),
        ]));
        for work_mem in [4 << 20, 1024] {
            let plan = Arc::new(heap_scan(
                &t,
                and.clone(),
                work_mem,
                vec![a_is(Operator::Lt, 140), a_is(Operator::GtEq, 70)],
                both,
            ));
            assert_eq!(run(plan.clone(), task(&t, 16)).await, expected(NROWS, both));
        }
        let low = |a: i32| a < 50;
        let high = |a: i32| a >= 9950;
        let either = |a: i32| !(50..9950).contains(&a);
        let or: Arc<dyn BitmapPlan> = Arc::new(BitmapCombineExec::or(vec![
            index_scan(&t, vec![a_is(Operator::Lt, 50)], low),
            index_scan(&t, vec![a_is(Operator::GtEq, 9950)], high),
        ]));
        let plan = Arc::new(heap_scan(
            &t,
            or,
            4 << 20,
            vec![Arc::new(BinaryExpr::new(
                a_is(Operator::Lt, 50),
                Operator::Or,
                a_is(Operator::GtEq, 9950),
            ))],
            either,
        ));
        assert_eq!(run(plan, task(&t, 0)).await, expected(NROWS, either));
        // An AND under an OR, as the planner may build for (a < 50) OR (70 <= a < 140).
        let nested: Arc<dyn BitmapPlan> = Arc::new(BitmapCombineExec::or(vec![
            index_scan(&t, vec![a_is(Operator::Lt, 50)], low),
            and,
        ]));
        let test = |a: i32| a < 50 || (70..140).contains(&a);
        let plan = Arc::new(heap_scan(&t, nested, 4 << 20, vec![], test));
        assert_eq!(run(plan, task(&t, 16)).await, expected(NROWS, test));
    }

    /// CREATE INDEX eic_a_idx ON eic(a), in the catalog too.
    pub(crate) fn index_on_a(t: &EicTable, task: &Arc<TaskContext>) -> iolab_catalog::IndexDef {
        use iolab_catalog::{IndexDef, Persistence};
        let oid = t.db.catalog.allocate_oid().unwrap();
        let def = IndexDef {
            oid,
            schema: "public".into(),
            name: "eic_a_idx".into(),
            table_oid: t.def.oid,
            relfilenode: oid,
            columns: vec![0],
            key_types: vec![PgType::Int4],
            unique: false,
            constraint: None,
            persistence: Persistence::Unlogged,
            reloptions: Vec::new(),
            clustered: false,
        };
        let stmt = StatementContext::from_task(task).unwrap();
        crate::btree::create_index(&t.db, &stmt, &t.def, &def).unwrap();
        def
    }

    /// The planner's shape: a Bitmap Index Scan over the real B-tree (`scan_range` feeding
    /// `try_add_tuples`), its own buffers counted apart from the heap's.
    #[tokio::test]
    async fn over_a_btree_index() {
        use crate::btree::BtreeIndex;
        use std::ops::Bound;

        let t = eic_table("bhs-btree", NROWS, IoMethod::Worker);
        let task = task(&t, 16);
        let def = index_on_a(&t, &task);
        let index = Arc::new(BtreeIndex::open(&t.db, &def).unwrap());
        let scan: TidScan = Arc::new(move |_stmt, acct, bitmap| {
            let tids =
                index.scan_range(Bound::Unbounded, Bound::Excluded(Datum::Int4(140)), acct)?;
            bitmap
                .try_add_tuples(tids, false)
                .map(|_| TidScanDone::default())
        });
        let node = Arc::new(BitmapIndexScanExec::new(
            "eic_a_idx",
            vec![a_is(Operator::Lt, 140)],
            scan,
        ));
        t.db.pool.evict_all(&mut IoAccount::default()).unwrap();
        let below = |a: i32| a < 140;
        // (~250 pages: 4MB holds them all exactly; 1kB, 16 entries, goes lossy.)
        for work_mem in [4 << 20, 1024] {
            let plan = Arc::new(heap_scan(
                &t,
                node.clone(),
                work_mem,
                vec![a_is(Operator::Lt, 140)],
                below,
            ));
            assert_eq!(
                run(plan.clone(), task.clone()).await,
                expected(NROWS, below)
            );
            let lossy = metric(plan.as_ref(), "lossy_heap_blocks");
            assert_eq!(lossy > 0, work_mem == 1024, "lossy={lossy}");
        }
        let matching = expected(NROWS, below).len();
        assert_eq!(node.metrics().unwrap().output_rows(), Some(2 * matching));
        assert!(
            metric(node.as_ref(), "shared_read") > 0,
            "the index was read cold"
        );
    }

    #[tokio::test]
    async fn a_wrapped_child_still_produces_the_bitmap() {
        let t = eic_table("bhs-wrapped", 5000, IoMethod::Sync);
        let below = |a: i32| a < 140;
        let plan: Arc<dyn ExecutionPlan> = Arc::new(heap_scan(
            &t,
            index_scan(&t, vec![a_is(Operator::Lt, 140)], below),
            4 << 20,
            vec![a_is(Operator::Lt, 140)],
            below,
        ));
        let wrapped: Arc<dyn ExecutionPlan> =
            Arc::new(CooperativeExec::new(plan.children()[0].clone()));
        let plan = plan
            .replace_children(
                vec![wrapped],
                ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
            )
            .unwrap();
        assert_eq!(run(plan.clone(), task(&t, 16)).await, expected(5000, below));
        let index = plan.children()[0].children()[0].clone();
        assert!(index.is::<BitmapIndexScanExec>());
        assert!(
            index.execute(0, task(&t, 16)).is_err(),
            "bitmap nodes do not stream"
        );
    }
}
