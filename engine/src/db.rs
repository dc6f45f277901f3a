//! The database: one data directory, its catalog, buffer pool, transaction state and
//! open relation files. Everything a session needs to run statements hangs off
//! [`Database`], shared behind an `Arc` by every session.
//!
//! Data directory layout (see docs/storage-format.md):
//! - `PG_VERSION`: marks the directory as iolab's;
//! - `postmaster.pid`: locked by the server that has the directory open (one at a time);
//! - `global/catalog.json`, `global/xid_horizon`: catalog and transaction-id reservation;
//! - `pg_xact/clog`: the commit log;
//! - `pg_wal/`: the write-ahead log's segment files, `global/pg_control`: where its last
//!   checkpoint is (see [`crate::wal`]);
//! - `base/<relfilenode>[.<segment>]`: table data in 8 KiB pages, 1 GiB per segment file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use iolab_catalog::store::DATABASE_OID;
use iolab_catalog::{sqlstate, Catalog, Persistence, PgError, PgResult, TableDef};
use parking_lot::{Mutex, RwLock};

pub use crate::buffer::memory::{HugePageKind, HugePages};

use crate::accounting::IoAccount;
use crate::aio::{AioConfig, AioSystem};
use crate::buffer::memory::FrameMemory;
use crate::buffer::BufferPool;
use crate::heap::visibility_map::VisibilityMap;
use crate::storage::datadir_lock::DataDirLock;
use crate::storage::relfile::{RelFile, RelFileOptions};
use crate::txn::relation_locks::RelationLocks;
use crate::txn::TransactionManager;
use crate::wal::checkpointer::{CheckpointOptions, Checkpointer};
use crate::wal::recovery::{RecoveryOptions, Startup};
use crate::wal::{Wal, WalOptions};
use iolab_settings::IoMethod;
use iolab_stats::IoStatsHub;

/// Settings fixed when the database opens.
#[derive(Clone, Debug)]
pub struct DatabaseOptions {
    /// Number of 8 KiB buffers in the pool (`shared_buffers`).
    pub shared_buffers: usize,
    /// Open relation files with `O_DIRECT` (`debug_io_direct` contains `data`).
    pub direct_io: bool,
    /// Whether to back the pool with huge pages (`huge_pages`).
    pub huge_pages: HugePages,
    /// The I/O method and its bounds (`io_method`, `io_workers`, `io_max_concurrency`).
    pub aio: AioConfig,
    /// The WAL's bounds and switches (`wal_buffers`, `full_page_writes`, `fsync`).
    pub wal: WalOptions,
    /// Redo's read-ahead (`recovery_prefetch`, `maintenance_io_concurrency`,
    /// `wal_decode_buffer_size`).
    pub recovery: RecoveryOptions,
    /// When checkpoints happen, and the WAL writer's pace.
    pub checkpoints: CheckpointOptions,
    /// The background writer's settings.
    pub bgwriter: crate::buffer::bgwriter::BgWriterOptions,
    /// Entries of the relation lock table (`max_locks_per_transaction ×
    /// max_connections`).
    pub lock_table_entries: usize,
}

impl Default for DatabaseOptions {
    /// PostgreSQL's defaults: 128 MB of buffers, buffered I/O, `huge_pages = try`.
    fn default() -> DatabaseOptions {
        DatabaseOptions {
            shared_buffers: 16384,
            direct_io: false,
            huge_pages: HugePages::Try,
            aio: AioConfig {
                method: IoMethod::Worker,
                io_workers: 3,
                max_concurrency: 64,
                max_issuers: 128,
            },
            wal: WalOptions::default(),
            recovery: RecoveryOptions::default(),
            checkpoints: CheckpointOptions::default(),
            bgwriter: Default::default(),
            lock_table_entries: 64 * 100,
        }
    }
}

