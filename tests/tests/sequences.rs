//! Sequences, `serial` / `bigserial` and identity columns end to end: the values INSERT
//! gives rows (RETURNING, prepared statements), `nextval` / `currval` / `setval` /
//! `lastval` and their errors, what psql's `\d` and `\ds` show (lines copied from
//! PostgreSQL 18's psql for the same tables), transactions (nextval is never rolled back,
//! CREATE SEQUENCE is), and durability: values continue after a restart and none repeats
//! after `kill -9`.
//!
//! Differences from PostgreSQL 18 that these tests accept: none in what they check.

use iolab_tests::tokio_postgres::Client;
use iolab_tests::{error, int, rows, sqlstate, TestServer};

/// The ids a statement's RETURNING gives, in order.
async fn ids(client: &Client, sql: &str) -> Vec<i64> {
    rows(client, sql)
        .await
        .into_iter()
        .map(|r| r[0].as_deref().unwrap().parse().unwrap())
        .collect()
}

/// The error of a statement that must fail: (SQLSTATE, message).

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serial_columns_number_the_rows_inserted() {
    let server = TestServer::start("seq-serial");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE se (id serial, b text);
             CREATE TABLE runs (id bigserial, setting int, ms float8);",
        )
        .await
        .unwrap();

    // One statement, several rows; then the next statements continue the numbering.
    assert_eq!(
        ids(
            &client,
            "INSERT INTO se (b) VALUES ('a'), ('b') RETURNING id"
        )
        .await,
        vec![1, 2]
    );
    assert_eq!(
        ids(&client, "INSERT INTO se VALUES (DEFAULT, 'c') RETURNING id").await,
        vec![3]
    );
    assert_eq!(
        ids(
            &client,
            "INSERT INTO se (b) SELECT 'x' || g FROM generate_series(1, 3) g RETURNING id"
        )
        .await,
        vec![4, 5, 6]
    );
    // An explicit value is taken as given (serial is only a default).
    assert_eq!(
        ids(&client, "INSERT INTO se VALUES (100, 'given') RETURNING id").await,
        vec![100]
    );
    assert_eq!(
        ids(&client, "INSERT INTO se (b) VALUES ('d') RETURNING id").await,
        vec![7]
    );
    // The default's nextval counts as the session's: currval sees it.
    assert_eq!(int(&client, "SELECT currval('se_id_seq')").await, 7);
    assert_eq!(int(&client, "SELECT lastval()").await, 7);
    // The column is NOT NULL.
    let (code, _) = error(&client, "INSERT INTO se VALUES (NULL, 'n')").await;
    assert_eq!(code, "23502");

    // bigserial through a prepared statement with parameters, as a client library
    // records experiment results.
    let insert = client
        .prepare("INSERT INTO runs (setting, ms) VALUES ($1, $2) RETURNING id")
        .await
        .unwrap();
    let mut got = Vec::new();
    for setting in 0..5i32 {
        let row = client
            .query_one(&insert, &[&setting, &(setting as f64 * 1.5)])
            .await
            .unwrap();
        got.push(row.get::<_, i64>(0));
    }
    assert_eq!(got, vec![1, 2, 3, 4, 5]);
    assert_eq!(
        rows(&client, "SELECT id, setting, ms FROM runs WHERE id = 3").await,
        vec![vec![Some("3".into()), Some("2".into()), Some("3".into())]]
    );
    assert_eq!(
        ids(&client, "INSERT INTO runs DEFAULT VALUES RETURNING id").await,
        vec![6]
    );
    // DEFAULT among parameters of a prepared statement.
    let with_default = client
        .prepare("INSERT INTO runs VALUES (DEFAULT, $1, $2) RETURNING id")
        .await
        .unwrap();
    let row = client
        .query_one(&with_default, &[&7i32, &0.5f64])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 7);

    // psql's \d, lines as PostgreSQL 18's psql prints them for the same table.
    let described = server.psql_ok(&["-c", "\\d se"]);
    assert!(
        described
            .contains(" id     | integer |           | not null | nextval('se_id_seq'::regclass)"),
        "{described}"
    );
    let listed = server.psql_ok(&["-c", "\\ds"]);
    assert!(
        listed.contains(" public | se_id_seq   | sequence | postgres"),
        "{listed}"
    );
    assert!(listed.contains(" public | runs_id_seq | sequence | postgres"));

    // The sequence is the column's: DROP SEQUENCE refuses, DROP TABLE takes it along.
    let e = client
        .simple_query("DROP SEQUENCE se_id_seq")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&e), "2BP01");
    assert_eq!(
        e.as_db_error().unwrap().detail(),
        Some("default value for column id of table se depends on sequence se_id_seq")
    );
    client.batch_execute("DROP TABLE se").await.unwrap();
    assert_eq!(
        int(
            &client,
            "SELECT count(*) FROM pg_class WHERE relname = 'se_id_seq'"
        )
        .await,
        0
    );
    let (code, message) = error(&client, "SELECT nextval('se_id_seq')").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("42P01", "relation \"se_id_seq\" does not exist")
    );
    // ROLLBACK of a DROP TABLE puts the sequence back where it was.
    client
        .batch_execute("BEGIN; DROP TABLE runs; ROLLBACK")
        .await
        .unwrap();
    assert_eq!(
        ids(
            &client,
            "INSERT INTO runs (setting) VALUES (9) RETURNING id"
        )
        .await,
        vec![8]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_columns_generate_and_guard_their_values() {
    let server = TestServer::start("seq-identity");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE idt (id int GENERATED ALWAYS AS IDENTITY, b text);
             CREATE TABLE idd (id bigint GENERATED BY DEFAULT AS IDENTITY
                               (START WITH 100 INCREMENT BY 5), b text);",
        )
        .await
        .unwrap();

    // ALWAYS: no value but DEFAULT, with PostgreSQL's detail and hint.
    for sql in [
        "INSERT INTO idt VALUES (5, 'x')",
        "INSERT INTO idt (id, b) SELECT 5, 'x'",
    ] {
        let e = client.simple_query(sql).await.unwrap_err();
        let db = e.as_db_error().unwrap();
        assert_eq!(sqlstate(&e), "428C9", "{sql}");
        assert_eq!(
            db.message(),
            "cannot insert a non-DEFAULT value into column \"id\""
        );
        assert_eq!(
            db.detail(),
            Some("Column \"id\" is an identity column defined as GENERATED ALWAYS.")
        );
        assert_eq!(db.hint(), Some("Use OVERRIDING SYSTEM VALUE to override."));
    }
    assert_eq!(
        ids(&client, "INSERT INTO idt (b) VALUES ('a') RETURNING id").await,
        vec![1]
    );
    assert_eq!(
        ids(
            &client,
            "INSERT INTO idt VALUES (DEFAULT, 'b') RETURNING id"
        )
        .await,
        vec![2]
    );
    assert_eq!(
        ids(
            &client,
            "INSERT INTO idt (id, b) OVERRIDING SYSTEM VALUE VALUES (70, 'o') RETURNING id"
        )
        .await,
        vec![70]
    );
    let (code, message) = error(&client, "UPDATE idt SET id = 3").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("428C9", "column \"id\" can only be updated to DEFAULT")
    );
    assert_eq!(
        int(&client, "SELECT count(*) FROM idt WHERE id = 3").await,
        0,
        "the refused UPDATE changed nothing"
    );
    // DEFAULT is the one value UPDATE may give it: the sequence's next.
    assert_eq!(
        ids(
            &client,
            "UPDATE idt SET id = DEFAULT WHERE b = 'a' RETURNING id"
        )
        .await,
        vec![3]
    );

    // BY DEFAULT: generated with the options given, or taken as given.
    assert_eq!(
        ids(
            &client,
            "INSERT INTO idd (b) VALUES ('a'), ('b') RETURNING id"
        )
        .await,
        vec![100, 105]
    );
    assert_eq!(
        ids(&client, "INSERT INTO idd VALUES (1, 'z') RETURNING id").await,
        vec![1]
    );
    assert_eq!(
        ids(&client, "INSERT INTO idd (b) VALUES ('c') RETURNING id").await,
        vec![110]
    );

    // psql's \d, lines as PostgreSQL 18's psql prints them for the same tables.
    let described = server.psql_ok(&["-c", "\\d idt"]);
    assert!(
        described
            .contains(" id     | integer |           | not null | generated always as identity"),
        "{described}"
    );
    let described = server.psql_ok(&["-c", "\\d idd"]);
    assert!(
        described
            .contains(" id     | bigint |           | not null | generated by default as identity"),
        "{described}"
    );
    assert_eq!(
        rows(
            &client,
            "SELECT attidentity FROM pg_attribute WHERE attrelid = 'idt'::regclass AND attnum = 1"
        )
        .await,
        vec![vec![Some("a".into())]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequence_functions_behave_as_postgres() {
    let server = TestServer::start("seq-functions");
    let client = server.client().await;
    client.batch_execute("CREATE SEQUENCE s").await.unwrap();

    let (code, message) = error(&client, "SELECT currval('s')").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        (
            "55000",
            "currval of sequence \"s\" is not yet defined in this session"
        )
    );
    let (code, message) = error(&client, "SELECT lastval()").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("55000", "lastval is not yet defined in this session")
    );
    assert_eq!(
        rows(
            &client,
            "SELECT nextval('s'), nextval('s'), currval('s'), lastval()"
        )
        .await,
        vec![vec![
            Some("1".into()),
            Some("2".into()),
            Some("2".into()),
            Some("2".into())
        ]]
    );
    // One value per row, also with a constant argument.
    assert_eq!(
        ids(&client, "SELECT nextval('s') FROM generate_series(1, 3)").await,
        vec![3, 4, 5]
    );
    assert_eq!(
        rows(&client, "SELECT setval('s', 10), nextval('s')").await,
        vec![vec![Some("10".into()), Some("11".into())]]
    );
    assert_eq!(
        rows(&client, "SELECT setval('s', 10, false), nextval('s')").await,
        vec![vec![Some("10".into()), Some("10".into())]]
    );
    assert_eq!(int(&client, "SELECT nextval('s'::regclass)").await, 11);

    // Another session has its own currval, and the sequence's next value.
    let other = server.client().await;
    let (code, _) = error(&other, "SELECT currval('s')").await;
    assert_eq!(code, "55000");
    assert_eq!(int(&other, "SELECT nextval('s')").await, 12);
    assert_eq!(int(&client, "SELECT currval('s')").await, 11);

    // Bounds, types and errors, with PostgreSQL's messages.
    client
        .batch_execute("CREATE SEQUENCE s2 AS integer MAXVALUE 3")
        .await
        .unwrap();
    assert_eq!(
        ids(&client, "SELECT nextval('s2') FROM generate_series(1, 3)").await,
        vec![1, 2, 3]
    );
    let (code, message) = error(&client, "SELECT nextval('s2')").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        (
            "2200H",
            "nextval: reached maximum value of sequence \"s2\" (3)"
        )
    );
    let (code, message) = error(&client, "SELECT setval('s2', 100)").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        (
            "22003",
            "setval: value 100 is out of bounds for sequence \"s2\" (1..3)"
        )
    );
    let (code, message) = error(&client, "SELECT nextval('nope')").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("42P01", "relation \"nope\" does not exist")
    );
    let (code, message) = error(&client, "CREATE SEQUENCE s3 INCREMENT 0").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("22023", "INCREMENT must not be zero")
    );
    let (code, _) = error(&client, "CREATE SEQUENCE s").await;
    assert_eq!(code, "42P07");
    // Descending, cycling.
    client
        .batch_execute("CREATE SEQUENCE d INCREMENT BY -1 MINVALUE -2 MAXVALUE -1 CYCLE")
        .await
        .unwrap();
    assert_eq!(
        ids(&client, "SELECT nextval('d') FROM generate_series(1, 5)").await,
        vec![-1, -2, -1, -2, -1]
    );
    // ALTER SEQUENCE … RESTART.
    client
        .batch_execute("ALTER SEQUENCE s2 RESTART WITH 2")
        .await
        .unwrap();
    assert_eq!(int(&client, "SELECT nextval('s2')").await, 2);

    // nextval is not rolled back.
    client
        .batch_execute("BEGIN; SELECT nextval('s'); SELECT nextval('s'); ROLLBACK")
        .await
        .unwrap();
    assert_eq!(int(&client, "SELECT nextval('s')").await, 15);

    // CREATE SEQUENCE is; DROP SEQUENCE too.
    client
        .batch_execute("BEGIN; CREATE SEQUENCE gone; SELECT nextval('gone'); ROLLBACK")
        .await
        .unwrap();
    let (code, _) = error(&client, "SELECT nextval('gone')").await;
    assert_eq!(code, "42P01");
    client
        .batch_execute("BEGIN; DROP SEQUENCE s2; ROLLBACK")
        .await
        .unwrap();
    assert_eq!(int(&client, "SELECT nextval('s2')").await, 3);
    client.batch_execute("DROP SEQUENCE s2").await.unwrap();
    let (code, message) = error(&client, "DROP SEQUENCE s2").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("42P01", "sequence \"s2\" does not exist")
    );

    // The catalog shows them as PostgreSQL does.
    assert_eq!(
        rows(
            &client,
            "SELECT sequencename, data_type, min_value, max_value, increment_by, cycle, last_value \
             FROM pg_sequences ORDER BY sequencename"
        )
        .await,
        vec![
            ["d", "bigint", "-2", "-1", "-1", "t", "-1"].map(|v| Some(v.to_string())).to_vec(),
            ["s", "bigint", "1", "9223372036854775807", "1", "f", "15"]
                .map(|v| Some(v.to_string()))
                .to_vec(),
        ]
    );
    assert_eq!(
        rows(&client, "SELECT relkind FROM pg_class WHERE relname = 's'").await,
        vec![vec![Some("S".into())]]
    );
    // After all these errors the session still works.
    assert_eq!(int(&client, "SELECT 1").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_continue_after_restart_and_never_repeat_after_a_crash() {
    let mut server = TestServer::start("seq-durable");
    let client = server.client().await;
    client
        .batch_execute("CREATE SEQUENCE s; CREATE TABLE runs (id bigserial, setting int)")
        .await
        .unwrap();
    let mut handed = ids(&client, "SELECT nextval('s') FROM generate_series(1, 40)").await;
    assert_eq!(handed.last(), Some(&40));

    // A clean restart: the next value follows every value handed out.
    server.restart();
    let client = server.client().await;
    let next = int(&client, "SELECT nextval('s')").await;
    assert!(
        next > 40,
        "{next} repeats a value handed out before the restart"
    );
    handed.push(next);

    // Many values one by one and many in one INSERT, then kill -9.
    for _ in 0..50 {
        handed.push(int(&client, "SELECT nextval('s')").await);
    }
    let inserted = ids(
        &client,
        "INSERT INTO runs (setting) SELECT g FROM generate_series(1, 1000) g RETURNING id",
    )
    .await;
    assert_eq!(inserted.len(), 1000);
    let last_id = *inserted.last().unwrap();
    let last_s = *handed.last().unwrap();
    server.kill();
    server.restart();
    let client = server.client().await;

    let next = int(&client, "SELECT nextval('s')").await;
    assert!(
        next > last_s,
        "{next} repeats a value handed out before the crash"
    );
    // The stated bound: at most 32 values (written ahead) are skipped.
    assert!(
        next <= last_s + 33,
        "{next} skips more than 32 after {last_s}"
    );
    let next_id = ids(
        &client,
        "INSERT INTO runs (setting) VALUES (0) RETURNING id",
    )
    .await[0];
    assert!(
        next_id > last_id,
        "id {next_id} repeats one inserted before the crash"
    );
    assert!(
        next_id <= last_id + 33,
        "id {next_id} skips more than 32 after {last_id}"
    );
    assert_eq!(
        int(&client, "SELECT count(DISTINCT id) FROM runs").await,
        1001,
        "every row has its own id"
    );
}

/// A volatile default (`random()`) is evaluated for every row an INSERT or COPY leaves it
/// out of, as in PostgreSQL; a stable one (`now()`) once per statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn volatile_defaults_are_evaluated_per_row() {
    let server = TestServer::start("seq-volatile-default");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE dv(a int, r float8 DEFAULT random(), u text DEFAULT md5(random()::text),
                         n timestamptz DEFAULT now());
         INSERT INTO dv(a) SELECT generate_series(1, 500);
         INSERT INTO dv(a) VALUES (1), (2), (3);
         INSERT INTO dv VALUES (4, DEFAULT, DEFAULT, DEFAULT)",
    )
    .await
    .unwrap();
    server.psql_ok(&["-c", "\\copy dv(a) FROM PROGRAM 'seq 501 503'"]);
    let counts = rows(
        &c,
        "SELECT count(*), count(DISTINCT r), count(DISTINCT u),
                count(*) FILTER (WHERE r < 0 OR r >= 1)
         FROM dv",
    )
    .await;
    let n = |i: usize| counts[0][i].as_deref().unwrap().parse::<i64>().unwrap();
    assert_eq!(n(0), 507, "{counts:?}");
    assert_eq!(
        (n(1), n(2)),
        (507, 507),
        "every row its own value: {counts:?}"
    );
    assert_eq!(n(3), 0, "random() in [0, 1): {counts:?}");
    assert_eq!(
        int(
            &c,
            "SELECT count(DISTINCT n) FROM dv WHERE a BETWEEN 5 AND 500"
        )
        .await,
        1,
        "now() once per statement"
    );
}

