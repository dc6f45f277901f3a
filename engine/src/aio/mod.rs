//! Asynchronous I/O: how a read the buffer pool has prepared (a [`PendingRead`]) gets
//! executed, by `io_method`.
//!
//! | `io_method` | who runs the `preadv` | when |
//! |---|---|---|
//! | `sync` | the issuing thread | when the consumer needs the block (advice may be issued ahead) |
//! | `worker` | one of `io_workers` threads | as soon as it is queued; a full queue makes the issuer do it |
//! | `io_uring` | the kernel | submitted in batches on the issuing thread's own ring |
//!
//! The read stream talks to [`AioSystem`] in three calls: [`start_read`](AioSystem::start_read)
//! (acquire a handle and stage the read, or — for `sync` and `effective_io_concurrency = 0` —
//! keep it to execute later), [`submit_staged`](AioSystem::submit_staged) (hand the staged
//! batch to the workers or the kernel with as few calls as possible) and
//! [`wait`](AioSystem::wait) (block until the read is done; get the pinned, valid buffers
//! or the error). Under `io_uring`, reaping a completion only records its result; the pages
//! are verified and the buffers made valid in `wait`, right before the consumer reads them
//! (see `handle.rs`). Every handle lives in the server-wide [`HandleTable`] while it is in
//! flight, which is what `pg_aios` shows.
//!
//! Accounting: time spent in `start`/`submit` (queue pushes, `io_uring_enter`, advice) is
//! *wait* time; time blocked in `wait` is *read* time; submission → completion is the
//! I/O's latency. All of it goes to the caller's [`IoAccount`], and so do the events of the
//! AIO machinery itself for `pg_stat_aio` (I/Os started, submissions, queue-full
//! fallbacks, completion and handle waits, completions by another thread) and the wait
//! events `pg_stat_activity` shows while the issuer blocks: `DataFilePrefetch` (advice),
//! `AioIoUringSubmit`, `DataFileRead` (a synchronous read), `AioIoCompletion` (an I/O a
//! worker runs, or a free handle) and `AioIoUringExecution` (completions from the kernel).
//!
//! `io_uring` is probed at start-up; if the kernel refuses it, iolab logs why and uses
//! `worker` instead (the effective method is what `SHOW io_method` reports).

pub mod handle;
pub mod uring;
pub mod worker;

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use iolab_catalog::PgError;
use iolab_settings::IoMethod;
use iolab_stats::{AioEvent, IoStatsHub, WaitEvent};
use parking_lot::Mutex;

use crate::accounting::Buffers;
use crate::accounting::IoAccount;
use crate::buffer::{PendingRead, PinnedBuffer};
use crate::storage::page::BLCKSZ;
pub use handle::{HandleState, HandleTable, IoRef};
use worker::WorkerPool;

/// How the AIO system is set up at start-up.
#[derive(Clone, Debug)]
pub struct AioConfig {
    pub method: IoMethod,
    pub io_workers: usize,
    /// I/Os one issuer may have in flight (`io_max_concurrency`), also the io_uring size.
    pub max_concurrency: usize,
    /// Issuers that may run at once (sessions, and scans within them); sizes the table.
    pub max_issuers: usize,
}

/// A read handed to the AIO system and not yet waited for.
pub enum InFlightIo {
    /// To be executed by the issuer when waited for (`sync`, `effective_io_concurrency=0`).
    Deferred(PendingRead),
    /// In a handle: staged, submitted or already complete.
    Handle(IoRef),
}

/// One issuing thread's view: its staged batch and how many I/Os it has in flight.
pub struct Issuer {
    pid: i32,
    staged: Vec<IoRef>,
    in_flight: usize,
}

impl Issuer {
    pub fn new(pid: i32) -> Issuer {
        Issuer {
            pid,
            staged: Vec::new(),
            in_flight: 0,
        }
    }

    /// I/Os started through handles and not yet waited for.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// I/Os started and not yet submitted.
    pub fn staged(&self) -> usize {
        self.staged.len()
    }
}

