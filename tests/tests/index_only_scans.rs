//! Index Only Scans: a query that needs no column but an index's key reads the keys from
//! the index, and the heap only for pages the visibility map does not mark all-visible
//! (`Heap Fetches:`), as in PostgreSQL 18. The plans are PostgreSQL 18's for the same
//! table (EXPLAIN with COSTS OFF), the answers those of a Seq Scan, under concurrent
//! changes, old snapshots and restarts.

use iolab_tests::{create_shuffled_t, evict, figure, int, plan, rows, TestServer};
use tokio_postgres::Client;

async fn explain(c: &Client, query: &str) -> Vec<String> {
    plan(c, &format!("EXPLAIN (COSTS OFF) {query}")).await
}

/// PostgreSQL 18's plan of `SELECT count(*) FROM t WHERE a < 1000` without index-only scans.
const BITMAP_BELOW_1000: [&str; 5] = [
    "Aggregate",
    "  ->  Bitmap Heap Scan on t",
    "        Recheck Cond: (a < 1000)",
    "        ->  Bitmap Index Scan on t_a_idx",
    "              Index Cond: (a < 1000)",
];

const INDEX_PATHS_ONLY: &str = "SET enable_bitmapscan = off; SET enable_seqscan = off";
const RESET: &str = "RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_seqscan";

/// The rows of `query` read by a Seq Scan (every index path off).
async fn seq_rows(c: &Client, query: &str) -> Vec<Vec<Option<String>>> {
    c.batch_execute(
        "SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_seqscan = on",
    )
    .await
    .unwrap();
    let lines = explain(c, query).await;
    assert!(
        !lines.iter().any(|l| l.contains("Index")),
        "{query}: {lines:#?}"
    );
    let r = rows(c, query).await;
    c.batch_execute(RESET).await.unwrap();
    r
}

/// `Heap Fetches:` and the buffers touched (hit + read) of `query`'s Index Only Scan (index
/// paths only, from now on in the session).
async fn heap_fetches_and_buffers(c: &Client, query: &str) -> (f64, f64) {
    c.batch_execute(INDEX_PATHS_ONLY).await.unwrap();
    let lines = plan(
        c,
        &format!("EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) {query}"),
    )
    .await;
    assert!(
        lines.iter().any(|l| l.contains("Index Only Scan")),
        "{query}: {lines:#?}"
    );
    let fetches = figure(&lines, "Heap Fetches:", "Heap Fetches: ").unwrap();
    let buffers = figure(&lines, "Buffers:", "hit=").unwrap_or(0.0)
        + figure(&lines, "Buffers:", "read=").unwrap_or(0.0);
    (fetches, buffers)
}

