//! The server's configuration files, read at start and again at `pg_reload_conf()`.
//!
//! The files are `iolab.conf` (or `--config`) and then `postgresql.auto.conf` (ALTER
//! SYSTEM's), both in postgresql.conf syntax. At a reload [`reload`] reads them again and
//! computes the server's new values (`ServerSettings::reload`: only what came from a file
//! or a default changes). The background writer, the checkpointer, the I/O workers
//! (`io_workers`) and the WAL (`fsync`, `full_page_writes`, `min_wal_size`) take their new
//! settings at once ([`LIVE_SIGHUP`]); the other `sighup` settings, read once at start
//! (`recovery_prefetch`, `ssl`, `log_startup_progress_interval`), wait for a restart as
//! the `postmaster` ones do, and show `pending_restart`. It logs what changed as PostgreSQL
//! does and counts a new generation; each session compares the generation with the one it
//! has adopted before its next statement outside a transaction block, and adopts the new
//! values for the settings it did not set itself (`SessionSettings::adopt_reloaded`).
//!
//! A server process has one configuration, as PostgreSQL's postmaster has: it is kept here
//! once [`init`] has run (the server's start; unit tests never run it, and there
//! `pg_reload_conf()` reports that nothing can be reloaded).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use iolab_settings::auto_conf::AUTO_CONF_FILE;
use iolab_settings::ServerSettings;
use parking_lot::{Mutex, RwLock};

/// The `sighup` settings a reload applies to the running server.
pub const LIVE_SIGHUP: &[&str] = &[
    "bgwriter_delay",
    "bgwriter_flush_after",
    "bgwriter_lru_maxpages",
    "bgwriter_lru_multiplier",
    "checkpoint_completion_target",
    "checkpoint_flush_after",
    "checkpoint_timeout",
    "fsync",
    "full_page_writes",
    "io_workers",
    "log_checkpoints",
    "max_wal_size",
    "min_wal_size",
    "wal_writer_delay",
];

/// Hands the server's new values to its background processes.
pub type ApplyToServer = Box<dyn Fn(&ServerSettings) + Send + Sync>;

struct Configuration {
    /// `iolab.conf` or `--config`, when there is one.
    config_file: Option<PathBuf>,
    data_dir: PathBuf,
    current: RwLock<Arc<ServerSettings>>,
    generation: AtomicU64,
    /// One reload at a time.
    reloading: Mutex<()>,
    apply: ApplyToServer,
}

static CONFIGURATION: OnceLock<Configuration> = OnceLock::new();

/// The configuration files to read, in order, with their text.
pub fn read_files(
    config_file: Option<&Path>,
    data_dir: &Path,
) -> Result<Vec<(String, String)>, String> {
    let auto_conf = data_dir.join(AUTO_CONF_FILE);
    let auto_conf = auto_conf.exists().then_some(auto_conf);
    let mut files = Vec::new();
    for path in config_file
        .map(Path::to_path_buf)
        .into_iter()
        .chain(auto_conf)
    {
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "could not read configuration file \"{}\": {e}",
                path.display()
            )
        })?;
        files.push((path.display().to_string(), text));
    }
    Ok(files)
}

/// `files` as `ServerSettings` takes them.
pub fn as_pairs(files: &[(String, String)]) -> Vec<(&str, &str)> {
    files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_str()))
        .collect()
}

/// Keeps the server's configuration as it started.
pub fn init(
    config_file: Option<PathBuf>,
    data_dir: PathBuf,
    settings: ServerSettings,
    apply: ApplyToServer,
) {
    let configuration = Configuration {
        config_file,
        data_dir,
        current: RwLock::new(Arc::new(settings)),
        generation: AtomicU64::new(0),
        reloading: Mutex::new(()),
        apply,
    };
    assert!(
        CONFIGURATION.set(configuration).is_ok(),
        "the configuration is set once"
    );
}

/// The server's values now and their generation (0 until the first reload); `None`
/// before [`init`].
pub fn current() -> Option<(Arc<ServerSettings>, u64)> {
    let c = CONFIGURATION.get()?;
    let settings = c.current.read().clone();
    Some((settings, c.generation.load(Ordering::Acquire)))
}

/// The generation sessions should have adopted (0 before [`init`]).
pub fn generation() -> u64 {
    CONFIGURATION
        .get()
        .map_or(0, |c| c.generation.load(Ordering::Acquire))
}

/// Reads the files again and makes their values the server's. An unreadable or bad file
/// changes nothing; its errors are logged, as PostgreSQL logs them.
pub fn reload() -> Result<(), String> {
    let c = CONFIGURATION
        .get()
        .ok_or("this process has no configuration files to reload")?;
    let _one = c.reloading.lock();
    tracing::info!("received SIGHUP, reloading configuration files");
    let files = match read_files(c.config_file.as_deref(), &c.data_dir) {
        Ok(files) => files,
        Err(e) => {
            tracing::warn!("{e}");
            return Ok(());
        }
    };
    let running = c.current.read().clone();
    let live = |name: &str| LIVE_SIGHUP.contains(&name);
    let reloaded = match running.reload(&as_pairs(&files), live) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("{}; no changes were applied", e.to_string().trim_end());
            return Ok(());
        }
    };
    for name in &reloaded.needs_restart {
        tracing::info!("parameter \"{name}\" cannot be changed without restarting the server");
    }
    for (name, value) in &reloaded.changed {
        tracing::info!("parameter \"{name}\" changed to \"{value}\"");
    }
    (c.apply)(&reloaded.settings);
    *c.current.write() = Arc::new(reloaded.settings);
    c.generation.fetch_add(1, Ordering::AcqRel);
    Ok(())
}
