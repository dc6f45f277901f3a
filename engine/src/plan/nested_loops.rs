//! Joins as nested loops over an index of their inner side: PostgreSQL's Nested Loop whose
//! inner Index Scan takes the outer row's key, `Index Cond: (id = o.cust_id)`.
//!
//! DataFusion plans every equi-join as a hash join (a merge join with `enable_hashjoin`
//! off), which reads the whole of both sides. When one side has few rows and the other an
//! index on its join key, PostgreSQL reads only the other side's matching rows: one index
//! scan per outer row. [`IndexNestedLoops`], a physical optimizer rule run before
//! DataFusion's own, weighs that for every hash and merge join, each side in turn as the
//! inner one when the join type allows (an inner join; the outer side preserved by an outer
//! join, or kept by a semi or anti join):
//!
//! 1. The inner side must be a scan of a table the planner can plan again (a Seq Scan or
//!    an Index Scan, with its `Replan`), under at most a filter, a projection of columns
//!    and repartitions, and without a LIMIT (which takes rows of the whole table).
//! 2. For an equi-key `inner column = outer expression` whose values compare exactly as
//!    the column's index keys (`comparable_type`), the inner table's scan is planned again
//!    with the conjunct `column = OuterParam(outer expression)` (`outer_param`), as a scan
//!    run once per outer row (`loops` = the outer side's estimated rows, which makes pages
//!    read by earlier runs cheaper). If the planner then chooses an Index Scan reading the
//!    outer value's keys, that scan is the candidate inner side.
//! 3. Costs, in PostgreSQL's terms: the nested loop costs the outer side plus its rows
//!    times one inner scan. The join it would replace costs both sides, plus for a hash
//!    join (`initial_cost_hashjoin`, `final_cost_hashjoin`) building its table from one
//!    side (`cpu_operator_cost` per key and `cpu_tuple_cost` per row) and probing it with
//!    the other (`cpu_operator_cost` per key and row, and half a comparison with each row
//!    of its bucket: the build rows times `estimate_hash_bucketsize`, 1 / the build key's
//!    distinct values scaled to the build side's rows, 0.1 without statistics), the cheaper
//!    way round; for a merge join sorting both sides. A side's cost is its scans'
//!    (`partitions::plan_cost`; nodes above them are taken as free here), its rows
//!    DataFusion's statistics of it. As in PostgreSQL 18, disabled nodes count first:
//!    `enable_nestloop`, `enable_hashjoin`, `enable_mergejoin` and the scans' own.
//!
//! The cheapest candidate replaces the join if it is cheaper than the join.
//! Both give the same rows; the nested loop gives them in the outer side's order.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{JoinSide, JoinType, NullEquality};
use datafusion::error::Result;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, CastExpr, Column};
use datafusion::physical_expr::{PhysicalExpr, PhysicalExprRef};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::utils::JoinFilter;
use datafusion::physical_plan::joins::{HashJoinExec, SortMergeJoinExec};
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::statistics::{StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::ExecutionPlan;
use iolab_catalog::TableDef;

use crate::exec::index_scan::IndexScanExec;
use crate::exec::nested_loop::{IndexNestedLoopExec, LoopKind, NestedLoopParts};
use crate::exec::scan::HeapScanExec;
use crate::plan::index_cond::comparable_type;
use crate::plan::outer_param::OuterParam;
use crate::plan::partitions::plan_cost;
use crate::plan::paths::Replan;
use crate::plan::selectivity::{clamp_rows, num_distinct, RelStats};
use crate::plan::{cost, PathEstimate, PlannerSettings};
use crate::Database;

/// Replaces joins by nested loops over an index where cheaper (see the module comment).
#[derive(Debug)]
pub struct IndexNestedLoops;

impl PhysicalOptimizerRule for IndexNestedLoops {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            Ok(
                match Join::of(&node).and_then(|j| j.cheaper_nested_loop()) {
                    Some(nested) => Transformed::yes(Arc::new(nested) as Arc<dyn ExecutionPlan>),
                    None => Transformed::no(node),
                },
            )
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "index_nested_loops"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Method {
    Hash,
    Merge,
}

/// A hash or merge join's parts.
struct Join<'a> {
    method: Method,
    left: &'a Arc<dyn ExecutionPlan>,
    right: &'a Arc<dyn ExecutionPlan>,
    on: &'a [(PhysicalExprRef, PhysicalExprRef)],
    filter: Option<&'a JoinFilter>,
    join_type: JoinType,
    projection: Option<Vec<usize>>,
    schema: SchemaRef,
}

impl<'a> Join<'a> {
    fn of(node: &'a Arc<dyn ExecutionPlan>) -> Option<Join<'a>> {
        if let Some(j) = node.downcast_ref::<HashJoinExec>() {
            // NOT IN (one NULL key empties the result) and IS NOT DISTINCT FROM keys stay.
            let plain = !j.null_aware && j.null_equality() == NullEquality::NullEqualsNothing;
            return plain.then(|| Join {
                method: Method::Hash,
                left: j.left(),
                right: j.right(),
                on: j.on(),
                filter: j.filter(),
                join_type: *j.join_type(),
                projection: j.projection.as_ref().map(|p| p.to_vec()),
                schema: j.schema(),
            });
        }
        let j = node.downcast_ref::<SortMergeJoinExec>()?;
        (j.null_equality() == NullEquality::NullEqualsNothing).then(|| Join {
            method: Method::Merge,
            left: j.left(),
            right: j.right(),
            on: j.on(),
            filter: j.filter().as_ref(),
            join_type: j.join_type(),
            projection: None,
            schema: j.schema(),
        })
    }

    /// The cheapest nested loop for the join, if it is cheaper than the join.
    fn cheaper_nested_loop(&self) -> Option<IndexNestedLoopExec> {
        let mut best: Option<((u8, f64), NestedLoopParts)> = None;
        let mut join_cost = None;
        for outer_side in [JoinSide::Left, JoinSide::Right] {
            let Some(candidate) = self.nested_loop(outer_side) else {
                continue;
            };
            let this = (candidate.0, candidate.1.estimate.total_cost);
            let join = *join_cost.get_or_insert_with(|| self.cost(&candidate.2));
            if this < join && best.as_ref().is_none_or(|(b, _)| this < *b) {
                best = Some((this, candidate.1));
            }
        }
        best.map(|(_, parts)| IndexNestedLoopExec::new(parts))
    }

    /// The nested loop with `outer_side` as its outer side, if its inner side can take
    /// the outer key through an index: its disabled nodes, its parts, the planner's
    /// settings.
    fn nested_loop(&self, outer_side: JoinSide) -> Option<(u8, NestedLoopParts, PlannerSettings)> {
        let kind = LoopKind::of(self.join_type, outer_side)?;
        let (outer, inner) = match outer_side {
            JoinSide::Left => (self.left, self.right),
            _ => (self.right, self.left),
        };
        let side = InnerSide::of(inner)?;
        let p = side.replan.planner;
        let outer_rows = rows(outer)?;
        for (k, (left_key, right_key)) in self.on.iter().enumerate() {
            let (outer_key, inner_key) = match outer_side {
                JoinSide::Left => (left_key, right_key),
                _ => (right_key, left_key),
            };
            let Some(column) = side.table_column(inner_key) else {
                continue;
            };
            let Ok(outer_type) = outer_key.data_type(&outer.schema()) else {
                continue;
            };
            if !comparable_type(&outer_type, side.table.columns[column].ty) {
                continue;
            }
            let clause: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
                Arc::new(Column::new(&side.table.columns[column].name, column)),
                Operator::Eq,
                OuterParam::new(outer_key.clone(), outer_type),
            ));
            let planned = match side.replan.with(vec![clause], outer_rows) {
                Ok(planned) => planned,
                Err(e) => {
                    tracing::debug!("nested loop: planning the inner scan: {e}");
                    continue;
                }
            };
            let Some(scan) = planned.downcast_ref::<IndexScanExec>() else {
                continue;
            };
            let Some(probe) = scan.estimate().filter(|_| scan.takes_outer_value()) else {
                continue;
            };
            let other_keys = (self.on.iter().enumerate())
                .filter(|(i, _)| *i != k)
                .map(|(_, (l, r))| match outer_side {
                    JoinSide::Left => (l.clone(), r.clone()),
                    _ => (r.clone(), l.clone()),
                })
                .collect();
            let pairs = outer_rows * probe.rows;
            let estimate_rows = clamp_rows(match kind {
                LoopKind::Inner => pairs,
                LoopKind::Left => pairs.max(outer_rows),
                LoopKind::Semi => outer_rows * probe.rows.min(1.0),
                LoopKind::Anti => outer_rows * (1.0 - probe.rows.min(1.0)),
            });
            let outer_cost = plan_cost(outer.as_ref()).unwrap_or(0.0);
            let disabled = u8::from(!p.enable_nestloop) + u8::from(probe.disabled);
            let estimate = PathEstimate {
                startup_cost: probe.startup_cost,
                total_cost: outer_cost
                    + outer_rows * probe.total_cost
                    + p.cpu_tuple_cost * estimate_rows,
                rows: estimate_rows,
                width: 0,
                // The node's own: its inner scan shows its own.
                disabled: !p.enable_nestloop,
            };
            tracing::debug!(
                "planner: nested loop over {}: {} loops of cost {:.2}: {:.2}",
                side.table.name,
                outer_rows,
                probe.total_cost,
                estimate.total_cost
            );
            let parts = NestedLoopParts {
                outer: outer.clone(),
                outer_side,
                inner: planned.clone(),
                inner_filter: side.filter.clone(),
                inner_columns: side.columns.clone(),
                outer_key: outer_key.clone(),
                other_keys,
                join_type: self.join_type,
                filter: self.filter.cloned(),
                projection: self.projection.clone(),
                schema: self.schema.clone(),
                estimate,
            };
            return Some((disabled, parts, p));
        }
        None
    }

    /// The join's own cost (module comment, step 3) and disabled nodes, as a nested loop's
    /// are compared with it.
    fn cost(&self, p: &PlannerSettings) -> (u8, f64) {
        let (left_rows, right_rows) = (
            rows(self.left).unwrap_or(1.0),
            rows(self.right).unwrap_or(1.0),
        );
        let inputs = plan_cost(self.left.as_ref()).unwrap_or(0.0)
            + plan_cost(self.right.as_ref()).unwrap_or(0.0);
        let keys = self.on.len() as f64;
        let (cost, enabled) = match self.method {
            Method::Hash => {
                let (left_keys, right_keys): (Vec<_>, Vec<_>) = self.on.iter().cloned().unzip();
                let hash = |build: &Arc<dyn ExecutionPlan>,
                            build_keys: &[PhysicalExprRef],
                            build_rows: f64,
                            probe_rows: f64| {
                    let nbuckets = (build_rows as u64).max(1024).next_power_of_two() as f64;
                    let bucket = (build_keys.iter())
                        .map(|k| bucket_size(build, k, build_rows, nbuckets))
                        .fold(1.0, f64::min);
                    (p.cpu_operator_cost * keys + p.cpu_tuple_cost) * build_rows
                        + p.cpu_operator_cost * keys * probe_rows
                        + p.cpu_operator_cost * probe_rows * clamp_rows(build_rows * bucket) * 0.5
                };
                let cost = inputs
                    + f64::min(
                        hash(self.left, &left_keys, left_rows, right_rows),
                        hash(self.right, &right_keys, right_rows, left_rows),
                    );
                (cost, p.enable_hashjoin)
            }
            Method::Merge => {
                let sort = |rows: f64| cost::sort(p, rows, 8, None).total;
                let cost = inputs
                    + sort(left_rows)
                    + sort(right_rows)
                    + p.cpu_operator_cost * (left_rows + right_rows);
                (cost, p.enable_mergejoin)
            }
        };
        let scans_disabled = [self.left, self.right]
            .iter()
            .filter(|s| InnerSide::of(s).is_some_and(|s| s.estimate.disabled))
            .count() as u8;
        (u8::from(!enabled) + scans_disabled, cost)
    }
}

