//! Verifying an index: its structure, and (optionally) that it holds exactly the table's
//! live tuples — in the spirit of PostgreSQL's `amcheck` (`bt_index_check` with
//! `heapallindexed`), behind iolab's own SQL function `iolab_btree_check(index)`.
//!
//! The check walks each level from its leftmost page along the right-links and asserts:
//!
//! * every page is a live B-tree page of the expected level, leaf iff level 0, with a sane
//!   header, and its left-link names the page before it;
//! * items are strictly ascending by (key, heap TID), and below the page's high key; a
//!   posting list's TIDs ascend, and the list's range ends before the next item begins;
//! * an internal page's first item is minus infinity; each downlink leads to a page one
//!   level down whose high key equals the next pivot of the parent (or the parent's own
//!   high key for the last downlink; none if the parent is rightmost), and the children of
//!   a level, read through their parents, are exactly the pages met walking that level;
//! * the first item of each leaf is ≥ the previous leaf's high key;
//! * the meta page names the root, of the tree's height, and the root is alone on its
//!   level.
//!
//! A split a crash cut short (the left half flagged `BTP_INCOMPLETE_SPLIT`, the right half
//! without a downlink yet, `insert.rs`) is a valid state: the right half then takes over
//! the end of the range the parent gave the left one, as amcheck allows.
//!
//! With the heap check, the table's live tuples are read and sorted as a build would, and
//! the index's leaf entries must be exactly that sequence of (key, TID). The index may
//! additionally hold entries of rows whose transaction aborted after they were inserted
//! (an index never forgets an entry); those are tolerated when their heap tuple is dead.

use std::cmp::Ordering;

use iolab_catalog::PgResult;

use super::build::{scan_heap_into_buffer, HeapSource};
use super::key::{Key, KeyColumns};
use super::page::{
    check_page, compare_tuples, first_data_offset, high_key, tuple_at, BtOpaque, IndexTuple,
    SearchKey, TidBound, P_NONE,
};
use super::{corrupted, BtreeIndex, Tid};
use crate::accounting::IoAccount;
use crate::storage::page as slotted;

/// What a check found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    /// Leaf entries (heap TIDs the index points to).
    pub entries: u64,
    /// Of those, entries of dead heap tuples (rows of aborted inserts; heap check only).
    pub dead_entries: u64,
    pub leaf_pages: u64,
    pub internal_pages: u64,
    /// Levels (0 for an empty index).
    pub height: u32,
}

impl BtreeIndex {
    /// Checks the structure (see the module comment); XX002 on the first violation.
    pub fn check_structure(&self, acct: &mut IoAccount) -> PgResult<CheckReport> {
        self.check_with(acct, &mut |_, _| Ok(()))
    }

    /// Checks the structure and that the leaf entries are exactly the live tuples of the
    /// table described by `heap` (see the module comment).
    pub fn check_against_heap(
        &self,
        heap: &HeapSource,
        acct: &mut IoAccount,
        check_cancel: &dyn Fn() -> PgResult<()>,
    ) -> PgResult<CheckReport> {
        let mut dead = Vec::new();
        let mut expected = scan_heap_into_buffer(
            heap,
            acct,
            check_cancel,
            &mut |_| {},
            Some(&mut dead),
            &self.columns,
        )?;
        expected.sort();
        dead.sort_unstable();
        let mut next = 0usize;
        let mut dead_entries = 0u64;
        let columns = self.columns.clone();
        let name = self.name.clone();
        let mut report = self.check_with(acct, &mut |key, tid| {
            if dead.binary_search(&tid).is_ok() {
                dead_entries += 1;
                return Ok(());
            }
            if next >= expected.len() {
                return Err(corrupted(format!(
                    "index \"{name}\" has an entry for heap tuple ({},{}) beyond the table's live tuples",
                    tid.0, tid.1
                )));
            }
            expected.with_entry(next, |want_key, want_tid| {
                if columns.compare(key, want_key) != Ordering::Equal || tid != want_tid {
                    return Err(corrupted(format!(
                        "index \"{name}\" entry {next} is {key:?} → ({},{}); the table has {want_key:?} at ({},{})",
                        tid.0, tid.1, want_tid.0, want_tid.1
                    )));
                }
                Ok(())
            })?;
            next += 1;
            Ok(())
        })?;
        if next != expected.len() {
            return Err(corrupted(format!(
                "index \"{}\" lacks entries: it has {next}, the table {} live tuples",
                self.name,
                expected.len()
            )));
        }
        report.dead_entries = dead_entries;
        Ok(report)
    }

