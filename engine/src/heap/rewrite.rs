//! VACUUM FULL and CLUSTER: a table's rows copied into a new file, without its dead ones.
//!
//! ```text
//!   old file ──read stream (vacuum ring)──► each tuple: dead? ──yes──► dropped
//!                                                         │ no
//!           VACUUM FULL: in block order ◄────────────────┤
//!           CLUSTER: (index key, old TID) ──► IndexSort (maintenance_work_mem, temp runs)
//!                      └─ in key order: the tuple fetched by its old TID
//!                                                         ▼
//!                                  new pages, filled in order ──► new file (fsynced)
//! ```
//!
//! A tuple is dropped when no snapshot can see it any more — inserted by an aborted
//! transaction, or deleted by a committed one older than the removal horizon
//! (`prune::vacuum_state`, VACUUM's own rule). Everything else is copied byte for byte,
//! its header included (`t_xmin`, `t_xmax`, hint bits), so that the rewrite is invisible
//! to every snapshot: a row some older snapshot still sees as deleted stays deleted for
//! new ones and visible to it. Each copy's `t_ctid` points at itself in the new file (an
//! updated row's old version loses the link to its new one, as when PostgreSQL cannot
//! follow a chain; the caller holds the table's AccessExclusiveLock, so no statement is
//! following one).
//!
//! CLUSTER sorts `(key, TID)` pairs, not whole rows: the sort's memory is bounded by
//! `maintenance_work_mem` (runs beyond it go to temporary files, as an index build's),
//! and each row is then read back from the old file by its TID — through the buffer pool,
//! so a table in the pool or the page cache is read at memory speed and a table larger
//! than both at random-read speed (PostgreSQL sorts whole rows instead).
//!
//! The new file is written through the buffer pool (`new_block`) and flushed and fsynced
//! before this returns, as an index build's is; it is not WAL-logged. The caller gives it
//! to the table and rebuilds the indexes.

use std::sync::Arc;

use iolab_catalog::{IndexDef, PgError, PgResult, TableDef};

use crate::accounting::IoAccount;
use crate::bitmap::tidbitmap::MAX_TUPLES_PER_PAGE;
use crate::btree::external_sort::IndexSort;
use crate::btree::key::Key;
use crate::btree::BtreeIndex;
use crate::buffer::ring::BufferRing;
use crate::buffer::{BufferPool, PinnedBuffer};
use crate::db::Database;
use crate::exec::context::StatementContext;
use crate::heap::codec::TupleLayout;
use crate::heap::prune::{vacuum_state, StatusCache, VacuumState};
use crate::heap::tuple;
use crate::storage::page;
use crate::storage::relfile::RelFile;
use crate::stream::ReadStream;

/// What a rewrite found and wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rewritten {
    /// Pages of the old file.
    pub pages_before: u32,
    /// Pages of the new file.
    pub pages: u32,
    /// Rows copied.
    pub kept: u64,
    /// Of those, rows deleted by a transaction some snapshot may still not see.
    pub recently_dead: u64,
    /// Rows dropped.
    pub removed: u64,
}

/// Copies `table`'s rows (in its current file) into the new, empty file `new_relfilenode`,
/// in `order`'s key order if given (CLUSTER), else in their order (VACUUM FULL). `progress`
/// is told each block scanned and each row written.
pub fn rewrite_table(
    db: &Database,
    ctx: &StatementContext,
    table: &TableDef,
    new_relfilenode: u32,
    order: Option<&IndexDef>,
    progress: &mut dyn FnMut(RewriteProgress),
) -> PgResult<Rewritten> {
    let old = db.relfile(table.relfilenode)?;
    let new = db.relfile(new_relfilenode)?;
    assert_eq!(new.nblocks(), 0, "a rewrite fills a new, empty file");
    let mut acct = ctx.new_account();
    let mut found = Rewritten {
        pages_before: old.nblocks(),
        ..Rewritten::default()
    };
    let mut writer = PageWriter::new(db.pool.clone(), new.clone());
    let result = (|| {
        match order {
            None => scan(db, ctx, &old, &mut found, progress, &mut |t, _| {
                writer.add(t, &mut acct)
            })?,
            Some(index) => {
                let columns = Arc::new(BtreeIndex::open(db, index)?.key_columns().clone());
                let layout = TupleLayout::for_table(table);
                let mut sorted = IndexSort::new(&columns, ctx.temp.clone());
                scan(db, ctx, &old, &mut found, progress, &mut |t, tid| {
                    let keys = (index.columns.iter())
                        .map(|&c| layout.datum(t, c).map(Key::from_datum))
                        .collect::<PgResult<Vec<_>>>()?;
                    sorted.push(&keys, tid)
                })?;
                progress(RewriteProgress::Sorted);
                let mut reader = TupleReader::new(db.pool.clone(), old.clone());
                sorted.for_each(&mut |_, tid| {
                    ctx.check_cancel()?;
                    reader.copy(tid, &mut writer, &mut acct)
                })?;
            }
        }
        drop(writer);
        found.pages = new.nblocks();
        progress(RewriteProgress::Written(found.kept));
        if !new.is_temporary() {
            db.pool.flush_relation_counted(new_relfilenode, &mut acct)?;
            let synced = acct.fsync(|| new.sync());
            synced.map_err(|e| {
                PgError::io(
                    &format!("could not fsync file \"{}\"", new.path().display()),
                    &e,
                )
            })?;
        }
        Ok(found)
    })();
    ctx.add_usage(&acct.usage);
    acct.flush();
    result
}

