//! One relation's data on disk: a sequence of 8 KiB blocks split over 1 GiB segment files.
//!
//! # Layout
//!
//! A relation with file number `N` lives in `<data_dir>/base/N`, `base/N.1`, `base/N.2`, …
//! Each segment holds exactly `segment_blocks` blocks ([`RELSEG_SIZE`] = 131072, i.e. 1 GiB, by
//! default) except the last, which holds the remainder. Block `b` is therefore at byte
//! `(b % segment_blocks) * BLCKSZ` of segment `b / segment_blocks`. Segment `k` exists only if
//! segments `0..k` are full; segment 0 always exists, even for an empty relation.
//!
//! # Size
//!
//! The number of blocks is computed once at [`RelFile::open`] from the segment sizes (a
//! trailing partial block, left by a crash during extension, is ignored) and then cached in an
//! atomic. Only extension (`write_block` at the end, [`RelFile::extend_to`],
//! [`RelFile::extend_by`]) and [`RelFile::truncate`] change it; they are serialised by the
//! relation's extension lock, and the cached size is raised only after the new blocks are on
//! disk, so a reader that sees `nblocks() > b` can always read block `b`.
//!
//! # File handles
//!
//! Segment files are opened lazily and kept open in a vector indexed by segment number, so the
//! number of open handles is bounded by the relation's segment count. I/O takes a reference to
//! the handle (`Arc<File>`) and runs without holding the vector's lock, using positioned
//! `pread`/`pwrite` so that any number of threads can read and write blocks concurrently
//! through `&self`.
//!
//! The files hold pages exactly as they are in memory; this module neither checks nor sets
//! page checksums — the buffer pool does that on the way in and out.
//!
//! # Direct I/O
//!
//! Opened with [`RelFileOptions::direct_io`] (PostgreSQL's `debug_io_direct = data`), every
//! segment is opened with `O_DIRECT`: reads and writes bypass the kernel's page cache and go
//! between the device and the caller's memory. The kernel then demands that the memory
//! address, the file offset and the length all be multiples of the device's logical block
//! size, or it fails the call with EINVAL. Offsets and lengths here are always whole 8 KiB
//! blocks; the memory is the caller's business, and [`RelFile::read_block`] and
//! [`RelFile::write_block`] refuse a buffer that is not [`IO_ALIGN_SIZE`]-aligned with an
//! `InvalidInput` error naming the problem instead of passing the EINVAL surprise on. The
//! buffer pool's frames are aligned ([`crate::buffer::memory::FRAME_ALIGN`]), and
//! [`AlignedBlock`] is an aligned page for everything else; extension writes zeros from an
//! aligned static buffer. Without direct I/O any buffer is accepted.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard, RwLock};

use super::page::{AlignedBlock, BLCKSZ, IO_ALIGN_SIZE};

/// Blocks per segment file by default: 1 GiB / 8 KiB.
pub const RELSEG_SIZE: u32 = 131072;

/// Largest number of zero blocks written by one `pwrite` while extending (256 KiB); the size
/// of [`ZERO_CHUNK`].
const EXTEND_CHUNK_BLOCKS: u32 = 32;

/// The zeros extension writes: a static, so that extending allocates nothing, and aligned,
/// so that it can be written with `O_DIRECT`.
static ZERO_CHUNK: [AlignedBlock; EXTEND_CHUNK_BLOCKS as usize] =
    [const { AlignedBlock::zeroed() }; EXTEND_CHUNK_BLOCKS as usize];

/// The first `blocks` blocks of [`ZERO_CHUNK`] as one slice.
fn zero_blocks(blocks: u32) -> &'static [u8] {
    assert!(blocks <= EXTEND_CHUNK_BLOCKS);
    // SAFETY: AlignedBlock is repr(C) around [u8; BLCKSZ] with size BLCKSZ (a multiple of its
    // alignment), so the array is EXTEND_CHUNK_BLOCKS × BLCKSZ contiguous initialised bytes.
    unsafe {
        std::slice::from_raw_parts(ZERO_CHUNK.as_ptr().cast::<u8>(), blocks as usize * BLCKSZ)
    }
}

