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
//!
//! A history view can hold an hour of samples (tens of thousands of rows), so it is built
//! straight into Arrow columns, and only the columns the statement uses: a Grafana panel
//! reads four or five of the 28 or 36.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use datafusion::error::Result;
use iolab_engine::Database;
use iolab_stats::history::{AioHistoryRow, IoHistoryRow, Percentiles, Sample, AIO_EVENTS};
use iolab_stats::StatsHistory;
use iolab_stats::{tracks_io_object, AioLatencyOp, BackendType, IoContext, IoObject, IoOp};

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::time_range::TimeRange;

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
    completion_waits bigint, handle_waits bigint, completed_elsewhere bigint, advised bigint, taken_back bigint, dropped_behind bigint, in_flight bigint";

fn aio_ops() -> Vec<&'static str> {
    AioLatencyOp::ALL.iter().map(|op| op.name()).collect()
}

pub fn pg_stat_aio_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        schema_of(&parse_columns(&format!(
            "backend_type text, io_method text, {AIO_EVENT_COLUMNS}, {}, \
         stats_reset timestamp with time zone",
            latency_columns(&aio_ops())
        )))
    });
    SCHEMA.clone()
}

pub fn pg_stat_aio_history_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        schema_of(&parse_columns(&format!(
            "time timestamp with time zone, backend_type text, io_method text, \
         interval_s double precision, {AIO_EVENT_COLUMNS}, ios_per_s double precision, \
         submissions_per_s double precision, {}",
            latency_columns(&aio_ops())
        )))
    });
    SCHEMA.clone()
}

pub fn pg_stat_io_history_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
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
    });
    SCHEMA.clone()
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

/// One value of a history row, before it goes into its column.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cell {
    Time(i64),
    Text(&'static str),
    Int(i64),
    Float(Option<f64>),
}

