//! `pg_stat_aio` and `pg_stat_activity` while a cold scan runs on another connection, and
//! the AIO counters against `pg_stat_io` afterwards:
//!
//! - during the scan, the scanning session's `pg_stat_activity` row is `active` with its
//!   query and, at some poll, an I/O wait event of PostgreSQL 18's (`IO` / `AioIoCompletion`,
//!   `IO` / `AioIoUringExecution`, `IO` / `DataFileRead`); `pg_stat_aio.in_flight` of the
//!   client backends is above 0 at some poll; under `worker`, some I/O worker's row shows
//!   `IO` / `DataFileRead` at some poll, as PostgreSQL 18's workers report their reads;
//! - afterwards the I/Os `pg_stat_aio` counted for client backends equal the reads
//!   `pg_stat_io` counted for them, submissions are at most the I/Os, and the read
//!   percentiles are ordered;
//! - `pg_stat_reset_shared('aio')` zeroes `pg_stat_aio` (and moves its `stats_reset`)
//!   without touching `pg_stat_io`.
//!
//! Reads are direct (`debug_io_direct = data`) so that they really go to the device and the
//! scanner really waits for some of them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolab_tests::{int, rows, TestServer};

const ROWS: i64 = 200_000;
const SCAN: &str = "SELECT count(*) FROM t";

fn args(method: &str) -> Vec<String> {
    [
        "-c",
        "shared_buffers=4MB",
        "-c",
        "debug_io_direct=data",
        "-c",
        &format!("io_method={method}"),
    ]
    .map(String::from)
    .to_vec()
}

/// What the poller saw while the scans ran.
#[derive(Default, Debug)]
struct Seen {
    io_wait_events: Vec<String>,
    /// An I/O worker was seen reading (`DataFileRead`).
    worker_reading: bool,
    max_in_flight: i64,
    active_with_query: bool,
}

