//! `pg_stat_database`, PostgreSQL 18's columns: a row for the shared objects (`datid` 0,
//! `datname` NULL; iolab has none, so it counts nothing) and one for `postgres`, the one
//! database iolab serves, whose columns are:
//!
//! | columns | from |
//! |---|---|
//! | `numbackends` | the client sessions connected now |
//! | `xact_commit`, `xact_rollback` | transactions ended: each statement outside a block, each block (an error or a failed block's COMMIT rolls back) |
//! | `blks_read`, `blks_hit` | the sums of `pg_statio_*`'s blocks read and hit, tables and indexes |
//! | `tup_returned`, `tup_fetched` | rows read by Seq Scans plus index entries returned; rows fetched by Index and Bitmap Heap Scans |
//! | `tup_inserted`, `tup_updated`, `tup_deleted` | the sums of `pg_stat_all_tables`' `n_tup_*` (counted when the writing transaction ends) |
//! | `temp_files`, `temp_bytes` | temporary files of sorts and hash aggregations beyond `work_mem`, and their bytes, counted when removed |
//! | `deadlocks` | statements failed with 40P01 |
//! | `blk_read_time`, `blk_write_time` | the sums of `pg_stat_io`'s `read_time`, `write_time` of relations (milliseconds; with `track_io_timing`) |
//! | `session_time`, `active_time`, `idle_in_transaction_time` | milliseconds: sessions connected (the live ones so far), running statements, idle inside a block |
//! | `sessions` | sessions started |
//! | `sessions_abandoned`, `sessions_fatal`, `sessions_killed` | sessions ended by the client's connection closing without a Terminate message; by a FATAL error (a session timeout, a protocol error); by `pg_terminate_backend` |
//! | `stats_reset` | the last `pg_stat_reset()`, NULL before |
//!
//! and 0 where iolab has nothing to count: `conflicts` (no standby), `checksum_failures` (pages are
//! verified, the failures not counted; `checksum_last_failure` NULL) and the parallel
//! workers'.

use chrono::Utc;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_engine::Database;
use iolab_stats::IoObject;

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::oids;
use super::relation_stats::time;

const COLUMNS: &str = "datid oid, datname name, numbackends integer, \
    xact_commit bigint, xact_rollback bigint, blks_read bigint, blks_hit bigint, \
    tup_returned bigint, tup_fetched bigint, tup_inserted bigint, tup_updated bigint, \
    tup_deleted bigint, conflicts bigint, temp_files bigint, temp_bytes bigint, \
    deadlocks bigint, checksum_failures bigint, \
    checksum_last_failure timestamp with time zone, blk_read_time double precision, \
    blk_write_time double precision, session_time double precision, \
    active_time double precision, idle_in_transaction_time double precision, \
    sessions bigint, sessions_abandoned bigint, sessions_fatal bigint, \
    sessions_killed bigint, parallel_workers_to_launch bigint, \
    parallel_workers_launched bigint, stats_reset timestamp with time zone";

pub fn schema() -> SchemaRef {
    static SCHEMA: std::sync::LazyLock<SchemaRef> =
        std::sync::LazyLock::new(|| schema_of(&parse_columns(COLUMNS)));
    SCHEMA.clone()
}

pub fn batch(db: &Database) -> Result<RecordBatch> {
    let counts = db.io_stats.database.snapshot();
    let relations = db.io_stats.relation_counts.snapshot();
    let sum = |f: &dyn Fn(&iolab_stats::RelationStats) -> u64| -> i64 {
        relations.values().map(f).sum::<u64>() as i64
    };
    let clients = db.io_stats.activity.clients();
    let now = Utc::now();
    let live_ms: f64 = (clients.iter())
        .map(|a| (now - a.backend_start).num_microseconds().unwrap_or(0) as f64 / 1000.0)
        .sum();
    let (read_ms, write_ms) = db.io_stats.io_time_ms(IoObject::Relation);
    let shared = {
        let mut row = vec![V::oid(0), V::Null, V::Int(0)];
        row.extend([0; 14].map(V::Int));
        row.push(V::Null);
        row.extend([0.0; 5].map(V::Float));
        row.extend([0; 6].map(V::Int));
        row.push(V::Null);
        row
    };
    let postgres = vec![
        V::oid(oids::DATABASE_OID),
        V::text(oids::DATABASE_NAME),
        V::Int(clients.len() as i64),
        V::Int(counts.xact_commit as i64),
        V::Int(counts.xact_rollback as i64),
        V::Int(sum(&|r| r.counts.read)),
        V::Int(sum(&|r| r.counts.hit)),
        V::Int(sum(&|r| {
            r.counts.seq_tuples_read + r.counts.index_tuples_read
        })),
        V::Int(sum(&|r| {
            r.counts.index_tuples_fetched + r.counts.bitmap_tuples_fetched
        })),
        V::Int(sum(&|r| r.rows.inserted)),
        V::Int(sum(&|r| r.rows.updated)),
        V::Int(sum(&|r| r.rows.deleted)),
        V::Int(0),
        V::Int(counts.temp_files as i64),
        V::Int(counts.temp_bytes as i64),
        V::Int(counts.deadlocks as i64),
        V::Int(0),
        V::Null,
        V::Float(read_ms),
        V::Float(write_ms),
        V::Float(counts.session_time_ms + live_ms),
        V::Float(counts.active_time_ms),
        V::Float(counts.idle_in_transaction_time_ms),
        V::Int(counts.sessions as i64),
        V::Int(counts.sessions_abandoned as i64),
        V::Int(counts.sessions_fatal as i64),
        V::Int(counts.sessions_killed as i64),
        V::Int(0),
        V::Int(0),
        time(counts.stats_reset),
    ];
    build_batch(&schema(), &[shared, postgres])
}
