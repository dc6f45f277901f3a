//! The foundation end to end: the real server, tokio-postgres (simple and extended
//! protocol, binary results) and psql (`\copy`), a load of a million rows, a restart.
//!
//! Expected values are computed here, independently of the server: the rows are a
//! deterministic function of `i`, and md5 is computed with the `md5` crate.

use iolab_tests::{rows, sqlstate, TestServer};

const ROWS: i64 = 1_000_000;
const COPY_ROWS: i64 = 100_000;

/// The `a` value of row i (as INSERT computes it with `(i * 7919) % 10000`).
fn a_of(i: i64) -> i64 {
    (i * 7919) % 10000
}

fn filler_of(i: i64) -> String {
    format!("{:x}", md5::compute(i.to_string()))
}

struct Expected {
    count: i64,
    sum_a: i64,
    filler_gt_f: i64,
    a_lt_140: i64,
}

fn expected(range: std::ops::RangeInclusive<i64>) -> Expected {
    let mut e = Expected {
        count: 0,
        sum_a: 0,
        filler_gt_f: 0,
        a_lt_140: 0,
    };
    for i in range {
        let a = a_of(i);
        e.count += 1;
        e.sum_a += a;
        if filler_of(i).as_str() > "f" {
            e.filler_gt_f += 1;
        }
        if a < 140 {
            e.a_lt_140 += 1;
        }
    }
    e
}

async fn check(client: &tokio_postgres::Client, e: &Expected) {
    // Extended protocol, binary results.
    let row = client
        .query_one(
            "SELECT count(*), sum(a), min(a), max(a) FROM eic_uniform",
            &[],
        )
        .await
        .expect("aggregate query");
    assert_eq!(row.get::<_, i64>(0), e.count);
    assert_eq!(row.get::<_, i64>(1), e.sum_a);
    assert_eq!(row.get::<_, i32>(2), 0);
    assert_eq!(row.get::<_, i32>(3), 9999);
    let row = client
        .query_one(
            "SELECT count(*) FROM eic_uniform WHERE filler > $1",
            &[&"f"],
        )
        .await
        .expect("parameterised query");
    assert_eq!(row.get::<_, i64>(0), e.filler_gt_f);
    let row = client
        .query_one("SELECT count(*) FROM eic_uniform WHERE a < $1", &[&140i32])
        .await
        .expect("int parameter");
    assert_eq!(row.get::<_, i64>(0), e.a_lt_140);
    // Simple protocol, text results.
    let rows = client
        .simple_query("SELECT count(*) FROM eic_uniform WHERE a < 140 AND filler > 'f'")
        .await
        .expect("simple query");
    let count = rows
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                r.get(0).map(|s| s.parse::<i64>().unwrap())
            }
            _ => None,
        })
        .expect("a row");
    assert!(count > 0 && count < e.a_lt_140);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_query_copy_and_restart() {
    let mut server = TestServer::start("foundation");
    let client = server.client().await;
    client
        .batch_execute("CREATE UNLOGGED TABLE eic_uniform(a INT, filler TEXT)")
        .await
        .expect("create table");
    let inserted = client
        .execute(
            &format!(
                "INSERT INTO eic_uniform SELECT (i::bigint * 7919) % 10000, md5(i::text) FROM generate_series(1, {ROWS}) AS T(i)"
            ),
            &[],
        )
        .await
        .expect("insert ... select");
    assert_eq!(inserted, ROWS as u64);
    let mut e = expected(1..=ROWS);
    check(&client, &e).await;

    // \copy 100 000 more rows from a CSV file written here.
    let csv = server.data_dir.with_extension("csv");
    let mut text = String::new();
    for i in ROWS + 1..=ROWS + COPY_ROWS {
        text.push_str(&format!("{},{}\n", a_of(i), filler_of(i)));
    }
    std::fs::write(&csv, text).unwrap();
    let out = server.psql_ok(&[
        "-c",
        &format!(
            "\\copy eic_uniform FROM '{}' WITH (FORMAT csv)",
            csv.display()
        ),
    ]);
    assert!(
        out.contains(&format!("COPY {COPY_ROWS}")),
        "psql said: {out}"
    );
    std::fs::remove_file(&csv).unwrap();
    e = expected(1..=ROWS + COPY_ROWS);
    check(&client, &e).await;

    // psql sees the same numbers.
    let out = server.psql_ok(&["-At", "-c", "SELECT count(*), sum(a) FROM eic_uniform"]);
    assert_eq!(out.trim(), format!("{}|{}", e.count, e.sum_a));

    drop(client);
    server.restart();
    let client = server.client().await;
    check(&client, &e).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn types_round_trip_in_text_and_binary() {
    let server = TestServer::start("types");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE t(i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, n numeric(10,2), s text, v varchar(5), b bool, d date, ts timestamp, tz timestamptz);
             INSERT INTO t VALUES (1, 2, 3, 1.5, 2.25, 12.345, 'hello', 'abc', true, '2024-01-31', '2024-01-31 12:34:56.5', '2024-01-31 12:34:56+00'),
                                  (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);",
        )
        .await
        .expect("create and insert");
    let row = client
        .query_one("SELECT * FROM t WHERE i4 = 2", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i16>(0), 1);
    assert_eq!(row.get::<_, i32>(1), 2);
    assert_eq!(row.get::<_, i64>(2), 3);
    assert_eq!(row.get::<_, f32>(3), 1.5);
    assert_eq!(row.get::<_, f64>(4), 2.25);
    assert_eq!(row.get::<_, String>(6), "hello");
    assert_eq!(row.get::<_, String>(7), "abc");
    assert!(row.get::<_, bool>(8));
    let text = server.psql_ok(&["-At", "-c", "SELECT n, d, ts, tz FROM t WHERE i4 = 2"]);
    assert_eq!(
        text.trim(),
        "12.35|2024-01-31|2024-01-31 12:34:56.5|2024-01-31 12:34:56+00"
    );
    // The ctid system column locates each row: (block, line pointer).
    let ctids = server.psql_ok(&["-At", "-c", "SELECT ctid, i4 FROM t ORDER BY ctid"]);
    assert_eq!(
        ctids.split_whitespace().collect::<Vec<_>>(),
        vec!["(0,1)|2", "(0,2)|"]
    );
    let nulls = server.psql_ok(&[
        "-At",
        "-c",
        "SELECT count(*) FROM t WHERE i4 IS NULL AND s IS NULL AND tz IS NULL",
    ]);
    assert_eq!(nulls.trim(), "1");
    // Assignment casts: float -> int rounds half to even; out of range and bad text fail.
    client.batch_execute("CREATE TABLE r(a int)").await.unwrap();
    client
        .batch_execute("INSERT INTO r VALUES (2.5), (3.5), (-2.5), (7.49)")
        .await
        .unwrap();
    let out = server.psql_ok(&["-At", "-c", "SELECT a FROM r ORDER BY a"]);
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        vec!["-2", "2", "4", "7"]
    );
    let err = client
        .batch_execute("INSERT INTO r VALUES (3000000000)")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22003");
    let err = client
        .batch_execute("INSERT INTO r VALUES ('abc')")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22P02");
    let err = client
        .batch_execute("INSERT INTO t(v) VALUES ('toolong')")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22001");
}

