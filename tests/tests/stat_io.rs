//! PostgreSQL 18's I/O statistics views and functions — `pg_stat_io`,
//! `pg_stat_get_backend_io(pid)`, `pg_aios`, `pg_stat_reset_shared`,
//! `pg_stat_reset_backend_stats` — against a real iolab: their row sets, columns and
//! types as PostgreSQL 18.4 shows them (`/work/shared/tools/pg18-reference`), followed by
//! iolab's extra columns.
//!
//! Differences from PostgreSQL 18 that these tests accept:
//! - The reset functions' result column is described as `text` (an empty value), where
//!   PostgreSQL says `void`; psql prints both the same.
//! - `pg_stat_get_backend_io`'s argument must be a constant (such as `pg_backend_pid()`):
//!   iolab takes the table function's snapshot when the statement is planned.

use std::time::{Duration, Instant};

use iolab_tests::tokio_postgres::types::Type;
use iolab_tests::tokio_postgres::Client;
use iolab_tests::{rows, sqlstate, TestServer};

/// psql's `\gdesc` of `query`: one `name|type` line per column.
fn gdesc(server: &TestServer, query: &str) -> String {
    let file = server.data_dir.with_extension("gdesc.sql");
    std::fs::write(&file, format!("{query} \\gdesc\n")).unwrap();
    let out = server.psql_ok(&["-At", "-f", file.to_str().unwrap()]);
    let _ = std::fs::remove_file(&file);
    out
}

async fn one(client: &Client, sql: &str) -> Option<String> {
    let r = rows(client, sql).await;
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0][0].clone()
}

/// `\gdesc` of `SELECT * FROM pg_stat_io` on PostgreSQL 18.4, then iolab's columns.
const PG_STAT_IO_GDESC: &str = "\
backend_type|text
object|text
context|text
reads|bigint
read_bytes|numeric
read_time|double precision
writes|bigint
write_bytes|numeric
write_time|double precision
writebacks|bigint
writeback_time|double precision
extends|bigint
extend_bytes|numeric
extend_time|double precision
hits|bigint
evictions|bigint
reuses|bigint
fsyncs|bigint
fsync_time|double precision
stats_reset|timestamp with time zone
waits|bigint
wait_time|double precision
read_p50|double precision
read_p99|double precision
read_p999|double precision
read_max|double precision
write_p50|double precision
write_p99|double precision
write_p999|double precision
write_max|double precision
";

