//! What EXPLAIN prints, as data: a tree of PostgreSQL plan nodes and the lines around it.
//!
//! The mapping (`mapping.rs`) builds it from a DataFusion plan; the renderers (`text.rs`,
//! `structured.rs`) print it. Nothing here knows DataFusion, so renderers are tested on
//! hand-built trees.

use iolab_stats::BufferUsage;

/// One plan node as PostgreSQL's EXPLAIN shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanNode {
    /// `Node Type` of the structured formats: `Seq Scan`, `Aggregate`, `Hash Join`,
    /// `ModifyTable` …
    pub node_type: String,
    /// The name in the text header: `HashAggregate`, `Hash Left Join`, `Insert` …
    pub text_name: String,
    /// Aggregates: `Strategy` (`Plain`, `Hashed`, `Sorted`) and `Partial Mode` (`Simple`).
    pub strategy: Option<&'static str>,
    pub partial_mode: Option<&'static str>,
    /// A scalar subquery's plan: `InitPlan 1` (`Subplan Name`), printed as the label above it
    /// in text; its parent relationship is `InitPlan`.
    pub subplan_name: Option<String>,
    /// ModifyTable: `Operation` (`Insert`).
    pub operation: Option<&'static str>,
    /// Joins: `Join Type` (`Inner`, `Left`, `Right`, `Full`, `Semi`, `Anti`, `Right Semi` …).
    pub join_type: Option<&'static str>,
    /// Joins: `Inner Unique` (structured formats only).
    pub inner_unique: Option<bool>,
    /// The index an index scan reads (`Index Scan using i`, `Bitmap Index Scan on i`).
    pub index: Option<IndexTarget>,
    /// The relation a scan or modification works on.
    pub relation: Option<Relation>,
    /// Planner estimates (COSTS).
    pub costs: Option<Costs>,
    /// What happened (ANALYZE).
    pub actual: Option<Actual>,
    /// PostgreSQL 18's `Disabled`: the planner chose a path an `enable_*` setting disabled.
    pub disabled: bool,
    /// VERBOSE: the node's output columns.
    pub output: Option<Vec<String>>,
    /// Node-specific lines, in the order PostgreSQL prints them.
    pub details: Vec<Detail>,
    /// Buffer usage, including the children's (ANALYZE with BUFFERS).
    pub buffers: Option<Buffers>,
    /// iolab: the latency of the node's own reads (ANALYZE with BUFFERS and
    /// `track_io_timing`, on nodes that read).
    pub read_latency: Option<ReadLatency>,
    /// WAL usage (ANALYZE with WAL): the records the node's changes wrote.
    pub wal: Option<Wal>,
    pub children: Vec<Child>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Child {
    /// `Parent Relationship`: `Outer`, `Inner`, `Member` …
    pub relationship: &'static str,
    pub node: PlanNode,
}

/// `Index Scan using t_a_idx` (with a scan direction) or `Bitmap Index Scan on t_a_idx`
/// (without): `"Scan Direction": "Forward", "Index Name": "t_a_idx"`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IndexTarget {
    pub name: String,
    /// `Forward` for an Index Scan; `None` for a Bitmap Index Scan, which has none.
    pub scan_direction: Option<&'static str>,
}

