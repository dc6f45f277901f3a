//! Results DataFusion computes as unsigned 64-bit integers, typed as PostgreSQL's.
//!
//! PostgreSQL has no unsigned types. DataFusion's `row_number()`, `rank()`, `dense_rank()`,
//! `ntile()`, `cardinality()`, `array_length()` and `array_position()` return UInt64,
//! which iolab would report as `numeric(20,0)`: a Python script got a `Decimal` from
//! `row_number()`, where PostgreSQL gives a `bigint` (and an `integer` from the others).
//! [`as_postgres_integers`] casts each output column of a projection that is a UInt64 to
//! PostgreSQL's type for it, on the plan DataFusion's SQL planner returns (before the
//! result's columns are read from it):
//!
//! - a scalar function's result (`cardinality`, `array_length`, `array_position` …) and
//!   `ntile()`'s: `integer`;
//! - anything else (`row_number()`, `rank()`, `dense_rank()`, an aggregate's count): `bigint`.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::Result;
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{Cast, Expr, LogicalPlan};

use crate::sql::session_time::recompute_schemas;

/// `plan` with its projections' unsigned columns cast as PostgreSQL types them.
pub fn as_postgres_integers(plan: LogicalPlan) -> Result<LogicalPlan> {
    let mut changed = false;
    let plan = plan
        .transform_up_with_subqueries(|node| {
            let LogicalPlan::Projection(_) = &node else {
                return Ok(Transformed::no(node));
            };
            // The projection's own output types, column by column.
            let types: Vec<DataType> = (node.schema().fields().iter())
                .map(|f| f.data_type().clone())
                .collect();
            let mut column = 0;
            let names = NamePreserver::new(&node);
            let node = node.map_expressions(|e| {
                column += 1;
                if types[column - 1] != DataType::UInt64 {
                    return Ok(Transformed::no(e));
                }
                let target = postgres_type(&e);
                let saved = names.save(&e);
                Ok(Transformed::yes(
                    saved.restore(Expr::Cast(Cast::new(Box::new(e), target))),
                ))
            })?;
            changed |= node.transformed;
            Ok(node)
        })?
        .data;
    if !changed {
        return Ok(plan);
    }
    recompute_schemas(plan)
}

/// PostgreSQL's type for an unsigned result `e` (see the module comment).
fn postgres_type(e: &Expr) -> DataType {
    let unaliased = match e {
        Expr::Alias(alias) => alias.expr.as_ref(),
        other => other,
    };
    match unaliased {
        Expr::ScalarFunction(_) => DataType::Int32,
        Expr::Column(c) if c.name.starts_with("ntile(") => DataType::Int32,
        _ => DataType::Int64,
    }
}
