//! The order of a node's filter conditions, as PostgreSQL's planner puts them and EXPLAIN
//! shows them: equalities go after the rest (the planner rebuilds them from its
//! equivalence classes and appends them), then all are sorted, stably, by their estimated
//! cost per row, cheapest first (`order_qual_clauses` over `cost_qual_eval`).

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::expressions::{BinaryExpr, CastExpr, InListExpr, LikeExpr, Literal};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};

use crate::explain::exprs::{implicit_cast, mixed_width_operands};

/// `quals` in PostgreSQL's order (see the module comment).
pub fn in_postgres_order(
    quals: Vec<Arc<dyn PhysicalExpr>>,
    schema: &Schema,
) -> Vec<Arc<dyn PhysicalExpr>> {
    let is_equality = |q: &Arc<dyn PhysicalExpr>| {
        q.downcast_ref::<BinaryExpr>()
            .is_some_and(|b| *b.op() == Operator::Eq)
    };
    let (equalities, mut ordered): (Vec<_>, Vec<_>) = quals.into_iter().partition(is_equality);
    ordered.extend(equalities);
    let mut costed: Vec<(f64, Arc<dyn PhysicalExpr>)> =
        ordered.into_iter().map(|q| (cost(&q, schema), q)).collect();
    costed.sort_by(|a, b| a.0.total_cmp(&b.0));
    costed.into_iter().map(|(_, q)| q).collect()
}

/// What PostgreSQL's `cost_qual_eval` charges for evaluating `e` once, in operator
/// evaluations: one per operator and function (builtins cost 1), two for a cast through
/// text (an output and an input function), half an operator per element of an `= ANY`
/// list; column references, constants, NULL tests and AND / OR / NOT themselves nothing.
fn cost(e: &Arc<dyn PhysicalExpr>, schema: &Schema) -> f64 {
    let children: f64 = e.children().iter().map(|c| cost(c, schema)).sum();
    let node = e.as_ref();
    let own = if let Some(b) = node.downcast_ref::<BinaryExpr>() {
        match b.op() {
            Operator::And | Operator::Or => 0.0,
            // and the cast PostgreSQL makes of a narrower operand, not a constant
            _ if cast_at_run_time(b, schema) => 2.0,
            _ => 1.0,
        }
    } else if let Some(i) = node.downcast_ref::<InListExpr>() {
        let constant = i.list().iter().all(|e| e.as_ref().is::<Literal>());
        match constant {
            true => 0.5 * i.list().len() as f64,
            false => i.list().len() as f64,
        }
    } else if let Some(c) = node.downcast_ref::<CastExpr>() {
        let is_string =
            |t: &DataType| matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View);
        match c.expr().data_type(schema) {
            Ok(from) if implicit_cast(&from, c.cast_type()) => 0.0,
            Ok(from) if is_string(&from) || is_string(c.cast_type()) => 2.0,
            _ => 1.0,
        }
    } else if node.is::<LikeExpr>() || node.is::<ScalarFunctionExpr>() {
        1.0
    } else {
        0.0
    };
    own + children
}

/// PostgreSQL casts an operand of `b` for each row (`mixed_width_operands`, the narrower
/// one not a constant).
fn cast_at_run_time(b: &BinaryExpr, schema: &Schema) -> bool {
    mixed_width_operands(b, schema).is_some_and(|[l, r]| {
        let narrower = if l.1 < r.1 { l.0 } else { r.0 };
        !narrower.as_ref().is::<Literal>()
    })
}
