//! A DataFusion physical plan as PostgreSQL's plan tree.
//!
//! DataFusion plans have nodes PostgreSQL has no counterpart for, and spell the ones it
//! has differently. The mapping:
//!
//! | DataFusion                                   | PostgreSQL |
//! |----------------------------------------------|------------|
//! | `HeapScanExec`                               | `Seq Scan on t` |
//! | `BitmapHeapScanExec`                         | `Bitmap Heap Scan on t` with `Recheck Cond:`, `Heap Blocks:` |
//! | `BitmapIndexScanExec`                        | `Bitmap Index Scan on i` with `Index Cond:`, `Index Searches:` |
//! | `BitmapCombineExec`                          | `BitmapAnd` / `BitmapOr` (members below it) |
//! | `IndexScanExec`                              | `Index Scan using i on t` (or `Index Scan Backward`, `Index Only Scan`) with `Index Cond:`, (`Heap Fetches:`), `Index Searches:` |
//! | `FilterExec` over a node                     | that node's `Filter:` line (and `Rows Removed by Filter`); over a bitmap or index scan, without the conjuncts its index condition already guarantees |
//! | `AggregateExec` Final over Partial (or Single) | one `Aggregate`; with GROUP BY `HashAggregate` (`GroupAggregate` on sorted input) and `Group Key:` |
//! | `SortExec`                                   | `Sort` with `Sort Key:`; with a fetch, a `Limit` above it |
//! | `GlobalLimitExec`                            | `Limit` (a fetch pushed into a node also shows as `Limit`) |
//! | `HashJoinExec` (left = build side)           | `Hash Join`: outer = probe side, inner = `Hash` over the build side, `Hash Cond:` |
//! | `NestedLoopJoinExec`, `CrossJoinExec`         | `Nested Loop` (outer = the streamed side), `Join Filter:` |
//! | `SortMergeJoinExec`                          | `Merge Join` with `Merge Cond:` |
//! | `UnionExec`, `InterleaveExec`                | `Append` |
//! | VALUES (`DataSourceExec` over memory)        | `Values Scan on "*VALUES*"` (one row: `Result`) |
//! | `ViewScanExec` (a statistics view)           | `Function Scan on pg_stat_get_io b`, as PostgreSQL's views over their functions |
//! | `LazyMemoryExec` of `generate_series`, `range` | `Function Scan on generate_series g`, its column named as the query names it (`g`, not DataFusion's `value`) |
//! | `PlaceholderRowExec` / `EmptyExec`           | `Result` (`One-Time Filter: false`) |
//! | `WindowAggExec`, `BoundedWindowAggExec`      | `WindowAgg` |
//! | `ProjectionExec`, `CoalesceBatchesExec`, `RepartitionExec`, `CoalescePartitionsExec`, `SortPreservingMergeExec`, `LocalLimitExec`, `CooperativeExec`, `Int4SeriesExec` | not shown |
//!
//! Hidden nodes still matter: a projection above a node decides its output (`width`,
//! VERBOSE `Output:`), and a fetch (LIMIT pushed down) becomes a `Limit`.
//!
//! Join sides: PostgreSQL lists the outer (probe, streamed) side first and builds its hash
//! table from the inner side; DataFusion builds from the left. So a DataFusion `Left` hash
//! join, which keeps the rows of the build side, is PostgreSQL's `Hash Right Join`.
//!
//! The scans' I/O comes from the metrics they publish (`metrics.rs`): `Buffers:` (a parent
//! adds its children's), `I/O Timings:`, iolab's `I/O Latency:` (own reads only) and, with
//! EXPLAIN (IO), the read stream's `Prefetch:` / `I/O:` lines on Seq Scan, Bitmap Heap Scan
//! and a Bitmap Index Scan that read its leaves ahead. A bitmap node's conditions are over
//! its heap scan's table, so the bitmap subtree is mapped with that table in hand.
//!
//! Expressions are qualified as PostgreSQL qualifies them: a scan's own filter only with
//! VERBOSE, other expressions (join conditions, keys) when the query reads more than one
//! relation or with VERBOSE.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{JoinSide, JoinType};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::source::DataSourceExec;
use datafusion::functions_table::generate_series::{GenericSeriesState, TimestampValue};
use datafusion::logical_expr::physical_planning_context::ScalarSubqueryResults;
use datafusion::logical_expr::{Expr, LogicalPlan, TableScan};
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::expressions::Literal;
use datafusion::physical_expr::expressions::{CastExpr, Column};
use datafusion::physical_expr::scalar_subquery::ScalarSubqueryExpr;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::{PhysicalExpr, PhysicalSortExpr};
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::joins::utils::{ColumnIndex, JoinFilter};
use datafusion::physical_plan::joins::{
    CrossJoinExec, HashJoinExec, NestedLoopJoinExec, SortMergeJoinExec,
};
use datafusion::physical_plan::limit::GlobalLimitExec;
use datafusion::physical_plan::memory::LazyMemoryExec;
use datafusion::physical_plan::placeholder_row::PlaceholderRowExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::scalar_subquery::{ScalarSubqueryExec, ScalarSubqueryLink};
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::union::{InterleaveExec, UnionExec};
use datafusion::physical_plan::windows::{BoundedWindowAggExec, WindowAggExec};
use datafusion::physical_plan::{ExecutionPlan, InputOrderMode};
use iolab_catalog::{PgType, TableDef};
use iolab_engine::exec::bitmap_scan::{
    BitmapCombine, BitmapCombineExec, BitmapHeapScanExec, BitmapIndexScanExec,
};
use iolab_engine::exec::hash_join_batches::{
    BATCHES_METRIC, BUILD_TEMP_WRITTEN_METRIC, ORIGINAL_BATCHES_METRIC,
};
use iolab_engine::exec::index_scan::IndexScanExec;
use iolab_engine::exec::nested_loop::{IndexNestedLoopExec, LoopKind};
use iolab_engine::exec::operator_usage::OperatorSnapshot;
use iolab_engine::exec::scan::HeapScanExec;
use iolab_engine::exec::table::table_schema;
use iolab_engine::plan::PathEstimate;
use iolab_engine::Database;
use iolab_settings::quote_identifier;

use crate::explain::costs::{self, CostParams};
use crate::explain::exprs::{
    as_index_cond, as_input_reference, conjuncts, deparse, deparse_qual, is_plain_column, Input,
};
use crate::explain::hash_table;
use crate::explain::instrument::{peel, NodeStats};
use crate::explain::metrics;
use crate::explain::node::{
    Actual, Buffers, Child, Costs, Detail, IndexTarget, PlanNode, Relation, SortSpaceType,
};
use crate::explain::options::ExplainOptions;
use crate::explain::qual_order::in_postgres_order;
use crate::explain::window_frame::frame_clause;
use crate::pgcatalog::view_scan::ViewScanExec;

/// What the mapping needs besides the plan.
pub struct Mapper<'a> {
    db: &'a Arc<Database>,
    opts: &'a ExplainOptions,
    costs: CostParams,
    track_io_timing: bool,
    /// Alias of each scan (by node address).
    aliases: HashMap<usize, String>,
    /// The function scans (`generate_series`) by node address.
    functions: HashMap<usize, FunctionScan>,
    /// Qualify columns in expressions above scans (more than one relation, or VERBOSE).
    prefix_upper: bool,
    /// Qualify columns in a scan's own filter (VERBOSE).
    prefix_scan: bool,
    /// Qualify columns in `Output:` (more than one relation).
    prefix_output: bool,
    /// The scans whose VERBOSE `Output:` is every column of the table
    /// ([`physical_tlist_scans`]), by node address.
    physical_tlist: HashSet<usize>,
    /// The scalar subqueries run before their plan (DataFusion's `ScalarSubqueryExec`), in
    /// plan order, as the expressions that read their values: `InitPlan n` is entry n − 1.
    init_plans: Vec<ScalarSubqueryExpr>,
    /// The outer sides of the nested loops whose inner side is being mapped, innermost
    /// last: an outer value (`Index Cond: (id = o.cust_id)`) reads over the last.
    outer_sides: std::cell::RefCell<Vec<Arc<dyn ExecutionPlan>>>,
}

/// A scan of a set-returning function, as the query names it.
struct FunctionScan {
    function: &'static str,
    alias: String,
    column: String,
}

/// What a query calls one of the relations it reads.
#[derive(Clone, Debug, PartialEq)]
pub struct ScanName {
    /// The table's name; a set-returning function's name with `()` (`generate_series()`),
    /// as DataFusion names its scan.
    pub table: String,
    pub alias: String,
    /// A function's one column (`generate_series(1, 3) g` names it `g`).
    pub column: Option<String>,
    /// The table columns the scan reads (all of them when the plan does not say).
    pub projection: Vec<usize>,
    /// The columns of the conditions pushed to the scan.
    pub condition_columns: BTreeSet<String>,
}

/// The columns the conditions pushed to a logical table scan name, leaving out conditions
/// on a subquery's value (the physical plan may have them where the logical has not).
fn scan_condition_columns(ts: &TableScan) -> BTreeSet<String> {
    let on_subquery = |f: &Expr| {
        f.exists(|e| Ok(matches!(e, Expr::ScalarSubquery(_))))
            .unwrap_or(true)
    };
    (ts.filters.iter())
        .filter(|f| !on_subquery(f))
        .flat_map(|f| f.column_refs())
        .map(|c| c.name.clone())
        .collect()
}

/// The columns physical conditions name, leaving out conditions on an InitPlan's value.
fn condition_columns<'e>(
    conditions: impl IntoIterator<Item = &'e Arc<dyn PhysicalExpr>>,
) -> BTreeSet<String> {
    fn on_init_plan(e: &Arc<dyn PhysicalExpr>) -> bool {
        e.as_ref().is::<ScalarSubqueryExpr>() || e.children().into_iter().any(on_init_plan)
    }
    (conditions.into_iter())
        .filter(|c| !on_init_plan(c))
        .flat_map(collect_columns)
        .map(|c| c.name().to_string())
        .collect()
}

/// The columns a logical table scan reads.
fn scan_projection(ts: &TableScan) -> Vec<usize> {
    match &ts.projection {
        Some(p) => p.clone(),
        None => (0..ts.source.schema().fields().len()).collect(),
    }
}

/// The names a query gives its tables and function scans, in the order the plan reads
/// them. The names come from the query's plan, the columns each scan reads from the
/// optimized plan (the physical plan's scans read those; `Mapper::new` matches on them):
/// the optimizer takes a name off a scan it puts a filter above.
pub fn scan_aliases(plan: &LogicalPlan, optimized: &LogicalPlan) -> Vec<ScanName> {
    let mut named = scans(plan);
    let read = scans(optimized);
    let same_scans =
        named.len() == read.len() && named.iter().zip(&read).all(|(n, r)| n.table == r.table);
    if same_scans {
        for (n, r) in named.iter_mut().zip(read) {
            n.projection = r.projection;
            n.condition_columns = r.condition_columns;
        }
    }
    named
}

