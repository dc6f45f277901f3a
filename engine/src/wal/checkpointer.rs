//! Checkpoints, and the background thread that takes them and flushes the WAL.
//!
//! A checkpoint bounds both the work of redo after a crash and the WAL kept on disk:
//!
//! 1. the redo point is the WAL's insert position now; from here on, a page's first change
//!    logs the whole page (`full_page_writes`);
//! 2. every dirty buffer is written (the buffer pool flushes the WAL up to each page's LSN
//!    first), then every relation file and the commit log are fsynced: every change logged
//!    before the redo point is now in the data files;
//! 3. a checkpoint record naming the redo point is logged and flushed, and
//!    `global/pg_control` is rewritten to point at it;
//! 4. the WAL segments wholly before the redo point are deleted.
//!
//! One runs at a time. Besides CHECKPOINT, end of recovery and shutdown, the background
//! thread starts one when `checkpoint_timeout` has passed since the last (and WAL was
//! written since), or when the WAL written since the last redo point reaches
//! `max_wal_size / (1 + checkpoint_completion_target)`, as PostgreSQL's checkpointer
//! does; the WAL on disk therefore stays near `max_wal_size`. The same thread is the WAL
//! writer: every `wal_writer_delay` it flushes what asynchronous commits
//! (`synchronous_commit = off`) left in the buffer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iolab_catalog::{PgError, PgResult};
use iolab_stats::{AuxiliaryActivity, BackendType, WaitEvent};
use parking_lot::{Mutex, RwLock};

use super::control::{ClusterState, ControlData, ControlFile};
use super::record::{format_lsn, Body, CheckpointInfo, Lsn};
use crate::accounting::{IoAccount, StatsSink};
use crate::buffer::writeback::WritebackQueue;
use crate::Database;

/// `checkpoint_timeout`, `max_wal_size`, `checkpoint_completion_target`,
/// `wal_writer_delay`, `log_checkpoints`, and the server's `track_io_timing`.
#[derive(Clone, Copy, Debug)]
pub struct CheckpointOptions {
    pub timeout: Duration,
    pub max_wal_size: u64,
    pub completion_target: f64,
    pub wal_writer_delay: Duration,
    pub log_checkpoints: bool,
    pub track_io_timing: bool,
    /// `checkpoint_flush_after`, in blocks (0: no writeback requests).
    pub flush_after: usize,
}

impl Default for CheckpointOptions {
    fn default() -> CheckpointOptions {
        CheckpointOptions {
            timeout: Duration::from_secs(300),
            max_wal_size: 1024 * 1024 * 1024,
            completion_target: 0.9,
            wal_writer_delay: Duration::from_millis(200),
            log_checkpoints: true,
            track_io_timing: false,
            flush_after: 32,
        }
    }
}

pub struct Checkpointer {
    /// Read afresh at each use: a configuration reload may change them.
    options: RwLock<CheckpointOptions>,
    /// When the last checkpoint ended, and the end of its record; held while one runs.
    last: Mutex<(Instant, Lsn)>,
    /// Set by the shutdown checkpoint: no checkpoint may follow it.
    stopped: AtomicBool,
}

impl Checkpointer {
    /// Its options now.
    pub fn options(&self) -> CheckpointOptions {
        *self.options.read()
    }

    /// New options (a configuration reload): the next wait, due test and checkpoint use
    /// them.
    pub fn set_options(&self, options: CheckpointOptions) {
        *self.options.write() = options;
    }

    pub fn new(options: CheckpointOptions) -> Checkpointer {
        Checkpointer {
            options: RwLock::new(options),
            last: Mutex::new((Instant::now(), 0)),
            stopped: AtomicBool::new(false),
        }
    }

    /// A checkpoint, timed per the server's `track_io_timing`.
    pub fn checkpoint(&self, db: &Database, reason: &str, shutdown: bool) -> PgResult<usize> {
        self.checkpoint_timed(db, reason, shutdown, self.options().track_io_timing)
    }

