//! Reading a range scan's leaves ahead, through a read stream.
//!
//! A range scan walks the leaf level left to right through sibling links, and a sibling
//! link is only known once its page is read: on its own the scan reads one leaf at a time,
//! waiting for each (PostgreSQL 18's nbtree does the same). The leaves' block numbers are
//! known earlier, though: they are the downlinks of the level above. So a scan that goes on
//! past its first leaf reads that leaf's parent, takes the downlinks that follow the first
//! leaf's, and hands them to a [`ReadStream`] as a **segment**; the stream reads them
//! ahead (combining neighbours, which a bottom-up build makes of most of them) while the
//! scan consumes them in link order. When a segment is used up the next one comes from
//! the parent's right sibling, read then.
//!
//! A segment stops at the first pivot that proves its subtree holds nothing the scan
//! wants: a pivot is the lowest key of its subtree, so one above the scan's upper bound
//! (or equal to an excluded one, or NULL for a range) ends the scan's leaves. The stream
//! therefore reads the leaves the scan reads and no others, and `Buffers:` counts stay
//! those of a scan without read-ahead.
//!
//! The sibling links stay the truth. The parent is a snapshot: pages split after it was
//! read put new pages between the downlinks (splits only ever insert to the right of the
//! page split, and there is no page deletion). The scan therefore asks for the block its
//! link names; the stream's next buffer is used only when it is that block. A buffer that
//! is not is **parked** and the linked page is read directly; the chain reaches the parked
//! block later (it is the snapshot's next leaf) and takes it then. A parent whose
//! downlinks no longer contain the first leaf (it was split away) ends read-ahead; the
//! scan goes on one leaf at a time.
//!
//! While a segment's stream runs it owns the scan's [`IoAccount`] (a stream accounts its
//! reads into its own), and every direct read of the scan goes to that account; it is
//! handed back when the stream ends, so the caller sees one account as before.
//!
//! Bounds: a segment is at most one internal page's downlinks (a few hundred block
//! numbers), the stream pins at most its configuration's pin budget (as a heap scan's
//! stream does), and one leaf more may be parked.

use std::cmp::Ordering;
use std::sync::Arc;

use iolab_catalog::PgResult;

use super::key::Key;
use super::page::{check_page, first_data_offset, tuple_at, P_NONE};
use super::BtreeIndex;
use crate::accounting::IoAccount;
use crate::aio::AioSystem;
use crate::buffer::PinnedBuffer;
use crate::storage::page as slotted;
use crate::stream::{ReadStream, ReadStreamConfig, ReadStreamStats};

/// The read-ahead of one range scan (see the module comment).
pub(super) struct LeafReadAhead {
    aio: Arc<AioSystem>,
    config: ReadStreamConfig,
    /// Reads the current segment's leaves; owns the scan's account while it exists.
    stream: Option<ReadStream<()>>,
    /// A leaf the stream delivered before the scan's links reached it.
    parked: Option<PinnedBuffer>,
    /// The internal page whose downlinks make the next segment, `P_NONE` for none.
    next_parent: u32,
    /// What the segments' streams did, summed as each ends (EXPLAIN (IO)).
    stats: ReadStreamStats,
}

/// The scan's upper limit on the leaf level, as a test of pivot keys.
#[derive(Clone, Copy)]
pub(super) enum LeafLimit<'k> {
    /// A stretch's upper bound: entries whose first columns are ≤ (`inclusive`) or <
    /// `prefix` (empty: no bound), and not NULL in column `null_ends_at` (NULLs sort last)
    /// after an equal prefix.
    Upper {
        prefix: &'k [Key<'static>],
        inclusive: bool,
        null_ends_at: Option<usize>,
    },
    /// Every leaf to the end of the level.
    None,
}

impl LeafLimit<'_> {
    /// Does the subtree whose lowest key is `pivot` (its first columns; the rest minus
    /// infinity) lie wholly past the limit?
    fn excludes(self, index: &BtreeIndex, pivot: &[Key]) -> bool {
        let LeafLimit::Upper {
            prefix,
            inclusive,
            null_ends_at,
        } = self
        else {
            return false;
        };
        let ord = index.key_columns().compare(pivot, prefix);
        // The pivot's prefix equals the bound's only if it has all the bound's columns.
        let covers = pivot.len() >= prefix.len();
        ord == Ordering::Greater
            || (ord == Ordering::Equal && covers && !prefix.is_empty() && !inclusive)
            || (ord == Ordering::Equal
                && null_ends_at.is_some_and(|c| pivot.get(c).is_some_and(Key::is_null)))
    }
}

