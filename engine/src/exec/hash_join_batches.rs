//! Hash joins within `work_mem`: PostgreSQL's batches, for DataFusion's hash join.
//!
//! PostgreSQL's Hash node keeps the inner relation in a table of at most `work_mem ×
//! hash_mem_multiplier` bytes. When the rows would not fit, it divides the join into
//! batches by the hash of the join key: batch 0 stays in memory, the rows of every other
//! batch, inner and outer, go to temporary files, and the batches are joined one after the
//! other (EXPLAIN: `Batches: 16`, `temp read=… written=…`). Rows with equal keys hash
//! alike, so every match lies within one batch.
//!
//! DataFusion 55's `HashJoinExec` holds its whole build side (its left input) in memory,
//! whatever its size. [`HashJoinBatchesExec`] is put around each hash join of a plan
//! (`plan::hash_join_batches` says which) and runs it in three steps:
//!
//! 1. **Build.** It reads the build side itself and holds the batches under a
//!    `HashJoinBuild` reservation, which the `work_mem` pool limits to the hash limit
//!    (exec/work_mem.rs); each row counts its bytes plus [`TABLE_BYTES_PER_ROW`] for the
//!    hash table it will be in. If the input ends within the limit, the join runs as
//!    planned over the held batches: one batch, as before.
//! 2. **Split.** Refused memory, it chooses a power of two of batches (from the build
//!    side's estimated rows and the bytes per row seen so far: [`initial_batches`]) and
//!    writes every build row, those held and the rest, to the temporary file of its batch:
//!    `hash(key) mod batches`, with a hash seeded apart from DataFusion's repartitioning
//!    and join tables, so that the rows of one partition still spread over all batches.
//!    Then it reads the probe side into the batches' probe files the same way. Rows with a
//!    NULL key, which match nothing, are left out where the join type returns no
//!    unmatched rows of their side (as PostgreSQL leaves them out of its table). A split
//!    makes at most [`MAX_FANOUT`] files at a time, each with a 128 kB write buffer.
//! 3. **Join, batch by batch.** A batch's build rows are read back and joined with its
//!    probe rows, streamed from their file, by a `HashJoinExec` with the join's keys,
//!    filter, type and projection. Rows without a match (outer, anti and mark joins) are
//!    decided within their batch too, since their partners could only be there. A batch
//!    with no rows on the side that drives its join type is skipped. A batch whose build
//!    rows still exceed the limit (more rows than estimated, or skewed keys) is split
//!    again with the next seed, at most [`MAX_SPLITS`] times; past that, it is joined over
//!    the limit, as PostgreSQL does when splitting cannot divide equal keys. EXPLAIN shows
//!    the first split's count as the original: `Batches: 35 (originally 32)`.
//!
//! A CollectLeft join's output partitions share one build side. When it has to be split,
//! the partition that read it joins every probe partition (read together, so that a
//! repartitioning below can never wait on an unread output) and the others return
//! nothing; the planner rule only allows this when the join's output partitioning
//! promises nothing about which rows are where.
//!
//! The output of a split join follows the batches, not the probe side's order, so the rule
//! leaves whole the joins whose output order the plan may rely on; and a NOT IN join
//! (null-aware anti join), whose every result depends on whether any probe key is NULL
//! across all batches.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, UInt32Array};
use datafusion::arrow::compute::take_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::ipc::writer::{IpcWriteOptions, StreamWriter};
use datafusion::arrow::ipc::MetadataVersion;
use datafusion::common::hash_utils::{create_hashes, RandomState};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{
    internal_err, DataFusionError, JoinType, NullEquality, Result, Statistics,
};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::spill_file::{SpillFile, SpillWriter};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, Partitioning, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, CardinalityEffect, EmissionType};
use datafusion::physical_plan::joins::{HashJoinExec, PartitionMode};
use datafusion::physical_plan::memory::MemoryStream;
use datafusion::physical_plan::metrics::{
    Count, ExecutionPlanMetricsSet, Gauge, MetricBuilder, MetricsSet, SpillMetrics,
};
use datafusion::physical_plan::spill::SpillManager;
use datafusion::physical_plan::statistics::{ChildStats, StatisticsArgs, StatisticsContext};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::EmptyRecordBatchStream;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties,
    InputDistributionRequirements, PlanProperties,
};
use futures::{stream, StreamExt, TryStreamExt};
use parking_lot::Mutex;
use tokio::sync::OnceCell;

use crate::exec::work_mem::WorkMemPool;

/// Bytes of hash table per build row, beside the row itself: DataFusion's table keeps a
/// hash and a row number per row (16 bytes, in a table at most 7/8 full) and a chain link
/// (8 bytes).
pub const TABLE_BYTES_PER_ROW: usize = 26;

/// How many times a batch is split again before it is joined over the limit.
pub const MAX_SPLITS: u32 = 3;

/// The most batches one split makes: each open batch file has a write buffer.
pub const MAX_FANOUT: usize = 64;

