//! fio's sequential read of a file as large as the table, on the same file system, with the
//! request size iolab uses (io_combine_limit): buffered (psync, what the kernel's readahead
//! makes of it, cold) and direct (io_uring, depth 16). The device limit the aio experiment
//! compares with.

use crate::client::Res;
use std::path::{Path, PathBuf};
use std::process::Command;

pub fn available() -> bool {
    Command::new("fio")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Writes the test file once (reused while its size matches).
pub fn layout(dir: &Path, bytes: u64) -> Res<PathBuf> {
    let file = dir.join(format!("fio-{bytes}.dat"));
    if std::fs::metadata(&file).is_ok_and(|m| m.len() == bytes) {
        return Ok(file);
    }
    let size = format!("--size={bytes}");
    let name = format!("--filename={}", file.display());
    let out = Command::new("fio")
        .args([
            "--name=layout",
            &name,
            &size,
            "--rw=write",
            "--bs=1m",
            "--ioengine=psync",
            "--end_fsync=1",
            "--output-format=json",
        ])
        .output()
        .map_err(|e| format!("fio: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "fio could not write {}: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(file)
}

/// One sequential read of `file`; MB/s (10^6 bytes per second).
pub fn sequential_read(file: &Path, bytes: u64, block: &str, direct: bool) -> Res<f64> {
    let mut args = vec![
        "--name=seq".to_string(),
        format!("--filename={}", file.display()),
        format!("--size={bytes}"),
        "--rw=read".into(),
        format!("--bs={block}"),
        "--output-format=json".into(),
    ];
    if direct {
        args.extend(["--direct=1", "--ioengine=io_uring", "--iodepth=16"].map(String::from));
    } else {
        args.extend(["--direct=0", "--ioengine=psync"].map(String::from));
    }
    let out = Command::new("fio")
        .args(&args)
        .output()
        .map_err(|e| format!("fio: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "fio failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("fio's JSON: {e}"))?;
    let bw = json["jobs"][0]["read"]["bw_bytes"]
        .as_f64()
        .ok_or("fio's JSON has no jobs[0].read.bw_bytes")?;
    Ok(bw / 1e6)
}
