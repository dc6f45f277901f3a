//! The I/O methods end to end, on a table larger than the buffer pool:
//!
//! - every `io_method` (sync, worker, io_uring), buffered and with `debug_io_direct = data`,
//!   scans a cold pool in combined reads, and EXPLAIN (ANALYZE, BUFFERS), `pg_stat_io` and
//!   `pg_stat_get_backend_io` count the same blocks;
//! - `pg_aios` shows the scan's reads while they are in flight, and nothing once it is done;
//! - a short read (the file truncated under the running server) fails the scan with
//!   PostgreSQL 18's XX001 and leaves no pin, I/O handle or broken session behind;
//! - under io_method sync, `read_stream_advice` decides whether a Seq Scan issues
//!   `posix_fadvise` advice, which EXPLAIN shows as `I/O Timings: shared wait=`.
//!
//! One data directory serves each test: it is loaded once, then the server is restarted on
//! it with each method (a restart also empties the buffer pool).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolab_tests::{rows, show, sqlstate, TestServer};
use tokio_postgres::Client;

const BLCKSZ: i64 = 8192;
/// 400 000 rows of `(int, md5 text)` fill about 3 300 blocks (26 MB), clearly more than the
/// 16 MB pool of [`SHARED_BUFFERS`]: a Seq Scan of it reads through a bulk-read ring.
const ROWS: i64 = 400_000;
const SHARED_BUFFERS: &str = "shared_buffers=16MB";
const SHARED_BUFFERS_BYTES: i64 = 16 << 20;
const METHODS: [&str; 3] = ["sync", "worker", "io_uring"];

/// Command-line settings for `method`, buffered or direct, with a pool of `shared_buffers`.
fn method_args(shared_buffers: &str, method: &str, direct: bool) -> Vec<String> {
    let mut args = vec![
        "-c".to_string(),
        shared_buffers.to_string(),
        "-c".to_string(),
        format!("io_method={method}"),
    ];
    if direct {
        args.extend(["-c".to_string(), "debug_io_direct=data".to_string()]);
    }
    args
}

/// Restarts `server` on its data directory with `args` (the pool starts cold).
fn restart_with(server: &mut TestServer, args: Vec<String>) {
    server.extra_args = args;
    server.restart();
}

/// The single, non-NULL value of a simple query.
async fn value(client: &Client, sql: &str) -> String {
    let r = rows(client, sql).await;
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0][0].clone().unwrap_or_else(|| panic!("{sql}: NULL"))
}

async fn int(client: &Client, sql: &str) -> i64 {
    let v = value(client, sql).await;
    v.parse().unwrap_or_else(|e| panic!("{sql}: {v:?}: {e}"))
}

/// Creates `table(a int, filler text)` with `nrows` rows; returns its size in blocks.
async fn load(client: &Client, table: &str, nrows: i64) -> i64 {
    client
        .batch_execute(&format!(
            "CREATE TABLE {table}(a int, filler text);
             INSERT INTO {table} SELECT i, md5(i::text) FROM generate_series(1, {nrows}) AS s(i)"
        ))
        .await
        .unwrap_or_else(|e| panic!("load {table}: {e:?}"));
    let bytes = int(client, &format!("SELECT pg_relation_size('{table}')")).await;
    assert_eq!(bytes % BLCKSZ, 0, "{table} is {bytes} bytes");
    bytes / BLCKSZ
}

/// `io_combine_limit` in blocks.
async fn io_combine_limit(client: &Client) -> i64 {
    int(
        client,
        "SELECT setting FROM pg_settings WHERE name = 'io_combine_limit'",
    )
    .await
}

/// A client backend's bulk-read counters of relation I/O (what Seq Scans of large tables
/// count into).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct BulkReads {
    reads: i64,
    read_bytes: i64,
    hits: i64,
}

/// The server-wide `pg_stat_io` row, or this session's `pg_stat_get_backend_io` row.
async fn bulk_reads(client: &Client, own_backend: bool) -> BulkReads {
    let from = if own_backend {
        "pg_stat_get_backend_io(pg_backend_pid())"
    } else {
        "pg_stat_io"
    };
    let r = rows(
        client,
        &format!(
            "SELECT reads, read_bytes, hits FROM {from} WHERE backend_type = 'client backend' \
             AND object = 'relation' AND context = 'bulkread'"
        ),
    )
    .await;
    assert_eq!(r.len(), 1, "{from}: {r:?}");
    let n = |i: usize| -> i64 {
        r[0][i]
            .as_deref()
            .unwrap_or_else(|| panic!("{from}: NULL in {r:?}"))
            .parse()
            .unwrap_or_else(|e| panic!("{from}: {r:?}: {e}"))
    };
    BulkReads {
        reads: n(0),
        read_bytes: n(1),
        hits: n(2),
    }
}

