//! The time range a statement asks of a history view, from its filters on `time`.
//!
//! A dashboard panel reads a window of the history (`$__timeFilter(time)` expands to
//! `time BETWEEN '…' AND '…'`); the ring holds up to an hour or more. DataFusion hands a
//! view the filters it may use to skip rows ([`TableProvider::supports_filters_pushdown`]);
//! the history views accept comparisons of `time` with a timestamp constant as *inexact*
//! — DataFusion still applies them to the rows it gets — and build only the samples in
//! the range those comparisons allow. So the range only has to include every row the
//! filters keep: bounds are widened to whole microseconds, and a filter that is not
//! understood leaves its side open.
//!
//! ```text
//!   time >= '10:00:00'  AND  time BETWEEN '09:00' AND '10:30'  AND  reads > 0
//!   └─ from 10:00:00 ─┘      └──── 09:00 … 10:30 ─────────┘        (not a time filter)
//!   range = 10:00:00 … 10:30 (µs, both ends inclusive)
//! ```
//!
//! [`TableProvider::supports_filters_pushdown`]: datafusion::catalog::TableProvider::supports_filters_pushdown

use datafusion::common::tree_node::TreeNode;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Operator};
use datafusion::scalar::ScalarValue;

/// The column the history views are filtered on.
const TIME_COLUMN: &str = "time";

/// An inclusive range of microseconds since the epoch; either end may be open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeRange {
    pub from_us: Option<i64>,
    pub to_us: Option<i64>,
}

impl TimeRange {
    /// The range that keeps every row all of `filters` keep (the whole history when none
    /// is a comparison of `time` with a constant).
    pub fn of_filters(filters: &[Expr]) -> TimeRange {
        let mut range = TimeRange::default();
        for f in filters {
            if let Some(r) = range_of(f) {
                range = range.and(r);
            }
        }
        range
    }

    /// Can DataFusion hand `filter` to a history view? (It narrows the range, or will
    /// once the statement's parameters are bound.)
    pub fn understands(filter: &Expr) -> bool {
        range_of(filter).is_some() || compares_time_with_parameters(filter)
    }

    pub fn contains(&self, us: i64) -> bool {
        self.from_us.is_none_or(|f| us >= f) && self.to_us.is_none_or(|t| us <= t)
    }

    fn and(self, other: TimeRange) -> TimeRange {
        let tighter = |a: Option<i64>, b: Option<i64>, pick: fn(i64, i64) -> i64| match (a, b) {
            (Some(a), Some(b)) => Some(pick(a, b)),
            (a, b) => a.or(b),
        };
        TimeRange {
            from_us: tighter(self.from_us, other.from_us, i64::max),
            to_us: tighter(self.to_us, other.to_us, i64::min),
        }
    }
}

/// The range of one filter, if it compares `time` with a timestamp constant.
fn range_of(filter: &Expr) -> Option<TimeRange> {
    match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (op, value) = if is_time(left) {
                (*op, right)
            } else if is_time(right) {
                (op.swap()?, left)
            } else {
                return None;
            };
            let (down, up) = micros(value)?;
            let from = TimeRange {
                from_us: Some(down),
                to_us: None,
            };
            let to = TimeRange {
                from_us: None,
                to_us: Some(up),
            };
            match op {
                Operator::Gt | Operator::GtEq => Some(from),
                Operator::Lt | Operator::LtEq => Some(to),
                Operator::Eq => Some(from.and(to)),
                _ => None,
            }
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) if is_time(expr) => Some(TimeRange {
            from_us: Some(micros(low)?.0),
            to_us: Some(micros(high)?.1),
        }),
        _ => None,
    }
}

/// Does `filter` compare `time` with an expression of `$n` parameters? A cached plan
/// (`sql::plan_cache`) has those where the statement had constants; each run binds
/// and folds them into the constants [`range_of`] reads.
fn compares_time_with_parameters(filter: &Expr) -> bool {
    let comparable = |e: &Expr| micros(e).is_some() || is_parameter_expression(e);
    match filter {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            matches!(
                op,
                Operator::Gt | Operator::GtEq | Operator::Lt | Operator::LtEq | Operator::Eq
            ) && ((is_time(left) && is_parameter_expression(right))
                || (is_time(right) && is_parameter_expression(left)))
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => {
            is_time(expr)
                && comparable(low)
                && comparable(high)
                && (is_parameter_expression(low) || is_parameter_expression(high))
        }
        _ => false,
    }
}

