//! Statistics history: what `pg_stat_io` and `pg_stat_aio` did in each interval, kept in a
//! bounded ring for dashboards (`pg_stat_io_history`, `pg_stat_aio_history`).
//!
//! # How a sample is made
//!
//! A sampler (a server thread) calls [`StatsHistory::record`] every
//! `stats_history_interval` with the current cumulative snapshots and the time. The
//! history keeps the previous snapshots and stores, per statistics key — (backend type,
//! object, context) for I/O, backend type for AIO — the **difference** between the two:
//! counts, bytes and times of that interval, and the latency histogram of that interval
//! (the later histogram minus the earlier, so its percentiles are the interval's, not
//! cumulative). The interval's real length is stored with it, so rates (reads/s, MB/s,
//! ms of wait per s) divide by the time that really passed, not by the nominal setting.
//!
//! ```text
//!   t0 snapshot ──┐
//!                 ├─ delta ──► Sample{time: t1, seconds: t1 − t0, rows…} ─┐
//!   t1 snapshot ──┘                                                     ▼
//!                       ring: [oldest … newest]  ◄── drop oldest while older than
//!                                                    retention or over the byte bound
//! ```
//!
//! Keys with nothing to report in an interval get no row (Grafana's fill option turns the
//! gaps into zeros); a reset between two samples (the cumulative counters went back) makes
//! the delta the counters since the reset. The first call only remembers its snapshots.
//!
//! # Memory bound
//!
//! A sample holds at most [`IO_KEYS`] I/O rows and [`BackendType::COUNT`] AIO rows, each a
//! fixed-size struct (the percentiles are kept as `f32` microseconds, not histograms), and
//! the ring holds at most `retention / interval + 1` samples. On top of that the ring never
//! holds more than [`HISTORY_MAX_BYTES`]: the oldest samples go first. [`StatsHistory::bytes`]
//! counts the real allocation (vector capacities included); [`StatsHistory::bound_bytes`]
//! is the bound it never exceeds. At the defaults (1 s, 1 hour) a busy server with ~5
//! active keys per interval uses about 4 MB, and one with every key busy ≈ 54 MB.

use std::collections::VecDeque;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::aio::{AioCounts, AioEvent, AioLatencyOp};
use crate::io::{
    tracks_io_object, AioSnapshot, BackendType, IoCell, IoContext, IoObject, IoOp, IoSnapshot,
    LatencyHistogram,
};

/// The hard upper bound of the ring's memory, whatever the settings.
pub const HISTORY_MAX_BYTES: usize = 64 << 20;

/// The (backend type, object, context) keys `pg_stat_io` has: its 79 rows.
pub const IO_KEYS: usize = 79;

/// Percentiles kept per interval, in microseconds; NaN when nothing was recorded.
pub type Percentiles = [f32; 5];

/// The quantiles of [`Percentiles`]: p50, p90, p99, p99.9, max.
pub const QUANTILES: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 1.0];

/// The [`QUANTILES`] of `h` in microseconds (NaN when it is empty or absent).
pub fn percentiles(h: Option<&LatencyHistogram>) -> Percentiles {
    match h.filter(|h| !h.is_empty()) {
        None => [f32::NAN; 5],
        Some(h) => QUANTILES.map(|q| {
            let us = if q == 1.0 {
                h.max_us()
            } else {
                h.value_at_quantile_us(q)
            };
            us as f32
        }),
    }
}

/// One (backend type, object, context) in one interval.
#[derive(Clone, Debug, PartialEq)]
pub struct IoHistoryRow {
    pub backend_type: BackendType,
    pub object: IoObject,
    pub context: IoContext,
    /// Per [`IoOp`] (by `IoOp as usize`): operations in the interval.
    pub counts: [u64; IoOp::COUNT],
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub extend_bytes: u64,
    pub read_time_ns: u64,
    pub write_time_ns: u64,
    pub waits: u64,
    pub wait_time_ns: u64,
    pub read_latency_us: Percentiles,
    pub write_latency_us: Percentiles,
}

impl IoHistoryRow {
    pub fn count(&self, op: IoOp) -> u64 {
        self.counts[op as usize]
    }