/// Reads are combined: each covers 1 to `io_combine_limit` blocks.
fn assert_combined(counts: BulkReads, combine: i64, label: &str) {
    let blocks = counts.read_bytes / BLCKSZ;
    assert_eq!(counts.read_bytes % BLCKSZ, 0, "{label}: {counts:?}");
    assert!(
        counts.reads * combine >= blocks,
        "{label}: {} reads cannot cover {blocks} blocks with io_combine_limit {combine}",
        counts.reads
    );
    assert!(
        counts.reads <= blocks,
        "{label}: {} reads for {blocks} blocks",
        counts.reads
    );
}

/// `Shared Hit Blocks` and `Shared Read Blocks` of the Seq Scan in EXPLAIN's JSON.
fn seq_scan_blocks(json: &str) -> (i64, i64) {
    fn find(node: &serde_json::Value) -> Option<&serde_json::Value> {
        if node["Node Type"] == "Seq Scan" {
            return Some(node);
        }
        node["Plans"].as_array()?.iter().find_map(find)
    }
    let explain: serde_json::Value =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("EXPLAIN JSON: {e}\n{json}"));
    let scan = find(&explain[0]["Plan"]).unwrap_or_else(|| panic!("no Seq Scan in {json}"));
    let blocks = |key: &str| {
        scan[key]
            .as_i64()
            .unwrap_or_else(|| panic!("no {key} in {json}"))
    };
    (blocks("Shared Hit Blocks"), blocks("Shared Read Blocks"))
}