async fn observe_scans(server: &TestServer, method: &str) -> Seen {
    const MAX_SCANS: usize = 50;
    const MAX_POLLING: Duration = Duration::from_secs(30);
    let scanner = server.client().await;
    let poller = server.client().await;
    let pid = int(&scanner, "SELECT pg_backend_pid()").await;
    let stop = Arc::new(AtomicBool::new(false));
    let scans = tokio::spawn({
        let stop = stop.clone();
        async move {
            let mut done = 0;
            while !stop.load(Ordering::Relaxed) && done < MAX_SCANS {
                let n: i64 = scanner.query_one(SCAN, &[]).await.expect("scan").get(0);
                assert_eq!(n, ROWS);
                done += 1;
            }
        }
    });
    let mut seen = Seen::default();
    let deadline = Instant::now() + MAX_POLLING;
    while !scans.is_finished() && Instant::now() < deadline {
        let activity = rows(
            &poller,
            &format!(
                "SELECT state, query, wait_event_type, wait_event, backend_type, usename \
                 FROM pg_stat_activity WHERE pid = {pid}"
            ),
        )
        .await;
        assert_eq!(activity.len(), 1, "{method}: {activity:?}");
        let r = &activity[0];
        assert_eq!(r[4].as_deref(), Some("client backend"));
        assert_eq!(r[5].as_deref(), Some("postgres"));
        if r[0].as_deref() == Some("active") && r[1].as_deref() == Some(SCAN) {
            seen.active_with_query = true;
        }
        if let (Some("IO"), Some(event)) = (r[2].as_deref(), r[3].as_deref()) {
            seen.io_wait_events.push(event.to_string());
        }
        seen.max_in_flight = seen.max_in_flight.max(
            int(
                &poller,
                "SELECT in_flight FROM pg_stat_aio WHERE backend_type = 'client backend'",
            )
            .await,
        );
        if method == "worker" {
            let reading = int(
                &poller,
                "SELECT count(*) FROM pg_stat_activity
                  WHERE backend_type = 'io worker' AND wait_event = 'DataFileRead'",
            )
            .await;
            seen.worker_reading |= reading > 0;
        }
        if seen.active_with_query
            && !seen.io_wait_events.is_empty()
            && seen.max_in_flight > 0
            && (seen.worker_reading || method != "worker")
        {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    tokio::time::timeout(Duration::from_secs(120), scans)
        .await
        .expect("the scans stop")
        .expect("the scanning task");
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stat_aio_and_activity_show_a_cold_scan_and_add_up() {
    let mut server = TestServer::start_with("stat-aio", &["-c", "shared_buffers=4MB"]);
    let client = server.client().await;
    client
        .batch_execute(&format!(
            "CREATE TABLE t(a int, filler text);
             INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, {ROWS}) AS s(i);
             CHECKPOINT"
        ))
        .await
        .unwrap();
    drop(client);

    for method in ["worker", "io_uring", "sync"] {
        server.extra_args = args(method);
        server.restart();
        // The statistics outlive a clean restart: each method's start from zero.
        let client = server.client().await;
        client
            .batch_execute("SELECT pg_stat_reset_shared('io'); SELECT pg_stat_reset_shared('aio')")
            .await
            .unwrap();
        drop(client);
        let seen = observe_scans(&server, method).await;
        assert!(seen.active_with_query, "{method}: {seen:?}");
        let allowed = match method {
            "worker" => &["AioIoCompletion", "DataFileRead"][..],
            "io_uring" => &["AioIoUringExecution", "AioIoUringSubmit", "AioIoCompletion"][..],
            _ => &["DataFileRead", "DataFilePrefetch"][..],
        };
        assert!(
            !seen.io_wait_events.is_empty(),
            "{method}: no I/O wait event seen"
        );
        for e in &seen.io_wait_events {
            assert!(allowed.contains(&e.as_str()), "{method}: wait event {e}");
        }
        if method != "sync" {
            // sync holds a handle only while the scanner itself reads: a short window
            assert!(seen.max_in_flight > 0, "{method}: {seen:?}");
        }
        if method == "worker" {
            assert!(seen.worker_reading, "{method}: {seen:?}");
        }

        let client = server.client().await;
        let aio = rows(
            &client,
            "SELECT io_method, ios, submissions, queue_full, completion_waits, \
                    completed_elsewhere, read_p50, read_p99, read_max, in_flight \
             FROM pg_stat_aio WHERE backend_type = 'client backend'",
        )
        .await;
        let r = &aio[0];
        let num = |i: usize| -> f64 { r[i].as_deref().unwrap().parse().unwrap() };
        assert_eq!(r[0].as_deref(), Some(method));
        let ios = num(1) as i64;
        let reads = int(
            &client,
            "SELECT sum(reads) FROM pg_stat_io WHERE backend_type = 'client backend'",
        )
        .await;
        assert!(reads > 0, "{method}");
        assert_eq!(
            ios, reads,
            "{method}: pg_stat_aio.ios against pg_stat_io.reads"
        );
        match method {
            "sync" => assert_eq!(num(2), 0.0, "sync submits nothing"),
            _ => {
                assert!(num(2) >= 1.0 && num(2) <= ios as f64, "{method}: {r:?}");
                assert!(
                    num(4) >= 1.0,
                    "{method}: the scanner waited for some reads: {r:?}"
                );
            }
        }
        match method {
            "worker" => assert!(num(5) + num(3) >= 1.0, "{method}: {r:?}"),
            "sync" => assert_eq!(num(5), 0.0, "sync: the issuer executes every read"),
            _ => {}
        }
        assert!(
            num(6) > 0.0 && num(6) <= num(7) && num(7) <= num(8),
            "{method}: {r:?}"
        );
        assert_eq!(num(9), 0.0, "{method}: nothing in flight once idle");

        let before = rows(&client, "SELECT stats_reset FROM pg_stat_aio LIMIT 1").await;
        client
            .batch_execute("SELECT pg_stat_reset_shared('aio')")
            .await
            .unwrap();
        assert_eq!(
            int(
                &client,
                "SELECT sum(ios + submissions + completion_waits) FROM pg_stat_aio"
            )
            .await,
            0,
            "{method}"
        );
        assert_eq!(
            rows(
                &client,
                "SELECT count(*) FROM pg_stat_aio WHERE read_p50 IS NOT NULL"
            )
            .await,
            vec![vec![Some("0".to_string())]]
        );
        assert_ne!(
            rows(&client, "SELECT stats_reset FROM pg_stat_aio LIMIT 1").await,
            before
        );
        assert_eq!(
            int(
                &client,
                "SELECT sum(reads) FROM pg_stat_io WHERE backend_type = 'client backend'"
            )
            .await,
            reads,
            "{method}: the aio reset leaves pg_stat_io"
        );
    }
}

/// The view's shape: one row per backend type that does relation I/O, with the server's
/// io_method, and the columns docs/statistics.md describes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stat_aio_columns_and_rows() {
    let server = TestServer::start_with("stat-aio-shape", &["-c", "io_method=worker"]);
    let client = server.client().await;
    let columns = rows(
        &client,
        "SELECT column_name, data_type FROM information_schema.columns \
         WHERE table_name = 'pg_stat_aio' ORDER BY ordinal_position",
    )
    .await;
    let names: Vec<&str> = columns.iter().map(|c| c[0].as_deref().unwrap()).collect();
    let mut expected = vec![
        "backend_type",
        "io_method",
        "ios",
        "submissions",
        "queue_full",
        "completion_waits",
        "handle_waits",
        "completed_elsewhere",
        "advised",
        "taken_back",
        "dropped_behind",
        "in_flight",
    ];
    let latency: Vec<String> = ["read", "write", "fsync"]
        .iter()
        .flat_map(|op| ["p50", "p90", "p99", "p999", "max"].map(|p| format!("{op}_{p}")))
        .collect();
    expected.extend(latency.iter().map(String::as_str));
    expected.push("stats_reset");
    assert_eq!(names, expected);
    let types: Vec<&str> = columns.iter().map(|c| c[1].as_deref().unwrap()).collect();
    assert_eq!(types[2], "bigint");
    assert_eq!(types[12], "double precision");
    assert_eq!(types[27], "timestamp with time zone");

    let backend_types = rows(&client, "SELECT backend_type, io_method FROM pg_stat_aio").await;
    assert!(backend_types.contains(&vec![Some("client backend".into()), Some("worker".into())]));
    assert!(backend_types.contains(&vec![Some("checkpointer".into()), Some("worker".into())]));
    // CHECKPOINT fsyncs as the checkpointer: its fsync latency shows up
    client
        .batch_execute("CREATE TABLE f(a int); INSERT INTO f VALUES (1); CHECKPOINT")
        .await
        .unwrap();
    let fsync = rows(
        &client,
        "SELECT fsync_p50 > 0, fsync_max >= fsync_p50, write_p50 > 0 FROM pg_stat_aio \
         WHERE backend_type = 'checkpointer'",
    )
    .await;
    assert_eq!(
        fsync,
        vec![vec![Some("t".into()), Some("t".into()), Some("t".into())]]
    );
    let e = client
        .batch_execute("SELECT pg_stat_reset_shared('aioo')")
        .await
        .unwrap_err();
    assert_eq!(iolab_tests::sqlstate(&e), "22023");
}
