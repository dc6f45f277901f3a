//! The statistics in Prometheus' text exposition format (version 0.0.4): the same
//! counters as `pg_stat_io` and `pg_stat_aio`, their latency histograms, the I/Os in
//! flight and the sessions by state. docs/statistics.md lists every metric.
//!
//! Counters are cumulative since the view's `stats_reset` (exported too, so a reset shows
//! as a counter reset Prometheus understands). Histograms are drawn from the same HDR
//! histograms the views read: a bucket `le="x"` counts latencies ≤ x within their 1 %
//! resolution, and `_sum` is the histogram's mean × count (also within 1 %).

use std::fmt::Write;

use iolab_engine::Database;
use iolab_stats::history::AIO_EVENTS;
use iolab_stats::{
    tracks_io_object, tracks_io_op, AioEvent, AioLatencyOp, BackendState, BackendType, IoContext,
    IoObject, IoOp, LatencyHistogram,
};

/// Upper bounds of the latency buckets, in microseconds (10 µs … 10 s; `+Inf` follows).
const BUCKETS_US: [u64; 16] = [
    10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000,
    1_000_000, 10_000_000,
];

/// The `pg_stat_io` count column each operation is exported under (`op` label).
fn op_label(op: IoOp) -> &'static str {
    match op {
        IoOp::Evict => "evictions",
        IoOp::Extend => "extends",
        IoOp::Fsync => "fsyncs",
        IoOp::Hit => "hits",
        IoOp::Read => "reads",
        IoOp::Reuse => "reuses",
        IoOp::Write => "writes",
        IoOp::Writeback => "writebacks",
    }
}

/// The metric name of a `pg_stat_aio` event counter.
fn aio_metric(event: AioEvent) -> &'static str {
    match event {
        AioEvent::Started => "iolab_aio_ios_total",
        AioEvent::Submission => "iolab_aio_submissions_total",
        AioEvent::QueueFull => "iolab_aio_queue_full_total",
        AioEvent::CompletionWait => "iolab_aio_completion_waits_total",
        AioEvent::HandleWait => "iolab_aio_handle_waits_total",
        AioEvent::CompletedElsewhere => "iolab_aio_completed_elsewhere_total",
        AioEvent::Advised => "iolab_aio_advised_total",
        AioEvent::TakenBack => "iolab_aio_taken_back_total",
        AioEvent::DroppedBehind => "iolab_aio_dropped_behind_total",
    }
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes the text exposition, one metric family after the other.
struct Exposition {
    out: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push_str(name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (k, v)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{k}=\"{}\"", escape(v));
            }
            self.out.push('}');
        }
        let _ = writeln!(self.out, " {value}");
    }

    /// The `_bucket`, `_sum` and `_count` lines of one histogram, in seconds.
    fn histogram(&mut self, name: &str, labels: &[(&str, &str)], h: &LatencyHistogram) {
        let bucket = format!("{name}_bucket");
        for us in BUCKETS_US {
            let le = format!("{}", us as f64 / 1e6);
            let mut with_le = labels.to_vec();
            with_le.push(("le", &le));
            self.sample(&bucket, &with_le, h.count_at_or_below_us(us) as f64);
        }
        let mut with_le = labels.to_vec();
        with_le.push(("le", "+Inf"));
        self.sample(&bucket, &with_le, h.count() as f64);
        self.sample(&format!("{name}_sum"), labels, h.approximate_sum_us() / 1e6);
        self.sample(&format!("{name}_count"), labels, h.count() as f64);
    }
}

/// A counter family of `pg_stat_io`: name, help, and the operations it has.
type CounterFamily = (&'static str, &'static str, fn(IoOp) -> bool);