/// A parameter with nothing around it to type it (`SELECT $1`) takes the type the client
/// declared in Parse, in the statement's description and in its rows, as psycopg relies
/// on; `timestamptz` casts and `now()` are timestamptz.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn declared_parameter_types_type_the_results() {
    use tokio_postgres::types::Type;
    let server = TestServer::start("param-types");
    let client = server.client().await;
    let stmt = client
        .prepare_typed(
            "SELECT $1, $2, $3, $4, $1 + 1",
            &[Type::INT2, Type::INT8, Type::FLOAT8, Type::BOOL],
        )
        .await
        .unwrap();
    let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(
        types[..4],
        [Type::INT2, Type::INT8, Type::FLOAT8, Type::BOOL]
    );
    // tokio-postgres reads results in binary: the values decode as their declared types.
    let row = client
        .query_one(&stmt, &[&7i16, &(1i64 << 40), &0.5f64, &true])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i16>(0), 7);
    assert_eq!(row.get::<_, i64>(1), 1 << 40);
    assert_eq!(row.get::<_, f64>(2), 0.5);
    assert!(row.get::<_, bool>(3));
    let row = client
        .query_one("SELECT '2024-01-02 03:04:05+02'::timestamptz, now()", &[])
        .await
        .unwrap();
    assert_eq!(row.columns()[0].type_(), &Type::TIMESTAMPTZ);
    assert_eq!(row.columns()[1].type_(), &Type::TIMESTAMPTZ);
    let text = server.psql_ok(&["-At", "-c", "SELECT '2024-01-02 03:04:05+02'::timestamptz"]);
    assert_eq!(text.trim(), "2024-01-02 01:04:05+00");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queries_datafusion_plans_over_heap_tables() {
    let server = TestServer::start("queries");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE o(id int, customer int, amount numeric(10,2));
             CREATE TABLE c(id int, name text);
             INSERT INTO c VALUES (1, 'ann'), (2, 'bob'), (3, 'cy');
             INSERT INTO o SELECT i, 1 + i % 2, i * 1.25 FROM generate_series(1, 10) AS s(i);
             TRUNCATE c; INSERT INTO c VALUES (1, 'ann'), (2, 'bob'), (3, 'cy');",
        )
        .await
        .unwrap();
    let out = server.psql_ok(&[
        "-At",
        "-c",
        "SELECT c.name, count(*), sum(o.amount) FROM c JOIN o ON o.customer = c.id GROUP BY c.name ORDER BY c.name",
    ]);
    // 1 + i % 2 is customer 2 (bob) for odd i and customer 1 (ann) for even i.
    let even: f64 = (2..=10).step_by(2).map(|i| i as f64 * 1.25).sum();
    let odd: f64 = (1..=9).step_by(2).map(|i| i as f64 * 1.25).sum();
    assert_eq!(out.trim(), format!("ann|5|{even:.2}\nbob|5|{odd:.2}"));
    let out = server.psql_ok(&[
        "-At",
        "-c",
        "WITH ranked AS (SELECT id, row_number() OVER (ORDER BY amount DESC) AS r FROM o) SELECT id FROM ranked WHERE r <= 3 ORDER BY r",
    ]);
    assert_eq!(
        out.split_whitespace().collect::<Vec<_>>(),
        vec!["10", "9", "8"]
    );
    let out = server.psql_ok(&[
        "-At",
        "-c",
        "SELECT name FROM c WHERE id NOT IN (SELECT customer FROM o) LIMIT 1",
    ]);
    assert_eq!(out.trim(), "cy");
    let out = server.psql_ok(&["-At", "-c", "SELECT count(*) FROM c"]);
    assert_eq!(
        out.trim(),
        "3",
        "TRUNCATE emptied the table before the second INSERT"
    );
}

