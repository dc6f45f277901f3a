//! `IndexScanExec`: PostgreSQL's plain Index Scan, and its Index Only Scan, as a DataFusion
//! operator.
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
//! # Index only
//!
//! When the query needs no column but the index's key (the planner checks), the scan can
//! return the keys the index holds instead of the heap tuples' columns. The heap is then
//! read only to learn whether the snapshot sees a TID's tuple, and not even that when the
//! visibility map marks its page all-visible (every tuple on it visible to every
//! transaction): PostgreSQL's Index Only Scan. The TIDs whose page was not marked are
//! counted (`heap_fetches`, EXPLAIN's `Heap Fetches:`).
//!
//! The visibility map is read after the leaf that gave the TID, and a writer clears a
//! page's bit before it adds the index entry of a new tuple on it (a delete clears it
//! before its transaction commits), so a marked page seen for a TID never hides a tuple
//! the snapshot must not see. The answer for a page is reused for the next TIDs on it
//! only while they come from the same leaf read.
//!
//! # Leaves read ahead
//!
//! Without a LIMIT the scan reads every leaf of its range, so it reads them ahead through a
//! read stream, in combined reads, as the Bitmap Index Scan does (`btree/read_ahead.rs`;
//! iolab's, PostgreSQL 18 reads an index scan's leaves one at a time). Under an ordered
//! LIMIT, and backward, it reads one leaf at a time.
//!
//! It runs on a blocking thread and hands batches of up to `SCAN_BATCH_ROWS` rows through
//! a channel of [`SCAN_CHANNEL_BATCHES`] batches, like the Seq Scan; it stops when the
//! consumer goes away or the statement is canceled (checked before each heap page read).
//!
//! Metrics: the index's and the heap's buffers together under the Seq Scan's names
//! (`shared_hit`, `shared_read`, …, times, read latency gauges: see `scan.rs`; no read
//! stream gauges but those of the leaves' read-ahead), `index_searches` (descents of the
//! tree: one, and one per jump of a skip scan; PostgreSQL 18's `Index Searches:`) and,
//! index only, `heap_fetches`.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Result as DfResult;
use datafusion::common::Statistics;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_expr_common::physical_expr::fmt_sql;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::StatisticsArgs;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use datafusion::scalar::ScalarValue;
use iolab_catalog::{PgResult, TableDef};

use crate::btree::{key, BtreeIndex};
use crate::buffer::PinnedBuffer;
use crate::exec::context::StatementContext;
use crate::exec::scan::{publish_io_metrics, to_df, SCAN_CHANNEL_BATCHES};
use crate::heap::codec::ValueColumn;
use crate::heap::heapam::SCAN_BATCH_ROWS;
use crate::heap::rows::RowCollector;
use crate::heap::tuple;
use crate::plan::index_cond::{conjunction, IndexCond};
use crate::plan::{PathEstimate, ScanOrder};
use crate::storage::page;
use crate::stream::{ReadStream, ReadStreamConfig, ReadStreamStats};
use crate::txn::VisibilityChecker;
use crate::Database;

