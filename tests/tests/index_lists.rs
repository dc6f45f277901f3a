//! `col IN (…)` on an indexed column: PostgreSQL's `col = ANY (array)` index condition, one
//! Index Scan or Bitmap Index Scan that descends once per value (or reads on where the
//! values share a leaf), instead of a Seq Scan; the plans PostgreSQL 18 prints for the same
//! statements, and the answers of a Seq Scan.

use iolab_tests::{create_shop, figure, plan, rows, TestServer};
use tokio_postgres::Client;

async fn explain(c: &Client, query: &str) -> Vec<String> {
    plan(c, &format!("EXPLAIN (COSTS OFF) {query}")).await
}

#[tokio::test(flavor = "multi_thread")]
async fn in_lists_are_index_conditions() {
    let server = TestServer::start("index-lists");
    let c = server.client().await;
    create_shop(&c).await;
    // PostgreSQL 18.4, same tables and statements.
    let cases: [(&str, &[&str]); 12] = [
        (
            // Three values or fewer reach the planner as an OR (DataFusion's rewrite),
            // scanned as one list as PostgreSQL 18 scans an OR of one column's equalities.
            "SELECT * FROM orders WHERE id IN (1,2,3)",
            &[
                "Index Scan using orders_pkey on orders",
                "  Index Cond: (id = ANY ('{1,2,3}'::integer[]))",
            ],
        ),
        (
            "SELECT * FROM orders WHERE (id = 1 OR id = 2) AND amount > 3",
            &[
                "Index Scan using orders_pkey on orders",
                "  Index Cond: (id = ANY ('{1,2}'::integer[]))",
                "  Filter: (amount > 3)",
            ],
        ),
        (
            "SELECT * FROM orders WHERE cust_id = 5 OR cust_id = 17",
            &[
                "Bitmap Heap Scan on orders",
                "  Recheck Cond: ((cust_id = 5) OR (cust_id = 17))",
                "  ->  Bitmap Index Scan on orders_cust_id_idx",
                "        Index Cond: (cust_id = ANY ('{5,17}'::integer[]))",
            ],
        ),
        (
            "SELECT * FROM orders WHERE id IN (1,2,3,4,5)",
            &[
                "Index Scan using orders_pkey on orders",
                "  Index Cond: (id = ANY ('{1,2,3,4,5}'::integer[]))",
            ],
        ),
        (
            // An untyped array text takes the column's type.
            "SELECT * FROM orders WHERE id = ANY ('{1,2,3,4,5}')",
            &[
                "Index Scan using orders_pkey on orders",
                "  Index Cond: (id = ANY ('{1,2,3,4,5}'::integer[]))",
            ],
        ),
        (
            "SELECT * FROM orders WHERE cust_id IN (5, 17, 99, 1234)",
            &[
                "Bitmap Heap Scan on orders",
                "  Recheck Cond: (cust_id = ANY ('{5,17,99,1234}'::integer[]))",
                "  ->  Bitmap Index Scan on orders_cust_id_idx",
                "        Index Cond: (cust_id = ANY ('{5,17,99,1234}'::integer[]))",
            ],
        ),
        (
            "SELECT * FROM orders WHERE id IN (1,2,3,4,5) AND amount > 2",
            &[
                "Index Scan using orders_pkey on orders",
                "  Index Cond: (id = ANY ('{1,2,3,4,5}'::integer[]))",
                "  Filter: (amount > 2)",
            ],
        ),
        (
            "SELECT * FROM lines WHERE order_id IN (10, 20, 30, 40) AND line = 2",
            &[
                "Index Scan using lines_pkey on lines",
                "  Index Cond: ((order_id = ANY ('{10,20,30,40}'::integer[])) AND (line = 2))",
            ],
        ),
        (
            "SELECT count(*) FROM orders WHERE id IN (1,2,3,4,5,6,7,8,9,10,11,12)",
            &[
                "Aggregate",
                "  ->  Index Only Scan using orders_pkey on orders",
                "        Index Cond: (id = ANY ('{1,2,3,4,5,6,7,8,9,10,11,12}'::integer[]))",
            ],
        ),
        (
            // The values are scanned in ascending order: no sort for an ORDER BY.
            "SELECT id, amount FROM orders WHERE id IN (5,3,1,9,300000) ORDER BY id LIMIT 3",
            &[
                "Limit",
                "  ->  Index Scan using orders_pkey on orders",
                "        Index Cond: (id = ANY ('{5,3,1,9,300000}'::integer[]))",
            ],
        ),
        (
            "SELECT * FROM lines WHERE order_id IN (10, 20, 30, 40) ORDER BY order_id, line",
            &[
                "Index Scan using lines_pkey on lines",
                "  Index Cond: (order_id = ANY ('{10,20,30,40}'::integer[]))",
            ],
        ),
        (
            "SELECT * FROM orders WHERE id NOT IN (1,2,3,4,5) AND id < 10",
            &[
                "Index Scan using orders_pkey on orders",
                "  Index Cond: (id < 10)",
                "  Filter: (id <> ALL ('{1,2,3,4,5}'::integer[]))",
            ],
        ),
    ];
    for (query, expected) in cases {
        assert_eq!(explain(&c, query).await, expected, "{query}");
    }
    // Values on one leaf take one descent, as in PostgreSQL 18; values far apart one each.
    for (list, searches) in [("1,2,3,4,5", 1.0), ("1,50000,100000,150000", 4.0)] {
        let lines = plan(
            &c,
            &format!("EXPLAIN (ANALYZE, COSTS OFF) SELECT * FROM orders WHERE id IN ({list})"),
        )
        .await;
        assert!(lines[0].contains("loops=1"), "{lines:#?}");
        assert_eq!(
            figure(&lines, "Index Searches:", "Index Searches: "),
            Some(searches),
            "{list}: {lines:#?}"
        );
    }
}

