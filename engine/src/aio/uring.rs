//! One io_uring per I/O-issuing thread: the lowest layer of `io_method = io_uring`.
//!
//! # What it does
//!
//! PostgreSQL 18's `method_io_uring.c` gives every backend its own ring of
//! `io_max_concurrency` entries. A backend stages I/Os, turns each into one submission queue
//! entry (SQE) — a plain `read` when the I/O has one iovec, a `readv` otherwise — hands the
//! whole batch to the kernel with one `io_uring_enter`, and later collects completion queue
//! entries (CQEs) carrying "bytes transferred or −errno". [`UringQueue`] is that ring for one
//! iolab thread; [`with_thread_queue`] keeps one per thread, created on first use, because
//! iolab's scans run on pooled blocking threads where PostgreSQL has processes. Deciding
//! *what* to read, into which buffers, and what a completion means belongs to the caller (the
//! AIO layer in `aio/mod.rs`); this file only moves SQEs in and CQEs out, and counts system
//! calls.
//!
//! # Life of one I/O
//!
//! ```text
//!   push_readv ──► Queued ──submit──► InFlight ──(kernel)──► CQE ready ──reap──► Free
//!   no syscall     in the SQ    io_uring_enter   kernel owns   in the CQ     no syscall,
//!                  ring only                     the buffers   ring          slot reusable
//! ```
//!
//! Every I/O occupies one *slot* from push until its completion is reaped. A slot's index is
//! the `user_data` the kernel sees; the slot remembers the caller's own `user_data` and gives
//! it back from [`UringQueue::reap`]. Two bounds, both fixed at creation:
//!
//! ```text
//!   queued()                 ≤ entries         (= io_max_concurrency ≤ MAX_ENTRIES)
//!   queued() + in_flight()   ≤ max_outstanding (= CQ_PER_SQ × entries = the CQ ring size)
//! ```
//!
//! [`UringQueue::push_readv`] returns [`QueueFull`] when either is reached. The first is
//! PostgreSQL's: a backend never stages more than `io_max_concurrency` I/Os, and a full SQ is
//! cured by submitting. The second exists because iolab may keep several scans' I/O in flight
//! on one thread's ring; it is cured only by waiting for and reaping completions
//! ([`QueueFull::must_reap`]). Together they mean neither ring can overflow: the kernel's SQ
//! ring has at least `entries` entries (rounded up to a power of two), and its CQ ring has
//! room for every outstanding I/O's CQE, so the kernel never has to hold completions back
//! (`IORING_SQ_CQ_OVERFLOW` never happens and `reap` never needs a syscall to flush them).
//!
//! # What memory the kernel reads, and until when
//!
//! * **The SQE** is copied by the kernel during `io_uring_enter`.
//! * **The iovec array** of a `readv`: with `IORING_FEAT_SUBMIT_STABLE` (Linux 5.5+) the kernel
//!   has imported the array before `io_uring_enter` returns; older kernels could read it later
//!   from a worker thread. This queue does not rely on either: it *copies* the caller's iovecs
//!   into the slot and keeps the copy until the CQE is reaped, so the caller's slice may be a
//!   temporary. The copy lives in a `Vec` per slot whose heap buffer is not touched while the
//!   slot is busy (it is cleared and refilled only when the slot is reused).
//! * **The data buffers** the iovecs point at, and **the file descriptor**, are used until the
//!   I/O completes. The queue cannot own those; that is the `unsafe` contract of
//!   [`UringQueue::push_readv`]: keep them valid until the completion is reaped (or the queue
//!   is dropped, which waits). Like PostgreSQL's `wait_on_fd_before_close`, do not close an fd
//!   with I/O in flight.
//!
//! # Results
//!
//! A completion's result is what `preadv(2)` would return: bytes read (fewer than asked at end
//! of file — and in principle for any partial read, which the caller should reissue for the
//! rest as PostgreSQL does), or `-errno` (`-EBADF`, `-EIO`, `-EINVAL` for misaligned
//! `O_DIRECT`, `-ECANCELED` if cancelled).
//!
//! # System calls and what is counted ([`UringStats`])
//!
//! `push_readv` and `reap` never enter the kernel. `submit` makes one `io_uring_enter` for the
//! whole batch (retrying after `EINTR`); `submit_and_wait` makes one that both submits and
//! waits, and none at all when nothing is queued and enough completions are already in the CQ
//! ring. Every `io_uring_enter` is counted in `enter_syscalls`; those that carried SQEs also
//! in `submit_syscalls`, those that waited also in `wait_syscalls` (so one `submit_and_wait`
//! call can count in both). `async_hint` sets `IOSQE_ASYNC`: PostgreSQL does so for buffered
//! I/O once more than 4 I/Os are in flight, so that page-cache copies run in parallel on the
//! kernel's io-wq threads instead of one after another inside `io_uring_enter`.
//!
//! # Ring set-up
//!
//! A plain interrupt-driven ring (no SQPOLL, no IOPOLL, no DEFER_TASKRUN — the latter would
//! post CQEs only when this thread enters the kernel, and `reap` promises to work without a
//! syscall). `IORING_SETUP_SUBMIT_ALL` (5.18+) is asked for so that one bad SQE does not stop
//! the rest of a batch from being submitted; on older kernels the queue simply submits the
//! remainder in another `io_uring_enter`. The ring's io-wq (the kernel threads that run
//! `IOSQE_ASYNC` reads) may use as many bounded workers as the ring has entries
//! (`IORING_REGISTER_IOWQ_MAX_WORKERS`, 5.15+; best effort): the kernel's default,
//! 4 × CPUs, is 8 threads on a 2-CPU machine, which caps punted buffered reads at 8 in
//! flight however deep the read stream looks ahead. [`probe`] tells at start-up whether io_uring can be
//! used at all and, if not, why ([`describe_setup_error`]).
//!
//! # Dropping a queue
//!
//! The kernel may still write into the caller's buffers while I/O is in flight, so `Drop`
//! first asks the kernel to cancel everything in flight (`IORING_REGISTER_SYNC_CANCEL`, 6.0+,
//! best effort: reads that are waiting — on a pipe, or punted to io-wq and not started yet —
//! complete with `-ECANCELED`, one already copying data just finishes) and then waits until
//! every in-flight I/O has completed. SQEs that were pushed but never submitted are discarded: they
//! never reach the kernel. If waiting fails with anything but `EINTR`, the process aborts —
//! returning would let the kernel write into freed memory (PostgreSQL PANICs in the same
//! spot).
//!
//! # Not here (yet)
//!
//! Writes, `fadvise`, registered (fixed) buffers and files, SQPOLL, and letting another thread
//! drain this ring's completions (PostgreSQL lets any backend do that under a lock).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types, EnterFlags, IoUring, Probe};

