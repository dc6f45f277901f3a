//! Searching the tree: the descent to a leaf, and range scans along the leaf level.
//!
//! # Descent (Lehman and Yao)
//!
//! A search for `(key, tid)` starts at the root and goes down one page per level. The
//! root's block and level are kept with the open index file after the meta page was read
//! for them (PostgreSQL keeps the meta page in `rd_amcache`), so a descent reads the meta
//! page again only when the page it starts at is no longer the root: a root split clears
//! the old root's flag and gives it a right sibling. On an internal page it follows the downlink of the last item whose pivot is ≤
//! the search key (the first item is minus infinity, so there always is one). Before
//! that, on any page that has a right sibling, it compares the search key with the page's
//! high key: if the key is ≥ the high key, the page was split after its parent was read
//! and the key now lives further right, so the search follows `btpo_next` instead. A
//! writer (`insert.rs`) makes a split visible in the order right page, then left page,
//! then parent, each under that page's exclusive content lock, so a reader holding only
//! one shared page lock at a time always finds its key by moving right; no lock is held
//! across levels.
//!
//! # Range scans, a page at a time
//!
//! A scan descends once, to the leaf where its lower bound belongs (`(lo, −∞)` for
//! `key ≥ lo`, `(lo, +∞)` for `key > lo`, the leftmost leaf for no bound), then reads
//! leaves left to right through the sibling links. The descent holds no lock once it has
//! pinned the leaf, so the bound is looked up again when the leaf is read (a writer may
//! have split or deduplicated it meanwhile), and on the right sibling if the leaf holds
//! nothing at or above it any more. Each leaf is read whole under its shared lock: the
//! TIDs of its matching items (all of a posting list's) are copied out, with the
//! right-link as it was at that moment, and the page is unpinned before the caller sees
//! any TID. If the page splits later, its right half (holding items already copied) lies
//! between it and the remembered sibling, so nothing is returned twice or missed. The scan
//! ends at the first item above the upper bound, at the first NULL (NULLs sort last; a
//! range never contains NULL), or at the rightmost leaf. Every page is read through the
//! buffer pool with the caller's [`IoAccount`], so the scan shows in `Buffers:` and
//! `pg_stat_io`.
//! A scan given a read stream's configuration ([`BtreeScan::read_ahead`]) reads the next
//! leaves ahead instead of one at a time (`read_ahead.rs`); the links still decide which
//! page comes next.
//!
//! # Skip scans (PostgreSQL 18)
//!
//! An index on `(a, b)` also answers `WHERE b = 7`, or `a < 3 AND b = 7`, where the first
//! column does not bound the entries wanted to one stretch: they lie in one stretch per
//! value of `a`. A forward scan with a condition on the second column that does not bound
//! it tests each entry; when an entry's `b` is past the condition (NULLs sort last), the
//! rest of its `a` is too, and the scan descends again for the first entry after that
//! value of `a` (`(a, +∞)`; for integer and date keys straight to the next value's first
//! entry wanted, `(a + 1, lowest b wanted)`, as PostgreSQL's skip support does). When a
//! leaf ends below the condition (the next entries of its `a` could be many leaves of
//! smaller `b`), it descends for `(a, lowest b wanted)` rather than read on. Every descent counts as one of PostgreSQL 18's `Index Searches:`;
//! such a scan reads no leaves ahead (it goes where the descents lead). Backward scans
//! test each entry and do not skip.
//!
//! # Lists of keys (`= ANY`)
//!
//! A forward scan for a list of first-column values (`ColumnKeys::AnyOf`, ascending) is
//! one scan per value, taken in turn when the one before ends. The next value's entries
//! begin on the leaf where the last one ended, or right of it: when the next value is
//! below that leaf's high key (or the leaf is the rightmost), the scan reads the leaf again
//! (a buffer hit) and searches it, instead of descending — PostgreSQL 17+'s array keys do
//! the same within a page. Only descents count as `Index Searches:`. For the planner's
//! part in it, see `plan::index_cond`, and for a nested loop's first leaves read ahead,
//! [`BtreeIndex::first_leaf`].
//!
//! # Backward scans
//!
//! A scan in descending order ([`BtreeIndex::scan_range_backward`], for `ORDER BY key
//! DESC`; [`BtreeIndex::scan_all_backward`] with NULLs first) descends to the leaf where
//! its upper bound belongs (the rightmost leaf for every entry), moving right while the
//! bound is at or above a page's high key (a split since the descent), takes the items
//! below the bound from that leaf, then follows the left links, copying each leaf's TIDs
//! in reverse until an item falls below the lower bound. A left link can be stale: the
//! left page may have split since the scan read the page it came from, putting a new page
//! (the left page's upper half) between the two. So a page reached by going left is accepted only
//! if its right link, read under the lock that copies its items, points back to the page
//! the scan came from; otherwise the scan moves right along the right links until it
//! finds the page that does (PostgreSQL's `_bt_walk_left`). Pages are never deleted, so
//! such a page always exists.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use iolab_catalog::{PgError, PgResult};

use super::key::{self, Key, KeyColumns};
use super::page::{
    check_page, first_data_offset, tuple_at, BtMeta, IndexTuple, SearchKey, TidBound, METAPAGE,
    P_HIKEY, P_NONE,
};
use super::read_ahead::{LeafLimit, LeafReadAhead};
use super::{BtreeIndex, Tid};
use crate::accounting::IoAccount;
use crate::aio::AioSystem;
use crate::buffer::PinnedBuffer;
use crate::heap::codec::Datum;
use crate::storage::page as slotted;
use crate::stream::{ReadStreamConfig, ReadStreamStats};

/// How a forward scan finds its first leaf.
enum Start<'f> {
    /// A descent from the root.
    Descend,
    /// The leaf is given, read already.
    AtLeaf(PinnedBuffer),
    /// Not at all: the scan only finds the leaf's block, unread, and stops.
    FindLeaf(&'f mut Option<u32>),
    /// Not yet: the scan keeps where it would start (`deferred`), one of a list's.
    Deferred,
}

