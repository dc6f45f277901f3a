//! Inserting entries into a built tree, splitting pages that overflow.
//!
//! # One writer per index at a time
//!
//! INSERT and COPY add the entries of each batch of rows they append to the heap
//! ([`IndexMaintainer`](super::IndexMaintainer)): sorted by (key, TID), under the index's
//! writer lock, so writers of one index take turns (a batch at a time) while readers never
//! wait for them except for the moment a page is being rewritten (its content lock).
//! Sorting the batch makes consecutive entries land on the same leaf: while the next entry
//! is below the high key of the leaf the previous one went to (or that leaf is the
//! rightmost), it goes there without a new descent from the root.
//!
//! # Adding an entry to a leaf
//!
//! The leaf where `(key, TID)` belongs is found by the descent of `scan.rs`, remembering
//! the internal pages passed (the *stack*). The entry goes before the first item that is
//! greater — the heap TID makes every entry distinct, so equal keys stay in TID order.
//! If it fits, that is all.
//!
//! # Splitting a page
//!
//! A page that overflows is split at an item boundary into itself (the left half) and a
//! new page appended to the relation (the right half):
//!
//! * the split point (`split_point.rs`): on the rightmost page of a level, one that leaves
//!   the left page at the fill factor (the index's, 90 % by default, on leaves; 70 %
//!   above) — ascending inserts then leave full pages behind, as a build would; elsewhere
//!   where the halves are about equal, on leaves preferably between two different keys,
//!   and a leaf full of one key that more will follow is left 96 % full. Both halves must
//!   fit, which PostgreSQL's size limit (a third of a page per tuple) makes possible;
//! * the left page's new high key is the separator: on a leaf, the shortest pivot between
//!   the last item that stays and the first that moves (`page::truncate`); on an internal
//!   page, the first moving item's key, which then becomes the right page's minus
//!   infinity;
//! * the pages are written right first (unreachable until linked), then left (its new high
//!   key and right-link make the right half reachable: readers move right), then the old
//!   right sibling's left-link; then the separator with a downlink to the right page is
//!   inserted into the parent from the stack — which may split the parent in turn. When
//!   the root splits, a new root with two downlinks is made and the meta page points to
//!   it.
//!
//! The three page changes of a split are one WAL record, which also flags the left page
//! `BTP_INCOMPLETE_SPLIT`; the separator's insertion into the parent (or the new root and
//! meta page) is the next record, and clears the flag. A crash between the two leaves a
//! right half without a downlink, which readers reach by moving right; the next insert
//! whose descent meets the flagged page finishes the split first (inserts the separator,
//! found from the left page's high key and right-link), as PostgreSQL does.

use std::cmp::Ordering;

use iolab_catalog::{PgError, PgResult};

use super::key::Key;
use super::page::{
    build_page, check_page, data_items, first_data_offset, form_leaf, form_pivot, high_key,
    insert_item_at, too_big, truncate, tuple_at, BtMeta, BtOpaque, IndexTuple, SearchKey, TidBound,
    BTP_INCOMPLETE_SPLIT, BTP_LEAF, BTP_ROOT, BT_MAX_ITEM_SIZE, DEDUP_MAX_POSTING_SIZE, METAPAGE,
    P_NONE,
};
use super::scan::Descent;
use super::unique::{JudgeTuple, UniqueStop};
use super::{dedup, split_point, BtreeIndex, Tid};
use crate::accounting::IoAccount;
use crate::buffer::PinnedBuffer;
use crate::heap::liveness::Liveness;
use crate::storage::page as slotted;
use crate::wal::{self, Change, Move, PageEdit};

// Leaf and internal fill factors of a rightmost split (as the build's).
use super::build::NONLEAF_FILLFACTOR;

/// Where an entry goes on a page: `item` becomes item number `position`, and with a
/// posting list split the item at `replace.0` becomes `replace.1` (same size).
struct Placement {
    position: u16,
    item: Vec<u8>,
    replace: Option<(u16, Vec<u8>)>,
}

/// The leaf the previous entry of a sorted batch went to.
struct CachedLeaf {
    buffer: PinnedBuffer,
    stack: Vec<u32>,
    /// `None` on the rightmost leaf.
    high_key: Option<Vec<u8>>,
}

