//! `REINDEX` end to end: every form rebuilds its indexes into new files (a new
//! `relfilenode`) with the same answers, a bottom-up build that packs an index grown by
//! random inserts into fewer pages; its activity counts survive; ROLLBACK gives the old
//! files back. Its messages, SQLSTATEs and which statements may run in a transaction
//! block are PostgreSQL 18.4's for the same statements (run there, 2026-12-06).

use iolab_tests::tokio_postgres::Client;
use iolab_tests::waiting::exec;
use iolab_tests::{error, int, rows, TestServer};

async fn filenode(client: &Client, rel: &str) -> i64 {
    int(client, &format!("SELECT pg_relation_filenode('{rel}')")).await
}

/// The integers `sql` returns as one comma-separated text.
async fn int_list(client: &Client, sql: &str) -> Vec<i64> {
    let text = rows(client, sql).await[0][0].clone().unwrap();
    text.split(',').map(|n| n.parse().unwrap()).collect()
}

async fn size(client: &Client, rel: &str) -> i64 {
    int(client, &format!("SELECT pg_relation_size('{rel}')")).await
}

/// `count(*)` of `filter` on `t` by a Seq Scan and through the indexes; both must agree.
async fn counts_agree(client: &Client, filter: &str) -> i64 {
    let query = format!("SELECT count(*) FROM t WHERE {filter}");
    exec(
        client,
        "SET enable_indexscan = off; SET enable_bitmapscan = off",
    )
    .await;
    let truth = int(client, &query).await;
    exec(
        client,
        "RESET enable_indexscan; RESET enable_bitmapscan; SET enable_seqscan = off",
    )
    .await;
    let plan: Vec<String> = rows(client, &format!("EXPLAIN (COSTS OFF) {query}"))
        .await
        .into_iter()
        .map(|r| r[0].clone().unwrap())
        .collect();
    assert!(
        plan.iter().any(|l| l.contains("Index")),
        "an index answers {query}: {plan:#?}"
    );
    assert_eq!(int(client, &query).await, truth, "{query}");
    exec(client, "RESET enable_seqscan").await;
    truth
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reindex_rebuilds_into_new_files_with_the_same_answers() {
    let server = TestServer::start("reindex");
    let c = server.client().await;
    // Indexes first, then keys in random order: leaf splits leave the pages half full.
    exec(
        &c,
        "CREATE TABLE t (id int, a int, b text);
         CREATE INDEX t_a_idx ON t (a);
         CREATE INDEX t_b_idx ON t (b);
         INSERT INTO t SELECT i, (i * 7919) % 60000, md5(i::text) FROM generate_series(1, 60000) i;
         CREATE TABLE u (x int); CREATE INDEX u_x_idx ON u (x);
         INSERT INTO u SELECT generate_series(1, 1000)",
    )
    .await;
    let filters = ["a < 600", "a BETWEEN 30000 AND 30100", "b < '1'"];
    let mut truths = Vec::new();
    for f in filters {
        truths.push(counts_agree(&c, f).await);
    }
    let scans = int(
        &c,
        "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 't_a_idx'",
    )
    .await;
    assert!(scans > 0);
    let (a_before, b_before, b_size) = (
        filenode(&c, "t_a_idx").await,
        filenode(&c, "t_b_idx").await,
        size(&c, "t_b_idx").await,
    );

    exec(&c, "REINDEX INDEX t_a_idx").await;
    let a_after = filenode(&c, "t_a_idx").await;
    assert_ne!(a_after, a_before, "a new file");
    assert_eq!(
        filenode(&c, "t_b_idx").await,
        b_before,
        "the other index untouched"
    );
    // Its activity stays with it, as in PostgreSQL (counted by index OID there).
    let scans_after = int(
        &c,
        "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = 't_a_idx'",
    )
    .await;
    assert_eq!(scans_after, scans);
    for (f, truth) in filters.iter().zip(&truths) {
        assert_eq!(counts_agree(&c, f).await, *truth, "{f}");
    }

    // In a transaction block: ROLLBACK gives the old files back, COMMIT keeps the new.
    exec(
        &c,
        "BEGIN; REINDEX TABLE t; INSERT INTO t VALUES (0, 5, 'x')",
    )
    .await;
    assert_ne!(filenode(&c, "t_a_idx").await, a_after);
    assert_ne!(filenode(&c, "t_b_idx").await, b_before);
    exec(&c, "ROLLBACK").await;
    assert_eq!(filenode(&c, "t_a_idx").await, a_after);
    assert_eq!(filenode(&c, "t_b_idx").await, b_before);
    assert_eq!(counts_agree(&c, "a < 600").await, truths[0]);
    exec(
        &c,
        "BEGIN; REINDEX TABLE t; INSERT INTO t VALUES (0, 5, 'x'); COMMIT",
    )
    .await;
    // md5 keys came in random order and split leaves half full; built bottom-up, the
    // leaves are 90 % full.
    let packed = size(&c, "t_b_idx").await;
    assert!(
        packed * 10 < b_size * 9,
        "the index takes fewer pages: {b_size} → {packed} bytes"
    );
    assert_ne!(filenode(&c, "t_b_idx").await, b_before);
    assert_eq!(counts_agree(&c, "a < 600").await, truths[0] + 1);
    assert_eq!(counts_agree(&c, "b < '1'").await, truths[2]);

    // PostgreSQL lets REINDEX run in a read-only transaction.
    let a_now = filenode(&c, "t_a_idx").await;
    exec(&c, "BEGIN READ ONLY; REINDEX INDEX t_a_idx; COMMIT").await;
    assert_ne!(filenode(&c, "t_a_idx").await, a_now);

    // SCHEMA and DATABASE: every index of every table.
    let files = "SELECT string_agg(relfilenode::text, ',' ORDER BY relname) FROM pg_class
                  WHERE relname IN ('t_a_idx', 't_b_idx', 'u_x_idx')";
    let before = int_list(&c, files).await;
    exec(&c, "REINDEX SCHEMA public").await;
    let mid = int_list(&c, files).await;
    exec(&c, "REINDEX DATABASE").await;
    let after = int_list(&c, files).await;
    assert_eq!(before.len(), 3);
    for i in 0..3 {
        assert!(
            before[i] != mid[i] && mid[i] != after[i],
            "{before:?} {mid:?} {after:?}"
        );
    }
    assert_eq!(int(&c, "SELECT count(*) FROM u WHERE x <= 10").await, 10);

    // A temporary table's index.
    exec(
        &c,
        "CREATE TEMP TABLE tt (a int); CREATE INDEX tt_a ON tt (a);
         INSERT INTO tt SELECT generate_series(1, 5000)",
    )
    .await;
    let tt = filenode(&c, "tt_a").await;
    exec(&c, "REINDEX TABLE tt; SET enable_seqscan = off").await;
    assert_ne!(filenode(&c, "tt_a").await, tt);
    assert_eq!(int(&c, "SELECT count(*) FROM tt WHERE a < 100").await, 99);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reindex_messages_and_errors_are_postgresql_s() {
    let server = TestServer::start("reindex-errors");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE ri (a int, b text);
         INSERT INTO ri SELECT g, md5(g::text) FROM generate_series(1, 1000) g;
         CREATE INDEX ri_a ON ri (a); CREATE INDEX ri_b ON ri (b);
         CREATE TABLE rnoidx (a int); CREATE VIEW rv AS SELECT * FROM ri",
    )
    .await;
    let failures = [
        (
            "REINDEX INDEX nope",
            "42P01",
            "relation \"nope\" does not exist",
        ),
        (
            "REINDEX TABLE public.nope",
            "42P01",
            "relation \"public.nope\" does not exist",
        ),
        ("REINDEX INDEX ri", "42809", "\"ri\" is not an index"),
        (
            "REINDEX TABLE ri_a",
            "42809",
            "\"ri_a\" is not a table or materialized view",
        ),
        (
            "REINDEX TABLE rv",
            "42809",
            "\"rv\" is not a table or materialized view",
        ),
        (
            "REINDEX (FOO) TABLE ri",
            "42601",
            "unrecognized REINDEX option \"foo\"",
        ),
        (
            "REINDEX (TABLESPACE nope) TABLE ri",
            "42704",
            "tablespace \"nope\" does not exist",
        ),
        (
            "REINDEX SCHEMA nope",
            "3F000",
            "schema \"nope\" does not exist",
        ),
        (
            "REINDEX DATABASE other",
            "0A000",
            "can only reindex the currently open database",
        ),
        ("REINDEX TABLE", "42601", "syntax error at end of input"),
        ("REINDEX ri", "42601", "syntax error at or near \"ri\""),
    ];
    for (sql, code, message) in failures {
        assert_eq!(error(&c, sql).await, (code.into(), message.into()), "{sql}");
    }
    // iolab's own refusal: it has no concurrent build.
    let (code, message) = error(&c, "REINDEX TABLE CONCURRENTLY ri").await;
    assert_eq!(code, "0A000");
    assert!(
        message.starts_with("REINDEX CONCURRENTLY is not supported"),
        "{message}"
    );
    for kind in ["SCHEMA public", "DATABASE", "SYSTEM"] {
        exec(&c, "BEGIN").await;
        let keyword = kind.split(' ').next().unwrap();
        assert_eq!(
            error(&c, &format!("REINDEX {kind}")).await,
            (
                "25001".into(),
                format!("REINDEX {keyword} cannot run inside a transaction block")
            )
        );
        exec(&c, "ROLLBACK").await;
    }
    exec(
        &c,
        "REINDEX (VERBOSE false, TABLESPACE pg_default) TABLE ri",
    )
    .await;
    exec(&c, "REINDEX SYSTEM").await;

    // The messages, through psql, one statement at a time (the CPU figures vary).
    let mut args = vec!["-v", "ON_ERROR_STOP=0"];
    for sql in [
        "REINDEX (VERBOSE) TABLE ri",
        "REINDEX TABLE rnoidx",
        "REINDEX (VERBOSE) SCHEMA public",
        "REINDEX TABLE;",
    ] {
        args.extend(["-c", sql]);
    }
    let out = server.psql(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<String> = stderr
        .lines()
        .map(|l| match l.split_once("CPU: ") {
            Some((head, _)) => format!("{head}CPU: …"),
            None => l.to_string(),
        })
        .collect();
    let expected = [
        "INFO:  index \"ri_a\" was reindexed",
        "DETAIL:  CPU: …",
        "INFO:  index \"ri_b\" was reindexed",
        "DETAIL:  CPU: …",
        "NOTICE:  table \"rnoidx\" has no indexes to reindex",
        "INFO:  index \"ri_a\" was reindexed",
        "DETAIL:  CPU: …",
        "INFO:  index \"ri_b\" was reindexed",
        "DETAIL:  CPU: …",
        "INFO:  table \"public.ri\" was reindexed",
        "ERROR:  syntax error at or near \";\"",
        "LINE 1: REINDEX TABLE;",
        "                     ^",
    ];
    assert_eq!(lines, expected, "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.matches("REINDEX").count(), 3, "{stdout}");
}