/// Every digit of `s` (and at least one) parsed as a block number.
fn block_number(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `block N in file "base/R"` or `blocks N..M in file "base/R"` (pg_aios.target_desc, as
/// PostgreSQL 18 writes it) → (N, M, R).
fn parse_target_desc(desc: &str) -> Option<(i64, i64, i64)> {
    let (plural, rest) = match desc.strip_prefix("blocks ") {
        Some(rest) => (true, rest),
        None => (false, desc.strip_prefix("block ")?),
    };
    let (range, file) = rest.split_once(" in file \"base/")?;
    let relfilenode = block_number(file.strip_suffix('"')?)?;
    let (first, last) = match range.split_once("..") {
        Some((first, last)) => (block_number(first)?, block_number(last)?),
        None => (block_number(range)?, block_number(range)?),
    };
    // One block is "block N", several are "blocks N..M".
    (plural == (last > first) && last >= first).then_some((first, last, relfilenode))
}

/// `could not read blocks N..M in file "base/R": read only X of Y bytes` → (N, M, R, X, Y).
fn parse_short_read(message: &str) -> Option<(i64, i64, i64, i64, i64)> {
    let rest = message.strip_prefix("could not read blocks ")?;
    let (range, rest) = rest.split_once(" in file \"base/")?;
    let (first, last) = range.split_once("..")?;
    let (relfilenode, rest) = rest.split_once("\": read only ")?;
    let (read, rest) = rest.split_once(" of ")?;
    let total = rest.strip_suffix(" bytes")?;
    Some((
        block_number(first)?,
        block_number(last)?,
        block_number(relfilenode)?,
        block_number(read)?,
        block_number(total)?,
    ))
}

/// Acceptance 1: each method, buffered and direct, reads a cold 26 MB table through a 16 MB
/// pool in combined reads; EXPLAIN's Seq Scan, `pg_stat_io` and the session's
/// `pg_stat_get_backend_io` agree on every block.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_io_method_reads_a_cold_table_in_combined_reads() {
    let mut server = TestServer::start_with("io-methods-matrix", &["-c", SHARED_BUFFERS]);
    let client = server.client().await;
    let blocks = load(&client, "t", ROWS).await;
    assert!(
        blocks * BLCKSZ > SHARED_BUFFERS_BYTES * 3 / 2,
        "t ({blocks} blocks) is not clearly larger than shared_buffers"
    );
    client.batch_execute("CHECKPOINT").await.unwrap();
    drop(client);

    for direct in [false, true] {
        for method in METHODS {
            let label = format!("{method}{}", if direct { " direct" } else { "" });
            restart_with(&mut server, method_args(SHARED_BUFFERS, method, direct));
            let client = server.client().await;
            assert_eq!(show(&client, "io_method").await, method, "{label}");
            assert_eq!(
                show(&client, "debug_io_direct").await,
                if direct { "data" } else { "" },
                "{label}"
            );
            let combine = io_combine_limit(&client).await;
            client
                .batch_execute("SELECT pg_stat_reset_shared('io'); SET track_io_timing = on")
                .await
                .unwrap();

            // The first scan after the restart: nothing of t is in the pool.
            let explain = value(
                &client,
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT count(*) FROM t",
            )
            .await;
            let (hit, read) = seq_scan_blocks(&explain);
            assert_eq!(hit + read, blocks, "{label}: every block once\n{explain}");
            assert_eq!(hit, 0, "{label}: the pool is cold after a restart");
            // The scan's pending statistics were flushed when it ended.
            let shared = bulk_reads(&client, false).await;
            assert_eq!(shared.read_bytes, read * BLCKSZ, "{label}: {shared:?}");
            assert_eq!(shared.hits, hit, "{label}: {shared:?}");
            assert_combined(shared, combine, &label);
            // A cold sequential scan reads io_combine_limit blocks at a time once its
            // distance has ramped up (reads of 1, 2, 4, … blocks: log2(io_combine_limit)
            // more reads than the minimum). Counting a read again when the scan waits for
            // it (with track_io_timing) would double this.
            let ramp_up = i64::from(combine.ilog2());
            assert!(
                shared.reads <= (blocks + combine - 1) / combine + ramp_up,
                "{label}: {} reads for a cold scan of {blocks} blocks",
                shared.reads
            );
            assert_eq!(
                bulk_reads(&client, true).await,
                shared,
                "{label}: backend io"
            );

            // A plain scan: the right answer; hits and reads again cover the table once.
            assert_eq!(
                int(&client, "SELECT count(*) FROM t").await,
                ROWS,
                "{label}"
            );
            let shared = bulk_reads(&client, false).await;
            assert_combined(shared, combine, &label);
            assert_eq!(
                shared.read_bytes / BLCKSZ + shared.hits,
                2 * blocks,
                "{label}: two scans of {blocks} blocks: {shared:?}"
            );
            assert!(
                shared.read_bytes > read * BLCKSZ,
                "{label}: the plain scan read nothing: {shared:?}"
            );
            assert_eq!(
                bulk_reads(&client, true).await,
                shared,
                "{label}: backend io"
            );
            // Every relation read of the client backends was a bulk read.
            assert_eq!(
                int(
                    &client,
                    "SELECT sum(read_bytes) FROM pg_stat_io \
                     WHERE backend_type = 'client backend' AND object = 'relation'"
                )
                .await,
                shared.read_bytes,
                "{label}"
            );
        }
    }
}

/// Acceptance 2: while one session scans, another sees its reads in `pg_aios`; once the
/// scans are over, `pg_aios` is empty. Asserted for worker and io_uring; io_method sync
/// holds a handle only while the scanning thread itself executes the read, a short window
/// that is looked at but not relied on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_aios_shows_a_scans_reads_while_in_flight() {
    /// pg_aios rows seen after which the scanning stops.
    const ENOUGH_ROWS: usize = 50;
    /// At most this many scans per method, and at most this long (the test cannot hang).
    const MAX_SCANS: usize = 100;
    const MAX_POLLING: Duration = Duration::from_secs(20);
    /// sync shows little; poll it only briefly.
    const SYNC_POLLING: Duration = Duration::from_secs(2);

    let mut server = TestServer::start_with("io-methods-aios", &["-c", SHARED_BUFFERS]);
    let client = server.client().await;
    let blocks = load(&client, "t", ROWS).await;
    client.batch_execute("CHECKPOINT").await.unwrap();
    drop(client);

    for method in ["worker", "io_uring", "sync"] {
        restart_with(&mut server, method_args(SHARED_BUFFERS, method, false));
        let scanner = server.client().await;
        let poller = server.client().await;
        assert_eq!(show(&poller, "io_method").await, method);
        let scanner_pid = int(&scanner, "SELECT pg_backend_pid()").await;
        let combine = io_combine_limit(&poller).await;
        let relfilenode = int(
            &poller,
            "SELECT relfilenode FROM pg_class WHERE relname = 't'",
        )
        .await;

        // The scanning session: the table over and over, until told to stop.
        let stop = Arc::new(AtomicBool::new(false));
        let scans = tokio::spawn({
            let stop = Arc::clone(&stop);
            async move {
                let mut done = 0;
                while !stop.load(Ordering::Relaxed) && done < MAX_SCANS {
                    let n: i64 = scanner
                        .query_one("SELECT count(*) FROM t", &[])
                        .await
                        .expect("scan")
                        .get(0);
                    assert_eq!(n, ROWS);
                    done += 1;
                }
                done
            }
        });

        let polling = if method == "sync" {
            SYNC_POLLING
        } else {
            MAX_POLLING
        };
        let deadline = Instant::now() + polling;
        let mut seen = Vec::new();
        let mut polls = 0;
        while !scans.is_finished() && Instant::now() < deadline && seen.len() < ENOUGH_ROWS {
            seen.extend(
                rows(
                    &poller,
                    "SELECT state, operation, length, target_desc, pid FROM pg_aios",
                )
                .await,
            );
            polls += 1;
        }
        stop.store(true, Ordering::Relaxed);
        let scans = tokio::time::timeout(Duration::from_secs(60), scans)
            .await
            .expect("the scans stop")
            .expect("the scanning task");
        assert_eq!(
            rows(&poller, "SELECT * FROM pg_aios").await,
            Vec::<Vec<Option<String>>>::new(),
            "{method}: I/O handles left after the scans"
        );
        // A handle just taken (HANDED_OUT) shows nothing but its owner and state, as in
        // PostgreSQL 18; from DEFINED on it describes the read.
        let mut reads = 0;
        for row in &seen {
            let [state, operation, length, target_desc, pid] = &row[..] else {
                panic!("{method}: {row:?}");
            };
            assert_eq!(
                pid.as_deref(),
                Some(scanner_pid.to_string().as_str()),
                "{method}: {row:?}"
            );
            let state = state.as_deref().unwrap_or_default();
            if state == "HANDED_OUT" {
                assert_eq!(
                    (operation, length, target_desc),
                    (&None, &None, &None),
                    "{method}: {row:?}"
                );
                continue;
            }
            assert!(
                [
                    "DEFINED",
                    "STAGED",
                    "SUBMITTED",
                    "COMPLETED_IO",
                    "COMPLETED_SHARED",
                    "COMPLETED_LOCAL"
                ]
                .contains(&state),
                "{method}: {row:?}"
            );
            assert_eq!(operation.as_deref(), Some("readv"), "{method}: {row:?}");
            let length: i64 = length.as_deref().unwrap().parse().unwrap();
            let (first, last, file) = parse_target_desc(target_desc.as_deref().unwrap())
                .unwrap_or_else(|| panic!("{method}: target_desc of {row:?}"));
            assert_eq!(file, relfilenode, "{method}: {row:?}");
            assert!(last < blocks, "{method}: {row:?}");
            assert_eq!(length, (last - first + 1) * BLCKSZ, "{method}: {row:?}");
            assert!(length <= combine * BLCKSZ, "{method}: {row:?}");
            reads += 1;
        }
        eprintln!(
            "{method}: {} pg_aios rows ({reads} reads described) in {polls} polls during {scans} scans",
            seen.len()
        );
        if method != "sync" {
            assert!(
                reads > 0,
                "{method}: no read in pg_aios during {scans} scans"
            );
        }
    }
}