/// Where [`BtreeIndex::walk_down`] ended.
pub(super) enum Descent {
    /// The index has no root yet.
    Empty,
    /// The leaf where the search key belongs, pinned.
    Leaf(PinnedBuffer),
    /// The leaf where the search key belongs, not read (`walk_down`'s `leaf_unread`).
    LeafBlock(u32),
    /// This page's split was left incomplete by a crash: its right half has no downlink.
    IncompleteSplit(u32),
}

impl BtreeIndex {
    /// The meta page's contents.
    pub fn meta(&self, acct: &mut IoAccount) -> PgResult<BtMeta> {
        if self.rel.nblocks() == 0 {
            return Err(super::corrupted(format!(
                "index \"{}\" has no meta page",
                self.name
            )));
        }
        let buf = self.read(METAPAGE, acct)?;
        let page = buf.page();
        BtMeta::read(&page, &self.name)
    }

    /// The tree's height (the meta page's fast level) for the planner's costs, as
    /// PostgreSQL's `_bt_getrootheight`: the meta page is read once and its answer kept
    /// with the open file ([`RelFile::am_cache`](crate::storage::relfile::RelFile::am_cache))
    /// while the index keeps its size, so planning does no I/O for it again. The height
    /// changes only when the root splits, which adds pages.
    pub fn planning_height(&self, acct: &mut IoAccount) -> PgResult<u32> {
        let nblocks = self.rel.nblocks();
        let cached = self
            .rel
            .am_cache()
            .load(std::sync::atomic::Ordering::Acquire);
        // (size when read + 1) in the high half, the height in the low half.
        if cached >> 32 == u64::from(nblocks) + 1 {
            return Ok(cached as u32);
        }
        let height = self.meta(acct)?.fastlevel;
        let entry = ((u64::from(nblocks) + 1) << 32) | u64::from(height);
        self.rel
            .am_cache()
            .store(entry, std::sync::atomic::Ordering::Release);
        Ok(height)
    }

    /// Block `blkno` of the index, pinned.
    pub(super) fn read(&self, blkno: u32, acct: &mut IoAccount) -> PgResult<PinnedBuffer> {
        self.pool.read_buffer(&self.rel, blkno, None, acct)
    }

    /// Goes down to the leaf where `search` belongs (see the module comment), pushing the
    /// internal pages passed on the way onto `stack`. `None` for an empty index.
    pub(super) fn descend(
        &self,
        search: &SearchKey,
        stack: &mut Vec<u32>,
        acct: &mut IoAccount,
    ) -> PgResult<Option<PinnedBuffer>> {
        Ok(match self.walk_down(search, stack, false, false, acct)? {
            Descent::Empty => None,
            Descent::Leaf(leaf) => Some(leaf),
            Descent::LeafBlock(_) | Descent::IncompleteSplit(_) => {
                unreachable!("a reader's descent reads its leaf and passes incomplete splits")
            }
        })
    }

    /// The block of the leaf where `search` belongs, found through the internal pages
    /// without reading the leaf itself; `None` for an empty index.
    pub(super) fn leaf_block(
        &self,
        search: &SearchKey,
        acct: &mut IoAccount,
    ) -> PgResult<Option<u32>> {
        Ok(
            match self.walk_down(search, &mut Vec::new(), false, true, acct)? {
                Descent::Empty => None,
                Descent::Leaf(leaf) => Some(leaf.blkno()), // the root is the leaf
                Descent::LeafBlock(blkno) => Some(blkno),
                Descent::IncompleteSplit(_) => unreachable!("readers pass incomplete splits"),
            },
        )
    }

    /// [`descend`](Self::descend), stopping at the first page met whose split a crash
    /// left incomplete if `stop_at_incomplete_split` (an insert finishes it first), and
    /// before reading the leaf if `leaf_unread`.
    pub(super) fn walk_down(
        &self,
        search: &SearchKey,
        stack: &mut Vec<u32>,
        stop_at_incomplete_split: bool,
        leaf_unread: bool,
        acct: &mut IoAccount,
    ) -> PgResult<Descent> {
        let cache = self.rel.am_root();
        // (root + 1) << 32 | level, as the meta page named them; 0 when not known.
        let mut cached = cache.load(std::sync::atomic::Ordering::Acquire);
        let mut blkno = match cached {
            0 => P_NONE,
            c => (c >> 32) as u32 - 1,
        };
        if blkno >= self.rel.nblocks() {
            (blkno, cached) = (P_NONE, 0); // the file was truncated since
        }
        // Bounded by the pages of the index: each step goes right or down.
        let mut steps = 0u64;
        loop {
            if blkno == P_NONE {
                let meta = self.meta(acct)?;
                if meta.root == P_NONE {
                    return Ok(Descent::Empty);
                }
                blkno = meta.root;
                cached = 0;
                let entry = ((u64::from(meta.root) + 1) << 32) | u64::from(meta.level);
                cache.store(entry, std::sync::atomic::Ordering::Release);
            }
            steps += 1;
            if steps > self.rel.nblocks() as u64 + 1 {
                return Err(super::corrupted(format!(
                    "index \"{}\" has a cycle of sibling or child links",
                    self.name
                )));
            }
            let buf = self.read(blkno, acct)?;
            let child = {
                let page = buf.page();
                let opaque = check_page(&page, blkno, &self.name)?;
                if cached != 0 {
                    let still_root = opaque.is_root()
                        && opaque.prev == P_NONE
                        && opaque.is_rightmost()
                        && opaque.level == cached as u32;
                    cached = 0;
                    if !still_root {
                        blkno = P_NONE; // read the meta page for the root
                        continue;
                    }
                }
                if stop_at_incomplete_split && opaque.is_incomplete_split() {
                    return Ok(Descent::IncompleteSplit(blkno));
                }
                if !opaque.is_rightmost()
                    && search.compare(&self.columns, &tuple_at(&page, P_HIKEY)?)? != Ordering::Less
                {
                    blkno = opaque.next;
                    continue;
                }
                if opaque.is_leaf() {
                    None
                } else {
                    let first = first_data_offset(&opaque);
                    let max = slotted::page_max_offset(&page);
                    // The first item above the search key; the child is the one before.
                    let above = self.first_at_or_above(&page, search, first + 1, max, true)?;
                    let child = tuple_at(&page, above - 1)?.downlink();
                    if leaf_unread && opaque.level == 1 {
                        return Ok(Descent::LeafBlock(child));
                    }
                    Some(child)
                }
            };
            match child {
                None => return Ok(Descent::Leaf(buf)),
                Some(child) => {
                    stack.push(blkno);
                    blkno = child;
                }
            }
        }
    }

