//! Statements that name views: each view's query is planned again, as part of the
//! statement, so a view reads the current rows and statistics every time.
//!
//! DataFusion resolves a statement's relation names before it plans (each name is looked
//! up once in the session's catalogs). Before that happens, [`plan_views`] finds the names
//! of the statement that are views in iolab's catalog, plans each view's stored SQL with
//! the statement's own state (so a view over a view is planned the same way, one level
//! down), names the result columns as the view does and wraps the plan in a
//! [`StoredView`]. The statement is then planned on a copy of the state whose `public`
//! schema shows those views ([`with_views`]): DataFusion inlines a view's plan where the
//! name is used (`LogicalPlanBuilder::scan` with a provider that has a logical plan), so
//! the statement's plan, its EXPLAIN and its execution contain the tables and statistics
//! views underneath.
//!
//! ```text
//!   SELECT … FROM w          w = SELECT … FROM v        v = SELECT … FROM t
//!   plan_views(stmt) ──► plan(w's SQL) ──► plan_views ──► plan(v's SQL) ──► Scan t
//!        ▲                     ▲                              │
//!        └── StoredView w ◄────┴──── StoredView v ◄───────────┘
//! ```
//!
//! Each level knows the views it is inside of (`within`, outermost first): a view that
//! names one of those is a cycle (which CREATE OR REPLACE can make, as in PostgreSQL) and
//! fails with PostgreSQL's 42P17 error instead of recursing without end. Nesting is also
//! bounded by [`MAX_VIEW_DEPTH`] (each level is a planning of its own, on the stack).
//!
//! [`relations_read`] is how CREATE VIEW finds what a new view depends on: the views the
//! plan inlined, and the tables it scans itself (not those it scans inside a view).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{
    CatalogProvider, CatalogProviderList, SchemaProvider, Session, TableProvider,
};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::Column;
use datafusion::datasource::ViewTable;
use datafusion::error::Result as DfResult;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, TableType};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::sql::sqlparser::ast;
use iolab_catalog::{sqlstate, PgError, PgResult, ViewDef};
use iolab_engine::exec::table::HeapTable;
use iolab_engine::Database;

use crate::errors::from_datafusion;
use crate::sql::Parsed;

/// Views nest at most this deep in one statement. Each level plans a query of its own and
/// DataFusion's planning and optimizing recurse over the whole plan, on a runtime thread's
/// stack (2 MiB): a debug build was seen to overflow it at an EXPLAIN 15 views deep, and
/// to run 12 deep without trouble.
pub const MAX_VIEW_DEPTH: usize = 12;

/// The database DataFusion plans a view's query in (without the `ctid` column).
const VIEW_DATABASE: &str = "postgres";

/// A view planned for one statement.
pub struct StoredView {
    pub def: ViewDef,
    view: ViewTable,
    /// Set when DataFusion inlined the view into the statement's plan.
    used: AtomicBool,
}

impl std::fmt::Debug for StoredView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StoredView({})", self.def.name)
    }
}

