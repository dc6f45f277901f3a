//! Savepoints: `SAVEPOINT name`, `RELEASE [SAVEPOINT] name` and `ROLLBACK TO [SAVEPOINT]
//! name` inside a transaction block (PostgreSQL's subtransactions).
//!
//! A savepoint marks where the block's work stood: how many subtransaction ids were live,
//! how long the block's DDL log was, how many cursors the session had declared, and (in
//! the session's settings) a new level of `SET` values. The first statement that writes
//! under a savepoint gets a subtransaction id (a *subxid*; the block's own xid is taken
//! first if it had none), and its rows carry that id, so that they can be taken back
//! without touching the block's other rows (`iolab_engine::txn`).
//!
//! - `ROLLBACK TO s` aborts every subxid taken since `s` was set (`s`'s own and those of
//!   the savepoints opened after it), undoes the DDL logged since, closes the cursors
//!   declared since, puts back the settings changed since, closes the savepoints opened
//!   after `s` and clears a failed block: `s` stays, ready for more work, as in
//!   PostgreSQL. A cursor declared before `s` keeps the position a FETCH gave it since.
//! - `RELEASE s` closes `s` and every savepoint after it; their subxids stay the block's
//!   (they commit or abort with it) and their settings become the enclosing level's.
//!
//! Names may repeat; a name refers to the newest savepoint of that name. A failed block
//! takes `ROLLBACK TO` (of a savepoint set before the failure), `ROLLBACK` and `COMMIT`
//! (which rolls back) only.
//!
//! Bounds: at most [`MAX_SAVEPOINTS`] open at once; and the live subxids of a transaction
//! (released savepoints that wrote keep theirs until the block ends) must fit its commit
//! record, which lists them as runs of consecutive xids: at most
//! [`MAX_SUBXID_RUNS`] runs — any number of subtransactions when no other session takes
//! an xid in between, at least that many when every other xid is another's. Both fail
//! with 54000 beyond.

use datafusion::sql::sqlparser::ast;
use iolab_catalog::{sqlstate, PgError, PgResult};
use iolab_engine::txn::{OwnXids, Xid};
use iolab_engine::wal::record::MAX_SUBXID_RUNS;
use iolab_engine::Database;

use crate::session::Session;
use crate::sql::Outcome;

/// The most savepoints open at once in a session.
pub const MAX_SAVEPOINTS: usize = 10_000;

/// One open savepoint.
struct Savepoint {
    name: String,
    /// Its subtransaction's id, taken at the first write under it.
    xid: Option<Xid>,
    /// How many of the block's live subxids were taken before it.
    subxids_before: usize,
    /// The length of the block's DDL log when it was set.
    ddl_before: usize,
    /// How many cursors the session had declared when it was set.
    cursors_before: u64,
    /// How many table locks the block had taken when it was set.
    locks_before: usize,
}

/// A transaction block's open savepoints and live subtransactions.
#[derive(Default)]
pub struct Savepoints {
    /// Oldest first.
    open: Vec<Savepoint>,
    /// The subxids taken and not rolled back, ascending (taken in that order).
    subxids: Vec<Xid>,
}

impl Savepoints {
    /// The table locks the block had taken when its newest savepoint was set (0 without
    /// one): what an error keeps, as PostgreSQL aborts only the newest subtransaction.
    pub fn locks_kept_on_error(&self) -> usize {
        self.open.last().map_or(0, |s| s.locks_before)
    }

    /// The xids the block writes under: `top` (0: none yet) and the live subxids.
    pub fn own_xids(&self, top: Xid) -> OwnXids {
        OwnXids::with_subxids(top, self.subxids.clone())
    }

    /// The xid a statement writing now writes under: the newest savepoint's subxid (taken
    /// now if it has none), or `top` outside savepoints.
    pub fn writing_xid(&mut self, db: &Database, top: Xid) -> PgResult<Xid> {
        let Some(newest) = self.open.last_mut() else {
            return Ok(top);
        };
        if let Some(xid) = newest.xid {
            return Ok(xid);
        }
        if iolab_engine::txn::subxid_runs(&self.subxids).len() >= MAX_SUBXID_RUNS {
            return Err(PgError::new(
                sqlstate::PROGRAM_LIMIT_EXCEEDED,
                "too many subtransactions with ids in one transaction to commit",
            )
            .with_detail(format!(
                "Its commit record lists at most {MAX_SUBXID_RUNS} runs of consecutive \
                 subtransaction ids."
            ))
            .with_hint("Commit sooner, or write under fewer savepoints."));
        }
        let xid = db
            .txns
            .begin_subtransaction(top)
            .map_err(|e| PgError::io("could not reserve transaction ids", &e))?;
        newest.xid = Some(xid);
        self.subxids.push(xid);
        Ok(xid)
    }

