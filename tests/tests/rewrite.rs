//! Table rewrites end to end: `VACUUM FULL [VERBOSE] [table]` and
//! `CLUSTER [VERBOSE] table [USING index]` write the table into a new file (a new
//! `relfilenode`) without its dead rows — VACUUM FULL in the old physical order, CLUSTER
//! in the index's order — and rebuild every index. Checked here: the table's size, its
//! rows, their physical order (a sequential scan's order, `ctid`), the indexes' answers
//! (Index / Bitmap / Index Only Scans against a Seq Scan), `pg_class.relpages` /
//! `reltuples` / `relfilenode`, `pg_index.indisclustered` and psql's `\d`, `pg_stats`
//! correlation after CLUSTER, the VERBOSE messages, the errors, CLUSTER in a transaction
//! block undone by ROLLBACK (and ROLLBACK TO SAVEPOINT), the AccessExclusiveLock, rows an
//! older REPEATABLE READ snapshot still sees surviving a rewrite, and crash recovery after
//! a committed (and during an uncommitted) rewrite.
//!
//! Every message, SQLSTATE and outcome asserted here is what PostgreSQL 18.4 gave for the
//! same statements (run there on `cl_`-prefixed tables). For instance, on `t(id int
//! PRIMARY KEY, a int, b text)` with 200 000 rows (`a` a shuffle, `b` an md5):
//!
//! ```text
//! DELETE FROM t WHERE id % 2 = 0;
//! VACUUM t;                -- pg_relation_size 15319040 before and after
//! VACUUM (FULL, VERBOSE) t;
//! INFO:  vacuuming "public.t"
//! INFO:  "public.t": found 100000 removable, 100000 nonremovable row versions in 1870 pages
//! DETAIL:  0 dead row versions cannot be removed yet.
//! CPU: user: 0.02 s, system: 0.00 s, elapsed: 0.03 s.
//!                          -- pg_relation_size 7659520, relpages 935, reltuples 100000
//! CLUSTER VERBOSE t USING t_a_idx;
//! INFO:  clustering "public.t" using index scan on "t_a_idx"
//! INFO:  "public.t": found 0 removable, 200000 nonremovable row versions in 1870 pages
//! DETAIL:  0 dead row versions cannot be removed yet.
//! CPU: …
//! SET effective_cache_size = '8kB'; CLUSTER VERBOSE t;
//! INFO:  clustering "public.t" using sequential scan and sort
//! …
//! ```
//!
//! PostgreSQL chooses between an index scan and a sequential scan and sort by cost
//! (`plan_cluster_use_sort`): with the default `effective_cache_size` (4GB) the index scan
//! wins on these tables even when `a` is in random order; with `8kB` the sort does.
//! The number of removable rows an *index-scan* CLUSTER reports depends on how many dead
//! rows its heap fetches pruned first (PostgreSQL 18 once said 31 where 50 000 were dead),
//! so those counts are asserted only where nothing can be pruned (no dead rows, or an
//! older snapshot still seeing them) or for the sequential scans of VACUUM FULL.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use iolab_tests::tokio_postgres::{self, AsyncMessage, Client, NoTls};
use iolab_tests::waiting::{self, exec, oid, pid, Outcome};
use iolab_tests::{error, int, plan, rows, TestServer};
use tokio::task::JoinHandle;

/// How long a statement that should have stopped waiting is given before the test calls
/// it stuck: a guard against hanging, not a timing.
const STUCK: Duration = Duration::from_secs(60);

/// How long a statement that should not wait for any lock is given: a guard, not a timing.
const NO_WAIT: Duration = Duration::from_secs(30);

/// How long a statement that may wait is given to start before the test looks.
const START: Duration = Duration::from_millis(500);

/// `sql` (simple protocol), which must not wait for any lock.
async fn at_once(client: &Client, sql: &str) {
    waiting::at_once(client, sql, NO_WAIT).await
}

/// The first column of each row of `sql` (NULL as "NULL").
async fn column(client: &Client, sql: &str) -> Vec<String> {
    rows(client, sql)
        .await
        .into_iter()
        .map(|r| r[0].clone().unwrap_or_else(|| "NULL".into()))
        .collect()
}

/// Each row of `sql`, its values as text (NULL as "NULL").
async fn table(client: &Client, sql: &str) -> Vec<Vec<String>> {
    rows(client, sql)
        .await
        .into_iter()
        .map(|r| {
            r.into_iter()
                .map(|v| v.unwrap_or_else(|| "NULL".into()))
                .collect()
        })
        .collect()
}

/// The one number `sql` returns.
async fn float(client: &Client, sql: &str) -> f64 {
    let r = column(client, sql).await;
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0].parse()
        .unwrap_or_else(|e| panic!("{sql}: {}: {e}", r[0]))
}

fn failed(code: &str, message: &str) -> (String, String) {
    (code.to_string(), message.to_string())
}

/// `sql` run by `client` on another task, which may wait.
async fn started(client: Client, sql: &str) -> JoinHandle<(Client, Outcome)> {
    waiting::started(client, sql, START).await
}

/// The end of a [`started`] statement.
async fn finished(task: JoinHandle<(Client, Outcome)>) -> (Client, Outcome) {
    waiting::finished(task, STUCK).await
}

/// `pid, mode, granted` of each relation lock on `oid`, the waiting ones first.
async fn locks_on(watcher: &Client, oid: i64) -> Vec<Vec<String>> {
    table(
        watcher,
        &format!(
            "SELECT pid, mode, granted::text FROM pg_locks
              WHERE locktype = 'relation' AND relation = {oid}
              ORDER BY 3, 2, 1"
        ),
    )
    .await
}

fn lock_row(pid: i64, mode: &str, granted: bool) -> Vec<String> {
    vec![pid.to_string(), mode.into(), granted.to_string()]
}

/// The modes the session holds on relation `oid`.
async fn own_modes(client: &Client, oid: i64) -> Vec<String> {
    column(
        client,
        &format!(
            "SELECT mode FROM pg_locks
              WHERE pid = pg_backend_pid() AND locktype = 'relation' AND relation = {oid}
              ORDER BY mode"
        ),
    )
    .await
}

/// `pg_relation_filenode(rel)`.
async fn filenode(client: &Client, rel: &str) -> i64 {
    int(client, &format!("SELECT pg_relation_filenode('{rel}')")).await
}

/// The filenodes of `t`, `t_pkey` and `t_a_idx`.
async fn filenodes(client: &Client) -> [i64; 3] {
    [
        filenode(client, "t").await,
        filenode(client, "t_pkey").await,
        filenode(client, "t_a_idx").await,
    ]
}

/// `pg_relation_size(rel)` in bytes.
async fn size(client: &Client, rel: &str) -> i64 {
    int(client, &format!("SELECT pg_relation_size('{rel}')")).await
}

/// `relpages, reltuples` of `rel` in `pg_class`.
async fn relstats(client: &Client, rel: &str) -> (i64, f64) {
    let r = table(
        client,
        &format!("SELECT relpages, reltuples FROM pg_class WHERE relname = '{rel}'"),
    )
    .await;
    assert_eq!(r.len(), 1, "{rel}: {r:?}");
    (r[0][0].parse().unwrap(), r[0][1].parse().unwrap())
}

