//! `work_mem`: sorts and hash aggregations beyond it write temporary files
//! (`base/pgsql_tmp/pgsql_tmp<pid>.<n>`) and give the same answers; EXPLAIN shows
//! PostgreSQL's `Sort Method: …`, `Batches: …  Memory Usage: …`, `temp read=… written=…`
//! and `I/O Timings: temp …`; the files count in `pg_stat_statements`,
//! `pg_stat_database` and, with `log_temp_files`, the log; `temp_file_limit` stops a
//! statement with 53400; a hash join beyond the hash limit runs in batches.

use iolab_tests::{int, number_after, plan, rows, sqlstate, TestServer};
use tokio_postgres::Client;

/// `(read, written)` of the `temp` group of the first `Buffers:` line, zeros without one.
fn temp_blocks(lines: &[String]) -> (i64, i64) {
    let Some(line) = lines.iter().find(|l| l.contains("Buffers:")) else {
        return (0, 0);
    };
    let Some(at) = line.find("temp ") else {
        return (0, 0);
    };
    let group = &line[at..];
    let count = |key| number_after(group, key).map_or(0, |n| n as i64);
    (count("read="), count("written="))
}

async fn sorted_ids(c: &Client) -> Vec<Option<String>> {
    rows(c, "SELECT i FROM srt ORDER BY f")
        .await
        .into_iter()
        .map(|mut r| r.remove(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn sorts_and_aggregations_beyond_work_mem_spill_to_temporary_files() {
    let server = TestServer::start("work-mem");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE srt AS SELECT i, md5(i::text) AS f FROM generate_series(1, 200000) i",
    )
    .await
    .unwrap();

    // In memory: a quicksort, no temporary blocks.
    c.batch_execute("SET work_mem = '1GB'").await.unwrap();
    let in_memory = sorted_ids(&c).await;
    let explain = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT * FROM srt ORDER BY f";
    let lines = plan(&c, explain).await;
    assert!(
        lines
            .iter()
            .any(|l| l.contains("Sort Method: quicksort  Memory: ")),
        "{lines:#?}"
    );
    assert_eq!(temp_blocks(&lines), (0, 0), "{lines:#?}");

    // 1 MB: the sort writes runs and merges them, with the same order.
    c.batch_execute("SET work_mem = '1MB'").await.unwrap();
    assert_eq!(sorted_ids(&c).await, in_memory);
    let lines = plan(&c, explain).await;
    let method = lines
        .iter()
        .find(|l| l.contains("Sort Method:"))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(
        method
            .trim()
            .starts_with("Sort Method: external merge  Disk: "),
        "{method}"
    );
    let disk_kb: i64 = method.trim()["Sort Method: external merge  Disk: ".len()..]
        .trim_end_matches("kB")
        .parse()
        .unwrap();
    let (read, written) = temp_blocks(&lines);
    assert!(disk_kb > 1024, "{method}");
    // Each file's last write rounds up to a whole block.
    assert!(written >= (disk_kb + 7) / 8, "{lines:#?}");
    assert!(read > 0 && read <= written, "{lines:#?}");
    let json = rows(
        &c,
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM srt ORDER BY f",
    )
    .await[0][0]
        .clone()
        .unwrap();
    assert!(json.contains("\"Sort Space Type\": \"Disk\""), "{json}");
    assert!(
        json.contains("\"Sort Method\": \"external merge\""),
        "{json}"
    );

    // A hash aggregation spills too, and counts right.
    let grouped = "SELECT count(*), sum(n) FROM (SELECT f, count(*) AS n FROM srt GROUP BY f) g";
    assert_eq!(
        rows(&c, grouped).await[0],
        vec![Some("200000".to_string()), Some("200000".to_string())]
    );
    let lines = plan(
        &c,
        "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT f, count(*) FROM srt GROUP BY f",
    )
    .await;
    assert!(temp_blocks(&lines).1 > 0, "{lines:#?}");
    // An aggregation over sorted input is not held to work_mem (DataFusion cannot spill it).
    c.batch_execute("SET work_mem = '64kB'").await.unwrap();
    assert_eq!(
        int(
            &c,
            "SELECT count(*) FROM (SELECT g, count(*) FROM generate_series(1, 100000) g GROUP BY 1) s"
        )
        .await,
        100000
    );

    assert_eq!(sorted_ids(&c).await, in_memory);

    // temp_file_limit stops the statement; the session goes on.
    c.batch_execute("SET temp_file_limit = '100kB'")
        .await
        .unwrap();
    let err = c.simple_query(grouped).await.unwrap_err();
    assert_eq!(sqlstate(&err), "53400");
    assert_eq!(
        err.as_db_error().unwrap().message(),
        "temporary file size exceeds \"temp_file_limit\" (100kB)"
    );
    c.batch_execute("RESET temp_file_limit").await.unwrap();
    assert_eq!(int(&c, "SELECT count(*) FROM srt").await, 200000);
    // Every temporary file went with its statement.
    let tmp = server.data_dir.join("base/pgsql_tmp");
    assert_eq!(
        iolab_tests::files_under(&tmp),
        Vec::<std::path::PathBuf>::new()
    );
}

/// What each join type gives over `r` and `s`, as one row of figures.
const JOIN_QUERIES: &[&str] = &[
    "SELECT count(*), sum(s.v), sum(length(r.t)) FROM s JOIN r ON r.id = s.rid",
    "SELECT count(*), count(r.id), sum(s.v) FROM s LEFT JOIN r ON r.id = s.rid",
    "SELECT count(*), count(r.id), count(s.rid), sum(s.v) FROM s FULL JOIN r ON r.id = s.rid",
    "SELECT count(*), sum(v) FROM s WHERE EXISTS (SELECT 1 FROM r WHERE r.id = s.rid)",
    "SELECT count(*), sum(v) FROM s WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.id = s.rid)",
    "SELECT count(*), sum(s.v) FROM s JOIN r ON r.id = s.rid AND s.v % 7 < r.id % 5",
];

async fn join_results(c: &Client) -> Vec<Vec<Option<String>>> {
    let mut all = Vec::new();
    for q in JOIN_QUERIES {
        all.extend(rows(c, q).await);
    }
    all
}

/// The `Buckets: …  Batches: …` line of a plan.
fn hash_line(lines: &[String]) -> String {
    let line = lines.iter().find(|l| l.contains("Batches:"));
    line.unwrap_or_else(|| panic!("no Batches line: {lines:#?}"))
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn hash_joins_beyond_the_hash_limit_run_in_batches() {
    let server = TestServer::start("work-mem-hash-join");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE r AS SELECT i AS id, md5(i::text) AS t FROM generate_series(1, 100000) i;
         CREATE TABLE s AS SELECT CASE WHEN i % 50 = 0 THEN NULL ELSE i % 120000 END AS rid, i AS v
           FROM generate_series(1, 150000) i;
         ANALYZE r; ANALYZE s;",
    )
    .await
    .unwrap();
    let explain = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) \
                   SELECT count(*), sum(s.v), sum(length(r.t)) FROM s JOIN r ON r.id = s.rid";

    // Within the limit: one batch, no temporary file.
    c.batch_execute("SET work_mem = '64MB'").await.unwrap();
    let whole = join_results(&c).await;
    // PostgreSQL 18's answers over the same tables.
    let postgres = [
        "127400|8869000000|4076800",
        "150000|127400|11250075000",
        "152000|129400|147000|11250075000",
        "127400|8869000000",
        "22600|2381075000",
        "37144|2585942860",
    ];
    let joined = |row: &Vec<Option<String>>| {
        let cells = row.iter().map(|v| v.clone().unwrap_or_default());
        cells.collect::<Vec<_>>().join("|")
    };
    assert_eq!(whole.iter().map(joined).collect::<Vec<_>>(), postgres);
    let lines = plan(&c, explain).await;
    assert!(hash_line(&lines).starts_with("Buckets: "), "{lines:#?}");
    assert!(
        hash_line(&lines).contains("  Batches: 1  Memory Usage: "),
        "{lines:#?}"
    );
    assert_eq!(temp_blocks(&lines), (0, 0), "{lines:#?}");

    // 64 kB: the same answers from batches in temporary files.
    c.batch_execute("SET work_mem = '64kB'").await.unwrap();
    assert_eq!(join_results(&c).await, whole);
    let lines = plan(&c, explain).await;
    let hash = hash_line(&lines);
    // The first split's count from the estimate, a power of two; a batch split again adds.
    let batches = number_after(&hash, "Batches: ").unwrap();
    let original = number_after(&hash, "(originally ").unwrap_or(batches);
    assert!(
        original >= 8.0 && (original as u64).is_power_of_two(),
        "{hash}"
    );
    assert!(batches >= original, "{hash}");
    let (read, written) = temp_blocks(&lines);
    assert!(written > 100 && read > 0 && read <= written, "{lines:#?}");
    // The Hash node shows the build side's share of the writes, as PostgreSQL's does.
    let at = lines.iter().position(|l| l.contains("Batches:")).unwrap();
    let hash_written = number_after(&lines[at + 1], "temp written=").unwrap_or(0.0) as i64;
    assert!(hash_written > 0 && hash_written < written, "{lines:#?}");
    let json = rows(
        &c,
        "EXPLAIN (ANALYZE, FORMAT JSON) SELECT count(*) FROM s JOIN r ON r.id = s.rid",
    )
    .await;
    let json: serde_json::Value = serde_json::from_str(json[0][0].as_deref().unwrap()).unwrap();
    let hash_node = &json[0]["Plan"]["Plans"][0]["Plans"][1];
    assert_eq!(hash_node["Node Type"], "Hash", "{json:#}");
    assert!(hash_node["Hash Batches"].as_u64().unwrap() >= 8, "{json:#}");
    assert!(
        hash_node["Original Hash Batches"].as_u64().unwrap() >= 2,
        "{json:#}"
    );

    // temp_file_limit stops a join that would write more; the session goes on.
    c.batch_execute("SET temp_file_limit = '100kB'")
        .await
        .unwrap();
    let err = c.simple_query(JOIN_QUERIES[0]).await.unwrap_err();
    assert_eq!(sqlstate(&err), "53400", "{err:?}");
    c.batch_execute("RESET temp_file_limit; RESET work_mem")
        .await
        .unwrap();
    assert_eq!(join_results(&c).await, whole);
    let tmp = server.data_dir.join("base/pgsql_tmp");
    assert_eq!(
        iolab_tests::files_under(&tmp),
        Vec::<std::path::PathBuf>::new()
    );
}

/// The figure after `key` on the first line holding `label`, as an integer.
fn figure_of(lines: &[String], label: &str, key: &str) -> i64 {
    iolab_tests::figure(lines, label, key).unwrap_or_else(|| panic!("{label} {key}: {lines:#?}"))
        as i64
}

#[tokio::test(flavor = "multi_thread")]
async fn temporary_files_are_counted_timed_and_reported_like_postgresql() {
    let server = TestServer::start("temp-files");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE srt AS SELECT i::bigint AS i, md5(i::text) AS f FROM generate_series(1, 200000) i;
         SET track_io_timing = on; SET log_temp_files = 0; SET work_mem = '1GB'",
    )
    .await
    .unwrap();
    let pid = int(&c, "SELECT pg_backend_pid()").await;

    // In memory, a sort and a hash aggregation say how much memory they held.
    let lines = plan(
        &c,
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT * FROM srt ORDER BY f",
    )
    .await;
    assert!(
        figure_of(&lines, "Sort Method: quicksort  Memory: ", "Memory: ") > 1000,
        "{lines:#?}"
    );
    let lines = plan(
        &c,
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT * FROM srt ORDER BY f LIMIT 10",
    )
    .await;
    assert!(
        figure_of(&lines, "Sort Method: top-N heapsort  Memory: ", "Memory: ") > 0,
        "{lines:#?}"
    );
    let lines = plan(
        &c,
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT i % 10, count(*) FROM srt GROUP BY 1",
    )
    .await;
    assert_eq!(figure_of(&lines, "Batches:", "Batches: "), 1, "{lines:#?}");
    assert!(
        figure_of(&lines, "Batches:", "Memory Usage: ") > 0,
        "{lines:#?}"
    );
    assert!(
        !lines.iter().any(|l| l.contains("Disk Usage")),
        "{lines:#?}"
    );

    // Beyond work_mem: the blocks and the time of the temporary files, on the node that
    // wrote them and on its parents.
    c.batch_execute("SET work_mem = '1MB'").await.unwrap();
    let lines = plan(
        &c,
        "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) \
         SELECT max(r) FROM (SELECT row_number() OVER (ORDER BY f) AS r FROM srt) s",
    )
    .await;
    let timings: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("I/O Timings: temp read="))
        .collect();
    assert!(timings.len() >= 2, "the sort and its parents: {lines:#?}");
    assert!(
        figure_of(&lines, "I/O Timings:", "write=") >= 0,
        "{lines:#?}"
    );
    let disk_kb = figure_of(&lines, "Sort Method: external merge", "Disk: ");
    let (read, written) = temp_blocks(&lines);
    assert!(
        written * 8 >= disk_kb && read > 0 && read <= written,
        "{lines:#?}"
    );
    let aggregated = plan(
        &c,
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT f, count(*) FROM srt GROUP BY f",
    )
    .await;
    assert!(
        figure_of(&aggregated, "Batches:", "Batches: ") > 1,
        "{aggregated:#?}"
    );
    assert!(
        figure_of(&aggregated, "Batches:", "Disk Usage: ") > 0,
        "{aggregated:#?}"
    );
    let json = rows(
        &c,
        "EXPLAIN (ANALYZE, FORMAT JSON) SELECT f, count(*) FROM srt GROUP BY f",
    )
    .await[0][0]
        .clone()
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let aggregate = &json[0]["Plan"];
    assert_eq!(aggregate["Strategy"], "Hashed", "{aggregate}");
    assert_eq!(aggregate["Planned Partitions"], 0, "{aggregate}");
    assert!(
        aggregate["HashAgg Batches"].as_i64().unwrap() > 1,
        "{aggregate}"
    );
    assert!(
        aggregate["Peak Memory Usage"].as_i64().unwrap() > 0,
        "{aggregate}"
    );
    assert!(aggregate["Disk Usage"].as_i64().unwrap() > 0, "{aggregate}");
    let json = rows(
        &c,
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM srt ORDER BY f",
    )
    .await[0][0]
        .clone()
        .unwrap();
    let json: serde_json::Value = serde_json::from_str(&json).unwrap();
    let sort = &json[0]["Plan"];
    assert_eq!(sort["Sort Space Type"], "Disk", "{sort}");
    assert!(
        sort["Temp I/O Write Time"].as_f64().unwrap() > 0.0,
        "{sort}"
    );
    assert!(sort["Temp Written Blocks"].as_i64().unwrap() > 0, "{sort}");

    // While a cursor's sort merges its runs, its files are there under PostgreSQL's names
    // (with runs of several batches: a merge reads a one-batch run in full at once and
    // removes it before the first row; `srt`'s bigint rows make every run several batches).
    c.batch_execute("SET work_mem = '4MB'").await.unwrap();
    let database_before = rows(
        &c,
        "SELECT temp_files, temp_bytes FROM pg_stat_database WHERE datname = 'postgres'",
    )
    .await;
    let files_before: i64 = database_before[0][0].as_deref().unwrap().parse().unwrap();
    let bytes_before: i64 = database_before[0][1].as_deref().unwrap().parse().unwrap();
    c.batch_execute("BEGIN; DECLARE cur CURSOR FOR SELECT * FROM srt ORDER BY f")
        .await
        .unwrap();
    assert_eq!(rows(&c, "FETCH 1 FROM cur").await.len(), 1);
    let tmp = server.data_dir.join("base/pgsql_tmp");
    let files = iolab_tests::files_under(&tmp);
    assert!(!files.is_empty());
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        let n = name
            .strip_prefix(&format!("pgsql_tmp{pid}."))
            .unwrap_or_else(|| panic!("{name}"));
        n.parse::<u64>().unwrap_or_else(|_| panic!("{name}"));
    }
    let on_disk: u64 = files.iter().map(|f| f.metadata().unwrap().len()).sum();
    let sizes: std::collections::HashMap<String, u64> = files
        .iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_str().unwrap().to_string();
            (name, f.metadata().unwrap().len())
        })
        .collect();
    // pg_ls_tmpdir() lists them too.
    let mut listed = rows(&c, "SELECT name, size FROM pg_ls_tmpdir() ORDER BY name").await;
    let mut expected: Vec<Vec<Option<String>>> = files
        .iter()
        .map(|f| {
            let name = f.file_name().unwrap().to_str().unwrap().to_string();
            vec![Some(name), Some(f.metadata().unwrap().len().to_string())]
        })
        .collect();
    expected.sort();
    listed.sort();
    assert_eq!(listed, expected);
    c.batch_execute("COMMIT").await.unwrap();
    // The cursor's plan ends with the transaction; DataFusion's read-ahead tasks, which
    // hold the last references to the files, are aborted asynchronously.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !iolab_tests::files_under(&tmp).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            iolab_tests::files_under(&tmp)
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // Removed, they count in pg_stat_database and the log.
    let database_after = rows(
        &c,
        "SELECT temp_files, temp_bytes FROM pg_stat_database WHERE datname = 'postgres'",
    )
    .await;
    let files_after: i64 = database_after[0][0].as_deref().unwrap().parse().unwrap();
    let bytes_after: i64 = database_after[0][1].as_deref().unwrap().parse().unwrap();
    assert_eq!(files_after - files_before, files.len() as i64);
    assert_eq!(bytes_after - bytes_before, on_disk as i64);
    let log = server.log();
    for f in &files {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(
            log.contains(&format!(
                "temporary file: path \"base/pgsql_tmp/{name}\", size {} statement=\"COMMIT\"",
                sizes[name]
            )),
            "{name} not logged:\n{log}"
        );
    }

    // pg_stat_statements has a statement's blocks and times.
    c.batch_execute("SELECT pg_stat_statements_reset()")
        .await
        .unwrap();
    rows(&c, "SELECT * FROM srt ORDER BY f").await;
    let stats = rows(
        &c,
        "SELECT temp_blks_read > 0, temp_blks_written > 0, temp_blk_read_time > 0, \
         temp_blk_write_time > 0 FROM pg_stat_statements WHERE query = 'SELECT * FROM srt ORDER BY f'",
    )
    .await;
    assert_eq!(stats, vec![vec![Some("t".to_string()); 4]]);
}
