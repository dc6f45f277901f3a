//! Hands out transaction ids, tracks the ones in progress, takes snapshots, and ends
//! transactions in the commit log.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use iolab_catalog::store::write_durably;
use parking_lot::Mutex;

use super::clog::{Clog, XidStatus};
use super::snapshot::Snapshot;
use super::{Xid, FIRST_NORMAL_XID};

/// How many xids are reserved in the horizon file at a time.
const XID_RESERVATION: Xid = 4096;

pub struct TransactionManager {
    clog: Arc<Clog>,
    horizon_path: PathBuf,
    state: Mutex<XidState>,
    /// Told of each transaction's end (`committed` or not), after the clog has it.
    end_listener: OnceLock<EndListener>,
}

/// What [`TransactionManager::set_end_listener`] takes: `(xid, committed)`.
pub type EndListener = Box<dyn Fn(Xid, bool) + Send + Sync>;

struct XidState {
    next_xid: Xid,
    /// Xids below this one may be handed out without touching the horizon file.
    reserved_until: Xid,
    in_progress: BTreeSet<Xid>,
}

impl TransactionManager {
    /// Opens the transaction state under `data_dir` (`pg_xact/clog`, `global/xid_horizon`).
    /// Xids that were handed out but never ended (a crash) are marked aborted.
    pub fn open(data_dir: &Path) -> io::Result<TransactionManager> {
        let clog = Arc::new(Clog::open(&data_dir.join("pg_xact").join("clog"))?);
        let horizon_path = data_dir.join("global").join("xid_horizon");
        std::fs::create_dir_all(data_dir.join("global"))?;
        let horizon: Xid = match std::fs::read_to_string(&horizon_path) {
            Ok(text) => text.trim().parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("bad xid horizon in {}", horizon_path.display()),
                )
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => FIRST_NORMAL_XID,
            Err(e) => return Err(e),
        };
        for xid in FIRST_NORMAL_XID..horizon {
            if clog.status(xid) == XidStatus::InProgress {
                clog.set_status(xid, XidStatus::Aborted)?;
            }
        }
        clog.sync()?;
        let manager = TransactionManager {
            clog,
            horizon_path,
            end_listener: OnceLock::new(),
            state: Mutex::new(XidState {
                next_xid: horizon,
                reserved_until: horizon,
                in_progress: BTreeSet::new(),
            }),
        };
        Ok(manager)
    }

    pub fn clog(&self) -> &Arc<Clog> {
        &self.clog
    }

    /// Starts a writing transaction and returns its xid.
    pub fn begin(&self) -> io::Result<Xid> {
        let mut state = self.state.lock();
        if state.next_xid >= state.reserved_until {
            let until = state.next_xid.checked_add(XID_RESERVATION).ok_or_else(|| {
                io::Error::other("transaction ids exhausted (iolab has no wraparound handling)")
            })?;
            write_durably(&self.horizon_path, until.to_string().as_bytes())?;
            state.reserved_until = until;
        }
        let xid = state.next_xid;
        state.next_xid += 1;
        state.in_progress.insert(xid);
        Ok(xid)
    }

    pub fn commit(&self, xid: Xid) -> io::Result<()> {
        self.end(xid, XidStatus::Committed)
    }

    pub fn abort(&self, xid: Xid) -> io::Result<()> {
        self.end(xid, XidStatus::Aborted)
    }

    /// `listener` is told of every transaction's end from now on (the statistics count
    /// a transaction's rows then). Set once.
    pub fn set_end_listener(&self, listener: EndListener) {
        assert!(
            self.end_listener.set(listener).is_ok(),
            "the end listener is set once"
        );
    }

    fn end(&self, xid: Xid, status: XidStatus) -> io::Result<()> {
        // The clog flips first, then the xid leaves the in-progress set: a snapshot taken
        // in between still treats it as in progress, which is the safe side.
        let result = self.clog.set_status(xid, status);
        let removed = self.state.lock().in_progress.remove(&xid);
        assert!(removed, "xid {xid} ended twice or was never started");
        if let Some(listener) = self.end_listener.get() {
            listener(xid, status == XidStatus::Committed);
        }
        result
    }

    /// A snapshot for a statement of transaction `own_xid` (0 when it has none) at
    /// command `curcid`.
    pub fn snapshot(&self, own_xid: Xid, curcid: u32) -> Snapshot {
        let state = self.state.lock();
        Snapshot {
            xmax: state.next_xid,
            in_progress: state
                .in_progress
                .iter()
                .copied()
                .filter(|&x| x != own_xid)
                .collect(),
            own_xid,
            curcid,
            clog: self.clog.clone(),
        }
    }

    /// Number of transactions in progress.
    pub fn in_progress_count(&self) -> usize {
        self.state.lock().in_progress.len()
    }

    pub fn sync(&self) -> io::Result<()> {
        self.clog.sync()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("iolab-txn-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn snapshot_hides_in_progress_and_aborted() {
        let dir = temp_dir("vis");
        let tm = TransactionManager::open(&dir).unwrap();
        let a = tm.begin().unwrap();
        let b = tm.begin().unwrap();
        tm.commit(a).unwrap();
        let snap = tm.snapshot(0, 0);
        assert!(snap.xid_visible(a, 0));
        assert!(!snap.xid_visible(b, 0), "in progress");
        tm.commit(b).unwrap();
        assert!(
            !snap.xid_visible(b, 0),
            "committed after the snapshot was taken"
        );
        assert!(tm.snapshot(0, 0).xid_visible(b, 0));
        let c = tm.begin().unwrap();
        tm.abort(c).unwrap();
        assert!(!tm.snapshot(0, 0).xid_visible(c, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn own_writes_visible_only_to_later_commands() {
        let dir = temp_dir("own");
        let tm = TransactionManager::open(&dir).unwrap();
        let x = tm.begin().unwrap();
        let snap = tm.snapshot(x, 1);
        assert!(snap.xid_visible(x, 0));
        assert!(!snap.xid_visible(x, 1));
        tm.abort(x).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn unfinished_xids_are_aborted_after_restart_and_never_reused() {
        let dir = temp_dir("restart");
        let (done, lost) = {
            let tm = TransactionManager::open(&dir).unwrap();
            let done = tm.begin().unwrap();
            tm.commit(done).unwrap();
            let lost = tm.begin().unwrap(); // "crash" while in progress
            (done, lost)
        };
        let tm = TransactionManager::open(&dir).unwrap();
        assert_eq!(tm.clog().status(done), XidStatus::Committed);
        assert_eq!(tm.clog().status(lost), XidStatus::Aborted);
        let next = tm.begin().unwrap();
        assert!(next > lost);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
