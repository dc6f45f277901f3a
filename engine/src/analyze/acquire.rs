//! Reading a table for ANALYZE and VACUUM: the block sample through a maintenance read
//! stream, the row reservoir, and the live/dead classification of tuples.
//!
//! Both operations read through a read stream set up as PostgreSQL sets up its
//! maintenance streams: look-ahead bounded by `maintenance_io_concurrency` (not
//! `effective_io_concurrency`), and a `vacuum` buffer ring of `vacuum_buffer_usage_limit`
//! (2 MB by default) so that analyzing or vacuuming a big table does not flush the pool;
//! the stream may pin at most half the ring. Their I/O is counted in `pg_stat_io` under
//! context `vacuum`, for the client backend that ran the command. A limit of 0 means no
//! ring: the reads go through the normal clock sweep and count as context `normal`.
//!
//! # Which tuples count
//!
//! PostgreSQL classifies each tuple with `HeapTupleSatisfiesVacuum`; iolab's tuples are
//! only ever inserted (no UPDATE or DELETE yet), so the cases reduce to the inserting
//! transaction's fate:
//!
//! | inserting xid | ANALYZE | VACUUM |
//! |---|---|---|
//! | committed | live, sampled | live |
//! | aborted (a failed or rolled-back INSERT) | dead, not sampled | dead (not removed yet) |
//! | in progress, this transaction | live, sampled | live |
//! | in progress, another transaction | not counted | not counted |
//!
//! (A set `xmax` is honoured the same way, for when DELETE arrives.)

use std::sync::Arc;

use iolab_catalog::{PgResult, TableDef};
use iolab_stats::progress::analyze;

use crate::accounting::IoAccount;
use crate::buffer::{BufferRing, RingKind};
use crate::exec::context::ProgressReport;
use crate::exec::StatementContext;
use crate::heap::tuple;
use crate::storage::page;
use crate::storage::relfile::RelFile;
use crate::stream::ReadStream;
use crate::txn::{Clog, OwnXids, XidStatus, INVALID_XID};

use super::cost_delay::{CostDelay, CostDelaySettings};
use super::sampling::{BlockSampler, Prng, Reservoir};

/// How a tuple counts for ANALYZE and VACUUM (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TupleState {
    Live,
    Dead,
    /// Inserted by a transaction still running elsewhere: neither live nor dead yet.
    InProgress,
}

/// Classifies a tuple from its header, for a command of the transaction writing under
/// `own` (top 0 when it has none).
pub fn classify(t: &[u8], clog: &Clog, own: &OwnXids) -> TupleState {
    let xmin = tuple::xmin(t);
    if xmin == INVALID_XID {
        return TupleState::Dead;
    }
    if !own.contains(xmin) {
        match clog.status(xmin) {
            XidStatus::Committed => {}
            XidStatus::Aborted => return TupleState::Dead,
            XidStatus::InProgress => return TupleState::InProgress,
        }
    }
    let xmax = tuple::deleter(t);
    if xmax == INVALID_XID {
        return TupleState::Live;
    }
    if own.contains(xmax) {
        return TupleState::Dead;
    }
    match clog.status(xmax) {
        XidStatus::Committed => TupleState::Dead,
        XidStatus::Aborted | XidStatus::InProgress => TupleState::Live,
    }
}

/// The buffer ring of a maintenance command: `vacuum` context, `ring_buffers` buffers
/// (`vacuum_buffer_usage_limit` / 8 kB); none for 0.
pub fn maintenance_ring(ring_buffers: usize) -> Option<BufferRing> {
    (ring_buffers > 0).then(|| BufferRing::with_buffers(RingKind::Vacuum, ring_buffers))
}

/// Reads the blocks `source` yields from `table` through a maintenance read stream, under
/// the cost-based delay `cost`, and shows `visit` every tuple with its block, offset and
/// [`TupleState`]. Returns the blocks read, the I/O account (flushed to `pg_stat_io`) and
/// the time slept for the delay (if timed).
fn scan_tuples(
    ctx: &StatementContext,
    rel: Arc<RelFile>,
    ring_buffers: usize,
    source: impl FnMut() -> Option<(u32, ())> + Send + 'static,
    cost: CostDelaySettings,
    progress: &ProgressReport,
    mut visit: impl FnMut(u32, u16, &[u8], TupleState),
) -> PgResult<(u32, IoAccount, Option<std::time::Duration>)> {
    let config = ctx.stream_config(true, false);
    let mut stream = ReadStream::new(
        ctx.db.aio.clone(),
        ctx.db.pool.clone(),
        rel,
        maintenance_ring(ring_buffers),
        &config,
        ctx.new_account(),
        source,
    );
    let clog = ctx.db.txns.clog().clone();
    let mut throttle = CostDelay::new(cost, &stream.acct, analyze::DELAY_TIME);
    let mut blocks = 0u32;
    loop {
        throttle.point(&stream.acct, progress);
        let Some((buffer, ())) = stream.next_buffer()? else {
            break;
        };
        ctx.check_cancel()?;
        blocks += 1;
        progress.set(analyze::SAMPLE_BLKS_SCANNED, blocks);
        let blkno = buffer.blkno();
        let page = buffer.page();
        if page::page_is_new(&page) {
            continue;
        }
        for off in 1..=page::page_max_offset(&page) {
            if let Some(t) = page::page_item(&page, off) {
                visit(blkno, off, t, classify(t, &clog, &ctx.snapshot.own));
            }
        }
    }
    let mut acct = std::mem::take(&mut stream.acct);
    drop(stream);
    acct.flush();
    Ok((blocks, acct, throttle.delay_time()))
}

