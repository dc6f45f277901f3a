//! Renderer tests on hand-built trees, against PostgreSQL 18's own output.
//!
//! The expected texts are PostgreSQL 18.4's, byte for byte: the text-format ones from
//! `shared/reference/pg18-captures` (ex2.out), the structured ones (`testdata/`) from
//! `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT …) SELECT
//! count(*) FROM t WHERE a < 3` and `EXPLAIN (SETTINGS, FORMAT …, COSTS OFF) SELECT 1`
//! on a 200000-row `t` with `track_io_timing = on`.

use super::node::*;
use super::options::Format;
use super::{structured, text};
use iolab_stats::BufferUsage;

fn seq_scan_t() -> PlanNode {
    PlanNode {
        node_type: "Seq Scan".into(),
        text_name: "Seq Scan".into(),
        relation: Some(Relation {
            object_tag: Some("Relation Name"),
            object_name: Some("t".into()),
            schema: None,
            alias: "t".into(),
        }),
        ..Default::default()
    }
}

fn aggregate(child: PlanNode) -> PlanNode {
    PlanNode {
        node_type: "Aggregate".into(),
        text_name: "Aggregate".into(),
        strategy: Some("Plain"),
        partial_mode: Some("Simple"),
        children: vec![Child {
            relationship: "Outer",
            node: child,
        }],
        ..Default::default()
    }
}

fn lines(s: &str) -> Vec<String> {
    s.lines().map(str::to_string).collect()
}

/// ex2.out: `EXPLAIN ANALYZE SELECT count(*) FROM t WHERE filler > 'fffffff'`, cold.
#[test]
fn text_aggregate_over_filtered_seq_scan() {
    let buffers = Buffers {
        usage: BufferUsage {
            shared_read: 1667,
            shared_read_ns: 444_000,
            ..Default::default()
        },
        track_io_timing: true,
    };
    let mut scan = seq_scan_t();
    scan.costs = Some(Costs {
        startup: 0.0,
        total: 4167.0,
        rows: 20.0,
        width: 0,
    });
    scan.actual = Some(Actual {
        times_ms: Some((21.196, 21.196)),
        rows: 0.0,
        loops: 1,
    });
    scan.details = vec![
        Detail::Expr {
            label: "Filter",
            text: "(filler > 'fffffff'::text)".into(),
        },
        Detail::Removed {
            label: "Rows Removed by Filter",
            rows: 200000.0,
        },
    ];
    scan.buffers = Some(buffers);
    let mut agg = aggregate(scan);
    agg.costs = Some(Costs {
        startup: 4167.05,
        total: 4167.06,
        rows: 1.0,
        width: 8,
    });
    agg.actual = Some(Actual {
        times_ms: Some((21.2, 21.201)),
        rows: 1.0,
        loops: 1,
    });
    agg.buffers = Some(buffers);
    let e = Explained {
        plan: agg,
        planning_buffers: Some(Buffers {
            usage: BufferUsage {
                shared_hit: 91,
                ..Default::default()
            },
            ..Default::default()
        }),
        planning_time_ms: Some(0.372),
        triggers: true,
        execution_time_ms: Some(21.226),
        ..Default::default()
    };
    let expected = "\
Aggregate  (cost=4167.05..4167.06 rows=1 width=8) (actual time=21.200..21.201 rows=1.00 loops=1)
  Buffers: shared read=1667
  I/O Timings: shared read=0.444
  ->  Seq Scan on t  (cost=0.00..4167.00 rows=20 width=0) (actual time=21.196..21.196 rows=0.00 loops=1)
        Filter: (filler > 'fffffff'::text)
        Rows Removed by Filter: 200000
        Buffers: shared read=1667
        I/O Timings: shared read=0.444
Planning:
  Buffers: shared hit=91
Planning Time: 0.372 ms
Execution Time: 21.226 ms";
    assert_eq!(text::render(&e), lines(expected));
}

