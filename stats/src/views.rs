//! The statistics views as Arrow record batches, with PostgreSQL 18's columns — names,
//! order and types — followed by iolab's own columns.
//!
//! | view | PostgreSQL 18 columns | iolab's extra columns |
//! |---|---|---|
//! | `pg_stat_io`, `pg_stat_get_backend_io(pid)` | 20: `backend_type` … `stats_reset` | `waits`, `wait_time`, `read_p50`, `read_p99`, `read_p999`, `read_max`, `write_p50`, `write_p99`, `write_p999`, `write_max` |
//! | `pg_aios` | 15: `pid` … `f_buffered` | — |
//!
//! PostgreSQL types map to Arrow as iolab's server reports them back to clients:
//! `bigint` → Int64, `integer` → Int32, `smallint` → Int16, `double precision` → Float64,
//! `boolean` → Boolean, `text` → Utf8, `timestamp with time zone` → Timestamp(µs, "+00:00"),
//! and `numeric` (the `*_bytes` columns) → Decimal128(38, 0), which the server describes
//! as an unconstrained `numeric` and prints without a fraction (`1646592`), as PostgreSQL
//! does.
//!
//! Times are milliseconds as `double precision`, computed as PostgreSQL does: whole
//! microseconds × 0.001. The latency columns are milliseconds too; they are NULL where
//! the row's reads (writes) are NULL or no latency was recorded; `waits` and `wait_time`
//! are NULL where both reads and writes are.

use std::sync::{Arc, LazyLock};

use arrow_array::{
    ArrayRef, BooleanArray, Decimal128Array, Float64Array, Int16Array, Int32Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef, TimeUnit};
use chrono::{DateTime, Utc};

use crate::io::{
    tracks_io_object, tracks_io_op, BackendIoSnapshot, BackendType, IoContext, IoCounters,
    IoObject, IoOp, IoSnapshot,
};

/// The time zone of `timestamptz` columns; the same as `iolab_catalog::types::TIMESTAMPTZ_ZONE`
/// (this crate depends on no other of iolab's; the server checks the two agree).
pub const TIMESTAMPTZ_ZONE: &str = "+00:00";

/// Number of `pg_stat_io` columns PostgreSQL 18 has; iolab's extra columns follow them.
pub const PG_STAT_IO_PG_COLUMNS: usize = 20;

fn numeric() -> DataType {
    DataType::Decimal128(38, 0)
}

fn timestamptz() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some(TIMESTAMPTZ_ZONE.into()))
}

/// The columns of `pg_stat_io` and `pg_stat_get_backend_io(pid)`.
pub fn pg_stat_io_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(pg_stat_io_fields);
    SCHEMA.clone()
}

fn pg_stat_io_fields() -> SchemaRef {
    let f = |name: &str, t: DataType| Field::new(name, t, true);
    Arc::new(Schema::new(vec![
        f("backend_type", DataType::Utf8),
        f("object", DataType::Utf8),
        f("context", DataType::Utf8),
        f("reads", DataType::Int64),
        f("read_bytes", numeric()),
        f("read_time", DataType::Float64),
        f("writes", DataType::Int64),
        f("write_bytes", numeric()),
        f("write_time", DataType::Float64),
        f("writebacks", DataType::Int64),
        f("writeback_time", DataType::Float64),
        f("extends", DataType::Int64),
        f("extend_bytes", numeric()),
        f("extend_time", DataType::Float64),
        f("hits", DataType::Int64),
        f("evictions", DataType::Int64),
        f("reuses", DataType::Int64),
        f("fsyncs", DataType::Int64),
        f("fsync_time", DataType::Float64),
        f("stats_reset", timestamptz()),
        // iolab's
        f("waits", DataType::Int64),
        f("wait_time", DataType::Float64),
        f("read_p50", DataType::Float64),
        f("read_p99", DataType::Float64),
        f("read_p999", DataType::Float64),
        f("read_max", DataType::Float64),
        f("write_p50", DataType::Float64),
        f("write_p99", DataType::Float64),
        f("write_p999", DataType::Float64),
        f("write_max", DataType::Float64),
    ]))
}

