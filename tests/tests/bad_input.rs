//! Bad input: malformed and invalid SQL, and malformed protocol messages, each answered
//! as PostgreSQL 18 answers it — the same SQLSTATE, the same message, the same severity,
//! and the same fate for the connection (it goes on, or the server hangs up) — and after
//! all of it the server still answers `SELECT 1` on a fresh connection.
//!
//! Every expectation here is PostgreSQL 18's, not iolab's: the two `*_match_postgres`
//! tests run the same cases against a real PostgreSQL 18 and must pass there too:
//!
//! ```text
//! /work/shared/tools/pg18-reference start
//! IOLAB_REFERENCE_PORT=5433 cargo test -p iolab-tests --test bad_input -- --ignored match_postgres
//! ```
//!
//! Where iolab's wording has to differ (DataFusion does not tell us something
//! PostgreSQL's message contains), a case asserts the stable part and says why. Where
//! iolab is wrong today, the case is its own test, marked `#[ignore]` with the reason;
//! it asserts PostgreSQL's behaviour and is meant to be un-ignored by the fix.
//!
//! Things PostgreSQL does that may surprise: a message whose length field is impossible
//! (below 4, negative, beyond 1 GB) or a stream that ends inside a message is not
//! answered at all — the backend logs it and hangs up, because the stream can no longer
//! be trusted to carry an ErrorResponse to anyone. CopyData, CopyDone and CopyFail outside
//! a COPY are ignored. A second Parse of a named statement is an error.

use std::time::Duration;

use futures::SinkExt;
use iolab_tests::raw::{self, Backend, RawConnection};
use iolab_tests::tokio_postgres::error::{DbError, ErrorPosition};
use iolab_tests::tokio_postgres::{self, Client, NoTls, SimpleQueryMessage};
use iolab_tests::TestServer;

/// The servers here hold little data; a small buffer pool keeps several of them cheap.
const SERVER_ARGS: &[&str] = &["-c", "shared_buffers=16MB"];

fn start_server(name: &str) -> TestServer {
    TestServer::start_with(name, SERVER_ARGS)
}

/// The port of the reference PostgreSQL 18 for the `*_match_postgres` tests.
fn reference_port() -> u16 {
    std::env::var("IOLAB_REFERENCE_PORT")
        .expect("set IOLAB_REFERENCE_PORT to the port of a PostgreSQL 18 (e.g. 5433)")
        .parse()
        .expect("IOLAB_REFERENCE_PORT is a port number")
}

async fn connect(port: u16) -> Client {
    let conn_str = format!("host=127.0.0.1 port={port} user=postgres dbname=postgres");
    let (client, conn) = tokio_postgres::connect(&conn_str, NoTls)
        .await
        .expect("connect");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
}

// ---------------------------------------------------------------------------------------
// Malformed and invalid SQL
// ---------------------------------------------------------------------------------------

/// The tables the SQL cases refer to (created afresh; the reference server may have them
/// from an earlier run).
const SETUP: &str =
    "DROP TABLE IF EXISTS bad_items, bad_pairs, bad_required, bad_copy, bad_x, bad_dup, bad_pk;
    CREATE TABLE bad_items (a int, b text, c varchar(3), d smallint);
    CREATE TABLE bad_pairs (a int, e int);
    CREATE TABLE bad_required (a int NOT NULL, b text);
    CREATE TABLE bad_copy (a int, b text);
    INSERT INTO bad_items VALUES (1, 'x', 'abc', 1);
    INSERT INTO bad_pairs VALUES (1, 2), (3, 4)";

/// What an error's message must be.
#[derive(Clone, Copy, Debug)]
enum Says {
    Exactly(&'static str),
    /// iolab's own words (for what PostgreSQL has and iolab has not).
    Anything,
}

/// One statement that must fail, and how.
#[derive(Clone, Copy, Debug)]
struct SqlCase {
    sql: &'static str,
    code: &'static str,
    says: Says,
    /// The caret position (1-based characters), for syntax errors and unknown names.
    position: Option<u32>,
    /// Also run it through the extended protocol (Parse/Bind/Execute).
    extended: bool,
    /// PostgreSQL fails it too; false for what only iolab refuses (0A000).
    postgres_fails: bool,
}

const fn fails(sql: &'static str, code: &'static str, message: &'static str) -> SqlCase {
    SqlCase {
        sql,
        code,
        says: Says::Exactly(message),
        position: None,
        extended: true,
        postgres_fails: true,
    }
}

impl SqlCase {
    const fn at(self, position: u32) -> SqlCase {
        SqlCase {
            position: Some(position),
            ..self
        }
    }

    const fn simple_only(self) -> SqlCase {
        SqlCase {
            extended: false,
            ..self
        }
    }

