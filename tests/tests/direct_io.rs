//! Direct I/O and huge pages end to end: a server started with `debug_io_direct = data`
//! loads, checkpoints, restarts and reads back a table with every data file open with
//! `O_DIRECT` (checked in `/proc/<pid>/fdinfo`), reports `huge_pages_status` as its log
//! says, and refuses to start with `huge_pages = on` when the kernel has too few huge pages.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use iolab_tests::{free_port, iolab_binary, show, TestServer};

const ROWS: i64 = 200_000;

/// `O_DIRECT` in the octal `flags:` field of `/proc/<pid>/fdinfo/<fd>` (x86-64, AArch64).
const O_DIRECT: u32 = 0o40000;

/// Every open relation data file (`<data_dir>/base/…`) of process `pid`, with whether it is
/// open with `O_DIRECT`.
fn data_file_descriptors(pid: u32, data_dir: &Path) -> Vec<(PathBuf, bool)> {
    let base = std::fs::canonicalize(data_dir)
        .expect("data directory exists")
        .join("base");
    let mut found = Vec::new();
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).expect("read /proc/<pid>/fd");
    for entry in fds.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue; // closed meanwhile
        };
        if !target.starts_with(&base) {
            continue;
        }
        let fd = entry.file_name().to_string_lossy().into_owned();
        let Ok(info) = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")) else {
            continue;
        };
        let flags = info
            .lines()
            .find_map(|line| line.strip_prefix("flags:"))
            .map(|octal| u32::from_str_radix(octal.trim(), 8).expect("octal flags"))
            .expect("fdinfo has a flags line");
        found.push((target, flags & O_DIRECT != 0));
    }
    found
}

/// Pages of `path` resident in the kernel's page cache (`mincore` over a mapping of it), or
/// `None` on tmpfs, where file data lives in the page cache whatever the I/O mode.
fn cached_pages(path: &Path) -> Option<usize> {
    use std::os::unix::io::AsRawFd;
    let file = std::fs::File::open(path).expect("open data file");
    // SAFETY: statfs on an open descriptor into a zeroed struct.
    let mut fs: libc::statfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::fstatfs(file.as_raw_fd(), &mut fs) }, 0);
    if fs.f_type == libc::TMPFS_MAGIC {
        return None;
    }
    let len = file.metadata().expect("stat data file").len() as usize;
    if len == 0 {
        return Some(0);
    }
    let page = 4096;
    // SAFETY: a read-only shared mapping of a file we hold open; only mincore looks at it.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            file.as_raw_fd(),
            0,
        )
    };
    assert_ne!(map, libc::MAP_FAILED, "mmap data file");
    let mut resident = vec![0u8; len.div_ceil(page)];
    // SAFETY: `resident` has one byte per page of the mapping.
    let rc = unsafe { libc::mincore(map, len, resident.as_mut_ptr()) };
    // SAFETY: unmapping what we mapped.
    unsafe { libc::munmap(map, len) };
    assert_eq!(rc, 0, "mincore: {}", std::io::Error::last_os_error());
    Some(resident.iter().filter(|&&b| b & 1 != 0).count())
}

async fn count(client: &tokio_postgres::Client) -> i64 {
    client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .expect("count")
        .get(0)
}

