//! A WindowAgg's frame as PostgreSQL 18 writes it in `Window: w1 AS (…)`.
//!
//! PostgreSQL leaves the frame out when it is the default (`RANGE UNBOUNDED PRECEDING`
//! to the current row and its peers, the whole partition without ORDER BY), except that
//! since version 16 the planner gives a window whose functions all ignore the frame
//! (`row_number`, `rank`, `dense_rank`, `percent_rank`, `cume_dist`, `ntile`) the
//! cheapest frame, `ROWS UNBOUNDED PRECEDING`, and shows it. Row and group offsets are
//! bigint constants (`ROWS BETWEEN '1'::bigint PRECEDING AND '1'::bigint FOLLOWING`); an
//! end at the current row is left out (`ROWS '3'::bigint PRECEDING`), since DataFusion does
//! not keep whether the query wrote `BETWEEN … AND CURRENT ROW`.

use datafusion::logical_expr::{WindowFrame, WindowFrameBound, WindowFrameUnits};
use datafusion::scalar::ScalarValue;

use crate::explain::exprs::literal;

/// The functions whose value does not depend on the frame.
const FRAME_INDEPENDENT: [&str; 6] = [
    "row_number",
    "rank",
    "dense_rank",
    "percent_rank",
    "cume_dist",
    "ntile",
];

/// The frame clause of a window computing `functions` over `frame`, or None when
/// PostgreSQL would not show one.
pub fn frame_clause(functions: &[&str], frame: &WindowFrame, ordered: bool) -> Option<String> {
    if !functions.is_empty() && functions.iter().all(|f| FRAME_INDEPENDENT.contains(f)) {
        return Some("ROWS UNBOUNDED PRECEDING".into());
    }
    let unbounded = |b: &WindowFrameBound| match b {
        WindowFrameBound::Preceding(v) | WindowFrameBound::Following(v) => v.is_null(),
        WindowFrameBound::CurrentRow => false,
    };
    let from_start = matches!(&frame.start_bound, WindowFrameBound::Preceding(v) if v.is_null());
    let to_current = matches!(frame.end_bound, WindowFrameBound::CurrentRow);
    let to_end = matches!(&frame.end_bound, WindowFrameBound::Following(v) if v.is_null());
    let default = match ordered {
        true => frame.units == WindowFrameUnits::Range && from_start && to_current,
        false => from_start && (to_end || to_current && frame.units != WindowFrameUnits::Rows),
    };
    if default {
        return None;
    }
    let units = match frame.units {
        WindowFrameUnits::Rows => "ROWS",
        WindowFrameUnits::Range => "RANGE",
        WindowFrameUnits::Groups => "GROUPS",
    };
    let bound = |b: &WindowFrameBound| match b {
        WindowFrameBound::CurrentRow => "CURRENT ROW".to_string(),
        WindowFrameBound::Preceding(_) if unbounded(b) => "UNBOUNDED PRECEDING".into(),
        WindowFrameBound::Following(_) if unbounded(b) => "UNBOUNDED FOLLOWING".into(),
        WindowFrameBound::Preceding(v) => format!("{} PRECEDING", offset(frame.units, v)),
        WindowFrameBound::Following(v) => format!("{} FOLLOWING", offset(frame.units, v)),
    };
    let start = bound(&frame.start_bound);
    Some(match to_current {
        true => format!("{units} {start}"),
        false => format!("{units} BETWEEN {start} AND {}", bound(&frame.end_bound)),
    })
}

/// A frame offset: a bigint for ROWS and GROUPS, the ordering column's type for RANGE.
fn offset(units: WindowFrameUnits, v: &ScalarValue) -> String {
    match (
        units,
        v.cast_to(&datafusion::arrow::datatypes::DataType::Int64),
    ) {
        (WindowFrameUnits::Rows | WindowFrameUnits::Groups, Ok(ScalarValue::Int64(Some(n)))) => {
            format!("'{n}'::bigint")
        }
        _ => literal(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(
        units: WindowFrameUnits,
        start: WindowFrameBound,
        end: WindowFrameBound,
    ) -> WindowFrame {
        WindowFrame::new_bounds(units, start, end)
    }

    #[test]
    fn frames_as_postgres_writes_them() {
        let unbounded = || WindowFrameBound::Preceding(ScalarValue::UInt64(None));
        let ordered_default = WindowFrame::new(Some(false));
        assert_eq!(frame_clause(&["sum"], &ordered_default, true), None);
        assert_eq!(frame_clause(&["sum"], &WindowFrame::new(None), false), None);
        assert_eq!(
            frame_clause(&["row_number"], &ordered_default, true).as_deref(),
            Some("ROWS UNBOUNDED PRECEDING")
        );
        // One function that reads the frame keeps the window's own.
        assert_eq!(frame_clause(&["rank", "sum"], &ordered_default, true), None);
        let rows = frame(
            WindowFrameUnits::Rows,
            WindowFrameBound::Preceding(ScalarValue::UInt64(Some(1))),
            WindowFrameBound::Following(ScalarValue::UInt64(Some(1))),
        );
        assert_eq!(
            frame_clause(&["sum"], &rows, true).as_deref(),
            Some("ROWS BETWEEN '1'::bigint PRECEDING AND '1'::bigint FOLLOWING")
        );
        let three = frame(
            WindowFrameUnits::Rows,
            WindowFrameBound::Preceding(ScalarValue::UInt64(Some(3))),
            WindowFrameBound::CurrentRow,
        );
        assert_eq!(
            frame_clause(&["avg"], &three, true).as_deref(),
            Some("ROWS '3'::bigint PRECEDING")
        );
        let whole = frame(
            WindowFrameUnits::Range,
            unbounded(),
            WindowFrameBound::Following(ScalarValue::UInt64(None)),
        );
        assert_eq!(
            frame_clause(&["sum"], &whole, true).as_deref(),
            Some("RANGE BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING")
        );
    }
}
