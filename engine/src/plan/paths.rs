//! Choosing how to read one table: the candidate paths, their costs, the winner's plan.
//!
//! # Candidates
//!
//! * **Seq Scan**, always.
//! * For each usable index with conditions among the conjuncts ([`IndexCond::find`]): an
//!   **Index Scan**, and the index as a bitmap leaf. The Index Scan is an **Index Only
//!   Scan** when the query needs no column of the table but the index's (its output and
//!   every conjunct), the key type's stored values are the heap's (not float, whose index
//!   keeps one zero and one NaN) and `enable_indexonlyscan` is on; such an index is a
//!   candidate even with no condition on it (a scan of the whole index), as in PostgreSQL.
//! * For a scan a nested loop runs once per outer row (a conjunct `column = OuterParam`,
//!   `nested_loops`), only the Index Scans that take the outer value, if any index does:
//!   the nested loop can run no other path.
//! * For each conjunct that is an OR whose every arm has an index condition (the arm's
//!   conjuncts, each arm using its cheapest index): a **BitmapOr** of those leaves.
//! * The bitmap leaves and ORs are combined as PostgreSQL's `choose_bitmap_and` does: sort
//!   them by the cost of a Bitmap Heap Scan over each alone; from each one in turn, add
//!   the others in that order, keeping each that lowers the heap scan's cost and does not
//!   repeat a condition already used; the cheapest result (one leaf, or a **BitmapAnd**)
//!   is the **Bitmap Heap Scan** candidate.
//!
//! # Choice
//!
//! The cheapest total cost wins among the paths no `enable_* = off` setting disables
//! (`enable_seqscan`, `enable_indexscan` for index and index-only scans, `enable_bitmapscan` for
//! bitmap heap scans; a Bitmap Index Scan is never disabled, as in PostgreSQL). PostgreSQL
//! 18 compares the count of disabled nodes before the cost, so a disabled path is chosen
//! only when every path is disabled — then the cheapest of them, marked `disabled` in its
//! estimate.
//!
//! # Order
//!
//! When the query sorts the table's rows by columns (`ordered_scans` tells the scan, with
//! the LIMIT if any), an Index Scan of an index on those columns returns them in that
//! order already (an index's columns held to one value by its condition passed over:
//! `IndexCond::order_columns_given`): its whole-index scan becomes a candidate too (when
//! it gives the whole order, or the first keys with incremental sorts enabled), and the
//! costs compared
//! are PostgreSQL's for the two ways to the sorted rows: a path that gives the order
//! costs the share of its run it takes to return the LIMIT's rows (after its startup),
//! any other its whole cost plus the sort (`cost_sort`, bounded by the LIMIT; the sort of
//! the rows of equal first keys after an ordered path is left out). An Index
//! Scan chosen so declares its order, and DataFusion drops the sort above it. A
//! descending order is the index read backward, from the condition's upper bound (or the
//! last leaf) down.
//!
//! An Index Only Scan costs what the Index Scan would, less the heap pages the visibility
//! map marks all-visible (the share marked now, where PostgreSQL takes `relallvisible`
//! from the last VACUUM): `cost_index` with `allvisfrac`.
//!
//! Every path returns a superset of the rows the conjuncts accept and DataFusion's filter
//! above the scan decides, so the choice changes the work, never the answer.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use iolab_catalog::{IndexDef, PgResult, TableDef};

use crate::btree::key::KeyKind;
use crate::btree::BtreeIndex;
use crate::exec::bitmap_scan::{
    BitmapCombineExec, BitmapHeapScanExec, BitmapIndexScanExec, BitmapPlan, RecheckFactory,
    TidScan, TidScanDone,
};
use crate::exec::context::StatementContext;
use crate::exec::index_scan::IndexScanExec;
use crate::exec::scan::HeapScanExec;
use crate::heap::bitmap_heap::Recheck;
use crate::plan::cost::{self, BitmapCost, Cost, HeapVisits, IndexPartCost, IndexSize, TableSize};
use crate::plan::index_cond::{conjuncts, never_true, or_arms, usable_index, IndexCond, KeyTest};
use crate::plan::selectivity::{clamp_rows, clauselist_selectivity, num_distinct, RelStats};
use crate::plan::{PathEstimate, PlannerSettings, ScanOrder};
use crate::Database;

/// The width PostgreSQL gives the `ctid` column.
const CTID_WIDTH: i32 = 6;