/// The server's AIO system: the method, the handle table and the worker pool.
pub struct AioSystem {
    method: IoMethod,
    direct: bool,
    max_concurrency: usize,
    handles: Arc<HandleTable>,
    /// Index of `handles` in [`TABLES`], carried in io_uring `user_data`.
    table_tag: u64,
    workers: Option<WorkerPool>,
}

/// io_uring rings are per thread and may carry completions of more than one `AioSystem`
/// (tests open several databases in one process): `user_data` names the table by index.
static TABLES: OnceLock<Mutex<Vec<Weak<HandleTable>>>> = OnceLock::new();

const TAG_SHIFT: u32 = 52;
const ID_BITS: u32 = 20;
const GEN_MASK: u64 = (1 << (TAG_SHIFT - ID_BITS)) - 1;

impl AioSystem {
    /// Set up the method chosen by `config` (io_uring probed; falls back to worker with a
    /// logged reason). Returns the system and, on fallback, the reason.
    /// `direct`: data files are opened with `O_DIRECT` (no advice, no async-offload hint).
    /// `activity`: the server's statistics, where I/O workers are listed
    /// (`pg_stat_activity`).
    pub fn start(
        config: &AioConfig,
        direct: bool,
        activity: Option<Arc<IoStatsHub>>,
    ) -> Result<(Arc<AioSystem>, Option<String>), String> {
        let mut method = config.method;
        let mut note = None;
        if method == IoMethod::IoUring {
            if let Err(why) = uring::probe() {
                let message = format!(
                    "io_method \"io_uring\" is not available ({why}); using \"worker\" instead"
                );
                tracing::warn!("{message}");
                note = Some(message);
                method = IoMethod::Worker;
            }
        }
        let max_concurrency = config.max_concurrency.max(1);
        let nhandles = (max_concurrency * config.max_issuers.max(1)).min(1 << ID_BITS);
        let handles = Arc::new(HandleTable::new(nhandles));
        let workers = match method {
            IoMethod::Worker => Some(
                WorkerPool::start(config.io_workers.max(1), Arc::clone(&handles), activity)
                    .map_err(|e| format!("could not start I/O workers: {e}"))?,
            ),
            _ => None,
        };
        let table_tag = {
            let mut tables = TABLES.get_or_init(|| Mutex::new(Vec::new())).lock();
            let free = tables.iter().position(|t| t.strong_count() == 0);
            let tag = match free {
                Some(i) => {
                    tables[i] = Arc::downgrade(&handles);
                    i
                }
                None => {
                    tables.push(Arc::downgrade(&handles));
                    tables.len() - 1
                }
            };
            assert!(tag < 1 << (64 - TAG_SHIFT), "too many AIO systems");
            tag as u64
        };
        Ok((
            Arc::new(AioSystem {
                method,
                direct,
                max_concurrency,
                handles,
                table_tag,
                workers,
            }),
            note,
        ))
    }

    /// The method in use (after any fallback).
    pub fn method(&self) -> IoMethod {
        self.method
    }

    /// `io_workers` changed by a configuration reload: run that many workers (nothing to
    /// do under the other methods).
    pub fn set_io_workers(&self, nworkers: usize) -> std::io::Result<()> {
        match &self.workers {
            Some(pool) if pool.nworkers() != nworkers => pool.resize(nworkers),
            _ => Ok(()),
        }
    }

    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// I/Os one issuer may have in flight.
    pub fn max_concurrency(&self) -> usize {
        self.max_concurrency
    }

    /// `pg_aios`: every handle in use now.
    pub fn rows(&self) -> Vec<iolab_stats::AioRow> {
        self.handles.rows()
    }

    /// Advise the kernel that `read`'s blocks will be needed (`posix_fadvise(WILLNEED)`);
    /// the time it takes is wait time.
    pub fn advise(&self, read: &PendingRead, acct: &mut IoAccount, at: Buffers) {
        let timer = acct.start_timer();
        acct.set_wait_event(WaitEvent::DataFilePrefetch);
        if let Ok((fd, offset)) = read.fd_and_offset() {
            advise_willneed(fd, offset, read.len_bytes());
            acct.aio_event(AioEvent::Advised);
        }
        acct.set_wait_event(WaitEvent::None);
        acct.issued(at, timer);
    }

