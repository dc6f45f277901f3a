//! `IndexScanExec`: PostgreSQL's plain Index Scan as a DataFusion operator.
//!
//! # How it reads
//!
//! The scan walks the B-tree for its condition's keys ([`IndexCond::scan`]): leaf pages in
//! key order, a page at a time, each page's matching heap TIDs copied out before the next
//! leaf is read. For each TID in turn it reads the heap page through the buffer pool with
//! the normal strategy (no read stream, no ring: PostgreSQL 18 does the same for index
//! scans, which is why they are chosen only for small, selective lookups or tables whose
//! order follows the key), keeping the page pinned while consecutive TIDs point into it,
//! as `ReleaseAndReadBuffer` does, so a correlated table costs one pin per page, not per
//! row. A tuple is returned if the statement's snapshot sees it; rows come out in index
//! order.
//!
//! It runs on a blocking thread and hands batches of up to `SCAN_BATCH_ROWS` rows through
//! a channel of [`SCAN_CHANNEL_BATCHES`] batches, like the Seq Scan; it stops when the
//! consumer goes away or the statement is canceled (checked before each heap page read).
//!
//! Metrics: the index's and the heap's buffers together under the Seq Scan's names
//! (`shared_hit`, `shared_read`, …, times, read latency gauges: see `scan.rs`; no read
//! stream gauges), and `index_searches` (descents of the tree: always 1 here, PostgreSQL
//! 18's `Index Searches:`).

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Result as DfResult;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_expr_common::physical_expr::fmt_sql;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use iolab_catalog::{PgResult, TableDef};

use crate::btree::BtreeIndex;
use crate::buffer::PinnedBuffer;
use crate::exec::context::StatementContext;
use crate::exec::scan::{publish_io_metrics, to_df, SCAN_CHANNEL_BATCHES};
use crate::heap::heapam::SCAN_BATCH_ROWS;
use crate::heap::rows::RowCollector;
use crate::heap::tuple;
use crate::plan::index_cond::{conjunction, IndexCond};
use crate::plan::PathEstimate;
use crate::storage::page;
use crate::txn::VisibilityChecker;
use crate::Database;

/// `Index Scan using <index> on <table>`.
pub struct IndexScanExec {
    db: Arc<Database>,
    pub index_name: String,
    pub table: TableDef,
    /// Table column numbers of the output (`table.columns.len()` is `ctid`).
    pub projection: Vec<usize>,
    /// `Index Cond:` (their AND), over the table's schema.
    pub index_quals: Vec<Arc<dyn PhysicalExpr>>,
    cond: IndexCond,
    estimate: Option<PathEstimate>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl IndexScanExec {
    /// An index scan of `table` (whose columns are `table_schema`, perhaps with `ctid`) for
    /// `cond`, returning `projection`.
    pub fn new(
        db: Arc<Database>,
        table: TableDef,
        table_schema: SchemaRef,
        projection: Vec<usize>,
        cond: IndexCond,
    ) -> IndexScanExec {
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
        IndexScanExec {
            db,
            index_name: cond.index.name.clone(),
            table,
            projection,
            index_quals: cond.quals.clone(),
            cond,
            estimate: None,
            schema,
            properties,
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

    /// The pushed-down conjuncts every returned row satisfies: the index conditions.
    pub fn covered_quals(&self) -> &[Arc<dyn PhysicalExpr>] {
        &self.index_quals
    }
}

impl fmt::Debug for IndexScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "IndexScanExec({} on {})",
            self.index_name, self.table.name
        )
    }
}

impl DisplayAs for IndexScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(
            f,
            "Index Scan using {} on {}",
            self.index_name, self.table.name
        )?;
        if let Some(cond) = conjunction(&self.index_quals) {
            write!(f, ", Index Cond: {}", fmt_sql(cond.as_ref()))?;
        }
        Ok(())
    }
}

