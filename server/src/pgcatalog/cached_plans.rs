//! `pg_cached_plans`: the server's plan cache (see `sql::plan_cache`), one row per
//! cached plan, shaped after PostgreSQL's `pg_prepared_statements`: the normalized
//! statement, its parameters' types, when it was planned, and `generic_plans`, the runs
//! that reused the plan; then iolab's `generic_physical_plan`: whether the runs reuse
//! the physical plan too (`sql::generic_plan`) rather than only the logical one.
//! Computed when a statement scans it.

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use iolab_catalog::PgType;

use super::batch::{build_batch, parse_columns, schema_of, V};
use crate::sql::plan_cache::PlanCache;

static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema_of(&parse_columns(
        "statement text, parameter_types text[], prepare_time timestamp with time zone, \
         generic_plans bigint, last_used timestamp with time zone, \
         generic_physical_plan boolean",
    ))
});

pub struct CachedPlansView {
    pub cache: Arc<PlanCache>,
}

impl std::fmt::Debug for CachedPlansView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CachedPlansView")
    }
}

#[async_trait]
impl TableProvider for CachedPlansView {
    fn schema(&self) -> SchemaRef {
        SCHEMA.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let rows: Vec<Vec<V>> = self
            .cache
            .rows()
            .into_iter()
            .map(|r| {
                let types = r
                    .parameter_types
                    .iter()
                    .map(|t| {
                        PgType::for_arrow(t).map_or_else(|| t.to_string(), |p| p.format_type())
                    })
                    .collect();
                vec![
                    V::Text(r.statement),
                    V::TextArray(types),
                    V::Int(r.prepare_time_us),
                    V::Int(r.generic_plans),
                    V::Int(r.last_used_us),
                    V::Bool(r.generic_physical_plan),
                ]
            })
            .collect();
        let batch = build_batch(&SCHEMA, &rows)?;
        MemTable::try_new(SCHEMA.clone(), vec![vec![batch]])?
            .scan(state, projection, filters, limit)
            .await
    }
}
