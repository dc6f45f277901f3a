//! Index keys: their order (the default B-tree operator class of each type), their bytes in
//! an index tuple, and the fixed-width sort form the build sorts by.
//!
//! # Order
//!
//! Keys are compared the way PostgreSQL's default operator classes compare them, ascending
//! with NULLs last (a NULL key equals another NULL key; the heap TID then decides):
//!
//! | types | [`KeyKind`] | order |
//! |---|---|---|
//! | int2, int4, int8 | `Int` | as integers (any width against any width) |
//! | float4, float8 | `Float` | as numbers, −0 = +0, NaN above +Infinity and equal to every NaN |
//! | numeric | `Numeric` | the scaled i128 (one scale per column) |
//! | text, varchar | `Text` | bytewise (memcmp, then shorter first): the `C` collation |
//! | char(n) | `Bpchar` | bytewise, ignoring trailing spaces (`bpchar_ops`) |
//! | date | `Date` | days |
//! | timestamp, timestamptz | `Timestamp` | microseconds |
//! | bool | `Bool` | false < true |
//!
//! An index on several columns orders its keys column by column: the first column's order,
//! then the second's among equal first keys, and so on ([`KeyColumns::compare`]); a NULL
//! in any column sorts after that column's values.
//!
//! # Bytes in an index tuple
//!
//! A key value is stored as the column's value is stored in a heap tuple (`heap/codec.rs`):
//! fixed-width little-endian values of the type's width (int2 2 bytes, date 4, …), text as
//! a varlena (1-byte header when the whole is ≤ 127 bytes, else a 4-byte header). The
//! values start at offset 8 (16 with a null bitmap), which is aligned for every type, and
//! follow one another as PostgreSQL's `index_form_tuple` places them: each at the next
//! offset its type's alignment allows (bool 1, int2 2, int4 / date / float4 4, the 8-byte
//! types and numeric 8; a varlena with a 1-byte header anywhere, one with a 4-byte header
//! at a multiple of 4, the gap zero-filled); a NULL takes no bytes ([`encode_row`],
//! [`RowCursor`]). A one-column key is thus at offset 8 or 16, as it always was.
//!
//! # Sort form
//!
//! For the build's sort, fixed-width keys are mapped to a `u64` whose unsigned order is the
//! key order ([`sort_u64`]; integers with the sign bit flipped, floats with the usual
//! sign-magnitude trick after making −0 into +0 and every NaN into one NaN), so sorting
//! 16-byte `(key, tid)` pairs needs no comparator. The mapping is inverted when the leaf
//! tuples are formed ([`from_sort_u64`]): an index stores +0 for −0 and the canonical NaN
//! for any NaN, which compare equal to the heap's values.

use std::borrow::Cow;
use std::cmp::Ordering;

use iolab_catalog::{PgResult, PgType};

use super::corrupted;
use crate::heap::codec::Datum;

/// The comparison family of a key type (see the module comment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Bool,
    Int,
    Float,
    Numeric,
    Text,
    Bpchar,
    Date,
    Timestamp,
}

impl KeyKind {
    pub fn of(ty: PgType) -> KeyKind {
        match ty {
            PgType::Bool => KeyKind::Bool,
            PgType::Int2 | PgType::Int4 | PgType::Int8 => KeyKind::Int,
            PgType::Float4 | PgType::Float8 => KeyKind::Float,
            PgType::Numeric { .. } => KeyKind::Numeric,
            PgType::Text | PgType::Varchar(_) => KeyKind::Text,
            PgType::Bpchar(_) => KeyKind::Bpchar,
            PgType::Date => KeyKind::Date,
            PgType::Timestamp | PgType::Timestamptz => KeyKind::Timestamp,
            PgType::Interval => unreachable!("btree::create_index refuses interval keys"),
        }
    }

    /// Whether keys that compare equal are always the same bytes, so that a posting list
    /// may keep one of them for all (PostgreSQL's `btequalimage` support functions): not
    /// floats (0 and −0 are equal) nor numerics (1.0 and 1.00 are equal).
    pub fn equal_image(self) -> bool {
        !matches!(self, KeyKind::Float | KeyKind::Numeric)
    }

