//! B-tree pages and index tuples, byte for byte as PostgreSQL 18's nbtree lays them out.
//!
//! # Pages
//!
//! A B-tree page is a slotted page (`storage/page.rs`) with 16 bytes of special space, the
//! page's place in the tree ([`BtOpaque`], PostgreSQL's `BTPageOpaqueData`):
//!
//! ```text
//!  0        24                                               8176            8192
//!  +--------+----+----+----+-- … --+------------ … ----------+---------------+
//!  | header | lp1| lp2| lp3|       |     … items (tuples) …  | prev|next|lvl|flags|cycle |
//!  +--------+----+----+----+-- … --+------------ … ----------+---------------+
//! ```
//!
//! * Block 0 is the **meta page** ([`BtMeta`] right after the header, `BTP_META` in the
//!   special space): where the root is, and the tree's height.
//! * Every other page is a **leaf** (level 0, `BTP_LEAF`) or an **internal** page (level
//!   ≥ 1). Pages of one level form a doubly linked list in key order (`btpo_prev`,
//!   `btpo_next`; 0 = none, since block 0 is the meta page and never a sibling).
//! * A page that is not the rightmost of its level has a **high key** in item 1: a pivot
//!   tuple every item on the page is smaller than, and the lower bound of its right sibling.
//!   Data items start at item 2 there ([`first_data_offset`]), at item 1 on rightmost pages.
//! * On an internal page, each data item is a **pivot tuple** whose key is the lower bound
//!   of the subtree its downlink points to; the first data item's key is truncated away
//!   ("minus infinity"): its lower bound is the page's own, as the parent records it.
//!
//! # Index tuples (PostgreSQL's `IndexTupleData`)
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | 0..4 | `t_tid` block (`bi_hi`, `bi_lo`: high and low 16 bits) | leaf: the heap tuple's block; pivot: the downlink (child block), 0 in a high key |
//! | 4..6 | `t_tid` offset | leaf: the heap tuple's line pointer; pivot: number of key columns kept (0 to the index's) in bits 0..12, `BT_PIVOT_HEAP_TID_ATTR` 0x1000 |
//! | 6..8 | `t_info` | size in bits 0..13 (MAXALIGNed), `INDEX_ALT_TID_MASK` 0x2000 (pivot), `INDEX_VAR_MASK` 0x4000 (a varlena key column), `INDEX_NULL_MASK` 0x8000 |
//! | 8..12 | null bitmap | only with `INDEX_NULL_MASK`: bit `i` clear = key column `i` is NULL |
//! | 8 or 16.. | key | the key columns' values as in a heap tuple (`key.rs`) |
//! | last 6 | heap TID | only in pivots with `BT_PIVOT_HEAP_TID_ATTR`: the tiebreaker |
//!
//! Items are ordered by (key, heap TID): the heap TID is the last key column, so every
//! leaf entry is unique and duplicates of one key are kept in TID order (PostgreSQL's
//! B-tree version 4, "heapkeyspace"). A pivot keeps only the key columns that tell its
//! two sides apart (suffix truncation, [`truncate`]): the columns it lacks, and its heap
//! TID when that was truncated away, stand for minus infinity, the smallest value there is.
//!
//! # Posting list tuples (deduplication, PostgreSQL 13+)
//!
//! A leaf tuple may stand for several heap tuples with equal keys: the key once, then the
//! sorted heap TIDs. Its header marks it `INDEX_ALT_TID_MASK` like a pivot, but its
//! `t_tid` offset carries `BT_IS_POSTING` 0x2000 and the number of TIDs (bits 0..11), and
//! its `t_tid` block the byte offset of the TID array (the key's MAXALIGNed end):
//!
//! ```text
//!   [ t_tid: block = 16, offset = 0x2000 | 3 ][ t_info ][ key 42 ][ pad ][ (7,1) (7,2) (9,4) ][ pad ]
//!     0                                         6         8                16                   34 → 40
//! ```
//!
//! In the (key, TID) order a posting tuple covers the range from its first TID to its
//! last: a search for a TID inside that range compares equal to it (`SearchKey::compare`),
//! and no other tuple of the page holds a TID of that range. Whether an index
//! deduplicates is `allequalimage` in the meta page (set for key types whose equal values
//! are equal bytes: not float or numeric, as in PostgreSQL) and the `deduplicate_items`
//! storage parameter; `build.rs` and `insert.rs` form the posting tuples.

use std::cmp::Ordering;

use iolab_catalog::{PgError, PgResult};

use super::key::{self, Key, KeyColumns, RowCursor};
use super::{corrupted, Tid};
use crate::storage::page::{
    self as slotted, maxalign, AlignedBlock, PageHeader, BLCKSZ, ITEM_ID_SIZE, SIZE_OF_PAGE_HEADER,
};
use crate::wal::Move;

/// Bytes of special space on every B-tree page.
pub const SPECIAL_SIZE: usize = 16;
/// Start of the special space.
pub const SPECIAL_AT: usize = BLCKSZ - SPECIAL_SIZE;
/// Bytes for items and line pointers on an empty page: 8192 − 24 − 16.
pub const PAGE_CAPACITY: usize = SPECIAL_AT - SIZE_OF_PAGE_HEADER;

/// `btpo_flags` bits (PostgreSQL's values).
pub const BTP_LEAF: u16 = 1 << 0;
pub const BTP_ROOT: u16 = 1 << 1;
pub const BTP_DELETED: u16 = 1 << 2;
pub const BTP_META: u16 = 1 << 3;
pub const BTP_HALF_DEAD: u16 = 1 << 4;
/// A split of this page whose separator has not reached the parent yet: set by the split's
/// WAL record, cleared by the record that inserts the separator (`insert.rs`).
pub const BTP_INCOMPLETE_SPLIT: u16 = 1 << 7;

/// "No page": sibling links and the meta page's root use 0 (block 0 is the meta page).
pub const P_NONE: u32 = 0;
/// The meta page's block.
pub const METAPAGE: u32 = 0;
/// Item number of the high key on a non-rightmost page.
pub const P_HIKEY: u16 = 1;

pub const BTREE_MAGIC: u32 = 0x053162;
pub const BTREE_VERSION: u32 = 4;

const INDEX_SIZE_MASK: u16 = 0x1FFF;
const INDEX_ALT_TID_MASK: u16 = 0x2000;
const INDEX_VAR_MASK: u16 = 0x4000;
const INDEX_NULL_MASK: u16 = 0x8000;
const BT_OFFSET_MASK: u16 = 0x0FFF;
const BT_PIVOT_HEAP_TID_ATTR: u16 = 0x1000;
const BT_IS_POSTING: u16 = 0x2000;

