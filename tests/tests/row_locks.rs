//! `SELECT … FOR UPDATE | SHARE` end to end, two sessions at a time: what waits for a
//! locked row and what does not, NOWAIT and SKIP LOCKED under LIMIT and OFFSET, a waiting
//! lock meeting the row's newest version (READ COMMITTED), the extended protocol, and the
//! refusals PostgreSQL 18 gives (messages and SQLSTATEs as it printed them).

use std::time::Duration;

use iolab_tests::waiting::exec;
use iolab_tests::{int, rows, sqlstate, TestServer};
use tokio_postgres::Client;

/// The first column of each row of `sql`.
async fn column(client: &Client, sql: &str) -> Vec<String> {
    rows(client, sql)
        .await
        .into_iter()
        .map(|r| r[0].clone().unwrap_or_default())
        .collect()
}

/// The rows of `sql`, run by `client` on another task (which may wait), given a moment
/// to start.
async fn started_rows(
    client: Client,
    sql: &'static str,
) -> tokio::task::JoinHandle<(Client, Vec<Vec<String>>)> {
    let task = tokio::spawn(async move {
        let got = rows(&client, sql).await;
        let got = (got.into_iter())
            .map(|r| r.into_iter().map(Option::unwrap_or_default).collect())
            .collect();
        (client, got)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    task
}

/// [`started_rows`] of a statement: the rows it changed, or its SQLSTATE.
async fn started_execute(
    client: Client,
    sql: &'static str,
) -> tokio::task::JoinHandle<(Client, Result<u64, String>)> {
    let task = tokio::spawn(async move {
        let got = client.execute(sql, &[]).await.map_err(|e| sqlstate(&e));
        (client, got)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    task
}

async fn jobs(server: &TestServer) -> (Client, Client) {
    let a = server.client().await;
    let b = server.client().await;
    exec(
        &a,
        "CREATE TABLE jobs (id int PRIMARY KEY, state text); \
         INSERT INTO jobs SELECT i, 'new' FROM generate_series(1, 6) AS T(i)",
    )
    .await;
    (a, b)
}

/// A locked row: readers read it, NOWAIT fails, SKIP LOCKED passes over it (LIMIT and
/// OFFSET counting only the rows returned), writers wait for the locker's end, and the
/// locker itself changes it at once.
#[tokio::test(flavor = "multi_thread")]
async fn a_locked_row_makes_writers_wait_but_not_readers() {
    let server = TestServer::start("row-locks-wait");
    let (a, b) = jobs(&server).await;
    exec(&a, "BEGIN").await;
    assert_eq!(
        column(
            &a,
            "SELECT id FROM jobs WHERE id <= 2 ORDER BY id FOR UPDATE"
        )
        .await,
        ["1", "2"]
    );
    assert_eq!(
        int(&b, "SELECT count(*) FROM jobs WHERE state = 'new'").await,
        6
    );
    let e = b
        .batch_execute("SELECT * FROM jobs WHERE id = 1 FOR UPDATE NOWAIT")
        .await
        .expect_err("NOWAIT on a locked row");
    assert_eq!(sqlstate(&e), "55P03");
    assert_eq!(
        e.as_db_error().unwrap().message(),
        "could not obtain lock on row in relation \"jobs\""
    );
    assert_eq!(
        column(
            &b,
            "SELECT id FROM jobs ORDER BY id LIMIT 2 FOR UPDATE SKIP LOCKED"
        )
        .await,
        ["3", "4"]
    );
    assert_eq!(
        column(
            &b,
            "SELECT id FROM jobs ORDER BY id LIMIT 1 OFFSET 1 FOR NO KEY UPDATE SKIP LOCKED"
        )
        .await,
        ["4"]
    );
    // B's autocommit locks ended with its statements: A takes row 3 at once.
    assert_eq!(
        column(&a, "SELECT id FROM jobs WHERE id = 3 FOR SHARE NOWAIT").await,
        ["3"]
    );

    let update = started_execute(b, "UPDATE jobs SET state = 'b' WHERE id = 1").await;
    assert!(!update.is_finished(), "B's UPDATE waits for A's lock");
    // A changes the rows it locked without waiting for itself.
    exec(&a, "UPDATE jobs SET state = 'a' WHERE id IN (2, 3)").await;
    exec(&a, "COMMIT").await;
    let (b, updated) = update.await.unwrap();
    assert_eq!(updated, Ok(1));
    assert_eq!(
        column(&b, "SELECT id || state FROM jobs WHERE id <= 3 ORDER BY id").await,
        ["1b", "2a", "3a"]
    );

    // A lock of a transaction that rolled back holds nothing.
    exec(
        &a,
        "BEGIN; SELECT * FROM jobs WHERE id = 5 FOR UPDATE; ROLLBACK",
    )
    .await;
    exec(&b, "DELETE FROM jobs WHERE id = 5").await;
    assert_eq!(int(&a, "SELECT count(*) FROM jobs").await, 5);
}

/// A lock that waited for a transaction that changed the row meets the row as that
/// transaction left it, as PostgreSQL's READ COMMITTED does: the newest version, locked
/// and returned with its new values if it still meets the condition, left out if not,
/// and a deleted row left out.
#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_lock_meets_the_newest_version() {
    let server = TestServer::start("row-locks-newest");
    let (a, b) = jobs(&server).await;
    exec(&a, "BEGIN; UPDATE jobs SET state = 'done' WHERE id = 1").await;
    let lock = started_rows(
        b,
        "SELECT id, state FROM jobs WHERE id <= 2 ORDER BY id FOR UPDATE",
    )
    .await;
    assert!(!lock.is_finished(), "B waits for A's update");
    exec(&a, "COMMIT").await;
    let (b, got) = lock.await.unwrap();
    assert_eq!(got, [["1", "done"], ["2", "new"]]);

    // The first row that still qualifies, as a job queue takes it.
    exec(&a, "BEGIN; UPDATE jobs SET state = 'taken' WHERE id = 2").await;
    let lock = started_rows(
        b,
        "SELECT id, state FROM jobs WHERE state = 'new' ORDER BY id LIMIT 1 FOR UPDATE",
    )
    .await;
    assert!(!lock.is_finished(), "B waits for A's update of row 2");
    exec(&a, "COMMIT").await;
    let (b, got) = lock.await.unwrap();
    assert_eq!(got, [["3", "new"]]);

    exec(&a, "BEGIN; DELETE FROM jobs WHERE id = 4").await;
    let lock = started_rows(
        b,
        "SELECT id, state FROM jobs WHERE id IN (4, 5) ORDER BY id FOR UPDATE",
    )
    .await;
    assert!(!lock.is_finished(), "B waits for A's delete");
    exec(&a, "COMMIT").await;
    let (b, got) = lock.await.unwrap();
    assert_eq!(got, [["5", "new"]]);

    // Two sessions locking each other's rows: one of them is told, as in PostgreSQL.
    exec(&a, "BEGIN; SELECT * FROM jobs WHERE id = 5 FOR UPDATE").await;
    exec(&b, "BEGIN; SELECT * FROM jobs WHERE id = 6 FOR UPDATE").await;
    let lock = started_execute(b, "SELECT * FROM jobs WHERE id = 5 FOR UPDATE").await;
    let e = a
        .batch_execute("SELECT * FROM jobs WHERE id = 6 FOR UPDATE")
        .await
        .expect_err("a deadlock");
    assert_eq!(sqlstate(&e), "40P01");
    exec(&a, "ROLLBACK").await;
    let (b, locked) = lock.await.unwrap();
    assert_eq!(locked, Ok(1), "B's lock goes ahead once A rolled back");
    exec(&b, "COMMIT").await;
}

/// The extended protocol: parameters in the condition and the LIMIT, and the result's
/// columns described before it runs.
#[tokio::test(flavor = "multi_thread")]
async fn row_locks_over_the_extended_protocol() {
    let server = TestServer::start("row-locks-extended");
    let (a, _) = jobs(&server).await;
    let statement = a
        .prepare("SELECT * FROM jobs AS j WHERE j.id >= $1 ORDER BY j.id LIMIT $2 FOR UPDATE OF j")
        .await
        .unwrap();
    let names: Vec<_> = statement.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["id", "state"]);
    let got = a.query(&statement, &[&3i32, &2i64]).await.unwrap();
    let ids: Vec<i32> = got.iter().map(|r| r.get(0)).collect();
    assert_eq!(ids, [3, 4]);
    // A LIMIT's parameter is a bigint, as PostgreSQL types it (text before).
    let got = (a
        .query("SELECT id FROM jobs ORDER BY id LIMIT $1", &[&2i64])
        .await)
        .unwrap();
    assert_eq!(got.len(), 2);
}

/// What PostgreSQL 18 refuses, refused alike; and what iolab does not lock (several
/// tables, a view, a lock inside a subquery) refused with 0A000 rather than ignored.
#[tokio::test(flavor = "multi_thread")]
async fn refusals_as_in_postgres() {
    let server = TestServer::start("row-locks-refusals");
    let (a, _) = jobs(&server).await;
    exec(
        &a,
        "CREATE VIEW new_jobs AS SELECT * FROM jobs WHERE state = 'new'",
    )
    .await;
    for (sql, code, message) in [
        (
            "SELECT count(*) FROM jobs FOR UPDATE",
            "0A000",
            "FOR UPDATE is not allowed with aggregate functions",
        ),
        (
            "SELECT DISTINCT state FROM jobs FOR UPDATE",
            "0A000",
            "FOR UPDATE is not allowed with DISTINCT clause",
        ),
        (
            "SELECT state FROM jobs GROUP BY state FOR SHARE",
            "0A000",
            "FOR SHARE is not allowed with GROUP BY clause",
        ),
        (
            "SELECT row_number() OVER () FROM jobs FOR UPDATE",
            "0A000",
            "FOR UPDATE is not allowed with window functions",
        ),
        (
            "VALUES (1) FOR UPDATE",
            "0A000",
            "FOR UPDATE cannot be applied to VALUES",
        ),
        (
            "SELECT * FROM jobs FOR UPDATE OF x",
            "42P01",
            "relation \"x\" in FOR UPDATE clause not found in FROM clause",
        ),
        (
            "SELECT * FROM jobs LIMIT -1 FOR UPDATE",
            "2201W",
            "LIMIT must not be negative",
        ),
        (
            "SELECT * FROM jobs OFFSET -1 FOR UPDATE",
            "2201X",
            "OFFSET must not be negative",
        ),
        (
            "SELECT * FROM jobs a, jobs b FOR UPDATE",
            "0A000",
            "FOR UPDATE of a join, of several tables or of a subquery is not supported",
        ),
        (
            "SELECT * FROM new_jobs FOR UPDATE",
            "0A000",
            "FOR UPDATE of a view is not supported",
        ),
        (
            "SELECT * FROM jobs WHERE id IN (SELECT id FROM jobs FOR UPDATE)",
            "0A000",
            "FOR UPDATE is supported at the top of a SELECT only",
        ),
    ] {
        let e = a.batch_execute(sql).await.expect_err(sql);
        assert_eq!(
            (sqlstate(&e).as_str(), e.as_db_error().unwrap().message()),
            (code, message),
            "{sql}"
        );
    }
    assert_eq!(int(&a, "SELECT count(*) FROM jobs").await, 6);
}

/// A writer waiting for a locker shows as PostgreSQL shows it: `Lock` / `transactionid`
/// in `pg_stat_activity`, a ShareLock not granted on the locker's transaction id in
/// `pg_locks` (beside each transaction's ExclusiveLock on its own), and the locker's pid
/// in `pg_blocking_pids`; once the locker commits, all of it is gone.
#[tokio::test(flavor = "multi_thread")]
async fn a_wait_shows_in_pg_locks_and_pg_stat_activity() {
    let server = TestServer::start("row-locks-pg-locks");
    let (a, b) = jobs(&server).await;
    let watcher = server.client().await;
    exec(&a, "BEGIN; UPDATE jobs SET state = 'a' WHERE id = 1").await;
    let a_pid = int(&a, "SELECT pg_backend_pid()").await;
    let a_xid = int(
        &a,
        "SELECT backend_xid FROM pg_stat_activity WHERE pid = pg_backend_pid()",
    )
    .await;
    let b_pid = int(&b, "SELECT pg_backend_pid()").await;
    let update = started_execute(b, "UPDATE jobs SET state = 'b' WHERE id = 1").await;
    let waiting = rows(
        &watcher,
        &format!(
            "SELECT wait_event_type, wait_event, pg_blocking_pids(pid)::text
               FROM pg_stat_activity WHERE pid = {b_pid}"
        ),
    )
    .await;
    assert_eq!(
        waiting,
        [[
            Some("Lock"),
            Some("transactionid"),
            Some(&*format!("{{{a_pid}}}"))
        ]
        .map(|v| v.map(String::from))]
    );
    let locks = rows(
        &watcher,
        "SELECT locktype, transactionid, pid, mode, granted, waitstart IS NOT NULL
           FROM pg_locks WHERE locktype = 'transactionid' ORDER BY granted, pid",
    )
    .await;
    let row = |xid: i64, pid: i64, mode: &str, granted: &str, waits: &str| {
        [
            "transactionid",
            &xid.to_string(),
            &pid.to_string(),
            mode,
            granted,
            waits,
        ]
        .map(|v| Some(v.to_string()))
        .to_vec()
    };
    assert_eq!(locks[0], row(a_xid, b_pid, "ShareLock", "f", "t"));
    assert!(
        locks.contains(&row(a_xid, a_pid, "ExclusiveLock", "t", "f")),
        "{locks:?}"
    );
    assert_eq!(locks.len(), 3, "B's own transaction id too: {locks:?}");
    // Both hold the table's RowExclusiveLock (which does not conflict with itself).
    let table_locks = rows(
        &watcher,
        "SELECT pid, mode, granted FROM pg_locks
          WHERE locktype = 'relation' AND relation = 'jobs'::regclass ORDER BY pid",
    )
    .await;
    let granted = |pid: i64| {
        [
            Some(pid.to_string()),
            Some("RowExclusiveLock".into()),
            Some("t".into()),
        ]
        .to_vec()
    };
    assert_eq!(
        table_locks,
        [granted(a_pid.min(b_pid)), granted(a_pid.max(b_pid))]
    );
    exec(&a, "COMMIT").await;
    let (_, changed) = update.await.unwrap();
    assert_eq!(changed, Ok(1));
    assert_eq!(int(&watcher, "SELECT count(*) FROM pg_locks").await, 0);
    assert_eq!(
        int(
            &watcher,
            &format!("SELECT cardinality(pg_blocking_pids({b_pid}))")
        )
        .await,
        0
    );
}
