//! CREATE INDEX: scan the heap, sort `(key, heap TID)`, load the tree bottom-up.
//!
//! # Scan
//!
//! The table is read once in block order through a sequential read stream (with a
//! bulk-read ring when it is larger than a quarter of the pool, as a sequential scan), and
//! every tuple that is not dead — its inserting transaction did not abort — contributes
//! its key and TID. That includes rows of transactions still in progress, which may
//! commit after the index exists (PostgreSQL's build indexes them too); rows of aborted
//! transactions are left out, they can never become visible.
//!
//! # Sort
//!
//! Entries go into a [`SortBuffer`] in memory: for fixed-width keys a `Vec` of 16-byte
//! `(order-preserving u64 key, TID word)` pairs (`key.rs`), sorted without a comparator;
//! numeric keys as `(i128, TID word)`; text keys as offsets into one byte arena, sorted
//! with a comparator; keys of several columns as their leaf tuples in such an arena,
//! compared column by column. The TID word is `null << 63 | block << 16 | offset`, so NULL keys
//! sort after all others and equal keys in TID order. Beyond `maintenance_work_mem` the
//! buffer is written out as sorted runs in temporary files and the runs are merged as
//! the tree is loaded, as in PostgreSQL (`external_sort.rs`).
//!
//! # Bottom-up load (PostgreSQL's `nbtsort.c`, in iolab's words)
//!
//! With deduplication (`dedup.rs`), consecutive entries of one key first gather into a
//! posting list tuple of up to a tenth of a page; for an int4 column of few distinct values
//! that packs about 1 200 entries into a leaf instead of 370.
//!
//! Sorted leaf tuples are appended to the pending page of level 0. When a page is full —
//! the next tuple would not fit with room to spare for a high key, or the page is past its
//! fill factor (90 % for leaves unless the index's `fillfactor` says otherwise, 70 %
//! above) — the page is closed:
//!
//! ```text
//!   pending leaf: [a b c]  + next tuple x does not fit
//!   → close [a b] with high key h = truncate(b, c)    (c moves on: h's size ≤ c's + 8)
//!   → new pending page [c x], whose lower bound is h
//!   → level 1 gets the downlink (lower bound of [a b], its block)
//! ```
//!
//! Closing a page allocates its block (so blocks appear in the order pages close), links
//! the previous page of its level to it, and hands a downlink to the level above, which
//! fills and closes its pages the same way (its first item on each page becomes minus
//! infinity, and the separator moves up as the high key). Only one page per level is ever
//! pending and one waits for its right-sibling link, so the loader holds O(height) pages.
//! At the end, each level's last page is closed as the rightmost one (no high key), and
//! the single page of the top level is the root; the meta page (block 0, allocated first)
//! records it. An empty table gives an index of just the meta page, as in PostgreSQL.
//!
//! The pages go through the buffer pool with a bulk-write ring (PostgreSQL's
//! `BAS_BULKWRITE`), so a big build does not flush the rest of the pool; its extensions
//! and writes are counted like any other. The finished index is written out and fsynced
//! before CREATE INDEX returns, so a crash afterwards cannot lose pages of it.

use std::sync::Arc;

use iolab_catalog::PgResult;

use super::dedup::PostingRun;
use super::key::{self, Key, KeyColumns, KeyKind};
use super::page::{
    build_page, form_leaf, form_pivot, item_cost, too_big, truncate, BtMeta, BtOpaque, IndexTuple,
    BTP_LEAF, BTP_ROOT, BT_MAX_ITEM_SIZE, BUILD_MAX_POSTING_SIZE, PAGE_CAPACITY, P_NONE,
};
use super::Tid;
use crate::accounting::IoAccount;
use crate::aio::AioSystem;
use crate::buffer::{BufferPool, BufferRing, PinnedBuffer};
use crate::heap::codec::TupleLayout;
use crate::heap::tuple;
use crate::storage::page::{self as slotted, maxalign, BLCKSZ};
use crate::storage::relfile::RelFile;
use crate::stream::{ReadStream, ReadStreamConfig};
use crate::txn::{Clog, XidStatus, INVALID_XID};