/// `pg_index.indisclustered` of each index of `t`, by index name.
async fn clustered_flags(client: &Client) -> Vec<Vec<String>> {
    table(
        client,
        "SELECT c.relname, i.indisclustered::text FROM pg_index i
           JOIN pg_class c ON c.oid = i.indexrelid
          WHERE i.indrelid = 't'::regclass ORDER BY 1",
    )
    .await
}

/// `pg_stats.correlation` of column `att` of `t` (after ANALYZE).
async fn correlation(client: &Client, att: &str) -> f64 {
    float(
        client,
        &format!(
            "SELECT correlation FROM pg_stats
              WHERE schemaname = 'public' AND tablename = 't' AND attname = '{att}'"
        ),
    )
    .await
}

/// `b` is about half of `a` (within 1 % of `a`, and a page).
fn about_half(a: i64, b: i64) -> bool {
    (2 * b - a).abs() <= a / 100 + 2 * 8192
}

/// Within 1 % (and a page) of each other.
fn about_equal(a: i64, b: i64) -> bool {
    (a - b).abs() <= a / 100 + 8192
}

/// The rows of `sql` by a sequential scan (index, bitmap and index-only scans off, no
/// parallel workers), which the plan must show.
async fn by_seq_scan(client: &Client, sql: &str) -> Vec<Vec<String>> {
    exec(
        client,
        "SET max_parallel_workers_per_gather = 0; SET enable_seqscan = on;
         SET enable_indexscan = off; SET enable_bitmapscan = off; SET enable_indexonlyscan = off",
    )
    .await;
    let lines = plan(client, &format!("EXPLAIN {sql}")).await;
    assert!(
        lines.iter().any(|l| l.contains("Seq Scan on t")),
        "{sql}: {lines:?}"
    );
    let got = table(client, sql).await;
    exec(
        client,
        "RESET enable_seqscan; RESET enable_indexscan; RESET enable_bitmapscan;
         RESET enable_indexonlyscan",
    )
    .await;
    got
}

/// The rows of `sql` with sequential scans off: the plan must read `index` (an Index,
/// Index Only or Bitmap Index Scan on it).
async fn by_index(client: &Client, sql: &str, index: &str) -> Vec<Vec<String>> {
    exec(
        client,
        "SET max_parallel_workers_per_gather = 0; SET enable_seqscan = off",
    )
    .await;
    let lines = plan(client, &format!("EXPLAIN {sql}")).await;
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Scan using") || l.contains("Bitmap Index Scan on"))
            && lines.iter().any(|l| l.contains(index)),
        "{sql} should read {index}: {lines:?}"
    );
    let got = table(client, sql).await;
    exec(client, "RESET enable_seqscan").await;
    got
}

/// Each query gives the same rows through `index` as by a sequential scan, and `expected`
/// (if given) is their number.
async fn indexes_agree(client: &Client, queries: &[(&str, &str, Option<usize>)]) {
    for &(sql, index, expected) in queries {
        let seq = by_seq_scan(client, sql).await;
        let through_index = by_index(client, sql, index).await;
        assert_eq!(through_index, seq, "{sql}: through {index} vs Seq Scan");
        if let Some(n) = expected {
            assert_eq!(seq.len(), n, "{sql}: {seq:?}");
        }
    }
}

/// Questions for `t`'s two indexes, each answered with an ORDER BY so the order of the
/// rows does not depend on the plan.
const T_QUERIES: &[(&str, &str, Option<usize>)] = &[
    (
        "SELECT id, a, b FROM t WHERE id BETWEEN 1000 AND 1100 ORDER BY id",
        "t_pkey",
        None,
    ),
    (
        "SELECT id, a FROM t WHERE a BETWEEN 50000 AND 51000 ORDER BY id",
        "t_a_idx",
        None,
    ),
    (
        "SELECT count(*), sum(id) FROM t WHERE a < 100000",
        "t_a_idx",
        Some(1),
    ),
    ("SELECT id, b FROM t WHERE id = 4321", "t_pkey", None),
    ("SELECT id FROM t WHERE a = 23757", "t_a_idx", None),
];

/// `t(id int PRIMARY KEY, a int, b text)` with `n` rows: `a` the distinct values
/// `i * 7919 % 200003` (a shuffle of 1..200002) and NULL every 1000th row, `b` an md5;
/// `t_a_idx` on a. Loaded in id order, so `a` is in random physical order.
async fn create_t(client: &Client, n: i64) {
    exec(
        client,
        &format!(
            "CREATE TABLE t (id int PRIMARY KEY, a int, b text);
             INSERT INTO t SELECT i, CASE WHEN i % 1000 = 0 THEN NULL ELSE (i * 7919) % 200003 END,
                                  md5(i::text)
               FROM generate_series(1, {n}) AS s(i);
             CREATE INDEX t_a_idx ON t (a)"
        ),
    )
    .await;
}

/// `a` of each row in a sequential scan's order.
async fn seq_a(client: &Client, filter: &str) -> Vec<Option<i64>> {
    by_seq_scan(client, &format!("SELECT a FROM t{filter}"))
        .await
        .into_iter()
        .map(|r| (r[0] != "NULL").then(|| r[0].parse().unwrap()))
        .collect()
}

/// `values` sorted as a btree orders them (NULLs last).
fn btree_sorted(values: &[Option<i64>]) -> Vec<Option<i64>> {
    let mut sorted = values.to_vec();
    sorted.sort_by_key(|v| (v.is_none(), *v));
    sorted
}

/// The lines of psql's `\d t` after `Indexes:`, up to the next section.
fn psql_indexes(server: &TestServer) -> Vec<String> {
    let out = server.psql_ok(&["-c", "\\d t"]);
    out.lines()
        .skip_while(|l| *l != "Indexes:")
        .skip(1)
        .take_while(|l| l.starts_with("    "))
        .map(str::to_string)
        .collect()
}

/// A notice or INFO message as the client got it.
#[derive(Clone, Debug, PartialEq)]
struct Notice {
    severity: String,
    code: String,
    message: String,
    detail: Option<String>,
}

type Notices = Arc<Mutex<Vec<Notice>>>;

/// A client whose notices (INFO messages included) are collected.
async fn noticing_client(server: &TestServer) -> (Client, Notices) {
    let (client, mut connection) = tokio_postgres::connect(&server.conn_str(), NoTls)
        .await
        .expect("connect");
    let notices: Notices = Arc::default();
    let seen = notices.clone();
    tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
        while let Some(Ok(m)) = messages.next().await {
            if let AsyncMessage::Notice(n) = m {
                seen.lock().unwrap().push(Notice {
                    severity: n.severity().to_string(),
                    code: n.code().code().to_string(),
                    message: n.message().to_string(),
                    detail: n.detail().map(str::to_string),
                });
            }
        }
    });
    (client, notices)
}

/// The notices collected since the last call.
fn take(notices: &Notices) -> Vec<Notice> {
    std::mem::take(&mut *notices.lock().unwrap())
}

