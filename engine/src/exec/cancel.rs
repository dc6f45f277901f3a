//! Why a statement stops before its end: a cancel request (psql's Ctrl-C,
//! `pg_cancel_backend`, a dropped client), `statement_timeout`, or the end of its session
//! (`pg_terminate_backend`, `transaction_timeout`, a shutdown). Another task or thread
//! sets the flag; the statement looks at it between batches, while it waits for a
//! transaction, and in `pg_sleep`. A cancel or timeout ends it with PostgreSQL's 57014 and
//! the message that says which of the two it was; the end of its session with FATAL 57P01,
//! which the server does not send as the statement's error: the connection sends the
//! session's own FATAL as it closes. The first reason set stays.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use iolab_catalog::{sqlstate, PgError, PgResult};

const RUNNING: u8 = 0;
const CANCELED: u8 = 1;
const TIMED_OUT: u8 = 2;
const TERMINATED: u8 = 3;

/// One statement's cancel flag, shared by everything that runs the statement.
#[derive(Clone, Debug, Default)]
pub struct CancelFlag(Arc<AtomicU8>);

impl CancelFlag {
    pub fn new() -> CancelFlag {
        CancelFlag::default()
    }

    /// A cancel request: the statement stops "due to user request".
    pub fn cancel(&self) {
        self.set(CANCELED);
    }

    /// `statement_timeout` passed: the statement stops "due to statement timeout".
    pub fn time_out(&self) {
        self.set(TIMED_OUT);
    }

    /// The statement's session is being ended: the statement stops with FATAL 57P01.
    pub fn terminate(&self) {
        self.set(TERMINATED);
    }

    fn set(&self, reason: u8) {
        let _ = (self.0).compare_exchange(RUNNING, reason, Ordering::Relaxed, Ordering::Relaxed);
    }

    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::Relaxed) != RUNNING
    }

    /// PostgreSQL's error for the reason set, if one is.
    pub fn check(&self) -> PgResult<()> {
        match self.0.load(Ordering::Relaxed) {
            RUNNING => Ok(()),
            TIMED_OUT => Err(PgError::new(
                sqlstate::QUERY_CANCELED,
                "canceling statement due to statement timeout",
            )),
            TERMINATED => Err(PgError::fatal(
                sqlstate::ADMIN_SHUTDOWN,
                "terminating connection due to administrator command",
            )),
            _ => Err(PgError::canceled()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CancelFlag;
    use iolab_catalog::error::Severity;

    #[test]
    fn the_first_reason_stays() {
        let flag = CancelFlag::new();
        assert!(!flag.is_set() && flag.check().is_ok());
        flag.time_out();
        flag.cancel();
        let e = flag.check().unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("57014", "canceling statement due to statement timeout")
        );
        let other = CancelFlag::new();
        other.cancel();
        other.time_out();
        assert_eq!(
            other.check().unwrap_err().message,
            "canceling statement due to user request"
        );
    }

    #[test]
    fn a_terminated_statement_ends_its_session() {
        let flag = CancelFlag::new();
        flag.terminate();
        let e = flag.check().unwrap_err();
        assert_eq!((e.severity, e.code), (Severity::Fatal, "57P01"));
        // A cancel that came first stays a cancel.
        let canceled = CancelFlag::new();
        canceled.cancel();
        canceled.terminate();
        let e = canceled.check().unwrap_err();
        assert_eq!((e.severity, e.code), (Severity::Error, "57014"));
    }
}
