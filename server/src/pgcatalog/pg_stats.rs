//! `pg_stats`: the statistics ANALYZE gathered, one row per analyzed column, in PostgreSQL
//! 18's columns.
//!
//! | column | type | iolab |
//! |---|---|---|
//! | `schemaname`, `tablename`, `attname` | name | |
//! | `inherited` | boolean | always false (no inheritance) |
//! | `null_frac`, `avg_width`, `n_distinct` | real, integer, real | |
//! | `most_common_vals`, `histogram_bounds` | anyarray | the values' text in array form, `{42,40,38}`, `{"a b",c}` |
//! | `most_common_freqs` | real[] | |
//! | `correlation` | real | |
//! | `most_common_elems` … `range_bounds_histogram` | | always NULL (no array or range types) |
//!
//! PostgreSQL's `anyarray` columns hold arrays of the column's own type; a view here has
//! one schema for every row, so iolab keeps them as text arrays whose elements are the
//! values printed as the column type prints them in this session (`TimeZone`,
//! `extra_float_digits`): the text a client sees is PostgreSQL's. Clients see the type
//! as `text[]`, not `anyarray`.
//!
//! The view is computed from the catalog each time a statement scans it.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float32Builder,
    Float64Array, Int16Array, Int32Array, Int64Array, ListBuilder, StringArray, StringBuilder,
    TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_catalog::types::TIMESTAMPTZ_ZONE;
use iolab_catalog::{PgType, StatValue};
use iolab_engine::values::{text_value, TextFormat};
use iolab_settings::{ServerSettings, SessionSettings};

use super::computed_views::ComputedView;
use super::tables::{CatalogSchema, SharedCatalogState};

fn text_list() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)))
}

fn real_list() -> DataType {
    DataType::List(Arc::new(Field::new("item", DataType::Float32, true)))
}

/// PostgreSQL 18's columns of `pg_stats`.
pub fn schema() -> SchemaRef {
    let f = |name: &str, dt: DataType| Field::new(name, dt, true);
    Arc::new(Schema::new(vec![
        f("schemaname", DataType::Utf8),
        f("tablename", DataType::Utf8),
        f("attname", DataType::Utf8),
        f("inherited", DataType::Boolean),
        f("null_frac", DataType::Float32),
        f("avg_width", DataType::Int32),
        f("n_distinct", DataType::Float32),
        f("most_common_vals", text_list()),
        f("most_common_freqs", real_list()),
        f("histogram_bounds", text_list()),
        f("correlation", DataType::Float32),
        f("most_common_elems", text_list()),
        f("most_common_elem_freqs", real_list()),
        f("elem_count_histogram", real_list()),
        f("range_length_histogram", text_list()),
        f("range_empty_frac", DataType::Float32),
        f("range_bounds_histogram", text_list()),
    ]))
}

/// The text form of each of `values` (all of type `ty`) as the session prints them.
pub fn value_texts(ty: PgType, values: &[StatValue], fmt: &TextFormat) -> Vec<String> {
    let int = |v: &StatValue| match v {
        StatValue::Int(i) => Some(*i),
        StatValue::Date(d) => Some(*d as i64),
        StatValue::Timestamp(t) => Some(*t),
        _ => None,
    };
    let array: ArrayRef = match ty {
        PgType::Bool => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    StatValue::Bool(b) => Some(*b),
                    _ => None,
                })
                .collect::<BooleanArray>(),
        ),
        PgType::Int2 => Arc::new(
            values
                .iter()
                .map(|v| int(v).map(|i| i as i16))
                .collect::<Int16Array>(),
        ),
        PgType::Int4 => Arc::new(
            values
                .iter()
                .map(|v| int(v).map(|i| i as i32))
                .collect::<Int32Array>(),
        ),
        PgType::Int8 => Arc::new(values.iter().map(int).collect::<Int64Array>()),
        PgType::Float4 | PgType::Float8 => {
            let floats = values.iter().map(|v| match v {
                StatValue::Float(f) => Some(*f),
                _ => None,
            });
            if ty == PgType::Float4 {
                Arc::new(
                    floats
                        .map(|f| f.map(|f| f as f32))
                        .collect::<Float32Array>(),
                )
            } else {
                Arc::new(floats.collect::<Float64Array>())
            }
        }
        PgType::Numeric { precision, scale } => {
            let array = values
                .iter()
                .map(|v| match v {
                    StatValue::Numeric(n) => Some(*n),
                    _ => None,
                })
                .collect::<Decimal128Array>();
            Arc::new(
                array
                    .clone()
                    .with_precision_and_scale(precision, scale)
                    .unwrap_or(array),
            )
        }
        PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    StatValue::Text(s) => Some(s.as_str()),
                    _ => None,
                })
                .collect::<StringArray>(),
        ),
        PgType::Date => Arc::new(
            values
                .iter()
                .map(|v| int(v).map(|i| i as i32))
                .collect::<Date32Array>(),
        ),
        PgType::Timestamp => Arc::new(
            values
                .iter()
                .map(int)
                .collect::<TimestampMicrosecondArray>(),
        ),
        PgType::Timestamptz => Arc::new(
            values
                .iter()
                .map(int)
                .collect::<TimestampMicrosecondArray>()
                .with_timezone(TIMESTAMPTZ_ZONE),
        ),
        // ANALYZE keeps no statistics of intervals.
        PgType::Interval => return Vec::new(),
    };
    (0..values.len())
        .map(|i| text_value(array.as_ref(), i, fmt).unwrap_or_else(|| "NULL".into()))
        .collect()
}

