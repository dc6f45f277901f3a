//! The heap tuple header: the 23 bytes in front of every row, in PostgreSQL's layout.
//!
//! A heap tuple is one row as it lies on a page. It starts with a fixed header that says who
//! inserted the row (`t_xmin`, `t_cid`), who deleted or updated it (`t_xmax`), where its newer
//! version is (`t_ctid`), how many attributes it has and some state bits (`t_infomask2`,
//! `t_infomask`), and where its attribute data starts (`t_hoff`). All integers are
//! little-endian:
//!
//! ```text
//!  offset size field        meaning
//!   0     4    t_xmin       inserting transaction id
//!   4     4    t_xmax       deleting / locking transaction id, 0 = none (INVALID_XID)
//!   8     4    t_cid        command id of the inserting (or deleting) command
//!  12     4    t_ctid.block block of this tuple or of its newer version
//!  16     2    t_ctid.off   line pointer (1-based) of this tuple or of its newer version
//!  18     2    t_infomask2  number of attributes (low 11 bits) + HOT / key-update flags
//!  20     2    t_infomask   HEAP_HASNULL, HEAP_HASVARWIDTH, hint bits, HEAP_XMAX_INVALID, …
//!  22     1    t_hoff       offset of the attribute data = MAXALIGN(23 + null bitmap bytes)
//!  23     …    null bitmap  only when HEAP_HASNULL: one bit per attribute, 1 = NOT null
//!  t_hoff …    attribute data (see `codec.rs`)
//! ```
//!
//! Worked example: a row `(42, NULL, 'x')` of three attributes has a null, so the header is
//! followed by a 1-byte bitmap `0b0000_0101` (attributes 0 and 2 present) at offset 23;
//! `t_hoff = MAXALIGN(23 + 1) = 24`. Without any null there is no bitmap and `t_hoff` is
//! `MAXALIGN(23) = 24` as well; a null in a row of 9..=72 attributes needs 2..=9 bitmap
//! bytes and pushes `t_hoff` to 32.
//!
//! This module only reads and writes those bytes. Accessors work straight on a tuple's bytes
//! (`xmin(tuple)`, `set_xmax(tuple, xid)`, …) so that visibility checks and updates need not
//! copy the header; [`TupleHeader`] is the typed copy for code that wants all fields at once.
//!
//! Size limit: a tuple must fit on one 8 KiB page together with the page header and its line
//! pointer ([`MAX_HEAP_TUPLE_SIZE`] = 8160 bytes, PostgreSQL's `MaxHeapTupleSize`). PostgreSQL
//! moves wide values out of line (TOAST) to stay under it; iolab has no TOAST, so a row that
//! does not fit is refused with [`row_too_big`].

use iolab_catalog::{sqlstate, PgError};

use crate::txn::snapshot::VisibilityChecker;

/// Size of the fixed tuple header (`SizeofHeapTupleHeader`); the null bitmap follows it.
pub const HEAP_TUPLE_HEADER_SIZE: usize = 23;
/// Alignment of tuples on a page and of `t_hoff` (PostgreSQL's `MAXIMUM_ALIGNOF` on 64-bit).
pub const MAXALIGN: usize = 8;
/// "No transaction" (`InvalidTransactionId`): the `t_xmax` of a live, never-deleted tuple.
pub const INVALID_XID: u32 = 0;
/// "No block" (`InvalidBlockNumber`): the `t_ctid` of a tuple not yet placed on a page.
pub const INVALID_BLOCK_NUMBER: u32 = u32::MAX;
/// "No line pointer" (`InvalidOffsetNumber`); line pointers count from 1.
pub const INVALID_OFFSET_NUMBER: u16 = 0;
/// Most attributes a table may have (`MaxHeapAttributeNumber`); fits in `HEAP_NATTS_MASK`.
pub const MAX_HEAP_ATTRIBUTE_NUMBER: usize = 1600;

/// Page size, page header size and line pointer size, only to derive [`MAX_HEAP_TUPLE_SIZE`]
/// the way PostgreSQL does; the page layer owns the real definitions.
const PAGE_SIZE: usize = 8192;
const PAGE_HEADER_SIZE: usize = 24;
const LINE_POINTER_SIZE: usize = 4;

