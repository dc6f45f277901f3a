//! Relation locks: PostgreSQL's table-level lock modes, held by a session's transaction
//! until it ends.
//!
//! Every statement locks the relations it uses before it plans them, in the mode its kind
//! needs (a SELECT `AccessShareLock`, an INSERT `RowExclusiveLock` on its target, CREATE
//! INDEX `ShareLock`, DROP / TRUNCATE / ALTER `AccessExclusiveLock`, …; the server's
//! `sql::relation_locks` decides which). Two modes of different owners conflict as in
//! PostgreSQL's table (`LockMode::conflicts`); an owner's own locks never conflict with
//! each other. So an index build and an INSERT into its table cannot overlap (the rows
//! inserted meanwhile would miss the index), nor a DROP and a scan still reading the file.
//!
//! The table maps each locked relation to its granted locks (owner, modes held) and its
//! queue of waiting requests. A request is granted when it conflicts with no other owner's
//! granted modes and with no earlier waiter's request — first come, first served, so a
//! stream of readers cannot starve a DROP — except that an owner skips the waiters whose
//! request conflicts with a lock it already holds (they wait for it anyway; making it
//! wait for them would be a deadlock). This is PostgreSQL's `LockAcquire` / `ProcSleep`
//! rule.
//!
//! A request that cannot be granted waits (NOWAIT fails at once, 55P03), waking when any
//! lock is released and at least every [`POLL`] to look at its cancel flag (cancel,
//! `statement_timeout`) and at `lock_timeout`. After `deadlock_timeout` it looks for a
//! circle of waits through itself — relation waits and the waits for other transactions'
//! rows given by the caller — and if there is one, fails with 40P01 and leaves the queue,
//! so that the others go on (PostgreSQL's deadlock check, run by the waiter that found
//! it). A wait that ends any other way (its future dropped too) leaves the queue as well.
//!
//! Bounds: at most `capacity` (owner, relation) entries, granted or waiting, PostgreSQL's
//! `max_locks_per_transaction × max_connections`; past it a request fails as PostgreSQL's
//! does when its lock table is full (53200, `out of shared memory`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use iolab_catalog::{sqlstate, PgError, PgResult};
use parking_lot::Mutex;

/// How often a waiting request looks at its cancel flag and timeouts.
const POLL: Duration = Duration::from_millis(50);

/// PostgreSQL's table-level lock modes, weakest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum LockMode {
    AccessShare = 1,
    RowShare,
    RowExclusive,
    ShareUpdateExclusive,
    Share,
    ShareRowExclusive,
    Exclusive,
    AccessExclusive,
}

impl LockMode {
    pub const ALL: [LockMode; 8] = [
        LockMode::AccessShare,
        LockMode::RowShare,
        LockMode::RowExclusive,
        LockMode::ShareUpdateExclusive,
        LockMode::Share,
        LockMode::ShareRowExclusive,
        LockMode::Exclusive,
        LockMode::AccessExclusive,
    ];

    fn bit(self) -> u8 {
        1 << (self as u8 - 1)
    }

    /// The modes this one conflicts with, as bits.
    fn conflicts(self) -> u8 {
        use LockMode::*;
        let modes: &[LockMode] = match self {
            AccessShare => &[AccessExclusive],
            RowShare => &[Exclusive, AccessExclusive],
            RowExclusive => &[Share, ShareRowExclusive, Exclusive, AccessExclusive],
            ShareUpdateExclusive => &[
                ShareUpdateExclusive,
                Share,
                ShareRowExclusive,
                Exclusive,
                AccessExclusive,
            ],
            Share => &[
                RowExclusive,
                ShareUpdateExclusive,
                ShareRowExclusive,
                Exclusive,
                AccessExclusive,
            ],
            ShareRowExclusive => &[
                RowExclusive,
                ShareUpdateExclusive,
                Share,
                ShareRowExclusive,
                Exclusive,
                AccessExclusive,
            ],
            Exclusive => &[
                RowShare,
                RowExclusive,
                ShareUpdateExclusive,
                Share,
                ShareRowExclusive,
                Exclusive,
                AccessExclusive,
            ],
            AccessExclusive => &Self::ALL,
        };
        modes.iter().fold(0, |bits, m| bits | m.bit())
    }

