//! The TID bitmap: a set of tuple ids `(block, offset)` that stays within `work_mem`, by
//! forgetting which tuples of a page it holds (the page turns *lossy*) rather than growing.
//! It is PostgreSQL's `tidbitmap.c`, rebuilt; the rules that decide what turns lossy, and
//! when, are PostgreSQL 18's.
//!
//! # Why
//!
//! An index finds matching tuples in key order, which is random order on the heap. Visiting
//! them one by one reads the same heap page again each time another of its tuples comes up,
//! and reads pages in random order. A Bitmap Index Scan instead collects every matching TID
//! into this bitmap; the Bitmap Heap Scan then visits each page once, in block order, through
//! a read stream that can look ahead because it knows every block it will need.
//!
//! # What it stores
//!
//! One entry per heap page, keyed by block number (in a hash table, or in an array indexed
//! by block once the bitmap covers much of a heap whose size it was given: `page_table.rs`):
//!
//! * an **exact** page: one bit per line pointer (bit `k` = offset `k + 1`), up to
//!   [`MAX_TUPLES_PER_PAGE`] = 291 bits (five 64-bit words), plus a `recheck` flag: the listed
//!   tuples are only candidates and the scan must test the condition again (set when a TID
//!   is added with `recheck`, or when an AND meets a lossy page);
//! * a **lossy chunk**: one bit per *page* for the [`PAGES_PER_CHUNK`] = 256 pages starting
//!   at a multiple of 256 (the chunk's "header" block, its key). A page whose bit is set has
//!   matches somewhere; which tuples is forgotten, so the scan reads every tuple of the page
//!   and rechecks each.
//!
//! A page is either exact or has its bit in a chunk, never both. The header block of a chunk
//! cannot also be an exact page (the same key would serve both), so it becomes lossy as soon
//! as its chunk exists and it is added.
//!
//! # The memory bound (PostgreSQL's rules)
//!
//! `max_entries = work_mem / 64`, at least 16 (`tbm_calculate_entries`: PostgreSQL's entry is
//! 48 bytes, plus two pointers of overhead per entry; [`BYTES_PER_ENTRY`]). When adding a
//! tuple or page makes `nentries > max_entries`, the bitmap *lossifies*: it turns exact pages
//! into bits of their chunk (deleting the page's entry, creating the chunk's entry if it is
//! new) until `nentries <= max_entries / 2`, and remembers where it stopped, to carry on from
//! there next time so that the whole table is lossified evenly. Exact pages that are chunk
//! headers are skipped (converting one saves nothing). If even converting everything leaves
//! more than half, the bitmap gives up on the bound: `max_entries` becomes `2 × nentries`
//! (otherwise every following insert would lossify in vain).
//!
//! Worked example, `work_mem = 1kB` (16 entries): TIDs on blocks 1..=17, one tuple each. The
//! 17th page makes 17 > 16 entries; lossify converts block 1 (its entry goes, chunk 0 comes
//! with bit 1: still 17 entries), block 2 (bit 2: 16), ..., block 10 (8 = 16 / 2: stop, and
//! start at block 11 next time). Blocks 1..=10 are bits of chunk 0, 11..=17 still exact; the
//! scan reports `Heap Blocks: exact=7 lossy=10`.
//!
//! **Difference from PostgreSQL**: PostgreSQL walks its hash table in hash order when it
//! lossifies, so which pages turn lossy looks random; iolab walks the exact pages in block
//! order from where the last pass stopped. Consecutive pages share a chunk, so each
//! conversion after a chunk's first removes an entry: fewer pages go lossy for the same
//! bound. The total number of lossy and exact pages of a bitmap that had to lossify can
//! therefore differ from PostgreSQL's; a bitmap that never exceeds `work_mem` is identical.
//!
//! # Reading it out
//!
//! [`TidBitmap::into_iter`] (PostgreSQL's `tbm_begin_iterate`) lists the exact pages and the
//! chunks by block (sorting them if they were hashed) and merges them: [`TbmPage`]s in
//! ascending block order, each either exact (its offsets, ascending) or lossy
//! (`offsets() == None`). The bitmap is consumed: nothing can be added while it is read, as
//! in PostgreSQL.
//!
//! # AND and OR
//!
//! [`union`](TidBitmap::union) (BitmapOr) and [`intersect`](TidBitmap::intersect)
//! (BitmapAnd) work page by page: exact ∪ exact ORs the bits, anything ∪ lossy is lossy;
//! exact ∩ exact ANDs the bits (a page left empty is dropped), exact ∩ lossy keeps the exact
//! bits but sets `recheck`, lossy ∩ lossy or lossy ∩ exact stays lossy, anything ∩ absent is
//! dropped. The result is never smaller than the true set; the heap scan's recheck removes
//! the rest.

use iolab_catalog::{PgError, PgResult};

use crate::bitmap::page_table::{BlockOrder, PageTable};
use crate::heap::tuple::HEAP_TUPLE_HEADER_SIZE;
use crate::storage::page::{maxalign, BLCKSZ, ITEM_ID_SIZE, SIZE_OF_PAGE_HEADER};

/// Most tuples a heap page can hold (PostgreSQL's `MaxHeapTuplesPerPage`): 291 for 8 KiB.
pub const MAX_TUPLES_PER_PAGE: usize =
    (BLCKSZ - SIZE_OF_PAGE_HEADER) / (maxalign(HEAP_TUPLE_HEADER_SIZE) + ITEM_ID_SIZE);
/// Pages per lossy chunk (`BLCKSZ / 32` = 256, PostgreSQL's `PAGES_PER_CHUNK`).
pub const PAGES_PER_CHUNK: u32 = (BLCKSZ / 32) as u32;

