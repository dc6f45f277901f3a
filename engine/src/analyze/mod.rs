//! ANALYZE and VACUUM: statistics for the planner, page and row counts for `pg_class`.
//!
//! # Why a sample
//!
//! The planner needs, for each column, how many rows a condition keeps: what fraction is
//! NULL, how many distinct values there are, which values are common and how common, and
//! how the rest are spread. Reading the whole table for that would cost as much as the
//! queries it is meant to speed up, so ANALYZE reads a random sample of fixed size —
//! `300 × default_statistics_target` rows (30 000 by default), a size that bounds the error
//! of a `target`-bucket histogram independently of the table's size (Chaudhuri, Motwani
//! and Narasayya) — and derives everything from it.
//!
//! # How: two stages, one read stream
//!
//! ```text
//!   Algorithm S picks min(targrows, nblocks) block numbers, ascending
//!       └─▶ maintenance read stream (maintenance_io_concurrency, vacuum ring)
//!             └─▶ each block's live tuples ─▶ Vitter reservoir of targrows rows
//!                   └─▶ rows sorted by TID ─▶ per column: compute.rs ─▶ catalog
//! ```
//!
//! Choosing *blocks* first keeps the I/O bounded (at most `targrows` blocks, read in
//! ascending order so the stream can combine neighbours and look ahead); the reservoir
//! then makes every live row of those blocks equally likely to end in the sample. Live and
//! dead totals are extrapolated from the blocks read (`sampling.rs`, `acquire.rs`). The
//! sample is sorted back into physical order so that the correlation statistic can compare
//! physical with logical order (`compute.rs`).
//!
//! The result replaces the analyzed columns' statistics in the catalog, and sets
//! `pg_class.relpages` (the blocks when ANALYZE started) and `reltuples` (the
//! extrapolated live rows). An empty table gets `reltuples = 0` and no column statistics.
//!
//! # VACUUM
//!
//! VACUUM removes the tuples no snapshot can see any more (rows of aborted inserts, rows
//! deleted or updated by transactions every snapshot sees as committed) from the table
//! and their entries from its indexes, in PostgreSQL's three phases (`vacuum.rs`), and
//! records the exact `relpages` / `reltuples`. Its VERBOSE report is PostgreSQL 18's,
//! with what iolab did: no pages truncated or frozen, no index pages deleted. Pages left
//! with only rows everyone sees are marked all-visible, and later VACUUMs skip long runs
//! of them (`heap::visibility_map`), estimating their rows as PostgreSQL does.

//! # Messages
//!
//! Each operation returns its INFO messages (`report.rs`), worded as PostgreSQL 18's;
//! the caller sends them when VERBOSE was asked for.

pub mod acquire;
pub mod compute;
pub mod cost_delay;
pub mod report;
pub mod sampling;
pub mod vacuum;

use iolab_catalog::{ColumnStatistics, PgResult, PgType, StatValue, TableDef};

use crate::exec::StatementContext;
use crate::heap::codec::{Datum, TupleLayout};

use acquire::{acquire_sample_rows, SampledRow};
use compute::{compute_column_stats, pg_numeric_stored_size, varlena_stored_size, SampledValue};
use iolab_stats::progress::{analyze, ProgressCommand};
use report::{PhaseUsage, ResourceUsage, VacuumCounts};
use sampling::Prng;

/// The rows ANALYZE samples per unit of statistics target (PostgreSQL's `300 × target`).
pub const ROWS_PER_TARGET: usize = 300;

/// How to run ANALYZE on one table.
#[derive(Clone, Debug)]
pub struct AnalyzeOptions {
    /// The database name, for messages (`finished analyzing table "db.schema.t"`).
    pub database: String,
    /// `default_statistics_target` (1..10000): MCV entries and histogram buckets.
    pub statistics_target: i32,
    /// 0-based columns to analyze; `None` = every column.
    pub columns: Option<Vec<usize>>,
    /// The vacuum ring's size in buffers (`vacuum_buffer_usage_limit` / 8 kB; 0 = none).
    pub ring_buffers: usize,
    /// Seed for the block and row samplers; `None` = random (as PostgreSQL).
    pub seed: Option<u64>,
    /// The cost-based delay's settings (`vacuum_cost_*`).
    pub cost: cost_delay::CostDelaySettings,
}

