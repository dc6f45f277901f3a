//! PostgreSQL's statistics views per relation, over the counts the buffer pool and the
//! B-tree scans keep by relation file (`iolab_stats::relation`):
//!
//! | view | rows |
//! |---|---|
//! | `pg_statio_all_tables`, `pg_statio_user_tables` | blocks read and hit per table, and its indexes' |
//! | `pg_statio_all_indexes`, `pg_statio_user_indexes` | blocks read and hit per index |
//! | `pg_stat_all_tables`, `pg_stat_user_tables` | scans of each table and the rows they read; rows inserted, live and dead; VACUUM and ANALYZE |
//! | `pg_stat_all_indexes`, `pg_stat_user_indexes` | scans of each index, entries they returned, rows fetched through it |
//! | `pg_stat_reset()` | zeroes them all, and `pg_stat_database`'s row of the database |
//!
//! `heap_blks_*` are a table's own blocks, `idx_blks_*` the sum over its indexes (NULL for
//! a table without one, as PostgreSQL's sum over none); `*_read` counts blocks read into
//! the pool (a combined read of 16 blocks is 16), `*_hit` blocks found there. The TOAST
//! columns are NULL: iolab has no TOAST tables. `idx_scan` counts index searches (EXPLAIN's
//! `Index Searches:`), `idx_tup_read` the entries they returned, `idx_tup_fetch` the live
//! rows plain Index Scans fetched (a Bitmap Heap Scan's rows are not counted there, as in
//! PostgreSQL).
//!
//! `pg_stat_*_tables` is PostgreSQL's view: `seq_scan` counts Seq Scans and the heap scans
//! of CREATE INDEX, `seq_tup_read` the rows they returned; `idx_scan` and `last_idx_scan`
//! sum and take the latest over the table's indexes (NULL without one), and
//! `idx_tup_fetch` adds the rows Bitmap Heap Scans fetched from the table to those Index
//! Scans fetched through the indexes. `n_tup_ins`, `n_tup_upd`, `n_tup_del`,
//! `n_live_tup`, `n_dead_tup`, `n_mod_since_analyze` and `n_ins_since_vacuum` change when
//! the writing transaction ends (an aborted one leaves its inserted rows and new versions
//! dead), and ANALYZE and VACUUM set the live and dead counts to what they saw (VACUUM's
//! dead ones are those a running transaction may still see). `n_tup_newpage_upd` counts
//! updates whose new version went to another page (iolab has no HOT updates:
//! `n_tup_hot_upd` is 0), and autovacuum's columns are 0 (NULL for the `last_auto*`
//! times): iolab has none.
//!
//! iolab's own catalogs are computed, not stored, so the `all` views list the same user
//! relations as the `user` ones. Counts are kept in memory, not across a restart.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_engine::Database;
use iolab_stats::{RelationCounts, RelationStats};

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::functions::{def, per_row, relation_oids, Def};

const TABLE_COLUMNS: &str = "relid oid, schemaname name, relname name, \
    heap_blks_read bigint, heap_blks_hit bigint, idx_blks_read bigint, idx_blks_hit bigint, \
    toast_blks_read bigint, toast_blks_hit bigint, tidx_blks_read bigint, tidx_blks_hit bigint";

const TABLE_ACTIVITY_COLUMNS: &str = "relid oid, schemaname name, relname name, \
    seq_scan bigint, last_seq_scan timestamp with time zone, seq_tup_read bigint, \
    idx_scan bigint, last_idx_scan timestamp with time zone, idx_tup_fetch bigint, \
    n_tup_ins bigint, n_tup_upd bigint, n_tup_del bigint, n_tup_hot_upd bigint, \
    n_tup_newpage_upd bigint, n_live_tup bigint, n_dead_tup bigint, \
    n_mod_since_analyze bigint, n_ins_since_vacuum bigint, \
    last_vacuum timestamp with time zone, last_autovacuum timestamp with time zone, \
    last_analyze timestamp with time zone, last_autoanalyze timestamp with time zone, \
    vacuum_count bigint, autovacuum_count bigint, analyze_count bigint, \
    autoanalyze_count bigint, total_vacuum_time double precision, \
    total_autovacuum_time double precision, total_analyze_time double precision, \
    total_autoanalyze_time double precision";