    /// Unsupported in iolab (0A000 in its own words); PostgreSQL runs it.
    const fn unsupported(sql: &'static str) -> SqlCase {
        SqlCase {
            sql,
            code: "0A000",
            says: Says::Anything,
            position: None,
            extended: true,
            postgres_fails: false,
        }
    }
}

const SQL_CASES: &[SqlCase] = &[
    // Syntax errors, with the caret where PostgreSQL puts it.
    fails("SELEC 1", "42601", "syntax error at or near \"SELEC\"").at(1),
    fails("SELECT 1 FROM bad_items WHERE a = = 1", "42601", "syntax error at or near \"=\"").at(35),
    fails("SELECT (1", "42601", "syntax error at end of input").at(10),
    fails("SELECT 1 +", "42601", "syntax error at end of input").at(11),
    fails("SELECT 'abc", "42601", "unterminated quoted string at or near \"'abc\"").at(8),
    fails("SELECT \"abc", "42601", "unterminated quoted identifier at or near \"\"abc\"").at(8),
    fails("SELECT $$abc", "42601", "unterminated dollar-quoted string at or near \"$$abc\"").at(8),
    fails("SELECT 1 /* never closed", "42601", "unterminated /* comment at or near \"/* never closed\"").at(10),
    fails("CLUSTER (123)", "42601", "syntax error at or near \"123\"").at(10),
    fails("CLUSTER (verbose, 5)", "42601", "syntax error at or near \"5\"").at(19),
    fails("CLUSTER bad_items USING 5", "42601", "syntax error at or near \"5\"").at(25),
    // (PostgreSQL puts the caret at position 8; DataFusion's error does not say where.)
    fails("SELECT \"\" FROM bad_items", "42601", "zero-length delimited identifier at or near \"\"\"\""),
    fails("INSERT INTO bad_items VALUES (1, 'a', 'b', 1, 5)", "42601", "INSERT has more expressions than target columns"),
    // Names that do not resolve.
    fails("SELECT * FROM nosuch", "42P01", "relation \"nosuch\" does not exist").at(15),
    fails("SELECT * FROM nosuchschema.t", "42P01", "relation \"nosuchschema.t\" does not exist").at(15),
    fails("SELECT * FROM public.nosuch", "42P01", "relation \"public.nosuch\" does not exist").at(15),
    fails("INSERT INTO nosuch VALUES (1)", "42P01", "relation \"nosuch\" does not exist").at(13),
    fails("SELECT x.a FROM bad_items", "42P01", "missing FROM-clause entry for table \"x\""),
    fails("SELECT zz FROM bad_items", "42703", "column \"zz\" does not exist").at(8),
    fails("SELECT bad_items.zz FROM bad_items", "42703", "column bad_items.zz does not exist").at(8),
    fails("INSERT INTO bad_items (zz) VALUES (1)", "42703", "column \"zz\" of relation \"bad_items\" does not exist"),
    fails("SELECT a FROM bad_items, bad_pairs", "42702", "column reference \"a\" is ambiguous"),
    // DataFusion names no argument types; iolab reads them off constant arguments, as
    // PostgreSQL's parser types them (server/src/error_position.rs).
    fails("SELECT nosuchfn(1)", "42883", "function nosuchfn(integer) does not exist").at(8),
    fails("SELECT sum(b) FROM bad_items", "42883", "function sum(text) does not exist").at(8),
    fails("SELECT lower(a) FROM bad_items", "42883", "function lower(integer) does not exist").at(8),
    fails("SELECT a + b FROM bad_items", "42883", "operator does not exist: integer + text"),
    fails("SELECT 'x'::nosuchtype", "42704", "type \"nosuchtype\" does not exist"),
    fails("CREATE TABLE bad_x (a nosuchtype)", "42704", "type \"nosuchtype\" does not exist"),
    // Values that are not values of their type, or do not fit it.
    fails("SELECT 'abc'::int", "22P02", "invalid input syntax for type integer: \"abc\"").at(8),
    fails("SELECT 'maybe'::boolean", "22P02", "invalid input syntax for type boolean: \"maybe\"").at(8),
    fails("INSERT INTO bad_items (a) VALUES ('x')", "22P02", "invalid input syntax for type integer: \"x\"").at(35),
    fails("SELECT 'abc'::date", "22007", "invalid input syntax for type date: \"abc\"").at(8),
    fails("SELECT '2024-13-45'::date", "22008", "date/time field value out of range: \"2024-13-45\""),
    fails("SELECT 1/0", "22012", "division by zero"),
    fails("SELECT 1.5::numeric / 0", "22012", "division by zero"),
    fails("SELECT 40000::smallint", "22003", "smallint out of range"),
    fails("SELECT 99999999999999999999::bigint", "22003", "bigint out of range"),
    fails("SELECT 123.45::numeric(4,2)", "22003", "numeric field overflow"),
    fails("INSERT INTO bad_items (c) VALUES ('abcd')", "22001", "value too long for type character varying(3)"),
    fails("INSERT INTO bad_required (b) VALUES ('x')", "23502",
        "null value in column \"a\" of relation \"bad_required\" violates not-null constraint"),
    fails("INSERT INTO bad_required VALUES (NULL, 'x')", "23502",
        "null value in column \"a\" of relation \"bad_required\" violates not-null constraint"),
    fails("SELECT (SELECT a FROM bad_pairs UNION ALL SELECT a FROM bad_pairs)", "21000",
        "more than one row returned by a subquery used as an expression"),
    // Grouping, ordering, limits, WHERE.
    fails("SELECT a, count(*) FROM bad_items", "42803",
        "column \"bad_items.a\" must appear in the GROUP BY clause or be used in an aggregate function"),
    fails("SELECT b FROM bad_items GROUP BY a", "42803",
        "column \"bad_items.b\" must appear in the GROUP BY clause or be used in an aggregate function"),
    fails("SELECT a FROM bad_items HAVING a > 1", "42803",
        "column \"bad_items.a\" must appear in the GROUP BY clause or be used in an aggregate function"),
    fails("SELECT count(*) FROM bad_items WHERE count(*) > 1", "42803", "aggregate functions are not allowed in WHERE"),
    fails("SELECT a FROM bad_items ORDER BY 5", "42P10", "ORDER BY position 5 is not in select list"),
    fails("SELECT a FROM bad_items GROUP BY 2", "42P10", "GROUP BY position 2 is not in select list"),
    fails("SELECT a FROM bad_items LIMIT -1", "2201W", "LIMIT must not be negative"),
    fails("SELECT a FROM bad_items WHERE a", "42804", "argument of WHERE must be type boolean, not type integer"),
    // (Through the extended protocol the client itself refuses to bind no value to $1.)
    fails("SELECT $1", "42P02", "there is no parameter $1").simple_only(),
    // DDL on what exists or repeats.
    fails("CREATE TABLE bad_items (a int)", "42P07", "relation \"bad_items\" already exists"),
    fails("CREATE TABLE bad_dup (a int, a int)", "42701", "column \"a\" specified more than once"),
    // Settings.
    fails("SET foo = 1", "42704", "unrecognized configuration parameter \"foo\""),
    fails("SHOW foo", "42704", "unrecognized configuration parameter \"foo\""),
    fails("RESET foo", "42704", "unrecognized configuration parameter \"foo\""),
    fails("SET effective_io_concurrency = 'abc'", "22023", "invalid value for parameter \"effective_io_concurrency\": \"abc\""),
    fails("SET effective_io_concurrency = -1", "22023",
        "-1 is outside the valid range for parameter \"effective_io_concurrency\" (0 .. 1000)"),
    fails("SET work_mem = 'lots'", "22023", "invalid value for parameter \"work_mem\": \"lots\""),
    fails("SET shared_buffers = '1GB'", "55P02", "parameter \"shared_buffers\" cannot be changed without restarting the server"),
    // What iolab does not have (PostgreSQL runs these).
    SqlCase::unsupported("CREATE INDEX bad_expr ON bad_items (lower(b))"),
    SqlCase::unsupported("DELETE FROM bad_items RETURNING old.a"),
    SqlCase::unsupported("UPDATE bad_items SET a = 2 RETURNING old.a, new.a"),
    SqlCase::unsupported("SELECT 1::bit(2)"),
    SqlCase::unsupported("DO $$ BEGIN PERFORM 1; END $$"),
    SqlCase::unsupported("CREATE TABLE bad_parted (a int) PARTITION BY RANGE (a)"),
    SqlCase::unsupported("CREATE TABLE bad_part PARTITION OF bad_items FOR VALUES FROM (1) TO (2)"),
    SqlCase::unsupported("CREATE TABLE bad_child (x int) INHERITS (bad_items)"),
    SqlCase::unsupported("SELECT x.a FROM bad_items x, bad_items y FOR UPDATE"),
];

/// Why `err` is not what `case` expects, if it is not.
fn mismatch(case: &SqlCase, protocol: &str, err: &tokio_postgres::Error) -> Option<String> {
    let Some(db) = err.as_db_error() else {
        return Some(format!(
            "{protocol}: {:?}: not a database error: {err}",
            case.sql
        ));
    };
    let said = |db: &DbError| {
        format!(
            "{} {:?} (position {:?})",
            db.code().code(),
            db.message(),
            db.position()
        )
    };
    let message_ok = match case.says {
        Says::Exactly(m) => db.message() == m,
        Says::Anything => true,
    };
    let position_ok = match case.position {
        Some(p) => db.position() == Some(&ErrorPosition::Original(p)),
        None => true,
    };
    let ok = db.code().code() == case.code && db.severity() == "ERROR" && message_ok && position_ok;
    (!ok).then(|| {
        format!(
            "{protocol}: {:?}\n    expected {} {:?} (position {:?})\n    got      {}",
            case.sql,
            case.code,
            case.says,
            case.position,
            said(db)
        )
    })
}

/// `SELECT 1` on a connection that just had an error.
async fn still_answers(client: &Client) -> Result<(), String> {
    let rows = client
        .simple_query("SELECT 1")
        .await
        .map_err(|e| format!("SELECT 1 failed afterwards: {e}"))?;
    match rows.iter().find_map(|m| match m {
        SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
        _ => None,
    }) {
        Some(one) if one == "1" => Ok(()),
        other => Err(format!("SELECT 1 afterwards returned {other:?}")),
    }
}

/// Runs every case (on PostgreSQL, only those PostgreSQL fails too) through the simple
/// and the extended protocol, and reports every mismatch at once.
async fn run_sql_cases(client: &Client, on_postgres: bool) {
    client.batch_execute(SETUP).await.expect("set-up");
    let mut problems = Vec::new();
    let mut checked = 0;
    for case in SQL_CASES
        .iter()
        .filter(|c| c.postgres_fails || !on_postgres)
    {
        checked += 1;
        match client.simple_query(case.sql).await {
            Ok(_) => problems.push(format!("simple: {:?} succeeded", case.sql)),
            Err(e) => problems.extend(mismatch(case, "simple", &e)),
        }
        if let Err(p) = still_answers(client).await {
            problems.push(format!("simple: after {:?}: {p}", case.sql));
        }
        if case.extended {
            match client.query(case.sql, &[]).await {
                Ok(_) => problems.push(format!("extended: {:?} succeeded", case.sql)),
                Err(e) => problems.extend(mismatch(case, "extended", &e)),
            }
            if let Err(p) = still_answers(client).await {
                problems.push(format!("extended: after {:?}: {p}", case.sql));
            }
        }
    }
    assert!(checked >= 30, "only {checked} SQL cases");
    assert!(
        problems.is_empty(),
        "{} of {checked} cases went wrong:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

fn db_error(err: &tokio_postgres::Error) -> &DbError {
    err.as_db_error()
        .unwrap_or_else(|| panic!("not a database error: {err:?}"))
}

/// An error in a transaction block fails the block: everything up to ROLLBACK is refused
/// with 25P02, through either protocol; COMMIT then rolls back.
async fn failed_transaction_block(client: &Client) {
    client.batch_execute(SETUP).await.expect("set-up");
    client.batch_execute("BEGIN").await.unwrap();
    client
        .batch_execute("INSERT INTO bad_pairs VALUES (5, 6)")
        .await
        .unwrap();
    let err = client.batch_execute("SELECT 1/0").await.unwrap_err();
    assert_eq!(db_error(&err).code().code(), "22012");
    let refused = "current transaction is aborted, commands ignored until end of transaction block";
    for attempt in ["SELECT 1", "INSERT INTO bad_pairs VALUES (7, 8)"] {
        let err = client.simple_query(attempt).await.unwrap_err();
        assert_eq!(
            (db_error(&err).code().code(), db_error(&err).message()),
            ("25P02", refused),
            "{attempt}"
        );
    }
    let err = client.query("SELECT 1", &[]).await.unwrap_err();
    assert_eq!(
        (db_error(&err).code().code(), db_error(&err).message()),
        ("25P02", refused),
        "extended"
    );
    client
        .batch_execute("COMMIT")
        .await
        .expect("COMMIT of a failed block (it rolls back)");
    still_answers(client).await.unwrap();
    let row = client
        .query_one("SELECT count(*) FROM bad_pairs WHERE a >= 5", &[])
        .await
        .unwrap();
    assert_eq!(
        row.get::<_, i64>(0),
        0,
        "the failed block's INSERT was rolled back"
    );
}

/// COPY FROM STDIN with bad rows: 22P04 (or the column type's input error) with a
/// CONTEXT line naming the table, the line and the row.
async fn copy_errors_name_the_line(client: &Client) {
    client.batch_execute(SETUP).await.expect("set-up");
    for (data, code, message, context) in [
        (
            &b"1\tone\n2\n"[..],
            "22P04",
            "missing data for column \"b\"",
            "COPY bad_copy, line 2: \"2\"",
        ),
        (
            &b"1\tone\ttwo\n"[..],
            "22P04",
            "extra data after last expected column",
            "COPY bad_copy, line 1: \"1\tone\ttwo\"",
        ),
        (
            &b"x\tone\n"[..],
            "22P02",
            "invalid input syntax for type integer: \"x\"",
            "COPY bad_copy, line 1, column a: \"x\"",
        ),
    ] {
        let sink = client
            .copy_in::<_, &'static [u8]>("COPY bad_copy FROM STDIN")
            .await
            .expect("COPY starts");
        futures::pin_mut!(sink);
        let result = match sink.send(data).await {
            Ok(()) => sink.finish().await.map(|_| ()),
            Err(e) => Err(e),
        };
        let err = result.expect_err("a bad COPY row fails the COPY");
        let db = db_error(&err);
        assert_eq!(
            (db.code().code(), db.message(), db.where_()),
            (code, message, Some(context)),
            "{data:?}"
        );
        still_answers(client).await.unwrap();
    }
    let row = client
        .query_one("SELECT count(*) FROM bad_copy", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 0, "a failed COPY loads nothing");
}

/// An empty query string is not an error, through either protocol.
async fn empty_queries(client: &Client) {
    for sql in ["", " ", ";", "-- just a comment"] {
        let messages = client
            .simple_query(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql:?}: {e}"));
        assert!(
            messages
                .iter()
                .all(|m| !matches!(m, SimpleQueryMessage::Row(_))),
            "{sql:?}"
        );
    }
    let rows = client
        .query("", &[])
        .await
        .expect("an empty prepared statement");
    assert!(rows.is_empty());
    still_answers(client).await.unwrap();
}

/// `SELECT * FORM t`: PostgreSQL stops at FORM (a `*` has no alias).
async fn misspelt_from_after_a_star(client: &Client) {
    client.batch_execute(SETUP).await.expect("set-up");
    let err = client
        .simple_query("SELECT * FORM bad_items")
        .await
        .unwrap_err();
    let db = db_error(&err);
    assert_eq!(
        (db.code().code(), db.message()),
        ("42601", "syntax error at or near \"FORM\"")
    );
    assert_eq!(db.position(), Some(&ErrorPosition::Original(10)));
}

/// int4 + int4 that does not fit is an error, not a wrapped-around value.
async fn integer_overflow(client: &Client) {
    for (sql, message) in [
        ("SELECT 2147483647::int + 1::int", "integer out of range"),
        // (`::int` on the divisor too: iolab reads the constant -1 as a bigint.)
        (
            "SELECT (-2147483648)::int / (-1)::int",
            "integer out of range",
        ),
        (
            "SELECT 9223372036854775807::bigint + 1::bigint",
            "bigint out of range",
        ),
        (
            "SELECT 32767::smallint + 1::smallint",
            "smallint out of range",
        ),
        ("SELECT (-2147483647)::int - 2::int", "integer out of range"),
        (
            "SELECT x * x FROM (VALUES (3037000500::bigint)) AS v(x)",
            "bigint out of range",
        ),
        (
            "SELECT x / 0 FROM (VALUES (1::int)) AS v(x)",
            "division by zero",
        ),
    ] {
        let err = client.simple_query(sql).await.expect_err(sql);
        let db = db_error(&err);
        let code = if message == "division by zero" {
            "22012"
        } else {
            "22003"
        };
        assert_eq!((db.code().code(), db.message()), (code, message), "{sql}");
    }
    // sum() of a bigint is numeric and does not overflow.
    let row = client
        .query_one(
            "SELECT sum(x)::text, pg_typeof(sum(x))::text FROM (VALUES (9223372036854775807::bigint), (1::bigint)) AS v(x)",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, String>(1)),
        ("9223372036854775808".to_string(), "numeric".to_string())
    );
    // What fits is computed as before.
    let row = client
        .query_one(
            "SELECT x * x - 1, (x + 7) / 2 FROM (VALUES (3037000499::bigint)) AS v(x)",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, i64>(0), row.get::<_, i64>(1)),
        (9223372030926249000, 1518500253)
    );
}

/// Errors raised while rows are being produced (not while planning) keep their SQLSTATE
/// in the simple protocol too.
async fn errors_while_rows_stream(client: &Client) {
    client.batch_execute(SETUP).await.expect("set-up");
    for (sql, code, message) in [
        (
            "SELECT sqrt(-1)",
            "2201F",
            "cannot take square root of a negative number",
        ),
        (
            "SELECT sqrt(a - 5) FROM bad_items",
            "2201F",
            "cannot take square root of a negative number",
        ),
    ] {
        let err = client.simple_query(sql).await.expect_err(sql);
        let db = db_error(&err);
        assert_eq!((db.code().code(), db.message()), (code, message), "{sql}");
        let err = client.query(sql, &[]).await.expect_err(sql);
        let db = db_error(&err);
        assert_eq!(
            (db.code().code(), db.message()),
            (code, message),
            "{sql} (extended)"
        );
        still_answers(client).await.unwrap();
    }
}

/// DROP TABLE names the kind of object it looked for.
async fn drop_of_a_missing_table(client: &Client) {
    let err = client
        .simple_query("DROP TABLE nosuch_table")
        .await
        .unwrap_err();
    let db = db_error(&err);
    assert_eq!(
        (db.code().code(), db.message()),
        ("42P01", "table \"nosuch_table\" does not exist")
    );
}

/// An identifier longer than NAMEDATALEN-1 (63 bytes) is truncated with a NOTICE
/// (42622), not refused.
async fn too_long_identifiers_are_truncated(port: u16) {
    let long = "a".repeat(70);
    let short = "a".repeat(63);
    let mut conn = tokio::task::spawn_blocking(move || RawConnection::start(port))
        .await
        .unwrap();
    let sql = format!("DROP TABLE IF EXISTS {short}; CREATE TABLE {long} (x int); SELECT count(*) FROM {short}; DROP TABLE {short}");
    let replies = tokio::task::spawn_blocking(move || {
        conn.send(&raw::query(&sql));
        conn.until_ready()
    })
    .await
    .unwrap();
    assert!(
        replies.iter().all(|m| m.as_error().is_none()),
        "{replies:?}"
    );
    let truncated = format!("identifier \"{long}\" will be truncated to \"{short}\"");
    let notices: Vec<_> = replies
        .iter()
        .filter_map(|m| match m {
            Backend::Notice(f) if f.code() == "42622" => Some(f.message().to_string()),
            _ => None,
        })
        .collect();
    assert!(notices.contains(&truncated), "{notices:?}");
}

/// ROLLBACK TO SAVEPOINT is not ROLLBACK: outside a block it is an error, and inside one
/// it names a savepoint that must exist.
async fn rollback_to_savepoint(client: &Client) {
    let err = client
        .simple_query("ROLLBACK TO SAVEPOINT s")
        .await
        .unwrap_err();
    let db = db_error(&err);
    assert_eq!(
        (db.code().code(), db.message()),
        (
            "25P01",
            "ROLLBACK TO SAVEPOINT can only be used in transaction blocks"
        )
    );
    client.batch_execute("BEGIN").await.unwrap();
    let err = client
        .simple_query("ROLLBACK TO SAVEPOINT nosuch")
        .await
        .unwrap_err();
    let db = db_error(&err);
    assert_eq!(
        (db.code().code(), db.message()),
        ("3B001", "savepoint \"nosuch\" does not exist")
    );
    client.batch_execute("ROLLBACK").await.unwrap();
}

/// A NOT NULL violation shows the row that failed.
async fn not_null_violation_shows_the_row(client: &Client) {
    client.batch_execute(SETUP).await.expect("set-up");
    let err = client
        .simple_query("INSERT INTO bad_required (b) VALUES ('x')")
        .await
        .unwrap_err();
    let db = db_error(&err);
    assert_eq!(db.code().code(), "23502");
    assert_eq!(db.detail(), Some("Failing row contains (null, x)."));
}

/// A fresh connection answers `SELECT 1` and the server process is alive.
async fn assert_server_healthy(server: &mut TestServer) {
    let client = server.client().await;
    still_answers(&client)
        .await
        .unwrap_or_else(|e| panic!("{e}; server log:\n{}", server.log()));
    assert!(
        server.is_running(),
        "the server exited; log:\n{}",
        server.log()
    );
}

/// Runs `$case(&client)` on a fresh iolab, then checks the server is healthy.
macro_rules! sql_test_on_iolab {
    ($(#[$attr:meta])* $name:ident => $case:path) => {
        $(#[$attr])*
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let mut server = start_server(stringify!($name));
            let client = server.client().await;
            $case(&client).await;
            assert_server_healthy(&mut server).await;
        }
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_sql_gets_postgres_errors() {
    let mut server = start_server("bad-sql");
    let client = server.client().await;
    run_sql_cases(&client, false).await;
    assert_server_healthy(&mut server).await;
}

sql_test_on_iolab!(failed_transaction_block_refuses_statements => failed_transaction_block);
sql_test_on_iolab!(bad_copy_rows_name_their_line => copy_errors_name_the_line);
sql_test_on_iolab!(empty_queries_are_not_errors => empty_queries);
sql_test_on_iolab!(
    #[ignore = "sqlparser fails `SELECT * FORM t` at the table name (it takes FORM for an alias on `*`); iolab refuses such aliases when the rest parses (`SELECT * x`), but this error is raised before"]
    select_star_form_is_a_syntax_error_at_form => misspelt_from_after_a_star
);
sql_test_on_iolab!(integer_overflow_is_22003 => integer_overflow);
sql_test_on_iolab!(
    errors_while_rows_stream_keep_their_code => errors_while_rows_stream
);
sql_test_on_iolab!(
    drop_table_of_a_missing_table => drop_of_a_missing_table
);
sql_test_on_iolab!(
    #[ignore = "server/src/session.rs Session::run treats every ast::Statement::Rollback as ROLLBACK, ignoring its savepoint"]
    rollback_to_savepoint_is_not_rollback => rollback_to_savepoint
);
sql_test_on_iolab!(
    not_null_violation_has_a_detail => not_null_violation_shows_the_row
);

#[ignore = "server/src/sql/ddl.rs check_identifier refuses names over 63 bytes with ERROR 42622; PostgreSQL truncates them with a NOTICE (also in SELECT aliases)"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_long_identifiers_are_truncated_with_a_notice() {
    let mut server = start_server("long-identifiers");
    too_long_identifiers_are_truncated(server.port).await;
    assert_server_healthy(&mut server).await;
}

#[ignore = "needs a PostgreSQL 18: IOLAB_REFERENCE_PORT=5433"]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_cases_match_postgres() {
    let port = reference_port();
    let client = connect(port).await;
    run_sql_cases(&client, true).await;
    failed_transaction_block(&client).await;
    copy_errors_name_the_line(&client).await;
    empty_queries(&client).await;
    misspelt_from_after_a_star(&client).await;
    integer_overflow(&client).await;
    errors_while_rows_stream(&client).await;
    drop_of_a_missing_table(&client).await;
    rollback_to_savepoint(&client).await;
    not_null_violation_shows_the_row(&client).await;
    too_long_identifiers_are_truncated(port).await;
    client
        .batch_execute("DROP TABLE IF EXISTS bad_items, bad_pairs, bad_required, bad_copy")
        .await
        .unwrap();
}

// ---------------------------------------------------------------------------------------
// Malformed protocol messages
// ---------------------------------------------------------------------------------------

/// How long to wait to be sure nothing more is coming.
const QUIET: Duration = Duration::from_millis(300);

#[track_caller]
fn assert_error(message: &Backend, severity: &str, code: &str, text: &str) {
    let Some(e) = message.as_error() else {
        panic!("expected an ErrorResponse, got {message:?}")
    };
    assert_eq!(
        (e.severity(), e.code(), e.message()),
        (severity, code, text),
        "{e:?}"
    );
    assert_eq!(
        e.get(b'V'),
        Some(severity),
        "the untranslated severity: {e:?}"
    );
}

/// Exactly one ERROR, then ReadyForQuery (idle), and the connection goes on.
#[track_caller]
fn assert_one_error_then_ready(conn: &mut RawConnection, code: &str, text: &str) {
    let replies = conn.until_ready();
    let errors: Vec<_> = replies.iter().filter(|m| m.as_error().is_some()).collect();
    assert_eq!(errors.len(), 1, "{replies:?}");
    assert_error(errors[0], "ERROR", code, text);
    assert_eq!(
        replies.last(),
        Some(&Backend::ReadyForQuery(b'I')),
        "{replies:?}"
    );
    assert_answers_select_1(conn);
}

/// A FATAL error and the server hangs up.
#[track_caller]
fn assert_fatal_then_closed(conn: &mut RawConnection, code: &str, text: &str) {
    let replies = conn.until_closed();
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_error(&replies[0], "FATAL", code, text);
}

/// The server hangs up without a word.
#[track_caller]
fn assert_closed_silently(conn: &mut RawConnection) {
    let replies = conn.until_closed();
    assert!(
        replies.is_empty(),
        "expected the server to hang up without replying, got {replies:?}"
    );
}

#[track_caller]
fn assert_answers_select_1(conn: &mut RawConnection) {
    assert_eq!(
        conn.simple_query_column("SELECT 1"),
        vec![Some("1".to_string())]
    );
}

fn unknown_message_type(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::message(b'?', &[]));
    assert_fatal_then_closed(&mut conn, "08P01", "invalid frontend message type 63");
}

fn length_below_four(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::message_with_length(b'Q', 3, &[]));
    assert_closed_silently(&mut conn);
}

