//! The background writer end to end, in a pool much smaller than the tables: after an
//! UPDATE dirties pages and a scan of another table moves the clock sweep over them, it
//! writes dirty buffers ahead of the hand — `pg_stat_bgwriter.buffers_clean` equal to
//! `pg_stat_io`'s `background writer` writes —, its writes survive a crash, and with
//! `bgwriter_lru_maxpages = 0` it writes nothing while `buffers_alloc` still counts. And
//! `checkpoint_flush_after`: a checkpoint asks for writeback of every block it wrote, none
//! when it is 0.

use std::time::{Duration, Instant};

use iolab_tests::{int, TestServer};
use tokio_postgres::Client;

const ROWS: i64 = 70_000;

async fn exec(client: &Client, sql: &str) {
    client
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

/// Two tables of ~4 MB each in a 2 MB pool; `a`'s every seventh row updated, then `b`
/// scanned twice (its buffers take the place of `a`'s).
async fn dirty_then_scan(client: &Client) {
    exec(
        client,
        &format!(
            "CREATE TABLE a AS SELECT i, md5(i::text) AS f FROM generate_series(1, {ROWS}) g(i);
             CREATE TABLE b AS SELECT i, md5(i::text) AS f FROM generate_series(1, {ROWS}) g(i);
             CHECKPOINT;
             UPDATE a SET f = 'x' || f WHERE i % 7 = 0;
             SELECT count(*) FROM b;
             SELECT count(*) FROM b;"
        ),
    )
    .await;
}

/// `pg_stat_bgwriter`'s `column`, after waiting (at most 20 s) for `until` to hold of it.
async fn bgwriter(client: &Client, column: &str, until: impl Fn(i64) -> bool) -> i64 {
    let start = Instant::now();
    loop {
        let value = int(client, &format!("SELECT {column} FROM pg_stat_bgwriter")).await;
        if until(value) || start.elapsed() > Duration::from_secs(20) {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const UPDATED_SUM: &str = "SELECT sum(length(f)) FROM a";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn it_writes_ahead_of_the_clock_sweep() {
    let args = ["-c", "shared_buffers=2MB", "-c", "bgwriter_delay=10ms"];
    let mut server = TestServer::start_with("bgwriter-writes", &args);
    let client = server.client().await;
    dirty_then_scan(&client).await;
    let clean = bgwriter(&client, "buffers_clean", |n| n > 0).await;
    assert!(clean > 0, "the background writer wrote nothing");
    assert!(bgwriter(&client, "buffers_alloc", |n| n > 0).await > 0);
    // Between the two readings it may write more: read both in one statement.
    exec(&client, "SELECT pg_stat_force_next_flush()").await;
    let same = int(
        &client,
        "SELECT count(*) FROM pg_stat_bgwriter, pg_stat_io
          WHERE backend_type = 'background writer' AND object = 'relation'
            AND context = 'normal' AND writes = buffers_clean",
    )
    .await;
    assert_eq!(same, 1, "pg_stat_io counts the background writer's writes");
    // pg_stat_reset_shared('bgwriter') starts it over.
    let reset_at =
        "SELECT (extract(epoch FROM stats_reset) * 1000000)::bigint FROM pg_stat_bgwriter";
    let before = int(&client, reset_at).await;
    exec(&client, "SELECT pg_stat_reset_shared('bgwriter')").await;
    assert!(int(&client, reset_at).await > before);
    // What it wrote is what the UPDATE made: it survives a crash.
    let sum = int(&client, UPDATED_SUM).await;
    drop(client);
    server.kill();
    server.restart();
    let client = server.client().await;
    assert_eq!(int(&client, UPDATED_SUM).await, sum);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lru_maxpages_0_turns_it_off() {
    let args = [
        "-c",
        "shared_buffers=2MB",
        "-c",
        "bgwriter_delay=10ms",
        "-c",
        "bgwriter_lru_maxpages=0",
    ];
    let server = TestServer::start_with("bgwriter-off", &args);
    let client = server.client().await;
    dirty_then_scan(&client).await;
    // Allocations are still counted, each round...
    assert!(bgwriter(&client, "buffers_alloc", |n| n > 1000).await > 1000);
    // ...but nothing is written: the backends wrote the dirty buffers themselves.
    assert_eq!(
        int(&client, "SELECT buffers_clean FROM pg_stat_bgwriter").await,
        0
    );
    exec(&client, "SELECT pg_stat_force_next_flush()").await;
    let client_writes = int(
        &client,
        "SELECT writes FROM pg_stat_io WHERE backend_type = 'client backend'
            AND object = 'relation' AND context = 'normal'",
    )
    .await;
    assert!(client_writes > 0);
}

/// The checkpointer's `writes` and `writebacks` in `pg_stat_io` after a CHECKPOINT of a
/// freshly loaded table, on a server started with `args`.
async fn checkpoint_writes_and_writebacks(name: &str, args: &[&str]) -> (i64, i64) {
    let server = TestServer::start_with(name, args);
    let client = server.client().await;
    exec(
        &client,
        "CREATE TABLE w AS SELECT i, md5(i::text) AS f FROM generate_series(1, 50000) g(i);
         CHECKPOINT;
         SELECT pg_stat_force_next_flush();",
    )
    .await;
    let row = "FROM pg_stat_io WHERE backend_type = 'checkpointer' AND object = 'relation'
                AND context = 'normal'";
    let writes = int(&client, &format!("SELECT writes {row}")).await;
    let writebacks = int(&client, &format!("SELECT writebacks {row}")).await;
    (writes, writebacks)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoint_flush_after_asks_the_kernel_to_write_back() {
    let (writes, writebacks) = checkpoint_writes_and_writebacks("writeback-on", &[]).await;
    assert!(writes > 0);
    assert_eq!(
        writebacks, writes,
        "every block written is asked to be written back"
    );
    let off = ["-c", "checkpoint_flush_after=0"];
    let (writes, writebacks) = checkpoint_writes_and_writebacks("writeback-off", &off).await;
    assert!(writes > 0);
    assert_eq!(writebacks, 0);
}
