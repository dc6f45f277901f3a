//! PostgreSQL's block I/O views per relation: `pg_statio_all_tables`,
//! `pg_statio_user_tables`, `pg_statio_all_indexes`, `pg_statio_user_indexes`, and
//! `pg_stat_reset()`, over the block counts the buffer pool keeps by relation file
//! (`iolab_stats::relation`).
//!
//! `heap_blks_*` are a table's own blocks, `idx_blks_*` the sum over its indexes (NULL for
//! a table without one, as PostgreSQL's sum over none); `*_read` counts blocks read into
//! the pool (a combined read of 16 blocks is 16), `*_hit` blocks found there. The TOAST
//! columns are NULL: iolab has no TOAST tables. iolab's own catalogs are computed, not
//! stored, so the `all` views list the same user relations as the `user` ones. Counts
//! belong to a relation's file: TRUNCATE (a new file) starts them again at zero, where
//! PostgreSQL keeps them.

use std::collections::HashMap;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_engine::Database;
use iolab_stats::RelationBlocks;

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::functions::{def, per_row, Def};

const TABLE_COLUMNS: &str = "relid oid, schemaname name, relname name, \
    heap_blks_read bigint, heap_blks_hit bigint, idx_blks_read bigint, idx_blks_hit bigint, \
    toast_blks_read bigint, toast_blks_hit bigint, tidx_blks_read bigint, tidx_blks_hit bigint";

const INDEX_COLUMNS: &str = "relid oid, indexrelid oid, schemaname name, relname name, \
    indexrelname name, idx_blks_read bigint, idx_blks_hit bigint";

pub fn tables_schema() -> SchemaRef {
    static SCHEMA: std::sync::LazyLock<SchemaRef> =
        std::sync::LazyLock::new(|| schema_of(&parse_columns(TABLE_COLUMNS)));
    SCHEMA.clone()
}

pub fn indexes_schema() -> SchemaRef {
    static SCHEMA: std::sync::LazyLock<SchemaRef> =
        std::sync::LazyLock::new(|| schema_of(&parse_columns(INDEX_COLUMNS)));
    SCHEMA.clone()
}

fn counts(totals: &HashMap<u32, RelationBlocks>, relfilenode: u32) -> RelationBlocks {
    totals.get(&relfilenode).copied().unwrap_or_default()
}

/// One row per table.
pub fn tables_batch(db: &Database) -> Result<RecordBatch> {
    let totals = db.io_stats.relation_blocks.snapshot();
    let indexes = db.catalog.indexes();
    let rows: Vec<Vec<V>> = db
        .catalog
        .tables()
        .iter()
        .map(|t| {
            let heap = counts(&totals, t.relfilenode);
            let of_table: Vec<RelationBlocks> = indexes
                .iter()
                .filter(|i| i.table_oid == t.oid)
                .map(|i| counts(&totals, i.relfilenode))
                .collect();
            let index_sum = |f: fn(&RelationBlocks) -> u64| {
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
    build_batch(&tables_schema(), &rows)
}

/// One row per index.
pub fn indexes_batch(db: &Database) -> Result<RecordBatch> {
    let totals = db.io_stats.relation_blocks.snapshot();
    let tables: HashMap<u32, String> = db
        .catalog
        .tables()
        .into_iter()
        .map(|t| (t.oid, t.name))
        .collect();
    let rows: Vec<Vec<V>> = db
        .catalog
        .indexes()
        .iter()
        .map(|i| {
            let c = counts(&totals, i.relfilenode);
            vec![
                V::oid(i.table_oid),
                V::oid(i.oid),
                V::text(&i.schema),
                V::opt_text(tables.get(&i.table_oid).cloned()),
                V::text(&i.name),
                V::Int(c.read as i64),
                V::Int(c.hit as i64),
            ]
        })
        .collect();
    build_batch(&indexes_schema(), &rows)
}

/// `pg_stat_reset()`: the per-relation counts back to zero (returns `void`, shown as an
/// empty text value as psql shows PostgreSQL's void).
pub(super) fn functions() -> Vec<Def> {
    vec![def(
        "pg_stat_reset",
        0..=0,
        datafusion::arrow::datatypes::DataType::Utf8,
        |ctx, _, rows| {
            ctx.shared.db.io_stats.relation_blocks.reset();
            per_row(rows, |_| Ok(V::text("")))
        },
    )
    .volatile()]
}
