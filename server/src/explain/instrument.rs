//! Per-node instrumentation for `EXPLAIN ANALYZE`: PostgreSQL's `Instrumentation`, for
//! DataFusion plans.
//!
//! [`instrument`] wraps every node of a physical plan in an [`InstrumentExec`]. The wrapper
//! adds nothing to the data path but a look at each batch as it passes: it counts the rows
//! and, with TIMING on, reads the clock once per batch (never per row). What it observes
//! goes into the node's [`NodeStats`], shared by all partitions of the node:
//!
//! ```text
//!   first partition executed ──► first batch of any partition ──► last batch / end
//!   │◄──────────── startup ──────────────►│                             │
//!   │◄─────────────────────────────── total ───────────────────────────►│
//! ```
//!
//! Times are wall-clock times since the node was started, so they include
//! its children's time, as PostgreSQL's `actual time=startup..total` does. The partitions
//! of a DataFusion node run side by side like PostgreSQL's parallel workers; EXPLAIN shows
//! them as one loop whose rows are the sum over the partitions.
//!
//! While the wrapper polls its node (or executes it), the node is the thread's running
//! operator (iolab_engine::exec::operator_usage): the temporary files it creates and the
//! memory it reserves are charged to it.
//!
//! Under a hash join, the wrapper of the build side also watches the join key's smallest
//! and largest value ([`KeyBounds`]), from which the `Hash` node reports its buckets.
//!
//! The wrapper delegates its downcast identity to the node it wraps
//! ([`ExecutionPlan::downcast_delegate`]), so operators that inspect their children see
//! the real node.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Result as DfResult;
use datafusion::execution::{RecordBatchStream, SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::joins::HashJoinExec;
use datafusion::physical_plan::metrics::MetricsSet;
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs};
use datafusion::physical_plan::Statistics;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::Stream;
use iolab_engine::exec::operator_usage::OperatorUsage;
use parking_lot::Mutex;

use crate::explain::hash_table::KeyBounds;

/// What was observed of one node while the statement ran.
#[derive(Clone, Copy, Debug, Default)]
pub struct Observed {
    /// Partitions that were polled at least once.
    pub partitions_started: u32,
    /// Rows returned, summed over partitions.
    pub rows: u64,
    /// When the first partition was executed (TIMING only).
    pub started: Option<Instant>,
    /// First batch of any partition (TIMING only).
    pub first_batch: Option<Instant>,
    /// Last batch or end of stream of any partition (TIMING only).
    pub last: Option<Instant>,
}

impl Observed {
    /// Was the node run at all (PostgreSQL's `nloops > 0`)?
    pub fn executed(&self) -> bool {
        self.partitions_started > 0
    }

    /// (startup, total) in milliseconds, when timed.
    pub fn times_ms(&self) -> Option<(f64, f64)> {
        let started = self.started?;
        let ms = |t: Option<Instant>| {
            t.map(|t| t.saturating_duration_since(started).as_secs_f64() * 1000.0)
                .unwrap_or(0.0)
        };
        let total = ms(self.last);
        Some((ms(self.first_batch).min(total), total))
    }
}

/// The shared record of one node, updated once per batch.
#[derive(Debug, Default)]
pub struct NodeStats {
    observed: Mutex<Observed>,
    /// Its temporary files and memory.
    pub operator: Arc<OperatorUsage>,
    /// The join key's range, on a hash join's build side.
    pub build_keys: KeyBounds,
}

impl NodeStats {
    pub fn snapshot(&self) -> Observed {
        *self.observed.lock()
    }
}

/// A plan node with a [`NodeStats`] beside it.
pub struct InstrumentExec {
    inner: Arc<dyn ExecutionPlan>,
    stats: Arc<NodeStats>,
    timing: bool,
    /// The hash join key to watch, when this is a hash join's build side.
    build_key: Option<Arc<dyn PhysicalExpr>>,
}

/// Wraps every node of `plan` (children first) in an [`InstrumentExec`].
pub fn instrument(plan: Arc<dyn ExecutionPlan>, timing: bool) -> DfResult<Arc<dyn ExecutionPlan>> {
    instrument_node(plan, timing, None)
}

