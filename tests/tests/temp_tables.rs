//! Temporary tables (`CREATE TEMP TABLE`): private to their session, in its schema
//! `pg_temp_N`, found before `public` tables of the same name, cached in the session's
//! local buffers (`temp_buffers`) and counted as `local` blocks in EXPLAIN and as
//! `temp relation` I/O in `pg_stat_io`; `ON COMMIT` actions; gone with their session, and
//! after a crash at the next start.

use iolab_tests::{error, figure, int, plan, rows, TestServer};

#[tokio::test(flavor = "multi_thread")]
async fn temporary_tables_are_private_and_go_with_their_session() {
    let server = TestServer::start("temp-private");
    let a = server.client().await;
    let b = server.client().await;
    a.batch_execute("CREATE TABLE t(a int); INSERT INTO t VALUES (1), (2)")
        .await
        .unwrap();
    a.batch_execute("CREATE TEMP TABLE t(a int); INSERT INTO t SELECT generate_series(1, 1000)")
        .await
        .unwrap();
    b.batch_execute("CREATE TEMPORARY TABLE t(a int); INSERT INTO t VALUES (7)")
        .await
        .unwrap();
    // Each session finds its own first; `public.t` is still there for both.
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, 1000);
    assert_eq!(int(&b, "SELECT max(a) FROM t").await, 7);
    assert_eq!(int(&a, "SELECT count(*) FROM pg_temp.t").await, 1000);
    a.batch_execute("UPDATE t SET a = a + 1 WHERE a <= 10; DELETE FROM t WHERE a > 990")
        .await
        .unwrap();
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, 990);
    assert_eq!(int(&b, "SELECT count(*) FROM t").await, 1);

    let schema_of = |client: &'static str| {
        format!(
            "SELECT relnamespace::regnamespace::text FROM pg_class \
             WHERE relname = 't' AND relpersistence = 't' AND {client}"
        )
    };
    let own = "relnamespace = pg_my_temp_schema()";
    let a_schema = rows(&a, &schema_of(own)).await[0][0].clone().unwrap();
    let b_schema = rows(&b, &schema_of(own)).await[0][0].clone().unwrap();
    assert!(a_schema.starts_with("pg_temp_"), "{a_schema}");
    assert_ne!(a_schema, b_schema);
    assert_eq!(
        rows(&a, "SELECT (current_schemas(true))[1]").await[0][0].as_deref(),
        Some(a_schema.as_str())
    );
    // Another session's temporary table: found by name, but not readable.
    let (code, message) = error(&b, &format!("SELECT * FROM {a_schema}.t")).await;
    assert_eq!(code, "0A000");
    assert_eq!(message, "cannot access temporary tables of other sessions");
    let (code, _) = error(&b, &format!("INSERT INTO {a_schema}.t VALUES (1)")).await;
    assert_eq!(code, "0A000");
    // VACUUM and ANALYZE of the whole database leave other sessions' temporary tables
    // alone, and analyze one's own.
    iolab_tests::run_script(&b, "VACUUM; ANALYZE")
        .await
        .unwrap();
    let analyzed = "SELECT count(*) FROM pg_class WHERE relname = 't' \
                    AND relpersistence = 't' AND reltuples >= 0";
    assert_eq!(int(&b, analyzed).await, 1);
    // A temporary table cannot be put in a permanent schema.
    let (code, message) = error(&a, "CREATE TEMP TABLE public.u(a int)").await;
    assert_eq!(code, "42P16");
    assert_eq!(
        message,
        "cannot create temporary relation in non-temporary schema"
    );

    // Its file and catalog entries go with the session.
    let filenode = int(&a, "SELECT pg_relation_filenode('t')").await;
    let file = server.data_dir.join(format!("base/{filenode}"));
    assert!(file.exists());
    drop(a);
    let gone = "SELECT count(*) FROM pg_class WHERE relpersistence = 't' \
                AND relnamespace <> pg_my_temp_schema()";
    for _ in 0..100 {
        if int(&b, gone).await == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(int(&b, gone).await, 0);
    assert!(!file.exists(), "{} is left", file.display());
    // With its temporary table dropped, b finds the permanent one again.
    b.batch_execute("DROP TABLE t").await.unwrap();
    assert_eq!(int(&b, "SELECT count(*) FROM t").await, 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn local_buffers_cache_temporary_tables_and_count_as_local_io() {
    let server = TestServer::start("temp-local-buffers");
    let c = server.client().await;
    // 100 local buffers (800 kB, temp_buffers' least), for a table of ≈ 590 pages.
    c.batch_execute(
        "SET temp_buffers = '800kB';
         CREATE TEMP TABLE big(a int, b text);
         INSERT INTO big SELECT i, repeat('x', 200) FROM generate_series(1, 20000) i;
         CREATE INDEX big_a ON big(a)",
    )
    .await
    .unwrap();
    let pages = int(&c, "SELECT pg_relation_size('big') / 8192").await;
    assert!(pages > 500, "{pages} pages");
    // Nothing of it is in shared buffers, and it cannot be evicted from there.
    assert_eq!(
        int(
            &c,
            "SELECT count(*) FROM pg_buffercache WHERE relfilenode = pg_relation_filenode('big')"
        )
        .await,
        0
    );
    let (code, _) = error(&c, "SELECT pg_buffercache_evict_relation('big')").await;
    assert_eq!(code, "0A000");

    c.batch_execute("SELECT pg_stat_reset_shared('io')")
        .await
        .unwrap();
    let scan = plan(
        &c,
        "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT count(*) FROM big",
    )
    .await;
    let seq = scan
        .iter()
        .position(|l| l.contains("Seq Scan on big"))
        .unwrap_or_else(|| panic!("{scan:#?}"));
    let below = &scan[seq..];
    // The table is larger than the local buffers: every page is read, none from shared.
    assert_eq!(
        figure(below, "Buffers:", "read="),
        Some(pages as f64),
        "{scan:#?}"
    );
    let buffers = below.iter().find(|l| l.contains("Buffers:")).unwrap();
    assert!(
        buffers.trim_start().starts_with("Buffers: local read="),
        "{buffers}"
    );
    assert!(!buffers.contains("shared"), "{buffers}");
    let io = rows(
        &c,
        "SELECT reads, read_bytes, evictions FROM pg_stat_io \
         WHERE backend_type = 'client backend' AND object = 'temp relation' AND context = 'normal'",
    )
    .await;
    let number = |i: usize| io[0][i].as_deref().unwrap().parse::<i64>().unwrap();
    assert!(number(0) > 0 && number(0) <= pages, "{io:?}");
    assert_eq!(number(1), pages * 8192, "{io:?}");
    assert!(number(2) >= pages - 100, "{io:?}");

    // pg_stat_statements counts the same blocks as local.
    assert_eq!(int(&c, "SELECT count(*) FROM big").await, 20000);
    let statement = rows(
        &c,
        "SELECT local_blks_read, shared_blks_read FROM pg_stat_statements \
         WHERE query = 'SELECT count(*) FROM big'",
    )
    .await;
    assert_eq!(statement[0][0].as_deref(), Some(pages.to_string().as_str()));
    assert_eq!(statement[0][1].as_deref(), Some("0"));

    // The index lives in the local buffers too, and answers.
    assert_eq!(int(&c, "SELECT count(*) FROM big WHERE a < 100").await, 99);
    let lookup = plan(
        &c,
        "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT * FROM big WHERE a = 5",
    )
    .await;
    assert!(
        lookup.iter().any(|l| l.contains("Index Cond: (a = 5)")),
        "{lookup:#?}"
    );
    assert!(
        lookup
            .iter()
            .all(|l| !l.contains("Buffers:") || l.contains("local")),
        "{lookup:#?}"
    );

    // temp_buffers is fixed once the session has local buffers.
    let (code, message) = error(&c, "SET temp_buffers = '16MB'").await;
    assert_eq!(code, "22023");
    assert_eq!(
        message,
        "invalid value for parameter \"temp_buffers\": 2048"
    );
    c.batch_execute("SET temp_buffers = '800kB'").await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn on_commit_actions_and_rolled_back_creation() {
    let server = TestServer::start("temp-on-commit");
    let c = server.client().await;
    c.batch_execute("CREATE TEMP TABLE d(a int) ON COMMIT DELETE ROWS")
        .await
        .unwrap();
    c.batch_execute("INSERT INTO d VALUES (1), (2)")
        .await
        .unwrap();
    assert_eq!(int(&c, "SELECT count(*) FROM d").await, 0);
    c.batch_execute("BEGIN; INSERT INTO d VALUES (1), (2), (3)")
        .await
        .unwrap();
    assert_eq!(int(&c, "SELECT count(*) FROM d").await, 3);
    c.batch_execute("COMMIT").await.unwrap();
    assert_eq!(int(&c, "SELECT count(*) FROM d").await, 0);

    c.batch_execute("BEGIN; CREATE TEMP TABLE dr(a int) ON COMMIT DROP; INSERT INTO dr VALUES (5)")
        .await
        .unwrap();
    assert_eq!(int(&c, "SELECT sum(a) FROM dr").await, 5);
    c.batch_execute("COMMIT").await.unwrap();
    let (code, _) = error(&c, "SELECT * FROM dr").await;
    assert_eq!(code, "42P01");

    c.batch_execute("BEGIN; CREATE TEMP TABLE rb(a int); INSERT INTO rb VALUES (1); ROLLBACK")
        .await
        .unwrap();
    let (code, _) = error(&c, "SELECT * FROM rb").await;
    assert_eq!(code, "42P01");

    let (code, message) = error(&c, "CREATE TABLE p(a int) ON COMMIT DROP").await;
    assert_eq!(code, "42P16");
    assert_eq!(message, "ON COMMIT can only be used on temporary tables");

    // CREATE TEMP TABLE … AS, and TRUNCATE.
    c.batch_execute("CREATE TEMP TABLE x AS SELECT generate_series(1, 5) AS g")
        .await
        .unwrap();
    assert_eq!(int(&c, "SELECT sum(g) FROM x").await, 15);
    c.batch_execute("TRUNCATE x").await.unwrap();
    assert_eq!(int(&c, "SELECT count(*) FROM x").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_crash_leaves_no_temporary_table_behind() {
    let mut server = TestServer::start("temp-crash");
    let c = server.client().await;
    c.batch_execute("CREATE TEMP TABLE t(a int); INSERT INTO t SELECT generate_series(1, 100)")
        .await
        .unwrap();
    let filenode = int(&c, "SELECT pg_relation_filenode('t')").await;
    drop(c);
    server.kill();
    server.restart();
    let c = server.client().await;
    assert_eq!(
        int(
            &c,
            "SELECT count(*) FROM pg_class WHERE relpersistence = 't'"
        )
        .await,
        0
    );
    assert!(!server.data_dir.join(format!("base/{filenode}")).exists());
    // The next session's temporary table of the same name starts empty.
    c.batch_execute("CREATE TEMP TABLE t(a int)").await.unwrap();
    assert_eq!(int(&c, "SELECT count(*) FROM t").await, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn ddl_on_temporary_tables() {
    let server = TestServer::start("temp-ddl");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TEMP TABLE s(id serial, v int);
         INSERT INTO s(v) VALUES (10), (20);
         ALTER TABLE s ADD COLUMN w int DEFAULT 5;
         ALTER TABLE s RENAME TO r;
         ANALYZE r",
    )
    .await
    .unwrap();
    assert_eq!(int(&c, "SELECT sum(w) FROM r").await, 10);
    // The serial column's sequence is in the temporary schema too, found by its name.
    assert_eq!(int(&c, "SELECT nextval('s_id_seq')").await, 3);
    assert_eq!(
        int(
            &c,
            "SELECT count(*) FROM pg_class WHERE relname IN ('r', 's_id_seq') \
             AND relpersistence = 't' AND relnamespace = pg_my_temp_schema()"
        )
        .await,
        2
    );
    let (code, message) = error(&c, "CREATE VIEW v AS SELECT * FROM r").await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        ("0A000", "temporary views are not supported")
    );
    let (code, _) = error(&c, "CREATE TEMP SEQUENCE q").await;
    assert_eq!(code, "0A000");
    c.batch_execute("DROP TABLE r; CREATE TEMP TABLE a(x int); CREATE TEMP TABLE b(y int)")
        .await
        .unwrap();
    let temporary = "SELECT count(*) FROM pg_class WHERE relpersistence = 't'";
    assert_eq!(int(&c, temporary).await, 2);
    // DISCARD TEMP drops every one of them.
    c.batch_execute("DISCARD TEMP").await.unwrap();
    assert_eq!(int(&c, temporary).await, 0);
    let (code, _) = error(&c, "SELECT * FROM a").await;
    assert_eq!(code, "42P01");
}

/// A temporary table hides a `public` one of the same name only from unqualified names:
/// `public.t` reads, updates and deletes the persistent table, as in PostgreSQL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn public_qualified_names_skip_the_temporary_table() {
    let server = TestServer::start("temp_public");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE t(a int); INSERT INTO t VALUES (1), (3);
         CREATE TEMP TABLE t(a int, b int); INSERT INTO t VALUES (2, 2);",
    )
    .await
    .unwrap();
    assert_eq!(int(&c, "SELECT sum(a) FROM public.t").await, 4);
    assert_eq!(int(&c, "SELECT sum(a) FROM t").await, 2);
    assert_eq!(int(&c, "SELECT sum(a) FROM PUBLIC.t").await, 4);
    c.batch_execute("UPDATE public.t SET a = a * 10")
        .await
        .unwrap();
    c.batch_execute("DELETE FROM public.t WHERE a = 10")
        .await
        .unwrap();
    assert_eq!(int(&c, "SELECT sum(a) FROM public.t").await, 30);
    assert_eq!(int(&c, "SELECT sum(a) + sum(b) FROM pg_temp.t").await, 4);
    assert_eq!(
        int(&c, "SELECT count(*) FROM public.t JOIN t USING (a)").await,
        0
    );
    let err = c
        .batch_execute("SELECT * FROM public.nosuch")
        .await
        .unwrap_err();
    assert_eq!(
        err.as_db_error().unwrap().message(),
        "relation \"public.nosuch\" does not exist"
    );
}
