//! Selectivity: the fraction of a table's rows a WHERE clause keeps, by PostgreSQL 18's
//! rules (`clausesel.c`, `selfuncs.c`), from the statistics ANALYZE left in `pg_stats`.
//!
//! # A clause list (`clauselist_selectivity`)
//!
//! Conjuncts are taken as independent and their selectivities multiplied, except that a
//! lower and an upper bound on the same column (`a > 10 AND a <= 20`, BETWEEN) are paired:
//! their selectivity is `hi + lo − 1` (plus the column's null fraction, excluded twice),
//! since both were measured against the whole table. A pair where either side is a
//! default guess gets `DEFAULT_RANGE_INEQ_SEL` (0.005); a result at or below zero becomes
//! 1e-10 (or the default, when it is clearly negative — inconsistent statistics).
//!
//! # One clause
//!
//! * `col = const` (`var_eq_const`): the constant's frequency if it is a most common value;
//!   otherwise the rows neither NULL nor an MCV, shared equally by the other distinct
//!   values (`(1 − Σmcv − null_frac) / (n_distinct − #mcv)`), but never more than the
//!   least common MCV. Without statistics `1 / n_distinct`, where n_distinct is the row
//!   count for tables under 200 rows and 200 otherwise. `<>` is `1 − (=) − null_frac`.
//! * `col < const` and the other inequalities (`scalarineqsel`): the MCVs that satisfy the
//!   clause, plus the non-NULL non-MCV rows times the fraction of the histogram below the
//!   constant (`ineq_histogram_selectivity`): binary search for the constant's bucket,
//!   linear interpolation inside it (`convert_to_scalar`), one `1/n_distinct` step to turn
//!   `≤` into `<`, the first bucket widened by that step, and a clamp to a hundredth of a
//!   bucket. With no histogram, half of those rows. Without statistics 1/3.
//! * `IS NULL` / `IS NOT NULL`: the null fraction (0.005 / 0.995 without statistics).
//! * AND: the list rule; OR: `s1 + s2 − s1·s2` arm by arm; NOT: `1 − s`; `IN (…)`: the sum
//!   of the elements' `=`; LIKE and regular expressions 0.005; anything else 1/3.
//!
//! # Differences from PostgreSQL
//!
//! * Strings are placed within a histogram bucket by PostgreSQL's C-locale method
//!   (`convert_string_to_scalar`): drop the prefix the constant and both bounds share, read
//!   up to 12 following bytes as digits of a number in base (highest − lowest byte seen,
//!   widened to whole ASCII letter/digit ranges). iolab compares text bytewise, so this is
//!   its own order, not a simplification of a locale's.
//! * PostgreSQL replaces the histogram's end bounds with the column's actual minimum and
//!   maximum read from an index (`get_actual_variable_range`); iolab uses the bounds as
//!   ANALYZE stored them.
//! * No extended statistics, no boolean-column or function-specific estimators.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, InListExpr, LikeExpr, NotExpr};
use datafusion::physical_expr::PhysicalExpr;
use iolab_catalog::{ColumnDef, ColumnStatistics, StatValue, TableDef, TableStatistics};

use crate::plan::index_cond::{
    conjuncts, or_arms, param_clause, simple_clause, ClauseTest, CompareOp,
};

pub const DEFAULT_EQ_SEL: f64 = 0.005;
pub const DEFAULT_INEQ_SEL: f64 = 1.0 / 3.0;
pub const DEFAULT_RANGE_INEQ_SEL: f64 = 0.005;
pub const DEFAULT_MATCH_SEL: f64 = 0.005;
pub const DEFAULT_UNK_SEL: f64 = 0.005;
pub const DEFAULT_NOT_UNK_SEL: f64 = 1.0 - DEFAULT_UNK_SEL;
pub const DEFAULT_NUM_DISTINCT: f64 = 200.0;

/// What selectivity estimates know about one table: its columns, its estimated row count,
/// and the statistics of its analyzed columns.
#[derive(Clone, Debug, Default)]
pub struct RelStats {
    pub columns: Vec<ColumnDef>,
    /// The planner's row count (`rel->tuples`).
    pub tuples: f64,
    /// Statistics by table column number (0-based).
    stats: BTreeMap<usize, ColumnStatistics>,
}

