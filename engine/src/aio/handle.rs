//! AIO handles: the server-wide table of I/Os in flight, each moving through PostgreSQL 18's
//! states, and the rows of `pg_aios`.
//!
//! A handle carries one read (a [`PendingRead`]: consecutive blocks whose buffers the issuer
//! pinned and marked `IO_IN_PROGRESS`) from the moment the issuer acquires it until the
//! issuer has the result. Its state goes, as in PostgreSQL 18:
//!
//! ```text
//!   IDLE ─acquire─▶ HANDED_OUT ─define─▶ DEFINED ─stage─▶ STAGED ─submit─▶ SUBMITTED
//!     ▲                                                                       │ the I/O ran
//!     │                                                                       ▼
//!     └─reclaim (generation+1)─ COMPLETED_LOCAL ◀─issuer─ COMPLETED_SHARED ◀─ COMPLETED_IO
//!                                                 takes    (pages verified,   (raw result
//!                                                 result    buffers valid,      known)
//!                                                           waiters woken)
//! ```
//!
//! Whoever executes the I/O — the issuing thread itself (`sync`, or a full worker queue) or
//! an I/O worker thread — calls [`HandleTable::complete`], which records the raw result and
//! runs the shared completion (page verification, buffers made valid or unmapped) under one
//! lock. An io_uring completion is split in two: reaping it only records the raw result
//! ([`complete_io`](HandleTable::complete_io), COMPLETED_IO), and the issuer runs the shared
//! completion ([`complete_shared`](HandleTable::complete_shared)) when it waits for the read,
//! right before its consumer reads the pages — one pass over them through the CPU's caches
//! instead of a checksum pass long before (up to 16 MiB of read-ahead earlier, by then evicted)
//! and a second pass from memory. Until then the buffers stay `IO_IN_PROGRESS`: another thread
//! that wants one of those blocks waits, and never sees an unverified page as valid. The
//! issuer then [`reclaim`](HandleTable::reclaim)s the handle:
//! it gets the read back with its outcome, and the handle returns to IDLE with its generation
//! incremented, so an [`IoRef`] kept from before can never be confused with a later I/O.
//!
//! # Bounds
//!
//! The table has a fixed number of handles (`io_max_concurrency` per possible issuer, set at
//! start-up); each issuer also keeps itself to `io_max_concurrency` I/Os in flight. A free
//! list (a `Vec` allocated once with room for every handle) hands them out; an issuer that
//! finds none free waits until one is reclaimed. Each handle's mutex is held only for state
//! changes and page verification, never during the I/O itself, so `pg_aios` can always read
//! it.

use std::os::unix::io::RawFd;
use std::time::{Duration, Instant};

use iolab_catalog::PgError;
use parking_lot::{Condvar, Mutex};

use iolab_stats::{AioOperation, AioResultStatus, AioRow, AioState};

use crate::buffer::PendingRead;
use crate::storage::page::BLCKSZ;

/// PostgreSQL 18's handle states, in order (names as `pg_aios.state` shows them).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum HandleState {
    Idle,
    HandedOut,
    Defined,
    Staged,
    Submitted,
    CompletedIo,
    CompletedShared,
    CompletedLocal,
}

impl HandleState {
    pub fn name(self) -> &'static str {
        match self {
            HandleState::Idle => "IDLE",
            HandleState::HandedOut => "HANDED_OUT",
            HandleState::Defined => "DEFINED",
            HandleState::Staged => "STAGED",
            HandleState::Submitted => "SUBMITTED",
            HandleState::CompletedIo => "COMPLETED_IO",
            HandleState::CompletedShared => "COMPLETED_SHARED",
            HandleState::CompletedLocal => "COMPLETED_LOCAL",
        }
    }
}

/// A reference to one use of a handle: its index and the generation it had then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoRef {
    pub id: u32,
    pub generation: u64,
}

impl IoRef {
    /// Packed into an io_uring `user_data`: index in the low 32 bits, the generation's low
    /// 32 bits above (enough to tell a stale completion from a current one).
    pub fn user_data(self) -> u64 {
        (self.generation << 32) | self.id as u64
    }
}

/// What the issuer gets back when it reclaims a completed handle.
pub struct Completed {
    pub read: PendingRead,
    /// The first error of the I/O or of verifying its pages.
    pub error: Option<PgError>,
    /// Submission → completion.
    pub latency: Duration,
    /// Whether another thread than the issuer completed it.
    pub completed_elsewhere: bool,
    /// Whether an I/O worker advised the kernel of it while it was queued.
    pub advised_by_worker: bool,
}

