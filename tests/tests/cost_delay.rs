//! The cost-based vacuum delay end to end (`vacuum_cost_delay`, `vacuum_cost_limit`, the
//! three page costs, `track_cost_delay_timing`): a throttled VACUUM shows the
//! `Timeout` / `VacuumDelay` wait event and a growing `delay_time` while it runs, and its
//! and ANALYZE's VERBOSE output carry PostgreSQL 18's `delay time:` line, which says
//! 0.000 ms without a delay and is absent without the timing.

use iolab_tests::tokio_postgres::Client;
use iolab_tests::waiting::{exec, watch};
use iolab_tests::{rows, TestServer};

/// A throttle that naps at every page: each page found or read costs the whole limit.
const THROTTLE: &str = "SET vacuum_cost_delay = '2ms'; SET vacuum_cost_limit = 100; \
     SET vacuum_cost_page_hit = 100; SET vacuum_cost_page_miss = 100; \
     SET track_cost_delay_timing = on;";

async fn table_with_dead_rows(client: &Client, name: &str) {
    exec(
        client,
        &format!(
            "CREATE TABLE {name} (i int, f text);
             INSERT INTO {name} SELECT i, md5(i::text) FROM generate_series(1, 60000) g(i);
             DELETE FROM {name} WHERE i % 3 = 0;"
        ),
    )
    .await;
}

/// The `delay time:` figures of psql's stderr, in milliseconds.
fn delay_times(stderr: &str) -> Vec<f64> {
    (stderr.lines())
        .filter_map(|l| l.strip_prefix("delay time: "))
        .map(|v| v.strip_suffix(" ms").unwrap().parse().unwrap())
        .collect()
}

/// psql's stderr for `sql`'s statements, each its own `-c` (VACUUM may not share a
/// transaction).
fn psql_stderr(server: &TestServer, sql: &str) -> String {
    let args: Vec<&str> = (sql.split(';'))
        .filter(|s| !s.trim().is_empty())
        .flat_map(|s| ["-c", s])
        .collect();
    let out = server.psql(&args);
    assert!(out.status.success(), "{sql}: {out:?}");
    String::from_utf8(out.stderr).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_vacuum_naps_and_says_how_long() {
    let server = TestServer::start("cost-delay");
    let worker = server.client().await;
    let watcher = server.client().await;
    table_with_dead_rows(&worker, "t").await;
    table_with_dead_rows(&worker, "u").await;

    // While the throttled VACUUM runs, another session sees it nap.
    exec(&worker, THROTTLE).await;
    let seen = watch(
        &worker,
        &watcher,
        "VACUUM t",
        "SELECT a.wait_event_type, a.wait_event, p.delay_time::text
           FROM pg_stat_progress_vacuum p JOIN pg_stat_activity a USING (pid)",
    )
    .await;
    assert!(
        (seen.iter()).any(|r| r[0] == "Timeout" && r[1] == "VacuumDelay"),
        "no VacuumDelay wait seen in {} samples: {seen:?}",
        seen.len()
    );
    let delays: Vec<f64> = seen.iter().map(|r| r[2].parse().unwrap()).collect();
    assert!(delays.windows(2).all(|w| w[0] <= w[1]), "{delays:?}");
    assert!(delays.last().is_some_and(|&d| d > 0.0), "{delays:?}");
    let waits = "SELECT count(*)::text FROM pg_stat_activity WHERE wait_event = 'VacuumDelay'";
    assert_eq!(rows(&watcher, waits).await[0][0].as_deref(), Some("0"));

    // VERBOSE says how long it napped: each nap lasts at least vacuum_cost_delay.
    let throttled = psql_stderr(&server, &format!("{THROTTLE} VACUUM (VERBOSE) u"));
    let slept = delay_times(&throttled);
    assert_eq!(slept.len(), 1, "{throttled}");
    assert!(slept[0] >= 2.0, "{throttled}");
    let analyzed = psql_stderr(&server, &format!("{THROTTLE} ANALYZE (VERBOSE) u"));
    let slept = delay_times(&analyzed);
    assert!(slept.len() == 1 && slept[0] >= 2.0, "{analyzed}");
    let line_order: Vec<&str> = (analyzed.lines())
        .filter(|l| l.starts_with("delay time:") || l.starts_with("avg read rate:"))
        .collect();
    assert!(line_order[0].starts_with("delay time:"), "{analyzed}");

    // Timed without a delay: 0.000 ms. Not timed: no line.
    let unthrottled = psql_stderr(
        &server,
        "SET track_cost_delay_timing = on; ANALYZE (VERBOSE) u",
    );
    assert_eq!(delay_times(&unthrottled), vec![0.0], "{unthrottled}");
    let untimed = psql_stderr(
        &server,
        "SET vacuum_cost_delay = '2ms'; SET vacuum_cost_limit = 1; ANALYZE (VERBOSE) u",
    );
    assert!(delay_times(&untimed).is_empty(), "{untimed}");
    assert!(untimed.contains("buffer usage: "), "{untimed}");
}