/// Upper bound on a queue's `entries` (PostgreSQL's `io_max_concurrency` stops at 1024).
pub const MAX_ENTRIES: u32 = 4096;

/// CQ ring entries per SQ entry, and so the bound on outstanding (queued + in-flight) I/Os
/// per `entries`. The kernel's default is 2; 4 lets a thread keep a few scans' I/O in
/// flight, at 16 bytes per CQE.
pub const CQ_PER_SQ: u32 = 4;

/// Upper bound on iovecs per I/O: the kernel's `UIO_MAXIOV` (a larger `readv` fails with
/// `EINVAL`). A slot's iovec copy grows to the largest count it has carried and is kept, so a
/// queue's iovec storage is at most `max_outstanding × MAX_IOVECS_PER_IO × 16` bytes; with
/// iolab's largest read of 128 blocks in separate frames it is 2 KiB per slot.
pub const MAX_IOVECS_PER_IO: usize = 1024;

/// `push_readv` could not queue the I/O. If `must_reap` is false, `entries` SQEs are queued:
/// [`UringQueue::submit`] and push again. If `must_reap` is true, `max_outstanding` I/Os are
/// queued or in flight: submitting does not help — wait for completions
/// ([`UringQueue::submit_and_wait`]) and [`UringQueue::reap`] them first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFull {
    pub queued: usize,
    pub in_flight: usize,
    pub must_reap: bool,
}

impl fmt::Display for QueueFull {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.must_reap {
            "too many I/Os outstanding"
        } else {
            "submission queue is full"
        };
        write!(
            f,
            "io_uring {what} ({} queued, {} in flight)",
            self.queued, self.in_flight
        )
    }
}

impl std::error::Error for QueueFull {}

/// Counters of one queue since it was created (see the top of this file for their meaning).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UringStats {
    /// Every `io_uring_enter` made by this queue.
    pub enter_syscalls: u64,
    /// `io_uring_enter` calls that carried at least one SQE.
    pub submit_syscalls: u64,
    /// SQEs the kernel has consumed.
    pub sqes_submitted: u64,
    /// SQEs pushed with `IOSQE_ASYNC`.
    pub async_sqes: u64,
    /// `io_uring_enter` calls that waited for completions (`min_complete > 0`).
    pub wait_syscalls: u64,
    /// Completions handed to the caller by `reap`.
    pub completions_reaped: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SlotState {
    Free,
    /// Pushed into the SQ ring, not yet consumed by the kernel.
    Queued,
    /// Consumed by the kernel; its CQE has not been reaped.
    InFlight,
}

struct Slot {
    state: SlotState,
    /// The caller's identifier, returned by `reap`.
    user_data: u64,
    /// Copy of a `readv`'s iovec array (empty for a plain `read`), kept until reaped.
    iovecs: Vec<libc::iovec>,
}

/// One io_uring owned by one thread (see the top of this file).
///
/// `Send` (a queue may be created on one thread and handed to another) but not `Sync`: the
/// SQ and CQ rings are used without locks.
pub struct UringQueue {
    ring: IoUring,
    /// Bound on `queued` (the SQ ring has at least this many entries).
    entries: usize,
    /// `max_outstanding` slots; the index is the SQE's `user_data`. Never resized.
    slots: Box<[Slot]>,
    /// Indexes of free slots (a stack: recently used slots, and their iovec copies, are warm).
    free: Vec<u32>,
    /// Indexes of queued slots in push order; the kernel consumes SQEs in this order.
    queued: VecDeque<u32>,
    in_flight: usize,
    stats: UringStats,
    _not_sync: PhantomData<Cell<()>>,
}

// SAFETY: the raw pointers a queue holds (iovec copies, and the ring's mappings inside
// `IoUring`, which is itself `Send`) are not tied to the creating thread; the caller's
// `push_readv` contract covers the memory they point to, whichever thread reaps.
unsafe impl Send for UringQueue {}