pub struct Database {
    data_dir: PathBuf,
    pub catalog: Catalog,
    pub pool: Arc<BufferPool>,
    pub txns: TransactionManager,
    /// Table-level locks held by sessions' transactions (`txn::relation_locks`).
    pub relation_locks: RelationLocks,
    relfiles: Mutex<HashMap<u32, Arc<RelFile>>>,
    /// Sessions' local buffers by temporary schema (`pg_temp_N`), for opening their
    /// temporary relations (see [`crate::temp`]).
    pub(crate) local_buffers: Mutex<HashMap<String, std::sync::Weak<BufferPool>>>,
    /// The I/O method executing reads (after any io_uring → worker fallback).
    pub aio: Arc<AioSystem>,
    /// Server-wide I/O statistics (`pg_stat_io`).
    pub io_stats: Arc<IoStatsHub>,
    /// Pages of each table with room for new tuples (`heap::fsm`).
    pub fsm: Arc<crate::heap::fsm::FreeSpaceMap>,
    /// Pages of each table every transaction sees all of (`heap::visibility_map`).
    pub vm: Arc<VisibilityMap>,
    /// The write-ahead log (`wal`).
    pub wal: Arc<Wal>,
    /// Takes checkpoints (one at a time) and keeps the WAL flushed in the background.
    pub checkpointer: Checkpointer,
    /// The background writer's options, read at each of its rounds.
    bgwriter_options: RwLock<crate::buffer::bgwriter::BgWriterOptions>,
    direct_io: bool,
    /// What backs the pool's frames, and how many bytes of them are huge pages.
    huge_page_kind: HugePageKind,
    huge_page_bytes: usize,
    /// Held while the database is open: no second server on this directory.
    _lock: DataDirLock,
}

