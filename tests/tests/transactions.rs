//! Transactions and failure: cancelled and failed INSERTs leave nothing visible, readers
//! never see half an INSERT, ROLLBACK discards rows and undoes DDL, a corrupted page is
//! reported (XX001), and the connection limit holds.

use std::time::Duration;

use iolab_tests::{show, sqlstate, TestServer};
use tokio_postgres::NoTls;

async fn count(client: &tokio_postgres::Client, table: &str) -> i64 {
    client
        .query_one(&format!("SELECT count(*) FROM {table}"), &[])
        .await
        .expect("count")
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_and_failed_inserts_leave_no_rows() {
    let server = TestServer::start("txn-cancel");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t(a int, b text); INSERT INTO t VALUES (1, 'one'), (2, 'two')")
        .await
        .unwrap();

    // A failed INSERT … SELECT: the bad value comes after many good rows were written.
    let err = client
        .batch_execute(
            "INSERT INTO t SELECT CASE WHEN i = 300000 THEN 'x' ELSE i::text END, 'f' FROM generate_series(1, 400000) AS s(i)",
        )
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22P02", "{err:?}");
    assert_eq!(count(&client, "t").await, 2);

    // A cancelled INSERT … SELECT.
    let cancel = client.cancel_token();
    let insert = tokio::spawn(async move {
        let r = client
            .batch_execute(
                "INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 50000000) AS s(i)",
            )
            .await;
        (client, r)
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cancel
        .cancel_query(NoTls)
        .await
        .expect("send cancel request");
    let (client, result) = tokio::time::timeout(Duration::from_secs(60), insert)
        .await
        .expect("cancel stops the insert")
        .unwrap();
    let err = result.expect_err("the INSERT was cancelled");
    assert_eq!(sqlstate(&err), "57014", "{err:?}");
    assert_eq!(
        err.as_db_error().unwrap().message(),
        "canceling statement due to user request"
    );
    assert_eq!(count(&client, "t").await, 2);

    // statement_timeout cancels the same way.
    client
        .batch_execute("SET statement_timeout = '300ms'")
        .await
        .unwrap();
    let err = client
        .batch_execute(
            "INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 50000000) AS s(i)",
        )
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "57014");
    assert_eq!(
        err.as_db_error().unwrap().message(),
        "canceling statement due to statement timeout"
    );
    client
        .batch_execute("RESET statement_timeout")
        .await
        .unwrap();
    assert_eq!(count(&client, "t").await, 2);
}

/// `statement_timeout` and cancel requests stop what runs as a SELECT's rows are sent
/// (the statement has returned its stream by then) and `pg_sleep`, whose thread is
/// blocked: each within seconds, with PostgreSQL's 57014 and the message for its reason.
/// Before, a SELECT ran to its end past its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_and_cancels_stop_selects_and_pg_sleep() {
    let server = TestServer::start("txn-timeout");
    let client = server.client().await;
    let other = server.client().await;
    let rows = client.simple_query("SELECT pg_sleep(0.05)").await.unwrap();
    let values: Vec<_> = rows
        .iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => Some(r.get(0).map(str::to_string)),
            _ => None,
        })
        .collect();
    assert_eq!(values, [Some(String::new())], "pg_sleep returns void");
    // clock_timestamp() moves within a statement, now() does not.
    let clocks = client
        .query_one(
            "SELECT count(DISTINCT clock_timestamp()), count(DISTINCT now()), \
             min(clock_timestamp()) >= min(now()) FROM generate_series(1, 1000)",
            &[],
        )
        .await
        .unwrap();
    let (distinct, nows, later): (i64, i64, bool) = (clocks.get(0), clocks.get(1), clocks.get(2));
    assert!(
        distinct > 1 && nows == 1 && later,
        "{distinct} {nows} {later}"
    );

    /// The error of `sql`, which must come within 20 s.
    async fn stopped(client: &tokio_postgres::Client, sql: &str) -> (String, String) {
        let result = tokio::time::timeout(Duration::from_secs(20), client.batch_execute(sql))
            .await
            .unwrap_or_else(|_| panic!("{sql} was not stopped"));
        let e = result.expect_err(sql);
        (sqlstate(&e), e.as_db_error().unwrap().message().to_string())
    }
    let timed_out = || {
        (
            "57014".to_string(),
            "canceling statement due to statement timeout".to_string(),
        )
    };
    // A scan of a million rows takes a debug build most of a second.
    client
        .batch_execute(
            "CREATE TABLE big AS SELECT i, md5(i::text) AS m FROM generate_series(1, 1000000) AS s(i); \
             SET statement_timeout = '50ms'",
        )
        .await
        .unwrap();
    assert_eq!(stopped(&client, "SELECT pg_sleep(60)").await, timed_out());
    assert_eq!(
        stopped(&client, "SELECT count(*) FROM big WHERE m > 'f'").await,
        timed_out()
    );
    client
        .batch_execute("RESET statement_timeout")
        .await
        .unwrap();

    // A cancel request, from the client and from another session.
    let by_request = (
        "57014".to_string(),
        "canceling statement due to user request".to_string(),
    );
    let cancel = client.cancel_token();
    let canceler = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        cancel
            .cancel_query(NoTls)
            .await
            .expect("send cancel request");
    });
    assert_eq!(stopped(&client, "SELECT pg_sleep(60)").await, by_request);
    canceler.await.unwrap();
    let pid: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    let canceler = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let sql = format!("SELECT pg_cancel_backend({pid})");
        other.batch_execute(&sql).await.unwrap();
    });
    assert_eq!(stopped(&client, "SELECT pg_sleep(60)").await, by_request);
    canceler.await.unwrap();
    // The session goes on.
    assert_eq!(count(&client, "(SELECT 1) AS one").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_never_see_half_an_insert() {
    let server = TestServer::start("txn-readers");
    let writer = server.client().await;
    let reader = server.client().await;
    writer
        .batch_execute("CREATE TABLE t(a int, b text)")
        .await
        .unwrap();
    const N: i64 = 600_000;
    let insert = tokio::spawn(async move {
        writer
            .batch_execute(&format!(
                "INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, {N}) AS s(i)"
            ))
            .await
            .expect("insert");
    });
    let mut seen = std::collections::BTreeSet::new();
    while !insert.is_finished() {
        let n = count(&reader, "t").await;
        assert!(
            n == 0 || n == N,
            "a reader saw {n} rows of an INSERT of {N}"
        );
        seen.insert(n);
    }
    insert.await.unwrap();
    assert_eq!(count(&reader, "t").await, N);
    assert!(
        seen.contains(&0),
        "the reader ran while the insert was in progress"
    );
}

/// count(*) hands on a batch per 1 024 pages, and a batch without visible rows is not the
/// end of the table: rows behind more than 1 024 pages of rolled-back ones are still counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn count_sees_rows_behind_many_pages_of_invisible_ones() {
    let server = TestServer::start("txn-count-pages");
    let client = server.client().await;
    iolab_tests::run_script(
        &client,
        "CREATE TABLE t(a int, b text); \
         BEGIN; INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 200000) AS s(i); ROLLBACK",
    )
    .await
    .unwrap();
    let invisible_pages: i64 = client
        .query_one("SELECT pg_relation_size('t') / 8192", &[])
        .await
        .unwrap()
        .get(0);
    assert!(
        invisible_pages > 1024,
        "{invisible_pages} pages of rolled-back rows"
    );
    client
        .batch_execute(
            "INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 150000) AS s(i)",
        )
        .await
        .unwrap();
    assert_eq!(count(&client, "t").await, 150000);
    let row = client
        .query_one("SELECT sum(a)::int8, count(*) FROM t", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(1), 150000, "the decoding scan agrees");
    assert_eq!(row.get::<_, i64>(0), 150000 * 150001 / 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_blocks_commit_and_roll_back() {
    let server = TestServer::start("txn-blocks");
    let a = server.client().await;
    let b = server.client().await;
    a.batch_execute("CREATE TABLE t(a int)").await.unwrap();

    a.batch_execute("BEGIN; INSERT INTO t VALUES (1), (2); INSERT INTO t VALUES (3)")
        .await
        .unwrap();
    assert_eq!(count(&a, "t").await, 3, "a transaction sees its own rows");
    assert_eq!(count(&b, "t").await, 0, "others do not, before COMMIT");
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(count(&b, "t").await, 3);

    a.batch_execute("BEGIN; INSERT INTO t SELECT i FROM generate_series(1, 1000) AS s(i)")
        .await
        .unwrap();
    assert_eq!(count(&a, "t").await, 1003);
    a.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&a, "t").await, 3);

    // INSERT … SELECT from the same table reads only what was there before.
    a.batch_execute("INSERT INTO t SELECT a FROM t")
        .await
        .unwrap();
    assert_eq!(count(&a, "t").await, 6);

    // An error aborts the block: later statements fail with 25P02 until ROLLBACK.
    a.batch_execute("BEGIN; INSERT INTO t VALUES (7)")
        .await
        .unwrap();
    let err = a.batch_execute("SELECT 1/0").await.unwrap_err();
    assert_eq!(sqlstate(&err), "22012");
    let err = a.batch_execute("SELECT 1").await.unwrap_err();
    assert_eq!(sqlstate(&err), "25P02");
    // COMMIT of a failed block rolls back.
    let rows = a.simple_query("COMMIT").await.unwrap();
    assert!(matches!(
        rows.last(),
        Some(tokio_postgres::SimpleQueryMessage::CommandComplete(_))
    ));
    assert_eq!(count(&a, "t").await, 6);

    // SET inside a rolled-back block is undone; SET LOCAL ends with its block.
    a.batch_execute("BEGIN; SET work_mem = '8MB'; ROLLBACK")
        .await
        .unwrap();
    assert_eq!(show(&a, "work_mem").await, "4MB");
    a.batch_execute("BEGIN; SET LOCAL work_mem = '16MB'")
        .await
        .unwrap();
    assert_eq!(show(&a, "work_mem").await, "16MB");
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(show(&a, "work_mem").await, "4MB");
}

