//! Relation (table) locks end to end, two or three sessions at a time, as PostgreSQL's
//! heavyweight locks: the mode each statement takes, what waits for what (and what does
//! not), a waiting request keeping its place in the queue except for a holder's own
//! upgrade, `LOCK [TABLE]`, NOWAIT, `lock_timeout`, `statement_timeout`, deadlocks, the
//! moments locks are released (COMMIT, ROLLBACK, an error, ROLLBACK TO SAVEPOINT, the end
//! of an autocommit statement, a client going away), and how a wait shows in `pg_locks`,
//! `pg_blocking_pids` and `pg_stat_activity`. Every message, SQLSTATE, mode name and
//! outcome asserted here is what PostgreSQL 18 gave for the same statements.

use std::time::{Duration, Instant};

use iolab_tests::waiting::{self, exec, oid, outcome, pid, Outcome};
use iolab_tests::{error, int, plan, rows, sqlstate, TestServer};
use tokio::task::JoinHandle;
use tokio_postgres::{Client, NoTls};

/// How long a statement that should have stopped waiting (or a build) is given before the
/// test calls it stuck: a guard against hanging, not a timing.
const STUCK: Duration = Duration::from_secs(30);

/// How long a statement that should not wait at all is given: a guard, not a timing.
const NO_WAIT: Duration = Duration::from_secs(10);

/// How long a statement that may wait is given to start before the test looks.
const START: Duration = Duration::from_millis(300);

/// `sql` (simple protocol), which must not wait for any lock.
async fn at_once(client: &Client, sql: &str) {
    waiting::at_once(client, sql, NO_WAIT).await
}

/// The integer `sql` returns, which must not wait for any lock.
async fn int_at_once(client: &Client, sql: &str) -> i64 {
    tokio::time::timeout(NO_WAIT, int(client, sql))
        .await
        .unwrap_or_else(|_| panic!("{sql} waited"))
}

/// The first column of each row of `sql`.
async fn column(client: &Client, sql: &str) -> Vec<String> {
    rows(client, sql)
        .await
        .into_iter()
        .map(|r| r[0].clone().unwrap_or_default())
        .collect()
}

/// Each row of `sql`, its values as text (NULL as "").
async fn table(client: &Client, sql: &str) -> Vec<Vec<String>> {
    rows(client, sql)
        .await
        .into_iter()
        .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
        .collect()
}

fn failed(code: &str, message: &str) -> Outcome {
    Err((code.to_string(), message.to_string()))
}

/// `sql` run by `client` on another task, which may wait.
async fn started(client: Client, sql: &str) -> JoinHandle<(Client, Outcome)> {
    waiting::started(client, sql, START).await
}

/// The end of a [`started`] statement.
async fn finished(task: JoinHandle<(Client, Outcome)>) -> (Client, Outcome) {
    waiting::finished(task, STUCK).await
}

/// `pid, mode, granted, waitstart IS NOT NULL` of each relation lock on `oid`, the waiting
/// ones first.
async fn locks_on(watcher: &Client, oid: i64) -> Vec<Vec<String>> {
    table(
        watcher,
        &format!(
            "SELECT pid, mode, granted, waitstart IS NOT NULL FROM pg_locks
              WHERE locktype = 'relation' AND relation = {oid}
              ORDER BY granted, mode, pid"
        ),
    )
    .await
}

fn lock_row(pid: i64, mode: &str, granted: bool) -> Vec<String> {
    let (granted, waiting) = if granted { ("t", "f") } else { ("f", "t") };
    vec![pid.to_string(), mode.into(), granted.into(), waiting.into()]
}

/// The modes the session holds on relation `oid`, by name.
async fn own_modes(client: &Client, oid: i64) -> Vec<String> {
    column(
        client,
        &format!(
            "SELECT mode FROM pg_locks
              WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation = {oid}
              ORDER BY mode"
        ),
    )
    .await
}

/// `t(id int PRIMARY KEY, v text)` with 100 rows.
async fn create_t(client: &Client) {
    exec(
        client,
        "CREATE TABLE t (id int PRIMARY KEY, v text);
         INSERT INTO t SELECT i, 'v' || i FROM generate_series(1, 100) AS s(i)",
    )
    .await;
}

