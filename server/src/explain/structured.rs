//! EXPLAIN's structured formats — JSON, YAML and XML — byte for byte as PostgreSQL 18
//! prints them.
//!
//! PostgreSQL writes all three through one small set of calls (`explain_format.c`):
//! open a group (an object or a list, with or without a label), write a property, write a
//! list property, close the group. [`Emitter`] is those calls with the same whitespace
//! rules; [`render`] walks an [`Explained`] making the calls in `ExplainNode`'s order.
//! Unlike the text format, structured formats print every counter, zero or not.
//!
//! iolab's keys beyond PostgreSQL 18 (docs/explain.md): `Shared I/O Wait Time` before
//! `Shared I/O Read Time`; after the I/O times of a node that reads, `I/O Read Latency p50`,
//! `… p99`, `… p99.9`, `… Max` (ms); with EXPLAIN (IO), after the node's own counters,
//! `Average Prefetch Distance`, `Max Prefetch Distance`, `Prefetch Capacity`, `I/O Stalls`,
//! `Average I/O Size`, `Average I/Os In Progress`, and iolab's `I/O Gap Blocks` (blocks read
//! only to join two reads, `read_stream_gap_limit`) and `I/O Drop-Behind Calls`
//! (`read_stream_drop_behind`).

use crate::explain::node::{Buffers, Detail, Explained, PlanNode};
use crate::explain::options::Format;
use crate::explain::text::kilobytes;

/// The whole document (one row of the result).
pub fn render(e: &Explained, format: Format) -> String {
    let mut em = Emitter::new(format);
    em.begin_output();
    em.open_group("Query", None, true);
    plan(&mut em, &e.plan, None);
    if let Some(settings) = &e.settings {
        em.open_group("Settings", Some("Settings"), true);
        for (name, value) in settings {
            em.text(name, value);
        }
        em.close_group("Settings", Some("Settings"), true);
    }
    if let Some(b) = &e.planning_buffers {
        em.open_group("Planning", Some("Planning"), true);
        buffers(&mut em, b);
        em.close_group("Planning", Some("Planning"), true);
    }
    if let Some(ms) = e.planning_time_ms {
        em.float("Planning Time", ms, 3);
    }
    if e.triggers {
        em.open_group("Triggers", Some("Triggers"), false);
        em.close_group("Triggers", Some("Triggers"), false);
    }
    if let Some(s) = &e.serialization {
        em.open_group("Serialization", Some("Serialization"), true);
        if let Some(ms) = s.time_ms {
            em.float("Time", ms, 3);
        }
        em.number("Output Volume", &kilobytes(s.bytes).to_string());
        em.text("Format", s.format);
        if let Some(b) = &s.buffers {
            buffers(&mut em, b);
        }
        em.close_group("Serialization", Some("Serialization"), true);
    }
    if let Some(ms) = e.execution_time_ms {
        em.float("Execution Time", ms, 3);
    }
    em.close_group("Query", None, true);
    em.end_output();
    em.out
}