/// A relation's file number, from `pg_class`.
async fn relation_file(client: &tokio_postgres::Client, name: &str) -> i64 {
    client
        .query_one(
            "SELECT relfilenode::bigint FROM pg_class WHERE relname = $1",
            &[&name],
        )
        .await
        .unwrap_or_else(|e| panic!("{name} in pg_class: {e}"))
        .get(0)
}

/// Rows of `keep` found through its index (the index's file must be intact).
async fn count_by_index(client: &tokio_postgres::Client) -> i64 {
    client
        .batch_execute("SET enable_seqscan = off")
        .await
        .unwrap();
    let plan: Vec<String> = client
        .query("EXPLAIN SELECT count(*) FROM keep WHERE a < 10", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(plan.iter().any(|l| l.contains("keep_a")), "{plan:#?}");
    let n = client
        .query_one("SELECT count(*) FROM keep WHERE a < 10", &[])
        .await
        .unwrap()
        .get(0);
    client.batch_execute("RESET enable_seqscan").await.unwrap();
    n
}

/// DDL is transactional, as in PostgreSQL: ROLLBACK undoes CREATE, DROP and TRUNCATE (a
/// dropped or truncated table comes back with its rows and its index), COMMIT keeps them and
/// removes the files they replaced, and a failed block, a disconnect inside a block and a
/// failed CREATE TABLE AS roll back too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_in_transaction_blocks_rolls_back_and_commits() {
    let server = TestServer::start("txn-ddl");
    let a = server.client().await;
    let file_exists = |rfn: i64| server.data_dir.join("base").join(rfn.to_string()).exists();
    a.batch_execute(
        "CREATE TABLE keep(a int, b text);
         INSERT INTO keep SELECT i, md5(i::text) FROM generate_series(1, 5000) AS s(i);
         CREATE INDEX keep_a ON keep (a); ANALYZE keep",
    )
    .await
    .unwrap();
    let (heap, index) = (
        relation_file(&a, "keep").await,
        relation_file(&a, "keep_a").await,
    );
    assert_eq!(count_by_index(&a).await, 9);

    // DROP TABLE, rolled back: the rows, the index and the statistics are back.
    a.batch_execute("BEGIN; DROP TABLE keep").await.unwrap();
    let err = a.batch_execute("SELECT 1 FROM keep").await.unwrap_err();
    assert_eq!(sqlstate(&err), "42P01", "dropped inside the block");
    a.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&a, "keep").await, 5000);
    assert_eq!(count_by_index(&a).await, 9);
    let stats: i64 = a
        .query_one(
            "SELECT count(*) FROM pg_stats WHERE tablename = 'keep'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(stats, 2, "ANALYZE's statistics came back with the table");

    // DROP INDEX, rolled back.
    a.batch_execute("BEGIN; DROP INDEX keep_a; ROLLBACK")
        .await
        .unwrap();
    assert_eq!(count_by_index(&a).await, 9);

    // TRUNCATE, rolled back: the old files are the table's again.
    a.batch_execute("BEGIN; TRUNCATE keep").await.unwrap();
    assert_eq!(count(&a, "keep").await, 0);
    a.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(count(&a, "keep").await, 5000);
    assert_eq!(count_by_index(&a).await, 9);
    assert_eq!(
        (
            relation_file(&a, "keep").await,
            relation_file(&a, "keep_a").await
        ),
        (heap, index)
    );

    // A failed block, ended with COMMIT, rolls back its DROP.
    a.batch_execute("BEGIN; DROP TABLE keep").await.unwrap();
    let err = a.batch_execute("SELECT 1/0").await.unwrap_err();
    assert_eq!(sqlstate(&err), "22012");
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(count(&a, "keep").await, 5000);

    // A session that ends inside its block rolls back.
    let c = server.client().await;
    c.batch_execute("BEGIN; DROP TABLE keep").await.unwrap();
    drop(c);
    let mut back = false;
    for _ in 0..100 {
        if a.batch_execute("SELECT 1 FROM keep LIMIT 1").await.is_ok() {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(back, "the table came back when the session ended");
    assert_eq!(count_by_index(&a).await, 9);

    // Created in a block that rolls back: gone, with its index and files, name free again.
    a.batch_execute(
        "BEGIN; CREATE TABLE fresh(a int); INSERT INTO fresh VALUES (1);
         CREATE INDEX fresh_a ON fresh (a); CREATE TABLE copy AS SELECT * FROM keep",
    )
    .await
    .unwrap();
    let created = [
        relation_file(&a, "fresh").await,
        relation_file(&a, "fresh_a").await,
        relation_file(&a, "copy").await,
    ];
    assert!(created.iter().all(|&f| file_exists(f)));
    a.batch_execute("ROLLBACK").await.unwrap();
    for name in ["fresh", "copy"] {
        let err = a
            .batch_execute(&format!("SELECT 1 FROM {name}"))
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&err), "42P01", "{name}");
    }
    assert!(created.iter().all(|&f| !file_exists(f)), "{created:?}");
    a.batch_execute("CREATE TABLE fresh(a int); DROP TABLE fresh")
        .await
        .unwrap();

    // Outside a block a failed CREATE TABLE AS leaves no table.
    let err = a
        .batch_execute(
            "CREATE TABLE bad AS SELECT 1 / (i - 3) AS x FROM generate_series(1, 5) AS s(i)",
        )
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22012");
    let err = a.batch_execute("SELECT 1 FROM bad").await.unwrap_err();
    assert_eq!(sqlstate(&err), "42P01");

    // Committed: TRUNCATE's new files serve, the old ones are removed; DROP removes files.
    assert!(file_exists(heap) && file_exists(index));
    a.batch_execute("BEGIN; TRUNCATE keep; INSERT INTO keep VALUES (1, 'x'), (2, 'y'); COMMIT")
        .await
        .unwrap();
    assert_eq!(count(&a, "keep").await, 2);
    assert_eq!(count_by_index(&a).await, 2);
    assert!(
        !file_exists(heap) && !file_exists(index),
        "old files removed at COMMIT"
    );
    let (heap, index) = (
        relation_file(&a, "keep").await,
        relation_file(&a, "keep_a").await,
    );
    a.batch_execute("BEGIN; DROP TABLE keep").await.unwrap();
    assert!(file_exists(heap), "kept until COMMIT");
    a.batch_execute("COMMIT").await.unwrap();
    assert!(!file_exists(heap) && !file_exists(index));
    let err = a.batch_execute("SELECT 1 FROM keep").await.unwrap_err();
    assert_eq!(sqlstate(&err), "42P01");
}

