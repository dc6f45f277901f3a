//! A Python user's session: tests/python/client_session.py drives the real server with
//! psycopg 3 (extended protocol, binary results, COPY, EXPLAIN JSON, pg_stat_io, errors,
//! transactions, a job queue of worker threads taking rows with `FOR UPDATE SKIP LOCKED`,
//! pipelines: `executemany` inserting all of its rows or none)
//! and checks values it computes itself. psycopg must be installed
//! (`python3 -m pip install "psycopg[binary]"`, as `.ci/run` does); without it the test
//! fails rather than passing unexercised.

use std::path::PathBuf;
use std::process::Command;

use iolab_tests::TestServer;

/// The interpreter: `IOLAB_PYTHON` if set, else `python3` from PATH.
fn python() -> String {
    std::env::var("IOLAB_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn require_psycopg() {
    let probe = Command::new(python())
        .args(["-c", "import psycopg; print(psycopg.__version__)"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}; install Python 3", python()));
    assert!(
        probe.status.success(),
        "psycopg 3 is not importable by {}: install it with \
         `{} -m pip install \"psycopg[binary]\"` (.ci/run does)\n{}",
        python(),
        python(),
        String::from_utf8_lossy(&probe.stderr)
    );
}

#[test]
fn psycopg_session_checks_its_own_results() {
    require_psycopg();
    let server = TestServer::start("python-client");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/client_session.py");
    let out = Command::new(python())
        .arg(&script)
        .args(["--port", &server.port.to_string()])
        .output()
        .expect("run the Python client script");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}\n--- server log\n{}",
        script.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr),
        server.log()
    );
    assert!(
        stdout.contains("python client session: all checks passed"),
        "the script stopped early:\n{stdout}"
    );
}