/// Acceptance 3: the table's file is cut to half its size under the running server (which
/// still believes the old size); the next scan's read past the new end comes back short and
/// fails with PostgreSQL 18's XX001 — under every method, buffered and direct. The session,
/// the server and the pool stay usable: no I/O handle and no pin is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_read_fails_the_scan_and_leaves_nothing_behind() {
    /// A 4 MB pool (512 buffers) and 100 000-row tables (about 830 blocks, 6.8 MB).
    const POOL: &str = "shared_buffers=4MB";
    const FAULT_ROWS: i64 = 100_000;
    /// Every method, buffered and direct; each cuts its own table.
    const FAULTS: [(&str, bool); 6] = [
        ("sync", false),
        ("worker", false),
        ("io_uring", false),
        ("sync", true),
        ("worker", true),
        ("io_uring", true),
    ];
    fn cut_table(method: &str, direct: bool) -> String {
        format!("cut_{method}{}", if direct { "_direct" } else { "" })
    }

    let mut server = TestServer::start_with("io-methods-fault", &["-c", POOL]);
    let client = server.client().await;
    let pool_blocks = (4 << 20) / BLCKSZ;
    let other_blocks = load(&client, "other", FAULT_ROWS).await;
    assert!(other_blocks > pool_blocks);
    for (method, direct) in FAULTS {
        let blocks = load(&client, &cut_table(method, direct), FAULT_ROWS).await;
        assert!(blocks > pool_blocks);
    }
    client.batch_execute("CHECKPOINT").await.unwrap();
    drop(client);

    for (method, direct) in FAULTS {
        let label = format!("{method}{}", if direct { " direct" } else { "" });
        restart_with(&mut server, method_args(POOL, method, direct));
        let client = server.client().await;
        assert_eq!(show(&client, "io_method").await, method);
        let table = cut_table(method, direct);
        let relfilenode = int(
            &client,
            &format!("SELECT relfilenode FROM pg_class WHERE relname = '{table}'"),
        )
        .await;
        // Asking for the size opens the file: from now on the server takes it to have
        // `blocks` blocks.
        let blocks = int(&client, &format!("SELECT pg_relation_size('{table}')")).await / BLCKSZ;
        let kept = blocks / 2;
        let path = server.data_dir.join("base").join(relfilenode.to_string());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_len((kept * BLCKSZ) as u64))
            .unwrap_or_else(|e| panic!("truncate {}: {e}", path.display()));

        let scan = format!("SELECT count(*) FROM {table}");
        let err = client
            .query_one(&scan, &[])
            .await
            .expect_err("the scan of a truncated file fails");
        assert_eq!(sqlstate(&err), "XX001", "{label}: {err:?}");
        let message = err.as_db_error().unwrap().message();
        let (first, last, file, read, total) = parse_short_read(message)
            .unwrap_or_else(|| panic!("{label}: unexpected message {message:?}"));
        eprintln!("{label}: {message}");
        // The first read that failed covers the first missing block, and read what was left.
        assert_eq!(file, relfilenode, "{label}: {message}");
        assert!(
            first <= kept && kept <= last,
            "{label}: {message} (kept {kept})"
        );
        assert_eq!(total, (last - first + 1) * BLCKSZ, "{label}: {message}");
        assert_eq!(read, (kept - first) * BLCKSZ, "{label}: {message}");
        assert!(
            last - first < io_combine_limit(&client).await,
            "{label}: {message}"
        );

        // The session goes on; no I/O is left in flight; other sessions and tables work.
        assert_eq!(value(&client, "SELECT 1").await, "1", "{label}");
        assert_eq!(
            rows(&client, "SELECT * FROM pg_aios").await.len(),
            0,
            "{label}: I/O handles left after the failed scan"
        );
        let second = server.client().await;
        assert_eq!(int(&second, "SELECT count(*) FROM other").await, FAULT_ROWS);
        assert_eq!(int(&client, "SELECT count(*) FROM other").await, FAULT_ROWS);
        // The failure is not cached: every scan fails the same way, from either session.
        for c in [&client, &second, &client] {
            let err = c.query_one(&scan, &[]).await.expect_err("still truncated");
            assert_eq!(sqlstate(&err), "XX001", "{label}: {err:?}");
        }

        // No pin was left behind: none shows in pg_buffercache, where iolab has it (the
        // view is being added alongside these tests; until then 42P01 skips this check) …
        match client
            .simple_query("SELECT count(*) FROM pg_buffercache WHERE pinning_backends > 0")
            .await
        {
            Err(e) if e.code().map(|c| c.code()) == Some("42P01") => {}
            Err(e) => panic!("{label}: pg_buffercache: {e:?}"),
            Ok(_) => assert_eq!(
                int(
                    &client,
                    "SELECT count(*) FROM pg_buffercache WHERE pinning_backends > 0"
                )
                .await,
                0,
                "{label}: buffers still pinned after the failed scans"
            ),
        }
        // … and dropping the table discards its buffers, which fails
        // ("cannot drop buffer …: it is still pinned") if one stays pinned for a second.
        client
            .batch_execute(&format!("DROP TABLE {table}"))
            .await
            .unwrap_or_else(|e| panic!("{label}: DROP TABLE {table}: {e:?}"));
        // A scan larger than the pool still finds unpinned buffers.
        assert_eq!(int(&second, "SELECT count(*) FROM other").await, FAULT_ROWS);
        assert_eq!(rows(&second, "SELECT * FROM pg_aios").await.len(), 0);
    }
}

