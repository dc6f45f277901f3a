//! `io_method = worker`: a pool of `io_workers` threads that execute reads handed to them
//! through one bounded submission queue (PostgreSQL 18's I/O worker processes).
//!
//! An issuer pushes the handles of a batch into the queue under one lock and wakes as many
//! idle workers as it queued handles (none when all are busy: a busy worker takes the next
//! handle without sleeping); a worker pops a handle, runs `preadv` into the buffers' frames and completes the
//! handle (pages verified, buffers valid, issuer woken). The queue holds at most
//! [`QUEUE_CAPACITY`] handles, like PostgreSQL's 64-slot ring with one slot kept empty; when
//! it is full, [`WorkerPool::push_batch`] stops and the issuer executes the rest itself, which
//! the caller counts (PostgreSQL does this silently; iolab shows it in `pg_stat_aio`).
//!
//! # Advice for queued reads (iolab's addition)
//!
//! With buffered files, a read waiting in the queue is a read the device is not working on:
//! three workers running one synchronous `preadv` each keep at most three reads at the
//! device, however far the stream looks ahead (PostgreSQL 18's worker method has this
//! limit). So a worker that pops a handle while others wait behind it first advises the
//! kernel (`posix_fadvise(WILLNEED)`) of its own read and of up to [`ADVICE_BATCH`] queued
//! reads that nobody has advised yet, then runs its `preadv`, which finds its pages read or
//! being read. Each queued read is advised at most once (a flag per queue entry, cleared
//! under the queue's lock), and only reads the issuing stream marked advisable (its
//! `read_stream_advice` policy allows advice: not Seq Scan's sequential reads, where kernel
//! readahead already works, and not under `never`). The advice costs the workers' time,
//! not the issuer's, so it appears in no session's wait time.
//!
//! # Taking a read back
//!
//! An issuer that needs a read no worker has started yet takes it back out of the queue
//! ([`WorkerPool::take_back`]) and runs it itself, instead of waiting for a worker to wake
//! up and then for the completion to wake it: at `effective_io_concurrency = 1`, where the
//! consumer often waits at once for the one read it just queued, those two hand-offs cost
//! more than the look-ahead gains (the "eic 1 is slower than eic 0" cliff). With buffered
//! files a stream at eic 1 no longer hands its reads to the workers at all (it advises and
//! reads itself, as under `sync`: see read_stream.rs, "One read ahead in the session"); taking
//! back still saves the hand-offs at eic 1 with direct I/O and at eic 2 and up.
//!
//! # Resizing
//!
//! `io_workers` takes effect on a configuration reload, as in PostgreSQL 18
//! ([`WorkerPool::resize`]): new workers start at once; a worker told to retire finishes
//! the handle it holds and exits, and the queued handles go to the others (there is always
//! at least one).
//!
//! Workers run until the pool is dropped; dropping waits for them to finish the handle they
//! hold (the queue is drained first, so nothing an issuer waits for is ever lost).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use parking_lot::{Condvar, Mutex};

use iolab_stats::{AuxiliaryActivity, BackendType, IoStatsHub, WaitEvent};

use super::handle::{HandleTable, IoRef};

/// Submission-queue bound (PostgreSQL: 64 slots, one always empty).
pub const QUEUE_CAPACITY: usize = 63;

/// Most queued reads one worker advises before running its own read (bounds how long the
/// read it holds waits for that advice).
pub const ADVICE_BATCH: usize = 16;

struct Queued {
    io: IoRef,
    /// Not yet advised by any worker.
    advice_due: bool,
}

struct Shared {
    queue: Mutex<VecDeque<Queued>>,
    /// Workers waiting for work (changed under `queue`'s lock).
    idle: std::sync::atomic::AtomicUsize,
    work: Condvar,
    shutdown: AtomicBool,
    handles: Arc<HandleTable>,
    /// Where each worker shows in `pg_stat_activity` (`None` in unit tests).
    activity: Option<Arc<IoStatsHub>>,
}

pub struct WorkerPool {
    shared: Arc<Shared>,
    /// The running workers, by number (`io worker N` is `workers[N]`).
    workers: Mutex<Vec<Worker>>,
}

struct Worker {
    thread: JoinHandle<()>,
    /// Set to have the worker exit once it holds no handle.
    retire: Arc<AtomicBool>,
}

impl WorkerPool {
    /// Start `nworkers` threads named `io worker N`, listed in `activity`'s
    /// `pg_stat_activity` when given.
    pub fn start(
        nworkers: usize,
        handles: Arc<HandleTable>,
        activity: Option<Arc<IoStatsHub>>,
    ) -> std::io::Result<WorkerPool> {
        assert!(nworkers >= 1, "io_workers is at least 1");
        let shared = Arc::new(Shared {
            queue: Mutex::new(VecDeque::with_capacity(QUEUE_CAPACITY)),
            idle: std::sync::atomic::AtomicUsize::new(0),
            work: Condvar::new(),
            shutdown: AtomicBool::new(false),
            handles,
            activity,
        });
        let pool = WorkerPool {
            shared,
            workers: Mutex::new(Vec::with_capacity(nworkers)),
        };
        pool.resize(nworkers)?;
        Ok(pool)
    }

