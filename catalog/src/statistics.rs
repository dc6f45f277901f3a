//! Per-column statistics gathered by ANALYZE: what PostgreSQL keeps in `pg_statistic` and
//! shows in `pg_stats`, and what the planner estimates selectivities from.
//!
//! # What is kept
//!
//! For each analyzed column of a table (keyed by `attnum`, 1-based, as in PostgreSQL):
//!
//! | field | `pg_stats` column | meaning |
//! |---|---|---|
//! | `null_frac` | `null_frac` | fraction of rows whose value is NULL |
//! | `avg_width` | `avg_width` | average stored width of the non-NULL values, bytes |
//! | `n_distinct` | `n_distinct` | > 0: estimated number of distinct values; < 0: minus the number of distinct values divided by the row count (−1 = unique); 0 = unknown |
//! | `mcv` | `most_common_vals`, `most_common_freqs` | the most common values, most common first, each with the fraction of *all* rows (NULLs included) holding it |
//! | `histogram` | `histogram_bounds` | ascending bounds splitting the values *not* in the MCV list into equal-population buckets |
//! | `correlation` | `correlation` | −1..1: how closely the physical row order follows the value order |
//!
//! These are PostgreSQL's slots 1 (MCV), 2 (histogram) and 3 (correlation); the element,
//! range and extended statistics PostgreSQL has for other types do not exist in iolab.
//!
//! # How it is stored
//!
//! In the catalog document (`global/catalog.json`), a map from table OID to
//! [`TableStatistics`], beside the table definitions: a table's definition stays small and
//! cheap to clone, and statistics go away with the table (DROP) but survive TRUNCATE, as in
//! PostgreSQL. Values are kept in the column type's own representation ([`StatValue`]), not
//! as text, so the planner compares them with constants without parsing.
//!
//! # Reading them (the planner's API)
//!
//! ```ignore
//! let table = catalog.resolve(None, "t")?;
//! if let Some(stats) = catalog.column_statistics(table.oid, 1) {     // column a
//!     let distinct = stats.distinct_count(table.reltuples);         // n_distinct as a count
//!     for (value, freq) in stats.most_common() { /* eqsel: value == const → freq */ }
//!     let bounds = stats.histogram_bounds();                          // ineq_histogram_selectivity
//!     let x = bounds.first().and_then(StatValue::to_scalar);          // convert_to_scalar
//! }
//! ```

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::PgResult;
use crate::store::Catalog;
use crate::types::PgType;

