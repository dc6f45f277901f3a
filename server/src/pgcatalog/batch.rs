//! Catalog rows to Arrow: column lists written the way PostgreSQL's `\d` prints them, and
//! rows of loosely typed values turned into record batches of exactly those columns.
//!
//! A catalog's columns are declared as one string, `"oid oid!, relname name!, relacl
//! aclitem[]"` — name, PostgreSQL type, `!` for NOT NULL — so each table reads like its
//! PostgreSQL 18 definition and `pg_attribute` can describe the catalogs themselves. The
//! PostgreSQL type decides the Arrow type:
//!
//! | PostgreSQL | Arrow |
//! |---|---|
//! | `oid`, `xid`, `bigint`, `regclass`, `regnamespace`, `regrole` | Int64 |
//! | `integer` / `smallint` | Int32 / Int16 |
//! | `real` / `double precision` | Float32 / Float64 |
//! | `boolean` | Boolean |
//! | `timestamp with time zone` | Timestamp(µs, UTC) |
//! | `numeric` | Decimal128(38, 0): whole numbers such as byte counts, described as an unconstrained `numeric` |
//! | `name`, `text`, `"char"`, `regproc`, `regtype`, `pg_node_tree`, `int2vector`, `oidvector`, `aclitem`, … | Utf8 |
//! | `T[]` | List of T's Arrow type |
//!
//! Every Arrow field is nullable (outer joins and NULL-filled columns never trip a schema
//! check); the NOT NULL marks live on in `pg_attribute.attnotnull`.

use std::sync::Arc;

use datafusion::arrow::array::{
    new_null_array, ArrayRef, BooleanArray, Decimal128Array, Float32Array, Float64Array,
    Int16Array, Int32Array, Int64Array, ListBuilder, PrimitiveBuilder, StringArray, StringBuilder,
    TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{
    ArrowPrimitiveType, DataType, Field, Int16Type, Int32Type, Schema, SchemaRef, TimeUnit,
};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::{DataFusionError, Result};

use super::types;

/// One catalog column: its name, PostgreSQL type and NOT NULL mark.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnSpec {
    pub name: String,
    /// The type as `format_type` spells it (`integer`, `"char"`, `aclitem[]`).
    pub pg_type: String,
    pub not_null: bool,
}

impl ColumnSpec {
    /// The type's OID (0 when the name is unknown).
    pub fn type_oid(&self) -> u32 {
        types::type_oid_by_name(&self.pg_type).unwrap_or(0)
    }
}

/// Parses `"name type[!], …"`.
pub fn parse_columns(spec: &str) -> Vec<ColumnSpec> {
    spec.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|col| {
            let (name, ty) = col.split_once(' ').unwrap_or((col, "text"));
            let ty = ty.trim();
            let (ty, not_null) = match ty.strip_suffix('!') {
                Some(t) => (t.trim(), true),
                None => (ty, false),
            };
            ColumnSpec {
                name: name.to_string(),
                pg_type: ty.to_string(),
                not_null,
            }
        })
        .collect()
}

/// The Arrow type a catalog column of PostgreSQL type `pg_type` is kept as.
pub fn arrow_type(pg_type: &str) -> DataType {
    if let Some(elem) = pg_type.strip_suffix("[]") {
        return DataType::List(Arc::new(Field::new("item", arrow_type(elem), true)));
    }
    match pg_type {
        "oid" | "xid" | "bigint" | "regclass" | "regnamespace" | "regrole" => DataType::Int64,
        "integer" => DataType::Int32,
        "smallint" => DataType::Int16,
        "real" => DataType::Float32,
        "double precision" => DataType::Float64,
        "boolean" => DataType::Boolean,
        "numeric" => DataType::Decimal128(38, 0),
        "timestamp with time zone" => {
            DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into()))
        }
        _ => DataType::Utf8,
    }
}

/// The Arrow schema of a column list.
pub fn schema_of(columns: &[ColumnSpec]) -> SchemaRef {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| Field::new(&c.name, arrow_type(&c.pg_type), true))
            .collect::<Vec<_>>(),
    ))
}