/// Leaf pages are filled to 90 % (PostgreSQL's `BTREE_DEFAULT_FILLFACTOR`) unless the
/// index's `fillfactor` storage parameter says otherwise.
pub const LEAF_FILLFACTOR: usize = 90;
/// Internal pages are filled to 70 % (`BTREE_NONLEAF_FILLFACTOR`).
pub const NONLEAF_FILLFACTOR: usize = 70;

pub(super) const NULL_BIT: u64 = 1 << 63;

fn tid_word(tid: Tid, null: bool) -> u64 {
    ((null as u64) << 63) | ((tid.0 as u64) << 16) | tid.1 as u64
}

pub(super) fn word_tid(word: u64) -> Tid {
    (((word >> 16) & 0xFFFF_FFFF) as u32, word as u16)
}

/// `(key, TID)` entries collected for a build, sorted in place (see the module comment).
pub enum SortBuffer {
    U64 {
        kind: KeyKind,
        entries: Vec<(u64, u64)>,
    },
    Numeric {
        entries: Vec<(i128, u64)>,
    },
    Text {
        kind: KeyKind,
        arena: Vec<u8>,
        /// (arena offset, length, TID word)
        entries: Vec<(usize, u32, u64)>,
    },
    /// Keys of several columns: each entry's leaf tuple in the arena.
    Rows {
        columns: Arc<KeyColumns>,
        arena: Vec<u8>,
        entries: Vec<RowEntry>,
    },
}

/// An entry of a sort of keys of several columns.
#[derive(Clone, Copy)]
pub struct RowEntry {
    /// The first column's key in a `u64` whose order never contradicts the key order
    /// (PostgreSQL's abbreviated keys): most comparisons end here.
    abbreviated: u64,
    /// Where the leaf tuple lies in the arena, and its length.
    at: usize,
    pub(super) len: u32,
    /// The TID word (without the NULL bit).
    pub(super) word: u64,
}

impl RowEntry {
    /// The entry's leaf tuple.
    pub(super) fn bytes<'a>(&self, arena: &'a [u8]) -> &'a [u8] {
        &arena[self.at..self.at + self.len as usize]
    }
}

/// A key's abbreviation for [`RowEntry::abbreviated`]: the `u64` sort form of fixed-width
/// keys, the first 8 bytes of text (big-endian, zero-padded), the high half of a numeric;
/// NULL the largest.
fn abbreviate(kind: KeyKind, k: &Key) -> u64 {
    match k {
        Key::Null => u64::MAX,
        Key::Text(t) => {
            let bytes = key::text_sort_bytes(kind, t);
            let mut first = [0u8; 8];
            let n = bytes.len().min(8);
            first[..n].copy_from_slice(&bytes[..n]);
            u64::from_be_bytes(first)
        }
        Key::Numeric(n) => ((*n >> 64) as i64 as u64) ^ (1 << 63),
        other => key::sort_u64(other),
    }
}

/// Compares two leaf tuples of an index on `columns` by key, a column at a time, without
/// allocating; keys that fail to decode (never: the build formed them) compare equal.
pub(super) fn compare_rows(columns: &KeyColumns, a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let mut a = IndexTuple { bytes: a }.key_cursor(columns);
    let mut b = IndexTuple { bytes: b }.key_cursor(columns);
    for i in 0..columns.len() {
        let (Ok(x), Ok(y)) = (a.next_key(), b.next_key()) else {
            break;
        };
        let order = key::compare(columns.kind(i), &x, &y);
        if order.is_ne() {
            return order;
        }
    }
    std::cmp::Ordering::Equal
}

