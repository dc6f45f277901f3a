//! Counters of the asynchronous I/O machinery itself, for iolab's `pg_stat_aio` (one row
//! per backend type; PostgreSQL 18 has no such view, see the AIO v2 discussion in the
//! spec §2.8).
//!
//! `pg_stat_io` says how much I/O a backend type did; these counters say how the I/O
//! *layer* coped with it: how many I/Os it started and in how many submission calls
//! (batching), how often the worker queue overflowed so that the issuer executed the I/O
//! itself, how often the issuer blocked on an I/O that was not done yet, how often it
//! found no free handle, and how many I/Os another thread completed. Beside them are
//! latency histograms (submission → completion) per operation: read, write, fsync.
//!
//! They travel the same way as `pg_stat_io`'s counters: the issuing thread counts into its
//! [`PendingIoStats`](crate::PendingIoStats) (no locks), which is flushed into the
//! [`IoStatsHub`](crate::IoStatsHub) at least once a second; they have their own reset
//! (`pg_stat_reset_shared('aio')`) and `stats_reset`.

use crate::io::LatencyHistogram;
use crate::persist::{Corrupt, Decoder, Encoder};

/// One event of the AIO layer (see [`AioCounts`] for what each one means).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AioEvent {
    Started,
    Submission,
    QueueFull,
    CompletionWait,
    HandleWait,
    CompletedElsewhere,
    Advised,
    TakenBack,
    DroppedBehind,
}

/// The operations `pg_stat_aio` keeps latency histograms of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AioLatencyOp {
    Read,
    Write,
    Fsync,
}

impl AioLatencyOp {
    pub const ALL: [AioLatencyOp; 3] =
        [AioLatencyOp::Read, AioLatencyOp::Write, AioLatencyOp::Fsync];

    /// The prefix of its columns (`read_p50`, …).
    pub fn name(self) -> &'static str {
        match self {
            AioLatencyOp::Read => "read",
            AioLatencyOp::Write => "write",
            AioLatencyOp::Fsync => "fsync",
        }
    }
}

/// The AIO counters of one backend type. About 64 bytes plus up to three latency
/// histograms of 20 KiB each, allocated when the first latency of their operation is
/// recorded.
#[derive(Clone, Debug, Default)]
pub struct AioCounts {
    /// Read I/Os started, however executed: handed to workers or the kernel, or executed
    /// synchronously by the issuer (`io_method = sync`, `effective_io_concurrency = 0`,
    /// single-block reads outside a read stream).
    pub ios: u64,
    /// Calls that handed staged I/Os to the workers or the kernel (≤ `ios`: one
    /// `io_uring_enter` or one queue pass carries a whole batch).
    pub submissions: u64,
    /// I/Os the issuer executed itself because the worker queue was full.
    pub queue_full: u64,
    /// Times the issuer asked for an I/O's completion and had to block because it was not
    /// complete yet.
    pub completion_waits: u64,
    /// Times the issuer found no free handle and waited for an in-flight I/O to finish
    /// before it could start another.
    pub handle_waits: u64,
    /// I/Os completed by another thread than the one that issued them (an I/O worker).
    pub completed_elsewhere: u64,
    /// Reads the kernel was advised of (`posix_fadvise(WILLNEED)`) before they ran: by the
    /// issuer under `sync`, by an I/O worker that found them queued under `worker`.
    pub advised: u64,
    /// I/Os the issuer took back out of the worker queue, because it needed them before any
    /// worker had started them, and executed itself.
    pub taken_back: u64,
    /// Ranges of consumed blocks a read stream told the kernel to drop from the page cache
    /// (`posix_fadvise(DONTNEED)`, `read_stream_drop_behind`).
    pub dropped_behind: u64,
    latency: [Option<Box<LatencyHistogram>>; 3],
}

impl AioCounts {
    /// The counters and latency histograms, for the statistics file (`persist`).
    pub(crate) fn save(&self, e: &mut Encoder) {
        let AioCounts {
            ios,
            submissions,
            queue_full,
            completion_waits,
            handle_waits,
            completed_elsewhere,
            advised,
            taken_back,
            dropped_behind,
            latency,
        } = self;
        for c in [
            ios,
            submissions,
            queue_full,
            completion_waits,
            handle_waits,
            completed_elsewhere,
            advised,
            taken_back,
            dropped_behind,
        ] {
            e.u64(*c);
        }
        for h in latency {
            LatencyHistogram::save_optional(h.as_deref(), e);
        }
    }

