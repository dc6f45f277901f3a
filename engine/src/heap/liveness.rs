//! Is a heap tuple live right now, whoever wrote it? What a uniqueness check asks of each
//! heap tuple an equal index key points at (PostgreSQL's `SnapshotDirty`).
//!
//! A snapshot answers "was this row committed before I started"; a uniqueness check needs
//! "could this row still be there when I commit", which counts rows of transactions still
//! running as well. So the answer has three values:
//!
//! | inserted by (`t_xmin`) | deleted by (`t_xmax`) | [`Liveness`] |
//! |---|---|---|
//! | an aborted transaction | — | `Dead` |
//! | a transaction still running (not ours) | — | `InProgress(xmin)`: wait for it, look again |
//! | ours, or a committed one | none, or an aborted transaction | `Live` |
//! | ours, or a committed one | ours, or a committed transaction | `Dead` |
//! | ours, or a committed one | a transaction still running (not ours) | `InProgress(xmax)` |
//!
//! A line pointer that no longer holds a tuple (pruned, or never used) is `Dead`: its index
//! entry waits for VACUUM. Rows of this transaction count whatever their command id, so
//! two equal keys inserted by one statement conflict.

use std::sync::Arc;

use iolab_catalog::PgResult;

use crate::accounting::IoAccount;
use crate::buffer::BufferPool;
use crate::heap::tuple::{self, INVALID_XID};
use crate::storage::page;
use crate::storage::relfile::RelFile;
use crate::txn::{Clog, OwnXids, Xid, XidStatus};

/// What a uniqueness check makes of one heap tuple (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    Dead,
    Live,
    /// Its insert or delete is by this transaction, still running: wait and look again.
    InProgress(Xid),
}

/// Reads the tuple at `tid` of `rel` and says whether it is live for the transaction
/// writing under `own`.
pub fn liveness(
    pool: &Arc<BufferPool>,
    rel: &Arc<RelFile>,
    clog: &Clog,
    own: &OwnXids,
    tid: (u32, u16),
    acct: &mut IoAccount,
) -> PgResult<Liveness> {
    let buffer = pool.read_buffer(rel, tid.0, None, acct)?;
    let page = buffer.page();
    let Some(t) = page::page_item(&page, tid.1) else {
        return Ok(Liveness::Dead);
    };
    Ok(judge(tuple::xmin(t), tuple::deleter(t), own, |x| {
        clog.status(x)
    }))
}

/// The table of the module comment, given the tuple's `xmin` and `xmax` and the status of
/// other transactions.
fn judge(xmin: Xid, xmax: Xid, own: &OwnXids, status: impl Fn(Xid) -> XidStatus) -> Liveness {
    if !own.contains(xmin) {
        match status(xmin) {
            XidStatus::Aborted => return Liveness::Dead,
            XidStatus::InProgress => return Liveness::InProgress(xmin),
            XidStatus::Committed => {}
        }
    }
    if xmax == INVALID_XID {
        return Liveness::Live;
    }
    if own.contains(xmax) {
        return Liveness::Dead;
    }
    match status(xmax) {
        XidStatus::Aborted => Liveness::Live,
        XidStatus::InProgress => Liveness::InProgress(xmax),
        XidStatus::Committed => Liveness::Dead,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Transactions 10 committed, 11 aborted, 12 running; 20 is ours, 21 and 23 are its
    // live subtransactions, 22 one it rolled back (aborted).
    fn status(x: Xid) -> XidStatus {
        match x {
            10 => XidStatus::Committed,
            11 | 22 => XidStatus::Aborted,
            12 => XidStatus::InProgress,
            _ => panic!("asked about {x}"),
        }
    }

    #[test]
    fn every_row_of_the_table() {
        use Liveness::*;
        let cases = [
            ((11, 0), Dead),
            ((12, 0), InProgress(12)),
            ((12, 20), InProgress(12)),
            ((10, 0), Live),
            ((20, 0), Live),
            ((10, 11), Live),
            ((20, 11), Live),
            ((10, 20), Dead),
            ((20, 20), Dead),
            ((10, 10), Dead),
            ((10, 12), InProgress(12)),
            ((20, 12), InProgress(12)),
            // Subtransactions: live ones are ours, a rolled-back one is aborted.
            ((21, 0), Live),
            ((23, 20), Dead),
            ((10, 21), Dead),
            ((22, 0), Dead),
            ((10, 22), Live),
            ((21, 22), Live),
        ];
        let own = OwnXids::with_subxids(20, vec![21, 23]);
        for ((xmin, xmax), want) in cases {
            assert_eq!(
                judge(xmin, xmax, &own, status),
                want,
                "xmin {xmin} xmax {xmax}"
            );
        }
    }
}
