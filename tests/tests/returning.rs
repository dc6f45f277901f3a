//! RETURNING of INSERT, UPDATE and DELETE end to end: the rows (values, names, types) as
//! PostgreSQL 18 sends them, before the command's own tag, through the simple and the
//! extended protocol; what the table holds afterwards (also through its index); rolled
//! back with the transaction; PostgreSQL's errors, and 0A000 for what iolab does not do.
//!
//! Differences from PostgreSQL 18 that these tests accept:
//! - `ctid` is reported as `text` (iolab has no `tid` type), in PostgreSQL's spelling.
//! - RETURNING naming the other tables of UPDATE … FROM / DELETE … USING, PostgreSQL 18's
//!   `old.` / `new.`, subqueries and whole-row references are refused with 0A000.

use iolab_tests::raw::{self, Backend, RawConnection};
use iolab_tests::tokio_postgres::types::Type;
use iolab_tests::tokio_postgres::Client;
use iolab_tests::{int, plan, rows, sqlstate, TestServer};

/// Text values of a DataRow.
fn texts(message: &Backend) -> Vec<Option<String>> {
    match message {
        Backend::DataRow(values) => values
            .iter()
            .map(|v| v.as_ref().map(|b| String::from_utf8(b.clone()).unwrap()))
            .collect(),
        other => panic!("not a DataRow: {other:?}"),
    }
}

fn some(values: &[&str]) -> Vec<Option<String>> {
    values.iter().map(|v| Some(v.to_string())).collect()
}

