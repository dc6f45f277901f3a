//! What one statement carries into the operators it runs: its snapshot, its transaction,
//! its cancel flag, the session settings its planning and I/O follow, and the counters its
//! scans add to.
//!
//! The session builds a `StatementContext` per statement and attaches it to the
//! DataFusion session config (`SessionConfig::with_extension`); operators find it with
//! [`StatementContext::from_config`].

use std::sync::Arc;

use datafusion::execution::TaskContext;
use datafusion::prelude::SessionConfig;
use datafusion::scalar::ScalarValue;
use iolab_catalog::{PgError, PgResult};
use iolab_stats::BufferUsage;
use parking_lot::Mutex;

use iolab_settings::ReadStreamAdvice;
use iolab_stats::BackendType;

use crate::accounting::{IoAccount, StatsSink};
use crate::exec::cancel::CancelFlag;
use crate::plan::PlannerSettings;
use crate::stream::ReadStreamConfig;
use crate::txn::{Snapshot, Xid};
use crate::Database;

pub struct StatementContext {
    pub db: Arc<Database>,
    pub snapshot: Snapshot,
    /// The snapshot is the transaction's (REPEATABLE READ, SERIALIZABLE), not the
    /// statement's: a row a transaction it does not see changed cannot be changed or
    /// locked (40001) instead of being looked at again in its newest version.
    pub transaction_snapshot: bool,
    /// The statement's transaction id, 0 for a read-only statement outside a transaction.
    pub xid: Xid,
    /// Command id within the transaction (tuples it inserts carry it).
    pub cid: u32,
    pub track_io_timing: bool,
    /// The session's process id (`pg_backend_pid()`), owner of its I/Os in `pg_aios`.
    pub pid: i32,
    /// The session's read-stream settings at the start of the statement.
    pub io: StreamSettings,
    /// The session's planner settings at the start of the statement (cost constants,
    /// `enable_*`, `work_mem`): what `HeapTable::scan` plans this statement's scans with.
    pub planner: PlannerSettings,
    /// Set by a cancel request, `statement_timeout` or a dropped client.
    pub cancel: CancelFlag,
    /// Buffer usage of everything this statement ran, summed as scans finish.
    pub usage: Mutex<BufferUsage>,
    /// Buffer usage of planning it (index meta pages read for the trees' heights):
    /// EXPLAIN's `Planning:` block.
    pub planning_usage: Mutex<BufferUsage>,
    /// Where the session's sorts put what does not fit in memory: its temporary files,
    /// and `maintenance_work_mem` (bytes) for CREATE INDEX's sort. Without files (the
    /// engine's tests), sorts stay in memory.
    pub temp: Option<TempSpace>,
    /// The values of the statement's `$n` parameters (`params[0]` is `$1`), which a
    /// generic plan's index conditions take when its scans start (`plan::statement_params`).
    pub params: Vec<ScalarValue>,
}

/// A session's temporary files and the memory its maintenance sorts may hold.
#[derive(Clone)]
pub struct TempSpace {
    pub files: Arc<crate::exec::temp_files::TempFiles>,
    pub maintenance_work_mem_bytes: usize,
}

/// The settings a read stream takes from the session.
#[derive(Clone, Copy, Debug)]
pub struct StreamSettings {
    pub effective_io_concurrency: i32,
    pub maintenance_io_concurrency: i32,
    /// In blocks, already limited by `io_max_combine_limit`.
    pub io_combine_limit: i32,
    pub advice: ReadStreamAdvice,
    /// `read_stream_gap_limit`, in blocks.
    pub gap_limit: i32,
    /// `read_stream_drop_behind`, in blocks.
    pub drop_behind: i32,
    /// `nestloop_prefetch`.
    pub nestloop_prefetch: bool,
}

impl Default for StreamSettings {
    /// PostgreSQL 18's defaults.
    fn default() -> StreamSettings {
        StreamSettings {
            effective_io_concurrency: 16,
            maintenance_io_concurrency: 16,
            io_combine_limit: 16,
            advice: ReadStreamAdvice::Pg18,
            gap_limit: 0,
            drop_behind: 0,
            nestloop_prefetch: true,
        }
    }
}

impl StreamSettings {
    /// A session's current values.
    pub fn from_settings(settings: &iolab_settings::SessionSettings) -> StreamSettings {
        StreamSettings {
            effective_io_concurrency: settings.effective_io_concurrency(),
            maintenance_io_concurrency: settings.maintenance_io_concurrency(),
            io_combine_limit: settings.effective_io_combine_limit(),
            advice: settings.read_stream_advice(),
            gap_limit: settings.read_stream_gap_limit(),
            drop_behind: settings.read_stream_drop_behind(),
            nestloop_prefetch: settings.nestloop_prefetch(),
        }
    }

