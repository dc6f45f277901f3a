//! Telling a table's scan that the query sorts its rows: the logical optimizer rule that
//! lets an Index Scan stand in for a Sort.
//!
//! DataFusion plans a scan (`HeapTable::scan`) knowing its columns, its conditions and a
//! LIMIT directly above it, not the ORDER BY further up. PostgreSQL's planner weighs an
//! index whose order is the ORDER BY's against scanning and sorting; for `ORDER BY a
//! LIMIT 10` reading ten index entries and their rows beats sorting the table.
//!
//! [`OrderedScans`] runs after DataFusion's own rules (so a LIMIT has become the sort's
//! `fetch`). For a sort whose first keys are columns, all ascending with NULLs last
//! (PostgreSQL's default, a B-tree's order) or all descending with NULLs first
//! (PostgreSQL's `DESC`, the order read backward), it follows the columns down through
//! projections that pass them on unchanged, filters and subquery aliases to a table scan
//! of an iolab table, and gives that scan the order: the table columns and the fetch
//! ([`ScanOrder`]). The scan's planner (`paths`) then costs an Index Scan in that order
//! against its other paths plus the sort — an index on `(a, b)` gives `ORDER BY a, b`,
//! and `ORDER BY b` where `a = 5` (`IndexCond::order_columns_given`); an Index Scan chosen
//! so declares its order and DataFusion's physical optimizer removes the sort (keeping its
//! LIMIT). When the index gives only the first keys the sort stays, over rows already in
//! their order: DataFusion's top-N sort stops reading once those keys have passed the rows
//! it keeps (EXPLAIN shows PostgreSQL's `Incremental Sort` with `Presorted Key:`).
//!
//! Not followed: joins, aggregates, unions, windows and limits below the sort (their
//! output order or rows differ from the table's), a column computed by an expression,
//! `ASC NULLS FIRST` and `DESC NULLS LAST` (no B-tree order).

use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, Result};
use datafusion::datasource::{provider_as_source, source_as_provider};
use datafusion::logical_expr::{Expr, LogicalPlan, SortExpr, TableScan, TableSource};
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use crate::exec::table::HeapTable;
use crate::plan::ScanOrder;

/// Gives table scans the ORDER BY above them (see the module comment).
#[derive(Debug, Default)]
pub struct OrderedScans;

impl OptimizerRule for OrderedScans {
    fn name(&self) -> &str {
        "ordered_scans"
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        // Subqueries too: `(SELECT a FROM t ORDER BY a LIMIT 1)`, and min() / max().
        plan.transform_down_with_subqueries(|node| {
            let LogicalPlan::Sort(sort) = &node else {
                return Ok(Transformed::no(node));
            };
            let Some((_, descending)) = sort.expr.first().and_then(sorted_column) else {
                return Ok(Transformed::no(node));
            };
            let columns: Vec<Column> = (sort.expr.iter())
                .map_while(|key| sorted_column(key).filter(|(_, d)| *d == descending))
                .map(|(c, _)| c)
                .collect();
            let whole = columns.len() == sort.expr.len();
            let fetch = sort.fetch;
            let LogicalPlan::Sort(mut sort) = node else {
                unreachable!("matched above")
            };
            let input = Arc::unwrap_or_clone(sort.input);
            let order = Order {
                descending,
                whole,
                fetch,
            };
            let told = tell_scan(input, columns, order)?;
            sort.input = Arc::new(told.data);
            Ok(Transformed::new_transformed(
                LogicalPlan::Sort(sort),
                told.transformed,
            ))
        })
    }
}

/// A sort's order as its columns' scan sees it (see [`ScanOrder`]).
#[derive(Clone, Copy)]
struct Order {
    descending: bool,
    whole: bool,
    fetch: Option<usize>,
}

/// The column of a sort key that is a plain column in a B-tree's order, and whether
/// descending.
fn sorted_column(key: &SortExpr) -> Option<(Column, bool)> {
    match key {
        SortExpr {
            expr: Expr::Column(c),
            asc,
            nulls_first,
        } if *asc != *nulls_first => Some((c.clone(), !asc)),
        _ => None,
    }
}