/// One sampled row: its TID and a copy of its tuple.
#[derive(Clone, Debug)]
pub struct SampledRow {
    pub blkno: u32,
    pub offset: u16,
    pub tuple: Vec<u8>,
}

/// The outcome of [`acquire_sample_rows`].
pub struct Sample {
    /// Sampled rows in TID order.
    pub rows: Vec<SampledRow>,
    /// Blocks read (`bs.m`).
    pub blocks_scanned: u32,
    /// Blocks in the table when sampling started.
    pub total_blocks: u32,
    pub live_rows: f64,
    pub dead_rows: f64,
    /// Live rows extrapolated to the whole table.
    pub total_rows: f64,
    pub total_dead_rows: f64,
    /// The I/O of the sample.
    pub acct: IoAccount,
    /// Time slept for the cost-based delay, if `track_cost_delay_timing` was on.
    pub delay_time: Option<std::time::Duration>,
}

/// PostgreSQL's `acquire_sample_rows`: up to `targrows` blocks chosen by Algorithm S, read
/// in ascending order through a maintenance stream; their live rows offered to a reservoir
/// of `targrows`; the result sorted by TID, with live and dead totals extrapolated from the
/// blocks read: `round(live / blocks_read × total_blocks)`.
pub fn acquire_sample_rows(
    ctx: &StatementContext,
    table: &TableDef,
    targrows: usize,
    ring_buffers: usize,
    rng: &mut Prng,
    cost: CostDelaySettings,
    progress: &ProgressReport,
) -> PgResult<Sample> {
    assert!(targrows > 0, "a sample of at least one row");
    let rel = ctx.db.relfile(table.relfilenode)?;
    let total_blocks = rel.nblocks();
    let mut sampler = BlockSampler::new(
        total_blocks,
        u32::try_from(targrows).unwrap_or(u32::MAX),
        Prng::seeded(rng.next_u64()),
    );
    progress.set(analyze::PHASE, analyze::ACQUIRING_SAMPLE_ROWS);
    progress.set(analyze::SAMPLE_BLKS_TOTAL, sampler.sample_size());
    let mut reservoir: Reservoir<SampledRow> =
        Reservoir::new(targrows, Prng::seeded(rng.next_u64()));
    let (mut live_rows, mut dead_rows) = (0f64, 0f64);
    let (blocks_scanned, acct, delay_time) = scan_tuples(
        ctx,
        rel,
        ring_buffers,
        move || sampler.next().map(|b| (b, ())),
        cost,
        progress,
        |blkno, offset, t, state| match state {
            TupleState::Live => {
                live_rows += 1.0;
                reservoir.offer(|| SampledRow {
                    blkno,
                    offset,
                    tuple: t.to_vec(),
                });
            }
            TupleState::Dead => dead_rows += 1.0,
            TupleState::InProgress => {}
        },
    )?;
    let mut rows = reservoir.into_items();
    rows.sort_unstable_by_key(|r| (r.blkno, r.offset));
    let extrapolate = |n: f64| {
        if blocks_scanned > 0 {
            (n / blocks_scanned as f64 * total_blocks as f64 + 0.5).floor()
        } else {
            0.0
        }
    };
    Ok(Sample {
        rows,
        blocks_scanned,
        total_blocks,
        live_rows,
        dead_rows,
        total_rows: extrapolate(live_rows),
        total_dead_rows: extrapolate(dead_rows),
        delay_time,
        acct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::tuple::test_tuple;
    use crate::storage::relfile::tests::TempDir;
    use crate::txn::Xid;
    use TupleState::{Dead, InProgress, Live};

    fn header(xmin: Xid, xmax: Xid) -> Vec<u8> {
        test_tuple(xmin, xmax, 0, 0)
    }

    #[test]
    fn tuples_classify_as_vacuum_sees_them() {
        let dir = TempDir::new("classify");
        let clog = Clog::open(&dir.0.join("clog")).unwrap();
        clog.set_status(10, XidStatus::Committed).unwrap();
        clog.set_status(11, XidStatus::Aborted).unwrap();
        let none = OwnXids::default();
        // 12 is still running.
        assert_eq!(classify(&header(10, 0), &clog, &none), Live);
        assert_eq!(
            classify(&header(11, 0), &clog, &none),
            Dead,
            "aborted insert"
        );
        assert_eq!(classify(&header(12, 0), &clog, &none), InProgress);
        assert_eq!(
            classify(&header(12, 0), &clog, &OwnXids::of(12)),
            Live,
            "our own insert"
        );
        assert_eq!(
            classify(&header(10, 10), &clog, &none),
            Dead,
            "committed delete"
        );
        assert_eq!(
            classify(&header(10, 11), &clog, &none),
            Live,
            "aborted delete"
        );
        assert_eq!(
            classify(&header(10, 12), &clog, &none),
            Live,
            "delete in progress"
        );
        assert_eq!(
            classify(&header(10, 12), &clog, &OwnXids::of(12)),
            Dead,
            "our own delete"
        );
    }

    #[test]
    fn ring_of_zero_is_no_ring() {
        assert!(maintenance_ring(0).is_none());
        let ring = maintenance_ring(256).unwrap();
        assert_eq!(ring.kind(), RingKind::Vacuum);
        assert_eq!(ring.len(), 256);
    }
}