#[tokio::test(flavor = "multi_thread")]
async fn plans_are_postgresql_18s() {
    let server = TestServer::start("index-only-plans");
    let c = server.client().await;
    create_shuffled_t(&c).await;

    // Before any VACUUM nothing is all-visible: a bitmap reads fewer heap pages.
    assert_eq!(
        explain(&c, "SELECT count(*) FROM t WHERE a < 1000").await,
        BITMAP_BELOW_1000
    );
    // In the index's order, the index alone even so.
    assert_eq!(
        explain(&c, "SELECT a FROM t ORDER BY a DESC LIMIT 5").await,
        ["Limit", "  ->  Index Only Scan Backward using t_a_idx on t"]
    );
    c.batch_execute("VACUUM t").await.unwrap();
    let all_visible = "SELECT relallvisible FROM pg_class WHERE relname = 't'";
    let pages = int(&c, "SELECT relpages FROM pg_class WHERE relname = 't'").await;
    assert!(pages > 1000);
    assert_eq!(int(&c, all_visible).await, pages, "every page all-visible");
    {
        assert_eq!(
            explain(&c, "SELECT count(*) FROM t WHERE a < 1000").await,
            [
                "Aggregate",
                "  ->  Index Only Scan using t_a_idx on t",
                "        Index Cond: (a < 1000)"
            ]
        );
        assert_eq!(
            explain(
                &c,
                "SELECT a FROM t WHERE a BETWEEN 100 AND 200 AND a % 2 = 0"
            )
            .await,
            [
                "Index Only Scan using t_a_idx on t",
                "  Index Cond: ((a >= 100) AND (a <= 200))",
                "  Filter: ((a % 2) = 0)"
            ]
        );
        assert_eq!(
            explain(&c, "SELECT a FROM t ORDER BY a DESC LIMIT 5").await,
            ["Limit", "  ->  Index Only Scan Backward using t_a_idx on t"]
        );
        assert_eq!(
            explain(&c, "SELECT max(a) FROM t").await,
            [
                "Result",
                "  InitPlan 1",
                "    ->  Limit",
                "          ->  Index Only Scan Backward using t_a_idx on t",
                "                Index Cond: (a IS NOT NULL)"
            ]
        );
        assert_eq!(
            explain(&c, "SELECT count(*) FROM t WHERE a IS NULL").await,
            [
                "Aggregate",
                "  ->  Index Only Scan using t_a_idx on t",
                "        Index Cond: (a IS NULL)"
            ]
        );
        // A column the index does not hold: the heap must be read.
        assert_eq!(
            explain(&c, "SELECT a, b FROM t WHERE a < 1000").await,
            [
                "Bitmap Heap Scan on t",
                "  Recheck Cond: (a < 1000)",
                "  ->  Bitmap Index Scan on t_a_idx",
                "        Index Cond: (a < 1000)"
            ]
        );
    }

    // The Result runs its InitPlan before its row: PostgreSQL adds the InitPlan's total cost
    // to both of the Result's (Result (cost=0.45..0.46) over Limit (cost=0.42..0.45)).
    let costed = plan(&c, "EXPLAIN SELECT max(a) FROM t").await;
    let costs = |line: &str| -> (f64, f64) {
        let c = &line[line.find("cost=").unwrap() + 5..];
        let (startup, rest) = c.split_once("..").unwrap();
        let total = rest.split_whitespace().next().unwrap();
        (startup.parse().unwrap(), total.parse().unwrap())
    };
    let (result, limit) = (costs(&costed[0]), costs(&costed[2]));
    assert!(costed[2].contains("Limit") && limit.1 > 0.0, "{costed:#?}");
    assert!((result.0 - limit.1).abs() < 0.005, "{costed:#?}");
    assert!((result.1 - (limit.1 + 0.01)).abs() < 0.005, "{costed:#?}");

    // 10 % of the rows: with nothing all-visible every row costs a random heap page and
    // the bitmap wins; all-visible, the index alone.
    let tenth = "SELECT count(*) FROM t WHERE a < 20000";
    assert_eq!(
        explain(&c, tenth).await,
        [
            "Aggregate",
            "  ->  Index Only Scan using t_a_idx on t",
            "        Index Cond: (a < 20000)"
        ]
    );
    c.batch_execute("UPDATE t SET b = b").await.unwrap(); // every page changed
    assert_eq!(int(&c, all_visible).await, 0);
    assert!(
        !explain(&c, tenth).await[1].contains("Index Only Scan"),
        "nothing is all-visible after the UPDATE"
    );
    c.batch_execute("VACUUM t").await.unwrap();

    // The whole table: a Seq Scan is cheaper, unless disabled.
    assert_eq!(
        explain(&c, "SELECT count(*) FROM t").await,
        ["Aggregate", "  ->  Seq Scan on t"]
    );
    c.batch_execute("SET enable_seqscan = off").await.unwrap();
    assert_eq!(
        explain(&c, "SELECT count(*) FROM t").await,
        ["Aggregate", "  ->  Index Only Scan using t_a_idx on t"]
    );
    c.batch_execute("RESET enable_seqscan").await.unwrap();

    // enable_indexonlyscan = off: the plain index paths; enable_indexscan = off disables
    // index-only scans too.
    c.batch_execute("SET enable_indexonlyscan = off")
        .await
        .unwrap();
    assert_eq!(
        explain(&c, "SELECT count(*) FROM t WHERE a < 1000").await,
        BITMAP_BELOW_1000
    );
    assert_eq!(
        explain(&c, "SELECT a FROM t ORDER BY a DESC LIMIT 5").await,
        ["Limit", "  ->  Index Scan Backward using t_a_idx on t"]
    );
    c.batch_execute(
        "RESET enable_indexonlyscan; SET enable_indexscan = off; SET enable_bitmapscan = off;
         SET enable_seqscan = off",
    )
    .await
    .unwrap();
    assert_eq!(
        explain(&c, "SELECT a FROM t WHERE a < 1000").await,
        [
            "Index Only Scan using t_a_idx on t",
            "  Disabled: true",
            "  Index Cond: (a < 1000)"
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_match_a_seq_scan_and_all_visible_pages_are_not_read() {
    let mut server = TestServer::start("index-only-answers");
    let c = server.client().await;
    create_shuffled_t(&c).await;
    c.batch_execute(
        "CREATE TABLE w AS SELECT md5(i::text) AS s, i FROM generate_series(1, 20000) i;
         CREATE INDEX ON w(s);
         ANALYZE w;",
    )
    .await
    .unwrap();
    let queries = [
        "SELECT count(*) FROM t WHERE a < 1000",
        "SELECT a FROM t WHERE a BETWEEN 100 AND 2000 AND a % 3 = 0 ORDER BY a",
        "SELECT a FROM t ORDER BY a DESC LIMIT 25",
        "SELECT max(a), min(a) FROM t",
        "SELECT count(*) FROM t WHERE a IS NULL",
        "SELECT a FROM t WHERE a IS NULL",
        "SELECT s FROM w WHERE s < '08' ORDER BY s",
    ];
    let count = "SELECT count(*) FROM t WHERE a < 20000";
    let check = |phase: &'static str| {
        let c = &c;
        async move {
            for q in queries {
                // Index paths only: the Index Only Scan even with nothing all-visible.
                c.batch_execute(INDEX_PATHS_ONLY).await.unwrap();
                let lines = explain(c, q).await;
                assert!(
                    lines.iter().any(|l| l.contains("Index Only Scan")),
                    "{phase}: {q}: {lines:#?}"
                );
                let (from_index, from_heap) = (rows(c, q).await, seq_rows(c, q).await);
                assert!(!from_index.is_empty(), "{phase}: {q}");
                assert_eq!(from_index, from_heap, "{phase}: {q}");
            }
        }
    };

    // Nothing all-visible: every TID's tuple is fetched from the heap.
    check("before VACUUM").await;
    let (fetches, _) = heap_fetches_and_buffers(&c, "SELECT count(*) FROM t WHERE a < 1000").await;
    assert!(fetches >= 499.0, "every TID fetched: {fetches}");

    // All-visible: no heap page is read, only the index's leaves.
    iolab_tests::run_script(&c, "VACUUM t; VACUUM w")
        .await
        .unwrap();
    check("after VACUUM").await;
    let heap_pages = int(&c, "SELECT pg_relation_size('t') / 8192").await as f64;
    let (fetches, buffers) = heap_fetches_and_buffers(&c, count).await;
    assert_eq!(fetches, 0.0);
    assert!(
        buffers < heap_pages / 20.0,
        "{buffers} buffers for 10 % of a {heap_pages}-page table"
    );
    let tenth = int(&c, count).await;
    assert_eq!(tenth, int(&c, &count.replace("count(*)", "count(a)")).await);
    // Its leaves are read ahead, several to a read (EXPLAIN (IO)'s average I/O size).
    evict(&c, "t_a_idx").await;
    let lines = plan(&c, &format!("EXPLAIN (ANALYZE, BUFFERS, IO) {count}")).await;
    let size = figure(&lines, "I/O: stalls=", "size=").unwrap_or(0.0);
    assert!(size > 2.0, "{lines:#?}");

    // Another session deletes rows and inserts one without committing. A cursor's scan,
    // begun before the delete and reaching the deleted rows' entries after it, still
    // returns them (their pages are no longer all-visible, and its snapshot sees them);
    // a new statement does not, and nobody sees the insert.
    let old = server.client().await;
    let every = "SELECT a FROM t ORDER BY a";
    heap_fetches_and_buffers(&old, every).await;
    let all_rows = int(&old, "SELECT count(*) FROM t").await;
    old.batch_execute(&format!("BEGIN; DECLARE cur CURSOR FOR {every}"))
        .await
        .unwrap();
    assert_eq!(old.query("FETCH 10 FROM cur", &[]).await.unwrap().len(), 10);
    let writer = server.client().await;
    writer
        .batch_execute("DELETE FROM t WHERE a < 500 OR a > 150000")
        .await
        .unwrap();
    let deleted = seq_rows(&c, "SELECT count(*) FROM t WHERE a < 500").await;
    assert_eq!(deleted[0][0].as_deref(), Some("0"));
    writer
        .batch_execute("BEGIN; INSERT INTO t VALUES (7, 'uncommitted')")
        .await
        .unwrap();
    let now = int(&c, count).await;
    assert!(now < tenth, "{now} after deleting from {tenth}");
    assert_eq!(
        rows(&c, count).await,
        seq_rows(&c, count).await,
        "the deleted rows are gone, the uncommitted one invisible"
    );
    let (fetches, _) = heap_fetches_and_buffers(&c, count).await;
    assert!(fetches > 0.0, "the changed pages are read");
    let rest = old.query("FETCH ALL FROM cur", &[]).await.unwrap().len() as i64;
    assert_eq!(10 + rest, all_rows, "the cursor's snapshot sees every row");
    old.batch_execute("COMMIT").await.unwrap();
    writer.batch_execute("COMMIT").await.unwrap();
    assert_eq!(int(&c, count).await, now + 1);
    check("after the changes").await;

    // A clean restart keeps the visibility map; a crash forgets it, never the answer.
    c.batch_execute("VACUUM t").await.unwrap();
    drop((c, old, writer));
    server.restart();
    let c = server.client().await;
    assert_eq!(heap_fetches_and_buffers(&c, count).await.0, 0.0);
    assert_eq!(int(&c, count).await, now + 1);
    drop(c);
    server.kill();
    server.restart();
    let c = server.client().await;
    let (fetches, _) = heap_fetches_and_buffers(&c, count).await;
    assert!(
        fetches >= (now + 1) as f64,
        "nothing all-visible after a crash"
    );
    assert_eq!(int(&c, count).await, now + 1);
}

/// Keys of every indexable type but float come back as the heap holds them: numeric at its
/// scale, dates, timestamps, booleans, varchar, NULLs, small and big integers.
#[tokio::test(flavor = "multi_thread")]
async fn every_key_type_returns_the_heap_values() {
    let server = TestServer::start("index-only-types");
    let c = server.client().await;
    iolab_tests::run_script(
        &c,
        "CREATE TABLE ty(n numeric(10,2), d date, ts timestamptz, b bool, s varchar(20),
                         i2 smallint, i8 bigint);
         INSERT INTO ty SELECT CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 13 % 1000) / 7.0 END,
                date '2020-01-01' + (i % 500),
                timestamptz '2024-01-01 00:00+00' + (i % 300) * interval '1 hour',
                i % 3 = 0, CASE WHEN i % 5 = 0 THEN NULL ELSE 'v' || (i % 97) END,
                (i % 300)::smallint, i::bigint * 1000000000
           FROM generate_series(1, 20000) i;
         CREATE INDEX ON ty(n); CREATE INDEX ON ty(d); CREATE INDEX ON ty(ts);
         CREATE INDEX ON ty(b); CREATE INDEX ON ty(s); CREATE INDEX ON ty(i2);
         CREATE INDEX ON ty(i8);
         VACUUM ANALYZE ty;",
    )
    .await
    .unwrap();
    for q in [
        "SELECT n FROM ty WHERE n BETWEEN 10 AND 20 ORDER BY n",
        "SELECT n FROM ty WHERE n IS NULL",
        "SELECT d FROM ty WHERE d < '2020-02-01' ORDER BY d",
        "SELECT ts FROM ty WHERE ts > '2024-01-10' ORDER BY ts",
        "SELECT b, count(*) FROM ty WHERE b GROUP BY b",
        "SELECT s FROM ty WHERE s < 'v2' ORDER BY s",
        "SELECT s FROM ty WHERE s IS NULL",
        "SELECT i2 FROM ty WHERE i2 < 5 ORDER BY i2",
        "SELECT i8 FROM ty WHERE i8 < 100000000000 ORDER BY i8",
    ] {
        c.batch_execute(INDEX_PATHS_ONLY).await.unwrap();
        let lines = explain(&c, q).await;
        assert!(
            lines.iter().any(|l| l.contains("Index Only Scan")),
            "{q}: {lines:#?}"
        );
        let from_index = rows(&c, q).await;
        assert!(!from_index.is_empty(), "{q}");
        assert_eq!(from_index, seq_rows(&c, q).await, "{q}");
    }
}