const INDEX_COLUMNS: &str = "relid oid, indexrelid oid, schemaname name, relname name, \
    indexrelname name, idx_blks_read bigint, idx_blks_hit bigint";

const INDEX_SCAN_COLUMNS: &str = "relid oid, indexrelid oid, schemaname name, relname name, \
    indexrelname name, idx_scan bigint, last_idx_scan timestamp with time zone, \
    idx_tup_read bigint, idx_tup_fetch bigint";

pub fn statio_tables_schema() -> SchemaRef {
    static SCHEMA: std::sync::LazyLock<SchemaRef> =
        std::sync::LazyLock::new(|| schema_of(&parse_columns(TABLE_COLUMNS)));
    SCHEMA.clone()
}

pub fn statio_indexes_schema() -> SchemaRef {
    static SCHEMA: std::sync::LazyLock<SchemaRef> =
        std::sync::LazyLock::new(|| schema_of(&parse_columns(INDEX_COLUMNS)));
    SCHEMA.clone()
}

pub fn stat_tables_schema() -> SchemaRef {
    static SCHEMA: std::sync::LazyLock<SchemaRef> =
        std::sync::LazyLock::new(|| schema_of(&parse_columns(TABLE_ACTIVITY_COLUMNS)));
    SCHEMA.clone()
}

fn stats_of(totals: &HashMap<u32, RelationStats>, relfilenode: u32) -> RelationStats {
    totals.get(&relfilenode).copied().unwrap_or_default()
}

fn counts(totals: &HashMap<u32, RelationStats>, relfilenode: u32) -> RelationCounts {
    stats_of(totals, relfilenode).counts
}

/// A timestamp column's value (NULL for none).
pub(super) fn time(t: Option<DateTime<Utc>>) -> V {
    t.map_or(V::Null, |t| V::Int(t.timestamp_micros()))
}

/// One row per table: its identity columns, then `columns(its stats, its indexes' counts)`.
fn table_rows(
    db: &Database,
    columns: impl Fn(&RelationStats, &[RelationCounts]) -> Vec<V>,
) -> Vec<Vec<V>> {
    let totals = db.io_stats.relation_counts.snapshot();
    let indexes = db.catalog.indexes();
    db.catalog
        .tables()
        .iter()
        .map(|t| {
            let of_indexes: Vec<RelationCounts> = indexes
                .iter()
                .filter(|i| i.table_oid == t.oid)
                .map(|i| counts(&totals, i.relfilenode))
                .collect();
            let mut row = vec![V::oid(t.oid), V::text(&t.schema), V::text(&t.name)];
            row.extend(columns(&stats_of(&totals, t.relfilenode), &of_indexes));
            row
        })
        .collect()
}

/// The sum of `f` over a table's indexes; NULL for none, as PostgreSQL's `sum()`.
fn index_sum(indexes: &[RelationCounts], f: fn(&RelationCounts) -> u64) -> V {
    if indexes.is_empty() {
        V::Null
    } else {
        V::Int(indexes.iter().map(f).sum::<u64>() as i64)
    }
}

/// `pg_statio_*_tables`: one row per table.
pub fn statio_tables_batch(db: &Database) -> Result<RecordBatch> {
    let rows = table_rows(db, |table, indexes| {
        let mut row = vec![
            V::Int(table.counts.read as i64),
            V::Int(table.counts.hit as i64),
            index_sum(indexes, |c| c.read),
            index_sum(indexes, |c| c.hit),
        ];
        row.extend([V::Null, V::Null, V::Null, V::Null]); // TOAST
        row
    });
    build_batch(&statio_tables_schema(), &rows)
}