/// What ANALYZE did to one table.
#[derive(Debug)]
pub struct AnalyzeResult {
    /// `pg_class.relpages` recorded.
    pub relpages: u32,
    /// `pg_class.reltuples` recorded.
    pub reltuples: f64,
    pub blocks_scanned: u32,
    pub live_rows: f64,
    pub dead_rows: f64,
    pub sample_rows: usize,
    /// The statistics recorded, one per analyzed column (none for an empty sample).
    pub columns: Vec<ColumnStatistics>,
    pub phase: PhaseUsage,
    /// The VERBOSE messages, in order (each one INFO message).
    pub messages: Vec<String>,
}

/// ANALYZE of one table: sample, compute, record in the catalog (see the module comment).
/// The statement's buffer usage grows by the sample's.
pub fn analyze_table(
    ctx: &StatementContext,
    table: &TableDef,
    options: &AnalyzeOptions,
) -> PgResult<AnalyzeResult> {
    let rusage = ResourceUsage::start();
    let mut messages = vec![report::analyzing(&table.schema, &table.name)];
    let target = options.statistics_target.clamp(1, 10_000) as usize;
    let targrows = (ROWS_PER_TARGET * target).max(100);
    let mut rng = match options.seed {
        Some(seed) => Prng::seeded(seed),
        None => Prng::from_entropy(),
    };
    let progress = ctx.report_progress(ProgressCommand::Analyze, table.oid);
    let ring_buffers = options.ring_buffers;
    let sample = acquire_sample_rows(
        ctx,
        table,
        targrows,
        ring_buffers,
        &mut rng,
        options.cost,
        &progress,
    )?;
    progress.set(analyze::PHASE, analyze::COMPUTING_STATISTICS);
    messages.push(report::sample_summary(
        &table.name,
        sample.blocks_scanned,
        sample.total_blocks,
        sample.live_rows,
        sample.dead_rows,
        sample.rows.len(),
        sample.total_rows,
    ));
    let columns: Vec<usize> = match &options.columns {
        Some(c) => c.clone(),
        None => (0..table.columns.len()).collect(),
    };
    let layout = TupleLayout::for_table(table);
    let mut stats = Vec::with_capacity(columns.len());
    if !sample.rows.is_empty() {
        for &col in &columns {
            ctx.check_cancel()?;
            let ty = table.columns[col].ty;
            if ty == PgType::Interval {
                continue; // iolab keeps no statistics of intervals (no order for histograms)
            }
            let values = column_values(&layout, &sample.rows, col, ty)?;
            if let Some(s) =
                compute_column_stats(col as i16 + 1, ty, &values, sample.total_rows, target)
            {
                stats.push(s);
            }
        }
    }
    progress.set(analyze::PHASE, analyze::FINALIZING);
    ctx.db.catalog.record_analyze(
        table.oid,
        sample.total_blocks,
        sample.total_rows,
        stats.clone(),
    )?;
    ctx.add_usage(&sample.acct.usage);
    let phase = PhaseUsage {
        usage: sample.acct.usage,
        track_io_timing: ctx.track_io_timing,
        delay_time: sample.delay_time,
        elapsed: rusage.elapsed(),
    };
    ctx.db.io_stats.relation_counts.analyzed(
        table.relfilenode,
        sample.total_rows,
        sample.total_dead_rows,
        phase.elapsed,
    );
    messages.push(report::finished_analyzing(
        &options.database,
        &table.schema,
        &table.name,
        &phase,
        &rusage,
    ));
    Ok(AnalyzeResult {
        relpages: sample.total_blocks,
        reltuples: sample.total_rows,
        blocks_scanned: sample.blocks_scanned,
        live_rows: sample.live_rows,
        dead_rows: sample.dead_rows,
        sample_rows: sample.rows.len(),
        columns: stats,
        phase,
        messages,
    })
}

/// Column `col`'s value in each sampled row, with PostgreSQL's stored width.
fn column_values(
    layout: &TupleLayout,
    rows: &[SampledRow],
    col: usize,
    ty: PgType,
) -> PgResult<Vec<SampledValue>> {
    rows.iter()
        .map(|r| {
            Ok(match layout.datum(&r.tuple, col)? {
                Datum::Null => None,
                Datum::Bool(b) => Some((StatValue::Bool(b), 1)),
                Datum::Int2(i) => Some((StatValue::Int(i as i64), 2)),
                Datum::Int4(i) => Some((StatValue::Int(i as i64), 4)),
                Datum::Int8(i) => Some((StatValue::Int(i), 8)),
                Datum::Float4(f) => Some((StatValue::Float(f as f64), 4)),
                Datum::Float8(f) => Some((StatValue::Float(f), 8)),
                Datum::Numeric(n) => {
                    let scale = match ty {
                        PgType::Numeric { scale, .. } => scale,
                        _ => 0,
                    };
                    Some((StatValue::Numeric(n), pg_numeric_stored_size(n, scale)))
                }
                Datum::Text(s) => {
                    Some((StatValue::Text(s.to_string()), varlena_stored_size(s.len())))
                }
                Datum::Date(d) => Some((StatValue::Date(d), 4)),
                Datum::Timestamp(t) | Datum::Timestamptz(t) => Some((StatValue::Timestamp(t), 8)),
                Datum::Interval(_) => unreachable!("ANALYZE skips interval columns"),
            })
        })
        .collect()
}

