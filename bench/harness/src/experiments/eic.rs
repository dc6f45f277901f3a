//! Experiment eic (seed 001): the bitmap heap scan under every effective_io_concurrency and
//! io_method, dense (a < 140, most of the heap, in block order) and sparse (a < 5, random).

use super::{cold_explain, configs, for_system, predicates, start_for, IoCounts};
use crate::client::Res;
use crate::context::{Ctx, Sys};
use crate::explain::Plan;
use crate::results::Cell;
use crate::sqlfile::script;

pub const EICS: [u32; 6] = [0, 1, 16, 64, 256, 512];

pub async fn run(ctx: &mut Ctx) -> Res<()> {
    let file = script("eic");
    for sys in ctx.systems() {
        for config in configs(ctx, &["sync", "worker", "io_uring"], &[false]) {
            let mut cells: Vec<Cell> = Vec::new();
            for (query, _) in predicates("eic_uniform") {
                for eic in EICS {
                    cells.push(Cell::new(
                        "eic",
                        sys.name(),
                        &config.io_method,
                        config.io(),
                        query,
                        &eic.to_string(),
                    ));
                }
            }
            if !start_for(ctx, sys, &config, &mut cells).await {
                continue;
            }
            for r in 1..=ctx.repeat {
                for cell in cells.iter_mut() {
                    let predicate = predicates("eic_uniform")
                        .iter()
                        .find(|q| q.0 == cell.variant)
                        .expect("known query")
                        .1;
                    let vars = [
                        ("eic", cell.setting.clone()),
                        ("predicate", predicate.to_string()),
                    ];
                    let statements = for_system(sys, file.statements("run", &vars));
                    let (plan, delta) = cold_explain(ctx, sys, &statements).await?;
                    record_bitmap(ctx, cell, sys, "eic_uniform", &plan, delta);
                    eprintln!("  [{r}/{}] {}", ctx.repeat, progress_line(cell, &plan));
                }
            }
            ctx.stop(sys);
            ctx.results.cells.extend(cells);
        }
    }
    same_blocks_everywhere(ctx, "eic");
    Ok(())
}

/// One line of progress for a bitmap heap scan run.
pub fn progress_line(cell: &Cell, plan: &Plan) -> String {
    let top = plan.top().cloned().unwrap_or_default();
    format!(
        "{} {}/{} {} {}: {:.1} ms, {} heap blocks, read {:.1} ms, wait {:.1} ms ({})",
        cell.system,
        cell.io_method,
        cell.io,
        cell.variant,
        cell.setting,
        plan.execution_ms.unwrap_or(f64::NAN),
        top.heap_exact + top.heap_lossy,
        top.io_read_ms,
        top.io_wait_ms,
        top.name
    )
}

/// Adds one bitmap heap scan run's figures to `cell` and checks them:
/// the plan is a Bitmap Heap Scan; Heap Blocks equals the blocks holding matching rows
/// (counted by ctid); cold, the heap node's reads minus the index's equal the heap blocks;
/// iolab's pg_stat_io read the blocks EXPLAIN reports (plus at most the planner's 2 index
/// pages, which EXPLAIN does not show).
pub fn record_bitmap(
    ctx: &mut Ctx,
    cell: &mut Cell,
    sys: Sys,
    table: &str,
    plan: &Plan,
    delta: Option<IoCounts>,
) {
    let exp = cell.experiment.clone();
    let top = plan.top().cloned().unwrap_or_default();
    let heap_blocks = top.heap_exact + top.heap_lossy;
    let exec = plan.execution_ms.unwrap_or(f64::NAN);
    cell.add("exec_ms", "ms", exec);
    cell.add("read_ms", "ms", top.io_read_ms);
    cell.add("wait_ms", "ms", top.io_wait_ms);
    cell.add("heap_blocks", "blocks", heap_blocks);
    cell.add("shared_read", "blocks", top.shared_read);
    if exec > 0.0 {
        cell.add("heap_blocks_per_s", "blocks/s", heap_blocks / exec * 1000.0);
    }
    if let Some([p50, p99, p999]) = top.latency_ms {
        cell.add("p50_ms", "ms", p50);
        cell.add("p99_ms", "ms", p99);
        cell.add("p999_ms", "ms", p999);
    }
    if let Some(d) = delta {
        cell.add("reads", "I/Os", d.reads);
        cell.add("blocks_read", "blocks", d.blocks);
        cell.add("advice_calls", "calls", d.waits);
    }
    let label = format!(
        "{} {}/{} {} {}",
        cell.system, cell.io_method, cell.io, cell.variant, cell.setting
    );
    ctx.tally(
        &exp,
        "the plan is a Bitmap Heap Scan",
        top.name == "Bitmap Heap Scan",
        || format!("{label}: {}", top.name),
    );
    let expected = ctx
        .facts
        .get(&(sys, table.to_string()))
        .and_then(|f| f.blocks.get(&cell.variant))
        .copied();
    if let Some(expected) = expected {
        ctx.tally(
            &exp,
            "Heap Blocks exact+lossy = heap blocks holding matching rows (by ctid)",
            heap_blocks == expected,
            || format!("{label}: Heap Blocks {heap_blocks}, ctid count {expected}"),
        );
    }
    let index = plan.node("Bitmap Index Scan").cloned().unwrap_or_default();
    let index_read = index.shared_read;
    if top.heap_lossy == 0.0 {
        let (found, kept, removed) = (
            index.actual_rows,
            top.actual_rows,
            top.rows_removed_by_filter,
        );
        ctx.tally(
            &exp,
            "rows from the index = rows returned + Rows Removed by Filter",
            found == kept + removed,
            || format!("{label}: index {found}, returned {kept}, removed {removed}"),
        );
    }
    ctx.tally(
        &exp,
        "cold: heap node shared read - index shared read = Heap Blocks",
        top.shared_read - index_read == heap_blocks,
        || {
            format!(
                "{label}: read {} - index {index_read} vs {heap_blocks} heap blocks",
                top.shared_read
            )
        },
    );
    if let Some(d) = delta {
        let extra = d.blocks - top.shared_read;
        ctx.tally(
            &exp,
            "pg_stat_io blocks read = EXPLAIN shared read (+ <= 2 planner index pages)",
            (0.0..=2.0).contains(&extra),
            || {
                format!(
                    "{label}: pg_stat_io {} blocks, EXPLAIN read {}",
                    d.blocks, top.shared_read
                )
            },
        );
    }
}

/// Heap Blocks is a property of the data, not of the settings: the same in every cell of a
/// variant on one system.
pub fn same_blocks_everywhere(ctx: &mut Ctx, exp: &str) {
    let mut seen: std::collections::BTreeMap<(String, String), Vec<f64>> = Default::default();
    for c in ctx.results.cells.iter().filter(|c| c.experiment == exp) {
        if let Some(m) = c.metrics.iter().find(|m| m.name == "heap_blocks") {
            seen.entry((c.system.clone(), c.variant.clone()))
                .or_default()
                .extend(&m.values);
        }
    }
    for ((system, variant), values) in seen {
        let all_same = values.windows(2).all(|w| w[0] == w[1]);
        ctx.tally(
            exp,
            "Heap Blocks equal across all settings and methods",
            all_same,
            || format!("{system} {variant}: {values:?}"),
        );
    }
}
