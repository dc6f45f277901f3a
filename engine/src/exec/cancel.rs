//! Why a statement stops before its end: a cancel request (psql's Ctrl-C,
//! `pg_cancel_backend`, a dropped client) or `statement_timeout`. Another task or thread
//! sets the flag; the statement looks at it between batches, while it waits for a
//! transaction, and in `pg_sleep`, and ends with PostgreSQL's 57014 and the message that
//! says which of the two it was. The first reason set stays.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

use iolab_catalog::{sqlstate, PgError, PgResult};

const RUNNING: u8 = 0;
const CANCELED: u8 = 1;
const TIMED_OUT: u8 = 2;

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
            _ => Err(PgError::canceled()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::CancelFlag;

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
}
