//! B-tree indexes: PostgreSQL's nbtree (Lehman and Yao's B-link tree) in 8 KiB pages read
//! and written through the shared buffer pool.
//!
//! # What an index is
//!
//! A B-tree index on column `a` of table `t` is a relation file of its own
//! (`base/<relfilenode>`) holding one **leaf entry** per heap tuple: `(a, heap TID)`,
//! where the TID `(block, line pointer)` says where the row lies (an index on `(a, b)`
//! holds `(a, b, heap TID)`, ordered by `a`, then `b`). Entries are kept sorted by key,
//! and among equal keys by TID, in a tree of pages:
//!
//! ```text
//!   block 0: meta page ──root──▶ ┌──────────── level 2 (root) ────────────┐
//!                                │ −∞ ↓      ‖ 5017 ↓                     │
//!                       ┌────────┴───────────┐┌──────────────────────────┐
//!        level 1        │ −∞ ↓ | 512 ↓ | … ‖hk│→│ −∞ ↓ | 5300 ↓ | …        │
//!                       └───┬──────┬─────────┘└──────────────────────────┘
//!        level 0    ┌───────▼──┐┌──▼───────┐┌──────────┐
//!        (leaves)   │ 0 1 1 2 …││ 512 513 …││ …        │ → … → (NULL keys last)
//!                   └──────────┘└──────────┘└──────────┘
//! ```
//!
//! Every page but the rightmost of its level carries a **high key** (an upper bound of
//! its items) and a link to its right sibling; internal pages hold **pivots**, each the
//! lower bound of the subtree its downlink leads to. `page.rs` has the byte layout (it is
//! PostgreSQL's) and docs/storage-format.md describes it field by field.
//!
//! # The files of this module
//!
//! | file | what |
//! |---|---|
//! | `page.rs` | page and tuple layout: special space, meta page, leaf and pivot tuples, search keys |
//! | `key.rs` | key order per type (the default operator classes), stored form, sort form |
//! | `build.rs` | CREATE INDEX: heap scan, in-memory sort, bottom-up load |
//! | `scan.rs` | the descent (moving right past concurrent splits) and range scans |
//! | `read_ahead.rs` | a range scan's next leaves, read ahead through a read stream |
//! | `insert.rs` | inserting entries of new rows; page splits |
//! | `unique.rs` | unique indexes: the check of equal keys against the heap, CREATE UNIQUE INDEX |
//! | `maintain.rs` | keeping a table's indexes up to date during INSERT / COPY / UPDATE; ON CONFLICT DO NOTHING |
//! | `dedup.rs` | deduplication: equal keys merged into posting list tuples |
//! | `split_point.rs` | where a full page splits |
//! | `check.rs` | structural and heap-consistency verification (`iolab_btree_check`) |
//! | `vacuum.rs` | VACUUM: the entries of removed heap tuples go |
//!
//! # Concurrency
//!
//! Readers take one page's shared content lock at a time and never wait for writers
//! beyond that; the B-link discipline (high keys, right-links, "move right") makes a
//! concurrent split harmless to them (`scan.rs`). Writers of one index are serialised
//! by a per-index writer lock held for a batch of insertions ([`writer_lock`]), which
//! keeps splits simple: nothing else changes the tree while a writer walks its path back
//! up. CREATE INDEX builds into a file nobody else knows yet.
//!
//! # Who calls what
//!
//! * CREATE INDEX: [`create_index`] (build, fsync, then the catalog entry).
//! * INSERT / COPY / UPDATE: the heap inserter hands every placed tuple to an
//!   [`IndexMaintainer`], which inserts its batch's entries after each batch (checking
//!   unique indexes).
//! * TRUNCATE: [`truncate_index`] empties the file to a lone meta page; DROP INDEX and
//!   DROP TABLE: [`drop_index_files`].
//! * Bitmap and index scans: [`BtreeIndex::scan_range`] / [`BtreeIndex::scan_nulls`].
//!
//! # Not (yet) here
//!
//! DESC / NULLS FIRST, page deletion, INCLUDE columns, expressions, partial indexes, and
//! skip scans backward or through more than the first column. Changes to a built index are WAL-logged (`crate::wal`); a
//! build is not, and is written and fsynced before CREATE INDEX returns.

