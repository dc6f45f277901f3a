//! The seed experiment of issue 4 at small scale, through EXPLAIN: the Bitmap Heap Scan's
//! lines are checked against what the table says (a Seq Scan's count, the blocks of the
//! matching tuples' ctids), exact and lossy, in PostgreSQL 18's layout; and
//! effective_io_concurrency changes the read stream's figures (EXPLAIN (IO)).

use std::collections::BTreeSet;

use iolab_tests::{evict, figure, int, number_after, plan, rows, TestServer};
use tokio_postgres::Client;

const ROWS: i64 = 200_000;
const QUERY: &str = "SELECT * FROM eic_uniform WHERE a < 140 AND filler > 'fffffff'";

/// A counter line's value, 0 when the line is absent (text omits zero counters).
fn count(lines: &[String], label: &str) -> u64 {
    figure(lines, label, &format!("{label}: ")).unwrap_or(0.0) as u64
}

async fn scalar(client: &Client, sql: &str) -> u64 {
    u64::try_from(int(client, sql).await).expect("a count")
}

/// The heap blocks holding the tuples `a < 140`, from their ctids `(block,offset)`.
async fn matching_blocks(client: &Client) -> usize {
    let ctids = rows(client, "SELECT ctid FROM eic_uniform WHERE a < 140").await;
    let blocks: BTreeSet<u64> = ctids
        .iter()
        .map(|r| {
            let ctid = r[0].as_deref().expect("ctid");
            let inner = ctid.trim_start_matches('(').trim_end_matches(')');
            inner
                .split(',')
                .next()
                .unwrap()
                .parse()
                .expect("block number")
        })
        .collect();
    blocks.len()
}

/// The seed's table at `ROWS` rows with its index, then `settings` (SQL) for the session.
async fn seed(client: &Client, settings: &str) {
    iolab_tests::run_script(
        &client,
        &format!(
            "CREATE UNLOGGED TABLE eic_uniform(a INT, filler TEXT);
             INSERT INTO eic_uniform SELECT 10000 * random(), md5(i::text)
               FROM generate_series(1, {ROWS}) AS T(i);
             VACUUM ANALYZE eic_uniform;
             CREATE INDEX ON eic_uniform(a);
             SET max_parallel_workers_per_gather = 0; {settings}"
        ),
    )
    .await
    .expect("seed script");
}

