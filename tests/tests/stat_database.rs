//! `pg_stat_database` end to end: PostgreSQL 18's columns and types, its two rows (the
//! shared objects' and `postgres`'), and a known workload counted in them — transactions
//! committed and rolled back (an error in a statement's rows too), rows written as
//! `pg_stat_user_tables` counts them, blocks as `pg_statio_user_tables` counts them, a
//! deadlock, sessions started and how each ended (normally, abandoned, by a FATAL, killed),
//! and the time spent idle in a transaction.

use std::time::Duration;

use iolab_tests::{raw, rows, sqlstate, TestServer};
use tokio_postgres::Client;

async fn exec(client: &Client, sql: &str) {
    client
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

/// `postgres`' row of pg_stat_database: the columns `columns`, as text.
async fn counts(client: &Client, columns: &str) -> Vec<String> {
    let sql = format!("SELECT {columns} FROM pg_stat_database WHERE datname = 'postgres'");
    let got = rows(client, &sql).await;
    assert_eq!(got.len(), 1, "{sql}");
    got[0]
        .iter()
        .map(|v| v.clone().unwrap_or_default())
        .collect()
}

/// The next message on `conn` is a FATAL with PostgreSQL 18's `code` and `message`.
#[track_caller]
fn next_is_fatal(conn: &mut raw::RawConnection, code: &str, message: &str) {
    let raw::Received::Message(reply) = conn.next(Duration::from_secs(10)) else {
        panic!("no {code} FATAL before the connection closed");
    };
    let fatal = reply.as_error().expect("an ErrorResponse");
    assert_eq!(
        (fatal.get(b'S'), fatal.get(b'C'), fatal.get(b'M')),
        (Some("FATAL"), Some(code), Some(message))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_database_counts_a_known_workload() {
    let server = TestServer::start("stat-database");
    let c = server.client().await;

    // PostgreSQL 18's columns, in order, with their types (iolab sends `oid` as int8 and
    // `name` as text, as in every catalog).
    let described = c.prepare("SELECT * FROM pg_stat_database").await.unwrap();
    let columns: Vec<String> = (described.columns().iter())
        .map(|col| format!("{} {}", col.name(), col.type_().name()))
        .collect();
    assert_eq!(
        columns.join(", "),
        "datid int8, datname text, numbackends int4, xact_commit int8, xact_rollback int8, \
         blks_read int8, blks_hit int8, tup_returned int8, tup_fetched int8, \
         tup_inserted int8, tup_updated int8, tup_deleted int8, conflicts int8, \
         temp_files int8, temp_bytes int8, deadlocks int8, checksum_failures int8, \
         checksum_last_failure timestamptz, blk_read_time float8, blk_write_time float8, \
         session_time float8, active_time float8, idle_in_transaction_time float8, \
         sessions int8, sessions_abandoned int8, sessions_fatal int8, sessions_killed int8, \
         parallel_workers_to_launch int8, parallel_workers_launched int8, \
         stats_reset timestamptz"
    );
    assert_eq!(
        rows(
            &c,
            "SELECT datid, datname FROM pg_stat_database ORDER BY datid"
        )
        .await,
        [
            vec![Some("0".to_string()), None],
            vec![Some("5".to_string()), Some("postgres".to_string())]
        ]
    );

    // From zero: the reset's own statement is the first transaction counted.
    exec(&c, "SELECT pg_stat_reset()").await;
    assert_eq!(counts(&c, "stats_reset IS NOT NULL").await, ["t"]);
    exec(&c, "CREATE TABLE t (a int PRIMARY KEY, b int)").await;
    exec(
        &c,
        "INSERT INTO t SELECT i, 0 FROM generate_series(1, 100) AS s(i)",
    )
    .await;
    exec(
        &c,
        "BEGIN; INSERT INTO t VALUES (101, 0); UPDATE t SET b = 1 WHERE a <= 10; COMMIT",
    )
    .await;
    exec(&c, "BEGIN; INSERT INTO t VALUES (102, 0); ROLLBACK").await;
    exec(&c, "DELETE FROM t WHERE a > 95").await;
    // Failing as its rows are computed, and while it is planned.
    assert_eq!(
        sqlstate(
            &c.batch_execute("SELECT 1 / (a - a) FROM t")
                .await
                .unwrap_err()
        ),
        "22012"
    );
    assert!(c.batch_execute("SELECT * FROM nope").await.is_err());
    // Committed: the reset, CREATE, INSERT, the first block, DELETE (and the SELECTs of
    // `counts` above, one). Rolled back: the second block and the two errors.
    assert_eq!(counts(&c, "xact_commit, xact_rollback").await, ["6", "3"]);

    let tables =
        |column: &str| format!("SELECT coalesce(sum({column}), 0)::text FROM pg_stat_user_tables");
    let of_tables = |column: &str| {
        let sql = tables(column);
        let c = &c;
        async move { rows(c, &sql).await[0][0].clone().unwrap() }
    };
    let written = counts(&c, "tup_inserted, tup_updated, tup_deleted").await;
    assert_eq!(
        written,
        [
            of_tables("n_tup_ins").await,
            of_tables("n_tup_upd").await,
            of_tables("n_tup_del").await
        ]
    );
    assert_eq!(written[1..], ["10", "6"]);
    let blocks = counts(&c, "blks_read + blks_hit").await;
    let statio = rows(
        &c,
        "SELECT (sum(heap_blks_read + heap_blks_hit) + sum(coalesce(idx_blks_read, 0) + \
         coalesce(idx_blks_hit, 0)))::text FROM pg_statio_user_tables",
    )
    .await;
    assert!(blocks[0].parse::<i64>().unwrap() > 0);
    assert_eq!(Some(blocks[0].clone()), statio[0][0]);

    // A deadlock between two sessions' row locks.
    let other = server.client().await;
    exec(&c, "BEGIN; SELECT * FROM t WHERE a = 1 FOR UPDATE").await;
    exec(&other, "BEGIN; SELECT * FROM t WHERE a = 2 FOR UPDATE").await;
    let waiting = tokio::spawn(async move {
        let r = other
            .batch_execute("SELECT * FROM t WHERE a = 1 FOR UPDATE")
            .await;
        (other, r.is_ok())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let e = c
        .batch_execute("SELECT * FROM t WHERE a = 2 FOR UPDATE")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&e), "40P01");
    // Idle in the (failed) transaction for a while before it ends.
    tokio::time::sleep(Duration::from_millis(200)).await;
    exec(&c, "ROLLBACK").await;
    let (other, locked) = waiting.await.unwrap();
    assert!(locked);
    exec(&other, "COMMIT").await;
    assert_eq!(counts(&c, "deadlocks, numbackends").await, ["1", "2"]);
    let idle: f64 = counts(&c, "idle_in_transaction_time").await[0]
        .parse()
        .unwrap();
    assert!(idle >= 200.0, "idle in transaction {idle} ms");

    // Sessions started since the reset: `other`, then one killed.
    drop(other);
    let killed = server.client().await;
    let pid: i32 = killed
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    exec(&c, &format!("SELECT pg_terminate_backend({pid})")).await;
    let mut ended = Vec::new();
    for _ in 0..100 {
        ended = counts(&c, "sessions, sessions_killed, numbackends").await;
        if ended == ["2", "1", "1"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(ended, ["2", "1", "1"]);

    // Three more ends, one of each other kind: a connection closed without a Terminate
    // message (abandoned), a session ended by its idle_session_timeout and one by a
    // message the server cannot decode (both FATAL). `other`, above, said goodbye.
    drop(raw::RawConnection::start(server.port));
    let timed_out = server.client().await;
    exec(&timed_out, "SET idle_session_timeout = '100ms'").await;
    let mut garbled = raw::RawConnection::start(server.port);
    garbled.send(b"\x01\0\0\0\x04");
    next_is_fatal(&mut garbled, "08P01", "invalid frontend message type 1");
    let mut ended = Vec::new();
    for _ in 0..100 {
        ended = counts(
            &c,
            "sessions, sessions_abandoned, sessions_fatal, sessions_killed, numbackends",
        )
        .await;
        if ended == ["5", "1", "2", "1", "1"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(ended, ["5", "1", "2", "1", "1"]);
    drop((timed_out, garbled));
    let times: Vec<f64> = counts(&c, "session_time, active_time")
        .await
        .iter()
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(times[0] >= idle && times[1] > 0.0, "{times:?}");
}

/// A shutdown ends the client sessions as PostgreSQL's fast shutdown does — each gets
/// FATAL 57P01 — and the statistics saved at the shutdown count them as killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shutdown_kills_the_sessions_and_counts_them() {
    let mut server = TestServer::start("stat-database-shutdown");
    let idle = server.client().await;
    let mut raw_session = raw::RawConnection::start(server.port);
    let before = counts(&idle, "sessions, sessions_killed").await;
    assert_eq!(before, ["2", "0"]);
    server.restart();
    next_is_fatal(
        &mut raw_session,
        "57P01",
        "terminating connection due to administrator command",
    );
    assert!(idle.is_closed() || idle.batch_execute("SELECT 1").await.is_err());
    let after = server.client().await;
    assert_eq!(
        counts(&after, "sessions, sessions_killed, sessions_abandoned").await,
        ["3", "2", "0"],
        "the two sessions of before the restart, killed, and this one"
    );
}
