//! iolab's settings against answers captured from a live PostgreSQL 18.4 (`tests/pg18/`).
//!
//! `set_config_cases.tsv`: ~420 `set_config(name, value, true)` calls — units, rounding,
//! ranges, booleans, enums, DateStyle, TimeZone, encodings, contexts, custom names — with
//! PostgreSQL's result or its SQLSTATE, message, detail and hint. `pg_settings.tsv`: the
//! static columns of `pg_settings` and the GUC flags for every setting iolab shares with
//! PostgreSQL. To regenerate, start the reference (`/work/shared/tools/pg18-reference
//! start`) and rerun the queries described in the files' headers.

use iolab_settings::{ServerSettings, SessionSettings, SettingError};

fn superuser_session() -> SessionSettings {
    let mut session = SessionSettings::new(&ServerSettings::defaults());
    session.set_session_user("postgres", true);
    session
}

fn fixture(text: &str) -> impl Iterator<Item = Vec<&str>> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.split('\t').collect())
}

/// Cases where iolab answers differently from PostgreSQL on purpose: (name, value, why).
const SET_CONFIG_DIVERGENCES: &[(&str, &str, &str)] = &[];

#[test]
fn set_config_matches_postgres_18() {
    let mut mismatches = Vec::new();
    let mut checked = 0;
    for fields in fixture(include_str!("pg18/set_config_cases.tsv")) {
        let (name, value) = (fields[0], fields[1]);
        if SET_CONFIG_DIVERGENCES
            .iter()
            .any(|(n, v, _)| *n == name && *v == value)
        {
            continue;
        }
        let mut session = superuser_session();
        session.begin_transaction();
        let ours = session.set_config(name, Some(value), true).map(|returned| {
            let shown = session.get(name).expect("a value just set can be shown");
            (returned, shown)
        });
        session.abort_transaction();
        let expected: Result<(String, String), SettingError> = match fields[2] {
            "OK" => Ok((fields[3].to_string(), fields[4].to_string())),
            "ERR" => {
                let optional = |text: &str| (!text.is_empty()).then(|| text.to_string());
                Err(SettingError {
                    sqlstate: match fields[3] {
                        "22023" => "22023",
                        "55P02" => "55P02",
                        "42704" => "42704",
                        "42602" => "42602",
                        "42501" => "42501",
                        "0A000" => "0A000",
                        other => panic!("SQLSTATE {other} missing from the test"),
                    },
                    message: fields[4].to_string(),
                    detail: optional(fields[5]),
                    hint: optional(fields[6]),
                    context: None,
                })
            }
            other => panic!("bad fixture line: {other}"),
        };
        if ours != expected {
            mismatches.push(format!(
                "{name} = {value:?}\n   postgres: {expected:?}\n   iolab:    {ours:?}"
            ));
        }
        checked += 1;
    }
    assert!(checked > 350, "fixture not read: {checked} cases");
    assert!(
        mismatches.is_empty(),
        "{} of {checked} cases differ:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// Columns of `pg_settings` where iolab differs from PostgreSQL on purpose, per setting (see
/// the comment at the top of `table.rs`).
const PG_SETTINGS_DIVERGENCES: &[(&str, &str)] = &[
    ("client_encoding", "boot_val"),
    ("server_encoding", "boot_val"),
    ("TimeZone", "boot_val"),
    ("lc_messages", "boot_val"),
    ("max_stack_depth", "boot_val"),
    ("data_checksums", "boot_val"),
    ("jit", "boot_val"),
    ("server_version", "boot_val"),
    ("server_version_num", "boot_val"),
    ("server_version_num", "min_val"),
    ("server_version_num", "max_val"),
    ("io_method", "enumvals"),
    ("config_file", "boot_val"),
    ("data_directory", "boot_val"),
];

#[test]
fn pg_settings_columns_match_postgres_18() {
    let session = superuser_session();
    let rows = session.pg_settings_rows();
    let mut mismatches = Vec::new();
    let mut seen = 0;
    for fields in fixture(include_str!("pg18/pg_settings.tsv")) {
        let name = fields[0];
        let Some(row) = rows.iter().find(|row| row.name == name) else {
            mismatches.push(format!("{name}: missing from iolab"));
            continue;
        };
        seen += 1;
        let null = |text: &str| (text != "~").then(|| text.to_string());
        let enumvals = row.enumvals.as_ref().map(|values| values.join(","));
        let flags = iolab_settings::lookup(name)
            .expect("row names come from the table")
            .flags;
        let mut ours_flags = Vec::new();
        for (flag, spelled) in [
            (iolab_settings::flags::EXPLAIN, "EXPLAIN"),
            (iolab_settings::flags::NO_RESET, "NO_RESET"),
            (iolab_settings::flags::NO_RESET_ALL, "NO_RESET_ALL"),
        ] {
            if flags & flag != 0 {
                ours_flags.push(spelled);
            }
        }
        let theirs_flags: Vec<&str> = fields[11]
            .split(',')
            .filter(|f| ["EXPLAIN", "NO_RESET", "NO_RESET_ALL"].contains(f))
            .collect();
        let columns: [(&str, Option<String>, Option<String>); 11] = [
            ("unit", row.unit.map(str::to_string), null(fields[1])),
            (
                "category",
                Some(row.category.to_string()),
                Some(fields[2].to_string()),
            ),
            (
                "short_desc",
                Some(row.short_desc.to_string()),
                Some(fields[3].to_string()),
            ),
            (
                "extra_desc",
                row.extra_desc.map(str::to_string),
                null(fields[4]),
            ),
            (
                "context",
                Some(row.context.to_string()),
                Some(fields[5].to_string()),
            ),
            (
                "vartype",
                Some(row.vartype.to_string()),
                Some(fields[6].to_string()),
            ),
            ("min_val", row.min_val.clone(), null(fields[7])),
            ("max_val", row.max_val.clone(), null(fields[8])),
            ("enumvals", enumvals, null(fields[9])),
            ("boot_val", row.boot_val.clone(), null(fields[10])),
            (
                "flags",
                Some(ours_flags.join(",")),
                Some(theirs_flags.join(",")),
            ),
        ];
        for (column, ours, theirs) in columns {
            let expected_to_differ = PG_SETTINGS_DIVERGENCES.contains(&(name, column));
            if (ours != theirs) != expected_to_differ {
                mismatches.push(format!("{name}.{column}: postgres {theirs:?}, iolab {ours:?} (divergence listed: {expected_to_differ})"));
            }
        }
    }
    assert!(seen > 100, "fixture not read");
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}
