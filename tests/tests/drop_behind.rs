//! `read_stream_drop_behind` (iolab's): a Seq Scan or Bitmap Heap Scan that drops what it has
//! read from the kernel's page cache, checked from outside with `mincore` on the table's
//! file, under each `io_method`:
//!
//! - off (the default, PostgreSQL's behaviour), a scan leaves the whole table cached;
//! - on, a Seq Scan leaves none of it cached, in one `posix_fadvise(DONTNEED)` per step
//!   (`pg_stat_aio.dropped_behind`), and returns the same answer;
//! - a Bitmap Heap Scan drops the range from its first block to its last, holes included,
//!   and leaves the blocks outside it alone;
//! - with direct I/O there is nothing to drop, and nothing is counted;
//! - `EXPLAIN (SETTINGS)` lists the setting when it is changed, and `EXPLAIN (IO)` counts
//!   the drops (` drops=` on the `I/O:` line).

use std::os::unix::io::AsRawFd;

use iolab_tests::{
    client_aio_count, evict, evict_cold, int, rows, start_with_modulo_t, TestServer,
};
use tokio_postgres::Client;

const ROWS: i64 = 100_000;
/// 5 values of 1 000, `a = i % 1000` in order of `i`: matches from block 4 or so to the
/// table's last blocks, one block in about nine.
const BITMAP: &str = "SELECT count(*) FROM t WHERE a BETWEEN 500 AND 504";
const STEP_BLOCKS: i64 = 32;
/// Blocks in the largest folio of the kernel's page cache (2 MiB).
const FOLIO_BLOCKS: i64 = 256;

/// `t`'s (only) segment file.
async fn heap_file(server: &TestServer, client: &Client) -> std::path::PathBuf {
    let filenode = rows(client, "SELECT pg_relation_filenode('t')").await[0][0]
        .clone()
        .expect("filenode");
    server.data_dir.join("base").join(filenode)
}

/// The blocks of `t`'s segment that are in the page cache now.
async fn cached_blocks(server: &TestServer, client: &Client) -> Vec<i64> {
    let file = std::fs::File::open(heap_file(server, client).await).unwrap();
    let len = file.metadata().unwrap().len() as usize;
    assert!(len > 0 && len < 1 << 30, "one segment");
    let page = 4096;
    let mut resident = vec![0u8; len.div_ceil(page)];
    // SAFETY: a read-only shared mapping of a file we opened, unmapped before return;
    // mincore writes one byte per page into `resident`, which has room for them all.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        );
        assert_ne!(addr, libc::MAP_FAILED);
        assert_eq!(libc::mincore(addr, len, resident.as_mut_ptr()), 0);
        libc::munmap(addr, len);
    }
    let per_block = 8192 / page;
    (0..(len / 8192) as i64)
        .filter(|&b| {
            let first = b as usize * per_block;
            resident[first..first + per_block]
                .iter()
                .any(|r| r & 1 == 1)
        })
        .collect()
}

async fn dropped_behind(client: &Client) -> i64 {
    client_aio_count(client, "dropped_behind").await
}

/// `t` out of the buffer pool, its pages in the page cache clean: dirty pages (hint bits the
/// last scan set, written when their buffers left the pool) are written back, not dropped.
async fn evict_clean(client: &Client) {
    evict(client, "t").await;
    client.batch_execute("CHECKPOINT").await.unwrap();
}

async fn nblocks(client: &Client) -> i64 {
    int(client, "SELECT pg_relation_size('t') / 8192").await
}