fn plan(em: &mut Emitter, n: &PlanNode, relationship: Option<&str>) {
    let label = if relationship.is_some() {
        None
    } else {
        Some("Plan")
    };
    em.open_group("Plan", label, true);
    em.text("Node Type", &n.node_type);
    if let Some(s) = n.strategy {
        em.text("Strategy", s);
    }
    if let Some(p) = n.partial_mode {
        em.text("Partial Mode", p);
    }
    if let Some(op) = n.operation {
        em.text("Operation", op);
    }
    if let Some(r) = relationship {
        em.text("Parent Relationship", r);
    }
    if let Some(name) = &n.subplan_name {
        em.text("Subplan Name", name);
    }
    em.boolean("Parallel Aware", false);
    em.boolean("Async Capable", false);
    if let Some(index) = &n.index {
        if let Some(direction) = index.scan_direction {
            em.text("Scan Direction", direction);
        }
        em.text("Index Name", &index.name);
    }
    if let Some(rel) = &n.relation {
        if let (Some(tag), Some(name)) = (rel.object_tag, &rel.object_name) {
            em.text(tag, name);
        }
        if let Some(schema) = &rel.schema {
            em.text("Schema", schema);
        }
        em.text("Alias", &rel.alias);
    }
    if let Some(j) = n.join_type {
        em.text("Join Type", j);
    }
    if let Some(c) = &n.costs {
        em.float("Startup Cost", c.startup, 2);
        em.float("Total Cost", c.total, 2);
        em.float("Plan Rows", c.rows, 0);
        em.number("Plan Width", &c.width.to_string());
    }
    if let Some(a) = &n.actual {
        if let Some((startup, total)) = a.times_ms {
            em.float("Actual Startup Time", startup, 3);
            em.float("Actual Total Time", total, 3);
        }
        em.float("Actual Rows", a.rows_per_loop(), 2);
        em.number("Actual Loops", &a.loops.to_string());
    }
    em.boolean("Disabled", n.disabled);
    if let Some(cols) = &n.output {
        em.list("Output", cols);
    }
    if let Some(u) = n.inner_unique {
        em.boolean("Inner Unique", u);
    }
    for d in &n.details {
        match d {
            Detail::Expr { label, text } => em.text(label, text),
            Detail::List { label, items } => em.list(label, items),
            Detail::Removed { label, rows } => {
                if n.actual.is_some_and(|a| a.loops > 0) {
                    em.float(label, *rows, 0);
                }
            }
            Detail::Count { label, value } => em.number(label, &value.to_string()),
            Detail::HeapBlocks { exact, lossy } => {
                em.number("Exact Heap Blocks", &exact.to_string());
                em.number("Lossy Heap Blocks", &lossy.to_string());
            }
            Detail::ReadStream(s) => {
                em.float("Average Prefetch Distance", s.distance_avg, 3);
                em.number("Max Prefetch Distance", &s.distance_max.to_string());
                em.number("Prefetch Capacity", &s.capacity.to_string());
                em.number("I/O Stalls", &s.stalls.to_string());
                em.float("Average I/O Size", s.size_avg, 3);
                em.float("Average I/Os In Progress", s.inprogress_avg, 3);
                em.number("I/O Gap Blocks", &s.gap_blocks.to_string());
                em.number("I/O Drop-Behind Calls", &s.drops.to_string());
            }
            Detail::SortSpace { method, space, kb } => {
                em.text("Sort Method", method);
                em.number("Sort Space Used", &kb.to_string());
                em.text("Sort Space Type", space.name());
            }
            Detail::PlannedPartitions(n) => em.number("Planned Partitions", &n.to_string()),
            Detail::HashAggSpace {
                batches,
                memory_kb,
                disk_kb,
            } => {
                em.number("HashAgg Batches", &batches.to_string());
                em.number("Peak Memory Usage", &memory_kb.to_string());
                em.number("Disk Usage", &disk_kb.to_string());
            }
            Detail::HashSpace {
                buckets,
                batches,
                original_batches,
                memory_kb,
            } => {
                em.number("Hash Buckets", &buckets.to_string());
                em.number("Original Hash Buckets", &buckets.to_string());
                em.number("Hash Batches", &batches.to_string());
                em.number("Original Hash Batches", &original_batches.to_string());
                em.number("Peak Memory Usage", &memory_kb.to_string());
            }
        }
    }
    if let Some(b) = &n.buffers {
        buffers(em, b);
    }
    if let Some(l) = &n.read_latency {
        for (key, us) in [
            ("I/O Read Latency p50", l.p50_us),
            ("I/O Read Latency p99", l.p99_us),
            ("I/O Read Latency p99.9", l.p999_us),
            ("I/O Read Latency Max", l.max_us),
        ] {
            em.float(key, us as f64 / 1000.0, 3);
        }
    }
    if let Some(w) = &n.wal {
        em.number("WAL Records", &w.records.to_string());
        em.number("WAL FPI", &w.fpi.to_string());
        em.number("WAL Bytes", &w.bytes.to_string());
        em.number("WAL Buffers Full", &w.buffers_full.to_string());
    }
    if !n.children.is_empty() {
        em.open_group("Plans", Some("Plans"), false);
        for c in &n.children {
            plan(em, &c.node, Some(c.relationship));
        }
        em.close_group("Plans", Some("Plans"), false);
    }
    em.close_group("Plan", label, true);
}

