//! A session's optimized plans of statements with parameters: what a prepared statement
//! (the extended protocol's Parse, then Bind and Execute again and again, as pgbench's
//! `-M prepared` and every driver's prepared statements do) reuses between runs.
//!
//! Turning SQL into DataFusion's logical plan and optimizing it is a fifth of a point
//! lookup's server time. For a statement with `$n` parameters the optimized plan is the
//! same for every run but for the values, so the first run keeps it, with its `$n`
//! open, and the next runs bind their values to a copy of it (folding constants again,
//! so the scans see `aid = 42` and choose their index as they would have) and go on to
//! physical planning, where iolab's planner chooses each table's scan with the run's
//! values and the statistics of the moment — PostgreSQL's "custom plan", minus the
//! parse and rewrite.
//!
//! - **Kept**: plans that read heap tables and statistics views only (not the catalogs,
//!   whose rows a plan holds) and call no stable function (DataFusion folds `now()` into
//!   the plan when it optimizes) nor one bound to the session (`current_setting`, …); the
//!   test is `plan_cache::cacheable_over`.
//! - **Key**: the statement's text, its parameters' types, and what the plan was made
//!   from: the DataFusion catalog its names resolve in (with or without `ctid`), the
//!   settings that read constants or resolve names (`TimeZone`, `DateStyle`,
//!   `IntervalStyle`, `search_path`), and the catalog's generation, which every change
//!   written to the catalog bumps (DDL, its undoing, ANALYZE), so a plan over a table
//!   that was altered, truncated (a new file) or dropped is never found again.
//! - **Bound**: [`MAX_PLANS`] per session; a full cache is emptied before it takes
//!   another. Statements of more than [`MAX_STATEMENT_BYTES`] are not kept.
//! - **Switch**: `plan_cache_mode = force_custom_plan` plans every run afresh.
//!
//! # The generic plan
//!
//! Physical planning still costs a point lookup most of its server time, so a kept
//! statement may also get a **generic plan**: a physical plan made once with its `$n`
//! unknown (`generic_plan`: `aid = $1` an Index Scan whose key the scan takes when it
//! starts) and copied for each run. It is chosen as PostgreSQL's plan cache chooses
//! (`choose_custom_plan`): the first [`CUSTOM_PLANS_FIRST`] runs plan afresh and note their
//! cost (the estimated cost of the plan's scans, `plan::partitions::plan_cost`, plus
//! PostgreSQL's charge for planning, 1000 × `cpu_operator_cost` × (relations + 1)); then
//! the generic plan is made, and each run takes it while its cost is below the average
//! custom run's. `plan_cache_mode = force_generic_plan` takes it from the first run. A
//! generic plan is planned with the session's planner settings of the moment (`SET
//! enable_indexscan = off` …) and made again when they change.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast;
use iolab_engine::plan::PlannerSettings;
use parking_lot::Mutex;

/// A statement's way to the session's kept plans.
pub struct PreparedContext {
    pub plans: Arc<PreparedPlans>,
    /// What a plan made now is made from (the key's `context`).
    pub context: String,
    /// `plan_cache_mode = force_generic_plan`.
    pub force_generic: bool,
    /// A SQL prepared statement's count of runs that took the generic plan
    /// (`pg_prepared_statements.generic_plans`), when EXECUTE runs one.
    pub generic_runs: Option<Arc<std::sync::atomic::AtomicU64>>,
}

/// PostgreSQL's charge for planning a statement afresh, added to a custom plan's cost
/// when it is weighed against the generic plan (`cached_plan_cost`): 1000 ×
/// `cpu_operator_cost` per relation `plan` reads, and one more.
pub fn planning_charge(plan: &LogicalPlan, planner: &PlannerSettings) -> f64 {
    let mut relations = 0;
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::TableScan(_) = node {
            relations += 1;
        }
        Ok(TreeNodeRecursion::Continue)
    });
    1000.0 * planner.cpu_operator_cost * (relations + 1) as f64
}

impl PreparedContext {
    /// The key of `stmt`'s kept plan, run with `values`.
    pub fn key_of(&self, stmt: &ast::Statement, values: &[ScalarValue]) -> PlanKey {
        PlanKey {
            text: stmt.to_string(),
            param_types: values.iter().map(|v| v.data_type()).collect(),
            context: self.context.clone(),
        }
    }