/// The live rows of `table` after a VACUUM that read `scanned` of its `total` pages and
/// counted `counted` live rows on them (PostgreSQL's `vac_estimate_reltuples`).
fn estimate_live_rows(table: &TableDef, total: u32, scanned: u32, counted: u64) -> u64 {
    if scanned >= total || table.relpages == 0 || table.reltuples < 0.0 {
        return counted;
    }
    let density = table.reltuples / table.relpages as f64;
    (density * (total - scanned) as f64 + counted as f64 + 0.5).floor() as u64
}

/// How to run VACUUM on one table.
#[derive(Clone, Debug)]
pub struct VacuumOptions {
    pub database: String,
    /// FREEZE (or FULL): reported as an aggressive vacuum.
    pub aggressive: bool,
    pub ring_buffers: usize,
    /// Bounds the dead line pointers remembered for one round of index vacuuming.
    pub maintenance_work_mem_kb: usize,
    /// The cost-based delay's settings (`vacuum_cost_*`).
    pub cost: cost_delay::CostDelaySettings,
}

/// What VACUUM did to one table.
#[derive(Debug)]
pub struct VacuumResult {
    pub counts: VacuumCounts,
    pub phase: PhaseUsage,
    pub messages: Vec<String>,
}

/// VACUUM of one table: a full scan through a maintenance stream, exact `relpages` and
/// `reltuples` recorded (see the module comment).
pub fn vacuum_table(
    ctx: &StatementContext,
    table: &TableDef,
    options: &VacuumOptions,
) -> PgResult<VacuumResult> {
    let rusage = ResourceUsage::start();
    let messages = vec![report::vacuuming(
        &options.database,
        &table.schema,
        &table.name,
        options.aggressive,
    )];
    // What a snapshot may still see stays (PostgreSQL's OldestXmin, taken at the start).
    let removable_cutoff = ctx.db.txns.oldest_nonremovable();
    let heap = vacuum::vacuum_heap(
        ctx,
        table,
        options.ring_buffers,
        options.maintenance_work_mem_kb,
        options.cost,
        removable_cutoff,
    )?;
    // Live rows: counted on the pages read, PostgreSQL's estimate for the skipped ones
    // (`vac_estimate_reltuples`: the old density over the pages not read).
    let live = estimate_live_rows(table, heap.total_blocks, heap.blocks_scanned, heap.live);
    let remaining = live + heap.recently_dead;
    ctx.db
        .catalog
        .set_stats(table.oid, live as f64, heap.total_blocks)?;
    ctx.add_usage(&heap.acct.usage);
    let counts = VacuumCounts {
        rel_pages: heap.total_blocks,
        scanned_pages: heap.blocks_scanned,
        removed_tuples: heap.removed,
        remaining_tuples: remaining,
        dead_tuples: heap.recently_dead,
        removable_cutoff,
        next_xid_at_end: ctx.db.txns.next_xid(),
        index_scans: heap.index_scans,
        pages_with_dead_items: heap.pages_with_dead_items,
        dead_items: heap.dead_items,
        pages_set_all_visible: heap.pages_set_all_visible,
        indexes: if heap.index_scans > 0 {
            heap.indexes
                .iter()
                .map(|(name, v)| (name.clone(), v.pages))
                .collect()
        } else {
            Vec::new()
        },
    };
    let phase = PhaseUsage {
        usage: heap.acct.usage,
        track_io_timing: ctx.track_io_timing,
        delay_time: heap.delay_time,
        elapsed: rusage.elapsed(),
    };
    ctx.db.io_stats.relation_counts.vacuumed(
        table.relfilenode,
        live,
        heap.recently_dead,
        phase.elapsed,
    );
    let mut messages = messages;
    messages.push(report::finished_vacuuming(
        &options.database,
        &table.schema,
        &table.name,
        &counts,
        &phase,
        &rusage,
    ));
    Ok(VacuumResult {
        counts,
        phase,
        messages,
    })
}
