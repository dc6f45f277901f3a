//! `pg_stat_statements`, `pg_stat_statements_info` and `pg_stat_statements_reset(…)`, with
//! the columns of PostgreSQL 18's extension (version 1.12), over the server's statement
//! statistics (`iolab_stats::statements`, fed by `statement_stats`). Columns iolab has
//! nothing for read 0: planning (`plans` and the plan times: planning is not tracked, as
//! under PostgreSQL's default), WAL per statement, JIT and parallel workers. Every
//! statement counts as top-level; `dbid` is the one database's.

use std::sync::LazyLock;

use datafusion::arrow::array::{Array, BooleanArray};
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_engine::Database;

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::functions::{def, ints, per_row, Def};
use super::oids;

pub fn schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        schema_of(&parse_columns(
            "userid oid, dbid oid, toplevel boolean, queryid bigint, query text, plans bigint, \
             total_plan_time double precision, min_plan_time double precision, \
             max_plan_time double precision, mean_plan_time double precision, \
             stddev_plan_time double precision, calls bigint, \
             total_exec_time double precision, min_exec_time double precision, \
             max_exec_time double precision, mean_exec_time double precision, \
             stddev_exec_time double precision, rows bigint, shared_blks_hit bigint, \
             shared_blks_read bigint, shared_blks_dirtied bigint, shared_blks_written bigint, \
             local_blks_hit bigint, local_blks_read bigint, local_blks_dirtied bigint, \
             local_blks_written bigint, temp_blks_read bigint, temp_blks_written bigint, \
             shared_blk_read_time double precision, shared_blk_write_time double precision, \
             local_blk_read_time double precision, local_blk_write_time double precision, \
             temp_blk_read_time double precision, temp_blk_write_time double precision, \
             wal_records bigint, wal_fpi bigint, wal_bytes numeric, wal_buffers_full bigint, \
             jit_functions bigint, jit_generation_time double precision, \
             jit_inlining_count bigint, jit_inlining_time double precision, \
             jit_optimization_count bigint, jit_optimization_time double precision, \
             jit_emission_count bigint, jit_emission_time double precision, \
             jit_deform_count bigint, jit_deform_time double precision, \
             parallel_workers_to_launch bigint, parallel_workers_launched bigint, \
             stats_since timestamp with time zone, minmax_stats_since timestamp with time zone",
        ))
    });
    SCHEMA.clone()
}

pub fn info_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        schema_of(&parse_columns(
            "dealloc bigint, stats_reset timestamp with time zone",
        ))
    });
    SCHEMA.clone()
}

fn bigint(v: u64) -> V {
    V::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

pub fn batch(db: &Database) -> Result<RecordBatch> {
    let zero = V::Int(0);
    let zero_ms = V::Float(0.0);
    let rows: Vec<Vec<V>> = (db.io_stats.statements.entries().into_iter())
        .map(|e| {
            let u = &e.usage;
            let ms = |ns: u64| V::Float(ns as f64 / 1e6);
            let mut row = vec![
                V::Int(i64::from(e.userid)),
                V::Int(i64::from(oids::DATABASE_OID)),
                V::Bool(true),
                V::Int(e.queryid),
                V::text(e.query.clone()),
            ];
            row.extend([zero.clone()]);
            row.extend(std::iter::repeat_n(zero_ms.clone(), 5));
            row.extend([
                bigint(e.calls),
                V::Float(e.total_exec_ms),
                V::Float(e.min_exec_ms),
                V::Float(e.max_exec_ms),
                V::Float(e.mean_exec_ms),
                V::Float(e.stddev_exec_ms()),
                bigint(e.rows),
                bigint(u.shared_hit),
                bigint(u.shared_read),
                bigint(u.shared_dirtied),
                bigint(u.shared_written),
            ]);
            row.extend([
                bigint(u.local_hit),
                bigint(u.local_read),
                bigint(u.local_dirtied),
                bigint(u.local_written),
            ]);
            row.extend([bigint(u.temp_read), bigint(u.temp_written)]);
            row.extend([ms(u.shared_read_ns), ms(u.shared_write_ns)]);
            row.extend([ms(u.local_read_ns), ms(u.local_write_ns)]);
            row.extend([ms(u.temp_read_ns), ms(u.temp_write_ns)]);
            // WAL: records, full-page images, bytes, buffers full.
            row.extend([zero.clone(), zero.clone(), V::Numeric(0), zero.clone()]);
            // JIT: counts and times, alternating.
            row.extend([zero.clone(), zero_ms.clone()]);
            for _ in 0..4 {
                row.extend([zero.clone(), zero_ms.clone()]);
            }
            row.extend([zero.clone(), zero.clone()]);
            row.extend([
                V::Int(e.stats_since.timestamp_micros()),
                V::Int(e.minmax_stats_since.timestamp_micros()),
            ]);
            row
        })
        .collect();
    build_batch(&schema(), &rows)
}

pub fn info_batch(db: &Database) -> Result<RecordBatch> {
    let (dealloc, reset) = db.io_stats.statements.info();
    build_batch(
        &info_schema(),
        &[vec![bigint(dealloc), V::Int(reset.timestamp_micros())]],
    )
}

/// `pg_stat_statements_reset([userid [, dbid [, queryid [, minmax_only]]]])`: 0 matches
/// any; returns when it reset.
pub(super) fn functions() -> Vec<Def> {
    let timestamptz = DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()));
    vec![def(
        "pg_stat_statements_reset",
        0..=4,
        timestamptz,
        |ctx, args, rows| {
            let arg = |i: usize| -> Result<Vec<Option<i64>>> {
                match args.get(i) {
                    Some(a) if !matches!(a.data_type(), DataType::Boolean) => ints(a),
                    _ => Ok(vec![Some(0); rows]),
                }
            };
            let (users, queries) = (arg(0)?, arg(2)?);
            let minmax = match args.get(3) {
                Some(a) => {
                    let b = a.as_any().downcast_ref::<BooleanArray>();
                    b.map(|b| (0..rows).map(|i| b.is_valid(i) && b.value(i)).collect())
                        .unwrap_or_else(|| vec![false; rows])
                }
                None => vec![false; rows],
            };
            let stats = &ctx.shared.db.io_stats.statements;
            per_row(rows, |i| {
                let userid = users[i].unwrap_or(0) as u32;
                let at = stats.reset(userid, queries[i].unwrap_or(0), minmax[i]);
                Ok(V::Int(at.timestamp_micros()))
            })
        },
    )
    .volatile()]
}