/// `EXPLAIN (options)` of the query with the index warm and the heap cold, as in the
/// captures: one run to warm both, then the table's buffers evicted.
async fn cold_heap_plan(client: &Client, options: &str) -> Vec<String> {
    plan(client, &format!("EXPLAIN ANALYZE {QUERY}")).await;
    evict(client, "eic_uniform").await;
    plan(client, &format!("EXPLAIN ({options}) {QUERY}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_experiment_bitmap_heap_scan() {
    let server = TestServer::start_with("explain-bitmap", &["-c", "io_method=worker"]);
    let client = server.client().await;
    seed(
        &client,
        "SET work_mem = '16MB'; SET track_io_timing = on; SET effective_io_concurrency = 256;",
    )
    .await;

    // The truth, from a Seq Scan.
    client
        .batch_execute("SET enable_bitmapscan = off; SET enable_indexscan = off")
        .await
        .unwrap();
    let seq = plan(&client, &format!("EXPLAIN (COSTS OFF) {QUERY}")).await;
    assert!(seq[0].starts_with("Seq Scan on eic_uniform"), "{seq:#?}");
    let below = scalar(&client, "SELECT count(*) FROM eic_uniform WHERE a < 140").await;
    let answer = scalar(
        &client,
        "SELECT count(*) FROM eic_uniform WHERE a < 140 AND filler > 'fffffff'",
    )
    .await;
    client
        .batch_execute("RESET enable_bitmapscan; RESET enable_indexscan")
        .await
        .unwrap();
    let blocks = matching_blocks(&client).await as u64;
    assert!(
        below > 1000 && blocks > 100,
        "{below} rows in {blocks} blocks"
    );

    for work_mem in ["16MB", "64kB"] {
        client
            .batch_execute(&format!("SET work_mem = '{work_mem}'"))
            .await
            .unwrap();
        let lines = cold_heap_plan(&client, "ANALYZE, SETTINGS, BUFFERS, COSTS OFF").await;
        let ctx = format!("work_mem={work_mem}: {lines:#?}");
        assert!(
            lines[0].starts_with("Bitmap Heap Scan on eic_uniform (actual "),
            "{ctx}"
        );
        assert_eq!(lines[1], "  Recheck Cond: (a < 140)", "{ctx}");
        let index = lines
            .iter()
            .position(|l| l.starts_with("  ->  Bitmap Index Scan on eic_uniform_a_idx (actual "))
            .unwrap_or_else(|| panic!("{ctx}"));
        assert_eq!(lines[index + 1], "        Index Cond: (a < 140)", "{ctx}");
        assert_eq!(lines[index + 2], "        Index Searches: 1", "{ctx}");
        let heap = &lines[..index];

        // Rows returned + removed by the filter = the rows the index condition selects.
        let returned = figure(heap, "(actual", "rows=").unwrap() as u64;
        assert_eq!(returned, answer, "{ctx}");
        assert_eq!(
            returned + count(heap, "Rows Removed by Filter"),
            below,
            "{ctx}"
        );
        assert!(
            heap.contains(&"  Filter: (filler > 'fffffff'::text)".to_string()),
            "{ctx}"
        );
        // The index scan's rows are its TIDs.
        assert_eq!(
            figure(&lines[index..], "(actual", "rows=").unwrap() as u64,
            below,
            "{ctx}"
        );

        let exact = figure(heap, "Heap Blocks:", "exact=").unwrap_or(0.0) as u64;
        let lossy = figure(heap, "Heap Blocks:", "lossy=").unwrap_or(0.0) as u64;
        let rechecked = count(heap, "Rows Removed by Index Recheck");
        if work_mem == "16MB" {
            assert_eq!((exact, lossy, rechecked), (blocks, 0, 0), "{ctx}");
        } else {
            assert!(lossy > 0 && rechecked > 0, "{ctx}");
            assert_eq!(exact + lossy, blocks, "{ctx}");
            // Rows Removed by Index Recheck comes before the Filter.
            let at = |p: &str| heap.iter().position(|l| l.starts_with(p)).unwrap();
            assert!(
                at("  Rows Removed by Index Recheck") < at("  Filter:"),
                "{ctx}"
            );
        }
        // Every heap block was read cold; the heap scan's Buffers add the index's (cached)
        // hits.
        let buffers = heap
            .iter()
            .find(|l| l.starts_with("  Buffers: shared hit="))
            .unwrap_or_else(|| panic!("{ctx}"));
        let heap_read = number_after(buffers, " read=");
        assert_eq!(heap_read, Some(blocks as f64), "{ctx}");
        assert!(
            heap.iter().any(|l| l.starts_with("  I/O Timings: shared")),
            "{ctx}"
        );
        assert!(
            heap.iter()
                .any(|l| l.starts_with("  I/O Latency: read p50=")),
            "{ctx}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("Settings: ") && l.contains(work_mem)),
            "{ctx}"
        );
    }

    // FORMAT JSON: PostgreSQL's keys, and the same counts.
    client.batch_execute("SET work_mem = '16MB'").await.unwrap();
    let json = plan(
        &client,
        &format!("EXPLAIN (ANALYZE, COSTS OFF, FORMAT JSON) {QUERY}"),
    )
    .await;
    let doc: serde_json::Value = serde_json::from_str(&json[0]).expect("valid JSON");
    let heap = &doc[0]["Plan"];
    assert_eq!(heap["Node Type"], "Bitmap Heap Scan");
    assert_eq!(heap["Recheck Cond"], "(a < 140)");
    assert_eq!(heap["Exact Heap Blocks"].as_u64(), Some(blocks));
    assert_eq!(heap["Lossy Heap Blocks"].as_u64(), Some(0));
    assert_eq!(heap["Rows Removed by Index Recheck"].as_u64(), Some(0));
    assert_eq!(heap["Disabled"], false);
    let index = &heap["Plans"][0];
    assert_eq!(index["Node Type"], "Bitmap Index Scan");
    assert_eq!(index["Parent Relationship"], "Outer");
    assert_eq!(index["Index Name"], "eic_uniform_a_idx");
    assert_eq!(index["Index Cond"], "(a < 140)");
    assert_eq!(index["Index Searches"].as_u64(), Some(1));
    assert!(index.get("Relation Name").is_none());

    // Every path disabled: the cheapest is still chosen, marked `Disabled: true` (PG 18).
    client
        .batch_execute(
            "SET enable_seqscan = off; SET enable_indexscan = off; SET enable_bitmapscan = off",
        )
        .await
        .unwrap();
    let disabled = plan(&client, &format!("EXPLAIN (COSTS OFF) {QUERY}")).await;
    assert_eq!(disabled[1], "  Disabled: true", "{disabled:#?}");
    client.batch_execute("RESET ALL").await.unwrap();
}

/// effective_io_concurrency 0, 1, 16, 256, 512 on the same cold bitmap heap scan: the stream's
/// look-ahead (`Prefetch:`) and reads in flight (`I/O:`) follow the setting; the answer and
/// the blocks read do not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn effective_io_concurrency_changes_the_stream() {
    let server = TestServer::start_with("explain-bitmap-eic", &["-c", "io_method=worker"]);
    let client = server.client().await;
    seed(&client, "SET track_io_timing = on;").await;
    let mut seen = Vec::new();
    for eic in [0, 1, 16, 256, 512] {
        client
            .batch_execute(&format!("SET effective_io_concurrency = {eic}"))
            .await
            .unwrap();
        let lines = cold_heap_plan(&client, "ANALYZE, IO, COSTS OFF").await;
        let ctx = format!("eic={eic}: {lines:#?}");
        assert!(lines[0].starts_with("Bitmap Heap Scan"), "{ctx}");
        let prefetch = lines
            .iter()
            .position(|l| l.starts_with("  Prefetch: avg="))
            .unwrap_or_else(|| panic!("{ctx}"));
        assert!(
            lines[prefetch - 1].starts_with("  Heap Blocks: exact="),
            "{ctx}"
        );
        assert!(lines[prefetch + 1].starts_with("  I/O: stalls="), "{ctx}");
        assert!(
            lines[prefetch + 2].starts_with("  Buffers: shared"),
            "{ctx}"
        );
        // The Bitmap Index Scan's range spans several leaves: it reads them ahead through
        // a stream of its own.
        let index = lines
            .iter()
            .position(|l| l.contains("Bitmap Index Scan"))
            .unwrap_or_else(|| panic!("{ctx}"));
        for part in [&lines[..index], &lines[index..]] {
            assert_eq!(
                part.iter().filter(|l| l.contains("Prefetch:")).count(),
                1,
                "{ctx}"
            );
        }
        let capacity = figure(&lines, "Prefetch:", "capacity=").unwrap();
        let max = figure(&lines[prefetch..], "Prefetch:", " max=").unwrap();
        let inprogress = figure(&lines, "I/O:", "inprogress=").unwrap();
        let exact = figure(&lines, "Heap Blocks:", "exact=").unwrap();
        let rows_out = figure(&lines, "(actual", "rows=").unwrap();
        assert!(max <= capacity, "{ctx}");
        seen.push((eic, capacity, max, inprogress, exact, rows_out));
    }
    let (_, cap0, max0, inflight0, exact0, rows0) = seen[0];
    let (_, _, _, _, exact1, rows1) = seen[1];
    let (_, cap16, max16, inflight16, exact16, rows16) = seen[2];
    let (_, cap256, max256, _, exact256, rows256) = seen[3];
    let (_, cap512, _, _, exact512, rows512) = seen[4];
    assert_eq!((exact512, rows512), (exact0, rows0), "{seen:?}");
    assert!(cap256 <= cap512, "{seen:?}");
    // Same blocks, same answer.
    assert!(
        [exact1, exact16, exact256].iter().all(|&e| e == exact0),
        "{seen:?}"
    );
    assert!(
        [rows1, rows16, rows256].iter().all(|&r| r == rows0),
        "{seen:?}"
    );
    // At 0 the stream reads one block at a time, synchronously: nothing else in flight.
    assert_eq!(inflight0, 0.0, "{seen:?}");
    assert!(inflight16 > 0.0, "{seen:?}");
    // More concurrency, a longer look-ahead allowed and used.
    assert!(cap0 < cap16 && cap16 <= cap256, "{seen:?}");
    assert!(max0 < max16 && max16 <= max256, "{seen:?}");
}

/// `read_stream_gap_limit` on the dense cold bitmap heap scan: reads grow as the stream reads
/// through the holes between requested blocks; the gap blocks it read show as `gap=` and in
/// `Buffers: read=`, but not in `Heap Blocks:`, and the answer does not change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gap_limit_reads_through_holes() {
    let server = TestServer::start_with("explain-bitmap-gap", &["-c", "io_method=io_uring"]);
    let client = server.client().await;
    seed(&client, "").await;
    assert_eq!(
        iolab_tests::show(&client, "read_stream_gap_limit").await,
        "0"
    );
    let blocks = matching_blocks(&client).await as f64;
    let relpages = scalar(&client, "SELECT pg_relation_size('eic_uniform') / 8192").await as f64;
    let mut seen = Vec::new();
    for gap_limit in ["0", "1", "32kB"] {
        client
            .batch_execute(&format!("SET read_stream_gap_limit = '{gap_limit}'"))
            .await
            .unwrap();
        let lines = cold_heap_plan(&client, "ANALYZE, IO, SETTINGS, COSTS OFF").await;
        let ctx = format!("read_stream_gap_limit={gap_limit}: {lines:#?}");
        let index = lines
            .iter()
            .position(|l| l.contains("Bitmap Index Scan"))
            .unwrap_or_else(|| panic!("{ctx}"));
        let heap = &lines[..index];
        let io = heap
            .iter()
            .find(|l| l.starts_with("  I/O: stalls="))
            .unwrap_or_else(|| panic!("{ctx}"));
        let gap = number_after(io, " gap=").unwrap_or(0.0);
        let size = number_after(io, " size=").unwrap();
        let exact = figure(heap, "Heap Blocks:", "exact=").unwrap();
        let read = figure(heap, "Buffers:", " read=").unwrap();
        assert_eq!(exact, blocks, "the scan asks for the same blocks: {ctx}");
        assert_eq!(read, exact + gap, "gap blocks are read too: {ctx}");
        assert!(read <= relpages, "{ctx}");
        let rows_out = figure(heap, "(actual", "rows=").unwrap();
        let settings_line = lines.iter().find(|l| l.starts_with("Settings: "));
        assert_eq!(
            settings_line.is_some_and(|l| l.contains("read_stream_gap_limit")),
            gap_limit != "0",
            "EXPLAIN (SETTINGS) lists it when changed: {ctx}"
        );
        seen.push((gap, size, rows_out));
    }
    let [(gap0, size0, rows0), (gap1, size1, rows1), (gap4, size4, rows4)] = seen[..] else {
        unreachable!()
    };
    assert_eq!(gap0, 0.0, "{seen:?}");
    assert!(0.0 < gap1 && gap1 < gap4, "{seen:?}");
    assert!(size0 < size1 && size1 < size4, "{seen:?}");
    assert!(rows0 == rows1 && rows1 == rows4, "{seen:?}");
    // The limit is in blocks, shown with the unit as io_combine_limit is.
    assert_eq!(
        iolab_tests::show(&client, "read_stream_gap_limit").await,
        "32kB"
    );
}

