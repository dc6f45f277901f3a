//! Heap access: appending tuples to a table's pages and reading them back in block order.
//!
//! Insertion fills the table's last page and then extends the relation one page at a
//! time, holding one pinned page at a time; a whole statement's inserts go through a
//! bulk-write buffer ring so that loading a big table does not flush the rest of the
//! buffer pool (PostgreSQL's BAS_BULKWRITE strategy). Given the free space map
//! (`fsm.rs`), it first fills the pages VACUUM freed room on, and extends the table only
//! when none has room for the next tuple.
//!
//! A sequential scan reads blocks `0 .. nblocks` (nblocks fixed when the scan starts, so
//! it never sees pages appended by its own statement) through a sequential read stream,
//! keeps the tuples its snapshot can see, and decodes the projected attributes into Arrow
//! batches. Scans of tables larger than a quarter of the pool read through a bulk-read ring
//! sized as PostgreSQL 18 sizes it (room for the stream's look-ahead). The system column
//! `ctid` (a tuple's block and line pointer, `(0,1)`) is column number `ncolumns` of the
//! projection when a query asks for it.

use std::sync::Arc;

use crate::accounting::IoAccount;
use crate::aio::AioSystem;
use crate::bitmap::tidbitmap::MAX_TUPLES_PER_PAGE;
use crate::buffer::{BufferPool, BufferRing, PinnedBuffer};
use crate::heap::codec::{TupleEncoder, TupleLayout};
use crate::heap::fsm::FreeSpaceMap;
use crate::heap::rows::RowCollector;
use crate::heap::tuple;
use crate::heap::visibility_map::{clear_all_visible, VisibilityMap};
use crate::storage::page;
use crate::storage::relfile::RelFile;
use crate::stream::{ReadStream, ReadStreamConfig, ReadStreamStats};
use crate::txn::{VisibilityChecker, Xid};
use crate::wal::{self, Change};
use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use iolab_catalog::PgResult;
use iolab_stats::RowChange;

/// Appends tuples to one table for one command.
pub struct HeapInserter {
    pool: Arc<BufferPool>,
    rel: Arc<RelFile>,
    xid: Xid,
    cid: u32,
    encoder: TupleEncoder,
    ring: BufferRing,
    target: Option<PinnedBuffer>,
    tuple_buf: Vec<u8>,
    pub acct: IoAccount,
    pub inserted: u64,
    /// The table's indexes, given each placed tuple and updated after each batch.
    indexes: Option<crate::btree::IndexMaintainer>,
    /// How the statistics count the rows: inserts, or an UPDATE's new versions.
    change: RowChange,
    /// Where each tuple of the last `insert_arrays` went, when asked for (UPDATE links
    /// each old version to its new one).
    placed: Option<Vec<(u32, u16)>>,
    /// Where pages with room are found before the table is extended (none: only the last
    /// page and new ones are used).
    fsm: Option<Arc<FreeSpaceMap>>,
    /// Whose bits a page this inserter adds to loses.
    vm: Option<Arc<VisibilityMap>>,
    /// The rows of the last `insert_arrays` ON CONFLICT left out, and where the row that
    /// has each one's key is.
    skipped: Vec<(usize, (u32, u16))>,
    /// ON CONFLICT DO UPDATE: stop before the first row to insert after conflicting ones.
    stop_after_conflicts: bool,
    /// The row the last stop was at: an arbiter had no key of it then, so the next call
    /// places it without looking again (a key inserted since is still found when its
    /// index entries go in).
    stopped_at: Option<usize>,
}

impl HeapInserter {
    pub fn new(
        pool: Arc<BufferPool>,
        rel: Arc<RelFile>,
        columns: impl Into<TupleLayout>,
        xid: Xid,
        cid: u32,
        acct: IoAccount,
    ) -> HeapInserter {
        let ring = BufferRing::bulk_write();
        HeapInserter {
            pool,
            rel,
            xid,
            cid,
            encoder: TupleEncoder::with_layout(columns.into()),
            ring,
            target: None,
            tuple_buf: Vec::with_capacity(256),
            acct,
            inserted: 0,
            indexes: None,
            change: RowChange::Insert,
            placed: None,
            fsm: None,
            vm: None,
            skipped: Vec::new(),
            stop_after_conflicts: false,
            stopped_at: None,
        }
    }

    /// Fills pages `fsm` knows to have room (VACUUM's freed space) before extending the
    /// table, and tells it what is left on each page it moves on from; clears the
    /// all-visible mark (`vm`) of each page it adds to.
    pub fn with_maps(mut self, fsm: Arc<FreeSpaceMap>, vm: Arc<VisibilityMap>) -> Self {
        self.fsm = Some(fsm);
        self.vm = Some(vm);
        self
    }