    /// Whether sort keys of this kind fit a `u64` ([`sort_u64`]).
    pub fn sorts_as_u64(self) -> bool {
        !matches!(self, KeyKind::Numeric | KeyKind::Text | KeyKind::Bpchar)
    }
}

/// The key columns of an index, in index order: their types and comparison kinds.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyColumns {
    types: Vec<PgType>,
    kinds: Vec<KeyKind>,
}

impl KeyColumns {
    pub fn new(types: &[PgType]) -> KeyColumns {
        assert!(
            (1..=INDEX_MAX_KEYS).contains(&types.len()),
            "an index has 1 to {INDEX_MAX_KEYS} key columns, not {}",
            types.len()
        );
        KeyColumns {
            types: types.to_vec(),
            kinds: types.iter().map(|&t| KeyKind::of(t)).collect(),
        }
    }

    /// The number of key columns.
    pub fn len(&self) -> usize {
        self.types.len()
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    pub fn types(&self) -> &[PgType] {
        &self.types
    }

    pub fn ty(&self, column: usize) -> PgType {
        self.types[column]
    }

    pub fn kind(&self, column: usize) -> KeyKind {
        self.kinds[column]
    }

    /// The type of the only key column, when there is one.
    pub fn single(&self) -> Option<PgType> {
        (self.types.len() == 1).then_some(self.types[0])
    }

    /// Whether equal keys are always equal bytes ([`KeyKind::equal_image`] of every column).
    pub fn equal_image(&self) -> bool {
        self.kinds.iter().all(|k| k.equal_image())
    }

    /// Compares two keys (prefixes of this index's columns) column by column over the
    /// columns both have; the caller decides what a longer prefix means.
    pub fn compare(&self, a: &[Key], b: &[Key]) -> Ordering {
        a.iter()
            .zip(b)
            .zip(&self.kinds)
            .map(|((x, y), &kind)| compare(kind, x, y))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    }
}

/// The most key columns an index has (PostgreSQL's `INDEX_MAX_KEYS`).
pub const INDEX_MAX_KEYS: usize = 32;

/// One key value, borrowed from a page or a heap tuple, or owned (`Key<'static>`).
#[derive(Clone, Debug, PartialEq)]
pub enum Key<'a> {
    Null,
    Bool(bool),
    /// int2, int4 and int8.
    Int(i64),
    /// float4 (widened exactly) and float8.
    Float(f64),
    /// The unscaled Decimal128 value at the column's scale.
    Numeric(i128),
    /// UTF-8 bytes of text, varchar and char(n) (padding included).
    Text(Cow<'a, [u8]>),
    /// Days since 1970-01-01.
    Date(i32),
    /// µs since 1970-01-01 (UTC for timestamptz).
    Timestamp(i64),
}

impl Key<'_> {
    pub fn into_owned(self) -> Key<'static> {
        match self {
            Key::Null => Key::Null,
            Key::Bool(b) => Key::Bool(b),
            Key::Int(i) => Key::Int(i),
            Key::Float(f) => Key::Float(f),
            Key::Numeric(n) => Key::Numeric(n),
            Key::Text(t) => Key::Text(Cow::Owned(t.into_owned())),
            Key::Date(d) => Key::Date(d),
            Key::Timestamp(t) => Key::Timestamp(t),
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Key::Null)
    }
}

