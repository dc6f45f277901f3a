//! PostgreSQL 18's WAL statistics views and functions — `pg_stat_wal`,
//! `pg_stat_recovery_prefetch`, `pg_stat_checkpointer`,
//! `pg_stat_reset_shared('wal' | 'recovery_prefetch' | 'checkpointer')`,
//! `pg_current_wal_lsn()`, `pg_current_wal_insert_lsn()`, `pg_current_wal_flush_lsn()`,
//! `pg_walfile_name(lsn)`, `pg_wal_lsn_diff(lsn, lsn)` — against a real iolab: their
//! columns and types as PostgreSQL 18.4 shows them (`/work/shared/tools/pg18-reference`),
//! and that what they report follows what the server does.
//!
//! Differences from PostgreSQL 18 that these tests accept:
//! - iolab has no `pg_lsn` type: the LSN functions return `text` in PostgreSQL's spelling
//!   (`0/1A2B3C8`) and take LSNs as text (`'0/1A2B3C8'::pg_lsn` is a cast to text).
//! - The reset function's result column is `text` (an empty value), not `void`.

use std::time::Duration;

use iolab_tests::tokio_postgres::types::Type;
use iolab_tests::tokio_postgres::Client;
use iolab_tests::{int, rows, sqlstate, TestServer};

/// psql's `\gdesc` of `query`: one `name|type` line per column.
fn gdesc(server: &TestServer, query: &str) -> String {
    let file = server.data_dir.with_extension("gdesc.sql");
    std::fs::write(&file, format!("{query} \\gdesc\n")).unwrap();
    let out = server.psql_ok(&["-At", "-f", file.to_str().unwrap()]);
    let _ = std::fs::remove_file(&file);
    out
}

async fn one(client: &Client, sql: &str) -> String {
    let r = rows(client, sql).await;
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0][0].clone().unwrap_or_else(|| panic!("{sql}: NULL"))
}

/// An LSN as PostgreSQL spells it: upper-case hexadecimal `high/low`.
fn parse_lsn(text: &str) -> u64 {
    let (hi, lo) = text
        .split_once('/')
        .unwrap_or_else(|| panic!("not an LSN: {text:?}"));
    for half in [hi, lo] {
        assert!(
            !half.is_empty()
                && half.len() <= 8
                && half
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)),
            "not PostgreSQL's spelling of an LSN: {text:?}"
        );
    }
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

async fn lsn(client: &Client, function: &str) -> u64 {
    parse_lsn(&one(client, &format!("SELECT {function}()")).await)
}

/// `(wal_records, wal_fpi, wal_bytes, wal_buffers_full)`.
async fn wal_stats(client: &Client) -> (u64, u64, u64, u64) {
    let r = rows(
        client,
        "SELECT wal_records, wal_fpi, wal_bytes, wal_buffers_full FROM pg_stat_wal",
    )
    .await;
    assert_eq!(r.len(), 1, "pg_stat_wal has one row: {r:?}");
    let n = |i: usize| -> u64 {
        let v = r[0][i].as_deref().expect("not NULL");
        v.parse()
            .unwrap_or_else(|e| panic!("column {i} = {v:?}: {e}"))
    };
    (n(0), n(1), n(2), n(3))
}

/// `\gdesc` of `SELECT * FROM pg_stat_wal` on PostgreSQL 18.4.
const PG_STAT_WAL_GDESC: &str = "\
wal_records|bigint
wal_fpi|bigint
wal_bytes|numeric
wal_buffers_full|bigint
stats_reset|timestamp with time zone
";

