//! `idle_session_timeout`, `idle_in_transaction_session_timeout` and `transaction_timeout`
//! end a psql session with PostgreSQL 18.4's FATAL (code and words, compared with the
//! reference server on 2026-12-06); other sessions keep working, and a session that stays
//! within its timeouts is left alone.

use iolab_tests::{int, TestServer};

/// psql's stderr for `script` (psql's `\!` runs a shell command, here a sleep).
fn stderr_of(server: &TestServer, script: &str) -> String {
    let path = std::env::temp_dir().join(format!(
        "iolab-timeouts-{}-{}.sql",
        std::process::id(),
        script.len()
    ));
    std::fs::write(&path, script).unwrap();
    let out = server.psql(&["-v", "VERBOSITY=verbose", "-f", path.to_str().unwrap()]);
    std::fs::remove_file(&path).unwrap();
    String::from_utf8(out.stderr).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_timeout_ends_its_session_with_postgresql_s_fatal() {
    let server = TestServer::start("session-timeouts");
    let cases = [
        (
            "SET idle_session_timeout = '300ms';\n\\! sleep 1\nSELECT 1;\n",
            "FATAL:  57P05: terminating connection due to idle-session timeout",
        ),
        (
            "SET idle_in_transaction_session_timeout = '300ms';\nBEGIN;\n\\! sleep 1\nSELECT 1;\n",
            "FATAL:  25P03: terminating connection due to idle-in-transaction timeout",
        ),
        (
            "SET transaction_timeout = '300ms';\nBEGIN;\nSELECT 1;\n\\! sleep 1\nSELECT 2;\n",
            "FATAL:  25P04: terminating connection due to transaction timeout",
        ),
    ];
    for (script, fatal) in cases {
        let stderr = stderr_of(&server, script);
        assert!(stderr.contains(fatal), "{script}\n{stderr}");
    }

    // Within its timeouts (and idle outside a block, which only idle_session_timeout
    // limits), a session goes on.
    let calm = "SET idle_in_transaction_session_timeout = '300ms';
                SET transaction_timeout = '300ms';
                BEGIN; SELECT 1; COMMIT;
                \\! sleep 1
                SELECT 2;";
    let stderr = stderr_of(&server, calm);
    assert!(!stderr.contains("FATAL"), "{stderr}");

    // The server serves everyone else as before.
    let client = server.client().await;
    assert_eq!(int(&client, "SELECT 41 + 1").await, 42);
}

/// `transaction_timeout` ends a statement that holds its session's thread (`pg_sleep`) when
/// the timeout passes, not when the statement would have ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_timeout_ends_a_sleeping_statement() {
    let server = TestServer::start("session-timeouts-sleep");
    let client = server.client().await;
    client
        .batch_execute("SET transaction_timeout = '300ms'")
        .await
        .unwrap();
    let slept = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        client.batch_execute("SELECT pg_sleep(600)"),
    )
    .await
    .expect("the 600 s sleep is ended by the 300 ms transaction_timeout");
    let e = slept.expect_err("the session ends");
    let db = e.as_db_error().expect("a server error");
    assert_eq!(
        (db.code().code(), db.severity(), db.message()),
        (
            "25P04",
            "FATAL",
            "terminating connection due to transaction timeout"
        )
    );
    let other = server.client().await;
    assert_eq!(int(&other, "SELECT 41 + 1").await, 42);
}