/// An INFO message (SQLSTATE 00000) without a detail.
fn info(message: &str) -> Notice {
    Notice {
        severity: "INFO".into(),
        code: "00000".into(),
        message: message.into(),
        detail: None,
    }
}

/// Checks the two messages of a table's rewrite after its first line: `"public.t": found
/// R removable, N nonremovable row versions in P pages` with the DETAIL `D dead row
/// versions cannot be removed yet.` and a CPU line `CPU: user: 0.01 s, system: 0.00 s,
/// elapsed: 0.02 s.` (its figures not checked, only their form).
fn assert_rewrite_summary(
    got: &Notice,
    removable: i64,
    nonremovable: i64,
    pages: i64,
    not_yet: i64,
) {
    assert_eq!(
        (got.severity.as_str(), got.code.as_str(), got.message.as_str()),
        (
            "INFO",
            "00000",
            format!(
                "\"public.t\": found {removable} removable, {nonremovable} nonremovable row versions in {pages} pages"
            )
            .as_str()
        ),
        "{got:?}"
    );
    let detail = got
        .detail
        .as_deref()
        .unwrap_or_else(|| panic!("no DETAIL: {got:?}"));
    let lines: Vec<&str> = detail.lines().collect();
    assert_eq!(lines.len(), 2, "{detail:?}");
    assert_eq!(
        lines[0],
        format!("{not_yet} dead row versions cannot be removed yet.")
    );
    let cpu = lines[1]
        .strip_prefix("CPU: user: ")
        .and_then(|r| r.strip_suffix(" s."))
        .unwrap_or_else(|| panic!("{detail:?}"));
    let figures: Vec<&str> = cpu
        .split(" s, system: ")
        .flat_map(|s| s.split(" s, elapsed: "))
        .collect();
    assert_eq!(figures.len(), 3, "{detail:?}");
    for f in figures {
        let (whole, hundredths) = f.split_once('.').unwrap_or_else(|| panic!("{detail:?}"));
        assert!(
            whole.parse::<u64>().is_ok()
                && hundredths.len() == 2
                && hundredths.parse::<u64>().is_ok(),
            "{detail:?}"
        );
    }
}

/// The first message of a CLUSTER VERBOSE: either of PostgreSQL's two ways.
fn assert_clustering_line(got: &Notice, index: &str) {
    let by_index = format!("clustering \"public.t\" using index scan on \"{index}\"");
    let by_sort = "clustering \"public.t\" using sequential scan and sort".to_string();
    assert!(
        got.severity == "INFO"
            && got.code == "00000"
            && got.detail.is_none()
            && (got.message == by_index || got.message == by_sort),
        "{got:?}"
    );
}

/// VACUUM FULL after deleting half the rows: the table's file is about half as big (a
/// plain VACUUM before it left the size as it was), in a new relfilenode, with
/// `relpages` / `reltuples` updated; every remaining row is kept, in the old physical
/// order (the first survivors at `(0,1)`, `(0,2)`…); the indexes are rebuilt too (new
/// files about half as big, their `pg_class` figures updated) and answer as a Seq Scan
/// does. PostgreSQL 18: 15319040 → 7659520 bytes, relpages 935, reltuples 100000,
/// indexes 4513792 → 2260992 bytes, relpages 276.
#[tokio::test(flavor = "multi_thread")]
async fn vacuum_full_shrinks_the_table_and_keeps_its_rows_in_order() {
    let server = TestServer::start("rewrite-vacuum-full");
    let c = server.client().await;
    create_t(&c, 200_000).await;
    let full = size(&c, "t").await;
    let index_sizes = [size(&c, "t_pkey").await, size(&c, "t_a_idx").await];
    exec(&c, "DELETE FROM t WHERE id % 2 = 0").await;

    let before = filenodes(&c).await;
    exec(&c, "VACUUM t").await;
    assert_eq!(
        size(&c, "t").await,
        full,
        "a plain VACUUM keeps the file's size"
    );
    assert_eq!(
        filenodes(&c).await,
        before,
        "a plain VACUUM writes in place"
    );

    exec(&c, "VACUUM FULL t").await;
    let after = filenodes(&c).await;
    for (i, rel) in ["t", "t_pkey", "t_a_idx"].iter().enumerate() {
        assert_ne!(after[i], before[i], "{rel} gets a new relfilenode");
        assert_eq!(
            int(
                &c,
                &format!("SELECT relfilenode FROM pg_class WHERE relname = '{rel}'")
            )
            .await,
            after[i],
            "pg_class.relfilenode of {rel}"
        );
    }
    let half = size(&c, "t").await;
    assert!(about_half(full, half), "{full} bytes → {half}");
    assert_eq!(relstats(&c, "t").await, (half / 8192, 100_000.0));
    for (i, index) in ["t_pkey", "t_a_idx"].iter().enumerate() {
        let rebuilt = size(&c, index).await;
        assert!(
            rebuilt * 10 < index_sizes[i] * 6,
            "{index} rebuilt: {} bytes → {rebuilt}",
            index_sizes[i]
        );
        assert_eq!(
            relstats(&c, index).await,
            (rebuilt / 8192, 100_000.0),
            "{index}"
        );
    }

    assert_eq!(
        table(
            &c,
            "SELECT count(*), sum(id), count(*) FILTER (WHERE id % 2 = 0), count(a) FROM t"
        )
        .await,
        [["100000", "10000000000", "0", "100000"]]
    );
    assert_eq!(
        int(&c, "SELECT count(*) FROM t WHERE b = md5(id::text)").await,
        100_000
    );
    // The old physical order: by id, packed from the first page on.
    let ids: Vec<i64> = by_seq_scan(&c, "SELECT id FROM t")
        .await
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    assert_eq!(ids, (1..200_000).step_by(2).collect::<Vec<i64>>());
    assert_eq!(
        table(
            &c,
            "SELECT ctid, id FROM t WHERE id IN (1, 3, 5) ORDER BY id"
        )
        .await,
        [["(0,1)", "1"], ["(0,2)", "3"], ["(0,3)", "5"]]
    );

    indexes_agree(&c, T_QUERIES).await;
    indexes_agree(
        &c,
        &[
            (
                "SELECT id FROM t WHERE id IN (2, 3, 199998, 199999) ORDER BY id",
                "t_pkey",
                Some(2),
            ),
            ("SELECT count(*) FROM t WHERE id <= 1000", "t_pkey", Some(1)),
        ],
    )
    .await;
    exec(&c, "SET enable_seqscan = off").await;
    assert_eq!(
        int(&c, "SELECT count(*) FROM t WHERE id <= 1000").await,
        500
    );
    assert_eq!(
        int(&c, "SELECT count(*) FROM t WHERE a IS NOT NULL").await,
        100_000
    );
    exec(&c, "RESET enable_seqscan").await;

    // The table takes writes afterwards, and its indexes see them.
    exec(
        &c,
        "INSERT INTO t VALUES (200002, -5, 'new'); UPDATE t SET a = -7 WHERE id = 3; DELETE FROM t WHERE id = 5",
    )
    .await;
    indexes_agree(
        &c,
        &[
            (
                "SELECT id, a, b FROM t WHERE a < 0 ORDER BY id",
                "t_a_idx",
                Some(2),
            ),
            (
                "SELECT id FROM t WHERE id BETWEEN 1 AND 9 ORDER BY id",
                "t_pkey",
                Some(4),
            ),
        ],
    )
    .await;
}

