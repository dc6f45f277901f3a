//! The background writer (PostgreSQL's bgwriter): it writes dirty buffers the clock sweep
//! is about to reach, so that a backend that needs a buffer finds a clean one instead of
//! writing it first — in `pg_stat_io`, writes move from `client backend` to `background
//! writer`.
//!
//! Every `bgwriter_delay` it estimates how many buffers backends will take before its
//! next round from the allocations since its last one (`buffers_alloc`), smoothed as
//! PostgreSQL's BgBufferSync smooths them (a rise is believed at once, a fall over 16
//! rounds) and multiplied by `bgwriter_lru_multiplier`. Then it walks the buffers ahead
//! of the clock hand — from where its last round stopped, or from the hand if the hand
//! has passed that point — until it has seen that many reusable ones (unpinned, usage
//! count 0), writing those that are dirty, at most `bgwriter_lru_maxpages` per round
//! (stopping there counts in `maxwritten_clean`). It never walks more than one lap ahead
//! of the hand, and, as in PostgreSQL, at least enough buffers that a quiet pool is
//! walked whole every two minutes. `bgwriter_lru_maxpages = 0` turns it off.
//!
//! Its writes are the checkpointer's kind of write (`BufferPool::write_pinned`: WAL
//! first, checksum, content lock held only to copy), counted as `background writer`
//! writes, with a writeback request every `bgwriter_flush_after` blocks (`writeback`); `pg_stat_bgwriter` shows `buffers_clean`, `maxwritten_clean` and
//! `buffers_alloc`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use iolab_stats::{AuxiliaryActivity, BackendType, WaitEvent};

use crate::accounting::{IoAccount, StatsSink};
use crate::buffer::writeback::WritebackQueue;
use crate::db::Database;

/// `bgwriter_delay`, `bgwriter_lru_maxpages`, `bgwriter_lru_multiplier`.
#[derive(Clone, Copy, Debug)]
pub struct BgWriterOptions {
    pub delay: Duration,
    pub lru_maxpages: usize,
    pub lru_multiplier: f64,
    pub track_io_timing: bool,
    /// `bgwriter_flush_after`, in blocks (0: no writeback requests).
    pub flush_after: usize,
}

impl Default for BgWriterOptions {
    fn default() -> BgWriterOptions {
        BgWriterOptions {
            delay: Duration::from_millis(200),
            lru_maxpages: 100,
            lru_multiplier: 2.0,
            track_io_timing: false,
            flush_after: 64,
        }
    }
}

/// The time in which a quiet pool is walked whole.
const WHOLE_POOL: Duration = Duration::from_secs(120);

/// What the writer carries from one round to the next.
#[derive(Debug, Default)]
pub struct BgWriterState {
    /// Where its last round stopped, as a clock-hand position.
    next_to_clean: u64,
    /// `buffers_alloc` at its last round.
    allocs_seen: u64,
    /// Smoothed allocations per round.
    smoothed_alloc: f64,
}

impl BgWriterState {
    /// One round (see the module comment).
    pub fn round(&mut self, db: &Database, options: &BgWriterOptions, acct: &mut IoAccount) {
        let pool = &db.pool;
        let counters = &db.io_stats.bgwriter;
        let allocs = pool.buffers_alloc();
        let recent = allocs.saturating_sub(self.allocs_seen);
        counters.buffers_alloc.fetch_add(recent, Ordering::Relaxed);
        self.allocs_seen = allocs;
        let recent = recent as f64;
        self.smoothed_alloc = if recent > self.smoothed_alloc {
            recent
        } else {
            self.smoothed_alloc + (recent - self.smoothed_alloc) / 16.0
        };
        if options.lru_maxpages == 0 {
            return;
        }
        let want = (self.smoothed_alloc * options.lru_multiplier).ceil() as usize;
        let rounds_per_lap = (WHOLE_POOL.as_secs_f64() / options.delay.as_secs_f64()).max(1.0);
        let min_scan = (pool.nbuffers() as f64 / rounds_per_lap).ceil() as usize;
        match pool.clean_ahead(
            self.next_to_clean,
            want,
            min_scan,
            options.lru_maxpages,
            acct,
        ) {
            Ok(cleaned) => {
                self.next_to_clean = cleaned.next;
                counters
                    .buffers_clean
                    .fetch_add(cleaned.written as u64, Ordering::Relaxed);
                if cleaned.hit_limit {
                    counters.maxwritten_clean.fetch_add(1, Ordering::Relaxed);
                }
            }
            Err(e) => {
                tracing::error!("background writer: {}", e.message);
            }
        }
    }
}

/// Starts the background writer's thread; it ends with the database (or when the
/// checkpointer stops, at shutdown). Each round reads the database's current options
/// (`Database::bgwriter_options`), which a configuration reload may change.
pub fn start_background(db: &Arc<Database>) {
    let weak = Arc::downgrade(db);
    let hub = Arc::clone(&db.io_stats);
    let spawned = std::thread::Builder::new()
        .name("iolab-bgwriter".into())
        .spawn(move || {
            let activity = AuxiliaryActivity::register(hub, BackendType::BackgroundWriter, 0);
            let mut state = BgWriterState::default();
            // One account for the thread's life: its writeback requests span rounds.
            let mut acct: Option<IoAccount> = None;
            loop {
                let Some(delay) = weak.upgrade().map(|db| db.bgwriter_options().delay) else {
                    return;
                };
                activity.set_wait_event(WaitEvent::BgwriterMain);
                std::thread::sleep(delay);
                activity.set_wait_event(WaitEvent::None);
                let Some(db) = weak.upgrade() else { return };
                if db.checkpointer.is_stopped() {
                    return;
                }
                let options = db.bgwriter_options();
                let acct = acct.get_or_insert_with(|| {
                    let mut acct = IoAccount::new(
                        options.track_io_timing,
                        Some(StatsSink {
                            hub: Arc::clone(&db.io_stats),
                            backend_type: BackendType::BackgroundWriter,
                            pid: 0,
                        }),
                    );
                    acct.writeback = Some(WritebackQueue::new(options.flush_after));
                    acct
                });
                // A new bgwriter_flush_after: what was gathered is issued, then gathered
                // afresh up to the new limit.
                if let Some(queue) = acct.writeback.as_mut() {
                    if queue.limit() != options.flush_after {
                        queue.issue();
                        *queue = WritebackQueue::new(options.flush_after);
                    }
                }
                state.round(&db, &options, acct);
                acct.flush();
            }
        });
    if let Err(e) = spawned {
        tracing::error!("could not start the background writer thread: {e}");
    }
}
