//! The cost model: PostgreSQL 18's `costsize.c` (and `btcostestimate`) for the scans iolab
//! can run, in PostgreSQL's units — one sequential page read costs `seq_page_cost` (1.0),
//! a random one `random_page_cost` (4.0), handling a row `cpu_tuple_cost` (0.01), an index
//! entry `cpu_index_tuple_cost` (0.005), an operator `cpu_operator_cost` (0.0025).
//!
//! # Table size
//!
//! `pages` is the table file's current block count; `tuples` is `reltuples / relpages ×
//! pages` once ANALYZE or VACUUM has counted the table, else the rows that fit the pages at
//! the columns' assumed widths (a never-vacuumed table of under 10 pages counts as 10).
//!
//! # Seq Scan (`cost_seqscan`)
//!
//! `seq_page_cost × pages + (cpu_tuple_cost + quals) × tuples`, where `quals` is the cost
//! of evaluating the WHERE clause on one row (`cpu_operator_cost` per operator).
//!
//! # Index Scan (`cost_index` with `btcostestimate`)
//!
//! The index part (`genericcostestimate`): the entries read, `N = sel × tuples`, lie on
//! `ceil(N × index_pages / index_tuples)` leaf pages, each a random read; every entry costs
//! `cpu_index_tuple_cost + cpu_operator_cost × #index quals`. The descent adds
//! `ceil(log2(index_tuples)) × cpu_operator_cost` of comparisons and `(height + 1) × 50 ×
//! cpu_operator_cost` for the pages passed; the descent is the startup cost.
//!
//! The heap part: the rows fetched, `sel × tuples`, are read by TID in index order. If the
//! table's order is unrelated to the key's, the pages read are given by Mackert and
//! Lohman's formula for `N` fetches from `T` pages through a cache of `b` pages
//! (`index_pages_fetched`, `b` from `effective_cache_size` prorated to the table's share):
//!
//! ```text
//!   T ≤ b:  min(2TN / (2T + N), T)
//!   T > b:  2TN / (2T + N)            while N ≤ 2Tb / (2T − b)
//!           b + (N − 2Tb/(2T − b)) × (T − b) / T   beyond
//! ```
//!
//! each a random read (`max_IO`). If it is perfectly correlated the rows lie on
//! `ceil(sel × pages)` consecutive pages: one random read, then sequential ones (`min_IO`).
//! The estimate is `max_IO + correlation² × (min_IO − max_IO)`. Each row fetched costs
//! `cpu_tuple_cost` plus the quals the index does not answer.
//!
//! An index scan repeated `loops` times (the inner side of a nested loop, one scan per outer
//! row) finds pages that earlier scans read still in the cache: its leaf pages and heap
//! pages (both `max_IO`'s and `min_IO`'s) are counted as Mackert and Lohman's pages for
//! `loops` times the fetches, divided by `loops` — one scan's share (PostgreSQL's
//! `loop_count`).
//!
//! # Bitmap Heap Scan (`cost_bitmap_heap_scan`)
//!
//! Below it, the bitmap tree (`cost_bitmap_tree_node`): a Bitmap Index Scan costs its index
//! part (as above) plus `0.1 × cpu_operator_cost` per row for the bitmap; a BitmapAnd is
//! the sum of its children plus `100 × cpu_operator_cost` per child after the first, with
//! the product of their selectivities; a BitmapOr the sum, `100 × cpu_operator_cost` per
//! non-index child after the first, and the sum of the selectivities (at most 1).
//!
//! The heap pages: the bitmap visits each page once in block order, so the pages fetched
//! are `min(2TN / (2T + N), T)` (Mackert–Lohman without re-reads), each costing between
//! `random_page_cost` and `seq_page_cost`: `random − (random − seq) × √(pages / T)`
//! (a single page costs `random_page_cost`). If the bitmap cannot hold one entry per page
//! in `work_mem`, `max(0, pages − entries / 2)` pages are lossy and all their rows are
//! rechecked, which raises the rows handled. Every row handled costs `cpu_tuple_cost` plus
//! all the quals (the recheck and the filter). The bitmap tree is the startup cost.

use std::sync::Arc;

use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CaseExpr, CastExpr, InListExpr, LikeExpr, TryCastExpr,
};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use iolab_catalog::{PgType, TableDef};

