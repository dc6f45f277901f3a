//! The `public` schema as DataFusion sees it: read from the catalog on every lookup, so a
//! table created by one session is visible to the next statement of every other.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::common::Result as DfResult;

use crate::exec::table::HeapTable;
use crate::Database;

pub struct PublicSchema {
    db: Arc<Database>,
    /// Tables show the `ctid` system column.
    with_ctid: bool,
}

impl PublicSchema {
    pub fn new(db: Arc<Database>, with_ctid: bool) -> PublicSchema {
        PublicSchema { db, with_ctid }
    }
}

impl std::fmt::Debug for PublicSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicSchema")
    }
}

#[async_trait]
impl SchemaProvider for PublicSchema {
    fn table_names(&self) -> Vec<String> {
        self.db
            .catalog
            .tables()
            .into_iter()
            .filter(|t| t.schema == "public")
            .map(|t| t.name)
            .collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        Ok(self.db.catalog.table("public", name).map(|def| {
            Arc::new(HeapTable::new(self.db.clone(), def, self.with_ctid)) as Arc<dyn TableProvider>
        }))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.db.catalog.table("public", name).is_some()
    }
}
