//! VACUUM's work on one table, in PostgreSQL's three phases:
//!
//! 1. **Heap scan**: every block but those in long runs of all-visible pages (the
//!    visibility map, `heap::visibility_map`) is read through a maintenance read stream
//!    (the vacuum ring, `maintenance_io_concurrency`) and pruned under its exclusive lock:
//!    dead tuples go, their space is compacted, and with indexes their line pointers are
//!    left dead and remembered (`heap::prune`); a page left with only rows every
//!    transaction sees is marked all-visible.
//! 2. **Index vacuum**: each index loses the entries of those line pointers
//!    (`btree::vacuum`).
//! 3. **Heap vacuum**: the remembered line pointers become unused (and the page
//!    all-visible, if it now is).
//!
//! The dead line pointers remembered are bounded by `maintenance_work_mem` (6 bytes each,
//! as PostgreSQL's TID store is counted); when it fills up, phases 2 and 3 run for what it
//! holds and the scan goes on (each round is one of VERBOSE's `index scans:`). A table
//! without indexes needs neither: its dead tuples' line pointers become unused at once.
//!
//! Each page's room after pruning goes to the free space map (`heap::fsm`), for inserts to
//! fill.
//!
//! The heap's blocks, in the scan and in phase 3, go at the pace the cost-based delay
//! allows (`cost_delay`). The index pass is not throttled: it holds the index's writer lock
//! from start to end, and a nap there would stall every insert into the index.
//!
//! The live and dead counts it leaves are exact, not sampled: `reltuples` and the
//! statistics' `n_live_tup` / `n_dead_tup` (the dead ones being those some snapshot may
//! still see).

use iolab_catalog::{PgResult, TableDef};
use iolab_stats::progress::{vacuum, ProgressCommand};

use crate::accounting::IoAccount;
use crate::analyze::acquire::maintenance_ring;
use crate::analyze::cost_delay::{CostDelay, CostDelaySettings};
use crate::bitmap::tidbitmap::MAX_TUPLES_PER_PAGE;
use crate::btree::vacuum::IndexVacuumed;
use crate::btree::{BtreeIndex, Tid};
use crate::exec::context::{ProgressReport, StatementContext};
use crate::heap::prune::{page_all_visible, prune_page, set_unused, StatusCache};
use crate::heap::visibility_map::{clear_all_visible, VisibilityMap};
use crate::storage::page;
use crate::stream::ReadStream;
use crate::txn::Xid;
use crate::wal::{self, Change};

/// Bytes PostgreSQL counts per remembered dead item against `maintenance_work_mem`.
const BYTES_PER_DEAD_ITEM: usize = 6;

/// What VACUUM did to a table and its indexes.
pub struct HeapVacuumed {
    pub total_blocks: u32,
    pub blocks_scanned: u32,
    /// Tuples that stay and count as live (see `PagePruned::live`).
    pub live: u64,
    /// Deleted tuples some snapshot may still see.
    pub recently_dead: u64,
    pub removed: u64,
    /// Pages that had dead line pointers for the indexes, and how many.
    pub pages_with_dead_items: u32,
    pub dead_items: u64,
    /// Pages VACUUM marked all-visible.
    pub pages_set_all_visible: u32,
    /// Rounds of phases 2 and 3.
    pub index_scans: u32,
    /// Pages whose dead line pointers were made unused after the indexes'.
    pub heap_blks_vacuumed: u64,
    /// Each index's name and what its last round did (pages) and all rounds removed.
    pub indexes: Vec<(String, IndexVacuumed)>,
    pub acct: IoAccount,
    /// Time slept for the cost-based delay, if `track_cost_delay_timing` was on.
    pub delay_time: Option<std::time::Duration>,
}

