//! Experiment recovery (seed 003): how much redo's read-ahead (`recovery_prefetch`) speeds up
//! crash recovery.
//!
//! Once per system and scale: a permanent table several times larger than shared_buffers is
//! loaded and checkpointed in a data directory of its own, then one transaction updates one
//! random row per 8 pages (`sql/experiments/recovery.sql`), with `full_page_writes = off` and
//! `max_wal_size` / `checkpoint_timeout` so large that no checkpoint intervenes: the WAL after
//! the checkpoint references random existing pages and carries no page images, so redo must
//! read each page. The server is killed (`kill -9`) and its data directory kept as `crashed/`
//! (reused by later runs while its marker says it was made the same way).
//!
//! Each run of a cell copies `crashed/` to `run/`, drops the page cache (where permitted, as
//! every cold run does) and starts the server on the copy with the cell's `recovery_prefetch`
//! and `maintenance_io_concurrency`. The figures come from the server's log: `redo starts at`
//! and `redo done at … elapsed: … s` (both systems), iolab's `redo replayed N records changing
//! M pages; read-ahead: prefetch=… hit=… skip_*=…`, and PostgreSQL 18's
//! `pg_stat_recovery_prefetch` (it logs no counters). The recovered table must hold what it
//! held before the crash.

use super::configs;
use crate::client::{Res, Session};
use crate::context::{Ctx, Sys};
use crate::explain::number_after;
use crate::results::Cell;
use crate::server::Config;
use crate::sqlfile::{script, SqlFile};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The maintenance_io_concurrency values with recovery_prefetch = on.
pub const MICS: [&str; 2] = ["16", "64"];

/// The cells' (variant, setting): prefetch off (maintenance_io_concurrency does not matter),
/// then on at each maintenance_io_concurrency. The plot's categories, in this order.
pub const CELLS: [(&str, &str); 3] = [
    ("prefetch=off", "-"),
    ("prefetch=on", MICS[0]),
    ("prefetch=on", MICS[1]),
];

/// Every start of either system, for the workload and for recovery: no checkpoint may come
/// between the checkpoint after the load and the crash, and no page images in the WAL.
const WAL_SETTINGS: [(&str, &str); 3] = [
    ("full_page_writes", "off"),
    ("max_wal_size", "4096"),
    ("checkpoint_timeout", "86400"),
];

/// UPDATE statements sent in one simple query.
const BATCH: usize = 100;

const SQL_TEXT: &str = include_str!("../../../../sql/experiments/recovery.sql");

/// The crashed data directory of one system and what its table held before the crash.
struct Crashed {
    dir: PathBuf,
    run: PathBuf,
    updates: f64,
    row_count: f64,
    updated_rows: f64,
}

