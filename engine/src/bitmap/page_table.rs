//! Where a TID bitmap keeps its entries: a map from block number to entry that is a hash
//! table while the bitmap is sparse and becomes an array indexed by block number once it
//! covers a good part of the heap.
//!
//! # Why two forms
//!
//! A Bitmap Index Scan adds TIDs in key order, which is random block order, so when a bitmap
//! covers much of a large heap every TID is a cache miss, in a hash table or anywhere else
//! (the seed query: 278 k TIDs on 135 k of 166 k pages, a table of several MB). A hash
//! table's slot is only known after the lookup; an array's slot is known from the block
//! number alone, so the caller can have the CPU fetch it a few TIDs ahead
//! ([`PageTable::prefetch`]) and the misses overlap. The array also never grows or rehashes,
//! and reads out in block order as it lies, with no sort and no copy
//! ([`PageTable::into_block_order`]: copying the seed query's 135 k entries into a sorted
//! list before its first heap read cost 9 ms of its 140 ms with every page in the pool). Measured on the seed query with
//! every page in the pool, its Bitmap Index Scan took 17–20 ms hashed, the same as an array
//! without prefetching, and 11–12 ms as an array with it. But an array costs a slot per heap
//! block whether used or not (setting up and walking 166 k slots: ≈ 4 ms), which a sparse
//! bitmap should not pay (8.6 k pages of the same heap: ≈ 1.5 ms hashed).
//!
//! # The rule
//!
//! A table starts hashed. It becomes an array when all of these hold:
//!
//! * it was told the heap's size in blocks ([`PageTable::for_heap`]);
//! * the array fits the bitmap's memory bound: `heap blocks × slot size ≤ max_bytes`
//!   (`work_mem`), so the array never takes more memory than the user allowed the bitmap;
//! * its entries reach an eighth of the heap's blocks ([`DIRECT_SHARE`]). The two forms cost
//!   about the same for a bitmap on a fifth of the blocks (micro-benchmark), so one that
//!   stops between an eighth and a fifth pays a little (≤ ≈ 2 ms on the seed's heap) and
//!   every denser one gains.
//!
//! A key at or past the array's end (the heap grew after its size was taken) turns the array
//! back into a hash table for good. Either form holds exactly the same entries; which one is
//! in use never changes what the bitmap contains or in which order it reads out.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// The array form is taken once entries reach `heap blocks / DIRECT_SHARE`.
pub const DIRECT_SHARE: u32 = 8;

/// A fast hash for block numbers (the keys are small integers, often consecutive).
#[derive(Default, Clone, Copy)]
struct BlockHasher(u64);

impl Hasher for BlockHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u32(self.0 as u32 ^ b as u32);
        }
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        // Fibonacci hashing, high bits folded down: hashbrown picks buckets with low bits.
        let h = (n as u64 ^ self.0).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}

type BlockMap<V> = HashMap<u32, V, BuildHasherDefault<BlockHasher>>;

/// A table's entries in ascending block order ([`PageTable::into_block_order`]).
#[derive(Debug)]
pub enum BlockOrder<V> {
    /// `(block, entry)`, sorted by block.
    Sorted(Vec<(u32, V)>),
    /// Slot `b` holds block `b`'s entry, if it has one.
    Slots(Vec<Option<V>>),
}

#[derive(Clone, Debug)]
enum Store<V> {
    Hashed(BlockMap<V>),
    /// `slots[block]`; `len` of them are `Some`.
    Direct {
        slots: Vec<Option<V>>,
        len: usize,
    },
}

/// Entries keyed by block number, hashed or in an array (see the module comment).
#[derive(Clone, Debug)]
pub struct PageTable<V> {
    store: Store<V>,
    /// Slots the array form would have; 0 once it may not (or may no longer) be used.
    direct_blocks: u32,
}

impl<V: Copy> PageTable<V> {
    /// A table that stays a hash table.
    pub fn hashed() -> PageTable<V> {
        PageTable {
            store: Store::Hashed(BlockMap::default()),
            direct_blocks: 0,
        }
    }

    /// A table for a heap of `heap_blocks` blocks in a bitmap bounded by `max_bytes`: it
    /// turns into an array when that fits and pays (module comment).
    pub fn for_heap(heap_blocks: u32, max_bytes: usize) -> PageTable<V> {
        let fits =
            (heap_blocks as usize).saturating_mul(std::mem::size_of::<Option<V>>()) <= max_bytes;
        PageTable {
            store: Store::Hashed(BlockMap::default()),
            direct_blocks: if fits { heap_blocks } else { 0 },
        }
    }