impl<'a> Key<'a> {
    /// A heap value as a key of its own type.
    pub fn from_datum(d: Datum<'a>) -> Key<'a> {
        match d {
            Datum::Null => Key::Null,
            Datum::Bool(b) => Key::Bool(b),
            Datum::Int2(i) => Key::Int(i as i64),
            Datum::Int4(i) => Key::Int(i as i64),
            Datum::Int8(i) => Key::Int(i),
            Datum::Float4(f) => Key::Float(f as f64),
            Datum::Float8(f) => Key::Float(f),
            Datum::Numeric(n) => Key::Numeric(n),
            Datum::Text(s) => Key::Text(Cow::Borrowed(s.as_bytes())),
            Datum::Date(d) => Key::Date(d),
            Datum::Timestamp(t) | Datum::Timestamptz(t) => Key::Timestamp(t),
            Datum::Interval(_) => unreachable!("btree::create_index refuses interval keys"),
        }
    }

    /// A scan bound given as a [`Datum`] for an index of kind `kind`: integers of any width
    /// for integer keys, floats or integers for float keys, text for text and char(n),
    /// timestamp or timestamptz for both timestamp kinds (µs since 1970 either way), and
    /// the type's own values otherwise. `None` when the datum cannot be compared with the
    /// index's keys (the caller then cannot use the index for the condition).
    pub fn bound_for(kind: KeyKind, d: Datum<'a>) -> Option<Key<'a>> {
        let key = Key::from_datum(d);
        let ok = match (kind, &key) {
            (_, Key::Null) => false,
            (KeyKind::Float, Key::Int(i)) => return Some(Key::Float(*i as f64)),
            (KeyKind::Bool, Key::Bool(_))
            | (KeyKind::Int, Key::Int(_))
            | (KeyKind::Float, Key::Float(_))
            | (KeyKind::Numeric, Key::Numeric(_))
            | (KeyKind::Text | KeyKind::Bpchar, Key::Text(_))
            | (KeyKind::Date, Key::Date(_))
            | (KeyKind::Timestamp, Key::Timestamp(_)) => true,
            _ => false,
        };
        ok.then_some(key)
    }
}

/// The order of two floats under `float8_ops`: −0 = +0, NaN greatest and equal to NaN.
pub fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).expect("neither is NaN"),
    }
}

/// `bpchar` compares without its trailing spaces.
fn trim_blanks(b: &[u8]) -> &[u8] {
    let end = b.iter().rposition(|&c| c != b' ').map_or(0, |i| i + 1);
    &b[..end]
}

/// Compares two keys of one index (kind `kind`); NULL sorts after everything and equals
/// NULL. Keys of different variants are a caller's bug.
pub fn compare(kind: KeyKind, a: &Key, b: &Key) -> Ordering {
    match (a, b) {
        (Key::Null, Key::Null) => Ordering::Equal,
        (Key::Null, _) => Ordering::Greater,
        (_, Key::Null) => Ordering::Less,
        (Key::Bool(x), Key::Bool(y)) => x.cmp(y),
        (Key::Int(x), Key::Int(y)) => x.cmp(y),
        (Key::Float(x), Key::Float(y)) => float_cmp(*x, *y),
        (Key::Numeric(x), Key::Numeric(y)) => x.cmp(y),
        (Key::Text(x), Key::Text(y)) => {
            if kind == KeyKind::Bpchar {
                trim_blanks(x).cmp(trim_blanks(y))
            } else {
                x.as_ref().cmp(y.as_ref())
            }
        }
        (Key::Date(x), Key::Date(y)) => x.cmp(y),
        (Key::Timestamp(x), Key::Timestamp(y)) => x.cmp(y),
        _ => panic!("keys of different types compared: {a:?} and {b:?}"),
    }
}

/// Whether the type's values are varlenas (text types).
pub fn is_varlena(ty: PgType) -> bool {
    matches!(KeyKind::of(ty), KeyKind::Text | KeyKind::Bpchar)
}

/// Bytes of the key's stored form (what [`encode`] appends).
pub fn encoded_len(ty: PgType, key: &Key) -> usize {
    match key {
        Key::Null => 0,
        Key::Text(t) if t.len() < 127 => t.len() + 1,
        Key::Text(t) => t.len() + 4,
        _ => fixed_width(ty),
    }
}

fn fixed_width(ty: PgType) -> usize {
    match ty {
        PgType::Bool => 1,
        PgType::Int2 => 2,
        PgType::Int4 | PgType::Float4 | PgType::Date => 4,
        PgType::Int8 | PgType::Float8 | PgType::Timestamp | PgType::Timestamptz => 8,
        PgType::Numeric { .. } => 16,
        PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => unreachable!("varlena"),
        PgType::Interval => unreachable!("btree::create_index refuses interval keys"),
    }
}

/// A non-null key as a heap tuple stores a value of column type `ty`, a varlena without its
/// header (what [`ValueColumn::append`](crate::heap::codec::ValueColumn::append) takes):
/// text borrowed from the key, other types encoded into `scratch`.
pub fn heap_value<'k>(ty: PgType, key: &'k Key, scratch: &'k mut Vec<u8>) -> &'k [u8] {
    match key {
        Key::Text(text) => text,
        _ => {
            scratch.clear();
            encode(ty, key, scratch);
            scratch
        }
    }
}

