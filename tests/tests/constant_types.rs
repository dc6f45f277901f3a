//! Integer constants typed as PostgreSQL 18 types them, seen by a client that checks types
//! (tokio-postgres refuses to read an `int8` column as an `i32`): `integer` when the value
//! fits in 32 bits, `bigint` otherwise, and so the expressions, VALUES lists, UNIONs and
//! series made of them, and the tables CREATE TABLE AS makes; and arrays as arrays. Every
//! expected type and name is PostgreSQL 18's for the same statement.

use iolab_tests::tokio_postgres::types::Type;
use iolab_tests::tokio_postgres::Client;
use iolab_tests::{rows, sqlstate, TestServer};

/// The types and names of `sql`'s result columns, as the server describes them.
async fn columns(client: &Client, sql: &str) -> Vec<(Type, String)> {
    let statement = client
        .prepare(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    statement
        .columns()
        .iter()
        .map(|c| (c.type_().clone(), c.name().to_string()))
        .collect()
}

async fn types(client: &Client, sql: &str) -> Vec<Type> {
    columns(client, sql)
        .await
        .into_iter()
        .map(|c| c.0)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn integer_constants_are_int4_when_they_fit() {
    let server = TestServer::start("constant-types");
    let c = server.client().await;
    c.batch_execute("CREATE TABLE t (a int, s smallint, b bigint); INSERT INTO t VALUES (1, 2, 3)")
        .await
        .unwrap();

    // Constants, and expressions over them and over columns.
    let row = c
        .query_one("SELECT 1, 3000000000, -2147483648, -2147483649", &[])
        .await
        .unwrap();
    let values: (i32, i64, i32, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!(values, (1, 3000000000, -2147483648, -2147483649));
    assert_eq!(
        types(&c, "SELECT a + 1, s + 1, s + s, b + 1, 1 + 1 FROM t").await,
        [Type::INT4, Type::INT4, Type::INT2, Type::INT8, Type::INT4]
    );
    assert_eq!(
        types(&c, "SELECT count(*), sum(a), sum(1), max(1) FROM t").await,
        [Type::INT8, Type::INT8, Type::INT8, Type::INT4]
    );
    let row = c.query_one("SELECT a * 10 FROM t", &[]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 10);

    // VALUES lists and set operations take the common type of their rows.
    assert_eq!(
        types(&c, "SELECT * FROM (VALUES (1, 2), (NULL, 3000000000)) v").await,
        [Type::INT4, Type::INT8]
    );
    assert_eq!(
        columns(&c, "SELECT 1 UNION SELECT 2").await,
        [(Type::INT4, "?column?".to_string())]
    );
    assert_eq!(
        columns(&c, "SELECT 1 AS x UNION ALL SELECT 3000000000 ORDER BY 1").await,
        [(Type::INT8, "x".to_string())]
    );
    let union = rows(&c, "SELECT 1 AS x UNION ALL SELECT 3000000000 ORDER BY 1").await;
    assert_eq!(
        union,
        [[Some("1".to_string())], [Some("3000000000".to_string())]]
    );

    // An INSERT's constants are converted to the column's type as before.
    c.batch_execute("INSERT INTO t VALUES (2147483647, -32768, 9223372036854775807)")
        .await
        .unwrap();
    assert_eq!(
        rows(&c, "SELECT max(a), min(s), max(b) FROM t").await,
        [[
            Some("2147483647".to_string()),
            Some("-32768".to_string()),
            Some("9223372036854775807".to_string())
        ]]
    );

    // integer arithmetic overflows as integer, and a bigint operand makes it bigint.
    let e = c.simple_query("SELECT 2147483647 + 1").await.unwrap_err();
    assert_eq!(sqlstate(&e), "22003");
    assert_eq!(e.as_db_error().unwrap().message(), "integer out of range");
    let row = c
        .query_one("SELECT 2147483647::bigint + 1", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 2147483648);

    // A parameter beside an integer constant is an integer.
    let statement = c.prepare("SELECT $1 + 1").await.unwrap();
    assert_eq!(statement.params(), [Type::INT4]);
    let row = c.query_one(&statement, &[&41i32]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 42);

    // LIMIT and OFFSET take integer constants as ever.
    assert_eq!(
        rows(&c, "SELECT a FROM t ORDER BY a LIMIT 1 OFFSET 1").await,
        [[Some("2147483647".to_string())]]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn series_and_the_tables_made_of_them_have_postgres_types() {
    let server = TestServer::start("series-types");
    let c = server.client().await;

    assert_eq!(
        types(&c, "SELECT * FROM generate_series(1, 3)").await,
        [Type::INT4]
    );
    assert_eq!(
        types(&c, "SELECT * FROM generate_series(-5, 3000000000)").await,
        [Type::INT8]
    );
    assert_eq!(
        types(&c, "SELECT * FROM generate_series(1::bigint, 3)").await,
        [Type::INT8]
    );
    assert_eq!(
        columns(&c, "SELECT generate_series(1, 3)").await,
        [(Type::INT4, "generate_series".to_string())]
    );
    let series: Vec<i32> = c
        .query("SELECT g FROM generate_series(10, 1, -3) g", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(series, [10, 7, 4, 1]);
    let expanded: Vec<i32> = c
        .query("SELECT generate_series(1, 3) + 1", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(expanded, [2, 3, 4]);

    // The table is made of 4-byte integers: as large as one declared `int`.
    c.batch_execute(
        "CREATE TABLE made AS SELECT i, i * 2 AS j FROM generate_series(1, 20000) i;
         CREATE TABLE declared (i int, j int);
         INSERT INTO declared SELECT i, i * 2 FROM generate_series(1, 20000) i;
         CREATE TABLE wide (i bigint, j bigint);
         INSERT INTO wide SELECT i, i * 2 FROM generate_series(1, 20000) i",
    )
    .await
    .unwrap();
    assert_eq!(
        rows(
            &c,
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute
              WHERE attrelid = 'made'::regclass AND attnum > 0 ORDER BY attnum"
        )
        .await,
        [[Some("integer".to_string())], [Some("integer".to_string())]]
    );
    let size = |t: &'static str| {
        let c = &c;
        async move {
            let r = rows(c, &format!("SELECT pg_relation_size('{t}')")).await;
            r[0][0].as_deref().unwrap().parse::<i64>().unwrap()
        }
    };
    let (made, declared, wide) = (
        size("made").await,
        size("declared").await,
        size("wide").await,
    );
    assert_eq!(made, declared);
    assert!(made < wide, "{made} {wide}");

    // The series is still known to be in order: no sort spills for ORDER BY its column.
    c.batch_execute("SET work_mem = '64kB'").await.unwrap();
    let plan = rows(
        &c,
        "EXPLAIN (COSTS OFF) SELECT i FROM generate_series(1, 100000) i ORDER BY i",
    )
    .await;
    assert_eq!(
        plan,
        [[Some("Function Scan on generate_series i".to_string())]]
    );
    let plan = rows(
        &c,
        "EXPLAIN (COSTS OFF) SELECT * FROM generate_series(1, 10) g WHERE g > 1",
    )
    .await;
    assert_eq!(plan[1][0].as_deref(), Some("  Filter: (g > 1)"));

    // A recursive query keeps DataFusion's bigint (its working table is typed when it is
    // planned) and its values.
    let r = rows(
        &c,
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3)
         SELECT sum(n) FROM r",
    )
    .await;
    assert_eq!(r, [[Some("6".to_string())]]);
}

/// A list is reported as its element type's array (`integer[]`, `text[]` …) and sent in
/// PostgreSQL's text and binary array formats, so a client decodes it as an array:
/// tokio-postgres (binary) reads a `Vec`, psql (text) shows `{…}`. Array parameters and
/// arrays written as text (`'{1,2}'::int[]`) are read as PostgreSQL reads them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_are_postgres_arrays() {
    let server = TestServer::start("array-types");
    let c = server.client().await;
    let sql = "SELECT ARRAY[1, 2], ARRAY['a', NULL], array_agg(x), array_remove(ARRAY[1], 1),
                      ARRAY[1.5::float8], ARRAY[3000000000]
                 FROM generate_series(1, 3) x";
    assert_eq!(
        types(&c, sql).await,
        [
            Type::INT4_ARRAY,
            Type::TEXT_ARRAY,
            Type::INT4_ARRAY,
            Type::INT4_ARRAY,
            Type::FLOAT8_ARRAY,
            Type::INT8_ARRAY
        ]
    );
    let row = c.query_one(sql, &[]).await.unwrap();
    assert_eq!(row.get::<_, Vec<i32>>(0), [1, 2]);
    assert_eq!(
        row.get::<_, Vec<Option<String>>>(1),
        [Some("a".to_string()), None]
    );
    assert_eq!(row.get::<_, Vec<i32>>(2), [1, 2, 3]);
    assert!(row.get::<_, Vec<i32>>(3).is_empty());
    assert_eq!(row.get::<_, Vec<f64>>(4), [1.5]);
    assert_eq!(row.get::<_, Vec<i64>>(5), [3000000000]);
    // An array parameter, as a client binds a list (tokio-postgres: binary format).
    let row = c
        .query_one(
            "SELECT count(*), $1::int[] FROM generate_series(1, 10) g WHERE g = ANY($1)",
            &[&vec![Some(2i32), None, Some(5)]],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 2);
    assert_eq!(row.get::<_, Vec<Option<i32>>>(1), [Some(2), None, Some(5)]);
    let row = c
        .query_one("SELECT $1::text[]", &[&vec!["a b", "x\"y"]])
        .await
        .unwrap();
    assert_eq!(row.get::<_, Vec<String>>(0), ["a b", "x\"y"]);
    // An array written as text, named after its element type as PostgreSQL names it.
    assert_eq!(
        columns(&c, "SELECT '{1,NULL,3}'::int[]").await,
        [(Type::INT4_ARRAY, "int4".to_string())]
    );
    assert_eq!(
        rows(
            &c,
            r#"SELECT '{1,NULL,3}'::int[], CAST('{a,"b c"}' AS text[])"#
        )
        .await,
        [[
            Some("{1,NULL,3}".to_string()),
            Some(r#"{a,"b c"}"#.to_string())
        ]]
    );
    let e = c.simple_query("SELECT '{1,2'::int[]").await.unwrap_err();
    assert_eq!(sqlstate(&e), "22P02");
    assert_eq!(
        e.as_db_error().unwrap().message(),
        r#"malformed array literal: "{1,2""#
    );
    // An untyped text after ANY / ALL is an array of the left side's type (PostgreSQL
    // 18.4's answers): '{10,9}' holds integers, so 9 < 10 though '9' > '10' as text.
    let quantified = r#"SELECT 9 = ANY ('{10,9}'), 9 < ALL ('{10,11}'), 10 <> ALL ('{10,NULL}'),
                             11 = ANY ('{10,NULL}'), 5 > ANY ('{}'), NULL::int < ALL ('{}'),
                             'b' = ANY ('{a,"b"}'), date '2024-01-02' > ANY ('{2024-01-01}')"#;
    assert_eq!(
        rows(&c, quantified).await,
        [[
            Some("t".to_string()),
            Some("t".to_string()),
            Some("f".to_string()),
            None,
            Some("f".to_string()),
            Some("t".to_string()),
            Some("t".to_string()),
            Some("t".to_string())
        ]]
    );
    let e = c
        .simple_query("SELECT 1 = ANY ('{1,x}')")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&e), "22P02");
    assert_eq!(
        e.as_db_error().unwrap().message(),
        r#"invalid input syntax for type integer: "x""#
    );
    assert_eq!(
        rows(&c, sql).await,
        [[
            Some("{1,2}".to_string()),
            Some("{a,NULL}".to_string()),
            Some("{1,2,3}".to_string()),
            Some("{}".to_string()),
            Some("{1.5}".to_string()),
            Some("{3000000000}".to_string())
        ]]
    );
}

/// Results DataFusion computes as unsigned integers have PostgreSQL's types: window
/// ranks are `bigint`, `ntile()` and the array functions `integer` (a Python script gets
/// an `int`, not a `Decimal` of a `numeric(20,0)`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranks_and_array_functions_are_postgres_integers() {
    let server = TestServer::start("unsigned-results");
    let c = server.client().await;
    let sql =
        "SELECT row_number() OVER (), rank() OVER (ORDER BY x), dense_rank() OVER (ORDER BY x),
                      ntile(2) OVER (), cardinality(ARRAY[1, 2]), array_length(ARRAY[1, 2], 1),
                      array_position(ARRAY[5, 6], 6)
                 FROM generate_series(1, 2) x ORDER BY 1 LIMIT 1";
    assert_eq!(
        types(&c, sql).await,
        [
            Type::INT8,
            Type::INT8,
            Type::INT8,
            Type::INT4,
            Type::INT4,
            Type::INT4,
            Type::INT4
        ]
    );
    let row = c.query_one(sql, &[]).await.unwrap();
    let ranks: (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    let small: (i32, i32, i32, i32) = (row.get(3), row.get(4), row.get(5), row.get(6));
    assert_eq!((ranks, small), ((1, 1, 1), (1, 2, 2, 2)));
    // A rank used in a subquery's filter, as in a top-n-per-group query.
    let top = c
        .query(
            "SELECT x, rn FROM (SELECT x, row_number() OVER (ORDER BY x DESC) rn
                                  FROM generate_series(1, 3) x) s WHERE rn = 1",
            &[],
        )
        .await
        .unwrap();
    assert_eq!((top[0].get::<_, i32>(0), top[0].get::<_, i64>(1)), (3, 1));
}
