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
//! Readers: VACUUM skips marked pages (as PostgreSQL does, only runs of at least
//! `SKIP_PAGES_THRESHOLD` pages: shorter ones are read anyway, to keep the reads
//! sequential); an Index Only Scan takes a key from the index without reading the heap
//! page when the page is marked; the planner costs index-only scans by the share of marked
//! pages ([`VisibilityMap::count`], PostgreSQL's `relallvisible`).
//!
//! Unlike PostgreSQL's, the map is kept in memory, not in a `_vm` fork with WAL records,
//! and kept across a clean restart the way the statistics are: the shutdown checkpoint
//! leaves every page on disk, then [`VisibilityMap::save`] writes the map to
//! `global/pg_visibility_map` (a new file, synced, renamed); the next start reads and removes
//! it ([`VisibilityMap::load`]) and uses it only if the server had shut down cleanly. After
//! a crash every page is unmarked (`PD_ALL_VISIBLE` flags on disk are cleared by the first
//! change, as stale hints) until VACUUM marks them again: slower index-only scans, never a
//! wrong answer.
//!
//! The file: the magic `iolab-vm`, a format version (u32), the number of tables, then per
//! table its relfilenode, its number of 64-bit words and the words, little-endian.
//!
//! Bounds: one bit per page of each table with a marked page; a table's bits go with its
//! file.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

use crate::storage::page;

/// Runs of all-visible pages shorter than this are read anyway (PostgreSQL's
/// `SKIP_PAGES_THRESHOLD`).
pub const SKIP_PAGES_THRESHOLD: u32 = 32;

/// Where a clean shutdown leaves the map, under the data directory.
pub const SAVED_MAP: &str = "global/pg_visibility_map";
const MAGIC: &[u8] = b"iolab-vm";
const VERSION: u32 = 1;

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

    /// Marked pages of table file `relfilenode` below `nblocks`.
    pub fn count(&self, relfilenode: u32, nblocks: u32) -> u32 {
        let tables = self.tables.lock();
        let Some(bits) = tables.get(&relfilenode) else {
            return 0;
        };
        let whole = (nblocks / 64) as usize;
        let mut n: u32 = bits.iter().take(whole).map(|w| w.count_ones()).sum();
        if let (Some(word), rest) = (bits.get(whole), nblocks % 64) {
            n += (word & ((1u64 << rest) - 1)).count_ones();
        }
        n
    }

    /// Writes the map to `<data_dir>/global/pg_visibility_map` (after the shutdown
    /// checkpoint; see the module comment).
    pub fn save(&self, data_dir: &Path) -> io::Result<()> {
        let mut out = Vec::from(MAGIC);
        out.extend(VERSION.to_le_bytes());
        {
            let tables = self.tables.lock();
            out.extend((tables.len() as u32).to_le_bytes());
            for (relfilenode, words) in tables.iter() {
                out.extend(relfilenode.to_le_bytes());
                out.extend((words.len() as u32).to_le_bytes());
                words.iter().for_each(|w| out.extend(w.to_le_bytes()));
            }
        }
        let path = data_dir.join(SAVED_MAP);
        let temp = path.with_extension("tmp");
        let mut file = fs::File::create(&temp)?;
        file.write_all(&out)?;
        file.sync_all()?;
        fs::rename(&temp, &path)
    }

    /// The map a clean shutdown saved in `data_dir`, if any; the file is removed, so that
    /// a crash from now on leaves none. A file that does not decode is an error (the
    /// caller starts with an empty map).
    pub fn load(data_dir: &Path) -> Result<Option<VisibilityMap>, String> {
        let path: PathBuf = data_dir.join(SAVED_MAP);
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("could not read \"{}\": {e}", path.display())),
        };
        let removed = fs::remove_file(&path);
        let map = decode(&bytes)
            .ok_or_else(|| format!("visibility map file \"{}\" is damaged", path.display()))?;
        removed.map_err(|e| format!("could not remove \"{}\": {e}", path.display()))?;
        Ok(Some(map))
    }

    /// Keeps the bits of the table files `keep` says yes to.
    pub fn retain(&self, keep: impl Fn(u32) -> bool) {
        self.tables
            .lock()
            .retain(|&relfilenode, _| keep(relfilenode));
    }

    /// Takes over the bits of `saved` (at start, before anything runs).
    pub fn restore(&self, saved: VisibilityMap) {
        *self.tables.lock() = saved.tables.into_inner();
    }
}

/// The map encoded by [`VisibilityMap::save`]; `None` if the bytes are not one.
fn decode(bytes: &[u8]) -> Option<VisibilityMap> {
    fn u32_le(rest: &mut &[u8]) -> Option<u32> {
        let (head, tail) = rest.split_first_chunk::<4>()?;
        *rest = tail;
        Some(u32::from_le_bytes(*head))
    }
    let mut rest = bytes.strip_prefix(MAGIC)?;
    if u32_le(&mut rest)? != VERSION {
        return None;
    }
    let ntables = u32_le(&mut rest)?;
    let mut tables = HashMap::new();
    for _ in 0..ntables {
        let relfilenode = u32_le(&mut rest)?;
        let nbytes = (u32_le(&mut rest)? as usize).checked_mul(8)?;
        let words = rest
            .get(..nbytes)?
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect();
        rest = &rest[nbytes..];
        tables.insert(relfilenode, words);
    }
    rest.is_empty().then(|| VisibilityMap {
        tables: Mutex::new(tables),
    })
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
    fn counts_below_the_table_end_and_survives_a_save_and_load() {
        let vm = VisibilityMap::default();
        for b in (0..70).chain(130..131) {
            vm.set(9, b);
        }
        vm.set(4, 2);
        assert_eq!(vm.count(9, 200), 71);
        assert_eq!(vm.count(9, 65), 65);
        assert_eq!(vm.count(9, 64), 64);
        assert_eq!(vm.count(9, 0), 0);
        assert_eq!(vm.count(5, 10), 0);

        let dir = std::env::temp_dir().join(format!("iolab-vm-{}", std::process::id()));
        fs::create_dir_all(dir.join("global")).unwrap();
        assert!(VisibilityMap::load(&dir).unwrap().is_none(), "no file yet");
        vm.save(&dir).unwrap();
        let loaded = VisibilityMap::load(&dir).unwrap().expect("saved");
        assert!(!dir.join(SAVED_MAP).exists(), "loading removes the file");
        let fresh = VisibilityMap::default();
        fresh.restore(loaded);
        assert_eq!(fresh.count(9, 200), 71);
        assert!(fresh.is_set(4, 2) && fresh.is_set(9, 130) && !fresh.is_set(9, 129));
        fresh.retain(|relfilenode| relfilenode == 9);
        assert!(!fresh.is_set(4, 2) && fresh.is_set(9, 130));

        // Cut short or of another version: refused, and removed too.
        vm.save(&dir).unwrap();
        let bytes = fs::read(dir.join(SAVED_MAP)).unwrap();
        fs::write(dir.join(SAVED_MAP), &bytes[..bytes.len() - 3]).unwrap();
        assert!(VisibilityMap::load(&dir).is_err());
        assert!(!dir.join(SAVED_MAP).exists());
        let mut other = bytes.clone();
        other[MAGIC.len()] = 99;
        fs::write(dir.join(SAVED_MAP), &other).unwrap();
        assert!(VisibilityMap::load(&dir).is_err());
        fs::remove_dir_all(&dir).unwrap();
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
