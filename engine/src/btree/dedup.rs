//! Deduplication: merging leaf tuples of equal keys into posting list tuples.
//!
//! PostgreSQL 13+ keeps one leaf tuple per key and page for as many heap tuples as fit in
//! a size limit: the key once, then the sorted heap TIDs (`page.rs` has the layout). For a
//! column of few distinct values that makes the leaf level two to three times smaller, and
//! a scan of it as many times cheaper. It happens at two moments, each with its own limit:
//!
//! * **CREATE INDEX** (`build.rs`): the sorted entries of one key gather into posting
//!   lists of at most [`BUILD_MAX_POSTING_SIZE`] bytes (a tenth of a page); a key met once
//!   stays a plain tuple.
//! * **Inserting into a full leaf** (`insert.rs`): before the leaf is split, a
//!   deduplication pass merges each run of equal keys on it (plain tuples and posting
//!   lists alike) into posting lists of at most [`DEDUP_MAX_POSTING_SIZE`] bytes; if that
//!   frees room, the new entry goes in without a split.
//!
//! A new entry whose heap TID falls inside an existing posting list's range cannot go
//! beside it (items are ordered by (key, TID)); PostgreSQL's *posting list split* takes
//! the new TID into the list and moves the list's largest TID out as the new item, which
//! then goes right after the list ([`split_posting`]). The list keeps its size, so the
//! page's free space decides as for any insertion.
//!
//! Only keys whose equal values are equal bytes are merged (`KeyKind::equal_image`), so
//! "same key" is a byte comparison ([`IndexTuple::same_key_image`]).
//!
//! [`BUILD_MAX_POSTING_SIZE`]: super::page::BUILD_MAX_POSTING_SIZE
//! [`DEDUP_MAX_POSTING_SIZE`]: super::page::DEDUP_MAX_POSTING_SIZE

use iolab_catalog::PgResult;

use super::key::KeyColumns;
use super::page::{form_leaf, form_leaf_with, posting_size, IndexTuple, MAX_POSTING_TIDS};
use super::Tid;

/// Leaf tuples of one key gathering into one posting list tuple.
pub struct PostingRun {
    /// The run's first tuple (its key, and its size without a posting list).
    first: Vec<u8>,
    tids: Vec<Tid>,
}

impl PostingRun {
    /// A run starting with leaf tuple `t` (plain or posting).
    pub fn new(t: &IndexTuple) -> PostingRun {
        PostingRun {
            first: t.bytes.to_vec(),
            tids: t.heap_tids().collect(),
        }
    }

    /// Takes `t`'s heap TIDs into the run if `t` has the run's key and the merged tuple
    /// stays within `max_size` bytes; false (and nothing changes) otherwise. `t` must
    /// follow the run in (key, TID) order.
    pub fn try_add(&mut self, t: &IndexTuple, max_size: usize) -> bool {
        let first = IndexTuple { bytes: &self.first };
        let ntids = self.tids.len() + t.n_heap_tids();
        if !first.same_key_image(t)
            || ntids > MAX_POSTING_TIDS
            || posting_size(first.base_size(), ntids) > max_size
        {
            return false;
        }
        let next = t.heap_tid().expect("leaf tuples have TIDs");
        assert!(
            *self.tids.last().expect("runs are not empty") < next,
            "tuples reach a posting run out of TID order"
        );
        self.tids.extend(t.heap_tids());
        true
    }

    /// The run as one leaf tuple: the first tuple itself when nothing joined it.
    pub fn finish(self, columns: &KeyColumns) -> PgResult<Vec<u8>> {
        let first = IndexTuple::parse(&self.first)?;
        if first.n_heap_tids() == self.tids.len() {
            return Ok(self.first);
        }
        let key = first.key(columns)?;
        Ok(form_leaf_with(columns, &key, &self.tids))
    }
}

/// A deduplication pass over a leaf's data items (in order): each run of equal keys
/// merged into posting lists of at most `max_size` bytes. The result has fewer items
/// than `items` exactly when something was merged.
pub fn deduplicate_items(
    columns: &KeyColumns,
    items: &[Vec<u8>],
    max_size: usize,
) -> PgResult<Vec<Vec<u8>>> {
    let mut out = Vec::with_capacity(items.len());
    let mut run: Option<PostingRun> = None;
    for item in items {
        let t = IndexTuple::parse(item)?;
        if let Some(r) = &mut run {
            if r.try_add(&t, max_size) {
                continue;
            }
            out.push(run.take().expect("just matched").finish(columns)?);
        }
        run = Some(PostingRun::new(&t));
    }
    if let Some(r) = run {
        out.push(r.finish(columns)?);
    }
    Ok(out)
}