impl SortBuffer {
    pub fn new(columns: &Arc<KeyColumns>) -> SortBuffer {
        let Some(ty) = columns.single() else {
            return SortBuffer::Rows {
                columns: columns.clone(),
                arena: Vec::new(),
                entries: Vec::new(),
            };
        };
        let kind = KeyKind::of(ty);
        match kind {
            KeyKind::Numeric => SortBuffer::Numeric {
                entries: Vec::new(),
            },
            KeyKind::Text | KeyKind::Bpchar => SortBuffer::Text {
                kind,
                arena: Vec::new(),
                entries: Vec::new(),
            },
            _ => SortBuffer::U64 {
                kind,
                entries: Vec::new(),
            },
        }
    }

    pub fn len(&self) -> usize {
        match self {
            SortBuffer::U64 { entries, .. } => entries.len(),
            SortBuffer::Numeric { entries } => entries.len(),
            SortBuffer::Text { entries, .. } => entries.len(),
            SortBuffer::Rows { entries, .. } => entries.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties it, keeping its memory for the next entries.
    pub fn clear(&mut self) {
        match self {
            SortBuffer::U64 { entries, .. } => entries.clear(),
            SortBuffer::Numeric { entries } => entries.clear(),
            SortBuffer::Text { arena, entries, .. } => {
                arena.clear();
                entries.clear();
            }
            SortBuffer::Rows { arena, entries, .. } => {
                arena.clear();
                entries.clear();
            }
        }
    }

    /// The bytes its entries take.
    pub fn bytes(&self) -> usize {
        fn used<T>(v: &[T]) -> usize {
            std::mem::size_of_val(v)
        }
        match self {
            SortBuffer::U64 { entries, .. } => used(entries),
            SortBuffer::Numeric { entries } => used(entries),
            SortBuffer::Text { arena, entries, .. } => used(arena) + used(entries),
            SortBuffer::Rows { arena, entries, .. } => used(arena) + used(entries),
        }
    }

    /// Makes room for `bytes` of fixed-width entries at once, so that filling it up to
    /// that size never reallocates (text entries grow as they come).
    pub fn reserve_bytes(&mut self, bytes: usize) {
        match self {
            SortBuffer::U64 { entries, .. } => entries.reserve_exact(bytes / 16),
            SortBuffer::Numeric { entries } => entries.reserve_exact(bytes / 32),
            SortBuffer::Text { .. } | SortBuffer::Rows { .. } => {}
        }
    }

    /// Adds one entry (a key of the buffer's columns).
    pub fn push(&mut self, keys: &[Key], tid: Tid) {
        if let SortBuffer::Rows {
            columns,
            arena,
            entries,
        } = self
        {
            let tuple = form_leaf(columns, keys, tid);
            entries.push(RowEntry {
                abbreviated: abbreviate(columns.kind(0), &keys[0]),
                at: arena.len(),
                len: tuple.len() as u32,
                word: tid_word(tid, false),
            });
            arena.extend_from_slice(&tuple);
            return;
        }
        let [key] = keys else {
            panic!("{} key columns for a one-column sort", keys.len())
        };
        let null = key.is_null();
        let word = tid_word(tid, null);
        match self {
            SortBuffer::U64 { entries, .. } => {
                entries.push((if null { u64::MAX } else { key::sort_u64(key) }, word))
            }
            SortBuffer::Numeric { entries } => entries.push((
                match key {
                    Key::Numeric(n) => *n,
                    _ => i128::MAX,
                },
                word,
            )),
            SortBuffer::Text { arena, entries, .. } => match key {
                Key::Text(t) => {
                    entries.push((arena.len(), t.len() as u32, word));
                    arena.extend_from_slice(t);
                }
                _ => entries.push((0, 0, word)),
            },
            SortBuffer::Rows { .. } => unreachable!("pushed above"),
        }
    }

    /// Sorts by (key, TID), NULLs last.
    pub fn sort(&mut self) {
        match self {
            SortBuffer::U64 { entries, .. } => entries.sort_unstable(),
            SortBuffer::Numeric { entries } => {
                entries.sort_unstable_by_key(|e| (e.1 >> 63, e.0, e.1))
            }
            SortBuffer::Text {
                kind,
                arena,
                entries,
            } => {
                let kind = *kind;
                let bytes = |e: &(usize, u32, u64)| {
                    key::text_sort_bytes(kind, &arena[e.0..e.0 + e.1 as usize])
                };
                entries.sort_unstable_by(|a, b| {
                    (a.2 >> 63)
                        .cmp(&(b.2 >> 63))
                        .then_with(|| bytes(a).cmp(bytes(b)))
                        .then(a.2.cmp(&b.2))
                })
            }
            SortBuffer::Rows {
                columns,
                arena,
                entries,
            } => entries.sort_unstable_by(|a, b| {
                (a.abbreviated.cmp(&b.abbreviated))
                    .then_with(|| compare_rows(columns, a.bytes(arena), b.bytes(arena)))
                    .then(a.word.cmp(&b.word))
            }),
        }
    }

    /// Calls `f` with entry `i` (after [`sort`](Self::sort): in index order).
    pub fn with_entry<R>(&self, i: usize, f: impl FnOnce(&[Key], Tid) -> R) -> R {
        if let SortBuffer::Rows {
            columns,
            arena,
            entries,
        } = self
        {
            let e = entries[i];
            let tuple = IndexTuple {
                bytes: e.bytes(arena),
            };
            let keys = tuple.key(columns).expect("the build formed the tuple");
            return f(&keys, word_tid(e.word));
        }
        let (key, tid) = self.get(i);
        f(std::slice::from_ref(&key), tid)
    }

    /// Entry `i` of a one-column buffer (after [`sort`](Self::sort): in index order).
    pub fn get(&self, i: usize) -> (Key<'_>, Tid) {
        match self {
            SortBuffer::U64 { kind, entries } => {
                let (v, w) = entries[i];
                let key = if w & NULL_BIT != 0 {
                    Key::Null
                } else {
                    key::from_sort_u64(*kind, v)
                };
                (key, word_tid(w))
            }
            SortBuffer::Numeric { entries } => {
                let (v, w) = entries[i];
                let key = if w & NULL_BIT != 0 {
                    Key::Null
                } else {
                    Key::Numeric(v)
                };
                (key, word_tid(w))
            }
            SortBuffer::Text { arena, entries, .. } => {
                let (at, len, w) = entries[i];
                let key = if w & NULL_BIT != 0 {
                    Key::Null
                } else {
                    Key::Text(std::borrow::Cow::Borrowed(&arena[at..at + len as usize]))
                };
                (key, word_tid(w))
            }
            SortBuffer::Rows { .. } => panic!("a key of several columns is not one Key"),
        }
    }
}

/// Where a build or a check reads the table from.
pub struct HeapSource {
    pub aio: Arc<AioSystem>,
    pub pool: Arc<BufferPool>,
    pub rel: Arc<RelFile>,
    /// How the table's tuples store its columns.
    pub columns: TupleLayout,
    /// The key columns (0-based table column numbers, in index order).
    pub key_columns: Vec<usize>,
    pub clog: Arc<Clog>,
    /// The removal horizon (`TransactionManager::oldest_nonremovable`): rows deleted by
    /// a committed transaction before it are dead; those deleted after it some snapshot
    /// may still see, and they are indexed (PostgreSQL's "recently dead").
    pub horizon: crate::txn::Xid,
    pub stream_config: ReadStreamConfig,
}

/// Hands every tuple some snapshot may see — live, or recently dead — its `(key, TID)` to
/// `entry`, in block order. `check_cancel` is asked once per block, `progress` told the
/// number of tuples every million. The TIDs of dead tuples (aborted inserts, deletes
/// committed before the horizon) and of line pointers VACUUM left dead go to `dead`, if
/// given, in block order.
pub fn scan_heap(
    source: &HeapSource,
    acct: &mut IoAccount,
    check_cancel: &dyn Fn() -> PgResult<()>,
    progress: &mut dyn FnMut(u64),
    mut dead: Option<&mut Vec<Tid>>,
    entry: &mut dyn FnMut(&[Key], Tid) -> PgResult<()>,
) -> PgResult<()> {
    let layout = source.columns.clone();
    let nblocks = source.rel.nblocks();
    let config = &source.stream_config;
    let ring = source.pool.wants_ring(nblocks).then(|| {
        BufferRing::bulk_read_for_stream(
            config.io_combine_limit as usize,
            config.max_ios,
            config.pin_limit,
        )
    });
    // PostgreSQL counts an index build's heap scan as a sequential scan of the table,
    // and every tuple it returns (the build sees dead ones too).
    let relfilenode = source.rel.relfilenode();
    acct.relations().seq_scan(relfilenode);
    let mut tuples_seen = 0u64;
    let mut next = 0u32;
    let mut stream = ReadStream::new(
        source.aio.clone(),
        source.pool.clone(),
        source.rel.clone(),
        ring,
        config,
        std::mem::take(acct),
        move || {
            (next < nblocks).then(|| {
                next += 1;
                (next - 1, ())
            })
        },
    );
    let mut entries = 0u64;
    let mut cached: (u32, bool) = (INVALID_XID, false);
    let mut live = |xid: u32, clog: &Clog| {
        if xid != cached.0 {
            cached = (xid, clog.status(xid) != XidStatus::Aborted);
        }
        cached.1
    };
    let result: PgResult<()> = (|| {
        while let Some((buf, ())) = stream.next_buffer()? {
            check_cancel()?;
            let blkno = buf.blkno();
            let page = buf.page();
            if slotted::page_is_new(&page) {
                continue;
            }
            if let Some(dead) = dead.as_deref_mut() {
                // Line pointers VACUUM left dead: their index entries may still be there.
                dead.extend(
                    (1..=slotted::page_max_offset(&page))
                        .filter(|&off| {
                            slotted::page_item_flags(&page, off) == Some(slotted::LpFlags::Dead)
                        })
                        .map(|off| (blkno, off)),
                );
            }
            for (off, t) in (1..=slotted::page_max_offset(&page))
                .filter_map(|off| slotted::page_item(&page, off).map(|t| (off, t)))
            {
                tuples_seen += 1;
                let (xmin, xmax) = (tuple::xmin(t), tuple::deleter(t));
                if xmin == INVALID_XID
                    || !live(xmin, &source.clog)
                    || (xmax != INVALID_XID
                        && xmax < source.horizon
                        && source.clog.status(xmax) == XidStatus::Committed)
                {
                    if let Some(dead) = dead.as_deref_mut() {
                        dead.push((blkno, off));
                    }
                    continue;
                }
                if let [column] = source.key_columns[..] {
                    let key = Key::from_datum(layout.datum(t, column)?);
                    entry(std::slice::from_ref(&key), (blkno, off))?;
                } else {
                    let keys = (source.key_columns.iter())
                        .map(|&c| layout.datum(t, c).map(Key::from_datum))
                        .collect::<PgResult<Vec<_>>>()?;
                    entry(&keys, (blkno, off))?;
                }
                entries += 1;
                if entries.is_multiple_of(1_000_000) {
                    progress(entries);
                }
            }
        }
        Ok(())
    })();
    *acct = std::mem::take(&mut stream.acct);
    acct.relations().seq_tuples_read(relfilenode, tuples_seen);
    result
}

/// [`scan_heap`] into an in-memory sort buffer (unsorted).
pub fn scan_heap_into_buffer(
    source: &HeapSource,
    acct: &mut IoAccount,
    check_cancel: &dyn Fn() -> PgResult<()>,
    progress: &mut dyn FnMut(u64),
    dead: Option<&mut Vec<Tid>>,
    key_columns: &Arc<KeyColumns>,
) -> PgResult<SortBuffer> {
    let mut buffer = SortBuffer::new(key_columns);
    scan_heap(
        source,
        acct,
        check_cancel,
        progress,
        dead,
        &mut |key, tid| {
            buffer.push(key, tid);
            Ok(())
        },
    )?;
    Ok(buffer)
}

/// What a load produced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoadStats {
    pub entries: u64,
    pub leaf_pages: u64,
    pub internal_pages: u64,
    /// Levels of the tree (0 for an empty index, 1 for a root leaf).
    pub height: u32,
    pub root: u32,
}

/// A page closed but not yet written: it waits for its right sibling's block number.
struct ClosedPage {
    buffer: PinnedBuffer,
    opaque: BtOpaque,
    high_key: Vec<u8>,
    items: Vec<Vec<u8>>,
}

/// The pending page of one level.
struct Level {
    level: u32,
    items: Vec<Vec<u8>>,
    /// Σ item_cost of `items`.
    bytes: usize,
    /// Lower bound of the pending page (a pivot), `None` = minus infinity (leftmost).
    lower_bound: Option<Vec<u8>>,
    closed: Option<ClosedPage>,
    pages: u64,
}

/// Loads sorted entries into an empty index relation, bottom-up (see the module comment).
pub struct BtreeLoader<'a> {
    pool: Arc<BufferPool>,
    rel: Arc<RelFile>,
    columns: Arc<KeyColumns>,
    index_name: String,
    table_name: String,
    ring: BufferRing,
    acct: &'a mut IoAccount,
    meta: PinnedBuffer,
    levels: Vec<Level>,
    entries: u64,
    last: Option<Vec<u8>>,
    /// Whether equal keys are deduplicated, and the run of them being gathered.
    deduplicate: bool,
    run: Option<PostingRun>,
    allequalimage: bool,
    /// Percent of a leaf filled before the next one starts.
    leaf_fillfactor: usize,
}