/// VACUUM FULL keeps the newest version of each updated row (updates of a column no index
/// has, and of an indexed column) and nothing older: the file is back to its size before
/// the updates, and the indexes find the new values, not the old. A table all of whose
/// rows were deleted ends with no pages (PostgreSQL 18: size 0, relpages 0, reltuples 0)
/// and takes rows again from `(0,1)`.
#[tokio::test(flavor = "multi_thread")]
async fn vacuum_full_keeps_the_newest_version_of_updated_rows() {
    let server = TestServer::start("rewrite-vacuum-full-updates");
    let c = server.client().await;
    create_t(&c, 100_000).await;
    let loaded = size(&c, "t").await;
    exec(
        &c,
        "UPDATE t SET b = upper(b) WHERE id % 4 = 1;
         UPDATE t SET a = -a WHERE id % 10 = 3",
    )
    .await;
    assert!(
        size(&c, "t").await > loaded,
        "the updates' new versions take room"
    );
    exec(&c, "VACUUM FULL t").await;
    let rewritten = size(&c, "t").await;
    assert!(
        about_equal(loaded, rewritten),
        "{loaded} bytes → {rewritten}"
    );
    assert_eq!(relstats(&c, "t").await, (rewritten / 8192, 100_000.0));
    assert_eq!(
        table(
            &c,
            "SELECT count(*),
                    count(*) FILTER (WHERE id % 4 = 1 AND b = upper(md5(id::text))),
                    count(*) FILTER (WHERE id % 4 <> 1 AND b = md5(id::text)),
                    count(*) FILTER (WHERE a < 0)
               FROM t"
        )
        .await,
        [["100000", "25000", "75000", "10000"]]
    );
    indexes_agree(
        &c,
        &[
            (
                "SELECT count(*), sum(id) FROM t WHERE a < 0",
                "t_a_idx",
                Some(1),
            ),
            // Row 3's old a (23757) is gone from the index, its new one there.
            ("SELECT id FROM t WHERE a = 23757", "t_a_idx", Some(0)),
            ("SELECT id FROM t WHERE a = -23757", "t_a_idx", Some(1)),
            (
                "SELECT id, b FROM t WHERE id BETWEEN 1 AND 20 ORDER BY id",
                "t_pkey",
                Some(20),
            ),
        ],
    )
    .await;
    indexes_agree(&c, T_QUERIES).await;

    exec(
        &c,
        "CREATE TABLE e (x int);
         INSERT INTO e SELECT generate_series(1, 1000);
         DELETE FROM e",
    )
    .await;
    exec(&c, "VACUUM FULL e").await;
    assert_eq!(size(&c, "e").await, 0);
    assert_eq!(relstats(&c, "e").await, (0, 0.0));
    exec(&c, "INSERT INTO e VALUES (1)").await;
    assert_eq!(table(&c, "SELECT ctid, x FROM e").await, [["(0,1)", "1"]]);
}

/// `VACUUM (FULL, VERBOSE) t` and `VACUUM FULL VERBOSE t` print PostgreSQL's two INFO
/// messages (`vacuuming "public.t"`, then what was found, counting the old file's pages,
/// with the DETAIL and CPU line); without VERBOSE nothing. `VACUUM FULL` of every table
/// rewrites `t` too. VACUUM FULL in a transaction block, explicit or implicit (several
/// statements in one Query), is PostgreSQL's 25001, and a missing table its 42P01.
#[tokio::test(flavor = "multi_thread")]
async fn vacuum_full_verbose_messages_and_errors() {
    let server = TestServer::start("rewrite-vacuum-full-verbose");
    let (c, notices) = noticing_client(&server).await;
    create_t(&c, 200_000).await;
    exec(&c, "DELETE FROM t WHERE id % 2 = 0").await;
    let pages = size(&c, "t").await / 8192;
    take(&notices);

    exec(&c, "VACUUM (FULL, VERBOSE) t").await;
    let got = take(&notices);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], info("vacuuming \"public.t\""));
    assert_rewrite_summary(&got[1], 100_000, 100_000, pages, 0);

    let half = size(&c, "t").await / 8192;
    assert!(
        about_half(pages * 8192, half * 8192),
        "{pages} pages → {half}"
    );
    exec(&c, "VACUUM FULL VERBOSE t").await;
    let got = take(&notices);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], info("vacuuming \"public.t\""));
    assert_rewrite_summary(&got[1], 0, 100_000, half, 0);

    exec(&c, "DELETE FROM t WHERE id % 4 = 1").await;
    let node = filenode(&c, "t").await;
    exec(&c, "VACUUM FULL t").await;
    assert_eq!(take(&notices), [], "no messages without VERBOSE");
    assert_ne!(filenode(&c, "t").await, node);
    assert!(about_half(half * 8192, size(&c, "t").await));

    exec(&c, "DELETE FROM t WHERE id % 8 = 3").await;
    let (node, quarter) = (filenode(&c, "t").await, size(&c, "t").await);
    exec(&c, "VACUUM FULL").await;
    assert_eq!(take(&notices), []);
    assert_ne!(
        filenode(&c, "t").await,
        node,
        "VACUUM FULL of every table rewrites t"
    );
    assert!(about_half(quarter, size(&c, "t").await));
    assert_eq!(int(&c, "SELECT count(*) FROM t").await, 25_000);
    indexes_agree(&c, T_QUERIES).await;

    assert_eq!(
        error(&c, "VACUUM FULL nope").await,
        failed("42P01", "relation \"nope\" does not exist")
    );
    assert_eq!(
        error(&c, "VACUUM FULL t, nope").await,
        failed("42P01", "relation \"nope\" does not exist")
    );
    let in_block = failed("25001", "VACUUM cannot run inside a transaction block");
    exec(&c, "BEGIN").await;
    assert_eq!(error(&c, "VACUUM FULL t").await, in_block);
    exec(&c, "ROLLBACK").await;
    // PostgreSQL also refuses VACUUM in a Query of several statements (an implicit
    // block); iolab runs each statement of such a Query as its own transaction.
    assert_eq!(int(&c, "SELECT count(*) FROM t").await, 25_000);
}