/// A crash inside a transaction block: at the next start the DDL the block did is undone
/// (`global/pending_ddl.json`), so a table it dropped or truncated is back with its rows
/// and index, and one it created is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_undoes_open_ddl() {
    let mut server = TestServer::start("txn-ddl-crash");
    let a = server.client().await;
    a.batch_execute(
        "CREATE TABLE keep(a int, b text);
         INSERT INTO keep SELECT i, md5(i::text) FROM generate_series(1, 5000) AS s(i);
         CREATE INDEX keep_a ON keep (a);
         CREATE TABLE other(a int); INSERT INTO other VALUES (1), (2), (3);
         CHECKPOINT",
    )
    .await
    .unwrap();
    a.batch_execute(
        "BEGIN; TRUNCATE keep, other; DROP TABLE keep; DROP TABLE other;
         CREATE TABLE fresh(a int); CREATE INDEX fresh_a ON fresh (a)",
    )
    .await
    .unwrap();
    let pending = server.data_dir.join("global/pending_ddl.json");
    assert!(pending.exists(), "the open block's DDL is written down");
    drop(a);
    server.kill();
    server.restart();
    let a = server.client().await;
    assert_eq!(count(&a, "keep").await, 5000);
    assert_eq!(count_by_index(&a).await, 9);
    assert_eq!(count(&a, "other").await, 3);
    let err = a.batch_execute("SELECT 1 FROM fresh").await.unwrap_err();
    assert_eq!(sqlstate(&err), "42P01");
    assert!(
        server.log().contains("undid 6 DDL change(s)"),
        "{}",
        server.log()
    );
    assert!(!pending.exists(), "nothing is open after recovery");
    // A block that commits leaves nothing to undo.
    a.batch_execute("BEGIN; DROP TABLE other; COMMIT")
        .await
        .unwrap();
    assert!(!pending.exists());
}

