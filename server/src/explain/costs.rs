//! Estimates for `EXPLAIN`'s `(cost=… rows=… width=…)` of the nodes above the scans.
//!
//! The scans (Seq Scan, Index Scan, Bitmap Heap Scan and its bitmap nodes) carry the
//! planner's own estimate (`estimate()`, from `iolab_engine::plan::cost`); this module
//! re-exports that model's pieces (table size, column widths, the Seq Scan formula, qual
//! costs and selectivity without statistics) and adds PostgreSQL 18's formulas, in
//! simplified form, for Aggregate, Sort (in memory, bounded or external), Limit, Hash
//! Join, Nested Loop, Append, Values and a filter over another node's output. The rows of
//! an equi-join and the groups of an aggregation use the `pg_stats` of the table columns
//! their keys come from (`ColumnEstimate`, found by the mapping through the plan), as
//! `eqjoinsel` and `estimate_num_groups` do, without their MCV matching.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::physical_expr::PhysicalExpr;
use iolab_engine::plan::cost as model;
use iolab_engine::plan::selectivity::{
    clauselist_selectivity, RelStats, DEFAULT_INEQ_SEL, DEFAULT_NUM_DISTINCT,
};

pub use iolab_engine::plan::cost::{column_width, relation_size};
pub use iolab_engine::plan::selectivity::clamp_rows;
/// The session's cost settings.
pub use iolab_engine::plan::PlannerSettings as CostParams;

use crate::explain::node::Costs;

/// The width of a computed value of an Arrow type.
pub fn arrow_width(dt: &DataType) -> i64 {
    match dt {
        DataType::Boolean | DataType::Int8 | DataType::UInt8 => 1,
        DataType::Int16 | DataType::UInt16 => 2,
        DataType::Int32 | DataType::UInt32 | DataType::Float32 | DataType::Date32 => 4,
        DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Decimal128(..)
        | DataType::Decimal256(..)
        | DataType::Binary
        | DataType::LargeBinary => 32,
        _ => 8,
    }
}

/// A Seq Scan without a filter (`cost_seqscan`).
pub fn seq_scan(p: &CostParams, pages: f64, tuples: f64, width: i64) -> Costs {
    let c = model::seq_scan(p, pages, tuples, 0.0);
    Costs {
        startup: c.startup,
        total: c.total,
        rows: tuples,
        width,
    }
}

/// A filter over `input`: its evaluation cost per input row and, with no statistics of
/// the rows it sees, PostgreSQL's default selectivities.
pub fn filter(p: &CostParams, input: Costs, quals: &[Arc<dyn PhysicalExpr>]) -> Costs {
    Costs {
        startup: input.startup,
        total: input.total + model::qual_cost(p, quals) * input.rows,
        rows: clamp_rows(input.rows * selectivity(quals)),
        width: input.width,
    }
}

/// The fraction of rows `quals` keep when nothing is known of them.
pub fn selectivity(quals: &[Arc<dyn PhysicalExpr>]) -> f64 {
    clauselist_selectivity(quals, &RelStats::unknown())
}

/// An aggregate: plain (no GROUP BY, one row) or hashed (one row per group).
pub fn aggregate(
    p: &CostParams,
    input: Costs,
    group_columns: &[Option<ColumnEstimate>],
    aggregates: usize,
    width: i64,
) -> Costs {
    let per_row = p.cpu_operator_cost * (group_columns.len() + aggregates.max(1)) as f64;
    let startup = input.total + per_row * input.rows;
    if group_columns.is_empty() {
        return Costs {
            startup,
            total: startup + p.cpu_tuple_cost,
            rows: 1.0,
            width,
        };
    }
    // estimate_num_groups: the product of each column's distinct values (one more for a
    // column with NULLs, which group together), each at most the input's rows.
    let groups: f64 = group_columns
        .iter()
        .map(|c| match c {
            Some(c) => c.distinct + if c.null_frac > 0.0 { 1.0 } else { 0.0 },
            None => DEFAULT_NUM_DISTINCT,
        })
        .map(|nd| nd.min(input.rows))
        .product();
    let groups = clamp_rows(groups.min(input.rows));
    Costs {
        startup,
        total: startup + p.cpu_tuple_cost * groups,
        rows: groups,
        width,
    }
}