    /// The newest open savepoint called `name`.
    fn find(&self, name: &str) -> PgResult<usize> {
        (self.open.iter().rposition(|s| s.name == name)).ok_or_else(|| {
            PgError::new(
                sqlstate::INVALID_SAVEPOINT_SPECIFICATION,
                format!("savepoint \"{name}\" does not exist"),
            )
        })
    }
}

/// The name as PostgreSQL folds it: unquoted names in lower case.
fn folded(name: &ast::Ident) -> String {
    match name.quote_style {
        Some(_) => name.value.clone(),
        None => name.value.to_lowercase(),
    }
}

fn outside_block(what: &str) -> PgError {
    PgError::new(
        sqlstate::NO_ACTIVE_SQL_TRANSACTION,
        format!("{what} can only be used in transaction blocks"),
    )
}

/// `SAVEPOINT name`.
pub fn set(session: &mut Session, name: &ast::Ident) -> PgResult<Outcome> {
    if !session.txn.explicit() {
        return Err(outside_block("SAVEPOINT"));
    }
    let savepoints = &mut session.txn.savepoints;
    if savepoints.open.len() >= MAX_SAVEPOINTS {
        return Err(PgError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            format!("cannot have more than {MAX_SAVEPOINTS} savepoints open"),
        )
        .with_hint("Release savepoints no longer needed with RELEASE SAVEPOINT."));
    }
    savepoints.open.push(Savepoint {
        name: folded(name),
        xid: None,
        subxids_before: savepoints.subxids.len(),
        ddl_before: session.txn.ddl.mark(),
        cursors_before: session.cursors.declared(),
        locks_before: session.relation_locks.taken(),
    });
    session.settings.begin_savepoint();
    Ok(Outcome::Done("SAVEPOINT".into()))
}

/// `RELEASE [SAVEPOINT] name`.
pub fn release(session: &mut Session, name: &ast::Ident) -> PgResult<Outcome> {
    if !session.txn.explicit() {
        return Err(outside_block("RELEASE SAVEPOINT"));
    }
    let savepoints = &mut session.txn.savepoints;
    let at = savepoints.find(&folded(name))?;
    for _ in at..savepoints.open.len() {
        session.settings.release_savepoint();
    }
    savepoints.open.truncate(at);
    Ok(Outcome::Done("RELEASE".into()))
}

/// `ROLLBACK TO [SAVEPOINT] name`; allowed in a failed block, which it clears.
pub fn rollback_to(session: &mut Session, name: &ast::Ident) -> PgResult<Outcome> {
    if !session.txn.explicit() {
        return Err(outside_block("ROLLBACK TO SAVEPOINT"));
    }
    let db = session.db().clone();
    let savepoints = &mut session.txn.savepoints;
    let at = savepoints.find(&folded(name))?;
    // The later savepoints' settings fold into `at`'s level, which then goes back.
    for _ in at + 1..savepoints.open.len() {
        session.settings.release_savepoint();
    }
    session.settings.rollback_to_savepoint();
    savepoints.open.truncate(at + 1);
    let kept = &mut savepoints.open[at];
    kept.xid = None;
    let aborted = savepoints.subxids.split_off(kept.subxids_before);
    let (ddl_before, cursors_before) = (kept.ddl_before, kept.cursors_before);
    session.relation_locks.release_since(&db, kept.locks_before);
    session.cursors.close_declared_since(cursors_before);
    session.txn.ddl.rollback_to(ddl_before);
    session
        .txn
        .failed
        .store(false, std::sync::atomic::Ordering::Relaxed);
    (db.txns.abort_subtransactions(&aborted))
        .map_err(|e| PgError::io("could not write commit log", &e))?;
    Ok(Outcome::Done("ROLLBACK".into()))
}
