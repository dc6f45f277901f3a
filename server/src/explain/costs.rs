//! Planner estimates for `EXPLAIN`'s `(cost=… rows=… width=…)`, until iolab has a cost
//! model of its own: PostgreSQL 18's formulas (`costsize.c`) for a table without
//! statistics, so a freshly loaded table shows the numbers PostgreSQL would show before
//! its first ANALYZE.
//!
//! - Size: `reltuples`/`relpages` once known, else PostgreSQL's guess from the file's block
//!   count and the tuple width (`table_block_relation_estimate_size`, with its
//!   10-page minimum for a never-vacuumed table).
//! - Seq Scan: `seq_page_cost × pages + cpu_tuple_cost × tuples`, plus `cpu_operator_cost`
//!   per operator of the filter per tuple.
//! - Selectivity without statistics: `=` 0.005, `<>` 0.995, `<` `>` `<=` `>=` 1/3, LIKE
//!   0.005, IS NULL 0.005; AND multiplies, OR adds less the overlap, NOT complements.
//! - Aggregate, Sort (in memory, bounded or external), Limit, Hash Join, Nested Loop,
//!   Append, Values: PostgreSQL's formulas in simplified form.
//!
//! Everything here is one replaceable module: nothing else computes a cost.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{
    BinaryExpr, CaseExpr, CastExpr, InListExpr, IsNotNullExpr, IsNullExpr, LikeExpr, NotExpr,
    TryCastExpr,
};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use iolab_catalog::{PgType, TableDef};
use iolab_settings::SessionSettings;

use crate::explain::node::Costs;

const BLCKSZ: f64 = 8192.0;
const DEFAULT_EQ_SEL: f64 = 0.005;
const DEFAULT_INEQ_SEL: f64 = 1.0 / 3.0;
const DEFAULT_MATCH_SEL: f64 = 0.005;
const DEFAULT_UNK_SEL: f64 = 0.005;
const DEFAULT_NUM_DISTINCT: f64 = 200.0;

/// The cost settings of the session.
#[derive(Clone, Copy, Debug)]
pub struct CostParams {
    pub seq_page_cost: f64,
    pub random_page_cost: f64,
    pub cpu_tuple_cost: f64,
    pub cpu_operator_cost: f64,
    pub work_mem_bytes: f64,
}

impl CostParams {
    pub fn from_settings(s: &SessionSettings) -> CostParams {
        CostParams {
            seq_page_cost: s.seq_page_cost(),
            random_page_cost: s.random_page_cost(),
            cpu_tuple_cost: s.cpu_tuple_cost(),
            cpu_operator_cost: s.cpu_operator_cost(),
            work_mem_bytes: s.work_mem_kb() as f64 * 1024.0,
        }
    }
}

impl Default for CostParams {
    /// PostgreSQL's defaults.
    fn default() -> Self {
        CostParams {
            seq_page_cost: 1.0,
            random_page_cost: 4.0,
            cpu_tuple_cost: 0.01,
            cpu_operator_cost: 0.0025,
            work_mem_bytes: 4.0 * 1024.0 * 1024.0,
        }
    }
}

/// `clamp_row_est`: at least one row, a whole number.
pub fn clamp_rows(rows: f64) -> f64 {
    if rows.is_nan() || rows <= 1.0 {
        1.0
    } else {
        rows.round()
    }
}

/// (pages, tuples) the planner assumes for a table whose file has `file_blocks` blocks.
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
        clamp_rows(((BLCKSZ as i64 - 24) / tuple_width) as f64)
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
        PgType::Numeric { precision, .. } if !ty.is_unconstrained_numeric() => {
            // NUMERIC_HDRSZ + base-10000 digits of 2 bytes
            bounded(8 + ((*precision as i64 + 6) / 4) * 2)
        }
        PgType::Varchar(Some(n)) => bounded(*n as i64 * 4 + 4),
        PgType::Bpchar(n) => *n as i64 * 4 + 4,
        PgType::Numeric { .. } | PgType::Text | PgType::Varchar(None) => 32,
    }
}

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

pub fn seq_scan(p: &CostParams, pages: f64, tuples: f64, width: i64) -> Costs {
    Costs {
        startup: 0.0,
        total: p.seq_page_cost * pages + p.cpu_tuple_cost * tuples,
        rows: tuples,
        width,
    }
}

/// A node's own filter: its evaluation cost per input row and its selectivity.
pub fn filter(p: &CostParams, input: Costs, quals: &[Arc<dyn PhysicalExpr>]) -> Costs {
    let ops: f64 = quals.iter().map(operators).sum();
    let sel: f64 = quals.iter().map(selectivity).product();
    Costs {
        startup: input.startup,
        total: input.total + p.cpu_operator_cost * ops * input.rows,
        rows: clamp_rows(input.rows * sel),
        width: input.width,
    }
}