/// `cost_sort`: quicksort in `work_mem`, a bounded heap under a LIMIT, or an external
/// merge sort when the input does not fit.
pub fn sort(p: &CostParams, input: Costs, limit: Option<usize>) -> Costs {
    let own = model::sort(p, input.rows, input.width, limit.map(|l| l as f64));
    Costs {
        startup: input.total + own.startup,
        total: input.total + own.total,
        rows: input.rows,
        width: input.width,
    }
}

/// `adjust_limit_rows_costs`.
pub fn limit(input: Costs, offset: usize, count: Option<usize>) -> Costs {
    let run = input.total - input.startup;
    let mut c = input;
    let mut rows = input.rows;
    if offset > 0 {
        let skipped = (offset as f64).min(rows);
        if input.rows > 0.0 {
            c.startup += run * skipped / input.rows;
        }
        rows = (rows - skipped).max(1.0);
    }
    c.total = input.total;
    if let Some(n) = count {
        let n = (n as f64).min(rows);
        if input.rows > 0.0 {
            c.total = c.startup + run * n / input.rows;
        }
        rows = n.max(1.0);
    }
    c.rows = rows;
    c
}

/// What `pg_stats` says of a column a join or a grouping reads: its distinct values (in
/// the whole table) and its fraction of NULLs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ColumnEstimate {
    pub distinct: f64,
    pub null_frac: f64,
}

/// One equality clause of a join, `outer_col = inner_col`, with what is known of each side.
pub type JoinClause = (Option<ColumnEstimate>, Option<ColumnEstimate>);

/// A side's distinct values: from `pg_stats`, else PostgreSQL's default of 200 (or the
/// side's rows, when fewer).
fn distinct(side: Option<ColumnEstimate>, rows: f64) -> (f64, f64) {
    match side {
        Some(c) => (c.distinct.max(1.0), c.null_frac),
        None => (rows.clamp(1.0, DEFAULT_NUM_DISTINCT), 0.0),
    }
}

/// The rows a join returns (`calc_joinrel_size_estimate`), for PostgreSQL's join type `jt`
/// (outer = probe side): per clause `eqjoinsel`'s (1 − nullfrac₁)(1 − nullfrac₂) /
/// max(nd₁, nd₂) for inner and outer joins, `eqjoinsel_semi`'s fraction of the kept side
/// that finds a match for semi and anti joins; an outer join keeps at least the rows of
/// its preserved side.
pub fn join_rows(outer: &Costs, inner: &Costs, clauses: &[JoinClause], jt: &str) -> f64 {
    let mut inner_sel = 1.0;
    let (mut outer_match, mut inner_match) = (1.0f64, 1.0f64);
    for &(o, i) in clauses {
        let (nd_o, nf_o) = distinct(o, outer.rows);
        let (nd_i, nf_i) = distinct(i, inner.rows);
        inner_sel *= (1.0 - nf_o) * (1.0 - nf_i) / nd_o.max(nd_i);
        // The semi selectivity of each side: the share of its values the other side holds
        // (at most as many as its rows), a half when either side has no statistics.
        let semi = |kept_nf: f64, kept_nd: f64, other_nd: f64, other_rows: f64| {
            if o.is_none() || i.is_none() {
                0.5 * (1.0 - kept_nf)
            } else {
                (1.0 - kept_nf) * (other_nd.min(other_rows.max(1.0)) / kept_nd).min(1.0)
            }
        };
        outer_match = outer_match.min(semi(nf_o, nd_o, nd_i, inner.rows));
        inner_match = inner_match.min(semi(nf_i, nd_i, nd_o, outer.rows));
    }
    let pairs = outer.rows * inner.rows * inner_sel;
    clamp_rows(match jt {
        "Left" => pairs.max(outer.rows),
        "Right" => pairs.max(inner.rows),
        "Full" => pairs.max(outer.rows).max(inner.rows),
        "Semi" => outer.rows * outer_match,
        "Anti" => outer.rows * (1.0 - outer_match),
        "Right Semi" => inner.rows * inner_match,
        "Right Anti" => inner.rows * (1.0 - inner_match),
        _ => pairs,
    })
}

