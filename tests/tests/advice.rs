//! Who tells the kernel about reads ahead (`posix_fadvise(WILLNEED)`), counted in
//! `pg_stat_aio.advised`, per `io_method` and `read_stream_advice` policy:
//!
//! - `sync`: the scanning session advises a bitmap heap scan's reads under the default
//!   policy (`pg18`), none under `never`, and never a Seq Scan's (a sequential stream);
//! - `worker` (one I/O worker, so reads wait in its queue): the worker advises queued reads
//!   of a bitmap heap scan, none under `never`, none of a Seq Scan's; at
//!   `effective_io_concurrency = 1` the session reads and advises itself, as under `sync`;
//! - with `debug_io_direct = data` nobody advises (the page cache is bypassed).
//!
//! The answers of the scans are checked against each other as well: advice must never
//! change what a scan returns.
//!
//! And, in the same worker queue, `pg_stat_aio.taken_back`: at `effective_io_concurrency
//! = 1` with direct I/O the scan waits at once for the read it just queued, and takes it
//! back from the queue when no worker has started it yet.

use iolab_tests::{client_aio_count, evict_cold, int, rows, start_with_modulo_t, TestServer};
use tokio_postgres::Client;

const ROWS: i64 = 100_000;
/// 5 rows in every 1 000 (one block in about nine): a Bitmap Heap Scan that skips blocks.
const BITMAP: &str = "SELECT count(*) FROM t WHERE a < 5";
const SEQ: &str = "SELECT count(*) FROM t";

async fn advised(client: &Client) -> i64 {
    client_aio_count(client, "advised").await
}

/// Runs `sql` cold (`t` out of the buffer pool and the page cache, so that reads wait for
/// the device and queue up) and returns its answer and how many reads were advised meanwhile.
async fn cold(server: &TestServer, client: &Client, sql: &str) -> (i64, i64) {
    evict_cold(server, client, "t").await;
    let before = advised(client).await;
    let answer = int(client, sql).await;
    (answer, advised(client).await - before)
}

/// Starts a server with `args` and loads `t` (a = i % 1000, in order of i) with an index on
/// `a`; effective_io_concurrency 64.
async fn setup(name: &str, args: &[&str]) -> (TestServer, Client) {
    let (server, client) = start_with_modulo_t(name, args, ROWS).await;
    client
        .batch_execute("SET effective_io_concurrency = 64")
        .await
        .unwrap();
    let plan = rows(&client, &format!("EXPLAIN (COSTS OFF) {BITMAP}")).await;
    let plan: Vec<String> = plan.into_iter().filter_map(|r| r[0].clone()).collect();
    assert!(
        plan.iter().any(|l| l.contains("Bitmap Heap Scan on t")),
        "expected a bitmap heap scan: {plan:#?}"
    );
    (server, client)
}

