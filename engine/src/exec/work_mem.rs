//! `work_mem`: memory for each sort and hash aggregation, then temporary files.
//!
//! PostgreSQL gives every sort `work_mem` bytes and every hash table `work_mem ×
//! hash_mem_multiplier`; an operation that needs more writes sorted runs or hash batches
//! to temporary files (`base/pgsql_tmp`) and reads them back (EXPLAIN: `Sort Method:
//! external merge  Disk: …kB`, `temp read=… written=…`).
//!
//! DataFusion asks one memory pool per query for every buffer its operators keep, and
//! its sorts and aggregations register as able to spill: refused memory, they write
//! their rows to temporary files through the runtime's disk manager and merge them back.
//! [`WorkMemPool`] gives PostgreSQL's limits to those consumers, each on its own (sorts
//! `work_mem`, hash aggregations the hash limit; a repartition, which can spill too, has
//! no counterpart in PostgreSQL and no limit, nor have the aggregations over sorted
//! input, which say they can spill but fail when refused): a statement with three sorts may hold
//! three times `work_mem`, as in PostgreSQL. A consumer that holds nothing yet is always
//! granted its first request, so that a sort can take one batch however small `work_mem`
//! is (it then spills every batch). Consumers that cannot spill (hash join build sides,
//! DataFusion's merge reservations) are counted but not limited, as before this pool:
//! refusing them would fail the statement where PostgreSQL would spill.
//!
//! The limits are the session's settings, set before each statement
//! ([`WorkMemPool::set_limits`]). The files are the session's `TempFiles`
//! (`temp_files`), which also enforce `temp_file_limit`.
//!
//! Under EXPLAIN ANALYZE the pool also charges each reservation to the plan operator
//! running when it first grew (`operator_usage`), for the memory lines of Sort and
//! HashAggregate nodes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::execution::disk_manager::DiskManagerBuilder;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use parking_lot::Mutex;

use crate::exec::hash_join_batches::BUILD_CONSUMER;
use crate::exec::operator_usage::OperatorUsage;
use crate::exec::temp_files::TempFiles;

/// A session's memory pool: PostgreSQL's per-operation limits for consumers that can spill.
#[derive(Debug)]
pub struct WorkMemPool {
    /// Bytes each sort may hold (`work_mem`).
    sort_limit: AtomicUsize,
    /// Bytes each hash aggregation may hold (`work_mem × hash_mem_multiplier`).
    hash_limit: AtomicUsize,
    /// Bytes held by all consumers now.
    reserved: AtomicUsize,
    /// The operator each consumer is charged to, by consumer id (EXPLAIN ANALYZE only).
    operators: Mutex<HashMap<usize, Arc<OperatorUsage>>>,
}

impl WorkMemPool {
    pub fn new() -> WorkMemPool {
        let four_mb = 4 << 20;
        WorkMemPool {
            sort_limit: AtomicUsize::new(four_mb),
            hash_limit: AtomicUsize::new(2 * four_mb),
            reserved: AtomicUsize::new(0),
            operators: Mutex::new(HashMap::new()),
        }
    }

    /// Bytes each hash table may hold (`work_mem × hash_mem_multiplier`).
    pub fn hash_limit(&self) -> usize {
        self.hash_limit.load(Ordering::Relaxed)
    }

    /// The session's `work_mem` (kB) and `hash_mem_multiplier` for the next statement.
    pub fn set_limits(&self, work_mem_kb: i32, hash_mem_multiplier: f64) {
        let sort = work_mem_kb.max(64) as usize * 1024;
        let hash = (sort as f64 * hash_mem_multiplier.max(1.0)) as usize;
        self.sort_limit.store(sort, Ordering::Relaxed);
        self.hash_limit.store(hash, Ordering::Relaxed);
    }

    /// The operator `reservation` is charged to; when it has none yet and `growing`, the
    /// operator running now (if any) becomes its. A sort's merge reservation is no one's:
    /// DataFusion sets it aside before sorting (`sort_spill_reservation_bytes`) in case it
    /// has to merge runs from disk, and frees it unused when the rows fit in memory, so it
    /// is not memory the sort used.
    fn operator_of(
        &self,
        reservation: &MemoryReservation,
        growing: bool,
    ) -> Option<Arc<OperatorUsage>> {
        if reservation
            .consumer()
            .name()
            .starts_with("ExternalSorterMerge")
        {
            return None;
        }
        let id = reservation.consumer().id();
        let mut operators = self.operators.lock();
        if let Some(op) = operators.get(&id) {
            return Some(op.clone());
        }
        let running = OperatorUsage::running().filter(|_| growing)?;
        operators.insert(id, running.clone());
        Some(running)
    }

    /// The limit of a consumer that can spill: `work_mem` for a sort, the hash limit for a
    /// hash aggregation; none for the others — a repartition's buffers, which PostgreSQL
    /// has no counterpart of, and the aggregations over sorted input, which DataFusion
    /// marks as able to spill although a refusal fails them.
    fn limit_of(&self, reservation: &MemoryReservation) -> Option<usize> {
        let consumer = reservation.consumer();
        if !consumer.can_spill() {
            return None;
        }
        let name = consumer.name();
        if name.starts_with("ExternalSorter") {
            Some(self.sort_limit.load(Ordering::Relaxed))
        } else if name.contains("HashAggregateStream") || name.starts_with(BUILD_CONSUMER) {
            Some(self.hash_limit.load(Ordering::Relaxed))
        } else {
            None
        }
    }
}