const BITS_PER_WORD: usize = 64;
const WORDS_PER_PAGE: usize = (MAX_TUPLES_PER_PAGE - 1) / BITS_PER_WORD + 1;
const WORDS_PER_CHUNK: usize = (PAGES_PER_CHUNK as usize - 1) / BITS_PER_WORD + 1;
const WORDS: usize = if WORDS_PER_PAGE > WORDS_PER_CHUNK {
    WORDS_PER_PAGE
} else {
    WORDS_PER_CHUNK
};

/// Memory one entry is charged against `work_mem`, as PostgreSQL 18 counts it: its
/// `PagetableEntry` (block number, three flag bytes, padding, `WORDS` bitmap words: 48
/// bytes) plus two pointers (hash overhead and the sorted arrays built for reading out).
pub const BYTES_PER_ENTRY: usize = 8 + WORDS * 8 + 2 * 8;

const _: () = assert!(MAX_TUPLES_PER_PAGE == 291 && PAGES_PER_CHUNK == 256);
const _: () = assert!(WORDS == 5 && BYTES_PER_ENTRY == 64);
// An entry in the array form is no larger than PostgreSQL's charge for it.
const _: () = assert!(std::mem::size_of::<Option<PageEntry>>() == 48);

/// How many TIDs ahead [`TidBitmap::try_add_tuples`] prefetches entries.
const PREFETCH_AHEAD: usize = 16;

/// The fewest entries a bitmap may have, however small `work_mem` is.
pub const MIN_ENTRIES: usize = 16;

/// One entry: an exact page or a lossy chunk (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PageEntry {
    chunk: bool,
    recheck: bool,
    words: [u64; WORDS],
}

impl PageEntry {
    const EXACT: PageEntry = PageEntry {
        chunk: false,
        recheck: false,
        words: [0; WORDS],
    };
    const CHUNK: PageEntry = PageEntry {
        chunk: true,
        recheck: false,
        words: [0; WORDS],
    };

    #[inline]
    fn set(&mut self, bit: usize) {
        self.words[bit / BITS_PER_WORD] |= 1 << (bit % BITS_PER_WORD);
    }

    #[inline]
    fn test(&self, bit: usize) -> bool {
        self.words[bit / BITS_PER_WORD] & (1 << (bit % BITS_PER_WORD)) != 0
    }

    fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
}

/// The set bits of `words`, ascending.
fn set_bits(words: &[u64]) -> impl Iterator<Item = usize> + '_ {
    words.iter().enumerate().flat_map(|(i, &word)| {
        let mut w = word;
        std::iter::from_fn(move || {
            (w != 0).then(|| {
                let bit = w.trailing_zeros() as usize;
                w &= w - 1;
                i * BITS_PER_WORD + bit
            })
        })
    })
}

/// The first set bit of `words` at or after bit `from`.
fn next_set_bit(words: &[u64], from: usize) -> Option<usize> {
    let mut i = from / BITS_PER_WORD;
    let mut w = *words.get(i)? & (!0u64 << (from % BITS_PER_WORD));
    loop {
        if w != 0 {
            return Some(i * BITS_PER_WORD + w.trailing_zeros() as usize);
        }
        i += 1;
        w = *words.get(i)?;
    }
}

/// The chunk holding `blkno`, and the page's bit in it.
#[inline]
fn chunk_of(blkno: u32) -> (u32, usize) {
    let bit = blkno % PAGES_PER_CHUNK;
    (blkno - bit, bit as usize)
}

/// A set of tuple ids bounded by `work_mem`. See the module comment.
///
/// ```ignore
/// let mut bitmap = TidBitmap::new(work_mem_kb * 1024);
/// bitmap.add_tuples(index.scan_range(lower, upper, &mut acct), false)?;
/// for page in bitmap {            // ascending blocks
///     match page.offsets() {
///         Some(offsets) => { /* visit these line pointers; recheck if page.recheck */ }
///         None => { /* lossy: visit and recheck every tuple of page.blkno */ }
///     }
/// }
/// ```
#[derive(Clone, Debug)]
pub struct TidBitmap {
    entries: PageTable<PageEntry>,
    max_entries: usize,
    /// Entries that are exact pages.
    npages: usize,
    /// Entries that are lossy chunks.
    nchunks: usize,
    /// Block the next lossify pass starts at.
    lossify_start: u32,
    /// TIDs given to `add_tuple(s)` (duplicates included): a Bitmap Index Scan's row count.
    tids_added: u64,
}

impl TidBitmap {
    /// An empty bitmap that stays within `max_bytes` (`work_mem` × 1024) as far as it can.
    pub fn new(max_bytes: usize) -> TidBitmap {
        TidBitmap::with_max_entries(TidBitmap::entries_for(max_bytes))
    }

    /// An empty bitmap within `max_bytes` of TIDs on a heap of `heap_blocks` blocks: the
    /// same as [`new`](TidBitmap::new), but its entries may move into an array indexed by
    /// block, which is much faster to build and read out when many of the heap's pages
    /// match (`page_table.rs`).
    pub fn for_heap(max_bytes: usize, heap_blocks: u32) -> TidBitmap {
        TidBitmap {
            entries: PageTable::for_heap(heap_blocks, max_bytes),
            ..TidBitmap::new(max_bytes)
        }
    }

    /// An empty bitmap of at most `max_entries` entries before it lossifies.
    pub fn with_max_entries(max_entries: usize) -> TidBitmap {
        TidBitmap {
            entries: PageTable::hashed(),
            max_entries: max_entries.max(MIN_ENTRIES),
            npages: 0,
            nchunks: 0,
            lossify_start: 0,
            tids_added: 0,
        }
    }

