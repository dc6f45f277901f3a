//! One run of the harness: the scale's parameters, the servers, cold-run preparation, the
//! datasets' facts, the tally of consistency checks, and the order of the experiments.

use crate::client::{Res, Session};
use crate::cold::{self, Cold};
use crate::experiments;
use crate::results::Results;
use crate::server::{Config, Iolab, Pg18};
use crate::Args;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The sizes of a scale. `shared_buffers` is the same on both systems; the tables are
/// several times larger, so a cold scan really reads.
pub struct Scale {
    pub name: &'static str,
    /// Rows of eic_uniform (eic, analyze, aio) and of advice_cyclic.
    pub rows: u64,
    pub advice_rows: u64,
    pub shared_buffers: &'static str,
    /// Rows per INSERT while loading (one progress line each).
    pub chunk: u64,
    pub repeat: usize,
    pub delay_s: f64,
    /// Wait for page reporting after each cache drop (`Cold::settle`).
    pub settle: bool,
}

pub fn scale(name: &str) -> Scale {
    match name {
        // 50 000 rows = 417 pages (3.4 MB) against a 1 MB pool (128 buffers; iolab's and
        // PostgreSQL's minimum is 16 buffers, 128kB).
        "tiny" => Scale {
            name: "tiny",
            rows: 50_000,
            advice_rows: 50_000,
            shared_buffers: "1MB",
            chunk: 25_000,
            repeat: 1,
            delay_s: 0.0,
            settle: false,
        },
        // 137 MB against 32 MB.
        "small" => Scale {
            name: "small",
            rows: 2_000_000,
            advice_rows: 2_000_000,
            shared_buffers: "32MB",
            chunk: 1_000_000,
            repeat: 3,
            delay_s: 1.0,
            settle: false,
        },
        // The seed's 20 M rows (1.37 GB) against PostgreSQL's default 128 MB.
        _ => Scale {
            name: "full",
            rows: 20_000_000,
            advice_rows: 20_000_000,
            shared_buffers: "128MB",
            chunk: 5_000_000,
            repeat: 3,
            delay_s: 10.0,
            settle: true,
        },
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, PartialOrd, Ord)]
pub enum Sys {
    Iolab,
    Pg18,
}

impl Sys {
    pub fn name(self) -> &'static str {
        match self {
            Sys::Iolab => "iolab",
            Sys::Pg18 => "pg18",
        }
    }
}

/// Facts about a loaded table on one system, measured once per run.
#[derive(Clone, Debug, Default)]
pub struct TableFacts {
    pub rows: f64,
    pub bytes: f64,
    /// Heap blocks holding rows that match each predicate (by ctid).
    pub blocks: BTreeMap<String, f64>,
}

pub struct Ctx {
    pub scale: Scale,
    pub repeat: usize,
    pub data_dir: PathBuf,
    pub iolab: Iolab,
    pub pg18: Option<Pg18>,
    pub cold: Cold,
    /// The page cache cannot be dropped: iolab runs with direct I/O throughout.
    pub force_direct: bool,
    pub results: Results,
    pub facts: BTreeMap<(Sys, String), TableFacts>,
    tallies: BTreeMap<(String, String), Tally>,
}

#[derive(Default)]
struct Tally {
    passed: usize,
    total: usize,
    first_failure: Option<String>,
}

impl Ctx {
    pub fn systems(&self) -> Vec<Sys> {
        if self.pg18.is_some() {
            vec![Sys::Iolab, Sys::Pg18]
        } else {
            vec![Sys::Iolab]
        }
    }

    /// Starts `sys` with `config`; Err is the reason the cells are n/a.
    pub async fn start(&mut self, sys: Sys, config: &Config) -> Res<()> {
        match sys {
            Sys::Iolab => self.iolab.start(config).await,
            Sys::Pg18 => {
                let pg = self.pg18.as_mut().expect("pg18 configured");
                if !pg.io_methods.is_empty() && !pg.io_methods.contains(&config.io_method) {
                    return Err(format!(
                        "PostgreSQL 18 here has no io_method {} (it offers {}: built without liburing)",
                        config.io_method,
                        pg.io_methods.join(", ")
                    ));
                }
                pg.start(config).await
            }
        }
    }