#[async_trait]
impl TableProvider for StoredView {
    fn schema(&self) -> SchemaRef {
        self.view.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    fn get_logical_plan(&'_ self) -> Option<Cow<'_, LogicalPlan>> {
        self.used.store(true, Ordering::Relaxed);
        self.view.get_logical_plan()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        self.view.scan(state, projection, filters, limit).await
    }
}

/// The database of `state`'s catalogs, if it has iolab's.
fn database(state: &SessionState) -> Option<Arc<Database>> {
    crate::pgcatalog::catalog_state(state).map(|s| s.db.clone())
}

/// The views of the catalog `stmt` names (unqualified or in `public`), by name.
fn named_views(db: &Database, stmt: &ast::Statement) -> Vec<ViewDef> {
    let mut views: Vec<ViewDef> = Vec::new();
    let _ = ast::visit_relations(stmt, |name| {
        if let Ok((schema, name)) = crate::sql::ddl::split_name(name) {
            if schema.as_deref().is_none_or(|s| s == "public") {
                if let Some(def) = db.catalog.view("public", &name) {
                    if !views.iter().any(|v| v.oid == def.oid) {
                        views.push(def);
                    }
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    views
}

/// Plans the views `stmt` names (`within`: the views `stmt` is the query of, outermost
/// first; empty for a client's statement).
pub(crate) async fn plan_views(
    state: &SessionState,
    stmt: &ast::Statement,
    within: &[u32],
) -> PgResult<Vec<Arc<StoredView>>> {
    let Some(db) = database(state) else {
        return Ok(Vec::new());
    };
    let defs = named_views(&db, stmt);
    if defs.is_empty() {
        return Ok(Vec::new());
    }
    let mut view_state = state.clone();
    if state.config().options().catalog.default_catalog != VIEW_DATABASE {
        view_state
            .config_mut()
            .options_mut()
            .catalog
            .default_catalog = VIEW_DATABASE.into();
    }
    let mut planned = Vec::with_capacity(defs.len());
    for def in defs {
        if within.contains(&def.oid) {
            return Err(PgError::new(
                sqlstate::INVALID_RECURSION,
                format!(
                    "infinite recursion detected in rules for relation \"{}\"",
                    def.name
                ),
            ));
        }
        if within.len() >= MAX_VIEW_DEPTH {
            return Err(PgError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                format!(
                    "views nest more than {MAX_VIEW_DEPTH} deep at view \"{}\"",
                    def.name
                ),
            ));
        }
        let inner: Vec<u32> = within.iter().copied().chain([def.oid]).collect();
        let plan = plan_view_query(&view_state, &def, &inner).await?;
        planned.push(Arc::new(StoredView {
            view: ViewTable::new(plan, Some(def.query.clone())),
            def,
            used: AtomicBool::new(false),
        }));
    }
    Ok(planned)
}

/// The plan of a view's query, its columns named as the view's.
async fn plan_view_query(
    state: &SessionState,
    def: &ViewDef,
    within: &[u32],
) -> PgResult<LogicalPlan> {
    let stmt = match crate::sql::parse(&def.query, &def.query, 0)? {
        Parsed::Sql(stmt) => stmt,
        other => {
            return Err(PgError::internal(format!(
                "view \"{}\" holds no query: {other:?}",
                def.name
            )))
        }
    };
    let plan = Box::pin(crate::sql::plan_statement_at(state, &stmt, &[], within))
        .await?
        .0;
    let fields = plan.schema().fields().len();
    if fields < def.columns.len() {
        return Err(PgError::internal(format!(
            "view \"{}\" has {} columns, its query {fields}",
            def.name,
            def.columns.len()
        )));
    }
    let named: Vec<Expr> = def
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| Expr::Column(Column::from(plan.schema().qualified_field(i))).alias(&c.name))
        .collect();
    LogicalPlanBuilder::from(plan)
        .project(named)
        .and_then(|b| b.build())
        .map_err(from_datafusion)
}

/// A copy of `state` whose `public` schema also holds `views`.
pub(crate) fn with_views(state: &SessionState, views: &[Arc<StoredView>]) -> SessionState {
    let by_name: HashMap<String, Arc<dyn TableProvider>> = views
        .iter()
        .map(|v| (v.def.name.clone(), v.clone() as Arc<dyn TableProvider>))
        .collect();
    let mut state = state.clone();
    let list = Arc::new(ViewCatalogList {
        inner: state.catalog_list().clone(),
        views: Arc::new(by_name),
    });
    state.register_catalog_list(list);
    state
}

/// The relations (table and view OIDs) `plan` reads directly, given the views that were
/// planned for it: the views it inlined, and the heap tables it scans outside them.
pub(crate) fn relations_read(plan: &LogicalPlan, views: &[Arc<StoredView>]) -> Vec<u32> {
    let used: Vec<&Arc<StoredView>> = views
        .iter()
        .filter(|v| v.used.load(Ordering::Relaxed))
        .collect();
    let mut inside_views: HashSet<usize> = HashSet::new();
    for v in &used {
        if let Some(p) = v.view.get_logical_plan() {
            scans(&p, |source, _| {
                inside_views.insert(source);
            });
        }
    }
    let mut oids: Vec<u32> = used.iter().map(|v| v.def.oid).collect();
    scans(plan, |source, oid| {
        if let Some(oid) = oid.filter(|_| !inside_views.contains(&source)) {
            oids.push(oid);
        }
    });
    oids.sort_unstable();
    oids.dedup();
    oids
}

/// Calls `f` with each table scan of `plan` (subqueries too): the address of its source
/// and the OID of the heap table it reads, if it reads one.
fn scans(plan: &LogicalPlan, mut f: impl FnMut(usize, Option<u32>)) {
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            let address = Arc::as_ptr(&scan.source) as *const () as usize;
            let oid = datafusion::datasource::source_as_provider(&scan.source)
                .ok()
                .and_then(|p| p.downcast_ref::<HeapTable>().map(|t| t.def.oid));
            f(address, oid);
        }
        Ok(TreeNodeRecursion::Continue)
    });
}

/// The session's catalogs, with the statement's views added to each `public` schema.
#[derive(Debug)]
struct ViewCatalogList {
    inner: Arc<dyn CatalogProviderList>,
    views: Arc<HashMap<String, Arc<dyn TableProvider>>>,
}

impl CatalogProviderList for ViewCatalogList {
    fn register_catalog(
        &self,
        name: String,
        catalog: Arc<dyn CatalogProvider>,
    ) -> Option<Arc<dyn CatalogProvider>> {
        self.inner.register_catalog(name, catalog)
    }

    fn catalog_names(&self) -> Vec<String> {
        self.inner.catalog_names()
    }

    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        let inner = self.inner.catalog(name)?;
        Some(Arc::new(ViewCatalog {
            inner,
            views: self.views.clone(),
        }))
    }
}

#[derive(Debug)]
struct ViewCatalog {
    inner: Arc<dyn CatalogProvider>,
    views: Arc<HashMap<String, Arc<dyn TableProvider>>>,
}

impl CatalogProvider for ViewCatalog {
    fn schema_names(&self) -> Vec<String> {
        self.inner.schema_names()
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        let inner = self.inner.schema(name)?;
        if name != "public" {
            return Some(inner);
        }
        Some(Arc::new(ViewSchema {
            inner,
            views: self.views.clone(),
        }))
    }
}

#[derive(Debug)]
struct ViewSchema {
    inner: Arc<dyn SchemaProvider>,
    views: Arc<HashMap<String, Arc<dyn TableProvider>>>,
}

#[async_trait]
impl SchemaProvider for ViewSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.inner.table_names();
        names.extend(self.views.keys().cloned());
        names
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        match self.views.get(name) {
            Some(view) => Ok(Some(view.clone())),
            None => self.inner.table(name).await,
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        self.views.contains_key(name) || self.inner.table_exist(name)
    }
}
