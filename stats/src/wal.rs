//! The WAL's server-wide counters: `pg_stat_wal` (records, full page images, bytes, full
//! buffers) and
//! `pg_stat_recovery_prefetch` (what redo's read-ahead did with each block reference).
//! Plain atomics: they are bumped by whoever inserts, writes or replays, without a lock.

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use crate::persist::{restore_atomics, save_atomics, Corrupt, Decoder, Encoder};

/// When a set of counters was last reset (their creation at first), and the reset itself:
/// the counters are zeroed under the same lock that moves the time.
#[derive(Debug)]
struct ResetTime(Mutex<DateTime<Utc>>);

impl Default for ResetTime {
    fn default() -> ResetTime {
        ResetTime(Mutex::new(Utc::now()))
    }
}

impl ResetTime {
    fn get(&self) -> DateTime<Utc> {
        *self.0.lock()
    }

    fn reset(&self, counters: &[&AtomicU64]) {
        let mut at = self.0.lock();
        for c in counters {
            c.store(0, Ordering::Relaxed);
        }
        *at = Utc::now();
    }

    /// `counters` and this time, for the statistics file (`persist`).
    fn save(&self, e: &mut Encoder, counters: &[&AtomicU64]) {
        save_atomics(e, counters);
        e.time(self.get());
    }

    fn restore(&self, d: &mut Decoder<'_>, counters: &[&AtomicU64]) -> Result<(), Corrupt> {
        restore_atomics(d, counters)?;
        *self.0.lock() = d.time()?;
        Ok(())
    }
}

/// `pg_stat_checkpointer`: checkpoints started by `checkpoint_timeout` and by request
/// (CHECKPOINT, WAL volume, start-up, end of recovery, shutdown), those done, the time
/// they spent writing buffers and syncing files (kept in microseconds, shown in
/// milliseconds) and the buffers they wrote. iolab is never a standby: no restartpoints.
#[derive(Debug, Default)]
pub struct CheckpointerCounters {
    pub num_timed: AtomicU64,
    pub num_requested: AtomicU64,
    pub num_done: AtomicU64,
    pub write_time_us: AtomicU64,
    pub sync_time_us: AtomicU64,
    pub buffers_written: AtomicU64,
    stats_reset: ResetTime,
}

/// One reading of [`CheckpointerCounters`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CheckpointerSnapshot {
    pub num_timed: u64,
    pub num_requested: u64,
    pub num_done: u64,
    pub write_time_ms: f64,
    pub sync_time_ms: f64,
    pub buffers_written: u64,
    pub stats_reset: DateTime<Utc>,
}

impl CheckpointerCounters {
    fn all(&self) -> [&AtomicU64; 6] {
        [
            &self.num_timed,
            &self.num_requested,
            &self.num_done,
            &self.write_time_us,
            &self.sync_time_us,
            &self.buffers_written,
        ]
    }

    pub fn snapshot(&self) -> CheckpointerSnapshot {
        let [timed, requested, done, write_us, sync_us, written] =
            self.all().map(|c| c.load(Ordering::Relaxed));
        CheckpointerSnapshot {
            num_timed: timed,
            num_requested: requested,
            num_done: done,
            write_time_ms: write_us as f64 / 1000.0,
            sync_time_ms: sync_us as f64 / 1000.0,
            buffers_written: written,
            stats_reset: self.stats_reset.get(),
        }
    }

    /// `pg_stat_reset_shared('checkpointer')`.
    pub fn reset(&self) {
        self.stats_reset.reset(&self.all());
    }

    pub(crate) fn save(&self, e: &mut Encoder) {
        self.stats_reset.save(e, &self.all());
    }

    pub(crate) fn restore(&self, d: &mut Decoder<'_>) -> Result<(), Corrupt> {
        self.stats_reset.restore(d, &self.all())
    }
}

/// `pg_stat_wal` (the WAL's writes and syncs are `pg_stat_io`'s, by backend type).
#[derive(Debug, Default)]
pub struct WalCounters {
    pub records: AtomicU64,
    pub fpi: AtomicU64,
    pub bytes: AtomicU64,
    pub buffers_full: AtomicU64,
    stats_reset: ResetTime,
}

/// One reading of [`WalCounters`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WalSnapshot {
    pub records: u64,
    pub fpi: u64,
    pub bytes: u64,
    pub buffers_full: u64,
    pub stats_reset: DateTime<Utc>,
}

impl WalCounters {
    fn all(&self) -> [&AtomicU64; 4] {
        [&self.records, &self.fpi, &self.bytes, &self.buffers_full]
    }

    pub fn snapshot(&self) -> WalSnapshot {
        let [records, fpi, bytes, buffers_full] = self.all().map(|c| c.load(Ordering::Relaxed));
        WalSnapshot {
            records,
            fpi,
            bytes,
            buffers_full,
            stats_reset: self.stats_reset.get(),
        }
    }

    /// `pg_stat_reset_shared('wal')`.
    pub fn reset(&self) {
        self.stats_reset.reset(&self.all());
    }

    pub(crate) fn save(&self, e: &mut Encoder) {
        self.stats_reset.save(e, &self.all());
    }

    pub(crate) fn restore(&self, d: &mut Decoder<'_>) -> Result<(), Corrupt> {
        self.stats_reset.restore(d, &self.all())
    }
}