impl BtreeIndex {
    /// Inserts `(key, heap TID)` entries (in any order; they are sorted here). Holds the
    /// index's writer lock meanwhile. A key too large for an index tuple fails with
    /// PostgreSQL's error, naming `table` and the row's TID.
    pub fn insert_entries(
        &self,
        entries: &mut [(Vec<Key<'static>>, Tid)],
        table: &str,
        acct: &mut IoAccount,
    ) -> PgResult<()> {
        let done = self.insert_checked(entries, table, acct, None)?;
        assert_eq!(done, Ok(()), "only a uniqueness check stops an insertion");
        Ok(())
    }

    /// [`insert_entries`](Self::insert_entries); with `unique` (the index is unique; it
    /// judges the heap tuples of equal keys), an entry whose key a live row has stops the
    /// insertion before it (`unique.rs`): the entries before it are in, and the slice is
    /// left sorted.
    pub fn insert_checked(
        &self,
        entries: &mut [(Vec<Key<'static>>, Tid)],
        table: &str,
        acct: &mut IoAccount,
        mut unique: Option<&mut JudgeTuple>,
    ) -> PgResult<Result<(), UniqueStop>> {
        if entries.is_empty() {
            return Ok(Ok(()));
        }
        let columns = &*self.columns;
        entries.sort_by(|a, b| columns.compare(&a.0, &b.0).then(a.1.cmp(&b.1)));
        let lock = super::writer_lock(self.rel.relfilenode());
        let _writer = lock.lock();
        let mut cached: Option<CachedLeaf> = None;
        for (i, (key, tid)) in entries.iter().enumerate() {
            let item = form_leaf(columns, key, *tid);
            if item.len() > BT_MAX_ITEM_SIZE {
                return Err(too_big(item.len(), &self.name, table, *tid));
            }
            let search = SearchKey {
                key: key.clone(),
                tid: TidBound::Tid(*tid),
            };
            let reuse = match &cached {
                Some(c) => match &c.high_key {
                    None => true,
                    Some(hk) => search.compare(columns, &IndexTuple::parse(hk)?)? == Ordering::Less,
                },
                None => false,
            };
            let (buffer, mut stack) = match cached.take() {
                Some(c) if reuse => (c.buffer, c.stack),
                _ => self.leaf_for_insert(&search, acct)?,
            };
            let high_key = {
                let page = buffer.page();
                let opaque = check_page(&page, buffer.blkno(), &self.name)?;
                high_key(&page, &opaque)?
            };
            // Where the entry goes, found once for the check and the insert (nothing
            // changes the leaf in between: this writer holds the lock).
            let mut placed = None;
            // A key with a NULL column equals no other (NULLs are distinct).
            let checked = !key.iter().any(Key::is_null);
            if let Some(judge) = unique.as_deref_mut().filter(|_| checked) {
                let placement = self.place(&buffer, &search, *tid, &item)?;
                let at = placement.position;
                placed = Some(placement);
                if self.may_have_equal_key(&buffer, key, at)? {
                    match self.first_conflict(key, judge, acct)? {
                        None => {}
                        Some((_, Liveness::InProgress(holder))) => {
                            return Ok(Err(UniqueStop::WaitFor { holder, next: i }))
                        }
                        Some(_) => return Ok(Err(UniqueStop::Duplicate(i))),
                    }
                }
            }
            let mut deduplicated = false;
            loop {
                let placement = match placed.take() {
                    Some(placement) => placement,
                    None => self.place(&buffer, &search, *tid, &item)?,
                };
                let inserted = {
                    let mut page = buffer.page_mut();
                    let fits = insert_item_at(&mut page, placement.position, &placement.item);
                    if fits {
                        let (shifted, mut changed) = inserted_change(&page, placement.position);
                        if let Some((off, list)) = &placement.replace {
                            let old =
                                slotted::page_item_mut(&mut page, *off).expect("placed there");
                            assert_eq!(
                                old.len(),
                                list.len(),
                                "a posting list split keeps the size"
                            );
                            old.copy_from_slice(list);
                            changed.push(slotted::ranges::item(&page, *off, None));
                        }
                        let change = Change::Moved {
                            moves: &[shifted],
                            ranges: &changed,
                        };
                        wal::log_change(&self.rel, &buffer, &mut page, change, acct);
                    }
                    fits
                };
                if inserted {
                    cached = Some(CachedLeaf {
                        buffer,
                        stack,
                        high_key,
                    });
                    break;
                }
                // A full leaf: a deduplication pass may make room (once), else it splits.
                if self.deduplicate && !deduplicated {
                    deduplicated = true;
                    if self.deduplicate_leaf(&buffer, acct)? {
                        continue;
                    }
                }
                self.split(buffer, placement, &mut stack, None, acct)?;
                break;
            }
        }
        Ok(Ok(()))
    }

    /// Where `item`, the entry `(key, tid)` that `search` describes, goes on `leaf`; a
    /// posting list split when the TID falls inside a posting list's range (`dedup.rs`).
    /// Reads the page only.
    fn place(
        &self,
        leaf: &PinnedBuffer,
        search: &SearchKey,
        tid: Tid,
        item: &[u8],
    ) -> PgResult<Placement> {
        let page = leaf.page();
        let opaque = check_page(&page, leaf.blkno(), &self.name)?;
        let max = slotted::page_max_offset(&page);
        let position =
            self.first_at_or_above(&page, search, first_data_offset(&opaque), max, false)?;
        if position <= max {
            let there = tuple_at(&page, position)?;
            if search.compare(&self.columns, &there)? == Ordering::Equal {
                if !there.is_posting() || there.heap_tids().any(|t| t == tid) {
                    return Err(PgError::internal(format!(
                        "index \"{}\" already has an entry for heap tuple ({},{})",
                        self.name, tid.0, tid.1
                    )));
                }
                let (list, moved) = dedup::split_posting(&self.columns, &there, tid)?;
                return Ok(Placement {
                    position: position + 1,
                    item: moved,
                    replace: Some((position, list)),
                });
            }
        }
        Ok(Placement {
            position,
            item: item.to_vec(),
            replace: None,
        })
    }

    /// A deduplication pass over a full leaf (`dedup.rs`); whether it merged anything.
    fn deduplicate_leaf(&self, leaf: &PinnedBuffer, acct: &mut IoAccount) -> PgResult<bool> {
        let (opaque, high_key, items) = {
            let page = leaf.page();
            let opaque = check_page(&page, leaf.blkno(), &self.name)?;
            let high_key = high_key(&page, &opaque)?;
            (opaque, high_key, data_items(&page)?)
        };
        let merged = dedup::deduplicate_items(&self.columns, &items, DEDUP_MAX_POSTING_SIZE)?;
        if merged.len() == items.len() {
            return Ok(false);
        }
        let mut page = leaf.page_mut();
        page.copy_from_slice(&build_page(&opaque, high_key.as_deref(), &merged));
        wal::log_change(
            &self.rel,
            leaf,
            &mut page,
            Change::Whole { new: false },
            acct,
        );
        Ok(true)
    }

    /// The leaf for `search` and the path to it; makes a root leaf in an empty index.
    /// Splits a crash left incomplete on the way are finished first.
    fn leaf_for_insert(
        &self,
        search: &SearchKey,
        acct: &mut IoAccount,
    ) -> PgResult<(PinnedBuffer, Vec<u32>)> {
        let mut stack = Vec::new();
        // Each finished split clears a flag, so this ends; the bound guards against a page
        // whose flag cannot be cleared.
        for _ in 0..=self.rel.nblocks() {
            stack.clear();
            match self.walk_down(search, &mut stack, true, false, acct)? {
                Descent::Leaf(leaf) => return Ok((leaf, stack)),
                Descent::IncompleteSplit(blkno) => self.finish_split(blkno, &mut stack, acct)?,
                Descent::Empty => return self.first_root(acct),
                Descent::LeafBlock(_) => unreachable!("an insert's descent reads its leaf"),
            }
        }
        Err(super::corrupted(format!(
            "index \"{}\": an incomplete split could not be finished",
            self.name
        )))
    }

    /// The first entry of an empty index goes to a new root leaf.
    fn first_root(&self, acct: &mut IoAccount) -> PgResult<(PinnedBuffer, Vec<u32>)> {
        // The first entry of an empty index: a root leaf, then the meta page pointing to it.
        let (blkno, root) = self.pool.new_block(&self.rel, None, acct)?;
        let opaque = BtOpaque {
            flags: BTP_LEAF | BTP_ROOT,
            ..BtOpaque::default()
        };
        {
            let mut page = root.page_mut();
            page.copy_from_slice(&build_page(&opaque, None, &[]));
            wal::log_change(
                &self.rel,
                &root,
                &mut page,
                Change::Whole { new: true },
                acct,
            );
        }
        self.set_root(blkno, 0, acct)?;
        Ok((root, Vec::new()))
    }

    fn set_root(&self, root: u32, level: u32, acct: &mut IoAccount) -> PgResult<()> {
        let meta = self.read(METAPAGE, acct)?;
        let old = BtMeta::read(&meta.page(), &self.name)?;
        let mut page = meta.page_mut();
        BtMeta::new(root, level, old.allequalimage).write_page(&mut page);
        wal::log_change(
            &self.rel,
            &meta,
            &mut page,
            Change::Whole { new: false },
            acct,
        );
        Ok(())
    }

    /// Splits the page in `buffer`, making the change `placement` describes, and inserts
    /// the separator into the parent (the last page of `stack`), or makes a new root (see
    /// the module comment). When the placement is the separator of `child`'s split, the
    /// split's record also clears `child`'s incomplete-split flag.
    fn split(
        &self,
        buffer: PinnedBuffer,
        placement: Placement,
        stack: &mut Vec<u32>,
        child: Option<u32>,
        acct: &mut IoAccount,
    ) -> PgResult<()> {
        let left_blkno = buffer.blkno();
        let (old, old_high_key, mut items) = {
            let page = buffer.page();
            let opaque = check_page(&page, left_blkno, &self.name)?;
            let high_key = high_key(&page, &opaque)?;
            (opaque, high_key, data_items(&page)?)
        };
        let leaf = old.is_leaf();
        let first = first_data_offset(&old);
        if let Some((off, list)) = placement.replace {
            items[(off - first) as usize] = list;
        }
        items.insert((placement.position - first) as usize, placement.item);
        let full = split_point::FullPage {
            items: &items,
            new_at: (placement.position - first) as usize,
            leaf,
            rightmost: old.is_rightmost(),
            high_key: old_high_key.as_deref(),
            fillfactor: if leaf {
                self.leaf_fillfactor
            } else {
                NONLEAF_FILLFACTOR
            },
        };
        let split_at = split_point::choose(&self.columns, &full)?.ok_or_else(|| {
            PgError::internal(format!(
                "index \"{}\": no split point for {} items",
                self.name,
                items.len()
            ))
        })?;

        let moved = IndexTuple::parse(&items[split_at])?;
        let (high_key, right_first) = if leaf {
            let lastleft = IndexTuple::parse(&items[split_at - 1])?;
            (
                truncate(&self.columns, &lastleft, &moved)?,
                items[split_at].clone(),
            )
        } else {
            (
                moved.with_downlink(P_NONE),
                moved.as_minus_infinity(&self.columns),
            )
        };
        let mut right_items = vec![right_first];
        right_items.extend_from_slice(&items[split_at + 1..]);
        let left_items = &items[..split_at];

        let (right_blkno, right) = self.pool.new_block(&self.rel, None, acct)?;
        let right_opaque = BtOpaque {
            prev: left_blkno,
            next: old.next,
            level: old.level,
            flags: old.flags & BTP_LEAF,
            cycle_id: 0,
        };
        let left_opaque = BtOpaque {
            next: right_blkno,
            flags: (old.flags & !BTP_ROOT) | BTP_INCOMPLETE_SPLIT,
            ..old
        };
        // The halves and the old right sibling's left-link change in one record, all
        // three pages locked until it is logged: redo makes the whole split or none of it.
        // Every page checked before any changes: an error leaves nothing half done.
        let sibling = match old.next {
            P_NONE => None,
            next => {
                let buffer = self.read(next, acct)?;
                let opaque = check_page(&buffer.page(), next, &self.name)?;
                Some((buffer, opaque))
            }
        };
        let child = child
            .map(|blkno| self.flagged_child(blkno, acct))
            .transpose()?;
        let mut right_page = right.page_mut();
        right_page.copy_from_slice(&build_page(
            &right_opaque,
            old_high_key.as_deref(),
            &right_items,
        ));
        let mut left_page = buffer.page_mut();
        left_page.copy_from_slice(&build_page(&left_opaque, Some(&high_key), left_items));
        let mut sibling_page = sibling.as_ref().map(|(s, _)| s.page_mut());
        let mut edits = vec![
            PageEdit {
                buffer: &right,
                page: &mut right_page,
                change: Change::Whole { new: true },
            },
            PageEdit {
                buffer: &buffer,
                page: &mut left_page,
                change: Change::Whole { new: false },
            },
        ];
        let special;
        if let (Some((sibling, opaque)), Some(page)) = (&sibling, sibling_page.as_deref_mut()) {
            BtOpaque {
                prev: right_blkno,
                ..*opaque
            }
            .write(page);
            special = [slotted::ranges::special(page)];
            edits.push(PageEdit {
                buffer: sibling,
                page,
                change: Change::Ranges(&special),
            });
        }
        let mut child_page = child.as_ref().map(|c| c.page_mut());
        let child_special;
        if let (Some(child), Some(page)) = (&child, child_page.as_deref_mut()) {
            child_special = [clear_incomplete_split(page)];
            edits.push(PageEdit {
                buffer: child,
                page,
                change: Change::Ranges(&child_special),
            });
        }
        wal::log_changes(&self.rel, &mut edits, acct);
        drop(edits);
        drop((child_page, sibling_page, left_page, right_page));
        drop((child, sibling, right, buffer));
        #[cfg(test)]
        if super::tests::CRASH_AFTER_SPLIT.with(|c| c.get()) {
            return Ok(()); // as if the server died here: the separator never reaches the parent
        }

        let separator = IndexTuple::parse(&high_key)?.with_downlink(right_blkno);
        self.insert_downlink(left_blkno, separator, stack, acct)
    }

    /// Finishes the split of `left` that a crash interrupted (its right half has no
    /// downlink): inserts the separator, `left`'s high key pointing to its right sibling,
    /// as the split would have. `stack` is the path to `left`.
    fn finish_split(&self, left: u32, stack: &mut Vec<u32>, acct: &mut IoAccount) -> PgResult<()> {
        let separator = {
            let buf = self.read(left, acct)?;
            let page = buf.page();
            let opaque = check_page(&page, left, &self.name)?;
            if !opaque.is_incomplete_split() {
                return Ok(());
            }
            let high_key = high_key(&page, &opaque)?.ok_or_else(|| {
                super::corrupted(format!(
                    "index \"{}\": block {left} has an incomplete split but no right sibling",
                    self.name
                ))
            })?;
            IndexTuple::parse(&high_key)?.with_downlink(opaque.next)
        };
        tracing::info!(
            "index \"{}\": finishing the split of block {left} a crash interrupted",
            self.name
        );
        self.insert_downlink(left, separator, stack, acct)
    }

    /// Inserts `separator`, the downlink to the right half of `child`'s split, into
    /// `child`'s parent (found from the last page of `stack`, moving right), splitting it if
    /// full, or makes a new root above a root that split. The record that inserts it also
    /// clears `child`'s incomplete-split flag.
    fn insert_downlink(
        &self,
        child: u32,
        separator: Vec<u8>,
        stack: &mut Vec<u32>,
        acct: &mut IoAccount,
    ) -> PgResult<()> {
        let Some(parent_blkno) = stack.pop() else {
            return self.new_root(child, separator, acct);
        };
        let Some((parent, position)) = self.downlink_to(child, parent_blkno, acct)? else {
            return Err(super::corrupted(format!(
                "index \"{}\": no downlink to block {child} at or right of block {parent_blkno}",
                self.name
            )));
        };
        let inserted = {
            let child = self.flagged_child(child, acct)?;
            let mut page = parent.page_mut();
            let fits = insert_item_at(&mut page, position, &separator);
            if fits {
                let (shifted, changed) = inserted_change(&page, position);
                let mut child_page = child.page_mut();
                let child_special = [clear_incomplete_split(&mut child_page)];
                let mut edits = [
                    PageEdit {
                        buffer: &parent,
                        page: &mut page,
                        change: Change::Moved {
                            moves: &[shifted],
                            ranges: &changed,
                        },
                    },
                    PageEdit {
                        buffer: &child,
                        page: &mut child_page,
                        change: Change::Ranges(&child_special),
                    },
                ];
                wal::log_changes(&self.rel, &mut edits, acct);
            }
            fits
        };
        if inserted {
            Ok(())
        } else {
            let placement = Placement {
                position,
                item: separator,
                replace: None,
            };
            self.split(parent, placement, stack, Some(child), acct)
        }
    }

    /// The page holding the downlink to `child`, searched from `blkno` rightwards along its
    /// level (the parent may have split since the descent passed it), and the position after
    /// that downlink.
    fn downlink_to(
        &self,
        child: u32,
        mut blkno: u32,
        acct: &mut IoAccount,
    ) -> PgResult<Option<(PinnedBuffer, u16)>> {
        for _ in 0..self.rel.nblocks() {
            let buf = self.read(blkno, acct)?;
            let next = {
                let page = buf.page();
                let opaque = check_page(&page, blkno, &self.name)?;
                for off in first_data_offset(&opaque)..=slotted::page_max_offset(&page) {
                    if tuple_at(&page, off)?.downlink() == child {
                        drop(page);
                        return Ok(Some((buf, off + 1)));
                    }
                }
                opaque.next
            };
            if next == P_NONE {
                return Ok(None);
            }
            blkno = next;
        }
        Ok(None)
    }

    /// A new root above `child`, the root that split, with downlinks to it and (through
    /// `separator`) to its right half; one record makes the root, points the meta page to
    /// it and clears `child`'s incomplete-split flag.
    fn new_root(&self, child: u32, separator: Vec<u8>, acct: &mut IoAccount) -> PgResult<()> {
        let meta = self.read(METAPAGE, acct)?;
        let old_meta = BtMeta::read(&meta.page(), &self.name)?;
        if old_meta.root != child {
            return Err(super::corrupted(format!(
                "index \"{}\": block {child} split without a parent but the root is block {}",
                self.name, old_meta.root
            )));
        }
        let child = self.flagged_child(child, acct)?;
        let (root_blkno, root) = self.pool.new_block(&self.rel, None, acct)?;
        let level = old_meta.level + 1;
        let opaque = BtOpaque {
            level,
            flags: BTP_ROOT,
            ..BtOpaque::default()
        };
        let downlinks = vec![
            form_pivot(&self.columns, &[], None, child.blkno()),
            separator,
        ];
        let mut root_page = root.page_mut();
        root_page.copy_from_slice(&build_page(&opaque, None, &downlinks));
        let mut meta_page = meta.page_mut();
        BtMeta::new(root_blkno, level, old_meta.allequalimage).write_page(&mut meta_page);
        let mut child_page = child.page_mut();
        let child_special = [clear_incomplete_split(&mut child_page)];
        let mut edits = [
            PageEdit {
                buffer: &root,
                page: &mut root_page,
                change: Change::Whole { new: true },
            },
            PageEdit {
                buffer: &meta,
                page: &mut meta_page,
                change: Change::Whole { new: false },
            },
            PageEdit {
                buffer: &child,
                page: &mut child_page,
                change: Change::Ranges(&child_special),
            },
        ];
        wal::log_changes(&self.rel, &mut edits, acct);
        Ok(())
    }

    /// Block `blkno`, pinned and checked: a page whose split is being completed.
    fn flagged_child(&self, blkno: u32, acct: &mut IoAccount) -> PgResult<PinnedBuffer> {
        let buffer = self.read(blkno, acct)?;
        let opaque = check_page(&buffer.page(), blkno, &self.name)?;
        assert!(
            opaque.is_incomplete_split(),
            "block {blkno} of index \"{}\" has no split to finish",
            self.name
        );
        Ok(buffer)
    }
}

/// Clears the incomplete-split flag of a page [`BtreeIndex::flagged_child`] checked; the
/// special space's range, for the WAL.
fn clear_incomplete_split(page: &mut [u8]) -> std::ops::Range<usize> {
    let mut opaque = BtOpaque::read(page);
    opaque.flags &= !BTP_INCOMPLETE_SPLIT;
    opaque.write(page);
    slotted::ranges::special(page)
}

/// What [`insert_item_at`] did to `page` putting an item at `position`: the line pointers
/// from there on moved up one place (a move for the WAL, not their bytes), then the header,
/// the new line pointer and the item changed.
fn inserted_change(page: &[u8], position: u16) -> (Move, Vec<std::ops::Range<usize>>) {
    let pointers = slotted::ranges::line_pointers_from(page, position);
    let new_pointer = pointers.start..pointers.start + slotted::ITEM_ID_SIZE;
    let shifted = Move {
        from: pointers.start as u16,
        to: new_pointer.end as u16,
        len: (pointers.len() - slotted::ITEM_ID_SIZE) as u16,
    };
    let ranges = vec![
        slotted::ranges::HEADER,
        new_pointer,
        slotted::ranges::item(page, position, None),
    ];
    (shifted, ranges)
}
