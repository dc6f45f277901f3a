//! A table's columns and the attributes its tuples store, once ALTER TABLE has added or
//! dropped columns.
//!
//! A heap tuple stores one attribute per column, in the order of the columns' attribute
//! numbers (`pg_attribute.attnum`, from 1), and says in its header how many it stores.
//! Until the first ALTER TABLE, column `i` (0-based, as [`TableDef::columns`] lists
//! them) is attribute `i + 1` and every tuple stores all of them. Two changes, made as
//! PostgreSQL makes them, so that neither rewrites the table:
//!
//! - **DROP COLUMN** takes the column out of [`TableDef::columns`] but its attribute stays
//!   in the tuples (old tuples keep the value, new ones store NULL there): the attribute
//!   is listed in [`StoredAttributes::dropped`] with its number and type, so that a
//!   reader can step over it. Attribute numbers are never reused: the columns after it
//!   keep theirs, and `pg_attribute` shows a gap filled by a row with `attisdropped`.
//! - **ADD COLUMN** appends a column with the next attribute number. Tuples written
//!   before it store fewer attributes; reading one, the absent trailing attributes are
//!   NULL, or — when the column was added with a non-volatile, non-NULL default — the
//!   default's value as it was computed at ADD COLUMN, kept in
//!   [`StoredAttributes::missing`] (PostgreSQL's `attmissingval`). Tuples written after
//!   store the attribute, so the value is only ever read for old tuples.
//!
//! Worked example: `CREATE TABLE t (a int, b text, c int)`, a row inserted, then
//! `ALTER TABLE t DROP COLUMN b`, `ALTER TABLE t ADD COLUMN d int DEFAULT 7`:
//!
//! ```text
//!  columns (live):        a        c        d
//!  attnum:                1   (2)  3        4
//!  dropped:                   b:text
//!  missing:                                 4 → 7
//!  old tuple (natts 3):   a    b    c               d reads 7
//!  new tuple (natts 4):   a   NULL  c       d
//! ```

use serde::{Deserialize, Serialize};

use crate::store::TableDef;
use crate::types::PgType;

/// What a table's tuples store besides the values of its live columns (see the module
/// comment). Empty for a table ALTER TABLE never added or dropped columns of.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredAttributes {
    /// Attributes of dropped columns, by attribute number (ascending).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<DroppedAttribute>,
    /// Values old tuples read for columns added after them, by attribute number.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<MissingValue>,
}

impl StoredAttributes {
    pub fn is_plain(&self) -> bool {
        self.dropped.is_empty() && self.missing.is_empty()
    }
}

/// The attribute a dropped column leaves in the tuples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DroppedAttribute {
    pub attnum: u16,
    /// The column's type (how to step over its values).
    pub ty: PgType,
}

/// The value tuples older than column `attnum` read for it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MissingValue {
    pub attnum: u16,
    /// The value's bytes as a tuple stores them, without a varlena header: little-endian
    /// for fixed-width types, the UTF-8 text for text types.
    pub bytes: Vec<u8>,
}

/// One attribute of a table's tuples, in attribute-number order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Attribute {
    /// Live column `index` of [`TableDef::columns`].
    Column(usize),
    /// A dropped column's attribute, of this type.
    Dropped(PgType),
}

/// The name PostgreSQL gives a dropped column in `pg_attribute`.
pub fn dropped_column_name(attnum: u16) -> String {
    format!("........pg.dropped.{attnum}........")
}

impl TableDef {
    /// Attributes a tuple of the table stores when complete: live and dropped columns.
    pub fn attribute_count(&self) -> usize {
        self.columns.len() + self.stored.dropped.len()
    }

    /// Every attribute, in attribute-number order (attribute `i` has number `i + 1`).
    pub fn attributes(&self) -> Vec<Attribute> {
        let mut dropped = self.stored.dropped.iter().peekable();
        let mut column = 0;
        let mut out = Vec::with_capacity(self.attribute_count());
        for attnum in 1..=self.attribute_count() {
            match dropped.peek() {
                Some(d) if d.attnum as usize == attnum => {
                    out.push(Attribute::Dropped(d.ty));
                    dropped.next();
                }
                _ => {
                    out.push(Attribute::Column(column));
                    column += 1;
                }
            }
        }
        assert_eq!(
            column,
            self.columns.len(),
            "dropped attributes out of range"
        );
        out
    }

    /// The attribute number of live column `column` (0-based).
    pub fn attnum(&self, column: usize) -> u16 {
        assert!(
            column < self.columns.len(),
            "column {column} of {}",
            self.columns.len()
        );
        let mut attnum = column as u16 + 1;
        for d in &self.stored.dropped {
            if d.attnum <= attnum {
                attnum += 1;
            }
        }
        attnum
    }

    /// The live column of attribute number `attnum`, if it is one.
    pub fn column_of_attnum(&self, attnum: u16) -> Option<usize> {
        match self.attributes().get((attnum as usize).checked_sub(1)?)? {
            Attribute::Column(c) => Some(*c),
            Attribute::Dropped(_) => None,
        }
    }

    /// The value old tuples read for attribute `attnum` (see [`MissingValue`]).
    pub fn missing_value(&self, attnum: u16) -> Option<&[u8]> {
        self.stored
            .missing
            .iter()
            .find(|m| m.attnum == attnum)
            .map(|m| m.bytes.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{ColumnDef, Persistence};

    fn table(columns: &[&str], dropped: &[u16]) -> TableDef {
        TableDef {
            oid: 16384,
            schema: "public".into(),
            name: "t".into(),
            relfilenode: 16384,
            persistence: Persistence::Permanent,
            columns: columns
                .iter()
                .map(|n| ColumnDef {
                    name: n.to_string(),
                    ty: PgType::Int4,
                    not_null: false,
                })
                .collect(),
            reltuples: -1.0,
            relpages: 0,
            stored: StoredAttributes {
                dropped: dropped
                    .iter()
                    .map(|&attnum| DroppedAttribute {
                        attnum,
                        ty: PgType::Text,
                    })
                    .collect(),
                missing: vec![],
            },
            reloptions: vec![],
        }
    }

    #[test]
    fn attribute_numbers_skip_dropped_columns() {
        let t = table(&["a", "c", "d"], &[2, 5]);
        assert_eq!(
            t.attributes(),
            [
                Attribute::Column(0),
                Attribute::Dropped(PgType::Text),
                Attribute::Column(1),
                Attribute::Column(2),
                Attribute::Dropped(PgType::Text),
            ]
        );
        assert_eq!([t.attnum(0), t.attnum(1), t.attnum(2)], [1, 3, 4]);
        assert_eq!(t.column_of_attnum(3), Some(1));
        assert_eq!(t.column_of_attnum(2), None);
        assert_eq!(t.column_of_attnum(6), None);
        let plain = table(&["a", "b"], &[]);
        assert_eq!([plain.attnum(0), plain.attnum(1)], [1, 2]);
        assert_eq!(dropped_column_name(2), "........pg.dropped.2........");
    }
}
