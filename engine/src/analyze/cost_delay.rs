//! Cost-based vacuum delay: PostgreSQL's `vacuum_cost_*` settings, which throttle VACUUM
//! and ANALYZE so that they leave the device to other work.
//!
//! The command charges each page it touches to a *balance*: `vacuum_cost_page_hit` for a
//! page found in the buffer pool, `vacuum_cost_page_miss` for one it had to read,
//! `vacuum_cost_page_dirty` for one it dirtied. At every *delay point* (before each heap
//! block VACUUM scans or vacuums and each block ANALYZE samples; VACUUM's index pass has
//! none, see `analyze::vacuum`),
//! once the balance has reached `vacuum_cost_limit`, it sleeps
//! `vacuum_cost_delay × balance / vacuum_cost_limit`, at most `4 × vacuum_cost_delay`, and
//! the balance starts again from 0. `vacuum_cost_delay = 0`, the default for the commands a
//! user runs, turns the throttle off.
//!
//! The charges come from the command's own buffer counts (its `IoAccount`: the hits, reads
//! and dirtied blocks that VERBOSE's `buffer usage:` line shows), read at each delay point:
//! the balance is the counts' growth since the last sleep, weighed by the three costs. A
//! read stream's look-ahead is charged when its reads start, so with a throttle the
//! stream runs ahead by at most its distance, as PostgreSQL's does.
//!
//! While it sleeps, the session shows `wait_event_type = Timeout`,
//! `wait_event = VacuumDelay`. With `track_cost_delay_timing` the time slept is added to
//! the progress view's `delay_time` and printed as VERBOSE's `delay time:` line.

use std::time::{Duration, Instant};

use iolab_stats::{BufferUsage, WaitEvent};

use crate::accounting::IoAccount;
use crate::exec::context::ProgressReport;

/// The settings of one command's throttle, taken when it starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostDelaySettings {
    /// `vacuum_cost_delay`, milliseconds (0: no throttle).
    pub delay_ms: f64,
    /// `vacuum_cost_limit` (≥ 1).
    pub limit: u32,
    pub page_hit: u32,
    pub page_miss: u32,
    pub page_dirty: u32,
    /// `track_cost_delay_timing`.
    pub track_timing: bool,
}

impl Default for CostDelaySettings {
    /// PostgreSQL's defaults: no throttle, no timing.
    fn default() -> CostDelaySettings {
        CostDelaySettings {
            delay_ms: 0.0,
            limit: 200,
            page_hit: 1,
            page_miss: 2,
            page_dirty: 20,
            track_timing: false,
        }
    }
}

/// One command's throttle (see the module comment).
pub struct CostDelay {
    settings: CostDelaySettings,
    /// The account's (hits, reads, dirtied) when the balance last started from 0.
    charged_up_to: (u64, u64, u64),
    /// The progress parameter the time slept is added to, in nanoseconds.
    delay_time_param: usize,
    /// Time slept so far (measured only with `track_timing`).
    slept: Duration,
}

fn counts(u: &BufferUsage) -> (u64, u64, u64) {
    (
        u.shared_hit + u.local_hit,
        u.shared_read + u.local_read,
        u.shared_dirtied + u.local_dirtied,
    )
}

impl CostDelay {
    /// A throttle for a command whose buffer counts start at `acct`'s, reporting the time
    /// it sleeps into progress parameter `delay_time_param`.
    pub fn new(settings: CostDelaySettings, acct: &IoAccount, delay_time_param: usize) -> Self {
        assert!(settings.limit >= 1, "vacuum_cost_limit is at least 1");
        CostDelay {
            settings,
            charged_up_to: counts(acct),
            delay_time_param,
            slept: Duration::ZERO,
        }
    }

    /// The balance: what the pages counted in `acct` since the last sleep cost.
    fn balance(&self, acct: &IoAccount) -> u64 {
        let (hits, reads, dirtied) = counts(acct);
        let (h0, r0, d0) = self.charged_up_to;
        let s = &self.settings;
        (hits - h0) * s.page_hit as u64
            + (reads - r0) * s.page_miss as u64
            + (dirtied - d0) * s.page_dirty as u64
    }

    /// How long to sleep for `balance`: none below the limit, else in proportion to it,
    /// at most four delays.
    fn nap(&self, balance: u64) -> Option<Duration> {
        let s = &self.settings;
        if s.delay_ms <= 0.0 || balance < s.limit as u64 {
            return None;
        }
        let ms = (s.delay_ms * balance as f64 / s.limit as f64).min(s.delay_ms * 4.0);
        Some(Duration::from_secs_f64(ms / 1000.0))
    }

    /// A delay point: sleep if the balance has reached the limit.
    pub fn point(&mut self, acct: &IoAccount, progress: &ProgressReport) {
        let Some(nap) = self.nap(self.balance(acct)) else {
            return;
        };
        let started = self.settings.track_timing.then(Instant::now);
        acct.set_wait_event(WaitEvent::VacuumDelay);
        std::thread::sleep(nap);
        acct.set_wait_event(WaitEvent::None);
        if let Some(started) = started {
            self.slept += started.elapsed();
            progress.set(self.delay_time_param, self.slept.as_nanos());
        }
        self.charged_up_to = counts(acct);
    }

    /// Time slept, when `track_cost_delay_timing` was on (VERBOSE's `delay time:` line).
    pub fn delay_time(&self) -> Option<Duration> {
        self.settings.track_timing.then_some(self.slept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn throttle(delay_ms: f64, limit: u32) -> CostDelay {
        let settings = CostDelaySettings {
            delay_ms,
            limit,
            ..CostDelaySettings::default()
        };
        CostDelay::new(settings, &IoAccount::default(), 0)
    }

    #[test]
    fn the_balance_weighs_hits_reads_and_dirtied_pages() {
        let t = throttle(2.0, 200);
        let mut acct = IoAccount::default();
        acct.shared_hit = 10;
        acct.shared_read = 5;
        acct.local_read = 1;
        acct.shared_dirtied = 3;
        assert_eq!(t.balance(&acct), 10 + 6 * 2 + 3 * 20);
    }

    #[test]
    fn naps_grow_with_the_balance_up_to_four_delays() {
        let t = throttle(2.0, 200);
        assert_eq!(t.nap(199), None);
        assert_eq!(t.nap(200), Some(Duration::from_millis(2)));
        assert_eq!(t.nap(300), Some(Duration::from_millis(3)));
        assert_eq!(t.nap(100_000), Some(Duration::from_millis(8)));
        assert_eq!(throttle(0.0, 1).nap(1_000_000), None);
    }

    #[test]
    fn a_sleep_starts_the_balance_again() {
        let mut t = throttle(0.01, 10);
        let mut acct = IoAccount::default();
        acct.shared_read = 4; // 8: below the limit, no sleep, nothing forgotten
        t.point(&acct, &ProgressReport::silent());
        assert_eq!(t.balance(&acct), 8);
        acct.shared_read = 6; // 12: sleeps, and starts from 0
        t.point(&acct, &ProgressReport::silent());
        assert_eq!(t.balance(&acct), 0);
        acct.shared_hit = 3;
        assert_eq!(t.balance(&acct), 3);
        assert_eq!(t.delay_time(), None, "not tracked");
    }
}