/// The rows of `pg_stats` now.
pub fn batch(shared: &SharedCatalogState) -> Result<RecordBatch> {
    let settings = shared
        .session
        .read()
        .as_ref()
        .map(|(s, _, _)| s.clone())
        .unwrap_or_else(|| SessionSettings::new(&ServerSettings::defaults()));
    let fmt = crate::session::text_format_for(&settings);
    let mut schemaname = StringBuilder::new();
    let mut tablename = StringBuilder::new();
    let mut attname = StringBuilder::new();
    let mut inherited = Vec::new();
    let mut null_frac = Vec::new();
    let mut avg_width = Vec::new();
    let mut n_distinct = Vec::new();
    let mut mcv = ListBuilder::new(StringBuilder::new());
    let mut mcf = ListBuilder::new(Float32Builder::new());
    let mut hist = ListBuilder::new(StringBuilder::new());
    let mut correlation = Vec::new();
    let mut rows = 0usize;
    for (table, stats) in shared.db.catalog.all_statistics() {
        for (attnum, column) in &stats.columns {
            let Some(def) = table.columns.get(*attnum as usize - 1) else {
                continue;
            };
            rows += 1;
            schemaname.append_value(&table.schema);
            tablename.append_value(&table.name);
            attname.append_value(&def.name);
            inherited.push(Some(false));
            null_frac.push(Some(column.null_frac));
            avg_width.push(Some(column.avg_width));
            n_distinct.push(Some(column.n_distinct));
            match &column.mcv {
                Some(m) => {
                    for t in value_texts(column.ty, &m.values, &fmt) {
                        mcv.values().append_value(t);
                    }
                    mcv.append(true);
                    for f in &m.freqs {
                        mcf.values().append_value(*f);
                    }
                    mcf.append(true);
                }
                None => {
                    mcv.append(false);
                    mcf.append(false);
                }
            }
            match &column.histogram {
                Some(h) => {
                    for t in value_texts(column.ty, h, &fmt) {
                        hist.values().append_value(t);
                    }
                    hist.append(true);
                }
                None => hist.append(false),
            }
            correlation.push(column.correlation);
        }
    }
    let schema = schema();
    let null_column =
        |i: usize| datafusion::arrow::array::new_null_array(schema.field(i).data_type(), rows);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(schemaname.finish()),
        Arc::new(tablename.finish()),
        Arc::new(attname.finish()),
        Arc::new(BooleanArray::from(inherited)),
        Arc::new(Float32Array::from(null_frac)),
        Arc::new(Int32Array::from(avg_width)),
        Arc::new(Float32Array::from(n_distinct)),
        Arc::new(mcv.finish()),
        Arc::new(mcf.finish()),
        Arc::new(hist.finish()),
        Arc::new(Float32Array::from(correlation)),
        null_column(11),
        null_column(12),
        null_column(13),
        null_column(14),
        null_column(15),
        null_column(16),
    ];
    Ok(RecordBatch::try_new(schema, columns)?)
}

/// Adds `pg_stats`, computed when a statement scans it, to a session's `pg_catalog`
/// schema.
pub fn register_view(pg_catalog: &CatalogSchema) {
    use datafusion::catalog::SchemaProvider;
    let shared = pg_catalog.shared.clone();
    let view = ComputedView::of_batch(schema(), move || batch(&shared));
    if let Err(e) = pg_catalog.register_table("pg_stats".to_string(), Arc::new(view)) {
        tracing::error!("could not register pg_stats: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_print_as_their_type() {
        let fmt = TextFormat::default();
        assert_eq!(
            value_texts(
                PgType::Int4,
                &[StatValue::Int(42), StatValue::Int(-1)],
                &fmt
            ),
            vec!["42", "-1"]
        );
        assert_eq!(
            value_texts(PgType::Float4, &[StatValue::Float(0.1f32 as f64)], &fmt),
            vec!["0.1"]
        );
        assert_eq!(
            value_texts(
                PgType::Numeric {
                    precision: 10,
                    scale: 2
                },
                &[StatValue::Numeric(150)],
                &fmt
            ),
            vec!["1.50"]
        );
        assert_eq!(
            value_texts(PgType::Date, &[StatValue::Date(0)], &fmt),
            vec!["1970-01-01"]
        );
        assert_eq!(
            value_texts(PgType::Timestamp, &[StatValue::Timestamp(1_500_000)], &fmt),
            vec!["1970-01-01 00:00:01.5"]
        );
        assert_eq!(
            value_texts(PgType::Bool, &[StatValue::Bool(true)], &fmt),
            vec!["t"]
        );
        assert_eq!(schema().fields().len(), 17);
    }
}
