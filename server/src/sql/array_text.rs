//! Arrays cast to text as PostgreSQL writes them.
//!
//! `ARRAY[1,2]::text` is `{1,2}` in PostgreSQL (`{a,"b c"}`, `{1,NULL}`, `{{1,2},{3,4}}`:
//! `array_out`'s quoting); DataFusion's own cast of a list to a string writes `[1, 2]`.
//! After a statement is planned, every cast of a list-typed expression to a string type is
//! replaced by a call of `array_out(expr)` (`pgcatalog/functions.rs`), which formats the
//! array with the code the wire protocol uses for array results; the column keeps the name
//! the cast gave it.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;

use datafusion::execution::session_state::SessionState;
use datafusion::logical_expr::expr::Cast;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};

use iolab_catalog::PgResult;

use super::from_datafusion;

/// The name of the function casts of arrays to text become.
pub const ARRAY_OUT: &str = "array_out";

/// `plan` with each cast of an array to a string type replaced by `array_out`.
pub fn rewrite_casts(plan: LogicalPlan, state: &SessionState) -> PgResult<LogicalPlan> {
    let Some(array_out) = state.scalar_functions().get(ARRAY_OUT).cloned() else {
        return Ok(plan);
    };
    super::session_time::rewrite_expressions(plan, |e, schemas| {
        let Expr::Cast(Cast { expr, field }) = &e else {
            return Ok(Transformed::no(e));
        };
        let data_type = field.data_type();
        let to_string = matches!(
            data_type,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        );
        let from_list = schemas.iter().any(|schema| {
            matches!(
                expr.get_type(schema),
                Ok(DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..))
            )
        });
        if !(to_string && from_list) {
            return Ok(Transformed::no(e));
        }
        let call = array_out.call(vec![expr.as_ref().clone()]);
        Ok(Transformed::yes(match data_type {
            DataType::Utf8 => call,
            _ => Expr::Cast(Cast::new_from_field(Box::new(call), field.clone())),
        }))
    })
    .map_err(from_datafusion)
}
