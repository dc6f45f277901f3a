//! The 8 KiB slotted page, laid out byte for byte like a PostgreSQL heap page.
//!
//! # How a slotted page works
//!
//! Every block of every relation file is one page of [`BLCKSZ`] bytes. A page stores a variable
//! number of variable-length items (heap tuples, later index tuples). Items are addressed by an
//! *offset number* (1-based), which indexes an array of 4-byte *line pointers* right after the
//! header; each line pointer records where its item starts and how long it is. The line
//! pointer array grows upward from the header, the items grow downward from the end of the
//! page (or from the start of the optional "special space" that index pages keep for
//! themselves), and the free space is the hole in the middle:
//!
//! ```text
//!  0        24                    pd_lower            pd_upper                pd_special  8192
//!  +--------+----+----+----+-------+------ ... ---------+--------+-------+-------+-----------+
//!  | header | lp1| lp2| lp3| lp4-> |     free space     | <-item4| item3 | item2 | item1 |special|
//!  +--------+----+----+----+-------+------ ... ---------+--------+-------+-------+-----------+
//! ```
//!
//! Adding an item takes `4` bytes at `pd_lower` for its line pointer and `MAXALIGN(len)` bytes
//! below `pd_upper` for its data, so item data always starts on an 8-byte boundary. Because
//! items are reached only through their line pointer, they can later be moved on the page
//! (compaction) without changing their offset number — that is what makes a tuple identifier
//! `(block, offset)` stable.
//!
//! # Header (24 bytes, little-endian)
//!
//! | offset | size | field               | meaning                                              |
//! |-------:|-----:|---------------------|------------------------------------------------------|
//! | 0      | 8    | pd_lsn              | WAL position of the last change (0 until WAL exists) |
//! | 8      | 2    | pd_checksum         | [`page_checksum`] of the page, set when written out  |
//! | 10     | 2    | pd_flags            | `PD_HAS_FREE_LINES`, `PD_PAGE_FULL`, `PD_ALL_VISIBLE`|
//! | 12     | 2    | pd_lower            | end of the line pointer array                        |
//! | 14     | 2    | pd_upper            | start of item data                                   |
//! | 16     | 2    | pd_special          | start of special space (`BLCKSZ` on heap pages)      |
//! | 18     | 2    | pd_pagesize_version | `BLCKSZ | PG_PAGE_LAYOUT_VERSION` (8192 \| 4)         |
//! | 20     | 4    | pd_prune_xid        | oldest prunable xid hint (0 for now)                 |
//!
//! A page whose `pd_upper` is zero has never been initialised ("new"). A freshly extended
//! block is all zeros, and an all-zero page is accepted by [`page_verify`] exactly as
//! PostgreSQL accepts it.
//!
//! # Line pointer (4 bytes)
//!
//! A C bitfield `{ lp_off:15, lp_flags:2, lp_len:15 }` stored as one little-endian `u32`:
//! bits 0..15 are the item's byte offset, bits 15..17 its state ([`LpFlags`]), bits 17..32 its
//! length. See [`ItemId`].
//!
//! # Checksum
//!
//! [`page_checksum`] is iolab's own 16-bit checksum (PostgreSQL's FNV-based algorithm is not
//! used): CRC-32 (IEEE, the `crc32fast` crate, hardware accelerated) over the 4 little-endian
//! bytes of the block number followed by the page with `pd_checksum` read as zero, folded to 16
//! bits as `low16 ^ rotate_left(high16, 1)`, with 0 mapped to 1 so that a checksummed page never
//! stores 0. Mixing in the block number makes a page written to the wrong block fail
//! verification. CRC-32 and the fold are both linear, so whether a corruption is detected does
//! not depend on the page contents; a unit test checks exhaustively that *every* single-bit
//! error in the page or in the block number is detected (the plain `lo ^ hi` fold misses three).
//! Other corruptions escape with probability about 2^-16, as with any 16-bit checksum.

use thiserror::Error;

/// Size of one page (block) in bytes.
pub const BLCKSZ: usize = 8192;
/// Alignment of memory, file offsets and lengths for direct I/O (`O_DIRECT`): PostgreSQL's
/// `PG_IO_ALIGN_SIZE`, the largest logical block size of common devices.
pub const IO_ALIGN_SIZE: usize = 4096;

/// One page in memory aligned for direct I/O: the pool's write-back copy and any other
/// buffer handed to a relation file opened with `O_DIRECT`. Derefs to `[u8]`, so it can be
/// passed wherever a page slice is expected (`&block`, `&mut block`).
///
/// ```
/// use iolab_engine::storage::page::{AlignedBlock, BLCKSZ, IO_ALIGN_SIZE};
/// let mut block = AlignedBlock::zeroed();
/// block.copy_from_slice(&[7u8; BLCKSZ]);
/// assert_eq!(block.as_ptr() as usize % IO_ALIGN_SIZE, 0);
/// ```
#[derive(Clone)]
#[repr(C, align(4096))]
pub struct AlignedBlock(pub [u8; BLCKSZ]);

const _: () = assert!(std::mem::align_of::<AlignedBlock>() == IO_ALIGN_SIZE);

impl AlignedBlock {
    /// An all-zero page.
    pub const fn zeroed() -> AlignedBlock {
        AlignedBlock([0; BLCKSZ])
    }
}

