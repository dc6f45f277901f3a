//! `REINDEX`: indexes built anew, each into a new file, from their table's rows, as
//! PostgreSQL 18 does.
//!
//! ```text
//! REINDEX [ ( option [, …] ) ] { INDEX | TABLE | SCHEMA } [ CONCURRENTLY ] name
//! REINDEX [ ( option [, …] ) ] { DATABASE | SYSTEM } [ CONCURRENTLY ] [ name ]
//!   option: VERBOSE [ boolean ] | CONCURRENTLY [ boolean ] | TABLESPACE name
//! ```
//!
//! An I/O experiment uses it to give an index a fresh, compact layout (after bulk
//! inserts split its pages, or to start a run from a bottom-up build); the new file is
//! built as CREATE INDEX builds one (`btree::reindex`: sorted, loaded bottom-up, with
//! `pg_stat_progress_create_index` showing `REINDEX`). Each index changes files as a
//! TRUNCATE's do: a `Reindexed` entry of the transaction's DDL log gives the old file back
//! at ROLLBACK and removes it at COMMIT, where the index's activity counts follow it to the
//! new file.
//!
//! What it rebuilds: `INDEX` one index; `TABLE` every index of the table (a table without
//! one: `NOTICE: table "t" has no indexes to reindex`); `SCHEMA` every index of the schema's
//! tables; `DATABASE` every index of every table of the current database (PostgreSQL 16+
//! leaves the system catalogs out); `SYSTEM` the system catalogs' indexes, of which iolab
//! has none on disk, so nothing. `VERBOSE` prints PostgreSQL's `INFO: index "i" was
//! reindexed` with the resource usage, and for SCHEMA and DATABASE `INFO: table "s.t" was
//! reindexed` after each table.
//!
//! Locks (`relation_locks`): `ShareLock` on each table, which lets others read it while
//! its indexes are rebuilt, and `AccessExclusiveLock` on each index rebuilt, as PostgreSQL's
//! non-concurrent REINDEX takes them.
//!
//! Errors are PostgreSQL's: `relation "x" does not exist` (42P01), `"x" is not an index`
//! and `"x" is not a table or materialized view` (42809), `schema "x" does not exist`
//! (3F000), `can only reindex the currently open database` (0A000), `unrecognized REINDEX
//! option "x"` (42601), `tablespace "x" does not exist` (42704), and `REINDEX SCHEMA` /
//! `DATABASE` / `SYSTEM cannot run inside a transaction block` (25001). `CONCURRENTLY`
//! is refused (0A000): iolab would rebuild under the same locks as without it, and a
//! script asking for it wants writers not to wait. `TABLESPACE pg_default` changes
//! nothing (iolab has no other tablespace).

use iolab_catalog::store::is_temp_schema;
use iolab_catalog::{sqlstate, IndexDef, PgError, PgResult, TableDef};
use iolab_engine::analyze::report::ResourceUsage;
use iolab_engine::btree;
use iolab_engine::Database;

use crate::pgcatalog::oids;
use crate::session::Notice;
use crate::sql::ddl_log::{DdlEntry, DdlLog};
use crate::sql::tokens::{tokenize, Tok, TokenParser};
use crate::sql::{Outcome, StatementRun};

/// The current database's name (`REINDEX DATABASE name` must name it).
const DATABASE: &str = "postgres";

/// What a REINDEX names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReindexKind {
    Index,
    Table,
    Schema,
    Database,
    System,
}

impl ReindexKind {
    fn keyword(self) -> &'static str {
        match self {
            ReindexKind::Index => "INDEX",
            ReindexKind::Table => "TABLE",
            ReindexKind::Schema => "SCHEMA",
            ReindexKind::Database => "DATABASE",
            ReindexKind::System => "SYSTEM",
        }
    }

    /// SCHEMA, DATABASE and SYSTEM commit table by table in PostgreSQL, so they refuse a
    /// transaction block.
    fn runs_in_block(self) -> bool {
        matches!(self, ReindexKind::Index | ReindexKind::Table)
    }
}

/// A parsed REINDEX.
#[derive(Clone, Debug, PartialEq)]
pub struct ReindexStmt {
    pub kind: ReindexKind,
    /// The named relation's schema, if qualified (INDEX, TABLE).
    pub schema: Option<String>,
    /// The index, table, schema or database named (none: DATABASE or SYSTEM without one).
    pub name: Option<String>,
    pub verbose: bool,
    pub concurrently: bool,
}

/// Is `words` (the statement's first words, upper case) a REINDEX?
pub fn is_reindex(words: &[&str]) -> bool {
    words.first() == Some(&"REINDEX")
}

