//! WAL records: their bytes, how a page change becomes one, and how redo applies it.
//!
//! Every record starts with a 24-byte header (little-endian) and starts at an 8-byte
//! aligned LSN; the bytes between its end and the next record's start are zeros.
//!
//! | offset | size | field    | meaning                                                  |
//! |-------:|-----:|----------|----------------------------------------------------------|
//! | 0      | 4    | tot_len  | header + body bytes (no padding)                         |
//! | 4      | 4    | xid      | the transaction that wrote it (0: none)                  |
//! | 8      | 8    | prev     | LSN of the record before it                              |
//! | 16     | 1    | kind     | [`Kind`]                                                 |
//! | 17     | 3    | zero     |                                                          |
//! | 20     | 4    | crc      | CRC-32 of bytes 0..20 and the body                       |
//!
//! A record is valid where its length is sane, its CRC matches and `prev` names the record
//! read before it: the first record that is not valid is the end of the WAL (`prev` makes a
//! stale record from an older write of the same bytes fail even when its CRC is right).
//!
//! Bodies by kind:
//! - `Pages`: one or more block entries, each `relfilenode u32, blkno u32, flags u8, zero
//!   u8, nranges u16`, then `nranges × (offset u16, len u16)`, then the ranges' bytes in
//!   order. The ranges are byte ranges of the page *after* the change. With `FULL`
//!   set they describe the whole page (anything outside them is zero: an image with the
//!   free-space hole left out), so redo needs no old page; `INIT` says the page was new
//!   (made by the change), otherwise a full image is the first change after a checkpoint.
//! - `Commit`, `Abort`: `time u64` (microseconds since the Unix epoch).
//! - `Checkpoint`: `redo u64, next_xid u32, shutdown u8, zero [u8; 3], time u64`.

use std::ops::Range;

use crate::storage::page::{self, BLCKSZ, SIZE_OF_PAGE_HEADER};

/// A position in the WAL: a byte offset in the stream of all records ever written.
pub type Lsn = u64;

pub const HEADER_SIZE: usize = 24;
/// No record is longer (a B-tree split logs three whole pages at most).
pub const MAX_RECORD_SIZE: usize = 64 * 1024;
/// Block entry flag: the ranges are the whole page (the rest is zero).
pub const FULL: u8 = 1;
/// Block entry flag: the page was new, made by this change (also `FULL`).
pub const INIT: u8 = 2;
/// Unchanged runs shorter than this between two changed runs are logged with them.
const MERGE_GAP: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Pages = 1,
    Commit = 2,
    Abort = 3,
    Checkpoint = 4,
}

impl Kind {
    fn from_u8(v: u8) -> Option<Kind> {
        Some(match v {
            1 => Kind::Pages,
            2 => Kind::Commit,
            3 => Kind::Abort,
            4 => Kind::Checkpoint,
            _ => return None,
        })
    }
}

/// The rounding of record starts.
pub fn align(lsn: Lsn) -> Lsn {
    (lsn + 7) & !7
}

/// `0/16B3740`: PostgreSQL's spelling of an LSN (`pg_lsn`).
pub fn format_lsn(lsn: Lsn) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xffff_ffff)
}

/// What a change did to a page, for [`BlockEntry::capture`].
#[derive(Clone, Copy)]
pub enum Change<'a> {
    /// Only these byte ranges changed.
    Ranges(&'a [Range<usize>]),
    /// The page was rebuilt or made (`new` says it did not exist before).
    Whole { new: bool },
    /// Whatever differs from this image of the page before the change.
    Since(&'a [u8]),
}

/// One page's change as a record carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockEntry {
    pub relfilenode: u32,
    pub blkno: u32,
    pub flags: u8,
    /// `(offset, bytes)` of each range, in page order, not overlapping.
    pub ranges: Vec<(u16, Vec<u8>)>,
}

impl BlockEntry {
    /// The entry for `change` on `page` (after the change). `full` asks for a whole image
    /// (the page's first change since the checkpoint began).
    pub fn capture(relfilenode: u32, blkno: u32, page: &[u8], change: Change, full: bool) -> Self {
        assert_eq!(page.len(), BLCKSZ);
        let (flags, ranges) = match change {
            Change::Whole { new: true } => (FULL | INIT, image_ranges(page)),
            _ if full => (FULL, image_ranges(page)),
            Change::Whole { new: false } => (FULL, image_ranges(page)),
            Change::Ranges(ranges) => (0, normalise(ranges.to_vec())),
            Change::Since(before) => (0, differing_ranges(before, page)),
        };
        BlockEntry {
            relfilenode,
            blkno,
            flags,
            ranges: ranges
                .into_iter()
                .map(|r| (r.start as u16, page[r].to_vec()))
                .collect(),
        }
    }

