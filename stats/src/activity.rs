//! What every live process is doing right now: the data of `pg_stat_activity`.
//!
//! Each client session (and, later, each background thread) registers a
//! [`BackendActivity`] in the server's [`ActivityRegistry`] for as long as it lives. The
//! session updates its state and query text when a statement starts and ends (a short
//! mutex, twice per statement); the I/O paths of the engine set the **wait event** while
//! they block (one relaxed atomic store before and after the wait, no lock), with
//! PostgreSQL 18's names (`IO` / `DataFileRead`, `IO` / `AioIoCompletion`, …). Readers
//! copy the entries; nothing a reader does makes a session wait.
//!
//! Bounds: one entry per live process (at most `max_connections` sessions); the query
//! text kept per entry is cut to [`QUERY_TEXT_BYTES`] bytes, PostgreSQL's default
//! `track_activity_query_size`.
//!
//! `pg_cancel_backend` / `pg_terminate_backend` reach the process through the
//! [`BackendSignals`] it registered with (the server's connection machinery).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use crate::database::SessionEnd;
use crate::io::BackendType;

/// [`BackendActivity`]'s end before one is recorded.
const END_UNKNOWN: u8 = u8::MAX;

/// Bytes of query text kept per process (PostgreSQL's `track_activity_query_size`
/// default); longer texts are cut at a character boundary below it.
pub const QUERY_TEXT_BYTES: usize = 1024;

/// What a process is waiting for, with PostgreSQL 18's `wait_event_type` / `wait_event`
/// names. Only the events iolab's code paths can be in are listed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum WaitEvent {
    /// Not waiting (both columns NULL).
    None = 0,
    /// A synchronous read of a data file (`io_method = sync`, a single-block read).
    DataFileRead,
    /// A write of a data file.
    DataFileWrite,
    /// An extension of a data file.
    DataFileExtend,
    /// An fsync of a data file.
    DataFileSync,
    /// `posix_fadvise(WILLNEED)` advice ahead of a read.
    DataFilePrefetch,
    /// A read of a temporary file (a sort or hash aggregation beyond `work_mem`).
    BufFileRead,
    /// A write of a temporary file.
    BufFileWrite,
    /// Waiting for an I/O another thread executes (an I/O worker), or for a free handle.
    AioIoCompletion,
    /// Submitting I/Os to an io_uring.
    AioIoUringSubmit,
    /// Waiting in the kernel for io_uring completions.
    AioIoUringExecution,
    /// An idle client session waiting for its client (shown for state `idle…`).
    ClientRead,
    /// Waiting for another transaction to end (a row it is changing or locking, a key it
    /// is inserting).
    LockTransactionId,
    /// The checkpointer (which also writes the WAL out) sleeping between rounds.
    CheckpointerMain,
    /// The background writer sleeping between rounds.
    BgwriterMain,
    /// An I/O worker waiting for a read to execute.
    IoWorkerMain,
    /// Waiting for a lock on a table (`txn::relation_locks` in the engine).
    LockRelation,
    /// VACUUM or ANALYZE sleeping for the cost-based vacuum delay.
    VacuumDelay,
}

impl WaitEvent {
    const ALL: [WaitEvent; 18] = [
        WaitEvent::None,
        WaitEvent::DataFileRead,
        WaitEvent::DataFileWrite,
        WaitEvent::DataFileExtend,
        WaitEvent::DataFileSync,
        WaitEvent::DataFilePrefetch,
        WaitEvent::BufFileRead,
        WaitEvent::BufFileWrite,
        WaitEvent::AioIoCompletion,
        WaitEvent::AioIoUringSubmit,
        WaitEvent::AioIoUringExecution,
        WaitEvent::ClientRead,
        WaitEvent::LockTransactionId,
        WaitEvent::CheckpointerMain,
        WaitEvent::BgwriterMain,
        WaitEvent::IoWorkerMain,
        WaitEvent::LockRelation,
        WaitEvent::VacuumDelay,
    ];