/// `Index Scan using <index> on <table>`, or `Index Only Scan`.
#[derive(Clone)]
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
    /// The ORDER BY (of the index's column) this scan was chosen for, if any.
    order: Option<ScanOrder>,
    /// Rows after which the scan stops (the order's LIMIT, when no filter above can reject
    /// a row).
    stop_after: Option<usize>,
    /// Returns the index's keys (module comment, "Index only").
    index_only: bool,
    /// Plans the table's scan again with more conjuncts (`plan::param_scans`).
    replan: Option<crate::plan::paths::Replan>,
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
            order: None,
            stop_after: None,
            index_only: false,
            replan: None,
            schema,
            properties,
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The scan as the planner chose it for an ORDER BY (`order`) whose first columns it
    /// gives (`IndexCond::order_columns_given`): it declares its rows' order, so DataFusion
    /// drops the sort above it. With the order's LIMIT it hands over batches of that many
    /// rows, one at a time, so that it reads little beyond what the query takes; and when
    /// `answered` (every condition is the index's, so no filter above rejects a row) it
    /// stops after them.
    pub fn in_order(mut self, order: Option<ScanOrder>, answered: bool) -> Self {
        let Some(order) = order else {
            return self;
        };
        let given = self.cond.order_columns_given(&order);
        assert!(given > 0, "an index scan's order is its keys'");
        let whole = order.whole && given == order.columns.len();
        // Under a sort by more keys, rows of equal first keys beyond the LIMIT may sort first.
        self.stop_after = order.fetch.filter(|_| answered && whole);
        // The order given, as far as the output has its columns.
        let keys: Vec<PhysicalSortExpr> = (order.columns[..given].iter())
            .map_while(|c| self.projection.iter().position(|p| p == c))
            .map(|at| {
                PhysicalSortExpr::new(
                    Arc::new(Column::new(self.schema.field(at).name(), at)),
                    SortOptions {
                        descending: order.descending,
                        nulls_first: order.descending,
                    },
                )
            })
            .collect();
        self.order = Some(order);
        if !keys.is_empty() {
            let props = &self.properties;
            self.properties = Arc::new(PlanProperties::new(
                EquivalenceProperties::new_with_orderings(self.schema.clone(), [keys]),
                props.partitioning.clone(),
                props.emission_type,
                props.boundedness,
            ));
        }
        self
    }

    /// The scan as an Index Only Scan: the output is the index's keys. Every output
    /// column must be one of the index's columns.
    pub fn index_only(mut self) -> Self {
        assert!(
            (self.projection.iter()).all(|c| self.cond.index.columns.contains(c)),
            "an index-only scan returns only its key columns"
        );
        self.index_only = true;
        self
    }

    pub fn is_index_only(&self) -> bool {
        self.index_only
    }

    pub fn with_replan(mut self, replan: Option<crate::plan::paths::Replan>) -> Self {
        self.replan = replan;
        self
    }

    /// The planning of this table's scan again with more conjuncts.
    pub fn replan(&self) -> Option<&crate::plan::paths::Replan> {
        self.replan.as_ref()
    }

    pub fn db(&self) -> &Arc<Database> {
        &self.db
    }

    /// The cost of running the scan as far as the query will: its total, or under an
    /// ordered LIMIT the share it takes to return those rows (`plan::partitions` weighs
    /// plans by it).
    pub fn cost_to_run(&self) -> Option<f64> {
        let e = self.estimate?;
        Some(match &self.order {
            Some(o) => o.cost_until_fetched(e.startup_cost, e.total_cost, e.rows),
            None => e.total_cost,
        })
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

    /// `Index Scan Backward`: the index read from its last leaf, for a descending order.
    pub fn is_backward(&self) -> bool {
        self.order.as_ref().is_some_and(|o| o.descending)
    }

    /// Whether the scan reads only part of its rows: an ordered LIMIT's.
    pub fn is_limited(&self) -> bool {
        self.fetch_rows().is_some()
    }

    /// Rows per batch under an ordered LIMIT.
    fn fetch_rows(&self) -> Option<usize> {
        let fetch = self.order.as_ref()?.fetch?;
        Some(fetch.clamp(1, SCAN_BATCH_ROWS))
    }

    /// The pushed-down conjuncts every returned row satisfies: the index conditions.
    pub fn covered_quals(&self) -> &[Arc<dyn PhysicalExpr>] {
        &self.index_quals
    }

    /// Whether the scan reads the keys equal to a nested loop's outer value
    /// (`plan::outer_param`): it can run as a [`Prober`].
    pub fn takes_outer_value(&self) -> bool {
        self.cond.takes_outer_value()
    }

    /// Whether at most one row has each value of the outer key: a unique index whose every
    /// column the condition holds to one value (the outer value or a constant).
    pub fn finds_one_row(&self) -> bool {
        self.cond.index.unique
            && self.takes_outer_value()
            && (1..self.cond.index.columns.len()).all(|at| self.cond.pins(at))
    }

    /// The scan as a nested loop's inner side, run once per outer row of `partition`.
    pub fn prober(&self, stmt: Arc<StatementContext>, partition: usize) -> PgResult<Prober> {
        assert!(
            self.takes_outer_value(),
            "a prober reads an outer value's keys"
        );
        let mut index = BtreeIndex::open(&self.db, &self.cond.index)?;
        let rows = self.output();
        let returns_keys = matches!(&rows, Output::Keys(k) if !k.outputs.is_empty());
        if returns_keys {
            index = index.returning_keys();
        }
        Ok(Prober {
            rel: self.db.relfile(self.table.relfilenode)?,
            vm: self.db.vm.clone(),
            heap: HeapFetch {
                page: None,
                visibility: VisibilityChecker::new(stmt.snapshot.clone()),
            },
            acct: stmt.new_account(),
            stmt,
            cond: self.cond.clone(),
            index,
            rows,
            returns_keys,
            key: Vec::new(),
            metrics: self.metrics.clone(),
            partition,
            loops: 0,
            searches: 0,
            heap_fetches: 0,
            returned: 0,
            filtered: 0,
            time: std::time::Duration::ZERO,
            stream_stats: ReadStreamStats::default(),
        })
    }

    /// The rows' collector: the heap tuples' columns, or the index's keys.
    fn output(&self) -> Output {
        match self.index_only {
            true => Output::Keys(KeyRows::new(
                &self.cond.index,
                &self.projection,
                self.schema.clone(),
            )),
            false => Output::Tuples(RowCollector::new(
                crate::heap::codec::TupleLayout::for_table(&self.table),
                self.projection.clone(),
                self.schema.clone(),
            )),
        }
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
        let only = if self.index_only { " Only" } else { "" };
        write!(
            f,
            "Index{only} Scan using {} on {}",
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

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        Ok(PathEstimate::statistics(self.estimate, None, &self.schema))
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
        let fetch_rows = self.fetch_rows();
        let rows = self.output();
        let job = IndexJob {
            db: self.db.clone(),
            table: self.table.clone(),
            cond: self.cond.clone(),
            rows,
            partition,
            baseline: BaselineMetrics::new(&self.metrics, partition),
            metrics: self.metrics.clone(),
            batch_rows: fetch_rows.unwrap_or(SCAN_BATCH_ROWS),
            read_ahead: fetch_rows.is_none(),
            leaves_stream: None,
            searches: 0,
            stop_after: self.stop_after,
            backward: self.is_backward(),
        };
        // Under a LIMIT, one batch waits at a time: the scan is at most a batch ahead.
        let waiting = if fetch_rows.is_some() {
            1
        } else {
            SCAN_CHANNEL_BATCHES
        };
        let (tx, rx) = tokio::sync::mpsc::channel::<DfResult<RecordBatch>>(waiting);
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
    rows: Output,
    partition: usize,
    baseline: BaselineMetrics,
    metrics: ExecutionPlanMetricsSet,
    batch_rows: usize,
    /// Read the leaves ahead (no LIMIT), and what that stream did.
    read_ahead: bool,
    leaves_stream: Option<ReadStreamStats>,
    /// Descents of the tree (`Index Searches:`).
    searches: u64,
    stop_after: Option<usize>,
    backward: bool,
}

/// What the scan returns: the heap tuples' columns, or the index's keys.
enum Output {
    Tuples(RowCollector),
    Keys(KeyRows),
}

impl Output {
    fn len(&self) -> usize {
        match self {
            Output::Tuples(rows) => rows.len(),
            Output::Keys(keys) => keys.rows,
        }
    }

    fn finish(&mut self) -> PgResult<RecordBatch> {
        match self {
            Output::Tuples(rows) => rows.finish(),
            Output::Keys(keys) => keys.finish(),
        }
    }
}

/// An Index Only Scan's rows: one key per row, each column of the projection (every one a
/// key column; none for `count(*)`) taken from its key column.
struct KeyRows {
    /// Per output column: the key column it is (position in the index) and its type.
    outputs: Vec<(usize, iolab_catalog::PgType, ValueColumn)>,
    rows: usize,
    schema: SchemaRef,
    scratch: Vec<u8>,
}

impl KeyRows {
    fn new(index: &iolab_catalog::IndexDef, projection: &[usize], schema: SchemaRef) -> KeyRows {
        let outputs = (projection.iter())
            .map(|column| {
                let at = (index.columns.iter().position(|c| c == column))
                    .expect("an index-only scan outputs key columns only");
                let ty = index.key_types[at];
                (at, ty, ValueColumn::new(&ty))
            })
            .collect();
        KeyRows {
            outputs,
            rows: 0,
            schema,
            scratch: Vec::new(),
        }
    }

    fn push(&mut self, key: &[key::Key]) -> PgResult<()> {
        for (at, ty, column) in &mut self.outputs {
            let k = &key[*at];
            let value = (!k.is_null()).then(|| key::heap_value(*ty, k, &mut self.scratch));
            column.append(value)?;
        }
        self.rows += 1;
        Ok(())
    }

    fn finish(&mut self) -> PgResult<RecordBatch> {
        let rows = std::mem::take(&mut self.rows);
        let arrays = (self.outputs.iter_mut())
            .map(|(_, _, column)| column.finish())
            .collect::<PgResult<Vec<_>>>()?;
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(|e| iolab_catalog::PgError::internal(format!("index-only batch: {e}")))
    }
}

/// Index only: the visibility map's answers, the last one reused for TIDs on the same page
/// taken from the same leaf read (module comment, "Index only").
struct PageMarks<'a> {
    vm: &'a crate::heap::visibility_map::VisibilityMap,
    /// The page last looked up, the leaf read it was looked up for, the answer.
    last: Option<(u32, u64, bool)>,
}

impl PageMarks<'_> {
    /// Is page `blkno` of `rel` all-visible, for a TID of the `leaf`-th leaf read?
    fn all_visible(
        &mut self,
        rel: &crate::storage::relfile::RelFile,
        blkno: u32,
        leaf: u64,
    ) -> bool {
        match self.last {
            Some((page, at, marked)) if page == blkno && at == leaf => marked,
            _ => {
                let marked = self.vm.is_set(rel.relfilenode(), blkno);
                self.last = Some((blkno, leaf, marked));
                marked
            }
        }
    }
}