    pub fn is_full(&self) -> bool {
        self.flags & FULL != 0
    }

    pub fn is_init(&self) -> bool {
        self.flags & INIT != 0
    }

    /// Applies the change to `page` (redo); the caller sets the page's LSN.
    pub fn apply(&self, page: &mut [u8]) {
        if self.is_full() {
            page.fill(0);
        }
        for (offset, bytes) in &self.ranges {
            let start = *offset as usize;
            page[start..start + bytes.len()].copy_from_slice(bytes);
        }
    }

    fn encoded_len(&self) -> usize {
        12 + self.ranges.iter().map(|(_, b)| 4 + b.len()).sum::<usize>()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.relfilenode.to_le_bytes());
        out.extend_from_slice(&self.blkno.to_le_bytes());
        out.push(self.flags);
        out.push(0);
        out.extend_from_slice(&(self.ranges.len() as u16).to_le_bytes());
        for (offset, bytes) in &self.ranges {
            out.extend_from_slice(&offset.to_le_bytes());
            out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        }
        for (_, bytes) in &self.ranges {
            out.extend_from_slice(bytes);
        }
    }

    fn decode(body: &mut &[u8]) -> Option<BlockEntry> {
        let relfilenode = take_u32(body)?;
        let blkno = take_u32(body)?;
        let flags = take(body, 1)?[0];
        take(body, 1)?;
        let n = take_u16(body)? as usize;
        let mut spans = Vec::with_capacity(n);
        for _ in 0..n {
            spans.push((take_u16(body)?, take_u16(body)? as usize));
        }
        let mut ranges = Vec::with_capacity(n);
        let mut end = 0usize;
        for (offset, len) in spans {
            if (offset as usize) < end || offset as usize + len > BLCKSZ {
                return None;
            }
            end = offset as usize + len;
            ranges.push((offset, take(body, len)?.to_vec()));
        }
        Some(BlockEntry {
            relfilenode,
            blkno,
            flags,
            ranges,
        })
    }
}

/// What a checkpoint record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// Where redo starts: every change before it is in the data files.
    pub redo: Lsn,
    pub next_xid: u32,
    pub shutdown: bool,
    pub time_us: u64,
}

/// A record's body, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Body {
    Pages(Vec<BlockEntry>),
    Commit { time_us: u64 },
    Abort { time_us: u64 },
    Checkpoint(CheckpointInfo),
}

impl Body {
    pub fn kind(&self) -> Kind {
        match self {
            Body::Pages(_) => Kind::Pages,
            Body::Commit { .. } => Kind::Commit,
            Body::Abort { .. } => Kind::Abort,
            Body::Checkpoint(_) => Kind::Checkpoint,
        }
    }

    /// The body's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Body::Pages(blocks) => {
                assert!(!blocks.is_empty(), "a page record changes a page");
                out.reserve(blocks.iter().map(BlockEntry::encoded_len).sum());
                for b in blocks {
                    b.encode(&mut out);
                }
            }
            Body::Commit { time_us } | Body::Abort { time_us } => {
                out.extend_from_slice(&time_us.to_le_bytes())
            }
            Body::Checkpoint(c) => {
                out.extend_from_slice(&c.redo.to_le_bytes());
                out.extend_from_slice(&c.next_xid.to_le_bytes());
                out.extend_from_slice(&[c.shutdown as u8, 0, 0, 0]);
                out.extend_from_slice(&c.time_us.to_le_bytes());
            }
        }
        out
    }

    fn decode(kind: Kind, mut body: &[u8]) -> Option<Body> {
        let b = &mut body;
        let decoded = match kind {
            Kind::Pages => {
                let mut blocks = Vec::new();
                while !b.is_empty() {
                    blocks.push(BlockEntry::decode(b)?);
                }
                if blocks.is_empty() {
                    return None;
                }
                Body::Pages(blocks)
            }
            Kind::Commit => Body::Commit {
                time_us: take_u64(b)?,
            },
            Kind::Abort => Body::Abort {
                time_us: take_u64(b)?,
            },
            Kind::Checkpoint => {
                let redo = take_u64(b)?;
                let next_xid = take_u32(b)?;
                let shutdown = take(b, 4)?[0] != 0;
                let time_us = take_u64(b)?;
                Body::Checkpoint(CheckpointInfo {
                    redo,
                    next_xid,
                    shutdown,
                    time_us,
                })
            }
        };
        b.is_empty().then_some(decoded)
    }
}