    pub fn conflicts_with(self, other: LockMode) -> bool {
        self.conflicts() & other.bit() != 0
    }

    /// Its name in `pg_locks.mode` and in messages: `AccessShareLock`, ….
    pub fn name(self) -> &'static str {
        match self {
            LockMode::AccessShare => "AccessShareLock",
            LockMode::RowShare => "RowShareLock",
            LockMode::RowExclusive => "RowExclusiveLock",
            LockMode::ShareUpdateExclusive => "ShareUpdateExclusiveLock",
            LockMode::Share => "ShareLock",
            LockMode::ShareRowExclusive => "ShareRowExclusiveLock",
            LockMode::Exclusive => "ExclusiveLock",
            LockMode::AccessExclusive => "AccessExclusiveLock",
        }
    }
}

/// Who holds a lock: a session, by its pid (a session runs one transaction at a time).
pub type Owner = i32;

/// What a request does when it cannot be granted at once.
#[derive(Clone, Copy, Debug)]
pub enum WaitPolicy {
    /// `NOWAIT`: fail with 55P03.
    NoWait,
    Wait {
        /// `lock_timeout` (none: 0, wait as long as it takes).
        lock_timeout: Option<Duration>,
        /// `deadlock_timeout`: when to look for a circle of waits.
        deadlock_timeout: Duration,
    },
}

/// A wait outside this table that can close a circle: `waiter` waits for `holder` (for a
/// row `holder`'s transaction is changing); `what` says for what, for the 40P01 detail
/// (`ShareLock on transaction 1234`).
#[derive(Clone, Debug)]
pub struct OtherWait {
    pub waiter: Owner,
    pub holder: Owner,
    pub what: String,
}

/// One row of `pg_locks` for a relation lock.
#[derive(Clone, Debug, PartialEq)]
pub struct LockRow {
    pub relation: u32,
    pub owner: Owner,
    pub mode: LockMode,
    pub granted: bool,
    /// When the wait began (waiting requests only).
    pub waitstart: Option<DateTime<Utc>>,
}

struct Waiter {
    owner: Owner,
    mode: LockMode,
    since: DateTime<Utc>,
}

#[derive(Default)]
struct Entry {
    /// Each owner holding locks on the relation, and its modes as bits.
    granted: Vec<(Owner, u8)>,
    waiting: VecDeque<Waiter>,
}

impl Entry {
    fn held_by(&self, owner: Owner) -> u8 {
        (self.granted.iter())
            .find(|(o, _)| *o == owner)
            .map_or(0, |(_, bits)| *bits)
    }

    /// Can `owner` have `mode` now? See the module comment for the rule.
    fn grantable(&self, owner: Owner, mode: LockMode) -> bool {
        let conflicts = mode.conflicts();
        if (self.granted.iter()).any(|&(o, bits)| o != owner && bits & conflicts != 0) {
            return false;
        }
        let held = self.held_by(owner);
        (self.waiting.iter())
            .take_while(|w| w.owner != owner)
            .all(|w| !w.mode.conflicts_with(mode) || held & w.mode.conflicts() != 0)
    }

    fn grant(&mut self, owner: Owner, mode: LockMode) {
        self.waiting.retain(|w| w.owner != owner);
        match self.granted.iter_mut().find(|(o, _)| *o == owner) {
            Some((_, bits)) => *bits |= mode.bit(),
            None => self.granted.push((owner, mode.bit())),
        }
    }

    /// The (owner, relation) entries this relation counts against the table's bound.
    fn entries(&self) -> usize {
        self.granted.len() + self.waiting.len()
    }
}

/// The relation lock table of a database; see the module comment.
pub struct RelationLocks {
    relations: Mutex<HashMap<u32, Entry>>,
    /// Woken whenever a lock is released or a waiter leaves.
    changed: tokio::sync::Notify,
    capacity: usize,
    database_oid: u32,
}