/// The relations of a query that no scan reads itself: its subqueries in FROM, views and
/// WITH queries (each a `SubqueryAlias` over something else than a table's scan). They
/// are entries of PostgreSQL's range table, which qualifies column names in expressions
/// above the scans when it has more than one entry.
pub fn subquery_relations(plan: &LogicalPlan) -> usize {
    let mut count = 0;
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::SubqueryAlias(sa) = node {
            let over_scan = match sa.input.as_ref() {
                LogicalPlan::TableScan(_) => true,
                LogicalPlan::Projection(p) => matches!(p.input.as_ref(), LogicalPlan::TableScan(ts)
                    if ts.table_name.table().ends_with("()")),
                _ => false,
            };
            count += usize::from(!over_scan);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    count
}

/// The relations `plan` reads, in order, as its scans and aliases name them.
fn scans(plan: &LogicalPlan) -> Vec<ScanName> {
    fn walk(plan: &LogicalPlan, out: &mut Vec<ScanName>) {
        match plan {
            LogicalPlan::SubqueryAlias(sa) => {
                let alias = sa.alias.table().to_string();
                if let LogicalPlan::TableScan(ts) = sa.input.as_ref() {
                    let table = ts.table_name.table().to_string();
                    let column = (sa.schema.fields().first())
                        .filter(|_| table.ends_with("()"))
                        .map(|f| f.name().clone());
                    out.push(ScanName {
                        table,
                        alias,
                        column,
                        projection: scan_projection(ts),
                        condition_columns: scan_condition_columns(ts),
                    });
                    return;
                }
                // A function's column renamed by the alias (`AS g(g)`).
                if let LogicalPlan::Projection(p) = sa.input.as_ref() {
                    if let LogicalPlan::TableScan(ts) = p.input.as_ref() {
                        let table = ts.table_name.table().to_string();
                        if table.ends_with("()") && sa.schema.fields().len() == 1 {
                            let column = Some(sa.schema.field(0).name().clone());
                            out.push(ScanName {
                                table,
                                alias,
                                column,
                                projection: scan_projection(ts),
                                condition_columns: scan_condition_columns(ts),
                            });
                            return;
                        }
                    }
                }
            }
            LogicalPlan::TableScan(ts) => {
                let table = ts.table_name.table().to_string();
                let column = (table.ends_with("()") && ts.projected_schema.fields().len() == 1)
                    .then(|| ts.projected_schema.field(0).name().clone());
                out.push(ScanName {
                    alias: table.trim_end_matches("()").to_string(),
                    table,
                    column,
                    projection: scan_projection(ts),
                    condition_columns: scan_condition_columns(ts),
                });
                return;
            }
            _ => {}
        }
        for input in plan.inputs() {
            walk(input, out);
        }
        // The relations of subqueries in its expressions (`EXISTS (SELECT … FROM cust c)`),
        // which the physical plan joins after the query's own.
        let _ = plan.apply_subqueries(|subquery| {
            walk(subquery, out);
            Ok(TreeNodeRecursion::Continue)
        });
    }
    let mut out = Vec::new();
    walk(plan, &mut out);
    out
}

fn address(plan: &dyn ExecutionPlan) -> usize {
    plan as *const dyn ExecutionPlan as *const () as usize
}

impl<'a> Mapper<'a> {
    pub fn new(
        db: &'a Arc<Database>,
        opts: &'a ExplainOptions,
        costs: CostParams,
        track_io_timing: bool,
        root: &Arc<dyn ExecutionPlan>,
        mut logical_aliases: Vec<ScanName>,
        subquery_relations: usize,
    ) -> Mapper<'a> {
        // A name the query uses twice (the same table in a subquery) is `t`, then `t_1`,
        // `t_2` …, in the order the query lists them, as PostgreSQL names its range table.
        for at in 1..logical_aliases.len() {
            let taken = |name: &str| logical_aliases[..at].iter().any(|n| n.alias == name);
            if taken(&logical_aliases[at].alias) {
                logical_aliases[at].alias = numbered(&logical_aliases[at].alias, taken);
            }
        }
        let mut aliases = HashMap::new();
        let mut functions = HashMap::new();
        let mut relations = 0;
        let mut init_plans = Vec::new();
        init_plans_in_order(root, &mut init_plans);
        // Each node with the columns of the filters right above it.
        let mut walk_stack = vec![(root, BTreeSet::new())];
        while let Some((plan, filtered)) = walk_stack.pop() {
            let (inner, _) = peel(plan);
            if let Some(f) = inner.downcast_ref::<FilterExec>() {
                let mut columns = filtered;
                columns.extend(condition_columns([f.predicate()]));
                walk_stack.push((f.input(), columns));
                continue;
            }
            // A projection or a repartition passes the filter's columns on to its input.
            let passed_on = match is_hidden(inner.as_ref()) {
                true => filtered.clone(),
                false => BTreeSet::new(),
            };
            if let Some((table, projection)) = scanned_table(inner.as_ref()) {
                relations += 1;
                // The physical plan may read a table's scans in another order than the
                // query lists them (a join's sides swapped): the scan meant is the one
                // that reads the same columns, and of those the one with conditions on the
                // same columns (a condition on an InitPlan's value is the physical plan's
                // alone: it does not decide).
                let mut conditions = filtered;
                conditions.extend(condition_columns(scan_conditions(inner.as_ref())));
                let same_table = |n: &ScanName| n.table == table.name;
                let fit = |n: &ScanName| {
                    2 * u8::from(n.projection == projection)
                        + u8::from(n.condition_columns == conditions)
                };
                let at = (logical_aliases.iter().enumerate())
                    .filter(|(_, n)| same_table(n))
                    .max_by_key(|&(i, n)| (fit(n), std::cmp::Reverse(i)))
                    .map(|(i, _)| i);
                let alias = match at {
                    Some(i) => logical_aliases.remove(i).alias,
                    None => table.name.clone(),
                };
                // A name used already (a scan the query does not name) gets `_1`, `_2` ….
                let taken = |name: &str| aliases.values().any(|a| a == name);
                let unique = match taken(&alias) {
                    true => numbered(&alias, taken),
                    false => alias,
                };
                aliases.insert(address(inner.as_ref()), unique);
            } else if let Some(function) = series_function(inner.as_ref()) {
                relations += 1;
                let called = format!("{function}()");
                let name = match logical_aliases.iter().position(|n| n.table == called) {
                    Some(i) => logical_aliases.remove(i),
                    None => ScanName {
                        table: called,
                        alias: function.to_string(),
                        column: None,
                        projection: Vec::new(),
                        condition_columns: BTreeSet::new(),
                    },
                };
                let scan = FunctionScan {
                    function,
                    column: name.column.unwrap_or_else(|| function.to_string()),
                    alias: name.alias,
                };
                functions.insert(address(inner.as_ref()), scan);
            } else if values_rows(inner).is_some() {
                relations += 1;
            }
            // Depth first, children in order: the order the logical plan lists scans.
            let children = join_sides(inner.as_ref()).into_iter().rev();
            walk_stack.extend(children.map(|c| (c, passed_on.clone())));
        }
        Mapper {
            db,
            opts,
            costs,
            track_io_timing,
            aliases,
            functions,
            prefix_upper: relations + subquery_relations > 1 || opts.verbose,
            prefix_scan: opts.verbose,
            prefix_output: relations + subquery_relations > 1,
            physical_tlist: physical_tlist_scans(root),
            init_plans,
            outer_sides: Default::default(),
        }
    }

    /// The PostgreSQL plan tree of `root`.
    pub fn map(&self, root: &Arc<dyn ExecutionPlan>) -> PlanNode {
        self.slot(root, false)
    }

    /// The node a parent sees under one of its child slots: the first visible node below
    /// `plan`, with the filters above it merged in and a `Limit` for a fetch.
    fn slot(&self, plan: &Arc<dyn ExecutionPlan>, under_limit: bool) -> PlanNode {
        let top = plan;
        let (_, top_stats) = peel(top);
        let mut filters: Vec<(&FilterExec, Option<&Arc<NodeStats>>)> = Vec::new();
        let mut fetch = None;
        let mut init_plans = Vec::new();
        let mut cur = plan;
        loop {
            let (inner, stats) = peel(cur);
            // Scalar subqueries run first, then pass their input through: the input is the
            // node, the subqueries its InitPlans.
            if let Some(s) = inner.downcast_ref::<ScalarSubqueryExec>() {
                init_plans.extend(s.subqueries().iter().map(|l| (s.results(), l)));
                cur = s.input();
                continue;
            }
            if let Some(f) = inner.downcast_ref::<FilterExec>() {
                fetch = fetch.or(f.fetch());
                filters.push((f, stats));
                cur = f.input();
                continue;
            }
            if is_hidden(inner.as_ref()) {
                fetch = fetch.or(inner.fetch());
                cur = inner.children()[0];
                continue;
            }
            break;
        }
        let (visible, _) = peel(cur);
        let is_limit = visible.is::<GlobalLimitExec>();
        if !is_limit {
            fetch = fetch.or(visible.fetch());
        }
        let width = self.width(top);
        let mut node = self.visible(cur, width);
        if let Some(b) = node.buffers.as_mut() {
            // Temporary files are charged to the operator that made them, which may be
            // a hidden one or an aggregation's partial stage: the node shows all below it.
            let temp = subtree_temp(top);
            b.temp_read = temp.temp_read;
            b.temp_written = temp.temp_written;
            b.temp_read_ns = temp.temp_read_ns;
            b.temp_write_ns = temp.temp_write_ns;
        }
        if self.opts.verbose {
            let mut output = self.output(top);
            // A Sort or a Limit passes its input's rows on: its columns refer to them.
            if visible.is::<SortExec>() || is_limit {
                output = output.into_iter().map(as_input_reference).collect();
            }
            let whole_rows = self.physical_tlist.contains(&address(visible.as_ref()));
            if let Some((table, _)) = scanned_table(visible.as_ref()).filter(|_| whole_rows) {
                let alias = quote_identifier(&self.alias(visible.as_ref(), &table.name));
                let column = |c: &iolab_catalog::ColumnDef| match self.prefix_output {
                    true => format!("{alias}.{}", quote_identifier(&c.name)),
                    false => quote_identifier(&c.name),
                };
                output = table.columns.iter().map(column).collect();
            }
            node.output = Some(output);
        }
        if !filters.is_empty() {
            let is_scan =
                scanned_table(visible.as_ref()).is_some() || values_rows(visible).is_some();
            let prefix = if is_scan {
                self.prefix_scan
            } else {
                self.prefix_upper
            };
            // Conjuncts the index condition guarantees are not the node's filter.
            let covered = self.covered_quals(visible.as_ref());
            let mut any_qual = false;
            let mut quals = Vec::new();
            let mut texts = Vec::new();
            for (f, _) in filters.iter().rev() {
                let schema = f.input().schema();
                // An IN list DataFusion made ORs of is PostgreSQL's `= ANY` (as in an
                // index condition).
                let listed = (conjuncts(f.predicate()).iter())
                    .map(|q| as_index_cond(q, &schema))
                    .collect();
                for p in in_postgres_order(listed, &schema) {
                    any_qual = true;
                    let text = self.expr(&p, f.input(), prefix);
                    if !covered.contains(&text) {
                        texts.push(text);
                        quals.push(p);
                    }
                }
            }
            let mut filter_details = Vec::new();
            if !quals.is_empty() {
                filter_details.push(Detail::Expr {
                    label: "Filter",
                    text: and_list(texts),
                });
                if let (Some(c), None) = (node.costs, planner_estimate(visible.as_ref())) {
                    node.costs = Some(costs::filter(&self.costs, c, &quals));
                }
            }
            if let Some(a) = node.actual.as_mut().filter(|_| any_qual) {
                let kept = self.actual(filters[0].1).unwrap_or_default();
                if !quals.is_empty() {
                    filter_details.push(Detail::Removed {
                        label: "Rows Removed by Filter",
                        rows: (a.rows - kept.rows).max(0.0),
                    });
                }
                a.rows = kept.rows;
                a.times_ms = kept.times_ms.or(a.times_ms);
            }
            let at = node
                .details
                .iter()
                .position(Detail::follows_filter)
                .unwrap_or(node.details.len());
            node.details.splice(at..at, filter_details);
        }
        let init_plans: Vec<Child> = init_plans
            .into_iter()
            .map(|(results, link)| {
                let number = self.init_plan_number(&subquery_value(results, link));
                let mut plan = self.slot(&link.plan, false);
                plan.subplan_name = Some(format!("InitPlan {}", number.unwrap_or(0)));
                Child {
                    relationship: "InitPlan",
                    node: plan,
                }
            })
            .collect();
        // The node runs its InitPlans before its first row: PostgreSQL adds their total
        // costs to its startup and total costs.
        let init_cost: f64 = (init_plans.iter())
            .filter_map(|c| c.node.costs.map(|c| c.total))
            .sum();
        if let Some(c) = node.costs.as_mut() {
            c.startup += init_cost;
            c.total += init_cost;
        }
        node.children.splice(0..0, init_plans);
        match fetch {
            Some(n) if !under_limit => {
                let costs = node.costs.map(|c| costs::limit(c, 0, Some(n)));
                let actual = self.actual(top_stats).or(node.actual);
                let buffers = node.buffers;
                let output = node.output.clone();
                PlanNode {
                    node_type: "Limit".into(),
                    text_name: "Limit".into(),
                    costs,
                    actual,
                    output,
                    buffers,
                    children: vec![Child {
                        relationship: "Outer",
                        node,
                    }],
                    ..Default::default()
                }
            }
            _ => node,
        }
    }

    /// `Function Scan on [pg_catalog.]function alias` with `costs`.
    fn function_scan(&self, function: &str, alias: &str, costs: Option<Costs>) -> PlanNode {
        PlanNode {
            node_type: "Function Scan".into(),
            text_name: "Function Scan".into(),
            relation: Some(Relation {
                object_tag: Some("Function Name"),
                object_name: Some(function.into()),
                schema: self.opts.verbose.then(|| "pg_catalog".into()),
                alias: alias.into(),
            }),
            costs,
            ..Default::default()
        }
    }

    /// Under ANALYZE, what the operators of one node (an aggregation's two stages, say)
    /// used together, if any of them ran.
    fn operators(&self, stats: &[Option<&Arc<NodeStats>>]) -> Option<OperatorSnapshot> {
        let ran: Vec<&Arc<NodeStats>> = (stats.iter().flatten().copied())
            .filter(|s| s.snapshot().executed())
            .collect();
        if !self.opts.analyze || ran.is_empty() {
            return None;
        }
        let mut sum = OperatorSnapshot::default();
        for s in ran {
            sum.add(&s.operator.snapshot());
        }
        Some(sum)
    }

    fn actual(&self, stats: Option<&Arc<NodeStats>>) -> Option<Actual> {
        if !self.opts.analyze {
            return None;
        }
        let o = stats.map(|s| s.snapshot()).unwrap_or_default();
        Some(Actual {
            times_ms: if self.opts.timing && o.executed() {
                o.times_ms()
            } else {
                None
            },
            rows: o.rows as f64,
            loops: u64::from(o.executed()),
        })
    }

    /// A node with its own buffer usage plus its children's.
    fn finish(&self, mut node: PlanNode, own: Buffers) -> PlanNode {
        if self.opts.analyze && self.opts.buffers {
            let mut b = own;
            b.track_io_timing = self.track_io_timing;
            for c in &node.children {
                if let Some(cb) = &c.node.buffers {
                    b.add(cb);
                }
            }
            node.buffers = Some(b);
        }
        if self.opts.analyze && self.opts.wal {
            node.wal = Some(Default::default());
        }
        node
    }

    fn child_costs(&self, node: &PlanNode) -> Costs {
        node.costs.unwrap_or_default()
    }

    /// A visible node (not hidden, not a filter).
    fn visible(&self, plan: &Arc<dyn ExecutionPlan>, width: i64) -> PlanNode {
        let (inner, stats) = peel(plan);
        let actual = self.actual(stats);
        let with_costs = |c: Costs| self.opts.costs.then_some(Costs { width, ..c });
        let p = &self.costs;
        let upper = self.prefix_upper;

        if let Some(scan) = inner.downcast_ref::<HeapScanExec>() {
            // Without the planner's estimate (a scan built outside the planner): the
            // no-statistics formula.
            let estimate = planner_estimate(inner.as_ref()).unwrap_or_else(|| {
                let blocks = self.db.table_blocks(&scan.table).unwrap_or(0);
                let (pages, tuples) = costs::relation_size(&scan.table, blocks);
                costs::seq_scan(p, pages, tuples, width)
            });
            let node = PlanNode {
                node_type: "Seq Scan".into(),
                text_name: "Seq Scan".into(),
                relation: Some(self.relation(inner.as_ref(), &scan.table)),
                costs: with_costs(estimate),
                disabled: planner_disabled(inner.as_ref()),
                actual,
                details: self.read_stream_details(inner.as_ref()),
                ..Default::default()
            };
            return self.finish_scan(node, inner.as_ref());
        }

        if let Some(scan) = inner.downcast_ref::<BitmapHeapScanExec>() {
            let alias = self.alias(inner.as_ref(), &scan.table.name);
            let child = self.bitmap_tree(inner.children()[0], &scan.table, &alias);
            let mut details = Vec::new();
            let recheck = scan.recheck_cond.as_slice();
            if let Some(cond) = self.table_qual(recheck, &scan.table, &alias) {
                details.push(Detail::Expr {
                    label: "Recheck Cond",
                    text: cond,
                });
                details.push(Detail::Removed {
                    label: "Rows Removed by Index Recheck",
                    rows: metrics::counter(inner.as_ref(), "rows_removed_by_index_recheck") as f64,
                });
            }
            if self.opts.analyze {
                details.push(Detail::HeapBlocks {
                    exact: metrics::counter(inner.as_ref(), "exact_heap_blocks"),
                    lossy: metrics::counter(inner.as_ref(), "lossy_heap_blocks"),
                });
            }
            details.extend(self.read_stream_details(inner.as_ref()));
            let node = PlanNode {
                node_type: "Bitmap Heap Scan".into(),
                text_name: "Bitmap Heap Scan".into(),
                relation: Some(self.relation(inner.as_ref(), &scan.table)),
                costs: with_costs(planner_estimate(inner.as_ref()).unwrap_or_default()),
                disabled: planner_disabled(inner.as_ref()),
                actual,
                details,
                children: vec![outer(child)],
                ..Default::default()
            };
            return self.finish_scan(node, inner.as_ref());
        }

        if let Some(scan) = inner.downcast_ref::<IndexScanExec>() {
            return self.index_scan(inner, scan, actual, width);
        }

        if let Some(nested) = inner.downcast_ref::<IndexNestedLoopExec>() {
            return self.index_nested_loop(nested, actual, width);
        }

        if let Some(agg) = inner.downcast_ref::<AggregateExec>() {
            let (src, src_stats, input) = aggregate_source(agg);
            let keys: Vec<String> = src
                .group_expr()
                .expr()
                .iter()
                .map(|(e, _)| self.expr(e, input, upper))
                .collect();
            let child = self.slot(input, false);
            let (text_name, strategy) = if keys.is_empty() {
                ("Aggregate", "Plain")
            } else if *src.input_order_mode() == InputOrderMode::Sorted {
                ("GroupAggregate", "Sorted")
            } else {
                ("HashAggregate", "Hashed")
            };
            let group_columns: Vec<Option<costs::ColumnEstimate>> = src
                .group_expr()
                .expr()
                .iter()
                .map(|(e, _)| self.expr_estimate(e, input))
                .collect();
            let c = costs::aggregate(
                p,
                self.child_costs(&child),
                &group_columns,
                src.aggr_expr().len(),
                width,
            );
            let mut details = Vec::new();
            if !keys.is_empty() {
                details.push(Detail::List {
                    label: "Group Key",
                    items: keys,
                });
            }
            if strategy == "Hashed" && self.opts.costs {
                details.push(Detail::PlannedPartitions(0));
            }
            if let Some(space) = self
                .operators(&[stats, src_stats])
                .filter(|_| strategy == "Hashed")
            {
                details.push(Detail::HashAggSpace {
                    batches: 1 + space.temp_files,
                    memory_kb: space.peak_memory_bytes.div_ceil(1024),
                    disk_kb: space.peak_disk_bytes.div_ceil(1024),
                });
            }
            let node = PlanNode {
                node_type: "Aggregate".into(),
                text_name: text_name.into(),
                strategy: Some(strategy),
                partial_mode: Some("Simple"),
                costs: with_costs(c),
                actual,
                details,
                children: vec![outer(child)],
                ..Default::default()
            };
            return self.finish(node, Buffers::default());
        }

        if let Some(sort) = inner.downcast_ref::<SortExec>() {
            let keys = self.sort_keys(sort.expr().iter(), sort.input());
            let child = self.slot(sort.input(), false);
            let c = costs::sort(p, self.child_costs(&child), sort.fetch());
            // Input already in the order of the first keys (an ordered index scan):
            // PostgreSQL's Incremental Sort, which sorts only the rows of equal keys.
            let presorted = presorted_keys(sort);
            let mut details = vec![Detail::List {
                label: "Sort Key",
                items: keys,
            }];
            if presorted > 0 {
                // Without their directions, as PostgreSQL lists them.
                let presorted_exprs = sort.expr().iter().take(presorted);
                details.push(Detail::List {
                    label: "Presorted Key",
                    items: presorted_exprs
                        .map(|s| {
                            as_input_reference(self.expr(&s.expr, sort.input(), self.prefix_upper))
                        })
                        .collect(),
                });
            }
            if let Some(space) = self.operators(&[stats]).filter(|_| presorted == 0) {
                details.push(match (space.temp_files > 0, sort.fetch().is_some()) {
                    (true, _) => Detail::SortSpace {
                        method: "external merge",
                        space: SortSpaceType::Disk,
                        kb: space.peak_disk_bytes.div_ceil(1024),
                    },
                    (false, top_n) => Detail::SortSpace {
                        method: if top_n { "top-N heapsort" } else { "quicksort" },
                        space: SortSpaceType::Memory,
                        kb: space.peak_memory_bytes.div_ceil(1024),
                    },
                });
            }
            let name = if presorted > 0 {
                "Incremental Sort"
            } else {
                "Sort"
            };
            let node = PlanNode {
                node_type: name.into(),
                text_name: name.into(),
                costs: with_costs(c),
                actual,
                details,
                children: vec![outer(child)],
                ..Default::default()
            };
            return self.finish(node, Buffers::default());
        }

        if let Some(limit) = inner.downcast_ref::<GlobalLimitExec>() {
            let child = self.slot(limit.input(), true);
            let c = costs::limit(self.child_costs(&child), limit.skip(), limit.fetch());
            let node = PlanNode {
                node_type: "Limit".into(),
                text_name: "Limit".into(),
                costs: with_costs(c),
                actual,
                children: vec![outer(child)],
                ..Default::default()
            };
            return self.finish(node, Buffers::default());
        }

        if let Some(j) = inner.downcast_ref::<HashJoinExec>() {
            let probe = self.slot(j.right(), false);
            let build = self.slot(j.left(), false);
            let conds: Vec<String> = j
                .on()
                .iter()
                .map(|(l, r)| {
                    format!(
                        "({} = {})",
                        self.expr(r, j.right(), upper),
                        self.expr(l, j.left(), upper)
                    )
                })
                .collect();
            let mut details = vec![Detail::Expr {
                label: "Hash Cond",
                text: and_list(conds),
            }];
            details.extend(self.join_filter(j.filter(), j.left(), j.right()));
            let jt = pg_join_type(j.join_type(), true);
            let (outer_costs, inner_costs) = (self.child_costs(&probe), self.child_costs(&build));
            let keys = j.on().iter().map(|(l, r)| (r, l));
            let clauses = self.join_clauses(keys, j.right(), j.left());
            let rows = costs::join_rows(&outer_costs, &inner_costs, &clauses, jt);
            let c = costs::hash_join(p, outer_costs, inner_costs, j.on().len(), rows, width);
            let hash_space = self.operators(&[stats]).map(|space| {
                let slots = (metrics::counter(inner.as_ref(), "array_map_created_count") > 0)
                    .then(|| peel(j.left()).1.and_then(|s| s.build_keys.slots()))
                    .flatten();
                Detail::HashSpace {
                    buckets: hash_table::buckets(
                        metrics::counter(inner.as_ref(), "build_input_rows"),
                        slots,
                    ),
                    batches: metrics::gauge(inner.as_ref(), BATCHES_METRIC).max(1),
                    original_batches: metrics::gauge(inner.as_ref(), ORIGINAL_BATCHES_METRIC)
                        .max(1),
                    memory_kb: space.peak_memory_bytes.div_ceil(1024),
                }
            });
            let hash = self.finish(
                PlanNode {
                    node_type: "Hash".into(),
                    text_name: "Hash".into(),
                    costs: build.costs.map(|b| Costs {
                        startup: b.total,
                        ..b
                    }),
                    actual: build.actual,
                    output: build.output.clone(),
                    details: hash_space.into_iter().collect(),
                    children: vec![outer(build)],
                    ..Default::default()
                },
                // The build rows it wrote to batch files, as PostgreSQL's Hash shows.
                Buffers {
                    usage: iolab_stats::BufferUsage {
                        temp_written: metrics::counter(inner.as_ref(), BUILD_TEMP_WRITTEN_METRIC),
                        ..Default::default()
                    },
                    track_io_timing: false,
                },
            );
            let node = PlanNode {
                node_type: "Hash Join".into(),
                text_name: join_name("Hash", jt),
                join_type: Some(jt),
                inner_unique: Some(false),
                costs: with_costs(c),
                actual,
                details,
                children: vec![outer(probe), inner_child(hash)],
                ..Default::default()
            };
            return self.finish(node, Buffers::default());
        }

        if let Some(j) = inner.downcast_ref::<NestedLoopJoinExec>() {
            return self.nested_loop(
                j.left(),
                j.right(),
                j.join_type(),
                j.filter(),
                actual,
                width,
            );
        }
        if let Some(j) = inner.downcast_ref::<CrossJoinExec>() {
            return self.nested_loop(j.left(), j.right(), &JoinType::Inner, None, actual, width);
        }

        if let Some(j) = inner.downcast_ref::<SortMergeJoinExec>() {
            let left = self.slot(j.left(), false);
            let right = self.slot(j.right(), false);
            let conds: Vec<String> = j
                .on()
                .iter()
                .map(|(l, r)| {
                    format!(
                        "({} = {})",
                        self.expr(l, j.left(), upper),
                        self.expr(r, j.right(), upper)
                    )
                })
                .collect();
            let mut details = vec![Detail::Expr {
                label: "Merge Cond",
                text: and_list(conds),
            }];
            details.extend(self.join_filter(j.filter().as_ref(), j.left(), j.right()));
            let jt = pg_join_type(&j.join_type(), false);
            let (outer_costs, inner_costs) = (self.child_costs(&left), self.child_costs(&right));
            let keys = j.on().iter().map(|(l, r)| (l, r));
            let clauses = self.join_clauses(keys, j.left(), j.right());
            let rows = costs::join_rows(&outer_costs, &inner_costs, &clauses, jt);
            let c = costs::hash_join(p, outer_costs, inner_costs, j.on().len(), rows, width);
            let node = PlanNode {
                node_type: "Merge Join".into(),
                text_name: join_name("Merge", jt),
                join_type: Some(jt),
                inner_unique: Some(false),
                costs: with_costs(c),
                actual,
                details,
                children: vec![outer(left), inner_child(right)],
                ..Default::default()
            };
            return self.finish(node, Buffers::default());
        }

        let union_inputs = inner
            .downcast_ref::<UnionExec>()
            .map(|u| u.inputs().clone())
            .or_else(|| {
                inner
                    .downcast_ref::<InterleaveExec>()
                    .map(|u| u.inputs().clone())
            });
        if let Some(inputs) = union_inputs {
            let children: Vec<PlanNode> = inputs.iter().map(|c| self.slot(c, false)).collect();
            let child_costs: Vec<Costs> = children.iter().map(|c| self.child_costs(c)).collect();
            let node = PlanNode {
                node_type: "Append".into(),
                text_name: "Append".into(),
                costs: with_costs(costs::append(p, &child_costs, width)),
                actual,
                children: children
                    .into_iter()
                    .map(|node| Child {
                        relationship: "Member",
                        node,
                    })
                    .collect(),
                ..Default::default()
            };
            return self.finish(node, Buffers::default());
        }

        if let Some(FunctionScan {
            function, alias, ..
        }) = self.functions.get(&address(inner.as_ref()))
        {
            let series = integer_series(inner.as_ref());
            let rows = series.map_or(1000.0, |s| s.rows());
            let mut details = Vec::new();
            if let Some(s) = series.filter(|_| self.opts.verbose) {
                details.push(Detail::Expr {
                    label: "Function Call",
                    text: s.call(function),
                });
            }
            let node = self.function_scan(
                function,
                alias,
                with_costs(costs::function_scan(p, rows, width)),
            );
            return self.finish(
                PlanNode {
                    actual,
                    details,
                    ..node
                },
                Buffers::default(),
            );
        }

        if let Some(view) = inner.downcast_ref::<ViewScanExec>() {
            let (function, alias, rows) = view.function_scan();
            let node = self.function_scan(
                function,
                alias,
                with_costs(costs::function_scan(p, rows, width)),
            );
            return self.finish(PlanNode { actual, ..node }, Buffers::default());
        }

        if let Some(rows) = values_rows(inner).filter(|&rows| rows != 1) {
            let node = PlanNode {
                node_type: "Values Scan".into(),
                text_name: "Values Scan".into(),
                relation: Some(Relation {
                    alias: "*VALUES*".into(),
                    ..Default::default()
                }),
                costs: with_costs(costs::values(p, rows, width)),
                actual,
                ..Default::default()
            };
            return self.finish(node, Buffers::default());
        }

        // PostgreSQL computes a one-row VALUES list in a Result node.
        if inner.is::<PlaceholderRowExec>()
            || inner.is::<EmptyExec>()
            || values_rows(inner) == Some(1)
        {
            let empty = inner.is::<EmptyExec>();
            let rows = if empty { 0.0 } else { 1.0 };
            let mut node = PlanNode {
                node_type: "Result".into(),
                text_name: "Result".into(),
                costs: with_costs(costs::result(p, rows, width)),
                actual,
                ..Default::default()
            };
            if empty {
                node.details.push(Detail::Expr {
                    label: "One-Time Filter",
                    text: "false".into(),
                });
            }
            return self.finish(node, Buffers::default());
        }

        let window = inner
            .downcast_ref::<WindowAggExec>()
            .map(|w| (w.window_expr().to_vec(), w.input().clone()))
            .or_else(|| {
                inner
                    .downcast_ref::<BoundedWindowAggExec>()
                    .map(|w| (w.window_expr().to_vec(), w.input().clone()))
            });
        if let Some((exprs, input)) = window {
            let mut details = Vec::new();
            if let Some(w) = exprs.first() {
                let mut parts = Vec::new();
                if !w.partition_by().is_empty() {
                    let keys: Vec<String> = w
                        .partition_by()
                        .iter()
                        .map(|e| as_input_reference(self.expr(e, &input, upper)))
                        .collect();
                    parts.push(format!("PARTITION BY {}", keys.join(", ")));
                }
                if !w.order_by().is_empty() {
                    let keys = self.sort_keys(w.order_by().iter(), &input);
                    parts.push(format!("ORDER BY {}", keys.join(", ")));
                }
                let functions: Vec<&str> = exprs
                    .iter()
                    .map(|e| e.name().split('(').next().unwrap_or(""))
                    .collect();
                let ordered = !w.order_by().is_empty();
                parts.extend(frame_clause(&functions, w.get_window_frame(), ordered));
                details.push(Detail::Expr {
                    label: "Window",
                    text: format!("w1 AS ({})", parts.join(" ")),
                });
            }
            let child = self.slot(&input, false);
            let c = costs::per_row(p, self.child_costs(&child), exprs.len(), width);
            let node = PlanNode {
                node_type: "WindowAgg".into(),
                text_name: "WindowAgg".into(),
                costs: with_costs(c),
                actual,
                details,
                children: vec![outer(child)],
                ..Default::default()
            };
            return self.finish(node, Buffers::default());
        }

        // Anything else: its DataFusion name (PostgreSQL's where the node does the same
        // job: an unnest of a select list is PostgreSQL's ProjectSet), its children below it.
        let name = match inner.name() {
            "UnnestExec" => "ProjectSet".to_string(),
            other => other.trim_end_matches("Exec").to_string(),
        };
        let children: Vec<PlanNode> = inner
            .children()
            .into_iter()
            .map(|c| self.slot(c, false))
            .collect();
        let c = children
            .first()
            .map(|c| self.child_costs(c))
            .unwrap_or_else(|| costs::result(p, 1.0, width));
        let node = PlanNode {
            node_type: name.clone(),
            text_name: name,
            costs: with_costs(c),
            actual,
            children: children
                .into_iter()
                .enumerate()
                .map(|(i, node)| Child {
                    relationship: match i {
                        0 => "Outer",
                        1 => "Inner",
                        _ => "Member",
                    },
                    node,
                })
                .collect(),
            ..Default::default()
        };
        self.finish(node, Buffers::default())
    }

    /// A scan node with its own buffers plus its children's, and (with `track_io_timing`)
    /// the latency of its own reads.
    /// `Index Scan using i on t` (Backward, Index Only), with `actual` its rows and loops.
    fn index_scan(
        &self,
        inner: &Arc<dyn ExecutionPlan>,
        scan: &IndexScanExec,
        actual: Option<Actual>,
        width: i64,
    ) -> PlanNode {
        let alias = self.alias(inner.as_ref(), &scan.table.name);
        let with_costs = |c: Costs| self.opts.costs.then_some(Costs { width, ..c });
        let mut details = Vec::new();
        if let Some(cond) = self.index_cond(&scan.index_quals, &scan.table, &alias) {
            details.push(Detail::Expr {
                label: "Index Cond",
                text: cond,
            });
            // A B-tree never asks for a recheck: always 0, printed in structured
            // formats as PostgreSQL does.
            details.push(Detail::Removed {
                label: "Rows Removed by Index Recheck",
                rows: 0.0,
            });
        }
        let name = match scan.is_index_only() {
            true => "Index Only Scan",
            false => "Index Scan",
        };
        if scan.is_index_only() && actual.is_some() {
            details.push(Detail::Count {
                label: "Heap Fetches",
                value: metrics::counter(inner.as_ref(), "heap_fetches"),
            });
        }
        details.extend(self.index_searches(inner.as_ref(), actual));
        // Its leaves' read-ahead, when the scan went past its first leaf.
        if metrics::read_stream(inner.as_ref()).capacity > 0 {
            details.extend(self.read_stream_details(inner.as_ref()));
        }
        let backward = scan.is_backward();
        let node = PlanNode {
            node_type: name.into(),
            text_name: match backward {
                true => format!("{name} Backward"),
                false => name.into(),
            },
            index: Some(IndexTarget {
                name: scan.index_name.clone(),
                scan_direction: Some(if backward { "Backward" } else { "Forward" }),
            }),
            relation: Some(self.relation(inner.as_ref(), &scan.table)),
            costs: with_costs(planner_estimate(inner.as_ref()).unwrap_or_default()),
            disabled: planner_disabled(inner.as_ref()),
            actual,
            details,
            ..Default::default()
        };
        self.finish_scan(node, inner.as_ref())
    }

    /// `Nested Loop` whose inner Index Scan takes the outer rows' key, once per outer row.
    fn index_nested_loop(
        &self,
        nested: &IndexNestedLoopExec,
        actual: Option<Actual>,
        width: i64,
    ) -> PlanNode {
        let outer_node = self.slot(nested.outer(), false);
        let (inner_plan, scan) = nested.inner();
        self.outer_sides.borrow_mut().push(nested.outer().clone());
        let inner_node = self.loop_inner(nested, inner_plan, scan);
        self.outer_sides.borrow_mut().pop();

        // `Join Filter:` the join's equi-keys the index does not take, then its filter,
        // the inner side's columns read as the inner scan's.
        let on_scan = |e: &Arc<dyn PhysicalExpr>| -> Arc<dyn PhysicalExpr> {
            let columns = nested.inner_columns();
            e.clone()
                .transform(|n| match n.downcast_ref::<Column>() {
                    Some(c) => Ok(Transformed::yes(Arc::new(Column::new(
                        c.name(),
                        columns[c.index()],
                    ))
                        as Arc<dyn PhysicalExpr>)),
                    None => Ok(Transformed::no(n)),
                })
                .map(|t| t.data)
                .expect("a column rewrite cannot fail")
        };
        let (other_keys, filter) = nested.join_quals();
        let mut quals: Vec<String> = (other_keys.iter())
            .map(|(o, i)| {
                let outer = self.expr(o, nested.outer(), self.prefix_upper);
                let inner = self.expr(&on_scan(i), inner_plan, self.prefix_upper);
                format!("({outer} = {inner})")
            })
            .collect();
        if let Some(f) = filter {
            let outer_side = nested.outer_side();
            let indices = (f.column_indices().iter())
                .map(|c| ColumnIndex {
                    index: match c.side == outer_side {
                        true => c.index,
                        false => nested.inner_columns()[c.index],
                    },
                    side: c.side,
                })
                .collect();
            let on_scan = JoinFilter::new(f.expression().clone(), indices, f.schema().clone());
            let (left, right) = match outer_side {
                JoinSide::Left => (nested.outer(), inner_plan),
                _ => (inner_plan, nested.outer()),
            };
            if let Some(Detail::Expr { text, .. }) = self.join_filter(Some(&on_scan), left, right) {
                quals.push(text);
            }
        }
        let mut details = Vec::new();
        if !quals.is_empty() {
            details.push(Detail::Expr {
                label: "Join Filter",
                text: and_list(quals),
            });
            if let Some(a) = actual {
                details.push(Detail::Removed {
                    label: "Rows Removed by Join Filter",
                    rows: metrics::counter(nested, "rows_removed_by_join_filter") as f64
                        / a.loops.max(1) as f64,
                });
            }
        }
        let (outer_costs, inner_costs) =
            (self.child_costs(&outer_node), self.child_costs(&inner_node));
        let rows = nested.estimate().rows;
        let costs = Costs {
            startup: outer_costs.startup + inner_costs.startup,
            total: outer_costs.total
                + outer_costs.rows * inner_costs.total
                + self.costs.cpu_tuple_cost * rows,
            rows,
            width,
        };
        let jt = match nested.kind() {
            LoopKind::Inner => "Inner",
            LoopKind::Left => "Left",
            LoopKind::Semi => "Semi",
            LoopKind::Anti => "Anti",
        };
        let node = PlanNode {
            node_type: "Nested Loop".into(),
            text_name: join_name("Nested Loop", jt),
            join_type: Some(jt),
            inner_unique: Some(scan.finds_one_row()),
            costs: self.opts.costs.then_some(costs),
            disabled: nested.estimate().disabled,
            actual,
            details,
            children: vec![outer(outer_node), inner_child(inner_node)],
            ..Default::default()
        };
        self.finish(node, Buffers::default())
    }

    /// A nested loop's inner Index Scan: its rows and time per loop from its metrics, and
    /// the inner side's filter, which the nested loop applies.
    fn loop_inner(
        &self,
        nested: &IndexNestedLoopExec,
        plan: &Arc<dyn ExecutionPlan>,
        scan: &IndexScanExec,
    ) -> PlanNode {
        let actual =
            (self.opts.analyze).then(|| metrics::looped_actual(plan.as_ref(), self.opts.timing));
        let width = planner_estimate(plan.as_ref()).map_or(0, |c| c.width);
        let mut node = self.index_scan(plan, scan, actual, width);
        if self.opts.verbose {
            node.output = Some(self.output(plan));
        }
        let Some(filter) = nested.inner_filter() else {
            return node;
        };
        let covered = self.covered_quals(plan.as_ref());
        let texts: Vec<String> = (conjuncts(filter).iter())
            .map(|q| self.expr(q, plan, self.prefix_scan))
            .filter(|text| !covered.contains(text))
            .collect();
        if texts.is_empty() {
            return node;
        }
        let mut lines = vec![Detail::Expr {
            label: "Filter",
            text: and_list(texts),
        }];
        if let Some(a) = actual {
            lines.push(Detail::Removed {
                label: "Rows Removed by Filter",
                rows: metrics::counter(plan.as_ref(), "rows_removed_by_filter") as f64
                    / a.loops.max(1) as f64,
            });
        }
        let at = (node.details.iter())
            .position(Detail::follows_filter)
            .unwrap_or(node.details.len());
        node.details.splice(at..at, lines);
        node
    }

    /// How a nested loop's outer value reads: over the outer side of the nested loop whose
    /// inner side is being mapped, qualified.
    fn outer_value(&self, e: &Arc<dyn PhysicalExpr>) -> String {
        let outer = self.outer_sides.borrow().last().cloned();
        match outer {
            Some(outer) => self.expr(e, &outer, true),
            None => e.to_string(),
        }
    }

    fn finish_scan(&self, node: PlanNode, scan: &dyn ExecutionPlan) -> PlanNode {
        let mut node = self.finish(node, metrics::buffers(scan));
        if node.buffers.is_some() && self.track_io_timing {
            node.read_latency = Some(metrics::read_latency(scan));
        }
        node
    }

    /// EXPLAIN (IO): the `Prefetch:` / `I/O:` lines of a node that reads through a stream.
    fn read_stream_details(&self, scan: &dyn ExecutionPlan) -> Vec<Detail> {
        if self.opts.analyze && self.opts.io {
            vec![Detail::ReadStream(metrics::read_stream(scan))]
        } else {
            Vec::new()
        }
    }

    /// `Relation Name` / alias of a scan of `table`.
    fn relation(&self, scan: &dyn ExecutionPlan, table: &TableDef) -> Relation {
        Relation {
            object_tag: Some("Relation Name"),
            object_name: Some(table.name.clone()),
            schema: self.opts.verbose.then(|| table.schema.clone()),
            alias: self.alias(scan, &table.name),
        }
    }

    /// The bitmap subtree below a Bitmap Heap Scan of `table` (called `alias`): Bitmap
    /// Index Scans, BitmapAnd, BitmapOr. These nodes are not polled as streams, so their
    /// rows and times come from their own metrics.
    fn bitmap_tree(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        table: &TableDef,
        alias: &str,
    ) -> PlanNode {
        let (inner, _) = peel(plan);
        let actual = self
            .opts
            .analyze
            .then(|| metrics::baseline_actual(inner.as_ref(), self.opts.timing));
        let costs = self
            .opts
            .costs
            .then(|| planner_estimate(inner.as_ref()).unwrap_or_default());
        let disabled = planner_disabled(inner.as_ref());
        if let Some(index) = inner.downcast_ref::<BitmapIndexScanExec>() {
            let mut details = Vec::new();
            if let Some(cond) = self.index_cond(&index.index_quals, table, alias) {
                details.push(Detail::Expr {
                    label: "Index Cond",
                    text: cond,
                });
            }
            details.extend(self.index_searches(inner.as_ref(), actual));
            // Its leaves' read-ahead, when the scan went past its first leaf.
            if metrics::read_stream(inner.as_ref()).capacity > 0 {
                details.extend(self.read_stream_details(inner.as_ref()));
            }
            let node = PlanNode {
                node_type: "Bitmap Index Scan".into(),
                text_name: "Bitmap Index Scan".into(),
                index: Some(IndexTarget {
                    name: index.index_name.clone(),
                    scan_direction: None,
                }),
                costs,
                disabled,
                actual,
                details,
                ..Default::default()
            };
            return self.finish_scan(node, inner.as_ref());
        }
        if let Some(combine) = inner.downcast_ref::<BitmapCombineExec>() {
            let name = match combine.op {
                BitmapCombine::And => "BitmapAnd",
                BitmapCombine::Or => "BitmapOr",
            };
            let children = inner
                .children()
                .into_iter()
                .map(|c| Child {
                    relationship: "Member",
                    node: self.bitmap_tree(c, table, alias),
                })
                .collect();
            let node = PlanNode {
                node_type: name.into(),
                text_name: name.into(),
                costs,
                disabled,
                actual,
                children,
                ..Default::default()
            };
            return self.finish(node, Buffers::default());
        }
        // A wrapper an optimizer put around a bitmap node.
        match inner.children().as_slice() {
            [only] => self.bitmap_tree(only, table, alias),
            _ => self.slot(plan, false),
        }
    }

    /// PostgreSQL 18's `Index Searches:` (ANALYZE): the descents of the index, as the node
    /// counts them (`index_searches`), else one per execution.
    fn index_searches(&self, index: &dyn ExecutionPlan, actual: Option<Actual>) -> Option<Detail> {
        let actual = actual?;
        let counted = metrics::counter(index, "index_searches");
        Some(Detail::Count {
            label: "Index Searches",
            value: if counted > 0 { counted } else { actual.loops },
        })
    }

    /// An `Index Cond:` over `table`'s columns: [`table_qual`](Self::table_qual) with an OR
    /// the index scans as a list shown as one (`exprs::as_index_cond`).
    fn index_cond(
        &self,
        quals: &[Arc<dyn PhysicalExpr>],
        table: &TableDef,
        alias: &str,
    ) -> Option<String> {
        let schema = table_schema(table, true);
        let shown: Vec<_> = quals.iter().map(|q| as_index_cond(q, &schema)).collect();
        self.table_qual(&shown, table, alias)
    }

    /// Conditions over `table`'s columns (column i = table column i), AND-ed, as a scan's
    /// own conditions read: qualified with the alias only with VERBOSE.
    fn table_qual(
        &self,
        quals: &[Arc<dyn PhysicalExpr>],
        table: &TableDef,
        alias: &str,
    ) -> Option<String> {
        let schema = table_schema(table, true);
        let column = |i: usize| {
            let name = schema
                .fields()
                .get(i)
                .map(|f| quote_identifier(f.name()))
                .unwrap_or_else(|| format!("${i}"));
            if self.prefix_scan {
                format!("{}.{name}", quote_identifier(alias))
            } else {
                name
            }
        };
        deparse_qual(
            quals,
            &Input {
                column: &column,
                schema: &schema,
                init_plan: &|s| self.init_plan_number(s),
                outer_value: &|e| self.outer_value(e),
            },
        )
    }

    /// The filter conjuncts, as `Filter:` writes them, that a scan's index condition
    /// guarantees: a Bitmap Heap Scan's or an Index Scan's `covered_quals()`.
    fn covered_quals(&self, scan: &dyn ExecutionPlan) -> Vec<String> {
        let quals = scan_conditions(scan);
        let Some((table, _)) = scanned_table(scan).filter(|_| !quals.is_empty()) else {
            return Vec::new();
        };
        let alias = self.alias(scan, &table.name);
        let schema = table_schema(table, true);
        quals
            .iter()
            .filter_map(|q| self.table_qual(&[as_index_cond(q, &schema)], table, &alias))
            .collect()
    }

    fn nested_loop(
        &self,
        left: &Arc<dyn ExecutionPlan>,
        right: &Arc<dyn ExecutionPlan>,
        join_type: &JoinType,
        filter: Option<&JoinFilter>,
        actual: Option<Actual>,
        width: i64,
    ) -> PlanNode {
        let streamed = self.slot(right, false);
        let collected = self.slot(left, false);
        let details: Vec<Detail> = self.join_filter(filter, left, right).into_iter().collect();
        let c = costs::nested_loop(
            &self.costs,
            self.child_costs(&streamed),
            self.child_costs(&collected),
            filter.is_some(),
            width,
        );
        let jt = pg_join_type(join_type, true);
        let node = PlanNode {
            node_type: "Nested Loop".into(),
            text_name: join_name("Nested Loop", jt),
            join_type: Some(jt),
            inner_unique: Some(false),
            costs: self.opts.costs.then_some(Costs { width, ..c }),
            actual,
            details,
            children: vec![outer(streamed), inner_child(collected)],
            ..Default::default()
        };
        self.finish(node, Buffers::default())
    }

    fn join_filter(
        &self,
        filter: Option<&JoinFilter>,
        left: &Arc<dyn ExecutionPlan>,
        right: &Arc<dyn ExecutionPlan>,
    ) -> Option<Detail> {
        let f = filter?;
        let indices: &[ColumnIndex] = f.column_indices();
        let column = |i: usize| match indices.get(i) {
            Some(ci) => match ci.side {
                datafusion::common::JoinSide::Left => {
                    self.column(left, ci.index, self.prefix_upper)
                }
                datafusion::common::JoinSide::Right => {
                    self.column(right, ci.index, self.prefix_upper)
                }
                datafusion::common::JoinSide::None => "mark".into(),
            },
            None => format!("${i}"),
        };
        let quals = conjuncts(f.expression());
        let input = Input {
            column: &column,
            schema: f.schema(),
            init_plan: &|s| self.init_plan_number(s),
            outer_value: &|e| self.outer_value(e),
        };
        deparse_qual(&quals, &input).map(|text| Detail::Expr {
            label: "Join Filter",
            text,
        })
    }

    fn sort_keys<'e>(
        &self,
        exprs: impl Iterator<Item = &'e PhysicalSortExpr>,
        input: &Arc<dyn ExecutionPlan>,
    ) -> Vec<String> {
        exprs
            .map(|s| {
                let mut k = as_input_reference(self.expr(&s.expr, input, self.prefix_upper));
                let desc = s.options.descending;
                if desc {
                    k.push_str(" DESC");
                }
                if s.options.nulls_first && !desc {
                    k.push_str(" NULLS FIRST");
                } else if !s.options.nulls_first && desc {
                    k.push_str(" NULLS LAST");
                }
                k
            })
            .collect()
    }

    /// An expression evaluated over the rows of `over`.
    fn expr(
        &self,
        e: &Arc<dyn PhysicalExpr>,
        over: &Arc<dyn ExecutionPlan>,
        prefix: bool,
    ) -> String {
        let schema = over.schema();
        let column = |i: usize| self.column(over, i, prefix);
        deparse(
            e,
            &Input {
                column: &column,
                schema: &schema,
                init_plan: &|s| self.init_plan_number(s),
                outer_value: &|e| self.outer_value(e),
            },
        )
    }

    /// What is known of each `(outer key, inner key)` pair of a join, the keys read over
    /// `outer` and `inner`.
    fn join_clauses<'k>(
        &self,
        keys: impl Iterator<Item = (&'k Arc<dyn PhysicalExpr>, &'k Arc<dyn PhysicalExpr>)>,
        outer: &Arc<dyn ExecutionPlan>,
        inner: &Arc<dyn ExecutionPlan>,
    ) -> Vec<costs::JoinClause> {
        keys.map(|(o, i)| (self.expr_estimate(o, outer), self.expr_estimate(i, inner)))
            .collect()
    }

    /// What `pg_stats` says of the column expression `e` reads over `over` (None for any
    /// other expression).
    fn expr_estimate(
        &self,
        e: &Arc<dyn PhysicalExpr>,
        over: &Arc<dyn ExecutionPlan>,
    ) -> Option<costs::ColumnEstimate> {
        let column = e.downcast_ref::<datafusion::physical_expr::expressions::Column>()?;
        self.column_estimate(over, column.index())
    }

    /// What `pg_stats` says of output column `col` of `plan`: the column is followed down
    /// through nodes that pass their input's columns on (wrappers, filters, sorts, limits,
    /// projections of a column, joins) to the table a scan reads.
    fn column_estimate(
        &self,
        plan: &Arc<dyn ExecutionPlan>,
        col: usize,
    ) -> Option<costs::ColumnEstimate> {
        let (inner, _) = peel(plan);
        if let Some((table, projection)) = scanned_table(inner.as_ref()) {
            let attnum = i16::try_from(*projection.get(col)? + 1).ok()?;
            let stats = self.db.catalog.table_statistics(table.oid)?;
            let c = stats.columns.get(&attnum)?;
            return Some(costs::ColumnEstimate {
                distinct: c.distinct_count(table.reltuples)?,
                null_frac: c.null_frac as f64,
            });
        }
        if let Some(p) = inner.downcast_ref::<ProjectionExec>() {
            return self.expr_estimate(&p.expr().get(col)?.expr, p.input());
        }
        if let Some(f) = inner.downcast_ref::<FilterExec>() {
            let col = match f.projection() {
                Some(p) => *p.get(col)?,
                None => col,
            };
            return self.column_estimate(f.input(), col);
        }
        if let Some(j) = inner.downcast_ref::<HashJoinExec>() {
            let col = match &j.projection {
                Some(p) => *p.get(col)?,
                None => col,
            };
            let left = j.left().schema().fields().len();
            return match j.join_type() {
                JoinType::Inner | JoinType::Left | JoinType::Right | JoinType::Full => {
                    if col < left {
                        self.column_estimate(j.left(), col)
                    } else {
                        self.column_estimate(j.right(), col - left)
                    }
                }
                JoinType::LeftSemi | JoinType::LeftAnti | JoinType::LeftMark => {
                    self.column_estimate(j.left(), col)
                }
                JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => {
                    self.column_estimate(j.right(), col)
                }
            };
        }
        // A node with one input and the input's columns passes them on.
        match inner.children().as_slice() {
            [child] if child.schema().fields() == inner.schema().fields() => {
                self.column_estimate(child, col)
            }
            _ => None,
        }
    }

    /// `n` of the `InitPlan n` whose value `value` reads.
    fn init_plan_number(&self, value: &ScalarSubqueryExpr) -> Option<usize> {
        let at = self.init_plans.iter().position(|v| v == value)?;
        Some(at + 1)
    }

    fn alias(&self, scan: &dyn ExecutionPlan, table: &str) -> String {
        self.aliases
            .get(&address(scan))
            .cloned()
            .unwrap_or_else(|| table.to_string())
    }

    /// VERBOSE `Output:` of the node whose output is `top`'s.
    fn output(&self, top: &Arc<dyn ExecutionPlan>) -> Vec<String> {
        (0..top.schema().fields().len())
            .map(|i| self.column(top, i, self.prefix_output))
            .collect()
    }

    /// `width=`: the planner's average width of `plan`'s output row.
    fn width(&self, plan: &Arc<dyn ExecutionPlan>) -> i64 {
        let schema = plan.schema();
        (0..schema.fields().len())
            .map(|i| match base_column(plan, i) {
                Some(ty) => costs::column_width(&ty),
                None => costs::arrow_width(schema.field(i).data_type()),
            })
            .sum()
    }

    /// How column `idx` of `plan`'s output reads in an expression over it.
    fn column(&self, plan: &Arc<dyn ExecutionPlan>, idx: usize, prefix: bool) -> String {
        let (inner, _) = peel(plan);
        let field_name = || {
            inner
                .schema()
                .fields()
                .get(idx)
                .map(|f| quote_identifier(f.name()))
                .unwrap_or_else(|| format!("${idx}"))
        };
        if let Some((table, projection)) = scanned_table(inner.as_ref()) {
            let name = projection
                .get(idx)
                .and_then(|&c| table.columns.get(c))
                .map(|c| quote_identifier(&c.name))
                .unwrap_or_else(field_name);
            return if prefix {
                format!(
                    "{}.{name}",
                    quote_identifier(&self.alias(inner.as_ref(), &table.name))
                )
            } else {
                name
            };
        }
        if let Some(FunctionScan { alias, column, .. }) =
            self.functions.get(&address(inner.as_ref()))
        {
            let column = quote_identifier(column);
            return match prefix {
                true => format!("{}.{column}", quote_identifier(alias)),
                false => column,
            };
        }
        if let Some(proj) = inner.downcast_ref::<ProjectionExec>() {
            return match proj.expr().get(idx) {
                Some(pe) => self.expr(&pe.expr, proj.input(), prefix),
                None => field_name(),
            };
        }
        if let Some(f) = inner.downcast_ref::<FilterExec>() {
            let i = f.projection().as_ref().map_or(idx, |p| p[idx]);
            return self.column(f.input(), i, prefix);
        }
        if let Some(agg) = inner.downcast_ref::<AggregateExec>() {
            let (src, _, input) = aggregate_source(agg);
            let groups = src.group_expr().expr();
            if idx < groups.len() {
                return self.expr(&groups[idx].0, input, prefix);
            }
            return match src.aggr_expr().get(idx - groups.len()) {
                Some(a) => self.aggregate_call(a, input, prefix),
                None => field_name(),
            };
        }
        if let Some(j) = inner.downcast_ref::<HashJoinExec>() {
            let i = j.projection.as_ref().map_or(idx, |p| p[idx]);
            return self.join_column(j.join_type(), j.left(), j.right(), i, prefix);
        }
        if let Some(nested) = inner.downcast_ref::<IndexNestedLoopExec>() {
            let i = nested.projection().map_or(idx, |p| p[idx]);
            return match nested.join_column(i) {
                (true, c) => self.column(nested.outer(), c, prefix),
                (false, c) => self.column(nested.inner().0, c, prefix),
            };
        }
        if let Some(j) = inner.downcast_ref::<NestedLoopJoinExec>() {
            let i = j.projection().as_ref().map_or(idx, |p| p[idx]);
            return self.join_column(j.join_type(), j.left(), j.right(), i, prefix);
        }
        if let Some(j) = inner.downcast_ref::<CrossJoinExec>() {
            return self.join_column(&JoinType::Inner, j.left(), j.right(), idx, prefix);
        }
        if let Some(j) = inner.downcast_ref::<SortMergeJoinExec>() {
            return self.join_column(&j.join_type(), j.left(), j.right(), idx, prefix);
        }
        if let Some(u) = inner.downcast_ref::<UnionExec>() {
            return self.column(&u.inputs()[0], idx, prefix);
        }
        if let Some(u) = inner.downcast_ref::<InterleaveExec>() {
            return self.column(&u.inputs()[0], idx, prefix);
        }
        if values_rows(inner).is_some() {
            let name = field_name();
            return if prefix {
                format!("\"*VALUES*\".{name}")
            } else {
                name
            };
        }
        let window_input = inner
            .downcast_ref::<WindowAggExec>()
            .map(|w| (w.window_expr().to_vec(), w.input().clone()))
            .or_else(|| {
                inner
                    .downcast_ref::<BoundedWindowAggExec>()
                    .map(|w| (w.window_expr().to_vec(), w.input().clone()))
            });
        if let Some((exprs, input)) = window_input {
            let n = input.schema().fields().len();
            if idx < n {
                return self.column(&input, idx, prefix);
            }
            return match exprs.get(idx - n) {
                Some(w) => {
                    let args: Vec<String> = w
                        .expressions()
                        .iter()
                        .map(|e| self.expr(e, &input, prefix))
                        .collect();
                    let name = w.name().split('(').next().unwrap_or("").to_string();
                    format!("{name}({}) OVER w1", args.join(", "))
                }
                None => field_name(),
            };
        }
        let children = inner.children();
        if children.len() == 1
            && children[0].schema().fields().len() == inner.schema().fields().len()
        {
            return self.column(children[0], idx, prefix);
        }
        field_name()
    }

    fn join_column(
        &self,
        join_type: &JoinType,
        left: &Arc<dyn ExecutionPlan>,
        right: &Arc<dyn ExecutionPlan>,
        idx: usize,
        prefix: bool,
    ) -> String {
        let left_n = left.schema().fields().len();
        match join_type {
            JoinType::RightSemi | JoinType::RightAnti | JoinType::RightMark => {
                if idx < right.schema().fields().len() {
                    self.column(right, idx, prefix)
                } else {
                    "mark".into()
                }
            }
            JoinType::LeftSemi | JoinType::LeftAnti | JoinType::LeftMark => {
                if idx < left_n {
                    self.column(left, idx, prefix)
                } else {
                    "mark".into()
                }
            }
            _ => {
                if idx < left_n {
                    self.column(left, idx, prefix)
                } else {
                    self.column(right, idx - left_n, prefix)
                }
            }
        }
    }

    /// `count(*)`, `sum(a)`, `count(DISTINCT a)`.
    fn aggregate_call(
        &self,
        a: &AggregateFunctionExpr,
        input: &Arc<dyn ExecutionPlan>,
        prefix: bool,
    ) -> String {
        let name = a.fun().name().to_string();
        let args = a.expressions();
        let constant = args.iter().all(|e| {
            e.as_ref()
                .downcast_ref::<Literal>()
                .is_some_and(|l| !l.value().is_null())
        });
        if name == "count" && !a.is_distinct() && constant {
            return "count(*)".into();
        }
        let schema = input.schema();
        let args: Vec<String> = args
            .iter()
            .map(|e| {
                // A bigint summed in numeric (`sql::checked_arithmetic`): PostgreSQL's sum
                // takes the bigint itself.
                let numeric_sum = e.downcast_ref::<CastExpr>().filter(|c| {
                    name == "sum"
                        && *c.cast_type() == DataType::Decimal128(38, 0)
                        && c.expr().data_type(&schema).ok() == Some(DataType::Int64)
                });
                match numeric_sum {
                    Some(c) => self.expr(c.expr(), input, prefix),
                    None => self.expr(e, input, prefix),
                }
            })
            .collect();
        let distinct = if a.is_distinct() { "DISTINCT " } else { "" };
        format!("{name}({distinct}{})", args.join(", "))
    }
}

