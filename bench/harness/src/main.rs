//! iolab-bench: the seed I/O experiments as one command.
//!
//! For each selected experiment it starts iolab (one server per restart-only configuration),
//! creates or reuses the experiment's dataset, and runs a matrix of cells; every run of a cell
//! is cold (buffer pool emptied, page cache dropped, the same delay before each run) and each
//! cell is repeated (`--repeat`), round-robin over the cells of one server, so that drift
//! spreads over all of them. With `--pg18` the same SQL (from sql/experiments/*.sql) runs on
//! PostgreSQL 18. At the end it checks its figures for internal consistency, writes
//! results.csv, results.json and one PNG per experiment into `--out`, and prints a table.

mod cleanup;
mod client;
mod cold;
mod context;
mod experiments;
mod explain;
mod fio;
mod plot;
mod results;
mod server;
mod sqlfile;
mod summary;

use clap::Parser;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "iolab-bench",
    about = "Runs the seed I/O experiments on iolab (and PostgreSQL 18): cold runs, tables, CSV/JSON and PNG plots"
)]
pub struct Args {
    /// tiny: a smoke test (seconds per experiment); small: ≤ 10 minutes in release; full: 20 M rows.
    #[arg(long, default_value = "small", value_parser = ["tiny", "small", "full"])]
    pub scale: String,
    /// Comma-separated experiments to run.
    #[arg(
        long,
        default_value = "eic,advice,analyze,aio,recovery",
        value_delimiter = ','
    )]
    pub experiments: Vec<String>,
    /// Where results.csv, results.json, the PNGs and the server logs go
    /// (default: bench/results/iolab-bench-SCALE).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The iolab binary (build it first: cargo build --release --bin iolab).
    #[arg(long, default_value = "target/release/iolab")]
    pub iolab_bin: PathBuf,
    /// Also run everything PostgreSQL 18 can run, on the server at host:port.
    #[arg(long)]
    pub pg18: Option<String>,
    /// pg18-reference, to restart PostgreSQL 18 per io_method (otherwise the method it runs is used).
    #[arg(long)]
    pub pg18_ctl: Option<PathBuf>,
    /// Runs per cell (default: 1 at tiny, 3 otherwise).
    #[arg(long)]
    pub repeat: Option<usize>,
    /// Seconds between dropping the page cache and each cold run (default: 0 tiny, 1 small, 10 full).
    #[arg(long)]
    pub delay: Option<f64>,
    /// After the delay, also wait until the VM has reported the freed memory to its host
    /// (default: true at full scale).
    #[arg(long)]
    pub settle: Option<bool>,
    /// iolab's data directory; datasets in it are reused when present and of the same size.
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Redraw the PNGs and reprint the tables of an earlier run's DIR/results.json; runs nothing.
    #[arg(long, value_name = "DIR")]
    pub replot: Option<PathBuf>,
    /// The port iolab listens on.
    #[arg(long, default_value_t = 55450)]
    pub port: u16,
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args = Args::parse();
    cleanup::on_signals();
    let outcome = context::run(args).await;
    cleanup::run_all();
    match outcome {
        Ok(all_checks_passed) => std::process::exit(if all_checks_passed { 0 } else { 3 }),
        Err(e) => {
            eprintln!("iolab-bench: {e}");
            std::process::exit(1);
        }
    }
}
