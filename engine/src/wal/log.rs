//! The WAL itself: inserting records into a bounded in-memory buffer, writing them to the
//! segment files in `pg_wal/`, flushing (group commit), and reading them back.
//!
//! Positions: the WAL is one stream of bytes; an LSN is an offset in it. Segment `n`
//! (a file of `wal_segment_size` bytes, 16 MB, named as PostgreSQL names it on timeline 1)
//! holds LSNs `n × size .. (n + 1) × size`; a record may cross from one segment into the
//! next. The first segment of a new data directory is number 1, so LSN 0 means "none".
//!
//! Three positions only grow: `insert` (the end of the last record inserted), `written`
//! (handed to the kernel) and `flushed` (made durable with `fdatasync`), with
//! `flushed ≤ written ≤ insert`. Inserting copies the record into the buffer under the
//! insert lock; a record that does not fit first writes the buffer out (counted as
//! `wal_buffers_full`, as PostgreSQL counts it). Flushing to an LSN takes the write lock,
//! and whoever holds it writes out *everything* inserted so far and syncs it: sessions
//! committing at the same time wait on that lock and find their commit record already
//! flushed (group commit). Lock order: write lock, then insert lock.
//!
//! A segment is made full length when first written, as PostgreSQL's are: written with
//! zeros (`wal_init_zero`; else extended sparse) under a temporary name, synced and
//! renamed, counted in `pg_stat_io`'s `wal`/`init` row as one write of the segment's size
//! and one sync. Once a checkpoint's redo point has passed a segment it is recycled —
//! renamed to a future segment's name, so that the next segment needs no initialisation
//! (`wal_recycle`) — while `pg_wal/` holds no more than `min_wal_size` (at most
//! `max_wal_size`), and deleted otherwise. A reader that meets zeros or an invalid record
//! has reached the end of the WAL; in a recycled segment the old records name
//! predecessors of another segment, so they end it too.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use std::sync::Arc;

use iolab_stats::wal::WalCounters;
use iolab_stats::IoContext::{Init, Normal};
use iolab_stats::IoObject::Wal as WAL;
use iolab_stats::{BackendType, BufferUsage, IoOp, IoStatsHub, PendingIoStats};
use parking_lot::Mutex;

use super::record::{self, align, Body, Lsn, Record, HEADER_SIZE};

/// Bounds and switches of the WAL (`wal_segment_size`, `wal_buffers`, `full_page_writes`,
/// `fsync`), as the server starts with them; `fsync`, `full_page_writes` and
/// `recycle_up_to` change at a configuration reload ([`Wal::reload`]).
#[derive(Clone, Copy, Debug)]
pub struct WalOptions {
    pub segment_size: u64,
    /// The insert buffer's size in bytes; at least [`record::MAX_RECORD_SIZE`].
    pub buffer_bytes: usize,
    pub full_page_writes: bool,
    pub fsync: bool,
    /// Time WAL writes and syncs in `pg_stat_io` (`track_wal_io_timing`).
    pub track_io_timing: bool,
    /// Write new segments full of zeros (`wal_init_zero`).
    pub init_zero: bool,
    /// Rename segments no longer needed for reuse (`wal_recycle`).
    pub recycle: bool,
    /// Recycle while `pg_wal/` holds at most this many bytes of segments (`min_wal_size`,
    /// capped at `max_wal_size`).
    pub recycle_up_to: u64,
}

/// Who a WAL write or sync is done for, as `pg_stat_io` counts it: the backend type and
/// process id of the caller (`None`: not counted there, only in `pg_stat_wal`).
pub type WalIoBy = Option<(BackendType, i32)>;

impl Default for WalOptions {
    fn default() -> WalOptions {
        WalOptions {
            segment_size: 16 * 1024 * 1024,
            buffer_bytes: 4 * 1024 * 1024,
            full_page_writes: true,
            fsync: true,
            track_io_timing: false,
            init_zero: true,
            recycle: true,
            recycle_up_to: 80 * 1024 * 1024,
        }
    }
}

struct InsertState {
    /// Records not yet written, starting at `buf_start`.
    buf: Vec<u8>,
    buf_start: Lsn,
    /// LSN of the last record inserted.
    prev: Lsn,
}

impl InsertState {
    fn end(&self) -> Lsn {
        self.buf_start + self.buf.len() as u64
    }
}