    pub(crate) fn restore(d: &mut Decoder<'_>) -> Result<AioCounts, Corrupt> {
        Ok(AioCounts {
            ios: d.u64()?,
            submissions: d.u64()?,
            queue_full: d.u64()?,
            completion_waits: d.u64()?,
            handle_waits: d.u64()?,
            completed_elsewhere: d.u64()?,
            advised: d.u64()?,
            taken_back: d.u64()?,
            dropped_behind: d.u64()?,
            latency: [
                LatencyHistogram::restore_optional(d)?,
                LatencyHistogram::restore_optional(d)?,
                LatencyHistogram::restore_optional(d)?,
            ],
        })
    }

    #[inline]
    pub fn count(&mut self, event: AioEvent) {
        *self.slot(event) += 1;
    }

    fn slot(&mut self, event: AioEvent) -> &mut u64 {
        match event {
            AioEvent::Started => &mut self.ios,
            AioEvent::Submission => &mut self.submissions,
            AioEvent::QueueFull => &mut self.queue_full,
            AioEvent::CompletionWait => &mut self.completion_waits,
            AioEvent::HandleWait => &mut self.handle_waits,
            AioEvent::CompletedElsewhere => &mut self.completed_elsewhere,
            AioEvent::Advised => &mut self.advised,
            AioEvent::TakenBack => &mut self.taken_back,
            AioEvent::DroppedBehind => &mut self.dropped_behind,
        }
    }

    /// The value of one event counter.
    pub fn get(&self, event: AioEvent) -> u64 {
        match event {
            AioEvent::Started => self.ios,
            AioEvent::Submission => self.submissions,
            AioEvent::QueueFull => self.queue_full,
            AioEvent::CompletionWait => self.completion_waits,
            AioEvent::HandleWait => self.handle_waits,
            AioEvent::CompletedElsewhere => self.completed_elsewhere,
            AioEvent::Advised => self.advised,
            AioEvent::TakenBack => self.taken_back,
            AioEvent::DroppedBehind => self.dropped_behind,
        }
    }

    #[inline]
    pub fn record_latency_ns(&mut self, op: AioLatencyOp, ns: u64) {
        self.latency[op as usize]
            .get_or_insert_with(Box::default)
            .record_ns(ns);
    }

    /// The latencies of `op`; `None` when none was recorded.
    pub fn latency(&self, op: AioLatencyOp) -> Option<&LatencyHistogram> {
        self.latency[op as usize]
            .as_deref()
            .filter(|h| !h.is_empty())
    }

    pub fn is_zero(&self) -> bool {
        self.ios == 0
            && self.submissions == 0
            && self.queue_full == 0
            && self.completion_waits == 0
            && self.handle_waits == 0
            && self.completed_elsewhere == 0
            && self.advised == 0
            && self.taken_back == 0
            && self.dropped_behind == 0
            && self.latency.iter().flatten().all(|h| h.is_empty())
    }

    pub fn add(&mut self, other: &AioCounts) {
        self.ios += other.ios;
        self.submissions += other.submissions;
        self.queue_full += other.queue_full;
        self.completion_waits += other.completion_waits;
        self.handle_waits += other.handle_waits;
        self.completed_elsewhere += other.completed_elsewhere;
        self.advised += other.advised;
        self.taken_back += other.taken_back;
        self.dropped_behind += other.dropped_behind;
        for op in AioLatencyOp::ALL {
            if let Some(h) = other.latency(op) {
                self.latency[op as usize]
                    .get_or_insert_with(Box::default)
                    .add(h);
            }
        }
    }

    /// Zeroes everything, keeping the histograms' allocations.
    pub fn clear(&mut self) {
        let latency = std::mem::take(&mut self.latency);
        *self = AioCounts {
            latency,
            ..AioCounts::default()
        };
        self.latency.iter_mut().flatten().for_each(|h| h.clear());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_and_clear() {
        let mut a = AioCounts::default();
        a.count(AioEvent::Started);
        a.count(AioEvent::Started);
        a.count(AioEvent::Submission);
        a.record_latency_ns(AioLatencyOp::Fsync, 2_000_000);
        let mut b = AioCounts::default();
        b.count(AioEvent::QueueFull);
        b.add(&a);
        assert_eq!((b.ios, b.submissions, b.queue_full), (2, 1, 1));
        assert_eq!(b.latency(AioLatencyOp::Fsync).unwrap().count(), 1);
        assert!(b.latency(AioLatencyOp::Read).is_none());
        b.clear();
        assert!(b.is_zero());
        assert!(b.latency(AioLatencyOp::Fsync).is_none());
    }
}
