//! ALTER TABLE / INDEX / SEQUENCE / VIEW end to end: renames, ADD / DROP COLUMN without a
//! rewrite (old rows read the added column's default, dropped columns' data is skipped),
//! column defaults and NOT NULL, storage parameters, several subcommands as one unit, and
//! each of them undone by ROLLBACK and by crash recovery. Expected messages, SQLSTATEs and
//! psql output were taken from PostgreSQL 18 running the same statements.

use iolab_tests::tokio_postgres::Client;
use iolab_tests::{rows, sqlstate, TestServer};

/// The error SQLSTATE and message of a statement that must fail.
async fn fails(client: &Client, sql: &str) -> (String, String) {
    let e = client
        .batch_execute(sql)
        .await
        .expect_err(&format!("{sql} should fail"));
    let message = e.as_db_error().map(|d| d.message().to_string());
    (sqlstate(&e), message.unwrap_or_default())
}

fn texts(rows: Vec<Vec<Option<String>>>) -> Vec<Vec<String>> {
    rows.into_iter()
        .map(|r| {
            r.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .collect()
        })
        .collect()
}

async fn table(client: &Client, sql: &str) -> Vec<Vec<String>> {
    texts(rows(client, sql).await)
}

fn row(values: &[&str]) -> Vec<String> {
    values.iter().map(|s| s.to_string()).collect()
}

