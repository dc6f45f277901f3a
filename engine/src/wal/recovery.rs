//! Start-up: finding the end of the WAL, and replaying it after a crash (redo), with the
//! blocks the coming records change read ahead (`recovery_prefetch`).
//!
//! # Which case
//!
//! `global/pg_control` names the last checkpoint. After a clean shutdown its record is the
//! last in the WAL and new records follow it. Otherwise (or if records do follow it) the
//! server crashed: every record from the checkpoint's redo point on is replayed, in order,
//! until the first that is not valid (the end of the WAL). Page records copy their bytes
//! into pages whose LSN is older than the record; commit and abort records set the
//! transaction's status in the commit log. Transactions with neither are aborted
//! afterwards, unlogged relations are emptied, and a checkpoint ends recovery.
//!
//! # Reading ahead
//!
//! Replay changes blocks one record at a time; a block that is not in the buffer pool
//! costs a synchronous read, and a cold buffer pool makes recovery a chain of random
//! reads. So, as PostgreSQL 15+ does, a decoder runs ahead of replay and starts the reads
//! of the blocks later records will change, so that they are under way when replay gets
//! there. How depends on `io_method`:
//!
//! - `sync`: advice, `posix_fadvise(WILLNEED)`, as PostgreSQL 18 does under every method
//!   (the kernel reads into its page cache; useless with direct I/O, so not given then);
//! - `worker`, `io_uring` (iolab's extension): reads into the buffer pool through the I/O
//!   method, as a read stream's, buffered or direct. Replay waits for a block's read
//!   before it replays the first record that changes the block. With buffered I/O each
//!   such read is preceded by the same advice, so that the kernel starts all of them at
//!   once (three I/O workers would otherwise keep at most three under way).
//!
//! The decoder runs ahead while
//!
//! - the decoded records hold fewer than `wal_decode_buffer_size` bytes,
//! - fewer than `maintenance_io_concurrency` reads ahead are in flight (one is in flight
//!   until replay reaches the record that asked for it; for reads into the pool also within
//!   `io_max_concurrency` and the pool's pin limit), and
//! - fewer than 4 × `maintenance_io_concurrency` block references are ahead of replay.
//!
//! Each block reference it meets is counted in `pg_stat_recovery_prefetch` under one of
//! PostgreSQL's outcomes: `skip_init` (the record makes the page afresh), `skip_fpw` (it
//! carries a full image, or an earlier record not yet replayed does), `skip_new` (the
//! relation or block does not exist yet, or an earlier record not yet replayed makes it
//! afresh), `skip_rep`
//! (one of the last 4 blocks read ahead, or one in flight), `hit` (in the buffer pool
//! already), or `prefetch` (read ahead). With `recovery_prefetch = off` or
//! `maintenance_io_concurrency = 0`, or under `sync` with direct I/O, records are decoded
//! one at a time and nothing is read ahead.
//!
//! A long redo logs `redo in progress, elapsed time: …, current LSN: …` every
//! `log_startup_progress_interval`, as PostgreSQL does.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use iolab_catalog::{PgError, PgResult};
use iolab_settings::IoMethod;
use iolab_stats::BackendType;

use super::control::{ClusterState, ControlData, ControlFile};
use super::record::{format_lsn, BlockEntry, Body, Lsn, Record};
use crate::accounting::{Buffers, IoAccount, StatsSink};
use crate::aio::{InFlightIo, Issuer};
use crate::buffer::StartedRead;
use crate::storage::page::{page_lsn, page_set_lsn};
use crate::storage::relfile::RelFile;
use crate::txn::XidStatus;
use crate::Database;

/// `recovery_prefetch`, `maintenance_io_concurrency` and `wal_decode_buffer_size` as the
/// server was started with.
#[derive(Clone, Copy, Debug)]
pub struct RecoveryOptions {
    pub prefetch: bool,
    pub maintenance_io_concurrency: u32,
    pub decode_buffer_bytes: usize,
    /// How often a long redo logs its progress (`log_startup_progress_interval`; `None`:
    /// never).
    pub progress_interval: Option<std::time::Duration>,
}