/// Without a column list, a VALUES row or query row shorter than the table fills its first
/// columns and the others get their defaults; errors as PostgreSQL 18 gives them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_rows_take_the_defaults_of_the_columns_after_them() {
    let server = TestServer::start("short-rows");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE t3 (a int, b int DEFAULT 7, c text DEFAULT 'x', id serial); \
         INSERT INTO t3 VALUES (1); INSERT INTO t3 SELECT 2; INSERT INTO t3 VALUES (3, 4)",
    )
    .await
    .unwrap();
    let got = rows(&c, "SELECT a, b, c, id FROM t3 ORDER BY a").await;
    let want: Vec<Vec<Option<String>>> = [
        ["1", "7", "x", "1"],
        ["2", "7", "x", "2"],
        ["3", "4", "x", "3"],
    ]
    .iter()
    .map(|r| r.iter().map(|v| Some(v.to_string())).collect())
    .collect();
    assert_eq!(got, want);
    for (sql, code, message) in [
        (
            "INSERT INTO t3 VALUES (3, 4, 'y', 5, 6)",
            "42601",
            "INSERT has more expressions than target columns",
        ),
        (
            "INSERT INTO t3 (a, b) VALUES (1)",
            "42601",
            "INSERT has more target columns than expressions",
        ),
        (
            "INSERT INTO t3 VALUES (4), (5, 6)",
            "42601",
            "VALUES lists must all be the same length",
        ),
    ] {
        assert_eq!(
            error(&c, sql).await,
            (code.to_string(), message.to_string()),
            "{sql}"
        );
    }
}