/// One value of a column as statistics keep it (an element of `pg_statistic.stavaluesN`).
///
/// Values of one column are always of one variant; the column's [`PgType`] (kept in
/// [`ColumnStatistics::ty`]) says how to print them. The order ([`Ord`]) is the order of
/// the type's default B-tree operator class: numbers by value, with NaN above every other
/// float and −0 equal to 0 (PostgreSQL's `float8_cmp`); text by bytes (the C collation,
/// as iolab sorts text); `false < true`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub enum StatValue {
    Bool(bool),
    /// int2, int4, int8
    Int(i64),
    /// float4 (exactly widened) and float8
    Float(#[serde(with = "float_text")] f64),
    /// numeric: the unscaled Decimal128 integer; the scale is the column type's
    Numeric(#[serde(with = "i128_text")] i128),
    /// text, varchar, bpchar (bpchar with its blank padding, as stored)
    Text(String),
    /// days since 1970-01-01
    Date(i32),
    /// µs since 1970-01-01 00:00 (UTC for timestamptz)
    Timestamp(i64),
}

impl StatValue {
    fn rank(&self) -> u8 {
        match self {
            StatValue::Bool(_) => 0,
            StatValue::Int(_) => 1,
            StatValue::Float(_) => 2,
            StatValue::Numeric(_) => 3,
            StatValue::Text(_) => 4,
            StatValue::Date(_) => 5,
            StatValue::Timestamp(_) => 6,
        }
    }

    /// The value as a number on a scale where differences mean something, for
    /// interpolating inside a histogram bucket (PostgreSQL's `convert_to_scalar` for
    /// numeric, date and time types). `None` for text and booleans; `scale` of a numeric
    /// column turns its unscaled integer into the number.
    pub fn to_scalar_scaled(&self, scale: i8) -> Option<f64> {
        match self {
            StatValue::Int(i) => Some(*i as f64),
            StatValue::Float(f) => Some(*f),
            StatValue::Numeric(n) => Some(*n as f64 / 10f64.powi(scale as i32)),
            StatValue::Date(d) => Some(*d as f64),
            StatValue::Timestamp(t) => Some(*t as f64),
            StatValue::Bool(_) | StatValue::Text(_) => None,
        }
    }

    /// [`to_scalar_scaled`](Self::to_scalar_scaled) for types without a scale (a numeric
    /// value comes out unscaled, which keeps its order and relative distances).
    pub fn to_scalar(&self) -> Option<f64> {
        self.to_scalar_scaled(0)
    }

    /// A constant of a query (DataFusion's literal) as a value comparable with the
    /// statistics of a column of type `ty`: integers and floats widen to the column's kind,
    /// a decimal is rescaled to a numeric column's scale. `None` for NULL and for
    /// constants that do not compare with the column's values.
    pub fn from_scalar(value: &datafusion::scalar::ScalarValue, ty: PgType) -> Option<StatValue> {
        use datafusion::scalar::ScalarValue as S;
        let as_f64 = || -> Option<f64> {
            Some(match value {
                S::Int8(Some(v)) => *v as f64,
                S::Int16(Some(v)) => *v as f64,
                S::Int32(Some(v)) => *v as f64,
                S::Int64(Some(v)) => *v as f64,
                S::UInt8(Some(v)) => *v as f64,
                S::UInt16(Some(v)) => *v as f64,
                S::UInt32(Some(v)) => *v as f64,
                S::UInt64(Some(v)) => *v as f64,
                S::Float32(Some(v)) => *v as f64,
                S::Float64(Some(v)) => *v,
                S::Decimal128(Some(v), _, s) => *v as f64 / 10f64.powi(*s as i32),
                _ => return None,
            })
        };
        match ty {
            PgType::Bool => match value {
                S::Boolean(Some(b)) => Some(StatValue::Bool(*b)),
                _ => None,
            },
            PgType::Int2 | PgType::Int4 | PgType::Int8 => match value {
                S::Int8(Some(v)) => Some(StatValue::Int(*v as i64)),
                S::Int16(Some(v)) => Some(StatValue::Int(*v as i64)),
                S::Int32(Some(v)) => Some(StatValue::Int(*v as i64)),
                S::Int64(Some(v)) => Some(StatValue::Int(*v)),
                S::UInt8(Some(v)) => Some(StatValue::Int(*v as i64)),
                S::UInt16(Some(v)) => Some(StatValue::Int(*v as i64)),
                S::UInt32(Some(v)) => Some(StatValue::Int(*v as i64)),
                S::UInt64(Some(v)) => i64::try_from(*v).ok().map(StatValue::Int),
                // A fractional constant against an integer column: compare as a float
                // would; the nearest integers bracket it well enough for estimates.
                _ => as_f64().map(|f| StatValue::Int(f.round() as i64)),
            },
            PgType::Float4 | PgType::Float8 => as_f64().map(StatValue::Float),
            PgType::Numeric { scale, .. } => match value {
                S::Decimal128(Some(v), _, s) => {
                    let shift = scale as i32 - *s as i32;
                    let scaled = if shift >= 0 {
                        v.checked_mul(10i128.checked_pow(shift as u32)?)?
                    } else {
                        v / 10i128.checked_pow((-shift) as u32)?
                    };
                    Some(StatValue::Numeric(scaled))
                }
                _ => as_f64()
                    .map(|f| StatValue::Numeric((f * 10f64.powi(scale as i32)).round() as i128)),
            },
            PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => match value {
                S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => {
                    Some(StatValue::Text(s.clone()))
                }
                _ => None,
            },
            PgType::Date => match value {
                S::Date32(Some(d)) => Some(StatValue::Date(*d)),
                _ => None,
            },
            PgType::Timestamp | PgType::Timestamptz => match value {
                S::TimestampMicrosecond(Some(t), _) => Some(StatValue::Timestamp(*t)),
                S::TimestampMillisecond(Some(t), _) => {
                    t.checked_mul(1000).map(StatValue::Timestamp)
                }
                S::TimestampSecond(Some(t), _) => {
                    t.checked_mul(1_000_000).map(StatValue::Timestamp)
                }
                S::TimestampNanosecond(Some(t), _) => Some(StatValue::Timestamp(t / 1000)),
                _ => None,
            },
            // ANALYZE keeps no statistics of interval columns.
            PgType::Interval => None,
        }
    }
}

/// PostgreSQL's float order: NaN equals NaN and sorts above everything; −0 equals 0.
fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).expect("neither is NaN"),
    }
}

