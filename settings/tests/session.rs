//! Session behaviour: SET / SHOW / RESET, transactions and savepoints, RESET ALL, reports,
//! EXPLAIN settings, pg_settings, permissions, startup parameters. Expected values were
//! observed on PostgreSQL 18.4 unless a test says otherwise.

use iolab_settings::{
    flatten_set_arguments, sqlstate, DateFieldOrder, DateOutputStyle, IntervalStyle, IoMethod,
    ReadStreamAdvice, ServerSettings, SessionSettings, SetArgument,
};

fn session() -> SessionSettings {
    let mut session = SessionSettings::new(&ServerSettings::defaults());
    session.set_session_user("alice", true);
    session
}

fn non_superuser_session() -> SessionSettings {
    let mut session = SessionSettings::new(&ServerSettings::defaults());
    session.set_session_user("bob", false);
    session
}

fn show(session: &SessionSettings, name: &str) -> String {
    session.get(name).unwrap()
}

#[test]
fn defaults_show_as_postgres_does() {
    let s = session();
    for (name, shown) in [
        ("shared_buffers", "128MB"),
        ("work_mem", "4MB"),
        ("maintenance_work_mem", "64MB"),
        ("effective_io_concurrency", "16"),
        ("maintenance_io_concurrency", "16"),
        ("io_combine_limit", "128kB"),
        ("io_max_combine_limit", "128kB"),
        ("io_method", "worker"),
        ("io_workers", "3"),
        ("io_max_concurrency", "-1"),
        ("statement_timeout", "0"),
        ("segment_size", "1GB"),
        ("wal_segment_size", "16MB"),
        ("block_size", "8192"),
        ("effective_cache_size", "4GB"),
        ("max_stack_depth", "2MB"),
        ("temp_buffers", "8MB"),
        ("DateStyle", "ISO, MDY"),
        ("TimeZone", "UTC"),
        ("search_path", "\"$user\", public"),
        ("client_encoding", "UTF8"),
        ("server_encoding", "UTF8"),
        ("server_version", "18.0"),
        ("server_version_num", "180000"),
        ("data_checksums", "on"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("transaction_isolation", "read committed"),
        ("default_transaction_isolation", "read committed"),
        ("random_page_cost", "4"),
        ("cpu_operator_cost", "0.0025"),
        ("huge_pages", "try"),
        ("debug_io_direct", ""),
        ("read_stream_advice", "pg18"),
        ("stats_history_interval", "1s"),
        ("stats_history_retention", "1h"),
        ("is_superuser", "on"),
        ("session_authorization", "alice"),
        ("role", "none"),
    ] {
        assert_eq!(show(&s, name), shown, "{name}");
    }
}

#[test]
fn names_are_case_insensitive_and_show_uses_canonical_spelling() {
    let mut s = session();
    s.set("datestyle", "sql, dmy", false).unwrap();
    assert_eq!(show(&s, "DATESTYLE"), "SQL, DMY");
    assert_eq!(
        s.show("datestyle").unwrap(),
        ("DateStyle".to_string(), "SQL, DMY".to_string())
    );
    s.set("TIMEZONE", "utc", false).unwrap();
    assert_eq!(
        s.show("timezone").unwrap(),
        ("TimeZone".to_string(), "UTC".to_string())
    );
    s.set("Work_Mem", "8MB", false).unwrap();
    assert_eq!(show(&s, "WORK_MEM"), "8MB");
}

#[test]
fn memory_and_time_values_round_trip_through_show() {
    let mut s = session();
    for (name, input, shown) in [
        ("work_mem", "16MB", "16MB"),
        ("work_mem", "1GB", "1GB"),
        ("work_mem", "1536kB", "1536kB"),
        ("work_mem", "1.5MB", "1536kB"),
        ("work_mem", "65536", "64MB"),
        ("maintenance_work_mem", "1TB", "1TB"),
        ("io_combine_limit", "256kB", "256kB"),
        ("io_combine_limit", "1MB", "1MB"),
        ("io_combine_limit", "4", "32kB"),
        ("effective_cache_size", "8GB", "8GB"),
        ("statement_timeout", "1s", "1s"),
        ("statement_timeout", "500ms", "500ms"),
        ("statement_timeout", "5min", "5min"),
        ("statement_timeout", "1500", "1500ms"),
        ("statement_timeout", "3600000", "1h"),
        ("statement_timeout", "0", "0"),
        ("lock_timeout", "2d", "2d"),
        ("vacuum_cost_delay", "1.5ms", "1500us"),
    ] {
        s.set(name, input, false).unwrap();
        let first = show(&s, name);
        assert_eq!(first, shown, "{name} = {input}");
        // What SHOW prints is itself a valid input that means the same value.
        s.set(name, &first, false).unwrap();
        assert_eq!(show(&s, name), first, "{name} round trip");
    }
    s.set("io_combine_limit", "64kB", false).unwrap();
    assert_eq!(s.io_combine_limit(), 8);
    s.set("work_mem", "64MB", false).unwrap();
    assert_eq!(s.work_mem_kb(), 65536);
    s.set("statement_timeout", "2min", false).unwrap();
    assert_eq!(s.statement_timeout_ms(), 120_000);
}

#[test]
fn error_paths_use_postgres_wording() {
    let mut s = session();
    let error = s.set("foo", "1", false).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        ("42704", "unrecognized configuration parameter \"foo\"")
    );

    let error = s.set("work_mem", "abc", false).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        ("22023", "invalid value for parameter \"work_mem\": \"abc\"")
    );
    assert_eq!(error.hint, None);

    let error = s.set("work_mem", "10 XB", false).unwrap_err();
    assert_eq!(
        error.hint.as_deref(),
        Some("Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".")
    );

    let error = s.set("statement_timeout", "1 hour", false).unwrap_err();
    assert_eq!(
        error.hint.as_deref(),
        Some(
            "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\"."
        )
    );

    let error = s
        .set("effective_io_concurrency", "16384", false)
        .unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        ("22023", "16384 is outside the valid range for parameter \"effective_io_concurrency\" (0 .. 1000)")
    );

    let error = s.set("work_mem", "63kB", false).unwrap_err();
    assert_eq!(
        error.message,
        "63 kB is outside the valid range for parameter \"work_mem\" (64 kB .. 2147483647 kB)"
    );

    let error = s.set("io_combine_limit", "2MB", false).unwrap_err();
    assert_eq!(
        error.message,
        "256 8kB is outside the valid range for parameter \"io_combine_limit\" (1 8kB .. 128 8kB)"
    );

    let error = s.set("work_mem", "100TB", false).unwrap_err();
    assert_eq!(error.hint.as_deref(), Some("Value exceeds integer range."));

    let error = s.set("bytea_output", "foo", false).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.hint.as_deref()),
        ("22023", Some("Available values: escape, hex."))
    );

    let error = s.set("track_io_timing", "maybe", false).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        (
            "22023",
            "parameter \"track_io_timing\" requires a Boolean value"
        )
    );

    let error = s.set("shared_buffers", "1GB", false).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        (
            "55P02",
            "parameter \"shared_buffers\" cannot be changed without restarting the server"
        )
    );
    // The context is checked before the value, as in PostgreSQL.
    let error = s.set("io_method", "foo", false).unwrap_err();
    assert_eq!(
        error.message,
        "parameter \"io_method\" cannot be changed without restarting the server"
    );

    let error = s.set("server_version", "1", false).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        ("55P02", "parameter \"server_version\" cannot be changed")
    );

    let error = s.set("io_workers", "4", false).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        ("55P02", "parameter \"io_workers\" cannot be changed now")
    );

    let error = s.reset("transaction_isolation").unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        (
            "0A000",
            "parameter \"transaction_isolation\" cannot be reset"
        )
    );

    let error = s.reset("shared_buffers").unwrap_err();
    assert_eq!(error.sqlstate, "55P02");

    let error = s.set("a-b.c", "1", false).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        ("42602", "invalid configuration parameter name \"a-b.c\"")
    );
    assert_eq!(
        error.detail.as_deref(),
        Some("Custom parameter names must be two or more simple identifiers separated by dots.")
    );

    let error = s.get("lc_collate").unwrap_err();
    assert_eq!(error.sqlstate, sqlstate::UNDEFINED_OBJECT);
}

