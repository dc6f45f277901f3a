//! The experiments, their datasets and what they share: a cold run of one script section
//! with pg_stat_io deltas around it, and the layout of their result tables.

pub mod advice;
mod aio;
mod analyze;
pub mod eic;
pub mod recovery;

use crate::client::{Res, Session};
use crate::context::{Ctx, Sys, TableFacts};
use crate::explain::Plan;
use crate::results::{Cell, Layout};
use crate::server::Config;
use crate::sqlfile::{script, SqlFile};
use std::time::Instant;

pub const ALL: [&str; 5] = ["eic", "advice", "analyze", "aio", "recovery"];

pub fn describe(name: &str) -> &'static str {
    match name {
        "eic" => "bitmap heap scan of eic_uniform (dense a < 140, sparse a < 5; AND filler > 'fffffff') per effective_io_concurrency, cold",
        "advice" => "bitmap heap scan of advice_cyclic (runs of 2 matching blocks, gaps of 6) per read_stream_advice, eic 16, io_method sync, cold",
        "analyze" => "cold ANALYZE VERBOSE eic_uniform, maintenance_io_concurrency 16 vs 0, device readahead as is vs 0",
        "aio" => "cold SELECT count(*) FROM eic_uniform (sequential scan), buffered vs direct, beside fio",
        "recovery" => "crash recovery (kill -9) after one UPDATE of a random row per 8 pages of recovery_uniform, full_page_writes off; redo with recovery_prefetch off/on, setting = maintenance_io_concurrency; page cache dropped",
        _ => "",
    }
}

pub fn layout(name: &str) -> Option<Layout> {
    match name {
        "eic" => Some(Layout {
            primary: "exec_ms",
            higher_is_better: false,
            columns: &[
                ("exec_ms", "exec ms"),
                ("read_ms", "read ms"),
                ("wait_ms", "wait ms"),
                ("p99_ms", "read p99 ms"),
                ("heap_blocks", "heap blocks"),
                ("reads", "reads (I/Os)"),
            ],
        }),
        "advice" => Some(Layout {
            primary: "exec_ms",
            higher_is_better: false,
            columns: &[
                ("exec_ms", "exec ms"),
                ("read_ms", "read ms"),
                ("wait_ms", "wait ms"),
                ("heap_blocks", "heap blocks"),
                ("reads", "reads (I/Os)"),
                ("advice_calls", "advice calls"),
            ],
        }),
        "analyze" => Some(Layout {
            primary: "elapsed_ms",
            higher_is_better: false,
            columns: &[
                ("elapsed_ms", "elapsed ms"),
                ("mb_s", "avg read MB/s"),
                ("read_ms", "I/O read ms"),
                ("pages", "pages scanned"),
                ("buffer_reads", "buffer reads"),
            ],
        }),
        "aio" => Some(Layout {
            primary: "mb_s",
            higher_is_better: true,
            columns: &[
                ("mb_s", "MB/s"),
                ("time_ms", "time ms"),
                ("blocks_read", "blocks read"),
            ],
        }),
        "recovery" => Some(Layout {
            primary: "redo_s",
            higher_is_better: false,
            columns: &[
                ("redo_s", "redo s"),
                ("wal_bytes", "WAL bytes"),
                ("records", "records"),
                ("pages", "pages changed"),
                ("prefetch", "prefetch"),
                ("hit", "hit"),
            ],
        }),
        _ => None,
    }
}

pub async fn run(ctx: &mut Ctx, name: &str) -> Res<()> {
    match name {
        "eic" => eic::run(ctx).await,
        "advice" => advice::run(ctx).await,
        "analyze" => analyze::run(ctx).await,
        "aio" => aio::run(ctx).await,
        "recovery" => recovery::run(ctx).await,
        _ => Err(format!("unknown experiment {name}")),
    }
}

