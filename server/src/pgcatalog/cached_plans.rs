//! `pg_cached_plans`: the server's plan cache (see `sql::plan_cache`), one row per
//! cached plan, shaped after PostgreSQL's `pg_prepared_statements`: the normalized
//! statement, its parameters' types, when it was planned, and `generic_plans`, the runs
//! that reused the plan; then iolab's `generic_physical_plan`: whether the runs reuse
//! the physical plan too (`sql::generic_plan`) rather than only the logical one.
//! Computed when a statement scans it.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::SchemaRef;
use iolab_catalog::PgType;

use super::batch::{parse_columns, schema_of, V};
use super::computed_views::ComputedView;
use crate::sql::plan_cache::PlanCache;

static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema_of(&parse_columns(
        "statement text, parameter_types text[], prepare_time timestamp with time zone, \
         generic_plans bigint, last_used timestamp with time zone, \
         generic_physical_plan boolean",
    ))
});

impl ComputedView {
    /// `pg_cached_plans` over the server's plan `cache`.
    pub fn cached_plans(cache: Arc<PlanCache>) -> ComputedView {
        ComputedView::new(SCHEMA.clone(), move || {
            (cache.rows().into_iter())
                .map(|r| {
                    let types = (r.parameter_types.iter())
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
                .collect()
        })
    }
}