use crate::bitmap::TidBitmap;
use crate::plan::selectivity::clamp_rows;
use crate::plan::PlannerSettings;

const BLCKSZ: i64 = 8192;

/// `DEFAULT_PAGE_CPU_MULTIPLIER`: the CPU cost of passing one index page, in operators.
const PAGE_CPU_MULTIPLIER: f64 = 50.0;

/// A path's cost: before the first row, and for all of them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Cost {
    pub startup: f64,
    pub total: f64,
}

/// (pages, tuples) the planner assumes for a table whose file has `file_blocks` blocks
/// (see the module comment).
pub fn relation_size(def: &TableDef, file_blocks: u32) -> (f64, f64) {
    let mut pages = file_blocks as f64;
    if pages < 10.0 && def.reltuples < 0.0 {
        pages = 10.0; // never vacuumed: assume it will grow
    }
    if pages == 0.0 {
        return (0.0, 0.0);
    }
    let density = if def.reltuples >= 0.0 && def.relpages > 0 {
        def.reltuples / def.relpages as f64
    } else {
        // Page header 24 bytes; per tuple a 24-byte header (MAXALIGNed) and a 4-byte line
        // pointer. Integer division, as PostgreSQL does.
        let width: i64 = def.columns.iter().map(|c| column_width(&c.ty)).sum();
        let tuple_width = width + 24 + 4;
        clamp_rows(((BLCKSZ - 24) / tuple_width) as f64)
    };
    (pages, (density * pages).round())
}

/// `get_typavgwidth`: the average width PostgreSQL assumes for a column of a type.
pub fn column_width(ty: &PgType) -> i64 {
    let bounded = |max: i64| {
        if max <= 32 {
            max
        } else if max < 1000 {
            32 + (max - 32) / 2
        } else {
            32 + (1000 - 32) / 2
        }
    };
    match ty {
        PgType::Bool => 1,
        PgType::Int2 => 2,
        PgType::Int4 | PgType::Float4 | PgType::Date => 4,
        PgType::Int8 | PgType::Float8 | PgType::Timestamp | PgType::Timestamptz => 8,
        PgType::Interval => 16,
        PgType::Numeric { precision, .. } if !ty.is_unconstrained_numeric() => {
            // NUMERIC_HDRSZ + base-10000 digits of 2 bytes
            bounded(8 + ((*precision as i64 + 6) / 4) * 2)
        }
        PgType::Varchar(Some(n)) => bounded(*n as i64 * 4 + 4),
        PgType::Bpchar(n) => *n as i64 * 4 + 4,
        PgType::Numeric { .. } | PgType::Text | PgType::Varchar(None) => 32,
    }
}

/// `cost_qual_eval` per row: one `cpu_operator_cost` per operator or function call of
/// `quals` (AND, OR, NOT and IS NULL are free; `IN (list)` costs half an operator per
/// element).
pub fn qual_cost(p: &PlannerSettings, quals: &[Arc<dyn PhysicalExpr>]) -> f64 {
    p.cpu_operator_cost * quals.iter().map(operators).sum::<f64>()
}

/// The operators `cost_qual_eval` counts in `e` (a generic plan's `$n` costs nothing, as
/// PostgreSQL's `Param`).
pub fn operators(e: &Arc<dyn PhysicalExpr>) -> f64 {
    if crate::plan::statement_params::marker_of(e).is_some() {
        return 0.0;
    }
    let e = e.as_ref();
    let children =
        |items: &[&Arc<dyn PhysicalExpr>]| items.iter().map(|c| operators(c)).sum::<f64>();
    if let Some(b) = e.downcast_ref::<BinaryExpr>() {
        let own = if matches!(b.op(), Operator::And | Operator::Or) {
            0.0
        } else {
            1.0
        };
        return own + children(&[b.left(), b.right()]);
    }
    if let Some(l) = e.downcast_ref::<LikeExpr>() {
        return 1.0 + children(&[l.expr(), l.pattern()]);
    }
    if let Some(i) = e.downcast_ref::<InListExpr>() {
        return 0.5 * i.list().len() as f64 + operators(i.expr());
    }
    if let Some(c) = e.downcast_ref::<CastExpr>() {
        return 1.0 + operators(c.expr());
    }
    if let Some(c) = e.downcast_ref::<TryCastExpr>() {
        return 1.0 + operators(c.expr());
    }
    if let Some(f) = e.downcast_ref::<ScalarFunctionExpr>() {
        return 1.0 + f.args().iter().map(operators).sum::<f64>();
    }
    if let Some(c) = e.downcast_ref::<CaseExpr>() {
        let mut sum: f64 = c
            .when_then_expr()
            .iter()
            .map(|(w, t)| operators(w) + operators(t))
            .sum();
        sum += c.expr().map(operators).unwrap_or(0.0);
        sum += c.else_expr().map(operators).unwrap_or(0.0);
        return sum;
    }
    e.children().into_iter().map(operators).sum()
}