fn instrument_node(
    plan: Arc<dyn ExecutionPlan>,
    timing: bool,
    build_key: Option<Arc<dyn PhysicalExpr>>,
) -> DfResult<Arc<dyn ExecutionPlan>> {
    // A hash join with one key builds on its first child (see hash_table.rs).
    let join_key = plan
        .downcast_ref::<HashJoinExec>()
        .filter(|j| j.on().len() == 1)
        .map(|j| j.on()[0].0.clone());
    let children: Vec<Arc<dyn ExecutionPlan>> = plan
        .children()
        .into_iter()
        .enumerate()
        .map(|(i, c)| instrument_node(c.clone(), timing, join_key.clone().filter(|_| i == 0)))
        .collect::<DfResult<_>>()?;
    let plan = if children.is_empty() {
        plan
    } else {
        // The wrappers report their node's properties, so nothing needs recomputing.
        plan.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep),
        )?
    };
    Ok(Arc::new(InstrumentExec {
        inner: plan,
        stats: Arc::new(NodeStats::default()),
        timing,
        build_key,
    }))
}

/// The node `plan` stands for, and its stats when it is instrumented.
pub fn peel(plan: &Arc<dyn ExecutionPlan>) -> (&Arc<dyn ExecutionPlan>, Option<&Arc<NodeStats>>) {
    match (plan.as_ref() as &dyn std::any::Any).downcast_ref::<InstrumentExec>() {
        Some(w) => (&w.inner, Some(&w.stats)),
        None => (plan, None),
    }
}

impl fmt::Debug for InstrumentExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InstrumentExec({:?})", self.inner)
    }
}

impl DisplayAs for InstrumentExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.fmt_as(t, f)
    }
}

impl ExecutionPlan for InstrumentExec {
    fn name(&self) -> &str {
        "InstrumentExec"
    }

    fn downcast_delegate(&self) -> Option<&dyn ExecutionPlan> {
        Some(self.inner.as_ref())
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.inner.properties()
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.inner]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        assert_eq!(children.len(), 1, "an instrumented node has one child");
        Ok(Arc::new(InstrumentExec {
            inner: children.remove(0),
            stats: self.stats.clone(),
            timing: self.timing,
            build_key: self.build_key.clone(),
        }))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        self.inner.metrics()
    }

    /// The node's estimates are its own (a hash join sizes its batches by its build
    /// side's).
    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        vec![ChildStats::At(partition)]
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        _args: &StatisticsArgs,
    ) -> DfResult<Arc<Statistics>> {
        Ok(input_stats[0].clone())
    }

    fn fetch(&self) -> Option<usize> {
        self.inner.fetch()
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        // DataFusion operators may start their inputs when they are executed, before
        // anyone polls them: the node's clock starts here.
        if self.timing {
            let now = Instant::now();
            let mut o = self.stats.observed.lock();
            o.started = Some(o.started.map_or(now, |s| s.min(now)));
        }
        let inner = {
            let _running = self.stats.operator.enter();
            self.inner.execute(partition, context)?
        };
        Ok(Box::pin(InstrumentStream {
            schema: inner.schema(),
            inner,
            stats: self.stats.clone(),
            timing: self.timing,
            build_key: self.build_key.clone(),
            polled: false,
        }))
    }
}

struct InstrumentStream {
    schema: SchemaRef,
    inner: SendableRecordBatchStream,
    stats: Arc<NodeStats>,
    timing: bool,
    build_key: Option<Arc<dyn PhysicalExpr>>,
    polled: bool,
}

impl Stream for InstrumentStream {
    type Item = DfResult<RecordBatch>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if !self.polled {
            self.polled = true;
            self.stats.observed.lock().partitions_started += 1;
        }
        let poll = {
            let _running = self.stats.operator.enter();
            self.inner.as_mut().poll_next(cx)
        };
        match &poll {
            Poll::Ready(Some(Ok(batch))) => {
                if let Some(key) = &self.build_key {
                    // An error here is the join's to report when it evaluates the key.
                    if let Ok(keys) = key
                        .evaluate(batch)
                        .and_then(|k| k.into_array(batch.num_rows()))
                    {
                        self.stats.build_keys.observe(&keys);
                    }
                }
                let now = self.timing.then(Instant::now);
                let mut o = self.stats.observed.lock();
                o.rows += batch.num_rows() as u64;
                if o.first_batch.is_none() {
                    o.first_batch = now;
                }
                o.last = now.or(o.last);
            }
            Poll::Ready(None) if self.timing => {
                let now = Instant::now();
                let mut o = self.stats.observed.lock();
                if o.first_batch.is_none() {
                    // A node that returns nothing started up when it ended.
                    o.first_batch = Some(now);
                }
                o.last = Some(now);
            }
            _ => {}
        }
        poll
    }
}

impl RecordBatchStream for InstrumentStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