/// Size of `IndexTupleData` (t_tid + t_info).
const INDEX_TUPLE_HEADER: usize = 8;
/// Offset of the key in a tuple with a null bitmap: MAXALIGN(8 + 4).
const DATA_OFFSET_WITH_NULLS: usize = 16;

/// The largest posting list tuple a build forms (PostgreSQL's `maxpostingsize` in
/// `_bt_load`): a tenth of a page less a line pointer, so a leaf filled to its fill factor
/// takes about nine of them.
pub const BUILD_MAX_POSTING_SIZE: usize = (BLCKSZ * 10 / 100) / 8 * 8 - 4;
const _: () = assert!(BUILD_MAX_POSTING_SIZE == 812);
/// The largest posting list tuple a deduplication pass of a full leaf forms (PostgreSQL's
/// `_bt_dedup_pass`: half the largest tuple).
pub const DEDUP_MAX_POSTING_SIZE: usize = BT_MAX_ITEM_SIZE / 2;
/// The most TIDs a posting list can count (bits 0..11 of the `t_tid` offset).
pub const MAX_POSTING_TIDS: usize = BT_OFFSET_MASK as usize;

/// The largest index tuple PostgreSQL's B-tree version 4 accepts (`BTMaxItemSize`): a
/// third of a page, less room for three line pointers, three heap TIDs and the special
/// space, so that every page holds at least three items whatever a split truncates.
pub const BT_MAX_ITEM_SIZE: usize =
    ((BLCKSZ - maxalign(SIZE_OF_PAGE_HEADER + 3 * 4 + 3 * 6) - SPECIAL_SIZE) / 3) & !7;
const _: () = assert!(BT_MAX_ITEM_SIZE == 2704);

/// The special space of a B-tree page (PostgreSQL's `BTPageOpaqueData`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BtOpaque {
    /// Left sibling, or [`P_NONE`].
    pub prev: u32,
    /// Right sibling, or [`P_NONE`].
    pub next: u32,
    /// 0 for leaves.
    pub level: u32,
    pub flags: u16,
    /// VACUUM's cycle id; always 0 in iolab.
    pub cycle_id: u16,
}

impl BtOpaque {
    pub fn read(page: &[u8]) -> BtOpaque {
        let s = &page[SPECIAL_AT..];
        let u32_at = |at: usize| u32::from_le_bytes(s[at..at + 4].try_into().unwrap());
        BtOpaque {
            prev: u32_at(0),
            next: u32_at(4),
            level: u32_at(8),
            flags: u16::from_le_bytes([s[12], s[13]]),
            cycle_id: u16::from_le_bytes([s[14], s[15]]),
        }
    }

    pub fn write(&self, page: &mut [u8]) {
        let s = &mut page[SPECIAL_AT..];
        s[0..4].copy_from_slice(&self.prev.to_le_bytes());
        s[4..8].copy_from_slice(&self.next.to_le_bytes());
        s[8..12].copy_from_slice(&self.level.to_le_bytes());
        s[12..14].copy_from_slice(&self.flags.to_le_bytes());
        s[14..16].copy_from_slice(&self.cycle_id.to_le_bytes());
    }

    pub fn is_leaf(&self) -> bool {
        self.flags & BTP_LEAF != 0
    }

    pub fn is_rightmost(&self) -> bool {
        self.next == P_NONE
    }

    pub fn is_root(&self) -> bool {
        self.flags & BTP_ROOT != 0
    }

    pub fn is_incomplete_split(&self) -> bool {
        self.flags & BTP_INCOMPLETE_SPLIT != 0
    }
}

/// Item number of the first data item: 1 on a rightmost page, 2 (after the high key)
/// otherwise (PostgreSQL's `P_FIRSTDATAKEY`).
pub fn first_data_offset(opaque: &BtOpaque) -> u16 {
    if opaque.is_rightmost() {
        1
    } else {
        2
    }
}

/// The meta page's contents (PostgreSQL's `BTMetaPageData`, at byte 24).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BtMeta {
    pub magic: u32,
    pub version: u32,
    /// The root page, or [`P_NONE`] while the index is empty.
    pub root: u32,
    /// The root's level (the tree's height − 1).
    pub level: u32,
    /// PostgreSQL's "fast root" (the lowest page with more than one child); iolab never
    /// deletes pages, so it is always the root.
    pub fastroot: u32,
    pub fastlevel: u32,
    pub last_cleanup_num_delpages: u32,
    pub last_cleanup_num_heap_tuples: f64,
    /// Whether equal keys are always equal bytes, which makes deduplication safe
    /// (PostgreSQL 13+; [`super::key::KeyKind::equal_image`]).
    pub allequalimage: bool,
}

/// Bytes of `BTMetaPageData` (with its C padding before the float8).
const META_SIZE: usize = 48;

impl BtMeta {
    pub fn new(root: u32, level: u32, allequalimage: bool) -> BtMeta {
        BtMeta {
            magic: BTREE_MAGIC,
            version: BTREE_VERSION,
            root,
            level,
            fastroot: root,
            fastlevel: level,
            last_cleanup_num_delpages: 0,
            last_cleanup_num_heap_tuples: -1.0,
            allequalimage,
        }
    }

    /// Reads the meta page; XX002 if it is not one.
    pub fn read(page: &[u8], index: &str) -> PgResult<BtMeta> {
        let m = &page[SIZE_OF_PAGE_HEADER..SIZE_OF_PAGE_HEADER + META_SIZE];
        let u32_at = |at: usize| u32::from_le_bytes(m[at..at + 4].try_into().unwrap());
        let meta = BtMeta {
            magic: u32_at(0),
            version: u32_at(4),
            root: u32_at(8),
            level: u32_at(12),
            fastroot: u32_at(16),
            fastlevel: u32_at(20),
            last_cleanup_num_delpages: u32_at(24),
            last_cleanup_num_heap_tuples: f64::from_le_bytes(m[32..40].try_into().unwrap()),
            allequalimage: m[40] != 0,
        };
        if slotted::page_is_new(page) || BtOpaque::read(page).flags & BTP_META == 0 {
            return Err(corrupted(format!("index \"{index}\" is not a btree")));
        }
        if meta.magic != BTREE_MAGIC || meta.version != BTREE_VERSION {
            return Err(corrupted(format!(
                "index \"{index}\" has wrong version or magic: version {}, magic {:#x}",
                meta.version, meta.magic
            )));
        }
        Ok(meta)
    }

