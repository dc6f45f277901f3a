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
//!   cached logical plan ─► each $n outside the scans ─► physical planner ─► template
//!                           → a call of a marker                            (cached)
//!   each run:  template ─► copy every node; a marker → the run's constant; ─► execute
//!                          a view scan's filters: $n → constants, folded
//! ```
//!
//! - DataFusion's physical planner refuses `$n`, so before planning, each `$n` outside
//!   the scans becomes a call of [`ParameterMarker`] naming it. Filters handed to a view
//!   scan keep their `$n`: they stay logical expressions, which the scan reads when it
//!   runs (its time range, `pgcatalog::time_range`); the copy gets them with the values
//!   in and their constant parts folded.
//! - Only `FilterExec` predicates and view scans' filters may hold parameters: a plan
//!   with a marker anywhere else (a projection, an aggregate, a join) gets no template
//!   and runs from the cached logical plan, as before.
//! - Each run copies every node (fresh metrics and operator state, the template's
//!   properties kept), so sessions running one template at the same time share nothing
//!   that changes.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::expr::{Placeholder, ScalarFunction};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::physical_expr::expressions::Literal;
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::physical_plan::execution_plan::{ChildrenPropertiesMode, ReplaceChildrenOptions};
use datafusion::physical_plan::filter::{FilterExec, FilterExecBuilder};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::scalar::ScalarValue;

use crate::pgcatalog::view_scan::ViewScanExec;

/// Stands for parameter `$index + 1` in a template; never evaluated.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ParameterMarker {
    name: String,
    index: usize,
    data_type: DataType,
    signature: Signature,
}

impl ScalarUDFImpl for ParameterMarker {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.data_type.clone())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Err(DataFusionError::Internal(format!(
            "parameter {} of a generic plan was not given a value",
            self.name
        )))
    }
}

/// The template of an optimized `plan` (see the module documentation), planned with
/// `state`; `None` when the plan cannot have one.
pub async fn template(plan: &LogicalPlan, state: &SessionState) -> Option<Arc<dyn ExecutionPlan>> {
    let marked = mark_parameters(plan.clone()).ok()?;
    let physical = state
        .query_planner()
        .create_physical_plan(&marked, state)
        .await
        .ok()?;
    parameters_only_where_bound(&physical).then_some(physical)
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
    Arc::clone(template)
        .replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Keep),
        )?
        .reset_state()
}

/// `plan` with each `$n` outside the table scans replaced by a [`ParameterMarker`] call
/// of its type (names kept, so the plan's schemas do not change).
fn mark_parameters(plan: LogicalPlan) -> Result<LogicalPlan> {
    plan.transform_up_with_subqueries(|node| {
        if matches!(node, LogicalPlan::TableScan(_)) {
            return Ok(Transformed::no(node));
        }
        let names = NamePreserver::new(&node);
        node.map_expressions(|e| {
            let name = names.save(&e);
            let marked = e.transform_up(|e| match e {
                Expr::Placeholder(p) => Ok(Transformed::yes(marker_call(&p)?)),
                other => Ok(Transformed::no(other)),
            })?;
            Ok(marked.update_data(|e| name.restore(e)))
        })
    })
    .map(|t| t.data)
}

/// `$1` → 0.
fn parameter_index(id: &str) -> Result<usize> {
    id.strip_prefix('$')
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| n.checked_sub(1))
        .ok_or_else(|| DataFusionError::Plan(format!("unexpected parameter {id}")))
}

fn marker_call(p: &Placeholder) -> Result<Expr> {
    let index = parameter_index(&p.id)?;
    let data_type = p
        .field
        .as_ref()
        .map(|f| f.data_type().clone())
        .ok_or_else(|| DataFusionError::Plan(format!("parameter {} has no type", p.id)))?;
    let marker = ParameterMarker {
        name: p.id.clone(),
        index,
        data_type,
        signature: Signature::nullary(Volatility::Volatile),
    };
    Ok(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::new_from_impl(marker)),
        vec![],
    )))
}

fn marker_of(e: &Arc<dyn PhysicalExpr>) -> Option<&ParameterMarker> {
    let call = e.downcast_ref::<ScalarFunctionExpr>()?;
    let implementation: &dyn std::any::Any = call.fun().inner().as_ref();
    implementation.downcast_ref::<ParameterMarker>()
}

fn has_marker(e: &Arc<dyn PhysicalExpr>) -> bool {
    e.exists(|e| Ok(marker_of(e).is_some())).unwrap_or(true)
}

/// Does every node holding a marker know how to take its value ([`instantiate`])?
fn parameters_only_where_bound(plan: &Arc<dyn ExecutionPlan>) -> bool {
    let mut ok = true;
    let _ = plan.apply(|node| {
        if !node.is::<FilterExec>() {
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

/// A physical expression with its markers replaced by `values`.
fn bind_markers(
    e: &Arc<dyn PhysicalExpr>,
    values: &[ScalarValue],
) -> Result<Arc<dyn PhysicalExpr>> {
    Arc::clone(e)
        .transform_up(|e| match marker_of(&e) {
            Some(marker) => {
                let value = value_of(values, marker.index, Some(&marker.data_type))?;
                Ok(Transformed::yes(
                    Arc::new(Literal::new(value)) as Arc<dyn PhysicalExpr>
                ))
            }
            None => Ok(Transformed::no(e)),
        })
        .map(|t| t.data)
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

/// Parameter `index`'s value, as the type the plan gave the parameter (DataFusion may
/// have inferred a type other than the value's, such as `Utf8View` for a text constant).
fn value_of(values: &[ScalarValue], index: usize, ty: Option<&DataType>) -> Result<ScalarValue> {
    let value = values.get(index).ok_or_else(|| {
        DataFusionError::Internal(format!("no value for parameter ${}", index + 1))
    })?;
    match ty {
        Some(ty) if *ty != value.data_type() => value.cast_to(ty),
        _ => Ok(value.clone()),
    }
}