    fn is_zero(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
            && self.read_time_ns == 0
            && self.write_time_ns == 0
            && self.waits == 0
            && self.wait_time_ns == 0
    }
}

/// One backend type's AIO counters in one interval.
#[derive(Clone, Debug, PartialEq)]
pub struct AioHistoryRow {
    pub backend_type: BackendType,
    /// Per [`AioEvent`] in [`AIO_EVENTS`] order.
    pub events: [u64; 9],
    /// I/Os in flight when the sample was taken.
    pub in_flight: u32,
    /// Per [`AioLatencyOp`] (read, write, fsync).
    pub latency_us: [Percentiles; 3],
}

/// The event columns of the AIO views, in order.
pub const AIO_EVENTS: [AioEvent; 9] = [
    AioEvent::Started,
    AioEvent::Submission,
    AioEvent::QueueFull,
    AioEvent::CompletionWait,
    AioEvent::HandleWait,
    AioEvent::CompletedElsewhere,
    AioEvent::Advised,
    AioEvent::TakenBack,
    AioEvent::DroppedBehind,
];

impl AioHistoryRow {
    pub fn event(&self, event: AioEvent) -> u64 {
        let i = AIO_EVENTS.iter().position(|&e| e == event).expect("listed");
        self.events[i]
    }
}

/// Everything that changed in one interval.
#[derive(Clone, Debug)]
pub struct Sample {
    /// When the interval ended.
    pub time: DateTime<Utc>,
    /// Its real length in seconds (> 0).
    pub seconds: f64,
    pub io: Vec<IoHistoryRow>,
    pub aio: Vec<AioHistoryRow>,
}

impl Sample {
    fn bytes(&self) -> usize {
        std::mem::size_of::<Sample>()
            + self.io.capacity() * std::mem::size_of::<IoHistoryRow>()
            + self.aio.capacity() * std::mem::size_of::<AioHistoryRow>()
    }

    /// The largest a sample can be.
    pub fn max_bytes() -> usize {
        std::mem::size_of::<Sample>()
            + IO_KEYS * std::mem::size_of::<IoHistoryRow>()
            + BackendType::COUNT * std::mem::size_of::<AioHistoryRow>()
    }
}

/// The ring of samples and the snapshots the next delta is taken against.
#[derive(Debug)]
pub struct StatsHistory {
    interval: Duration,
    retention: Duration,
    samples: VecDeque<Sample>,
    bytes: usize,
    previous: Option<(DateTime<Utc>, IoSnapshot, AioSnapshot)>,
}

impl StatsHistory {
    pub fn new(interval: Duration, retention: Duration) -> StatsHistory {
        assert!(!interval.is_zero(), "a history needs an interval");
        StatsHistory {
            interval,
            retention,
            samples: VecDeque::new(),
            bytes: 0,
            previous: None,
        }
    }

    /// The most samples the settings allow.
    pub fn max_samples(&self) -> usize {
        (self.retention.as_nanos() / self.interval.as_nanos()) as usize + 1
    }

    /// The bound [`bytes`](Self::bytes) stays under.
    pub fn bound_bytes(&self) -> usize {
        let ring = self.samples.capacity().max(self.max_samples()) * std::mem::size_of::<Sample>();
        (self.max_samples() * Sample::max_bytes()).min(HISTORY_MAX_BYTES) + ring
    }