/// `pg_stat_recovery_prefetch`: counters of what redo's read-ahead decided for each block
/// a record changes, and three gauges of how far ahead it is.
#[derive(Debug, Default)]
pub struct RecoveryPrefetchCounters {
    /// Blocks advised (read ahead) because they were not in the buffer pool.
    pub prefetch: AtomicU64,
    /// Blocks already in the buffer pool.
    pub hit: AtomicU64,
    /// Blocks the record makes afresh (a new page): nothing to read.
    pub skip_init: AtomicU64,
    /// Blocks of relations or beyond ends that do not exist (yet).
    pub skip_new: AtomicU64,
    /// Blocks the record carries a full page image of.
    pub skip_fpw: AtomicU64,
    /// Blocks among the last few advised.
    pub skip_rep: AtomicU64,
    /// Bytes of WAL decoded ahead of replay (gauge).
    pub wal_distance: AtomicU64,
    /// Block references ahead of replay (gauge).
    pub block_distance: AtomicU64,
    /// Reads advised and not yet known complete (gauge).
    pub io_depth: AtomicU64,
    stats_reset: ResetTime,
}

/// One reading of [`RecoveryPrefetchCounters`], in the view's column order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RecoveryPrefetchSnapshot {
    pub stats_reset: DateTime<Utc>,
    pub prefetch: u64,
    pub hit: u64,
    pub skip_init: u64,
    pub skip_new: u64,
    pub skip_fpw: u64,
    pub skip_rep: u64,
    pub wal_distance: u64,
    pub block_distance: u64,
    pub io_depth: u64,
}

impl RecoveryPrefetchCounters {
    fn all(&self) -> [&AtomicU64; 9] {
        [
            &self.prefetch,
            &self.hit,
            &self.skip_init,
            &self.skip_new,
            &self.skip_fpw,
            &self.skip_rep,
            &self.wal_distance,
            &self.block_distance,
            &self.io_depth,
        ]
    }

    pub fn snapshot(&self) -> RecoveryPrefetchSnapshot {
        let [prefetch, hit, skip_init, skip_new, skip_fpw, skip_rep, wal_distance, block_distance, io_depth] =
            self.all().map(|c| c.load(Ordering::Relaxed));
        RecoveryPrefetchSnapshot {
            stats_reset: self.stats_reset.get(),
            prefetch,
            hit,
            skip_init,
            skip_new,
            skip_fpw,
            skip_rep,
            wal_distance,
            block_distance,
            io_depth,
        }
    }

    /// `pg_stat_reset_shared('recovery_prefetch')`.
    pub fn reset(&self) {
        self.stats_reset.reset(&self.all());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_zeroes_and_moves_the_reset_time() {
        let c = WalCounters::default();
        c.records.fetch_add(3, Ordering::Relaxed);
        c.buffers_full.fetch_add(9, Ordering::Relaxed);
        let before = c.snapshot();
        assert_eq!((before.records, before.buffers_full), (3, 9));
        c.reset();
        let after = c.snapshot();
        assert_eq!((after.records, after.buffers_full), (0, 0));
        assert!(after.stats_reset >= before.stats_reset);
        let p = RecoveryPrefetchCounters::default();
        p.skip_fpw.fetch_add(2, Ordering::Relaxed);
        assert_eq!(p.snapshot().skip_fpw, 2);
        p.reset();
        assert_eq!(p.snapshot().skip_fpw, 0);
    }
}

/// `pg_stat_bgwriter`: the buffers the background writer wrote, the rounds it stopped at
/// `bgwriter_lru_maxpages`, and the buffers the clock sweep handed out for new blocks
/// (added by the background writer each round, as PostgreSQL's does).
#[derive(Debug, Default)]
pub struct BgwriterCounters {
    pub buffers_clean: AtomicU64,
    pub maxwritten_clean: AtomicU64,
    pub buffers_alloc: AtomicU64,
    stats_reset: ResetTime,
}

/// One reading of [`BgwriterCounters`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BgwriterSnapshot {
    pub buffers_clean: u64,
    pub maxwritten_clean: u64,
    pub buffers_alloc: u64,
    pub stats_reset: DateTime<Utc>,
}

impl BgwriterCounters {
    fn all(&self) -> [&AtomicU64; 3] {
        [
            &self.buffers_clean,
            &self.maxwritten_clean,
            &self.buffers_alloc,
        ]
    }

    pub fn snapshot(&self) -> BgwriterSnapshot {
        let [clean, maxwritten, alloc] = self.all().map(|c| c.load(Ordering::Relaxed));
        BgwriterSnapshot {
            buffers_clean: clean,
            maxwritten_clean: maxwritten,
            buffers_alloc: alloc,
            stats_reset: self.stats_reset.get(),
        }
    }

    /// `pg_stat_reset_shared('bgwriter')`.
    pub fn reset(&self) {
        self.stats_reset.reset(&self.all());
    }

    pub(crate) fn save(&self, e: &mut Encoder) {
        self.stats_reset.save(e, &self.all());
    }

    pub(crate) fn restore(&self, d: &mut Decoder<'_>) -> Result<(), Corrupt> {
        self.stats_reset.restore(d, &self.all())
    }
}
