//! Which hash joins run in batches when their build side exceeds the hash limit
//! (exec/hash_join_batches.rs): the last physical optimizer rule puts a
//! [`HashJoinBatchesExec`] around every hash join whose batches can give the same rows.
//!
//! Left as they are, with their build side all in memory as before:
//!
//! - a join whose output the plan sees as ordered (its probe side is, and it keeps that
//!   order): a sort above may have been left out because of it, and batches interleave
//!   the probe side;
//! - a NOT IN join (null-aware anti join): one NULL key on the probe side empties the whole
//!   result, across batches;
//! - a join that feeds a dynamic filter to its probe side's scan (iolab's scans take none,
//!   and the sessions turn DataFusion's join filters off: `enable_join_dynamic_filter_pushdown`);
//! - a CollectLeft join over several probe partitions whose output is hash-partitioned:
//!   once split, one partition returns all the rows;
//! - a join in mode Auto (not decided; DataFusion's join selection decides every join).

use std::any::Any;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};

use crate::exec::hash_join_batches::HashJoinBatchesExec;

/// Puts [`HashJoinBatchesExec`] around the hash joins that can run in batches.
#[derive(Debug)]
pub struct HashJoinBatches;

impl PhysicalOptimizerRule for HashJoinBatches {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            // The join's own type, not a wrapper that stands for one.
            let join = (node.as_ref() as &dyn Any).downcast_ref::<HashJoinExec>();
            match join.filter(|j| can_run_in_batches(j)) {
                Some(join) => Ok(Transformed::yes(Arc::new(HashJoinBatchesExec::new(
                    Arc::new(join.builder().build()?),
                )))),
                None => Ok(Transformed::no(node)),
            }
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "hash_join_batches"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Does `join` give the same rows, in a way the plan accepts, when run in batches?
fn can_run_in_batches(join: &HashJoinExec) -> bool {
    let mode_allows = match join.partition_mode() {
        PartitionMode::Partitioned => true,
        PartitionMode::CollectLeft => {
            join.right().output_partitioning().partition_count() == 1
                || !matches!(
                    join.properties().output_partitioning(),
                    Partitioning::Hash(..)
                )
        }
        PartitionMode::Auto => false,
    };
    mode_allows
        && join.properties().output_ordering().is_none()
        && !join.null_aware
        && join.dynamic_expressions_produced().is_empty()
}
