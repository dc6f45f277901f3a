//! Unique indexes: no two live rows with equal, non-NULL keys.
//!
//! # When an entry is inserted
//!
//! The heap tuple is written first, then its index entry (`insert.rs`), as PostgreSQL does.
//! Before the entry of a unique index goes in, under the index's writer lock, every entry
//! with an equal key is looked at, and the heap tuple it points at is judged as a dirty
//! snapshot would (`heap::liveness`):
//!
//! * dead (an aborted insert, a committed delete, this transaction's own delete — an
//!   UPDATE's old version): no conflict;
//! * live (committed, or inserted by this transaction — so two equal keys of one statement
//!   conflict too): 23505 `duplicate key value violates unique constraint`;
//! * inserted or being deleted by a transaction still running: the outcome depends on how
//!   that one ends, so the inserter gives up the writer lock, waits for it
//!   (`TransactionManager::wait_for`, which detects deadlocks and honours cancels) and
//!   looks again. Entries placed before the wait stay placed; they are this statement's.
//!
//! Because writers of one index take turns under its writer lock, a check and the insert
//! it allows are one step: no other writer can slip an equal key in between.
//!
//! NULL keys never conflict (NULLS DISTINCT, PostgreSQL's default).
//!
//! # Finding the equal entries cheaply
//!
//! Most inserts meet no equal key, and that is decided on the leaf the entry goes to,
//! without another descent: if the leaf holds a smaller key before the entry's place and a
//! greater key after it (or the leaf is the rightmost, or its high key is greater), no equal
//! key can be anywhere. Otherwise the equal run is read from its first leaf, found by a
//! descent for (key, −∞), rightwards while keys stay equal.
//!
//! # CREATE UNIQUE INDEX
//!
//! The build sorts every (key, TID) of the table's not-dead tuples; equal neighbours among
//! them are judged as above, and two live ones fail the build: `could not create unique
//! index`, `Key (a)=(1) is duplicated.` A tuple of a transaction still running counts as
//! live (PostgreSQL's build would have waited for it behind a table lock; iolab has none).

use std::cmp::Ordering;

use iolab_catalog::{sqlstate, PgError, PgResult, PgType};

use super::key::Key;
use super::page::{
    check_page, first_data_offset, high_key, tuple_at, IndexTuple, SearchKey, TidBound,
};
use super::{BtreeIndex, Tid};
use crate::accounting::IoAccount;
use crate::buffer::PinnedBuffer;
use crate::heap::liveness::Liveness;
use crate::storage::page as slotted;
use crate::txn::Xid;
use crate::values::output_text;
use crate::values::SessionZone;
use iolab_settings::quote_identifier;

/// Judges the heap tuple an equal key points at (`heap::liveness::liveness` for the
/// inserting transaction).
pub type JudgeTuple<'a> = dyn FnMut(Tid, &mut IoAccount) -> PgResult<Liveness> + 'a;

/// What stopped an insertion into a unique index.
#[derive(Debug, PartialEq, Eq)]
pub enum UniqueStop {
    /// The entry at this position of the (sorted) batch has the key of a live row.
    Duplicate(usize),
    /// The entry at `next` has the key of a row transaction `holder` is changing; the
    /// entries before `next` are in.
    WaitFor { holder: Xid, next: usize },
}

impl BtreeIndex {
    /// Does an entry with key `key` (not NULL), going to position `at` of `leaf`, possibly
    /// have an equal key anywhere in the index? `false` only when the leaf proves it has
    /// not (see the module comment).
    pub(super) fn may_have_equal_key(
        &self,
        leaf: &PinnedBuffer,
        key: &[Key],
        at: u16,
    ) -> PgResult<bool> {
        let page = leaf.page();
        let opaque = check_page(&page, leaf.blkno(), &self.name)?;
        let max = slotted::page_max_offset(&page);
        // A tuple's order against `key`; a pivot missing columns is below a key it
        // otherwise equals (its missing columns are minus infinity).
        let key_of = |t: &IndexTuple| -> PgResult<Ordering> {
            Ok(match t.key_order(&self.columns, key)?.reverse() {
                Ordering::Equal if t.natts(&self.columns) < key.len() => Ordering::Less,
                order => order,
            })
        };
        if at <= first_data_offset(&opaque) || key_of(&tuple_at(&page, at - 1)?)? != Ordering::Less
        {
            return Ok(true);
        }
        if at <= max {
            return Ok(key_of(&tuple_at(&page, at)?)? != Ordering::Greater);
        }
        match high_key(&page, &opaque)? {
            None => Ok(false),
            Some(hk) => Ok(key_of(&IndexTuple::parse(&hk)?)? != Ordering::Greater),
        }
    }

