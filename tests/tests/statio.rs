//! Per-relation statistics: `pg_statio_*_tables` and `pg_statio_*_indexes` (blocks read
//! into the pool and found there, checked against the table's size and against EXPLAIN's
//! `Buffers:` of the same scans), `pg_stat_*_indexes` (index scans and their rows) and
//! `pg_stat_*_tables` (scans, rows, VACUUM and ANALYZE, as PostgreSQL 18 counts them).

use iolab_tests::{evict, figure, int, plan, rows, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_counts_per_table_and_index() {
    // A table small enough that a scan reads it into the pool without a ring.
    let server = TestServer::start_with("statio", &["-c", "shared_buffers=16MB"]);
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE t(a int, filler text);
             INSERT INTO t SELECT i % 100, md5(i::text) FROM generate_series(1, 20000) AS T(i);
             CREATE INDEX t_a ON t(a);
             CREATE TABLE bare(x int);
             SELECT pg_stat_reset();",
        )
        .await
        .unwrap();
    let blocks = int(&client, "SELECT pg_relation_size('t') / 8192").await;
    let heap = |which: &'static str| {
        let client = &client;
        async move {
            int(
                client,
                &format!("SELECT heap_blks_{which} FROM pg_statio_user_tables WHERE relname = 't'"),
            )
            .await
        }
    };
    assert_eq!(
        (heap("read").await, heap("hit").await),
        (0, 0),
        "after pg_stat_reset()"
    );

    // Cold, a count reads every block once; warm, it finds every block.
    evict(&client, "t").await;
    client
        .batch_execute("SELECT count(*) FROM t")
        .await
        .unwrap();
    assert_eq!((heap("read").await, heap("hit").await), (blocks, 0));
    client
        .batch_execute("SELECT count(*) FROM t")
        .await
        .unwrap();
    assert_eq!((heap("read").await, heap("hit").await), (blocks, blocks));

    // A bitmap scan, cold: the index's and the heap's counts are EXPLAIN's.
    evict(&client, "t").await;
    evict(&client, "t_a").await;
    client
        .batch_execute("SELECT pg_stat_reset(); SET enable_seqscan = off")
        .await
        .unwrap();
    let lines = plan(
        &client,
        "EXPLAIN (ANALYZE, BUFFERS) SELECT * FROM t WHERE a < 3",
    )
    .await;
    let ctx = format!("{lines:#?}");
    let index_at = lines
        .iter()
        .position(|l| l.contains("Bitmap Index Scan on t_a"))
        .unwrap_or_else(|| panic!("{ctx}"));
    let buffers =
        |lines: &[String], key: &str| figure(lines, "Buffers:", key).unwrap_or(0.0) as i64;
    let (index_read, index_hit) = (
        buffers(&lines[index_at..], " read="),
        buffers(&lines[index_at..], " hit="),
    );
    // The heap node's line includes its child's.
    let heap_read = buffers(&lines[..index_at], " read=") - index_read;
    let heap_hit = buffers(&lines[..index_at], " hit=") - index_hit;
    assert!(index_read > 0 && heap_read > 0, "{ctx}");
    // The planner read the index's meta page (for the tree's height): `Planning:`.
    let planning_read = match lines.iter().position(|l| l == "Planning:") {
        Some(at) => buffers(&lines[at..], " read="),
        None => 0,
    };
    let index_read = index_read + planning_read;
    let tables = rows(
        &client,
        "SELECT heap_blks_read, heap_blks_hit, idx_blks_read, idx_blks_hit
           FROM pg_statio_user_tables WHERE relname = 't'",
    )
    .await;
    let as_ints = |r: &[Option<String>]| -> Vec<i64> {
        r.iter()
            .map(|v| v.as_deref().unwrap().parse().unwrap())
            .collect()
    };
    assert_eq!(
        as_ints(&tables[0]),
        vec![heap_read, heap_hit, index_read, index_hit],
        "{ctx}"
    );
    let indexes = rows(
        &client,
        "SELECT relname, indexrelname, idx_blks_read, idx_blks_hit,
                indexrelid = 't_a'::regclass::oid, relid = 't'::regclass::oid
           FROM pg_statio_user_indexes",
    )
    .await;
    assert_eq!(
        indexes,
        vec![vec![
            Some("t".into()),
            Some("t_a".into()),
            Some(index_read.to_string()),
            Some(index_hit.to_string()),
            Some("t".into()),
            Some("t".into())
        ]]
    );

    // A table without indexes has NULL index counts; no TOAST anywhere; the `all` views
    // have the same rows.
    assert_eq!(
        rows(
            &client,
            "SELECT idx_blks_read, idx_blks_hit, toast_blks_read, tidx_blks_hit
               FROM pg_statio_user_tables WHERE relname = 'bare'"
        )
        .await,
        vec![vec![None, None, None, None]]
    );
    for (all, user) in [
        ("pg_statio_all_tables", "pg_statio_user_tables"),
        ("pg_statio_all_indexes", "pg_statio_user_indexes"),
    ] {
        assert_eq!(
            rows(&client, &format!("SELECT * FROM {all} ORDER BY relid")).await,
            rows(&client, &format!("SELECT * FROM {user} ORDER BY relid")).await
        );
    }
    // A dropped index leaves the views, and the table's index counts with it.
    client.batch_execute("DROP INDEX t_a").await.unwrap();
    assert_eq!(
        int(&client, "SELECT count(*) FROM pg_statio_user_indexes").await,
        0
    );
    assert_eq!(
        rows(
            &client,
            "SELECT idx_blks_read FROM pg_statio_user_tables WHERE relname = 't'"
        )
        .await,
        vec![vec![None]]
    );
}

