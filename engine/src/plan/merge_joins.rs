//! Merge joins in PostgreSQL's key order: ascending, NULLs last.
//!
//! DataFusion's sort-merge join (chosen when `enable_hashjoin` is off) asks for its inputs
//! sorted with NULLs first, and EXPLAIN would show `Sort Key: t.a NULLS FIRST` under it.
//! The order of NULL keys does not matter to an inner or outer equi-join's answer, so
//! [`MergeJoinsNullsLast`], run before DataFusion adds the sorts its nodes require, asks
//! for PostgreSQL's default order instead: the same sorts PostgreSQL's Merge Join reads.

use std::any::Any;
use std::sync::Arc;

use datafusion::arrow::compute::SortOptions;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::joins::SortMergeJoinExec;
use datafusion::physical_plan::ExecutionPlan;

/// Makes every merge join order its keys NULLs last (see the module comment).
#[derive(Debug)]
pub struct MergeJoinsNullsLast;

impl PhysicalOptimizerRule for MergeJoinsNullsLast {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            let Some(join) = (node.as_ref() as &dyn Any).downcast_ref::<SortMergeJoinExec>() else {
                return Ok(Transformed::no(node));
            };
            if join.sort_options().iter().all(|o| !o.nulls_first) {
                return Ok(Transformed::no(node));
            }
            let options = (join.sort_options().iter())
                .map(|o| SortOptions {
                    descending: o.descending,
                    nulls_first: false,
                })
                .collect();
            let rebuilt = SortMergeJoinExec::try_new(
                join.left().clone(),
                join.right().clone(),
                join.on().to_vec(),
                join.filter().clone(),
                join.join_type(),
                options,
                join.null_equality(),
            )?;
            Ok(Transformed::yes(Arc::new(rebuilt) as Arc<dyn ExecutionPlan>))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "merge_joins_nulls_last"
    }

    fn schema_check(&self) -> bool {
        true
    }
}
