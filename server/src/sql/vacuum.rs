//! `VACUUM` and `ANALYZE` in PostgreSQL 18's syntax, run by the engine's `analyze` module.
//!
//! ```text
//! VACUUM  [ ( option [, …] ) ] [ table [ ( column [, …] ) ] [, …] ]
//! VACUUM  [ FULL ] [ FREEZE ] [ VERBOSE ] [ ANALYZE ] [ table [ ( column [, …] ) ] [, …] ]
//! ANALYZE [ ( option [, …] ) ] [ table [ ( column [, …] ) ] [, …] ]
//! ANALYZE [ VERBOSE ] [ table [ ( column [, …] ) ] [, …] ]          (ANALYSE too)
//! ```
//!
//! Options take an optional value: booleans (`VERBOSE`, `VERBOSE off`, `ANALYZE 1`), and
//! `BUFFER_USAGE_LIMIT` a size (`'256kB'`, `512`; 0 = no ring, else 128 kB … 16 GB), which
//! overrides `vacuum_buffer_usage_limit` for this command. VACUUM options iolab has no use
//! for (`DISABLE_PAGE_SKIPPING`, `SKIP_LOCKED`, `INDEX_CLEANUP`, `PROCESS_MAIN`,
//! `PROCESS_TOAST`, `TRUNCATE`, `PARALLEL`, `SKIP_DATABASE_STATS`, `ONLY_DATABASE_STATS`)
//! are accepted and change nothing. Without a table list every table is processed.
//!
//! Errors are PostgreSQL's: `unrecognized VACUUM option "x"` (42601, with its position),
//! `verbose requires a Boolean value`, `ANALYZE option must be specified when a column
//! list is provided` (0A000), `VACUUM cannot run inside a transaction block` (25001),
//! `relation "x" does not exist`, `column "x" of relation "t" does not exist`,
//! `column "a" of relation "t" appears more than once`.
//!
//! With VERBOSE, each table's messages come back as INFO notices, worded as PostgreSQL 18
//! words them (see `iolab_engine::analyze::report`). VACUUM FULL rewrites each table into
//! a new file without its dead rows and rebuilds its indexes (`cluster::rewrite`, as
//! CLUSTER does, in the rows' own order). FREEZE runs the same scan as a plain VACUUM
//! (iolab has nothing to freeze) and reports itself as an aggressive vacuum, as in
//! PostgreSQL.

use iolab_catalog::{sqlstate, PgError, PgResult, TableDef};
use iolab_engine::analyze::cost_delay::CostDelaySettings;
use iolab_engine::analyze::{self, AnalyzeOptions, VacuumOptions};
use iolab_settings::SessionSettings;

use crate::session::Notice;
use crate::sql::tokens::{tokenize, Tok, TokenParser};
use crate::sql::{Outcome, StatementRun};

/// A parsed `VACUUM` or `ANALYZE`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VacuumStmt {
    /// `VACUUM` (else `ANALYZE`).
    pub vacuum: bool,
    pub verbose: bool,
    /// `VACUUM … ANALYZE` (always set for `ANALYZE`).
    pub analyze: bool,
    pub full: bool,
    pub freeze: bool,
    /// `BUFFER_USAGE_LIMIT`, in kB.
    pub buffer_usage_limit_kb: Option<i64>,
    pub relations: Vec<RelationSpec>,
}

/// One entry of the table list.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RelationSpec {
    pub schema: Option<String>,
    pub name: String,
    pub columns: Vec<String>,
}

/// Is `text` a VACUUM or ANALYZE statement (its first word)? Reads only the first token:
/// every statement passes here.
pub fn is_vacuum_or_analyze(text: &str) -> bool {
    matches!(
        tokenize(text, 1).ok().and_then(|t| t.into_iter().next()).map(|t| t.tok),
        Some(Tok::Word { text, quoted: false }) if matches!(text.as_str(), "vacuum" | "analyze" | "analyse")
    )
}