impl Default for AlignedBlock {
    fn default() -> AlignedBlock {
        AlignedBlock::zeroed()
    }
}

impl std::ops::Deref for AlignedBlock {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl std::ops::DerefMut for AlignedBlock {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.0
    }
}

impl std::fmt::Debug for AlignedBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBlock").finish_non_exhaustive()
    }
}

/// Size of the page header in bytes.
pub const SIZE_OF_PAGE_HEADER: usize = 24;
/// Size of one line pointer in bytes.
pub const ITEM_ID_SIZE: usize = 4;
/// Alignment of item data on the page (MAXALIGN on 64-bit platforms).
pub const MAXIMUM_ALIGNOF: usize = 8;
/// PostgreSQL's page layout version 4 (since 8.3).
pub const PG_PAGE_LAYOUT_VERSION: u16 = 4;
/// First valid offset number.
pub const FIRST_OFFSET_NUMBER: u16 = 1;
/// Upper bound on line pointers per page: one per 4 bytes of page.
pub const MAX_OFFSET_NUMBER: u16 = (BLCKSZ / ITEM_ID_SIZE) as u16;
/// Largest item length a line pointer can describe (15 bits).
pub const MAX_ITEM_LEN: usize = (1 << 15) - 1;

/// `pd_flags` bit: there are unused line pointers before `pd_lower`.
pub const PD_HAS_FREE_LINES: u16 = 0x0001;
/// `pd_flags` bit: not enough free space for a new tuple (a hint).
pub const PD_PAGE_FULL: u16 = 0x0002;
/// `pd_flags` bit: all tuples on the page are visible to everyone.
pub const PD_ALL_VISIBLE: u16 = 0x0004;
/// Every `pd_flags` bit that may legally be set.
pub const PD_VALID_FLAG_BITS: u16 = PD_HAS_FREE_LINES | PD_PAGE_FULL | PD_ALL_VISIBLE;

const PD_LSN: usize = 0;
const PD_CHECKSUM: usize = 8;
const PD_FLAGS: usize = 10;
const PD_LOWER: usize = 12;
const PD_UPPER: usize = 14;
const PD_SPECIAL: usize = 16;
const PD_PAGESIZE_VERSION: usize = 18;
const PD_PRUNE_XID: usize = 20;

/// The value of `pd_pagesize_version` on every initialised page.
pub const PAGESIZE_VERSION: u16 = BLCKSZ as u16 | PG_PAGE_LAYOUT_VERSION;

/// Round `len` up to the item alignment (MAXALIGN).
pub const fn maxalign(len: usize) -> usize {
    (len + MAXIMUM_ALIGNOF - 1) & !(MAXIMUM_ALIGNOF - 1)
}

fn get_u16(page: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([page[at], page[at + 1]])
}