    pub fn len(&self) -> usize {
        match &self.store {
            Store::Hashed(map) => map.len(),
            Store::Direct { len, .. } => *len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the entries are in the array form now.
    pub fn is_direct(&self) -> bool {
        matches!(self.store, Store::Direct { .. })
    }

    #[inline]
    pub fn get(&self, blkno: u32) -> Option<&V> {
        match &self.store {
            Store::Hashed(map) => map.get(&blkno),
            Store::Direct { slots, .. } => slots.get(blkno as usize)?.as_ref(),
        }
    }

    /// Ask the CPU to bring `blkno`'s slot into its cache (array form only: a hash table's
    /// slot is not known before the lookup). Building a bitmap over a large heap waits on
    /// memory for every TID otherwise; hinting a few TIDs ahead overlaps those waits.
    #[inline]
    pub fn prefetch(&self, blkno: u32) {
        #[cfg(target_arch = "x86_64")]
        if let Store::Direct { slots, .. } = &self.store {
            if let Some(slot) = slots.get(blkno as usize) {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                let first = slot as *const Option<V> as *const i8;
                let last = first.wrapping_add(std::mem::size_of::<Option<V>>() - 1);
                // SAFETY: a prefetch is a hint that neither reads nor writes memory the
                // program can observe; both addresses lie within one live slot.
                unsafe {
                    _mm_prefetch::<_MM_HINT_T0>(first);
                    _mm_prefetch::<_MM_HINT_T0>(last);
                }
            }
        }
    }

    /// The entry of `blkno`, inserted as `new` if absent; and whether it was inserted.
    #[inline]
    pub fn get_or_insert(&mut self, blkno: u32, new: V) -> (&mut V, bool) {
        if let Store::Direct { slots, .. } = &self.store {
            if blkno as usize >= slots.len() {
                self.make_hashed();
            }
        } else if self.direct_blocks > 0
            && self.len() + 1 >= (self.direct_blocks / DIRECT_SHARE).max(1) as usize
        {
            self.make_direct();
        }
        match &mut self.store {
            Store::Hashed(map) => match map.entry(blkno) {
                Entry::Occupied(entry) => (entry.into_mut(), false),
                Entry::Vacant(entry) => (entry.insert(new), true),
            },
            Store::Direct { slots, len } => {
                let slot = &mut slots[blkno as usize];
                let inserted = slot.is_none();
                *len += inserted as usize;
                (slot.get_or_insert(new), inserted)
            }
        }
    }

    pub fn remove(&mut self, blkno: u32) -> Option<V> {
        match &mut self.store {
            Store::Hashed(map) => map.remove(&blkno),
            Store::Direct { slots, len } => {
                let old = slots.get_mut(blkno as usize)?.take();
                *len -= old.is_some() as usize;
                old
            }
        }
    }

    /// Every entry, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &V)> + '_ {
        let (hashed, direct) = match &self.store {
            Store::Hashed(map) => (Some(map.iter().map(|(&b, v)| (b, v))), None),
            Store::Direct { slots, .. } => (None, Some(occupied(slots))),
        };
        hashed
            .into_iter()
            .flatten()
            .chain(direct.into_iter().flatten())
    }

    /// Keep the entries for which `keep` (which may change them) returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(u32, &mut V) -> bool) {
        match &mut self.store {
            Store::Hashed(map) => map.retain(|&b, v| keep(b, v)),
            Store::Direct { slots, len } => {
                for (b, slot) in slots.iter_mut().enumerate() {
                    if let Some(v) = slot {
                        if !keep(b as u32, v) {
                            *slot = None;
                            *len -= 1;
                        }
                    }
                }
            }
        }
    }

    /// The entries in ascending block order.
    pub fn sorted(&self) -> Vec<(u32, V)> {
        match &self.store {
            Store::Hashed(map) => {
                let mut entries: Vec<(u32, V)> = map.iter().map(|(&b, &v)| (b, v)).collect();
                entries.sort_unstable_by_key(|&(b, _)| b);
                entries
            }
            Store::Direct { slots, len } => {
                let mut entries = Vec::with_capacity(*len);
                entries.extend(occupied(slots).map(|(b, &v)| (b, v)));
                entries
            }
        }
    }

    /// The entries in ascending block order, the table consumed: the array as it is (no
    /// copy of megabytes between a bitmap's build and its first heap read), or the hash
    /// table's entries sorted.
    pub fn into_block_order(self) -> BlockOrder<V> {
        match self.store {
            Store::Direct { slots, .. } => BlockOrder::Slots(slots),
            Store::Hashed(_) => BlockOrder::Sorted(self.sorted()),
        }
    }