/// EXISTS and IN (subquery) outside WHERE — a select list, CASE, an aggregate's FILTER —
/// with SQL's three-valued IN (NULL when a NULL could have matched); correlated ones too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subquery_predicates_in_a_select_list() {
    let server = TestServer::start("subquery_predicates");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE n(v int); INSERT INTO n VALUES (1), (2), (4);
             CREATE TABLE m(v int); INSERT INTO m VALUES (2), (NULL);",
        )
        .await
        .unwrap();
    for (query, header, rows) in [
        (
            "SELECT EXISTS (SELECT 1 FROM n WHERE v = 4), NOT EXISTS (SELECT 1 FROM n WHERE v = 3) AS none",
            "exists | none",
            "t|t",
        ),
        // Correlated: is v + 1 in n?
        (
            "SELECT v, EXISTS (SELECT 1 FROM n AS o WHERE o.v = n.v + 1) AS next FROM n ORDER BY v",
            "v | next",
            "1|t\n2|f\n4|f",
        ),
        (
            "SELECT v, CASE WHEN EXISTS (SELECT 1 FROM m WHERE m.v = n.v) THEN 'm' ELSE '-' END AS c FROM n ORDER BY v",
            "v | c",
            "1|-\n2|m\n4|-",
        ),
        (
            "SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM m WHERE m.v = 2)) AS c FROM n",
            "c",
            "3",
        ),
        // m holds 2 and NULL: 2 is in it, 1 may be (NULL), and NOT IN follows; over no
        // rows IN is false even for NULL.
        (
            "SELECT v, v IN (SELECT v FROM m) AS i, v NOT IN (SELECT v FROM m) AS ni FROM n ORDER BY v",
            "v | i | ni",
            "1||\n2|t|f\n4||",
        ),
        (
            "SELECT v IN (SELECT v FROM n) AS i, NULL::int IN (SELECT v FROM n) AS n, NULL::int IN (SELECT v FROM n WHERE false) AS e FROM n ORDER BY v",
            "i | n | e",
            "t||f\nt||f\nt||f",
        ),
    ] {
        assert_psql_shows(&server, query, header, rows);
    }
    // Where DataFusion cannot decorrelate one (a join's ON, an aggregate's FILTER): not
    // supported, not a syntax error nor a wrong answer, and the session goes on.
    for sql in [
        "SELECT n.v FROM n JOIN m ON n.v = m.v AND EXISTS (SELECT 1 FROM n AS o WHERE o.v = n.v + 1)",
        "SELECT count(*) FILTER (WHERE EXISTS (SELECT 1 FROM m WHERE m.v = n.v)) FROM n",
        "SELECT count(*) FILTER (WHERE v IN (SELECT v FROM m)) FROM n",
    ] {
        let err = client.query(sql, &[]).await.unwrap_err();
        assert_eq!(sqlstate(&err), "0A000", "{sql}: {err:?}");
    }
    let row = client
        .query_one("SELECT count(*) FROM n", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 3);
}