pub fn parse(text: &str, whole: &str, offset: usize) -> PgResult<ReindexStmt> {
    let mut p = TokenParser::new(tokenize(text, usize::MAX)?, text, whole, offset);
    p.pos += 1; // REINDEX
    let (mut verbose, mut concurrently) = (false, false);
    if p.is_punct('(') {
        p.pos += 1;
        loop {
            let at = p.pos;
            match p.word()?.as_str() {
                "verbose" => verbose = p.optional_boolean(),
                "concurrently" => concurrently = p.optional_boolean(),
                "tablespace" => {
                    let tablespace = p.word()?;
                    if tablespace != "pg_default" {
                        return Err(PgError::new(
                            sqlstate::UNDEFINED_OBJECT,
                            format!("tablespace \"{tablespace}\" does not exist"),
                        ));
                    }
                }
                option => {
                    return Err(PgError::syntax(format!(
                        "unrecognized REINDEX option \"{option}\""
                    ))
                    .with_position(p.position_of(at)))
                }
            }
            if p.is_punct(',') {
                p.pos += 1;
                continue;
            }
            p.expect_punct(')')?;
            break;
        }
    }
    let kind = match p.peek() {
        Some(Tok::Word {
            text,
            quoted: false,
        }) => match text.as_str() {
            "index" => ReindexKind::Index,
            "table" => ReindexKind::Table,
            "schema" => ReindexKind::Schema,
            "database" => ReindexKind::Database,
            "system" => ReindexKind::System,
            _ => return Err(p.syntax_error()),
        },
        _ => return Err(p.syntax_error()),
    };
    p.pos += 1;
    if p.is_word("concurrently") {
        p.pos += 1;
        concurrently = true;
    }
    let (mut schema, mut name) = (None, None);
    let name_optional = matches!(kind, ReindexKind::Database | ReindexKind::System);
    if !(name_optional && (p.peek().is_none() || p.is_punct(';'))) {
        let first = p.word()?;
        if p.is_punct('.') && !matches!(kind, ReindexKind::Schema) && !name_optional {
            p.pos += 1;
            schema = Some(first);
            name = Some(p.word()?);
        } else {
            name = Some(first);
        }
    }
    if p.is_punct(';') {
        p.pos += 1;
    }
    if p.peek().is_some() {
        return Err(p.syntax_error());
    }
    Ok(ReindexStmt {
        kind,
        schema,
        name,
        verbose,
        concurrently,
    })
}

/// The tables a REINDEX works on, each with the indexes it rebuilds, in the order it
/// rebuilds them. Errors for what it names that does not exist or is of the wrong kind.
pub fn targets(
    db: &Database,
    temp: Option<&str>,
    stmt: &ReindexStmt,
) -> PgResult<Vec<(TableDef, Vec<IndexDef>)>> {
    let name = stmt.name.as_deref().unwrap_or_default();
    // Where an unqualified name is looked for: the session's temporary schema, then public.
    let schemas: Vec<&str> = match stmt.schema.as_deref() {
        Some("pg_temp") => temp.into_iter().collect(),
        Some(schema) => vec![schema],
        None => temp.into_iter().chain(["public"]).collect(),
    };
    // Not found as `what`: a relation of another kind by that name is the wrong kind.
    let not_found = |what: &str| {
        let catalog = &db.catalog;
        let exists = schemas.iter().any(|s| {
            catalog.table(s, name).is_some()
                || catalog.index(s, name).is_some()
                || catalog.view(s, name).is_some()
        });
        match (exists, &stmt.schema) {
            (true, _) => PgError::new(
                sqlstate::WRONG_OBJECT_TYPE,
                format!("\"{name}\" is not {what}"),
            ),
            (false, Some(schema)) => PgError::undefined_table(&format!("{schema}.{name}")),
            (false, None) => PgError::undefined_table(name),
        }
    };
    match stmt.kind {
        ReindexKind::Index => {
            let index = (schemas.iter().find_map(|s| db.catalog.index(s, name)))
                .ok_or_else(|| not_found("an index"))?;
            let table = db
                .catalog
                .table_by_oid(index.table_oid)
                .ok_or_else(|| PgError::internal(format!("index \"{name}\" has no table")))?;
            Ok(vec![(table, vec![index])])
        }
        ReindexKind::Table => {
            let table = (schemas.iter().find_map(|s| db.catalog.table(s, name)))
                .ok_or_else(|| not_found("a table or materialized view"))?;
            let indexes = db.catalog.indexes_of(table.oid);
            Ok(vec![(table, indexes)])
        }
        ReindexKind::Schema => {
            if oids::namespace_oid(name).is_none() {
                return Err(PgError::new(
                    sqlstate::INVALID_SCHEMA_NAME,
                    format!("schema \"{name}\" does not exist"),
                ));
            }
            Ok(tables_with_indexes(db, |t| t.schema == name))
        }
        ReindexKind::Database => {
            if stmt.name.as_deref().is_some_and(|n| n != DATABASE) {
                return Err(PgError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    "can only reindex the currently open database",
                ));
            }
            // Other sessions' temporary tables are theirs to rebuild.
            Ok(tables_with_indexes(db, |t| {
                !is_temp_schema(&t.schema) || Some(t.schema.as_str()) == temp
            }))
        }
        ReindexKind::System => Ok(Vec::new()),
    }
}

