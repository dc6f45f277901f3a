//! The write-ahead log end to end: what was committed survives a crash (`kill -9`) and is
//! replayed at the next start; what was not, is not; unlogged tables are emptied; a page
//! torn by the crash is rebuilt from its full image; redo reads ahead
//! (`pg_stat_recovery_prefetch`); checkpoints keep the WAL on disk bounded;
//! `EXPLAIN (ANALYZE, WAL)` counts a statement's records; and `pg_stat_io` counts the
//! WAL's writes and syncs.

use std::time::Duration;

use iolab_tests::{int, plan, rows, TestServer};

/// `(count, sum(a), rows with b = 'upd')` of `t`, read by a Seq Scan and by a Bitmap Heap
/// Scan over `t_a`; both must agree.
async fn answers(client: &tokio_postgres::Client) -> Vec<i64> {
    let query = "SELECT count(*), coalesce(sum(a), 0), count(*) FILTER (WHERE b = 'upd') FROM t WHERE a > -1000000";
    let mut seen = Vec::new();
    for (settings, node) in [
        (
            "SET enable_seqscan = on; SET enable_bitmapscan = off",
            "Seq Scan",
        ),
        (
            "SET enable_seqscan = off; SET enable_bitmapscan = on",
            "Bitmap Heap Scan",
        ),
    ] {
        client.batch_execute(settings).await.unwrap();
        let lines = plan(client, &format!("EXPLAIN {query}")).await;
        assert!(lines.iter().any(|l| l.contains(node)), "{lines:#?}");
        let r = rows(client, query).await;
        seen.push(
            r[0].iter()
                .map(|v| v.as_ref().unwrap().parse::<i64>().unwrap())
                .collect::<Vec<_>>(),
        );
    }
    client
        .batch_execute("RESET enable_seqscan; RESET enable_bitmapscan")
        .await
        .unwrap();
    assert_eq!(seen[0], seen[1], "Seq Scan and Bitmap Heap Scan disagree");
    seen.remove(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_changes_survive_a_crash() {
    let mut server = TestServer::start("wal-crash");
    let a = server.client().await;
    iolab_tests::run_script(
        &a,
        "CREATE TABLE t(a int, b text);
         CREATE INDEX t_a ON t (a);
         INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 20000) AS s(i);
         DELETE FROM t WHERE a % 10 = 0;
         UPDATE t SET b = 'upd' WHERE a % 10 = 1;
         VACUUM t;
         INSERT INTO t SELECT i, 'refill' FROM generate_series(30001, 33000) AS s(i);
         BEGIN; INSERT INTO t SELECT i, 'block' FROM generate_series(40001, 40500) AS s(i); COMMIT;
         CREATE TABLE built(a int); INSERT INTO built SELECT generate_series(1, 5000);
         CREATE INDEX built_a ON built (a); UPDATE built SET a = -a WHERE a <= 100;",
    )
    .await
    .unwrap();
    // A transaction still open at the crash: none of it may survive.
    let open = server.client().await;
    open.batch_execute(
        "BEGIN; INSERT INTO t SELECT -i, 'open' FROM generate_series(1, 300) AS s(i);
         DELETE FROM t WHERE a < 100; UPDATE t SET b = 'open' WHERE a BETWEEN 500 AND 600",
    )
    .await
    .unwrap();
    // An asynchronous commit is flushed by the WAL writer within wal_writer_delay.
    a.batch_execute("SET synchronous_commit = off; INSERT INTO t VALUES (7777777, 'async')")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let before = answers(&a).await;
    let negatives = int(&a, "SELECT count(*) FROM built WHERE a < 0").await;
    assert_eq!(negatives, 100);
    drop((a, open));

    server.kill();
    server.restart();
    let log = server.log();
    assert!(log.contains("automatic recovery in progress"), "{log}");
    assert!(log.contains("redo done at"), "{log}");
    let a = server.client().await;
    assert_eq!(answers(&a).await, before);
    assert_eq!(
        int(&a, "SELECT count(*) FROM t WHERE b = 'open' OR a < 0").await,
        0
    );
    assert_eq!(int(&a, "SELECT count(*) FROM t WHERE a < 100").await, 90);
    assert_eq!(int(&a, "SELECT count(*) FROM t WHERE b = 'async'").await, 1);
    a.batch_execute("SET enable_seqscan = off").await.unwrap();
    assert_eq!(int(&a, "SELECT count(*) FROM built WHERE a < 0").await, 100);
    assert_eq!(
        int(&a, "SELECT count(*) FROM built WHERE a BETWEEN 1 AND 200").await,
        100
    );

    // Writing on after recovery, and crashing again, loses nothing either.
    a.batch_execute("INSERT INTO t SELECT i, 'after' FROM generate_series(50001, 52000) AS s(i)")
        .await
        .unwrap();
    drop(a);
    server.kill();
    server.restart();
    let a = server.client().await;
    assert_eq!(
        int(&a, "SELECT count(*) FROM t WHERE b = 'after'").await,
        2000
    );
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, before[0] + 2000);
    // A clean stop needs no redo at the next start.
    drop(a);
    server.restart();
    assert_eq!(
        server.log().matches("redo starts at").count(),
        2,
        "{}",
        server.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlogged_tables_are_emptied_by_crash_recovery_only() {
    let mut server = TestServer::start("wal-unlogged");
    let a = server.client().await;
    a.batch_execute(
        "CREATE UNLOGGED TABLE u(a int); CREATE INDEX u_a ON u (a);
         INSERT INTO u SELECT generate_series(1, 3000);
         CREATE TABLE p(a int); INSERT INTO p SELECT generate_series(1, 3000);",
    )
    .await
    .unwrap();
    // Unlogged changes write no WAL.
    let lines = plan(
        &a,
        "EXPLAIN (ANALYZE, WAL, COSTS OFF) INSERT INTO u SELECT generate_series(1, 1000)",
    )
    .await;
    assert!(!lines.iter().any(|l| l.contains("WAL:")), "{lines:#?}");
    drop(a);
    server.restart();
    let a = server.client().await;
    assert_eq!(
        int(&a, "SELECT count(*) FROM u").await,
        4000,
        "a clean stop keeps them"
    );
    drop(a);
    server.kill();
    server.restart();
    assert!(server
        .log()
        .contains("unlogged table \"u\" emptied after the crash"));
    let a = server.client().await;
    assert_eq!(int(&a, "SELECT count(*) FROM u").await, 0);
    assert_eq!(int(&a, "SELECT count(*) FROM p").await, 3000);
    // The emptied index works for new rows.
    a.batch_execute("INSERT INTO u SELECT generate_series(1, 500); SET enable_seqscan = off")
        .await
        .unwrap();
    let lines = plan(&a, "EXPLAIN SELECT count(*) FROM u WHERE a < 100").await;
    assert!(lines.iter().any(|l| l.contains("u_a")), "{lines:#?}");
    assert_eq!(int(&a, "SELECT count(*) FROM u WHERE a < 100").await, 99);
}

/// A crash that tears a page (half of it written): the page's first change after the
/// checkpoint logged it whole, and redo rebuilds it from that image.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_torn_page_is_rebuilt_from_its_full_image() {
    let mut server = TestServer::start("wal-torn");
    let a = server.client().await;
    a.batch_execute(
        "CREATE TABLE t(a int, b text);
         INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 2000) AS s(i);
         CHECKPOINT;
         UPDATE t SET b = 'upd' WHERE a <= 3",
    )
    .await
    .unwrap();
    let relfilenode = int(&a, "SELECT relfilenode FROM pg_class WHERE relname = 't'").await;
    drop(a);
    server.kill();
    // Block 0 as a crash in the middle of writing it might leave it: the first half of
    // the page new (here: garbage), the second half old.
    let path = server.data_dir.join(format!("base/{relfilenode}"));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[..4096].fill(0x5a);
    std::fs::write(&path, &bytes).unwrap();
    server.restart();
    let a = server.client().await;
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, 2000);
    assert_eq!(int(&a, "SELECT count(*) FROM t WHERE b = 'upd'").await, 3);
    assert_eq!(int(&a, "SELECT sum(a) FROM t").await, 2000 * 2001 / 2);
}