/// The InitPlans of `plan` as PostgreSQL numbers them: those of a subquery before the
/// subquery's own (they are planned while it is), siblings in order.
fn init_plans_in_order(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<ScalarSubqueryExpr>) {
    let (inner, _) = peel(plan);
    if let Some(s) = inner.downcast_ref::<ScalarSubqueryExec>() {
        for link in s.subqueries() {
            init_plans_in_order(&link.plan, out);
            out.push(subquery_value(s.results(), link));
        }
        return init_plans_in_order(s.input(), out);
    }
    for child in inner.children() {
        init_plans_in_order(child, out);
    }
}

/// The table a node scans and its output columns (table column numbers).
fn scanned_table(plan: &dyn ExecutionPlan) -> Option<(&TableDef, &[usize])> {
    if let Some(scan) = plan.downcast_ref::<HeapScanExec>() {
        return Some((&scan.table, &scan.projection));
    }
    if let Some(scan) = plan.downcast_ref::<BitmapHeapScanExec>() {
        return Some((&scan.table, &scan.projection));
    }
    if let Some(scan) = plan.downcast_ref::<IndexScanExec>() {
        return Some((&scan.table, &scan.projection));
    }
    None
}

/// The scans PostgreSQL's planner gives its physical target list (`use_physical_tlist`):
/// every column of the table in order, not only those the plan needs, which saves the scan
/// a projection. It does so where the node above takes the rows as they come: an
/// aggregate that groups by plain columns (or not at all), either side of a nested loop
/// or a merge join, a hash join's probe side. A Sort, a Hash, a Limit, a window, an
/// Append and the top of the plan want exactly their columns; a scan that computes an
/// expression for the node above, an Index Only Scan and a Bitmap Heap Scan that returns
/// no column keep their own.
fn physical_tlist_scans(root: &Arc<dyn ExecutionPlan>) -> HashSet<usize> {
    fn visit(plan: &Arc<dyn ExecutionPlan>, takes_any: bool, out: &mut HashSet<usize>) {
        let (inner, _) = peel(plan);
        if let Some(f) = inner.downcast_ref::<FilterExec>() {
            return visit(f.input(), takes_any, out);
        }
        if let Some(p) = inner.downcast_ref::<ProjectionExec>() {
            let schema = p.input().schema();
            let computes = (p.expr().iter()).any(|e| !is_plain_column(&e.expr, &schema));
            return visit(p.input(), takes_any && !computes, out);
        }
        if is_hidden(inner.as_ref()) {
            return visit(inner.children()[0], takes_any, out);
        }
        if let Some(s) = inner.downcast_ref::<ScalarSubqueryExec>() {
            visit(s.input(), takes_any, out);
            for link in s.subqueries() {
                visit(&link.plan, false, out);
            }
            return;
        }
        if let Some((_, projection)) = scanned_table(inner.as_ref()) {
            let keeps_own = match (inner.downcast_ref::<IndexScanExec>(), inner.as_ref()) {
                (Some(index), _) => index.is_index_only(),
                (None, scan) => scan.is::<BitmapHeapScanExec>() && projection.is_empty(),
            };
            if takes_any && !keeps_own {
                out.insert(address(inner.as_ref()));
            }
            return;
        }
        let children = join_sides(inner.as_ref());
        let sides: Vec<bool> = if let Some(agg) = inner.downcast_ref::<AggregateExec>() {
            let by_columns =
                (agg.group_expr().expr().iter()).all(|(e, _)| e.as_ref().is::<Column>());
            vec![by_columns]
        } else if inner.downcast_ref::<HashJoinExec>().is_some() {
            // Build side (a Hash), probe side.
            vec![false, true]
        } else if inner.downcast_ref::<NestedLoopJoinExec>().is_some()
            || inner.downcast_ref::<IndexNestedLoopExec>().is_some()
            || inner.downcast_ref::<CrossJoinExec>().is_some()
            || inner.downcast_ref::<SortMergeJoinExec>().is_some()
        {
            vec![true; children.len()]
        } else {
            Vec::new()
        };
        for (i, child) in children.into_iter().enumerate() {
            visit(child, sides.get(i).copied().unwrap_or(false), out);
        }
    }
    let mut out = HashSet::new();
    visit(root, false, &mut out);
    out
}