impl RelationLocks {
    pub fn new(capacity: usize, database_oid: u32) -> RelationLocks {
        assert!(capacity > 0, "the lock table holds at least one lock");
        RelationLocks {
            relations: Mutex::new(HashMap::new()),
            changed: tokio::sync::Notify::new(),
            capacity,
            database_oid,
        }
    }

    /// Takes `mode` on `relation` (named `name` in messages) for `owner`, waiting as
    /// `policy` says; `true` if the owner did not hold that mode before. `check_cancel`
    /// is asked while waiting and its error ends the wait; `other_waits` gives the waits
    /// outside this table for the deadlock check.
    pub async fn acquire(
        &self,
        owner: Owner,
        relation: u32,
        name: &str,
        mode: LockMode,
        policy: WaitPolicy,
        check_cancel: &(dyn Fn() -> PgResult<()> + Sync),
        other_waits: &(dyn Fn() -> Vec<OtherWait> + Sync),
    ) -> PgResult<bool> {
        let (lock_timeout, deadlock_timeout) = 'queued: {
            let mut relations = self.relations.lock();
            let total: usize = relations.values().map(Entry::entries).sum();
            let entry = relations.entry(relation).or_default();
            let held = entry.held_by(owner);
            if held & mode.bit() != 0 {
                return Ok(false);
            }
            let refusal = if held == 0 && total >= self.capacity {
                // A new (owner, relation) entry, granted or waiting, must fit the table.
                out_of_lock_memory()
            } else if entry.grantable(owner, mode) {
                entry.grant(owner, mode);
                return Ok(true);
            } else if let WaitPolicy::Wait {
                lock_timeout,
                deadlock_timeout,
            } = policy
            {
                entry.waiting.push_back(Waiter {
                    owner,
                    mode,
                    since: Utc::now(),
                });
                break 'queued (lock_timeout, deadlock_timeout);
            } else {
                PgError::new(
                    sqlstate::LOCK_NOT_AVAILABLE,
                    format!("could not obtain lock on relation \"{name}\""),
                )
            };
            drop_if_unused(&mut relations, relation);
            return Err(refusal);
        };
        let queued = WaitingRequest {
            locks: self,
            owner,
            relation,
        };
        let result = self
            .wait(
                owner,
                relation,
                mode,
                (lock_timeout, deadlock_timeout),
                check_cancel,
                other_waits,
            )
            .await;
        drop(queued);
        result.map(|()| true)
    }

    /// The wait of a queued request until it is granted or fails.
    async fn wait(
        &self,
        owner: Owner,
        relation: u32,
        mode: LockMode,
        (lock_timeout, deadlock_timeout): (Option<Duration>, Duration),
        check_cancel: &(dyn Fn() -> PgResult<()> + Sync),
        other_waits: &(dyn Fn() -> Vec<OtherWait> + Sync),
    ) -> PgResult<()> {
        let started = Instant::now();
        let mut next_deadlock_check = started + deadlock_timeout;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut relations = self.relations.lock();
                let entry = relations
                    .get_mut(&relation)
                    .expect("a waiter's relation is in the table");
                if entry.grantable(owner, mode) {
                    entry.grant(owner, mode);
                    return Ok(());
                }
            }
            check_cancel()?;
            let now = Instant::now();
            if lock_timeout.is_some_and(|t| now >= started + t) {
                return Err(PgError::new(
                    sqlstate::LOCK_NOT_AVAILABLE,
                    "canceling statement due to lock timeout",
                ));
            }
            if now >= next_deadlock_check {
                if let Some(circle) = self.circle_through(owner, &other_waits()) {
                    return Err(
                        PgError::new(sqlstate::T_R_DEADLOCK_DETECTED, "deadlock detected")
                            .with_detail(circle)
                            .with_hint("See server log for query details."),
                    );
                }
                next_deadlock_check = now + deadlock_timeout;
            }
            let _ = tokio::time::timeout(POLL, changed).await;
        }
    }

    /// A circle of waits from `owner` back to itself, as the 40P01 detail, if there is
    /// one.
    fn circle_through(&self, owner: Owner, other_waits: &[OtherWait]) -> Option<String> {
        // Every wait edge: waiter → (holder, what the waiter waits for).
        let mut edges: HashMap<Owner, Vec<(Owner, String)>> = HashMap::new();
        {
            let relations = self.relations.lock();
            for (&relation, entry) in relations.iter() {
                for (i, w) in entry.waiting.iter().enumerate() {
                    let what = format!(
                        "{} on relation {relation} of database {}",
                        w.mode.name(),
                        self.database_oid
                    );
                    let held = entry.held_by(w.owner);
                    let blockers = (entry.granted.iter())
                        .filter(|&&(o, bits)| o != w.owner && bits & w.mode.conflicts() != 0)
                        .map(|&(o, _)| o)
                        .chain(
                            (entry.waiting.iter().take(i))
                                .filter(|v| v.owner != w.owner && v.mode.conflicts_with(w.mode))
                                .filter(|v| held & v.mode.conflicts() == 0)
                                .map(|v| v.owner),
                        );
                    for blocker in blockers {
                        edges
                            .entry(w.owner)
                            .or_default()
                            .push((blocker, what.clone()));
                    }
                }
            }
        }
        for wait in other_waits {
            (edges.entry(wait.waiter).or_default()).push((wait.holder, wait.what.clone()));
        }
        // Depth-first from `owner`, remembering the path, until it comes back.
        let mut path: Vec<(Owner, Owner, String)> = Vec::new();
        let mut seen = HashSet::new();
        fn search(
            at: Owner,
            target: Owner,
            edges: &HashMap<Owner, Vec<(Owner, String)>>,
            seen: &mut HashSet<Owner>,
            path: &mut Vec<(Owner, Owner, String)>,
        ) -> bool {
            for (next, what) in edges.get(&at).into_iter().flatten() {
                path.push((at, *next, what.clone()));
                if *next == target
                    || (seen.insert(*next) && search(*next, target, edges, seen, path))
                {
                    return true;
                }
                path.pop();
            }
            false
        }
        if !search(owner, owner, &edges, &mut seen, &mut path) {
            return None;
        }
        let lines: Vec<String> = (path.iter())
            .map(|(waiter, holder, what)| {
                format!("Process {waiter} waits for {what}; blocked by process {holder}.")
            })
            .collect();
        Some(lines.join("\n"))
    }

    /// Releases `owner`'s `mode` on `relation` (a subtransaction that took it rolled
    /// back).
    pub fn release(&self, owner: Owner, relation: u32, mode: LockMode) {
        let mut relations = self.relations.lock();
        let Some(entry) = relations.get_mut(&relation) else {
            return;
        };
        for (_, bits) in entry.granted.iter_mut().filter(|(o, _)| *o == owner) {
            *bits &= !mode.bit();
        }
        entry.granted.retain(|(_, bits)| *bits != 0);
        drop_if_unused(&mut relations, relation);
        drop(relations);
        self.changed.notify_waiters();
    }

    /// Releases every lock `owner` holds and any request it has queued (its transaction
    /// ended).
    pub fn release_all(&self, owner: Owner) {
        let mut relations = self.relations.lock();
        let mut released = false;
        relations.retain(|_, entry| {
            let (granted, waiting) = (entry.granted.len(), entry.waiting.len());
            entry.granted.retain(|(o, _)| *o != owner);
            entry.waiting.retain(|w| w.owner != owner);
            released |= entry.granted.len() != granted || entry.waiting.len() != waiting;
            entry.entries() > 0
        });
        drop(relations);
        if released {
            self.changed.notify_waiters();
        }
    }

    /// The modes `owner` holds on `relation`.
    pub fn held(&self, owner: Owner, relation: u32) -> Vec<LockMode> {
        let relations = self.relations.lock();
        let bits = relations.get(&relation).map_or(0, |e| e.held_by(owner));
        (LockMode::ALL.into_iter())
            .filter(|m| bits & m.bit() != 0)
            .collect()
    }

    /// Every lock held and every request waiting (`pg_locks`), by relation, holders first.
    pub fn rows(&self) -> Vec<LockRow> {
        let relations = self.relations.lock();
        let mut rows = Vec::new();
        let mut oids: Vec<u32> = relations.keys().copied().collect();
        oids.sort_unstable();
        for relation in oids {
            let entry = &relations[&relation];
            for &(owner, bits) in &entry.granted {
                for mode in LockMode::ALL.into_iter().filter(|m| bits & m.bit() != 0) {
                    rows.push(LockRow {
                        relation,
                        owner,
                        mode,
                        granted: true,
                        waitstart: None,
                    });
                }
            }
            for w in &entry.waiting {
                rows.push(LockRow {
                    relation,
                    owner: w.owner,
                    mode: w.mode,
                    granted: false,
                    waitstart: Some(w.since),
                });
            }
        }
        rows
    }

    /// The owners whose granted locks or earlier requests keep `owner`'s waiting request
    /// waiting (`pg_blocking_pids`).
    pub fn blocking(&self, owner: Owner) -> Vec<Owner> {
        let relations = self.relations.lock();
        let mut blockers = Vec::new();
        for entry in relations.values() {
            let Some(i) = entry.waiting.iter().position(|w| w.owner == owner) else {
                continue;
            };
            let mode = entry.waiting[i].mode;
            let held = entry.held_by(owner);
            blockers.extend(
                (entry.granted.iter())
                    .filter(|&&(o, bits)| o != owner && bits & mode.conflicts() != 0)
                    .map(|&(o, _)| o),
            );
            blockers.extend(
                (entry.waiting.iter().take(i))
                    .filter(|v| v.mode.conflicts_with(mode) && held & v.mode.conflicts() == 0)
                    .map(|v| v.owner),
            );
        }
        blockers.sort_unstable();
        blockers.dedup();
        blockers
    }
}

