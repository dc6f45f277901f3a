//! Heap access: appending tuples to a table's pages and reading them back in block order.
//!
//! Insertion fills the table's last page and then extends the relation one page at a
//! time, holding one pinned page at a time; a whole statement's inserts go through a
//! bulk-write buffer ring so that loading a big table does not flush the rest of the
//! buffer pool (PostgreSQL's BAS_BULKWRITE strategy). There is no free space map:
//! without DELETE or UPDATE, free space exists only at the end of a table.
//!
//! A sequential scan reads blocks `0 .. nblocks` (nblocks fixed when the scan starts, so
//! it never sees pages appended by its own statement), keeps the tuples its snapshot can
//! see, and decodes the projected attributes into Arrow batches. Scans of tables larger
//! than a quarter of the pool read through a 256 KiB bulk-read ring. The system column
//! `ctid` (a tuple's block and line pointer, `(0,1)`) is column number `ncolumns` of the
//! projection when a query asks for it.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use iolab_catalog::{PgError, PgResult, PgType};
use iolab_stats::BufferUsage;

use crate::buffer::{BufferPool, BufferRing, PinnedBuffer};
use crate::heap::codec::{BatchDecoder, TupleEncoder};
use crate::heap::tuple;
use crate::storage::page;
use crate::storage::relfile::RelFile;
use crate::txn::{VisibilityChecker, Xid};

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
    pub usage: BufferUsage,
    pub inserted: u64,
    track_io_timing: bool,
}

impl HeapInserter {
    pub fn new(
        pool: Arc<BufferPool>,
        rel: Arc<RelFile>,
        columns: Vec<PgType>,
        xid: Xid,
        cid: u32,
        track_io_timing: bool,
    ) -> HeapInserter {
        let ring = BufferRing::bulk_write();
        HeapInserter {
            pool,
            rel,
            xid,
            cid,
            encoder: TupleEncoder::new(columns),
            ring,
            target: None,
            tuple_buf: Vec::with_capacity(256),
            usage: BufferUsage::default(),
            inserted: 0,
            track_io_timing,
        }
    }

    /// Inserts every row of `arrays` (already of the table's exact Arrow types).
    pub fn insert_arrays(&mut self, arrays: &[ArrayRef], rows: usize) -> PgResult<()> {
        self.encoder.prepare(arrays)?;
        for row in 0..rows {
            self.tuple_buf.clear();
            self.encoder
                .encode_row(row, self.xid, self.cid, &mut self.tuple_buf)?;
            self.place_tuple()?;
        }
        Ok(())
    }

    fn place_tuple(&mut self) -> PgResult<()> {
        if self.target.is_none() {
            self.target = Some(self.first_target()?);
        }
        loop {
            let buffer = self.target.as_ref().expect("target page pinned");
            let added = {
                let mut page = buffer.page_mut();
                let added = page::page_add_item(&mut page, &self.tuple_buf);
                if let Some(off) = added {
                    let item = page::page_item_mut(&mut page, off).expect("item just added");
                    tuple::set_ctid(item, buffer.blkno(), off);
                }
                added
            };
            if added.is_some() {
                buffer.mark_dirty(&mut self.usage);
                self.inserted += 1;
                return Ok(());
            }
            // The page is full: continue on a new one.
            self.target = None;
            self.target = Some(self.new_page()?);
        }
    }

    fn new_page(&mut self) -> PgResult<PinnedBuffer> {
        let (_, buffer) = self
            .pool
            .new_block(&self.rel, Some(&mut self.ring), &mut self.usage)?;
        page::page_init(&mut buffer.page_mut(), 0);
        buffer.mark_dirty(&mut self.usage);
        Ok(buffer)
    }

