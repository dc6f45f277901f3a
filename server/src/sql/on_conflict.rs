//! `INSERT … ON CONFLICT [target] DO NOTHING | DO UPDATE`: which unique indexes decide that
//! a row is left out (PostgreSQL's *arbiter* indexes). The engine does the rest
//! (`iolab_engine::btree::maintain`): rows whose key an arbiter already has, from a
//! committed or this transaction, or from one still running that then commits, are not
//! inserted; DO NOTHING neither counts them in the tag nor returns them with RETURNING,
//! DO UPDATE updates the rows they meet instead (`upsert`).
//!
//! | target | arbiters |
//! |---|---|
//! | none | every unique index of the table |
//! | `(a)` | the unique indexes on exactly column `a`; none is 42P10 |
//! | `ON CONSTRAINT c` | the index of PRIMARY KEY or UNIQUE constraint `c`; none is 42704 |
//!
//! DO UPDATE needs a target (42601), as in PostgreSQL.

use datafusion::sql::sqlparser::ast;
use iolab_catalog::{sqlstate, PgError, PgResult, TableDef};
use iolab_engine::Database;

use crate::sql::ddl::{ident_name, split_name};

/// The OIDs of the arbiter indexes of `on` for an insert into `table`.
pub fn arbiters(db: &Database, table: &TableDef, on: &ast::OnInsert) -> PgResult<Vec<u32>> {
    let ast::OnInsert::OnConflict(conflict) = on else {
        return Err(PgError::syntax("syntax error at or near \"ON\""));
    };
    if let (ast::OnConflictAction::DoUpdate(_), None) =
        (&conflict.action, &conflict.conflict_target)
    {
        return Err(PgError::syntax(
            "ON CONFLICT DO UPDATE requires inference specification or constraint name",
        )
        .with_hint("For example, ON CONFLICT (column_name)."));
    }
    let unique: Vec<_> = db
        .catalog
        .indexes_of(table.oid)
        .into_iter()
        .filter(|i| i.unique)
        .collect();
    match &conflict.conflict_target {
        None => Ok(unique.iter().map(|i| i.oid).collect()),
        Some(ast::ConflictTarget::Columns(columns)) => {
            let mut wanted = Vec::with_capacity(columns.len());
            for column in columns {
                let name = ident_name(column);
                let index = table.column_index(&name).ok_or_else(|| {
                    PgError::new(
                        sqlstate::UNDEFINED_COLUMN,
                        format!("column \"{name}\" does not exist"),
                    )
                })?;
                wanted.push(index);
            }
            wanted.sort_unstable();
            wanted.dedup();
            let found: Vec<u32> = unique
                .iter()
                .filter(|i| {
                    let mut key = i.columns.clone();
                    key.sort_unstable();
                    key == wanted
                })
                .map(|i| i.oid)
                .collect();
            if found.is_empty() {
                return Err(PgError::new(
                    sqlstate::INVALID_COLUMN_REFERENCE,
                    "there is no unique or exclusion constraint matching the ON CONFLICT specification",
                ));
            }
            Ok(found)
        }
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let (_, name) = split_name(name)?;
            unique
                .iter()
                .find(|i| i.constraint.is_some() && i.name == name)
                .map(|i| vec![i.oid])
                .ok_or_else(|| {
                    PgError::new(
                        sqlstate::UNDEFINED_OBJECT,
                        format!(
                            "constraint \"{name}\" for table \"{}\" does not exist",
                            table.name
                        ),
                    )
                })
        }
    }
}