    /// The structural walk; `visit` sees every leaf entry in order.
    fn check_with(
        &self,
        acct: &mut IoAccount,
        visit: &mut dyn FnMut(&[Key], Tid) -> PgResult<()>,
    ) -> PgResult<CheckReport> {
        let meta = self.meta(acct)?;
        let mut report = CheckReport::default();
        if meta.root == P_NONE {
            if self.rel.nblocks() > 1 {
                return Err(corrupted(format!(
                    "index \"{}\" has no root but {} blocks",
                    self.name,
                    self.rel.nblocks()
                )));
            }
            return Ok(report);
        }
        report.height = meta.level + 1;
        // Pages of the level below, in the order the parents' downlinks list them, with
        // the high key each must have.
        let mut expected_children: Vec<(u32, Option<Vec<u8>>)> = vec![(meta.root, None)];
        for level in (0..=meta.level).rev() {
            let mut next_children = Vec::new();
            let mut prev_blkno = P_NONE;
            let mut prev_high_key: Option<Vec<u8>> = None;
            let mut blkno = expected_children[0].0;
            let mut walked = 0usize;
            while blkno != P_NONE {
                let Some((want_blkno, want_high_key)) = expected_children.get(walked) else {
                    return Err(corrupted(format!(
                        "index \"{}\": block {blkno} on level {level} has no downlink",
                        self.name
                    )));
                };
                if *want_blkno != blkno {
                    return Err(corrupted(format!(
                        "index \"{}\": level {level} links to block {blkno}, its parents to block {want_blkno}",
                        self.name
                    )));
                }
                let buf = self.read(blkno, acct)?;
                let page = buf.page();
                let opaque = check_page(&page, blkno, &self.name)?;
                let fail = |what: String| {
                    corrupted(format!(
                        "index \"{}\" block {blkno} (level {level}): {what}",
                        self.name
                    ))
                };
                if opaque.level != level {
                    return Err(fail(format!("page says level {}", opaque.level)));
                }
                if opaque.prev != prev_blkno {
                    return Err(fail(format!(
                        "left-link {} where the page before is {prev_blkno}",
                        opaque.prev
                    )));
                }
                // A root that split without its new root yet: neither half is flagged root.
                let root_split =
                    level == meta.level && (opaque.is_incomplete_split() || walked > 0);
                if !root_split && (level == meta.level) != opaque.is_root() {
                    return Err(fail("root flag wrong".into()));
                }
                let high_key = high_key(&page, &opaque)?;
                let mut want_high_key = want_high_key.clone();
                if opaque.is_incomplete_split() {
                    // Its right half takes the end of its range; its own high key is the
                    // separator that has not reached the parent.
                    let range_end = std::mem::replace(&mut want_high_key, high_key.clone());
                    expected_children.insert(walked + 1, (opaque.next, range_end));
                }
                match (&high_key, &want_high_key) {
                    (None, None) => {}
                    (Some(h), Some(w)) => {
                        let h = super::page::IndexTuple::parse(h)?;
                        let w = super::page::IndexTuple::parse(w)?;
                        if compare_tuples(&self.columns, &h, &w)? != Ordering::Equal {
                            return Err(fail(
                                "high key differs from the parent's separator".into(),
                            ));
                        }
                    }
                    _ => {
                        return Err(fail(format!(
                            "is {}rightmost, its parent says otherwise",
                            if high_key.is_none() { "" } else { "not " }
                        )))
                    }
                }
                self.check_items(
                    &page,
                    &opaque,
                    high_key.as_deref(),
                    prev_high_key.as_deref(),
                    &mut next_children,
                    visit,
                    &mut report,
                )
                .map_err(|e| fail(e.message))?;
                if opaque.is_leaf() {
                    report.leaf_pages += 1;
                } else {
                    report.internal_pages += 1;
                }
                walked += 1;
                prev_blkno = blkno;
                prev_high_key = high_key;
                blkno = opaque.next;
            }
            if walked != expected_children.len() {
                return Err(corrupted(format!(
                    "index \"{}\": level {level} has {walked} pages, its parents {} downlinks",
                    self.name,
                    expected_children.len()
                )));
            }
            expected_children = next_children;
        }
        Ok(report)
    }

