//! `interval_mul(interval, factor)` and `interval_div(interval, divisor)`: what `n *
//! interval '1 minute'` and `took / 7` are. DataFusion multiplies no interval: the SQL
//! planner asks [`IntervalArithmetic`] first how to plan `*` and `/`, and it answers with
//! these calls when one side is an interval and the other a number. The arithmetic is
//! `iolab_engine::values::scale_interval`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, IntervalMonthDayNano, IntervalUnit};
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::expr::Cast;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};
use datafusion::sql::sqlparser::ast::BinaryOperator;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::values::scale_interval;

use super::functions::pg;
use super::zoned_time::{result, rows_of};

/// Registers both functions, and the planning of `*` and `/` on intervals, into a
/// session's state.
pub fn register(state: &mut SessionState) -> Result<()> {
    for divide in [false, true] {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(IntervalScale::new(
            divide,
        ))))?;
    }
    state.register_expr_planner(Arc::new(IntervalArithmetic))?;
    Ok(())
}

/// Plans `interval * number`, `number * interval` and `interval / number`.
#[derive(Debug)]
pub struct IntervalArithmetic;

impl ExprPlanner for IntervalArithmetic {
    fn plan_binary_op(
        &self,
        expr: RawBinaryExpr,
        schema: &DFSchema,
    ) -> Result<PlannerResult<RawBinaryExpr>> {
        let divide = match expr.op {
            BinaryOperator::Multiply => false,
            BinaryOperator::Divide => true,
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let type_of = |e: &Expr| e.get_type(schema).ok();
        let is_interval = |t: &Option<DataType>| matches!(t, Some(DataType::Interval(_)));
        let is_number = |t: &Option<DataType>| t.as_ref().is_some_and(DataType::is_numeric);
        let (left, right) = (type_of(&expr.left), type_of(&expr.right));
        let (interval, factor) = if is_interval(&left) && is_number(&right) {
            (expr.left, expr.right)
        } else if !divide && is_number(&left) && is_interval(&right) {
            (expr.right, expr.left)
        } else {
            return Ok(PlannerResult::Original(expr));
        };
        let month_day_nano = DataType::Interval(IntervalUnit::MonthDayNano);
        let scale = ScalarUDF::new_from_impl(IntervalScale::new(divide));
        Ok(PlannerResult::Planned(scale.call(vec![
            Expr::Cast(Cast::new(Box::new(interval), month_day_nano)),
            Expr::Cast(Cast::new(Box::new(factor), DataType::Float64)),
        ])))
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct IntervalScale {
    divide: bool,
    signature: Signature,
}

impl IntervalScale {
    pub fn new(divide: bool) -> IntervalScale {
        IntervalScale {
            divide,
            signature: Signature::exact(
                vec![
                    DataType::Interval(IntervalUnit::MonthDayNano),
                    DataType::Float64,
                ],
                Volatility::Immutable,
            ),
        }
    }
}

impl ScalarUDFImpl for IntervalScale {
    fn name(&self) -> &str {
        if self.divide {
            "interval_div"
        } else {
            "interval_mul"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Interval(IntervalUnit::MonthDayNano))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = rows_of(&args);
        let intervals = args.args[0].to_array(rows)?;
        let intervals: &IntervalMonthDayNanoArray = intervals.as_primitive();
        let factors = cast(&args.args[1].to_array(rows)?, &DataType::Float64)?;
        let factors = factors.as_primitive::<Float64Type>();
        let scaled = (0..rows)
            .map(|row| {
                if intervals.is_null(row) || factors.is_null(row) {
                    return Ok(None);
                }
                let (v, factor) = (intervals.value(row), factors.value(row));
                if self.divide && factor == 0.0 {
                    return Err(pg(PgError::new(
                        sqlstate::DIVISION_BY_ZERO,
                        "division by zero",
                    )));
                }
                let fields = (v.months, v.days, v.nanoseconds / 1000);
                let (months, days, micros) = scale_interval(fields, factor, self.divide)
                    .ok_or_else(|| {
                        pg(PgError::new(
                            sqlstate::DATETIME_FIELD_OVERFLOW,
                            "interval out of range",
                        ))
                    })?;
                Ok(Some(IntervalMonthDayNano::new(months, days, micros * 1000)))
            })
            .collect::<Result<IntervalMonthDayNanoArray>>()?;
        result(Arc::new(scaled), &args.args)
    }
}