/// `base_1`, `base_2` …, the first that is not `taken`.
fn numbered(base: &str, taken: impl Fn(&str) -> bool) -> String {
    (1..)
        .map(|n| format!("{base}_{n}"))
        .find(|candidate| !taken(candidate))
        .expect("some number is free")
}

/// The conditions an index or bitmap heap scan applies itself.
fn scan_conditions(plan: &dyn ExecutionPlan) -> &[Arc<dyn PhysicalExpr>] {
    if let Some(scan) = plan.downcast_ref::<BitmapHeapScanExec>() {
        return scan.covered_quals();
    }
    if let Some(scan) = plan.downcast_ref::<IndexScanExec>() {
        return scan.covered_quals();
    }
    &[]
}

/// The planner's estimate of a scan node, when the planner built it. It includes the
/// node's filter (PostgreSQL's scan costs and rows do).
fn path_estimate(plan: &dyn ExecutionPlan) -> Option<PathEstimate> {
    if let Some(n) = plan.downcast_ref::<HeapScanExec>() {
        return n.estimate();
    }
    if let Some(n) = plan.downcast_ref::<BitmapHeapScanExec>() {
        return n.estimate();
    }
    if let Some(n) = plan.downcast_ref::<BitmapIndexScanExec>() {
        return n.estimate();
    }
    if let Some(n) = plan.downcast_ref::<BitmapCombineExec>() {
        return n.estimate();
    }
    if let Some(n) = plan.downcast_ref::<IndexScanExec>() {
        return n.estimate();
    }
    None
}

