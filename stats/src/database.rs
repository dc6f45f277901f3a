//! The counters of `pg_stat_database` that no other statistic holds: transactions ended,
//! deadlocks, sessions and the time they spent, and when the view was last reset. The
//! view's other columns are sums of the per-relation and `pg_stat_io` counts (see the
//! server's `pgcatalog::stat_database`). iolab serves one database: these are its.
//!
//! Times are kept in microseconds and shown in milliseconds, as PostgreSQL does.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use crate::persist::{restore_atomics, save_atomics, Corrupt, Decoder, Encoder};

/// The database's counters, shared by every session.
#[derive(Debug, Default)]
pub struct DatabaseCounters {
    xact_commit: AtomicU64,
    xact_rollback: AtomicU64,
    deadlocks: AtomicU64,
    sessions: AtomicU64,
    sessions_abandoned: AtomicU64,
    sessions_fatal: AtomicU64,
    sessions_killed: AtomicU64,
    session_time_us: AtomicU64,
    active_time_us: AtomicU64,
    idle_in_transaction_time_us: AtomicU64,
    temp_files: AtomicU64,
    temp_bytes: AtomicU64,
    stats_reset: Mutex<Option<DateTime<Utc>>>,
}

/// A copy of [`DatabaseCounters`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DatabaseCounts {
    pub xact_commit: u64,
    pub xact_rollback: u64,
    pub deadlocks: u64,
    pub sessions: u64,
    pub sessions_abandoned: u64,
    pub sessions_fatal: u64,
    pub sessions_killed: u64,
    pub session_time_ms: f64,
    pub active_time_ms: f64,
    pub idle_in_transaction_time_ms: f64,
    /// Temporary files removed, and their bytes (counted at removal, as in PostgreSQL).
    pub temp_files: u64,
    pub temp_bytes: u64,
    pub stats_reset: Option<DateTime<Utc>>,
}

/// How a client session ended (PostgreSQL's `SessionEndType`), for `pg_stat_database`'s
/// `sessions_*` columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// The client said goodbye (a Terminate message).
    Normal,
    /// The connection was lost without a Terminate (`sessions_abandoned`).
    Abandoned,
    /// A FATAL error ended it, such as a session timeout (`sessions_fatal`).
    Fatal,
    /// `pg_terminate_backend` ended it (`sessions_killed`).
    Killed,
}

fn micros(d: Duration) -> u64 {
    d.as_micros().min(u128::from(u64::MAX)) as u64
}