impl ExecutionPlan for IndexScanExec {
    fn name(&self) -> &str {
        "IndexScanExec"
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

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let stmt = StatementContext::from_task(&context).map_err(to_df)?;
        let job = IndexJob {
            db: self.db.clone(),
            table: self.table.clone(),
            cond: self.cond.clone(),
            rows: RowCollector::new(
                self.table.columns.iter().map(|c| c.ty).collect(),
                self.projection.clone(),
                self.schema.clone(),
            ),
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

type BatchSender = tokio::sync::mpsc::Sender<DfResult<RecordBatch>>;

/// Everything the scanning thread needs.
struct IndexJob {
    db: Arc<Database>,
    table: TableDef,
    cond: IndexCond,
    rows: RowCollector,
    partition: usize,
    baseline: BaselineMetrics,
    metrics: ExecutionPlanMetricsSet,
}

impl IndexJob {
    fn run(mut self, stmt: Arc<StatementContext>, tx: BatchSender) {
        let mut acct = stmt.new_account();
        if let Err(e) = self.scan(&stmt, &mut acct, &tx) {
            let _ = tx.blocking_send(Err(to_df(e)));
        }
        acct.flush();
        publish_io_metrics(&self.metrics, self.partition, &acct, None);
        MetricBuilder::new(&self.metrics)
            .counter("index_searches", self.partition)
            .add(1);
        self.baseline.done();
        tracing::debug!(
            "Index Scan using {} on {}: Buffers: shared hit={} read={}",
            self.cond.index.name,
            self.table.name,
            acct.usage.shared_hit,
            acct.usage.shared_read
        );
        stmt.add_usage(&acct.usage);
    }

    /// Returns the visible rows of the index's TIDs; `Ok` also when the consumer left.
    fn scan(
        &mut self,
        stmt: &StatementContext,
        acct: &mut crate::accounting::IoAccount,
        tx: &BatchSender,
    ) -> PgResult<()> {
        let index = BtreeIndex::open(&self.db, &self.cond.index)?;
        let rel = self.db.relfile(self.table.relfilenode)?;
        let nblocks = rel.nblocks();
        let mut visibility = VisibilityChecker::new(stmt.snapshot.clone());
        let mut tids = self.cond.scan(&index, acct)?;
        // The heap page of the last TID, kept pinned while the next TIDs point into it.
        let mut heap_page: Option<PinnedBuffer> = None;
        let compute = self.baseline.elapsed_compute().clone();
        let mut timer = Some(compute.timer());
        while let Some(tid) = tids.next() {
            let (blkno, off) = tid?;
            if blkno >= nblocks {
                continue; // cannot happen while heaps only grow; never read past the end
            }
            if heap_page.as_ref().map(PinnedBuffer::blkno) != Some(blkno) {
                stmt.check_cancel()?;
                drop(heap_page.take()); // unpin before pinning the next page
                heap_page = Some(self.db.pool.read_buffer(&rel, blkno, None, tids.acct())?);
            }
            let buffer = heap_page.as_ref().expect("pinned above");
            {
                let page = buffer.page();
                if let Some(t) = page::page_item(&page, off) {
                    if visibility.visible(tuple::xmin(t), tuple::cid(t), tuple::xmax(t)) {
                        self.rows.push(t, blkno, off)?;
                    }
                }
            }
            if self.rows.len() >= SCAN_BATCH_ROWS {
                drop(timer.take());
                if !self.send(tx)? {
                    return Ok(());
                }
                timer = Some(compute.timer());
            }
        }
        drop(heap_page);
        drop(timer);
        if !self.rows.is_empty() {
            self.send(tx)?;
        }
        Ok(())
    }

    /// Sends the rows collected; false when the consumer has gone.
    fn send(&mut self, tx: &BatchSender) -> PgResult<bool> {
        let batch = self.rows.finish()?;
        self.baseline.record_output(batch.num_rows());
        Ok(tx.blocking_send(Ok(batch)).is_ok())
    }
}