/// `Seq Scan on t x` / `"Relation Name": "t", "Alias": "x"`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Relation {
    /// The key naming the object in structured formats (`Relation Name`); `None` for
    /// scans of something that has no name (a VALUES list).
    pub object_tag: Option<&'static str>,
    pub object_name: Option<String>,
    /// The schema, shown with VERBOSE.
    pub schema: Option<String>,
    /// The name the query uses for it.
    pub alias: String,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Costs {
    pub startup: f64,
    pub total: f64,
    pub rows: f64,
    pub width: i64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Actual {
    /// (startup, total) in milliseconds, per loop; `None` with TIMING OFF.
    pub times_ms: Option<(f64, f64)>,
    /// Rows over all loops.
    pub rows: f64,
    /// 0 = never executed.
    pub loops: u64,
}

impl Actual {
    /// Rows per loop, as printed.
    pub fn rows_per_loop(&self) -> f64 {
        if self.loops == 0 {
            0.0
        } else {
            self.rows / self.loops as f64
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Detail {
    /// An expression: `Filter: (a < 140)`, `Hash Cond: (t.a = u.a)`.
    Expr { label: &'static str, text: String },
    /// A list: `Sort Key: a DESC, b` (text) / `"Sort Key": ["a DESC", "b"]`.
    List {
        label: &'static str,
        items: Vec<String>,
    },
    /// An ANALYZE counter printed in text only when positive, always in structured
    /// formats, per loop with no decimals: `Rows Removed by Filter: 197200`.
    Removed { label: &'static str, rows: f64 },
    /// An ANALYZE counter printed in every format, zero or not: `Index Searches: 1`.
    Count { label: &'static str, value: u64 },
    /// `Heap Blocks: exact=… lossy=…` (text: positive parts only, no line when both are
    /// zero) / `"Exact Heap Blocks"`, `"Lossy Heap Blocks"`.
    HeapBlocks { exact: u64, lossy: u64 },
    /// EXPLAIN (IO): what the node's read stream did.
    ReadStream(ReadStreamUsage),
    /// How a sort ran and the most space it held: `Sort Method: quicksort  Memory: 25kB`,
    /// `top-N heapsort` (with a LIMIT), `external merge  Disk: 13832kB` (beyond
    /// `work_mem`) / `"Sort Method"`, `"Sort Space Used"`, `"Sort Space Type"`.
    SortSpace {
        method: &'static str,
        space: SortSpaceType,
        kb: u64,
    },
    /// With COSTS, the partitions a hash aggregation was planned to spill to: text only
    /// when positive, structured formats always (`"Planned Partitions"`). iolab plans none:
    /// DataFusion's aggregations spill when they meet their limit.
    PlannedPartitions(u64),
    /// A hash aggregation's batches (1 + the temporary files it wrote) and the most memory
    /// and disk it held: `Batches: 5  Memory Usage: 4145kB  Disk Usage: 9960kB` (disk only
    /// after more than one batch) / `"HashAgg Batches"`, `"Peak Memory Usage"`,
    /// `"Disk Usage"`.
    HashAggSpace {
        batches: u64,
        memory_kb: u64,
        disk_kb: u64,
    },
    /// A `Hash` node's table (explain/hash_table.rs): `Buckets: 1024  Batches: 1  Memory
    /// Usage: 44kB` / `"Hash Buckets"`, `"Original Hash Buckets"`, `"Hash Batches"`,
    /// `"Original Hash Batches"`, `"Peak Memory Usage"`. The original buckets equal the
    /// final ones (iolab's tables are sized once); the original batches are what the
    /// join's first split made (engine/src/exec/hash_join_batches.rs), 1 if none.
    HashSpace {
        buckets: u64,
        batches: u64,
        original_batches: u64,
        memory_kb: u64,
    },
}

/// Where a sort kept its rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortSpaceType {
    Memory,
    Disk,
}

impl SortSpaceType {
    pub fn name(self) -> &'static str {
        match self {
            SortSpaceType::Memory => "Memory",
            SortSpaceType::Disk => "Disk",
        }
    }
}

impl Detail {
    /// Does the line come after a scan's `Filter:` and `Rows Removed by Filter:`? The
    /// conditions and their recheck count come before it, the node's counters after it.
    pub fn follows_filter(&self) -> bool {
        matches!(
            self,
            Detail::Count { .. } | Detail::HeapBlocks { .. } | Detail::ReadStream(_)
        )
    }
}

/// EXPLAIN (IO), after PostgreSQL 19's option: a read stream's look-ahead and I/Os.
///
/// ```text
/// Prefetch: avg=12.345 max=16 capacity=128      "Average Prefetch Distance", "Max Prefetch Distance", "Prefetch Capacity"
/// I/O: stalls=3 size=15.983 inprogress=7.934    "I/O Stalls", "Average I/O Size", "Average I/Os In Progress"
///   … gap=120                                   iolab's "I/O Gap Blocks", when there were any
///   … drops=17                                  iolab's "I/O Drop-Behind Calls", likewise
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReadStreamUsage {
    /// Look-ahead distance in blocks, averaged over the reads started, and its maximum.
    pub distance_avg: f64,
    pub distance_max: u64,
    /// The most buffers the stream may pin (`max_pinned_buffers`).
    pub capacity: u64,
    /// Read operations started (the `I/O:` line is printed only when some were).
    pub reads: u64,
    /// Times the node waited for a read that had not finished.
    pub stalls: u64,
    /// Blocks per read, averaged.
    pub size_avg: f64,
    /// Reads in flight when one was started, averaged.
    pub inprogress_avg: f64,
    /// Blocks read only to join two reads (`read_stream_gap_limit`); printed when some were.
    pub gap_blocks: u64,
    /// Ranges dropped from the page cache behind the scan (`read_stream_drop_behind`);
    /// printed when some were.
    pub drops: u64,
}

/// iolab's `I/O Latency: read p50=… p99=… p99.9=… max=…`: submission to completion of a
/// node's reads, in microseconds (printed in milliseconds).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadLatency {
    /// Read operations the node issued; the text line is printed only when some were.
    pub reads: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub p999_us: u64,
    pub max_us: u64,
}

/// A node's buffer usage (PostgreSQL's `BufferUsage` plus iolab's wait time and I/O
/// count), and whether `track_io_timing` was on: structured formats print the time keys
/// only then.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Buffers {
    pub usage: BufferUsage,
    pub track_io_timing: bool,
}

impl std::ops::Deref for Buffers {
    type Target = BufferUsage;
    fn deref(&self) -> &BufferUsage {
        &self.usage
    }
}

impl std::ops::DerefMut for Buffers {
    fn deref_mut(&mut self) -> &mut BufferUsage {
        &mut self.usage
    }
}

impl Buffers {
    pub fn add(&mut self, o: &Buffers) {
        self.usage.add(&o.usage);
        self.track_io_timing |= o.track_io_timing;
    }

    pub fn has_counts(&self) -> bool {
        let u = &self.usage;
        [
            u.shared_hit,
            u.shared_read,
            u.shared_dirtied,
            u.shared_written,
            u.local_hit,
            u.local_read,
            u.local_dirtied,
            u.local_written,
            u.temp_read,
            u.temp_written,
        ]
        .iter()
        .any(|&n| n > 0)
    }

    pub fn has_timing(&self) -> bool {
        let u = &self.usage;
        [
            u.shared_read_ns,
            u.shared_write_ns,
            u.shared_wait_ns,
            u.local_read_ns,
            u.local_write_ns,
            u.local_wait_ns,
        ]
        .iter()
        .any(|&n| n > 0)
    }
}

/// `WAL: records=… fpi=… bytes=… buffers full=…`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Wal {
    pub records: u64,
    pub fpi: u64,
    pub bytes: u64,
    pub buffers_full: u64,
}

/// `Serialization: time=… ms  output=…kB  format=text`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Serialization {
    /// With TIMING only.
    pub time_ms: Option<f64>,
    pub bytes: u64,
    pub format: &'static str,
    /// With BUFFERS: what converting the rows read (nothing, for iolab's values).
    pub buffers: Option<Buffers>,
}

/// One statement's EXPLAIN output.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Explained {
    pub plan: PlanNode,
    /// SETTINGS: changed planner settings as (name, value), in the order they changed.
    pub settings: Option<Vec<(String, String)>>,
    /// BUFFERS: the planner's buffer usage.
    pub planning_buffers: Option<Buffers>,
    /// SUMMARY.
    pub planning_time_ms: Option<f64>,
    /// ANALYZE: structured formats print an (empty) `Triggers` list.
    pub triggers: bool,
    pub serialization: Option<Serialization>,
    /// SUMMARY with ANALYZE.
    pub execution_time_ms: Option<f64>,
}
