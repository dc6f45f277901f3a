//! A statement's `$n` parameters in a generic plan: one physical plan made for a
//! prepared statement with its parameters unknown, and run again with each execution's
//! values (PostgreSQL's generic plan of a cached plan source; the server's
//! `sql::generic_plan` makes and copies it).
//!
//! DataFusion's physical planner takes no `$n`, so before planning each becomes a call of
//! a **marker** function naming it ([`marker_call`]); the call is never evaluated. Its
//! value reaches the plan in two ways:
//!
//! - an expression evaluated over rows (a filter's predicate) is copied with the marker
//!   replaced by the run's value ([`bind_markers`]: a [`BoundParameter`], which EXPLAIN
//!   shows as `$n`, as PostgreSQL shows a generic plan) before the plan runs;
//! - an index condition on a marker (`aid = $1`: an expression of no column, known when
//!   the scan starts, as an InitPlan's value is; `index_cond`) is resolved when the scan
//!   starts, from the values the statement runs with (`StatementContext::params`), so
//!   the scan nodes are run as planned.
//!
//! The planner weighs a marker as PostgreSQL weighs a parameter of unknown value: `col =
//! $1` selects `1 / n_distinct` of the rows (`selectivity`).

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::physical_expr::{PhysicalExpr, ScalarFunctionExpr};
use datafusion::scalar::ScalarValue;

/// Stands for parameter `$index + 1`; never evaluated.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ParameterMarker {
    /// `$1` …
    name: String,
    /// 0-based.
    index: usize,
    data_type: DataType,
    signature: Signature,
}

impl ParameterMarker {
    /// `$n`, as EXPLAIN shows it.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl ScalarUDFImpl for ParameterMarker {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(self.data_type.clone())
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Err(DataFusionError::Internal(format!(
            "parameter {} of a generic plan was not given a value",
            self.name
        )))
    }
}

/// `$1` → 0.
pub fn parameter_index(id: &str) -> Result<usize> {
    id.strip_prefix('$')
        .and_then(|n| n.parse::<usize>().ok())
        .and_then(|n| n.checked_sub(1))
        .ok_or_else(|| DataFusionError::Plan(format!("unexpected parameter {id}")))
}

/// The marker call standing for the parameter `id` (`$n`) of type `data_type`.
pub fn marker_call(id: &str, data_type: DataType) -> Result<Expr> {
    let marker = ParameterMarker {
        name: id.to_string(),
        index: parameter_index(id)?,
        data_type,
        signature: Signature::nullary(Volatility::Volatile),
    };
    Ok(Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::new_from_impl(marker)),
        vec![],
    )))
}

/// The marker `e` is, if it is one.
pub fn marker_of(e: &Arc<dyn PhysicalExpr>) -> Option<&ParameterMarker> {
    let call = e.downcast_ref::<ScalarFunctionExpr>()?;
    let implementation: &dyn std::any::Any = call.fun().inner().as_ref();
    implementation.downcast_ref::<ParameterMarker>()
}

/// Does `e` hold a marker?
pub fn has_marker(e: &Arc<dyn PhysicalExpr>) -> bool {
    e.exists(|e| Ok(marker_of(e).is_some())).unwrap_or(true)
}

/// `e` with its markers replaced by `values` (`values[0]` is `$1`).
pub fn bind_markers(
    e: &Arc<dyn PhysicalExpr>,
    values: &[ScalarValue],
) -> Result<Arc<dyn PhysicalExpr>> {
    Arc::clone(e)
        .transform_up(|e| match marker_of(&e) {
            Some(marker) => {
                let bound = BoundParameter {
                    name: marker.name.clone(),
                    value: value_of(values, marker.index, Some(&marker.data_type))?,
                };
                Ok(Transformed::yes(Arc::new(bound) as Arc<dyn PhysicalExpr>))
            }
            None => Ok(Transformed::no(e)),
        })
        .map(|t| t.data)
}

/// A parameter given its run's value: evaluates to the value, shows as its name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BoundParameter {
    name: String,
    value: ScalarValue,
}

impl BoundParameter {
    /// `$n`.
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for BoundParameter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)
    }
}

impl PhysicalExpr for BoundParameter {
    fn return_field(&self, _input_schema: &Schema) -> Result<FieldRef> {
        Ok(Arc::new(Field::new(
            &self.name,
            self.value.data_type(),
            true,
        )))
    }

    fn evaluate(&self, _batch: &RecordBatch) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(self.value.clone()))
    }

    fn children(&self) -> Vec<&Arc<dyn PhysicalExpr>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn PhysicalExpr>>,
    ) -> Result<Arc<dyn PhysicalExpr>> {
        Ok(self)
    }

    fn fmt_sql(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.name)
    }
}

/// Parameter `index`'s value, as the type the plan gave the parameter (DataFusion may
/// have inferred a type other than the value's, such as `Utf8View` for a text constant).
pub fn value_of(
    values: &[ScalarValue],
    index: usize,
    ty: Option<&DataType>,
) -> Result<ScalarValue> {
    let value = values.get(index).ok_or_else(|| {
        DataFusionError::Internal(format!("no value for parameter ${}", index + 1))
    })?;
    match ty {
        Some(ty) if *ty != value.data_type() => value.cast_to(ty),
        _ => Ok(value.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::common::DFSchema;
    use datafusion::execution::context::SessionContext;
    use datafusion::logical_expr::{col, Operator};
    use datafusion::physical_expr::expressions::BinaryExpr;

    #[test]
    fn markers_take_the_runs_values_in_their_type() {
        let schema = Schema::new(vec![Field::new("a", DataType::Int64, true)]);
        let df_schema = DFSchema::try_from(schema).unwrap();
        let logical = col("a").eq(marker_call("$2", DataType::Int64).unwrap());
        let physical = SessionContext::new()
            .create_physical_expr(logical, &df_schema)
            .unwrap();
        assert!(has_marker(&physical));
        let b = physical.downcast_ref::<BinaryExpr>().unwrap();
        assert_eq!(*b.op(), Operator::Eq);
        assert_eq!(marker_of(b.right()).unwrap().name(), "$2");
        // $2 given as an int4 is read as the bigint the plan expects.
        let bound =
            bind_markers(&physical, &[ScalarValue::Null, ScalarValue::Int32(Some(7))]).unwrap();
        assert!(!has_marker(&bound));
        assert_eq!(bound.to_string(), "a@0 = $2");
        let value = bound
            .downcast_ref::<BinaryExpr>()
            .unwrap()
            .right()
            .evaluate(&RecordBatch::new_empty(Arc::new(Schema::empty())))
            .unwrap();
        assert!(matches!(
            value,
            ColumnarValue::Scalar(ScalarValue::Int64(Some(7)))
        ));
        let missing = bind_markers(&physical, &[ScalarValue::Int64(Some(1))]);
        assert!(missing.is_err());
        assert!(parameter_index("$0").is_err());
    }
}