/// A set-returning function in FROM names its column as PostgreSQL does: after the alias, or
/// after the function without one; the common `INSERT … SELECT i … FROM generate_series(…) i`
/// works, and psql shows PostgreSQL's column headers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_returning_functions_name_their_column_like_postgres() {
    let server = TestServer::start("srf_columns");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE g(i int, m text);
             INSERT INTO g SELECT i, md5(i::text) FROM generate_series(1, 5) i;
             INSERT INTO g SELECT n, md5(n::text) FROM generate_series(6, 8) AS n;",
        )
        .await
        .unwrap();
    let row = client
        .query_one("SELECT count(*), sum(i), max(m) FROM g", &[])
        .await
        .unwrap();
    let max_md5 = (1..=8)
        .map(|i| format!("{:x}", md5::compute(i.to_string())))
        .max();
    assert_eq!(row.get::<_, i64>(0), 8);
    assert_eq!(row.get::<_, i64>(1), 36);
    assert_eq!(Some(row.get::<_, String>(2)), max_md5);
    // psql's aligned output: the header line is the column's name.
    for (query, header) in [
        ("SELECT * FROM generate_series(1, 2)", "generate_series"),
        ("SELECT * FROM generate_series(1, 2) x", "x"),
        ("SELECT * FROM generate_series(1, 2) AS t(y)", "y"),
        ("SELECT * FROM unnest(ARRAY[1, 2])", "unnest"),
        ("SELECT * FROM unnest(ARRAY[1, 2]) u", "u"),
    ] {
        let out = server.psql_ok(&["-c", query]);
        assert_eq!(
            out.lines().next().map(str::trim),
            Some(header),
            "{query}:\n{out}"
        );
    }
    let out = server.psql_ok(&[
        "-At",
        "-c",
        "SELECT i, j FROM generate_series(1, 2) i, generate_series(3, 4) j ORDER BY i, j",
    ]);
    assert_eq!(out.trim(), "1|3\n1|4\n2|3\n2|4");
}

/// psql shows `query`'s result with the header line `header` (column names as psql aligns
/// them) and, unaligned, the rows `rows` (`|` between values, one row a line).
fn assert_psql_shows(server: &TestServer, query: &str, header: &str, rows: &str) {
    let out = server.psql_ok(&["-c", query]);
    assert_eq!(
        out.lines().next().map(str::trim),
        Some(header),
        "{query}:\n{out}"
    );
    let out = server.psql_ok(&["-At", "-c", query]);
    assert_eq!(out.trim(), rows, "{query}");
}

/// A select list may repeat a column name, as in PostgreSQL (DataFusion refused to plan
/// it): the values are right and psql shows the repeated names; CREATE TABLE AS of such a
/// list fails as PostgreSQL's does (42701).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_names_in_a_select_list() {
    let server = TestServer::start("repeated_names");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE r(id int, v text); INSERT INTO r VALUES (2, 'b'), (1, 'a')")
        .await
        .unwrap();
    for (query, header, rows) in [
        ("SELECT 1 AS a, 2 AS a", "a | a", "1|2"),
        (
            "SELECT id, id, v FROM r ORDER BY id",
            "id | id | v",
            "1|1|a\n2|2|b",
        ),
        ("SELECT count(*), count(*) FROM r", "count | count", "2|2"),
        (
            "SELECT *, id FROM r ORDER BY id DESC",
            "id | v | id",
            "2|b|2\n1|a|1",
        ),
        (
            "SELECT *, id + 1 AS x FROM r ORDER BY x",
            "id | v | x",
            "1|a|2\n2|b|3",
        ),
        (
            "SELECT *, 7 AS id FROM r ORDER BY v",
            "id | v | id",
            "1|a|7\n2|b|7",
        ),
    ] {
        assert_psql_shows(&server, query, header, rows);
    }
    let err = client
        .batch_execute("CREATE TABLE r2 AS SELECT id, id FROM r")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "42701", "{err:?}");
}