/// Appends the stored values of a key's non-null columns (`keys`, a prefix of `columns`)
/// to `out`, whose length is a multiple of 8 where the values start, each at its type's
/// alignment (module comment).
pub fn encode_row(columns: &KeyColumns, keys: &[Key], out: &mut Vec<u8>) {
    debug_assert_eq!(out.len() % 8, 0, "keys start MAXALIGNed");
    for (i, key) in keys.iter().enumerate() {
        if key.is_null() {
            continue;
        }
        let ty = columns.ty(i);
        let align = match key {
            Key::Text(t) if t.len() < 127 => 1,
            _ => alignment(ty),
        };
        out.resize(out.len().next_multiple_of(align), 0);
        encode(ty, key, out);
    }
}

/// Reads a stored key's columns one at a time from `data` (the tuple's bytes from where
/// its values start), as [`encode_row`] laid them out.
pub struct RowCursor<'c, 'a> {
    columns: &'c KeyColumns,
    data: &'a [u8],
    /// The tuple's null bitmap: bit `i` clear = column `i` is NULL.
    not_null: u32,
    /// Where the next column's value may start, and its number.
    at: usize,
    column: usize,
}

impl<'c, 'a> RowCursor<'c, 'a> {
    pub fn new(columns: &'c KeyColumns, data: &'a [u8], not_null: u32) -> RowCursor<'c, 'a> {
        RowCursor {
            columns,
            data,
            not_null,
            at: 0,
            column: 0,
        }
    }

    /// The bytes from the next column's value on.
    pub fn rest(&self) -> &'a [u8] {
        &self.data[self.at.min(self.data.len())..]
    }

    /// The next column's key (the caller asks for no more than the tuple has).
    pub fn next_key(&mut self) -> PgResult<Key<'a>> {
        let i = self.column;
        self.column += 1;
        if self.not_null & (1 << i) == 0 {
            return Ok(Key::Null);
        }
        let ty = self.columns.ty(i);
        // Padding is zero; a 1-byte varlena header never is, so a varlena starts here
        // unaligned exactly when this byte is not zero (PostgreSQL's `att_align_pointer`).
        let short_varlena = is_varlena(ty) && self.data.get(self.at).is_some_and(|&b| b != 0);
        if !short_varlena {
            self.at = self.at.next_multiple_of(alignment(ty));
        }
        let rest = self.data.get(self.at..).ok_or_else(|| {
            corrupted(format!(
                "index key column {} at byte {} of {}",
                i + 1,
                self.at,
                self.data.len()
            ))
        })?;
        let key = decode(ty, rest)?;
        self.at += encoded_len(ty, &key);
        Ok(key)
    }
}

/// The alignment of a stored value of type `ty` (PostgreSQL's `typalign`; a varlena's
/// with a 4-byte header).
fn alignment(ty: PgType) -> usize {
    match ty {
        PgType::Bool => 1,
        PgType::Int2 => 2,
        PgType::Int4 | PgType::Float4 | PgType::Date => 4,
        PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => 4,
        PgType::Int8
        | PgType::Float8
        | PgType::Timestamp
        | PgType::Timestamptz
        | PgType::Numeric { .. } => 8,
        PgType::Interval => unreachable!("btree::create_index refuses interval keys"),
    }
}

/// Appends the stored form of a non-null key of column type `ty`.
pub fn encode(ty: PgType, key: &Key, out: &mut Vec<u8>) {
    match (ty, key) {
        (PgType::Bool, Key::Bool(b)) => out.push(*b as u8),
        (PgType::Int2, Key::Int(i)) => out.extend_from_slice(&(*i as i16).to_le_bytes()),
        (PgType::Int4, Key::Int(i)) => out.extend_from_slice(&(*i as i32).to_le_bytes()),
        (PgType::Int8, Key::Int(i)) => out.extend_from_slice(&i.to_le_bytes()),
        (PgType::Float4, Key::Float(f)) => out.extend_from_slice(&(*f as f32).to_le_bytes()),
        (PgType::Float8, Key::Float(f)) => out.extend_from_slice(&f.to_le_bytes()),
        (PgType::Numeric { .. }, Key::Numeric(n)) => out.extend_from_slice(&n.to_le_bytes()),
        (PgType::Date, Key::Date(d)) => out.extend_from_slice(&d.to_le_bytes()),
        (PgType::Timestamp | PgType::Timestamptz, Key::Timestamp(t)) => {
            out.extend_from_slice(&t.to_le_bytes())
        }
        (PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_), Key::Text(t)) => {
            let total = t.len() + 1;
            if total <= 127 {
                out.push(((total as u8) << 1) | 1);
            } else {
                out.extend_from_slice(&(((t.len() + 4) as u32) << 2).to_le_bytes());
            }
            out.extend_from_slice(t);
        }
        _ => panic!("key {key:?} is not a value of {ty:?}"),
    }
}