    /// Initialises `page` as the meta page with these contents.
    pub fn write_page(&self, page: &mut [u8]) {
        slotted::page_init(page, SPECIAL_SIZE);
        let m = &mut page[SIZE_OF_PAGE_HEADER..SIZE_OF_PAGE_HEADER + META_SIZE];
        for (at, v) in [
            (0, self.magic),
            (4, self.version),
            (8, self.root),
            (12, self.level),
            (16, self.fastroot),
            (20, self.fastlevel),
            (24, self.last_cleanup_num_delpages),
        ] {
            m[at..at + 4].copy_from_slice(&v.to_le_bytes());
        }
        m[32..40].copy_from_slice(&self.last_cleanup_num_heap_tuples.to_le_bytes());
        m[40] = self.allequalimage as u8;
        let mut header = PageHeader::read(page);
        header.pd_lower = (SIZE_OF_PAGE_HEADER + META_SIZE) as u16;
        header.write(page);
        BtOpaque {
            flags: BTP_META,
            ..BtOpaque::default()
        }
        .write(page);
    }
}

// ---------------------------------------------------------------------------------------
// Index tuples

/// Cost of an item on a page: its MAXALIGNed bytes plus its line pointer.
pub fn item_cost(len: usize) -> usize {
    maxalign(len) + 4
}

/// A heap TID as PostgreSQL's `ItemPointerData`: block (high, low 16 bits), line pointer
/// (what [`IndexTuple::tid_at`] reads).
fn tid_bytes((block, off): Tid) -> [u8; 6] {
    let mut b = [0u8; 6];
    b[0..2].copy_from_slice(&((block >> 16) as u16).to_le_bytes());
    b[2..4].copy_from_slice(&(block as u16).to_le_bytes());
    b[4..6].copy_from_slice(&off.to_le_bytes());
    b
}

fn put_tid_block(t: &mut [u8], block: u32) {
    t[0..2].copy_from_slice(&((block >> 16) as u16).to_le_bytes());
    t[2..4].copy_from_slice(&(block as u16).to_le_bytes());
}

/// Forms a tuple: header, null bitmap, key columns (`key`, a prefix of `columns`: all of
/// them but in a pivot), and (pivots) the trailing heap TID.
fn form_tuple(
    columns: &KeyColumns,
    key: &[Key],
    block: u32,
    offset_field: u16,
    pivot: bool,
    pivot_heap_tid: Option<Tid>,
) -> Vec<u8> {
    debug_assert!(key.len() <= columns.len());
    let mut t = vec![0u8; INDEX_TUPLE_HEADER];
    let mut info = 0u16;
    if pivot {
        info |= INDEX_ALT_TID_MASK;
    }
    if key.iter().any(Key::is_null) {
        info |= INDEX_NULL_MASK;
        t.resize(DATA_OFFSET_WITH_NULLS, 0);
        for (i, k) in key.iter().enumerate() {
            if !k.is_null() {
                t[INDEX_TUPLE_HEADER + i / 8] |= 1 << (i % 8);
            }
        }
    }
    if (0..key.len()).any(|i| key::is_varlena(columns.ty(i))) {
        info |= INDEX_VAR_MASK;
    }
    key::encode_row(columns, key, &mut t);
    t.resize(maxalign(t.len()), 0);
    if let Some(tid) = pivot_heap_tid {
        let at = t.len() + 2; // the TID ends the MAXALIGNed 8-byte slot
        t.resize(t.len() + 8, 0);
        t[at..at + 6].copy_from_slice(&tid_bytes(tid));
    }
    let size = t.len();
    assert!(
        size <= INDEX_SIZE_MASK as usize,
        "index tuple of {size} bytes"
    );
    info |= size as u16;
    put_tid_block(&mut t, block);
    t[4..6].copy_from_slice(&offset_field.to_le_bytes());
    t[6..8].copy_from_slice(&info.to_le_bytes());
    t
}

/// A leaf tuple pointing at heap tuple `tid`.
pub fn form_leaf(columns: &KeyColumns, key: &[Key], tid: Tid) -> Vec<u8> {
    assert!(tid.1 != 0, "heap TIDs have offsets from 1");
    assert_eq!(
        key.len(),
        columns.len(),
        "a leaf tuple has every key column"
    );
    form_tuple(columns, key, tid.0, tid.1, false, None)
}

/// A posting list tuple: `key` once, then `tids` (at least two, ascending).
pub fn form_posting(columns: &KeyColumns, key: &[Key], tids: &[Tid]) -> Vec<u8> {
    assert!(
        (2..=MAX_POSTING_TIDS).contains(&tids.len()),
        "a posting list of {} TIDs",
        tids.len()
    );
    assert!(
        tids.windows(2).all(|w| w[0] < w[1]),
        "posting list TIDs ascend"
    );
    assert_eq!(
        key.len(),
        columns.len(),
        "a leaf tuple has every key column"
    );
    let mut t = form_tuple(columns, key, 0, 0, false, None);
    let postingoff = t.len();
    for &tid in tids {
        t.extend_from_slice(&tid_bytes(tid));
    }
    t.resize(maxalign(t.len()), 0);
    let size = t.len();
    assert!(
        size <= INDEX_SIZE_MASK as usize,
        "posting tuple of {size} bytes"
    );
    let info = u16::from_le_bytes([t[6], t[7]]) & !INDEX_SIZE_MASK;
    t[6..8].copy_from_slice(&(info | INDEX_ALT_TID_MASK | size as u16).to_le_bytes());
    put_tid_block(&mut t, postingoff as u32);
    t[4..6].copy_from_slice(&(tids.len() as u16 | BT_IS_POSTING).to_le_bytes());
    t
}

/// Size of the tuple that holds `base` (a plain leaf tuple's bytes) with `ntids` TIDs:
/// the plain tuple itself for one, a posting list tuple for more.
pub fn posting_size(base: usize, ntids: usize) -> usize {
    if ntids <= 1 {
        base
    } else {
        maxalign(base + 6 * ntids)
    }
}

/// One leaf tuple for `key` and `tids` (ascending, not empty): plain for one TID, a
/// posting list for more.
pub fn form_leaf_with(columns: &KeyColumns, key: &[Key], tids: &[Tid]) -> Vec<u8> {
    match tids {
        [tid] => form_leaf(columns, key, *tid),
        _ => form_posting(columns, key, tids),
    }
}