fn huge_length(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::message_with_length(b'Q', 0x7fff_ffff, b"SELECT 1\0"));
    assert_closed_silently(&mut conn);
}

fn negative_length(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::message_with_length(b'Q', -5, b"SELECT 1\0"));
    assert_closed_silently(&mut conn);
}

fn truncated_message_then_close(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::message_with_length(b'Q', 100, b"SELECT"));
    conn.shutdown_write();
    assert_closed_silently(&mut conn);
}

fn bind_to_unknown_statement(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&[raw::bind("", "nosuch", &[], &[], &[]), raw::sync()].concat());
    assert_one_error_then_ready(
        &mut conn,
        "26000",
        "prepared statement \"nosuch\" does not exist",
    );
}

fn execute_unknown_portal(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&[raw::execute("nosuch", 0), raw::sync()].concat());
    assert_one_error_then_ready(&mut conn, "34000", "portal \"nosuch\" does not exist");
}

fn describe_unknown_statement_and_portal(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&[raw::describe(b'S', "nosuch"), raw::sync()].concat());
    assert_one_error_then_ready(
        &mut conn,
        "26000",
        "prepared statement \"nosuch\" does not exist",
    );
    conn.send(&[raw::describe(b'P', "nosuch"), raw::sync()].concat());
    assert_one_error_then_ready(&mut conn, "34000", "portal \"nosuch\" does not exist");
}