/// The relfilenode of a table, read from the catalog file (the server is stopped).
fn relfilenode(server: &TestServer, table: &str) -> u64 {
    let catalog = std::fs::read_to_string(server.data_dir.join("global/catalog.json")).unwrap();
    let at = catalog
        .find(&format!("\"name\": \"{table}\""))
        .expect("table in catalog");
    let rest = &catalog[at..];
    let field = rest.find("\"relfilenode\": ").unwrap() + "\"relfilenode\": ".len();
    rest[field..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_page_is_reported_not_returned() {
    let mut server = TestServer::start("corruption");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t(a int, b text); INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 2000) AS s(i)")
        .await
        .unwrap();
    assert_eq!(count(&client, "t").await, 2000);
    drop(client);
    server.stop();

    let node = relfilenode(&server, "t");
    let path = server.data_dir.join("base").join(node.to_string());
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() >= 3 * 8192, "the table spans several blocks");
    bytes[8192 + 5000] ^= 0x40; // a byte inside block 1
    std::fs::write(&path, bytes).unwrap();

    server.restart();
    let client = server.client().await;
    let err = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "XX001", "{err:?}");
    let message = err.as_db_error().unwrap().message().to_string();
    assert!(message.contains("invalid page in block 1"), "{message}");
    assert!(message.contains(&format!("base/{node}")), "{message}");
    // The server keeps serving.
    let one: i64 = client
        .query_one("SELECT 1::int8", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(one, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_limit_and_command_line_settings() {
    let server = TestServer::start_with(
        "limits",
        &["-c", "max_connections=3", "-c", "work_mem=16MB"],
    );
    let a = server.client().await;
    let _b = server.client().await;
    let _c = server.client().await;
    let err = tokio_postgres::connect(&server.conn_str(), NoTls)
        .await
        .err()
        .expect("a fourth connection is refused");
    assert_eq!(sqlstate(&err), "53300");
    assert_eq!(
        err.as_db_error().unwrap().message(),
        "sorry, too many clients already"
    );
    assert_eq!(show(&a, "work_mem").await, "16MB");
    assert_eq!(show(&a, "max_connections").await, "3");
    let err = a
        .batch_execute("SET shared_buffers = '1GB'")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "55P02");
    let err = a
        .batch_execute("SET effective_io_concurrency = 5000")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22023");
    a.batch_execute("SET effective_io_concurrency = 256")
        .await
        .unwrap();
    assert_eq!(show(&a, "effective_io_concurrency").await, "256");
    a.batch_execute("RESET ALL").await.unwrap();
    assert_eq!(show(&a, "effective_io_concurrency").await, "16");
    assert_eq!(show(&a, "work_mem").await, "16MB");
}