    /// The rows are an UPDATE's new versions: counted as updates, and where each went is
    /// kept for [`HeapInserter::placed`].
    pub fn for_update(mut self) -> Self {
        self.change = RowChange::Update;
        self.keep_placed()
    }

    /// Keeps where each row of the last `insert_arrays` went, for
    /// [`HeapInserter::placed`] (an INSERT's RETURNING of `ctid`).
    pub fn keep_placed(mut self) -> Self {
        self.placed = Some(Vec::new());
        self
    }

    /// Where the tuples of the last `insert_arrays` went, in row order (after
    /// [`HeapInserter::for_update`] or [`HeapInserter::keep_placed`]; empty otherwise).
    pub fn placed(&self) -> &[(u32, u16)] {
        self.placed.as_deref().unwrap_or_default()
    }

    /// INSERT … ON CONFLICT: rows whose key one of the unique indexes `arbiters` (OIDs)
    /// has are left out ([`skipped`](Self::skipped)). No-op when `arbiters` is empty.
    pub fn skipping_conflicts_in(mut self, arbiters: &[u32]) -> Self {
        if let (Some(indexes), false) = (&mut self.indexes, arbiters.is_empty()) {
            indexes.set_arbiters(arbiters);
        }
        self
    }

    /// ON CONFLICT DO UPDATE, which takes rows in their order as PostgreSQL does (so that
    /// two statements proposing the same keys in the same order cannot deadlock):
    /// [`insert_arrays_from`](Self::insert_arrays_from) stops before the first row it
    /// would insert after rows it left out, for the caller to update their rows first.
    pub fn stopping_after_conflicts(mut self) -> Self {
        self.stop_after_conflicts = true;
        self
    }

    /// Maintains `indexes` (the table's; `None` if it has none) as rows are inserted.
    pub fn with_indexes(mut self, indexes: Option<crate::btree::IndexMaintainer>) -> Self {
        self.indexes = indexes;
        self
    }

    /// Inserts every row of `arrays` (already of the table's exact Arrow types).
    /// The rows placed are told to the statistics, under the transaction, even when a
    /// later row fails.
    pub fn insert_arrays(&mut self, arrays: &[ArrayRef], rows: usize) -> PgResult<()> {
        let end = self.insert_arrays_from(arrays, 0..rows)?;
        assert_eq!(end, rows, "only an upsert's inserter stops early");
        Ok(())
    }

    /// Inserts rows `rows` of `arrays`, up to where
    /// [`stopping_after_conflicts`](Self::stopping_after_conflicts) stops it: the row to
    /// go on from (`rows.end` when every row was taken).
    pub fn insert_arrays_from(
        &mut self,
        arrays: &[ArrayRef],
        rows: std::ops::Range<usize>,
    ) -> PgResult<usize> {
        let before = self.inserted;
        if let Some(placed) = &mut self.placed {
            placed.clear();
        }
        let result = self.insert_rows(arrays, rows);
        let placed = self.inserted - before;
        self.acct
            .rows_changed(self.xid, self.rel.relfilenode(), self.change, placed);
        result
    }

    fn insert_rows(
        &mut self,
        arrays: &[ArrayRef],
        rows: std::ops::Range<usize>,
    ) -> PgResult<usize> {
        self.encoder.prepare(arrays)?;
        self.skipped.clear();
        let speculative = self.indexes.as_ref().is_some_and(|ix| ix.has_arbiters());
        let mut end = rows.end;
        let looked_at = self.stopped_at.take().filter(|&row| row == rows.start);
        for row in rows {
            self.tuple_buf.clear();
            self.encoder
                .encode_row(row, self.xid, self.cid, &mut self.tuple_buf)?;
            if !speculative {
                self.place_tuple()?;
                continue;
            }
            let conflict = if self.stop_after_conflicts && !self.skipped.is_empty() {
                // Rows left out wait for their update: none after them goes in before it.
                let Some(conflict) = self.conflict()? else {
                    end = row;
                    self.stopped_at = Some(row);
                    break;
                };
                Some(conflict)
            } else {
                self.insert_unless_conflict(looked_at == Some(row))?
            };
            if let Some(conflict) = conflict {
                self.skipped.push((row, conflict));
            }
        }
        if let Some(indexes) = &mut self.indexes {
            indexes.flush(&mut self.acct)?;
        }
        Ok(end)
    }