fn put_u16(page: &mut [u8], at: usize, v: u16) {
    page[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

fn get_u32(page: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(page[at..at + 4].try_into().unwrap())
}

fn put_u32(page: &mut [u8], at: usize, v: u32) {
    page[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[inline]
fn assert_page_len(len: usize) {
    assert_eq!(len, BLCKSZ, "a page slice must be exactly BLCKSZ bytes");
}

/// The decoded page header. Reading and writing it is a convenience for tools and tests; the
/// page functions below read single fields directly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PageHeader {
    pub pd_lsn: u64,
    pub pd_checksum: u16,
    pub pd_flags: u16,
    pub pd_lower: u16,
    pub pd_upper: u16,
    pub pd_special: u16,
    pub pd_pagesize_version: u16,
    pub pd_prune_xid: u32,
}

impl PageHeader {
    pub fn read(page: &[u8]) -> PageHeader {
        assert_page_len(page.len());
        PageHeader {
            pd_lsn: u64::from_le_bytes(page[PD_LSN..PD_LSN + 8].try_into().unwrap()),
            pd_checksum: get_u16(page, PD_CHECKSUM),
            pd_flags: get_u16(page, PD_FLAGS),
            pd_lower: get_u16(page, PD_LOWER),
            pd_upper: get_u16(page, PD_UPPER),
            pd_special: get_u16(page, PD_SPECIAL),
            pd_pagesize_version: get_u16(page, PD_PAGESIZE_VERSION),
            pd_prune_xid: get_u32(page, PD_PRUNE_XID),
        }
    }

    pub fn write(&self, page: &mut [u8]) {
        assert_page_len(page.len());
        page[PD_LSN..PD_LSN + 8].copy_from_slice(&self.pd_lsn.to_le_bytes());
        put_u16(page, PD_CHECKSUM, self.pd_checksum);
        put_u16(page, PD_FLAGS, self.pd_flags);
        put_u16(page, PD_LOWER, self.pd_lower);
        put_u16(page, PD_UPPER, self.pd_upper);
        put_u16(page, PD_SPECIAL, self.pd_special);
        put_u16(page, PD_PAGESIZE_VERSION, self.pd_pagesize_version);
        put_u32(page, PD_PRUNE_XID, self.pd_prune_xid);
    }
}

/// State of a line pointer (`lp_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LpFlags {
    /// Free for reuse; `lp_len` is 0.
    Unused = 0,
    /// In use; `lp_off`/`lp_len` describe the item.
    Normal = 1,
    /// HOT redirect to the offset number in `lp_off`; no storage.
    Redirect = 2,
    /// Dead; may or may not still have storage.
    Dead = 3,
}

impl LpFlags {
    fn from_bits(bits: u32) -> LpFlags {
        match bits & 3 {
            0 => LpFlags::Unused,
            1 => LpFlags::Normal,
            2 => LpFlags::Redirect,
            _ => LpFlags::Dead,
        }
    }
}

/// One decoded line pointer (PostgreSQL's `ItemIdData`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemId {
    /// Byte offset of the item on the page (15 bits).
    pub off: u16,
    pub flags: LpFlags,
    /// Length of the item in bytes (15 bits).
    pub len: u16,
}

impl ItemId {
    /// Pack like the C bitfield on a little-endian machine: off in bits 0..15, flags in
    /// 15..17, len in 17..32.
    pub fn pack(self) -> u32 {
        debug_assert!(self.off as usize <= MAX_ITEM_LEN && self.len as usize <= MAX_ITEM_LEN);
        (self.off as u32 & 0x7fff)
            | ((self.flags as u32) << 15)
            | ((self.len as u32 & 0x7fff) << 17)
    }

    pub fn unpack(word: u32) -> ItemId {
        ItemId {
            off: (word & 0x7fff) as u16,
            flags: LpFlags::from_bits(word >> 15),
            len: (word >> 17) as u16,
        }
    }
}

/// Where line pointer `off` is on a page.
pub fn item_id_pos(off: u16) -> usize {
    SIZE_OF_PAGE_HEADER + (off as usize - 1) * ITEM_ID_SIZE
}

/// Initialise `page` as an empty page with `special_size` bytes (MAXALIGNed) of special space
/// at its end. Any previous contents are zeroed.
pub fn page_init(page: &mut [u8], special_size: usize) {
    assert_page_len(page.len());
    let special_size = maxalign(special_size);
    assert!(
        special_size <= BLCKSZ - SIZE_OF_PAGE_HEADER,
        "special space of {special_size} bytes does not fit on a page"
    );
    page.fill(0);
    let special = (BLCKSZ - special_size) as u16;
    PageHeader {
        pd_lower: SIZE_OF_PAGE_HEADER as u16,
        pd_upper: special,
        pd_special: special,
        pd_pagesize_version: PAGESIZE_VERSION,
        ..PageHeader::default()
    }
    .write(page);
}

/// True if the page was never initialised (`pd_upper == 0`), e.g. a freshly extended block.
pub fn page_is_new(page: &[u8]) -> bool {
    assert_page_len(page.len());
    get_u16(page, PD_UPPER) == 0
}

/// The page's LSN (`pd_lsn`).
pub fn page_lsn(page: &[u8]) -> u64 {
    assert_page_len(page.len());
    u64::from_le_bytes(page[PD_LSN..PD_LSN + 8].try_into().unwrap())
}

/// Set the page's LSN (`pd_lsn`).
pub fn page_set_lsn(page: &mut [u8], lsn: u64) {
    assert_page_len(page.len());
    page[PD_LSN..PD_LSN + 8].copy_from_slice(&lsn.to_le_bytes());
}

/// Byte range of the special space (empty on heap pages).
pub fn page_special(page: &[u8]) -> &[u8] {
    assert_page_len(page.len());
    &page[get_u16(page, PD_SPECIAL) as usize..]
}

/// Byte range of the special space, writable.
pub fn page_special_mut(page: &mut [u8]) -> &mut [u8] {
    assert_page_len(page.len());
    let start = get_u16(page, PD_SPECIAL) as usize;
    &mut page[start..]
}

/// Bytes available for one more item *including* its line pointer (PostgreSQL's
/// `PageGetFreeSpace`): an item of `len` bytes fits iff `maxalign(len) <= page_free_space`.
pub fn page_free_space(page: &[u8]) -> usize {
    assert_page_len(page.len());
    let lower = get_u16(page, PD_LOWER) as usize;
    let upper = get_u16(page, PD_UPPER) as usize;
    debug_assert!(lower <= upper, "pd_lower {lower} above pd_upper {upper}");
    upper.saturating_sub(lower).saturating_sub(ITEM_ID_SIZE)
}

/// Number of line pointers on the page (the largest offset number in use; 0 if none).
pub fn page_max_offset(page: &[u8]) -> u16 {
    assert_page_len(page.len());
    let lower = get_u16(page, PD_LOWER) as usize;
    if lower <= SIZE_OF_PAGE_HEADER {
        return 0;
    }
    ((lower - SIZE_OF_PAGE_HEADER) / ITEM_ID_SIZE) as u16
}

/// Append `item` to the page; returns its offset number, or `None` if it does not fit (or the
/// page already has [`MAX_OFFSET_NUMBER`] line pointers). Line pointers are never reused here
/// (B-tree pages; heap pages add tuples with [`page_add_tuple`]).
pub fn page_add_item(page: &mut [u8], item: &[u8]) -> Option<u16> {
    assert_page_len(page.len());
    assert!(!page_is_new(page), "page_add_item on an uninitialised page");
    if item.len() > MAX_ITEM_LEN {
        return None;
    }
    let lower = get_u16(page, PD_LOWER) as usize;
    let upper = get_u16(page, PD_UPPER) as usize;
    let offset = page_max_offset(page) + 1;
    if offset > MAX_OFFSET_NUMBER {
        return None;
    }
    let aligned = maxalign(item.len());
    let new_lower = lower + ITEM_ID_SIZE;
    if upper < aligned || new_lower > upper - aligned {
        return None;
    }
    put_item(page, offset, item);
    put_u16(page, PD_LOWER, new_lower as u16);
    Some(offset)
}

/// Writes `item` just below `pd_upper` (which moves down to it) and points line pointer
/// `offset` at it; the caller checked that it fits.
fn put_item(page: &mut [u8], offset: u16, item: &[u8]) {
    let new_upper = get_u16(page, PD_UPPER) as usize - maxalign(item.len());
    debug_assert_eq!(
        new_upper % MAXIMUM_ALIGNOF,
        0,
        "item data must stay MAXALIGNed"
    );
    page[new_upper..new_upper + item.len()].copy_from_slice(item);
    let id = ItemId {
        off: new_upper as u16,
        flags: LpFlags::Normal,
        len: item.len() as u16,
    };
    put_u32(page, item_id_pos(offset), id.pack());
    put_u16(page, PD_UPPER, new_upper as u16);
}

/// Turns the line pointer at `off` into a dead or unused one, without storage (`lp_off`
/// and `lp_len` 0). The item's bytes stay until [`page_repair_fragmentation`].
pub fn page_clear_item(page: &mut [u8], off: u16, flags: LpFlags) {
    assert!(
        matches!(flags, LpFlags::Dead | LpFlags::Unused),
        "only dead or unused line pointers have no storage"
    );
    assert!(
        off >= FIRST_OFFSET_NUMBER && off <= page_max_offset(page),
        "line pointer {off} is not on the page"
    );
    let id = ItemId {
        off: 0,
        flags,
        len: 0,
    };
    put_u32(page, item_id_pos(off), id.pack());
    if flags == LpFlags::Unused {
        let flags = get_u16(page, PD_FLAGS) | PD_HAS_FREE_LINES;
        put_u16(page, PD_FLAGS, flags);
    }
}

/// Moves the items of normal line pointers together at the end of the item area (in the
/// order of their current positions, highest first), so that the space of cleared ones
/// becomes free space (PostgreSQL's `PageRepairFragmentation`). Line pointer numbers do
/// not change, so tuple ids stay valid.
pub fn page_repair_fragmentation(page: &mut [u8]) {
    assert_page_len(page.len());
    let special = get_u16(page, PD_SPECIAL) as usize;
    let mut items: Vec<(u16, ItemId)> = (FIRST_OFFSET_NUMBER..=page_max_offset(page))
        .filter_map(|off| page_item_id(page, off).map(|id| (off, id)))
        .filter(|(_, id)| id.flags == LpFlags::Normal)
        .collect();
    items.sort_unstable_by_key(|(_, id)| std::cmp::Reverse(id.off));
    let mut upper = special;
    for (off, id) in items {
        let len = id.len as usize;
        let start = upper - maxalign(len);
        assert!(start >= id.off as usize, "items only move towards the end");
        page.copy_within(id.off as usize..id.off as usize + len, start);
        page[start + len..start + maxalign(len)].fill(0);
        let moved = ItemId {
            off: start as u16,
            ..id
        };
        put_u32(page, item_id_pos(off), moved.pack());
        upper = start;
    }
    let lower = get_u16(page, PD_LOWER) as usize;
    page[lower..upper].fill(0);
    put_u16(page, PD_UPPER, upper as u16);
}

/// The page between the two steps of a prune: `before`, with the line pointers and header
/// `after` has, but every normal item still where `before` had it — so that
/// [`page_repair_fragmentation`] of the result gives `after` (checked). `None` if `after`
/// is not `before` with line pointers cleared (or redirected) and then compacted: the
/// pointer arrays differ in length, or a normal item changed size or was not normal before.
/// The WAL logs the (small) difference to this page and compacts again at redo.
pub fn page_before_compaction(before: &[u8], after: &[u8]) -> Option<Vec<u8>> {
    assert_page_len(before.len());
    assert_page_len(after.len());
    if get_u16(before, PD_LOWER) != get_u16(after, PD_LOWER) {
        return None;
    }
    let mut between = before.to_vec();
    between[..SIZE_OF_PAGE_HEADER].copy_from_slice(&after[..SIZE_OF_PAGE_HEADER]);
    put_u16(&mut between, PD_UPPER, get_u16(before, PD_UPPER));
    for off in FIRST_OFFSET_NUMBER..=page_max_offset(after) {
        let now = page_item_id(after, off)?;
        let id = if now.flags == LpFlags::Normal {
            let then = page_item_id(before, off)?;
            if then.flags != LpFlags::Normal || then.len != now.len {
                return None;
            }
            then
        } else {
            now
        };
        put_u32(&mut between, item_id_pos(off), id.pack());
    }
    let mut compacted = between.clone();
    page_repair_fragmentation(&mut compacted);
    (compacted == after).then_some(between)
}

/// `PD_ALL_VISIBLE`: every tuple on the page is visible to every transaction (VACUUM sets
/// it with the visibility map's bit; a change to the page clears both).
pub fn page_is_all_visible(page: &[u8]) -> bool {
    get_u16(page, PD_FLAGS) & PD_ALL_VISIBLE != 0
}

pub fn page_set_all_visible(page: &mut [u8], on: bool) {
    let flags = get_u16(page, PD_FLAGS);
    let flags = if on {
        flags | PD_ALL_VISIBLE
    } else {
        flags & !PD_ALL_VISIBLE
    };
    put_u16(page, PD_FLAGS, flags);
}

/// Bytes of tuple data [`page_add_tuple`] can still place on the page (with its line
/// pointer): 0 when the page has `max_items` line pointers and none unused.
pub fn page_room_for_tuple(page: &[u8], max_items: u16) -> usize {
    let lower = get_u16(page, PD_LOWER) as usize;
    let upper = get_u16(page, PD_UPPER) as usize;
    if get_u16(page, PD_FLAGS) & PD_HAS_FREE_LINES != 0 {
        upper.saturating_sub(lower)
    } else if page_max_offset(page) >= max_items {
        0
    } else {
        page_free_space(page)
    }
}

/// Adds a heap tuple to the page (PostgreSQL's `PageAddItem` for heap pages): at the first
/// unused line pointer if the page has any (`PD_HAS_FREE_LINES`; VACUUM made them, and
/// nothing points at them any more), else at a new one, as long as the page holds no more
/// than `max_items` line pointers (`MaxHeapTuplesPerPage`). `None` if it does not fit.
pub fn page_add_tuple(page: &mut [u8], item: &[u8], max_items: u16) -> Option<u16> {
    let flags = get_u16(page, PD_FLAGS);
    if flags & PD_HAS_FREE_LINES == 0 {
        if page_max_offset(page) >= max_items {
            return None;
        }
        return page_add_item(page, item);
    }
    let max = page_max_offset(page);
    let Some(free) = (FIRST_OFFSET_NUMBER..=max)
        .find(|&off| page_item_flags(page, off) == Some(LpFlags::Unused))
    else {
        // The hint was stale: no unused line pointer is left.
        put_u16(page, PD_FLAGS, flags & !PD_HAS_FREE_LINES);
        return page_add_tuple(page, item, max_items);
    };
    let lower = get_u16(page, PD_LOWER) as usize;
    let upper = get_u16(page, PD_UPPER) as usize;
    let aligned = maxalign(item.len());
    if item.len() > MAX_ITEM_LEN || upper < lower + aligned {
        return None;
    }
    put_item(page, free, item);
    Some(free)
}

/// The line pointer at `off`, or `None` if `off` is 0 or beyond [`page_max_offset`].
pub fn page_item_id(page: &[u8], off: u16) -> Option<ItemId> {
    if off < FIRST_OFFSET_NUMBER || off > page_max_offset(page) {
        return None;
    }
    Some(ItemId::unpack(get_u32(page, item_id_pos(off))))
}

/// Byte ranges of a page, for logging a change to it (`wal::Change::Ranges`).
pub mod ranges {
    use super::*;
    use std::ops::Range;

    /// The page header.
    pub const HEADER: Range<usize> = 0..SIZE_OF_PAGE_HEADER;

    /// The line pointers from `off` to the end of the array (`pd_lower`).
    pub fn line_pointers_from(page: &[u8], off: u16) -> Range<usize> {
        item_id_pos(off)..get_u16(page, PD_LOWER) as usize
    }

    /// The special space (`pd_special..`).
    pub fn special(page: &[u8]) -> Range<usize> {
        get_u16(page, PD_SPECIAL) as usize..BLCKSZ
    }

    /// The item at `off` (its first `len` bytes, if given).
    pub fn item(page: &[u8], off: u16, len: Option<usize>) -> Range<usize> {
        let id = page_item_id(page, off).expect("a line pointer in use");
        let start = id.off as usize;
        start..start + len.unwrap_or(id.len as usize).min(id.len as usize)
    }
}

/// The state of the line pointer at `off`, or `None` if there is no such line pointer.
pub fn page_item_flags(page: &[u8], off: u16) -> Option<LpFlags> {
    page_item_id(page, off).map(|id| id.flags)
}

/// Range of the item bytes at `off`, for normal line pointers whose range lies within the
/// item area; anything else (unused, redirect, dead, or a line pointer pointing outside the
/// page) yields `None`.
#[inline]
fn item_range(page: &[u8], off: u16) -> Option<std::ops::Range<usize>> {
    let id = page_item_id(page, off)?;
    if id.flags != LpFlags::Normal {
        return None;
    }
    let start = id.off as usize;
    let end = start + id.len as usize;
    let upper = get_u16(page, PD_UPPER) as usize;
    let special = get_u16(page, PD_SPECIAL) as usize;
    if start < upper || end > special {
        return None;
    }
    Some(start..end)
}

/// Every normal item of the page in line-pointer order, as (offset number, item bytes):
/// what [`page_item`] returns for each offset, but reading the header once and each line
/// pointer with one load (the scan's inner loop).
pub fn page_items(page: &[u8]) -> impl Iterator<Item = (u16, &[u8])> + '_ {
    let upper = get_u16(page, PD_UPPER) as usize;
    let special = get_u16(page, PD_SPECIAL) as usize;
    let nitems = page_max_offset(page) as usize;
    let line_pointers = &page[SIZE_OF_PAGE_HEADER..SIZE_OF_PAGE_HEADER + nitems * ITEM_ID_SIZE];
    line_pointers
        .chunks_exact(ITEM_ID_SIZE)
        .enumerate()
        .filter_map(move |(i, lp)| {
            let id = ItemId::unpack(u32::from_le_bytes(lp.try_into().expect("4-byte chunk")));
            let start = id.off as usize;
            let end = start + id.len as usize;
            (id.flags == LpFlags::Normal && start >= upper && end <= special)
                .then(|| (i as u16 + FIRST_OFFSET_NUMBER, &page[start..end]))
        })
}