impl Default for RecoveryOptions {
    fn default() -> RecoveryOptions {
        RecoveryOptions {
            prefetch: true,
            maintenance_io_concurrency: 16,
            decode_buffer_bytes: 512 * 1024,
            progress_interval: Some(std::time::Duration::from_secs(10)),
        }
    }
}

/// What redo did.
#[derive(Clone, Debug, Default)]
pub struct RedoSummary {
    pub start: Lsn,
    /// The last record replayed.
    pub last: Lsn,
    pub records: u64,
    pub pages_changed: u64,
    pub elapsed_s: f64,
}

/// How the WAL was found at start-up.
#[derive(Clone, Debug)]
pub enum Startup {
    /// No control file: a new data directory (or one from before the WAL).
    NewCluster,
    /// Shut down cleanly: nothing to replay.
    Clean,
    /// A crash: the WAL was replayed.
    Recovered(RedoSummary),
}

/// Opens the WAL for this run: finds its end, and replays it if the server crashed.
pub fn startup(db: &Database, options: &RecoveryOptions) -> PgResult<Startup> {
    let control_file = ControlFile::new(db.data_dir());
    let io = |what: &str, e: std::io::Error| PgError::io(what, &e);
    let control = control_file
        .read()
        .map_err(|e| io("could not read control file", e))?;
    let Some(control) = control else {
        // A new data directory (or one from before the WAL, shut down cleanly).
        let wal = &db.wal;
        wal.start_at(wal.first_lsn(), 0)
            .map_err(|e| io("could not start the WAL", e))?;
        return Ok(Startup::NewCluster);
    };
    db.wal.set_redo_lsn(control.redo);
    let mut reader = db.wal.reader();
    let checkpoint = reader
        .read(control.checkpoint, None)
        .map_err(|e| io("could not read the WAL", e))?;
    let Some(checkpoint) = checkpoint.filter(|r| matches!(r.body, Body::Checkpoint(_))) else {
        return Err(PgError::fatal(
            iolab_catalog::sqlstate::DATA_CORRUPTED,
            format!(
                "could not locate a valid checkpoint record at {}",
                format_lsn(control.checkpoint)
            ),
        ));
    };
    if control.state == ClusterState::ShutDown {
        let after = reader
            .read(checkpoint.next, Some(checkpoint.lsn))
            .map_err(|e| io("could not read the WAL", e))?;
        if after.is_none() {
            db.wal
                .start_at(checkpoint.next, checkpoint.lsn)
                .map_err(|e| io("could not start the WAL", e))?;
            // From now on a stop that is not clean is a crash (and empties unlogged tables).
            let running = ControlData {
                state: ClusterState::InProduction,
                ..control
            };
            control_file
                .write(&running)
                .map_err(|e| io("could not write control file", e))?;
            return Ok(Startup::Clean);
        }
        tracing::warn!("records follow the shutdown checkpoint: replaying them");
    }
    tracing::info!(
        "database system was interrupted; last known up at {}",
        format_time(control.checkpoint_time_us)
    );
    tracing::info!("database system was not properly shut down; automatic recovery in progress");
    control_file
        .write(&ControlData {
            state: ClusterState::InCrashRecovery,
            ..control.clone()
        })
        .map_err(|e| io("could not write control file", e))?;
    Ok(Startup::Recovered(redo(db, control.redo, options)?))
}

fn format_time(us: u64) -> String {
    chrono::DateTime::from_timestamp_micros(us as i64)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_default()
}

