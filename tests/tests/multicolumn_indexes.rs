//! B-tree indexes on several columns: CREATE INDEX ON t (a, b), PRIMARY KEY and UNIQUE on
//! several columns, their plans (PostgreSQL 18's for the same table and statements, EXPLAIN
//! with COSTS OFF), their answers (those of a Seq Scan, NULLs in any column included), their
//! errors, and their upkeep through inserts, updates, deletes, VACUUM and a restart.

use iolab_tests::{error, int, plan, rows, TestServer};
use tokio_postgres::Client;

async fn explain(c: &Client, query: &str) -> Vec<String> {
    plan(c, &format!("EXPLAIN (COSTS OFF) {query}")).await
}

/// `mc(a, b, c, d)`: 200 000 rows, a = i % 100, b = i / 100, c an md5 text, d = i, three
/// rows with NULLs in a and b; an index on (a, b); vacuumed and analyzed.
async fn create_mc(c: &Client) {
    iolab_tests::run_script(
        &c,
        "CREATE TABLE mc(a int, b int, c text, d int);
         INSERT INTO mc SELECT i % 100, i / 100, md5(i::text), i FROM generate_series(1, 200000) i;
         INSERT INTO mc VALUES (NULL, 1, 'x', 0), (5, NULL, 'y', 0), (NULL, NULL, 'z', 0);
         CREATE INDEX mc_ab ON mc(a, b);
         VACUUM ANALYZE mc;
         SET max_parallel_workers_per_gather = 0",
    )
    .await
    .unwrap();
}

/// The rows of `query` read by a Seq Scan (every index path off), sorted.
async fn seq_rows(c: &Client, query: &str) -> Vec<Vec<Option<String>>> {
    c.batch_execute(
        "SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off",
    )
    .await
    .unwrap();
    let lines = explain(c, query).await;
    assert!(!lines.iter().any(|l| l.contains("Index")), "{lines:#?}");
    let mut r = rows(c, query).await;
    r.sort();
    c.batch_execute("RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_indexonlyscan")
        .await
        .unwrap();
    r
}

/// The rows of `query` through the index (its plan must name `mc_ab`), sorted.
async fn index_rows(c: &Client, query: &str, paths: &str) -> Vec<Vec<Option<String>>> {
    c.batch_execute(paths).await.unwrap();
    let lines = explain(c, query).await;
    assert!(
        lines.iter().any(|l| l.contains("mc_ab")),
        "{query} under {paths}: {lines:#?}"
    );
    let mut r = rows(c, query).await;
    r.sort();
    c.batch_execute("RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_seqscan; RESET enable_indexonlyscan")
        .await
        .unwrap();
    r
}

const INDEX_SCAN: &str = "SET enable_seqscan = off; SET enable_bitmapscan = off";
const BITMAP_SCAN: &str = "SET enable_seqscan = off; SET enable_indexscan = off";

