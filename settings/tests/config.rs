//! `iolab.conf` parsing and server start-up: values, sources and errors as PostgreSQL 18.4
//! reports them (observed with `postgres -C name -c config_file=…`).

use iolab_settings::{
    parse_config_file, ConfigFileEntry, FileLocation, ServerSettings, SessionSettings, Source,
};

const FILE: &str = "/etc/iolab/iolab.conf";

fn entries(text: &str) -> Vec<(String, String, u32)> {
    parse_config_file(text, FILE)
        .unwrap()
        .into_iter()
        .map(|ConfigFileEntry { name, value, line }| (name, value, line))
        .collect()
}

fn syntax_error(text: &str) -> (String, &'static str) {
    let error = parse_config_file(text, FILE).unwrap_err();
    (error.message, error.sqlstate)
}

fn entry(name: &str, value: &str, line: u32) -> (String, String, u32) {
    (name.to_string(), value.to_string(), line)
}

#[test]
fn lines_values_and_comments() {
    let text = "# iolab.conf\n\
                \n\
                shared_buffers = 1GB          # restart\n\
                work_mem 8MB\n\
                search_path = '\"$user\", public'\n\
                listen_addresses = a/b:c\n\
                x.y = 'a#b' # not a comment inside quotes\n\
                effective_io_concurrency=-8\n\
                random_page_cost = 1.1\n\
                port = 0x100\n\
                \tio_method\t=\tsync\r\n\
                application_name = 'a\\101b\\tc''d\\\\e\\qf'\n\
                last = 'no newline at the end'";
    assert_eq!(
        entries(text),
        vec![
            entry("shared_buffers", "1GB", 3),
            entry("work_mem", "8MB", 4),
            entry("search_path", "\"$user\", public", 5),
            entry("listen_addresses", "a/b:c", 6),
            entry("x.y", "a#b", 7),
            entry("effective_io_concurrency", "-8", 8),
            entry("random_page_cost", "1.1", 9),
            entry("port", "0x100", 10),
            entry("io_method", "sync", 11),
            entry("application_name", "aAb\tc'd\\eqf", 12),
            entry("last", "no newline at the end", 13),
        ]
    );
}

#[test]
fn syntax_errors_name_file_line_and_token() {
    let near = |line: u32, token: &str| {
        format!("syntax error in file \"{FILE}\" line {line}, near token \"{token}\"")
    };
    let end_of_line =
        |line: u32| format!("syntax error in file \"{FILE}\" line {line}, near end of line");
    assert_eq!(
        syntax_error("\n\nwork_mem = = 8\n"),
        (near(3, "="), "42601")
    );
    assert_eq!(syntax_error("work_mem = 8 9\n"), (near(1, "9"), "42601"));
    assert_eq!(syntax_error("work_mem =\n").0, end_of_line(1));
    assert_eq!(syntax_error("track_io_timing\n").0, end_of_line(1));
    assert_eq!(syntax_error("work_mem = 'abc\n").0, near(1, "'"));
    assert_eq!(syntax_error("work_mem = 1.5MB\n").0, near(1, "MB"));
    assert_eq!(syntax_error("work_mem = 1e5\n").0, near(1, "5"));
    assert_eq!(syntax_error("3 = 4\n").0, near(1, "3"));
    assert_eq!(
        syntax_error("listen_addresses = 127.0.0.1\n").0,
        near(1, ".0")
    );
    assert_eq!(syntax_error("listen_addresses = *\n").0, near(1, "*"));
    assert_eq!(syntax_error("x.y.z = 1\n").0, near(1, "x.y.z"));
    assert_eq!(syntax_error("search_path = $user\n").0, near(1, "$"));
    // PostgreSQL says "line 0" when the file ends inside the line; iolab names the real line.
    assert_eq!(syntax_error("work_mem = ").0, end_of_line(1));
    let include = parse_config_file("include 'other.conf'\n", FILE).unwrap_err();
    assert_eq!(include.sqlstate, "0A000");
}

