//! `CLUSTER` and `VACUUM FULL`: a table rewritten into a new file without its dead rows —
//! in an index's order (CLUSTER) or its own (VACUUM FULL) — and its indexes rebuilt, as
//! PostgreSQL 18 does.
//!
//! ```text
//! CLUSTER [VERBOSE] [table [USING index]]
//! CLUSTER [ ( VERBOSE [boolean] [, …] ) ] [table [USING index]]
//! ```
//!
//! The rows are copied by `iolab_engine::heap::rewrite`; here the table changes files as a
//! TRUNCATE's does (a `Truncated` entry of the transaction's DDL log: ROLLBACK gives the
//! old files back, COMMIT removes them), each index is rebuilt into a new file, and CLUSTER
//! marks its index (`pg_index.indisclustered`) so that `CLUSTER t` and `CLUSTER` without a
//! table use it again. The statement holds the table's AccessExclusiveLock
//! (`relation_locks`). `CLUSTER` with a table runs inside a transaction block, without one
//! (every table with a clustered index) not, as in PostgreSQL.
//!
//! Errors are PostgreSQL's: `there is no previously clustered index for table "t"` and
//! `index "x" for table "t" does not exist` (42704), `"x" is not an index for table "t"`
//! and `"x" is not an index` (42809), `unrecognized CLUSTER option "x"` (42601), `CLUSTER cannot run inside a
//! transaction block` (25001). Temporary tables are refused (0A000).

use iolab_catalog::{sqlstate, IndexDef, Persistence, PgError, PgResult, TableDef};
use iolab_engine::analyze::report::ResourceUsage;
use iolab_engine::btree;
use iolab_engine::heap::rewrite::{rewrite_table, RewriteProgress, Rewritten};
use iolab_engine::Database;
use iolab_stats::progress::{cluster, ProgressCommand};

use crate::session::Notice;
use crate::sql::ddl_log::{DdlEntry, DdlLog};
use crate::sql::tokens::{tokenize, Tok, TokenParser};
use crate::sql::{Outcome, StatementRun};

/// A parsed CLUSTER.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterStmt {
    pub verbose: bool,
    /// `(schema, name)`; none: every table with a clustered index.
    pub table: Option<(Option<String>, String)>,
    pub index: Option<String>,
}

/// Is `words` (the statement's first words, upper case) a CLUSTER?
pub fn is_cluster(words: &[&str]) -> bool {
    words.first() == Some(&"CLUSTER")
}

pub fn parse(text: &str, whole: &str, offset: usize) -> PgResult<ClusterStmt> {
    let mut p = TokenParser::new(tokenize(text, usize::MAX)?, text, whole, offset);
    p.pos += 1; // CLUSTER
    let mut stmt = ClusterStmt::default();
    if p.is_punct('(') {
        p.pos += 1;
        loop {
            let at = p.pos;
            let option = p.word()?;
            if option != "verbose" {
                return Err(
                    PgError::syntax(format!("unrecognized CLUSTER option \"{option}\""))
                        .with_position(p.position_of(at)),
                );
            }
            stmt.verbose = p.optional_boolean();
            if p.is_punct(',') {
                p.pos += 1;
                continue;
            }
            p.expect_punct(')')?;
            break;
        }
    } else if p.is_word("verbose") {
        p.pos += 1;
        stmt.verbose = true;
    }
    if let Some(Tok::Word { text: first, .. }) = p.peek().cloned() {
        p.pos += 1;
        let table = if p.is_punct('.') {
            p.pos += 1;
            (Some(first), p.word()?)
        } else {
            (None, first)
        };
        stmt.table = Some(table);
        if p.is_word("using") {
            p.pos += 1;
            stmt.index = Some(p.word()?);
        }
    }
    if p.is_punct(';') {
        p.pos += 1;
    }
    if p.peek().is_some() {
        return Err(p.syntax_error());
    }
    Ok(stmt)
}