impl RelStats {
    /// A table of `tuples` rows with the statistics ANALYZE gathered (if any).
    pub fn new(def: &TableDef, tuples: f64, stats: Option<TableStatistics>) -> RelStats {
        let stats = stats
            .map(|s| {
                s.columns
                    .into_values()
                    .filter(|c| c.attnum >= 1 && (c.attnum as usize) <= def.columns.len())
                    .map(|c| (c.attnum as usize - 1, c))
                    .collect()
            })
            .unwrap_or_default();
        RelStats {
            columns: def.columns.clone(),
            tuples,
            stats,
        }
    }

    /// Nothing known: PostgreSQL's defaults for every clause (for filters over the output
    /// of a join or an aggregate).
    pub fn unknown() -> RelStats {
        RelStats::default()
    }

    /// The statistics of table column `column`, if analyzed.
    pub fn column(&self, column: usize) -> Option<&ColumnStatistics> {
        self.stats.get(&column)
    }
}

/// `CLAMP_PROBABILITY`.
fn clamp_probability(s: f64) -> f64 {
    if s.is_nan() {
        0.0
    } else {
        s.clamp(0.0, 1.0)
    }
}

/// Bounds on one column met in a clause list, waiting to be paired.
#[derive(Default)]
struct RangePair {
    lower: Option<f64>,
    upper: Option<f64>,
}

/// The selectivity of the AND of `quals` (see the module comment).
pub fn clauselist_selectivity(quals: &[Arc<dyn PhysicalExpr>], rel: &RelStats) -> f64 {
    let mut product = 1.0;
    let mut ranges: BTreeMap<usize, RangePair> = BTreeMap::new();
    for qual in quals {
        let s = clause_selectivity(qual, rel);
        let bound = simple_clause(qual, &rel.columns).and_then(|c| match c.test {
            ClauseTest::Compare(CompareOp::Lt | CompareOp::Le, _) => Some((c.column, false)),
            ClauseTest::Compare(CompareOp::Gt | CompareOp::Ge, _) => Some((c.column, true)),
            _ => None,
        });
        let Some((column, is_lower)) = bound else {
            product *= s;
            continue;
        };
        let pair = ranges.entry(column).or_default();
        let slot = if is_lower {
            &mut pair.lower
        } else {
            &mut pair.upper
        };
        // Of two bounds on one side the more selective one counts (addRangeClause).
        *slot = Some(slot.map_or(s, |old| old.min(s)));
    }
    for (column, pair) in ranges {
        product *= match (pair.lower, pair.upper) {
            (Some(lo), Some(hi)) => {
                if lo == DEFAULT_INEQ_SEL || hi == DEFAULT_INEQ_SEL {
                    DEFAULT_RANGE_INEQ_SEL
                } else {
                    let s = hi + lo - 1.0 + null_selectivity(rel, column, true);
                    if s > 0.0 {
                        s
                    } else if s < -0.01 {
                        DEFAULT_RANGE_INEQ_SEL
                    } else {
                        1.0e-10
                    }
                }
            }
            (Some(s), None) | (None, Some(s)) => s,
            (None, None) => 1.0,
        };
    }
    clamp_probability(product)
}

