//! `global/pg_control`: where the last checkpoint is and how the server last stopped.
//!
//! A small JSON document written through a temporary file, fsync and rename, so it is
//! always whole. Start-up reads it: `shut down` means the last checkpoint record is the
//! end of the WAL and nothing needs redo; anything else means a crash, and redo starts at
//! the checkpoint's redo point. A data directory from before the WAL has no control file
//! and was shut down cleanly (its files are whole; there is nothing to redo).

use std::path::{Path, PathBuf};

use iolab_catalog::store::write_durably;
use serde::{Deserialize, Serialize};

use super::record::Lsn;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClusterState {
    #[serde(rename = "shut down")]
    ShutDown,
    #[serde(rename = "in production")]
    InProduction,
    #[serde(rename = "in crash recovery")]
    InCrashRecovery,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlData {
    pub state: ClusterState,
    /// The last checkpoint record (0: none yet).
    pub checkpoint: Lsn,
    /// Its redo point.
    pub redo: Lsn,
    /// When it was taken, microseconds since the Unix epoch.
    pub checkpoint_time_us: u64,
}

pub struct ControlFile {
    path: PathBuf,
}

impl ControlFile {
    pub fn new(data_dir: &Path) -> ControlFile {
        ControlFile {
            path: data_dir.join("global").join("pg_control"),
        }
    }

    /// The stored state, or `None` for a data directory without one.
    pub fn read(&self) -> std::io::Result<Option<ControlData>> {
        match std::fs::read(&self.path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("control file \"{}\" is corrupt: {e}", self.path.display()),
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn write(&self, data: &ControlData) -> std::io::Result<()> {
        let bytes = serde_json::to_vec_pretty(data).map_err(std::io::Error::other)?;
        write_durably(&self.path, &bytes)
    }
}