/// The tables a CLUSTER rewrites, each with its index.
pub fn targets(run: &StatementRun, stmt: &ClusterStmt) -> PgResult<Vec<(TableDef, IndexDef)>> {
    let db = &run.db;
    let Some((schema, name)) = &stmt.table else {
        return Ok(clustered_tables(db));
    };
    let table = run.resolve_table(schema.as_deref(), name)?;
    if table.persistence == Persistence::Temporary {
        return Err(PgError::unsupported(
            "CLUSTER of a temporary table is not supported",
        ));
    }
    let index = match &stmt.index {
        None => (db.catalog.indexes_of(table.oid).into_iter())
            .find(|i| i.clustered)
            .ok_or_else(|| {
                PgError::new(
                    sqlstate::UNDEFINED_OBJECT,
                    format!("there is no previously clustered index for table \"{name}\""),
                )
            })?,
        Some(index_name) => match db.catalog.index(&table.schema, index_name) {
            Some(index) if index.table_oid == table.oid => index,
            Some(_) => {
                return Err(PgError::new(
                    sqlstate::WRONG_OBJECT_TYPE,
                    format!("\"{index_name}\" is not an index for table \"{name}\""),
                ))
            }
            None if db.catalog.table(&table.schema, index_name).is_some() => {
                return Err(PgError::new(
                    sqlstate::WRONG_OBJECT_TYPE,
                    format!("\"{index_name}\" is not an index"),
                ))
            }
            None => {
                return Err(PgError::new(
                    sqlstate::UNDEFINED_OBJECT,
                    format!("index \"{index_name}\" for table \"{name}\" does not exist"),
                ))
            }
        },
    };
    Ok(vec![(table, index)])
}

/// Every table with an index CLUSTER marked, with that index (what CLUSTER without a
/// table rewrites).
pub fn clustered_tables(db: &Database) -> Vec<(TableDef, IndexDef)> {
    (db.catalog.tables().into_iter())
        .filter_map(|table| {
            let index = (db.catalog.indexes_of(table.oid).into_iter()).find(|i| i.clustered)?;
            Some((table, index))
        })
        .collect()
}

/// Runs CLUSTER.
pub fn run(
    run: &StatementRun,
    stmt: &ClusterStmt,
    in_block: bool,
    log: &mut DdlLog,
    notices: &mut Vec<Notice>,
) -> PgResult<Outcome> {
    if stmt.table.is_none() && in_block {
        return Err(PgError::new(
            sqlstate::ACTIVE_SQL_TRANSACTION,
            "CLUSTER cannot run inside a transaction block",
        ));
    }
    for (table, index) in targets(run, stmt)? {
        let before = run
            .db
            .catalog
            .set_clustered_index(table.oid, Some(index.oid))?;
        log.record(
            &run.db,
            DdlEntry::ClusteredOn {
                table_oid: table.oid,
                index: before,
            },
        )?;
        let messages = rewrite(run, &table, Some(&index), log)?;
        if stmt.verbose {
            notices.extend(messages);
        }
    }
    Ok(Outcome::Done("CLUSTER".into()))
}