/// A pivot tuple: the first key columns `key` (none: minus infinity), the heap TID
/// tiebreaker (only with every key column), and the downlink `child` (0 for a high key).
pub fn form_pivot(columns: &KeyColumns, key: &[Key], heap_tid: Option<Tid>, child: u32) -> Vec<u8> {
    assert!(
        key.len() == columns.len() || heap_tid.is_none(),
        "a pivot keeps its heap TID only with every key column"
    );
    let flags = if heap_tid.is_some() {
        BT_PIVOT_HEAP_TID_ATTR
    } else {
        0
    };
    form_tuple(
        columns,
        key,
        child,
        key.len() as u16 | flags,
        true,
        heap_tid,
    )
}

/// The pivot that separates `lastleft` from `firstright` (two adjacent leaf tuples),
/// as short as possible: the right key's columns up to the first that differs from the
/// left key's (the rest truncated: "the smallest key with this prefix"), or, when the
/// keys are equal, the whole key and the right heap TID. Every tuple ≤ `lastleft`
/// compares below it, `firstright` compares equal or above. (PostgreSQL's `_bt_truncate`
/// keeps the left TID and searches with "≤"; iolab keeps the right one and searches with
/// "<", which comes to the same tree shape.)
pub fn truncate(
    columns: &KeyColumns,
    lastleft: &IndexTuple,
    firstright: &IndexTuple,
) -> PgResult<Vec<u8>> {
    let left = lastleft.key(columns)?;
    let right = firstright.key(columns)?;
    let differing = (0..columns.len())
        .find(|&i| key::compare(columns.kind(i), &left[i], &right[i]) != Ordering::Equal);
    Ok(match differing {
        Some(i) => form_pivot(columns, &right[..=i], None, P_NONE),
        None => {
            let tid = firstright.heap_tid().expect("leaf tuples have TIDs");
            form_pivot(columns, &right, Some(tid), P_NONE)
        }
    })
}

/// A borrowed view of one index tuple on a page.
#[derive(Clone, Copy, Debug)]
pub struct IndexTuple<'a> {
    pub bytes: &'a [u8],
}

impl<'a> IndexTuple<'a> {
    /// Checks the header against the item's length (XX002 if they disagree).
    pub fn parse(bytes: &'a [u8]) -> PgResult<IndexTuple<'a>> {
        if bytes.len() < INDEX_TUPLE_HEADER {
            return Err(corrupted(format!("index tuple of {} bytes", bytes.len())));
        }
        let t = IndexTuple { bytes };
        if t.size() != bytes.len() || t.data_offset() > bytes.len() {
            return Err(corrupted(format!(
                "index tuple size {} on a line pointer of {} bytes",
                t.size(),
                bytes.len()
            )));
        }
        if t.is_posting() {
            let (at, n) = (t.posting_offset(), t.n_posting());
            if n < 2 || at % 8 != 0 || at < t.data_offset() || maxalign(at + 6 * n) != t.size() {
                return Err(corrupted(format!(
                    "posting list of {n} TIDs at byte {at} of a {}-byte tuple",
                    t.size()
                )));
            }
        }
        Ok(t)
    }

    fn u16_at(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.bytes[at], self.bytes[at + 1]])
    }

    fn block_field(&self) -> u32 {
        ((self.u16_at(0) as u32) << 16) | self.u16_at(2) as u32
    }

    fn offset_field(&self) -> u16 {
        self.u16_at(4)
    }

    fn info(&self) -> u16 {
        self.u16_at(6)
    }

    pub fn size(&self) -> usize {
        (self.info() & INDEX_SIZE_MASK) as usize
    }

    pub fn is_pivot(&self) -> bool {
        self.info() & INDEX_ALT_TID_MASK != 0 && self.offset_field() & BT_IS_POSTING == 0
    }

    /// A leaf tuple holding a posting list (more than one heap TID).
    pub fn is_posting(&self) -> bool {
        self.info() & INDEX_ALT_TID_MASK != 0 && self.offset_field() & BT_IS_POSTING != 0
    }

    fn posting_offset(&self) -> usize {
        self.block_field() as usize
    }

    fn n_posting(&self) -> usize {
        (self.offset_field() & BT_OFFSET_MASK) as usize
    }

    fn tid_at(&self, at: usize) -> Tid {
        let blk = ((self.u16_at(at) as u32) << 16) | self.u16_at(at + 2) as u32;
        (blk, self.u16_at(at + 4))
    }

    /// How many heap tuples a leaf tuple stands for.
    pub fn n_heap_tids(&self) -> usize {
        if self.is_posting() {
            self.n_posting()
        } else {
            1
        }
    }

    /// A leaf tuple's heap TIDs, ascending (one for a plain tuple).
    pub fn heap_tids(&self) -> impl ExactSizeIterator<Item = Tid> + '_ {
        debug_assert!(!self.is_pivot());
        let plain = (!self.is_posting()).then(|| (self.block_field(), self.offset_field()));
        let at = self.posting_offset();
        (0..self.n_heap_tids()).map(move |i| plain.unwrap_or_else(|| self.tid_at(at + 6 * i)))
    }

    /// The largest heap TID of a leaf tuple (its only one unless it is a posting list).
    pub fn max_heap_tid(&self) -> Tid {
        debug_assert!(!self.is_pivot());
        if self.is_posting() {
            self.tid_at(self.posting_offset() + 6 * (self.n_posting() - 1))
        } else {
            (self.block_field(), self.offset_field())
        }
    }

    /// Whether two leaf tuples have the same key, byte for byte (NULL included).
    pub fn same_key_image(&self, other: &IndexTuple) -> bool {
        let flags = INDEX_NULL_MASK | INDEX_VAR_MASK;
        self.info() & flags == other.info() & flags
            && self.bytes[INDEX_TUPLE_HEADER..self.base_size()]
                == other.bytes[INDEX_TUPLE_HEADER..other.base_size()]
    }

    /// Bytes of a leaf tuple without its posting list: the size of the plain tuple of its
    /// key, from which [`posting_size`] sizes merged tuples.
    pub fn base_size(&self) -> usize {
        if self.is_posting() {
            self.posting_offset()
        } else {
            self.size()
        }
    }

    fn data_offset(&self) -> usize {
        if self.info() & INDEX_NULL_MASK != 0 {
            DATA_OFFSET_WITH_NULLS
        } else {
            INDEX_TUPLE_HEADER
        }
    }

    /// Key columns present: every one of the index's in a leaf tuple, those a pivot kept
    /// (none in minus infinity).
    pub fn natts(&self, columns: &KeyColumns) -> usize {
        if self.is_pivot() {
            (self.offset_field() & BT_OFFSET_MASK) as usize
        } else {
            columns.len()
        }
    }

    /// The key columns present ([`natts`](Self::natts); empty in minus infinity).
    pub fn key(&self, columns: &KeyColumns) -> PgResult<Vec<Key<'a>>> {
        let mut key = Vec::with_capacity(columns.len());
        self.key_into(columns, &mut key)?;
        Ok(key)
    }

    /// [`key`](Self::key), appending the columns to `key`.
    pub fn key_into(&self, columns: &KeyColumns, key: &mut Vec<Key<'a>>) -> PgResult<()> {
        let natts = self.natts(columns);
        if natts > columns.len() {
            return Err(corrupted(format!(
                "index tuple with {natts} key columns in an index of {}",
                columns.len()
            )));
        }
        if let (Some(ty), 1) = (columns.single(), natts) {
            // One column (the common case): its value, or NULL, right where values start.
            let data = self.key_cursor(columns).rest();
            key.push(match self.info() & INDEX_NULL_MASK {
                0 => key::decode(ty, data)?,
                _ => Key::Null,
            });
            return Ok(());
        }
        let mut cursor = self.key_cursor(columns);
        for _ in 0..natts {
            key.push(cursor.next_key()?);
        }
        Ok(())
    }

    /// How `key` (the first columns of a key) orders against this tuple's key columns, over
    /// the columns both have, decoded one at a time without allocating; the caller
    /// decides what a difference in the number of columns means.
    pub fn key_order(&self, columns: &KeyColumns, key: &[Key]) -> PgResult<Ordering> {
        let natts = self.natts(columns);
        if natts > columns.len() {
            return Err(corrupted(format!(
                "index tuple with {natts} key columns in an index of {}",
                columns.len()
            )));
        }
        let mut cursor = self.key_cursor(columns);
        for (i, k) in key.iter().take(natts).enumerate() {
            let order = key::compare(columns.kind(i), k, &cursor.next_key()?);
            if order.is_ne() {
                return Ok(order);
            }
        }
        Ok(Ordering::Equal)
    }

    /// A reader of the key columns present, one at a time ([`natts`](Self::natts) of them).
    pub fn key_cursor<'c>(&self, columns: &'c KeyColumns) -> RowCursor<'c, 'a> {
        let mut end = self.bytes.len();
        if self.is_pivot() && self.offset_field() & BT_PIVOT_HEAP_TID_ATTR != 0 {
            end -= 8;
        }
        if self.is_posting() {
            end = self.posting_offset();
        }
        let not_null = if self.info() & INDEX_NULL_MASK != 0 {
            u32::from_le_bytes(self.bytes[8..12].try_into().unwrap())
        } else {
            u32::MAX
        };
        RowCursor::new(columns, &self.bytes[self.data_offset()..end], not_null)
    }

    /// The heap TID: a leaf tuple's heap tuple (a posting list's first), a pivot's
    /// tiebreaker (`None` when truncated away).
    pub fn heap_tid(&self) -> Option<Tid> {
        if self.is_posting() {
            return Some(self.tid_at(self.posting_offset()));
        }
        if !self.is_pivot() {
            return Some((self.block_field(), self.offset_field()));
        }
        if self.offset_field() & BT_PIVOT_HEAP_TID_ATTR == 0 {
            return None;
        }
        Some(self.tid_at(self.bytes.len() - 6))
    }

    /// A pivot's child block.
    pub fn downlink(&self) -> u32 {
        debug_assert!(self.is_pivot());
        self.block_field()
    }

    /// This pivot's bytes with the downlink set to `child`.
    pub fn with_downlink(&self, child: u32) -> Vec<u8> {
        let mut t = self.bytes.to_vec();
        put_tid_block(&mut t, child);
        t
    }

    /// This pivot as minus infinity (key and TID dropped), keeping its downlink.
    pub fn as_minus_infinity(&self, columns: &KeyColumns) -> Vec<u8> {
        form_pivot(columns, &[], None, self.downlink())
    }
}