/// ex2.out: TIMING OFF, SUMMARY OFF, BUFFERS OFF; and a filter that removed nothing.
#[test]
fn text_without_timing_or_summary() {
    let mut scan = seq_scan_t();
    scan.actual = Some(Actual {
        times_ms: None,
        rows: 1.0,
        loops: 1,
    });
    scan.details = vec![
        Detail::Expr {
            label: "Filter",
            text: "(filler > 'fffff'::text)".into(),
        },
        Detail::Removed {
            label: "Rows Removed by Filter",
            rows: 199999.0,
        },
    ];
    let e = Explained {
        plan: scan.clone(),
        ..Default::default()
    };
    let expected = "\
Seq Scan on t (actual rows=1.00 loops=1)
  Filter: (filler > 'fffff'::text)
  Rows Removed by Filter: 199999";
    assert_eq!(text::render(&e), lines(expected));

    scan.details[1] = Detail::Removed {
        label: "Rows Removed by Filter",
        rows: 0.0,
    };
    scan.actual = Some(Actual {
        times_ms: None,
        rows: 0.0,
        loops: 0,
    });
    let e = Explained {
        plan: scan,
        ..Default::default()
    };
    assert_eq!(
        text::render(&e),
        lines("Seq Scan on t (never executed)\n  Filter: (filler > 'fffff'::text)")
    );
}

/// Deeper nesting (`6d−4` / `6d+2` spaces), aliases, VERBOSE output, the footer lines.
#[test]
fn text_nesting_and_footer() {
    let mut u = seq_scan_t();
    u.relation = Some(Relation {
        object_tag: Some("Relation Name"),
        object_name: Some("u".into()),
        schema: Some("public".into()),
        alias: "x".into(),
    });
    u.output = Some(vec!["x.a".into(), "x.b".into()]);
    let hash = PlanNode {
        node_type: "Hash".into(),
        text_name: "Hash".into(),
        children: vec![Child {
            relationship: "Outer",
            node: u,
        }],
        ..Default::default()
    };
    let join = PlanNode {
        node_type: "Hash Join".into(),
        text_name: "Hash Left Join".into(),
        join_type: Some("Left"),
        details: vec![Detail::Expr {
            label: "Hash Cond",
            text: "(t.a = x.a)".into(),
        }],
        children: vec![
            Child {
                relationship: "Outer",
                node: seq_scan_t(),
            },
            Child {
                relationship: "Inner",
                node: hash,
            },
        ],
        ..Default::default()
    };
    let sort = PlanNode {
        node_type: "Sort".into(),
        text_name: "Sort".into(),
        details: vec![Detail::List {
            label: "Sort Key",
            items: vec!["t.a DESC".into(), "x.b".into()],
        }],
        children: vec![Child {
            relationship: "Outer",
            node: join,
        }],
        ..Default::default()
    };
    let e = Explained {
        plan: sort,
        settings: Some(vec![
            ("work_mem".into(), "8MB".into()),
            ("effective_io_concurrency".into(), "32".into()),
        ]),
        planning_time_ms: Some(0.118),
        serialization: Some(Serialization {
            time_ms: Some(0.004),
            bytes: 700,
            format: "text",
            buffers: None,
        }),
        execution_time_ms: Some(0.025),
        ..Default::default()
    };
    let expected = "\
Sort
  Sort Key: t.a DESC, x.b
  ->  Hash Left Join
        Hash Cond: (t.a = x.a)
        ->  Seq Scan on t
        ->  Hash
              ->  Seq Scan on public.u x
                    Output: x.a, x.b
Settings: work_mem = '8MB', effective_io_concurrency = '32'
Planning Time: 0.118 ms
Serialization: time=0.004 ms  output=1kB  format=text
Execution Time: 0.025 ms";
    assert_eq!(text::render(&e), lines(expected));
}

/// iolab's wait time: `wait=` before `read=`, and its own JSON key.
#[test]
fn wait_time_is_iolab_extension() {
    let mut scan = seq_scan_t();
    scan.actual = Some(Actual {
        times_ms: None,
        rows: 5.0,
        loops: 1,
    });
    scan.buffers = Some(Buffers {
        usage: BufferUsage {
            shared_hit: 3,
            shared_read: 10,
            shared_dirtied: 2,
            shared_wait_ns: 123_456,
            shared_read_ns: 2_000_000,
            ..Default::default()
        },
        track_io_timing: true,
    });
    let e = Explained {
        plan: scan,
        ..Default::default()
    };
    assert_eq!(
        text::render(&e),
        lines(
            "Seq Scan on t (actual rows=5.00 loops=1)
  Buffers: shared hit=3 read=10 dirtied=2
  I/O Timings: shared wait=0.123 read=2.000"
        )
    );
    let json = structured::render(&e, Format::Json);
    assert!(
        json.contains("\"Shared I/O Wait Time\": 0.123,\n      \"Shared I/O Read Time\": 2.000,")
    );
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(parsed[0]["Plan"]["Shared Dirtied Blocks"], 2);
}

