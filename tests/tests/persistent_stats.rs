//! Cumulative statistics survive a clean restart and start afresh after a crash, as in
//! PostgreSQL: a clean shutdown writes `pg_stat/pgstat.stat`, the next start reads and
//! removes it; a server killed without a shutdown leaves none.

use iolab_tests::{evict, int, rows, TestServer};
use tokio_postgres::Client;

/// The figures checked, in one row of text: the table's sequential scans, the client
/// backends' relation reads, the calls of the counting statement, committed transactions,
/// completed checkpoints, and `pg_stat_io`'s and `pg_stat_checkpointer`'s `stats_reset`.
const FIGURES: &str = "SELECT
    (SELECT seq_scan FROM pg_stat_user_tables WHERE relname = 'kept'),
    (SELECT sum(reads) FROM pg_stat_io
      WHERE backend_type = 'client backend' AND object = 'relation'),
    (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
      WHERE query = 'SELECT count(*) FROM kept'),
    (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()),
    (SELECT num_done FROM pg_stat_checkpointer),
    (SELECT min(stats_reset)::text FROM pg_stat_io),
    (SELECT stats_reset::text FROM pg_stat_checkpointer)";

#[derive(Debug)]
struct Figures {
    seq_scans: i64,
    reads: i64,
    calls: i64,
    commits: i64,
    checkpoints: i64,
    io_reset: String,
    checkpointer_reset: String,
}

async fn figures(c: &Client) -> Figures {
    let row = rows(c, FIGURES).await.remove(0);
    let int = |i: usize| -> i64 { row[i].as_deref().map_or(0, |v| v.parse().unwrap()) };
    Figures {
        seq_scans: int(0),
        reads: int(1),
        calls: int(2),
        commits: int(3),
        checkpoints: int(4),
        io_reset: row[5].clone().unwrap(),
        checkpointer_reset: row[6].clone().unwrap(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn statistics_survive_a_clean_restart_and_start_afresh_after_a_crash() {
    let mut server = TestServer::start("persistent-stats");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE kept AS SELECT i, md5(i::text) AS t FROM generate_series(1, 50000) i",
    )
    .await
    .unwrap();
    for _ in 0..3 {
        evict(&c, "kept").await;
        c.simple_query("SELECT count(*) FROM kept").await.unwrap();
    }
    let before = figures(&c).await;
    assert_eq!((before.seq_scans, before.calls), (3, 3), "{before:?}");
    // Reads of up to 16 blocks (io_combine_limit): some 27 per scan of 417 pages.
    assert!(before.reads >= 3 * 20, "{before:?}");
    drop(c);

    // A clean restart keeps every figure, the shutdown checkpoint counted.
    server.restart();
    assert!(
        !server.data_dir.join("pg_stat/pgstat.stat").exists(),
        "the start removes the file it read"
    );
    let c = server.client().await;
    let after = figures(&c).await;
    assert_eq!((after.seq_scans, after.calls), (3, 3), "{after:?}");
    assert_eq!(after.reads, before.reads, "{after:?}");
    assert!(after.commits >= before.commits, "{before:?} {after:?}");
    assert!(
        after.checkpoints > before.checkpoints,
        "{before:?} {after:?}"
    );
    assert_eq!(after.io_reset, before.io_reset);
    assert_eq!(after.checkpointer_reset, before.checkpointer_reset);
    // And they go on counting from there.
    c.simple_query("SELECT count(*) FROM kept").await.unwrap();
    let counted_on = figures(&c).await;
    assert_eq!(
        (counted_on.seq_scans, counted_on.calls),
        (4, 4),
        "{counted_on:?}"
    );
    drop(c);

    // A crash: no shutdown, no file; the statistics start empty, reset at the start.
    server.kill();
    server.restart();
    let c = server.client().await;
    let fresh = figures(&c).await;
    assert_eq!((fresh.seq_scans, fresh.calls), (0, 0), "{fresh:?}");
    assert!(fresh.reads < before.reads, "{fresh:?}");
    assert!(fresh.io_reset > before.io_reset, "{before:?} {fresh:?}");
    assert!(fresh.checkpointer_reset > before.checkpointer_reset);
    assert_eq!(int(&c, "SELECT count(*) FROM kept").await, 50000);
}