/// The planner's estimate as EXPLAIN's costs.
fn planner_estimate(plan: &dyn ExecutionPlan) -> Option<Costs> {
    path_estimate(plan).map(|e| Costs {
        startup: e.startup_cost,
        total: e.total_cost,
        rows: e.rows,
        width: i64::from(e.width),
    })
}

/// Did the planner choose the node although an `enable_*` setting disabled it?
fn planner_disabled(plan: &dyn ExecutionPlan) -> bool {
    path_estimate(plan).is_some_and(|e| e.disabled)
}

/// Not shown by EXPLAIN: nodes that only move, batch or project rows.
fn is_hidden(plan: &dyn ExecutionPlan) -> bool {
    matches!(
        plan.name(),
        "ProjectionExec"
            | "CoalesceBatchesExec"
            | "RepartitionExec"
            | "CoalescePartitionsExec"
            | "SortPreservingMergeExec"
            | "LocalLimitExec"
            | "CooperativeExec"
            | "Int4SeriesExec"
    ) && plan.children().len() == 1
}

/// The aggregate whose group and aggregate expressions apply to the input rows, and that
/// input: for a Final node, the Partial node below it (the pair is one PostgreSQL node).
fn aggregate_source(
    agg: &AggregateExec,
) -> (
    &AggregateExec,
    Option<&Arc<NodeStats>>,
    &Arc<dyn ExecutionPlan>,
) {
    if matches!(
        agg.mode(),
        AggregateMode::Final | AggregateMode::FinalPartitioned
    ) {
        let mut cur = agg.input();
        loop {
            let (inner, stats) = peel(cur);
            if let Some(partial) = inner.downcast_ref::<AggregateExec>() {
                if *partial.mode() == AggregateMode::Partial {
                    return (partial, stats, partial.input());
                }
                break;
            }
            if is_hidden(inner.as_ref()) {
                cur = inner.children()[0];
                continue;
            }
            break;
        }
    }
    (agg, None, agg.input())
}