/// How to open a relation's files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RelFileOptions {
    /// Blocks per segment file ([`RELSEG_SIZE`]; tests use tiny segments). A relation must
    /// always be opened with the segment size it was written with.
    pub segment_blocks: u32,
    /// Open every segment with `O_DIRECT` (see "Direct I/O" above).
    pub direct_io: bool,
}

impl Default for RelFileOptions {
    fn default() -> RelFileOptions {
        RelFileOptions {
            segment_blocks: RELSEG_SIZE,
            direct_io: false,
        }
    }
}

/// A relation's segment files. `Send + Sync`; share it as `Arc<RelFile>`.
#[derive(Debug)]
pub struct RelFile {
    data_dir: PathBuf,
    relfilenode: u32,
    segment_blocks: u32,
    /// Segments are opened with `O_DIRECT`.
    direct_io: bool,
    /// `base/<relfilenode>`, relative to the data directory (for messages).
    rel_path: PathBuf,
    /// Open segment handles, indexed by segment number; `None` = not opened yet.
    segments: RwLock<Vec<Option<Arc<File>>>>,
    /// Cached size in blocks.
    nblocks: AtomicU32,
    /// Serialises changes of the relation's size.
    extension_lock: Mutex<()>,
    /// A segment file was created since the last `sync()`, so `base/` must be fsynced too.
    created_files: AtomicBool,
    /// The WAL its page changes go to; unset for an unlogged relation (`wal::log_change`).
    wal: std::sync::OnceLock<Arc<crate::wal::Wal>>,
    /// For a temporary relation: its session's local buffers, which alone cache its
    /// blocks (weak: the session owns them, and they hold this file while caching it).
    local_buffers: std::sync::OnceLock<std::sync::Weak<crate::buffer::BufferPool>>,
    /// What an access method keeps with the open relation between statements
    /// (PostgreSQL's `rd_amcache`; 0 = nothing): see [`RelFile::am_cache`].
    am_cache: AtomicU64,
    /// A second such word: the B-tree's root as its meta page last named it.
    am_root: AtomicU64,
}

impl RelFile {
    /// Open (creating `base/` and segment 0 if missing) with the default 1 GiB segments and
    /// buffered I/O.
    pub fn open(data_dir: &Path, relfilenode: u32) -> io::Result<RelFile> {
        RelFile::open_with(data_dir, relfilenode, RelFileOptions::default())
    }

    /// Open with `segment_blocks` blocks per segment file (tests use tiny segments). A
    /// relation must always be opened with the segment size it was written with.
    pub fn open_with_segment_size(
        data_dir: &Path,
        relfilenode: u32,
        segment_blocks: u32,
    ) -> io::Result<RelFile> {
        RelFile::open_with(
            data_dir,
            relfilenode,
            RelFileOptions {
                segment_blocks,
                ..RelFileOptions::default()
            },
        )
    }

    /// Open with explicit [`RelFileOptions`] (segment size, direct I/O).
    pub fn open_with(
        data_dir: &Path,
        relfilenode: u32,
        options: RelFileOptions,
    ) -> io::Result<RelFile> {
        let RelFileOptions {
            segment_blocks,
            direct_io,
        } = options;
        assert!(segment_blocks > 0, "segments must hold at least one block");
        assert!(
            segment_blocks as u64 * BLCKSZ as u64 <= i64::MAX as u64,
            "segment too large for a file offset"
        );
        let base = data_dir.join("base");
        fs::create_dir_all(&base)?;
        let rel = RelFile {
            data_dir: data_dir.to_path_buf(),
            relfilenode,
            segment_blocks,
            direct_io,
            rel_path: Path::new("base").join(relfilenode.to_string()),
            segments: RwLock::new(Vec::new()),
            nblocks: AtomicU32::new(0),
            extension_lock: Mutex::new(()),
            created_files: AtomicBool::new(false),
            wal: std::sync::OnceLock::new(),
            local_buffers: std::sync::OnceLock::new(),
            am_cache: AtomicU64::new(0),
            am_root: AtomicU64::new(0),
        };
        let first = rel.open_segment_file(0, true)?;
        rel.segments.write().push(Some(Arc::new(first)));
        let nblocks = rel.count_blocks_on_disk()?;
        rel.nblocks.store(nblocks, Ordering::Release);
        Ok(rel)
    }