/// Replays every record from `start` to the end of the WAL, then opens the WAL after the
/// last one.
fn redo(db: &Database, start: Lsn, options: &RecoveryOptions) -> PgResult<RedoSummary> {
    let started = Instant::now();
    let cpu_before = cpu_times();
    tracing::info!("redo starts at {}", format_lsn(start));
    let reads = db.aio.method() != IoMethod::Sync;
    let prefetching =
        options.prefetch && options.maintenance_io_concurrency > 0 && (reads || !db.direct_io());
    // Reads in flight hold a pin and an AIO handle each: within both bounds.
    let mut max_inflight = options.maintenance_io_concurrency as usize;
    if reads {
        max_inflight = max_inflight
            .min(db.aio.max_concurrency())
            .min(db.pool.pin_limit())
            .max(1);
    }
    let mut ahead = Decoder {
        reader: db.wal.reader(),
        next: start,
        prev: None,
        end_reached: false,
        queue: VecDeque::new(),
        queued_bytes: 0,
        queued_blocks: 0,
    };
    let mut prefetcher = Prefetcher {
        db,
        enabled: prefetching,
        reads,
        advise: !db.direct_io(),
        issuer: Issuer::new(0),
        max_inflight,
        max_distance: 4 * options.maintenance_io_concurrency as usize,
        decode_buffer_bytes: options.decode_buffer_bytes as u64,
        inflight: VecDeque::new(),
        recent: VecDeque::new(),
        rebuilt_ahead: HashMap::new(),
        files: HashMap::new(),
    };
    let mut acct = IoAccount::new(
        true,
        Some(StatsSink {
            hub: Arc::clone(&db.io_stats),
            backend_type: BackendType::Startup,
            pid: 0,
        }),
    );
    let mut summary = RedoSummary {
        start,
        ..RedoSummary::default()
    };
    let mut last_gauges = start;
    let mut next_progress = options.progress_interval.map(|i| started + i);
    loop {
        prefetcher.decode_ahead(&mut ahead, &mut acct)?;
        let Some(record) = ahead.pop() else { break };
        prefetcher.before_replay(&record, &mut acct);
        apply(db, &record, &mut prefetcher.files, &mut acct, &mut summary)?;
        summary.last = record.lsn;
        summary.records += 1;
        if record.next - last_gauges >= 8192 {
            prefetcher.publish_gauges(&ahead, record.next);
            last_gauges = record.next;
            if let Some(at) = next_progress.filter(|at| Instant::now() >= *at) {
                tracing::info!(
                    "redo in progress, elapsed time: {:.2} s, current LSN: {}",
                    started.elapsed().as_secs_f64(),
                    format_lsn(record.lsn)
                );
                next_progress = options.progress_interval.map(|i| at + i);
            }
        }
        acct.maybe_flush();
    }
    prefetcher.finish(&mut acct);
    acct.flush();
    prefetcher.publish_gauges(&ahead, summary.last);
    let (end, prev) = match ahead.prev {
        Some(prev) => (ahead.next, prev),
        None => (start, 0),
    };
    db.wal
        .start_at(end, prev)
        .map_err(|e| PgError::io("could not start the WAL", &e))?;
    summary.elapsed_s = started.elapsed().as_secs_f64();
    let (user, system) = cpu_times();
    tracing::info!(
        "redo done at {} system usage: CPU: user: {:.2} s, system: {:.2} s, elapsed: {:.2} s",
        format_lsn(summary.last),
        user - cpu_before.0,
        system - cpu_before.1,
        summary.elapsed_s
    );
    let p = db.io_stats.recovery_prefetch.snapshot();
    tracing::info!(
        "redo replayed {} records changing {} pages; read-ahead: prefetch={} hit={} skip_init={} skip_new={} skip_fpw={} skip_rep={}",
        summary.records,
        summary.pages_changed,
        p.prefetch,
        p.hit,
        p.skip_init,
        p.skip_new,
        p.skip_fpw,
        p.skip_rep
    );
    Ok(summary)
}

/// Records decoded ahead of replay.
struct Decoder {
    reader: super::log::WalReader,
    /// Where the next record to decode starts, and the LSN of the last decoded.
    next: Lsn,
    prev: Option<Lsn>,
    end_reached: bool,
    queue: VecDeque<Record>,
    queued_bytes: u64,
    queued_blocks: usize,
}

