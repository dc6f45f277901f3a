//! `percentile_disc(fraction) WITHIN GROUP (ORDER BY x)`, PostgreSQL's discrete percentile,
//! which DataFusion lacks (it has the continuous one, `percentile_cont`).
//!
//! It is the first value, in the ORDER BY's order, whose position among the group's
//! non-null values reaches the fraction: with n values sorted, the one at position
//! ⌈fraction × n⌉ (counting from 1; the first for a fraction of 0). It is a value of the
//! input, of the input's type, for any type that sorts (numbers, text, timestamps), so a
//! p99.9 of latencies is a latency that was measured. A fraction outside [0, 1] is
//! PostgreSQL's 22003 error; a group with no values gives NULL. Given an array of
//! fractions (`percentile_disc(ARRAY[0.5, 0.99, 0.999])`) it returns the array of their
//! values, NULL where a fraction is NULL, from one sort.
//!
//! The accumulator keeps the group's values as the arrays they came in and sorts them
//! once, when the result is asked for; partial groups merge as lists of values.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use datafusion::arrow::compute::{concat, sort_to_indices, take, SortOptions};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::utils::SingleRowListArrayBuilder;
use datafusion::error::Result;
use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::expressions::Literal;
use datafusion::scalar::ScalarValue;
use iolab_catalog::{sqlstate, PgError};

use super::functions::pg;

pub fn register(state: &mut SessionState) -> Result<()> {
    state.register_udaf(Arc::new(AggregateUDF::new_from_impl(PercentileDisc::new())))?;
    Ok(())
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct PercentileDisc {
    signature: Signature,
}

impl PercentileDisc {
    fn new() -> PercentileDisc {
        PercentileDisc {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for PercentileDisc {
    fn name(&self) -> &str {
        "percentile_disc"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// The value as it is, the fraction as a float8 (an array of them as a float8[]).
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        match arg_types {
            [value, fractions] if is_array(fractions) => Ok(vec![value.clone(), float8_array()]),
            [value, _fraction] => Ok(vec![value.clone(), DataType::Float64]),
            _ => Err(pg(PgError::new(
                sqlstate::UNDEFINED_FUNCTION,
                "percentile_disc takes one fraction and one ORDER BY expression",
            ))),
        }
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(if is_array(&arg_types[1]) {
            DataType::List(Arc::new(Field::new_list_field(arg_types[0].clone(), true)))
        } else {
            arg_types[0].clone()
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let values = Field::new_list_field(args.input_fields[0].data_type().clone(), true);
        Ok(vec![Arc::new(Field::new(
            format!("{}[values]", args.name),
            DataType::List(Arc::new(values)),
            true,
        ))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let fraction = args.exprs[1]
            .as_ref()
            .downcast_ref::<Literal>()
            .map(|l| l.value().clone())
            .ok_or_else(|| {
                pg(PgError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    "percentile_disc's fraction must be a constant",
                ))
            })?;
        let fractions = match fraction {
            ScalarValue::Float64(Some(f)) => Fractions::One(checked(f)?),
            ScalarValue::List(list) => {
                let values = list.value(0);
                let values = values.as_primitive::<Float64Type>();
                let fractions = values.iter().map(|f| f.map(checked).transpose());
                Fractions::Array(fractions.collect::<Result<_>>()?)
            }
            other => {
                return Err(pg(PgError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    format!("percentile_disc's fraction must be a number, not {other:?}"),
                )))
            }
        };
        let descending = args.order_bys.first().is_some_and(|s| s.options.descending);
        Ok(Box::new(PercentileDiscAccumulator {
            fractions,
            descending,
            data_type: args.expr_fields[0].data_type().clone(),
            values: Vec::new(),
        }))
    }

    /// The accumulator sorts the values itself (in the ORDER BY's direction).
    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }

    fn supports_within_group_clause(&self) -> bool {
        true
    }
}

fn is_array(t: &DataType) -> bool {
    matches!(
        t,
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)
    )
}

fn float8_array() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true)))
}

/// `f` when it is a fraction, else PostgreSQL's error.
fn checked(f: f64) -> Result<f64> {
    if (0.0..=1.0).contains(&f) {
        Ok(f)
    } else {
        Err(pg(PgError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("percentile value {f} is not between 0 and 1"),
        )))
    }
}

/// The fraction asked for, or the array of them.
#[derive(Debug)]
enum Fractions {
    One(f64),
    Array(Vec<Option<f64>>),
}

#[derive(Debug)]
struct PercentileDiscAccumulator {
    fractions: Fractions,
    descending: bool,
    data_type: DataType,
    /// The group's values so far, nulls included, as they came.
    values: Vec<ArrayRef>,
}

impl PercentileDiscAccumulator {
    /// The group's values in one array.
    fn all_values(&self) -> Result<ArrayRef> {
        Ok(match self.values.as_slice() {
            [] => datafusion::arrow::array::new_empty_array(&self.data_type),
            [one] => Arc::clone(one),
            many => concat(&many.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?,
        })
    }
}

impl Accumulator for PercentileDiscAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if values[0].len() > values[0].null_count() {
            self.values.push(values[0].clone());
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = states[0].as_list::<i32>();
        for list in lists.iter().flatten() {
            if !list.is_empty() {
                self.values.push(list);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let values = self.all_values()?;
        Ok(vec![
            SingleRowListArrayBuilder::new(values).build_list_scalar()
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let values = self.all_values()?;
        let present = values.len() - values.null_count();
        if present == 0 {
            return match self.fractions {
                Fractions::One(_) => ScalarValue::try_from(&self.data_type),
                Fractions::Array(_) => ScalarValue::try_from(&DataType::List(Arc::new(
                    Field::new_list_field(self.data_type.clone(), true),
                ))),
            };
        }
        let options = SortOptions {
            descending: self.descending,
            nulls_first: false,
        };
        let order = sort_to_indices(&values, Some(options), Some(present))?;
        // Position ⌈fraction × n⌉ from 1, the first for a fraction of 0.
        let row = |fraction: f64| {
            let position = ((fraction * present as f64).ceil() as usize).clamp(1, present);
            order.value(position - 1)
        };
        match &self.fractions {
            Fractions::One(f) => ScalarValue::try_from_array(&values, row(*f) as usize),
            Fractions::Array(fractions) => {
                let rows: UInt32Array = fractions.iter().map(|f| f.map(row)).collect();
                let picked = take(&values, &rows, None)?;
                Ok(SingleRowListArrayBuilder::new(picked).build_list_scalar())
            }
        }
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self
                .values
                .iter()
                .map(|a| a.get_array_memory_size())
                .sum::<usize>()
    }
}
