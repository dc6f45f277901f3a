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
    BINARY.get_or_init(|| workspace_binary("iolab-server", "iolab"))
}

/// Path of the iolab-bench binary (the benchmark harness), built on first use.
pub fn bench_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| workspace_binary("iolab-bench", "iolab-bench"))
}

/// Builds `bin` of workspace package `package` with the tests' cargo profile; its path.
fn workspace_binary(package: &str, bin: &str) -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let release = !cfg!(debug_assertions);
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&workspace)
        .args(["build", "-p", package, "--bin", bin]);
    // Variables cargo set for this test binary would make build scripts of the
    // server's dependencies think their environment changed, and rebuild them.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy().into_owned();
        if (key.starts_with("CARGO_") && key != "CARGO_HOME" && key != "CARGO_TARGET_DIR")
            || key == "OUT_DIR"
        {
            cmd.env_remove(key);
        }
    }
    if release {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("run cargo build");
    assert!(status.success(), "building {bin} failed");
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace.join("target"));
    target
        .join(if release { "release" } else { "debug" })
        .join(bin)
}

/// Is `e` a connection refused or reset (the server not accepting yet)?
fn is_transient(e: &tokio_postgres::Error) -> bool {
    let io = std::error::Error::source(e).and_then(|s| s.downcast_ref::<std::io::Error>());
    io.is_some_and(|io| {
        matches!(
            io.kind(),
            std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset
        )
    })
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
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
        let data_dir =
            std::env::temp_dir().join(format!("iolab-test-{name}-{}", std::process::id()));
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

    /// Starts the server on `port`. The port was free when [`free_port`] chose it, but
    /// another test's server may take it before this one binds: then this server exits
    /// ("could not listen"), and a probe would reach the other. So the server counts as
    /// started when its own log says it listens on the port; if it could not, it is started
    /// again on another free port.
    fn spawn(&mut self) {
        for _ in 0..5 {
            let listening_before = self.listening_lines();
            let log = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.log_path)
                .expect("open log");
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
            if self.wait_ready(listening_before) {
                return;
            }
            self.child = None;
            self.port = free_port();
        }
        panic!("iolab found no free port; log:\n{}", self.log());
    }

    /// Lines of the log saying the server listens on its port.
    fn listening_lines(&self) -> usize {
        let line = format!("listening on 127.0.0.1:{};", self.port);
        self.log().matches(&line).count()
    }

    /// Waits until the server listens on its port (its log says so, after the
    /// `listening_before` lines there were, and a connection goes through): `true`; or
    /// until it exits because the port was taken: `false`.
    fn wait_ready(&mut self, listening_before: usize) -> bool {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if self.listening_lines() > listening_before
                && std::net::TcpStream::connect(("127.0.0.1", self.port)).is_ok()
            {
                return true;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                let taken = format!("could not listen on 127.0.0.1:{}", self.port);
                if self.log().contains(&taken) {
                    return false;
                }
                panic!(
                    "iolab exited during start-up ({status}); log:\n{}",
                    self.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "iolab did not start listening; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn conn_str(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=postgres dbname=postgres",
            self.port
        )
    }

    /// A tokio-postgres client (the connection task runs on the current runtime). A
    /// connection refused or reset is tried again for up to 10 s: a loaded full run once
    /// had a test's first connection reset although its server's log said it was ready
    /// (one suspect: `wait_ready`'s probe connecting a socket to itself before the server
    /// listened).
    pub async fn client(&self) -> Client {
        let deadline = Instant::now() + Duration::from_secs(10);
        let (client, conn) = loop {
            match tokio_postgres::connect(&self.conn_str(), NoTls).await {
                Ok(connected) => break connected,
                Err(e) if Instant::now() < deadline && is_transient(&e) => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => panic!("connect to iolab: {e:?}"),
            }
        };
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
                    assert!(
                        status.success(),
                        "iolab exited with {status} on SIGTERM; log:\n{}",
                        self.log()
                    );
                    return;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    panic!(
                        "iolab did not stop within 60 s of SIGTERM; log:\n{}",
                        self.log()
                    );
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

    /// The server's process id, while it runs (for `/proc/<pid>/…`).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
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

/// `SHOW name` through the extended protocol.
pub async fn show(client: &Client, name: &str) -> String {
    client
        .query_one(&format!("SHOW {name}"), &[])
        .await
        .unwrap_or_else(|e| panic!("SHOW {name}: {e:?}"))
        .get(0)
}

/// The lines of an EXPLAIN's `QUERY PLAN` column, by the simple protocol.
pub async fn plan(client: &Client, sql: &str) -> Vec<String> {
    rows(client, sql)
        .await
        .into_iter()
        .map(|mut row| row.swap_remove(0).expect("QUERY PLAN is never NULL"))
        .collect()
}

/// The number right after `key` in `line` (`rows=200000.00` → 200000).
pub fn number_after(line: &str, key: &str) -> Option<f64> {
    let rest = &line[line.find(key)? + key.len()..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The number after `key` in the first of `lines` that contains `label`
/// (`figure(plan, "Heap Blocks:", "exact=")` → 1347).
pub fn figure(lines: &[String], label: &str, key: &str) -> Option<f64> {
    number_after(lines.iter().find(|l| l.contains(label))?, key)
}

/// Drop `table`'s pages from the buffer pool (`pg_buffercache_evict_relation`).
pub async fn evict(client: &Client, table: &str) {
    client
        .simple_query(&format!(
            "SELECT pg_buffercache_evict_relation('{table}'::regclass)"
        ))
        .await
        .expect("evict");
}

/// The one integer a query returns (one row, a non-NULL first column).
pub async fn int(client: &Client, sql: &str) -> i64 {
    let r = rows(client, sql).await;
    assert_eq!(r.len(), 1, "{sql}: {r:?}");
    r[0][0]
        .as_deref()
        .unwrap_or_else(|| panic!("{sql}: NULL"))
        .parse()
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Drop `table`'s pages from the buffer pool and from the kernel's page cache, so that its
/// next scan reads from the device: the files of its segments (`base/<filenode>[.k]`) are
/// written back and `posix_fadvise(DONTNEED)`ed, which needs no privileges (unlike
/// `drop_caches`).
pub async fn evict_cold(server: &TestServer, client: &Client, table: &str) {
    evict(client, table).await;
    client.simple_query("CHECKPOINT").await.expect("checkpoint");
    let filenode = rows(client, &format!("SELECT pg_relation_filenode('{table}')")).await[0][0]
        .clone()
        .expect("filenode");
    let base = server.data_dir.join("base");
    for segment in 0.. {
        let name = if segment == 0 {
            filenode.clone()
        } else {
            format!("{filenode}.{segment}")
        };
        let Ok(file) = std::fs::File::open(base.join(name)) else {
            assert!(segment > 0, "no file for {table} (filenode {filenode})");
            break;
        };
        use std::os::unix::io::AsRawFd;
        file.sync_all().expect("fsync");
        // SAFETY: a plain system call on a descriptor we own.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        assert_eq!(rc, 0, "posix_fadvise(DONTNEED) failed");
    }
}

/// The files under `dir`, in it and in its subdirectories (none if it does not exist).
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The SQLSTATE and message of the error `sql` must end with (simple protocol).
pub async fn error(client: &Client, sql: &str) -> (String, String) {
    let e = client.simple_query(sql).await.expect_err(sql);
    let message = e.as_db_error().expect("a database error").message();
    (sqlstate(&e), message.to_string())
}

/// `t(a, b)` with an index on a, analyzed: 200 000 rows, a distinct values from 1 to 200 002
/// in a shuffled order, NULL every 1000th row, b an md5 text. The index tests' table;
/// PostgreSQL 18's plans quoted in them are for the same statements.
pub async fn create_shuffled_t(client: &Client) {
    client
        .batch_execute(
            "CREATE TABLE t AS SELECT CASE WHEN i % 1000 = 0 THEN NULL ELSE (i * 7919) % 200003 END AS a,
                    md5(i::text) AS b
               FROM generate_series(1, 200000) i;
             CREATE INDEX ON t(a);
             ANALYZE t;",
        )
        .await
        .expect("create t");
}

/// A new server (`shared_buffers = 16MB`, then `args`) with `t(a INT, filler TEXT)`: `rows`
/// rows written in order of `i`, `a = i % 1000`, `filler = md5(i::text)`, an index on `a`,
/// analyzed. A bitmap heap scan of a few values of `a` visits one block in about nine.
pub async fn start_with_modulo_t(name: &str, args: &[&str], rows: i64) -> (TestServer, Client) {
    let mut all = vec!["-c", "shared_buffers=16MB"];
    all.extend_from_slice(args);
    let server = TestServer::start_with(name, &all);
    let client = server.client().await;
    client
        .batch_execute(&format!(
            "CREATE TABLE t(a INT, filler TEXT);
             INSERT INTO t SELECT i % 1000, md5(i::text)
               FROM generate_series(1, {rows}) AS s(i) ORDER BY i;
             CREATE INDEX ON t(a);
             ANALYZE t;"
        ))
        .await
        .expect("load");
    (server, client)
}

/// The `pg_stat_aio` counter `column` of client backends, this session's counts flushed
/// first.
pub async fn client_aio_count(client: &Client, column: &str) -> i64 {
    client
        .batch_execute("SELECT pg_stat_force_next_flush()")
        .await
        .expect("flush");
    int(
        client,
        &format!(
            "SELECT coalesce(sum({column}), 0) FROM pg_stat_aio \
             WHERE backend_type = 'client backend'"
        ),
    )
    .await
}

/// Runs a script one statement per Query message, as `psql -f` sends a file. One
/// `batch_execute` is one message, whose statements share an implicit transaction block
/// that VACUUM and ALTER SYSTEM refuse. The script is split at semicolons, so it must
/// have none inside a literal.
pub async fn run_script(client: &Client, script: &str) -> Result<(), tokio_postgres::Error> {
    for statement in script.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        client.batch_execute(statement).await?;
    }
    Ok(())
}

/// The tables on which the nested-loop and index-list tests' PostgreSQL 18 plans were
/// captured: `cust` (20 000 rows, primary key id), `orders` (200 000 rows, primary key id,
/// an index on cust_id), `lines` (600 000 rows, primary key (order_id, line)); analyzed.
pub async fn create_shop(c: &Client) {
    run_script(
        c,
        "CREATE TABLE cust(id int PRIMARY KEY, name text, region int);
         INSERT INTO cust SELECT i, 'c' || i, i % 10 FROM generate_series(1, 20000) i;
         CREATE TABLE orders(id int PRIMARY KEY, cust_id int, amount int);
         INSERT INTO orders SELECT i, (i * 7919) % 20000 + 1, i % 1000 FROM generate_series(1, 200000) i;
         CREATE INDEX ON orders(cust_id);
         CREATE TABLE lines(order_id int, line int, qty int, PRIMARY KEY (order_id, line));
         INSERT INTO lines SELECT i, l, (i + l) % 50 FROM generate_series(1, 200000) i, generate_series(1, 3) l;
         VACUUM ANALYZE cust; VACUUM ANALYZE orders; VACUUM ANALYZE lines;
         SET max_parallel_workers_per_gather = 0",
    )
    .await
    .unwrap();
}

/// The rows of a simple-protocol query, each as text values (None = NULL).
pub async fn rows(client: &Client, sql: &str) -> Vec<Vec<Option<String>>> {
    client
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
        .into_iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).map(str::to_string)).collect())
            }
            _ => None,
        })
        .collect()
}