    /// Whether reads started through handles may be advised by whoever runs them later
    /// (`worker` with buffered files).
    pub fn advises_in_workers(&self) -> bool {
        self.method == IoMethod::Worker && !self.direct
    }

    /// Start `read`: with `synchronous` (or io_method `sync`) keep it for the issuer to
    /// execute when it waits; otherwise put it in a handle and stage it for the next
    /// [`submit_staged`](Self::submit_staged). A deferred read is counted as started when
    /// it is executed. `advisable`: the stream's advice policy allows advice for this read,
    /// which under `worker` an I/O worker gives while the read waits in the queue.
    pub fn start_read(
        &self,
        issuer: &mut Issuer,
        read: PendingRead,
        synchronous: bool,
        advisable: bool,
        acct: &mut IoAccount,
    ) -> InFlightIo {
        if synchronous || self.method == IoMethod::Sync {
            return InFlightIo::Deferred(read);
        }
        let io = self.acquire(issuer, acct);
        self.handles
            .define(io, read, false, !self.direct, advisable);
        self.handles.stage(io);
        acct.aio_event(AioEvent::Started);
        issuer.staged.push(io);
        issuer.in_flight += 1;
        InFlightIo::Handle(io)
    }

    /// A free handle; if none is free, reap our own io_uring completions and wait.
    fn acquire(&self, issuer: &mut Issuer, acct: &mut IoAccount) -> IoRef {
        let mut counted = false;
        loop {
            if let Some(io) = self.handles.try_acquire(issuer.pid) {
                if counted {
                    acct.set_wait_event(WaitEvent::None);
                }
                return io;
            }
            if !counted {
                acct.aio_event(AioEvent::HandleWait);
                acct.set_wait_event(WaitEvent::AioIoCompletion);
                counted = true;
            }
            if self.method == IoMethod::IoUring {
                self.reap_uring(false);
            }
            self.handles.wait_for_free(Duration::from_millis(1));
        }
    }

    /// Hand every staged I/O to the method: one queue pass and wake-ups for `worker`, one
    /// `io_uring_enter` for `io_uring`. Counts the time as wait time.
    pub fn submit_staged(&self, issuer: &mut Issuer, acct: &mut IoAccount, at: Buffers) {
        if issuer.staged.is_empty() {
            return;
        }
        let timer = acct.start_timer();
        let staged = std::mem::take(&mut issuer.staged);
        acct.aio_event(AioEvent::Submission);
        match self.method {
            IoMethod::Worker => {
                let workers = self.workers.as_ref().expect("worker method has workers");
                for &io in &staged {
                    self.handles.submit(io);
                }
                let queued = workers.push_batch(&staged);
                if queued < staged.len() {
                    acct.set_wait_event(WaitEvent::DataFileRead);
                    for &io in &staged[queued..] {
                        acct.aio_event(AioEvent::QueueFull);
                        self.handles.execute(io);
                    }
                    acct.set_wait_event(WaitEvent::None);
                }
            }
            IoMethod::IoUring => {
                acct.set_wait_event(WaitEvent::AioIoUringSubmit);
                self.submit_uring(&staged, issuer.in_flight);
                acct.set_wait_event(WaitEvent::None);
            }
            IoMethod::Sync => unreachable!("sync reads are never staged"),
        }
        issuer.staged = staged;
        issuer.staged.clear();
        acct.issued(at, timer);
    }