    /// Will this run of `parsed` with `params` take its kept generic plan, made already?
    /// (Then the statement needs no state to plan in: `Session::run_in_transaction`.)
    pub fn takes_generic_plan(
        &self,
        parsed: &crate::sql::Parsed,
        params: &Option<Vec<ScalarValue>>,
        planner: &PlannerSettings,
    ) -> bool {
        let (crate::sql::Parsed::Sql(stmt), Some(values)) = (parsed, params) else {
            return false;
        };
        if values.is_empty() || !matches!(**stmt, ast::Statement::Query(_)) {
            return false;
        }
        self.plans
            .get(&self.key_of(stmt, values))
            .is_some_and(|kept| {
                matches!(
                    kept.choose(planner, self.force_generic),
                    RunPlan::Generic(_)
                )
            })
    }
}

/// Runs planned afresh before the generic plan is weighed (PostgreSQL's 5).
pub const CUSTOM_PLANS_FIRST: u32 = 5;

/// Plans one session keeps at most.
pub const MAX_PLANS: usize = 64;
/// Longer statements are planned every time.
pub const MAX_STATEMENT_BYTES: usize = 16 * 1024;

/// What a kept plan was made from (see the module comment).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PlanKey {
    pub text: String,
    pub param_types: Vec<DataType>,
    pub context: String,
}

/// One session's kept plans.
#[derive(Debug, Default)]
pub struct PreparedPlans {
    plans: Mutex<HashMap<PlanKey, Arc<KeptPlan>>>,
}

/// A kept statement: its optimized plan with `$n` open, and how its runs were planned.
pub struct KeptPlan {
    pub logical: Arc<LogicalPlan>,
    choice: Mutex<PlanChoice>,
}

#[derive(Default)]
struct PlanChoice {
    custom_runs: u32,
    /// Their costs' sum, planning charged.
    custom_cost: f64,
    generic: Generic,
}

#[derive(Default)]
enum Generic {
    #[default]
    NotMade,
    /// The plan cannot have one (`generic_plan::template`), or it has no estimate.
    Refused,
    Made {
        template: Arc<dyn ExecutionPlan>,
        cost: f64,
        /// What it was planned with.
        planner: PlannerSettings,
    },
}

/// How a run of a kept statement is planned.
pub enum RunPlan {
    /// Afresh, with its values (then [`KeptPlan::custom_ran`]).
    Custom,
    /// From this generic plan.
    Generic(Arc<dyn ExecutionPlan>),
    /// Make the generic plan ([`KeptPlan::generic_made`]), then choose again.
    MakeGeneric,
}

impl std::fmt::Debug for KeptPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let c = self.choice.lock();
        f.debug_struct("KeptPlan")
            .field("custom_runs", &c.custom_runs)
            .field("generic", &matches!(c.generic, Generic::Made { .. }))
            .finish()
    }
}

impl KeptPlan {
    pub fn new(logical: Arc<LogicalPlan>) -> KeptPlan {
        KeptPlan {
            logical,
            choice: Mutex::default(),
        }
    }

    /// How this run is planned (see the module comment), under `planner`'s settings;
    /// `force_generic` is `plan_cache_mode = force_generic_plan`.
    pub fn choose(&self, planner: &PlannerSettings, force_generic: bool) -> RunPlan {
        let c = self.choice.lock();
        if !force_generic && c.custom_runs < CUSTOM_PLANS_FIRST {
            return RunPlan::Custom;
        }
        match &c.generic {
            Generic::NotMade => RunPlan::MakeGeneric,
            Generic::Refused => RunPlan::Custom,
            Generic::Made { planner: p, .. } if p != planner => RunPlan::MakeGeneric,
            Generic::Made { template, cost, .. } => {
                let average_custom = c.custom_cost / c.custom_runs.max(1) as f64;
                match force_generic || *cost < average_custom {
                    true => RunPlan::Generic(template.clone()),
                    false => RunPlan::Custom,
                }
            }
        }
    }

    /// The generic plan made under `planner` and its cost, or `None` if it cannot have one.
    pub fn generic_made(
        &self,
        made: Option<(Arc<dyn ExecutionPlan>, f64)>,
        planner: PlannerSettings,
    ) {
        self.choice.lock().generic = match made {
            Some((template, cost)) => Generic::Made {
                template,
                cost,
                planner,
            },
            None => Generic::Refused,
        };
    }