/// The bug relation locks fix: rows inserted by other sessions while CREATE INDEX built
/// were missing from the index (an Index Only Scan counted 13 of 20). With the index
/// build's ShareLock, the inserts wait for it (PostgreSQL 18: the first INSERT waited,
/// and the index then had all 20).
#[tokio::test(flavor = "multi_thread")]
async fn create_index_misses_no_row_inserted_during_its_build() {
    let server = TestServer::start("relation-locks-create-index");
    let a = server.client().await;
    let b = server.client().await;
    exec(
        &a,
        "CREATE TABLE r (a int, b int);
         INSERT INTO r SELECT i, i % 100 FROM generate_series(1, 1500000) AS s(i)",
    )
    .await;
    let build = tokio::spawn(async move {
        let got = outcome(a.batch_execute("CREATE INDEX r_a ON r (a)").await);
        (a, got)
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    for i in 1..=20 {
        exec(&b, &format!("INSERT INTO r VALUES (-{i}, {i})")).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (a, built) = finished(build).await;
    assert_eq!(built, Ok(()));

    exec(&a, "SET enable_seqscan = off; SET enable_bitmapscan = off").await;
    let count = "SELECT count(*) FROM r WHERE a < 0";
    let lines = plan(&a, &format!("EXPLAIN {count}")).await;
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Index Only Scan using r_a")),
        "{lines:?}"
    );
    assert_eq!(int(&a, count).await, 20, "rows found through the index");
    exec(&a, "SET enable_indexonlyscan = off").await;
    let sum = "SELECT sum(b) FROM r WHERE a < 0";
    let lines = plan(&a, &format!("EXPLAIN {sum}")).await;
    assert!(
        lines.iter().any(|l| l.contains("Index Scan using r_a")),
        "{lines:?}"
    );
    assert_eq!(int(&a, sum).await, 210, "rows fetched through the index");
    exec(&a, "SET enable_seqscan = on; SET enable_indexscan = off").await;
    let lines = plan(&a, &format!("EXPLAIN {count}")).await;
    assert!(lines.iter().any(|l| l.contains("Seq Scan")), "{lines:?}");
    assert_eq!(int(&a, count).await, 20, "rows found by a sequential scan");
}

/// CREATE INDEX's ShareLock waits for a writer's open transaction (its RowExclusiveLock),
/// and the rows that transaction commits are in the index.
#[tokio::test(flavor = "multi_thread")]
async fn an_open_write_transaction_holds_off_create_index() {
    let server = TestServer::start("relation-locks-create-index-waits");
    let a = server.client().await;
    let b = server.client().await;
    let watcher = server.client().await;
    exec(
        &a,
        "CREATE TABLE r (a int, b int);
         INSERT INTO r SELECT i, i FROM generate_series(1, 1000) AS s(i)",
    )
    .await;
    let r = oid(&a, "r").await;
    let (a_pid, b_pid) = (pid(&a).await, pid(&b).await);
    exec(&a, "BEGIN; INSERT INTO r VALUES (-1, 1)").await;
    let build = started(b, "CREATE INDEX r_a ON r (a)").await;
    assert!(
        !build.is_finished(),
        "CREATE INDEX waits for A's transaction"
    );
    assert_eq!(
        locks_on(&watcher, r).await,
        [
            lock_row(b_pid, "ShareLock", false),
            lock_row(a_pid, "RowExclusiveLock", true)
        ]
    );
    exec(&a, "INSERT INTO r VALUES (-2, 2); COMMIT").await;
    let (b, built) = finished(build).await;
    assert_eq!(built, Ok(()));
    exec(&b, "SET enable_seqscan = off; SET enable_bitmapscan = off").await;
    assert_eq!(int(&b, "SELECT count(*) FROM r WHERE a < 0").await, 2);
}

/// A reader's open transaction holds off TRUNCATE and DROP TABLE (AccessExclusiveLock),
/// and the wait shows as in PostgreSQL 18: the waiter's lock not granted in `pg_locks`
/// with its `waitstart`, `Lock` / `relation` in `pg_stat_activity`, the reader's pid in
/// `pg_blocking_pids`.
#[tokio::test(flavor = "multi_thread")]
async fn a_readers_transaction_holds_off_truncate_and_drop() {
    let server = TestServer::start("relation-locks-reader");
    let a = server.client().await;
    let b = server.client().await;
    let watcher = server.client().await;
    create_t(&a).await;
    let t = oid(&a, "t").await;
    let (a_pid, b_pid) = (pid(&a).await, pid(&b).await);

    exec(&a, "BEGIN").await;
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, 100);
    let truncate = started(b, "TRUNCATE t").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !truncate.is_finished(),
        "TRUNCATE waits for A's transaction"
    );
    assert_eq!(
        locks_on(&watcher, t).await,
        [
            lock_row(b_pid, "AccessExclusiveLock", false),
            lock_row(a_pid, "AccessShareLock", true)
        ]
    );
    assert_eq!(
        table(
            &watcher,
            &format!(
                "SELECT wait_event_type, wait_event, pg_blocking_pids(pid)::text
                   FROM pg_stat_activity WHERE pid = {b_pid}"
            )
        )
        .await,
        [[
            "Lock".to_string(),
            "relation".into(),
            format!("{{{a_pid}}}")
        ]]
    );
    // A reads on: it holds its lock already.
    assert_eq!(int_at_once(&a, "SELECT count(*) FROM t").await, 100);
    exec(&a, "COMMIT").await;
    let (b, truncated) = finished(truncate).await;
    assert_eq!(truncated, Ok(()));
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, 0);
    assert_eq!(
        table(
            &watcher,
            &format!(
                "SELECT wait_event_type IS DISTINCT FROM 'Lock',
                        cardinality(pg_blocking_pids(pid))
                   FROM pg_stat_activity WHERE pid = {b_pid}"
            )
        )
        .await,
        [["t", "0"]]
    );

    exec(&a, "BEGIN; SELECT count(*) FROM t").await;
    let dropping = started(b, "DROP TABLE t").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        !dropping.is_finished(),
        "DROP TABLE waits for A's transaction"
    );
    assert_eq!(
        locks_on(&watcher, t).await,
        [
            lock_row(b_pid, "AccessExclusiveLock", false),
            lock_row(a_pid, "AccessShareLock", true)
        ]
    );
    exec(&a, "COMMIT").await;
    let (_, dropped) = finished(dropping).await;
    assert_eq!(dropped, Ok(()));
    assert_eq!(
        int(&a, "SELECT count(*) FROM pg_class WHERE relname = 't'").await,
        0
    );
    assert_eq!(locks_on(&watcher, t).await, Vec::<Vec<String>>::new());
}

