//! What VACUUM removes from a heap page, and how.
//!
//! A tuple is *dead* — no snapshot sees it, now or later — when the transaction that
//! inserted it aborted, or when a committed transaction older than the removal horizon
//! deleted it (the horizon is the oldest transaction some snapshot may still see as
//! running: [`TransactionManager::oldest_nonremovable`]). A tuple deleted by a committed
//! transaction at or past the horizon is *recently dead*: it stays, and counts as dead but
//! not yet removable. Everything else stays as it is (PostgreSQL's
//! `HeapTupleSatisfiesVacuum`).
//!
//! Removing a dead tuple takes two steps when the table has indexes, as in PostgreSQL:
//! first its line pointer becomes *dead* (no storage; the tuple's bytes are freed when the
//! page is compacted), then, once the index entries pointing at it are gone, *unused*. A
//! table without indexes goes straight to unused. Line pointer numbers never change, so
//! the other tuples keep their ids; iolab never reuses an unused line pointer (new tuples
//! only go to the table's last page, at new line pointers).
//!
//! [`TransactionManager::oldest_nonremovable`]: crate::txn::TransactionManager::oldest_nonremovable

use crate::heap::tuple::{self, INVALID_XID};
use crate::storage::page::{self, LpFlags};
use crate::txn::clog::{Clog, XidStatus};
use crate::txn::Xid;

/// What pruning one page found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PagePruned {
    /// Dead tuples removed (their line pointers now dead or unused).
    pub removed: u64,
    /// Line pointers left dead, waiting for the indexes (in offset order).
    pub dead_items: Vec<u16>,
    /// Tuples deleted by a committed transaction some snapshot may still not see.
    pub recently_dead: u64,
    /// Tuples that stay and count as live: live, or being deleted by a running transaction
    /// (rows a running transaction is inserting stay too, but count when it commits, as
    /// in PostgreSQL).
    pub live: u64,
    /// Whether the page changed (it must be written).
    pub changed: bool,
    /// Whether every transaction now sees everything on the page (what
    /// [`page_all_visible`] would say of it).
    pub all_visible: bool,
}

/// Removes the dead tuples of `page` (see the module comment): their line pointers
/// become dead if `has_indexes`, else unused, and the page is compacted. `dead_items`
/// lists them with the dead line pointers already on the page. Changes the page only if
/// it removed something (or, without indexes, found dead line pointers to free).
pub fn prune_page(
    page: &mut [u8],
    horizon: Xid,
    clog: &mut StatusCache,
    has_indexes: bool,
) -> PagePruned {
    let mut result = PagePruned {
        all_visible: true,
        ..PagePruned::default()
    };
    let mut removable = Vec::new();
    // Dead line pointers an earlier VACUUM left (it was canceled, or the table's indexes
    // have been dropped since).
    let mut left_dead = Vec::new();
    for off in 1..=page::page_max_offset(page) {
        let Some(t) = page::page_item(page, off) else {
            if page::page_item_flags(page, off) == Some(LpFlags::Dead) {
                left_dead.push(off);
            }
            continue;
        };
        let state = vacuum_state(t, horizon, clog);
        match state {
            VacuumState::Dead => removable.push(off),
            VacuumState::RecentlyDead => result.recently_dead += 1,
            VacuumState::Live => result.live += 1,
            VacuumState::BeingInserted => {}
        }
        // What is removed does not count; what stays must be visible to all.
        result.all_visible &= state == VacuumState::Dead || visible_to_all(t, horizon, clog);
    }
    if !removable.is_empty() {
        let flags = if has_indexes {
            LpFlags::Dead
        } else {
            LpFlags::Unused
        };
        for &off in &removable {
            page::page_clear_item(page, off, flags);
        }
        page::page_repair_fragmentation(page);
        result.removed = removable.len() as u64;
        result.changed = true;
    }
    if has_indexes {
        removable.extend(left_dead);
        removable.sort_unstable();
        result.all_visible &= removable.is_empty();
        result.dead_items = removable;
    } else if !left_dead.is_empty() {
        set_unused(page, &left_dead);
        result.changed = true;
    }
    result
}

