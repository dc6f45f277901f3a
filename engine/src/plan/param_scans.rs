//! Conditions on values computed before a scan starts: `WHERE a = (SELECT max(a) FROM t)`.
//!
//! DataFusion plans an uncorrelated scalar subquery as a value its `ScalarSubqueryExec`
//! computes once before running its input (PostgreSQL's InitPlan), and a filter reads the
//! value through a `ScalarSubqueryExpr`. The table's scan is planned without such a
//! condition (the subquery's value has no physical form while the scan is planned), so it
//! reads the whole table even when an index on the column would find the rows directly,
//! as PostgreSQL's `Index Cond: (a = (InitPlan 1).col1)` does.
//!
//! This physical rule finds a filter whose conjuncts compare a column with such a value
//! (`index_cond::param_clause`) above a Seq Scan or an Index Scan (through nodes that pass
//! rows on unchanged) and plans the scan again with those conjuncts added
//! ([`HeapScanExec::replan`]), so that its planner weighs the indexes on them; the index
//! takes the value when the scan starts. The planner weighs every path again, the Seq Scan
//! too: if it chooses that, the old scan stays. The filter stays above and tests every row, so the new scan
//! changes the work, never the answer. The rule runs before DataFusion's rules that add
//! and remove sorts, which then see the new scan's order.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::{replace_children_if_necessary, ExecutionPlan};

use crate::exec::index_scan::IndexScanExec;
use crate::exec::scan::{to_df, HeapScanExec};
use crate::plan::index_cond::{conjuncts, param_clause};
use crate::plan::paths::Replan;

#[derive(Debug)]
pub struct ParamIndexScans;

impl PhysicalOptimizerRule for ParamIndexScans {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(filter) = node.downcast_ref::<FilterExec>() else {
                return Ok(Transformed::no(node));
            };
            match scan_with_params(filter.input(), filter.predicate())? {
                Some(input) => Ok(Transformed::yes(replace_children_if_necessary(
                    node.clone(),
                    vec![input],
                )?)),
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "param_index_scans"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// `input` with the scan at its bottom planned again with `predicate`'s parameter
/// conjuncts, if there are any and the planner then chooses another path.
fn scan_with_params(
    input: &Arc<dyn ExecutionPlan>,
    predicate: &Arc<dyn PhysicalExpr>,
) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    if input.downcast_ref::<RepartitionExec>().is_some() {
        let [child] = input.children()[..] else {
            return Ok(None);
        };
        return scan_with_params(child, predicate)?
            .map(|c| replace_children_if_necessary(input.clone(), vec![c]))
            .transpose();
    }
    let Some(scan) = Replannable::of(input) else {
        return Ok(None);
    };
    // The filter's columns are the scan's output: column i is table column projection[i].
    let columns = scan.columns;
    let on_table = |e: &Arc<dyn PhysicalExpr>| -> Result<Arc<dyn PhysicalExpr>> {
        e.clone()
            .transform(|n| match n.downcast_ref::<Column>() {
                Some(c) => {
                    let column = scan.projection[c.index()];
                    let name = columns.get(column).map_or("ctid", |c| c.name.as_str());
                    Ok(Transformed::yes(Arc::new(Column::new(name, column))))
                }
                None => Ok(Transformed::no(n)),
            })
            .map(|t| t.data)
    };
    let mut params = Vec::new();
    for conjunct in conjuncts(predicate) {
        let on_table = on_table(&conjunct)?;
        if param_clause(&on_table, columns).is_some() {
            params.push(on_table);
        }
    }
    if params.is_empty() {
        return Ok(None);
    }
    let planned = scan.replan.with(params, 1.0).map_err(to_df)?;
    Ok((planned.downcast_ref::<HeapScanExec>().is_none()).then_some(planned))
}

/// A scan the planner chose that can be planned again.
struct Replannable<'a> {
    replan: &'a Replan,
    columns: &'a [iolab_catalog::ColumnDef],
    projection: &'a [usize],
}

impl<'a> Replannable<'a> {
    fn of(plan: &'a Arc<dyn ExecutionPlan>) -> Option<Replannable<'a>> {
        if let Some(seq) = plan.downcast_ref::<HeapScanExec>() {
            return Some(Replannable {
                replan: seq.replan()?,
                columns: &seq.table.columns,
                projection: &seq.projection,
            });
        }
        let index = plan.downcast_ref::<IndexScanExec>()?;
        Some(Replannable {
            replan: index.replan()?,
            columns: &index.table.columns,
            projection: &index.projection,
        })
    }
}