pub mod build;
pub mod check;
pub mod dedup;
pub mod external_sort;
pub mod insert;
pub mod key;
mod maintain;
pub mod page;
mod read_ahead;
pub mod scan;
mod split_point;
pub mod unique;
pub mod vacuum;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use iolab_catalog::{IndexDef, PgError, PgResult, PgType, TableDef};
use parking_lot::Mutex;

pub use build::{HeapSource, LoadStats};
pub use check::CheckReport;
pub use key::{Key, KeyColumns, KeyKind};
pub use maintain::IndexMaintainer;
pub use scan::BtreeScan;

use iolab_stats::progress::{create_index, ProgressCommand};
use iolab_stats::BackendType;

use crate::accounting::{IoAccount, StatsSink};
use crate::buffer::BufferPool;
use crate::exec::context::ProgressReport;
use crate::exec::StatementContext;
use crate::heap;
use crate::storage::relfile::RelFile;
use crate::stream::ReadStreamConfig;
use crate::Database;

/// A heap tuple's address: (block number, line pointer number from 1).
pub type Tid = (u32, u16);

/// SQLSTATE `index_corrupted`.
pub const INDEX_CORRUPTED: &str = "XX002";

/// An index corruption error (XX002).
pub(crate) fn corrupted(message: String) -> PgError {
    PgError::new(INDEX_CORRUPTED, message)
}

/// Entries between two progress lines of a big CREATE INDEX in the server log.
pub const PROGRESS_EVERY_ENTRIES: u64 = 1_000_000;

/// One B-tree index, ready to be searched or written (a cheap handle: clones share the
/// pool and the open file).
#[derive(Clone)]
pub struct BtreeIndex {
    pool: Arc<BufferPool>,
    rel: Arc<RelFile>,
    columns: Arc<KeyColumns>,
    name: String,
    /// Whether builds and inserts deduplicate (`dedup.rs`): the key type allows it and the
    /// `deduplicate_items` storage parameter is not off.
    deduplicate: bool,
    /// Percent of a leaf a build fills, and where a rightmost leaf splits (`fillfactor`).
    leaf_fillfactor: usize,
    /// Scans through this handle copy each entry's key beside its TID
    /// ([`returning_keys`](Self::returning_keys)).
    scans_return_keys: bool,
}

impl std::fmt::Debug for BtreeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BtreeIndex")
            .field("name", &self.name)
            .field("relfilenode", &self.rel.relfilenode())
            .field("key_types", &self.columns.types())
            .finish()
    }
}

impl BtreeIndex {
    /// An index stored in `rel`, whose key columns are of types `key_types`.
    pub fn new(
        pool: Arc<BufferPool>,
        rel: Arc<RelFile>,
        key_types: &[PgType],
        name: &str,
    ) -> BtreeIndex {
        let columns = KeyColumns::new(key_types);
        BtreeIndex {
            pool,
            rel,
            deduplicate: columns.equal_image(),
            columns: Arc::new(columns),
            name: name.to_string(),
            leaf_fillfactor: build::LEAF_FILLFACTOR,
            scans_return_keys: false,
        }
    }

    /// This index, its scans also returning each TID's key ([`BtreeScan::next_with_key`](scan::BtreeScan::next_with_key)):
    /// what an Index Only Scan returns instead of the heap tuple's column.
    pub fn returning_keys(mut self) -> BtreeIndex {
        self.scans_return_keys = true;
        self
    }