/// A column alias list shorter than a subquery's columns names the first ones and keeps
/// the others' names, as in PostgreSQL; a longer one fails with its error (42P10).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_alias_lists_name_the_first_columns() {
    let server = TestServer::start("alias_lists");
    let client = server.client().await;
    for (query, header, rows) in [
        ("SELECT * FROM (SELECT 1 AS x, 2 AS y) AS t(a)", "a | y", "1|2"),
        ("SELECT * FROM (VALUES (1, 2), (3, 4)) AS v(a) ORDER BY a DESC", "a | column2", "3|4\n1|2"),
        (
            "SELECT t.a + t.y AS s FROM (SELECT 1 AS x, 2 AS y) t(a) WHERE t.y = 2",
            "s",
            "3",
        ),
        (
            "SELECT count(*) FROM (SELECT 5) AS q WHERE 5 IN (SELECT b FROM (SELECT 5 AS c, 6) AS z(b))",
            "count",
            "1",
        ),
    ] {
        assert_psql_shows(&server, query, header, rows);
    }
    let e = client
        .simple_query("SELECT * FROM (SELECT 1) AS t(a, b)")
        .await
        .unwrap_err();
    assert_eq!(iolab_tests::sqlstate(&e), "42P10");
    assert_eq!(
        e.as_db_error().unwrap().message(),
        "table \"t\" has 1 columns available but 2 columns specified"
    );
}

/// An array cast to text reads as PostgreSQL writes arrays (DataFusion wrote `[1, 2]`), in
/// a select list, a WHERE clause and a catalog column, through both protocols; a cast of a
/// parameter types it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrays_cast_to_text_like_postgres() {
    let server = TestServer::start("array_text");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t(a int); CREATE INDEX i ON t(a) WITH (fillfactor = 70)")
        .await
        .unwrap();
    for (query, header, rows) in [
        ("SELECT ARRAY[1,2]::text", "array", "{1,2}"),
        (
            "SELECT CAST(ARRAY['a','b c'] AS varchar) AS v",
            "v",
            "{a,\"b c\"}",
        ),
        (
            "SELECT ARRAY[1,NULL]::text, ARRAY[[1,2],[3,4]]::text AS m",
            "array   |       m",
            "{1,NULL}|{{1,2},{3,4}}",
        ),
        (
            "SELECT count(*) FROM (SELECT ARRAY[2,3]::text AS t) s WHERE t = '{2,3}'",
            "count",
            "1",
        ),
        (
            "SELECT reloptions::text FROM pg_class WHERE relname = 'i'",
            "reloptions",
            "{fillfactor=70}",
        ),
        ("SELECT array_out(ARRAY[1.5, 2])", "array_out", "{1.5,2}"),
    ] {
        assert_psql_shows(&server, query, header, rows);
    }
    // The extended protocol plans the same way. A cast types its parameter, as in
    // PostgreSQL (`$1::int` is an int4 parameter: tokio-postgres then sends an i32).
    let stmt = client
        .prepare("SELECT $1::int + 1, $2::text")
        .await
        .unwrap();
    assert_eq!(
        stmt.params(),
        &[
            tokio_postgres::types::Type::INT4,
            tokio_postgres::types::Type::TEXT
        ]
    );
    let text: String = client
        .query_one("SELECT ARRAY[$1::int, 7]::text", &[&5i32])
        .await
        .unwrap()
        .get(0);
    assert_eq!(text, "{5,7}");
}

