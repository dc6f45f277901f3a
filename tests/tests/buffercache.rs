//! PostgreSQL 18's pg_buffercache (1.6), built into iolab: the `pg_buffercache` view,
//! `pg_buffercache_summary()`, `pg_buffercache_usage_counts()` and the three evict
//! functions, against a real iolab — a scanned table's blocks are all in the view, the
//! summaries agree with it, and after `pg_buffercache_evict_relation` the next scan reads
//! every block again (EXPLAIN's `Buffers: shared read=…`).
//!
//! Differences from PostgreSQL 18 that these tests accept:
//! - The `oid` columns (`relfilenode`, `reltablespace`, `reldatabase`) are `bigint`, as
//!   every OID column of iolab's catalogs is.
//! - In a select list the functions' records are `text` (`(87,84,0)`), not `record`.
//! - The objects are in `pg_catalog` from the start; `CREATE EXTENSION pg_buffercache`
//!   succeeds and changes nothing (also when run twice).

use iolab_tests::tokio_postgres::types::Type;
use iolab_tests::tokio_postgres::Client;
use iolab_tests::{rows, sqlstate, TestServer};

/// 2048 buffers: a table of a few hundred blocks is scanned without a bulk-read ring
/// (PostgreSQL and iolab use one only above a quarter of the pool), so it all stays.
const SERVER_ARGS: &[&str] = &["-c", "shared_buffers=16MB"];
const ROWS: i64 = 20_000;

/// The one row of a query, as integers (NULL as -1).
async fn ints(client: &Client, sql: &str) -> Vec<i64> {
    let r = rows(client, sql).await;
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0].iter()
        .map(|v| v.as_deref().map_or(-1, |s| s.parse().unwrap()))
        .collect()
}

async fn int(client: &Client, sql: &str) -> i64 {
    ints(client, sql).await[0]
}