    fn submit_uring(&self, staged: &[IoRef], in_flight: usize) {
        let entries = self.max_concurrency as u32;
        let mut reaped = Vec::new();
        let result = uring::with_thread_queue(entries, |queue| {
            for &io in staged {
                let (fd, offset, iovecs) = self.handles.submit_to_kernel(io);
                let user_data = (self.table_tag << TAG_SHIFT)
                    | ((io.generation & GEN_MASK) << ID_BITS)
                    | io.id as u64;
                // Buffered reads past a few in flight go to kernel workers so that copying
                // from the page cache runs in parallel (PostgreSQL 18 does the same). Not a
                // one-block read: its copy costs less than the two thread switches of io-wq,
                // and an uncached page is read without a worker anyway (the kernel starts the
                // read and finishes the copy when the page-lock wait ends).
                let one_block = iovecs.len() == 1 && iovecs[0].iov_len == BLCKSZ;
                let async_hint = !self.direct && in_flight > 4 && !one_block;
                loop {
                    // SAFETY: the frames (pinned, IO_IN_PROGRESS) and the relation's file
                    // stay valid until the handle is completed, which happens only after
                    // this completion is reaped.
                    match unsafe { queue.push_readv(user_data, fd, offset, &iovecs, async_hint) } {
                        Ok(()) => break,
                        Err(full) if full.must_reap => {
                            // The ring holds as many I/Os as its completion queue can
                            // take: wait for one, keep the completions for afterwards.
                            queue.submit_and_wait(1)?;
                            queue.reap(&mut reaped);
                        }
                        Err(_) => {
                            // Submission queue full: submit what is queued and retry.
                            queue.submit()?;
                        }
                    }
                }
            }
            queue.submit()
        });
        self.complete_uring(reaped);
        match result {
            Ok(Ok(_)) => {}
            Ok(Err(e)) | Err(e) => {
                // The ring could not take the I/Os: execute them here instead.
                tracing::error!("io_uring submission failed ({e}); executing synchronously");
                for &io in staged {
                    if !self.handles.is_io_done(io) {
                        self.handles.execute(io);
                    }
                }
            }
        }
    }

    /// Reap this thread's io_uring completions (waiting for at least one with `wait`) and
    /// complete their handles. Returns whether the ring had I/O in flight.
    fn reap_uring(&self, wait: bool) -> bool {
        let mut done = Vec::new();
        let entries = self.max_concurrency as u32;
        let mut had_in_flight = false;
        let reaped = uring::with_thread_queue(entries, |queue| {
            had_in_flight = queue.in_flight() > 0;
            if wait && had_in_flight {
                queue.submit_and_wait(1)?;
            }
            queue.reap(&mut done);
            Ok::<(), std::io::Error>(())
        });
        if let Ok(Err(e)) | Err(e) = reaped {
            tracing::error!("io_uring wait failed: {e}");
        }
        self.complete_uring(done);
        had_in_flight
    }

    /// Record the results of reaped io_uring completions (`user_data`, result) in their
    /// handles (COMPLETED_IO), whichever AIO system they belong to. The shared completion —
    /// verifying the pages, making the buffers valid — waits until the issuer waits for the
    /// I/O (see [`wait`](Self::wait)).
    fn complete_uring(&self, done: Vec<(u64, i32)>) {
        if done.is_empty() {
            return;
        }
        let tables = TABLES.get().expect("tables registered at start").lock();
        let owners: Vec<(Option<Arc<HandleTable>>, IoRef, i32)> = done
            .into_iter()
            .map(|(user_data, res)| {
                let tag = (user_data >> TAG_SHIFT) as usize;
                let id = (user_data & ((1 << ID_BITS) - 1)) as u32;
                let table = tables.get(tag).and_then(Weak::upgrade);
                let generation = table
                    .as_ref()
                    .map(|t| t.current_generation(id))
                    .unwrap_or(0);
                assert_eq!(
                    generation & GEN_MASK,
                    (user_data >> ID_BITS) & GEN_MASK,
                    "io_uring completion for a recycled handle"
                );
                (table, IoRef { id, generation }, res)
            })
            .collect();
        drop(tables);
        for (table, io, res) in owners {
            let Some(table) = table else { continue };
            table.complete_io(io, handle::io_result(res));
        }
    }