#[test]
fn io_method_enum_hint_lists_iolab_methods() {
    let mut server = ServerSettings::defaults();
    let error = server.apply_command_line("io_method", "foo").unwrap_err();
    assert_eq!(
        error.message,
        "invalid value for parameter \"io_method\": \"foo\""
    );
    assert_eq!(
        error.hint.as_deref(),
        Some("Available values: sync, worker, io_uring.")
    );
    server.apply_command_line("io_method", "IO_URING").unwrap();
    assert_eq!(server.io_method(), IoMethod::IoUring);
    assert_eq!(server.get("io_method").unwrap(), "io_uring");
}

#[test]
fn client_encoding_accepts_only_utf8_and_sql_ascii() {
    let mut s = session();
    for alias in ["utf8", "UTF-8", "Unicode", "utf_8"] {
        s.set("client_encoding", alias, false).unwrap();
        assert_eq!(show(&s, "client_encoding"), "UTF8");
    }
    s.set("client_encoding", "sql_ascii", false).unwrap();
    assert_eq!(s.client_encoding(), "SQL_ASCII");
    let error = s.set("client_encoding", "LATIN1", false).unwrap_err();
    assert_eq!(error.sqlstate, "0A000");
    assert_eq!(
        error.message,
        "invalid value for parameter \"client_encoding\": \"LATIN1\""
    );
    assert_eq!(
        error.detail.as_deref(),
        Some("Conversion between LATIN1 and UTF8 is not supported.")
    );
    let error = s.set("client_encoding", "win1252", false).unwrap_err();
    assert_eq!(
        error.detail.as_deref(),
        Some("Conversion between WIN1252 and UTF8 is not supported.")
    );
    let error = s.set("client_encoding", "klingon", false).unwrap_err();
    assert_eq!((error.sqlstate, error.detail), ("22023", None));
}