/// AccessShareLock conflicts with AccessExclusiveLock only: a reader's open transaction
/// lets other sessions read, write, lock rows, build an index, analyze and vacuum; and a
/// writer's (RowExclusiveLock) lets them read and write.
#[tokio::test(flavor = "multi_thread")]
async fn readers_block_neither_readers_nor_writers() {
    let server = TestServer::start("relation-locks-readers");
    let a = server.client().await;
    let b = server.client().await;
    create_t(&a).await;
    exec(&a, "BEGIN").await;
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, 100);
    assert_eq!(int_at_once(&b, "SELECT count(*) FROM t").await, 100);
    for sql in [
        "INSERT INTO t VALUES (101, 'x')",
        "UPDATE t SET v = 'y' WHERE id = 1",
        "DELETE FROM t WHERE id = 2",
        "SELECT * FROM t WHERE id = 3 FOR UPDATE",
        "CREATE INDEX t_v ON t (v)",
        "ANALYZE t",
        "VACUUM t",
    ] {
        at_once(&b, sql).await;
    }
    assert_eq!(int_at_once(&b, "SELECT count(*) FROM t").await, 100);
    exec(&a, "COMMIT").await;

    exec(&a, "BEGIN; INSERT INTO t VALUES (200, 'z')").await;
    assert_eq!(int_at_once(&b, "SELECT count(*) FROM t").await, 100);
    at_once(&b, "INSERT INTO t VALUES (201, 'z')").await;
    at_once(&b, "UPDATE t SET v = 'w' WHERE id = 4").await;
    at_once(&b, "BEGIN; SELECT * FROM t WHERE id = 5 FOR SHARE; COMMIT").await;
    exec(&a, "COMMIT").await;
    assert_eq!(int(&b, "SELECT count(*) FROM t").await, 102);
}