/// A record as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub lsn: Lsn,
    /// Where the next record starts (aligned).
    pub next: Lsn,
    pub xid: u32,
    pub body: Body,
}

/// The bytes of a record at some LSN whose predecessor is `prev` (header and body).
pub fn encode(xid: u32, prev: Lsn, kind: Kind, body: &[u8]) -> Vec<u8> {
    let tot_len = HEADER_SIZE + body.len();
    assert!(tot_len <= MAX_RECORD_SIZE, "WAL record of {tot_len} bytes");
    let mut out = Vec::with_capacity(tot_len);
    out.extend_from_slice(&(tot_len as u32).to_le_bytes());
    out.extend_from_slice(&xid.to_le_bytes());
    out.extend_from_slice(&prev.to_le_bytes());
    out.extend_from_slice(&[kind as u8, 0, 0, 0]);
    let crc = record_crc(&out, body);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(body);
    out
}

fn record_crc(header20: &[u8], body: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&header20[..20]);
    h.update(body);
    h.finalize()
}

/// The length a valid header at hand announces, or None where it is no record's.
pub fn header_len(header: &[u8; HEADER_SIZE]) -> Option<usize> {
    let len = u32::from_le_bytes(header[0..4].try_into().unwrap()) as usize;
    (HEADER_SIZE..=MAX_RECORD_SIZE)
        .contains(&len)
        .then_some(len)
}

/// Decodes the record in `bytes` (exactly `tot_len` long) at `lsn`, expecting `prev` as
/// its predecessor (any, for `None`).
pub fn decode(lsn: Lsn, bytes: &[u8], prev: Option<Lsn>) -> Option<Record> {
    let (header, body) = bytes.split_at(HEADER_SIZE);
    let stored_crc = u32::from_le_bytes(header[20..24].try_into().unwrap());
    if record_crc(header, body) != stored_crc {
        return None;
    }
    let record_prev = u64::from_le_bytes(header[8..16].try_into().unwrap());
    if prev.is_some_and(|p| p != record_prev) {
        return None;
    }
    let kind = Kind::from_u8(header[16])?;
    Some(Record {
        lsn,
        next: align(lsn + bytes.len() as u64),
        xid: u32::from_le_bytes(header[4..8].try_into().unwrap()),
        body: Body::decode(kind, body)?,
    })
}

/// A whole page's image without its free-space hole (`pd_lower..pd_upper`).
fn image_ranges(page: &[u8]) -> Vec<Range<usize>> {
    let lower = u16::from_le_bytes([page[12], page[13]]) as usize;
    let upper = u16::from_le_bytes([page[14], page[15]]) as usize;
    if page::page_header_is_valid(page) && SIZE_OF_PAGE_HEADER <= lower && lower <= upper {
        let mut ranges = vec![0..lower];
        if upper < BLCKSZ {
            ranges.push(upper..BLCKSZ);
        }
        ranges
    } else {
        vec![0..BLCKSZ]
    }
}

/// The byte ranges where `after` differs from `before`, unchanged gaps shorter than
/// [`MERGE_GAP`] merged in, compared 8 bytes at a time.
fn differing_ranges(before: &[u8], after: &[u8]) -> Vec<Range<usize>> {
    assert_eq!(before.len(), after.len());
    let mut ranges: Vec<Range<usize>> = Vec::new();
    for (i, (a, b)) in before
        .chunks_exact(8)
        .zip(after.chunks_exact(8))
        .enumerate()
    {
        if a == b {
            continue;
        }
        let start = i * 8;
        match ranges.last_mut() {
            Some(last) if start - last.end < MERGE_GAP => last.end = start + 8,
            _ => ranges.push(start..start + 8),
        }
    }
    ranges
}

