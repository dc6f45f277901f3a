//! The free space map: which pages of each table have room for new tuples.
//!
//! VACUUM records each page's free space after pruning it; an inserter that needs a page
//! asks for one with room for its tuple before it extends the table, and records what is
//! left on a page when it moves on from it. So the space VACUUM frees is filled again, as
//! PostgreSQL's free space map has it filled (`RecordPageWithFreeSpace`,
//! `GetPageWithFreeSpace`).
//!
//! Like PostgreSQL's, the map is a hint, not a truth: a page may have less room than
//! recorded (another inserter used it meanwhile), and the inserter then records the real
//! figure and asks again. Unlike PostgreSQL's (a fork of the relation on disk), it is kept
//! in memory only: after a restart the tables' free space is found again by their next
//! VACUUM.
//!
//! Lookups take the page with the least room that is still enough (best fit), so big
//! holes stay for big tuples. Bounds: one entry per page that had room when last
//! recorded, pages with less than [`MIN_RECORDED`] bytes free are not kept, and a table's
//! entries go with its file.

use std::collections::{BTreeSet, HashMap};

use parking_lot::Mutex;

/// Free space below this is not worth a page visit: not recorded.
pub const MIN_RECORDED: usize = 64;

#[derive(Debug, Default)]
pub struct FreeSpaceMap {
    tables: Mutex<HashMap<u32, TableSpace>>,
}

/// One table's pages with room, by room and by page.
#[derive(Debug, Default)]
struct TableSpace {
    /// `(free bytes, block)`.
    by_room: BTreeSet<(u16, u32)>,
    /// `block → free bytes`, the same entries.
    by_page: HashMap<u32, u16>,
}

impl FreeSpaceMap {
    /// Page `blkno` of table file `relfilenode` has `free` bytes of room.
    pub fn record(&self, relfilenode: u32, blkno: u32, free: usize) {
        let free = u16::try_from(free).expect("a page's free space fits in 16 bits");
        let mut tables = self.tables.lock();
        let table = tables.entry(relfilenode).or_default();
        if let Some(old) = table.by_page.remove(&blkno) {
            table.by_room.remove(&(old, blkno));
        }
        if free as usize >= MIN_RECORDED {
            table.by_page.insert(blkno, free);
            table.by_room.insert((free, blkno));
        }
        debug_assert_eq!(table.by_page.len(), table.by_room.len());
    }

    /// A page of table file `relfilenode` below `nblocks` recorded with at least `need`
    /// bytes of room, the one with the least such room.
    pub fn page_with_room(&self, relfilenode: u32, need: usize, nblocks: u32) -> Option<u32> {
        let need = u16::try_from(need).ok()?;
        let tables = self.tables.lock();
        let table = tables.get(&relfilenode)?;
        table
            .by_room
            .range((need, 0)..)
            .map(|&(_, blkno)| blkno)
            .find(|&blkno| blkno < nblocks)
    }

    /// Table file `relfilenode` is gone (DROP, TRUNCATE): its entries go.
    pub fn forget(&self, relfilenode: u32) {
        self.tables.lock().remove(&relfilenode);
    }

    /// Pages of table file `relfilenode` on record (for tests and statistics).
    pub fn pages(&self, relfilenode: u32) -> usize {
        self.tables
            .lock()
            .get(&relfilenode)
            .map_or(0, |t| t.by_page.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_fit_below_the_end_and_updates_replace() {
        let fsm = FreeSpaceMap::default();
        fsm.record(7, 0, 4000);
        fsm.record(7, 1, 300);
        fsm.record(7, 2, 1000);
        fsm.record(7, 3, 10); // too little to keep
        assert_eq!(fsm.pages(7), 3);
        assert_eq!(fsm.page_with_room(7, 200, 10), Some(1));
        assert_eq!(fsm.page_with_room(7, 301, 10), Some(2));
        assert_eq!(fsm.page_with_room(7, 5000, 10), None);
        assert_eq!(fsm.page_with_room(7, 2000, 10), Some(0));
        assert_eq!(
            fsm.page_with_room(7, 2000, 0),
            None,
            "pages past the end are skipped"
        );
        assert_eq!(fsm.page_with_room(8, 10, 10), None, "another table");
        // Page 1 filled up; page 2 has less now.
        fsm.record(7, 1, 0);
        fsm.record(7, 2, 250);
        assert_eq!(fsm.page_with_room(7, 200, 10), Some(2));
        assert_eq!(fsm.pages(7), 2);
        fsm.forget(7);
        assert_eq!(fsm.page_with_room(7, 1, 10), None);
    }
}