#[test]
fn load_applies_file_then_command_line_with_sources() {
    let text =
        "shared_buffers = 256MB\nwork_mem = 8MB\nwork_mem = 16MB\nmax_connections = 20\nx.y = 5\n";
    let command_line = vec![
        ("max_connections".to_string(), "50".to_string()),
        ("port".to_string(), "6543".to_string()),
    ];
    let server = ServerSettings::load(Some((FILE, text)), &command_line).unwrap();
    assert_eq!(server.get("shared_buffers").unwrap(), "256MB");
    assert_eq!(server.shared_buffers_blocks(), 32768);
    assert_eq!(server.get("work_mem").unwrap(), "16MB");
    assert_eq!(
        server.file_location("work_mem"),
        Some(FileLocation {
            file: FILE.to_string(),
            line: 3
        })
    );
    assert_eq!(server.source("work_mem"), Some(Source::ConfigurationFile));
    assert_eq!(server.max_connections(), 50);
    assert_eq!(server.source("max_connections"), Some(Source::CommandLine));
    assert_eq!(server.port(), 6543);
    assert_eq!(
        server.source("effective_io_concurrency"),
        Some(Source::Default)
    );
    assert_eq!(server.get("x.y").unwrap(), "5");

    let mut session = SessionSettings::new(&server);
    session.set_session_user("postgres", true);
    assert_eq!(session.get("work_mem").unwrap(), "16MB");
    assert_eq!(session.get("x.y").unwrap(), "5");
    session.set("work_mem", "1MB", false).unwrap();
    session.reset("work_mem").unwrap();
    assert_eq!(
        session.get("work_mem").unwrap(),
        "16MB",
        "RESET returns to the file's value"
    );
    let rows = session.pg_settings_rows();
    let work_mem = rows.iter().find(|row| row.name == "work_mem").unwrap();
    assert_eq!(work_mem.source, "configuration file");
    assert_eq!(
        (work_mem.sourcefile.as_deref(), work_mem.sourceline),
        (Some(FILE), Some(3))
    );
    assert_eq!(
        (work_mem.boot_val.as_deref(), work_mem.reset_val.as_deref()),
        (Some("4096"), Some("16384"))
    );
    let max_connections = rows
        .iter()
        .find(|row| row.name == "max_connections")
        .unwrap();
    assert_eq!(
        (
            max_connections.source,
            max_connections.sourcefile.as_deref()
        ),
        ("command line", None)
    );

    // Settings from the file come first in EXPLAIN's list, in file order.
    session.set("random_page_cost", "1.1", false).unwrap();
    let explained: Vec<&str> = session
        .explain_settings()
        .iter()
        .map(|(name, _)| *name)
        .collect();
    assert_eq!(explained, ["work_mem", "random_page_cost"]);

    // Non-superusers do not see where values came from.
    let mut other = SessionSettings::new(&server);
    other.set_session_user("bob", false);
    let rows = other.pg_settings_rows();
    let work_mem = rows.iter().find(|row| row.name == "work_mem").unwrap();
    assert_eq!(
        (work_mem.sourcefile.as_deref(), work_mem.sourceline),
        (None, None)
    );
}