/// Largest tuple one page holds: `BLCKSZ - MAXALIGN(SizeOfPageHeaderData + sizeof(ItemIdData))`.
pub const MAX_HEAP_TUPLE_SIZE: usize = PAGE_SIZE - maxalign(PAGE_HEADER_SIZE + LINE_POINTER_SIZE);
const _: () = assert!(MAX_HEAP_TUPLE_SIZE == 8160);

// t_infomask bits (PostgreSQL's values, `htup_details.h`).
/// The tuple has a null bitmap (at least one attribute is null).
pub const HEAP_HASNULL: u16 = 0x0001;
/// The tuple has at least one non-null variable-width (varlena) attribute.
pub const HEAP_HASVARWIDTH: u16 = 0x0002;
/// `t_cid` holds a combo command id (inserted and deleted by the same transaction).
pub const HEAP_COMBOCID: u16 = 0x0020;
/// The `t_xmax` lock is exclusive (`SELECT … FOR UPDATE`; iolab's every row lock is).
pub const HEAP_XMAX_EXCL_LOCK: u16 = 0x0040;
/// `t_xmax` only locked the row (`SELECT … FOR UPDATE | SHARE`): it did not delete it.
pub const HEAP_XMAX_LOCK_ONLY: u16 = 0x0080;
/// Hint: `t_xmin` is known committed.
pub const HEAP_XMIN_COMMITTED: u16 = 0x0100;
/// Hint: `t_xmin` is known aborted (or invalid).
pub const HEAP_XMIN_INVALID: u16 = 0x0200;
/// Hint: `t_xmax` is known committed.
pub const HEAP_XMAX_COMMITTED: u16 = 0x0400;
/// `t_xmax` is invalid or aborted: the tuple has not been deleted or locked.
pub const HEAP_XMAX_INVALID: u16 = 0x0800;
/// This tuple is the newer version written by an UPDATE.
pub const HEAP_UPDATED: u16 = 0x2000;

// t_infomask2 bits.
/// Low 11 bits of `t_infomask2`: the number of attributes stored in the tuple.
pub const HEAP_NATTS_MASK: u16 = 0x07FF;
/// An UPDATE or DELETE changed key columns of this tuple.
pub const HEAP_KEYS_UPDATED: u16 = 0x2000;
/// The tuple was HOT-updated: its newer version is on the same page, unindexed.
pub const HEAP_HOT_UPDATED: u16 = 0x4000;
/// The tuple is a heap-only (HOT) version, reachable only through the update chain.
pub const HEAP_ONLY_TUPLE: u16 = 0x8000;

// Byte offsets of the header fields.
const XMIN_AT: usize = 0;
const XMAX_AT: usize = 4;
const CID_AT: usize = 8;
const CTID_BLOCK_AT: usize = 12;
const CTID_OFFSET_AT: usize = 16;
const INFOMASK2_AT: usize = 18;
const INFOMASK_AT: usize = 20;
const HOFF_AT: usize = 22;
/// The header bytes a delete changes: `t_xmax` through `t_infomask` (for the WAL).
pub const DELETE_STAMP_BYTES: std::ops::Range<usize> = XMAX_AT..INFOMASK_AT + 2;
/// The bytes of `t_ctid` (for the WAL).
pub const CTID_BYTES: std::ops::Range<usize> = CTID_BLOCK_AT..CTID_OFFSET_AT + 2;
/// Offset of the null bitmap (when `HEAP_HASNULL`).
pub const NULL_BITMAP_AT: usize = HEAP_TUPLE_HEADER_SIZE;

/// Round `n` up to a multiple of [`MAXALIGN`].
#[inline]
pub const fn maxalign(n: usize) -> usize {
    (n + MAXALIGN - 1) & !(MAXALIGN - 1)
}

/// Bytes of the null bitmap for `natts` attributes.
#[inline]
pub const fn null_bitmap_len(natts: usize) -> usize {
    natts.div_ceil(8)
}

/// `t_hoff` of a tuple of `natts` attributes, with or without a null bitmap.
#[inline]
pub const fn header_size(natts: usize, has_null_bitmap: bool) -> usize {
    let bitmap = if has_null_bitmap {
        null_bitmap_len(natts)
    } else {
        0
    };
    maxalign(HEAP_TUPLE_HEADER_SIZE + bitmap)
}

