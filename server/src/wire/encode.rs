//! Arrow results to PostgreSQL rows: RowDescription fields (type OIDs, typmods) and
//! DataRow messages in text or binary format, per column as the client asked.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::{DataType, Field, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::execution::SendableRecordBatchStream;
use futures::StreamExt;
use iolab_catalog::PgType;
use iolab_engine::values::{write_binary_with, write_text, TextFormat};
use pgwire::api::results::{FieldFormat, FieldInfo, QueryResponse};
use pgwire::api::Type;
use pgwire::error::PgWireResult;
use pgwire::messages::data::DataRow;

/// The PostgreSQL type a result column is reported as. A one-level list is its element
/// type's array (`integer[]`), sent in PostgreSQL's array formats.
pub fn pg_type_of(dt: &DataType) -> (Type, i32) {
    if let Some(element) = iolab_engine::values::array_element(dt) {
        // The element OID the binary format names (iolab_engine::values::output_binary).
        let element = iolab_engine::values::pg_type_for(element).oid();
        let array = crate::pgcatalog::types::type_row(element)
            .and_then(|row| Type::from_oid(row.array))
            .unwrap_or(Type::TEXT_ARRAY);
        return (array, -1);
    }
    match PgType::for_arrow(dt) {
        Some(t) => {
            let ty = Type::from_oid(t.oid()).unwrap_or(Type::TEXT);
            let typmod = if matches!(t, PgType::Numeric { .. })
                && !matches!(dt, DataType::Decimal128(38, _))
            {
                t.typmod()
            } else {
                -1
            };
            (ty, typmod)
        }
        None => (Type::TEXT, -1),
    }
}

/// Field metadata holding the type OID a text column is reported as, when it is not
/// `text` (EXPLAIN's `json` and `xml` documents).
const REPORTED_TYPE: &str = "iolab.reported_type_oid";

/// `text_column` reported to clients as a `ty` (whose text form it holds).
pub fn reported_as(text_column: Field, ty: Type) -> Field {
    assert_eq!(
        text_column.data_type(),
        &DataType::Utf8,
        "only text is reported as another type"
    );
    let metadata = [(REPORTED_TYPE.to_string(), ty.oid().to_string())];
    text_column.with_metadata(metadata.into())
}

/// RowDescription fields for a result schema; `format(i)` gives column i's format.
pub fn fields(schema: &SchemaRef, format: impl Fn(usize) -> FieldFormat) -> Arc<Vec<FieldInfo>> {
    Arc::new(
        schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let reported = f.metadata().get(REPORTED_TYPE);
                let (ty, typmod) = match reported.and_then(|oid| oid.parse().ok()) {
                    Some(oid) => (Type::from_oid(oid).expect("a known type OID"), -1),
                    None => pg_type_of(f.data_type()),
                };
                let size = match ty {
                    Type::BOOL => 1,
                    Type::INT2 => 2,
                    Type::INT4 | Type::FLOAT4 | Type::DATE => 4,
                    Type::INT8 | Type::FLOAT8 | Type::TIMESTAMP | Type::TIMESTAMPTZ => 8,
                    _ => -1,
                };
                FieldInfo::new(f.name().clone(), None, None, ty, format(i))
                    .with_type_size(size)
                    .with_type_modifier(typmod)
            })
            .collect(),
    )
}

/// Encodes one batch into DataRow messages.
pub fn encode_batch(batch: &RecordBatch, fields: &[FieldInfo], text: &TextFormat) -> Vec<DataRow> {
    let columns: Vec<&dyn Array> = batch.columns().iter().map(|c| c.as_ref()).collect();
    let mut rows = Vec::with_capacity(batch.num_rows());
    // One buffer for the batch, which every row is split off (a row's value is a 4-byte
    // length and, for the statistics views' numbers and timestamps, about 12 bytes of
    // text); it grows if the batch needs more.
    let mut buf = BytesMut::with_capacity(batch.num_rows() * columns.len() * 16);
    let mut scratch = Vec::with_capacity(64);
    for row in 0..batch.num_rows() {
        for (col, field) in columns.iter().zip(fields) {
            scratch.clear();
            let present = match field.format() {
                FieldFormat::Binary => write_binary_with(*col, row, text, &mut scratch),
                FieldFormat::Text => write_text(*col, row, text, &mut scratch),
            };
            if present {
                buf.put_i32(scratch.len() as i32);
                buf.put_slice(&scratch);
            } else {
                buf.put_i32(-1);
            }
        }
        rows.push(DataRow::new(buf.split(), columns.len() as i16));
    }
    rows
}

/// A pgwire response that encodes batches as the client reads them.
pub fn query_response(
    stream: SendableRecordBatchStream,
    fields: Arc<Vec<FieldInfo>>,
    text: TextFormat,
    tag: &str,
) -> QueryResponse {
    let row_fields = fields.clone();
    let rows = stream
        .map(move |batch| -> Vec<PgWireResult<DataRow>> {
            match batch {
                Ok(b) => encode_batch(&b, &row_fields, &text)
                    .into_iter()
                    .map(Ok)
                    .collect(),
                Err(e) => vec![Err(crate::errors::to_wire(crate::errors::from_datafusion(
                    e,
                )))],
            }
        })
        .flat_map(futures::stream::iter);
    let mut response = QueryResponse::new(fields, rows);
    response.set_command_tag(tag);
    response
}