/// Whether every transaction sees everything on `page`: no dead line pointer, and every
/// tuple inserted by a committed transaction before `horizon` and deleted by none (the
/// visibility map's all-visible).
pub fn page_all_visible(page: &[u8], horizon: Xid, clog: &mut StatusCache) -> bool {
    (1..=page::page_max_offset(page)).all(|off| match page::page_item(page, off) {
        None => page::page_item_flags(page, off) != Some(LpFlags::Dead),
        Some(t) => visible_to_all(t, horizon, clog),
    })
}

/// Inserted by a committed transaction before `horizon`, deleted by none.
fn visible_to_all(t: &[u8], horizon: Xid, clog: &mut StatusCache) -> bool {
    let (xmin, xmax) = (tuple::xmin(t), tuple::deleter(t));
    xmin < horizon
        && clog.status(xmin) == XidStatus::Committed
        && (xmax == INVALID_XID || clog.status(xmax) == XidStatus::Aborted)
}

/// Marks the dead line pointers `offsets` of `page` unused: their index entries are gone.
pub fn set_unused(page: &mut [u8], offsets: &[u16]) {
    for &off in offsets {
        assert_eq!(
            page::page_item_flags(page, off),
            Some(LpFlags::Dead),
            "only dead line pointers become unused"
        );
        page::page_clear_item(page, off, LpFlags::Unused);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VacuumState {
    Dead,
    RecentlyDead,
    Live,
    BeingInserted,
}

/// The commit log, with the last two answers kept: a page's tuples come in long runs
/// written (and deleted) by one transaction, so most lookups repeat the one before.
pub struct StatusCache {
    clog: std::sync::Arc<Clog>,
    last: [(Xid, XidStatus); 2],
}

impl StatusCache {
    pub fn new(clog: std::sync::Arc<Clog>) -> StatusCache {
        StatusCache {
            clog,
            last: [(INVALID_XID, XidStatus::InProgress); 2],
        }
    }

    /// The status of `xid`. Only final statuses are kept (an in-progress one may change).
    fn status(&mut self, xid: Xid) -> XidStatus {
        if let Some(&(_, status)) = self.last.iter().find(|(x, _)| *x == xid) {
            return status;
        }
        let status = self.clog.status(xid);
        if status != XidStatus::InProgress {
            self.last = [(xid, status), self.last[0]];
        }
        status
    }
}

pub(crate) fn vacuum_state(t: &[u8], horizon: Xid, clog: &mut StatusCache) -> VacuumState {
    let xmin = tuple::xmin(t);
    match clog.status(xmin) {
        XidStatus::Aborted => return VacuumState::Dead,
        XidStatus::InProgress => return VacuumState::BeingInserted,
        XidStatus::Committed => {}
    }
    let xmax = tuple::deleter(t);
    if xmax == INVALID_XID || clog.status(xmax) != XidStatus::Committed {
        return VacuumState::Live;
    }
    if xmax < horizon {
        VacuumState::Dead
    } else {
        VacuumState::RecentlyDead
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::tuple::test_tuple;
    use crate::storage::relfile::tests::TempDir;

    fn tuple(xmin: Xid, xmax: Xid, payload: u8) -> Vec<u8> {
        test_tuple(xmin, xmax, 40, payload)
    }

    /// `t` with its `t_xmax` a row lock (`SELECT … FOR UPDATE`), not a delete.
    fn locked(mut t: Vec<u8>) -> Vec<u8> {
        let infomask = tuple::infomask(&t) | tuple::HEAP_XMAX_LOCK_ONLY;
        tuple::set_infomask(&mut t, infomask);
        t
    }

    #[test]
    fn removes_aborted_inserts_and_deletes_older_than_the_horizon() {
        let dir = TempDir::new("prune");
        let clog = std::sync::Arc::new(Clog::open(&dir.0.join("clog")).unwrap());
        let (committed, aborted, running, late) = (10, 11, 12, 20);
        clog.set_status(committed, XidStatus::Committed).unwrap();
        clog.set_status(aborted, XidStatus::Aborted).unwrap();
        clog.set_status(late, XidStatus::Committed).unwrap();
        let rows = [
            tuple(committed, INVALID_XID, 1),       // live
            tuple(aborted, INVALID_XID, 2),         // dead: aborted insert
            tuple(committed, committed, 3),         // dead: deleted before the horizon
            tuple(committed, late, 4),              // recently dead
            tuple(committed, running, 5),           // being deleted: stays
            tuple(running, INVALID_XID, 6),         // being inserted: stays, not counted
            tuple(committed, aborted, 7),           // delete aborted: live
            locked(tuple(committed, committed, 8)), // only locked: live
        ];
        for has_indexes in [true, false] {
            let mut page = vec![0u8; page::BLCKSZ];
            page::page_init(&mut page, 0);
            for r in &rows {
                page::page_add_item(&mut page, r).unwrap();
            }
            let free = page::page_free_space(&page);
            let pruned = prune_page(
                &mut page,
                15,
                &mut StatusCache::new(clog.clone()),
                has_indexes,
            );
            assert_eq!(
                (pruned.removed, pruned.recently_dead, pruned.live),
                (2, 1, 4)
            );
            assert_eq!(page::page_free_space(&page), free + 2 * 40);
            let gone = if has_indexes {
                LpFlags::Dead
            } else {
                LpFlags::Unused
            };
            assert_eq!(page::page_item_flags(&page, 2), Some(gone));
            assert_eq!(page::page_item_flags(&page, 3), Some(gone));
            for (off, r) in [
                (1u16, &rows[0]),
                (4, &rows[3]),
                (7, &rows[6]),
                (8, &rows[7]),
            ] {
                assert_eq!(page::page_item(&page, off), Some(r.as_slice()));
            }
            if has_indexes {
                assert_eq!(pruned.dead_items, vec![2, 3]);
                let again = prune_page(&mut page, 15, &mut StatusCache::new(clog.clone()), true);
                assert_eq!(
                    (again.removed, again.dead_items),
                    (0, vec![2, 3]),
                    "left dead"
                );
                set_unused(&mut page, &pruned.dead_items);
                assert_eq!(page::page_item_flags(&page, 2), Some(LpFlags::Unused));
            } else {
                assert!(pruned.dead_items.is_empty());
            }
            // Nothing more to remove the second time.
            let again = prune_page(
                &mut page,
                15,
                &mut StatusCache::new(clog.clone()),
                has_indexes,
            );
            assert_eq!((again.removed, again.live), (0, 4));
            assert!(again.dead_items.is_empty());
            assert!(!pruned.all_visible, "recently dead and running rows stay");
        }
        // A page of old committed rows and an aborted insert: all-visible once the insert
        // is gone, which takes its line pointer becoming unused when there are indexes.
        for has_indexes in [false, true] {
            let mut page = vec![0u8; page::BLCKSZ];
            page::page_init(&mut page, 0);
            for r in [&rows[0], &rows[1], &rows[6]] {
                page::page_add_item(&mut page, r).unwrap();
            }
            let mut cache = StatusCache::new(clog.clone());
            let pruned = prune_page(&mut page, 15, &mut cache, has_indexes);
            assert_eq!(pruned.all_visible, !has_indexes);
            assert_eq!(page_all_visible(&page, 15, &mut cache), pruned.all_visible);
            set_unused(&mut page, &pruned.dead_items);
            assert!(page_all_visible(&page, 15, &mut cache));
        }
    }
}