    /// Binary search among items `lo..=hi` of a page for the first item ≥ `search`
    /// (`strictly`: the first item > `search`); `hi + 1` when there is none.
    pub(super) fn first_at_or_above(
        &self,
        page: &[u8],
        search: &SearchKey,
        lo: u16,
        hi: u16,
        strictly: bool,
    ) -> PgResult<u16> {
        let (mut lo, mut hi) = (lo, hi + 1);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let ord = search.compare(&self.columns, &tuple_at(page, mid)?)?;
            let item_is_above = if strictly {
                ord == Ordering::Less
            } else {
                ord != Ordering::Greater
            };
            if item_is_above {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        Ok(lo)
    }

    /// The heap TIDs of the entries whose key columns are as `keys` says (one
    /// [`ColumnKeys`] per leading key column; missing columns admit anything), in (key,
    /// TID) order — descending with `backward` — read a leaf page at a time through the
    /// buffer pool into `acct`. A NULL bound makes the scan empty (as `a < NULL` is never
    /// true).
    ///
    /// The scan reads one contiguous stretch of the index, bounded as PostgreSQL's
    /// `_bt_first` bounds it: the leading columns that must equal one value (or be NULL)
    /// and then the first range make the bounds; every column after that range is tested
    /// on each entry, and entries that fail are skipped.
    ///
    /// A bound must be comparable with its column's keys (`Key::bound_for`): integers of
    /// any width for int2/int4/int8 keys, floats or integers for float keys, text for
    /// text, varchar and char keys, date for date, timestamp or timestamptz for
    /// timestamp[tz], numeric at the column's scale for numeric. Anything else is an
    /// internal error: the planner should not have chosen the index.
    ///
    /// ```ignore
    /// let tids: Vec<(u32, u16)> = index
    ///     .scan(&[ColumnKeys::Range(Bound::Unbounded, Bound::Excluded(Datum::Int4(140)))], false, &mut acct)?
    ///     .collect::<PgResult<_>>()?;
    /// ```
    pub fn scan<'a>(
        &self,
        keys: &[ColumnKeys<'_>],
        backward: bool,
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        self.scan_starting(keys, backward, Start::Descend, acct)
    }

    /// The block of the first leaf a forward [`scan`](Self::scan) for `keys` reads, found
    /// through the internal pages without reading the leaf (a nested loop reads the first
    /// leaves of many scans ahead through a read stream, then starts each scan there with
    /// [`scan_at_leaf`](Self::scan_at_leaf)); `None` when the scan or the index is empty.
    pub fn first_leaf(
        &self,
        keys: &[ColumnKeys<'_>],
        acct: &mut IoAccount,
    ) -> PgResult<Option<u32>> {
        let mut found = None;
        self.scan_starting(keys, false, Start::FindLeaf(&mut found), acct)?;
        Ok(found)
    }

    /// A forward [`scan`](Self::scan) for `keys` that starts at `leaf`, pinned (the block
    /// [`first_leaf`](Self::first_leaf) named, read since), instead of descending to it.
    /// The leaf is read as after a descent: if it split meanwhile, the scan moves right.
    pub fn scan_at_leaf<'a>(
        &self,
        keys: &[ColumnKeys<'_>],
        leaf: PinnedBuffer,
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        self.scan_starting(keys, false, Start::AtLeaf(leaf), acct)
    }

    fn scan_starting<'a>(
        &self,
        keys: &[ColumnKeys<'_>],
        backward: bool,
        first: Start<'_>,
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        if let Some(ColumnKeys::AnyOf(values)) = keys.first() {
            return self.scan_each(keys, values, backward, first, acct);
        }
        assert!(
            keys.len() <= self.columns.len(),
            "more scan keys than key columns"
        );
        assert!(
            !backward || matches!(first, Start::Descend),
            "only a forward scan starts at a given leaf"
        );
        let Some(conds) = self.column_conds(keys)? else {
            let scan = BtreeScan::new(self.clone(), acct, Wanted::nothing());
            if matches!(first, Start::Descend | Start::AtLeaf(_)) {
                scan.acct.relations().index_scan(self.relfilenode());
            }
            return Ok(scan);
        };
        // The bounds: equal-to-one-value columns, then the first range.
        let (mut lower, mut upper) = (Vec::new(), Vec::new());
        let (mut lower_inclusive, mut upper_inclusive) = (true, true);
        let mut null_ends_at = None;
        let mut bounded = 0;
        for cond in &conds {
            match cond {
                Cond::Any => break,
                Cond::Null => {
                    lower.push(Key::Null);
                    upper.push(Key::Null);
                    bounded += 1;
                }
                Cond::Range(Bound::Included(lo), Bound::Included(hi))
                    if key::compare(self.columns.kind(bounded), lo, hi) == Ordering::Equal =>
                {
                    lower.push(lo.clone());
                    upper.push(hi.clone());
                    bounded += 1;
                }
                Cond::Range(lo, hi) => {
                    match lo {
                        Bound::Included(k) => lower.push(k.clone()),
                        Bound::Excluded(k) => {
                            lower.push(k.clone());
                            lower_inclusive = false;
                        }
                        Bound::Unbounded => {}
                    }
                    match hi {
                        Bound::Included(k) => upper.push(k.clone()),
                        Bound::Excluded(k) => {
                            upper.push(k.clone());
                            upper_inclusive = false;
                        }
                        // NULLs sort after the column's values: the first ends the range.
                        Bound::Unbounded => null_ends_at = Some(bounded),
                    }
                    bounded += 1;
                    break;
                }
            }
        }
        let filters: Vec<(usize, Cond)> = (conds.into_iter().enumerate().skip(bounded))
            .filter(|(_, c)| !matches!(c, Cond::Any))
            .collect();
        if !backward {
            // A condition on the second column that does not bound the scan: skip through
            // the first column's values (module comment, "Skip scans").
            let skip = (filters.iter().find(|(c, _)| *c == 1)).map(|(_, cond)| Skip {
                second: cond.clone(),
                kind: self.columns.kind(1),
            });
            let start = SearchKey {
                key: lower,
                tid: if lower_inclusive {
                    TidBound::MinusInf
                } else {
                    TidBound::PlusInf
                },
            };
            let end = End::Upper {
                prefix: upper,
                inclusive: upper_inclusive,
                null_ends_at,
            };
            let wanted = Wanted { end, filters, skip };
            let mut scan = BtreeScan::new(self.clone(), acct, wanted);
            match first {
                Start::Descend => scan.start(start)?,
                Start::AtLeaf(leaf) => scan.start_at(start, leaf)?,
                Start::FindLeaf(found) => *found = self.leaf_block(&start, scan.acct)?,
                Start::Deferred => scan.deferred = Some(start),
            }
            return Ok(scan);
        }
        // Backward: from just above the upper bound (below the NULLs that end a range).
        let above = match null_ends_at {
            Some(_) => {
                upper.push(Key::Null);
                SearchKey {
                    key: upper,
                    tid: TidBound::MinusInf,
                }
            }
            None if upper.is_empty() => SearchKey {
                key: vec![Key::Null],
                tid: TidBound::PlusInf,
            },
            None => SearchKey {
                key: upper,
                tid: if upper_inclusive {
                    TidBound::PlusInf
                } else {
                    TidBound::MinusInf
                },
            },
        };
        let end = End::Lower {
            prefix: lower,
            inclusive: lower_inclusive,
        };
        let wanted = Wanted {
            end,
            filters,
            skip: None,
        };
        self.backward_from(above, wanted, acct)
    }

    /// A scan for each of `values` of the first column (and `keys` on the others), one
    /// after the other: the first starts now, the others when the one before ends.
    fn scan_each<'a>(
        &self,
        keys: &[ColumnKeys<'_>],
        values: &[Datum<'_>],
        backward: bool,
        first: Start<'_>,
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        assert!(
            !backward && matches!(first, Start::Descend),
            "a list of keys is scanned forward, from the root"
        );
        let mut scans = std::collections::VecDeque::with_capacity(values.len());
        for value in values {
            let mut one = keys.to_vec();
            one[0] = ColumnKeys::Range(
                Bound::Included(value.clone()),
                Bound::Included(value.clone()),
            );
            let mut scan = self.scan_starting(&one, false, Start::Deferred, &mut *acct)?;
            if let Some(start) = scan.deferred.take() {
                scans.push_back((
                    start,
                    std::mem::replace(&mut scan.wanted, Wanted::nothing()),
                ));
            }
        }
        let Some((start, wanted)) = scans.pop_front() else {
            let scan = BtreeScan::new(self.clone(), acct, Wanted::nothing());
            scan.acct.relations().index_scan(self.relfilenode());
            return Ok(scan);
        };
        let mut scan = BtreeScan::new(self.clone(), acct, wanted);
        scan.then = scans;
        scan.start(start)?;
        Ok(scan)
    }

    /// The scan keys as keys of each column's kind; `None` when a NULL bound makes the
    /// scan empty.
    fn column_conds(&self, keys: &[ColumnKeys<'_>]) -> PgResult<Option<Vec<Cond>>> {
        let mut conds = Vec::with_capacity(keys.len());
        for (i, keys) in keys.iter().enumerate() {
            let kind = self.columns.kind(i);
            let key = |d: &Datum<'_>| {
                Key::bound_for(kind, d.clone())
                    .map(Key::into_owned)
                    .ok_or_else(|| {
                        PgError::internal(format!(
                            "cannot compare {d:?} with the keys of column {} of index \"{}\" ({:?})",
                            i + 1,
                            self.name,
                            self.columns.ty(i)
                        ))
                    })
            };
            let bound = |b: &Bound<Datum<'_>>| -> PgResult<Option<Bound<Key<'static>>>> {
                Ok(Some(match b {
                    Bound::Unbounded => Bound::Unbounded,
                    Bound::Included(Datum::Null) | Bound::Excluded(Datum::Null) => return Ok(None),
                    Bound::Included(d) => Bound::Included(key(d)?),
                    Bound::Excluded(d) => Bound::Excluded(key(d)?),
                }))
            };
            conds.push(match keys {
                ColumnKeys::Any => Cond::Any,
                ColumnKeys::Null => Cond::Null,
                ColumnKeys::AnyOf(_) => {
                    return Err(PgError::internal(
                        "a list of keys is the scan's, not a column's",
                    ))
                }
                ColumnKeys::Range(lo, hi) => match (bound(lo)?, bound(hi)?) {
                    (Some(lo), Some(hi)) => Cond::Range(lo, hi),
                    _ => return Ok(None),
                },
            });
        }
        Ok(Some(conds))
    }

    /// The entries with `lower ≤/< key ≤/< upper` of a one-column index (see [`scan`](Self::scan)).
    pub fn scan_range<'a>(
        &self,
        lower: Bound<Datum<'_>>,
        upper: Bound<Datum<'_>>,
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        self.scan(&[ColumnKeys::Range(lower, upper)], false, acct)
    }

    /// The entries whose (first) key is NULL.
    pub fn scan_nulls<'a>(&self, acct: &'a mut IoAccount) -> PgResult<BtreeScan<'a>> {
        self.scan(&[ColumnKeys::Null], false, acct)
    }