#[test]
fn time_zones_are_zones_of_the_database_or_fixed_offsets() {
    let mut s = session();
    s.set("TimeZone", "+02:00", false).unwrap();
    assert_eq!(s.time_zone(), "+02:00");
    s.set("TimeZone", "-5", false).unwrap();
    assert_eq!(s.time_zone(), "<-05>+05");
    s.set("TimeZone", "america/new_york", false).unwrap();
    assert_eq!(s.time_zone(), "America/New_York");
    let error = s.set("TimeZone", "Mars/Olympus", false).unwrap_err();
    assert_eq!(
        error.message,
        "invalid value for parameter \"TimeZone\": \"Mars/Olympus\""
    );
    let error = s
        .set("TimeZone", "CET-1CEST,M3.5.0,M10.5.0/3", false)
        .unwrap_err();
    assert!(error.hint.unwrap().contains("daylight-saving rules"));
}

#[test]
fn date_style_keeps_the_half_not_named() {
    let mut s = session();
    s.set("DateStyle", "German", false).unwrap();
    assert_eq!(show(&s, "DateStyle"), "German, DMY");
    s.set("DateStyle", "SQL", false).unwrap();
    assert_eq!(show(&s, "DateStyle"), "SQL, DMY");
    s.set("DateStyle", "YMD", false).unwrap();
    assert_eq!(show(&s, "DateStyle"), "SQL, YMD");
    let style = s.date_style();
    assert_eq!(
        (style.output, style.order),
        (DateOutputStyle::Sql, DateFieldOrder::Ymd)
    );
}

#[test]
fn set_local_reverts_at_transaction_end() {
    let mut s = session();
    s.begin_transaction();
    s.set("work_mem", "2MB", true).unwrap();
    assert_eq!(show(&s, "work_mem"), "2MB");
    s.commit_transaction();
    assert_eq!(show(&s, "work_mem"), "4MB");

    s.begin_transaction();
    s.set("work_mem", "2MB", true).unwrap();
    s.abort_transaction();
    assert_eq!(show(&s, "work_mem"), "4MB");
}

#[test]
fn set_is_undone_by_rollback_and_kept_by_commit() {
    let mut s = session();
    s.begin_transaction();
    s.set("work_mem", "1MB", false).unwrap();
    s.abort_transaction();
    assert_eq!(show(&s, "work_mem"), "4MB");

    s.begin_transaction();
    s.set("work_mem", "1MB", false).unwrap();
    s.commit_transaction();
    assert_eq!(show(&s, "work_mem"), "1MB");
}