/// The bound on the starting points `choose_bitmap_and` tries (PostgreSQL's is 100 too).
const MAX_BITMAP_AND_STARTS: usize = 100;

/// The planning of a table's scan again with more conjuncts (`plan::param_scans`,
/// `plan::nested_loops`), as a scan run `loops` times.
#[derive(Clone)]
pub struct Replan {
    /// The settings the scan was planned with (the statement's).
    pub planner: PlannerSettings,
    plan: ReplanFn,
}

type ReplanFn =
    Arc<dyn Fn(Vec<Arc<dyn PhysicalExpr>>, f64) -> PgResult<Arc<dyn ExecutionPlan>> + Send + Sync>;

impl Replan {
    pub fn new(
        planner: PlannerSettings,
        plan: impl Fn(Vec<Arc<dyn PhysicalExpr>>, f64) -> PgResult<Arc<dyn ExecutionPlan>>
            + Send
            + Sync
            + 'static,
    ) -> Replan {
        Replan {
            planner,
            plan: Arc::new(plan),
        }
    }

    /// The scan planned with `more` conjuncts, to run `loops` times.
    pub fn with(
        &self,
        more: Vec<Arc<dyn PhysicalExpr>>,
        loops: f64,
    ) -> PgResult<Arc<dyn ExecutionPlan>> {
        (self.plan)(more, loops)
    }
}

/// A scan to plan: the table, the columns it returns, the conjuncts DataFusion pushed down.
pub struct ScanRequest<'a> {
    pub db: &'a Arc<Database>,
    pub table: &'a TableDef,
    /// The table's columns as DataFusion sees them (with `ctid` when the statement names it).
    pub table_schema: SchemaRef,
    /// Table column numbers of the output.
    pub projection: Vec<usize>,
    /// The pushed-down conjuncts, over `table_schema`.
    pub quals: Vec<Arc<dyn PhysicalExpr>>,
    pub limit: Option<usize>,
    /// The order the rows are wanted in, when the query sorts them by one column.
    pub order: Option<ScanOrder>,
    /// Kept by a Seq Scan or an Index Scan, for conjuncts the planner could not see yet.
    pub replan: Option<Replan>,
    /// How many times the scan will run (a nested loop's inner side: once per outer row);
    /// its cost is one run's.
    pub loops: f64,
}

/// A usable index of the table.
#[derive(Debug)]
struct TableIndex {
    btree: BtreeIndex,
    size: IndexSize,
}

/// One index with conditions, costed.
#[derive(Clone, Debug)]
struct IndexPath {
    cond: IndexCond,
    index: Arc<TableIndex>,
    part: IndexPartCost,
}

/// The shape of a bitmap path: a leaf, or a combination of bitmap paths.
#[derive(Clone, Debug)]
enum BitmapTree {
    Index(Arc<IndexPath>),
    And(Vec<BitmapPath>),
    Or(Vec<BitmapPath>),
}

/// A bitmap tree, its cost (`cost_bitmap_tree_node`) and what it stands for.
#[derive(Clone, Debug)]
struct BitmapPath {
    tree: BitmapTree,
    cost: BitmapCost,
    /// The conjuncts the bitmap guarantees (its `Recheck Cond:`).
    covered: Vec<Arc<dyn PhysicalExpr>>,
}

#[derive(Debug)]
enum Access {
    Seq,
    /// An Index Scan, or with `only` an Index Only Scan.
    Index {
        path: Arc<IndexPath>,
        only: bool,
    },
    Bitmap(BitmapPath),
}

#[derive(Debug)]
struct Candidate {
    access: Access,
    cost: Cost,
    /// What the choice compares: the path's total cost, plus the sort of its rows when the
    /// query wants them in an order the path does not give, or only the share it reads
    /// before a LIMIT stops it when it gives that order.
    choice: f64,
    disabled: bool,
    /// The sort above it is disabled (`enable_sort = off`).
    sort_disabled: bool,
}

/// What the paths of one table share.
struct Rel<'a> {
    p: PlannerSettings,
    table: TableSize,
    stats: RelStats,
    /// Rows after every conjunct.
    rows: f64,
    quals: &'a [Arc<dyn PhysicalExpr>],
    /// The cost per row of all the conjuncts.
    qual_cost: f64,
    /// Runs of the scan (`ScanRequest::loops`).
    loops: f64,
}

