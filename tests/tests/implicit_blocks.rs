//! A Query message of several statements runs them in one implicit transaction block, as
//! PostgreSQL does: an error rolls back the statements before it, statements that refuse
//! a block (VACUUM, CLUSTER, ALTER SYSTEM, DISCARD ALL) refuse it, savepoints and
//! `… AND CHAIN` want an explicit block, COMMIT or ROLLBACK end the implicit block with a
//! warning, BEGIN makes it explicit, SET LOCAL and cursors last to the message's end, and
//! a COPY FROM STDIN among the statements ends the block when its data is in. The
//! extended protocol's Executes before one Sync share a transaction the same way. Every
//! expected result here is what PostgreSQL 18 answered to the same messages.

use iolab_tests::raw::{self, Backend, RawConnection};
use iolab_tests::{error, rows, TestServer};
use tokio_postgres::{Client, SimpleQueryMessage};

/// The values of `a` in `t`, in order, as PostgreSQL's `array_agg` prints them.
async fn values(c: &Client) -> String {
    let r = rows(
        c,
        "SELECT coalesce(array_agg(a ORDER BY a)::text, '{}') FROM t",
    )
    .await;
    r[0][0].clone().unwrap()
}

/// Each row's first column of a message's results, in order, across its statements.
async fn first_columns(c: &Client, sql: &str) -> Vec<String> {
    let messages = c.simple_query(sql).await.expect(sql);
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(r) => Some(r.get(0).unwrap_or("NULL").to_string()),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_rolls_back_the_statements_before_it() {
    let server = TestServer::start("implicit-error");
    let c = server.client().await;
    c.batch_execute("CREATE TABLE t(a int)").await.unwrap();

    let (code, _) = error(&c, "INSERT INTO t VALUES (1); SELECT 1/0").await;
    assert_eq!(code, "22012");
    assert_eq!(values(&c).await, "{}", "the INSERT went with the error");

    // COMMIT ends the implicit block: what came before stays, what follows is a new block.
    let (code, _) = error(
        &c,
        "INSERT INTO t VALUES (2); COMMIT; INSERT INTO t VALUES (3); SELECT 1/0",
    )
    .await;
    assert_eq!(code, "22012");
    assert_eq!(values(&c).await, "{2}");

    // ROLLBACK undoes the block so far; the statements after it run.
    let after = first_columns(
        &c,
        "INSERT INTO t VALUES (4); ROLLBACK; SELECT count(*) FROM t",
    )
    .await;
    assert_eq!(after, ["1"]);
    assert_eq!(values(&c).await, "{2}");

    // The statements are one transaction: one transaction id, assigned once.
    let ids = first_columns(
        &c,
        "INSERT INTO t VALUES (5); SELECT pg_current_xact_id(); SELECT pg_current_xact_id()",
    )
    .await;
    assert_eq!(ids.len(), 2);
    assert_eq!(ids[0], ids[1], "one transaction for the whole message");
    let next = first_columns(&c, "SELECT pg_current_xact_id()").await;
    assert_ne!(next[0], ids[0], "the block ended with the message");
    assert_eq!(values(&c).await, "{2,5}");

    // The session is idle between messages: a message of one statement is its own
    // transaction again, and a failing one does not take the previous message's rows.
    let (code, _) = error(&c, "INSERT INTO t VALUES (1/0)").await;
    assert_eq!(code, "22012");
    assert_eq!(values(&c).await, "{2,5}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_that_refuse_a_block_refuse_the_implicit_one() {
    let server = TestServer::start("implicit-refusals");
    let c = server.client().await;
    c.batch_execute("CREATE TABLE t(a int PRIMARY KEY)")
        .await
        .unwrap();
    c.batch_execute("INSERT INTO t VALUES (1)").await.unwrap();
    for (sql, code, message) in [
        (
            "SELECT 1; VACUUM t",
            "25001",
            "VACUUM cannot run inside a transaction block",
        ),
        (
            "VACUUM t; SELECT 1",
            "25001",
            "VACUUM cannot run inside a transaction block",
        ),
        (
            "SELECT 1; CLUSTER",
            "25001",
            "CLUSTER cannot run inside a transaction block",
        ),
        (
            "ALTER SYSTEM SET work_mem = '4MB'; SELECT 1",
            "25001",
            "ALTER SYSTEM cannot run inside a transaction block",
        ),
        (
            "SELECT 1; DISCARD ALL",
            "25001",
            "DISCARD ALL cannot run inside a transaction block",
        ),
        (
            "SELECT 1; SAVEPOINT s",
            "25P01",
            "SAVEPOINT can only be used in transaction blocks",
        ),
        (
            "SELECT 1; RELEASE SAVEPOINT s",
            "25P01",
            "RELEASE SAVEPOINT can only be used in transaction blocks",
        ),
        (
            "SELECT 1; ROLLBACK TO SAVEPOINT s",
            "25P01",
            "ROLLBACK TO SAVEPOINT can only be used in transaction blocks",
        ),
        (
            "SELECT 1; COMMIT AND CHAIN",
            "25P01",
            "COMMIT AND CHAIN can only be used in transaction blocks",
        ),
        (
            "SELECT 1; BEGIN ISOLATION LEVEL REPEATABLE READ",
            "25001",
            "SET TRANSACTION ISOLATION LEVEL must be called before any query",
        ),
    ] {
        assert_eq!(error(&c, sql).await, (code.into(), message.into()), "{sql}");
    }
    // Alone in its message, each runs (CLUSTER needs an index it was clustered on first).
    c.batch_execute("VACUUM t").await.unwrap();
    c.batch_execute("CLUSTER t USING t_pkey").await.unwrap();
    c.batch_execute("CLUSTER").await.unwrap();
    // A block BEGIN opened in the message is explicit: savepoints work in it.
    let r = first_columns(
        &c,
        "BEGIN; SAVEPOINT s; INSERT INTO t VALUES (2); ROLLBACK TO SAVEPOINT s; \
         SELECT count(*) FROM t; COMMIT",
    )
    .await;
    assert_eq!(r, ["1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn begin_makes_the_block_explicit_and_settings_last_to_its_end() {
    let server = TestServer::start("implicit-begin");
    let c = server.client().await;
    let other = server.client().await;
    c.batch_execute("CREATE TABLE t(a int)").await.unwrap();

    // The INSERT before BEGIN joins the explicit block, which outlives the message.
    c.batch_execute("INSERT INTO t VALUES (5); BEGIN; INSERT INTO t VALUES (6)")
        .await
        .unwrap();
    assert_eq!(values(&other).await, "{}", "nothing committed yet");
    c.batch_execute("COMMIT").await.unwrap();
    assert_eq!(values(&other).await, "{5,6}");

    // SET LOCAL lasts to the end of the message (and warns of nothing); a cursor is open
    // until then.
    let r = first_columns(&c, "SELECT 1; SET LOCAL work_mem = '1MB'; SHOW work_mem").await;
    assert_eq!(r, ["1", "1MB"]);
    assert_eq!(first_columns(&c, "SHOW work_mem").await, ["4MB"]);
    let r = first_columns(
        &c,
        "DECLARE cur CURSOR FOR SELECT a FROM t ORDER BY a; FETCH 1 FROM cur",
    )
    .await;
    assert_eq!(r, ["5"]);
    let (code, _) = error(&c, "FETCH 1 FROM cur").await;
    assert_eq!(code, "34000", "the cursor closed with the block");

    // LOCK TABLE wants a block, and the implicit one holds the lock until the message ends.
    let r = first_columns(
        &c,
        "LOCK TABLE t IN SHARE MODE; \
         SELECT mode FROM pg_locks WHERE relation = 't'::regclass AND pid = pg_backend_pid()",
    )
    .await;
    assert_eq!(r, ["ShareLock"]);
    let after = first_columns(
        &c,
        "SELECT count(*) FROM pg_locks WHERE relation = 't'::regclass AND mode = 'ShareLock'",
    )
    .await;
    assert_eq!(after, ["0"]);
}

/// psql sends `-c` as one Query message: COMMIT's warning shows on its stderr, and the
/// message's rows are all committed or none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_sees_the_warning_and_one_transaction() {
    let server = TestServer::start("implicit-psql");
    server.psql_ok(&["-c", "CREATE TABLE t(a int)"]);
    let out = server.psql(&["-c", "INSERT INTO t VALUES (1); INSERT INTO t VALUES ('x')"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid input syntax for type integer"),
        "{err}"
    );
    let out = server.psql(&["-c", "INSERT INTO t VALUES (2); COMMIT"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("WARNING:  there is no transaction in progress"),
        "{err}"
    );
    let counted = server.psql_ok(&["-At", "-c", "SELECT array_agg(a) FROM t"]);
    assert_eq!(counted.trim(), "{2}");
}

/// A COPY FROM STDIN among the statements: the block ends when the data is in —
/// committed with the INSERT before it, or rolled back with it when the data is bad —
/// and ReadyForQuery says the session is idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_from_stdin_ends_the_block_when_its_data_is_in() {
    let server = TestServer::start("implicit-copy");
    let mut conn = RawConnection::start(server.port);
    let watcher = server.client().await;
    conn.simple_query_column("CREATE TABLE t(a int)");
    let pid = conn.simple_query_column("SELECT pg_backend_pid()")[0]
        .clone()
        .unwrap();
    let state = format!("SELECT state FROM pg_stat_activity WHERE pid = {pid}");
    for (data, committed) in [(&b"2\n3\n"[..], true), (&b"4\nx\n"[..], false)] {
        conn.send(&raw::query("INSERT INTO t VALUES (1); COPY t FROM STDIN"));
        let before = conn_until_copy(&mut conn);
        assert_eq!(before, [Backend::CommandComplete("INSERT 0 1".into())]);
        conn.send(&[raw::message(b'd', data), raw::message(b'c', b"")].concat());
        let end = conn.until_ready();
        assert_eq!(end.last(), Some(&Backend::ReadyForQuery(b'I')), "{end:?}");
        match committed {
            true => assert_eq!(end[0], Backend::CommandComplete("COPY 2".into())),
            false => assert_eq!(end[0].as_error().map(|e| e.code()), Some("22P02")),
        }
        let after = rows(&watcher, &state).await;
        assert_eq!(
            after[0][0].as_deref(),
            Some("idle"),
            "the session waits for its client"
        );
    }
    let counted = conn.simple_query_column("SELECT count(*) FROM t");
    assert_eq!(counted, [Some("3".to_string())], "1, 2, 3 and not 1 and 4");

    // The statements after the COPY run once its data is in, in the same block.
    conn.send(&raw::query(
        "COPY t FROM STDIN; SELECT count(*) FROM t; \
         SELECT pg_current_xact_id_if_assigned() IS NOT NULL",
    ));
    assert_eq!(conn_until_copy(&mut conn), []);
    conn.send(&[raw::message(b'd', b"5\n"), raw::message(b'c', b"")].concat());
    let end = conn.until_ready();
    let rows: Vec<_> = end
        .iter()
        .filter_map(|m| match m {
            Backend::DataRow(values) => Some(String::from_utf8_lossy(values[0].as_deref()?).into()),
            _ => None,
        })
        .collect::<Vec<String>>();
    assert_eq!(rows, ["4", "t"], "{end:?}");
    assert_eq!(end.last(), Some(&Backend::ReadyForQuery(b'I')));

    // A second COPY FROM STDIN in the message cannot wait for data: refused, and the
    // first one's rows go with the block.
    conn.send(&raw::query("COPY t FROM STDIN; COPY t FROM STDIN"));
    assert_eq!(conn_until_copy(&mut conn), []);
    conn.send(&[raw::message(b'd', b"6\n"), raw::message(b'c', b"")].concat());
    let end = conn.until_ready();
    let errors: Vec<_> = end.iter().filter_map(Backend::as_error).collect();
    assert_eq!(errors.len(), 1, "{end:?}");
    assert_eq!(errors[0].code(), "0A000");
    assert_eq!(end.last(), Some(&Backend::ReadyForQuery(b'I')));
    let counted = conn.simple_query_column("SELECT count(*) FROM t");
    assert_eq!(counted, [Some("4".to_string())]);
}

/// The messages up to CopyInResponse (which is not returned).
fn conn_until_copy(conn: &mut RawConnection) -> Vec<Backend> {
    let mut seen = Vec::new();
    loop {
        match conn.next(raw::REPLY_TIMEOUT) {
            raw::Received::Message(Backend::CopyInResponse) => return seen,
            raw::Received::Message(m) => seen.push(m),
            other => panic!("no CopyInResponse: {other:?} after {seen:?}"),
        }
    }
}

/// Parse, Bind and Execute of one statement (no parameters), as a pipelining client
/// sends it.
fn executed(sql: &str) -> Vec<u8> {
    [
        raw::parse("", sql, &[]),
        raw::bind("", "", &[], &[], &[]),
        raw::execute("", 0),
    ]
    .concat()
}

/// The extended protocol's Executes before one Sync share a transaction: the Sync
/// commits it, or rolls it back after any error — also one in a Parse, which no
/// statement ran — and ReadyForQuery says idle either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn executes_before_a_sync_share_a_transaction() {
    let server = TestServer::start("implicit-pipeline");
    let mut conn = RawConnection::start(server.port);
    conn.simple_query_column("CREATE TABLE t(a int)");

    let pipeline = |statements: &[&str]| {
        let mut bytes: Vec<u8> = statements.iter().flat_map(|s| executed(s)).collect();
        bytes.extend(raw::sync());
        bytes
    };
    conn.send(&pipeline(&[
        "INSERT INTO t VALUES (1)",
        "INSERT INTO t VALUES (2)",
    ]));
    let replies = conn.until_ready();
    assert_eq!(replies.last(), Some(&Backend::ReadyForQuery(b'I')));
    assert!(
        replies.iter().all(|m| m.as_error().is_none()),
        "{replies:?}"
    );

    conn.send(&pipeline(&["INSERT INTO t VALUES (3)", "SELEC 1"]));
    let replies = conn.until_ready();
    let errors: Vec<_> = replies.iter().filter_map(Backend::as_error).collect();
    assert_eq!(errors.len(), 1, "{replies:?}");
    assert_eq!(errors[0].code(), "42601");
    assert_eq!(replies.last(), Some(&Backend::ReadyForQuery(b'I')));

    conn.send(&pipeline(&["INSERT INTO t VALUES (4)", "VACUUM t"]));
    let replies = conn.until_ready();
    let errors: Vec<_> = replies.iter().filter_map(Backend::as_error).collect();
    assert_eq!(
        errors.iter().map(|e| e.message()).collect::<Vec<_>>(),
        ["VACUUM cannot run inside a transaction block"]
    );

    // VACUUM first is a transaction of its own, as it must be; the INSERT after it
    // commits at the Sync.
    conn.send(&pipeline(&["VACUUM t", "INSERT INTO t VALUES (5)"]));
    let replies = conn.until_ready();
    assert!(
        replies.iter().all(|m| m.as_error().is_none()),
        "{replies:?}"
    );

    let kept = conn.simple_query_column("SELECT string_agg(a::text, ',' ORDER BY a) FROM t");
    assert_eq!(
        kept,
        [Some("1,2,5".to_string())],
        "3 and 4 went with their errors"
    );
}