/// `generate_series` in a select list makes rows, as in PostgreSQL (DataFusion made one
/// array): alone, beside another of a different length (lockstep, the shorter padded with
/// NULLs), once per row of a table, inside an expression, under an aggregate's subquery
/// and in CREATE TABLE AS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generate_series_in_a_select_list_makes_rows() {
    let server = TestServer::start("select_list_series");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE s(n int); INSERT INTO s VALUES (2), (3)")
        .await
        .unwrap();
    for (query, header, rows) in [
        ("SELECT generate_series(1, 3)", "generate_series", "1\n2\n3"),
        (
            "SELECT generate_series(1, 2) AS a, generate_series(1, 3) AS b",
            "a | b",
            "1|1\n2|2\n|3",
        ),
        (
            "SELECT n, generate_series(1, n) * 10 AS x FROM s ORDER BY n, x",
            "n | x",
            "2|10\n2|20\n3|10\n3|20\n3|30",
        ),
        (
            "SELECT count(*), sum(g) FROM (SELECT generate_series(1, 10) AS g) AS t",
            "count | sum",
            "10|55",
        ),
        // Bounds and step of any integer type, in FROM too.
        (
            "SELECT sum(g) FROM generate_series(1::int, 10::smallint, 3::int) AS g",
            "sum",
            "22",
        ),
    ] {
        assert_psql_shows(&server, query, header, rows);
    }
    let loaded = client
        .execute("CREATE TABLE g AS SELECT generate_series(1, 5) AS v", &[])
        .await
        .unwrap();
    assert_eq!(loaded, 5);
    let row = client
        .query_one("SELECT count(*), max(v) FROM g", &[])
        .await
        .unwrap();
    assert_eq!((row.get::<_, i64>(0), row.get::<_, i32>(1)), (5, 5));
    let plan = server.psql_ok(&[
        "-At",
        "-c",
        "EXPLAIN (COSTS OFF) SELECT generate_series(1, 3)",
    ]);
    assert_eq!(plan.lines().next(), Some("ProjectSet"), "{plan}");
    for (query, message) in [
        (
            "SELECT sum(generate_series(1, 3))",
            "aggregate function calls cannot contain set-returning function calls",
        ),
        (
            "SELECT n FROM s WHERE n = generate_series(1, 2)",
            "set-returning functions are not allowed in WHERE",
        ),
    ] {
        let err = client.batch_execute(query).await.unwrap_err();
        let db = err.as_db_error().expect("a server error");
        assert_eq!(
            (db.code().code(), db.message()),
            ("0A000", message),
            "{query}"
        );
    }
}

/// CREATE TABLE … AS (and SELECT … INTO): the table takes the query's columns (PostgreSQL's
/// names) and rows, and reports `SELECT n`; IF NOT EXISTS skips with PostgreSQL's
/// notice; a query that fails leaves no table behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_table_as_loads_the_query() {
    let server = TestServer::start("ctas");
    let client = server.client().await;
    let loaded = client
        .execute(
            "CREATE TABLE c1 AS SELECT i, md5(i::text), i * 2 AS twice, NULL AS n \
             FROM generate_series(1, 1000) i",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(loaded, 1000, "the tag is SELECT 1000");
    let row = client
        .query_one(
            "SELECT count(*), sum(twice)::text, max(md5), count(n) FROM c1",
            &[],
        )
        .await
        .unwrap();
    let max_md5 = (1..=1000)
        .map(|i| format!("{:x}", md5::compute(i.to_string())))
        .max();
    assert_eq!(row.get::<_, i64>(0), 1000);
    // twice is a bigint: its sum is numeric, as in PostgreSQL.
    assert_eq!(row.get::<_, String>(1), (1000 * 1001).to_string());
    assert_eq!(Some(row.get::<_, String>(2)), max_md5);
    assert_eq!(row.get::<_, i64>(3), 0);

    let out = server.psql_ok(&[
        "-At",
        "-c",
        "CREATE UNLOGGED TABLE c2 AS SELECT 7 AS a, 'x' AS b UNION ALL SELECT 8, 'y'",
        "-c",
        "SELECT a, b FROM c2 ORDER BY a",
    ]);
    assert_eq!(out.trim(), "SELECT 2\n7|x\n8|y");

    let out = server.psql(&[
        "-c",
        "CREATE TABLE IF NOT EXISTS c1 AS SELECT 1 AS one",
        "-c",
        "SELECT count(*) FROM c1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stderr.contains("NOTICE:  relation \"c1\" already exists, skipping"),
        "{stderr}"
    );
    assert!(stdout.starts_with("CREATE TABLE AS\n"), "{stdout}");
    assert!(stdout.contains(" 1000\n"), "c1 kept its rows: {stdout}");

    let err = client
        .execute("CREATE TABLE c3 AS SELECT md5('a'), md5('b')", &[])
        .await
        .unwrap_err();
    assert_eq!(
        sqlstate(&err),
        "42701",
        "both columns are named md5: {err:?}"
    );
    let err = client
        .execute(
            "CREATE TABLE c4 AS SELECT 10 / (i - 5) AS q FROM generate_series(1, 10) i",
            &[],
        )
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22012", "{err:?}");
    let err = client.execute("SELECT * FROM c4", &[]).await.unwrap_err();
    assert_eq!(
        sqlstate(&err),
        "42P01",
        "the failed load left no table: {err:?}"
    );

    // SELECT … INTO is the same statement spelled the other way.
    let loaded = client
        .execute(
            "SELECT i AS n, md5(i::text) AS m INTO UNLOGGED c5 FROM generate_series(1, 50) i",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(loaded, 50);
    let row = client
        .query_one("SELECT count(*), sum(n)::bigint FROM c5", &[])
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, i64>(0), row.get::<_, i64>(1)),
        (50, 50 * 51 / 2)
    );

    // A column list names the query's first columns; more names than columns, or a name
    // twice, fail as in PostgreSQL.
    client
        .batch_execute("CREATE UNLOGGED TABLE c6 (x, \"Y\") AS SELECT 1 AS p, 2 AS q, 3 AS r")
        .await
        .unwrap();
    let names = rows(
        &client,
        "SELECT attname FROM pg_attribute WHERE attrelid = 'c6'::regclass AND attnum > 0 ORDER BY attnum",
    )
    .await;
    let names: Vec<&str> = names.iter().map(|r| r[0].as_deref().unwrap()).collect();
    assert_eq!(names, ["x", "Y", "r"]);
    let row = client
        .query_one("SELECT x + \"Y\" + r FROM c6", &[])
        .await
        .unwrap();
    // Integer constants are PostgreSQL's `integer`s, and so are the columns made of them.
    assert_eq!(row.get::<_, i32>(0), 6);
    for (sql, code) in [
        ("CREATE TABLE c7 (a, b, c) AS SELECT 1, 2", "42601"),
        ("CREATE TABLE c7 (a, a) AS SELECT 1, 2", "42701"),
        ("CREATE TABLE c7 (a int) AS SELECT 1", "42601"),
    ] {
        let err = client.batch_execute(sql).await.unwrap_err();
        assert_eq!(sqlstate(&err), code, "{sql}: {err:?}");
    }
}