/// Nanoseconds as PostgreSQL shows a time: whole microseconds × 0.001 (`pg_stat_us_to_ms`).
fn ns_to_ms(ns: u64) -> f64 {
    (ns / 1000) as f64 * 0.001
}

fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The columns of `pg_stat_io` being filled, one vector per column.
struct IoColumns {
    backend_type: Vec<&'static str>,
    object: Vec<&'static str>,
    context: Vec<&'static str>,
    /// Per op in [`COUNT_COLUMNS`] order.
    counts: [Vec<Option<i64>>; 8],
    bytes: [Vec<Option<i128>>; 3],
    times: [Vec<Option<f64>>; 5],
    stats_reset: Vec<Option<i64>>,
    waits: Vec<Option<i64>>,
    wait_time: Vec<Option<f64>>,
    /// read p50, p99, p999, max, then the same for writes.
    latency: [Vec<Option<f64>>; 8],
}

/// The count columns in view order.
const COUNT_COLUMNS: [IoOp; 8] = [
    IoOp::Read,
    IoOp::Write,
    IoOp::Writeback,
    IoOp::Extend,
    IoOp::Hit,
    IoOp::Evict,
    IoOp::Reuse,
    IoOp::Fsync,
];
const BYTES_COLUMNS: [IoOp; 3] = [IoOp::Read, IoOp::Write, IoOp::Extend];
const TIME_COLUMNS: [IoOp; 5] = [
    IoOp::Read,
    IoOp::Write,
    IoOp::Writeback,
    IoOp::Extend,
    IoOp::Fsync,
];

impl IoColumns {
    /// Columns with room for `rows` rows.
    fn with_capacity(rows: usize) -> IoColumns {
        IoColumns {
            backend_type: Vec::with_capacity(rows),
            object: Vec::with_capacity(rows),
            context: Vec::with_capacity(rows),
            counts: std::array::from_fn(|_| Vec::with_capacity(rows)),
            bytes: std::array::from_fn(|_| Vec::with_capacity(rows)),
            times: std::array::from_fn(|_| Vec::with_capacity(rows)),
            stats_reset: Vec::with_capacity(rows),
            waits: Vec::with_capacity(rows),
            wait_time: Vec::with_capacity(rows),
            latency: std::array::from_fn(|_| Vec::with_capacity(rows)),
        }
    }

    /// Appends the rows of one backend type (`pg_stat_io_build_tuples`).
    fn push(&mut self, bt: BackendType, counters: &IoCounters, reset: Option<DateTime<Utc>>) {
        for obj in IoObject::ALL {
            for ctx in IoContext::ALL {
                if !tracks_io_object(bt, obj, ctx) {
                    continue;
                }
                let cell = counters.cell(obj, ctx);
                let tracked = |op| tracks_io_op(bt, obj, ctx, op);
                self.backend_type.push(bt.name());
                self.object.push(obj.name());
                self.context.push(ctx.name());
                for (col, op) in self.counts.iter_mut().zip(COUNT_COLUMNS) {
                    col.push(tracked(op).then(|| to_i64(cell.count(op))));
                }
                for (col, op) in self.bytes.iter_mut().zip(BYTES_COLUMNS) {
                    col.push(tracked(op).then(|| i128::from(cell.bytes(op))));
                }
                for (col, op) in self.times.iter_mut().zip(TIME_COLUMNS) {
                    col.push(tracked(op).then(|| ns_to_ms(cell.time_ns(op))));
                }
                self.stats_reset.push(reset.map(|t| t.timestamp_micros()));
                let issues_io = tracked(IoOp::Read) || tracked(IoOp::Write);
                self.waits.push(issues_io.then(|| to_i64(cell.waits())));
                self.wait_time
                    .push(issues_io.then(|| ns_to_ms(cell.wait_time_ns())));
                for (i, op) in [IoOp::Read, IoOp::Write].into_iter().enumerate() {
                    let summary = cell
                        .latency(op)
                        .filter(|_| tracked(op))
                        .and_then(|h| h.summary());
                    let values = [
                        summary.map(|s| s.p50_us),
                        summary.map(|s| s.p99_us),
                        summary.map(|s| s.p999_us),
                        summary.map(|s| s.max_us),
                    ];
                    for (j, v) in values.into_iter().enumerate() {
                        self.latency[i * 4 + j].push(v.map(|us| us / 1000.0));
                    }
                }
            }
        }
    }

