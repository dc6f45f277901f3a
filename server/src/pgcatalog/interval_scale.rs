//! `interval_mul(interval, factor)` and `interval_div(interval, divisor)`: what `n *
//! interval '1 minute'` and `interval '1 day' / 7` are (`sql::session_time` writes the
//! operators as these calls; DataFusion multiplies no interval). The arithmetic is
//! `iolab_engine::values::scale_interval`.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, IntervalMonthDayNanoArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type, IntervalMonthDayNano, IntervalUnit};
use datafusion::error::Result;
use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::values::scale_interval;

use super::functions::pg;
use super::zoned_time::{result, rows_of};

/// Registers both functions into a session's state.
pub fn register(state: &mut SessionState) -> Result<()> {
    for divide in [false, true] {
        state.register_udf(Arc::new(ScalarUDF::new_from_impl(IntervalScale::new(
            divide,
        ))))?;
    }
    Ok(())
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