    /// The entries a bitmap may hold in `max_bytes` (PostgreSQL's `tbm_calculate_entries`).
    pub fn entries_for(max_bytes: usize) -> usize {
        (max_bytes / BYTES_PER_ENTRY).clamp(MIN_ENTRIES, i32::MAX as usize - 1)
    }

    /// A bitmap of `tids` within `max_bytes`: what a Bitmap Index Scan builds.
    pub fn from_tids(
        max_bytes: usize,
        tids: impl IntoIterator<Item = (u32, u16)>,
    ) -> PgResult<TidBitmap> {
        let mut bitmap = TidBitmap::new(max_bytes);
        bitmap.add_tuples(tids, false)?;
        Ok(bitmap)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Entries in use (exact pages + lossy chunks).
    pub fn nentries(&self) -> usize {
        self.entries.len()
    }

    /// The current bound on entries (raised past `work_mem` when lossifying could not help).
    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Pages stored exactly (with their tuple offsets): PostgreSQL's `npages`.
    pub fn exact_pages(&self) -> usize {
        self.npages
    }

    /// Pages stored lossily (bits set in chunks).
    pub fn lossy_pages(&self) -> usize {
        self.entries
            .iter()
            .map(|(_, e)| e)
            .filter(|e| e.chunk)
            .map(|e| {
                e.words
                    .iter()
                    .map(|w| w.count_ones() as usize)
                    .sum::<usize>()
            })
            .sum()
    }

    /// Lossy chunk entries: PostgreSQL's `nchunks`.
    pub fn lossy_chunks(&self) -> usize {
        self.nchunks
    }

    /// TIDs added so far, duplicates included (a Bitmap Index Scan's `rows`).
    pub fn tids_added(&self) -> u64 {
        self.tids_added
    }

    /// Bytes the entries are charged (`nentries × 64`).
    pub fn memory_bytes(&self) -> usize {
        self.entries.len() * BYTES_PER_ENTRY
    }

    /// Add one TID; `recheck`: the tuple is only a candidate (the scan tests it again).
    /// An offset outside `1..=291` is PostgreSQL's "tuple offset out of range" error.
    #[inline]
    pub fn add_tuple(&mut self, blkno: u32, offset: u16, recheck: bool) -> PgResult<()> {
        if offset == 0 || offset as usize > MAX_TUPLES_PER_PAGE {
            return Err(PgError::internal(format!(
                "tuple offset out of range: {offset}"
            )));
        }
        self.tids_added += 1;
        if self.page_is_lossy(blkno) {
            return Ok(()); // the whole page is already in
        }
        let page = self.page_entry_mut(blkno);
        if page.chunk {
            // The page is the header of a chunk: it becomes a lossy page of it.
            page.set(0);
        } else {
            page.set(offset as usize - 1);
        }
        page.recheck |= recheck;
        if self.entries.len() > self.max_entries {
            self.lossify();
        }
        Ok(())
    }

    /// Add every TID of `tids`; returns how many there were.
    pub fn add_tuples(
        &mut self,
        tids: impl IntoIterator<Item = (u32, u16)>,
        recheck: bool,
    ) -> PgResult<u64> {
        self.try_add_tuples(tids.into_iter().map(Ok), recheck)
    }

    /// Add every TID of a fallible source (an index scan that may fail on a read);
    /// returns how many there were.
    pub fn try_add_tuples(
        &mut self,
        tids: impl IntoIterator<Item = PgResult<(u32, u16)>>,
        recheck: bool,
    ) -> PgResult<u64> {
        let before = self.tids_added;
        // Each TID is added PREFETCH_AHEAD TIDs after its entry was prefetched.
        let mut pending = [(0u32, 0u16); PREFETCH_AHEAD];
        let mut seen = 0usize;
        for tid in tids {
            let (blkno, offset) = tid?;
            self.entries.prefetch(blkno);
            let slot = &mut pending[seen % PREFETCH_AHEAD];
            if seen >= PREFETCH_AHEAD {
                self.add_tuple(slot.0, slot.1, recheck)?;
            }
            *slot = (blkno, offset);
            seen += 1;
        }
        for i in seen.saturating_sub(PREFETCH_AHEAD)..seen {
            let (blkno, offset) = pending[i % PREFETCH_AHEAD];
            self.add_tuple(blkno, offset, recheck)?;
        }
        Ok(self.tids_added - before)
    }

    /// Add a whole page, lossy (PostgreSQL's `tbm_add_page`, for index types that only know
    /// pages).
    pub fn add_page(&mut self, blkno: u32) {
        self.mark_page_lossy(blkno);
        if self.entries.len() > self.max_entries {
            self.lossify();
        }
    }

    /// Is `blkno` a lossy page (its bit set in its chunk)?
    fn page_is_lossy(&self, blkno: u32) -> bool {
        if self.nchunks == 0 {
            return false;
        }
        let (chunk, bit) = chunk_of(blkno);
        self.entries
            .get(chunk)
            .is_some_and(|e| e.chunk && e.test(bit))
    }

    /// The exact entry of `blkno`, if there is one (a chunk header is not).
    fn exact_entry(&self, blkno: u32) -> Option<&PageEntry> {
        self.entries.get(blkno).filter(|e| !e.chunk)
    }

    /// The entry keyed `blkno`, created exact and empty if absent. The caller has checked
    /// that the page is not lossy; the entry may still be a chunk (`blkno` is its header).
    fn page_entry_mut(&mut self, blkno: u32) -> &mut PageEntry {
        let (entry, inserted) = self.entries.get_or_insert(blkno, PageEntry::EXACT);
        self.npages += inserted as usize;
        entry
    }

    /// Make `blkno` a lossy page: drop its exact entry, set its bit in its chunk (creating
    /// the chunk, or turning an exact header page into the chunk).
    fn mark_page_lossy(&mut self, blkno: u32) {
        let (chunk_blkno, bit) = chunk_of(blkno);
        if bit != 0 {
            if let Some(old) = self.entries.remove(blkno) {
                assert!(
                    !old.chunk,
                    "a chunk is keyed by a multiple of PAGES_PER_CHUNK"
                );
                self.npages -= 1;
            }
        }
        let (chunk, inserted) = self.entries.get_or_insert(chunk_blkno, PageEntry::CHUNK);
        if inserted {
            self.nchunks += 1;
        } else if !chunk.chunk {
            // The header page was exact: it had tuples, so it is a lossy page now.
            *chunk = PageEntry::CHUNK;
            chunk.set(0);
            self.npages -= 1;
            self.nchunks += 1;
        }
        chunk.set(bit);
        debug_assert_eq!(self.npages + self.nchunks, self.entries.len());
    }

    /// Turn exact pages lossy until at most half of `max_entries` are in use; if that is
    /// impossible, raise `max_entries` (module comment).
    fn lossify(&mut self) {
        let mut candidates: Vec<u32> = self
            .entries
            .iter()
            .filter(|&(blkno, e)| !e.chunk && blkno % PAGES_PER_CHUNK != 0)
            .map(|(blkno, _)| blkno)
            .collect();
        candidates.sort_unstable();
        let resume = candidates.partition_point(|&b| b < self.lossify_start);
        let (before, after) = candidates.split_at(resume);
        for &blkno in after.iter().chain(before) {
            self.mark_page_lossy(blkno);
            if self.entries.len() <= self.max_entries / 2 {
                self.lossify_start = blkno.saturating_add(1);
                return;
            }
        }
        // Nothing more to convert: admit that the bitmap does not fit.
        if self.entries.len() > self.max_entries / 2 {
            self.max_entries = self.entries.len().min((i32::MAX as usize - 1) / 2) * 2;
        }
    }

    /// Set union, in place (BitmapOr): afterwards `self` holds every TID of either.
    pub fn union(&mut self, other: &TidBitmap) {
        for (blkno, page) in other.entries.sorted() {
            self.union_page(blkno, &page);
        }
    }

    fn union_page(&mut self, blkno: u32, other: &PageEntry) {
        if other.chunk {
            for bit in set_bits(&other.words[..WORDS_PER_CHUNK]) {
                self.mark_page_lossy(blkno + bit as u32);
            }
        } else if self.page_is_lossy(blkno) {
            return;
        } else {
            let page = self.page_entry_mut(blkno);
            if page.chunk {
                page.set(0);
            } else {
                for (word, theirs) in page.words.iter_mut().zip(&other.words) {
                    *word |= theirs;
                }
                page.recheck |= other.recheck;
            }
        }
        if self.entries.len() > self.max_entries {
            self.lossify();
        }
    }

    /// Set intersection, in place (BitmapAnd): afterwards `self` holds the TIDs that may be
    /// in both (a lossy page of either side keeps `self`'s page, lossy or to recheck).
    pub fn intersect(&mut self, other: &TidBitmap) {
        if self.entries.is_empty() {
            return;
        }
        let (npages, nchunks) = (&mut self.npages, &mut self.nchunks);
        self.entries.retain(|blkno, page| {
            let emptied = intersect_page(blkno, page, other);
            if emptied {
                let count = if page.chunk {
                    &mut *nchunks
                } else {
                    &mut *npages
                };
                *count -= 1;
            }
            !emptied
        });
        debug_assert_eq!(self.npages + self.nchunks, self.entries.len());
    }

    /// Read the bitmap out in block order (PostgreSQL's `tbm_begin_iterate`); the bitmap
    /// is consumed.
    pub fn iterate(self) -> TbmIterator {
        // Chunk headers stay among the entries; reading out passes over them.
        let pages = match self.entries.into_block_order() {
            BlockOrder::Slots(slots) => ExactPages::Slots(slots),
            BlockOrder::Sorted(entries) => ExactPages::Sorted(entries),
        };
        let chunks = match self.nchunks {
            0 => Vec::new(),
            _ => pages.chunks(),
        };
        TbmIterator {
            pages,
            chunks,
            next_page: 0,
            next_chunk: 0,
            next_chunk_bit: 0,
        }
    }
}

/// One page of `a` against `b` (see [`TidBitmap::intersect`]); true if it became empty.
fn intersect_page(blkno: u32, page: &mut PageEntry, b: &TidBitmap) -> bool {
    if page.chunk {
        for bit in set_bits(&page.words[..WORDS_PER_CHUNK]).collect::<Vec<_>>() {
            let pg = blkno + bit as u32;
            if !b.page_is_lossy(pg) && b.exact_entry(pg).is_none() {
                page.words[bit / BITS_PER_WORD] &= !(1 << (bit % BITS_PER_WORD));
            }
        }
        page.is_empty()
    } else if b.page_is_lossy(blkno) {
        // b only knows the page may match: a's tuples may not all be in b.
        page.recheck = true;
        false
    } else if let Some(theirs) = b.exact_entry(blkno) {
        for (word, t) in page.words.iter_mut().zip(&theirs.words) {
            *word &= t;
        }
        page.recheck |= theirs.recheck;
        page.is_empty()
    } else {
        true
    }
}

impl IntoIterator for TidBitmap {
    type Item = TbmPage;
    type IntoIter = TbmIterator;