/// `estimate_hash_bucketsize`: the share of a hash table's rows in the bucket of one key
/// value, for a table built from `rows` rows of `side` on `key` in `nbuckets` buckets
/// (module comment, step 3).
fn bucket_size(
    side: &Arc<dyn ExecutionPlan>,
    key: &PhysicalExprRef,
    rows: f64,
    nbuckets: f64,
) -> f64 {
    let distinct = InnerSide::of(side).and_then(|s| s.distinct_values(key, rows));
    let Some(distinct) = distinct else {
        return f64::max(0.1, 1.0 / nbuckets);
    };
    let share = match distinct > nbuckets {
        true => 1.0 / nbuckets,
        false => 1.0 / distinct,
    };
    share.clamp(1.0e-6, 1.0)
}

/// The estimated rows of `plan`, if DataFusion knows them.
fn rows(plan: &Arc<dyn ExecutionPlan>) -> Option<f64> {
    let stats = StatisticsContext::new().compute(plan.as_ref(), &StatisticsArgs::new());
    match stats.ok()?.num_rows {
        Precision::Exact(n) | Precision::Inexact(n) => Some((n as f64).max(1.0)),
        Precision::Absent => None,
    }
}

/// A join side that is one table's scan (module comment, step 1).
struct InnerSide<'a> {
    db: &'a Arc<Database>,
    replan: &'a Replan,
    table: &'a TableDef,
    /// Table column of each of the scan's output columns.
    projection: &'a [usize],
    estimate: PathEstimate,
    /// Over the scan's output.
    filter: Option<Arc<dyn PhysicalExpr>>,
    /// The scan's output column of each of the side's columns.
    columns: Vec<usize>,
}