/// Sorted, overlapping and touching ranges merged, empty ones dropped.
fn normalise(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    ranges.retain(|r| r.start < r.end);
    ranges.sort_by_key(|r| r.start);
    let mut out: Vec<Range<usize>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        assert!(r.end <= BLCKSZ, "range {r:?} outside the page");
        match out.last_mut() {
            Some(last) if r.start <= last.end + MERGE_GAP => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

fn take<'a>(body: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if body.len() < n {
        return None;
    }
    let (head, rest) = body.split_at(n);
    *body = rest;
    Some(head)
}

fn take_u16(body: &mut &[u8]) -> Option<u16> {
    Some(u16::from_le_bytes(take(body, 2)?.try_into().unwrap()))
}

fn take_u32(body: &mut &[u8]) -> Option<u32> {
    Some(u32::from_le_bytes(take(body, 4)?.try_into().unwrap()))
}

fn take_u64(body: &mut &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(take(body, 8)?.try_into().unwrap()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::page::{page_add_item, page_init};

    fn sample_page() -> Vec<u8> {
        let mut page = vec![0u8; BLCKSZ];
        page_init(&mut page, 0);
        page_add_item(&mut page, &[7u8; 40]).unwrap();
        page
    }

    fn roundtrip(body: Body) {
        let bytes = encode(5, 0x1000_0000, body.kind(), &body.encode());
        let record = decode(0x1000_0018, &bytes, Some(0x1000_0000)).expect("valid record");
        assert_eq!(record.body, body);
        assert_eq!(record.xid, 5);
        assert_eq!(record.next, align(0x1000_0018 + bytes.len() as u64));
        // The wrong predecessor or one flipped bit makes it invalid.
        assert!(decode(0x1000_0018, &bytes, Some(0x1000_0008)).is_none());
        for i in [0, 17, bytes.len() - 1] {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            assert!(
                decode(0x1000_0018, &bad, Some(0x1000_0000)).is_none(),
                "bit flip at {i}"
            );
        }
    }

    #[test]
    fn every_kind_round_trips() {
        let page = sample_page();
        roundtrip(Body::Pages(vec![
            BlockEntry::capture(16384, 3, &page, Change::Ranges(&[0..24, 8000..8040]), false),
            BlockEntry::capture(16385, 0, &page, Change::Whole { new: true }, false),
        ]));
        roundtrip(Body::Commit { time_us: 42 });
        roundtrip(Body::Abort { time_us: 43 });
        roundtrip(Body::Checkpoint(CheckpointInfo {
            redo: 0x200_0000,
            next_xid: 900,
            shutdown: true,
            time_us: 44,
        }));
    }

    /// Redo of each capture kind turns the page before into the page after.
    #[test]
    fn applying_a_capture_reproduces_the_change() {
        let before = sample_page();
        let mut after = before.clone();
        let off = page_add_item(&mut after, &[9u8; 100]).unwrap();
        let id = page::page_item_id(&after, off).unwrap();
        let item = id.off as usize..id.off as usize + id.len as usize;
        let lp = 24 + 4 * (off as usize - 1);
        let changes: [(Change, bool); 4] = [
            (Change::Ranges(&[0..24, lp..lp + 4, item.clone()]), false),
            (Change::Since(&before), false),
            (Change::Since(&before), true),
            (Change::Whole { new: false }, false),
        ];
        for (change, full) in changes {
            let entry = BlockEntry::capture(1, 1, &after, change, full);
            let mut page = before.clone();
            entry.apply(&mut page);
            assert_eq!(page, after);
            if full {
                // A full image needs no old page, and leaves the hole out.
                let mut blank = vec![0xAAu8; BLCKSZ];
                entry.apply(&mut blank);
                assert_eq!(blank, after);
                let logged: usize = entry.ranges.iter().map(|(_, b)| b.len()).sum();
                assert_eq!(logged, BLCKSZ - page::page_free_space(&after) - 4);
            }
        }
        let diff = BlockEntry::capture(1, 1, &after, Change::Since(&before), false);
        let logged: usize = diff.ranges.iter().map(|(_, b)| b.len()).sum();
        assert!(
            logged < 200,
            "a diff logs the header, the pointer and the item: {logged}"
        );
    }

    #[test]
    fn lsns_print_as_postgres_prints_them() {
        assert_eq!(format_lsn(0x1_0000_00AB), "1/AB");
        assert_eq!(format_lsn(0x16B_3740), "0/16B3740");
    }
}