    /// The heap TIDs of every entry whose key equals `key` (not NULL), in TID order.
    pub(super) fn equal_key_tids(
        &self,
        key: &[Key<'static>],
        acct: &mut IoAccount,
    ) -> PgResult<Vec<Tid>> {
        let search = SearchKey {
            key: key.to_vec(),
            tid: TidBound::MinusInf,
        };
        let mut tids = Vec::new();
        let mut stack = Vec::new();
        let Some(mut leaf) = self.descend(&search, &mut stack, acct)? else {
            return Ok(tids);
        };
        loop {
            let next = {
                let page = leaf.page();
                let opaque = check_page(&page, leaf.blkno(), &self.name)?;
                let max = slotted::page_max_offset(&page);
                let start =
                    self.first_at_or_above(&page, &search, first_data_offset(&opaque), max, false)?;
                for off in start..=max {
                    let t = tuple_at(&page, off)?;
                    let equal = t.key_order(&self.columns, key)? == Ordering::Equal;
                    if !equal {
                        return Ok(tids);
                    }
                    tids.extend(t.heap_tids());
                }
                if opaque.is_rightmost() {
                    return Ok(tids);
                }
                opaque.next
            };
            leaf = self.read(next, acct)?;
        }
    }

    /// Judges each tuple with key `key`; the first live one, or the first a running
    /// transaction holds, and where it is. `None`: no conflict.
    pub(super) fn first_conflict(
        &self,
        key: &[Key<'static>],
        judge: &mut JudgeTuple,
        acct: &mut IoAccount,
    ) -> PgResult<Option<(Tid, Liveness)>> {
        for tid in self.equal_key_tids(key, acct)? {
            match judge(tid, acct)? {
                Liveness::Dead => {}
                conflict => return Ok(Some((tid, conflict))),
            }
        }
        Ok(None)
    }
}

/// CREATE UNIQUE INDEX's check, fed the sorted entries one by one: fails if two entries
/// with equal, non-NULL keys point at tuples `judge` does not find dead (see the module
/// comment). Reads heap pages only for runs of equal keys.
pub(super) struct BuildCheck<'a> {
    index: &'a BtreeIndex,
    columns: &'a [String],
    /// The run of equal keys going by: its key and TIDs.
    key: Vec<Key<'static>>,
    tids: Vec<Tid>,
    /// The account its heap reads are counted in.
    acct: IoAccount,
}

impl<'a> BuildCheck<'a> {
    pub(super) fn new(
        index: &'a BtreeIndex,
        columns: &'a [String],
        acct: IoAccount,
    ) -> BuildCheck<'a> {
        BuildCheck {
            index,
            columns,
            key: Vec::new(),
            tids: Vec::new(),
            acct,
        }
    }

    /// The next entry in index order.
    pub(super) fn add(&mut self, key: &[Key], tid: Tid, judge: &mut JudgeTuple) -> PgResult<()> {
        // A key with a NULL column equals no other (NULLs are distinct).
        let same = !key.iter().any(Key::is_null)
            && !self.tids.is_empty()
            && self.index.columns.compare(key, &self.key) == Ordering::Equal;
        if !same {
            self.judge_run(judge)?;
            self.key = key.iter().map(|k| k.clone().into_owned()).collect();
        }
        self.tids.push(tid);
        Ok(())
    }

    /// After the last entry; returns the account of the heap reads.
    pub(super) fn finish(mut self, judge: &mut JudgeTuple) -> PgResult<IoAccount> {
        self.judge_run(judge)?;
        Ok(self.acct)
    }

    /// Fails if more than one tuple of the run of equal keys is not dead; empties it.
    fn judge_run(&mut self, judge: &mut JudgeTuple) -> PgResult<()> {
        if self.tids.len() > 1 {
            let mut live = 0;
            for &tid in &self.tids {
                if judge(tid, &mut self.acct)? != Liveness::Dead {
                    live += 1;
                }
            }
            if live > 1 {
                return Err(duplicated_in_build(
                    self.index.name(),
                    self.columns,
                    self.index.columns.types(),
                    &self.key,
                ));
            }
        }
        self.tids.clear();
        Ok(())
    }
}

