//! PostgreSQL's system catalogs, `information_schema` and system functions, so that
//! psql's `\d` family, drivers and dashboards can introspect iolab.
//!
//! Clients learn what a database holds by querying `pg_catalog` (`pg_class`,
//! `pg_attribute`, `pg_namespace`, …) and `information_schema`, and by calling functions
//! such as `format_type`, `pg_table_is_visible` and `pg_size_pretty`. iolab answers those
//! queries in three layers, each used only where the one before it cannot:
//!
//! ```text
//!   query text ──► rewrite ──────────► DataFusion ──► catalog tables (tables, info_schema)
//!      │          (OPERATOR(…), ::regclass,            + functions (functions)
//!      │           COLLATE, pg_catalog.f(…))
//!      └─► intercept (psql) ─► answered from a catalog snapshot directly
//!          (psql's \d queries with correlated sub-selects, array(select …), …)
//! ```
//!
//! 1. **Catalog tables** ([`register_schemas`]): `pg_catalog` and `information_schema`
//!    are DataFusion schemas whose tables are computed from the persistent catalog on
//!    each lookup, with PostgreSQL 18's columns and OIDs (`pg_class` = 1259, `public` =
//!    2200, `heap` = 2, user tables from 16384). Catalogs of features iolab lacks
//!    (constraints, policies, triggers, publications) exist with no rows.
//! 2. **Functions** ([`register_functions`]): PostgreSQL's information functions as
//!    DataFusion UDFs bound to the session (`current_setting`, `set_config`,
//!    `current_user`, `pg_relation_size`, `format_type`, …).
//! 3. **Rewrites** ([`rewrite_for_datafusion`], [`qualify_catalog_relations`]) of syntax
//!    DataFusion lacks, and **interception** ([`intercept`]) of the psql queries that
//!    remain beyond it.
//!
//! Everything a client sees is meant to match PostgreSQL 18; the differences are listed in
//! `tests/tests/psql_meta.rs`.

pub mod activity;
pub mod batch;
pub mod buffercache;
pub mod cached_plans;
pub mod computed_views;
pub mod constraint_rows;
pub mod datetime_functions;
pub mod format;
pub mod functions;
pub mod info_schema;
pub mod int4_series;
pub mod interval_scale;
pub mod locks;
pub mod oids;
pub mod percentile_disc;
pub mod pg_stats;
pub mod prewarm;
pub mod progress;
pub mod psql;
pub mod relation_stats;
pub mod rewrite;
pub mod sequence_functions;
pub mod sequence_views;
pub mod sleep;
pub mod snapshot;
pub mod stat_aio;
pub mod stat_database;
pub mod stat_statements;
pub mod stat_views;
pub mod tables;
pub mod time_range;
pub mod to_char;
pub mod to_char_number;
pub mod to_timestamp;
pub mod types;
pub mod view_definition;
pub mod view_scan;
pub mod wal;
pub mod xact_functions;
pub mod zoned_time;

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider};
use datafusion::execution::context::SessionState;
use iolab_catalog::PgError;
use iolab_engine::Database;
use iolab_settings::SessionSettings;
use parking_lot::Mutex;

pub use rewrite::{qualify_catalog_relations, rewrite_for_datafusion, show_reg_literals_as_names};
use snapshot::Snapshot;
use tables::{CatalogSchema, SharedCatalogState, Which};

/// What the catalog functions know about the session running a statement.
///
/// `setting_changes` collects the `set_config(name, value, is_local)` calls the statement
/// made, in order, as `(name, value, is_local)` (a NULL value is recorded as the value the
/// setting was reset to). The functions apply them to their own copy of `settings`
/// only; the caller applies them to the session (with `SessionSettings::set(name, value,
/// is_local)`) before it reports ParameterStatus. With constant arguments — the usual
/// `SELECT set_config('work_mem', '8MB', false)` — `set_config` runs while the statement
/// is optimised, so its change is in the list once the physical plan exists; with
/// arguments read from a table it runs as rows are produced, so the list is complete
/// only once the result has been sent.
pub struct SessionInfo {
    pub db: Arc<Database>,
    pub pid: i32,
    pub user: String,
    pub settings: SessionSettings,
    pub setting_changes: Arc<Mutex<Vec<(String, String, bool)>>>,
    /// What the session remembers of its sequences (`currval`, `lastval`).
    pub sequences: Arc<sequence_functions::SessionSequences>,
    /// The running statement's cancel flag, if a statement is running.
    pub cancel: Option<iolab_engine::exec::cancel::CancelFlag>,
    /// The session's temporary schema, once it has one.
    pub temp_schema: Option<String>,
}

impl SessionInfo {
    pub fn new(
        db: Arc<Database>,
        pid: i32,
        user: impl Into<String>,
        settings: SessionSettings,
    ) -> SessionInfo {
        SessionInfo {
            db,
            pid,
            user: user.into(),
            settings,
            setting_changes: Arc::new(Mutex::new(Vec::new())),
            sequences: Arc::default(),
            cancel: None,
            temp_schema: None,
        }
    }