    /// Every entry in descending order: NULLs first.
    pub fn scan_all_backward<'a>(&self, acct: &'a mut IoAccount) -> PgResult<BtreeScan<'a>> {
        self.scan(&[], true, acct)
    }

    /// [`scan_range`](Self::scan_range) in descending order.
    pub fn scan_range_backward<'a>(
        &self,
        lower: Bound<Datum<'_>>,
        upper: Bound<Datum<'_>>,
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        self.scan(&[ColumnKeys::Range(lower, upper)], true, acct)
    }

    /// Descends to the leaf where `above` belongs and reads leaves leftwards from there.
    fn backward_from<'a>(
        &self,
        above: SearchKey<'static>,
        wanted: Wanted,
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeScan<'a>> {
        let mut scan = BtreeScan::new(self.clone(), acct, wanted);
        scan.backward = true;
        scan.searches = 1;
        scan.acct.relations().index_scan(self.relfilenode());
        let Some(leaf) = self.descend(&above, &mut Vec::new(), scan.acct)? else {
            return Ok(scan);
        };
        let start = leaf.blkno();
        drop(leaf);
        scan.lower = Some(above); // the upper bound, for the first leaf
        scan.read_leaf_backward(start)?;
        Ok(scan)
    }

    /// Every entry in index order, NULLs last.
    pub fn scan_all<'a>(&self, acct: &'a mut IoAccount) -> PgResult<BtreeScan<'a>> {
        self.scan(&[], false, acct)
    }
}

