//! `pg_stat_progress_vacuum`, `pg_stat_progress_analyze`, `pg_stat_progress_create_index`,
//! `pg_stat_progress_cluster` and `pg_stat_progress_copy`: one row per session running such a command, from the
//! progress its command reports (`iolab_stats::progress`), with PostgreSQL 18's columns
//! and phase names (`delay_time`, milliseconds, grows only with
//! `track_cost_delay_timing`). What iolab does not do reads 0 or NULL: no extended statistics, inheritance or partitions, no waits for
//! lockers before an index build (iolab builds while writers wait), no rows excluded or
//! skipped by COPY; COPY TO counts its rows, not its bytes (they are encoded as sent).

use std::sync::LazyLock;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_engine::Database;
use iolab_stats::progress::{
    analyze, cluster, copy, create_index, vacuum, ProgressCommand, ProgressSnapshot,
};

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::oids;

/// Which of the four views.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressView {
    Vacuum,
    Analyze,
    CreateIndex,
    Copy,
    Cluster,
}

impl ProgressView {
    fn command(self) -> ProgressCommand {
        match self {
            ProgressView::Vacuum => ProgressCommand::Vacuum,
            ProgressView::Analyze => ProgressCommand::Analyze,
            ProgressView::CreateIndex => ProgressCommand::CreateIndex,
            ProgressView::Copy => ProgressCommand::Copy,
            ProgressView::Cluster => ProgressCommand::Cluster,
        }
    }

    pub fn schema(self) -> SchemaRef {
        static VACUUM: LazyLock<SchemaRef> = LazyLock::new(|| {
            columns(
                "phase text, heap_blks_total bigint, heap_blks_scanned bigint, \
                 heap_blks_vacuumed bigint, index_vacuum_count bigint, \
                 max_dead_tuple_bytes bigint, dead_tuple_bytes bigint, \
                 num_dead_item_ids bigint, indexes_total bigint, indexes_processed bigint, \
                 delay_time double precision",
            )
        });
        static ANALYZE: LazyLock<SchemaRef> = LazyLock::new(|| {
            columns(
                "phase text, sample_blks_total bigint, sample_blks_scanned bigint, \
                 ext_stats_total bigint, ext_stats_computed bigint, child_tables_total bigint, \
                 child_tables_done bigint, current_child_table_relid oid, \
                 delay_time double precision",
            )
        });
        static CREATE_INDEX: LazyLock<SchemaRef> = LazyLock::new(|| {
            columns(
                "index_relid oid, command text, phase text, lockers_total bigint, \
                 lockers_done bigint, current_locker_pid bigint, blocks_total bigint, \
                 blocks_done bigint, tuples_total bigint, tuples_done bigint, \
                 partitions_total bigint, partitions_done bigint",
            )
        });
        static COPY: LazyLock<SchemaRef> = LazyLock::new(|| {
            columns(
                "command text, type text, bytes_processed bigint, bytes_total bigint, \
                 tuples_processed bigint, tuples_excluded bigint, tuples_skipped bigint",
            )
        });
        static CLUSTER: LazyLock<SchemaRef> = LazyLock::new(|| {
            columns(
                "command text, phase text, cluster_index_relid oid, \
                 heap_tuples_scanned bigint, heap_tuples_written bigint, \
                 heap_blks_total bigint, heap_blks_scanned bigint, index_rebuild_count bigint",
            )
        });
        match self {
            ProgressView::Cluster => CLUSTER.clone(),
            ProgressView::Vacuum => VACUUM.clone(),
            ProgressView::Analyze => ANALYZE.clone(),
            ProgressView::CreateIndex => CREATE_INDEX.clone(),
            ProgressView::Copy => COPY.clone(),
        }
    }

    /// The columns after PostgreSQL's common four (pid, datid, datname, relid).
    fn values(self, p: &ProgressSnapshot) -> Vec<V> {
        let n = |param: usize| V::Int(p.params[param]);
        match self {
            ProgressView::Vacuum => vec![
                V::text(vacuum::phase_name(p.params[vacuum::PHASE])),
                n(vacuum::HEAP_BLKS_TOTAL),
                n(vacuum::HEAP_BLKS_SCANNED),
                n(vacuum::HEAP_BLKS_VACUUMED),
                n(vacuum::INDEX_VACUUM_COUNT),
                n(vacuum::MAX_DEAD_TUPLE_BYTES),
                n(vacuum::DEAD_TUPLE_BYTES),
                n(vacuum::NUM_DEAD_ITEM_IDS),
                n(vacuum::INDEXES_TOTAL),
                n(vacuum::INDEXES_PROCESSED),
                V::Float(p.params[vacuum::DELAY_TIME] as f64 / 1e6),
            ],
            ProgressView::Analyze => vec![
                V::text(analyze::phase_name(p.params[analyze::PHASE])),
                n(analyze::SAMPLE_BLKS_TOTAL),
                n(analyze::SAMPLE_BLKS_SCANNED),
                V::Int(0),
                V::Int(0),
                V::Int(0),
                V::Int(0),
                V::Int(0),
                V::Float(p.params[analyze::DELAY_TIME] as f64 / 1e6),
            ],
            ProgressView::CreateIndex => vec![
                n(create_index::INDEX_RELID),
                V::text(create_index::command_name(p.params[create_index::COMMAND])),
                V::text(create_index::phase_name(p.params[create_index::PHASE])),
                V::Int(0),
                V::Int(0),
                V::Int(0),
                n(create_index::BLOCKS_TOTAL),
                n(create_index::BLOCKS_DONE),
                n(create_index::TUPLES_TOTAL),
                n(create_index::TUPLES_DONE),
                V::Int(0),
                V::Int(0),
            ],
            ProgressView::Cluster => vec![
                V::text(cluster::command_name(p.params[cluster::COMMAND])),
                V::text(cluster::phase_name(p.params[cluster::PHASE])),
                V::oid(p.params[cluster::INDEX_RELID] as u32),
                n(cluster::HEAP_TUPLES_SCANNED),
                n(cluster::HEAP_TUPLES_WRITTEN),
                n(cluster::HEAP_BLKS_TOTAL),
                n(cluster::HEAP_BLKS_SCANNED),
                n(cluster::INDEX_REBUILD_COUNT),
            ],
            ProgressView::Copy => vec![
                V::text(copy::command_name(p.params[copy::COMMAND])),
                V::text(copy::type_name(p.params[copy::TYPE])),
                n(copy::BYTES_PROCESSED),
                n(copy::BYTES_TOTAL),
                n(copy::TUPLES_PROCESSED),
                n(copy::TUPLES_EXCLUDED),
                n(copy::TUPLES_SKIPPED),
            ],
        }
    }

    pub fn batch(self, db: &Database) -> Result<RecordBatch> {
        let rows: Vec<Vec<V>> = (db.io_stats.activity.all().iter())
            .filter_map(|a| {
                let p = a
                    .progress
                    .snapshot()
                    .filter(|p| p.command == self.command())?;
                let mut row = vec![
                    V::Int(i64::from(a.pid)),
                    V::Int(i64::from(oids::DATABASE_OID)),
                    V::text("postgres"),
                    V::Int(i64::from(p.relid)),
                ];
                row.extend(self.values(&p));
                Some(row)
            })
            .collect();
        build_batch(&self.schema(), &rows)
    }
}

fn columns(rest: &str) -> SchemaRef {
    schema_of(&parse_columns(&format!(
        "pid integer, datid oid, datname name, relid oid, {rest}"
    )))
}
