//! Unit tests of the B-tree: bottom-up builds, range scans against a model, inserts with
//! splits, and builds from a real heap with the maintenance hook.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use iolab_catalog::{ColumnDef, IndexDef, Persistence, PgResult, PgType};
use iolab_settings::IoMethod;

use super::build::BtreeLoader;
use super::key::{self, Key, KeyKind};
use super::page::{self, check_page, BtOpaque, PAGE_CAPACITY, P_NONE};
use super::{BtreeIndex, IndexMaintainer, Tid};
use crate::accounting::IoAccount;
use crate::aio::{AioConfig, AioSystem};
use crate::buffer::BufferPool;
use crate::exec::context::StreamSettings;
use crate::exec::StatementContext;
use crate::heap::codec::Datum;
use crate::heap::heapam::HeapInserter;
use crate::storage::page as slotted;
use crate::storage::relfile::tests::TempDir;
use crate::storage::relfile::RelFile;
use crate::stream::ReadStreamConfig;

/// xorshift64*: deterministic, no dependency.
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

struct Fixture {
    _dir: TempDir,
    index: BtreeIndex,
}

fn fixture(tag: &str, ty: PgType, nbuffers: usize) -> Fixture {
    let dir = TempDir::new(tag);
    let pool = BufferPool::new(nbuffers);
    let rel = Arc::new(RelFile::open(&dir.0, 16500).unwrap());
    Fixture {
        index: BtreeIndex::new(pool, rel, &[ty], "test_idx"),
        _dir: dir,
    }
}

/// A fixture whose index does not deduplicate (`deduplicate_items = off`).
fn plain_fixture(tag: &str, ty: PgType, nbuffers: usize) -> Fixture {
    let mut f = fixture(tag, ty, nbuffers);
    f.index.deduplicate = false;
    f
}