/// The seed of the first split's hash; split `n` uses `SPLIT_SEED + n`.
const SPLIT_SEED: u64 = 0x6261_7463_6865_7300; // "batches"

/// The name of the reservation build rows are held under (the `work_mem` pool gives it
/// the hash limit).
pub const BUILD_CONSUMER: &str = "HashJoinBuild";

/// Metric names EXPLAIN reads (server/src/explain/mapping.rs).
pub const BATCHES_METRIC: &str = "hash_batches";
pub const ORIGINAL_BATCHES_METRIC: &str = "hash_batches_original";
pub const BUILD_ROWS_METRIC: &str = "build_input_rows";
pub const ARRAY_MAP_METRIC: &str = "array_map_created_count";
/// Blocks of temporary files written with build rows: PostgreSQL's Hash node's `temp
/// written=`.
pub const BUILD_TEMP_WRITTEN_METRIC: &str = "build_temp_written";

/// A hash join that splits into batches when its build side exceeds the hash limit.
pub struct HashJoinBatchesExec {
    join: Arc<HashJoinExec>,
    /// A CollectLeft join's build side, read once for all output partitions.
    shared_build: Arc<OnceCell<Arc<SharedBuild>>>,
    metrics: ExecutionPlanMetricsSet,
}

impl HashJoinBatchesExec {
    pub fn new(join: Arc<HashJoinExec>) -> HashJoinBatchesExec {
        HashJoinBatchesExec {
            join,
            shared_build: Arc::new(OnceCell::new()),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }
}

impl fmt::Debug for HashJoinBatchesExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HashJoinBatchesExec({:?})", self.join)
    }
}

impl DisplayAs for HashJoinBatchesExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        self.join.fmt_as(t, f)
    }
}

impl ExecutionPlan for HashJoinBatchesExec {
    fn name(&self) -> &str {
        "HashJoinBatchesExec"
    }

    /// EXPLAIN and the instrumentation see the join itself.
    fn downcast_delegate(&self) -> Option<&dyn ExecutionPlan> {
        Some(self.join.as_ref())
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        self.join.properties()
    }

    fn input_distribution_requirements(&self) -> InputDistributionRequirements {
        self.join.input_distribution_requirements()
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false, false]
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.join.children()
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        self.join.apply_expressions(f)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let join = self
            .join
            .builder()
            .with_new_children(children)?
            .reset_state()
            .build()?;
        Ok(Arc::new(HashJoinBatchesExec::new(Arc::new(join))))
    }

    fn reset_state(self: Arc<Self>) -> Result<Arc<dyn ExecutionPlan>> {
        let join = self.join.builder().reset_state().build()?;
        Ok(Arc::new(HashJoinBatchesExec::new(Arc::new(join))))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn child_stats_requests(&self, partition: Option<usize>) -> Vec<ChildStats> {
        self.join.child_stats_requests(partition)
    }

    fn statistics_from_inputs(
        &self,
        input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        self.join.statistics_from_inputs(input_stats, args)
    }

    fn fetch(&self) -> Option<usize> {
        self.join.fetch()
    }

    fn cardinality_effect(&self) -> CardinalityEffect {
        self.join.cardinality_effect()
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let run = JoinRun {
            join: self.join.clone(),
            metrics: JoinMetrics::new(&self.metrics, partition),
            spill_metrics: SpillMetrics::new(&self.metrics, partition),
            context,
        };
        let schema = self.schema();
        let output = match self.join.partition_mode() {
            PartitionMode::Partitioned => {
                stream::once(async move { run.partitioned(partition).await }).boxed()
            }
            PartitionMode::CollectLeft => {
                let shared = self.shared_build.clone();
                stream::once(async move { run.collect_left(partition, shared).await }).boxed()
            }
            PartitionMode::Auto => return internal_err!("a hash join ran in mode Auto"),
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            output.try_flatten(),
        )))
    }
}

/// What one output partition reports, when its output ends: the batches it made, how
/// many its first split made, the build rows of its largest batch, and how many of its
/// batches DataFusion built as a direct-address array instead of a hash table.
#[derive(Clone)]
struct JoinMetrics {
    batches: Gauge,
    original_batches: Gauge,
    build_temp_written: Count,
    build_rows: Count,
    array_maps: Count,
}

impl JoinMetrics {
    fn new(metrics: &ExecutionPlanMetricsSet, partition: usize) -> JoinMetrics {
        JoinMetrics {
            batches: MetricBuilder::new(metrics).gauge(BATCHES_METRIC, partition),
            original_batches: MetricBuilder::new(metrics).gauge(ORIGINAL_BATCHES_METRIC, partition),
            build_temp_written: MetricBuilder::new(metrics)
                .counter(BUILD_TEMP_WRITTEN_METRIC, partition),
            build_rows: MetricBuilder::new(metrics).counter(BUILD_ROWS_METRIC, partition),
            array_maps: MetricBuilder::new(metrics).counter(ARRAY_MAP_METRIC, partition),
        }
    }
}