/// A queued request; leaves the queue when dropped unless granted (an error, a timeout,
/// or the waiting future dropped).
struct WaitingRequest<'a> {
    locks: &'a RelationLocks,
    owner: Owner,
    relation: u32,
}

impl Drop for WaitingRequest<'_> {
    fn drop(&mut self) {
        let mut relations = self.locks.relations.lock();
        if let Some(entry) = relations.get_mut(&self.relation) {
            let before = entry.waiting.len();
            entry.waiting.retain(|w| w.owner != self.owner);
            let left = entry.waiting.len() != before;
            drop_if_unused(&mut relations, self.relation);
            drop(relations);
            if left {
                // Requests behind it may be grantable now.
                self.locks.changed.notify_waiters();
            }
        }
    }
}

fn drop_if_unused(relations: &mut HashMap<u32, Entry>, relation: u32) {
    if relations.get(&relation).is_some_and(|e| e.entries() == 0) {
        relations.remove(&relation);
    }
}

fn out_of_lock_memory() -> PgError {
    PgError::new(sqlstate::OUT_OF_MEMORY, "out of shared memory")
        .with_hint("You might need to increase \"max_locks_per_transaction\".")
}

#[cfg(test)]
mod tests {
    use super::*;
    use LockMode::*;

    const WAIT: WaitPolicy = WaitPolicy::Wait {
        lock_timeout: None,
        deadlock_timeout: Duration::from_millis(100),
    };