#[test]
fn set_then_set_local_commits_the_set_value() {
    // BEGIN; SET 3MB; SET LOCAL 5MB; SHOW → 5MB; COMMIT; SHOW → 3MB
    let mut s = session();
    s.begin_transaction();
    s.set("work_mem", "3MB", false).unwrap();
    s.set("work_mem", "5MB", true).unwrap();
    assert_eq!(show(&s, "work_mem"), "5MB");
    s.commit_transaction();
    assert_eq!(show(&s, "work_mem"), "3MB");

    // BEGIN; SET LOCAL 5MB; SET 6MB; COMMIT → 6MB
    s.begin_transaction();
    s.set("work_mem", "5MB", true).unwrap();
    s.set("work_mem", "6MB", false).unwrap();
    s.commit_transaction();
    assert_eq!(show(&s, "work_mem"), "6MB");
}

#[test]
fn savepoints_nest() {
    // BEGIN; SET 7MB; SAVEPOINT a; SET LOCAL 8MB; RELEASE a; SHOW → 8MB; COMMIT → 7MB
    let mut s = session();
    s.begin_transaction();
    s.set("work_mem", "7MB", false).unwrap();
    s.begin_savepoint();
    s.set("work_mem", "8MB", true).unwrap();
    s.release_savepoint();
    assert_eq!(show(&s, "work_mem"), "8MB");
    s.commit_transaction();
    assert_eq!(show(&s, "work_mem"), "7MB");

    // BEGIN; SET 9MB; SAVEPOINT a; SET 10MB; ROLLBACK TO a → 9MB; COMMIT → 9MB
    s.begin_transaction();
    s.set("work_mem", "9MB", false).unwrap();
    s.begin_savepoint();
    s.set("work_mem", "10MB", false).unwrap();
    s.rollback_to_savepoint();
    assert_eq!(show(&s, "work_mem"), "9MB");
    s.set("work_mem", "11MB", false).unwrap();
    s.rollback_to_savepoint();
    assert_eq!(show(&s, "work_mem"), "9MB");
    s.commit_transaction();
    assert_eq!(show(&s, "work_mem"), "9MB");

    // BEGIN; SET LOCAL 1MB; SAVEPOINT a; SET 2MB; RELEASE; COMMIT → 2MB
    s.begin_transaction();
    s.set("work_mem", "1MB", true).unwrap();
    s.begin_savepoint();
    s.set("work_mem", "2MB", false).unwrap();
    s.release_savepoint();
    s.commit_transaction();
    assert_eq!(show(&s, "work_mem"), "2MB");

    // A savepoint still open at COMMIT is committed; at ROLLBACK rolled back.
    s.begin_transaction();
    s.begin_savepoint();
    s.set("work_mem", "3MB", false).unwrap();
    s.commit_transaction();
    assert_eq!(show(&s, "work_mem"), "3MB");
    s.begin_transaction();
    s.begin_savepoint();
    s.set("work_mem", "4MB", false).unwrap();
    s.abort_transaction();
    assert_eq!(show(&s, "work_mem"), "3MB");
    assert!(!s.in_transaction());
}

#[test]
fn set_local_and_set_config_local_last_one_statement_outside_blocks() {
    let mut s = session();
    // The server wraps each statement in a transaction; inside it the value is visible.
    s.begin_transaction();
    assert_eq!(
        s.set_config("work_mem", Some("12MB"), true).unwrap(),
        "12MB"
    );
    assert_eq!(show(&s, "work_mem"), "12MB");
    s.commit_transaction();
    assert_eq!(show(&s, "work_mem"), "4MB");
    // With no transaction open at all, SET LOCAL changes nothing.
    s.set("work_mem", "13MB", true).unwrap();
    assert_eq!(show(&s, "work_mem"), "4MB");
}

#[test]
fn set_config_returns_the_shown_value_and_null_resets() {
    let mut s = session();
    assert_eq!(
        s.set_config("statement_timeout", Some("1500"), false)
            .unwrap(),
        "1500ms"
    );
    assert_eq!(
        s.set_config("work_mem", Some("12MB"), false).unwrap(),
        "12MB"
    );
    assert_eq!(s.set_config("work_mem", None, false).unwrap(), "4MB");
    assert_eq!(
        s.set_config("DateStyle", Some("german"), false).unwrap(),
        "German, DMY"
    );
    assert_eq!(
        s.set_config("search_path", Some("a,B"), false).unwrap(),
        "a,B"
    );
    assert_eq!(s.search_path(), vec!["a".to_string(), "b".to_string()]);
    let error = s
        .set_config("search_path", Some("\"unterminated"), false)
        .unwrap_err();
    assert_eq!(error.detail.as_deref(), Some("List syntax is invalid."));
}