/// `CLUSTER t USING t_a_idx` on a table loaded in random order of `a`: a sequential scan
/// then returns the rows in `a` order (NULLs last, as the btree has them), `pg_stats`
/// correlation of `a` goes from about 0 to 1 (PostgreSQL 18: -0.003 → 1) while id's goes to
/// about 0; the table and its indexes get new files; the index is marked clustered
/// (`indisclustered`, `\d t`'s `CLUSTER`), the others not; the indexes answer as before. A
/// later `CLUSTER t` uses the marked index again (rows added since go in order), and
/// `CLUSTER t USING t_pkey` moves the mark.
#[tokio::test(flavor = "multi_thread")]
async fn cluster_orders_the_table_by_the_index() {
    let server = TestServer::start("rewrite-cluster");
    let c = server.client().await;
    create_t(&c, 200_000).await;
    exec(&c, "ANALYZE t").await;
    let shuffled = correlation(&c, "a").await;
    assert!(shuffled.abs() < 0.1, "correlation of a before: {shuffled}");
    let loaded = seq_a(&c, "").await;
    assert_ne!(loaded, btree_sorted(&loaded));
    let answers = {
        let mut all = Vec::new();
        for &(sql, _, _) in T_QUERIES {
            all.push(by_seq_scan(&c, sql).await);
        }
        all
    };
    assert_eq!(
        clustered_flags(&c).await,
        [["t_a_idx", "false"], ["t_pkey", "false"]]
    );
    let before = filenodes(&c).await;
    let full = size(&c, "t").await;

    exec(&c, "CLUSTER t USING t_a_idx").await;
    let after = filenodes(&c).await;
    for i in 0..3 {
        assert_ne!(after[i], before[i], "new files: {before:?} → {after:?}");
    }
    let clustered = seq_a(&c, "").await;
    assert_eq!(clustered.len(), 200_000);
    assert_eq!(
        clustered,
        btree_sorted(&loaded),
        "a sequential scan reads a in order"
    );
    assert_eq!(clustered.iter().filter(|a| a.is_none()).count(), 200);
    assert_eq!(
        table(&c, "SELECT ctid, a FROM t WHERE a IN (1, 2, 3) ORDER BY a").await,
        [["(0,1)", "1"], ["(0,2)", "2"], ["(0,3)", "3"]]
    );
    assert!(about_equal(full, size(&c, "t").await));
    assert_eq!(relstats(&c, "t").await.1, 200_000.0);
    for (i, &(sql, index, _)) in T_QUERIES.iter().enumerate() {
        assert_eq!(by_seq_scan(&c, sql).await, answers[i], "{sql}");
        assert_eq!(by_index(&c, sql, index).await, answers[i], "{sql}");
    }
    exec(&c, "ANALYZE t").await;
    let ordered = correlation(&c, "a").await;
    assert!(ordered > 0.99, "correlation of a after CLUSTER: {ordered}");
    let ids = correlation(&c, "id").await;
    assert!(ids.abs() < 0.1, "correlation of id after CLUSTER: {ids}");

    assert_eq!(
        clustered_flags(&c).await,
        [["t_a_idx", "true"], ["t_pkey", "false"]]
    );
    assert_eq!(
        psql_indexes(&server),
        [
            "    \"t_pkey\" PRIMARY KEY, btree (id)",
            "    \"t_a_idx\" btree (a) CLUSTER"
        ]
    );

    // Rows added since go to the end; CLUSTER t (no USING) puts them in order.
    exec(
        &c,
        "INSERT INTO t SELECT i, (i * 7919) % 200003 + 200003, md5(i::text)
           FROM generate_series(200001, 201000) AS s(i);
         INSERT INTO t VALUES (300000, 0, 'zero')",
    )
    .await;
    let appended = seq_a(&c, "").await;
    assert_ne!(appended, btree_sorted(&appended));
    let node = filenode(&c, "t").await;
    exec(&c, "CLUSTER t").await;
    assert_ne!(filenode(&c, "t").await, node);
    assert_eq!(seq_a(&c, "").await, btree_sorted(&appended));
    assert_eq!(
        clustered_flags(&c).await,
        [["t_a_idx", "true"], ["t_pkey", "false"]]
    );

    exec(&c, "CLUSTER t USING t_pkey").await;
    let ids: Vec<i64> = by_seq_scan(&c, "SELECT id FROM t")
        .await
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted, "a sequential scan reads id in order");
    assert_eq!(ids.len(), 201_001);
    assert_eq!(
        clustered_flags(&c).await,
        [["t_a_idx", "false"], ["t_pkey", "true"]]
    );
    assert_eq!(
        psql_indexes(&server),
        [
            "    \"t_pkey\" PRIMARY KEY, btree (id) CLUSTER",
            "    \"t_a_idx\" btree (a)"
        ]
    );
    indexes_agree(&c, T_QUERIES).await;
    indexes_agree(
        &c,
        &[
            (
                "SELECT id, a, b FROM t WHERE a >= 200003 ORDER BY id",
                "t_a_idx",
                Some(1000),
            ),
            ("SELECT id, b FROM t WHERE a = 0", "t_a_idx", Some(1)),
        ],
    )
    .await;
}

/// CLUSTER on a two-column index orders the rows by both columns, in the index's order.
#[tokio::test(flavor = "multi_thread")]
async fn cluster_on_a_two_column_index() {
    let server = TestServer::start("rewrite-cluster-two-columns");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE t (id int PRIMARY KEY, g int, a int);
         INSERT INTO t SELECT i, (i * 31) % 7, (i * 7919) % 20011 FROM generate_series(1, 20000) AS s(i);
         CREATE INDEX t_ga ON t (g, a)",
    )
    .await;
    let expected = table(&c, "SELECT id, g, a FROM t ORDER BY g, a").await;
    exec(&c, "CLUSTER t USING t_ga").await;
    assert_eq!(by_seq_scan(&c, "SELECT id, g, a FROM t").await, expected);
    indexes_agree(
        &c,
        &[
            (
                "SELECT id FROM t WHERE g = 3 AND a < 500 ORDER BY id",
                "t_ga",
                None,
            ),
            (
                "SELECT g, a FROM t WHERE id BETWEEN 100 AND 150 ORDER BY id",
                "t_pkey",
                Some(51),
            ),
        ],
    )
    .await;
}

/// CLUSTER VERBOSE prints PostgreSQL's two INFO messages: how it reads the table (by an
/// index scan or by a sequential scan and sort), then what it found in the old file's
/// pages, with the DETAIL and CPU line; without VERBOSE nothing.
#[tokio::test(flavor = "multi_thread")]
async fn cluster_verbose_messages() {
    let server = TestServer::start("rewrite-cluster-verbose");
    let (c, notices) = noticing_client(&server).await;
    create_t(&c, 200_000).await;
    let pages = size(&c, "t").await / 8192;
    take(&notices);
    exec(&c, "CLUSTER VERBOSE t USING t_a_idx").await;
    let got = take(&notices);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_clustering_line(&got[0], "t_a_idx");
    assert_rewrite_summary(&got[1], 0, 200_000, pages, 0);

    exec(&c, "CLUSTER t").await;
    assert_eq!(take(&notices), [], "no messages without VERBOSE");

    let pages = size(&c, "t").await / 8192;
    exec(&c, "CLUSTER VERBOSE t").await;
    let got = take(&notices);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_clustering_line(&got[0], "t_a_idx");
    assert_rewrite_summary(&got[1], 0, 200_000, pages, 0);
}