    fn no_cancel() -> PgResult<()> {
        Ok(())
    }

    fn no_other_waits() -> Vec<OtherWait> {
        Vec::new()
    }

    async fn take(
        locks: &RelationLocks,
        owner: Owner,
        relation: u32,
        mode: LockMode,
        policy: WaitPolicy,
    ) -> PgResult<bool> {
        locks
            .acquire(
                owner,
                relation,
                "t",
                mode,
                policy,
                &no_cancel,
                &no_other_waits,
            )
            .await
    }

    #[test]
    fn conflict_table_is_symmetric_and_postgresql_s() {
        for a in LockMode::ALL {
            for b in LockMode::ALL {
                assert_eq!(a.conflicts_with(b), b.conflicts_with(a), "{a:?} / {b:?}");
            }
        }
        assert!(!AccessShare.conflicts_with(Exclusive));
        assert!(AccessShare.conflicts_with(AccessExclusive));
        assert!(!RowExclusive.conflicts_with(RowExclusive));
        assert!(RowExclusive.conflicts_with(Share));
        assert!(!Share.conflicts_with(Share));
        assert!(ShareUpdateExclusive.conflicts_with(ShareUpdateExclusive));
        assert!(!RowShare.conflicts_with(ShareRowExclusive));
        let conflicting = |m: LockMode| {
            LockMode::ALL
                .iter()
                .filter(|o| m.conflicts_with(**o))
                .count()
        };
        assert_eq!(LockMode::ALL.map(conflicting), [1, 2, 4, 5, 5, 6, 7, 8]);
    }

