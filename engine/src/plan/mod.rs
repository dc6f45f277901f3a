//! The planner of a table scan: which of Seq Scan, Index Scan and Bitmap Heap Scan (over one
//! index, a BitmapAnd or a BitmapOr) reads a table for a query's WHERE clause, chosen by
//! PostgreSQL 18's cost model.
//!
//! # Where it runs
//!
//! DataFusion plans the query; when it reaches a table it calls `HeapTable::scan` with the
//! WHERE clause's conjuncts, which the table accepted as `Inexact` pushdowns: DataFusion keeps
//! a `FilterExec` with every conjunct above whatever scan is returned, so a scan only has to
//! return a superset of the matching rows. That is what makes an index usable without any
//! risk to the answer: the index narrows the rows, the filter above decides.
//!
//! # The steps (one module each)
//!
//! 1. [`index_cond`]: which conjuncts an index can answer — `col op const` (`=`, `<`, `<=`,
//!    `>`, `>=`, either way round, through casts of the constant), `col IS NULL`, and ORs
//!    whose every arm is such a condition — as key ranges of a B-tree on that column.
//! 2. [`selectivity`]: the fraction of rows each conjunct keeps, from `pg_stats` (MCVs,
//!    histogram, null fraction, n_distinct) or PostgreSQL's defaults when the table has not
//!    been analyzed.
//! 3. [`cost`]: PostgreSQL's `costsize.c` formulas for each kind of path.
//! 4. [`paths`]: the candidate paths, their costs, the choice (paths an `enable_* = off`
//!    setting disables lose to every enabled one, as PostgreSQL 18 counts disabled nodes
//!    before cost), and the execution plan of the winner.
//!
//! Each chosen node carries its [`PathEstimate`] for EXPLAIN's `(cost=… rows=… width=…)`,
//! and [`partitions`] reads those estimates to run cheap plans in one partition.

pub mod cost;
pub mod hash_join_batches;
pub mod index_cond;
pub mod merge_joins;
pub mod min_max;
pub mod nested_loops;
pub mod ordered_scans;
pub mod outer_param;
pub mod param_scans;
pub mod partitions;
pub mod paths;
pub mod selectivity;
pub mod statement_params;

use std::sync::Arc;

use datafusion::arrow::datatypes::Schema;
use datafusion::common::stats::Precision;
use datafusion::common::Statistics;
use iolab_settings::SessionSettings;

/// An `ORDER BY` of a scan's rows the planner was told of (`ordered_scans`): its leading
/// keys that are table columns all ascending with NULLs last (PostgreSQL's default order,
/// a B-tree's order) or all `descending` with NULLs first (the B-tree's order read
/// backward); whether those columns are the `whole` order (else a sort of the rows of
/// equal keys follows: PostgreSQL's Incremental Sort); and how many rows the query wants
/// at most (`LIMIT`, with any `OFFSET`), if it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanOrder {
    /// Table columns, at least one.
    pub columns: Vec<usize>,
    pub descending: bool,
    pub whole: bool,
    pub fetch: Option<usize>,
}

impl ScanOrder {
    /// What a path giving this order, of `startup` and `total` cost for `rows` rows, costs
    /// until the query has its rows: its startup and the share of its run the LIMIT takes
    /// (all of it without one), as PostgreSQL costs a path under a LIMIT.
    pub fn cost_until_fetched(&self, startup: f64, total: f64, rows: f64) -> f64 {
        let fraction = self
            .fetch
            .map_or(1.0, |f| (f as f64 / rows.max(1.0)).min(1.0));
        startup + (total - startup) * fraction
    }
}

/// What the planner estimated for one plan node, in PostgreSQL's units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathEstimate {
    pub startup_cost: f64,
    pub total_cost: f64,
    pub rows: f64,
    pub width: i32,
    /// The path is one an `enable_* = off` setting disabled (PostgreSQL 18 prints
    /// `Disabled: true` under such a node); it was chosen because nothing else could be.
    pub disabled: bool,
}