/// The selectivity of one clause (see the module comment).
pub fn clause_selectivity(e: &Arc<dyn PhysicalExpr>, rel: &RelStats) -> f64 {
    if let Some(clause) = simple_clause(e, &rel.columns) {
        let column = clause.column;
        return match clause.test {
            ClauseTest::IsNull => null_selectivity(rel, column, true),
            ClauseTest::IsNotNull => null_selectivity(rel, column, false),
            ClauseTest::Compare(CompareOp::Eq, v) => eq_selectivity(rel, column, &v),
            ClauseTest::Compare(CompareOp::Ne, v) => {
                let null_frac = rel.column(column).map_or(0.0, |s| s.null_frac as f64);
                clamp_probability(1.0 - eq_selectivity(rel, column, &v) - null_frac)
            }
            ClauseTest::Compare(op, v) => ineq_selectivity(rel, column, op, &v),
        };
    }
    if let Some(p) = param_clause(e, &rel.columns) {
        return match p.op {
            CompareOp::Eq => eq_param_selectivity(rel, p.column),
            _ => DEFAULT_INEQ_SEL,
        };
    }
    let expr = e.as_ref();
    if let Some(b) = expr.downcast_ref::<BinaryExpr>() {
        return match b.op() {
            Operator::And => clauselist_selectivity(&conjuncts(e), rel),
            Operator::Or => or_arms(e)
                .unwrap_or_default()
                .iter()
                .map(|arm| clause_selectivity(arm, rel))
                .fold(0.0, |s1, s2| s1 + s2 - s1 * s2),
            Operator::Eq | Operator::IsNotDistinctFrom => DEFAULT_EQ_SEL,
            Operator::NotEq | Operator::IsDistinctFrom => 1.0 - DEFAULT_EQ_SEL,
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
    if let Some(l) = expr.downcast_ref::<LikeExpr>() {
        return if l.negated() {
            1.0 - DEFAULT_MATCH_SEL
        } else {
            DEFAULT_MATCH_SEL
        };
    }
    if let Some(n) = expr.downcast_ref::<NotExpr>() {
        return 1.0 - clause_selectivity(n.arg(), rel);
    }
    if let Some(i) = expr.downcast_ref::<InListExpr>() {
        return in_list_selectivity(i, rel);
    }
    if expr.is::<datafusion::physical_expr::expressions::IsNullExpr>() {
        return DEFAULT_UNK_SEL;
    }
    if expr.is::<datafusion::physical_expr::expressions::IsNotNullExpr>() {
        return DEFAULT_NOT_UNK_SEL;
    }
    DEFAULT_INEQ_SEL
}

/// `col IN (c1, c2, …)`: the sum of `col = ci` (the constants are distinct values, so the
/// matches are disjoint); NOT IN is the complement.
fn in_list_selectivity(i: &InListExpr, rel: &RelStats) -> f64 {
    let per_element: f64 = i
        .list()
        .iter()
        .map(|item| {
            let eq: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
                i.expr().clone(),
                Operator::Eq,
                item.clone(),
            ));
            clause_selectivity(&eq, rel)
        })
        .sum();
    let s = clamp_probability(per_element);
    if i.negated() {
        1.0 - s
    } else {
        s
    }
}

/// `nulltestsel`: IS NULL (`is_null`) or IS NOT NULL.
fn null_selectivity(rel: &RelStats, column: usize, is_null: bool) -> f64 {
    match rel.column(column) {
        Some(s) if is_null => s.null_frac as f64,
        Some(s) => 1.0 - s.null_frac as f64,
        None if is_null => DEFAULT_UNK_SEL,
        None => DEFAULT_NOT_UNK_SEL,
    }
}

/// `get_variable_numdistinct`: the number of distinct values of a column.
pub fn num_distinct(rel: &RelStats, column: usize) -> f64 {
    if let Some(s) = rel.column(column) {
        if s.n_distinct > 0.0 {
            return clamp_rows(s.n_distinct as f64);
        }
        if s.n_distinct < 0.0 && rel.tuples > 0.0 {
            return clamp_rows(-(s.n_distinct as f64) * rel.tuples);
        }
    }
    if rel.tuples > 0.0 && rel.tuples < DEFAULT_NUM_DISTINCT {
        return clamp_rows(rel.tuples);
    }
    DEFAULT_NUM_DISTINCT
}

/// `clamp_row_est`: at least one, a whole number.
pub fn clamp_rows(rows: f64) -> f64 {
    if rows.is_nan() || rows <= 1.0 {
        1.0
    } else {
        rows.round()
    }
}

/// `var_eq_const`.
fn eq_selectivity(rel: &RelStats, column: usize, value: &StatValue) -> f64 {
    let Some(stats) = rel.column(column) else {
        return 1.0 / num_distinct(rel, column);
    };
    if let Some(freq) = stats.mcv_frequency(value) {
        return freq;
    }
    let nmcv = stats.most_common().count() as f64;
    let mut s = clamp_probability(1.0 - stats.mcv_total_frequency() - stats.null_frac as f64);
    let other_distinct = num_distinct(rel, column) - nmcv;
    if other_distinct > 1.0 {
        s /= other_distinct;
    }
    if let Some((_, least)) = stats.most_common().last() {
        s = s.min(least);
    }
    s
}

/// `var_eq_non_const`: `col = value` for a value not known while planning (an InitPlan's):
/// the rows of one distinct value, at most the most common value's share.
fn eq_param_selectivity(rel: &RelStats, column: usize) -> f64 {
    let stats = rel.column(column);
    let mut s = 1.0 - stats.map_or(0.0, |s| s.null_frac as f64);
    let distinct = num_distinct(rel, column);
    if distinct > 1.0 {
        s /= distinct;
    }
    if let Some((_, most)) = stats.and_then(|s| s.most_common().next()) {
        s = s.min(most);
    }
    clamp_probability(s)
}