pub async fn run(ctx: &mut Ctx) -> Res<()> {
    let file = script("recovery");
    if ctx.force_direct {
        ctx.results.note(
            "recovery: with direct I/O (the page cache cannot be dropped) advice does not reach the reads: only iolab's worker, which reads ahead into the buffer pool, reads ahead at all".into(),
        );
    }
    for sys in ctx.systems() {
        let mut cells = Vec::new();
        for config in configs(ctx, &["worker", "sync"], &[false, true]) {
            // The sweep under worker; one cell (on, 16) for each other configuration:
            // sync reads ahead by advice, worker into the buffer pool, and direct I/O
            // shows which of the two still works without the page cache.
            let all = config.io_method == "worker" && (!config.direct || ctx.force_direct);
            for (variant, setting) in CELLS {
                if all || (variant == "prefetch=on" && setting == MICS[0]) {
                    cells.push(Cell::new(
                        "recovery",
                        sys.name(),
                        &config.io_method,
                        config.io(),
                        variant,
                        setting,
                    ));
                }
            }
        }
        if sys == Sys::Pg18 && !ctx.pg18.as_ref().is_some_and(|p| p.restartable()) {
            na(
                ctx,
                cells,
                "needs --pg18-ctl: the harness crashes and restarts PostgreSQL 18 itself",
            );
            continue;
        }
        let crashed = match prepare(ctx, sys, &file).await {
            Ok(c) => c,
            Err(why) if sys == Sys::Pg18 => {
                eprintln!("  pg18 recovery: n/a: {why}");
                na(ctx, cells, &why);
                continue;
            }
            Err(why) => return Err(format!("recovery: {why}")),
        };
        let mut replays: Vec<(String, Replay)> = Vec::new();
        for r in 1..=ctx.repeat {
            for cell in cells.iter_mut() {
                if let Some(replay) = run_once(ctx, sys, cell, &crashed, &file, r).await? {
                    replays.push((label(cell), replay));
                }
            }
        }
        // The copies are the same: so must be what redo replayed.
        if let Some((first_label, first)) = replays.first().cloned() {
            for (l, replay) in &replays {
                ctx.tally(
                    "recovery",
                    "every run replayed the same WAL (redo start and end LSN, records)",
                    replay.same_wal(&first),
                    || format!("{l}: {replay:?}; {first_label}: {first:?}"),
                );
            }
            // So must the pages changed (the others already had the change): reading a
            // block ahead must not change what redo finds.
            if let Some(first_pages) = first.pages {
                for (l, replay) in &replays {
                    ctx.tally(
                        "recovery",
                        "every run changed the same pages (iolab)",
                        replay.pages == Some(first_pages),
                        || {
                            format!(
                                "{l}: {:?} pages; {first_label}: {first_pages}",
                                replay.pages
                            )
                        },
                    );
                }
            }
        }
        let _ = std::fs::remove_dir_all(&crashed.run);
        ctx.results.cells.extend(cells);
    }
    Ok(())
}

fn na(ctx: &mut Ctx, mut cells: Vec<Cell>, why: &str) {
    for c in cells.iter_mut() {
        c.note = format!("n/a: {why}");
    }
    ctx.results.cells.append(&mut cells);
}

fn label(cell: &Cell) -> String {
    let mic = if cell.setting == "-" {
        String::new()
    } else {
        format!(" maintenance_io_concurrency={}", cell.setting)
    };
    format!(
        "{} {}/{} {}{mic}",
        cell.system, cell.io_method, cell.io, cell.variant
    )
}

/// Where a system's recovery data directories live: beside its other data directory.
fn base_dir(ctx: &Ctx, sys: Sys) -> Res<PathBuf> {
    let data = match sys {
        Sys::Iolab => ctx.data_dir.clone(),
        Sys::Pg18 => ctx
            .pg18
            .as_ref()
            .and_then(|p| p.data_dir())
            .map(Path::to_path_buf)
            .ok_or("needs --pg18-ctl")?,
    };
    let name = data
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "data".into());
    Ok(data.with_file_name(format!("{name}-recovery")))
}

/// What must be the same for a crashed directory to be reused: the system (and iolab's
/// binary, whose WAL format may change), the rows, shared_buffers and the script.
fn cache_key(ctx: &Ctx, sys: Sys) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    SQL_TEXT.hash(&mut h);
    let binary = match sys {
        Sys::Iolab => std::fs::metadata(&ctx.iolab.bin)
            .map(|m| {
                let modified = m
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos());
                format!("{} {} {modified}", ctx.iolab.bin.display(), m.len())
            })
            .unwrap_or_default(),
        Sys::Pg18 => String::new(),
    };
    format!(
        "{} rows={} shared_buffers={} direct={} sql={:016x} {binary}",
        sys.name(),
        ctx.scale.rows,
        ctx.scale.shared_buffers,
        ctx.force_direct,
        h.finish()
    )
}

fn wal_settings() -> Vec<(&'static str, String)> {
    WAL_SETTINGS
        .iter()
        .map(|(n, v)| (*n, v.to_string()))
        .collect()
}

