//! The memory behind the buffer pool's frames: one contiguous anonymous mapping holding
//! `nframes × BLCKSZ` bytes, backed by 2 MiB huge pages when the `huge_pages` setting asks for
//! them and the kernel provides them.
//!
//! # Why huge pages
//!
//! With direct I/O (`debug_io_direct = data`) the device reads straight into the frames, and
//! on a virtio disk every 4 KiB page of the destination is one scatter-gather segment: the
//! cost is per segment, not per request. A pool in 2 MiB pages turns a 128 KiB read into one
//! or two segments instead of 32, which on the machines iolab is studied on about doubles
//! sequential bandwidth (see `/work/shared/reference/machine-io-facts.md`). Huge pages also
//! spare the TLB, which matters for buffered I/O too, but less.
//!
//! # How the mapping is obtained ([`HugePages`], PostgreSQL's `huge_pages`)
//!
//! ```text
//!   huge_pages = on    mmap(MAP_HUGETLB | MAP_HUGE_2MB, size rounded up to 2 MiB)
//!                        └─ refused → start-up fails ("could not map anonymous shared memory")
//!   huge_pages = try   mmap(MAP_HUGETLB | MAP_HUGE_2MB)                  → Hugetlb
//!                        └─ refused → mmap 2 MiB-aligned + madvise(MADV_HUGEPAGE),
//!                                     pre-touch, count AnonHugePages in /proc/self/smaps
//!                                       ├─ some huge pages   → Transparent
//!                                       └─ none              → None (4 KiB pages)
//!   huge_pages = off   mmap + madvise(MADV_NOHUGEPAGE)                      → None
//! ```
//!
//! `MAP_HUGETLB` takes pages from the kernel's reserved pool (`vm.nr_hugepages`); the mapping
//! is refused with ENOMEM when not enough are free, so a hugetlb pool is all huge pages or
//! nothing. Transparent huge pages (THP) are best effort: with THP in `madvise` mode the
//! kernel tries to back each 2 MiB-aligned 2 MiB range of an `MADV_HUGEPAGE` region with one
//! huge page at its first fault (compacting memory if needed) and falls back to 4 KiB pages
//! where it cannot, so the outcome has to be measured, not assumed. The THP mapping is
//! therefore 2 MiB aligned (over-allocate by 2 MiB and trim) and its length a multiple of
//! 2 MiB: a huge page can only cover a whole, aligned 2 MiB range of the mapping.
//! `huge_pages = off` asks for `MADV_NOHUGEPAGE` so that `off` means 4 KiB pages even where
//! THP is in `always` mode — the point of the setting here is to compare the two.
//!
//! Unlike PostgreSQL, whose `huge_pages_status` reports only hugetlb, iolab counts a pool
//! backed by transparent huge pages as huge pages too ([`HugePageKind::is_huge`]).
//!
//! # Pre-touching
//!
//! Every page of the mapping is written once here, so the page faults (and, on the VMs iolab
//! runs on, the host's faults for memory it had reclaimed) happen at start-up and not during
//! the first scan. For THP this is also the moment the huge pages are allocated.
//!
//! # Bounds
//!
//! The mapping is `nframes × BLCKSZ` bytes rounded up to 2 MiB for huge pages (so at most
//! 2 MiB − 8 KiB more than the frames need), allocated once and never resized.
//!
//! This module only hands out raw pointers; who may touch which frame is the pool's business
//! (see the locking rules in `pool.rs`).

use std::fmt;
use std::io;
use std::ptr::NonNull;
use std::str::FromStr;

use iolab_catalog::{sqlstate, PgError};

use crate::storage::page::{BLCKSZ, IO_ALIGN_SIZE};

/// Alignment guaranteed for every frame (what `O_DIRECT` needs).
pub const FRAME_ALIGN: usize = IO_ALIGN_SIZE;

/// The huge page size iolab asks for (x86-64's and AArch64's usual 2 MiB).
pub const HUGE_PAGE_SIZE: usize = 2 * 1024 * 1024;

/// The `huge_pages` setting: whether to ask for huge pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum HugePages {
    /// 4 KiB pages only (`MADV_NOHUGEPAGE`).
    Off,
    /// Hugetlb pages, or start-up fails.
    On,
    /// Hugetlb pages, else transparent huge pages, else 4 KiB pages (PostgreSQL's default).
    #[default]
    Try,
}

