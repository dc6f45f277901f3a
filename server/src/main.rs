//! `iolab`: a PostgreSQL-wire-compatible server for studying database I/O.

mod config_reload;
mod copy;
mod error_position;
mod errors;
mod explain;
mod metrics;
mod pgcatalog;
mod server;
mod session;
mod show;
mod sql;
mod statement_stats;
mod statement_timer;
mod stats_sampler;
mod wire;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;

use clap::Parser;
use iolab_engine::aio::AioConfig;
use iolab_engine::buffer::bgwriter::BgWriterOptions;
use iolab_engine::db::{HugePageKind, HugePages};
use iolab_engine::wal::checkpointer::CheckpointOptions;
use iolab_engine::wal::recovery::RecoveryOptions;
use iolab_engine::wal::WalOptions;
use iolab_engine::{Database, DatabaseOptions};

/// Issuers of I/O besides client sessions that size the AIO handle table and
/// `io_max_concurrency` (PostgreSQL counts autovacuum, background and auxiliary processes;
/// iolab's equivalents are the maintenance and parallel scans of sessions).
const AUXILIARY_ISSUERS: usize = 73;
use iolab_settings::ServerSettings;
use pgwire::api::{ConnectionManager, RandomPidSecretKeyGenerator};

/// A PostgreSQL-wire-compatible server for studying database I/O.
///
/// Every PostgreSQL setting iolab knows can be given with `-c name=value` (as `postgres
/// -c` takes it) or in the configuration file (`iolab.conf` in the data directory, or
/// `--config`); the command line wins. Connect with `psql -h 127.0.0.1 -U postgres`.
#[derive(Parser, Debug)]
#[command(name = "iolab", version, about)]
struct Cli {
    /// Data directory; created and initialised if it does not exist.
    #[arg(short = 'D', long = "data-dir", default_value = "iolab-data")]
    data_dir: PathBuf,

    /// TCP port to listen on (the `port` setting).
    #[arg(short = 'p', long)]
    port: Option<u16>,

    /// Address to listen on (the `listen_addresses` setting; one address).
    #[arg(long = "listen")]
    listen: Option<String>,

    /// Set a setting: `-c name=value`; may be repeated.
    #[arg(short = 'c', value_name = "NAME=VALUE")]
    settings: Vec<String>,

    /// Configuration file in postgresql.conf syntax [default: DATA_DIR/iolab.conf if present].
    #[arg(long = "config")]
    config: Option<PathBuf>,

    /// Require this password (SCRAM-SHA-256) from every client; without it, only
    /// loopback connections are accepted, without a password. Also read from
    /// IOLAB_PASSWORD.
    #[arg(long, env = "IOLAB_PASSWORD", hide_env_values = true)]
    password: Option<String>,
}

