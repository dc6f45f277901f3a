//! Experiment analyze (seed 000): cold ANALYZE VERBOSE of eic_uniform (several times
//! shared_buffers), look-ahead on (maintenance_io_concurrency 16) vs off (0), with the
//! device's readahead as it is and at 0 (restored afterwards, also on Ctrl-C). The figures
//! come from the INFO message: `I/O timings: read: … ms`, `avg read rate: … MB/s`,
//! `buffer usage: … hits, … reads`, `scanned N of M pages`; elapsed is the client's clock.

use super::{configs, start_for};
use crate::client::Res;
use crate::cold::{readahead_file, Readahead};
use crate::context::{Ctx, Sys};
use crate::explain::number_after;
use crate::results::Cell;
use crate::sqlfile::script;
use std::time::Instant;

const MICS: [u32; 2] = [16, 0];

pub async fn run(ctx: &mut Ctx) -> Res<()> {
    let file = script("analyze");
    // Whether the readahead can be set: find the disk, try writing its current value back.
    let readahead = readahead_file(&ctx.data_dir)
        .and_then(|f| Readahead::current(&f).map(|old| (f, old)))
        .and_then(|(f, old)| {
            std::fs::write(&f, &old)
                .map(|_| (f, old))
                .map_err(|e| format!("cannot set readahead: {e}"))
        });
    let ra_modes: Vec<&str> = match &readahead {
        Ok((f, old)) => {
            eprintln!(
                "  device readahead: {} = {old} kB; runs with it as is and with 0",
                f.display()
            );
            ctx.results
                .meta
                .insert("readahead_kb".into(), old.clone().into());
            vec!["as-is", "0"]
        }
        Err(e) => {
            ctx.results
                .note(format!("analyze: readahead runs skipped: {e}"));
            vec!["as-is"]
        }
    };
    for sys in ctx.systems() {
        for config in configs(ctx, &["sync", "worker", "io_uring"], &[false]) {
            let mut cells: Vec<Cell> = Vec::new();
            for ra in &ra_modes {
                for mic in MICS {
                    let variant = format!("ra={ra}");
                    cells.push(Cell::new(
                        "analyze",
                        sys.name(),
                        &config.io_method,
                        config.io(),
                        &variant,
                        &mic.to_string(),
                    ));
                }
            }
            if !start_for(ctx, sys, &config, &mut cells).await {
                continue;
            }
            for r in 1..=ctx.repeat {
                for ra in &ra_modes {
                    let _guard = match (&readahead, *ra) {
                        (Ok((f, _)), "0") => Some(Readahead::set(f, 0)?),
                        _ => None,
                    };
                    for cell in cells.iter_mut().filter(|c| c.variant == format!("ra={ra}")) {
                        run_once(ctx, cell, &file, r).await?;
                    }
                }
            }
            ctx.stop(sys);
            ctx.results.cells.extend(cells);
        }
    }
    if let Ok((f, old)) = &readahead {
        let now = Readahead::current(f).unwrap_or_default();
        ctx.tally(
            "analyze",
            "device readahead restored afterwards",
            &now == old,
            || format!("{}: {now}, was {old}", f.display()),
        );
    }
    Ok(())
}

async fn run_once(
    ctx: &mut Ctx,
    cell: &mut Cell,
    file: &crate::sqlfile::SqlFile,
    r: usize,
) -> Res<()> {
    let sys = if cell.system == "pg18" {
        Sys::Pg18
    } else {
        Sys::Iolab
    };
    let session = ctx.session(sys).await?;
    ctx.cold.prepare(&session).await?;
    session.take_notices();
    let t0 = Instant::now();
    session
        .run_all(&file.statements("run", &[("mic", cell.setting.clone())]))
        .await?;
    let elapsed_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let info = session.take_notices().join("\n");
    let label = format!(
        "{} {}/{} {} mic={}",
        cell.system, cell.io_method, cell.io, cell.variant, cell.setting
    );
    let (Some(pages), Some(read_ms), Some(mb_s), Some(hits), Some(reads)) = (
        number_after(&info, "scanned "),
        number_after(&info, "I/O timings: read: "),
        number_after(&info, "avg read rate: "),
        number_after(&info, "buffer usage: "),
        number_after(&info, "hits, "),
    ) else {
        return Err(format!(
            "{label}: no ANALYZE VERBOSE figures in the INFO messages:\n{info}"
        ));
    };
    cell.add("elapsed_ms", "ms", elapsed_ms);
    cell.add("read_ms", "ms", read_ms);
    cell.add("mb_s", "MB/s", mb_s);
    cell.add("pages", "pages", pages);
    cell.add("buffer_hits", "buffers", hits);
    cell.add("buffer_reads", "buffers", reads);
    // PostgreSQL 18's buffer usage also counts the catalog pages ANALYZE reads and updates
    // (pg_statistic, pg_class), so these hold for iolab only.
    if sys == Sys::Iolab {
        ctx.tally(
            "analyze",
            "buffer usage hits + reads = pages scanned",
            hits + reads == pages,
            || format!("{label}: {hits} hits + {reads} reads vs {pages} pages"),
        );
        ctx.tally(
            "analyze",
            "cold: every scanned page was read (no hits after emptying the pool)",
            reads == pages,
            || format!("{label}: {reads} reads of {pages} pages"),
        );
    }
    eprintln!(
        "  [{r}/{}] {label}: {elapsed_ms:.1} ms, {pages} pages, I/O read {read_ms:.1} ms, {mb_s:.1} MB/s",
        ctx.repeat
    );
    Ok(())
}
