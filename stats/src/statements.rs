//! `pg_stat_statements`: what each distinct statement cost, summed over its runs, as
//! PostgreSQL's extension keeps it. A statement is known by its text with its constants
//! replaced by `$n` (so `WHERE a = 1` and `WHERE a = 2` are one entry) and its user; its
//! `queryid` is a hash of that text. Each run adds its execution time (from its start to
//! its last row sent), its rows and its buffer usage (`BufferUsage`, as EXPLAIN's
//! BUFFERS counts it), with minimum, maximum, mean and standard deviation of the time
//! kept as PostgreSQL's extension keeps them (Welford's running variance).
//!
//! Bound: at most [`MAX_STATEMENTS`] entries (PostgreSQL's `pg_stat_statements.max`
//! default); when a new statement finds the store full, the 5 % of entries with the
//! fewest calls go first (`dealloc` in `pg_stat_statements_info` counts those clean-ups).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use parking_lot::Mutex;

use crate::persist::{Corrupt, Decoder, Encoder};
use crate::usage::BufferUsage;

/// Entries kept at most.
pub const MAX_STATEMENTS: usize = 5000;

/// One statement's totals.
#[derive(Clone, Debug)]
pub struct StatementEntry {
    pub userid: u32,
    pub queryid: i64,
    pub query: String,
    pub calls: u64,
    pub total_exec_ms: f64,
    pub min_exec_ms: f64,
    pub max_exec_ms: f64,
    pub mean_exec_ms: f64,
    /// Sum of squared differences from the mean (Welford), for the standard deviation.
    sum_sq_diff: f64,
    pub rows: u64,
    pub usage: BufferUsage,
    pub stats_since: DateTime<Utc>,
    pub minmax_stats_since: DateTime<Utc>,
}

impl StatementEntry {
    /// The population standard deviation of the execution times, as PostgreSQL shows it.
    pub fn stddev_exec_ms(&self) -> f64 {
        if self.calls > 1 {
            (self.sum_sq_diff / self.calls as f64).sqrt()
        } else {
            0.0
        }
    }

    fn add(&mut self, exec_ms: f64, rows: u64, usage: &BufferUsage) {
        self.calls += 1;
        self.total_exec_ms += exec_ms;
        if self.calls == 1 {
            (self.min_exec_ms, self.max_exec_ms) = (exec_ms, exec_ms);
        } else {
            self.min_exec_ms = self.min_exec_ms.min(exec_ms);
            self.max_exec_ms = self.max_exec_ms.max(exec_ms);
        }
        let old_mean = self.mean_exec_ms;
        self.mean_exec_ms += (exec_ms - old_mean) / self.calls as f64;
        self.sum_sq_diff += (exec_ms - old_mean) * (exec_ms - self.mean_exec_ms);
        self.rows += rows;
        self.usage.add(usage);
    }
}

/// One finished run of a statement.
pub struct StatementRun<'a> {
    pub userid: u32,
    /// The normalized text ([`normalize`]).
    pub query: &'a str,
    pub exec_ms: f64,
    pub rows: u64,
    pub usage: &'a BufferUsage,
}

/// The server's statement statistics.
#[derive(Debug)]
pub struct StatementStats {
    entries: Mutex<HashMap<(u32, i64), StatementEntry>>,
    /// Clean-ups of the least-called entries (`pg_stat_statements_info.dealloc`).
    dealloc: Mutex<(u64, DateTime<Utc>)>,
}

impl Default for StatementStats {
    fn default() -> StatementStats {
        StatementStats {
            entries: Mutex::new(HashMap::new()),
            dealloc: Mutex::new((0, Utc::now())),
        }
    }
}

impl StatementEntry {
    fn save(&self, e: &mut Encoder) {
        let StatementEntry {
            userid,
            queryid,
            query,
            calls,
            total_exec_ms,
            min_exec_ms,
            max_exec_ms,
            mean_exec_ms,
            sum_sq_diff,
            rows,
            usage,
            stats_since,
            minmax_stats_since,
        } = self;
        e.u32(*userid);
        e.i64(*queryid);
        e.str(query);
        e.u64(*calls);
        for ms in [
            total_exec_ms,
            min_exec_ms,
            max_exec_ms,
            mean_exec_ms,
            sum_sq_diff,
        ] {
            e.f64(*ms);
        }
        e.u64(*rows);
        usage.save(e);
        e.time(*stats_since);
        e.time(*minmax_stats_since);
    }

    fn restore(d: &mut Decoder<'_>) -> Result<StatementEntry, Corrupt> {
        Ok(StatementEntry {
            userid: d.u32()?,
            queryid: d.i64()?,
            query: d.str()?,
            calls: d.u64()?,
            total_exec_ms: d.f64()?,
            min_exec_ms: d.f64()?,
            max_exec_ms: d.f64()?,
            mean_exec_ms: d.f64()?,
            sum_sq_diff: d.f64()?,
            rows: d.u64()?,
            usage: BufferUsage::restore(d)?,
            stats_since: d.time()?,
            minmax_stats_since: d.time()?,
        })
    }
}

impl StatementStats {
    /// Every entry, and the clean-ups' count and reset time, for the statistics file
    /// (`persist`).
    pub(crate) fn save(&self, e: &mut Encoder) {
        let entries = self.entries.lock();
        e.len(entries.len());
        for entry in entries.values() {
            entry.save(e);
        }
        let (dealloc, reset) = *self.dealloc.lock();
        e.u64(dealloc);
        e.time(reset);
    }

