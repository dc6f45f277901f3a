//! Hands out transaction ids, tracks the ones in progress, takes snapshots, and ends
//! transactions in the commit log.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use iolab_catalog::store::write_durably;
use iolab_catalog::{sqlstate, PgError, PgResult};
use iolab_stats::BufferUsage;
use parking_lot::{Condvar, Mutex};

use super::clog::{Clog, XidStatus};
use super::snapshot::{HeldXmin, Snapshot, XminRegistry};
use super::{OwnXids, Xid, FIRST_NORMAL_XID};
use crate::wal::record::Body;
use crate::wal::WalIoBy;

/// How many xids are reserved in the horizon file at a time.
const XID_RESERVATION: Xid = 4096;

/// Transaction `waiter` waits since `since` for `holder` to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransactionWait {
    /// A top-level transaction.
    pub waiter: Xid,
    /// What `waiter` waits for: a transaction or a subtransaction.
    pub holder: Xid,
    /// `holder`'s top-level transaction.
    pub holder_top: Xid,
    pub since: DateTime<Utc>,
}

pub struct TransactionManager {
    clog: Arc<Clog>,
    horizon_path: PathBuf,
    state: Mutex<XidState>,
    /// Signalled whenever a transaction ends (for [`TransactionManager::wait_for`]).
    ended: Condvar,
    /// The xmins of the snapshots in use (see [`TransactionManager::oldest_nonremovable`]).
    snapshot_xmins: XminRegistry,
    /// Told of each transaction's end (`committed` or not), after the clog has it.
    end_listener: OnceLock<EndListener>,
    /// Where commits and aborts are logged (unset in unit tests without a WAL).
    wal: OnceLock<Arc<crate::wal::Wal>>,
}

/// What [`TransactionManager::set_end_listener`] takes: `(xid, committed)`.
pub type EndListener = Box<dyn Fn(Xid, bool) + Send + Sync>;

struct XidState {
    next_xid: Xid,
    /// Xids below this one may be handed out without touching the horizon file.
    reserved_until: Xid,
    /// Running transactions and subtransactions.
    in_progress: BTreeSet<Xid>,
    /// Each running subtransaction's top-level transaction.
    top_of_subxid: HashMap<Xid, Xid>,
    /// Who waits for whom: `waiter → holder`, one entry per waiting (top-level)
    /// transaction; the holder as waited for (a subxid, perhaps).
    waits_for: HashMap<Xid, (Xid, DateTime<Utc>)>,
}

impl XidState {
    /// The top-level transaction of `xid` (itself unless it is a running subtransaction).
    fn top_of(&self, xid: Xid) -> Xid {
        self.top_of_subxid.get(&xid).copied().unwrap_or(xid)
    }
}

/// How often a waiting transaction looks at its statement's cancel flag.
const WAIT_CANCEL_CHECK: Duration = Duration::from_millis(50);

impl TransactionManager {
    /// Opens the transaction state under `data_dir` (`pg_xact/clog`, `global/xid_horizon`).
    /// Xids that were handed out but never ended (a crash) are marked aborted.
    pub fn open(data_dir: &Path) -> io::Result<TransactionManager> {
        let manager = TransactionManager::open_for_recovery(data_dir)?;
        manager.abort_unfinished()?;
        Ok(manager)
    }

    /// [`open`](Self::open) without ending anything: redo sets the status of every
    /// transaction whose commit or abort the WAL holds, then
    /// [`abort_unfinished`](Self::abort_unfinished) ends the rest.
    pub fn open_for_recovery(data_dir: &Path) -> io::Result<TransactionManager> {
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
        let manager = TransactionManager {
            clog,
            horizon_path,
            ended: Condvar::new(),
            snapshot_xmins: XminRegistry::default(),
            end_listener: OnceLock::new(),
            wal: OnceLock::new(),
            state: Mutex::new(XidState {
                next_xid: horizon,
                reserved_until: horizon,
                in_progress: BTreeSet::new(),
                top_of_subxid: HashMap::new(),
                waits_for: HashMap::new(),
            }),
        };
        Ok(manager)
    }