/// The answers of index-list scans (Index, Index Only and Bitmap Heap Scans; NULLs,
/// repeats, absent values, a list meeting a range on the same column, every value
/// filtered out) are those of a Seq Scan.
#[tokio::test(flavor = "multi_thread")]
async fn in_list_answers_are_the_seq_scans() {
    let server = TestServer::start("index-lists-answers");
    let c = server.client().await;
    iolab_tests::run_script(
        &c,
        "CREATE TABLE t(a int, b text);
         INSERT INTO t SELECT CASE WHEN i % 97 = 0 THEN NULL ELSE i % 5000 END, md5(i::text)
           FROM generate_series(1, 100000) i;
         CREATE INDEX ON t(a);
         VACUUM ANALYZE t;",
    )
    .await
    .unwrap();
    let big: Vec<String> = (0..600).map(|i| (i * 7 % 5100).to_string()).collect();
    // (Lists of up to three values reach the planner as ORs of equalities: DataFusion
    // rewrites them; scanned as lists, but with a NULL arm as a BitmapOr of the others.)
    let queries = [
        "SELECT a, b FROM t WHERE a IN (3, 1, 3, 4999, 7000, -1)".to_string(),
        "SELECT a, b FROM t WHERE a IN (3, NULL, 8)".to_string(),
        "SELECT count(*) FROM t WHERE a IN (10, 20, 30, 10, 20)".to_string(),
        "SELECT a, b FROM t WHERE a IN (10, 20, 30, 40) AND a > 15".to_string(),
        "SELECT a, b FROM t WHERE a IN (10, 20, 30, 40) AND a > 40".to_string(),
        format!("SELECT a, b FROM t WHERE a IN ({})", big.join(", ")),
        "SELECT a FROM t WHERE a IN (5, 6, 7, 8) ORDER BY a".to_string(),
        "SELECT a, b FROM t WHERE a IN (8, 5, 7, 6) ORDER BY a, b LIMIT 30".to_string(),
        "SELECT a FROM t WHERE a IN (8, 5, 7, 6) ORDER BY a DESC LIMIT 30".to_string(),
    ];
    for q in &queries {
        let lines = explain(&c, q).await;
        let list = !q.contains("NULL");
        assert!(
            lines.iter().any(|l| l.contains("t_a_idx"))
                && lines.iter().any(|l| l.contains("= ANY (")) == list,
            "{q}: {lines:#?}"
        );
        let mut indexed = rows(&c, q).await;
        c.batch_execute("SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off")
            .await
            .unwrap();
        assert!(
            !explain(&c, q).await.iter().any(|l| l.contains("Index")),
            "{q}"
        );
        let mut seq = rows(&c, q).await;
        c.batch_execute(
            "RESET enable_indexscan; RESET enable_bitmapscan; RESET enable_indexonlyscan",
        )
        .await
        .unwrap();
        if !q.contains("ORDER BY") {
            indexed.sort();
            seq.sort();
        }
        assert_eq!(indexed, seq, "{q}");
    }
}
