//! Turning the heap tuples a scan keeps into an Arrow batch: the decoded columns of the
//! projection, and the `ctid` system column when the projection names it (table column
//! number `ncolumns`), which comes from where each tuple lies rather than from its bytes.

use std::sync::Arc;

use datafusion::arrow::array::StringArray;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use iolab_catalog::{PgError, PgResult};

use crate::heap::codec::{BatchDecoder, TupleLayout};

/// The `ctid` column of a projection: its output position and the rows' locations.
struct CtidColumn {
    position: usize,
    ctids: Vec<(u32, u16)>,
}

/// Collects tuples into the next batch of a scan's output.
pub struct RowCollector {
    decoder: BatchDecoder,
    ctid: Option<CtidColumn>,
    schema: SchemaRef,
}

impl RowCollector {
    /// Rows of a table whose columns are `columns`, output as `projection` (table column
    /// numbers; `columns.len()` is `ctid`) in batches of `schema`.
    pub fn new(
        columns: impl Into<TupleLayout>,
        projection: Vec<usize>,
        schema: SchemaRef,
    ) -> RowCollector {
        let layout: TupleLayout = columns.into();
        let ncolumns = layout.columns().len();
        let ctid = projection
            .iter()
            .position(|&c| c == ncolumns)
            .map(|position| CtidColumn {
                position,
                ctids: Vec::new(),
            });
        let projection = projection.into_iter().filter(|&c| c != ncolumns).collect();
        RowCollector {
            decoder: BatchDecoder::with_layout(layout, projection),
            ctid,
            schema,
        }
    }

    /// How the table's tuples are laid out (to read a column of a raw tuple).
    pub fn layout(&self) -> &TupleLayout {
        self.decoder.layout()
    }

    /// Rows collected since the last batch.
    pub fn len(&self) -> usize {
        self.decoder.len()
    }

    pub fn is_empty(&self) -> bool {
        self.decoder.is_empty()
    }

    /// Whether the batch holds no columns at all (`count(*)`): rows need only be counted.
    pub fn counts_only(&self) -> bool {
        self.ctid.is_none() && self.decoder.decodes_no_columns()
    }

    /// Count `n` rows of a [`counts_only`](Self::counts_only) collector.
    pub fn push_count(&mut self, n: usize) {
        self.decoder.append_rows(n);
    }

    /// Add the tuple at line pointer `off` of block `blkno`.
    pub fn push(&mut self, tuple: &[u8], blkno: u32, off: u16) -> PgResult<()> {
        self.decoder.append(tuple)?;
        if let Some(ctid) = &mut self.ctid {
            ctid.ctids.push((blkno, off));
        }
        Ok(())
    }

    /// The rows collected so far as a batch; the collector starts over empty.
    pub fn finish(&mut self) -> PgResult<RecordBatch> {
        let Some(ctid) = &mut self.ctid else {
            return self.decoder.finish(&self.schema);
        };
        let (mut arrays, rows) = self.decoder.finish_arrays()?;
        let text: StringArray = ctid
            .ctids
            .drain(..)
            .map(|(b, o)| Some(format!("({b},{o})")))
            .collect();
        arrays.insert(ctid.position, Arc::new(text));
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(|e| PgError::internal(e.to_string()))
    }
}