/// PostgreSQL's buffer keys (all of them), then the I/O times when `track_io_timing` is
/// on, with iolab's `Shared I/O Wait Time` and `Local I/O Wait Time` before the read
/// times.
fn buffers(em: &mut Emitter, b: &Buffers) {
    for (key, value) in [
        ("Shared Hit Blocks", b.shared_hit),
        ("Shared Read Blocks", b.shared_read),
        ("Shared Dirtied Blocks", b.shared_dirtied),
        ("Shared Written Blocks", b.shared_written),
        ("Local Hit Blocks", b.local_hit),
        ("Local Read Blocks", b.local_read),
        ("Local Dirtied Blocks", b.local_dirtied),
        ("Local Written Blocks", b.local_written),
        ("Temp Read Blocks", b.temp_read),
        ("Temp Written Blocks", b.temp_written),
    ] {
        em.number(key, &value.to_string());
    }
    if b.track_io_timing {
        for (key, ns) in [
            ("Shared I/O Wait Time", b.shared_wait_ns),
            ("Shared I/O Read Time", b.shared_read_ns),
            ("Shared I/O Write Time", b.shared_write_ns),
            ("Local I/O Wait Time", b.local_wait_ns),
            ("Local I/O Read Time", b.local_read_ns),
            ("Local I/O Write Time", b.local_write_ns),
            ("Temp I/O Read Time", b.temp_read_ns),
            ("Temp I/O Write Time", b.temp_write_ns),
        ] {
            em.float(key, ns as f64 / 1e6, 3);
        }
    }
}

/// `explain_format.c`'s group and property calls for the three structured formats.
pub struct Emitter {
    format: Format,
    out: String,
    indent: usize,
    /// Per open group: JSON — has something been written in it yet; YAML — does the next
    /// line start a new line (a labelled group) or continue `- ` (a list member).
    stack: Vec<bool>,
}

impl Emitter {
    pub fn new(format: Format) -> Emitter {
        assert!(
            format != Format::Text,
            "the text format has its own renderer"
        );
        Emitter {
            format,
            out: String::new(),
            indent: 0,
            stack: Vec::new(),
        }
    }

    fn spaces(&mut self, n: usize) {
        self.out.extend(std::iter::repeat_n(' ', n));
    }

    pub fn begin_output(&mut self) {
        match self.format {
            Format::Xml => {
                self.out
                    .push_str("<explain xmlns=\"http://www.postgresql.org/2009/explain\">\n");
                self.indent += 1;
            }
            Format::Json => {
                self.out.push('[');
                self.stack.push(false);
                self.indent += 1;
            }
            Format::Yaml => self.stack.push(false),
            Format::Text => unreachable!(),
        }
    }

    pub fn end_output(&mut self) {
        match self.format {
            Format::Xml => {
                self.indent -= 1;
                self.out.push_str("</explain>");
            }
            Format::Json => {
                self.indent -= 1;
                self.out.push_str("\n]");
                self.stack.pop();
            }
            Format::Yaml => {
                self.stack.pop();
            }
            Format::Text => unreachable!(),
        }
    }

    /// Opens an object (`labeled`) or a list; `label` names it inside its parent.
    pub fn open_group(&mut self, objtype: &str, label: Option<&str>, labeled: bool) {
        match self.format {
            Format::Xml => {
                self.xml_tag(objtype, XmlTag::Opening);
                self.indent += 1;
            }
            Format::Json => {
                self.json_line_ending();
                self.spaces(2 * self.indent);
                if let Some(l) = label {
                    escape_json(&mut self.out, l);
                    self.out.push_str(": ");
                }
                self.out.push(if labeled { '{' } else { '[' });
                self.stack.push(false);
                self.indent += 1;
            }
            Format::Yaml => {
                self.yaml_line_starting();
                match label {
                    Some(l) => {
                        self.out.push_str(l);
                        self.out.push_str(": ");
                        self.stack.push(true);
                    }
                    None => {
                        self.out.push_str("- ");
                        self.stack.push(false);
                    }
                }
                self.indent += 1;
            }
            Format::Text => unreachable!(),
        }
    }

    pub fn close_group(&mut self, objtype: &str, _label: Option<&str>, labeled: bool) {
        match self.format {
            Format::Xml => {
                self.indent -= 1;
                self.xml_tag(objtype, XmlTag::Closing);
            }
            Format::Json => {
                self.indent -= 1;
                self.out.push('\n');
                self.spaces(2 * self.indent);
                self.out.push(if labeled { '}' } else { ']' });
                self.stack.pop();
            }
            Format::Yaml => {
                self.indent -= 1;
                self.stack.pop();
            }
            Format::Text => unreachable!(),
        }
    }