/// `count(*)` over a filtered scan, ANALYZE with BUFFERS, in all three structured formats.
fn aggregate_explained(planning_hits: u64) -> Explained {
    let io = Buffers {
        usage: BufferUsage {
            shared_hit: 1667,
            ..Default::default()
        },
        track_io_timing: true,
    };
    let mut scan = seq_scan_t();
    scan.actual = Some(Actual {
        times_ms: None,
        rows: 60.0,
        loops: 1,
    });
    scan.details = vec![
        Detail::Expr {
            label: "Filter",
            text: "(a < 3)".into(),
        },
        Detail::Removed {
            label: "Rows Removed by Filter",
            rows: 199940.0,
        },
    ];
    scan.buffers = Some(io);
    let mut agg = aggregate(scan);
    agg.actual = Some(Actual {
        times_ms: None,
        rows: 1.0,
        loops: 1,
    });
    agg.buffers = Some(io);
    Explained {
        plan: agg,
        planning_buffers: Some(Buffers {
            usage: BufferUsage {
                shared_hit: planning_hits,
                ..Default::default()
            },
            track_io_timing: true,
        }),
        triggers: true,
        ..Default::default()
    }
}

/// The iolab-only keys (shared and local wait time) are left out when comparing with
/// PostgreSQL.
fn without_wait_key(s: &str) -> String {
    s.lines()
        .filter(|l| !l.contains("I/O Wait Time") && !l.contains("-I-O-Wait-Time"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn json_matches_postgres() {
    let out = structured::render(&aggregate_explained(4), Format::Json);
    assert_eq!(
        without_wait_key(&out),
        include_str!("testdata/aggregate_seqscan.json").trim_end()
    );
    assert!(out.contains("\"Shared I/O Wait Time\": 0.000,"));
    assert!(out.contains("\"Local I/O Wait Time\": 0.000,"));
}

#[test]
fn yaml_matches_postgres() {
    let out = structured::render(&aggregate_explained(0), Format::Yaml);
    assert_eq!(
        without_wait_key(&out),
        include_str!("testdata/aggregate_seqscan.yaml").trim_end_matches('\n')
    );
}

#[test]
fn xml_matches_postgres() {
    let out = structured::render(&aggregate_explained(0), Format::Xml);
    assert_eq!(
        without_wait_key(&out),
        include_str!("testdata/aggregate_seqscan.xml").trim_end()
    );
}

#[test]
fn empty_settings_in_every_format() {
    let e = Explained {
        plan: PlanNode {
            node_type: "Result".into(),
            text_name: "Result".into(),
            ..Default::default()
        },
        settings: Some(vec![]),
        ..Default::default()
    };
    assert_eq!(
        structured::render(&e, Format::Json),
        include_str!("testdata/settings_empty.json").trim_end()
    );
    assert_eq!(
        structured::render(&e, Format::Yaml),
        include_str!("testdata/settings_empty.yaml").trim_end_matches('\n')
    );
    assert_eq!(
        structured::render(&e, Format::Xml),
        include_str!("testdata/settings_empty.xml").trim_end()
    );
    // Text prints no Settings line when nothing was changed.
    assert_eq!(text::render(&e), lines("Result"));
}

/// SERIALIZE with TIMING OFF; buffer keys without I/O times when track_io_timing is off.
#[test]
fn serialization_group() {
    let zero = Buffers::default();
    let mut result = PlanNode {
        node_type: "Result".into(),
        text_name: "Result".into(),
        actual: Some(Actual {
            times_ms: None,
            rows: 1.0,
            loops: 1,
        }),
        buffers: Some(zero),
        ..Default::default()
    };
    result.costs = None;
    let e = Explained {
        plan: result,
        planning_buffers: Some(zero),
        triggers: true,
        serialization: Some(Serialization {
            time_ms: None,
            bytes: 14,
            format: "text",
            buffers: Some(zero),
        }),
        ..Default::default()
    };
    assert_eq!(
        structured::render(&e, Format::Json),
        include_str!("testdata/result_serialize.json").trim_end()
    );
    assert_eq!(
        text::render(&e),
        lines("Result (actual rows=1.00 loops=1)\nSerialization: output=1kB  format=text")
    );
}

/// `Bitmap Heap Scan on t` over `Bitmap Index Scan on t_a_idx`, as final_capture.out's
/// cold run at effective_io_concurrency 256 ([C] text, [D] JSON).
fn bitmap_heap_scan_explained() -> Explained {
    let heap_io = BufferUsage {
        shared_read: 1429,
        shared_read_ns: 16_617_000,
        io_reads: 1429,
        ..Default::default()
    };
    let index_io = BufferUsage {
        shared_hit: 7,
        ..Default::default()
    };
    let index = PlanNode {
        node_type: "Bitmap Index Scan".into(),
        text_name: "Bitmap Index Scan".into(),
        index: Some(IndexTarget {
            name: "t_a_idx".into(),
            scan_direction: None,
        }),
        actual: Some(Actual {
            times_ms: Some((0.276, 0.276)),
            rows: 5534.0,
            loops: 1,
        }),
        details: vec![
            Detail::Expr {
                label: "Index Cond",
                text: "(a < 140)".into(),
            },
            Detail::Count {
                label: "Index Searches",
                value: 1,
            },
        ],
        buffers: Some(Buffers {
            usage: index_io,
            track_io_timing: true,
        }),
        // The index was cached: no reads, so no latency line in text.
        read_latency: Some(ReadLatency::default()),
        ..Default::default()
    };
    let mut heap = seq_scan_t();
    heap.node_type = "Bitmap Heap Scan".into();
    heap.text_name = "Bitmap Heap Scan".into();
    heap.actual = Some(Actual {
        times_ms: Some((22.444, 22.446)),
        rows: 0.0,
        loops: 1,
    });
    heap.details = vec![
        Detail::Expr {
            label: "Recheck Cond",
            text: "(a < 140)".into(),
        },
        Detail::Removed {
            label: "Rows Removed by Index Recheck",
            rows: 0.0,
        },
        Detail::Expr {
            label: "Filter",
            text: "(filler > 'fffffff'::text)".into(),
        },
        Detail::Removed {
            label: "Rows Removed by Filter",
            rows: 2767.0,
        },
        Detail::HeapBlocks {
            exact: 1429,
            lossy: 0,
        },
    ];
    let mut inclusive = heap_io;
    inclusive.add(&index_io);
    heap.buffers = Some(Buffers {
        usage: inclusive,
        track_io_timing: true,
    });
    heap.read_latency = Some(ReadLatency {
        reads: 1429,
        p50_us: 81,
        p99_us: 412,
        p999_us: 980,
        max_us: 1113,
    });
    heap.children = vec![Child {
        relationship: "Outer",
        node: index,
    }];
    Explained {
        plan: heap,
        settings: Some(vec![
            ("max_parallel_workers_per_gather".into(), "0".into()),
            ("effective_io_concurrency".into(), "256".into()),
        ]),
        planning_buffers: Some(Buffers {
            track_io_timing: true,
            ..Default::default()
        }),
        planning_time_ms: Some(0.043),
        triggers: true,
        execution_time_ms: Some(22.474),
        ..Default::default()
    }
}

/// iolab's keys are left out when comparing with PostgreSQL.
fn without_iolab_keys(s: &str) -> String {
    let kept: Vec<&str> = s
        .lines()
        .filter(|l| !l.contains("Wait Time") && !l.contains("Latency"))
        .collect();
    // A key that now ends its object loses its comma.
    let mut out: Vec<String> = Vec::new();
    for (i, line) in kept.iter().enumerate() {
        let closes = kept
            .get(i + 1)
            .is_some_and(|n| n.trim_start().starts_with('}'));
        match line.strip_suffix(',') {
            Some(l) if closes => out.push(l.to_string()),
            _ => out.push(line.to_string()),
        }
    }
    out.join("\n")
}

#[test]
fn text_bitmap_heap_scan_matches_postgres() {
    let out = text::render(&bitmap_heap_scan_explained());
    let expected = "\
Bitmap Heap Scan on t (actual time=22.444..22.446 rows=0.00 loops=1)
  Recheck Cond: (a < 140)
  Filter: (filler > 'fffffff'::text)
  Rows Removed by Filter: 2767
  Heap Blocks: exact=1429
  Buffers: shared hit=7 read=1429
  I/O Timings: shared read=16.617
  I/O Latency: read p50=0.081 p99=0.412 p99.9=0.980 max=1.113
  ->  Bitmap Index Scan on t_a_idx (actual time=0.276..0.276 rows=5534.00 loops=1)
        Index Cond: (a < 140)
        Index Searches: 1
        Buffers: shared hit=7
Settings: max_parallel_workers_per_gather = '0', effective_io_concurrency = '256'
Planning Time: 0.043 ms
Execution Time: 22.474 ms";
    assert_eq!(out, lines(expected));
}

#[test]
fn json_bitmap_heap_scan_matches_postgres() {
    let out = structured::render(&bitmap_heap_scan_explained(), Format::Json);
    assert_eq!(
        without_iolab_keys(&out),
        include_str!("testdata/bitmap_heap_scan.json").trim_end()
    );
    let parsed: serde_json::Value = serde_json::from_str(&out).expect("valid JSON");
    let plan = &parsed[0]["Plan"];
    assert_eq!(plan["I/O Read Latency p99.9"], 0.98);
    assert_eq!(plan["I/O Read Latency Max"], 1.113);
    assert_eq!(plan["Plans"][0]["I/O Read Latency p50"], 0.0);
    assert_eq!(plan["Plans"][0]["Index Searches"], 1);
}

/// Heap Blocks: positive parts only, no line when both are zero; Rows Removed by Index
/// Recheck before the Filter (the lossy example of spec §4.4); Index Searches even at 0.
#[test]
fn heap_blocks_and_recheck_rules() {
    let mut e = bitmap_heap_scan_explained();
    e.settings = None;
    e.planning_time_ms = None;
    e.execution_time_ms = None;
    e.plan.read_latency = None;
    e.plan.buffers = None;
    e.plan.children[0].node.buffers = None;
    e.plan.details[1] = Detail::Removed {
        label: "Rows Removed by Index Recheck",
        rows: 106529.0,
    };
    e.plan.details[4] = Detail::HeapBlocks {
        exact: 632,
        lossy: 1035,
    };
    let out = text::render(&e);
    assert_eq!(
        out[1..6],
        lines(
            "  Recheck Cond: (a < 140)
  Rows Removed by Index Recheck: 106529
  Filter: (filler > 'fffffff'::text)
  Rows Removed by Filter: 2767
  Heap Blocks: exact=632 lossy=1035"
        )
    );
    e.plan.details[4] = Detail::HeapBlocks { exact: 0, lossy: 7 };
    assert_eq!(text::render(&e)[5], "  Heap Blocks: lossy=7");
    e.plan.details[4] = Detail::HeapBlocks { exact: 0, lossy: 0 };
    assert!(!text::render(&e).iter().any(|l| l.contains("Heap Blocks")));
    e.plan.children[0].node.details[1] = Detail::Count {
        label: "Index Searches",
        value: 0,
    };
    assert!(text::render(&e).contains(&"        Index Searches: 0".to_string()));
}

/// `Disabled: true` (PostgreSQL 18) right under the header, before VERBOSE's Output;
/// `Index Scan using … on …` with its scan direction in structured formats.
#[test]
fn disabled_and_index_scan_header() {
    let mut scan = seq_scan_t();
    scan.node_type = "Index Scan".into();
    scan.text_name = "Index Scan".into();
    scan.index = Some(IndexTarget {
        name: "t_a_idx".into(),
        scan_direction: Some("Forward"),
    });
    scan.relation.as_mut().unwrap().alias = "x".into();
    scan.costs = Some(Costs {
        startup: 0.29,
        total: 84.64,
        rows: 20.0,
        width: 37,
    });
    scan.disabled = true;
    scan.output = Some(vec!["a".into(), "filler".into()]);
    scan.details = vec![Detail::Expr {
        label: "Index Cond",
        text: "(a = 42)".into(),
    }];
    let e = Explained {
        plan: scan,
        ..Default::default()
    };
    assert_eq!(
        text::render(&e),
        lines(
            "Index Scan using t_a_idx on t x  (cost=0.29..84.64 rows=20 width=37)
  Disabled: true
  Output: a, filler
  Index Cond: (a = 42)"
        )
    );
    let json = structured::render(&e, Format::Json);
    assert!(json.contains(
        "\"Async Capable\": false,
      \"Scan Direction\": \"Forward\",
      \"Index Name\": \"t_a_idx\",
      \"Relation Name\": \"t\",
      \"Alias\": \"x\","
    ));
    assert!(json.contains("\"Disabled\": true,"));
    let xml = structured::render(&e, Format::Xml);
    assert!(xml.contains("<Scan-Direction>Forward</Scan-Direction>"));
}

/// EXPLAIN (IO): `Prefetch:` always, `I/O:` only when the stream started reads, both
/// after the node's own counters and before Buffers; all eight keys in JSON; ` gap=` and
/// ` drops=` only when the stream read gap blocks or dropped blocks behind it.
#[test]
fn read_stream_lines() {
    let stream = ReadStreamUsage {
        distance_avg: 93.4126,
        distance_max: 128,
        capacity: 128,
        reads: 1429,
        stalls: 3,
        size_avg: 1.0,
        inprogress_avg: 61.03,
        gap_blocks: 0,
        drops: 0,
    };
    let mut scan = seq_scan_t();
    scan.actual = Some(Actual {
        times_ms: None,
        rows: 0.0,
        loops: 1,
    });
    scan.details = vec![
        Detail::Expr {
            label: "Filter",
            text: "(a < 3)".into(),
        },
        Detail::ReadStream(stream),
    ];
    scan.buffers = Some(Buffers {
        usage: BufferUsage {
            shared_read: 1429,
            ..Default::default()
        },
        track_io_timing: false,
    });
    let mut e = Explained {
        plan: scan,
        ..Default::default()
    };
    assert_eq!(
        text::render(&e),
        lines(
            "Seq Scan on t (actual rows=0.00 loops=1)
  Filter: (a < 3)
  Prefetch: avg=93.413 max=128 capacity=128
  I/O: stalls=3 size=1.000 inprogress=61.030
  Buffers: shared read=1429"
        )
    );
    let json = structured::render(&e, Format::Json);
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    let plan = &parsed[0]["Plan"];
    assert_eq!(plan["Average Prefetch Distance"], 93.413);
    assert_eq!(plan["Max Prefetch Distance"], 128);
    assert_eq!(plan["Prefetch Capacity"], 128);
    assert_eq!(plan["I/O Stalls"], 3);
    assert_eq!(plan["Average I/O Size"], 1.0);
    assert_eq!(plan["Average I/Os In Progress"], 61.03);
    assert_eq!(plan["I/O Gap Blocks"], 0);
    assert_eq!(plan["I/O Drop-Behind Calls"], 0);
    // No I/O key in the Buffers part when track_io_timing is off.
    assert!(plan.get("I/O Read Latency p50").is_none());

    // A cached scan: no reads, no I/O line.
    e.plan.details[1] = Detail::ReadStream(ReadStreamUsage {
        reads: 0,
        stalls: 0,
        size_avg: 0.0,
        inprogress_avg: 0.0,
        distance_avg: 0.0,
        ..stream
    });
    let out = text::render(&e);
    assert!(out.contains(&"  Prefetch: avg=0.000 max=128 capacity=128".to_string()));
    assert!(!out.iter().any(|l| l.contains("I/O: ")));

    // A stream that read through gaps says how many blocks it read unasked.
    e.plan.details[1] = Detail::ReadStream(ReadStreamUsage {
        size_avg: 15.2,
        gap_blocks: 29510,
        ..stream
    });
    let out = text::render(&e);
    assert!(
        out.contains(&"  I/O: stalls=3 size=15.200 inprogress=61.030 gap=29510".to_string()),
        "{out:#?}"
    );
    let json = structured::render(&e, Format::Json);
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(parsed[0]["Plan"]["I/O Gap Blocks"], 29510);

    // One that dropped what it read from the page cache says how many times.
    e.plan.details[1] = Detail::ReadStream(ReadStreamUsage {
        drops: 17,
        ..stream
    });
    let out = text::render(&e);
    assert!(
        out.contains(&"  I/O: stalls=3 size=1.000 inprogress=61.030 drops=17".to_string()),
        "{out:#?}"
    );
    let json = structured::render(&e, Format::Json);
    let parsed: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(parsed[0]["Plan"]["I/O Drop-Behind Calls"], 17);
}
