//! Transactions: ids, the commit log, snapshots and tuple visibility.
//!
//! Every statement that writes runs inside a transaction with a 32-bit transaction id
//! (xid). Each heap tuple records the xid that inserted it (`t_xmin`) and the command id
//! within that transaction (`t_cid`). Whether the tuple is visible is decided, not by the
//! page, but by the commit log (`clog`): two bits per xid saying in progress, committed or
//! aborted. A transaction becomes visible to others at one instant, when its clog entry
//! flips to committed; rolling back is flipping it to aborted, and nothing on the pages
//! has to be undone. So a failed or cancelled INSERT…SELECT leaves its rows on the pages
//! but no one ever sees them.
//!
//! A reader takes a [`Snapshot`] at the start of each statement (PostgreSQL's READ
//! COMMITTED): the next xid not yet handed out, and the set of xids in progress at that
//! moment. A tuple is visible to the snapshot when its inserting xid
//! - is the reader's own transaction and was written by an earlier command (`cid < curcid`),
//!   so that `INSERT INTO t SELECT * FROM t` never reads its own output; or
//! - is older than the snapshot's horizon, was not in progress when the snapshot was
//!   taken, and is committed in the clog.
//! A concurrent reader therefore sees all or nothing of an INSERT, even if the INSERT
//! commits half-way through the reader's scan.
//!
//! Durability: a commit's WAL record is flushed before its clog byte is written (not
//! fsynced; the file is fsynced at checkpoints), and redo after a crash sets the status
//! of every transaction whose commit or abort record it replays (`crate::wal`). Xids are
//! handed out from ranges reserved in `global/xid_horizon` before use, so that after a
//! crash no xid is ever reused; xids that never ended are aborted at start-up.

pub mod clog;
pub mod manager;
pub mod snapshot;

pub use clog::{Clog, XidStatus};
pub use manager::TransactionManager;
pub use snapshot::{Snapshot, VisibilityChecker};

/// A transaction id. 0 is invalid; 1 and 2 are reserved, as in PostgreSQL.
pub type Xid = u32;
pub const INVALID_XID: Xid = 0;
/// The first xid handed to a user transaction.
pub const FIRST_NORMAL_XID: Xid = 3;
