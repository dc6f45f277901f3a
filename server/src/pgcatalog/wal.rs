//! PostgreSQL 18's views and functions of the write-ahead log, over the engine's
//! [`Wal`](iolab_engine::wal::Wal) and the WAL counters of the statistics hub
//! (`iolab_stats::wal`):
//!
//! | SQL | returns |
//! |---|---|
//! | `pg_stat_wal` (view), `pg_stat_get_wal()` | one row: records, full page images, bytes and full-buffer writes since the last reset |
//! | `pg_stat_recovery_prefetch` (view), `pg_stat_get_recovery_prefetch()` | one row: what redo's read-ahead did with the blocks of the last recovery |
//! | `pg_current_wal_lsn()` | how far the WAL was written (handed to the kernel) |
//! | `pg_current_wal_insert_lsn()` | the end of the last record inserted |
//! | `pg_current_wal_flush_lsn()` | how far the WAL is durable |
//! | `pg_walfile_name(lsn)` | the name of the segment file in `pg_wal/` that holds `lsn` |
//! | `pg_wal_lsn_diff(a, b)` | `a - b` in bytes (`numeric`) |
//!
//! `pg_stat_reset_shared('wal')` and `pg_stat_reset_shared('recovery_prefetch')` reset
//! the two views (see `stat_views`).
//!
//! iolab has no `pg_lsn` type: an LSN is `text` in PostgreSQL's spelling, `16/B374D848`
//! (two hexadecimal numbers of at most 8 digits), and the functions take LSNs as text
//! (`'0/16B3740'`, or `'0/16B3740'::pg_lsn`, which becomes a cast to text). Input that is
//! not an LSN is PostgreSQL's error 22P02, `invalid input syntax for type pg_lsn: "…"`.
//! So `pg_typeof(pg_current_wal_lsn())` is `text`, and LSNs compare as text, not as
//! positions: subtract them with `pg_wal_lsn_diff`.

use std::sync::LazyLock;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::wal::{format_lsn, Wal};
use iolab_engine::Database;

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::functions::{arg_type_name, def, per_row, pg, texts, Def};

pub fn pg_stat_wal_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        schema_of(&parse_columns(
            "wal_records bigint, wal_fpi bigint, wal_bytes numeric, wal_buffers_full bigint, \
             stats_reset timestamp with time zone",
        ))
    });
    SCHEMA.clone()
}

pub fn pg_stat_checkpointer_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        schema_of(&parse_columns(
            "num_timed bigint, num_requested bigint, num_done bigint, \
             restartpoints_timed bigint, restartpoints_req bigint, restartpoints_done bigint, \
             write_time double precision, sync_time double precision, buffers_written bigint, \
             slru_written bigint, stats_reset timestamp with time zone",
        ))
    });
    SCHEMA.clone()
}

pub fn pg_stat_bgwriter_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        schema_of(&parse_columns(
            "buffers_clean bigint, maxwritten_clean bigint, buffers_alloc bigint, \
             stats_reset timestamp with time zone",
        ))
    });
    SCHEMA.clone()
}

pub fn pg_stat_recovery_prefetch_schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        schema_of(&parse_columns(
            "stats_reset timestamp with time zone, prefetch bigint, hit bigint, \
             skip_init bigint, skip_new bigint, skip_fpw bigint, skip_rep bigint, \
             wal_distance integer, block_distance integer, io_depth integer",
        ))
    });
    SCHEMA.clone()
}

fn bigint(v: u64) -> V {
    V::Int(i64::try_from(v).unwrap_or(i64::MAX))
}

fn integer(v: u64) -> V {
    V::Int(i64::from(i32::try_from(v).unwrap_or(i32::MAX)))
}

/// `pg_stat_wal`'s one row.
pub fn pg_stat_wal_batch(db: &Database) -> Result<RecordBatch> {
    let w = db.io_stats.wal.snapshot();
    build_batch(
        &pg_stat_wal_schema(),
        &[vec![
            bigint(w.records),
            bigint(w.fpi),
            V::Numeric(i128::from(w.bytes)),
            bigint(w.buffers_full),
            V::Int(w.stats_reset.timestamp_micros()),
        ]],
    )
}

/// `pg_stat_checkpointer`'s one row (no restartpoints: iolab is never a standby; the
/// commit log's writes are not counted as `slru_written`).
pub fn pg_stat_checkpointer_batch(db: &Database) -> Result<RecordBatch> {
    let c = db.io_stats.checkpointer.snapshot();
    build_batch(
        &pg_stat_checkpointer_schema(),
        &[vec![
            bigint(c.num_timed),
            bigint(c.num_requested),
            bigint(c.num_done),
            V::Int(0),
            V::Int(0),
            V::Int(0),
            V::Float(c.write_time_ms),
            V::Float(c.sync_time_ms),
            bigint(c.buffers_written),
            V::Int(0),
            V::Int(c.stats_reset.timestamp_micros()),
        ]],
    )
}

/// `pg_stat_bgwriter`'s one row.
pub fn pg_stat_bgwriter_batch(db: &Database) -> Result<RecordBatch> {
    let b = db.io_stats.bgwriter.snapshot();
    build_batch(
        &pg_stat_bgwriter_schema(),
        &[vec![
            bigint(b.buffers_clean),
            bigint(b.maxwritten_clean),
            bigint(b.buffers_alloc),
            V::Int(b.stats_reset.timestamp_micros()),
        ]],
    )
}