impl UringQueue {
    /// Creates a ring for up to `entries` queued I/Os (`1..=MAX_ENTRIES`) and up to
    /// `CQ_PER_SQ × entries` outstanding ones. Errors are the kernel's;
    /// [`describe_setup_error`] turns them into advice.
    pub fn new(entries: u32) -> io::Result<UringQueue> {
        if entries == 0 || entries > MAX_ENTRIES {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("io_uring queue size {entries} is outside 1..={MAX_ENTRIES}"),
            ));
        }
        let max_outstanding = entries * CQ_PER_SQ;
        let ring = match IoUring::builder()
            .setup_cqsize(max_outstanding)
            .setup_submit_all()
            .build(entries)
        {
            Ok(ring) => ring,
            // Kernels before 5.18 reject the SUBMIT_ALL flag.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => IoUring::builder()
                .setup_cqsize(max_outstanding)
                .build(entries)?,
            Err(e) => return Err(e),
        };
        // Best effort (older kernels refuse it; io-wq then keeps its default bound).
        let _ = ring
            .submitter()
            .register_iowq_max_workers(&mut [entries, 0]);
        let params = ring.params();
        assert!(
            params.sq_entries() >= entries && params.cq_entries() >= max_outstanding,
            "kernel gave smaller rings ({} SQ / {} CQ entries) than asked for ({entries} / \
             {max_outstanding})",
            params.sq_entries(),
            params.cq_entries()
        );
        let slots = (0..max_outstanding)
            .map(|_| Slot {
                state: SlotState::Free,
                user_data: 0,
                iovecs: Vec::new(),
            })
            .collect();
        Ok(UringQueue {
            ring,
            entries: entries as usize,
            slots,
            free: (0..max_outstanding).rev().collect(),
            queued: VecDeque::with_capacity(entries as usize),
            in_flight: 0,
            stats: UringStats::default(),
            _not_sync: PhantomData,
        })
    }

    /// Queues a read of `iovecs` from `fd` at `offset` without entering the kernel: a plain
    /// `read` SQE for one iovec, a `readv` otherwise. `user_data` comes back from
    /// [`reap`](Self::reap) with the result. `async_hint` sets `IOSQE_ASYNC` (punt straight
    /// to the kernel's worker threads; PostgreSQL does it for buffered I/O when more than 4
    /// I/Os are in flight).
    ///
    /// Fails with [`QueueFull`] when `entries` I/Os are queued (submit first) or
    /// `max_outstanding` are queued or in flight (reap first). The iovec array is copied;
    /// `iovecs` may be dropped as soon as this returns.
    /// Panics if `iovecs` is empty or longer than [`MAX_IOVECS_PER_IO`], if a single iovec is
    /// 4 GiB or longer, or if `offset` is above `i64::MAX` (the kernel reads −1 as "current
    /// file position").
    ///
    /// # Safety
    ///
    /// Until this I/O's completion has been reaped (or the queue dropped): the memory each
    /// iovec describes must stay valid for writes and not be accessed otherwise, and `fd`
    /// must stay open and refer to the same file.
    pub unsafe fn push_readv(
        &mut self,
        user_data: u64,
        fd: RawFd,
        offset: u64,
        iovecs: &[libc::iovec],
        async_hint: bool,
    ) -> Result<(), QueueFull> {
        assert!(
            !iovecs.is_empty() && iovecs.len() <= MAX_IOVECS_PER_IO,
            "a read needs 1..={MAX_IOVECS_PER_IO} iovecs, got {}",
            iovecs.len()
        );
        assert!(
            offset <= i64::MAX as u64,
            "file offset {offset} is out of range"
        );
        if self.queued.len() == self.entries {
            return Err(self.full(false));
        }
        let Some(index) = self.free.pop() else {
            return Err(self.full(true));
        };
        let slot = &mut self.slots[index as usize];
        debug_assert_eq!(slot.state, SlotState::Free);
        slot.user_data = user_data;
        slot.iovecs.clear();
        let entry = if let [iov] = iovecs {
            let len = u32::try_from(iov.iov_len).expect("a single read is limited to 4 GiB");
            opcode::Read::new(types::Fd(fd), iov.iov_base.cast(), len)
                .offset(offset)
                .build()
        } else {
            slot.iovecs.extend_from_slice(iovecs);
            opcode::Readv::new(types::Fd(fd), slot.iovecs.as_ptr(), iovecs.len() as u32)
                .offset(offset)
                .build()
        };
        let flags = if async_hint {
            squeue::Flags::ASYNC
        } else {
            squeue::Flags::empty()
        };
        let entry = entry.user_data(u64::from(index)).flags(flags);
        // SAFETY: the iovec copy lives in the slot until the CQE is reaped; the buffers and
        // fd are covered by this function's contract.
        let pushed = unsafe { self.ring.submission().push(&entry) };
        assert!(pushed.is_ok(), "SQ ring full although a slot was free");
        slot.state = SlotState::Queued;
        self.queued.push_back(index);
        if async_hint {
            self.stats.async_sqes += 1;
        }
        self.check_invariants();
        Ok(())
    }

    /// Submits everything queued with one `io_uring_enter` (another only if the kernel took
    /// part of the batch, or after `EINTR`). Returns how many SQEs were submitted; no syscall
    /// when nothing is queued.
    pub fn submit(&mut self) -> io::Result<usize> {
        let mut submitted = 0;
        while !self.queued.is_empty() {
            let before = self.queued.len();
            let result = self.enter(before, 0);
            let progress = before - self.queued.len();
            submitted += progress;
            match result {
                Ok(_) if progress == 0 => {
                    return Err(io::Error::other(
                        "io_uring_enter accepted none of the queued SQEs",
                    ))
                }
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(submitted)
    }

    /// Submits everything queued and waits until at least `min_complete` completions are in
    /// the CQ ring, ready for [`reap`](Self::reap) — normally one `io_uring_enter`, none if
    /// nothing is queued and enough completions are already there. Returns how many SQEs were
    /// submitted. Panics if `min_complete` exceeds `queued() + in_flight()` (it would wait
    /// forever).
    pub fn submit_and_wait(&mut self, min_complete: usize) -> io::Result<usize> {
        assert!(
            min_complete <= self.queued.len() + self.in_flight,
            "waiting for {min_complete} completions with only {} I/Os queued or in flight",
            self.queued.len() + self.in_flight
        );
        let mut submitted = 0;
        loop {
            let before = self.queued.len();
            if before == 0 && self.ready() >= min_complete {
                return Ok(submitted);
            }
            let result = self.enter(before, min_complete);
            let progress = before - self.queued.len();
            submitted += progress;
            match result {
                Ok(_) if before > 0 && progress == 0 => {
                    return Err(io::Error::other(
                        "io_uring_enter accepted none of the queued SQEs",
                    ))
                }
                Ok(_) => {}
                // Interrupted while waiting (possibly after submitting): check and go again.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Appends every completion now in the CQ ring to `out` as `(user_data, result)` — result
    /// is bytes read or `-errno` — and frees their slots. Never enters the kernel. Returns
    /// how many were appended.
    pub fn reap(&mut self, out: &mut Vec<(u64, i32)>) -> usize {
        let mut reaped = 0;
        let mut cq = self.ring.completion();
        for cqe in &mut cq {
            let index = cqe.user_data();
            let slot = usize::try_from(index)
                .ok()
                .and_then(|i| self.slots.get_mut(i))
                .unwrap_or_else(|| panic!("CQE for unknown slot {index}"));
            assert_eq!(
                slot.state,
                SlotState::InFlight,
                "CQE for slot {index} not in flight"
            );
            out.push((slot.user_data, cqe.result()));
            slot.state = SlotState::Free;
            self.free.push(index as u32);
            reaped += 1;
        }
        drop(cq);
        self.in_flight -= reaped;
        self.stats.completions_reaped += reaped as u64;
        self.check_invariants();
        reaped
    }

    /// I/Os submitted to the kernel whose completions have not been reaped yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// I/Os pushed but not yet submitted.
    pub fn queued(&self) -> usize {
        self.queued.len()
    }

    /// Completions waiting in the CQ ring (part of `in_flight`).
    pub fn ready(&self) -> usize {
        // SAFETY: this queue never keeps a `CompletionQueue` alive across calls, so no other
        // handle to the CQ ring exists while this one is read.
        unsafe { self.ring.completion_shared().len() }
    }

    /// The `entries` the queue was created with: the bound on `queued()`.
    pub fn capacity(&self) -> usize {
        self.entries
    }

    /// The bound on `queued() + in_flight()`: `CQ_PER_SQ × capacity()`.
    pub fn max_outstanding(&self) -> usize {
        self.slots.len()
    }

    /// Nothing queued and nothing in flight.
    pub fn is_idle(&self) -> bool {
        self.queued.is_empty() && self.in_flight == 0
    }

    pub fn stats(&self) -> UringStats {
        self.stats
    }

    fn full(&self, must_reap: bool) -> QueueFull {
        QueueFull {
            queued: self.queued.len(),
            in_flight: self.in_flight,
            must_reap,
        }
    }

    /// One `io_uring_enter`, counted; afterwards the slots the kernel consumed are moved from
    /// queued to in flight (whatever the result: after `EINTR` some may have been consumed).
    fn enter(&mut self, to_submit: usize, min_complete: usize) -> io::Result<usize> {
        let flags = if min_complete > 0 {
            EnterFlags::GETEVENTS.bits()
        } else {
            0
        };
        self.stats.enter_syscalls += 1;
        if to_submit > 0 {
            self.stats.submit_syscalls += 1;
        }
        if min_complete > 0 {
            self.stats.wait_syscalls += 1;
        }
        // SAFETY: no extended argument; the SQEs it may submit point at memory covered by
        // `push_readv`'s contract and the slots' iovec copies.
        let result = unsafe {
            self.ring.submitter().enter::<libc::sigset_t>(
                to_submit as u32,
                min_complete as u32,
                flags,
                None,
            )
        };
        let still_queued = self.ring.submission().len();
        assert!(
            still_queued <= self.queued.len(),
            "kernel consumed SQEs that were never pushed"
        );
        let consumed = self.queued.len() - still_queued;
        for index in self.queued.drain(..consumed) {
            let slot = &mut self.slots[index as usize];
            debug_assert_eq!(slot.state, SlotState::Queued);
            slot.state = SlotState::InFlight;
        }
        self.in_flight += consumed;
        self.stats.sqes_submitted += consumed as u64;
        self.check_invariants();
        result
    }

    fn check_invariants(&self) {
        debug_assert_eq!(
            self.free.len() + self.queued.len() + self.in_flight,
            self.slots.len()
        );
        debug_assert!(self.queued.len() <= self.entries);
    }
}

impl Drop for UringQueue {
    fn drop(&mut self) {
        // Queued SQEs are never submitted: closing the ring discards them.
        if self.in_flight == 0 {
            return;
        }
        // Best effort: cancel what can be cancelled (reads that may never complete, such as
        // from a pipe). Fails harmlessly before Linux 6.0 or when nothing matched.
        let _ = self.ring.submitter().register_sync_cancel(
            Some(types::Timespec::new().nsec(100_000_000)),
            types::CancelBuilder::any(),
        );
        let mut discard = Vec::new();
        while self.in_flight > 0 {
            discard.clear();
            if self.reap(&mut discard) > 0 {
                continue;
            }
            match self.enter(0, 1) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    eprintln!(
                        "iolab: could not wait for {} in-flight io_uring I/Os while closing \
                         the ring: {e}; aborting rather than let the kernel write into freed \
                         memory",
                        self.in_flight
                    );
                    std::process::abort();
                }
            }
        }
    }
}

thread_local! {
    static THREAD_QUEUE: RefCell<Option<UringQueue>> = const { RefCell::new(None) };
}

/// Runs `f` with this thread's queue, creating it with `entries` on first use. A thread's
/// queue lives until the thread exits (its drop waits for in-flight I/O). If `entries`
/// differs from the existing queue's capacity, the queue is recreated when idle and kept as it
/// is otherwise (so check [`UringQueue::capacity`]).
///
/// Errors: the ring could not be created, `f` is already running on this thread (re-entrant
/// call), or the thread is exiting. If `f` panics while I/O is queued or in flight, the queue
/// is dropped (waiting for in-flight I/O, discarding unsubmitted SQEs), so that a later caller
/// does not submit SQEs whose buffers were unwound away.
pub fn with_thread_queue<R>(entries: u32, f: impl FnOnce(&mut UringQueue) -> R) -> io::Result<R> {
    struct DropBusyQueueOnUnwind<'a>(&'a mut Option<UringQueue>);
    impl Drop for DropBusyQueueOnUnwind<'_> {
        fn drop(&mut self) {
            if std::thread::panicking() && self.0.as_ref().is_some_and(|q| !q.is_idle()) {
                *self.0 = None;
            }
        }
    }

    THREAD_QUEUE
        .try_with(|cell| {
            let mut guard = cell.try_borrow_mut().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "this thread's io_uring queue is already in use (re-entrant call)",
                )
            })?;
            let replace = match guard.as_ref() {
                None => true,
                Some(queue) => queue.capacity() != entries as usize && queue.is_idle(),
            };
            if replace {
                *guard = None; // close the old ring before opening the new one
                *guard = Some(UringQueue::new(entries)?);
            }
            let holder = DropBusyQueueOnUnwind(&mut guard);
            let queue = holder.0.as_mut().expect("the queue exists here");
            Ok(f(queue))
        })
        .map_err(|_| io::Error::other("this thread's io_uring queue has already been destroyed"))?
}