/// `pg_stat_user_indexes`: index searches, the entries they returned, and the rows plain
/// Index Scans fetched, checked against EXPLAIN's counts of the same scans.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn index_scan_counts() {
    let server = TestServer::start("stat_indexes");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE t(a int, filler text);
             INSERT INTO t SELECT i % 100, md5(i::text) FROM generate_series(1, 20000) AS T(i);
             CREATE INDEX t_a ON t(a);
             SELECT pg_stat_reset();",
        )
        .await
        .unwrap();
    let counts = "SELECT idx_scan, idx_tup_read, idx_tup_fetch, last_idx_scan IS NOT NULL
                    FROM pg_stat_user_indexes WHERE indexrelname = 't_a'";
    let as_text = |v: &[&str]| -> Vec<Vec<Option<String>>> {
        vec![v.iter().map(|s| Some(s.to_string())).collect()]
    };
    assert_eq!(rows(&client, counts).await, as_text(&["0", "0", "0", "f"]));
    // A bitmap scan: one search, its entries; no fetch counted for the index.
    client
        .batch_execute("SET enable_seqscan = off")
        .await
        .unwrap();
    let bitmap = plan(&client, "EXPLAIN ANALYZE SELECT * FROM t WHERE a < 3").await;
    assert!(bitmap[0].starts_with("Bitmap Heap Scan"), "{bitmap:#?}");
    assert_eq!(
        rows(&client, counts).await,
        as_text(&["1", "600", "0", "t"])
    );
    // A plain Index Scan: one more search; its rows are fetched through the index.
    client
        .batch_execute("SET enable_bitmapscan = off")
        .await
        .unwrap();
    let index = plan(&client, "EXPLAIN ANALYZE SELECT * FROM t WHERE a = 7").await;
    assert!(index[0].starts_with("Index Scan using t_a"), "{index:#?}");
    assert_eq!(
        rows(&client, counts).await,
        as_text(&["2", "800", "200", "t"])
    );
    // The `all` view has the same row; pg_stat_reset() zeroes it.
    assert_eq!(
        rows(&client, "SELECT * FROM pg_stat_all_indexes").await,
        rows(&client, "SELECT * FROM pg_stat_user_indexes").await
    );
    client
        .batch_execute("SELECT pg_stat_reset()")
        .await
        .unwrap();
    assert_eq!(rows(&client, counts).await, as_text(&["0", "0", "0", "f"]));
}

