//! The plan cache of statistics queries (server/src/sql/plan_cache.rs) against a real
//! iolab: a statement over the statistics views that differs from an earlier one only in
//! its filters' constants reuses that one's plan (`pg_cached_plans.generic_plans`
//! counts it) and still sees the statistics, the window and the `now()` of its own run;
//! `plan_cache_mode = force_custom_plan` plans afresh and gets the same rows; settings
//! that read constants are part of the key; the cache keeps at most 256 plans; a table
//! created with a view's name does not change the view's cached plan.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use iolab_tests::tokio_postgres::Client;
use iolab_tests::{evict, int, rfc3339, rows, TestServer};

fn start(name: &str) -> TestServer {
    TestServer::start_with(
        name,
        &[
            "-c",
            "stats_history_interval=100ms",
            "-c",
            "shared_buffers=4MB",
        ],
    )
}

async fn load(client: &Client) {
    client
        .batch_execute(
            "CREATE TABLE t(a int, filler text);
             INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 20000) AS s(i);
             CHECKPOINT",
        )
        .await
        .unwrap();
}

/// A cold scan of `t`: its pages are read again.
async fn scan(client: &Client) {
    evict(client, "t").await;
    assert_eq!(int(client, "SELECT count(*) FROM t").await, 20000);
}

/// A column of the cached plan whose statement ends with `tail` (one must).
async fn cached(client: &Client, column: &str, tail: &str) -> String {
    let r = rows(
        client,
        &format!(
            "SELECT {column} FROM pg_cached_plans WHERE statement LIKE '%{}'",
            tail.replace('\'', "''")
        ),
    )
    .await;
    assert_eq!(r.len(), 1, "one cached plan ends with {tail}: {r:?}");
    r[0][0].clone().unwrap()
}

/// `generic_plans` of the cached plan whose statement ends with `tail`.
async fn reuses(client: &Client, tail: &str) -> i64 {
    cached(client, "generic_plans", tail).await.parse().unwrap()
}

/// Do the runs of the cached plan whose statement ends with `tail` reuse its physical
/// plan too (`generic_physical_plan`)?
async fn reuses_physical_plan(client: &Client, tail: &str) -> bool {
    cached(client, "generic_physical_plan", tail).await == "t"
}

/// The column names of the first row `sql` returns (simple protocol).
async fn columns(client: &Client, sql: &str) -> Vec<String> {
    let messages = client.simple_query(sql).await.unwrap();
    let row = messages
        .iter()
        .find_map(|m| match m {
            iolab_tests::tokio_postgres::SimpleQueryMessage::Row(r) => Some(r),
            _ => None,
        })
        .expect("a row");
    row.columns().iter().map(|c| c.name().to_string()).collect()
}