/// A second server on a data directory in use refuses to start, with PostgreSQL's FATAL
/// error naming the PID that holds it; the first keeps serving, and once it has stopped the
/// directory can be opened again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_server_per_data_directory() {
    let mut server = TestServer::start("datadir-lock");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t(a int); INSERT INTO t VALUES (1), (2)")
        .await
        .unwrap();
    let mut second = std::process::Command::new(iolab_tests::iolab_binary())
        .arg("--data-dir")
        .arg(&server.data_dir)
        .args(["--port", &iolab_tests::free_port().to_string()])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run a second iolab");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while second.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            second.kill().unwrap();
            panic!("a second server started on a data directory in use");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let second = second.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{stderr}");
    assert!(
        stderr.contains("FATAL:  lock file \"postmaster.pid\" already exists"),
        "{stderr}"
    );
    let pid = server.pid().expect("the first server runs");
    assert!(
        stderr.contains(&format!(
            "HINT:  Is another iolab server (PID {pid}) running in data directory \"{}\"?",
            server.data_dir.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        iolab_tests::int(&client, "SELECT count(*) FROM t").await,
        2,
        "the first server still serves"
    );
    drop(client);
    server.restart();
    let client = server.client().await;
    assert_eq!(iolab_tests::int(&client, "SELECT count(*) FROM t").await, 2);
}

/// `TABLE t [ORDER BY …] [LIMIT …]` is PostgreSQL's `SELECT * FROM t …`.
#[tokio::test(flavor = "multi_thread")]
async fn table_statement_reads_every_column() {
    let server = TestServer::start("table-statement");
    let c = server.client().await;
    c.batch_execute("CREATE TABLE tab(a int, b text); INSERT INTO tab VALUES (2, 'y'), (1, 'x')")
        .await
        .unwrap();
    let all = rows(&c, "TABLE tab ORDER BY a").await;
    assert_eq!(
        all,
        vec![
            vec![Some("1".to_string()), Some("x".to_string())],
            vec![Some("2".to_string()), Some("y".to_string())],
        ]
    );
    assert_eq!(rows(&c, "  table tab limit 1").await.len(), 1);
}
