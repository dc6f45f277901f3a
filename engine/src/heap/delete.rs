//! Deleting rows: DELETE, and the old version of each row an UPDATE replaces.
//!
//! A row is deleted by stamping its tuple with the deleting transaction (`t_xmax`) and
//! command (`t_cid`, from then on the tuple's cmax), as PostgreSQL's `heap_delete` does.
//! The tuple stays where it is, and so do the index entries that point at it: a reader
//! skips it once the delete is visible to its snapshot (committed before the snapshot was
//! taken, or done by an earlier command of the reader's own transaction), and from then on
//! it is a dead row (`n_dead_tup`, VACUUM, ANALYZE). An UPDATE also points the old
//! version's `t_ctid` at the new one ([`HeapDeleter::link_new_version`]).
//!
//! The statement found the row through its snapshot, but another transaction may have
//! stamped it since. What happens then follows PostgreSQL's READ COMMITTED rules:
//!
//! | the row's `t_xmax` | what happens |
//! |---|---|
//! | none, or a transaction that aborted | stamp it |
//! | this transaction (the same command met the row twice, as a join can, or an earlier one of its subtransactions) | leave it: done already |
//! | a transaction still running | release the page, wait for that transaction to end, look again |
//! | a transaction that committed a DELETE | leave it: the row is gone |
//! | a transaction that committed an UPDATE (`t_ctid` points elsewhere) | [`Deleted::Updated`]: the caller finds the row's newest version ([`HeapDeleter::newest_version`]), checks its condition on it again and changes that one (PostgreSQL's EvalPlanQual); [`HeapDeleter::delete`] fails with 40001 instead |
//!
//! Under REPEATABLE READ and SERIALIZABLE (the statement's snapshot is its transaction's,
//! `StatementContext::transaction_snapshot`) the last two rows fail the statement with
//! 40001, "could not serialize access due to concurrent delete | update", and so does a
//! row lock of such a row, as in PostgreSQL: the transaction must not act on a row it
//! cannot see the current version of.
//!
//! A row lock (`SELECT … FOR UPDATE | SHARE`, [`HeapDeleter::lock`]) is a `t_xmax` marked
//! [`HEAP_XMAX_LOCK_ONLY`], as in PostgreSQL: readers judge visibility by
//! [`tuple::deleter`], which passes over it, and a delete or another lock treats it as a
//! running transaction's change while its transaction runs and as nothing once it ended
//! (or when it is this transaction's own). Every lock is exclusive: iolab has no
//! MultiXact, so FOR SHARE lockers wait for each other too. Nor can a tuple's `t_xmax`
//! name two of a transaction's xids: a row locked before a savepoint and deleted after it
//! is no longer locked once the delete is rolled back to that savepoint (PostgreSQL keeps
//! the lock in a MultiXact).
//!
//! Waits go through [`TransactionManager::wait_for`], which sees a circle of waiting
//! transactions and fails the one that would close it (40P01), and ends a wait when the
//! statement is canceled.
//!
//! Every page is read through the pool without a ring (PostgreSQL's DELETE and UPDATE use
//! none) and written back like any dirtied page.

use std::sync::Arc;

use iolab_catalog::{sqlstate, PgError, PgResult};
use iolab_stats::{RowChange, WaitEvent};

use crate::accounting::IoAccount;
use crate::buffer::PinnedBuffer;
use crate::heap::tuple::{
    self, HEAP_XMAX_COMMITTED, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_INVALID, HEAP_XMAX_LOCK_ONLY,
    INVALID_XID,
};

/// The `t_infomask` bits that describe `t_xmax`, replaced whenever it is set.
const XMAX_STATE: u16 =
    HEAP_XMAX_INVALID | HEAP_XMAX_COMMITTED | HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK;
use crate::exec::context::StatementContext;
use crate::heap::visibility_map::clear_all_visible;
use crate::storage::page;
use crate::storage::relfile::RelFile;
use crate::txn::clog::XidStatus;
use crate::txn::{OwnXids, Xid};
use crate::wal::{self, Change};
use crate::Database;

/// 40001 for a row a concurrent `change` ("update", "delete") made unreachable.
fn serialization_failure(change: &str) -> PgError {
    PgError::new(
        sqlstate::T_R_SERIALIZATION_FAILURE,
        format!("could not serialize access due to concurrent {change}"),
    )
}

