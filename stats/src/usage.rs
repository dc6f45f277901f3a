//! Per-statement buffer and I/O counters (PostgreSQL's `BufferUsage`).

use std::ops::AddAssign;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferUsage {
    /// Blocks found in the buffer pool.
    pub shared_hit: u64,
    /// Blocks read from the file system into the pool.
    pub shared_read: u64,
    /// Blocks this statement dirtied (first change since they were clean).
    pub shared_dirtied: u64,
    /// Blocks written out (evicting a dirty victim, or flushing).
    pub shared_written: u64,
    /// Nanoseconds spent in read calls (counted only when `track_io_timing` is on).
    pub shared_read_ns: u64,
    /// Nanoseconds spent in write calls (counted only when `track_io_timing` is on).
    pub shared_write_ns: u64,
}

impl BufferUsage {
    pub fn add(&mut self, other: &BufferUsage) {
        self.shared_hit += other.shared_hit;
        self.shared_read += other.shared_read;
        self.shared_dirtied += other.shared_dirtied;
        self.shared_written += other.shared_written;
        self.shared_read_ns += other.shared_read_ns;
        self.shared_write_ns += other.shared_write_ns;
    }

    pub fn is_zero(&self) -> bool {
        *self == BufferUsage::default()
    }
}

impl AddAssign for BufferUsage {
    fn add_assign(&mut self, other: BufferUsage) {
        self.add(&other);
    }
}
