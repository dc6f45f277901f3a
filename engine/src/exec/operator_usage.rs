//! What one plan operator used besides rows and time, for `EXPLAIN ANALYZE`: its temporary
//! files (blocks, I/O times, the most disk space held at once) and the most memory its
//! reservations held at once.
//!
//! DataFusion's operators do not say which of them created a temporary file or grew a
//! memory reservation, so the operator is found by where the work happens. EXPLAIN
//! ANALYZE's instrumentation wraps each node's output stream, and while a wrapper polls
//! its node, that node is the thread's *running operator* ([`OperatorUsage::enter`]):
//! entries nest like the polls, a parent's poll entering its child's, which hands the
//! thread back when it returns. A temporary file is charged to the operator running when
//! it was created, and so are its later writes and reads, wherever they run (DataFusion
//! reads spill files back from tasks of its own); a memory reservation is charged to the
//! operator running when it first grew. Work done while no operator is entered (every
//! statement but EXPLAIN ANALYZE) is counted only in the statement's totals.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use iolab_stats::BufferUsage;
use parking_lot::Mutex;

/// The record of one plan node, shared by all its partitions.
#[derive(Debug, Default)]
pub struct OperatorUsage {
    /// Temporary-file blocks and times (`temp_read`, `temp_written`, `temp_*_ns`).
    temp: Mutex<BufferUsage>,
    /// Temporary files created.
    temp_files: AtomicU64,
    /// Bytes of temporary files held now, and the most held at once.
    disk: HighWater,
    /// Bytes of memory reservations held now, and the most held at once.
    memory: HighWater,
}

/// A quantity that goes up and down, and the highest it has been.
#[derive(Debug, Default)]
struct HighWater {
    now: AtomicU64,
    peak: AtomicU64,
}

impl HighWater {
    fn grow(&self, bytes: u64) {
        let now = self.now.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn shrink(&self, bytes: u64) {
        // Saturating: a reservation that grew before it was charged here shrinks in full.
        let _ = (self.now).fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
            Some(now.saturating_sub(bytes))
        });
    }
}

/// A copy of an [`OperatorUsage`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OperatorSnapshot {
    pub temp: BufferUsage,
    pub temp_files: u64,
    pub peak_disk_bytes: u64,
    pub peak_memory_bytes: u64,
}

impl OperatorSnapshot {
    /// Adds another operator's: counts and peaks alike (operators of one plan node, such
    /// as an aggregation's two stages, run at the same time).
    pub fn add(&mut self, other: &OperatorSnapshot) {
        self.temp.add(&other.temp);
        self.temp_files += other.temp_files;
        self.peak_disk_bytes += other.peak_disk_bytes;
        self.peak_memory_bytes += other.peak_memory_bytes;
    }
}

thread_local! {
    static RUNNING: RefCell<Option<Arc<OperatorUsage>>> = const { RefCell::new(None) };
}

/// The running operator until dropped; then the one running before it again.
#[must_use]
pub struct Entered(Option<Arc<OperatorUsage>>);

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.0.take();
        RUNNING.with(|r| *r.borrow_mut() = previous);
    }
}

impl OperatorUsage {
    /// Makes this the thread's running operator until the guard is dropped.
    pub fn enter(self: &Arc<Self>) -> Entered {
        Entered(RUNNING.with(|r| r.borrow_mut().replace(self.clone())))
    }

    /// The thread's running operator, if any.
    pub fn running() -> Option<Arc<OperatorUsage>> {
        RUNNING.with(|r| r.borrow().clone())
    }

    /// Adds temporary-file blocks and times (only the `temp_*` fields of `usage` are set).
    pub fn add_temp_io(&self, usage: &BufferUsage) {
        self.temp.lock().add(usage);
    }

    pub fn temp_file_created(&self) {
        self.temp_files.fetch_add(1, Ordering::Relaxed);
    }

    pub fn disk_grew(&self, bytes: u64) {
        self.disk.grow(bytes);
    }

    pub fn disk_shrank(&self, bytes: u64) {
        self.disk.shrink(bytes);
    }

    pub fn memory_grew(&self, bytes: u64) {
        self.memory.grow(bytes);
    }

    pub fn memory_shrank(&self, bytes: u64) {
        self.memory.shrink(bytes);
    }

    pub fn snapshot(&self) -> OperatorSnapshot {
        OperatorSnapshot {
            temp: *self.temp.lock(),
            temp_files: self.temp_files.load(Ordering::Relaxed),
            peak_disk_bytes: self.disk.peak.load(Ordering::Relaxed),
            peak_memory_bytes: self.memory.peak.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_nest_like_polls() {
        let parent = Arc::new(OperatorUsage::default());
        let child = Arc::new(OperatorUsage::default());
        assert!(OperatorUsage::running().is_none());
        {
            let _p = parent.enter();
            {
                let _c = child.enter();
                assert!(Arc::ptr_eq(&OperatorUsage::running().unwrap(), &child));
            }
            assert!(Arc::ptr_eq(&OperatorUsage::running().unwrap(), &parent));
        }
        assert!(OperatorUsage::running().is_none());
    }

    #[test]
    fn peaks_are_the_most_held_at_once() {
        let op = OperatorUsage::default();
        op.memory_grew(100);
        op.memory_grew(50);
        op.memory_shrank(120);
        op.memory_grew(60);
        op.disk_grew(10);
        op.disk_shrank(20);
        op.disk_grew(5);
        let s = op.snapshot();
        assert_eq!(s.peak_memory_bytes, 150);
        assert_eq!(s.peak_disk_bytes, 10);
    }
}