/// Where PostgreSQL 18 logs a recovery (its logging collector, in the data directory).
const PG_LOG: &str = "log/recovery.log";

/// Starts `sys` on `dir`. iolab's log goes to `log`; PostgreSQL 18's, for a recovery
/// (`recovering`), to `dir/log/recovery.log` through its logging collector (pg18-reference
/// sends every server's log to one shared file), else to pg18-reference's.
async fn start_in(
    ctx: &mut Ctx,
    sys: Sys,
    dir: &Path,
    config: &Config,
    settings: &[(&str, String)],
    log: &Path,
    recovering: bool,
) -> Res<()> {
    match sys {
        Sys::Iolab => ctx.iolab.start_in(dir, config, settings, log).await,
        Sys::Pg18 => {
            let mut settings = settings.to_vec();
            if recovering {
                let (log_dir, log_file) = PG_LOG.split_once('/').expect("dir/file");
                settings.extend([
                    ("logging_collector", "on".to_string()),
                    ("log_directory", log_dir.to_string()),
                    ("log_filename", log_file.to_string()),
                ]);
            }
            let pg = ctx.pg18.as_mut().expect("pg18 configured");
            let started = pg.start_in(config, Some(dir), &settings).await;
            if recovering {
                // Keep the log beside iolab's; on failure its last FATAL line says why.
                let text = std::fs::read_to_string(dir.join(PG_LOG)).unwrap_or_default();
                let _ = std::fs::write(log, &text);
                if let Err(why) = started {
                    let fatal = text
                        .lines()
                        .rev()
                        .find(|l| l.contains("FATAL:") || l.contains("PANIC:"));
                    return Err(match fatal {
                        Some(line) => format!("{why}: {}", line.trim()),
                        None => why,
                    });
                }
            }
            started
        }
    }
}

/// The crashed data directory: reused when its marker matches, else made: load, checkpoint,
/// update, check, kill -9.
async fn prepare(ctx: &mut Ctx, sys: Sys, file: &SqlFile) -> Res<Crashed> {
    let base = base_dir(ctx, sys)?;
    let (load, dir, run) = (base.join("load"), base.join("crashed"), base.join("run"));
    let marker = base.join("crashed.json");
    let key = cache_key(ctx, sys);
    let read_marker = || -> Option<Crashed> {
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&marker).ok()?).ok()?;
        (m["key"] == key.as_str() && dir.join("PG_VERSION").exists()).then(|| Crashed {
            dir: dir.clone(),
            run: run.clone(),
            updates: m["updates"].as_f64().unwrap_or(f64::NAN),
            row_count: m["row_count"].as_f64().unwrap_or(f64::NAN),
            updated_rows: m["updated_rows"].as_f64().unwrap_or(f64::NAN),
        })
    };
    if let Some(c) = read_marker() {
        eprintln!(
            "  {}: reusing the crashed data directory {} ({} rows, {} updated)",
            sys.name(),
            dir.display(),
            c.row_count,
            c.updated_rows
        );
        return Ok(c);
    }
    for d in [&load, &dir, &run] {
        remove_dir(d)?;
    }
    let _ = std::fs::remove_file(&marker);
    std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;

    let rows = ctx.scale.rows;
    let config = Config::new("worker", ctx.force_direct);
    let log = ctx.iolab.logs.join("iolab-recovery-load.log");
    start_in(ctx, sys, &load, &config, &wal_settings(), &log, false).await?;
    let session = ctx.session(sys).await?;
    eprintln!(
        "  {}: loading recovery_uniform ({rows} rows) in {}",
        sys.name(),
        load.display()
    );
    let t0 = Instant::now();
    super::create_and_fill(&session, file, rows, ctx.scale.chunk).await?;
    let updates = first_number(&session.run_all(&file.statements("finish", &[])).await?)
        .ok_or("the @finish section gave no number of updates")?;
    eprintln!(
        "    loaded, indexed, vacuumed and checkpointed in {:.1} s; {updates} updates of random rows",
        t0.elapsed().as_secs_f64()
    );
    let t1 = Instant::now();
    session.run_all(&file.statements("begin", &[])).await?;
    let vars = [("rows", rows.to_string()), ("updates", updates.to_string())];
    let statements: Vec<String> = session
        .run_all(&file.statements("updates", &vars))
        .await?
        .into_iter()
        .filter_map(|r| r.into_iter().next())
        .collect();
    for batch in statements.chunks(BATCH) {
        session.query(&batch.join(";\n")).await?;
    }
    session.run_all(&file.statements("commit", &[])).await?;
    let (row_count, updated_rows) = check(&session, file).await?;
    eprintln!(
        "    {} UPDATEs committed in {:.1} s: {row_count} rows, {updated_rows} changed; kill -9",
        statements.len(),
        t1.elapsed().as_secs_f64()
    );
    drop(session);
    let label = sys.name();
    ctx.tally(
        "recovery",
        "before the crash: the table holds the rows loaded, and the updates changed some",
        row_count == rows as f64
            && updated_rows > 0.0
            && updated_rows <= updates
            && statements.len() as f64 == updates,
        || {
            format!(
                "{label}: {row_count} rows ({rows} loaded), {updated_rows} changed by {} UPDATEs ({updates} asked)",
                statements.len()
            )
        },
    );
    match sys {
        Sys::Iolab => ctx.iolab.crash(),
        Sys::Pg18 => ctx.pg18.as_mut().expect("pg18 configured").crash()?,
    }
    std::fs::rename(&load, &dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let m = serde_json::json!({
        "key": key,
        "updates": updates,
        "row_count": row_count,
        "updated_rows": updated_rows,
    });
    std::fs::write(&marker, m.to_string()).map_err(|e| format!("{}: {e}", marker.display()))?;
    Ok(Crashed {
        dir,
        run,
        updates,
        row_count,
        updated_rows,
    })
}

