//! iolab's `pg_stat_aio` and the two history views, `pg_stat_io_history` and
//! `pg_stat_aio_history`, as record batches (docs/statistics.md documents every column).
//!
//! | view | rows |
//! |---|---|
//! | `pg_stat_aio` | one per backend type that does relation I/O, with the server's `io_method` |
//! | `pg_stat_io_history` | one per (interval, backend type, object, context) with I/O in that interval |
//! | `pg_stat_aio_history` | one per (interval, backend type) with AIO activity or I/Os in flight |
//!
//! Times and latencies are milliseconds (`double precision`); rates divide an interval's
//! delta by its real length (`interval_s`); MB is 10⁶ bytes.

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_engine::Database;
use iolab_stats::history::{Percentiles, AIO_EVENTS};
use iolab_stats::{tracks_io_object, AioLatencyOp, BackendType, IoContext, IoObject, IoOp};

use super::batch::{build_batch, parse_columns, schema_of, V};

const LATENCY_SUFFIXES: [&str; 5] = ["p50", "p90", "p99", "p999", "max"];

/// `"read_p50 double precision, …, fsync_max double precision"` for `ops`.
fn latency_columns(ops: &[&str]) -> String {
    ops.iter()
        .flat_map(|op| {
            LATENCY_SUFFIXES
                .iter()
                .map(move |s| format!("{op}_{s} double precision"))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

const AIO_EVENT_COLUMNS: &str = "ios bigint, submissions bigint, queue_full bigint, \
    completion_waits bigint, handle_waits bigint, completed_elsewhere bigint, advised bigint, taken_back bigint, in_flight bigint";

fn aio_ops() -> Vec<&'static str> {
    AioLatencyOp::ALL.iter().map(|op| op.name()).collect()
}

pub fn pg_stat_aio_schema() -> SchemaRef {
    schema_of(&parse_columns(&format!(
        "backend_type text, io_method text, {AIO_EVENT_COLUMNS}, {}, \
         stats_reset timestamp with time zone",
        latency_columns(&aio_ops())
    )))
}

pub fn pg_stat_aio_history_schema() -> SchemaRef {
    schema_of(&parse_columns(&format!(
        "time timestamp with time zone, backend_type text, io_method text, \
         interval_s double precision, {AIO_EVENT_COLUMNS}, ios_per_s double precision, \
         submissions_per_s double precision, {}",
        latency_columns(&aio_ops())
    )))
}

pub fn pg_stat_io_history_schema() -> SchemaRef {
    schema_of(&parse_columns(&format!(
        "time timestamp with time zone, backend_type text, object text, context text, \
         interval_s double precision, reads bigint, read_bytes bigint, writes bigint, \
         write_bytes bigint, extends bigint, extend_bytes bigint, hits bigint, \
         evictions bigint, reuses bigint, fsyncs bigint, waits bigint, \
         read_time double precision, write_time double precision, wait_time double precision, \
         reads_per_s double precision, read_mb_per_s double precision, \
         writes_per_s double precision, write_mb_per_s double precision, \
         hits_per_s double precision, read_time_per_s double precision, \
         wait_time_per_s double precision, {}",
        latency_columns(&["read", "write"])
    )))
}

/// The backend types with `pg_stat_aio` rows: those that do relation I/O.
fn aio_backend_types() -> impl Iterator<Item = BackendType> {
    BackendType::ALL
        .into_iter()
        .filter(|&bt| tracks_io_object(bt, IoObject::Relation, IoContext::Normal))
}

/// Handles in use now (the rows of `pg_aios`) per backend type of their issuer.
pub fn in_flight(db: &Database) -> [u32; BackendType::COUNT] {
    let mut counts = [0u32; BackendType::COUNT];
    let activity = &db.io_stats.activity;
    for row in db.aio_rows() {
        if let Some(bt) = row.pid.and_then(|pid| activity.backend_type(pid)) {
            counts[bt as usize] += 1;
        }
    }
    counts
}

fn int(v: u64) -> V {
    V::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

fn ms(ns: u64) -> V {
    V::Float((ns / 1000) as f64 * 0.001)
}

fn push_percentiles_us(row: &mut Vec<V>, p: &Percentiles) {
    row.extend(p.iter().map(|&us| {
        if us.is_nan() {
            V::Null
        } else {
            V::Float(us as f64 / 1000.0)
        }
    }));
}

pub fn pg_stat_aio_batch(db: &Database) -> Result<RecordBatch> {
    let snapshot = db.io_stats.aio_snapshot();
    let flying = in_flight(db);
    let method = db.aio.method().name();
    let rows: Vec<Vec<V>> = aio_backend_types()
        .map(|bt| {
            let c = snapshot.counts(bt);
            let mut row = vec![V::text(bt.name()), V::text(method)];
            row.extend(AIO_EVENTS.iter().map(|&e| int(c.get(e))));
            row.push(V::Int(flying[bt as usize] as i64));
            for op in AioLatencyOp::ALL {
                let p = iolab_stats::history::percentiles(c.latency(op));
                push_percentiles_us(&mut row, &p);
            }
            row.push(V::Int(snapshot.stats_reset.timestamp_micros()));
            row
        })
        .collect();
    build_batch(&pg_stat_aio_schema(), &rows)
}

pub fn pg_stat_aio_history_batch(db: &Database) -> Result<RecordBatch> {
    let method = db.aio.method().name();
    let history = db.io_stats.history.lock();
    let mut rows = Vec::new();
    for sample in history.iter().flat_map(|h| h.samples()) {
        for r in &sample.aio {
            let mut row = vec![
                V::Int(sample.time.timestamp_micros()),
                V::text(r.backend_type.name()),
                V::text(method),
                V::Float(sample.seconds),
            ];
            row.extend(r.events.iter().map(|&e| int(e)));
            row.push(V::Int(r.in_flight as i64));
            row.push(V::Float(r.events[0] as f64 / sample.seconds));
            row.push(V::Float(r.events[1] as f64 / sample.seconds));
            for p in &r.latency_us {
                push_percentiles_us(&mut row, p);
            }
            rows.push(row);
        }
    }
    drop(history);
    build_batch(&pg_stat_aio_history_schema(), &rows)
}

pub fn pg_stat_io_history_batch(db: &Database) -> Result<RecordBatch> {
    const MB: f64 = 1e6;
    let history = db.io_stats.history.lock();
    let mut rows = Vec::new();
    for sample in history.iter().flat_map(|h| h.samples()) {
        let per_s = |v: u64| V::Float(v as f64 / sample.seconds);
        let ms_per_s = |ns: u64| V::Float((ns / 1000) as f64 * 0.001 / sample.seconds);
        for r in &sample.io {
            let mut row = vec![
                V::Int(sample.time.timestamp_micros()),
                V::text(r.backend_type.name()),
                V::text(r.object.name()),
                V::text(r.context.name()),
                V::Float(sample.seconds),
                int(r.count(IoOp::Read)),
                int(r.read_bytes),
                int(r.count(IoOp::Write)),
                int(r.write_bytes),
                int(r.count(IoOp::Extend)),
                int(r.extend_bytes),
                int(r.count(IoOp::Hit)),
                int(r.count(IoOp::Evict)),
                int(r.count(IoOp::Reuse)),
                int(r.count(IoOp::Fsync)),
                int(r.waits),
                ms(r.read_time_ns),
                ms(r.write_time_ns),
                ms(r.wait_time_ns),
                per_s(r.count(IoOp::Read)),
                V::Float(r.read_bytes as f64 / MB / sample.seconds),
                per_s(r.count(IoOp::Write)),
                V::Float(r.write_bytes as f64 / MB / sample.seconds),
                per_s(r.count(IoOp::Hit)),
                ms_per_s(r.read_time_ns),
                ms_per_s(r.wait_time_ns),
            ];
            push_percentiles_us(&mut row, &r.read_latency_us);
            push_percentiles_us(&mut row, &r.write_latency_us);
            rows.push(row);
        }
    }
    drop(history);
    build_batch(&pg_stat_io_history_schema(), &rows)
}
