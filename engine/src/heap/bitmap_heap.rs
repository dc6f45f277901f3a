//! The heap side of a Bitmap Heap Scan: visit the pages of a [`TidBitmap`] in block order
//! and return the visible tuples it points at, as Arrow batches.
//!
//! # How
//!
//! The bitmap is read out in ascending block order and feeds a read stream: each block's
//! per-buffer data is its [`TbmPage`] (the page's tuple offsets, or "lossy"), so the page
//! and the list of tuples to look at arrive together — PostgreSQL 18's streaming bitmap
//! heap scan, whose stream callback is the bitmap iterator. Unlike a Seq Scan's stream,
//! this one is *not* sequential (the caller builds it with `stream_config(false, false)`):
//! the blocks jump, so under `io_method = sync` the `read_stream_advice` policy issues
//! `posix_fadvise` advice ahead of the reads, and no bulk-read ring is used (PostgreSQL
//! does not use one for bitmap scans either). Blocks at or past the table's end when the
//! scan starts are skipped, as PostgreSQL does.
//!
//! On each page:
//!
//! * **exact**: only the listed line pointers are looked at; a tuple is returned if the
//!   snapshot sees it. If the bitmap marked the page `recheck` (an AND met a lossy page,
//!   or the index asked for it), each visible tuple is also tested by the recheck.
//! * **lossy**: every line pointer of the page is looked at, and every visible tuple is
//!   tested by the recheck; those that fail are counted as `Rows Removed by Index Recheck`.
//!
//! The recheck is the index condition, given by the caller as a [`Recheck`]: a function of
//! the raw tuple (use [`TupleLayout::datum`] to read a column). Without one, every visible
//! tuple of a lossy page is returned and the caller must filter them itself.
//!
//! `Heap Blocks: exact=… lossy=…` counts the pages visited of each kind ([`BitmapHeapCounts`]).
//! The remaining filter of the query (`Rows Removed by Filter`) is not applied here.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use iolab_catalog::PgResult;

use crate::accounting::IoAccount;
use crate::aio::AioSystem;
use crate::bitmap::{TbmPage, TidBitmap};
use crate::buffer::BufferPool;
use crate::heap::codec::{Datum, TupleLayout};
use crate::heap::heapam::SCAN_BATCH_ROWS;
use crate::heap::rows::RowCollector;
use crate::heap::tuple;
use crate::storage::page;
use crate::storage::relfile::RelFile;
use crate::stream::{ReadStream, ReadStreamConfig, ReadStreamStats, StreamEvent};
use crate::txn::VisibilityChecker;

/// The index condition, tested again on a tuple the bitmap could not vouch for (lossy
/// pages, exact pages marked `recheck`): `Ok(true)` keeps the tuple.
pub type Recheck = Box<dyn FnMut(&TupleLayout, &[u8]) -> PgResult<bool> + Send>;

/// A [`Recheck`] testing one column (0-based) of the tuple.
///
/// ```ignore
/// let recheck = recheck_column(0, |a| matches!(a, Datum::Int4(v) if v < 140));
/// ```
pub fn recheck_column(
    column: usize,
    mut test: impl FnMut(Datum<'_>) -> bool + Send + 'static,
) -> Recheck {
    Box::new(move |layout: &TupleLayout, tuple: &[u8]| Ok(test(layout.datum(tuple, column)?)))
}

/// What a Bitmap Heap Scan reports beyond its buffers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BitmapHeapCounts {
    /// Pages visited through exact bitmap pages (`Heap Blocks: exact=`).
    pub exact_pages: u64,
    /// Pages visited through lossy chunks (`Heap Blocks: lossy=`).
    pub lossy_pages: u64,
    /// Visible tuples the recheck rejected (`Rows Removed by Index Recheck`).
    pub rows_removed_by_index_recheck: u64,
}

/// Reads the visible tuples a bitmap points at, a batch at a time. See the module comment.
pub struct BitmapHeapScanner {
    stream: ReadStream<TbmPage>,
    relfilenode: u32,
    nblocks: u32,
    visibility: VisibilityChecker,
    rows: RowCollector,
    recheck: Option<Recheck>,
    counts: BitmapHeapCounts,
}

