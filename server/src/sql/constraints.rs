//! PRIMARY KEY and UNIQUE constraints declared in CREATE TABLE.
//!
//! Each is enforced by a unique B-tree index of the constraint's name (the engine's
//! `btree::unique`), made right after the table, as PostgreSQL does:
//!
//! * named `CONSTRAINT name …`, or else `<table>_pkey` / `<table>_<column>_key`, with a
//!   number appended while the name is taken (PostgreSQL's `ChooseRelationName`);
//! * a primary key makes its column NOT NULL (and conflicts with an explicit `NULL`);
//! * duplicates go, as PostgreSQL's `transformIndexConstraints` removes them: constraints
//!   on the same column are made once (the primary key first, then in the order written;
//!   an unnamed one takes the name of a later named duplicate);
//! * at most one primary key (42P16), columns that exist (42703).
//!
//! iolab's B-tree has one key column, so a constraint on several columns, like
//! `NULLS NOT DISTINCT`, `DEFERRABLE` and index parameters, fails with 0A000.

use datafusion::sql::sqlparser::ast::{self, ColumnOption, TableConstraint};
use iolab_catalog::{
    sqlstate, ColumnDef, ConstraintKind, IndexConstraint, IndexDef, PgError, PgResult, TableDef,
};
use iolab_engine::btree;

use crate::sql::ddl::ident_name;
use crate::sql::StatementRun;

/// One PRIMARY KEY or UNIQUE constraint as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyConstraint {
    pub name: Option<String>,
    pub kind: ConstraintKind,
    /// The key columns, in order.
    pub columns: Vec<String>,
}

/// The constraint a column option declares on column `column` (`None`: not a key
/// constraint).
pub fn from_column_option(
    column: &str,
    option: &ast::ColumnOptionDef,
) -> Option<PgResult<KeyConstraint>> {
    let (kind, name, columns, rest) = match &option.option {
        ColumnOption::PrimaryKey(c) => (
            ConstraintKind::PrimaryKey,
            &c.name,
            &c.columns,
            Unsupported::of_primary(c),
        ),
        ColumnOption::Unique(c) => (
            ConstraintKind::Unique,
            &c.name,
            &c.columns,
            Unsupported::of_unique(c),
        ),
        _ => return None,
    };
    if !columns.is_empty() {
        return Some(Err(PgError::syntax("syntax error at or near \"(\"")));
    }
    Some(rest.check().map(|()| KeyConstraint {
        name: option.name.as_ref().or(name.as_ref()).map(ident_name),
        kind,
        columns: vec![column.to_string()],
    }))
}

/// The constraint a table constraint declares; `None` for kinds this module does not do
/// (FOREIGN KEY, CHECK: the caller refuses them).
pub fn from_table_constraint(c: &TableConstraint) -> Option<PgResult<KeyConstraint>> {
    let (kind, name, columns, rest) = match c {
        TableConstraint::PrimaryKey(c) => (
            ConstraintKind::PrimaryKey,
            &c.name,
            &c.columns,
            Unsupported::of_primary(c),
        ),
        TableConstraint::Unique(c) => (
            ConstraintKind::Unique,
            &c.name,
            &c.columns,
            Unsupported::of_unique(c),
        ),
        _ => return None,
    };
    let result = (|| {
        rest.check()?;
        let mut names: Vec<String> = Vec::with_capacity(columns.len());
        for column in columns {
            let ast::Expr::Identifier(id) = &column.column.expr else {
                return Err(PgError::syntax(format!(
                    "syntax error at or near \"{}\"",
                    column.column.expr
                )));
            };
            let name = ident_name(id);
            if names.contains(&name) {
                let what = match kind {
                    ConstraintKind::PrimaryKey => "primary key",
                    ConstraintKind::Unique => "unique",
                };
                return Err(PgError::new(
                    sqlstate::DUPLICATE_COLUMN,
                    format!("column \"{name}\" appears twice in {what} constraint"),
                ));
            }
            names.push(name);
        }
        check_key_columns(names.len())?;
        Ok(KeyConstraint {
            name: name.as_ref().map(ident_name),
            kind,
            columns: names,
        })
    })();
    Some(result)
}