    /// The index `def` of `db`.
    pub fn open(db: &Database, def: &IndexDef) -> PgResult<BtreeIndex> {
        let rel = db.relation_file(def.relfilenode, def.persistence, &def.schema)?;
        let mut index = BtreeIndex::new(db.buffers_of(&rel)?, rel, &def.key_types, &def.name);
        // CREATE INDEX checked the value.
        let deduplicate_items = def
            .reloption("deduplicate_items")
            .is_none_or(|v| crate::values::input::parse_bool(v).unwrap_or(true));
        index.deduplicate &= deduplicate_items;
        if let Some(fillfactor) = def
            .reloption("fillfactor")
            .and_then(|v| v.trim().parse().ok())
        {
            index.leaf_fillfactor = fillfactor;
        }
        Ok(index)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key columns' types, in index order.
    pub fn key_columns(&self) -> &KeyColumns {
        &self.columns
    }

    pub fn relfilenode(&self) -> u32 {
        self.rel.relfilenode()
    }

    /// Blocks of the index file (meta page included).
    pub fn nblocks(&self) -> u32 {
        self.rel.nblocks()
    }

    /// The index file.
    pub fn relfile(&self) -> &Arc<RelFile> {
        &self.rel
    }
}

/// The lock writers of the index stored in `relfilenode` take turns on (see the module
/// comment). One per index, kept until the index is dropped.
pub(crate) fn writer_lock(relfilenode: u32) -> Arc<Mutex<()>> {
    writers().lock().entry(relfilenode).or_default().clone()
}

fn writers() -> &'static Mutex<HashMap<u32, Arc<Mutex<()>>>> {
    static WRITERS: OnceLock<Mutex<HashMap<u32, Arc<Mutex<()>>>>> = OnceLock::new();
    WRITERS.get_or_init(Default::default)
}

/// Where CREATE INDEX and the check read `table` from, through a read stream set up as
/// `stream_config` says.
pub fn heap_source(
    db: &Database,
    table: &TableDef,
    key_columns: &[usize],
    stream_config: ReadStreamConfig,
) -> PgResult<HeapSource> {
    Ok(HeapSource {
        aio: db.aio.clone(),
        pool: db.pool.clone(),
        rel: db.relfile(table.relfilenode)?,
        columns: crate::heap::codec::TupleLayout::for_table(table),
        key_columns: key_columns.to_vec(),
        clog: db.txns.clog().clone(),
        horizon: db.txns.oldest_nonremovable(),
        stream_config,
    })
}

/// `iolab_btree_check(index)`: verifies the structure of index `def` and that its entries
/// are exactly its table's live rows (see `check.rs`). Holds the index's writer lock
/// meanwhile, so inserts into the table wait; rows being inserted by a statement still
/// running may be reported missing. The I/O counts as the session's (`pid`).
pub fn check_index(
    db: &Database,
    def: &IndexDef,
    stream_config: ReadStreamConfig,
    pid: i32,
    track_io_timing: bool,
) -> PgResult<CheckReport> {
    let table = db
        .catalog
        .table_by_oid(def.table_oid)
        .ok_or_else(|| PgError::internal(format!("table of index \"{}\" not found", def.name)))?;
    let index = BtreeIndex::open(db, def)?;
    let source = heap_source(db, &table, &def.columns, stream_config)?;
    let mut acct = IoAccount::new(
        track_io_timing,
        Some(StatsSink {
            hub: db.io_stats.clone(),
            backend_type: BackendType::ClientBackend,
            pid,
        }),
    );
    let lock = writer_lock(def.relfilenode);
    let _writer = lock.lock();
    index.check_against_heap(&source, &mut acct, &|| Ok(()))
}