struct WriteState {
    /// Segments written since the last sync (the newest last), kept open.
    unsynced: Vec<(u64, File)>,
}

pub struct Wal {
    dir: PathBuf,
    options: WalOptions,
    /// `options.fsync`, `full_page_writes`, `recycle_up_to` as a reload leaves them.
    fsync: AtomicBool,
    full_page_writes: AtomicBool,
    recycle_up_to: AtomicU64,
    insert: Mutex<InsertState>,
    write: Mutex<WriteState>,
    written: AtomicU64,
    flushed: AtomicU64,
    /// The redo point of the checkpoint in progress or last done: a page whose LSN is not
    /// above it is logged whole on its next change (`full_page_writes`).
    redo: AtomicU64,
    /// Until [`start_at`](Self::start_at): recovery, when nothing may be inserted and
    /// every flush is already done.
    started: AtomicBool,
    /// The server's statistics: `pg_stat_wal`'s counters, and `pg_stat_io` for WAL I/O.
    stats: Arc<IoStatsHub>,
    /// Segments made since the last checkpoint (its log line's "added").
    segments_added: AtomicU64,
}

/// What a checkpoint did with the segments before its redo point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SegmentsRetired {
    pub removed: usize,
    pub recycled: usize,
}

/// Zeros written at a time when a segment is made or cut off (the bound of that buffer).
const ZERO_CHUNK: usize = 1024 * 1024;

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("dir", &self.dir)
            .field("insert", &self.insert_lsn())
            .field("flushed", &self.flush_lsn())
            .finish()
    }
}

impl Wal {
    /// The WAL in `dir` (created if missing), not yet open for inserts.
    pub fn open(dir: &Path, options: WalOptions, stats: Arc<IoStatsHub>) -> io::Result<Wal> {
        assert!(options.buffer_bytes >= record::MAX_RECORD_SIZE);
        assert!(options.segment_size.is_power_of_two() && options.segment_size >= 1 << 20);
        std::fs::create_dir_all(dir)?;
        Ok(Wal {
            dir: dir.to_path_buf(),
            options,
            fsync: AtomicBool::new(options.fsync),
            full_page_writes: AtomicBool::new(options.full_page_writes),
            recycle_up_to: AtomicU64::new(options.recycle_up_to),
            insert: Mutex::new(InsertState {
                buf: Vec::with_capacity(options.buffer_bytes),
                buf_start: 0,
                prev: 0,
            }),
            write: Mutex::new(WriteState {
                unsynced: Vec::new(),
            }),
            written: AtomicU64::new(0),
            flushed: AtomicU64::new(0),
            redo: AtomicU64::new(0),
            started: AtomicBool::new(false),
            stats,
            segments_added: AtomicU64::new(0),
        })
    }

    fn counters(&self) -> &WalCounters {
        &self.stats.wal
    }

    pub fn segment_size(&self) -> u64 {
        self.options.segment_size
    }

    /// The first LSN of a new data directory's WAL.
    pub fn first_lsn(&self) -> Lsn {
        self.options.segment_size
    }

    /// Opens for inserts after recovery: the next record goes at `end`, after the record at
    /// `prev`. Zeroes the rest of `end`'s segment, so that no torn record from before the
    /// crash can follow the new ones.
    pub fn start_at(&self, end: Lsn, prev: Lsn) -> io::Result<()> {
        assert_eq!(end, align(end));
        let seg = self.options.segment_size;
        let offset = end % seg;
        if offset != 0 {
            let file = self.segment_file(end / seg, &mut PendingIoStats::new())?;
            write_zeros(&file, offset..seg)?;
            file.sync_data()?;
        }
        {
            let mut insert = self.insert.lock();
            insert.buf.clear();
            insert.buf_start = end;
            insert.prev = prev;
        }
        self.written.store(end, Ordering::Release);
        self.flushed.store(end, Ordering::Release);
        self.started.store(true, Ordering::Release);
        Ok(())
    }

    /// The end of the last record inserted (`pg_current_wal_insert_lsn`).
    pub fn insert_lsn(&self) -> Lsn {
        self.insert.lock().end()
    }

    /// How far the WAL is durable (`pg_current_wal_flush_lsn`).
    pub fn flush_lsn(&self) -> Lsn {
        self.flushed.load(Ordering::Acquire)
    }

    /// How far the WAL was handed to the kernel (`pg_current_wal_lsn`).
    pub fn write_lsn(&self) -> Lsn {
        self.written.load(Ordering::Acquire)
    }