fn bind_with_wrong_parameter_count(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(
        &[
            raw::parse("s1", "SELECT $1::int", &[]),
            raw::bind("", "s1", &[], &[], &[]),
            raw::sync(),
        ]
        .concat(),
    );
    assert_one_error_then_ready(
        &mut conn,
        "08P01",
        "bind message supplies 0 parameters, but prepared statement \"s1\" requires 1",
    );
    conn.send(
        &[
            raw::bind("", "s1", &[], &[Some(b"1"), Some(b"2")], &[]),
            raw::sync(),
        ]
        .concat(),
    );
    assert_one_error_then_ready(
        &mut conn,
        "08P01",
        "bind message supplies 2 parameters, but prepared statement \"s1\" requires 1",
    );
    // A statement iolab does not plan at Parse still counts its `$n`, as PostgreSQL does.
    conn.send(
        &[
            raw::parse(
                "",
                "DECLARE c CURSOR WITH HOLD FOR SELECT $1::int, $2::int",
                &[],
            ),
            raw::bind("", "", &[], &[Some(b"1")], &[]),
            raw::sync(),
        ]
        .concat(),
    );
    assert_one_error_then_ready(
        &mut conn,
        "08P01",
        "bind message supplies 1 parameters, but prepared statement \"\" requires 2",
    );
}