/// The set-returning function a DataFusion lazy memory scan runs (`generate_series`,
/// `range`), if it is one.
fn series_function(plan: &dyn ExecutionPlan) -> Option<&'static str> {
    let scan = plan.downcast_ref::<LazyMemoryExec>()?;
    let [generator] = scan.generators().as_slice() else {
        return None;
    };
    let generator = generator.read();
    let any = generator.as_any();
    if let Some(s) = any.downcast_ref::<GenericSeriesState<i64>>() {
        return Some(s.name());
    }
    any.downcast_ref::<GenericSeriesState<TimestampValue>>()
        .map(|s| s.name())
}

/// The bounds of an integer series.
#[derive(Clone, Copy)]
struct IntegerSeries {
    start: i64,
    end: i64,
    step: i64,
    /// `range` stops before its end; `generate_series` includes it.
    exclusive: bool,
}

impl IntegerSeries {
    /// The rows it returns, as PostgreSQL's planner counts them: `(end - start) / step + 1`
    /// (none for a zero step, which fails when run).
    fn rows(self) -> f64 {
        if self.step == 0 {
            return 0.0;
        }
        let (start, end, step) = (self.start as f64, self.end as f64, self.step as f64);
        let end = if self.exclusive {
            end - step.signum()
        } else {
            end
        };
        (((end - start) / step).floor() + 1.0).max(0.0)
    }

