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
//!   u8, nranges u16`; with `MOVES` then `nmoves u16, zero u16, nmoves × (from u16, to u16,
//!   len u16)`; then `nranges × (offset u16, len u16)`, then the ranges' bytes in order.
//!   Redo copies each move's `len` bytes from `from` to `to` (in order, as `memmove`), then
//!   writes the ranges — byte ranges of the page *after* the change — then, with `COMPACT`,
//!   compacts the page's items (`page_repair_fragmentation`). So a B-tree insert in the
//!   middle of a page logs one move for the line pointers it shifts, not the pointers, and
//!   a pruned heap page logs its changed line pointers, not its moved tuples. The page's
//!   LSN and checksum (bytes 0..10) are never in a range: redo sets the one, a write
//!   computes the other. With `FULL` set the ranges describe the whole page (anything
//!   outside them is zero: an image with the free-space hole left out), so redo needs no
//!   old page; `INIT` says the page was new (made by the change); `IMAGE` that the image
//!   is there because this is the page's first change since a checkpoint began
//!   (`full_page_writes`; counted as a full page image).
//! - `Commit`, `Abort`: `time u64` (microseconds since the Unix epoch).
//! - `Checkpoint`: `redo u64, next_xid u32, shutdown u8, zero [u8; 3], time u64`.

use std::ops::Range;

use crate::storage::page::{self, BLCKSZ, SIZE_OF_PAGE_HEADER};

/// A position in the WAL: a byte offset in the stream of all records ever written.
pub type Lsn = u64;

pub const HEADER_SIZE: usize = 24;
/// The most runs of consecutive subxids a commit or abort record can list (its time and
/// count take 12 bytes, each run 8).
pub const MAX_SUBXID_RUNS: usize = (MAX_RECORD_SIZE - HEADER_SIZE - 12) / 8;
/// No record is longer (a B-tree split logs three whole pages at most).
pub const MAX_RECORD_SIZE: usize = 64 * 1024;
/// Block entry flag: the ranges are the whole page (the rest is zero).
pub const FULL: u8 = 1;
/// Block entry flag: the page was new, made by this change (also `FULL`).
pub const INIT: u8 = 2;
/// Block entry flag: moves within the page come before the ranges.
pub const MOVES: u8 = 4;
/// Block entry flag: after the ranges, the page's items are compacted.
pub const COMPACT: u8 = 8;
/// Block entry flag: a full image for `full_page_writes` (also `FULL`).
pub const IMAGE: u8 = 16;
/// Bytes of the page header no range covers: `pd_lsn` and `pd_checksum`.
const NOT_LOGGED: usize = 10;
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

/// `len` bytes of a page copied from offset `from` to offset `to` (they may overlap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Move {
    pub from: u16,
    pub to: u16,
    pub len: u16,
}