    fn finish(self) -> RecordBatch {
        let text = |v: Vec<&'static str>| -> ArrayRef { Arc::new(StringArray::from(v)) };
        let int = |v: Vec<Option<i64>>| -> ArrayRef { Arc::new(Int64Array::from(v)) };
        let float = |v: Vec<Option<f64>>| -> ArrayRef { Arc::new(Float64Array::from(v)) };
        let num = |v: Vec<Option<i128>>| -> ArrayRef {
            Arc::new(
                Decimal128Array::from(v)
                    .with_precision_and_scale(38, 0)
                    .expect("38, 0 is a valid decimal"),
            )
        };
        let [reads, writes, writebacks, extends, hits, evictions, reuses, fsyncs] = self.counts;
        let [read_bytes, write_bytes, extend_bytes] = self.bytes;
        let [read_time, write_time, writeback_time, extend_time, fsync_time] = self.times;
        let mut columns = vec![
            text(self.backend_type),
            text(self.object),
            text(self.context),
            int(reads),
            num(read_bytes),
            float(read_time),
            int(writes),
            num(write_bytes),
            float(write_time),
            int(writebacks),
            float(writeback_time),
            int(extends),
            num(extend_bytes),
            float(extend_time),
            int(hits),
            int(evictions),
            int(reuses),
            int(fsyncs),
            float(fsync_time),
            Arc::new(
                TimestampMicrosecondArray::from(self.stats_reset).with_timezone(TIMESTAMPTZ_ZONE),
            ),
            int(self.waits),
            float(self.wait_time),
        ];
        columns.extend(self.latency.into_iter().map(float));
        RecordBatch::try_new(pg_stat_io_schema(), columns).expect("columns are built to the schema")
    }
}

/// `pg_stat_io`'s row count: the (backend type, object, context) triples PostgreSQL 18
/// tracks.
pub const PG_STAT_IO_ROWS: usize = 79;

/// `pg_stat_io`: one row per (backend type, object, context) PostgreSQL 18 tracks, in
/// PostgreSQL's order, from the per-type totals (`by_type[bt.index()]`) and their reset
/// time.
pub fn pg_stat_io_batch_of(by_type: &[IoCounters], stats_reset: DateTime<Utc>) -> RecordBatch {
    let mut cols = IoColumns::with_capacity(PG_STAT_IO_ROWS);
    for bt in BackendType::ALL {
        cols.push(bt, &by_type[bt.index()], Some(stats_reset));
    }
    debug_assert_eq!(cols.backend_type.len(), PG_STAT_IO_ROWS);
    cols.finish()
}

/// [`pg_stat_io_batch_of`] a snapshot.
pub fn pg_stat_io_batch(snapshot: &IoSnapshot) -> RecordBatch {
    pg_stat_io_batch_of(&snapshot.by_type, snapshot.stats_reset)
}

/// `pg_stat_get_backend_io(pid)`: the rows of one process's backend type with its own
/// counters and `stats_reset` (NULL until reset); no rows for an unknown pid.
pub fn backend_io_batch(snapshot: Option<&BackendIoSnapshot>) -> RecordBatch {
    let mut cols = IoColumns::with_capacity(PG_STAT_IO_ROWS);
    if let Some(s) = snapshot {
        if s.backend_type.tracks_backend_stats() {
            cols.push(s.backend_type, &s.counters, s.stats_reset);
        }
    }
    cols.finish()
}

// ---------------------------------------------------------------------------------------
// pg_aios
// ---------------------------------------------------------------------------------------

