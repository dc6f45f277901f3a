//! pgbench, PostgreSQL's own benchmark client, against iolab: `pgbench -i` builds its
//! tables (COPY … WITH (freeze on), ALTER TABLE … ADD PRIMARY KEY, VACUUM), and the
//! built-in TPC-B-like script runs with several clients in each query mode. Every client
//! updates the one branch row, so transactions meet rows others updated meanwhile: READ
//! COMMITTED's recheck must apply every change to the newest version, which the balances
//! prove — the accounts', tellers' and branches' sums each equal the sum of the history's
//! deltas, and no transaction failed.

use std::process::{Command, Output};

use iolab_tests::{int, TestServer};

fn pgbench(server: &TestServer, args: &[&str]) -> Output {
    Command::new("pgbench")
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", server.port.to_string())
        .env("PGUSER", "postgres")
        .env("PGDATABASE", "postgres")
        .env("PGCONNECT_TIMEOUT", "10")
        .args(args)
        .output()
        .expect("run pgbench (is PostgreSQL's pgbench installed? .ci/run installs it)")
}

/// Runs pgbench and returns its stdout, panicking with its stderr if it failed.
fn pgbench_ok(server: &TestServer, args: &[&str]) -> String {
    let out = pgbench(server, args);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        out.status.success() && !stderr.contains("error"),
        "pgbench {args:?} failed:\n{stdout}\n{stderr}\nserver log:\n{}",
        server.log()
    );
    stdout
}

/// The figure after `label` in pgbench's report (`number of failed transactions: 0 (0.000%)`).
fn reported(report: &str, label: &str) -> String {
    report
        .lines()
        .find_map(|l| l.strip_prefix(label))
        .unwrap_or_else(|| panic!("no {label:?} in\n{report}"))
        .trim()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgbench_initializes_and_runs_tpcb_with_concurrent_clients() {
    let server = TestServer::start("pgbench");
    pgbench_ok(&server, &["-i", "-s", "1", "-q"]);
    let client = server.client().await;
    assert_eq!(
        int(&client, "SELECT count(*) FROM pgbench_accounts").await,
        100_000
    );
    assert_eq!(
        int(&client, "SELECT count(*) FROM pgbench_tellers").await,
        10
    );
    assert_eq!(
        int(&client, "SELECT count(*) FROM pgbench_branches").await,
        1
    );
    for (table, key) in [
        ("pgbench_accounts", "aid"),
        ("pgbench_branches", "bid"),
        ("pgbench_tellers", "tid"),
    ] {
        let constraint = client
            .query_one(
                "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = $1",
                &[&format!("{table}_pkey")],
            )
            .await
            .unwrap();
        assert_eq!(
            constraint.get::<_, String>(0),
            format!("PRIMARY KEY ({key})")
        );
    }

    let mut all_deltas = 0;
    for mode in ["simple", "extended", "prepared"] {
        let report = pgbench_ok(&server, &["-M", mode, "-c", "4", "-j", "2", "-t", "40"]);
        assert_eq!(
            reported(&report, "number of transactions actually processed:"),
            "160/160",
            "{mode}"
        );
        assert!(
            reported(&report, "number of failed transactions:").starts_with("0 "),
            "{mode}: {report}"
        );
        // pgbench empties the history before each run; the balances add up across runs.
        assert_eq!(
            int(&client, "SELECT count(*) FROM pgbench_history").await,
            160,
            "{mode}"
        );
        all_deltas += int(&client, "SELECT sum(delta) FROM pgbench_history").await;
    }
    let accounts = int(&client, "SELECT sum(abalance) FROM pgbench_accounts").await;
    let tellers = int(&client, "SELECT sum(tbalance) FROM pgbench_tellers").await;
    let branches = int(&client, "SELECT sum(bbalance) FROM pgbench_branches").await;
    assert_eq!(
        (accounts, tellers, branches),
        (all_deltas, all_deltas, all_deltas)
    );
}
