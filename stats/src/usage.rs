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
    /// Nanoseconds spent issuing reads ahead of need: `posix_fadvise` advice or handing
    /// I/Os to workers / the kernel (iolab's `shared wait=`; counted only with
    /// `track_io_timing`). This is time the session was busy, not blocked on a read.
    pub shared_wait_ns: u64,
    /// The same four counts and two times for a session's local buffers (its temporary
    /// tables: EXPLAIN's `local hit=… read=…`).
    pub local_hit: u64,
    pub local_read: u64,
    pub local_dirtied: u64,
    pub local_written: u64,
    pub local_read_ns: u64,
    pub local_write_ns: u64,
    pub local_wait_ns: u64,
    /// Blocks of temporary files (sorts and aggregations beyond `work_mem`) read and
    /// written (EXPLAIN's `temp read=… written=…`), and the nanoseconds their reads and
    /// writes took (`I/O Timings: temp read=… write=…`; with `track_io_timing`).
    pub temp_read: u64,
    pub temp_written: u64,
    pub temp_read_ns: u64,
    pub temp_write_ns: u64,
    /// Read operations started (one combined read of many blocks counts once).
    pub io_reads: u64,
    /// Times the consumer had to wait for a read that was not finished yet ("stalls").
    pub io_stalls: u64,
    /// WAL records this work inserted (`EXPLAIN (WAL)`'s `records=`, `pg_stat_wal`).
    pub wal_records: u64,
    /// Of them, full page images (`fpi=`).
    pub wal_fpi: u64,
    /// Their bytes (`bytes=`).
    pub wal_bytes: u64,
    /// Times an insert found the WAL buffer full and wrote it out first (`buffers full=`).
    pub wal_buffers_full: u64,
}

/// The counters of one set of buffers, shared or a session's local ones, to add to.
pub struct BlockCounters<'a> {
    pub hit: &'a mut u64,
    pub read: &'a mut u64,
    pub dirtied: &'a mut u64,
    pub written: &'a mut u64,
    pub read_ns: &'a mut u64,
    pub write_ns: &'a mut u64,
    pub wait_ns: &'a mut u64,
}

crate::persist::persisted_fields!(BufferUsage {
    shared_hit: u64,
    shared_read: u64,
    shared_dirtied: u64,
    shared_written: u64,
    shared_read_ns: u64,
    shared_write_ns: u64,
    shared_wait_ns: u64,
    local_hit: u64,
    local_read: u64,
    local_dirtied: u64,
    local_written: u64,
    local_read_ns: u64,
    local_write_ns: u64,
    local_wait_ns: u64,
    temp_read: u64,
    temp_written: u64,
    temp_read_ns: u64,
    temp_write_ns: u64,
    io_reads: u64,
    io_stalls: u64,
    wal_records: u64,
    wal_fpi: u64,
    wal_bytes: u64,
    wal_buffers_full: u64,
});

impl BufferUsage {
    /// The `local_…` counters when `local`, else the `shared_…` ones.
    pub fn blocks(&mut self, local: bool) -> BlockCounters<'_> {
        match local {
            false => BlockCounters {
                hit: &mut self.shared_hit,
                read: &mut self.shared_read,
                dirtied: &mut self.shared_dirtied,
                written: &mut self.shared_written,
                read_ns: &mut self.shared_read_ns,
                write_ns: &mut self.shared_write_ns,
                wait_ns: &mut self.shared_wait_ns,
            },
            true => BlockCounters {
                hit: &mut self.local_hit,
                read: &mut self.local_read,
                dirtied: &mut self.local_dirtied,
                written: &mut self.local_written,
                read_ns: &mut self.local_read_ns,
                write_ns: &mut self.local_write_ns,
                wait_ns: &mut self.local_wait_ns,
            },
        }
    }

    pub fn add(&mut self, other: &BufferUsage) {
        self.shared_hit += other.shared_hit;
        self.shared_read += other.shared_read;
        self.shared_dirtied += other.shared_dirtied;
        self.shared_written += other.shared_written;
        self.shared_read_ns += other.shared_read_ns;
        self.shared_write_ns += other.shared_write_ns;
        self.shared_wait_ns += other.shared_wait_ns;
        self.local_hit += other.local_hit;
        self.local_read += other.local_read;
        self.local_dirtied += other.local_dirtied;
        self.local_written += other.local_written;
        self.local_read_ns += other.local_read_ns;
        self.local_write_ns += other.local_write_ns;
        self.local_wait_ns += other.local_wait_ns;
        self.temp_read += other.temp_read;
        self.temp_written += other.temp_written;
        self.temp_read_ns += other.temp_read_ns;
        self.temp_write_ns += other.temp_write_ns;
        self.io_reads += other.io_reads;
        self.io_stalls += other.io_stalls;
        self.wal_records += other.wal_records;
        self.wal_fpi += other.wal_fpi;
        self.wal_bytes += other.wal_bytes;
        self.wal_buffers_full += other.wal_buffers_full;
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
