//! The session timeouts with which PostgreSQL ends a connection:
//!
//! | setting | ends a session that has been … | FATAL |
//! |---|---|---|
//! | `idle_session_timeout` | idle, outside a transaction block, that long | 57P05 |
//! | `idle_in_transaction_session_timeout` | idle inside a transaction block that long | 25P03 |
//! | `transaction_timeout` | in one transaction (a block, or one statement's own) that long | 25P04 |
//!
//! A watchdog task per connection sleeps until the nearest deadline its session's state
//! gives — the `pg_stat_activity` state and its `state_change` and `xact_start` times,
//! with the settings as the session last published them (after each statement) — looks
//! again, and when a deadline has passed leaves the FATAL to send in [`Farewell`] and ends
//! the session through the same signal as `pg_terminate_backend` (which also stops a
//! statement still running, as only `transaction_timeout` can find one). With no timeout
//! set it looks every [`IDLE_POLL`], so that a timeout SET later is noticed.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use chrono::{DateTime, Utc};
use iolab_stats::{ActivityStatus, BackendActivity, BackendState, SessionEnd};
use parking_lot::Mutex;

/// How often a watchdog with no deadline looks at its session again.
const IDLE_POLL: Duration = Duration::from_millis(250);

/// A session's three timeouts in milliseconds (0: none), as of its last statement.
#[derive(Default)]
pub struct Timeouts {
    idle_session_ms: AtomicI64,
    idle_in_transaction_ms: AtomicI64,
    transaction_ms: AtomicI64,
}

impl Timeouts {
    pub fn publish(&self, idle_session_ms: i32, idle_in_transaction_ms: i32, transaction_ms: i32) {
        self.idle_session_ms
            .store(idle_session_ms as i64, Ordering::Relaxed);
        (self.idle_in_transaction_ms).store(idle_in_transaction_ms as i64, Ordering::Relaxed);
        self.transaction_ms
            .store(transaction_ms as i64, Ordering::Relaxed);
    }
}

/// The FATAL a connection ends with, when a timeout (not `pg_terminate_backend`) ends it:
/// (SQLSTATE, message).
#[derive(Default)]
pub struct Farewell(Mutex<Option<(&'static str, &'static str)>>);

impl Farewell {
    pub fn take(&self) -> Option<(&'static str, &'static str)> {
        self.0.lock().take()
    }
}

const IDLE_SESSION: (&str, &str) = (
    "57P05",
    "terminating connection due to idle-session timeout",
);
const IDLE_IN_TRANSACTION: (&str, &str) = (
    "25P03",
    "terminating connection due to idle-in-transaction timeout",
);
const TRANSACTION: (&str, &str) = ("25P04", "terminating connection due to transaction timeout");

/// The deadlines `status` and `timeouts` give, with the FATAL of each.
fn deadlines(
    status: &ActivityStatus,
    timeouts: &Timeouts,
) -> Vec<(DateTime<Utc>, (&'static str, &'static str))> {
    let after = |from: DateTime<Utc>, ms: &AtomicI64| {
        let ms = ms.load(Ordering::Relaxed);
        (ms > 0).then(|| from + chrono::Duration::milliseconds(ms))
    };
    let mut due = Vec::new();
    match status.state {
        BackendState::Idle => {
            due.extend(
                after(status.state_change, &timeouts.idle_session_ms).map(|d| (d, IDLE_SESSION)),
            );
        }
        BackendState::IdleInTransaction | BackendState::IdleInTransactionAborted => {
            due.extend(
                after(status.state_change, &timeouts.idle_in_transaction_ms)
                    .map(|d| (d, IDLE_IN_TRANSACTION)),
            );
        }
        BackendState::Active => {}
    }
    if status.state != BackendState::Idle {
        if let Some(start) = status.xact_start {
            due.extend(after(start, &timeouts.transaction_ms).map(|d| (d, TRANSACTION)));
        }
    }
    due
}

/// Watches `activity`'s session until it ends or a timeout ends it: then records the end as
/// FATAL, leaves the FATAL in `farewell` and terminates the session.
pub fn spawn_watchdog(
    activity: Weak<BackendActivity>,
    timeouts: Arc<Timeouts>,
    farewell: Arc<Farewell>,
) {
    tokio::spawn(async move {
        loop {
            let Some(a) = activity.upgrade() else {
                return; // the session is gone
            };
            let status = a.status();
            let now = Utc::now();
            let nearest = deadlines(&status, &timeouts)
                .into_iter()
                .min_by_key(|d| d.0);
            let wait = match nearest {
                Some((at, fatal)) if at <= now => {
                    // Recorded first: terminate() would record the end as a kill.
                    a.end_as(SessionEnd::Fatal);
                    *farewell.0.lock() = Some(fatal);
                    a.terminate();
                    return;
                }
                // Look again at the deadline (the state may have moved on by then).
                Some((at, _)) => (at - now).to_std().unwrap_or_default().min(IDLE_POLL * 4),
                None => IDLE_POLL,
            };
            drop(a);
            tokio::time::sleep(wait).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(state: BackendState, xact_start: Option<DateTime<Utc>>) -> ActivityStatus {
        ActivityStatus {
            state,
            application_name: String::new(),
            query: String::new(),
            query_start: None,
            xact_start,
            state_change: DateTime::UNIX_EPOCH,
            xid: None,
            xmin: None,
        }
    }

    #[test]
    fn each_state_has_its_own_timeouts() {
        let t = Timeouts::default();
        t.publish(1000, 2000, 5000);
        let epoch = DateTime::UNIX_EPOCH;
        let ms = |n| epoch + chrono::Duration::milliseconds(n);
        let idle = deadlines(&status(BackendState::Idle, None), &t);
        assert_eq!(idle, vec![(ms(1000), IDLE_SESSION)]);
        let in_block = deadlines(&status(BackendState::IdleInTransaction, Some(epoch)), &t);
        assert_eq!(
            in_block,
            vec![(ms(2000), IDLE_IN_TRANSACTION), (ms(5000), TRANSACTION)]
        );
        let running = deadlines(&status(BackendState::Active, Some(ms(10))), &t);
        assert_eq!(running, vec![(ms(5010), TRANSACTION)]);
        t.publish(0, 0, 0);
        assert!(deadlines(&status(BackendState::IdleInTransaction, Some(epoch)), &t).is_empty());
    }
}