    #[tokio::test]
    async fn one_mode_can_be_released_and_is_reported_new_once() {
        let locks = RelationLocks::new(100, 5);
        assert!(take(&locks, 1, 10, AccessShare, WAIT).await.unwrap());
        assert!(!take(&locks, 1, 10, AccessShare, WAIT).await.unwrap());
        assert!(take(&locks, 1, 10, AccessExclusive, WAIT).await.unwrap());
        locks.release(1, 10, AccessExclusive);
        assert_eq!(locks.held(1, 10), vec![AccessShare]);
        take(&locks, 2, 10, RowExclusive, WaitPolicy::NoWait)
            .await
            .unwrap();
        locks.release(1, 10, AccessShare);
        locks.release(2, 10, RowExclusive);
        assert!(locks.rows().is_empty());
    }

    #[tokio::test]
    async fn own_locks_never_conflict_and_nowait_fails_on_others() {
        let locks = RelationLocks::new(100, 5);
        take(&locks, 1, 10, AccessShare, WaitPolicy::NoWait)
            .await
            .unwrap();
        take(&locks, 1, 10, AccessExclusive, WaitPolicy::NoWait)
            .await
            .unwrap();
        assert_eq!(locks.held(1, 10), vec![AccessShare, AccessExclusive]);
        let err = take(&locks, 2, 10, AccessShare, WaitPolicy::NoWait)
            .await
            .unwrap_err();
        assert_eq!(err.code, sqlstate::LOCK_NOT_AVAILABLE);
        assert_eq!(err.message, "could not obtain lock on relation \"t\"");
        // Another relation is free.
        take(&locks, 2, 11, AccessExclusive, WaitPolicy::NoWait)
            .await
            .unwrap();
        locks.release_all(1);
        take(&locks, 2, 10, AccessShare, WaitPolicy::NoWait)
            .await
            .unwrap();
        assert!(locks.held(1, 10).is_empty());
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_waiter_is_granted_when_the_holder_releases_and_queues_ahead_of_later_readers() {
        let locks = std::sync::Arc::new(RelationLocks::new(100, 5));
        take(&locks, 1, 10, AccessShare, WAIT).await.unwrap();
        let dropper = {
            let locks = locks.clone();
            tokio::spawn(async move { take(&locks, 2, 10, AccessExclusive, WAIT).await })
        };
        while locks.rows().len() < 2 {
            tokio::task::yield_now().await;
        }
        // A new reader queues behind the waiting AccessExclusive request…
        let err = take(&locks, 3, 10, AccessShare, WaitPolicy::NoWait)
            .await
            .unwrap_err();
        assert_eq!(err.code, sqlstate::LOCK_NOT_AVAILABLE);
        // … but the holder itself goes ahead of it (the waiter waits for the holder anyway).
        take(&locks, 1, 10, RowExclusive, WaitPolicy::NoWait)
            .await
            .unwrap();
        assert_eq!(locks.blocking(2), vec![1]);
        let waiting: Vec<_> = locks.rows().into_iter().filter(|r| !r.granted).collect();
        assert_eq!((waiting[0].owner, waiting[0].mode), (2, AccessExclusive));
        assert!(waiting[0].waitstart.is_some());
        assert!(!dropper.is_finished());
        locks.release_all(1);
        dropper.await.unwrap().unwrap();
        assert_eq!(locks.held(2, 10), vec![AccessExclusive]);
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_circle_of_waits_fails_one_request_with_40p01() {
        let locks = std::sync::Arc::new(RelationLocks::new(100, 5));
        take(&locks, 1, 10, Share, WAIT).await.unwrap();
        take(&locks, 2, 11, Share, WAIT).await.unwrap();
        // Owner 1 would look for a circle only after an hour, so owner 2's check, due
        // first, finds it, as the PostgreSQL backend whose deadlock_timeout ends first
        // does. (With equal timeouts either may: owner 1's check is due first then.)
        let patient = WaitPolicy::Wait {
            lock_timeout: None,
            deadlock_timeout: Duration::from_secs(3600),
        };
        let first = {
            let locks = locks.clone();
            tokio::spawn(async move { take(&locks, 1, 11, RowExclusive, patient).await })
        };
        while locks.rows().iter().all(|r| r.granted) {
            tokio::task::yield_now().await;
        }
        let err = take(&locks, 2, 10, RowExclusive, WAIT).await.unwrap_err();
        assert_eq!(err.code, sqlstate::T_R_DEADLOCK_DETECTED);
        let detail = err.detail.clone().unwrap();
        assert!(detail.contains("Process 2 waits for RowExclusiveLock on relation 10 of database 5; blocked by process 1."), "{detail}");
        assert!(detail.contains("Process 1 waits for RowExclusiveLock on relation 11 of database 5; blocked by process 2."), "{detail}");
        // The failed request left the queue; its transaction ends and the other goes on.
        locks.release_all(2);
        first.await.unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn waits_outside_the_table_close_circles_too() {
        let locks = RelationLocks::new(100, 5);
        take(&locks, 1, 10, AccessExclusive, WAIT).await.unwrap();
        // Owner 1 waits for owner 2's row; owner 2 now asks for the relation 1 holds.
        let other = || {
            vec![OtherWait {
                waiter: 1,
                holder: 2,
                what: "ShareLock on transaction 900".into(),
            }]
        };
        let err = locks
            .acquire(2, 10, "t", AccessShare, WAIT, &no_cancel, &other)
            .await
            .unwrap_err();
        assert_eq!(err.code, sqlstate::T_R_DEADLOCK_DETECTED);
        assert!(err
            .detail
            .unwrap()
            .contains("Process 1 waits for ShareLock on transaction 900; blocked by process 2."));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn lock_timeout_cancel_and_dropped_waits_leave_the_queue() {
        let locks = std::sync::Arc::new(RelationLocks::new(100, 5));
        take(&locks, 1, 10, Exclusive, WAIT).await.unwrap();
        let timeout = WaitPolicy::Wait {
            lock_timeout: Some(Duration::from_millis(100)),
            deadlock_timeout: Duration::from_secs(1),
        };
        let err = take(&locks, 2, 10, RowExclusive, timeout)
            .await
            .unwrap_err();
        assert_eq!(err.message, "canceling statement due to lock timeout");
        let canceled = || {
            Err(PgError::new(
                sqlstate::QUERY_CANCELED,
                "canceling statement due to user request",
            ))
        };
        let err = (locks.acquire(2, 10, "t", RowExclusive, WAIT, &canceled, &no_other_waits))
            .await
            .unwrap_err();
        assert_eq!(err.code, sqlstate::QUERY_CANCELED);
        let dropped = {
            let locks = locks.clone();
            tokio::spawn(async move { take(&locks, 3, 10, RowShare, WAIT).await })
        };
        while locks.rows().len() < 2 {
            tokio::task::yield_now().await;
        }
        dropped.abort();
        let _ = dropped.await;
        assert_eq!(locks.rows().len(), 1, "only owner 1's lock is left");
        locks.release_all(1);
        assert!(locks.rows().is_empty());
    }

    #[tokio::test]
    async fn the_table_is_bounded() {
        let locks = RelationLocks::new(2, 5);
        take(&locks, 1, 10, AccessShare, WAIT).await.unwrap();
        take(&locks, 1, 11, AccessShare, WAIT).await.unwrap();
        // A new mode on a relation already held takes no new entry.
        take(&locks, 1, 11, RowExclusive, WAIT).await.unwrap();
        let err = take(&locks, 1, 12, AccessShare, WAIT).await.unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (sqlstate::OUT_OF_MEMORY, "out of shared memory")
        );
        locks.release_all(1);
        take(&locks, 1, 12, AccessShare, WAIT).await.unwrap();
    }
}