impl std::fmt::Display for WorkMemPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "work_mem pool ({} bytes per sort, {} per hash, {} held)",
            self.sort_limit.load(Ordering::Relaxed),
            self.hash_limit.load(Ordering::Relaxed),
            self.reserved()
        )
    }
}

impl Default for WorkMemPool {
    fn default() -> WorkMemPool {
        WorkMemPool::new()
    }
}

impl MemoryPool for WorkMemPool {
    fn name(&self) -> &str {
        "work_mem"
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.reserved.fetch_add(additional, Ordering::Relaxed);
        if let Some(op) = self.operator_of(reservation, true) {
            op.memory_grew(additional as u64);
        }
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        let before = self.reserved.fetch_sub(shrink, Ordering::Relaxed);
        assert!(before >= shrink, "memory pool shrunk below zero");
        if let Some(op) = self.operator_of(reservation, false) {
            op.memory_shrank(shrink as u64);
        }
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        self.operators.lock().remove(&consumer.id());
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> DfResult<()> {
        let held = reservation.size();
        if let Some(limit) = self.limit_of(reservation).filter(|_| held > 0) {
            if held + additional > limit {
                return Err(DataFusionError::ResourcesExhausted(format!(
                    "{} would hold {} bytes, more than its {limit} (work_mem)",
                    reservation.consumer().name(),
                    held + additional
                )));
            }
        }
        self.grow(reservation, additional);
        Ok(())
    }

    fn reserved(&self) -> usize {
        self.reserved.load(Ordering::Relaxed)
    }
}

/// A session's runtime: `pool` for memory, `temp_files` for what does not fit.
pub fn runtime_env(
    pool: Arc<WorkMemPool>,
    temp_files: Arc<TempFiles>,
) -> DfResult<Arc<RuntimeEnv>> {
    RuntimeEnvBuilder::new()
        .with_memory_pool(pool)
        .with_disk_manager_builder(DiskManagerBuilder::default().with_temp_file_factory(temp_files))
        .build_arc()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::execution::memory_pool::MemoryConsumer;

    #[test]
    fn only_consumers_that_can_spill_are_held_to_work_mem() {
        let pool = Arc::new(WorkMemPool::new());
        pool.set_limits(64, 2.0);
        let as_pool: Arc<dyn MemoryPool> = pool.clone();
        let sort = MemoryConsumer::new("ExternalSorter[0]")
            .with_can_spill(true)
            .register(&as_pool);
        let aggregate = MemoryConsumer::new("FinalHashAggregateStream[0]")
            .with_can_spill(true)
            .register(&as_pool);
        let join = MemoryConsumer::new("HashJoinInput").register(&as_pool);
        let repartition = MemoryConsumer::new("RepartitionExec[0]")
            .with_can_spill(true)
            .register(&as_pool);
        let ordered = MemoryConsumer::new("OrderedFinalAggregateStream[0]")
            .with_can_spill(true)
            .register(&as_pool);

        // The first request is granted however large: a sort holds at least one batch.
        sort.try_grow(1 << 20).unwrap();
        assert!(
            sort.try_grow(1).is_err(),
            "beyond work_mem once holding memory"
        );
        sort.free();
        sort.try_grow(60 * 1024).unwrap();
        assert!(sort.try_grow(8 * 1024).is_err(), "64 kB is the limit");
        // Aggregations get work_mem × hash_mem_multiplier.
        aggregate.try_grow(100 * 1024).unwrap();
        aggregate.try_grow(28 * 1024).unwrap();
        assert!(aggregate.try_grow(1).is_err());
        // A hash join's build side cannot spill: never refused.
        join.try_grow(64 << 20).unwrap();
        // Nor a repartition's buffers.
        repartition.try_grow(1 << 20).unwrap();
        repartition.try_grow(1 << 20).unwrap();
        // Nor an aggregation over sorted input.
        ordered.try_grow(1 << 20).unwrap();
        ordered.try_grow(1 << 20).unwrap();
        assert_eq!(pool.reserved(), 60 * 1024 + 128 * 1024 + (68 << 20));
        drop((sort, aggregate, join, repartition, ordered));
        assert_eq!(pool.reserved(), 0);
    }

    #[test]
    fn memory_is_charged_to_the_operator_running_at_the_first_growth() {
        let pool = Arc::new(WorkMemPool::new());
        let as_pool: Arc<dyn MemoryPool> = pool.clone();
        let sort_node = Arc::new(OperatorUsage::default());
        let sort = MemoryConsumer::new("ExternalSorter[0]")
            .with_can_spill(true)
            .register(&as_pool);
        let unrelated = MemoryConsumer::new("HashJoinInput").register(&as_pool);
        unrelated.grow(1000);
        {
            let _running = sort_node.enter();
            sort.grow(300);
        }
        // Later growth is the sort's wherever it happens; the other consumer is no one's.
        sort.grow(200);
        sort.shrink(400);
        sort.grow(100);
        unrelated.grow(5000);
        assert_eq!(sort_node.snapshot().peak_memory_bytes, 500);
        drop(sort);
        assert!(
            pool.operators.lock().is_empty(),
            "unregistered with its consumer"
        );
        drop(unrelated);
    }
}