/// PostgreSQL's error for an insert that would duplicate a key.
pub fn duplicate_key(
    constraint: &str,
    columns: &[String],
    types: &[PgType],
    key: &[Key],
) -> PgError {
    PgError::new(
        sqlstate::UNIQUE_VIOLATION,
        format!("duplicate key value violates unique constraint \"{constraint}\""),
    )
    .with_detail(format!(
        "Key {} already exists.",
        key_detail(columns, types, key)
    ))
}

/// PostgreSQL's error for CREATE UNIQUE INDEX on a table with a duplicated key.
pub fn duplicated_in_build(
    index: &str,
    columns: &[String],
    types: &[PgType],
    key: &[Key],
) -> PgError {
    PgError::new(
        sqlstate::UNIQUE_VIOLATION,
        format!("could not create unique index \"{index}\""),
    )
    .with_detail(format!(
        "Key {} is duplicated.",
        key_detail(columns, types, key)
    ))
}

/// `(a, b)=(1, x)`: the key columns' names and the key's values, as PostgreSQL's
/// `BuildIndexValueDescription` writes them.
fn key_detail(columns: &[String], types: &[PgType], key: &[Key]) -> String {
    let names: Vec<String> = columns.iter().map(|c| quote_identifier(c)).collect();
    let values: Vec<String> = (types.iter().zip(key))
        .map(|(&ty, k)| key_text(ty, k))
        .collect();
    format!("({})=({})", names.join(", "), values.join(", "))
}

/// A key as its type's output function writes it (timestamptz in UTC: the engine knows no
/// session time zone).
pub fn key_text(ty: PgType, key: &Key) -> String {
    let mut out = Vec::new();
    match (ty, key) {
        (_, Key::Null) => out.extend_from_slice(b"null"),
        (_, Key::Bool(b)) => out.push(if *b { b't' } else { b'f' }),
        (_, Key::Int(i)) => out.extend_from_slice(i.to_string().as_bytes()),
        (PgType::Float4, Key::Float(f)) => output_text::format_float4(*f as f32, 1, &mut out),
        (_, Key::Float(f)) => output_text::format_float8(*f, 1, &mut out),
        (PgType::Numeric { scale, .. }, Key::Numeric(n)) => {
            output_text::format_decimal(*n, scale, &mut out)
        }
        (_, Key::Numeric(n)) => output_text::format_decimal(*n, 0, &mut out),
        (_, Key::Text(t)) => out.extend_from_slice(t),
        (_, Key::Date(d)) => output_text::format_date(*d, &mut out),
        (PgType::Timestamptz, Key::Timestamp(t)) => {
            output_text::format_timestamptz(*t, &SessionZone::utc(), &mut out)
        }
        (_, Key::Timestamp(t)) => output_text::format_timestamp(*t, &mut out),
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_written_as_their_types_print_them() {
        assert_eq!(key_text(PgType::Int4, &Key::Int(-7)), "-7");
        assert_eq!(key_text(PgType::Float8, &Key::Float(0.1)), "0.1");
        assert_eq!(
            key_text(
                PgType::Numeric {
                    precision: 10,
                    scale: 2
                },
                &Key::Numeric(12345)
            ),
            "123.45"
        );
        assert_eq!(
            key_text(PgType::Text, &Key::Text(b"x y".as_slice().into())),
            "x y"
        );
        assert_eq!(key_text(PgType::Date, &Key::Date(0)), "1970-01-01");
        assert_eq!(key_text(PgType::Bool, &Key::Bool(true)), "t");
    }

    #[test]
    fn column_names_are_quoted_as_postgres_quotes_them() {
        let detail = |column: &str| {
            let e = duplicate_key("k", &[column.to_string()], &[PgType::Int4], &[Key::Int(1)]);
            e.detail.expect("a DETAIL")
        };
        assert_eq!(detail("id"), "Key (id)=(1) already exists.");
        assert_eq!(detail("Id"), "Key (\"Id\")=(1) already exists.");
        assert_eq!(detail("a b"), "Key (\"a b\")=(1) already exists.");
        assert_eq!(detail("1a"), "Key (\"1a\")=(1) already exists.");
        assert_eq!(detail("user"), "Key (\"user\")=(1) already exists.");
    }
}
