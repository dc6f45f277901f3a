//! The visibility map: which pages of each table hold only tuples every transaction sees,
//! so that VACUUM can skip them (PostgreSQL's `visibilitymap.c`, its all-visible bit).
//!
//! VACUUM sets a page's bit, and the page's `PD_ALL_VISIBLE` flag, when after pruning every
//! tuple on it was inserted by a transaction older than the removal horizon and deleted by
//! none, and no dead line pointer waits for the indexes. Whoever changes the page later (an
//! insert, a delete, an update's old or new version) clears both, under the page's
//! exclusive lock, in [`clear_all_visible`]; VACUUM sets them under that lock too, so a
//! page is never marked while a change is being made to it.
//!
//! iolab reads the map only to skip pages in VACUUM (as PostgreSQL does, only runs of at
//! least `SKIP_PAGES_THRESHOLD` pages: shorter ones are read anyway, to keep the reads
//! sequential). Unlike PostgreSQL's, it is kept in memory, not in a `_vm` fork: after a
//! restart every page is unmarked (`PD_ALL_VISIBLE` flags on disk are cleared by the first
//! change, as stale hints) and the next VACUUM reads the whole table.
//!
//! Bounds: one bit per page of each table with a marked page; a table's bits go with its
//! file.

use std::collections::HashMap;

use parking_lot::Mutex;

use crate::storage::page;

/// Runs of all-visible pages shorter than this are read anyway (PostgreSQL's
/// `SKIP_PAGES_THRESHOLD`).
pub const SKIP_PAGES_THRESHOLD: u32 = 32;

#[derive(Debug, Default)]
pub struct VisibilityMap {
    /// Per table file, one bit per page (set: all-visible).
    tables: Mutex<HashMap<u32, Vec<u64>>>,
}

impl VisibilityMap {
    pub fn set(&self, relfilenode: u32, blkno: u32) {
        let mut tables = self.tables.lock();
        let bits = tables.entry(relfilenode).or_default();
        let word = blkno as usize / 64;
        if bits.len() <= word {
            bits.resize(word + 1, 0);
        }
        bits[word] |= 1 << (blkno % 64);
    }

    pub fn clear(&self, relfilenode: u32, blkno: u32) {
        if let Some(bits) = self.tables.lock().get_mut(&relfilenode) {
            if let Some(word) = bits.get_mut(blkno as usize / 64) {
                *word &= !(1 << (blkno % 64));
            }
        }
    }

    pub fn is_set(&self, relfilenode: u32, blkno: u32) -> bool {
        self.tables
            .lock()
            .get(&relfilenode)
            .and_then(|bits| bits.get(blkno as usize / 64))
            .is_some_and(|word| word & (1 << (blkno % 64)) != 0)
    }

    /// The blocks below `nblocks` VACUUM skips: runs of at least
    /// [`SKIP_PAGES_THRESHOLD`] all-visible pages, as one bit per block.
    pub fn skippable(&self, relfilenode: u32, nblocks: u32) -> Vec<bool> {
        let tables = self.tables.lock();
        let set = |b: u32| {
            tables
                .get(&relfilenode)
                .and_then(|bits| bits.get(b as usize / 64))
                .is_some_and(|word| word & (1 << (b % 64)) != 0)
        };
        let mut skip = vec![false; nblocks as usize];
        let mut run_start = 0u32;
        for b in 0..=nblocks {
            if b < nblocks && set(b) {
                continue;
            }
            if b - run_start >= SKIP_PAGES_THRESHOLD {
                skip[run_start as usize..b as usize].fill(true);
            }
            run_start = b + 1;
        }
        skip
    }

    /// Table file `relfilenode` is gone: its bits go.
    pub fn forget(&self, relfilenode: u32) {
        self.tables.lock().remove(&relfilenode);
    }
}

/// A change is being made to `page` (block `blkno` of table file `relfilenode`), under its
/// exclusive lock: it is no longer all-visible. Cheap when it was not.
pub fn clear_all_visible(page: &mut [u8], vm: &VisibilityMap, relfilenode: u32, blkno: u32) {
    if page::page_is_all_visible(page) {
        page::page_set_all_visible(page, false);
        vm.clear(relfilenode, blkno);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_and_skippable_runs() {
        let vm = VisibilityMap::default();
        for b in (0..40).chain(50..60).chain(100..140) {
            vm.set(9, b);
        }
        assert!(vm.is_set(9, 39) && !vm.is_set(9, 40) && !vm.is_set(8, 0));
        let skip = vm.skippable(9, 130);
        // 0..40 (40 ≥ 32) and 100..130 (30 at the end: too short) — and 50..60 too short.
        assert!(skip[..40].iter().all(|&s| s));
        assert!(skip[40..].iter().all(|&s| !s));
        let skip = vm.skippable(9, 140);
        assert!(skip[100..140].iter().all(|&s| s));
        vm.clear(9, 10);
        let skip = vm.skippable(9, 140);
        assert!(skip[..11].iter().all(|&s| !s), "0..10 is too short now");
        assert!(skip[11..40].iter().all(|&s| !s), "11..40 is 29 pages");
        vm.forget(9);
        assert!(!vm.is_set(9, 100));
    }

    #[test]
    fn clearing_follows_the_page_flag() {
        let vm = VisibilityMap::default();
        let mut page = vec![0u8; page::BLCKSZ];
        page::page_init(&mut page, 0);
        page::page_set_all_visible(&mut page, true);
        vm.set(3, 5);
        clear_all_visible(&mut page, &vm, 3, 5);
        assert!(!page::page_is_all_visible(&page));
        assert!(!vm.is_set(3, 5));
    }
}