/// Redo advises the blocks later records change; `recovery_prefetch = off` does not. It
/// logs its progress every `log_startup_progress_interval`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recovery_reads_ahead_unless_told_not_to() {
    let mut server = TestServer::start_with(
        "wal-prefetch",
        &[
            "-c",
            "full_page_writes=off",
            "-c",
            "log_startup_progress_interval=1",
        ],
    );
    let a = server.client().await;
    a.batch_execute(
        "CREATE TABLE t(a int, b text);
         INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 30000) AS s(i);
         CHECKPOINT;
         UPDATE t SET b = 'x' WHERE a % 97 = 0",
    )
    .await
    .unwrap();
    let pages = int(&a, "SELECT pg_relation_size('t') / 8192").await;
    drop(a);
    server.kill();
    server.restart();
    // A long redo reports its progress (here every millisecond).
    assert!(
        server.log().contains("redo in progress, elapsed time: "),
        "{}",
        server.log()
    );
    let a = server.client().await;
    let stats = rows(
        &a,
        "SELECT prefetch, hit, skip_init, skip_new, skip_fpw, skip_rep FROM pg_stat_recovery_prefetch",
    )
    .await;
    let n = |i: usize| stats[0][i].as_ref().unwrap().parse::<i64>().unwrap();
    // Every page was changed by the UPDATE, none is in the fresh pool, no record carries an
    // image: each page is advised once, and its other records find it recent or buffered.
    assert!(
        n(0) > 0 && n(0) <= pages,
        "prefetch {} of {pages} pages",
        n(0)
    );
    assert_eq!(n(4), 0, "no full page images with full_page_writes = off");
    assert!(n(0) + n(1) + n(3) + n(5) > 0);
    assert_eq!(
        int(&a, "SELECT count(*) FROM t WHERE b = 'x'").await,
        30000 / 97
    );
    a.batch_execute("UPDATE t SET b = 'y' WHERE a % 89 = 0")
        .await
        .unwrap();
    drop(a);
    server.kill();
    server
        .extra_args
        .extend(["-c".to_string(), "recovery_prefetch=off".to_string()]);
    server.restart();
    let a = server.client().await;
    assert_eq!(
        int(&a, "SELECT prefetch + hit + skip_init + skip_new + skip_fpw + skip_rep FROM pg_stat_recovery_prefetch").await,
        0
    );
    assert_eq!(
        int(&a, "SELECT count(*) FROM t WHERE b = 'y'").await,
        30000 / 89
    );
    // Under direct I/O advice would be useless; io_method worker reads ahead into the
    // buffer pool instead (iolab's extension), sync does not read ahead at all.
    let mut a = a;
    for (method, reads_ahead) in [("worker", true), ("sync", false)] {
        a.batch_execute("UPDATE t SET b = 'z' WHERE a % 83 = 0")
            .await
            .unwrap();
        drop(a);
        server.kill();
        server.extra_args = [
            "-c",
            "full_page_writes=off",
            "-c",
            "debug_io_direct=data",
            "-c",
        ]
        .into_iter()
        .map(String::from)
        .chain([format!("io_method={method}")])
        .collect();
        server.restart();
        a = server.client().await;
        let prefetched = int(&a, "SELECT prefetch FROM pg_stat_recovery_prefetch").await;
        assert_eq!(
            prefetched > 0,
            reads_ahead,
            "{method}: {prefetched} blocks read ahead"
        );
        assert_eq!(
            int(&a, "SELECT count(*) FROM t WHERE b = 'z'").await,
            30000 / 83
        );
    }
}