/// The state of an asynchronous I/O handle, with the names `pg_aios.state` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AioState {
    /// Free; never shown.
    Idle,
    /// Acquired, nothing defined yet: every column after `state` is NULL.
    HandedOut,
    Defined,
    Staged,
    Submitted,
    CompletedIo,
    CompletedShared,
    CompletedLocal,
}

impl AioState {
    pub fn name(self) -> &'static str {
        match self {
            AioState::Idle => "IDLE",
            AioState::HandedOut => "HANDED_OUT",
            AioState::Defined => "DEFINED",
            AioState::Staged => "STAGED",
            AioState::Submitted => "SUBMITTED",
            AioState::CompletedIo => "COMPLETED_IO",
            AioState::CompletedShared => "COMPLETED_SHARED",
            AioState::CompletedLocal => "COMPLETED_LOCAL",
        }
    }

    /// Is the raw (syscall-level) result known?
    pub fn is_completed(self) -> bool {
        matches!(
            self,
            AioState::CompletedIo | AioState::CompletedShared | AioState::CompletedLocal
        )
    }
}

/// The operation of a handle (`pg_aios.operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AioOperation {
    /// Not defined yet: `off` and `length` are NULL.
    Invalid,
    Readv,
    Writev,
}

impl AioOperation {
    pub fn name(self) -> &'static str {
        match self {
            AioOperation::Invalid => "invalid",
            AioOperation::Readv => "readv",
            AioOperation::Writev => "writev",
        }
    }
}

/// The distilled result of a handle (`pg_aios.result`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AioResultStatus {
    /// Not completed yet.
    Unknown,
    Ok,
    /// Completed without error but not all data was transferred.
    Partial,
    Warning,
    Error,
}

impl AioResultStatus {
    pub fn name(self) -> &'static str {
        match self {
            AioResultStatus::Unknown => "UNKNOWN",
            AioResultStatus::Ok => "OK",
            AioResultStatus::Partial => "PARTIAL",
            AioResultStatus::Warning => "WARNING",
            AioResultStatus::Error => "ERROR",
        }
    }
}

/// One I/O handle as the engine sees it; [`pg_aios_batch`] applies PostgreSQL 18's rules
/// for which columns are NULL (`pg_get_aios`): IDLE handles are not shown, a HANDED_OUT
/// handle shows only pid, id, generation and state, `off`/`length` are NULL for an
/// `invalid` operation, and `raw_result` only shows once the I/O completed.
#[derive(Clone, Debug, PartialEq)]
pub struct AioRow {
    /// The issuing session's pid; `None` when no process owns the handle.
    pub pid: Option<i32>,
    /// Handle index.
    pub io_id: i32,
    /// Incremented each time the handle is recycled.
    pub io_generation: i64,
    pub state: AioState,
    pub operation: AioOperation,
    /// File offset in bytes within the segment file.
    pub off: i64,
    /// Total bytes of the I/O.
    pub length: i64,
    /// `smgr` for relation files.
    pub target: String,
    /// Number of buffers in the I/O.
    pub handle_data_len: i16,
    /// Bytes transferred or −errno.
    pub raw_result: i32,
    pub result: AioResultStatus,
    /// `block N in file "base/…"`, `blocks N..M in file "…"`.
    pub target_desc: String,
    /// Flags: executed synchronously; targets process-local memory; buffered (not direct).
    pub f_sync: bool,
    pub f_localmem: bool,
    pub f_buffered: bool,
}

/// The columns of `pg_aios`.
pub fn pg_aios_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(pg_aios_fields);
    SCHEMA.clone()
}

fn pg_aios_fields() -> SchemaRef {
    let f = |name: &str, t: DataType| Field::new(name, t, true);
    Arc::new(Schema::new(vec![
        f("pid", DataType::Int32),
        f("io_id", DataType::Int32),
        f("io_generation", DataType::Int64),
        f("state", DataType::Utf8),
        f("operation", DataType::Utf8),
        f("off", DataType::Int64),
        f("length", DataType::Int64),
        f("target", DataType::Utf8),
        f("handle_data_len", DataType::Int16),
        f("raw_result", DataType::Int32),
        f("result", DataType::Utf8),
        f("target_desc", DataType::Utf8),
        f("f_sync", DataType::Boolean),
        f("f_localmem", DataType::Boolean),
        f("f_buffered", DataType::Boolean),
    ]))
}

