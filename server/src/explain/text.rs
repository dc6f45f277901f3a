//! EXPLAIN's text format, as PostgreSQL 18 lays it out (`explain.c`, `ExplainNode` and
//! `show_buffer_usage` in text mode).
//!
//! ```text
//! Aggregate  (cost=4167.05..4167.06 rows=1 width=8) (actual time=21.200..21.201 rows=1.00 loops=1)
//!   Buffers: shared read=1667                       ← detail lines: 2 spaces deeper than the header
//!   ->  Seq Scan on t  (cost=0.00..4167.00 rows=20 width=0) (actual time=… rows=0.00 loops=1)
//!         Filter: (filler > 'fffffff'::text)        ← a child at depth d: header at 6d−4 spaces
//!         Rows Removed by Filter: 200000               after "->  ", details at 6d+2
//!         Buffers: shared read=1667
//! Planning Time: 0.372 ms
//! Execution Time: 21.226 ms
//! ```
//!
//! Counters print only when positive (`Buffers:`, `I/O Timings:` and `Heap Blocks:` lines
//! disappear when all their members are zero); `Index Searches:` prints always.
//!
//! Beyond PostgreSQL 18, on the nodes that read:
//!
//! ```text
//!   Bitmap Heap Scan on t (actual time=… rows=0.00 loops=1)
//!     Recheck Cond: (a < 140)
//!     …
//!     Heap Blocks: exact=1347
//!     Prefetch: avg=93.412 max=128 capacity=128          ← EXPLAIN (IO) only, read-stream nodes
//!     I/O: stalls=3 size=1.000 inprogress=61.030            (PostgreSQL 19's lines)
//!     Buffers: shared hit=4 read=1347
//!     I/O Timings: shared wait=1.203 read=15.291         ← wait= (issuing reads) only when > 0
//!     I/O Latency: read p50=0.081 p99=0.412 p99.9=0.980 max=1.113
//! ```
//!
//! `I/O Latency:` is the node's own reads (never its children's: percentiles do not add
//! up), printed when the node issued reads and `track_io_timing` is on. `I/O:` is printed
//! when the stream started reads.

use iolab_settings::quote_identifier;

use crate::explain::node::{Buffers, Detail, Explained, PlanNode, ReadStreamUsage, Wal};

/// The output, one line per row of the result.
pub fn render(e: &Explained) -> Vec<String> {
    let mut out = Vec::new();
    node(&mut out, &e.plan, 0);
    if let Some(settings) = e.settings.as_ref().filter(|s| !s.is_empty()) {
        let list: Vec<String> = settings
            .iter()
            .map(|(name, value)| format!("{name} = '{value}'"))
            .collect();
        out.push(format!("Settings: {}", list.join(", ")));
    }
    if let Some(b) = e
        .planning_buffers
        .as_ref()
        .filter(|b| b.has_counts() || b.has_timing())
    {
        out.push("Planning:".into());
        buffers(&mut out, b, 1);
    }
    if let Some(ms) = e.planning_time_ms {
        out.push(format!("Planning Time: {ms:.3} ms"));
    }
    if let Some(s) = &e.serialization {
        let time = s
            .time_ms
            .map(|ms| format!("time={ms:.3} ms  "))
            .unwrap_or_default();
        out.push(format!(
            "Serialization: {time}output={}kB  format={}",
            kilobytes(s.bytes),
            s.format
        ));
    }
    if let Some(ms) = e.execution_time_ms {
        out.push(format!("Execution Time: {ms:.3} ms"));
    }
    out
}

/// PostgreSQL's `BYTES_TO_KILOBYTES`: rounded up.
pub fn kilobytes(bytes: u64) -> u64 {
    bytes.div_ceil(1024)
}

fn spaces(indent: usize) -> String {
    " ".repeat(indent * 2)
}

