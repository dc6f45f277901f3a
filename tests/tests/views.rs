//! Views end to end: CREATE [OR REPLACE] VIEW and DROP VIEW with PostgreSQL 18's errors,
//! views queried like tables (joins, aggregates, filters, views over views, prepared
//! statements, EXPLAIN), a view over `pg_stat_io` that reads current numbers, the
//! dependencies that protect a table a view reads (2BP01, CASCADE), transactions
//! (ROLLBACK of CREATE VIEW and DROP VIEW), durability (restart, `kill -9`) and what
//! psql's `\dv` and `\d+` show (lines copied from PostgreSQL 18's psql for the same
//! view).
//!
//! Differences from PostgreSQL 18 that these tests accept: none in what they check (iolab
//! shows a view's definition laid out from the text given, PostgreSQL from its deparsed
//! query; for the plain SELECT used here the two agree).

use iolab_tests::tokio_postgres::Client;
use iolab_tests::{int, rows, sqlstate, TestServer};

/// The error of a statement that must fail: (SQLSTATE, message, detail, hint).
async fn error(client: &Client, sql: &str) -> (String, String, Option<String>, Option<String>) {
    let e = client
        .simple_query(sql)
        .await
        .expect_err(&format!("{sql} must fail"));
    let db = e.as_db_error().unwrap();
    (
        sqlstate(&e),
        db.message().to_string(),
        db.detail().map(str::to_string),
        db.hint().map(str::to_string),
    )
}

/// Column `i` of every row, as text.
async fn column(client: &Client, sql: &str, i: usize) -> Vec<String> {
    rows(client, sql)
        .await
        .into_iter()
        .map(|r| r[i].clone().unwrap_or_default())
        .collect()
}