#[test]
fn bad_files_report_every_problem_then_the_summary() {
    let text = "work_mem = abc\nfoo = 1\nbar baz\nio_method = foo\neffective_io_concurrency = 5000\nserver_version = 12\nshared_buffers = bad\nshared_buffers = 1GB\n";
    let error = ServerSettings::load(Some((FILE, text)), &[]).unwrap_err();
    let messages: Vec<&str> = error.errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        messages,
        [
            "invalid value for parameter \"work_mem\": \"abc\"",
            "unrecognized configuration parameter \"foo\" in file \"/etc/iolab/iolab.conf\" line 2",
            "unrecognized configuration parameter \"bar\" in file \"/etc/iolab/iolab.conf\" line 3",
            "invalid value for parameter \"io_method\": \"foo\"",
            "5000 is outside the valid range for parameter \"effective_io_concurrency\" (0 .. 1000)",
            "parameter \"server_version\" cannot be changed",
            "configuration file \"/etc/iolab/iolab.conf\" contains errors",
        ]
    );
    assert_eq!(
        error.errors[0].context.as_deref(),
        Some("line 1 of configuration file \"/etc/iolab/iolab.conf\"")
    );
    assert_eq!(
        error.errors[3].hint.as_deref(),
        Some("Available values: sync, worker, io_uring.")
    );
    assert_eq!(error.errors[1].sqlstate, "42704");
    assert_eq!(error.errors.last().unwrap().sqlstate, "F0000");
    let printed = error.to_string();
    assert!(printed.starts_with(
        "LOG:  invalid value for parameter \"work_mem\": \"abc\"\nCONTEXT:  line 1 of"
    ));
    assert!(
        printed.ends_with("FATAL:  configuration file \"/etc/iolab/iolab.conf\" contains errors\n")
    );

    let error = ServerSettings::load(Some((FILE, "work_mem = 8 9\n")), &[]).unwrap_err();
    assert_eq!(error.errors.len(), 2);
    assert_eq!(error.errors[0].sqlstate, "42601");
}

#[test]
fn command_line_errors_stop_start() {
    let bad = |name: &str, value: &str| {
        ServerSettings::load(None, &[(name.to_string(), value.to_string())])
            .unwrap_err()
            .errors[0]
            .message
            .clone()
    };
    assert_eq!(
        bad("work_mem", "abc"),
        "invalid value for parameter \"work_mem\": \"abc\""
    );
    assert_eq!(
        bad("foo", "1"),
        "unrecognized configuration parameter \"foo\""
    );
    assert_eq!(
        bad("server_version", "1"),
        "parameter \"server_version\" cannot be changed"
    );
    let server = ServerSettings::load(None, &[("a.b".to_string(), "1".to_string())]).unwrap();
    assert_eq!(server.get("a.b").unwrap(), "1");
    assert_eq!(
        iolab_settings::parse_name_value("work-mem=32MB", "--work-mem=32MB").unwrap(),
        ("work_mem".to_string(), "32MB".to_string())
    );
    assert_eq!(
        iolab_settings::parse_name_value("work_mem", "-c work_mem")
            .unwrap_err()
            .message,
        "-c work_mem requires a value"
    );
}

#[test]
fn server_overrides_and_computed_defaults() {
    let mut server = ServerSettings::load(None, &[]).unwrap();
    server
        .set_override("data_directory", "/var/lib/iolab")
        .unwrap();
    server.set_override("config_file", FILE).unwrap();
    server
        .set_dynamic_default("io_max_concurrency", "64")
        .unwrap();
    assert_eq!(server.data_directory(), "/var/lib/iolab");
    assert_eq!(server.io_max_concurrency(), 64);
    assert_eq!(server.source("data_directory"), Some(Source::Override));
    assert_eq!(
        server.source("io_max_concurrency"),
        Some(Source::DynamicDefault)
    );
    let mut session = SessionSettings::new(&server);
    session.set_session_user("postgres", true);
    let rows = session.pg_settings_rows();
    let row = |name: &str| rows.iter().find(|row| row.name == name).unwrap().clone();
    assert_eq!(
        (
            row("data_directory").source,
            row("data_directory").setting.as_str()
        ),
        ("override", "/var/lib/iolab")
    );
    let io_max = row("io_max_concurrency");
    assert_eq!(
        (
            io_max.source,
            io_max.setting.as_str(),
            io_max.boot_val.as_deref()
        ),
        ("default", "64", Some("-1"))
    );
    // huge_pages_status boots as unknown; the server sets it once the pool is mapped.
    assert_eq!(server.get("huge_pages_status").unwrap(), "unknown");
    let mut with_pool = server.clone();
    with_pool
        .set_dynamic_default("huge_pages_status", "on")
        .unwrap();
    assert_eq!(with_pool.get("huge_pages_status").unwrap(), "on");
    assert_eq!(
        with_pool.source("huge_pages_status"),
        Some(Source::DynamicDefault)
    );

    // A value from the command line is not replaced by a computed default.
    let mut server =
        ServerSettings::load(None, &[("io_max_concurrency".to_string(), "8".to_string())]).unwrap();
    server
        .set_dynamic_default("io_max_concurrency", "64")
        .unwrap();
    assert_eq!(server.io_max_concurrency(), 8);
}