/// The scan's next TID, its key columns moved into `key` when the index returns keys.
fn next_tid(
    tids: &mut crate::btree::BtreeScan,
    returns_keys: bool,
    key: &mut Vec<key::Key<'static>>,
) -> Option<PgResult<(u32, u16)>> {
    match returns_keys {
        true => tids.next_with_key(key),
        false => tids.next(),
    }
}

/// What fetching one TID's row needs besides the row collector and its caches.
struct RowFetch<'s> {
    stmt: &'s StatementContext,
    rel: &'s Arc<crate::storage::relfile::RelFile>,
    index: &'s BtreeIndex,
    acct: &'s mut crate::accounting::IoAccount,
}

impl RowFetch<'_> {
    /// Adds the row of `tid` (from the `leaf`-th leaf read, its entry's key `key`) to
    /// `rows` if the snapshot sees it; index only, from the key, reading the heap only when
    /// the visibility map does not mark the page (counted in `heap_fetches`).
    fn row(
        self,
        rows: &mut Output,
        heap: &mut HeapFetch,
        marks: &mut PageMarks,
        heap_fetches: &mut usize,
        (tid, leaf, key): ((u32, u16), u64, &[key::Key]),
    ) -> PgResult<()> {
        let fetched = match rows {
            Output::Tuples(rows) => heap.visible(self.stmt, self.rel, tid, self.acct, |t| {
                rows.push(t, tid.0, tid.1)
            })?,
            Output::Keys(keys) => {
                let marked = marks.all_visible(self.rel, tid.0, leaf);
                let fetched = !marked && {
                    *heap_fetches += 1;
                    heap.visible(self.stmt, self.rel, tid, self.acct, |_| Ok(()))?
                };
                if marked || fetched {
                    keys.push(key)?;
                }
                fetched
            }
        };
        if fetched {
            (self.acct.relations()).index_tuples_fetched(self.index.relfilenode(), 1);
        }
        Ok(())
    }
}