    /// INSERT … ON CONFLICT: places the tuple in `tuple_buf` and its index entries unless
    /// an arbiter index has its key (`btree::maintain`); `Some`: where the row with the
    /// key is. `looked_at`: no arbiter had the key a moment ago; place it at once.
    fn insert_unless_conflict(&mut self, mut looked_at: bool) -> PgResult<Option<(u32, u16)>> {
        loop {
            if !std::mem::take(&mut looked_at) {
                if let Some(tid) = self.conflict()? {
                    return Ok(Some(tid));
                }
            }
            self.place_tuple()?;
            let indexes = self.indexes.as_mut().expect("arbiters are indexes");
            if indexes.flush_row(&mut self.acct)? {
                return Ok(None);
            }
            // Another session inserted the key meanwhile: the tuple is dead; look again.
            self.inserted -= 1;
            if let Some(placed) = &mut self.placed {
                placed.pop();
            }
        }
    }

    /// Where the row is that has the key of the tuple in `tuple_buf` in an arbiter index.
    fn conflict(&mut self) -> PgResult<Option<(u32, u16)>> {
        let indexes = self.indexes.as_ref().expect("arbiters are indexes");
        indexes.conflicts(self.encoder.layout(), &self.tuple_buf, &mut self.acct)
    }

    /// The rows of the last `insert_arrays` ON CONFLICT left out, in order, each with
    /// where the row that has its key is.
    pub fn skipped(&self) -> &[(usize, (u32, u16))] {
        &self.skipped
    }

    fn place_tuple(&mut self) -> PgResult<()> {
        if self.target.is_none() {
            self.target = Some(self.first_target()?);
        }
        loop {
            let buffer = self.target.as_ref().expect("target page pinned");
            let added = {
                let mut page = buffer.page_mut();
                let added =
                    page::page_add_tuple(&mut page, &self.tuple_buf, MAX_TUPLES_PER_PAGE as u16);
                if let Some(off) = added {
                    match &self.vm {
                        Some(vm) => {
                            let rel = self.rel.relfilenode();
                            clear_all_visible(&mut page, vm, rel, buffer.blkno());
                        }
                        None => debug_assert!(
                            !page::page_is_all_visible(&page),
                            "a page VACUUM marked is changed with the visibility map at hand"
                        ),
                    }
                    let item = page::page_item_mut(&mut page, off).expect("item just added");
                    tuple::set_ctid(item, buffer.blkno(), off);
                    let lp = page::ranges::line_pointers_from(&page, off);
                    let lp = lp.start..lp.start + page::ITEM_ID_SIZE;
                    let changed = [
                        page::ranges::HEADER,
                        lp,
                        page::ranges::item(&page, off, None),
                    ];
                    wal::log_change(
                        &self.rel,
                        buffer,
                        &mut page,
                        Change::Ranges(&changed),
                        &mut self.acct,
                    );
                }
                added
            };
            if let Some(off) = added {
                self.inserted += 1;
                if let Some(placed) = &mut self.placed {
                    placed.push((buffer.blkno(), off));
                }
                if let Some(indexes) = &mut self.indexes {
                    let tid = (buffer.blkno(), off);
                    indexes.add(self.encoder.layout(), &self.tuple_buf, tid)?;
                }
                return Ok(());
            }
            // The page is full for this tuple: continue on one with room, or a new one.
            let full = self.target.take().expect("target page pinned");
            if let Some(fsm) = &self.fsm {
                let left = page::page_room_for_tuple(&full.page(), MAX_TUPLES_PER_PAGE as u16);
                fsm.record(self.rel.relfilenode(), full.blkno(), left);
            }
            drop(full);
            self.target = Some(match self.page_with_room()? {
                Some(buffer) => buffer,
                None => self.new_page()?,
            });
        }
    }

    /// A page the free space map says has room for the tuple in `tuple_buf`, pinned.
    fn page_with_room(&mut self) -> PgResult<Option<PinnedBuffer>> {
        let Some(fsm) = &self.fsm else {
            return Ok(None);
        };
        let need = page::maxalign(self.tuple_buf.len());
        let Some(blkno) = fsm.page_with_room(self.rel.relfilenode(), need, self.rel.nblocks())
        else {
            return Ok(None);
        };
        self.pool
            .read_buffer(&self.rel, blkno, Some(&mut self.ring), &mut self.acct)
            .map(Some)
    }

    fn new_page(&mut self) -> PgResult<PinnedBuffer> {
        let (_, buffer) = self
            .pool
            .new_block(&self.rel, Some(&mut self.ring), &mut self.acct)?;
        self.init_page(&buffer);
        Ok(buffer)
    }

    /// A page with room on record, else the table's last page if it has one, else a new
    /// first page.
    fn first_target(&mut self) -> PgResult<PinnedBuffer> {
        if let Some(buffer) = self.page_with_room()? {
            return Ok(buffer);
        }
        let nblocks = self.rel.nblocks();
        if nblocks == 0 {
            return self.new_page();
        }
        let buffer =
            self.pool
                .read_buffer(&self.rel, nblocks - 1, Some(&mut self.ring), &mut self.acct)?;
        let is_new = page::page_is_new(&buffer.page());
        if is_new {
            self.init_page(&buffer);
        }
        Ok(buffer)
    }

