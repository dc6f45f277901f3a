//! `pg_stat_statements` end to end: statements differing only in constants are one
//! entry (their text with `$n`), through the simple and the extended protocol; calls,
//! rows and the blocks a scan touched add up; times are consistent; failed statements are
//! not recorded; `pg_stat_statements_reset` empties all or one entry.

use iolab_tests::{int, rows, TestServer};
use tokio_postgres::Client;

async fn exec(client: &Client, sql: &str) {
    client
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

/// `calls, rows, shared blocks hit + read` of the entry whose text is `query`.
async fn entry(client: &Client, query: &str) -> Option<(i64, i64, i64)> {
    let sql = format!(
        "SELECT calls, rows, shared_blks_hit + shared_blks_read FROM pg_stat_statements
          WHERE query = '{}'",
        query.replace('\'', "''")
    );
    let got = rows(client, &sql).await;
    let n = |i: usize| got[0][i].as_deref().unwrap().parse::<i64>().unwrap();
    (!got.is_empty()).then(|| (n(0), n(1), n(2)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_add_up_under_their_normalized_text() {
    let server = TestServer::start("stat-statements");
    let c = server.client().await;
    exec(
        &c,
        "CREATE EXTENSION IF NOT EXISTS pg_stat_statements;
         CREATE TABLE t (a int, f text);
         INSERT INTO t SELECT i % 100, md5(i::text) FROM generate_series(1, 20000) g(i);
         SELECT pg_stat_statements_reset();",
    )
    .await;
    let pages = int(&c, "SELECT pg_relation_size('t') / 8192").await;
    // Simple protocol: two constants, one entry; each run scans every page once.
    exec(&c, "SELECT count(*) FROM t WHERE a < 10").await;
    exec(&c, "SELECT count(*) FROM t WHERE a < 20").await;
    let scan = "SELECT count(*) FROM t WHERE a < $1";
    assert_eq!(entry(&c, scan).await, Some((2, 2, 2 * pages)));
    // Extended protocol: the text as prepared, its parameters as they are.
    let stmt = c
        .prepare("SELECT a, f FROM t WHERE a = $1 ORDER BY f")
        .await
        .unwrap();
    for a in [1i32, 2, 3] {
        assert_eq!(c.query(&stmt, &[&a]).await.unwrap().len(), 200);
    }
    let by_a = "SELECT a, f FROM t WHERE a = $1 ORDER BY f";
    assert_eq!(entry(&c, by_a).await.map(|e| (e.0, e.1)), Some((3, 600)));
    // Rows of commands come from their tags.
    exec(&c, "UPDATE t SET f = 'x' WHERE a = 5").await;
    let update = "UPDATE t SET f = $1 WHERE a = $2";
    assert_eq!(entry(&c, update).await.map(|e| (e.0, e.1)), Some((1, 200)));
    // A statement that fails is not recorded.
    assert!(c.batch_execute("SELECT 1 / (a - a) FROM t").await.is_err());
    assert_eq!(entry(&c, "SELECT $1 / (a - a) FROM t").await, None);
    // Times: min ≤ mean ≤ max, total = mean × calls.
    let inconsistent = rows(
        &c,
        "SELECT query, calls, min_exec_time, mean_exec_time, max_exec_time, total_exec_time
           FROM pg_stat_statements
          WHERE NOT (min_exec_time <= mean_exec_time AND mean_exec_time <= max_exec_time
            AND abs(total_exec_time - mean_exec_time * calls) < 0.001 * total_exec_time + 0.001
            AND stddev_exec_time >= 0 AND dbid = 5 AND userid = 10 AND toplevel)",
    )
    .await;
    assert!(inconsistent.is_empty(), "{inconsistent:?}");
    // One entry reset by its queryid, then all.
    let queryid = int(
        &c,
        &format!("SELECT queryid FROM pg_stat_statements WHERE query = '{scan}'"),
    )
    .await;
    exec(
        &c,
        &format!("SELECT pg_stat_statements_reset(0, 0, {queryid})"),
    )
    .await;
    assert_eq!(entry(&c, scan).await, None);
    assert!(entry(&c, by_a).await.is_some());
    exec(&c, "SELECT pg_stat_statements_reset()").await;
    assert_eq!(int(&c, "SELECT count(*) FROM pg_stat_statements").await, 1);
    assert_eq!(
        int(&c, "SELECT dealloc FROM pg_stat_statements_info").await,
        0
    );
}
