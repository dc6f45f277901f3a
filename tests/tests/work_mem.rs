//! `work_mem`: sorts and hash aggregations beyond it write temporary files
//! (`base/pgsql_tmp`) and give the same answers; EXPLAIN shows PostgreSQL's
//! `Sort Method: external merge  Disk: …kB` and `temp read=… written=…`;
//! `temp_file_limit` stops a statement with 53400; a hash join, which cannot spill, is
//! not held to `work_mem`.

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

    // In memory: no sort method on disk, no temporary blocks.
    c.batch_execute("SET work_mem = '1GB'").await.unwrap();
    let in_memory = sorted_ids(&c).await;
    let explain = "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF) SELECT * FROM srt ORDER BY f";
    let lines = plan(&c, explain).await;
    assert!(
        !lines.iter().any(|l| l.contains("Sort Method")),
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
    assert_eq!(written, (disk_kb + 7) / 8, "{lines:#?}");
    assert_eq!(read, written);
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

    // A hash join cannot spill; work_mem does not fail it.
    c.batch_execute("SET work_mem = '64kB'").await.unwrap();
    assert_eq!(
        int(&c, "SELECT count(*) FROM srt a JOIN srt b USING (f)").await,
        200000
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
