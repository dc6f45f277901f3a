//! The database: one data directory, its catalog, buffer pool, transaction state and
//! open relation files. Everything a session needs to run statements hangs off
//! [`Database`], shared behind an `Arc` by every session.
//!
//! Data directory layout (see docs/storage-format.md):
//! - `PG_VERSION`: marks the directory as iolab's;
//! - `global/catalog.json`, `global/xid_horizon`: catalog and transaction-id reservation;
//! - `pg_xact/clog`: the commit log;
//! - `base/<relfilenode>[.<segment>]`: table data in 8 KiB pages, 1 GiB per segment file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iolab_catalog::{sqlstate, Catalog, PgError, PgResult, TableDef};
use parking_lot::Mutex;

use crate::buffer::BufferPool;
use crate::storage::relfile::RelFile;
use crate::txn::TransactionManager;

/// Settings fixed when the database opens.
#[derive(Clone, Debug)]
pub struct DatabaseOptions {
    /// Number of 8 KiB buffers in the pool (`shared_buffers`).
    pub shared_buffers: usize,
}

pub struct Database {
    data_dir: PathBuf,
    pub catalog: Catalog,
    pub pool: Arc<BufferPool>,
    pub txns: TransactionManager,
    relfiles: Mutex<HashMap<u32, Arc<RelFile>>>,
}

impl Database {
    /// Opens the data directory, creating and initialising it when it does not exist.
    pub fn open(data_dir: &Path, options: &DatabaseOptions) -> PgResult<Arc<Database>> {
        let io = |what: &str, e: std::io::Error| {
            PgError::io(&format!("{what} \"{}\"", data_dir.display()), &e)
        };
        std::fs::create_dir_all(data_dir).map_err(|e| io("could not create data directory", e))?;
        let marker = data_dir.join("PG_VERSION");
        if !marker.exists() {
            let non_empty = std::fs::read_dir(data_dir)
                .map_err(|e| io("could not read data directory", e))?
                .next()
                .is_some();
            if non_empty {
                return Err(PgError::new(
                    sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!("directory \"{}\" exists but is not an iolab data directory (no PG_VERSION file)", data_dir.display()),
                ));
            }
            std::fs::create_dir_all(data_dir.join("base"))
                .map_err(|e| io("could not create", e))?;
            std::fs::write(&marker, "18\n").map_err(|e| io("could not write PG_VERSION in", e))?;
        }
        let catalog = Catalog::open(data_dir)?;
        let txns = TransactionManager::open(data_dir)
            .map_err(|e| io("could not open transaction state in", e))?;
        let pool = BufferPool::new(options.shared_buffers);
        Ok(Arc::new(Database {
            data_dir: data_dir.to_path_buf(),
            catalog,
            pool,
            txns,
            relfiles: Mutex::new(HashMap::new()),
        }))
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The open file of a relation (opened on first use and kept; bounded by the number
    /// of relations).
    pub fn relfile(&self, relfilenode: u32) -> PgResult<Arc<RelFile>> {
        let mut files = self.relfiles.lock();
        if let Some(f) = files.get(&relfilenode) {
            return Ok(f.clone());
        }
        let f = Arc::new(RelFile::open(&self.data_dir, relfilenode).map_err(|e| {
            PgError::io(&format!("could not open file \"base/{relfilenode}\""), &e)
        })?);
        files.insert(relfilenode, f.clone());
        Ok(f)
    }

    /// Creates the (empty) file of a new table.
    pub fn create_relation_file(&self, table: &TableDef) -> PgResult<()> {
        self.relfile(table.relfilenode).map(|_| ())
    }

    /// Removes a relation's buffers and files (DROP TABLE, and the old file after TRUNCATE).
    pub fn remove_relation_file(&self, relfilenode: u32) -> PgResult<()> {
        self.pool.discard_relation(relfilenode)?;
        self.relfiles.lock().remove(&relfilenode);
        crate::storage::relfile::remove_files(&self.data_dir, relfilenode)
            .map_err(|e| PgError::io(&format!("could not remove file \"base/{relfilenode}\""), &e))
    }

    /// Number of blocks of a table.
    pub fn table_blocks(&self, table: &TableDef) -> PgResult<u32> {
        Ok(self.relfile(table.relfilenode)?.nblocks())
    }

    /// Writes every dirty buffer and fsyncs the files and the commit log (CHECKPOINT).
    /// Returns the number of buffers written.
    pub fn checkpoint(&self) -> PgResult<usize> {
        let written = self.pool.flush_all()?;
        let files: Vec<Arc<RelFile>> = self.relfiles.lock().values().cloned().collect();
        for f in files {
            f.sync().map_err(|e| {
                PgError::io(
                    &format!("could not fsync file \"{}\"", f.path().display()),
                    &e,
                )
            })?;
        }
        self.txns
            .sync()
            .map_err(|e| PgError::io("could not fsync commit log", &e))?;
        Ok(written)
    }
}