/// The SQLSTATE of a tokio-postgres error (panics if it is not a database error).
pub fn sqlstate(err: &tokio_postgres::Error) -> String {
    match err.as_db_error() {
        Some(db) => db.code().code().to_string(),
        None => panic!("not a database error: {err:?}"),
    }
}

/// The wire protocol by hand, for tests that speak it badly on purpose: frontend
/// messages built byte by byte (any length field, any type byte), and a connection that
/// reads back exactly what the server sends, including whether it hung up.
///
/// ```no_run
/// use iolab_tests::raw::{self, Backend, RawConnection};
/// # let port = 5432;
/// let mut conn = RawConnection::start(port); // start-up as postgres, up to ReadyForQuery
/// conn.send(&[raw::parse("", "SELEC 1", &[]), raw::sync()].concat());
/// let replies = conn.until_ready();
/// assert!(matches!(&replies[0], Backend::Error(e) if e.code() == "42601"));
/// ```
pub mod raw {
    use std::collections::BTreeMap;
    use std::io::{ErrorKind, Read, Write};
    use std::net::{Shutdown, TcpStream};
    use std::time::{Duration, Instant};

    /// Protocol 3.0 in a StartupMessage.
    pub const PROTOCOL_3_0: i32 = 3 << 16;
    /// The "protocol version" of a CancelRequest.
    pub const CANCEL_REQUEST_CODE: i32 = 80877102;
    /// How long a test waits for a reply (or for the server to hang up) before failing.
    pub const REPLY_TIMEOUT: Duration = Duration::from_secs(10);
    /// Backend messages longer than this are taken as a broken stream, not buffered.
    const MAX_BACKEND_MESSAGE: usize = 64 << 20;