    pub fn nworkers(&self) -> usize {
        self.workers.lock().len()
    }

    /// Run `nworkers` workers from now on: start the missing ones, or retire the last ones
    /// and wait for them to finish the handle each holds.
    pub fn resize(&self, nworkers: usize) -> std::io::Result<()> {
        assert!(nworkers >= 1, "io_workers is at least 1");
        let mut workers = self.workers.lock();
        while workers.len() < nworkers {
            let shared = Arc::clone(&self.shared);
            let retire = Arc::new(AtomicBool::new(false));
            let retired = Arc::clone(&retire);
            let n = workers.len();
            let thread = std::thread::Builder::new()
                .name(format!("io worker {n}"))
                .spawn(move || {
                    let activity = shared
                        .activity
                        .clone()
                        .map(|hub| AuxiliaryActivity::register(hub, BackendType::IoWorker, n));
                    worker_loop(&shared, &retired, activity.as_ref())
                })?;
            workers.push(Worker { thread, retire });
        }
        let retiring = workers.split_off(nworkers);
        drop(workers);
        for worker in &retiring {
            worker.retire.store(true, Ordering::Release);
        }
        if !retiring.is_empty() {
            // Under the queue's lock, so that no retiring worker is between its check and
            // its wait.
            let _queue = self.shared.queue.lock();
            self.shared.work.notify_all();
        }
        for worker in retiring {
            let _ = worker.thread.join();
        }
        Ok(())
    }

    /// Queue submitted handles for the workers, in order, until the queue is full; returns
    /// how many were queued (the caller executes the rest).
    pub fn push_batch(&self, batch: &[IoRef]) -> usize {
        let mut queue = self.shared.queue.lock();
        let room = QUEUE_CAPACITY - queue.len();
        let queued = batch.len().min(room);
        queue.extend(batch[..queued].iter().map(|&io| Queued {
            io,
            advice_due: true,
        }));
        let wake = queued.min(self.shared.idle.load(Ordering::Relaxed));
        drop(queue);
        for _ in 0..wake {
            self.shared.work.notify_one();
        }
        queued
    }

    /// Remove `io` from the queue if no worker has taken it yet; returns whether it was
    /// there (the caller then executes it).
    pub fn take_back(&self, io: IoRef) -> bool {
        let mut queue = self.shared.queue.lock();
        match queue.iter().position(|q| q.io == io) {
            Some(i) => {
                queue.remove(i);
                true
            }
            None => false,
        }
    }

    /// Handles waiting in the queue now.
    pub fn queued(&self) -> usize {
        self.shared.queue.lock().len()
    }
}

fn worker_loop(shared: &Shared, retire: &AtomicBool, activity: Option<&AuxiliaryActivity>) {
    let waiting = |event| {
        if let Some(a) = activity {
            a.set_wait_event(event);
        }
    };
    let mut to_advise = Vec::with_capacity(ADVICE_BATCH + 1);
    loop {
        let io = {
            let mut queue = shared.queue.lock();
            loop {
                if retire.load(Ordering::Acquire) {
                    // A wake-up meant for work may have come here: pass it on.
                    if !queue.is_empty() {
                        shared.work.notify_one();
                    }
                    return;
                }
                if let Some(head) = queue.pop_front() {
                    // The reads still waiting behind this one, not yet advised.
                    to_advise.extend(
                        queue
                            .iter_mut()
                            .filter(|q| q.advice_due)
                            .take(ADVICE_BATCH)
                            .map(|q| {
                                q.advice_due = false;
                                q.io
                            }),
                    );
                    if !to_advise.is_empty() && head.advice_due {
                        to_advise.insert(0, head.io);
                    }
                    break head.io;
                }
                if shared.shutdown.load(Ordering::Acquire) {
                    return;
                }
                shared.idle.fetch_add(1, Ordering::Relaxed);
                waiting(WaitEvent::IoWorkerMain);
                shared.work.wait(&mut queue);
                waiting(WaitEvent::None);
                shared.idle.fetch_sub(1, Ordering::Relaxed);
            }
        };
        if !to_advise.is_empty() {
            waiting(WaitEvent::DataFilePrefetch);
        }
        for queued in to_advise.drain(..) {
            if let Some((fd, offset, len)) = shared.handles.take_advice_range(queued) {
                super::advise_willneed(fd, offset, len);
            }
        }
        // As PostgreSQL 18's workers report the read they perform.
        waiting(WaitEvent::DataFileRead);
        shared.handles.execute(io);
        waiting(WaitEvent::None);
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        self.shared.work.notify_all();
        for worker in self.workers.get_mut().drain(..) {
            let _ = worker.thread.join();
        }
    }
}