    /// Bytes held by the samples (the ring's own slots counted by [`bound_bytes`]).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn samples(&self) -> &VecDeque<Sample> {
        &self.samples
    }

    /// Takes one sample at `now` from the cumulative snapshots and the I/Os in flight per
    /// backend type (by `BackendType as usize`).
    pub fn record(
        &mut self,
        now: DateTime<Utc>,
        io: IoSnapshot,
        aio: AioSnapshot,
        in_flight: &[u32; BackendType::COUNT],
    ) {
        if let Some((then, prev_io, prev_aio)) = &self.previous {
            let seconds = (now - *then).num_microseconds().unwrap_or(0) as f64 / 1e6;
            if seconds > 0.0 {
                let sample = Sample {
                    time: now,
                    seconds,
                    io: io_rows(&io, prev_io),
                    aio: aio_rows(&aio, prev_aio, in_flight),
                };
                self.push(sample);
            }
        }
        self.previous = Some((now, io, aio));
        self.expire(now);
    }

    fn push(&mut self, mut sample: Sample) {
        sample.io.shrink_to_fit();
        sample.aio.shrink_to_fit();
        self.bytes += sample.bytes();
        self.samples.push_back(sample);
    }

    fn expire(&mut self, now: DateTime<Utc>) {
        let oldest_kept = now - chrono::Duration::from_std(self.retention).unwrap_or_default();
        let limit = self.max_samples();
        while let Some(front) = self.samples.front() {
            let too_old = front.time < oldest_kept;
            let too_many = self.samples.len() > limit || self.bytes > HISTORY_MAX_BYTES;
            if !(too_old || too_many) {
                break;
            }
            let gone = self.samples.pop_front().expect("front exists");
            self.bytes -= gone.bytes();
        }
        debug_assert!(self.bytes <= self.bound_bytes());
    }
}

/// `later − earlier` of a counter, or `later` when it went back (a reset in between).
fn delta(later: u64, earlier: u64) -> u64 {
    if later >= earlier {
        later - earlier
    } else {
        later
    }
}

fn io_rows(now: &IoSnapshot, prev: &IoSnapshot) -> Vec<IoHistoryRow> {
    let reset = now.stats_reset != prev.stats_reset;
    let mut rows = Vec::new();
    for bt in BackendType::ALL {
        for obj in IoObject::ALL {
            for ctx in IoContext::ALL {
                if !tracks_io_object(bt, obj, ctx) {
                    continue;
                }
                let later = now.counters(bt).cell(obj, ctx);
                let empty = IoCell::default();
                let earlier = if reset {
                    &empty
                } else {
                    prev.counters(bt).cell(obj, ctx)
                };
                let row = io_row(bt, obj, ctx, later, earlier);
                if !row.is_zero() {
                    rows.push(row);
                }
            }
        }
    }
    debug_assert!(rows.len() <= IO_KEYS);
    rows
}

fn io_row(
    bt: BackendType,
    obj: IoObject,
    ctx: IoContext,
    later: &IoCell,
    earlier: &IoCell,
) -> IoHistoryRow {
    let d = |f: &dyn Fn(&IoCell) -> u64| delta(f(later), f(earlier));
    let latency = |op| {
        let l = later.latency(op);
        percentiles(l.map(|l| l.since(earlier.latency(op))).as_ref())
    };
    IoHistoryRow {
        backend_type: bt,
        object: obj,
        context: ctx,
        counts: IoOp::ALL.map(|op| d(&|c| c.count(op))),
        read_bytes: d(&|c| c.bytes(IoOp::Read)),
        write_bytes: d(&|c| c.bytes(IoOp::Write)),
        extend_bytes: d(&|c| c.bytes(IoOp::Extend)),
        read_time_ns: d(&|c| c.time_ns(IoOp::Read)),
        write_time_ns: d(&|c| c.time_ns(IoOp::Write)),
        waits: d(&|c| c.waits()),
        wait_time_ns: d(&|c| c.wait_time_ns()),
        read_latency_us: latency(IoOp::Read),
        write_latency_us: latency(IoOp::Write),
    }
}