// ---------------------------------------------------------------------------------------
// Comparing tuples with a search key

/// The TID part of a search key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TidBound {
    /// Below every TID: a search for the first entry of a key.
    MinusInf,
    Tid(Tid),
    /// Above every TID: a search for the first entry after a key.
    PlusInf,
}

/// What a descent looks for: `(key, tid)`, where `key` holds the first key columns
/// (all of them for a TID). With fewer, the missing columns are minus infinity with
/// [`TidBound::MinusInf`] (the first entry of that prefix; no columns at all: the
/// leftmost leaf) and plus infinity with [`TidBound::PlusInf`] (the first entry after it).
#[derive(Clone, Debug, PartialEq)]
pub struct SearchKey<'k> {
    pub key: Vec<Key<'k>>,
    pub tid: TidBound,
}

impl SearchKey<'_> {
    /// Minus infinity: the leftmost leaf.
    pub fn leftmost() -> SearchKey<'static> {
        SearchKey {
            key: Vec::new(),
            tid: TidBound::MinusInf,
        }
    }

    /// The search key compared with a tuple (a pivot, high key or leaf tuple): `Less`
    /// means the search key sorts before the tuple.
    pub fn compare(&self, columns: &KeyColumns, tuple: &IndexTuple) -> PgResult<Ordering> {
        let by_key = tuple.key_order(columns, &self.key)?;
        if by_key != Ordering::Equal {
            return Ok(by_key);
        }
        let (searched, kept) = (self.key.len(), tuple.natts(columns));
        if searched > kept {
            // The tuple's missing columns are minus infinity.
            return Ok(Ordering::Greater);
        }
        if searched < kept || kept < columns.len() {
            // The search key's missing columns are minus or plus infinity; a pivot's
            // equal prefix without a TID is where the first entry of the prefix goes.
            return Ok(match self.tid {
                TidBound::MinusInf if searched < kept => Ordering::Less,
                TidBound::MinusInf => Ordering::Equal,
                TidBound::PlusInf | TidBound::Tid(_) => Ordering::Greater,
            });
        }
        Ok(match (self.tid, tuple.heap_tid()) {
            (TidBound::MinusInf, None) => Ordering::Equal,
            (TidBound::MinusInf, Some(_)) => Ordering::Less,
            (TidBound::PlusInf, _) => Ordering::Greater,
            (TidBound::Tid(_), None) => Ordering::Greater,
            // Within a posting list's range: the TID belongs to that tuple.
            (TidBound::Tid(t), Some(u)) if t > u && tuple.is_posting() => {
                t.cmp(&tuple.max_heap_tid()).max(Ordering::Equal)
            }
            (TidBound::Tid(t), Some(u)) => t.cmp(&u),
        })
    }
}