impl<'a> BtreeLoader<'a> {
    /// Starts a load into `index`'s relation, which must be empty: allocates the meta page
    /// (block 0). The index says whether equal keys are deduplicated and how full leaves
    /// are packed.
    pub fn new(
        index: &super::BtreeIndex,
        table_name: &str,
        acct: &'a mut IoAccount,
    ) -> PgResult<BtreeLoader<'a>> {
        let (pool, rel, columns) = (index.pool.clone(), index.rel.clone(), index.columns.clone());
        assert_eq!(rel.nblocks(), 0, "a bottom-up load needs an empty relation");
        let allequalimage = columns.equal_image();
        let mut ring = BufferRing::bulk_write();
        let (blkno, meta) = pool.new_block(&rel, Some(&mut ring), acct)?;
        assert_eq!(blkno, super::page::METAPAGE);
        BtMeta::new(P_NONE, 0, allequalimage).write_page(&mut meta.page_mut());
        Ok(BtreeLoader {
            pool,
            rel,
            columns,
            index_name: index.name.clone(),
            table_name: table_name.to_string(),
            ring,
            acct,
            meta,
            levels: Vec::new(),
            entries: 0,
            last: None,
            deduplicate: index.deduplicate,
            run: None,
            allequalimage,
            leaf_fillfactor: index.leaf_fillfactor,
        })
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Adds the next entry; entries must come in (key, TID) order.
    pub fn add(&mut self, key: &[Key], tid: Tid) -> PgResult<()> {
        let item = form_leaf(&self.columns, key, tid);
        if item.len() > BT_MAX_ITEM_SIZE {
            return Err(too_big(item.len(), &self.index_name, &self.table_name, tid));
        }
        if cfg!(debug_assertions) {
            if let Some(last) = &self.last {
                let prev = IndexTuple::parse(last)?;
                let this = IndexTuple::parse(&item)?;
                assert_eq!(
                    super::page::compare_tuples(&self.columns, &prev, &this)?,
                    std::cmp::Ordering::Less,
                    "entries reach the loader out of order"
                );
            }
            self.last = Some(item.clone());
        }
        self.entries += 1;
        if !self.deduplicate {
            return self.add_item(0, item);
        }
        let t = IndexTuple::parse(&item)?;
        if let Some(run) = &mut self.run {
            if run.try_add(&t, BUILD_MAX_POSTING_SIZE) {
                return Ok(());
            }
        }
        match self.run.replace(PostingRun::new(&t)) {
            Some(run) => self.add_item(0, run.finish(&self.columns)?),
            None => Ok(()),
        }
    }