/// CREATE INDEX after parsing and naming: builds the index `def` (its OID reserved with
/// `Catalog::allocate_oid`) on `table` into a new file, writes and fsyncs it, and records
/// it in the catalog. On any failure (including a cancel) the file is removed and the
/// catalog is unchanged. Logs progress for big tables.
pub fn create_index(
    db: &Database,
    ctx: &StatementContext,
    table: &TableDef,
    def: &IndexDef,
) -> PgResult<LoadStats> {
    if def.key_types.contains(&PgType::Interval) {
        return Err(PgError::unsupported(
            "iolab cannot index interval columns (no B-tree operator class for them)",
        ));
    }
    let result = build_file(
        db,
        ctx,
        table,
        def,
        Some(create_index::COMMAND_CREATE_INDEX),
    )
    .and_then(|stats| {
        ctx.check_cancel()?;
        db.catalog.create_index(def.clone())?;
        Ok(stats)
    });
    if result.is_err() {
        if let Err(e) = db.remove_relation_file(def.relfilenode) {
            tracing::warn!("could not remove the file of index \"{}\": {e}", def.name);
        }
    }
    result
}

/// Builds index `def` (already in the catalog) anew into its file `def.relfilenode`, new
/// and empty, from `table`'s rows (VACUUM FULL and CLUSTER, after the table's rewrite).
/// It shows no progress of its own: the command's `pg_stat_progress_cluster` row stays, in
/// its `rebuilding index` phase.
pub fn rebuild_index(
    db: &Database,
    ctx: &StatementContext,
    table: &TableDef,
    def: &IndexDef,
) -> PgResult<LoadStats> {
    build_file(db, ctx, table, def, None)
}

/// [`rebuild_index`] for REINDEX: the same build, shown as `REINDEX` in
/// `pg_stat_progress_create_index`.
pub fn reindex(
    db: &Database,
    ctx: &StatementContext,
    table: &TableDef,
    def: &IndexDef,
) -> PgResult<LoadStats> {
    build_file(db, ctx, table, def, Some(create_index::COMMAND_REINDEX))
}