/// `pg_stat_*_tables`: one row per table.
pub fn stat_tables_batch(db: &Database) -> Result<RecordBatch> {
    let rows = table_rows(db, |table, indexes| {
        let (c, r) = (&table.counts, &table.rows);
        let idx_tup_fetch = match index_sum(indexes, |c| c.index_tuples_fetched) {
            V::Int(n) => V::Int(n + c.bitmap_tuples_fetched as i64),
            none => none,
        };
        vec![
            V::Int(c.seq_scans as i64),
            time(c.last_seq_scan),
            V::Int(c.seq_tuples_read as i64),
            index_sum(indexes, |c| c.index_scans),
            time(indexes.iter().filter_map(|c| c.last_index_scan).max()),
            idx_tup_fetch,
            V::Int(r.inserted as i64),
            V::Int(r.updated as i64),
            V::Int(r.deleted as i64),
            V::Int(0), // n_tup_hot_upd: iolab has no HOT updates
            V::Int(c.newpage_updates as i64),
            V::Int(r.live),
            V::Int(r.dead),
            V::Int(r.modified_since_analyze),
            V::Int(r.inserted_since_vacuum),
            time(r.last_vacuum),
            V::Null, // last_autovacuum
            time(r.last_analyze),
            V::Null, // last_autoanalyze
            V::Int(r.vacuum_count as i64),
            V::Int(0), // autovacuum_count
            V::Int(r.analyze_count as i64),
            V::Int(0), // autoanalyze_count
            V::Float(r.total_vacuum_ms),
            V::Float(0.0),
            V::Float(r.total_analyze_ms),
            V::Float(0.0),
        ]
    });
    build_batch(&stat_tables_schema(), &rows)
}

pub fn stat_indexes_schema() -> SchemaRef {
    static SCHEMA: std::sync::LazyLock<SchemaRef> =
        std::sync::LazyLock::new(|| schema_of(&parse_columns(INDEX_SCAN_COLUMNS)));
    SCHEMA.clone()
}

/// One row per index: its identity columns, then `counts(its counts)`.
fn index_rows(db: &Database, counts_of: impl Fn(RelationCounts) -> Vec<V>) -> Vec<Vec<V>> {
    let totals = db.io_stats.relation_counts.snapshot();
    let tables: HashMap<u32, String> = db
        .catalog
        .tables()
        .into_iter()
        .map(|t| (t.oid, t.name))
        .collect();
    db.catalog
        .indexes()
        .iter()
        .map(|i| {
            let mut row = vec![
                V::oid(i.table_oid),
                V::oid(i.oid),
                V::text(&i.schema),
                V::opt_text(tables.get(&i.table_oid).cloned()),
                V::text(&i.name),
            ];
            row.extend(counts_of(counts(&totals, i.relfilenode)));
            row
        })
        .collect()
}

/// `pg_statio_*_indexes`: one row per index.
pub fn statio_indexes_batch(db: &Database) -> Result<RecordBatch> {
    let rows = index_rows(db, |c| vec![V::Int(c.read as i64), V::Int(c.hit as i64)]);
    build_batch(&statio_indexes_schema(), &rows)
}

/// `pg_stat_*_indexes`: one row per index.
pub fn stat_indexes_batch(db: &Database) -> Result<RecordBatch> {
    let rows = index_rows(db, |c| {
        vec![
            V::Int(c.index_scans as i64),
            time(c.last_index_scan),
            V::Int(c.index_tuples_read as i64),
            V::Int(c.index_tuples_fetched as i64),
        ]
    });
    build_batch(&stat_indexes_schema(), &rows)
}

/// `pg_stat_reset()`: the per-relation counts back to zero; and
/// `pg_stat_reset_single_table_counters(oid)`: one table's or index's (an OID that names
/// neither is let be, as in PostgreSQL). Both set the database's `stats_reset` and return
/// `void`, shown as an empty text value as psql shows PostgreSQL's void.
pub(super) fn functions() -> Vec<Def> {
    vec![
        def(
            "pg_stat_reset",
            0..=0,
            datafusion::arrow::datatypes::DataType::Utf8,
            |ctx, _, rows| {
                ctx.shared.db.io_stats.relation_counts.reset();
                ctx.shared.db.io_stats.database.reset();
                per_row(rows, |_| Ok(V::text("")))
            },
        )
        .volatile(),
        def(
            "pg_stat_reset_single_table_counters",
            1..=1,
            datafusion::arrow::datatypes::DataType::Utf8,
            |ctx, args, rows| {
                let s = ctx.snapshot();
                let oids = relation_oids(&s, &s.relations(), &args[0])?;
                let db = &ctx.shared.db;
                per_row(rows, |i| {
                    let Some(oid) = oids[i] else {
                        return Ok(V::Null);
                    };
                    if let Some(rel) = s.relation(oid) {
                        db.io_stats.relation_counts.forget(rel.relfilenode);
                    }
                    db.io_stats.database.mark_reset();
                    Ok(V::text(""))
                })
            },
        )
        .volatile(),
    ]
}