impl Ord for StatValue {
    fn cmp(&self, other: &StatValue) -> Ordering {
        use StatValue::*;
        match (self, other) {
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (Float(a), Float(b)) => float_cmp(*a, *b),
            (Numeric(a), Numeric(b)) => a.cmp(b),
            (Text(a), Text(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Date(a), Date(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for StatValue {
    fn partial_cmp(&self, other: &StatValue) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for StatValue {
    fn eq(&self, other: &StatValue) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for StatValue {}

/// The most-common-values list: values most common first, `freqs[i]` the fraction of all
/// rows equal to `values[i]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MostCommonValues {
    pub values: Vec<StatValue>,
    pub freqs: Vec<f32>,
}

/// The statistics of one column (one `pg_statistic` row with `stainherit = false`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnStatistics {
    /// The column's number, 1-based (`pg_attribute.attnum`).
    pub attnum: i16,
    /// The column's type when it was analyzed: how to print the values.
    pub ty: PgType,
    pub null_frac: f32,
    pub avg_width: i32,
    pub n_distinct: f32,
    pub mcv: Option<MostCommonValues>,
    /// At least 2 bounds when present.
    pub histogram: Option<Vec<StatValue>>,
    pub correlation: Option<f32>,
}

impl ColumnStatistics {
    /// The estimated number of distinct non-NULL values in a table of `reltuples` rows
    /// (`n_distinct` resolved: a negative one scales with the row count). `None` when
    /// unknown (`n_distinct` = 0).
    pub fn distinct_count(&self, reltuples: f64) -> Option<f64> {
        match self.n_distinct {
            d if d > 0.0 => Some(d as f64),
            d if d < 0.0 => Some((-(d as f64) * reltuples.max(0.0)).round().max(1.0)),
            _ => None,
        }
    }

    /// Whether ANALYZE judged the column unique (`n_distinct` = −1 after NULLs).
    pub fn is_unique(&self) -> bool {
        self.n_distinct < 0.0 && (-self.n_distinct + self.null_frac - 1.0).abs() < 1e-6
    }

    /// The most common values with their frequencies, most common first.
    pub fn most_common(&self) -> impl Iterator<Item = (&StatValue, f64)> {
        self.mcv
            .iter()
            .flat_map(|m| m.values.iter().zip(m.freqs.iter().map(|&f| f as f64)))
    }

    /// Sum of the MCV frequencies (0 without an MCV list).
    pub fn mcv_total_frequency(&self) -> f64 {
        self.most_common().map(|(_, f)| f).sum()
    }

    /// The frequency of `value` if it is in the MCV list.
    pub fn mcv_frequency(&self, value: &StatValue) -> Option<f64> {
        self.most_common()
            .find(|(v, _)| *v == value)
            .map(|(_, f)| f)
    }

    /// The histogram bounds (empty without a histogram).
    pub fn histogram_bounds(&self) -> &[StatValue] {
        self.histogram.as_deref().unwrap_or(&[])
    }
}

/// The statistics of one table's columns, by attnum.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TableStatistics {
    pub columns: BTreeMap<i16, ColumnStatistics>,
}

impl Catalog {
    /// Records the result of ANALYZE on table `oid`: its page and row counts
    /// (`pg_class.relpages`, `reltuples`) and the statistics of the analyzed columns, which
    /// replace those columns' earlier statistics (other columns keep theirs, as a
    /// column-list ANALYZE leaves them in PostgreSQL). One durable catalog write.
    pub fn record_analyze(
        &self,
        oid: u32,
        relpages: u32,
        reltuples: f64,
        columns: Vec<ColumnStatistics>,
    ) -> PgResult<()> {
        let mut data = self.data.write();
        let Some(table) = data.tables.get_mut(&oid) else {
            return Ok(()); // dropped meanwhile: nothing to record
        };
        table.relpages = relpages;
        table.reltuples = reltuples;
        let stats = data.statistics.entry(oid).or_default();
        for c in columns {
            stats.columns.insert(c.attnum, c);
        }
        self.save(&data)
    }

    /// The statistics of every column of table `oid` that has been analyzed.
    pub fn table_statistics(&self, oid: u32) -> Option<TableStatistics> {
        self.data.read().statistics.get(&oid).cloned()
    }

    /// The statistics of column `attnum` (1-based) of table `oid`, if analyzed.
    pub fn column_statistics(&self, oid: u32, attnum: i16) -> Option<ColumnStatistics> {
        self.data
            .read()
            .statistics
            .get(&oid)
            .and_then(|t| t.columns.get(&attnum))
            .cloned()
    }

    /// Every analyzed table with its statistics, ordered by OID (for `pg_stats`).
    pub fn all_statistics(&self) -> Vec<(crate::TableDef, TableStatistics)> {
        let data = self.data.read();
        data.statistics
            .iter()
            .filter_map(|(oid, s)| data.tables.get(oid).map(|t| (t.clone(), s.clone())))
            .collect()
    }
}

/// Floats as JSON numbers when finite, as `"NaN"`, `"Infinity"`, `"-Infinity"` otherwise
/// (JSON has no such numbers; serde_json would write `null`).
mod float_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_finite() {
            s.serialize_f64(*v)
        } else if v.is_nan() {
            s.serialize_str("NaN")
        } else if *v > 0.0 {
            s.serialize_str("Infinity")
        } else {
            s.serialize_str("-Infinity")
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Number(f64),
        Text(String),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Repr::deserialize(d)? {
            Repr::Number(f) => Ok(f),
            Repr::Text(t) => match t.as_str() {
                "NaN" => Ok(f64::NAN),
                "Infinity" => Ok(f64::INFINITY),
                "-Infinity" => Ok(f64::NEG_INFINITY),
                other => Err(serde::de::Error::custom(format!("bad float \"{other}\""))),
            },
        }
    }
}

/// 128-bit integers as decimal strings (JSON numbers beyond 64 bits do not survive every
/// reader).
mod i128_text {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &i128, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i128, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_is_the_btree_order() {
        let mut v = [
            StatValue::Float(f64::NAN),
            StatValue::Float(1.0),
            StatValue::Float(f64::NEG_INFINITY),
            StatValue::Float(-0.0),
            StatValue::Float(f64::INFINITY),
        ];
        v.sort();
        assert!(matches!(v[0], StatValue::Float(f) if f == f64::NEG_INFINITY));
        assert!(matches!(v[4], StatValue::Float(f) if f.is_nan()));
        assert_eq!(StatValue::Float(-0.0), StatValue::Float(0.0));
        assert_eq!(StatValue::Float(f64::NAN), StatValue::Float(f64::NAN));
        // Text compares by bytes (C collation): 'B' < 'a'.
        assert!(StatValue::Text("B".into()) < StatValue::Text("a".into()));
        assert!(StatValue::Bool(false) < StatValue::Bool(true));
    }

    #[test]
    fn values_survive_json() {
        let values = vec![
            StatValue::Float(f64::NAN),
            StatValue::Float(f64::INFINITY),
            StatValue::Float(f64::NEG_INFINITY),
            StatValue::Float(0.1),
            StatValue::Numeric(i128::MAX),
            StatValue::Numeric(-12345),
            StatValue::Text("a \"b\"".into()),
            StatValue::Timestamp(-1),
            StatValue::Date(19000),
            StatValue::Int(i64::MIN),
            StatValue::Bool(true),
        ];
        let json = serde_json::to_string(&values).unwrap();
        let back: Vec<StatValue> = serde_json::from_str(&json).unwrap();
        assert_eq!(values, back);
        assert!(matches!(back[3], StatValue::Float(f) if f == 0.1));
    }

    #[test]
    fn accessors() {
        let stats = ColumnStatistics {
            attnum: 1,
            ty: PgType::Int4,
            null_frac: 0.1,
            avg_width: 4,
            n_distinct: -0.9,
            mcv: Some(MostCommonValues {
                values: vec![StatValue::Int(7), StatValue::Int(3)],
                freqs: vec![0.5, 0.25],
            }),
            histogram: None,
            correlation: Some(1.0),
        };
        assert_eq!(stats.distinct_count(1000.0), Some(900.0));
        assert!(stats.is_unique());
        assert_eq!(stats.mcv_frequency(&StatValue::Int(3)), Some(0.25));
        assert_eq!(stats.mcv_frequency(&StatValue::Int(4)), None);
        assert!((stats.mcv_total_frequency() - 0.75).abs() < 1e-9);
        assert!(stats.histogram_bounds().is_empty());
        assert_eq!(StatValue::Numeric(12345).to_scalar_scaled(2), Some(123.45));
        assert_eq!(StatValue::Text("x".into()).to_scalar(), None);
    }

    #[test]
    fn constants_meet_column_values() {
        use datafusion::scalar::ScalarValue as S;
        assert_eq!(
            StatValue::from_scalar(&S::Int64(Some(140)), PgType::Int4),
            Some(StatValue::Int(140))
        );
        assert_eq!(
            StatValue::from_scalar(&S::Int32(Some(3)), PgType::Float8),
            Some(StatValue::Float(3.0))
        );
        let numeric = PgType::Numeric {
            precision: 10,
            scale: 2,
        };
        assert_eq!(
            StatValue::from_scalar(&S::Decimal128(Some(15), 38, 1), numeric),
            Some(StatValue::Numeric(150))
        );
        assert_eq!(
            StatValue::from_scalar(&S::Utf8(Some("fff".into())), PgType::Text),
            Some(StatValue::Text("fff".into()))
        );
        assert_eq!(StatValue::from_scalar(&S::Int32(None), PgType::Int4), None);
        assert_eq!(
            StatValue::from_scalar(&S::Utf8(Some("x".into())), PgType::Int4),
            None
        );
    }
}