    /// Takes a checkpoint (see the module comment); `reason` is what the log line says
    /// started it. Returns the number of buffers written.
    pub fn checkpoint_timed(
        &self,
        db: &Database,
        reason: &str,
        shutdown: bool,
        track_io_timing: bool,
    ) -> PgResult<usize> {
        let mut last = self.last.lock();
        if self.stopped.load(Ordering::Acquire) {
            return Ok(0);
        }
        let options = self.options();
        let started = Instant::now();
        if options.log_checkpoints {
            tracing::info!("checkpoint starting: {reason}");
        }
        let counters = &db.io_stats.checkpointer;
        let kind = match reason {
            "time" => &counters.num_timed,
            _ => &counters.num_requested,
        };
        kind.fetch_add(1, Ordering::Relaxed);
        let wal = &db.wal;
        let previous_redo = wal.redo_lsn();
        let redo = wal.insert_lsn();
        wal.set_redo_lsn(redo);
        let mut acct = IoAccount::new(
            track_io_timing,
            Some(StatsSink {
                hub: Arc::clone(&db.io_stats),
                backend_type: BackendType::Checkpointer,
                pid: 0,
            }),
        );
        acct.writeback = Some(WritebackQueue::new(options.flush_after));
        let written = db.pool.flush_all_counted(&mut acct)?;
        acct.issue_writebacks();
        let wrote_at = Instant::now();
        let files = db.open_relation_files();
        if wal.fsync_enabled() {
            for f in &files {
                let synced = acct.fsync(|| f.sync());
                synced.map_err(|e| {
                    PgError::io(
                        &format!("could not fsync file \"{}\"", f.path().display()),
                        &e,
                    )
                })?;
            }
            db.txns
                .sync()
                .map_err(|e| PgError::io("could not fsync commit log", &e))?;
        }
        let synced_at = Instant::now();
        let time_us = crate::wal::now_us();
        let body = Body::Checkpoint(CheckpointInfo {
            redo,
            next_xid: db.txns.next_xid(),
            shutdown,
            time_us,
        });
        let by = Some((BackendType::Checkpointer, 0));
        let (lsn, end) = wal.insert(0, &body, &mut acct, by);
        let io = |what: &str, e: std::io::Error| PgError::io(what, &e);
        wal.flush(end, by)
            .map_err(|e| io("could not flush the WAL", e))?;
        ControlFile::new(db.data_dir())
            .write(&ControlData {
                state: if shutdown {
                    ClusterState::ShutDown
                } else {
                    ClusterState::InProduction
                },
                checkpoint: lsn,
                redo,
                checkpoint_time_us: time_us,
            })
            .map_err(|e| io("could not write control file", e))?;
        let retired = wal
            .retire_segments_before(redo)
            .map_err(|e| io("could not remove old WAL segments", e))?;
        let added = wal.take_segments_added();
        acct.flush();
        let micros = |from: Instant, to: Instant| (to - from).as_micros() as u64;
        (counters.num_done).fetch_add(1, Ordering::Relaxed);
        (counters.write_time_us).fetch_add(micros(started, wrote_at), Ordering::Relaxed);
        (counters.sync_time_us).fetch_add(micros(wrote_at, synced_at), Ordering::Relaxed);
        (counters.buffers_written).fetch_add(written as u64, Ordering::Relaxed);
        if shutdown {
            self.stopped.store(true, Ordering::Release);
        }
        if options.log_checkpoints {
            let secs = |from: Instant, to: Instant| (to - from).as_secs_f64();
            tracing::info!(
                "checkpoint complete: wrote {written} buffers ({:.1}%); {added} WAL file(s) added, {} removed, {} recycled; \
                 write={:.3} s, sync={:.3} s, total={:.3} s; sync files={}; distance={} kB; lsn={}, redo lsn={}",
                100.0 * written as f64 / db.pool.nbuffers() as f64,
                retired.removed,
                retired.recycled,
                secs(started, wrote_at),
                secs(wrote_at, synced_at),
                secs(started, Instant::now()),
                files.len(),
                if previous_redo == 0 { 0 } else { (redo - previous_redo) / 1024 },
                format_lsn(lsn),
                format_lsn(redo),
            );
        }
        *last = (Instant::now(), end);
        Ok(written)
    }

    /// Why a checkpoint is due now, if one is (none while one runs).
    fn due(&self, db: &Database) -> Option<&'static str> {
        let last = self.last.try_lock()?;
        let since_redo = db.wal.insert_lsn().saturating_sub(db.wal.redo_lsn());
        let options = self.options();
        let wal_limit = options.max_wal_size as f64 / (1.0 + options.completion_target);
        if since_redo as f64 >= wal_limit {
            Some("wal")
        } else if last.0.elapsed() >= options.timeout && db.wal.insert_lsn() > last.1 {
            Some("time")
        } else {
            None
        }
    }

    /// Starts the background thread (WAL writer and checkpoints when due); it ends when
    /// the database is dropped or shut down.
    /// Whether it has stopped (the server is shutting down).
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    pub fn start_background(db: &Arc<Database>) {
        let weak = Arc::downgrade(db);
        let hub = Arc::clone(&db.io_stats);
        let spawned = std::thread::Builder::new()
            .name("iolab-checkpointer".into())
            .spawn(move || {
                let activity = AuxiliaryActivity::register(hub, BackendType::Checkpointer, 0);
                loop {
                    let delay = weak
                        .upgrade()
                        .map(|db| db.checkpointer.options().wal_writer_delay);
                    let Some(delay) = delay else { return };
                    activity.set_wait_event(WaitEvent::CheckpointerMain);
                    std::thread::sleep(delay);
                    activity.set_wait_event(WaitEvent::None);
                    let Some(db) = weak.upgrade() else { return };
                    if db.checkpointer.stopped.load(Ordering::Acquire) {
                        return;
                    }
                    let inserted = db.wal.insert_lsn();
                    if db.wal.flush_lsn() < inserted {
                        if let Err(e) = db.wal.flush(inserted, Some((BackendType::Walwriter, 0))) {
                            tracing::error!("could not flush the WAL: {e}");
                        }
                    }
                    if let Some(reason) = db.checkpointer.due(&db) {
                        if let Err(e) = db.checkpointer.checkpoint(&db, reason, false) {
                            tracing::error!("checkpoint failed: {}", e.message);
                        }
                    }
                }
            });
        if let Err(e) = spawned {
            tracing::error!("could not start the checkpointer thread: {e}");
        }
    }
}