#[test]
fn reset_and_reset_all_return_to_the_session_start_values() {
    let mut s = session();
    s.apply_startup_parameter("application_name", "psql")
        .unwrap();
    s.set("application_name", "other", false).unwrap();
    s.set("work_mem", "1GB", false).unwrap();
    s.set("enable_seqscan", "off", false).unwrap();
    s.set("x.y", "hello", false).unwrap();
    s.reset("application_name").unwrap();
    assert_eq!(
        show(&s, "application_name"),
        "psql",
        "RESET returns to the startup packet's value"
    );
    s.set("application_name", "other", false).unwrap();
    s.reset_all();
    assert_eq!(show(&s, "application_name"), "psql");
    assert_eq!(show(&s, "work_mem"), "4MB");
    assert_eq!(show(&s, "enable_seqscan"), "on");
    assert_eq!(show(&s, "x.y"), "", "placeholders reset to empty");
    assert_eq!(
        show(&s, "session_authorization"),
        "alice",
        "RESET ALL leaves session_authorization"
    );

    // RESET ALL inside a rolled-back transaction is undone.
    s.set("work_mem", "2MB", false).unwrap();
    s.begin_transaction();
    s.reset_all();
    assert_eq!(show(&s, "work_mem"), "4MB");
    s.abort_transaction();
    assert_eq!(show(&s, "work_mem"), "2MB");
}

#[test]
fn reset_all_skips_transaction_settings() {
    let mut s = session();
    s.begin_transaction();
    s.set("transaction_isolation", "serializable", false)
        .unwrap();
    s.reset_all();
    assert_eq!(show(&s, "transaction_isolation"), "serializable");
    s.commit_transaction();
}

#[test]
fn transactions_take_their_characteristics_from_the_defaults() {
    let mut s = session();
    s.set("default_transaction_isolation", "serializable", false)
        .unwrap();
    s.set("default_transaction_read_only", "on", false).unwrap();
    s.begin_transaction();
    assert_eq!(s.transaction_isolation(), "serializable");
    assert!(s.transaction_read_only());
    s.commit_transaction();
}

#[test]
fn placeholders_behave_like_postgres() {
    let mut s = session();
    assert_eq!(
        s.get("x.y").unwrap_err().message,
        "unrecognized configuration parameter \"x.y\""
    );
    assert_eq!(s.get_if_exists("x.y").unwrap(), None);
    assert_eq!(s.get_if_exists("nope").unwrap(), None);
    s.set("x.y", "hello", false).unwrap();
    assert_eq!(show(&s, "X.Y"), "hello");
    assert_eq!(s.get_if_exists("x.y").unwrap().as_deref(), Some("hello"));
    s.set("x.y.z", "1", false).unwrap();
    assert_eq!(s.get("x.z").unwrap_err().sqlstate, "42704");
    // Set inside a rolled-back transaction: the placeholder stays, empty.
    s.begin_transaction();
    s.set("app.user_id", "42", false).unwrap();
    s.abort_transaction();
    assert_eq!(show(&s, "app.user_id"), "");
    // Hidden from SHOW ALL and pg_settings.
    assert!(s.show_all().iter().all(|(name, _, _)| !name.contains('.')));
    assert!(s
        .pg_settings_rows()
        .iter()
        .all(|row| !row.name.contains('.')));
}

#[test]
fn show_all_is_sorted_ignoring_case_and_hides_hidden_settings() {
    let s = session();
    let rows = s.show_all();
    let names: Vec<&str> = rows.iter().map(|(name, _, _)| *name).collect();
    let mut sorted = names.clone();
    sorted.sort_by_key(|name| name.to_ascii_lowercase());
    assert_eq!(names, sorted);
    for hidden in ["is_superuser", "session_authorization", "role"] {
        assert!(!names.contains(&hidden), "{hidden}");
    }
    let work_mem = rows
        .iter()
        .find(|(name, _, _)| *name == "work_mem")
        .unwrap();
    assert_eq!(work_mem.1, "4MB");
    assert_eq!(
        work_mem.2,
        "Sets the maximum memory to be used for query workspaces."
    );
    let position = |name| names.iter().position(|n| *n == name).unwrap();
    assert!(
        position("data_directory") < position("DateStyle")
            && position("DateStyle") < position("debug_io_direct")
    );
}