impl PathEstimate {
    /// The estimate as DataFusion's statistics of a scan returning `schema` (its rows,
    /// at most `limit`, and their bytes at the estimated width, both inexact). DataFusion's
    /// join selection reads them to build a hash join's table on the smaller input, as
    /// PostgreSQL's planner hashes the smaller relation; a node without an estimate has
    /// unknown statistics. The session's filter selectivity is 100 %, so a `FilterExec`
    /// above a scan passes these on unchanged: the scan's rows already count its quals.
    pub fn statistics(
        estimate: Option<PathEstimate>,
        limit: Option<usize>,
        schema: &Schema,
    ) -> Arc<Statistics> {
        let mut stats = Statistics::new_unknown(schema);
        if let Some(e) = estimate {
            let rows = (e.rows.round() as usize).min(limit.unwrap_or(usize::MAX));
            stats.num_rows = Precision::Inexact(rows);
            stats.total_byte_size = Precision::Inexact(rows * e.width.max(1) as usize);
        }
        Arc::new(stats)
    }
}

/// The session's planner settings: PostgreSQL's cost constants and the `enable_*` switches,
/// captured at the start of a statement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannerSettings {
    pub seq_page_cost: f64,
    pub random_page_cost: f64,
    pub cpu_tuple_cost: f64,
    pub cpu_index_tuple_cost: f64,
    pub cpu_operator_cost: f64,
    /// In pages.
    pub effective_cache_size: f64,
    pub work_mem_bytes: f64,
    pub enable_seqscan: bool,
    pub enable_indexscan: bool,
    /// An index scan that needs only the index's column is an Index Only Scan.
    pub enable_indexonlyscan: bool,
    pub enable_bitmapscan: bool,
    /// A sort above a scan that does not give the query's order (`ordered_scans`).
    pub enable_sort: bool,
    /// An index's order for a sort by more keys than the index's.
    pub enable_incremental_sort: bool,
    /// A join as a nested loop over an index of its inner side (`nested_loops`).
    pub enable_nestloop: bool,
    pub enable_hashjoin: bool,
    pub enable_mergejoin: bool,
}

impl PlannerSettings {
    pub fn from_settings(s: &SessionSettings) -> PlannerSettings {
        PlannerSettings {
            seq_page_cost: s.seq_page_cost(),
            random_page_cost: s.random_page_cost(),
            cpu_tuple_cost: s.cpu_tuple_cost(),
            cpu_index_tuple_cost: s.cpu_index_tuple_cost(),
            cpu_operator_cost: s.cpu_operator_cost(),
            effective_cache_size: s.effective_cache_size_blocks() as f64,
            work_mem_bytes: s.work_mem_kb() as f64 * 1024.0,
            enable_seqscan: s.enable_seqscan(),
            enable_indexscan: s.enable_indexscan(),
            enable_indexonlyscan: s.enable_indexonlyscan(),
            enable_bitmapscan: s.enable_bitmapscan(),
            enable_sort: s.enable_sort(),
            enable_incremental_sort: s.enable_incremental_sort(),
            enable_nestloop: s.enable_nestloop(),
            enable_hashjoin: s.enable_hashjoin(),
            enable_mergejoin: s.enable_mergejoin(),
        }
    }
}

impl Default for PlannerSettings {
    /// PostgreSQL 18's defaults.
    fn default() -> PlannerSettings {
        PlannerSettings {
            seq_page_cost: 1.0,
            random_page_cost: 4.0,
            cpu_tuple_cost: 0.01,
            cpu_index_tuple_cost: 0.005,
            cpu_operator_cost: 0.0025,
            effective_cache_size: 524288.0,
            work_mem_bytes: 4.0 * 1024.0 * 1024.0,
            enable_seqscan: true,
            enable_indexscan: true,
            enable_indexonlyscan: true,
            enable_bitmapscan: true,
            enable_sort: true,
            enable_incremental_sort: true,
            enable_nestloop: true,
            enable_hashjoin: true,
            enable_mergejoin: true,
        }
    }
}