/// A catalog value before it meets its column's type.
#[derive(Clone, Debug, PartialEq)]
pub enum V {
    Null,
    Int(i64),
    /// A whole number beyond `bigint` (a `numeric` column or result: `wal_bytes`,
    /// `pg_wal_lsn_diff`).
    Numeric(i128),
    Float(f64),
    Bool(bool),
    Text(String),
    /// An array of text values (`text[]`, `aclitem[]`, `"char"[]`).
    TextArray(Vec<String>),
}

impl V {
    pub fn text(s: impl Into<String>) -> V {
        V::Text(s.into())
    }

    pub fn opt_text(s: Option<impl Into<String>>) -> V {
        s.map(|s| V::Text(s.into())).unwrap_or(V::Null)
    }

    pub fn char(c: char) -> V {
        V::Text(c.to_string())
    }

    pub fn oid(o: u32) -> V {
        V::Int(o as i64)
    }

    fn as_i64(&self) -> Option<i64> {
        match self {
            V::Int(i) => Some(*i),
            V::Numeric(n) => i64::try_from(*n).ok(),
            V::Float(f) => Some(*f as i64),
            V::Bool(b) => Some(*b as i64),
            V::Text(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match self {
            V::Int(i) => Some(*i as f64),
            V::Numeric(n) => Some(*n as f64),
            V::Float(f) => Some(*f),
            V::Text(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    fn as_text(&self) -> Option<String> {
        match self {
            V::Null => None,
            V::Int(i) => Some(i.to_string()),
            V::Numeric(n) => Some(n.to_string()),
            V::Float(f) => Some(f.to_string()),
            V::Bool(b) => Some(if *b { "t" } else { "f" }.to_string()),
            V::Text(s) => Some(s.clone()),
            V::TextArray(a) => Some(format!("{{{}}}", a.join(","))),
        }
    }
}

/// Builds one Arrow column of type `dt` from values.
pub fn build_array(dt: &DataType, values: &[V]) -> Result<ArrayRef> {
    Ok(match dt {
        DataType::Int64 => Arc::new(values.iter().map(V::as_i64).collect::<Int64Array>()),
        DataType::Int32 => Arc::new(
            values
                .iter()
                .map(|v| v.as_i64().map(|i| i as i32))
                .collect::<Int32Array>(),
        ),
        DataType::Int16 => Arc::new(
            values
                .iter()
                .map(|v| v.as_i64().map(|i| i as i16))
                .collect::<Int16Array>(),
        ),
        DataType::Float32 => Arc::new(
            values
                .iter()
                .map(|v| v.as_f64().map(|f| f as f32))
                .collect::<Float32Array>(),
        ),
        DataType::Float64 => Arc::new(values.iter().map(V::as_f64).collect::<Float64Array>()),
        DataType::Boolean => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    V::Bool(b) => Some(*b),
                    V::Int(i) => Some(*i != 0),
                    _ => None,
                })
                .collect::<BooleanArray>(),
        ),
        DataType::Utf8 => Arc::new(values.iter().map(V::as_text).collect::<StringArray>()),
        DataType::Decimal128(precision, scale) => {
            let unit = 10i128.checked_pow(u32::try_from(*scale).unwrap_or(0));
            Arc::new(
                values
                    .iter()
                    .map(|v| {
                        let whole = match v {
                            V::Int(i) => Some(*i as i128),
                            V::Numeric(n) => Some(*n),
                            V::Text(s) => s.trim().parse().ok(),
                            _ => None,
                        };
                        whole.and_then(|w| w.checked_mul(unit?))
                    })
                    .collect::<Decimal128Array>()
                    .with_precision_and_scale(*precision, *scale)?,
            )
        }
        DataType::Timestamp(TimeUnit::Microsecond, tz) => Arc::new(
            values
                .iter()
                .map(V::as_i64)
                .collect::<TimestampMicrosecondArray>()
                .with_timezone_opt(tz.clone()),
        ),
        DataType::List(item) => match item.data_type() {
            DataType::Utf8 => {
                let mut b = ListBuilder::new(StringBuilder::new());
                for v in values {
                    match v {
                        V::TextArray(items) => {
                            for s in items {
                                b.values().append_value(s);
                            }
                            b.append(true);
                        }
                        _ => b.append(false),
                    }
                }
                Arc::new(b.finish())
            }
            // `smallint[]` (`conkey`), `integer[]` (`pg_blocking_pids`): text arrays of
            // numbers.
            DataType::Int16 => number_list::<Int16Type>(values),
            DataType::Int32 => number_list::<Int32Type>(values),
            _ => new_null_array(dt, values.len()),
        },
        _ if values.iter().all(|v| *v == V::Null) => new_null_array(dt, values.len()),
        other => {
            return Err(DataFusionError::Internal(format!(
                "catalog column of unsupported type {other}"
            )))
        }
    })
}

/// A list column of numbers of type `T` from text arrays of them (`V::TextArray`; any
/// other value is a NULL list).
fn number_list<T: ArrowPrimitiveType>(values: &[V]) -> ArrayRef
where
    T::Native: std::str::FromStr,
{
    let mut b = ListBuilder::new(PrimitiveBuilder::<T>::new());
    for v in values {
        match v {
            V::TextArray(items) => {
                for s in items {
                    b.values().append_option(s.parse::<T::Native>().ok());
                }
                b.append(true);
            }
            _ => b.append(false),
        }
    }
    Arc::new(b.finish())
}

/// A record batch of `schema` from rows of values (one `V` per column).
pub fn build_batch(schema: &SchemaRef, rows: &[Vec<V>]) -> Result<RecordBatch> {
    let width = schema.fields().len();
    let mut columns = Vec::with_capacity(width);
    for (i, field) in schema.fields().iter().enumerate() {
        let values: Vec<V> = rows
            .iter()
            .map(|r| {
                debug_assert_eq!(r.len(), width, "catalog row width must match its table");
                r.get(i).cloned().unwrap_or(V::Null)
            })
            .collect();
        columns.push(build_array(field.data_type(), &values)?);
    }
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &datafusion::arrow::record_batch::RecordBatchOptions::new()
            .with_row_count(Some(rows.len())),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Array;

    #[test]
    fn specs_parse_into_typed_fields() {
        let cols =
            parse_columns("oid oid!, relname name!, reltuples real!, relacl aclitem[], ts timestamp with time zone");
        assert_eq!(cols.len(), 5);
        assert!(cols[0].not_null && !cols[3].not_null);
        assert_eq!(cols[3].pg_type, "aclitem[]");
        assert_eq!(cols[4].pg_type, "timestamp with time zone");
        let schema = schema_of(&cols);
        assert_eq!(schema.field(0).data_type(), &DataType::Int64);
        assert_eq!(schema.field(2).data_type(), &DataType::Float32);
        assert!(matches!(schema.field(3).data_type(), DataType::List(_)));
        assert_eq!(cols[0].type_oid(), 26);
        assert_eq!(cols[1].type_oid(), 19);
        assert_eq!(cols[3].type_oid(), 1034);
        let batch = build_batch(
            &schema,
            &[
                vec![
                    V::Int(1),
                    V::text("a"),
                    V::Float(1.5),
                    V::TextArray(vec!["x".into()]),
                    V::Null,
                ],
                vec![V::Int(2), V::text("b"), V::Float(-1.0), V::Null, V::Int(0)],
            ],
        )
        .unwrap();
        assert_eq!(batch.num_rows(), 2);
        assert!(batch.column(3).is_null(1));
    }

    #[test]
    fn numeric_columns_hold_whole_numbers_beyond_bigint() {
        let cols = parse_columns("bytes numeric");
        let schema = schema_of(&cols);
        assert_eq!(schema.field(0).data_type(), &DataType::Decimal128(38, 0));
        assert_eq!(cols[0].type_oid(), 1700);
        let batch = build_batch(
            &schema,
            &[
                vec![V::Numeric(u64::MAX as i128)],
                vec![V::Int(-5)],
                vec![V::Null],
            ],
        )
        .unwrap();
        let a = batch
            .column(0)
            .as_any()
            .downcast_ref::<Decimal128Array>()
            .unwrap();
        assert_eq!(a.value(0), u64::MAX as i128);
        assert_eq!(a.value(1), -5);
        assert!(a.is_null(2));
    }
}