    pub(crate) fn restore(&mut self, d: &mut Decoder<'_>) -> Result<(), Corrupt> {
        let entries = self.entries.get_mut();
        for _ in 0..d.len()? {
            let entry = StatementEntry::restore(d)?;
            if entries.len() < MAX_STATEMENTS {
                entries.insert((entry.userid, entry.queryid), entry);
            }
        }
        *self.dealloc.get_mut() = (d.u64()?, d.time()?);
        Ok(())
    }

    pub fn record(&self, run: &StatementRun<'_>) {
        let queryid = query_id(run.query);
        let mut entries = self.entries.lock();
        let key = (run.userid, queryid);
        if !entries.contains_key(&key) && entries.len() >= MAX_STATEMENTS {
            self.deallocate(&mut entries);
        }
        let now = Utc::now();
        let entry = entries.entry(key).or_insert_with(|| StatementEntry {
            userid: run.userid,
            queryid,
            query: run.query.to_string(),
            calls: 0,
            total_exec_ms: 0.0,
            min_exec_ms: 0.0,
            max_exec_ms: 0.0,
            mean_exec_ms: 0.0,
            sum_sq_diff: 0.0,
            rows: 0,
            usage: BufferUsage::default(),
            stats_since: now,
            minmax_stats_since: now,
        });
        entry.add(run.exec_ms, run.rows, run.usage);
        assert!(entries.len() <= MAX_STATEMENTS);
    }

    /// Drops the 5 % of entries with the fewest calls.
    fn deallocate(&self, entries: &mut HashMap<(u32, i64), StatementEntry>) {
        let mut calls: Vec<((u32, i64), u64)> =
            entries.iter().map(|(k, e)| (*k, e.calls)).collect();
        calls.sort_unstable_by_key(|&(_, c)| c);
        let drop = (entries.len() / 20).max(1);
        for (key, _) in calls.into_iter().take(drop) {
            entries.remove(&key);
        }
        self.dealloc.lock().0 += 1;
    }

    /// Every entry, in no particular order.
    pub fn entries(&self) -> Vec<StatementEntry> {
        self.entries.lock().values().cloned().collect()
    }

    /// `pg_stat_statements_reset(userid, dbid, queryid, minmax_only)`: 0 matches any.
    /// `minmax_only` only starts the minimum and maximum over. Returns the reset's time.
    pub fn reset(&self, userid: u32, queryid: i64, minmax_only: bool) -> DateTime<Utc> {
        let now = Utc::now();
        let mut entries = self.entries.lock();
        let matches =
            |k: &(u32, i64)| (userid == 0 || k.0 == userid) && (queryid == 0 || k.1 == queryid);
        if minmax_only {
            for (_, e) in entries.iter_mut().filter(|(k, _)| matches(k)) {
                (e.min_exec_ms, e.max_exec_ms) = (0.0, 0.0);
                e.minmax_stats_since = now;
            }
        } else {
            entries.retain(|k, _| !matches(k));
            if userid == 0 && queryid == 0 {
                *self.dealloc.lock() = (0, now);
            }
        }
        now
    }

    /// `pg_stat_statements_info`: clean-ups, and when everything was last reset.
    pub fn info(&self) -> (u64, DateTime<Utc>) {
        *self.dealloc.lock()
    }
}

/// A statement's `queryid`: a hash of its normalized text (stable across restarts).
pub fn query_id(normalized: &str) -> i64 {
    // FNV-1a, 64 bits: no per-process random keys.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in normalized.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<'a>(query: &'a str, exec_ms: f64, usage: &'a BufferUsage) -> StatementRun<'a> {
        StatementRun {
            userid: 10,
            query,
            exec_ms,
            rows: 2,
            usage,
        }
    }

    #[test]
    fn runs_add_up_with_postgres_statistics_of_time() {
        let s = StatementStats::default();
        let usage = BufferUsage {
            shared_hit: 3,
            ..BufferUsage::default()
        };
        for ms in [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0] {
            s.record(&run("SELECT $1", ms, &usage));
        }
        s.record(&run("SELECT $1, $2", 1.0, &usage));
        let mut e = s.entries();
        e.sort_by_key(|e| e.calls);
        let e = &e[1];
        assert_eq!((e.calls, e.rows, e.query.as_str()), (8, 16, "SELECT $1"));
        assert_eq!(e.usage.shared_hit, 24);
        assert_eq!(
            (e.min_exec_ms, e.max_exec_ms, e.mean_exec_ms),
            (2.0, 9.0, 5.0)
        );
        assert!(
            (e.stddev_exec_ms() - 2.0).abs() < 1e-9,
            "{}",
            e.stddev_exec_ms()
        );
        assert_eq!(e.queryid, query_id("SELECT $1"));
        s.reset(0, query_id("SELECT $1, $2"), false);
        assert_eq!(s.entries().len(), 1);
        s.reset(0, 0, true);
        assert_eq!((s.entries()[0].min_exec_ms, s.entries()[0].calls), (0.0, 8));
    }

    #[test]
    fn a_full_store_drops_its_least_called_entries() {
        let s = StatementStats::default();
        let usage = BufferUsage::default();
        s.record(&run("kept", 1.0, &usage));
        s.record(&run("kept", 1.0, &usage));
        for i in 0..MAX_STATEMENTS + 10 {
            s.record(&run(&format!("SELECT {i}"), 1.0, &usage));
        }
        let entries = s.entries();
        assert!(entries.len() <= MAX_STATEMENTS);
        assert!(entries.iter().any(|e| e.query == "kept"));
        assert!(s.info().0 >= 1);
    }
}