fn node(out: &mut Vec<String>, n: &PlanNode, mut indent: usize) {
    let mut line = String::new();
    if indent > 0 {
        line.push_str(&spaces(indent));
        line.push_str("->  ");
        indent += 2;
    }
    line.push_str(&n.text_name);
    if let Some(index) = &n.index {
        let word = if index.scan_direction.is_some() {
            "using"
        } else {
            "on"
        };
        line.push_str(&format!(" {word} {}", quote_identifier(&index.name)));
    }
    if let Some(rel) = &n.relation {
        line.push_str(" on");
        match (&rel.schema, &rel.object_name) {
            (Some(schema), Some(name)) => {
                line.push_str(&format!(
                    " {}.{}",
                    quote_identifier(schema),
                    quote_identifier(name)
                ));
            }
            (_, Some(name)) => line.push_str(&format!(" {}", quote_identifier(name))),
            _ => {}
        }
        if rel.object_name.as_deref() != Some(rel.alias.as_str()) {
            line.push_str(&format!(" {}", quote_identifier(&rel.alias)));
        }
    }
    if let Some(c) = &n.costs {
        line.push_str(&format!(
            "  (cost={:.2}..{:.2} rows={:.0} width={})",
            c.startup, c.total, c.rows, c.width
        ));
    }
    if let Some(a) = &n.actual {
        if a.loops == 0 {
            line.push_str(" (never executed)");
        } else {
            line.push_str(" (actual ");
            if let Some((startup, total)) = a.times_ms {
                line.push_str(&format!("time={startup:.3}..{total:.3} "));
            }
            line.push_str(&format!("rows={:.2} loops={})", a.rows_per_loop(), a.loops));
        }
    }
    out.push(line);
    indent += 1;
    let pad = spaces(indent);
    if n.disabled {
        out.push(format!("{pad}Disabled: true"));
    }
    if let Some(cols) = &n.output {
        out.push(format!("{pad}Output: {}", cols.join(", ")));
        // VERBOSE: a join's inner side is unique only when it is (structured formats say
        // either).
        if n.inner_unique == Some(true) {
            out.push(format!("{pad}Inner Unique: true"));
        }
    }
    let executed = n.actual.is_some_and(|a| a.loops > 0);
    for d in &n.details {
        match d {
            Detail::Expr { label, text } => out.push(format!("{pad}{label}: {text}")),
            Detail::List { label, items } => {
                out.push(format!("{pad}{label}: {}", items.join(", ")))
            }
            Detail::Removed { label, rows } => {
                if executed && *rows > 0.0 {
                    out.push(format!("{pad}{label}: {rows:.0}"));
                }
            }
            Detail::Count { label, value } => out.push(format!("{pad}{label}: {value}")),
            Detail::HeapBlocks { exact, lossy } => {
                if let Some(parts) = positive_members(&[("exact", *exact), ("lossy", *lossy)]) {
                    out.push(format!("{pad}Heap Blocks:{parts}"));
                }
            }
            Detail::ReadStream(s) => read_stream(out, s, &pad),
            Detail::SortSpace { method, space, kb } => out.push(format!(
                "{pad}Sort Method: {method}  {}: {kb}kB",
                space.name()
            )),
            Detail::PlannedPartitions(n) => {
                if *n > 0 {
                    out.push(format!("{pad}Planned Partitions: {n}"))
                }
            }
            Detail::HashAggSpace {
                batches,
                memory_kb,
                disk_kb,
            } => {
                let disk = match *batches > 1 {
                    true => format!("  Disk Usage: {disk_kb}kB"),
                    false => String::new(),
                };
                out.push(format!(
                    "{pad}Batches: {batches}  Memory Usage: {memory_kb}kB{disk}"
                ))
            }
            Detail::HashSpace {
                buckets,
                batches,
                original_batches,
                memory_kb,
            } => out.push(match batches == original_batches {
                true => format!(
                    "{pad}Buckets: {buckets}  Batches: {batches}  Memory Usage: {memory_kb}kB"
                ),
                false => format!(
                    "{pad}Buckets: {buckets} (originally {buckets})  Batches: {batches} \
                     (originally {original_batches})  Memory Usage: {memory_kb}kB"
                ),
            }),
        }
    }
    if let Some(b) = &n.buffers {
        buffers(out, b, indent);
    }
    if let Some(l) = n.read_latency.filter(|l| l.reads > 0) {
        let ms = |us: u64| us as f64 / 1000.0;
        out.push(format!(
            "{pad}I/O Latency: read p50={:.3} p99={:.3} p99.9={:.3} max={:.3}",
            ms(l.p50_us),
            ms(l.p99_us),
            ms(l.p999_us),
            ms(l.max_us)
        ));
    }
    if let Some(w) = &n.wal {
        wal(out, w, indent);
    }
    for child in &n.children {
        match &child.node.subplan_name {
            Some(name) => {
                out.push(format!("{}{name}", spaces(indent)));
                node(out, &child.node, indent + 1);
            }
            None => node(out, &child.node, indent),
        }
    }
}