/// `scalarineqsel`: `col op value` for `<`, `<=`, `>`, `>=`.
fn ineq_selectivity(rel: &RelStats, column: usize, op: CompareOp, value: &StatValue) -> f64 {
    let Some(stats) = rel.column(column) else {
        return DEFAULT_INEQ_SEL;
    };
    let passes = |v: &StatValue| match op {
        CompareOp::Lt => v < value,
        CompareOp::Le => v <= value,
        CompareOp::Gt => v > value,
        CompareOp::Ge => v >= value,
        CompareOp::Eq | CompareOp::Ne => unreachable!("not an inequality"),
    };
    let mcv_selec: f64 = stats
        .most_common()
        .filter(|(v, _)| passes(v))
        .map(|(_, f)| f)
        .sum();
    let mut s = 1.0 - stats.null_frac as f64 - stats.mcv_total_frequency();
    s *= histogram_selectivity(rel, column, stats, op, value).unwrap_or(0.5);
    clamp_probability(s + mcv_selec)
}

/// `ineq_histogram_selectivity`: the fraction of the histogram's population satisfying
/// `col op value`; `None` without a histogram.
fn histogram_selectivity(
    rel: &RelStats,
    column: usize,
    stats: &ColumnStatistics,
    op: CompareOp,
    value: &StatValue,
) -> Option<f64> {
    let hist = stats.histogram_bounds();
    let n = hist.len();
    if n < 2 {
        return None;
    }
    let is_gt = matches!(op, CompareOp::Gt | CompareOp::Ge);
    let is_eq = matches!(op, CompareOp::Le | CompareOp::Ge);
    // The first bound for which `bound op value` fails (`<`, `<=`) or holds (`>`, `>=`).
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let probe = (lo + hi) / 2;
        let b = &hist[probe];
        let holds = match op {
            CompareOp::Lt => b < value,
            CompareOp::Le => b <= value,
            CompareOp::Gt => b > value,
            _ => b >= value,
        };
        if holds != is_gt {
            lo = probe + 1;
        } else {
            hi = probe;
        }
    }
    let hist_frac = if lo == 0 {
        0.0
    } else if lo >= n {
        1.0
    } else {
        let i = lo;
        let eq_selec = if i == 1 || is_gt == is_eq {
            let other = num_distinct(rel, column) - stats.most_common().count() as f64;
            if other > 1.0 {
                1.0 / other
            } else {
                0.0
            }
        } else {
            0.0
        };
        let bin_frac = match convert_to_scalar(value, &hist[i - 1], &hist[i]) {
            Some((val, low, high)) => {
                if high <= low {
                    0.5
                } else if val <= low {
                    0.0
                } else if val >= high {
                    1.0
                } else {
                    let f = (val - low) / (high - low);
                    if f.is_nan() || !(0.0..=1.0).contains(&f) {
                        0.5
                    } else {
                        f
                    }
                }
            }
            None => 0.5,
        };
        // The fraction of the histogram ≤ value; the first bucket holds its lower bound.
        let mut f = ((i - 1) as f64 + bin_frac) / (n - 1) as f64;
        if i == 1 {
            f += eq_selec * (1.0 - bin_frac);
        }
        if is_gt == is_eq {
            f -= eq_selec; // `<` and `>=` exclude the value itself from `≤`
        }
        f
    };
    let s = if is_gt { 1.0 - hist_frac } else { hist_frac };
    // Histograms are approximate and may be stale: no estimate beyond a hundredth of a
    // bucket from 0 or 1.
    let cutoff = 0.01 / (n - 1) as f64;
    Some(s.clamp(cutoff, 1.0 - cutoff))
}

/// `convert_to_scalar`: the value and the bucket's bounds on one numeric scale, for
/// interpolation; `None` when they cannot be (values of different kinds).
pub fn convert_to_scalar(
    value: &StatValue,
    low: &StatValue,
    high: &StatValue,
) -> Option<(f64, f64, f64)> {
    let number = |v: &StatValue| match v {
        StatValue::Bool(b) => Some(*b as u8 as f64),
        other => other.to_scalar(),
    };
    match (value, low, high) {
        (StatValue::Text(v), StatValue::Text(l), StatValue::Text(h)) => {
            Some(strings_to_scalars(v.as_bytes(), l.as_bytes(), h.as_bytes()))
        }
        _ => Some((number(value)?, number(low)?, number(high)?)),
    }
}