    /// `ExplainProperty`: `numeric` values are written bare, others quoted.
    fn property(&mut self, label: &str, value: &str, numeric: bool) {
        match self.format {
            Format::Xml => {
                self.spaces(self.indent * 2);
                self.xml_tag(label, XmlTag::OpeningInline);
                escape_xml(&mut self.out, value);
                self.xml_tag(label, XmlTag::ClosingInline);
                self.out.push('\n');
            }
            Format::Json => {
                self.json_line_ending();
                self.spaces(self.indent * 2);
                escape_json(&mut self.out, label);
                self.out.push_str(": ");
                if numeric {
                    self.out.push_str(value);
                } else {
                    escape_json(&mut self.out, value);
                }
            }
            Format::Yaml => {
                self.yaml_line_starting();
                self.out.push_str(label);
                self.out.push_str(": ");
                if numeric {
                    self.out.push_str(value);
                } else {
                    escape_json(&mut self.out, value); // PostgreSQL's escape_yaml
                }
            }
            Format::Text => unreachable!(),
        }
    }

    pub fn text(&mut self, label: &str, value: &str) {
        self.property(label, value, false);
    }

    pub fn number(&mut self, label: &str, value: &str) {
        self.property(label, value, true);
    }

    pub fn float(&mut self, label: &str, value: f64, digits: usize) {
        self.property(label, &format!("{value:.digits$}"), true);
    }

    pub fn boolean(&mut self, label: &str, value: bool) {
        self.property(label, if value { "true" } else { "false" }, true);
    }

    /// `ExplainPropertyList`.
    pub fn list(&mut self, label: &str, items: &[String]) {
        match self.format {
            Format::Xml => {
                self.xml_tag(label, XmlTag::Opening);
                for item in items {
                    self.spaces(self.indent * 2 + 2);
                    self.out.push_str("<Item>");
                    escape_xml(&mut self.out, item);
                    self.out.push_str("</Item>\n");
                }
                self.xml_tag(label, XmlTag::Closing);
            }
            Format::Json => {
                self.json_line_ending();
                self.spaces(self.indent * 2);
                escape_json(&mut self.out, label);
                self.out.push_str(": [");
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    escape_json(&mut self.out, item);
                }
                self.out.push(']');
            }
            Format::Yaml => {
                self.yaml_line_starting();
                self.out.push_str(label);
                self.out.push_str(": ");
                for item in items {
                    self.out.push('\n');
                    self.spaces(self.indent * 2 + 2);
                    self.out.push_str("- ");
                    escape_json(&mut self.out, item);
                }
            }
            Format::Text => unreachable!(),
        }
    }

    /// A comma after the previous member of the group (if any), then a new line.
    fn json_line_ending(&mut self) {
        let top = self.stack.last_mut().expect("inside a group");
        if *top {
            self.out.push(',');
        } else {
            *top = true;
        }
        self.out.push('\n');
    }

    /// The first member of a list item continues its `- ` line; the others start a line.
    fn yaml_line_starting(&mut self) {
        let top = self.stack.last_mut().expect("inside a group");
        if !*top {
            *top = true;
        } else {
            self.out.push('\n');
            self.spaces(self.indent * 2);
        }
    }

    fn xml_tag(&mut self, name: &str, kind: XmlTag) {
        let own_line = matches!(kind, XmlTag::Opening | XmlTag::Closing);
        if own_line {
            self.spaces(2 * self.indent);
        }
        self.out.push('<');
        if matches!(kind, XmlTag::Closing | XmlTag::ClosingInline) {
            self.out.push('/');
        }
        // Characters not valid in a tag name (spaces, '/') become '-'.
        self.out.extend(name.chars().map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '-'
            }
        }));
        self.out.push('>');
        if own_line {
            self.out.push('\n');
        }
    }
}

#[derive(Clone, Copy)]
enum XmlTag {
    Opening,
    Closing,
    OpeningInline,
    ClosingInline,
}

/// PostgreSQL's `escape_json`.
fn escape_json(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// PostgreSQL's `escape_xml`.
fn escape_xml(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => out.push_str("&#x0d;"),
            c => out.push(c),
        }
    }
}
