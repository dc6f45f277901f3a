//! SQL's PREPARE, EXECUTE (also under EXPLAIN), DEALLOCATE and `pg_prepared_statements`,
//! and DISCARD, end to end: parameter types declared or inferred, values read as Bind
//! reads text parameters (PostgreSQL 18's errors), what DISCARD ALL forgets; and the bound
//! on the protocol's named statements.

use iolab_tests::{error, rows, sqlstate, TestServer};
use tokio_postgres::Client;

async fn exec(client: &Client, sql: &str) {
    client
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

/// The rows of `sql` with NULL as "NULL".
async fn texts(client: &Client, sql: &str) -> Vec<Vec<String>> {
    (rows(client, sql).await.into_iter())
        .map(|r| r.into_iter().map(|v| v.unwrap_or("NULL".into())).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepare_execute_and_deallocate() {
    let server = TestServer::start("prepare-execute");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE pt (id int PRIMARY KEY, v text, d date);
         INSERT INTO pt SELECT i, 'v' || i, DATE '2024-01-01' + i FROM generate_series(1, 1000) AS g(i);",
    )
    .await;
    exec(
        &c,
        "PREPARE q(int) AS SELECT id, v FROM pt WHERE id < $1 ORDER BY id",
    )
    .await;
    assert_eq!(texts(&c, "EXECUTE q(3)").await, [["1", "v1"], ["2", "v2"]]);
    // A quoted value is read as the parameter's type, as Bind reads text.
    assert_eq!(texts(&c, "EXECUTE q('2')").await, [["1", "v1"]]);
    // Types inferred from the statement; a value that is not a literal is computed.
    exec(&c, "PREPARE after AS SELECT count(*) FROM pt WHERE d > $1").await;
    let want = texts(&c, "SELECT count(*) FROM pt WHERE d > DATE '2025-04-11'").await;
    assert_eq!(texts(&c, "EXECUTE after('2025-04-11')").await, want);
    assert_eq!(
        texts(&c, "EXECUTE after(DATE '2025-01-01' + 100)").await,
        want
    );
    // Writes, with RETURNING.
    exec(
        &c,
        "PREPARE ins (int, text) AS INSERT INTO pt (id, v) VALUES ($1, $2) RETURNING id",
    )
    .await;
    assert_eq!(texts(&c, "EXECUTE ins(2000, 'new')").await, [["2000"]]);
    exec(&c, "PREPARE up AS UPDATE pt SET v = $2 WHERE id = $1").await;
    let updated = c.execute("EXECUTE up(2000, 'changed')", &[]).await.unwrap();
    assert_eq!(updated, 1);
    assert_eq!(
        texts(&c, "SELECT v FROM pt WHERE id = 2000").await,
        [["changed"]]
    );
    // EXPLAIN of an EXECUTE plans the prepared statement with the value.
    let plan = texts(&c, "EXPLAIN (COSTS OFF) EXECUTE q(10)")
        .await
        .concat()
        .join("\n");
    assert!(plan.contains("(id < 10)"), "{plan}");
    // What pg_prepared_statements shows.
    let listed = texts(
        &c,
        "SELECT name, parameter_types, result_types, from_sql, custom_plans
           FROM pg_prepared_statements ORDER BY name",
    )
    .await;
    let want = [
        ["after", "{date}", "{bigint}", "t", "2"],
        ["ins", "{integer,text}", "{integer}", "t", "1"],
        ["q", "{integer}", "{integer,text}", "t", "3"],
        ["up", "{integer,text}", "NULL", "t", "1"],
    ];
    assert_eq!(listed, want.map(|r| r.map(String::from)));
    let statement = texts(
        &c,
        "SELECT statement FROM pg_prepared_statements WHERE name = 'q'",
    )
    .await;
    assert!(
        statement[0][0].starts_with("PREPARE q(int) AS SELECT"),
        "{statement:?}"
    );

    // PostgreSQL 18's errors.
    let cases = [
        (
            "EXECUTE q(1, 2)",
            "42601",
            "wrong number of parameters for prepared statement \"q\"",
        ),
        (
            "EXECUTE q('abc')",
            "22P02",
            "invalid input syntax for type integer: \"abc\"",
        ),
        (
            "EXECUTE nope(1)",
            "26000",
            "prepared statement \"nope\" does not exist",
        ),
        (
            "PREPARE q AS SELECT 1",
            "42P05",
            "prepared statement \"q\" already exists",
        ),
        (
            "PREPARE v AS VACUUM pt",
            "42601",
            "syntax error at or near \"VACUUM\"",
        ),
        (
            "DEALLOCATE nope",
            "26000",
            "prepared statement \"nope\" does not exist",
        ),
    ];
    for (sql, code, message) in cases {
        assert_eq!(error(&c, sql).await, (code.into(), message.into()), "{sql}");
    }
    // An error in EXECUTE fails the block like any other.
    exec(&c, "BEGIN").await;
    assert_eq!(error(&c, "EXECUTE nope").await.0, "26000");
    assert_eq!(error(&c, "EXECUTE q(1)").await.0, "25P02");
    exec(&c, "ROLLBACK").await;

    exec(&c, "DEALLOCATE q; DEALLOCATE PREPARE ins").await;
    assert_eq!(error(&c, "EXECUTE q(1)").await.0, "26000");
    assert_eq!(
        texts(&c, "SELECT count(*) FROM pg_prepared_statements").await,
        [["2"]]
    );
    exec(&c, "DEALLOCATE ALL").await;
    assert_eq!(
        texts(&c, "SELECT count(*) FROM pg_prepared_statements").await,
        [["0"]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discard_all_forgets_the_session_state() {
    let server = TestServer::start("discard-all");
    let c = server.client().await;
    exec(
        &c,
        "CREATE SEQUENCE s;
         SET work_mem = '64MB';
         PREPARE one AS SELECT 1;
         DECLARE held CURSOR WITH HOLD FOR SELECT 1;
         SELECT nextval('s');",
    )
    .await;
    assert_eq!(texts(&c, "SELECT currval('s')").await, [["1"]]);
    // Not inside a transaction block.
    exec(&c, "BEGIN").await;
    assert_eq!(
        error(&c, "DISCARD ALL").await,
        (
            "25001".into(),
            "DISCARD ALL cannot run inside a transaction block".into()
        )
    );
    exec(&c, "ROLLBACK").await;
    exec(&c, "DISCARD ALL").await;
    assert_eq!(texts(&c, "SHOW work_mem").await, [["4MB"]]);
    assert_eq!(
        texts(&c, "SELECT count(*) FROM pg_prepared_statements").await,
        [["0"]]
    );
    assert_eq!(texts(&c, "SELECT count(*) FROM pg_cursors").await, [["0"]]);
    assert_eq!(error(&c, "SELECT currval('s')").await.0, "55000");
    // The lesser forms, each with its tag.
    for what in ["PLANS", "SEQUENCES", "TEMP"] {
        let sql = format!("DISCARD {what}");
        exec(&c, &sql).await;
    }
    exec(&c, "SELECT nextval('s'); DISCARD SEQUENCES").await;
    assert_eq!(error(&c, "SELECT lastval()").await.0, "55000");
}

/// A connection keeps at most 1 000 named statements of the protocol's Parse (as of SQL's
/// PREPARE, whose count is its own); a Close frees a place.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_statements_are_bounded() {
    let server = TestServer::start("protocol-statements");
    let c = server.client().await;
    let mut kept = Vec::new();
    for i in 0..1000 {
        kept.push(c.prepare(&format!("SELECT 'v{i}'")).await.unwrap());
    }
    let err = c.prepare("SELECT 'v1000'").await.unwrap_err();
    assert_eq!(sqlstate(&err), "54000", "{err:?}");
    exec(&c, "PREPARE q AS SELECT 1").await;
    // tokio-postgres sends the dropped statement's Close ahead of its next request.
    drop(kept.pop());
    let again = c.prepare("SELECT 'v1000'").await.unwrap();
    let row = c.query_one(&again, &[]).await.unwrap();
    assert_eq!(row.get::<_, String>(0), "v1000");
    let first = c.query_one(&kept[0], &[]).await.unwrap();
    assert_eq!(first.get::<_, String>(0), "v0");
}