impl Decoder {
    fn decode_one(&mut self) -> PgResult<Option<&Record>> {
        if self.end_reached {
            return Ok(None);
        }
        let record = self
            .reader
            .read(self.next, self.prev)
            .map_err(|e| PgError::io("could not read the WAL", &e))?;
        let Some(record) = record else {
            self.end_reached = true;
            return Ok(None);
        };
        self.prev = Some(record.lsn);
        self.queued_bytes += record.next - self.next;
        self.next = record.next;
        self.queued_blocks += blocks_of(&record).len();
        self.queue.push_back(record);
        Ok(self.queue.back())
    }

    fn pop(&mut self) -> Option<Record> {
        let record = self.queue.pop_front()?;
        let next = self.queue.front().map_or(self.next, |r| r.lsn);
        self.queued_bytes -= next - record.lsn;
        self.queued_blocks -= blocks_of(&record).len();
        Some(record)
    }
}

fn blocks_of(record: &Record) -> &[BlockEntry] {
    match &record.body {
        Body::Pages(blocks) => blocks,
        _ => &[],
    }
}

/// `posix_fadvise(WILLNEED)` of block `blkno` of `rel`: the kernel starts reading it into its
/// page cache.
fn advise(rel: &RelFile, blkno: u32) {
    if let Ok((fd, offset)) = rel.raw_fd_and_offset(blkno) {
        // SAFETY: a plain syscall on an open descriptor; advice touches no memory.
        unsafe {
            libc::posix_fadvise(
                fd,
                offset as libc::off_t,
                crate::storage::page::BLCKSZ as libc::off_t,
                libc::POSIX_FADV_WILLNEED,
            );
        }
    }
}

/// How many of the last blocks advised are remembered (PostgreSQL's `skip_rep` window).
const RECENT_BLOCKS: usize = 4;

/// A read ahead of replay: for the record at `lsn`, of `block`; with `io`, a read into the
/// buffer pool in flight (AIO), without, advice given.
struct Ahead {
    lsn: Lsn,
    block: (u32, u32),
    io: Option<InFlightIo>,
}

struct Prefetcher<'a> {
    db: &'a Database,
    enabled: bool,
    /// Read ahead into the buffer pool through the I/O method (worker, io_uring) rather
    /// than only advise the kernel (sync).
    reads: bool,
    /// Advise the kernel of each block read ahead (buffered I/O): under `sync` that is the
    /// read-ahead; before a read into the pool it starts the kernel's read at once, however
    /// few I/O workers there are to wait for it.
    advise: bool,
    issuer: Issuer,
    max_inflight: usize,
    max_distance: usize,
    decode_buffer_bytes: u64,
    /// Reads ahead in record order; each is in flight until replay reaches its record.
    inflight: VecDeque<Ahead>,
    recent: VecDeque<(u32, u32)>,
    /// Blocks a decoded record not yet replayed rebuilds whole (a new page or a full
    /// image), with that record's LSN and whether the page is new: a later reference needs
    /// no read.
    rebuilt_ahead: HashMap<(u32, u32), (Lsn, bool)>,
    /// Relation files by relfilenode; `None` for a file that does not exist.
    files: HashMap<u32, Option<Arc<RelFile>>>,
}