/// A hash join (build `inner`, probe with `outer`) returning `rows`.
pub fn hash_join(
    p: &CostParams,
    outer: Costs,
    inner: Costs,
    clauses: usize,
    rows: f64,
    width: i64,
) -> Costs {
    let clauses_f = clauses.max(1) as f64;
    let startup = outer.startup
        + inner.total
        + (p.cpu_operator_cost * clauses_f + p.cpu_tuple_cost) * inner.rows;
    let total = startup
        + (outer.total - outer.startup)
        + 2.0 * p.cpu_operator_cost * clauses_f * outer.rows
        + p.cpu_tuple_cost * rows;
    Costs {
        startup,
        total,
        rows,
        width,
    }
}

/// A nested loop (the inner side read again for each outer row).
pub fn nested_loop(
    p: &CostParams,
    outer: Costs,
    inner: Costs,
    filtered: bool,
    width: i64,
) -> Costs {
    let pairs = outer.rows * inner.rows;
    let rows = if filtered {
        clamp_rows(pairs * DEFAULT_INEQ_SEL)
    } else {
        clamp_rows(pairs)
    };
    let rescan = (inner.total - inner.startup).max(p.cpu_operator_cost * inner.rows);
    Costs {
        startup: outer.startup + inner.startup,
        total: outer.total
            + inner.total
            + (outer.rows - 1.0).max(0.0) * rescan
            + p.cpu_operator_cost * pairs * if filtered { 1.0 } else { 0.0 }
            + p.cpu_tuple_cost * rows,
        rows,
        width,
    }
}

/// Append: the children one after the other.
pub fn append(p: &CostParams, children: &[Costs], width: i64) -> Costs {
    let rows: f64 = children.iter().map(|c| c.rows).sum();
    Costs {
        startup: children.first().map(|c| c.startup).unwrap_or(0.0),
        total: children.iter().map(|c| c.total).sum::<f64>() + p.cpu_tuple_cost * 0.5 * rows,
        rows,
        width,
    }
}

/// Values Scan of `rows` rows.
pub fn values(p: &CostParams, rows: usize, width: i64) -> Costs {
    let rows = rows as f64;
    Costs {
        startup: 0.0,
        total: (p.cpu_operator_cost + p.cpu_tuple_cost) * rows,
        rows,
        width,
    }
}

/// Function Scan of a set-returning function estimated at `rows` rows.
pub fn function_scan(p: &CostParams, rows: f64, width: i64) -> Costs {
    Costs {
        startup: 0.0,
        total: p.cpu_tuple_cost * rows,
        rows,
        width,
    }
}

/// Result (a row without a table).
pub fn result(p: &CostParams, rows: f64, width: i64) -> Costs {
    Costs {
        startup: 0.0,
        total: p.cpu_tuple_cost * rows,
        rows,
        width,
    }
}

