//! Temporary files: where a session's sorts and hash aggregations put their rows once
//! they have used their `work_mem`.
//!
//! PostgreSQL names these files `base/pgsql_tmp/pgsql_tmp<pid>.<n>` and reads and writes
//! them in 8 kB blocks. It counts the blocks (EXPLAIN's `temp read=… written=…`,
//! `pg_stat_statements.temp_blks_*`) and, with `track_io_timing`, times the calls
//! (`I/O Timings: temp read=… write=…`, `temp_blk_*_time`), while the process shows wait
//! events `BufFileRead` / `BufFileWrite`. It stops a statement whose process would hold
//! more than `temp_file_limit` in temporary files at once (53400). When a file is removed
//! it counts it in `pg_stat_database` (`temp_files`, `temp_bytes`) and, if it is at least
//! `log_temp_files` kB, logs `temporary file: path "…", size …` with the statement
//! running.
//!
//! [`TempFiles`] does all of this for one session's DataFusion spills, as the runtime's
//! temporary file factory. DataFusion writes Arrow IPC into a file's writer and reads it
//! back as a stream of byte chunks:
//!
//! * the writer collects what it is given and writes whole blocks, [`IO_SIZE`] bytes at
//!   a time (what is left, at most a block, when the file is finished or flushed);
//! * the reader reads [`IO_SIZE`] bytes at a time, on tokio's blocking threads so that a
//!   read from the device does not hold up the session's other tasks, into memory it
//!   uses again once DataFusion has let go of the bytes;
//! * each call counts as its bytes in blocks, rounded up, and is timed around the system
//!   call alone.
//!
//! A file's I/O is charged to the session's statement running when it happens (a WITH
//! HOLD cursor's file is written at COMMIT and read by later FETCHes) and to the plan
//! operator running when the file was created (`operator_usage`, under EXPLAIN ANALYZE).

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use datafusion::common::{DataFusionError, Result as DfResult};
use datafusion::execution::spill_file::{SpillFile, SpillWriter, TempFileFactory};
use futures::Stream;
use iolab_stats::{BackendActivity, BufferUsage, IoStatsHub, WaitEvent};
use parking_lot::Mutex;

use crate::buffer::pool::preadv_fully;
use crate::exec::operator_usage::OperatorUsage;
use crate::exec::StatementContext;
use crate::storage::page::BLCKSZ;

/// The directory of temporary files under the data directory, as PostgreSQL names it.
pub const TEMP_FILES_DIR: &str = "base/pgsql_tmp";

/// Bytes per read or write call: 16 blocks.
pub const IO_SIZE: usize = 16 * BLCKSZ;

/// What the statement running now asks of temporary files.
#[derive(Clone)]
struct StatementLink {
    statement: Weak<StatementContext>,
    track_io_timing: bool,
    /// `temp_file_limit` in bytes (`u64::MAX`: none).
    limit_bytes: u64,
    /// `log_temp_files` in bytes (`None`: -1, log nothing).
    log_at_bytes: Option<u64>,
}

/// One session's temporary files. See the module comment.
pub struct TempFiles {
    /// `<data directory>/base/pgsql_tmp`.
    dir: PathBuf,
    pid: i32,
    /// Files created so far (the `<n>` of the next name).
    created: AtomicU64,
    /// What each file keeps of the session.
    session: Arc<Session>,
}

/// What a file keeps of its session: the bytes in use (for `temp_file_limit`), the
/// statistics it is counted in when removed, the process whose wait events it sets, the
/// statement running now.
struct Session {
    in_use: AtomicU64,
    stats: Arc<IoStatsHub>,
    activity: Option<Arc<BackendActivity>>,
    statement: Mutex<StatementLink>,
}

impl TempFiles {
    pub fn new(data_dir: &Path, pid: i32, stats: Arc<IoStatsHub>) -> TempFiles {
        TempFiles {
            dir: data_dir.join(TEMP_FILES_DIR),
            pid,
            created: AtomicU64::new(0),
            session: Arc::new(Session {
                in_use: AtomicU64::new(0),
                activity: stats.activity.get(pid),
                stats,
                statement: Mutex::new(StatementLink {
                    statement: Weak::new(),
                    track_io_timing: false,
                    limit_bytes: u64::MAX,
                    log_at_bytes: None,
                }),
            }),
        }
    }