/// With a small max_wal_size the checkpointer starts checkpoints as WAL accumulates and
/// deletes the segments they no longer need.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_keep_the_wal_on_disk_bounded() {
    let server = TestServer::start_with("wal-bounded", &["-c", "max_wal_size=32MB"]);
    let a = server.client().await;
    a.batch_execute("CREATE TABLE t(a int, b text)")
        .await
        .unwrap();
    let segments = || {
        std::fs::read_dir(server.data_dir.join("pg_wal"))
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().len() == 24)
            .count()
    };
    let mut most = 0;
    for round in 0..6 {
        a.batch_execute(&format!(
            "INSERT INTO t SELECT i, md5(i::text) FROM generate_series({}, {}) AS s(i)",
            round * 100_000,
            round * 100_000 + 99_999
        ))
        .await
        .unwrap();
        tokio::time::sleep(Duration::from_millis(600)).await;
        most = most.max(segments());
    }
    let written = int(&a, "SELECT wal_bytes::bigint FROM pg_stat_wal").await;
    assert!(written > 64 << 20, "wrote {written} bytes of WAL");
    assert!(most <= 5, "{most} segments of 16 MB on disk at once");
    let log = server.log();
    assert!(log.contains("checkpoint starting: wal"), "{log}");
    // Segments the checkpoints retired were recycled (renamed for reuse), so fewer new
    // segments were made — each one written and synced once, as pg_stat_io's wal/init
    // row counts — than the WAL passed through.
    let recycled: u64 = log
        .split(" recycled;")
        .filter_map(|before| before.rsplit(' ').next()?.parse::<u64>().ok())
        .sum();
    assert!(recycled > 0, "{log}");
    let init = rows(
        &a,
        "SELECT sum(writes), sum(write_bytes), sum(fsyncs) FROM pg_stat_io
         WHERE object = 'wal' AND context = 'init'",
    )
    .await;
    let n = |i: usize| init[0][i].as_deref().unwrap().parse::<i64>().unwrap();
    let (made, bytes, syncs) = (n(0), n(1), n(2));
    assert!(made >= 1, "{init:?}");
    assert_eq!(bytes, made * (16 << 20), "{init:?}");
    assert_eq!(syncs, made, "{init:?}");
    assert!(
        made * (16 << 20) < written,
        "{made} segments made for {written} bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_wal_counts_the_statements_records() {
    let server = TestServer::start("wal-explain");
    let a = server.client().await;
    a.batch_execute("CREATE TABLE t(a int); CHECKPOINT")
        .await
        .unwrap();
    let lines = plan(
        &a,
        "EXPLAIN (ANALYZE, WAL, COSTS OFF, TIMING OFF) INSERT INTO t SELECT generate_series(1, 1000)",
    )
    .await;
    let wal = lines
        .iter()
        .find(|l| l.trim_start().starts_with("WAL:"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    let records = iolab_tests::number_after(wal, "records=").unwrap();
    // One record per row, and one per new page.
    assert!((1000.0..1100.0).contains(&records), "{wal}");
    assert!(
        iolab_tests::number_after(wal, "bytes=").unwrap() > records * 24.0,
        "{wal}"
    );
    // After a checkpoint, the first change of each page logs it whole.
    a.batch_execute("CHECKPOINT").await.unwrap();
    let pages = int(&a, "SELECT pg_relation_size('t') / 8192").await as f64;
    let lines = plan(&a, "EXPLAIN (ANALYZE, WAL, COSTS OFF) UPDATE t SET a = -a").await;
    let wal = lines
        .iter()
        .find(|l| l.trim_start().starts_with("WAL:"))
        .unwrap();
    assert!(
        iolab_tests::number_after(wal, "fpi=").unwrap() >= pages,
        "{wal}"
    );
}

/// The WAL's writes and syncs show in `pg_stat_io`'s `wal` rows of whoever did them: the
/// session whose COMMIT flushed, the checkpointer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_stat_io_counts_wal_writes_by_backend_type() {
    let server = TestServer::start("wal-stat-io");
    let a = server.client().await;
    let wal_io = |who: &'static str| {
        format!(
            "SELECT writes, write_bytes, fsyncs FROM pg_stat_io
             WHERE backend_type = '{who}' AND object = 'wal' AND context = 'normal'"
        )
    };
    let before = rows(&a, &wal_io("client backend")).await;
    a.batch_execute("CREATE TABLE t(a int); INSERT INTO t SELECT generate_series(1, 10000)")
        .await
        .unwrap();
    let after = rows(&a, &wal_io("client backend")).await;
    let n = |r: &Vec<Vec<Option<String>>>, i: usize| {
        r[0][i].as_deref().unwrap().parse::<i64>().unwrap()
    };
    assert!(n(&after, 0) > n(&before, 0), "{before:?} -> {after:?}");
    assert!(
        n(&after, 1) - n(&before, 1) >= 10000 * 24,
        "{before:?} -> {after:?}"
    );
    assert!(
        n(&after, 2) > n(&before, 2),
        "COMMIT synced: {before:?} -> {after:?}"
    );
    a.batch_execute("CHECKPOINT").await.unwrap();
    let checkpointer = rows(&a, &wal_io("checkpointer")).await;
    assert!(n(&checkpointer, 2) > 0, "{checkpointer:?}");
}

