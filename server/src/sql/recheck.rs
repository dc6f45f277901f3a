//! Rows another transaction updated while a DELETE, an UPDATE or a `SELECT … FOR UPDATE`
//! (`row_locks`) was on its way to them: PostgreSQL's READ COMMITTED "EvalPlanQual".
//!
//! The statement found a row through its snapshot; by the time it came to stamp it, a
//! transaction that has since committed had replaced it with a newer version
//! (`Deleted::Updated`). PostgreSQL then applies the command to the newest version if
//! that still meets the command's condition, and so does iolab:
//!
//! 1. the update chain is followed from the version found to the newest one
//!    (`HeapDeleter::newest_version`; none when the row was deleted at last);
//! 2. those versions are read by TID (`heap::fetch`) into a stand-in of the table;
//! 3. the command's row query (`dml::row_query`: `SELECT x.ctid, <new values> FROM t AS x
//!    [, others] WHERE <condition>`) runs again with `t AS x` reading the stand-in, so the
//!    condition is judged, and an UPDATE's new values computed, on the newest versions;
//! 4. the rows it gives go through the command again — and one replaced again meanwhile
//!    comes back here.
//!
//! Other tables of `UPDATE … FROM` / `DELETE … USING` are read again under the statement's
//! snapshot (PostgreSQL reuses the rows it had joined; they differ only where those tables
//! changed during the statement too).

use std::sync::Arc;

use datafusion::catalog::{
    CatalogProvider, CatalogProviderList, MemTable, MemoryCatalogProvider, MemorySchemaProvider,
    SchemaProvider,
};
use datafusion::execution::session_state::{SessionState, SessionStateBuilder};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::sql::sqlparser::ast;
use iolab_catalog::{PgError, PgResult, TableDef};
use iolab_engine::heap::delete::HeapDeleter;
use iolab_engine::heap::fetch;

use crate::errors::from_datafusion;
use crate::sql::{dml, StatementRun};

/// Where the stand-in is: `iolab_recheck.rows.newest`, a catalog of its own.
const CATALOG: &str = "iolab_recheck";
const SCHEMA: &str = "rows";
const TABLE: &str = "newest";

/// A DELETE's or UPDATE's row query (or a locking SELECT) reading the stand-in instead of
/// its table.
pub struct Recheck {
    query: ast::Statement,
    table: TableDef,
}

impl Recheck {
    /// The recheck of `stmt` (a DELETE or UPDATE); `old_values` as the statement's own row
    /// query was built (a DELETE with RETURNING reads the old values).
    pub fn new(run: &StatementRun, stmt: &ast::Statement, old_values: bool) -> PgResult<Self> {
        let found = dml::build_row_query(&run.db, run.temp.schema(), stmt, true, old_values)?
            .ok_or_else(|| PgError::internal("a recheck is for DELETE and UPDATE"))?;
        let reference = found.alias.unwrap_or_else(|| found.table.name.clone());
        Self::of_query(found.query, found.table, &reference)
    }

    /// The recheck of `query`, whose first FROM item reads `table` as `reference` and
    /// which gives each row's `ctid` (a `SELECT … FOR UPDATE`'s, `row_locks`).
    pub fn of_query(mut query: ast::Statement, table: TableDef, reference: &str) -> PgResult<Self> {
        read_stand_in(&mut query, reference.to_string())?;
        Ok(Recheck { query, table })
    }

    /// The row query's rows for the newest versions of the rows whose versions at `tids`
    /// were replaced (see the module comment); `None` when every one of those rows is gone.
    pub async fn rows(
        &self,
        run: &StatementRun,
        deleter: &mut HeapDeleter,
        tids: &[(u32, u16)],
    ) -> PgResult<Option<SendableRecordBatchStream>> {
        let fetched = tokio::task::block_in_place(|| -> PgResult<_> {
            let mut newest = Vec::with_capacity(tids.len());
            for &tid in tids {
                newest.extend(deleter.newest_version(tid)?);
            }
            if newest.is_empty() {
                return Ok(None);
            }
            let rel = run.db.relfile(self.table.relfilenode)?;
            fetch::fetch(&run.db.pool, &rel, &self.table, &newest, &mut deleter.acct).map(Some)
        })?;
        let Some(fetched) = fetched else {
            return Ok(None);
        };
        let state = with_stand_in(&run.state, fetched.batch)?;
        let plan = run.logical_plan_in(&state, &self.query).await?;
        let optimized = state.optimize(&plan).map_err(from_datafusion)?;
        let physical = state
            .query_planner()
            .create_physical_plan(&optimized, &state)
            .await
            .map_err(from_datafusion)?;
        datafusion::physical_plan::execute_stream(physical, state.task_ctx())
            .map(Some)
            .map_err(from_datafusion)
    }
}

/// Points the row query's first FROM item (the changed table) at the stand-in, under the
/// name the query's columns use for it.
fn read_stand_in(query: &mut ast::Statement, reference: String) -> PgResult<()> {
    let target = match query {
        ast::Statement::Query(q) => match q.body.as_mut() {
            ast::SetExpr::Select(select) => select.from.first_mut(),
            _ => None,
        },
        _ => None,
    };
    let Some(ast::TableFactor::Table { name, alias, .. }) = target.map(|t| &mut t.relation) else {
        return Err(PgError::internal("a row query reads its table first"));
    };
    *name = ast::ObjectName::from(vec![
        ast::Ident::new(CATALOG),
        ast::Ident::new(SCHEMA),
        ast::Ident::new(TABLE),
    ]);
    if alias.is_none() {
        *alias = Some(ast::TableAlias {
            explicit: true,
            name: ast::Ident::with_quote('"', reference),
            columns: vec![],
            at: None,
        });
    }
    Ok(())
}

/// `state` with the stand-in holding `rows` (the table's columns and `ctid`).
fn with_stand_in(
    state: &SessionState,
    rows: datafusion::arrow::record_batch::RecordBatch,
) -> PgResult<SessionState> {
    let table = MemTable::try_new(rows.schema(), vec![vec![rows]]).map_err(from_datafusion)?;
    let schema = MemorySchemaProvider::new();
    schema
        .register_table(TABLE.into(), Arc::new(table))
        .map_err(from_datafusion)?;
    let catalog = MemoryCatalogProvider::new();
    catalog
        .register_schema(SCHEMA, Arc::new(schema))
        .map_err(from_datafusion)?;
    let catalogs = WithStandIn {
        inner: state.catalog_list().clone(),
        stand_in: Arc::new(catalog),
    };
    Ok(SessionStateBuilder::new_from_existing(state.clone())
        .with_catalog_list(Arc::new(catalogs))
        .build())
}

/// The session's catalogs and the stand-in's.
#[derive(Debug)]
struct WithStandIn {
    inner: Arc<dyn CatalogProviderList>,
    stand_in: Arc<dyn CatalogProvider>,
}

impl CatalogProviderList for WithStandIn {
    fn register_catalog(
        &self,
        name: String,
        catalog: Arc<dyn CatalogProvider>,
    ) -> Option<Arc<dyn CatalogProvider>> {
        self.inner.register_catalog(name, catalog)
    }

    fn catalog_names(&self) -> Vec<String> {
        let mut names = self.inner.catalog_names();
        names.push(CATALOG.into());
        names
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        match name {
            CATALOG => Some(self.stand_in.clone()),
            _ => self.inner.catalog(name),
        }
    }
}