/// The configurations an experiment sweeps, forced to direct I/O where the page cache
/// cannot be dropped.
pub fn configs(ctx: &Ctx, methods: &[&str], ios: &[bool]) -> Vec<Config> {
    let mut out = Vec::new();
    for m in methods {
        for &direct in ios {
            let c = Config::new(m, direct || ctx.force_direct);
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// Starts `sys` with `config` for `cells`. If it cannot, the cells not already marked get
/// the reason as their note, go into the results as they are, and the answer is false.
pub async fn start_for(ctx: &mut Ctx, sys: Sys, config: &Config, cells: &mut Vec<Cell>) -> bool {
    match ctx.start(sys, config).await {
        Ok(()) => true,
        Err(why) => {
            eprintln!("  {} {}: n/a: {why}", sys.name(), config.label());
            for c in cells.iter_mut().filter(|c| c.note.is_empty()) {
                c.note = format!("n/a: {why}");
            }
            ctx.results.cells.append(cells);
            false
        }
    }
}

/// Tables each experiment needs, with the script that loads them and its row count.
fn datasets(ctx: &Ctx, experiments: &[String]) -> Vec<(&'static str, &'static str, u64)> {
    let mut out = Vec::new();
    let wants = |e: &str| experiments.iter().any(|x| x == e);
    if wants("eic") || wants("analyze") || wants("aio") {
        out.push(("eic_uniform", "eic", ctx.scale.rows));
    }
    if wants("advice") {
        out.push(("advice_cyclic", "advice", ctx.scale.advice_rows));
    }
    out
}

/// Loads (or reuses) every dataset on every system and measures their facts.
pub async fn prepare_datasets(ctx: &mut Ctx, experiments: &[String]) -> Res<()> {
    let sets = datasets(ctx, experiments);
    if sets.is_empty() {
        return Ok(());
    }
    for sys in ctx.systems() {
        let load_config = Config::new("worker", ctx.force_direct && sys == Sys::Iolab);
        let restartable = sys == Sys::Iolab || ctx.pg18.as_ref().is_some_and(|p| p.restartable());
        if restartable {
            ctx.start(sys, &load_config)
                .await
                .map_err(|e| format!("{}: {e}", sys.name()))?;
        }
        let session = ctx.session(sys).await?;
        for (table, file, rows) in &sets {
            let file = script(file);
            ensure_loaded(&session, sys, table, &file, *rows, ctx.scale.chunk).await?;
            let mut facts = TableFacts {
                rows: session
                    .number(&format!("SELECT count(*) FROM {table}"))
                    .await?,
                bytes: session
                    .number(&format!("SELECT pg_relation_size('{table}')"))
                    .await?,
                ..TableFacts::default()
            };
            for (variant, predicate) in predicates(table) {
                let sql = file.statements("blocks", &[("predicate", predicate.to_string())]);
                let rows = session.run_all(&sql).await?;
                let n = rows
                    .first()
                    .and_then(|r| r.first())
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(f64::NAN);
                facts.blocks.insert(variant.to_string(), n);
            }
            eprintln!(
                "  {} {table}: {} rows, {:.1} MB ({} blocks); matching heap blocks {:?}",
                sys.name(),
                facts.rows,
                facts.bytes / 1e6,
                facts.bytes / 8192.0,
                facts.blocks
            );
            let exp = if *table == "advice_cyclic" {
                "advice"
            } else {
                "eic"
            };
            ctx.tally(
                exp,
                "the table holds the rows loaded",
                facts.rows == *rows as f64,
                || format!("{} {table}: {} rows, {rows} loaded", sys.name(), facts.rows),
            );
            ctx.facts.insert((sys, table.to_string()), facts);
        }
        drop(session);
        if restartable {
            ctx.stop(sys);
        }
    }
    Ok(())
}

/// The predicates whose matching heap blocks an experiment compares with `Heap Blocks:`.
pub fn predicates(table: &str) -> &'static [(&'static str, &'static str)] {
    match table {
        "eic_uniform" => &[("dense", "a < 140"), ("sparse", "a < 5")],
        _ => &[("cyclic", "a = 1")],
    }
}

/// Runs a script's `create` section, then its `fill` section for rows `first..=last` in
/// chunks of `chunk` rows, printing progress.
pub async fn create_and_fill(session: &Session, file: &SqlFile, rows: u64, chunk: u64) -> Res<()> {
    let t0 = Instant::now();
    session.run_all(&file.statements("create", &[])).await?;
    let mut done = 0;
    while done < rows {
        let last = (done + chunk).min(rows);
        let vars = [
            ("first", (done + 1).to_string()),
            ("last", last.to_string()),
        ];
        session.run_all(&file.statements("fill", &vars)).await?;
        done = last;
        eprintln!(
            "    {done} / {rows} rows  {:.1} s",
            t0.elapsed().as_secs_f64()
        );
    }
    Ok(())
}

/// Loads `table` through its script unless a marker says it holds `rows` rows already.
async fn ensure_loaded(
    session: &Session,
    sys: Sys,
    table: &str,
    file: &SqlFile,
    rows: u64,
    chunk: u64,
) -> Res<()> {
    let marker = format!("iolab_bench_loaded_{table}");
    if let Ok(n) = session.number(&format!("SELECT nrows FROM {marker}")).await {
        if n as u64 == rows {
            eprintln!("  {}: reusing {table} ({rows} rows)", sys.name());
            return Ok(());
        }
    }
    eprintln!("  {}: loading {table} ({rows} rows)", sys.name());
    let t0 = Instant::now();
    session
        .query(&format!("DROP TABLE IF EXISTS {marker}"))
        .await?;
    create_and_fill(session, file, rows, chunk).await?;
    session.run_all(&file.statements("finish", &[])).await?;
    session
        .query(&format!("CREATE TABLE {marker}(nrows BIGINT)"))
        .await?;
    session
        .query(&format!("INSERT INTO {marker} VALUES ({rows})"))
        .await?;
    eprintln!(
        "    loaded, analyzed and indexed in {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}

/// iolab's pg_stat_io totals over all rows: (I/Os read, blocks read, issue calls = `waits`).
#[derive(Clone, Copy, Default, Debug)]
pub struct IoCounts {
    pub reads: f64,
    pub blocks: f64,
    pub waits: f64,
}

pub async fn io_counts(session: &Session) -> Res<IoCounts> {
    let rows = session
        .query("SELECT coalesce(sum(reads), 0), coalesce(sum(read_bytes), 0), coalesce(sum(waits), 0) FROM pg_stat_io")
        .await?;
    let v = |i: usize| {
        rows.first()
            .and_then(|r| r.get(i))
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    Ok(IoCounts {
        reads: v(0),
        blocks: v(1) / 8192.0,
        waits: v(2),
    })
}

impl std::ops::Sub for IoCounts {
    type Output = IoCounts;
    fn sub(self, o: IoCounts) -> IoCounts {
        IoCounts {
            reads: self.reads - o.reads,
            blocks: self.blocks - o.blocks,
            waits: self.waits - o.waits,
        }
    }
}

/// What one cold run of some statements gave.
pub struct ColdRun {
    /// The rows of the statements, in order.
    pub rows: Vec<Vec<String>>,
    /// The client's time for the statements, ms.
    pub ms: f64,
    /// (iolab) pg_stat_io's deltas around them.
    pub io: Option<IoCounts>,
}

/// One cold run of `statements`: a new session, the pool emptied and the page cache dropped,
/// the statements timed by the client, and (iolab) pg_stat_io's deltas around them.
pub async fn cold_run(ctx: &Ctx, sys: Sys, statements: &[String]) -> Res<ColdRun> {
    let session = ctx.session(sys).await?;
    ctx.cold.prepare(&session).await?;
    let before = if sys == Sys::Iolab {
        Some(io_counts(&session).await?)
    } else {
        None
    };
    let t0 = Instant::now();
    let rows = session.run_all(statements).await?;
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    let io = match before {
        Some(b) => Some(io_counts(&session).await? - b),
        None => None,
    };
    Ok(ColdRun { rows, ms, io })
}

/// One cold EXPLAIN run ([`cold_run`]) and its plan.
pub async fn cold_explain(
    ctx: &Ctx,
    sys: Sys,
    statements: &[String],
) -> Res<(Plan, Option<IoCounts>)> {
    let run = cold_run(ctx, sys, statements).await?;
    let lines: Vec<String> = run
        .rows
        .into_iter()
        .filter_map(|r| r.into_iter().next())
        .collect();
    let plan = Plan::parse(&lines);
    if plan.execution_ms.is_none() {
        return Err(format!(
            "no Execution Time in the plan:\n{}",
            lines.join("\n")
        ));
    }
    Ok((plan, run.io))
}

/// PostgreSQL 18 has no read_stream_advice (iolab's setting): drop statements that set it.
pub fn for_system(sys: Sys, statements: Vec<String>) -> Vec<String> {
    match sys {
        Sys::Iolab => statements,
        Sys::Pg18 => statements
            .into_iter()
            .filter(|s| !s.contains("read_stream_advice"))
            .collect(),
    }
}