/// A crash between a COMMIT's record and the end of its DDL bookkeeping (the pending-DDL
/// file still lists the transaction's DROP): the next start completes the DDL of the
/// transaction whose commit record made it, and undoes that of one still open. The crash
/// window is too short to hit, so the test writes the pending file as it would leave it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_committed_just_before_a_crash_is_completed_not_undone() {
    let mut server = TestServer::start("wal-ddl-commit");
    let a = server.client().await;
    a.batch_execute(
        "CREATE TABLE gone(a int); INSERT INTO gone SELECT generate_series(1, 100);
         CREATE TABLE kept(a int); CREATE TABLE b(a int)",
    )
    .await
    .unwrap();
    let relfilenode = int(
        &a,
        "SELECT relfilenode FROM pg_class WHERE relname = 'gone'",
    )
    .await;
    let gone_file = server.data_dir.join(format!("base/{relfilenode}"));
    assert!(gone_file.exists());
    let pending_path = server.data_dir.join("global/pending_ddl.json");
    let pending = || -> serde_json::Map<String, serde_json::Value> {
        serde_json::from_slice(&std::fs::read(&pending_path).unwrap()).unwrap()
    };

    a.batch_execute("BEGIN; DROP TABLE gone; INSERT INTO b VALUES (1)")
        .await
        .unwrap();
    let xid = int(
        &a,
        "SELECT backend_xid FROM pg_stat_activity WHERE pid = pg_backend_pid()",
    )
    .await;
    let mut committing = pending();
    assert_eq!(committing.len(), 1, "{committing:?}");
    for txn in committing.values_mut() {
        txn["xid"] = xid.into();
    }
    a.batch_execute("COMMIT").await.unwrap();
    assert!(!gone_file.exists(), "COMMIT removes a dropped table's file");

    let open = server.client().await;
    open.batch_execute("BEGIN; DROP TABLE kept; INSERT INTO b VALUES (2)")
        .await
        .unwrap();
    let mut left = pending();
    assert_eq!(left.len(), 1, "only the open transaction: {left:?}");
    assert!(left.values().all(|t| t["xid"].is_null()));
    // The file as a crash right after the first COMMIT's record would leave it (that
    // COMMIT's file removal has happened; completing it again is a no-op).
    left.extend(committing);
    std::fs::write(&pending_path, serde_json::to_vec(&left).unwrap()).unwrap();
    drop((a, open));
    server.kill();
    server.restart();

    let log = server.log();
    assert!(log.contains("completed 1 DDL change(s)"), "{log}");
    assert!(log.contains("undid 1 DDL change(s)"), "{log}");
    let a = server.client().await;
    let tables = rows(
        &a,
        "SELECT relname FROM pg_class WHERE relname IN ('gone', 'kept', 'b') ORDER BY 1",
    )
    .await;
    let names: Vec<_> = tables.iter().map(|r| r[0].clone().unwrap()).collect();
    assert_eq!(names, ["b", "kept"]);
    assert_eq!(int(&a, "SELECT count(*) FROM b").await, 1);
    assert_eq!(int(&a, "SELECT sum(a) FROM b").await, 1);
    assert!(!pending_path.exists(), "nothing is pending after recovery");
}

