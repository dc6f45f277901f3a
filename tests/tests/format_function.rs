//! PostgreSQL 18's `format()` and `quote_ident` / `quote_literal` / `quote_nullable`
//! against a real iolab: values of several types rendered as PostgreSQL's output functions
//! write them, the `\gexec` scripts users drive experiments with, and PostgreSQL's errors
//! and SQLSTATEs. Every expected value was taken from PostgreSQL 18
//! (`/work/shared/tools/pg18-reference`) running the same statement.
//!
//! Differences from PostgreSQL 18 that these tests accept:
//! - `format(fmt, VARIADIC array)` is not supported: the SQL parser does not accept
//!   `VARIADIC` in a call (a syntax error).
//! - A value is rendered as iolab's type for it renders, so where iolab types a value
//!   differently (`1.50::numeric` is `1.5000000000`, `char(n)` is not blank-padded) the
//!   text differs as `SELECT value` itself does.

use iolab_tests::tokio_postgres::Client;
use iolab_tests::{rows, sqlstate, TestServer};

async fn one(client: &Client, sql: &str) -> Option<String> {
    let r = rows(client, sql).await;
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0][0].clone()
}

/// The SQLSTATE, message and hint `sql` fails with.
async fn error(client: &Client, sql: &str) -> (String, String, Option<String>) {
    let e = client
        .simple_query(sql)
        .await
        .err()
        .unwrap_or_else(|| panic!("{sql}: expected an error"));
    let db = e.as_db_error().unwrap_or_else(|| panic!("{sql}: {e:?}"));
    (
        sqlstate(&e),
        db.message().to_string(),
        db.hint().map(str::to_string),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn format_renders_values_as_postgres_writes_them() {
    let server = TestServer::start("format-values");
    let client = server.client().await;

    for (sql, expected) in [
        (
            "SELECT format('%s|%s|%s|%s|%s|%s', 42, 1.5::float8, 1e20::float8, true, NULL, DATE '2024-01-31')",
            Some("42|1.5|1e+20|t||2024-01-31"),
        ),
        (
            "SELECT format('%L, %L, %L, %L', 'it''s', E'a\\\\b', NULL, true)",
            Some("'it''s', E'a\\\\b', NULL, 't'"),
        ),
        (
            "SELECT format('%I.%I.%I', 'public', 'My Table', 'select')",
            Some("public.\"My Table\".\"select\""),
        ),
        ("SELECT format('%s', ARRAY[1,2,NULL])", Some("{1,2,NULL}")),
        ("SELECT format('%s', ARRAY['a b','c'])", Some("{\"a b\",c}")),
        (
            "SELECT format('%s', TIMESTAMP '2024-01-31 12:34:56.5')",
            Some("2024-01-31 12:34:56.5"),
        ),
        ("SELECT format('|%10s|%-10s|', 'right', 'left')", Some("|     right|left      |")),
        ("SELECT format('|%*s|%-*s|', 6, 'ab', -6, 'cd')", Some("|    ab|cd    |")),
        ("SELECT format('|%3$*2$s|', 'abc', 6, 'z')", Some("|     z|")),
        ("SELECT format('%2$s %1$s %s', 'a', 'b')", Some("b a b")),
        ("SELECT format('%s %1$s %s', 'a', 'b')", Some("a a b")),
        ("SELECT format('100%% of %s', 'it')", Some("100% of it")),
        ("SELECT format('%s', 1, 2, 3)", Some("1")),
        ("SELECT format(NULL, 1)", None),
        ("SELECT format('plain')", Some("plain")),
        ("SELECT pg_typeof(format('%s', 1))", Some("text")),
        (
            "SELECT quote_ident('Foo'), quote_ident('foo'), quote_ident('user')",
            Some("\"Foo\""),
        ),
        ("SELECT quote_literal(E'O''Reilly\\\\x')", Some("E'O''Reilly\\\\x'")),
        // The boolean cast to text, not its output function.
        ("SELECT quote_literal(true)", Some("'true'")),
        ("SELECT quote_literal(1e20::float8)", Some("'1e+20'")),
        ("SELECT quote_literal(NULL::text)", None),
        ("SELECT quote_nullable(NULL::text)", Some("NULL")),
        ("SELECT quote_nullable(42)", Some("'42'")),
    ] {
        assert_eq!(one(&client, sql).await.as_deref(), expected, "{sql}");
    }

    // A column of each type, row by row.
    client
        .batch_execute(
            "CREATE TABLE fmt_src (i int, t text, f float8, b boolean);
             INSERT INTO fmt_src VALUES (1, 'one', 0.1, true), (2, NULL, -2.5, false),
                                        (3, 'Three', NULL, NULL)",
        )
        .await
        .unwrap();
    let r = rows(
        &client,
        "SELECT format('%s:%s:%s:%s:%L:%I', i, t, f, b, t, 'c' || i) FROM fmt_src ORDER BY i",
    )
    .await;
    let got: Vec<_> = r.into_iter().map(|row| row[0].clone().unwrap()).collect();
    assert_eq!(
        got,
        [
            "1:one:0.1:t:'one':c1",
            "2::-2.5:f:NULL:c2",
            "3:Three:::'Three':c3",
        ]
    );

    // The extended protocol, with typed parameters.
    let row = client
        .query_one(
            "SELECT format($1::text, $2::int, $3::text)",
            &[&"SET effective_io_concurrency = %s; -- %L", &16i32, &"x'y"],
        )
        .await
        .unwrap();
    assert_eq!(
        row.get::<_, String>(0),
        "SET effective_io_concurrency = 16; -- 'x''y'"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gexec_runs_the_statements_format_builds() {
    let server = TestServer::start("format-gexec");
    let script = server.data_dir.with_extension("gexec.sql");
    std::fs::write(
        &script,
        "SELECT format('CREATE TABLE %I (a int)', name) \
           FROM unnest(ARRAY['eic_plain', 'Eic Mixed', 'select']) AS name \\gexec\n\
         SELECT format('INSERT INTO %I VALUES (%s)', name, n) \
           FROM unnest(ARRAY['eic_plain', 'Eic Mixed', 'select'], ARRAY[1, 16, 256]) AS u(name, n) \\gexec\n\
         SELECT format('SET effective_io_concurrency = %s', x) FROM unnest(ARRAY[0, 16]) x \\gexec\n\
         SHOW effective_io_concurrency;\n",
    )
    .unwrap();
    let out = server.psql_ok(&["-At", "-f", script.to_str().unwrap()]);
    let _ = std::fs::remove_file(&script);
    assert_eq!(
        out,
        "CREATE TABLE\nCREATE TABLE\nCREATE TABLE\n\
         INSERT 0 1\nINSERT 0 1\nINSERT 0 1\n\
         SET\nSET\n16\n"
    );

    let client = server.client().await;
    let tables = rows(
        &client,
        "SELECT relname FROM pg_class WHERE relname IN ('eic_plain', 'Eic Mixed', 'select') ORDER BY relname",
    )
    .await;
    let names: Vec<_> = tables.into_iter().map(|r| r[0].clone().unwrap()).collect();
    assert_eq!(names, ["Eic Mixed", "eic_plain", "select"]);
    assert_eq!(
        one(
            &client,
            "SELECT (SELECT a FROM eic_plain) + (SELECT a FROM \"Eic Mixed\") + (SELECT a FROM \"select\")"
        )
        .await
        .as_deref(),
        Some("273")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn format_errors_are_postgres_errors_and_the_session_goes_on() {
    let server = TestServer::start("format-errors");
    let client = server.client().await;
    let percent = Some("For a single \"%\" use \"%%\".".to_string());

    for (sql, code, message, hint) in [
        (
            "SELECT format('%s %s', 1)",
            "22023",
            "too few arguments for format()",
            None,
        ),
        (
            "SELECT format('%x', 1)",
            "22023",
            "unrecognized format() type specifier \"x\"",
            percent.clone(),
        ),
        (
            "SELECT format('%I', NULL)",
            "22004",
            "null values cannot be formatted as an SQL identifier",
            None,
        ),
        (
            "SELECT format('abc %')",
            "22023",
            "unterminated format() type specifier",
            percent.clone(),
        ),
        (
            "SELECT format('%0$s', 1)",
            "22023",
            "format specifies argument 0, but arguments are numbered from 1",
            None,
        ),
        (
            "SELECT format('%*s', 'x', 'a')",
            "22P02",
            "invalid input syntax for type integer: \"x\"",
            None,
        ),
        (
            "SELECT format('%2147483648s', 'a')",
            "22003",
            "number is out of range",
            None,
        ),
    ] {
        let (got_code, got_message, got_hint) = error(&client, sql).await;
        assert_eq!(
            (got_code.as_str(), got_message.as_str(), got_hint),
            (code, message, hint),
            "{sql}"
        );
    }

    // An error in the middle of a table's rows.
    client
        .batch_execute("CREATE TABLE names (n text); INSERT INTO names VALUES ('a'), (NULL)")
        .await
        .unwrap();
    let (code, _, _) = error(&client, "SELECT format('%I', n) FROM names").await;
    assert_eq!(code, "22004");

    // The session goes on, inside and after a failed transaction.
    assert_eq!(
        one(&client, "SELECT format('still %s', 'here')")
            .await
            .as_deref(),
        Some("still here")
    );
    client.batch_execute("BEGIN").await.unwrap();
    let (code, _, _) = error(&client, "SELECT format('%s %s', 1)").await;
    assert_eq!(code, "22023");
    let (code, _, _) = error(&client, "SELECT 1").await;
    assert_eq!(code, "25P02", "the transaction is aborted");
    client.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(
        one(&client, "SELECT format('%I', 'after')")
            .await
            .as_deref(),
        Some("after")
    );
}
