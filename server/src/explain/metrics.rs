//! What EXPLAIN reads from the metrics iolab's scan nodes publish (engine/src/exec/scan.rs
//! and bitmap_scan.rs name them): buffer counts and I/O times, read latency, the read
//! stream's figures, the bitmap scan's counters, and the rows and time of the bitmap
//! nodes.
//!
//! Counters and times are summed over partitions. Gauges (latency percentiles, stream
//! averages) are per partition; iolab's scans run in one partition, and where there are
//! more the largest value is taken, an upper bound of each percentile.
//!
//! The bitmap nodes (Bitmap Index Scan, BitmapAnd, BitmapOr) are never polled as streams:
//! their Bitmap Heap Scan calls them to build its bitmap, so the instrumentation wrapper
//! around them sees nothing. Their rows and times come from the `BaselineMetrics` each
//! execution creates: `output_rows`, and one `start_timestamp` / `end_timestamp` pair per
//! execution (loop).

use datafusion::physical_plan::metrics::{MetricValue, MetricsSet};
use datafusion::physical_plan::ExecutionPlan;
use iolab_stats::BufferUsage;

use crate::explain::node::{Actual, Buffers, ReadLatency, ReadStreamUsage};

/// A node's metrics, or an empty set.
fn metrics(plan: &dyn ExecutionPlan) -> MetricsSet {
    plan.metrics().unwrap_or_default()
}

/// The sum over partitions of the counter or time `name`. DataFusion records a zero
/// duration as 1 ns (so that "took no time" differs from "not measured"); a partition's
/// 1 ns is a zero here.
pub fn counter(plan: &dyn ExecutionPlan, name: &str) -> u64 {
    metrics(plan)
        .iter()
        .filter(|metric| metric.value().name() == name)
        .map(|metric| {
            let v = metric.value().as_usize() as u64;
            match metric.value() {
                MetricValue::Time { .. } if v <= 1 => 0,
                _ => v,
            }
        })
        .sum()
}

/// The largest value over partitions of the gauge `name`.
pub fn gauge(plan: &dyn ExecutionPlan, name: &str) -> u64 {
    metrics(plan)
        .iter()
        .filter(|metric| metric.value().name() == name)
        .map(|metric| metric.value().as_usize() as u64)
        .max()
        .unwrap_or(0)
}

/// A gauge published ×1000 (`…_avg_milli`), as the fraction it stands for.
fn milli_gauge(plan: &dyn ExecutionPlan, name: &str) -> f64 {
    gauge(plan, name) as f64 / 1000.0
}

/// The node's own buffer usage (not its children's).
pub fn buffers(plan: &dyn ExecutionPlan) -> Buffers {
    let get = |name: &str| counter(plan, name);
    Buffers {
        usage: BufferUsage {
            shared_hit: get("shared_hit"),
            shared_read: get("shared_read"),
            shared_dirtied: get("shared_dirtied"),
            shared_written: get("shared_written"),
            shared_read_ns: get("shared_read_time"),
            shared_write_ns: get("shared_write_time"),
            shared_wait_ns: get("shared_wait_time"),
            local_hit: get("local_hit"),
            local_read: get("local_read"),
            local_dirtied: get("local_dirtied"),
            local_written: get("local_written"),
            local_read_ns: get("local_read_time"),
            local_write_ns: get("local_write_time"),
            local_wait_ns: get("local_wait_time"),
            io_reads: get("io_reads"),
            io_stalls: get("io_stalls"),
            ..BufferUsage::default()
        },
        track_io_timing: false,
    }
}

/// The latency of the node's own reads.
pub fn read_latency(plan: &dyn ExecutionPlan) -> ReadLatency {
    ReadLatency {
        reads: counter(plan, "io_reads"),
        p50_us: gauge(plan, "read_latency_p50_us"),
        p99_us: gauge(plan, "read_latency_p99_us"),
        p999_us: gauge(plan, "read_latency_p999_us"),
        max_us: gauge(plan, "read_latency_max_us"),
    }
}

/// What the node's read stream did (EXPLAIN (IO)).
pub fn read_stream(plan: &dyn ExecutionPlan) -> ReadStreamUsage {
    ReadStreamUsage {
        distance_avg: milli_gauge(plan, "prefetch_distance_avg_milli"),
        distance_max: gauge(plan, "prefetch_distance_max"),
        capacity: gauge(plan, "prefetch_capacity"),
        reads: counter(plan, "io_reads"),
        stalls: counter(plan, "io_stalls"),
        size_avg: milli_gauge(plan, "io_size_avg_milli"),
        inprogress_avg: milli_gauge(plan, "io_inprogress_avg_milli"),
        gap_blocks: gauge(plan, "io_gap_blocks"),
        drops: gauge(plan, "io_drops"),
    }
}

/// Rows, loops and (with `timing`) per-loop time of a node that is not polled as a
/// stream, from its baseline metrics. A loop that has not ended counts as not run.
pub fn baseline_actual(plan: &dyn ExecutionPlan, timing: bool) -> Actual {
    let set = metrics(plan);
    let nanos = |v: &MetricValue| match v {
        MetricValue::StartTimestamp(t) | MetricValue::EndTimestamp(t) => {
            t.value().and_then(|t| t.timestamp_nanos_opt())
        }
        _ => None,
    };
    let mut starts = Vec::new();
    let mut ends = Vec::new();
    for m in set.iter() {
        match m.value() {
            v @ MetricValue::StartTimestamp(_) => starts.extend(nanos(v)),
            v @ MetricValue::EndTimestamp(_) => ends.extend(nanos(v)),
            _ => {}
        }
    }
    let loops = ends.len() as u64;
    let per_loop_ms = (loops > 0 && starts.len() == ends.len()).then(|| {
        let elapsed_ns = ends.iter().sum::<i64>() - starts.iter().sum::<i64>();
        elapsed_ns.max(0) as f64 / 1e6 / loops as f64
    });
    Actual {
        // A bitmap node hands over its bitmap when it ends: startup = total, as in
        // PostgreSQL.
        times_ms: per_loop_ms.filter(|_| timing).map(|ms| (ms, ms)),
        rows: set.output_rows().unwrap_or(0) as f64,
        loops,
    }
}

/// Rows, loops and (with `timing`) per-loop time of a nested loop's inner scan, which
/// publishes them when its nested loop ends (`Prober`: `output_rows`, `loops`,
/// `probe_time`). PostgreSQL's startup time of a loop is not measured: it shows the loop's
/// whole time for both.
pub fn looped_actual(plan: &dyn ExecutionPlan, timing: bool) -> Actual {
    let loops = counter(plan, "loops");
    let per_loop_ms = (loops > 0).then(|| counter(plan, "probe_time") as f64 / 1e6 / loops as f64);
    Actual {
        times_ms: per_loop_ms.filter(|_| timing).map(|ms| (ms, ms)),
        rows: metrics(plan).output_rows().unwrap_or(0) as f64,
        loops,
    }
}

/// Has every execution of the node ended (published its end timestamp)?
pub fn ended(plan: &dyn ExecutionPlan) -> bool {
    metrics(plan).iter().all(|metric| match metric.value() {
        MetricValue::EndTimestamp(t) => t.value().is_some(),
        _ => true,
    })
}