/// An identifier (not one of the statement's own keywords unless quoted).
fn identifier(p: &mut TokenParser) -> PgResult<String> {
    match p.peek() {
        Some(Tok::Word { text, quoted }) => {
            let reserved = !quoted
                && matches!(
                    text.as_str(),
                    "full" | "freeze" | "verbose" | "analyze" | "analyse"
                );
            if reserved {
                return Err(p.syntax_error());
            }
            let text = text.clone();
            p.pos += 1;
            Ok(text)
        }
        _ => Err(p.syntax_error()),
    }
}

/// Parses the text of one VACUUM or ANALYZE statement (`offset` = its position in the
/// whole query string, for error positions).
pub fn parse(text: &str, whole: &str, offset: usize) -> PgResult<VacuumStmt> {
    let mut p = TokenParser::new(tokenize(text, usize::MAX)?, text, whole, offset);
    let mut stmt = VacuumStmt::default();
    match p.next() {
        Some(Tok::Word { text, .. }) if text == "vacuum" => stmt.vacuum = true,
        Some(Tok::Word { text, .. }) if text == "analyze" || text == "analyse" => {
            stmt.analyze = true
        }
        _ => return Err(PgError::internal("not a VACUUM or ANALYZE statement")),
    }
    if p.is_punct('(') {
        p.pos += 1;
        parse_options(&mut p, &mut stmt)?;
    } else if stmt.vacuum {
        for (word, flag) in [
            ("full", &mut stmt.full),
            ("freeze", &mut stmt.freeze),
            ("verbose", &mut stmt.verbose),
        ] {
            if p.is_word(word) {
                p.pos += 1;
                *flag = true;
            }
        }
        if p.is_word("analyze") || p.is_word("analyse") {
            p.pos += 1;
            stmt.analyze = true;
        }
    } else if p.is_word("verbose") {
        p.pos += 1;
        stmt.verbose = true;
    }
    // The table list.
    while p.peek().is_some() && !p.is_punct(';') {
        let mut spec = RelationSpec {
            name: identifier(&mut p)?,
            ..RelationSpec::default()
        };
        if p.is_punct('.') {
            p.pos += 1;
            spec.schema = Some(std::mem::replace(&mut spec.name, identifier(&mut p)?));
        }
        if p.is_punct('(') {
            p.pos += 1;
            loop {
                spec.columns.push(identifier(&mut p)?);
                if p.is_punct(',') {
                    p.pos += 1;
                    continue;
                }
                p.expect_punct(')')?;
                break;
            }
        }
        stmt.relations.push(spec);
        if p.is_punct(',') {
            p.pos += 1;
            if p.peek().is_none() || p.is_punct(';') {
                return Err(p.syntax_error());
            }
        } else if p.peek().is_some() && !p.is_punct(';') {
            return Err(p.syntax_error());
        }
    }
    if p.is_punct(';') {
        p.pos += 1;
        if p.peek().is_some() {
            return Err(p.syntax_error());
        }
    }
    if stmt.vacuum && !stmt.analyze && stmt.relations.iter().any(|r| !r.columns.is_empty()) {
        return Err(PgError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            "ANALYZE option must be specified when a column list is provided",
        ));
    }
    if stmt.full && stmt.buffer_usage_limit_kb.is_some() {
        return Err(PgError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "BUFFER_USAGE_LIMIT cannot be specified for VACUUM FULL",
        ));
    }
    Ok(stmt)
}