/// Reads a stored key of column type `ty` from the tuple bytes after the header (and
/// bitmap); trailing bytes (alignment padding) are ignored.
pub fn decode(ty: PgType, data: &[u8]) -> PgResult<Key<'_>> {
    let fixed = |n: usize| {
        data.get(..n).ok_or_else(|| {
            corrupted(format!(
                "index key of {} bytes, expected {n} for {ty:?}",
                data.len()
            ))
        })
    };
    Ok(match ty {
        PgType::Bool => Key::Bool(fixed(1)?[0] != 0),
        PgType::Int2 => Key::Int(i16::from_le_bytes(fixed(2)?.try_into().unwrap()) as i64),
        PgType::Int4 => Key::Int(i32::from_le_bytes(fixed(4)?.try_into().unwrap()) as i64),
        PgType::Int8 => Key::Int(i64::from_le_bytes(fixed(8)?.try_into().unwrap())),
        PgType::Float4 => Key::Float(f32::from_le_bytes(fixed(4)?.try_into().unwrap()) as f64),
        PgType::Float8 => Key::Float(f64::from_le_bytes(fixed(8)?.try_into().unwrap())),
        PgType::Numeric { .. } => Key::Numeric(i128::from_le_bytes(fixed(16)?.try_into().unwrap())),
        PgType::Date => Key::Date(i32::from_le_bytes(fixed(4)?.try_into().unwrap())),
        PgType::Timestamp | PgType::Timestamptz => {
            Key::Timestamp(i64::from_le_bytes(fixed(8)?.try_into().unwrap()))
        }
        PgType::Interval => unreachable!("btree::create_index refuses interval keys"),
        PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => {
            let first = *data
                .first()
                .ok_or_else(|| corrupted("empty text key".into()))?;
            let (start, end) = if first & 1 == 1 {
                (1, (first >> 1) as usize)
            } else {
                let header = u32::from_le_bytes(fixed(4)?.try_into().unwrap());
                (4, (header >> 2) as usize)
            };
            if end < start || end > data.len() {
                return Err(corrupted(format!(
                    "text key of length {end} in {} bytes",
                    data.len()
                )));
            }
            Key::Text(Cow::Borrowed(&data[start..end]))
        }
    })
}

const SIGN: u64 = 1 << 63;

/// The order-preserving `u64` of a non-null key of a kind that [`sorts_as_u64`]
/// (KeyKind::sorts_as_u64).
pub fn sort_u64(key: &Key) -> u64 {
    match key {
        Key::Bool(b) => *b as u64,
        Key::Int(i) => (*i as u64) ^ SIGN,
        Key::Date(d) => (*d as i64 as u64) ^ SIGN,
        Key::Timestamp(t) => (*t as u64) ^ SIGN,
        Key::Float(f) => {
            let f = if f.is_nan() {
                f64::NAN
            } else if *f == 0.0 {
                0.0
            } else {
                *f
            };
            let bits = f.to_bits();
            if bits & SIGN != 0 {
                !bits
            } else {
                bits | SIGN
            }
        }
        other => panic!("{other:?} has no u64 sort form"),
    }
}

/// Inverts [`sort_u64`] for keys of kind `kind`.
pub fn from_sort_u64(kind: KeyKind, v: u64) -> Key<'static> {
    match kind {
        KeyKind::Bool => Key::Bool(v != 0),
        KeyKind::Int => Key::Int((v ^ SIGN) as i64),
        KeyKind::Date => Key::Date((v ^ SIGN) as i64 as i32),
        KeyKind::Timestamp => Key::Timestamp((v ^ SIGN) as i64),
        KeyKind::Float => Key::Float(f64::from_bits(if v & SIGN != 0 { v & !SIGN } else { !v })),
        other => panic!("{other:?} keys have no u64 sort form"),
    }
}