    pub fn redo_lsn(&self) -> Lsn {
        self.redo.load(Ordering::Acquire)
    }

    pub fn set_redo_lsn(&self, lsn: Lsn) {
        self.redo.store(lsn, Ordering::Release);
    }

    /// Whether syncs happen at all (`fsync`); a checkpoint asks too.
    pub fn fsync_enabled(&self) -> bool {
        self.fsync.load(Ordering::Relaxed)
    }

    /// Whether a page last changed at `page_lsn` must be logged whole on this change.
    pub fn needs_full_image(&self, page_lsn: Lsn) -> bool {
        self.full_page_writes.load(Ordering::Relaxed) && page_lsn <= self.redo_lsn()
    }

    /// The `sighup` settings a configuration reload changes, from the next sync, page
    /// change or checkpoint on: `fsync`, `full_page_writes`, and the bytes of old segments
    /// kept for reuse (`min_wal_size`, capped at `max_wal_size`).
    pub fn reload(&self, fsync: bool, full_page_writes: bool, recycle_up_to: u64) {
        self.fsync.store(fsync, Ordering::Relaxed);
        self.full_page_writes
            .store(full_page_writes, Ordering::Relaxed);
        self.recycle_up_to.store(recycle_up_to, Ordering::Relaxed);
    }

    /// Appends a record; returns where it starts and where the next one will. Adds the
    /// record (its bytes, full page images, a full buffer met) to `usage`.
    pub fn insert(
        &self,
        xid: u32,
        body: &Body,
        usage: &mut BufferUsage,
        by: WalIoBy,
    ) -> (Lsn, Lsn) {
        assert!(
            self.started.load(Ordering::Acquire),
            "WAL insert before recovery ended"
        );
        let encoded_body = body.encode();
        let fpi = match body {
            Body::Pages(blocks) => blocks.iter().filter(|b| b.is_image()).count(),
            _ => 0,
        } as u64;
        let len = (HEADER_SIZE + encoded_body.len()) as u64;
        let padded = align(len) as usize;
        loop {
            {
                let mut insert = self.insert.lock();
                if insert.buf.len() + padded <= self.options.buffer_bytes {
                    let lsn = insert.end();
                    let bytes = record::encode(xid, insert.prev, body.kind(), &encoded_body);
                    let padded_end = insert.buf.len() + padded;
                    insert.buf.extend_from_slice(&bytes);
                    insert.buf.resize(padded_end, 0);
                    insert.prev = lsn;
                    let next = insert.end();
                    drop(insert);
                    let c = self.counters();
                    c.records.fetch_add(1, Ordering::Relaxed);
                    c.fpi.fetch_add(fpi, Ordering::Relaxed);
                    c.bytes.fetch_add(len, Ordering::Relaxed);
                    usage.wal_records += 1;
                    usage.wal_fpi += fpi;
                    usage.wal_bytes += len;
                    return (lsn, next);
                }
            }
            // The buffer is full: write it out and try again.
            usage.wal_buffers_full += 1;
            self.counters().buffers_full.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = self.write_out(false, by) {
                // As PostgreSQL: a WAL that cannot be written stops the server (the next
                // start recovers from what was written).
                tracing::error!(
                    "PANIC:  could not write to WAL in \"{}\": {e}",
                    self.dir.display()
                );
                std::process::abort();
            }
        }
    }

    /// Makes the WAL durable up to `upto` (a record's end): returns at once when it is.
    pub fn flush(&self, upto: Lsn, by: WalIoBy) -> io::Result<()> {
        if !self.started.load(Ordering::Acquire) || self.flush_lsn() >= upto {
            return Ok(());
        }
        self.write_out_locked(&mut self.write.lock(), true, upto, by)
    }

    /// Writes out (and with `sync`, syncs) everything inserted so far.
    fn write_out(&self, sync: bool, by: WalIoBy) -> io::Result<()> {
        self.write_out_locked(&mut self.write.lock(), sync, 0, by)
    }