/// ` name=value` for each positive member, `None` when there is none.
fn positive_members(members: &[(&str, u64)]) -> Option<String> {
    let parts: String = members
        .iter()
        .filter(|(_, v)| *v > 0)
        .map(|(name, v)| format!(" {name}={v}"))
        .collect();
    (!parts.is_empty()).then_some(parts)
}

/// EXPLAIN (IO): `Prefetch: avg=… max=… capacity=…`, then, when the stream started any
/// read, `I/O: stalls=… size=… inprogress=…` (and iolab's ` gap=…` when it read gap blocks,
/// ` drops=…` when it dropped blocks from the page cache behind it).
fn read_stream(out: &mut Vec<String>, s: &ReadStreamUsage, pad: &str) {
    out.push(format!(
        "{pad}Prefetch: avg={:.3} max={} capacity={}",
        s.distance_avg, s.distance_max, s.capacity
    ));
    if s.reads > 0 {
        let extra = |key: &str, n: u64| match n {
            0 => String::new(),
            n => format!(" {key}={n}"),
        };
        out.push(format!(
            "{pad}I/O: stalls={} size={:.3} inprogress={:.3}{}{}",
            s.stalls,
            s.size_avg,
            s.inprogress_avg,
            extra("gap", s.gap_blocks),
            extra("drops", s.drops)
        ));
    }
}

/// `Buffers: shared hit=… read=… dirtied=… written=…, local hit=… …, temp read=…
/// written=…` and
/// `I/O Timings: shared wait=… read=… write=…, local …, temp read=… write=…`: each group
/// only when one of its members is positive, and each member likewise.
pub fn buffers(out: &mut Vec<String>, b: &Buffers, indent: usize) {
    let pad = spaces(indent);
    let counts = [
        (
            "shared",
            [
                b.shared_hit,
                b.shared_read,
                b.shared_dirtied,
                b.shared_written,
            ],
        ),
        (
            "local",
            [b.local_hit, b.local_read, b.local_dirtied, b.local_written],
        ),
        ("temp", [0, b.temp_read, 0, b.temp_written]),
    ];
    let groups: Vec<String> = counts
        .iter()
        .filter_map(|(group, [hit, read, dirtied, written])| {
            let parts = positive_members(&[
                ("hit", *hit),
                ("read", *read),
                ("dirtied", *dirtied),
                ("written", *written),
            ])?;
            Some(format!("{group}{parts}"))
        })
        .collect();
    if !groups.is_empty() {
        out.push(format!("{pad}Buffers: {}", groups.join(", ")));
    }
    let times = [
        (
            "shared",
            [b.shared_wait_ns, b.shared_read_ns, b.shared_write_ns],
        ),
        (
            "local",
            [b.local_wait_ns, b.local_read_ns, b.local_write_ns],
        ),
        ("temp", [0, b.temp_read_ns, b.temp_write_ns]),
    ];
    let groups: Vec<String> = times
        .iter()
        .filter(|(_, ns)| ns.iter().any(|&ns| ns > 0))
        .map(|(group, ns)| {
            let mut text = group.to_string();
            for (name, ns) in ["wait", "read", "write"].into_iter().zip(ns) {
                if *ns > 0 {
                    text.push_str(&format!(" {name}={:.3}", *ns as f64 / 1e6));
                }
            }
            text
        })
        .collect();
    if !groups.is_empty() {
        out.push(format!("{pad}I/O Timings: {}", groups.join(", ")));
    }
}

fn wal(out: &mut Vec<String>, w: &Wal, indent: usize) {
    if let Some(parts) = positive_members(&[
        ("records", w.records),
        ("fpi", w.fpi),
        ("bytes", w.bytes),
        ("buffers full", w.buffers_full),
    ]) {
        out.push(format!("{}WAL:{parts}", spaces(indent)));
    }
}