#[tokio::test(flavor = "multi_thread")]
async fn plans_are_postgres_18s() {
    let mut server = TestServer::start("multicolumn-plans");
    let c = server.client().await;
    create_mc(&c).await;
    // PostgreSQL 18.4, same table and statements.
    let cases: [(&str, &[&str]); 6] = [
        (
            "SELECT * FROM mc WHERE a = 5 AND b = 10",
            &[
                "Index Scan using mc_ab on mc",
                "  Index Cond: ((a = 5) AND (b = 10))",
            ],
        ),
        (
            "SELECT * FROM mc WHERE a = 5 AND b < 100",
            &[
                "Bitmap Heap Scan on mc",
                "  Recheck Cond: ((a = 5) AND (b < 100))",
                "  ->  Bitmap Index Scan on mc_ab",
                "        Index Cond: ((a = 5) AND (b < 100))",
            ],
        ),
        (
            "SELECT * FROM mc WHERE a < 3 AND b = 7",
            &[
                "Bitmap Heap Scan on mc",
                "  Recheck Cond: ((a < 3) AND (b = 7))",
                "  ->  Bitmap Index Scan on mc_ab",
                "        Index Cond: ((a < 3) AND (b = 7))",
            ],
        ),
        (
            "SELECT count(*) FROM mc WHERE a = 5 AND b BETWEEN 10 AND 20",
            &[
                "Aggregate",
                "  ->  Index Only Scan using mc_ab on mc",
                "        Index Cond: ((a = 5) AND (b >= 10) AND (b <= 20))",
            ],
        ),
        (
            "SELECT * FROM mc WHERE a = 5 AND b IS NULL",
            &[
                "Index Scan using mc_ab on mc",
                "  Index Cond: ((a = 5) AND (b IS NULL))",
            ],
        ),
        (
            "SELECT * FROM mc WHERE a = 5 AND c = 'x'",
            &[
                "Bitmap Heap Scan on mc",
                "  Recheck Cond: (a = 5)",
                "  Filter: (c = 'x'::text)",
                "  ->  Bitmap Index Scan on mc_ab",
                "        Index Cond: (a = 5)",
            ],
        ),
    ];
    for (query, expected) in cases {
        assert_eq!(explain(&c, query).await, expected, "{query}");
    }
    // An Index Only Scan of both key columns reads no heap page after VACUUM.
    let lines = plan(
        &c,
        "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
         SELECT a, b FROM mc WHERE a = 5 AND b > 1500",
    )
    .await;
    assert_eq!(
        lines[..4],
        [
            "Index Only Scan using mc_ab on mc (actual rows=499.00 loops=1)",
            "  Index Cond: ((a = 5) AND (b > 1500))",
            "  Heap Fetches: 0",
            "  Index Searches: 1",
        ],
        "{lines:#?}"
    );
    // The index's order: its columns, those held to one value passed over.
    let ordered: [(&str, &[&str]); 4] = [
        (
            "SELECT * FROM mc WHERE a = 5 ORDER BY b LIMIT 3",
            &[
                "Limit",
                "  ->  Index Scan using mc_ab on mc",
                "        Index Cond: (a = 5)",
            ],
        ),
        (
            "SELECT * FROM mc ORDER BY a, b LIMIT 5",
            &["Limit", "  ->  Index Scan using mc_ab on mc"],
        ),
        (
            "SELECT * FROM mc ORDER BY a DESC, b DESC LIMIT 5",
            &["Limit", "  ->  Index Scan Backward using mc_ab on mc"],
        ),
        (
            "SELECT * FROM mc ORDER BY a, b, c LIMIT 5",
            &[
                "Limit",
                "  ->  Incremental Sort",
                "        Sort Key: a, b, c",
                "        Presorted Key: a, b",
                "        ->  Index Scan using mc_ab on mc",
            ],
        ),
    ];
    for (query, expected) in ordered {
        assert_eq!(explain(&c, query).await, expected, "{query}");
    }
    // Without a condition on the first column: a skip scan, one descent per value of `a`
    // (PostgreSQL 18: the same plan, `Index Searches: 101` on its table without NULLs).
    assert_eq!(
        explain(&c, "SELECT * FROM mc WHERE b = 7").await,
        [
            "Bitmap Heap Scan on mc",
            "  Recheck Cond: (b = 7)",
            "  ->  Bitmap Index Scan on mc_ab",
            "        Index Cond: (b = 7)",
        ]
    );
    let lines = plan(
        &c,
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM mc WHERE b = 7",
    )
    .await;
    let searches = iolab_tests::figure(&lines, "Index Searches:", "Index Searches: ").unwrap();
    assert!((101.0..=210.0).contains(&searches), "{lines:#?}");
    let leaves = iolab_tests::figure(&lines, "Buffers:", "hit=").unwrap_or(0.0)
        + iolab_tests::figure(&lines, "Buffers:", "read=").unwrap_or(0.0);
    assert!(
        leaves < 600.0,
        "a skip scan reads a few pages per value: {lines:#?}"
    );
    // A short IN list (an OR to DataFusion) is one list of keys beside the other
    // conjuncts the index has columns for, as PostgreSQL 18 scans it.
    let query = "SELECT a, b, d FROM mc WHERE a IN (1, 2) AND b = 3";
    let lines = explain(&c, query).await;
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("Index Cond:"))
            .map(|l| l.trim())
            .collect::<Vec<_>>(),
        ["Index Cond: ((a = ANY ('{1,2}'::integer[])) AND (b = 3))"],
        "{lines:#?}"
    );
    assert_eq!(
        rows(&c, query).await,
        [
            [Some("1".into()), Some("3".into()), Some("301".into())],
            [Some("2".into()), Some("3".into()), Some("302".into())]
        ]
    );
    // Under a range of the first column, one search per value in it: 3, as PostgreSQL 18
    // counts (the next integer value, 3, is known to be past the range).
    let lines = plan(
        &c,
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM mc WHERE a < 3 AND b = 7",
    )
    .await;
    assert_eq!(
        iolab_tests::figure(&lines, "Index Searches:", "Index Searches: "),
        Some(3.0),
        "{lines:#?}"
    );
    server.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn answers_equal_a_seq_scans() {
    let mut server = TestServer::start("multicolumn-answers");
    let mut c = server.client().await;
    create_mc(&c).await;
    c.batch_execute("CREATE INDEX mc_ca ON mc(c, a)")
        .await
        .unwrap();
    let queries = [
        "SELECT a, b, d FROM mc WHERE a = 5 AND b = 10",
        "SELECT a, b, d FROM mc WHERE a = 5 AND b < 100",
        "SELECT a, b, d FROM mc WHERE a = 5 AND b > 1990",
        "SELECT a, b, d FROM mc WHERE a = 5 AND b >= 1990",
        "SELECT a, b, d FROM mc WHERE a < 3 AND b = 7",
        "SELECT a, b, d FROM mc WHERE a > 97 AND b > 1995",
        "SELECT a, b, d FROM mc WHERE a >= 97 AND b <= 3",
        "SELECT a, b, d FROM mc WHERE a = 5 AND b IS NULL",
        "SELECT a, b, d FROM mc WHERE a IS NULL",
        "SELECT a, b, d FROM mc WHERE a IS NULL AND b = 1",
        "SELECT a, b, d FROM mc WHERE a = 5 AND b IS NOT NULL AND b < 3",
        "SELECT a, b FROM mc WHERE a BETWEEN 10 AND 12 AND b BETWEEN 100 AND 110",
        "SELECT a, b, d FROM mc WHERE a = 5",
        "SELECT a, b, d FROM mc WHERE a > 98",
        // Skip scans: no condition on the first column, or a range.
        "SELECT a, b, d FROM mc WHERE b = 7",
        "SELECT a, b, d FROM mc WHERE b IS NULL",
        "SELECT a, b, d FROM mc WHERE b > 1995",
        "SELECT a, b, d FROM mc WHERE b >= 1000 AND b < 1003",
        "SELECT a, b, d FROM mc WHERE a < 3 AND b = 7",
        "SELECT a, b, d FROM mc WHERE a > 97 AND b <= 2",
        "SELECT a, b FROM mc WHERE b = 1",
    ];
    for round in ["before changes", "after changes", "after a restart"] {
        for query in queries {
            let expected = seq_rows(&c, query).await;
            assert!(!expected.is_empty(), "{query}");
            for paths in [INDEX_SCAN, BITMAP_SCAN] {
                assert_eq!(
                    index_rows(&c, query, paths).await,
                    expected,
                    "{round}: {query} under {paths}"
                );
            }
        }
        if round == "before changes" {
            // Inserts split leaves in the middle of equal first keys; updates and deletes
            // leave dead entries behind for VACUUM.
            iolab_tests::run_script(
                &c,
                "INSERT INTO mc SELECT 5, i % 50, 'n' || i, -i FROM generate_series(1, 5000) i;
                 INSERT INTO mc VALUES (5, NULL, 'n', -1), (NULL, 7, 'n', -2);
                 UPDATE mc SET b = b + 1 WHERE a = 5 AND b < 20;
                 DELETE FROM mc WHERE a = 98 AND b > 1000;
                 VACUUM mc",
            )
            .await
            .unwrap();
        } else if round == "after changes" {
            server.restart();
            c = server.client().await;
        }
        // The indexes hold exactly the table's live rows.
        let live = int(&c, "SELECT count(*) FROM mc").await;
        for index in ["mc_ab", "mc_ca"] {
            let entries = int(&c, &format!("SELECT iolab_btree_check('{index}')")).await;
            assert_eq!(entries, live, "{round}: {index}");
        }
    }
    server.stop();
}