impl Rel<'_> {
    fn bitmap_heap_cost(&self, bitmap: &BitmapCost) -> Cost {
        cost::bitmap_heap_scan(&self.p, &self.table, bitmap, self.qual_cost)
    }

    fn rows_of(&self, selectivity: f64) -> f64 {
        clamp_rows(selectivity * self.table.tuples)
    }
}

/// Plans the scan of `req.table` (see the module comment).
pub fn plan_scan(
    stmt: &StatementContext,
    req: ScanRequest<'_>,
) -> PgResult<Arc<dyn ExecutionPlan>> {
    let def = req.table;
    let blocks = req.db.table_blocks(def)?;
    let (pages, tuples) = cost::relation_size(def, blocks);
    let stats = RelStats::new(def, tuples, req.db.catalog.table_statistics(def.oid));
    let p = stmt.planner;
    let order = req.order.clone();
    // Whether a scan of `cond` gives the rows in the order: the whole of it, or its first
    // keys with incremental sorts enabled.
    let gives_order = |cond: &IndexCond, order: &ScanOrder| {
        let given = cond.order_columns_given(order);
        (given == order.columns.len() && order.whole) || (given > 0 && p.enable_incremental_sort)
    };
    let rel = Rel {
        p,
        table: TableSize { pages, tuples },
        rows: clamp_rows(tuples * clauselist_selectivity(&req.quals, &stats)),
        qual_cost: cost::qual_cost(&p, &req.quals),
        stats,
        quals: &req.quals,
        loops: req.loops,
    };
    let width = output_width(def, &rel.stats, &req.projection);
    // The table's columns the query needs: its output's and the conjuncts'.
    let mut needed = req.projection.clone();
    needed.extend(
        req.quals
            .iter()
            .flat_map(|q| collect_columns(q))
            .map(|c| c.index()),
    );
    // Every column needed is a key column (not a float: the index keeps one zero and one
    // NaN where the table may have several).
    let index_only = |index: &IndexDef| {
        let returns = |c: &usize| {
            (index.columns.iter().zip(&index.key_types))
                .any(|(k, &ty)| k == c && KeyKind::of(ty) != KeyKind::Float)
        };
        p.enable_indexonlyscan && needed.iter().all(returns)
    };
    // Counted only for an index-only path.
    let all_visible = || f64::from(req.db.vm.count(def.relfilenode, blocks)) / pages.max(1.0);

    // Without conditions, an order or an index holding all the query needs, no index helps
    // (and their meta pages need not be read).
    let indexes = if req.quals.is_empty()
        && order.is_none()
        && !req.db.catalog.indexes_of(def.oid).iter().any(index_only)
    {
        Vec::new()
    } else {
        table_indexes(stmt, &req, &rel)?
    };
    let index_paths: Vec<Arc<IndexPath>> = indexes
        .iter()
        .filter_map(|index| {
            let cond = IndexCond::find(&index.0, &def.columns, &req.quals)?;
            Some(Arc::new(costed(&rel, cond, &index.1)))
        })
        .collect();
    let seq = cost::seq_scan(&p, pages, tuples, rel.qual_cost);
    let mut candidates = vec![Candidate {
        access: Access::Seq,
        cost: seq,
        choice: seq.total,
        disabled: !p.enable_seqscan,
        sort_disabled: false,
    }];
    // The whole index, when no condition made it a candidate already: for an ORDER BY of
    // its column, or for an Index Only Scan.
    let conditioned = |def: &IndexDef| index_paths.iter().any(|i| i.cond.index.oid == def.oid);
    let whole_index_paths = indexes
        .iter()
        .filter(|(def, _)| {
            let ordered = order
                .as_ref()
                .is_some_and(|o| IndexCond::all(def).is_some_and(|cond| gives_order(&cond, o)));
            (ordered || index_only(def)) && !conditioned(def)
        })
        .filter_map(|(def, index)| Some(Arc::new(costed(&rel, IndexCond::all(def)?, index))));
    let index_paths_and_whole: Vec<Arc<IndexPath>> = index_paths
        .iter()
        .cloned()
        .chain(whole_index_paths)
        .collect();
    for path in &index_paths_and_whole {
        let unanswered: Vec<_> = req
            .quals
            .iter()
            .filter(|q| !path.cond.quals.iter().any(|c| Arc::ptr_eq(c, q)))
            .cloned()
            .collect();
        let correlation = rel
            .stats
            .column(path.cond.column)
            .and_then(|s| s.correlation)
            .unwrap_or(0.0) as f64;
        let only = index_only(&path.cond.index);
        let cost = cost::index_scan(
            &p,
            &rel.table,
            &path.index.size,
            &path.part,
            correlation,
            cost::qual_cost(&p, &unanswered),
            match only {
                true => HeapVisits::NotAllVisible {
                    all_visible: all_visible(),
                },
                false => HeapVisits::All,
            },
            rel.loops,
        );
        candidates.push(Candidate {
            access: Access::Index {
                path: path.clone(),
                only,
            },
            cost,
            choice: cost.total,
            disabled: !p.enable_indexscan,
            sort_disabled: false,
        });
    }
    if let Some(bitmap) = choose_bitmap(&rel, &index_paths, &indexes) {
        let cost = rel.bitmap_heap_cost(&bitmap.cost);
        candidates.push(Candidate {
            cost,
            choice: cost.total,
            access: Access::Bitmap(bitmap),
            disabled: !p.enable_bitmapscan,
            sort_disabled: false,
        });
    }
    if let Some(order) = &order {
        let sort = cost::sort(&p, rel.rows, width as i64, order.fetch.map(|f| f as f64));
        for c in &mut candidates {
            let in_order =
                matches!(&c.access, Access::Index { path, .. } if gives_order(&path.cond, order));
            if in_order {
                c.choice = order.cost_until_fetched(c.cost.startup, c.cost.total, rel.rows);
            } else {
                c.choice = c.cost.total + sort.total;
                c.sort_disabled = !p.enable_sort;
            }
        }
    }
    // A scan for a nested loop's outer value (`nested_loops`) can run only as an Index
    // Scan taking it: the other paths are not candidates, unless none takes it (then the
    // nested loop planner turns the plan down).
    let takes_outer_value = |c: &Candidate| matches!(&c.access, Access::Index { path, .. } if path.cond.takes_outer_value());
    if candidates.iter().any(takes_outer_value) {
        candidates.retain(takes_outer_value);
    }
    // PostgreSQL 18 compares the count of disabled nodes first: the scan's, and a sort's.
    let disabled = |c: &Candidate| u8::from(c.disabled) + u8::from(c.sort_disabled);
    let mut best = 0;
    for (i, c) in candidates.iter().enumerate() {
        let b = &candidates[best];
        if (disabled(c), c.choice) < (disabled(b), b.choice) {
            best = i;
        }
    }
    for c in &candidates {
        tracing::debug!(
            "planner: {}: {} cost={:.2}..{:.2} rows={}{}",
            def.name,
            describe(&c.access),
            c.cost.startup,
            c.cost.total,
            rel.rows,
            if c.disabled { " (disabled)" } else { "" }
        );
    }
    let chosen = candidates.swap_remove(best);
    let estimate = PathEstimate {
        startup_cost: chosen.cost.startup,
        total_cost: chosen.cost.total,
        rows: rel.rows,
        width,
        disabled: chosen.disabled,
    };
    tracing::debug!("planner: {}: chose {}", def.name, describe(&chosen.access));
    Ok(match chosen.access {
        Access::Seq => Arc::new(
            HeapScanExec::new(
                req.db.clone(),
                def.clone(),
                req.table_schema,
                req.projection,
                req.limit,
            )
            .with_estimate(estimate)
            .with_replan(req.replan),
        ),
        Access::Index { path, only } => {
            let order = order.filter(|o| gives_order(&path.cond, o));
            // With no condition but the index's, the first rows are the query's rows.
            let answered = req
                .quals
                .iter()
                .all(|q| path.cond.quals.iter().any(|c| Arc::ptr_eq(c, q)));
            let scan = IndexScanExec::new(
                req.db.clone(),
                def.clone(),
                req.table_schema,
                req.projection,
                path.cond.clone(),
            )
            .in_order(order, answered)
            .with_estimate(estimate)
            .with_replan(req.replan);
            Arc::new(if only { scan.index_only() } else { scan })
        }
        Access::Bitmap(bitmap) => {
            let test = key_test(&bitmap);
            let recheck: RecheckFactory = Arc::new(move || {
                let test = test.clone();
                Box::new(move |layout: &_, tuple: &[u8]| test.matches(layout, tuple)) as Recheck
            });
            Arc::new(
                BitmapHeapScanExec::new(
                    req.db.clone(),
                    def.clone(),
                    req.table_schema,
                    req.projection,
                    bitmap_plan(&rel, &bitmap),
                    p.work_mem_bytes as usize,
                )
                .with_recheck(bitmap.covered, recheck)
                .with_limit(req.limit)
                .with_estimate(estimate),
            )
        }
    })
}

