//! B-tree indexes end to end: CREATE INDEX on 200 000 rows, `\di+` and `\d t` in psql, the
//! index still there and consistent after a restart, kept up to date by INSERT and COPY,
//! emptied by TRUNCATE, removed (with its file) by DROP INDEX and DROP TABLE; and
//! PostgreSQL 18's errors for the statements around it.
//!
//! There is no index scan in SQL yet (the planner does not use indexes); consistency is
//! checked with iolab's own `iolab_btree_check(index)`, which verifies the tree's
//! structure and that its entries are exactly the table's rows (key and TID), and returns
//! how many there are.

use std::path::PathBuf;

use iolab_tests::{sqlstate, TestServer};
use tokio_postgres::Client;

const ROWS: i64 = 200_000;

async fn count(client: &Client, sql: &str) -> i64 {
    client
        .query_one(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .get(0)
}

/// Pages of relation `name`.
async fn pages(client: &Client, name: &str) -> i64 {
    count(client, &format!("SELECT pg_relation_size('{name}') / 8192")).await
}

/// `iolab_btree_check(index)` equals the table's row count.
async fn assert_consistent(client: &Client, index: &str, table: &str) -> i64 {
    let rows = count(client, &format!("SELECT count(*) FROM {table}")).await;
    let entries = count(client, &format!("SELECT iolab_btree_check('{index}')")).await;
    assert_eq!(entries, rows, "index {index} against table {table}");
    entries
}

async fn relfilenode_path(server: &TestServer, client: &Client, relation: &str) -> PathBuf {
    let node = count(
        client,
        &format!("SELECT pg_relation_filenode('{relation}')::bigint"),
    )
    .await;
    server.data_dir.join("base").join(node.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_on_200k_rows_lists_restarts_and_stays_consistent() {
    let mut server = TestServer::start("btree_e2e");
    let client = server.client().await;
    client
        .batch_execute(&format!(
            "CREATE UNLOGGED TABLE t(a int, filler text);
             INSERT INTO t SELECT (10000 * random())::int, md5(i::text)
               FROM generate_series(1, {ROWS}) AS T(i);
             INSERT INTO t VALUES (NULL, 'no key');
             CREATE INDEX ON t(a);"
        ))
        .await
        .expect("load and CREATE INDEX");
    assert_eq!(assert_consistent(&client, "t_a_idx", "t").await, ROWS + 1);

    // The index is a relation of its own: a file, a size, a row in pg_class and pg_index.
    let file = relfilenode_path(&server, &client, "t_a_idx").await;
    assert!(file.exists(), "{}", file.display());
    let size = count(&client, "SELECT pg_relation_size('t_a_idx')").await;
    assert_eq!(size as u64, std::fs::metadata(&file).unwrap().len());
    // 200 001 int4 entries of about 10 000 keys, deduplicated into posting lists: about
    // 1 000 entries a leaf page (not deduplicated, 366: ~550 pages). PostgreSQL 18 makes
    // 196 pages of this table.
    assert!((170 * 8192..230 * 8192).contains(&size), "{size}");
    assert_eq!(
        count(&client, "SELECT pg_indexes_size('t')").await,
        size,
        "pg_indexes_size"
    );
    let row = client
        .query_one(
            "SELECT c.relkind::text, am.amname::text, i.indrelid::regclass::text, i.indkey::text
             FROM pg_class c JOIN pg_am am ON am.oid = c.relam
             JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = 't_a_idx'",
            &[],
        )
        .await
        .expect("catalog rows");
    assert_eq!(
        (
            row.get::<_, String>(0),
            row.get::<_, String>(1),
            row.get::<_, String>(2),
            row.get::<_, String>(3)
        ),
        ("i".into(), "btree".into(), "t".into(), "1".into())
    );
    assert_eq!(
        client
            .query_one(
                "SELECT indexdef FROM pg_indexes WHERE indexname = 't_a_idx'",
                &[]
            )
            .await
            .unwrap()
            .get::<_, String>(0),
        "CREATE INDEX t_a_idx ON public.t USING btree (a)"
    );

    // psql: \di+ lists it with its size, \d t shows it under Indexes:, \d t_a_idx — as
    // PostgreSQL 18 shows them.
    let pretty = client
        .query_one("SELECT pg_size_pretty(pg_relation_size('t_a_idx'))", &[])
        .await
        .unwrap()
        .get::<_, String>(0);
    let di = server.psql_ok(&["-c", "\\di+"]);
    let line = di
        .lines()
        .find(|l| l.contains("t_a_idx"))
        .unwrap_or_else(|| panic!("\\di+ lists no t_a_idx:\n{di}"));
    let cells: Vec<&str> = line.split('|').map(str::trim).collect();
    assert_eq!(
        cells,
        vec![
            "public",
            "t_a_idx",
            "index",
            "postgres",
            "t",
            "unlogged",
            "btree",
            pretty.as_str(),
            ""
        ],
        "{di}"
    );
    let d = server.psql_ok(&["-c", "\\d t"]);
    assert!(
        d.ends_with("Indexes:\n    \"t_a_idx\" btree (a)\n\n"),
        "\\d t:\n{d}"
    );
    assert_eq!(
        server.psql_ok(&["-c", "\\d t_a_idx"]),
        concat!(
            "   Unlogged index \"public.t_a_idx\"\n",
            " Column |  Type   | Key? | Definition \n",
            "--------+---------+------+------------\n",
            " a      | integer | yes  | a\n",
            "btree, for table \"public.t\"\n",
            "\n",
        )
    );

    // A restart (clean shutdown) keeps it, consistent.
    drop(client);
    server.restart();
    let client = server.client().await;
    assert_eq!(assert_consistent(&client, "t_a_idx", "t").await, ROWS + 1);

    // INSERT … SELECT and VALUES maintain it, as does COPY; a rolled-back insert leaves
    // entries for dead rows that the check tolerates.
    iolab_tests::run_script(
        &client,
        "INSERT INTO t SELECT (10000 * random())::int, md5(i::text)
               FROM generate_series(1, 50000) AS T(i);
             INSERT INTO t VALUES (-5, 'below'), (20000, 'above'), (NULL, 'null');
             BEGIN; INSERT INTO t SELECT 7, 'rolled back' FROM generate_series(1, 1000); ROLLBACK;",
    )
    .await
    .expect("inserts");
    let csv = server.data_dir.with_extension("btree.csv");
    std::fs::write(
        &csv,
        (0..5000)
            .map(|i| format!("{},copied\n", i % 97))
            .collect::<String>(),
    )
    .unwrap();
    server.psql_ok(&[
        "-c",
        &format!("\\copy t FROM '{}' WITH (FORMAT csv)", csv.display()),
    ]);
    std::fs::remove_file(&csv).unwrap();
    assert_eq!(
        assert_consistent(&client, "t_a_idx", "t").await,
        ROWS + 1 + 50_000 + 3 + 5000
    );

    // A second index on another column is maintained alongside; names don't collide.
    client
        .batch_execute("CREATE INDEX ON t(filler); CREATE INDEX ON t(a)")
        .await
        .unwrap();
    let names: Vec<String> = client
        .query(
            "SELECT indexname::text FROM pg_indexes WHERE tablename = 't' ORDER BY 1",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(names, vec!["t_a_idx", "t_a_idx1", "t_filler_idx"]);
    client
        .batch_execute("INSERT INTO t VALUES (1, 'one more')")
        .await
        .unwrap();
    for index in &names {
        assert_consistent(&client, index, "t").await;
    }

    // TRUNCATE empties every index; later inserts fill them again.
    client.batch_execute("TRUNCATE t").await.unwrap();
    assert_eq!(assert_consistent(&client, "t_a_idx", "t").await, 0);
    assert_eq!(
        count(&client, "SELECT pg_relation_size('t_a_idx')").await,
        8192
    );
    client
        .batch_execute("INSERT INTO t SELECT i % 10, 'x' FROM generate_series(1, 3000) AS T(i)")
        .await
        .unwrap();
    assert_eq!(assert_consistent(&client, "t_filler_idx", "t").await, 3000);

    // DROP INDEX removes the file; DROP TABLE removes the table's other indexes.
    let file = relfilenode_path(&server, &client, "t_a_idx").await;
    let other = relfilenode_path(&server, &client, "t_filler_idx").await;
    client.batch_execute("DROP INDEX t_a_idx").await.unwrap();
    assert!(!file.exists());
    assert_eq!(
        count(&client, "SELECT count(*) FROM pg_class WHERE relkind = 'i'").await,
        2
    );
    client.batch_execute("DROP TABLE t").await.unwrap();
    assert!(!other.exists());
    assert_eq!(
        count(&client, "SELECT count(*) FROM pg_class WHERE relkind = 'i'").await,
        0
    );
}

/// PostgreSQL 18's errors and notices for CREATE INDEX / DROP INDEX (SQLSTATE and text,
/// as checked against a live PostgreSQL 18).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_ddl_errors_match_postgres() {
    let server = TestServer::start("btree_errors");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t(a int, b text); CREATE INDEX i ON t USING btree (a)")
        .await
        .unwrap();
    let cases: &[(&str, &str, &str)] = &[
        (
            "CREATE INDEX ON nosuch(a)",
            "42P01",
            "relation \"nosuch\" does not exist",
        ),
        (
            "CREATE INDEX ON t(nosuch)",
            "42703",
            "column \"nosuch\" does not exist",
        ),
        (
            "CREATE INDEX i ON t(b)",
            "42P07",
            "relation \"i\" already exists",
        ),
        (
            "CREATE INDEX t ON t(b)",
            "42P07",
            "relation \"t\" already exists",
        ),
        (
            "CREATE TABLE i(x int)",
            "42P07",
            "relation \"i\" already exists",
        ),
        (
            "CREATE INDEX ON t USING nosuch (a)",
            "42704",
            "access method \"nosuch\" does not exist",
        ),
        (
            "DROP INDEX nosuch",
            "42704",
            "index \"nosuch\" does not exist",
        ),
        ("DROP INDEX t", "42809", "\"t\" is not an index"),
        ("DROP TABLE i", "42809", "\"i\" is not a table"),
        (
            "CREATE INDEX ON t(a) WITH (deduplicate_items = maybe)",
            "22023",
            "invalid value for boolean option \"deduplicate_items\": maybe",
        ),
        (
            "CREATE INDEX ON t(a) WITH (foo = 1)",
            "22023",
            "unrecognized parameter \"foo\"",
        ),
        (
            "CREATE INDEX ON t(a) WITH (fillfactor = 5)",
            "22023",
            "value 5 out of bounds for option \"fillfactor\"",
        ),
        (
            "CREATE INDEX ON t(a) WITH (fillfactor = 50, fillfactor = 60)",
            "22023",
            "parameter \"fillfactor\" specified more than once",
        ),
    ];
    for (sql, code, message) in cases {
        let e = client.batch_execute(sql).await.unwrap_err();
        assert_eq!(sqlstate(&e), *code, "{sql}");
        assert_eq!(e.as_db_error().unwrap().message(), *message, "{sql}");
    }
    let e = client.batch_execute("DROP TABLE i").await.unwrap_err();
    assert_eq!(
        e.as_db_error().unwrap().hint(),
        Some("Use DROP INDEX to remove an index.")
    );
    let out = server.psql(&[
        "-c",
        "CREATE INDEX IF NOT EXISTS i ON t(b)",
        "-c",
        "DROP INDEX IF EXISTS nosuch",
    ]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        concat!(
            "NOTICE:  relation \"i\" already exists, skipping\n",
            "NOTICE:  index \"nosuch\" does not exist, skipping\n",
        )
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "CREATE INDEX\nDROP INDEX\n"
    );
    // A key over a third of a page is refused with PostgreSQL's message (PostgreSQL
    // would compress a compressible value first; 3200 hex digits do not compress).
    client.batch_execute("CREATE INDEX ON t(b)").await.unwrap();
    let e = client
        .batch_execute(
            "INSERT INTO t SELECT 1, string_agg(md5(i::text), '') FROM generate_series(1, 100) AS T(i)",
        )
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&e), "54000");
    assert_eq!(
        e.as_db_error().unwrap().message(),
        "index row size 3216 exceeds btree version 4 maximum 2704 for index \"t_b_idx\""
    );
    assert_eq!(count(&client, "SELECT count(*) FROM t").await, 0);
}

/// Every key type iolab stores: indexes built on a table with NULLs, then maintained by
/// an INSERT, each checked against the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_type_builds_and_maintains() {
    let server = TestServer::start("btree_types");
    let client = server.client().await;
    let columns = [
        ("i2", "int2", "(i % 300 - 150)::int2"),
        ("i8", "int8", "(i::int8 * 7919) % 1000003 - 500000"),
        ("f8", "float8", "(i % 97)::float8 / 7 - 3"),
        ("f4", "float4", "(i % 89)::float4 / 3"),
        ("d", "date", "DATE '2000-01-01' + (i % 5000)"),
        (
            "ts",
            "timestamp",
            "TIMESTAMP '1969-12-31 23:00:00' + CAST((i % 1000) || ' minutes' AS INTERVAL)",
        ),
        (
            "tz",
            "timestamptz",
            "TIMESTAMPTZ '2024-06-01 00:00:00+00' + CAST((i % 777) || ' hours' AS INTERVAL)",
        ),
        ("t", "text", "md5((i % 1000)::text)"),
        ("v", "varchar(12)", "substr(md5(i::text), 1, 1 + i % 12)"),
        ("c", "char(3)", "substr(md5(i::text), 1, i % 4)"),
        ("n", "numeric(10,2)", "(i % 1000)::numeric / 8"),
        ("b", "bool", "i % 3 = 0"),
    ];
    let defs: Vec<String> = columns
        .iter()
        .map(|(name, ty, _)| format!("{name} {ty}"))
        .collect();
    // Every 10th row is all NULL.
    let values: Vec<String> = columns
        .iter()
        .map(|(_, _, expr)| format!("CASE WHEN i % 10 = 0 THEN NULL ELSE {expr} END"))
        .collect();
    let insert = |from: i32, to: i32| {
        format!(
            "INSERT INTO k SELECT {} FROM generate_series({from}, {to}) AS T(i)",
            values.join(", ")
        )
    };
    client
        .batch_execute(&format!(
            "CREATE TABLE k({}); {}",
            defs.join(", "),
            insert(1, 20000)
        ))
        .await
        .expect("load");
    for (name, _, _) in &columns {
        client
            .batch_execute(&format!("CREATE INDEX ON k({name})"))
            .await
            .unwrap_or_else(|e| panic!("CREATE INDEX ON k({name}): {e:?}"));
    }
    client.batch_execute(&insert(20001, 25000)).await.unwrap();
    for (name, _, _) in &columns {
        assert_eq!(
            assert_consistent(&client, &format!("k_{name}_idx"), "k").await,
            25000,
            "{name}"
        );
    }
}