/// A build side once read: in memory, or split into batch files.
enum Build {
    InMemory(Vec<RecordBatch>),
    Split(Vec<Option<BatchFile>>),
}

/// A CollectLeft join's build side, and the partition that read it.
struct SharedBuild {
    reader: usize,
    /// The join over the held batches, shared by all partitions: DataFusion's join shares
    /// its table, and which build rows matched, across its partitions.
    in_memory_join: Option<Arc<HashJoinExec>>,
    /// Or the batch files, until the reader takes them.
    split: Mutex<Option<Vec<Option<BatchFile>>>>,
}

/// One batch's rows of one side, in a temporary file.
type BatchFile = Arc<dyn SpillFile>;

/// A batch still to join: its build and probe files (none when it has no rows there),
/// and how many splits made it.
struct PendingBatch {
    build: Option<BatchFile>,
    probe: Option<BatchFile>,
    splits: u32,
}

#[derive(Clone, Copy)]
enum Side {
    Build,
    Probe,
}

/// One output partition's execution.
#[derive(Clone)]
struct JoinRun {
    join: Arc<HashJoinExec>,
    metrics: JoinMetrics,
    spill_metrics: SpillMetrics,
    context: Arc<TaskContext>,
}

impl JoinRun {
    /// Partitioned mode: the partition's build and probe partitions are its own.
    async fn partitioned(self, partition: usize) -> Result<SendableRecordBatchStream> {
        let left = self.join.left().execute(partition, self.context.clone())?;
        let build = self.read_build(left, partition).await?;
        let right = self.join.right().execute(partition, self.context.clone())?;
        match build {
            Build::InMemory(held) => {
                let join = self.in_memory_join(held, one_shot(right))?;
                let output = join.execute(0, self.context.clone())?;
                Ok(BatchJoins::running(self, join, output))
            }
            Build::Split(build) => {
                let probe = self.split(right, Side::Probe, build.len(), 0).await?;
                Ok(BatchJoins::pending(self, build, probe))
            }
        }
    }

    /// CollectLeft mode: one build side for all partitions.
    async fn collect_left(
        self,
        partition: usize,
        shared: Arc<OnceCell<Arc<SharedBuild>>>,
    ) -> Result<SendableRecordBatchStream> {
        let shared = shared
            .get_or_try_init(|| async {
                let left = self.join.left().execute(0, self.context.clone())?;
                let (in_memory_join, split) = match self.read_build(left, partition).await? {
                    Build::InMemory(held) => (
                        Some(self.in_memory_join(held, self.join.right().clone())?),
                        None,
                    ),
                    Build::Split(files) => (None, Some(files)),
                };
                Ok::<_, DataFusionError>(Arc::new(SharedBuild {
                    reader: partition,
                    in_memory_join,
                    split: Mutex::new(split),
                }))
            })
            .await?
            .clone();
        let reader = shared.reader == partition;
        if let Some(join) = &shared.in_memory_join {
            let output = join.execute(partition, self.context.clone())?;
            return Ok(match reader {
                true => BatchJoins::running(self, join.clone(), output),
                false => output,
            });
        }
        let taken = match reader {
            true => shared.split.lock().take(),
            false => None,
        };
        let Some(build) = taken else {
            return Ok(empty_stream(self.join.schema()));
        };
        let right = self.join.right().clone();
        let probes = (0..right.output_partitioning().partition_count())
            .map(|p| right.execute(p, self.context.clone()))
            .collect::<Result<Vec<_>>>()?;
        let every_probe = Box::pin(RecordBatchStreamAdapter::new(
            right.schema(),
            stream::select_all(probes),
        ));
        let probe = self.split(every_probe, Side::Probe, build.len(), 0).await?;
        Ok(BatchJoins::pending(self, build, probe))
    }

    /// Reads the build side, held in memory while it fits under the hash limit, else
    /// split into batch files.
    async fn read_build(
        &self,
        mut left: SendableRecordBatchStream,
        partition: usize,
    ) -> Result<Build> {
        let reservation = self.reservation(partition);
        let mut held: Vec<RecordBatch> = Vec::new();
        while let Some(batch) = left.next().await.transpose()? {
            let bytes = batch_bytes(&batch)?;
            if reservation.try_grow(bytes).is_ok() {
                held.push(batch);
                continue;
            }
            let limit = self.hash_limit(&reservation);
            let rows: usize = held.iter().map(|b| b.num_rows()).sum::<usize>() + batch.num_rows();
            let bytes_per_row = (reservation.size() + bytes) as f64 / rows as f64;
            let left_rows = estimated_rows(self.join.left().as_ref());
            let batches = initial_batches(left_rows.max(2 * rows), bytes_per_row, limit);
            let mut split = Splitter::new(self, Side::Build, batches, 0)?;
            for b in held.drain(..).chain(std::iter::once(batch)) {
                split.push(&b)?;
            }
            reservation.free();
            while let Some(batch) = left.next().await.transpose()? {
                split.push(&batch)?;
            }
            return Ok(Build::Split(split.finish()?));
        }
        Ok(Build::InMemory(held))
    }