/// How PostgreSQL reads the table is its cost choice: on this 200 000-row table in random
/// order of `a` (analyzed), with the default `effective_cache_size` an index scan
/// ("using index scan on \"t_a_idx\""), with `effective_cache_size = '8kB'` a sequential
/// scan and sort. iolab always sorts (and says so); both settings give the same order,
/// and the message names one of PostgreSQL's two ways.
#[tokio::test(flavor = "multi_thread")]
async fn cluster_orders_the_same_whatever_effective_cache_size() {
    let server = TestServer::start("rewrite-cluster-choice");
    let (c, notices) = noticing_client(&server).await;
    create_t(&c, 200_000).await;
    exec(&c, "ANALYZE t").await;
    let loaded = seq_a(&c, "").await;
    take(&notices);

    exec(&c, "SET effective_cache_size = '8kB'").await;
    exec(&c, "CLUSTER VERBOSE t USING t_a_idx").await;
    let got = take(&notices);
    let one_of_the_ways = |message: Option<&str>| {
        matches!(
            message,
            Some("clustering \"public.t\" using sequential scan and sort")
                | Some("clustering \"public.t\" using index scan on \"t_a_idx\"")
        )
    };
    assert!(
        one_of_the_ways(got.first().map(|n| n.message.as_str())),
        "{got:?}"
    );
    assert_eq!(seq_a(&c, "").await, btree_sorted(&loaded));

    // Back to the load's order, to be clustered the other way.
    exec(&c, "CLUSTER t USING t_pkey").await;
    assert_eq!(seq_a(&c, "").await, loaded);
    exec(&c, "ANALYZE t; RESET effective_cache_size").await;
    take(&notices);
    exec(&c, "CLUSTER VERBOSE t USING t_a_idx").await;
    let got = take(&notices);
    assert!(
        one_of_the_ways(got.first().map(|n| n.message.as_str())),
        "{got:?}"
    );
    assert_eq!(seq_a(&c, "").await, btree_sorted(&loaded));
}

/// CLUSTER's errors, as PostgreSQL 18 reports them: no index marked clustered (42704), an
/// index that does not exist (42704), a table that does not exist (42P01), a relation
/// that is not an index (42809), an index of another table (42809). None of them changes
/// the table.
#[tokio::test(flavor = "multi_thread")]
async fn cluster_errors() {
    let server = TestServer::start("rewrite-cluster-errors");
    let c = server.client().await;
    create_t(&c, 1000).await;
    exec(&c, "CREATE TABLE u (x int); CREATE INDEX u_x ON u (x)").await;
    let before = filenodes(&c).await;
    assert_eq!(
        error(&c, "CLUSTER t").await,
        failed(
            "42704",
            "there is no previously clustered index for table \"t\""
        )
    );
    assert_eq!(
        error(&c, "CLUSTER VERBOSE t").await,
        failed(
            "42704",
            "there is no previously clustered index for table \"t\""
        )
    );
    assert_eq!(
        error(&c, "CLUSTER t USING nope").await,
        failed("42704", "index \"nope\" for table \"t\" does not exist")
    );
    assert_eq!(
        error(&c, "CLUSTER nope USING x").await,
        failed("42P01", "relation \"nope\" does not exist")
    );
    assert_eq!(
        error(&c, "CLUSTER nope").await,
        failed("42P01", "relation \"nope\" does not exist")
    );
    assert_eq!(
        error(&c, "CLUSTER t USING u_x").await,
        failed("42809", "\"u_x\" is not an index for table \"t\"")
    );
    assert_eq!(
        error(&c, "CLUSTER u").await,
        failed(
            "42704",
            "there is no previously clustered index for table \"u\""
        )
    );
    assert_eq!(filenodes(&c).await, before);
    assert_eq!(
        clustered_flags(&c).await,
        [["t_a_idx", "false"], ["t_pkey", "false"]]
    );
    // A failed CLUSTER in a block aborts it, as any error.
    exec(&c, "BEGIN").await;
    assert_eq!(error(&c, "CLUSTER t USING nope").await.0, "42704");
    assert_eq!(error(&c, "SELECT 1").await.0, "25P02");
    exec(&c, "ROLLBACK").await;
    assert_eq!(int(&c, "SELECT count(*) FROM t").await, 1000);
    assert_eq!(
        error(&c, "CLUSTER t USING t").await,
        failed("42809", "\"t\" is not an index")
    );
}

/// CLUSTER of one table runs in a transaction block, holding AccessExclusiveLock on the
/// table to the block's end (another session's SELECT waits); in the block the new order
/// shows. ROLLBACK restores the old file: the rows, their order, the relfilenodes,
/// `indisclustered`, the indexes' answers. ROLLBACK TO SAVEPOINT does the same; COMMIT
/// keeps it, and CLUSTER in an implicit block (several statements in one Query) commits
/// with it. (PostgreSQL 18; a CLUSTER of every table in a block, explicit or implicit, is
/// its 25001.)
#[tokio::test(flavor = "multi_thread")]
async fn cluster_in_a_transaction_block_and_rollback() {
    let server = TestServer::start("rewrite-cluster-rollback");
    let a = server.client().await;
    let b = server.client().await;
    create_t(&a, 100_000).await;
    let t = oid(&a, "t").await;
    let loaded = seq_a(&a, "").await;
    let original = filenodes(&a).await;
    let answers = {
        let mut all = Vec::new();
        for &(sql, _, _) in T_QUERIES {
            all.push(by_seq_scan(&a, sql).await);
        }
        all
    };
    exec(&a, "BEGIN").await;
    exec(&a, "CLUSTER t USING t_a_idx").await;
    assert!(
        own_modes(&a, t)
            .await
            .contains(&"AccessExclusiveLock".to_string()),
        "{:?}",
        own_modes(&a, t).await
    );
    assert_eq!(seq_a(&a, "").await, btree_sorted(&loaded));
    let inside = filenodes(&a).await;
    for i in 0..3 {
        assert_ne!(inside[i], original[i]);
    }
    assert_eq!(
        clustered_flags(&a).await,
        [["t_a_idx", "true"], ["t_pkey", "false"]]
    );
    for (i, &(sql, index, _)) in T_QUERIES.iter().enumerate() {
        assert_eq!(
            by_index(&a, sql, index).await,
            answers[i],
            "{sql} in the block"
        );
    }
    let read = started(b, "SELECT count(*) FROM t").await;
    assert!(!read.is_finished(), "a SELECT waits for CLUSTER's block");
    exec(&a, "ROLLBACK").await;
    let (b, got) = finished(read).await;
    assert_eq!(got, Ok(()));
    assert_original(&a, &loaded, original, &answers).await;
    assert_eq!(int(&b, "SELECT count(*) FROM t").await, 100_000);

    exec(&a, "BEGIN; SAVEPOINT s; CLUSTER t USING t_a_idx").await;
    assert_eq!(seq_a(&a, "").await, btree_sorted(&loaded));
    exec(&a, "ROLLBACK TO s").await;
    assert_eq!(seq_a(&a, "").await, loaded, "after ROLLBACK TO SAVEPOINT");
    assert_eq!(filenodes(&a).await, original);
    assert_eq!(
        clustered_flags(&a).await,
        [["t_a_idx", "false"], ["t_pkey", "false"]]
    );
    exec(&a, "COMMIT").await;
    assert_original(&a, &loaded, original, &answers).await;

    exec(&a, "BEGIN; CLUSTER t USING t_a_idx; COMMIT").await;
    assert_eq!(seq_a(&a, "").await, btree_sorted(&loaded));
    assert_eq!(
        clustered_flags(&a).await,
        [["t_a_idx", "true"], ["t_pkey", "false"]]
    );
    assert_eq!(int_at_once(&b, "SELECT count(*) FROM t").await, 100_000);

    exec(&a, "SELECT 1; CLUSTER t USING t_pkey").await;
    let ids: Vec<i64> = by_seq_scan(&a, "SELECT id FROM t")
        .await
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    assert_eq!(ids, (1..=100_000).collect::<Vec<i64>>());
    assert_eq!(
        clustered_flags(&a).await,
        [["t_a_idx", "false"], ["t_pkey", "true"]]
    );

    let in_block = failed("25001", "CLUSTER cannot run inside a transaction block");
    exec(&a, "BEGIN").await;
    assert_eq!(error(&a, "CLUSTER").await, in_block);
    exec(&a, "ROLLBACK").await;
}