/// What a scan wants of one key column.
#[derive(Clone, Debug, PartialEq)]
pub enum ColumnKeys<'d> {
    /// Any key, NULL included.
    Any,
    /// NULL keys.
    Null,
    /// The non-NULL keys within the bounds.
    Range(Bound<Datum<'d>>, Bound<Datum<'d>>),
    /// The keys equal to one of the values, given in ascending order, without NULL
    /// (PostgreSQL's `= ANY (array)`); first column only, forward scans only. The scan
    /// descends once per value, in order.
    AnyOf(Vec<Datum<'d>>),
}

/// [`ColumnKeys`] as keys of the column's kind.
#[derive(Clone, Debug)]
enum Cond {
    Any,
    Null,
    Range(Bound<Key<'static>>, Bound<Key<'static>>),
}

impl Cond {
    /// Where key `k` (of kind `kind`) lies against the keys the condition admits: below
    /// them, among them (`Equal`) or past them, in index order (NULLs last: a NULL is past
    /// every range, a value below NULL).
    fn place(&self, kind: key::KeyKind, k: &Key) -> Ordering {
        let order = |bound: &Key| key::compare(kind, k, bound);
        match self {
            Cond::Any => Ordering::Equal,
            Cond::Null if k.is_null() => Ordering::Equal,
            Cond::Null => Ordering::Less,
            Cond::Range(..) if k.is_null() => Ordering::Greater,
            Cond::Range(lo, hi) => {
                let below = match lo {
                    Bound::Included(l) => order(l).is_lt(),
                    Bound::Excluded(l) => order(l).is_le(),
                    Bound::Unbounded => false,
                };
                let past = match hi {
                    Bound::Included(u) => order(u).is_gt(),
                    Bound::Excluded(u) => order(u).is_ge(),
                    Bound::Unbounded => false,
                };
                match (below, past) {
                    (true, _) => Ordering::Less,
                    (_, true) => Ordering::Greater,
                    _ => Ordering::Equal,
                }
            }
        }
    }

    fn admits(&self, kind: key::KeyKind, k: &Key) -> bool {
        self.place(kind, k).is_eq()
    }
}

/// Where a scan's stretch of the index ends, in its direction.
enum End {
    /// Forward: past the entries whose first columns are ≤ (`inclusive`) or < `prefix`
    /// (an empty prefix: no bound), or at a NULL in column `null_ends_at` after an equal
    /// prefix (the end of a range open above).
    Upper {
        prefix: Vec<Key<'static>>,
        inclusive: bool,
        null_ends_at: Option<usize>,
    },
    /// Backward: below the entries whose first columns are ≥ (`inclusive`) or > `prefix`.
    Lower {
        prefix: Vec<Key<'static>>,
        inclusive: bool,
    },
}

/// What a scan returns: the entries of one stretch (`end`) that pass `filters`, tests of
/// the columns after the bounds (column number, keys admitted); with `skip`, where to
/// jump to when an entry fails the second column's test.
struct Wanted {
    end: End,
    filters: Vec<(usize, Cond)>,
    skip: Option<Skip>,
}

/// A skip scan's test of the second key column (its kind).
struct Skip {
    second: Cond,
    kind: key::KeyKind,
}