    /// All of `input` (one side's rows) divided into `batches` files by split `splits`.
    async fn split(
        &self,
        mut input: SendableRecordBatchStream,
        side: Side,
        batches: usize,
        splits: u32,
    ) -> Result<Vec<Option<BatchFile>>> {
        let mut split = Splitter::new(self, side, batches, splits)?;
        while let Some(batch) = input.next().await.transpose()? {
            split.push(&batch)?;
        }
        split.finish()
    }

    /// The session's hash limit; without a `work_mem` pool (the engine's tests: one that
    /// limits by other rules), what `refused` held when the pool refused it more.
    fn hash_limit(&self, refused: &MemoryReservation) -> usize {
        let pool = self.context.session_config().get_extension::<WorkMemPool>();
        pool.map_or(refused.size(), |p| p.hash_limit())
    }

    /// The reservation build rows are held under, which the `work_mem` pool limits to the
    /// hash limit.
    fn reservation(&self, partition: usize) -> MemoryReservation {
        MemoryConsumer::new(format!("{BUILD_CONSUMER}[{partition}]"))
            .with_can_spill(true)
            .register(self.context.memory_pool())
    }

    /// The planned join over `build` (held batches) and `probe`, with one build partition.
    fn in_memory_join(
        &self,
        build: Vec<RecordBatch>,
        probe: Arc<dyn ExecutionPlan>,
    ) -> Result<Arc<HashJoinExec>> {
        let left = one_shot(Box::pin(MemoryStream::try_new(
            build,
            self.join.left().schema(),
            None,
        )?));
        let join = self
            .join
            .builder()
            .with_new_children(vec![left, probe])?
            .with_partition_mode(PartitionMode::CollectLeft)
            .reset_state()
            .build()?;
        Ok(Arc::new(join))
    }

    /// A batch file of `side`, read back.
    fn read(&self, side: Side, file: &BatchFile) -> Result<SendableRecordBatchStream> {
        let schema = self.schema_of(side);
        SpillManager::new(
            self.context.runtime_env(),
            self.spill_metrics.clone(),
            schema,
        )
        .read_spill_as_stream(file.clone(), None)
    }

    fn schema_of(&self, side: Side) -> SchemaRef {
        match side {
            Side::Build => self.join.left().schema(),
            Side::Probe => self.join.right().schema(),
        }
    }

    fn keys_of(&self, side: Side) -> Vec<Arc<dyn PhysicalExpr>> {
        let on = self.join.on().iter();
        match side {
            Side::Build => on.map(|(l, _)| l.clone()).collect(),
            Side::Probe => on.map(|(_, r)| r.clone()).collect(),
        }
    }
}

/// Step 3 of one output partition: the batches still to join, and the join running now.
struct BatchJoins {
    run: JoinRun,
    /// The batches not yet joined, the next last.
    pending: Vec<PendingBatch>,
    current: Option<(Arc<HashJoinExec>, SendableRecordBatchStream)>,
    rows_out: usize,
    /// Batches made so far (PostgreSQL's `nbatch`), joined or not.
    batches: usize,
    /// Batches the first split made (1 if none).
    original_batches: usize,
    largest_build: usize,
    array_maps: usize,
}

impl BatchJoins {
    /// The output of one join already running over the whole build side.
    fn running(
        run: JoinRun,
        join: Arc<HashJoinExec>,
        output: SendableRecordBatchStream,
    ) -> SendableRecordBatchStream {
        let mut joins = BatchJoins::new(run, vec![], 1);
        joins.current = Some((join, output));
        joins.into_stream()
    }

    /// The output of the batches of `build` and `probe`, joined in order.
    fn pending(
        run: JoinRun,
        build: Vec<Option<BatchFile>>,
        probe: Vec<Option<BatchFile>>,
    ) -> SendableRecordBatchStream {
        let batches = build.len();
        BatchJoins::new(run, batches_of(build, probe, 0), batches).into_stream()
    }

    fn new(run: JoinRun, pending: Vec<PendingBatch>, batches: usize) -> BatchJoins {
        BatchJoins {
            run,
            pending,
            current: None,
            rows_out: 0,
            batches,
            original_batches: batches,
            largest_build: 0,
            array_maps: 0,
        }
    }

    fn into_stream(self) -> SendableRecordBatchStream {
        let schema = self.run.join.schema();
        let output = stream::try_unfold(self, |mut joins| async move {
            let next = joins.next_output().await?;
            Ok(next.map(|batch| (batch, joins)))
        });
        Box::pin(RecordBatchStreamAdapter::new(schema, output))
    }

