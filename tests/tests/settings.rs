//! Settings from the configuration file and the command line, and the SQL that reads and
//! changes them.

use iolab_tests::{show, sqlstate, TestServer};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_file_then_command_line_then_session() {
    let conf = std::env::temp_dir().join(format!("iolab-test-conf-{}.conf", std::process::id()));
    std::fs::write(
        &conf,
        "# iolab.conf\nwork_mem = '32MB'\neffective_io_concurrency = 64   # comment\n",
    )
    .unwrap();
    let server = TestServer::start_with(
        "settings",
        &[
            "--config",
            conf.to_str().unwrap(),
            "-c",
            "effective_io_concurrency=128",
        ],
    );
    let client = server.client().await;
    assert_eq!(show(&client, "work_mem").await, "32MB", "from the file");
    assert_eq!(
        show(&client, "effective_io_concurrency").await,
        "128",
        "the command line wins over the file"
    );
    client.batch_execute("SET work_mem = '1GB'").await.unwrap();
    assert_eq!(show(&client, "work_mem").await, "1GB");
    client
        .batch_execute("SET work_mem TO DEFAULT")
        .await
        .unwrap();
    assert_eq!(show(&client, "work_mem").await, "32MB");
    assert_eq!(show(&client, "server_version").await, "18.0");
    assert_eq!(show(&client, "block_size").await, "8192");
    // SHOW ALL: name, setting, description for every setting.
    let all = client.simple_query("SHOW ALL").await.unwrap();
    let rows = all
        .iter()
        .filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_)))
        .count();
    assert!(rows > 100, "SHOW ALL listed {rows} settings");
    // Units and ranges as PostgreSQL checks them.
    let err = client
        .batch_execute("SET work_mem = '10 parsecs'")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22023");
    let err = client
        .batch_execute("SET nosuch_setting = 1")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "42704");
    assert_eq!(
        err.as_db_error().unwrap().message(),
        "unrecognized configuration parameter \"nosuch_setting\""
    );
    let err = client
        .batch_execute("SET io_method = 'sync'")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "55P02");
    std::fs::remove_file(&conf).unwrap();
}

#[test]
fn a_bad_setting_on_the_command_line_stops_start_up() {
    let out = std::process::Command::new(iolab_tests::iolab_binary())
        .args([
            "--data-dir",
            "/nonexistent-iolab-dir/x",
            "-c",
            "shared_buffers=banana",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid value for parameter \"shared_buffers\""),
        "{stderr}"
    );
}