/// The mode each statement takes on its table, as PostgreSQL 18's `pg_locks` showed it
/// inside a transaction block; a SELECT also locks the table's indexes.
#[tokio::test(flavor = "multi_thread")]
async fn each_statement_takes_its_mode() {
    let server = TestServer::start("relation-locks-modes");
    let a = server.client().await;
    exec(
        &a,
        "CREATE TABLE t (id int PRIMARY KEY, v int);
         CREATE INDEX t_v ON t (v);
         INSERT INTO t SELECT i, i FROM generate_series(1, 10) AS s(i);
         CREATE TABLE u (id int, v int);
         CREATE VIEW tv AS SELECT * FROM t WHERE v > 2",
    )
    .await;
    let t = oid(&a, "t").await;
    let cases: &[(&str, &[&str])] = &[
        ("SELECT * FROM t", &["AccessShareLock"]),
        ("EXPLAIN SELECT * FROM t", &["AccessShareLock"]),
        ("SELECT * FROM tv", &["AccessShareLock"]),
        ("SELECT * FROM t WHERE id = 1 FOR UPDATE", &["RowShareLock"]),
        ("SELECT * FROM t FOR SHARE", &["RowShareLock"]),
        ("INSERT INTO t VALUES (11, 11)", &["RowExclusiveLock"]),
        ("UPDATE t SET v = v + 1 WHERE id = 1", &["RowExclusiveLock"]),
        ("DELETE FROM t WHERE id = 5", &["RowExclusiveLock"]),
        ("INSERT INTO u SELECT * FROM t", &["AccessShareLock"]),
        ("CREATE TABLE c AS SELECT * FROM t", &["AccessShareLock"]),
        ("CREATE INDEX t_v2 ON t (v)", &["ShareLock"]),
        ("ANALYZE t", &["ShareUpdateExclusiveLock"]),
        ("ALTER TABLE t ADD COLUMN w int", &["AccessExclusiveLock"]),
        ("DROP INDEX t_v", &["AccessExclusiveLock"]),
        (
            "LOCK t IN SHARE ROW EXCLUSIVE MODE",
            &["ShareRowExclusiveLock"],
        ),
        (
            "SELECT * FROM t; UPDATE t SET v = 0 WHERE id = 2",
            &["AccessShareLock", "RowExclusiveLock"],
        ),
    ];
    for &(sql, modes) in cases {
        exec(&a, "BEGIN").await;
        exec(&a, sql).await;
        assert_eq!(own_modes(&a, t).await, modes, "{sql}");
        exec(&a, "ROLLBACK").await;
    }
    // PostgreSQL's planner locks every index of a table it reads, in the table's mode.
    let (pkey, t_v) = (oid(&a, "t_pkey").await, oid(&a, "t_v").await);
    exec(&a, "BEGIN; SELECT * FROM t WHERE id = 1").await;
    assert_eq!(own_modes(&a, pkey).await, ["AccessShareLock"], "t_pkey");
    assert_eq!(own_modes(&a, t_v).await, ["AccessShareLock"], "t_v");
    exec(&a, "ROLLBACK").await;
}

