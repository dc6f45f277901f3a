//! `min(col)` and `max(col)` through an index: PostgreSQL's `planagg.c` as a logical
//! optimizer rule.
//!
//! An aggregate with no GROUP BY whose every result is `min` or `max` of a column with a
//! B-tree index is the first row of an ordered scan of that index: `max(a)` is `(SELECT a
//! FROM … WHERE a IS NOT NULL ORDER BY a DESC LIMIT 1)`, NULLs excluded as the aggregate
//! ignores them, and `NULL` when there is no such row, as the aggregate over no rows.
//! PostgreSQL plans it so (EXPLAIN: `Result`, `InitPlan 1`, `Limit`, `Index Scan
//! Backward … Index Cond: (a IS NOT NULL)`), and [`MinMaxThroughIndex`] rewrites the
//! aggregate into a projection of one such subquery per result over a one-row relation.
//! Each subquery keeps the aggregate's input (its filters, through projections and
//! aliases, down to the table) and goes through `ordered_scans`, whose costs still
//! choose between the index and a scan with a one-row sort.
//!
//! Left as it is: an aggregate with GROUP BY, DISTINCT, FILTER, or any other result;
//! a column without an index, or not reached through projections, filters and aliases
//! from a table of iolab's (a join, a union).

use std::sync::Arc;

use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, Result};
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{
    col, scalar_subquery, Expr, LogicalPlan, LogicalPlanBuilder, SortExpr,
};
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use crate::exec::table::HeapTable;
use crate::plan::ordered_scans::{column_below, scanned_column};

/// Rewrites min / max aggregates into ordered subqueries (see the module comment).
#[derive(Debug, Default)]
pub struct MinMaxThroughIndex;

impl OptimizerRule for MinMaxThroughIndex {
    fn name(&self) -> &str {
        "min_max_through_index"
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        plan.transform_down_with_subqueries(|node| {
            let LogicalPlan::Aggregate(agg) = &node else {
                return Ok(Transformed::no(node));
            };
            if !agg.group_expr.is_empty() || agg.aggr_expr.is_empty() {
                return Ok(Transformed::no(node));
            }
            let mut results = Vec::with_capacity(agg.aggr_expr.len());
            for (i, e) in agg.aggr_expr.iter().enumerate() {
                let Some((column, descending)) = min_or_max(e) else {
                    return Ok(Transformed::no(node));
                };
                if !indexed(&agg.input, &column)? {
                    return Ok(Transformed::no(node));
                }
                let first = LogicalPlanBuilder::from(Arc::unwrap_or_clone(agg.input.clone()))
                    .filter(col(column.clone()).is_not_null())?
                    .sort_with_limit(
                        vec![SortExpr::new(col(column.clone()), !descending, descending)],
                        Some(1),
                    )?
                    .limit(0, Some(1))?
                    .project(vec![col(column)])?
                    .build()?;
                let name = agg.schema.field(i).name().clone();
                results.push(scalar_subquery(Arc::new(first)).alias(name));
            }
            let one_row = LogicalPlanBuilder::empty(true).project(results)?.build()?;
            Ok(Transformed::yes(one_row))
        })
    }
}

/// The column of `min(col)` (false) or `max(col)` (true), nothing else.
fn min_or_max(e: &Expr) -> Option<(Column, bool)> {
    let Expr::AggregateFunction(AggregateFunction { func, params }) = e else {
        return None;
    };
    let descending = match func.name() {
        "min" => false,
        "max" => true,
        _ => return None,
    };
    if params.distinct || params.filter.is_some() || !params.order_by.is_empty() {
        return None;
    }
    match params.args.as_slice() {
        [Expr::Column(c)] => Some((c.clone(), descending)),
        _ => None,
    }
}

/// Does `column` of `plan`'s output come unchanged from a table of iolab's with a usable
/// B-tree index on it?
fn indexed(plan: &LogicalPlan, column: &Column) -> Result<bool> {
    if let LogicalPlan::TableScan(scan) = plan {
        let Some((provider, table_column)) = scanned_column(scan, column)? else {
            return Ok(false);
        };
        let table = provider
            .downcast_ref::<HeapTable>()
            .expect("an iolab table");
        return Ok(table.index_on(table_column));
    }
    match column_below(plan, column)? {
        Some(below) => indexed(plan.inputs()[0], &below),
        None => Ok(false),
    }
}