/// `convert_string_to_scalar` in the C locale (see the module comment).
fn strings_to_scalars(value: &[u8], low: &[u8], high: &[u8]) -> (f64, f64, f64) {
    let (mut range_lo, mut range_hi) = (u8::MAX, 0u8);
    for &c in low.iter().chain(high) {
        range_lo = range_lo.min(c);
        range_hi = range_hi.max(c);
    }
    if low.is_empty() && high.is_empty() {
        (range_lo, range_hi) = (0, 0);
    }
    for (first, last) in [(b'A', b'Z'), (b'a', b'z'), (b'0', b'9')] {
        if range_lo <= last && range_hi >= first {
            range_lo = range_lo.min(first);
            range_hi = range_hi.max(last);
        }
    }
    if range_hi.saturating_sub(range_lo) < 9 {
        (range_lo, range_hi) = (b' ', 127);
    }
    let common = low
        .iter()
        .zip(high)
        .zip(value)
        .take_while(|((l, h), v)| l == h && h == v)
        .count();
    let scalar = |s: &[u8]| {
        let base = (range_hi as f64) - (range_lo as f64) + 1.0;
        let mut num = 0.0;
        let mut denom = base;
        for &c in s[common..].iter().take(12) {
            let c = if c < range_lo {
                range_lo as f64 - 1.0
            } else if c > range_hi {
                range_hi as f64 + 1.0
            } else {
                c as f64
            };
            num += (c - range_lo as f64) / denom;
            denom *= base;
        }
        num
    };
    (scalar(value), scalar(low), scalar(high))
}

#[cfg(test)]
mod tests {
    use datafusion::physical_expr::expressions::{Column, IsNullExpr, Literal};
    use datafusion::scalar::ScalarValue;
    use iolab_catalog::{MostCommonValues, Persistence, PgType};

    use super::*;

    /// `t(a int)` of 1000 rows whose `a` has: null_frac 0.1, n_distinct 10, MCVs 1 (0.3) and
    /// 2 (0.2), histogram 0, 10, 20, 30, 40 — the example every expected value below is
    /// worked out from by hand with PostgreSQL's formulas.
    fn rel() -> RelStats {
        let def = TableDef {
            oid: 1,
            schema: "public".into(),
            name: "t".into(),
            relfilenode: 1,
            persistence: Persistence::Permanent,
            columns: vec![ColumnDef {
                name: "a".into(),
                ty: PgType::Int4,
                not_null: false,
            }],
            reltuples: 1000.0,
            relpages: 10,
            stored: Default::default(),
            reloptions: Vec::new(),
        };
        let a = ColumnStatistics {
            attnum: 1,
            ty: PgType::Int4,
            null_frac: 0.1,
            avg_width: 4,
            n_distinct: 10.0,
            mcv: Some(MostCommonValues {
                values: vec![StatValue::Int(1), StatValue::Int(2)],
                freqs: vec![0.3, 0.2],
            }),
            histogram: Some((0..5).map(|i| StatValue::Int(i * 10)).collect()),
            correlation: Some(0.5),
        };
        let mut stats = TableStatistics::default();
        stats.columns.insert(1, a);
        RelStats::new(&def, 1000.0, Some(stats))
    }

    fn cmp(op: Operator, v: i32) -> Arc<dyn PhysicalExpr> {
        Arc::new(BinaryExpr::new(
            Arc::new(Column::new("a", 0)),
            op,
            Arc::new(Literal::new(ScalarValue::Int32(Some(v)))),
        ))
    }

    fn sel(quals: &[Arc<dyn PhysicalExpr>], rel: &RelStats) -> f64 {
        clauselist_selectivity(quals, rel)
    }

    fn close(a: f64, b: f64) {
        assert!((a - b).abs() < 1e-6, "{a} ≠ {b}");
    }

    #[test]
    fn equality_uses_mcvs_then_the_other_distinct_values() {
        let rel = rel();
        close(sel(&[cmp(Operator::Eq, 1)], &rel), 0.3);
        // Not an MCV: (1 − 0.5 − 0.1) / (10 − 2).
        close(sel(&[cmp(Operator::Eq, 5)], &rel), 0.05);
        // <>: 1 − 0.05 − 0.1.
        close(sel(&[cmp(Operator::NotEq, 5)], &rel), 0.85);
    }