    fn into_iter(self) -> TbmIterator {
        self.iterate()
    }
}

/// One page of a bitmap as read out: PostgreSQL's `TBMIterateResult`. Small and `Copy`, so
/// it can travel with its block through a read stream as the block's per-buffer data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TbmPage {
    pub blkno: u32,
    /// Every tuple of the page is a candidate (the bitmap forgot which ones).
    pub lossy: bool,
    /// The tuples must be tested against the condition again (always for lossy pages).
    pub recheck: bool,
    /// Bit `k` = offset `k + 1`; zero for a lossy page.
    words: [u64; WORDS_PER_PAGE],
}

impl TbmPage {
    /// An exact page holding `offsets` (for tests and callers that build pages by hand).
    pub fn exact(blkno: u32, offsets: &[u16], recheck: bool) -> TbmPage {
        let mut words = [0u64; WORDS_PER_PAGE];
        for &off in offsets {
            assert!(off >= 1 && off as usize <= MAX_TUPLES_PER_PAGE);
            let bit = off as usize - 1;
            words[bit / BITS_PER_WORD] |= 1 << (bit % BITS_PER_WORD);
        }
        TbmPage {
            blkno,
            lossy: false,
            recheck,
            words,
        }
    }

    /// A lossy page.
    pub fn lossy(blkno: u32) -> TbmPage {
        TbmPage {
            blkno,
            lossy: true,
            recheck: true,
            words: [0; WORDS_PER_PAGE],
        }
    }

