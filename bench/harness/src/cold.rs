//! Making a run cold: the buffer pool emptied (`pg_buffercache_evict_all()`, on iolab and on
//! PostgreSQL 18), the page cache dropped (`/proc/sys/vm/drop_caches`), then the same delay
//! for every run (see machine-io-facts.md: on this VM the time between the drop and the read
//! changes cold buffered figures) and, when asked, the wait until the VM has reported the
//! freed memory to its host, so that every run starts from the same state (`bench/lib.sh`
//! `cold_wait` explains why). Where the page cache cannot be dropped, the harness runs
//! iolab with direct I/O instead and says so. Also the device readahead of the data directory
//! (`read_ahead_kb`, what `blockdev --setra` sets), changed only through a guard that restores it.

use crate::cleanup;
use crate::client::{Res, Session};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// `sync; echo 3 > /proc/sys/vm/drop_caches`; Err where not permitted.
pub fn drop_page_cache() -> Result<(), String> {
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", "3")
        .map_err(|e| format!("cannot write /proc/sys/vm/drop_caches: {e}"))
}

pub struct Cold {
    pub drop_caches: bool,
    pub delay: Duration,
    /// After the delay, wait until page reporting is quiet ([`wait_for_page_reporting`]).
    pub settle: bool,
}

/// Where this VM's kernel counts the free memory it has reported to its host.
const PAGE_REPORTING_COUNTER: &str = "/sys/module/page_reporting/parameters/reported_kib";

/// Waits until the page-reporting counter has stood still for 4 s (at most 60 s); returns
/// at once where the kernel has no such counter.
async fn wait_for_page_reporting() {
    let read = || std::fs::read_to_string(PAGE_REPORTING_COUNTER).ok();
    let Some(mut last) = read() else {
        return;
    };
    let (poll, quiet_enough) = (Duration::from_millis(500), Duration::from_secs(4));
    let (start, mut quiet) = (Instant::now(), Duration::ZERO);
    while quiet < quiet_enough && start.elapsed() < Duration::from_secs(60) {
        tokio::time::sleep(poll).await;
        match read() {
            Some(now) if now != last => (last, quiet) = (now, Duration::ZERO),
            _ => quiet += poll,
        }
    }
}

impl Cold {
    /// Empties the server's buffer pool and (where permitted) the page cache, then waits.
    pub async fn prepare(&self, session: &Session) -> Res<()> {
        session
            .query("SELECT count(*) FROM pg_buffercache_evict_all()")
            .await?;
        self.settle().await
    }

    /// Drops the page cache (where permitted) and waits the delay (and for page reporting).
    pub async fn settle(&self) -> Res<()> {
        if self.drop_caches {
            drop_page_cache()?;
        }
        tokio::time::sleep(self.delay).await;
        if self.drop_caches && self.settle {
            wait_for_page_reporting().await;
        }
        Ok(())
    }
}

/// The sysfs readahead file of the whole disk holding `dir` (a partition's parent disk).
pub fn readahead_file(dir: &Path) -> Res<PathBuf> {
    let dev = std::fs::metadata(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .dev();
    let (major, minor) = (libc::major(dev), libc::minor(dev));
    let sys = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let real = std::fs::canonicalize(&sys).map_err(|_| {
        format!(
            "no block device for {} ({major}:{minor}: not a disk?)",
            dir.display()
        )
    })?;
    for candidate in [
        real.join("queue/read_ahead_kb"),
        real.join("../queue/read_ahead_kb"),
    ] {
        if candidate.exists() {
            return Ok(candidate);
        }
    }
    Err(format!("{} has no queue/read_ahead_kb", real.display()))
}

/// A changed readahead, restored when dropped (and on Ctrl-C, through `cleanup`).
pub struct Readahead {
    file: PathBuf,
    old: String,
}

impl Readahead {
    pub fn current(file: &Path) -> Res<String> {
        std::fs::read_to_string(file)
            .map(|s| s.trim().to_string())
            .map_err(|e| format!("{}: {e}", file.display()))
    }

    /// Sets the readahead to `kb`; Err (nothing changed) where not permitted.
    pub fn set(file: &Path, kb: u32) -> Res<Readahead> {
        let old = Self::current(file)?;
        std::fs::write(file, kb.to_string())
            .map_err(|e| format!("cannot set {}: {e}", file.display()))?;
        let (f, o) = (file.to_path_buf(), old.clone());
        cleanup::register("device readahead", move || {
            let _ = std::fs::write(&f, &o);
        });
        Ok(Readahead {
            file: file.to_path_buf(),
            old,
        })
    }
}

impl Drop for Readahead {
    fn drop(&mut self) {
        if let Err(e) = std::fs::write(&self.file, &self.old) {
            eprintln!(
                "iolab-bench: could not restore {} to {}: {e}",
                self.file.display(),
                self.old
            );
        }
        cleanup::done("device readahead");
    }
}