/// Turns an error from creating a ring into a message with advice, like PostgreSQL's hints
/// for "could not setup io_uring queue".
pub fn describe_setup_error(err: &io::Error) -> String {
    let hint = match err.raw_os_error() {
        Some(libc::EPERM) => {
            let disabled = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
                .map(|s| s.trim().to_string())
                .unwrap_or_else(|_| "unreadable".to_string());
            format!(
                "io_uring is not permitted for this process: check \
                 /proc/sys/kernel/io_uring_disabled (currently {disabled}; 0 allows everyone, 1 \
                 only the group in kernel.io_uring_group, 2 nobody) and any seccomp profile \
                 (container runtimes often block io_uring_setup)"
            )
        }
        Some(libc::ENOSYS) => "the kernel lacks io_uring (Linux 5.1+ is needed)".to_string(),
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            "out of file descriptors: raise the open-file limit (ulimit -n)".to_string()
        }
        Some(libc::ENOMEM) => "could not allocate the ring: before Linux 5.12 rings count against \
                               the locked-memory limit (ulimit -l)"
            .to_string(),
        _ => String::new(),
    };
    if hint.is_empty() {
        format!("could not set up io_uring queue: {err}")
    } else {
        format!("could not set up io_uring queue: {err}; {hint}")
    }
}