/// PostgreSQL's error for a row that does not fit on one page. `tuple_len` is the tuple's
/// length; like PostgreSQL the message shows it MAXALIGNed.
pub fn row_too_big(tuple_len: usize) -> PgError {
    PgError::new(
        sqlstate::PROGRAM_LIMIT_EXCEEDED,
        format!(
            "row is too big: size {}, maximum size {MAX_HEAP_TUPLE_SIZE}",
            maxalign(tuple_len)
        ),
    )
}

/// A tuple id (`ItemPointerData`): block number and 1-based line pointer number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ItemPointer {
    pub block: u32,
    pub offset: u16,
}

impl ItemPointer {
    /// The id of no tuple; a tuple's `t_ctid` until the page layer places it.
    pub const INVALID: ItemPointer = ItemPointer {
        block: INVALID_BLOCK_NUMBER,
        offset: INVALID_OFFSET_NUMBER,
    };

    pub fn is_valid(&self) -> bool {
        self.offset != INVALID_OFFSET_NUMBER
    }
}

/// A decoded copy of the 23-byte header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TupleHeader {
    pub xmin: u32,
    pub xmax: u32,
    pub cid: u32,
    pub ctid: ItemPointer,
    pub infomask2: u16,
    pub infomask: u16,
    pub hoff: u8,
}

impl TupleHeader {
    /// Read the header at the start of `tuple`. Panics if `tuple` is shorter than the header.
    pub fn read(tuple: &[u8]) -> TupleHeader {
        assert!(
            tuple.len() >= HEAP_TUPLE_HEADER_SIZE,
            "tuple of {} bytes has no header",
            tuple.len()
        );
        TupleHeader {
            xmin: xmin(tuple),
            xmax: xmax(tuple),
            cid: cid(tuple),
            ctid: ctid(tuple),
            infomask2: infomask2(tuple),
            infomask: infomask(tuple),
            hoff: tuple[HOFF_AT],
        }
    }

    /// Write the header into the first 23 bytes of `tuple` (the bitmap is not touched).
    pub fn write(&self, tuple: &mut [u8]) {
        assert!(
            tuple.len() >= HEAP_TUPLE_HEADER_SIZE,
            "tuple of {} bytes has no header",
            tuple.len()
        );
        debug_assert!(self.hoff as usize >= HEAP_TUPLE_HEADER_SIZE);
        debug_assert!(
            (self.hoff as usize).is_multiple_of(MAXALIGN),
            "t_hoff {} not MAXALIGNed",
            self.hoff
        );
        put_u32(tuple, XMIN_AT, self.xmin);
        put_u32(tuple, XMAX_AT, self.xmax);
        put_u32(tuple, CID_AT, self.cid);
        put_u32(tuple, CTID_BLOCK_AT, self.ctid.block);
        put_u16(tuple, CTID_OFFSET_AT, self.ctid.offset);
        put_u16(tuple, INFOMASK2_AT, self.infomask2);
        put_u16(tuple, INFOMASK_AT, self.infomask);
        tuple[HOFF_AT] = self.hoff;
    }

    /// Number of attributes stored in the tuple.
    pub fn natts(&self) -> usize {
        (self.infomask2 & HEAP_NATTS_MASK) as usize
    }

    pub fn has_nulls(&self) -> bool {
        self.infomask & HEAP_HASNULL != 0
    }

    pub fn has_varwidth(&self) -> bool {
        self.infomask & HEAP_HASVARWIDTH != 0
    }
}

#[inline(always)]
fn get_u32(tuple: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(tuple[at..at + 4].try_into().unwrap())
}

#[inline(always)]
fn get_u16(tuple: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(tuple[at..at + 2].try_into().unwrap())
}