fn describe_with_bad_target(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&[raw::describe(b'Z', ""), raw::sync()].concat());
    assert_one_error_then_ready(&mut conn, "08P01", "invalid DESCRIBE message subtype 90");
}

fn close_with_bad_target(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&[raw::close(b'Z', "nosuch"), raw::sync()].concat());
    assert_one_error_then_ready(&mut conn, "08P01", "invalid CLOSE message subtype 90");
}

fn close_of_unknown_statement_is_not_an_error(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(
        &[
            raw::close(b'S', "nosuch"),
            raw::close(b'P', "nosuch"),
            raw::sync(),
        ]
        .concat(),
    );
    assert_eq!(
        conn.until_ready(),
        vec![
            Backend::CloseComplete,
            Backend::CloseComplete,
            Backend::ReadyForQuery(b'I')
        ]
    );
}

/// After an error the backend skips Bind and Execute up to Sync: one error, one
/// ReadyForQuery.
fn parse_of_invalid_sql_skips_to_sync(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(
        &[
            raw::parse("", "SELEC 1", &[]),
            raw::bind("", "", &[], &[], &[]),
            raw::execute("", 0),
            raw::sync(),
        ]
        .concat(),
    );
    let replies = conn.until_ready();
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_error(
        &replies[0],
        "ERROR",
        "42601",
        "syntax error at or near \"SELEC\"",
    );
    assert_eq!(replies[1], Backend::ReadyForQuery(b'I'));
    assert_answers_select_1(&mut conn);
}

fn parse_of_two_statements(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&[raw::parse("", "SELECT 1; SELECT 2", &[]), raw::sync()].concat());
    assert_one_error_then_ready(
        &mut conn,
        "42601",
        "cannot insert multiple commands into a prepared statement",
    );
}

fn parse_of_a_name_in_use(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(
        &[
            raw::parse("dup", "SELECT 1", &[]),
            raw::parse("dup", "SELECT 2", &[]),
            raw::sync(),
        ]
        .concat(),
    );
    assert_one_error_then_ready(
        &mut conn,
        "42P05",
        "prepared statement \"dup\" already exists",
    );
    // The first definition stands; once closed, the name can be used again.
    conn.send(
        &[
            raw::bind("", "dup", &[], &[], &[]),
            raw::execute("", 0),
            raw::close(b'S', "dup"),
            raw::parse("dup", "SELECT 2", &[]),
            raw::bind("", "dup", &[], &[], &[]),
            raw::execute("", 0),
            raw::sync(),
        ]
        .concat(),
    );
    let rows: Vec<_> = conn
        .until_ready()
        .into_iter()
        .filter(|m| matches!(m, Backend::DataRow(_)))
        .collect();
    assert_eq!(
        rows,
        vec![
            Backend::DataRow(vec![Some(b"1".to_vec())]),
            Backend::DataRow(vec![Some(b"2".to_vec())])
        ]
    );
}

