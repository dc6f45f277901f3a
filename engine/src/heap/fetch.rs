//! Reading given rows by TID: what `INSERT … ON CONFLICT DO UPDATE` reads of the rows its
//! proposed rows conflict with (their values for the SET expressions, and who wrote them).
//! Each row is read through the pool as it is now, without a snapshot: the uniqueness
//! check (`heap::liveness`) just found it live.

use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use iolab_catalog::{PgError, PgResult, TableDef};

use crate::accounting::IoAccount;
use crate::buffer::BufferPool;
use crate::exec::table::table_schema;
use crate::heap::codec::TupleLayout;
use crate::heap::rows::RowCollector;
use crate::heap::tuple;
use crate::storage::page;
use crate::storage::relfile::RelFile;
use crate::txn::Xid;

/// Rows read by [`fetch`].
pub struct Fetched {
    /// The rows' values, in the table's columns, then `ctid`.
    pub batch: RecordBatch,
    /// Each row's `t_xmin` and `t_cid`.
    pub written_by: Vec<(Xid, u32)>,
}

/// The rows of `table` (stored in `rel`) at `tids`, in that order.
pub fn fetch(
    pool: &Arc<BufferPool>,
    rel: &Arc<RelFile>,
    table: &TableDef,
    tids: &[(u32, u16)],
    acct: &mut IoAccount,
) -> PgResult<Fetched> {
    let schema = table_schema(table, true);
    let projection = (0..schema.fields().len()).collect();
    let mut rows = RowCollector::new(TupleLayout::for_table(table), projection, schema);
    let mut written_by = Vec::with_capacity(tids.len());
    for &(blkno, off) in tids {
        let buffer = pool.read_buffer(rel, blkno, None, acct)?;
        let page = buffer.page();
        let t = page::page_item(&page, off).ok_or_else(|| {
            PgError::internal(format!(
                "no tuple at ({blkno},{off}) of relation file base/{}",
                rel.relfilenode()
            ))
        })?;
        written_by.push((tuple::xmin(t), tuple::cid(t)));
        rows.push(t, blkno, off)?;
    }
    Ok(Fetched {
        batch: rows.finish()?,
        written_by,
    })
}