/// Rewrites `table` (in `order`'s key order: CLUSTER; else VACUUM FULL) into a new file and
/// rebuilds its indexes; returns VERBOSE's messages.
pub fn rewrite(
    run: &StatementRun,
    table: &TableDef,
    order: Option<&IndexDef>,
    log: &mut DdlLog,
) -> PgResult<Vec<Notice>> {
    if table.persistence == Persistence::Temporary {
        return Err(PgError::unsupported(
            "VACUUM FULL and CLUSTER of a temporary table are not supported",
        ));
    }
    let (db, ctx) = (&run.db, &run.ctx);
    let usage = ResourceUsage::start();
    let progress = ctx.report_progress(ProgressCommand::Cluster, table.oid);
    let command = match order {
        Some(_) => cluster::COMMAND_CLUSTER,
        None => cluster::COMMAND_VACUUM_FULL,
    };
    progress.set(cluster::COMMAND, command);
    progress.set(cluster::INDEX_RELID, order.map_or(0, |i| i.oid));
    progress.set(cluster::PHASE, cluster::SEQ_SCANNING_HEAP);
    progress.set(
        cluster::HEAP_BLKS_TOTAL,
        db.relfile(table.relfilenode)?.nblocks(),
    );
    let new_relfilenode = db.catalog.allocate_oid()?;
    // The way back is written down before anything changes.
    log.record(
        db,
        DdlEntry::Truncated {
            table: table.clone(),
            new_relfilenode,
            indexes: Vec::new(),
        },
    )?;
    let rewritten: Rewritten = tokio::task::block_in_place(|| {
        rewrite_table(
            db,
            ctx,
            table,
            new_relfilenode,
            order,
            &mut |step| match step {
                RewriteProgress::Scanned { blocks, tuples } => {
                    progress.set(cluster::HEAP_BLKS_SCANNED, blocks);
                    progress.set(cluster::HEAP_TUPLES_SCANNED, tuples);
                }
                RewriteProgress::Sorted => progress.set(cluster::PHASE, cluster::WRITING_NEW_HEAP),
                RewriteProgress::Written(rows) => progress.set(cluster::HEAP_TUPLES_WRITTEN, rows),
            },
        )
    })?;
    db.catalog.set_relfilenode(
        table.oid,
        new_relfilenode,
        rewritten.kept as f64,
        rewritten.pages,
    )?;
    let new_table = db.catalog.table_by_oid(table.oid).expect("table rewritten");
    progress.set(cluster::PHASE, cluster::REBUILDING_INDEX);
    for (rebuilt, index) in db.catalog.indexes_of(table.oid).into_iter().enumerate() {
        let new = db.catalog.allocate_oid()?;
        log.record_truncated_index(index.clone(), new)?;
        db.catalog.set_index_relfilenode(index.oid, new)?;
        let def = IndexDef {
            relfilenode: new,
            ..index
        };
        tokio::task::block_in_place(|| btree::rebuild_index(db, ctx, &new_table, &def))?;
        progress.set(cluster::INDEX_REBUILD_COUNT, rebuilt as u64 + 1);
    }
    progress.set(cluster::PHASE, cluster::FINAL_CLEANUP);
    (db.io_stats.relation_counts).vacuumed(
        new_relfilenode,
        rewritten.kept - rewritten.recently_dead,
        rewritten.recently_dead,
        usage.elapsed(),
    );
    let name = format!("{}.{}", table.schema, table.name);
    let first = match order {
        Some(_) => format!("clustering \"{name}\" using sequential scan and sort"),
        None => format!("vacuuming \"{name}\""),
    };
    let found = format!(
        "\"{name}\": found {} removable, {} nonremovable row versions in {} pages",
        rewritten.removed, rewritten.kept, rewritten.pages_before
    );
    let detail = format!(
        "{} dead row versions cannot be removed yet.\n{}.",
        rewritten.recently_dead,
        usage.show()
    );
    Ok(vec![
        Notice::info(first),
        Notice {
            detail: Some(detail),
            ..Notice::info(found)
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(sql: &str) -> PgResult<ClusterStmt> {
        parse(sql, sql, 0)
    }

    #[test]
    fn cluster_statements_parse_as_postgresql_s() {
        assert_eq!(p("CLUSTER").unwrap(), ClusterStmt::default());
        let s = p("cluster verbose s.t using t_a_idx;").unwrap();
        assert!(s.verbose);
        assert_eq!(s.table, Some((Some("s".into()), "t".into())));
        assert_eq!(s.index.as_deref(), Some("t_a_idx"));
        let s = p("CLUSTER (VERBOSE off) t").unwrap();
        assert!(!s.verbose);
        assert_eq!(s.table, Some((None, "t".into())));
        assert!(p("CLUSTER (VERBOSE) t").unwrap().verbose);
        let e = p("CLUSTER (FOO) t").unwrap_err();
        assert_eq!(e.message, "unrecognized CLUSTER option \"foo\"");
        assert_eq!(
            p("CLUSTER t USING").unwrap_err().code,
            sqlstate::SYNTAX_ERROR
        );
        assert_eq!(p("CLUSTER t x").unwrap_err().code, sqlstate::SYNTAX_ERROR);
    }
}