    /// The page's tuple offsets, ascending; `None` for a lossy page (every tuple).
    pub fn offsets(&self) -> Option<TbmOffsets> {
        (!self.lossy).then_some(TbmOffsets {
            words: self.words,
            word: 0,
        })
    }

    /// Number of tuples listed; `None` for a lossy page.
    pub fn ntuples(&self) -> Option<usize> {
        (!self.lossy).then(|| self.words.iter().map(|w| w.count_ones() as usize).sum())
    }
}

/// The offsets of an exact [`TbmPage`], ascending (PostgreSQL's `tbm_extract_page_tuple`).
#[derive(Clone, Debug)]
pub struct TbmOffsets {
    words: [u64; WORDS_PER_PAGE],
    word: usize,
}

impl Iterator for TbmOffsets {
    type Item = u16;

    #[inline]
    fn next(&mut self) -> Option<u16> {
        while self.word < WORDS_PER_PAGE {
            let w = &mut self.words[self.word];
            if *w != 0 {
                let bit = w.trailing_zeros() as usize;
                *w &= *w - 1;
                return Some((self.word * BITS_PER_WORD + bit + 1) as u16);
            }
            self.word += 1;
        }
        None
    }
}

/// A bitmap's entries in block order, as [`TbmIterator`] walks them for its exact pages
/// (passing over chunk headers, and the array's empty slots).
#[derive(Debug)]
enum ExactPages {
    /// Sorted by block.
    Sorted(Vec<(u32, PageEntry)>),
    /// The page table's array: slot `b` is block `b`'s entry.
    Slots(Vec<Option<PageEntry>>),
}

impl ExactPages {
    /// The chunks among the entries (header block, page bits), in block order.
    fn chunks(&self) -> Vec<(u32, [u64; WORDS])> {
        let entries: Box<dyn Iterator<Item = (u32, &PageEntry)>> = match self {
            ExactPages::Sorted(pages) => Box::new(pages.iter().map(|(b, e)| (*b, e))),
            ExactPages::Slots(slots) => Box::new(
                (slots.iter().enumerate()).filter_map(|(b, s)| Some((b as u32, s.as_ref()?))),
            ),
        };
        entries
            .filter(|(_, e)| e.chunk)
            .map(|(b, e)| (b, e.words))
            .collect()
    }
}

/// Reads a bitmap out in ascending block order, merging exact pages with the lossy pages of
/// chunks (see [`TidBitmap::iterate`]).
#[derive(Debug)]
pub struct TbmIterator {
    /// Exact pages; `next_page` indexes them.
    pages: ExactPages,
    /// Chunks (header block, page bits), sorted by block.
    chunks: Vec<(u32, [u64; WORDS])>,
    next_page: usize,
    next_chunk: usize,
    /// Next bit of `chunks[next_chunk]` to look at.
    next_chunk_bit: usize,
}

impl TbmIterator {
    /// The next exact page at or after the cursor, without consuming it.
    fn peek_exact(&mut self) -> Option<(u32, PageEntry)> {
        match &self.pages {
            ExactPages::Sorted(pages) => loop {
                match pages.get(self.next_page)? {
                    (blkno, entry) if !entry.chunk => return Some((*blkno, *entry)),
                    _ => self.next_page += 1,
                }
            },
            ExactPages::Slots(slots) => loop {
                match slots.get(self.next_page)? {
                    Some(entry) if !entry.chunk => {
                        return Some((self.next_page as u32, *entry));
                    }
                    _ => self.next_page += 1,
                }
            },
        }
    }

    /// The next lossy page of the chunks at or after the cursor, without consuming it.
    fn peek_lossy(&mut self) -> Option<u32> {
        while let Some(&(chunk_blkno, words)) = self.chunks.get(self.next_chunk) {
            match next_set_bit(&words[..WORDS_PER_CHUNK], self.next_chunk_bit) {
                Some(bit) => {
                    self.next_chunk_bit = bit;
                    return Some(chunk_blkno + bit as u32);
                }
                None => {
                    self.next_chunk += 1;
                    self.next_chunk_bit = 0;
                }
            }
        }
        None
    }
}

impl Iterator for TbmIterator {
    type Item = TbmPage;