    /// How a read stream is set up: `maintenance` streams (ANALYZE, VACUUM) use
    /// `maintenance_io_concurrency`; `sequential` ones promise sequential access; `pin_limit`
    /// is the pool's per-stream share and `pid` the session's (for `pg_aios`).
    pub fn stream_config(
        &self,
        maintenance: bool,
        sequential: bool,
        pin_limit: usize,
        pid: i32,
    ) -> ReadStreamConfig {
        let concurrency = if maintenance {
            self.maintenance_io_concurrency
        } else {
            self.effective_io_concurrency
        };
        ReadStreamConfig {
            max_ios: concurrency.max(0) as usize,
            io_combine_limit: self.io_combine_limit.max(1) as u32,
            advice: self.advice,
            gap_limit: self.gap_limit.max(0) as u32,
            drop_behind: self.drop_behind.max(0) as u32,
            sequential,
            full: false,
            reads_in_session: false,
            pin_limit,
            pid,
        }
    }
}

impl StatementContext {
    /// A statement of transaction `xid` (0: none) with default settings, outside any
    /// session: what the engine's tests run their statements as.
    #[cfg(test)]
    pub(crate) fn for_tests(db: &Arc<Database>, xid: Xid) -> StatementContext {
        StatementContext {
            db: db.clone(),
            snapshot: db.txns.snapshot(crate::txn::OwnXids::of(xid), 0),
            transaction_snapshot: false,
            xid,
            cid: 0,
            track_io_timing: false,
            pid: 1,
            io: StreamSettings::default(),
            planner: PlannerSettings::default(),
            cancel: CancelFlag::new(),
            usage: Mutex::new(Default::default()),
            planning_usage: Mutex::new(Default::default()),
            temp: None,
            params: Vec::new(),
        }
    }

    /// A new I/O account for one operation of this statement, flushing its `pg_stat_io`
    /// counters to the server's statistics as a client backend.
    pub fn new_account(&self) -> IoAccount {
        IoAccount::new(
            self.track_io_timing,
            Some(StatsSink {
                hub: Arc::clone(&self.db.io_stats),
                backend_type: BackendType::ClientBackend,
                pid: self.pid,
            }),
        )
    }

    /// How a read stream of this statement is set up: `maintenance` streams (ANALYZE,
    /// VACUUM) use `maintenance_io_concurrency`; `sequential` ones promise sequential access.
    pub fn stream_config(&self, maintenance: bool, sequential: bool) -> ReadStreamConfig {
        self.io
            .stream_config(maintenance, sequential, self.db.pool.pin_limit(), self.pid)
    }

    pub fn from_config(config: &SessionConfig) -> PgResult<Arc<StatementContext>> {
        config.get_extension::<StatementContext>().ok_or_else(|| {
            PgError::internal("statement context missing from the session configuration")
        })
    }

    pub fn from_task(task: &TaskContext) -> PgResult<Arc<StatementContext>> {
        Self::from_config(task.session_config())
    }

    pub fn is_canceled(&self) -> bool {
        self.cancel.is_set()
    }

    /// The cancel error (a cancel request's or `statement_timeout`'s) if the statement
    /// was canceled.
    pub fn check_cancel(&self) -> PgResult<()> {
        self.cancel.check()
    }

    /// The session's progress report for long command `command` on relation `relid`
    /// (`pg_stat_progress_*`), ended when dropped.
    pub fn report_progress(
        &self,
        command: iolab_stats::progress::ProgressCommand,
        relid: u32,
    ) -> ProgressReport {
        let activity = self.db.io_stats.activity.get(self.pid);
        if let Some(a) = &activity {
            a.progress.start(command, relid);
        }
        ProgressReport(activity)
    }

    /// Waits until transaction `holder` has ended (see `TransactionManager::wait_for`),
    /// shown as `Lock` / `transactionid` in the session's `pg_stat_activity` row meanwhile.
    pub fn wait_for_transaction(&self, holder: crate::txn::Xid) -> PgResult<()> {
        let activity = self.db.io_stats.activity.get(self.pid);
        let waiting = |event| {
            if let Some(a) = &activity {
                a.set_wait_event(event);
            }
        };
        waiting(iolab_stats::WaitEvent::LockTransactionId);
        let waited = (self.db.txns).wait_for(self.xid, holder, &|| self.check_cancel());
        waiting(iolab_stats::WaitEvent::None);
        waited
    }

    pub fn add_usage(&self, usage: &BufferUsage) {
        self.usage.lock().add(usage);
    }
}

/// A long command's progress in its session's `pg_stat_progress_*` row, from
/// [`StatementContext::report_progress`] until dropped (on error too).
pub struct ProgressReport(Option<Arc<iolab_stats::BackendActivity>>);

impl ProgressReport {
    /// A report that shows nothing: for work done as a step of a command that reports its
    /// own progress (a session shows one command's progress at a time, as in PostgreSQL).
    pub fn silent() -> ProgressReport {
        ProgressReport(None)
    }

    /// Sets parameter `param` (numbered as in `iolab_stats::progress`).
    pub fn set(&self, param: usize, value: impl TryInto<i64>) {
        if let Some(a) = &self.0 {
            a.progress.set(param, value.try_into().unwrap_or(i64::MAX));
        }
    }
}

impl Drop for ProgressReport {
    fn drop(&mut self) {
        if let Some(a) = &self.0 {
            a.progress.end();
        }
    }
}