/// Deduplication (PostgreSQL 13+): equal keys share posting list tuples, which
/// `deduplicate_items = off` turns off; `fillfactor` packs the leaves less. Both storage
/// parameters show in `pg_class.reloptions` and `pg_indexes.indexdef` as in PostgreSQL
/// 18, survive a restart, and hold for later inserts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn storage_parameters_deduplicate_items_and_fillfactor() {
    let mut server = TestServer::start("btree_reloptions");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE UNLOGGED TABLE t(a int, f float8);
             INSERT INTO t SELECT i % 100, i % 100 FROM generate_series(1, 100000) AS T(i);
             CREATE INDEX dedup ON t(a);
             CREATE INDEX plain ON t(a) WITH (deduplicate_items = OFF);
             CREATE INDEX half ON t(a) WITH (deduplicate_items = false, fillfactor = 50);
             CREATE INDEX floats ON t(f);",
        )
        .await
        .unwrap();
    // 100 000 int4 entries: ~1 000 a leaf deduplicated, ~366 plain, ~200 plain at half
    // fill; float8 keys are never deduplicated. PostgreSQL 18 makes 91, 278, 501 and 278
    // pages of this table.
    let (dedup, plain, half, floats) = (
        pages(&client, "dedup").await,
        pages(&client, "plain").await,
        pages(&client, "half").await,
        pages(&client, "floats").await,
    );
    let sizes = format!("dedup {dedup}, plain {plain}, half {half}, floats {floats}");
    assert!((85..=100).contains(&dedup), "{sizes}");
    assert!((270..=285).contains(&plain), "{sizes}");
    assert!((490..=510).contains(&half), "{sizes}");
    assert_eq!(floats, plain, "{sizes}");
    let options = iolab_tests::rows(
        &client,
        "SELECT relname, reloptions FROM pg_class
          WHERE relname IN ('dedup', 'plain', 'half') ORDER BY relname",
    )
    .await;
    assert_eq!(
        options,
        vec![
            vec![Some("dedup".into()), None],
            vec![
                Some("half".into()),
                Some("{deduplicate_items=false,fillfactor=50}".into())
            ],
            vec![Some("plain".into()), Some("{deduplicate_items=off}".into())],
        ]
    );
    let indexdef = |name: &'static str| {
        let client = &client;
        async move {
            client
                .query_one(
                    "SELECT indexdef FROM pg_indexes WHERE indexname = $1",
                    &[&name],
                )
                .await
                .unwrap()
                .get::<_, String>(0)
        }
    };
    assert_eq!(
        indexdef("half").await,
        "CREATE INDEX half ON public.t USING btree (a) WITH (deduplicate_items='false', fillfactor='50')"
    );
    assert_eq!(
        indexdef("plain").await,
        "CREATE INDEX plain ON public.t USING btree (a) WITH (deduplicate_items=off)"
    );

    let described = server.psql_ok(&["-c", "\\d+ plain"]);
    assert!(
        described.ends_with("btree, for table \"public.t\"\nOptions: deduplicate_items=off\n\n"),
        "{described}"
    );

    // After a restart the options still apply: inserting as many rows again roughly
    // doubles each index the way its options say.
    drop(client);
    server.restart();
    let client = server.client().await;
    client
        .batch_execute(
            "INSERT INTO t SELECT i % 100, i % 100 FROM generate_series(1, 100000) AS T(i)",
        )
        .await
        .unwrap();
    // The inserts go to every leaf; full leaves are deduplicated, or split where
    // PostgreSQL splits them (at key boundaries; a page of one key that is the last of
    // its run, 96 % left). PostgreSQL 18 ends with 257 and 626 pages.
    let (dedup2, plain2) = (pages(&client, "dedup").await, pages(&client, "plain").await);
    let sizes = format!("{sizes}; after the inserts dedup {dedup2}, plain {plain2}");
    assert!((245..=270).contains(&dedup2), "{sizes}");
    assert!((600..=650).contains(&plain2), "{sizes}");
    for index in ["dedup", "plain", "half", "floats"] {
        assert_eq!(
            assert_consistent(&client, index, "t").await,
            200_000,
            "{index}"
        );
    }
    // The same answers through each index.
    for index in ["dedup", "plain", "half"] {
        let others: Vec<String> = ["dedup", "plain", "half"]
            .iter()
            .filter(|i| **i != index)
            .map(|i| format!("DROP INDEX {i};"))
            .collect();
        client.batch_execute("BEGIN").await.unwrap();
        client.batch_execute(&others.concat()).await.unwrap();
        client
            .batch_execute("SET enable_seqscan = off")
            .await
            .unwrap();
        assert_eq!(
            count(&client, "SELECT count(*) FROM t WHERE a BETWEEN 10 AND 19").await,
            20_000,
            "{index}"
        );
        client
            .batch_execute("ROLLBACK; RESET enable_seqscan")
            .await
            .unwrap();
    }
}