/// PostgreSQL's limit on an index's columns (54011 beyond it).
pub fn check_key_columns(n: usize) -> PgResult<()> {
    if n > btree::key::INDEX_MAX_KEYS {
        return Err(PgError::new(
            sqlstate::TOO_MANY_COLUMNS,
            format!(
                "cannot use more than {} columns in an index",
                btree::key::INDEX_MAX_KEYS
            ),
        ));
    }
    Ok(())
}

/// What a key constraint may carry that iolab does not do.
struct Unsupported {
    deferrable: bool,
    index_options: bool,
    nulls_not_distinct: bool,
}

impl Unsupported {
    fn of_primary(c: &ast::PrimaryKeyConstraint) -> Unsupported {
        Unsupported {
            deferrable: c.characteristics.is_some(),
            index_options: c.index_name.is_some()
                || c.index_type.is_some()
                || !c.index_options.is_empty(),
            nulls_not_distinct: false,
        }
    }

    fn of_unique(c: &ast::UniqueConstraint) -> Unsupported {
        Unsupported {
            deferrable: c.characteristics.is_some(),
            index_options: c.index_name.is_some()
                || c.index_type.is_some()
                || !c.index_options.is_empty(),
            nulls_not_distinct: c.nulls_distinct == ast::NullsDistinctOption::NotDistinct,
        }
    }

    fn check(&self) -> PgResult<()> {
        let message = if self.deferrable {
            "DEFERRABLE and INITIALLY constraint attributes are not supported"
        } else if self.index_options {
            "index options of a constraint are not supported"
        } else if self.nulls_not_distinct {
            "NULLS NOT DISTINCT is not supported"
        } else {
            return Ok(());
        };
        Err(PgError::unsupported(message))
    }
}

/// Checks the constraints of a new table, marks primary key columns NOT NULL, and returns
/// the constraints to make, in PostgreSQL's order, without duplicates (see the module
/// comment). `explicitly_nullable` names the columns declared `NULL`.
pub fn plan(
    table: &str,
    columns: &mut [ColumnDef],
    explicitly_nullable: &[String],
    written: Vec<KeyConstraint>,
) -> PgResult<Vec<KeyConstraint>> {
    let primary_keys = written
        .iter()
        .filter(|c| c.kind == ConstraintKind::PrimaryKey)
        .count();
    if primary_keys > 1 {
        return Err(PgError::new(
            sqlstate::INVALID_TABLE_DEFINITION,
            format!("multiple primary keys for table \"{table}\" are not allowed"),
        ));
    }
    for c in &written {
        for name in &c.columns {
            let Some(column) = columns.iter_mut().find(|col| &col.name == name) else {
                return Err(PgError::new(
                    sqlstate::UNDEFINED_COLUMN,
                    format!("column \"{name}\" named in key does not exist"),
                ));
            };
            if c.kind == ConstraintKind::PrimaryKey {
                if explicitly_nullable.contains(name) {
                    return Err(PgError::syntax(format!(
                        "conflicting NULL/NOT NULL declarations for column \"{name}\" of table \"{table}\""
                    )));
                }
                column.not_null = true;
            }
        }
    }
    let (mut ordered, others): (Vec<_>, Vec<_>) = written
        .into_iter()
        .partition(|c| c.kind == ConstraintKind::PrimaryKey);
    for c in others {
        match ordered.iter_mut().find(|kept| kept.columns == c.columns) {
            Some(kept) => {
                if kept.name.is_none() {
                    kept.name = c.name;
                }
            }
            None => ordered.push(c),
        }
    }
    Ok(ordered)
}