    async fn next_output(&mut self) -> Result<Option<RecordBatch>> {
        let fetch = self.run.join.fetch().unwrap_or(usize::MAX);
        while self.rows_out < fetch {
            if let Some((join, output)) = self.current.as_mut() {
                if let Some(batch) = output.next().await.transpose()? {
                    let batch = batch.slice(0, batch.num_rows().min(fetch - self.rows_out));
                    self.rows_out += batch.num_rows();
                    return Ok(Some(batch));
                }
                let build_rows = metric_sum(join, BUILD_ROWS_METRIC);
                self.largest_build = self.largest_build.max(build_rows);
                self.array_maps += metric_sum(join, ARRAY_MAP_METRIC);
                self.current = None;
            }
            let Some(batch) = self.pending.pop() else {
                break;
            };
            self.start(batch).await?;
        }
        let metrics = &self.run.metrics;
        metrics.batches.set_max(self.batches);
        metrics.original_batches.set_max(self.original_batches);
        metrics.build_rows.add(self.largest_build);
        metrics.array_maps.add(self.array_maps);
        Ok(None)
    }

    /// Starts the join of one batch, or splits it again when its build rows exceed the
    /// limit.
    async fn start(&mut self, batch: PendingBatch) -> Result<()> {
        let join_type = *self.run.join.join_type();
        let no_build = batch.build.is_none() && !keeps_unmatched_probe(join_type);
        let no_probe = batch.probe.is_none() && !keeps_unmatched_build(join_type);
        if no_build || no_probe {
            return Ok(());
        }
        let run = self.run.clone();
        let reservation = run.reservation(0);
        let mut held = Vec::new();
        // The hash limit, once the pool refused the batch's rows.
        let mut refused_at = None;
        if let Some(file) = &batch.build {
            let mut rows = run.read(Side::Build, file)?;
            while let Some(b) = rows.next().await.transpose()? {
                let bytes = batch_bytes(&b)?;
                if refused_at.is_none() && reservation.try_grow(bytes).is_err() {
                    refused_at = Some(run.hash_limit(&reservation));
                }
                if refused_at.is_some() {
                    reservation.grow(bytes);
                }
                held.push(b);
            }
        }
        if let Some(limit) = refused_at.filter(|_| batch.splits < MAX_SPLITS) {
            let fanout = resplit_fanout(reservation.size(), limit);
            let splits = batch.splits + 1;
            let mut build = Splitter::new(&run, Side::Build, fanout, splits)?;
            for b in held.drain(..) {
                build.push(&b)?;
            }
            drop(reservation);
            let probe = match &batch.probe {
                Some(file) => {
                    run.split(run.read(Side::Probe, file)?, Side::Probe, fanout, splits)
                        .await?
                }
                None => vec![None; fanout],
            };
            self.pending
                .extend(batches_of(build.finish()?, probe, splits));
            self.batches += fanout - 1;
            return Ok(());
        }
        drop(reservation);
        let probe = match &batch.probe {
            Some(file) => run.read(Side::Probe, file)?,
            None => empty_stream(run.join.right().schema()),
        };
        let join = run.in_memory_join(held, one_shot(probe))?;
        let output = join.execute(0, run.context.clone())?;
        self.current = Some((join, output));
        Ok(())
    }
}

/// The batches of one split as pending work, the first to be joined last in the list.
fn batches_of(
    build: Vec<Option<BatchFile>>,
    probe: Vec<Option<BatchFile>>,
    splits: u32,
) -> Vec<PendingBatch> {
    assert_eq!(build.len(), probe.len(), "both sides split alike");
    build
        .into_iter()
        .zip(probe)
        .map(|(build, probe)| PendingBatch {
            build,
            probe,
            splits,
        })
        .rev()
        .collect()
}

/// Writes one side's rows to the batch files of one split.
struct Splitter {
    keys: Vec<Arc<dyn PhysicalExpr>>,
    /// Where a build side's written blocks are counted.
    written: Option<Count>,
    /// Leave out rows with a NULL key: they match nothing, and the join returns no
    /// unmatched row of this side.
    drop_null_keys: bool,
    schema: SchemaRef,
    hash: RandomState,
    context: Arc<TaskContext>,
    files: Vec<Option<BatchWriter>>,
    hashes: Vec<u64>,
}

struct BatchWriter {
    file: Arc<dyn SpillFile>,
    writer: StreamWriter<Box<dyn SpillWriter>>,
}

impl Splitter {
    fn new(run: &JoinRun, side: Side, batches: usize, splits: u32) -> Result<Splitter> {
        assert!(
            batches.is_power_of_two() && batches >= 2,
            "{batches} batches"
        );
        let join_type = *run.join.join_type();
        let keeps_unmatched = match side {
            Side::Build => keeps_unmatched_build(join_type),
            Side::Probe => keeps_unmatched_probe(join_type),
        };
        Ok(Splitter {
            keys: run.keys_of(side),
            written: matches!(side, Side::Build).then(|| run.metrics.build_temp_written.clone()),
            drop_null_keys: run.join.null_equality() == NullEquality::NullEqualsNothing
                && !keeps_unmatched,
            schema: run.schema_of(side),
            hash: RandomState::with_seed(SPLIT_SEED + u64::from(splits)),
            context: run.context.clone(),
            files: (0..batches).map(|_| None).collect(),
            hashes: Vec::new(),
        })
    }