    /// Walk the segment files: full segments, then one partial (or missing) segment.
    fn count_blocks_on_disk(&self) -> io::Result<u32> {
        let mut total: u64 = 0;
        let mut segno = 0u32;
        loop {
            let len = match fs::metadata(self.segment_path(segno)) {
                Ok(meta) => meta.len(),
                Err(e) if e.kind() == io::ErrorKind::NotFound && segno > 0 => break,
                Err(e) => return Err(e),
            };
            let blocks = len / BLCKSZ as u64;
            if blocks > self.segment_blocks as u64 {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "segment {} of relation {} holds {blocks} blocks, more than the segment size {}",
                        segno,
                        self.rel_path.display(),
                        self.segment_blocks
                    ),
                ));
            }
            total += blocks;
            if blocks < self.segment_blocks as u64 {
                break;
            }
            segno += 1;
        }
        u32::try_from(total).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "relation has more than 2^32 blocks",
            )
        })
    }

    pub fn relfilenode(&self) -> u32 {
        self.relfilenode
    }

    /// The WAL this relation's changes are logged to (`None`: unlogged).
    pub fn wal(&self) -> Option<&Arc<crate::wal::Wal>> {
        self.wal.get()
    }

    /// Makes the relation logged (once, right after opening it).
    /// Makes this a temporary relation read only through `buffers` (a session's local
    /// buffers). Set once, before any block is read.
    pub fn set_local_buffers(&self, buffers: &Arc<crate::buffer::BufferPool>) {
        assert!(buffers.is_local(), "temporary relations use local buffers");
        assert!(
            self.local_buffers.set(Arc::downgrade(buffers)).is_ok(),
            "{} belongs to one session",
            self.rel_path.display()
        );
    }

    /// `None` for a relation in shared buffers; for a temporary relation its session's
    /// local buffers, `Some(None)` once the session has ended.
    pub fn local_buffers(&self) -> Option<Option<Arc<crate::buffer::BufferPool>>> {
        self.local_buffers.get().map(std::sync::Weak::upgrade)
    }

    /// Whether this is a session's temporary relation.
    pub fn is_temporary(&self) -> bool {
        self.local_buffers.get().is_some()
    }

    pub fn set_wal(&self, wal: Arc<crate::wal::Wal>) {
        assert!(
            self.wal.set(wal).is_ok(),
            "{} is logged once",
            self.rel_path.display()
        );
    }

    /// Path of segment 0 relative to the data directory, e.g. `base/16384` (for messages).
    pub fn path(&self) -> &Path {
        &self.rel_path
    }

    /// Absolute path of segment `segno`.
    pub fn segment_path(&self, segno: u32) -> PathBuf {
        segment_path(&self.data_dir, self.relfilenode, segno)
    }

    /// Blocks per segment file.
    pub fn segment_blocks(&self) -> u32 {
        self.segment_blocks
    }

    /// Whether the segments are open with `O_DIRECT` (every buffer must then be
    /// [`IO_ALIGN_SIZE`]-aligned).
    pub fn is_direct(&self) -> bool {
        self.direct_io
    }

    /// A word an access method keeps with the open relation between statements, as
    /// PostgreSQL keeps a B-tree's meta page in its relation cache (`rd_amcache`); the
    /// B-tree's planner keeps the tree's height there (`BtreeIndex::planning_height`).
    /// 0 until the access method stores something.
    pub fn am_cache(&self) -> &AtomicU64 {
        &self.am_cache
    }

    /// A second word for the access method: the B-tree keeps its root there
    /// (`BtreeIndex::walk_down`). 0 until it stores something.
    pub fn am_root(&self) -> &AtomicU64 {
        &self.am_root
    }

    /// Current size in blocks.
    pub fn nblocks(&self) -> u32 {
        self.nblocks.load(Ordering::Acquire)
    }

    /// Segment number and byte offset within it of block `blkno`.
    fn locate(&self, blkno: u32) -> (u32, u64) {
        (
            blkno / self.segment_blocks,
            (blkno % self.segment_blocks) as u64 * BLCKSZ as u64,
        )
    }

    fn open_segment_file(&self, segno: u32, create: bool) -> io::Result<File> {
        let path = self.segment_path(segno);
        let existed = create && path.exists();
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(create);
        if self.direct_io {
            options.custom_flags(libc::O_DIRECT);
        }
        let file = options.open(&path)?;
        if create && !existed {
            self.created_files.store(true, Ordering::Release);
        }
        Ok(file)
    }

    /// The handle of segment `segno`, opening (and with `create`, creating) it if needed.
    fn segment(&self, segno: u32, create: bool) -> io::Result<Arc<File>> {
        if let Some(Some(file)) = self.segments.read().get(segno as usize) {
            return Ok(Arc::clone(file));
        }
        let mut segments = self.segments.write();
        if let Some(Some(file)) = segments.get(segno as usize) {
            return Ok(Arc::clone(file));
        }
        let file = Arc::new(self.open_segment_file(segno, create)?);
        if segments.len() <= segno as usize {
            segments.resize(segno as usize + 1, None);
        }
        segments[segno as usize] = Some(Arc::clone(&file));
        Ok(file)
    }

    fn beyond_eof(&self, what: &str, blkno: u32) -> io::Error {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "could not {what} block {blkno} in file \"{}\": relation has only {} blocks",
                self.rel_path.display(),
                self.nblocks()
            ),
        )
    }

    /// With direct I/O, refuse memory the kernel would refuse with EINVAL.
    fn check_alignment(&self, what: &str, blkno: u32, buf: &[u8]) -> io::Result<()> {
        if self.direct_io && buf.as_ptr() as usize % IO_ALIGN_SIZE != 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "could not {what} block {blkno} in file \"{}\": buffer at {:p} is not \
                     {IO_ALIGN_SIZE}-byte aligned, as direct I/O requires",
                    self.rel_path.display(),
                    buf.as_ptr()
                ),
            ));
        }
        Ok(())
    }

    /// Read block `blkno` into `buf` (exactly `BLCKSZ` bytes; with direct I/O,
    /// [`IO_ALIGN_SIZE`]-aligned — see [`AlignedBlock`]). Blocks at or beyond
    /// [`nblocks`](Self::nblocks) are an error.
    pub fn read_block(&self, blkno: u32, buf: &mut [u8]) -> io::Result<()> {
        assert_eq!(buf.len(), BLCKSZ, "read_block needs a BLCKSZ buffer");
        self.check_alignment("read", blkno, buf)?;
        if blkno >= self.nblocks() {
            return Err(self.beyond_eof("read", blkno));
        }
        let (segno, offset) = self.locate(blkno);
        self.segment(segno, false)?.read_exact_at(buf, offset)
    }

    /// Write block `blkno` from `buf` (exactly `BLCKSZ` bytes; with direct I/O,
    /// [`IO_ALIGN_SIZE`]-aligned). Writing block `nblocks()` extends the relation by one
    /// block; anything further is an error.
    pub fn write_block(&self, blkno: u32, buf: &[u8]) -> io::Result<()> {
        assert_eq!(buf.len(), BLCKSZ, "write_block needs a BLCKSZ buffer");
        self.check_alignment("write", blkno, buf)?;
        if blkno < self.nblocks() {
            let (segno, offset) = self.locate(blkno);
            return self.segment(segno, false)?.write_all_at(buf, offset);
        }
        let _extending = self.extension_lock.lock();
        let nblocks = self.nblocks();
        if blkno < nblocks {
            // Someone else extended past it meanwhile.
            let (segno, offset) = self.locate(blkno);
            return self.segment(segno, false)?.write_all_at(buf, offset);
        }
        if blkno > nblocks {
            return Err(self.beyond_eof("write", blkno));
        }
        let (segno, offset) = self.locate(blkno);
        self.segment(segno, true)?.write_all_at(buf, offset)?;
        self.nblocks.store(nblocks + 1, Ordering::Release);
        Ok(())
    }

    /// Take the relation's extension lock. Hold it to make "look at `nblocks()`, then extend"
    /// atomic; pass the guard to [`extend_to_locked`](Self::extend_to_locked).
    pub fn lock_extension(&self) -> MutexGuard<'_, ()> {
        self.extension_lock.lock()
    }

    /// Grow the relation to `nblocks` blocks by writing zero blocks (a no-op if it is already
    /// that large).
    pub fn extend_to(&self, nblocks: u32) -> io::Result<()> {
        let guard = self.extension_lock.lock();
        self.extend_to_locked(&guard, nblocks)
    }

    /// Grow the relation by `count` zero blocks; returns the number of the first new block.
    pub fn extend_by(&self, count: u32) -> io::Result<u32> {
        let guard = self.extension_lock.lock();
        let first = self.nblocks();
        let target = first.checked_add(count).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "relation would exceed 2^32 blocks",
            )
        })?;
        self.extend_to_locked(&guard, target)?;
        Ok(first)
    }

    /// [`extend_to`](Self::extend_to) for a caller already holding the extension lock.
    pub fn extend_to_locked(&self, guard: &MutexGuard<'_, ()>, nblocks: u32) -> io::Result<()> {
        assert!(
            std::ptr::eq(MutexGuard::mutex(guard), &self.extension_lock),
            "extend_to_locked needs this relation's extension lock"
        );
        let mut current = self.nblocks();
        if nblocks <= current {
            return Ok(());
        }
        while current < nblocks {
            let (segno, offset) = self.locate(current);
            let room_in_segment = self.segment_blocks - current % self.segment_blocks;
            let count = EXTEND_CHUNK_BLOCKS
                .min(nblocks - current)
                .min(room_in_segment);
            self.segment(segno, true)?
                .write_all_at(zero_blocks(count), offset)?;
            current += count;
            self.nblocks.store(current, Ordering::Release);
        }
        Ok(())
    }

    /// Truncate the relation to zero blocks: empty segment 0 and delete the other segments.
    pub fn truncate(&self) -> io::Result<()> {
        let _extending = self.extension_lock.lock();
        let mut segments = self.segments.write();
        self.nblocks.store(0, Ordering::Release);
        let first = match segments.first() {
            Some(Some(file)) => Arc::clone(file),
            _ => Arc::new(self.open_segment_file(0, true)?),
        };
        first.set_len(0)?;
        segments.clear();
        segments.push(Some(first));
        remove_segments_from(&self.data_dir, self.relfilenode, 1)
    }

    /// fsync every open segment (and `base/` if segment files were created since last time).
    pub fn sync(&self) -> io::Result<()> {
        let open: Vec<Arc<File>> = self.segments.read().iter().flatten().cloned().collect();
        for file in open {
            file.sync_all()?;
        }
        if self.created_files.swap(false, Ordering::AcqRel) {
            if let Err(e) = File::open(self.data_dir.join("base")).and_then(|dir| dir.sync_all()) {
                self.created_files.store(true, Ordering::Release);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Close and delete all the relation's files.
    pub fn unlink(self) -> io::Result<()> {
        let RelFile {
            data_dir,
            relfilenode,
            segments,
            ..
        } = self;
        drop(segments);
        remove_files(&data_dir, relfilenode)
    }

    /// File descriptor of the segment holding `blkno` and the block's byte offset in it, for
    /// `posix_fadvise` and io_uring. The descriptor stays valid while this `RelFile` lives and
    /// until [`truncate`](Self::truncate) (which closes segments beyond the first). When
    /// [`is_direct`](Self::is_direct), the descriptor is `O_DIRECT`: I/O through it needs
    /// [`IO_ALIGN_SIZE`]-aligned memory, and `posix_fadvise(WILLNEED)` on it only fills the
    /// page cache that direct reads never look at.
    pub fn raw_fd_and_offset(&self, blkno: u32) -> io::Result<(RawFd, u64)> {
        let (segno, offset) = self.locate(blkno);
        let create = blkno >= self.nblocks();
        let file = self.segment(segno, create)?;
        Ok((file.as_raw_fd(), offset))
    }

    /// Ask the kernel to drop `blocks` from the page cache (`posix_fadvise(DONTNEED)`, one
    /// call per segment they span; blocks past the end are ignored). Advisory: dirty pages
    /// are written back instead of dropped, and what another reader has in hand stays. A
    /// direct relation has nothing in the page cache to drop.
    pub fn drop_cached(&self, blocks: std::ops::Range<u32>) -> io::Result<()> {
        if self.direct_io {
            return Ok(());
        }
        let end = blocks.end.min(self.nblocks());
        let mut blkno = blocks.start;
        while blkno < end {
            let (segno, offset) = self.locate(blkno);
            let in_segment = (end - blkno).min(self.segment_blocks - blkno % self.segment_blocks);
            let file = self.segment(segno, false)?;
            let len = in_segment as usize * BLCKSZ;
            // SAFETY: a plain system call on a descriptor we own; it reads no memory of ours.
            let rc = unsafe {
                libc::posix_fadvise(
                    file.as_raw_fd(),
                    offset as libc::off_t,
                    len as libc::off_t,
                    libc::POSIX_FADV_DONTNEED,
                )
            };
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            blkno += in_segment;
        }
        Ok(())
    }
}

/// `<data_dir>/base/<relfilenode>[.<segno>]`.
pub fn segment_path(data_dir: &Path, relfilenode: u32, segno: u32) -> PathBuf {
    let name = if segno == 0 {
        relfilenode.to_string()
    } else {
        format!("{relfilenode}.{segno}")
    };
    data_dir.join("base").join(name)
}

/// Delete every segment file of a relation (missing files are fine).
pub fn remove_files(data_dir: &Path, relfilenode: u32) -> io::Result<()> {
    remove_segments_from(data_dir, relfilenode, 0)
}

/// Delete segments `first..` until the first missing one after them.
fn remove_segments_from(data_dir: &Path, relfilenode: u32, first: u32) -> io::Result<()> {
    let mut segno = first;
    loop {
        match fs::remove_file(segment_path(data_dir, relfilenode, segno)) {
            Ok(()) => segno += 1,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                // Segment 0 may be missing while later ones exist only if a previous removal
                // was interrupted; keep going one step past segment 0 to catch that.
                if segno == 0 && first == 0 {
                    segno = 1;
                    continue;
                }
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A fresh directory under the system temp dir, removed on drop.
    pub(crate) struct TempDir(pub PathBuf);

    impl TempDir {
        pub(crate) fn new(tag: &str) -> TempDir {
            use std::sync::atomic::AtomicU64;
            static NEXT: AtomicU64 = AtomicU64::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!("iolab-{tag}-{}-{n}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn block_with(tag: u32) -> Vec<u8> {
        let mut buf = vec![0u8; BLCKSZ];
        for (i, chunk) in buf.chunks_exact_mut(4).enumerate() {
            chunk.copy_from_slice(&(tag.wrapping_mul(7919) ^ i as u32).to_le_bytes());
        }
        buf
    }

    #[test]
    fn round_trip_across_segments_and_reopen() {
        let dir = TempDir::new("relfile-rt");
        let rel = RelFile::open_with_segment_size(&dir.0, 16384, 4).unwrap();
        assert_eq!(rel.nblocks(), 0);
        assert_eq!(rel.path(), Path::new("base/16384"));
        for b in 0..11 {
            rel.write_block(b, &block_with(b)).unwrap();
        }
        assert_eq!(rel.nblocks(), 11);
        assert!(dir.0.join("base/16384.2").exists());
        assert!(!dir.0.join("base/16384.3").exists());
        assert_eq!(
            fs::metadata(dir.0.join("base/16384.1")).unwrap().len(),
            4 * BLCKSZ as u64
        );
        assert_eq!(
            fs::metadata(dir.0.join("base/16384.2")).unwrap().len(),
            3 * BLCKSZ as u64
        );
        let mut buf = vec![0u8; BLCKSZ];
        for b in (0..11).rev() {
            rel.read_block(b, &mut buf).unwrap();
            assert_eq!(buf, block_with(b), "block {b}");
        }
        // Overwrite in the middle of a segment.
        rel.write_block(5, &block_with(500)).unwrap();
        assert_eq!(rel.nblocks(), 11);
        // Beyond EOF is an error for both reads and writes.
        assert_eq!(
            rel.read_block(11, &mut buf).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        assert!(rel.write_block(12, &buf).is_err());
        rel.sync().unwrap();
        drop(rel);

        let rel = RelFile::open_with_segment_size(&dir.0, 16384, 4).unwrap();
        assert_eq!(rel.nblocks(), 11);
        rel.read_block(5, &mut buf).unwrap();
        assert_eq!(buf, block_with(500));
        rel.read_block(10, &mut buf).unwrap();
        assert_eq!(buf, block_with(10));
    }

    #[test]
    fn exactly_full_segments_and_partial_trailing_block() {
        let dir = TempDir::new("relfile-full");
        let rel = RelFile::open_with_segment_size(&dir.0, 7, 4).unwrap();
        rel.extend_to(8).unwrap();
        assert_eq!(rel.nblocks(), 8);
        assert!(dir.0.join("base/7.1").exists());
        assert!(!dir.0.join("base/7.2").exists());
        drop(rel);
        // A torn extension leaves half a block in a new segment: it does not count.
        fs::write(dir.0.join("base/7.2"), vec![1u8; BLCKSZ / 2]).unwrap();
        let rel = RelFile::open_with_segment_size(&dir.0, 7, 4).unwrap();
        assert_eq!(rel.nblocks(), 8);
        assert_eq!(rel.extend_by(3).unwrap(), 8);
        assert_eq!(rel.nblocks(), 11);
        let mut buf = vec![1u8; BLCKSZ];
        rel.read_block(8, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
    }

    #[test]
    fn extend_writes_zero_blocks_and_truncate_removes_segments() {
        let dir = TempDir::new("relfile-trunc");
        let rel = RelFile::open_with_segment_size(&dir.0, 42, 4).unwrap();
        rel.extend_to(10).unwrap();
        assert_eq!(rel.nblocks(), 10);
        rel.extend_to(3).unwrap(); // never shrinks
        assert_eq!(rel.nblocks(), 10);
        let mut buf = vec![1u8; BLCKSZ];
        rel.read_block(9, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 0));
        let (fd, off) = rel.raw_fd_and_offset(9).unwrap();
        assert!(fd >= 0);
        assert_eq!(off, BLCKSZ as u64);

        rel.truncate().unwrap();
        assert_eq!(rel.nblocks(), 0);
        assert_eq!(fs::metadata(dir.0.join("base/42")).unwrap().len(), 0);
        assert!(!dir.0.join("base/42.1").exists());
        assert!(!dir.0.join("base/42.2").exists());
        assert!(rel.read_block(0, &mut buf).is_err());
        // Usable again after truncation.
        rel.write_block(0, &block_with(1)).unwrap();
        rel.write_block(1, &block_with(2)).unwrap();
        rel.read_block(1, &mut buf).unwrap();
        assert_eq!(buf, block_with(2));
        drop(rel);
        assert_eq!(
            RelFile::open_with_segment_size(&dir.0, 42, 4)
                .unwrap()
                .nblocks(),
            2
        );
    }

    #[test]
    fn unlink_removes_all_segments() {
        let dir = TempDir::new("relfile-unlink");
        let rel = RelFile::open_with_segment_size(&dir.0, 9, 2).unwrap();
        rel.extend_to(5).unwrap();
        assert!(dir.0.join("base/9.2").exists());
        rel.unlink().unwrap();
        for name in ["9", "9.1", "9.2"] {
            assert!(
                !dir.0.join("base").join(name).exists(),
                "{name} still exists"
            );
        }
        remove_files(&dir.0, 9).unwrap(); // idempotent
    }

    /// Whether `fd` was opened with `O_DIRECT`.
    fn fd_is_direct(fd: RawFd) -> bool {
        // SAFETY: F_GETFL on a descriptor we hold open.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        assert!(flags >= 0, "fcntl: {}", io::Error::last_os_error());
        flags & libc::O_DIRECT != 0
    }

    /// A direct `RelFile`, or `None` (with a note) where the file system refuses `O_DIRECT`.
    fn open_direct(dir: &TempDir, relfilenode: u32, segment_blocks: u32) -> Option<RelFile> {
        let options = RelFileOptions {
            segment_blocks,
            direct_io: true,
        };
        match RelFile::open_with(&dir.0, relfilenode, options) {
            Ok(rel) => Some(rel),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                println!("skipped: {} does not support O_DIRECT", dir.0.display());
                None
            }
            Err(e) => panic!("open with O_DIRECT: {e}"),
        }
    }

    #[test]
    fn direct_io_round_trip_across_segments() {
        let dir = TempDir::new("relfile-direct");
        let Some(rel) = open_direct(&dir, 16384, 4) else {
            return;
        };
        assert!(rel.is_direct());
        assert!(!RelFile::open(&dir.0, 1).unwrap().is_direct());
        // Extension crosses into segment 1, writing zeros from the aligned static chunk.
        rel.extend_to(6).unwrap();
        assert_eq!(rel.nblocks(), 6);
        let mut block = Box::new(AlignedBlock::zeroed());
        for b in 0..6 {
            block.fill(1);
            rel.read_block(b, &mut block).unwrap();
            assert!(block.iter().all(|&x| x == 0), "block {b} not zero");
        }
        // Overwrite the zero blocks, then extend block by block into segment 2.
        for b in 0..11 {
            block.copy_from_slice(&block_with(b));
            rel.write_block(b, &block).unwrap();
        }
        assert_eq!(rel.nblocks(), 11);
        for b in (0..11).rev() {
            rel.read_block(b, &mut block).unwrap();
            assert_eq!(&block[..], &block_with(b)[..], "block {b}");
        }
        // Every segment's descriptor really is O_DIRECT.
        for b in [0, 5, 10] {
            let (fd, offset) = rel.raw_fd_and_offset(b).unwrap();
            assert!(fd_is_direct(fd), "segment of block {b} is not O_DIRECT");
            assert_eq!(offset % IO_ALIGN_SIZE as u64, 0);
        }
        rel.sync().unwrap();
        drop(rel);

        // Reopened, direct or buffered, the same contents.
        let rel = open_direct(&dir, 16384, 4).unwrap();
        assert_eq!(rel.nblocks(), 11);
        rel.read_block(7, &mut block).unwrap();
        assert_eq!(&block[..], &block_with(7)[..]);
        let buffered = RelFile::open_with_segment_size(&dir.0, 16384, 4).unwrap();
        let mut plain = vec![0u8; BLCKSZ];
        buffered.read_block(10, &mut plain).unwrap();
        assert_eq!(plain, block_with(10));
    }

    #[test]
    fn direct_io_refuses_misaligned_buffers() {
        let dir = TempDir::new("relfile-direct-align");
        let Some(rel) = open_direct(&dir, 5, RELSEG_SIZE) else {
            return;
        };
        rel.extend_to(2).unwrap();
        // Two aligned pages; a page-sized window starting 512 bytes in is misaligned.
        let mut pair = Box::new([AlignedBlock::zeroed(), AlignedBlock::zeroed()]);
        // SAFETY: the two blocks are contiguous (repr(C), size a multiple of the alignment).
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(pair.as_mut_ptr().cast::<u8>(), 2 * BLCKSZ) };
        let misaligned = &mut bytes[512..512 + BLCKSZ];
        let err = rel.read_block(1, misaligned).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        let message = err.to_string();
        assert!(
            message.contains("could not read block 1 in file \"base/5\"")
                && message.contains("4096-byte aligned"),
            "{message}"
        );
        let err = rel.write_block(1, misaligned).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains("could not write block 1"), "{err}");
        // Nothing was written, and an aligned buffer still works.
        rel.read_block(1, &mut bytes[..BLCKSZ]).unwrap();
        assert!(bytes[..BLCKSZ].iter().all(|&b| b == 0));
        // A buffered RelFile takes the same misaligned buffer.
        let buffered = RelFile::open(&dir.0, 5).unwrap();
        buffered
            .read_block(1, &mut bytes[512..512 + BLCKSZ])
            .unwrap();
    }

    #[test]
    fn concurrent_extension_is_serialised() {
        let dir = TempDir::new("relfile-conc");
        let rel = Arc::new(RelFile::open_with_segment_size(&dir.0, 77, 3).unwrap());
        let firsts: Vec<u32> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let rel = Arc::clone(&rel);
                    s.spawn(move || {
                        (0..10)
                            .map(|_| rel.extend_by(1).unwrap())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        let mut sorted = firsts.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..40).collect::<Vec<_>>());
        assert_eq!(rel.nblocks(), 40);
    }
}