    /// The same, with the session's temporary schema.
    pub fn with_temp_schema(mut self, temp_schema: Option<&str>) -> SessionInfo {
        self.temp_schema = temp_schema.map(str::to_string);
        self
    }

    /// The same, with the session's memory of its sequences.
    pub fn with_sequences(
        mut self,
        sequences: Arc<sequence_functions::SessionSequences>,
    ) -> SessionInfo {
        self.sequences = sequences;
        self
    }

    /// The running statement's cancel flag, for functions that wait (`pg_sleep`).
    pub fn with_cancel(mut self, cancel: iolab_engine::exec::cancel::CancelFlag) -> SessionInfo {
        self.cancel = Some(cancel);
        self
    }

    /// The `set_config` calls made so far (and clears the list).
    pub fn take_setting_changes(&self) -> Vec<(String, String, bool)> {
        std::mem::take(&mut *self.setting_changes.lock())
    }

    pub(crate) fn snapshot(&self) -> Snapshot {
        let mut snapshot = Snapshot::new(
            self.db.clone(),
            self.settings.clone(),
            self.user.clone(),
            tables::extra_tables(),
        );
        snapshot.temp_schema = self.temp_schema.clone();
        snapshot
    }
}

/// Registers the schemas `pg_catalog` and `information_schema` into `catalog`.
///
/// Their tables are built from `db`'s catalog whenever a statement looks them up. Other
/// modules may add their own views to `pg_catalog` afterwards with
/// `catalog.schema("pg_catalog").unwrap().register_table(name, provider)`; they then also
/// appear in `pg_class`, `pg_attribute` and `information_schema`, and unqualified
/// `FROM pg_…` names reach them (see `rewrite`).
pub fn register_schemas(catalog: &MemoryCatalogProvider, db: Arc<Database>) {
    let shared = SharedCatalogState::new(db);
    for (name, which) in [
        ("pg_catalog", Which::PgCatalog),
        ("information_schema", Which::InformationSchema),
    ] {
        let schema = Arc::new(CatalogSchema {
            which,
            shared: shared.clone(),
        });
        if which == Which::PgCatalog {
            stat_views::register_views(&schema, &shared.db);
            buffercache::register_view(&schema, &shared.db);
            pg_stats::register_view(&schema);
        }
        catalog
            .register_schema(name, schema)
            .expect("a memory catalog accepts schemas");
    }
}

/// Registers the catalog functions into `state`, bound to the session `info` describes.
///
/// Call once per statement on the state that will plan it, so `current_setting` and
/// `pg_settings` see the session's settings as they are now. When the state's default
/// catalog has the schemas of [`register_schemas`], their `pg_settings` view is pointed
/// at these settings too.
pub fn register_functions(state: &mut SessionState, info: &SessionInfo) {
    let shared = catalog_state(state).unwrap_or_else(|| SharedCatalogState::new(info.db.clone()));
    *shared.session.write() = Some((
        info.settings.clone(),
        info.user.clone(),
        info.temp_schema.clone(),
    ));
    crate::sql::session_time::set_options(state, &info.settings);
    if let Err(e) = functions::register(state, info, shared) {
        tracing::error!("could not register the catalog functions: {e}");
    }
    stat_views::register_table_functions(state, &info.db);
    buffercache::register_table_functions(state, info);
}

/// Is `table` one of the catalogs or statistics views iolab computes in memory (not a
/// heap table, nor a table function such as `generate_series` that may make millions of
/// rows)?
pub fn is_in_memory_catalog(table: &dyn datafusion::catalog::TableProvider) -> bool {
    use datafusion::datasource::MemTable;
    table.is::<MemTable>()
        || table.is::<stat_views::StatView>()
        || table.is::<computed_views::ComputedView>()
}

/// Is `table` one of the statistics views, whose rows depend only on the database and
/// are computed when a statement scans them (what the plan cache may keep plans of)?
pub fn is_statistics_view(table: &dyn datafusion::catalog::TableProvider) -> bool {
    table.is::<stat_views::StatView>()
}

/// The shared state of the `pg_catalog` schema in `state`'s default catalog, if any.
pub(crate) fn catalog_state(state: &SessionState) -> Option<Arc<SharedCatalogState>> {
    let name = state.config().options().catalog.default_catalog.clone();
    let catalog = state.catalog_list().catalog(&name)?;
    let schema = catalog.schema("pg_catalog")?;
    schema
        .downcast_ref::<CatalogSchema>()
        .map(|s| s.shared.clone())
}

/// Answers psql's meta-command queries that DataFusion cannot run (see `psql`); `None`
/// for every other query.
pub fn intercept(
    sql: &str,
    info: &SessionInfo,
) -> Option<Result<(SchemaRef, Vec<RecordBatch>), PgError>> {
    psql::intercept(sql, info)
}

#[cfg(test)]
mod tests;