/// `\gdesc` of `SELECT * FROM pg_stat_recovery_prefetch` on PostgreSQL 18.4.
const PG_STAT_RECOVERY_PREFETCH_GDESC: &str = "\
stats_reset|timestamp with time zone
prefetch|bigint
hit|bigint
skip_init|bigint
skip_new|bigint
skip_fpw|bigint
skip_rep|bigint
wal_distance|integer
block_distance|integer
io_depth|integer
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_views_have_postgres_18s_columns_and_one_row() {
    let server = TestServer::start("wal-views-columns");
    let client = server.client().await;

    assert_eq!(
        gdesc(&server, "SELECT * FROM pg_stat_wal"),
        PG_STAT_WAL_GDESC
    );
    assert_eq!(
        gdesc(&server, "SELECT * FROM pg_stat_recovery_prefetch"),
        PG_STAT_RECOVERY_PREFETCH_GDESC
    );
    assert_eq!(int(&client, "SELECT count(*) FROM pg_stat_wal").await, 1);
    assert_eq!(
        int(&client, "SELECT count(*) FROM pg_stat_recovery_prefetch").await,
        1
    );

    // The types a driver sees in RowDescription.
    let stmt = client.prepare("SELECT * FROM pg_stat_wal").await.unwrap();
    let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(
        types,
        [
            Type::INT8,
            Type::INT8,
            Type::NUMERIC,
            Type::INT8,
            Type::TIMESTAMPTZ
        ]
    );
    let stmt = client
        .prepare("SELECT * FROM pg_stat_recovery_prefetch")
        .await
        .unwrap();
    let types: Vec<Type> = stmt.columns().iter().map(|c| c.type_().clone()).collect();
    let mut expected = vec![Type::TIMESTAMPTZ];
    expected.extend([Type::INT8; 6]);
    expected.extend([Type::INT4; 3]);
    assert_eq!(types, expected);

    // pg_typeof and information_schema agree (as on PostgreSQL 18.4).
    assert_eq!(
        rows(
            &client,
            "SELECT pg_typeof(stats_reset), pg_typeof(prefetch), pg_typeof(wal_distance) \
             FROM pg_stat_recovery_prefetch"
        )
        .await,
        vec![vec![
            Some("timestamp with time zone".to_string()),
            Some("bigint".to_string()),
            Some("integer".to_string())
        ]]
    );
    assert_eq!(
        one(&client, "SELECT pg_typeof(wal_bytes) FROM pg_stat_wal").await,
        "numeric"
    );
    let info = rows(
        &client,
        "SELECT column_name, data_type FROM information_schema.columns \
         WHERE table_name = 'pg_stat_recovery_prefetch' ORDER BY ordinal_position",
    )
    .await;
    let info: Vec<String> = info
        .iter()
        .map(|r| format!("{}|{}", r[0].as_deref().unwrap(), r[1].as_deref().unwrap()))
        .collect();
    assert_eq!(
        info.join("\n") + "\n",
        PG_STAT_RECOVERY_PREFETCH_GDESC,
        "information_schema.columns"
    );

    // The views are in pg_class as views, and their table functions work too.
    assert_eq!(
        rows(
            &client,
            "SELECT relname, relkind FROM pg_class \
             WHERE relname IN ('pg_stat_wal', 'pg_stat_recovery_prefetch') ORDER BY relname"
        )
        .await,
        vec![
            vec![Some("pg_stat_recovery_prefetch".into()), Some("v".into())],
            vec![Some("pg_stat_wal".into()), Some("v".into())]
        ]
    );
    assert_eq!(
        int(&client, "SELECT count(*) FROM pg_stat_get_wal()").await,
        1
    );
    assert_eq!(
        int(
            &client,
            "SELECT count(*) FROM pg_stat_get_recovery_prefetch()"
        )
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_wal_counts_records_bytes_and_full_page_images() {
    const N: u64 = 500;
    let server = TestServer::start("wal-views-counts");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t (id int, v text)")
        .await
        .unwrap();

    let (records0, _, bytes0, full0) = wal_stats(&client).await;
    client
        .batch_execute(&format!(
            "INSERT INTO t SELECT i, 'row ' || i FROM generate_series(1, {N}) AS s(i)"
        ))
        .await
        .unwrap();
    let (records1, _, bytes1, full1) = wal_stats(&client).await;
    assert!(
        records1 >= records0 + N,
        "{N} inserted rows are at least {N} records: {records0} → {records1}"
    );
    assert!(
        bytes1 >= bytes0 + N * 24,
        "each record is at least a header long: {bytes0} → {bytes1}"
    );
    assert!(full1 >= full0);

    // The first change to each page after a checkpoint logs the whole page.
    let pages = int(&client, "SELECT pg_relation_size('t') / 8192").await as u64;
    assert!(pages >= 1);
    client.batch_execute("CHECKPOINT").await.unwrap();
    let (records2, fpi2, bytes2, _) = wal_stats(&client).await;
    client
        .batch_execute("UPDATE t SET id = id + 1")
        .await
        .unwrap();
    let (records3, fpi3, bytes3, _) = wal_stats(&client).await;
    assert!(
        fpi3 >= fpi2 + pages,
        "an UPDATE of all {pages} pages after CHECKPOINT logs each whole: {fpi2} → {fpi3}"
    );
    assert!(records3 >= records2 + N, "{records2} → {records3}");
    assert!(
        bytes3 - bytes2 >= (fpi3 - fpi2) * 1000,
        "full page images make the WAL grow by about a page each: {bytes2} → {bytes3}"
    );

    // An unlogged table writes no WAL for its rows.
    client
        .batch_execute("CREATE UNLOGGED TABLE u (id int)")
        .await
        .unwrap();
    let (records4, ..) = wal_stats(&client).await;
    client
        .batch_execute(&format!(
            "INSERT INTO u SELECT i FROM generate_series(1, {N}) AS s(i)"
        ))
        .await
        .unwrap();
    let (records5, ..) = wal_stats(&client).await;
    assert!(
        records5 < records4 + N / 10,
        "an unlogged table's rows are not logged: {records4} → {records5}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_reset_shared_resets_the_wal_views() {
    let server = TestServer::start("wal-views-reset");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE t (id int); INSERT INTO t SELECT i FROM generate_series(1, 300) AS s(i)",
        )
        .await
        .unwrap();
    let (records, ..) = wal_stats(&client).await;
    assert!(records >= 300);
    let reset0 = one(&client, "SELECT stats_reset FROM pg_stat_wal").await;
    let prefetch_reset0 = one(&client, "SELECT stats_reset FROM pg_stat_recovery_prefetch").await;
    tokio::time::sleep(Duration::from_millis(20)).await;

    // 'recovery_prefetch' leaves pg_stat_wal alone.
    one(&client, "SELECT pg_stat_reset_shared('recovery_prefetch')").await;
    let (records_after, ..) = wal_stats(&client).await;
    assert!(records_after >= records);
    assert_eq!(
        one(&client, "SELECT stats_reset FROM pg_stat_wal").await,
        reset0
    );
    assert_eq!(
        one(
            &client,
            &format!(
                "SELECT stats_reset > '{prefetch_reset0}'::timestamptz FROM pg_stat_recovery_prefetch"
            )
        )
        .await,
        "t"
    );
    assert_eq!(
        rows(
            &client,
            "SELECT prefetch, hit, skip_init, skip_new, skip_fpw, skip_rep FROM pg_stat_recovery_prefetch"
        )
        .await,
        vec![vec![Some("0".to_string()); 6]]
    );

    // 'wal' zeroes the counters and moves stats_reset.
    one(&client, "SELECT pg_stat_reset_shared('wal')").await;
    let (records, fpi, bytes, full) = wal_stats(&client).await;
    assert!(
        records < 10 && fpi < 10 && full == 0 && bytes < 10_000,
        "after the reset: {records} records, {fpi} fpi, {bytes} bytes, {full} full"
    );
    assert_eq!(
        one(
            &client,
            &format!("SELECT stats_reset > '{reset0}'::timestamptz FROM pg_stat_wal")
        )
        .await,
        "t"
    );

    // No target (NULL) resets them too, as in PostgreSQL 18.
    client
        .batch_execute("INSERT INTO t SELECT i FROM generate_series(1, 100) AS s(i)")
        .await
        .unwrap();
    assert!(wal_stats(&client).await.0 >= 100);
    let reset1 = one(&client, "SELECT stats_reset FROM pg_stat_wal").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    one(&client, "SELECT pg_stat_reset_shared()").await;
    assert!(wal_stats(&client).await.0 < 10);
    client
        .batch_execute("INSERT INTO t SELECT i FROM generate_series(1, 100) AS s(i)")
        .await
        .unwrap();
    assert!(wal_stats(&client).await.0 >= 100);
    one(&client, "SELECT pg_stat_reset_shared(NULL)").await;
    assert!(wal_stats(&client).await.0 < 10);
    assert_eq!(
        one(
            &client,
            &format!("SELECT stats_reset > '{reset1}'::timestamptz FROM pg_stat_wal")
        )
        .await,
        "t"
    );

    // Other targets leave the WAL's counters; unknown ones are PostgreSQL's error.
    client
        .batch_execute("INSERT INTO t SELECT i FROM generate_series(1, 100) AS s(i)")
        .await
        .unwrap();
    one(&client, "SELECT pg_stat_reset_shared('io')").await;
    assert!(wal_stats(&client).await.0 >= 100);
    let err = client
        .simple_query("SELECT pg_stat_reset_shared('walz')")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22023");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lsn_functions_follow_the_wal() {
    let server = TestServer::start("wal-views-lsn");
    let client = server.client().await;
    client
        .batch_execute("CREATE TABLE t (id int, v text)")
        .await
        .unwrap();

    let insert0 = lsn(&client, "pg_current_wal_insert_lsn").await;
    let write0 = lsn(&client, "pg_current_wal_lsn").await;
    let flush0 = lsn(&client, "pg_current_wal_flush_lsn").await;
    assert!(insert0 > 0);
    assert!(flush0 <= write0, "{flush0:X} ≤ {write0:X}");
    client
        .batch_execute(
            "INSERT INTO t SELECT i, repeat('x', 100) FROM generate_series(1, 1000) AS s(i)",
        )
        .await
        .unwrap();
    let insert1_text = one(&client, "SELECT pg_current_wal_insert_lsn()").await;
    let insert1 = parse_lsn(&insert1_text);
    let insert0_text = format!("{:X}/{:X}", insert0 >> 32, insert0 & 0xffff_ffff);
    assert!(
        insert1 > insert0 + 100_000,
        "1000 rows of 100 bytes move the insert position: {insert0_text} → {insert1_text}"
    );
    // The INSERT committed (synchronous_commit = on): its commit record is flushed.
    let flush1 = lsn(&client, "pg_current_wal_flush_lsn").await;
    let write1 = lsn(&client, "pg_current_wal_lsn").await;
    assert!(flush1 > insert0, "{flush1:X} > {insert0:X}");
    assert!(write1 >= flush1, "{write1:X} ≥ {flush1:X}");
    assert!(
        lsn(&client, "pg_current_wal_insert_lsn").await >= write1,
        "insert ≥ write"
    );

    // pg_wal_lsn_diff is the difference in bytes, as numeric.
    assert_eq!(
        one(
            &client,
            &format!("SELECT pg_wal_lsn_diff('{insert1_text}', '{insert0_text}')")
        )
        .await,
        (insert1 - insert0).to_string()
    );
    assert_eq!(
        one(
            &client,
            &format!("SELECT pg_wal_lsn_diff('{insert0_text}'::pg_lsn, '{insert1_text}'::pg_lsn)")
        )
        .await,
        format!("-{}", insert1 - insert0)
    );
    assert_eq!(
        one(
            &client,
            &format!("SELECT pg_typeof(pg_wal_lsn_diff('{insert1_text}', '{insert0_text}'))")
        )
        .await,
        "numeric"
    );
    assert!(
        int(
            &client,
            &format!("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '{insert1_text}')")
        )
        .await
            >= 0
    );
    let stmt = client
        .prepare("SELECT pg_wal_lsn_diff('0/2', '0/1')")
        .await
        .unwrap();
    assert_eq!(stmt.columns()[0].type_(), &Type::NUMERIC);

    // pg_walfile_name names the segment file in pg_wal/ that holds the position.
    let name = one(&client, "SELECT pg_walfile_name(pg_current_wal_lsn())").await;
    assert_eq!(name.len(), 24, "{name}");
    assert!(name.starts_with("00000001"), "timeline 1: {name}");
    let path = server.data_dir.join("pg_wal").join(&name);
    assert!(
        path.is_file(),
        "{} exists; pg_wal holds {:?}",
        path.display(),
        std::fs::read_dir(server.data_dir.join("pg_wal"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect::<Vec<_>>()
    );
    let segment = int(
        &client,
        "SELECT setting::bigint FROM pg_settings WHERE name = 'wal_segment_size'",
    )
    .await as u64;
    assert_eq!(segment, 16 * 1024 * 1024);
    let write = lsn(&client, "pg_current_wal_lsn").await;
    let segno = write / segment;
    assert_eq!(
        name,
        format!("{:08X}{:08X}{:08X}", 1, segno / 256, segno % 256),
        "the segment of {write:X}"
    );

    // At a segment boundary the LSN is in the segment it starts (PostgreSQL 18.4).
    assert_eq!(
        one(&client, "SELECT pg_walfile_name('0/1000000')").await,
        "000000010000000000000001"
    );
    assert_eq!(
        one(&client, "SELECT pg_walfile_name('0/FFFFFF')").await,
        "000000010000000000000000"
    );
    assert_eq!(
        one(&client, "SELECT pg_walfile_name('1/0')").await,
        "000000010000000100000000"
    );

    // Malformed LSNs are PostgreSQL's 22P02.
    for bad in ["0/x", "0/", " 0/1", "123456789/0"] {
        for sql in [
            format!("SELECT pg_walfile_name('{bad}')"),
            format!("SELECT pg_wal_lsn_diff('0/1', '{bad}')"),
        ] {
            let err = client.simple_query(&sql).await.unwrap_err();
            assert_eq!(sqlstate(&err), "22P02", "{sql}");
            assert_eq!(
                err.as_db_error().unwrap().message(),
                format!("invalid input syntax for type pg_lsn: \"{bad}\""),
                "{sql}"
            );
        }
    }
    assert_eq!(
        rows(
            &client,
            "SELECT pg_walfile_name(NULL), pg_wal_lsn_diff(NULL, '0/1')"
        )
        .await,
        vec![vec![None, None]]
    );
}

/// `pg_stat_checkpointer`: PostgreSQL 18's columns; a CHECKPOINT is one requested and done
/// checkpoint whose buffers written are `pg_stat_io`'s checkpointer writes of relations;
/// `pg_stat_reset_shared('checkpointer')` zeroes it and moves `stats_reset`.
#[tokio::test(flavor = "multi_thread")]
async fn pg_stat_checkpointer_counts_checkpoints_and_their_writes() {
    let server = TestServer::start("wal-views-checkpointer");
    let client = server.client().await;
    assert_eq!(
        gdesc(&server, "SELECT * FROM pg_stat_checkpointer"),
        "num_timed|bigint\nnum_requested|bigint\nnum_done|bigint\nrestartpoints_timed|bigint\n\
         restartpoints_req|bigint\nrestartpoints_done|bigint\nwrite_time|double precision\n\
         sync_time|double precision\nbuffers_written|bigint\nslru_written|bigint\n\
         stats_reset|timestamp with time zone\n"
    );
    let reset0 = one(&client, "SELECT stats_reset FROM pg_stat_checkpointer").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    client
        .batch_execute(
            "SELECT pg_stat_reset_shared('checkpointer'); SELECT pg_stat_reset_shared('io'); \
             CREATE TABLE t (id int, pad text); \
             INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 20000) AS s(i); \
             CHECKPOINT",
        )
        .await
        .unwrap();
    let got = rows(
        &client,
        &format!(
            "SELECT num_timed, num_requested, num_done, buffers_written, \
             stats_reset > '{reset0}'::timestamptz FROM pg_stat_checkpointer"
        ),
    )
    .await;
    let writes = one(
        &client,
        "SELECT sum(writes) FROM pg_stat_io \
         WHERE backend_type = 'checkpointer' AND object = 'relation'",
    )
    .await;
    let blocks = int(&client, "SELECT pg_relation_size('t') / 8192").await;
    let got: Vec<String> = got[0].iter().map(|v| v.clone().unwrap()).collect();
    assert_eq!(got[..3], ["0", "1", "1"]);
    assert_eq!(got[3], writes, "buffers written");
    assert!(
        got[3].parse::<i64>().unwrap() >= blocks,
        "the new table's blocks at least"
    );
    assert_eq!(got[4], "t");
    client
        .batch_execute("SELECT pg_stat_reset_shared('checkpointer')")
        .await
        .unwrap();
    assert_eq!(
        one(
            &client,
            "SELECT num_done + buffers_written FROM pg_stat_checkpointer"
        )
        .await,
        "0"
    );
}