struct Inner {
    state: HandleState,
    generation: u64,
    owner_pid: i32,
    owner_thread: Option<std::thread::ThreadId>,
    read: Option<PendingRead>,
    fd: RawFd,
    offset: u64,
    length: usize,
    target_desc: String,
    f_sync: bool,
    f_buffered: bool,
    /// An I/O worker may advise the kernel of this read while it waits in the queue.
    advisable: bool,
    advised_by_worker: bool,
    raw_result: Option<i32>,
    error: Option<PgError>,
    submitted_at: Option<Instant>,
    latency: Duration,
    completed_elsewhere: bool,
}

impl Inner {
    /// SUBMITTED → COMPLETED_IO: the raw result (bytes or −errno) and the latency.
    fn record_io(&mut self, r: IoRef, result: &std::io::Result<usize>) {
        assert_eq!(
            self.state,
            HandleState::Submitted,
            "completing handle {}",
            r.id
        );
        self.raw_result = Some(match result {
            Ok(n) => (*n).min(i32::MAX as usize) as i32,
            Err(e) => -e.raw_os_error().unwrap_or(libc::EIO),
        });
        self.state = HandleState::CompletedIo;
        self.latency = self.submitted_at.map_or(Duration::ZERO, |t| t.elapsed());
        self.completed_elsewhere = self.owner_thread != Some(std::thread::current().id());
    }

    /// COMPLETED_IO → COMPLETED_SHARED: finish the read. A short read (fewer bytes, no
    /// error) is first continued synchronously, as PostgreSQL re-issues the rest; then every
    /// page is verified and its buffer made valid, or unmapped.
    fn finish_shared(&mut self, r: IoRef, result: std::io::Result<usize>) {
        assert_eq!(
            self.state,
            HandleState::CompletedIo,
            "shared completion of handle {}",
            r.id
        );
        let result = match result {
            Ok(n) if n > 0 && n < self.length => {
                let mut iovecs = self.read.as_ref().expect("completed handle").iovecs();
                crate::buffer::preadv_fully(self.fd, self.offset + n as u64, {
                    skip_bytes(&mut iovecs, n)
                })
                .map(|more| n + more)
            }
            other => other,
        };
        let mut read = self.read.take().expect("completed handle");
        self.error = read.finish(result).err();
        self.read = Some(read);
        self.state = HandleState::CompletedShared;
    }
}

/// A raw I/O result as the kernel reports it (bytes, or −errno) as a `Result`.
pub(crate) fn io_result(raw: i32) -> std::io::Result<usize> {
    if raw < 0 {
        Err(std::io::Error::from_raw_os_error(-raw))
    } else {
        Ok(raw as usize)
    }
}

struct Slot {
    inner: Mutex<Inner>,
    /// Signalled when the handle reaches COMPLETED_SHARED.
    done: Condvar,
}

/// The server-wide table of AIO handles. See the module comment.
pub struct HandleTable {
    slots: Box<[Slot]>,
    free: Mutex<Vec<u32>>,
    freed: Condvar,
}