impl Database {
    /// Opens the data directory, creating and initialising it when it does not exist, locks
    /// it (FATAL 58P02 if another server has it open), and allocates the buffer pool. A
    /// pool the kernel refuses (`huge_pages = on` without huge pages, or not enough memory)
    /// is a FATAL error with PostgreSQL's message and hint.
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
        let lock = DataDirLock::acquire(data_dir)?;
        // Temporary files of sorts and aggregations (`work_mem`): none outlives its server.
        let temp_files = data_dir.join(crate::exec::temp_files::TEMP_FILES_DIR);
        let _ = std::fs::remove_dir_all(&temp_files);
        std::fs::create_dir_all(&temp_files).map_err(|e| io("could not create", e))?;
        let catalog = Catalog::open(data_dir)?;
        let txns = TransactionManager::open_for_recovery(data_dir)
            .map_err(|e| io("could not open transaction state in", e))?;
        let frames = FrameMemory::allocate(options.shared_buffers, options.huge_pages)?;
        let huge_page_kind = frames.huge_page_kind();
        let huge_page_bytes = frames.huge_page_bytes();
        let pool = BufferPool::with_memory(frames);
        // The statistics the last clean shutdown saved (none after a crash).
        let io_stats = match iolab_stats::persist::load(data_dir) {
            Ok(saved) => saved.unwrap_or_default(),
            Err(message) => {
                tracing::warn!("{message}; statistics start empty");
                IoStatsHub::new()
            }
        };
        let io_stats = Arc::new(io_stats);
        let (aio, fallback) =
            AioSystem::start(&options.aio, options.direct_io, Some(Arc::clone(&io_stats)))
                .map_err(|message| PgError::new(sqlstate::INTERNAL_ERROR, message))?;
        if let Some(note) = fallback {
            tracing::warn!("{note}");
        }
        let hub = Arc::clone(&io_stats);
        txns.set_end_listener(Box::new(move |xid, committed| {
            hub.relation_counts.end_transaction(xid, committed)
        }));
        let wal = Wal::open(&data_dir.join("pg_wal"), options.wal, Arc::clone(&io_stats))
            .map_err(|e| io("could not open the WAL in", e))?;
        let wal = Arc::new(wal);
        pool.set_wal(Arc::clone(&wal));
        txns.set_wal(Arc::clone(&wal));
        let db = Arc::new(Database {
            data_dir: data_dir.to_path_buf(),
            catalog,
            pool,
            txns,
            relation_locks: RelationLocks::new(options.lock_table_entries, DATABASE_OID),
            relfiles: Mutex::new(HashMap::new()),
            local_buffers: Mutex::new(HashMap::new()),
            aio,
            io_stats,
            fsm: Default::default(),
            vm: Default::default(),
            wal,
            checkpointer: Checkpointer::new(options.checkpoints),
            bgwriter_options: RwLock::new(options.bgwriter),
            direct_io: options.direct_io,
            huge_page_kind,
            huge_page_bytes,
            _lock: lock,
        });
        // The visibility map a clean shutdown saved, used only if nothing needs redo.
        let saved_vm = VisibilityMap::load(data_dir).unwrap_or_else(|message| {
            tracing::warn!("{message}; pages count as not all-visible until VACUUM");
            None
        });
        let startup = crate::wal::recovery::startup(&db, &options.recovery)?;
        db.txns
            .abort_unfinished()
            .map_err(|e| io("could not write the commit log in", e))?;
        crate::temp::remove_orphans(&db)?;
        if let (Startup::Clean, Some(saved)) = (&startup, saved_vm) {
            // Only for tables that are still there (a temporary table's went with it).
            saved.retain(|relfilenode| db.catalog.persistence_of(relfilenode).is_some());
            db.vm.restore(saved);
        }
        match startup {
            Startup::Clean => {}
            Startup::NewCluster => {
                db.checkpointer.checkpoint(&db, "initial", false)?;
            }
            Startup::Recovered(_) => {
                db.reset_unlogged_relations()?;
                db.checkpointer
                    .checkpoint(&db, "end-of-recovery immediate", false)?;
            }
        }
        Checkpointer::start_background(&db);
        crate::buffer::bgwriter::start_background(&db);
        Ok(db)
    }

    /// The background writer's options now.
    pub fn bgwriter_options(&self) -> crate::buffer::bgwriter::BgWriterOptions {
        *self.bgwriter_options.read()
    }

    /// New background writer options (a configuration reload), used from its next round.
    pub fn set_bgwriter_options(&self, options: crate::buffer::bgwriter::BgWriterOptions) {
        *self.bgwriter_options.write() = options;
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Whether relation files are opened with `O_DIRECT`.
    pub fn direct_io(&self) -> bool {
        self.direct_io
    }

    /// What backs the buffer pool: hugetlb pages, transparent huge pages or 4 KiB pages.
    pub fn huge_page_kind(&self) -> HugePageKind {
        self.huge_page_kind
    }

    /// Bytes of the buffer pool in huge pages, as measured at start-up.
    pub fn huge_page_bytes(&self) -> usize {
        self.huge_page_bytes
    }

    /// The AIO handles in use now, for `pg_aios`.
    pub fn aio_rows(&self) -> Vec<iolab_stats::AioRow> {
        self.aio.rows()
    }

    /// The open file of a relation (opened on first use and kept; bounded by the number
    /// of relations). Its changes are logged unless the catalog says it is unlogged or
    /// temporary.
    pub fn relfile(&self, relfilenode: u32) -> PgResult<Arc<RelFile>> {
        self.open_relfile(relfilenode, || {
            self.catalog
                .persistence_of(relfilenode)
                .unwrap_or((Persistence::Permanent, String::new()))
        })
    }

    /// [`relfile`](Self::relfile) for a relation not in the catalog yet (being created),
    /// whose persistence and schema the caller knows.
    pub fn relation_file(
        &self,
        relfilenode: u32,
        persistence: Persistence,
        schema: &str,
    ) -> PgResult<Arc<RelFile>> {
        self.open_relfile(relfilenode, || (persistence, schema.to_string()))
    }

    /// The relation's open file; opening it asks `storage` for its persistence and schema
    /// (a file already open is returned without asking): a permanent relation's changes
    /// are logged, a temporary one is tied to the local buffers of its schema's session.
    fn open_relfile(
        &self,
        relfilenode: u32,
        storage: impl FnOnce() -> (Persistence, String),
    ) -> PgResult<Arc<RelFile>> {
        let mut files = self.relfiles.lock();
        if let Some(f) = files.get(&relfilenode) {
            return Ok(f.clone());
        }
        let options = RelFileOptions {
            direct_io: self.direct_io,
            ..RelFileOptions::default()
        };
        let f = Arc::new(
            RelFile::open_with(&self.data_dir, relfilenode, options).map_err(|e| {
                PgError::io(&format!("could not open file \"base/{relfilenode}\""), &e)
            })?,
        );
        match storage() {
            (Persistence::Permanent, _) => f.set_wal(Arc::clone(&self.wal)),
            (Persistence::Unlogged, _) => {}
            (Persistence::Temporary, schema) => {
                let local = self
                    .local_buffers
                    .lock()
                    .get(&schema)
                    .and_then(|w| w.upgrade());
                let Some(local) = local else {
                    return Err(crate::temp::other_sessions_error());
                };
                f.set_local_buffers(&local);
            }
        }
        files.insert(relfilenode, f.clone());
        Ok(f)
    }

    /// The pool that caches `rel`'s blocks: the shared pool, or its session's local
    /// buffers for a temporary relation.
    pub fn buffers_of(&self, rel: &RelFile) -> PgResult<Arc<BufferPool>> {
        self.pool.serving(rel)
    }

    /// Every open relation file but temporary ones (a checkpoint fsyncs them).
    pub(crate) fn open_relation_files(&self) -> Vec<Arc<RelFile>> {
        let files = self.relfiles.lock();
        files
            .values()
            .filter(|f| !f.is_temporary())
            .cloned()
            .collect()
    }

    /// Creates the (empty) file of a new table.
    pub fn create_relation_file(&self, table: &TableDef) -> PgResult<()> {
        self.relation_file(table.relfilenode, table.persistence, &table.schema)
            .map(|_| ())
    }

    /// After crash recovery, as PostgreSQL does: unlogged tables are emptied and their
    /// indexes made empty again (their pages were never logged, so what the crash left of
    /// them cannot be trusted).
    fn reset_unlogged_relations(&self) -> PgResult<()> {
        for table in self.catalog.tables() {
            if table.persistence != Persistence::Unlogged {
                continue;
            }
            self.empty_table_in_place(&table)?;
            tracing::info!("unlogged table \"{}\" emptied after the crash", table.name);
        }
        Ok(())
    }

    /// Empties a table and its indexes in their files (no new relfilenode, nothing
    /// logged, not undoable): for tables nobody else can see meanwhile — unlogged tables
    /// during start-up, a session's temporary tables (`ON COMMIT DELETE ROWS`).
    pub fn empty_table_in_place(&self, table: &TableDef) -> PgResult<()> {
        let rel = self.relfile(table.relfilenode)?;
        self.buffers_of(&rel)?.discard_relation(table.relfilenode)?;
        self.fsm.forget(table.relfilenode);
        self.vm.forget(table.relfilenode);
        rel.truncate().map_err(|e| {
            PgError::io(
                &format!("could not truncate file \"{}\"", rel.path().display()),
                &e,
            )
        })?;
        let mut acct = IoAccount::new(false, None);
        for index in self.catalog.indexes_of(table.oid) {
            crate::btree::truncate_index(self, &index, &mut acct)?;
        }
        Ok(())
    }

    /// Removes table `oid` at once: its catalog entry, its indexes' and owned sequences',
    /// and all their files (the end of DROP TABLE, or the undoing of CREATE TABLE).
    pub fn remove_table(&self, oid: u32) -> PgResult<()> {
        let dropped = self.catalog.drop_table(oid)?;
        for s in &dropped.sequences {
            self.catalog.sequence_values.remove(s.oid)?;
        }
        self.remove_relation_file(dropped.table.relfilenode)?;
        for index in &dropped.indexes {
            crate::btree::drop_index_files(self, index)?;
        }
        Ok(())
    }

    /// Removes a relation's buffers and files (DROP TABLE, and the old file after TRUNCATE).
    pub fn remove_relation_file(&self, relfilenode: u32) -> PgResult<()> {
        let open = self.relfiles.lock().get(&relfilenode).cloned();
        match open.and_then(|rel| rel.local_buffers()) {
            // A temporary relation's buffers went with its session, if it has gone.
            Some(local) => local.map_or(Ok(0), |pool| pool.discard_relation(relfilenode))?,
            None => self.pool.discard_relation(relfilenode)?,
        };
        self.io_stats.relation_counts.forget(relfilenode);
        self.fsm.forget(relfilenode);
        self.vm.forget(relfilenode);
        self.relfiles.lock().remove(&relfilenode);
        crate::storage::relfile::remove_files(&self.data_dir, relfilenode)
            .map_err(|e| PgError::io(&format!("could not remove file \"base/{relfilenode}\""), &e))
    }

    /// Number of blocks of a table.
    pub fn table_blocks(&self, table: &TableDef) -> PgResult<u32> {
        Ok(self.relfile(table.relfilenode)?.nblocks())
    }

    /// CHECKPOINT: writes every dirty buffer, fsyncs the files and the commit log, logs a
    /// checkpoint record (see [`crate::wal::checkpointer`]). Returns the number of buffers
    /// written. Its writes and fsyncs count as the checkpointer's in `pg_stat_io` (timed
    /// with `track_io_timing`, the server's setting).
    pub fn checkpoint(&self, track_io_timing: bool) -> PgResult<usize> {
        self.checkpointer
            .checkpoint_timed(self, "immediate force wait", false, track_io_timing)
    }

    /// The checkpoint of a clean shutdown, after which nothing needs redo, and the
    /// cumulative statistics saved for the next start (`iolab_stats::persist`).
    pub fn shutdown_checkpoint(&self, track_io_timing: bool) -> PgResult<usize> {
        let written = self.checkpointer.checkpoint_timed(
            self,
            "shutdown immediate",
            true,
            track_io_timing,
        )?;
        if let Err(e) = iolab_stats::persist::save(&self.io_stats, &self.data_dir) {
            tracing::warn!("could not write statistics file: {e}");
        }
        if let Err(e) = self.vm.save(&self.data_dir) {
            tracing::warn!("could not write the visibility map: {e}");
        }
        Ok(written)
    }
}
