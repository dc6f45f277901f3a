//! Integer `+`, `-`, `*` and `/` that fail on overflow, as PostgreSQL's do.
//!
//! DataFusion's arithmetic on integers wraps around (`9223372036854775807 + 1` is
//! `-9223372036854775808`), a wrong answer given silently; PostgreSQL stops the statement
//! with 22003 `bigint out of range` (`integer`, `smallint`). This analyzer rule, run after
//! type coercion, replaces each integer `a + b`, `a - b`, `a * b`, `a / b` by a function
//! that computes it with Arrow's checked kernels (as fast as the wrapping ones) and reports
//! an overflow (the smallest value divided by −1 too) or a division by zero as PostgreSQL
//! does. EXPLAIN prints these functions as the operators they stand for
//! (`explain/exprs.rs`).
//!
//! `sum()` of a bigint wraps too; PostgreSQL's is a numeric. [`sum_bigint_as_numeric`]
//! sums the bigint as Decimal128(38, 0) instead, on the plan DataFusion's SQL planner
//! returns: the result's type changes, so this cannot wait for the analyzer, after the
//! statement's result columns have been read from the plan.

use std::sync::Arc;

use datafusion::arrow::compute::kernels::numeric;
use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::error::ArrowError;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchemaRef, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    BinaryExpr, ColumnarValue, Expr, ExprSchemable, LogicalPlan, Operator, ScalarFunctionArgs,
    ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use iolab_catalog::{sqlstate, PgError};

use crate::pgcatalog::functions::pg;
use crate::pgcatalog::zoned_time::result;
use crate::sql::session_time::{recompute_schemas, rewrite_expressions};

/// `plan` with each `sum()` of a bigint summed in numeric (see the module comment), and
/// every node above it given its new type.
pub fn sum_bigint_as_numeric(plan: LogicalPlan) -> Result<LogicalPlan> {
    let changed = std::cell::Cell::new(false);
    let plan = rewrite_expressions(plan, |e, schemas| {
        let Expr::AggregateFunction(mut sum) = e else {
            return Ok(Transformed::no(e));
        };
        let bigint =
            |x: &Expr| schemas.iter().find_map(|s| x.get_type(s).ok()) == Some(DataType::Int64);
        if sum.func.name() != "sum" || sum.params.args.len() != 1 || !bigint(&sum.params.args[0]) {
            return Ok(Transformed::no(Expr::AggregateFunction(sum)));
        }
        changed.set(true);
        let arg = sum.params.args.remove(0);
        sum.params
            .args
            .push(Expr::Cast(datafusion::logical_expr::Cast::new(
                Box::new(arg),
                DataType::Decimal128(38, 0),
            )));
        Ok(Transformed::yes(Expr::AggregateFunction(sum)))
    })?;
    if !changed.get() {
        return Ok(plan);
    }
    recompute_schemas(plan)
}

#[derive(Debug)]
pub struct CheckedArithmeticRule;

impl AnalyzerRule for CheckedArithmeticRule {
    fn name(&self) -> &str {
        "iolab_checked_arithmetic"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_expressions(plan, rewrite)
    }
}

fn rewrite(e: Expr, schemas: &[DFSchemaRef]) -> Result<Transformed<Expr>> {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = &e else {
        return Ok(Transformed::no(e));
    };
    let Some(checked) = CheckedOp::of(*op) else {
        return Ok(Transformed::no(e));
    };
    let type_of = |x: &Expr| schemas.iter().find_map(|s| x.get_type(s).ok());
    let (Some(l), Some(r)) = (type_of(left), type_of(right)) else {
        return Ok(Transformed::no(e));
    };
    if l != r || !is_signed_integer(&l) {
        return Ok(Transformed::no(e));
    }
    let udf = Arc::new(ScalarUDF::new_from_impl(CheckedArithmetic::new(checked)));
    let args = vec![left.as_ref().clone(), right.as_ref().clone()];
    Ok(Transformed::yes(Expr::ScalarFunction(
        ScalarFunction::new_udf(udf, args),
    )))
}

fn is_signed_integer(t: &DataType) -> bool {
    matches!(t, DataType::Int16 | DataType::Int32 | DataType::Int64)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckedOp {
    Add,
    Subtract,
    Multiply,
    Divide,
}

impl CheckedOp {
    fn of(op: Operator) -> Option<CheckedOp> {
        match op {
            Operator::Plus => Some(CheckedOp::Add),
            Operator::Minus => Some(CheckedOp::Subtract),
            Operator::Multiply => Some(CheckedOp::Multiply),
            Operator::Divide => Some(CheckedOp::Divide),
            _ => None,
        }
    }

    /// The operator EXPLAIN prints.
    pub fn symbol(self) -> &'static str {
        match self {
            CheckedOp::Add => "+",
            CheckedOp::Subtract => "-",
            CheckedOp::Multiply => "*",
            CheckedOp::Divide => "/",
        }
    }

    /// The function's name: PostgreSQL's name of the operator's function, without the
    /// type.
    fn function_name(self) -> &'static str {
        match self {
            CheckedOp::Add => "intpl",
            CheckedOp::Subtract => "intmi",
            CheckedOp::Multiply => "intmul",
            CheckedOp::Divide => "intdiv",
        }
    }
}

/// One checked operation on two integers of the same type.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct CheckedArithmetic {
    op: CheckedOp,
    signature: Signature,
}

impl CheckedArithmetic {
    fn new(op: CheckedOp) -> CheckedArithmetic {
        CheckedArithmetic {
            op,
            signature: Signature::any(2, Volatility::Immutable),
        }
    }

    /// The operation a function of this name performs (for EXPLAIN).
    pub fn op_named(name: &str) -> Option<CheckedOp> {
        use CheckedOp::*;
        [Add, Subtract, Multiply, Divide]
            .into_iter()
            .find(|op| op.function_name() == name)
    }
}

impl ScalarUDFImpl for CheckedArithmetic {
    fn name(&self) -> &str {
        self.op.function_name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let datum = |v: &ColumnarValue| -> Result<Box<dyn datafusion::arrow::array::Datum>> {
            Ok(match v {
                ColumnarValue::Array(a) => Box::new(a.clone()),
                ColumnarValue::Scalar(s) => Box::new(s.to_scalar()?),
            })
        };
        let (l, r) = (datum(&args.args[0])?, datum(&args.args[1])?);
        let computed = match self.op {
            CheckedOp::Add => numeric::add(l.as_ref(), r.as_ref()),
            CheckedOp::Subtract => numeric::sub(l.as_ref(), r.as_ref()),
            CheckedOp::Multiply => numeric::mul(l.as_ref(), r.as_ref()),
            CheckedOp::Divide => numeric::div(l.as_ref(), r.as_ref()),
        };
        let array = computed.map_err(|e| match e {
            ArrowError::ArithmeticOverflow(_) => pg(out_of_range(args.return_field.data_type())),
            ArrowError::DivideByZero => {
                pg(PgError::new(sqlstate::DIVISION_BY_ZERO, "division by zero"))
            }
            other => other.into(),
        })?;
        result(array, &args.args)
    }
}

fn out_of_range(t: &DataType) -> PgError {
    let name = match t {
        DataType::Int16 => "smallint",
        DataType::Int32 => "integer",
        _ => "bigint",
    };
    PgError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        format!("{name} out of range"),
    )
}
