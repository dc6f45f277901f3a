//! Sequences and column defaults in the catalog views, as PostgreSQL 18 shows them:
//! `pg_class` rows of kind `S` (columns `last_value`, `log_cnt`, `is_called`),
//! `pg_sequence`, the `pg_sequences` view, `information_schema.sequences`, and
//! `pg_attrdef` (one row per column default but identity columns, whose default is their
//! sequence: `pg_attribute.attidentity` says so instead). `pg_attrdef.adbin` holds the
//! default as SQL text, which `pg_get_expr` returns as is.

use iolab_catalog::SequenceDef;

use super::batch::V;
use super::oids;
use super::snapshot::{RelColumn, Relation, Snapshot};

/// A sequence as `pg_class` describes it: one page, one row of three columns.
pub fn relation(seq: &SequenceDef) -> Relation {
    let column = |name: &str, type_oid: u32| RelColumn {
        name: name.into(),
        type_oid,
        typmod: -1,
        not_null: true,
    };
    Relation {
        oid: seq.oid,
        name: seq.name.clone(),
        namespace: oids::namespace_oid(&seq.schema).unwrap_or(oids::PUBLIC_NAMESPACE),
        kind: 'S',
        // A temporary table's `serial` owns a sequence in its temporary schema.
        persistence: match iolab_catalog::store::is_temp_schema(&seq.schema) {
            true => 't',
            false => 'p',
        },
        am: 0,
        relfilenode: seq.oid,
        pages: 1,
        all_visible: 0,
        tuples: 1.0,
        columns: vec![
            column("last_value", 20),
            column("log_cnt", 20),
            column("is_called", 16),
        ],
        has_index: false,
        options: Vec::new(),
        dropped_attributes: Vec::new(),
    }
}

/// `pg_attrdef`: `oid, adrelid, adnum, adbin`. A default has no OID of its own in iolab;
/// it is given one from its table's and its column's numbers.
pub fn pg_attrdef(s: &Snapshot) -> Vec<Vec<V>> {
    let mut rows = Vec::new();
    for (table_oid, d) in &s.defaults {
        if d.identity.is_some() {
            continue;
        }
        let Some(table) = s.tables.iter().find(|t| t.oid == *table_oid) else {
            continue;
        };
        let Some(attnum) = table.column_index(&d.column).map(|i| table.attnum(i)) else {
            continue;
        };
        rows.push(vec![
            V::Int(*table_oid as i64 * 2000 + attnum as i64),
            V::oid(*table_oid),
            V::Int(attnum as i64),
            V::Text(crate::sql::defaults::default_text(&s.sequences, &d.value)),
        ]);
    }
    rows
}

/// `pg_sequence`: the definitions.
pub fn pg_sequence(s: &Snapshot) -> Vec<Vec<V>> {
    s.sequences
        .iter()
        .map(|q| {
            vec![
                V::oid(q.oid),
                V::oid(q.ty.oid()),
                V::Int(q.start),
                V::Int(q.increment),
                V::Int(q.max),
                V::Int(q.min),
                V::Int(q.cache),
                V::Bool(q.cycle),
            ]
        })
        .collect()
}

/// `pg_sequences`: the definitions with their schema, owner and last value (NULL until
/// the first `nextval`).
pub fn pg_sequences(s: &Snapshot) -> Vec<Vec<V>> {
    s.sequences
        .iter()
        .map(|q| {
            let last = match s.db.catalog.sequence_values.state(q) {
                Ok(state) if state.position.is_called => V::Int(state.position.last_value),
                _ => V::Null,
            };
            vec![
                V::text(&q.schema),
                V::text(&q.name),
                V::text(oids::role_name(oids::POSTGRES_ROLE).unwrap_or("postgres")),
                V::Text(q.ty.format_type()),
                V::Int(q.start),
                V::Int(q.min),
                V::Int(q.max),
                V::Int(q.increment),
                V::Bool(q.cycle),
                V::Int(q.cache),
                last,
            ]
        })
        .collect()
}

/// `information_schema.sequences`: numbers as text, precision in bits.
pub fn information_schema_sequences(s: &Snapshot) -> Vec<Vec<V>> {
    s.sequences
        .iter()
        .map(|q| {
            let bits = match q.ty {
                iolab_catalog::PgType::Int2 => 16,
                iolab_catalog::PgType::Int4 => 32,
                _ => 64,
            };
            vec![
                V::text(oids::DATABASE_NAME),
                V::text(&q.schema),
                V::text(&q.name),
                V::Text(q.ty.format_type()),
                V::Int(bits),
                V::Int(2),
                V::Int(0),
                V::Text(q.start.to_string()),
                V::Text(q.min.to_string()),
                V::Text(q.max.to_string()),
                V::Text(q.increment.to_string()),
                V::text(if q.cycle { "YES" } else { "NO" }),
            ]
        })
        .collect()
}

/// What psql's `\d` shows in the Default column of a table's column: the default's text,
/// or for an identity column NULL (psql prints the identity from `attidentity`).
pub fn psql_default(s: &Snapshot, table_oid: u32, column: &str) -> (V, V) {
    match s.column_default(table_oid, column) {
        None => (V::Null, V::text("")),
        Some(d) => match d.identity {
            Some(identity) => (V::Null, V::char(identity.code())),
            None => (
                V::Text(crate::sql::defaults::default_text(&s.sequences, &d.value)),
                V::text(""),
            ),
        },
    }
}
