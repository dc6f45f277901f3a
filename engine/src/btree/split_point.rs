//! Where a full page splits (PostgreSQL's `nbtsplitloc.c` rules, in iolab's words).
//!
//! Every boundary between two items (the new item included) where both halves fit is a
//! candidate. Each gets a *delta*: how far its free space on the left and on the right
//! is from the wanted proportion — equal halves (`|left free − right free|`), or on the
//! rightmost page of a level a left page filled to the fill factor `f`
//! (`|f × left free − (1 − f) × right free|`, so that ascending inserts leave pages as a
//! build fills them). Candidates are ranked by delta. Internal pages take the best one.
//!
//! A leaf also cares about the separator that goes up: when the keys on both sides of the
//! split differ, the new high key is the key alone; when they are equal it must carry a
//! heap TID too, and a leaf full of one key splits again and again unless its halves are
//! chosen with that in mind. So on leaves:
//!
//! 1. **Default**: among the few best-ranked candidates (5 % of them, 1 to 9), the first
//!    at a key boundary.
//! 2. **Many duplicates**, when none of those is at a key boundary but the page holds
//!    more than one key: the best-ranked key boundary anywhere on the page — the edge of
//!    the run of duplicates around the balanced point. Except when that would put the new
//!    item among the first few items of the right page (a run of decreasing inserts would
//!    split the same page at the same place forever): then the best-ranked candidate.
//! 3. **Single value**, when the whole page is one key and it is the last page of that
//!    key's run (the rightmost page, or its high key is a larger key), where the run's
//!    next entries arrive with ever higher heap TIDs: the left page is filled to 96 % and
//!    the right one keeps the room for them. On a page inside a run (its high key has the
//!    same key), the best-ranked candidate.
//!
//! PostgreSQL also has a "split after the new item" rule, but not for single-column
//! indexes, which are the only ones iolab has.

use std::cmp::Ordering;

use iolab_catalog::PgResult;

use super::key::{Key, KeyColumns};
use super::page::{item_cost, IndexTuple, PAGE_CAPACITY};

/// How full a single-value split leaves the left page (PostgreSQL's
/// `BTREE_SINGLEVAL_FILLFACTOR`).
const SINGLE_VALUE_FILLFACTOR: usize = 96;
/// The most candidates the default strategy looks at on a leaf (`MAX_LEAF_INTERVAL`).
const MAX_LEAF_INTERVAL: usize = 9;

/// A page about to split.
pub struct FullPage<'a> {
    /// Its data items in order, the new one included.
    pub items: &'a [Vec<u8>],
    /// Where the new item is in `items`.
    pub new_at: usize,
    pub leaf: bool,
    pub rightmost: bool,
    /// The page's high key (`None` on the rightmost page).
    pub high_key: Option<&'a [u8]>,
    /// Percent the left page of a rightmost split is filled to.
    pub fillfactor: usize,
}

/// A legal split: `items[..at]` stay left, `items[at..]` move right.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    at: usize,
    left_free: i64,
    right_free: i64,
}

impl Candidate {
    /// Distance from the wanted proportion: `fill` of the left page, or equal halves.
    fn delta(&self, fill: Option<usize>) -> f64 {
        let (l, r) = (self.left_free as f64, self.right_free as f64);
        match fill {
            Some(f) => {
                let f = f as f64 / 100.0;
                (f * l - (1.0 - f) * r).abs()
            }
            None => (l - r).abs(),
        }
    }
}

/// The index of the first item that moves right; `None` when no split leaves both halves
/// within a page (PostgreSQL's size limit makes that impossible for valid items).
pub fn choose(columns: &KeyColumns, page: &FullPage) -> PgResult<Option<usize>> {
    let candidates = candidates(page);
    if candidates.is_empty() {
        return Ok(None);
    }
    let ranked = |fill: Option<usize>| {
        let mut c = candidates.clone();
        c.sort_by(|a, b| a.delta(fill).total_cmp(&b.delta(fill)));
        c
    };
    let base_fill = if page.rightmost {
        Some(page.fillfactor)
    } else {
        None
    };
    let by_delta = ranked(base_fill);
    if !page.leaf {
        return Ok(Some(by_delta[0].at));
    }
    let keys: Vec<Vec<Key>> = page
        .items
        .iter()
        .map(|i| IndexTuple::parse(i)?.key(columns))
        .collect::<PgResult<_>>()?;
    let boundary = |at: usize| columns.compare(&keys[at - 1], &keys[at]) != Ordering::Equal;

    let interval = (by_delta.len() * 5 / 100).clamp(1, MAX_LEAF_INTERVAL);
    if let Some(c) = by_delta[..interval].iter().find(|c| boundary(c.at)) {
        return Ok(Some(c.at)); // default
    }
    let last = keys.len() - 1;
    if columns.compare(&keys[0], &keys[last]) != Ordering::Equal {
        // Many duplicates: the best-ranked key boundary.
        let best = by_delta
            .iter()
            .find(|c| boundary(c.at))
            .expect("a page of several keys has a key boundary");
        let new_just_right =
            !page.rightmost && best.at <= page.new_at && page.new_at < best.at + MAX_LEAF_INTERVAL;
        return Ok(Some(if new_just_right {
            by_delta[0].at
        } else {
            best.at
        }));
    }
    // The last page of the run: the next page (if any) starts with a larger key.
    let last_page_of_the_run = match page.high_key {
        None => true,
        Some(h) => {
            // A high key with fewer columns (truncated) than the keys differs from them.
            let h = IndexTuple::parse(h)?.key(columns)?;
            h.len() < columns.len() || columns.compare(&h, &keys[page.new_at]) != Ordering::Equal
        }
    };
    if last_page_of_the_run {
        return Ok(Some(ranked(Some(SINGLE_VALUE_FILLFACTOR))[0].at)); // single value
    }
    Ok(Some(by_delta[0].at))
}