fn micros(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_micros() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_queries_reuse_one_plan_and_see_their_own_values() {
    let server = start("plan_cache_reuse");
    let client = server.client().await;
    load(&client).await;

    // fresh statistics through a reused plan
    let reads = |backend: &str| {
        format!(
            "SELECT coalesce(sum(reads), 0)::bigint FROM pg_stat_io \
             WHERE backend_type = '{backend}' AND object = 'relation'"
        )
    };
    let tail = "pg_stat_io WHERE backend_type = $1 AND object = $2";
    let before = int(&client, &reads("client backend")).await;
    assert_eq!(reuses(&client, tail).await, 0, "planned, not reused yet");
    scan(&client).await;
    let after = int(&client, &reads("client backend")).await;
    assert!(
        after > before,
        "reads {before} then {after}: the scan's reads are seen"
    );
    assert_eq!(reuses(&client, tail).await, 1);
    assert!(reuses_physical_plan(&client, tail).await);
    let types = rows(
        &client,
        &format!("SELECT parameter_types FROM pg_cached_plans WHERE statement LIKE '%{tail}'"),
    )
    .await;
    assert_eq!(types, vec![vec![Some("{text,text}".to_string())]]);
    // another session (psql) reuses it too
    let psql = server.psql_ok(&["-At", "-c", &reads("client backend")]);
    assert_eq!(psql.trim().parse::<i64>().unwrap(), after);
    assert_eq!(reuses(&client, tail).await, 2);

    // other constants, other rows: the same as planning afresh gives
    let custom = server.client().await;
    custom
        .batch_execute("SET plan_cache_mode = force_custom_plan")
        .await
        .unwrap();
    let kinds = |backend: &str| {
        format!(
            "SELECT object || '/' || context FROM pg_stat_io WHERE backend_type = '{backend}' ORDER BY 1"
        )
    };
    let kinds_tail = "pg_stat_io WHERE backend_type = $1 ORDER BY 1";
    let mut seen = Vec::new();
    for backend in [
        "client backend",
        "checkpointer",
        "autovacuum launcher",
        "io worker",
    ] {
        let cached = rows(&client, &kinds(backend)).await;
        let fresh = rows(&custom, &kinds(backend)).await;
        assert!(!cached.is_empty(), "{backend} has pg_stat_io rows");
        assert_eq!(
            cached, fresh,
            "{backend}: cached plan and a fresh plan agree"
        );
        seen.push(cached);
    }
    seen.dedup();
    assert!(seen.len() > 1, "the backend types have different rows");
    assert_eq!(
        reuses(&client, kinds_tail).await,
        3,
        "one plan for the four backend types; force_custom_plan does not use it"
    );

    // now() is this run's, not the first run's: a session that starts after the plan was
    // made is counted
    let started_before_now = "SELECT count(*) FROM pg_stat_activity \
         WHERE backend_type = 'client backend' AND backend_start <= now()";
    let now_tail = "WHERE backend_type = $1 AND backend_start <= $2";
    let sessions = int(&client, started_before_now).await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let _late = server.client().await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(int(&client, started_before_now).await, sessions + 1);
    assert_eq!(reuses(&client, now_tail).await, 1);
    assert!(reuses_physical_plan(&client, now_tail).await);

    // a constant the physical plan cannot take as a parameter (a join's condition, here)
    // leaves only the logical plan cached; the rows are still planning afresh's
    let join = |n: i64| {
        format!(
            "SELECT count(*) FROM pg_stat_io i JOIN pg_stat_aio a ON i.backend_type = a.backend_type \
             WHERE i.reads > {n} OR a.ios > {n}"
        )
    };
    let join_tail = "WHERE i.reads > $1 OR a.ios > $2";
    for n in [0, 1, 1_000_000_000] {
        assert_eq!(
            int(&client, &join(n)).await,
            int(&custom, &join(n)).await,
            "{}",
            join(n)
        );
    }
    assert_eq!(reuses(&client, join_tail).await, 2);
    assert!(!reuses_physical_plan(&client, join_tail).await);

    // the extended protocol (binary results) takes the same plan
    let row = client
        .query_one(reads("client backend").as_str(), &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), after);
    assert_eq!(reuses(&client, tail).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cached_panel_query_reads_each_new_window() {
    let server = start("plan_cache_window");
    let client = server.client().await;
    load(&client).await;
    // I/O in every 100 ms sample for a while
    let until = Instant::now() + Duration::from_millis(2500);
    while Instant::now() < until {
        scan(&client).await;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // the history as it is (its samples stay for an hour)
    let all: Vec<(i64, i64)> = client
        .query(
            "SELECT time, sum(reads)::bigint FROM pg_stat_io_history GROUP BY time ORDER BY time",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| (micros(r.get::<_, SystemTime>(0)), r.get::<_, i64>(1)))
        .collect();
    assert!(all.len() >= 8, "samples with I/O: {all:?}");

    let panel = |from: i64, to: i64| {
        format!(
            "SELECT count(DISTINCT time), min(time), max(time), sum(reads)::bigint \
             FROM pg_stat_io_history WHERE time BETWEEN '{}' AND '{}'",
            rfc3339(from),
            rfc3339(to)
        )
    };
    let custom = server.client().await;
    custom
        .batch_execute("SET plan_cache_mode = force_custom_plan")
        .await
        .unwrap();
    for (first, last) in [(0, 2), (4, 7), (1, 1)] {
        let (from, to) = (all[first].0, all[last].0);
        let sql = panel(from, to);
        let row = client.query_one(sql.as_str(), &[]).await.unwrap();
        let window = &all[first..=last];
        assert_eq!(row.get::<_, i64>(0), window.len() as i64, "{sql}");
        assert_eq!(micros(row.get::<_, SystemTime>(1)), from, "{sql}");
        assert_eq!(micros(row.get::<_, SystemTime>(2)), to, "{sql}");
        let reads: i64 = window.iter().map(|(_, r)| r).sum();
        assert_eq!(row.get::<_, i64>(3), reads, "{sql}");
        let fresh = custom.query_one(sql.as_str(), &[]).await.unwrap();
        assert_eq!(fresh.get::<_, i64>(3), reads, "{sql}, planned afresh");
    }
    let tail = "pg_stat_io_history WHERE time BETWEEN $1 AND $2";
    assert_eq!(reuses(&client, tail).await, 2, "three windows, one plan");
    assert!(reuses_physical_plan(&client, tail).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_is_bounded_keyed_by_settings_and_unmoved_by_ddl() {
    let server = start("plan_cache_bound");
    let client = server.client().await;

    // 300 statements that differ outside their filters: 300 keys, 256 kept
    let statement = |i: usize| {
        format!("SELECT reads + {i} FROM pg_stat_io WHERE backend_type = 'client backend'")
    };
    for batch in (0..300).collect::<Vec<_>>().chunks(50) {
        let text: Vec<String> = batch.iter().map(|&i| statement(i)).collect();
        client.simple_query(&text.join("; ")).await.unwrap();
    }
    assert_eq!(
        int(&client, "SELECT count(*) FROM pg_cached_plans").await,
        256
    );
    let kept = |i: usize| {
        format!(
            "SELECT count(*) FROM pg_cached_plans WHERE statement LIKE 'SELECT reads + {i} FROM %'"
        )
    };
    assert_eq!(int(&client, &kept(0)).await, 0, "the oldest went first");
    assert_eq!(int(&client, &kept(299)).await, 1);

    // a setting that reads constants is part of the key
    let zone = "SELECT count(*) FROM pg_stat_io WHERE stats_reset < '2100-01-01T00:00:00Z'";
    let zone_plans =
        "SELECT count(*) FROM pg_cached_plans WHERE statement LIKE '%stats_reset < $1'";
    int(&client, zone).await;
    client.batch_execute("SET TimeZone = '-5'").await.unwrap();
    int(&client, zone).await;
    assert_eq!(int(&client, zone_plans).await, 2);

    // a table named like a view: unqualified names still find pg_catalog's view, whose
    // cached plan keeps its columns; the table is read when named with its schema
    let view = "SELECT * FROM pg_stat_io WHERE backend_type = 'checkpointer'";
    let before = rows(&client, view).await;
    assert!(!before.is_empty());
    let view_columns = columns(&client, view).await;
    assert_eq!(view_columns[0], "backend_type");
    client
        .batch_execute(
            "CREATE TABLE public.pg_stat_io(x int); INSERT INTO public.pg_stat_io VALUES (7)",
        )
        .await
        .unwrap();
    assert_eq!(rows(&client, view).await.len(), before.len());
    assert_eq!(columns(&client, view).await, view_columns);
    assert_eq!(
        rows(&client, "SELECT * FROM public.pg_stat_io").await,
        vec![vec![Some("7".to_string())]]
    );
}

/// A statement with parameters keeps its optimized plan between runs in its session
/// (server/src/sql/prepared_plans.rs): every run sees the values it was given, and DDL
/// between runs — TRUNCATE (a new file), an index, ALTER TABLE, DROP and CREATE again —
/// is seen by the next run, as replanning would see it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_see_ddl_between_runs() {
    let server = TestServer::start("prepared_plans");
    let client = server.client().await;
    let other = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE p(a int, b text);
             INSERT INTO p SELECT i, 'v' || i FROM generate_series(1, 1000) AS s(i)",
        )
        .await
        .unwrap();
    let lookup = client
        .prepare("SELECT b FROM p WHERE a = $1")
        .await
        .unwrap();
    let b_of = |rows: Vec<iolab_tests::tokio_postgres::Row>| -> Vec<String> {
        rows.iter().map(|r| r.get::<_, String>(0)).collect()
    };
    for a in [1, 500, 1000] {
        let got = b_of(client.query(&lookup, &[&a]).await.unwrap());
        assert_eq!(got, vec![format!("v{a}")]);
    }
    // Another session truncates and refills the table: the new file is read.
    other
        .batch_execute("TRUNCATE p; INSERT INTO p VALUES (1, 'new')")
        .await
        .unwrap();
    assert_eq!(b_of(client.query(&lookup, &[&1]).await.unwrap()), ["new"]);
    assert!(client.query(&lookup, &[&500]).await.unwrap().is_empty());
    // An index, then a column added in front of the looked-up ones' positions changing.
    other
        .batch_execute(
            "INSERT INTO p SELECT i, 'w' || i FROM generate_series(2, 3000) AS s(i);
             CREATE INDEX ON p(a); ANALYZE p",
        )
        .await
        .unwrap();
    assert_eq!(
        b_of(client.query(&lookup, &[&2999]).await.unwrap()),
        ["w2999"]
    );
    other
        .batch_execute("ALTER TABLE p ADD COLUMN c int DEFAULT 7")
        .await
        .unwrap();
    assert_eq!(b_of(client.query(&lookup, &[&1]).await.unwrap()), ["new"]);
    // Dropped and made again with its columns in another order.
    other
        .batch_execute(
            "DROP TABLE p; CREATE TABLE p(b text, a int); INSERT INTO p VALUES ('again', 1)",
        )
        .await
        .unwrap();
    assert_eq!(b_of(client.query(&lookup, &[&1]).await.unwrap()), ["again"]);
    // A statement calling a stable function is planned every run: now() moves.
    let stamp = client
        .prepare("SELECT now()::text FROM p WHERE a = $1")
        .await
        .unwrap();
    let first: String = client.query_one(&stamp, &[&1]).await.unwrap().get(0);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second: String = client.query_one(&stamp, &[&1]).await.unwrap().get(0);
    assert_ne!(first, second);
}