    fn next(&mut self) -> Option<TbmPage> {
        let lossy = self.peek_lossy();
        let exact = self.peek_exact();
        match (lossy, exact) {
            (Some(l), e) if e.is_none_or(|(e, _)| l < e) => {
                self.next_chunk_bit += 1;
                Some(TbmPage::lossy(l))
            }
            (_, Some((blkno, entry))) => {
                self.next_page += 1;
                debug_assert!(lossy != Some(blkno), "a page is exact or lossy, not both");
                let mut words = [0u64; WORDS_PER_PAGE];
                words.copy_from_slice(&entry.words[..WORDS_PER_PAGE]);
                Some(TbmPage {
                    blkno,
                    lossy: false,
                    recheck: entry.recheck,
                    words,
                })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn read_out(bitmap: TidBitmap) -> Vec<(u32, Option<Vec<u16>>, bool)> {
        bitmap
            .into_iter()
            .map(|p| (p.blkno, p.offsets().map(|o| o.collect()), p.recheck))
            .collect()
    }

    /// A small deterministic generator (xorshift64*).
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    #[test]
    fn max_entries_follow_work_mem() {
        assert_eq!(TidBitmap::entries_for(64 * 1024), 1024);
        assert_eq!(TidBitmap::entries_for(4 * 1024 * 1024), 65536);
        assert_eq!(TidBitmap::entries_for(16 * 1024 * 1024), 262144);
        assert_eq!(TidBitmap::entries_for(100), MIN_ENTRIES);
        assert_eq!(TidBitmap::new(1024).max_entries(), 16);
    }

    #[test]
    fn exact_pages_come_out_in_block_order_with_sorted_offsets() {
        let mut bitmap = TidBitmap::new(1 << 20);
        let n = bitmap
            .add_tuples([(7, 3), (2, 9), (7, 1), (2, 9), (500, 291), (0, 1)], false)
            .unwrap();
        assert_eq!(n, 6);
        assert_eq!(bitmap.tids_added(), 6);
        bitmap.add_tuple(9, 64, true).unwrap();
        assert_eq!((bitmap.exact_pages(), bitmap.lossy_pages()), (5, 0));
        assert_eq!(
            read_out(bitmap),
            vec![
                (0, Some(vec![1]), false),
                (2, Some(vec![9]), false),
                (7, Some(vec![1, 3]), false),
                (9, Some(vec![64]), true),
                (500, Some(vec![291]), false),
            ]
        );
    }

    #[test]
    fn offsets_out_of_range_are_refused() {
        let mut bitmap = TidBitmap::new(1 << 20);
        assert!(bitmap.add_tuple(1, 0, false).is_err());
        let e = bitmap.add_tuple(1, 292, false).unwrap_err();
        assert!(
            e.to_string().contains("tuple offset out of range: 292"),
            "{e}"
        );
        assert!(bitmap.is_empty());
    }

    #[test]
    fn worked_example_of_the_module_comment() {
        let mut bitmap = TidBitmap::new(1024); // 16 entries
        for blkno in 1..=17 {
            bitmap.add_tuple(blkno, 1, false).unwrap();
        }
        assert_eq!(bitmap.nentries(), 8, "7 exact pages and chunk 0");
        assert_eq!((bitmap.exact_pages(), bitmap.lossy_pages()), (7, 10));
        let pages = read_out(bitmap);
        let lossy: Vec<u32> = pages
            .iter()
            .filter(|p| p.1.is_none())
            .map(|p| p.0)
            .collect();
        assert_eq!(lossy, (1..=10).collect::<Vec<_>>());
        assert!(pages.iter().all(|p| p.1.is_some() == (p.0 >= 11)));
        assert!(
            pages.iter().all(|p| p.1.is_some() || p.2),
            "lossy pages are rechecked"
        );
    }

    /// Random TIDs over `nblocks` blocks into a bitmap of `max_entries`: every TID is found
    /// again (exact with its offset, or on a lossy page), nothing is invented on exact pages,
    /// pages come out once each in ascending order, and the bound holds.
    #[test]
    fn lossy_bitmaps_keep_every_tid() {
        for (seed, nblocks, ntids, max_entries) in [
            (1, 2000, 20_000, 16),
            (2, 2000, 20_000, 100),
            (3, 70_000, 50_000, 1000),
            (4, 300, 5000, 1 << 20),
        ] {
            let mut rng = Rng(seed * 7919 + 1);
            let mut truth: BTreeMap<u32, BTreeSet<u16>> = BTreeMap::new();
            let mut bitmap = TidBitmap::with_max_entries(max_entries);
            for _ in 0..ntids {
                let blkno = rng.below(nblocks) as u32;
                let off = 1 + rng.below(120) as u16;
                truth.entry(blkno).or_default().insert(off);
                bitmap.add_tuple(blkno, off, false).unwrap();
                assert!(bitmap.nentries() <= bitmap.max_entries());
            }
            let (exact, lossy) = (bitmap.exact_pages(), bitmap.lossy_pages());
            let went_lossy = lossy > 0;
            let bound = bitmap.max_entries();
            let nentries = bitmap.nentries();
            let pages = read_out(bitmap);
            assert!(
                pages.windows(2).all(|w| w[0].0 < w[1].0),
                "ascending, once each"
            );
            assert_eq!(pages.iter().filter(|p| p.1.is_some()).count(), exact);
            assert_eq!(pages.iter().filter(|p| p.1.is_none()).count(), lossy);
            let out: BTreeMap<u32, Option<Vec<u16>>> =
                pages.into_iter().map(|(b, o, _)| (b, o)).collect();
            for (blkno, offsets) in &truth {
                if let Some(o) = &out[blkno] {
                    assert_eq!(o, &offsets.iter().copied().collect::<Vec<_>>());
                }
            }
            assert_eq!(
                out.len(),
                truth.len(),
                "a lossy page is only a page with tids"
            );
            assert_eq!(went_lossy, max_entries < truth.len(), "seed {seed}");
            if max_entries >= 1000 {
                assert_eq!(bound, max_entries, "lossifying could fit seed {seed}");
            }
            assert!(nentries <= bound);
        }
    }

    #[test]
    fn chunk_headers_are_not_lossified_and_the_bound_is_raised() {
        // Only chunk-header pages: converting them saves nothing, so none is converted
        // and the bitmap admits it does not fit.
        let mut bitmap = TidBitmap::with_max_entries(16);
        for i in 0..20 {
            bitmap.add_tuple(i * PAGES_PER_CHUNK, 1, false).unwrap();
        }
        assert_eq!(bitmap.lossy_pages(), 0);
        assert_eq!(bitmap.exact_pages(), 20);
        assert_eq!(
            bitmap.max_entries(),
            34,
            "raised to 2 × 17 at the 17th page"
        );
    }

    #[test]
    fn pages_of_separate_chunks_cannot_be_lossified_away() {
        let mut bitmap = TidBitmap::with_max_entries(16);
        // Pages in 17 different chunks: each conversion adds a chunk for the page it
        // removes, so nothing fits and the bound is raised...
        for i in 0..17 {
            bitmap.add_tuple(i * PAGES_PER_CHUNK + 1, 1, false).unwrap();
        }
        assert_eq!(bitmap.nentries(), 17);
        assert_eq!(bitmap.max_entries(), 34);
        assert_eq!(bitmap.lossy_pages(), 17);
        // ... and a page already lossy stays lossy when added again.
        bitmap.add_tuple(PAGES_PER_CHUNK + 1, 2, false).unwrap();
        assert_eq!((bitmap.exact_pages(), bitmap.lossy_pages()), (0, 17));
    }

    #[test]
    fn lossify_resumes_where_it_stopped() {
        let mut bitmap = TidBitmap::with_max_entries(16);
        let exact = |b: &TidBitmap| -> Vec<u32> {
            let mut v: Vec<u32> = b
                .entries
                .iter()
                .filter(|e| !e.1.chunk)
                .map(|e| e.0)
                .collect();
            v.sort();
            v
        };
        // Worked example: 1..=10 go lossy, the next pass starts at 11.
        bitmap.add_tuples((1..=17).map(|b| (b, 1)), false).unwrap();
        assert_eq!(exact(&bitmap), (11..=17).collect::<Vec<_>>());
        // Nine pages of chunk 1: 11..=17 go, then 300..=302 (creating chunk 1).
        bitmap
            .add_tuples((300..=308).map(|b| (b, 1)), false)
            .unwrap();
        assert_eq!(exact(&bitmap), (303..=308).collect::<Vec<_>>());
        // Nine more pages of chunk 0: the pass starts at 303, wraps, and ends at 20 —
        // starting from block 0 would have converted the new pages instead.
        bitmap.add_tuples((18..=26).map(|b| (b, 1)), false).unwrap();
        assert_eq!(exact(&bitmap), (21..=26).collect::<Vec<_>>());
        assert_eq!(bitmap.nentries(), 8);
        assert_eq!(bitmap.max_entries(), 16, "it fitted every time");
    }

    #[test]
    fn a_chunk_header_page_added_after_its_chunk_is_lossy() {
        let mut bitmap = TidBitmap::new(1 << 20);
        bitmap.add_page(5);
        bitmap.add_tuple(0, 3, false).unwrap();
        bitmap.add_tuple(5, 3, false).unwrap();
        assert_eq!(read_out(bitmap), vec![(0, None, true), (5, None, true)]);
        // And an exact header page becomes lossy when its chunk is created.
        let mut bitmap = TidBitmap::new(1 << 20);
        bitmap.add_tuple(256, 3, false).unwrap();
        bitmap.add_page(300);
        assert_eq!(read_out(bitmap), vec![(256, None, true), (300, None, true)]);
    }

    fn bitmap_of(tids: &[(u32, u16)], lossy: &[u32]) -> TidBitmap {
        let mut b = TidBitmap::new(1 << 20);
        b.add_tuples(tids.iter().copied(), false).unwrap();
        for &p in lossy {
            b.add_page(p);
        }
        b
    }

    #[test]
    fn union_merges_pages() {
        let mut a = bitmap_of(&[(1, 1), (2, 1), (3, 1)], &[10]);
        let b = bitmap_of(&[(1, 2), (4, 5), (10, 7)], &[2]);
        a.union(&b);
        assert_eq!(
            read_out(a),
            vec![
                (1, Some(vec![1, 2]), false),
                (2, None, true),
                (3, Some(vec![1]), false),
                (4, Some(vec![5]), false),
                (10, None, true),
            ]
        );
    }

    #[test]
    fn intersect_keeps_what_may_be_in_both() {
        let mut a = bitmap_of(&[(1, 1), (1, 2), (2, 1), (3, 1), (4, 4)], &[10, 11, 12]);
        let b = bitmap_of(&[(1, 2), (1, 3), (2, 2), (10, 1), (4, 4)], &[3, 12]);
        a.intersect(&b);
        assert_eq!(
            read_out(a),
            vec![
                (1, Some(vec![2]), false), // exact ∩ exact
                // 2: exact ∩ exact, nothing in common: dropped
                (3, Some(vec![1]), true), // exact ∩ lossy: rechecked
                (4, Some(vec![4]), false),
                (10, None, true), // lossy ∩ exact stays lossy
                // 11: lossy ∩ absent: dropped
                (12, None, true), // lossy ∩ lossy
            ]
        );
        let mut empty = TidBitmap::new(1 << 20);
        empty.intersect(&b);
        assert!(empty.is_empty());
        let mut a = bitmap_of(&[(1, 1)], &[300]);
        a.intersect(&TidBitmap::new(1 << 20));
        assert!(a.is_empty());
        assert_eq!((a.exact_pages(), a.lossy_chunks()), (0, 0));
    }

    /// Union and intersection against a model of sets, with tiny bitmaps that go lossy:
    /// the result contains the true set, and its exact pages without recheck hold exactly
    /// the true tuples.
    #[test]
    fn and_or_contain_the_true_sets() {
        let mut rng = Rng(42);
        for round in 0..40 {
            let mut sets = Vec::new();
            let mut bitmaps = Vec::new();
            for _ in 0..2 {
                let mut set = BTreeSet::new();
                let mut bitmap =
                    TidBitmap::with_max_entries(if round % 2 == 0 { 16 } else { 4096 });
                for _ in 0..300 {
                    let tid = (rng.below(600) as u32, 1 + rng.below(20) as u16);
                    set.insert(tid);
                    bitmap.add_tuple(tid.0, tid.1, false).unwrap();
                }
                sets.push(set);
                bitmaps.push(bitmap);
            }
            for and in [false, true] {
                let truth: BTreeSet<(u32, u16)> = if and {
                    sets[0].intersection(&sets[1]).copied().collect()
                } else {
                    sets[0].union(&sets[1]).copied().collect()
                };
                let mut result = bitmaps[0].clone();
                if and {
                    result.intersect(&bitmaps[1]);
                } else {
                    result.union(&bitmaps[1]);
                }
                let lossless = bitmaps.iter().all(|b| b.lossy_pages() == 0);
                let pages = read_out(result);
                let mut covered = BTreeSet::new();
                for (blkno, offsets, recheck) in &pages {
                    match offsets {
                        Some(offsets) => {
                            let on_page: Vec<u16> = truth
                                .range((*blkno, 0)..=(*blkno, u16::MAX))
                                .map(|t| t.1)
                                .collect();
                            for &o in offsets {
                                covered.insert((*blkno, o));
                            }
                            if !recheck {
                                assert_eq!(offsets, &on_page, "round {round} and={and}");
                            }
                        }
                        None => {
                            covered.extend(truth.range((*blkno, 0)..=(*blkno, u16::MAX)));
                        }
                    }
                    if lossless {
                        assert!(offsets.is_some() && !recheck);
                    }
                }
                assert!(truth.is_subset(&covered), "round {round} and={and}");
            }
        }
    }

    /// A bitmap told the heap's size (whose pages move into an array) holds and reads out
    /// exactly what one that stays hashed does: pages, offsets, recheck flags, exact and
    /// lossy counts, through lossifying, a TID past the heap's end, AND and OR.
    #[test]
    fn the_array_form_changes_nothing() {
        let slot = std::mem::size_of::<Option<PageEntry>>();
        for (seed, nblocks, ntids, past_end) in [
            (1u64, 340u32, 3000, false), // max_entries 255 < 340 pages: goes lossy
            (2, 5000, 20_000, false),
            (3, 5000, 20_000, true),
            (4, 2000, 100, false), // too sparse to switch
        ] {
            // The smallest bound the array fits in (its max_entries is 3/4 of the heap's
            // pages, so seed 1 goes lossy); the others get room for every page.
            let max_bytes = nblocks as usize * if seed == 1 { slot } else { 2 * BYTES_PER_ENTRY };
            let mut rng = Rng(seed);
            let mut build = |past_end: bool| {
                let mut hashed = TidBitmap::new(max_bytes);
                let mut array = TidBitmap::for_heap(max_bytes, nblocks);
                for i in 0..ntids {
                    let blkno = if past_end && i == ntids / 2 {
                        nblocks + 3
                    } else {
                        rng.below(nblocks as u64) as u32
                    };
                    let (off, recheck) = (1 + rng.below(200) as u16, rng.below(50) == 0);
                    hashed.add_tuple(blkno, off, recheck).unwrap();
                    array.add_tuple(blkno, off, recheck).unwrap();
                }
                (hashed, array)
            };
            let (mut hashed, mut array) = build(past_end);
            let direct = array.entries.is_direct();
            assert_eq!(
                direct,
                ntids >= nblocks as usize && !past_end,
                "seed {seed}"
            );
            let counts = |b: &TidBitmap| (b.exact_pages(), b.lossy_pages(), b.lossy_chunks());
            assert_eq!(counts(&array), counts(&hashed), "seed {seed}");
            assert_eq!(seed == 1, hashed.lossy_pages() > 0);
            let (other_hashed, other_array) = build(false);
            if seed % 2 == 0 {
                hashed.intersect(&other_hashed);
                array.intersect(&other_array);
            } else {
                hashed.union(&other_hashed);
                array.union(&other_array);
            }
            assert_eq!(counts(&array), counts(&hashed), "seed {seed}");
            assert_eq!(read_out(array), read_out(hashed), "seed {seed}");
        }
    }

    #[test]
    fn pages_are_small_enough_to_travel_through_a_stream() {
        assert!(std::mem::size_of::<TbmPage>() <= 56);
        let page = TbmPage::exact(3, &[1, 64, 65, 291], false);
        assert_eq!(
            page.offsets().unwrap().collect::<Vec<_>>(),
            vec![1, 64, 65, 291]
        );
        assert_eq!(page.ntuples(), Some(4));
        assert_eq!(TbmPage::lossy(3).offsets().map(|_| ()), None);
    }
}