/// The item at `off`; `None` for offsets without a normal line pointer.
pub fn page_item(page: &[u8], off: u16) -> Option<&[u8]> {
    let range = item_range(page, off)?;
    Some(&page[range])
}

/// The item at `off`, writable in place (its length cannot change).
pub fn page_item_mut(page: &mut [u8], off: u16) -> Option<&mut [u8]> {
    let range = item_range(page, off)?;
    Some(&mut page[range])
}

/// Sanity checks on the header of an initialised page: `24 <= pd_lower <= pd_upper <=
/// pd_special <= BLCKSZ`, `pd_special` MAXALIGNed, only known flag bits, and the page size and
/// layout version match.
pub fn page_header_is_valid(page: &[u8]) -> bool {
    let h = PageHeader::read(page);
    (h.pd_flags & !PD_VALID_FLAG_BITS) == 0
        && h.pd_lower as usize >= SIZE_OF_PAGE_HEADER
        && h.pd_lower <= h.pd_upper
        && h.pd_upper <= h.pd_special
        && h.pd_special as usize <= BLCKSZ
        && h.pd_special as usize == maxalign(h.pd_special as usize)
        && h.pd_pagesize_version == PAGESIZE_VERSION
}

/// iolab's page checksum of `page` as stored in block `blkno` (see the module comment). The
/// stored `pd_checksum` is ignored; the result is never 0.
pub fn page_checksum(page: &[u8], blkno: u32) -> u16 {
    assert_page_len(page.len());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&blkno.to_le_bytes());
    crc.update(&page[..PD_CHECKSUM]);
    crc.update(&[0, 0]);
    crc.update(&page[PD_CHECKSUM + 2..]);
    let crc = crc.finalize();
    let folded = (crc as u16) ^ ((crc >> 16) as u16).rotate_left(1);
    if folded == 0 {
        1
    } else {
        folded
    }
}