    fn push(&mut self, batch: &RecordBatch) -> Result<()> {
        let keys = self
            .keys
            .iter()
            .map(|k| k.evaluate(batch)?.into_array(batch.num_rows()))
            .collect::<Result<Vec<_>>>()?;
        self.hashes.clear();
        self.hashes.resize(batch.num_rows(), 0);
        create_hashes(&keys, &self.hash, &mut self.hashes)?;
        let mask = self.files.len() as u64 - 1;
        let mut rows_of: Vec<Vec<u32>> = vec![Vec::new(); self.files.len()];
        for (row, hash) in self.hashes.iter().enumerate() {
            if self.drop_null_keys && keys.iter().any(|k| k.is_null(row)) {
                continue;
            }
            rows_of[(hash & mask) as usize].push(row as u32);
        }
        for (n, rows) in rows_of.into_iter().enumerate() {
            if rows.is_empty() {
                continue;
            }
            let part = take_record_batch(batch, &UInt32Array::from(rows))?;
            if self.files[n].is_none() {
                self.files[n] = Some(self.open()?);
            }
            let writer = self.files[n].as_mut().expect("opened above");
            writer.writer.write(&part)?;
        }
        Ok(())
    }

    fn open(&self) -> Result<BatchWriter> {
        let file = self
            .context
            .runtime_env()
            .disk_manager
            .create_tmp_file("HashJoin")?;
        // 64-byte alignment suits every column type, so nothing is copied when read back.
        let options = IpcWriteOptions::try_new(64, false, MetadataVersion::V5)?;
        let writer =
            StreamWriter::try_new_with_options(file.open_writer()?, &self.schema, options)?;
        Ok(BatchWriter { file, writer })
    }

    fn finish(self) -> Result<Vec<Option<BatchFile>>> {
        let written = self.written;
        self.files
            .into_iter()
            .map(|slot| {
                slot.map(|mut w| {
                    w.writer.finish()?;
                    w.writer.into_inner()?.finish()?;
                    if let Some(written) = &written {
                        // As the files count their writes: whole blocks, the last rounded up.
                        let bytes = w.file.size().unwrap_or(0) as usize;
                        written.add(bytes.div_ceil(crate::storage::page::BLCKSZ));
                    }
                    Ok(w.file)
                })
                .transpose()
            })
            .collect()
    }
}

/// How many batches the first split makes: enough for `rows` rows of `bytes_per_row` to
/// fill three quarters of `limit` per batch, a power of two from 2 to [`MAX_FANOUT`].
pub fn initial_batches(rows: usize, bytes_per_row: f64, limit: usize) -> usize {
    let total = rows as f64 * bytes_per_row;
    let wanted = (total / (0.75 * limit.max(1) as f64)).ceil() as usize;
    wanted.next_power_of_two().clamp(2, MAX_FANOUT)
}

/// How many batches a batch of `bytes` build bytes is split into again.
fn resplit_fanout(bytes: usize, limit: usize) -> usize {
    initial_batches(1, bytes as f64, limit)
}

/// The estimated rows of one of `plan`'s partitions (0 when unknown).
fn estimated_rows(plan: &dyn ExecutionPlan) -> usize {
    let whole = StatisticsContext::new()
        .compute(plan, &StatisticsArgs::new())
        .ok()
        .and_then(|s| s.num_rows.get_value().copied())
        .unwrap_or(0);
    whole / plan.output_partitioning().partition_count().max(1)
}

/// The bytes a build batch takes in the hash table: the join copies the build side's
/// batches into one, so a batch counts the bytes of its rows, not of the buffers they lie
/// in (a batch read back from a file lies in the file's 128 kB read buffer).
fn batch_bytes(batch: &RecordBatch) -> Result<usize> {
    let mut bytes = batch.num_rows() * TABLE_BYTES_PER_ROW;
    for column in batch.columns() {
        bytes += column.to_data().get_slice_memory_size()?;
    }
    Ok(bytes)
}

/// Join types that return probe rows without a match (so a batch without build rows
/// still has output).
fn keeps_unmatched_probe(join_type: JoinType) -> bool {
    matches!(
        join_type,
        JoinType::Right | JoinType::Full | JoinType::RightAnti | JoinType::RightMark
    )
}

/// Join types that return build rows without a match.
fn keeps_unmatched_build(join_type: JoinType) -> bool {
    matches!(
        join_type,
        JoinType::Left | JoinType::Full | JoinType::LeftAnti | JoinType::LeftMark
    )
}

/// The sum over partitions of `join`'s metric `name`.
fn metric_sum(join: &HashJoinExec, name: &str) -> usize {
    let sum = join.metrics().and_then(|m| m.sum_by_name(name));
    sum.map_or(0, |v| v.as_usize())
}