    pub fn stop(&mut self, sys: Sys) {
        match sys {
            Sys::Iolab => self.iolab.stop(),
            Sys::Pg18 => {
                if let Some(pg) = self.pg18.as_mut() {
                    if pg.restartable() {
                        pg.stop();
                    }
                }
            }
        }
    }

    pub async fn session(&self, sys: Sys) -> Res<Session> {
        match sys {
            Sys::Iolab => Session::connect(self.iolab.port, "127.0.0.1").await,
            Sys::Pg18 => self.pg18.as_ref().expect("pg18 configured").session().await,
        }
    }

    /// Counts one instance of a consistency check; reported once per (experiment, what).
    pub fn tally(
        &mut self,
        experiment: &str,
        what: &str,
        ok: bool,
        detail: impl FnOnce() -> String,
    ) {
        let t = self
            .tallies
            .entry((experiment.to_string(), what.to_string()))
            .or_default();
        t.total += 1;
        if ok {
            t.passed += 1;
        } else if t.first_failure.is_none() {
            let d = detail();
            eprintln!("  CHECK FAILED [{experiment}] {what}: {d}");
            t.first_failure = Some(d);
        }
    }

    fn finish_tallies(&mut self) {
        for ((experiment, what), t) in std::mem::take(&mut self.tallies) {
            let detail = match &t.first_failure {
                None => format!("{} of {} passed", t.passed, t.total),
                Some(f) => format!("{} of {} passed; first failure: {f}", t.passed, t.total),
            };
            self.results.checks.push(crate::results::Check {
                experiment,
                what,
                passed: t.passed == t.total,
                detail,
            });
        }
    }
}

/// Runs the experiments `args` selects; Ok(true) when every consistency check passed.
pub async fn run(args: Args) -> Res<bool> {
    if let Some(dir) = &args.replot {
        return replot(dir);
    }
    let scale = scale(&args.scale);
    let repeat = args.repeat.unwrap_or(scale.repeat).max(1);
    let delay = Duration::from_secs_f64(args.delay.unwrap_or(scale.delay_s).max(0.0));
    let settle = args.settle.unwrap_or(scale.settle);
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("bench/results/iolab-bench-{}", scale.name)));
    let logs = out.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| format!("{}: {e}", logs.display()))?;
    let data_dir = args
        .data_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("/var/tmp/iolab-bench/{}", scale.name)));
    std::fs::create_dir_all(data_dir.parent().unwrap_or(&data_dir))
        .map_err(|e| format!("{}: {e}", data_dir.display()))?;
    let bin = std::fs::canonicalize(&args.iolab_bin).map_err(|_| {
        format!(
            "no iolab binary at {} (cargo build --release --bin iolab, or give --iolab-bin)",
            args.iolab_bin.display()
        )
    })?;
    crate::plot::load_font()?;
    for e in &args.experiments {
        if !experiments::ALL.contains(&e.as_str()) {
            return Err(format!(
                "unknown experiment {e} (known: {})",
                experiments::ALL.join(",")
            ));
        }
    }

    let mut results = Results::default();
    let (drop_caches, force_direct) = match cold::drop_page_cache() {
        Ok(()) => (true, false),
        Err(e) => {
            results.note(format!(
                "{e}: cold runs use direct I/O for iolab (debug_io_direct = data) instead"
            ));
            (false, true)
        }
    };
    let pg18 = match &args.pg18 {
        Some(addr) => Some(Pg18::new(
            addr,
            args.pg18_ctl.as_deref(),
            scale.name,
            scale.shared_buffers,
        )?),
        None => None,
    };
    let meta = &mut results.meta;
    let mut put = |k: &str, v: serde_json::Value| {
        meta.insert(k.into(), v);
    };
    put("started", chrono::Utc::now().to_rfc3339().into());
    put("scale", scale.name.into());
    put("rows", scale.rows.into());
    put("shared_buffers", scale.shared_buffers.into());
    put("repeat", repeat.into());
    put("delay_s", delay.as_secs_f64().into());
    put("settle", settle.into());
    put("iolab_bin", bin.display().to_string().into());
    put(
        "debug_build",
        bin.to_string_lossy().contains("/debug/").into(),
    );
    put("drop_caches", drop_caches.into());
    put("pg18", args.pg18.clone().into());
    eprintln!(
        "iolab-bench: scale {} ({} rows, shared_buffers {}), {} run(s) per cell, {:.1} s delay after each cache drop{}; {}",
        scale.name,
        scale.rows,
        scale.shared_buffers,
        repeat,
        delay.as_secs_f64(),
        if settle { ", then until freed memory is reported" } else { "" },
        bin.display()
    );
    if bin.to_string_lossy().contains("/debug/") {
        eprintln!("  (a debug build of iolab: its figures say little about speed)");
    }
    let iolab = Iolab::new(bin, data_dir.clone(), args.port, scale.shared_buffers, logs);
    let mut ctx = Ctx {
        scale,
        repeat,
        data_dir,
        iolab,
        pg18,
        cold: Cold {
            drop_caches,
            delay,
            settle,
        },
        force_direct,
        results,
        facts: BTreeMap::new(),
        tallies: BTreeMap::new(),
    };

    // The experiments in their fixed order, whatever order --experiments gave.
    let selected: Vec<&str> = experiments::ALL
        .into_iter()
        .filter(|name| args.experiments.iter().any(|e| e == name))
        .collect();
    experiments::prepare_datasets(&mut ctx, &args.experiments).await?;
    for name in &selected {
        eprintln!("== experiment {name}");
        experiments::run(&mut ctx, name).await?;
    }
    ctx.stop(Sys::Iolab);
    ctx.stop(Sys::Pg18);
    ctx.finish_tallies();
    for c in &mut ctx.results.cells {
        c.summarize();
    }
    report(&ctx, &selected, &out)
}

