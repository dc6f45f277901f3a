//! The server's plan cache: optimized DataFusion plans of statistics queries, reused the
//! way PostgreSQL reuses a prepared statement's generic plan.
//!
//! Planning a query over a statistics view (SQL → logical plan → analyzer → optimizer)
//! costs several times what computing and sending its rows does. Monitoring clients send
//! the same few statements over and over, differing only in the constants of their
//! filters, so:
//!
//! ```text
//!   statement ─► normalize ─► key = (text with $n, the $n's types, context)
//!                  │              │
//!                  │              ├─ cached plans ─┐
//!                  │              └─ missing: plan the normalized statement (typed $n),
//!                  │                  check it, optimize it, make its generic physical
//!                  │                  plan, cache both ──────────────────┤
//!                  │                                                    ▼
//!                  └── parameter values ──────────► a copy of the generic physical plan
//!                                                   with the values in; or (no generic
//!                                                   plan) bind the values to the logical
//!                                                   plan, fold constants, physical
//!                                                   planning ─► execution
//! ```
//!
//! - **What is cached**: the optimized logical plan with `$n` placeholders, and its
//!   generic physical plan when it can have one (`generic_plan`: the parameters must sit
//!   where a copy can take their values). The views compute their rows when a plan runs
//!   (`pgcatalog::view_scan`), so a cached plan never holds statistics; the history views
//!   get each run's `time` window from its bound filters (`time_range`). A statement
//!   without a generic physical plan binds its values to the logical plan, folds
//!   constants again (so `time BETWEEN $1 AND $2` reaches the history views as timestamp
//!   constants) and makes the physical plan on every run.
//! - **What may be cached**: queries whose relations are all statistics views
//!   (`pgcatalog::stat_views`, rows computed at scan time from the database) and
//!   whose plan calls no function bound to a session (iolab's `current_setting`,
//!   `pg_backend_pid`, … hold the statement's session and settings) nor a stable one
//!   (DataFusion folds those when it optimizes: `now()` itself is a parameter, see
//!   `normalize`). Anything else is planned every time, as before; a statement found
//!   uncacheable after planning is remembered as such so it is not planned twice again.
//!   `EXPLAIN` always plans afresh.
//! - **Key**: the normalized text, the parameters' types, and the plan's context: the
//!   DataFusion catalog names resolve in (with or without `ctid`) and the settings that
//!   read constants (`TimeZone`, `DateStyle`, `IntervalStyle`, `search_path`). The views'
//!   definitions are compiled in and `pg_…` names resolve in `pg_catalog` first, so DDL
//!   cannot change such a plan. (A user's view is planned into the statements that name
//!   it, so DDL could change those; `normalize` takes none of them today, and the context
//!   also holds the catalog's views generation, which every CREATE [OR REPLACE] / DROP
//!   VIEW changes, so a plan made from an older definition would never be found again.)
//! - **Bound**: [`MAX_ENTRIES`] entries server-wide, least recently used evicted first
//!   (found by a scan of the entries when one is added to a full cache); statements of
//!   more than [`MAX_STATEMENT_BYTES`] are not cached. An entry is its key and a plan
//!   over one to a few views (estimated at a few kB to tens of kB; not measured).
//! - **Switch**: `plan_cache_mode = force_custom_plan` plans every statement afresh, as it
//!   makes PostgreSQL plan every execution of a prepared statement.
//!
//! `pg_cached_plans` shows the entries, shaped after PostgreSQL's
//! `pg_prepared_statements` (`generic_plans` = runs that reused the plan).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::{Expr, LogicalPlan, Volatility};
use datafusion::physical_plan::ExecutionPlan;
use parking_lot::Mutex;

/// At most this many statements are cached.
pub const MAX_ENTRIES: usize = 256;
/// Statements longer than this are not cached.
pub const MAX_STATEMENT_BYTES: usize = 8192;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlanKey {
    /// The normalized statement.
    pub text: String,
    pub param_types: Vec<DataType>,
    /// The catalog names resolve in and the settings that read constants.
    pub context: String,
}

/// A cached statement's plans.
pub struct CachedStatement {
    /// The optimized logical plan, with `$n` placeholders.
    pub logical: Arc<LogicalPlan>,
    /// Its physical plan with the parameters left open (`generic_plan`), when it can
    /// have one.
    pub physical: Option<Arc<dyn ExecutionPlan>>,
}

/// What the cache knows about a statement.
pub enum Lookup {
    Plan(Arc<CachedStatement>),
    /// Planned once and found uncacheable: plan it the ordinary way.
    Uncacheable,
    Missing,
}

struct Entry {
    /// `None`: uncacheable.
    plan: Option<Arc<CachedStatement>>,
    prepared_at_us: i64,
    /// Runs that reused the plan.
    generic_plans: i64,
    last_used_at_us: i64,
    /// Order of last use (larger = more recent).
    last_used: u64,
}

/// One row of `pg_cached_plans`.
pub struct CachedPlanRow {
    pub statement: String,
    pub parameter_types: Vec<DataType>,
    pub prepare_time_us: i64,
    pub generic_plans: i64,
    pub last_used_us: i64,
    pub generic_physical_plan: bool,
}

#[derive(Default)]
struct Entries {
    by_key: HashMap<PlanKey, Entry>,
    clock: u64,
}

pub struct PlanCache {
    entries: Mutex<Entries>,
    capacity: usize,
}

impl Default for PlanCache {
    fn default() -> Self {
        PlanCache::with_capacity(MAX_ENTRIES)
    }
}