/// `cost_seqscan`: `quals` is the filter's cost per row.
pub fn seq_scan(p: &PlannerSettings, pages: f64, tuples: f64, quals: f64) -> Cost {
    Cost {
        startup: 0.0,
        total: p.seq_page_cost * pages + (p.cpu_tuple_cost + quals) * tuples,
    }
}

/// What the planner knows of a B-tree index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexSize {
    /// Blocks of the index file (meta page included).
    pub pages: f64,
    /// Entries: the table's tuples (iolab's indexes are never partial).
    pub tuples: f64,
    /// Levels above the leaves (0 when the root is a leaf).
    pub height: u32,
}

/// The index part of an index path (`amcostestimate`'s results).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexPartCost {
    pub startup: f64,
    pub total: f64,
    /// The fraction of the table's rows the index conditions select.
    pub selectivity: f64,
}

/// `btcostestimate` (through `genericcostestimate`) for `nquals` index conditions on the
/// leading column selecting `selectivity` of the table (see the module comment).
pub fn btree_index_part(
    p: &PlannerSettings,
    index: &IndexSize,
    selectivity: f64,
    nquals: usize,
) -> IndexPartCost {
    btree_index_part_searching(p, index, selectivity, nquals, 1.0, 1.0)
}

/// [`btree_index_part`] for a scan that descends the tree `searches` times (a skip scan:
/// once per value of the first column it passes, PostgreSQL 18's `num_sa_scans`): each
/// descent costs its comparisons and pages, and reads a leaf beyond those its entries fill.
/// `loops`: the scan runs that many times (module comment); the cost is one run's.
pub fn btree_index_part_searching(
    p: &PlannerSettings,
    index: &IndexSize,
    selectivity: f64,
    nquals: usize,
    searches: f64,
    loops: f64,
) -> IndexPartCost {
    assert!(searches >= 1.0, "a scan descends at least once");
    assert!(loops >= 1.0, "a scan runs at least once");
    let entries = (selectivity * index.tuples)
        .round()
        .clamp(1.0, index.tuples.max(1.0));
    let leaf_pages = if index.pages > 1.0 && index.tuples > 1.0 {
        ((entries * index.pages / index.tuples).ceil() + searches - 1.0).min(index.pages)
    } else {
        1.0
    };
    let leaf_pages = match loops > 1.0 {
        true => index_pages_fetched(p, leaf_pages * loops, index.pages, index.pages) / loops,
        false => leaf_pages,
    };
    let mut startup = 0.0;
    let mut total = leaf_pages * p.random_page_cost
        + entries * (p.cpu_index_tuple_cost + p.cpu_operator_cost * nquals as f64);
    let mut descend = |cost: f64| {
        startup += cost;
        total += cost * searches;
    };
    if index.tuples > 1.0 {
        descend(index.tuples.log2().ceil() * p.cpu_operator_cost);
    }
    descend((index.height + 1) as f64 * PAGE_CPU_MULTIPLIER * p.cpu_operator_cost);
    IndexPartCost {
        startup,
        total,
        selectivity,
    }
}