/// The checksum stored in the header.
pub fn page_stored_checksum(page: &[u8]) -> u16 {
    assert_page_len(page.len());
    get_u16(page, PD_CHECKSUM)
}

/// Store `page_checksum(page, blkno)` in `pd_checksum`. Call it just before writing the page
/// to block `blkno`.
pub fn page_set_checksum(page: &mut [u8], blkno: u32) {
    let sum = page_checksum(page, blkno);
    put_u16(page, PD_CHECKSUM, sum);
}

/// Why [`page_verify`] rejected a page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
pub enum PageCorruption {
    #[error("page is marked new (pd_upper = 0) but is not all zeros")]
    NewPageNotZero,
    #[error("page checksum mismatch: stored {stored}, computed {computed}")]
    ChecksumMismatch { stored: u16, computed: u16 },
    #[error("page header is invalid")]
    InvalidHeader,
}

/// Check a page just read from block `blkno`. An all-zero page is valid (a block that was
/// extended but never written); any other page must carry a matching checksum and a sane
/// header.
pub fn page_verify(page: &[u8], blkno: u32) -> Result<(), PageCorruption> {
    assert_page_len(page.len());
    if page_is_new(page) {
        let all_zero = page
            .chunks_exact(8)
            .all(|word| u64::from_ne_bytes(word.try_into().unwrap()) == 0);
        return if all_zero {
            Ok(())
        } else {
            Err(PageCorruption::NewPageNotZero)
        };
    }
    let stored = page_stored_checksum(page);
    let computed = page_checksum(page, blkno);
    if stored != computed {
        return Err(PageCorruption::ChecksumMismatch { stored, computed });
    }
    if !page_header_is_valid(page) {
        return Err(PageCorruption::InvalidHeader);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: a small deterministic PRNG so the property tests need no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn new_page() -> Vec<u8> {
        let mut page = vec![0u8; BLCKSZ];
        page_init(&mut page, 0);
        page
    }

    #[test]
    fn repair_fragmentation_frees_cleared_items_and_keeps_the_others() {
        let mut rng = Rng(7);
        let mut page = new_page();
        let mut items = Vec::new();
        while let Some(off) = {
            let len = 20 + rng.below(90) as usize;
            let item: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let added = page_add_item(&mut page, &item);
            if added.is_some() {
                items.push(item);
            }
            added
        } {
            assert_eq!(off as usize, items.len());
        }
        let free_before = page_free_space(&page);
        let mut freed = 0;
        for off in (1..=items.len() as u16).filter(|o| !o.is_multiple_of(3)) {
            let flags = if off.is_multiple_of(2) {
                LpFlags::Dead
            } else {
                LpFlags::Unused
            };
            page_clear_item(&mut page, off, flags);
            freed += maxalign(items[off as usize - 1].len());
        }
        page_repair_fragmentation(&mut page);
        assert!(page_header_is_valid(&page));
        assert_eq!(page_free_space(&page), free_before + freed);
        assert_eq!(
            page_max_offset(&page) as usize,
            items.len(),
            "no line pointer goes"
        );
        for (i, item) in items.iter().enumerate() {
            let off = i as u16 + 1;
            if off.is_multiple_of(3) {
                assert_eq!(page_item(&page, off), Some(item.as_slice()), "item {off}");
            } else {
                let want = if off.is_multiple_of(2) {
                    LpFlags::Dead
                } else {
                    LpFlags::Unused
                };
                assert_eq!(page_item_flags(&page, off), Some(want));
            }
        }
        assert_ne!(PageHeader::read(&page).pd_flags & PD_HAS_FREE_LINES, 0);
        // The freed space takes new tuples, at the unused line pointers first (1, 5, …),
        // then at new ones.
        let max = page_max_offset(&page);
        let unused: Vec<u16> = (1..=max)
            .filter(|&o| page_item_flags(&page, o) == Some(LpFlags::Unused))
            .collect();
        for &want in &unused {
            assert_eq!(page_add_tuple(&mut page, &[1u8; 30], 291), Some(want));
        }
        assert_eq!(page_add_tuple(&mut page, &[2u8; 30], 291), Some(max + 1));
        assert_eq!(PageHeader::read(&page).pd_flags & PD_HAS_FREE_LINES, 0);
        assert_eq!(
            page_add_tuple(&mut page, &[2u8; 30], max + 1),
            None,
            "at most max_items"
        );
        assert_eq!(page_item(&page, unused[0]), Some(&[1u8; 30][..]));
    }

    #[test]
    fn header_layout_matches_postgres() {
        let page = new_page();
        assert_eq!(&page[12..14], &24u16.to_le_bytes()); // pd_lower
        assert_eq!(&page[14..16], &8192u16.to_le_bytes()); // pd_upper
        assert_eq!(&page[16..18], &8192u16.to_le_bytes()); // pd_special
        assert_eq!(&page[18..20], &(8192u16 | 4).to_le_bytes()); // pd_pagesize_version
        assert!(page_header_is_valid(&page));
        assert!(!page_is_new(&page));
        assert_eq!(page_free_space(&page), 8192 - 24 - 4);
        assert_eq!(page_max_offset(&page), 0);
        assert_eq!(PageHeader::read(&page).pd_pagesize_version, 0x2004);

        let mut with_special = vec![0u8; BLCKSZ];
        page_init(&mut with_special, 13);
        assert_eq!(PageHeader::read(&with_special).pd_special, 8192 - 16);
        assert_eq!(page_special(&with_special).len(), 16);
    }

    #[test]
    fn line_pointer_packs_like_a_c_bitfield() {
        let id = ItemId {
            off: 8152,
            flags: LpFlags::Normal,
            len: 40,
        };
        let word = id.pack();
        assert_eq!(word, 8152 | (1 << 15) | (40 << 17));
        assert_eq!(ItemId::unpack(word), id);
        let dead = ItemId {
            off: 0x7fff,
            flags: LpFlags::Dead,
            len: 0x7fff,
        };
        assert_eq!(dead.pack(), u32::MAX);
        assert_eq!(ItemId::unpack(u32::MAX), dead);

        let mut page = new_page();
        let off = page_add_item(&mut page, &[7u8; 40]).unwrap();
        assert_eq!(off, 1);
        // 8192 - 40 = 8152; the line pointer sits right after the header.
        assert_eq!(&page[24..28], &word.to_le_bytes());
        assert_eq!(page_item_flags(&page, 1), Some(LpFlags::Normal));
        assert_eq!(page_item_flags(&page, 2), None);
        assert_eq!(page_item(&page, 0), None);
    }

    #[test]
    fn items_are_maxaligned_and_mutable() {
        let mut page = new_page();
        assert_eq!(page_add_item(&mut page, b"abc"), Some(1));
        assert_eq!(page_add_item(&mut page, b"defghijkl"), Some(2));
        let h = PageHeader::read(&page);
        assert_eq!(h.pd_upper, 8192 - 8 - 16);
        assert_eq!(h.pd_lower, 24 + 8);
        page_item_mut(&mut page, 1).unwrap().copy_from_slice(b"xyz");
        assert_eq!(page_item(&page, 1), Some(&b"xyz"[..]));
        assert_eq!(page_item(&page, 2), Some(&b"defghijkl"[..]));
        // A dead line pointer has no readable item.
        let mut id = page_item_id(&page, 2).unwrap();
        id.flags = LpFlags::Dead;
        page[28..32].copy_from_slice(&id.pack().to_le_bytes());
        assert_eq!(page_item(&page, 2), None);
        assert_eq!(page_item_flags(&page, 2), Some(LpFlags::Dead));
    }

    #[test]
    fn zero_length_and_oversized_items() {
        let mut page = new_page();
        assert_eq!(page_add_item(&mut page, &[]), Some(1));
        assert_eq!(page_item(&page, 1), Some(&[][..]));
        assert_eq!(page_add_item(&mut page, &vec![1u8; BLCKSZ]), None);
        // The largest item that fits: everything but the header and two line pointers.
        let biggest = BLCKSZ - SIZE_OF_PAGE_HEADER - 2 * ITEM_ID_SIZE;
        assert_eq!(page_free_space(&page), biggest);
        assert_eq!(page_add_item(&mut page, &vec![1u8; biggest + 1]), None);
        assert_eq!(page_add_item(&mut page, &vec![1u8; biggest]), Some(2));
        assert_eq!(page_free_space(&page), 0);
        assert_eq!(page_add_item(&mut page, &[]), None);
    }

    #[test]
    fn offset_numbers_are_bounded() {
        let mut page = new_page();
        let mut n = 0;
        while page_add_item(&mut page, &[]).is_some() {
            n += 1;
        }
        // Zero-length items only consume line pointers: (8192 - 24) / 4.
        assert_eq!(n, (BLCKSZ - SIZE_OF_PAGE_HEADER) / ITEM_ID_SIZE);
        assert!(n <= MAX_OFFSET_NUMBER as usize);
    }

    /// Property: fill pages with random-sized items; adding succeeds exactly when the
    /// accounting says it fits, free space shrinks by exactly `maxalign(len) + 4`, every item
    /// reads back unchanged, and any flipped byte fails verification.
    #[test]
    fn random_fill_round_trips_and_accounting_is_exact() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..200u32 {
            let mut page = new_page();
            let mut items: Vec<Vec<u8>> = Vec::new();
            let big = round % 4 == 0;
            let mut failures_in_a_row = 0;
            while failures_in_a_row < 8 {
                let len = if big {
                    rng.below(3000)
                } else {
                    1 + rng.below(200)
                } as usize;
                let item: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
                let before = page_free_space(&page);
                let fits = maxalign(len) <= before;
                match page_add_item(&mut page, &item) {
                    Some(off) => {
                        assert!(fits, "added {len} bytes with only {before} free");
                        assert_eq!(off as usize, items.len() + 1);
                        // The hole shrinks by the aligned item plus its line pointer; the
                        // next item needs one more line pointer out of what is left.
                        let expected_after = (before - maxalign(len)).saturating_sub(ITEM_ID_SIZE);
                        assert_eq!(page_free_space(&page), expected_after);
                        items.push(item);
                        failures_in_a_row = 0;
                    }
                    None => {
                        assert!(!fits, "{len} bytes rejected with {before} free");
                        assert_eq!(page_free_space(&page), before);
                        failures_in_a_row += 1;
                    }
                }
            }
            assert!(page_header_is_valid(&page));
            assert_eq!(page_max_offset(&page) as usize, items.len());
            let used: usize = items.iter().map(|i| maxalign(i.len()) + ITEM_ID_SIZE).sum();
            let h = PageHeader::read(&page);
            assert_eq!(
                (h.pd_upper - h.pd_lower) as usize,
                BLCKSZ - SIZE_OF_PAGE_HEADER - used
            );
            for (i, item) in items.iter().enumerate() {
                assert_eq!(page_item(&page, i as u16 + 1), Some(&item[..]));
            }

            let blkno = rng.next() as u32;
            page_set_checksum(&mut page, blkno);
            assert_eq!(page_verify(&page, blkno), Ok(()));
            for _ in 0..16 {
                let at = rng.below(BLCKSZ as u64) as usize;
                let flip = 1 + rng.below(255) as u8;
                page[at] ^= flip;
                assert!(
                    page_verify(&page, blkno).is_err(),
                    "flip of byte {at} by {flip:#x} undetected"
                );
                page[at] ^= flip;
            }
            assert_eq!(page_verify(&page, blkno), Ok(()));
            // The same page claimed by another block number fails.
            assert!(page_verify(&page, blkno.wrapping_add(1)).is_err());
        }
    }

    /// Every single-bit error anywhere in the page, and in the block number, is detected.
    /// Because CRC-32 and the fold are linear over GF(2), checking one page covers all pages.
    #[test]
    fn every_single_bit_error_is_detected() {
        let mut rng = Rng(42);
        let mut page = new_page();
        while page_add_item(&mut page, &[rng.next() as u8; 77]).is_some() {}
        let blkno = 123_456;
        page_set_checksum(&mut page, blkno);
        assert_eq!(page_verify(&page, blkno), Ok(()));
        for bit in 0..BLCKSZ * 8 {
            page[bit / 8] ^= 1 << (bit % 8);
            assert!(
                page_verify(&page, blkno).is_err(),
                "flip of bit {bit} undetected"
            );
            page[bit / 8] ^= 1 << (bit % 8);
        }
        for bit in 0..32 {
            assert!(page_verify(&page, blkno ^ (1 << bit)).is_err());
        }
    }

    #[test]
    fn zero_pages_verify_and_garbage_new_pages_do_not() {
        let mut page = vec![0u8; BLCKSZ];
        assert!(page_is_new(&page));
        assert_eq!(page_verify(&page, 0), Ok(()));
        assert_eq!(page_verify(&page, 99), Ok(()));
        page[4000] = 1;
        assert_eq!(page_verify(&page, 0), Err(PageCorruption::NewPageNotZero));

        // An initialised page without a checksum is rejected.
        let page = new_page();
        assert!(matches!(
            page_verify(&page, 0),
            Err(PageCorruption::ChecksumMismatch { .. })
        ));
        // A checksummed page with a broken header is rejected even though the sum matches.
        let mut page = new_page();
        put_u16(&mut page, PD_LOWER, 8);
        page_set_checksum(&mut page, 5);
        assert_eq!(page_verify(&page, 5), Err(PageCorruption::InvalidHeader));
    }

    #[test]
    fn checksum_is_never_zero_and_ignores_its_own_field() {
        let mut page = new_page();
        for blkno in 0..2000u32 {
            let sum = page_checksum(&page, blkno);
            assert_ne!(sum, 0);
            put_u16(&mut page, PD_CHECKSUM, sum ^ 0x5555);
            assert_eq!(page_checksum(&page, blkno), sum);
        }
    }
}