/// Portals end with their transaction: one bound in the extended protocol's implicit
/// transaction is gone after its Sync; one bound inside BEGIN lives until COMMIT.
fn named_portal_ends_with_its_transaction(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(
        &[
            raw::parse("", "SELECT 1", &[]),
            raw::bind("p1", "", &[], &[], &[]),
            raw::sync(),
        ]
        .concat(),
    );
    conn.until_ready();
    conn.send(&[raw::execute("p1", 0), raw::sync()].concat());
    assert_one_error_then_ready(&mut conn, "34000", "portal \"p1\" does not exist");
    conn.send(&raw::query("BEGIN"));
    conn.until_ready();
    conn.send(
        &[
            raw::parse("", "SELECT 2", &[]),
            raw::bind("p2", "", &[], &[], &[]),
            raw::sync(),
        ]
        .concat(),
    );
    conn.until_ready();
    conn.send(&[raw::execute("p2", 0), raw::sync()].concat());
    let replies = conn.until_ready();
    assert!(
        replies.contains(&Backend::DataRow(vec![Some(b"2".to_vec())])),
        "{replies:?}"
    );
    assert_eq!(replies.last(), Some(&Backend::ReadyForQuery(b'T')));
    conn.send(&raw::query("COMMIT"));
    conn.until_ready();
    conn.send(&[raw::execute("p2", 0), raw::sync()].concat());
    assert_one_error_then_ready(&mut conn, "34000", "portal \"p2\" does not exist");
}

fn query_without_terminating_nul(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::message(b'Q', b"SELECT 1"));
    assert_one_error_then_ready(&mut conn, "08P01", "invalid string in message");
}

fn query_with_invalid_utf8(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::message(b'Q', b"SELECT '\xff'\0"));
    assert_one_error_then_ready(
        &mut conn,
        "22021",
        "invalid byte sequence for encoding \"UTF8\": 0xff",
    );
}

fn parse_with_invalid_utf8(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&[raw::message(b'P', b"\0SELECT '\xfe'\0\0\0"), raw::sync()].concat());
    assert_one_error_then_ready(
        &mut conn,
        "22021",
        "invalid byte sequence for encoding \"UTF8\": 0xfe",
    );
}

/// CopyData, CopyDone and CopyFail outside a COPY are ignored (a client may still be
/// sending data for a COPY that failed).
fn copy_messages_outside_copy_are_ignored(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::message(b'd', b"1\t2\n"));
    conn.send(&raw::message(b'c', &[]));
    conn.send(&raw::message(b'f', &raw::cstring("never mind")));
    assert_eq!(conn.drain(QUIET), vec![]);
    assert_answers_select_1(&mut conn);
}

fn sync_storm(port: u16) {
    const SYNCS: usize = 1000;
    let mut conn = RawConnection::start(port);
    conn.send(&raw::sync().repeat(SYNCS));
    for i in 0..SYNCS {
        assert_eq!(
            conn.until_ready(),
            vec![Backend::ReadyForQuery(b'I')],
            "Sync {i}"
        );
    }
    assert_answers_select_1(&mut conn);
}

fn bind_with_unknown_format_code(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(
        &[
            raw::parse("", "SELECT $1::int", &[]),
            raw::bind("", "", &[7], &[Some(b"1")], &[]),
            raw::sync(),
        ]
        .concat(),
    );
    assert_one_error_then_ready(&mut conn, "22023", "unsupported format code: 7");
    // A result format code too (PostgreSQL refuses it at Execute, iolab at Bind). The
    // statement is parsed again: PostgreSQL drops the unnamed one after a bad parameter.
    conn.send(
        &[
            raw::parse("", "SELECT $1::int", &[]),
            raw::bind("", "", &[], &[Some(b"1")], &[2]),
            raw::execute("", 0),
            raw::sync(),
        ]
        .concat(),
    );
    assert_one_error_then_ready(&mut conn, "22023", "unsupported format code: 2");
    // Two parameter formats for one value.
    conn.send(
        &[
            raw::parse("", "SELECT $1::int", &[]),
            raw::bind("", "", &[0, 0], &[Some(b"1")], &[]),
            raw::sync(),
        ]
        .concat(),
    );
    assert_one_error_then_ready(
        &mut conn,
        "08P01",
        "bind message has 2 parameter formats but 1 parameters",
    );
}

fn bind_with_too_many_result_formats(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(
        &[
            raw::parse("", "SELECT 1", &[]),
            raw::bind("", "", &[], &[], &[1, 1]),
            raw::sync(),
        ]
        .concat(),
    );
    assert_one_error_then_ready(
        &mut conn,
        "08P01",
        "bind message has 2 result formats but query has 1 columns",
    );
}

/// A binary int4 of 3 bytes. PostgreSQL says `insufficient data left in message`;
/// iolab checks the length when it decodes the value and says `incorrect binary data
/// format in bind parameter …` — both 08P01, so the code is what is asserted.
fn bind_with_short_binary_value(port: u16) {
    const INT4: u32 = 23;
    let mut conn = RawConnection::start(port);
    conn.send(
        &[
            raw::parse("", "SELECT $1", &[INT4]),
            raw::bind("", "", &[1], &[Some(&[0, 0, 1])], &[]),
            raw::execute("", 0),
            raw::sync(),
        ]
        .concat(),
    );
    let replies = conn.until_ready();
    let errors: Vec<_> = replies.iter().filter_map(Backend::as_error).collect();
    assert_eq!(errors.len(), 1, "{replies:?}");
    assert_eq!(
        (errors[0].severity(), errors[0].code()),
        ("ERROR", "08P01"),
        "{replies:?}"
    );
    assert!(
        !replies.iter().any(|m| matches!(m, Backend::DataRow(_))),
        "{replies:?}"
    );
    assert_eq!(replies.last(), Some(&Backend::ReadyForQuery(b'I')));
    assert_answers_select_1(&mut conn);
}

fn bind_with_text_that_is_not_an_integer(port: u16) {
    const INT4: u32 = 23;
    let mut conn = RawConnection::start(port);
    conn.send(
        &[
            raw::parse("", "SELECT $1", &[INT4]),
            raw::bind("", "", &[], &[Some(b"abc")], &[]),
            raw::execute("", 0),
            raw::sync(),
        ]
        .concat(),
    );
    assert_one_error_then_ready(
        &mut conn,
        "22P02",
        "invalid input syntax for type integer: \"abc\"",
    );
}

/// A Bind that promises one parameter value and ends.
fn bind_with_missing_parameter_bytes(port: u16) {
    let mut conn = RawConnection::start(port);
    let mut body = raw::cstring("");
    body.extend(raw::cstring(""));
    body.extend(0i16.to_be_bytes()); // no format codes
    body.extend(1i16.to_be_bytes()); // one value … that is not there
    conn.send(
        &[
            raw::parse("", "SELECT $1::int", &[]),
            raw::message(b'B', &body),
            raw::sync(),
        ]
        .concat(),
    );
    assert_one_error_then_ready(&mut conn, "08P01", "insufficient data left in message");
}

fn password_message_after_startup(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::message(b'p', &raw::cstring("secret")));
    assert_fatal_then_closed(&mut conn, "08P01", "invalid frontend message type 112");
}

