//! The commit log: two status bits per transaction id, in memory and in `pg_xact/clog`.
//!
//! Byte `xid / 4` holds xids `4k .. 4k+3`, two bits each (bits `2*(xid % 4)`). The whole
//! log is kept in memory (4 xids per byte: a billion transactions would be 256 MB; the
//! bound is the xid space). Writes of one status go through to the file at once with
//! `pwrite` of that single byte; `sync` fsyncs it.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;

use parking_lot::RwLock;

use super::Xid;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XidStatus {
    InProgress = 0,
    Committed = 1,
    Aborted = 2,
}

impl XidStatus {
    fn from_bits(bits: u8) -> XidStatus {
        match bits & 3 {
            0 => XidStatus::InProgress,
            1 => XidStatus::Committed,
            _ => XidStatus::Aborted,
        }
    }
}

pub struct Clog {
    file: File,
    bytes: RwLock<Vec<u8>>,
}

impl Clog {
    /// Opens (or creates) the commit log at `path`.
    pub fn open(path: &Path) -> io::Result<Clog> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let bytes = std::fs::read(path)?;
        Ok(Clog {
            file,
            bytes: RwLock::new(bytes),
        })
    }

    pub fn status(&self, xid: Xid) -> XidStatus {
        let (byte, shift) = position(xid);
        let bytes = self.bytes.read();
        match bytes.get(byte) {
            Some(b) => XidStatus::from_bits(b >> shift),
            None => XidStatus::InProgress,
        }
    }

    /// Records the final status of `xid` and writes its byte to the file.
    pub fn set_status(&self, xid: Xid, status: XidStatus) -> io::Result<()> {
        let (byte, shift) = position(xid);
        let value = {
            let mut bytes = self.bytes.write();
            if bytes.len() <= byte {
                bytes.resize(byte + 1, 0);
            }
            let b = &mut bytes[byte];
            debug_assert_eq!(
                XidStatus::from_bits(*b >> shift),
                XidStatus::InProgress,
                "xid {xid} already ended"
            );
            *b = (*b & !(3 << shift)) | ((status as u8) << shift);
            *b
        };
        self.file.write_all_at(&[value], byte as u64)
    }

    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_all()
    }

    /// Size of the in-memory log in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.bytes.read().len()
    }
}

fn position(xid: Xid) -> (usize, u32) {
    ((xid / 4) as usize, 2 * (xid % 4))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_persist_across_reopen() {
        let dir = std::env::temp_dir().join(format!("iolab-clog-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("clog");
        {
            let clog = Clog::open(&path).unwrap();
            clog.set_status(3, XidStatus::Committed).unwrap();
            clog.set_status(4, XidStatus::Aborted).unwrap();
            clog.set_status(9, XidStatus::Committed).unwrap();
            assert_eq!(clog.status(5), XidStatus::InProgress);
        }
        let clog = Clog::open(&path).unwrap();
        assert_eq!(clog.status(3), XidStatus::Committed);
        assert_eq!(clog.status(4), XidStatus::Aborted);
        assert_eq!(clog.status(5), XidStatus::InProgress);
        assert_eq!(clog.status(9), XidStatus::Committed);
        assert_eq!(clog.status(1_000_000), XidStatus::InProgress);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
