//! Experiment advice (seed 002): the cyclic dataset's bitmap heap scan ("two sequential
//! reads, gap, two sequential reads") under each read_stream_advice policy, at
//! effective_io_concurrency 16 and io_method sync (the only method that issues advice).
//! PostgreSQL 18 runs its own rule only, which is iolab's `pg18`.

use super::eic::{progress_line, record_bitmap, same_blocks_everywhere};
use super::{cold_explain, configs, for_system, start_for};
use crate::client::Res;
use crate::context::{Ctx, Sys};
use crate::results::Cell;
use crate::sqlfile::script;

pub const POLICIES: [&str; 4] = ["pg17", "pg18", "always", "never"];

pub async fn run(ctx: &mut Ctx) -> Res<()> {
    let file = script("advice");
    if ctx.force_direct {
        ctx.results.note("advice: with direct I/O (the page cache cannot be dropped) posix_fadvise has no effect".into());
    }
    for sys in ctx.systems() {
        for config in configs(ctx, &["sync"], &[false]) {
            let mut cells: Vec<Cell> = POLICIES
                .iter()
                .map(|p| {
                    Cell::new(
                        "advice",
                        sys.name(),
                        &config.io_method,
                        config.io(),
                        "cyclic",
                        p,
                    )
                })
                .collect();
            if sys == Sys::Pg18 {
                for c in cells.iter_mut().filter(|c| c.setting != "pg18") {
                    c.note = "n/a: iolab-only advice policy (PostgreSQL 18 always follows its own rule, = pg18)".into();
                }
            }
            if !start_for(ctx, sys, &config, &mut cells).await {
                continue;
            }
            for r in 1..=ctx.repeat {
                for cell in cells.iter_mut().filter(|c| !c.note.starts_with("n/a")) {
                    let statements = for_system(
                        sys,
                        file.statements("run", &[("policy", cell.setting.clone())]),
                    );
                    let (plan, delta) = cold_explain(ctx, sys, &statements).await?;
                    record_bitmap(ctx, cell, sys, "advice_cyclic", &plan, delta);
                    let advice = delta
                        .map(|d| format!(", {} advice calls, {} reads", d.waits, d.reads))
                        .unwrap_or_default();
                    eprintln!(
                        "  [{r}/{}] {}{advice}",
                        ctx.repeat,
                        progress_line(cell, &plan)
                    );
                }
            }
            ctx.stop(sys);
            if sys == Sys::Iolab && !ctx.force_direct {
                check_advice_counts(ctx, &cells);
            }
            ctx.results.cells.extend(cells);
        }
    }
    same_blocks_everywhere(ctx, "advice");
    Ok(())
}

/// `never` advises nothing; `always` advises at least as often as either rule. A rule that
/// issues no advice at all on this pattern is reported as a finding (PostgreSQL 18's rule
/// should advise each jump once the look-ahead holds a pinned block).
fn check_advice_counts(ctx: &mut Ctx, cells: &[Cell]) {
    let calls = |p: &str| {
        cells
            .iter()
            .find(|c| c.setting == p)
            .and_then(|c| c.median("advice_calls"))
    };
    let (Some(never), Some(always), Some(pg17), Some(pg18)) = (
        calls("never"),
        calls("always"),
        calls("pg17"),
        calls("pg18"),
    ) else {
        return;
    };
    let detail =
        || format!("advice calls: never {never}, pg17 {pg17}, pg18 {pg18}, always {always}");
    ctx.tally("advice", "never issues no advice", never == 0.0, detail);
    ctx.tally(
        "advice",
        "always advises at least as often as pg17 and pg18",
        always >= pg17 && always >= pg18,
        detail,
    );
    for (rule, n) in [("pg17", pg17), ("pg18", pg18)] {
        if n == 0.0 {
            ctx.results.note(format!(
                "advice: iolab's {rule} rule issued no advice on the cyclic pattern ({}); a stream may pin \
                 shared_buffers/64 buffers, which in a tiny pool leaves nothing pinned ahead when a read starts",
                detail()
            ));
        }
    }
}