/// `( option [value] [, …] )`, the opening parenthesis consumed.
fn parse_options(p: &mut TokenParser, stmt: &mut VacuumStmt) -> PgResult<()> {
    loop {
        let name_index = p.pos;
        let name = match p.next() {
            Some(Tok::Word { text, .. }) => text,
            _ => {
                p.pos -= 1;
                return Err(p.syntax_error());
            }
        };
        // An optional value: a word, number or string before ',' or ')'.
        let value = match p.peek() {
            Some(Tok::Word { text, .. }) => Some(text.clone()),
            Some(Tok::Number(n)) => Some(n.clone()),
            Some(Tok::Str(s)) => Some(s.clone()),
            _ => None,
        };
        if value.is_some() {
            p.pos += 1;
        }
        let boolean = |value: &Option<String>| -> PgResult<bool> {
            match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                None | Some("true" | "on" | "yes" | "1") => Ok(true),
                Some("false" | "off" | "no" | "0") => Ok(false),
                _ => Err(PgError::syntax(format!("{name} requires a Boolean value"))),
            }
        };
        let known_to_both = matches!(
            name.as_str(),
            "verbose" | "skip_locked" | "buffer_usage_limit"
        );
        let vacuum_only = matches!(
            name.as_str(),
            "analyze"
                | "freeze"
                | "full"
                | "disable_page_skipping"
                | "index_cleanup"
                | "process_main"
                | "process_toast"
                | "truncate"
                | "parallel"
                | "skip_database_stats"
                | "only_database_stats"
        );
        if !(known_to_both || (stmt.vacuum && vacuum_only)) {
            let command = if stmt.vacuum { "VACUUM" } else { "ANALYZE" };
            return Err(
                PgError::syntax(format!("unrecognized {command} option \"{name}\""))
                    .with_position(p.position_of(name_index)),
            );
        }
        match name.as_str() {
            "verbose" => stmt.verbose = boolean(&value)?,
            "analyze" => stmt.analyze = boolean(&value)?,
            "full" => stmt.full = boolean(&value)?,
            "freeze" => stmt.freeze = boolean(&value)?,
            "buffer_usage_limit" => stmt.buffer_usage_limit_kb = Some(buffer_usage_limit(&value)?),
            "index_cleanup" | "parallel" => {}
            _ => {
                boolean(&value)?;
            }
        }
        if p.is_punct(',') {
            p.pos += 1;
            continue;
        }
        return p.expect_punct(')');
    }
}

/// `BUFFER_USAGE_LIMIT` in kB: a number (kB) or a size with a unit.
fn buffer_usage_limit(value: &Option<String>) -> PgResult<i64> {
    let error = || {
        PgError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            "BUFFER_USAGE_LIMIT option must be 0 or between 128 kB and 16777216 kB",
        )
    };
    let text = value.as_deref().ok_or_else(error)?.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '-'))
        .unwrap_or(text.len());
    let number: i64 = text[..split].parse().map_err(|_| error())?;
    let unit = text[split..].trim();
    let kb = match unit {
        "" | "kB" => number,
        "MB" => number.checked_mul(1024).ok_or_else(error)?,
        "GB" => number.checked_mul(1024 * 1024).ok_or_else(error)?,
        "TB" => number.checked_mul(1024 * 1024 * 1024).ok_or_else(error)?,
        _ => return Err(error()),
    };
    if kb != 0 && !(128..=16_777_216).contains(&kb) {
        return Err(error());
    }
    Ok(kb)
}

// ---------------------------------------------------------------------------------------
// Running it

/// A table to process and the 0-based columns to analyze (`None` = all).
struct Target {
    table: TableDef,
    columns: Option<Vec<usize>>,
}