/// `Seq Scan`, `Index Scan using i`, `Bitmap Heap Scan (And(i, j))` for the debug log.
fn describe(access: &Access) -> String {
    fn tree(t: &BitmapTree) -> String {
        let list = |ts: &[BitmapPath]| {
            ts.iter()
                .map(|b| tree(&b.tree))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match t {
            BitmapTree::Index(i) => i.cond.index.name.clone(),
            BitmapTree::And(ts) => format!("And({})", list(ts)),
            BitmapTree::Or(ts) => format!("Or({})", list(ts)),
        }
    }
    match access {
        Access::Seq => "Seq Scan".into(),
        Access::Index { path, only } => {
            let only = if *only { " Only" } else { "" };
            format!("Index{only} Scan using {}", path.cond.index.name)
        }
        Access::Bitmap(b) => format!("Bitmap Heap Scan ({})", tree(&b.tree)),
    }
}

/// The width of the output rows: each column's `avg_width` from `pg_stats`, or its type's
/// assumed width.
fn output_width(def: &TableDef, stats: &RelStats, projection: &[usize]) -> i32 {
    projection
        .iter()
        .map(|&c| match def.columns.get(c) {
            None => CTID_WIDTH,
            Some(col) => stats
                .column(c)
                .map(|s| s.avg_width)
                .unwrap_or(cost::column_width(&col.ty) as i32),
        })
        .sum()
}

/// The planner's view of an index's size (the meta page read for the tree's height, the
/// first time).
fn index_size(btree: &BtreeIndex, rel: &Rel<'_>, stmt: &StatementContext) -> PgResult<IndexSize> {
    let mut acct = stmt.new_account();
    let height = btree.planning_height(&mut acct)?;
    stmt.planning_usage.lock().add(&acct.usage);
    acct.flush();
    Ok(IndexSize {
        pages: btree.nblocks() as f64,
        tuples: rel.table.tuples,
        height,
    })
}

/// The table's usable indexes, each with its size.
fn table_indexes(
    stmt: &StatementContext,
    req: &ScanRequest<'_>,
    rel: &Rel<'_>,
) -> PgResult<Vec<(IndexDef, Arc<TableIndex>)>> {
    let mut indexes = Vec::new();
    for def in req.db.catalog.indexes_of(req.table.oid) {
        if !usable_index(&def) {
            continue;
        }
        let btree = BtreeIndex::open(req.db, &def)?;
        let size = index_size(&btree, rel, stmt)?;
        indexes.push((def, Arc::new(TableIndex { btree, size })));
    }
    Ok(indexes)
}

/// An index path for `cond` on `index`, costed.
fn costed(rel: &Rel<'_>, cond: IndexCond, index: &Arc<TableIndex>) -> IndexPath {
    let selectivity = clauselist_selectivity(&cond.quals, &rel.stats);
    // A skip scan descends once per value of the first column within its conditions.
    let searches = match cond.skips() {
        true => {
            let first = cond.first_column_quals();
            let share = clauselist_selectivity(&first, &rel.stats);
            (num_distinct(&rel.stats, cond.column) * share)
                .ceil()
                .max(1.0)
        }
        // One descent per value of a list (`= ANY`).
        false => cond.list_searches().map_or(1.0, |n| n.max(1) as f64),
    };
    let part = cost::btree_index_part_searching(
        &rel.p,
        &index.size,
        selectivity,
        cond.quals.len(),
        searches,
        rel.loops,
    );
    IndexPath {
        cond,
        index: index.clone(),
        part,
    }
}

/// The Bitmap Heap Scan candidate (see the module comment), if any index helps.
fn choose_bitmap(
    rel: &Rel<'_>,
    index_paths: &[Arc<IndexPath>],
    indexes: &[(IndexDef, Arc<TableIndex>)],
) -> Option<BitmapPath> {
    let leaf = |path: &Arc<IndexPath>| BitmapPath {
        tree: BitmapTree::Index(path.clone()),
        cost: cost::bitmap_index(&rel.p, &path.part, rel.rows),
        covered: path.cond.quals.clone(),
    };
    let mut options: Vec<BitmapPath> = index_paths.iter().map(leaf).collect();
    for qual in rel.quals {
        if let Some(or) = bitmap_or(rel, qual, indexes) {
            options.push(or);
        }
    }
    if options.len() <= 1 {
        return options.pop();
    }
    let heap_cost = |b: &BitmapPath| rel.bitmap_heap_cost(&b.cost).total;
    options.sort_by(|a, b| heap_cost(a).total_cmp(&heap_cost(b)));
    let mut best: Option<(f64, BitmapPath)> = None;
    for start in 0..options.len().min(MAX_BITMAP_AND_STARTS) {
        let mut chosen = vec![options[start].clone()];
        let mut so_far = heap_cost(&options[start]);
        for (j, other) in options.iter().enumerate() {
            let repeats = chosen
                .iter()
                .flat_map(|c| &c.covered)
                .any(|q| other.covered.iter().any(|o| Arc::ptr_eq(o, q)));
            if j == start || repeats {
                continue;
            }
            let mut with = chosen.clone();
            with.push(other.clone());
            let combined = and_of(rel, with.clone());
            let cost = heap_cost(&combined);
            if cost < so_far {
                chosen = with;
                so_far = cost;
            }
        }
        if best.as_ref().is_none_or(|(c, _)| so_far < *c) {
            best = Some((so_far, and_of(rel, chosen)));
        }
    }
    best.map(|(_, b)| b)
}

/// One bitmap path of `parts`: the part itself, or their BitmapAnd.
fn and_of(rel: &Rel<'_>, mut parts: Vec<BitmapPath>) -> BitmapPath {
    if parts.len() == 1 {
        return parts.pop().expect("one part");
    }
    let costs: Vec<BitmapCost> = parts.iter().map(|b| b.cost).collect();
    BitmapPath {
        cost: cost::bitmap_and(&rel.p, &costs),
        covered: parts.iter().flat_map(|b| b.covered.clone()).collect(),
        tree: BitmapTree::And(parts),
    }
}

/// A BitmapOr for `qual` if it is an OR whose every arm has an index condition. An arm's
/// index condition may take the query's other conjuncts too (`(a = 1 OR a = 2) AND b = 3`
/// on an index on `(a, b)`: `(a = 1) AND (b = 3)`), as PostgreSQL's arms do, but must
/// take a clause of the arm.
fn bitmap_or(
    rel: &Rel<'_>,
    qual: &Arc<dyn PhysicalExpr>,
    indexes: &[(IndexDef, Arc<TableIndex>)],
) -> Option<BitmapPath> {
    let arms = or_arms(qual)?;
    let others: Vec<_> = (rel.quals.iter())
        .filter(|q| !Arc::ptr_eq(q, qual))
        .cloned()
        .collect();
    let mut leaves = Vec::new();
    // An arm that is never true (`a IN (3, NULL)` becomes `a = 3 OR NULL`) selects no row.
    for arm in arms.iter().filter(|arm| !never_true(arm)) {
        let arm_quals = conjuncts(arm);
        let with_others: Vec<_> = arm_quals.iter().chain(&others).cloned().collect();
        let takes_the_arm = |cond: &IndexCond| {
            (cond.quals.iter()).any(|q| arm_quals.iter().any(|a| Arc::ptr_eq(a, q)))
        };
        let leaf = indexes
            .iter()
            .filter_map(|(index, table_index)| {
                let cond = IndexCond::find(index, &rel.stats.columns, &with_others)
                    .filter(takes_the_arm)?;
                let path = costed(rel, cond, table_index);
                Some(BitmapPath {
                    cost: cost::bitmap_index(&rel.p, &path.part, rel.rows),
                    covered: path.cond.quals.clone(),
                    tree: BitmapTree::Index(Arc::new(path)),
                })
            })
            .min_by(|a, b| a.cost.cost.total_cmp(&b.cost.cost))?;
        leaves.push(leaf);
    }
    if leaves.is_empty() {
        return None;
    }
    let costs: Vec<BitmapCost> = leaves.iter().map(|l| l.cost).collect();
    Some(BitmapPath {
        cost: cost::bitmap_or(&rel.p, &costs),
        tree: BitmapTree::Or(leaves),
        covered: vec![qual.clone()],
    })
}

/// The recheck of a bitmap path's conditions.
fn key_test(bitmap: &BitmapPath) -> KeyTest {
    match &bitmap.tree {
        BitmapTree::Index(path) => path.cond.key_test(),
        BitmapTree::And(parts) => KeyTest::All(parts.iter().map(key_test).collect()),
        BitmapTree::Or(parts) => KeyTest::Any(parts.iter().map(key_test).collect()),
    }
}

/// The execution nodes of a bitmap path, each with its estimate.
fn bitmap_plan(rel: &Rel<'_>, bitmap: &BitmapPath) -> Arc<dyn BitmapPlan> {
    let estimate = |startup: f64| PathEstimate {
        startup_cost: startup,
        total_cost: bitmap.cost.cost,
        rows: rel.rows_of(bitmap.cost.selectivity),
        width: 0,
        disabled: false,
    };
    match &bitmap.tree {
        BitmapTree::Index(path) => {
            let cond = path.cond.clone();
            let btree = path.index.btree.clone();
            let scan: TidScan = Arc::new(move |stmt, acct, bitmap| {
                let mut tids = cond
                    .scan(&btree, &stmt.params, acct)?
                    .read_ahead(stmt.db.aio.clone(), stmt.stream_config(false, false))?;
                bitmap.try_add_tuples(&mut tids, false)?;
                Ok(TidScanDone {
                    stream: tids.finish_read_ahead(),
                    searches: tids.searches(),
                })
            });
            // PostgreSQL prints a Bitmap Index Scan's cost without the bitmap's share.
            let node =
                BitmapIndexScanExec::new(&path.cond.index.name, path.cond.quals.clone(), scan);
            Arc::new(node.with_estimate(PathEstimate {
                total_cost: path.part.total,
                ..estimate(0.0)
            }))
        }
        BitmapTree::And(parts) => {
            let children = parts.iter().map(|b| bitmap_plan(rel, b)).collect();
            Arc::new(BitmapCombineExec::and(children).with_estimate(estimate(bitmap.cost.cost)))
        }
        BitmapTree::Or(parts) => {
            let children = parts.iter().map(|b| bitmap_plan(rel, b)).collect();
            Arc::new(BitmapCombineExec::or(children).with_estimate(estimate(bitmap.cost.cost)))
        }
    }
}

#[cfg(test)]
mod tests {
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::BinaryExpr;
    use iolab_settings::IoMethod;

    use super::*;
    use crate::exec::bitmap_scan::tests::{a_is, expected, index_on_a, metric, run, task_with};
    use crate::exec::table::table_schema;
    use crate::heap::bitmap_heap::tests::{eic_table, EicTable};

    const NROWS: u64 = 30_000;

    fn plan(
        t: &EicTable,
        task: &Arc<datafusion::execution::TaskContext>,
        quals: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Arc<dyn ExecutionPlan> {
        let stmt = StatementContext::from_task(task).unwrap();
        plan_scan(
            &stmt,
            ScanRequest {
                db: &t.db,
                table: &t.def,
                table_schema: table_schema(&t.def, false),
                projection: vec![0, 1],
                quals,
                limit: None,
                order: None,
                replan: None,
                loops: 1.0,
            },
        )
        .unwrap()
    }

    /// Only bitmap scans allowed, 1kB of work_mem: the bitmap goes lossy, its pages are
    /// rechecked by the index conditions, and the answer is the table's.
    #[tokio::test]
    async fn a_lossy_bitmap_rechecks_the_index_conditions() {
        let t = eic_table("plan-lossy", NROWS, IoMethod::Sync);
        let bitmap_only = PlannerSettings {
            enable_seqscan: false,
            enable_indexscan: false,
            work_mem_bytes: 1024.0,
            ..Default::default()
        };
        let task = task_with(&t, 16, bitmap_only);
        index_on_a(&t, &task);
        let below = |a: i32| a < 140;
        let p = plan(&t, &task, vec![a_is(Operator::Lt, 140)]);
        let heap = p
            .downcast_ref::<BitmapHeapScanExec>()
            .expect("a Bitmap Heap Scan");
        assert!(!heap.estimate().unwrap().disabled);
        assert_eq!(heap.covered_quals().len(), 1);
        assert_eq!(run(p.clone(), task.clone()).await, expected(NROWS, below));
        assert!(metric(p.as_ref(), "lossy_heap_blocks") > 0);
        assert!(metric(p.as_ref(), "rows_removed_by_index_recheck") > 0);

        // An OR of two ranges of the one index: a BitmapOr, rechecked as an OR.
        let either = |a: i32| !(50..9950).contains(&a);
        let or: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
            a_is(Operator::Lt, 50),
            Operator::Or,
            a_is(Operator::GtEq, 9950),
        ));
        let p = plan(&t, &task, vec![or]);
        let heap = p
            .downcast_ref::<BitmapHeapScanExec>()
            .expect("a Bitmap Heap Scan");
        let combine = heap.children()[0]
            .downcast_ref::<BitmapCombineExec>()
            .expect("a BitmapOr");
        assert_eq!(combine.node_name(), "BitmapOr");
        assert_eq!(run(p.clone(), task.clone()).await, expected(NROWS, either));
        assert!(metric(p.as_ref(), "lossy_heap_blocks") > 0);
    }

    /// Every path disabled: the cheapest still runs, marked disabled; with a condition no
    /// index answers, the Seq Scan.
    #[tokio::test]
    async fn all_disabled_takes_the_cheapest() {
        let t = eic_table("plan-disabled", NROWS, IoMethod::Sync);
        let none = PlannerSettings {
            enable_seqscan: false,
            enable_indexscan: false,
            enable_bitmapscan: false,
            ..Default::default()
        };
        let task = task_with(&t, 16, none);
        index_on_a(&t, &task);
        let p = plan(&t, &task, vec![a_is(Operator::Eq, 140)]);
        let estimate = p
            .downcast_ref::<IndexScanExec>()
            .map(|s| s.estimate())
            .or_else(|| p.downcast_ref::<BitmapHeapScanExec>().map(|s| s.estimate()))
            .expect("an index path for a = 140")
            .unwrap();
        assert!(estimate.disabled);
        // Never analyzed: a = const is 1/200 of the rows.
        let (_, tuples) = cost::relation_size(&t.def, t.db.table_blocks(&t.def).unwrap());
        assert_eq!(estimate.rows, clamp_rows(tuples / 200.0));
        let seq = plan(&t, &task, vec![]);
        let seq = seq.downcast_ref::<HeapScanExec>().expect("a Seq Scan");
        assert!(seq.estimate().unwrap().disabled);
    }

    /// A lookup through an index is cheap enough for one partition; the Seq Scan of the
    /// whole table as its cost says (cheap here, dear with a dearer cpu_tuple_cost); a plan
    /// with a leaf iolab did not estimate is not.
    #[tokio::test]
    async fn cheap_plans_are_told_apart() {
        use crate::plan::partitions::{is_cheap, PARALLEL_SETUP_COST};
        use datafusion::datasource::memory::MemorySourceConfig;
        use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
        use datafusion::physical_plan::union::UnionExec;

        let t = eic_table("plan-cheap", NROWS, IoMethod::Sync);
        let task = task_with(&t, 16, PlannerSettings::default());
        index_on_a(&t, &task);
        let lookup = plan(&t, &task, vec![a_is(Operator::Eq, 140)]);
        assert!(
            lookup.downcast_ref::<HeapScanExec>().is_none(),
            "an index path"
        );
        assert!(is_cheap(lookup.as_ref()));
        assert!(is_cheap(&CoalescePartitionsExec::new(lookup.clone())));
        let seq_cost = |task| {
            let seq = plan(&t, task, vec![]);
            let cost = seq
                .downcast_ref::<HeapScanExec>()
                .unwrap()
                .estimate()
                .unwrap()
                .total_cost;
            (is_cheap(seq.as_ref()), cost)
        };
        let (cheap, cost) = seq_cost(&task);
        assert!(cheap && cost < PARALLEL_SETUP_COST, "{cost}");
        let dear = PlannerSettings {
            cpu_tuple_cost: 1.0,
            ..Default::default()
        };
        let (cheap, cost) = seq_cost(&task_with(&t, 16, dear));
        assert!(!cheap && cost >= PARALLEL_SETUP_COST, "{cost}");
        let memory = MemorySourceConfig::try_new_exec(&[vec![]], lookup.schema(), None).unwrap();
        let union = UnionExec::try_new(vec![lookup, memory]).unwrap();
        assert!(!is_cheap(union.as_ref()));
    }
}