/// One transaction of the workload below; each logs its net change of `m`'s row count in
/// `ledger` in the same transaction, so `sum(ledger)` is the count a recovered `m` must have.
async fn mixed_transaction(
    c: &tokio_postgres::Client,
    i: i64,
) -> Result<(), tokio_postgres::Error> {
    c.batch_execute(&format!(
        "BEGIN;
         INSERT INTO m SELECT (random() * 1000000)::int, md5(s::text) FROM generate_series(1, 400) AS g(s);
         INSERT INTO ledger VALUES (400);
         UPDATE m SET v = 'u{i}' WHERE k % 61 = {};",
        i % 61
    ))
    .await?;
    let doomed: i64 = c
        .query_one(
            &format!("SELECT count(*) FROM m WHERE k % 89 = {}", i % 89),
            &[],
        )
        .await?
        .get(0);
    c.batch_execute(&format!(
        "DELETE FROM m WHERE k % 89 = {}; INSERT INTO ledger VALUES ({}); COMMIT",
        i % 89,
        -doomed
    ))
    .await?;
    if i % 4 == 3 {
        c.batch_execute("VACUUM m").await?;
    }
    Ok(())
}

/// Crashes (`kill -9`) at arbitrary moments of a mixed workload — inserts at random keys
/// (B-tree inserts inside pages, splits), updates, deletes, VACUUM (pruning, index entries
/// removed) — with a small buffer pool, so that redo replays every kind of record onto
/// pages some of which were written before the crash: after each recovery the table holds
/// exactly what the committed transactions left, and the index matches it entry for entry
/// (`iolab_btree_check`). Once with `full_page_writes = off` (every record replayed onto
/// the page on disk), once with it on and a CHECKPOINT every 150 ms (full page images,
/// checkpoints under way at the crash).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashes_during_a_mixed_workload_recover_table_and_index() {
    crash_a_mixed_workload("off", false).await;
    crash_a_mixed_workload("on", true).await;
}