    fn ensure_level(&mut self, level: usize) {
        while self.levels.len() <= level {
            self.levels.push(Level {
                level: self.levels.len() as u32,
                items: Vec::new(),
                bytes: 0,
                lower_bound: None,
                closed: None,
                pages: 0,
            });
        }
    }

    fn add_item(&mut self, level: usize, item: Vec<u8>) -> PgResult<()> {
        self.ensure_level(level);
        let leaf = level == 0;
        let fillfactor = if leaf {
            self.leaf_fillfactor
        } else {
            NONLEAF_FILLFACTOR
        };
        let full_below = BLCKSZ * (100 - fillfactor) / 100;
        let lv = &self.levels[level];
        // Free space as PostgreSQL's PageGetFreeSpace sees it, with the high key's line
        // pointer already taken.
        let page_free = (PAGE_CAPACITY - 4 - lv.bytes).saturating_sub(4);
        let needed = maxalign(item.len()) + if leaf { 8 } else { 0 };
        let overflow = !lv.items.is_empty()
            && (page_free < needed || (page_free < full_below && lv.items.len() >= 2));
        if overflow {
            let lv = &mut self.levels[level];
            let moved = lv.items.pop().expect("a full page has items");
            lv.bytes -= item_cost(moved.len());
            let moved_tuple = IndexTuple::parse(&moved)?;
            let high_key = if leaf {
                let lastleft = lv.items.last().expect("two items on a closed page");
                truncate(&self.columns, &IndexTuple::parse(lastleft)?, &moved_tuple)?
            } else {
                moved_tuple.with_downlink(P_NONE)
            };
            let first = if leaf {
                moved.clone()
            } else {
                moved_tuple.as_minus_infinity(&self.columns)
            };
            self.close_page(level, Some(high_key.clone()))?;
            let lv = &mut self.levels[level];
            lv.lower_bound = Some(high_key);
            lv.bytes += item_cost(first.len());
            lv.items.push(first);
        }
        let lv = &mut self.levels[level];
        if !leaf && lv.items.is_empty() {
            assert!(
                IndexTuple::parse(&item)?.natts(&self.columns) == 0,
                "the first item of an internal level is minus infinity"
            );
        }
        lv.bytes += item_cost(item.len());
        assert!(lv.bytes + 4 <= PAGE_CAPACITY, "pending page overfull");
        lv.items.push(item);
        Ok(())
    }