/// `LOCK [TABLE] name [, …] [IN mode MODE] [NOWAIT]`: only in a transaction block (an
/// implicit one — several statements in one Query — counts), ACCESS EXCLUSIVE by default,
/// each mode by PostgreSQL's name; NOWAIT fails at once; PostgreSQL's errors for a
/// misspelled mode and a missing table.
#[tokio::test(flavor = "multi_thread")]
async fn lock_table() {
    let server = TestServer::start("relation-locks-lock-table");
    let a = server.client().await;
    let b = server.client().await;
    let c = server.client().await;
    create_t(&a).await;
    exec(&a, "CREATE TABLE u (id int)").await;
    let (t, u) = (oid(&a, "t").await, oid(&a, "u").await);
    let outside = (
        "25P01".to_string(),
        "LOCK TABLE can only be used in transaction blocks".to_string(),
    );
    assert_eq!(error(&a, "LOCK TABLE t").await, outside);
    assert_eq!(error(&a, "LOCK t IN SHARE MODE NOWAIT").await, outside);
    assert_eq!(error(&a, "LOCK t, nope").await, outside);
    // In a block sent as one Query, the lock ends with the block.
    assert_eq!(
        column(
            &a,
            "BEGIN; LOCK t IN ACCESS EXCLUSIVE MODE; SELECT 1; COMMIT"
        )
        .await,
        ["1"]
    );
    assert_eq!(int_at_once(&b, "SELECT count(*) FROM t").await, 100);

    assert_eq!(
        error(&a, "LOCK t IN FOO MODE").await,
        ("42601".into(), "syntax error at or near \"FOO\"".into())
    );
    exec(&a, "BEGIN").await;
    assert_eq!(
        error(&a, "LOCK nope").await,
        ("42P01".into(), "relation \"nope\" does not exist".into())
    );
    exec(&a, "ROLLBACK").await;

    for (clause, mode) in [
        ("", "AccessExclusiveLock"),
        (" IN ACCESS SHARE MODE", "AccessShareLock"),
        (" IN ROW SHARE MODE", "RowShareLock"),
        (" IN ROW EXCLUSIVE MODE", "RowExclusiveLock"),
        (
            " IN SHARE UPDATE EXCLUSIVE MODE",
            "ShareUpdateExclusiveLock",
        ),
        (" IN SHARE MODE", "ShareLock"),
        (" IN SHARE ROW EXCLUSIVE MODE", "ShareRowExclusiveLock"),
        (" IN EXCLUSIVE MODE", "ExclusiveLock"),
        (" IN ACCESS EXCLUSIVE MODE NOWAIT", "AccessExclusiveLock"),
    ] {
        let sql = format!("BEGIN; LOCK t{clause}");
        exec(&a, &sql).await;
        assert_eq!(own_modes(&a, t).await, [mode], "{sql}");
        exec(&a, "ROLLBACK").await;
    }
    exec(&a, "BEGIN; LOCK TABLE ONLY t, u IN SHARE MODE").await;
    assert_eq!(own_modes(&a, t).await, ["ShareLock"]);
    assert_eq!(own_modes(&a, u).await, ["ShareLock"]);
    exec(&a, "ROLLBACK").await;

    exec(&a, "BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE").await;
    let read = started(b, "SELECT count(*) FROM t").await;
    assert!(!read.is_finished(), "a SELECT waits for ACCESS EXCLUSIVE");
    exec(&c, "BEGIN").await;
    assert_eq!(
        error(&c, "LOCK t IN SHARE MODE NOWAIT").await,
        (
            "55P03".into(),
            "could not obtain lock on relation \"t\"".into()
        )
    );
    exec(&c, "ROLLBACK").await;
    assert!(!read.is_finished());
    exec(&a, "COMMIT").await;
    let (_, got) = finished(read).await;
    assert_eq!(got, Ok(()));
}