    /// Move the entries into an array of `direct_blocks` slots, unless a key does not fit.
    fn make_direct(&mut self) {
        let Store::Hashed(map) = &self.store else {
            return;
        };
        let nslots = self.direct_blocks as usize;
        if map.keys().any(|&b| b as usize >= nslots) {
            self.direct_blocks = 0;
            return;
        }
        let mut slots = vec![None; nslots];
        for (&b, &v) in map {
            slots[b as usize] = Some(v);
        }
        self.store = Store::Direct {
            slots,
            len: map.len(),
        };
    }

    /// Move the entries back into a hash table, for good.
    fn make_hashed(&mut self) {
        let Store::Direct { slots, len } = &self.store else {
            return;
        };
        let mut map = BlockMap::default();
        map.reserve(*len);
        map.extend(occupied(slots).map(|(b, &v)| (b, v)));
        self.store = Store::Hashed(map);
        self.direct_blocks = 0;
    }
}

/// The occupied slots of an array, with their block numbers, ascending.
fn occupied<V>(slots: &[Option<V>]) -> impl Iterator<Item = (u32, &V)> + '_ {
    slots
        .iter()
        .enumerate()
        .filter_map(|(b, slot)| Some((b as u32, slot.as_ref()?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLOT: usize = std::mem::size_of::<Option<u64>>();

    fn fill(table: &mut PageTable<u64>, blocks: impl IntoIterator<Item = u32>) {
        for b in blocks {
            *table.get_or_insert(b, 0).0 += b as u64 + 1;
        }
    }

    #[test]
    fn becomes_an_array_at_an_eighth_of_the_heap_and_holds_the_same_entries() {
        let blocks: Vec<u32> = (0..400u32).map(|i| (i * 7919) % 1000).collect();
        let mut hashed = PageTable::hashed();
        let mut table = PageTable::for_heap(1000, 1000 * SLOT);
        fill(&mut hashed, blocks[..124].iter().copied());
        fill(&mut table, blocks[..124].iter().copied());
        assert!(!table.is_direct(), "124 entries < 1000 / 8");
        fill(&mut hashed, blocks[124..].iter().copied());
        fill(&mut table, blocks[124..].iter().copied());
        assert!(table.is_direct());
        assert_eq!(table.len(), hashed.len());
        assert_eq!(table.sorted(), hashed.sorted());
        assert_eq!(table.get(7919 % 1000), Some(&(7919 % 1000 + 1)));
        assert_eq!(table.get(999), hashed.get(999));

        let (entry, inserted) = table.get_or_insert(7919 % 1000, 5);
        assert_eq!((*entry, inserted), (7919 % 1000 + 1, false));
        assert_eq!(table.remove(7919 % 1000), hashed.remove(7919 % 1000));
        assert_eq!(table.remove(7919 % 1000), None);
        table.retain(|b, v| {
            *v *= 2;
            b % 2 == 0
        });
        hashed.retain(|b, v| {
            *v *= 2;
            b % 2 == 0
        });
        assert_eq!(table.len(), hashed.len());
        assert_eq!(table.sorted(), hashed.sorted());
        let mut listed: Vec<(u32, u64)> = table.iter().map(|(b, &v)| (b, v)).collect();
        listed.sort_unstable();
        assert_eq!(listed, hashed.sorted());
    }

    #[test]
    fn stays_hashed_when_the_array_would_not_fit_max_bytes() {
        let mut table = PageTable::for_heap(1000, 1000 * SLOT - 1);
        fill(&mut table, 0..1000);
        assert!(!table.is_direct());
        assert_eq!(table.len(), 1000);
    }

    #[test]
    fn a_block_past_the_heap_turns_the_array_back_into_a_hash_table() {
        let mut table = PageTable::for_heap(100, 100 * SLOT);
        fill(&mut table, 0..50);
        assert!(table.is_direct());
        fill(&mut table, [100, 3]);
        assert!(!table.is_direct());
        assert_eq!(table.len(), 51);
        assert_eq!(table.get(100), Some(&101));
        assert_eq!(table.get(3), Some(&8), "3 was added twice (4 + 4)");
        // For good: it does not switch again.
        fill(&mut table, 50..100);
        assert!(!table.is_direct());
        assert_eq!(table.sorted().len(), 101);
    }

    #[test]
    fn a_key_past_the_heap_before_the_switch_keeps_it_hashed() {
        let mut table = PageTable::for_heap(80, 80 * SLOT);
        fill(&mut table, [500]);
        fill(&mut table, 0..40);
        assert!(!table.is_direct());
        assert_eq!(table.len(), 41);
    }
}