/// Skip scans over first columns of text (whose next value is found by a descent) and of
/// dates (whose next value is known) return a Seq Scan's rows, descending once or twice
/// per value of the first column.
#[tokio::test(flavor = "multi_thread")]
async fn skip_scans_over_text_and_dates() {
    let mut server = TestServer::start("multicolumn-skip");
    let c = server.client().await;
    iolab_tests::run_script(
        &c,
        "CREATE TABLE kt(t text, d date, n int);
         INSERT INTO kt SELECT 'k' || (i % 7), date '2024-01-01' + (i % 5), i / 35
           FROM generate_series(1, 70000) i;
         INSERT INTO kt VALUES (NULL, NULL, 3), ('k1', '2024-01-02', NULL);
         CREATE INDEX kt_tn ON kt(t, n);
         CREATE INDEX kt_dn ON kt(d, n);
         VACUUM ANALYZE kt;
         SET max_parallel_workers_per_gather = 0",
    )
    .await
    .unwrap();
    for (index, other) in [("kt_tn", "kt_dn"), ("kt_dn", "kt_tn")] {
        c.batch_execute(&format!("DROP INDEX {other}"))
            .await
            .unwrap();
        for query in [
            "SELECT t, d, n FROM kt WHERE n = 3",
            "SELECT t, d, n FROM kt WHERE n BETWEEN 100 AND 102",
            "SELECT t, d, n FROM kt WHERE n > 1995",
            "SELECT t, d, n FROM kt WHERE n IS NULL",
        ] {
            c.batch_execute("SET enable_indexscan = off; SET enable_bitmapscan = off")
                .await
                .unwrap();
            let mut expected = rows(&c, query).await;
            expected.sort();
            c.batch_execute(
                "RESET enable_indexscan; RESET enable_bitmapscan; SET enable_seqscan = off",
            )
            .await
            .unwrap();
            let lines = plan(
                &c,
                &format!("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {query}"),
            )
            .await;
            assert!(lines.iter().any(|l| l.contains(index)), "{lines:#?}");
            let searches =
                iolab_tests::figure(&lines, "Index Searches:", "Index Searches: ").unwrap();
            // 7 or 5 values of the first column, and NULL.
            assert!((2.0..=20.0).contains(&searches), "{query}: {lines:#?}");
            let mut got = rows(&c, query).await;
            got.sort();
            assert!(!got.is_empty(), "{query}");
            assert_eq!(got, expected, "{query} on {index}");
            c.batch_execute("RESET enable_seqscan").await.unwrap();
        }
        c.batch_execute(&format!(
            "CREATE INDEX {other} ON kt({})",
            if other == "kt_dn" { "d, n" } else { "t, n" }
        ))
        .await
        .unwrap();
    }
    server.stop();
}