    /// Wait for `io` and take its result: the pinned, valid buffers in block order, or the
    /// error (its buffers are then released). Time blocked here is read time.
    pub fn wait(
        &self,
        issuer: &mut Issuer,
        io: InFlightIo,
        acct: &mut IoAccount,
        at: Buffers,
    ) -> Result<Vec<PinnedBuffer>, PgError> {
        let timer = acct.start_timer();
        match io {
            InFlightIo::Deferred(read) => {
                // Executed here, through a handle so that pg_aios shows it while it runs.
                acct.aio_event(AioEvent::Started);
                acct.set_wait_event(WaitEvent::DataFileRead);
                let handle = self.handles.try_acquire(issuer.pid);
                let outcome = match handle {
                    Some(h) => {
                        self.handles.define(h, read, true, !self.direct, false);
                        self.handles.stage(h);
                        self.handles.submit(h);
                        self.handles.execute(h);
                        self.handles.reclaim(h)
                    }
                    None => {
                        let mut read = read;
                        let submitted = Instant::now();
                        let result = read.execute();
                        let latency = submitted.elapsed();
                        let error = read.finish(result).err();
                        handle::Completed {
                            read,
                            error,
                            latency,
                            completed_elsewhere: false,
                            advised_by_worker: false,
                        }
                    }
                };
                acct.set_wait_event(WaitEvent::None);
                acct.read_latency(at, outcome.latency);
                acct.read_waited(at, timer, true);
                finish(outcome)
            }
            InFlightIo::Handle(h) => {
                if issuer.staged.contains(&h) {
                    self.submit_staged(issuer, acct, at);
                }
                // An io_uring read may have been reaped already (COMPLETED_IO) but not yet
                // verified: that is no stall.
                let mut stalled = !self.handles.is_io_done(h);
                if stalled && self.take_back(h) {
                    // No worker had started it: run it here rather than wait for one.
                    acct.aio_event(AioEvent::TakenBack);
                    acct.set_wait_event(WaitEvent::DataFileRead);
                    self.handles.execute(h);
                    acct.set_wait_event(WaitEvent::None);
                    stalled = false;
                }
                if stalled {
                    acct.aio_event(AioEvent::CompletionWait);
                    match self.method {
                        IoMethod::IoUring => {
                            acct.set_wait_event(WaitEvent::AioIoUringExecution);
                            while !self.handles.is_io_done(h) {
                                let waited = self.reap_uring(true);
                                assert!(
                                    waited,
                                    "waiting for an I/O this thread's ring does not hold"
                                );
                            }
                        }
                        _ => {
                            acct.set_wait_event(WaitEvent::AioIoCompletion);
                            self.handles.wait_complete(h);
                        }
                    }
                    acct.set_wait_event(WaitEvent::None);
                }
                acct.read_waited(at, timer, stalled);
                if !self.handles.is_complete(h) {
                    // An io_uring read (reaped just now or earlier): verify its pages here,
                    // right before the consumer reads them, so that they are still in the
                    // CPU's caches then. Not read time: the I/O is over.
                    self.handles.complete_shared(h);
                }
                let outcome = self.handles.reclaim(h);
                issuer.in_flight -= 1;
                if outcome.completed_elsewhere {
                    acct.aio_event(AioEvent::CompletedElsewhere);
                }
                if outcome.advised_by_worker {
                    acct.aio_event(AioEvent::Advised);
                }
                acct.read_latency(at, outcome.latency);
                finish(outcome)
            }
        }
    }

    /// Take `io` back from the worker queue if no worker has started it (`worker` only).
    fn take_back(&self, io: IoRef) -> bool {
        self.workers.as_ref().is_some_and(|w| w.take_back(io))
    }

    /// Reap io_uring completions that are already there, without a system call.
    pub fn poll(&self) {
        if self.method == IoMethod::IoUring {
            self.reap_uring(false);
        }
    }
}

/// `posix_fadvise(WILLNEED)`: ask the kernel to start reading a range into the page cache.
/// Advisory: a stale descriptor or range costs a wasted read, never wrong data.
pub(crate) fn advise_willneed(fd: std::os::unix::io::RawFd, offset: u64, len: usize) {
    // SAFETY: a plain system call; it reads no memory of ours.
    unsafe {
        libc::posix_fadvise(
            fd,
            offset as libc::off_t,
            len as libc::off_t,
            libc::POSIX_FADV_WILLNEED,
        );
    }
}

fn finish(outcome: handle::Completed) -> Result<Vec<PinnedBuffer>, PgError> {
    match outcome.error {
        None => Ok(outcome.read.into_buffers()),
        Some(e) => Err(e),
    }
}
