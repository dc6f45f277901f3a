//! `generate_series` over `integer` bounds is a series of `integer`s in PostgreSQL.
//! DataFusion's series steps in Int64 only; [`Int4Series`] wraps the series it makes and
//! hands its values on as Int32 (every value lies between the two Int32 bounds, so the
//! conversion cannot overflow), under the same column name.
//!
//! The conversion is its own plan node, [`Int4SeriesExec`], not a projection of casts:
//! DataFusion would move a filter below such a projection, and EXPLAIN would then print
//! the cast PostgreSQL has no need of (`Filter: ((g)::integer > 1)`).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Result;
use datafusion::datasource::TableType;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::Expr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};
use futures::StreamExt;

/// An Int64 series read as Int32.
#[derive(Debug)]
pub struct Int4Series {
    bigint: Arc<dyn TableProvider>,
    schema: SchemaRef,
}

impl Int4Series {
    pub fn new(bigint: Arc<dyn TableProvider>) -> Int4Series {
        let schema = as_int4(&bigint.schema());
        Int4Series { bigint, schema }
    }
}

/// `schema`, a series', with its Int64 column made an Int32.
fn as_int4(schema: &SchemaRef) -> SchemaRef {
    let fields = schema
        .fields()
        .iter()
        .map(|f| {
            assert_eq!(f.data_type(), &DataType::Int64, "a series of bigints");
            Field::new(f.name(), DataType::Int32, f.is_nullable())
        })
        .collect::<Vec<_>>();
    Arc::new(Schema::new(fields))
}

#[async_trait]
impl TableProvider for Int4Series {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        self.bigint.table_type()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let series = self.bigint.scan(state, projection, filters, limit).await?;
        Ok(Arc::new(Int4SeriesExec::new(series)))
    }
}

/// Its input's rows with every column converted from Int64 to Int32.
#[derive(Debug)]
pub struct Int4SeriesExec {
    series: Arc<dyn ExecutionPlan>,
    properties: Arc<PlanProperties>,
}

impl Int4SeriesExec {
    /// The conversion of `series`, ordered as it is (a cast from Int64 to Int32 of values
    /// that fit keeps their order, so a sort on the series can still be left out).
    fn new(series: Arc<dyn ExecutionPlan>) -> Int4SeriesExec {
        let input = series.properties();
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new_with_orderings(
                as_int4(&series.schema()),
                input.eq_properties.oeq_class().iter().cloned(),
            ),
            input.partitioning.clone(),
            input.emission_type,
            input.boundedness,
        ));
        Int4SeriesExec { series, properties }
    }
}

impl DisplayAs for Int4SeriesExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "Int4SeriesExec")
    }
}

impl ExecutionPlan for Int4SeriesExec {
    fn name(&self) -> &str {
        "Int4SeriesExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.series]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        assert_eq!(children.len(), 1, "a series conversion has one input");
        Ok(Arc::new(Int4SeriesExec::new(children.remove(0))))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let schema = self.schema();
        let out = schema.clone();
        let rows = self.series.execute(partition, context)?.map(move |batch| {
            let batch = batch?;
            let columns = batch
                .columns()
                .iter()
                .map(|c| cast(c, &DataType::Int32))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(RecordBatch::try_new_with_options(
                out.clone(),
                columns,
                &datafusion::arrow::record_batch::RecordBatchOptions::new()
                    .with_row_count(Some(batch.num_rows())),
            )?)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, rows)))
    }
}
