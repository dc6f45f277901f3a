//! The scan of a statistics view: a physical plan node that computes the view's rows
//! when it is executed, not when it is planned.
//!
//! So a physical plan over the statistics views holds no statistics and can be run again
//! (`sql::generic_plan` caches such plans and runs them with new parameters): each run
//! sees the statistics as of that run. The node keeps the filters DataFusion handed the
//! view; of a history view it builds only the samples in the time range they allow (see
//! `time_range`), computed at execution from the filters as they are then — with a
//! generic plan's `$n` already replaced by the run's values.
//!
//! The node reports no statistics: DataFusion must not answer `count(*)` from row counts
//! seen at planning time, which a reused plan would repeat.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::memory::MemoryStream;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use iolab_engine::Database;

use super::stat_views::Which;
use super::time_range::TimeRange;

pub struct ViewScanExec {
    which: Which,
    db: Arc<Database>,
    /// The view's columns this scan returns (all when `None`).
    projection: Option<Vec<usize>>,
    /// The filters DataFusion handed the view (inexact: it applies them again above).
    filters: Vec<Expr>,
    properties: Arc<PlanProperties>,
}

impl ViewScanExec {
    pub(super) fn new(
        which: Which,
        db: Arc<Database>,
        projection: Option<Vec<usize>>,
        filters: Vec<Expr>,
    ) -> Result<ViewScanExec> {
        let schema = match &projection {
            Some(columns) => Arc::new(which.schema().project(columns)?),
            None => which.schema(),
        };
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        ));
        Ok(ViewScanExec {
            which,
            db,
            projection,
            filters,
            properties,
        })
    }

    /// The view's name (`pg_stat_io`, …).
    pub fn view_name(&self) -> &'static str {
        self.which.name()
    }

    /// How EXPLAIN shows the scan, as PostgreSQL shows its views over set-returning
    /// functions: the function, the alias PostgreSQL's view gives it, and the function's
    /// row estimate (`prorows`). iolab's own views are their own functions, with
    /// PostgreSQL's default estimate of 1000 rows.
    pub fn function_scan(&self) -> (&'static str, &'static str, f64) {
        match self.which {
            Which::Io => ("pg_stat_get_io", "b", 30.0),
            Which::Aios => ("pg_get_aios", "pg_get_aios", 100.0),
            Which::Activity => ("pg_stat_get_activity", "s", 100.0),
            Which::Wal => ("pg_stat_get_wal", "w", 1.0),
            Which::RecoveryPrefetch => ("pg_stat_get_recovery_prefetch", "s", 1.0),
            other => (other.name(), other.name(), 1000.0),
        }
    }

    pub fn filters(&self) -> &[Expr] {
        &self.filters
    }

    /// The same scan with other filters (a generic plan's, with its parameters bound).
    pub fn with_filters(&self, filters: Vec<Expr>) -> ViewScanExec {
        ViewScanExec {
            which: self.which,
            db: self.db.clone(),
            projection: self.projection.clone(),
            filters,
            properties: self.properties.clone(),
        }
    }
}

impl fmt::Debug for ViewScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ViewScanExec({})", self.view_name())
    }
}

impl DisplayAs for ViewScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ViewScanExec: {}", self.view_name())
    }
}

impl ExecutionPlan for ViewScanExec {
    fn name(&self) -> &str {
        "ViewScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        assert_eq!(partition, 0, "a view scan has one partition");
        let range = TimeRange::of_filters(&self.filters);
        let batch = self
            .which
            .batch(&self.db, self.projection.as_deref(), range)?;
        let schema: SchemaRef = self.properties.eq_properties.schema().clone();
        debug_assert_eq!(batch.schema().fields(), schema.fields());
        Ok(Box::pin(MemoryStream::try_new(vec![batch], schema, None)?))
    }
}
