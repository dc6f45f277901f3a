//! `HeapScanExec`: PostgreSQL's Seq Scan as a DataFusion operator.
//!
//! The scan runs on a blocking thread (file I/O stays off the async runtime's threads)
//! and hands batches to the consumer through a channel of [`SCAN_CHANNEL_BATCHES`]
//! batches, so a slow consumer stops the scan instead of letting batches pile up. The
//! scan stops early when the consumer goes away (the channel closes), when the statement
//! is canceled, or when a pushed-down LIMIT is reached. Its buffer usage is added to the
//! statement's when it ends.
//!
//! Metrics (what EXPLAIN ANALYZE prints for the node): counts `shared_hit`, `shared_read`,
//! `shared_dirtied`, `shared_written`, `io_reads` (read operations), `io_stalls` (waits for
//! an unfinished read); times `shared_read_time`, `shared_write_time`, `shared_wait_time`
//! (nanoseconds; only with `track_io_timing`); the same `local_…` counts and times for a
//! temporary table's local buffers, when it used them; gauges of the node's read latency
//! `read_latency_p50_us`, `read_latency_p99_us`, `read_latency_p999_us`, `read_latency_max_us`
//! and of its read stream (PostgreSQL 19's EXPLAIN (IO)): `prefetch_capacity`,
//! `prefetch_distance_max`, and the averages ×1000 `prefetch_distance_avg_milli`,
//! `io_size_avg_milli` (blocks per read), `io_inprogress_avg_milli`, `io_gap_blocks`
//! (blocks read only to join two reads, `read_stream_gap_limit`) and `io_drops` (ranges
//! dropped from the page cache, `read_stream_drop_behind`).

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Statistics;
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::StatisticsArgs;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use iolab_catalog::{PgError, TableDef};

use crate::accounting::IoAccount;
use crate::exec::context::StatementContext;
use crate::heap::heapam::HeapScanner;
use crate::plan::PathEstimate;
use crate::stream::ReadStreamStats;
use crate::txn::VisibilityChecker;
use crate::Database;

/// Batches buffered between the scanning thread and the consumer.
pub const SCAN_CHANNEL_BATCHES: usize = 2;