/// Vacuums `table` (see the module comment); tuples deleted by transactions before
/// `horizon` are removed.
pub fn vacuum_heap(
    ctx: &StatementContext,
    table: &TableDef,
    ring_buffers: usize,
    maintenance_work_mem_kb: usize,
    cost: CostDelaySettings,
    horizon: Xid,
) -> PgResult<HeapVacuumed> {
    let rel = ctx.db.relfile(table.relfilenode)?;
    let indexes = ctx
        .db
        .catalog
        .indexes_of(table.oid)
        .iter()
        .map(|def| BtreeIndex::open(&ctx.db, def))
        .collect::<PgResult<Vec<_>>>()?;
    let total_blocks = rel.nblocks();
    let max_dead_items = (maintenance_work_mem_kb * 1024 / BYTES_PER_DEAD_ITEM).max(1);
    let progress = ctx.report_progress(ProgressCommand::Vacuum, table.oid);
    progress.set(vacuum::PHASE, vacuum::SCANNING_HEAP);
    progress.set(vacuum::HEAP_BLKS_TOTAL, total_blocks);
    progress.set(
        vacuum::MAX_DEAD_TUPLE_BYTES,
        max_dead_items * BYTES_PER_DEAD_ITEM,
    );
    progress.set(vacuum::INDEXES_TOTAL, indexes.len());
    // Long runs of all-visible pages are not read.
    let skip = ctx.db.vm.skippable(table.relfilenode, total_blocks);
    let mut next = 0u32;
    let mut stream = ReadStream::new(
        ctx.db.aio.clone(),
        ctx.db.pool.clone(),
        rel.clone(),
        maintenance_ring(ring_buffers),
        &ctx.stream_config(true, false),
        ctx.new_account(),
        move || {
            while next < total_blocks && skip[next as usize] {
                next += 1;
            }
            (next < total_blocks).then(|| {
                next += 1;
                (next - 1, ())
            })
        },
    );
    let mut clog = StatusCache::new(ctx.db.txns.clog().clone());
    let mut done = HeapVacuumed {
        total_blocks,
        blocks_scanned: 0,
        live: 0,
        recently_dead: 0,
        removed: 0,
        pages_with_dead_items: 0,
        dead_items: 0,
        pages_set_all_visible: 0,
        index_scans: 0,
        heap_blks_vacuumed: 0,
        indexes: indexes
            .iter()
            .map(|i| (i.name().to_string(), IndexVacuumed::default()))
            .collect(),
        acct: IoAccount::default(),
        delay_time: None,
    };
    // Dead line pointers waiting for the indexes: (block, offsets), in block order.
    let mut waiting: Vec<(u32, Vec<u16>)> = Vec::new();
    let mut waiting_items = 0usize;
    let mut cleaner = Cleaner {
        ctx,
        rel: &rel,
        indexes: &indexes,
        ring_buffers,
        horizon,
        clog: StatusCache::new(ctx.db.txns.clog().clone()),
        before: vec![0u8; page::BLCKSZ].into_boxed_slice(),
        progress: &progress,
        throttle: CostDelay::new(cost, &stream.acct, vacuum::DELAY_TIME),
    };
    let mut before = vec![0u8; page::BLCKSZ];
    loop {
        cleaner.throttle.point(&stream.acct, &progress);
        let Some((buffer, ())) = stream.next_buffer()? else {
            break;
        };
        ctx.check_cancel()?;
        done.blocks_scanned += 1;
        progress.set(vacuum::HEAP_BLKS_SCANNED, buffer.blkno() + 1);
        let set_before = done.pages_set_all_visible;
        let (pruned, room) = {
            let mut page = buffer.page_mut();
            if page::page_is_new(&page) {
                continue;
            }
            before.copy_from_slice(&page);
            let pruned = prune_page(&mut page, horizon, &mut clog, !indexes.is_empty());
            let vm = &ctx.db.vm;
            if mark_all_visible(
                &mut page,
                vm,
                table.relfilenode,
                buffer.blkno(),
                pruned.all_visible,
            ) {
                done.pages_set_all_visible += 1;
            }
            if pruned.changed || done.pages_set_all_visible > set_before {
                let change = Change::Pruned(&before);
                wal::log_change(&rel, &buffer, &mut page, change, &mut stream.acct);
            }
            (
                pruned,
                page::page_room_for_tuple(&page, MAX_TUPLES_PER_PAGE as u16),
            )
        };
        ctx.db.fsm.record(table.relfilenode, buffer.blkno(), room);
        let blkno = buffer.blkno();
        drop(buffer);
        done.live += pruned.live;
        done.recently_dead += pruned.recently_dead;
        done.removed += pruned.removed;
        if !pruned.dead_items.is_empty() {
            done.pages_with_dead_items += 1;
            done.dead_items += pruned.dead_items.len() as u64;
            waiting_items += pruned.dead_items.len();
            waiting.push((blkno, pruned.dead_items));
            progress.set(vacuum::NUM_DEAD_ITEM_IDS, waiting_items);
            progress.set(
                vacuum::DEAD_TUPLE_BYTES,
                waiting_items * BYTES_PER_DEAD_ITEM,
            );
        }
        if waiting_items >= max_dead_items {
            cleaner.clean(&mut waiting, &mut done, &mut stream.acct)?;
            waiting_items = 0;
        }
    }
    progress.set(vacuum::HEAP_BLKS_SCANNED, total_blocks);
    if !waiting.is_empty() {
        cleaner.clean(&mut waiting, &mut done, &mut stream.acct)?;
    }
    progress.set(vacuum::PHASE, vacuum::FINAL_CLEANUP);
    done.delay_time = cleaner.throttle.delay_time();
    done.acct = std::mem::take(&mut stream.acct);
    drop(stream);
    done.acct.flush();
    Ok(done)
}

