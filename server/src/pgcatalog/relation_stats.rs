//! PostgreSQL's statistics views per relation, over the counts the buffer pool and the
//! B-tree scans keep by relation file (`iolab_stats::relation`):
//!
//! | view | rows |
//! |---|---|
//! | `pg_statio_all_tables`, `pg_statio_user_tables` | blocks read and hit per table, and its indexes' |
//! | `pg_statio_all_indexes`, `pg_statio_user_indexes` | blocks read and hit per index |
//! | `pg_stat_all_indexes`, `pg_stat_user_indexes` | scans of each index, entries they returned, rows fetched through it |
//! | `pg_stat_reset()` | zeroes them all |
//!
//! `heap_blks_*` are a table's own blocks, `idx_blks_*` the sum over its indexes (NULL for
//! a table without one, as PostgreSQL's sum over none); `*_read` counts blocks read into
//! the pool (a combined read of 16 blocks is 16), `*_hit` blocks found there. The TOAST
//! columns are NULL: iolab has no TOAST tables. `idx_scan` counts index searches (EXPLAIN's
//! `Index Searches:`), `idx_tup_read` the entries they returned, `idx_tup_fetch` the live
//! rows plain Index Scans fetched (a Bitmap Heap Scan's rows are not counted there, as in
//! PostgreSQL). iolab's own catalogs are computed, not stored, so the `all` views list the
//! same user relations as the `user` ones. Counts belong to a relation's file: TRUNCATE (a
//! new file) starts them again at zero, where PostgreSQL keeps them; they are kept in
//! memory, not across a restart.

use std::collections::HashMap;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_engine::Database;
use iolab_stats::RelationCounts;

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::functions::{def, per_row, Def};

const TABLE_COLUMNS: &str = "relid oid, schemaname name, relname name, \
    heap_blks_read bigint, heap_blks_hit bigint, idx_blks_read bigint, idx_blks_hit bigint, \
    toast_blks_read bigint, toast_blks_hit bigint, tidx_blks_read bigint, tidx_blks_hit bigint";

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

fn counts(totals: &HashMap<u32, RelationCounts>, relfilenode: u32) -> RelationCounts {
    totals.get(&relfilenode).copied().unwrap_or_default()
}

/// `pg_statio_*_tables`: one row per table.
pub fn statio_tables_batch(db: &Database) -> Result<RecordBatch> {
    let totals = db.io_stats.relation_counts.snapshot();
    let indexes = db.catalog.indexes();
    let rows: Vec<Vec<V>> = db
        .catalog
        .tables()
        .iter()
        .map(|t| {
            let heap = counts(&totals, t.relfilenode);
            let of_table: Vec<RelationCounts> = indexes
                .iter()
                .filter(|i| i.table_oid == t.oid)
                .map(|i| counts(&totals, i.relfilenode))
                .collect();
            let index_sum = |f: fn(&RelationCounts) -> u64| {
                if of_table.is_empty() {
                    V::Null
                } else {
                    V::Int(of_table.iter().map(f).sum::<u64>() as i64)
                }
            };
            vec![
                V::oid(t.oid),
                V::text(&t.schema),
                V::text(&t.name),
                V::Int(heap.read as i64),
                V::Int(heap.hit as i64),
                index_sum(|c| c.read),
                index_sum(|c| c.hit),
                V::Null,
                V::Null,
                V::Null,
                V::Null,
            ]
        })
        .collect();
    build_batch(&statio_tables_schema(), &rows)
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
            c.last_index_scan
                .map_or(V::Null, |t| V::Int(t.timestamp_micros())),
            V::Int(c.index_tuples_read as i64),
            V::Int(c.index_tuples_fetched as i64),
        ]
    });
    build_batch(&stat_indexes_schema(), &rows)
}

/// `pg_stat_reset()`: the per-relation counts back to zero (returns `void`, shown as an
/// empty text value as psql shows PostgreSQL's void).
pub(super) fn functions() -> Vec<Def> {
    vec![def(
        "pg_stat_reset",
        0..=0,
        datafusion::arrow::datatypes::DataType::Utf8,
        |ctx, _, rows| {
            ctx.shared.db.io_stats.relation_counts.reset();
            per_row(rows, |_| Ok(V::text("")))
        },
    )
    .volatile()]
}
