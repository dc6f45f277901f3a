//! What one statement carries into the operators it runs: its snapshot, its transaction,
//! its cancel flag, and the counters its scans add to.
//!
//! The session builds a `StatementContext` per statement and attaches it to the
//! DataFusion session config (`SessionConfig::with_extension`); operators find it with
//! [`StatementContext::from_config`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use datafusion::execution::TaskContext;
use datafusion::prelude::SessionConfig;
use iolab_catalog::{PgError, PgResult};
use iolab_stats::BufferUsage;
use parking_lot::Mutex;

use crate::txn::{Snapshot, Xid};
use crate::Database;

pub struct StatementContext {
    pub db: Arc<Database>,
    pub snapshot: Snapshot,
    /// The statement's transaction id, 0 for a read-only statement outside a transaction.
    pub xid: Xid,
    /// Command id within the transaction (tuples it inserts carry it).
    pub cid: u32,
    pub track_io_timing: bool,
    /// Set by a cancel request, `statement_timeout` or a dropped client.
    pub cancel: Arc<AtomicBool>,
    /// Buffer usage of everything this statement ran, summed as scans finish.
    pub usage: Mutex<BufferUsage>,
}

impl StatementContext {
    pub fn from_config(config: &SessionConfig) -> PgResult<Arc<StatementContext>> {
        config.get_extension::<StatementContext>().ok_or_else(|| {
            PgError::internal("statement context missing from the session configuration")
        })
    }

    pub fn from_task(task: &TaskContext) -> PgResult<Arc<StatementContext>> {
        Self::from_config(task.session_config())
    }

    pub fn is_canceled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// Returns the cancel error if the statement was canceled.
    pub fn check_cancel(&self) -> PgResult<()> {
        if self.is_canceled() {
            Err(PgError::canceled())
        } else {
            Ok(())
        }
    }

    pub fn add_usage(&self, usage: &BufferUsage) {
        self.usage.lock().add(usage);
    }
}