/// Beyond `maintenance_work_mem`, CREATE INDEX sorts in runs written to temporary files
/// and merges them: the index is the one an in-memory sort builds (same entries, same
/// pages), the files are counted, and a unique build still finds a duplicate that only
/// the merge brings together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_builds_beyond_maintenance_work_mem_sort_in_runs() {
    let server = TestServer::start("btree-runs");
    let client = server.client().await;
    client
        .batch_execute(&format!(
            "CREATE TABLE r (a int, t text, u int);
             INSERT INTO r SELECT (i * 7919) % 50000, md5(i::text), i FROM generate_series(1, {ROWS}) i;
             INSERT INTO r VALUES (NULL, NULL, 1);"
        ))
        .await
        .unwrap();
    let temp_files = "SELECT temp_files FROM pg_stat_database WHERE datname = 'postgres'";
    let mut built = Vec::new();
    for (setting, suffix) in [("1GB", "mem"), ("1MB", "runs")] {
        let before = count(&client, temp_files).await;
        client
            .batch_execute(&format!(
                "SET maintenance_work_mem = '{setting}';
                 CREATE INDEX r_a_{suffix} ON r (a); CREATE INDEX r_t_{suffix} ON r (t);"
            ))
            .await
            .unwrap();
        let files = count(&client, temp_files).await - before;
        match suffix {
            "mem" => assert_eq!(files, 0, "in memory: no temporary file"),
            _ => assert!(files >= 4, "{files} runs"),
        }
        for column in ["a", "t"] {
            let index = format!("r_{column}_{suffix}");
            assert_eq!(assert_consistent(&client, &index, "r").await, ROWS + 1);
            built.push(pages(&client, &index).await);
        }
    }
    assert_eq!(
        built[0..2],
        built[2..4],
        "pages of the in-memory and the run-merged builds"
    );

    // Unique: the duplicate 1 in `u` sits in the first and the last run.
    let err = client
        .batch_execute("CREATE UNIQUE INDEX r_u ON r (u)")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "23505");
    assert_eq!(
        err.as_db_error().unwrap().detail(),
        Some("Key (u)=(1) is duplicated.")
    );
    client
        .batch_execute("DELETE FROM r WHERE a IS NULL; CREATE UNIQUE INDEX r_u ON r (u)")
        .await
        .unwrap();
    assert_eq!(assert_consistent(&client, "r_u", "r").await, ROWS);
    let left = iolab_tests::files_under(&server.data_dir.join("base/pgsql_tmp"));
    assert!(left.is_empty(), "{left:?}");
}