/// `index_pages_fetched`: heap pages read by `tuples_fetched` fetches from a table of
/// `pages` pages (Mackert and Lohman, see the module comment). `total_pages` is the
/// pages of the query's tables and this index, among which `effective_cache_size` is
/// shared.
pub fn index_pages_fetched(
    p: &PlannerSettings,
    tuples_fetched: f64,
    pages: f64,
    total_pages: f64,
) -> f64 {
    let t = pages.max(1.0);
    let n = tuples_fetched;
    let b = p.effective_cache_size * t / total_pages.max(1.0);
    let b = if b <= 1.0 { 1.0 } else { b.ceil() };
    if t <= b {
        let fetched = 2.0 * t * n / (2.0 * t + n);
        if fetched >= t {
            t
        } else {
            fetched.ceil()
        }
    } else {
        let lim = 2.0 * t * b / (2.0 * t - b);
        let fetched = if n <= lim {
            2.0 * t * n / (2.0 * t + n)
        } else {
            b + (n - lim) * (t - b) / t
        };
        fetched.ceil()
    }
}

/// The table a path reads, as the planner sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TableSize {
    pub pages: f64,
    pub tuples: f64,
}

/// Which heap pages an index scan reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HeapVisits {
    /// A plain Index Scan: every page its TIDs point into.
    All,
    /// An Index Only Scan: only pages the visibility map does not mark, this share of
    /// the table's pages being marked (PostgreSQL's `allvisfrac`).
    NotAllVisible { all_visible: f64 },
}

impl HeapVisits {
    /// Of `pages` the scan would visit, those it reads.
    fn pages(self, pages: f64) -> f64 {
        match self {
            HeapVisits::All => pages,
            HeapVisits::NotAllVisible { all_visible } => {
                (pages * (1.0 - all_visible.clamp(0.0, 1.0))).ceil()
            }
        }
    }
}

/// `cost_index`: `index` its index part, `correlation` the key column's, `quals` the cost
/// per row of the conditions the index does not answer, `heap` the pages it reads; one
/// run's cost of a scan run `loops` times (module comment).
#[allow(clippy::too_many_arguments)]
pub fn index_scan(
    p: &PlannerSettings,
    table: &TableSize,
    index: &IndexSize,
    part: &IndexPartCost,
    correlation: f64,
    quals: f64,
    heap: HeapVisits,
    loops: f64,
) -> Cost {
    let tuples_fetched = clamp_rows(part.selectivity * table.tuples);
    let fetched = |fetches: f64| {
        heap.pages(index_pages_fetched(
            p,
            fetches,
            table.pages,
            table.pages + index.pages,
        ))
    };
    let pages_correlated = (part.selectivity * table.pages).ceil();
    let (max_io, min_io) = if loops > 1.0 {
        (
            fetched(tuples_fetched * loops) * p.random_page_cost / loops,
            fetched(pages_correlated * loops) * p.random_page_cost / loops,
        )
    } else {
        let pages_correlated = heap.pages(pages_correlated);
        let min_io = if pages_correlated > 0.0 {
            p.random_page_cost + (pages_correlated - 1.0).max(0.0) * p.seq_page_cost
        } else {
            0.0
        };
        (fetched(tuples_fetched) * p.random_page_cost, min_io)
    };
    let c2 = correlation * correlation;
    let run = (part.total - part.startup)
        + max_io
        + c2 * (min_io - max_io)
        + (p.cpu_tuple_cost + quals) * tuples_fetched;
    Cost {
        startup: part.startup,
        total: part.startup + run,
    }
}

/// `cost_sort` of `rows` rows of `width` bytes, not counting its input: in memory, as a
/// bounded heap keeping the first `limit` rows when they are fewer than half, or in
/// sorted runs merged from temporary files when the rows exceed `work_mem`. `startup` is
/// the sorting itself, `total` adds returning the rows.
pub fn sort(p: &PlannerSettings, rows: f64, width: i64, limit: Option<f64>) -> Cost {
    let tuples = rows.max(2.0);
    let comparison = 2.0 * p.cpu_operator_cost;
    let tuple_bytes = |rows: f64| rows * (((width + 7) / 8 * 8) as f64 + 24.0);
    let input_bytes = tuple_bytes(tuples);
    let output_rows = limit.map_or(tuples, |l| l.min(tuples));
    let output_bytes = match limit {
        Some(_) => tuple_bytes(output_rows),
        None => input_bytes,
    };
    let blcksz = BLCKSZ as f64;
    let startup = if output_bytes > p.work_mem_bytes {
        let pages = (input_bytes / blcksz).ceil();
        let runs = input_bytes / p.work_mem_bytes;
        let merge_order = (p.work_mem_bytes / (3.0 * blcksz))
            .floor()
            .clamp(6.0, 500.0);
        let log_runs = if runs > merge_order {
            (runs.ln() / merge_order.ln()).ceil()
        } else {
            1.0
        };
        comparison * tuples * tuples.log2()
            + 2.0 * pages * log_runs * (p.seq_page_cost * 0.75 + p.random_page_cost * 0.25)
    } else if tuples > 2.0 * output_rows || input_bytes > p.work_mem_bytes {
        comparison * tuples * (2.0 * output_rows).log2()
    } else {
        comparison * tuples * tuples.log2()
    };
    Cost {
        startup,
        total: startup + p.cpu_operator_cost * tuples,
    }
}