fn main() {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("IOLAB_LOG")
                .unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    if let Err(message) = run(cli) {
        eprintln!("iolab: {message}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let mut settings = load_settings(&cli)?;
    let listen = settings
        .get("listen_addresses")
        .unwrap_or_else(|_| "127.0.0.1".into());
    let listen = match listen.as_str() {
        "localhost" => "127.0.0.1".to_string(),
        "*" => "0.0.0.0".to_string(),
        _ => listen,
    };
    let port: u16 = settings
        .get("port")
        .ok()
        .and_then(|p| p.parse().ok())
        .ok_or("invalid port setting")?;
    let shared_buffers = settings.shared_buffers_blocks() as usize;
    // io_max_concurrency = -1: PostgreSQL's automatic value, the pool divided among every
    // process that could issue I/O, between 1 and 64.
    let max_connections: usize = settings
        .get("max_connections")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let issuers = max_connections + AUXILIARY_ISSUERS;
    if settings.io_max_concurrency() == -1 {
        let auto = (shared_buffers / issuers).clamp(1, 64);
        settings
            .set_dynamic_default("io_max_concurrency", &auto.to_string())
            .map_err(|e| e.to_string())?;
    }
    // wal_buffers = -1: PostgreSQL's automatic value, 1/32 of shared_buffers, between 64 kB
    // and one WAL segment (16 MB).
    if settings.wal_buffers_blocks() == -1 {
        let auto = (shared_buffers / 32).clamp(8, 2048);
        settings
            .set_dynamic_default("wal_buffers", &auto.to_string())
            .map_err(|e| e.to_string())?;
    }
    let options = DatabaseOptions {
        wal: WalOptions {
            buffer_bytes: settings.wal_buffers_blocks().max(8) as usize * 8192,
            full_page_writes: settings.full_page_writes(),
            fsync: settings.fsync(),
            track_io_timing: settings.track_wal_io_timing(),
            init_zero: settings.wal_init_zero(),
            recycle: settings.wal_recycle(),
            recycle_up_to: wal_recycle_up_to(&settings),
            ..WalOptions::default()
        },
        recovery: RecoveryOptions {
            prefetch: settings.recovery_prefetch() != "off",
            maintenance_io_concurrency: settings.maintenance_io_concurrency().max(0) as u32,
            decode_buffer_bytes: settings.wal_decode_buffer_size_bytes() as usize,
            progress_interval: match settings.log_startup_progress_interval_ms() {
                0 => None,
                ms => Some(std::time::Duration::from_millis(ms as u64)),
            },
        },
        checkpoints: checkpoint_options(&settings),
        bgwriter: bgwriter_options(&settings),
        aio: AioConfig {
            method: settings.io_method(),
            io_workers: settings.io_workers().max(1) as usize,
            max_concurrency: settings.io_max_concurrency().max(1) as usize,
            max_issuers: issuers,
        },
        shared_buffers,
        lock_table_entries: settings.max_locks_per_transaction().max(10) as usize
            * settings.max_connections().max(1) as usize,
        direct_io: settings.debug_io_direct().iter().any(|item| item == "data"),
        huge_pages: settings
            .huge_pages()
            .parse::<HugePages>()
            .expect("huge_pages is off, on or try"),
    };

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("iolab")
        .build()
        .map_err(|e| format!("could not start the runtime: {e}"))?;
    runtime.block_on(async move {
        let db = Database::open(&cli.data_dir, &options).map_err(|e| {
            if e.severity == iolab_catalog::error::Severity::Fatal {
                // As PostgreSQL logs a FATAL start-up error (the buffer pool's mapping).
                let mut text = format!("FATAL:  {}", e.message);
                if let Some(hint) = &e.hint {
                    text.push_str(&format!("\nHINT:  {hint}"));
                }
                return text;
            }
            format!(
                "could not open data directory \"{}\": {}",
                cli.data_dir.display(),
                e.message
            )
        })?;
        match sql::ddl_log::recover(&db) {
            Ok(done) => {
                if done.undone > 0 {
                    tracing::info!(
                        "undid {} DDL change(s) of transactions the last run left open",
                        done.undone
                    );
                }
                if done.completed > 0 {
                    tracing::info!(
                        "completed {} DDL change(s) of transactions that committed just before the crash",
                        done.completed
                    );
                }
            }
            Err(e) => return Err(format!("could not recover open DDL: {}", e.message)),
        }
        let huge_kind = db.huge_page_kind();
        settings
            .set_dynamic_default(
                "huge_pages_status",
                if huge_kind.is_huge() { "on" } else { "off" },
            )
            .map_err(|e| e.to_string())?;
        let mib = |bytes: usize| bytes as f64 / (1024.0 * 1024.0);
        let pool_bytes = shared_buffers * 8192;
        match huge_kind {
            HugePageKind::Hugetlb => tracing::info!(
                "buffer pool: {:.0} MiB in 2 MiB hugetlb pages (huge_pages = {})",
                mib(pool_bytes),
                options.huge_pages.as_str()
            ),
            HugePageKind::Transparent => tracing::info!(
                "buffer pool: {:.0} MiB in transparent huge pages ({:.0} MiB of it in 2 MiB pages; huge_pages = {})",
                mib(pool_bytes),
                mib(db.huge_page_bytes()),
                options.huge_pages.as_str()
            ),
            HugePageKind::None => tracing::info!(
                "buffer pool: {:.0} MiB in 4 KiB pages (huge_pages = {})",
                mib(pool_bytes),
                options.huge_pages.as_str()
            ),
        }
        if settings.io_method() != db.aio.method() {
            settings
                .set_override("io_method", db.aio.method().name())
                .map_err(|e| e.to_string())?;
        }
        tracing::info!(
            "io_method {} (io_workers {}, io_max_concurrency {})",
            db.aio.method().name(),
            settings.io_workers(),
            settings.io_max_concurrency()
        );
        tracing::info!(
            "data file I/O: {}",
            if db.direct_io() {
                "direct (O_DIRECT, debug_io_direct = data)"
            } else {
                "buffered (through the kernel page cache)"
            }
        );
        let addr: SocketAddr = format!("{listen}:{port}")
            .parse()
            .or_else(|_| format!("[{listen}]:{port}").parse())
            .map_err(|_| format!("invalid listen address \"{listen}\""))?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("could not listen on {addr}: {e}"))?;
        let data_dir = std::fs::canonicalize(&cli.data_dir).unwrap_or(cli.data_dir.clone());
        let server_track_io_timing = settings.track_io_timing();
        let reloaded_db = Arc::downgrade(&db);
        let apply = move |s: &ServerSettings| {
            if let Some(db) = reloaded_db.upgrade() {
                db.checkpointer.set_options(checkpoint_options(s));
                db.set_bgwriter_options(bgwriter_options(s));
                db.wal
                    .reload(s.fsync(), s.full_page_writes(), wal_recycle_up_to(s));
                if let Err(e) = db.aio.set_io_workers(s.io_workers().max(1) as usize) {
                    tracing::warn!("could not start I/O workers: {e}");
                }
            }
        };
        config_reload::init(
            config_file(&cli),
            cli.data_dir.clone(),
            settings.clone(),
            Box::new(apply),
        );
        let server = Arc::new(server::Server {
            db: db.clone(),
            settings,
            connections: Arc::new(ConnectionManager::new()),
            pids: Arc::new(RandomPidSecretKeyGenerator::default()),
            connection_count: AtomicUsize::new(0),
            password: cli.password.clone(),
            plan_cache: Default::default(),
        });
        tracing::info!(
            "iolab {} listening on {addr}; data directory {}; shared_buffers {} ({} buffers)",
            env!("CARGO_PKG_VERSION"),
            data_dir.display(),
            server.settings.get("shared_buffers").unwrap_or_default(),
            shared_buffers,
        );
        let host = if addr.ip().is_unspecified() {
            "127.0.0.1".to_string()
        } else {
            addr.ip().to_string()
        };
        stats_sampler::start(
            db.clone(),
            server.settings.stats_history_interval_ms(),
            server.settings.stats_history_retention_s(),
        );
        if let Some(metrics_addr) = metrics::start(
            db.clone(),
            &server.settings.metrics_listen_address(),
            server.settings.metrics_port(),
        )
        .await?
        {
            tracing::info!("Prometheus metrics at http://{metrics_addr}/metrics");
        }
        eprintln!("iolab is ready: connect with  psql -h {host} -p {port} -U postgres");
        tokio::spawn(reload_on_sighup());
        wire::serve(server, listener, shutdown_signal()).await;
        end_client_sessions(&db).await;
        tracing::info!("shutting down: writing dirty buffers");
        let written =
            tokio::task::block_in_place(|| db.shutdown_checkpoint(server_track_io_timing))
            .map_err(|e| format!("shutdown checkpoint failed: {}", e.message))?;
        tracing::info!("shutdown complete ({written} buffers written)");
        Ok::<(), String>(())
    })?;
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    Ok(())
}

/// A shutdown ends the client sessions as PostgreSQL's fast shutdown does: each gets
/// `FATAL 57P01 terminating connection due to administrator command` and counts in
/// `pg_stat_database.sessions_killed`. Waits up to `SESSION_END_WAIT` for them to be gone,
/// so that the statistics saved by the shutdown checkpoint count them.
async fn end_client_sessions(db: &iolab_engine::Database) {
    const SESSION_END_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
    let live = db.io_stats.activity.clients();
    if live.is_empty() {
        return;
    }
    tracing::info!("shutting down: terminating {} client sessions", live.len());
    for session in live {
        session.terminate();
    }
    let deadline = std::time::Instant::now() + SESSION_END_WAIT;
    while !db.io_stats.activity.clients().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// Bytes of old WAL segments kept for reuse: `min_wal_size`, capped at `max_wal_size`.
fn wal_recycle_up_to(settings: &ServerSettings) -> u64 {
    settings.min_wal_size_mb().min(settings.max_wal_size_mb()) as u64 * 1024 * 1024
}

/// `checkpoint_*`, `max_wal_size`, `wal_writer_delay`, `log_checkpoints`: at start, and
/// again at a configuration reload.
fn checkpoint_options(settings: &ServerSettings) -> CheckpointOptions {
    CheckpointOptions {
        timeout: std::time::Duration::from_secs(settings.checkpoint_timeout_s() as u64),
        max_wal_size: settings.max_wal_size_mb() as u64 * 1024 * 1024,
        completion_target: settings.checkpoint_completion_target(),
        wal_writer_delay: std::time::Duration::from_millis(settings.wal_writer_delay_ms() as u64),
        log_checkpoints: settings.log_checkpoints(),
        track_io_timing: settings.track_io_timing(),
        flush_after: settings.checkpoint_flush_after_blocks().max(0) as usize,
    }
}

/// `bgwriter_*`: at start, and again at a configuration reload.
fn bgwriter_options(settings: &ServerSettings) -> BgWriterOptions {
    BgWriterOptions {
        delay: std::time::Duration::from_millis(settings.bgwriter_delay_ms() as u64),
        lru_maxpages: settings.bgwriter_lru_maxpages().max(0) as usize,
        lru_multiplier: settings.bgwriter_lru_multiplier(),
        track_io_timing: settings.track_io_timing(),
        flush_after: settings.bgwriter_flush_after_blocks().max(0) as usize,
    }
}

/// The configuration file: `--config`, or `iolab.conf` in the data directory if present.
fn config_file(cli: &Cli) -> Option<PathBuf> {
    cli.config.clone().or_else(|| {
        let default = cli.data_dir.join("iolab.conf");
        default.exists().then_some(default)
    })
}

/// Settings from defaults, the configuration file, `postgresql.auto.conf` (ALTER SYSTEM's)
/// and the command line, in that order.
fn load_settings(cli: &Cli) -> Result<ServerSettings, String> {
    let files = config_reload::read_files(config_file(cli).as_deref(), &cli.data_dir)?;
    let mut pairs: Vec<(String, String)> = Vec::new();
    for item in &cli.settings {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| format!("-c {item} requires a value (-c name=value)"))?;
        pairs.push((name.trim().replace('-', "_"), value.trim().to_string()));
    }
    if let Some(port) = cli.port {
        pairs.push(("port".into(), port.to_string()));
    }
    if let Some(listen) = &cli.listen {
        pairs.push(("listen_addresses".into(), listen.clone()));
    }
    pairs.push(("data_directory".into(), cli.data_dir.display().to_string()));
    ServerSettings::load_files(&config_reload::as_pairs(&files), &pairs)
        .map_err(|e| e.to_string().trim_end().to_string())
}

/// `kill -HUP` (`pg_ctl reload`): the configuration files are read again, as
/// `pg_reload_conf()` does.
async fn reload_on_sighup() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup()).expect("SIGHUP handler");
    while hup.recv().await.is_some() {
        if let Err(e) = config_reload::reload() {
            tracing::warn!("{e}");
        }
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    tokio::select! {
        _ = term.recv() => tracing::info!("received SIGTERM"),
        _ = int.recv() => tracing::info!("received SIGINT"),
    }
}
