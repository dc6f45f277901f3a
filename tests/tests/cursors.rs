//! SQL cursors end to end: DECLARE, FETCH and MOVE in every direction a forward-only
//! cursor takes, the rows of the declaration's snapshot (kept through other sessions'
//! deletes and a VACUUM), WITH HOLD after COMMIT and ROLLBACK, `pg_cursors`, timeouts
//! inside a FETCH, the extended protocol (typed FETCH, a portal read in pieces), psql's
//! FETCH_COUNT, and PostgreSQL 18's errors.

use std::time::Duration;

use iolab_tests::{error, int, rows, TestServer};
use tokio_postgres::{Client, SimpleQueryMessage};

async fn exec(client: &Client, sql: &str) {
    client
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

/// The first column of the rows of `sql`, as numbers.
async fn numbers(client: &Client, sql: &str) -> Vec<i64> {
    (rows(client, sql).await.into_iter())
        .map(|r| {
            r[0].as_deref()
                .expect("not null")
                .parse()
                .expect("a number")
        })
        .collect()
}

/// The row count of the command tag of `sql` (`MOVE n`, `FETCH n`).
async fn tag_count(client: &Client, sql: &str) -> u64 {
    let replies = client.simple_query(sql).await.expect(sql);
    match replies.last() {
        Some(SimpleQueryMessage::CommandComplete(n)) => *n,
        other => panic!("{sql}: no command tag, {other:?}"),
    }
}

/// The SQLSTATE and message `sql` fails with.

async fn with_numbers(server: &TestServer, rows: u32) -> Client {
    let client = server.client().await;
    exec(
        &client,
        &format!(
            "CREATE TABLE n (i int, s text);
             INSERT INTO n SELECT i, 'row ' || i FROM generate_series(1, {rows}) AS g(i);"
        ),
    )
    .await;
    client
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_and_move_walk_forward() {
    let server = TestServer::start("cursor-walk");
    let c = with_numbers(&server, 1000).await;
    exec(&c, "BEGIN; DECLARE c CURSOR FOR SELECT i FROM n ORDER BY i").await;
    assert_eq!(numbers(&c, "FETCH c").await, [1]);
    assert_eq!(numbers(&c, "FETCH 3 FROM c").await, [2, 3, 4]);
    assert_eq!(numbers(&c, "FETCH FORWARD 2 IN c").await, [5, 6]);
    assert_eq!(tag_count(&c, "MOVE 10 c").await, 10);
    assert_eq!(numbers(&c, "FETCH NEXT FROM c").await, [17]);
    assert_eq!(numbers(&c, "FETCH ABSOLUTE 20 FROM c").await, [20]);
    assert_eq!(numbers(&c, "FETCH RELATIVE 5 FROM c").await, [25]);
    assert_eq!(tag_count(&c, "MOVE 0 FROM c").await, 1);
    assert_eq!(numbers(&c, "FETCH BACKWARD -2 FROM c").await, [26, 27]);
    // The rest, then nothing: the cursor is at its end.
    let rest = numbers(&c, "FETCH ALL FROM c").await;
    assert_eq!(rest, (28..=1000).collect::<Vec<_>>());
    assert_eq!(numbers(&c, "FETCH c").await, Vec::<i64>::new());
    assert_eq!(tag_count(&c, "MOVE 0 IN c").await, 0);
    assert_eq!(tag_count(&c, "MOVE ALL IN c").await, 0);
    // Going back is what a NO SCROLL cursor cannot do.
    let back = c.batch_execute("FETCH PRIOR FROM c").await.unwrap_err();
    let db = back.as_db_error().expect("an error from the server");
    assert_eq!(
        (db.code().code(), db.message(), db.hint()),
        (
            "55000",
            "cursor can only scan forward",
            Some("Declare it with SCROLL option to enable backward scan.")
        )
    );
    exec(&c, "ROLLBACK").await;
    // The rollback closed it.
    exec(&c, "BEGIN").await;
    assert_eq!(
        error(&c, "FETCH c").await,
        ("34000".into(), "cursor \"c\" does not exist".into())
    );
    exec(&c, "ROLLBACK").await;

    // MOVE ALL counts what it passes over; ABSOLUTE behind the position fails.
    exec(
        &c,
        "BEGIN; DECLARE c CURSOR FOR SELECT i FROM n WHERE i <= 50",
    )
    .await;
    assert_eq!(tag_count(&c, "MOVE FORWARD 5 FROM c").await, 5);
    assert_eq!(error(&c, "FETCH ABSOLUTE 2 FROM c").await.0, "55000");
    exec(
        &c,
        "ROLLBACK; BEGIN; DECLARE c CURSOR FOR SELECT i FROM n WHERE i <= 50",
    )
    .await;
    assert_eq!(tag_count(&c, "MOVE ALL FROM c").await, 50);
    assert_eq!(tag_count(&c, "FETCH ALL FROM c").await, 0);
    exec(&c, "CLOSE c; COMMIT").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_returns_the_rows_of_its_declaration() {
    let server = TestServer::start("cursor-snapshot");
    let c = with_numbers(&server, 5000).await;
    let other = server.client().await;
    exec(
        &c,
        "BEGIN; DECLARE c CURSOR FOR SELECT i FROM n WHERE i % 100 = 0",
    )
    .await;
    assert_eq!(numbers(&c, "FETCH 2 FROM c").await, [100, 200]);
    // Another session deletes and inserts, commits, and vacuums the table: the deleted
    // rows stay for the cursor, whose snapshot holds the removal horizon.
    exec(
        &other,
        "DELETE FROM n WHERE i > 1000; INSERT INTO n VALUES (9900, 'new')",
    )
    .await;
    exec(&other, "VACUUM n").await;
    // The same transaction's own later change is not seen either.
    exec(&c, "DELETE FROM n WHERE i = 300").await;
    let rest = numbers(&c, "FETCH ALL FROM c").await;
    assert_eq!(rest, (3..=50).map(|k| k * 100).collect::<Vec<_>>());
    exec(&c, "COMMIT").await;
    assert_eq!(
        numbers(&c, "SELECT count(*) FROM n WHERE i % 100 = 0").await,
        [10]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_hold_outlives_its_transaction() {
    let server = TestServer::start("cursor-hold");
    let c = with_numbers(&server, 2000).await;
    // Outside a block only WITH HOLD is allowed; it is read at once.
    assert_eq!(
        error(&c, "DECLARE plain CURSOR FOR SELECT 1").await,
        (
            "25P01".into(),
            "DECLARE CURSOR can only be used in transaction blocks".into()
        )
    );
    exec(
        &c,
        "DECLARE h CURSOR WITH HOLD FOR SELECT i FROM n WHERE i % 500 = 0",
    )
    .await;
    assert_eq!(numbers(&c, "FETCH 2 FROM h").await, [500, 1000]);

    exec(&c, "BEGIN").await;
    exec(
        &c,
        "DECLARE x CURSOR WITH HOLD FOR SELECT i FROM n WHERE i > 1990",
    )
    .await;
    exec(&c, "DECLARE gone CURSOR FOR SELECT i FROM n").await;
    assert_eq!(numbers(&c, "FETCH 3 FROM x").await, [1991, 1992, 1993]);
    let listed = rows(
        &c,
        "SELECT name, is_holdable, statement FROM pg_cursors ORDER BY name",
    )
    .await;
    let listed: Vec<(String, String)> = (listed.iter())
        .map(|r| (r[0].clone().unwrap(), r[1].clone().unwrap()))
        .collect();
    assert_eq!(
        listed,
        [("gone", "f"), ("h", "t"), ("x", "t")].map(|(n, h)| (n.to_string(), h.to_string()))
    );
    exec(&c, "COMMIT").await;
    // Rows another session deletes now are not the cursor's business: it read them.
    exec(&server.client().await, "DELETE FROM n").await;
    assert_eq!(
        numbers(&c, "FETCH ALL FROM x").await,
        (1994..=2000).collect::<Vec<_>>()
    );
    assert_eq!(numbers(&c, "FETCH ALL FROM h").await, [1500, 2000]);
    assert_eq!(error(&c, "FETCH gone").await.0, "34000");
    // Their rows fit in work_mem: no temporary file.
    let tmp = server.data_dir.join("base").join("pgsql_tmp");
    let left = iolab_tests::files_under(&tmp);
    assert!(left.is_empty(), "files left in {tmp:?}: {left:?}");

    // Beyond work_mem, a held cursor's rows go to one temporary file until it is closed.
    let temp_files = "SELECT temp_files FROM pg_stat_database WHERE datname = 'postgres'";
    let files_before = int(&c, temp_files).await;
    exec(
        &c,
        "SET work_mem = '64kB'; BEGIN;
         DECLARE big CURSOR WITH HOLD FOR SELECT i, md5(i::text) FROM generate_series(1, 50000) i ORDER BY i;
         COMMIT; RESET work_mem",
    )
    .await;
    assert_eq!(int(&c, "SELECT count(*) FROM pg_ls_tmpdir()").await, 1);
    let all = rows(&c, "FETCH ALL FROM big").await;
    assert_eq!(all.len(), 50000);
    assert_eq!(all[0][0].as_deref(), Some("1"));
    assert_eq!(all[49999][0].as_deref(), Some("50000"));
    exec(&c, "CLOSE big").await;
    assert!(iolab_tests::files_under(&tmp).is_empty());
    assert_eq!(int(&c, temp_files).await, files_before + 1);

    // ROLLBACK drops what its block declared, not what an earlier one did.
    exec(
        &c,
        "BEGIN; DECLARE y CURSOR WITH HOLD FOR SELECT 1; ROLLBACK",
    )
    .await;
    let names = rows(&c, "SELECT name FROM pg_cursors ORDER BY name").await;
    assert_eq!(names, [[Some("h".to_string())], [Some("x".to_string())]]);
    exec(&c, "CLOSE ALL").await;
    assert!(rows(&c, "SELECT * FROM pg_cursors").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_declare_and_close_refuse() {
    let server = TestServer::start("cursor-errors");
    let c = with_numbers(&server, 10).await;
    let cases = [
        (
            "DECLARE c CURSOR FOR SELECT 1",
            "42P03",
            "cursor \"c\" already exists",
        ),
        (
            "DECLARE s SCROLL CURSOR FOR SELECT 1",
            "0A000",
            "SCROLL cursors are not supported",
        ),
        (
            "DECLARE u CURSOR FOR SELECT i FROM n FOR UPDATE",
            "0A000",
            "DECLARE CURSOR … FOR UPDATE/SHARE is not supported",
        ),
        ("CLOSE nope", "34000", "cursor \"nope\" does not exist"),
        ("MOVE 1 IN nope", "34000", "cursor \"nope\" does not exist"),
        ("FETCH 1 2 FROM c", "42601", "syntax error at or near \"2\""),
    ];
    for (sql, code, message) in cases {
        exec(&c, "BEGIN; DECLARE c CURSOR FOR SELECT i FROM n").await;
        assert_eq!(error(&c, sql).await, (code.into(), message.into()), "{sql}");
        exec(&c, "ROLLBACK").await;
    }
    // At most 256 open in a session.
    exec(&c, "BEGIN").await;
    for k in 0..256 {
        exec(&c, &format!("DECLARE c{k} CURSOR FOR SELECT {k}")).await;
    }
    assert_eq!(
        error(&c, "DECLARE c256 CURSOR FOR SELECT 1").await.0,
        "54000"
    );
    exec(&c, "ROLLBACK").await;
    // The session goes on.
    assert_eq!(numbers(&c, "SELECT count(*) FROM n").await, [10]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_timeout_covers_a_fetch_not_the_time_between() {
    let server = TestServer::start("cursor-timeout");
    let c = with_numbers(&server, 100).await;
    exec(&c, "SET statement_timeout = '300ms'; BEGIN").await;
    exec(&c, "DECLARE c CURSOR FOR SELECT i FROM n ORDER BY i").await;
    // Longer than the timeout passes between the DECLARE and its FETCHes: the DECLARE's
    // timer ended with it.
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(numbers(&c, "FETCH 2 FROM c").await, [1, 2]);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(numbers(&c, "FETCH 2 FROM c").await, [3, 4]);
    // A FETCH whose rows take longer stops inside the plan (pg_sleep looks at the flag).
    exec(&c, "DECLARE slow CURSOR FOR SELECT pg_sleep(30)").await;
    assert_eq!(
        error(&c, "FETCH slow").await,
        (
            "57014".into(),
            "canceling statement due to statement timeout".into()
        )
    );
    exec(&c, "ROLLBACK").await;
    assert_eq!(numbers(&c, "SELECT 7").await, [7]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extended_protocol_fetches_typed_rows_and_reads_portals_in_pieces() {
    let server = TestServer::start("cursor-extended");
    let mut c = with_numbers(&server, 300).await;
    let t = c.transaction().await.unwrap();
    t.batch_execute("DECLARE c CURSOR FOR SELECT i, s FROM n ORDER BY i")
        .await
        .unwrap();
    let got = t.query("FETCH 3 FROM c", &[]).await.unwrap();
    let got: Vec<(i32, String)> = got.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        got,
        [(1, "row 1"), (2, "row 2"), (3, "row 3")].map(|(i, s)| (i, s.into()))
    );
    assert_eq!(t.execute("MOVE 10 FROM c", &[]).await.unwrap(), 10);
    let next: i32 = t.query_one("FETCH c", &[]).await.unwrap().get(0);
    assert_eq!(next, 14);
    // A protocol portal read a few rows per Execute (PortalSuspended between).
    let stmt = t
        .prepare("SELECT i FROM n WHERE i > $1 ORDER BY i")
        .await
        .unwrap();
    let portal = t.bind(&stmt, &[&290i32]).await.unwrap();
    let mut seen = Vec::new();
    loop {
        let piece = t.query_portal(&portal, 4).await.unwrap();
        assert!(piece.len() <= 4);
        if piece.is_empty() {
            break;
        }
        seen.extend(piece.iter().map(|r| r.get::<_, i32>(0)));
    }
    assert_eq!(seen, (291..=300).collect::<Vec<_>>());
    t.commit().await.unwrap();
}

#[test]
fn psql_fetch_count_reads_through_a_cursor() {
    let server = TestServer::start("cursor-psql");
    server.psql_ok(&[
        "-c",
        "CREATE TABLE n AS SELECT i FROM generate_series(1, 25) AS g(i)",
    ]);
    let out = server.psql_ok(&[
        "-A",
        "-t",
        "-v",
        "FETCH_COUNT=4",
        "-c",
        "SELECT i FROM n ORDER BY i",
        "-c",
        "SELECT query FROM pg_stat_activity WHERE pid = pg_backend_pid()",
    ]);
    let lines: Vec<&str> = out.lines().collect();
    let want: Vec<String> = (1..=25).map(|i| i.to_string()).collect();
    assert_eq!(lines[..25], want);
    // psql declared a cursor for the query (PostgreSQL 15's psql with FETCH_COUNT): the
    // statement running is its DECLARE (iolab reads the view while planning) or its
    // FETCH (PostgreSQL reads it as the rows are fetched).
    assert!(
        lines[25].starts_with("DECLARE _psql_cursor NO SCROLL CURSOR FOR")
            || lines[25] == "FETCH FORWARD 4 FROM _psql_cursor",
        "{out}"
    );
}