/// EXPLAIN (ANALYZE, BUFFERS)'s `Buffers:` line of the scan of `t`.
async fn scan_buffers(client: &Client) -> String {
    let plan = rows(
        client,
        "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT count(*) FROM t",
    )
    .await;
    let lines: Vec<String> = plan.into_iter().map(|r| r[0].clone().unwrap()).collect();
    let scan = lines
        .iter()
        .position(|l| l.contains("Seq Scan on t"))
        .unwrap_or_else(|| panic!("no Seq Scan in {lines:#?}"));
    lines[scan + 1].trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scanned_table_is_in_the_pool_until_evicted() {
    let server = TestServer::start_with("buffercache", SERVER_ARGS);
    let client = server.client().await;
    client
        .batch_execute(&format!(
            "CREATE EXTENSION pg_buffercache;
             CREATE EXTENSION IF NOT EXISTS pg_buffercache;
             CREATE EXTENSION pg_buffercache;
             CREATE TABLE t(a int, filler text);
             INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, {ROWS}) AS s(i);"
        ))
        .await
        .expect("load");
    let blocks = int(&client, "SELECT pg_relation_size('t') / 8192").await;
    assert!((100..512).contains(&blocks), "{blocks} blocks");
    let filenode = int(&client, "SELECT pg_relation_filenode('t')").await;
    assert_eq!(
        filenode,
        int(
            &client,
            "SELECT relfilenode FROM pg_class WHERE relname = 't'"
        )
        .await
    );
    let of_t = format!("FROM pg_buffercache WHERE relfilenode = {filenode}");

    // After the load every block of t is in the pool, dirty; the scan finds them all.
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, ROWS);
    assert_eq!(
        ints(
            &client,
            &format!(
                "SELECT count(*), count(DISTINCT relblocknumber), min(relblocknumber),
                        max(relblocknumber), count(*) FILTER (WHERE isdirty) {of_t}"
            )
        )
        .await,
        [blocks, blocks, 0, blocks - 1, blocks]
    );
    // Every relation is in tablespace pg_default, database postgres, main fork; nothing
    // is pinned while no statement runs.
    assert_eq!(
        ints(
            &client,
            &format!(
                "SELECT min(reltablespace), max(reltablespace), min(reldatabase),
                        max(relforknumber), max(pinning_backends),
                        count(*) FILTER (WHERE usagecount BETWEEN 1 AND 5) {of_t}"
            )
        )
        .await,
        [
            1663,
            1663,
            int(
                &client,
                "SELECT oid FROM pg_database WHERE datname = current_database()"
            )
            .await,
            0,
            0,
            blocks
        ]
    );
    assert_eq!(
        int(
            &client,
            "SELECT count(*) FROM pg_buffercache WHERE pinning_backends > 0"
        )
        .await,
        0
    );
    // Unused buffers are all NULLs but their id.
    assert_eq!(
        ints(
            &client,
            "SELECT count(*), min(bufferid), max(bufferid),
                    count(*) FILTER (WHERE relfilenode IS NULL),
                    count(*) FILTER (WHERE reltablespace IS NULL AND reldatabase IS NULL
                        AND relforknumber IS NULL AND relblocknumber IS NULL AND isdirty IS NULL
                        AND usagecount IS NULL AND pinning_backends IS NULL)
             FROM pg_buffercache"
        )
        .await,
        [2048, 1, 2048, 2048 - blocks, 2048 - blocks]
    );

    // The summaries count what the view shows.
    let view = ints(
        &client,
        "SELECT count(*) FILTER (WHERE relfilenode IS NOT NULL),
                count(*) FILTER (WHERE relfilenode IS NULL),
                count(*) FILTER (WHERE isdirty), count(*) FILTER (WHERE pinning_backends > 0)
         FROM pg_buffercache",
    )
    .await;
    let summary = ints(
        &client,
        "SELECT buffers_used, buffers_unused, buffers_dirty, buffers_pinned
         FROM pg_buffercache_summary()",
    )
    .await;
    assert_eq!(summary, view);
    assert_eq!(
        rows(
            &client,
            "SELECT usagecount_avg = (SELECT avg(usagecount) FROM pg_buffercache)
             FROM pg_buffercache_summary()"
        )
        .await,
        [[Some("t".to_string())]]
    );
    let by_usage = rows(
        &client,
        "SELECT usage_count, buffers, dirty, pinned FROM pg_buffercache_usage_counts()",
    )
    .await;
    assert_eq!(by_usage.len(), 6);
    let column = |i: usize| -> i64 {
        by_usage
            .iter()
            .map(|r| r[i].as_deref().unwrap().parse::<i64>().unwrap())
            .sum()
    };
    assert_eq!(column(0), 15, "usage counts 0 to 5");
    assert_eq!((column(1), column(2), column(3)), (2048, view[2], 0));

    // Evicting t writes its dirty blocks and drops them all; the next scan reads every
    // block, the one after hits every block, and the rows are all there.
    assert_eq!(
        ints(&client, "SELECT * FROM pg_buffercache_evict_relation('t')").await,
        [blocks, blocks, 0]
    );
    assert_eq!(int(&client, &format!("SELECT count(*) {of_t}")).await, 0);
    assert_eq!(
        scan_buffers(&client).await,
        format!("Buffers: shared read={blocks}")
    );
    assert_eq!(
        scan_buffers(&client).await,
        format!("Buffers: shared hit={blocks}")
    );
    assert_eq!(
        ints(&client, "SELECT count(*), sum(a) FROM t").await,
        [ROWS, ROWS * (ROWS + 1) / 2]
    );

    // Through the extended protocol (planned at Parse and again at Execute) the
    // function evicts once, when executed; its columns are PostgreSQL's.
    let statement = client
        .prepare("SELECT * FROM pg_buffercache_evict_relation('t'::regclass)")
        .await
        .unwrap();
    let columns: Vec<(&str, Type)> = statement
        .columns()
        .iter()
        .map(|c| (c.name(), c.type_().clone()))
        .collect();
    assert_eq!(
        columns,
        [
            ("buffers_evicted", Type::INT4),
            ("buffers_flushed", Type::INT4),
            ("buffers_skipped", Type::INT4)
        ]
    );
    let row = client.query_one(&statement, &[]).await.unwrap();
    assert_eq!(
        (
            row.get::<_, i32>(0),
            row.get::<_, i32>(1),
            row.get::<_, i32>(2)
        ),
        (blocks as i32, 0, 0)
    );

    // One buffer at a time, in a select list.
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, ROWS);
    let evicted = rows(
        &client,
        &format!(
            "SELECT pg_buffercache_evict(bufferid)
             FROM (SELECT bufferid {of_t} ORDER BY relblocknumber LIMIT 3) AS b"
        ),
    )
    .await;
    assert_eq!(evicted, vec![vec![Some("(t,f)".to_string())]; 3]);
    assert_eq!(
        int(&client, &format!("SELECT count(*) {of_t}")).await,
        blocks - 3
    );
    let first = int(&client, &format!("SELECT min(bufferid) {of_t}")).await;
    assert_eq!(
        rows(
            &client,
            &format!("SELECT buffer_evicted, buffer_flushed FROM pg_buffercache_evict({first})")
        )
        .await,
        [[Some("t".to_string()), Some("f".to_string())]]
    );
    assert_eq!(
        rows(
            &client,
            &format!("SELECT * FROM pg_buffercache_evict({first})")
        )
        .await,
        [[Some("f".to_string()), Some("f".to_string())]],
        "an empty buffer is not evicted"
    );

    // Everything, then nothing is left.
    let all = ints(&client, "SELECT * FROM pg_buffercache_evict_all()").await;
    assert_eq!(all[2], 0, "{all:?}");
    assert_eq!(
        ints(
            &client,
            "SELECT buffers_used, buffers_unused FROM pg_buffercache_summary()"
        )
        .await,
        [0, 2048]
    );
    assert_eq!(
        rows(&client, "SELECT pg_buffercache_summary()").await,
        [[Some("(0,2048,0,0,)".to_string())]]
    );
    assert_eq!(
        scan_buffers(&client).await,
        format!("Buffers: shared read={blocks}")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_postgres_18s() {
    let server = TestServer::start_with("buffercache-errors", SERVER_ARGS);
    let client = server.client().await;
    for (sql, code, message) in [
        ("SELECT pg_buffercache_evict(0)", "XX000", "bad buffer ID: 0"),
        ("SELECT * FROM pg_buffercache_evict(2049)", "XX000", "bad buffer ID: 2049"),
        (
            "SELECT * FROM pg_buffercache_evict_relation('nosuch')",
            "42P01",
            "relation \"nosuch\" does not exist",
        ),
        (
            "SELECT pg_buffercache_evict_relation(12345678)",
            "XX000",
            "could not open relation with OID 12345678",
        ),
        ("CREATE EXTENSION nosuch", "0A000", "extension \"nosuch\" is not available"),
        (
            "CREATE EXTENSION IF NOT EXISTS nosuch",
            "0A000",
            "extension \"nosuch\" is not available",
        ),
        (
            "CREATE EXTENSION pg_buffercache VERSION '1.0'",
            "22023",
            "extension \"pg_buffercache\" has no installation script nor update path for version \"1.0\"",
        ),
    ] {
        let err = client.simple_query(sql).await.unwrap_err();
        let db = err.as_db_error().unwrap_or_else(|| panic!("{sql}: {err:?}"));
        assert_eq!((sqlstate(&err).as_str(), db.message()), (code, message), "{sql}");
        if code == "0A000" {
            assert_eq!(
                db.hint(),
                Some("The extension must first be installed on the system where PostgreSQL is running.")
            );
            assert_eq!(db.detail(), None);
        }
    }
    // Through the extended protocol too.
    assert_eq!(
        client
            .execute(
                "CREATE EXTENSION IF NOT EXISTS pg_buffercache WITH SCHEMA public",
                &[]
            )
            .await
            .unwrap(),
        0
    );
    // STRICT: NULL in, NULLs out.
    assert_eq!(
        rows(&client, "SELECT * FROM pg_buffercache_evict_relation(NULL)").await,
        [[None, None, None]]
    );
    assert_eq!(
        rows(&client, "SELECT pg_buffercache_evict(NULL)").await,
        [[None]]
    );
    // A relation without storage has no buffers.
    assert_eq!(
        rows(&client, "SELECT pg_buffercache_evict_relation('pg_class')").await,
        [[Some("(0,0,0)".to_string())]]
    );
}

/// The pg_prewarm extension's function, built in: `buffer` mode reads every block (or the
/// range asked for) into the pool through a read stream, counted in `pg_stat_io` by the
/// byte; `read` and `prefetch` warm the kernel's cache and leave the pool as it was;
/// bad arguments fail as in PostgreSQL 18 (22023, its messages).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_prewarm_fills_the_pool_or_the_kernel_cache() {
    let server = TestServer::start_with("prewarm", SERVER_ARGS);
    let client = server.client().await;
    client
        .batch_execute(&format!(
            "CREATE EXTENSION pg_prewarm;
             CREATE TABLE t(a int, filler text);
             INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, {ROWS}) AS s(i);
             CHECKPOINT"
        ))
        .await
        .expect("load");
    let blocks = int(&client, "SELECT pg_relation_size('t') / 8192").await;
    let filenode = int(&client, "SELECT pg_relation_filenode('t')").await;
    // The file that `read` and `prefetch` read, where pg_relation_filepath says it is.
    let path = rows(
        &client,
        "SELECT pg_relation_filepath('t'), pg_relation_filepath('pg_class')",
    )
    .await;
    assert_eq!(path[0], [Some(format!("base/{filenode}")), None]);
    let file = server.data_dir.join(path[0][0].as_deref().unwrap());
    assert_eq!(std::fs::metadata(file).unwrap().len(), blocks as u64 * 8192);
    let in_pool = format!(
        "SELECT count(*), coalesce(min(relblocknumber), -1), coalesce(max(relblocknumber), -1) \
         FROM pg_buffercache WHERE relfilenode = {filenode}"
    );
    let evict = "SELECT buffers_evicted FROM pg_buffercache_evict_relation('t')";
    let read_bytes = "SELECT sum(read_bytes) FROM pg_stat_io \
                      WHERE backend_type = 'client backend' AND object = 'relation'";

    int(&client, evict).await;
    client
        .batch_execute("SELECT pg_stat_reset_shared('io')")
        .await
        .unwrap();
    assert_eq!(int(&client, "SELECT pg_prewarm('t')").await, blocks);
    assert_eq!(ints(&client, &in_pool).await, [blocks, 0, blocks - 1]);
    assert_eq!(int(&client, read_bytes).await, blocks * 8192);

    assert_eq!(int(&client, evict).await, blocks);
    for mode in ["read", "prefetch"] {
        let sql = format!("SELECT pg_prewarm('t', '{mode}')");
        assert_eq!(int(&client, &sql).await, blocks, "{mode}");
        assert_eq!(ints(&client, &in_pool).await, [0, -1, -1], "{mode}");
    }
    let sql = "SELECT pg_prewarm('t', 'buffer', 'main', 2, 4)";
    assert_eq!(int(&client, sql).await, 3);
    assert_eq!(ints(&client, &in_pool).await, [3, 2, 4]);

    let last = blocks - 1;
    for (sql, message) in [
        (
            "SELECT pg_prewarm('t', 'bogus')".to_string(),
            "invalid prewarm type".to_string(),
        ),
        (
            "SELECT pg_prewarm('t', NULL)".into(),
            "prewarm type cannot be null".into(),
        ),
        (
            "SELECT pg_prewarm(NULL)".into(),
            "relation cannot be null".into(),
        ),
        (
            "SELECT pg_prewarm('t', 'buffer', 'fsm')".into(),
            "fork \"fsm\" does not exist for this relation".into(),
        ),
        (
            "SELECT pg_prewarm('t', 'buffer', 'nope')".into(),
            "invalid fork name".into(),
        ),
        (
            format!("SELECT pg_prewarm('t', 'buffer', 'main', {blocks})"),
            format!("starting block number must be between 0 and {last}"),
        ),
        (
            "SELECT pg_prewarm('t', 'buffer', 'main', 0, -1)".into(),
            format!("ending block number must be between 0 and {last}"),
        ),
    ] {
        let e = client.batch_execute(&sql).await.expect_err(&sql);
        assert_eq!(
            (sqlstate(&e), e.as_db_error().unwrap().message()),
            ("22023".to_string(), message.as_str()),
            "{sql}"
        );
    }
}