/// A cold Seq Scan off and on, then a Bitmap Heap Scan on, under `args`' io_method.
async fn check(name: &str, args: &[&str]) {
    let (server, client) = start_with_modulo_t(name, args, ROWS).await;
    let n = nblocks(&client).await;
    let all: Vec<i64> = (0..n).collect();
    assert_eq!(
        iolab_tests::show(&client, "read_stream_drop_behind").await,
        "0"
    );

    // Off: the scan's reads fill the page cache.
    evict_cold(&server, &client, "t").await;
    assert_eq!(
        cached_blocks(&server, &client).await,
        Vec::<i64>::new(),
        "{name}: cold"
    );
    let before = dropped_behind(&client).await;
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, ROWS);
    assert_eq!(cached_blocks(&server, &client).await, all, "{name}: off");
    assert_eq!(dropped_behind(&client).await, before, "{name}: off");

    // On: the same scan leaves nothing behind it, one drop per 32 blocks and one at the end.
    client
        .batch_execute("SET read_stream_drop_behind = '256kB'")
        .await
        .unwrap();
    assert_eq!(
        iolab_tests::show(&client, "read_stream_drop_behind").await,
        "256kB"
    );
    evict_clean(&client).await;
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, ROWS);
    assert_eq!(
        cached_blocks(&server, &client).await,
        Vec::<i64>::new(),
        "{name}: on"
    );
    let drops = dropped_behind(&client).await - before;
    assert_eq!(
        drops,
        (n + STEP_BLOCKS - 1) / STEP_BLOCKS,
        "{name}: {n} blocks"
    );

    // A Bitmap Heap Scan drops from its first block to its last, holes included.
    client
        .batch_execute("SET read_stream_drop_behind = 0")
        .await
        .unwrap();
    let blocks: Vec<i64> = rows(&client, "SELECT ctid FROM t WHERE a BETWEEN 500 AND 504")
        .await
        .iter()
        .map(|r| {
            let ctid = r[0].as_deref().expect("ctid");
            let block = ctid.trim_start_matches('(').split(',').next().unwrap();
            block.parse().unwrap()
        })
        .collect();
    let (first, last) = (*blocks.iter().min().unwrap(), *blocks.iter().max().unwrap());
    evict_clean(&client).await;
    // Every block in the page cache (some may have stayed in the pool until now).
    std::fs::read(heap_file(&server, &client).await).unwrap();
    assert_eq!(cached_blocks(&server, &client).await, all, "{name}");
    client
        .batch_execute("SET read_stream_drop_behind = '256kB'")
        .await
        .unwrap();
    let plan = rows(&client, &format!("EXPLAIN (SETTINGS, COSTS OFF) {BITMAP}")).await;
    let plan: Vec<String> = plan.into_iter().filter_map(|r| r[0].clone()).collect();
    assert!(
        plan.iter().any(|l| l.contains("Bitmap Heap Scan on t")),
        "{plan:#?}"
    );
    assert!(
        plan.iter()
            .any(|l| l.starts_with("Settings:") && l.contains("read_stream_drop_behind = '256kB'")),
        "{plan:#?}"
    );
    assert!(
        first > 0 && last < n - 1 && last - first > 3 * FOLIO_BLOCKS,
        "{first}..{last} of {n}"
    );
    assert_eq!(int(&client, BITMAP).await, 500);
    let cached = cached_blocks(&server, &client).await;
    let outside: Vec<i64> = all
        .iter()
        .copied()
        .filter(|b| *b < first || *b > last)
        .collect();
    let (inside, left_outside): (Vec<i64>, Vec<i64>) =
        cached.iter().partition(|&&b| (first..=last).contains(&b));
    assert_eq!(
        left_outside, outside,
        "{name}: blocks outside the scan stay"
    );
    // The kernel drops a large folio (up to 2 MiB) only when the range covers all of it, so
    // the folios holding the first and the last block may stay.
    let near_an_end =
        |b: i64| b < first - first % FOLIO_BLOCKS + FOLIO_BLOCKS || b >= last - last % FOLIO_BLOCKS;
    assert!(
        inside.iter().all(|&b| near_an_end(b)),
        "{name}: {first}..={last}: {inside:?}"
    );

    // EXPLAIN (IO) counts the scan's drops on its `I/O:` line.
    evict_clean(&client).await;
    let lines = iolab_tests::plan(
        &client,
        "EXPLAIN (ANALYZE, IO, COSTS OFF) SELECT count(*) FROM t",
    )
    .await;
    assert_eq!(
        iolab_tests::figure(&lines, "I/O:", "drops="),
        Some(((n + STEP_BLOCKS - 1) / STEP_BLOCKS) as f64),
        "{name}: {lines:#?}"
    );
}

#[tokio::test]
async fn sync_drops_behind() {
    check("drop_behind_sync", &["-c", "io_method=sync"]).await;
}

#[tokio::test]
async fn worker_drops_behind() {
    check("drop_behind_worker", &["-c", "io_method=worker"]).await;
}

#[tokio::test]
async fn io_uring_drops_behind() {
    check("drop_behind_io_uring", &["-c", "io_method=io_uring"]).await;
}

/// Direct I/O leaves the page cache alone: nothing to drop, nothing counted.
#[tokio::test]
async fn direct_io_has_nothing_to_drop() {
    let (server, client) =
        start_with_modulo_t("drop_behind_direct", &["-c", "debug_io_direct=data"], ROWS).await;
    evict_cold(&server, &client, "t").await;
    client
        .batch_execute("SET read_stream_drop_behind = '256kB'")
        .await
        .unwrap();
    let before = dropped_behind(&client).await;
    assert_eq!(int(&client, "SELECT count(*) FROM t").await, ROWS);
    assert_eq!(int(&client, BITMAP).await, 500);
    assert_eq!(dropped_behind(&client).await, before);
}
