//! The current transaction's id and the status of any: `pg_current_xact_id()`,
//! `pg_current_xact_id_if_assigned()`, `pg_xact_status(xid8)` and their older names
//! `txid_current()`, `txid_current_if_assigned()`, `txid_status(bigint)`.
//!
//! `pg_current_xact_id()` gives the transaction an id if it has none, as PostgreSQL's
//! does: a statement that calls it is planned as one that writes
//! ([`assigns_xid`]), so the session takes the id before it runs (in a savepoint, a
//! subtransaction's id too). The id shown is the top-level transaction's, read from the
//! session's `pg_stat_activity` entry (`backend_xid`). iolab's ids have no epoch (there
//! is no wraparound), so an `xid8` is the 32-bit id itself, shown as a `bigint`.

use std::ops::ControlFlow;

use datafusion::arrow::datatypes::DataType;
use datafusion::sql::sqlparser::ast;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::txn::{XidStatus, FIRST_NORMAL_XID};

use super::batch::V;
use super::functions::{def, ints, per_row, pg, Ctx, Def};

/// The functions that give the transaction an id.
const ASSIGNING: [&str; 2] = ["pg_current_xact_id", "txid_current"];

/// Does `stmt` call a function that gives its transaction an id?
pub fn assigns_xid(stmt: &ast::Statement) -> bool {
    ast::visit_expressions(stmt, |e| match e {
        ast::Expr::Function(f)
            if f.name
                .0
                .last()
                .and_then(|p| p.as_ident())
                .is_some_and(|name| {
                    ASSIGNING.contains(&name.value.to_ascii_lowercase().as_str())
                }) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// The session's top-level transaction id, if it has one.
fn current_xid(ctx: &Ctx) -> Option<i64> {
    let activity = ctx.shared.db.io_stats.activity.get(ctx.pid)?;
    activity.status().xid.map(i64::from)
}

/// The functions of this module, for `functions::definitions`.
pub(super) fn functions() -> Vec<Def> {
    let current = |ctx: &Ctx, _: &[_], rows| {
        let xid = current_xid(ctx).ok_or_else(|| {
            pg(PgError::internal(
                "the statement was to take a transaction id before it ran",
            ))
        })?;
        Ok(vec![V::Int(xid); rows])
    };
    let if_assigned =
        |ctx: &Ctx, _: &[_], rows| Ok(vec![current_xid(ctx).map_or(V::Null, V::Int); rows]);
    let status = |ctx: &Ctx, args: &[_], rows| {
        let xids = ints(&args[0])?;
        let txns = &ctx.shared.db.txns;
        per_row(rows, |i| {
            let Some(xid) = xids[i] else {
                return Ok(V::Null);
            };
            if xid < 0 || xid >= i64::from(txns.next_xid()) {
                return Err(pg(PgError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!("transaction ID {xid} is in the future"),
                )));
            }
            // Ids below the first normal one are the bootstrap's and frozen: committed.
            let status = match u32::try_from(xid).expect("checked range") {
                x if x < FIRST_NORMAL_XID => XidStatus::Committed,
                x => txns.clog().status(x),
            };
            Ok(V::text(match status {
                XidStatus::Committed => "committed",
                XidStatus::Aborted => "aborted",
                XidStatus::InProgress => "in progress",
            }))
        })
    };
    vec![
        def("pg_current_xact_id", 0..=0, DataType::Int64, current)
            .aliases(&["txid_current"])
            .volatile(),
        def(
            "pg_current_xact_id_if_assigned",
            0..=0,
            DataType::Int64,
            if_assigned,
        )
        .aliases(&["txid_current_if_assigned"])
        .volatile(),
        def("pg_xact_status", 1..=1, DataType::Utf8, status)
            .aliases(&["txid_status"])
            .volatile(),
    ]
}