    /// Marks aborted every xid handed out before this run that never ended (a crash).
    pub fn abort_unfinished(&self) -> io::Result<()> {
        let horizon = self.state.lock().next_xid;
        for xid in FIRST_NORMAL_XID..horizon {
            if self.clog.status(xid) == XidStatus::InProgress {
                self.clog.set_status(xid, XidStatus::Aborted)?;
            }
        }
        self.clog.sync()
    }

    /// From now on commits and aborts are logged (and commits flushed) in `wal`.
    pub fn set_wal(&self, wal: Arc<crate::wal::Wal>) {
        assert!(self.wal.set(wal).is_ok(), "the WAL is set once");
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

    /// Starts a subtransaction of running transaction `top` and returns its subxid.
    pub fn begin_subtransaction(&self, top: Xid) -> io::Result<Xid> {
        let subxid = self.begin()?;
        let mut state = self.state.lock();
        assert!(
            state.in_progress.contains(&top) && !state.top_of_subxid.contains_key(&top),
            "a subtransaction of running top-level transaction {top}"
        );
        state.top_of_subxid.insert(subxid, top);
        Ok(subxid)
    }

    pub fn commit(&self, xid: Xid) -> io::Result<()> {
        self.commit_with(&OwnXids::of(xid), true, None)
    }

    /// Commits transaction `own.top` with its live subtransactions: logs its commit
    /// record and, when `synchronous` (the session's `synchronous_commit`), waits until it
    /// is durable, before the commit log says so. Without waiting, the WAL writer flushes
    /// it within `wal_writer_delay`. `by`: whom the WAL's writes and syncs count for in
    /// `pg_stat_io`.
    pub fn commit_with(&self, own: &OwnXids, synchronous: bool, by: WalIoBy) -> io::Result<()> {
        if let Some(wal) = self.wal.get() {
            let body = Body::Commit {
                time_us: crate::wal::now_us(),
                subxids: own.subxids.clone(),
            };
            let (_, end) = wal.insert(own.top, &body, &mut BufferUsage::default(), by);
            if synchronous {
                wal.flush(end, by)?;
            }
        }
        self.end(own, XidStatus::Committed)
    }

    /// Aborts `xid` (its abort record needs no flush: a lost one reads as aborted too).
    pub fn abort(&self, xid: Xid) -> io::Result<()> {
        self.abort_all(&OwnXids::of(xid))
    }

    /// Aborts transaction `own.top` and its live subtransactions.
    pub fn abort_all(&self, own: &OwnXids) -> io::Result<()> {
        if let Some(wal) = self.wal.get() {
            let body = Body::Abort {
                time_us: crate::wal::now_us(),
                subxids: own.subxids.clone(),
            };
            wal.insert(own.top, &body, &mut BufferUsage::default(), None);
        }
        self.end(own, XidStatus::Aborted)
    }

    /// `ROLLBACK TO SAVEPOINT`: aborts subtransactions `subxids` of a transaction that
    /// goes on. No record: a subxid that never ends in the WAL reads as aborted after a
    /// crash, and the transaction's commit record lists only its live subxids.
    pub fn abort_subtransactions(&self, subxids: &[Xid]) -> io::Result<()> {
        let mut result = Ok(());
        for &subxid in subxids {
            assert!(
                self.state.lock().top_of_subxid.contains_key(&subxid),
                "xid {subxid} is a running subtransaction"
            );
            let ended = self.end(&OwnXids::of(subxid), XidStatus::Aborted);
            result = result.and(ended);
        }
        result
    }

    /// `listener` is told of every transaction's end from now on (the statistics count
    /// a transaction's rows then). Set once.
    pub fn set_end_listener(&self, listener: EndListener) {
        assert!(
            self.end_listener.set(listener).is_ok(),
            "the end listener is set once"
        );
    }

    /// Ends `own.top` and `own.subxids`, in the clog first (the top-level xid first, see
    /// the module comment of `txn`), then in the in-progress set, all at once: a snapshot
    /// taken in between still treats them as in progress, which is the safe side.
    fn end(&self, own: &OwnXids, status: XidStatus) -> io::Result<()> {
        let xids = || std::iter::once(own.top).chain(own.subxids.iter().copied());
        let mut result = Ok(());
        for xid in xids() {
            result = result.and(self.clog.set_status(xid, status));
        }
        {
            let mut state = self.state.lock();
            for xid in xids() {
                let removed = state.in_progress.remove(&xid);
                assert!(removed, "xid {xid} ended twice or was never started");
                state.top_of_subxid.remove(&xid);
            }
        }
        if let Some(listener) = self.end_listener.get() {
            for xid in xids() {
                listener(xid, status == XidStatus::Committed);
            }
        }
        self.ended.notify_all();
        result
    }

    /// Transaction `waiter` waits until `holder` has ended (a row `holder` is changing).
    /// A wait that would close a circle (`holder` waits, directly or through others, for
    /// `waiter`) fails at once with PostgreSQL's 40P01 instead; `check_cancel` is asked
    /// every 50 ms and its error ends the wait.
    pub fn wait_for(
        &self,
        waiter: Xid,
        holder: Xid,
        check_cancel: &dyn Fn() -> PgResult<()>,
    ) -> PgResult<()> {
        let mut state = self.state.lock();
        let waiter = state.top_of(waiter);
        assert_ne!(
            waiter,
            state.top_of(holder),
            "a transaction never waits for itself"
        );
        let mut next = state.top_of(holder);
        while let Some(&(further, _)) = state.waits_for.get(&next) {
            let further = state.top_of(further);
            if further == waiter {
                return Err(
                    PgError::new(sqlstate::T_R_DEADLOCK_DETECTED, "deadlock detected").with_detail(
                        format!(
                            "Transaction {waiter} waits for transaction {holder}, \
                     which waits for transaction {waiter}."
                        ),
                    ),
                );
            }
            next = further;
        }
        let previous = state.waits_for.insert(waiter, (holder, Utc::now()));
        assert!(
            previous.is_none(),
            "xid {waiter} waits for one transaction at a time"
        );
        let mut result = Ok(());
        while state.in_progress.contains(&holder) {
            self.ended.wait_for(&mut state, WAIT_CANCEL_CHECK);
            result = check_cancel();
            if result.is_err() {
                break;
            }
        }
        state.waits_for.remove(&waiter);
        result
    }

    /// The running subtransactions, as `(subxid, its top-level transaction)`.
    pub fn subtransactions(&self) -> Vec<(Xid, Xid)> {
        let state = self.state.lock();
        (state.top_of_subxid.iter())
            .map(|(&sub, &top)| (sub, top))
            .collect()
    }

    /// The waits going on now (`pg_locks`), in no particular order.
    pub fn waits(&self) -> Vec<TransactionWait> {
        let state = self.state.lock();
        (state.waits_for.iter())
            .map(|(&waiter, &(holder, since))| TransactionWait {
                waiter,
                holder,
                holder_top: state.top_of(holder),
                since,
            })
            .collect()
    }

    /// A snapshot for a statement of transaction `own` (top 0 when it has none) at
    /// command `curcid`.
    pub fn snapshot(&self, own: OwnXids, curcid: u32) -> Snapshot {
        let state = self.state.lock();
        // The oldest transaction this snapshot may see as running (or its own).
        let xmin = state
            .in_progress
            .first()
            .map_or(state.next_xid, |&x| x.min(state.next_xid));
        *self.snapshot_xmins.lock().entry(xmin).or_default() += 1;
        Snapshot {
            xmax: state.next_xid,
            in_progress: state.in_progress.iter().copied().collect(),
            own,
            curcid,
            clog: self.clog.clone(),
            _held: Arc::new(HeldXmin {
                xmin,
                registry: self.snapshot_xmins.clone(),
            }),
        }
    }

    /// The oldest transaction whose deletes some snapshot may not see yet (PostgreSQL's
    /// `GetOldestNonRemovableTransactionId`): the oldest running transaction, or the oldest
    /// xmin of a snapshot in use, or the next xid. A row deleted by a committed
    /// transaction older than this is dead to every snapshot, now and later.
    pub fn oldest_nonremovable(&self) -> Xid {
        let state = self.state.lock();
        let running = state.in_progress.first().copied().unwrap_or(state.next_xid);
        let snapshots = self.snapshot_xmins.lock().keys().next().copied();
        snapshots
            .map_or(running, |s| s.min(running))
            .min(state.next_xid)
    }

    /// The next xid to be handed out.
    pub fn next_xid(&self) -> Xid {
        self.state.lock().next_xid
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
        let snap = tm.snapshot(OwnXids::default(), 0);
        assert!(snap.xid_visible(a, 0));
        assert!(!snap.xid_visible(b, 0), "in progress");
        tm.commit(b).unwrap();
        assert!(
            !snap.xid_visible(b, 0),
            "committed after the snapshot was taken"
        );
        assert!(tm.snapshot(OwnXids::default(), 0).xid_visible(b, 0));
        let c = tm.begin().unwrap();
        tm.abort(c).unwrap();
        assert!(!tm.snapshot(OwnXids::default(), 0).xid_visible(c, 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn waits_end_with_the_holder_and_circles_fail() {
        let dir = temp_dir("wait");
        let tm = Arc::new(TransactionManager::open(&dir).unwrap());
        let (a, b, c) = (
            tm.begin().unwrap(),
            tm.begin().unwrap(),
            tm.begin().unwrap(),
        );
        let no_cancel = || Ok(());
        // b waits for a, c for b: a waiting for c would close the circle.
        let waiter = {
            let tm = tm.clone();
            std::thread::spawn(move || tm.wait_for(b, a, &|| Ok(())))
        };
        while !tm.state.lock().waits_for.contains_key(&b) {
            std::thread::yield_now();
        }
        let second = {
            let tm = tm.clone();
            std::thread::spawn(move || tm.wait_for(c, b, &|| Ok(())))
        };
        while !tm.state.lock().waits_for.contains_key(&c) {
            std::thread::yield_now();
        }
        let err = tm.wait_for(a, c, &no_cancel).unwrap_err();
        assert_eq!(err.code, sqlstate::T_R_DEADLOCK_DETECTED);
        // A canceled wait ends with the cancel's error.
        let d = tm.begin().unwrap();
        let canceled = tm.wait_for(d, c, &|| Err(PgError::canceled())).unwrap_err();
        assert_eq!(canceled.code, sqlstate::QUERY_CANCELED);
        tm.abort(d).unwrap();
        tm.commit(a).unwrap();
        waiter.join().unwrap().unwrap();
        tm.abort(b).unwrap();
        second.join().unwrap().unwrap();
        assert!(tm.state.lock().waits_for.is_empty());
        tm.commit(c).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn subtransactions_end_alone_or_with_their_transaction() {
        let dir = temp_dir("sub");
        let tm = TransactionManager::open(&dir).unwrap();
        let top = tm.begin().unwrap();
        let (a, b) = (
            tm.begin_subtransaction(top).unwrap(),
            tm.begin_subtransaction(top).unwrap(),
        );
        let own = tm.snapshot(OwnXids::with_subxids(top, vec![a, b]), 1);
        assert!(
            own.xid_visible(a, 0) && own.xid_visible(b, 0),
            "its own rows"
        );
        let other = tm.snapshot(OwnXids::default(), 0);
        assert!(!other.xid_visible(a, 0), "running for others");
        // ROLLBACK TO: b ends alone, aborted; a goes on.
        tm.abort_subtransactions(&[b]).unwrap();
        assert_eq!(tm.clog().status(b), XidStatus::Aborted);
        assert_eq!(tm.subtransactions(), vec![(a, top)]);
        // COMMIT: a commits with top, invisible to the snapshot taken before.
        tm.commit_with(&OwnXids::with_subxids(top, vec![a]), true, None)
            .unwrap();
        assert_eq!(tm.clog().status(a), XidStatus::Committed);
        assert!(!other.xid_visible(a, 0));
        assert!(tm.snapshot(OwnXids::default(), 0).xid_visible(a, 0));
        assert!(tm.subtransactions().is_empty());
        assert_eq!(tm.in_progress_count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn own_writes_visible_only_to_later_commands() {
        let dir = temp_dir("own");
        let tm = TransactionManager::open(&dir).unwrap();
        let x = tm.begin().unwrap();
        let snap = tm.snapshot(OwnXids::of(x), 1);
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