/// `advises`: the bitmap heap scan's reads get advice under `pg18`; `seq_always`: a Seq
/// Scan's reads get advice under `always` (only the session's own advice under `sync` is
/// certain to: a worker advises only reads that wait in its queue, and a Seq Scan's bulk-read
/// ring keeps just two reads in flight).
async fn check_policies(name: &str, args: &[&str], advises: bool, seq_always: bool) {
    let (server, client) = setup(name, args).await;
    let expected = int(&client, "SELECT count(*) FROM t WHERE a + 0 < 5").await;
    assert_eq!(expected, ROWS / 200);

    let (answer, pg18) = cold(&server, &client, BITMAP).await;
    assert_eq!(answer, expected);
    if advises {
        assert!(
            pg18 > 0,
            "{name}: no read of the bitmap heap scan was advised"
        );
    } else {
        assert_eq!(pg18, 0, "{name}: direct I/O reads must not be advised");
    }

    let (answer, seq) = cold(&server, &client, SEQ).await;
    assert_eq!(answer, ROWS);
    assert_eq!(seq, 0, "{name}: a Seq Scan's sequential reads were advised");

    client
        .batch_execute("SET read_stream_advice = never")
        .await
        .unwrap();
    let (answer, never) = cold(&server, &client, BITMAP).await;
    assert_eq!(answer, expected);
    assert_eq!(never, 0, "{name}: read_stream_advice = never, yet advised");

    client
        .batch_execute("SET read_stream_advice = always")
        .await
        .unwrap();
    let (answer, always) = cold(&server, &client, SEQ).await;
    assert_eq!(answer, ROWS);
    if seq_always {
        assert!(
            always > 0,
            "{name}: read_stream_advice = always advised nothing"
        );
    } else if !advises {
        assert_eq!(always, 0, "{name}: direct I/O reads must not be advised");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_advises_under_sync() {
    check_policies("advice-sync", &["-c", "io_method=sync"], true, true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_io_worker_advises_queued_reads() {
    check_policies(
        "advice-worker",
        &["-c", "io_method=worker", "-c", "io_workers=1"],
        true,
        false,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_io_is_never_advised() {
    check_policies(
        "advice-direct",
        &[
            "-c",
            "io_method=worker",
            "-c",
            "io_workers=1",
            "-c",
            "debug_io_direct=data",
        ],
        false,
        false,
    )
    .await;
}

/// A cold bitmap heap scan at `effective_io_concurrency = 1` on a server started with
/// `args`, its answer checked against a Seq Scan's: the reads it advised, and how many
/// batches of reads client backends handed to the I/O method meanwhile
/// (`pg_stat_aio.submissions`).
async fn cold_bitmap_scan_at_eic_1(name: &str, args: &[&str]) -> (i64, i64) {
    let (server, client) = setup(name, args).await;
    client
        .batch_execute("SET effective_io_concurrency = 1")
        .await
        .unwrap();
    let submissions = "SELECT submissions FROM pg_stat_aio WHERE backend_type = 'client backend'";
    let expected = int(&client, "SELECT count(*) FROM t WHERE a + 0 < 5").await;
    let before = int(&client, submissions).await;
    let (answer, advised) = cold(&server, &client, BITMAP).await;
    assert_eq!(answer, expected);
    let after = int(&client, submissions).await;
    (advised, after - before)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_issuer_takes_back_reads_no_worker_started() {
    let args = [
        "-c",
        "io_method=worker",
        "-c",
        "io_workers=1",
        "-c",
        "debug_io_direct=data",
    ];
    let (server, client) = setup("advice-take-back", &args).await;
    client
        .batch_execute("SET effective_io_concurrency = 1")
        .await
        .unwrap();
    let expected = int(&client, "SELECT count(*) FROM t WHERE a + 0 < 5").await;
    let taken_back = "SELECT taken_back FROM pg_stat_aio WHERE backend_type = 'client backend'";
    let before = int(&client, taken_back).await;
    // Whether the worker starts a queued read before its issuer waits for it is a race
    // the issuer usually wins; a few cold scans give it its chances on a busy machine.
    let mut after = before;
    for _ in 0..3 {
        let (answer, _) = cold(&server, &client, BITMAP).await;
        assert_eq!(answer, expected);
        after = int(&client, taken_back).await;
        if after > before {
            return;
        }
    }
    panic!("no read was taken back from the queue in 3 cold scans ({before} -> {after})");
}

/// Under `worker` and `io_uring` with buffered files, a stream at
/// `effective_io_concurrency = 1` reads its blocks itself and advises the read ahead, as
/// under `sync`: reads are advised, none is handed to the I/O method, and the answer is the
/// same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_at_eic_1_reads_in_the_session_with_advice() {
    let (advised, submitted) = cold_bitmap_scan_at_eic_1(
        "advice-worker-eic1",
        &["-c", "io_method=worker", "-c", "io_workers=1"],
    )
    .await;
    assert!(advised > 0, "no read was advised at eic 1");
    assert_eq!(submitted, 0, "reads were queued for the workers at eic 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn io_uring_at_eic_1_reads_in_the_session_with_advice() {
    let (advised, submitted) =
        cold_bitmap_scan_at_eic_1("advice-uring-eic1", &["-c", "io_method=io_uring"]).await;
    assert!(advised > 0, "no read was advised at eic 1");
    assert_eq!(submitted, 0, "reads were submitted to io_uring at eic 1");
}