/// The Bitmap Index Scan reads the leaves of its range ahead, in combined reads (iolab's,
/// not PostgreSQL 18's): with the heap warm and the index cold, the statement reads only
/// the index's blocks, in a quarter as many I/Os or fewer, and the count is the Seq Scan's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bitmap_index_scan_reads_leaves_ahead() {
    let server = TestServer::start_with("explain-bitmap-leaves", &["-c", "io_method=io_uring"]);
    let client = server.client().await;
    seed(&client, "SET work_mem = '16MB'").await;
    let query = "SELECT count(*) FROM eic_uniform WHERE a < 5000";
    client
        .batch_execute("SET enable_bitmapscan = off; SET enable_indexscan = off")
        .await
        .unwrap();
    let truth = scalar(&client, query).await;
    client
        .batch_execute(
            "RESET enable_bitmapscan; RESET enable_indexscan; SET enable_seqscan = off;
             SET enable_indexonlyscan = off",
        )
        .await
        .unwrap();
    plan(&client, &format!("EXPLAIN ANALYZE {query}")).await; // the heap into the pool
    evict(&client, "eic_uniform_a_idx").await;
    client
        .simple_query("SELECT pg_stat_reset_shared('io')")
        .await
        .unwrap();
    let lines = plan(
        &client,
        &format!("EXPLAIN (ANALYZE, BUFFERS, IO, COSTS OFF) {query}"),
    )
    .await;
    let ctx = format!("{lines:#?}");
    let index = lines
        .iter()
        .position(|l| l.contains("Bitmap Index Scan on eic_uniform_a_idx"))
        .unwrap_or_else(|| panic!("{ctx}"));
    let index_read = figure(&lines[index..], "Buffers:", " read=").unwrap_or(0.0) as u64;
    let heap_read = figure(&lines[..index], "Buffers:", " read=").unwrap_or(0.0) as u64;
    assert!(index_read > 50, "a range of many leaves: {ctx}");
    assert_eq!(
        heap_read, index_read,
        "the heap's line includes its child's: {ctx}"
    );
    let counted = rows(
        &client,
        "SELECT sum(reads)::int8, sum(read_bytes)::int8 FROM pg_stat_io
          WHERE backend_type = 'client backend' AND object = 'relation'",
    )
    .await;
    let reads: u64 = counted[0][0].as_deref().unwrap().parse().unwrap();
    let bytes: u64 = counted[0][1].as_deref().unwrap().parse().unwrap();
    // The statement's reads are the scan's: the planner read the meta page for the tree's
    // height when it first planned the query, and kept it (no `Planning:` reads).
    assert!(!lines.iter().any(|l| l == "Planning:"), "{ctx}");
    assert_eq!(bytes, index_read * 8192, "{counted:?} {ctx}");
    assert!(
        reads * 4 <= index_read,
        "{reads} reads for {index_read} blocks: {ctx}"
    );
    // EXPLAIN (IO) shows the index's stream: its reads, of several leaves each on average.
    let io = lines[index..]
        .iter()
        .find(|l| l.trim_start().starts_with("I/O: stalls="))
        .unwrap_or_else(|| panic!("{ctx}"));
    let size = number_after(io, " size=").unwrap();
    assert!(size >= 4.0, "{ctx}");
    assert!(lines[index..]
        .iter()
        .any(|l| l.trim_start().starts_with("Prefetch: avg=")));
    assert_eq!(scalar(&client, query).await, truth);
}