/// One node of a bitmap tree as `cost_bitmap_tree_node` sees it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BitmapCost {
    pub cost: f64,
    pub selectivity: f64,
    /// A Bitmap Index Scan (not an And/Or).
    pub is_index: bool,
}

/// A Bitmap Index Scan: its index part plus the bitmap's cost per row; `rel_rows` is the
/// table's estimated rows after every condition (PostgreSQL's `path->rows`).
pub fn bitmap_index(p: &PlannerSettings, part: &IndexPartCost, rel_rows: f64) -> BitmapCost {
    BitmapCost {
        cost: part.total + 0.1 * p.cpu_operator_cost * rel_rows,
        selectivity: part.selectivity,
        is_index: true,
    }
}

/// `cost_bitmap_and_node`.
pub fn bitmap_and(p: &PlannerSettings, children: &[BitmapCost]) -> BitmapCost {
    let cost = children.iter().map(|c| c.cost).sum::<f64>()
        + 100.0 * p.cpu_operator_cost * children.len().saturating_sub(1) as f64;
    BitmapCost {
        cost,
        selectivity: children.iter().map(|c| c.selectivity).product(),
        is_index: false,
    }
}

/// `cost_bitmap_or_node`.
pub fn bitmap_or(p: &PlannerSettings, children: &[BitmapCost]) -> BitmapCost {
    let extra = children.iter().skip(1).filter(|c| !c.is_index).count();
    BitmapCost {
        cost: children.iter().map(|c| c.cost).sum::<f64>()
            + 100.0 * p.cpu_operator_cost * extra as f64,
        selectivity: children.iter().map(|c| c.selectivity).sum::<f64>().min(1.0),
        is_index: false,
    }
}

/// `compute_bitmap_pages`: (heap pages fetched, rows handled) for a bitmap selecting
/// `selectivity` of the table.
pub fn bitmap_pages(p: &PlannerSettings, table: &TableSize, selectivity: f64) -> (f64, f64) {
    let mut tuples = clamp_rows(selectivity * table.tuples);
    let t = table.pages.max(1.0);
    let fetched = 2.0 * t * tuples / (2.0 * t + tuples);
    let heap_pages = fetched.min(table.pages);
    let pages = if fetched >= t { t } else { fetched.ceil() };
    let max_entries = TidBitmap::entries_for(p.work_mem_bytes as usize) as f64;
    if max_entries < heap_pages {
        let lossy = (heap_pages - (max_entries / 2.0).floor()).max(0.0);
        let exact = heap_pages - lossy;
        if lossy > 0.0 {
            tuples = clamp_rows(
                selectivity * (exact / heap_pages) * table.tuples
                    + (lossy / heap_pages) * table.tuples,
            );
        }
    }
    (pages, tuples)
}