/// The `I/O Timings:` line of the Seq Scan in a text EXPLAIN, if it has one, and the
/// number after `read=` on its `Buffers:` line.
fn seq_scan_timings(plan: &[String]) -> (Option<String>, i64) {
    let start = plan
        .iter()
        .position(|l| l.contains("Seq Scan on"))
        .unwrap_or_else(|| panic!("no Seq Scan in {plan:#?}"));
    let node: Vec<&str> = plan[start + 1..]
        .iter()
        .take_while(|l| !l.contains("->") && !l.starts_with("Planning"))
        .map(|l| l.trim())
        .collect();
    let timings = node
        .iter()
        .find(|l| l.starts_with("I/O Timings:"))
        .map(|l| l.to_string());
    let read = node
        .iter()
        .find(|l| l.starts_with("Buffers:"))
        .and_then(|l| l.split_once(" read=").map(|(_, r)| r))
        .and_then(|r| r.split(' ').next())
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    (timings, read)
}

/// Acceptance 4: under io_method sync, a Seq Scan issues advice only with
/// `read_stream_advice = always` (sequential streams are not advised under pg17/pg18, as in
/// PostgreSQL, and `never` never advises); the time spent advising is EXPLAIN's
/// `I/O Timings: shared wait=`. Direct I/O bypasses the page cache, so it is never advised.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_stream_advice_shows_as_wait_time_under_sync() {
    let mut server = TestServer::start_with(
        "io-methods-advice",
        &["-c", SHARED_BUFFERS, "-c", "io_method=sync"],
    );
    let client = server.client().await;
    load(&client, "t", ROWS).await;
    client.batch_execute("CHECKPOINT").await.unwrap();
    drop(client);

    for direct in [false, true] {
        restart_with(&mut server, method_args(SHARED_BUFFERS, "sync", direct));
        let client = server.client().await;
        assert_eq!(show(&client, "io_method").await, "sync");
        client
            .batch_execute("SET track_io_timing = on")
            .await
            .unwrap();
        for (advice, advised) in [
            ("never", false),
            ("always", !direct),
            ("pg18", false),
            ("pg17", false),
        ] {
            let label = format!("{advice}{}", if direct { " direct" } else { "" });
            client
                .batch_execute(&format!("SET read_stream_advice = {advice}"))
                .await
                .unwrap();
            let plan: Vec<String> =
                rows(&client, "EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM t")
                    .await
                    .into_iter()
                    .map(|r| r[0].clone().unwrap())
                    .collect();
            let (timings, read) = seq_scan_timings(&plan);
            assert!(
                read > 0,
                "{label}: the scan read nothing:\n{}",
                plan.join("\n")
            );
            let timings =
                timings.unwrap_or_else(|| panic!("{label}: no I/O Timings:\n{}", plan.join("\n")));
            if advised {
                assert!(
                    timings.starts_with("I/O Timings: shared wait="),
                    "{label}: {timings}"
                );
            } else {
                assert!(!timings.contains("wait="), "{label}: {timings}");
                assert!(
                    timings.starts_with("I/O Timings: shared read="),
                    "{label}: {timings}"
                );
            }
        }
    }
}

#[test]
fn target_desc_and_short_read_messages_parse() {
    assert_eq!(
        parse_target_desc("blocks 16..31 in file \"base/16384\""),
        Some((16, 31, 16384))
    );
    assert_eq!(
        parse_target_desc("block 7 in file \"base/16384\""),
        Some((7, 7, 16384))
    );
    assert_eq!(parse_target_desc("blocks 7 in file \"base/16384\""), None);
    assert_eq!(parse_target_desc("block 7..9 in file \"base/16384\""), None);
    assert_eq!(
        parse_target_desc("blocks 9..7 in file \"base/16384\""),
        None
    );
    assert_eq!(parse_target_desc("block 7 in file \"base/x\""), None);
    assert_eq!(parse_target_desc("block 7 in file \"global/1\""), None);
    assert_eq!(
        parse_short_read(
            "could not read blocks 1663..1677 in file \"base/16384\": read only 32768 of 122880 bytes"
        ),
        Some((1663, 1677, 16384, 32768, 122880))
    );
    assert_eq!(
        parse_short_read(
            "could not read block 1663 in file \"base/16384\": read only 0 of 8192 bytes"
        ),
        None
    );
}