    /// Closes the pending page of `level` (it keeps `high_key` unless it is the level's
    /// rightmost page) and hands its downlink to the level above.
    fn close_page(&mut self, level: usize, high_key: Option<Vec<u8>>) -> PgResult<()> {
        let (blkno, buffer) = self
            .pool
            .new_block(&self.rel, Some(&mut self.ring), self.acct)?;
        let lv = &mut self.levels[level];
        let mut prev = P_NONE;
        if let Some(mut closed) = lv.closed.take() {
            closed.opaque.next = blkno;
            prev = closed.buffer.blkno();
            let image = build_page(&closed.opaque, Some(&closed.high_key), &closed.items);
            closed.buffer.page_mut().copy_from_slice(&image);
        }
        let opaque = BtOpaque {
            prev,
            next: P_NONE,
            level: lv.level,
            flags: if level == 0 { BTP_LEAF } else { 0 },
            cycle_id: 0,
        };
        let items = std::mem::take(&mut lv.items);
        lv.bytes = 0;
        lv.pages += 1;
        let lower_bound = lv.lower_bound.take();
        match high_key {
            Some(high_key) => {
                lv.closed = Some(ClosedPage {
                    buffer,
                    opaque,
                    high_key,
                    items,
                });
            }
            None => {
                let image = build_page(&opaque, None, &items);
                buffer.page_mut().copy_from_slice(&image);
            }
        }
        let downlink = match lower_bound {
            Some(bound) => IndexTuple::parse(&bound)?.with_downlink(blkno),
            None => form_pivot(&self.columns, &[], None, blkno),
        };
        self.add_item(level + 1, downlink)
    }