    /// VERBOSE `Function Call:` (a step of 1 is not shown: PostgreSQL shows the step as the
    /// query wrote it, which the plan no longer knows).
    fn call(self, function: &str) -> String {
        match self.step {
            1 => format!("{function}({}, {})", self.start, self.end),
            step => format!("{function}({}, {}, {step})", self.start, self.end),
        }
    }
}

fn integer_series(plan: &dyn ExecutionPlan) -> Option<IntegerSeries> {
    let scan = plan.downcast_ref::<LazyMemoryExec>()?;
    let generator = scan.generators().first()?.read();
    let s = generator
        .as_any()
        .downcast_ref::<GenericSeriesState<i64>>()?;
    Some(IntegerSeries {
        start: *s.start(),
        end: *s.end(),
        step: *s.step(),
        exclusive: s.name() == "range",
    })
}

/// The temporary-file blocks and times of every operator in `plan`'s subtree.
fn subtree_temp(plan: &Arc<dyn ExecutionPlan>) -> iolab_stats::BufferUsage {
    let (inner, stats) = peel(plan);
    let mut sum = stats
        .map(|s| s.operator.snapshot().temp)
        .unwrap_or_default();
    for child in inner.children() {
        sum.add(&subtree_temp(child));
    }
    sum
}

/// How many of `sort`'s first keys its input's order already gives.
fn presorted_keys(sort: &SortExec) -> usize {
    let exprs: Vec<_> = sort.expr().iter().cloned().collect();
    let order = &sort.input().properties().eq_properties;
    (1..=exprs.len())
        .take_while(|&k| order.ordering_satisfy(exprs[..k].to_vec()).unwrap_or(false))
        .last()
        .unwrap_or(0)
}