/// The bytes text keys sort by: bytewise, `char(n)` without trailing spaces.
pub fn text_sort_bytes(kind: KeyKind, b: &[u8]) -> &[u8] {
    if kind == KeyKind::Bpchar {
        trim_blanks(b)
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn u64_sort_form_preserves_order_and_round_trips() {
        let ints = [i64::MIN, -5, -1, 0, 1, 7, i64::MAX];
        for w in ints.windows(2) {
            assert!(sort_u64(&Key::Int(w[0])) < sort_u64(&Key::Int(w[1])));
        }
        for i in ints {
            assert_eq!(
                from_sort_u64(KeyKind::Int, sort_u64(&Key::Int(i))),
                Key::Int(i)
            );
        }
        let floats = [
            f64::NEG_INFINITY,
            -1e300,
            -1.5,
            -f64::MIN_POSITIVE,
            0.0,
            f64::MIN_POSITIVE,
            2.5,
            f64::INFINITY,
            f64::NAN,
        ];
        for w in floats.windows(2) {
            assert!(sort_u64(&Key::Float(w[0])) < sort_u64(&Key::Float(w[1])));
            assert_eq!(float_cmp(w[0], w[1]), Ordering::Less);
        }
        assert_eq!(sort_u64(&Key::Float(-0.0)), sort_u64(&Key::Float(0.0)));
        assert_eq!(
            sort_u64(&Key::Float(-f64::NAN)),
            sort_u64(&Key::Float(f64::NAN))
        );
        for f in floats {
            let back = from_sort_u64(KeyKind::Float, sort_u64(&Key::Float(f)));
            assert_eq!(
                compare(KeyKind::Float, &back, &Key::Float(f)),
                Ordering::Equal
            );
        }
        assert!(sort_u64(&Key::Date(-1)) < sort_u64(&Key::Date(0)));
        assert_eq!(
            from_sort_u64(KeyKind::Date, sort_u64(&Key::Date(-719162))),
            Key::Date(-719162)
        );
    }

    #[test]
    fn text_orders_bytewise_and_bpchar_ignores_padding() {
        let t = |s: &'static str| Key::Text(Cow::Borrowed(s.as_bytes()));
        assert_eq!(compare(KeyKind::Text, &t("ab"), &t("abc")), Ordering::Less);
        assert_eq!(compare(KeyKind::Text, &t("B"), &t("a")), Ordering::Less);
        assert_eq!(compare(KeyKind::Text, &t("a "), &t("a")), Ordering::Greater);
        assert_eq!(
            compare(KeyKind::Bpchar, &t("a  "), &t("a")),
            Ordering::Equal
        );
        assert_eq!(
            compare(KeyKind::Text, &Key::Null, &t("z")),
            Ordering::Greater
        );
        // Long values take a 4-byte header and read back.
        let long = "x".repeat(300);
        let mut out = Vec::new();
        encode(PgType::Text, &t("hi"), &mut out);
        assert_eq!(out, vec![(3 << 1) | 1, b'h', b'i']);
        out.clear();
        encode(
            PgType::Text,
            &Key::Text(Cow::Borrowed(long.as_bytes())),
            &mut out,
        );
        assert_eq!(out.len(), 304);
        assert_eq!(
            encoded_len(PgType::Text, &Key::Text(Cow::Borrowed(long.as_bytes()))),
            304
        );
        assert_eq!(
            decode(PgType::Text, &out).unwrap(),
            Key::Text(Cow::Borrowed(long.as_bytes()))
        );
    }

    #[test]
    fn bounds_coerce_across_widths() {
        assert_eq!(
            Key::bound_for(KeyKind::Int, Datum::Int2(3)),
            Some(Key::Int(3))
        );
        assert_eq!(
            Key::bound_for(KeyKind::Float, Datum::Int8(3)),
            Some(Key::Float(3.0))
        );
        assert_eq!(Key::bound_for(KeyKind::Int, Datum::Float8(3.5)), None);
        assert_eq!(Key::bound_for(KeyKind::Int, Datum::Null), None);
        assert_eq!(
            Key::bound_for(KeyKind::Timestamp, Datum::Timestamptz(5)),
            Some(Key::Timestamp(5))
        );
    }
}