    /// The table's last page if it has one, else a new first page.
    fn first_target(&mut self) -> PgResult<PinnedBuffer> {
        let nblocks = self.rel.nblocks();
        if nblocks == 0 {
            return self.new_page();
        }
        let buffer = self.pool.read_buffer(
            &self.rel,
            nblocks - 1,
            Some(&mut self.ring),
            &mut self.usage,
            self.track_io_timing,
        )?;
        let is_new = page::page_is_new(&buffer.page());
        if is_new {
            page::page_init(&mut buffer.page_mut(), 0);
            buffer.mark_dirty(&mut self.usage);
        }
        Ok(buffer)
    }

    /// Releases the last pinned page.
    pub fn finish(&mut self) {
        self.target = None;
    }
}

/// Reads a table's visible tuples in block order, a batch at a time.
pub struct HeapScanner {
    pool: Arc<BufferPool>,
    rel: Arc<RelFile>,
    next_block: u32,
    end_block: u32,
    ring: Option<BufferRing>,
    visibility: VisibilityChecker,
    decoder: BatchDecoder,
    /// Output position of the `ctid` column, and the ctids of the rows decoded so far.
    ctid: Option<(usize, Vec<(u32, u16)>)>,
    schema: SchemaRef,
    pub usage: BufferUsage,
    track_io_timing: bool,
}

/// Rows per output batch (a batch is emitted at the first page boundary past this).
pub const SCAN_BATCH_ROWS: usize = 8192;

impl HeapScanner {
    pub fn new(
        pool: Arc<BufferPool>,
        rel: Arc<RelFile>,
        columns: Vec<PgType>,
        projection: Vec<usize>,
        schema: SchemaRef,
        visibility: VisibilityChecker,
        track_io_timing: bool,
    ) -> HeapScanner {
        let end_block = rel.nblocks();
        let ring = pool.wants_ring(end_block).then(BufferRing::bulk_read);
        let ncolumns = columns.len();
        let ctid = projection
            .iter()
            .position(|&c| c == ncolumns)
            .map(|p| (p, Vec::new()));
        let projection = projection.into_iter().filter(|&c| c != ncolumns).collect();
        HeapScanner {
            pool,
            rel,
            next_block: 0,
            end_block,
            ring,
            visibility,
            decoder: BatchDecoder::new(columns, projection),
            ctid,
            schema,
            usage: BufferUsage::default(),
            track_io_timing,
        }
    }

    /// Blocks the scan reads in all.
    pub fn nblocks(&self) -> u32 {
        self.end_block
    }

    /// The next batch of visible rows, or `None` at the end of the table.
    pub fn next_batch(&mut self) -> PgResult<Option<RecordBatch>> {
        while self.next_block < self.end_block && self.decoder.len() < SCAN_BATCH_ROWS {
            let blkno = self.next_block;
            self.next_block += 1;
            let buffer = self.pool.read_buffer(
                &self.rel,
                blkno,
                self.ring.as_mut(),
                &mut self.usage,
                self.track_io_timing,
            )?;
            let page = buffer.page();
            if page::page_is_new(&page) {
                continue;
            }
            for off in 1..=page::page_max_offset(&page) {
                if let Some(t) = page::page_item(&page, off) {
                    if self
                        .visibility
                        .visible(tuple::xmin(t), tuple::cid(t), tuple::xmax(t))
                    {
                        self.decoder.append(t)?;
                        if let Some((_, ctids)) = &mut self.ctid {
                            ctids.push((blkno, off));
                        }
                    }
                }
            }
        }
        if self.decoder.is_empty() {
            return Ok(None);
        }
        let Some((position, ctids)) = &mut self.ctid else {
            return self.decoder.finish(&self.schema).map(Some);
        };
        let (mut arrays, rows) = self.decoder.finish_arrays()?;
        let text: StringArray = ctids
            .drain(..)
            .map(|(b, o)| Some(format!("({b},{o})")))
            .collect();
        arrays.insert(*position, Arc::new(text));
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map(Some)
        .map_err(|e| PgError::internal(e.to_string()))
    }
}