/// `on` when the server's start-up log says huge pages back the pool, else `off`.
fn expected_huge_pages_status(log: &str) -> &'static str {
    let line = log
        .lines()
        .rev()
        .find(|line| line.contains("buffer pool:"))
        .expect("the server logs what backs the buffer pool");
    if line.contains("hugetlb") || line.contains("transparent huge pages") {
        "on"
    } else {
        assert!(line.contains("4 KiB pages"), "{line}");
        "off"
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_io_data_files_survive_checkpoint_and_restart() {
    let mut server = TestServer::start_with(
        "direct-io",
        &["-c", "debug_io_direct=data", "-c", "huge_pages=try"],
    );
    let log = server.log();
    assert!(
        log.contains("data file I/O: direct (O_DIRECT"),
        "start-up log does not say data I/O is direct:\n{log}"
    );
    let client = server.client().await;
    assert_eq!(show(&client, "debug_io_direct").await, "data");
    assert_eq!(show(&client, "huge_pages").await, "try");
    assert_eq!(
        show(&client, "huge_pages_status").await,
        expected_huge_pages_status(&log)
    );
    client
        .batch_execute(&format!(
            "CREATE TABLE t(a int, filler text);
             INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, {ROWS}) AS s(i);
             CHECKPOINT"
        ))
        .await
        .expect("load and checkpoint with O_DIRECT");
    assert_eq!(count(&client).await, ROWS);
    drop(client);

    server.restart();
    let client = server.client().await;
    assert_eq!(show(&client, "debug_io_direct").await, "data");
    let row = client
        .query_one("SELECT count(*), sum(a) FROM t", &[])
        .await
        .expect("scan after restart");
    assert_eq!(row.get::<_, i64>(0), ROWS);
    assert_eq!(row.get::<_, i64>(1), ROWS * (ROWS + 1) / 2);
    // The scan opened the table's data file, and with O_DIRECT.
    let pid = server.pid().expect("server running");
    let files = data_file_descriptors(pid, &server.data_dir);
    assert!(!files.is_empty(), "no data file open after a scan");
    for (path, direct) in &files {
        assert!(direct, "{} is open without O_DIRECT", path.display());
        // Written by CHECKPOINT and read back by the scan, all past the page cache.
        if let Some(cached) = cached_pages(path) {
            assert_eq!(cached, 0, "{} has pages in the page cache", path.display());
        }
    }
    drop(client);

    // The same data directory without debug_io_direct: buffered, same rows.
    server.extra_args = vec!["-c".into(), "huge_pages=off".into()];
    server.restart();
    assert!(server.log().contains("data file I/O: buffered"));
    let client = server.client().await;
    assert_eq!(show(&client, "debug_io_direct").await, "");
    assert_eq!(show(&client, "huge_pages_status").await, "off");
    assert_eq!(count(&client).await, ROWS);
    let files = data_file_descriptors(server.pid().unwrap(), &server.data_dir);
    assert!(!files.is_empty(), "no data file open after a scan");
    for (path, direct) in &files {
        assert!(!direct, "{} is open with O_DIRECT", path.display());
        // The buffered scan read the file through the page cache.
        if let Some(cached) = cached_pages(path) {
            assert!(
                cached > 0,
                "{} has no pages in the page cache",
                path.display()
            );
        }
    }
}

/// Hugetlb pages a new mapping can reserve: free ones not already reserved by other
/// mappings (`HugePages_Free − HugePages_Rsvd` in `/proc/meminfo`).
fn free_hugetlb_pages() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let field = |name: &str| -> u64 {
        meminfo
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0)
    };
    field("HugePages_Free:").saturating_sub(field("HugePages_Rsvd:"))
}

/// `huge_pages = on` with a pool larger than the free hugetlb pages: PostgreSQL's FATAL and
/// hint, and no server. (hugetlb pages are reserved when mapped, so this touches no memory.)
#[test]
fn huge_pages_on_without_enough_huge_pages_fails_start_up() {
    let pages = (free_hugetlb_pages() + 1).max(8);
    let shared_buffers = format!("shared_buffers={}MB", pages * 2);
    let data_dir = std::env::temp_dir().join(format!("iolab-test-huge-on-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&data_dir);
    let mut child = Command::new(iolab_binary())
        .arg("--data-dir")
        .arg(&data_dir)
        .args(["--port", &free_port().to_string(), "--listen", "127.0.0.1"])
        .args(["-c", "huge_pages=on", "-c", &shared_buffers])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run iolab");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("wait for iolab").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_dir_all(&data_dir);
            panic!("iolab started with huge_pages=on and too few huge pages");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("iolab's output");
    let _ = std::fs::remove_dir_all(&data_dir);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "iolab exited successfully: {stderr}"
    );
    assert!(
        stderr.contains("FATAL:  could not map anonymous shared memory: Cannot allocate memory"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "HINT:  This error usually means that PostgreSQL's request for a shared memory \
             segment exceeded available memory, swap space, or huge pages. To reduce the \
             request size (currently {} bytes), reduce PostgreSQL's shared memory usage, \
             perhaps by reducing \"shared_buffers\" or \"max_connections\".\n",
            pages * 2 * 1024 * 1024
        )),
        "{stderr}"
    );
}