fn aio_rows(
    now: &AioSnapshot,
    prev: &AioSnapshot,
    in_flight: &[u32; BackendType::COUNT],
) -> Vec<AioHistoryRow> {
    let reset = now.stats_reset != prev.stats_reset;
    let empty = AioCounts::default();
    let mut rows = Vec::new();
    for bt in BackendType::ALL {
        let later = now.counts(bt);
        let earlier = if reset { &empty } else { prev.counts(bt) };
        let events = AIO_EVENTS.map(|e| delta(later.get(e), earlier.get(e)));
        let flying = in_flight[bt as usize];
        let has_latency = AioLatencyOp::ALL.iter().any(|&op| {
            later.latency(op).map(LatencyHistogram::count)
                != earlier.latency(op).map(LatencyHistogram::count)
        });
        if events.iter().all(|&e| e == 0) && flying == 0 && !has_latency {
            continue;
        }
        let latency_us = AioLatencyOp::ALL.map(|op| {
            let l = later.latency(op);
            percentiles(l.map(|l| l.since(earlier.latency(op))).as_ref())
        });
        rows.push(AioHistoryRow {
            backend_type: bt,
            events,
            in_flight: flying,
            latency_us,
        });
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{IoStatsHub, PendingIoStats};

    const MB: u64 = 1 << 20;

    /// One second of a scan: `reads` 128 kB reads of `latency_us` each, and hits.
    fn scan_second(hub: &IoStatsHub, reads: u64, latency_us: u64) {
        let mut p = PendingIoStats::new();
        for _ in 0..reads {
            p.count_op(
                IoObject::Relation,
                IoContext::BulkRead,
                IoOp::Read,
                131072,
                0,
            );
            p.record_latency(
                IoObject::Relation,
                IoContext::BulkRead,
                IoOp::Read,
                latency_us * 1000,
            );
            p.count_aio(AioEvent::Started);
            p.record_aio_latency(AioLatencyOp::Read, latency_us * 1000);
        }
        p.count_aio(AioEvent::Submission);
        p.count_ops(
            IoObject::Relation,
            IoContext::BulkRead,
            IoOp::Hit,
            reads * 3,
            0,
            0,
        );
        hub.flush(&mut p, BackendType::ClientBackend, 0);
    }

    fn at(start: DateTime<Utc>, ms: i64) -> DateTime<Utc> {
        start + chrono::Duration::milliseconds(ms)
    }

    #[test]
    fn samples_are_interval_deltas_with_their_own_percentiles() {
        let hub = IoStatsHub::new();
        let mut h = StatsHistory::new(Duration::from_secs(1), Duration::from_secs(3600));
        let t0 = Utc::now();
        let no_flight = [0; BackendType::COUNT];
        let (io, aio) = hub.snapshots();
        h.record(t0, io, aio, &no_flight);
        assert!(h.samples().is_empty(), "the first call only remembers");
        scan_second(&hub, 100, 200);
        let (io, aio) = hub.snapshots();
        h.record(at(t0, 1000), io, aio, &no_flight);
        scan_second(&hub, 50, 5000);
        let (io, aio) = hub.snapshots();
        let mut flying = no_flight;
        flying[BackendType::ClientBackend as usize] = 7;
        // a late tick: the rate divides by the 2.5 s that really passed
        h.record(at(t0, 3500), io, aio, &flying);
        let s: Vec<&Sample> = h.samples().iter().collect();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].seconds, 2.5);
        let io = &s[1].io;
        assert_eq!(io.len(), 1, "only the scanned cell had I/O: {io:?}");
        assert_eq!(
            (io[0].object, io[0].context),
            (IoObject::Relation, IoContext::BulkRead)
        );
        assert_eq!(io[0].count(IoOp::Read), 50);
        assert_eq!(io[0].count(IoOp::Hit), 150);
        assert_eq!(io[0].read_bytes, 50 * 131072);
        // percentiles of the second interval alone: every read took 5 ms there
        let p50 = io[0].read_latency_us[0];
        assert!((4950.0..=5050.0).contains(&p50), "{p50}");
        assert!((s[0].io[0].read_latency_us[4] - 200.0).abs() <= 2.0);
        let aio = &s[1].aio;
        assert_eq!(aio.len(), 1);
        assert_eq!(aio[0].event(AioEvent::Started), 50);
        assert_eq!(aio[0].event(AioEvent::Submission), 1);
        assert_eq!(aio[0].in_flight, 7);
        assert!((aio[0].latency_us[0][0] - 5000.0).abs() <= 50.0);
        assert!(aio[0].latency_us[2][0].is_nan(), "no fsync latencies");
    }

    #[test]
    fn a_reset_between_samples_gives_the_counts_since_the_reset() {
        let hub = IoStatsHub::new();
        let mut h = StatsHistory::new(Duration::from_secs(1), Duration::from_secs(60));
        let t0 = Utc::now();
        let none = [0; BackendType::COUNT];
        scan_second(&hub, 100, 200);
        let (io, aio) = hub.snapshots();
        h.record(t0, io, aio, &none);
        hub.reset_shared_io();
        hub.reset_shared_aio();
        scan_second(&hub, 10, 200);
        let (io, aio) = hub.snapshots();
        h.record(at(t0, 1000), io, aio, &none);
        let s = h.samples().back().unwrap();
        assert_eq!(s.io[0].count(IoOp::Read), 10);
        assert_eq!(s.aio[0].event(AioEvent::Started), 10);
    }

    /// Counts one operation in every (object, context) cell `bt` has: the worst case for
    /// the rows per sample.
    fn touch_every_cell(hub: &IoStatsHub, bt: BackendType) {
        let mut p = PendingIoStats::new();
        for obj in IoObject::ALL {
            for ctx in IoContext::ALL {
                if !tracks_io_object(bt, obj, ctx) {
                    continue;
                }
                let op = IoOp::ALL
                    .into_iter()
                    .find(|&op| crate::io::tracks_io_op(bt, obj, ctx, op))
                    .expect("a tracked cell tracks some operation");
                p.count_ops(obj, ctx, op, 1, 0, 0);
            }
        }
        p.count_aio(AioEvent::Started);
        hub.flush(&mut p, bt, 0);
    }

    /// A simulated hour and a half at the defaults, driven by a fake clock: the ring keeps
    /// one hour of samples and its memory never passes the stated bound.
    #[test]
    fn an_hour_of_samples_stays_under_the_bound() {
        let hub = IoStatsHub::new();
        let mut h = StatsHistory::new(Duration::from_secs(1), Duration::from_secs(3600));
        let t0 = Utc::now();
        let mut peak = 0;
        for second in 0..5400i64 {
            BackendType::ALL
                .into_iter()
                .for_each(|bt| touch_every_cell(&hub, bt));
            let flying = [(second % 3) as u32; BackendType::COUNT];
            let (io, aio) = hub.snapshots();
            h.record(at(t0, second * 1000), io, aio, &flying);
            peak = peak.max(h.bytes());
            assert!(h.bytes() <= h.bound_bytes());
        }
        assert_eq!(
            h.samples().len(),
            3601,
            "one hour of 1 s samples (both ends)"
        );
        assert!(h.samples().iter().all(|s| s.io.len() == IO_KEYS));
        assert!(h
            .samples()
            .iter()
            .all(|s| s.aio.len() == BackendType::COUNT));
        let newest = h.samples().back().unwrap().time;
        let oldest = h.samples().front().unwrap().time;
        assert_eq!((newest - oldest).num_seconds(), 3600);
        // the stated bound at the defaults, and the worst case really exercised
        assert!(
            h.bound_bytes() < HISTORY_MAX_BYTES + MB as usize,
            "{}",
            h.bound_bytes()
        );
        assert!(peak > 3601 * Sample::max_bytes() * 9 / 10, "{peak}");
    }

    #[test]
    fn the_byte_bound_wins_over_a_long_retention() {
        let hub = IoStatsHub::new();
        // 1 day at 100 ms would be 864 001 samples, far above HISTORY_MAX_BYTES
        let mut h = StatsHistory::new(Duration::from_millis(100), Duration::from_secs(86400));
        let t0 = Utc::now();
        let none = [0; BackendType::COUNT];
        let fits = HISTORY_MAX_BYTES / Sample::max_bytes();
        for tick in 0..(fits as i64 + 500) {
            BackendType::ALL
                .into_iter()
                .for_each(|bt| touch_every_cell(&hub, bt));
            let (io, aio) = hub.snapshots();
            h.record(at(t0, tick * 100), io, aio, &none);
            assert!(h.bytes() <= HISTORY_MAX_BYTES);
        }
        assert!(h.bytes() > HISTORY_MAX_BYTES - Sample::max_bytes());
        assert!(h.samples().len() < fits + 10);
    }
}