fn count(v: u64) -> Cell {
    Cell::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

fn float(v: f64) -> Cell {
    Cell::Float(Some(v))
}

/// Whole microseconds of `ns` as milliseconds, as the other views show times.
fn ms_of(ns: u64) -> f64 {
    (ns / 1000) as f64 * 0.001
}

/// A percentile kept in microseconds as milliseconds (NULL when nothing was recorded).
fn percentile(p: &Percentiles, i: usize) -> Cell {
    let us = p[i];
    Cell::Float((!us.is_nan()).then(|| us as f64 / 1000.0))
}

/// Column `column` of `pg_stat_io_history` for row `r` of `sample`, in the order of
/// [`pg_stat_io_history_schema`].
fn io_history_cell(column: usize, sample: &Sample, r: &IoHistoryRow) -> Cell {
    const MB: f64 = 1e6;
    let per_s = |v: u64| float(v as f64 / sample.seconds);
    match column {
        0 => Cell::Time(sample.time.timestamp_micros()),
        1 => Cell::Text(r.backend_type.name()),
        2 => Cell::Text(r.object.name()),
        3 => Cell::Text(r.context.name()),
        4 => float(sample.seconds),
        5 => count(r.count(IoOp::Read)),
        6 => count(r.read_bytes),
        7 => count(r.count(IoOp::Write)),
        8 => count(r.write_bytes),
        9 => count(r.count(IoOp::Extend)),
        10 => count(r.extend_bytes),
        11 => count(r.count(IoOp::Hit)),
        12 => count(r.count(IoOp::Evict)),
        13 => count(r.count(IoOp::Reuse)),
        14 => count(r.count(IoOp::Fsync)),
        15 => count(r.waits),
        16 => float(ms_of(r.read_time_ns)),
        17 => float(ms_of(r.write_time_ns)),
        18 => float(ms_of(r.wait_time_ns)),
        19 => per_s(r.count(IoOp::Read)),
        20 => float(r.read_bytes as f64 / MB / sample.seconds),
        21 => per_s(r.count(IoOp::Write)),
        22 => float(r.write_bytes as f64 / MB / sample.seconds),
        23 => per_s(r.count(IoOp::Hit)),
        24 => float(ms_of(r.read_time_ns) / sample.seconds),
        25 => float(ms_of(r.wait_time_ns) / sample.seconds),
        26..=30 => percentile(&r.read_latency_us, column - 26),
        31..=35 => percentile(&r.write_latency_us, column - 31),
        _ => unreachable!("pg_stat_io_history has 36 columns, not {}", column + 1),
    }
}

/// Column `column` of `pg_stat_aio_history` for row `r` of `sample` (the server's
/// `io_method` is `method`), in the order of [`pg_stat_aio_history_schema`].
fn aio_history_cell(
    column: usize,
    sample: &Sample,
    r: &AioHistoryRow,
    method: &'static str,
) -> Cell {
    // time, backend_type, io_method, interval_s; the events; in_flight, ios_per_s,
    // submissions_per_s; read, write, fsync × p50, p90, p99, p999, max.
    const EVENTS: usize = 4;
    const IN_FLIGHT: usize = EVENTS + AIO_EVENTS.len();
    const LATENCY: usize = IN_FLIGHT + 3;
    const COLUMNS: usize = LATENCY + 15;
    match column {
        0 => Cell::Time(sample.time.timestamp_micros()),
        1 => Cell::Text(r.backend_type.name()),
        2 => Cell::Text(method),
        3 => float(sample.seconds),
        c if (EVENTS..IN_FLIGHT).contains(&c) => count(r.events[c - EVENTS]),
        IN_FLIGHT => Cell::Int(r.in_flight as i64),
        c if c == IN_FLIGHT + 1 => float(r.events[0] as f64 / sample.seconds),
        c if c == IN_FLIGHT + 2 => float(r.events[1] as f64 / sample.seconds),
        c if (LATENCY..COLUMNS).contains(&c) => {
            percentile(&r.latency_us[(c - LATENCY) / 5], (c - LATENCY) % 5)
        }
        _ => unreachable!(
            "pg_stat_aio_history has {COLUMNS} columns, not {}",
            column + 1
        ),
    }
}

/// The Arrow column of `rows` × `cell`, of the type `dt` of the schema.
fn history_column<R>(dt: &DataType, rows: &[R], cell: impl Fn(&R) -> Cell) -> ArrayRef {
    let mismatch = |c: Cell| -> ! { unreachable!("a {c:?} in a {dt} history column") };
    match dt {
        DataType::Timestamp(_, tz) => Arc::new(
            TimestampMicrosecondArray::from_iter_values(rows.iter().map(|r| match cell(r) {
                Cell::Time(us) => us,
                c => mismatch(c),
            }))
            .with_timezone_opt(tz.clone()),
        ),
        DataType::Utf8 => Arc::new(
            rows.iter()
                .map(|r| match cell(r) {
                    Cell::Text(t) => t,
                    c => mismatch(c),
                })
                .map(Some)
                .collect::<StringArray>(),
        ),
        DataType::Int64 => Arc::new(
            rows.iter()
                .map(|r| match cell(r) {
                    Cell::Int(i) => i,
                    c => mismatch(c),
                })
                .collect::<Int64Array>(),
        ),
        DataType::Float64 => Arc::new(
            rows.iter()
                .map(|r| match cell(r) {
                    Cell::Float(f) => f,
                    c => mismatch(c),
                })
                .collect::<Float64Array>(),
        ),
        other => unreachable!("history views have no {other} columns"),
    }
}

/// The columns `projection` (all when `None`) of `schema` over `rows`.
fn history_batch<R>(
    schema: &SchemaRef,
    projection: Option<&[usize]>,
    rows: &[R],
    cell: impl Fn(usize, &R) -> Cell,
) -> Result<RecordBatch> {
    let all: Vec<usize>;
    let columns = match projection {
        Some(p) => p,
        None => {
            all = (0..schema.fields().len()).collect();
            &all
        }
    };
    let arrays = columns
        .iter()
        .map(|&i| history_column(schema.field(i).data_type(), rows, |r| cell(i, r)))
        .collect();
    Ok(RecordBatch::try_new_with_options(
        Arc::new(schema.project(columns)?),
        arrays,
        &RecordBatchOptions::new().with_row_count(Some(rows.len())),
    )?)
}

/// The samples of `history` (none without a sampler) whose time is in `range`.
fn samples_in(history: &Option<StatsHistory>, range: TimeRange) -> impl Iterator<Item = &Sample> {
    history
        .iter()
        .flat_map(|h| h.samples())
        .filter(move |s| range.contains(s.time.timestamp_micros()))
}

/// `pg_stat_aio_history`'s columns `projection` (all when `None`) of the samples in
/// `range`.
///
/// The history stays locked while the columns are built (the sampler waits meanwhile):
/// a column is one pass over the ring's rows with no allocation per value, so an hour
/// of samples takes well under a millisecond per column.
pub fn pg_stat_aio_history_batch(
    db: &Database,
    projection: Option<&[usize]>,
    range: TimeRange,
) -> Result<RecordBatch> {
    let method = db.aio.method().name();
    let history = db.io_stats.history.lock();
    let rows: Vec<(&Sample, &AioHistoryRow)> = samples_in(&history, range)
        .flat_map(|s| s.aio.iter().map(move |r| (s, r)))
        .collect();
    history_batch(
        &pg_stat_aio_history_schema(),
        projection,
        &rows,
        |i, (s, r)| aio_history_cell(i, s, r, method),
    )
}

/// `pg_stat_io_history`'s columns `projection` (all when `None`) of the samples in
/// `range`, built as
/// [`pg_stat_aio_history_batch`]'s are.
pub fn pg_stat_io_history_batch(
    db: &Database,
    projection: Option<&[usize]>,
    range: TimeRange,
) -> Result<RecordBatch> {
    let history = db.io_stats.history.lock();
    let rows: Vec<(&Sample, &IoHistoryRow)> = samples_in(&history, range)
        .flat_map(|s| s.io.iter().map(move |r| (s, r)))
        .collect();
    history_batch(
        &pg_stat_io_history_schema(),
        projection,
        &rows,
        |i, (s, r)| io_history_cell(i, s, r),
    )
}