    /// The statement about to run, with its `temp_file_limit` and `log_temp_files` (kB,
    /// -1 = none).
    pub fn begin_statement(
        &self,
        statement: &Arc<StatementContext>,
        temp_file_limit_kb: i32,
        log_temp_files_kb: i32,
    ) {
        let bytes = |kb: i32| u64::try_from(kb).ok().map(|kb| kb * 1024);
        *self.session.statement.lock() = StatementLink {
            statement: Arc::downgrade(statement),
            track_io_timing: statement.track_io_timing,
            limit_bytes: bytes(temp_file_limit_kb).unwrap_or(u64::MAX),
            log_at_bytes: bytes(log_temp_files_kb),
        };
    }

    /// Bytes in this session's temporary files now.
    pub fn in_use(&self) -> u64 {
        self.session.in_use.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for TempFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TempFiles({}, {} bytes in use)",
            self.dir.display(),
            self.in_use()
        )
    }
}

impl TempFiles {
    /// A new temporary file, charged to the operator running now (if any). DataFusion's
    /// spills get theirs through the factory; the engine's own users (CREATE INDEX's
    /// sorted runs) write and read theirs synchronously ([`TempFileHandle::writer`],
    /// [`TempFileHandle::reader`]).
    pub fn create(&self) -> io::Result<TempFileHandle> {
        let n = self.created.fetch_add(1, Ordering::Relaxed);
        let file_name = format!("pgsql_tmp{}.{n}", self.pid);
        let name = format!("{TEMP_FILES_DIR}/{file_name}");
        let path = self.dir.join(file_name);
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("could not create temporary file \"{name}\": {e}"),
                )
            })?;
        let operator = OperatorUsage::running();
        if let Some(op) = &operator {
            op.temp_file_created();
        }
        Ok(TempFileHandle(Arc::new(TempFile {
            path,
            name,
            file,
            size: AtomicU64::new(0),
            session: self.session.clone(),
            operator,
        })))
    }
}

impl TempFileFactory for TempFiles {
    fn create_temp_file(&self, _description: &str) -> DfResult<Arc<dyn SpillFile>> {
        let file = self.create().map_err(DataFusionError::IoError)?;
        Ok(Arc::new(file))
    }
}

/// One temporary file, removed when the last reference to it goes.
struct TempFile {
    path: PathBuf,
    /// Its path relative to the data directory, as messages show it.
    name: String,
    file: File,
    /// Bytes written so far: where the next write goes, and where reads stop.
    size: AtomicU64,
    session: Arc<Session>,
    operator: Option<Arc<OperatorUsage>>,
}

/// A read or a write, for the counters and the wait event.
#[derive(Clone, Copy)]
enum Direction {
    Read,
    Write,
}

impl TempFile {
    /// Appends `bytes` (one call), unless that would take the session beyond
    /// `temp_file_limit`.
    fn append(&self, bytes: &[u8]) -> io::Result<()> {
        let len = bytes.len() as u64;
        let limit = self.session.statement.lock().limit_bytes;
        let in_use = self.session.in_use.fetch_add(len, Ordering::Relaxed) + len;
        if in_use > limit {
            self.session.in_use.fetch_sub(len, Ordering::Relaxed);
            return Err(io::Error::other(format!(
                "temporary file size exceeds \"temp_file_limit\" ({}kB)",
                limit / 1024
            )));
        }
        let offset = self.size.load(Ordering::Relaxed);
        let written = self.timed(Direction::Write, len, || {
            self.file.write_all_at(bytes, offset)
        });
        if let Err(e) = written {
            self.session.in_use.fetch_sub(len, Ordering::Relaxed);
            return Err(e);
        }
        self.size.store(offset + len, Ordering::Relaxed);
        if let Some(op) = &self.operator {
            op.disk_grew(len);
        }
        Ok(())
    }

    /// Reads up to [`IO_SIZE`] bytes at `offset` (none at the end of the file) into
    /// `buf`'s spare room and returns them. `buf` is the reader's own: once the chunks it
    /// returned before are dropped, its memory is used again, as warm pages (a fresh
    /// 128 kB allocation each time cost a page fault per 4 kB on this machine kind).
    fn read_at(&self, offset: u64, buf: &mut BytesMut) -> io::Result<Bytes> {
        let size = self.size.load(Ordering::Relaxed);
        let want = (size.saturating_sub(offset)).min(IO_SIZE as u64) as usize;
        buf.clear();
        buf.reserve(want);
        if want > 0 {
            self.timed(Direction::Read, want as u64, || {
                let mut iov = [libc::iovec {
                    iov_base: buf.spare_capacity_mut().as_mut_ptr().cast(),
                    iov_len: want,
                }];
                match preadv_fully(self.file.as_raw_fd(), offset, &mut iov)? {
                    n if n == want => Ok(()),
                    _ => Err(io::ErrorKind::UnexpectedEof.into()),
                }
            })?;
            // SAFETY: the read filled the `want` bytes of spare capacity `reserve` made.
            unsafe { buf.set_len(want) };
        }
        Ok(buf.split().freeze())
    }