/// An expression of parameters and constants, without columns.
fn is_parameter_expression(e: &Expr) -> bool {
    let has_parameter = e
        .exists(|x| Ok(matches!(x, Expr::Placeholder(_))))
        .unwrap_or(false);
    has_parameter && !e.any_column_refs()
}

/// Is `e` the `time` column, perhaps cast to another timestamp type?
fn is_time(e: &Expr) -> bool {
    match e {
        Expr::Column(c) => c.name == TIME_COLUMN,
        Expr::Cast(c) => is_time(&c.expr),
        Expr::TryCast(c) => is_time(&c.expr),
        _ => false,
    }
}

/// A timestamp constant in microseconds, rounded down and up (equal but for nanoseconds).
fn micros(e: &Expr) -> Option<(i64, i64)> {
    let Expr::Literal(value, _) = e else {
        return None;
    };
    let whole = |v: i64, per_us: i64| Some((v.div_euclid(per_us), -(-v).div_euclid(per_us)));
    match value {
        ScalarValue::TimestampSecond(Some(s), _) => s.checked_mul(1_000_000).map(|v| (v, v)),
        ScalarValue::TimestampMillisecond(Some(ms), _) => ms.checked_mul(1000).map(|v| (v, v)),
        ScalarValue::TimestampMicrosecond(Some(us), _) => Some((*us, *us)),
        ScalarValue::TimestampNanosecond(Some(ns), _) => whole(*ns, 1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::{col, lit};

    fn at_us(us: i64) -> Expr {
        lit(ScalarValue::TimestampMicrosecond(
            Some(us),
            Some("+00:00".into()),
        ))
    }

    #[test]
    fn comparisons_and_between_narrow_the_range() {
        let filters = [
            col("time").gt_eq(at_us(100)),
            col("time").between(at_us(50), at_us(300)),
            at_us(250).gt(col("time")), // 250 > time: an upper bound
            col("reads").gt(lit(0i64)),
        ];
        let r = TimeRange::of_filters(&filters);
        assert_eq!(
            r,
            TimeRange {
                from_us: Some(100),
                to_us: Some(250)
            }
        );
        assert!(r.contains(100) && r.contains(250) && !r.contains(99) && !r.contains(251));
        assert!(!TimeRange::understands(&filters[3]));
    }

    #[test]
    fn nanoseconds_widen_to_whole_microseconds_and_casts_are_seen_through() {
        let ns = |v: i64| lit(ScalarValue::TimestampNanosecond(Some(v), None));
        let cast = datafusion::logical_expr::cast(
            col("time"),
            datafusion::arrow::datatypes::DataType::Timestamp(
                datafusion::arrow::datatypes::TimeUnit::Nanosecond,
                None,
            ),
        );
        let r = TimeRange::of_filters(&[cast.clone().gt(ns(1500)), cast.lt_eq(ns(7500))]);
        assert_eq!(
            r,
            TimeRange {
                from_us: Some(1),
                to_us: Some(8)
            }
        );
    }

    #[test]
    fn filters_it_does_not_understand_leave_the_range_open() {
        let filters = [
            col("time").not_eq(at_us(5)),
            col("interval_s").gt(lit(1.0)),
            col("time").gt(col("time")),
        ];
        assert_eq!(TimeRange::of_filters(&filters), TimeRange::default());
        assert!(filters.iter().all(|f| !TimeRange::understands(f)));
    }

    #[test]
    fn comparisons_with_parameters_are_taken_for_later() {
        use datafusion::logical_expr::placeholder;
        let p = |n: &str| placeholder(n);
        assert!(TimeRange::understands(&col("time").gt_eq(p("$1"))));
        assert!(TimeRange::understands(
            &col("time").between(p("$1"), at_us(9))
        ));
        assert!(TimeRange::understands(&p("$2").lt(col("time"))));
        assert!(!TimeRange::understands(
            &col("time").gt(p("$1") + col("reads"))
        ));
        assert!(!TimeRange::understands(&col("reads").gt(p("$1"))));
        // Unbound, they do not narrow anything.
        assert_eq!(
            TimeRange::of_filters(&[col("time").gt_eq(p("$1"))]),
            TimeRange::default()
        );
    }
}