/// Compares two tuples (any mix of pivots and leaf tuples) by (key, heap TID), minus
/// infinity and truncated TIDs lowest.
pub fn compare_tuples(columns: &KeyColumns, a: &IndexTuple, b: &IndexTuple) -> PgResult<Ordering> {
    let search = SearchKey {
        key: a.key(columns)?,
        tid: match a.heap_tid() {
            Some(t) => TidBound::Tid(t),
            None => TidBound::MinusInf,
        },
    };
    search.compare(columns, b)
}

// ---------------------------------------------------------------------------------------
// Reading and building pages

/// Item `off` of a B-tree page as an index tuple.
pub fn tuple_at(page: &[u8], off: u16) -> PgResult<IndexTuple<'_>> {
    let bytes = slotted::page_item(page, off)
        .ok_or_else(|| corrupted(format!("no index tuple at item {off}")))?;
    IndexTuple::parse(bytes)
}

/// Checks that a page read from an index is an initialised B-tree page (not the meta
/// page, not deleted) with a sane layout.
pub fn check_page(page: &[u8], blkno: u32, index: &str) -> PgResult<BtOpaque> {
    let header = PageHeader::read(page);
    if slotted::page_is_new(page) || header.pd_special as usize != SPECIAL_AT {
        return Err(corrupted(format!(
            "index \"{index}\" contains unexpected zero page at block {blkno}"
        )));
    }
    let opaque = BtOpaque::read(page);
    if opaque.flags & (BTP_META | BTP_DELETED | BTP_HALF_DEAD) != 0
        || opaque.is_leaf() != (opaque.level == 0)
    {
        return Err(corrupted(format!(
            "index \"{index}\" block {blkno} is not a live tree page (flags {:#x}, level {})",
            opaque.flags, opaque.level
        )));
    }
    Ok(opaque)
}

/// A fresh page image: `high_key` in item 1 if given (the page then has a right
/// sibling), then `items` in order. Panics if they do not fit: callers size pages first.
pub fn build_page(opaque: &BtOpaque, high_key: Option<&[u8]>, items: &[Vec<u8>]) -> AlignedBlock {
    assert_eq!(
        high_key.is_some(),
        opaque.next != P_NONE,
        "a page has a high key iff it has a right sibling"
    );
    let mut block = AlignedBlock::zeroed();
    slotted::page_init(&mut block, SPECIAL_SIZE);
    opaque.write(&mut block);
    for item in high_key
        .into_iter()
        .chain(items.iter().map(|i| i.as_slice()))
    {
        slotted::page_add_item(&mut block, item).expect("items sized to fit the page");
    }
    block
}

/// Inserts `item` as item number `off` of `page`, moving the line pointers from `off` on
/// one place up (PostgreSQL's `PageAddItem` without overwrite). Returns false, changing
/// nothing, when it does not fit.
pub fn insert_item_at(page: &mut [u8], off: u16, item: &[u8]) -> bool {
    let max = slotted::page_max_offset(page);
    assert!(off >= 1 && off <= max + 1, "insert at {off} of {max} items");
    if item_cost(item.len()) > slotted::page_free_space(page) + 4 {
        return false;
    }
    // Append, then rotate the new line pointer into place.
    let appended = slotted::page_add_item(page, item);
    if appended.is_none() {
        return false;
    }
    let lp = |n: u16| SIZE_OF_PAGE_HEADER + (n as usize - 1) * 4;
    page[lp(off)..lp(max + 2)].rotate_right(4);
    true
}

/// Removes the items at `offsets` (ascending) from `page` in place: the line pointers after
/// each one move down (PostgreSQL's `PageIndexMultiDelete` before its compaction, which
/// the caller does next with `page_repair_fragmentation`). Returns the moves that shifted
/// the line pointers, for the WAL.
pub fn remove_items(page: &mut [u8], offsets: &[u16]) -> Vec<Move> {
    let max = slotted::page_max_offset(page);
    let pointer = slotted::item_id_pos;
    let mut moves = Vec::new();
    let Some(&first) = offsets.first() else {
        return moves;
    };
    let mut to = pointer(first);
    for (i, &off) in offsets.iter().enumerate() {
        assert!(off >= 1 && off <= max, "no item {off} on a page of {max}");
        let next_removed = offsets.get(i + 1).copied().unwrap_or(max + 1);
        assert!(next_removed > off, "offsets ascend");
        let kept = (off + 1)..next_removed;
        if !kept.is_empty() {
            let from = pointer(kept.start);
            let len = kept.len() * ITEM_ID_SIZE;
            page.copy_within(from..from + len, to);
            moves.push(Move {
                from: from as u16,
                to: to as u16,
                len: len as u16,
            });
            to += len;
        }
    }
    let mut header = PageHeader::read(page);
    header.pd_lower -= (offsets.len() * ITEM_ID_SIZE) as u16;
    assert_eq!(header.pd_lower as usize, to);
    header.write(page);
    moves
}

/// Overwrites the item at `off` with `item`, no longer than it, in place; the space it no
/// longer uses is freed by the next `page_repair_fragmentation`.
pub fn shrink_item(page: &mut [u8], off: u16, item: &[u8]) {
    let mut id = slotted::page_item_id(page, off).expect("an item to shrink");
    assert!(
        item.len() <= id.len as usize,
        "an item only shrinks in place"
    );
    let start = id.off as usize;
    page[start..start + item.len()].copy_from_slice(item);
    id.len = item.len() as u16;
    let at = slotted::item_id_pos(off);
    page[at..at + ITEM_ID_SIZE].copy_from_slice(&id.pack().to_le_bytes());
}

/// A page's high key, copied; `None` on the rightmost page of its level.
pub fn high_key(page: &[u8], opaque: &BtOpaque) -> PgResult<Option<Vec<u8>>> {
    (!opaque.is_rightmost())
        .then(|| tuple_at(page, P_HIKEY).map(|t| t.bytes.to_vec()))
        .transpose()
}

/// The data items (not the high key) of a page, copied.
pub fn data_items(page: &[u8]) -> PgResult<Vec<Vec<u8>>> {
    let opaque = BtOpaque::read(page);
    (first_data_offset(&opaque)..=slotted::page_max_offset(page))
        .map(|off| tuple_at(page, off).map(|t| t.bytes.to_vec()))
        .collect()
}

