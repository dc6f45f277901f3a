//! EXPLAIN's text layout of Seq Scan, Aggregate and Bitmap Heap Scan against PostgreSQL
//! 18's, line by line, with numbers normalised;
//! FORMAT JSON's keys; and the I/O lines iolab adds (`I/O Latency:`, EXPLAIN (IO)'s
//! `Prefetch:` / `I/O:`), on a real server with a cold buffer pool.
//!
//! The expected layouts are server/src/explain/testdata/layout_*.txt (derived from
//! shared/reference/pg18-captures/final_capture.out, see the README there). The server
//! runs `io_method = sync`, so every read is a timed `preadv` and `I/O Timings:` is never
//! empty after a cold scan.

use iolab_tests::{evict, figure, plan, rows, sqlstate, TestServer};
use tokio_postgres::Client;

const ROWS: i64 = 200_000;

/// Every number replaced by `N`; iolab's own lines and `wait=` left out.
fn normalised(lines: &[String]) -> Vec<String> {
    lines
        .iter()
        .filter(|l| !l.trim_start().starts_with("I/O Latency:"))
        .map(|l| {
            let mut out = String::new();
            let mut chars = l.chars().peekable();
            while let Some(c) = chars.next() {
                if c.is_ascii_digit() {
                    while let Some(&d) = chars.peek() {
                        let fraction =
                            d == '.' && chars.clone().nth(1).is_some_and(|n| n.is_ascii_digit());
                        if d.is_ascii_digit() || fraction {
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    out.push('N');
                } else {
                    out.push(c);
                }
            }
            out.replace(" wait=N", "")
        })
        .collect()
}

fn expected(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

async fn load(client: &Client) {
    client
        .batch_execute(&format!(
            "CREATE TABLE t(a int, filler text);
             INSERT INTO t SELECT (i * 7919) % 10000, md5(i::text)
               FROM generate_series(1, {ROWS}) AS s(i);
             SET track_io_timing = on;"
        ))
        .await
        .expect("load");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seq_scan_aggregate_and_bitmap_heap_scan_layouts() {
    let server = TestServer::start_with("explain-layout", &["-c", "io_method=sync"]);
    let client = server.client().await;
    load(&client).await;

    // final_capture.out [A]
    client
        .batch_execute("SET max_parallel_workers_per_gather = 0")
        .await
        .unwrap();
    evict(&client, "t").await;
    let seq = plan(
        &client,
        "EXPLAIN (ANALYZE, BUFFERS, SETTINGS) SELECT * FROM t WHERE filler > 'fffffff'",
    )
    .await;
    assert_eq!(
        normalised(&seq),
        expected(include_str!(
            "../../server/src/explain/testdata/layout_seq_scan.txt"
        )),
        "{seq:#?}"
    );
    // iolab's latency line follows I/O Timings: the scan read every block cold.
    let timings = seq.iter().position(|l| l.starts_with("  I/O Timings:"));
    let latency = seq
        .iter()
        .position(|l| l.starts_with("  I/O Latency: read p50="));
    assert_eq!(latency, timings.map(|i| i + 1), "{seq:#?}");
    let max = figure(&seq, "I/O Latency:", "max=").unwrap();
    let p50 = figure(&seq, "I/O Latency:", "p50=").unwrap();
    assert!(max >= p50, "{seq:#?}");

    // final_capture.out [E]
    client
        .batch_execute("RESET max_parallel_workers_per_gather")
        .await
        .unwrap();
    evict(&client, "t").await;
    let agg = plan(
        &client,
        "EXPLAIN (ANALYZE) SELECT count(*) FROM t WHERE filler > 'fffffff'",
    )
    .await;
    assert_eq!(
        normalised(&agg),
        expected(include_str!(
            "../../server/src/explain/testdata/layout_aggregate.txt"
        )),
        "{agg:#?}"
    );
    // The Aggregate reads nothing itself: no latency line of its own.
    assert!(
        !agg[1..3].iter().any(|l| l.contains("I/O Latency")),
        "{agg:#?}"
    );

    // Without track_io_timing there is no latency line; cached, no reads, none either.
    client
        .batch_execute("SET track_io_timing = off")
        .await
        .unwrap();
    evict(&client, "t").await;
    let untimed = plan(&client, "EXPLAIN ANALYZE SELECT count(*) FROM t").await;
    assert!(!untimed
        .iter()
        .any(|l| l.contains("I/O Latency") || l.contains("I/O Timings")));
    client
        .batch_execute("SET track_io_timing = on")
        .await
        .unwrap();
    let cached = plan(&client, "EXPLAIN ANALYZE SELECT count(*) FROM t").await;
    assert!(
        !cached.iter().any(|l| l.contains("I/O Latency")),
        "{cached:#?}"
    );

    // final_capture.out [B]: with an index on `a`, a Bitmap Heap Scan, index cached, heap
    // cold. (Without the capture's `Planning:` block: iolab's planner, having planned the
    // query once, reads no buffer, and PostgreSQL leaves the block out then too.)
    iolab_tests::run_script(
        &client,
        "CREATE INDEX t_a_idx ON t(a); VACUUM ANALYZE t;
             SET max_parallel_workers_per_gather = 0; SET effective_io_concurrency = 0;",
    )
    .await
    .unwrap();
    let query = "SELECT * FROM t WHERE a < 140 AND filler > 'fffffff'";
    plan(&client, &format!("EXPLAIN ANALYZE {query}")).await;
    evict(&client, "t").await;
    let bitmap = plan(
        &client,
        &format!("EXPLAIN (ANALYZE, SETTINGS, BUFFERS, COSTS OFF) {query}"),
    )
    .await;
    assert_eq!(
        normalised(&bitmap),
        expected(include_str!(
            "../../server/src/explain/testdata/layout_bitmap_heap_scan.txt"
        )),
        "{bitmap:#?}"
    );
    // The heap scan read its blocks (latency line); the cached index did not.
    let index = bitmap
        .iter()
        .position(|l| l.contains("Bitmap Index Scan"))
        .unwrap();
    assert!(bitmap[..index]
        .iter()
        .any(|l| l.starts_with("  I/O Latency: read p50=")));
    assert!(!bitmap[index..].iter().any(|l| l.contains("I/O Latency")));

    // The same data in PostgreSQL 18.4 (same rows, same order, same page layout) gives
    // these plans, numbers and all.
    let exact = "EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF)";
    assert_eq!(
        plan(
            &client,
            &format!("{exact} SELECT * FROM t WHERE a = 42 AND filler < 'a'")
        )
        .await,
        expected(
            "Bitmap Heap Scan on t (actual rows=14.00 loops=1)
  Recheck Cond: (a = 42)
  Filter: (filler < 'a'::text)
  Rows Removed by Filter: 6
  Heap Blocks: exact=20
  ->  Bitmap Index Scan on t_a_idx (actual rows=20.00 loops=1)
        Index Cond: (a = 42)
        Index Searches: 1"
        )
    );
    assert_eq!(
        plan(
            &client,
            &format!("{exact} SELECT * FROM t WHERE a < 10 OR a > 9990")
        )
        .await,
        expected(
            "Bitmap Heap Scan on t (actual rows=380.00 loops=1)
  Recheck Cond: ((a < 10) OR (a > 9990))
  Heap Blocks: exact=380
  ->  BitmapOr (actual rows=0.00 loops=1)
        ->  Bitmap Index Scan on t_a_idx (actual rows=200.00 loops=1)
              Index Cond: (a < 10)
              Index Searches: 1
        ->  Bitmap Index Scan on t_a_idx (actual rows=180.00 loops=1)
              Index Cond: (a > 9990)
              Index Searches: 1"
        )
    );
    // And the structured formats, byte for byte.
    let structured = |format: &str, query: &str| {
        format!(
            "EXPLAIN (ANALYZE, BUFFERS OFF, COSTS OFF, TIMING OFF, SUMMARY OFF, FORMAT {format}) \
             SELECT * FROM t WHERE {query}"
        )
    };
    let yaml = plan(&client, &structured("YAML", "a < 10 OR a > 9990")).await;
    assert_eq!(
        yaml[0].trim_end_matches('\n'),
        include_str!("../../server/src/explain/testdata/bitmap_or.yaml").trim_end_matches('\n')
    );
    let xml = plan(&client, &structured("XML", "a = 42 AND filler < 'a'")).await;
    assert_eq!(
        xml[0].trim_end(),
        include_str!("../../server/src/explain/testdata/bitmap_heap_scan_filter.xml").trim_end()
    );

    client
        .batch_execute("SET enable_bitmapscan = off")
        .await
        .unwrap();
    assert_eq!(
        plan(
            &client,
            &format!("{exact} SELECT * FROM t WHERE a = 42 AND filler < 'a'")
        )
        .await,
        expected(
            "Index Scan using t_a_idx on t (actual rows=14.00 loops=1)
  Index Cond: (a = 42)
  Filter: (filler < 'a'::text)
  Rows Removed by Filter: 6
  Index Searches: 1"
        )
    );
}

/// EXPLAIN (IO) on a Seq Scan: its read stream's figures follow effective_io_concurrency;
/// FORMAT JSON carries the same as keys; IO without ANALYZE is PostgreSQL's kind of error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_io_on_seq_scan() {
    let server = TestServer::start_with("explain-io-seq", &["-c", "io_method=worker"]);
    let client = server.client().await;
    load(&client).await;

    let err = client
        .simple_query("EXPLAIN (IO) SELECT count(*) FROM t")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22023");
    assert!(
        format!("{err:?}").contains("EXPLAIN option IO requires ANALYZE"),
        "{err:?}"
    );
    // Off by default.
    let plain = plan(&client, "EXPLAIN ANALYZE SELECT count(*) FROM t").await;
    assert!(!plain.iter().any(|l| l.contains("Prefetch:")));

    let mut capacities = Vec::new();
    for eic in [0, 1, 16] {
        client
            .batch_execute(&format!("SET effective_io_concurrency = {eic}"))
            .await
            .unwrap();
        evict(&client, "t").await;
        let lines = plan(&client, "EXPLAIN (ANALYZE, IO) SELECT count(*) FROM t").await;
        let prefetch = lines
            .iter()
            .position(|l| l.trim_start().starts_with("Prefetch: avg="))
            .unwrap_or_else(|| panic!("{lines:#?}"));
        assert!(lines[prefetch + 1].trim_start().starts_with("I/O: stalls="));
        assert!(lines[prefetch + 2]
            .trim_start()
            .starts_with("Buffers: shared read="));
        let capacity = figure(&lines, "Prefetch:", "capacity=").unwrap();
        let max = figure(&lines, "Prefetch:", "max=").unwrap();
        let size = figure(&lines, "I/O: ", "size=").unwrap();
        assert!(max <= capacity, "{lines:#?}");
        assert!(size >= 1.0, "{lines:#?}");
        capacities.push(capacity);
    }
    // The stream may pin more buffers at 16 than at 0 or 1 (both one read at a time).
    assert!(
        capacities[0] < capacities[2] && capacities[1] < capacities[2],
        "{capacities:?}"
    );

    evict(&client, "t").await;
    let json = plan(
        &client,
        "EXPLAIN (ANALYZE, IO, FORMAT JSON) SELECT count(*) FROM t",
    )
    .await;
    let doc: serde_json::Value = serde_json::from_str(&json[0]).expect("valid JSON");
    let scan = &doc[0]["Plan"]["Plans"][0];
    assert_eq!(scan["Node Type"], "Seq Scan");
    for key in [
        "Average Prefetch Distance",
        "Max Prefetch Distance",
        "Prefetch Capacity",
        "I/O Stalls",
        "Average I/O Size",
        "Average I/Os In Progress",
        "I/O Read Latency p50",
        "I/O Read Latency p99",
        "I/O Read Latency p99.9",
        "I/O Read Latency Max",
    ] {
        assert!(scan[key].is_number(), "{key} in {scan:#}");
    }
    let blocks: u64 = rows(&client, "SELECT pg_relation_size('t') / 8192").await[0][0]
        .as_deref()
        .unwrap()
        .parse()
        .unwrap();
    let read = scan["Shared Read Blocks"].as_u64().unwrap();
    let hit = scan["Shared Hit Blocks"].as_u64().unwrap();
    assert!(read > 0, "{scan:#}");
    assert_eq!(read + hit, blocks, "{scan:#}");
    // The Aggregate does not read: no latency or stream keys of its own.
    assert!(doc[0]["Plan"].get("I/O Read Latency p50").is_none());
    assert!(doc[0]["Plan"].get("Prefetch Capacity").is_none());
}
