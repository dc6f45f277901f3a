//! Writeback requests after writes (PostgreSQL's `checkpoint_flush_after` and
//! `bgwriter_flush_after`): a writer remembers the blocks it wrote and, every `limit`
//! blocks, asks the kernel to start writing them to the device with
//! `sync_file_range(SYNC_FILE_RANGE_WRITE)` — sorted, adjacent blocks of one segment in
//! one request — so dirty data does not pile up in the page cache until the checkpoint's
//! fsync, which then takes less time and stalls the device less. The requests do not
//! wait for the device and make nothing durable. They count as `writebacks` (blocks) and
//! `writeback_time` in `pg_stat_io`. Files opened with `O_DIRECT` are never in the page
//! cache: their blocks are not remembered. `limit` 0 turns it off.
//!
//! Bound: at most `limit` (≤ 256 by the settings) blocks are remembered.

use std::sync::Arc;

use crate::storage::page::BLCKSZ;
use crate::storage::relfile::RelFile;

/// The blocks one writer wrote since its last writeback requests.
pub struct WritebackQueue {
    limit: usize,
    pending: Vec<(Arc<RelFile>, u32)>,
}

/// A run of adjacent blocks of one file, as one request.
#[derive(Debug, PartialEq, Eq)]
pub struct WritebackRange {
    pub relfilenode: u32,
    pub first: u32,
    pub nblocks: u32,
}

impl WritebackQueue {
    /// The blocks it gathers before it issues them (`*_flush_after`).
    pub fn limit(&self) -> usize {
        self.limit
    }

    pub fn new(limit: usize) -> WritebackQueue {
        WritebackQueue {
            limit,
            pending: Vec::with_capacity(limit),
        }
    }

    /// Remembers block `blkno` of `rel`, just written; whether the queue is now full (the
    /// caller then issues it).
    pub fn schedule(&mut self, rel: &Arc<RelFile>, blkno: u32) -> bool {
        if self.limit == 0 || rel.is_direct() {
            return false;
        }
        self.pending.push((Arc::clone(rel), blkno));
        assert!(
            self.pending.len() <= self.limit,
            "writeback queue over its bound"
        );
        self.pending.len() == self.limit
    }

    /// Asks the kernel to write back what is remembered, and forgets it; the blocks
    /// requested.
    pub fn issue(&mut self) -> u64 {
        let mut blocks = 0;
        for (rel, range) in self.ranges() {
            blocks += u64::from(range.nblocks);
            let Ok((fd, offset)) = rel.raw_fd_and_offset(range.first) else {
                continue;
            };
            let len = i64::from(range.nblocks) * BLCKSZ as i64;
            // SAFETY: a plain system call on a descriptor `rel` keeps open.
            let rc = unsafe {
                libc::sync_file_range(fd, offset as i64, len, libc::SYNC_FILE_RANGE_WRITE)
            };
            if rc != 0 {
                let e = std::io::Error::last_os_error();
                tracing::debug!("sync_file_range of {}: {e}", rel.path().display());
            }
        }
        self.pending.clear();
        blocks
    }

    /// The remembered blocks as requests: by file and block, adjacent blocks of one
    /// segment together, each block once.
    fn ranges(&mut self) -> Vec<(Arc<RelFile>, WritebackRange)> {
        self.pending
            .sort_unstable_by_key(|(rel, blkno)| (rel.relfilenode(), *blkno));
        self.pending
            .dedup_by_key(|(rel, blkno)| (rel.relfilenode(), *blkno));
        let per_segment = |rel: &RelFile, blkno: u32| blkno / rel.segment_blocks();
        let mut out: Vec<(Arc<RelFile>, WritebackRange)> = Vec::new();
        for (rel, blkno) in &self.pending {
            if let Some((last_rel, r)) = out.last_mut() {
                let next = r.first + r.nblocks;
                if r.relfilenode == rel.relfilenode()
                    && *blkno == next
                    && per_segment(last_rel, r.first) == per_segment(rel, *blkno)
                {
                    r.nblocks += 1;
                    continue;
                }
            }
            let range = WritebackRange {
                relfilenode: rel.relfilenode(),
                first: *blkno,
                nblocks: 1,
            };
            out.push((Arc::clone(rel), range));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::relfile::tests::TempDir;

    fn ranges(q: &mut WritebackQueue) -> Vec<(u32, u32, u32)> {
        (q.ranges().into_iter())
            .map(|(_, r)| (r.relfilenode, r.first, r.nblocks))
            .collect()
    }

    #[test]
    fn blocks_become_sorted_runs_of_one_file() {
        let dir = TempDir::new("writeback-ranges");
        let a = Arc::new(RelFile::open(&dir.0, 7001).unwrap());
        let b = Arc::new(RelFile::open(&dir.0, 7000).unwrap());
        let mut q = WritebackQueue::new(8);
        for (rel, blkno) in [(&a, 5), (&a, 3), (&b, 9), (&a, 4), (&a, 4), (&a, 7)] {
            assert!(!q.schedule(rel, blkno));
        }
        // The end of a segment ends a run.
        let last = a.segment_blocks() - 1;
        assert!(!q.schedule(&a, last));
        assert!(q.schedule(&a, last + 1), "full at its limit");
        assert_eq!(
            ranges(&mut q),
            [
                (7000, 9, 1),
                (7001, 3, 3),
                (7001, 7, 1),
                (7001, last, 1),
                (7001, last + 1, 1)
            ]
        );
        // Issued: the queue is empty again (the blocks are counted once each).
        assert_eq!(q.issue(), 7);
        assert!(ranges(&mut q).is_empty());
    }

    #[test]
    fn limit_0_remembers_nothing() {
        let dir = TempDir::new("writeback-off");
        let a = Arc::new(RelFile::open(&dir.0, 7002).unwrap());
        let mut q = WritebackQueue::new(0);
        assert!(!q.schedule(&a, 1));
        assert_eq!(q.issue(), 0);
    }
}