/// The heap page of the last TID fetched, kept pinned while the next TIDs point into it.
struct HeapFetch {
    page: Option<PinnedBuffer>,
    visibility: VisibilityChecker,
}

impl HeapFetch {
    /// Calls `found` with the tuple at `(blkno, off)` of `rel` if the snapshot sees it;
    /// whether it did.
    fn visible(
        &mut self,
        stmt: &StatementContext,
        rel: &Arc<crate::storage::relfile::RelFile>,
        (blkno, off): (u32, u16),
        acct: &mut crate::accounting::IoAccount,
        found: impl FnOnce(&[u8]) -> PgResult<()>,
    ) -> PgResult<bool> {
        if self.page.as_ref().map(PinnedBuffer::blkno) != Some(blkno) {
            stmt.check_cancel()?;
            drop(self.page.take()); // unpin before pinning the next page
            self.page = Some(stmt.db.pool.read_buffer(rel, blkno, None, acct)?);
        }
        let page = self.page.as_ref().expect("pinned above").page();
        visible_on(&page, off, &mut self.visibility, found)
    }
}

/// Calls `found` with the tuple at `off` of heap page `page` if `visibility`'s snapshot
/// sees it; whether it did.
fn visible_on(
    page: &[u8],
    off: u16,
    visibility: &mut VisibilityChecker,
    found: impl FnOnce(&[u8]) -> PgResult<()>,
) -> PgResult<bool> {
    match page::page_item(page, off) {
        Some(t) if tuple::is_visible(t, visibility) => found(t).map(|()| true),
        _ => Ok(false),
    }
}

