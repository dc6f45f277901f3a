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
        self.stop();
        let log_path = self
            .logs
            .join(format!("iolab-{}-{}.log", config.io_method, config.io()));
        let log =
            std::fs::File::create(&log_path).map_err(|e| format!("{}: {e}", log_path.display()))?;
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--data-dir")
            .arg(&self.data_dir)
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
                let text = std::fs::read_to_string(&log_path).unwrap_or_default();
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
    running: Option<Config>,
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

    pub async fn session(&self) -> Res<Session> {
        Session::connect(self.port, &self.host).await
    }

    /// Makes the server run `config`: restarts it through pg18-reference, or checks that
    /// the running server already has it.
    pub async fn start(&mut self, config: &Config) -> Res<()> {
        if let Some((ctl, data)) = self.ctl.clone() {
            if self.running.as_ref() == Some(config) {
                return Ok(());
            }
            self.stop();
            let mut opts = format!(
                "-c max_parallel_workers_per_gather=0 -c autovacuum=off -c shared_buffers={} -c io_method={}",
                self.shared_buffers, config.io_method
            );
            if config.direct {
                opts.push_str(" -c debug_io_direct=data");
            }
            let out = Command::new(&ctl)
                .arg("start")
                .env("PG18_DATA", &data)
                .env("PG18_PORT", self.port.to_string())
                .env("PG18_OPTS", opts)
                .output()
                .map_err(|e| format!("{}: {e}", ctl.display()))?;
            if !out.status.success() {
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
            self.running = Some(config.clone());
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
        if let (Some((ctl, data)), Some(_)) = (&self.ctl, self.running.take()) {
            pg_ctl_stop(ctl, data, self.port);
            cleanup::done("PostgreSQL 18 server");
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
