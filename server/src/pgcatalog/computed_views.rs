//! Views computed from a list kept in memory each time a statement scans them (a
//! [`ComputedView`]: a schema and a function making its rows). Of what one session holds:
//! - `pg_cursors`: its open cursors (see `sql::cursor`) with PostgreSQL's columns — the
//!   name, the text of the statement that declared it, whether it is WITH HOLD, binary
//!   or SCROLL (iolab's never are the last two) and when it was declared;
//! - `pg_prepared_statements`: its SQL prepared statements (see `sql::prepare`) with
//!   PostgreSQL 18's columns — the PREPARE text, when, parameter and result types,
//!   `from_sql` (always true: protocol-level statements are not listed) and its runs
//!   (`custom_plans`: every run chooses its scans with its own values).
//!
//! and of the server's plan cache, `pg_cached_plans` (see `cached_plans`), and of the
//! catalog's statistics, `pg_stats` (see `pg_stats`).

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use parking_lot::Mutex;

use super::batch::{build_batch, parse_columns, schema_of, V};
use crate::sql::cursor::CursorInfo;
use crate::sql::prepare::PreparedInfo;

static CURSORS: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema_of(&parse_columns(
        "name text, statement text, is_holdable boolean, is_binary boolean, \
         is_scrollable boolean, creation_time timestamp with time zone",
    ))
});

static PREPARED_STATEMENTS: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema_of(&parse_columns(
        "name text, statement text, prepare_time timestamp with time zone, \
         parameter_types regtype[], result_types regtype[], from_sql boolean, \
         generic_plans bigint, custom_plans bigint",
    ))
});

/// A view whose rows a function makes when a statement scans it.
pub struct ComputedView {
    schema: SchemaRef,
    batch: Box<dyn Fn() -> Result<RecordBatch> + Send + Sync>,
}

impl std::fmt::Debug for ComputedView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ComputedView")
    }
}

impl ComputedView {
    /// A view of `schema` whose rows are `rows()`'s values.
    pub fn new(
        schema: SchemaRef,
        rows: impl Fn() -> Vec<Vec<V>> + Send + Sync + 'static,
    ) -> ComputedView {
        let columns = schema.clone();
        ComputedView::of_batch(schema, move || build_batch(&columns, &rows()))
    }

    /// A view of `schema` whose rows are `batch()`'s (of that schema).
    pub fn of_batch(
        schema: SchemaRef,
        batch: impl Fn() -> Result<RecordBatch> + Send + Sync + 'static,
    ) -> ComputedView {
        ComputedView {
            schema,
            batch: Box::new(batch),
        }
    }

    pub fn cursors(listing: Arc<Mutex<Vec<CursorInfo>>>) -> ComputedView {
        let rows = move || {
            (listing.lock().iter())
                .map(|c| {
                    vec![
                        V::text(&c.name),
                        V::text(&c.statement),
                        V::Bool(c.is_holdable),
                        V::Bool(false),
                        V::Bool(false),
                        V::Int(c.created.timestamp_micros()),
                    ]
                })
                .collect()
        };
        ComputedView::new(CURSORS.clone(), rows)
    }

    pub fn prepared_statements(listing: Arc<Mutex<Vec<PreparedInfo>>>) -> ComputedView {
        let rows = move || {
            (listing.lock().iter())
                .map(|p| {
                    let generic = p.generic_runs.load(std::sync::atomic::Ordering::Relaxed);
                    vec![
                        V::text(&p.name),
                        V::text(&p.statement),
                        V::Int(p.prepared_at.timestamp_micros()),
                        V::TextArray(p.parameter_types.clone()),
                        p.result_types.clone().map_or(V::Null, V::TextArray),
                        V::Bool(true),
                        V::Int(generic as i64),
                        V::Int(p.runs.saturating_sub(generic) as i64),
                    ]
                })
                .collect()
        };
        ComputedView::new(PREPARED_STATEMENTS.clone(), rows)
    }
}

#[async_trait]
impl TableProvider for ComputedView {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
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
        let batch = (self.batch)()?;
        MemTable::try_new(batch.schema(), vec![vec![batch]])?
            .scan(state, projection, filters, limit)
            .await
    }
}