#[test]
fn wal_and_checkpoint_settings_load_and_show_as_postgres_does() {
    // Boot values as PostgreSQL 18.4 shows them (wal_buffers stays -1 until the server
    // computes it, as io_max_concurrency does).
    let server = ServerSettings::defaults();
    let shown = |server: &ServerSettings, name: &str| server.get(name).unwrap();
    assert!(server.fsync());
    assert!(server.full_page_writes());
    assert!(server.log_checkpoints());
    assert!(server.synchronous_commit_on());
    assert_eq!(server.wal_buffers_blocks(), -1);
    assert_eq!(server.wal_writer_delay_ms(), 200);
    assert_eq!(shown(&server, "wal_writer_delay"), "200ms");
    assert_eq!(server.checkpoint_timeout_s(), 300);
    assert_eq!(shown(&server, "checkpoint_timeout"), "5min");
    assert_eq!(server.checkpoint_completion_target(), 0.9);
    assert_eq!(server.max_wal_size_mb(), 1024);
    assert_eq!(shown(&server, "max_wal_size"), "1GB");
    assert_eq!(shown(&server, "min_wal_size"), "80MB");
    assert_eq!(server.recovery_prefetch(), "try");
    assert_eq!(server.wal_decode_buffer_size_bytes(), 524288);
    assert_eq!(shown(&server, "wal_decode_buffer_size"), "512kB");
    assert_eq!(shown(&server, "wal_level"), "replica");

    let load = |pairs: &[(&str, &str)]| {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect();
        ServerSettings::load(None, &pairs)
    };
    let server = load(&[
        ("fsync", "off"),
        ("full_page_writes", "false"),
        ("log_checkpoints", "no"),
        ("synchronous_commit", "0"),
        ("wal_buffers", "16MB"),
        ("wal_writer_delay", "1s"),
        ("checkpoint_timeout", "10min"),
        ("checkpoint_completion_target", "0.5"),
        ("max_wal_size", "2GB"),
        ("min_wal_size", "100MB"),
        ("recovery_prefetch", "yes"),
        ("wal_decode_buffer_size", "1MB"),
        ("wal_level", "archive"),
    ])
    .unwrap();
    assert!(!server.fsync());
    assert!(!server.full_page_writes());
    assert!(!server.log_checkpoints());
    assert!(!server.synchronous_commit_on());
    assert_eq!(shown(&server, "synchronous_commit"), "off");
    assert_eq!(server.wal_buffers_blocks(), 2048);
    assert_eq!(shown(&server, "wal_buffers"), "16MB");
    assert_eq!(server.wal_writer_delay_ms(), 1000);
    assert_eq!(shown(&server, "wal_writer_delay"), "1s");
    assert_eq!(server.checkpoint_timeout_s(), 600);
    assert_eq!(shown(&server, "checkpoint_timeout"), "10min");
    assert_eq!(server.checkpoint_completion_target(), 0.5);
    assert_eq!(server.max_wal_size_mb(), 2048);
    assert_eq!(shown(&server, "min_wal_size"), "100MB");
    assert_eq!(server.recovery_prefetch(), "on");
    assert_eq!(server.wal_decode_buffer_size_bytes(), 1048576);
    // `archive` and `hot_standby` are PostgreSQL's deprecated spellings of `replica`.
    assert_eq!(shown(&server, "wal_level"), "replica");
    let server = load(&[("synchronous_commit", "remote_apply")]).unwrap();
    assert!(server.synchronous_commit_on());

    // Errors as PostgreSQL 18.4 words them (checked with ALTER SYSTEM on the reference).
    let bad = |name: &str, value: &str| {
        let error = load(&[(name, value)]).unwrap_err().errors.remove(0);
        (error.sqlstate, error.message, error.hint)
    };
    assert_eq!(
        bad("checkpoint_timeout", "10"),
        (
            "22023",
            "10 s is outside the valid range for parameter \"checkpoint_timeout\" (30 s .. 86400 s)"
                .to_string(),
            None
        )
    );
    assert_eq!(
        bad("wal_level", "bogus"),
        (
            "22023",
            "invalid value for parameter \"wal_level\": \"bogus\"".to_string(),
            Some("Available values: minimal, replica, logical.".to_string())
        )
    );
    assert_eq!(
        bad("wal_buffers", "3GB").1,
        "393216 8kB is outside the valid range for parameter \"wal_buffers\" (-1 8kB .. 262143 8kB)"
    );
    assert_eq!(
        bad("checkpoint_completion_target", "1.5").1,
        "1.5 is outside the valid range for parameter \"checkpoint_completion_target\" (0 .. 1)"
    );
    assert_eq!(
        bad("max_wal_size", "1MB").1,
        "1 MB is outside the valid range for parameter \"max_wal_size\" (2 MB .. 2147483647 MB)"
    );
}

