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

/// The iolab-only key is left out when comparing with PostgreSQL.
fn without_wait_key(s: &str) -> String {
    s.lines()
        .filter(|l| !l.contains("Shared I/O Wait Time") && !l.contains("Shared-I-O-Wait-Time"))
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
