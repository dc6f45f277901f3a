//! The `pg_prewarm` extension's function, built in (`CREATE EXTENSION pg_prewarm` is
//! accepted and does nothing, as for `pg_buffercache`):
//!
//! ```sql
//! pg_prewarm(regclass, mode text DEFAULT 'buffer', fork text DEFAULT 'main',
//!            first_block bigint DEFAULT NULL, last_block bigint DEFAULT NULL) → bigint
//! ```
//!
//! warms a table's or index's blocks before an experiment and returns how many it warmed:
//! into the buffer pool (`buffer`, through a read stream), into the kernel's page cache
//! (`read`), or by advice (`prefetch`); see `iolab_engine::buffer::prewarm`. Arguments
//! and errors (22023, messages) are PostgreSQL 18's. iolab keeps the free space and
//! visibility maps in memory: their forks, and `init`, "do not exist".

use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::accounting::{IoAccount, StatsSink};
use iolab_engine::buffer::prewarm::{Prewarm, PrewarmMode};
use iolab_engine::exec::context::StreamSettings;
use iolab_stats::BackendType;

use super::batch::V;
use super::functions::{def, ints, invalid_fork_name, per_row, pg, relation_oids, texts, Ctx, Def};

pub(super) fn functions() -> Vec<Def> {
    vec![
        def("pg_prewarm", 1..=5, DataType::Int64, |ctx, args, rows| {
            let snapshot = ctx.snapshot();
            let oids = relation_oids(&snapshot, &snapshot.relations(), &args[0])?;
            let text_arg = |i: usize, default: &str| match args.get(i) {
                Some(a) => texts(a),
                None => Ok(vec![Some(default.to_string()); rows]),
            };
            let int_arg = |i: usize| match args.get(i) {
                Some(a) => ints(a),
                None => Ok(vec![None; rows]),
            };
            let (modes, forks) = (text_arg(1, "buffer")?, text_arg(2, "main")?);
            let (firsts, lasts) = (int_arg(3)?, int_arg(4)?);
            per_row(rows, |i| {
                let call = Call {
                    oid: oids[i],
                    mode: modes[i].as_deref(),
                    fork: forks[i].as_deref(),
                    first: firsts[i],
                    last: lasts[i],
                };
                prewarm(ctx, &snapshot, call).map(V::Int).map_err(pg)
            })
        })
        .volatile()
        .each_row(),
    ]
}

/// One call's arguments.
struct Call<'a> {
    oid: Option<u32>,
    mode: Option<&'a str>,
    fork: Option<&'a str>,
    first: Option<i64>,
    last: Option<i64>,
}

fn prewarm(ctx: &Ctx, snapshot: &super::snapshot::Snapshot, call: Call) -> Result<i64, PgError> {
    let invalid = |message: String| PgError::new(sqlstate::INVALID_PARAMETER_VALUE, message);
    let oid = call
        .oid
        .ok_or_else(|| invalid("relation cannot be null".into()))?;
    let mode = call
        .mode
        .ok_or_else(|| invalid("prewarm type cannot be null".into()))?;
    let mode = PrewarmMode::parse(mode).ok_or_else(|| {
        invalid("invalid prewarm type".into())
            .with_hint("Valid prewarm types are \"prefetch\", \"read\", and \"buffer\".")
    })?;
    let fork = call
        .fork
        .ok_or_else(|| invalid("relation fork cannot be null".into()))?;
    match fork {
        "main" => {}
        "fsm" | "vm" | "init" => {
            return Err(invalid(format!(
                "fork \"{fork}\" does not exist for this relation"
            )))
        }
        _ => return Err(invalid_fork_name()),
    }
    let relation = snapshot
        .relation(oid)
        .ok_or_else(|| PgError::internal(format!("could not open relation with OID {oid}")))?;
    let db = &ctx.shared.db;
    let rel = db.relfile(relation.relfilenode)?;
    let nblocks = i64::from(rel.nblocks());
    let first = match call.first {
        None => 0,
        Some(b) if (0..nblocks).contains(&b) => b,
        Some(_) => {
            return Err(invalid(format!(
                "starting block number must be between 0 and {}",
                nblocks - 1
            )))
        }
    };
    let last = match call.last {
        None => nblocks - 1,
        Some(b) if (0..nblocks).contains(&b) => b,
        Some(_) => {
            return Err(invalid(format!(
                "ending block number must be between 0 and {}",
                nblocks - 1
            )))
        }
    };
    if last < first {
        return Ok(0);
    }
    let settings = ctx.settings.lock().clone();
    let config = StreamSettings::from_settings(&settings).stream_config(
        false,
        true,
        db.pool.pin_limit(),
        ctx.pid,
    );
    let mut acct = IoAccount::new(
        settings.track_io_timing(),
        Some(StatsSink {
            hub: db.io_stats.clone(),
            backend_type: BackendType::ClientBackend,
            pid: ctx.pid,
        }),
    );
    let check_cancel = || ctx.check_cancel();
    let run = Prewarm {
        aio: &db.aio,
        pool: &db.pool,
        config: &config,
        check_cancel: &check_cancel,
    };
    let blocks = first as u32..=last as u32;
    let warmed = tokio::task::block_in_place(|| run.run(&rel, mode, blocks, &mut acct));
    acct.flush();
    Ok(warmed? as i64)
}