impl HugePages {
    pub fn as_str(self) -> &'static str {
        match self {
            HugePages::Off => "off",
            HugePages::On => "on",
            HugePages::Try => "try",
        }
    }
}

impl FromStr for HugePages {
    type Err = String;

    /// `off`, `on` or `try`, as `ServerSettings::huge_pages()` returns them.
    fn from_str(s: &str) -> Result<HugePages, String> {
        match s {
            "off" => Ok(HugePages::Off),
            "on" => Ok(HugePages::On),
            "try" => Ok(HugePages::Try),
            other => Err(format!("invalid value for huge_pages: \"{other}\"")),
        }
    }
}

/// What actually backs the frames.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HugePageKind {
    /// 2 MiB pages from the kernel's hugetlb pool (`MAP_HUGETLB`), the whole mapping.
    Hugetlb,
    /// Transparent huge pages (`MADV_HUGEPAGE`); at least part of the mapping, see
    /// [`FrameMemory::huge_page_bytes`].
    Transparent,
    /// Ordinary 4 KiB pages.
    None,
}

impl HugePageKind {
    /// `hugetlb`, `transparent` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            HugePageKind::Hugetlb => "hugetlb",
            HugePageKind::Transparent => "transparent",
            HugePageKind::None => "none",
        }
    }

    /// Whether huge pages of either kind back the pool (`huge_pages_status = on`).
    pub fn is_huge(self) -> bool {
        !matches!(self, HugePageKind::None)
    }
}

impl fmt::Display for HugePageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `nframes` page-sized, 4096-byte-aligned frames in one mapping.
pub struct FrameMemory {
    base: NonNull<u8>,
    nframes: usize,
    /// Length of the mapping (≥ `nframes × BLCKSZ`; a multiple of 2 MiB for huge pages).
    mapped_len: usize,
    kind: HugePageKind,
    /// Bytes of the mapping in huge pages, measured after pre-touching.
    huge_bytes: usize,
}

// SAFETY: FrameMemory is a plain block of bytes; synchronising access to individual frames is
// the pool's responsibility.
unsafe impl Send for FrameMemory {}
unsafe impl Sync for FrameMemory {}

impl FrameMemory {
    /// Map and pre-fault `nframes` frames in 4 KiB pages (`huge_pages = off`). Panics if the
    /// kernel refuses the mapping (tests and tools; the server uses [`FrameMemory::allocate`]).
    pub fn new(nframes: usize) -> FrameMemory {
        FrameMemory::allocate(nframes, HugePages::Off).unwrap_or_else(|e| panic!("{}", e.message))
    }

    /// Map `nframes` frames in 4 KiB pages without touching them: the kernel backs each
    /// page when it is first used (a session's local buffers).
    pub fn untouched(nframes: usize) -> Result<FrameMemory, PgError> {
        assert!(nframes > 0, "a buffer pool needs at least one frame");
        let len = nframes
            .checked_mul(BLCKSZ)
            .expect("buffer pool size overflows usize");
        let base = map_plain(len, true).map_err(|e| map_failure(&e, len))?;
        Ok(FrameMemory {
            base,
            nframes,
            mapped_len: len,
            kind: HugePageKind::None,
            huge_bytes: 0,
        })
    }

    /// Map and pre-fault `nframes` frames as `huge_pages` asks (see the module comment). The
    /// error is PostgreSQL's start-up failure, `could not map anonymous shared memory: …`,
    /// with PostgreSQL's hint when the kernel ran out of memory (or of huge pages).
    pub fn allocate(nframes: usize, huge_pages: HugePages) -> Result<FrameMemory, PgError> {
        FrameMemory::allocate_steps(nframes, huge_pages, true)
    }