fn resolve(
    run: &StatementRun,
    stmt: &VacuumStmt,
    notices: &mut Vec<Notice>,
) -> PgResult<Vec<Target>> {
    if stmt.relations.is_empty() {
        // Every table but other sessions' temporary ones, as PostgreSQL.
        let own_temp = run.temp.schema();
        return Ok(run
            .db
            .catalog
            .tables()
            .into_iter()
            .filter(|t| {
                t.persistence != iolab_catalog::Persistence::Temporary
                    || Some(t.schema.as_str()) == own_temp
            })
            .map(|table| Target {
                table,
                columns: None,
            })
            .collect());
    }
    let mut targets = Vec::with_capacity(stmt.relations.len());
    for spec in &stmt.relations {
        if crate::sql::view::is_view(&run.db, spec.schema.as_deref(), &spec.name) {
            // As PostgreSQL: a warning, and the other relations are processed.
            let verb = if stmt.vacuum { "vacuum" } else { "analyze" };
            notices.push(Notice::warning(
                sqlstate::WARNING,
                format!(
                    "skipping \"{}\" --- cannot {verb} non-tables or special system tables",
                    spec.name
                ),
            ));
            continue;
        }
        let table = run.resolve_table(spec.schema.as_deref(), &spec.name)?;
        let columns = if spec.columns.is_empty() {
            None
        } else {
            let mut indices = Vec::with_capacity(spec.columns.len());
            for name in &spec.columns {
                let Some(i) = table.column_index(name) else {
                    return Err(PgError::new(
                        sqlstate::UNDEFINED_COLUMN,
                        format!(
                            "column \"{name}\" of relation \"{}\" does not exist",
                            table.name
                        ),
                    ));
                };
                if indices.contains(&i) {
                    return Err(PgError::new(
                        sqlstate::DUPLICATE_COLUMN,
                        format!(
                            "column \"{name}\" of relation \"{}\" appears more than once",
                            table.name
                        ),
                    ));
                }
                indices.push(i);
            }
            Some(indices)
        };
        targets.push(Target { table, columns });
    }
    Ok(targets)
}