/// `plan` with the table scan that `columns` come from told of the order, if the first
/// comes from one unchanged (the others as far as they do too).
fn tell_scan(
    plan: LogicalPlan,
    columns: Vec<Column>,
    mut order: Order,
) -> Result<Transformed<LogicalPlan>> {
    if let LogicalPlan::TableScan(scan) = &plan {
        return Ok(match ordered_source(scan, &columns, order)? {
            Some(source) => {
                let mut scan = scan.clone();
                scan.source = source;
                Transformed::yes(LogicalPlan::TableScan(scan))
            }
            None => Transformed::no(plan),
        });
    }
    let mut below = Vec::with_capacity(columns.len());
    for column in &columns {
        match column_below(&plan, column)? {
            Some(c) => below.push(c),
            None => break,
        }
    }
    if below.is_empty() {
        return Ok(Transformed::no(plan));
    }
    order.whole &= below.len() == columns.len();
    let input = plan.inputs()[0].clone();
    let told = tell_scan(input, below, order)?;
    if !told.transformed {
        return Ok(Transformed::no(plan));
    }
    let exprs = plan.expressions();
    Ok(Transformed::yes(
        plan.with_new_exprs(exprs, vec![told.data])?,
    ))
}

/// The column of `plan`'s one input that `column` of its output is, when `plan` passes it
/// on unchanged: a projection naming it, a filter, a subquery alias. (`None` for any
/// other node, or a computed column.)
pub(crate) fn column_below(plan: &LogicalPlan, column: &Column) -> Result<Option<Column>> {
    Ok(match plan {
        LogicalPlan::Projection(p) => {
            let at = p.schema.index_of_column(column)?;
            match p.expr[at].clone().unalias() {
                Expr::Column(c) => Some(c),
                _ => None,
            }
        }
        LogicalPlan::Filter(_) => Some(column.clone()),
        LogicalPlan::SubqueryAlias(a) => {
            let at = a.schema.index_of_column(column)?;
            Some(Column::from(a.input.schema().qualified_field(at)))
        }
        _ => None,
    })
}

/// The iolab table a scan reads and the table column `column` of its output is (not
/// `ctid`).
pub(crate) fn scanned_column(
    scan: &TableScan,
    column: &Column,
) -> Result<Option<(Arc<dyn TableProvider>, usize)>> {
    let provider = source_as_provider(&scan.source)?;
    let Some(table) = provider.downcast_ref::<HeapTable>() else {
        return Ok(None);
    };
    let at = scan.projected_schema.index_of_column(column)?;
    let table_column = scan.projection.as_ref().map_or(at, |p| p[at]);
    if table_column >= table.def.columns.len() {
        return Ok(None); // ctid
    }
    Ok(Some((provider, table_column)))
}

/// The scan's source told of the order, when it is an iolab table and the first of
/// `columns` one of its columns (the order goes on as far as the others are too), not told
/// already.
fn ordered_source(
    scan: &TableScan,
    columns: &[Column],
    order: Order,
) -> Result<Option<Arc<dyn TableSource>>> {
    let mut provider = None;
    let mut table_columns = Vec::with_capacity(columns.len());
    for column in columns {
        match scanned_column(scan, column)? {
            Some((p, table_column)) => {
                provider = Some(p);
                table_columns.push(table_column);
            }
            None => break,
        }
    }
    let Some(provider) = provider else {
        return Ok(None);
    };
    let table = provider
        .downcast_ref::<HeapTable>()
        .expect("an iolab table");
    if table.order().is_some() {
        return Ok(None);
    }
    let order = ScanOrder {
        whole: order.whole && table_columns.len() == columns.len(),
        columns: table_columns,
        descending: order.descending,
        fetch: order.fetch,
    };
    Ok(Some(provider_as_source(Arc::new(table.with_order(order)))))
}
