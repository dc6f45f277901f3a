//! Experiment aio (seed 004): cold `SELECT count(*) FROM eic_uniform` (a sequential scan)
//! under sync, worker and io_uring, buffered and direct; MB/s = the table's bytes over the
//! client's time for the statement; beside fio's sequential read of a file of the same size
//! on the same file system with the same request size.

use super::{cold_run, configs, start_for};
use crate::client::Res;
use crate::context::{Ctx, Sys};
use crate::fio;
use crate::results::Cell;
use crate::sqlfile::script;

pub async fn run(ctx: &mut Ctx) -> Res<()> {
    let file = script("aio");
    let mut request = String::from("128kB");
    for sys in ctx.systems() {
        let Some(facts) = ctx.facts.get(&(sys, "eic_uniform".to_string())).cloned() else {
            continue;
        };
        for config in configs(ctx, &["sync", "worker", "io_uring"], &[false, true]) {
            let mut cells = vec![Cell::new(
                "aio",
                sys.name(),
                &config.io_method,
                config.io(),
                "count(*)",
                "",
            )];
            if !start_for(ctx, sys, &config, &mut cells).await {
                continue;
            }
            let mut cell = cells.pop().expect("one cell");
            if sys == Sys::Iolab {
                let session = ctx.session(sys).await?;
                request = session.text("SHOW io_combine_limit").await?;
                // Planned once before the cold runs: the first plan reads the index's meta
                // page for the tree's height and keeps it (PostgreSQL's relation cache
                // does the same), which is not the scan's I/O the runs check.
                let explain: Vec<String> = file
                    .statements("run", &[])
                    .into_iter()
                    .map(|s| match s.starts_with("SELECT") {
                        true => format!("EXPLAIN {s}"),
                        false => s,
                    })
                    .collect();
                session.run_all(&explain).await?;
            }
            for r in 1..=ctx.repeat {
                let run = cold_run(ctx, sys, &file.statements("run", &[])).await?;
                let ms = run.ms;
                let count: f64 = run
                    .rows
                    .first()
                    .and_then(|r| r.first())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(f64::NAN);
                let label = format!("{} {}", sys.name(), config.label());
                let loaded = ctx.scale.rows;
                cell.add("time_ms", "ms", ms);
                cell.add("mb_s", "MB/s", facts.bytes / 1e6 / (ms / 1000.0));
                ctx.tally(
                    "aio",
                    "count(*) = the rows loaded",
                    count == loaded as f64,
                    || format!("{label}: {count} vs {loaded} loaded"),
                );
                if let Some(d) = run.io {
                    cell.add("reads", "I/Os", d.reads);
                    cell.add("blocks_read", "blocks", d.blocks);
                    let pages = facts.bytes / 8192.0;
                    ctx.tally(
                        "aio",
                        "cold: pg_stat_io blocks read = the table's pages",
                        d.blocks == pages,
                        || format!("{label}: {} blocks read, {pages} pages", d.blocks),
                    );
                }
                eprintln!(
                    "  [{r}/{}] {label}: {ms:.1} ms, {:.0} MB/s, count {count}",
                    ctx.repeat,
                    facts.bytes / 1e6 / (ms / 1000.0)
                );
            }
            ctx.stop(sys);
            ctx.results.cells.push(cell);
        }
    }
    run_fio(ctx, &request).await
}

/// fio on the same file system as iolab's data directory, same size, same request size.
async fn run_fio(ctx: &mut Ctx, request: &str) -> Res<()> {
    let block = request.to_lowercase().replace("kb", "k").replace("mb", "m");
    let variant = format!("bs={request}");
    if !fio::available() {
        let mut cell = Cell::new("aio", "fio", "-", "-", &variant, "");
        cell.note = "n/a: fio not found (apt-get install -y fio)".into();
        ctx.results.cells.push(cell);
        return Ok(());
    }
    let Some(facts) = ctx
        .facts
        .get(&(Sys::Iolab, "eic_uniform".to_string()))
        .cloned()
    else {
        return Ok(());
    };
    let bytes = facts.bytes as u64;
    let dir = ctx.data_dir.parent().unwrap_or(&ctx.data_dir).to_path_buf();
    let path = fio::layout(&dir, bytes)?;
    for (direct, engine) in [(false, "psync"), (true, "io_uring")] {
        if ctx.force_direct && !direct {
            continue;
        }
        let mut cell = Cell::new(
            "aio",
            "fio",
            engine,
            if direct { "direct" } else { "buffered" },
            &variant,
            "",
        );
        for r in 1..=ctx.repeat {
            if !direct {
                ctx.cold.settle().await?; // the same cold start as the servers' runs
            }
            match fio::sequential_read(&path, bytes, &block, direct) {
                Ok(mb_s) => {
                    cell.add("mb_s", "MB/s", mb_s);
                    cell.add("time_ms", "ms", bytes as f64 / 1e6 / mb_s * 1000.0);
                    eprintln!(
                        "  [{r}/{}] fio {engine} {} bs={block}: {mb_s:.0} MB/s",
                        ctx.repeat, cell.io
                    );
                }
                Err(e) => {
                    cell.note = format!("n/a: {e}");
                    break;
                }
            }
        }
        ctx.results.cells.push(cell);
    }
    Ok(())
}