impl IndexJob {
    fn run(mut self, stmt: Arc<StatementContext>, tx: BatchSender) {
        let mut acct = stmt.new_account();
        if let Err(e) = self.scan(&stmt, &mut acct, &tx) {
            let _ = tx.blocking_send(Err(to_df(e)));
        }
        acct.flush();
        publish_io_metrics(
            &self.metrics,
            self.partition,
            &acct,
            self.leaves_stream.as_ref(),
        );
        MetricBuilder::new(&self.metrics)
            .counter("index_searches", self.partition)
            .add(self.searches.max(1) as usize);
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
        let mut index = BtreeIndex::open(&self.db, &self.cond.index)?;
        let index_only = matches!(self.rows, Output::Keys(_));
        // `count(*)` outputs no column: its keys need not be copied out of the leaves.
        let returns_keys = matches!(&self.rows, Output::Keys(k) if !k.outputs.is_empty());
        if returns_keys {
            index = index.returning_keys();
        }
        let rel = self.db.relfile(self.table.relfilenode)?;
        let nblocks = rel.nblocks();
        let mut heap = HeapFetch {
            page: None,
            visibility: VisibilityChecker::new(stmt.snapshot.clone()),
        };
        let mut tids = match self.backward {
            true => self.cond.scan_backward(&index, &stmt.params, acct)?,
            false => self.cond.scan(&index, &stmt.params, acct)?,
        };
        if self.read_ahead {
            tids = tids.read_ahead(self.db.aio.clone(), stmt.stream_config(false, false))?;
        }
        let vm = self.db.vm.clone();
        let mut marks = PageMarks {
            vm: &vm,
            last: None,
        };
        let mut heap_fetches = 0;
        // The key of the TID at hand (an index-only scan returning keys).
        let mut key = Vec::new();
        let compute = self.baseline.elapsed_compute().clone();
        let mut timer = Some(compute.timer());
        let mut returned = 0;
        loop {
            if self
                .stop_after
                .is_some_and(|n| returned + self.rows.len() >= n)
            {
                break;
            }
            let Some(next) = next_tid(&mut tids, returns_keys, &mut key) else {
                break;
            };
            let tid = next?;
            if tid.0 >= nblocks {
                continue; // cannot happen while heaps only grow; never read past the end
            }
            let leaf = tids.leaves_read();
            let fetch = RowFetch {
                stmt,
                rel: &rel,
                index: &index,
                acct: tids.acct(),
            };
            fetch.row(
                &mut self.rows,
                &mut heap,
                &mut marks,
                &mut heap_fetches,
                (tid, leaf, &key),
            )?;
            if self.rows.len() >= self.batch_rows {
                stmt.check_cancel()?; // an index-only scan may read no heap page for long
                returned += self.rows.len();
                drop(timer.take());
                if !self.send(tx)? {
                    self.leaves_stream = tids.finish_read_ahead();
                    self.searches = tids.searches();
                    return Ok(());
                }
                timer = Some(compute.timer());
            }
        }
        drop(heap);
        drop(timer);
        self.leaves_stream = tids.finish_read_ahead();
        self.searches = tids.searches();
        if index_only {
            MetricBuilder::new(&self.metrics)
                .counter("heap_fetches", self.partition)
                .add(heap_fetches);
        }
        if self.rows.len() != 0 {
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

/// An Index Scan run once per outer row of a nested loop (`exec::nested_loop`): each
/// [`probe`](Prober::probe) reads the entries equal to the outer row's key and collects
/// the rows the snapshot sees; the rows of many probes leave together
/// ([`take_batch`](Prober::take_batch)). When it is dropped it publishes what all its runs
/// did as the scan node's metrics: `output_rows` (after the nested loop's filter of them),
/// `rows_removed_by_filter`, `loops`, the buffers, `index_searches`, `heap_fetches` and
/// `probe_time` (nanoseconds, for EXPLAIN's per-loop time).
pub struct Prober {
    stmt: Arc<StatementContext>,
    cond: IndexCond,
    index: BtreeIndex,
    rel: Arc<crate::storage::relfile::RelFile>,
    vm: Arc<crate::heap::visibility_map::VisibilityMap>,
    rows: Output,
    returns_keys: bool,
    /// The key of the entry at hand (an index-only scan returning keys).
    key: Vec<key::Key<'static>>,
    heap: HeapFetch,
    acct: crate::accounting::IoAccount,
    metrics: ExecutionPlanMetricsSet,
    partition: usize,
    loops: u64,
    searches: u64,
    heap_fetches: usize,
    returned: usize,
    /// Rows the nested loop's filter of the inner side removed.
    filtered: usize,
    time: std::time::Duration,
    /// What the read-ahead's streams did.
    stream_stats: ReadStreamStats,
}

/// A TID one of [`Prober::probe_all`]'s scans found: the position of its value, and its
/// key (an index-only scan returning keys).
struct ProbedTid {
    at: usize,
    tid: (u32, u16),
    key: Option<Vec<key::Key<'static>>>,
}

impl Prober {
    /// Probes for `values` in turn, as [`probe`](Self::probe) does each: the rows found for
    /// each, in order. With `read_ahead`, the probes' first leaves and then their rows'
    /// heap pages are read ahead through read streams (module comment of
    /// `exec::nested_loop`, "Reading ahead"); without, one probe at a time, stopping once a
    /// batch of rows is collected (the counts then cover the first values only).
    pub fn probe_all(
        &mut self,
        values: &[ScalarValue],
        limit: Option<usize>,
        read_ahead: bool,
    ) -> PgResult<Vec<usize>> {
        if !read_ahead || values.len() < 2 {
            let mut found = Vec::with_capacity(values.len());
            for value in values {
                found.push(self.probe(value, limit)?);
                if self.rows() >= SCAN_BATCH_ROWS {
                    break;
                }
            }
            return Ok(found);
        }
        let started = std::time::Instant::now();
        self.loops += values.len() as u64;
        let tids = self.leaves_ahead(values)?;
        let found = self.rows_ahead(values.len(), &tids, limit)?;
        self.time += started.elapsed();
        Ok(found)
    }

    /// Reads the first leaf of each value's scan ahead (their blocks found by descents that
    /// stop above the leaves) and runs each scan from its leaf: every value's TIDs, with
    /// the value's position, in order (and with their keys, index only).
    fn leaves_ahead(&mut self, values: &[ScalarValue]) -> PgResult<Vec<ProbedTid>> {
        let mut firsts = Vec::with_capacity(values.len());
        let mut leaves = Vec::with_capacity(values.len());
        for (at, value) in values.iter().enumerate() {
            let first = self.cond.outer_keys(value)?;
            if let Some(keys) = &first {
                if let Some(leaf) = self
                    .cond
                    .first_leaf_for(&self.index, keys, &mut self.acct)?
                {
                    leaves.push((leaf, at));
                }
            }
            firsts.push(first);
        }
        // The stream's reads run when it hands their blocks out (`reads_in_session`), so
        // no other read may wait for one of them: a scan reading past its first leaf
        // could wait for a leaf the stream has started and not run. So the stream first
        // hands out a part's leaves, which stay pinned (half the stream's pin budget at a
        // time, the stream taking the other half), and the scans run once it is done.
        let hold = (self.stmt.db.pool.pin_limit() / 2).max(1);
        let mut tids = Vec::new();
        for part in leaves.chunks(hold) {
            let mut stream = self.stream_of(self.index.relfile().clone(), part.to_vec(), hold);
            let mut pinned = Vec::with_capacity(part.len());
            let result = (|| {
                while let Some(leaf) = stream.next_buffer()? {
                    self.stmt.check_cancel()?;
                    pinned.push(leaf);
                }
                Ok(())
            })();
            self.stream_stats.add(&stream.stats());
            self.acct = stream.into_account();
            result?;
            for (leaf, at) in pinned {
                let first = firsts[at]
                    .as_ref()
                    .expect("a leaf only for a value with keys");
                let mut scan =
                    (self.cond).scan_at_leaf(&self.index, first, leaf, &mut self.acct)?;
                while let Some(tid) = next_tid(&mut scan, self.returns_keys, &mut self.key) {
                    let key = self.returns_keys.then(|| self.key.clone());
                    tids.push(ProbedTid { at, tid: tid?, key });
                }
                self.searches += scan.searches();
            }
        }
        Ok(tids)
    }

    /// The rows of `tids` (from [`leaves_ahead`](Self::leaves_ahead)) the snapshot sees,
    /// at most `limit` per value, their heap pages read ahead (index only: only pages the
    /// visibility map does not mark, one at a time); the rows found for each of `values`.
    fn rows_ahead(
        &mut self,
        values: usize,
        tids: &[ProbedTid],
        limit: Option<usize>,
    ) -> PgResult<Vec<usize>> {
        let mut found = vec![0; values];
        let nblocks = self.rel.nblocks();
        let wanted = |found: &[usize], t: &ProbedTid| {
            t.tid.0 < nblocks && limit.is_none_or(|l| found[t.at] < l)
        };
        if let Output::Keys(_) = self.rows {
            let mut marks = PageMarks {
                vm: &self.vm,
                last: None,
            };
            for (i, t) in tids.iter().enumerate() {
                if !wanted(&found, t) {
                    continue;
                }
                let before = self.rows.len();
                let fetch = RowFetch {
                    stmt: &self.stmt,
                    rel: &self.rel,
                    index: &self.index,
                    acct: &mut self.acct,
                };
                let key = t.key.as_deref().unwrap_or(&[]);
                // Each TID its own "leaf read": a page's mark is not reused across TIDs.
                fetch.row(
                    &mut self.rows,
                    &mut self.heap,
                    &mut marks,
                    &mut self.heap_fetches,
                    (t.tid, i as u64, key),
                )?;
                found[t.at] += self.rows.len() - before;
            }
            return Ok(found);
        }
        // Runs of TIDs on one heap page: one block of the stream each.
        let mut runs: Vec<(u32, std::ops::Range<usize>)> = Vec::new();
        for (i, t) in tids.iter().enumerate() {
            match runs.last_mut() {
                Some((blkno, run)) if *blkno == t.tid.0 && run.end == i => run.end = i + 1,
                _ => runs.push((t.tid.0, i..i + 1)),
            }
        }
        runs.retain(|(blkno, _)| *blkno < nblocks);
        drop(self.heap.page.take());
        let pins = self.stmt.db.pool.pin_limit();
        let mut stream = self.stream_of(self.rel.clone(), runs, pins);
        let result = (|| {
            while let Some((page, run)) = stream.next_buffer()? {
                self.stmt.check_cancel()?;
                let Output::Tuples(rows) = &mut self.rows else {
                    unreachable!("index-only rows are fetched above")
                };
                let bytes = page.page();
                for t in &tids[run] {
                    if !wanted(&found, t) {
                        continue;
                    }
                    let (blkno, off) = t.tid;
                    let pushed = |tuple: &[u8]| rows.push(tuple, blkno, off);
                    if visible_on(&bytes, off, &mut self.heap.visibility, pushed)? {
                        found[t.at] += 1;
                        (stream.acct.relations()).index_tuples_fetched(self.index.relfilenode(), 1);
                    }
                }
            }
            Ok(())
        })();
        self.stream_stats.add(&stream.stats());
        self.acct = stream.into_account();
        result.map(|()| found)
    }

    /// A read stream over `blocks` of `rel` (each with its data), in that order, reading in
    /// the session (`read_stream.rs`, "Reads in the session") and pinning at most `pins`
    /// blocks; it holds the prober's account until [`ReadStream::into_account`] gives it
    /// back.
    fn stream_of<T: Send + 'static>(
        &mut self,
        rel: Arc<crate::storage::relfile::RelFile>,
        blocks: Vec<(u32, T)>,
        pins: usize,
    ) -> ReadStream<T> {
        // Blocks in key order jump back and forth: no drop-behind (`drop_behind.rs`).
        let config = ReadStreamConfig {
            reads_in_session: true,
            pin_limit: pins,
            drop_behind: 0,
            ..self.stmt.stream_config(false, false)
        };
        let db = &self.stmt.db;
        let mut blocks = blocks.into_iter();
        ReadStream::new(
            db.aio.clone(),
            db.pool.clone(),
            rel,
            None,
            &config,
            std::mem::take(&mut self.acct),
            move || blocks.next(),
        )
    }

    /// Collects the visible rows whose key equals `value` (none for NULL), at most `limit`
    /// of them; how many.
    pub fn probe(&mut self, value: &ScalarValue, limit: Option<usize>) -> PgResult<usize> {
        let started = std::time::Instant::now();
        self.loops += 1;
        let before = self.rows.len();
        let Prober {
            stmt,
            cond,
            index,
            rel,
            vm,
            rows,
            returns_keys,
            key,
            heap,
            acct,
            heap_fetches,
            ..
        } = self;
        if let Some(mut tids) = cond.scan_for(index, value, acct)? {
            let nblocks = rel.nblocks();
            let mut marks = PageMarks { vm, last: None };
            while limit.is_none_or(|l| rows.len() - before < l) {
                let Some(next) = next_tid(&mut tids, *returns_keys, key) else {
                    break;
                };
                let tid = next?;
                if tid.0 >= nblocks {
                    continue; // as in the scan: never read past the end
                }
                let leaf = tids.leaves_read();
                let fetch = RowFetch {
                    stmt,
                    rel,
                    index,
                    acct: tids.acct(),
                };
                fetch.row(rows, heap, &mut marks, heap_fetches, (tid, leaf, key))?;
            }
            self.searches += tids.searches();
        }
        self.time += started.elapsed();
        Ok(self.rows.len() - before)
    }

    /// Rows collected and not yet taken.
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// The rows collected since the last batch taken, in the order of their probes.
    pub fn take_batch(&mut self) -> PgResult<RecordBatch> {
        self.returned += self.rows.len();
        self.rows.finish()
    }

    /// Counts `rows` taken that the inner side's filter removed: they are not the scan's
    /// output (EXPLAIN's `Rows Removed by Filter`).
    pub fn filtered_out(&mut self, rows: usize) {
        self.filtered += rows;
    }
}

impl Drop for Prober {
    fn drop(&mut self) {
        drop(self.heap.page.take());
        self.acct.flush();
        let streamed = (self.stream_stats.ios > 0).then_some(&self.stream_stats);
        publish_io_metrics(&self.metrics, self.partition, &self.acct, streamed);
        let m = || MetricBuilder::new(&self.metrics);
        m().output_rows(self.partition)
            .add(self.returned - self.filtered);
        m().counter("rows_removed_by_filter", self.partition)
            .add(self.filtered);
        m().counter("loops", self.partition)
            .add(self.loops as usize);
        m().counter("index_searches", self.partition)
            .add(self.searches as usize);
        if matches!(self.rows, Output::Keys(_)) {
            m().counter("heap_fetches", self.partition)
                .add(self.heap_fetches);
        }
        m().counter("probe_time", self.partition)
            .add(self.time.as_nanos() as usize);
        self.stmt.add_usage(&self.acct.usage);
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::array::{Array, Int32Array};
    use datafusion::logical_expr::Operator;
    use iolab_settings::IoMethod;

    use super::*;
    use crate::accounting::IoAccount;
    use crate::exec::bitmap_scan::tests::{a_is, expected, index_on_a, metric, task};
    use crate::exec::table::table_schema;
    use crate::heap::bitmap_heap::tests::eic_table;

    const NROWS: u64 = 30_000;

    /// `a` of every row `plan` returns, in the order it returns them.
    async fn a_values(plan: Arc<dyn ExecutionPlan>, task: Arc<TaskContext>) -> DfResult<Vec<i32>> {
        let batches = datafusion::physical_plan::collect(plan, task).await?;
        let mut a = Vec::new();
        for b in &batches {
            let col = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
            a.extend((0..b.num_rows()).map(|i| col.value(i)));
        }
        Ok(a)
    }

    #[tokio::test]
    async fn returns_the_visible_rows_of_its_keys_in_index_order() {
        let t = eic_table("index-scan", NROWS, IoMethod::Sync);
        let task = task(&t, 16);
        let def = index_on_a(&t, &task);
        // 5 <= a < 140 takes in the aborted rows' a = 7: they must not come back.
        let quals = vec![a_is(Operator::GtEq, 5), a_is(Operator::Lt, 140)];
        let cond = IndexCond::find(&def, &t.def.columns, &quals).unwrap();
        assert_eq!(cond.quals.len(), 2, "both bounds answered by the index");
        t.db.pool.evict_all(&mut IoAccount::default()).unwrap();
        let plan = Arc::new(IndexScanExec::new(
            t.db.clone(),
            t.def.clone(),
            table_schema(&t.def, false),
            vec![0, 1],
            cond,
        ));
        let a = a_values(plan.clone(), task.clone()).await.unwrap();
        assert!(a.windows(2).all(|w| w[0] <= w[1]), "in index order");
        assert_eq!(a, expected(NROWS, |a| (5..140).contains(&a)));
        assert_eq!(plan.metrics().unwrap().output_rows(), Some(a.len()));
        assert_eq!(metric(plan.as_ref(), "index_searches"), 1);
        let (hit, read) = (
            metric(plan.as_ref(), "shared_hit"),
            metric(plan.as_ref(), "shared_read"),
        );
        // Read cold: every heap page touched, plus the index's; a heap page is pinned once
        // for a run of TIDs into it, so never more than one access per TID and the tree.
        assert!(read > 0, "cold reads");
        let tids = a.len() + 300; // the aborted rows' TIDs are in the index too
        assert!(hit + read <= tids + def_pages(&t, &def), "{hit} + {read}");
        assert_eq!(
            format!(
                "{}",
                datafusion::physical_plan::displayable(plan.as_ref()).indent(false)
            ),
            "Index Scan using eic_a_idx on eic, Index Cond: a >= 5 AND a < 140\n"
        );
    }

    fn def_pages(
        t: &crate::heap::bitmap_heap::tests::EicTable,
        def: &iolab_catalog::IndexDef,
    ) -> usize {
        BtreeIndex::open(&t.db, def).unwrap().nblocks() as usize
    }

    #[tokio::test]
    async fn a_canceled_statement_stops_the_scan() {
        let t = eic_table("index-scan-cancel", 5000, IoMethod::Sync);
        let task = task(&t, 16);
        let def = index_on_a(&t, &task);
        let cond = IndexCond::find(&def, &t.def.columns, &[a_is(Operator::Lt, 5000)]).unwrap();
        let plan = Arc::new(IndexScanExec::new(
            t.db.clone(),
            t.def.clone(),
            table_schema(&t.def, false),
            vec![0],
            cond,
        ));
        StatementContext::from_task(&task).unwrap().cancel.cancel();
        let err = a_values(plan, task).await.unwrap_err();
        assert!(err.to_string().contains("canceling statement"), "{err}");
    }
}