fn build_file(
    db: &Database,
    ctx: &StatementContext,
    table: &TableDef,
    def: &IndexDef,
    progress_command: Option<i64>,
) -> PgResult<LoadStats> {
    let started = Instant::now();
    let index = BtreeIndex::open(db, def)?;
    // An index build reads the table as a sequential scan does (PostgreSQL 18 uses a plain
    // sequential read stream for it too).
    let source = heap_source(db, table, &def.columns, ctx.stream_config(false, true))?;
    let mut acct = ctx.new_account();
    let log_progress = |phase: &str, rows: u64| {
        tracing::info!(
            index = %def.name,
            table = %table.name,
            rows,
            seconds = started.elapsed().as_secs_f64(),
            "CREATE INDEX in progress: {phase}"
        );
    };
    let progress = match progress_command {
        Some(command) => {
            let progress = ctx.report_progress(ProgressCommand::CreateIndex, table.oid);
            progress.set(create_index::COMMAND, command);
            progress
        }
        None => ProgressReport::silent(),
    };
    progress.set(create_index::INDEX_RELID, def.oid);
    progress.set(create_index::PHASE, create_index::SCANNING_TABLE);
    progress.set(create_index::BLOCKS_TOTAL, source.rel.nblocks());
    let result: PgResult<LoadStats> = (|| {
        // Asked once per block.
        let blocks_done = std::cell::Cell::new(0u64);
        let each_block = || {
            blocks_done.set(blocks_done.get() + 1);
            progress.set(create_index::BLOCKS_DONE, blocks_done.get());
            ctx.check_cancel()
        };
        let mut entries = external_sort::IndexSort::new(&index.columns, ctx.temp.clone());
        build::scan_heap(
            &source,
            &mut acct,
            &each_block,
            &mut |n| log_progress("scanning table", n),
            None,
            &mut |key, tid| entries.push(key, tid),
        )?;
        let total = entries.len();
        let big = total >= PROGRESS_EVERY_ENTRIES;
        if big {
            log_progress("sorting", total);
        }
        progress.set(create_index::PHASE, create_index::SORTING);
        progress.set(create_index::TUPLES_TOTAL, total);
        ctx.check_cancel()?;
        // A unique build judges each run of equal keys as the sorted entries go by; its
        // heap reads have an account of their own (the loader holds the build's).
        let column_names: Vec<String> = (def.columns.iter())
            .map(|&c| table.columns[c].name.clone())
            .collect();
        let mut unique = def
            .unique
            .then(|| unique::BuildCheck::new(&index, &column_names, ctx.new_account()));
        let db = &ctx.db;
        let mut judge = |tid: Tid, acct: &mut IoAccount| {
            heap::liveness::liveness(
                &db.pool,
                &source.rel,
                db.txns.clog(),
                &ctx.snapshot.own,
                tid,
                acct,
            )
        };
        let mut loader = build::BtreeLoader::new(&index, &table.name, &mut acct)?;
        progress.set(create_index::PHASE, create_index::LOADING);
        let mut done = 0u64;
        entries.for_each(&mut |key, tid| {
            if done.is_multiple_of(4096) {
                ctx.check_cancel()?;
                progress.set(create_index::TUPLES_DONE, done);
            }
            if done > 0 && done.is_multiple_of(PROGRESS_EVERY_ENTRIES) {
                log_progress("loading", done);
            }
            done += 1;
            if let Some(check) = unique.as_mut() {
                check.add(key, tid, &mut judge)?;
            }
            loader.add(key, tid)
        })?;
        if let Some(check) = unique {
            ctx.add_usage(&check.finish(&mut judge)?.usage);
        }
        let stats = loader.finish()?;
        progress.set(create_index::TUPLES_DONE, total);
        // Written and fsynced now: a crash after CREATE INDEX returns must not lose pages
        // the catalog says exist. (A temporary index does not outlive a crash.)
        if !index.rel.is_temporary() {
            db.pool
                .flush_relation_counted(index.relfilenode(), &mut acct)?;
            let synced = acct.fsync(|| index.rel.sync());
            synced.map_err(|e| {
                PgError::io(
                    &format!("could not fsync file \"{}\"", index.rel.path().display()),
                    &e,
                )
            })?;
        }
        if big {
            tracing::info!(
                index = %def.name,
                table = %table.name,
                rows = stats.entries,
                leaf_pages = stats.leaf_pages,
                height = stats.height,
                seconds = started.elapsed().as_secs_f64(),
                "CREATE INDEX done"
            );
        }
        Ok(stats)
    })();
    ctx.add_usage(&acct.usage);
    acct.flush();
    result
}

/// TRUNCATE: empties the index to a lone meta page (keeping its relfilenode).
pub fn truncate_index(db: &Database, def: &IndexDef, acct: &mut IoAccount) -> PgResult<()> {
    let lock = writer_lock(def.relfilenode);
    let _writer = lock.lock();
    let rel = db.relfile(def.relfilenode)?;
    db.buffers_of(&rel)?.discard_relation(def.relfilenode)?;
    rel.truncate().map_err(|e| {
        PgError::io(
            &format!("could not truncate file \"{}\"", rel.path().display()),
            &e,
        )
    })?;
    let (blkno, meta) = db.pool.new_block(&rel, None, acct)?;
    assert_eq!(blkno, page::METAPAGE);
    let allequalimage = KeyColumns::new(&def.key_types).equal_image();
    let mut page = meta.page_mut();
    page::BtMeta::new(page::P_NONE, 0, allequalimage).write_page(&mut page);
    crate::wal::log_change(
        &rel,
        &meta,
        &mut page,
        crate::wal::Change::Whole { new: true },
        acct,
    );
    Ok(())
}

/// DROP INDEX, and DROP TABLE for each of its indexes: the buffers and the file go
/// (the caller has removed the catalog entry).
pub fn drop_index_files(db: &Database, def: &IndexDef) -> PgResult<()> {
    let lock = writer_lock(def.relfilenode);
    let _writer = lock.lock();
    db.remove_relation_file(def.relfilenode)?;
    writers().lock().remove(&def.relfilenode);
    Ok(())
}

#[cfg(test)]
mod tests;