/// Makes the index (and constraint) of each of `constraints` on `table` (a new, empty
/// one, or ALTER TABLE ADD's, which checks its rows); the indexes' OIDs. The caller's DDL
/// log entry removes them on ROLLBACK.
pub fn create(
    run: &StatementRun,
    table: &TableDef,
    constraints: &[KeyConstraint],
) -> PgResult<Vec<u32>> {
    let mut created = Vec::with_capacity(constraints.len());
    let db = &run.db;
    for c in constraints {
        let columns: Vec<usize> = (c.columns.iter())
            .map(|name| table.column_index(name).expect("plan checked the column"))
            .collect();
        let name = match &c.name {
            Some(name) => {
                crate::sql::ddl::check_identifier(name)?;
                if db.catalog.relation_name_taken(&table.schema, name) {
                    return Err(PgError::new(
                        sqlstate::DUPLICATE_TABLE,
                        format!("relation \"{name}\" already exists"),
                    ));
                }
                name.clone()
            }
            None => {
                let names: Vec<&str> = c.columns.iter().map(String::as_str).collect();
                db.catalog
                    .choose_constraint_name(&table.schema, &table.name, &names, c.kind)
            }
        };
        let oid = db.catalog.allocate_oid()?;
        let def = IndexDef {
            unique: true,
            constraint: Some(IndexConstraint {
                kind: c.kind,
                oid: db.catalog.allocate_oid()?,
            }),
            ..IndexDef::on_columns(oid, name, table, &columns)
        };
        btree::create_index(db, &run.ctx, table, &def)?;
        created.push(oid);
    }
    Ok(created)
}

/// PostgreSQL's refusal to drop the index of a constraint (2BP01).
pub fn index_required(index: &IndexDef, table: &str) -> PgError {
    PgError::new(
        sqlstate::DEPENDENT_OBJECTS_STILL_EXIST,
        format!(
            "cannot drop index {0} because constraint {0} on table {table} requires it",
            index.name
        ),
    )
    .with_hint(format!(
        "You can drop constraint {} on table {table} instead.",
        index.name
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_catalog::PgType;

    fn col(name: &str) -> ColumnDef {
        ColumnDef {
            name: name.into(),
            ty: PgType::Int4,
            not_null: false,
        }
    }

    fn key(kind: ConstraintKind, name: Option<&str>, column: &str) -> KeyConstraint {
        KeyConstraint {
            name: name.map(String::from),
            kind,
            columns: vec![column.into()],
        }
    }

    use ConstraintKind::{PrimaryKey, Unique};

    #[test]
    fn duplicates_go_and_the_primary_key_comes_first() {
        // PostgreSQL 18: `a int unique unique, b int primary key unique, c int,
        // unique(c), unique(c), constraint cc unique (a)` makes u1_pkey (b), cc (a),
        // u1_c_key (c).
        let mut columns = vec![col("a"), col("b"), col("c")];
        let written = vec![
            key(Unique, None, "a"),
            key(Unique, None, "a"),
            key(PrimaryKey, None, "b"),
            key(Unique, None, "b"),
            key(Unique, None, "c"),
            key(Unique, None, "c"),
            key(Unique, Some("cc"), "a"),
        ];
        let planned = plan("u1", &mut columns, &[], written).unwrap();
        assert_eq!(
            planned,
            vec![
                key(PrimaryKey, None, "b"),
                key(Unique, Some("cc"), "a"),
                key(Unique, None, "c")
            ]
        );
        let not_null: Vec<bool> = columns.iter().map(|c| c.not_null).collect();
        assert_eq!(not_null, [false, true, false]);
    }

    #[test]
    fn what_postgres_refuses() {
        let mut columns = vec![col("a"), col("b")];
        let two = vec![key(PrimaryKey, None, "a"), key(PrimaryKey, None, "b")];
        let e = plan("u2", &mut columns, &[], two).unwrap_err();
        assert_eq!(e.code, "42P16");
        assert_eq!(
            e.message,
            "multiple primary keys for table \"u2\" are not allowed"
        );
        let e = plan("u4", &mut columns, &[], vec![key(Unique, None, "x")]).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("42703", "column \"x\" named in key does not exist")
        );
        let e = plan(
            "u5",
            &mut columns,
            &["a".into()],
            vec![key(PrimaryKey, None, "a")],
        )
        .unwrap_err();
        assert_eq!(e.code, "42601");
    }
}
