//! `pg_stat_progress_vacuum | analyze | create_index | cluster | copy`, watched from a second
//! session while the command runs: the row names the session and the table, its phase is
//! one of PostgreSQL's, its counts grow up to their totals; once the command ends the row
//! is gone. A COPY FROM STDIN is held open half-way, so its figures are exact.

use std::time::{Duration, Instant};

use futures::SinkExt;
use iolab_tests::waiting::{exec, watch};
use iolab_tests::{int, rows, TestServer};

const ROWS: i64 = 1_000_000;

fn numbers(row: &[String], from: usize) -> Vec<i64> {
    row[from..]
        .iter()
        .map(|v| v.parse().expect("a number"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vacuum_analyze_and_create_index_show_their_progress() {
    let server = TestServer::start("progress-maintenance");
    let worker = server.client().await;
    let watcher = server.client().await;
    exec(
        &worker,
        &format!(
            "CREATE TABLE pr (i int, f text);
             INSERT INTO pr SELECT i, md5(i::text) FROM generate_series(1, {ROWS}) g(i);
             CREATE INDEX pr_i ON pr (i);
             DELETE FROM pr WHERE i % 3 = 0;"
        ),
    )
    .await;
    let worker_pid = int(&worker, "SELECT pg_backend_pid()").await.to_string();
    let oid = int(&worker, "SELECT 'pr'::regclass::oid").await.to_string();
    let blocks = int(&worker, "SELECT pg_relation_size('pr') / 8192").await;

    let seen = watch(
        &worker,
        &watcher,
        "VACUUM pr",
        "SELECT pid, relid, phase, heap_blks_total, heap_blks_scanned, heap_blks_vacuumed,
                index_vacuum_count, indexes_total, indexes_processed, num_dead_item_ids
           FROM pg_stat_progress_vacuum",
    )
    .await;
    assert!(!seen.is_empty(), "VACUUM's progress was never seen");
    let phases = [
        "scanning heap",
        "vacuuming indexes",
        "vacuuming heap",
        "performing final cleanup",
    ];
    for row in &seen {
        assert_eq!((&row[0], &row[1]), (&worker_pid, &oid));
        assert!(phases.contains(&row[2].as_str()), "{row:?}");
        let n = numbers(row, 3);
        assert_eq!(n[0], blocks);
        assert!(n[1] <= n[0] && n[2] <= n[0], "{row:?}");
        assert_eq!(n[4], 1, "one index");
    }
    let scanned: Vec<i64> = seen.iter().map(|r| numbers(r, 3)[1]).collect();
    assert!(scanned.windows(2).all(|w| w[0] <= w[1]), "{scanned:?}");

    let seen = watch(
        &worker,
        &watcher,
        "ANALYZE pr",
        "SELECT relid, phase, sample_blks_total, sample_blks_scanned FROM pg_stat_progress_analyze",
    )
    .await;
    assert!(!seen.is_empty(), "ANALYZE's progress was never seen");
    for row in &seen {
        assert_eq!(row[0], oid);
        let phases = [
            "acquiring sample rows",
            "computing statistics",
            "finalizing analyze",
        ];
        assert!(phases.contains(&row[1].as_str()), "{row:?}");
        let n = numbers(row, 2);
        assert!(n[1] <= n[0] && n[0] <= blocks, "{row:?}");
    }

    let seen = watch(
        &worker,
        &watcher,
        "CREATE INDEX pr_f ON pr (f)",
        "SELECT relid, index_relid <> 0, command, phase, blocks_total, blocks_done,
                tuples_total, tuples_done
           FROM pg_stat_progress_create_index",
    )
    .await;
    assert!(!seen.is_empty(), "CREATE INDEX's progress was never seen");
    for row in &seen {
        assert_eq!((&*row[0], &*row[1], &*row[2]), (&*oid, "t", "CREATE INDEX"));
        let n = numbers(row, 4);
        assert!(n[1] <= n[0] && n[3] <= n[2].max(n[3]), "{row:?}");
        match row[3].as_str() {
            "building index: scanning table" => {}
            "building index: sorting live tuples" | "building index: loading tuples in tree" => {
                assert_eq!(n[1], n[0], "the scan is over: {row:?}");
                assert_eq!(n[2], ROWS - ROWS / 3, "live tuples: {row:?}");
                assert!(n[3] <= n[2], "{row:?}");
            }
            other => panic!("phase {other}"),
        }
    }

    let seen = watch(
        &worker,
        &watcher,
        "REINDEX INDEX pr_f",
        "SELECT relid, command, phase FROM pg_stat_progress_create_index",
    )
    .await;
    assert!(!seen.is_empty(), "REINDEX's progress was never seen");
    for row in &seen {
        assert_eq!((&*row[0], &*row[1]), (&*oid, "REINDEX"), "{row:?}");
        assert!(row[2].starts_with("building index: "), "{row:?}");
    }

    // CLUSTER rebuilds the indexes as a step of its own: the session keeps its
    // pg_stat_progress_cluster row through it, and shows none in _create_index.
    let seen = watch(
        &worker,
        &watcher,
        "CLUSTER pr USING pr_i",
        "SELECT 'cluster', relid, command, phase, index_rebuild_count
           FROM pg_stat_progress_cluster
         UNION ALL
         SELECT 'create index', relid, command, phase, 0 FROM pg_stat_progress_create_index",
    )
    .await;
    let phases = [
        "seq scanning heap",
        "sorting tuples",
        "writing new heap",
        "swapping relation files",
        "rebuilding index",
        "performing final cleanup",
    ];
    for row in &seen {
        assert_eq!(
            (&*row[0], &*row[1], &*row[2]),
            ("cluster", &*oid, "CLUSTER"),
            "{row:?}"
        );
        assert!(phases.contains(&row[3].as_str()), "{row:?}");
    }
    let rebuilt: Vec<i64> = (seen.iter())
        .filter(|r| r[3] == "rebuilding index")
        .map(|r| r[4].parse().unwrap())
        .collect();
    assert!(!rebuilt.is_empty(), "no index rebuild seen: {seen:?}");
    assert!(rebuilt.windows(2).all(|w| w[0] <= w[1]) && rebuilt.iter().all(|&n| n <= 2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_from_stdin_shows_bytes_and_rows_as_they_arrive() {
    let server = TestServer::start("progress-copy");
    let worker = server.client().await;
    let watcher = server.client().await;
    exec(&worker, "CREATE TABLE c (i int, f text)").await;
    let oid = int(&worker, "SELECT 'c'::regclass::oid").await;
    let sink = (worker.copy_in::<_, &'static [u8]>("COPY c FROM STDIN"))
        .await
        .unwrap();
    tokio::pin!(sink);
    let data: String = (1..=10_000).map(|i| format!("{i}\tvalue {i}\n")).collect();
    let sent: &'static [u8] = Box::leak(data.clone().into_bytes().into_boxed_slice());
    sink.send(sent).await.unwrap();
    sink.flush().await.unwrap();
    let progress = "SELECT relid, command, type, bytes_processed, bytes_total, tuples_processed,
                           tuples_excluded FROM pg_stat_progress_copy";
    // The server takes the data in as it comes; wait until it has taken all of it in and
    // appended what it could.
    let started = Instant::now();
    let row = loop {
        let got = rows(&watcher, progress).await;
        let row: Vec<String> = got[0].iter().map(|v| v.clone().unwrap()).collect();
        let taken = row[3] == data.len().to_string() && row[5] != "0";
        if taken || started.elapsed() > Duration::from_secs(20) {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let bytes = data.len().to_string();
    let want = [
        &*oid.to_string(),
        "COPY FROM",
        "PIPE",
        &*bytes,
        "0",
        "8192",
        "0",
    ];
    assert_eq!(row, want, "rows are appended 8192 at a time");
    let copied = sink.finish().await.unwrap();
    assert_eq!(copied, 10_000);
    assert!(rows(&watcher, progress).await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_to_stdout_shows_the_rows_sent_while_the_client_reads() {
    use iolab_tests::raw::{self, Backend, RawConnection, Received, REPLY_TIMEOUT};
    let server = TestServer::start("progress-copy-to");
    let watcher = server.client().await;
    exec(
        &watcher,
        "CREATE TABLE big AS SELECT i, md5(i::text) AS f FROM generate_series(1, 600000) g(i)",
    )
    .await;
    let oid = int(&watcher, "SELECT 'big'::regclass::oid")
        .await
        .to_string();
    // COPY TO STDOUT through the simple protocol, read up to its first data: the client
    // then stops reading and the server waits on the full socket.
    let mut conn = tokio::task::block_in_place(|| {
        let mut conn = RawConnection::start(server.port);
        conn.send(&raw::query("COPY big TO STDOUT"));
        loop {
            match conn.next(REPLY_TIMEOUT) {
                Received::Message(Backend::Other(b'd', _)) => break conn,
                Received::Message(_) => {}
                other => panic!("before the first row: {other:?}"),
            }
        }
    });
    let progress = "SELECT relid::text, command, type, tuples_processed FROM pg_stat_progress_copy";
    let seen = rows(&watcher, progress).await;
    let row: Vec<String> = seen[0].iter().map(|v| v.clone().unwrap()).collect();
    assert_eq!(row[..3], [&*oid, "COPY TO", "PIPE"]);
    let sent: i64 = row[3].parse().unwrap();
    assert!(sent > 0 && sent <= 600_000, "{row:?}");
    // Read the rest: every row arrives, and the progress row is gone.
    let replies = tokio::task::block_in_place(|| conn.until_ready());
    let data = replies
        .iter()
        .filter(|m| matches!(m, Backend::Other(b'd', _)))
        .count();
    assert_eq!(data + 1, 600_000, "one CopyData per row");
    assert!(rows(&watcher, progress).await.is_empty());
}
