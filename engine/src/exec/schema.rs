//! The `public` schema as DataFusion sees it: read from the catalog on every lookup, so a
//! table created by one session is visible to the next statement of every other.
//!
//! DataFusion resolves every unqualified name in its default schema, this one; PostgreSQL
//! looks in the session's temporary schema first (`pg_temp` heads every search path). So
//! a lookup here tries the session's temporary schema first, then `public`. DataFusion
//! resolves a name written `public.t` in the same schema, so the server rewrites such names
//! to [`PERSISTENT_PUBLIC`]`.t` before planning, a schema that reads `public` alone.
//! Temporary schemas qualified by name (`pg_temp.t`, `pg_temp_3.t`) are [`TempSchema`].

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider, SchemaProvider, TableProvider};
use datafusion::common::Result as DfResult;

use iolab_catalog::TableDef;

use crate::exec::scan::to_df;
use crate::exec::table::HeapTable;
use crate::temp::SessionTemp;
use crate::Database;

/// Table `def` as DataFusion reads it.
fn heap_table(db: &Arc<Database>, def: TableDef, with_ctid: bool) -> Arc<dyn TableProvider> {
    Arc::new(HeapTable::new(db.clone(), def, with_ctid))
}

/// The name under which DataFusion finds `public` without the session's temporary tables
/// (a name no SQL statement can write unquoted).
pub const PERSISTENT_PUBLIC: &str = "$public";

pub struct PublicSchema {
    db: Arc<Database>,
    /// Tables show the `ctid` system column.
    with_ctid: bool,
    /// The session's temporary schema, searched first; `None` for [`PERSISTENT_PUBLIC`].
    temp: Option<Arc<SessionTemp>>,
}

impl PublicSchema {
    /// The default schema: the session's temporary tables, then `public`.
    pub fn new(db: Arc<Database>, with_ctid: bool, temp: Arc<SessionTemp>) -> PublicSchema {
        PublicSchema {
            db,
            with_ctid,
            temp: Some(temp),
        }
    }

    /// `public` alone ([`PERSISTENT_PUBLIC`]).
    pub fn persistent(db: Arc<Database>, with_ctid: bool) -> PublicSchema {
        PublicSchema {
            db,
            with_ctid,
            temp: None,
        }
    }

    fn find(&self, name: &str) -> Option<TableDef> {
        let in_temp = (self.temp.as_ref())
            .and_then(|t| t.schema())
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
        Ok(self
            .find(name)
            .map(|def| heap_table(&self.db, def, self.with_ctid)))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.find(name).is_some()
    }
}

/// A temporary schema: the session's own under `pg_temp` (`named` is `None`), or the one
/// named `pg_temp_N` (the session's own or another's).
pub struct TempSchema {
    db: Arc<Database>,
    with_ctid: bool,
    temp: Arc<SessionTemp>,
    named: Option<String>,
}

impl TempSchema {
    /// The session's own, `pg_temp`.
    pub fn new(db: Arc<Database>, with_ctid: bool, temp: Arc<SessionTemp>) -> TempSchema {
        TempSchema {
            db,
            with_ctid,
            temp,
            named: None,
        }
    }

    /// The schema the session reads: its own, or `None` for another session's.
    fn readable(&self) -> Option<&str> {
        let own = self.temp.schema();
        match &self.named {
            Some(name) if Some(name.as_str()) != own => None,
            _ => own,
        }
    }
}

impl std::fmt::Debug for TempSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TempSchema({:?})", self.named)
    }
}

#[async_trait]
impl SchemaProvider for TempSchema {
    fn table_names(&self) -> Vec<String> {
        let Some(schema) = self.readable() else {
            return vec![];
        };
        let tables = self.db.catalog.tables().into_iter();
        tables
            .filter(|t| t.schema == schema)
            .map(|t| t.name)
            .collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let Some(schema) = self.readable() else {
            let other = self
                .named
                .as_deref()
                .expect("only a named schema is another's");
            return match self.db.catalog.table(other, name) {
                Some(_) => Err(to_df(crate::temp::other_sessions_error())),
                None => Ok(None),
            };
        };
        let def = self.db.catalog.table(schema, name);
        Ok(def.map(|def| heap_table(&self.db, def, self.with_ctid)))
    }

    fn table_exist(&self, name: &str) -> bool {
        let schema = self.readable();
        schema.is_some_and(|s| self.db.catalog.table(s, name).is_some())
    }
}

/// A session's database as DataFusion sees it: the schemas registered in `inner`, and
/// every temporary schema `pg_temp_N` by name.
pub struct SessionCatalog {
    inner: MemoryCatalogProvider,
    db: Arc<Database>,
    with_ctid: bool,
    temp: Arc<SessionTemp>,
}

impl SessionCatalog {
    pub fn new(
        inner: MemoryCatalogProvider,
        db: Arc<Database>,
        with_ctid: bool,
        temp: Arc<SessionTemp>,
    ) -> SessionCatalog {
        SessionCatalog {
            inner,
            db,
            with_ctid,
            temp,
        }
    }
}

impl std::fmt::Debug for SessionCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionCatalog")
    }
}

impl CatalogProvider for SessionCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.inner.schema_names()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if !crate::temp::is_temp_schema(name) {
            return self.inner.schema(name);
        }
        Some(Arc::new(TempSchema {
            db: self.db.clone(),
            with_ctid: self.with_ctid,
            temp: self.temp.clone(),
            named: Some(name.to_string()),
        }))
    }

    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> DfResult<Option<Arc<dyn SchemaProvider>>> {
        self.inner.register_schema(name, schema)
    }
}
