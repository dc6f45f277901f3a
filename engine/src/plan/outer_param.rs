//! A value the outer side of a nested loop hands to each scan of its inner side:
//! PostgreSQL's `PARAM_EXEC` parameter of a parameterized index path, `Index Cond: (id =
//! o.cust_id)`.
//!
//! The planner (`nested_loops`) plans the inner table's scan again with the join clause
//! `inner column = OuterParam`, so that the index paths weigh it as a parameter clause
//! (`index_cond`, "Values known when the scan starts"). The expression is never evaluated
//! over the inner rows: before each scan the nested loop takes the value of the outer
//! row's key (`outer`, an expression over the outer side's rows) and the scan reads the
//! keys equal to it (`IndexCond::scan_for`).

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Schema};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::common::{internal_err, Result};
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::PhysicalExpr;

/// The outer row's join key `outer`, as a value for the inner scan (module comment).
#[derive(Debug, Clone, Eq)]
pub struct OuterParam {
    /// Over the outer side's output.
    pub outer: Arc<dyn PhysicalExpr>,
    pub data_type: DataType,
}

impl OuterParam {
    pub fn new(outer: Arc<dyn PhysicalExpr>, data_type: DataType) -> Arc<dyn PhysicalExpr> {
        Arc::new(OuterParam { outer, data_type })
    }
}

impl PartialEq for OuterParam {
    fn eq(&self, other: &Self) -> bool {
        self.outer.eq(&other.outer) && self.data_type == other.data_type
    }
}

impl Hash for OuterParam {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.outer.hash(state);
        self.data_type.hash(state);
    }
}

impl fmt::Display for OuterParam {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "outer({})", self.outer)
    }
}

impl PhysicalExpr for OuterParam {
    fn return_field(&self, _input_schema: &Schema) -> Result<FieldRef> {
        Ok(Arc::new(Field::new("outer", self.data_type.clone(), true)))
    }

    fn evaluate(&self, _batch: &RecordBatch) -> Result<ColumnarValue> {
        internal_err!("an outer row's value is bound by its nested loop, never evaluated")
    }

    /// None: `outer` reads the outer side's columns, which no rewrite of the inner side's
    /// expressions may touch.
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
        self.outer.fmt_sql(f)
    }
}