    /// A message with a type byte: the byte, an Int32 length counting itself, the body.
    pub fn message(tag: u8, body: &[u8]) -> Vec<u8> {
        message_with_length(tag, body.len() as i32 + 4, body)
    }

    /// A message whose length field says `length`, whatever the body's real size.
    pub fn message_with_length(tag: u8, length: i32, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::with_capacity(5 + body.len());
        m.push(tag);
        m.extend_from_slice(&length.to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    /// A NUL-terminated string.
    pub fn cstring(s: impl AsRef<[u8]>) -> Vec<u8> {
        let mut v = s.as_ref().to_vec();
        v.push(0);
        v
    }

    /// A StartupMessage: Int32 length, Int32 protocol version, name/value pairs, NUL.
    pub fn startup_packet(version: i32, params: &[(&str, &str)]) -> Vec<u8> {
        let mut body = version.to_be_bytes().to_vec();
        for (name, value) in params {
            body.extend(cstring(name));
            body.extend(cstring(value));
        }
        body.push(0);
        let mut packet = (body.len() as i32 + 4).to_be_bytes().to_vec();
        packet.extend(body);
        packet
    }

    /// A CancelRequest for the backend `pid` with `secret`.
    pub fn cancel_request(pid: i32, secret: i32) -> Vec<u8> {
        [16i32, CANCEL_REQUEST_CODE, pid, secret]
            .iter()
            .flat_map(|n| n.to_be_bytes())
            .collect()
    }

    pub fn query(sql: &str) -> Vec<u8> {
        message(b'Q', &cstring(sql))
    }

    /// Parse: statement name, query, parameter type OIDs.
    pub fn parse(name: &str, sql: &str, param_types: &[u32]) -> Vec<u8> {
        let mut body = cstring(name);
        body.extend(cstring(sql));
        body.extend((param_types.len() as i16).to_be_bytes());
        for oid in param_types {
            body.extend(oid.to_be_bytes());
        }
        message(b'P', &body)
    }

    /// Bind: portal, statement, parameter format codes, values (None = NULL), result
    /// format codes.
    pub fn bind(
        portal: &str,
        statement: &str,
        param_formats: &[i16],
        params: &[Option<&[u8]>],
        result_formats: &[i16],
    ) -> Vec<u8> {
        let mut body = cstring(portal);
        body.extend(cstring(statement));
        body.extend((param_formats.len() as i16).to_be_bytes());
        for f in param_formats {
            body.extend(f.to_be_bytes());
        }
        body.extend((params.len() as i16).to_be_bytes());
        for p in params {
            match p {
                Some(v) => {
                    body.extend((v.len() as i32).to_be_bytes());
                    body.extend_from_slice(v);
                }
                None => body.extend((-1i32).to_be_bytes()),
            }
        }
        body.extend((result_formats.len() as i16).to_be_bytes());
        for f in result_formats {
            body.extend(f.to_be_bytes());
        }
        message(b'B', &body)
    }

    /// Describe: `kind` is b'S' (statement) or b'P' (portal).
    pub fn describe(kind: u8, name: &str) -> Vec<u8> {
        let mut body = vec![kind];
        body.extend(cstring(name));
        message(b'D', &body)
    }

    /// Close: `kind` is b'S' (statement) or b'P' (portal).
    pub fn close(kind: u8, name: &str) -> Vec<u8> {
        let mut body = vec![kind];
        body.extend(cstring(name));
        message(b'C', &body)
    }

    pub fn execute(portal: &str, max_rows: i32) -> Vec<u8> {
        let mut body = cstring(portal);
        body.extend(max_rows.to_be_bytes());
        message(b'E', &body)
    }

    pub fn sync() -> Vec<u8> {
        message(b'S', &[])
    }

    pub fn flush() -> Vec<u8> {
        message(b'H', &[])
    }

    pub fn terminate() -> Vec<u8> {
        message(b'X', &[])
    }

    /// The fields of an ErrorResponse or NoticeResponse, by their one-byte codes.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub struct Fields(pub BTreeMap<u8, String>);

    impl Fields {
        pub fn get(&self, field: u8) -> Option<&str> {
            self.0.get(&field).map(|s| s.as_str())
        }

        /// `V` (never localized), else `S`.
        pub fn severity(&self) -> &str {
            self.get(b'V').or_else(|| self.get(b'S')).unwrap_or("")
        }

        pub fn code(&self) -> &str {
            self.get(b'C').unwrap_or("")
        }

        pub fn message(&self) -> &str {
            self.get(b'M').unwrap_or("")
        }
    }

    /// A backend message, decoded as far as these tests need.
    #[derive(Clone, Debug, PartialEq, Eq)]
    pub enum Backend {
        Authentication(i32),
        ParameterStatus(String, String),
        BackendKeyData { pid: i32, secret: Vec<u8> },
        NegotiateProtocolVersion,
        ReadyForQuery(u8),
        RowDescription,
        DataRow(Vec<Option<Vec<u8>>>),
        CommandComplete(String),
        EmptyQueryResponse,
        ParseComplete,
        BindComplete,
        CloseComplete,
        NoData,
        ParameterDescription,
        PortalSuspended,
        CopyInResponse,
        CopyOutResponse,
        Error(Fields),
        Notice(Fields),
        Other(u8, Vec<u8>),
    }

    impl Backend {
        fn decode(tag: u8, body: &[u8]) -> Backend {
            let int = |b: &[u8]| i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            let text =
                |b: &[u8]| String::from_utf8_lossy(b.strip_suffix(&[0]).unwrap_or(b)).into_owned();
            match tag {
                b'R' if body.len() >= 4 => Backend::Authentication(int(body)),
                b'S' => {
                    let mut parts = body.split(|&b| b == 0);
                    let name = parts
                        .next()
                        .map(|p| String::from_utf8_lossy(p).into_owned())
                        .unwrap_or_default();
                    let value = parts
                        .next()
                        .map(|p| String::from_utf8_lossy(p).into_owned())
                        .unwrap_or_default();
                    Backend::ParameterStatus(name, value)
                }
                b'K' if body.len() >= 4 => Backend::BackendKeyData {
                    pid: int(body),
                    secret: body[4..].to_vec(),
                },
                b'v' => Backend::NegotiateProtocolVersion,
                b'Z' if body.len() == 1 => Backend::ReadyForQuery(body[0]),
                b'T' => Backend::RowDescription,
                b'D' if body.len() >= 2 => {
                    let count = i16::from_be_bytes([body[0], body[1]]) as usize;
                    let mut at = 2;
                    let mut values = Vec::with_capacity(count);
                    for _ in 0..count {
                        let len = int(&body[at..]);
                        at += 4;
                        if len < 0 {
                            values.push(None);
                        } else {
                            values.push(Some(body[at..at + len as usize].to_vec()));
                            at += len as usize;
                        }
                    }
                    Backend::DataRow(values)
                }
                b'C' => Backend::CommandComplete(text(body)),
                b'I' => Backend::EmptyQueryResponse,
                b'1' => Backend::ParseComplete,
                b'2' => Backend::BindComplete,
                b'3' => Backend::CloseComplete,
                b'n' => Backend::NoData,
                b't' => Backend::ParameterDescription,
                b's' => Backend::PortalSuspended,
                b'G' => Backend::CopyInResponse,
                b'H' => Backend::CopyOutResponse,
                b'E' | b'N' => {
                    let mut fields = BTreeMap::new();
                    for field in body.split(|&b| b == 0).filter(|f| !f.is_empty()) {
                        fields.insert(field[0], String::from_utf8_lossy(&field[1..]).into_owned());
                    }
                    if tag == b'E' {
                        Backend::Error(Fields(fields))
                    } else {
                        Backend::Notice(Fields(fields))
                    }
                }
                other => Backend::Other(other, body.to_vec()),
            }
        }

        /// The fields of an ErrorResponse.
        pub fn as_error(&self) -> Option<&Fields> {
            match self {
                Backend::Error(f) => Some(f),
                _ => None,
            }
        }
    }

    /// What one read brought.
    #[derive(Debug, PartialEq, Eq)]
    pub enum Received {
        Message(Backend),
        /// The server closed the connection (EOF or reset).
        Closed,
        /// Nothing arrived within the timeout.
        Silence,
    }

    /// A TCP connection to a server, read message by message.
    pub struct RawConnection {
        stream: TcpStream,
        /// Bytes received and not yet decoded.
        pending: Vec<u8>,
        closed: bool,
    }

    impl RawConnection {
        /// A bare TCP connection: nothing sent yet.
        pub fn connect(port: u16) -> RawConnection {
            let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the server");
            stream.set_nodelay(true).expect("TCP_NODELAY");
            RawConnection {
                stream,
                pending: Vec::new(),
                closed: false,
            }
        }

        /// Connects and starts up as user `postgres` on database `postgres` (protocol
        /// 3.0, no password), reading up to the first ReadyForQuery.
        pub fn start(port: u16) -> RawConnection {
            let mut conn = RawConnection::connect(port);
            conn.send(&startup_packet(
                PROTOCOL_3_0,
                &[("user", "postgres"), ("database", "postgres")],
            ));
            let replies = conn.until_ready();
            assert!(
                replies.iter().all(|m| m.as_error().is_none()),
                "start-up failed: {replies:?}"
            );
            conn
        }

        /// Sends bytes; a server that already hung up is not an error here (the next
        /// read says so).
        pub fn send(&mut self, bytes: &[u8]) {
            if let Err(e) = self
                .stream
                .write_all(bytes)
                .and_then(|_| self.stream.flush())
            {
                assert!(
                    matches!(
                        e.kind(),
                        ErrorKind::BrokenPipe
                            | ErrorKind::ConnectionReset
                            | ErrorKind::ConnectionAborted
                    ),
                    "send failed: {e}"
                );
            }
        }

        /// Tells the server this client will send nothing more (half-close).
        pub fn shutdown_write(&mut self) {
            let _ = self.stream.shutdown(Shutdown::Write);
        }

        /// The next message, or that the server hung up, or silence for `timeout`.
        pub fn next(&mut self, timeout: Duration) -> Received {
            let deadline = Instant::now() + timeout;
            loop {
                if let Some(message) = self.decode_pending() {
                    return Received::Message(message);
                }
                if self.closed {
                    return Received::Closed;
                }
                let now = Instant::now();
                if now >= deadline {
                    return Received::Silence;
                }
                self.stream
                    .set_read_timeout(Some(deadline - now))
                    .expect("set read timeout");
                let mut chunk = [0u8; 8192];
                match self.stream.read(&mut chunk) {
                    Ok(0) => self.closed = true,
                    Ok(n) => self.pending.extend_from_slice(&chunk[..n]),
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                        ) =>
                    {
                        self.closed = true
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => panic!("read failed: {e}"),
                }
            }
        }

        fn decode_pending(&mut self) -> Option<Backend> {
            if self.pending.len() < 5 {
                return None;
            }
            let len = i32::from_be_bytes([
                self.pending[1],
                self.pending[2],
                self.pending[3],
                self.pending[4],
            ]);
            assert!(
                (4..=MAX_BACKEND_MESSAGE as i32).contains(&len),
                "the server sent a message {:?} with length {len}",
                self.pending[0] as char
            );
            let total = 1 + len as usize;
            if self.pending.len() < total {
                return None;
            }
            let message = Backend::decode(self.pending[0], &self.pending[5..total]);
            self.pending.drain(..total);
            Some(message)
        }

        /// Messages up to and including ReadyForQuery; panics if the server hangs up or
        /// goes quiet first.
        pub fn until_ready(&mut self) -> Vec<Backend> {
            let mut messages = Vec::new();
            loop {
                match self.next(REPLY_TIMEOUT) {
                    Received::Message(m) => {
                        let ready = matches!(m, Backend::ReadyForQuery(_));
                        messages.push(m);
                        if ready {
                            return messages;
                        }
                    }
                    other => panic!("expected ReadyForQuery, got {other:?} after {messages:?}"),
                }
            }
        }

        /// Every message until the server hangs up; panics if it is still open after
        /// `REPLY_TIMEOUT`.
        pub fn until_closed(&mut self) -> Vec<Backend> {
            let mut messages = Vec::new();
            loop {
                match self.next(REPLY_TIMEOUT) {
                    Received::Message(m) => messages.push(m),
                    Received::Closed => return messages,
                    Received::Silence => panic!(
                        "the server neither replied nor closed the connection; got {messages:?}"
                    ),
                }
            }
        }

        /// Every message that arrives before `quiet` passes with nothing new.
        pub fn drain(&mut self, quiet: Duration) -> Vec<Backend> {
            let mut messages = Vec::new();
            while let Received::Message(m) = self.next(quiet) {
                messages.push(m);
            }
            messages
        }

        /// Runs `sql` with a Query message and returns the first column of each row as
        /// text; panics on an error.
        pub fn simple_query_column(&mut self, sql: &str) -> Vec<Option<String>> {
            self.send(&query(sql));
            let replies = self.until_ready();
            if let Some(e) = replies.iter().find_map(Backend::as_error) {
                panic!("{sql}: {e:?}");
            }
            replies
                .into_iter()
                .filter_map(|m| match m {
                    Backend::DataRow(values) => Some(
                        values
                            .into_iter()
                            .next()
                            .flatten()
                            .map(|v| String::from_utf8_lossy(&v).into_owned()),
                    ),
                    _ => None,
                })
                .collect()
        }
    }
}

/// `unix_us` (microseconds since 1970, UTC) in RFC 3339 as Grafana sends time ranges:
/// `2026-12-01T10:00:00Z`, with `.ffffff` before the `Z` when the microseconds are not 0.
pub fn rfc3339(unix_us: i64) -> String {
    let unix_s = unix_us.div_euclid(1_000_000);
    let micros = unix_us.rem_euclid(1_000_000);
    let days = unix_s.div_euclid(86_400);
    let secs = unix_s.rem_euclid(86_400);
    // civil-from-days (Howard Hinnant's algorithm)
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let fraction = if micros == 0 {
        String::new()
    } else {
        format!(".{micros:06}")
    };
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}{fraction}Z",
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

/// Statements that may wait for a lock, run by one session while the test watches from
/// another (the relation-lock and table-rewrite tests). How long a statement is given
/// to start waiting, to stop waiting, or to finish without waiting is each test file's
/// own choice, passed in.
pub mod waiting {
    use std::time::Duration;

    use tokio::task::JoinHandle;
    use tokio_postgres::Client;

    /// A statement's outcome: done, or its SQLSTATE and message.
    pub type Outcome = Result<(), (String, String)>;

    pub fn outcome(result: Result<(), tokio_postgres::Error>) -> Outcome {
        result.map_err(|e| {
            let message = e.as_db_error().map(|d| d.message().to_string());
            (super::sqlstate(&e), message.unwrap_or_default())
        })
    }

    /// `sql` (simple protocol), which must succeed.
    pub async fn exec(client: &Client, sql: &str) {
        client
            .batch_execute(sql)
            .await
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }

    /// `sql` (simple protocol), which must succeed without waiting: within `limit`, a
    /// guard against a wait, not a timing.
    pub async fn at_once(client: &Client, sql: &str, limit: Duration) {
        tokio::time::timeout(limit, client.batch_execute(sql))
            .await
            .unwrap_or_else(|_| panic!("{sql} waited"))
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }

    /// `sql` (simple protocol) run by `client` on another task, which may wait, given
    /// `delay` to start.
    pub async fn started(
        client: Client,
        sql: &str,
        delay: Duration,
    ) -> JoinHandle<(Client, Outcome)> {
        let sql = sql.to_string();
        let task = tokio::spawn(async move {
            let got = outcome(client.batch_execute(&sql).await);
            (client, got)
        });
        tokio::time::sleep(delay).await;
        task
    }

    /// The end of a [`started`] statement, within `limit` (a guard against hanging).
    pub async fn finished(
        task: JoinHandle<(Client, Outcome)>,
        limit: Duration,
    ) -> (Client, Outcome) {
        tokio::time::timeout(limit, task)
            .await
            .expect("the statement should have stopped waiting")
            .expect("the statement's task")
    }

    pub async fn pid(client: &Client) -> i64 {
        super::int(client, "SELECT pg_backend_pid()").await
    }

    /// Polls `sql` (from `watcher`) every 10 ms while `command` runs in `worker`; returns the
    /// rows seen (each row's values as text, NULL as `NULL`); once it ends, no row may be left.
    pub async fn watch(
        worker: &Client,
        watcher: &Client,
        command: &str,
        sql: &str,
    ) -> Vec<Vec<String>> {
        let run = worker.batch_execute(command);
        tokio::pin!(run);
        let mut seen = Vec::new();
        let started = std::time::Instant::now();
        loop {
            tokio::select! {
                done = &mut run => {
                    done.unwrap_or_else(|e| panic!("{command}: {e:?}"));
                    break;
                }
                _ = tokio::time::sleep(Duration::from_millis(10)) => {
                    for row in super::rows(watcher, sql).await {
                        seen.push(row.into_iter().map(|v| v.unwrap_or("NULL".into())).collect());
                    }
                }
            }
            assert!(
                started.elapsed() < Duration::from_secs(300),
                "{command} runs too long"
            );
        }
        assert!(
            super::rows(watcher, sql).await.is_empty(),
            "a row is left after {command}"
        );
        seen
    }

    /// The oid of relation `name` (`pg_locks.relation`).
    pub async fn oid(client: &Client, name: &str) -> i64 {
        let sql = format!("SELECT oid FROM pg_class WHERE relname = '{name}'");
        super::int(client, &sql).await
    }
}