/// The tables `keep` selects that have indexes, by OID, each with its indexes.
fn tables_with_indexes(
    db: &Database,
    keep: impl Fn(&TableDef) -> bool,
) -> Vec<(TableDef, Vec<IndexDef>)> {
    let mut tables: Vec<TableDef> = db.catalog.tables().into_iter().filter(keep).collect();
    tables.sort_by_key(|t| t.oid);
    tables
        .into_iter()
        .map(|t| {
            let indexes = db.catalog.indexes_of(t.oid);
            (t, indexes)
        })
        .filter(|(_, indexes)| !indexes.is_empty())
        .collect()
}

/// Runs REINDEX.
pub fn run(
    run: &StatementRun,
    stmt: &ReindexStmt,
    in_block: bool,
    log: &mut DdlLog,
    notices: &mut Vec<Notice>,
) -> PgResult<Outcome> {
    if stmt.concurrently {
        return Err(PgError::unsupported(
            "REINDEX CONCURRENTLY is not supported: iolab rebuilds an index under the locks of a plain REINDEX",
        ));
    }
    if in_block && !stmt.kind.runs_in_block() {
        return Err(PgError::new(
            sqlstate::ACTIVE_SQL_TRANSACTION,
            format!(
                "REINDEX {} cannot run inside a transaction block",
                stmt.kind.keyword()
            ),
        ));
    }
    let targets = targets(&run.db, run.temp.schema(), stmt)?;
    for (table, indexes) in targets {
        if indexes.is_empty() && stmt.kind == ReindexKind::Table {
            notices.push(Notice::notice(format!(
                "table \"{}\" has no indexes to reindex",
                table.name
            )));
        }
        for index in indexes {
            let usage = ResourceUsage::start();
            reindex(run, &table, &index, log)?;
            if stmt.verbose {
                notices.push(Notice {
                    detail: Some(usage.show()),
                    ..Notice::info(format!("index \"{}\" was reindexed", index.name))
                });
            }
        }
        if stmt.verbose && !stmt.kind.runs_in_block() {
            notices.push(Notice::info(format!(
                "table \"{}.{}\" was reindexed",
                table.schema, table.name
            )));
        }
    }
    Ok(Outcome::Done("REINDEX".into()))
}

/// Builds `index` of `table` anew into a new file, which replaces its old one.
fn reindex(
    run: &StatementRun,
    table: &TableDef,
    index: &IndexDef,
    log: &mut DdlLog,
) -> PgResult<()> {
    let db = &run.db;
    let new_relfilenode = db.catalog.allocate_oid()?;
    // The way back is written down before anything changes.
    log.record(
        db,
        DdlEntry::Reindexed {
            index: index.clone(),
            new_relfilenode,
        },
    )?;
    db.catalog
        .set_index_relfilenode(index.oid, new_relfilenode)?;
    let def = IndexDef {
        relfilenode: new_relfilenode,
        ..index.clone()
    };
    tokio::task::block_in_place(|| btree::reindex(db, &run.ctx, table, &def))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(sql: &str) -> PgResult<ReindexStmt> {
        parse(sql, sql, 0)
    }

    #[test]
    fn reindex_statements_parse_as_postgresql_s() {
        let s = p("REINDEX INDEX i").unwrap();
        assert_eq!(
            (s.kind, s.name.as_deref(), s.verbose),
            (ReindexKind::Index, Some("i"), false)
        );
        let s = p("reindex (verbose) table s.\"T\";").unwrap();
        assert_eq!(
            (s.kind, s.schema.as_deref(), s.name.as_deref(), s.verbose),
            (ReindexKind::Table, Some("s"), Some("T"), true)
        );
        let s = p("REINDEX (VERBOSE off, TABLESPACE pg_default) SCHEMA rs").unwrap();
        assert_eq!(
            (s.kind, s.name.as_deref(), s.verbose),
            (ReindexKind::Schema, Some("rs"), false)
        );
        assert!(p("REINDEX TABLE CONCURRENTLY t").unwrap().concurrently);
        assert!(p("REINDEX (CONCURRENTLY) INDEX i").unwrap().concurrently);
        assert_eq!(p("REINDEX DATABASE").unwrap().name, None);
        assert_eq!(
            p("REINDEX SYSTEM postgres").unwrap().name.as_deref(),
            Some("postgres")
        );
        let e = p("REINDEX (FOO) TABLE t").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("42601", "unrecognized REINDEX option \"foo\"")
        );
        assert_eq!(e.position, Some(10));
        let e = p("REINDEX (TABLESPACE nope) TABLE t").unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("42704", "tablespace \"nope\" does not exist")
        );
        for (bad, near) in [
            ("REINDEX TABLE;", ";"),
            ("REINDEX t", "t"),
            ("REINDEX TABLE t u", "u"),
        ] {
            let e = p(bad).unwrap_err();
            assert_eq!(
                e.message,
                format!("syntax error at or near \"{near}\""),
                "{bad}"
            );
        }
        assert_eq!(
            p("REINDEX INDEX").unwrap_err().message,
            "syntax error at end of input"
        );
    }
}