    fn write_out_locked(
        &self,
        state: &mut WriteState,
        sync: bool,
        upto: Lsn,
        by: WalIoBy,
    ) -> io::Result<()> {
        if sync && self.flush_lsn() >= upto && upto != 0 {
            return Ok(()); // someone flushed it while we waited for the lock
        }
        let (start, bytes) = {
            let mut insert = self.insert.lock();
            let start = insert.buf_start;
            let bytes = std::mem::replace(
                &mut insert.buf,
                Vec::with_capacity(self.options.buffer_bytes),
            );
            insert.buf_start = start + bytes.len() as u64;
            (start, bytes)
        };
        let mut io = PendingIoStats::new();
        let timed = |ns: u64| self.timed(ns);
        if !bytes.is_empty() {
            let started = std::time::Instant::now();
            let writes = self.write_bytes(state, start, &bytes, &mut io)?;
            let ns = started.elapsed().as_nanos() as u64;
            io.count_ops(
                WAL,
                Normal,
                IoOp::Write,
                writes,
                bytes.len() as u64,
                timed(ns),
            );
            self.written
                .store(start + bytes.len() as u64, Ordering::Release);
        }
        if sync {
            let upto = self.write_lsn();
            if self.fsync_enabled() {
                let started = std::time::Instant::now();
                for (_, file) in &state.unsynced {
                    file.sync_data()?;
                }
                let (syncs, ns) = (
                    state.unsynced.len() as u64,
                    started.elapsed().as_nanos() as u64,
                );
                io.count_ops(WAL, Normal, IoOp::Fsync, syncs, 0, timed(ns));
            }
            let keep = state.unsynced.pop();
            state.unsynced.clear();
            state.unsynced.extend(keep);
            self.flushed.store(upto, Ordering::Release);
        }
        if let Some((backend_type, pid)) = by {
            self.stats.flush(&mut io, backend_type, pid);
        }
        Ok(())
    }

    /// `ns` if WAL I/O is timed (`track_wal_io_timing`), else 0.
    fn timed(&self, ns: u64) -> u64 {
        if self.options.track_io_timing {
            ns
        } else {
            0
        }
    }

    /// Writes `bytes` at `lsn`, a write per segment touched; returns how many writes.
    /// Segments made on the way are counted into `io`.
    fn write_bytes(
        &self,
        state: &mut WriteState,
        mut lsn: Lsn,
        mut bytes: &[u8],
        io: &mut PendingIoStats,
    ) -> io::Result<u64> {
        let seg = self.options.segment_size;
        let mut writes = 0;
        while !bytes.is_empty() {
            let segno = lsn / seg;
            let offset = lsn % seg;
            let n = bytes.len().min((seg - offset) as usize);
            if state.unsynced.last().map(|(s, _)| *s) != Some(segno) {
                state.unsynced.push((segno, self.segment_file(segno, io)?));
            }
            let file = &state.unsynced.last().expect("just pushed").1;
            file.write_all_at(&bytes[..n], offset)?;
            writes += 1;
            lsn += n as u64;
            bytes = &bytes[n..];
        }
        Ok(writes)
    }

