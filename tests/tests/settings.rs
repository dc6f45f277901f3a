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

/// ALTER SYSTEM writes `postgresql.auto.conf`, which the next start reads over the
/// configuration file (and under the command line): the way to change a restart-only
/// setting such as `io_method`. Bad changes fail as in PostgreSQL and leave the file alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alter_system_persists_settings_across_a_restart() {
    let mut server = TestServer::start_with("alter_system", &["-c", "io_workers=5"]);
    let client = server.client().await;
    iolab_tests::run_script(
        &client,
        "ALTER SYSTEM SET work_mem = '24MB';
             ALTER SYSTEM SET io_method TO sync;
             ALTER SYSTEM SET io_workers = 7;
             ALTER SYSTEM SET effective_io_concurrency = 99;
             ALTER SYSTEM RESET effective_io_concurrency;",
    )
    .await
    .unwrap();
    // Nothing changes before a restart.
    assert_eq!(show(&client, "work_mem").await, "4MB");
    let auto_conf = server.data_dir.join("postgresql.auto.conf");
    let text = std::fs::read_to_string(&auto_conf).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>(),
        [
            "work_mem = '24MB'",
            "io_method = 'sync'",
            "io_workers = '7'"
        ]
    );
    for (statement, code) in [
        ("ALTER SYSTEM SET nosuch_setting = 1", "42704"),
        ("ALTER SYSTEM SET work_mem = 'lots'", "22023"),
        ("ALTER SYSTEM SET block_size = 8192", "55P02"),
        ("ALTER SYSTEM SET work_mem 1", "42601"),
    ] {
        let err = client.batch_execute(statement).await.unwrap_err();
        assert_eq!(sqlstate(&err), code, "{statement}");
    }
    let err = client
        .batch_execute("BEGIN; ALTER SYSTEM SET work_mem = '1MB'")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "25001");
    assert_eq!(
        err.as_db_error().unwrap().message(),
        "ALTER SYSTEM cannot run inside a transaction block"
    );
    client.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(std::fs::read_to_string(&auto_conf).unwrap(), text);
    drop(client);

    server.restart();
    let client = server.client().await;
    assert_eq!(show(&client, "work_mem").await, "24MB");
    assert_eq!(show(&client, "io_method").await, "sync");
    assert_eq!(
        show(&client, "io_workers").await,
        "5",
        "the command line wins"
    );
    let row = client
        .query_one(
            "SELECT source, sourcefile LIKE '%postgresql.auto.conf' FROM pg_settings WHERE name = 'work_mem'",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(
        (row.get::<_, String>(0), row.get::<_, bool>(1)),
        ("configuration file".to_string(), true)
    );
    client
        .batch_execute("ALTER SYSTEM RESET ALL")
        .await
        .unwrap();
    drop(client);
    server.restart();
    let client = server.client().await;
    assert_eq!(show(&client, "work_mem").await, "4MB");
    assert_eq!(show(&client, "io_method").await, "worker");
}

/// `pg_settings.setting` and `pending_restart` of setting `name`.
async fn setting_and_pending_restart(
    client: &tokio_postgres::Client,
    name: &str,
) -> (String, bool) {
    let row = client
        .query_one(
            "SELECT setting, pending_restart FROM pg_settings WHERE name = $1",
            &[&name],
        )
        .await
        .unwrap();
    (row.get(0), row.get(1))
}

/// pg_reload_conf() (or SIGHUP) reads the files again: every session takes the new
/// values of the settings it did not set itself, at its next statement outside a
/// transaction block; a restart-only setting waits and shows pending_restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pg_reload_conf_applies_to_every_session() {
    let server = TestServer::start("reload_conf");
    let admin = server.client().await;
    let other = server.client().await;
    let own = server.client().await;
    own.batch_execute("SET work_mem = '2MB'").await.unwrap();
    other.batch_execute("BEGIN").await.unwrap();
    iolab_tests::run_script(
        &admin,
        "ALTER SYSTEM SET work_mem = '8MB';
             ALTER SYSTEM SET io_method = 'sync';",
    )
    .await
    .unwrap();
    assert_eq!(
        show(&admin, "work_mem").await,
        "4MB",
        "not before the reload"
    );
    let reloaded = admin
        .query_one("SELECT pg_reload_conf()", &[])
        .await
        .unwrap();
    assert!(reloaded.get::<_, bool>(0));
    assert_eq!(show(&admin, "work_mem").await, "8MB");
    assert_eq!(show(&own, "work_mem").await, "2MB", "its own SET stands");
    own.batch_execute("RESET work_mem").await.unwrap();
    assert_eq!(
        show(&own, "work_mem").await,
        "8MB",
        "RESET returns to the file's"
    );
    assert_eq!(
        show(&other, "work_mem").await,
        "4MB",
        "not inside its block"
    );
    other.batch_execute("COMMIT").await.unwrap();
    assert_eq!(show(&other, "work_mem").await, "8MB");
    let new_session = server.client().await;
    assert_eq!(show(&new_session, "work_mem").await, "8MB");
    assert_eq!(
        setting_and_pending_restart(&admin, "io_method").await,
        ("worker".to_string(), true)
    );
    // The checkpointer and the background writer take their sighup settings at once: with
    // log_checkpoints off, a CHECKPOINT logs nothing.
    iolab_tests::run_script(
        &admin,
        "CHECKPOINT;
             ALTER SYSTEM SET log_checkpoints = off;
             ALTER SYSTEM SET bgwriter_delay = '50ms';
             SELECT pg_reload_conf();",
    )
    .await
    .unwrap();
    let logged = |log: &str| log.matches("checkpoint starting: immediate").count();
    let before = logged(&server.log());
    assert!(before >= 1, "{}", server.log());
    admin.batch_execute("CHECKPOINT").await.unwrap();
    assert_eq!(logged(&server.log()), before, "{}", server.log());
    assert_eq!(
        setting_and_pending_restart(&admin, "bgwriter_delay").await,
        ("50".to_string(), false)
    );
    // SIGHUP reloads too: the value dropped from the file returns to its default.
    admin
        .batch_execute("ALTER SYSTEM RESET work_mem")
        .await
        .unwrap();
    let pid = server.pid().expect("running") as i32;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    let mut seen = String::new();
    for _ in 0..100 {
        seen = show(&admin, "work_mem").await;
        if seen == "4MB" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(seen, "4MB");
}