impl LeafReadAhead {
    /// Read-ahead for a scan whose first leaf `first_leaf` was reached from internal page
    /// `parent`; `None` when the parent no longer links to it. Reads the parent into
    /// `acct`, and starts the first segment's stream (which then owns `acct`'s contents).
    pub(super) fn start(
        index: &BtreeIndex,
        aio: Arc<AioSystem>,
        config: ReadStreamConfig,
        parent: u32,
        first_leaf: u32,
        limit: LeafLimit,
        acct: &mut IoAccount,
    ) -> PgResult<Option<LeafReadAhead>> {
        let mut read_ahead = LeafReadAhead {
            aio,
            // A segment's leaves are all read (it stops at the scan's limit), so its stream
            // skips the ramp-up from one block, as PostgreSQL's READ_STREAM_FULL streams do:
            // a new segment would otherwise wait for a read of 1, 2, 4, … leaves in turn.
            // Leaves in key order are not in block order: no drop-behind (`drop_behind.rs`).
            config: ReadStreamConfig {
                full: true,
                drop_behind: 0,
                ..config
            },
            stream: None,
            parked: None,
            next_parent: P_NONE,
            stats: ReadStreamStats::default(),
        };
        if !read_ahead.load_segment(index, parent, Some(first_leaf), limit, acct)? {
            return Ok(None);
        }
        Ok(Some(read_ahead))
    }

    /// The account the scan's reads go to now: the stream's while one runs, else `home`.
    pub(super) fn account<'s>(
        read_ahead: &'s mut Option<LeafReadAhead>,
        home: &'s mut IoAccount,
    ) -> &'s mut IoAccount {
        match read_ahead.as_mut().and_then(|r| r.stream.as_mut()) {
            Some(stream) => &mut stream.acct,
            None => home,
        }
    }

    /// Leaf `want` if the read-ahead has it (pinned); `None`: read it directly. Loads the
    /// next segment when the current one is used up.
    pub(super) fn take(
        &mut self,
        index: &BtreeIndex,
        want: u32,
        limit: LeafLimit,
        home: &mut IoAccount,
    ) -> PgResult<Option<PinnedBuffer>> {
        if let Some(parked) = self.parked.take() {
            if parked.blkno() == want {
                return Ok(Some(parked));
            }
            self.parked = Some(parked); // the links have not reached it yet
            return Ok(None);
        }
        loop {
            let Some(stream) = &mut self.stream else {
                if self.next_parent == P_NONE {
                    return Ok(None);
                }
                let parent = self.next_parent;
                self.load_segment(index, parent, None, limit, home)?;
                continue;
            };
            match stream.next_buffer()? {
                Some((buffer, ())) if buffer.blkno() == want => return Ok(Some(buffer)),
                Some((buffer, ())) => {
                    self.parked = Some(buffer);
                    return Ok(None);
                }
                None => self.end_stream(home),
            }
        }
    }

    /// Stop reading ahead: release the parked leaf, wait for the stream's reads, give the
    /// account back to `home`. Returns what the streams did.
    pub(super) fn finish(mut self, home: &mut IoAccount) -> ReadStreamStats {
        self.parked = None;
        self.end_stream(home);
        self.stats
    }

    fn end_stream(&mut self, home: &mut IoAccount) {
        if let Some(stream) = self.stream.take() {
            self.stats.add(&stream.stats());
            *home = stream.into_account();
        }
    }

    /// Makes the downlinks of internal page `parent` the current segment: those after
    /// `after`'s (all of them for `None`) up to the first one `limit` excludes. `false`
    /// when `after` is not among them. Moves `home`'s contents into the new stream.
    fn load_segment(
        &mut self,
        index: &BtreeIndex,
        parent: u32,
        after: Option<u32>,
        limit: LeafLimit,
        home: &mut IoAccount,
    ) -> PgResult<bool> {
        debug_assert!(self.stream.is_none() && self.parked.is_none());
        self.next_parent = P_NONE;
        let buf = index.read(parent, home)?;
        let page = buf.page();
        let opaque = check_page(&page, parent, &index.name)?;
        if opaque.level != 1 {
            return Ok(false); // not the level above the leaves (a root leaf, or a changed tree)
        }
        let mut leaves = Vec::new();
        let mut found = after.is_none();
        let mut limited = false;
        for off in first_data_offset(&opaque)..=slotted::page_max_offset(&page) {
            let pivot = tuple_at(&page, off)?;
            let child = pivot.downlink();
            if !found {
                found = Some(child) == after;
                continue;
            }
            if limit.excludes(index, &pivot.key(index.key_columns())?) {
                limited = true;
                break;
            }
            leaves.push(child);
        }
        if !found {
            return Ok(false);
        }
        self.next_parent = if limited || opaque.is_rightmost() {
            P_NONE
        } else {
            opaque.next
        };
        drop(page);
        drop(buf);
        if !leaves.is_empty() {
            let mut blocks = leaves.into_iter();
            self.stream = Some(ReadStream::new(
                self.aio.clone(),
                index.pool.clone(),
                index.rel.clone(),
                None,
                &self.config,
                std::mem::take(home),
                move || blocks.next().map(|b| (b, ())),
            ));
        }
        Ok(true)
    }
}