impl Prefetcher<'_> {
    /// Decodes one record at least (when the queue is empty), and more while the bounds
    /// of the module comment allow, reading ahead their blocks.
    fn decode_ahead(&mut self, ahead: &mut Decoder, acct: &mut IoAccount) -> PgResult<()> {
        loop {
            let room = ahead.queue.is_empty()
                || (self.enabled
                    && ahead.queued_bytes < self.decode_buffer_bytes
                    && self.inflight.len() < self.max_inflight
                    && ahead.queued_blocks < self.max_distance);
            if !room {
                break;
            }
            let Some(record) = ahead.decode_one()? else {
                break;
            };
            if !self.enabled {
                continue;
            }
            let (lsn, blocks) = (record.lsn, blocks_of(record).to_vec());
            for block in &blocks {
                self.consider(lsn, block, acct);
            }
        }
        if self.reads {
            self.db
                .aio
                .submit_staged(&mut self.issuer, acct, Buffers::SHARED);
        }
        Ok(())
    }

    fn consider(&mut self, lsn: Lsn, block: &BlockEntry, acct: &mut IoAccount) {
        let counters = &self.db.io_stats.recovery_prefetch;
        let bump = |c: &std::sync::atomic::AtomicU64| c.fetch_add(1, Ordering::Relaxed);
        let key = (block.relfilenode, block.blkno);
        if block.is_full() {
            self.rebuilt_ahead.insert(key, (lsn, block.is_init()));
        }
        let rebuilt = self.rebuilt_ahead.get(&key).map(|&(_, new)| new);
        let skipped = match (block.is_init(), block.is_full(), rebuilt) {
            (true, _, _) => Some(&counters.skip_init),
            (_, true, _) | (_, _, Some(false)) => Some(&counters.skip_fpw),
            (_, _, Some(true)) => Some(&counters.skip_new),
            _ => None,
        };
        if let Some(counter) = skipped {
            bump(counter);
            return;
        }
        let Some(rel) = relation(self.db, &mut self.files, block.relfilenode) else {
            bump(&counters.skip_new);
            return;
        };
        if block.blkno >= rel.nblocks() {
            bump(&counters.skip_new);
            return;
        }
        if self.recent.contains(&key) || self.inflight.iter().any(|a| a.block == key) {
            bump(&counters.skip_rep);
            return;
        }
        let io = if self.reads {
            match self
                .db
                .pool
                .start_read(&rel, block.blkno, 1, None, acct, false)
            {
                Ok(StartedRead::Miss(read)) => {
                    if self.advise {
                        advise(&rel, block.blkno);
                    }
                    Some(
                        self.db
                            .aio
                            .start_read(&mut self.issuer, read, false, false, acct),
                    )
                }
                Ok(StartedRead::Hit(_)) | Ok(StartedRead::BeingRead(_)) => {
                    bump(&counters.hit);
                    return;
                }
                // No buffer for it now: replay will read it.
                Err(_) => return,
            }
        } else {
            if self.db.pool.is_buffered(key.0, key.1) {
                bump(&counters.hit);
                return;
            }
            advise(&rel, block.blkno);
            None
        };
        bump(&counters.prefetch);
        self.inflight.push_back(Ahead {
            lsn,
            block: key,
            io,
        });
        if self.recent.len() == RECENT_BLOCKS {
            self.recent.pop_front();
        }
        self.recent.push_back(key);
    }

    /// Before `record` is replayed: the reads ahead for it and for records before it, and
    /// any read ahead of a block it changes, are done (a read into the pool is waited for,
    /// so replay finds the block valid).
    fn before_replay(&mut self, record: &Record, acct: &mut IoAccount) {
        let blocks = blocks_of(record);
        for b in blocks.iter().filter(|b| b.is_full()) {
            let key = (b.relfilenode, b.blkno);
            if self
                .rebuilt_ahead
                .get(&key)
                .is_some_and(|&(l, _)| l == record.lsn)
            {
                self.rebuilt_ahead.remove(&key);
            }
        }
        let last_needed = self.inflight.iter().rposition(|a| {
            a.lsn <= record.lsn || blocks.iter().any(|b| a.block == (b.relfilenode, b.blkno))
        });
        if let Some(last) = last_needed {
            for _ in 0..=last {
                let done = self.inflight.pop_front().expect("counted");
                self.complete(done, acct);
            }
        }
    }

    fn complete(&mut self, ahead: Ahead, acct: &mut IoAccount) {
        if let Some(io) = ahead.io {
            // The buffers stay in the pool; an error is left for replay's own read to meet.
            if let Err(e) = self
                .db
                .aio
                .wait(&mut self.issuer, io, acct, Buffers::SHARED)
            {
                tracing::debug!(
                    "read ahead of block {:?} failed: {}",
                    ahead.block,
                    e.message
                );
            }
        }
    }

    /// Redo is over: no read ahead stays in flight.
    fn finish(&mut self, acct: &mut IoAccount) {
        while let Some(ahead) = self.inflight.pop_front() {
            self.complete(ahead, acct);
        }
    }

    fn publish_gauges(&self, ahead: &Decoder, replayed_to: Lsn) {
        let c = &self.db.io_stats.recovery_prefetch;
        let wal_distance = ahead.next.saturating_sub(replayed_to);
        c.wal_distance.store(wal_distance, Ordering::Relaxed);
        c.block_distance
            .store(ahead.queued_blocks as u64, Ordering::Relaxed);
        c.io_depth
            .store(self.inflight.len() as u64, Ordering::Relaxed);
    }
}

