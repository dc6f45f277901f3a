//! The statistics sampler: every `stats_history_interval` it copies the cumulative
//! `pg_stat_io` / `pg_stat_aio` counters and the I/Os in flight into the history ring
//! (`iolab_stats::history`), which the history views read.
//!
//! It is one task on the server's runtime. A tick costs two snapshot copies under the
//! statistics lock (≈ 50 KiB of counters plus the histograms in use) and the deltas; it
//! does no file I/O. A late tick is not made up for: the next sample covers the longer
//! interval, and its rates divide by the time that really passed.
//!
//! While a sampler runs, running statements flush their pending counters ten times per
//! interval (`IoStatsHub::set_sampling_interval`; once a second otherwise). With
//! PostgreSQL's one flush a second, a 100 ms sampler saw a scan's I/O in one sample of
//! ten and nothing in the others, and a 1 s sampler, its ticks drifting against the
//! flushes, could see none in one interval and two in the next.

use std::sync::Arc;
use std::time::Duration;

use iolab_engine::Database;
use iolab_stats::StatsHistory;

/// Starts the sampler; with `interval_ms` = 0 there is none and the history views stay
/// empty.
pub fn start(db: Arc<Database>, interval_ms: i32, retention_s: i32) {
    if interval_ms <= 0 {
        tracing::info!("statistics history off (stats_history_interval = 0)");
        return;
    }
    let interval = Duration::from_millis(interval_ms as u64);
    let retention = Duration::from_secs(retention_s.max(1) as u64);
    let history = StatsHistory::new(interval, retention);
    tracing::info!(
        "statistics history: a sample every {interval:?}, kept {retention:?} (at most {} MiB)",
        history.bound_bytes() >> 20
    );
    *db.io_stats.history.lock() = Some(history);
    db.io_stats.set_sampling_interval(interval);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            sample(&db);
        }
    });
}

/// Takes one sample now.
pub fn sample(db: &Database) {
    let in_flight = crate::pgcatalog::stat_aio::in_flight(db);
    let (io, aio) = db.io_stats.snapshots();
    let now = chrono::Utc::now();
    if let Some(history) = db.io_stats.history.lock().as_mut() {
        history.record(now, io, aio, &in_flight);
    }
}