/// `\gdesc` of `SELECT * FROM pg_aios` on PostgreSQL 18.4.
const PG_AIOS_GDESC: &str = "\
pid|integer
io_id|integer
io_generation|bigint
state|text
operation|text
off|bigint
length|bigint
target|text
handle_data_len|smallint
raw_result|integer
result|text
target_desc|text
f_sync|boolean
f_localmem|boolean
f_buffered|boolean
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_io_has_postgres_18s_rows_and_columns() {
    let server = TestServer::start("stat-io-rows");
    let client = server.client().await;

    // Row set: 79 rows, 14 backend types, in PostgreSQL's order.
    let all = rows(
        &client,
        "SELECT backend_type, object, context FROM pg_stat_io",
    )
    .await;
    assert_eq!(all.len(), 79);
    assert_eq!(
        all[0],
        [Some("client backend"), Some("relation"), Some("bulkread")].map(|s| s.map(String::from))
    );
    assert_eq!(
        all[78],
        [Some("walwriter"), Some("wal"), Some("normal")].map(|s| s.map(String::from))
    );
    let per_type = rows(
        &client,
        "SELECT backend_type, count(*) FROM pg_catalog.pg_stat_io GROUP BY backend_type ORDER BY backend_type",
    )
    .await;
    let per_type: Vec<String> = per_type
        .iter()
        .map(|r| format!("{}={}", r[0].as_deref().unwrap(), r[1].as_deref().unwrap()))
        .collect();
    assert_eq!(
        per_type.join(" "),
        "autovacuum launcher=5 autovacuum worker=6 background worker=8 background writer=4 \
         checkpointer=4 client backend=8 io worker=8 slotsync worker=8 standalone backend=7 \
         startup=7 walreceiver=2 walsender=8 walsummarizer=2 walwriter=2"
    );

    // NULL means "never happens for this backend type" (as PostgreSQL 18.4 shows it).
    let bgwriter = rows(
        &client,
        "SELECT reads, read_bytes, read_time, writes, write_bytes, hits, evictions, extends, fsyncs, \
         waits, read_p50, write_p50 \
         FROM pg_stat_io WHERE backend_type = 'background writer' AND object = 'relation' AND context = 'normal'",
    )
    .await;
    let zero = Some("0".to_string());
    assert_eq!(
        bgwriter,
        vec![vec![
            None,
            None,
            None,
            zero.clone(),
            zero.clone(),
            None,
            None,
            None,
            zero.clone(),
            zero.clone(),
            None,
            None
        ]]
    );
    let temp = rows(
        &client,
        "SELECT writebacks, fsyncs, reuses, extends FROM pg_stat_io \
         WHERE backend_type = 'client backend' AND object = 'temp relation'",
    )
    .await;
    assert_eq!(temp, vec![vec![None, None, None, zero.clone()]]);

    // Column names and types: psql's \gdesc, and the RowDescription a driver sees.
    assert_eq!(gdesc(&server, "SELECT * FROM pg_stat_io"), PG_STAT_IO_GDESC);
    let stmt = client.prepare("SELECT * FROM pg_stat_io").await.unwrap();
    let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types.len(), 30);
    assert_eq!(types[0], Type::TEXT);
    assert_eq!(types[3], Type::INT8);
    assert_eq!(types[4], Type::NUMERIC);
    assert_eq!(types[5], Type::FLOAT8);
    assert_eq!(types[19], Type::TIMESTAMPTZ);
    assert_eq!(types[29], Type::FLOAT8);

    // Every row carries the same stats_reset; numeric columns print without a fraction.
    assert_eq!(
        one(
            &client,
            "SELECT count(DISTINCT stats_reset) FROM pg_stat_io"
        )
        .await,
        Some("1".into())
    );
    assert_eq!(
        one(
            &client,
            "SELECT read_bytes FROM pg_stat_io WHERE backend_type = 'client backend' \
             AND object = 'relation' AND context = 'normal'"
        )
        .await
        .map(|v| v.chars().all(|c| c.is_ascii_digit())),
        Some(true)
    );

    // The view joins and filters like any table, also with the table function.
    assert_eq!(
        one(
            &client,
            "SELECT count(*) FROM pg_stat_io s JOIN pg_stat_get_io() g \
             USING (backend_type, object, context) WHERE s.reads IS NOT NULL"
        )
        .await,
        Some("56".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resets_set_stats_reset_and_check_their_target() {
    let server = TestServer::start("stat-io-reset");
    let client = server.client().await;
    let before = one(&client, "SELECT max(stats_reset) FROM pg_stat_io")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        one(&client, "SELECT pg_stat_reset_shared('io')").await,
        Some(String::new()),
        "void, printed as nothing"
    );
    let after = rows(&client, "SELECT DISTINCT stats_reset FROM pg_stat_io").await;
    assert_eq!(after.len(), 1, "one reset time on every row");
    let after = after[0][0].clone().unwrap();
    assert!(after > before, "{after} after {before}");
    assert_eq!(
        one(
            &client,
            "SELECT stats_reset > now() - interval '1 minute' FROM pg_stat_io LIMIT 1"
        )
        .await,
        Some("t".into())
    );

    // Every target PostgreSQL 18 knows, and none (all of them).
    for target in [
        "'archiver'",
        "'bgwriter'",
        "'checkpointer'",
        "'recovery_prefetch'",
        "'slru'",
        "'wal'",
        "NULL",
    ] {
        client
            .simple_query(&format!("SELECT pg_stat_reset_shared({target})"))
            .await
            .unwrap_or_else(|e| panic!("{target}: {e}"));
    }
    client
        .simple_query("SELECT pg_catalog.pg_stat_reset_shared()")
        .await
        .unwrap();

    let err = client
        .simple_query("SELECT pg_stat_reset_shared('x')")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22023");
    let db = err.as_db_error().unwrap();
    assert_eq!(db.message(), "unrecognized reset target: \"x\"");
    assert_eq!(
        db.hint(),
        Some("Target must be \"archiver\", \"bgwriter\", \"checkpointer\", \"io\", \"recovery_prefetch\", \"slru\", or \"wal\".")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backend_io_lives_with_its_session() {
    let server = TestServer::start("stat-io-backend");
    let client = server.client().await;
    let mine = rows(
        &client,
        "SELECT backend_type, object, context, stats_reset FROM pg_stat_get_backend_io(pg_backend_pid())",
    )
    .await;
    assert_eq!(mine.len(), 8, "{mine:?}");
    assert!(mine
        .iter()
        .all(|r| r[0].as_deref() == Some("client backend") && r[3].is_none()));
    let objects: Vec<String> = mine
        .iter()
        .map(|r| format!("{}/{}", r[1].as_deref().unwrap(), r[2].as_deref().unwrap()))
        .collect();
    assert_eq!(
        objects.join(" "),
        "relation/bulkread relation/bulkwrite relation/init relation/normal relation/vacuum \
         temp relation/normal wal/init wal/normal"
    );
    // The same through the extended protocol (Parse, Describe, Bind, Execute).
    let extended = client
        .query(
            "SELECT backend_type, reads FROM pg_stat_get_backend_io(pg_backend_pid()) WHERE object = 'relation'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(extended.len(), 5);
    assert_eq!(extended[0].get::<_, &str>(0), "client backend");
    assert_eq!(extended[0].get::<_, Option<i64>>(1), Some(0));
    assert_eq!(
        rows(&client, "SELECT * FROM pg_stat_get_backend_io(NULL)")
            .await
            .len(),
        0
    );

    // A process's reset stamps only its own rows.
    client
        .simple_query("SELECT pg_stat_reset_backend_stats(pg_backend_pid())")
        .await
        .unwrap();
    assert_eq!(
        one(
            &client,
            "SELECT count(*) FROM pg_catalog.pg_stat_get_backend_io(pg_backend_pid()) WHERE stats_reset IS NOT NULL"
        )
        .await,
        Some("8".into())
    );

    // Another session is visible by its pid while it lives, and gone once it ends.
    let other = server.client().await;
    let other_pid = one(&other, "SELECT pg_backend_pid()").await.unwrap();
    let count = format!("SELECT count(*) FROM pg_stat_get_backend_io({other_pid})");
    assert_eq!(one(&client, &count).await, Some("8".into()));
    assert_eq!(
        one(
            &client,
            &format!("SELECT count(*) FROM pg_stat_get_backend_io({other_pid}) WHERE stats_reset IS NULL")
        )
        .await,
        Some("8".into()),
        "not reset by the other session's reset"
    );
    drop(other);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if one(&client, &count).await == Some("0".into()) {
            break;
        }
        assert!(Instant::now() < deadline, "the ended session's rows stayed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Resetting an unknown pid does nothing, as in PostgreSQL.
    client
        .simple_query(&format!("SELECT pg_stat_reset_backend_stats({other_pid})"))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_aios_is_empty_when_idle() {
    let server = TestServer::start("stat-io-aios");
    let client = server.client().await;
    assert_eq!(rows(&client, "SELECT * FROM pg_aios").await.len(), 0);
    assert_eq!(
        rows(&client, "SELECT * FROM pg_catalog.pg_get_aios()")
            .await
            .len(),
        0
    );
    assert_eq!(gdesc(&server, "SELECT * FROM pg_aios"), PG_AIOS_GDESC);
}
