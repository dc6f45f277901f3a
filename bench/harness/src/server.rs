//! The two systems under test. iolab is started by the harness, one server per
//! configuration (io_method and direct I/O are restart-only settings). PostgreSQL 18 is
//! either restarted per configuration through `pg18-reference` (`--pg18-ctl`) in a data
//! directory of the harness's own beside the reference's, or taken as it runs.

use crate::cleanup;
use crate::client::{Res, Session};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A server configuration: the restart-only settings the experiments vary.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub io_method: String,
    pub direct: bool,
}

impl Config {
    pub fn new(io_method: &str, direct: bool) -> Config {
        Config {
            io_method: io_method.to_string(),
            direct,
        }
    }
    pub fn io(&self) -> &'static str {
        if self.direct {
            "direct"
        } else {
            "buffered"
        }
    }
    pub fn label(&self) -> String {
        format!("{}/{}", self.io_method, self.io())
    }
}

/// How long a server may take to start (a full-scale data directory opens quickly; a debug
/// build on a busy machine takes a few seconds).
const START_TIMEOUT: Duration = Duration::from_secs(300);

pub struct Iolab {
    pub bin: PathBuf,
    pub data_dir: PathBuf,
    pub port: u16,
    pub shared_buffers: String,
    pub logs: PathBuf,
    child: Option<Child>,
}

impl Iolab {
    pub fn new(
        bin: PathBuf,
        data_dir: PathBuf,
        port: u16,
        shared_buffers: &str,
        logs: PathBuf,
    ) -> Iolab {
        Iolab {
            bin,
            data_dir,
            port,
            shared_buffers: shared_buffers.to_string(),
            logs,
            child: None,
        }
    }

    /// Starts iolab with `config`; Err says why it did not start or runs something else
    /// (io_uring falls back to worker where the kernel refuses it).
    pub async fn start(&mut self, config: &Config) -> Res<()> {
        let log_path = self
            .logs
            .join(format!("iolab-{}-{}.log", config.io_method, config.io()));
        let data_dir = self.data_dir.clone();
        self.start_in(&data_dir, config, &[], &log_path).await
    }

