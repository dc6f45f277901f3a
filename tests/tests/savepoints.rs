//! Savepoints end to end: `SAVEPOINT`, `RELEASE` and `ROLLBACK TO` take back exactly the
//! work done since (rows, updates, deletes, unique keys, DDL, settings, cursors), other
//! sessions see nothing of a block until it commits and wait for a savepoint's row only
//! until it is rolled back, a commit's released subtransactions survive a crash, a block
//! whose client goes away ends, and the errors are PostgreSQL 18's (as it printed them).

use std::time::Duration;

use iolab_tests::{int, rows, sqlstate, TestServer};
use tokio_postgres::Client;

async fn exec(client: &Client, sql: &str) {
    client
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

/// The SQLSTATE `sql` fails with.
async fn fails(client: &Client, sql: &str) -> String {
    match client.batch_execute(sql).await {
        Ok(()) => panic!("{sql} succeeded"),
        Err(e) => sqlstate(&e),
    }
}

/// The first column of each row of `sql`, as text.
async fn column(client: &Client, sql: &str) -> Vec<String> {
    (rows(client, sql).await.into_iter())
        .map(|r| r[0].clone().unwrap_or_default())
        .collect()
}

/// The values of `t`'s column `a`, in order.
async fn values(client: &Client) -> Vec<String> {
    column(client, "SELECT a FROM t ORDER BY a").await
}

/// Rows, updates and deletes after a savepoint go at ROLLBACK TO and stay at RELEASE;
/// nested savepoints, repeated names and quoted names; what COMMIT keeps.
#[tokio::test(flavor = "multi_thread")]
async fn rollback_to_takes_back_the_rows_written_since() {
    let server = TestServer::start("savepoints-rows");
    let c = server.client().await;
    let other = server.client().await;
    exec(&c, "CREATE TABLE t (a int, b text)").await;
    exec(&c, "INSERT INTO t VALUES (1, 'one'), (2, 'two')").await;
    exec(&c, "BEGIN; INSERT INTO t VALUES (3, 'three'); SAVEPOINT s1").await;
    exec(
        &c,
        "INSERT INTO t VALUES (4, 'four'); UPDATE t SET b = 'uno' WHERE a = 1",
    )
    .await;
    exec(&c, "DELETE FROM t WHERE a = 2").await;
    assert_eq!(values(&c).await, ["1", "3", "4"]);
    exec(&c, "ROLLBACK TO SAVEPOINT s1").await;
    assert_eq!(values(&c).await, ["1", "2", "3"]);
    assert_eq!(column(&c, "SELECT b FROM t WHERE a = 1").await, ["one"]);
    // The savepoint stays after ROLLBACK TO: work after it goes back to it again.
    exec(&c, "INSERT INTO t VALUES (5, 'five'); ROLLBACK TO s1").await;
    assert_eq!(values(&c).await, ["1", "2", "3"]);
    // Nested: the inner one released, the outer one rolled back, the inner one's rows go.
    exec(&c, "SAVEPOINT outer_one; INSERT INTO t VALUES (6, 'six')").await;
    exec(&c, "SAVEPOINT inner_one; INSERT INTO t VALUES (7, 'seven')").await;
    exec(&c, "RELEASE inner_one").await;
    assert_eq!(values(&c).await, ["1", "2", "3", "6", "7"]);
    exec(&c, "ROLLBACK TO outer_one").await;
    assert_eq!(values(&c).await, ["1", "2", "3"]);
    assert_eq!(fails(&c, "RELEASE inner_one").await, "3B001");
    exec(&c, "ROLLBACK TO outer_one").await;
    // A repeated name means the newest savepoint of that name; quoted names keep case.
    exec(&c, "SAVEPOINT dup; INSERT INTO t VALUES (8, 'eight')").await;
    exec(&c, "SAVEPOINT dup; INSERT INTO t VALUES (9, 'nine')").await;
    exec(&c, r#"SAVEPOINT "Dup"; INSERT INTO t VALUES (10, 'ten')"#).await;
    exec(&c, "ROLLBACK TO dup").await;
    assert_eq!(values(&c).await, ["1", "2", "3", "8"]);
    assert_eq!(
        fails(&c, r#"RELEASE "DUP""#).await,
        "3B001",
        "quoted, case kept"
    );
    exec(&c, "ROLLBACK TO dup").await;
    exec(&c, "RELEASE SAVEPOINT DUP").await;
    assert_eq!(values(&c).await, ["1", "2", "3", "8"], "DUP is dup, folded");
    assert_eq!(fails(&c, r#"ROLLBACK TO "Dup""#).await, "3B001", "closed");
    exec(&c, "ROLLBACK TO dup").await;
    assert_eq!(
        values(&c).await,
        ["1", "2", "3"],
        "the first dup, still open"
    );
    // Another session sees none of the block until it commits.
    assert_eq!(values(&other).await, ["1", "2"]);
    assert_eq!(column(&other, "SELECT b FROM t WHERE a = 1").await, ["one"]);
    exec(&c, "COMMIT").await;
    assert_eq!(values(&other).await, ["1", "2", "3"]);
    // The rows the rolled-back subtransactions wrote count as dead, the rest as live.
    assert_eq!(
        int(
            &other,
            "SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 't'"
        )
        .await,
        3
    );
}

/// A key inserted after a savepoint and taken back by ROLLBACK TO no longer conflicts;
/// a unique violation inside a savepoint fails it, and ROLLBACK TO lets the block go on.
#[tokio::test(flavor = "multi_thread")]
async fn a_unique_violation_is_taken_back_and_the_block_goes_on() {
    let server = TestServer::start("savepoints-unique");
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (a int PRIMARY KEY, b text)").await;
    exec(&c, "BEGIN; INSERT INTO t VALUES (1, 'kept'); SAVEPOINT s").await;
    exec(&c, "INSERT INTO t VALUES (2, 'taken back')").await;
    exec(&c, "ROLLBACK TO s").await;
    exec(&c, "INSERT INTO t VALUES (2, 'again')").await;
    exec(&c, "SAVEPOINT s2").await;
    assert_eq!(
        fails(&c, "INSERT INTO t VALUES (1, 'duplicate')").await,
        "23505"
    );
    assert_eq!(fails(&c, "SELECT 1").await, "25P02", "the block failed");
    exec(&c, "ROLLBACK TO s2").await;
    // The upsert meets the block's own rows, written before and inside savepoints.
    exec(&c, "SAVEPOINT s3; UPDATE t SET b = 'updated' WHERE a = 2").await;
    exec(
        &c,
        "INSERT INTO t VALUES (2, 'upserted') ON CONFLICT (a) DO UPDATE SET b = t.b || '+'",
    )
    .await;
    exec(&c, "RELEASE s3; COMMIT").await;
    assert_eq!(
        column(&c, "SELECT a || ' ' || b FROM t ORDER BY a").await,
        ["1 kept", "2 updated+"]
    );
}

/// DDL, settings and cursors follow ROLLBACK TO as PostgreSQL's do; RELEASE keeps them.
#[tokio::test(flavor = "multi_thread")]
async fn ddl_settings_and_cursors_go_back_with_the_savepoint() {
    let server = TestServer::start("savepoints-ddl");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE keep (a int); INSERT INTO keep VALUES (1), (2), (3)",
    )
    .await;
    exec(
        &c,
        "BEGIN; SET work_mem = '8MB'; DECLARE before_s CURSOR FOR SELECT a FROM keep ORDER BY a",
    )
    .await;
    exec(&c, "SAVEPOINT s").await;
    exec(&c, "CREATE TABLE made (a int); INSERT INTO made VALUES (1)").await;
    exec(&c, "DROP TABLE keep").await;
    exec(&c, "SET work_mem = '32MB'; SET LOCAL enable_seqscan = off").await;
    exec(&c, "DECLARE after_s CURSOR FOR SELECT 1").await;
    assert_eq!(column(&c, "FETCH 1 FROM before_s").await, ["1"]);
    exec(&c, "ROLLBACK TO s").await;
    let made = "SELECT count(*) FROM pg_class WHERE relname = 'made'";
    assert_eq!(int(&c, made).await, 0, "the table created since is gone");
    assert_eq!(
        int(&c, "SELECT count(*) FROM keep").await,
        3,
        "dropped table is back"
    );
    assert_eq!(column(&c, "SHOW work_mem").await, ["8MB"]);
    assert_eq!(column(&c, "SHOW enable_seqscan").await, ["on"]);
    assert_eq!(
        column(&c, "SELECT name FROM pg_cursors ORDER BY name").await,
        ["before_s"]
    );
    assert_eq!(
        column(&c, "FETCH 1 FROM before_s").await,
        ["2"],
        "a cursor keeps the position a FETCH gave it inside the savepoint"
    );
    // RELEASE keeps what the savepoint did, until the block's own end decides.
    exec(
        &c,
        "SAVEPOINT r; SET work_mem = '16MB'; CREATE TABLE released (a int); RELEASE r",
    )
    .await;
    assert_eq!(column(&c, "SHOW work_mem").await, ["16MB"]);
    exec(&c, "COMMIT").await;
    assert_eq!(column(&c, "SHOW work_mem").await, ["16MB"]);
    assert_eq!(int(&c, "SELECT count(*) FROM released").await, 0);
    assert_eq!(fails(&c, "SELECT * FROM made").await, "42P01");
}

/// The errors and tags of savepoint statements and chained blocks, as PostgreSQL 18 gives
/// them (the same script through psql against it printed the same lines): outside a block,
/// unknown names, a failed block, ROLLBACK TO clearing it.
#[tokio::test(flavor = "multi_thread")]
async fn errors_and_tags_are_postgresql_s() {
    let server = TestServer::start("savepoints-errors");
    let script = "SAVEPOINT a;\nRELEASE a;\nROLLBACK TO a;\n\
        BEGIN;\nSAVEPOINT a;\nRELEASE b;\nROLLBACK TO b;\nSELECT 1;\n\
        BEGIN;\nSAVEPOINT b;\nRELEASE SAVEPOINT b;\nROLLBACK TO a;\nSELECT 1/0;\n\
        SAVEPOINT c;\nRELEASE a;\nROLLBACK TO zz;\nROLLBACK TO a;\nSELECT 2;\n\
        COMMIT AND CHAIN;\nSHOW transaction_isolation;\nROLLBACK AND CHAIN;\nCOMMIT;\n\
        COMMIT AND CHAIN;\n";
    let want = "ERROR:  25P01\nERROR:  25P01\nERROR:  25P01\n\
        BEGIN\nSAVEPOINT\nERROR:  3B001\nERROR:  3B001\nERROR:  25P02\n\
        ERROR:  25P02\nERROR:  25P02\nERROR:  25P02\nROLLBACK\nERROR:  22012\n\
        ERROR:  25P02\nERROR:  25P02\nERROR:  3B001\nROLLBACK\n2\n\
        COMMIT\nread committed\nROLLBACK\nCOMMIT\n\
        ERROR:  25P01\n";
    assert_eq!(transcript(&server, script), want);
    let c = server.client().await;
    let message = |e: tokio_postgres::Error| e.as_db_error().unwrap().message().to_string();
    assert_eq!(
        message(c.batch_execute("SAVEPOINT x").await.unwrap_err()),
        "SAVEPOINT can only be used in transaction blocks"
    );
    assert_eq!(
        message(c.batch_execute("COMMIT AND CHAIN").await.unwrap_err()),
        "COMMIT AND CHAIN can only be used in transaction blocks"
    );
    exec(&c, "BEGIN").await;
    assert_eq!(
        message(c.batch_execute("ROLLBACK TO nope").await.unwrap_err()),
        "savepoint \"nope\" does not exist"
    );
}

/// What psql prints for `script` run in one session: tags, values (unaligned, no
/// headers) and errors as `ERROR:  <sqlstate>`, in order.
fn transcript(server: &TestServer, script: &str) -> String {
    let path = std::env::temp_dir().join(format!("iolab-savepoints-{}.sql", std::process::id()));
    std::fs::write(&path, script).unwrap();
    let port = server.conn_str();
    let port = port
        .split("port=")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "psql -X -A -t -v VERBOSITY=sqlstate -h 127.0.0.1 -p {port} -U postgres postgres \
             -f {} 2>&1",
            path.display()
        ))
        .env("PSQLRC", "/dev/null")
        .output()
        .expect("run psql");
    let _ = std::fs::remove_file(&path);
    (String::from_utf8_lossy(&out.stdout).lines())
        .map(|line| match line.find("ERROR:") {
            Some(at) => format!("{}\n", &line[at..]),
            None => format!("{line}\n"),
        })
        .collect()
}

/// A row a savepoint updated makes another writer wait (on the subtransaction, shown in
/// `pg_locks` and `pg_blocking_pids`) until ROLLBACK TO takes the update back; a wait
/// circle through a subtransaction is a deadlock (40P01), not a hang.
#[tokio::test(flavor = "multi_thread")]
async fn writers_wait_for_a_savepoint_until_it_is_rolled_back() {
    let server = TestServer::start("savepoints-waits");
    let a = server.client().await;
    let b = server.client().await;
    exec(
        &a,
        "CREATE TABLE t (a int, b text); INSERT INTO t VALUES (1, 'x'), (2, 'y')",
    )
    .await;
    let b_pid = int(&b, "SELECT pg_backend_pid()").await;
    let a_pid = int(&a, "SELECT pg_backend_pid()").await;
    exec(&a, "BEGIN; INSERT INTO t VALUES (3, 'z'); SAVEPOINT s").await;
    exec(&a, "UPDATE t SET b = 'a' WHERE a = 1").await;
    let waiting = tokio::spawn(async move {
        let r = b.execute("UPDATE t SET b = 'b' WHERE a = 1", &[]).await;
        (b, r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    // a holds its xid and its savepoint's, b its own; b waits for a's savepoint's.
    let locks = rows(
        &a,
        "SELECT transactionid, pid, mode FROM pg_locks WHERE locktype = 'transactionid'
          ORDER BY granted, pid, transactionid",
    )
    .await;
    let [waiting_lock, a_top, a_sub, b_top] = &locks[..] else {
        panic!("{locks:?}")
    };
    let pid = |row: &Vec<Option<String>>| row[1].clone().unwrap().parse::<i64>().unwrap();
    assert_eq!(waiting_lock[2].as_deref(), Some("ShareLock"));
    assert_eq!(pid(waiting_lock), b_pid);
    assert_eq!(waiting_lock[0], a_sub[0], "b waits for the subtransaction");
    assert_eq!((pid(a_top), pid(a_sub), pid(b_top)), (a_pid, a_pid, b_pid));
    assert_eq!(
        column(&a, &format!("SELECT pg_blocking_pids({b_pid})")).await,
        [format!("{{{a_pid}}}")]
    );
    assert!(!waiting.is_finished(), "b waits for the savepoint");
    exec(&a, "ROLLBACK TO s").await;
    let (b, updated) = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .expect("ROLLBACK TO ends the wait")
        .unwrap();
    assert_eq!(updated.unwrap(), 1);
    exec(&a, "COMMIT").await;
    assert_eq!(
        column(&a, "SELECT a || b FROM t ORDER BY a").await,
        ["1b", "2y", "3z"]
    );
    // A circle: a (in a savepoint) holds row 1 and waits for b's row 2; b then asks for
    // row 1, held by a's subtransaction: one of them is the deadlock's victim.
    exec(&a, "BEGIN; SAVEPOINT s; UPDATE t SET b = 'a' WHERE a = 1").await;
    exec(&b, "BEGIN; UPDATE t SET b = 'b' WHERE a = 2").await;
    let a_waits = tokio::spawn(async move {
        let r = a.execute("UPDATE t SET b = 'a' WHERE a = 2", &[]).await;
        (a, r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b_result = tokio::time::timeout(
        Duration::from_secs(10),
        b.execute("UPDATE t SET b = 'b' WHERE a = 1", &[]),
    )
    .await
    .expect("no hang");
    assert_eq!(sqlstate(&b_result.unwrap_err()), "40P01");
    exec(&b, "ROLLBACK").await;
    let (a, a_result) = a_waits.await.unwrap();
    assert_eq!(a_result.unwrap(), 1);
    exec(&a, "COMMIT").await;
    assert_eq!(
        column(&a, "SELECT a || b FROM t ORDER BY a").await,
        ["1a", "2a", "3z"]
    );
}

/// A commit record names the block's live subtransactions: after a crash right after
/// COMMIT, rows of released savepoints are there and rows of rolled-back ones are not;
/// a block with savepoints that never committed leaves nothing.
#[tokio::test(flavor = "multi_thread")]
async fn released_savepoints_survive_a_crash_with_their_commit() {
    let mut server = TestServer::start("savepoints-crash");
    {
        let c = server.client().await;
        exec(&c, "CREATE TABLE t (a int); CHECKPOINT").await;
        exec(
            &c,
            "BEGIN; INSERT INTO t VALUES (1); SAVEPOINT s1; INSERT INTO t VALUES (2)",
        )
        .await;
        exec(&c, "SAVEPOINT s2; INSERT INTO t VALUES (3); ROLLBACK TO s2").await;
        exec(
            &c,
            "SAVEPOINT s3; INSERT INTO t VALUES (4); RELEASE s1; COMMIT",
        )
        .await;
        let open = server.client().await;
        exec(
            &open,
            "BEGIN; SAVEPOINT s; INSERT INTO t VALUES (5); RELEASE s",
        )
        .await;
        exec(&open, "SAVEPOINT s; INSERT INTO t VALUES (6)").await;
        server.kill();
    }
    server.restart();
    let c = server.client().await;
    assert_eq!(values(&c).await, ["1", "2", "4"]);
}

/// A client that goes away inside a block ends it: its rows never appear, its row locks
/// and its savepoints' go, and its DDL is undone.
#[tokio::test(flavor = "multi_thread")]
async fn a_block_ends_when_its_client_goes_away() {
    let server = TestServer::start("savepoints-disconnect");
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (a int); INSERT INTO t VALUES (1), (2)").await;
    {
        let gone = server.client().await;
        exec(
            &gone,
            "BEGIN; UPDATE t SET a = 10 WHERE a = 1; CREATE TABLE made (a int)",
        )
        .await;
        exec(&gone, "SAVEPOINT s; UPDATE t SET a = 20 WHERE a = 2").await;
    }
    // The connection closes as the client drops; the updates no longer hold the rows.
    let updated = tokio::time::timeout(
        Duration::from_secs(10),
        c.execute("UPDATE t SET a = a + 100", &[]),
    )
    .await
    .expect("the gone client's row locks were released");
    assert_eq!(updated.unwrap(), 2);
    assert_eq!(values(&c).await, ["101", "102"]);
    assert_eq!(fails(&c, "SELECT * FROM made").await, "42P01");
    // The session's end is asynchronous to its client's: wait (bounded) for it to go.
    let mut locks = int(&c, "SELECT count(*) FROM pg_locks").await;
    for _ in 0..200 {
        if locks == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        locks = int(&c, "SELECT count(*) FROM pg_locks").await;
    }
    assert_eq!(locks, 0, "no transaction of the gone session runs");
}

/// `pg_current_xact_id()` gives the block an id (the one `pg_stat_activity` and
/// `pg_locks` show), `_if_assigned` does not, and `pg_xact_status` follows the block and
/// a rolled-back savepoint's subtransaction.
#[tokio::test(flavor = "multi_thread")]
async fn transaction_ids_and_their_status() {
    let server = TestServer::start("savepoints-xact-ids");
    let c = server.client().await;
    exec(&c, "CREATE TABLE t (a int)").await;
    let one = |sql: &'static str| {
        let c = &c;
        async move { rows(c, sql).await[0][0].clone() }
    };
    assert_eq!(one("SELECT txid_current_if_assigned()").await, None);
    exec(&c, "BEGIN").await;
    assert_eq!(one("SELECT pg_current_xact_id_if_assigned()").await, None);
    let xid = one("SELECT pg_current_xact_id()").await.unwrap();
    assert_eq!(
        one("SELECT txid_current()").await.unwrap(),
        xid,
        "the same id"
    );
    assert_eq!(
        one("SELECT backend_xid::text FROM pg_stat_activity WHERE pid = pg_backend_pid()")
            .await
            .unwrap(),
        xid
    );
    exec(&c, "SAVEPOINT s; INSERT INTO t VALUES (1)").await;
    let sub = column(
        &c,
        "SELECT transactionid FROM pg_locks WHERE locktype = 'transactionid' ORDER BY 1",
    )
    .await;
    assert_eq!(sub.len(), 2, "the block's id and its savepoint's: {sub:?}");
    assert_eq!(sub[0], xid);
    exec(&c, "ROLLBACK TO s").await;
    let status = |x: &str| format!("SELECT pg_xact_status({x})");
    assert_eq!(column(&c, &status(&sub[1])).await, ["aborted"]);
    assert_eq!(column(&c, &status(&xid)).await, ["in progress"]);
    exec(&c, "COMMIT").await;
    assert_eq!(column(&c, &status(&xid)).await, ["committed"]);
    assert_eq!(column(&c, &status(&sub[1])).await, ["aborted"]);
    let err = c
        .simple_query("SELECT pg_xact_status(4000000000)")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22023");
}