/// Deletes rows of one table for one command.
pub struct HeapDeleter {
    db: Arc<Database>,
    rel: Arc<RelFile>,
    /// The xid this command writes under (its savepoint's subxid, perhaps).
    xid: Xid,
    /// Every xid of the transaction: rows any of them changed are its own.
    own: OwnXids,
    cid: u32,
    pub acct: IoAccount,
    /// Rows this deleter stamped.
    pub deleted: u64,
    /// How the statistics count them: deletes, or none (an UPDATE counts its new versions).
    change: Option<RowChange>,
    /// REPEATABLE READ or SERIALIZABLE: rows other transactions changed meanwhile fail.
    transaction_snapshot: bool,
}

/// A row version's `t_xmax`, as a deleter or locker of one transaction sees it.
enum XmaxState {
    /// None, an aborted transaction's, or a lock of one that ended.
    Free,
    /// This transaction's lock, or its delete.
    OwnLock,
    OwnDelete,
    /// A transaction still running changes or locks the row.
    Running(Xid),
    /// A committed transaction deleted it, or replaced it with a newer version.
    Deleted,
    Updated,
}

/// What became of a row asked to be locked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Locked {
    /// Locked by this transaction (now, or earlier).
    Now,
    /// Deleted, by this transaction or one that committed.
    Gone,
    /// Replaced by a newer version, by a transaction that committed an UPDATE.
    Updated,
    /// Changed or locked by a transaction still running, and not waited for.
    Busy,
}

/// What became of a row asked to be deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Deleted {
    /// Stamped by this command.
    Now,
    /// Deleted already: by this command, or by a transaction that committed.
    Already,
    /// Replaced by a newer version, by a transaction that committed an UPDATE (only
    /// [`HeapDeleter::try_delete`] says so; `delete` fails with 40001).
    Updated,
}

impl HeapDeleter {
    /// A deleter for DELETE (`for_update` false) or for an UPDATE's old versions.
    /// Statement `ctx` changes rows of `rel`, its page reads counted in `acct`.
    pub fn new(
        ctx: &StatementContext,
        rel: Arc<RelFile>,
        acct: IoAccount,
        for_update: bool,
    ) -> PgResult<HeapDeleter> {
        if ctx.xid == INVALID_XID {
            return Err(PgError::internal(
                "statement writes but has no transaction id",
            ));
        }
        assert!(
            ctx.snapshot.own.contains(ctx.xid),
            "the statement's xid is its own"
        );
        Ok(HeapDeleter {
            db: ctx.db.clone(),
            rel,
            xid: ctx.xid,
            own: ctx.snapshot.own.clone(),
            cid: ctx.cid,
            acct,
            deleted: 0,
            change: (!for_update).then_some(RowChange::Delete),
            transaction_snapshot: ctx.transaction_snapshot,
        })
    }

    /// Deletes the row at `tid` (found by this command's snapshot; see the module comment
    /// for rows other transactions changed meanwhile).
    pub fn delete(
        &mut self,
        tid: (u32, u16),
        check_cancel: &dyn Fn() -> PgResult<()>,
    ) -> PgResult<Deleted> {
        match self.try_delete(tid, check_cancel)? {
            Deleted::Updated => Err(serialization_failure("update")),
            done => Ok(done),
        }
    }

    /// [`delete`](Self::delete), telling of a row a committed UPDATE replaced meanwhile
    /// instead of failing (INSERT … ON CONFLICT DO UPDATE then looks again).
    pub fn try_delete(
        &mut self,
        tid: (u32, u16),
        check_cancel: &dyn Fn() -> PgResult<()>,
    ) -> PgResult<Deleted> {
        let (blkno, off) = tid;
        let done = self.at_row(
            tid,
            true,
            check_cancel,
            |me, buffer, page, state| match state {
                XmaxState::Free | XmaxState::OwnLock => {
                    let (relfilenode, vm) = (me.rel.relfilenode(), &me.db.vm);
                    clear_all_visible(page, vm, relfilenode, blkno);
                    let t = page::page_item_mut(page, off).expect("the tuple just read");
                    tuple::set_cid(t, me.cid);
                    me.stamp_xmax(buffer, page, off, 0);
                    Deleted::Now
                }
                XmaxState::OwnDelete | XmaxState::Deleted => Deleted::Already,
                XmaxState::Updated => Deleted::Updated,
                XmaxState::Running(_) => unreachable!("a running holder is waited for"),
            },
        )?;
        if done == Deleted::Now {
            self.deleted += 1;
            if let Some(change) = self.change {
                self.acct
                    .rows_changed(self.xid, self.rel.relfilenode(), change, 1);
            }
        }
        Ok(done)
    }