fn flush_and_sync_with_a_body(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&[raw::message(b'H', b"xxxx"), raw::sync()].concat());
    assert_one_error_then_ready(&mut conn, "08P01", "invalid message format");
    conn.send(&raw::message(b'S', b"xxxx"));
    assert_one_error_then_ready(&mut conn, "08P01", "invalid message format");
}

/// A fast-path FunctionCall ('F') for a function that does not exist (iolab has none).
fn function_call(port: u16) {
    let mut conn = RawConnection::start(port);
    let mut body = 1234i32.to_be_bytes().to_vec();
    body.extend(0i16.to_be_bytes()); // argument format codes
    body.extend(0i16.to_be_bytes()); // arguments
    body.extend(0i16.to_be_bytes()); // result format
    conn.send(&raw::message(b'F', &body));
    assert_one_error_then_ready(&mut conn, "42883", "function with OID 1234 does not exist");
}

/// Sync closes the unnamed portal; executing it afterwards names it as `""`.
fn execute_of_unnamed_portal_after_sync(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(
        &[
            raw::parse("", "SELECT 1", &[]),
            raw::bind("", "", &[], &[], &[]),
            raw::sync(),
        ]
        .concat(),
    );
    assert_eq!(
        conn.until_ready(),
        vec![
            Backend::ParseComplete,
            Backend::BindComplete,
            Backend::ReadyForQuery(b'I')
        ]
    );
    conn.send(&[raw::execute("", 0), raw::sync()].concat());
    assert_one_error_then_ready(&mut conn, "34000", "portal \"\" does not exist");
}

/// An error in the extended protocol inside a transaction block fails the block.
fn parse_error_fails_the_transaction_block(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::query("BEGIN"));
    assert_eq!(
        conn.until_ready().last(),
        Some(&Backend::ReadyForQuery(b'T'))
    );
    conn.send(&[raw::parse("", "SELEC 1", &[]), raw::sync()].concat());
    let replies = conn.until_ready();
    assert_error(
        &replies[0],
        "ERROR",
        "42601",
        "syntax error at or near \"SELEC\"",
    );
    assert_eq!(
        replies.last(),
        Some(&Backend::ReadyForQuery(b'E')),
        "{replies:?}"
    );
    conn.send(&raw::query("SELECT 1"));
    let replies = conn.until_ready();
    assert_error(
        &replies[0],
        "ERROR",
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block",
    );
    conn.send(&raw::query("ROLLBACK"));
    assert_eq!(
        conn.until_ready().last(),
        Some(&Backend::ReadyForQuery(b'I'))
    );
    assert_answers_select_1(&mut conn);
}

fn create_copy_table(conn: &mut RawConnection) {
    conn.send(&raw::query(
        "DROP TABLE IF EXISTS bad_copy_raw; CREATE TABLE bad_copy_raw (a int, b text)",
    ));
    let replies = conn.until_ready();
    assert!(
        replies.iter().all(|m| m.as_error().is_none()),
        "{replies:?}"
    );
}

fn copy_fail_ends_the_copy(port: u16) {
    let mut conn = RawConnection::start(port);
    create_copy_table(&mut conn);
    conn.send(&raw::query("COPY bad_copy_raw FROM STDIN"));
    assert_eq!(
        conn.next(raw::REPLY_TIMEOUT),
        raw::Received::Message(Backend::CopyInResponse)
    );
    conn.send(
        &[
            raw::message(b'd', b"1\tone\n"),
            raw::message(b'f', &raw::cstring("client gave up")),
        ]
        .concat(),
    );
    assert_one_error_then_ready(&mut conn, "57014", "COPY from stdin failed: client gave up");
    assert_eq!(
        conn.simple_query_column("SELECT count(*) FROM bad_copy_raw"),
        vec![Some("0".to_string())]
    );
}

/// A Query in the middle of COPY FROM STDIN: PostgreSQL reports it and, having lost
/// track of the stream, ends the session.
fn query_during_copy_in(port: u16) {
    let mut conn = RawConnection::start(port);
    create_copy_table(&mut conn);
    conn.send(&raw::query("COPY bad_copy_raw FROM STDIN"));
    assert_eq!(
        conn.next(raw::REPLY_TIMEOUT),
        raw::Received::Message(Backend::CopyInResponse)
    );
    conn.send(&raw::query("SELECT 1"));
    let replies = conn.until_closed();
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_error(
        &replies[0],
        "ERROR",
        "08P01",
        "unexpected message type 0x51 during COPY from stdin",
    );
    assert_error(
        &replies[1],
        "FATAL",
        "08P01",
        "terminating connection because protocol synchronization was lost",
    );
}

/// Terminate inside a transaction block: the server hangs up and the block's work is
/// rolled back.
fn terminate_mid_transaction(port: u16) {
    let mut conn = RawConnection::start(port);
    create_copy_table(&mut conn);
    conn.send(&raw::query(
        "BEGIN; INSERT INTO bad_copy_raw VALUES (42, 'lost')",
    ));
    assert_eq!(
        conn.until_ready().last(),
        Some(&Backend::ReadyForQuery(b'T'))
    );
    conn.send(&raw::terminate());
    assert_closed_silently(&mut conn);
    let mut other = RawConnection::start(port);
    assert_eq!(
        other.simple_query_column("SELECT count(*) FROM bad_copy_raw"),
        vec![Some("0".to_string())]
    );
}

fn empty_query_message(port: u16) {
    let mut conn = RawConnection::start(port);
    conn.send(&raw::query(""));
    assert_eq!(
        conn.until_ready(),
        vec![Backend::EmptyQueryResponse, Backend::ReadyForQuery(b'I')]
    );
}

fn startup_with_unsupported_protocol(port: u16) {
    let mut conn = RawConnection::connect(port);
    conn.send(&raw::startup_packet(
        4 << 16,
        &[("user", "postgres"), ("database", "postgres")],
    ));
    let replies = conn.until_closed();
    assert_eq!(replies.len(), 1, "{replies:?}");
    let e = replies[0]
        .as_error()
        .unwrap_or_else(|| panic!("{replies:?}"));
    // The supported range ("3.0 to 3.2" in PostgreSQL 18) is the server's own.
    assert_eq!((e.severity(), e.code()), ("FATAL", "0A000"));
    assert!(
        e.message()
            .starts_with("unsupported frontend protocol 4.0: server supports 3.0 to "),
        "{e:?}"
    );
}

fn startup_without_user(port: u16) {
    let mut conn = RawConnection::connect(port);
    conn.send(&raw::startup_packet(
        raw::PROTOCOL_3_0,
        &[("database", "postgres")],
    ));
    assert_fatal_then_closed(
        &mut conn,
        "28000",
        "no PostgreSQL user name specified in startup packet",
    );
}

/// A start-up with `parameters` is answered with AuthenticationOk (trust), then the FATAL
/// `code` `message`, then the connection closes.
fn assert_refused_after_authentication(
    port: u16,
    parameters: &[(&str, &str)],
    code: &str,
    message: &str,
) {
    let mut conn = RawConnection::connect(port);
    conn.send(&raw::startup_packet(raw::PROTOCOL_3_0, parameters));
    let replies = conn.until_closed();
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_eq!(replies[0], raw::Backend::Authentication(0), "{replies:?}");
    assert_error(&replies[1], "FATAL", code, message);
}

/// The database is checked after authentication, so AuthenticationOk comes first.
fn startup_with_unknown_database(port: u16) {
    assert_refused_after_authentication(
        port,
        &[("user", "postgres"), ("database", "nosuchdb")],
        "3D000",
        "database \"nosuchdb\" does not exist",
    );
}