/// Runs a VACUUM or ANALYZE; `in_block`: the session is inside BEGIN … COMMIT.
pub fn run(
    run: &StatementRun,
    stmt: &VacuumStmt,
    settings: &SessionSettings,
    in_block: bool,
    log: &mut crate::sql::ddl_log::DdlLog,
    notices: &mut Vec<Notice>,
) -> PgResult<Outcome> {
    if stmt.vacuum && in_block {
        return Err(PgError::new(
            sqlstate::ACTIVE_SQL_TRANSACTION,
            "VACUUM cannot run inside a transaction block",
        ));
    }
    let targets = resolve(run, stmt, notices)?;
    let limit_kb = stmt
        .buffer_usage_limit_kb
        .unwrap_or(settings.vacuum_buffer_usage_limit_kb() as i64);
    let ring_buffers = (limit_kb.max(0) as usize * 1024) / iolab_engine::storage::page::BLCKSZ;
    let database = crate::pgcatalog::oids::DATABASE_NAME.to_string();
    let cost = CostDelaySettings {
        delay_ms: settings.vacuum_cost_delay_ms(),
        limit: settings.vacuum_cost_limit() as u32,
        page_hit: settings.vacuum_cost_page_hit() as u32,
        page_miss: settings.vacuum_cost_page_miss() as u32,
        page_dirty: settings.vacuum_cost_page_dirty() as u32,
        track_timing: settings.track_cost_delay_timing(),
    };
    for target in &targets {
        let mut table = target.table.clone();
        if stmt.full {
            let messages = crate::sql::cluster::rewrite(run, &table, None, log)?;
            if stmt.verbose {
                notices.extend(messages);
            }
            table = (run.db.catalog.table_by_oid(table.oid)).expect("the table just rewritten");
        }
        tokio::task::block_in_place(|| -> PgResult<()> {
            if stmt.vacuum && !stmt.full {
                let result = analyze::vacuum_table(
                    &run.ctx,
                    &table,
                    &VacuumOptions {
                        database: database.clone(),
                        aggressive: stmt.freeze,
                        ring_buffers,
                        maintenance_work_mem_kb: settings.maintenance_work_mem_kb() as usize,
                        cost,
                    },
                )?;
                if stmt.verbose {
                    notices.extend(result.messages.into_iter().map(Notice::info));
                }
            }
            if stmt.analyze {
                let result = analyze::analyze_table(
                    &run.ctx,
                    &table,
                    &AnalyzeOptions {
                        database: database.clone(),
                        statistics_target: settings.default_statistics_target(),
                        columns: target.columns.clone(),
                        ring_buffers,
                        seed: None,
                        cost,
                    },
                )?;
                if stmt.verbose {
                    notices.extend(result.messages.into_iter().map(Notice::info));
                }
            }
            Ok(())
        })?;
    }
    Ok(Outcome::Done(
        if stmt.vacuum { "VACUUM" } else { "ANALYZE" }.to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(sql: &str) -> PgResult<VacuumStmt> {
        parse(sql, sql, 0)
    }

    fn rel(name: &str, columns: &[&str]) -> RelationSpec {
        RelationSpec {
            schema: None,
            name: name.into(),
            columns: columns.iter().map(|c| c.to_string()).collect(),
        }
    }

    #[test]
    fn forms() {
        let s = p("VACUUM ANALYZE eic_uniform;").unwrap();
        assert!(s.vacuum && s.analyze && !s.verbose);
        assert_eq!(s.relations, vec![rel("eic_uniform", &[])]);

        let s = p("analyze verbose T (a, \"B\")").unwrap();
        assert!(!s.vacuum && s.analyze && s.verbose);
        assert_eq!(s.relations, vec![rel("t", &["a", "B"])]);

        let s = p("VACUUM (VERBOSE, ANALYZE) public.t").unwrap();
        assert!(s.vacuum && s.analyze && s.verbose);
        assert_eq!(s.relations[0].schema.as_deref(), Some("public"));

        let s = p("vacuum (verbose off, analyze 1, buffer_usage_limit '256kB') t(a), u").unwrap();
        assert!(!s.verbose && s.analyze);
        assert_eq!(s.buffer_usage_limit_kb, Some(256));
        assert_eq!(s.relations.len(), 2);

        let s = p("VACUUM FULL FREEZE VERBOSE ANALYZE").unwrap();
        assert!(s.full && s.freeze && s.verbose && s.analyze);
        assert!(s.relations.is_empty());

        let s = p("analyse -- comment\n (buffer_usage_limit 0) t").unwrap();
        assert_eq!(s.buffer_usage_limit_kb, Some(0));

        assert!(is_vacuum_or_analyze("  ANALYZE(verbose) t"));
        assert!(is_vacuum_or_analyze("vacuum"));
        assert!(!is_vacuum_or_analyze("EXPLAIN ANALYZE SELECT 1"));
    }

    #[test]
    fn errors_are_postgres() {
        let e = p("vacuum analyze verbose t").unwrap_err();
        assert_eq!(e.message, "syntax error at or near \"verbose\"");
        assert_eq!(e.position, Some(16));
        let e = p("vacuum (foo) t").unwrap_err();
        assert_eq!(e.code, sqlstate::SYNTAX_ERROR);
        assert_eq!(e.message, "unrecognized VACUUM option \"foo\"");
        assert_eq!(e.position, Some(9));
        let e = p("analyze (full) t").unwrap_err();
        assert_eq!(e.message, "unrecognized ANALYZE option \"full\"");
        let e = p("vacuum t (a)").unwrap_err();
        assert_eq!(e.code, "0A000");
        assert_eq!(
            e.message,
            "ANALYZE option must be specified when a column list is provided"
        );
        let e = p("analyze (verbose maybe) t").unwrap_err();
        assert_eq!(e.message, "verbose requires a Boolean value");
        let e = p("analyze (buffer_usage_limit 10) t").unwrap_err();
        assert_eq!(e.code, "22023");
        assert_eq!(
            e.message,
            "BUFFER_USAGE_LIMIT option must be 0 or between 128 kB and 16777216 kB"
        );
        assert!(p("analyze t u").is_err());
        assert!(p("analyze t,").is_err());
        assert!(p("analyze t (").is_err());
        assert_eq!(
            p("analyze (buffer_usage_limit '1MB') t")
                .unwrap()
                .buffer_usage_limit_kb,
            Some(1024)
        );
    }
}