    /// Segment `segno`: the file there (written before, or recycled), else a new one.
    fn segment_file(&self, segno: u64, io: &mut PendingIoStats) -> io::Result<File> {
        let path = self.segment_path(segno);
        match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(file) if file.metadata()?.len() >= self.options.segment_size => Ok(file),
            Ok(_) => self.make_segment(&path, io),
            Err(e) if e.kind() == io::ErrorKind::NotFound => self.make_segment(&path, io),
            Err(e) => Err(e),
        }
    }

    /// Makes the segment file `path` full length (see the module comment), counting its
    /// write and sync into `io` (`wal`/`init`).
    fn make_segment(&self, path: &Path, io: &mut PendingIoStats) -> io::Result<File> {
        let size = self.options.segment_size;
        let temp = self.dir.join("xlogtemp");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)?;
        let started = std::time::Instant::now();
        if self.options.init_zero {
            write_zeros(&file, 0..size)?;
        } else {
            file.set_len(size)?;
        }
        let ns = started.elapsed().as_nanos() as u64;
        io.count_ops(WAL, Init, IoOp::Write, 1, size, self.timed(ns));
        if self.fsync_enabled() {
            let started = std::time::Instant::now();
            file.sync_all()?;
            let ns = started.elapsed().as_nanos() as u64;
            io.count_ops(WAL, Init, IoOp::Fsync, 1, 0, self.timed(ns));
        }
        std::fs::rename(&temp, path)?;
        File::open(&self.dir)?.sync_all()?;
        self.segments_added.fetch_add(1, Ordering::Relaxed);
        Ok(file)
    }

    /// Segments made since the last call (a checkpoint's "added").
    pub fn take_segments_added(&self) -> u64 {
        self.segments_added.swap(0, Ordering::Relaxed)
    }

    /// The name of segment `segno` (see [`segment_file_name`]).
    pub fn segment_name(&self, segno: u64) -> String {
        segment_file_name(segno, self.options.segment_size)
    }

    fn segment_path(&self, segno: u64) -> PathBuf {
        self.dir.join(self.segment_name(segno))
    }

    /// Retires the segments that end at or before `lsn` (a checkpoint's redo point):
    /// recycled while `pg_wal/` holds at most `recycle_up_to` bytes of segments, deleted
    /// beyond (see the module comment). Takes the write lock, so no segment is made
    /// meanwhile.
    pub fn retire_segments_before(&self, lsn: Lsn) -> io::Result<SegmentsRetired> {
        let _writing = self.write.lock();
        let size = self.options.segment_size;
        let keep_from = lsn / size;
        let mut present = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let name = entry?.file_name();
            if let Some(segno) = name.to_str().and_then(|n| self.parse_segment_name(n)) {
                present.push(segno);
            }
        }
        present.sort_unstable();
        let keep = if self.options.recycle {
            (self.recycle_up_to.load(Ordering::Relaxed) / size) as usize
        } else {
            0
        };
        let mut newest = present
            .last()
            .copied()
            .unwrap_or(0)
            .max(self.write_lsn() / size);
        let mut files = present.len();
        let mut retired = SegmentsRetired::default();
        for &old in present.iter().take_while(|&&s| s < keep_from) {
            if files > keep {
                std::fs::remove_file(self.segment_path(old))?;
                files -= 1;
                retired.removed += 1;
            } else {
                newest += 1;
                std::fs::rename(self.segment_path(old), self.segment_path(newest))?;
                retired.recycled += 1;
            }
        }
        if retired != SegmentsRetired::default() {
            File::open(&self.dir)?.sync_all()?;
        }
        Ok(retired)
    }

    fn parse_segment_name(&self, name: &str) -> Option<u64> {
        if name.len() != 24 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let per_id = 0x1_0000_0000 / self.options.segment_size;
        let hi = u64::from_str_radix(&name[8..16], 16).ok()?;
        let lo = u64::from_str_radix(&name[16..24], 16).ok()?;
        Some(hi * per_id + lo)
    }

    /// A reader of this WAL's segments, for recovery.
    pub fn reader(&self) -> WalReader {
        WalReader {
            dir: self.dir.clone(),
            segment_size: self.options.segment_size,
            open: None,
            window: Vec::new(),
            window_start: 0,
        }
    }
}

/// `000000010000000000000001`: timeline 1, then the segment number in two halves (of
/// 4 GiB of WAL each), as PostgreSQL names segment files.
pub fn segment_file_name(segno: u64, segment_size: u64) -> String {
    let per_id = 0x1_0000_0000 / segment_size;
    format!("{:08X}{:08X}{:08X}", 1, segno / per_id, segno % per_id)
}

/// Writes zeros over `range` of `file`, [`ZERO_CHUNK`] bytes at a time.
fn write_zeros(file: &File, range: std::ops::Range<u64>) -> io::Result<()> {
    let zeros = vec![0u8; ZERO_CHUNK.min((range.end - range.start) as usize)];
    for offset in range.clone().step_by(ZERO_CHUNK) {
        let n = ZERO_CHUNK.min((range.end - offset) as usize);
        file.write_all_at(&zeros[..n], offset)?;
    }
    Ok(())
}

/// Reads records back from the segment files, [`READ_CHUNK`] bytes at a time.
pub struct WalReader {
    dir: PathBuf,
    segment_size: u64,
    open: Option<(u64, File)>,
    /// The bytes read last: the WAL from `window_start` on, within one segment.
    window: Vec<u8>,
    window_start: Lsn,
}

/// How much of a segment [`WalReader`] reads at once (its buffer's bound): records are
/// decoded from it rather than with two reads each.
const READ_CHUNK: usize = 128 * 1024;