    /// Locks the row at `tid` for this transaction (`SELECT … FOR UPDATE`): its `t_xmax`
    /// set with [`HEAP_XMAX_LOCK_ONLY`], so that readers still see it and writers wait
    /// for this transaction. A row another transaction is changing or locking is waited
    /// for first, unless `wait` is false ([`Locked::Busy`]). Its `t_cid` and visibility
    /// stay as they were; a committed transaction's lock is free to take.
    pub fn lock(
        &mut self,
        tid: (u32, u16),
        wait: bool,
        check_cancel: &dyn Fn() -> PgResult<()>,
    ) -> PgResult<Locked> {
        let off = tid.1;
        self.at_row(
            tid,
            wait,
            check_cancel,
            |me, buffer, page, state| match state {
                XmaxState::Free => {
                    let lock = HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK;
                    me.stamp_xmax(buffer, page, off, lock);
                    Locked::Now
                }
                XmaxState::Running(_) => Locked::Busy,
                XmaxState::OwnLock => Locked::Now,
                XmaxState::OwnDelete | XmaxState::Deleted => Locked::Gone,
                XmaxState::Updated => Locked::Updated,
            },
        )
    }

    /// Reads the row at `tid` and hands its page (locked for writing) and the state of its
    /// `t_xmax` to `act`. A transaction still running that holds the row is waited for,
    /// and the row read again, until it has ended; without `wait`, `act` is told of it
    /// instead (`XmaxState::Running`).
    fn at_row<R>(
        &mut self,
        tid: (u32, u16),
        wait: bool,
        check_cancel: &dyn Fn() -> PgResult<()>,
        mut act: impl FnMut(&mut Self, &PinnedBuffer, &mut [u8], XmaxState) -> R,
    ) -> PgResult<R> {
        let (blkno, off) = tid;
        loop {
            let buffer = self
                .db
                .pool
                .read_buffer(&self.rel, blkno, None, &mut self.acct)?;
            let holder = {
                let mut page = buffer.page_mut();
                let Some(t) = page::page_item_mut(&mut page, off) else {
                    return Err(missing_tuple(tid, self.rel.relfilenode()));
                };
                match self.xmax_state(t, tid) {
                    XmaxState::Running(holder) if wait => holder,
                    XmaxState::Deleted if self.transaction_snapshot => {
                        return Err(serialization_failure("delete"))
                    }
                    XmaxState::Updated if self.transaction_snapshot => {
                        return Err(serialization_failure("update"))
                    }
                    state => return Ok(act(self, &buffer, &mut page, state)),
                }
            };
            drop(buffer);
            self.acct.set_wait_event(WaitEvent::LockTransactionId);
            let waited = self.db.txns.wait_for(self.xid, holder, check_cancel);
            self.acct.set_wait_event(WaitEvent::None);
            waited?;
        }
    }

    /// What the `t_xmax` of tuple `t` (at `tid`) says to this transaction (the table of
    /// the module comment).
    fn xmax_state(&self, t: &[u8], tid: (u32, u16)) -> XmaxState {
        let xmax = tuple::xmax(t);
        let locks_only = tuple::xmax_locks_only(t);
        if xmax == INVALID_XID {
            return XmaxState::Free;
        }
        if self.own.contains(xmax) {
            return match locks_only {
                true => XmaxState::OwnLock,
                false => XmaxState::OwnDelete,
            };
        }
        match self.db.txns.clog().status(xmax) {
            XidStatus::Aborted => XmaxState::Free,
            XidStatus::InProgress => XmaxState::Running(xmax),
            XidStatus::Committed if locks_only => XmaxState::Free,
            XidStatus::Committed => {
                let next = tuple::ctid(t);
                match (next.block, next.offset) == tid {
                    true => XmaxState::Deleted,
                    false => XmaxState::Updated,
                }
            }
        }
    }

