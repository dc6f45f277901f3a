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
//! Counters print only when positive (`Buffers:` and `I/O Timings:` lines disappear when
//! all their members are zero); iolab adds `wait=` (time spent issuing reads) before
//! `read=` in `I/O Timings:`.

use iolab_settings::quote_identifier;

use crate::explain::node::{Buffers, Detail, Explained, PlanNode, Wal};

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
    if let Some(cols) = &n.output {
        out.push(format!("{pad}Output: {}", cols.join(", ")));
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
        }
    }
    if let Some(b) = &n.buffers {
        buffers(out, b, indent);
    }
    if let Some(w) = &n.wal {
        wal(out, w, indent);
    }
    for child in &n.children {
        node(out, &child.node, indent);
    }
}

/// `Buffers: shared hit=… read=… dirtied=… written=…` and
/// `I/O Timings: shared wait=… read=… write=…`, each only when something is positive.
pub fn buffers(out: &mut Vec<String>, b: &Buffers, indent: usize) {
    let pad = spaces(indent);
    if b.has_counts() {
        let mut line = format!("{pad}Buffers: shared");
        for (name, value) in [
            ("hit", b.shared_hit),
            ("read", b.shared_read),
            ("dirtied", b.shared_dirtied),
            ("written", b.shared_written),
        ] {
            if value > 0 {
                line.push_str(&format!(" {name}={value}"));
            }
        }
        out.push(line);
    }
    if b.has_timing() {
        let mut line = format!("{pad}I/O Timings: shared");
        for (name, ns) in [
            ("wait", b.shared_wait_ns),
            ("read", b.shared_read_ns),
            ("write", b.shared_write_ns),
        ] {
            if ns > 0 {
                line.push_str(&format!(" {name}={:.3}", ns as f64 / 1e6));
            }
        }
        out.push(line);
    }
}

fn wal(out: &mut Vec<String>, w: &Wal, indent: usize) {
    if w.records + w.fpi + w.bytes + w.buffers_full == 0 {
        return;
    }
    let mut line = format!("{}WAL:", spaces(indent));
    for (name, value) in [
        ("records", w.records),
        ("fpi", w.fpi),
        ("bytes", w.bytes),
        ("buffers full", w.buffers_full),
    ] {
        if value > 0 {
            line.push_str(&format!(" {name}={value}"));
        }
    }
    out.push(line);
}