    /// [`allocate`](Self::allocate); `try` skips the hugetlb attempt unless `with_hugetlb`
    /// (so that tests reach the THP fallback on machines that have hugetlb pages).
    fn allocate_steps(
        nframes: usize,
        huge_pages: HugePages,
        with_hugetlb: bool,
    ) -> Result<FrameMemory, PgError> {
        assert!(nframes > 0, "a buffer pool needs at least one frame");
        let len = nframes
            .checked_mul(BLCKSZ)
            .expect("buffer pool size overflows usize");
        let huge_len = len
            .checked_next_multiple_of(HUGE_PAGE_SIZE)
            .expect("buffer pool size overflows usize");
        let try_hugetlb = match huge_pages {
            HugePages::Try if with_hugetlb => map_hugetlb(huge_len),
            _ => Err(io::Error::from_raw_os_error(libc::ENOMEM)),
        };
        let (base, mapped_len, requested) = match huge_pages {
            HugePages::On => {
                let base = map_hugetlb(huge_len).map_err(|e| map_failure(&e, huge_len))?;
                (base, huge_len, HugePageKind::Hugetlb)
            }
            HugePages::Try => match try_hugetlb {
                Ok(base) => (base, huge_len, HugePageKind::Hugetlb),
                Err(e) => {
                    // PostgreSQL logs the same at DEBUG1.
                    tracing::debug!(
                        "mmap({huge_len}) with MAP_HUGETLB failed, huge pages disabled: {}",
                        os_error_text(&e)
                    );
                    match map_transparent(huge_len) {
                        Ok(base) => (base, huge_len, HugePageKind::Transparent),
                        Err(e) => {
                            tracing::debug!(
                                "mmap({}) for transparent huge pages failed: {}",
                                huge_len + HUGE_PAGE_SIZE,
                                os_error_text(&e)
                            );
                            let base = map_plain(len, false).map_err(|e| map_failure(&e, len))?;
                            (base, len, HugePageKind::None)
                        }
                    }
                }
            },
            HugePages::Off => {
                let base = map_plain(len, true).map_err(|e| map_failure(&e, len))?;
                (base, len, HugePageKind::None)
            }
        };
        assert_eq!(
            base.as_ptr() as usize % FRAME_ALIGN,
            0,
            "mmap memory must be page aligned"
        );
        let mut memory = FrameMemory {
            base,
            nframes,
            mapped_len,
            kind: requested,
            huge_bytes: 0,
        };
        memory.pre_touch();
        match requested {
            HugePageKind::Hugetlb => memory.huge_bytes = mapped_len,
            HugePageKind::Transparent => {
                memory.huge_bytes = match anon_huge_bytes(base.as_ptr() as usize, mapped_len) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        tracing::warn!(
                            "could not read /proc/self/smaps to check for transparent huge pages: {e}"
                        );
                        0
                    }
                };
                tracing::debug!(
                    "transparent huge pages: {} of {} kB of the buffer pool",
                    memory.huge_bytes / 1024,
                    mapped_len / 1024
                );
                if memory.huge_bytes == 0 {
                    memory.kind = HugePageKind::None;
                }
            }
            HugePageKind::None => {}
        }
        Ok(memory)
    }

    /// Write every 4 KiB page once (volatile, so the stores are not elided; the mapping is
    /// already zero, so the values do not change).
    fn pre_touch(&mut self) {
        for offset in (0..self.mapped_len).step_by(FRAME_ALIGN) {
            // SAFETY: offset < mapped_len, inside the mapping, which we own exclusively.
            unsafe { std::ptr::write_volatile(self.base.as_ptr().add(offset), 0) };
        }
    }

    pub fn nframes(&self) -> usize {
        self.nframes
    }

    /// What backs the frames: hugetlb pages, transparent huge pages (at least in part), or
    /// 4 KiB pages.
    pub fn huge_page_kind(&self) -> HugePageKind {
        self.kind
    }

    /// Bytes of the mapping in huge pages as measured at start-up: all of it for hugetlb,
    /// the kernel's `AnonHugePages` count for transparent huge pages, 0 otherwise.
    pub fn huge_page_bytes(&self) -> usize {
        self.huge_bytes
    }

    /// Length of the mapping in bytes (the frames rounded up to 2 MiB for huge pages).
    pub fn mapped_len(&self) -> usize {
        self.mapped_len
    }

    /// Pointer to the first byte of frame `index`; the frame is `BLCKSZ` bytes long.
    #[inline]
    pub fn frame_ptr(&self, index: usize) -> *mut u8 {
        assert!(
            index < self.nframes,
            "frame {index} out of range ({} frames)",
            self.nframes
        );
        // SAFETY: index < nframes, so the offset stays inside the mapping.
        unsafe { self.base.as_ptr().add(index * BLCKSZ) }
    }
}

