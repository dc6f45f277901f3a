//! The `public` schema as DataFusion sees it: read from the catalog on every lookup, so a
//! table created by one session is visible to the next statement of every other.
//!
//! DataFusion resolves every unqualified name in its default schema, this one; PostgreSQL
//! looks in the session's temporary schema first (`pg_temp` heads every search path). So
//! a lookup here tries the session's temporary schema first, then `public`. (The price:
//! a name written `public.t` finds the session's temporary `t` too, when there is one.)
//! Temporary schemas qualified by name (`pg_temp.t`, `pg_temp_3.t`) are [`TempSchema`].

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::common::Result as DfResult;

use iolab_catalog::TableDef;

use crate::exec::table::HeapTable;
use crate::temp::SessionTemp;
use crate::Database;

pub struct PublicSchema {
    db: Arc<Database>,
    /// Tables show the `ctid` system column.
    with_ctid: bool,
    /// The session's temporary schema, searched first.
    temp: Arc<SessionTemp>,
}

impl PublicSchema {
    pub fn new(db: Arc<Database>, with_ctid: bool, temp: Arc<SessionTemp>) -> PublicSchema {
        PublicSchema {
            db,
            with_ctid,
            temp,
        }
    }

    fn find(&self, name: &str) -> Option<TableDef> {
        let in_temp = self
            .temp
            .schema()
            .and_then(|s| self.db.catalog.table(s, name));
        in_temp.or_else(|| self.db.catalog.table("public", name))
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
        Ok(self.find(name).map(|def| {
            Arc::new(HeapTable::new(self.db.clone(), def, self.with_ctid)) as Arc<dyn TableProvider>
        }))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.find(name).is_some()
    }
}

/// The session's temporary schema under its names `pg_temp` and `pg_temp_N`.
pub struct TempSchema {
    db: Arc<Database>,
    with_ctid: bool,
    temp: Arc<SessionTemp>,
}

impl TempSchema {
    pub fn new(db: Arc<Database>, with_ctid: bool, temp: Arc<SessionTemp>) -> TempSchema {
        TempSchema {
            db,
            with_ctid,
            temp,
        }
    }
}

impl std::fmt::Debug for TempSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TempSchema({:?})", self.temp.schema())
    }
}

#[async_trait]
impl SchemaProvider for TempSchema {
    fn table_names(&self) -> Vec<String> {
        let Some(schema) = self.temp.schema() else {
            return vec![];
        };
        let tables = self.db.catalog.tables().into_iter();
        tables
            .filter(|t| t.schema == schema)
            .map(|t| t.name)
            .collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let def = self
            .temp
            .schema()
            .and_then(|s| self.db.catalog.table(s, name));
        Ok(def.map(|def| {
            Arc::new(HeapTable::new(self.db.clone(), def, self.with_ctid)) as Arc<dyn TableProvider>
        }))
    }

    fn table_exist(&self, name: &str) -> bool {
        let schema = self.temp.schema();
        schema.is_some_and(|s| self.db.catalog.table(s, name).is_some())
    }
}