/// `pg_stat_recovery_prefetch`'s one row.
pub fn pg_stat_recovery_prefetch_batch(db: &Database) -> Result<RecordBatch> {
    let p = db.io_stats.recovery_prefetch.snapshot();
    build_batch(
        &pg_stat_recovery_prefetch_schema(),
        &[vec![
            V::Int(p.stats_reset.timestamp_micros()),
            bigint(p.prefetch),
            bigint(p.hit),
            bigint(p.skip_init),
            bigint(p.skip_new),
            bigint(p.skip_fpw),
            bigint(p.skip_rep),
            integer(p.wal_distance),
            integer(p.block_distance),
            integer(p.io_depth),
        ]],
    )
}

/// An LSN in PostgreSQL's `pg_lsn` input syntax: 1 to 8 hexadecimal digits, `/`, 1 to 8
/// hexadecimal digits, nothing else (no blanks, signs or `0x`).
pub fn parse_lsn(text: &str) -> Result<u64, PgError> {
    let half = |s: &str| {
        (!s.is_empty() && s.len() <= 8 && s.bytes().all(|b| b.is_ascii_hexdigit()))
            .then(|| u64::from_str_radix(s, 16).ok())
            .flatten()
    };
    text.split_once('/')
        .and_then(|(hi, lo)| Some((half(hi)? << 32) | half(lo)?))
        .ok_or_else(|| {
            PgError::new(
                sqlstate::INVALID_TEXT_REPRESENTATION,
                format!("invalid input syntax for type pg_lsn: \"{text}\""),
            )
        })
}

/// The segment file holding the byte at `lsn`, as PostgreSQL 18's `pg_walfile_name`
/// names it (`XLByteToSeg`: an LSN at a segment boundary is in the segment it starts;
/// checked on 18.4, where `pg_walfile_name('0/1000000')` is `000000010000000000000001`).
pub fn walfile_name(wal: &Wal, lsn: u64) -> String {
    wal.segment_name(lsn / wal.segment_size())
}

/// The LSN arguments of `function`: text, or NULL; another type matches no function, as
/// in PostgreSQL (`pg_walfile_name(1)` does not exist).
fn lsn_args(function: &str, args: &[ArrayRef]) -> Result<Vec<Vec<Option<u64>>>> {
    if args.iter().any(|a| {
        !matches!(
            a.data_type(),
            DataType::Null | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
        )
    }) {
        let types: Vec<String> = args
            .iter()
            .map(|a| match a.data_type() {
                DataType::Null => "unknown".to_string(),
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "pg_lsn".to_string(),
                dt => arg_type_name(dt),
            })
            .collect();
        return Err(pg(PgError::new(
            sqlstate::UNDEFINED_FUNCTION,
            format!("function {function}({}) does not exist", types.join(", ")),
        )
        .with_hint(
            "No function matches the given name and argument types. You might need to add explicit type casts.",
        )));
    }
    args.iter()
        .map(|a| {
            texts(a)?
                .into_iter()
                .map(|t| t.map(|t| parse_lsn(&t).map_err(pg)).transpose())
                .collect()
        })
        .collect()
}

/// An LSN function without arguments, of the WAL's position `at`.
fn position(name: &'static str, at: fn(&Wal) -> u64) -> Def {
    def(name, 0..=0, DataType::Utf8, move |ctx, _, rows| {
        Ok(vec![V::Text(format_lsn(at(&ctx.shared.db.wal))); rows])
    })
    .volatile()
}

/// The WAL functions (`pg_stat_get_wal()` and `pg_stat_get_recovery_prefetch()` are
/// table functions, see `stat_views`).
pub(super) fn functions() -> Vec<Def> {
    vec![
        position("pg_current_wal_lsn", Wal::write_lsn),
        position("pg_current_wal_insert_lsn", Wal::insert_lsn),
        position("pg_current_wal_flush_lsn", Wal::flush_lsn),
        def(
            "pg_walfile_name",
            1..=1,
            DataType::Utf8,
            |ctx, args, rows| {
                let lsns = lsn_args("pg_walfile_name", args)?;
                let wal = &ctx.shared.db.wal;
                per_row(rows, |i| {
                    Ok(lsns[0][i].map_or(V::Null, |lsn| V::Text(walfile_name(wal, lsn))))
                })
            },
        ),
        def(
            "pg_wal_lsn_diff",
            2..=2,
            DataType::Decimal128(38, 0),
            |_, args, rows| {
                let lsns = lsn_args("pg_wal_lsn_diff", args)?;
                per_row(rows, |i| {
                    Ok(match (lsns[0][i], lsns[1][i]) {
                        (Some(a), Some(b)) => V::Numeric(i128::from(a) - i128::from(b)),
                        _ => V::Null,
                    })
                })
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsns_parse_as_postgres_reads_pg_lsn() {
        assert_eq!(parse_lsn("0/16B3740").unwrap(), 0x16B_3740);
        assert_eq!(parse_lsn("16/b374d848").unwrap(), 0x16_B374_D848);
        assert_eq!(parse_lsn("FFFFFFFF/FFFFFFFF").unwrap(), u64::MAX);
        assert_eq!(parse_lsn("0/0").unwrap(), 0);
        for lsn in [0, 1, 0x1_0000_00AB, 0x16B_3740, u64::MAX] {
            assert_eq!(parse_lsn(&format_lsn(lsn)).unwrap(), lsn);
        }
        // Each rejected by PostgreSQL 18.4 with this error.
        for bad in [
            "x",
            "0/",
            "/0",
            " 0/1",
            "0/1 ",
            "123456789/1",
            "1/123456789",
            "-1/1",
            "+1/1",
            "0x1/1",
            "1/2/3",
            "",
            "0/g",
        ] {
            let e = parse_lsn(bad).unwrap_err();
            assert_eq!(e.code, "22P02", "{bad:?}");
            assert_eq!(
                e.message,
                format!("invalid input syntax for type pg_lsn: \"{bad}\"")
            );
        }
    }
}