/// The rows of ORDER BY … LIMIT queries an index on (a, b) answers in its order are those
/// of a sort, in the same order (no sort key has ties here).
#[tokio::test(flavor = "multi_thread")]
async fn index_order_answers_equal_a_sort() {
    let mut server = TestServer::start("multicolumn-order");
    let c = server.client().await;
    create_mc(&c).await;
    let queries = [
        "SELECT a, b, d FROM mc WHERE a = 5 ORDER BY b LIMIT 7",
        "SELECT a, b, d FROM mc WHERE a = 5 ORDER BY b DESC LIMIT 7",
        "SELECT d FROM mc WHERE a = 5 ORDER BY b LIMIT 7",
        "SELECT a, b, d FROM mc WHERE a = 5 ORDER BY a, b LIMIT 7",
        "SELECT a, b, d FROM mc WHERE a = 5 ORDER BY b, a LIMIT 7",
        "SELECT a, b, d FROM mc ORDER BY a, b LIMIT 7",
        "SELECT a, b, d FROM mc ORDER BY a DESC, b DESC LIMIT 7",
        "SELECT a, b, d FROM mc WHERE a = 5 AND b > 100 ORDER BY b LIMIT 7",
        "SELECT a, b, d FROM mc WHERE a > 97 ORDER BY a, b LIMIT 7",
        "SELECT a, b, d FROM mc ORDER BY a, b, d DESC LIMIT 7",
    ];
    for query in queries {
        let lines = explain(&c, query).await;
        assert!(
            lines.iter().any(|l| l.contains("Index Scan"))
                && !lines.iter().any(|l| l.trim() == "->  Sort"),
            "{query}: {lines:#?}"
        );
        let by_index = rows(&c, query).await;
        c.batch_execute("SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off")
            .await
            .unwrap();
        let by_sort = rows(&c, query).await;
        c.batch_execute(
            "RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_indexonlyscan",
        )
        .await
        .unwrap();
        assert!(!by_index.is_empty(), "{query}");
        assert_eq!(by_index, by_sort, "{query}");
    }
    server.stop();
}