/// Every metric of `db`, as the body of a `/metrics` response.
pub fn render(db: &Database) -> String {
    let (io, aio) = db.io_stats.snapshots();
    let in_flight = crate::pgcatalog::stat_aio::in_flight(db);
    let method = db.aio.method().name();
    let mut e = Exposition { out: String::new() };

    // pg_stat_io: every tracked (backend type, object, context, op), as the view's rows.
    let cells: Vec<(BackendType, IoObject, IoContext)> = BackendType::ALL
        .into_iter()
        .flat_map(|bt| IoObject::ALL.into_iter().map(move |o| (bt, o)))
        .flat_map(|(bt, o)| IoContext::ALL.into_iter().map(move |c| (bt, o, c)))
        .filter(|&(bt, o, c)| tracks_io_object(bt, o, c))
        .collect();
    let families: [CounterFamily; 3] = [
        (
            "iolab_io_operations_total",
            "I/O operations (pg_stat_io's count columns; op = the column).",
            |_| true,
        ),
        (
            "iolab_io_bytes_total",
            "Bytes read, written and extended (pg_stat_io's *_bytes columns).",
            IoOp::has_bytes,
        ),
        (
            "iolab_io_time_seconds_total",
            "Time blocked on I/O, with track_io_timing (pg_stat_io's *_time columns).",
            IoOp::has_time,
        ),
    ];
    for (family, (name, help, applies)) in families.into_iter().enumerate() {
        e.family(name, "counter", help);
        for &(bt, obj, ctx) in &cells {
            let cell = io.counters(bt).cell(obj, ctx);
            for op in IoOp::ALL.into_iter().filter(|&op| applies(op)) {
                if !tracks_io_op(bt, obj, ctx, op) {
                    continue;
                }
                let value = match family {
                    0 => cell.count(op) as f64,
                    1 => cell.bytes(op) as f64,
                    _ => cell.time_ns(op) as f64 / 1e9,
                };
                let labels = [
                    ("backend_type", bt.name()),
                    ("object", obj.name()),
                    ("context", ctx.name()),
                    ("op", op_label(op)),
                ];
                e.sample(name, &labels, value);
            }
        }
    }
    let issuing: Vec<_> = cells
        .iter()
        .copied()
        .filter(|&(bt, o, c)| {
            tracks_io_op(bt, o, c, IoOp::Read) || tracks_io_op(bt, o, c, IoOp::Write)
        })
        .collect();
    e.family(
        "iolab_io_waits_total",
        "counter",
        "Advice and submission calls made to issue I/O (pg_stat_io.waits).",
    );
    for &(bt, obj, ctx) in &issuing {
        let labels = [
            ("backend_type", bt.name()),
            ("object", obj.name()),
            ("context", ctx.name()),
        ];
        e.sample(
            "iolab_io_waits_total",
            &labels,
            io.counters(bt).cell(obj, ctx).waits() as f64,
        );
    }
    e.family(
        "iolab_io_wait_seconds_total",
        "counter",
        "Time spent issuing I/O, with track_io_timing (pg_stat_io.wait_time).",
    );
    for &(bt, obj, ctx) in &issuing {
        let labels = [
            ("backend_type", bt.name()),
            ("object", obj.name()),
            ("context", ctx.name()),
        ];
        let ns = io.counters(bt).cell(obj, ctx).wait_time_ns();
        e.sample("iolab_io_wait_seconds_total", &labels, ns as f64 / 1e9);
    }
    e.family(
        "iolab_io_latency_seconds",
        "histogram",
        "Submission-to-completion latency of reads and writes (pg_stat_io's percentile columns).",
    );
    for &(bt, obj, ctx) in &issuing {
        for op in [IoOp::Read, IoOp::Write] {
            let Some(h) = io
                .counters(bt)
                .cell(obj, ctx)
                .latency(op)
                .filter(|h| !h.is_empty())
            else {
                continue;
            };
            let labels = [
                ("backend_type", bt.name()),
                ("object", obj.name()),
                ("context", ctx.name()),
                ("op", op.name()),
            ];
            e.histogram("iolab_io_latency_seconds", &labels, h);
        }
    }
    e.family(
        "iolab_io_stats_reset_timestamp_seconds",
        "gauge",
        "When pg_stat_io was last reset (Unix time).",
    );
    e.sample(
        "iolab_io_stats_reset_timestamp_seconds",
        &[],
        io.stats_reset.timestamp_micros() as f64 / 1e6,
    );

    // pg_stat_aio
    let aio_types: Vec<BackendType> = BackendType::ALL
        .into_iter()
        .filter(|&bt| tracks_io_object(bt, IoObject::Relation, IoContext::Normal))
        .collect();
    for event in AIO_EVENTS {
        let name = aio_metric(event);
        e.family(name, "counter", "pg_stat_aio's column of the same name.");
        for &bt in &aio_types {
            let labels = [("backend_type", bt.name()), ("io_method", method)];
            e.sample(name, &labels, aio.counts(bt).get(event) as f64);
        }
    }
    e.family(
        "iolab_aio_in_flight",
        "gauge",
        "AIO handles in use now (pg_stat_aio.in_flight).",
    );
    for &bt in &aio_types {
        let labels = [("backend_type", bt.name()), ("io_method", method)];
        e.sample(
            "iolab_aio_in_flight",
            &labels,
            in_flight[bt as usize] as f64,
        );
    }
    e.family(
        "iolab_aio_latency_seconds",
        "histogram",
        "Submission-to-completion latency per operation (pg_stat_aio's percentile columns).",
    );
    for &bt in &aio_types {
        for op in AioLatencyOp::ALL {
            if let Some(h) = aio.counts(bt).latency(op) {
                let labels = [
                    ("backend_type", bt.name()),
                    ("io_method", method),
                    ("op", op.name()),
                ];
                e.histogram("iolab_aio_latency_seconds", &labels, h);
            }
        }
    }
    e.family(
        "iolab_aio_stats_reset_timestamp_seconds",
        "gauge",
        "When pg_stat_aio was last reset (Unix time).",
    );
    e.sample(
        "iolab_aio_stats_reset_timestamp_seconds",
        &[],
        aio.stats_reset.timestamp_micros() as f64 / 1e6,
    );

    // pg_stat_activity
    e.family(
        "iolab_backends",
        "gauge",
        "Client sessions by pg_stat_activity.state.",
    );
    let sessions = db.io_stats.activity.clients();
    for state in [
        BackendState::Active,
        BackendState::Idle,
        BackendState::IdleInTransaction,
        BackendState::IdleInTransactionAborted,
    ] {
        let n = sessions
            .iter()
            .filter(|a| a.status().state == state)
            .count();
        e.sample("iolab_backends", &[("state", state.name())], n as f64);
    }
    e.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape("x\ny"), "x\\ny");
    }

    #[test]
    fn histogram_lines_are_cumulative_and_end_with_inf() {
        let mut h = LatencyHistogram::new();
        for us in [5, 40, 40, 2000, 20_000_000] {
            h.record_ns(us * 1000);
        }
        let mut e = Exposition { out: String::new() };
        e.histogram("m", &[("op", "read")], &h);
        let lines: Vec<&str> = e.out.lines().collect();
        assert_eq!(lines[0], r#"m_bucket{op="read",le="0.00001"} 1"#);
        assert_eq!(lines[2], r#"m_bucket{op="read",le="0.00005"} 3"#);
        assert_eq!(lines[7], r#"m_bucket{op="read",le="0.0025"} 4"#);
        assert_eq!(lines[15], r#"m_bucket{op="read",le="10"} 4"#);
        assert_eq!(lines[16], r#"m_bucket{op="read",le="+Inf"} 5"#);
        assert_eq!(lines[18], r#"m_count{op="read"} 5"#);
    }
}
