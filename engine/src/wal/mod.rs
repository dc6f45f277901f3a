//! Write-ahead log: every change to a page of a permanent relation, and every commit, is
//! first written to the WAL, so that after a crash the changes can be replayed (redo).
//!
//! # Logging a change
//!
//! Code that changes a page holds its exclusive content lock, makes the change, then calls
//! [`log_change`] (or [`log_changes`] for pages that must change together, such as the
//! halves of a B-tree split) before releasing the lock. That inserts one record saying
//! which bytes of the page are now what: the byte ranges the caller names
//! ([`Change::Ranges`]: a heap insert names the header, the line pointer and the tuple),
//! the same after moving bytes within the page ([`Change::Moved`]: a B-tree insert shifts
//! the line pointers after its own), the whole page ([`Change::Whole`]: a page built
//! afresh), whatever differs from an image taken before the change ([`Change::Since`]), or
//! the line pointers a prune changed before it compacted the page ([`Change::Pruned`],
//! [`Change::Compacted`]: redo compacts again, so the moved tuples are not logged).
//! The page's LSN becomes the record's end, and the buffer is marked dirty.
//!
//! Redo is therefore one routine for every kind of change: move, copy the logged bytes
//! into the page and compact if asked, unless the page's LSN shows it already has them. That only works if the page redo
//! starts from is a page that once existed, so the first change to a page after a
//! checkpoint began logs the whole page (`full_page_writes`, the page's LSN not above the
//! checkpoint's redo point), without its free-space hole: a page torn by a crash in the
//! middle of its write is rebuilt from that image.
//!
//! # The rules that make it work
//!
//! - WAL before data: the buffer pool flushes the WAL up to a page's LSN before it writes
//!   the page ([`BufferPool::set_wal`](crate::buffer::BufferPool::set_wal)).
//! - Commit: the commit record is flushed before the transaction counts as committed
//!   (`synchronous_commit = on`; with `off` the WAL writer flushes it within
//!   `wal_writer_delay`, and a crash may lose the last commits but never half of one).
//! - Checkpoint ([`Database::checkpoint`](crate::Database::checkpoint)): note the insert
//!   position (the redo point), write every dirty buffer, fsync the files, log a
//!   checkpoint record, flush, write `global/pg_control`, delete the segments before the
//!   redo point. Redo after a crash starts at the last checkpoint's redo point.
//! - Unlogged relations write no WAL; after a crash they are emptied, as in PostgreSQL.
//!   CREATE INDEX writes no WAL either: it writes the built index out and fsyncs it before
//!   it commits, and later changes to its pages are logged as usual.
//!
//! Files: [`record`] (the bytes of a record, capturing and applying a page change),
//! [`log`] (the buffer, segment files, flushing, reading back), [`control`]
//! (`global/pg_control`), [`recovery`] (redo at start-up, with read-ahead of the blocks the
//! next records change: `recovery_prefetch`).

pub mod checkpointer;
pub mod control;
pub mod log;
pub mod record;
pub mod recovery;

use crate::accounting::IoAccount;

pub use log::{Wal, WalIoBy, WalOptions};
pub use record::{format_lsn, Change, Lsn, Move};

use crate::buffer::PinnedBuffer;
use crate::storage::page::{page_lsn, page_set_lsn};
use crate::storage::relfile::RelFile;
use record::{BlockEntry, Body};

/// Microseconds since the Unix epoch (the time in commit and checkpoint records).
pub(crate) fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// One page changed under its exclusive lock, for [`log_changes`].
pub struct PageEdit<'a> {
    pub buffer: &'a PinnedBuffer,
    pub page: &'a mut [u8],
    pub change: Change<'a>,
}

/// Logs a change just made to `page` (in `buffer`, a block of `rel`, locked exclusively)
/// and marks the buffer dirty. For an unlogged relation it only marks it dirty.
pub fn log_change(
    rel: &RelFile,
    buffer: &PinnedBuffer,
    page: &mut [u8],
    change: Change,
    acct: &mut IoAccount,
) {
    log_changes(
        rel,
        &mut [PageEdit {
            buffer,
            page,
            change,
        }],
        acct,
    );
}

/// [`log_change`] for several pages of `rel` in one record: redo applies all or none.
pub fn log_changes(rel: &RelFile, edits: &mut [PageEdit], acct: &mut IoAccount) {
    // Dirty before logged: a checkpoint whose redo point comes after the record must find
    // the buffer dirty, or it would skip writing a change it counts as written.
    for e in edits.iter() {
        e.buffer.mark_dirty(acct);
    }
    if let Some(wal) = rel.wal() {
        let blocks = edits
            .iter()
            .map(|e| {
                assert_eq!(
                    e.buffer.relfilenode(),
                    rel.relfilenode(),
                    "a page of {rel:?}"
                );
                let full = wal.needs_full_image(page_lsn(e.page));
                BlockEntry::capture(rel.relfilenode(), e.buffer.blkno(), e.page, e.change, full)
            })
            .collect();
        let by = acct.stats_owner();
        let (_, end) = wal.insert(0, &Body::Pages(blocks), acct, by);
        for e in edits.iter_mut() {
            page_set_lsn(e.page, end);
        }
    }
}
