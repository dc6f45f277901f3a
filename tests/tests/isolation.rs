//! Transaction modes as PostgreSQL 18 has them: isolation levels (REPEATABLE READ keeps its
//! first query's snapshot and fails with 40001 on rows changed since), read-only
//! transactions (25006) and the rules for changing either (25001, 25P01). The messages
//! and codes are those PostgreSQL 18 gives for the same statements.

use iolab_tests::{error, int, rows, show, TestServer};
use tokio_postgres::Client;

async fn run(c: &Client, sql: &str) {
    c.batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

#[tokio::test(flavor = "multi_thread")]
async fn modes_are_set_and_checked_as_in_postgresql() {
    let server = TestServer::start("isolation-modes");
    let c = server.client().await;
    run(&c, "CREATE TABLE rot(a int); CREATE TEMP TABLE tmp(a int)").await;

    run(&c, "BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY").await;
    assert_eq!(show(&c, "transaction_isolation").await, "serializable");
    assert_eq!(show(&c, "transaction_read_only").await, "on");
    run(&c, "COMMIT").await;
    assert_eq!(show(&c, "transaction_isolation").await, "read committed");

    // A read-only transaction refuses writes and DDL, but not a temporary table's rows.
    let refused = [
        ("INSERT INTO rot VALUES (1)", "INSERT"),
        ("UPDATE rot SET a = 2", "UPDATE"),
        ("DELETE FROM rot", "DELETE"),
        ("SELECT * FROM rot FOR UPDATE", "SELECT FOR UPDATE"),
        ("CREATE TABLE x(a int)", "CREATE TABLE"),
        ("CREATE TEMP TABLE x(a int)", "CREATE TABLE"),
        ("CREATE INDEX ON rot(a)", "CREATE INDEX"),
        ("TRUNCATE rot", "TRUNCATE TABLE"),
        ("DROP TABLE rot", "DROP TABLE"),
        ("ALTER TABLE rot ADD COLUMN b int", "ALTER TABLE"),
        ("EXPLAIN ANALYZE INSERT INTO rot VALUES (1)", "INSERT"),
    ];
    for (sql, command) in refused {
        run(&c, "BEGIN READ ONLY").await;
        assert_eq!(
            error(&c, sql).await,
            (
                "25006".into(),
                format!("cannot execute {command} in a read-only transaction")
            ),
            "{sql}"
        );
        run(&c, "ROLLBACK").await;
    }
    run(
        &c,
        "BEGIN READ ONLY; INSERT INTO tmp VALUES (1); ANALYZE rot",
    )
    .await;
    assert_eq!(int(&c, "SELECT count(*) FROM tmp").await, 1);
    run(&c, "ROLLBACK").await;
    // For every transaction of the session.
    run(&c, "SET default_transaction_read_only = on").await;
    assert_eq!(
        error(&c, "INSERT INTO rot VALUES (1)").await.0,
        "25006",
        "a statement alone"
    );
    run(&c, "RESET default_transaction_read_only").await;
    run(&c, "INSERT INTO rot VALUES (1)").await;

    // Before the first query the modes may change; after it the level may not, nor may
    // read-only become read-write (read-write may become read-only).
    run(
        &c,
        "BEGIN; SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION READ WRITE",
    )
    .await;
    assert_eq!(show(&c, "transaction_isolation").await, "repeatable read");
    run(&c, "SELECT 1").await;
    for sql in [
        "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
        "SET transaction_isolation = 'read committed'",
    ] {
        assert_eq!(
            error(&c, sql).await,
            (
                "25001".into(),
                "SET TRANSACTION ISOLATION LEVEL must be called before any query".into()
            )
        );
        run(
            &c,
            "ROLLBACK; BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1",
        )
        .await;
    }
    run(
        &c,
        "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ; SET TRANSACTION READ ONLY",
    )
    .await;
    assert_eq!(show(&c, "transaction_read_only").await, "on");
    for sql in [
        "SET TRANSACTION READ WRITE",
        "SET transaction_read_only = f",
    ] {
        assert_eq!(
            error(&c, sql).await,
            (
                "25001".into(),
                "transaction read-write mode must be set before any query".into()
            ),
            "{sql}"
        );
        run(&c, "ROLLBACK; BEGIN READ ONLY; SELECT 1").await;
    }
    run(&c, "ROLLBACK").await;

    // Outside a block SET TRANSACTION warns and does nothing; SESSION CHARACTERISTICS sets
    // the defaults.
    run(&c, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE").await;
    run(&c, "BEGIN").await;
    assert_eq!(show(&c, "transaction_isolation").await, "read committed");
    run(&c, "COMMIT").await;
    run(
        &c,
        "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ",
    )
    .await;
    assert_eq!(
        show(&c, "default_transaction_isolation").await,
        "repeatable read"
    );
    run(&c, "BEGIN").await;
    assert_eq!(show(&c, "transaction_isolation").await, "repeatable read");
    run(&c, "COMMIT").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn repeatable_read_keeps_its_snapshot_and_refuses_changed_rows() {
    let server = TestServer::start("isolation-rr");
    let (a, b) = (server.client().await, server.client().await);
    run(
        &a,
        "CREATE TABLE rr AS SELECT i AS k, i AS v FROM generate_series(1, 1000) i",
    )
    .await;
    let totals = "SELECT count(*), sum(v) FROM rr";
    let changes = [
        "DELETE FROM rr WHERE k <= 10",
        "UPDATE rr SET v = v + 1 WHERE k = 20",
        "INSERT INTO rr VALUES (5000, 5000)",
    ];

    // READ COMMITTED sees each committed change at its next statement.
    run(&a, "BEGIN").await;
    let before = rows(&a, totals).await;
    run(&b, changes[2]).await;
    assert_ne!(rows(&a, totals).await, before);
    run(&a, "COMMIT").await;

    // REPEATABLE READ (and SERIALIZABLE) see what the first query saw, and their own
    // changes.
    for level in ["REPEATABLE READ", "SERIALIZABLE"] {
        run(&a, &format!("BEGIN ISOLATION LEVEL {level}")).await;
        let before = rows(&a, totals).await;
        for change in changes {
            run(&b, change).await;
        }
        assert_eq!(rows(&a, totals).await, before, "{level}");
        run(&a, "INSERT INTO rr VALUES (7000, 1)").await;
        run(&a, "UPDATE rr SET v = 2 WHERE k = 7000").await;
        assert_eq!(int(&a, "SELECT v FROM rr WHERE k = 7000").await, 2);
        run(&a, "COMMIT").await;
        run(&a, "DELETE FROM rr WHERE k IN (5000, 7000)").await;
    }

    // A row another transaction updated or deleted after the snapshot cannot be changed
    // or locked.
    for (change, mine, conflict) in [
        (
            "UPDATE rr SET v = v + 1 WHERE k = 100",
            "UPDATE rr SET v = 0 WHERE k = 100",
            "update",
        ),
        (
            "DELETE FROM rr WHERE k = 101",
            "DELETE FROM rr WHERE k = 101",
            "delete",
        ),
        (
            "UPDATE rr SET v = v + 1 WHERE k = 102",
            "SELECT * FROM rr WHERE k = 102 FOR UPDATE",
            "update",
        ),
    ] {
        run(&a, "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT 1").await;
        run(&b, change).await;
        assert_eq!(
            error(&a, mine).await,
            (
                "40001".into(),
                format!("could not serialize access due to concurrent {conflict}")
            ),
            "{mine}"
        );
        run(&a, "ROLLBACK").await;
    }
    // Under READ COMMITTED the update follows the row to its newest version.
    run(&a, "BEGIN; SELECT 1").await;
    run(&b, "UPDATE rr SET v = 100 WHERE k = 50").await;
    run(&a, "UPDATE rr SET v = v + 1 WHERE k = 50").await;
    assert_eq!(int(&a, "SELECT v FROM rr WHERE k = 50").await, 101);
    run(&a, "COMMIT").await;
}