/// Checks once, at start-up, that this process can use io_uring: create a ring, check that the
/// kernel supports `read` and `readv` SQEs, and do a real two-iovec `readv` of a memfd (or,
/// where memfds are unavailable, an unlinked temporary file). `Err` says why not.
pub fn probe() -> Result<(), String> {
    use std::fs::File;
    use std::os::fd::{AsRawFd, FromRawFd};
    use std::os::unix::fs::FileExt;

    let mut queue = UringQueue::new(2).map_err(|e| describe_setup_error(&e))?;

    let mut opcodes = Probe::new();
    // IORING_REGISTER_PROBE needs Linux 5.6; without it, the readv below decides.
    if queue.ring.submitter().register_probe(&mut opcodes).is_ok() {
        for (code, name) in [(opcode::Read::CODE, "read"), (opcode::Readv::CODE, "readv")] {
            if !opcodes.is_supported(code) {
                return Err(format!("the kernel's io_uring does not support {name}"));
            }
        }
    }

    // SAFETY: a valid NUL-terminated name; the fd returned is owned by the File below.
    let memfd = unsafe { libc::memfd_create(c"iolab-io-uring-probe".as_ptr(), libc::MFD_CLOEXEC) };
    let file = if memfd >= 0 {
        // SAFETY: `memfd` is a freshly created descriptor nobody else owns.
        unsafe { File::from_raw_fd(memfd) }
    } else {
        let path =
            std::env::temp_dir().join(format!("iolab-io-uring-probe-{}", std::process::id()));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| format!("io_uring probe: could not create {}: {e}", path.display()))?;
        let _ = std::fs::remove_file(&path);
        file
    };
    let pattern: Vec<u8> = (0..8192u32).map(|i| (i * 7 + i / 256) as u8).collect();
    file.write_all_at(&pattern, 0)
        .map_err(|e| format!("io_uring probe: could not write: {e}"))?;

    let mut first = vec![0u8; 4096];
    let mut second = vec![0u8; 4096];
    let iovecs = [
        libc::iovec {
            iov_base: first.as_mut_ptr().cast(),
            iov_len: first.len(),
        },
        libc::iovec {
            iov_base: second.as_mut_ptr().cast(),
            iov_len: second.len(),
        },
    ];
    // SAFETY: the buffers and the file outlive `queue`, whose drop waits for the read.
    unsafe { queue.push_readv(0, file.as_raw_fd(), 0, &iovecs, false) }
        .map_err(|e| format!("io_uring probe: {e}"))?;
    queue
        .submit_and_wait(1)
        .map_err(|e| format!("io_uring probe: io_uring_enter failed: {e}"))?;
    let mut completions = Vec::with_capacity(1);
    queue.reap(&mut completions);
    drop(queue);
    match completions.as_slice() {
        [(0, 8192)] if first[..] == pattern[..4096] && second[..] == pattern[4096..] => Ok(()),
        [(0, 8192)] => Err("io_uring probe: readv returned the wrong data".to_string()),
        [(0, res)] if *res < 0 => Err(format!(
            "io_uring probe: readv failed: {}",
            io::Error::from_raw_os_error(-res)
        )),
        other => Err(format!("io_uring probe: unexpected completions {other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::{File, OpenOptions};
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    const BLCKSZ: usize = 8192;

    /// A directory under the system temp dir, removed on drop.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            static COUNTER: AtomicU32 = AtomicU32::new(0);
            let path = std::env::temp_dir().join(format!(
                "iolab-uring-{name}-{}-{}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(&path).unwrap();
            TempDir(path)
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// The file's content at `offset`: every 8-byte word holds its own offset / 8 (LE) xor a
    /// constant, so any range of any read can be checked.
    fn expected(offset: u64, len: usize) -> Vec<u8> {
        (offset..offset + len as u64)
            .map(|o| ((o / 8) ^ 0x5a5a_5a5a_0000_0000).to_le_bytes()[(o % 8) as usize])
            .collect()
    }

    fn pattern_file(dir: &TempDir, blocks: usize) -> (PathBuf, File) {
        let path = dir.0.join("data");
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .unwrap();
        file.write_all_at(&expected(0, blocks * BLCKSZ), 0).unwrap();
        file.sync_all().unwrap();
        (path, file)
    }

    fn iov(buf: &mut [u8]) -> libc::iovec {
        libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        }
    }

    /// Reaps until `n` completions have been collected, waiting as needed.
    fn reap_n(queue: &mut UringQueue, n: usize) -> Vec<(u64, i32)> {
        let mut out = Vec::new();
        while out.len() < n {
            queue.submit_and_wait(1).unwrap();
            queue.reap(&mut out);
        }
        assert_eq!(out.len(), n);
        out
    }

    #[test]
    fn uring_probe_succeeds() {
        assert_eq!(probe(), Ok(()));
    }

    /// 16 blocks read by a batch of mixed reads — several readvs, a plain read, an unaligned
    /// read, a short read at EOF, a read past EOF and a bad fd — submitted by one syscall.
    #[test]
    fn uring_batch_of_mixed_reads() {
        let dir = TempDir::new("batch");
        let (_path, file) = pattern_file(&dir, 16);
        let fd = file.as_raw_fd();
        let b = BLCKSZ as u64;

        // (user_data, offset, iovec sizes, async_hint, expected result)
        let requests: Vec<(u64, u64, Vec<usize>, bool, i32)> = vec![
            (1, 0, vec![BLCKSZ; 3], false, 3 * BLCKSZ as i32), // blocks 0..3
            (2, 3 * b, vec![BLCKSZ], false, BLCKSZ as i32),    // block 3, plain read
            (
                3,
                4 * b,
                vec![8192, 4096, 12288, 8192],
                true,
                4 * BLCKSZ as i32,
            ), // blocks 4..8
            (
                4,
                8 * b,
                vec![3 * BLCKSZ, 2 * BLCKSZ, 2 * BLCKSZ],
                true,
                7 * BLCKSZ as i32,
            ), // 8..15
            (5, 12345, vec![100, 5000], false, 5100),          // unaligned offset and sizes
            (6, 15 * b, vec![BLCKSZ, BLCKSZ], false, BLCKSZ as i32), // block 15, then EOF
            (7, 20 * b, vec![BLCKSZ], false, 0),               // wholly past EOF
            (8, 0, vec![BLCKSZ], false, -libc::EBADF),         // bad fd
        ];
        let mut buffers: Vec<Vec<Vec<u8>>> = requests
            .iter()
            .map(|(_, _, sizes, ..)| sizes.iter().map(|&n| vec![0xEEu8; n]).collect())
            .collect();

        let mut queue = UringQueue::new(16).unwrap();
        for ((user_data, offset, _, async_hint, _), bufs) in requests.iter().zip(&mut buffers) {
            // The iovec array is a temporary: the queue must have copied it.
            let iovecs: Vec<libc::iovec> = bufs.iter_mut().map(|b| iov(b)).collect();
            let target_fd = if *user_data == 8 { -1 } else { fd };
            unsafe { queue.push_readv(*user_data, target_fd, *offset, &iovecs, *async_hint) }
                .unwrap();
            drop(iovecs);
        }
        assert_eq!(queue.queued(), requests.len());
        assert_eq!(queue.in_flight(), 0);
        assert_eq!(
            queue.stats().enter_syscalls,
            0,
            "push must not enter the kernel"
        );

        assert_eq!(queue.submit().unwrap(), requests.len());
        let stats = queue.stats();
        assert_eq!(
            stats.enter_syscalls, 1,
            "one io_uring_enter for the whole batch"
        );
        assert_eq!(stats.submit_syscalls, 1);
        assert_eq!(stats.sqes_submitted, requests.len() as u64);
        assert_eq!(stats.async_sqes, 2);
        assert_eq!(stats.wait_syscalls, 0);
        assert_eq!(queue.queued(), 0);
        assert_eq!(queue.in_flight(), requests.len());
        assert_eq!(queue.submit().unwrap(), 0, "nothing left to submit");
        assert_eq!(
            queue.stats().enter_syscalls,
            1,
            "an empty submit makes no syscall"
        );

        let mut completions = reap_n(&mut queue, requests.len());
        completions.sort();
        assert_eq!(queue.in_flight(), 0);
        assert!(queue.is_idle());
        assert_eq!(queue.stats().completions_reaped, requests.len() as u64);

        for (((user_data, offset, _, _, result), bufs), got) in
            requests.iter().zip(&buffers).zip(&completions)
        {
            assert_eq!(got, &(*user_data, *result), "I/O {user_data}");
            let data: Vec<u8> = bufs.concat();
            let n = (*result).max(0) as usize;
            assert_eq!(
                data[..n],
                expected(*offset, n)[..],
                "data of I/O {user_data}"
            );
            assert!(
                data[n..].iter().all(|&x| x == 0xEE),
                "I/O {user_data} wrote past its result"
            );
        }
        // All 16 blocks were read once by I/Os 1-4 and 6.
        println!("stats after batch: {:?}", queue.stats());
    }

    /// Both bounds: `entries` queued (cured by submitting) and `CQ_PER_SQ × entries`
    /// outstanding (cured only by reaping).
    #[test]
    fn uring_queue_full_until_submitted_and_reaped() {
        let dir = TempDir::new("full");
        let (_path, file) = pattern_file(&dir, 16);
        let fd = file.as_raw_fd();
        let mut queue = UringQueue::new(2).unwrap();
        assert_eq!((queue.capacity(), queue.max_outstanding()), (2, 8));
        let mut bufs = vec![vec![0u8; BLCKSZ]; 10];
        let iovecs: Vec<[libc::iovec; 1]> = bufs.iter_mut().map(|b| [iov(b)]).collect();
        let offset = |i: usize| (i * BLCKSZ) as u64;
        let mut next = 0;
        for _round in 0..4 {
            for _ in 0..2 {
                unsafe { queue.push_readv(next as u64, fd, offset(next), &iovecs[next], false) }
                    .unwrap();
                next += 1;
            }
            let full = unsafe { queue.push_readv(99, fd, 0, &iovecs[9], false) };
            assert_eq!(
                full,
                Err(QueueFull {
                    queued: 2,
                    in_flight: next - 2,
                    must_reap: false
                }),
                "the SQ bound"
            );
            assert_eq!(queue.submit().unwrap(), 2);
        }
        assert_eq!((queue.queued(), queue.in_flight()), (0, 8));
        let full = unsafe { queue.push_readv(99, fd, 0, &iovecs[9], false) };
        assert_eq!(
            full,
            Err(QueueFull {
                queued: 0,
                in_flight: 8,
                must_reap: true
            }),
            "the outstanding bound"
        );
        assert_eq!(queue.submit().unwrap(), 0, "submitting does not help");

        assert_eq!(queue.submit_and_wait(8).unwrap(), 0);
        assert_eq!(queue.ready(), 8);
        let mut out = Vec::new();
        assert_eq!(queue.reap(&mut out), 8);
        out.sort();
        let want: Vec<(u64, i32)> = (0..8).map(|i| (i, BLCKSZ as i32)).collect();
        assert_eq!(out, want);
        for (i, buf) in bufs.iter().take(8).enumerate() {
            assert_eq!(buf[..], expected(offset(i), BLCKSZ)[..]);
        }

        unsafe { queue.push_readv(99, fd, offset(9), &iovecs[9], false) }.unwrap();
        assert_eq!(queue.submit_and_wait(1).unwrap(), 1);
        out.clear();
        queue.reap(&mut out);
        assert_eq!(out, vec![(99, BLCKSZ as i32)]);
        assert_eq!(bufs[9], expected(offset(9), BLCKSZ));
        let stats = queue.stats();
        assert_eq!((stats.submit_syscalls, stats.sqes_submitted), (5, 9));
    }

    #[test]
    fn uring_o_direct_read_into_aligned_buffer() {
        let dir = TempDir::new("direct");
        let (path, _file) = pattern_file(&dir, 8);
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(&path)
        {
            Ok(file) => file,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                eprintln!("skipping: {} does not support O_DIRECT", dir.0.display());
                return;
            }
            Err(e) => panic!("open O_DIRECT: {e}"),
        };
        let layout = std::alloc::Layout::from_size_align(3 * BLCKSZ, 4096).unwrap();
        // SAFETY: non-zero size; freed below with the same layout.
        let mem = unsafe { std::alloc::alloc_zeroed(layout) };
        assert!(!mem.is_null());
        let buf = unsafe { std::slice::from_raw_parts_mut(mem, 3 * BLCKSZ) };
        let (a, b) = buf.split_at_mut(BLCKSZ);
        let iovecs = [iov(a), iov(b)];

        let mut queue = UringQueue::new(8).unwrap();
        unsafe { queue.push_readv(7, file.as_raw_fd(), 2 * BLCKSZ as u64, &iovecs, false) }
            .unwrap();
        assert_eq!(queue.submit_and_wait(1).unwrap(), 1);
        let stats = queue.stats();
        assert_eq!(
            (
                stats.enter_syscalls,
                stats.submit_syscalls,
                stats.wait_syscalls
            ),
            (1, 1, 1)
        );
        let mut out = Vec::new();
        queue.reap(&mut out);
        assert_eq!(out, vec![(7, 3 * BLCKSZ as i32)]);
        assert_eq!(buf[..], expected(2 * BLCKSZ as u64, 3 * BLCKSZ)[..]);

        // Misaligned offset under O_DIRECT: the kernel says EINVAL through the CQE.
        let small = [iov(&mut buf[..BLCKSZ])];
        unsafe { queue.push_readv(8, file.as_raw_fd(), 100, &small, false) }.unwrap();
        let out = reap_n(&mut queue, 1);
        assert_eq!(out, vec![(8, -libc::EINVAL)]);
        drop(queue);
        unsafe { std::alloc::dealloc(mem, layout) };
    }

    /// Dropping a queue with reads in flight (including one from an empty pipe, which only
    /// cancellation can finish) and others never submitted returns promptly without crashing.
    #[test]
    fn uring_drop_with_io_in_flight() {
        let dir = TempDir::new("drop");
        let (_path, file) = pattern_file(&dir, 64);
        let mut fds = [0; 2];
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (pipe_read, pipe_write) = (fds[0], fds[1]);

        let (done_tx, done_rx) = std::sync::mpsc::channel();
        let fd = file.as_raw_fd();
        let worker = std::thread::spawn(move || {
            let mut bufs = vec![vec![0u8; 8 * BLCKSZ]; 9];
            let mut queue = UringQueue::new(16).unwrap();
            for (i, buf) in bufs.iter_mut().take(7).enumerate() {
                let chunks: Vec<libc::iovec> = buf.chunks_mut(BLCKSZ).map(iov).collect();
                let offset = (i * 8 * BLCKSZ) as u64;
                unsafe { queue.push_readv(i as u64, fd, offset, &chunks, i % 2 == 0) }.unwrap();
            }
            let (piped, unsubmitted) = bufs[7..].split_at_mut(1);
            unsafe { queue.push_readv(100, pipe_read, 0, &[iov(&mut piped[0])], false) }.unwrap();
            queue.submit().unwrap();
            // Pushed but never submitted: must be discarded, not issued after the buffers die.
            unsafe { queue.push_readv(101, fd, 0, &[iov(&mut unsubmitted[0])], false) }.unwrap();
            assert!(queue.in_flight() >= 1 && queue.queued() == 1);
            drop(queue);
            drop(bufs);
            done_tx.send(()).unwrap();
        });
        done_rx
            .recv_timeout(Duration::from_secs(20))
            .expect("dropping a queue with I/O in flight did not return");
        worker.join().unwrap();
        unsafe {
            libc::close(pipe_read);
            libc::close(pipe_write);
        }
    }

    #[test]
    fn uring_thread_queue_is_per_thread_and_reused() {
        let dir = TempDir::new("thread");
        let (_path, file) = pattern_file(&dir, 2);
        let fd = file.as_raw_fd();
        let read_one = move |queue: &mut UringQueue| {
            let mut buf = vec![0u8; BLCKSZ];
            unsafe { queue.push_readv(1, fd, BLCKSZ as u64, &[iov(&mut buf)], false) }.unwrap();
            let out = reap_n(queue, 1);
            assert_eq!(out, vec![(1, BLCKSZ as i32)]);
            assert_eq!(buf, expected(BLCKSZ as u64, BLCKSZ));
            queue.stats().sqes_submitted
        };
        std::thread::spawn(move || {
            assert_eq!(with_thread_queue(8, read_one).unwrap(), 1);
            assert_eq!(
                with_thread_queue(8, read_one).unwrap(),
                2,
                "same ring reused"
            );
            let nested = with_thread_queue(8, |_| with_thread_queue(8, |_| ()));
            assert!(nested.unwrap().is_err(), "re-entrant use is refused");
            // A different size recreates the idle ring.
            assert_eq!(
                with_thread_queue(4, |q| (q.capacity(), read_one(q))).unwrap(),
                (4, 1)
            );
        })
        .join()
        .unwrap();
        std::thread::spawn(move || {
            assert_eq!(
                with_thread_queue(4, read_one).unwrap(),
                1,
                "another thread, another ring"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn uring_rejects_bad_sizes() {
        assert_eq!(
            UringQueue::new(0).err().unwrap().kind(),
            io::ErrorKind::InvalidInput
        );
        assert!(UringQueue::new(MAX_ENTRIES + 1).is_err());
        assert!(
            describe_setup_error(&io::Error::from_raw_os_error(libc::EPERM))
                .contains("/proc/sys/kernel/io_uring_disabled")
        );
    }
}