fn first_number(rows: &[Vec<String>]) -> Option<f64> {
    rows.first()?.first()?.parse().ok()
}

/// The `@run` query: (rows, rows the updates changed).
async fn check(session: &Session, file: &SqlFile) -> Res<(f64, f64)> {
    let rows = session.run_all(&file.statements("run", &[])).await?;
    let v = |i: usize| {
        rows.first()
            .and_then(|r| r.get(i))
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(f64::NAN)
    };
    Ok((v(0), v(1)))
}

fn remove_dir(d: &Path) -> Res<()> {
    match std::fs::remove_dir_all(d) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {}: {e}", d.display()))
        }
        _ => Ok(()),
    }
}

/// `cp -a` (ownership kept: PostgreSQL's files belong to its own user), then sync, so the
/// copy's writes do not go on during the measurement.
fn restore(from: &Path, to: &Path) -> Res<()> {
    remove_dir(to)?;
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg("--reflink=auto")
        .arg(from)
        .arg(to)
        .status()
        .map_err(|e| format!("cp: {e}"))?;
    if !status.success() {
        return Err(format!(
            "cp -a {} {}: {status}",
            from.display(),
            to.display()
        ));
    }
    unsafe { libc::sync() };
    Ok(())
}

/// One recovery: restore, cold, start with the cell's settings, read the log, check the
/// table, stop. None when the server did not come up (a failed check, the cell's note).
async fn run_once(
    ctx: &mut Ctx,
    sys: Sys,
    cell: &mut Cell,
    crashed: &Crashed,
    file: &SqlFile,
    r: usize,
) -> Res<Option<Replay>> {
    let label = label(cell);
    let config = Config::new(&cell.io_method, cell.io == "direct");
    let prefetch = cell.variant.trim_start_matches("prefetch=").to_string();
    let mic = if cell.setting == "-" {
        MICS[0]
    } else {
        &cell.setting
    };
    let mut settings = wal_settings();
    settings.push(("recovery_prefetch", prefetch.clone()));
    settings.push(("maintenance_io_concurrency", mic.to_string()));
    restore(&crashed.dir, &crashed.run)?;
    ctx.cold.settle().await?;
    let name = format!(
        "{}-recovery-{}-{}-{}-{}-r{r}.log",
        sys.name(),
        cell.io_method,
        cell.io,
        prefetch,
        cell.setting.replace('-', "na")
    );
    let log_path = ctx.iolab.logs.join(&name);
    let started = start_in(ctx, sys, &crashed.run, &config, &settings, &log_path, true).await;
    ctx.tally(
        "recovery",
        "the server recovers from the crash and starts",
        started.is_ok(),
        || {
            format!(
                "{label}: {}",
                started.as_ref().err().cloned().unwrap_or_default()
            )
        },
    );
    if let Err(why) = started {
        eprintln!("  [{r}/{}] {label}: did not start: {why}", ctx.repeat);
        if cell.note.is_empty() {
            cell.note = format!("did not start: {why}");
        }
        return Ok(None);
    }
    let session = ctx.session(sys).await?;
    let log = match sys {
        Sys::Iolab => std::fs::read_to_string(&log_path).unwrap_or_default(),
        Sys::Pg18 => {
            let text = wait_for_redo_log(&crashed.run.join(PG_LOG)).await;
            let _ = std::fs::write(&log_path, &text);
            text
        }
    };
    let Some(mut replay) = parse_redo(&log) else {
        ctx.stop(sys);
        return Err(format!(
            "{label}: no \"redo starts at\" / \"redo done at\" lines in the server log ({})",
            log_path.display()
        ));
    };
    if sys == Sys::Pg18 {
        let rows = session
            .query("SELECT prefetch, hit, skip_init, skip_new, skip_fpw, skip_rep FROM pg_stat_recovery_prefetch")
            .await?;
        if let Some(row) = rows.first() {
            for (name, value) in COUNTERS.iter().zip(row) {
                if let Ok(v) = value.parse() {
                    replay.counters.push((name.to_string(), v));
                }
            }
        }
    }
    let (row_count, updated_rows) = check(&session, file).await?;
    drop(session);
    ctx.stop(sys);

    cell.add("redo_s", "s", replay.elapsed_s);
    cell.add("cpu_user_s", "s", replay.user_s);
    cell.add("cpu_system_s", "s", replay.system_s);
    cell.add("wal_bytes", "bytes", replay.wal_bytes() as f64);
    if let Some(n) = replay.records {
        cell.add("records", "records", n);
    }
    if let Some(n) = replay.pages {
        cell.add("pages", "pages", n);
    }
    for (name, v) in &replay.counters {
        cell.add(name, "blocks", *v);
    }
    ctx.tally(
        "recovery",
        "the recovered table holds what it held before the crash (rows, rows changed)",
        row_count == crashed.row_count && updated_rows == crashed.updated_rows,
        || {
            format!(
                "{label}: {row_count} rows, {updated_rows} changed; before the crash {}, {}",
                crashed.row_count, crashed.updated_rows
            )
        },
    );
    let advised = replay.counter("prefetch");
    if sys == Sys::Iolab {
        let records = replay.records.unwrap_or(0.0);
        ctx.tally(
            "recovery",
            "iolab: redo replayed at least one record per UPDATE",
            records >= crashed.updates,
            || format!("{label}: {records} records, {} UPDATEs", crashed.updates),
        );
        // sync advises the kernel, as PostgreSQL 18 does (not under direct I/O, where
        // advice does not reach the reads); worker and io_uring read into the buffer pool.
        let (what, ok) = if prefetch == "off" {
            (
                "iolab: recovery_prefetch=off reads nothing ahead (prefetch = 0)",
                advised == 0.0,
            )
        } else if config.io_method == "sync" && config.direct {
            (
                "iolab: sync with direct I/O reads nothing ahead (prefetch = 0)",
                advised == 0.0,
            )
        } else {
            (
                "iolab: recovery_prefetch=on reads blocks ahead (prefetch > 0)",
                advised > 0.0,
            )
        };
        ctx.tally("recovery", what, ok, || {
            format!("{label}: prefetch={advised}")
        });
    }
    let records = replay
        .records
        .map(|n| {
            format!(
                ", {n} records, {} pages changed",
                replay.pages.unwrap_or(0.0)
            )
        })
        .unwrap_or_default();
    let counters: Vec<String> = replay
        .counters
        .iter()
        .filter(|(_, v)| *v > 0.0)
        .map(|(n, v)| format!("{n}={v}"))
        .collect();
    eprintln!(
        "  [{r}/{}] {label}: redo {:.2} s{records}, {} WAL bytes, {}; {row_count} rows, {updated_rows} changed",
        ctx.repeat,
        replay.elapsed_s,
        replay.wal_bytes(),
        if counters.is_empty() {
            "nothing read ahead".to_string()
        } else {
            counters.join(" ")
        }
    );
    Ok(Some(replay))
}

