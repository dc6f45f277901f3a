//! The planner end to end: on an analyzed, indexed table the chosen scan switches between
//! Seq Scan, Bitmap Heap Scan and Index Scan as the predicate's selectivity and the
//! session's `enable_*` and `random_page_cost` change, per session; and every path returns
//! exactly what a Seq Scan returns.
//!
//! The plan is read from `EXPLAIN (COSTS OFF)`: the scan node's name, whether EXPLAIN
//! renders it as PostgreSQL does ("Bitmap Heap Scan") or by its DataFusion name
//! ("BitmapHeapScan"), compared without spaces.

use iolab_tests::{create_shuffled_t, plan, rows, TestServer};
use tokio_postgres::Client;

const ROWS: i64 = 100_000;

/// `t` has: `a = i % 1000` and `b = (i·7) % 500` (uniform, scattered over the table), `c = i`
/// (unique, in table order — `ORDER BY i`, as INSERT … SELECT otherwise stores batches in
/// arrival order: an index on it is perfectly correlated), `s = 'k' || i % 300`
/// (text), `n` (NULL for every 50th row), `f` (float8) and `d` (date).
async fn load(client: &Client) {
    client
        .batch_execute(&format!(
            "CREATE TABLE t(a int, b int, c int, s text, n int, f float8, d date, filler text);
             INSERT INTO t SELECT i % 1000, (i * 7) % 500, i, 'k' || (i % 300),
                    CASE WHEN i % 50 = 0 THEN NULL ELSE i % 97 END,
                    (i % 2000) / 4.0, CAST('2024-01-01' AS date) + (i % 400),
                    md5(i::text)
               FROM generate_series(1, {ROWS}) AS g(i) ORDER BY i;
             ANALYZE t;
             CREATE INDEX t_a ON t(a);
             CREATE INDEX t_b ON t(b);
             CREATE INDEX t_c ON t(c);
             CREATE INDEX t_s ON t(s);
             CREATE INDEX t_n ON t(n);
             CREATE INDEX t_f ON t(f);
             CREATE INDEX t_d ON t(d);"
        ))
        .await
        .expect("load");
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scan {
    Seq,
    Index,
    Bitmap,
}

/// EXPLAIN (COSTS OFF) of `sql`, its lines without spaces.
async fn plan_of(client: &Client, sql: &str) -> String {
    rows(client, &format!("EXPLAIN (COSTS OFF) {sql}"))
        .await
        .into_iter()
        .map(|r| r[0].clone().unwrap_or_default().replace(' ', ""))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The scan `sql` is planned with.
async fn scan_of(client: &Client, sql: &str) -> Scan {
    let plan = plan_of(client, sql).await;
    if plan.contains("BitmapHeapScan") {
        Scan::Bitmap
    } else if plan.contains("IndexScan") || plan.contains("IndexOnlyScan") {
        Scan::Index
    } else if plan.contains("SeqScan") {
        Scan::Seq
    } else {
        panic!("no scan in the plan of {sql}:\n{plan}")
    }
}

async fn set(client: &Client, settings: &str) {
    client
        .batch_execute(settings)
        .await
        .unwrap_or_else(|e| panic!("{settings}: {e:?}"));
}

const RESET: &str = "RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan;
                     RESET random_page_cost; RESET work_mem;";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_follows_selectivity_and_settings() {
    let server = TestServer::start("planner-choice");
    let client = server.client().await;
    load(&client).await;

    // Selectivity: a handful of rows by the correlated index, a few hundred scattered rows
    // by a bitmap, most of the table by a Seq Scan. Every choice asserted in this test is
    // the one PostgreSQL 18.4 makes on the same table (checked with EXPLAIN there).
    assert_eq!(
        scan_of(&client, "SELECT * FROM t WHERE c = 500").await,
        Scan::Index
    );
    assert_eq!(
        scan_of(&client, "SELECT * FROM t WHERE a = 5").await,
        Scan::Bitmap
    );
    assert_eq!(
        scan_of(&client, "SELECT * FROM t WHERE a < 5").await,
        Scan::Bitmap
    );
    assert_eq!(
        scan_of(&client, "SELECT * FROM t WHERE a < 900").await,
        Scan::Seq
    );
    assert_eq!(
        scan_of(&client, "SELECT * FROM t WHERE filler < 'a'").await,
        Scan::Seq
    );
    let and = plan_of(&client, "SELECT * FROM t WHERE a < 5 AND b < 5").await;
    assert!(
        and.contains("BitmapHeapScan") && and.contains("BitmapAnd"),
        "{and}"
    );
    let or = plan_of(&client, "SELECT * FROM t WHERE a < 3 OR b < 3").await;
    assert!(
        or.contains("BitmapHeapScan") && or.contains("BitmapOr"),
        "{or}"
    );
    assert_eq!(
        scan_of(&client, "SELECT * FROM t WHERE s = 'k7'").await,
        Scan::Bitmap
    );

    // enable_*: a disabled kind loses to any enabled one, and is still used when nothing
    // else can be.
    let other = server.client().await;
    set(&client, "SET enable_bitmapscan = off").await;
    assert_ne!(
        scan_of(&client, "SELECT * FROM t WHERE a = 5").await,
        Scan::Bitmap
    );
    // … in this session only.
    assert_eq!(
        scan_of(&other, "SELECT * FROM t WHERE a = 5").await,
        Scan::Bitmap
    );
    set(&client, "SET enable_seqscan = off").await;
    assert_eq!(
        scan_of(&client, "SELECT * FROM t WHERE a < 5").await,
        Scan::Index
    );
    set(&client, "SET enable_indexscan = off").await;
    assert_eq!(
        scan_of(&client, "SELECT * FROM t WHERE filler < 'a'").await,
        Scan::Seq,
        "no index applies: the disabled Seq Scan it is"
    );
    set(&client, "RESET enable_bitmapscan").await;
    assert_eq!(
        scan_of(&client, "SELECT * FROM t WHERE a < 900").await,
        Scan::Bitmap
    );
    set(&client, RESET).await;
    assert_eq!(
        scan_of(&client, "SELECT * FROM t WHERE c = 500").await,
        Scan::Index
    );

    // The break-even between Bitmap Heap Scan and Seq Scan moves up as random reads get
    // cheaper (PostgreSQL 18.4: a < 525 at random_page_cost 4, a < 575 at 1.5; iolab's
    // indexes are bigger, without deduplication, so its break-even lies lower).
    let mut thresholds = Vec::new();
    for cost in ["4", "1.5"] {
        set(&client, &format!("SET random_page_cost = {cost}")).await;
        let mut threshold = 1000;
        for k in (25..1000).step_by(25) {
            if scan_of(&client, &format!("SELECT * FROM t WHERE a < {k}")).await == Scan::Seq {
                threshold = k;
                break;
            }
        }
        thresholds.push(threshold);
    }
    assert!(
        thresholds[0] > 25 && thresholds[0] < thresholds[1],
        "break-even a < k at random_page_cost 4 and 1.5: {thresholds:?}"
    );
}

/// The rows of `sql` in the session as it is.
async fn answer(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    rows(client, sql).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_path_returns_what_a_seq_scan_returns() {
    let server = TestServer::start("planner-answers");
    let client = server.client().await;
    load(&client).await;

    let predicates = [
        "a = 5",
        "a < 5",
        "7 > a",
        "a BETWEEN 10 AND 12",
        "a >= 990",
        "a >= 5 AND a <= 6 AND a > 5",
        "c <= 40",
        "n IS NULL",
        "n IS NULL AND a < 100",
        "s = 'k7'",
        "s < 'k10'",
        "s > 'k95' AND s <= 'k97'",
        "f < 10.5",
        "f = 0",
        "d = CAST('2024-02-01' AS date)",
        "d < CAST('2024-01-03' AS date)",
        "a < 5 AND b < 5",
        "a < 3 OR b < 3",
        "(a < 2 OR s = 'k9') AND b < 100",
        "a < 50 AND filler > 'f'",
        // Bitmaps over most of the table's pages: lossy at 64kB (as is `n IS NULL`).
        "a < 100",
        "a < 60 OR b < 20",
    ];
    // Each path forced in turn; the fourth is a bitmap that goes lossy for the predicates
    // whose rows lie on more pages than 64kB of bitmap holds (1024).
    let paths = [
        (
            "seq",
            "SET enable_indexscan = off; SET enable_bitmapscan = off;",
        ),
        (
            "index",
            "SET enable_seqscan = off; SET enable_bitmapscan = off;",
        ),
        (
            "bitmap",
            "SET enable_seqscan = off; SET enable_indexscan = off;",
        ),
        (
            "lossy bitmap",
            "SET enable_seqscan = off; SET enable_indexscan = off; SET work_mem = '64kB';",
        ),
        ("chosen", ""),
    ];
    let mut kinds_used = std::collections::BTreeSet::new();
    for p in predicates {
        let sql = format!("SELECT c, a, b, s, n, f, d FROM t WHERE {p} ORDER BY c");
        set(&client, RESET).await;
        set(&client, paths[0].1).await;
        assert_eq!(scan_of(&client, &sql).await, Scan::Seq, "{p}");
        kinds_used.insert(format!("{:?}", Scan::Seq));
        let expected = answer(&client, &sql).await;
        let mut by_an_index = false;
        for (name, settings) in &paths[1..] {
            set(&client, RESET).await;
            set(&client, settings).await;
            let kind = scan_of(&client, &sql).await;
            kinds_used.insert(format!("{kind:?}"));
            by_an_index |= kind != Scan::Seq;
            let got = answer(&client, &sql).await;
            assert_eq!(
                got.len(),
                expected.len(),
                "{p}: {name} ({kind:?}) returned {} rows, the Seq Scan {}",
                got.len(),
                expected.len()
            );
            assert_eq!(got, expected, "{p}: {name} ({kind:?})");
        }
        assert!(by_an_index, "{p}: no path used an index");
    }
    assert_eq!(
        kinds_used.len(),
        3,
        "every kind of scan ran: {kinds_used:?}"
    );

    // LIMIT over an index path: as many rows as asked, each one matching.
    set(&client, RESET).await;
    set(
        &client,
        "SET enable_seqscan = off; SET enable_bitmapscan = off;",
    )
    .await;
    assert_eq!(
        scan_of(&client, "SELECT a FROM t WHERE a = 5 LIMIT 10").await,
        Scan::Index
    );
    let limited = answer(&client, "SELECT a, c FROM t WHERE a = 5 LIMIT 10").await;
    assert_eq!(limited.len(), 10);
    assert!(limited.iter().all(|r| r[0].as_deref() == Some("5")));
}

/// `enable_hashjoin = off`: equi-joins merge, in PostgreSQL 18's plan (sorts NULLs last),
/// with the hash join's answers for every join type, NULL keys included.
#[tokio::test(flavor = "multi_thread")]
async fn without_hash_joins_equi_joins_merge() {
    let server = TestServer::start("planner-merge-join");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE r AS SELECT i AS id, md5(i::text) AS t FROM generate_series(1, 20000) i;
         CREATE TABLE s AS SELECT CASE WHEN i % 50 = 0 THEN NULL ELSE i % 24000 END AS rid, i AS v
           FROM generate_series(1, 30000) i;
         ANALYZE r; ANALYZE s;",
    )
    .await
    .unwrap();
    let queries = [
        "SELECT count(*), sum(s.v), sum(length(r.t)) FROM s JOIN r ON r.id = s.rid",
        "SELECT count(*), count(r.id), sum(s.v) FROM s LEFT JOIN r ON r.id = s.rid",
        "SELECT count(*), count(r.id), count(s.rid) FROM s FULL JOIN r ON r.id = s.rid",
        "SELECT count(*) FROM s WHERE EXISTS (SELECT 1 FROM r WHERE r.id = s.rid)",
        "SELECT count(*) FROM s WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.id = s.rid)",
    ];
    let mut hashed = Vec::new();
    for q in queries {
        hashed.push(rows(&c, q).await);
    }
    c.batch_execute("SET enable_hashjoin = off").await.unwrap();
    let plan: Vec<String> = rows(
        &c,
        "EXPLAIN (COSTS OFF) SELECT count(*) FROM s JOIN r ON r.id = s.rid",
    )
    .await
    .into_iter()
    .map(|r| r[0].clone().unwrap())
    .collect();
    assert_eq!(
        plan,
        [
            "Aggregate",
            "  ->  Merge Join",
            "        Merge Cond: (s.rid = r.id)",
            "        ->  Sort",
            "              Sort Key: s.rid",
            "              ->  Seq Scan on s",
            "        ->  Sort",
            "              Sort Key: r.id",
            "              ->  Seq Scan on r"
        ]
    );
    for (q, want) in queries.iter().zip(&hashed) {
        assert_eq!(&rows(&c, q).await, want, "{q}");
    }
}

/// A condition on an uncorrelated scalar subquery's value (PostgreSQL's InitPlan) is an
/// index condition, taken when the scan starts: PostgreSQL 18's plans for the same table,
/// and a Seq Scan's answers, NULL values included.
#[tokio::test(flavor = "multi_thread")]
async fn conditions_on_init_plan_values_use_indexes() {
    let server = TestServer::start("planner-init-plan-params");
    let c = server.client().await;
    create_shuffled_t(&c).await;
    let explain = |q: &'static str| {
        let c = &c;
        async move { plan(c, &format!("EXPLAIN (COSTS OFF) {q}")).await }
    };
    let max_init_plan = |scan: &str| {
        [
            "  InitPlan 2",
            "    ->  Result",
            "          InitPlan 1",
            "            ->  Limit",
        ]
        .into_iter()
        .map(String::from)
        .chain([
            format!("                  ->  Index Only Scan {scan}using t_a_idx on t t_1"),
            "                        Index Cond: (a IS NOT NULL)".into(),
        ])
        .collect::<Vec<_>>()
    };
    let equal = "SELECT * FROM t WHERE a = (SELECT max(a) FROM t)";
    let mut expected = vec![
        "Index Scan using t_a_idx on t".to_string(),
        "  Index Cond: (a = (InitPlan 2).col1)".into(),
    ];
    expected.extend(max_init_plan("Backward "));
    assert_eq!(explain(equal).await, expected);
    let ordered = "SELECT a FROM t WHERE a > (SELECT max(a) - 100 FROM t) ORDER BY a";
    let mut expected = vec![
        "Index Only Scan using t_a_idx on t".to_string(),
        "  Index Cond: (a > (InitPlan 2).col1)".into(),
    ];
    expected.extend(max_init_plan("Backward "));
    assert_eq!(explain(ordered).await, expected);
    let below = "SELECT count(*) FROM t WHERE a < (SELECT min(a) + 1000 FROM t)";
    let mut expected = vec!["Aggregate".to_string()];
    expected.extend(max_init_plan(""));
    expected.extend([
        "  ->  Bitmap Heap Scan on t".to_string(),
        "        Recheck Cond: (a < (InitPlan 2).col1)".into(),
        "        ->  Bitmap Index Scan on t_a_idx".into(),
        "              Index Cond: (a < (InitPlan 2).col1)".into(),
    ]);
    assert_eq!(explain(below).await, expected);

    for q in [
        equal,
        ordered,
        below,
        "SELECT * FROM t WHERE a = (SELECT NULL::int)",
        "SELECT count(*) FROM t WHERE a <= (SELECT 5000000000::bigint)",
        "SELECT count(*) FROM t WHERE a >= (SELECT max(a) FROM t WHERE b LIKE 'f%') AND b < '8'",
    ] {
        let from_index = answer(&c, q).await;
        set(
            &c,
            "SET enable_indexscan = off; SET enable_bitmapscan = off",
        )
        .await;
        assert!(
            !explain(q)
                .await
                .iter()
                .any(|l| l.contains("Index Cond: (a ")),
            "{q}"
        );
        assert_eq!(from_index, answer(&c, q).await, "{q}");
        set(&c, RESET).await;
    }
    assert!(answer(&c, "SELECT * FROM t WHERE a = (SELECT NULL::int)")
        .await
        .is_empty());
}