/// What a change did to a page, for [`BlockEntry::capture`].
#[derive(Clone, Copy)]
pub enum Change<'a> {
    /// Only these byte ranges changed.
    Ranges(&'a [Range<usize>]),
    /// These moves (applied to the page before, in order), then these ranges changed.
    Moved {
        moves: &'a [Move],
        ranges: &'a [Range<usize>],
    },
    /// The page was rebuilt or made (`new` says it did not exist before).
    Whole { new: bool },
    /// Whatever differs from this image of the page before the change.
    Since(&'a [u8]),
    /// Line pointers were cleared, then the items compacted (a heap prune); this is the
    /// page before both.
    Pruned(&'a [u8]),
    /// `before` was changed by `moves` and then by writing other bytes into `between`,
    /// whose items were then compacted (B-tree entries removed by VACUUM).
    Compacted {
        before: &'a [u8],
        moves: &'a [Move],
        between: &'a [u8],
    },
}

/// One page's change as a record carries it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockEntry {
    pub relfilenode: u32,
    pub blkno: u32,
    pub flags: u8,
    /// Applied before the ranges, in order (`MOVES` set if any).
    pub moves: Vec<Move>,
    /// `(offset, bytes)` of each range, in page order, not overlapping.
    pub ranges: Vec<(u16, Vec<u8>)>,
}

impl BlockEntry {
    /// The entry for `change` on `page` (after the change). `full` asks for a whole image
    /// (the page's first change since the checkpoint began).
    pub fn capture(relfilenode: u32, blkno: u32, page: &[u8], change: Change, full: bool) -> Self {
        assert_eq!(page.len(), BLCKSZ);
        let pruned;
        let change = match change {
            Change::Pruned(before) => match page::page_before_compaction(before, page) {
                Some(between) => {
                    pruned = between;
                    Change::Compacted {
                        before,
                        moves: &[],
                        between: &pruned,
                    }
                }
                None => Change::Since(before),
            },
            change => change,
        };
        // Moves that move something (MOVES is set below if any).
        let mut moves = Vec::new();
        let mut keep_moves = |moved: &[Move]| {
            moves.extend(moved.iter().filter(|m| m.len > 0 && m.from != m.to));
        };
        // The page the logged bytes come from: the one after the change, except for a
        // compaction, which logs the page before compacting.
        let mut source = page;
        let (flags, ranges) = match change {
            Change::Whole { new: true } => (FULL | INIT, image_ranges(page)),
            _ if full => (FULL | IMAGE, image_ranges(page)),
            Change::Whole { new: false } => (FULL, image_ranges(page)),
            Change::Ranges(ranges) => (0, normalise(ranges.to_vec())),
            Change::Moved {
                moves: moved,
                ranges,
            } => {
                keep_moves(moved);
                (0, normalise(ranges.to_vec()))
            }
            Change::Since(before) => (0, differing_ranges(before, page)),
            Change::Pruned(_) => unreachable!("turned into Compacted or Since above"),
            Change::Compacted {
                before,
                moves: moved,
                between,
            } => {
                debug_assert!(
                    {
                        let mut compacted = between.to_vec();
                        page::page_repair_fragmentation(&mut compacted);
                        compacted == page
                    },
                    "the page is not `between` compacted"
                );
                keep_moves(moved);
                let mut moved_before = before.to_vec();
                apply_moves(&mut moved_before, moved);
                source = between;
                (COMPACT, differing_ranges(&moved_before, between))
            }
        };
        let flags = if moves.is_empty() {
            flags
        } else {
            flags | MOVES
        };
        BlockEntry {
            relfilenode,
            blkno,
            flags,
            moves,
            ranges: ranges
                .into_iter()
                .map(|r| (r.start as u16, source[r].to_vec()))
                .collect(),
        }
    }

    pub fn is_full(&self) -> bool {
        self.flags & FULL != 0
    }

    pub fn is_init(&self) -> bool {
        self.flags & INIT != 0
    }

    /// A full page image taken for `full_page_writes` (what `fpi` counts).
    pub fn is_image(&self) -> bool {
        self.flags & IMAGE != 0
    }

    /// Applies the change to `page` (redo); the caller sets the page's LSN.
    pub fn apply(&self, page: &mut [u8]) {
        if self.is_full() {
            page.fill(0);
        }
        apply_moves(page, &self.moves);
        for (offset, bytes) in &self.ranges {
            let start = *offset as usize;
            page[start..start + bytes.len()].copy_from_slice(bytes);
        }
        if self.flags & COMPACT != 0 {
            page::page_repair_fragmentation(page);
        }
    }

    fn encoded_len(&self) -> usize {
        let moves = if self.moves.is_empty() {
            0
        } else {
            4 + 6 * self.moves.len()
        };
        12 + moves + self.ranges.iter().map(|(_, b)| 4 + b.len()).sum::<usize>()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        assert_eq!(self.flags & MOVES != 0, !self.moves.is_empty());
        out.extend_from_slice(&self.relfilenode.to_le_bytes());
        out.extend_from_slice(&self.blkno.to_le_bytes());
        out.push(self.flags);
        out.push(0);
        out.extend_from_slice(&(self.ranges.len() as u16).to_le_bytes());
        if !self.moves.is_empty() {
            out.extend_from_slice(&(self.moves.len() as u16).to_le_bytes());
            out.extend_from_slice(&[0, 0]);
            for m in &self.moves {
                for v in [m.from, m.to, m.len] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
        }
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
        let mut moves = Vec::new();
        if flags & MOVES != 0 {
            let nmoves = take_u16(body)? as usize;
            take(body, 2)?;
            for _ in 0..nmoves {
                let (from, to, len) = (take_u16(body)?, take_u16(body)?, take_u16(body)?);
                if from.max(to) as usize + len as usize > BLCKSZ {
                    return None;
                }
                moves.push(Move { from, to, len });
            }
            if moves.is_empty() {
                return None;
            }
        }
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
            moves,
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
    /// A transaction's end, with the subtransactions that end with it.
    Commit {
        time_us: u64,
        subxids: Vec<u32>,
    },
    Abort {
        time_us: u64,
        subxids: Vec<u32>,
    },
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
            Body::Commit { time_us, subxids } | Body::Abort { time_us, subxids } => {
                out.extend_from_slice(&time_us.to_le_bytes());
                let runs = crate::txn::subxid_runs(subxids);
                assert!(runs.len() <= MAX_SUBXID_RUNS, "too many subxid runs to log");
                if !runs.is_empty() {
                    out.extend_from_slice(&(runs.len() as u32).to_le_bytes());
                    for (first, count) in runs {
                        out.extend_from_slice(&first.to_le_bytes());
                        out.extend_from_slice(&count.to_le_bytes());
                    }
                }
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
                subxids: take_xid_list(b)?,
            },
            Kind::Abort => Body::Abort {
                time_us: take_u64(b)?,
                subxids: take_xid_list(b)?,
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

fn apply_moves(page: &mut [u8], moves: &[Move]) {
    for m in moves {
        let from = m.from as usize;
        page.copy_within(from..from + m.len as usize, m.to as usize);
    }
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
/// [`MERGE_GAP`] merged in, compared 8 bytes at a time (the first range starting after
/// [`NOT_LOGGED`]).
fn differing_ranges(before: &[u8], after: &[u8]) -> Vec<Range<usize>> {
    assert_eq!(before.len(), after.len());
    let mut ranges: Vec<Range<usize>> = Vec::new();
    for (i, (a, b)) in before
        .chunks_exact(8)
        .zip(after.chunks_exact(8))
        .enumerate()
    {
        if a == b || (i + 1) * 8 <= NOT_LOGGED {
            continue;
        }
        let start = (i * 8).max(NOT_LOGGED);
        match ranges.last_mut() {
            Some(last) if start - last.end < MERGE_GAP => last.end = start + 8,
            _ => ranges.push(start..start + 8),
        }
    }
    ranges
}

/// Sorted, overlapping and touching ranges merged, empty ones and the bytes before
/// [`NOT_LOGGED`] dropped.
fn normalise(mut ranges: Vec<Range<usize>>) -> Vec<Range<usize>> {
    for r in &mut ranges {
        r.start = r.start.max(NOT_LOGGED);
    }
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

/// A commit or abort record's subxids: `n u32` runs of consecutive xids, each `first
/// u32, count u32`; nothing for none.
fn take_xid_list(body: &mut &[u8]) -> Option<Vec<u32>> {
    if body.is_empty() {
        return Some(Vec::new());
    }
    let n = take_u32(body)? as usize;
    if n == 0 || n > body.len() / 8 {
        return None;
    }
    let mut subxids = Vec::new();
    for _ in 0..n {
        let (first, count) = (take_u32(body)?, take_u32(body)?);
        let end = first.checked_add(count).filter(|_| count > 0)?;
        subxids.extend(first..end);
    }
    Some(subxids)
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
        roundtrip(Body::Commit {
            time_us: 42,
            subxids: vec![],
        });
        roundtrip(Body::Commit {
            time_us: 42,
            subxids: vec![7, 9, 10, 11, 13],
        });
        // The most runs a record holds: every other xid.
        roundtrip(Body::Commit {
            time_us: 42,
            subxids: (0..MAX_SUBXID_RUNS as u32).map(|i| 100 + 2 * i).collect(),
        });
        roundtrip(Body::Abort {
            time_us: 43,
            subxids: vec![],
        });
        roundtrip(Body::Abort {
            time_us: 43,
            subxids: vec![11],
        });
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

    /// A page of `n` items of 100 bytes, item `i` filled with byte `i`.
    fn page_of_items(n: u8) -> Vec<u8> {
        let mut page = vec![0u8; BLCKSZ];
        page_init(&mut page, 0);
        for i in 1..=n {
            page_add_item(&mut page, &[i; 100]).unwrap();
        }
        page
    }

    fn logged_bytes(entry: &BlockEntry) -> usize {
        let mut body = Vec::new();
        entry.encode(&mut body);
        body.len()
    }

    /// An item put in the middle of a page (as a B-tree insert does): the line pointers
    /// after it are logged as one move, and redo reproduces the page.
    #[test]
    fn a_move_replaces_the_shifted_line_pointers() {
        let before = page_of_items(60);
        let mut after = before.clone();
        let appended = page_add_item(&mut after, &[0xEE; 16]).unwrap();
        let lp = |n: u16| 24 + 4 * (n as usize - 1);
        after[lp(10)..lp(appended + 1)].rotate_right(4);
        let item = page::ranges::item(&after, 10, None);
        let shifted = Move {
            from: lp(10) as u16,
            to: lp(11) as u16,
            len: (lp(appended) - lp(10)) as u16,
        };
        let ranges = [page::ranges::HEADER, lp(10)..lp(11), item];
        let entry = BlockEntry::capture(
            1,
            1,
            &after,
            Change::Moved {
                moves: &[shifted],
                ranges: &ranges,
            },
            false,
        );
        assert_eq!(entry.flags, MOVES);
        let mut page = before.clone();
        entry.apply(&mut page);
        assert!(page == after, "redo of the move differs");
        assert!(logged_bytes(&entry) < 80, "{}", logged_bytes(&entry));
        roundtrip(Body::Pages(vec![entry]));
    }

    /// A pruned page logs its changed line pointers and is compacted again at redo; a page
    /// changed some other way falls back to the difference.
    #[test]
    fn a_compacted_page_logs_its_line_pointers_not_its_items() {
        let before = page_of_items(70);
        let mut after = before.clone();
        for off in (1..=70).step_by(3) {
            page::page_clear_item(&mut after, off, page::LpFlags::Dead);
        }
        page::page_repair_fragmentation(&mut after);
        let entry = BlockEntry::capture(1, 1, &after, Change::Pruned(&before), false);
        assert_eq!(entry.flags, COMPACT);
        let mut page = before.clone();
        entry.apply(&mut page);
        assert!(page == after, "redo of the compaction differs");
        let as_diff = BlockEntry::capture(1, 1, &after, Change::Since(&before), false);
        assert!(
            logged_bytes(&entry) * 10 < logged_bytes(&as_diff),
            "{} vs {}",
            logged_bytes(&entry),
            logged_bytes(&as_diff)
        );
        roundtrip(Body::Pages(vec![entry]));

        // An item that changed size is no prune: the entry is a plain difference.
        let mut other = after.clone();
        let mut resized = page::page_item_id(&after, 2).unwrap();
        resized.len -= 8;
        other[24 + 4..24 + 8].copy_from_slice(&resized.pack().to_le_bytes());
        let entry = BlockEntry::capture(1, 1, &other, Change::Pruned(&before), false);
        assert_eq!(entry.flags, 0);
        let mut page = before.clone();
        entry.apply(&mut page);
        assert!(page == other, "redo of the difference differs");
    }

    /// Neither a range nor a difference logs the page's LSN and checksum.
    #[test]
    fn the_lsn_and_checksum_are_not_logged() {
        let before = sample_page();
        let mut after = before.clone();
        after[0..10].fill(0x77);
        after[100] = 1;
        for change in [Change::Since(&before), Change::Ranges(&[0..24, 100..101])] {
            let entry = BlockEntry::capture(1, 1, &after, change, false);
            assert!(entry
                .ranges
                .iter()
                .all(|(off, _)| *off as usize >= NOT_LOGGED));
            let mut page = before.clone();
            entry.apply(&mut page);
            assert!(page[10..] == after[10..], "bytes after the checksum differ");
            assert!(
                page[..10] == before[..10],
                "the LSN and checksum were logged"
            );
        }
    }

    #[test]
    fn lsns_print_as_postgres_prints_them() {
        assert_eq!(format_lsn(0x1_0000_00AB), "1/AB");
        assert_eq!(format_lsn(0x16B_3740), "0/16B3740");
    }
}