/// `information_schema.columns` shows defaults and identity columns as PostgreSQL 18.4
/// does for the same table (but for a text constant's cast: `'x'` where it shows
/// `'x'::text`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn information_schema_columns_shows_defaults_and_identity() {
    let server = TestServer::start("info-schema-defaults");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE dft (id serial PRIMARY KEY, a int DEFAULT 7, \
         g int GENERATED ALWAYS AS IDENTITY, n int)",
    )
    .await
    .unwrap();
    let got = rows(
        &c,
        "SELECT column_name, column_default, is_identity, identity_generation, \
         identity_start, identity_increment, identity_maximum, identity_minimum, \
         identity_cycle FROM information_schema.columns WHERE table_name = 'dft' \
         ORDER BY ordinal_position",
    )
    .await;
    let row = |r: [Option<&str>; 9]| r.iter().map(|v| v.map(str::to_string)).collect();
    let want: Vec<Vec<Option<String>>> = vec![
        row([
            Some("id"),
            Some("nextval('dft_id_seq'::regclass)"),
            Some("NO"),
            None,
            None,
            None,
            None,
            None,
            Some("NO"),
        ]),
        row([
            Some("a"),
            Some("7"),
            Some("NO"),
            None,
            None,
            None,
            None,
            None,
            Some("NO"),
        ]),
        row([
            Some("g"),
            None,
            Some("YES"),
            Some("ALWAYS"),
            Some("1"),
            Some("1"),
            Some("2147483647"),
            Some("1"),
            Some("NO"),
        ]),
        row([
            Some("n"),
            None,
            Some("NO"),
            None,
            None,
            None,
            None,
            None,
            Some("NO"),
        ]),
    ];
    assert_eq!(got, want);
}
