//! Snapshots and the visibility test for heap tuples (rules in `txn/mod.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;

use super::clog::{Clog, XidStatus};
use super::{OwnXids, Xid, INVALID_XID};

#[derive(Clone)]
pub struct Snapshot {
    /// The first xid not yet handed out when the snapshot was taken.
    pub xmax: Xid,
    /// The transactions in progress when the snapshot was taken (sorted): the reader's
    /// own among them, which it judges before looking here.
    pub in_progress: Vec<Xid>,
    /// The reader's own transaction and its live subtransactions (none: top 0).
    pub own: OwnXids,
    /// The reader's current command id: its own tuples with a smaller cid are visible.
    pub curcid: u32,
    pub clog: Arc<Clog>,
    /// Keeps the snapshot's xmin registered while any copy of it lives: VACUUM removes
    /// nothing a live snapshot may still see.
    pub(super) _held: Arc<HeldXmin>,
}

/// The xmins of the snapshots in use, as a multiset (`xmin → copies`).
pub(super) type XminRegistry = Arc<Mutex<BTreeMap<Xid, usize>>>;

/// One snapshot's entry in the registry, removed when the last copy of the snapshot goes.
pub(super) struct HeldXmin {
    pub(super) xmin: Xid,
    pub(super) registry: XminRegistry,
}

impl Drop for HeldXmin {
    fn drop(&mut self) {
        let mut registry = self.registry.lock();
        let count = registry
            .get_mut(&self.xmin)
            .expect("a held xmin is registered");
        *count -= 1;
        if *count == 0 {
            registry.remove(&self.xmin);
        }
    }
}

impl Snapshot {
    /// This snapshot for a later command of the same transaction (REPEATABLE READ reuses
    /// its first statement's): the same view of other transactions, with the command's
    /// own xids (subtransactions come and go) and command id.
    pub fn for_command(&self, own: OwnXids, curcid: u32) -> Snapshot {
        Snapshot {
            own,
            curcid,
            ..self.clone()
        }
    }

    /// The oldest transaction this snapshot may see as running (`backend_xmin`).
    pub fn xmin(&self) -> Xid {
        self._held.xmin
    }

    /// Is a tuple inserted by `xmin` at command `cid` visible?
    pub fn xid_visible(&self, xmin: Xid, cid: u32) -> bool {
        if xmin == INVALID_XID {
            return false;
        }
        if self.own.contains(xmin) {
            return cid < self.curcid;
        }
        xmin < self.xmax
            && self.in_progress.binary_search(&xmin).is_err()
            && self.clog.status(xmin) == XidStatus::Committed
    }
}

/// A snapshot with a one-entry cache: tuples come in long runs written by one
/// transaction, so a scan asks the clog about once per run instead of once per tuple.
pub struct VisibilityChecker {
    snapshot: Snapshot,
    cached_xmin: Xid,
    cached_visible: bool,
}

impl VisibilityChecker {
    pub fn new(snapshot: Snapshot) -> VisibilityChecker {
        VisibilityChecker {
            snapshot,
            cached_xmin: INVALID_XID,
            cached_visible: false,
        }
    }

    /// Visibility of a tuple with header fields `xmin`, `cid`, `xmax`: inserted by a
    /// transaction the snapshot sees and not deleted by one it sees. `cid` is the inserting
    /// command's, or the deleting one's once the tuple is deleted (iolab keeps one command
    /// id, as PostgreSQL does without a combo command id: a row this transaction both
    /// inserted and deleted stops being visible from the deleting command on).
    #[inline]
    pub fn visible(&mut self, xmin: Xid, cid: u32, xmax: Xid) -> bool {
        let inserted = if self.snapshot.own.contains(xmin) {
            cid < self.snapshot.curcid
        } else if xmin == self.cached_xmin {
            self.cached_visible
        } else {
            let v = self.snapshot.xid_visible(xmin, cid);
            self.cached_xmin = xmin;
            self.cached_visible = v;
            v
        };
        inserted && (xmax == INVALID_XID || !self.snapshot.xid_visible(xmax, cid))
    }

    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }
}