/// How far a rewrite is, for `pg_stat_progress_cluster`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteProgress {
    /// A block of the old file scanned, with the rows seen so far.
    Scanned { blocks: u32, tuples: u64 },
    /// CLUSTER: every row's key is sorted; the rows are written next.
    Sorted,
    /// Rows written so far.
    Written(u64),
}

/// Reads every block of `old` through a maintenance read stream and hands each tuple
/// that stays to `keep`, with its TID; counts what it drops.
fn scan(
    db: &Database,
    ctx: &StatementContext,
    old: &Arc<RelFile>,
    found: &mut Rewritten,
    progress: &mut dyn FnMut(RewriteProgress),
    keep: &mut dyn FnMut(&[u8], (u32, u16)) -> PgResult<()>,
) -> PgResult<()> {
    let horizon = db.txns.oldest_nonremovable();
    let mut clog = StatusCache::new(db.txns.clog().clone());
    let nblocks = old.nblocks();
    let mut next = 0u32;
    let config = ctx.stream_config(true, true);
    let ring = crate::analyze::acquire::maintenance_ring(256);
    let mut stream = ReadStream::new(
        db.aio.clone(),
        db.pool.clone(),
        old.clone(),
        ring,
        &config,
        ctx.new_account(),
        move || {
            (next < nblocks).then(|| {
                next += 1;
                (next - 1, ())
            })
        },
    );
    let mut tuples = 0u64;
    let result = (|| {
        while let Some((buffer, ())) = stream.next_buffer()? {
            ctx.check_cancel()?;
            let blkno = buffer.blkno();
            let page = buffer.page();
            for (off, t) in page::page_items(&page) {
                tuples += 1;
                match vacuum_state(t, horizon, &mut clog) {
                    VacuumState::Dead => {
                        found.removed += 1;
                        continue;
                    }
                    VacuumState::RecentlyDead => found.recently_dead += 1,
                    VacuumState::Live | VacuumState::BeingInserted => {}
                }
                found.kept += 1;
                keep(t, (blkno, off))?;
            }
            progress(RewriteProgress::Scanned {
                blocks: blkno + 1,
                tuples,
            });
        }
        Ok(())
    })();
    let mut acct = std::mem::take(&mut stream.acct);
    ctx.add_usage(&acct.usage);
    acct.flush();
    result
}

/// Fills the new file's pages in order, one pinned at a time.
struct PageWriter {
    pool: Arc<BufferPool>,
    rel: Arc<RelFile>,
    ring: BufferRing,
    page: Option<PinnedBuffer>,
}

impl PageWriter {
    fn new(pool: Arc<BufferPool>, rel: Arc<RelFile>) -> PageWriter {
        PageWriter {
            pool,
            rel,
            ring: BufferRing::bulk_write(),
            page: None,
        }
    }

    /// Appends a copy of tuple `t`, pointing its `t_ctid` at its new place.
    fn add(&mut self, t: &[u8], acct: &mut IoAccount) -> PgResult<()> {
        loop {
            if self.page.is_none() {
                let (_, buffer) = self.pool.new_block(&self.rel, Some(&mut self.ring), acct)?;
                page::page_init(&mut buffer.page_mut(), 0);
                self.page = Some(buffer);
            }
            let buffer = self.page.as_ref().expect("a page is pinned");
            let mut page = buffer.page_mut();
            if let Some(off) = page::page_add_tuple(&mut page, t, MAX_TUPLES_PER_PAGE as u16) {
                let item = page::page_item_mut(&mut page, off).expect("item just added");
                tuple::set_ctid(item, buffer.blkno(), off);
                return Ok(());
            }
            assert!(
                page::page_max_offset(&page) > 0,
                "a tuple that fits a table always fits an empty page"
            );
            drop(page);
            self.page = None;
        }
    }
}

/// Reads tuples by TID, keeping the last block pinned (CLUSTER's rows of one block often
/// come together). A table the pool can hold is read into the pool, as PostgreSQL's
/// index-scan CLUSTER does (each block is read once, however often the key order comes
/// back to it); a larger one through a bulk-read ring, as a sequential scan would, so that
/// it does not evict the whole pool for blocks it may not come back to.
struct TupleReader {
    pool: Arc<BufferPool>,
    rel: Arc<RelFile>,
    ring: Option<BufferRing>,
    pinned: Option<PinnedBuffer>,
}

impl TupleReader {
    fn new(pool: Arc<BufferPool>, rel: Arc<RelFile>) -> TupleReader {
        let fits = (rel.nblocks() as usize) < pool.nbuffers();
        let ring = (!fits).then(|| BufferRing::bulk_read_for_stream(1, 1, 16));
        TupleReader {
            pool,
            rel,
            ring,
            pinned: None,
        }
    }

    /// Appends the tuple at `(blkno, off)` to `writer`, straight from its page.
    fn copy(
        &mut self,
        (blkno, off): (u32, u16),
        writer: &mut PageWriter,
        acct: &mut IoAccount,
    ) -> PgResult<()> {
        if self.pinned.as_ref().is_none_or(|b| b.blkno() != blkno) {
            self.pinned = None;
            let buffer = (self.pool).read_buffer(&self.rel, blkno, self.ring.as_mut(), acct)?;
            self.pinned = Some(buffer);
        }
        let page = self.pinned.as_ref().expect("pinned above").page();
        let t = page::page_item(&page, off).ok_or_else(|| {
            PgError::internal(format!(
                "tuple ({blkno},{off}) is gone while CLUSTER copies it"
            ))
        })?;
        writer.add(t, acct)
    }
}
