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

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::logical_expr::LogicalPlan;
use parking_lot::Mutex;

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
    plans: Mutex<HashMap<PlanKey, Arc<LogicalPlan>>>,
}

impl PreparedPlans {
    pub fn get(&self, key: &PlanKey) -> Option<Arc<LogicalPlan>> {
        self.plans.lock().get(key).cloned()
    }

    pub fn insert(&self, key: PlanKey, plan: Arc<LogicalPlan>) {
        if key.text.len() > MAX_STATEMENT_BYTES {
            return;
        }
        let mut plans = self.plans.lock();
        if plans.len() >= MAX_PLANS && !plans.contains_key(&key) {
            plans.clear();
        }
        plans.insert(key, plan);
        assert!(plans.len() <= MAX_PLANS);
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
