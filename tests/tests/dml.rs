//! DELETE and UPDATE end to end: answers through Seq Scans, Bitmap Heap Scans and Index
//! Scans after them, transactions (rollback, what another session sees), concurrent
//! changes of one row (waits, READ COMMITTED's recheck of a row updated meanwhile, 40P01), the statistics they leave, and PostgreSQL's
//! errors.

use std::time::Duration;

use iolab_tests::{int, plan, rows, sqlstate, TestServer};

/// Every way of reading `t` agrees on `(count, sum(a), rows with b = 'upd')` for `cond`.
async fn same_through_every_scan(client: &tokio_postgres::Client, cond: &str) -> Vec<i64> {
    let query = format!(
        "SELECT count(*), coalesce(sum(a), 0), count(*) FILTER (WHERE b = 'upd') FROM t WHERE {cond}"
    );
    let mut answers = Vec::new();
    for (settings, node) in [
        (
            "SET enable_bitmapscan = off; SET enable_indexscan = off",
            "Seq Scan",
        ),
        (
            "SET enable_seqscan = off; SET enable_bitmapscan = on",
            "Bitmap Heap Scan",
        ),
        (
            "SET enable_bitmapscan = off; SET enable_indexscan = on",
            "Index Scan",
        ),
    ] {
        client.batch_execute(settings).await.unwrap();
        let lines = plan(client, &format!("EXPLAIN {query}")).await;
        assert!(
            lines.iter().any(|l| l.contains(node)),
            "{node} expected: {lines:#?}"
        );
        let r = rows(client, &query).await;
        let answer: Vec<i64> = r[0]
            .iter()
            .map(|v| v.as_ref().unwrap().parse().unwrap())
            .collect();
        answers.push(answer);
    }
    client
        .batch_execute("RESET enable_seqscan; RESET enable_bitmapscan; RESET enable_indexscan")
        .await
        .unwrap();
    assert!(
        answers.windows(2).all(|w| w[0] == w[1]),
        "{cond}: {answers:?}"
    );
    answers.swap_remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_and_update_through_every_scan() {
    let server = TestServer::start("dml");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE t(a int, b text);
             INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 5000) AS T(i);
             CREATE INDEX t_a ON t(a);",
        )
        .await
        .unwrap();
    let deleted = client
        .execute("DELETE FROM t WHERE a <= 100 OR a % 10 = 0", &[])
        .await
        .unwrap();
    // 1..=100, and the multiples of 10 above 100: 490.
    assert_eq!(deleted, 100 + 490);
    assert_eq!(
        same_through_every_scan(&client, "a < 300").await,
        // 101..=299 without the multiples of 10 (110, …, 290: 19).
        vec![199 - 19, (101..300).filter(|a| a % 10 != 0).sum::<i64>(), 0]
    );
    // Updates change rows in place for every reader, including moved keys.
    let updated = client
        .execute(
            "UPDATE t SET b = 'upd', a = a + 10000 WHERE a BETWEEN 201 AND 250",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(updated, 45);
    assert_eq!(
        same_through_every_scan(&client, "a BETWEEN 201 AND 250").await,
        vec![0, 0, 0]
    );
    let moved = (10201..=10250).filter(|a| a % 10 != 0).sum::<i64>();
    assert_eq!(
        same_through_every_scan(&client, "a > 10000").await,
        vec![45, moved, 45]
    );
    // A second update of the same rows, a delete of some of them.
    assert_eq!(
        client
            .execute("UPDATE t AS x SET a = x.a + 1 WHERE x.b = 'upd'", &[])
            .await
            .unwrap(),
        45
    );
    assert_eq!(
        client
            .execute("DELETE FROM t WHERE a > 10240", &[])
            .await
            .unwrap(),
        // Now 10202..=10251 without 10211, 10221, …, 10251: above 10240, 10242..=10250.
        9
    );
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, 5000 - 590 - 9);
    assert_eq!(
        int(&client, "SELECT iolab_btree_check('t_a')").await,
        5000 - 590 - 9,
        "the index holds every live row"
    );

    // UPDATE … FROM and DELETE … USING join other tables; a row joined twice changes once.
    client
        .batch_execute("CREATE TABLE k(a int); INSERT INTO k VALUES (301), (302), (302), (303);")
        .await
        .unwrap();
    assert_eq!(
        client
            .execute("UPDATE t SET b = 'upd' FROM k WHERE t.a = k.a", &[])
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        client
            .execute("DELETE FROM t USING k WHERE t.a = k.a", &[])
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        same_through_every_scan(&client, "a BETWEEN 301 AND 303").await,
        vec![0, 0, 0]
    );

    // Parameters, a column list, NULLs and assignment casts.
    client
        .execute(
            "UPDATE t SET (a, b) = ($1, $2) WHERE a = $3",
            &[&-1i32, &"minus", &401i32],
        )
        .await
        .unwrap();
    assert_eq!(
        rows(&client, "SELECT a, b FROM t WHERE a < 0").await,
        vec![vec![Some("-1".to_string()), Some("minus".to_string())]]
    );
    client
        .batch_execute("UPDATE t SET b = NULL, a = '402' WHERE a = -1")
        .await
        .unwrap();
    assert_eq!(
        int(
            &client,
            "SELECT count(*) FROM t WHERE a = 402 AND b IS NULL"
        )
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_see_their_own_changes_and_others_see_committed_ones() {
    let server = TestServer::start("dml_txn");
    let a = server.client().await;
    let b = server.client().await;
    a.batch_execute(
        "CREATE TABLE t(a int, b text);
         INSERT INTO t SELECT i, 'v' FROM generate_series(1, 1000) AS T(i);",
    )
    .await
    .unwrap();
    a.batch_execute("BEGIN; DELETE FROM t WHERE a <= 100; UPDATE t SET b = 'w' WHERE a <= 200")
        .await
        .unwrap();
    let state = "SELECT count(*), count(*) FILTER (WHERE b = 'w') FROM t";
    let counts = |c: i64, w: i64| vec![vec![Some(c.to_string()), Some(w.to_string())]];
    assert_eq!(rows(&a, state).await, counts(900, 100), "its own changes");
    assert_eq!(
        rows(&b, state).await,
        counts(1000, 0),
        "not another's, uncommitted"
    );
    a.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(rows(&a, state).await, counts(1000, 0), "rolled back");

    // Inserted and changed in one transaction; then committed.
    a.batch_execute(
        "BEGIN;
         INSERT INTO t SELECT i, 'new' FROM generate_series(1001, 1010) AS T(i);
         UPDATE t SET b = 'w' WHERE a > 1005;
         DELETE FROM t WHERE a = 1001;",
    )
    .await
    .unwrap();
    assert_eq!(rows(&a, state).await, counts(1009, 5));
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(rows(&b, state).await, counts(1009, 5));

    // What the statistics make of it all, at transaction end.
    let stats = rows(
        &b,
        "SELECT n_tup_ins, n_tup_upd, n_tup_del, n_live_tup, n_dead_tup
           FROM pg_stat_user_tables WHERE relname = 't'",
    )
    .await;
    // Inserted 1010; updated 100 (101..=200, rolled back) + 5; deleted 100 (rolled back)
    // + 1. Live: 1010 - 1; dead: the rolled-back update's 100 new versions, the committed
    // update's 5 old versions and the deleted row.
    let expected: Vec<Option<String>> = [1010, 105, 101, 1009, 100 + 5 + 1]
        .iter()
        .map(|n| Some(n.to_string()))
        .collect();
    assert_eq!(stats, vec![expected]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_changes_of_one_row_wait() {
    let server = TestServer::start("dml_concurrent");
    let a = server.client().await;
    let b = server.client().await;
    a.batch_execute(
        "CREATE TABLE t(a int, b text);
         INSERT INTO t SELECT i, 'v' FROM generate_series(1, 10) AS T(i);",
    )
    .await
    .unwrap();

    // B's delete of a row A is deleting waits for A; A commits: the row is gone for B.
    a.batch_execute("BEGIN; DELETE FROM t WHERE a = 1")
        .await
        .unwrap();
    let waiting = tokio::spawn(async move {
        let n = b.execute("DELETE FROM t WHERE a = 1", &[]).await.unwrap();
        (b, n)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "B waits for A");
    a.batch_execute("COMMIT").await.unwrap();
    let (b, n) = waiting.await.unwrap();
    assert_eq!(n, 0, "deleted by A already");

    // A rolls back instead: B's update goes ahead.
    a.batch_execute("BEGIN; UPDATE t SET b = 'a' WHERE a = 2")
        .await
        .unwrap();
    let waiting = tokio::spawn(async move {
        let n = b
            .execute("UPDATE t SET b = 'b' WHERE a = 2", &[])
            .await
            .unwrap();
        (b, n)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiting.is_finished(), "B waits for A");
    a.batch_execute("ROLLBACK").await.unwrap();
    let (b, n) = waiting.await.unwrap();
    assert_eq!(n, 1);
    assert_eq!(
        rows(&a, "SELECT b FROM t WHERE a = 2").await,
        vec![vec![Some("b".to_string())]]
    );

    // A commits an update: B's statements go on with the row's new version, as
    // PostgreSQL's READ COMMITTED does: the condition is checked again and the new values
    // computed from the newest version.
    async fn after_update_by_a(
        a: &tokio_postgres::Client,
        b: tokio_postgres::Client,
        update_by_a: &str,
        statement_by_b: &'static str,
    ) -> (tokio_postgres::Client, Vec<Vec<Option<String>>>) {
        a.batch_execute(&format!("BEGIN; {update_by_a}"))
            .await
            .unwrap();
        let waiting = tokio::spawn(async move {
            let got = rows(&b, statement_by_b).await;
            (b, got)
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(!waiting.is_finished(), "B waits for A: {statement_by_b}");
        a.batch_execute("COMMIT").await.unwrap();
        waiting.await.unwrap()
    }
    let some = |v: &str| vec![Some(v.to_string())];
    let (b, got) = after_update_by_a(
        &a,
        b,
        "UPDATE t SET b = b || 'A' WHERE a = 3",
        "UPDATE t SET b = b || 'B' WHERE a = 3 RETURNING b",
    )
    .await;
    assert_eq!(got, vec![some("vAB")], "B's change applies to A's version");
    let (b, got) = after_update_by_a(
        &a,
        b,
        "UPDATE t SET b = b || 'A' WHERE a = 6",
        "UPDATE t SET b = 'B' WHERE a = 6 AND b = 'v' RETURNING b",
    )
    .await;
    assert!(got.is_empty(), "A's version no longer meets B's condition");
    let (b, got) = after_update_by_a(
        &a,
        b,
        "UPDATE t SET a = 100 WHERE a = 8",
        "UPDATE t SET b = 'B' WHERE a = 8 RETURNING b",
    )
    .await;
    assert!(got.is_empty(), "A moved the row out of B's condition");
    let (b, got) = after_update_by_a(
        &a,
        b,
        "UPDATE t SET b = b || 'A' WHERE a = 7",
        "DELETE FROM t WHERE a = 7 RETURNING b",
    )
    .await;
    assert_eq!(got, vec![some("vA")], "B deletes A's version");
    assert_eq!(
        rows(
            &a,
            "SELECT a, b FROM t WHERE a IN (3, 6, 7, 8, 100) ORDER BY a"
        )
        .await,
        vec![
            vec![Some("3".to_string()), Some("vAB".to_string())],
            vec![Some("6".to_string()), Some("vA".to_string())],
            vec![Some("100".to_string()), Some("v".to_string())],
        ]
    );
    // A deletes instead: B finds nothing.
    let (b, got) = after_update_by_a(
        &a,
        b,
        "DELETE FROM t WHERE a = 100",
        "UPDATE t SET b = 'B' WHERE a = 100 RETURNING b",
    )
    .await;
    assert!(got.is_empty(), "deleted by A");

    // A deadlock: A holds row 4 and waits for row 5, which B holds; B asks for row 4.
    a.batch_execute("BEGIN; UPDATE t SET b = 'a' WHERE a = 4")
        .await
        .unwrap();
    b.batch_execute("BEGIN; UPDATE t SET b = 'b' WHERE a = 5")
        .await
        .unwrap();
    let waiting = tokio::spawn(async move {
        let r = a.execute("UPDATE t SET b = 'a' WHERE a = 5", &[]).await;
        (a, r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let e = b
        .execute("UPDATE t SET b = 'b' WHERE a = 4", &[])
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&e), "40P01", "{e:?}");
    b.batch_execute("ROLLBACK").await.unwrap();
    let (a, r) = waiting.await.unwrap();
    assert_eq!(r.unwrap(), 1, "A goes on once B has rolled back");
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(
        rows(&b, "SELECT a, b FROM t WHERE a IN (4, 5) ORDER BY a").await,
        vec![
            vec![Some("4".to_string()), Some("a".to_string())],
            vec![Some("5".to_string()), Some("a".to_string())],
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_postgres() {
    let server = TestServer::start("dml_errors");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t(a int NOT NULL, b text); INSERT INTO t VALUES (1, 'x');")
        .await
        .unwrap();
    for (sql, code) in [
        ("UPDATE t SET nope = 1", "42703"),
        ("UPDATE t SET a = 1, a = 2", "42601"),
        ("UPDATE t SET (a, b) = (1, 2, 3)", "42601"),
        ("UPDATE t SET t.a = 1", "42703"),
        ("UPDATE nope SET a = 1", "42P01"),
        ("DELETE FROM nope", "42P01"),
        ("DELETE FROM t WHERE nope = 1", "42703"),
        ("UPDATE t SET a = 'x'", "22P02"),
        ("UPDATE t SET a = NULL", "23502"),
        ("DELETE FROM t RETURNING old.a", "0A000"),
        // Row locks iolab does not take: refused rather than ignored.
        ("SELECT x.a FROM t x, t y WHERE x.a = 1 FOR UPDATE", "0A000"),
        ("SELECT * FROM (SELECT a FROM t FOR SHARE) s", "0A000"),
    ] {
        let e = client.batch_execute(sql).await.unwrap_err();
        assert_eq!(sqlstate(&e), code, "{sql}: {e:?}");
    }
    // Nothing changed, and the session goes on.
    assert_eq!(
        rows(&client, "SELECT a, b FROM t").await,
        vec![vec![Some("1".to_string()), Some("x".to_string())]]
    );
}

/// EXPLAIN of DELETE and UPDATE in PostgreSQL 18's layout (checked against a live
/// PostgreSQL 18 for the same statements): a ModifyTable node over the scan that finds the
/// rows; EXPLAIN alone changes nothing, EXPLAIN ANALYZE changes the rows (and a ROLLBACK
/// undoes that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_delete_and_update() {
    let server = TestServer::start("dml_explain");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE t(a int, b text);
             INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 10000) AS T(i);
             CREATE INDEX t_a ON t(a);
             ANALYZE t;
             SET enable_seqscan = off; SET enable_bitmapscan = off;",
        )
        .await
        .unwrap();
    assert_eq!(
        plan(&client, "EXPLAIN (COSTS OFF) DELETE FROM t WHERE a < 10").await,
        vec![
            "Delete on t",
            "  ->  Index Scan using t_a on t",
            "        Index Cond: (a < 10)",
        ]
    );
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, 10000);
    let lines = plan(
        &client,
        "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
         UPDATE t x SET b = 'u' WHERE a BETWEEN 100 AND 150",
    )
    .await;
    assert_eq!(
        lines[0], "Update on t x (actual rows=0.00 loops=1)",
        "{lines:#?}"
    );
    assert!(lines[1].starts_with("  Buffers: shared hit="), "{lines:#?}");
    assert_eq!(
        lines[2],
        "  ->  Index Scan using t_a on t x (actual rows=51.00 loops=1)"
    );
    assert_eq!(
        int(&client, "SELECT count(*) FROM t WHERE b = 'u'").await,
        51
    );
    client
        .batch_execute("BEGIN; RESET enable_seqscan")
        .await
        .unwrap();
    let lines = plan(
        &client,
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) DELETE FROM t",
    )
    .await;
    assert_eq!(
        lines,
        vec![
            "Delete on t (actual rows=0.00 loops=1)",
            "  ->  Seq Scan on t (actual rows=10000.00 loops=1)",
        ]
    );
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, 0);
    client.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, 10000);
}

/// VACUUM removes what DELETE and UPDATE left (heap tuples and index entries), keeps what
/// a running transaction may still see, and reports it in PostgreSQL 18's words; the
/// answers through every scan stay the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vacuum_removes_dead_rows_and_their_index_entries() {
    let server = TestServer::start("dml_vacuum");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE t(a int, b text);
             INSERT INTO t SELECT i, 'v' FROM generate_series(1, 10000) AS T(i);
             CREATE INDEX t_a ON t(a);
             DELETE FROM t WHERE a % 2 = 0;
             UPDATE t SET b = 'upd' WHERE a < 100;",
        )
        .await
        .unwrap();
    let before = same_through_every_scan(&client, "a BETWEEN 1 AND 3000").await;
    let size = int(&client, "SELECT pg_relation_size('t')").await;

    // A transaction that started before the next delete holds its rows back.
    let other = server.client().await;
    other
        .batch_execute("BEGIN; INSERT INTO t VALUES (-1, 'open')")
        .await
        .unwrap();
    client
        .batch_execute("DELETE FROM t WHERE a BETWEEN 9001 AND 9100")
        .await
        .unwrap();
    let messages = vacuum_verbose(&server, "t");
    let lines: Vec<&str> = messages.lines().collect();
    assert!(
        lines.contains(&"tuples: 5050 removed, 5000 remain, 50 are dead but not yet removable"),
        "{messages}"
    );
    // Every heap page lost rows: each one's pruning is (at least) one WAL record.
    let wal = lines
        .iter()
        .find(|l| l.starts_with("WAL usage: "))
        .expect(&messages);
    let records: i64 = wal["WAL usage: ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(records >= size / 8192, "{size} bytes of table: {wal}");
    // pg_stat_activity names the transaction that holds the horizon back.
    let holder = int(
        &client,
        "SELECT backend_xid FROM pg_stat_activity WHERE state = 'idle in transaction'",
    )
    .await;
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with(&format!("removable cutoff: {holder},"))),
        "{holder}: {messages}"
    );
    assert_eq!(
        rows(
            &client,
            "SELECT backend_xmin IS NOT NULL FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        )
        .await,
        vec![vec![Some("t".to_string())]],
        "a running statement has a snapshot"
    );
    assert!(
        lines.contains(
            &"index scan needed: 45 pages from table (100.00% of total) had 5050 dead item identifiers removed"
        ),
        "{messages}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("index \"t_a\": pages: ")),
        "{messages}"
    );
    // The first VACUUM marked the pages it left with only visible rows all-visible; the
    // second reads only the others (long runs of marked pages are skipped, as in
    // PostgreSQL) and estimates the rows of the pages it skipped.
    assert!(
        lines.iter().any(|l| l.starts_with("visibility map: ")
            && !l.starts_with("visibility map: 0 pages set all-visible")),
        "{messages}"
    );
    other.batch_execute("COMMIT").await.unwrap();
    let messages = vacuum_verbose(&server, "t");
    assert!(messages.contains("tuples: 50 removed, "), "{messages}");
    assert!(
        !messages.contains("45 scanned (100.00% of total)"),
        "all-visible pages skipped: {messages}"
    );
    assert_eq!(
        same_through_every_scan(&client, "a BETWEEN 1 AND 3000").await,
        before
    );
    assert_eq!(
        int(&client, "SELECT iolab_btree_check('t_a')").await,
        4951,
        "the index holds exactly the live rows"
    );
    // Live rows: counted on the pages read, estimated for the others (4951 in truth).
    let live = int(
        &client,
        "SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 't' AND n_dead_tup = 0",
    )
    .await;
    assert!((4800..=5100).contains(&live), "{live}");
    // The freed space takes new rows (the free space map): the file does not grow.
    client
        .batch_execute(
            "INSERT INTO t SELECT i, 'new' FROM generate_series(20001, 24000) AS T(i);
             UPDATE t SET b = 'moved' WHERE a BETWEEN 20001 AND 20500;",
        )
        .await
        .unwrap();
    assert_eq!(int(&client, "SELECT pg_relation_size('t')").await, size);
    assert_eq!(
        same_through_every_scan(&client, "a > 20000").await,
        vec![4000, (20001..=24000).sum::<i64>(), 0]
    );
    assert_eq!(
        int(&client, "SELECT count(*) FROM t WHERE b = 'moved'").await,
        500
    );
    assert_eq!(int(&client, "SELECT iolab_btree_check('t_a')").await, 8951);
    // The new rows sit among the old ones, not after them.
    let early = int(
        &client,
        "SELECT count(*) FROM t WHERE a > 20000
           AND split_part(trim(both '()' from ctid::text), ',', 1)::int < 40",
    )
    .await;
    assert!(early > 0, "{early}");
}

/// `VACUUM VERBOSE table` through psql; the INFO messages it printed.
fn vacuum_verbose(server: &TestServer, table: &str) -> String {
    let out = server.psql(&["-c", &format!("VACUUM VERBOSE {table}")]);
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}