    /// A run planned afresh cost `cost`, its planning charged.
    pub fn custom_ran(&self, cost: f64) {
        let mut c = self.choice.lock();
        c.custom_runs = c.custom_runs.saturating_add(1);
        c.custom_cost += cost;
    }
}

impl PreparedPlans {
    pub fn get(&self, key: &PlanKey) -> Option<Arc<KeptPlan>> {
        self.plans.lock().get(key).cloned()
    }

    /// Keeps `plan` as `key`'s, returning what is kept (nothing for a long statement).
    pub fn insert(&self, key: PlanKey, plan: Arc<LogicalPlan>) -> Option<Arc<KeptPlan>> {
        if key.text.len() > MAX_STATEMENT_BYTES {
            return None;
        }
        let kept = Arc::new(KeptPlan::new(plan));
        let mut plans = self.plans.lock();
        if plans.len() >= MAX_PLANS && !plans.contains_key(&key) {
            plans.clear();
        }
        plans.insert(key, kept.clone());
        assert!(plans.len() <= MAX_PLANS);
        Some(kept)
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.plans.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::logical_expr::LogicalPlanBuilder;

    fn key(n: usize) -> PlanKey {
        PlanKey {
            text: format!("SELECT $1 + {n}"),
            param_types: vec![DataType::Int64],
            context: "postgres".into(),
        }
    }

    /// PostgreSQL's choice: five custom runs, then the generic plan while it costs less
    /// than the average custom run; made again under other planner settings.
    #[test]
    fn the_generic_plan_is_weighed_after_five_custom_runs() {
        let kept = KeptPlan::new(Arc::new(LogicalPlanBuilder::empty(false).build().unwrap()));
        let planner = PlannerSettings::default();
        let choice = |force| match kept.choose(&planner, force) {
            RunPlan::Custom => "custom",
            RunPlan::Generic(_) => "generic",
            RunPlan::MakeGeneric => "make",
        };
        for _ in 0..CUSTOM_PLANS_FIRST {
            assert_eq!(choice(false), "custom");
            kept.custom_ran(10.0);
        }
        assert_eq!(choice(true), "make");
        assert_eq!(choice(false), "make");
        let template: Arc<dyn ExecutionPlan> =
            Arc::new(datafusion::physical_plan::empty::EmptyExec::new(Arc::new(
                datafusion::arrow::datatypes::Schema::empty(),
            )));
        // Dearer than the custom runs' 10 on average: they go on, unless forced.
        kept.generic_made(Some((template.clone(), 12.0)), planner);
        assert_eq!(choice(false), "custom");
        assert_eq!(choice(true), "generic");
        kept.generic_made(Some((template, 9.5)), planner);
        assert_eq!(choice(false), "generic");
        let other = PlannerSettings {
            enable_indexscan: false,
            ..planner
        };
        assert!(matches!(kept.choose(&other, false), RunPlan::MakeGeneric));
        kept.generic_made(None, planner);
        assert_eq!(choice(false), "custom");
        assert_eq!(choice(true), "custom");
    }

    #[test]
    fn keeps_at_most_max_plans() {
        let plans = PreparedPlans::default();
        let plan = Arc::new(LogicalPlanBuilder::empty(false).build().unwrap());
        for n in 0..MAX_PLANS {
            plans.insert(key(n), plan.clone());
        }
        assert_eq!(plans.len(), MAX_PLANS);
        assert!(plans.get(&key(3)).is_some());
        // Full: emptied, then the new one kept.
        plans.insert(key(MAX_PLANS), plan.clone());
        assert_eq!(plans.len(), 1);
        assert!(plans.get(&key(3)).is_none());
        assert!(plans.get(&key(MAX_PLANS)).is_some());
        // Another context is another plan.
        let other = PlanKey {
            context: "postgres_with_ctid".into(),
            ..key(MAX_PLANS)
        };
        assert!(plans.get(&other).is_none());
        let long = PlanKey {
            text: "x".repeat(MAX_STATEMENT_BYTES + 1),
            ..key(0)
        };
        plans.insert(long.clone(), plan);
        assert!(plans.get(&long).is_none());
    }
}