    /// Sets the `t_xmax` of the tuple at `off` to this transaction, with `lock_bits`
    /// (none for a delete), and logs the change.
    fn stamp_xmax(&mut self, buffer: &PinnedBuffer, page: &mut [u8], off: u16, lock_bits: u16) {
        let t = page::page_item_mut(page, off).expect("a tuple to stamp");
        tuple::set_xmax(t, self.xid);
        tuple::set_infomask(t, (tuple::infomask(t) & !XMAX_STATE) | lock_bits);
        self.log_tuple_change(buffer, page, off, tuple::DELETE_STAMP_BYTES);
    }

    /// The newest version of the row whose version at `tid` a committed UPDATE replaced:
    /// the update chain followed (each `t_ctid` to the next version, which the updating
    /// transaction wrote) up to a version no committed transaction deleted or replaced —
    /// one still live, or being changed by a running transaction or this one. `None` when
    /// the row is gone: a committed DELETE ended the chain, or a link leads to a version
    /// another transaction wrote (the slot was reused after VACUUM).
    pub fn newest_version(&mut self, tid: (u32, u16)) -> PgResult<Option<(u32, u16)>> {
        let mut at = tid;
        let mut writer = None;
        loop {
            let buffer = self
                .db
                .pool
                .read_buffer(&self.rel, at.0, None, &mut self.acct)?;
            let page = buffer.page();
            let Some(t) = page::page_item(&page, at.1) else {
                return Ok(None);
            };
            if writer.is_some_and(|w| tuple::xmin(t) != w) {
                return Ok(None);
            }
            let xmax = tuple::deleter(t);
            let replaced = xmax != INVALID_XID
                && !self.own.contains(xmax)
                && self.db.txns.clog().status(xmax) == XidStatus::Committed;
            if !replaced {
                return Ok(Some(at));
            }
            let next = tuple::ctid(t);
            if (next.block, next.offset) == at {
                return Ok(None);
            }
            writer = Some(xmax);
            at = (next.block, next.offset);
        }
    }

    /// Points the old version at `old` (deleted by this deleter) to its new version at
    /// `new`, as an UPDATE leaves them.
    pub fn link_new_version(&mut self, old: (u32, u16), new: (u32, u16)) -> PgResult<()> {
        let buffer = self
            .db
            .pool
            .read_buffer(&self.rel, old.0, None, &mut self.acct)?;
        {
            let mut page = buffer.page_mut();
            clear_all_visible(&mut page, &self.db.vm, self.rel.relfilenode(), old.0);
            let t = page::page_item_mut(&mut page, old.1)
                .ok_or_else(|| missing_tuple(old, self.rel.relfilenode()))?;
            assert_eq!(
                tuple::xmax(t),
                self.xid,
                "only a version this command deleted"
            );
            tuple::set_ctid(t, new.0, new.1);
            self.log_tuple_change(&buffer, &mut page, old.1, tuple::CTID_BYTES);
        }
        Ok(())
    }

    /// Logs a change to `bytes` of the header of the tuple at `off` (and the page header's
    /// flags).
    fn log_tuple_change(
        &mut self,
        buffer: &PinnedBuffer,
        page: &mut [u8],
        off: u16,
        bytes: std::ops::Range<usize>,
    ) {
        let start = page::ranges::item(page, off, None).start;
        let changed = [page::ranges::HEADER, start + bytes.start..start + bytes.end];
        wal::log_change(
            &self.rel,
            buffer,
            page,
            Change::Ranges(&changed),
            &mut self.acct,
        );
    }

    /// Releases nothing (no page stays pinned between calls); flushes the statistics.
    pub fn finish(&mut self) {
        self.acct.flush();
    }
}

fn missing_tuple(tid: (u32, u16), relfilenode: u32) -> PgError {
    PgError::new(
        sqlstate::INTERNAL_ERROR,
        format!(
            "no tuple at ({},{}) of relation file base/{relfilenode}",
            tid.0, tid.1
        ),
    )
}
