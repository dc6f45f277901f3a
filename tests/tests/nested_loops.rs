//! Joins as nested loops over an index of the inner side (PostgreSQL's Nested Loop with a
//! parameterized Index Scan): PostgreSQL 18's plans for the same tables and statements,
//! the answers of every join type (those of a hash join, NULL and missing keys included),
//! the cost model's choice against a hash join, EXPLAIN ANALYZE's loops and buffers,
//! errors inside the loop, visibility, and prepared statements.

use iolab_tests::{create_shop, error, figure, int, plan, rows, TestServer};
use std::time::Duration;

use tokio_postgres::Client;

async fn explain(c: &Client, query: &str) -> Vec<String> {
    plan(c, &format!("EXPLAIN (COSTS OFF) {query}")).await
}

/// The top node of `query`'s plan.
async fn top_node(c: &Client, query: &str) -> String {
    explain(c, query).await[0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn plans_are_postgres_18s() {
    let server = TestServer::start("nested-loop-plans");
    let c = server.client().await;
    create_shop(&c).await;
    // PostgreSQL 18.4, same tables and statements.
    let cases: [(&str, &[&str]); 6] = [
        (
            "SELECT * FROM orders o JOIN cust c ON c.id = o.cust_id WHERE o.id = 42",
            &[
                "Nested Loop",
                "  ->  Index Scan using orders_pkey on orders o",
                "        Index Cond: (id = 42)",
                "  ->  Index Scan using cust_pkey on cust c",
                "        Index Cond: (id = o.cust_id)",
            ],
        ),
        (
            "SELECT * FROM orders o JOIN cust c ON c.id = o.cust_id WHERE o.id < 50",
            &[
                "Nested Loop",
                "  ->  Index Scan using orders_pkey on orders o",
                "        Index Cond: (id < 50)",
                "  ->  Index Scan using cust_pkey on cust c",
                "        Index Cond: (id = o.cust_id)",
            ],
        ),
        (
            "SELECT * FROM orders o LEFT JOIN cust c ON c.id = o.cust_id WHERE o.id < 10",
            &[
                "Nested Loop Left Join",
                "  ->  Index Scan using orders_pkey on orders o",
                "        Index Cond: (id < 10)",
                "  ->  Index Scan using cust_pkey on cust c",
                "        Index Cond: (id = o.cust_id)",
            ],
        ),
        (
            // A semi join whose inner side finds one row at most is an inner join.
            "SELECT * FROM orders o WHERE EXISTS (SELECT 1 FROM cust c WHERE c.id = o.cust_id AND c.region = 3) AND o.id < 50",
            &[
                "Nested Loop",
                "  ->  Index Scan using orders_pkey on orders o",
                "        Index Cond: (id < 50)",
                "  ->  Index Scan using cust_pkey on cust c",
                "        Index Cond: (id = o.cust_id)",
                "        Filter: (region = 3)",
            ],
        ),
        (
            "SELECT * FROM orders o JOIN lines l ON l.order_id = o.id WHERE o.cust_id = 5",
            &[
                "Nested Loop",
                "  ->  Bitmap Heap Scan on orders o",
                "        Recheck Cond: (cust_id = 5)",
                "        ->  Bitmap Index Scan on orders_cust_id_idx",
                "              Index Cond: (cust_id = 5)",
                "  ->  Index Scan using lines_pkey on lines l",
                "        Index Cond: (order_id = o.id)",
            ],
        ),
        (
            // The anti join reads only the index.
            "SELECT * FROM orders o WHERE NOT EXISTS (SELECT 1 FROM cust c WHERE c.id = o.cust_id) AND o.id < 50",
            &[
                "Nested Loop Anti Join",
                "  ->  Index Scan using orders_pkey on orders o",
                "        Index Cond: (id < 50)",
                "  ->  Index Only Scan using cust_pkey on cust c",
                "        Index Cond: (id = o.cust_id)",
            ],
        ),
    ];
    for (query, expected) in cases {
        let lines = explain(&c, query).await;
        let lines: Vec<String> = lines
            .iter()
            .map(|l| l.trim_start_matches(' ').to_string())
            .collect();
        let expected: Vec<String> = expected
            .iter()
            .map(|l| l.trim_start().to_string())
            .collect();
        assert_eq!(lines, expected, "{query}");
    }
    // VERBOSE: PostgreSQL's Output lines and `Inner Unique: true`.
    let verbose = plan(
        &c,
        "EXPLAIN (VERBOSE, COSTS OFF) SELECT o.id, c.name FROM orders o LEFT JOIN cust c
           ON c.id = o.cust_id AND c.region > 4 WHERE o.id < 10",
    )
    .await;
    for line in [
        "Nested Loop Left Join",
        "  Output: o.id, c.name",
        "  Inner Unique: true",
        "  ->  Index Scan using cust_pkey on public.cust c",
        "        Output: c.id, c.name, c.region",
        "        Index Cond: (c.id = o.cust_id)",
        "        Filter: (c.region > 4)",
    ] {
        assert!(
            verbose.iter().any(|l| l == line),
            "{line:?} in {verbose:#?}"
        );
    }
}

/// The costs decide as PostgreSQL's do on the same tables: few outer rows loop, many hash.
#[tokio::test(flavor = "multi_thread")]
async fn the_cheaper_join_is_chosen() {
    let server = TestServer::start("nested-loop-costs");
    let c = server.client().await;
    create_shop(&c).await;
    let join = |bound: u32| {
        format!("SELECT * FROM orders o JOIN cust c ON c.id = o.cust_id WHERE o.id < {bound}")
    };
    // PostgreSQL 18.4: Nested Loop at id < 50 and id < 100 (541.64 against a hash join's
    // 569.49: too close to call for a planner whose estimates differ a little), Hash Join
    // at id < 300 and id < 1000.
    assert_eq!(top_node(&c, &join(50)).await, "Nested Loop");
    assert_eq!(top_node(&c, &join(300)).await, "Hash Join");
    assert_eq!(top_node(&c, &join(1000)).await, "Hash Join");
    // A filter on every orders row leaves few: PostgreSQL 18 (no parallel workers) hashes.
    let amount = "SELECT * FROM orders o JOIN cust c ON c.id = o.cust_id WHERE o.amount = 7";
    assert_eq!(top_node(&c, amount).await, "Hash Join");
    // The settings steer it as PostgreSQL's do.
    c.batch_execute("SET enable_nestloop = off").await.unwrap();
    assert_eq!(top_node(&c, &join(50)).await, "Hash Join");
    c.batch_execute("RESET enable_nestloop; SET enable_hashjoin = off; SET enable_mergejoin = off")
        .await
        .unwrap();
    assert_eq!(top_node(&c, &join(1000)).await, "Nested Loop");
    // With index scans off, the loop's inner scan is disabled, the hash join is not.
    c.batch_execute(
        "RESET enable_hashjoin; RESET enable_mergejoin; SET enable_indexscan = off; SET enable_bitmapscan = off",
    )
    .await
    .unwrap();
    assert_eq!(top_node(&c, &join(50)).await, "Hash Join");
}

/// Every join type gives the hash join's rows, with NULL keys, keys no row has, filters on
/// the inner side and on the pair, several keys, text and bigint keys, a self-join.
#[tokio::test(flavor = "multi_thread")]
async fn answers_are_the_hash_joins() {
    let server = TestServer::start("nested-loop-answers");
    let c = server.client().await;
    iolab_tests::run_script(
        &c,
        "CREATE TABLE cust(id int PRIMARY KEY, name text, region int);
         INSERT INTO cust SELECT i, 'c' || i, i % 10 FROM generate_series(1, 3000) i;
         CREATE TABLE orders(id int PRIMARY KEY, cust_id int, amount int);
         INSERT INTO orders SELECT i, (i * 7919) % 3000 + 1, i % 1000 FROM generate_series(1, 20000) i;
         INSERT INTO orders VALUES (30001, NULL, 5), (30002, 999999, 5);
         CREATE INDEX ON orders(cust_id);
         CREATE TABLE lines(order_id int, line int, qty int, PRIMARY KEY (order_id, line));
         INSERT INTO lines SELECT i, l, (i + l) % 50 FROM generate_series(1, 20000) i, generate_series(1, 3) l;
         CREATE TABLE kt(k text PRIMARY KEY, v int, big bigint);
         INSERT INTO kt SELECT 'k' || i, i, i FROM generate_series(1, 5000) i;
         CREATE INDEX ON kt(big);
         CREATE TABLE ko(id int, kk text, ik int, bk bigint);
         INSERT INTO ko SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'k' || (i * 3) END,
                CASE WHEN i % 5 = 0 THEN NULL ELSE i * 3 END, i * 2
           FROM generate_series(1, 3000) i;
         VACUUM ANALYZE cust; VACUUM ANALYZE orders; VACUUM ANALYZE lines;
         VACUUM ANALYZE kt; VACUUM ANALYZE ko;",
    )
    .await
    .unwrap();
    let outer = "(o.id < 300 OR o.id > 30000)";
    let queries = [
        format!("SELECT o.id, c.name FROM orders o JOIN cust c ON c.id = o.cust_id WHERE {outer}"),
        format!("SELECT o.id, c.name FROM orders o LEFT JOIN cust c ON c.id = o.cust_id WHERE {outer}"),
        format!("SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM cust c WHERE c.id = o.cust_id AND c.region = 3) AND {outer}"),
        format!("SELECT o.id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM cust c WHERE c.id = o.cust_id AND c.region <> 3) AND {outer}"),
        "SELECT o.id FROM orders o WHERE EXISTS (SELECT 1 FROM lines l WHERE l.order_id = o.id AND l.qty > 40) AND o.cust_id < 40".into(),
        "SELECT o.id FROM orders o WHERE NOT EXISTS (SELECT 1 FROM lines l WHERE l.order_id = o.id AND l.qty > 30) AND o.cust_id < 40".into(),
        "SELECT o.id, l.line, l.qty FROM orders o JOIN lines l ON l.order_id = o.id WHERE o.cust_id < 40".into(),
        "SELECT o.id, l.line FROM orders o JOIN lines l ON l.order_id = o.id AND l.qty > o.amount % 50 WHERE o.cust_id < 40".into(),
        "SELECT o.id, l.line FROM orders o LEFT JOIN lines l ON l.order_id = o.id AND l.qty > 25 WHERE o.cust_id < 40".into(),
        "SELECT o.id, l.line FROM orders o JOIN lines l ON l.order_id = o.id AND l.line = o.amount % 4 WHERE o.cust_id < 40".into(),
        "SELECT ko.id, kt.v FROM ko JOIN kt ON kt.k = ko.kk WHERE ko.id < 200".into(),
        "SELECT ko.id, kt.v FROM ko LEFT JOIN kt ON kt.k = ko.kk WHERE ko.id < 200".into(),
        "SELECT ko.id, kt.v FROM ko JOIN kt ON kt.big = ko.ik WHERE ko.id < 200".into(),
        "SELECT ko.id, kt.v FROM ko RIGHT JOIN kt ON kt.big = ko.bk WHERE ko.id < 200".into(),
        "SELECT a.id, b.id FROM orders a JOIN orders b ON b.id = a.cust_id WHERE a.id < 50".into(),
        "SELECT v.x, c.name FROM (VALUES (1), (2), (NULL), (40000)) v(x) LEFT JOIN cust c ON c.id = v.x".into(),
        "SELECT count(*), sum(c.region) FROM orders o JOIN cust c ON c.id = o.cust_id WHERE o.id < 5000".into(),
    ];
    for q in &queries {
        c.batch_execute("SET enable_hashjoin = off; SET enable_mergejoin = off")
            .await
            .unwrap();
        let lines = explain(&c, q).await;
        assert!(
            lines.iter().any(|l| l.contains("Nested Loop"))
                && lines.iter().any(|l| l.contains("Index Cond: (")
                    && l.contains(" = ")
                    && (l.contains("o.")
                        || l.contains("ko.")
                        || l.contains("a.")
                        || l.contains("\"*VALUES*\"."))),
            "{q}: a nested loop over a parameterized index scan: {lines:#?}"
        );
        let mut looped = rows(&c, q).await;
        c.batch_execute("RESET enable_hashjoin; RESET enable_mergejoin; SET enable_nestloop = off")
            .await
            .unwrap();
        let lines = explain(&c, q).await;
        assert!(
            !lines.iter().any(|l| l.contains("Nested Loop")),
            "{q}: {lines:#?}"
        );
        let mut hashed = rows(&c, q).await;
        c.batch_execute("RESET enable_nestloop").await.unwrap();
        looped.sort();
        hashed.sort();
        assert!(!hashed.is_empty(), "{q}");
        assert_eq!(looped, hashed, "{q}");
    }
}

/// EXPLAIN ANALYZE: the inner scan ran once per outer row, each a descent of three pages
/// (root, leaf, heap: the meta page is read once), as PostgreSQL's; FORMAT JSON has
/// PostgreSQL's keys.
#[tokio::test(flavor = "multi_thread")]
async fn explain_analyze_counts_the_loops() {
    let server = TestServer::start("nested-loop-analyze");
    let c = server.client().await;
    create_shop(&c).await;
    let query = "SELECT * FROM orders o JOIN cust c ON c.id = o.cust_id WHERE o.id < 50";
    let lines = plan(
        &c,
        &format!("EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) {query}"),
    )
    .await;
    assert!(lines[0].starts_with("Nested Loop"), "{lines:#?}");
    assert!(lines[0].contains("rows=49.00 loops=1"), "{lines:#?}");
    let inner = lines
        .iter()
        .position(|l| l.contains("Index Scan using cust_pkey on cust c"))
        .expect("the inner scan");
    assert!(lines[inner].contains("rows=1.00 loops=49"), "{lines:#?}");
    let below = &lines[inner..];
    assert_eq!(
        figure(below, "Index Searches:", "Index Searches: "),
        Some(49.0)
    );
    let inner_buffers = figure(below, "Buffers:", "hit=").unwrap_or(0.0)
        + figure(below, "Buffers:", "read=").unwrap_or(0.0);
    assert!(
        (3.0 * 49.0..=3.0 * 49.0 + 1.0).contains(&inner_buffers),
        "root, leaf and heap page per lookup: {lines:#?}"
    );
    // The node's buffers are its children's.
    let buffers = |lines: &[String]| {
        figure(lines, "Buffers:", "hit=").unwrap_or(0.0)
            + figure(lines, "Buffers:", "read=").unwrap_or(0.0)
    };
    let outer = lines
        .iter()
        .position(|l| l.contains("Index Scan using orders_pkey"))
        .expect("the outer scan");
    let (total, outer_buffers) = (buffers(&lines), buffers(&lines[outer..inner]));
    assert_eq!(total, outer_buffers + inner_buffers, "{lines:#?}");

    let json: String = rows(&c, &format!("EXPLAIN (ANALYZE, FORMAT JSON) {query}")).await[0][0]
        .clone()
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let top = &v[0]["Plan"];
    assert_eq!(top["Node Type"], "Nested Loop");
    assert_eq!(top["Join Type"], "Inner");
    assert_eq!(top["Inner Unique"], true);
    let inner = &top["Plans"][1];
    assert_eq!(inner["Parent Relationship"], "Inner");
    assert_eq!(inner["Node Type"], "Index Scan");
    assert_eq!(inner["Index Cond"], "(id = o.cust_id)");
    assert_eq!(inner["Actual Loops"], 49);
    assert_eq!(inner["Actual Rows"], 1.0);

    // Rows the inner side's filter and the join filter removed.
    c.batch_execute("SET enable_hashjoin = off; SET enable_mergejoin = off")
        .await
        .unwrap();
    let filtered = plan(
        &c,
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, BUFFERS OFF) SELECT * FROM orders o
           JOIN lines l ON l.order_id = o.id AND l.line <> o.amount % 3 + 1 AND l.qty > 10
          WHERE o.cust_id < 5",
    )
    .await;
    let removed = |label: &str| figure(&filtered, label, ": ");
    assert!(removed("Rows Removed by Filter").is_some(), "{filtered:#?}");
    assert!(
        removed("Rows Removed by Join Filter").is_some(),
        "{filtered:#?}"
    );
    let returned = int(
        &c,
        "SELECT count(*) FROM orders o JOIN lines l ON l.order_id = o.id
            AND l.line <> o.amount % 3 + 1 AND l.qty > 10 WHERE o.cust_id < 5",
    )
    .await;
    assert_eq!(
        filtered[0],
        format!("Nested Loop (actual rows={returned}.00 loops=1)"),
        "{filtered:#?}"
    );
    let outer_rows = int(&c, "SELECT count(*) FROM orders WHERE cust_id < 5").await;
    let inner = (filtered.iter())
        .find(|l| l.contains("Index Scan using lines_pkey on lines l"))
        .expect("the inner scan");
    assert!(
        inner.ends_with(&format!("loops={outer_rows})")),
        "{filtered:#?}"
    );
}

/// An error raised inside the loop (the join's filter divides by zero) is the statement's
/// error with PostgreSQL's SQLSTATE; the session goes on. Rows another transaction has not
/// committed are not found by the inner scan until it commits. A prepared statement's
/// parameter bounds the outer side.
#[tokio::test(flavor = "multi_thread")]
async fn errors_visibility_and_prepared_statements() {
    let server = TestServer::start("nested-loop-errors");
    let c = server.client().await;
    create_shop(&c).await;
    let (state, message) = error(
        &c,
        "SELECT * FROM orders o JOIN cust c ON c.id = o.cust_id AND 1 / (c.region - c.region) > 0
          WHERE o.id < 10",
    )
    .await;
    assert_eq!(
        (state.as_str(), message.as_str()),
        ("22012", "division by zero")
    );
    assert_eq!(
        int(
            &c,
            "SELECT count(*) FROM orders o JOIN cust c ON c.id = o.cust_id WHERE o.id < 10"
        )
        .await,
        9
    );

    let writer = server.client().await;
    writer
        .batch_execute(
            "BEGIN; INSERT INTO cust VALUES (20001, 'new', 1);
             UPDATE orders SET cust_id = 20001 WHERE id = 5",
        )
        .await
        .unwrap();
    let names = "SELECT c.name FROM orders o JOIN cust c ON c.id = o.cust_id WHERE o.id = 5";
    assert_eq!(top_node(&c, names).await, "Nested Loop");
    assert_eq!(
        rows(&c, names).await,
        vec![vec![Some("c19596".to_string())]]
    );
    writer.batch_execute("COMMIT").await.unwrap();
    assert_eq!(rows(&c, names).await, vec![vec![Some("new".to_string())]]);

    let prepared = c
        .prepare("SELECT c.name FROM orders o JOIN cust c ON c.id = o.cust_id WHERE o.id = $1")
        .await
        .unwrap();
    for (id, name) in [(5, "new"), (6, "c7515"), (200001, "")] {
        let got: Vec<String> = c
            .query(&prepared, &[&id])
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let want: Vec<String> = if name.is_empty() {
            vec![]
        } else {
            vec![name.to_string()]
        };
        assert_eq!(got, want, "o.id = {id}");
    }
}

/// `nestloop_prefetch`: under every io_method, a cold loop reads its inner scans' leaves
/// and heap pages ahead (EXPLAIN (IO) on the inner scan: the look-ahead grew, several reads
/// in flight at once under worker and io_uring), with the rows of one probe at a time;
/// off, no read stream.
#[tokio::test(flavor = "multi_thread")]
async fn read_ahead_overlaps_the_inner_reads() {
    for method in ["worker", "io_uring", "sync"] {
        let server = TestServer::start_with(
            &format!("nested-loop-read-ahead-{method}"),
            &["-c", &format!("io_method={method}")],
        );
        let c = server.client().await;
        iolab_tests::run_script(
            &c,
            "CREATE TABLE cust(id int PRIMARY KEY, name text, pad text);
             INSERT INTO cust SELECT i, 'c' || i, md5(i::text) FROM generate_series(1, 100000) i;
             CREATE TABLE orders(id int PRIMARY KEY, cust_id int);
             INSERT INTO orders SELECT i, CASE WHEN i % 97 = 0 THEN NULL ELSE (i * 7919) % 120000 + 1 END
               FROM generate_series(1, 5000) i;
             VACUUM ANALYZE cust; VACUUM ANALYZE orders;
             SET enable_hashjoin = off; SET enable_mergejoin = off",
        )
        .await
        .unwrap();
        let query = "SELECT o.id, c.name, c.pad FROM orders o LEFT JOIN cust c ON c.id = o.cust_id";
        let lines = cold_inner_scan(&c, query).await;
        let below = &lines[..];
        let max = figure(below, "Prefetch:", "max=").unwrap_or(0.0);
        assert!(max >= 2.0, "{method}: the look-ahead grew: {lines:#?}");
        if method != "sync" {
            let in_flight = figure(below, "I/O:", "inprogress=").unwrap_or(0.0);
            assert!(in_flight > 1.0, "{method}: reads overlapped: {lines:#?}");
        }
        let mut ahead = rows(&c, query).await;
        c.batch_execute("SET nestloop_prefetch = off")
            .await
            .unwrap();
        let lines = cold_inner_scan(&c, query).await;
        assert!(
            !lines.iter().any(|l| l.contains("Prefetch:")),
            "{method}: {lines:#?}"
        );
        let mut one_by_one = rows(&c, query).await;
        ahead.sort();
        one_by_one.sort();
        assert_eq!(ahead.len(), 5000, "{method}");
        assert_eq!(ahead, one_by_one, "{method}");

        // Each key's entries span leaves: the scans read past the leaves read ahead (once
        // the stream is done: a read waiting for one the stream started and has not run
        // would wait forever).
        iolab_tests::run_script(
            &c,
            "CREATE TABLE many(k int, v int);
             INSERT INTO many SELECT i % 40, i FROM generate_series(1, 40000) i;
             CREATE INDEX ON many(k) WITH (deduplicate_items = off);
             VACUUM ANALYZE many;
             RESET nestloop_prefetch",
        )
        .await
        .unwrap();
        let spanning =
            "SELECT count(*), sum(m.v) FROM cust c JOIN many m ON m.k = c.id WHERE c.id < 40";
        let mut answers = Vec::new();
        for setting in ["on", "off"] {
            c.batch_execute(&format!("SET nestloop_prefetch = {setting}"))
                .await
                .unwrap();
            c.simple_query("SELECT * FROM pg_buffercache_evict_all()")
                .await
                .unwrap();
            let answer = tokio::time::timeout(Duration::from_secs(120), rows(&c, spanning))
                .await
                .unwrap_or_else(|_| panic!("{method}: the loop did not end"));
            answers.push(answer);
        }
        assert_eq!(answers[0], answers[1], "{method}");
        assert_eq!(answers[0][0][0].as_deref(), Some("39000"), "{method}");
    }
}

/// The lines of EXPLAIN (ANALYZE, IO) for `query` run cold (the buffer pool emptied) from
/// the inner scan's on (the inner scan is on `cust c`).
async fn cold_inner_scan(c: &Client, query: &str) -> Vec<String> {
    c.simple_query("SELECT * FROM pg_buffercache_evict_all()")
        .await
        .unwrap();
    let lines = plan(
        c,
        &format!("EXPLAIN (ANALYZE, IO, COSTS OFF, TIMING OFF) {query}"),
    )
    .await;
    let inner = (lines.iter())
        .position(|l| l.contains("Index Scan using cust_pkey on cust c"))
        .unwrap_or_else(|| panic!("a nested loop over cust_pkey: {lines:#?}"));
    lines[inner..].to_vec()
}