#[test]
fn pg_settings_rows_track_sources() {
    let mut s = session();
    s.begin_transaction();
    s.set("work_mem", "1MB", true).unwrap();
    s.set("cpu_tuple_cost", "0.02", false).unwrap();
    let rows = s.pg_settings_rows();
    let row = |name: &str| rows.iter().find(|row| row.name == name).unwrap().clone();
    let work_mem = row("work_mem");
    assert_eq!(
        (
            work_mem.setting.as_str(),
            work_mem.source,
            work_mem.reset_val.as_deref()
        ),
        ("1024", "session", Some("4096"))
    );
    assert_eq!(
        (work_mem.unit, work_mem.vartype, work_mem.context),
        (Some("kB"), "integer", "user")
    );
    assert_eq!(
        (work_mem.min_val.as_deref(), work_mem.max_val.as_deref()),
        (Some("64"), Some("2147483647"))
    );
    let cost = row("cpu_tuple_cost");
    assert_eq!(
        (cost.setting.as_str(), cost.max_val.as_deref()),
        ("0.02", Some("1.79769e+308"))
    );
    s.commit_transaction();
    let rows = s.pg_settings_rows();
    let row = |name: &str| rows.iter().find(|row| row.name == name).unwrap().clone();
    assert_eq!(
        (row("work_mem").setting.as_str(), row("work_mem").source),
        ("4096", "default")
    );
    assert_eq!(
        (
            row("cpu_tuple_cost").setting.as_str(),
            row("cpu_tuple_cost").source
        ),
        ("0.02", "session")
    );
    let io_method = row("io_method");
    assert_eq!(io_method.enumvals, Some(vec!["sync", "worker", "io_uring"]));
    assert_eq!(
        (io_method.context, io_method.vartype, io_method.min_val),
        ("postmaster", "enum", None)
    );
    let isolation = row("default_transaction_isolation");
    assert_eq!(isolation.enumvals.unwrap()[1], "repeatable read");
    let shared_buffers = row("shared_buffers");
    assert_eq!(
        (shared_buffers.setting.as_str(), shared_buffers.unit),
        ("16384", Some("8kB"))
    );
    assert!(!shared_buffers.pending_restart);
}

#[test]
fn explain_settings_list_changed_settings_in_the_order_they_changed() {
    // Observed on PostgreSQL 18.4:
    //   SET random_page_cost = 1.1; SET work_mem='8MB'; SET effective_io_concurrency=32;
    //   → Settings: random_page_cost = '1.1', work_mem = '8MB', effective_io_concurrency = '32'
    //   SET work_mem = '16MB' keeps its place; RESET work_mem; SET work_mem='2MB' moves it last.
    let mut s = session();
    assert!(s.explain_settings().is_empty());
    s.set("random_page_cost", "1.1", false).unwrap();
    s.set("work_mem", "8MB", false).unwrap();
    s.set("effective_io_concurrency", "32", false).unwrap();
    s.set("track_io_timing", "on", false).unwrap(); // not an EXPLAIN setting
    let names = |s: &SessionSettings| {
        s.explain_settings()
            .into_iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        names(&s),
        [
            "random_page_cost=1.1",
            "work_mem=8MB",
            "effective_io_concurrency=32"
        ]
    );
    s.set("work_mem", "16MB", false).unwrap();
    assert_eq!(
        names(&s),
        [
            "random_page_cost=1.1",
            "work_mem=16MB",
            "effective_io_concurrency=32"
        ]
    );
    s.reset("work_mem").unwrap();
    s.set("work_mem", "2MB", false).unwrap();
    assert_eq!(
        names(&s),
        [
            "random_page_cost=1.1",
            "effective_io_concurrency=32",
            "work_mem=2MB"
        ]
    );
    s.set("enable_seqscan", "off", false).unwrap();
    s.set("search_path", "a, b", false).unwrap();
    assert_eq!(
        names(&s),
        [
            "random_page_cost=1.1",
            "effective_io_concurrency=32",
            "work_mem=2MB",
            "enable_seqscan=off",
            "search_path=a, b"
        ]
    );
    s.reset_all();
    // Set to the boot value: not listed.
    s.set("effective_io_concurrency", "16", false).unwrap();
    assert!(s.explain_settings().is_empty());
}