impl WalReader {
    /// The record at `lsn` if there is a valid one whose predecessor is `prev` (any, for
    /// `None`: the first record read); `None` at the end of the WAL. I/O errors other than
    /// a missing segment are errors.
    pub fn read(&mut self, lsn: Lsn, prev: Option<Lsn>) -> io::Result<Option<Record>> {
        let mut header = [0u8; HEADER_SIZE];
        if !self.read_at(lsn, &mut header)? {
            return Ok(None);
        }
        let Some(len) = record::header_len(&header) else {
            return Ok(None);
        };
        let mut bytes = vec![0u8; len];
        bytes[..HEADER_SIZE].copy_from_slice(&header);
        if !self.read_at(lsn + HEADER_SIZE as u64, &mut bytes[HEADER_SIZE..])? {
            return Ok(None);
        }
        Ok(record::decode(lsn, &bytes, prev))
    }

    /// Fills `buf` from `lsn` on; false where a segment is missing or short.
    fn read_at(&mut self, mut lsn: Lsn, mut buf: &mut [u8]) -> io::Result<bool> {
        while !buf.is_empty() {
            let window_end = self.window_start + self.window.len() as u64;
            if !(self.window_start..window_end).contains(&lsn) && !self.fill(lsn)? {
                return Ok(false);
            }
            let at = (lsn - self.window_start) as usize;
            let n = buf.len().min(self.window.len() - at);
            buf[..n].copy_from_slice(&self.window[at..at + n]);
            lsn += n as u64;
            buf = &mut buf[n..];
        }
        Ok(true)
    }