/// `lock_timeout` ends a wait for a relation lock with 55P03 and `statement_timeout` with
/// 57014; the session goes on, and its request is gone from the queue.
#[tokio::test(flavor = "multi_thread")]
async fn lock_timeout_and_statement_timeout() {
    let server = TestServer::start("relation-locks-timeouts");
    let a = server.client().await;
    let b = server.client().await;
    let watcher = server.client().await;
    create_t(&a).await;
    let t = oid(&a, "t").await;
    exec(&a, "BEGIN; LOCK t IN EXCLUSIVE MODE").await;

    exec(&b, "SET lock_timeout = '200ms'").await;
    let lock_timeout = (
        "55P03".to_string(),
        "canceling statement due to lock timeout".to_string(),
    );
    assert_eq!(
        error(&b, "INSERT INTO t VALUES (101, 'x')").await,
        lock_timeout
    );
    assert_eq!(int(&b, "SELECT 1").await, 1);
    // EXCLUSIVE lets readers in.
    assert_eq!(int_at_once(&b, "SELECT count(*) FROM t").await, 100);
    assert_eq!(
        int(
            &watcher,
            &format!("SELECT count(*) FROM pg_locks WHERE relation = {t} AND NOT granted")
        )
        .await,
        0
    );

    // In a transaction block the timeout aborts the transaction.
    exec(&b, "BEGIN; SET LOCAL lock_timeout = '100ms'").await;
    assert_eq!(error(&b, "UPDATE t SET v = 'y'").await, lock_timeout);
    assert_eq!(
        error(&b, "SELECT 1").await,
        (
            "25P02".into(),
            "current transaction is aborted, commands ignored until end of transaction block"
                .into()
        )
    );
    exec(&b, "ROLLBACK").await;

    exec(&b, "SET lock_timeout = 0; SET statement_timeout = '200ms'").await;
    assert_eq!(
        error(&b, "DELETE FROM t").await,
        (
            "57014".into(),
            "canceling statement due to statement timeout".into()
        )
    );
    exec(&b, "SET statement_timeout = 0").await;
    assert_eq!(int(&b, "SELECT 1").await, 1);
    assert_eq!(
        int(
            &watcher,
            &format!("SELECT count(*) FROM pg_locks WHERE relation = {t} AND NOT granted")
        )
        .await,
        0
    );

    exec(&a, "COMMIT").await;
    at_once(&b, "INSERT INTO t VALUES (101, 'x')").await;
    assert_eq!(int(&b, "SELECT count(*) FROM t").await, 101);
}

/// Two sessions each waiting for a table the other locked: after `deadlock_timeout` one of
/// them fails with 40P01, and the other goes on once the failed one's locks are gone.
#[tokio::test(flavor = "multi_thread")]
async fn a_deadlock_is_detected() {
    let server = TestServer::start("relation-locks-deadlock");
    let a = server.client().await;
    let b = server.client().await;
    let watcher = server.client().await;
    exec(&a, "CREATE TABLE t1 (a int); CREATE TABLE t2 (a int)").await;
    exec(&a, "BEGIN; LOCK t1 IN SHARE MODE").await;
    exec(&b, "BEGIN; LOCK t2 IN SHARE MODE").await;
    let a_insert = started(a, "INSERT INTO t2 VALUES (1)").await;
    assert!(!a_insert.is_finished(), "A waits for B's SHARE lock on t2");
    let b_insert = started(b, "INSERT INTO t1 VALUES (1)").await;

    let deadline = Instant::now() + STUCK;
    while !a_insert.is_finished() && !b_insert.is_finished() {
        assert!(Instant::now() < deadline, "no deadlock was detected");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (first, second) = if a_insert.is_finished() {
        (a_insert, b_insert)
    } else {
        (b_insert, a_insert)
    };
    let (first_client, first_got) = finished(first).await;
    if first_got.is_err() {
        exec(&first_client, "ROLLBACK").await;
    }
    let (second_client, second_got) = finished(second).await;
    let deadlock = failed("40P01", "deadlock detected");
    let (failed_client, went_on) = match (&first_got, &second_got) {
        (Err(_), Ok(())) => {
            assert_eq!(first_got, deadlock);
            (None, second_client)
        }
        (Ok(()), Err(_)) => {
            assert_eq!(second_got, deadlock);
            (Some(second_client), first_client)
        }
        _ => panic!("exactly one should fail: {first_got:?}, {second_got:?}"),
    };
    if let Some(client) = failed_client {
        exec(&client, "ROLLBACK").await;
    }
    exec(&went_on, "COMMIT").await;
    assert_eq!(
        int(
            &watcher,
            "SELECT (SELECT count(*) FROM t1) + (SELECT count(*) FROM t2)"
        )
        .await,
        1
    );
}

/// A waiting request keeps its place: a reader coming after a waiting DROP waits behind
/// it (blocked by the DROP, not by the holder). But a holder asking for more is granted
/// ahead of the waiters whose request conflicts with what it holds already (they wait
/// for it anyway): A's INSERT goes through at once while B's DROP waits for A.
#[tokio::test(flavor = "multi_thread")]
async fn waiters_keep_queue_order_but_a_holder_goes_ahead() {
    let server = TestServer::start("relation-locks-queue");
    let a = server.client().await;
    let b = server.client().await;
    let c = server.client().await;
    let watcher = server.client().await;
    exec(&a, "CREATE TABLE t (id int); INSERT INTO t VALUES (1)").await;
    let t = oid(&a, "t").await;
    let (a_pid, b_pid, c_pid) = (pid(&a).await, pid(&b).await, pid(&c).await);
    exec(&a, "BEGIN").await;
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, 1);
    let dropping = started(b, "DROP TABLE t").await;
    assert!(!dropping.is_finished(), "DROP waits for A");
    let read = started(c, "SELECT count(*) FROM t").await;
    assert!(!read.is_finished(), "C's SELECT queues behind B's DROP");
    assert_eq!(
        locks_on(&watcher, t).await,
        [
            lock_row(b_pid, "AccessExclusiveLock", false),
            lock_row(c_pid, "AccessShareLock", false),
            lock_row(a_pid, "AccessShareLock", true)
        ]
    );
    assert_eq!(
        column(&watcher, &format!("SELECT pg_blocking_pids({c_pid})::text")).await,
        [format!("{{{b_pid}}}")]
    );
    assert_eq!(
        column(&watcher, &format!("SELECT pg_blocking_pids({b_pid})::text")).await,
        [format!("{{{a_pid}}}")]
    );

    at_once(&a, "INSERT INTO t VALUES (2)").await;
    assert_eq!(
        own_modes(&a, t).await,
        ["AccessShareLock", "RowExclusiveLock"]
    );
    assert!(!dropping.is_finished() && !read.is_finished());
    exec(&a, "COMMIT").await;
    let (_, dropped) = finished(dropping).await;
    assert_eq!(dropped, Ok(()));
    let (_, read) = finished(read).await;
    assert_eq!(read, failed("42P01", "relation \"t\" does not exist"));
}

