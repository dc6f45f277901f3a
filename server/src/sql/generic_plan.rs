//! Generic physical plans: a cached statement's physical plan, made once with its `$n`
//! parameters left open and given each run's values just before it runs.
//!
//! The plan cache (`plan_cache`) keeps a statement's optimized logical plan; binding a
//! run's values to it and making a physical plan from it still cost most of a small
//! statement's time (DataFusion's physical planner and physical optimizer). A physical
//! plan can be run again when it computes everything at execution — the statistics
//! views do (`pgcatalog::view_scan`) — and when its parameters can be replaced in place:
//!
//! ```text
//!   cached logical plan ─► each $n outside the view scans ─► physical planner ─► template
//!                           → a call of a marker                                 (cached)
//!   each run:  template ─► copy every node; a filter's marker → the run's constant; ─► execute
//!                          a view scan's filters: $n → constants, folded;
//!                          a heap scan's index condition takes its value as it starts
//! ```
//!
//! - DataFusion's physical planner refuses `$n`, so before planning, each `$n` outside
//!   the view scans becomes a call of a marker naming it
//!   (`iolab_engine::plan::statement_params`). Filters handed to a view scan keep their
//!   `$n`: they stay logical expressions, which the scan reads when it runs (its time
//!   range, `pgcatalog::time_range`); the copy gets them with the values in and their
//!   constant parts folded.
//! - A heap table's scan is planned with its markers as values known when it starts
//!   (`aid = $1` an Index Scan's condition, weighed as a parameter of unknown value) and
//!   takes them from the statement's values (`StatementContext::params`) when it runs.
//! - Only `FilterExec` predicates, `ProjectionExec` expressions (an UPDATE's `SET a = a +
//!   $2`), view scans' filters and heap scans' conditions may hold parameters: a plan with
//!   a marker anywhere else (an aggregate, a join)
//!   gets no template and runs from the cached logical plan, as before. Nor does a plan
//!   with a nested loop or a batched hash join, which are not copied per run.
//! - Each run copies every node (fresh metrics and operator state, the template's
//!   properties kept), so sessions running one template at the same time share nothing
//!   that changes.

use std::sync::{Arc, LazyLock};

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::expr::Placeholder;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::scalar::ScalarValue;
use iolab_engine::exec::hash_join_batches::HashJoinBatchesExec;
use iolab_engine::exec::nested_loop::IndexNestedLoopExec;
use iolab_engine::exec::table::HeapTable;
use iolab_engine::plan::statement_params::{
    bind_markers, has_marker, marker_call, parameter_index, value_of,
};

use crate::pgcatalog::view_scan::ViewScanExec;

/// The template of an optimized `plan` (see the module documentation), planned with
/// `state`; `None` when the plan cannot have one.
pub async fn template(plan: &LogicalPlan, state: &SessionState) -> Option<Arc<dyn ExecutionPlan>> {
    let physical = with_markers(plan, state)
        .await
        .inspect_err(|e| tracing::debug!("no generic plan: {e}"))
        .ok()?;
    let bound = parameters_only_where_bound(&physical);
    if !bound {
        tracing::debug!("no generic plan: a parameter where a copy cannot take its value");
    }
    bound.then_some(physical)
}

/// The physical plan of an optimized `plan` with each `$n` a marker: a template if its
/// parameters are all where a copy can take values, and what `EXPLAIN (GENERIC_PLAN)`
/// shows in any case.
pub async fn with_markers(
    plan: &LogicalPlan,
    state: &SessionState,
) -> Result<Arc<dyn ExecutionPlan>> {
    let marked = mark_parameters(plan.clone())?;
    state
        .query_planner()
        .create_physical_plan(&marked, state)
        .await
}