/// PostgreSQL 18's logging collector writes a moment after the startup process logs:
/// the log once it has redo's end (at most 10 s).
async fn wait_for_redo_log(path: &Path) -> String {
    let deadline = Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.contains("redo done at ") || Instant::now() > deadline {
            return text;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The read-ahead counters, as iolab logs them and as pg_stat_recovery_prefetch names them.
pub const COUNTERS: [&str; 6] = [
    "prefetch",
    "hit",
    "skip_init",
    "skip_new",
    "skip_fpw",
    "skip_rep",
];

/// What the server log says about one redo.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Replay {
    /// `redo starts at`, `redo done at` (the last record's start).
    pub start: u64,
    pub done: u64,
    pub elapsed_s: f64,
    pub user_s: f64,
    pub system_s: f64,
    /// iolab's `redo replayed N records changing M pages`.
    pub records: Option<f64>,
    pub pages: Option<f64>,
    pub counters: Vec<(String, f64)>,
}

impl Replay {
    /// WAL bytes from redo's start to the start of its last record.
    pub fn wal_bytes(&self) -> u64 {
        self.done.saturating_sub(self.start)
    }

    pub fn counter(&self, name: &str) -> f64 {
        self.counters
            .iter()
            .find(|(n, _)| n == name)
            .map_or(0.0, |(_, v)| *v)
    }

    fn same_wal(&self, other: &Replay) -> bool {
        (self.start, self.done, self.records) == (other.start, other.done, other.records)
    }
}

/// An LSN as logged, `X/Y` in hex.
pub fn parse_lsn(text: &str) -> Option<u64> {
    let token = text.split_whitespace().next()?;
    let (hi, lo) = token.split_once('/')?;
    Some((u64::from_str_radix(hi, 16).ok()? << 32) | u64::from_str_radix(lo, 16).ok()?)
}

/// Redo's lines in a server log (iolab's tracing lines or PostgreSQL's); the last redo if
/// the log holds several. None without both `redo starts at` and `redo done at`.
pub fn parse_redo(log: &str) -> Option<Replay> {
    let after = |line: &str, key: &str| line.find(key).map(|at| line[at + key.len()..].to_string());
    let mut start = None;
    let mut done_line = None;
    let mut replayed_line = None;
    for line in log.lines() {
        if let Some(rest) = after(line, "redo starts at ") {
            start = parse_lsn(&rest);
            done_line = None;
            replayed_line = None;
        } else if let Some(rest) = after(line, "redo done at ") {
            done_line = Some(rest);
        } else if let Some(rest) = after(line, "redo replayed ") {
            replayed_line = Some(rest);
        }
    }
    let done_line = done_line?;
    let mut replay = Replay {
        start: start?,
        done: parse_lsn(&done_line)?,
        elapsed_s: number_after(&done_line, "elapsed: ")?,
        user_s: number_after(&done_line, "user: ").unwrap_or(f64::NAN),
        system_s: number_after(&done_line, "system: ").unwrap_or(f64::NAN),
        ..Replay::default()
    };
    if let Some(line) = replayed_line {
        replay.records = number_after(&line, "");
        replay.pages = number_after(&line, "changing ");
        if let Some((_, ahead)) = line.split_once("read-ahead:") {
            for pair in ahead.split_whitespace() {
                if let Some((name, value)) = pair.split_once('=') {
                    if let Ok(v) = value.trim_end_matches([',', ';']).parse() {
                        replay.counters.push((name.to_string(), v));
                    }
                }
            }
        }
    }
    Some(replay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iolab_log() {
        let log = "\
2026-12-03T18:55:51.134532Z  INFO iolab_engine::wal::recovery: database system was interrupted; last known up at 2026-12-03 18:55:44 UTC
2026-12-03T18:55:51.145524Z  INFO iolab_engine::wal::recovery: redo starts at 0/1000000
2026-12-03T18:55:51.233743Z  INFO iolab_engine::wal::recovery: redo done at 0/2B03158 system usage: CPU: user: 0.74 s, system: 0.17 s, elapsed: 0.94 s
2026-12-03T18:55:51.233802Z  INFO iolab_engine::wal::recovery: redo replayed 150883 records changing 150878 pages; read-ahead: prefetch=1151 hit=30309 skip_init=878 skip_new=0 skip_fpw=274 skip_rep=118266
2026-12-03T18:55:51.245522Z  INFO iolab_engine::wal::checkpointer: checkpoint starting: end-of-recovery immediate
";
        let r = parse_redo(log).expect("redo lines");
        assert_eq!(r.start, 0x100_0000);
        assert_eq!(r.done, 0x2B0_3158);
        assert_eq!(r.wal_bytes(), 0x2B0_3158 - 0x100_0000);
        assert_eq!((r.elapsed_s, r.user_s, r.system_s), (0.94, 0.74, 0.17));
        assert_eq!((r.records, r.pages), (Some(150883.0), Some(150878.0)));
        let names: Vec<&str> = r.counters.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, COUNTERS);
        assert_eq!(
            (
                r.counter("prefetch"),
                r.counter("hit"),
                r.counter("skip_rep")
            ),
            (1151.0, 30309.0, 118266.0)
        );
    }

    #[test]
    fn postgres_log() {
        let log = "\
2026-12-03 18:58:01.705 UTC [6727] LOG:  database system was interrupted; last known up at 2026-12-03 18:57:54 UTC
2026-12-03 18:58:03.031 UTC [6727] LOG:  redo starts at 1/01CE5C78
2026-12-03 18:58:03.050 UTC [6727] LOG:  invalid record length at 1/1CE9880: expected at least 24, got 0
2026-12-03 18:58:03.050 UTC [6727] LOG:  redo done at 1/1CE9848 system usage: CPU: user: 0.01 s, system: 0.02 s, elapsed: 12.30 s
2026-12-03 18:58:03.058 UTC [6720] LOG:  database system is ready to accept connections
";
        let r = parse_redo(log).expect("redo lines");
        assert_eq!(r.start, (1 << 32) | 0x1CE_5C78);
        assert_eq!(r.wal_bytes(), 0x1CE9848 - 0x1CE5C78);
        assert_eq!((r.elapsed_s, r.user_s, r.system_s), (12.3, 0.01, 0.02));
        assert_eq!((r.records, r.pages), (None, None));
        assert!(r.counters.is_empty());
    }

    #[test]
    fn no_redo() {
        assert_eq!(parse_redo("LOG:  redo is not required\n"), None);
        assert_eq!(parse_redo("redo starts at 0/1000000\n"), None);
        assert_eq!(parse_lsn("0/zz"), None);
    }
}