    /// Runs one call of `len` bytes, counts it in blocks and, with `track_io_timing`,
    /// times it; the session shows the wait event meanwhile.
    fn timed(
        &self,
        direction: Direction,
        len: u64,
        call: impl FnOnce() -> io::Result<()>,
    ) -> io::Result<()> {
        let event = match direction {
            Direction::Read => WaitEvent::BufFileRead,
            Direction::Write => WaitEvent::BufFileWrite,
        };
        let statement = self.session.statement.lock().clone();
        if let Some(a) = &self.session.activity {
            a.set_wait_event(event);
        }
        let started = statement.track_io_timing.then(Instant::now);
        let result = call();
        let ns = started.map_or(0, |s| s.elapsed().as_nanos() as u64);
        if let Some(a) = &self.session.activity {
            a.set_wait_event(WaitEvent::None);
        }
        result?;
        let blocks = len.div_ceil(BLCKSZ as u64);
        let mut usage = BufferUsage::default();
        match direction {
            Direction::Read => (usage.temp_read, usage.temp_read_ns) = (blocks, ns),
            Direction::Write => (usage.temp_written, usage.temp_write_ns) = (blocks, ns),
        }
        if let Some(statement) = statement.statement.upgrade() {
            statement.add_usage(&usage);
        }
        if let Some(op) = &self.operator {
            op.add_temp_io(&usage);
        }
        Ok(())
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let size = *self.size.get_mut();
        if let Err(e) = std::fs::remove_file(&self.path) {
            tracing::warn!("could not remove temporary file \"{}\": {e}", self.name);
        }
        self.session.in_use.fetch_sub(size, Ordering::Relaxed);
        if let Some(op) = &self.operator {
            op.disk_shrank(size);
        }
        self.session.stats.database.temp_file_removed(size);
        let log_at = self.session.statement.lock().log_at_bytes;
        if log_at.is_some_and(|at| size >= at) {
            // With the statement running now, as PostgreSQL's STATEMENT line has it.
            let statement = (self.session.activity.as_ref()).map(|a| a.status().query);
            tracing::info!(
                statement = statement.unwrap_or_default(),
                "temporary file: path \"{}\", size {size}",
                self.name
            );
        }
    }
}

/// A reference to a temporary file: what DataFusion holds of one, or the engine.
pub struct TempFileHandle(Arc<TempFile>);

impl TempFileHandle {
    /// A writer appending to the file; what it has not written yet goes at `flush`.
    pub fn writer(&self) -> impl io::Write + use<> {
        TempFileWriter {
            file: self.0.clone(),
            pending: Vec::with_capacity(IO_SIZE),
        }
    }

    /// A reader of the file from its start, [`IO_SIZE`] bytes per read call.
    pub fn reader(&self) -> impl io::Read + use<> {
        TempFileReader {
            file: self.0.clone(),
            offset: 0,
            buf: BytesMut::new(),
            chunk: Bytes::new(),
        }
    }
}

/// Reads a file synchronously, a chunk at a time.
struct TempFileReader {
    file: Arc<TempFile>,
    /// Where the next chunk starts.
    offset: u64,
    buf: BytesMut,
    /// What is left of the last chunk read.
    chunk: Bytes,
}

impl io::Read for TempFileReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.chunk.is_empty() {
            // The previous chunk is gone: its memory is used again.
            self.chunk = Bytes::new();
            self.chunk = self.file.read_at(self.offset, &mut self.buf)?;
            self.offset += self.chunk.len() as u64;
        }
        let n = out.len().min(self.chunk.len());
        out[..n].copy_from_slice(&self.chunk[..n]);
        bytes::Buf::advance(&mut self.chunk, n);
        Ok(n)
    }
}

impl SpillFile for TempFileHandle {
    fn path(&self) -> Option<&Path> {
        Some(&self.0.path)
    }

    fn size(&self) -> Option<u64> {
        Some(self.0.size.load(Ordering::Relaxed))
    }