impl Drop for FrameMemory {
    fn drop(&mut self) {
        // SAFETY: base/mapped_len describe exactly the mapping created in `allocate`, and no
        // frame reference outlives the pool that owns this memory.
        unsafe {
            libc::munmap(self.base.as_ptr() as *mut libc::c_void, self.mapped_len);
        }
    }
}

/// An anonymous private read-write mapping of `len` bytes with extra `flags`.
fn mmap_anonymous(len: usize, flags: libc::c_int) -> io::Result<NonNull<u8>> {
    // SAFETY: an anonymous private mapping with no address hint has no preconditions.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | flags,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    Ok(NonNull::new(ptr as *mut u8).expect("mmap returned a null mapping"))
}

/// `len` (a multiple of 2 MiB) bytes of 2 MiB hugetlb pages, reserved now: the kernel refuses
/// (ENOMEM) unless that many huge pages are free in `vm.nr_hugepages`.
fn map_hugetlb(len: usize) -> io::Result<NonNull<u8>> {
    debug_assert_eq!(len % HUGE_PAGE_SIZE, 0);
    mmap_anonymous(len, libc::MAP_HUGETLB | libc::MAP_HUGE_2MB)
}

/// `len` (a multiple of 2 MiB) bytes at a 2 MiB-aligned address, marked `MADV_HUGEPAGE`. Maps
/// 2 MiB more than needed and unmaps the unaligned head and the tail.
fn map_transparent(len: usize) -> io::Result<NonNull<u8>> {
    debug_assert_eq!(len % HUGE_PAGE_SIZE, 0);
    let over = len + HUGE_PAGE_SIZE;
    let raw = mmap_anonymous(over, 0)?.as_ptr() as usize;
    let aligned = raw.next_multiple_of(HUGE_PAGE_SIZE);
    let head = aligned - raw;
    let tail = over - head - len;
    // SAFETY: both ranges lie inside the mapping just created and nothing refers to them.
    unsafe {
        if head > 0 {
            libc::munmap(raw as *mut libc::c_void, head);
        }
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
    }
    // SAFETY: [aligned, aligned + len) is our mapping.
    if unsafe { libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE) } != 0 {
        // No THP in this kernel (EINVAL): the pages will be 4 KiB, which the measurement
        // after pre-touching reports.
        tracing::debug!(
            "madvise(MADV_HUGEPAGE) failed: {}",
            os_error_text(&io::Error::last_os_error())
        );
    }
    Ok(NonNull::new(aligned as *mut u8).expect("aligned address inside a mapping"))
}

/// `len` bytes of ordinary pages; with `no_huge`, asks the kernel not to use transparent huge
/// pages for them even when THP is in `always` mode.
fn map_plain(len: usize, no_huge: bool) -> io::Result<NonNull<u8>> {
    let base = mmap_anonymous(len, 0)?;
    if no_huge {
        // Failure (a kernel without THP) leaves what we asked for anyway: 4 KiB pages.
        // SAFETY: [base, base + len) is our mapping.
        unsafe {
            libc::madvise(
                base.as_ptr() as *mut libc::c_void,
                len,
                libc::MADV_NOHUGEPAGE,
            )
        };
    }
    Ok(base)
}

/// PostgreSQL's FATAL for a refused shared memory mapping of `size` bytes.
fn map_failure(e: &io::Error, size: usize) -> PgError {
    let error = PgError::fatal(
        sqlstate::INTERNAL_ERROR,
        format!(
            "could not map anonymous shared memory: {}",
            os_error_text(e)
        ),
    );
    if e.raw_os_error() == Some(libc::ENOMEM) {
        error.with_hint(format!(
            "This error usually means that PostgreSQL's request for a shared memory segment \
             exceeded available memory, swap space, or huge pages. To reduce the request size \
             (currently {size} bytes), reduce PostgreSQL's shared memory usage, perhaps by \
             reducing \"shared_buffers\" or \"max_connections\"."
        ))
    } else {
        error
    }
}

/// The system's message for an OS error without Rust's ` (os error N)` suffix, as
/// PostgreSQL's `%m` prints it.
fn os_error_text(e: &io::Error) -> String {
    let text = e.to_string();
    match e.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .unwrap_or(&text)
            .to_string(),
        None => text,
    }
}