    /// The items of one page: ascending, below the high key, above the previous page's
    /// high key (leaves); collects the downlinks of internal pages.
    #[allow(clippy::too_many_arguments)]
    fn check_items(
        &self,
        page: &[u8],
        opaque: &BtOpaque,
        high_key: Option<&[u8]>,
        prev_high_key: Option<&[u8]>,
        children: &mut Vec<(u32, Option<Vec<u8>>)>,
        visit: &mut dyn FnMut(&[Key], Tid) -> PgResult<()>,
        report: &mut CheckReport,
    ) -> PgResult<()> {
        let first = first_data_offset(opaque);
        let max = slotted::page_max_offset(page);
        let high = high_key.map(super::page::IndexTuple::parse).transpose()?;
        let mut previous: Option<super::page::IndexTuple> = None;
        // `a` sorts before `b`; on a leaf, a posting list's whole range (its last TID) does.
        let precedes = |a: &IndexTuple, b: &IndexTuple| -> PgResult<bool> {
            if opaque.is_leaf() {
                below(&self.columns, a, b)
            } else {
                Ok(compare_tuples(&self.columns, a, b)? == Ordering::Less)
            }
        };
        let mut level_children = Vec::new();
        for off in first..=max {
            let t = tuple_at(page, off)?;
            if opaque.is_leaf() == t.is_pivot() {
                return Err(corrupted(format!(
                    "item {off} is {}a pivot",
                    if t.is_pivot() { "" } else { "not " }
                )));
            }
            if !opaque.is_leaf() && (off == first) != (t.natts(&self.columns) == 0) {
                return Err(corrupted(format!(
                    "item {off}: only the first item of an internal page is minus infinity"
                )));
            }
            if t.is_posting() {
                let tids: Vec<Tid> = t.heap_tids().collect();
                if tids.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(corrupted(format!(
                        "item {off}: posting list TIDs do not ascend"
                    )));
                }
            }
            if let Some(p) = &previous {
                if !precedes(p, &t)? {
                    return Err(corrupted(format!(
                        "item {off} is not above item {}",
                        off - 1
                    )));
                }
            } else if let (true, Some(bound)) = (opaque.is_leaf(), prev_high_key) {
                let bound = super::page::IndexTuple::parse(bound)?;
                if compare_tuples(&self.columns, &t, &bound)? == Ordering::Less {
                    return Err(corrupted(
                        "first item is below the left sibling's high key".into(),
                    ));
                }
            }
            if let Some(h) = &high {
                if !precedes(&t, h)? {
                    return Err(corrupted(format!("item {off} is not below the high key")));
                }
            }
            if opaque.is_leaf() {
                let key = t.key(&self.columns)?;
                for tid in t.heap_tids() {
                    report.entries += 1;
                    visit(&key, tid)?;
                }
            } else {
                level_children.push((t.downlink(), t));
            }
            previous = Some(t);
        }
        if !opaque.is_leaf() && level_children.is_empty() {
            return Err(corrupted("internal page without downlinks".into()));
        }
        // Child i must end where pivot i + 1 begins; the last child where this page ends.
        for i in 0..level_children.len() {
            let child_high_key = match level_children.get(i + 1) {
                Some((_, next)) => Some(next.with_downlink(P_NONE)),
                None => high_key.map(|h| h.to_vec()),
            };
            children.push((level_children[i].0, child_high_key));
        }
        Ok(())
    }
}

/// Whether the last heap TID of leaf tuple `t` sorts below `next` (a leaf tuple or a high
/// key): a posting list's whole range must lie before what follows it.
fn below(columns: &KeyColumns, t: &IndexTuple, next: &IndexTuple) -> PgResult<bool> {
    let last = SearchKey {
        key: t.key(columns)?,
        tid: TidBound::Tid(t.max_heap_tid()),
    };
    Ok(last.compare(columns, next)? == Ordering::Less)
}