/// PostgreSQL's posting list split: `posting` (a posting list tuple) and a new heap TID
/// `tid` inside its range but not in it. Returns the list with `tid` in and its largest
/// TID out (same size), and the plain tuple of that largest TID, which goes right after.
pub fn split_posting(
    columns: &KeyColumns,
    posting: &IndexTuple,
    tid: Tid,
) -> PgResult<(Vec<u8>, Vec<u8>)> {
    assert!(posting.is_posting());
    let key = posting.key(columns)?;
    let mut tids: Vec<Tid> = posting.heap_tids().collect();
    let at = tids.partition_point(|u| *u < tid);
    assert!(
        at > 0 && at < tids.len() && tids[at] != tid,
        "a posting list split needs a new TID inside the list's range"
    );
    tids.insert(at, tid);
    let largest = tids.pop().expect("not empty");
    let list = form_leaf_with(columns, &key, &tids);
    debug_assert_eq!(list.len(), posting.bytes.len());
    Ok((list, form_leaf(columns, &key, largest)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_catalog::PgType;

    fn cols(ty: PgType) -> crate::btree::KeyColumns {
        crate::btree::KeyColumns::new(&[ty])
    }
    use crate::btree::key::Key;
    use crate::btree::page::{BUILD_MAX_POSTING_SIZE, DEDUP_MAX_POSTING_SIZE};

    fn leaf(k: Option<i64>, tid: Tid) -> Vec<u8> {
        form_leaf(&cols(PgType::Int4), &[k.map_or(Key::Null, Key::Int)], tid)
    }

    fn tids_of(items: &[Vec<u8>]) -> Vec<Vec<Tid>> {
        items
            .iter()
            .map(|i| IndexTuple::parse(i).unwrap().heap_tids().collect())
            .collect()
    }

    #[test]
    fn a_pass_merges_runs_of_equal_keys_and_keeps_singles() {
        let items = vec![
            leaf(Some(1), (0, 1)),
            leaf(Some(2), (0, 2)),
            leaf(Some(2), (0, 3)),
            leaf(Some(2), (4, 1)),
            leaf(Some(3), (0, 4)),
            leaf(None, (1, 1)),
            leaf(None, (1, 2)),
        ];
        let out = deduplicate_items(&cols(PgType::Int4), &items, DEDUP_MAX_POSTING_SIZE).unwrap();
        assert_eq!(
            tids_of(&out),
            vec![
                vec![(0, 1)],
                vec![(0, 2), (0, 3), (4, 1)],
                vec![(0, 4)],
                vec![(1, 1), (1, 2)],
            ]
        );
        // The singles are the same bytes; the merged key and NULL survive.
        assert_eq!(out[0], items[0]);
        let merged = IndexTuple::parse(&out[1]).unwrap();
        assert!(merged.is_posting() && !merged.is_pivot());
        assert_eq!(merged.key(&cols(PgType::Int4)).unwrap(), vec![Key::Int(2)]);
        assert_eq!(merged.bytes.len(), 16 + 24); // key slot, three 6-byte TIDs, padded
        let nulls = IndexTuple::parse(&out[3]).unwrap();
        assert_eq!(nulls.key(&cols(PgType::Int4)).unwrap(), vec![Key::Null]);
        // Nothing to merge: the same items.
        let distinct = vec![leaf(Some(1), (0, 1)), leaf(Some(2), (0, 1))];
        assert_eq!(
            deduplicate_items(&cols(PgType::Int4), &distinct, DEDUP_MAX_POSTING_SIZE).unwrap(),
            distinct
        );
        // An int8 0 and a NULL have the same bytes after t_info; they are not one key.
        let zero_and_null = vec![
            form_leaf(&cols(PgType::Int8), &[Key::Int(0)], (0, 1)),
            form_leaf(&cols(PgType::Int8), &[Key::Null], (0, 2)),
        ];
        assert_eq!(
            deduplicate_items(&cols(PgType::Int8), &zero_and_null, DEDUP_MAX_POSTING_SIZE)
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn runs_stop_at_the_size_limit() {
        // int4: 16 bytes of key slot, then 6 per TID: 812 bytes hold 132 TIDs.
        let items: Vec<Vec<u8>> = (1..=300u16).map(|i| leaf(Some(7), (i as u32, 1))).collect();
        let out = deduplicate_items(&cols(PgType::Int4), &items, BUILD_MAX_POSTING_SIZE).unwrap();
        let counts: Vec<usize> = tids_of(&out).iter().map(Vec::len).collect();
        assert_eq!(counts, vec![132, 132, 36]);
        assert!(out.iter().all(|t| t.len() <= BUILD_MAX_POSTING_SIZE));
        // A second pass with a larger limit merges the lists themselves.
        let again = deduplicate_items(&cols(PgType::Int4), &out, DEDUP_MAX_POSTING_SIZE).unwrap();
        let counts: Vec<usize> = tids_of(&again).iter().map(Vec::len).collect();
        assert_eq!(counts, vec![132, 168]); // whole tuples join a run, or none of them
        let all: Vec<Tid> = tids_of(&again).concat();
        assert_eq!(all, (1..=300u32).map(|i| (i, 1)).collect::<Vec<_>>());
    }

    #[test]
    fn a_posting_split_swaps_in_the_new_tid_and_moves_the_largest_out() {
        let list = form_leaf_with(
            &cols(PgType::Int4),
            &[Key::Int(5)],
            &[(1, 1), (3, 1), (9, 1)],
        );
        let list = IndexTuple::parse(&list).unwrap();
        let (new_list, moved) = split_posting(&cols(PgType::Int4), &list, (2, 4)).unwrap();
        assert_eq!(new_list.len(), list.bytes.len());
        assert_eq!(
            tids_of(&[new_list, moved.clone()]),
            vec![vec![(1, 1), (2, 4), (3, 1)], vec![(9, 1)]]
        );
        assert_eq!(
            IndexTuple::parse(&moved)
                .unwrap()
                .key(&cols(PgType::Int4))
                .unwrap(),
            vec![Key::Int(5)]
        );
    }
}