impl PlanCache {
    pub fn with_capacity(capacity: usize) -> PlanCache {
        assert!(capacity > 0, "a plan cache holds at least one entry");
        PlanCache {
            entries: Mutex::default(),
            capacity,
        }
    }

    /// The cached plan of `key`, counted as a reuse.
    pub fn get(&self, key: &PlanKey) -> Lookup {
        let mut entries = self.entries.lock();
        entries.clock += 1;
        let clock = entries.clock;
        let Some(entry) = entries.by_key.get_mut(key) else {
            return Lookup::Missing;
        };
        entry.last_used = clock;
        match &entry.plan {
            Some(plan) => {
                entry.generic_plans += 1;
                entry.last_used_at_us = now_us();
                Lookup::Plan(plan.clone())
            }
            None => Lookup::Uncacheable,
        }
    }

    /// Adds `key`'s plan (`None`: uncacheable), evicting the least recently used entry
    /// of a full cache.
    pub fn insert(&self, key: PlanKey, plan: Option<Arc<CachedStatement>>) {
        if key.text.len() > MAX_STATEMENT_BYTES {
            return;
        }
        let mut entries = self.entries.lock();
        if entries.by_key.len() >= self.capacity && !entries.by_key.contains_key(&key) {
            let oldest = entries
                .by_key
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
                .expect("a full cache has entries");
            entries.by_key.remove(&oldest);
        }
        entries.clock += 1;
        let now = now_us();
        let entry = Entry {
            plan,
            prepared_at_us: now,
            generic_plans: 0,
            last_used_at_us: now,
            last_used: entries.clock,
        };
        entries.by_key.insert(key, entry);
        assert!(entries.by_key.len() <= self.capacity);
    }

    /// The cached plans (not the statements remembered as uncacheable), oldest first.
    pub fn rows(&self) -> Vec<CachedPlanRow> {
        let entries = self.entries.lock();
        let mut rows: Vec<CachedPlanRow> = entries
            .by_key
            .iter()
            .filter(|(_, e)| e.plan.is_some())
            .map(|(k, e)| CachedPlanRow {
                statement: k.text.clone(),
                parameter_types: k.param_types.clone(),
                prepare_time_us: e.prepared_at_us,
                generic_plans: e.generic_plans,
                last_used_us: e.last_used_at_us,
                generic_physical_plan: e.plan.as_ref().is_some_and(|p| p.physical.is_some()),
            })
            .collect();
        rows.sort_by_key(|r| r.prepare_time_us);
        rows
    }
}

fn now_us() -> i64 {
    chrono::Utc::now().timestamp_micros()
}

/// May `plan` (before optimization) be cached: does it scan statistics views only and
/// call no session-bound or stable function? (See the module documentation.)
pub fn cacheable(plan: &LogicalPlan) -> bool {
    cacheable_over(plan, crate::pgcatalog::is_statistics_view)
}

/// May `plan` (before optimization) be kept: does it scan at least one relation, each
/// one `relation_ok` takes, and call no session-bound or stable function?
pub fn cacheable_over(
    plan: &LogicalPlan,
    relation_ok: impl Fn(&dyn datafusion::catalog::TableProvider) -> bool,
) -> bool {
    let mut scans = 0;
    let mut ok = true;
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(scan) = node {
            scans += 1;
            let view = datafusion::datasource::source_as_provider(&scan.source)
                .is_ok_and(|p| relation_ok(p.as_ref()));
            if !view {
                ok = false;
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::ScalarFunction(f) = e {
                    if f.func.signature().volatility == Volatility::Stable
                        || crate::pgcatalog::functions::is_session_function(&f.func)
                    {
                        ok = false;
                        return Ok(TreeNodeRecursion::Stop);
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })?;
        Ok(if ok {
            TreeNodeRecursion::Continue
        } else {
            TreeNodeRecursion::Stop
        })
    });
    ok && scans > 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::LogicalPlanBuilder;

    fn key(n: usize) -> PlanKey {
        PlanKey {
            text: format!("SELECT {n}"),
            param_types: vec![],
            context: String::new(),
        }
    }

    fn plan() -> Arc<CachedStatement> {
        Arc::new(CachedStatement {
            logical: Arc::new(LogicalPlanBuilder::empty(false).build().unwrap()),
            physical: None,
        })
    }

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let cache = PlanCache::with_capacity(2);
        cache.insert(key(1), Some(plan()));
        cache.insert(key(2), Some(plan()));
        assert!(matches!(cache.get(&key(1)), Lookup::Plan(_)));
        cache.insert(key(3), None);
        assert!(matches!(cache.get(&key(2)), Lookup::Missing));
        assert!(matches!(cache.get(&key(1)), Lookup::Plan(_)));
        assert!(matches!(cache.get(&key(3)), Lookup::Uncacheable));
        let rows = cache.rows();
        assert_eq!(rows.len(), 1, "uncacheable statements are not shown");
        assert_eq!(rows[0].statement, "SELECT 1");
        assert_eq!(rows[0].generic_plans, 2);
    }

    #[test]
    fn long_statements_are_not_cached() {
        let cache = PlanCache::with_capacity(2);
        let long = PlanKey {
            text: "x".repeat(MAX_STATEMENT_BYTES + 1),
            ..key(0)
        };
        cache.insert(long.clone(), Some(plan()));
        assert!(matches!(cache.get(&long), Lookup::Missing));
    }
}