impl DatabaseCounters {
    /// A transaction ended: committed, or rolled back (also by an error).
    pub fn transaction_ended(&self, committed: bool) {
        let counter = match committed {
            true => &self.xact_commit,
            false => &self.xact_rollback,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A statement failed with 40P01 (the one victim of a deadlock).
    pub fn deadlock(&self) {
        self.deadlocks.fetch_add(1, Ordering::Relaxed);
    }

    pub fn session_started(&self) {
        self.sessions.fetch_add(1, Ordering::Relaxed);
    }

    /// A session ended after `lasted`, as `end` says.
    pub fn session_ended(&self, lasted: Duration, end: SessionEnd) {
        self.session_time_us
            .fetch_add(micros(lasted), Ordering::Relaxed);
        let counter = match end {
            SessionEnd::Normal => return,
            SessionEnd::Abandoned => &self.sessions_abandoned,
            SessionEnd::Fatal => &self.sessions_fatal,
            SessionEnd::Killed => &self.sessions_killed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A session ran statements for `d`.
    pub fn active(&self, d: Duration) {
        self.active_time_us.fetch_add(micros(d), Ordering::Relaxed);
    }

    /// A session sat idle inside a transaction block for `d`.
    pub fn idle_in_transaction(&self, d: Duration) {
        self.idle_in_transaction_time_us
            .fetch_add(micros(d), Ordering::Relaxed);
    }

    /// A temporary file of `bytes` was removed.
    pub fn temp_file_removed(&self, bytes: u64) {
        self.temp_files.fetch_add(1, Ordering::Relaxed);
        self.temp_bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// `pg_stat_reset()`: the counts back to zero, `stats_reset` now.
    pub fn reset(&self) {
        for c in self.all() {
            c.store(0, Ordering::Relaxed);
        }
        self.mark_reset();
    }

    /// Some of the database's statistics were reset (one relation's): `stats_reset` now.
    pub fn mark_reset(&self) {
        *self.stats_reset.lock() = Some(Utc::now());
    }

    /// Every counter (the pattern names each field, so a new one must be added here).
    fn all(&self) -> [&AtomicU64; 12] {
        let DatabaseCounters {
            xact_commit,
            xact_rollback,
            deadlocks,
            sessions,
            sessions_abandoned,
            sessions_fatal,
            sessions_killed,
            session_time_us,
            active_time_us,
            idle_in_transaction_time_us,
            temp_files,
            temp_bytes,
            stats_reset: _,
        } = self;
        [
            xact_commit,
            xact_rollback,
            deadlocks,
            sessions,
            sessions_abandoned,
            sessions_fatal,
            sessions_killed,
            session_time_us,
            active_time_us,
            idle_in_transaction_time_us,
            temp_files,
            temp_bytes,
        ]
    }

    pub(crate) fn save(&self, e: &mut Encoder) {
        save_atomics(e, &self.all());
        e.opt_time(*self.stats_reset.lock());
    }

    pub(crate) fn restore(&mut self, d: &mut Decoder<'_>) -> Result<(), Corrupt> {
        restore_atomics(d, &self.all())?;
        *self.stats_reset.get_mut() = d.opt_time()?;
        Ok(())
    }

    pub fn snapshot(&self) -> DatabaseCounts {
        let ms = |c: &AtomicU64| c.load(Ordering::Relaxed) as f64 / 1000.0;
        DatabaseCounts {
            xact_commit: self.xact_commit.load(Ordering::Relaxed),
            xact_rollback: self.xact_rollback.load(Ordering::Relaxed),
            deadlocks: self.deadlocks.load(Ordering::Relaxed),
            sessions: self.sessions.load(Ordering::Relaxed),
            sessions_abandoned: self.sessions_abandoned.load(Ordering::Relaxed),
            sessions_fatal: self.sessions_fatal.load(Ordering::Relaxed),
            sessions_killed: self.sessions_killed.load(Ordering::Relaxed),
            session_time_ms: ms(&self.session_time_us),
            active_time_ms: ms(&self.active_time_us),
            idle_in_transaction_time_ms: ms(&self.idle_in_transaction_time_us),
            temp_files: self.temp_files.load(Ordering::Relaxed),
            temp_bytes: self.temp_bytes.load(Ordering::Relaxed),
            stats_reset: *self.stats_reset.lock(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_and_reset() {
        let c = DatabaseCounters::default();
        c.transaction_ended(true);
        c.transaction_ended(true);
        c.transaction_ended(false);
        c.deadlock();
        for end in [
            SessionEnd::Killed,
            SessionEnd::Normal,
            SessionEnd::Abandoned,
        ] {
            c.session_started();
            c.session_ended(Duration::from_millis(500), end);
        }
        c.session_started();
        c.session_ended(Duration::ZERO, SessionEnd::Fatal);
        c.active(Duration::from_micros(2500));
        c.idle_in_transaction(Duration::from_millis(3));
        c.temp_file_removed(8192);
        c.temp_file_removed(100);
        let s = c.snapshot();
        assert_eq!(
            (
                s.xact_commit,
                s.xact_rollback,
                s.deadlocks,
                s.sessions,
                s.sessions_abandoned,
                s.sessions_fatal,
                s.sessions_killed
            ),
            (2, 1, 1, 4, 1, 1, 1)
        );
        assert_eq!(
            (
                s.session_time_ms,
                s.active_time_ms,
                s.idle_in_transaction_time_ms
            ),
            (1500.0, 2.5, 3.0)
        );
        assert_eq!((s.temp_files, s.temp_bytes), (2, 8292));
        assert_eq!(s.stats_reset, None);
        c.reset();
        let s = c.snapshot();
        assert_eq!(
            (s.xact_commit, s.session_time_ms, s.temp_files),
            (0, 0.0, 0)
        );
        assert!(s.stats_reset.is_some());
    }
}
