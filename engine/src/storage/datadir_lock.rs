//! One server per data directory: the lock file `postmaster.pid`, named as PostgreSQL names
//! it.
//!
//! Two servers on one data directory would each cache pages, allocate relfilenodes and
//! transaction ids, and write back over the other's work. So the server that opens a data
//! directory takes an exclusive `flock` on `postmaster.pid` (and writes its PID and the
//! directory into it, for people) and holds it until the process ends; a second server
//! finds the lock taken and refuses to start with PostgreSQL's FATAL error, naming the PID
//! that holds it. The kernel drops the lock when its holder exits, however it exits, so a
//! crashed server leaves no stale lock behind: the file may remain, the lock does not, and
//! the next start takes it over. The file is therefore never removed (removing it could
//! let a starting server lock a file that has just been unlinked while another creates and
//! locks a new one).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::path::Path;

use iolab_catalog::{sqlstate, PgError, PgResult};

/// The lock file's name, as in PostgreSQL.
pub const LOCK_FILE: &str = "postmaster.pid";

/// The held lock on a data directory; released when dropped (or when the process ends).
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

impl DataDirLock {
    /// Take the lock on `data_dir`, or fail with FATAL 58P02 if another process holds it.
    pub fn acquire(data_dir: &Path) -> PgResult<DataDirLock> {
        let path = data_dir.join(LOCK_FILE);
        let io = |what: &str, e: std::io::Error| {
            PgError::io(&format!("{what} lock file \"{}\"", path.display()), &e)
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io("could not open", e))?;
        // SAFETY: flock on a descriptor this function owns; no memory is involved.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                return Err(io("could not lock", e));
            }
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let holder = text.lines().next().unwrap_or("").trim().to_string();
            return Err(PgError::fatal(
                sqlstate::DUPLICATE_FILE,
                format!("lock file \"{LOCK_FILE}\" already exists"),
            )
            .with_hint(format!(
                "Is another iolab server (PID {holder}) running in data directory \"{}\"?",
                data_dir.display()
            )));
        }
        let contents = format!("{}\n{}\n", std::process::id(), data_dir.display());
        file.set_len(0)
            .and_then(|()| file.rewind())
            .and_then(|()| file.write_all(contents.as_bytes()))
            .map_err(|e| io("could not write", e))?;
        Ok(DataDirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::relfile::tests::TempDir;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = TempDir::new("datadir-lock");
        let first = DataDirLock::acquire(&dir.0).unwrap();
        let written = std::fs::read_to_string(dir.0.join(LOCK_FILE)).unwrap();
        assert_eq!(
            written.lines().next(),
            Some(std::process::id().to_string().as_str())
        );
        // flock locks belong to the open file, so a second open in this process conflicts
        // as another process's would.
        let err = DataDirLock::acquire(&dir.0).unwrap_err();
        assert_eq!(err.code, sqlstate::DUPLICATE_FILE);
        assert_eq!(err.severity, iolab_catalog::error::Severity::Fatal);
        assert_eq!(err.message, "lock file \"postmaster.pid\" already exists");
        let hint = err.hint.unwrap();
        assert!(
            hint.contains(&format!("(PID {})", std::process::id())),
            "{hint}"
        );
        drop(first);
        // The file stays; the lock went with its holder.
        assert!(dir.0.join(LOCK_FILE).exists());
        DataDirLock::acquire(&dir.0).expect("the lock is free again");
    }
}