#[inline(always)]
fn put_u32(tuple: &mut [u8], at: usize, value: u32) {
    tuple[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

#[inline(always)]
fn put_u16(tuple: &mut [u8], at: usize, value: u16) {
    tuple[at..at + 2].copy_from_slice(&value.to_le_bytes());
}

// Accessors straight on the tuple bytes. Each panics (slice bounds) if the tuple is shorter
// than the header; the page layer hands out only tuples its line pointers describe.

/// `t_xmin`: the inserting transaction.
#[inline]
pub fn xmin(tuple: &[u8]) -> u32 {
    get_u32(tuple, XMIN_AT)
}

/// `t_xmax`: the deleting or locking transaction, [`INVALID_XID`] if none.
#[inline]
pub fn xmax(tuple: &[u8]) -> u32 {
    get_u32(tuple, XMAX_AT)
}

/// Does `t_xmax` only lock the row ([`HEAP_XMAX_LOCK_ONLY`])?
#[inline]
pub fn xmax_locks_only(tuple: &[u8]) -> bool {
    infomask(tuple) & HEAP_XMAX_LOCK_ONLY != 0
}

/// The transaction that deleted the tuple or replaced it with a newer version:
/// `t_xmax`, unless that only locks the row ([`INVALID_XID`] then). What visibility is
/// judged by.
#[inline]
pub fn deleter(tuple: &[u8]) -> u32 {
    if xmax_locks_only(tuple) {
        INVALID_XID
    } else {
        xmax(tuple)
    }
}

/// `t_cid`: command id of the inserting (or, once deleted, deleting) command.
#[inline]
pub fn cid(tuple: &[u8]) -> u32 {
    get_u32(tuple, CID_AT)
}

/// Whether `tuple` is visible to `checker`'s snapshot, judged by its header.
#[inline]
pub fn is_visible(tuple: &[u8], checker: &mut VisibilityChecker) -> bool {
    checker.visible(xmin(tuple), cid(tuple), deleter(tuple))
}

/// `t_ctid`: this tuple's own id, or its newer version's after an UPDATE.
#[inline]
pub fn ctid(tuple: &[u8]) -> ItemPointer {
    ItemPointer {
        block: get_u32(tuple, CTID_BLOCK_AT),
        offset: get_u16(tuple, CTID_OFFSET_AT),
    }
}

#[inline]
pub fn infomask(tuple: &[u8]) -> u16 {
    get_u16(tuple, INFOMASK_AT)
}

#[inline]
pub fn infomask2(tuple: &[u8]) -> u16 {
    get_u16(tuple, INFOMASK2_AT)
}

/// Number of attributes stored in the tuple (may be fewer than the table has now).
#[inline]
pub fn natts(tuple: &[u8]) -> usize {
    (infomask2(tuple) & HEAP_NATTS_MASK) as usize
}

/// `t_hoff`: where the attribute data starts.
#[inline]
pub fn hoff(tuple: &[u8]) -> usize {
    tuple[HOFF_AT] as usize
}

/// Whether the tuple carries a null bitmap.
#[inline]
pub fn has_nulls(tuple: &[u8]) -> bool {
    infomask(tuple) & HEAP_HASNULL != 0
}

/// The null bitmap (bit set = attribute NOT null), if the tuple has one.
#[inline]
pub fn null_bitmap(tuple: &[u8]) -> Option<&[u8]> {
    if has_nulls(tuple) {
        Some(&tuple[NULL_BITMAP_AT..NULL_BITMAP_AT + null_bitmap_len(natts(tuple))])
    } else {
        None
    }
}

/// Whether 0-based attribute `column` is null in a tuple with the given bitmap
/// (`None` = no bitmap = no nulls). Attributes past the bitmap's end are not judged here:
/// the caller compares with `natts` first.
#[inline(always)]
pub fn bitmap_says_null(bitmap: Option<&[u8]>, column: usize) -> bool {
    match bitmap {
        Some(bits) => bits[column / 8] & (1 << (column % 8)) == 0,
        None => false,
    }
}

/// Set `t_xmax`. The caller maintains the matching infomask bits (clearing
/// [`HEAP_XMAX_INVALID`] when it deletes), as PostgreSQL's `HeapTupleHeaderSetXmax` leaves
/// them to `heap_delete`.
#[inline]
pub fn set_xmax(tuple: &mut [u8], xid: u32) {
    put_u32(tuple, XMAX_AT, xid);
}

/// Set `t_cid` (e.g. the deleting command's id).
#[inline]
pub fn set_cid(tuple: &mut [u8], cid: u32) {
    put_u32(tuple, CID_AT, cid);
}

/// Set `t_ctid` to `(block, offset)`: the page layer does this when it places the tuple, an
/// UPDATE when it links the old version to the new.
#[inline]
pub fn set_ctid(tuple: &mut [u8], block: u32, offset: u16) {
    put_u32(tuple, CTID_BLOCK_AT, block);
    put_u16(tuple, CTID_OFFSET_AT, offset);
}

#[inline]
pub fn set_infomask(tuple: &mut [u8], infomask: u16) {
    put_u16(tuple, INFOMASK_AT, infomask);
}

#[inline]
pub fn set_infomask2(tuple: &mut [u8], infomask2: u16) {
    put_u16(tuple, INFOMASK2_AT, infomask2);
}

/// A tuple of `len` bytes (at least the MAXALIGNed header's 24) written by `xmin` and deleted by
/// `xmax`, its data bytes all `fill`: what visibility and VACUUM tests look at.
#[cfg(test)]
pub(crate) fn test_tuple(xmin: u32, xmax: u32, len: usize, fill: u8) -> Vec<u8> {
    let hoff = crate::storage::page::maxalign(HEAP_TUPLE_HEADER_SIZE);
    let mut t = vec![fill; len.max(hoff)];
    TupleHeader {
        xmin,
        xmax,
        cid: 0,
        ctid: ItemPointer::INVALID,
        infomask2: 0,
        infomask: 0,
        hoff: hoff as u8,
    }
    .write(&mut t);
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_tuple_size_is_postgres_max_heap_tuple_size() {
        assert_eq!(MAX_HEAP_TUPLE_SIZE, 8160);
        let err = row_too_big(8161);
        assert_eq!(err.code, sqlstate::PROGRAM_LIMIT_EXCEEDED);
        assert_eq!(err.message, "row is too big: size 8168, maximum size 8160");
    }

    #[test]
    fn header_size_follows_the_null_bitmap() {
        assert_eq!(header_size(2, false), 24);
        assert_eq!(header_size(1, true), 24);
        assert_eq!(header_size(8, true), 24);
        assert_eq!(header_size(9, true), 32);
        assert_eq!(header_size(72, true), 32);
        assert_eq!(header_size(73, true), 40);
        assert_eq!(header_size(1600, false), 24);
    }

    #[test]
    fn header_round_trips_and_accessors_read_the_bytes() {
        let header = TupleHeader {
            xmin: 0x0102_0304,
            xmax: INVALID_XID,
            cid: 7,
            ctid: ItemPointer {
                block: 0xAABB_CCDD,
                offset: 0x1122,
            },
            infomask2: 3,
            infomask: HEAP_HASNULL | HEAP_XMAX_INVALID,
            hoff: 24,
        };
        let mut tuple = vec![0u8; 24];
        header.write(&mut tuple);
        // Little-endian at the documented offsets.
        assert_eq!(&tuple[0..4], &[0x04, 0x03, 0x02, 0x01]);
        assert_eq!(&tuple[12..18], &[0xDD, 0xCC, 0xBB, 0xAA, 0x22, 0x11]);
        assert_eq!(tuple[22], 24);
        assert_eq!(TupleHeader::read(&tuple), header);
        assert_eq!(natts(&tuple), 3);
        assert!(has_nulls(&tuple));
        assert_eq!(null_bitmap(&tuple), Some(&[0u8][..]));

        set_xmax(&mut tuple, 99);
        set_ctid(&mut tuple, 5, 6);
        set_cid(&mut tuple, 8);
        assert_eq!(xmax(&tuple), 99);
        assert_eq!(
            ctid(&tuple),
            ItemPointer {
                block: 5,
                offset: 6
            }
        );
        assert_eq!(cid(&tuple), 8);
        assert_eq!(xmin(&tuple), 0x0102_0304);
        assert_eq!(hoff(&tuple), 24);
    }

    #[test]
    fn bitmap_bit_set_means_not_null() {
        let bits = [0b0000_0101u8, 0b0000_0001];
        assert!(!bitmap_says_null(Some(&bits), 0));
        assert!(bitmap_says_null(Some(&bits), 1));
        assert!(!bitmap_says_null(Some(&bits), 2));
        assert!(bitmap_says_null(Some(&bits), 7));
        assert!(!bitmap_says_null(Some(&bits), 8));
        assert!(!bitmap_says_null(None, 5));
    }
}