    /// Reads up to [`READ_CHUNK`] bytes of the segment holding `lsn`, from `lsn` on, into
    /// the window; false where the segment is missing or ends at `lsn`.
    fn fill(&mut self, lsn: Lsn) -> io::Result<bool> {
        let segno = lsn / self.segment_size;
        let offset = lsn % self.segment_size;
        if self.open.as_ref().map(|(s, _)| *s) != Some(segno) {
            let path = self.dir.join(segment_file_name(segno, self.segment_size));
            match File::open(&path) {
                Ok(f) => self.open = Some((segno, f)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        let file = &self.open.as_ref().expect("opened").1;
        let want = READ_CHUNK.min((self.segment_size - offset) as usize);
        self.window.resize(want, 0);
        let mut got = 0;
        while got < want {
            match file.read_at(&mut self.window[got..], offset + got as u64)? {
                0 => break,
                n => got += n,
            }
        }
        self.window.truncate(got);
        self.window_start = lsn;
        Ok(got > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::relfile::tests::TempDir;

    fn options() -> WalOptions {
        WalOptions {
            segment_size: 1 << 20,
            buffer_bytes: 64 * 1024,
            recycle: false,
            ..WalOptions::default()
        }
    }

    /// Inserts `n` commit records numbered from `first`; their (lsn, next, body).
    fn insert_commits(wal: &Wal, first: u64, n: u64) -> Vec<(Lsn, Lsn, Body)> {
        (first..first + n)
            .map(|i| {
                let body = Body::Commit {
                    time_us: i,
                    subxids: vec![],
                };
                let (lsn, next) = wal.insert(i as u32, &body, &mut BufferUsage::default(), None);
                (lsn, next, body)
            })
            .collect()
    }

    fn segment_files(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().len() == 24)
            .count()
    }

    /// Segments a checkpoint no longer needs are renamed to the next ones' names (up to
    /// `recycle_up_to`), the records written into them read back, and their old records
    /// end the WAL rather than follow the new ones; beyond the bound they are deleted.
    #[test]
    fn retired_segments_are_recycled_then_deleted() {
        let dir = TempDir::new("wal-recycle");
        let options = WalOptions {
            recycle: true,
            recycle_up_to: 2 << 20,
            ..options()
        };
        let wal = Wal::open(&dir.0, options, Default::default()).unwrap();
        wal.start_at(wal.first_lsn(), 0).unwrap();
        // Segments 1..=3 written, 3 the current one.
        let first = insert_commits(&wal, 0, 80_000);
        let end = first.last().unwrap().1;
        wal.flush(end, None).unwrap();
        assert_eq!(end >> 20, 3);
        assert_eq!(wal.take_segments_added(), 3);
        assert_eq!(segment_files(&dir.0), 3);
        // A checkpoint at segment 3, room for two files: 1 goes, 2 becomes 4.
        let retired = wal.retire_segments_before(3 << 20).unwrap();
        assert_eq!(
            retired,
            SegmentsRetired {
                removed: 1,
                recycled: 1
            }
        );
        assert_eq!(segment_files(&dir.0), 2);
        assert!(dir.0.join(segment_file_name(4, 1 << 20)).exists());
        // Writing on into segment 4 makes nothing new, and reads back exactly.
        let second = insert_commits(&wal, 80_000, 30_000);
        let end = second.last().unwrap().1;
        wal.flush(end, None).unwrap();
        assert_eq!(end >> 20, 4);
        assert_eq!(wal.take_segments_added(), 0, "segment 4 was recycled");
        let mut reader = wal.reader();
        let mut prev = first.last().unwrap().0;
        for (lsn, next, body) in &second {
            let record = reader.read(*lsn, Some(prev)).unwrap().expect("record");
            assert_eq!((&record.body, record.next), (body, *next));
            prev = *lsn;
        }
        assert!(
            reader.read(end, Some(prev)).unwrap().is_none(),
            "the recycled segment's old records end the WAL"
        );
        // Without recycling room, retired segments go.
        let retired = wal.retire_segments_before(4 << 20).unwrap();
        assert_eq!(
            retired,
            SegmentsRetired {
                removed: 0,
                recycled: 1
            }
        );
        let wal_off = Wal::open(
            &dir.0,
            WalOptions {
                recycle: false,
                ..options
            },
            Default::default(),
        )
        .unwrap();
        let retired = wal_off.retire_segments_before(5 << 20).unwrap();
        assert_eq!(retired.recycled, 0);
        assert!(retired.removed >= 1);
    }

    /// Records written across segment boundaries and buffer refills read back in order,
    /// and the reader stops at the end.
    #[test]
    fn records_read_back_across_segments() {
        let dir = TempDir::new("wal-log");
        let wal = Wal::open(&dir.0, options(), Default::default()).unwrap();
        wal.start_at(wal.first_lsn(), 0).unwrap();
        let mut written = Vec::new();
        for i in 0..40_000u64 {
            let body = Body::Commit {
                time_us: i,
                subxids: vec![],
            };
            let (lsn, next) = wal.insert(i as u32, &body, &mut BufferUsage::default(), None);
            written.push((lsn, next, body));
        }
        let end = written.last().unwrap().1;
        wal.flush(end, None).unwrap();
        assert_eq!(wal.flush_lsn(), end);
        assert!(end > 2 * (1 << 20), "crosses segments: {end}");
        assert!(wal.counters().buffers_full.load(Ordering::Relaxed) > 0);
        let mut reader = wal.reader();
        let mut prev = 0;
        for (i, (lsn, next, body)) in written.iter().enumerate() {
            let record = reader.read(*lsn, Some(prev)).unwrap().expect("record");
            assert_eq!(
                (&record.body, record.next, record.xid),
                (body, *next, i as u32)
            );
            prev = *lsn;
        }
        assert!(
            reader.read(end, Some(prev)).unwrap().is_none(),
            "end of WAL"
        );
        // Removing the segments before the second drops exactly one file.
        assert_eq!(
            wal.retire_segments_before(2 << 20).unwrap(),
            SegmentsRetired {
                removed: 1,
                recycled: 0
            }
        );
        assert!(reader.read(written[0].0, None).unwrap().is_none());
    }

    /// After a restart at an earlier end, the rest of the segment is zero: the records
    /// beyond it are gone.
    #[test]
    fn starting_again_cuts_off_what_followed() {
        let dir = TempDir::new("wal-restart");
        let wal = Wal::open(&dir.0, options(), Default::default()).unwrap();
        wal.start_at(wal.first_lsn(), 0).unwrap();
        let usage = &mut BufferUsage::default();
        let (a, a_end) = wal.insert(
            1,
            &Body::Abort {
                time_us: 1,
                subxids: vec![],
            },
            usage,
            None,
        );
        let (_, b_end) = wal.insert(
            2,
            &Body::Abort {
                time_us: 2,
                subxids: vec![],
            },
            usage,
            None,
        );
        wal.flush(b_end, None).unwrap();
        drop(wal);
        let wal = Wal::open(&dir.0, options(), Default::default()).unwrap();
        wal.start_at(a_end, a).unwrap();
        let mut reader = wal.reader();
        assert!(reader.read(a, Some(0)).unwrap().is_some());
        assert!(reader.read(a_end, Some(a)).unwrap().is_none());
        assert_eq!(wal.segment_name(1), "000000010000000000000001");
    }
}
