//! The end-to-end test harness: starts the real `iolab` binary on a free port with its
//! own data directory, and connects real clients to it.
//!
//! The binary is built once per test run with the same cargo profile as the tests
//! (`cargo build -p iolab-server --bin iolab`). Each `TestServer` owns a data directory
//! under the system temp dir, removed when the server is dropped (unless the test
//! failed, so the directory can be inspected).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub use tokio_postgres;
use tokio_postgres::{Client, NoTls};

/// Path of the iolab binary, built on first use.
pub fn iolab_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let workspace = manifest.parent().expect("tests/ is inside the workspace").to_path_buf();
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let release = !cfg!(debug_assertions);
        let mut cmd = Command::new(cargo);
        cmd.current_dir(&workspace).args(["build", "-p", "iolab-server", "--bin", "iolab"]);
        if release {
            cmd.arg("--release");
        }
        let status = cmd.status().expect("run cargo build");
        assert!(status.success(), "building iolab failed");
        let target = std::env::var("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|_| workspace.join("target"));
        target.join(if release { "release" } else { "debug" }).join("iolab")
    })
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

pub struct TestServer {
    pub port: u16,
    pub data_dir: PathBuf,
    pub extra_args: Vec<String>,
    child: Option<Child>,
    log_path: PathBuf,
}

impl TestServer {
    /// Starts a server with a fresh data directory named after the test.
    pub fn start(name: &str) -> TestServer {
        Self::start_with(name, &[])
    }

    /// Starts a server with extra command-line arguments (e.g. `["-c", "shared_buffers=1MB"]`).
    pub fn start_with(name: &str, args: &[&str]) -> TestServer {
        let data_dir = std::env::temp_dir().join(format!("iolab-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&data_dir);
        let mut server = TestServer {
            port: free_port(),
            log_path: data_dir.with_extension("log"),
            data_dir,
            extra_args: args.iter().map(|s| s.to_string()).collect(),
            child: None,
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(&self.log_path).expect("open log");
        let child = Command::new(iolab_binary())
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--listen")
            .arg("127.0.0.1")
            .args(&self.extra_args)
            .stdout(Stdio::from(log.try_clone().expect("dup log")))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start iolab");
        self.child = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return;
            }
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                panic!("iolab exited during start-up ({status}); log:\n{}", self.log());
            }
            assert!(Instant::now() < deadline, "iolab did not start listening; log:\n{}", self.log());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn conn_str(&self) -> String {
        format!("host=127.0.0.1 port={} user=postgres dbname=postgres", self.port)
    }

    /// A tokio-postgres client (the connection task runs on the current runtime).
    pub async fn client(&self) -> Client {
        let (client, conn) = tokio_postgres::connect(&self.conn_str(), NoTls).await.expect("connect to iolab");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        client
    }

    /// Runs psql with the given arguments against this server.
    pub fn psql(&self, args: &[&str]) -> Output {
        Command::new("psql")
            .env("PGHOST", "127.0.0.1")
            .env("PGPORT", self.port.to_string())
            .env("PGUSER", "postgres")
            .env("PGDATABASE", "postgres")
            .env("PSQLRC", "/dev/null")
            .env("PGCONNECT_TIMEOUT", "10")
            .args(["-X", "-v", "ON_ERROR_STOP=1"])
            .args(args)
            .output()
            .expect("run psql (is postgresql-client installed?)")
    }

    /// Runs psql and returns its stdout, panicking with stderr if it failed.
    pub fn psql_ok(&self, args: &[&str]) -> String {
        let out = self.psql(args);
        assert!(
            out.status.success(),
            "psql {args:?} failed: {}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.log()
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// Stops the server with SIGTERM and waits for it to exit.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            unsafe {
                libc::kill(child.id() as i32, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(60);
            loop {
                if let Ok(Some(status)) = child.try_wait() {
                    assert!(status.success(), "iolab exited with {status} on SIGTERM; log:\n{}", self.log());
                    return;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    panic!("iolab did not stop within 60 s of SIGTERM; log:\n{}", self.log());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }

    /// Kills the server without a clean shutdown.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops and starts the server on the same port and data directory.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.data_dir);
            let _ = std::fs::remove_file(&self.log_path);
        }
    }
}

/// The SQLSTATE of a tokio-postgres error (panics if it is not a database error).
pub fn sqlstate(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => db.code().code().to_string(),
        None => panic!("not a database error: {err:?}"),
    }
}
