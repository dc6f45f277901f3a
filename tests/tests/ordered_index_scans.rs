//! `ORDER BY` an indexed column: the planner weighs an Index Scan in the index's order
//! (forward, or backward for `DESC`) against scanning and sorting, as PostgreSQL 18 does,
//! and an Index Scan chosen so replaces the Sort and stops when the LIMIT has its rows. The plans are PostgreSQL 18's
//! for the same table (EXPLAIN with COSTS OFF); the rows are those of a sort.

use iolab_tests::{create_shuffled_t, evict, figure, plan, rows, TestServer};
use tokio_postgres::Client;

async fn explain(c: &Client, query: &str) -> Vec<String> {
    plan(c, &format!("EXPLAIN (COSTS OFF) {query}")).await
}

/// The rows of `query` with index scans off (so sorted by a Sort) and with them on.
async fn sorted_both_ways(
    c: &Client,
    query: &str,
) -> (Vec<Vec<Option<String>>>, Vec<Vec<Option<String>>>) {
    c.batch_execute("SET enable_indexscan = off").await.unwrap();
    let sorted = rows(c, query).await;
    c.batch_execute("RESET enable_indexscan").await.unwrap();
    (sorted, rows(c, query).await)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_index_scan_in_order_replaces_the_sort() {
    let server = TestServer::start("ordered-index-scans");
    let c = server.client().await;
    create_shuffled_t(&c).await;

    // PostgreSQL 18's plans for the same table.
    let limit = "SELECT * FROM t ORDER BY a LIMIT 10";
    assert_eq!(
        explain(&c, limit).await,
        ["Limit", "  ->  Index Scan using t_a_idx on t"]
    );
    assert_eq!(
        explain(&c, "SELECT a FROM t WHERE b LIKE 'a%' ORDER BY a LIMIT 10").await,
        [
            "Limit",
            "  ->  Index Scan using t_a_idx on t",
            "        Filter: (b ~~ 'a%'::text)"
        ]
    );
    assert_eq!(
        explain(&c, "SELECT * FROM t WHERE a > 5000 ORDER BY a LIMIT 10").await,
        [
            "Limit",
            "  ->  Index Scan using t_a_idx on t",
            "        Index Cond: (a > 5000)"
        ]
    );
    assert_eq!(
        explain(
            &c,
            "SELECT x FROM (SELECT a AS x, b FROM t) s ORDER BY x LIMIT 3"
        )
        .await,
        ["Limit", "  ->  Index Only Scan using t_a_idx on t"]
    );
    // Descending, NULLs first: the index read backward.
    assert_eq!(
        explain(&c, "SELECT * FROM t ORDER BY a DESC LIMIT 10").await,
        ["Limit", "  ->  Index Scan Backward using t_a_idx on t"]
    );
    assert_eq!(
        explain(
            &c,
            "SELECT * FROM t WHERE a < 5000 ORDER BY a DESC LIMIT 10"
        )
        .await,
        [
            "Limit",
            "  ->  Index Scan Backward using t_a_idx on t",
            "        Index Cond: (a < 5000)"
        ]
    );
    // Not an order the index gives: the Sort stays.
    for query in [
        "SELECT * FROM t ORDER BY a DESC NULLS LAST LIMIT 10",
        "SELECT * FROM t ORDER BY a NULLS FIRST LIMIT 10",
        "SELECT * FROM t ORDER BY b LIMIT 10",
    ] {
        let lines = explain(&c, query).await;
        assert!(
            lines.iter().any(|l| l.trim().starts_with("->  Sort")),
            "{query}: {lines:#?}"
        );
    }
    // With index scans off, the sort: the same plan as before this planner knew of order.
    c.batch_execute("SET enable_indexscan = off").await.unwrap();
    assert!(explain(&c, limit).await.iter().any(|l| l.contains("Sort")));
    c.batch_execute("RESET enable_indexscan").await.unwrap();
    // Filtering the whole table, a sort is cheaper; with sorts disabled, the index's order.
    let filtered = "SELECT * FROM t WHERE b LIKE 'a%' ORDER BY a";
    assert_eq!(explain(&c, filtered).await[0], "Sort");
    c.batch_execute("SET enable_sort = off").await.unwrap();
    assert_eq!(
        explain(&c, filtered).await,
        [
            "Index Scan using t_a_idx on t",
            "  Filter: (b ~~ 'a%'::text)"
        ]
    );
    c.batch_execute("RESET enable_sort").await.unwrap();

    // The same rows as a sort gives, NULLs last, with a filter, an index condition, an
    // OFFSET, and every row (index scans forced by turning the sequential scan off).
    for query in [
        "SELECT a FROM t ORDER BY a LIMIT 1000",
        "SELECT a, b FROM t WHERE b LIKE 'a%' ORDER BY a LIMIT 50",
        "SELECT a FROM t WHERE a > 150000 ORDER BY a LIMIT 300",
        "SELECT a FROM t ORDER BY a LIMIT 5 OFFSET 10",
        "SELECT a FROM t ORDER BY a DESC LIMIT 300",
        "SELECT a FROM t WHERE a < 5000 ORDER BY a DESC LIMIT 20",
        "SELECT a FROM t WHERE a >= 100 AND a <= 120 ORDER BY a DESC",
        "SELECT a FROM t ORDER BY a DESC LIMIT 5 OFFSET 198",
        // (Only a: rows of equal keys, the NULLs, may come in any order.)
        "SELECT a FROM t WHERE b LIKE 'a%' ORDER BY a DESC LIMIT 50",
    ] {
        let (sorted, indexed) = sorted_both_ways(&c, query).await;
        assert!(!sorted.is_empty());
        assert_eq!(indexed, sorted, "{query}");
    }
    c.batch_execute("SET enable_seqscan = off").await.unwrap();
    let every = "SELECT a FROM t ORDER BY a";
    assert_eq!(
        explain(&c, every).await,
        ["Index Only Scan using t_a_idx on t"]
    );
    let (sorted, indexed) = sorted_both_ways(&c, every).await;
    assert_eq!(indexed.len(), 200000);
    // The 200 NULLs come last, as in a B-tree and in PostgreSQL's ascending order.
    assert!(indexed[..199_800].iter().all(|r| r[0].is_some()));
    assert!(indexed[199_800..].iter().all(|r| r[0].is_none()));
    assert_eq!(indexed, sorted);
    let every_descending = "SELECT a FROM t ORDER BY a DESC";
    assert_eq!(
        explain(&c, every_descending).await,
        ["Index Only Scan Backward using t_a_idx on t"]
    );
    let (sorted, indexed) = sorted_both_ways(&c, every_descending).await;
    assert!(indexed[..200].iter().all(|r| r[0].is_none()), "NULLs first");
    assert_eq!(indexed, sorted);
    c.batch_execute("RESET enable_seqscan").await.unwrap();

    // The scan stops at the LIMIT: a few index and heap pages, not the table's 1 700.
    evict(&c, "t").await;
    let lines = plan(
        &c,
        &format!("EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) {limit}"),
    )
    .await;
    let touched = figure(&lines, "Buffers:", "hit=").unwrap_or(0.0)
        + figure(&lines, "Buffers:", "read=").unwrap_or(0.0);
    assert!(touched > 0.0 && touched < 40.0, "{lines:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn min_and_max_read_one_end_of_the_index() {
    let server = TestServer::start("min-max-index");
    let c = server.client().await;
    create_shuffled_t(&c).await;
    // PostgreSQL 18's plans.
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
        explain(&c, "SELECT min(a) FROM t WHERE b LIKE 'f%'").await,
        [
            "Result",
            "  InitPlan 1",
            "    ->  Limit",
            "          ->  Index Scan using t_a_idx on t",
            "                Index Cond: (a IS NOT NULL)",
            "                Filter: (b ~~ 'f%'::text)"
        ]
    );
    // The aggregate's answers, NULLs ignored; NULL over no rows; not with other results
    // or groups.
    for query in [
        "SELECT min(a), max(a) FROM t",
        "SELECT max(a) AS top FROM t WHERE b LIKE 'f%'",
        "SELECT min(a) FROM t WHERE a > 199990",
        "SELECT max(a) FROM t WHERE a < 0",
        "SELECT max(a), count(*) FROM t",
        "SELECT b > 'f', max(a) FROM t GROUP BY 1 ORDER BY 1",
    ] {
        let (aggregated, indexed) = sorted_both_ways(&c, query).await;
        assert_eq!(indexed, aggregated, "{query}");
    }
    assert_eq!(
        rows(&c, "SELECT min(a), max(a) FROM t").await,
        [[Some("1".to_string()), Some("200002".to_string())]]
    );
    assert_eq!(rows(&c, "SELECT max(a) FROM t WHERE a < 0").await, [[None]]);
    let grouped = explain(&c, "SELECT max(a), count(*) FROM t").await;
    assert!(grouped[0].starts_with("Aggregate"), "{grouped:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sort_by_more_keys_sorts_only_the_rows_of_equal_first_keys() {
    let server = TestServer::start("incremental-sort");
    let c = server.client().await;
    // g has 50 values, 2000 rows each: the rows of one g are sorted by b.
    c.batch_execute(
        "CREATE TABLE u AS SELECT i % 50 AS g, md5(i::text) AS b FROM generate_series(1, 100000) i;
         CREATE INDEX ON u(g);
         ANALYZE u;",
    )
    .await
    .unwrap();
    // PostgreSQL 18's plans.
    assert_eq!(
        explain(&c, "SELECT * FROM u ORDER BY g, b LIMIT 10").await,
        [
            "Limit",
            "  ->  Incremental Sort",
            "        Sort Key: g, b",
            "        Presorted Key: g",
            "        ->  Index Scan using u_g_idx on u"
        ]
    );
    assert_eq!(
        explain(&c, "SELECT * FROM u ORDER BY g DESC, b LIMIT 10").await,
        [
            "Limit",
            "  ->  Incremental Sort",
            "        Sort Key: g DESC, b",
            "        Presorted Key: g",
            "        ->  Index Scan Backward using u_g_idx on u"
        ]
    );
    c.batch_execute("SET enable_incremental_sort = off")
        .await
        .unwrap();
    let plain = explain(&c, "SELECT * FROM u ORDER BY g, b LIMIT 10").await;
    assert_eq!(plain[1], "  ->  Sort", "{plain:#?}");
    c.batch_execute("RESET enable_incremental_sort")
        .await
        .unwrap();
    // The rows of a full sort: the LIMIT cuts inside a group of 2000 equal g, whose
    // smallest b can come last from the index.
    for query in [
        "SELECT g, b FROM u ORDER BY g, b LIMIT 30",
        "SELECT g, b FROM u ORDER BY g DESC, b LIMIT 2500",
        "SELECT g, b FROM u WHERE g > 10 ORDER BY g, b DESC LIMIT 5",
    ] {
        let (sorted, indexed) = sorted_both_ways(&c, query).await;
        assert_eq!(indexed, sorted, "{query}");
    }
}