/// `--replot DIR`: the PNGs and tables again from DIR/results.json.
fn replot(dir: &std::path::Path) -> Res<bool> {
    crate::plot::load_font()?;
    let path = dir.join("results.json");
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let results: Results =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let selected: Vec<&str> = experiments::ALL
        .into_iter()
        .filter(|name| results.cells.iter().any(|c| c.experiment == *name))
        .collect();
    let scale_name = results
        .meta
        .get("scale")
        .and_then(|v| v.as_str())
        .unwrap_or("small");
    let repeat = results
        .meta
        .get("repeat")
        .and_then(|v| v.as_u64())
        .unwrap_or(1) as usize;
    print_report(&results, scale(scale_name).name, repeat, &selected, dir)
}

/// Writes results.csv, results.json and the PNGs into `out` and prints the tables, checks
/// and notes; true when every check passed.
fn report(ctx: &Ctx, selected: &[&str], out: &std::path::Path) -> Res<bool> {
    let r = &ctx.results;
    r.write_csv(&out.join("results.csv"))
        .map_err(|e| format!("results.csv: {e}"))?;
    r.write_json(&out.join("results.json"))
        .map_err(|e| format!("results.json: {e}"))?;
    print_report(r, ctx.scale.name, ctx.repeat, selected, out)
}

/// Draws the PNGs into `out` and prints the tables, checks and notes.
fn print_report(
    r: &Results,
    scale: &str,
    repeat: usize,
    selected: &[&str],
    out: &std::path::Path,
) -> Res<bool> {
    for name in selected {
        if let Some(png) =
            crate::plot::draw(r, name, out).map_err(|e| format!("plot {name}: {e}"))?
        {
            eprintln!("plot: {}", png.display());
        }
    }
    println!(
        "\n== results (scale {}, {} run(s) per cell: median (min–max))",
        scale, repeat
    );
    for name in selected {
        println!("\n-- {name}: {}", experiments::describe(name));
        if let Some(layout) = experiments::layout(name) {
            print!("{}", r.table(name, &layout));
        }
    }
    println!("\n-- consistency checks");
    for c in &r.checks {
        println!(
            "  [{}] {:<5} {}: {}",
            c.experiment,
            if c.passed { "ok" } else { "FAIL" },
            c.what,
            c.detail
        );
    }
    for n in &r.notes {
        println!("note: {n}");
    }
    println!(
        "\nCSV: {}  JSON: {}",
        out.join("results.csv").display(),
        out.join("results.json").display()
    );
    Ok(r.checks.iter().all(|c| c.passed))
}