/// `cost_bitmap_heap_scan` over a bitmap tree `bitmap`; `quals` is the cost per row of all
/// the query's conditions.
pub fn bitmap_heap_scan(
    p: &PlannerSettings,
    table: &TableSize,
    bitmap: &BitmapCost,
    quals: f64,
) -> Cost {
    let (pages, tuples) = bitmap_pages(p, table, bitmap.selectivity);
    let t = table.pages.max(1.0);
    let per_page = if pages >= 2.0 {
        p.random_page_cost - (p.random_page_cost - p.seq_page_cost) * (pages / t).sqrt()
    } else {
        p.random_page_cost
    };
    let startup = bitmap.cost;
    Cost {
        startup,
        total: startup + pages * per_page + (p.cpu_tuple_cost + quals) * tuples,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> TableSize {
        // The reference table of the planner tests: 100 000 rows on 935 pages.
        TableSize {
            pages: 935.0,
            tuples: 100_000.0,
        }
    }

    fn index() -> IndexSize {
        IndexSize {
            pages: 86.0,
            tuples: 100_000.0,
            height: 1,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.006
    }

    /// PostgreSQL 18.4 on the same sizes (`t(a int, …)` of 100 000 rows, 935 pages, a
    /// B-tree of 86 pages) printed, for `a = 5` with selectivity 0.001 (100 rows):
    /// `Bitmap Heap Scan (cost=5.07..295.47)` over `Bitmap Index Scan (cost=0.00..5.04)`.
    /// By hand: 1 leaf page × 4 + 100 × (0.005 + 0.0025) + ⌈log2 100000⌉ × 0.0025 + 2 × 50
    /// × 0.0025 = 5.0425; the bitmap adds 0.1 × 0.0025 × 100 = 0.025; 95 heap pages
    /// (2·935·100 / (2·935 + 100) = 94.9) at 4 − 3·√(95/935) = 3.0437 each = 289.15; 100 rows
    /// × 0.0125 = 1.25.
    #[test]
    fn bitmap_scan_matches_postgres() {
        let p = PlannerSettings::default();
        let part = btree_index_part(&p, &index(), 0.001, 1);
        assert!(close(part.total, 5.0425), "{part:?}");
        assert!(close(part.startup, 0.2925), "{part:?}");
        let node = bitmap_index(&p, &part, 100.0);
        let heap = bitmap_heap_scan(&p, &table(), &node, 0.0025);
        assert!(close(heap.startup, 5.0675), "{heap:?}");
        assert!(close(heap.total, 295.47), "{heap:?}");
    }

    /// PostgreSQL 18.4: `a < 5 AND b < 5` → `BitmapAnd (cost=18.40..18.40)` over index
    /// scans of 8.01 (495 rows) and 10.14 (780 rows), heap `(cost=18.40..33.67 rows=4)`.
    #[test]
    fn bitmap_and_matches_postgres() {
        let p = PlannerSettings::default();
        let a = btree_index_part(&p, &index(), 0.00495, 1);
        let b = btree_index_part(&p, &index(), 0.0078, 1);
        assert!(close(a.total, 8.01) && close(b.total, 10.14), "{a:?} {b:?}");
        let and = bitmap_and(&p, &[bitmap_index(&p, &a, 4.0), bitmap_index(&p, &b, 4.0)]);
        assert!((and.cost - 18.40).abs() < 0.01, "{and:?}");
        let heap = bitmap_heap_scan(&p, &table(), &and, 2.0 * 0.0025);
        assert!((heap.total - 33.67).abs() < 0.01, "{heap:?}");
    }

    #[test]
    fn seq_scan_matches_postgres() {
        // 935 pages + 100 000 rows × (0.01 + 0.0025) = 2185.00, as PostgreSQL prints.
        let c = seq_scan(&PlannerSettings::default(), 935.0, 100_000.0, 0.0025);
        assert_eq!(format!("{:.2}", c.total), "2185.00");
    }

    #[test]
    fn mackert_lohman() {
        let p = PlannerSettings {
            effective_cache_size: 100.0,
            ..Default::default()
        };
        // T = 1000 > b = 100 × 1000/1000 = 100: lim = 2·1000·100/1900 = 105.26.
        assert_eq!(index_pages_fetched(&p, 50.0, 1000.0, 1000.0), 49.0);
        // Beyond lim: 100 + (10000 − 105.26) × 900/1000 = 9005.3 → 9006.
        assert_eq!(index_pages_fetched(&p, 10_000.0, 1000.0, 1000.0), 9006.0);
        // A big cache: never more than the table.
        let p = PlannerSettings::default();
        assert_eq!(index_pages_fetched(&p, 1e6, 1000.0, 1000.0), 1000.0);
    }

    /// With correlation 1 the index scan reads consecutive pages; at 0 Mackert–Lohman's
    /// random pages: the first is far cheaper.
    #[test]
    fn correlation_interpolates() {
        let p = PlannerSettings::default();
        let part = btree_index_part(&p, &index(), 0.01, 1);
        let ordered = index_scan(
            &p,
            &table(),
            &index(),
            &part,
            1.0,
            0.0,
            HeapVisits::All,
            1.0,
        );
        let random = index_scan(
            &p,
            &table(),
            &index(),
            &part,
            0.0,
            0.0,
            HeapVisits::All,
            1.0,
        );
        // Correlated: 4 + 9 × 1 for ⌈0.01 × 935⌉ = 10 pages; random: 879 pages × 4.
        let io_ordered = 4.0 + 9.0;
        let io_random = index_pages_fetched(&p, 1000.0, 935.0, 1021.0) * 4.0;
        let rest = part.total - part.startup + 1000.0 * 0.01;
        assert!(close(ordered.total - part.startup, io_ordered + rest));
        assert!(close(random.total - part.startup, io_random + rest));
        let half = index_scan(
            &p,
            &table(),
            &index(),
            &part,
            0.5,
            0.0,
            HeapVisits::All,
            1.0,
        );
        assert!(close(
            half.total - part.startup,
            io_random + 0.25 * (io_ordered - io_random) + rest
        ));
        // Index only, 3/4 of the pages all-visible: a quarter of each, rounded up.
        let visits = HeapVisits::NotAllVisible { all_visible: 0.75 };
        let only = index_scan(&p, &table(), &index(), &part, 0.0, 0.0, visits, 1.0);
        let io_only = (index_pages_fetched(&p, 1000.0, 935.0, 1021.0) * 0.25).ceil() * 4.0;
        assert!(close(only.total - part.startup, io_only + rest));
        let all_visible = HeapVisits::NotAllVisible { all_visible: 1.0 };
        let only = index_scan(&p, &table(), &index(), &part, 1.0, 0.0, all_visible, 1.0);
        assert!(close(only.total - part.startup, rest), "no heap page read");
    }

    /// A lossy bitmap raises the rows handled. 64kB holds 65536 / 64 = 1024 entries; a
    /// bitmap over all 20 000 pages of a 2 000 000-row table (20 % of the rows: 2TN/(2T+N)
    /// > T) has 20 000 − 1024/2 = 19 488 lossy pages, whose every row is rechecked:
    /// 0.2 × 512/20 000 × 2e6 + 19 488/20 000 × 2e6 = 1 959 040 rows instead of 400 000.
    #[test]
    fn lossy_pages_raise_the_rows() {
        let big = TableSize {
            pages: 20_000.0,
            tuples: 2_000_000.0,
        };
        let small = PlannerSettings {
            work_mem_bytes: 64.0 * 1024.0,
            ..Default::default()
        };
        assert_eq!(TidBitmap::entries_for(64 * 1024), 1024);
        assert_eq!(bitmap_pages(&small, &big, 0.2), (20_000.0, 1_959_040.0));
        let roomy = PlannerSettings::default();
        assert_eq!(bitmap_pages(&roomy, &big, 0.2), (20_000.0, 400_000.0));
        // The reference table's 935 pages fit 1024 entries: nothing lossy.
        assert_eq!(bitmap_pages(&small, &table(), 0.2), (935.0, 20_000.0));
    }

    /// The selectivity above which a Bitmap Heap Scan costs more than a Seq Scan on the
    /// reference table. PostgreSQL 18 put it between 0.40 (`a < 400`: bitmap 1889.30 <
    /// seq 2185.00) and 0.90 (`a < 900`: bitmap 3066.69) at the default random_page_cost;
    /// dearer random reads lower it, cheaper ones raise it.
    #[test]
    fn break_even_moves_with_random_page_cost() {
        let break_even = |random_page_cost: f64| {
            let p = PlannerSettings {
                random_page_cost,
                ..Default::default()
            };
            let seq = seq_scan(&p, 935.0, 100_000.0, 0.0025).total;
            (1..=1000)
                .map(|k| k as f64 / 1000.0)
                .find(|&sel| {
                    let part = btree_index_part(&p, &index(), sel, 1);
                    let node = bitmap_index(&p, &part, sel * 100_000.0);
                    bitmap_heap_scan(&p, &table(), &node, 0.0025).total > seq
                })
                .unwrap_or(1.0)
        };
        let (dear, default, cheap) = (break_even(8.0), break_even(4.0), break_even(2.0));
        assert!(default > 0.40 && default < 0.90, "{default}");
        assert!(
            dear < default && default < cheap,
            "{dear} {default} {cheap}"
        );
    }
}