/// Marks `page` (block `blkno` of `relfilenode`, exclusively locked) all-visible in the
/// page and the map if everything on it is `visible` to all (else unmarks a stale mark);
/// whether it newly marked it.
fn mark_all_visible(
    page: &mut [u8],
    vm: &VisibilityMap,
    relfilenode: u32,
    blkno: u32,
    visible: bool,
) -> bool {
    if !visible {
        clear_all_visible(page, vm, relfilenode, blkno);
        return false;
    }
    page::page_set_all_visible(page, true);
    let newly = !vm.is_set(relfilenode, blkno);
    vm.set(relfilenode, blkno);
    newly
}

/// Phases 2 and 3 for the dead line pointers remembered so far.
struct Cleaner<'a> {
    ctx: &'a StatementContext,
    rel: &'a std::sync::Arc<crate::storage::relfile::RelFile>,
    indexes: &'a [BtreeIndex],
    ring_buffers: usize,
    horizon: Xid,
    clog: StatusCache,
    /// A page as it was before the change being logged.
    before: Box<[u8]>,
    progress: &'a ProgressReport,
    /// The cost-based delay of the whole VACUUM.
    throttle: CostDelay,
}

impl Cleaner<'_> {
    fn clean(
        &mut self,
        waiting: &mut Vec<(u32, Vec<u16>)>,
        done: &mut HeapVacuumed,
        acct: &mut IoAccount,
    ) -> PgResult<()> {
        let tids: Vec<Tid> = waiting
            .iter()
            .flat_map(|(blkno, offsets)| offsets.iter().map(move |&off| (*blkno, off)))
            .collect();
        let progress = self.progress;
        progress.set(vacuum::PHASE, vacuum::VACUUMING_INDEXES);
        for (n, (index, (_, vacuumed))) in
            (self.indexes.iter().zip(done.indexes.iter_mut())).enumerate()
        {
            self.ctx.check_cancel()?;
            let mut ring = maintenance_ring(self.ring_buffers);
            let pass = index.bulk_delete(&tids, ring.as_mut(), acct)?;
            vacuumed.pages = pass.pages;
            vacuumed.removed += pass.removed;
            progress.set(vacuum::INDEXES_PROCESSED, n + 1);
        }
        progress.set(vacuum::PHASE, vacuum::VACUUMING_HEAP);
        let mut ring = maintenance_ring(self.ring_buffers);
        for (blkno, offsets) in waiting.drain(..) {
            self.throttle.point(acct, progress);
            self.ctx.check_cancel()?;
            done.heap_blks_vacuumed += 1;
            progress.set(vacuum::HEAP_BLKS_VACUUMED, done.heap_blks_vacuumed);
            let buffer = self
                .ctx
                .db
                .pool
                .read_buffer(self.rel, blkno, ring.as_mut(), acct)?;
            let room = {
                let mut page = buffer.page_mut();
                self.before.copy_from_slice(&page);
                set_unused(&mut page, &offsets);
                let (vm, rel) = (&self.ctx.db.vm, self.rel.relfilenode());
                let visible = page_all_visible(&page, self.horizon, &mut self.clog);
                if mark_all_visible(&mut page, vm, rel, blkno, visible) {
                    done.pages_set_all_visible += 1;
                }
                let change = Change::Since(&self.before);
                wal::log_change(self.rel, &buffer, &mut page, change, acct);
                page::page_room_for_tuple(&page, MAX_TUPLES_PER_PAGE as u16)
            };
            self.ctx.db.fsm.record(self.rel.relfilenode(), blkno, room);
        }
        done.index_scans += 1;
        progress.set(vacuum::INDEX_VACUUM_COUNT, done.index_scans);
        progress.set(vacuum::INDEXES_PROCESSED, 0);
        progress.set(vacuum::NUM_DEAD_ITEM_IDS, 0);
        progress.set(vacuum::DEAD_TUPLE_BYTES, 0);
        progress.set(vacuum::PHASE, vacuum::SCANNING_HEAP);
        Ok(())
    }
}