/// A reload takes the files' new values for what came from a file or a default, leaves the
/// command line's alone, and holds restart-only settings back.
#[test]
fn a_reload_changes_what_the_files_set() {
    let started = "work_mem = '8MB'\nio_max_concurrency = 16\n";
    let mut server = ServerSettings::load_files(
        &[(FILE, started)],
        &[("random_page_cost".to_string(), "2".to_string())],
    )
    .unwrap();
    server
        .set_dynamic_default("io_max_concurrency", "64")
        .unwrap();
    assert_eq!(server.io_max_concurrency(), 16, "the file's");
    let edited = "work_mem = '16MB'\nrandom_page_cost = 3\nio_method = sync\n";
    let reloaded = server.reload(&[(FILE, edited)], |_| false).unwrap();
    let next = &reloaded.settings;
    assert_eq!(next.get("work_mem").unwrap(), "16MB");
    assert_eq!(
        next.get("random_page_cost").unwrap(),
        "2",
        "the command line wins"
    );
    assert_eq!(
        next.io_max_concurrency(),
        16,
        "its default (64) waits for a restart"
    );
    assert_eq!(next.get("io_method").unwrap(), "worker", "at a restart");
    assert_eq!(reloaded.needs_restart, ["io_max_concurrency", "io_method"]);
    assert_eq!(reloaded.changed, [("work_mem", "16MB".to_string())]);
    // A session adopts the new value unless it set its own.
    let mut session = SessionSettings::new(&server);
    let mut own = SessionSettings::new(&server);
    own.set("work_mem", "1MB", false).unwrap();
    assert!(session.adopt_reloaded(next) && own.adopt_reloaded(next));
    assert_eq!(session.get("work_mem").unwrap(), "16MB");
    assert_eq!(own.get("work_mem").unwrap(), "1MB");
    let pending: Vec<&str> = session
        .pg_settings_rows()
        .into_iter()
        .filter(|r| r.pending_restart)
        .map(|r| r.name)
        .collect();
    assert_eq!(pending, ["io_max_concurrency", "io_method"]);
    // A file with an error changes nothing.
    assert!(server
        .reload(&[(FILE, "work_mem = 'lots'\n")], |_| true)
        .is_err());
    // A sighup setting the server applies live changes; another waits.
    let sighup = "checkpoint_timeout = '10min'\nio_workers = 9\n";
    let reloaded = server
        .reload(&[(FILE, sighup)], |name| name == "checkpoint_timeout")
        .unwrap();
    assert_eq!(
        reloaded.settings.get("checkpoint_timeout").unwrap(),
        "10min"
    );
    assert_eq!(reloaded.needs_restart, ["io_max_concurrency", "io_workers"]);
}