impl HandleTable {
    pub fn new(nhandles: usize) -> HandleTable {
        assert!(nhandles >= 1 && nhandles <= u32::MAX as usize);
        let slots = (0..nhandles)
            .map(|_| Slot {
                inner: Mutex::new(Inner {
                    state: HandleState::Idle,
                    generation: 1,
                    owner_pid: 0,
                    owner_thread: None,
                    read: None,
                    fd: -1,
                    offset: 0,
                    length: 0,
                    target_desc: String::new(),
                    f_sync: false,
                    f_buffered: true,
                    advisable: false,
                    advised_by_worker: false,
                    raw_result: None,
                    error: None,
                    submitted_at: None,
                    latency: Duration::ZERO,
                    completed_elsewhere: false,
                }),
                done: Condvar::new(),
            })
            .collect();
        HandleTable {
            slots,
            free: Mutex::new((0..nhandles as u32).rev().collect()),
            freed: Condvar::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    fn slot(&self, r: IoRef) -> parking_lot::MutexGuard<'_, Inner> {
        let inner = self.slots[r.id as usize].inner.lock();
        assert_eq!(
            inner.generation, r.generation,
            "stale reference to AIO handle {}",
            r.id
        );
        inner
    }

    /// The generation handle `id` has now (to rebuild an [`IoRef`] from a completion).
    pub fn current_generation(&self, id: u32) -> u64 {
        self.slots[id as usize].inner.lock().generation
    }

    /// Take an idle handle (HANDED_OUT), or `None` if every handle is in use.
    pub fn try_acquire(&self, pid: i32) -> Option<IoRef> {
        let id = self.free.lock().pop()?;
        let mut inner = self.slots[id as usize].inner.lock();
        assert_eq!(inner.state, HandleState::Idle, "free handle {id} not idle");
        inner.state = HandleState::HandedOut;
        inner.owner_pid = pid;
        inner.owner_thread = Some(std::thread::current().id());
        Some(IoRef {
            id,
            generation: inner.generation,
        })
    }

    /// Wait up to `timeout` for a handle to be reclaimed somewhere.
    pub fn wait_for_free(&self, timeout: Duration) {
        let mut free = self.free.lock();
        if free.is_empty() {
            self.freed.wait_for(&mut free, timeout);
        }
    }

    /// Attach `read` (DEFINED). `f_sync`: it will be executed synchronously by the issuer;
    /// `advisable`: an I/O worker may advise the kernel of it while it is queued.
    pub fn define(
        &self,
        r: IoRef,
        read: PendingRead,
        f_sync: bool,
        f_buffered: bool,
        advisable: bool,
    ) {
        let (fd, offset) = read.fd_and_offset().unwrap_or((-1, 0));
        let mut inner = self.slot(r);
        assert_eq!(inner.state, HandleState::HandedOut);
        inner.fd = fd;
        inner.offset = offset;
        inner.length = read.len_bytes();
        inner.target_desc = read.target_desc();
        inner.f_sync = f_sync;
        inner.f_buffered = f_buffered;
        assert!(!advisable || f_buffered, "a direct read is never advised");
        inner.advisable = advisable && fd >= 0;
        inner.advised_by_worker = false;
        inner.raw_result = None;
        inner.error = None;
        inner.completed_elsewhere = false;
        inner.read = Some(read);
        inner.state = HandleState::Defined;
    }

    /// DEFINED → STAGED: ready to be submitted with the next batch.
    pub fn stage(&self, r: IoRef) {
        let mut inner = self.slot(r);
        assert_eq!(inner.state, HandleState::Defined);
        inner.state = HandleState::Staged;
    }

    /// STAGED → SUBMITTED.
    pub fn submit(&self, r: IoRef) {
        let mut inner = self.slot(r);
        assert_eq!(inner.state, HandleState::Staged);
        inner.state = HandleState::Submitted;
        inner.submitted_at = Some(Instant::now());
    }

    /// STAGED → SUBMITTED, returning what the kernel needs: file, offset, target memory.
    pub fn submit_to_kernel(&self, r: IoRef) -> (RawFd, u64, Vec<libc::iovec>) {
        self.submit(r);
        let inner = self.slot(r);
        let iovecs = inner.read.as_ref().expect("defined handle").iovecs();
        (inner.fd, inner.offset, iovecs)
    }

    /// An I/O worker is about to advise the kernel of `r`: its file, offset and length if
    /// it is still a submitted, advisable read (`None` once it has run, or if the handle has
    /// since been reused for another I/O). The read is then counted as advised.
    pub fn take_advice_range(&self, r: IoRef) -> Option<(RawFd, u64, usize)> {
        let mut inner = self.slots[r.id as usize].inner.lock();
        let advisable = inner.generation == r.generation
            && inner.state == HandleState::Submitted
            && inner.advisable;
        inner.advised_by_worker |= advisable;
        advisable.then_some((inner.fd, inner.offset, inner.length))
    }

    /// Run a submitted I/O on this thread (an I/O worker, or an issuer doing it itself).
    pub fn execute(&self, r: IoRef) {
        let (fd, offset, mut iovecs) = {
            let inner = self.slot(r);
            assert_eq!(inner.state, HandleState::Submitted);
            let read = inner.read.as_ref().expect("submitted handle");
            (inner.fd, inner.offset, read.iovecs())
        };
        let result = if fd < 0 {
            Err(std::io::Error::from_raw_os_error(libc::EBADF))
        } else {
            crate::buffer::preadv_fully(fd, offset, &mut iovecs)
        };
        self.complete(r, result);
    }

    /// Record the raw result and run the shared completion at once, under one lock
    /// (SUBMITTED → COMPLETED_IO → COMPLETED_SHARED): for an I/O that ran on this thread or
    /// in an I/O worker.
    pub fn complete(&self, r: IoRef, result: std::io::Result<usize>) {
        let mut inner = self.slot(r);
        inner.record_io(r, &result);
        inner.finish_shared(r, result);
        self.slots[r.id as usize].done.notify_all();
    }

    /// SUBMITTED → COMPLETED_IO only: record the raw result and the latency (an io_uring
    /// completion, reaped). The buffers stay `IO_IN_PROGRESS` — not valid, not verified —
    /// until the issuer runs [`complete_shared`](Self::complete_shared), so a reader waiting
    /// for one of them keeps waiting.
    pub fn complete_io(&self, r: IoRef, result: std::io::Result<usize>) {
        self.slot(r).record_io(r, &result);
    }

    /// COMPLETED_IO → COMPLETED_SHARED for an I/O recorded with
    /// [`complete_io`](Self::complete_io): verify its pages, publish or unmap its buffers.
    pub fn complete_shared(&self, r: IoRef) {
        let mut inner = self.slot(r);
        let raw = inner.raw_result.expect("an I/O recorded with complete_io");
        inner.finish_shared(r, io_result(raw));
        drop(inner);
        self.slots[r.id as usize].done.notify_all();
    }

    /// Whether the I/O itself has finished (COMPLETED_IO or later).
    pub fn is_io_done(&self, r: IoRef) -> bool {
        self.slot(r).state >= HandleState::CompletedIo
    }

    /// Whether the I/O has completed (COMPLETED_SHARED or later).
    pub fn is_complete(&self, r: IoRef) -> bool {
        self.slot(r).state >= HandleState::CompletedShared
    }

    /// Block until the I/O has completed.
    pub fn wait_complete(&self, r: IoRef) {
        let slot = &self.slots[r.id as usize];
        let mut inner = self.slot(r);
        while inner.state < HandleState::CompletedShared {
            slot.done.wait(&mut inner);
        }
    }

    /// The issuer takes the outcome (COMPLETED_LOCAL) and frees the handle (IDLE,
    /// generation + 1).
    pub fn reclaim(&self, r: IoRef) -> Completed {
        let completed = {
            let mut inner = self.slot(r);
            assert_eq!(inner.state, HandleState::CompletedShared);
            inner.state = HandleState::CompletedLocal;
            let completed = Completed {
                read: inner.read.take().expect("completed handle keeps its read"),
                error: inner.error.take(),
                latency: inner.latency,
                completed_elsewhere: inner.completed_elsewhere,
                advised_by_worker: inner.advised_by_worker,
            };
            inner.generation += 1;
            inner.state = HandleState::Idle;
            inner.owner_thread = None;
            inner.submitted_at = None;
            completed
        };
        self.free.lock().push(r.id);
        self.freed.notify_one();
        completed
    }

    /// Give back a handle that was acquired but never defined.
    pub fn release(&self, r: IoRef) {
        {
            let mut inner = self.slot(r);
            assert_eq!(inner.state, HandleState::HandedOut);
            inner.generation += 1;
            inner.state = HandleState::Idle;
            inner.owner_thread = None;
        }
        self.free.lock().push(r.id);
        self.freed.notify_one();
    }

    /// Every non-idle handle, each copied under its own lock (`pg_aios`).
    pub fn rows(&self) -> Vec<AioRow> {
        let mut rows = Vec::new();
        for (id, slot) in self.slots.iter().enumerate() {
            let inner = slot.inner.lock();
            let state = match inner.state {
                HandleState::Idle => continue,
                HandleState::HandedOut => AioState::HandedOut,
                HandleState::Defined => AioState::Defined,
                HandleState::Staged => AioState::Staged,
                HandleState::Submitted => AioState::Submitted,
                HandleState::CompletedIo => AioState::CompletedIo,
                HandleState::CompletedShared => AioState::CompletedShared,
                HandleState::CompletedLocal => AioState::CompletedLocal,
            };
            let defined = inner.state > HandleState::HandedOut;
            let result = if inner.state < HandleState::CompletedShared {
                AioResultStatus::Unknown
            } else if inner.error.is_some() {
                AioResultStatus::Error
            } else {
                AioResultStatus::Ok
            };
            rows.push(AioRow {
                pid: Some(inner.owner_pid),
                io_id: id as i32,
                io_generation: inner.generation as i64,
                state,
                operation: if defined {
                    AioOperation::Readv
                } else {
                    AioOperation::Invalid
                },
                off: inner.offset as i64,
                length: inner.length as i64,
                target: "smgr".to_string(),
                handle_data_len: (inner.length / BLCKSZ) as i16,
                raw_result: inner.raw_result.unwrap_or(0),
                result,
                target_desc: inner.target_desc.clone(),
                f_sync: inner.f_sync,
                f_localmem: false,
                f_buffered: inner.f_buffered,
            });
        }
        rows
    }
}

/// Drop the first `n` bytes from `iovecs` (whole vectors, then part of one); returns the
/// remaining slice.
fn skip_bytes(iovecs: &mut [libc::iovec], mut n: usize) -> &mut [libc::iovec] {
    let mut first = 0;
    while n > 0 && first < iovecs.len() {
        let v = &mut iovecs[first];
        if n >= v.iov_len {
            n -= v.iov_len;
            first += 1;
        } else {
            // SAFETY: advancing within the same buffer.
            v.iov_base = unsafe { (v.iov_base as *mut u8).add(n) } as *mut libc::c_void;
            v.iov_len -= n;
            n = 0;
        }
    }
    &mut iovecs[first..]
}