#[derive(Clone)]
pub struct HeapScanExec {
    db: Arc<Database>,
    pub table: TableDef,
    pub projection: Vec<usize>,
    pub limit: Option<usize>,
    estimate: Option<PathEstimate>,
    /// Plans the table's scan again with more conjuncts (`plan::param_scans`).
    replan: Option<crate::plan::paths::Replan>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl HeapScanExec {
    /// A scan of `table` whose columns are `table_schema` (the table's, perhaps with ctid).
    pub fn new(
        db: Arc<Database>,
        table: TableDef,
        table_schema: SchemaRef,
        projection: Vec<usize>,
        limit: Option<usize>,
    ) -> HeapScanExec {
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
        HeapScanExec {
            db,
            table,
            projection,
            limit,
            estimate: None,
            replan: None,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    pub fn with_replan(mut self, replan: Option<crate::plan::paths::Replan>) -> Self {
        self.replan = replan;
        self
    }

    /// The planning of this table's scan again with more conjuncts, when the planner
    /// chose this Seq Scan.
    pub fn replan(&self) -> Option<&crate::plan::paths::Replan> {
        self.replan.as_ref()
    }

    pub fn db(&self) -> &Arc<Database> {
        &self.db
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

impl fmt::Debug for HeapScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HeapScanExec({})", self.table.name)
    }
}

impl DisplayAs for HeapScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Seq Scan on {}", self.table.name)
    }
}

struct ScanCounters {
    baseline: BaselineMetrics,
    metrics: ExecutionPlanMetricsSet,
    partition: usize,
}

impl ScanCounters {
    /// Publish what the scan did as the node's metrics (once, at its end).
    fn publish(&self, scanner: &HeapScanner) {
        publish_io_metrics(
            &self.metrics,
            self.partition,
            scanner.acct(),
            Some(&scanner.stream_stats()),
        );
    }
}

/// Publish an operation's I/O as a node's metrics under the names of the module comment:
/// buffer counts and times from `acct`, its read latency, and the read stream's gauges when
/// it read through one. Shared by every scan node (Seq Scan, Bitmap Heap Scan, Bitmap Index
/// Scan).
pub(crate) fn publish_io_metrics(
    metrics: &ExecutionPlanMetricsSet,
    partition: usize,
    acct: &IoAccount,
    stream: Option<&ReadStreamStats>,
) {
    let m = || MetricBuilder::new(metrics);
    let p = partition;
    let u = acct.usage;
    for (name, value) in [
        ("shared_hit", u.shared_hit),
        ("shared_read", u.shared_read),
        ("shared_dirtied", u.shared_dirtied),
        ("shared_written", u.shared_written),
        ("io_reads", u.io_reads),
        ("io_stalls", u.io_stalls),
    ] {
        m().counter(name, p).add(value as usize);
    }
    // Local buffers (temporary tables) only when used.
    for (name, value) in [
        ("local_hit", u.local_hit),
        ("local_read", u.local_read),
        ("local_dirtied", u.local_dirtied),
        ("local_written", u.local_written),
    ] {
        if value > 0 {
            m().counter(name, p).add(value as usize);
        }
    }
    for (name, ns) in [
        ("shared_read_time", u.shared_read_ns),
        ("shared_write_time", u.shared_write_ns),
        ("shared_wait_time", u.shared_wait_ns),
        ("local_read_time", u.local_read_ns),
        ("local_write_time", u.local_write_ns),
        ("local_wait_time", u.local_wait_ns),
    ] {
        // Only when timed: DataFusion records a zero duration as 1 ns.
        if ns > 0 {
            m().subset_time(name, p)
                .add_duration(std::time::Duration::from_nanos(ns));
        }
    }
    if let Some(latency) = acct.read_latency.summary() {
        for (name, value) in [
            ("read_latency_p50_us", latency.p50_us),
            ("read_latency_p99_us", latency.p99_us),
            ("read_latency_p999_us", latency.p999_us),
            ("read_latency_max_us", latency.max_us),
        ] {
            m().gauge(name, p).set(value as usize);
        }
    }
    let Some(st) = stream else {
        return;
    };
    let avg_milli = |sum: u64, n: u64| if n == 0 { 0 } else { (sum * 1000 / n) as usize };
    for (name, value) in [
        ("prefetch_capacity", st.capacity as usize),
        ("prefetch_distance_max", st.distance_max as usize),
        (
            "prefetch_distance_avg_milli",
            avg_milli(st.distance_sum, st.distance_samples),
        ),
        ("io_size_avg_milli", avg_milli(st.io_blocks, st.ios)),
        ("io_gap_blocks", st.gap_blocks as usize),
        ("io_drops", st.drops as usize),
        (
            "io_inprogress_avg_milli",
            avg_milli(st.inprogress_sum, st.distance_samples),
        ),
    ] {
        m().gauge(name, p).set(value);
    }
}

impl ExecutionPlan for HeapScanExec {
    fn name(&self) -> &str {
        "HeapScanExec"
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

    /// A copy to run again (a generic plan's next run) with metrics of its own.
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
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let stmt = StatementContext::from_task(&context).map_err(to_df)?;
        let rel = self.db.relfile(self.table.relfilenode).map_err(to_df)?;
        let columns = crate::heap::codec::TupleLayout::for_table(&self.table);
        let scanner = HeapScanner::new(
            self.db.aio.clone(),
            self.db.pool.clone(),
            rel,
            columns,
            self.projection.clone(),
            self.schema.clone(),
            VisibilityChecker::new(stmt.snapshot.clone()),
            &stmt.stream_config(false, true),
            stmt.new_account(),
        );
        let counters = ScanCounters {
            baseline: BaselineMetrics::new(&self.metrics, partition),
            metrics: self.metrics.clone(),
            partition,
        };
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(SCAN_CHANNEL_BATCHES);
        let limit = self.limit;
        tokio::task::spawn_blocking(move || run_scan(scanner, stmt, counters, limit, tx));
        let stream =
            futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            stream,
        )))
    }
}

fn run_scan(
    mut scanner: HeapScanner,
    stmt: Arc<StatementContext>,
    counters: ScanCounters,
    limit: Option<usize>,
    tx: tokio::sync::mpsc::Sender<DfResult<RecordBatch>>,
) {
    let mut remaining = limit.unwrap_or(usize::MAX);
    loop {
        if remaining == 0 {
            break;
        }
        if let Err(e) = stmt.check_cancel() {
            let _ = tx.blocking_send(Err(to_df(e)));
            break;
        }
        let _timer = counters.baseline.elapsed_compute().timer();
        match scanner.next_batch() {
            Ok(Some(mut batch)) => {
                if batch.num_rows() > remaining {
                    batch = batch.slice(0, remaining);
                }
                remaining -= batch.num_rows();
                scanner.rows_returned(batch.num_rows());
                counters.baseline.record_output(batch.num_rows());
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
    counters.publish(&scanner);
    counters.baseline.done();
    let u = scanner.acct().usage;
    let st = scanner.stream_stats();
    let per_io = |sum: u64| sum as f64 / st.ios.max(1) as f64;
    tracing::debug!(
        "Seq Scan of {} blocks: Buffers: shared hit={} read={} dirtied={} written={}; \
         stream: reads={} size={:.1} stalls={} distance avg={:.1} max={} capacity={} \
         inprogress={:.1}; wait={:.1}ms read={:.1}ms",
        scanner.nblocks(),
        u.shared_hit,
        u.shared_read,
        u.shared_dirtied,
        u.shared_written,
        st.ios,
        per_io(st.io_blocks),
        st.stalls,
        per_io(st.distance_sum),
        st.distance_max,
        st.capacity,
        per_io(st.inprogress_sum),
        u.shared_wait_ns as f64 / 1e6,
        u.shared_read_ns as f64 / 1e6,
    );
    stmt.add_usage(&u);
}

/// Wraps a `PgError` so it survives the trip through DataFusion with its SQLSTATE.
pub fn to_df(e: PgError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}