async fn setup(client: &Client) {
    client
        .batch_execute(
            "CREATE TABLE runs (id int, setting text, ms bigint);
             CREATE TABLE settings (name text, label text);
             INSERT INTO runs VALUES (1, 'sync', 10), (2, 'worker', 20), (3, 'sync', 30),
                                     (4, 'io_uring', 5), (5, 'worker', 40);
             INSERT INTO settings VALUES ('sync', 'S'), ('worker', 'W'), ('io_uring', 'U');",
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_are_queried_like_tables() {
    let server = TestServer::start("views-query");
    let client = server.client().await;
    setup(&client).await;
    client
        .batch_execute(
            "CREATE VIEW per_setting AS
               SELECT s.label, count(*) AS n, sum(r.ms) AS total
               FROM runs r JOIN settings s ON s.name = r.setting
               GROUP BY s.label;
             CREATE VIEW slow (run, setting) AS SELECT id, setting, ms FROM runs WHERE ms > 15;",
        )
        .await
        .unwrap();

    // A join and an aggregate, filtered and ordered from outside.
    assert_eq!(
        rows(
            &client,
            "SELECT label, n, total FROM per_setting WHERE n > 1 ORDER BY label"
        )
        .await,
        vec![
            vec![Some("S".into()), Some("2".into()), Some("40".into())],
            vec![Some("W".into()), Some("2".into()), Some("60".into())],
        ]
    );
    // The column list names the first columns; the rest keep the query's names.
    assert_eq!(
        column(&client, "SELECT run FROM slow ORDER BY ms DESC LIMIT 2", 0).await,
        ["5", "3"]
    );
    // A view over a view, joined to a table.
    client
        .batch_execute("CREATE VIEW slow_labels AS SELECT v.run, s.label FROM slow v JOIN settings s ON s.name = v.setting")
        .await
        .unwrap();
    assert_eq!(
        column(&client, "SELECT label FROM slow_labels ORDER BY run", 0).await,
        ["W", "S", "W"]
    );
    // The view sees rows written after it was created.
    client
        .batch_execute("INSERT INTO runs VALUES (6, 'io_uring', 50)")
        .await
        .unwrap();
    assert_eq!(int(&client, "SELECT count(*) FROM slow_labels").await, 4);

    // A prepared statement (extended protocol) with a parameter, run twice.
    let stmt = client
        .prepare("SELECT run FROM slow WHERE ms > $1 ORDER BY run")
        .await
        .unwrap();
    assert_eq!(stmt.columns()[0].name(), "run");
    let runs = |r: Vec<iolab_tests::tokio_postgres::Row>| -> Vec<i32> {
        r.iter().map(|row| row.get::<_, i32>(0)).collect()
    };
    assert_eq!(
        runs(client.query(&stmt, &[&25i64]).await.unwrap()),
        [3, 5, 6]
    );
    assert_eq!(runs(client.query(&stmt, &[&45i64]).await.unwrap()), [6]);

    // EXPLAIN shows the table's scan under the view, with and without ANALYZE.
    let plan = column(&client, "EXPLAIN SELECT * FROM slow WHERE run = 2", 0).await;
    assert!(
        plan.iter().any(|l| l.contains("Seq Scan on runs")),
        "{plan:?}"
    );
    assert!(!plan.iter().any(|l| l.contains("slow")), "{plan:?}");
    let plan = column(&client, "EXPLAIN ANALYZE SELECT * FROM slow_labels", 0).await;
    assert!(
        plan.iter().any(|l| l.contains("Seq Scan on runs")),
        "{plan:?}"
    );
    assert!(
        plan.iter().any(|l| l.contains("Seq Scan on settings")),
        "{plan:?}"
    );

    // CREATE VIEW and DROP VIEW by the extended protocol.
    client
        .execute("CREATE VIEW ext AS SELECT id FROM runs WHERE id < 3", &[])
        .await
        .unwrap();
    let n: i64 = client
        .query_one("SELECT count(*) FROM ext", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(n, 2);
    client.execute("DROP VIEW ext", &[]).await.unwrap();
    assert!(client.query("SELECT * FROM ext", &[]).await.is_err());

    // Views cannot be written.
    for sql in [
        "INSERT INTO slow VALUES (9, 'sync', 99)",
        "UPDATE slow SET ms = 0",
        "DELETE FROM slow",
    ] {
        let (code, message, _, _) = error(&client, sql).await;
        assert_eq!(code, "0A000", "{sql}");
        assert!(message.contains("view \"slow\""), "{message}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_over_pg_stat_io_reads_current_numbers() {
    let server = TestServer::start("views-statio");
    let client = server.client().await;
    setup(&client).await;
    client
        .batch_execute(
            "CREATE VIEW relation_io AS
               SELECT sum(reads + hits) AS touched FROM pg_stat_io
               WHERE backend_type = 'client backend' AND object = 'relation'",
        )
        .await
        .unwrap();
    let before = int(&client, "SELECT touched FROM relation_io").await;
    for _ in 0..3 {
        rows(&client, "SELECT count(*) FROM runs").await;
    }
    let after = int(&client, "SELECT touched FROM relation_io").await;
    assert!(after > before, "the scans are counted: {before} -> {after}");
    // The same statement once more (the plan cache may keep its plan): newer numbers.
    rows(&client, "SELECT count(*) FROM runs").await;
    let later = int(&client, "SELECT touched FROM relation_io").await;
    assert!(later > after, "{after} -> {later}");
    // A replaced definition is used at once by the same statement text.
    client
        .batch_execute("CREATE VIEW io_rows AS SELECT count(*) AS n FROM pg_stat_io")
        .await
        .unwrap();
    let all = int(&client, "SELECT n FROM io_rows").await;
    assert_eq!(int(&client, "SELECT n FROM io_rows").await, all);
    client
        .batch_execute(
            "CREATE OR REPLACE VIEW io_rows AS SELECT count(*) AS n FROM pg_stat_io
             WHERE object = 'wal'",
        )
        .await
        .unwrap();
    let wal = int(&client, "SELECT n FROM io_rows").await;
    assert!(0 < wal && wal < all, "{wal} of {all} rows");
    // A view over pg_stat_activity sees this session.
    client
        .batch_execute("CREATE VIEW me AS SELECT pid, state FROM pg_stat_activity WHERE pid = pg_backend_pid()")
        .await
        .unwrap();
    assert_eq!(column(&client, "SELECT state FROM me", 0).await, ["active"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_or_replace_follows_postgres_rules() {
    let server = TestServer::start("views-replace");
    let client = server.client().await;
    setup(&client).await;
    client
        .batch_execute("CREATE VIEW v AS SELECT id, setting FROM runs")
        .await
        .unwrap();
    let (code, message, _, _) = error(&client, "CREATE VIEW v AS SELECT 1").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("42P07", "relation \"v\" already exists")
    );
    let (code, message, _, _) = error(&client, "CREATE TABLE v (a int)").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("42P07", "relation \"v\" already exists")
    );

    // A column added at the end is accepted and seen at once.
    client
        .batch_execute("CREATE OR REPLACE VIEW v AS SELECT id, setting, ms FROM runs")
        .await
        .unwrap();
    assert_eq!(int(&client, "SELECT sum(ms) FROM v").await, 105);
    let oid = int(&client, "SELECT 'v'::regclass::oid").await;

    let (code, message, _, hint) = error(
        &client,
        "CREATE OR REPLACE VIEW v AS SELECT id AS ident, setting, ms FROM runs",
    )
    .await;
    assert_eq!(code, "42P16");
    assert_eq!(
        message,
        "cannot change name of view column \"id\" to \"ident\""
    );
    assert_eq!(
        hint.as_deref(),
        Some("Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.")
    );
    let (code, message, _, _) = error(
        &client,
        "CREATE OR REPLACE VIEW v AS SELECT id::bigint AS id, setting, ms FROM runs",
    )
    .await;
    assert_eq!(code, "42P16");
    assert_eq!(
        message,
        "cannot change data type of view column \"id\" from integer to bigint"
    );
    let (code, message, _, _) = error(
        &client,
        "CREATE OR REPLACE VIEW v AS SELECT id, setting FROM runs",
    )
    .await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("42P16", "cannot drop columns from view")
    );
    // The refused replacements changed nothing; the accepted one kept the OID.
    assert_eq!(int(&client, "SELECT sum(ms) FROM v").await, 105);
    assert_eq!(int(&client, "SELECT 'v'::regclass::oid").await, oid);

    let (code, message, _, hint) = error(&client, "DROP VIEW runs").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("42809", "\"runs\" is not a view")
    );
    assert_eq!(hint.as_deref(), Some("Use DROP TABLE to remove a table."));
    let (code, message, _, hint) = error(&client, "DROP TABLE v").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("42809", "\"v\" is not a table")
    );
    assert_eq!(hint.as_deref(), Some("Use DROP VIEW to remove a view."));
    // Statements that need a table, given a view (PostgreSQL 18's errors).
    for (sql, message, hint) in [
        ("TRUNCATE v", "\"v\" is not a table", None),
        (
            "COPY v TO STDOUT",
            "cannot copy from view \"v\"",
            Some("Try the COPY (SELECT ...) TO variant."),
        ),
        (
            "CREATE INDEX ON v (id)",
            "cannot create index on relation \"v\"",
            None,
        ),
        (
            "DROP INDEX v",
            "\"v\" is not an index",
            Some("Use DROP VIEW to remove a view."),
        ),
        (
            "DROP SEQUENCE v",
            "\"v\" is not a sequence",
            Some("Use DROP VIEW to remove a view."),
        ),
    ] {
        let (code, got, _, got_hint) = error(&client, sql).await;
        assert_eq!((code.as_str(), got.as_str()), ("42809", message), "{sql}");
        if hint.is_some() {
            assert_eq!(got_hint.as_deref(), hint, "{sql}");
        }
    }
    // VACUUM and ANALYZE skip a view with a warning.
    iolab_tests::run_script(&client, "VACUUM v; ANALYZE v, runs")
        .await
        .unwrap();
    let (code, message, _, _) = error(&client, "DROP VIEW nope").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("42P01", "view \"nope\" does not exist")
    );
    client
        .batch_execute("DROP VIEW IF EXISTS nope, v")
        .await
        .unwrap();
    let (code, _, _, _) = error(&client, "SELECT * FROM v").await;
    assert_eq!(code, "42P01");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_protect_what_they_read() {
    let server = TestServer::start("views-depend");
    let client = server.client().await;
    setup(&client).await;
    client
        .batch_execute(
            "CREATE VIEW v AS SELECT id, setting FROM runs;
             CREATE VIEW w AS SELECT * FROM v;
             CREATE VIEW other AS SELECT name FROM settings;",
        )
        .await
        .unwrap();
    let (code, message, detail, hint) = error(&client, "DROP TABLE runs").await;
    assert_eq!(code, "2BP01");
    assert_eq!(
        message,
        "cannot drop table runs because other objects depend on it"
    );
    assert_eq!(
        detail.as_deref(),
        Some("view v depends on table runs\nview w depends on view v")
    );
    assert_eq!(
        hint.as_deref(),
        Some("Use DROP ... CASCADE to drop the dependent objects too.")
    );
    let (code, message, detail, _) = error(&client, "DROP VIEW v").await;
    assert_eq!(code, "2BP01");
    assert_eq!(
        message,
        "cannot drop view v because other objects depend on it"
    );
    assert_eq!(detail.as_deref(), Some("view w depends on view v"));
    assert_eq!(int(&client, "SELECT count(*) FROM w").await, 5);

    // CASCADE drops the views that read the table, and only those.
    let notices = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (c2, connection) = iolab_tests::tokio_postgres::connect(
        &server.conn_str(),
        iolab_tests::tokio_postgres::NoTls,
    )
    .await
    .unwrap();
    let seen = notices.clone();
    tokio::spawn(async move {
        let mut connection = connection;
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        use futures::StreamExt;
        while let Some(Ok(m)) = messages.next().await {
            if let iolab_tests::tokio_postgres::AsyncMessage::Notice(n) = m {
                seen.lock()
                    .unwrap()
                    .push((n.message().to_string(), n.detail().map(str::to_string)));
            }
        }
    });
    c2.batch_execute("DROP TABLE runs CASCADE").await.unwrap();
    assert_eq!(
        notices.lock().unwrap().clone(),
        vec![(
            "drop cascades to 2 other objects".to_string(),
            Some("drop cascades to view v\ndrop cascades to view w".to_string())
        )]
    );
    assert_eq!(
        column(
            &client,
            "SELECT viewname FROM pg_views WHERE schemaname = 'public'",
            0
        )
        .await,
        ["other"]
    );
    c2.batch_execute("DROP TABLE settings CASCADE")
        .await
        .unwrap();
    assert_eq!(
        notices.lock().unwrap().last().cloned(),
        Some(("drop cascades to view other".to_string(), None))
    );
    assert!(rows(
        &client,
        "SELECT * FROM pg_class WHERE relkind = 'v' AND relnamespace = 2200"
    )
    .await
    .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollback_undoes_view_ddl() {
    let server = TestServer::start("views-txn");
    let client = server.client().await;
    setup(&client).await;
    iolab_tests::run_script(
        &client,
        "CREATE VIEW keep AS SELECT id FROM runs;
             BEGIN; CREATE VIEW gone AS SELECT 1 AS a; ROLLBACK;
             BEGIN; DROP VIEW keep; ROLLBACK;
             BEGIN; CREATE OR REPLACE VIEW keep AS SELECT id, ms FROM runs; ROLLBACK;",
    )
    .await
    .unwrap();
    let (code, _, _, _) = error(&client, "SELECT * FROM gone").await;
    assert_eq!(code, "42P01");
    assert_eq!(int(&client, "SELECT count(*) FROM keep").await, 5);
    assert_eq!(
        column(
            &client,
            "SELECT attname FROM pg_attribute WHERE attrelid = 'keep'::regclass",
            0
        )
        .await,
        ["id"],
        "the replaced definition is back"
    );
    // DROP TABLE … CASCADE rolled back brings table and view back.
    client
        .batch_execute("BEGIN; DROP TABLE runs CASCADE; ROLLBACK;")
        .await
        .unwrap();
    assert_eq!(int(&client, "SELECT count(*) FROM keep").await, 5);
    // A committed CREATE VIEW in a block stays.
    client
        .batch_execute("BEGIN; CREATE VIEW later AS SELECT ms FROM runs; COMMIT;")
        .await
        .unwrap();
    assert_eq!(int(&client, "SELECT max(ms) FROM later").await, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_survive_restart_and_crash() {
    let mut server = TestServer::start("views-durable");
    {
        let client = server.client().await;
        setup(&client).await;
        client
            .batch_execute(
                "CREATE VIEW v AS SELECT setting, count(*) AS n FROM runs GROUP BY setting;
                 CREATE VIEW w AS SELECT n FROM v WHERE setting = 'worker';",
            )
            .await
            .unwrap();
    }
    server.restart();
    {
        let client = server.client().await;
        assert_eq!(int(&client, "SELECT n FROM w").await, 2);
        iolab_tests::run_script(
            &client,
            "CREATE VIEW x AS SELECT max(ms) AS m FROM runs;
                 DROP VIEW w;
                 BEGIN; CREATE VIEW never AS SELECT 1 AS a;",
        )
        .await
        .unwrap();
        // kill -9 with a transaction open: its view must not come back.
        server.kill();
    }
    server.restart();
    let client = server.client().await;
    assert_eq!(int(&client, "SELECT m FROM x").await, 40);
    assert_eq!(
        int(&client, "SELECT n FROM v WHERE setting = 'sync'").await,
        2
    );
    assert_eq!(
        column(
            &client,
            "SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1",
            0
        )
        .await,
        ["v", "x"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn psql_describes_views_as_postgres_does() {
    let server = TestServer::start("views-psql");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE vt_t (id int, name text, amount bigint);
             CREATE VIEW vt_v (ident, nm) AS SELECT id, name, amount FROM vt_t WHERE amount > 10;",
        )
        .await
        .unwrap();
    // PostgreSQL 18's psql for the same table and view.
    let dv = server.psql_ok(&["-c", "\\dv"]);
    assert_eq!(
        dv.lines().collect::<Vec<_>>(),
        [
            "        List of relations",
            " Schema | Name | Type |  Owner   ",
            "--------+------+------+----------",
            " public | vt_v | view | postgres",
            "(1 row)",
            "",
        ]
    );
    let d = server.psql_ok(&["-c", "\\d vt_v"]);
    assert_eq!(
        d.lines().collect::<Vec<_>>(),
        [
            "                View \"public.vt_v\"",
            " Column |  Type   | Collation | Nullable | Default ",
            "--------+---------+-----------+----------+---------",
            " ident  | integer |           |          | ",
            " nm     | text    |           |          | ",
            " amount | bigint  |           |          | ",
            "",
        ]
    );
    let d = server.psql_ok(&["-c", "\\d+ vt_v"]);
    assert_eq!(
        d.lines().collect::<Vec<_>>(),
        [
            "                             View \"public.vt_v\"",
            " Column |  Type   | Collation | Nullable | Default | Storage  | Description ",
            "--------+---------+-----------+----------+---------+----------+-------------",
            " ident  | integer |           |          |         | plain    | ",
            " nm     | text    |           |          |         | extended | ",
            " amount | bigint  |           |          |         | plain    | ",
            "View definition:",
            " SELECT id AS ident,",
            "    name AS nm,",
            "    amount",
            "   FROM vt_t",
            "  WHERE amount > 10;",
            "",
        ]
    );
    assert_eq!(
        column(&client, "SELECT pg_get_viewdef('vt_v'::regclass, true)", 0).await,
        [" SELECT id AS ident,\n    name AS nm,\n    amount\n   FROM vt_t\n  WHERE amount > 10;"]
    );
    assert_eq!(
        rows(&client, "SELECT table_name, check_option FROM information_schema.views WHERE table_schema = 'public'").await,
        vec![vec![Some("vt_v".into()), Some("NONE".into())]]
    );
    assert_eq!(
        column(
            &client,
            "SELECT relkind FROM pg_class WHERE relname = 'vt_v'",
            0
        )
        .await,
        ["v"]
    );
    // A table's column passed through keeps its declared type; a computed one has the
    // type of its values (PostgreSQL 18 shows the same for this view).
    client
        .batch_execute(
            "CREATE TABLE vt_c (id int, name varchar(20), price numeric(10,2));
             CREATE VIEW vt_cv AS SELECT id, name, upper(name) AS up, price FROM vt_c;",
        )
        .await
        .unwrap();
    assert_eq!(
        column(
            &client,
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute
             WHERE attrelid = 'vt_cv'::regclass ORDER BY attnum",
            0
        )
        .await,
        ["integer", "character varying(20)", "text", "numeric(10,2)"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_views_and_cycles() {
    let server = TestServer::start("views-nesting");
    let client = server.client().await;
    // Ten views, each over the one before.
    let mut sql = String::from("CREATE VIEW n0 AS SELECT 1 AS depth;");
    for i in 1..10 {
        sql.push_str(&format!(
            "CREATE VIEW n{i} AS SELECT depth + 1 AS depth FROM n{};",
            i - 1
        ));
    }
    client.batch_execute(&sql).await.unwrap();
    assert_eq!(int(&client, "SELECT depth FROM n9").await, 10);
    // CREATE OR REPLACE may close a cycle, as in PostgreSQL; using it fails with 42P17.
    client
        .batch_execute("CREATE OR REPLACE VIEW n0 AS SELECT depth FROM n9")
        .await
        .unwrap();
    let (code, message, _, _) = error(&client, "SELECT * FROM n5").await;
    assert_eq!(code, "42P17");
    assert!(
        message.starts_with("infinite recursion detected in rules for relation"),
        "{message}"
    );
    // Dropping one view of the cycle with CASCADE drops them all, each once.
    client.batch_execute("DROP VIEW n3 CASCADE").await.unwrap();
    assert_eq!(
        int(
            &client,
            "SELECT count(*) FROM pg_views WHERE schemaname = 'public'"
        )
        .await,
        0
    );
}
