//! `pg_stat_activity`, `pg_cancel_backend` and `pg_terminate_backend` end to end:
//!
//! - the view has PostgreSQL 18's 22 columns in order; a session sees itself `active`
//!   with its query, another session `idle` with `Client` / `ClientRead` and its last
//!   query, `idle in transaction` inside a block and `idle in transaction (aborted)` after
//!   an error in one; `application_name` and `client_addr` are the connection's;
//! - `pg_cancel_backend(pid)` cancels a long statement of another session (57014) and
//!   the session goes on; `pg_terminate_backend(pid)` ends another session with FATAL
//!   57P01 and its row goes, also while it sleeps in `pg_sleep`; unknown pids give false,
//!   NULL gives NULL.

use std::time::{Duration, Instant};

use iolab_tests::{rows, sqlstate, TestServer};
use tokio_postgres::{Client, NoTls};

async fn connect(server: &TestServer, application_name: &str) -> Client {
    let (client, conn) = tokio_postgres::connect(
        &format!("{} application_name={application_name}", server.conn_str()),
        NoTls,
    )
    .await
    .expect("connect");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

async fn pid(client: &Client) -> i32 {
    client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0)
}

/// (state, wait_event_type, wait_event, query) of `pid`.
async fn activity_of(client: &Client, pid: i32) -> Vec<Option<String>> {
    let r = rows(
        client,
        &format!(
            "SELECT state, wait_event_type, wait_event, query FROM pg_stat_activity \
             WHERE pid = {pid}"
        ),
    )
    .await;
    assert_eq!(r.len(), 1, "{r:?}");
    r[0].clone()
}

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_show_their_state_query_and_wait_event() {
    let server = TestServer::start("activity-states");
    let me = connect(&server, "watcher").await;
    let other = connect(&server, "worker_one").await;
    let (my_pid, other_pid) = (pid(&me).await, pid(&other).await);

    // The server started before every session, once (the same time for both).
    let started = "SELECT pg_postmaster_start_time()::text, \
                   bool_and(backend_start >= pg_postmaster_start_time()), \
                   pg_conf_load_time() = pg_postmaster_start_time() FROM pg_stat_activity";
    let (mine, others) = (rows(&me, started).await, rows(&other, started).await);
    assert_eq!(mine, others);
    assert_eq!(mine[0][1..], [Some("t".into()), Some("t".into())]);

    let columns = rows(
        &me,
        "SELECT column_name FROM information_schema.columns \
         WHERE table_name = 'pg_stat_activity' ORDER BY ordinal_position",
    )
    .await;
    let names: Vec<&str> = columns.iter().map(|c| c[0].as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "datid",
            "datname",
            "pid",
            "leader_pid",
            "usesysid",
            "usename",
            "application_name",
            "client_addr",
            "client_hostname",
            "client_port",
            "backend_start",
            "xact_start",
            "query_start",
            "state_change",
            "wait_event_type",
            "wait_event",
            "state",
            "backend_xid",
            "backend_xmin",
            "query_id",
            "query",
            "backend_type",
        ]
    );

    let self_row = rows(
        &me,
        &format!(
            "SELECT state, wait_event, query, application_name, client_addr, usename, \
             backend_type, datname, backend_start <= now(), query_start >= backend_start, \
             xact_start = query_start \
             FROM pg_stat_activity WHERE pid = {my_pid}"
        ),
    )
    .await;
    assert_eq!(
        self_row[0],
        vec![
            s("active"),
            None,
            s(&format!(
                "SELECT state, wait_event, query, application_name, client_addr, usename, \
             backend_type, datname, backend_start <= now(), query_start >= backend_start, \
             xact_start = query_start \
             FROM pg_stat_activity WHERE pid = {my_pid}"
            )),
            s("watcher"),
            s("127.0.0.1"),
            s("postgres"),
            s("client backend"),
            s("postgres"),
            s("t"),
            s("t"),
            s("t"),
        ]
    );

    // another session, idle after its last query
    other.batch_execute("SELECT 42").await.unwrap();
    assert_eq!(
        activity_of(&me, other_pid).await,
        vec![s("idle"), s("Client"), s("ClientRead"), s("SELECT 42")]
    );
    other.batch_execute("BEGIN; SELECT 1").await.unwrap();
    assert_eq!(
        activity_of(&me, other_pid).await[0],
        s("idle in transaction")
    );
    let in_block = rows(
        &me,
        &format!("SELECT xact_start IS NOT NULL FROM pg_stat_activity WHERE pid = {other_pid}"),
    )
    .await;
    assert_eq!(in_block, vec![vec![s("t")]]);
    assert!(other.batch_execute("SELECT 1/0").await.is_err());
    assert_eq!(
        activity_of(&me, other_pid).await[0],
        s("idle in transaction (aborted)")
    );
    other.batch_execute("ROLLBACK").await.unwrap();
    let after = rows(
        &me,
        &format!("SELECT state, xact_start FROM pg_stat_activity WHERE pid = {other_pid}"),
    )
    .await;
    assert_eq!(after, vec![vec![s("idle"), None]]);

    // application_name changes with SET
    other
        .batch_execute("SET application_name = 'renamed'")
        .await
        .unwrap();
    let renamed = rows(
        &me,
        &format!("SELECT application_name FROM pg_stat_activity WHERE pid = {other_pid}"),
    )
    .await;
    assert_eq!(renamed, vec![vec![s("renamed")]]);

    // the extended protocol reports its statement too
    let n: i64 = other
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
            &[&other_pid],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 1);
    assert_eq!(
        activity_of(&me, other_pid).await[3],
        s("SELECT count(*) FROM pg_stat_activity WHERE pid = $1")
    );

    // a closed connection leaves the view
    drop(other);
    wait_until_gone(&me, other_pid).await;
}