/// psql's stderr and stdout for one command (ON_ERROR_STOP is off so that errors show).
fn psql(server: &TestServer, sql: &str) -> (String, String) {
    let out = server.psql(&["-v", "ON_ERROR_STOP=0", "-c", sql]);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The table every test starts from: three rows, an index on each of b and c.
const SETUP: &str = "CREATE TABLE t (a int NOT NULL, b text, c int);
    INSERT INTO t VALUES (1, 'one', 10), (2, 'two', 20), (3, NULL, 30);
    CREATE INDEX t_b ON t (b);
    CREATE INDEX t_c ON t (c);";

/// What PostgreSQL 18 does to `t` with these statements (see the tests).
const RESHAPE: &str = "ALTER TABLE t DROP COLUMN b;
    ALTER TABLE t ADD COLUMN d int DEFAULT 7, ADD COLUMN e text DEFAULT 'x' NOT NULL;
    ALTER TABLE t ALTER COLUMN c SET NOT NULL;
    ALTER TABLE t ALTER COLUMN d SET DEFAULT 8, ALTER COLUMN e DROP DEFAULT;
    ALTER TABLE t RENAME COLUMN c TO cc;
    ALTER TABLE t SET (fillfactor = 70);";

/// psql 15's `\d t` of PostgreSQL 18 after SETUP and RESHAPE. (Column e's default is
/// dropped: iolab shows a default as written, `'x'`, where PostgreSQL shows `'x'::text`.)
const DESCRIBE_PG18: &str = r#"                 Table "public.t"
 Column |  Type   | Collation | Nullable | Default 
--------+---------+-----------+----------+---------
 a      | integer |           | not null | 
 cc     | integer |           | not null | 
 d      | integer |           |          | 8
 e      | text    |           | not null | 
Indexes:
    "t_c" btree (cc)

"#;

/// psql 15's `\d+ t` of PostgreSQL 18 after SETUP and RESHAPE.
const DESCRIBE_PLUS_PG18: &str = r#"                                            Table "public.t"
 Column |  Type   | Collation | Nullable | Default | Storage  | Compression | Stats target | Description 
--------+---------+-----------+----------+---------+----------+-------------+--------------+-------------
 a      | integer |           | not null |         | plain    |             |              | 
 cc     | integer |           | not null |         | plain    |             |              | 
 d      | integer |           |          | 8       | plain    |             |              | 
 e      | text    |           | not null |         | extended |             |              | 
Indexes:
    "t_c" btree (cc)
Access method: heap
Options: fillfactor=70

"#;

/// The reshaped table's rows, read every way: SELECT *, by name, through the index on cc,
/// COPY, and after an INSERT without a column list and an UPDATE of an old row. The old
/// rows read e's value from ADD COLUMN though the default is gone since.
async fn check_reshaped(server: &TestServer, client: &Client) {
    assert_eq!(
        table(client, "SELECT * FROM t ORDER BY a").await,
        [
            row(&["1", "10", "7", "x"]),
            row(&["2", "20", "7", "x"]),
            row(&["3", "30", "7", "x"]),
            row(&["4", "40", "8", "new"]),
            row(&["5", "50", "8", "x"]),
        ]
    );
    assert_eq!(
        table(client, "SELECT e, d, a FROM t WHERE cc = 20").await,
        [row(&["x", "7", "2"])]
    );
    assert_eq!(
        table(client, "SELECT count(*) FROM t WHERE d = 7 AND e = 'x'").await,
        [row(&["3"])]
    );
    let copied = server.psql_ok(&["-c", "COPY t TO STDOUT"]);
    // In the heap's order, as PostgreSQL 18 copies it: the UPDATE moved row 2 to the end.
    assert_eq!(
        copied,
        "1\t10\t7\tx\n3\t30\t7\tx\n4\t40\t8\tnew\n5\t50\t8\tx\n2\t20\t7\tx\n"
    );
    assert_eq!(server.psql_ok(&["-c", "\\d t"]), DESCRIBE_PG18);
    assert_eq!(server.psql_ok(&["-c", "\\d+ t"]), DESCRIBE_PLUS_PG18);
    assert_eq!(
        table(
            client,
            "SELECT attname, atttypid::int, attnum, attnotnull, attisdropped FROM pg_attribute
             WHERE attrelid = 't'::regclass AND attnum > 0 ORDER BY attnum"
        )
        .await,
        [
            row(&["a", "23", "1", "t", "f"]),
            row(&["........pg.dropped.2........", "0", "2", "f", "t"]),
            row(&["cc", "23", "3", "t", "f"]),
            row(&["d", "23", "4", "f", "f"]),
            row(&["e", "25", "5", "t", "f"]),
        ]
    );
    assert_eq!(
        table(
            client,
            "SELECT column_name, ordinal_position FROM information_schema.columns
             WHERE table_name = 't' ORDER BY ordinal_position"
        )
        .await,
        [
            row(&["a", "1"]),
            row(&["cc", "3"]),
            row(&["d", "4"]),
            row(&["e", "5"]),
        ]
    );
    assert_eq!(
        table(
            client,
            "SELECT relnatts, reloptions::text FROM pg_class WHERE relname = 't'"
        )
        .await,
        [row(&["5", "{fillfactor=70}"])]
    );
    assert_eq!(
        table(
            client,
            "SELECT indkey::text FROM pg_index WHERE indexrelid = 't_c'::regclass"
        )
        .await,
        [row(&["3"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn add_and_drop_columns_without_a_rewrite() {
    let mut server = TestServer::start("alter-reshape");
    {
        let client = server.client().await;
        client.batch_execute(SETUP).await.unwrap();
        client.batch_execute(RESHAPE).await.unwrap();
        // A new row stores every attribute (NULL for the dropped one), an old row that is
        // updated gets the missing values written out.
        client
            .batch_execute(
                "INSERT INTO t VALUES (4, 40, DEFAULT, 'new');
                 INSERT INTO t (a, cc, e) VALUES (5, 50, 'x');",
            )
            .await
            .unwrap();
        client
            .batch_execute("UPDATE t SET cc = cc WHERE a = 2")
            .await
            .unwrap();
        // The index on the dropped column went with it.
        assert_eq!(
            table(
                &client,
                "SELECT count(*) FROM pg_class WHERE relname = 't_b'"
            )
            .await,
            [row(&["0"])]
        );
        // An index built now reads old and new tuples alike.
        client
            .batch_execute("CREATE INDEX t_d ON t (d); SET enable_seqscan = off")
            .await
            .unwrap();
        assert_eq!(
            table(&client, "SELECT a FROM t WHERE d = 7 ORDER BY a").await,
            [row(&["1"]), row(&["2"]), row(&["3"])]
        );
        client.batch_execute("DROP INDEX t_d").await.unwrap();
        // ANALYZE samples old tuples with their missing values.
        client.batch_execute("ANALYZE t").await.unwrap();
        assert_eq!(
            table(
                &client,
                "SELECT attname, n_distinct::text, null_frac = 0 FROM pg_stats
                 WHERE tablename = 't' AND attname IN ('d', 'e') ORDER BY 1"
            )
            .await,
            [row(&["d", "-0.4", "t"]), row(&["e", "-0.4", "t"])]
        );
        check_reshaped(&server, &client).await;
    }
    server.restart();
    let client = server.client().await;
    check_reshaped(&server, &client).await;
    // The dropped column's name is free again; a new column comes after the others.
    client
        .batch_execute("ALTER TABLE t ADD COLUMN b int")
        .await
        .unwrap();
    assert_eq!(
        table(&client, "SELECT * FROM t WHERE a = 1").await,
        [row(&["1", "10", "7", "x", "NULL"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renames_follow_postgres() {
    let server = TestServer::start("alter-rename");
    let client = server.client().await;
    client
        .batch_execute(&format!(
            "{SETUP} CREATE SEQUENCE s; CREATE VIEW v AS SELECT a FROM t; CREATE TABLE u (x int);"
        ))
        .await
        .unwrap();
    for (sql, tag) in [
        ("ALTER INDEX t_b RENAME TO t_b2", "ALTER INDEX"),
        ("ALTER TABLE t_c RENAME TO t_c2", "ALTER TABLE"),
        ("ALTER SEQUENCE s RENAME TO s2", "ALTER SEQUENCE"),
        ("ALTER VIEW v RENAME TO v2", "ALTER VIEW"),
        ("ALTER TABLE u RENAME TO u2", "ALTER TABLE"),
        ("ALTER INDEX u2 RENAME TO u3", "ALTER INDEX"),
        ("ALTER TABLE u3 RENAME x TO y", "ALTER TABLE"),
        ("ALTER TABLE u3 RENAME COLUMN y TO z", "ALTER TABLE"),
        ("ALTER TABLE IF EXISTS nope RENAME TO n", "ALTER TABLE"),
    ] {
        let (out, err) = psql(&server, sql);
        assert_eq!(out.trim(), tag, "{sql}: {err}");
    }
    let (_, notice) = psql(&server, "ALTER INDEX IF EXISTS nope RENAME TO n");
    assert_eq!(
        notice.trim(),
        "NOTICE:  relation \"nope\" does not exist, skipping"
    );
    assert_eq!(
        table(
            &client,
            "SELECT relname, relkind::text FROM pg_class WHERE relnamespace = 'public'::regnamespace ORDER BY 1"
        )
        .await,
        [
            row(&["s2", "S"]),
            row(&["t", "r"]),
            row(&["t_b2", "i"]),
            row(&["t_c2", "i"]),
            row(&["u3", "r"]),
            row(&["v2", "v"]),
        ]
    );
    assert_eq!(
        table(&client, "SELECT z FROM u3").await,
        Vec::<Vec<String>>::new()
    );
    assert_eq!(table(&client, "SELECT nextval('s2')").await, [row(&["1"])]);
    for (sql, code, message) in [
        (
            "ALTER TABLE nope RENAME TO n",
            "42P01",
            "relation \"nope\" does not exist",
        ),
        (
            "ALTER TABLE t RENAME TO u3",
            "42P07",
            "relation \"u3\" already exists",
        ),
        (
            "ALTER TABLE t RENAME TO t",
            "42P07",
            "relation \"t\" already exists",
        ),
        (
            "ALTER INDEX t_b2 RENAME TO s2",
            "42P07",
            "relation \"s2\" already exists",
        ),
        ("ALTER VIEW t RENAME TO w", "42809", "\"t\" is not a view"),
        (
            "ALTER SEQUENCE t RENAME TO w",
            "42809",
            "\"t\" is not a sequence",
        ),
        (
            "ALTER TABLE t RENAME COLUMN a TO b",
            "42701",
            "column \"b\" of relation \"t\" already exists",
        ),
        (
            "ALTER TABLE t RENAME COLUMN a TO a",
            "42701",
            "column \"a\" of relation \"t\" already exists",
        ),
        (
            "ALTER TABLE t RENAME COLUMN zz TO q",
            "42703",
            "column \"zz\" does not exist",
        ),
        (
            "ALTER TABLE t RENAME TO \"\"",
            "42601",
            "zero-length delimited identifier at or near \"\"\"\"",
        ),
        // iolab keeps views as text: what a view reads keeps its name.
        (
            "ALTER TABLE t RENAME TO t2",
            "0A000",
            "cannot rename table \"t\": view \"v2\" reads it",
        ),
        (
            "ALTER TABLE t RENAME COLUMN a TO a2",
            "0A000",
            "cannot rename column \"a\" of table \"t\": view \"v2\" reads it",
        ),
    ] {
        assert_eq!(
            fails(&client, sql).await,
            (code.to_string(), message.to_string()),
            "{sql}"
        );
    }
    // The extended protocol runs ALTER too.
    assert_eq!(
        client
            .execute("ALTER TABLE u3 RENAME COLUMN z TO zz", &[])
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        table(
            &client,
            "SELECT attname FROM pg_attribute WHERE attrelid = 'u3'::regclass AND attnum > 0"
        )
        .await,
        [row(&["zz"])]
    );
    // A column no view reads may be renamed.
    client
        .batch_execute("ALTER TABLE t RENAME b TO bb")
        .await
        .unwrap();
    assert_eq!(
        table(&client, "SELECT bb FROM t WHERE a = 1").await,
        [row(&["one"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_alter_rolls_back() {
    let server = TestServer::start("alter-rollback");
    let client = server.client().await;
    client
        .batch_execute(&format!(
            "{SETUP} CREATE SEQUENCE s; CREATE VIEW v AS SELECT c FROM t;
             ALTER TABLE t ALTER COLUMN b SET DEFAULT 'dflt';"
        ))
        .await
        .unwrap();
    let before_columns = table(
        &client,
        "SELECT attname, attnum, attnotnull FROM pg_attribute
         WHERE attrelid = 't'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
    )
    .await;
    let before_describe = server.psql_ok(&["-c", "\\d t"]);
    client
        .batch_execute(
            "BEGIN;
             ALTER INDEX t_c RENAME TO t_c2;
             ALTER SEQUENCE s RENAME TO s2;
             ALTER TABLE t ADD COLUMN d int DEFAULT 5, DROP COLUMN b, ALTER COLUMN a DROP NOT NULL;
             ALTER TABLE t DROP COLUMN c CASCADE;
             ALTER TABLE t RENAME TO t2;
             ALTER TABLE t2 SET (fillfactor = 50);
             INSERT INTO t2 VALUES (9, 9);",
        )
        .await
        .unwrap();
    assert_eq!(
        table(&client, "SELECT * FROM t2 ORDER BY a").await,
        [
            row(&["1", "5"]),
            row(&["2", "5"]),
            row(&["3", "5"]),
            row(&["9", "9"]),
        ]
    );
    client.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        table(&client, "SELECT * FROM t ORDER BY a").await,
        [
            row(&["1", "one", "10"]),
            row(&["2", "two", "20"]),
            row(&["3", "NULL", "30"]),
        ]
    );
    assert_eq!(
        table(
            &client,
            "SELECT attname, attnum, attnotnull FROM pg_attribute
             WHERE attrelid = 't'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum"
        )
        .await,
        before_columns
    );
    // The rolled-back ADD COLUMN's attribute stays, as a dropped column's (rows other
    // sessions committed meanwhile may store it): where PostgreSQL leaves no trace.
    assert_eq!(
        table(
            &client,
            "SELECT attname, attnum FROM pg_attribute WHERE attrelid = 't'::regclass AND attisdropped"
        )
        .await,
        [row(&["........pg.dropped.4........", "4"])]
    );
    assert_eq!(server.psql_ok(&["-c", "\\d t"]), before_describe);
    assert_eq!(table(&client, "SELECT c FROM v ORDER BY c").await.len(), 3);
    assert_eq!(table(&client, "SELECT nextval('s')").await, [row(&["1"])]);
    // The indexes are back and in use; the default too.
    client
        .batch_execute("SET enable_seqscan = off; INSERT INTO t (a) VALUES (4)")
        .await
        .unwrap();
    assert_eq!(
        table(&client, "SELECT a FROM t WHERE b = 'two'").await,
        [row(&["2"])]
    );
    assert_eq!(
        table(&client, "SELECT b FROM t WHERE a = 4").await,
        [row(&["dflt"])]
    );
    // Outside a block, a statement whose second subcommand fails leaves nothing of the first.
    assert_eq!(
        fails(&client, "ALTER TABLE t ADD COLUMN x int, ADD COLUMN x int").await,
        (
            "42701".into(),
            "column \"x\" of relation \"t\" already exists".into()
        )
    );
    assert_eq!(
        fails(&client, "ALTER TABLE t ADD COLUMN y int, DROP COLUMN nope")
            .await
            .0,
        "42703"
    );
    assert_eq!(
        table(
            &client,
            "SELECT count(*) FROM information_schema.columns WHERE table_name = 't'"
        )
        .await,
        [row(&["3"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_undoes_alters_in_flight_and_keeps_committed_ones() {
    let mut server = TestServer::start("alter-crash");
    {
        let client = server.client().await;
        client.batch_execute(SETUP).await.unwrap();
        client
            .batch_execute("ALTER TABLE t ADD COLUMN d int DEFAULT 4, DROP COLUMN c")
            .await
            .unwrap();
        client
            .batch_execute(
                "BEGIN;
                 ALTER INDEX t_b RENAME TO t_b_gone;
                 ALTER INDEX t_b_gone SET (fillfactor = 40);
                 ALTER TABLE t ADD COLUMN e text DEFAULT 'e', DROP COLUMN b;
                 ALTER TABLE t RENAME COLUMN d TO dd;
                 ALTER TABLE t RENAME TO gone;
                 ALTER TABLE gone SET (fillfactor = 30);
                 INSERT INTO gone VALUES (7, 7, 'seven');",
            )
            .await
            .unwrap();
        server.kill();
    }
    server.restart();
    let client = server.client().await;
    assert_eq!(
        table(&client, "SELECT * FROM t ORDER BY a").await,
        [
            row(&["1", "one", "4"]),
            row(&["2", "two", "4"]),
            row(&["3", "NULL", "4"]),
        ]
    );
    assert_eq!(
        table(
            &client,
            "SELECT relname FROM pg_class WHERE relnamespace = 'public'::regnamespace ORDER BY 1"
        )
        .await,
        [row(&["t"]), row(&["t_b"])]
    );
    assert_eq!(
        table(
            &client,
            "SELECT reloptions FROM pg_class WHERE relname IN ('t', 't_b')"
        )
        .await,
        [row(&["NULL"]), row(&["NULL"])]
    );
    client
        .batch_execute("SET enable_seqscan = off")
        .await
        .unwrap();
    assert_eq!(
        table(&client, "SELECT a FROM t WHERE b = 'one'").await,
        [row(&["1"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defaults_and_not_null() {
    let server = TestServer::start("alter-not-null");
    let client = server.client().await;
    client
        .batch_execute(&format!(
            "{SETUP} CREATE TABLE empty (a int);
             CREATE TABLE ident (i int GENERATED ALWAYS AS IDENTITY, v int);"
        ))
        .await
        .unwrap();
    let nulls = |column: &str, table: &str| {
        (
            "23502".to_string(),
            format!("column \"{column}\" of relation \"{table}\" contains null values"),
        )
    };
    assert_eq!(
        fails(&client, "ALTER TABLE t ALTER COLUMN b SET NOT NULL").await,
        nulls("b", "t")
    );
    assert_eq!(
        fails(&client, "ALTER TABLE t ADD COLUMN n int NOT NULL").await,
        nulls("n", "t")
    );
    assert_eq!(
        fails(
            &client,
            "ALTER TABLE t ADD COLUMN n int DEFAULT NULL NOT NULL"
        )
        .await,
        nulls("n", "t")
    );
    // A NULL that only a deleted row had does not count.
    client
        .batch_execute("DELETE FROM t WHERE b IS NULL; ALTER TABLE t ALTER COLUMN b SET NOT NULL")
        .await
        .unwrap();
    assert_eq!(
        fails(&client, "INSERT INTO t (a, c) VALUES (8, 8)").await.0,
        "23502"
    );
    client
        .batch_execute("ALTER TABLE t ALTER b DROP NOT NULL; INSERT INTO t (a, c) VALUES (8, 8)")
        .await
        .unwrap();
    // A volatile default would need a rewrite: refused on a table with rows, fine on an
    // empty one. A stable one (now()) is computed once, as PostgreSQL does.
    assert_eq!(
        fails(
            &client,
            "ALTER TABLE t ADD COLUMN r float8 DEFAULT random()"
        )
        .await
        .0,
        "0A000"
    );
    client
        .batch_execute(
            "ALTER TABLE empty ADD COLUMN r float8 DEFAULT random() NOT NULL, ADD COLUMN n int NOT NULL;
             INSERT INTO empty (a, n) VALUES (1, 1), (2, 2);",
        )
        .await
        .unwrap();
    assert_eq!(
        table(&client, "SELECT count(DISTINCT r) FROM empty").await,
        [row(&["2"])]
    );
    client
        .batch_execute(
            "ALTER TABLE t ADD COLUMN at timestamptz DEFAULT now();
             ALTER TABLE t ALTER COLUMN c SET DEFAULT 42;
             INSERT INTO t (a) VALUES (9);
             ALTER TABLE t ALTER COLUMN c DROP DEFAULT;
             INSERT INTO t (a) VALUES (10);",
        )
        .await
        .unwrap();
    assert_eq!(
        table(
            &client,
            "SELECT a, c, at IS NOT NULL FROM t WHERE a >= 9 ORDER BY a"
        )
        .await,
        [row(&["9", "42", "t"]), row(&["10", "NULL", "t"])]
    );
    assert_eq!(
        table(&client, "SELECT count(DISTINCT at) FROM t WHERE a < 9").await,
        [row(&["1"])]
    );
    for (sql, code, message) in [
        (
            "ALTER TABLE ident ALTER COLUMN i SET DEFAULT 5",
            "42601",
            "column \"i\" of relation \"ident\" is an identity column",
        ),
        (
            "ALTER TABLE ident ALTER COLUMN i DROP DEFAULT",
            "42601",
            "column \"i\" of relation \"ident\" is an identity column",
        ),
        (
            "ALTER TABLE ident ALTER COLUMN i DROP NOT NULL",
            "42601",
            "column \"i\" of relation \"ident\" is an identity column",
        ),
        (
            "ALTER TABLE t ALTER COLUMN zz SET NOT NULL",
            "42703",
            "column \"zz\" of relation \"t\" does not exist",
        ),
        (
            "ALTER TABLE t ADD COLUMN b int",
            "42701",
            "column \"b\" of relation \"t\" already exists",
        ),
        (
            "ALTER TABLE t DROP COLUMN zz",
            "42703",
            "column \"zz\" of relation \"t\" does not exist",
        ),
        (
            "ALTER TABLE t_b ADD COLUMN x int",
            "42809",
            "ALTER action ADD COLUMN cannot be performed on relation \"t_b\"",
        ),
        (
            "ALTER TABLE empty DROP COLUMN r, DROP COLUMN n, DROP COLUMN a",
            "0A000",
            "cannot drop column a of table empty: it is the table's only column",
        ),
    ] {
        assert_eq!(
            fails(&client, sql).await,
            (code.to_string(), message.to_string()),
            "{sql}"
        );
    }
    let (out, notice) = psql(
        &server,
        "ALTER TABLE t ADD COLUMN IF NOT EXISTS b int, DROP COLUMN IF EXISTS zz",
    );
    assert_eq!(out.trim(), "ALTER TABLE");
    assert_eq!(
        notice,
        "NOTICE:  column \"b\" of relation \"t\" already exists, skipping\n\
         NOTICE:  column \"zz\" of relation \"t\" does not exist, skipping\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_column_a_view_reads_needs_cascade() {
    let server = TestServer::start("alter-drop-views");
    let client = server.client().await;
    client
        .batch_execute(&format!(
            "{SETUP} CREATE VIEW vb AS SELECT b FROM t;
             CREATE VIEW vbb AS SELECT b FROM vb;
             CREATE VIEW vc AS SELECT c FROM t;"
        ))
        .await
        .unwrap();
    let e = client
        .batch_execute("ALTER TABLE t DROP COLUMN b")
        .await
        .unwrap_err();
    let db = e.as_db_error().unwrap();
    assert_eq!(db.code().code(), "2BP01");
    assert_eq!(
        db.message(),
        "cannot drop column b of table t because other objects depend on it"
    );
    assert_eq!(
        db.detail(),
        Some("view vb depends on column b of table t\nview vbb depends on view vb")
    );
    assert_eq!(
        db.hint(),
        Some("Use DROP ... CASCADE to drop the dependent objects too.")
    );
    let (out, notice) = psql(
        &server,
        "BEGIN; ALTER TABLE t DROP COLUMN b CASCADE; ROLLBACK",
    );
    assert!(out.contains("ALTER TABLE"), "{out}");
    assert_eq!(
        notice,
        "NOTICE:  drop cascades to 2 other objects\n\
         DETAIL:  drop cascades to view vb\n\
         drop cascades to view vbb\n"
    );
    assert_eq!(
        table(&client, "SELECT count(*) FROM vbb").await,
        [row(&["3"])]
    );
    client
        .batch_execute("ALTER TABLE t DROP COLUMN b CASCADE")
        .await
        .unwrap();
    assert_eq!(
        table(
            &client,
            "SELECT viewname FROM pg_views WHERE schemaname = 'public'"
        )
        .await,
        [row(&["vc"])]
    );
    assert_eq!(
        table(&client, "SELECT sum(c) FROM vc").await,
        [row(&["60"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_parameters_and_unsupported_subcommands() {
    let server = TestServer::start("alter-options");
    let client = server.client().await;
    client
        .batch_execute(&format!("{SETUP} CREATE VIEW v AS SELECT a FROM t;"))
        .await
        .unwrap();
    client
        .batch_execute(
            "ALTER TABLE t SET (fillfactor = 70);
             ALTER INDEX t_b SET (deduplicate_items = off, fillfactor = 80);
             ALTER INDEX t_b SET (fillfactor = 60);
             ALTER TABLE t_c SET (fillfactor = 50);
             ALTER INDEX t_c RESET (fillfactor, nonsense);",
        )
        .await
        .unwrap();
    assert_eq!(
        table(
            &client,
            "SELECT relname, reloptions::text FROM pg_class
             WHERE relnamespace = 'public'::regnamespace AND relname LIKE 't%' ORDER BY 1"
        )
        .await,
        [
            row(&["t", "{fillfactor=70}"]),
            row(&["t_b", "{deduplicate_items=off,fillfactor=60}"]),
            row(&["t_c", "NULL"]),
        ]
    );
    assert_eq!(
        table(&client, "SELECT indexdef FROM pg_indexes WHERE indexname = 't_b'").await,
        [row(&["CREATE INDEX t_b ON public.t USING btree (b) WITH (deduplicate_items=off, fillfactor='60')"])]
    );
    client
        .batch_execute("ALTER TABLE t RESET (fillfactor)")
        .await
        .unwrap();
    assert_eq!(
        table(
            &client,
            "SELECT reloptions FROM pg_class WHERE relname = 't'"
        )
        .await,
        [row(&["NULL"])]
    );
    for (sql, code, message) in [
        ("ALTER TABLE t SET (fillfactor = 5)", "22023", "value 5 out of bounds for option \"fillfactor\""),
        ("ALTER TABLE t SET (fillfactor = 70, fillfactor = 80)", "22023", "parameter \"fillfactor\" specified more than once"),
        ("ALTER TABLE t SET (foo = 1)", "22023", "unrecognized parameter \"foo\""),
        ("ALTER TABLE t SET (deduplicate_items = off)", "22023", "unrecognized parameter \"deduplicate_items\""),
        ("ALTER VIEW v SET (fillfactor = 10)", "22023", "unrecognized parameter \"fillfactor\""),
        ("ALTER INDEX t SET (fillfactor = 20)", "42809", "\"t\" is not an index"),
        ("ALTER TABLE t ALTER COLUMN a TYPE bigint", "0A000", "ALTER TABLE … ALTER COLUMN TYPE is not supported"),
        ("ALTER TABLE t ADD CONSTRAINT k CHECK (a > 0)", "0A000", "ALTER TABLE … ADD CONSTRAINT is not supported"),
        ("ALTER TABLE t ADD FOREIGN KEY (a) REFERENCES t (a)", "0A000", "ALTER TABLE … ADD FOREIGN KEY is not supported"),
        ("ALTER TABLE t OWNER TO postgres", "0A000", "ALTER TABLE … OWNER TO is not supported"),
        ("ALTER TABLE t ADD COLUMN s serial", "0A000", "ALTER TABLE … ADD COLUMN of a serial or identity column is not supported (column \"s\")"),
    ] {
        assert_eq!(
            fails(&client, sql).await,
            (code.to_string(), message.to_string()),
            "{sql}"
        );
    }
    // A syntax error points where PostgreSQL's does.
    let (_, err) = psql(&server, "ALTER TABLE t ADD COLUMN x int garbage");
    assert!(
        err.starts_with("ERROR:  syntax error at or near \"garbage\"\nLINE 1: ALTER TABLE t ADD COLUMN x int garbage\n"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_waits_for_an_open_alter_table_and_sees_its_rollback() {
    let server = TestServer::start("alter-concurrent");
    let alterer = server.client().await;
    let writer = server.client().await;
    alterer.batch_execute(SETUP).await.unwrap();
    alterer
        .batch_execute("BEGIN; ALTER TABLE t ADD COLUMN d int DEFAULT 1")
        .await
        .unwrap();
    // The ALTER holds the table's AccessExclusiveLock to its end: the INSERT waits, and
    // after the ROLLBACK meets the table without the column (4 values are one too many).
    let insert = tokio::spawn(async move {
        let four = writer
            .batch_execute("INSERT INTO t VALUES (4, 'four', 40, 44)")
            .await;
        let three = writer
            .batch_execute("INSERT INTO t VALUES (4, 'four', 40)")
            .await;
        (writer, four.map_err(|e| sqlstate(&e)), three)
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(
        !insert.is_finished(),
        "the INSERT waits for the ALTER's transaction"
    );
    alterer.batch_execute("ROLLBACK").await.unwrap();
    let (writer, four, three) = insert.await.unwrap();
    assert_eq!(four, Err("42601".to_string()));
    three.unwrap();
    assert_eq!(
        table(&writer, "SELECT * FROM t ORDER BY a").await,
        [
            row(&["1", "one", "10"]),
            row(&["2", "two", "20"]),
            row(&["3", "NULL", "30"]),
            row(&["4", "four", "40"]),
        ]
    );
    writer
        .batch_execute("ALTER TABLE t ADD COLUMN e int DEFAULT 5")
        .await
        .unwrap();
    assert_eq!(
        table(&writer, "SELECT a, e FROM t WHERE a >= 3 ORDER BY a").await,
        [row(&["3", "5"]), row(&["4", "5"])]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_serial_column_drops_its_sequence_at_commit() {
    let server = TestServer::start("alter-serial");
    let client = server.client().await;
    iolab_tests::run_script(
        &client,
        "CREATE TABLE ser (id serial, v int);
             INSERT INTO ser (v) VALUES (1), (2);
             BEGIN; ALTER TABLE ser DROP COLUMN id; ROLLBACK;
             INSERT INTO ser (v) VALUES (3);",
    )
    .await
    .unwrap();
    assert_eq!(
        table(&client, "SELECT id, v FROM ser ORDER BY v").await,
        [row(&["1", "1"]), row(&["2", "2"]), row(&["3", "3"])]
    );
    client
        .batch_execute("ALTER TABLE ser DROP COLUMN id")
        .await
        .unwrap();
    assert_eq!(
        table(
            &client,
            "SELECT count(*) FROM pg_class WHERE relname = 'ser_id_seq'"
        )
        .await,
        [row(&["0"])]
    );
    assert_eq!(
        table(&client, "SELECT * FROM ser ORDER BY v").await,
        [row(&["1"]), row(&["2"]), row(&["3"])]
    );
    client
        .batch_execute("INSERT INTO ser VALUES (4)")
        .await
        .unwrap();
    assert_eq!(
        table(&client, "SELECT sum(v) FROM ser").await,
        [row(&["10"])]
    );
}

/// CREATE TABLE … WITH (…) checks and records its storage parameters as ALTER TABLE … SET
/// does, `autovacuum_enabled` included (scripts written for PostgreSQL set it; iolab has no
/// autovacuum), with PostgreSQL 18's messages; CREATE TABLE AS too, and ROLLBACK takes the
/// table back with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_table_records_its_storage_parameters() {
    let server = TestServer::start("create-table-with");
    let client = server.client().await;
    iolab_tests::run_script(
        &client,
        "CREATE TABLE w1(a int) WITH (autovacuum_enabled = off, fillfactor = 70);
             CREATE TABLE w2 WITH (fillfactor = 60) AS SELECT 1 AS a;
             BEGIN; CREATE TABLE w3(a int) WITH (fillfactor = 50); ROLLBACK;",
    )
    .await
    .unwrap();
    assert_eq!(
        table(
            &client,
            "SELECT relname, reloptions::text FROM pg_class WHERE relname LIKE 'w_' ORDER BY 1"
        )
        .await,
        [
            row(&["w1", "{autovacuum_enabled=off,fillfactor=70}"]),
            row(&["w2", "{fillfactor=60}"]),
        ]
    );
    for (sql, code, message) in [
        (
            "CREATE TABLE w4(a int) WITH (fillfactor = 5)",
            "22023",
            "value 5 out of bounds for option \"fillfactor\"",
        ),
        (
            "CREATE TABLE w4(a int) WITH (bogus = 1)",
            "22023",
            "unrecognized parameter \"bogus\"",
        ),
        (
            "CREATE TABLE w4(a int) WITH (autovacuum_enabled = maybe)",
            "22023",
            "invalid value for boolean option \"autovacuum_enabled\": maybe",
        ),
    ] {
        assert_eq!(fails(&client, sql).await, (code.into(), message.into()));
    }
    assert_eq!(
        table(
            &client,
            "SELECT count(*) FROM pg_class WHERE relname = 'w4'"
        )
        .await,
        [row(&["0"])],
        "a refused table is not made"
    );
}