/// `t` as loaded: rows in id order in its first files, no index marked clustered, the
/// indexes answering `answers` to [`T_QUERIES`].
async fn assert_original(
    a: &Client,
    loaded: &[Option<i64>],
    original: [i64; 3],
    answers: &[Vec<Vec<String>>],
) {
    assert_eq!(seq_a(a, "").await, loaded, "the load's order");
    assert_eq!(filenodes(a).await, original);
    assert_eq!(
        clustered_flags(a).await,
        [["t_a_idx", "false"], ["t_pkey", "false"]]
    );
    assert_eq!(
        table(a, "SELECT ctid, id FROM t WHERE id IN (1, 2) ORDER BY id").await,
        [["(0,1)", "1"], ["(0,2)", "2"]]
    );
    for (i, &(sql, index, _)) in T_QUERIES.iter().enumerate() {
        assert_eq!(by_seq_scan(a, sql).await, answers[i], "{sql}");
        assert_eq!(by_index(a, sql, index).await, answers[i], "{sql}");
    }
}

/// The integer `sql` returns, which must not wait for any lock.
async fn int_at_once(client: &Client, sql: &str) -> i64 {
    tokio::time::timeout(NO_WAIT, int(client, sql))
        .await
        .unwrap_or_else(|_| panic!("{sql} waited"))
}

/// `CLUSTER` with no table re-clusters every table that has an index marked clustered,
/// each on that index, and leaves the others (PostgreSQL 18; its VERBOSE prints the same
/// two messages per table).
#[tokio::test(flavor = "multi_thread")]
async fn cluster_without_a_table_reclusters_the_marked_ones() {
    let server = TestServer::start("rewrite-cluster-all");
    let c = server.client().await;
    create_t(&c, 20_000).await;
    exec(
        &c,
        "CREATE TABLE u (id int PRIMARY KEY, a int);
         INSERT INTO u SELECT i, (i * 7919) % 2003 FROM generate_series(1, 2000) AS s(i);
         CREATE INDEX u_a ON u (a);
         CLUSTER t USING t_a_idx;
         UPDATE t SET a = -a WHERE id % 5 = 0",
    )
    .await;
    let shuffled = seq_a(&c, "").await;
    assert_ne!(shuffled, btree_sorted(&shuffled));
    let (t_node, u_node) = (filenode(&c, "t").await, filenode(&c, "u").await);
    exec(&c, "CLUSTER").await;
    assert_ne!(filenode(&c, "t").await, t_node);
    assert_eq!(filenode(&c, "u").await, u_node, "u has no clustered index");
    assert_eq!(seq_a(&c, "").await, btree_sorted(&shuffled));
    indexes_agree(&c, T_QUERIES).await;
}

/// A rewrite keeps the rows an older snapshot still sees: a REPEATABLE READ transaction
/// that took its snapshot before the DELETE (and had not touched the table, so it holds
/// no lock on it: VACUUM FULL and CLUSTER do not wait) still counts every row afterwards,
/// by a sequential scan and through an index. The file keeps its size, and VERBOSE says
/// `found 0 removable, 200000 nonremovable … / 100000 dead row versions cannot be removed
/// yet.`. Once that transaction ends, VACUUM FULL removes them (`found 100000 removable`).
#[tokio::test(flavor = "multi_thread")]
async fn an_older_snapshot_keeps_its_rows_through_a_rewrite() {
    let server = TestServer::start("rewrite-older-snapshot");
    let (a, notices) = noticing_client(&server).await;
    let b = server.client().await;
    create_t(&a, 200_000).await;
    let full = size(&a, "t").await;
    let pages = full / 8192;

    exec(&b, "BEGIN ISOLATION LEVEL REPEATABLE READ").await;
    assert_eq!(int(&b, "SELECT 1").await, 1);
    exec(&a, "DELETE FROM t WHERE id % 2 = 0").await;
    take(&notices);
    let node = filenode(&a, "t").await;
    at_once(&a, "VACUUM (FULL, VERBOSE) t").await;
    let got = take(&notices);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], info("vacuuming \"public.t\""));
    assert_rewrite_summary(&got[1], 0, 200_000, pages, 100_000);
    assert_ne!(filenode(&a, "t").await, node);
    assert!(about_equal(full, size(&a, "t").await));
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, 100_000);

    let pages = size(&a, "t").await / 8192;
    at_once(&a, "CLUSTER VERBOSE t USING t_a_idx").await;
    let got = take(&notices);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_clustering_line(&got[0], "t_a_idx");
    assert_rewrite_summary(&got[1], 0, 200_000, pages, 100_000);
    assert_eq!(
        table(&a, "SELECT count(*), sum(id) FROM t").await,
        [["100000", "10000000000"]]
    );

    assert_eq!(
        table(&b, "SELECT count(*), sum(id) FROM t").await,
        [["200000", "20000100000"]],
        "the older snapshot's rows, by a sequential scan"
    );
    exec(&b, "SET enable_seqscan = off").await;
    let lines = plan(&b, "EXPLAIN SELECT count(*) FROM t WHERE id > 0").await;
    assert!(lines.iter().any(|l| l.contains("t_pkey")), "{lines:?}");
    assert_eq!(
        int(&b, "SELECT count(*) FROM t WHERE id > 0").await,
        200_000
    );
    assert_eq!(int(&b, "SELECT count(*) FROM t WHERE a > 0").await, 199_800);
    assert_eq!(
        column(&b, "SELECT b FROM t WHERE id = 2").await,
        [format!("{:x}", md5::compute("2"))]
    );
    exec(&b, "COMMIT").await;

    let pages = size(&a, "t").await / 8192;
    exec(&a, "VACUUM (FULL, VERBOSE) t").await;
    let got = take(&notices);
    assert_eq!(got.len(), 2, "{got:?}");
    assert_rewrite_summary(&got[1], 100_000, 100_000, pages, 0);
    assert!(about_half(full, size(&a, "t").await));
    assert_eq!(int(&b, "SELECT count(*) FROM t").await, 100_000);
    indexes_agree(&a, T_QUERIES).await;
}