#[test]
fn parameter_status_reports_changes_once() {
    let mut s = session();
    let initial = s.parameter_status_all();
    let names: Vec<&str> = initial.iter().map(|(name, _)| *name).collect();
    for reported in [
        "application_name",
        "client_encoding",
        "DateStyle",
        "default_transaction_read_only",
        "in_hot_standby",
        "integer_datetimes",
        "IntervalStyle",
        "is_superuser",
        "scram_iterations",
        "search_path",
        "server_encoding",
        "server_version",
        "session_authorization",
        "standard_conforming_strings",
        "TimeZone",
    ] {
        assert!(names.contains(&reported), "{reported} is reported");
    }
    assert_eq!(names.len(), 15);
    assert!(s.take_parameter_status_changes().is_empty());

    s.set("application_name", "app", false).unwrap();
    s.set("work_mem", "1GB", false).unwrap();
    assert_eq!(
        s.take_parameter_status_changes(),
        vec![("application_name", "app".to_string())]
    );
    assert!(s.take_parameter_status_changes().is_empty());

    // Set and rolled back before the next report: nothing to send.
    s.begin_transaction();
    s.set("TimeZone", "+02:00", false).unwrap();
    s.abort_transaction();
    assert!(s.take_parameter_status_changes().is_empty());

    s.begin_transaction();
    s.set("DateStyle", "german", true).unwrap();
    assert_eq!(
        s.take_parameter_status_changes(),
        vec![("DateStyle", "German, DMY".to_string())]
    );
    s.commit_transaction();
    assert_eq!(
        s.take_parameter_status_changes(),
        vec![("DateStyle", "ISO, MDY".to_string())]
    );
}

#[test]
fn superuser_settings_need_a_superuser() {
    let mut s = non_superuser_session();
    let error = s.set("track_io_timing", "on", false).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        (
            "42501",
            "permission denied to set parameter \"track_io_timing\""
        )
    );
    s.set("work_mem", "8MB", false).unwrap();
    let error = s.get("config_file").unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        ("42501", "permission denied to examine \"config_file\"")
    );
    assert_eq!(
        error.detail.as_deref(),
        Some("Only roles with privileges of the \"pg_read_all_settings\" role may examine this parameter.")
    );
    assert!(s
        .show_all()
        .iter()
        .all(|(name, _, _)| *name != "config_file"));
    assert!(s
        .pg_settings_rows()
        .iter()
        .all(|row| row.name != "config_file" && row.name != "data_directory"));
    assert_eq!(show(&s, "is_superuser"), "off");
    let mut su = session();
    su.set("track_io_timing", "on", false).unwrap();
    assert!(su.track_io_timing());
}

#[test]
fn role_and_session_authorization_only_name_the_session_user() {
    let mut s = session();
    s.set("role", "NONE", false).unwrap();
    assert_eq!(show(&s, "role"), "none");
    s.set("role", "alice", false).unwrap();
    s.reset("role").unwrap();
    assert_eq!(show(&s, "role"), "none");
    s.set("session_authorization", "alice", false).unwrap();
    let error = s
        .set("session_authorization", "mallory", false)
        .unwrap_err();
    assert_eq!(error.sqlstate, "0A000");
    assert_eq!(
        s.set("role", "mallory", false).unwrap_err().sqlstate,
        "0A000"
    );
}

#[test]
fn startup_parameters_become_reset_values() {
    let mut s = SessionSettings::new(&ServerSettings::defaults());
    s.set_session_user("carol", true);
    s.apply_startup_parameter("DateStyle", "ISO, DMY").unwrap();
    s.apply_startup_parameter("extra_float_digits", "3")
        .unwrap();
    s.apply_startup_options("-c work_mem=8MB --statement-timeout=5s -c x.y=a\\ b")
        .unwrap();
    assert_eq!(show(&s, "work_mem"), "8MB");
    assert_eq!(show(&s, "statement_timeout"), "5s");
    assert_eq!(show(&s, "x.y"), "a b");
    s.set("work_mem", "1MB", false).unwrap();
    s.reset_all();
    assert_eq!(show(&s, "work_mem"), "8MB");
    assert_eq!(show(&s, "DateStyle"), "ISO, DMY");
    assert_eq!(s.extra_float_digits(), 3);
    let row = s
        .pg_settings_rows()
        .into_iter()
        .find(|row| row.name == "DateStyle")
        .unwrap();
    assert_eq!(row.source, "client");

    let error = s
        .apply_startup_parameter("shared_buffers", "1GB")
        .unwrap_err();
    assert_eq!(error.sqlstate, "55P02");
    let error = s.apply_startup_parameter("foo", "1").unwrap_err();
    assert_eq!(error.sqlstate, "42704");
    let error = s.apply_startup_options("-c work_mem").unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        ("42601", "-c work_mem requires a value")
    );
    let error = s.apply_startup_options("-B 100").unwrap_err();
    assert_eq!(
        error.message,
        "invalid command-line argument for server process: -B"
    );
}