    fn read_stream(&self) -> DfResult<Pin<Box<dyn Stream<Item = DfResult<Bytes>> + Send>>> {
        let file = self.0.clone();
        let start = (0u64, BytesMut::new());
        let chunks = futures::stream::try_unfold(start, move |(offset, mut buf)| {
            let file = file.clone();
            async move {
                let (chunk, buf) = tokio::task::spawn_blocking(move || {
                    let chunk = file.read_at(offset, &mut buf);
                    (chunk, buf)
                })
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
                let chunk = chunk.map_err(DataFusionError::IoError)?;
                let next = offset + chunk.len() as u64;
                Ok((!chunk.is_empty()).then_some((chunk, (next, buf))))
            }
        });
        Ok(Box::pin(chunks))
    }

    fn open_writer(&self) -> DfResult<Box<dyn SpillWriter>> {
        Ok(Box::new(TempFileWriter {
            file: self.0.clone(),
            pending: Vec::with_capacity(IO_SIZE),
        }))
    }
}

/// Writes whole blocks, [`IO_SIZE`] bytes at a time; the rest when flushed or finished.
/// What it is given goes to the file straight from the caller's buffer where it can
/// (Arrow hands over a batch's body in one piece); only pieces shorter than
/// [`IO_SIZE`] are gathered first.
struct TempFileWriter {
    file: Arc<TempFile>,
    /// Bytes not written yet: less than [`IO_SIZE`] between calls.
    pending: Vec<u8>,
}

impl TempFileWriter {
    fn write_pending(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.file.append(&self.pending)?;
            self.pending.clear();
        }
        Ok(())
    }
}

impl io::Write for TempFileWriter {
    fn write(&mut self, mut buf: &[u8]) -> io::Result<usize> {
        let given = buf.len();
        if !self.pending.is_empty() {
            let fill = (IO_SIZE - self.pending.len()).min(buf.len());
            self.pending.extend_from_slice(&buf[..fill]);
            buf = &buf[fill..];
            if self.pending.len() < IO_SIZE {
                return Ok(given);
            }
            self.write_pending()?;
        }
        let whole = buf.len() / IO_SIZE * IO_SIZE;
        for piece in buf[..whole].chunks(IO_SIZE) {
            self.file.append(piece)?;
        }
        self.pending.extend_from_slice(&buf[whole..]);
        debug_assert!(self.pending.len() < IO_SIZE);
        Ok(given)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_pending()
    }
}

impl SpillWriter for TempFileWriter {
    fn finish(&mut self) -> DfResult<()> {
        self.write_pending().map_err(DataFusionError::IoError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use std::io::Write;

    #[tokio::test]
    async fn writes_whole_blocks_reads_them_back_and_counts_them() {
        let data_dir =
            std::env::temp_dir().join(format!("iolab-temp-files-{}", std::process::id()));
        std::fs::create_dir_all(data_dir.join(TEMP_FILES_DIR)).unwrap();
        let stats = Arc::new(IoStatsHub::new());
        let files = TempFiles::new(&data_dir, 42, stats.clone());
        let operator = Arc::new(OperatorUsage::default());
        let file = {
            let _running = operator.enter();
            files.create_temp_file("test").unwrap()
        };
        let path = file.path().unwrap().to_path_buf();
        assert!(path.ends_with("base/pgsql_tmp/pgsql_tmp42.0"), "{path:?}");

        // 200 kB in 1000-byte pieces: one write of 16 blocks, then at finish 9 more
        // (72 kB, the last block partly filled).
        let content: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let mut writer = file.open_writer().unwrap();
        for piece in content.chunks(1000) {
            writer.write_all(piece).unwrap();
        }
        assert_eq!(file.size(), Some(IO_SIZE as u64), "one write so far");
        writer.finish().unwrap();
        assert_eq!(file.size(), Some(200_000));
        assert_eq!(files.in_use(), 200_000);

        let mut read = Vec::new();
        let mut chunks = file.read_stream().unwrap();
        while let Some(chunk) = chunks.next().await {
            read.extend_from_slice(&chunk.unwrap());
        }
        assert_eq!(read, content);
        let s = operator.snapshot();
        assert_eq!((s.temp.temp_written, s.temp.temp_read), (25, 25));
        assert_eq!((s.temp_files, s.peak_disk_bytes), (1, 200_000));

        drop((chunks, writer));
        assert!(path.exists(), "still referenced");
        drop(file);
        assert!(!path.exists(), "removed with its last reference");
        assert_eq!(files.in_use(), 0);
        let counted = stats.database.snapshot();
        assert_eq!((counted.temp_files, counted.temp_bytes), (1, 200_000));
        std::fs::remove_dir_all(&data_dir).unwrap();
    }
}
