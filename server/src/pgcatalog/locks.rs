//! `pg_locks` and `pg_blocking_pids(pid)`, over the locks iolab has:
//!
//! - relation locks (`txn::relation_locks` in the engine): each lock a session's
//!   transaction holds on a table or view, in PostgreSQL's modes, and each request waiting
//!   (not granted, `waitstart` when the wait began); a session waiting so shows `Lock` /
//!   `relation` in `pg_stat_activity`;
//! - every transaction and subtransaction (savepoint) with an id holds an ExclusiveLock on
//!   it while it runs, and a transaction that waits for another to end — for a row the
//!   other changed or locked, or a key it is inserting — asks for a ShareLock on the
//!   other's id, which is how PostgreSQL shows such waits (`Lock` / `transactionid`).
//!
//! iolab takes no page, tuple, advisory or virtual-transaction locks, and none on indexes
//! apart from their tables: those rows do not appear, and `virtualtransaction` is NULL.
//! `fastpath` is false throughout.

use std::collections::HashMap;
use std::sync::LazyLock;

use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_engine::txn::Xid;
use iolab_engine::Database;

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::functions::{def, ints, per_row, Def};
use super::oids::DATABASE_OID;

/// PostgreSQL 18's `pg_locks` columns.
pub fn schema() -> SchemaRef {
    static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
        schema_of(&parse_columns(
            "locktype text, database oid, relation oid, page integer, tuple smallint, \
             virtualxid text, transactionid xid, classid oid, objid oid, objsubid smallint, \
             virtualtransaction text, pid integer, mode text, granted boolean, \
             fastpath boolean, waitstart timestamp with time zone",
        ))
    });
    SCHEMA.clone()
}

/// The pid of each session's running transaction, by its id.
pub(crate) fn pids_by_xid(db: &Database) -> HashMap<Xid, i32> {
    (db.io_stats.activity.all().iter())
        .filter_map(|a| a.status().xid.map(|x| (x, a.pid)))
        .collect()
}

pub fn batch(db: &Database) -> Result<RecordBatch> {
    let mut rows: Vec<Vec<V>> = (db.relation_locks.rows().into_iter())
        .map(|lock| {
            vec![
                V::text("relation"),
                V::oid(DATABASE_OID),
                V::oid(lock.relation),
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Int(i64::from(lock.owner)),
                V::text(lock.mode.name()),
                V::Bool(lock.granted),
                V::Bool(false),
                lock.waitstart
                    .map_or(V::Null, |t| V::Int(t.timestamp_micros())),
            ]
        })
        .collect();
    let pids = pids_by_xid(db);
    let row = |xid: Xid, pid: Option<i32>, mode: &str, waitstart: V| {
        vec![
            V::text("transactionid"),
            V::Null,
            V::Null,
            V::Null,
            V::Null,
            V::Null,
            V::Int(i64::from(xid)),
            V::Null,
            V::Null,
            V::Null,
            V::Null,
            pid.map_or(V::Null, |p| V::Int(i64::from(p))),
            V::text(mode),
            V::Bool(waitstart == V::Null),
            V::Bool(false),
            waitstart,
        ]
    };
    let mut holders: Vec<(Xid, i32)> = pids.iter().map(|(&x, &p)| (x, p)).collect();
    let subtransactions = db.txns.subtransactions().into_iter();
    holders.extend(subtransactions.filter_map(|(sub, top)| Some((sub, *pids.get(&top)?))));
    holders.sort_unstable();
    rows.extend(
        (holders.into_iter()).map(|(xid, pid)| row(xid, Some(pid), "ExclusiveLock", V::Null)),
    );
    for wait in db.txns.waits() {
        let since = V::Int(wait.since.timestamp_micros());
        rows.push(row(
            wait.holder,
            pids.get(&wait.waiter).copied(),
            "ShareLock",
            since,
        ));
    }
    build_batch(&schema(), &rows)
}

/// `pg_blocking_pids(pid)`: the sessions whose transactions or relation locks the session
/// `pid` waits for (empty when it waits for none, NULL for NULL).
pub(super) fn functions() -> Vec<Def> {
    let list = DataType::List(std::sync::Arc::new(Field::new(
        "item",
        DataType::Int32,
        true,
    )));
    vec![def("pg_blocking_pids", 1..=1, list, |ctx, args, rows| {
        let asked = ints(&args[0])?;
        let db = &ctx.shared.db;
        let pids = pids_by_xid(db);
        let waits = db.txns.waits();
        per_row(rows, |i| {
            let Some(pid) = asked[i] else {
                return Ok(V::Null);
            };
            let mut blocking: Vec<i32> = (waits.iter())
                .filter(|w| pids.get(&w.waiter).is_some_and(|&p| i64::from(p) == pid))
                .filter_map(|w| pids.get(&w.holder_top).copied())
                .collect();
            if let Ok(pid) = i32::try_from(pid) {
                blocking.extend(db.relation_locks.blocking(pid));
            }
            blocking.sort_unstable();
            blocking.dedup();
            Ok(V::TextArray(blocking.iter().map(i32::to_string).collect()))
        })
    })
    .volatile()]
}