/// VACUUM FULL and CLUSTER take AccessExclusiveLock: each waits for a reader's open
/// transaction (its AccessShareLock), showing in `pg_locks` as an AccessExclusiveLock
/// not granted, and the reader reads on meanwhile; once it commits the rewrite runs.
#[tokio::test(flavor = "multi_thread")]
async fn a_readers_transaction_holds_off_a_rewrite() {
    let server = TestServer::start("rewrite-locks");
    let a = server.client().await;
    let mut b = server.client().await;
    let watcher = server.client().await;
    create_t(&a, 20_000).await;
    let t = oid(&a, "t").await;
    let (a_pid, b_pid) = (pid(&a).await, pid(&b).await);
    exec(&a, "DELETE FROM t WHERE id % 2 = 0").await;

    for rewrite in ["VACUUM FULL t", "CLUSTER t USING t_a_idx"] {
        exec(&a, "BEGIN").await;
        assert_eq!(int(&a, "SELECT count(*) FROM t").await, 10_000);
        let node = filenode(&b, "t").await;
        let task = started(b, rewrite).await;
        assert!(!task.is_finished(), "{rewrite} waits for the reader");
        assert_eq!(
            locks_on(&watcher, t).await,
            [
                lock_row(b_pid, "AccessExclusiveLock", false),
                lock_row(a_pid, "AccessShareLock", true)
            ],
            "{rewrite}"
        );
        assert_eq!(int_at_once(&a, "SELECT count(*) FROM t").await, 10_000);
        exec(&a, "COMMIT").await;
        let (client, got) = finished(task).await;
        b = client;
        assert_eq!(got, Ok(()), "{rewrite}");
        assert_ne!(filenode(&b, "t").await, node, "{rewrite}");
        assert_eq!(locks_on(&watcher, t).await, Vec::<Vec<String>>::new());
    }
    assert_eq!(int(&a, "SELECT count(*) FROM t").await, 10_000);
}

/// A committed CLUSTER and VACUUM FULL survive a crash: after kill -9 and restart, the
/// rows, their order, the relfilenodes, `indisclustered` and the indexes' answers are as
/// they were, including rows written after the rewrite.
#[tokio::test(flavor = "multi_thread")]
async fn a_crash_keeps_a_committed_rewrite() {
    let mut server = TestServer::start("rewrite-crash-committed");
    let expected;
    let nodes;
    let u_rows;
    {
        let c = server.client().await;
        create_t(&c, 100_000).await;
        for sql in [
            "CREATE TABLE u (id int PRIMARY KEY, v int);
             INSERT INTO u SELECT i, i % 97 FROM generate_series(1, 50000) AS s(i)",
            "CHECKPOINT",
            "CLUSTER t USING t_a_idx",
            "INSERT INTO t VALUES (100001, -1, 'after'), (100002, 250000, 'after');
             UPDATE t SET b = 'changed' WHERE id = 7;
             DELETE FROM u WHERE id % 2 = 0",
            "VACUUM FULL u",
            "INSERT INTO u VALUES (60000, 1)",
        ] {
            exec(&c, sql).await;
        }
        expected = seq_a(&c, "").await;
        nodes = (
            filenodes(&c).await,
            filenode(&c, "u").await,
            filenode(&c, "u_pkey").await,
        );
        u_rows = table(&c, "SELECT count(*), sum(id), sum(v) FROM u").await;
        server.kill();
    }
    server.restart();
    let c = server.client().await;
    assert_eq!(seq_a(&c, "").await, expected, "t's rows in their order");
    // Rows 1..100000 but the updated one are still in a order.
    let clustered = seq_a(&c, " WHERE id <= 100000 AND id <> 7").await;
    assert_eq!(clustered.len(), 99_999);
    assert_eq!(clustered, btree_sorted(&clustered), "still clustered");
    assert_eq!(
        (
            filenodes(&c).await,
            filenode(&c, "u").await,
            filenode(&c, "u_pkey").await
        ),
        nodes
    );
    assert_eq!(
        clustered_flags(&c).await,
        [["t_a_idx", "true"], ["t_pkey", "false"]]
    );
    assert_eq!(
        table(
            &c,
            "SELECT count(*), count(*) FILTER (WHERE b = 'changed') FROM t"
        )
        .await,
        [["100002", "1"]]
    );
    indexes_agree(&c, T_QUERIES).await;
    indexes_agree(
        &c,
        &[
            ("SELECT id, b FROM t WHERE a < 0", "t_a_idx", Some(1)),
            ("SELECT id, b FROM t WHERE a > 200002", "t_a_idx", Some(1)),
            (
                "SELECT id, b FROM t WHERE id IN (7, 100001, 100002) ORDER BY id",
                "t_pkey",
                Some(3),
            ),
        ],
    )
    .await;
    assert_eq!(
        table(&c, "SELECT count(*), sum(id), sum(v) FROM u").await,
        u_rows
    );
    exec(&c, "SET enable_seqscan = off").await;
    assert_eq!(
        table(&c, "SELECT count(*), sum(id), sum(v) FROM u WHERE id > 0").await,
        u_rows
    );
    assert_eq!(int(&c, "SELECT count(*) FROM u WHERE id = 2").await, 0);
    exec(&c, "RESET enable_seqscan").await;
    // And the tables can be rewritten again.
    exec(&c, "CLUSTER t").await;
    exec(&c, "VACUUM FULL u").await;
    assert_eq!(int(&c, "SELECT count(*) FROM t").await, 100_002);
    assert_eq!(
        table(&c, "SELECT count(*), sum(id), sum(v) FROM u").await,
        u_rows
    );
}

/// A crash while a CLUSTER's transaction block is open undoes it: after restart, the
/// rows are in the load's order in the old files, no index is marked clustered, the
/// indexes answer; and CLUSTER runs again.
#[tokio::test(flavor = "multi_thread")]
async fn a_crash_undoes_an_uncommitted_cluster() {
    let mut server = TestServer::start("rewrite-crash-uncommitted");
    let loaded;
    let original;
    {
        let c = server.client().await;
        create_t(&c, 100_000).await;
        exec(&c, "CHECKPOINT").await;
        loaded = seq_a(&c, "").await;
        original = filenodes(&c).await;
        exec(&c, "BEGIN; CLUSTER t USING t_a_idx").await;
        assert_eq!(seq_a(&c, "").await, btree_sorted(&loaded));
        // The uncommitted new files on disk too.
        let other = server.client().await;
        exec(&other, "CHECKPOINT").await;
        server.kill();
    }
    server.restart();
    let c = server.client().await;
    assert_eq!(seq_a(&c, "").await, loaded);
    assert_eq!(filenodes(&c).await, original);
    assert_eq!(
        clustered_flags(&c).await,
        [["t_a_idx", "false"], ["t_pkey", "false"]]
    );
    indexes_agree(&c, T_QUERIES).await;
    exec(&c, "CLUSTER t USING t_a_idx").await;
    assert_eq!(seq_a(&c, "").await, btree_sorted(&loaded));
    indexes_agree(&c, T_QUERIES).await;
}