    /// `pg_stat_activity.wait_event_type`; `None` when not waiting.
    pub fn type_name(self) -> Option<&'static str> {
        match self {
            WaitEvent::None => None,
            WaitEvent::ClientRead => Some("Client"),
            WaitEvent::LockTransactionId | WaitEvent::LockRelation => Some("Lock"),
            WaitEvent::CheckpointerMain | WaitEvent::BgwriterMain | WaitEvent::IoWorkerMain => {
                Some("Activity")
            }
            WaitEvent::VacuumDelay => Some("Timeout"),
            _ => Some("IO"),
        }
    }

    /// `pg_stat_activity.wait_event`; `None` when not waiting.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            WaitEvent::None => return None,
            WaitEvent::DataFileRead => "DataFileRead",
            WaitEvent::DataFileWrite => "DataFileWrite",
            WaitEvent::DataFileExtend => "DataFileExtend",
            WaitEvent::DataFileSync => "DataFileSync",
            WaitEvent::DataFilePrefetch => "DataFilePrefetch",
            WaitEvent::BufFileRead => "BufFileRead",
            WaitEvent::BufFileWrite => "BufFileWrite",
            WaitEvent::AioIoCompletion => "AioIoCompletion",
            WaitEvent::AioIoUringSubmit => "AioIoUringSubmit",
            WaitEvent::AioIoUringExecution => "AioIoUringExecution",
            WaitEvent::ClientRead => "ClientRead",
            WaitEvent::LockTransactionId => "transactionid",
            WaitEvent::LockRelation => "relation",
            WaitEvent::CheckpointerMain => "CheckpointerMain",
            WaitEvent::BgwriterMain => "BgwriterMain",
            WaitEvent::IoWorkerMain => "IoWorkerMain",
            WaitEvent::VacuumDelay => "VacuumDelay",
        })
    }

    fn from_u8(v: u8) -> WaitEvent {
        WaitEvent::ALL[v as usize]
    }
}

/// `pg_stat_activity.state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendState {
    Active,
    Idle,
    IdleInTransaction,
    IdleInTransactionAborted,
}

impl BackendState {
    pub fn name(self) -> &'static str {
        match self {
            BackendState::Active => "active",
            BackendState::Idle => "idle",
            BackendState::IdleInTransaction => "idle in transaction",
            BackendState::IdleInTransactionAborted => "idle in transaction (aborted)",
        }
    }
}

/// How `pg_cancel_backend` and `pg_terminate_backend` reach a process.
pub trait BackendSignals: Send + Sync {
    /// Cancel the running statement (as a cancel request does).
    fn cancel(&self);
    /// End the connection with FATAL 57P01.
    fn terminate(&self);
}

/// The changing part of an entry, under its mutex.
#[derive(Clone, Debug)]
pub struct ActivityStatus {
    pub state: BackendState,
    pub application_name: String,
    /// The running statement, or the last one when idle; empty before the first.
    pub query: String,
    pub query_start: Option<DateTime<Utc>>,
    pub xact_start: Option<DateTime<Utc>>,
    pub state_change: DateTime<Utc>,
    /// `backend_xid`: the open transaction's id, once it has written.
    pub xid: Option<u32>,
    /// `backend_xmin`: the oldest transaction the running statement's snapshot may see as
    /// running (what holds VACUUM's removal horizon back).
    pub xmin: Option<u32>,
}

/// One live process.
pub struct BackendActivity {
    pub pid: i32,
    pub backend_type: BackendType,
    pub user: String,
    pub client_addr: Option<SocketAddr>,
    pub backend_start: DateTime<Utc>,
    wait_event: AtomicU8,
    status: Mutex<ActivityStatus>,
    signals: Option<Box<dyn BackendSignals>>,
    /// How it is ending, once known: a [`SessionEnd`] as `u8`, [`END_UNKNOWN`] until then
    /// (see [`end_as`](Self::end_as)).
    end: AtomicU8,
    /// Its long command's progress (`pg_stat_progress_*`).
    pub progress: crate::progress::Progress,
}

impl std::fmt::Debug for BackendActivity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendActivity")
            .field("pid", &self.pid)
            .field("backend_type", &self.backend_type)
            .finish()
    }
}