    /// Closes every level and records the root in the meta page.
    pub fn finish(mut self) -> PgResult<LoadStats> {
        if let Some(run) = self.run.take() {
            self.add_item(0, run.finish(&self.columns)?)?;
        }
        let mut stats = LoadStats {
            entries: self.entries,
            ..LoadStats::default()
        };
        let mut level = 0;
        while level < self.levels.len() {
            let top = level + 1 == self.levels.len();
            if top && self.levels[level].closed.is_none() {
                // The only page of the top level: the root.
                let (blkno, buffer) =
                    self.pool
                        .new_block(&self.rel, Some(&mut self.ring), self.acct)?;
                let lv = &mut self.levels[level];
                lv.pages += 1;
                let opaque = BtOpaque {
                    prev: P_NONE,
                    next: P_NONE,
                    level: lv.level,
                    flags: BTP_ROOT | if level == 0 { BTP_LEAF } else { 0 },
                    cycle_id: 0,
                };
                let image = build_page(&opaque, None, &lv.items);
                buffer.page_mut().copy_from_slice(&image);
                stats.root = blkno;
                stats.height = level as u32 + 1;
                break;
            }
            self.close_page(level, None)?;
            level += 1;
        }
        for lv in &self.levels {
            if lv.level == 0 {
                stats.leaf_pages = lv.pages;
            } else {
                stats.internal_pages += lv.pages;
            }
        }
        if stats.height > 0 {
            BtMeta::new(stats.root, stats.height - 1, self.allequalimage)
                .write_page(&mut self.meta.page_mut());
        }
        self.meta.mark_dirty(self.acct);
        Ok(stats)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_catalog::PgType;

    #[test]
    fn sort_buffers_order_keys_then_tids_nulls_last() {
        let mut b = SortBuffer::new(&Arc::new(crate::btree::KeyColumns::new(&[PgType::Int4])));
        for (k, t) in [
            (Some(5), 3),
            (None, 1),
            (Some(-2), 9),
            (Some(5), 1),
            (None, 0),
        ] {
            let key = k.map(Key::Int).unwrap_or(Key::Null);
            b.push(&[key], (t, 1));
        }
        b.sort();
        let got: Vec<(Key, Tid)> = (0..b.len()).map(|i| b.get(i)).collect();
        assert_eq!(
            got,
            vec![
                (Key::Int(-2), (9, 1)),
                (Key::Int(5), (1, 1)),
                (Key::Int(5), (3, 1)),
                (Key::Null, (0, 1)),
                (Key::Null, (1, 1)),
            ]
        );
        let mut b = SortBuffer::new(&Arc::new(crate::btree::KeyColumns::new(&[PgType::Bpchar(
            3,
        )])));
        for (s, t) in [("b  ", 1), ("a", 2), ("a  ", 1)] {
            b.push(
                &[Key::Text(std::borrow::Cow::Borrowed(s.as_bytes()))],
                (t, 1),
            );
        }
        b.push(&[Key::Null], (0, 1));
        b.sort();
        let tids: Vec<Tid> = (0..b.len()).map(|i| b.get(i).1).collect();
        assert_eq!(tids, vec![(1, 1), (2, 1), (1, 1), (0, 1)]);
        assert_eq!(b.get(0).0, Key::Text(std::borrow::Cow::Borrowed(b"a  ")));
    }
}