async fn crash_a_mixed_workload(full_page_writes: &str, checkpoints: bool) {
    let fpw = format!("full_page_writes={full_page_writes}");
    let mut server = TestServer::start_with(
        &format!("wal-mixed-crash-{full_page_writes}"),
        &["-c", &fpw, "-c", "shared_buffers=2MB"],
    );
    let a = server.client().await;
    a.batch_execute(
        "CREATE TABLE m(k int, v text); CREATE INDEX m_k ON m (k);
         CREATE TABLE ledger(delta int)",
    )
    .await
    .unwrap();
    let mut next = 0i64;
    for round in 0..3u64 {
        let worker = server.client().await;
        let first = next;
        let task = tokio::spawn(async move {
            let mut i = first;
            loop {
                if let Err(e) = mixed_transaction(&worker, i).await {
                    // Only the kill ends the workload: no statement may fail.
                    assert!(e.as_db_error().is_none(), "transaction {i}: {e:?}");
                    return;
                }
                i += 1;
            }
        });
        let checkpointer = server.client().await;
        let checkpoint_task = tokio::spawn(async move {
            while checkpoints && checkpointer.batch_execute("CHECKPOINT").await.is_ok() {
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
        });
        // A different moment of the workload each round.
        let ms = 700
            + 450 * round
            + std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .subsec_millis() as u64
                % 300;
        tokio::time::sleep(Duration::from_millis(ms)).await;
        server.kill();
        let (worker, _) = tokio::join!(task, checkpoint_task);
        worker.expect("the workload ended by the kill");
        server.restart();
        let log = server.log();
        let replayed: u64 = log
            .rsplit("redo replayed ")
            .next()
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("round {round}: no redo in\n{log}"));
        // With a CHECKPOINT every 150 ms the kill may come right after one: little to redo.
        let least = if checkpoints { 1 } else { 100 };
        assert!(
            replayed >= least,
            "round {round}: {replayed} records replayed"
        );
        let c = server.client().await;
        let expected = int(&c, "SELECT coalesce(sum(delta), 0) FROM ledger").await;
        let rows = int(&c, "SELECT count(*) FROM m").await;
        assert_eq!(rows, expected, "round {round}: committed rows");
        eprintln!(
            "fpw {full_page_writes}, round {round}: {replayed} records replayed, {rows} rows"
        );
        assert!(rows > 0, "round {round}: some transactions committed");
        let entries = int(&c, "SELECT iolab_btree_check('m_k')").await;
        assert_eq!(entries, rows, "round {round}: index entries");
        c.batch_execute("SET enable_seqscan = off").await.unwrap();
        let through_index = int(&c, "SELECT count(*) FROM m WHERE k >= 0").await;
        assert_eq!(
            through_index, rows,
            "round {round}: rows found through the index"
        );
        c.batch_execute("VACUUM m").await.unwrap();
        assert_eq!(int(&c, "SELECT iolab_btree_check('m_k')").await, rows);
        next += 10_000;
    }
}