/// `pg_stat_user_tables`: scans and the rows they read, rows inserted by committed and
/// aborted transactions (counted when the transaction ends), ANALYZE, VACUUM and TRUNCATE;
/// every figure as PostgreSQL 18 gives it for the same statements.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_activity_counts() {
    let server = TestServer::start("stat_tables");
    let client = server.client().await;
    let columns: Vec<(String, String)> = client
        .prepare("SELECT * FROM pg_stat_user_tables")
        .await
        .unwrap()
        .columns()
        .iter()
        .map(|c| (c.name().to_string(), c.type_().name().to_string()))
        .collect();
    let expected = "relid oid, schemaname name, relname name, seq_scan int8, \
        last_seq_scan timestamptz, seq_tup_read int8, idx_scan int8, last_idx_scan timestamptz, \
        idx_tup_fetch int8, n_tup_ins int8, n_tup_upd int8, n_tup_del int8, n_tup_hot_upd int8, \
        n_tup_newpage_upd int8, n_live_tup int8, n_dead_tup int8, n_mod_since_analyze int8, \
        n_ins_since_vacuum int8, last_vacuum timestamptz, last_autovacuum timestamptz, \
        last_analyze timestamptz, last_autoanalyze timestamptz, vacuum_count int8, \
        autovacuum_count int8, analyze_count int8, autoanalyze_count int8, \
        total_vacuum_time float8, total_autovacuum_time float8, total_analyze_time float8, \
        total_autoanalyze_time float8";
    let expected: Vec<(String, String)> = expected
        .split(", ")
        .map(|c| {
            let (name, ty) = c.split_once(' ').unwrap();
            (name.to_string(), ty.to_string())
        })
        .collect();
    // (iolab's catalogs send oid and name columns as int8 and text.)
    assert_eq!(columns[3..], expected[3..], "PostgreSQL 18's columns");
    let names = |c: &[(String, String)]| c.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&columns), names(&expected));

    client
        .batch_execute(
            "CREATE TABLE st(a int, b text);
             INSERT INTO st SELECT i % 100, md5(i::text) FROM generate_series(1, 1000) AS T(i);",
        )
        .await
        .unwrap();
    let state = "SELECT seq_scan, seq_tup_read, idx_scan, idx_tup_fetch, n_tup_ins, n_live_tup,
                        n_dead_tup, n_mod_since_analyze, n_ins_since_vacuum, vacuum_count,
                        analyze_count, last_seq_scan IS NOT NULL, last_analyze IS NOT NULL,
                        last_vacuum IS NOT NULL, total_analyze_time > 0
                   FROM pg_stat_user_tables WHERE relname = 'st'";
    let is = |expected: &str| -> Vec<Vec<Option<String>>> {
        vec![expected
            .split(' ')
            .map(|v| (v != "-").then(|| v.to_string()))
            .collect()]
    };
    //           seq  tup  idx  fetch ins   live  dead mod   ins_vac vac an  times
    let fresh = "0    0    -    -     1000  1000  0    1000  1000    0   0   f f f f";
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(rows(&client, state).await, is(&squeeze(fresh)));

    // A count reads every row; LIMIT 5 returns five.
    client
        .batch_execute("SELECT count(*) FROM st")
        .await
        .unwrap();
    client
        .batch_execute("SELECT * FROM st LIMIT 5")
        .await
        .unwrap();
    let scanned = "2 1005 - - 1000 1000 0 1000 1000 0 0 t f f f";
    assert_eq!(rows(&client, state).await, is(scanned));
    // CREATE INDEX scans the table (PostgreSQL counts that scan too).
    client
        .batch_execute("CREATE INDEX st_a ON st(a)")
        .await
        .unwrap();
    let indexed = "3 2005 0 0 1000 1000 0 1000 1000 0 0 t f f f";
    assert_eq!(rows(&client, state).await, is(indexed));

    // Rows of an open transaction count when it ends: here as dead rows, as it aborts.
    let other = server.client().await;
    other
        .batch_execute("BEGIN; INSERT INTO st SELECT 1, 'x' FROM generate_series(1, 10)")
        .await
        .unwrap();
    assert_eq!(rows(&client, state).await, is(indexed));
    other.batch_execute("ROLLBACK").await.unwrap();
    let aborted = "3 2005 0 0 1010 1000 10 1000 1010 0 0 t f f f";
    assert_eq!(rows(&client, state).await, is(aborted));

    // A Bitmap Heap Scan's rows, then an Index Scan's, are fetched rows of the table.
    client
        .batch_execute("SET enable_seqscan = off; SET enable_indexscan = off")
        .await
        .unwrap();
    assert_eq!(
        int(&client, "SELECT count(*) FROM st WHERE a < 5").await,
        50
    );
    client
        .batch_execute("SET enable_bitmapscan = off; SET enable_indexscan = on")
        .await
        .unwrap();
    let index = plan(&client, "EXPLAIN ANALYZE SELECT * FROM st WHERE a = 3").await;
    assert!(index[0].starts_with("Index Scan using st_a"), "{index:#?}");
    let fetched = "3 2005 2 60 1010 1000 10 1000 1010 0 0 t f f f";
    assert_eq!(rows(&client, state).await, is(fetched));

    // ANALYZE estimates live and dead rows and restarts n_mod_since_analyze; VACUUM
    // removes the dead ones and restarts n_ins_since_vacuum.
    client.batch_execute("ANALYZE st").await.unwrap();
    let analyzed = "3 2005 2 60 1010 1000 10 0 1010 0 1 t t f t";
    assert_eq!(rows(&client, state).await, is(analyzed));
    client.batch_execute("VACUUM st").await.unwrap();
    let vacuumed = "3 2005 2 60 1010 1000 0 0 0 1 1 t t t t";
    assert_eq!(rows(&client, state).await, is(vacuumed));

    // TRUNCATE empties the table but keeps its counts; a rolled-back one changes nothing.
    client.batch_execute("TRUNCATE st").await.unwrap();
    let truncated = "3 2005 2 60 1010 0 0 0 0 1 1 t t t t";
    assert_eq!(rows(&client, state).await, is(truncated));
    client
        .batch_execute(
            "INSERT INTO st VALUES (1, 'a');
             BEGIN; TRUNCATE st; INSERT INTO st VALUES (1, 'a'), (2, 'b'); COMMIT;",
        )
        .await
        .unwrap();
    let refilled = "3 2005 2 60 1013 2 0 3 2 1 1 t t t t";
    assert_eq!(rows(&client, state).await, is(refilled));
    client
        .batch_execute("BEGIN; TRUNCATE st; ROLLBACK;")
        .await
        .unwrap();
    assert_eq!(rows(&client, state).await, is(refilled));

    // pg_stat_reset_single_table_counters zeroes one table's counts, live rows too (as
    // PostgreSQL does), leaves the others' alone and moves the database's stats_reset. A
    // table's idx_scan and the index part of idx_tup_fetch are its indexes' counts, which
    // stay (PostgreSQL's view sums them over the indexes too).
    client
        .batch_execute("CREATE TABLE kept(a int); INSERT INTO kept VALUES (1); SELECT * FROM kept")
        .await
        .unwrap();
    let kept =
        "SELECT seq_scan, n_tup_ins, n_live_tup FROM pg_stat_user_tables WHERE relname = 'kept'";
    let reset_at =
        "SELECT stats_reset::text FROM pg_stat_database WHERE datname = current_database()";
    let before = rows(&client, reset_at).await;
    client
        .batch_execute("SELECT pg_stat_reset_single_table_counters('st'::regclass)")
        .await
        .unwrap();
    let table_reset = "0 0 2 10 0 0 0 0 0 0 0 f f f f";
    assert_eq!(rows(&client, state).await, is(table_reset));
    assert_eq!(rows(&client, kept).await, is("1 1 1"));
    let after = rows(&client, reset_at).await;
    assert!(
        after[0][0].is_some() && after != before,
        "{before:?} → {after:?}"
    );
    // An OID that names no relation is let be.
    client
        .batch_execute("SELECT pg_stat_reset_single_table_counters(0)")
        .await
        .unwrap();
    assert_eq!(rows(&client, kept).await, is("1 1 1"));

    // The `all` view has the same rows; pg_stat_reset() zeroes them.
    assert_eq!(
        rows(&client, "SELECT * FROM pg_stat_all_tables").await,
        rows(&client, "SELECT * FROM pg_stat_user_tables").await
    );
    client
        .batch_execute("SELECT pg_stat_reset()")
        .await
        .unwrap();
    let reset = "0 0 0 0 0 0 0 0 0 0 0 f f f f";
    assert_eq!(rows(&client, state).await, is(reset));
    assert_eq!(rows(&client, kept).await, is("0 0 0"));
}