/// One-column entries as the insertion takes them.
fn rows(entries: &[(Key<'static>, Tid)]) -> Vec<(Vec<Key<'static>>, Tid)> {
    (entries.iter())
        .map(|(k, tid)| (vec![k.clone()], *tid))
        .collect()
}

/// Loads `entries` (sorted here) bottom-up.
fn load(index: &BtreeIndex, entries: &mut [(Key<'static>, Tid)]) -> super::LoadStats {
    sort_model(index.columns.kind(0), entries);
    let mut acct = IoAccount::default();
    let mut loader = BtreeLoader::new(index, "t", &mut acct).unwrap();
    for (k, tid) in entries.iter() {
        loader.add(std::slice::from_ref(k), *tid).unwrap();
    }
    loader.finish().unwrap()
}

fn sort_model(kind: KeyKind, entries: &mut [(Key<'static>, Tid)]) {
    entries.sort_by(|a, b| key::compare(kind, &a.0, &b.0).then(a.1.cmp(&b.1)));
}

/// What a range scan must return: the model's entries within the bounds, in order.
fn expected_range(
    kind: KeyKind,
    model: &[(Key<'static>, Tid)],
    lower: &Bound<Key>,
    upper: &Bound<Key>,
) -> Vec<Tid> {
    model
        .iter()
        .filter(|(k, _)| !k.is_null())
        .filter(|(k, _)| match lower {
            Bound::Unbounded => true,
            Bound::Included(l) => key::compare(kind, k, l) != Ordering::Less,
            Bound::Excluded(l) => key::compare(kind, k, l) == Ordering::Greater,
        })
        .filter(|(k, _)| match upper {
            Bound::Unbounded => true,
            Bound::Included(u) => key::compare(kind, k, u) != Ordering::Greater,
            Bound::Excluded(u) => key::compare(kind, k, u) == Ordering::Less,
        })
        .map(|(_, t)| *t)
        .collect()
}

fn scan(index: &BtreeIndex, lower: Bound<Datum>, upper: Bound<Datum>) -> Vec<Tid> {
    let mut acct = IoAccount::default();
    index
        .scan_range(lower, upper, &mut acct)
        .unwrap()
        .collect::<PgResult<Vec<_>>>()
        .unwrap()
}

fn int_datum(b: Bound<i64>) -> Bound<Datum<'static>> {
    b.map(|v| Datum::Int4(v as i32))
}

fn int_key(b: Bound<i64>) -> Bound<Key<'static>> {
    b.map(Key::Int)
}

/// Compares int4 range scans with the model for a set of bounds.
fn assert_int_ranges(index: &BtreeIndex, model: &[(Key<'static>, Tid)], max_key: i64) {
    use Bound::*;
    let mut bounds = vec![
        (Unbounded, Unbounded),
        (Included(100), Excluded(200)),
        (Unbounded, Included(0)),
        (Excluded(max_key - 2), Unbounded),
        (Included(max_key / 2), Included(max_key / 2)),
        (Included(10), Excluded(10)),
        (Included(50), Included(40)),
        (Excluded(-1000), Excluded(1)),
        (Included(max_key + 5), Unbounded),
    ];
    let mut rng = Rng(7);
    for _ in 0..20 {
        let a = rng.below(max_key as u64 + 1) as i64;
        let b = a + rng.below(200) as i64;
        bounds.push((Included(a), Excluded(b)));
        bounds.push((Excluded(a), Included(b)));
    }
    for (lo, hi) in bounds {
        let want = expected_range(KeyKind::Int, model, &int_key(lo), &int_key(hi));
        let got = scan(index, int_datum(lo), int_datum(hi));
        assert_eq!(got.len(), want.len(), "range {lo:?} .. {hi:?}");
        assert_eq!(got, want, "range {lo:?} .. {hi:?}");
        let mut acct = IoAccount::default();
        let backward: Vec<Tid> = index
            .scan_range_backward(int_datum(lo), int_datum(hi), &mut acct)
            .unwrap()
            .collect::<PgResult<_>>()
            .unwrap();
        let reversed: Vec<Tid> = want.iter().rev().copied().collect();
        assert_eq!(backward, reversed, "range {lo:?} .. {hi:?} backward");
    }
    // A NULL bound matches nothing; nulls come from scan_nulls, in TID order.
    assert!(scan(index, Included(Datum::Null), Unbounded).is_empty());
    let mut acct = IoAccount::default();
    let nulls: Vec<Tid> = index
        .scan_nulls(&mut acct)
        .unwrap()
        .collect::<PgResult<_>>()
        .unwrap();
    let want: Vec<Tid> = model
        .iter()
        .filter(|(k, _)| k.is_null())
        .map(|(_, t)| *t)
        .collect();
    assert_eq!(nulls, want);
    let all: Vec<Tid> = index
        .scan_all(&mut acct)
        .unwrap()
        .collect::<PgResult<_>>()
        .unwrap();
    assert_eq!(all, model.iter().map(|(_, t)| *t).collect::<Vec<_>>());
    let backward: Vec<Tid> = index
        .scan_all_backward(&mut acct)
        .unwrap()
        .collect::<PgResult<_>>()
        .unwrap();
    assert_eq!(backward, all.iter().rev().copied().collect::<Vec<_>>());
    // Returning keys, each TID comes with its entry's own key, both ways.
    let keyed = index.clone().returning_keys();
    assert_eq!(keyed_entries(keyed.scan_all(&mut acct).unwrap()), model);
    let reversed: Vec<_> = model.iter().rev().cloned().collect();
    assert_eq!(
        keyed_entries(keyed.scan_all_backward(&mut acct).unwrap()),
        reversed
    );
}

/// What a scan of an index returning keys returns, as (key, TID) entries.
fn keyed_entries(mut scan: super::scan::BtreeScan) -> Vec<(Key<'static>, Tid)> {
    let mut entries = Vec::new();
    let mut key = Vec::new();
    while let Some(entry) = scan.next_with_key(&mut key) {
        let tid = entry.unwrap();
        assert_eq!(key.len(), 1, "one key column");
        entries.push((key[0].clone(), tid));
    }
    entries
}

/// Every page of the index: a sane B-tree page or the meta page, leaves not overfull.
fn assert_page_invariants(index: &BtreeIndex) {
    let mut acct = IoAccount::default();
    for blkno in 0..index.nblocks() {
        let buf = index.read(blkno, &mut acct).unwrap();
        let page = buf.page();
        assert!(slotted::page_header_is_valid(&page), "block {blkno}");
        if blkno == page::METAPAGE {
            page::BtMeta::read(&page, "t").unwrap();
            continue;
        }
        let opaque: BtOpaque = check_page(&page, blkno, "t").unwrap();
        let h = slotted::PageHeader::read(&page);
        assert_eq!(h.pd_special as usize, page::SPECIAL_AT);
        assert!(
            (h.pd_upper - h.pd_lower) as usize <= PAGE_CAPACITY,
            "block {blkno}"
        );
        assert_eq!(opaque.next == P_NONE, opaque.is_rightmost());
    }
}

fn random_int_entries(
    rng: &mut Rng,
    n: usize,
    max_key: u64,
    first_tid: usize,
) -> Vec<(Key<'static>, Tid)> {
    (0..n)
        .map(|i| {
            let i = first_tid + i;
            let key = if rng.below(100) == 0 {
                Key::Null
            } else {
                Key::Int(rng.below(max_key + 1) as i64)
            };
            (key, ((i / 200) as u32, (i % 200) as u16 + 1))
        })
        .collect()
}

#[test]
fn build_from_sorted_input_with_duplicates_and_nulls() {
    // 100 000 entries of 5 000 keys: about 20 of each, 1 % NULL.
    let mut rng = Rng(0x1234_5678);
    let mut model = random_int_entries(&mut rng, 100_000, 4999, 0);
    let plain = plain_fixture("btree-build-plain", PgType::Int4, 256);
    let f = fixture("btree-build", PgType::Int4, 256);
    let mut leaves = Vec::new();
    for (f, per_leaf_range) in [(&plain, 330..=380), (&f, 950..=1100)] {
        let stats = load(&f.index, &mut model);
        assert_eq!(stats.entries, 100_000);
        assert!(stats.height >= 2, "{stats:?}");
        // Plain int4 leaf entries cost 20 bytes; 90 % leaf fill is about 366 entries a
        // page. Deduplicated, a key's 20 entries cost one 140-byte posting list tuple.
        let per_leaf = 100_000 / stats.leaf_pages;
        assert!(per_leaf_range.contains(&per_leaf), "{stats:?}");
        assert_eq!(
            f.index.nblocks() as u64,
            1 + stats.leaf_pages + stats.internal_pages
        );
        let mut acct = IoAccount::default();
        let report = f.index.check_structure(&mut acct).unwrap();
        assert_eq!(report.entries, 100_000);
        assert_eq!(report.leaf_pages, stats.leaf_pages);
        assert_eq!(report.height, stats.height);
        assert_page_invariants(&f.index);
        assert_int_ranges(&f.index, &model, 4999);
        let meta = f.index.meta(&mut acct).unwrap();
        assert!(meta.allequalimage, "int4 keys allow deduplication");
        leaves.push(stats.leaf_pages);
    }
    assert!(
        leaves[1] * 2 < leaves[0],
        "leaf pages plain and deduplicated: {leaves:?}"
    );
    // Scans read through the pool: a cold range read some pages, all counted.
    let mut acct = IoAccount::default();
    let n = f
        .index
        .scan_range(
            Bound::Included(Datum::Int4(0)),
            Bound::Excluded(Datum::Int4(140)),
            &mut acct,
        )
        .unwrap()
        .count();
    assert!(n > 0);
    assert!(acct.usage.shared_hit + acct.usage.shared_read > 2);
}

#[test]
fn empty_and_single_page_builds() {
    let f = fixture("btree-empty", PgType::Int8, 32);
    let stats = load(&f.index, &mut []);
    assert_eq!((stats.height, stats.entries), (0, 0));
    assert_eq!(f.index.nblocks(), 1);
    assert!(scan(&f.index, Bound::Unbounded, Bound::Unbounded).is_empty());
    let mut acct = IoAccount::default();
    assert_eq!(f.index.check_structure(&mut acct).unwrap().entries, 0);

    let f = fixture("btree-one", PgType::Int8, 32);
    let mut model: Vec<(Key<'static>, Tid)> = (0..10)
        .map(|i| (Key::Int(9 - i), (0, i as u16 + 1)))
        .collect();
    let stats = load(&f.index, &mut model);
    assert_eq!((stats.height, stats.leaf_pages, stats.root), (1, 1, 1));
    assert_eq!(
        scan(
            &f.index,
            Bound::Included(Datum::Int8(3)),
            Bound::Excluded(Datum::Int2(5))
        ),
        vec![(0, 7), (0, 6)]
    );
}

thread_local! {
    /// Makes the next splits stop after their own record, as a crash there would: the
    /// separator never reaches the parent (`insert.rs`).
    pub(super) static CRASH_AFTER_SPLIT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Pages whose split is incomplete (their right half has no downlink).
fn incomplete_splits(index: &BtreeIndex) -> Vec<u32> {
    let mut acct = IoAccount::default();
    (1..index.nblocks())
        .filter(|&blkno| {
            let buf = index.read(blkno, &mut acct).unwrap();
            let page = buf.page();
            check_page(&page, blkno, "t").unwrap().is_incomplete_split()
        })
        .collect()
}

/// Inserts `(key, tid)` one at a time from `next` until a page splits with
/// [`CRASH_AFTER_SPLIT`] set: an index with one split a crash cut short.
fn split_and_crash(index: &BtreeIndex, model: &mut Vec<(Key<'static>, Tid)>, key: i64) {
    let mut acct = IoAccount::default();
    let blocks = index.nblocks();
    CRASH_AFTER_SPLIT.with(|c| c.set(true));
    while index.nblocks() == blocks {
        let tid = (900_000 + model.len() as u32, 1);
        let entry = vec![(Key::Int(key), tid)];
        index
            .insert_entries(&mut rows(&entry), "t", &mut acct)
            .unwrap();
        model.push((Key::Int(key), tid));
    }
    CRASH_AFTER_SPLIT.with(|c| c.set(false));
    assert_eq!(incomplete_splits(index).len(), 1);
}

/// A split a crash interrupted between its record and the separator's (PostgreSQL's
/// incomplete split): scans still find everything by moving right, and the next insert
/// that passes the page finishes the split — for a leaf under an internal page, and for a
/// root that split (the new root is made then).
#[test]
fn an_incomplete_split_is_finished_by_the_next_insert_that_passes_it() {
    for (entries, what) in [(20_000, "leaf"), (300, "root")] {
        let f = plain_fixture("btree-incomplete", PgType::Int4, 256);
        let mut rng = Rng(5);
        let mut model: Vec<_> = (0..entries)
            .map(|i| (Key::Int(rng.below(10_000) as i64), (i as u32, 1)))
            .collect();
        load(&f.index, &mut model);
        let mut acct = IoAccount::default();
        let height = f.index.check_structure(&mut acct).unwrap().height;
        assert_eq!(height, if what == "root" { 1 } else { 2 }, "{what}");
        split_and_crash(&f.index, &mut model, 5_000);
        sort_model(KeyKind::Int, &mut model);
        assert_int_ranges(&f.index, &model, 10_000);
        // A valid state (as amcheck allows): the right half is reached by moving right.
        let report = f.index.check_structure(&mut acct).unwrap();
        assert_eq!(report.entries as usize, model.len(), "{what}");

        let more = vec![
            (Key::Int(5_000), (950_000, 1)),
            (Key::Int(9_999), (950_001, 1)),
        ];
        model.extend(more.iter().cloned());
        f.index
            .insert_entries(&mut rows(&more), "t", &mut acct)
            .unwrap();
        assert_eq!(incomplete_splits(&f.index), Vec::<u32>::new(), "{what}");
        let report = f.index.check_structure(&mut acct).unwrap();
        assert_eq!(report.entries as usize, model.len());
        let expected_height = if what == "root" { 2 } else { height };
        assert_eq!(report.height, expected_height, "{what}");
        sort_model(KeyKind::Int, &mut model);
        assert_int_ranges(&f.index, &model, 10_000);
        assert_page_invariants(&f.index);
    }
}

/// A block the file was extended by for a split whose record a crash lost stays all
/// zeros and unlinked; VACUUM's pass over every block skips it (as PostgreSQL's does).
#[test]
fn vacuum_skips_a_block_a_crash_left_zeroed() {
    let f = plain_fixture("btree-zero-block", PgType::Int4, 64);
    let mut model = random_int_entries(&mut Rng(3), 3000, 999, 0);
    load(&f.index, &mut model);
    let mut acct = IoAccount::default();
    let (zeroed, buffer) = f
        .index
        .pool
        .new_block(&f.index.rel, None, &mut acct)
        .unwrap();
    drop(buffer);
    assert_eq!(zeroed + 1, f.index.nblocks());
    let mut dead: Vec<Tid> = model.iter().step_by(3).map(|(_, tid)| *tid).collect();
    dead.sort_unstable();
    let vacuumed = f.index.bulk_delete(&dead, None, &mut acct).unwrap();
    assert_eq!(vacuumed.removed as usize, dead.len());
    let report = f.index.check_structure(&mut acct).unwrap();
    assert_eq!(report.entries as usize, model.len() - dead.len());
}

#[test]
fn inserts_after_a_build_split_pages_and_keep_scans_right() {
    // Plain, and deduplicated: full leaves are deduplicated before they split.
    for (f, min_new_pages) in [
        (plain_fixture("btree-insert-plain", PgType::Int4, 128), 100),
        (fixture("btree-insert", PgType::Int4, 128), 30),
    ] {
        let mut rng = Rng(99);
        let mut model = random_int_entries(&mut rng, 20_000, 999, 0);
        load(&f.index, &mut model);
        let blocks_before = f.index.nblocks();
        let mut next_tid = 20_000;
        for batch in 0..60 {
            let mut entries = random_int_entries(&mut rng, 1000, 1099, next_tid);
            next_tid += 1000;
            // Some keys below the built range too.
            for e in entries.iter_mut().step_by(7) {
                if let Key::Int(k) = &mut e.0 {
                    *k -= 100;
                }
            }
            model.extend(entries.iter().cloned());
            let mut acct = IoAccount::default();
            f.index
                .insert_entries(&mut rows(&entries), "t", &mut acct)
                .unwrap();
            assert!(acct.usage.shared_hit > 0);
            if batch % 20 == 19 {
                let report = f.index.check_structure(&mut acct).unwrap();
                assert_eq!(report.entries as usize, model.len());
            }
        }
        assert!(
            f.index.nblocks() > blocks_before + min_new_pages,
            "pages were split: {blocks_before} → {}",
            f.index.nblocks()
        );
        sort_model(KeyKind::Int, &mut model);
        let mut acct = IoAccount::default();
        let report = f.index.check_structure(&mut acct).unwrap();
        assert_eq!(report.entries, 80_000);
        assert_page_invariants(&f.index);
        assert_int_ranges(&f.index, &model, 1099);
        // A duplicate (key, TID) is refused.
        let dup = vec![model[5].clone()];
        assert!(f
            .index
            .insert_entries(&mut rows(&dup), "t", &mut acct)
            .is_err());
    }
}

/// Posting list tuples on the index's leaves: (count, TIDs in them).
fn posting_lists(index: &BtreeIndex) -> (usize, usize) {
    let mut acct = IoAccount::default();
    let (mut lists, mut tids) = (0, 0);
    for blkno in 1..index.nblocks() {
        let buf = index.read(blkno, &mut acct).unwrap();
        let page = buf.page();
        let opaque = check_page(&page, blkno, "t").unwrap();
        if !opaque.is_leaf() {
            continue;
        }
        for off in page::first_data_offset(&opaque)..=slotted::page_max_offset(&page) {
            let t = page::tuple_at(&page, off).unwrap();
            if t.is_posting() {
                lists += 1;
                tids += t.n_heap_tids();
            }
        }
    }
    (lists, tids)
}

#[test]
fn inserts_inside_posting_lists_split_them() {
    // Built from the rows of even heap blocks, ten keys: long posting lists. The rows of
    // the odd blocks, inserted afterwards in shuffled batches, all fall inside them.
    let f = fixture("btree-posting-split", PgType::Int4, 256);
    let entry = |block: u32, off: u16| {
        (
            Key::Int(((block * 7 + off as u32) % 10) as i64),
            (block, off),
        )
    };
    let mut model: Vec<(Key<'static>, Tid)> = (0..400u32)
        .step_by(2)
        .flat_map(|b| (1..=50u16).map(move |o| (b, o)))
        .map(|(b, o)| entry(b, o))
        .collect();
    load(&f.index, &mut model);
    let (lists, in_lists) = posting_lists(&f.index);
    assert!(
        lists > 50 && in_lists > 9_000,
        "{lists} lists of {in_lists} TIDs"
    );
    let mut odd: Vec<(Key<'static>, Tid)> = (1..400u32)
        .step_by(2)
        .flat_map(|b| (1..=50u16).map(move |o| (b, o)))
        .map(|(b, o)| entry(b, o))
        .collect();
    let mut rng = Rng(7);
    for i in (1..odd.len()).rev() {
        odd.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut acct = IoAccount::default();
    for batch in odd.chunks(500) {
        model.extend(batch.iter().cloned());
        f.index
            .insert_entries(&mut rows(&batch.to_vec()), "t", &mut acct)
            .unwrap();
    }
    sort_model(KeyKind::Int, &mut model);
    let report = f.index.check_structure(&mut acct).unwrap();
    assert_eq!(report.entries, 20_000);
    assert_page_invariants(&f.index);
    assert_int_ranges(&f.index, &model, 9);
    let (lists, in_lists) = posting_lists(&f.index);
    assert!(
        in_lists > 15_000,
        "{lists} lists of {in_lists} TIDs after the inserts"
    );
    // A TID already inside a posting list is refused, and changes nothing.
    let dup = vec![entry(10, 3)];
    assert!(f
        .index
        .insert_entries(&mut rows(&dup), "t", &mut acct)
        .is_err());
    assert_eq!(f.index.check_structure(&mut acct).unwrap().entries, 20_000);
}

#[test]
fn float_and_numeric_keys_are_not_deduplicated() {
    for ty in [
        PgType::Float8,
        PgType::Numeric {
            precision: 10,
            scale: 2,
        },
    ] {
        let f = fixture("btree-no-dedup", ty, 64);
        let key = |i: i64| match ty {
            PgType::Float8 => Key::Float((i % 3) as f64),
            _ => Key::Numeric((i % 3) as i128 * 100),
        };
        let mut model: Vec<(Key<'static>, Tid)> = (0..3000)
            .map(|i| (key(i), ((i / 100) as u32, (i % 100) as u16 + 1)))
            .collect();
        load(&f.index, &mut model);
        let more: Vec<(Key<'static>, Tid)> = (3000..6000)
            .map(|i| (key(i), ((i / 100) as u32, (i % 100) as u16 + 1)))
            .collect();
        let mut acct = IoAccount::default();
        f.index
            .insert_entries(&mut rows(&more), "t", &mut acct)
            .unwrap();
        assert_eq!(posting_lists(&f.index), (0, 0), "{ty:?}");
        assert!(!f.index.meta(&mut acct).unwrap().allequalimage);
        assert_eq!(f.index.check_structure(&mut acct).unwrap().entries, 6000);
    }
}

#[test]
fn ascending_inserts_into_an_empty_index_leave_full_pages() {
    let f = fixture("btree-ascending", PgType::Int8, 64);
    load(&f.index, &mut []);
    let mut model = Vec::new();
    for batch in 0..100 {
        let entries: Vec<(Key<'static>, Tid)> = (0..500)
            .map(|i| {
                let n = batch * 500 + i;
                (Key::Int(n as i64), ((n / 100) as u32, (n % 100) as u16 + 1))
            })
            .collect();
        model.extend(entries.iter().cloned());
        let mut acct = IoAccount::default();
        f.index
            .insert_entries(&mut rows(&entries), "t", &mut acct)
            .unwrap();
    }
    let mut acct = IoAccount::default();
    let report = f.index.check_structure(&mut acct).unwrap();
    assert_eq!(report.entries, 50_000);
    // int8 entries cost 20 bytes (407 a page); rightmost splits keep 90 %: ~365 a leaf.
    let per_leaf = 50_000 / report.leaf_pages;
    assert!((330..=380).contains(&per_leaf), "{report:?}");
    assert!(report.height >= 2);
    assert_int_ranges_i8(&f.index, &model);
}

fn assert_int_ranges_i8(index: &BtreeIndex, model: &[(Key<'static>, Tid)]) {
    let got = scan(
        index,
        Bound::Included(Datum::Int8(12_345)),
        Bound::Included(Datum::Int8(23_456)),
    );
    let want = expected_range(
        KeyKind::Int,
        model,
        &Bound::Included(Key::Int(12_345)),
        &Bound::Included(Key::Int(23_456)),
    );
    assert_eq!(got, want);
}

fn text_key(rng: &mut Rng) -> Key<'static> {
    let len = 200 + rng.below(1600) as usize;
    let first = b'a' + rng.below(26) as u8;
    let mut s = vec![first; len];
    for b in s.iter_mut().skip(1).take(8) {
        *b = b'a' + rng.below(26) as u8;
    }
    Key::Text(Cow::Owned(s))
}

#[test]
fn long_text_keys_make_deep_trees_that_split_everywhere() {
    let f = fixture("btree-text", PgType::Text, 256);
    let mut rng = Rng(5);
    let mut model: Vec<(Key<'static>, Tid)> = (0..3000)
        .map(|i| (text_key(&mut rng), (i as u32, 1)))
        .collect();
    let stats = load(&f.index, &mut model);
    assert!(stats.height >= 3, "{stats:?}");
    for batch in 0..30 {
        let entries: Vec<(Key<'static>, Tid)> = (0..100)
            .map(|i| (text_key(&mut rng), (10_000 + batch * 100 + i as u32, 1)))
            .collect();
        model.extend(entries.iter().cloned());
        let mut acct = IoAccount::default();
        f.index
            .insert_entries(&mut rows(&entries), "t", &mut acct)
            .unwrap();
    }
    sort_model(KeyKind::Text, &mut model);
    let mut acct = IoAccount::default();
    let report = f.index.check_structure(&mut acct).unwrap();
    assert_eq!(report.entries, 6000);
    assert!(report.height >= 3);
    assert_page_invariants(&f.index);
    for (lo, hi) in [("b", "d"), ("m", "mm"), ("a", "zzzz"), ("q", "q")] {
        let got = scan(
            &f.index,
            Bound::Included(Datum::Text(lo)),
            Bound::Excluded(Datum::Text(hi)),
        );
        let want = expected_range(
            KeyKind::Text,
            &model,
            &Bound::Included(Key::Text(Cow::Borrowed(lo.as_bytes()))),
            &Bound::Excluded(Key::Text(Cow::Borrowed(hi.as_bytes()))),
        );
        assert_eq!(got, want, "{lo}..{hi}");
    }
    let keyed = f.index.clone().returning_keys();
    let mut acct = IoAccount::default();
    let all = keyed_entries(keyed.scan_all(&mut acct).unwrap());
    assert_eq!(all, model, "text keys come back whole");
}

#[test]
fn keys_over_a_third_of_a_page_are_refused() {
    let f = fixture("btree-big", PgType::Text, 32);
    load(&f.index, &mut []);
    let entries = vec![(Key::Text(Cow::Owned(vec![b'x'; 3000])), (4, 2))];
    let mut acct = IoAccount::default();
    let e = f
        .index
        .insert_entries(&mut rows(&entries), "t", &mut acct)
        .unwrap_err();
    assert_eq!(e.code, "54000");
    assert_eq!(
        e.message,
        "index row size 3016 exceeds btree version 4 maximum 2704 for index \"test_idx\""
    );
    assert_eq!(
        e.detail.as_deref(),
        Some("Index row references tuple (4,2) in relation \"t\".")
    );
}

#[test]
fn float_keys_order_zeroes_and_nan_like_postgres() {
    let f = fixture("btree-float", PgType::Float8, 32);
    let values = [
        f64::NAN,
        1.5,
        -0.0,
        0.0,
        f64::NEG_INFINITY,
        f64::INFINITY,
        -2.0,
    ];
    let mut model: Vec<(Key<'static>, Tid)> = values
        .iter()
        .enumerate()
        .map(|(i, v)| (Key::Float(*v), (0, i as u16 + 1)))
        .collect();
    load(&f.index, &mut model);
    // 0 ≤ a ≤ 0 finds both zeroes; a > +inf finds NaN (as in PostgreSQL).
    assert_eq!(
        scan(
            &f.index,
            Bound::Included(Datum::Float8(0.0)),
            Bound::Included(Datum::Float8(-0.0))
        ),
        vec![(0, 3), (0, 4)]
    );
    assert_eq!(
        scan(
            &f.index,
            Bound::Excluded(Datum::Float8(f64::INFINITY)),
            Bound::Unbounded
        ),
        vec![(0, 1)]
    );
    assert_eq!(
        scan(&f.index, Bound::Unbounded, Bound::Excluded(Datum::Int4(0))),
        vec![(0, 5), (0, 7)]
    );
}

/// A real table: rows inserted before CREATE INDEX are built in, rows inserted after go
/// through the maintenance hook, rows of an aborted insert are tolerated by the check.
#[test]
fn builds_from_a_heap_and_maintains_on_insert() {
    use crate::db::{Database, DatabaseOptions};
    use datafusion::arrow::array::{ArrayRef, Int32Array, StringArray};

    let dir = TempDir::new("btree-heap");
    let mut options = DatabaseOptions {
        shared_buffers: 256,
        ..DatabaseOptions::default()
    };
    options.aio.method = iolab_settings::IoMethod::Sync;
    let db = Database::open(&dir.0, &options).unwrap();
    let table = db
        .catalog
        .create_table(
            "public",
            "t",
            Persistence::Permanent,
            vec![
                ColumnDef {
                    name: "a".into(),
                    ty: PgType::Int4,
                    not_null: false,
                },
                ColumnDef {
                    name: "filler".into(),
                    ty: PgType::Text,
                    not_null: false,
                },
            ],
            false,
        )
        .unwrap()
        .unwrap();
    db.create_relation_file(&table).unwrap();
    let ctx = |xid| StatementContext::for_tests(&db, xid);
    let mut rng = Rng(3);
    let mut insert = |n: usize, commit: bool| {
        let xid = db.txns.begin().unwrap();
        let maintainer = IndexMaintainer::for_table(&Arc::new(ctx(xid)), &table).unwrap();
        let mut inserter = HeapInserter::new(
            db.pool.clone(),
            db.relfile(table.relfilenode).unwrap(),
            vec![PgType::Int4, PgType::Text],
            xid,
            0,
            IoAccount::default(),
        )
        .with_indexes(maintainer);
        for _ in 0..n / 1000 {
            let a: Int32Array = (0..1000)
                .map(|_| (rng.below(50) != 0).then(|| rng.below(10_000) as i32))
                .collect();
            let filler: StringArray = (0..1000).map(|i| Some(format!("row {i}"))).collect();
            let arrays: Vec<ArrayRef> = vec![Arc::new(a), Arc::new(filler)];
            inserter.insert_arrays(&arrays, 1000).unwrap();
        }
        inserter.finish();
        if commit {
            db.txns.commit(xid).unwrap();
        } else {
            db.txns.abort(xid).unwrap();
        }
    };
    insert(30_000, true);
    insert(5_000, false);

    let oid = db.catalog.allocate_oid().unwrap();
    let def = IndexDef {
        oid,
        schema: "public".into(),
        name: "t_a_idx".into(),
        table_oid: table.oid,
        relfilenode: oid,
        columns: vec![0],
        key_types: vec![PgType::Int4],
        unique: false,
        constraint: None,
        persistence: Persistence::Permanent,
        reloptions: Vec::new(),
        clustered: false,
    };
    // A cancelled build leaves neither a file nor a catalog entry.
    let canceled = ctx(0);
    canceled.cancel.cancel();
    let e = super::create_index(&db, &canceled, &table, &def).unwrap_err();
    assert_eq!(e.code, "57014");
    assert!(db.catalog.indexes_of(table.oid).is_empty());
    assert!(!dir.0.join("base").join(oid.to_string()).exists());

    let c = ctx(0);
    let stats = super::create_index(&db, &c, &table, &def).unwrap();
    assert_eq!(stats.entries, 30_000, "the aborted rows are not built in");
    {
        let usage = c.usage.lock();
        assert!(usage.shared_read + usage.shared_hit > 0);
    }
    assert_eq!(db.catalog.indexes_of(table.oid), vec![def.clone()]);

    insert(20_000, true);
    insert(3_000, false);
    let index = BtreeIndex::open(&db, &def).unwrap();
    let source = super::heap_source(&db, &table, &[0], c.stream_config(false, true)).unwrap();
    let mut acct = IoAccount::default();
    let report = index
        .check_against_heap(&source, &mut acct, &|| Ok(()))
        .unwrap();
    assert_eq!(report.entries, 53_000);
    assert_eq!(report.dead_entries, 3_000);

    // TRUNCATE empties it; inserts then start a new root.
    super::truncate_index(&db, &def, &mut acct).unwrap();
    assert_eq!(index.nblocks(), 1);
    assert_eq!(index.check_structure(&mut acct).unwrap().entries, 0);
    super::drop_index_files(&db, &def).unwrap();
    assert!(!dir.0.join("base").join(oid.to_string()).exists());
}

/// Two writers split pages while a reader scans the whole index again and again: every
/// scan must see every entry that existed before it started (entries are never removed),
/// each exactly once, and the tree must check out afterwards (Lehman and Yao at work).
#[test]
fn scans_stay_complete_while_writers_split_pages() {
    let f = fixture("btree-concurrent", PgType::Int4, 512);
    let mut rng = Rng(11);
    let mut model = random_int_entries(&mut rng, 10_000, 2000, 0);
    load(&f.index, &mut model);
    let initial: std::collections::HashSet<Tid> = model.iter().map(|(_, t)| *t).collect();
    let initial_in_range: std::collections::HashSet<Tid> = model
        .iter()
        .filter(|(k, _)| matches!(k, Key::Int(500..=1499)))
        .map(|(_, t)| *t)
        .collect();
    let done = AtomicBool::new(false);
    let aio = start_aio(IoMethod::IoUring);
    std::thread::scope(|s| {
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let index = f.index.clone();
                s.spawn(move || {
                    let mut rng = Rng(100 + w);
                    for batch in 0..20 {
                        let first = 10_000 + (w as usize * 20 + batch) * 1000;
                        let entries = random_int_entries(&mut rng, 1000, 2000, first);
                        let mut acct = IoAccount::default();
                        index
                            .insert_entries(&mut rows(&entries), "t", &mut acct)
                            .unwrap();
                    }
                })
            })
            .collect();
        let reader = s.spawn(|| {
            let mut scans = 0;
            while !done.load(std::sync::atomic::Ordering::Acquire) || scans == 0 {
                let mut acct = IoAccount::default();
                let tids: Vec<Tid> = f
                    .index
                    .scan_all(&mut acct)
                    .unwrap()
                    .collect::<PgResult<_>>()
                    .unwrap();
                let seen: std::collections::HashSet<Tid> = tids.iter().copied().collect();
                assert_eq!(seen.len(), tids.len(), "a TID returned twice");
                assert!(initial.is_subset(&seen), "an entry was missed");
                // Going left while the pages split under the scan.
                let backward: Vec<Tid> = f
                    .index
                    .scan_all_backward(&mut acct)
                    .unwrap()
                    .collect::<PgResult<_>>()
                    .unwrap();
                let seen: std::collections::HashSet<Tid> = backward.iter().copied().collect();
                assert_eq!(
                    seen.len(),
                    backward.len(),
                    "a TID returned twice going left"
                );
                assert!(initial.is_subset(&seen), "an entry was missed going left");
                // A bounded scan descends (and may have to move right) while pages split;
                // read ahead from a snapshot of the parents, the links still decide.
                for read_ahead in [false, true] {
                    let mut scan = f
                        .index
                        .scan_range(
                            Bound::Included(Datum::Int4(500)),
                            Bound::Excluded(Datum::Int4(1500)),
                            &mut acct,
                        )
                        .unwrap();
                    if read_ahead {
                        scan = scan
                            .read_ahead(aio.clone(), read_ahead_config(&f.index))
                            .unwrap();
                    }
                    let ranged: Vec<Tid> = scan.collect::<PgResult<_>>().unwrap();
                    let set: std::collections::HashSet<Tid> = ranged.iter().copied().collect();
                    assert_eq!(
                        set.len(),
                        ranged.len(),
                        "a TID returned twice ({read_ahead})"
                    );
                    assert!(
                        initial_in_range.is_subset(&set),
                        "a range missed an entry (read ahead: {read_ahead})"
                    );
                }
                let ranged: Vec<Tid> = f
                    .index
                    .scan_range_backward(
                        Bound::Included(Datum::Int4(500)),
                        Bound::Excluded(Datum::Int4(1500)),
                        &mut acct,
                    )
                    .unwrap()
                    .collect::<PgResult<_>>()
                    .unwrap();
                let set: std::collections::HashSet<Tid> = ranged.iter().copied().collect();
                assert_eq!(set.len(), ranged.len(), "a TID returned twice going left");
                assert!(
                    initial_in_range.is_subset(&set),
                    "a backward range missed an entry"
                );
                scans += 1;
            }
            scans
        });
        for w in writers {
            w.join().unwrap();
        }
        done.store(true, std::sync::atomic::Ordering::Release);
        assert!(reader.join().unwrap() > 0);
    });
    let mut acct = IoAccount::default();
    let report = f.index.check_structure(&mut acct).unwrap();
    assert_eq!(report.entries, 50_000);
}

/// An I/O system for read-ahead, as the read stream's tests set one up.
fn start_aio(method: IoMethod) -> Arc<AioSystem> {
    let config = AioConfig {
        method,
        io_workers: 2,
        max_concurrency: 64,
        max_issuers: 8,
    };
    AioSystem::start(&config, false, None).unwrap().0
}

/// A session's default read stream, within `index`'s pool's pin budget.
fn read_ahead_config(index: &BtreeIndex) -> ReadStreamConfig {
    StreamSettings::default().stream_config(false, false, index.pool.pin_limit(), 7)
}

/// What a scan of a cold pool returned and read.
#[derive(Debug, PartialEq)]
struct ColdScan {
    tids: Vec<Tid>,
    blocks_read: u64,
    reads: u64,
}

/// Empties the pool, then scans `lower..upper`, reading ahead through `aio` if given;
/// checks that nothing stays pinned afterwards.
fn cold_scan(
    index: &BtreeIndex,
    aio: Option<&Arc<AioSystem>>,
    lower: Bound<i64>,
    upper: Bound<i64>,
) -> ColdScan {
    let mut acct = IoAccount::default();
    index.pool.evict_all(&mut acct).unwrap();
    // As after a restart: the root not known, so both ways read the meta page.
    (index.rel.am_root()).store(0, std::sync::atomic::Ordering::Release);
    let mut acct = IoAccount::default();
    let mut scan = index
        .scan_range(int_datum(lower), int_datum(upper), &mut acct)
        .unwrap();
    if let Some(aio) = aio {
        scan = scan
            .read_ahead(aio.clone(), read_ahead_config(index))
            .unwrap();
    }
    let tids = scan.collect::<PgResult<Vec<_>>>().unwrap();
    assert_eq!(index.pool.stats().pinned, 0, "a pin outlived the scan");
    ColdScan {
        tids,
        blocks_read: acct.usage.shared_read,
        reads: acct.usage.io_reads,
    }
}

/// Internal pages on the level above the leaves.
fn level_one_pages(index: &BtreeIndex) -> u64 {
    let mut acct = IoAccount::default();
    (1..index.rel.nblocks())
        .filter(|&blkno| {
            let buf = index.read(blkno, &mut acct).unwrap();
            let page = buf.page();
            check_page(&page, blkno, &index.name).unwrap().level == 1
        })
        .count() as u64
}

/// The key of a pivot in the middle of the root of a two-level index: the lowest key of
/// its leaf, so a range ending at it ends where a leaf begins.
fn middle_pivot(index: &BtreeIndex) -> i64 {
    let mut acct = IoAccount::default();
    let root = index.meta(&mut acct).unwrap().root;
    let buf = index.read(root, &mut acct).unwrap();
    let page = buf.page();
    let middle = slotted::page_max_offset(&page) / 2;
    match page::tuple_at(&page, middle)
        .unwrap()
        .key(&index.columns)
        .unwrap()[..]
    {
        [Key::Int(k)] => k,
        ref other => panic!("pivot {other:?}"),
    }
}

/// Reading leaves ahead returns what a scan one leaf at a time returns, in far fewer,
/// combined reads, under every I/O method. Under one parent it reads exactly the same
/// blocks (no leaf past the range); across parents, the same plus at most the parents
/// after the first.
#[test]
fn read_ahead_reads_the_same_leaves_in_fewer_reads() {
    use Bound::*;
    let mut rng = Rng(5);
    let one_parent = plain_fixture("btree-read-ahead-1", PgType::Int4, 4096);
    let mut one_parent_model = random_int_entries(&mut rng, 50_000, 20_000, 0);
    load(&one_parent.index, &mut one_parent_model);
    assert_eq!(level_one_pages(&one_parent.index), 1);
    // Ranges that end exactly where a leaf begins must not read that leaf.
    let pivot = middle_pivot(&one_parent.index);
    let parents = plain_fixture("btree-read-ahead-n", PgType::Int4, 4096);
    let mut parents_model = random_int_entries(&mut rng, 400_000, 20_000, 0);
    load(&parents.index, &mut parents_model);
    let level_one = level_one_pages(&parents.index);
    assert!(level_one >= 3, "{level_one} parents");
    for method in [IoMethod::Sync, IoMethod::Worker, IoMethod::IoUring] {
        let aio = start_aio(method);
        for (f, model) in [(&one_parent, &one_parent_model), (&parents, &parents_model)] {
            for (lower, upper) in [
                (Unbounded, Unbounded),
                (Included(100), Excluded(200)),
                (Included(1000), Included(15_000)),
                (Excluded(19_990), Unbounded),
                (Included(7), Included(7)),
                (Unbounded, Excluded(0)),
                (Included(100), Excluded(pivot)),
                (Included(100), Included(pivot - 1)),
                (Included(100), Included(pivot)),
            ] {
                let plain = cold_scan(&f.index, None, lower, upper);
                let ahead = cold_scan(&f.index, Some(&aio), lower, upper);
                let what = format!("{method:?} {} {lower:?}..{upper:?}", f.index.name);
                let expected = expected_range(
                    f.index.columns.kind(0),
                    model,
                    &int_key(lower),
                    &int_key(upper),
                );
                assert_eq!(plain.tids, expected, "{what}");
                assert_eq!(ahead.tids, plain.tids, "{what}");
                if std::ptr::eq(f, &one_parent) {
                    assert_eq!(ahead.blocks_read, plain.blocks_read, "{what}");
                } else {
                    let extra = ahead.blocks_read - plain.blocks_read;
                    assert!(extra < level_one, "{what}: {extra} blocks more");
                }
                if plain.blocks_read > 100 {
                    assert!(
                        ahead.reads * 4 < plain.reads,
                        "{what}: {} reads ahead against {} one at a time",
                        ahead.reads,
                        plain.reads
                    );
                }
            }
        }
    }
}

/// A scan dropped half-way releases its read-ahead's pins and keeps the reads it made.
#[test]
fn a_scan_dropped_early_releases_its_read_ahead() {
    let f = fixture("btree-read-ahead-drop", PgType::Int4, 4096);
    let mut rng = Rng(6);
    let mut model = random_int_entries(&mut rng, 200_000, 20_000, 0);
    load(&f.index, &mut model);
    let aio = start_aio(IoMethod::IoUring);
    let mut acct = IoAccount::default();
    f.index.pool.evict_all(&mut acct).unwrap();
    let mut acct = IoAccount::default();
    {
        let mut scan = f
            .index
            .scan_range(Bound::Unbounded, Bound::Unbounded, &mut acct)
            .unwrap()
            .read_ahead(aio, read_ahead_config(&f.index))
            .unwrap();
        for _ in 0..20_000 {
            scan.next().unwrap().unwrap();
        }
        let pinned = f.index.pool.stats().pinned;
        assert!(
            pinned > 1,
            "leaves pinned ahead: {pinned}, read {}",
            scan.acct().usage.io_reads
        );
    }
    assert_eq!(f.index.pool.stats().pinned, 0);
    assert!(
        acct.usage.shared_read > 3,
        "the reads ahead are in the scan's account"
    );
}

/// A scan started at the leaf `first_leaf` named (what a nested loop's read-ahead does)
/// returns what a scan from the root returns: for keys present, absent, below and above
/// every key, and when the named leaf split before the scan read it (the start moved
/// right of it).
#[test]
fn a_scan_started_at_a_named_leaf_is_a_scan_from_the_root() {
    use Bound::*;
    let f = plain_fixture("btree-named-leaf", PgType::Int4, 256);
    let mut rng = Rng(17);
    let mut model = random_int_entries(&mut rng, 30_000, 3_000, 0);
    load(&f.index, &mut model);
    let keys_for = |k: i32| {
        [super::scan::ColumnKeys::Range(
            Included(Datum::Int4(k)),
            Included(Datum::Int4(k)),
        )]
    };
    let probe = |k: i32, leaf: u32| {
        let mut acct = IoAccount::default();
        let from_root: Vec<Tid> = (f.index.scan(&keys_for(k), false, &mut acct).unwrap())
            .collect::<PgResult<_>>()
            .unwrap();
        let buffer = f.index.read(leaf, &mut acct).unwrap();
        let from_leaf: Vec<Tid> = (f
            .index
            .scan_at_leaf(&keys_for(k), buffer, &mut acct)
            .unwrap())
        .collect::<PgResult<_>>()
        .unwrap();
        (from_root, from_leaf)
    };
    let leaf_of = |k: i32| {
        let mut acct = IoAccount::default();
        let leaf = f.index.first_leaf(&keys_for(k), &mut acct).unwrap();
        leaf.expect("a loaded index has leaves")
    };
    for k in [-5, 0, 1, 7, 1500, 2999, 3000, 3001, 9999] {
        let (from_root, from_leaf) = probe(k, leaf_of(k));
        assert_eq!(from_leaf, from_root, "key {k}");
        let expected = model
            .iter()
            .filter(|(key, _)| *key == Key::Int(k as i64))
            .count();
        assert_eq!(from_root.len(), expected, "key {k}");
    }
    // Name the leaf of key 2000, then fill it until it splits: its entries of 2000 may
    // now be to its right; the scan from the stale leaf still finds them all.
    let stale = leaf_of(2000);
    let more: Vec<(Key<'static>, Tid)> = (0..2000)
        .map(|i: u32| {
            (
                Key::Int(2000 - i64::from(i % 3)),
                (1000 + i / 200, (i % 200) as u16 + 1),
            )
        })
        .collect();
    let mut acct = IoAccount::default();
    f.index
        .insert_entries(&mut rows(&more), "t", &mut acct)
        .unwrap();
    assert_ne!(
        leaf_of(2000),
        stale,
        "the leaf split and its 2000s moved right"
    );
    let (from_root, from_leaf) = probe(2000, stale);
    assert_eq!(from_leaf, from_root);
    assert!(from_root.len() > 600, "{} entries of 2000", from_root.len());
}

/// A scan of a list of keys (`= ANY`) returns each value's entries in turn, ascending:
/// what the per-value scans return, one after the other, for values present, absent,
/// below and above every key. A value whose entries begin on the leaf where the value
/// before ended takes no descent (7 and 8 share a leaf; so do the values past every key).
#[test]
fn a_list_of_keys_is_each_keys_scan_in_turn() {
    use super::scan::ColumnKeys;
    use Bound::*;
    let f = plain_fixture("btree-any-of", PgType::Int4, 256);
    let mut rng = Rng(23);
    let mut model = random_int_entries(&mut rng, 30_000, 3_000, 0);
    load(&f.index, &mut model);
    let mut acct = IoAccount::default();
    let values = [-4, 0, 7, 8, 1499, 2999, 3000, 3001];
    let list: Vec<Datum> = values.iter().map(|v| Datum::Int4(*v)).collect();
    let mut scan = f
        .index
        .scan(&[ColumnKeys::AnyOf(list)], false, &mut acct)
        .unwrap();
    let listed: Vec<Tid> = scan.by_ref().collect::<PgResult<_>>().unwrap();
    let searches = scan.searches();
    assert!(
        (1..values.len() as u64).contains(&searches),
        "{searches} descents for {} values",
        values.len()
    );
    drop(scan);
    let mut each = Vec::new();
    for v in values {
        let one = [ColumnKeys::Range(
            Included(Datum::Int4(v)),
            Included(Datum::Int4(v)),
        )];
        each.extend((f.index.scan(&one, false, &mut acct).unwrap()).map(Result::unwrap));
    }
    assert_eq!(listed, each);
    let expected = (model.iter())
        .filter(|(k, _)| values.iter().any(|v| *k == Key::Int(*v as i64)))
        .count();
    assert_eq!(listed.len(), expected);
    assert!(listed.len() > 20, "{} entries", listed.len());
    // No values: nothing, and no descent.
    let mut empty = f
        .index
        .scan(&[ColumnKeys::AnyOf(vec![])], false, &mut acct)
        .unwrap();
    assert!(empty.next().is_none());
    assert_eq!(empty.searches(), 0);
}