/// The error for a key too large for an index tuple (PostgreSQL's wording).
pub fn too_big(size: usize, index: &str, table: &str, tid: Tid) -> PgError {
    PgError::new(
        iolab_catalog::sqlstate::PROGRAM_LIMIT_EXCEEDED,
        format!(
            "index row size {size} exceeds btree version {BTREE_VERSION} maximum {BT_MAX_ITEM_SIZE} for index \"{index}\""
        ),
    )
    .with_detail(format!(
        "Index row references tuple ({},{}) in relation \"{table}\".",
        tid.0, tid.1
    ))
    .with_hint(
        "Values larger than 1/3 of a buffer page cannot be indexed.\nConsider a function index of an MD5 hash of the value, or use full text indexing.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_catalog::PgType;

    fn cols(ty: PgType) -> crate::btree::KeyColumns {
        crate::btree::KeyColumns::new(&[ty])
    }
    use std::borrow::Cow;

    #[test]
    fn tuples_are_laid_out_like_postgres() {
        // int4 leaf tuple: 8-byte header, 4-byte key, padded to 16.
        let t = form_leaf(&cols(PgType::Int4), &[Key::Int(42)], (0x0001_0002, 7));
        assert_eq!(t.len(), 16);
        assert_eq!(&t[0..2], &1u16.to_le_bytes()); // bi_hi
        assert_eq!(&t[2..4], &2u16.to_le_bytes()); // bi_lo
        assert_eq!(&t[4..6], &7u16.to_le_bytes());
        assert_eq!(&t[6..8], &16u16.to_le_bytes()); // t_info: size only
        assert_eq!(&t[8..12], &42i32.to_le_bytes());
        let v = IndexTuple::parse(&t).unwrap();
        assert!(!v.is_pivot());
        assert_eq!(v.heap_tid(), Some((0x0001_0002, 7)));
        assert_eq!(v.key(&cols(PgType::Int4)).unwrap(), vec![Key::Int(42)]);

        // NULL: null bitmap, key at 16 (none), size 16.
        let t = form_leaf(&cols(PgType::Int4), &[Key::Null], (3, 1));
        assert_eq!(t.len(), 16);
        assert_eq!(u16::from_le_bytes([t[6], t[7]]), 0x8000 | 16);
        assert_eq!(
            IndexTuple::parse(&t)
                .unwrap()
                .key(&cols(PgType::Int4))
                .unwrap(),
            vec![Key::Null]
        );

        // text: short varlena header, INDEX_VAR_MASK.
        let t = form_leaf(
            &cols(PgType::Text),
            &[Key::Text(Cow::Borrowed(b"hello"))],
            (1, 1),
        );
        assert_eq!(t.len(), 16);
        assert_eq!(t[8], (6 << 1) | 1);
        assert_eq!(u16::from_le_bytes([t[6], t[7]]), 0x4000 | 16);

        // Pivots: minus infinity is a bare header; a pivot with a heap TID keeps it last.
        let m = form_pivot(&cols(PgType::Int4), &[], None, 9);
        assert_eq!(m.len(), 8);
        let m = IndexTuple::parse(&m).unwrap();
        assert!(m.is_pivot());
        assert_eq!((m.natts(&cols(PgType::Int4)), m.downlink()), (0, 9));
        assert_eq!(m.key(&cols(PgType::Int4)).unwrap(), Vec::<Key>::new());
        let p = form_pivot(&cols(PgType::Int4), &[Key::Int(5)], Some((70000, 3)), 11);
        assert_eq!(p.len(), 24);
        let p = IndexTuple::parse(&p).unwrap();
        assert_eq!(p.heap_tid(), Some((70000, 3)));
        assert_eq!(p.key(&cols(PgType::Int4)).unwrap(), vec![Key::Int(5)]);
        assert_eq!(p.downlink(), 11);
        assert_eq!(u16::from_le_bytes([p.bytes[4], p.bytes[5]]), 0x1001);

        // A posting list: TID array offset in the block field, 0x2000 | count, t_info
        // with INDEX_ALT_TID_MASK; a leaf tuple all the same, not a pivot.
        let tids = [(3, 7), (3, 8), (0x0001_0005, 1)];
        let t = form_posting(&cols(PgType::Int4), &[Key::Int(42)], &tids);
        assert_eq!(t.len(), 40);
        assert_eq!(&t[0..4], &[0, 0, 16, 0]);
        assert_eq!(u16::from_le_bytes([t[4], t[5]]), 0x2003);
        assert_eq!(u16::from_le_bytes([t[6], t[7]]), 0x2028);
        assert_eq!(&t[8..12], &42i32.to_le_bytes());
        assert_eq!(&t[28..34], &[1, 0, 5, 0, 1, 0]);
        let v = IndexTuple::parse(&t).unwrap();
        assert!(v.is_posting() && !v.is_pivot());
        assert_eq!((v.natts(&cols(PgType::Int4)), v.n_heap_tids()), (1, 3));
        assert_eq!(v.key(&cols(PgType::Int4)).unwrap(), vec![Key::Int(42)]);
        assert_eq!(v.heap_tids().collect::<Vec<_>>(), tids);
        assert_eq!(
            (v.heap_tid(), v.max_heap_tid()),
            (Some((3, 7)), (0x0001_0005, 1))
        );
        // A search for a TID inside the list's range finds the list itself.
        let s = |tid| SearchKey {
            key: vec![Key::Int(42)],
            tid: TidBound::Tid(tid),
        };
        assert_eq!(
            s((3, 6)).compare(&cols(PgType::Int4), &v).unwrap(),
            Ordering::Less
        );
        assert_eq!(
            s((4, 1)).compare(&cols(PgType::Int4), &v).unwrap(),
            Ordering::Equal
        );
        assert_eq!(
            s((3, 8)).compare(&cols(PgType::Int4), &v).unwrap(),
            Ordering::Equal
        );
        assert_eq!(
            s((0x0001_0005, 2))
                .compare(&cols(PgType::Int4), &v)
                .unwrap(),
            Ordering::Greater
        );
        // A count that disagrees with the size is corruption.
        let mut bad = t.clone();
        bad[4] = 5;
        assert!(IndexTuple::parse(&bad).is_err());
    }

    #[test]
    fn search_keys_order_against_pivots() {
        let ty = PgType::Int8;
        let pivot = form_pivot(&cols(ty), &[Key::Int(5)], None, 0);
        let pivot = IndexTuple::parse(&pivot).unwrap();
        let s = |k: i64, tid| SearchKey {
            key: vec![Key::Int(k)],
            tid,
        };
        assert_eq!(
            s(5, TidBound::MinusInf).compare(&cols(ty), &pivot).unwrap(),
            Ordering::Equal
        );
        assert_eq!(
            s(5, TidBound::Tid((0, 1)))
                .compare(&cols(ty), &pivot)
                .unwrap(),
            Ordering::Greater
        );
        assert_eq!(
            s(4, TidBound::PlusInf).compare(&cols(ty), &pivot).unwrap(),
            Ordering::Less
        );
        let minus = form_pivot(&cols(ty), &[], None, 0);
        let minus = IndexTuple::parse(&minus).unwrap();
        assert_eq!(
            s(i64::MIN, TidBound::MinusInf)
                .compare(&cols(ty), &minus)
                .unwrap(),
            Ordering::Greater
        );
        // truncate: different keys drop the TID, equal keys keep the right one.
        let a = form_leaf(&cols(ty), &[Key::Int(1)], (0, 1));
        let b = form_leaf(&cols(ty), &[Key::Int(2)], (0, 2));
        let c = form_leaf(&cols(ty), &[Key::Int(2)], (0, 3));
        let (a, b, c) = (
            IndexTuple::parse(&a).unwrap(),
            IndexTuple::parse(&b).unwrap(),
            IndexTuple::parse(&c).unwrap(),
        );
        let ab = truncate(&cols(ty), &a, &b).unwrap();
        assert_eq!(IndexTuple::parse(&ab).unwrap().heap_tid(), None);
        let bc = truncate(&cols(ty), &b, &c).unwrap();
        let bc = IndexTuple::parse(&bc).unwrap();
        assert_eq!(bc.heap_tid(), Some((0, 3)));
        assert_eq!(compare_tuples(&cols(ty), &b, &bc).unwrap(), Ordering::Less);
        assert_eq!(compare_tuples(&cols(ty), &c, &bc).unwrap(), Ordering::Equal);
    }

    /// VACUUM's in-place removal: entries go, a posting list shrinks, the leaf compacts,
    /// and the WAL entry (line pointer moves, changed bytes, compaction) redoes it exactly.
    #[test]
    fn items_are_removed_in_place_and_the_wal_entry_redoes_it() {
        use crate::wal::record::{BlockEntry, COMPACT, MOVES};
        use crate::wal::Change;
        let opaque = BtOpaque {
            flags: BTP_LEAF,
            next: 9,
            ..BtOpaque::default()
        };
        let ty = PgType::Int4;
        let high = form_pivot(&cols(ty), &[Key::Int(1000)], None, 0);
        let mut items: Vec<Vec<u8>> = (1..=300)
            .map(|k| form_leaf(&cols(ty), &[Key::Int(k)], (k as u32, 1)))
            .collect();
        items[10] = form_posting(&cols(ty), &[Key::Int(11)], &[(11, 1), (11, 2), (11, 3)]);
        let mut page = build_page(&opaque, Some(&high), &items);
        let before = page.to_vec();
        let free_before = slotted::page_free_space(&page);

        // Item numbers: 1 is the high key, so entry k is item k + 1.
        shrink_item(
            &mut page,
            12,
            &form_posting(&cols(ty), &[Key::Int(11)], &[(11, 1), (11, 3)]),
        );
        let gone: Vec<u16> = (2..=301).filter(|off| off % 7 == 0).collect();
        let moves = remove_items(&mut page, &gone);
        // A move for the pointers after each removed one; none after the last (item 301).
        assert_eq!(gone.last(), Some(&301));
        assert_eq!(moves.len(), gone.len() - 1);
        let between = page.to_vec();
        slotted::page_repair_fragmentation(&mut page);

        let keys: Vec<i64> = data_items(&page)
            .unwrap()
            .iter()
            .map(
                |i| match IndexTuple::parse(i).unwrap().key(&cols(ty)).unwrap()[..] {
                    [Key::Int(k)] => k,
                    ref other => panic!("{other:?}"),
                },
            )
            .collect();
        let expected: Vec<i64> = (1..=300).filter(|k| (k + 1) % 7 != 0).collect();
        assert_eq!(keys, expected);
        let posting = tuple_at(&page, 11).unwrap(); // item 7 went before it
        assert_eq!(
            posting.heap_tids().collect::<Vec<_>>(),
            vec![(11, 1), (11, 3)]
        );
        assert_eq!(check_page(&page, 1, "i").unwrap(), opaque);
        let freed = slotted::page_free_space(&page) - free_before;
        assert_eq!(
            freed,
            gone.len() * 20 + 8,
            "20 bytes an entry, 8 of a maxaligned TID"
        );

        let change = Change::Compacted {
            before: &before,
            moves: &moves,
            between: &between,
        };
        let entry = BlockEntry::capture(1, 1, &page, change, false);
        assert_eq!(entry.flags, COMPACT | MOVES);
        let logged: usize = entry.ranges.iter().map(|(_, b)| b.len()).sum();
        assert!(
            logged < 100,
            "the header and the posting list, not the page: {logged}"
        );
        let mut redone = before.clone();
        entry.apply(&mut redone);
        assert!(
            redone[..] == page[..],
            "redo differs from the vacuumed leaf"
        );
    }

    #[test]
    fn items_insert_in_the_middle_and_pages_build() {
        let opaque = BtOpaque {
            flags: BTP_LEAF,
            ..BtOpaque::default()
        };
        let ty = PgType::Int4;
        let items: Vec<Vec<u8>> = [1, 3]
            .iter()
            .map(|&k| form_leaf(&cols(ty), &[Key::Int(k)], (0, k as u16)))
            .collect();
        let mut page = build_page(&opaque, None, &items);
        assert!(insert_item_at(
            &mut page,
            2,
            &form_leaf(&cols(ty), &[Key::Int(2)], (0, 2))
        ));
        let keys: Vec<Key> = (1..=3)
            .map(|off| {
                tuple_at(&page, off)
                    .unwrap()
                    .key(&cols(ty))
                    .unwrap()
                    .remove(0)
            })
            .collect();
        assert_eq!(keys, vec![Key::Int(1), Key::Int(2), Key::Int(3)]);
        assert_eq!(check_page(&page, 1, "i").unwrap(), opaque);
        assert_eq!(data_items(&page).unwrap().len(), 3);
        // Fill it: int4 items cost 20 bytes, 8152 / 20 = 407 fit.
        let mut n = 3;
        while insert_item_at(&mut page, 1, &form_leaf(&cols(ty), &[Key::Int(0)], (1, 1))) {
            n += 1;
        }
        assert_eq!(n, PAGE_CAPACITY / 20);

        let mut meta = AlignedBlock::zeroed();
        BtMeta::new(3, 1, true).write_page(&mut meta);
        assert_eq!(PageHeader::read(&meta).pd_lower, 72);
        assert_eq!(PageHeader::read(&meta).pd_special, 8176);
        assert_eq!(BtMeta::read(&meta, "i").unwrap(), BtMeta::new(3, 1, true));
        assert!(check_page(&meta, 0, "i").is_err());
    }
}