/// Locks end with the transaction however it ends: ROLLBACK, the end of an autocommit
/// statement (either protocol), a client that says goodbye or just goes away.
#[tokio::test(flavor = "multi_thread")]
async fn locks_end_with_their_transaction() {
    let server = TestServer::start("relation-locks-release");
    let a = server.client().await;
    let b = server.client().await;
    create_t(&a).await;

    exec(&a, "BEGIN; SELECT count(*) FROM t; ROLLBACK").await;
    at_once(&b, "TRUNCATE t").await;
    exec(&a, "BEGIN; INSERT INTO t VALUES (1, 'a'); COMMIT").await;
    at_once(&b, "TRUNCATE t").await;
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, 0);
    at_once(&b, "TRUNCATE t").await;
    exec(&a, "INSERT INTO t VALUES (1, 'a')").await;
    at_once(&b, "TRUNCATE t").await;
    // The extended protocol: a statement prepared holds nothing, nor one run to its Sync.
    let count = a.prepare("SELECT count(*) FROM t").await.unwrap();
    at_once(&b, "TRUNCATE t").await;
    let n: i64 = a.query_one(&count, &[]).await.unwrap().get(0);
    assert_eq!(n, 0);
    at_once(&b, "TRUNCATE t").await;

    // A client that ends its session (Terminate) in a transaction block.
    let gone = server.client().await;
    exec(&gone, "BEGIN; SELECT count(*) FROM t").await;
    let truncate = started(b, "TRUNCATE t").await;
    assert!(
        !truncate.is_finished(),
        "TRUNCATE waits for the open transaction"
    );
    drop(gone);
    let (b, truncated) = finished(truncate).await;
    assert_eq!(truncated, Ok(()));

    // A client whose connection just closes, mid-transaction.
    let (gone, connection) = tokio_postgres::connect(&server.conn_str(), NoTls)
        .await
        .expect("connect");
    let connection = tokio::spawn(connection);
    exec(&gone, "BEGIN; SELECT count(*) FROM t").await;
    let drop_table = started(b, "DROP TABLE t").await;
    assert!(
        !drop_table.is_finished(),
        "DROP waits for the open transaction"
    );
    connection.abort();
    let _ = connection.await;
    let (b, dropped) = finished(drop_table).await;
    assert_eq!(dropped, Ok(()));
    drop(gone);
    assert_eq!(
        int(&b, "SELECT count(*) FROM pg_class WHERE relname = 't'").await,
        0
    );
}