    /// [`start`](Self::start) on `data_dir` (created if missing) with further `-c name=value`
    /// `settings`, its stdout and stderr (the tracing log) into `log_path`.
    pub async fn start_in(
        &mut self,
        data_dir: &Path,
        config: &Config,
        settings: &[(&str, String)],
        log_path: &Path,
    ) -> Res<()> {
        self.stop();
        let log =
            std::fs::File::create(log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--data-dir")
            .arg(data_dir)
            .args(["--port", &self.port.to_string(), "--listen", "127.0.0.1"])
            .args(["-c", &format!("shared_buffers={}", self.shared_buffers)])
            .args([
                "-c",
                "track_io_timing=on",
                "-c",
                &format!("io_method={}", config.io_method),
            ]);
        if config.direct {
            cmd.args(["-c", "debug_io_direct=data", "-c", "huge_pages=try"]);
        }
        for (name, value) in settings {
            cmd.args(["-c", &format!("{name}={value}")]);
        }
        let child = cmd
            .stdout(Stdio::from(log.try_clone().map_err(|e| e.to_string())?))
            .stderr(Stdio::from(log))
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        let pid = child.id() as i32;
        cleanup::register("iolab server", move || stop_pid(pid));
        self.child = Some(child);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(session) = Session::connect(self.port, "127.0.0.1").await {
                let running = session.text("SHOW io_method").await?;
                if running != config.io_method {
                    self.stop();
                    return Err(format!(
                        "asked for io_method={}, iolab runs {running} (see {})",
                        config.io_method,
                        log_path.display()
                    ));
                }
                return Ok(());
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                cleanup::done("iolab server");
                let text = std::fs::read_to_string(log_path).unwrap_or_default();
                let last = text
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                return Err(format!("iolab exited ({status}): {last}"));
            }
            if Instant::now() > deadline {
                self.stop();
                return Err(format!(
                    "iolab not ready after {} s",
                    START_TIMEOUT.as_secs()
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            stop_pid(child.id() as i32);
            let _ = child.wait();
            cleanup::done("iolab server");
        }
    }

    /// `kill -9`: the server ends at once, its data directory as a crash leaves it.
    pub fn crash(&mut self) {
        if let Some(mut child) = self.child.take() {
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            let _ = child.wait();
            cleanup::done("iolab server");
        }
    }
}

impl Drop for Iolab {
    fn drop(&mut self) {
        self.stop();
    }
}

/// SIGTERM (iolab writes dirty buffers and exits), SIGKILL after 60 s.
fn stop_pid(pid: i32) {
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let mut status = 0;
        let reaped = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if reaped == pid || unsafe { libc::kill(pid, 0) } != 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe { libc::kill(pid, libc::SIGKILL) };
}

/// PostgreSQL 18, at `host:port`.
pub struct Pg18 {
    pub host: String,
    pub port: u16,
    /// `pg18-reference`, and the data directory the harness gives it.
    ctl: Option<(PathBuf, PathBuf)>,
    pub shared_buffers: String,
    /// What the harness started: the configuration, the data directory and PG18_OPTS.
    running: Option<(Config, PathBuf, String)>,
    /// io_method values this build accepts (no io_uring without liburing).
    pub io_methods: Vec<String>,
}

impl Pg18 {
    /// `addr` is host:port; with `ctl` the harness restarts the server per configuration
    /// in `DIR/iolab-bench-<scale>` beside pg18-reference's own data directory.
    pub fn new(addr: &str, ctl: Option<&Path>, scale: &str, shared_buffers: &str) -> Res<Pg18> {
        let (host, port) = addr
            .rsplit_once(':')
            .ok_or_else(|| format!("--pg18 wants host:port, not {addr}"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("--pg18: bad port in {addr}"))?;
        let ctl = match ctl {
            None => None,
            Some(ctl) => {
                let out = Command::new(ctl)
                    .arg("env")
                    .output()
                    .map_err(|e| format!("{}: {e}", ctl.display()))?;
                let env = String::from_utf8_lossy(&out.stdout);
                let data = env
                    .lines()
                    .find_map(|l| l.strip_prefix("PG18_DATA="))
                    .ok_or_else(|| format!("{} env printed no PG18_DATA", ctl.display()))?;
                let home = Path::new(data).parent().unwrap_or(Path::new("/tmp"));
                Some((ctl.to_path_buf(), home.join(format!("iolab-bench-{scale}"))))
            }
        };
        Ok(Pg18 {
            host: host.to_string(),
            port,
            ctl,
            shared_buffers: shared_buffers.to_string(),
            running: None,
            io_methods: Vec::new(),
        })
    }

    pub fn restartable(&self) -> bool {
        self.ctl.is_some()
    }

    /// The data directory the harness runs PostgreSQL 18 in (with `--pg18-ctl`).
    pub fn data_dir(&self) -> Option<&Path> {
        self.ctl.as_ref().map(|(_, data)| data.as_path())
    }

    pub async fn session(&self) -> Res<Session> {
        Session::connect(self.port, &self.host).await
    }

    /// Makes the server run `config`: restarts it through pg18-reference, or checks that
    /// the running server already has it.
    pub async fn start(&mut self, config: &Config) -> Res<()> {
        self.start_in(config, None, &[]).await
    }

    /// [`start`](Self::start) in data directory `data` (default: the harness's own; one
    /// without PG_VERSION is initialized by pg18-reference) with further `-c name=value`
    /// `settings`. Without `--pg18-ctl` `data` and `settings` cannot be had.
    pub async fn start_in(
        &mut self,
        config: &Config,
        data: Option<&Path>,
        settings: &[(&str, String)],
    ) -> Res<()> {
        if let Some((ctl, default_data)) = self.ctl.clone() {
            let data = data.map(Path::to_path_buf).unwrap_or(default_data);
            let mut opts = format!(
                "-c max_parallel_workers_per_gather=0 -c autovacuum=off -c shared_buffers={} -c io_method={}",
                self.shared_buffers, config.io_method
            );
            if config.direct {
                opts.push_str(" -c debug_io_direct=data");
            }
            for (name, value) in settings {
                opts.push_str(&format!(" -c {name}={value}"));
            }
            let wanted = (config.clone(), data.clone(), opts.clone());
            if self.running.as_ref() == Some(&wanted) {
                return Ok(());
            }
            self.stop();
            let out = Command::new(&ctl)
                .arg("start")
                .env("PG18_DATA", &data)
                .env("PG18_PORT", self.port.to_string())
                .env("PG18_OPTS", opts)
                .output()
                .map_err(|e| format!("{}: {e}", ctl.display()))?;
            if !out.status.success() {
                pg_ctl_stop(&ctl, &data, self.port);
                let err = String::from_utf8_lossy(&out.stderr);
                return Err(format!(
                    "PostgreSQL 18 did not start: {}",
                    err.lines().last().unwrap_or("")
                ));
            }
            let (ctl2, data2, port) = (ctl.clone(), data.clone(), self.port);
            cleanup::register("PostgreSQL 18 server", move || {
                pg_ctl_stop(&ctl2, &data2, port)
            });
            self.running = Some(wanted);
        } else if data.is_some() || !settings.is_empty() {
            return Err("needs --pg18-ctl (the harness must start PostgreSQL 18 itself)".into());
        }
        let session = self.session().await?;
        if self.io_methods.is_empty() {
            let vals = session.text("SELECT array_to_string(enumvals, ',') FROM pg_settings WHERE name = 'io_method'").await?;
            self.io_methods = vals.split(',').map(str::to_string).collect();
        }
        let method = session.text("SHOW io_method").await?;
        let direct = session.text("SHOW debug_io_direct").await?.contains("data");
        if method != config.io_method || direct != config.direct {
            return Err(format!(
                "the PostgreSQL 18 at {}:{} runs io_method={method}{}; give --pg18-ctl to restart it per configuration",
                self.host, self.port, if direct { " with direct I/O" } else { "" }
            ));
        }
        session
            .query("CREATE EXTENSION IF NOT EXISTS pg_buffercache")
            .await?;
        Ok(())
    }

    pub fn stop(&mut self) {
        if let (Some((ctl, _)), Some((_, data, _))) = (&self.ctl, self.running.take()) {
            pg_ctl_stop(ctl, &data, self.port);
            cleanup::done("PostgreSQL 18 server");
        }
    }

    /// `kill -9` of the postmaster, then of the processes it had started: the data
    /// directory as a crash leaves it. Then, as an administrator would after a crash, the
    /// stale lock files are removed — `postmaster.pid` and the socket's `.s.PGSQL.PORT.lock`
    /// (the killed postmaster stays a zombie until init reaps it, and a new postmaster
    /// finds a lock naming a PID that still exists held) — and the postmaster's small
    /// System V shared-memory segment, once nothing is attached to it (it would otherwise
    /// outlive the crash).
    pub fn crash(&mut self) -> Res<()> {
        let Some((_, data, _)) = self.running.take() else {
            return Err("PostgreSQL 18 was not started by the harness".into());
        };
        cleanup::done("PostgreSQL 18 server");
        let pid_file = data.join("postmaster.pid");
        let text = std::fs::read_to_string(&pid_file)
            .map_err(|e| format!("{}: {e}", pid_file.display()))?;
        let lines: Vec<&str> = text.lines().collect();
        let pid: i32 = lines
            .first()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| format!("{}: no PID", pid_file.display()))?;
        // Line 4: the port; 5: the socket directory; 7: the shared-memory key and ID.
        let socket_lock = match (lines.get(3), lines.get(4)) {
            (Some(port), Some(dir)) if !dir.trim().is_empty() => {
                Some(Path::new(dir.trim()).join(format!(".s.PGSQL.{}.lock", port.trim())))
            }
            _ => None,
        };
        let shm_id: Option<i32> = lines
            .get(6)
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|id| id.parse().ok());
        let children = children_of(pid);
        unsafe { libc::kill(pid, libc::SIGKILL) };
        for child in &children {
            unsafe { libc::kill(*child, libc::SIGKILL) };
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::iter::once(&pid).chain(&children).any(|p| alive(*p)) {
            if Instant::now() > deadline {
                return Err(format!(
                    "PostgreSQL 18 (PID {pid}) still runs after kill -9"
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(id) = shm_id {
            remove_orphaned_segment(id, pid);
        }
        if let Some(lock) = socket_lock {
            // Only the killed postmaster's (its first line is the PID).
            let owner = std::fs::read_to_string(&lock).unwrap_or_default();
            if owner.lines().next().map(str::trim) == Some(pid.to_string().as_str()) {
                let _ = std::fs::remove_file(&lock);
            }
        }
        std::fs::remove_file(&pid_file).map_err(|e| format!("{}: {e}", pid_file.display()))
    }
}

/// The processes whose parent is `pid` (from /proc).
fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(child) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if stat_fields(child).is_some_and(|(_, ppid)| ppid == pid) {
            out.push(child);
        }
    }
    out
}

/// A process's state letter and parent PID from /proc/PID/stat ("PID (comm) S PPID …";
/// comm may hold spaces and parentheses, so the fields are read after the last ')').
fn stat_fields(pid: i32) -> Option<(char, i32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut rest = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid))
}

/// Whether `pid` still runs (a zombie does not).
fn alive(pid: i32) -> bool {
    stat_fields(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// Removes System V segment `id` if `creator` created it and nothing is attached.
fn remove_orphaned_segment(id: i32, creator: i32) {
    // SAFETY: IPC_STAT fills the struct it is given; IPC_RMID takes no buffer.
    unsafe {
        let mut ds: libc::shmid_ds = std::mem::zeroed();
        if libc::shmctl(id, libc::IPC_STAT, &mut ds) == 0
            && ds.shm_cpid == creator
            && ds.shm_nattch == 0
        {
            libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut());
        }
    }
}

impl Drop for Pg18 {
    fn drop(&mut self) {
        self.stop();
    }
}

fn pg_ctl_stop(ctl: &Path, data: &Path, port: u16) {
    let _ = Command::new(ctl)
        .arg("stop")
        .env("PG18_DATA", data)
        .env("PG18_PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}