/// The server's threads named `io worker N`, seen from outside through /proc.
fn io_worker_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.unwrap().path().join("comm")).ok())
        .filter(|name| name.starts_with("io worker "))
        .count()
}

/// `io_workers` is a reload setting, as in PostgreSQL 18: the pool grows and shrinks at
/// pg_reload_conf(), and scans read through it before and after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn io_workers_change_at_a_reload() {
    // io_workers from the command line would stand over the files, as in PostgreSQL:
    // the server starts with the default, 3, under the default method, worker.
    let server = TestServer::start_with("reload_io_workers", &["-c", "shared_buffers=1MB"]);
    let pid = server.pid().expect("running");
    let client = server.client().await;
    client
        .batch_execute(
            "CREATE TABLE w AS SELECT i, md5(i::text) AS f FROM generate_series(1, 40000) i",
        )
        .await
        .unwrap();
    assert_eq!(io_worker_threads(pid), 3);
    for workers in [5, 1, 2] {
        iolab_tests::run_script(
            &client,
            &format!("ALTER SYSTEM SET io_workers = {workers}; SELECT pg_reload_conf()"),
        )
        .await
        .unwrap();
        assert_eq!(
            setting_and_pending_restart(&client, "io_workers").await,
            (workers.to_string(), false)
        );
        assert_eq!(io_worker_threads(pid), workers, "io_workers = {workers}");
        let listed = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'io worker'",
                &[],
            )
            .await
            .unwrap();
        assert_eq!(listed.get::<_, i64>(0), workers as i64);
        // The table is 20 times the pool: the scan reads it through the workers.
        let row = client
            .query_one("SELECT count(*), sum(i) FROM w", &[])
            .await
            .unwrap();
        assert_eq!(
            (row.get::<_, i64>(0), row.get::<_, i64>(1)),
            (40000, 40000 * 40001 / 2)
        );
    }
    assert!(
        server
            .log()
            .contains("parameter \"io_workers\" changed to \"2\""),
        "{}",
        server.log()
    );
}

/// `full_page_writes` and `fsync` change at a reload, as in PostgreSQL: after it, the first
/// change of a page after a checkpoint logs no image, and a commit syncs nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_page_writes_and_fsync_change_at_a_reload() {
    let server = TestServer::start("reload_wal");
    let client = server.client().await;
    let count = |sql: &'static str| {
        let client = &client;
        async move {
            client
                .batch_execute("SELECT pg_stat_force_next_flush()")
                .await
                .unwrap();
            let row = client.query_one(sql, &[]).await.unwrap();
            row.get::<_, i64>(0)
        }
    };
    let images = "SELECT wal_fpi FROM pg_stat_wal";
    let wal_syncs = "SELECT sum(fsyncs)::bigint FROM pg_stat_io WHERE object = 'wal'";
    client
        .batch_execute(
            "CREATE TABLE f AS SELECT i, md5(i::text) AS m FROM generate_series(1, 2000) i",
        )
        .await
        .unwrap();

    // As started: images after a checkpoint, a sync per commit.
    client.batch_execute("CHECKPOINT").await.unwrap();
    let (images_before, syncs_before) = (count(images).await, count(wal_syncs).await);
    client
        .batch_execute("UPDATE f SET m = 'x' WHERE i % 50 = 0")
        .await
        .unwrap();
    assert!(count(images).await > images_before);
    assert!(count(wal_syncs).await > syncs_before);

    iolab_tests::run_script(
        &client,
        "ALTER SYSTEM SET full_page_writes = off;
             ALTER SYSTEM SET fsync = off;
             SELECT pg_reload_conf();",
    )
    .await
    .unwrap();
    for name in ["full_page_writes", "fsync"] {
        assert_eq!(
            setting_and_pending_restart(&client, name).await,
            ("off".to_string(), false),
            "{name}"
        );
    }
    client.batch_execute("CHECKPOINT").await.unwrap();
    let (images_before, syncs_before) = (count(images).await, count(wal_syncs).await);
    client
        .batch_execute("UPDATE f SET m = 'y' WHERE i % 50 = 0")
        .await
        .unwrap();
    assert_eq!(count(images).await, images_before);
    assert_eq!(count(wal_syncs).await, syncs_before);
    let row = client
        .query_one("SELECT count(*) FROM f WHERE m = 'y'", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 40);
}