/// Bytes in transparent huge pages (`AnonHugePages`) of the mappings in `/proc/self/smaps`
/// that overlap `[start, start + len)`. A kernel mapping (VMA) can be larger than ours when
/// the kernel merged it with a neighbour; its count is then capped at our length.
fn anon_huge_bytes(start: usize, len: usize) -> io::Result<usize> {
    let smaps = std::fs::read_to_string("/proc/self/smaps")?;
    Ok(anon_huge_bytes_in(&smaps, start, len))
}

fn anon_huge_bytes_in(smaps: &str, start: usize, len: usize) -> usize {
    let end = start + len;
    let mut overlapping = false;
    let mut total = 0usize;
    for line in smaps.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((lo, hi)) = first.split_once('-') {
            if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                overlapping = lo < end && start < hi;
                continue;
            }
        }
        if overlapping {
            if let Some(rest) = line.strip_prefix("AnonHugePages:") {
                let kb: usize = rest
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse()
                    .unwrap_or(0);
                total += kb * 1024;
            }
        }
    }
    total.min(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_frames(mem: &FrameMemory) {
        for i in 0..mem.nframes() {
            let p = mem.frame_ptr(i);
            assert_eq!(p as usize % FRAME_ALIGN, 0);
            let frame = unsafe { std::slice::from_raw_parts_mut(p, BLCKSZ) };
            assert!(frame.iter().all(|&b| b == 0));
            frame.fill((i % 251) as u8 + 1);
        }
        for i in 0..mem.nframes() {
            let frame = unsafe { std::slice::from_raw_parts(mem.frame_ptr(i), BLCKSZ) };
            assert!(frame.iter().all(|&b| b == (i % 251) as u8 + 1));
        }
    }

    /// Hugetlb pages a new mapping can reserve: free ones not already reserved by other
    /// mappings (`HugePages_Free − HugePages_Rsvd` in `/proc/meminfo`).
    fn free_hugetlb_pages() -> usize {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let field = |name: &str| -> usize {
            meminfo
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        field("HugePages_Free:").saturating_sub(field("HugePages_Rsvd:"))
    }

    #[test]
    fn frames_are_aligned_zeroed_and_disjoint() {
        let mem = FrameMemory::new(3);
        assert_eq!(mem.huge_page_kind(), HugePageKind::None);
        assert_eq!(mem.huge_page_bytes(), 0);
        assert_eq!(mem.mapped_len(), 3 * BLCKSZ);
        check_frames(&mem);
    }

    #[test]
    fn huge_pages_setting_parses() {
        for setting in [HugePages::Off, HugePages::On, HugePages::Try] {
            assert_eq!(setting.as_str().parse::<HugePages>(), Ok(setting));
        }
        assert!("maybe".parse::<HugePages>().is_err());
        assert!(HugePageKind::Hugetlb.is_huge());
        assert!(HugePageKind::Transparent.is_huge());
        assert!(!HugePageKind::None.is_huge());
    }

    /// `try` without hugetlb pages falls back to a 2 MiB-aligned THP mapping; whether the
    /// kernel backs it with huge pages depends on THP's mode and free memory, so only
    /// consistency and the alignment THP needs are asserted (THP `never` must give none).
    #[test]
    fn try_falls_back_to_transparent_huge_pages() {
        // 300 frames = 2.34 MiB: rounded up to 4 MiB, two huge pages.
        let mem = FrameMemory::allocate_steps(300, HugePages::Try, false).unwrap();
        check_frames(&mem);
        assert_eq!(mem.mapped_len(), 2 * HUGE_PAGE_SIZE);
        assert_eq!(
            mem.frame_ptr(0) as usize % HUGE_PAGE_SIZE,
            0,
            "THP needs 2 MiB alignment"
        );
        let kind = mem.huge_page_kind();
        assert_ne!(kind, HugePageKind::Hugetlb);
        assert_eq!(kind == HugePageKind::Transparent, mem.huge_page_bytes() > 0);
        assert!(mem.huge_page_bytes() <= mem.mapped_len());
        assert_eq!(mem.huge_page_bytes() % HUGE_PAGE_SIZE, 0);
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if thp.is_empty() || thp.contains("[never]") {
            assert_eq!(kind, HugePageKind::None);
        }
        println!(
            "huge_pages=try without hugetlb: {kind}, {} of {} bytes in huge pages (THP: {})",
            mem.huge_page_bytes(),
            mem.mapped_len(),
            thp.trim()
        );
    }

    #[test]
    fn off_never_uses_huge_pages() {
        let mem = FrameMemory::allocate(512, HugePages::Off).unwrap();
        check_frames(&mem);
        assert_eq!(mem.huge_page_kind(), HugePageKind::None);
        assert_eq!(mem.mapped_len(), 512 * BLCKSZ);
        // MADV_NOHUGEPAGE: nothing of the mapping is in transparent huge pages.
        assert_eq!(
            anon_huge_bytes(mem.frame_ptr(0) as usize, mem.mapped_len()).unwrap(),
            0
        );
    }

    /// `on` asking for more hugetlb pages than are free fails with PostgreSQL's message and
    /// hint. (hugetlb reserves at mmap time, so this costs no memory.)
    #[test]
    fn hugetlb_on_fails_like_postgres_without_enough_huge_pages() {
        let pages = free_hugetlb_pages() + 1;
        let frames = pages * HUGE_PAGE_SIZE / BLCKSZ;
        let err = FrameMemory::allocate(frames, HugePages::On)
            .err()
            .expect("huge_pages=on without enough huge pages must fail");
        assert_eq!(
            err.message,
            "could not map anonymous shared memory: Cannot allocate memory"
        );
        assert_eq!(err.severity, iolab_catalog::error::Severity::Fatal);
        assert_eq!(
            err.hint.as_deref(),
            Some(
                format!(
                    "This error usually means that PostgreSQL's request for a shared memory \
                     segment exceeded available memory, swap space, or huge pages. To reduce \
                     the request size (currently {} bytes), reduce PostgreSQL's shared memory \
                     usage, perhaps by reducing \"shared_buffers\" or \"max_connections\".",
                    pages * HUGE_PAGE_SIZE
                )
                .as_str()
            )
        );
    }

    /// hugetlb needs reserved pages (`echo N > /proc/sys/vm/nr_hugepages`); skipped with a
    /// note without at least two free ones.
    #[test]
    fn hugetlb_when_the_kernel_has_huge_pages() {
        for setting in [HugePages::On, HugePages::Try] {
            let free = free_hugetlb_pages();
            if free < 2 {
                println!(
                    "skipped hugetlb ({setting:?}): {free} free hugetlb pages (vm.nr_hugepages)"
                );
                return;
            }
            let mem = match FrameMemory::allocate(300, setting) {
                Ok(mem) => mem,
                // Another process took the pages meanwhile.
                Err(e) if free_hugetlb_pages() < 2 => {
                    println!(
                        "skipped hugetlb ({setting:?}): pages taken meanwhile ({})",
                        e.message
                    );
                    return;
                }
                Err(e) => panic!("{}", e.message),
            };
            if setting == HugePages::Try && mem.huge_page_kind() != HugePageKind::Hugetlb {
                println!("skipped hugetlb (Try): pages taken meanwhile");
                return;
            }
            assert_eq!(mem.huge_page_kind(), HugePageKind::Hugetlb);
            assert_eq!(mem.mapped_len(), 2 * HUGE_PAGE_SIZE);
            assert_eq!(mem.huge_page_bytes(), mem.mapped_len());
            assert_eq!(mem.frame_ptr(0) as usize % HUGE_PAGE_SIZE, 0);
            check_frames(&mem);
        }
    }

    #[test]
    fn smaps_parsing_counts_only_overlapping_mappings() {
        let smaps = "\
00400000-00600000 r-xp 00000000 fd:00 123   /usr/bin/iolab
Size:               2048 kB
AnonHugePages:      2048 kB
7f0000000000-7f0000400000 rw-p 00000000 00:00 0
Size:               4096 kB
AnonHugePages:      2048 kB
VmFlags: rd wr mr mw me ac hg
7f0000400000-7f0000600000 rw-p 00000000 00:00 0
AnonHugePages:      2048 kB
";
        assert_eq!(
            anon_huge_bytes_in(smaps, 0x7f00_0000_0000, 0x40_0000),
            2048 * 1024
        );
        assert_eq!(
            anon_huge_bytes_in(smaps, 0x7f00_0000_0000, 0x60_0000),
            4096 * 1024
        );
        // Capped at our length when a merged mapping reports more.
        assert_eq!(anon_huge_bytes_in(smaps, 0x7f00_0010_0000, 0x1000), 0x1000);
        assert_eq!(anon_huge_bytes_in(smaps, 0x1000, 0x1000), 0);
    }
}
