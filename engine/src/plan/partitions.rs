//! How many partitions a plan runs in: one when its scans are cheap.
//!
//! DataFusion spreads a plan over `target_partitions` (the CPUs): its physical optimizer
//! puts a round-robin `RepartitionExec` above each scan and runs the nodes above in that
//! many tasks. For a scan that feeds a big aggregate this is worth it; for a lookup of a
//! few rows through an index — pgbench's `SELECT abalance FROM pgbench_accounts WHERE aid
//! = $1`, an UPDATE's search for its row — the extra planning, the tasks and their
//! wake-ups cost more than the whole lookup (a third of the server's CPU per statement in
//! pgbench's select-only run).
//!
//! PostgreSQL decides the same question with `parallel_setup_cost` (1000): a plan whose
//! cost stays below what starting parallel workers costs runs in one process. iolab asks
//! it of the scans it planned itself: [`OnePartitionWhenCheap`] wraps DataFusion's physical
//! optimizer rules and runs them with `target_partitions = 1` when every leaf of the plan
//! is one of iolab's heap scans (Seq Scan, Index Scan, Bitmap Heap Scan) and their
//! estimated total costs add up to less than [`PARALLEL_SETUP_COST`], or a node that
//! reads nothing (`SELECT 1`, `INSERT … VALUES`). Any other leaf — a catalog view, a
//! `generate_series`, a scan the planner gave no estimate — keeps DataFusion's choice.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::placeholder_row::PlaceholderRowExec;
use datafusion::physical_plan::ExecutionPlan;

use crate::exec::bitmap_scan::BitmapHeapScanExec;
use crate::exec::index_scan::IndexScanExec;
use crate::exec::nested_loop::IndexNestedLoopExec;
use crate::exec::scan::HeapScanExec;

/// PostgreSQL's default `parallel_setup_cost`: below it, a plan is not worth spreading.
pub const PARALLEL_SETUP_COST: f64 = 1000.0;

type Rule = Arc<dyn PhysicalOptimizerRule + Send + Sync>;

/// DataFusion's physical optimizer rules, run in one partition for cheap plans.
#[derive(Debug)]
pub struct OnePartitionWhenCheap {
    /// Rules that choose the plan's nodes (`nested_loops`): run before the plan is weighed.
    choosing: Vec<Rule>,
    rules: Vec<Rule>,
}

impl OnePartitionWhenCheap {
    pub fn wrapping(choosing: Vec<Rule>, rules: Vec<Rule>) -> Self {
        OnePartitionWhenCheap { choosing, rules }
    }
}

impl PhysicalOptimizerRule for OnePartitionWhenCheap {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let mut plan = plan;
        for rule in &self.choosing {
            plan = rule.optimize(plan, config)?;
        }
        let one_partition;
        let config = if config.execution.target_partitions > 1 && is_cheap(plan.as_ref()) {
            let mut options = config.clone();
            options.execution.target_partitions = 1;
            one_partition = options;
            &one_partition
        } else {
            config
        };
        for rule in &self.rules {
            plan = rule.optimize(plan, config)?;
        }
        Ok(plan)
    }

    fn name(&self) -> &str {
        "one_partition_when_cheap"
    }

    /// As DataFusion checks its own rules: some change the schema's nullability.
    fn schema_check(&self) -> bool {
        (self.choosing.iter().chain(&self.rules)).all(|r| r.schema_check())
    }
}

/// Are all of `plan`'s leaves iolab's scans, together cheaper than
/// [`PARALLEL_SETUP_COST`], or nodes that read nothing?
pub fn is_cheap(plan: &dyn ExecutionPlan) -> bool {
    plan_cost(plan).is_some_and(|cost| cost < PARALLEL_SETUP_COST)
}

/// The estimated cost of `plan`'s scans (and nested loops: their outer side's and inner
/// scans'), if every leaf is an estimated scan of iolab's or reads nothing.
pub fn plan_cost(plan: &dyn ExecutionPlan) -> Option<f64> {
    let mut cost = 0.0;
    leaves_cost(plan, &mut cost).then_some(cost)
}

/// Adds the estimated cost of `plan`'s scans to `cost`; false at a leaf that is not an
/// estimated scan of iolab's nor reads nothing.
fn leaves_cost(plan: &dyn ExecutionPlan, cost: &mut f64) -> bool {
    let estimate = if let Some(scan) = plan.downcast_ref::<HeapScanExec>() {
        scan.estimate()
    } else if let Some(scan) = plan.downcast_ref::<IndexScanExec>() {
        // Under an ordered LIMIT it runs only part of its way.
        return match scan.cost_to_run() {
            Some(c) => {
                *cost += c;
                true
            }
            None => false,
        };
    } else if let Some(scan) = plan.downcast_ref::<BitmapHeapScanExec>() {
        // Its bitmap is in its cost: the Bitmap Index Scans below are not leaves to add.
        scan.estimate()
    } else if let Some(nested) = plan.downcast_ref::<IndexNestedLoopExec>() {
        // Its estimate holds its outer side's cost and its inner scans'.
        Some(nested.estimate())
    } else if plan.is::<PlaceholderRowExec>() || plan.is::<EmptyExec>() {
        return true;
    } else {
        let children = plan.children();
        return !children.is_empty() && children.into_iter().all(|c| leaves_cost(c.as_ref(), cost));
    };
    match estimate {
        Some(e) => {
            *cost += e.total_cost;
            true
        }
        None => false,
    }
}