/// Cuts `text` to at most [`QUERY_TEXT_BYTES`] bytes at a character boundary.
fn bounded_query(text: &str) -> String {
    let mut end = text.len().min(QUERY_TEXT_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

impl BackendActivity {
    pub fn new(
        pid: i32,
        backend_type: BackendType,
        user: impl Into<String>,
        application_name: impl Into<String>,
        client_addr: Option<SocketAddr>,
        signals: Option<Box<dyn BackendSignals>>,
    ) -> BackendActivity {
        let now = Utc::now();
        BackendActivity {
            pid,
            backend_type,
            user: user.into(),
            client_addr,
            backend_start: now,
            wait_event: AtomicU8::new(WaitEvent::None as u8),
            status: Mutex::new(ActivityStatus {
                state: BackendState::Idle,
                application_name: application_name.into(),
                query: String::new(),
                query_start: None,
                xact_start: None,
                state_change: now,
                xid: None,
                xmin: None,
            }),
            signals,
            end: AtomicU8::new(END_UNKNOWN),
            progress: Default::default(),
        }
    }

    /// The process starts to wait for `event` (`WaitEvent::None`: it stopped waiting).
    #[inline]
    pub fn set_wait_event(&self, event: WaitEvent) {
        self.wait_event.store(event as u8, Ordering::Relaxed);
    }

    pub fn wait_event(&self) -> WaitEvent {
        WaitEvent::from_u8(self.wait_event.load(Ordering::Relaxed))
    }

    /// A statement starts; `in_block`: inside BEGIN … COMMIT (the transaction started
    /// earlier, unless this is its first statement).
    pub fn statement_started(&self, query: &str, in_block: bool) {
        let now = Utc::now();
        let mut s = self.status.lock();
        s.state = BackendState::Active;
        s.query = bounded_query(query);
        s.query_start = Some(now);
        s.state_change = now;
        if !in_block || s.xact_start.is_none() {
            s.xact_start = Some(now);
        }
    }

    /// When the session's transaction started (`now()`), if one runs.
    pub fn xact_start(&self) -> Option<DateTime<Utc>> {
        self.status.lock().xact_start
    }

    /// The running statement's transaction id (if it has one) and snapshot xmin.
    pub fn transaction_ids(&self, xid: Option<u32>, xmin: u32) {
        let mut s = self.status.lock();
        s.xid = xid;
        s.xmin = Some(xmin);
    }

    /// The statement ended and the session waits for its client (its snapshot is gone;
    /// its transaction id stays while the transaction is open).
    pub fn statement_ended(&self, state: BackendState, application_name: &str) {
        debug_assert!(state != BackendState::Active, "ended into active");
        let mut s = self.status.lock();
        s.state = state;
        s.state_change = Utc::now();
        s.xmin = None;
        if state == BackendState::Idle {
            s.xact_start = None;
            s.xid = None;
        }
        if s.application_name != application_name {
            s.application_name = bounded_query(application_name);
        }
    }

    pub fn status(&self) -> ActivityStatus {
        self.status.lock().clone()
    }

    /// `pg_cancel_backend`: false when the process cannot be signalled.
    pub fn cancel(&self) -> bool {
        self.signals.as_ref().map(|s| s.cancel()).is_some()
    }

    /// `pg_terminate_backend`: false when the process cannot be signalled.
    pub fn terminate(&self) -> bool {
        let Some(signals) = &self.signals else {
            return false;
        };
        // Recorded first: the session may end (and count its end) as soon as it is told.
        self.end_as(SessionEnd::Killed);
        signals.terminate();
        true
    }

    /// Record why the session is ending. The first cause recorded stays: a session killed
    /// or ended by a FATAL does not become a normal end when its connection closes.
    pub fn end_as(&self, end: SessionEnd) {
        let _ =
            self.end
                .compare_exchange(END_UNKNOWN, end as u8, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// How the session ended: as recorded, or [`SessionEnd::Abandoned`] when nothing was
    /// (the connection was lost without the client's Terminate).
    pub fn end(&self) -> SessionEnd {
        let recorded = self.end.load(Ordering::Relaxed);
        [SessionEnd::Normal, SessionEnd::Fatal, SessionEnd::Killed]
            .into_iter()
            .find(|&end| end as u8 == recorded)
            .unwrap_or(SessionEnd::Abandoned)
    }
}

/// The pid `pg_stat_activity` shows for an auxiliary thread (the checkpointer, the
/// background writer, I/O worker `n`): fixed numbers below the client backends' (counted
/// up from 100000), as iolab's processes are threads of one.
fn auxiliary_pid(backend_type: BackendType, n: usize) -> i32 {
    let offset = match backend_type {
        BackendType::Checkpointer => 1,
        BackendType::BackgroundWriter => 2,
        BackendType::IoWorker => 100 + n,
        other => panic!("{} is not an auxiliary thread of iolab's", other.name()),
    };
    90_000 + offset as i32
}

/// An auxiliary thread's `pg_stat_activity` row, from its start until this is dropped.
pub struct AuxiliaryActivity {
    hub: Arc<crate::io::IoStatsHub>,
    pub activity: Arc<BackendActivity>,
}

impl AuxiliaryActivity {
    pub fn register(
        hub: Arc<crate::io::IoStatsHub>,
        backend_type: BackendType,
        n: usize,
    ) -> AuxiliaryActivity {
        let pid = auxiliary_pid(backend_type, n);
        let activity = Arc::new(BackendActivity::new(pid, backend_type, "", "", None, None));
        hub.activity.register(Arc::clone(&activity));
        AuxiliaryActivity { hub, activity }
    }

    /// The thread now waits for `event` (`WaitEvent::None`: it works).
    pub fn set_wait_event(&self, event: WaitEvent) {
        self.activity.set_wait_event(event);
    }
}

impl Drop for AuxiliaryActivity {
    fn drop(&mut self) {
        self.hub.activity.unregister(self.activity.pid);
    }
}

/// The live processes, by pid.
#[derive(Debug, Default)]
pub struct ActivityRegistry {
    entries: Mutex<BTreeMap<i32, Arc<BackendActivity>>>,
}

impl ActivityRegistry {
    pub fn register(&self, activity: Arc<BackendActivity>) {
        self.entries.lock().insert(activity.pid, activity);
    }

    pub fn unregister(&self, pid: i32) {
        self.entries.lock().remove(&pid);
    }

    pub fn get(&self, pid: i32) -> Option<Arc<BackendActivity>> {
        self.entries.lock().get(&pid).cloned()
    }

    /// Every live process, in pid order.
    pub fn all(&self) -> Vec<Arc<BackendActivity>> {
        self.entries.lock().values().cloned().collect()
    }

    /// The live client sessions, in pid order.
    pub fn clients(&self) -> Vec<Arc<BackendActivity>> {
        let entries = self.entries.lock();
        let clients = entries
            .values()
            .filter(|a| a.backend_type == BackendType::ClientBackend);
        clients.cloned().collect()
    }

    /// The backend type of a live process.
    pub fn backend_type(&self, pid: i32) -> Option<BackendType> {
        self.entries.lock().get(&pid).map(|a| a.backend_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_events_round_trip_and_have_postgres_names() {
        for e in WaitEvent::ALL {
            assert_eq!(WaitEvent::from_u8(e as u8), e);
            assert_eq!(e.type_name().is_some(), e.name().is_some());
        }
        assert_eq!(WaitEvent::AioIoCompletion.type_name(), Some("IO"));
        assert_eq!(WaitEvent::ClientRead.type_name(), Some("Client"));
    }

    #[test]
    fn query_text_is_bounded_at_a_char_boundary() {
        let a = BackendActivity::new(1, BackendType::ClientBackend, "u", "", None, None);
        let long = "é".repeat(QUERY_TEXT_BYTES);
        a.statement_started(&long, false);
        let q = a.status().query;
        assert!(q.len() <= QUERY_TEXT_BYTES && q.len() >= QUERY_TEXT_BYTES - 1);
        assert!(!a.cancel(), "no signals registered");
    }

    #[test]
    fn transaction_start_is_kept_inside_a_block() {
        let a = BackendActivity::new(1, BackendType::ClientBackend, "u", "", None, None);
        a.statement_started("BEGIN", true);
        let first = a.status().xact_start;
        a.statement_ended(BackendState::IdleInTransaction, "");
        a.statement_started("SELECT 1", true);
        assert_eq!(a.status().xact_start, first);
        a.statement_ended(BackendState::Idle, "psql");
        let s = a.status();
        assert_eq!(
            (s.state, s.xact_start, s.application_name.as_str()),
            (BackendState::Idle, None, "psql")
        );
    }
}