async fn one_text(client: &Client, sql: &str) -> Option<String> {
    let r = rows(client, sql).await;
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0][0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_protocol_rows_then_the_command_tag() {
    let server = TestServer::start("returning-simple");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t (a int, b text, c numeric(10,2))")
        .await
        .unwrap();
    let mut conn = RawConnection::start(server.port);

    // INSERT … VALUES, several rows, RETURNING *: RowDescription, a DataRow per row, then
    // `INSERT 0 2`, as PostgreSQL sends them.
    conn.send(&raw::query(
        "INSERT INTO t VALUES (1, 'x', 1.5), (2, 'y', 2) RETURNING *",
    ));
    let replies = conn.until_ready();
    assert_eq!(replies.len(), 5, "{replies:?}");
    assert_eq!(replies[0], Backend::RowDescription);
    assert_eq!(texts(&replies[1]), some(&["1", "x", "1.50"]));
    assert_eq!(texts(&replies[2]), some(&["2", "y", "2.00"]));
    assert_eq!(replies[3], Backend::CommandComplete("INSERT 0 2".into()));

    // INSERT … SELECT with expressions, an alias and the new rows' ctids.
    let inserted = rows(
        &client,
        "INSERT INTO t SELECT a + 10, b || '!', c FROM t ORDER BY a \
         RETURNING a, a + 1 AS next, upper(b), ctid",
    )
    .await;
    assert_eq!(inserted.len(), 2, "{inserted:?}");
    assert_eq!(inserted[0][..3], some(&["11", "12", "X!"])[..]);
    assert_eq!(inserted[1][..3], some(&["12", "13", "Y!"])[..]);
    for row in &inserted {
        let a = row[0].as_deref().unwrap();
        let ctid = one_text(&client, &format!("SELECT ctid FROM t WHERE a = {a}")).await;
        assert_eq!(row[3], ctid, "RETURNING ctid is where row {a} is");
    }
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, 4);

    // UPDATE … RETURNING: the new values, and where the new versions are.
    conn.send(&raw::query(
        "UPDATE t SET b = b || '?', c = c * 2 WHERE a <= 2 RETURNING a, b, c, ctid",
    ));
    let replies = conn.until_ready();
    assert_eq!(replies.len(), 5, "{replies:?}");
    assert_eq!(replies[3], Backend::CommandComplete("UPDATE 2".into()));
    let mut updated: Vec<_> = replies[1..3].iter().map(texts).collect();
    updated.sort();
    assert_eq!(updated[0][..3], some(&["1", "x?", "3.00"])[..]);
    assert_eq!(updated[1][..3], some(&["2", "y?", "4.00"])[..]);
    assert_eq!(
        rows(
            &client,
            "SELECT a, b, c::text FROM t WHERE a <= 2 ORDER BY a"
        )
        .await,
        vec![some(&["1", "x?", "3.00"]), some(&["2", "y?", "4.00"])]
    );
    for row in &updated {
        let a = row[0].as_deref().unwrap();
        let ctid = one_text(&client, &format!("SELECT ctid FROM t WHERE a = {a}")).await;
        assert_eq!(row[3], ctid, "RETURNING ctid is row {a}'s new version");
    }

    // DELETE … RETURNING: the deleted rows' values.
    conn.send(&raw::query("DELETE FROM t WHERE a > 10 RETURNING b, a"));
    let replies = conn.until_ready();
    assert_eq!(replies.len(), 5, "{replies:?}");
    assert_eq!(replies[3], Backend::CommandComplete("DELETE 2".into()));
    let mut deleted: Vec<_> = replies[1..3].iter().map(texts).collect();
    deleted.sort();
    assert_eq!(deleted, vec![some(&["x!", "11"]), some(&["y!", "12"])]);
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, 2);
    assert_eq!(int(&client, "SELECT count(*) FROM t WHERE a > 10").await, 0);

    // Nothing matched: no rows, the tag still counts (0).
    conn.send(&raw::query("DELETE FROM t WHERE a > 100 RETURNING a"));
    let replies = conn.until_ready();
    assert_eq!(
        replies[..2],
        [
            Backend::RowDescription,
            Backend::CommandComplete("DELETE 0".into())
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_protocol_with_parameters() {
    let server = TestServer::start("returning-extended");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE p (a int, b text)")
        .await
        .unwrap();

    // tokio-postgres prepares (Parse, Describe) and then binds; the Describe must tell
    // it the RETURNING columns, or it could not read the rows.
    let insert = client
        .prepare("INSERT INTO p VALUES ($1, $2) RETURNING a, b, a + a AS twice")
        .await
        .unwrap();
    assert_eq!(insert.params(), &[Type::INT4, Type::TEXT]);
    let columns: Vec<(&str, &Type)> = insert
        .columns()
        .iter()
        .map(|c| (c.name(), c.type_()))
        .collect();
    assert_eq!(
        columns,
        [
            ("a", &Type::INT4),
            ("b", &Type::TEXT),
            ("twice", &Type::INT4)
        ]
    );
    for (a, b) in [(7, "seven"), (8, "eight")] {
        let returned = client.query(&insert, &[&a, &b]).await.unwrap();
        assert_eq!(returned.len(), 1);
        assert_eq!(returned[0].get::<_, i32>("a"), a);
        assert_eq!(returned[0].get::<_, &str>("b"), b);
        assert_eq!(returned[0].get::<_, i32>("twice"), 2 * a);
    }
    // The command tag after the rows still counts them (`execute` reads it).
    let n = client
        .execute("INSERT INTO p VALUES ($1, 'nine') RETURNING a", &[&9i32])
        .await
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(int(&client, "SELECT count(*) FROM p").await, 3);

    let changed = client
        .query(
            "UPDATE p SET b = upper(b) WHERE a >= $1 RETURNING a, b",
            &[&8i32],
        )
        .await
        .unwrap();
    let mut updated: Vec<(i32, String)> = changed.iter().map(|r| (r.get(0), r.get(1))).collect();
    updated.sort();
    assert_eq!(updated, [(8, "EIGHT".to_string()), (9, "NINE".to_string())]);

    let deleted = client
        .query("DELETE FROM p WHERE a = $1 RETURNING *", &[&7i32])
        .await
        .unwrap();
    assert_eq!(deleted.len(), 1);
    assert_eq!(
        (deleted[0].get::<_, i32>(0), deleted[0].get::<_, &str>(1)),
        (7, "seven")
    );
    assert_eq!(
        rows(&client, "SELECT a, b FROM p ORDER BY a").await,
        vec![some(&["8", "EIGHT"]), some(&["9", "NINE"])]
    );

    // By hand: Describe of the portal gives the RowDescription, Execute the DataRows and
    // `DELETE 1`.
    let mut conn = RawConnection::start(server.port);
    conn.send(
        &[
            raw::parse("", "DELETE FROM p WHERE a = $1 RETURNING b", &[]),
            raw::bind("", "", &[], &[Some(b"9")], &[]),
            raw::describe(b'P', ""),
            raw::execute("", 0),
            raw::sync(),
        ]
        .concat(),
    );
    let replies = conn.until_ready();
    assert_eq!(
        replies,
        [
            Backend::ParseComplete,
            Backend::BindComplete,
            Backend::RowDescription,
            Backend::DataRow(vec![Some(b"NINE".to_vec())]),
            Backend::CommandComplete("DELETE 1".into()),
            Backend::ReadyForQuery(b'I'),
        ]
    );
    assert_eq!(int(&client, "SELECT count(*) FROM p").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rolled_back_with_the_transaction() {
    let server = TestServer::start("returning-rollback");
    let mut client = server.client().await;
    client
        .batch_execute("CREATE TABLE r (a int, b text); INSERT INTO r VALUES (1, 'kept')")
        .await
        .unwrap();
    let txn = client.transaction().await.unwrap();
    let inserted = txn
        .query("INSERT INTO r VALUES ($1, 'gone') RETURNING a", &[&2i32])
        .await
        .unwrap();
    assert_eq!(inserted[0].get::<_, i32>(0), 2);
    let updated = txn
        .query("UPDATE r SET b = 'changed' WHERE a = 1 RETURNING b", &[])
        .await
        .unwrap();
    assert_eq!(updated[0].get::<_, &str>(0), "changed");
    // The transaction sees its own rows.
    let seen = txn.query("SELECT count(*) FROM r", &[]).await.unwrap();
    assert_eq!(seen[0].get::<_, i64>(0), 2);
    txn.rollback().await.unwrap();
    assert_eq!(
        rows(&client, "SELECT a, b FROM r").await,
        vec![some(&["1", "kept"])]
    );

    // An error in a RETURNING expression fails the statement: nothing is written.
    let err = client
        .simple_query("INSERT INTO r VALUES (3, 'x') RETURNING a / 0")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22012");
    assert_eq!(int(&client, "SELECT count(*) FROM r").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexed_table_finds_the_rows_returned() {
    let server = TestServer::start("returning-index");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE ix (id int, v text); CREATE INDEX ix_id ON ix (id)")
        .await
        .unwrap();
    let inserted = rows(
        &client,
        "INSERT INTO ix SELECT g, 'v' || g FROM generate_series(1, 3000) g RETURNING id",
    )
    .await;
    assert_eq!(inserted.len(), 3000);
    let mut ids: Vec<i64> = inserted
        .iter()
        .map(|r| r[0].as_deref().unwrap().parse().unwrap())
        .collect();
    ids.sort();
    assert_eq!(ids, (1..=3000).collect::<Vec<i64>>());

    let updated = rows(
        &client,
        "UPDATE ix SET v = 'new' WHERE id = 1500 RETURNING ctid, v",
    )
    .await;
    assert_eq!(updated.len(), 1);
    assert_eq!(updated[0][1].as_deref(), Some("new"));
    let deleted = rows(
        &client,
        "DELETE FROM ix WHERE id BETWEEN 10 AND 19 RETURNING id",
    )
    .await;
    assert_eq!(deleted.len(), 10);

    client
        .batch_execute("ANALYZE ix; SET enable_seqscan = off")
        .await
        .unwrap();
    let lookup = "SELECT v, ctid FROM ix WHERE id = 1500";
    let lines = plan(&client, &format!("EXPLAIN {lookup}")).await;
    assert!(
        lines.iter().any(|l| l.contains("ix_id")),
        "the index is used: {lines:#?}"
    );
    assert_eq!(
        rows(&client, lookup).await,
        vec![vec![Some("new".to_string()), updated[0][0].clone()]],
        "the index leads to the new version RETURNING gave"
    );
    assert_eq!(
        int(&client, "SELECT count(*) FROM ix WHERE id BETWEEN 5 AND 24").await,
        10
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_as_postgres_and_the_session_goes_on() {
    let server = TestServer::start("returning-errors");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE e (a int, b text); CREATE TABLE o (a int, z int)")
        .await
        .unwrap();

    for sql in [
        "INSERT INTO e VALUES (1, 'x') RETURNING nope",
        "UPDATE e SET b = 'y' RETURNING a, nope",
        "DELETE FROM e RETURNING nope",
    ] {
        let err = client.simple_query(sql).await.unwrap_err();
        let db = err.as_db_error().unwrap();
        assert_eq!(db.code().code(), "42703", "{sql}");
        assert_eq!(db.message(), "column \"nope\" does not exist", "{sql}");
    }
    // Prepared, the error comes at Parse.
    let err = client
        .prepare("INSERT INTO e VALUES ($1, 'x') RETURNING nope")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "42703");
    assert_eq!(int(&client, "SELECT count(*) FROM e").await, 0);

    let err = client
        .simple_query("INSERT INTO e VALUES (1) RETURNING count(*)")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "42803");
    let err = client
        .simple_query("INSERT INTO e AS x VALUES (1, 'x') RETURNING e.a")
        .await
        .unwrap_err();
    let db = err.as_db_error().unwrap();
    assert_eq!(
        (db.code().code(), db.message()),
        (
            "42P01",
            "invalid reference to FROM-clause entry for table \"e\""
        )
    );

    // What iolab does not do, said so.
    for (sql, words) in [
        ("UPDATE e SET b = 'y' RETURNING old.b, new.b", "OLD and NEW"),
        (
            "INSERT INTO e VALUES (1, 'x') RETURNING (SELECT 1)",
            "subqueries",
        ),
        (
            "UPDATE e SET b = 'y' FROM o WHERE e.a = o.a RETURNING o.z",
            "UPDATE … FROM",
        ),
    ] {
        let err = client.simple_query(sql).await.unwrap_err();
        let db = err.as_db_error().unwrap();
        assert_eq!(db.code().code(), "0A000", "{sql}");
        assert!(db.message().contains(words), "{sql}: {}", db.message());
    }

    // The session keeps working, also inside a transaction block after ROLLBACK.
    client.batch_execute("BEGIN").await.unwrap();
    assert!(client
        .simple_query("DELETE FROM e RETURNING nope")
        .await
        .is_err());
    client.batch_execute("ROLLBACK").await.unwrap();
    let r = rows(&client, "INSERT INTO e VALUES (5, 'ok') RETURNING a, b").await;
    assert_eq!(r, vec![some(&["5", "ok"])]);
    assert_eq!(int(&client, "SELECT count(*) FROM e").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_of_returning() {
    let server = TestServer::start("returning-explain");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE x (a int, b text); INSERT INTO x VALUES (1, 'p'), (2, 'q'), (3, 'r')",
        )
        .await
        .unwrap();
    // With RETURNING PostgreSQL gives the ModifyTable node its source's rows (else 0).
    let lines = plan(&client, "EXPLAIN DELETE FROM x WHERE a = 1 RETURNING *").await;
    assert!(lines[0].starts_with("Delete on x"), "{lines:#?}");
    assert!(!lines[0].contains("rows=0 "), "{lines:#?}");
    let lines = plan(&client, "EXPLAIN DELETE FROM x WHERE a = 1").await;
    assert!(lines[0].contains("rows=0 width=0"), "{lines:#?}");

    let lines = plan(
        &client,
        "EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO x VALUES (4, 's') RETURNING a + 1, b",
    )
    .await;
    assert_eq!(lines[0], "Insert on public.x");
    assert_eq!(lines[1].trim(), "Output: (x.a + 1), x.b");
    assert_eq!(
        int(&client, "SELECT count(*) FROM x").await,
        3,
        "EXPLAIN only plans"
    );

    // ANALYZE runs it: the node's actual rows are the rows changed.
    let lines = plan(
        &client,
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) \
         UPDATE x SET b = 'u' WHERE a >= 2 RETURNING a",
    )
    .await;
    assert!(
        lines[0].starts_with("Update on x (actual rows=2.00 loops=1)"),
        "{lines:#?}"
    );
    assert_eq!(
        int(&client, "SELECT count(*) FROM x WHERE b = 'u'").await,
        2
    );
    let err = client
        .simple_query("EXPLAIN UPDATE x SET b = 'v' RETURNING nope")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "42703");
}