    /// Makes the new page in `buffer` an empty heap page.
    fn init_page(&mut self, buffer: &PinnedBuffer) {
        let mut page = buffer.page_mut();
        page::page_init(&mut page, 0);
        let change = Change::Whole { new: true };
        wal::log_change(&self.rel, buffer, &mut page, change, &mut self.acct);
    }

    /// Releases the last pinned page and flushes the I/O statistics.
    pub fn finish(&mut self) {
        self.target = None;
        self.acct.flush();
    }
}

/// Reads a table's visible tuples in block order, a batch at a time.
pub struct HeapScanner {
    stream: ReadStream<()>,
    relfilenode: u32,
    nblocks: u32,
    visibility: VisibilityChecker,
    rows: RowCollector,
}

/// Rows per output batch (a batch is emitted at the first page boundary past this).
pub const SCAN_BATCH_ROWS: usize = 8192;

/// Pages per output batch of a scan that only counts rows (`count(*)`): such a batch is a
/// number, so it can cover far more than `SCAN_BATCH_ROWS` rows; what bounds it is how often
/// the scan checks for cancellation and hands work to the next operator (8 MiB of heap).
const COUNT_BATCH_PAGES: usize = 1024;

impl HeapScanner {
    /// A scan of `rel` reading through a sequential read stream set up by `stream_config`
    /// (and a bulk-read ring when the table exceeds a quarter of the pool); its I/O is
    /// recorded in `acct`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        aio: Arc<AioSystem>,
        pool: Arc<BufferPool>,
        rel: Arc<RelFile>,
        columns: impl Into<TupleLayout>,
        projection: Vec<usize>,
        schema: SchemaRef,
        visibility: VisibilityChecker,
        stream_config: &ReadStreamConfig,
        acct: IoAccount,
    ) -> HeapScanner {
        let nblocks = rel.nblocks();
        let ring = pool.wants_ring(nblocks).then(|| {
            BufferRing::bulk_read_for_stream(
                stream_config.io_combine_limit as usize,
                stream_config.max_ios,
                stream_config.pin_limit,
            )
        });
        let relfilenode = rel.relfilenode();
        let mut acct = acct;
        acct.relations().seq_scan(relfilenode);
        let mut next = 0u32;
        let stream = ReadStream::new(aio, pool, rel, ring, stream_config, acct, move || {
            (next < nblocks).then(|| {
                next += 1;
                (next - 1, ())
            })
        });
        HeapScanner {
            stream,
            relfilenode,
            nblocks,
            visibility,
            rows: RowCollector::new(columns, projection, schema),
        }
    }

    /// Blocks the scan reads in all.
    pub fn nblocks(&self) -> u32 {
        self.nblocks
    }

    /// The scan's I/O so far.
    pub fn acct(&self) -> &IoAccount {
        &self.stream.acct
    }

    /// The read stream's statistics (distance, stalls, request sizes).
    pub fn stream_stats(&self) -> ReadStreamStats {
        self.stream.stats()
    }

    /// Flush the scan's pending I/O statistics to the server's.
    pub fn flush_stats(&mut self) {
        self.stream.acct.flush();
    }

    /// The next batch of visible rows, or `None` at the end of the table.
    pub fn next_batch(&mut self) -> PgResult<Option<RecordBatch>> {
        let counts_only = self.rows.counts_only();
        let mut pages = 0;
        loop {
            let full = if counts_only {
                pages >= COUNT_BATCH_PAGES && !self.rows.is_empty()
            } else {
                self.rows.len() >= SCAN_BATCH_ROWS
            };
            if full {
                break;
            }
            let Some((buffer, ())) = self.stream.next_buffer()? else {
                break;
            };
            pages += 1;
            let blkno = buffer.blkno();
            let page = buffer.page();
            if page::page_is_new(&page) {
                continue;
            }
            if counts_only {
                // No column is wanted (count(*)): count the visible tuples, decode nothing.
                let visibility = &mut self.visibility;
                let visible = page::page_items(&page)
                    .filter(|(_, t)| tuple::is_visible(t, visibility))
                    .count();
                self.rows.push_count(visible);
                continue;
            }
            for (off, t) in page::page_items(&page) {
                if tuple::is_visible(t, &mut self.visibility) {
                    self.rows.push(t, blkno, off)?;
                }
            }
        }
        if self.rows.is_empty() {
            return Ok(None);
        }
        self.rows.finish().map(Some)
    }

    /// The consumer took `rows` rows of the batches (`seq_tup_read`: what a LIMIT cut
    /// off was not returned).
    pub fn rows_returned(&mut self, rows: usize) {
        self.stream
            .acct
            .relations()
            .seq_tuples_read(self.relfilenode, rows as u64);
    }
}
