//! Transactions: ids, the commit log, snapshots and tuple visibility.
//!
//! Every statement that writes runs inside a transaction with a 32-bit transaction id
//! (xid). Each heap tuple records the xid that inserted it (`t_xmin`) and the command id
//! within that transaction (`t_cid`). Whether the tuple is visible is decided, not by the
//! page, but by the commit log (`clog`): two bits per xid saying in progress, committed or
//! aborted. A transaction becomes visible to others at one instant, when its clog entry
//! flips to committed; rolling back is flipping it to aborted, and nothing on the pages
//! has to be undone. So a failed or cancelled INSERT…SELECT leaves its rows on the pages
//! but no one ever sees them.
//!
//! A reader takes a [`Snapshot`] at the start of each statement (PostgreSQL's READ
//! COMMITTED): the next xid not yet handed out, and the set of xids in progress at that
//! moment. A tuple is visible to the snapshot when its inserting xid
//! - is the reader's own transaction and was written by an earlier command (`cid < curcid`),
//!   so that `INSERT INTO t SELECT * FROM t` never reads its own output; or
//! - is older than the snapshot's horizon, was not in progress when the snapshot was
//!   taken, and is committed in the clog.
//! A concurrent reader therefore sees all or nothing of an INSERT, even if the INSERT
//! commits half-way through the reader's scan.
//!
//! # Subtransactions (savepoints)
//!
//! `SAVEPOINT` opens a subtransaction inside a transaction block; the first statement that
//! writes under it gets an xid of its own (a *subxid*), and its tuples carry that xid.
//! `ROLLBACK TO SAVEPOINT` aborts the subxids assigned since the savepoint (their clog
//! entries flip to aborted at once, so their tuples vanish as an aborted transaction's
//! do) and the transaction goes on; `RELEASE SAVEPOINT` only forgets the savepoint, its
//! subxids stay the transaction's. The transaction's live xids, its own and those of its
//! subtransactions, are its [`OwnXids`]: its snapshots judge tuples of any of them as
//! their own (by command id), and other snapshots see them as in progress until the
//! top-level transaction ends. At COMMIT the commit record lists the live subxids and
//! they flip to committed with the top-level xid: the top-level xid first, so that a
//! reader looking at the clog alone meets a subxid still in progress (and waits for it)
//! rather than a committed subxid of a transaction still running. A subxid is never in
//! the clog as committed while its transaction could still abort. A waiter for a subxid
//! waits until the subtransaction aborts or its transaction ends; deadlock detection
//! follows top-level transactions.
//!
//! Durability: a commit's WAL record is flushed before its clog byte is written (not
//! fsynced; the file is fsynced at checkpoints), and redo after a crash sets the status
//! of every transaction whose commit or abort record it replays (`crate::wal`). Xids are
//! handed out from ranges reserved in `global/xid_horizon` before use, so that after a
//! crash no xid is ever reused; xids that never ended are aborted at start-up.

pub mod clog;
pub mod manager;
pub mod relation_locks;
pub mod snapshot;

pub use clog::{Clog, XidStatus};
pub use manager::TransactionManager;
pub use snapshot::{Snapshot, VisibilityChecker};

/// A transaction id. 0 is invalid; 1 and 2 are reserved, as in PostgreSQL.
pub type Xid = u32;
pub const INVALID_XID: Xid = 0;
/// The first xid handed to a user transaction.
pub const FIRST_NORMAL_XID: Xid = 3;

/// `subxids` (ascending) as runs of consecutive xids, `(first, count)`: how commit and
/// abort records list them (at most `wal::record::MAX_SUBXID_RUNS`).
pub fn subxid_runs(subxids: &[Xid]) -> Vec<(Xid, u32)> {
    let mut runs: Vec<(Xid, u32)> = Vec::new();
    for &x in subxids {
        match runs.last_mut() {
            Some((first, count)) if *first + *count == x => *count += 1,
            _ => runs.push((x, 1)),
        }
    }
    runs
}

/// The xids a transaction writes under: its top-level xid (0 when it has none) and the
/// subxids of its subtransactions not rolled back (ascending; see the module comment).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnXids {
    pub top: Xid,
    pub subxids: Vec<Xid>,
}

impl OwnXids {
    /// A transaction without subtransactions (`top` 0: none at all).
    pub fn of(top: Xid) -> OwnXids {
        OwnXids {
            top,
            subxids: Vec::new(),
        }
    }

    /// A transaction `top` with live subtransactions `subxids` (ascending).
    pub fn with_subxids(top: Xid, subxids: Vec<Xid>) -> OwnXids {
        assert!(
            subxids.is_empty() || top != INVALID_XID,
            "subtransactions belong to a transaction with an xid"
        );
        assert!(
            subxids.windows(2).all(|w| w[0] < w[1]) && subxids.iter().all(|&s| s > top),
            "subxids ascend after their transaction's"
        );
        OwnXids { top, subxids }
    }

    /// Did this transaction write under `xid`?
    #[inline]
    pub fn contains(&self, xid: Xid) -> bool {
        xid != INVALID_XID
            && (xid == self.top
                || (!self.subxids.is_empty() && self.subxids.binary_search(&xid).is_ok()))
    }
}