/// The file of `relfilenode` if it exists (a relation dropped later in the WAL's history
/// has none, and its records are skipped).
fn relation(
    db: &Database,
    files: &mut HashMap<u32, Option<Arc<RelFile>>>,
    relfilenode: u32,
) -> Option<Arc<RelFile>> {
    files
        .entry(relfilenode)
        .or_insert_with(|| {
            let path = crate::storage::relfile::segment_path(db.data_dir(), relfilenode, 0);
            if path.exists() {
                db.relfile(relfilenode).ok()
            } else {
                None
            }
        })
        .clone()
}

/// Replays one record.
fn apply(
    db: &Database,
    record: &Record,
    files: &mut HashMap<u32, Option<Arc<RelFile>>>,
    acct: &mut IoAccount,
    summary: &mut RedoSummary,
) -> PgResult<()> {
    match &record.body {
        Body::Pages(blocks) => {
            for block in blocks {
                let Some(rel) = relation(db, files, block.relfilenode) else {
                    continue;
                };
                if apply_block(db, &rel, block, record.next, acct)? {
                    summary.pages_changed += 1;
                }
            }
        }
        Body::Commit { subxids, .. } => {
            end_transaction(db, record.xid, subxids, XidStatus::Committed)?
        }
        Body::Abort { subxids, .. } => {
            end_transaction(db, record.xid, subxids, XidStatus::Aborted)?
        }
        Body::Checkpoint(_) => {}
    }
    Ok(())
}

/// Gives transaction `xid` and its subtransactions `subxids` their final `status`.
fn end_transaction(db: &Database, xid: u32, subxids: &[u32], status: XidStatus) -> PgResult<()> {
    let clog = db.txns.clog();
    for &x in std::iter::once(&xid).chain(subxids) {
        if clog.status(x) != status {
            (clog.set_status(x, status))
                .map_err(|e| PgError::io("could not write commit log", &e))?;
        }
    }
    Ok(())
}

/// Applies one page change whose record ends at `end`; false if the page had it already.
fn apply_block(
    db: &Database,
    rel: &Arc<RelFile>,
    block: &BlockEntry,
    end: Lsn,
    acct: &mut IoAccount,
) -> PgResult<bool> {
    if block.blkno >= rel.nblocks() {
        // The file was extended after the checkpoint and the crash lost the extension:
        // make the blocks again (zeros; each is rebuilt by a full record).
        rel.extend_to(block.blkno + 1).map_err(|e| {
            PgError::io(
                &format!("could not extend file \"{}\"", rel.path().display()),
                &e,
            )
        })?;
    }
    let buffer = if block.is_full() {
        // No need for the old page; a torn one would not even verify.
        db.pool.read_buffer_for_overwrite(rel, block.blkno, acct)?
    } else {
        db.pool.read_buffer(rel, block.blkno, None, acct)?
    };
    let mut page = buffer.page_mut();
    if page_lsn(&page) >= end {
        return Ok(false);
    }
    block.apply(&mut page);
    page_set_lsn(&mut page, end);
    drop(page);
    buffer.mark_dirty(acct);
    Ok(true)
}

/// User and system CPU seconds of this process so far.
fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(usage.ru_utime), secs(usage.ru_stime))
}
