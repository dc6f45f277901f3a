//! Smoke test of the benchmark harness: `iolab-bench --scale tiny` against the debug iolab,
//! into a temporary directory. It asserts that every experiment produced figures, that the
//! outputs are well-formed (CSV, JSON, PNG), that the harness's own consistency checks
//! passed, and a few cross-checks between experiments (blocks read by the sequential scan =
//! pages ANALYZE scanned) and within recovery (every crash recovery replayed the same WAL and
//! recovered the table; read-ahead advised blocks only where it should). Never on times.

use iolab_tests::{bench_binary, free_port, iolab_binary};
use serde_json::Value;
use std::path::Path;
use std::process::Command;

const EXPERIMENTS_WITH_FIGURES: [&str; 5] = ["eic", "advice", "analyze", "aio", "recovery"];

fn readahead_of_all_disks() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/sys/block")
        .into_iter()
        .flatten()
        .flatten()
    {
        let file = entry.path().join("queue/read_ahead_kb");
        if let Ok(v) = std::fs::read_to_string(&file) {
            out.push((file.display().to_string(), v.trim().to_string()));
        }
    }
    out.sort();
    out
}

/// Medians of `metric` over the cells `keep` selects.
fn medians(json: &Value, metric: &str, keep: impl Fn(&Value) -> bool) -> Vec<f64> {
    json["cells"]
        .as_array()
        .expect("cells")
        .iter()
        .filter(|c| keep(c))
        .flat_map(|c| c["metrics"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["name"] == metric)
        .map(|m| m["summary"]["median"].as_f64().expect("a median"))
        .collect()
}

fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n"),
        "{} is not a PNG",
        path.display()
    );
    assert!(
        (10_000..5_000_000).contains(&bytes.len()),
        "{}: {} bytes",
        path.display(),
        bytes.len()
    );
    assert_eq!(&bytes[12..16], b"IHDR");
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn tiny_run_produces_consistent_results() {
    let dir = std::env::temp_dir().join(format!("iolab-bench-smoke-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (out, data) = (dir.join("out"), dir.join("data"));
    let readahead_before = readahead_of_all_disks();
    let run = Command::new(bench_binary())
        .args(["--scale", "tiny", "--iolab-bin"])
        .arg(iolab_binary())
        .arg("--out")
        .arg(&out)
        .arg("--data-dir")
        .arg(&data)
        .args(["--port", &free_port().to_string()])
        .output()
        .expect("run iolab-bench");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success(),
        "iolab-bench failed ({}):\n{stdout}\n{stderr}",
        run.status
    );
    assert_eq!(
        readahead_of_all_disks(),
        readahead_before,
        "device readahead not restored"
    );

    // The table at the end.
    for e in EXPERIMENTS_WITH_FIGURES {
        assert!(
            stdout.contains(&format!("\n-- {e}: ")),
            "no {e} table:\n{stdout}"
        );
    }
    assert!(!stdout.contains("reserved"), "{stdout}");
    // Progress on stderr: a line per cell and the load.
    assert!(
        stderr.contains("loading eic_uniform (50000 rows)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("loading recovery_uniform (50000 rows)") && stderr.contains("kill -9"),
        "{stderr}"
    );
    assert!(
        stderr.matches("[1/1] iolab").count() >= 36 + 4 + 6 + 3 + 3,
        "{stderr}"
    );

    // CSV: every experiment has rows with figures.
    let csv = std::fs::read_to_string(out.join("results.csv")).expect("results.csv");
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("experiment,system,io_method,io,variant,setting,metric,unit,runs,median,min,max,note")
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for e in EXPERIMENTS_WITH_FIGURES {
        let n = rows
            .iter()
            .filter(|r| r[0] == e && !r[6].is_empty() && r[9].parse::<f64>().is_ok())
            .count();
        assert!(n > 0, "no figures for {e} in results.csv");
    }

    // JSON: parses; the harness's consistency checks all passed, each experiment has some.
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap())
            .expect("results.json parses");
    assert_eq!(json["meta"]["rows"], 50_000);
    let checks = json["checks"].as_array().expect("checks");
    for c in checks {
        assert_eq!(c["passed"], true, "check failed: {c}");
    }
    for e in EXPERIMENTS_WITH_FIGURES {
        assert!(
            checks.iter().any(|c| c["experiment"] == e),
            "no checks for {e}"
        );
    }

    // Numbers that could be wrong, across experiments.
    let iolab =
        |exp: &'static str| move |c: &Value| c["experiment"] == exp && c["system"] == "iolab";
    // Without root the harness runs direct I/O only and leaves the readahead alone.
    let root = json["meta"]["drop_caches"] == true;
    let readahead_settable = json["meta"].get("readahead_kb").is_some();
    let pages = medians(&json, "pages", iolab("analyze"));
    assert_eq!(
        pages.len(),
        if readahead_settable { 12 } else { 6 },
        "analyze cells"
    );
    assert!(
        pages.iter().all(|&p| p == pages[0] && p > 128.0),
        "ANALYZE scanned the whole table, larger than the 1MB pool: {pages:?}"
    );
    let seq_blocks = medians(&json, "blocks_read", iolab("aio"));
    assert_eq!(
        seq_blocks,
        vec![pages[0]; if root { 6 } else { 3 }],
        "a cold count(*) reads every page"
    );
    let dense = medians(&json, "heap_blocks", |c| {
        iolab("eic")(c) && c["variant"] == "dense"
    });
    let sparse = medians(&json, "heap_blocks", |c| {
        iolab("eic")(c) && c["variant"] == "sparse"
    });
    assert_eq!(dense.len(), 18);
    assert_eq!(sparse.len(), 18);
    assert!(dense.iter().all(|&b| b == dense[0]) && sparse.iter().all(|&b| b == sparse[0]));
    assert!(
        dense[0] <= pages[0] && sparse[0] > 0.0 && sparse[0] < dense[0] / 4.0,
        "dense {} sparse {} of {} pages",
        dense[0],
        sparse[0],
        pages[0]
    );
    let advice = |policy: &'static str| {
        medians(&json, "advice_calls", move |c| {
            iolab("advice")(c) && c["setting"] == policy
        })
    };
    assert_eq!(advice("never"), vec![0.0]);
    if root {
        assert!(advice("always")[0] > 0.0, "posix_fadvise under always");
    }

    // Crash recovery: one server start per cell on a copy of the same crashed data directory.
    // With root: worker buffered with prefetch off, on at maintenance_io_concurrency 16 and
    // 64; on/16 under worker direct, sync buffered and sync direct. Without root everything
    // is direct: worker's three and sync's one.
    let recovery = |method: &'static str, io: &'static str, variant: &'static str, metric| {
        medians(&json, metric, move |c| {
            iolab("recovery")(c)
                && (method.is_empty() || c["io_method"] == method)
                && (io.is_empty() || c["io"] == io)
                && (variant.is_empty() || c["variant"] == variant)
        })
    };
    let records = recovery("", "", "", "records");
    assert_eq!(records.len(), if root { 6 } else { 4 }, "recovery cells");
    assert!(
        records.iter().all(|&r| r == records[0] && r >= 52.0),
        "every recovery replays the same WAL, at least one record per UPDATE (52 at tiny): {records:?}"
    );
    let wal_bytes = recovery("", "", "", "wal_bytes");
    assert!(
        wal_bytes.len() == records.len() && wal_bytes.iter().all(|&b| b == wal_bytes[0] && b > 0.0),
        "{wal_bytes:?}"
    );
    let redo_s = recovery("", "", "", "redo_s");
    assert!(
        redo_s.len() == records.len() && redo_s.iter().all(|s| (0.0..60.0).contains(s)),
        "{redo_s:?}"
    );
    // What reads ahead: nothing with prefetch off; sync advises the kernel (useless, and
    // not done, under direct I/O); worker reads into the buffer pool, direct or not.
    assert_eq!(
        recovery("", "", "prefetch=off", "prefetch"),
        vec![0.0],
        "recovery_prefetch=off reads nothing ahead"
    );
    assert_eq!(
        recovery("sync", "direct", "", "prefetch"),
        vec![0.0],
        "sync gives no advice under direct I/O"
    );
    let worker_ahead = recovery("worker", "", "prefetch=on", "prefetch");
    assert_eq!(worker_ahead.len(), if root { 3 } else { 2 });
    assert!(
        worker_ahead.iter().all(|&p| p > 0.0),
        "worker reads ahead, buffered and direct: {worker_ahead:?}"
    );
    if root {
        let advised = recovery("sync", "buffered", "prefetch=on", "prefetch");
        assert!(
            advised.len() == 1 && advised[0] > 0.0,
            "sync, buffered, recovery_prefetch=on advises blocks: {advised:?}"
        );
    }
    for what in [
        "the recovered table holds what it held before the crash",
        "the server recovers from the crash and starts",
    ] {
        let check = checks
            .iter()
            .find(|c| {
                c["experiment"] == "recovery" && c["what"].as_str().unwrap().starts_with(what)
            })
            .unwrap_or_else(|| panic!("no recovery check \"{what}\""));
        assert!(
            check["detail"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{} of ", records.len())),
            "{check}"
        );
    }

    // One sane PNG per experiment.
    for e in EXPERIMENTS_WITH_FIGURES {
        let (w, h) = png_size(&out.join(format!("{e}.png")));
        assert!(w >= 700 && h >= 400, "{e}.png is {w}x{h}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