/// The number of rows of a VALUES list (a DataFusion memory source).
fn values_rows(plan: &Arc<dyn ExecutionPlan>) -> Option<usize> {
    let ds = plan.downcast_ref::<DataSourceExec>()?;
    let mem = ds.data_source().downcast_ref::<MemorySourceConfig>()?;
    Some(
        mem.partitions()
            .iter()
            .flatten()
            .map(|b| b.num_rows())
            .sum(),
    )
}

/// The table column type behind output column `idx` of `plan`, when it is one.
fn base_column(plan: &Arc<dyn ExecutionPlan>, idx: usize) -> Option<PgType> {
    let (inner, _) = peel(plan);
    if let Some((table, projection)) = scanned_table(inner.as_ref()) {
        let c = projection.get(idx)?;
        return table.columns.get(*c).map(|c| c.ty);
    }
    if let Some(proj) = inner.downcast_ref::<ProjectionExec>() {
        let e = &proj.expr().get(idx)?.expr;
        let col = e
            .as_ref()
            .downcast_ref::<datafusion::physical_expr::expressions::Column>()?;
        return base_column(proj.input(), col.index());
    }
    if let Some(f) = inner.downcast_ref::<FilterExec>() {
        let i = f.projection().as_ref().map_or(idx, |p| p[idx]);
        return base_column(f.input(), i);
    }
    if let Some(j) = inner.downcast_ref::<HashJoinExec>() {
        let i = j.projection.as_ref().map_or(idx, |p| p[idx]);
        let left_n = j.left().schema().fields().len();
        return match j.join_type() {
            JoinType::RightSemi | JoinType::RightAnti => base_column(j.right(), i),
            _ if i < left_n => base_column(j.left(), i),
            _ => base_column(j.right(), i - left_n),
        };
    }
    if inner.is::<AggregateExec>() {
        return None;
    }
    let children = inner.children();
    if children.len() == 1 && children[0].schema().fields().len() == inner.schema().fields().len() {
        return base_column(children[0], idx);
    }
    None
}

/// PostgreSQL's join type of a DataFusion join. With `build_left`, DataFusion's left
/// input is PostgreSQL's inner side, so left and right swap.
fn pg_join_type(jt: &JoinType, build_left: bool) -> &'static str {
    let jt = if build_left { jt.swap() } else { *jt };
    match jt {
        JoinType::Inner => "Inner",
        JoinType::Left => "Left",
        JoinType::Right => "Right",
        JoinType::Full => "Full",
        JoinType::LeftSemi | JoinType::LeftMark => "Semi",
        JoinType::LeftAnti => "Anti",
        JoinType::RightSemi | JoinType::RightMark => "Right Semi",
        JoinType::RightAnti => "Right Anti",
    }
}

fn join_name(method: &str, jt: &str) -> String {
    if jt == "Inner" && method == "Nested Loop" {
        method.to_string()
    } else if jt == "Inner" {
        format!("{method} Join")
    } else {
        format!("{method} {jt} Join")
    }
}

/// The nodes EXPLAIN shows below `plan`, in the order of the query's relations: its
/// children, and a nested loop's inner scan in its join side's place.
fn join_sides(plan: &dyn ExecutionPlan) -> Vec<&Arc<dyn ExecutionPlan>> {
    match plan.downcast_ref::<IndexNestedLoopExec>() {
        Some(nested) => match nested.outer_side() {
            JoinSide::Left => vec![nested.outer(), nested.inner().0],
            _ => vec![nested.inner().0, nested.outer()],
        },
        None => plan.children(),
    }
}

fn and_list(mut items: Vec<String>) -> String {
    if items.len() == 1 {
        items.remove(0)
    } else {
        format!("({})", items.join(" AND "))
    }
}

fn outer(node: PlanNode) -> Child {
    Child {
        relationship: "Outer",
        node,
    }
}

fn inner_child(node: PlanNode) -> Child {
    Child {
        relationship: "Inner",
        node,
    }
}

/// Whether the scans of `plan` have finished publishing their counters: a scan stopped
/// early by a LIMIT ends on its own thread shortly after its consumer went away.
pub fn scans_done(plan: &Arc<dyn ExecutionPlan>) -> bool {
    let (inner, _) = peel(plan);
    if scanned_table(inner.as_ref()).is_some() && !metrics::ended(inner.as_ref()) {
        return false;
    }
    inner.children().into_iter().all(scans_done)
}

/// The expression that reads the value of subquery `link` (equal to the plan's own: the
/// same results and index).
fn subquery_value(
    results: &ScalarSubqueryResults,
    link: &ScalarSubqueryLink,
) -> ScalarSubqueryExpr {
    let field = link.plan.schema().field(0).clone();
    ScalarSubqueryExpr::new(
        field.data_type().clone(),
        field.is_nullable(),
        link.index,
        results.clone(),
    )
}