async fn wait_until_gone(client: &Client, pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let n = rows(
            client,
            &format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {pid}"),
        )
        .await;
        if n == vec![vec![s("0")]] {
            return;
        }
        assert!(Instant::now() < deadline, "session {pid} is still listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `pid` runs `query`.
async fn wait_until_running(client: &Client, pid: i32, query: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = activity_of(client, pid).await;
        if r[0] == s("active") && r[3] == s(query) {
            return;
        }
        assert!(Instant::now() < deadline, "{pid} never ran {query}: {r:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

const LONG_QUERY: &str =
    "SELECT count(*) FROM generate_series(1, 3000000000) AS a(i) WHERE i % 7 = 3";

/// `SELECT <function>(pid)` from `admin` (`pg_cancel_backend` / `pg_terminate_backend`),
/// which must report that the signal was sent.
async fn signal(admin: &Client, function: &str, pid: i32) {
    let sent: bool = admin
        .query_one(&format!("SELECT {function}({pid})"), &[])
        .await
        .unwrap()
        .get(0);
    assert!(sent, "{function}({pid}) sent nothing");
}

/// Runs `query` on `victim`, sends it `function` once it runs, and returns the
/// connection with the error its statement ended with.
async fn signal_running(
    admin: &Client,
    victim: Client,
    victim_pid: i32,
    function: &str,
    query: &'static str,
) -> (Client, tokio_postgres::Error) {
    let running = tokio::spawn(async move {
        let r = victim.batch_execute(query).await;
        (victim, r)
    });
    wait_until_running(admin, victim_pid, query).await;
    signal(admin, function, victim_pid).await;
    let (victim, result) = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .unwrap_or_else(|_| panic!("the statement ends after {function}"))
        .unwrap();
    let e = result.expect_err(function);
    (victim, e)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_and_terminate_other_sessions() {
    let server = TestServer::start("activity-signals");
    let admin = connect(&server, "admin").await;

    // cancel: the statement fails with 57014, the session goes on
    let victim = connect(&server, "victim").await;
    let victim_pid = pid(&victim).await;
    let (victim, e) =
        signal_running(&admin, victim, victim_pid, "pg_cancel_backend", LONG_QUERY).await;
    assert_eq!(sqlstate(&e), "57014", "{e:?}");
    victim
        .batch_execute("SELECT 1")
        .await
        .expect("the session goes on");

    // terminate: FATAL 57P01, the connection closes, the row goes
    let (victim, e) = signal_running(
        &admin,
        victim,
        victim_pid,
        "pg_terminate_backend",
        LONG_QUERY,
    )
    .await;
    assert_eq!(sqlstate(&e), "57P01", "{e:?}");
    assert!(victim.batch_execute("SELECT 1").await.is_err());
    wait_until_gone(&admin, victim_pid).await;

    // terminate while pg_sleep holds the session's thread: the FATAL comes at once (within
    // signal_running's 30 s, of a 600 s sleep), and only the FATAL
    let sleeper = connect(&server, "sleeper").await;
    let sleeper_pid = pid(&sleeper).await;
    let (sleeper, e) = signal_running(
        &admin,
        sleeper,
        sleeper_pid,
        "pg_terminate_backend",
        "SELECT pg_sleep(600)",
    )
    .await;
    let db = e.as_db_error().expect("a server error");
    assert_eq!(
        (db.code().code(), db.severity()),
        ("57P01", "FATAL"),
        "{e:?}"
    );
    assert!(sleeper.batch_execute("SELECT 1").await.is_err());
    wait_until_gone(&admin, sleeper_pid).await;

    // an idle session terminated: psql sees the FATAL on its next command
    let idle = connect(&server, "idle").await;
    let idle_pid = pid(&idle).await;
    signal(&admin, "pg_terminate_backend", idle_pid).await;
    wait_until_gone(&admin, idle_pid).await;
    assert!(idle.batch_execute("SELECT 1").await.is_err());

    // unknown pids and NULL
    let r = rows(
        &admin,
        "SELECT pg_cancel_backend(1), pg_terminate_backend(2), pg_cancel_backend(NULL)",
    )
    .await;
    assert_eq!(r, vec![vec![s("f"), s("f"), None]]);
    admin.batch_execute("SELECT 1").await.unwrap();
}

/// The auxiliary threads are listed as PostgreSQL 18 lists its auxiliary processes: the
/// checkpointer, the background writer and one row per I/O worker, each with its own pid,
/// no database, user, state or query, and its `Activity` wait event while it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auxiliary_threads_are_listed_like_postgres_processes() {
    let server = TestServer::start_with("activity-auxiliary", &["-c", "io_workers=4"]);
    let client = server.client().await;
    let rows = iolab_tests::rows(
        &client,
        "SELECT backend_type, count(DISTINCT pid),
                bool_and(datname IS NULL AND usename IS NULL AND state IS NULL
                         AND query = '' AND application_name = '' AND backend_start IS NOT NULL),
                min(wait_event_type), min(wait_event)
           FROM pg_stat_activity WHERE backend_type <> 'client backend'
          GROUP BY backend_type ORDER BY backend_type",
    )
    .await;
    assert_eq!(
        rows,
        [
            [
                s("background writer"),
                s("1"),
                s("t"),
                s("Activity"),
                s("BgwriterMain")
            ],
            [
                s("checkpointer"),
                s("1"),
                s("t"),
                s("Activity"),
                s("CheckpointerMain")
            ],
            [
                s("io worker"),
                s("4"),
                s("t"),
                s("Activity"),
                s("IoWorkerMain")
            ],
        ]
    );
    // Their pids are not a session's: nothing to cancel there.
    let me = pid(&client).await;
    let others = iolab_tests::rows(
        &client,
        &format!(
            "SELECT count(*) FROM pg_stat_activity WHERE pid = {me} OR backend_type = 'client backend'"
        ),
    )
    .await;
    assert_eq!(others, [[s("1")]]);
    let checkpointer = iolab_tests::rows(
        &client,
        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE backend_type = 'checkpointer'",
    )
    .await;
    assert_eq!(checkpointer, [[s("f")]]);
}