impl<'a> InnerSide<'a> {
    fn of(plan: &'a Arc<dyn ExecutionPlan>) -> Option<InnerSide<'a>> {
        let mut columns: Option<Vec<usize>> = None;
        let mut filter = None;
        let mut cur = plan;
        // `columns[i]`, the side's column i, is column `map[columns[i]]` below.
        let through = |columns: Option<Vec<usize>>, map: Vec<usize>| match columns {
            None => Some(map),
            Some(c) => c.iter().map(|&i| map.get(i).copied()).collect(),
        };
        loop {
            if let Some(p) = cur.downcast_ref::<ProjectionExec>() {
                if filter.is_some() {
                    return None; // a filter over computed columns
                }
                let map = (p.expr().iter())
                    .map(|e| e.expr.downcast_ref::<Column>().map(Column::index))
                    .collect::<Option<Vec<usize>>>()?;
                columns = Some(through(columns, map)?);
                cur = p.input();
            } else if let Some(f) = cur.downcast_ref::<FilterExec>() {
                // A LIMIT on the side takes some rows of the whole table, not of a probe's.
                if filter.is_some() || f.fetch().is_some() {
                    return None;
                }
                if let Some(p) = f.projection() {
                    columns = Some(through(columns, p.to_vec())?);
                }
                filter = Some(f.predicate().clone());
                cur = f.input();
            } else if cur.is::<RepartitionExec>() || cur.is::<CooperativeExec>() {
                cur = cur.children()[0];
            } else {
                break;
            }
        }
        let (db, replan, table, projection, estimate) =
            if let Some(s) = cur.downcast_ref::<HeapScanExec>() {
                if s.limit.is_some() {
                    return None;
                }
                (
                    s.db(),
                    s.replan()?,
                    &s.table,
                    &s.projection[..],
                    s.estimate()?,
                )
            } else {
                let s = cur.downcast_ref::<IndexScanExec>()?;
                if s.is_limited() {
                    return None;
                }
                (
                    s.db(),
                    s.replan()?,
                    &s.table,
                    &s.projection[..],
                    s.estimate()?,
                )
            };
        let columns = columns.unwrap_or_else(|| (0..projection.len()).collect());
        Some(InnerSide {
            db,
            replan,
            table,
            projection,
            estimate,
            filter,
            columns,
        })
    }

    /// The distinct values of the side's `key` among `rows` of its rows, if the table's
    /// statistics know the key's column (`get_variable_numdistinct`, scaled to the rows
    /// as `estimate_hash_bucketsize` does); a unique index's only column has as many as the
    /// table has rows.
    fn distinct_values(&self, key: &Arc<dyn PhysicalExpr>, rows: f64) -> Option<f64> {
        let column = self.table_column(key)?;
        let blocks = self.db.table_blocks(self.table).ok()?;
        let (_, tuples) = cost::relation_size(self.table, blocks);
        let stats = RelStats::new(
            self.table,
            tuples,
            self.db.catalog.table_statistics(self.table.oid),
        );
        let unique = (self.db.catalog.indexes_of(self.table.oid).iter())
            .any(|i| i.unique && i.columns == [column]);
        let distinct = match (stats.column(column), unique) {
            (_, true) => tuples,
            (Some(_), false) => num_distinct(&stats, column),
            (None, false) => return None,
        };
        Some(match rows < tuples && tuples > 0.0 {
            true => clamp_rows(distinct * rows / tuples),
            false => distinct,
        })
    }

    /// The table column the side's expression `e` reads: a column, or one widened to a
    /// larger integer type (a join key DataFusion cast to the other key's type).
    fn table_column(&self, e: &Arc<dyn PhysicalExpr>) -> Option<usize> {
        let cast = e.downcast_ref::<CastExpr>();
        let column = match cast {
            Some(cast) => cast.expr().downcast_ref::<Column>()?,
            None => e.downcast_ref::<Column>()?,
        };
        let scan_column = *self.columns.get(column.index())?;
        let table_column = *self.projection.get(scan_column)?;
        let def = self.table.columns.get(table_column)?;
        if let Some(cast) = cast {
            let from = def.ty.arrow_type();
            let widening = from.is_signed_integer()
                && cast.cast_type().is_signed_integer()
                && from.primitive_width() <= cast.cast_type().primitive_width();
            if !widening {
                return None;
            }
        }
        Some(table_column)
    }
}