/// A node that passes its input through with some work per row (WindowAgg, …).
pub fn per_row(p: &CostParams, input: Costs, operators: usize, width: i64) -> Costs {
    Costs {
        startup: input.startup,
        total: input.total
            + (p.cpu_operator_cost * operators as f64 + p.cpu_tuple_cost) * input.rows,
        rows: input.rows,
        width,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_catalog::{ColumnDef, Persistence, PgType, TableDef};

    fn table(columns: &[PgType], reltuples: f64) -> TableDef {
        TableDef {
            oid: 1,
            schema: "public".into(),
            name: "t".into(),
            relfilenode: 1,
            persistence: Persistence::Permanent,
            columns: columns
                .iter()
                .enumerate()
                .map(|(i, ty)| ColumnDef {
                    name: format!("c{i}"),
                    ty: *ty,
                    not_null: false,
                })
                .collect(),
            reltuples,
            relpages: 0,
            stored: Default::default(),
            reloptions: Vec::new(),
        }
    }

    /// Figures PostgreSQL 18 printed for the same never-analyzed tables.
    #[test]
    fn matches_postgres_without_statistics() {
        let p = CostParams::default();
        let t = table(&[PgType::Int4, PgType::Text], -1.0);
        let (pages, tuples) = relation_size(&t, 1667);
        assert_eq!(tuples, 211709.0);
        let scan = seq_scan(&p, pages, tuples, 36);
        assert_eq!(format!("{:.2}", scan.total), "3784.09");
        let empty = table(&[PgType::Int4, PgType::Int4], -1.0);
        let (pages, tuples) = relation_size(&empty, 0);
        assert_eq!((pages, tuples), (10.0, 2260.0));
        assert_eq!(
            format!("{:.2}", seq_scan(&p, pages, tuples, 8).total),
            "32.60"
        );
        let wide = [
            PgType::Int8,
            PgType::Float8,
            PgType::unconstrained_numeric(),
            PgType::Bool,
            PgType::Date,
            PgType::Timestamp,
            PgType::Varchar(Some(10)),
            PgType::Bpchar(3),
            PgType::Int2,
            PgType::Float4,
            PgType::Timestamptz,
            PgType::Varchar(None),
        ];
        let widths: Vec<i64> = wide.iter().map(column_width).collect();
        assert_eq!(widths, [8, 8, 32, 1, 4, 8, 38, 16, 2, 4, 8, 32]);
        let (_, tuples) = relation_size(&table(&wide, -1.0), 0);
        assert_eq!(tuples, 430.0);
    }

    #[test]
    fn sort_and_limit_formulas() {
        let p = CostParams::default();
        // Sort of 211709 rows of width 36 spills: PostgreSQL says 28300.58..28829.85.
        let input = Costs {
            startup: 0.0,
            total: 3784.09,
            rows: 211709.0,
            width: 36,
        };
        let s = sort(&p, input, None);
        assert!((s.startup - 28300.58).abs() < 1.0, "{s:?}");
        assert!((s.total - 28829.85).abs() < 1.0, "{s:?}");
        // LIMIT 10 OFFSET 5 over the scan: 0.09..0.27 rows=10.
        let l = limit(input, 5, Some(10));
        assert_eq!(
            format!("{:.2}..{:.2} {}", l.startup, l.total, l.rows),
            "0.09..0.27 10"
        );
        // count(*) over 200000 rows costing 3667: 4167.00..4167.01.
        let scan = Costs {
            startup: 0.0,
            total: 3667.0,
            rows: 200000.0,
            width: 0,
        };
        let a = aggregate(&p, scan, &[], 1, 8);
        assert_eq!(
            format!("{:.2}..{:.2}", a.startup, a.total),
            "4167.00..4167.01"
        );
    }

    /// PostgreSQL 18's rows for h1(id unique, 100 000 rows; v 100 values) and h2(id
    /// unique, 1000 rows), both analyzed.
    #[test]
    fn join_and_group_rows_from_statistics() {
        let rows = |n: f64| Costs {
            startup: 0.0,
            total: 0.0,
            rows: n,
            width: 4,
        };
        let column = |distinct: f64| {
            Some(ColumnEstimate {
                distinct,
                null_frac: 0.0,
            })
        };
        let id = [(column(100_000.0), column(1000.0))];
        // h1 (filtered to 9940 rows) JOIN h2: 99.
        let inner = join_rows(&rows(9940.0), &rows(1000.0), &id, "Inner");
        assert_eq!(inner.round(), 99.0);
        assert_eq!(join_rows(&rows(1e5), &rows(1000.0), &id, "Left"), 1e5);
        assert_eq!(join_rows(&rows(1e5), &rows(1000.0), &id, "Semi"), 1000.0);
        assert_eq!(join_rows(&rows(1e5), &rows(1000.0), &id, "Anti"), 99_000.0);
        // Without statistics a side has at most 200 values.
        let unknown = [(None, None)];
        assert_eq!(
            join_rows(&rows(1e5), &rows(1000.0), &unknown, "Inner"),
            500_000.0
        );
        let p = CostParams::default();
        let groups = aggregate(&p, rows(1e5), &[column(100.0)], 1, 12);
        assert_eq!(groups.rows, 100.0);
        assert_eq!(aggregate(&p, rows(50.0), &[None], 1, 12).rows, 50.0);
    }
}