/// Every split that leaves both halves within a page, with their free space.
fn candidates(page: &FullPage) -> Vec<Candidate> {
    let items = page.items;
    let total: usize = items.iter().map(|i| item_cost(i.len())).sum();
    let old_high_key_cost = page.high_key.map_or(0, |h| item_cost(h.len()));
    let mut left = 0usize;
    let mut out = Vec::with_capacity(items.len());
    for at in 1..items.len() {
        left += item_cost(items[at - 1].len());
        let moving = items[at].len();
        // The new high key: at most the moving item plus a heap TID on a leaf; the moving
        // item's key as is on an internal page (where it then turns into minus infinity).
        let high_key_cost = item_cost(moving + if page.leaf { 8 } else { 0 });
        let right_first_cost = if page.leaf {
            item_cost(moving)
        } else {
            item_cost(8)
        };
        let left_bytes = left + high_key_cost;
        let right_bytes = total - left - item_cost(moving) + right_first_cost + old_high_key_cost;
        if left_bytes <= PAGE_CAPACITY && right_bytes <= PAGE_CAPACITY {
            out.push(Candidate {
                at,
                left_free: (PAGE_CAPACITY - left_bytes) as i64,
                right_free: (PAGE_CAPACITY - right_bytes) as i64,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_catalog::PgType;

    fn cols(ty: PgType) -> crate::btree::KeyColumns {
        crate::btree::KeyColumns::new(&[ty])
    }
    use crate::btree::page::{form_leaf, form_pivot};

    fn leaves(keys: &[i64]) -> Vec<Vec<u8>> {
        keys.iter()
            .enumerate()
            .map(|(i, &k)| form_leaf(&cols(PgType::Int4), &[Key::Int(k)], (i as u32, 1)))
            .collect()
    }

    fn split(keys: &[i64], new_at: usize, rightmost: bool, high_key: Option<i64>) -> usize {
        let items = leaves(keys);
        let high_key = high_key.map(|k| form_pivot(&cols(PgType::Int4), &[Key::Int(k)], None, 0));
        let page = FullPage {
            items: &items,
            new_at,
            leaf: true,
            rightmost,
            high_key: high_key.as_deref(),
            fillfactor: 90,
        };
        choose(&cols(PgType::Int4), &page).unwrap().unwrap()
    }

    // int4 leaf items cost 20 bytes: 408 of them are a little more than a page.
    const N: usize = 408;

    #[test]
    fn distinct_keys_split_in_the_middle_or_at_the_fill_factor() {
        let keys: Vec<i64> = (0..N as i64).collect();
        assert!((200..=208).contains(&split(&keys, 100, false, Some(10_000))));
        // Rightmost: the left page ends 90 % full.
        let at = split(&keys, N - 1, true, None);
        assert!((360..=370).contains(&at), "{at}");
    }

    #[test]
    fn duplicates_split_at_a_key_boundary_near_the_middle() {
        // Keys 0 (150 items), 1 (150), 2 (108): the middle is inside the run of 1s; the
        // default interval (±9) holds no boundary, so the split goes to an edge of it.
        let mut keys = vec![0i64; 150];
        keys.extend([1; 150]);
        keys.extend([2; 108]);
        let at = split(&keys, 10, false, Some(3));
        assert!(at == 150 || at == 300, "{at}");
        // A boundary within the interval is taken as is.
        let mut keys = vec![0i64; 200];
        keys.extend([1; 208]);
        assert_eq!(split(&keys, 10, false, Some(3)), 200);
    }

    #[test]
    fn a_page_of_one_value_leaves_the_left_page_full_when_the_run_goes_on() {
        let keys = vec![7i64; N];
        // The last page of the run (its high key is larger, or it is the rightmost).
        for (rightmost, high_key) in [(false, Some(8)), (true, None)] {
            let at = split(&keys, N - 1, rightmost, high_key);
            assert!((385..=395).contains(&at), "{at}");
        }
        // A page inside the run of 7s (more 7s follow on the next page): evenly.
        let at = split(&keys, N - 1, false, Some(7));
        assert!((200..=208).contains(&at), "{at}");
    }
}