#[test]
fn clones_are_independent_snapshots() {
    let mut s = session();
    let snapshot = s.clone();
    s.set("effective_io_concurrency", "64", false).unwrap();
    assert_eq!(snapshot.effective_io_concurrency(), 16);
    assert_eq!(s.effective_io_concurrency(), 64);
}

#[test]
fn typed_getters_read_the_current_values() {
    let mut s = session();
    assert_eq!(s.read_stream_advice(), ReadStreamAdvice::Pg18);
    s.set("read_stream_advice", "PG17", false).unwrap();
    assert_eq!(s.read_stream_advice(), ReadStreamAdvice::Pg17);
    assert_eq!(s.get("read_stream_advice").unwrap(), "pg17");
    let error = s.set("read_stream_advice", "sometimes", false).unwrap_err();
    assert_eq!(
        error.hint.as_deref(),
        Some("Available values: pg17, pg18, always, never.")
    );
    assert_eq!(s.interval_style(), IntervalStyle::Postgres);
    assert_eq!(
        s.search_path(),
        vec!["$user".to_string(), "public".to_string()]
    );
    assert_eq!(s.io_method(), IoMethod::Worker);
    assert_eq!(s.effective_io_combine_limit(), 16);
    assert_eq!(s.application_name(), "");
    assert!(!s.track_io_timing());
    assert_eq!(s.int_value("DEFAULT_STATISTICS_TARGET"), Some(100));
    assert_eq!(s.bool_value("work_mem"), None);
    assert_eq!(s.real_value("random_page_cost"), Some(4.0));
    assert_eq!(s.stats_history_interval_ms(), 1000);
    assert_eq!(s.stats_history_retention_s(), 3600);
    assert_eq!(s.shared_buffers_blocks(), 16384);
}

#[test]
fn set_arguments_flatten_like_postgres() {
    use SetArgument::{Number, Text};
    assert_eq!(
        flatten_set_arguments("search_path", &[Text("a"), Text("B c"), Text("public")]).unwrap(),
        "a, \"B c\", public"
    );
    assert_eq!(
        flatten_set_arguments("search_path", &[Text("a, b")]).unwrap(),
        "\"a, b\""
    );
    assert_eq!(
        flatten_set_arguments("search_path", &[Text("$user"), Text("public")]).unwrap(),
        "\"$user\", public"
    );
    assert_eq!(
        flatten_set_arguments("search_path", &[Text("\"unterminated")]).unwrap(),
        "\"\"\"unterminated\""
    );
    assert_eq!(
        flatten_set_arguments("DateStyle", &[Text("iso"), Text("mdy")]).unwrap(),
        "iso, mdy"
    );
    assert_eq!(
        flatten_set_arguments("work_mem", &[Number("64")]).unwrap(),
        "64"
    );
    let error = flatten_set_arguments("work_mem", &[Number("1"), Number("2")]).unwrap_err();
    assert_eq!(
        (error.sqlstate, error.message.as_str()),
        ("22023", "SET work_mem takes only one argument")
    );
    let mut s = session();
    let flattened = flatten_set_arguments("search_path", &[Text("A"), Text("b")]).unwrap();
    s.set("search_path", &flattened, false).unwrap();
    assert_eq!(show(&s, "search_path"), "\"A\", b");
    assert_eq!(s.search_path(), vec!["A".to_string(), "b".to_string()]);
}

#[test]
fn settings_can_cross_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<ServerSettings>();
    assert_send_sync::<SessionSettings>();
}

#[test]
fn transaction_characteristics_show_as_overrides() {
    let s = session();
    let rows = s.pg_settings_rows();
    let isolation = rows
        .iter()
        .find(|row| row.name == "transaction_isolation")
        .unwrap();
    assert_eq!(
        (isolation.setting.as_str(), isolation.source),
        ("read committed", "override")
    );
}