fn empty_stream(schema: SchemaRef) -> SendableRecordBatchStream {
    Box::pin(EmptyRecordBatchStream::new(schema))
}

/// A stream as a plan of one partition, executed once (the build or probe side of one
/// batch's join).
fn one_shot(stream: SendableRecordBatchStream) -> Arc<dyn ExecutionPlan> {
    Arc::new(OneShotExec::new(stream))
}

struct OneShotExec {
    stream: Mutex<Option<SendableRecordBatchStream>>,
    properties: Arc<PlanProperties>,
}

impl OneShotExec {
    fn new(stream: SendableRecordBatchStream) -> OneShotExec {
        let properties = Arc::new(PlanProperties::new(
            EquivalenceProperties::new(stream.schema()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        OneShotExec {
            stream: Mutex::new(Some(stream)),
            properties,
        }
    }
}

impl fmt::Debug for OneShotExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OneShotExec")
    }
}

impl DisplayAs for OneShotExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "OneShotExec")
    }
}

impl ExecutionPlan for OneShotExec {
    fn name(&self) -> &str {
        "OneShotExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        assert!(children.is_empty(), "a stream has no inputs");
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        _context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        match (partition, self.stream.lock().take()) {
            (0, Some(stream)) => Ok(stream),
            _ => internal_err!("a one-shot stream executed twice, or partition {partition}"),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Every join type, run by DataFusion's join with its whole build side in memory and by
    //! [`HashJoinBatchesExec`] under a 64 kB hash limit, must give the same rows.

    use super::*;
    use crate::exec::temp_files::{TempFiles, TEMP_FILES_DIR};
    use crate::exec::work_mem::{runtime_env, WorkMemPool};
    use crate::plan::hash_join_batches::HashJoinBatches;
    use crate::storage::relfile::tests::TempDir;
    use datafusion::arrow::array::{Int32Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
    use datafusion::common::config::ConfigOptions;
    use datafusion::datasource::MemTable;
    use datafusion::physical_optimizer::PhysicalOptimizerRule;
    use datafusion::physical_plan::collect;
    use datafusion::prelude::{SessionConfig, SessionContext};
    use iolab_stats::IoStatsHub;

    /// `rows` rows of (k, x, t) in two partitions: k = i mod `keys`, NULL every `null_every`th.
    fn table(rows: i32, keys: i32, null_every: i32) -> Arc<MemTable> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, true),
            Field::new("x", DataType::Int32, false),
            Field::new("t", DataType::Utf8, false),
        ]));
        let partition = |range: std::ops::Range<i32>| {
            let k: Int32Array = range
                .clone()
                .map(|i| (i % null_every != 0).then_some(i % keys))
                .collect();
            let x: Int32Array = range.clone().collect();
            let t: StringArray = range.map(|i| Some(format!("row {}", i % 777))).collect();
            vec![
                RecordBatch::try_new(schema.clone(), vec![Arc::new(k), Arc::new(x), Arc::new(t)])
                    .unwrap(),
            ]
        };
        let half = rows / 2;
        Arc::new(
            MemTable::try_new(
                schema.clone(),
                vec![partition(0..half), partition(half..rows)],
            )
            .unwrap(),
        )
    }

    /// A session whose temporary files go under the returned directory (removed when it
    /// is dropped, so keep it as long as the session).
    fn context(collect_left: bool) -> (SessionContext, TempDir) {
        let temp = TempDir::new("hash-batches");
        let dir = temp.0.clone();
        std::fs::create_dir_all(dir.join(TEMP_FILES_DIR)).unwrap();
        let pool = Arc::new(WorkMemPool::new());
        pool.set_limits(64, 1.0);
        let files = Arc::new(TempFiles::new(&dir, 7, Arc::new(IoStatsHub::new())));
        let mut config = SessionConfig::new()
            .with_target_partitions(2)
            .with_extension(pool.clone());
        let threshold = if collect_left { usize::MAX } else { 0 };
        let optimizer = &mut config.options_mut().optimizer;
        optimizer.hash_join_single_partition_threshold = threshold;
        optimizer.hash_join_single_partition_threshold_rows = threshold;
        optimizer.enable_join_dynamic_filter_pushdown = false;
        let ctx = SessionContext::new_with_config_rt(config, runtime_env(pool, files).unwrap());
        ctx.register_table("a", table(20_000, 5_000, 97)).unwrap();
        ctx.register_table("b", table(30_000, 7_000, 89)).unwrap();
        ctx.register_table("skew", table(40_000, 1, 1_000_000))
            .unwrap();
        (ctx, temp)
    }

    /// The rows of `batches`, one string each, sorted.
    fn sorted_rows(batches: &[RecordBatch]) -> Vec<String> {
        let options = FormatOptions::default().with_null("NULL");
        let mut rows = Vec::new();
        for batch in batches {
            let formatters = (batch.columns().iter())
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).unwrap())
                .collect::<Vec<_>>();
            for row in 0..batch.num_rows() {
                let cells = formatters.iter().map(|f| f.value(row).to_string());
                rows.push(cells.collect::<Vec<_>>().join("|"));
            }
        }
        rows.sort();
        rows
    }

    /// The most batches any wrapped join of `plan` ran in (None: no join is wrapped).
    fn most_batches(plan: &Arc<dyn ExecutionPlan>) -> Option<usize> {
        let own = (plan.as_ref() as &dyn std::any::Any)
            .downcast_ref::<HashJoinBatchesExec>()
            .map(|j| metric_max(j, BATCHES_METRIC));
        plan.children()
            .into_iter()
            .map(most_batches)
            .fold(own, |a, b| a.max(b))
    }

    fn metric_max(plan: &dyn ExecutionPlan, name: &str) -> usize {
        let metrics = plan.metrics().unwrap();
        metrics
            .iter()
            .filter(|m| m.value().name() == name)
            .map(|m| m.value().as_usize())
            .max()
            .unwrap_or(0)
    }

    /// Runs `sql` both ways; the rows and the number of batches the split run used.
    async fn both_ways(
        ctx: &SessionContext,
        sql: &str,
    ) -> (Vec<String>, Vec<String>, Option<usize>) {
        let plan = ctx
            .sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let whole = sorted_rows(&collect(plan, ctx.task_ctx()).await.unwrap());
        let plan = ctx
            .sql(sql)
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let plan = HashJoinBatches
            .optimize(plan, &ConfigOptions::default())
            .unwrap();
        let split = sorted_rows(&collect(plan.clone(), ctx.task_ctx()).await.unwrap());
        (whole, split, most_batches(&plan))
    }

    const JOINS: &[&str] = &[
        "SELECT a.x, b.x FROM a JOIN b ON a.k = b.k",
        "SELECT a.x, b.x FROM a LEFT JOIN b ON a.k = b.k",
        "SELECT a.x, b.x FROM a RIGHT JOIN b ON a.k = b.k",
        "SELECT a.x, b.x FROM a FULL JOIN b ON a.k = b.k",
        "SELECT a.x FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
        "SELECT b.x FROM b WHERE EXISTS (SELECT 1 FROM a WHERE b.k = a.k)",
        "SELECT a.x FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k)",
        "SELECT b.x FROM b WHERE NOT EXISTS (SELECT 1 FROM a WHERE b.k = a.k)",
        "SELECT a.x FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k) OR a.x < 100",
        "SELECT a.x, b.x FROM a JOIN b ON a.k = b.k AND a.x < b.x",
        "SELECT a.x, b.x FROM a LEFT JOIN b ON a.k = b.k AND a.x % 3 = b.x % 3",
        "SELECT a.x, b.x FROM a FULL JOIN b ON a.t = b.t AND a.k = b.k",
        "SELECT count(*), sum(a.x) FROM a JOIN b ON a.t = b.t",
        "SELECT s.x, b.x FROM skew s JOIN b ON s.k = b.k",
    ];

    #[tokio::test]
    async fn every_join_type_gives_the_same_rows_in_batches() {
        for collect_left in [false, true] {
            let (ctx, _temp) = context(collect_left);
            for sql in JOINS {
                let (whole, split, batches) = both_ways(&ctx, sql).await;
                assert!(!whole.is_empty(), "{sql}: no rows to compare");
                assert_eq!(
                    whole.len(),
                    split.len(),
                    "{sql} (collect_left {collect_left})"
                );
                assert!(
                    whole == split,
                    "{sql} (collect_left {collect_left}): rows differ"
                );
                let batches = batches.unwrap_or_else(|| panic!("{sql}: no join wrapped"));
                assert!(
                    batches > 1,
                    "{sql} (collect_left {collect_left}): one batch"
                );
            }
        }
    }

    #[tokio::test]
    async fn not_in_keeps_its_build_side_whole() {
        let (ctx, _temp) = context(false);
        let sql = "SELECT a.x FROM a WHERE a.k NOT IN (SELECT b.k FROM b WHERE b.x < 5000)";
        let (whole, split, batches) = both_ways(&ctx, sql).await;
        assert_eq!(whole, split);
        assert_eq!(batches, None, "a null-aware anti join is left whole");
    }

    #[tokio::test]
    async fn a_limit_stops_the_batches() {
        let (ctx, _temp) = context(false);
        let sql = "SELECT a.x, b.x FROM a JOIN b ON a.k = b.k LIMIT 37";
        let (whole, split, _) = both_ways(&ctx, sql).await;
        assert_eq!((whole.len(), split.len()), (37, 37));
    }

    #[test]
    fn batch_counts_are_powers_of_two_within_the_fanout() {
        assert_eq!(initial_batches(1000, 100.0, 1_000_000), 2);
        assert_eq!(initial_batches(100_000, 100.0, 1_000_000), 16);
        assert_eq!(initial_batches(100_000_000, 100.0, 1_000_000), MAX_FANOUT);
        assert_eq!(resplit_fanout(3_000_000, 1_000_000), 4);
    }
}
