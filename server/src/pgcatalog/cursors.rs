//! `pg_cursors`: the session's open cursors (see `sql::cursor`), PostgreSQL's columns —
//! the name, the text of the statement that declared it, whether it is WITH HOLD,
//! binary or SCROLL (iolab's never are the last two) and when it was declared.
//! Protocol-level portals are not listed (PostgreSQL lists only those too).

use std::sync::{Arc, LazyLock};

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::Result;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use parking_lot::Mutex;

use super::batch::{build_batch, parse_columns, schema_of, V};
use crate::sql::cursor::CursorInfo;

static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    schema_of(&parse_columns(
        "name text, statement text, is_holdable boolean, is_binary boolean, \
         is_scrollable boolean, creation_time timestamp with time zone",
    ))
});

/// The view over one session's cursors, as `sql::cursor::Cursors` last listed them.
#[derive(Debug)]
pub struct CursorsView {
    pub listing: Arc<Mutex<Vec<CursorInfo>>>,
}

#[async_trait]
impl TableProvider for CursorsView {
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
        let rows: Vec<Vec<V>> = (self.listing.lock().iter())
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
            .collect();
        let batch = build_batch(&SCHEMA, &rows)?;
        MemTable::try_new(SCHEMA.clone(), vec![vec![batch]])?
            .scan(state, projection, filters, limit)
            .await
    }
}