impl BitmapHeapScanner {
    /// A scan of the pages of `bitmap` in `rel` (whose columns are `columns`), returning the
    /// `projection` (table column numbers; `columns.len()` is `ctid`) as batches of `schema`,
    /// reading through a stream set up by `stream_config` (normally
    /// `StatementContext::stream_config(false, false)`), its I/O recorded in `acct`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        aio: Arc<AioSystem>,
        pool: Arc<BufferPool>,
        rel: Arc<RelFile>,
        columns: impl Into<TupleLayout>,
        projection: Vec<usize>,
        schema: SchemaRef,
        visibility: VisibilityChecker,
        bitmap: TidBitmap,
        recheck: Option<Recheck>,
        stream_config: &ReadStreamConfig,
        acct: IoAccount,
    ) -> BitmapHeapScanner {
        let nblocks = rel.nblocks();
        let relfilenode = rel.relfilenode();
        let mut pages = bitmap.into_iter();
        // Pages come in ascending order, so once one is past the end all the rest are.
        let stream = ReadStream::new(aio, pool, rel, None, stream_config, acct, move || {
            pages
                .next()
                .filter(|p| p.blkno < nblocks)
                .map(|p| (p.blkno, p))
        });
        BitmapHeapScanner {
            stream,
            relfilenode,
            nblocks,
            visibility,
            rows: RowCollector::new(columns, projection, schema),
            recheck,
            counts: BitmapHeapCounts::default(),
        }
    }

    /// Blocks of the table when the scan started (pages of the bitmap past them are skipped).
    pub fn nblocks(&self) -> u32 {
        self.nblocks
    }

    /// Heap blocks visited so far, exact and lossy, and rows removed by the recheck.
    pub fn counts(&self) -> BitmapHeapCounts {
        self.counts
    }

    /// The scan's I/O so far.
    pub fn acct(&self) -> &IoAccount {
        &self.stream.acct
    }

    /// The read stream's statistics (distance, stalls, request sizes).
    pub fn stream_stats(&self) -> ReadStreamStats {
        self.stream.stats()
    }

    /// Record what the read stream does ([`StreamEvent`]s; tests, debugging).
    pub fn trace_stream(&mut self) {
        self.stream.trace();
    }

    /// The stream events recorded since [`trace_stream`](Self::trace_stream), emptied.
    pub fn take_stream_events(&mut self) -> Vec<StreamEvent> {
        self.stream.take_events()
    }

    /// Flush the scan's pending I/O statistics to the server's.
    pub fn flush_stats(&mut self) {
        self.stream.acct.flush();
    }

    /// The next batch of rows, or `None` when every page of the bitmap was visited.
    pub fn next_batch(&mut self) -> PgResult<Option<RecordBatch>> {
        let removed_before = self.counts.rows_removed_by_index_recheck;
        let result = self.collect_batch();
        // Every visible row the scan looked at counts as fetched, as PostgreSQL counts
        // the tuples its table AM hands the executor, before recheck and filter.
        let fetched =
            self.rows.len() as u64 + self.counts.rows_removed_by_index_recheck - removed_before;
        self.stream
            .acct
            .relations()
            .bitmap_tuples_fetched(self.relfilenode, fetched);
        result?;
        if self.rows.is_empty() {
            return Ok(None);
        }
        self.rows.finish().map(Some)
    }

    /// Fills `rows` with up to a batch of rows.
    fn collect_batch(&mut self) -> PgResult<()> {
        while self.rows.len() < SCAN_BATCH_ROWS {
            let Some((buffer, tbm_page)) = self.stream.next_buffer()? else {
                break;
            };
            let blkno = buffer.blkno();
            debug_assert_eq!(blkno, tbm_page.blkno);
            if tbm_page.lossy {
                self.counts.lossy_pages += 1;
            } else {
                self.counts.exact_pages += 1;
            }
            let page = buffer.page();
            if page::page_is_new(&page) {
                continue;
            }
            match tbm_page.offsets() {
                Some(offsets) => {
                    for off in offsets {
                        self.visit(&page, blkno, off, tbm_page.recheck)?;
                    }
                }
                None => {
                    for off in 1..=page::page_max_offset(&page) {
                        self.visit(&page, blkno, off, true)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Return the tuple at `off` if it is there, visible, and passes the recheck (when
    /// `recheck`).
    #[inline]
    fn visit(&mut self, page: &[u8], blkno: u32, off: u16, recheck: bool) -> PgResult<()> {
        let Some(t) = page::page_item(page, off) else {
            return Ok(()); // no tuple (an offset past the end, or not a normal line pointer)
        };
        if !tuple::is_visible(t, &mut self.visibility) {
            return Ok(());
        }
        if recheck {
            if let Some(test) = &mut self.recheck {
                if !test(self.rows.layout(), t)? {
                    self.counts.rows_removed_by_index_recheck += 1;
                    return Ok(());
                }
            }
        }
        self.rows.push(t, blkno, off)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use datafusion::arrow::array::{Array, ArrayRef, Int32Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field, Schema};
    use iolab_catalog::{ColumnDef, Persistence, PgType, TableDef};
    use iolab_settings::IoMethod;

    use super::*;
    use crate::aio::AioConfig;
    use crate::bitmap::tidbitmap::PAGES_PER_CHUNK;
    use crate::db::{Database, DatabaseOptions, HugePages};
    use crate::exec::context::StreamSettings;
    use crate::heap::heapam::{HeapInserter, HeapScanner};
    use crate::storage::relfile::tests::TempDir;

    /// Rows of the test table: `a` spread over 0..10000 (as `10000 * random()`), `filler`
    /// 32 hex digits (as `md5(i::text)`): 120 tuples a page, as in the seed experiment.
    pub(crate) fn row(i: u64) -> (i32, String) {
        let h = (i + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let a = ((h >> 17) % 10_000) as i32;
        (a, format!("{:016x}{:016x}", h, h.rotate_left(23)))
    }

    /// A database with table `eic(a int, filler text)` of `nrows` committed rows, plus 300
    /// rows with `a = 7` inserted by a transaction that aborted (never visible).
    pub(crate) struct EicTable {
        pub _dir: TempDir,
        pub db: Arc<Database>,
        pub def: TableDef,
        pub rel: Arc<RelFile>,
    }

    pub(crate) fn eic_table(tag: &str, nrows: u64, method: IoMethod) -> EicTable {
        let dir = TempDir::new(tag);
        let options = DatabaseOptions {
            shared_buffers: 8192, // pin limit 128 per stream
            direct_io: false,
            huge_pages: HugePages::Off,
            aio: AioConfig {
                method,
                io_workers: 2,
                max_concurrency: 64,
                max_issuers: 8,
            },
            ..DatabaseOptions::default()
        };
        let db = Database::open(&dir.0, &options).unwrap();
        let columns = vec![
            ColumnDef {
                name: "a".into(),
                ty: PgType::Int4,
                not_null: false,
            },
            ColumnDef {
                name: "filler".into(),
                ty: PgType::Text,
                not_null: false,
            },
        ];
        let def = db
            .catalog
            .create_table("public", "eic", Persistence::Unlogged, columns, false)
            .unwrap()
            .unwrap();
        db.create_relation_file(&def).unwrap();
        let rel = db.relfile(def.relfilenode).unwrap();
        let insert = |rows: &mut dyn Iterator<Item = (i32, String)>, commit: bool| {
            let xid = db.txns.begin().unwrap();
            let mut inserter = HeapInserter::new(
                db.pool.clone(),
                rel.clone(),
                vec![PgType::Int4, PgType::Text],
                xid,
                0,
                IoAccount::default(),
            );
            let rows: Vec<(i32, String)> = rows.collect();
            for chunk in rows.chunks(10_000) {
                let a: Int32Array = chunk.iter().map(|r| Some(r.0)).collect();
                let f: StringArray = chunk.iter().map(|r| Some(r.1.as_str())).collect();
                let arrays: Vec<ArrayRef> = vec![Arc::new(a), Arc::new(f)];
                inserter.insert_arrays(&arrays, chunk.len()).unwrap();
            }
            inserter.finish();
            if commit {
                db.txns.commit(xid).unwrap();
            } else {
                db.txns.abort(xid).unwrap();
            }
        };
        insert(&mut (0..nrows).map(row), true);
        insert(&mut (0..300).map(|i| (7, format!("aborted {i}"))), false);
        EicTable {
            _dir: dir,
            db,
            def,
            rel,
        }
    }

    impl EicTable {
        /// Write and drop the table's buffers: the next scan reads every block.
        pub(crate) fn evict(&self) {
            self.db
                .pool
                .evict_relation(self.def.relfilenode, &mut IoAccount::default())
                .unwrap();
        }

        pub(crate) fn stream_config(&self, eic: usize, sequential: bool) -> ReadStreamConfig {
            StreamSettings {
                effective_io_concurrency: eic as i32,
                ..StreamSettings::default()
            }
            .stream_config(false, sequential, self.db.pool.pin_limit(), 1)
        }

        pub(crate) fn visibility(&self) -> VisibilityChecker {
            VisibilityChecker::new(self.db.txns.snapshot(Default::default(), 0))
        }
    }

    /// Output schema of `a, filler, ctid`.
    fn schema_with_ctid() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("filler", DataType::Utf8, true),
            Field::new("ctid", DataType::Utf8, false),
        ]))
    }

    /// Rows as (ctid, a, filler), from batches of `a, filler, ctid`.
    type Row = ((u32, u16), i32, String);

    fn rows_of(batches: &[RecordBatch]) -> Vec<Row> {
        let mut rows = Vec::new();
        for batch in batches {
            let a = batch
                .column(0)
                .as_any()
                .downcast_ref::<Int32Array>()
                .unwrap();
            let f = batch
                .column(1)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            let c = batch
                .column(2)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            for i in 0..batch.num_rows() {
                rows.push((parse_ctid(c.value(i)), a.value(i), f.value(i).to_string()));
            }
        }
        rows
    }

    pub(crate) fn parse_ctid(text: &str) -> (u32, u16) {
        let (b, o) = text
            .trim_matches(|c| c == '(' || c == ')')
            .split_once(',')
            .unwrap();
        (b.parse().unwrap(), o.parse().unwrap())
    }

    /// Every visible row, by a sequential scan.
    fn seq_scan(t: &EicTable) -> Vec<Row> {
        let mut scanner = HeapScanner::new(
            t.db.aio.clone(),
            t.db.pool.clone(),
            t.rel.clone(),
            vec![PgType::Int4, PgType::Text],
            vec![0, 1, 2],
            schema_with_ctid(),
            t.visibility(),
            &t.stream_config(16, true),
            IoAccount::default(),
        );
        let mut batches = Vec::new();
        while let Some(b) = scanner.next_batch().unwrap() {
            batches.push(b);
        }
        rows_of(&batches)
    }

    fn a_below_140() -> Recheck {
        recheck_column(0, |a| matches!(a, Datum::Int4(v) if v < 140))
    }

    /// Run a bitmap heap scan to the end: its rows, counts, and the scanner.
    fn bitmap_scan(
        t: &EicTable,
        bitmap: TidBitmap,
        recheck: Option<Recheck>,
        eic: usize,
    ) -> (Vec<Row>, BitmapHeapScanner) {
        let mut scanner = BitmapHeapScanner::new(
            t.db.aio.clone(),
            t.db.pool.clone(),
            t.rel.clone(),
            vec![PgType::Int4, PgType::Text],
            vec![0, 1, 2],
            schema_with_ctid(),
            t.visibility(),
            bitmap,
            recheck,
            &t.stream_config(eic, false),
            IoAccount::default(),
        );
        scanner.trace_stream();
        let mut batches = Vec::new();
        while let Some(b) = scanner.next_batch().unwrap() {
            assert!(b.num_rows() > 0);
            batches.push(b);
        }
        (rows_of(&batches), scanner)
    }

    /// The TIDs a B-tree on `a` gives for a condition on `a`: every tuple whose `a`
    /// passes, the aborted rows' too (an index holds every version), in a random heap
    /// order as an index returns them. Found here by reading the pages, as an index build
    /// would.
    pub(crate) fn tids_where(t: &EicTable, test: impl Fn(i32) -> bool) -> Vec<(u32, u16)> {
        let layout = TupleLayout::new(vec![PgType::Int4, PgType::Text]);
        let mut acct = IoAccount::default();
        let mut tids = Vec::new();
        for blkno in 0..t.rel.nblocks() {
            let buffer =
                t.db.pool
                    .read_buffer(&t.rel, blkno, None, &mut acct)
                    .unwrap();
            let page = buffer.page();
            for off in 1..=page::page_max_offset(&page) {
                let tuple = page::page_item(&page, off).unwrap();
                if matches!(layout.datum(tuple, 0).unwrap(), Datum::Int4(v) if test(v)) {
                    tids.push((blkno, off));
                }
            }
        }
        tids.sort_by_key(|&(b, o)| ((b as u64 * 2_654_435_761 + o as u64) % 1_000_003, b, o));
        tids
    }

    fn index_tids(t: &EicTable) -> Vec<(u32, u16)> {
        tids_where(t, |a| a < 140)
    }

    const NROWS: u64 = 60_000;

    #[test]
    fn exact_bitmap_returns_the_matching_rows() {
        let t = eic_table("bhs-exact", NROWS, IoMethod::Sync);
        let all = seq_scan(&t);
        assert_eq!(all.len() as u64, NROWS, "aborted rows are invisible");
        let expected: Vec<Row> = all.iter().filter(|r| r.1 < 140).cloned().collect();
        let blocks: BTreeSet<u32> = expected.iter().map(|r| r.0 .0).collect();
        assert!(
            expected.len() > 500 && blocks.len() > 300,
            "{}",
            blocks.len()
        );

        let tids = index_tids(&t);
        // The index also points at the aborted rows, which fill the last pages.
        let tid_blocks: BTreeSet<u32> = tids.iter().map(|tid| tid.0).collect();
        assert!(tid_blocks.is_superset(&blocks) && tid_blocks.len() - blocks.len() <= 3);
        let bitmap = TidBitmap::from_tids(4 << 20, tids).unwrap();
        assert_eq!(bitmap.lossy_pages(), 0);
        t.evict();
        let (rows, scanner) = bitmap_scan(&t, bitmap, Some(a_below_140()), 16);
        assert_eq!(rows, expected, "the same rows, in ctid order");
        let counts = scanner.counts();
        assert_eq!(
            counts.exact_pages as usize,
            tid_blocks.len(),
            "Heap Blocks: exact="
        );
        assert_eq!(counts.lossy_pages, 0);
        assert_eq!(counts.rows_removed_by_index_recheck, 0);
        assert_eq!(scanner.acct().usage.shared_read as usize, tid_blocks.len());
        assert_eq!(t.db.pool.stats().pinned, 0);
    }

    #[test]
    fn lossy_bitmap_rechecks_and_returns_the_same_rows() {
        let t = eic_table("bhs-lossy", NROWS, IoMethod::Sync);
        let all = seq_scan(&t);
        let expected: Vec<Row> = all.iter().filter(|r| r.1 < 140).cloned().collect();
        let tid_blocks: BTreeSet<u32> = index_tids(&t).iter().map(|tid| tid.0).collect();

        let bitmap = TidBitmap::from_tids(1024, index_tids(&t)).unwrap(); // 16 entries
        let (exact, lossy) = (bitmap.exact_pages(), bitmap.lossy_pages());
        assert!(lossy > 0 && bitmap.nentries() <= bitmap.max_entries());
        let pages: Vec<TbmPage> = bitmap.clone().into_iter().collect();
        let lossy_blocks: BTreeSet<u32> =
            pages.iter().filter(|p| p.lossy).map(|p| p.blkno).collect();

        let (rows, scanner) = bitmap_scan(&t, bitmap, Some(a_below_140()), 16);
        assert_eq!(rows, expected);
        let counts = scanner.counts();
        assert_eq!(
            (counts.exact_pages as usize, counts.lossy_pages as usize),
            (exact, lossy)
        );
        assert_eq!(exact + lossy, tid_blocks.len(), "every page visited once");
        // Removed by the recheck: the visible rows of lossy pages that do not match.
        let per_block: BTreeMap<u32, usize> = all.iter().fold(BTreeMap::new(), |mut m, r| {
            *m.entry(r.0 .0).or_default() += (r.1 >= 140) as usize;
            m
        });
        let removed: usize = lossy_blocks
            .iter()
            .map(|b| per_block.get(b).copied().unwrap_or(0))
            .sum();
        assert_eq!(counts.rows_removed_by_index_recheck as usize, removed);
        assert!(removed > 1000);

        // Without a recheck, lossy pages return everything they hold.
        let bitmap = TidBitmap::from_tids(1024, index_tids(&t)).unwrap();
        let (rows, _) = bitmap_scan(&t, bitmap, None, 16);
        assert_eq!(rows.len(), expected.len() + removed);
    }

    #[test]
    fn exact_pages_marked_recheck_are_rechecked() {
        let t = eic_table("bhs-recheck", 3000, IoMethod::Sync);
        let all = seq_scan(&t);
        // Every tuple of blocks 2 and 5, but marked "recheck": only matches come back.
        let mut bitmap = TidBitmap::new(1 << 20);
        let tids: Vec<(u32, u16)> = all
            .iter()
            .filter(|r| r.0 .0 == 2 || r.0 .0 == 5)
            .map(|r| r.0)
            .collect();
        bitmap.add_tuples(tids.iter().copied(), true).unwrap();
        // And offsets beyond the page's last line pointer are ignored.
        bitmap.add_tuple(5, 291, false).unwrap();
        let (rows, scanner) = bitmap_scan(&t, bitmap, Some(a_below_140()), 4);
        let expected: Vec<Row> = all
            .iter()
            .filter(|r| (r.0 .0 == 2 || r.0 .0 == 5) && r.1 < 140)
            .cloned()
            .collect();
        assert_eq!(rows, expected);
        assert_eq!(
            scanner.counts().rows_removed_by_index_recheck as usize,
            tids.len() - expected.len()
        );
        assert_eq!(scanner.counts().exact_pages, 2);
    }

    #[test]
    fn blocks_past_the_end_are_skipped() {
        let t = eic_table("bhs-end", 1000, IoMethod::Sync);
        let nblocks = t.rel.nblocks();
        let mut bitmap = TidBitmap::new(1 << 20);
        bitmap
            .add_tuples([(0, 1), (nblocks, 1), (nblocks + 300, 2)], false)
            .unwrap();
        bitmap.add_page(nblocks + 2 * PAGES_PER_CHUNK + 1); // (not in block 0's chunk)
        let (rows, scanner) = bitmap_scan(&t, bitmap, None, 16);
        assert_eq!(rows.len(), 1);
        assert_eq!(
            scanner.counts().exact_pages + scanner.counts().lossy_pages,
            1
        );
    }

    /// Reads issued for a cold bitmap heap scan at effective_io_concurrency `eic`.
    fn cold_reads(t: &EicTable, eic: usize) -> (Vec<Row>, BitmapHeapScanner, Vec<StreamEvent>) {
        t.evict();
        let bitmap = TidBitmap::from_tids(4 << 20, index_tids(t)).unwrap();
        t.evict(); // index_tids read the table
        let (rows, mut scanner) = bitmap_scan(t, bitmap, Some(a_below_140()), eic);
        let events = scanner.take_stream_events();
        (rows, scanner, events)
    }

    #[test]
    fn effective_io_concurrency_changes_the_reads_issued() {
        let t = eic_table("bhs-eic", NROWS, IoMethod::Sync);
        let (rows0, s0, ev0) = cold_reads(&t, 0);
        let (rows16, s16, ev16) = cold_reads(&t, 16);
        assert_eq!(rows0, rows16);
        let advised = |ev: &[StreamEvent]| {
            ev.iter()
                .filter(|e| matches!(e, StreamEvent::Read { advised: true, .. }))
                .count()
        };
        let reads = |ev: &[StreamEvent]| {
            ev.iter()
                .filter(|e| matches!(e, StreamEvent::Read { .. }))
                .count()
        };
        // Every block is read in both cases ...
        let blocks = s0.counts().exact_pages;
        assert_eq!(s0.acct().usage.shared_read, blocks);
        assert_eq!(s16.acct().usage.shared_read, blocks);
        // ... but at 0 each read is executed when needed, one at a time, without advice,
        assert_eq!(advised(&ev0), 0);
        assert_eq!(
            s0.stream_stats().inprogress_sum,
            0,
            "never two reads in flight"
        );
        assert!(s0.stream_stats().capacity <= 32);
        // while at 16 the stream reads ahead: advised reads, several in flight at once.
        assert!(
            advised(&ev16) > reads(&ev16) / 2,
            "{} of {}",
            advised(&ev16),
            reads(&ev16)
        );
        assert!(s16.stream_stats().inprogress_sum > 0);
        assert!(s16.stream_stats().distance_max > s0.stream_stats().distance_max);
        // (17 × io_combine_limit: more than the pool's share of 8192 / 64, with pins
        // borrowed.)
        assert_eq!(s16.stream_stats().capacity, 272);
        assert_eq!(s0.acct().usage.io_reads as usize, reads(&ev0));
        assert_eq!(s16.acct().usage.io_reads as usize, reads(&ev16));
    }

    #[test]
    fn worker_and_io_uring_return_the_same_rows() {
        for method in [IoMethod::Worker, IoMethod::IoUring] {
            let t = eic_table("bhs-methods", 20_000, method);
            let expected: Vec<Row> = seq_scan(&t).into_iter().filter(|r| r.1 < 140).collect();
            for (max_bytes, eic) in [(4 << 20, 0), (4 << 20, 16), (1024, 64)] {
                t.evict();
                let bitmap = TidBitmap::from_tids(max_bytes, index_tids(&t)).unwrap();
                t.evict();
                let (rows, scanner) = bitmap_scan(&t, bitmap, Some(a_below_140()), eic);
                assert_eq!(rows, expected, "{method:?} eic={eic}");
                drop(scanner);
                assert_eq!(t.db.pool.stats().pinned, 0);
                assert!(t.db.aio_rows().is_empty(), "no handle left in use");
            }
        }
    }
}
