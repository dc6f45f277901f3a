//! PRIMARY KEY and UNIQUE constraints as the catalogs show them: `pg_constraint`,
//! `pg_get_constraintdef`, and information_schema's `table_constraints`,
//! `key_column_usage` and `constraint_column_usage`. Each constraint is the unique index
//! of its name (`IndexDef::constraint`); iolab keeps no other constraints in
//! `pg_constraint` (PostgreSQL 18 also lists NOT NULL constraints there, as `n`).

use iolab_catalog::{IndexConstraint, IndexDef, TableDef};

use super::batch::V;
use super::oids;
use super::snapshot::{quote_ident, Snapshot};

/// Each constraint with its index and table, in index OID order.
fn constraints(s: &Snapshot) -> impl Iterator<Item = (IndexConstraint, &IndexDef, &TableDef)> {
    s.indexes.iter().filter_map(|i| {
        let table = s.tables.iter().find(|t| t.oid == i.table_oid)?;
        Some((i.constraint?, i, table))
    })
}

/// `pg_get_constraintdef(oid)`: `PRIMARY KEY (b)`, `UNIQUE (a)`.
pub fn definition(s: &Snapshot, oid: u32) -> Option<String> {
    let (c, index, table) = constraints(s).find(|(c, _, _)| c.oid == oid)?;
    Some(format!(
        "{} ({})",
        c.kind.sql(),
        key_columns(index, table).join(", ")
    ))
}

fn key_columns(index: &IndexDef, table: &TableDef) -> Vec<String> {
    index
        .columns
        .iter()
        .map(|&c| quote_ident(&table.columns[c].name))
        .collect()
}

/// `pg_constraint`, PostgreSQL 18's columns.
pub fn pg_constraint(s: &Snapshot) -> Vec<Vec<V>> {
    constraints(s)
        .map(|(c, index, table)| {
            let mut row = vec![
                V::oid(c.oid),
                V::text(&index.name),
                V::oid(oids::namespace_oid(&index.schema).unwrap_or(oids::PUBLIC_NAMESPACE)),
                V::char(c.kind.contype()),
                V::Bool(false), // condeferrable
                V::Bool(false), // condeferred
                V::Bool(true),  // conenforced
                V::Bool(true),  // convalidated
                V::oid(table.oid),
                V::oid(0), // contypid
                V::oid(index.oid),
                V::oid(0), // conparentid
                V::oid(0), // confrelid
                V::char(' '),
                V::char(' '),
                V::char(' '),
                V::Bool(true), // conislocal
                V::Int(0),     // coninhcount
                V::Bool(true), // connoinherit
                V::Bool(false),
                V::TextArray(
                    (index.columns.iter())
                        .map(|&c| table.attnum(c).to_string())
                        .collect(),
                ),
            ];
            // confkey … conbin: foreign keys, exclusion and check constraints only.
            row.extend(std::iter::repeat_n(V::Null, 7));
            row
        })
        .collect()
}

/// `information_schema.table_constraints` (the PRIMARY KEY and UNIQUE rows).
pub fn table_constraints(s: &Snapshot) -> Vec<Vec<V>> {
    constraints(s)
        .map(|(c, index, table)| {
            vec![
                V::text(oids::DATABASE_NAME),
                V::text(&index.schema),
                V::text(&index.name),
                V::text(oids::DATABASE_NAME),
                V::text(&table.schema),
                V::text(&table.name),
                V::text(c.kind.sql()),
                V::text("NO"),
                V::text("NO"),
                V::text("YES"),
                match c.kind {
                    iolab_catalog::ConstraintKind::Unique => V::text("YES"),
                    iolab_catalog::ConstraintKind::PrimaryKey => V::Null,
                },
            ]
        })
        .collect()
}

/// `information_schema.key_column_usage`: one row per key column.
pub fn key_column_usage(s: &Snapshot) -> Vec<Vec<V>> {
    constraints(s)
        .flat_map(|(_, index, table)| {
            index.columns.iter().enumerate().map(move |(i, &c)| {
                vec![
                    V::text(oids::DATABASE_NAME),
                    V::text(&index.schema),
                    V::text(&index.name),
                    V::text(oids::DATABASE_NAME),
                    V::text(&table.schema),
                    V::text(&table.name),
                    V::text(&table.columns[c].name),
                    V::Int(i as i64 + 1),
                    V::Null,
                ]
            })
        })
        .collect()
}

/// `information_schema.constraint_column_usage`: the columns each constraint uses.
pub fn constraint_column_usage(s: &Snapshot) -> Vec<Vec<V>> {
    constraints(s)
        .flat_map(|(_, index, table)| {
            index.columns.iter().map(move |&c| {
                vec![
                    V::text(oids::DATABASE_NAME),
                    V::text(&table.schema),
                    V::text(&table.name),
                    V::text(&table.columns[c].name),
                    V::text(oids::DATABASE_NAME),
                    V::text(&index.schema),
                    V::text(&index.name),
                ]
            })
        })
        .collect()
}