/// A runnable copy of `template` with `values` for its parameters (`values[0]` is `$1`).
///
/// Every node is copied with its children's copies and its properties kept: binding a
/// parameter changes no ordering or partitioning, and the template's properties were
/// computed with the parameters unknown, so they hold for any values. Only a filter whose
/// predicate takes values is built anew.
pub fn instantiate(
    template: &Arc<dyn ExecutionPlan>,
    values: &[ScalarValue],
) -> Result<Arc<dyn ExecutionPlan>> {
    if let Some(scan) = template.downcast_ref::<ViewScanExec>() {
        let filters = scan
            .filters()
            .iter()
            .map(|f| bind_placeholders(f, values))
            .collect::<Result<Vec<_>>>()?;
        return Ok(Arc::new(scan.with_filters(filters)));
    }
    let children = template
        .children()
        .into_iter()
        .map(|child| instantiate(child, values))
        .collect::<Result<Vec<_>>>()?;
    if let Some(filter) = template.downcast_ref::<FilterExec>() {
        if has_marker(filter.predicate()) {
            let [input] = <[_; 1]>::try_from(children).expect("a filter has one input");
            let copy = FilterExecBuilder::from(filter)
                .with_input(input)
                .with_predicate(bind_markers(filter.predicate(), values)?)
                .build()?;
            return Ok(Arc::new(copy));
        }
    }
    if let Some(projection) = template.downcast_ref::<ProjectionExec>() {
        if projection.expr().iter().any(|p| has_marker(&p.expr)) {
            let [input] = <[_; 1]>::try_from(children).expect("a projection has one input");
            let exprs = (projection.expr().iter())
                .map(|p| {
                    Ok(ProjectionExpr {
                        expr: bind_markers(&p.expr, values)?,
                        alias: p.alias.clone(),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let copy =
                ProjectionExec::try_new_with_schema_metadata(exprs, input, &projection.schema())?;
            return Ok(Arc::new(copy));
        }
    }
    Arc::clone(template)
        .replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep),
        )?
        .reset_state()
}

/// `plan` with each `$n` outside the view scans replaced by a marker call of its type
/// (names kept, so the plan's schemas do not change).
fn mark_parameters(plan: LogicalPlan) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = &node {
            let heap = datafusion::datasource::source_as_provider(&scan.source)
                .is_ok_and(|p| p.as_ref().is::<HeapTable>());
            if !heap {
                return Ok(Transformed::no(node));
            }
        }
        let names = NamePreserver::new(&node);
        node.map_expressions(|e| {
            let name = names.save(&e);
            let marked = e.transform_up(|e| match e {
                Expr::Placeholder(p) => Ok(Transformed::yes(marker_of_placeholder(&p)?)),
                other => Ok(Transformed::no(other)),
            })?;
            Ok(marked.update_data(|e| name.restore(e)))
        })
    })
    .map(|t| t.data)
}

fn marker_of_placeholder(p: &Placeholder) -> Result<Expr> {
    let data_type = p
        .field
        .as_ref()
        .map(|f| f.data_type().clone())
        .ok_or_else(|| DataFusionError::Plan(format!("parameter {} has no type", p.id)))?;
    marker_call(&p.id, data_type)
}

/// Nodes a template may not hold: run again, they would share what one run leaves in
/// them (their metrics, the inner scan a nested loop holds beside its children).
fn runs_once(node: &dyn ExecutionPlan) -> bool {
    node.is::<IndexNestedLoopExec>() || node.is::<HashJoinBatchesExec>()
}

/// Does every node holding a marker know how to take its value ([`instantiate`]), and
/// can every node be copied for another run?
fn parameters_only_where_bound(plan: &Arc<dyn ExecutionPlan>) -> bool {
    let mut ok = true;
    let _ = plan.apply(|node| {
        if runs_once(node.as_ref()) {
            ok = false;
        } else if !node.is::<FilterExec>() && !node.is::<ProjectionExec>() {
            let _ = node.apply_expressions(&mut |e| {
                if has_marker(e) {
                    ok = false;
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            });
        }
        Ok(if ok {
            TreeNodeRecursion::Continue
        } else {
            TreeNodeRecursion::Stop
        })
    });
    ok
}

/// A scan's filter with its `$n` replaced by `values`, the parts without columns folded
/// into constants (so that `time > $1 - interval '1 hour'` compares `time` with a
/// timestamp, as `time_range` reads it).
fn bind_placeholders(filter: &Expr, values: &[ScalarValue]) -> Result<Expr> {
    let bound = filter
        .clone()
        .transform_up(|e| match e {
            Expr::Placeholder(p) => {
                let index = parameter_index(&p.id)?;
                let value = value_of(values, index, p.field.as_ref().map(|f| f.data_type()))?;
                Ok(Transformed::yes(Expr::Literal(value, None)))
            }
            other => Ok(Transformed::no(other)),
        })?
        .data;
    // The folding needs no schema, clock or settings of the statement: one default
    // context (its configuration is built once, not on every run).
    static CONTEXT: LazyLock<SimplifyContext> = LazyLock::new(SimplifyContext::default);
    let simplifier = ExprSimplifier::new(CONTEXT.clone());
    bound
        .transform_down(|e| {
            if e.any_column_refs() || matches!(e, Expr::Literal(..)) {
                return Ok(Transformed::no(e));
            }
            let folded = simplifier.simplify(e)?;
            Ok(Transformed::new(folded, true, TreeNodeRecursion::Jump))
        })
        .map(|t| t.data)
}