#[tokio::test(flavor = "multi_thread")]
async fn keys_of_several_columns_are_unique_as_postgres_says() {
    let mut server = TestServer::start("multicolumn-unique");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE pk2(x int, y int, z text, PRIMARY KEY (x, y));
         INSERT INTO pk2 VALUES (1, 1, 'a'), (1, 2, 'b'), (2, 1, 'a')",
    )
    .await
    .unwrap();
    let e = c
        .simple_query("INSERT INTO pk2 VALUES (1, 1, 'c')")
        .await
        .unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.code().code(), "23505");
    assert_eq!(
        db.message(),
        "duplicate key value violates unique constraint \"pk2_pkey\""
    );
    assert_eq!(db.detail(), Some("Key (x, y)=(1, 1) already exists."));
    // Primary key columns are NOT NULL.
    assert_eq!(
        error(&c, "INSERT INTO pk2 VALUES (NULL, 1, 'c')").await.0,
        "23502"
    );
    // A UNIQUE constraint added later checks the rows and then each insert; NULLs are
    // distinct.
    c.batch_execute("ALTER TABLE pk2 ADD CONSTRAINT pk2_yz UNIQUE (y, z)")
        .await
        .unwrap_err();
    c.batch_execute(
        "DELETE FROM pk2 WHERE x = 2;
         ALTER TABLE pk2 ADD CONSTRAINT pk2_yz UNIQUE (y, z);
         INSERT INTO pk2 VALUES (4, 1, NULL), (5, 1, NULL)",
    )
    .await
    .unwrap();
    let e = c
        .simple_query("INSERT INTO pk2 VALUES (3, 1, 'a')")
        .await
        .unwrap_err();
    assert_eq!(
        e.as_db_error().unwrap().detail(),
        Some("Key (y, z)=(1, a) already exists.")
    );
    // ON CONFLICT matches the constraint's columns in any order.
    for target in ["(x, y)", "(y, x)"] {
        let n = c
            .execute(
                &format!("INSERT INTO pk2 VALUES (1, 1, 'q') ON CONFLICT {target} DO NOTHING"),
                &[],
            )
            .await
            .unwrap();
        assert_eq!(n, 0, "{target}");
    }
    assert_eq!(
        error(
            &c,
            "INSERT INTO pk2 VALUES (1, 1, 'q') ON CONFLICT (x) DO NOTHING"
        )
        .await
        .0,
        "42P10"
    );
    // CREATE UNIQUE INDEX on duplicated pairs.
    c.batch_execute("CREATE TABLE d2(a int, b int); INSERT INTO d2 VALUES (1, 2), (1, 3), (1, 2)")
        .await
        .unwrap();
    let e = c
        .simple_query("CREATE UNIQUE INDEX ON d2(a, b)")
        .await
        .unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.message(), "could not create unique index \"d2_a_b_idx\"");
    assert_eq!(db.detail(), Some("Key (a, b)=(1, 2) is duplicated."));
    // PostgreSQL's limits and names.
    assert_eq!(
        error(&c, "CREATE TABLE t3(a int, b int, UNIQUE (a, a))").await,
        (
            "42701".to_string(),
            "column \"a\" appears twice in unique constraint".to_string()
        )
    );
    let wide: Vec<String> = (1..=33).map(|i| format!("c{i} int")).collect();
    let names: Vec<String> = (1..=33).map(|i| format!("c{i}")).collect();
    c.batch_execute(&format!("CREATE TABLE wide({})", wide.join(", ")))
        .await
        .unwrap();
    assert_eq!(
        error(&c, &format!("CREATE INDEX ON wide({})", names.join(", "))).await,
        (
            "54011".to_string(),
            "cannot use more than 32 columns in an index".to_string()
        )
    );
    c.batch_execute(&format!("CREATE INDEX ON wide({})", names[..32].join(", ")))
        .await
        .unwrap();
    c.batch_execute("CREATE INDEX ON d2(a, a)").await.unwrap();
    assert_eq!(
        rows(
            &c,
            "SELECT indexrelid::regclass::text, indkey::text, pg_get_indexdef(indexrelid)
               FROM pg_index WHERE indrelid = 'd2'::regclass"
        )
        .await,
        [[
            Some("d2_a_a1_idx".to_string()),
            Some("1 1".to_string()),
            Some("CREATE INDEX d2_a_a1_idx ON public.d2 USING btree (a, a)".to_string())
        ]]
    );
    assert_eq!(
        rows(
            &c,
            "SELECT conkey::text, pg_get_constraintdef(oid) FROM pg_constraint
              WHERE conrelid = 'pk2'::regclass ORDER BY conname"
        )
        .await,
        [
            [
                Some("{1,2}".to_string()),
                Some("PRIMARY KEY (x, y)".to_string())
            ],
            [Some("{2,3}".to_string()), Some("UNIQUE (y, z)".to_string())],
        ]
    );
    server.stop();
}