/// `pg_aios`: one row per handle that is not IDLE, in the order given.
pub fn pg_aios_batch(rows: &[AioRow]) -> RecordBatch {
    let rows: Vec<&AioRow> = rows.iter().filter(|r| r.state != AioState::Idle).collect();
    // Columns after `state` exist once the handle is defined.
    let defined = |r: &AioRow| r.state != AioState::HandedOut;
    let located = |r: &AioRow| defined(r) && r.operation != AioOperation::Invalid;
    let text = |f: &dyn Fn(&AioRow) -> Option<String>| -> ArrayRef {
        Arc::new(rows.iter().map(|r| f(r)).collect::<StringArray>())
    };
    let flag = |f: fn(&AioRow) -> bool| -> ArrayRef {
        Arc::new(
            rows.iter()
                .map(|r| defined(r).then(|| f(r)))
                .collect::<BooleanArray>(),
        )
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(rows.iter().map(|r| r.pid).collect::<Int32Array>()),
        Arc::new(rows.iter().map(|r| Some(r.io_id)).collect::<Int32Array>()),
        Arc::new(
            rows.iter()
                .map(|r| Some(r.io_generation))
                .collect::<Int64Array>(),
        ),
        text(&|r| Some(r.state.name().to_string())),
        text(&|r| defined(r).then(|| r.operation.name().to_string())),
        Arc::new(
            rows.iter()
                .map(|r| located(r).then_some(r.off))
                .collect::<Int64Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|r| located(r).then_some(r.length))
                .collect::<Int64Array>(),
        ),
        text(&|r| defined(r).then(|| r.target.clone())),
        Arc::new(
            rows.iter()
                .map(|r| defined(r).then_some(r.handle_data_len))
                .collect::<Int16Array>(),
        ),
        Arc::new(
            rows.iter()
                .map(|r| (defined(r) && r.state.is_completed()).then_some(r.raw_result))
                .collect::<Int32Array>(),
        ),
        text(&|r| defined(r).then(|| r.result.name().to_string())),
        text(&|r| defined(r).then(|| r.target_desc.clone())),
        flag(|r| r.f_sync),
        flag(|r| r.f_localmem),
        flag(|r| r.f_buffered),
    ];
    RecordBatch::try_new(pg_aios_schema(), columns).expect("columns are built to the schema")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{IoStatsHub, PendingIoStats};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Decimal128Type, Float64Type, Int64Type};
    use arrow_array::Array;

    fn pg18_rows() -> Vec<Vec<String>> {
        include_str!("../testdata/pg18_stat_io_nulls.txt")
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
            .map(|l| l.split('|').map(str::to_string).collect())
            .collect()
    }

    fn text(batch: &RecordBatch, col: &str, row: usize) -> String {
        batch
            .column_by_name(col)
            .unwrap()
            .as_string::<i32>()
            .value(row)
            .to_string()
    }

    fn find_row(batch: &RecordBatch, bt: &str, obj: &str, ctx: &str) -> usize {
        (0..batch.num_rows())
            .find(|&r| {
                text(batch, "backend_type", r) == bt
                    && text(batch, "object", r) == obj
                    && text(batch, "context", r) == ctx
            })
            .unwrap()
    }

    #[test]
    fn pg_stat_io_matches_postgres_18_rows_and_nulls() {
        let hub = IoStatsHub::new();
        let batch = pg_stat_io_batch(&hub.snapshot());
        let expected = pg18_rows();
        assert_eq!(batch.num_rows(), 79);
        assert_eq!(batch.num_columns(), PG_STAT_IO_PG_COLUMNS + 10);
        for (row, want) in expected.iter().enumerate() {
            for (col, want) in want.iter().enumerate() {
                let array = batch.column(col);
                if col < 3 {
                    assert_eq!(&text(&batch, batch.schema().field(col).name(), row), want);
                } else {
                    assert_eq!(
                        array.is_null(row),
                        want == "t",
                        "row {row} ({}/{}/{}) column {}",
                        expected[row][0],
                        expected[row][1],
                        expected[row][2],
                        batch.schema().field(col).name()
                    );
                }
            }
        }
    }

    #[test]
    fn pg_stat_io_columns_are_postgres_18s() {
        // Names and types as `\gdesc` shows them on PostgreSQL 18.4.
        let pg = "backend_type text, object text, context text, reads bigint, read_bytes numeric, \
            read_time double precision, writes bigint, write_bytes numeric, write_time double precision, \
            writebacks bigint, writeback_time double precision, extends bigint, extend_bytes numeric, \
            extend_time double precision, hits bigint, evictions bigint, reuses bigint, fsyncs bigint, \
            fsync_time double precision, stats_reset timestamp with time zone";
        let schema = pg_stat_io_schema();
        for (field, spec) in schema.fields().iter().zip(pg.split(", ")) {
            let (name, ty) = spec.split_once(' ').unwrap();
            assert_eq!(field.name(), name);
            let want = match ty {
                "text" => DataType::Utf8,
                "bigint" => DataType::Int64,
                "numeric" => DataType::Decimal128(38, 0),
                "double precision" => DataType::Float64,
                "timestamp with time zone" => timestamptz(),
                other => panic!("{other}"),
            };
            assert_eq!(field.data_type(), &want, "{name}");
        }
        let extra: Vec<&str> = schema.fields()[PG_STAT_IO_PG_COLUMNS..]
            .iter()
            .map(|f| f.name().as_str())
            .collect();
        assert_eq!(
            extra,
            [
                "waits",
                "wait_time",
                "read_p50",
                "read_p99",
                "read_p999",
                "read_max",
                "write_p50",
                "write_p99",
                "write_p999",
                "write_max"
            ]
        );
    }

    #[test]
    fn values_land_in_their_columns() {
        let hub = IoStatsHub::new();
        hub.register_backend(11, BackendType::ClientBackend);
        let mut p = PendingIoStats::new();
        let (rel, normal) = (IoObject::Relation, IoContext::Normal);
        // 141 reads of 1646592 bytes in 11.653 ms (plus some nanoseconds that PostgreSQL
        // would not show either).
        p.count_ops(rel, normal, IoOp::Read, 141, 1646592, 11_653_999);
        p.count_ops(rel, normal, IoOp::Hit, 5423, 0, 0);
        p.count_ops(rel, normal, IoOp::Extend, 9, 73728, 178_000);
        p.count_wait(rel, normal, 2_500);
        p.record_latency(rel, normal, IoOp::Read, 100_000);
        p.record_latency(rel, normal, IoOp::Read, 300_000);
        hub.flush(&mut p, BackendType::ClientBackend, 11);
        let batch = pg_stat_io_batch(&hub.snapshot());
        let r = find_row(&batch, "client backend", "relation", "normal");
        let int = |c: &str| {
            batch
                .column_by_name(c)
                .unwrap()
                .as_primitive::<Int64Type>()
                .value(r)
        };
        let float = |c: &str| {
            let a = batch
                .column_by_name(c)
                .unwrap()
                .as_primitive::<Float64Type>();
            (!a.is_null(r)).then(|| a.value(r))
        };
        let num = |c: &str| {
            batch
                .column_by_name(c)
                .unwrap()
                .as_primitive::<Decimal128Type>()
                .value(r)
        };
        assert_eq!(int("reads"), 141);
        assert_eq!(num("read_bytes"), 1646592);
        assert_eq!(float("read_time"), Some(11.653));
        assert_eq!(int("hits"), 5423);
        assert_eq!((int("extends"), num("extend_bytes")), (9, 73728));
        assert_eq!(float("extend_time"), Some(0.178));
        assert_eq!(int("writes"), 0);
        assert_eq!(int("waits"), 1);
        assert_eq!(float("wait_time"), Some(0.002));
        let p50 = float("read_p50").unwrap();
        assert!((0.099..=0.101).contains(&p50), "{p50}");
        assert_eq!(float("read_max"), Some(0.3));
        assert_eq!(float("write_p50"), None, "no write latency recorded");
        assert!(batch.column_by_name("stats_reset").unwrap().is_valid(r));

        // The same process's own view, before and after its reset.
        let snapshot = hub.backend_snapshot(11);
        let b = backend_io_batch(snapshot.as_ref());
        assert_eq!(b.num_rows(), 8, "client backend rows, as PostgreSQL 18");
        let r = find_row(&b, "client backend", "relation", "normal");
        assert_eq!(
            b.column_by_name("reads")
                .unwrap()
                .as_primitive::<Int64Type>()
                .value(r),
            141
        );
        assert!(b.column_by_name("stats_reset").unwrap().is_null(r));
        hub.reset_backend(11);
        let b = backend_io_batch(hub.backend_snapshot(11).as_ref());
        assert!(b.column_by_name("stats_reset").unwrap().is_valid(r));
        assert_eq!(backend_io_batch(None).num_rows(), 0);
    }

    #[test]
    fn backend_rows_match_postgres_18_client_backend_rows() {
        let hub = IoStatsHub::new();
        hub.register_backend(3, BackendType::ClientBackend);
        let b = backend_io_batch(hub.backend_snapshot(3).as_ref());
        let expected: Vec<Vec<String>> = pg18_rows()
            .into_iter()
            .filter(|r| r[0] == "client backend")
            .collect();
        assert_eq!(b.num_rows(), expected.len());
        for (row, want) in expected.iter().enumerate() {
            // Every column but stats_reset (NULL until the process's stats are reset).
            for (col, want) in want.iter().enumerate().take(19).skip(3) {
                assert_eq!(b.column(col).is_null(row), want == "t");
            }
        }
    }

    fn aio(state: AioState) -> AioRow {
        AioRow {
            pid: Some(8402),
            io_id: 1472,
            io_generation: 28,
            state,
            operation: AioOperation::Readv,
            off: 14278656,
            length: 131072,
            target: "smgr".into(),
            handle_data_len: 16,
            raw_result: 131072,
            result: AioResultStatus::Unknown,
            target_desc: "blocks 1743..1758 in file \"base/16388/16414\"".into(),
            f_sync: false,
            f_localmem: false,
            f_buffered: true,
        }
    }

    #[test]
    fn pg_aios_nulls_follow_postgres_18() {
        let rows = vec![
            aio(AioState::Idle),
            aio(AioState::HandedOut),
            aio(AioState::Submitted),
            aio(AioState::CompletedShared),
            AioRow {
                operation: AioOperation::Invalid,
                ..aio(AioState::Defined)
            },
        ];
        let b = pg_aios_batch(&rows);
        assert_eq!(b.num_rows(), 4, "IDLE handles are not shown");
        assert_eq!(b.num_columns(), 15);
        let nulls = |row: usize| -> String {
            (0..b.num_columns())
                .map(|c| if b.column(c).is_null(row) { 'n' } else { '.' })
                .collect()
        };
        assert_eq!(nulls(0), "....nnnnnnnnnnn", "HANDED_OUT: all after state");
        assert_eq!(
            nulls(1),
            ".........n.....",
            "raw_result only when completed"
        );
        assert_eq!(nulls(2), "...............");
        assert_eq!(
            nulls(3),
            ".....nn..n.....",
            "invalid op: no offset or length"
        );
        assert_eq!(text(&b, "state", 1), "SUBMITTED");
        assert_eq!(text(&b, "operation", 3), "invalid");
        assert_eq!(text(&b, "result", 2), "UNKNOWN");
        let schema = pg_aios_schema();
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(
            names.join(","),
            "pid,io_id,io_generation,state,operation,off,length,target,handle_data_len,\
             raw_result,result,target_desc,f_sync,f_localmem,f_buffered"
        );
        assert_eq!(pg_aios_batch(&[]).num_rows(), 0);
    }
}