    #[test]
    fn inequalities_interpolate_in_the_histogram() {
        let rel = rel();
        // a < 25: bucket 3 (20..30), binfrac 0.5: (2 + 0.5)/4 = 0.625, minus 1/8 for "<":
        // 0.5 of the 0.4 of rows in the histogram, plus the MCVs 1 and 2 (0.5).
        close(sel(&[cmp(Operator::Lt, 25)], &rel), 0.4 * 0.5 + 0.5);
        close(sel(&[cmp(Operator::LtEq, 25)], &rel), 0.4 * 0.625 + 0.5);
        close(sel(&[cmp(Operator::Gt, 25)], &rel), 0.4 * 0.375);
        close(sel(&[cmp(Operator::GtEq, 25)], &rel), 0.4 * 0.5);
        // The constant on the left: 25 > a is a < 25.
        let flipped: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
            Arc::new(Literal::new(ScalarValue::Int32(Some(25)))),
            Operator::Gt,
            Arc::new(Column::new("a", 0)),
        ));
        close(sel(&[flipped], &rel), 0.7);
        // The first bucket holds its lower bound: a < 5 is (0.5 + 1/8 × 0.5)/4 − 1/8.
        close(sel(&[cmp(Operator::Lt, 5)], &rel), 0.4 * 0.0625 + 0.5);
        // Below the histogram: clamped to a hundredth of a bucket.
        close(sel(&[cmp(Operator::Lt, -5)], &rel), 0.4 * 0.0025);
    }

    #[test]
    fn a_range_pairs_its_bounds() {
        let rel = rel();
        // a >= 10: 0.4 × 0.875; a < 30: 0.4 × 0.625 + 0.5; paired: 0.35 + 0.75 − 1 + 0.1.
        let lo = sel(&[cmp(Operator::GtEq, 10)], &rel);
        let hi = sel(&[cmp(Operator::Lt, 30)], &rel);
        close(lo, 0.35);
        close(hi, 0.75);
        close(
            sel(&[cmp(Operator::GtEq, 10), cmp(Operator::Lt, 30)], &rel),
            0.2,
        );
        // Without statistics the pair is DEFAULT_RANGE_INEQ_SEL, not (1/3)².
        let unknown = RelStats {
            stats: BTreeMap::new(),
            ..rel
        };
        close(
            sel(&[cmp(Operator::GtEq, 10), cmp(Operator::Lt, 30)], &unknown),
            DEFAULT_RANGE_INEQ_SEL,
        );
    }

    #[test]
    fn nulls_and_defaults() {
        let rel = rel();
        let is_null: Arc<dyn PhysicalExpr> =
            Arc::new(IsNullExpr::new(Arc::new(Column::new("a", 0))));
        close(sel(&[is_null.clone()], &rel), 0.1);
        let unknown = RelStats {
            stats: BTreeMap::new(),
            ..rel.clone()
        };
        close(sel(&[is_null], &unknown), DEFAULT_UNK_SEL);
        close(sel(&[cmp(Operator::Lt, 3)], &unknown), DEFAULT_INEQ_SEL);
        // = without statistics: 1/200 for a table of 200 rows or more, 1/rows below.
        close(sel(&[cmp(Operator::Eq, 3)], &unknown), 1.0 / 200.0);
        let small = RelStats {
            tuples: 50.0,
            ..unknown
        };
        close(sel(&[cmp(Operator::Eq, 3)], &small), 1.0 / 50.0);
        // OR: s1 + s2 − s1·s2.
        let or: Arc<dyn PhysicalExpr> = Arc::new(BinaryExpr::new(
            cmp(Operator::Eq, 1),
            Operator::Or,
            cmp(Operator::Eq, 2),
        ));
        close(sel(&[or], &rel), 0.3 + 0.2 - 0.06);
    }

    #[test]
    fn strings_interpolate_after_their_common_prefix() {
        // 'k5' between 'k1' and 'k9': the prefix 'k' dropped, the digits are evenly spaced.
        let (v, lo, hi) = convert_to_scalar(
            &StatValue::Text("k5".into()),
            &StatValue::Text("k1".into()),
            &StatValue::Text("k9".into()),
        )
        .unwrap();
        close((v - lo) / (hi - lo), 0.5);
        // Ordered as the bytes are.
        let (v, lo, hi) = convert_to_scalar(
            &StatValue::Text("apple".into()),
            &StatValue::Text("a".into()),
            &StatValue::Text("b".into()),
        )
        .unwrap();
        assert!(lo < v && v < hi, "{lo} {v} {hi}");
    }
}