/// An error in a transaction block releases its locks at once (PostgreSQL aborts the
/// transaction there, before the ROLLBACK); ROLLBACK TO SAVEPOINT releases the locks taken
/// since the savepoint (not one held from before it); RELEASE keeps them.
#[tokio::test(flavor = "multi_thread")]
async fn an_error_and_rollback_to_savepoint_release_locks() {
    let server = TestServer::start("relation-locks-savepoints");
    let a = server.client().await;
    let b = server.client().await;
    create_t(&a).await;

    exec(&a, "BEGIN; SELECT count(*) FROM t").await;
    assert_eq!(
        error(&a, "SELECT 1/0").await,
        ("22012".into(), "division by zero".into())
    );
    at_once(&b, "TRUNCATE t").await;
    exec(&a, "ROLLBACK").await;

    exec(
        &a,
        "BEGIN; SAVEPOINT s; SELECT count(*) FROM t; ROLLBACK TO SAVEPOINT s",
    )
    .await;
    at_once(&b, "TRUNCATE t").await;
    let e = (a
        .batch_execute("SAVEPOINT s2; LOCK t IN SHARE MODE; SELECT 1/0")
        .await)
        .expect_err("division by zero");
    assert_eq!(sqlstate(&e), "22012");
    exec(&a, "ROLLBACK TO SAVEPOINT s2").await;
    at_once(&b, "TRUNCATE t").await;
    exec(
        &a,
        "SAVEPOINT s3; SELECT count(*) FROM t; RELEASE SAVEPOINT s3",
    )
    .await;
    let truncate = started(b, "TRUNCATE t").await;
    assert!(!truncate.is_finished(), "RELEASE keeps the lock");
    exec(&a, "COMMIT").await;
    let (b, truncated) = finished(truncate).await;
    assert_eq!(truncated, Ok(()));

    exec(
        &a,
        "BEGIN; SELECT count(*) FROM t; SAVEPOINT s; SELECT count(*) FROM t; \
         ROLLBACK TO SAVEPOINT s",
    )
    .await;
    let truncate = started(b, "TRUNCATE t").await;
    assert!(
        !truncate.is_finished(),
        "the lock taken before the savepoint stays"
    );
    exec(&a, "COMMIT").await;
    let (_, truncated) = finished(truncate).await;
    assert_eq!(truncated, Ok(()));
}

/// A table dropped by a transaction still open: a reader waits for the drop's lock, as
/// in PostgreSQL (iolab's catalog has lost the name already, but not the lock), then
/// reads the table back after a ROLLBACK and finds none after a COMMIT (42P01).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_waits_for_an_open_drop() {
    let server = TestServer::start("locks-open-drop");
    let a = server.client().await;
    let mut b = server.client().await;
    let watcher = server.client().await;
    exec(&a, "CREATE TABLE t(a int); INSERT INTO t VALUES (1), (2)").await;
    let t = oid(&a, "t").await;
    let (pid_a, pid_b) = (pid(&a).await, pid(&b).await);
    for (end, expected) in [
        ("ROLLBACK", Ok(())),
        ("COMMIT", failed("42P01", "relation \"t\" does not exist")),
    ] {
        exec(&a, "BEGIN; DROP TABLE t").await;
        let reader = started(b, "SELECT count(*) FROM t").await;
        assert_eq!(
            locks_on(&watcher, t).await,
            [
                lock_row(pid_b, "AccessShareLock", false),
                lock_row(pid_a, "AccessExclusiveLock", true),
            ],
            "the reader waits behind {end}"
        );
        exec(&a, end).await;
        let got;
        (b, got) = finished(reader).await;
        assert_eq!(got, expected, "after {end}");
    }
    // LOCK waits the same way, and a table gone meanwhile is not locked.
    exec(&a, "CREATE TABLE t(a int)").await;
    exec(&a, "BEGIN; DROP TABLE t").await;
    let locker = started(b, "BEGIN; LOCK TABLE t").await;
    assert!(!locker.is_finished(), "LOCK waits for the drop");
    exec(&a, "COMMIT").await;
    let (_, got) = finished(locker).await;
    assert_eq!(got, failed("42P01", "relation \"t\" does not exist"));
}