/// `cost_qual_eval`: one `cpu_operator_cost` per operator or function call; AND, OR, NOT
/// and IS NULL are free; `= ANY (array)` costs half an operator per element.
fn operators(e: &Arc<dyn PhysicalExpr>) -> f64 {
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

/// The fraction of rows a qual keeps, with PostgreSQL's defaults for unknown data.
pub fn selectivity(e: &Arc<dyn PhysicalExpr>) -> f64 {
    let e = e.as_ref();
    if let Some(b) = e.downcast_ref::<BinaryExpr>() {
        return match b.op() {
            Operator::And => selectivity(b.left()) * selectivity(b.right()),
            Operator::Or => {
                let (l, r) = (selectivity(b.left()), selectivity(b.right()));
                l + r - l * r
            }
            Operator::Eq | Operator::IsNotDistinctFrom => DEFAULT_EQ_SEL,
            Operator::NotEq | Operator::IsDistinctFrom => 1.0 - DEFAULT_EQ_SEL,
            Operator::Lt | Operator::LtEq | Operator::Gt | Operator::GtEq => DEFAULT_INEQ_SEL,
            Operator::LikeMatch
            | Operator::ILikeMatch
            | Operator::RegexMatch
            | Operator::RegexIMatch => DEFAULT_MATCH_SEL,
            Operator::NotLikeMatch
            | Operator::NotILikeMatch
            | Operator::RegexNotMatch
            | Operator::RegexNotIMatch => 1.0 - DEFAULT_MATCH_SEL,
            _ => DEFAULT_INEQ_SEL,
        };
    }
    if let Some(l) = e.downcast_ref::<LikeExpr>() {
        return if l.negated() {
            1.0 - DEFAULT_MATCH_SEL
        } else {
            DEFAULT_MATCH_SEL
        };
    }
    if let Some(n) = e.downcast_ref::<NotExpr>() {
        return 1.0 - selectivity(n.arg());
    }
    if e.is::<IsNullExpr>() {
        return DEFAULT_UNK_SEL;
    }
    if e.is::<IsNotNullExpr>() {
        return 1.0 - DEFAULT_UNK_SEL;
    }
    if let Some(i) = e.downcast_ref::<InListExpr>() {
        let s = (DEFAULT_EQ_SEL * i.list().len() as f64).min(1.0);
        return if i.negated() { 1.0 - s } else { s };
    }
    DEFAULT_INEQ_SEL
}

/// An aggregate: plain (no GROUP BY, one row) or hashed (one row per group).
pub fn aggregate(
    p: &CostParams,
    input: Costs,
    group_columns: usize,
    aggregates: usize,
    width: i64,
) -> Costs {
    let per_row = p.cpu_operator_cost * (group_columns + aggregates.max(1)) as f64;
    let startup = input.total + per_row * input.rows;
    if group_columns == 0 {
        return Costs {
            startup,
            total: startup + p.cpu_tuple_cost,
            rows: 1.0,
            width,
        };
    }
    let groups = clamp_rows(
        DEFAULT_NUM_DISTINCT
            .min(input.rows)
            .powi(group_columns as i32)
            .min(input.rows),
    );
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
    let tuples = input.rows.max(2.0);
    let comparison = 2.0 * p.cpu_operator_cost;
    let tuple_bytes = |rows: f64| rows * (maxalign(input.width) + 24.0);
    let input_bytes = tuple_bytes(tuples);
    let output_rows = limit.map(|l| (l as f64).min(tuples)).unwrap_or(tuples);
    let output_bytes = if limit.is_some() {
        tuple_bytes(output_rows)
    } else {
        input_bytes
    };
    let startup = if output_bytes > p.work_mem_bytes {
        let pages = (input_bytes / BLCKSZ).ceil();
        let runs = input_bytes / p.work_mem_bytes;
        let merge_order = (p.work_mem_bytes / (3.0 * BLCKSZ))
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
    Costs {
        startup: input.total + startup,
        total: input.total + startup + p.cpu_operator_cost * tuples,
        rows: input.rows,
        width: input.width,
    }
}

fn maxalign(width: i64) -> f64 {
    ((width + 7) / 8 * 8) as f64
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

/// Rows of an equi-join without statistics: 1/max(distinct values) per clause, where a
/// side has at most 200 distinct values.
fn join_rows(outer: &Costs, inner: &Costs, clauses: usize) -> f64 {
    let distinct = |rows: f64| rows.clamp(1.0, DEFAULT_NUM_DISTINCT);
    let sel = 1.0 / distinct(outer.rows).max(distinct(inner.rows));
    clamp_rows(outer.rows * inner.rows * sel.powi(clauses as i32))
}

/// A hash join (build `inner`, probe with `outer`).
pub fn hash_join(p: &CostParams, outer: Costs, inner: Costs, clauses: usize, width: i64) -> Costs {
    let clauses_f = clauses.max(1) as f64;
    let rows = join_rows(&outer, &inner, clauses);
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
    use iolab_catalog::{ColumnDef, Persistence};

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
        let a = aggregate(&p, scan, 0, 1, 8);
        assert_eq!(
            format!("{:.2}..{:.2}", a.startup, a.total),
            "4167.00..4167.01"
        );
    }
}