/// Whether an entry is wanted.
#[derive(PartialEq)]
enum Admit {
    Yes,
    /// Not this one; later ones may be.
    Skip,
    /// Not this one: in a skip scan, its second column is past the keys wanted, and so are
    /// those of the rest of its first column's value (the first column's key).
    SkipPast(Key<'static>),
    /// Not this one: in a skip scan, its second column is below the keys wanted (the
    /// first column's key).
    SkipBelow(Key<'static>),
    /// Not this one nor any after it.
    End,
}

impl Skip {
    /// What to do with an entry that failed a test: skip past the rest of its first
    /// column's value, descend to the second column's keys, or (the second column passed,
    /// another failed) go on.
    fn place(&self, key: &[Key]) -> Admit {
        let first = || key[0].clone().into_owned();
        match self.second.place(self.kind, &key[1]) {
            Ordering::Less => Admit::SkipBelow(first()),
            Ordering::Greater => Admit::SkipPast(first()),
            Ordering::Equal => Admit::Skip,
        }
    }

    /// Where a descent for the entries after first-column key `first` goes: for integer
    /// and date keys, whose next value is known (PostgreSQL's skip support), straight to
    /// that value's first wanted entry; else to the first entry of a larger key.
    fn after(&self, first: Key<'static>) -> SearchKey<'static> {
        let next = match &first {
            Key::Int(v) => v.checked_add(1).map(Key::Int),
            Key::Date(d) => d.checked_add(1).map(Key::Date),
            _ => None,
        };
        match next {
            Some(next) => self.first_of(next),
            None => SearchKey {
                key: vec![first],
                tid: TidBound::PlusInf,
            },
        }
    }

    /// Where a descent for the first wanted entry of first-column key `first` goes.
    fn first_of(&self, first: Key<'static>) -> SearchKey<'static> {
        match &self.second {
            Cond::Range(Bound::Included(l), _) => SearchKey {
                key: vec![first, l.clone()],
                tid: TidBound::MinusInf,
            },
            Cond::Range(Bound::Excluded(l), _) => SearchKey {
                key: vec![first, l.clone()],
                tid: TidBound::PlusInf,
            },
            Cond::Null => SearchKey {
                key: vec![first, Key::Null],
                tid: TidBound::MinusInf,
            },
            Cond::Range(Bound::Unbounded, _) | Cond::Any => SearchKey {
                key: vec![first],
                tid: TidBound::MinusInf,
            },
        }
    }
}

impl Wanted {
    /// A scan that returns nothing.
    fn nothing() -> Wanted {
        Wanted {
            end: End::Upper {
                prefix: vec![Key::Null],
                inclusive: false,
                null_ends_at: Some(0),
            },
            filters: Vec::new(),
            skip: None,
        }
    }

    fn admits(&self, index: &BtreeIndex, t: &IndexTuple) -> PgResult<Admit> {
        let columns = &*index.columns;
        let key = t.key(columns)?;
        let past = match &self.end {
            End::Upper {
                prefix,
                inclusive,
                null_ends_at,
            } => {
                let ord = columns.compare(&key, prefix);
                ord == Ordering::Greater
                    || (ord == Ordering::Equal && !prefix.is_empty() && !inclusive)
                    || (ord == Ordering::Equal && null_ends_at.is_some_and(|c| key[c].is_null()))
            }
            End::Lower { prefix, inclusive } => {
                let ord = columns.compare(&key, prefix);
                ord == Ordering::Less
                    || (ord == Ordering::Equal && !prefix.is_empty() && !inclusive)
            }
        };
        if past {
            return Ok(Admit::End);
        }
        let passes = (self.filters.iter()).all(|(c, cond)| cond.admits(columns.kind(*c), &key[*c]));
        Ok(match (passes, &self.skip) {
            (true, _) => Admit::Yes,
            (false, Some(skip)) => skip.place(&key),
            (false, None) => Admit::Skip,
        })
    }

    /// Whether every entry at or after `search` is past a forward scan's end.
    fn ends_before(&self, columns: &KeyColumns, search: &SearchKey) -> bool {
        let End::Upper {
            prefix, inclusive, ..
        } = &self.end
        else {
            return false;
        };
        if prefix.is_empty() {
            return false;
        }
        match columns.compare(&search.key, prefix) {
            Ordering::Greater => true,
            Ordering::Equal => search.key.len() >= prefix.len() && !inclusive,
            Ordering::Less => false,
        }
    }

    fn leaf_limit(&self) -> LeafLimit<'_> {
        match &self.end {
            End::Upper {
                prefix,
                inclusive,
                null_ends_at,
            } => LeafLimit::Upper {
                prefix,
                inclusive: *inclusive,
                null_ends_at: *null_ends_at,
            },
            End::Lower { .. } => LeafLimit::None,
        }
    }
}

/// A range scan in progress: an iterator of heap TIDs in index order (see
/// [`BtreeIndex::scan_range`]). Reads the next leaf when the TIDs copied from the current
/// one are used up; holds no pin between calls, except those of its read-ahead
/// ([`BtreeScan::read_ahead`]).
pub struct BtreeScan<'a> {
    index: BtreeIndex,
    acct: &'a mut IoAccount,
    wanted: Wanted,
    /// TIDs of the current leaf not yet returned.
    tids: std::vec::IntoIter<Tid>,
    /// When the index returns keys: the key columns of each TID of the leaf, one after the
    /// other; where the next TID's start, and where the last returned TID's do.
    keys: Vec<Key<'static>>,
    next_key: usize,
    last_key: Option<usize>,
    /// The next leaf to read, `P_NONE` when the scan has ended.
    next_leaf: u32,
    leaves_read: u64,
    /// The first leaf, and the internal page the descent reached it from (`P_NONE`: the
    /// root is a leaf); where read-ahead starts.
    first_leaf: u32,
    parent: u32,
    read_ahead: Option<LeafReadAhead>,
    /// The lower bound until a leaf holding an item at or above it was read; a backward
    /// scan's upper bound (the first entry above its range) until its first leaf is read.
    lower: Option<SearchKey<'static>>,
    /// What the read-ahead's streams did; `None` while none ran.
    read_ahead_stats: Option<ReadStreamStats>,
    /// A backward scan: `next_leaf` is the left sibling of `came_from`, the leaf read last
    /// (`P_NONE` before the first).
    backward: bool,
    came_from: u32,
    /// A skip scan's next descent, taken when the TIDs copied are used up.
    jump: Option<SearchKey<'static>>,
    searches: u64,
    /// The scans of a list's next values (`ColumnKeys::AnyOf`), taken in turn when the
    /// one before ends: where each starts and what it wants.
    then: std::collections::VecDeque<(SearchKey<'static>, Wanted)>,
    /// Where a scan not started yet would start (`Start::Deferred`).
    deferred: Option<SearchKey<'static>>,
    /// While a list's values remain: the leaf read last and its high key (`None` on the
    /// rightmost leaf).
    last_leaf: Option<(u32, Option<Vec<u8>>)>,
}

impl<'a> BtreeScan<'a> {
    fn new(index: BtreeIndex, acct: &'a mut IoAccount, wanted: Wanted) -> BtreeScan<'a> {
        BtreeScan {
            index,
            acct,
            wanted,
            tids: Vec::new().into_iter(),
            keys: Vec::new(),
            next_key: 0,
            last_key: None,
            next_leaf: P_NONE,
            leaves_read: 0,
            first_leaf: P_NONE,
            parent: P_NONE,
            read_ahead: None,
            lower: None,
            read_ahead_stats: None,
            backward: false,
            came_from: P_NONE,
            jump: None,
            searches: 0,
            then: std::collections::VecDeque::new(),
            deferred: None,
            last_leaf: None,
        }
    }

    /// Read the scan's next leaves ahead through a read stream configured by `config`
    /// (see `read_ahead.rs`), instead of one at a time as the sibling links reach them.
    /// Nothing changes for a scan that ends on its first leaf.
    pub fn read_ahead(mut self, aio: Arc<AioSystem>, config: ReadStreamConfig) -> PgResult<Self> {
        // A skip scan jumps by descents, not along the leaves.
        let skips = self.wanted.skip.is_some();
        if self.next_leaf == P_NONE || self.parent == P_NONE || self.read_ahead.is_some() || skips {
            return Ok(self);
        }
        self.read_ahead = LeafReadAhead::start(
            &self.index,
            aio,
            config,
            self.parent,
            self.first_leaf,
            self.wanted.leaf_limit(),
            self.acct,
        )?;
        Ok(self)
    }

    /// Release the read-ahead's pins and give its account back.
    fn stop_read_ahead(&mut self) {
        if let Some(read_ahead) = self.read_ahead.take() {
            let stats = read_ahead.finish(self.acct);
            self.read_ahead_stats
                .get_or_insert_with(Default::default)
                .add(&stats);
        }
    }

    /// End the read-ahead now (the scan goes on one leaf at a time) and return what its
    /// streams did; `None` when the scan never read ahead.
    pub fn finish_read_ahead(&mut self) -> Option<ReadStreamStats> {
        self.stop_read_ahead();
        self.read_ahead_stats
    }

    /// Leaf pages read so far.
    pub fn leaves_read(&self) -> u64 {
        self.leaves_read
    }

    /// Descents of the tree so far (PostgreSQL 18's `Index Searches:`): one, and one per
    /// jump of a skip scan.
    pub fn searches(&self) -> u64 {
        self.searches
    }

    /// The scan's I/O account.
    pub fn acct(&mut self) -> &mut IoAccount {
        LeafReadAhead::account(&mut self.read_ahead, self.acct)
    }

    fn start(&mut self, search: SearchKey<'static>) -> PgResult<()> {
        self.searches += 1;
        self.acct.relations().index_scan(self.index.relfilenode());
        let mut stack = Vec::new();
        let Some(leaf) = self.index.descend(&search, &mut stack, self.acct)? else {
            return Ok(());
        };
        self.first_leaf = leaf.blkno();
        self.parent = stack.last().copied().unwrap_or(P_NONE);
        self.lower = Some(search);
        self.read_leaf(leaf)
    }

    /// [`start`](Self::start) at `leaf`, read already: the descent's search, without the
    /// descent (no read-ahead: the internal page above is not known). A skip scan, which
    /// descends again anyway, takes the usual way.
    fn start_at(&mut self, search: SearchKey<'static>, leaf: PinnedBuffer) -> PgResult<()> {
        if self.wanted.skip.is_some() {
            return self.start(search);
        }
        self.searches += 1;
        self.acct.relations().index_scan(self.index.relfilenode());
        self.first_leaf = leaf.blkno();
        self.lower = Some(search);
        self.read_leaf(leaf)
    }

    /// Copies the wanted TIDs of `leaf`, and where to go next. Until the scan has met its
    /// lower bound, the leaf is searched for it under the same lock that copies the items:
    /// a writer may change the page between the descent and this read (a split may even
    /// move the bound's place to the right sibling, which is then searched in turn).
    fn read_leaf(&mut self, leaf: PinnedBuffer) -> PgResult<()> {
        self.leaves_read += 1;
        let blkno = leaf.blkno();
        let page = leaf.page();
        let opaque = check_page(&page, blkno, &self.index.name)?;
        if !opaque.is_leaf() {
            return Err(super::corrupted(format!(
                "index \"{}\": sibling link to internal block {blkno} on the leaf level",
                self.index.name
            )));
        }
        if !self.then.is_empty() {
            // Where a list's next value may start without a descent (`next_tid`).
            let high_key = match opaque.is_rightmost() {
                true => None,
                false => Some(tuple_at(&page, P_HIKEY)?.bytes.to_vec()),
            };
            self.last_leaf = Some((blkno, high_key));
        }
        let max = slotted::page_max_offset(&page);
        let first = first_data_offset(&opaque);
        let start = match &self.lower {
            Some(search) => self
                .index
                .first_at_or_above(&page, search, first, max, false)?,
            None => first,
        };
        if start <= max {
            self.lower = None; // every item from here on, on this leaf and right of it, is above
        }
        // Keys ascend along the page (NULLs last), so without filters the entries wanted
        // are a prefix of the page's: when its last item is wanted every item from `start`
        // on is, and none needs testing (PostgreSQL 17's precheck).
        let all_wanted = start > max
            || (self.wanted.filters.is_empty()
                && self.wanted.admits(&self.index, &tuple_at(&page, max)?)? == Admit::Yes);
        let mut tids = Vec::with_capacity((max + 1).saturating_sub(start) as usize);
        let (mut keys, mut scratch) = (Vec::new(), Vec::new());
        let mut ended = false;
        // A skip scan's entry below the second column's keys, last seen.
        let mut below = None;
        for off in start..=max {
            let t = tuple_at(&page, off)?;
            if !all_wanted {
                match self.wanted.admits(&self.index, &t)? {
                    Admit::Yes => {}
                    Admit::Skip => continue,
                    Admit::SkipBelow(first) => {
                        below = Some(first);
                        continue;
                    }
                    Admit::SkipPast(first) => {
                        // The next value of the first column, by a descent (none when
                        // that value is known to be past the scan's end).
                        let skip = self.wanted.skip.as_ref().expect("skipping");
                        let jump = skip.after(first);
                        if !self.wanted.ends_before(&self.index.columns, &jump) {
                            self.jump = Some(jump);
                        }
                        ended = true;
                        break;
                    }
                    Admit::End => {
                        ended = true;
                        break;
                    }
                }
            }
            below = None;
            tids.extend(t.heap_tids());
            self.copy_key(&t, &mut keys, &mut scratch)?;
        }
        if let (Some(first), false, Some(skip)) = (below, ended, &self.wanted.skip) {
            // The leaf ended below the keys wanted: descend to them rather than read on.
            self.jump = Some(skip.first_of(first));
            ended = true;
        }
        self.next_leaf = if ended { P_NONE } else { opaque.next };
        LeafReadAhead::account(&mut self.read_ahead, self.acct)
            .relations()
            .index_tuples_read(self.index.relfilenode(), tids.len() as u64);
        self.tids = tids.into_iter();
        (self.keys, self.next_key) = (keys, 0);
        if self.next_leaf == P_NONE {
            self.stop_read_ahead();
        }
        Ok(())
    }

    /// When the index returns keys: appends `t`'s key columns to `keys` once for each of
    /// its TIDs (decoded through `scratch`, a buffer for the leaf).
    fn copy_key<'p>(
        &self,
        t: &IndexTuple<'p>,
        keys: &mut Vec<Key<'static>>,
        scratch: &mut Vec<Key<'p>>,
    ) -> PgResult<()> {
        if self.index.scans_return_keys {
            scratch.clear();
            t.key_into(&self.index.columns, scratch)?;
            for _ in 0..t.n_heap_tids() {
                keys.extend(scratch.iter().map(|k| k.clone().into_owned()));
            }
        }
        Ok(())
    }

    /// Copies, in descending order, the wanted TIDs of the next leaf going left: the one
    /// whose right link is `came_from`, or for the first leaf the one where the upper
    /// bound (`lower`) belongs; looking for it from `blkno` rightwards (see "Backward
    /// scans" in the module comment).
    fn read_leaf_backward(&mut self, mut blkno: u32) -> PgResult<()> {
        for _ in 0..=self.index.rel.nblocks() {
            let leaf = self.index.read(blkno, self.acct)?;
            let page = leaf.page();
            let opaque = check_page(&page, blkno, &self.index.name)?;
            if !opaque.is_leaf() {
                return Err(super::corrupted(format!(
                    "index \"{}\": sibling link to internal block {blkno} on the leaf level",
                    self.index.name
                )));
            }
            let first = first_data_offset(&opaque);
            let max = slotted::page_max_offset(&page);
            let end = match &self.lower {
                // The first leaf: the bound must lie below its high key, else a split since
                // the descent moved its place right.
                Some(above) => {
                    if !opaque.is_rightmost()
                        && above.compare(&self.index.columns, &tuple_at(&page, P_HIKEY)?)?
                            != Ordering::Less
                    {
                        blkno = opaque.next;
                        continue;
                    }
                    self.index
                        .first_at_or_above(&page, above, first, max, false)?
                }
                None if opaque.next != self.came_from => {
                    if opaque.next == P_NONE {
                        return Err(super::corrupted(format!(
                            "index \"{}\": no leaf links back to block {}",
                            self.index.name, self.came_from
                        )));
                    }
                    blkno = opaque.next; // the left page split: its new right half comes first
                    continue;
                }
                None => max + 1,
            };
            self.lower = None;
            self.leaves_read += 1;
            let mut tids = Vec::new();
            let (mut keys, mut scratch) = (Vec::new(), Vec::new());
            let mut ended = false;
            for off in (first..end).rev() {
                let t = tuple_at(&page, off)?;
                match self.wanted.admits(&self.index, &t)? {
                    Admit::Yes => {}
                    Admit::End => {
                        ended = true;
                        break;
                    }
                    // Backward scans do not skip.
                    Admit::Skip | Admit::SkipPast(_) | Admit::SkipBelow(_) => continue,
                }
                let from = tids.len();
                tids.extend(t.heap_tids());
                tids[from..].reverse(); // a posting list's TIDs ascend
                self.copy_key(&t, &mut keys, &mut scratch)?;
            }
            self.acct
                .relations()
                .index_tuples_read(self.index.relfilenode(), tids.len() as u64);
            self.tids = tids.into_iter();
            (self.keys, self.next_key) = (keys, 0);
            self.next_leaf = if ended { P_NONE } else { opaque.prev };
            self.came_from = blkno;
            return Ok(());
        }
        Err(super::corrupted(format!(
            "index \"{}\" has a cycle of sibling links",
            self.index.name
        )))
    }

    fn next_tid(&mut self) -> PgResult<Option<Tid>> {
        loop {
            if let Some(tid) = self.tids.next() {
                if self.index.scans_return_keys {
                    self.last_key = Some(self.next_key);
                    self.next_key += self.index.columns.len();
                }
                return Ok(Some(tid));
            }
            if let Some(jump) = self.jump.take() {
                self.start(jump)?;
                continue;
            }
            if self.next_leaf == P_NONE {
                let Some((start, wanted)) = self.then.pop_front() else {
                    return Ok(None);
                };
                // The next value's scan: read-ahead follows one scan's leaves only.
                self.stop_read_ahead();
                self.wanted = wanted;
                // Its entries begin on the leaf the last value's scan ended on, or right of
                // it; below that leaf's high key they begin there, and the leaf is read
                // again instead of descending (as PostgreSQL 17+ advances its array keys
                // within a page; `Index Searches:` counts descents).
                let here = match self.last_leaf.take() {
                    Some((blkno, None)) => Some(blkno),
                    Some((blkno, Some(high_key))) => {
                        let below =
                            start.compare(&self.index.columns, &IndexTuple::parse(&high_key)?)?;
                        (below == Ordering::Less).then_some(blkno)
                    }
                    None => None,
                };
                match here {
                    Some(blkno) => {
                        let leaf = self.index.read(blkno, self.acct)?;
                        self.lower = Some(start);
                        self.read_leaf(leaf)?;
                    }
                    None => self.start(start)?,
                }
                continue;
            }
            if self.backward {
                self.read_leaf_backward(self.next_leaf)?;
                continue;
            }
            let ahead = match &mut self.read_ahead {
                Some(read_ahead) => read_ahead.take(
                    &self.index,
                    self.next_leaf,
                    self.wanted.leaf_limit(),
                    self.acct,
                )?,
                None => None,
            };
            let leaf = match ahead {
                Some(leaf) => leaf,
                None => self.index.read(
                    self.next_leaf,
                    LeafReadAhead::account(&mut self.read_ahead, self.acct),
                )?,
            };
            self.read_leaf(leaf)?;
        }
    }
}

impl BtreeScan<'_> {
    /// The next TID, its key columns moved into `key`, for an index [returning
    /// keys](BtreeIndex::returning_keys).
    pub fn next_with_key(&mut self, key: &mut Vec<Key<'static>>) -> Option<PgResult<Tid>> {
        assert!(
            self.index.scans_return_keys,
            "next_with_key of an index not returning keys"
        );
        Some(self.next()?.map(|tid| {
            let at = self.last_key.take().expect("a key copied with each TID");
            let columns = &mut self.keys[at..at + self.index.columns.len()];
            key.clear();
            key.extend(columns.iter_mut().map(|k| std::mem::replace(k, Key::Null)));
            tid
        }))
    }
}

impl Iterator for BtreeScan<'_> {
    type Item = PgResult<Tid>;

    fn next(&mut self) -> Option<PgResult<Tid>> {
        match self.next_tid() {
            Ok(Some(tid)) => Some(Ok(tid)),
            Ok(None) => None,
            Err(e) => {
                self.next_leaf = P_NONE;
                self.jump = None;
                self.then.clear();
                self.tids = Vec::new().into_iter();
                self.keys.clear();
                self.stop_read_ahead();
                Some(Err(e))
            }
        }
    }
}

impl Drop for BtreeScan<'_> {
    fn drop(&mut self) {
        self.stop_read_ahead();
    }
}