/// The role is checked after authentication too, before the database.
fn startup_with_unknown_role(port: u16) {
    assert_refused_after_authentication(
        port,
        &[("user", "nosuchrole"), ("database", "nosuchdb")],
        "28000",
        "role \"nosuchrole\" does not exist",
    );
}

fn startup_without_terminator(port: u16) {
    let mut conn = RawConnection::connect(port);
    let mut body = raw::PROTOCOL_3_0.to_be_bytes().to_vec();
    body.extend(b"user\0postgres\0");
    let mut packet = (body.len() as i32 + 4).to_be_bytes().to_vec();
    packet.extend(body);
    conn.send(&packet);
    assert_fatal_then_closed(
        &mut conn,
        "08P01",
        "invalid startup packet layout: expected terminator as last byte",
    );
}

/// An HTTP request where a start-up packet belongs (its first four bytes make an
/// impossible length).
fn garbage_before_startup(port: u16) {
    let mut conn = RawConnection::connect(port);
    conn.send(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert_closed_silently(&mut conn);
}

fn startup_length_too_small(port: u16) {
    let mut conn = RawConnection::connect(port);
    conn.send(&[&4i32.to_be_bytes()[..], &raw::PROTOCOL_3_0.to_be_bytes()].concat());
    assert_closed_silently(&mut conn);
}

fn startup_length_huge(port: u16) {
    let mut conn = RawConnection::connect(port);
    conn.send(
        &[
            &0x7fff_ffffi32.to_be_bytes()[..],
            &raw::PROTOCOL_3_0.to_be_bytes(),
        ]
        .concat(),
    );
    assert_closed_silently(&mut conn);
}

fn query_before_startup(port: u16) {
    let mut conn = RawConnection::connect(port);
    conn.send(&raw::query("SELECT 1"));
    assert_closed_silently(&mut conn);
}

/// A CancelRequest with a key no session has: no reply, the connection closes, and the
/// session it might have named carries on.
fn cancel_request_with_wrong_key(port: u16) {
    let mut session = RawConnection::start(port);
    let mut conn = RawConnection::connect(port);
    conn.send(&raw::cancel_request(12345, 67890));
    assert_closed_silently(&mut conn);
    assert_answers_select_1(&mut session);
}

/// A protocol case: its name, and the function that runs it against a server's port.
type ProtocolCase = (&'static str, fn(u16));

/// The protocol cases iolab answers as PostgreSQL does.
const PROTOCOL_CASES: &[ProtocolCase] = &[
    ("huge_length", huge_length),
    ("negative_length", negative_length),
    ("truncated_message_then_close", truncated_message_then_close),
    ("bind_to_unknown_statement", bind_to_unknown_statement),
    ("execute_unknown_portal", execute_unknown_portal),
    (
        "describe_unknown_statement_and_portal",
        describe_unknown_statement_and_portal,
    ),
    (
        "close_of_unknown_statement_is_not_an_error",
        close_of_unknown_statement_is_not_an_error,
    ),
    (
        "parse_of_invalid_sql_skips_to_sync",
        parse_of_invalid_sql_skips_to_sync,
    ),
    ("parse_of_two_statements", parse_of_two_statements),
    (
        "copy_messages_outside_copy_are_ignored",
        copy_messages_outside_copy_are_ignored,
    ),
    ("sync_storm", sync_storm),
    ("bind_with_short_binary_value", bind_with_short_binary_value),
    (
        "bind_with_text_that_is_not_an_integer",
        bind_with_text_that_is_not_an_integer,
    ),
    ("copy_fail_ends_the_copy", copy_fail_ends_the_copy),
    ("terminate_mid_transaction", terminate_mid_transaction),
    ("empty_query_message", empty_query_message),
    ("garbage_before_startup", garbage_before_startup),
    ("startup_length_too_small", startup_length_too_small),
    ("startup_length_huge", startup_length_huge),
    ("query_before_startup", query_before_startup),
    (
        "cancel_request_with_wrong_key",
        cancel_request_with_wrong_key,
    ),
    ("unknown_message_type", unknown_message_type),
    (
        "startup_with_unknown_database",
        startup_with_unknown_database,
    ),
    ("startup_with_unknown_role", startup_with_unknown_role),
    (
        "bind_with_wrong_parameter_count",
        bind_with_wrong_parameter_count,
    ),
    ("describe_with_bad_target", describe_with_bad_target),
    ("close_with_bad_target", close_with_bad_target),
    ("parse_of_a_name_in_use", parse_of_a_name_in_use),
    (
        "bind_with_unknown_format_code",
        bind_with_unknown_format_code,
    ),
    (
        "bind_with_too_many_result_formats",
        bind_with_too_many_result_formats,
    ),
    (
        "execute_of_unnamed_portal_after_sync",
        execute_of_unnamed_portal_after_sync,
    ),
    (
        "parse_error_fails_the_transaction_block",
        parse_error_fails_the_transaction_block,
    ),
    ("startup_without_user", startup_without_user),
    (
        "named_portal_ends_with_its_transaction",
        named_portal_ends_with_its_transaction,
    ),
    ("length_below_four", length_below_four),
    (
        "query_without_terminating_nul",
        query_without_terminating_nul,
    ),
    ("query_with_invalid_utf8", query_with_invalid_utf8),
    ("parse_with_invalid_utf8", parse_with_invalid_utf8),
    (
        "bind_with_missing_parameter_bytes",
        bind_with_missing_parameter_bytes,
    ),
    (
        "password_message_after_startup",
        password_message_after_startup,
    ),
    ("flush_and_sync_with_a_body", flush_and_sync_with_a_body),
    ("function_call", function_call),
    ("query_during_copy_in", query_during_copy_in),
    (
        "startup_with_unsupported_protocol",
        startup_with_unsupported_protocol,
    ),
    ("startup_without_terminator", startup_without_terminator),
];

/// A fresh connection answers `SELECT 1` and the server process is alive.
fn assert_server_healthy_raw(server: &mut TestServer) {
    let mut conn = RawConnection::start(server.port);
    assert_answers_select_1(&mut conn);
    assert!(
        server.is_running(),
        "the server exited; log:\n{}",
        server.log()
    );
}

#[test]
fn malformed_protocol_messages_get_postgres_responses() {
    let mut server = start_server("bad-protocol");
    assert!(PROTOCOL_CASES.len() >= 20);
    for (name, case) in PROTOCOL_CASES {
        eprintln!("protocol case {name}");
        case(server.port);
    }
    assert_server_healthy_raw(&mut server);
}

#[ignore = "needs a PostgreSQL 18: IOLAB_REFERENCE_PORT=5433"]
#[test]
fn protocol_cases_match_postgres() {
    let port = reference_port();
    for (name, case) in PROTOCOL_CASES {
        eprintln!("protocol case {name}");
        case(port);
    }
}

/// `*` takes no alias in PostgreSQL (sqlparser would accept one).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alias_on_a_star_is_a_syntax_error() {
    let server = start_server("star-alias");
    let client = server.client().await;
    let err = client
        .simple_query("SELECT * x FROM (VALUES (1)) AS v(a)")
        .await
        .unwrap_err();
    let db = db_error(&err);
    assert_eq!(
        (db.code().code(), db.message()),
        ("42601", "syntax error at or near \"x\"")
    );
    assert_eq!(db.position(), Some(&ErrorPosition::Original(10)));
}
