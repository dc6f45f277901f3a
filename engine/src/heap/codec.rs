//! Heap tuple attribute data: Arrow rows in, PostgreSQL-shaped tuple bytes out, and back.
//!
//! # The layout of the attribute data
//!
//! After the header and null bitmap (`tuple.rs`), at `t_hoff`, the attributes follow one
//! another in column order, each at its type's alignment (`typalign`) counted from the start
//! of the tuple. (Tuples sit MAXALIGNed on the page, so that is also the alignment in memory.)
//! Alignment padding is zero bytes. A null attribute takes no space at all: only its bit in the
//! null bitmap says it exists. Values are little-endian:
//!
//! | type                   | bytes | align | value                                        |
//! |------------------------|-------|-------|----------------------------------------------|
//! | bool                   | 1     | 1     | 0 or 1                                       |
//! | int2 / int4 / int8     | 2/4/8 | 2/4/8 | two's complement                             |
//! | float4 / float8        | 4/8   | 4/8   | IEEE 754 bits (NaN payloads kept)            |
//! | numeric(p, s)          | 16    | 8     | i128 scaled by 10^s (Arrow `Decimal128`)     |
//! | date                   | 4     | 4     | i32 days since 1970-01-01 (Arrow `Date32`)   |
//! | timestamp[tz]          | 8     | 8     | i64 µs since 1970-01-01 00:00 (UTC for tz)   |
//! | interval               | 16    | 8     | i32 months, i32 days, i64 ns (Arrow's value) |
//! | text / varchar / bpchar| var.  | 1 / 4 | varlena: header + UTF-8 bytes                |
//!
//! PostgreSQL counts dates and timestamps from 2000-01-01 and stores numeric as base-10000
//! digits; iolab keeps Arrow's epoch and representation so a scan is a copy, not a conversion.
//! The sizes match PostgreSQL's for every type but numeric, so page counts are comparable.
//!
//! A varlena ("variable-length") value carries its total length (header included) in one of
//! two header forms, as in PostgreSQL on a little-endian machine:
//!
//! - **short**, 1 byte, when the total length is at most 127 (a value of ≤ 126 bytes): the
//!   byte is `(total_len << 1) | 1`, always odd, and is placed with **no** alignment padding;
//! - **4-byte**, otherwise: the u32 `total_len << 2` (low two bits `00`), aligned to 4.
//!
//! When reading, the aligned/unaligned question is settled the way PostgreSQL's
//! `att_align_pointer` does it: look at the byte at the unaligned position. Padding is always
//! zero and a short header never is, so a non-zero byte is a short header right there, and a
//! zero byte means "skip the padding to the next multiple of 4, the 4-byte header is there".
//! (A 4-byte header already at an aligned position may start with a zero byte; aligning an
//! aligned position changes nothing, so that case is right too.) The 1-byte form `0x01`
//! (an out-of-line TOAST pointer) and 4-byte headers with low bits `10` (compressed) are
//! PostgreSQL forms iolab never writes; reading one is reported as corruption.
//!
//! Worked example, `(int4 42, text 'hello')` without nulls, 34 bytes:
//!
//! ```text
//!  0                      23  24           28    29                 34
//!  | header (t_hoff = 24) |00 | 2a 00 00 00 | 0d  | h  e  l  l  o   |
//!                           pad  int4 @24     short header: (6 << 1) | 1
//! ```
//!
//! and `(text 'a', int8 7)`: the text's short header and byte sit at 24..26, then 6 bytes of
//! padding bring the int8 to its 8-byte alignment at 32; 40 bytes in all.
//!
//! # Reading one attribute
//!
//! To find attribute `k` one walks attributes `0..k`: each non-null one is aligned and
//! stepped over (a fixed width or the length in its varlena header). Like PostgreSQL's
//! `attcacheoff`, [`TupleLayout`] precomputes the offsets of the leading run of fixed-width
//! attributes (and of the first varlena if it starts at an aligned offset): in a tuple without
//! nulls those never move, so reading them costs no walk. A tuple written before columns were
//! added stores fewer attributes (`natts` in `t_infomask2`); the missing trailing ones read as
//! NULL, which is PostgreSQL's rule and what makes `ADD COLUMN` without a rewrite possible.
//!
//! # Columns and attributes
//!
//! After ALTER TABLE (see `iolab_catalog::attributes`) a table's *columns* — what callers
//! number, project and pass arrays for — are no longer its tuples' *attributes*: a dropped
//! column's attribute stays in the tuples (new tuples store NULL there), and a column
//! added with a default has a *missing value* that tuples too old to store it read instead
//! of NULL. [`TupleLayout::for_table`] describes such a table: every method of the layout,
//! the encoder and the decoder takes column numbers and maps them to attributes itself;
//! [`TupleLayout::new`] is the plain case where the two are the same.
//!
//! # Speed
//!
//! Encoding: [`TupleEncoder::prepare`] downcasts the Arrow arrays once per batch (keeping
//! shared handles on their buffers, no copy); [`TupleEncoder::encode_row`] then appends one
//! tuple to a caller-owned `Vec<u8>`, with no allocation once the vector has grown.
//!
//! Decoding: [`BatchDecoder`] decodes only the projected columns into plain vectors (typed by
//! width: the tuple bytes are already Arrow's little-endian values) and turns them into Arrow
//! arrays in [`BatchDecoder::finish`]. It walks a tuple only up to its last projected column.
//! With an empty projection (`SELECT count(*)`) it only counts: the tuple is not read at all.
//! Text is checked for UTF-8 once per batch, when the array is built, not per value.

use datafusion::arrow::array::{
    make_array, Array, ArrayData, ArrayRef, AsArray, BooleanBufferBuilder, NullBufferBuilder,
};
use datafusion::arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, IntervalMonthDayNanoType, SchemaRef, TimestampMicrosecondType,
};
use datafusion::arrow::record_batch::{RecordBatch, RecordBatchOptions};
use iolab_catalog::types::TypLen;
use iolab_catalog::{sqlstate, PgError, PgType};

use super::tuple::{
    self, bitmap_says_null, header_size, null_bitmap_len, row_too_big, ItemPointer, TupleHeader,
    HEAP_HASNULL, HEAP_HASVARWIDTH, HEAP_TUPLE_HEADER_SIZE, HEAP_XMAX_INVALID, INVALID_XID,
    MAX_HEAP_ATTRIBUTE_NUMBER, MAX_HEAP_TUPLE_SIZE, NULL_BITMAP_AT,
};

/// Largest total length (header included) a 1-byte short varlena header can state.
pub const VARLENA_SHORT_MAX: usize = 0x7F;
/// Size of the short varlena header.
pub const VARLENA_SHORT_HEADER_SIZE: usize = 1;
/// Size of the 4-byte varlena header.
pub const VARLENA_HEADER_SIZE: usize = 4;

/// Round `offset` up to a multiple of `align` (a power of two).
#[inline(always)]
fn align_up(offset: usize, align: usize) -> usize {
    debug_assert!(align.is_power_of_two());
    (offset + align - 1) & !(align - 1)
}

#[cold]
#[inline(never)]
fn corrupted(what: String) -> PgError {
    PgError::new(
        sqlstate::DATA_CORRUPTED,
        format!("corrupted heap tuple: {what}"),
    )
}

/// How one attribute lies in the tuple.
#[derive(Clone, Copy, Debug)]
struct AttributeLayout {
    /// `Some(width)` for a fixed-width type, `None` for a varlena.
    fixed_width: Option<usize>,
    /// `typalign` in bytes; for a varlena the alignment of its 4-byte header form.
    align: usize,
    /// Offset from `t_hoff` in every tuple without nulls (PostgreSQL's `attcacheoff`), for the
    /// leading attributes whose position does not depend on earlier values.
    cached_offset: Option<usize>,
}

/// Locate the value of attribute `attr` in `data` (the bytes from `t_hoff` on), given
/// `offset`, the end of the previous non-null attribute. Returns the value's byte range; for a
/// varlena that is the payload without its header. The attribute ends where its value ends.
#[inline(always)]
fn locate_value(
    data: &[u8],
    offset: usize,
    attr: &AttributeLayout,
) -> Result<(usize, usize), PgError> {
    let (start, end) = match attr.fixed_width {
        Some(width) => {
            let start = align_up(offset, attr.align);
            (start, start + width)
        }
        None => {
            // Padding is zero, a short header never is: see the module comment.
            let Some(&first) = data.get(offset) else {
                return Err(corrupted(format!(
                    "attribute at offset {offset} past the data end {}",
                    data.len()
                )));
            };
            let header_at = if first != 0 {
                offset
            } else {
                align_up(offset, attr.align)
            };
            let header_byte = *data.get(header_at).unwrap_or(&0);
            if header_byte & 1 == 1 {
                let total_len = (header_byte >> 1) as usize;
                if total_len == 0 {
                    return Err(corrupted(
                        "out-of-line (TOAST) value; iolab has no TOAST".into(),
                    ));
                }
                (header_at + VARLENA_SHORT_HEADER_SIZE, header_at + total_len)
            } else {
                let Some(header) = data.get(header_at..header_at + VARLENA_HEADER_SIZE) else {
                    return Err(corrupted(format!(
                        "varlena header at {header_at} past the data end {}",
                        data.len()
                    )));
                };
                let header = u32::from_le_bytes(header.try_into().unwrap());
                if header & 0b11 != 0 {
                    return Err(corrupted(
                        "compressed varlena; iolab never compresses values".into(),
                    ));
                }
                let total_len = (header >> 2) as usize;
                if total_len < VARLENA_HEADER_SIZE {
                    return Err(corrupted(format!(
                        "varlena length {total_len} below its header size"
                    )));
                }
                (header_at + VARLENA_HEADER_SIZE, header_at + total_len)
            }
        }
    };
    if end > data.len() {
        return Err(corrupted(format!(
            "attribute ends at {end}, past the data end {}",
            data.len()
        )));
    }
    Ok((start, end))
}

/// The parts of a tuple the attribute walk needs, checked against the tuple's length.
struct TupleParts<'t> {
    /// Attributes stored in the tuple; later columns are NULL.
    natts: usize,
    /// The null bitmap, if the tuple has one (bit set = not null).
    bitmap: Option<&'t [u8]>,
    /// The bytes from `t_hoff` to the end of the tuple.
    data: &'t [u8],
}

/// The shape of a table's tuples: its column types and where their values lie.
/// Shared by [`TupleEncoder`] and [`BatchDecoder`]; also reads single attributes.
#[derive(Clone, Debug)]
pub struct TupleLayout {
    /// The types of the table's (live) columns.
    columns: Vec<PgType>,
    /// The type of every attribute, dropped columns' too, in attribute order.
    attribute_types: Vec<PgType>,
    attributes: Vec<AttributeLayout>,
    /// Column `i` is attribute `column_attribute[i]` (ascending).
    column_attribute: Vec<usize>,
    /// For each attribute, what a tuple too old to store it reads (`None`: NULL).
    missing: Vec<Option<Box<[u8]>>>,
}

impl TupleLayout {
    /// Panics if there are more than [`MAX_HEAP_ATTRIBUTE_NUMBER`] columns (the catalog refuses
    /// such tables before they get here).
    pub fn new(columns: Vec<PgType>) -> TupleLayout {
        let n = columns.len();
        TupleLayout::with_attributes(columns.clone(), (0..n).collect(), vec![None; n])
    }

    /// The layout of `table`'s tuples, with its dropped columns' attributes and its
    /// added columns' missing values (see the module comment).
    pub fn for_table(table: &iolab_catalog::TableDef) -> TupleLayout {
        use iolab_catalog::attributes::Attribute;
        let mut types = Vec::with_capacity(table.attribute_count());
        let mut column_attribute = Vec::with_capacity(table.columns.len());
        let mut missing = Vec::with_capacity(table.attribute_count());
        for (i, attribute) in table.attributes().into_iter().enumerate() {
            match attribute {
                Attribute::Column(c) => {
                    debug_assert_eq!(c, column_attribute.len());
                    types.push(table.columns[c].ty);
                    column_attribute.push(i);
                }
                Attribute::Dropped(ty) => types.push(ty),
            }
            missing.push(
                table
                    .missing_value(i as u16 + 1)
                    .map(|bytes| bytes.to_vec().into_boxed_slice()),
            );
        }
        TupleLayout::with_attributes(types, column_attribute, missing)
    }

    fn with_attributes(
        attribute_types: Vec<PgType>,
        column_attribute: Vec<usize>,
        missing: Vec<Option<Box<[u8]>>>,
    ) -> TupleLayout {
        assert!(
            attribute_types.len() <= MAX_HEAP_ATTRIBUTE_NUMBER,
            "{} columns exceed the limit of {MAX_HEAP_ATTRIBUTE_NUMBER}",
            attribute_types.len()
        );
        assert_eq!(missing.len(), attribute_types.len());
        assert!(
            column_attribute.windows(2).all(|w| w[0] < w[1])
                && column_attribute
                    .last()
                    .is_none_or(|&a| a < attribute_types.len()),
            "columns map to ascending attributes"
        );
        for (attribute, value) in missing.iter().enumerate() {
            if let (Some(value), TypLen::Fixed(width)) =
                (value, attribute_types[attribute].typlen())
            {
                assert_eq!(value.len(), width, "missing value of attribute {attribute}");
            }
        }
        let columns = column_attribute
            .iter()
            .map(|&a| attribute_types[a])
            .collect();
        let mut attributes: Vec<AttributeLayout> = attribute_types
            .iter()
            .map(|pg_type| AttributeLayout {
                fixed_width: match pg_type.typlen() {
                    TypLen::Fixed(width) => Some(width),
                    TypLen::Varlena => None,
                },
                align: pg_type.typalign(),
                cached_offset: None,
            })
            .collect();
        // attcacheoff: fixed-width attributes up to the first varlena; that varlena too if its
        // nominal alignment is a no-op (then short and 4-byte forms start at the same place).
        let mut offset = 0;
        for attr in attributes.iter_mut() {
            assert!(attr.align.is_power_of_two() && attr.align <= tuple::MAXALIGN);
            match attr.fixed_width {
                Some(width) => {
                    offset = align_up(offset, attr.align);
                    attr.cached_offset = Some(offset);
                    offset += width;
                }
                None => {
                    if align_up(offset, attr.align) == offset {
                        attr.cached_offset = Some(offset);
                    }
                    break;
                }
            }
        }
        TupleLayout {
            columns,
            attribute_types,
            attributes,
            column_attribute,
            missing,
        }
    }

    /// The types of the table's columns.
    pub fn columns(&self) -> &[PgType] {
        &self.columns
    }

    /// Number of attributes of the table's tuples (tuples may store fewer, never more):
    /// its columns, and the attributes of dropped ones.
    pub fn natts(&self) -> usize {
        self.attributes.len()
    }

    /// The attribute of column `column`.
    #[inline(always)]
    fn attribute_of(&self, column: usize) -> usize {
        self.column_attribute[column]
    }

    /// Check the header fields the walk relies on and split the tuple into its parts.
    #[inline(always)]
    fn split<'t>(&self, tuple: &'t [u8]) -> Result<TupleParts<'t>, PgError> {
        if tuple.len() < HEAP_TUPLE_HEADER_SIZE {
            return Err(corrupted(format!(
                "{} bytes, shorter than the tuple header",
                tuple.len()
            )));
        }
        let natts = tuple::natts(tuple);
        if natts > self.attributes.len() {
            return Err(corrupted(format!(
                "tuple has {natts} attributes, the table only {}",
                self.attributes.len()
            )));
        }
        let hoff = tuple::hoff(tuple);
        let bitmap_end = if tuple::has_nulls(tuple) {
            NULL_BITMAP_AT + null_bitmap_len(natts)
        } else {
            HEAP_TUPLE_HEADER_SIZE
        };
        if hoff < bitmap_end || hoff > tuple.len() {
            return Err(corrupted(format!(
                "t_hoff {hoff} outside {bitmap_end}..={}",
                tuple.len()
            )));
        }
        let bitmap = (bitmap_end > NULL_BITMAP_AT).then(|| &tuple[NULL_BITMAP_AT..bitmap_end]);
        Ok(TupleParts {
            natts,
            bitmap,
            data: &tuple[hoff..],
        })
    }

    /// The bytes of 0-based column `column` in `tuple`: the fixed little-endian value, or
    /// a varlena's payload without its header; `None` for NULL. A column the tuple is too
    /// old to store reads its missing value (NULL if none).
    pub fn attribute_bytes<'t>(
        &'t self,
        tuple: &'t [u8],
        column: usize,
    ) -> Result<Option<&'t [u8]>, PgError> {
        assert!(
            column < self.columns.len(),
            "column {column} of {}",
            self.columns.len()
        );
        let column = self.attribute_of(column);
        let parts = self.split(tuple)?;
        if column >= parts.natts {
            return Ok(self.missing[column].as_deref());
        }
        if bitmap_says_null(parts.bitmap, column) {
            return Ok(None);
        }
        let attr = &self.attributes[column];
        let mut offset = 0;
        match attr.cached_offset {
            Some(cached) if parts.bitmap.is_none() => offset = cached,
            _ => {
                for (prior, prior_attr) in self.attributes[..column].iter().enumerate() {
                    if !bitmap_says_null(parts.bitmap, prior) {
                        offset = locate_value(parts.data, offset, prior_attr)?.1;
                    }
                }
            }
        }
        let (start, end) = locate_value(parts.data, offset, attr)?;
        Ok(Some(&parts.data[start..end]))
    }

    /// Column `column` of `tuple` as a typed value (for index keys and rechecks).
    pub fn datum<'t>(&'t self, tuple: &'t [u8], column: usize) -> Result<Datum<'t>, PgError> {
        let Some(bytes) = self.attribute_bytes(tuple, column)? else {
            return Ok(Datum::Null);
        };
        // attribute_bytes returns exactly the type's width for fixed-width types.
        fn le<const N: usize>(bytes: &[u8]) -> [u8; N] {
            bytes
                .try_into()
                .expect("fixed-width attribute of its type's width")
        }
        Ok(match self.columns[column] {
            PgType::Bool => Datum::Bool(bytes[0] != 0),
            PgType::Int2 => Datum::Int2(i16::from_le_bytes(le(bytes))),
            PgType::Int4 => Datum::Int4(i32::from_le_bytes(le(bytes))),
            PgType::Int8 => Datum::Int8(i64::from_le_bytes(le(bytes))),
            PgType::Float4 => Datum::Float4(f32::from_le_bytes(le(bytes))),
            PgType::Float8 => Datum::Float8(f64::from_le_bytes(le(bytes))),
            PgType::Numeric { .. } => Datum::Numeric(i128::from_le_bytes(le(bytes))),
            PgType::Date => Datum::Date(i32::from_le_bytes(le(bytes))),
            PgType::Timestamp => Datum::Timestamp(i64::from_le_bytes(le(bytes))),
            PgType::Timestamptz => Datum::Timestamptz(i64::from_le_bytes(le(bytes))),
            PgType::Interval => Datum::Interval(i128::from_le_bytes(le(bytes))),
            PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => Datum::Text(
                std::str::from_utf8(bytes)
                    .map_err(|e| corrupted(format!("column {column}: {e}")))?,
            ),
        })
    }
}

impl From<Vec<PgType>> for TupleLayout {
    fn from(columns: Vec<PgType>) -> TupleLayout {
        TupleLayout::new(columns)
    }
}

/// One attribute value of one tuple, in the representation of the table above.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Datum<'t> {
    Null,
    Bool(bool),
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Float4(f32),
    Float8(f64),
    /// The unscaled Decimal128 value; the column's type holds the scale.
    Numeric(i128),
    /// text, varchar and bpchar (stored as given, blank padding included).
    Text(&'t str),
    /// Days since 1970-01-01.
    Date(i32),
    /// µs since 1970-01-01 00:00.
    Timestamp(i64),
    /// µs since 1970-01-01 00:00 UTC.
    Timestamptz(i64),
    /// Arrow's `IntervalMonthDayNano` bytes (months, days, nanoseconds) as one integer.
    Interval(i128),
}

// ---------------------------------------------------------------------------------------------
// Encoding

/// Turns rows of Arrow arrays into heap tuples.
///
/// ```ignore
/// let mut encoder = TupleEncoder::new(columns);
/// encoder.prepare(&arrays)?;               // once per batch: checks and downcasts
/// for row in 0..encoder.prepared_rows() {
///     tuple.clear();
///     encoder.encode_row(row, xid, cid, &mut tuple)?;
///     // place `tuple` on a page, then tuple::set_ctid(placed, block, offset)
/// }
/// ```
#[derive(Clone, Debug)]
pub struct TupleEncoder {
    layout: TupleLayout,
    /// `PgType::arrow_type()` of each attribute: the only input types accepted.
    arrow_types: Vec<DataType>,
    /// The prepared batch, one per attribute (empty before the first `prepare`): the
    /// columns' values, NULL for a dropped column's attribute. The buffers are shared with
    /// the caller's arrays (reference-counted), not copied.
    sources: Vec<ColumnSource>,
    /// Rows of the prepared batch.
    prepared_rows: usize,
    /// Whether any column of the prepared batch has a null (else rows skip the null checks).
    any_nulls: bool,
}

/// The values of one input column, downcast once per batch.
#[derive(Clone, Debug)]
enum ColumnValues {
    Bool(BooleanBuffer),
    Int16(ScalarBuffer<i16>),
    /// int4 and date.
    Int32(ScalarBuffer<i32>),
    /// int8, timestamp and timestamptz.
    Int64(ScalarBuffer<i64>),
    Float32(ScalarBuffer<f32>),
    Float64(ScalarBuffer<f64>),
    Decimal128(ScalarBuffer<i128>),
    /// Utf8: `bytes[offsets[row]..offsets[row + 1]]`.
    Varlena {
        offsets: OffsetBuffer<i32>,
        bytes: Buffer,
    },
}

#[derive(Clone, Debug)]
struct ColumnSource {
    values: ColumnValues,
    /// `None` when the column has no nulls in this batch.
    nulls: Option<NullBuffer>,
    /// `typalign`.
    align: usize,
}

impl ColumnSource {
    #[inline(always)]
    fn is_null(&self, row: usize) -> bool {
        match &self.nulls {
            Some(nulls) => nulls.is_null(row),
            None => false,
        }
    }

    #[inline(always)]
    fn varlena_value(&self, row: usize) -> &[u8] {
        match &self.values {
            ColumnValues::Varlena { offsets, bytes } => {
                &bytes[offsets[row] as usize..offsets[row + 1] as usize]
            }
            _ => unreachable!("not a varlena column"),
        }
    }
}

/// Append zero bytes until the tuple that starts at `out[tuple_start]` has `align`-aligned
/// length.
#[inline(always)]
fn pad_to(out: &mut Vec<u8>, tuple_start: usize, align: usize) {
    let padding = (out.len() - tuple_start).wrapping_neg() & (align - 1);
    if padding != 0 {
        out.resize(out.len() + padding, 0);
    }
}

impl TupleEncoder {
    /// Panics if there are more than [`MAX_HEAP_ATTRIBUTE_NUMBER`] columns.
    pub fn new(columns: Vec<PgType>) -> TupleEncoder {
        TupleEncoder::with_layout(TupleLayout::new(columns))
    }

    /// An encoder of tuples of `layout` (see [`TupleLayout::for_table`]): arrays come one
    /// per column, dropped columns' attributes are stored NULL.
    pub fn with_layout(layout: TupleLayout) -> TupleEncoder {
        let arrow_types = layout
            .attribute_types
            .iter()
            .map(PgType::arrow_type)
            .collect();
        let natts = layout.natts();
        TupleEncoder {
            layout,
            arrow_types,
            sources: Vec::with_capacity(natts),
            prepared_rows: 0,
            any_nulls: false,
        }
    }

    pub fn columns(&self) -> &[PgType] {
        self.layout.columns()
    }

    pub fn layout(&self) -> &TupleLayout {
        &self.layout
    }

    /// Size of the smallest tuple without nulls: every varlena empty (a 1-byte short header).
    /// Exact for tables of fixed-width columns; a lower bound otherwise.
    pub fn tuple_size_hint(&self) -> usize {
        let mut size = header_size(self.layout.natts(), false);
        for attr in &self.layout.attributes {
            size = match attr.fixed_width {
                Some(width) => align_up(size, attr.align) + width,
                None => size + VARLENA_SHORT_HEADER_SIZE,
            };
        }
        size
    }

    /// Check and downcast the arrays of one batch (one per column, of exactly the column's
    /// `PgType::arrow_type()`; casts happen before the encoder). A mismatch is a bug in the
    /// caller and comes back as an internal error, leaving no batch prepared. The encoder
    /// keeps (reference-counted) hold of the arrays' buffers until the next `prepare`.
    pub fn prepare(&mut self, arrays: &[ArrayRef]) -> Result<(), PgError> {
        self.sources.clear();
        self.prepared_rows = 0;
        self.any_nulls = false;
        if arrays.len() != self.layout.columns.len() {
            return Err(PgError::internal(format!(
                "tuple encoder: {} arrays for {} columns",
                arrays.len(),
                self.layout.columns.len()
            )));
        }
        let num_rows = arrays.first().map_or(0, |array| array.len());
        let mut columns = arrays.iter().enumerate().peekable();
        for attribute in 0..self.layout.natts() {
            let Some((column, array)) =
                columns.next_if(|(c, _)| self.layout.attribute_of(*c) == attribute)
            else {
                // A dropped column's attribute: NULL in every new tuple.
                self.any_nulls |= num_rows > 0;
                self.sources.push(ColumnSource {
                    values: ColumnValues::Bool(BooleanBuffer::new_unset(num_rows)),
                    nulls: Some(NullBuffer::new_null(num_rows)),
                    align: self.layout.attributes[attribute].align,
                });
                continue;
            };
            if array.data_type() != &self.arrow_types[attribute] || array.len() != num_rows {
                self.sources.clear();
                return Err(PgError::internal(format!(
                    "tuple encoder: column {column} is {} of {} rows, expected {} ({}) of {num_rows}",
                    array.data_type(),
                    array.len(),
                    self.arrow_types[attribute],
                    self.layout.columns[column].typname()
                )));
            }
            let values = match self.layout.columns[column] {
                PgType::Bool => ColumnValues::Bool(array.as_boolean().values().clone()),
                PgType::Int2 => {
                    ColumnValues::Int16(array.as_primitive::<Int16Type>().values().clone())
                }
                PgType::Int4 => {
                    ColumnValues::Int32(array.as_primitive::<Int32Type>().values().clone())
                }
                PgType::Date => {
                    ColumnValues::Int32(array.as_primitive::<Date32Type>().values().clone())
                }
                PgType::Int8 => {
                    ColumnValues::Int64(array.as_primitive::<Int64Type>().values().clone())
                }
                PgType::Timestamp | PgType::Timestamptz => ColumnValues::Int64(
                    array
                        .as_primitive::<TimestampMicrosecondType>()
                        .values()
                        .clone(),
                ),
                PgType::Float4 => {
                    ColumnValues::Float32(array.as_primitive::<Float32Type>().values().clone())
                }
                PgType::Float8 => {
                    ColumnValues::Float64(array.as_primitive::<Float64Type>().values().clone())
                }
                PgType::Numeric { .. } => ColumnValues::Decimal128(
                    array.as_primitive::<Decimal128Type>().values().clone(),
                ),
                // Its 16 bytes as one little-endian integer, written as a numeric's are.
                PgType::Interval => ColumnValues::Decimal128(
                    array
                        .as_primitive::<IntervalMonthDayNanoType>()
                        .values()
                        .iter()
                        .map(|v| {
                            let mut bytes = [0u8; 16];
                            bytes[..4].copy_from_slice(&v.months.to_le_bytes());
                            bytes[4..8].copy_from_slice(&v.days.to_le_bytes());
                            bytes[8..].copy_from_slice(&v.nanoseconds.to_le_bytes());
                            i128::from_le_bytes(bytes)
                        })
                        .collect(),
                ),
                PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => {
                    let strings = array.as_string::<i32>();
                    ColumnValues::Varlena {
                        offsets: strings.offsets().clone(),
                        bytes: strings.values().clone(),
                    }
                }
            };
            let nulls = array
                .nulls()
                .filter(|nulls| nulls.null_count() > 0)
                .cloned();
            self.any_nulls |= nulls.is_some();
            self.sources.push(ColumnSource {
                values,
                nulls,
                align: self.layout.attributes[attribute].align,
            });
        }
        debug_assert!(columns.next().is_none() && self.sources.len() == self.layout.natts());
        self.prepared_rows = num_rows;
        Ok(())
    }

    /// Rows of the batch last prepared.
    pub fn prepared_rows(&self) -> usize {
        self.prepared_rows
    }

    /// Append the tuple of row `row` of `arrays` to `out`. Convenient for single rows; for a
    /// batch, [`prepare`](Self::prepare) once and call [`encode_row`](Self::encode_row).
    pub fn encode(
        &mut self,
        arrays: &[ArrayRef],
        row: usize,
        xmin: u32,
        cid: u32,
        out: &mut Vec<u8>,
    ) -> Result<(), PgError> {
        self.prepare(arrays)?;
        self.encode_row(row, xmin, cid, out)
    }

    #[inline(always)]
    fn row_has_nulls(&self, row: usize) -> bool {
        self.any_nulls && self.sources.iter().any(|source| source.is_null(row))
    }

    /// The exact length of the tuple [`encode_row`](Self::encode_row) would write for `row`
    /// of the prepared batch.
    pub fn tuple_size(&self, row: usize) -> usize {
        assert!(
            row < self.prepared_rows,
            "row {row} of a prepared batch of {}",
            self.prepared_rows
        );
        let has_nulls = self.row_has_nulls(row);
        let mut size = header_size(self.sources.len(), has_nulls);
        for (source, attr) in self.sources.iter().zip(&self.layout.attributes) {
            if source.is_null(row) {
                continue;
            }
            size = match attr.fixed_width {
                Some(width) => align_up(size, attr.align) + width,
                None => {
                    let len = source.varlena_value(row).len();
                    if len + VARLENA_SHORT_HEADER_SIZE <= VARLENA_SHORT_MAX {
                        size + VARLENA_SHORT_HEADER_SIZE + len
                    } else {
                        align_up(size, attr.align) + VARLENA_HEADER_SIZE + len
                    }
                }
            };
        }
        size
    }

    /// Append the complete tuple of `row` of the prepared batch (header, null bitmap, data) to
    /// `out`, as inserted by transaction `xmin`, command `cid`: `t_xmax` invalid, `t_ctid`
    /// invalid until the page layer places the tuple (it calls `tuple::set_ctid`). Alignment
    /// counts from the tuple's start, `out.len()` on entry. A tuple longer than
    /// [`MAX_HEAP_TUPLE_SIZE`] is refused with PostgreSQL's "row is too big" and `out` is left
    /// as it was. Panics if `row` is not a row of the prepared batch.
    #[inline]
    pub fn encode_row(
        &self,
        row: usize,
        xmin: u32,
        cid: u32,
        out: &mut Vec<u8>,
    ) -> Result<(), PgError> {
        assert!(
            row < self.prepared_rows,
            "row {row} of a prepared batch of {}",
            self.prepared_rows
        );
        debug_assert_eq!(self.sources.len(), self.layout.natts());
        let natts = self.sources.len();
        let has_nulls = self.row_has_nulls(row);
        let tuple_start = out.len();
        let hoff = header_size(natts, has_nulls);
        // Zeroes the header, the bitmap (all null until set below) and the padding after it.
        out.resize(tuple_start + hoff, 0);
        let mut infomask = HEAP_XMAX_INVALID;
        if has_nulls {
            infomask |= HEAP_HASNULL;
        }

        for (column, source) in self.sources.iter().enumerate() {
            if has_nulls {
                if source.is_null(row) {
                    continue;
                }
                out[tuple_start + NULL_BITMAP_AT + column / 8] |= 1 << (column % 8);
            }
            match &source.values {
                ColumnValues::Bool(bits) => {
                    pad_to(out, tuple_start, source.align);
                    out.push(bits.value(row) as u8);
                }
                ColumnValues::Int16(values) => {
                    pad_to(out, tuple_start, source.align);
                    out.extend_from_slice(&values[row].to_le_bytes());
                }
                ColumnValues::Int32(values) => {
                    pad_to(out, tuple_start, source.align);
                    out.extend_from_slice(&values[row].to_le_bytes());
                }
                ColumnValues::Int64(values) => {
                    pad_to(out, tuple_start, source.align);
                    out.extend_from_slice(&values[row].to_le_bytes());
                }
                ColumnValues::Float32(values) => {
                    pad_to(out, tuple_start, source.align);
                    out.extend_from_slice(&values[row].to_bits().to_le_bytes());
                }
                ColumnValues::Float64(values) => {
                    pad_to(out, tuple_start, source.align);
                    out.extend_from_slice(&values[row].to_bits().to_le_bytes());
                }
                ColumnValues::Decimal128(values) => {
                    pad_to(out, tuple_start, source.align);
                    out.extend_from_slice(&values[row].to_le_bytes());
                }
                ColumnValues::Varlena { offsets, bytes } => {
                    let value = &bytes[offsets[row] as usize..offsets[row + 1] as usize];
                    infomask |= HEAP_HASVARWIDTH;
                    let short_len = value.len() + VARLENA_SHORT_HEADER_SIZE;
                    if short_len <= VARLENA_SHORT_MAX {
                        out.push(((short_len << 1) | 1) as u8);
                    } else {
                        if value.len() > MAX_HEAP_TUPLE_SIZE {
                            // Refuse before copying it (and before its length could overflow
                            // the header's 30 bits).
                            out.truncate(tuple_start);
                            return Err(row_too_big(self.tuple_size(row)));
                        }
                        pad_to(out, tuple_start, source.align);
                        let total_len = (value.len() + VARLENA_HEADER_SIZE) as u32;
                        out.extend_from_slice(&(total_len << 2).to_le_bytes());
                    }
                    out.extend_from_slice(value);
                }
            }
        }

        let tuple_len = out.len() - tuple_start;
        if tuple_len > MAX_HEAP_TUPLE_SIZE {
            out.truncate(tuple_start);
            return Err(row_too_big(tuple_len));
        }
        let header = TupleHeader {
            xmin,
            xmax: INVALID_XID,
            cid,
            ctid: ItemPointer::INVALID,
            infomask2: natts as u16,
            infomask,
            hoff: hoff as u8,
        };
        header.write(&mut out[tuple_start..]);
        debug_assert_eq!(tuple_len, self.tuple_size(row));
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// Values of one output column while a batch is decoded, stored by width: the tuple's
/// little-endian bytes are already Arrow's in-memory values.
enum DecodedValues {
    Bool(BooleanBufferBuilder),
    Width2(Vec<i16>),
    Width4(Vec<i32>),
    Width8(Vec<i64>),
    Width16(Vec<i128>),
    /// Arrow Utf8: `offsets` starts with 0 and has one more entry than there are rows.
    Varlena {
        offsets: Vec<i32>,
        bytes: Vec<u8>,
    },
}

struct ColumnBuilder {
    data_type: DataType,
    nulls: NullBufferBuilder,
    values: DecodedValues,
}

impl ColumnBuilder {
    fn new(pg_type: &PgType) -> ColumnBuilder {
        let values = match pg_type.typlen() {
            TypLen::Fixed(1) => DecodedValues::Bool(BooleanBufferBuilder::new(0)),
            TypLen::Fixed(2) => DecodedValues::Width2(Vec::new()),
            TypLen::Fixed(4) => DecodedValues::Width4(Vec::new()),
            TypLen::Fixed(8) => DecodedValues::Width8(Vec::new()),
            TypLen::Fixed(16) => DecodedValues::Width16(Vec::new()),
            TypLen::Fixed(width) => unreachable!("no PgType of width {width}"),
            TypLen::Varlena => DecodedValues::Varlena {
                offsets: vec![0],
                bytes: Vec::new(),
            },
        };
        debug_assert!(!matches!(values, DecodedValues::Bool(_)) || *pg_type == PgType::Bool);
        ColumnBuilder {
            data_type: pg_type.arrow_type(),
            nulls: NullBufferBuilder::new(0),
            values,
        }
    }

    /// Append a value: exactly the type's width for fixed-width types, a varlena's payload.
    #[inline(always)]
    fn append_value(&mut self, value: &[u8]) -> Result<(), PgError> {
        self.nulls.append_non_null();
        match &mut self.values {
            DecodedValues::Bool(bits) => bits.append(value[0] != 0),
            DecodedValues::Width2(values) => {
                values.push(i16::from_le_bytes(value.try_into().unwrap()))
            }
            DecodedValues::Width4(values) => {
                values.push(i32::from_le_bytes(value.try_into().unwrap()))
            }
            DecodedValues::Width8(values) => {
                values.push(i64::from_le_bytes(value.try_into().unwrap()))
            }
            DecodedValues::Width16(values) => {
                values.push(i128::from_le_bytes(value.try_into().unwrap()))
            }
            DecodedValues::Varlena { offsets, bytes } => {
                bytes.extend_from_slice(value);
                if bytes.len() > i32::MAX as usize {
                    return Err(PgError::new(
                        sqlstate::PROGRAM_LIMIT_EXCEEDED,
                        "text of one batch exceeds 2 GiB; decode smaller batches",
                    ));
                }
                offsets.push(bytes.len() as i32);
            }
        }
        Ok(())
    }

    #[inline(always)]
    fn append_null(&mut self) {
        self.nulls.append_null();
        match &mut self.values {
            DecodedValues::Bool(bits) => bits.append(false),
            DecodedValues::Width2(values) => values.push(0),
            DecodedValues::Width4(values) => values.push(0),
            DecodedValues::Width8(values) => values.push(0),
            DecodedValues::Width16(values) => values.push(0),
            DecodedValues::Varlena { offsets, bytes } => offsets.push(bytes.len() as i32),
        }
    }

    /// Drop values past the first `rows` (undo a partly decoded row).
    fn truncate(&mut self, rows: usize) {
        self.nulls.truncate(rows);
        match &mut self.values {
            DecodedValues::Bool(bits) => bits.truncate(rows),
            DecodedValues::Width2(values) => values.truncate(rows),
            DecodedValues::Width4(values) => values.truncate(rows),
            DecodedValues::Width8(values) => values.truncate(rows),
            DecodedValues::Width16(values) => values.truncate(rows),
            DecodedValues::Varlena { offsets, bytes } => {
                offsets.truncate(rows + 1);
                bytes.truncate(offsets[rows] as usize);
            }
        }
    }

    /// Build the Arrow array of the `rows` values appended since the last finish, and start
    /// empty again with room for as many.
    fn finish(&mut self, rows: usize) -> Result<ArrayRef, PgError> {
        fn take<T>(values: &mut Vec<T>) -> Vec<T> {
            let capacity = values.len();
            std::mem::replace(values, Vec::with_capacity(capacity))
        }
        let nulls = self.nulls.finish();
        let buffers = match &mut self.values {
            DecodedValues::Bool(bits) => vec![bits.finish().into_inner()],
            DecodedValues::Width2(values) => vec![Buffer::from_vec(take(values))],
            DecodedValues::Width4(values) => vec![Buffer::from_vec(take(values))],
            DecodedValues::Width8(values) => vec![Buffer::from_vec(take(values))],
            DecodedValues::Width16(values) => vec![Buffer::from_vec(take(values))],
            DecodedValues::Varlena { offsets, bytes } => {
                let offsets_buffer = Buffer::from_vec(std::mem::replace(offsets, {
                    let mut fresh = Vec::with_capacity(offsets.len());
                    fresh.push(0);
                    fresh
                }));
                vec![offsets_buffer, Buffer::from_vec(take(bytes))]
            }
        };
        // Full validation: for text that is the UTF-8 check of the whole batch at once.
        let data = ArrayData::builder(self.data_type.clone())
            .len(rows)
            .nulls(nulls)
            .buffers(buffers)
            .build()
            .map_err(|e| corrupted(format!("decoded column of type {}: {e}", self.data_type)))?;
        Ok(make_array(data))
    }
}

/// One Arrow column built value by value from values in their stored form: an Index Only
/// Scan's output from index keys, which are stored as the heap stores the column.
pub struct ValueColumn {
    builder: ColumnBuilder,
    rows: usize,
}

impl ValueColumn {
    pub fn new(pg_type: &PgType) -> ValueColumn {
        ValueColumn {
            builder: ColumnBuilder::new(pg_type),
            rows: 0,
        }
    }

    /// Appends a value: exactly the type's width of little-endian bytes, or a varlena's
    /// payload; `None` is NULL.
    pub fn append(&mut self, value: Option<&[u8]>) -> Result<(), PgError> {
        match value {
            Some(v) => self.builder.append_value(v)?,
            None => self.builder.append_null(),
        }
        self.rows += 1;
        Ok(())
    }

    /// The array of the values appended since the last finish; the column starts empty.
    pub fn finish(&mut self) -> Result<ArrayRef, PgError> {
        self.builder.finish(std::mem::take(&mut self.rows))
    }
}

/// Decodes heap tuples into Arrow record batches, projected columns only.
///
/// ```ignore
/// let mut decoder = BatchDecoder::new(columns, projection);
/// for tuple in visible_tuples_of_some_pages {
///     decoder.append(tuple)?;
///     if decoder.len() == batch_size { emit(decoder.finish(&projected_schema)?); }
/// }
/// ```
pub struct BatchDecoder {
    layout: TupleLayout,
    /// Output column `i` is table column `projection[i]`.
    projection: Vec<usize>,
    /// The attributes of the distinct projected columns, ascending: the order of the walk
    /// through a tuple.
    decoded_columns: Vec<usize>,
    /// For output column `i`, its index in `decoded_columns` / `builders`.
    output_builder: Vec<usize>,
    /// One per entry of `decoded_columns`.
    builders: Vec<ColumnBuilder>,
    /// Tuples appended since the last finish.
    rows: usize,
}

impl BatchDecoder {
    /// `projection`: the table's 0-based column numbers to output, in output order (may be
    /// empty, unordered, repeated). Panics on a column number out of range.
    pub fn new(columns: Vec<PgType>, projection: Vec<usize>) -> BatchDecoder {
        BatchDecoder::with_layout(TupleLayout::new(columns), projection)
    }

    /// A decoder of tuples of `layout` (see [`TupleLayout::for_table`]); `projection` as
    /// for [`new`](Self::new), in column numbers.
    pub fn with_layout(layout: TupleLayout, projection: Vec<usize>) -> BatchDecoder {
        let columns = layout.columns();
        for &column in &projection {
            assert!(
                column < columns.len(),
                "projected column {column} of {}",
                columns.len()
            );
        }
        let attributes: Vec<usize> = projection.iter().map(|&c| layout.attribute_of(c)).collect();
        let mut decoded_columns = attributes.clone();
        decoded_columns.sort_unstable();
        decoded_columns.dedup();
        let output_builder = attributes
            .iter()
            .map(|attribute| decoded_columns.binary_search(attribute).unwrap())
            .collect();
        let builders = decoded_columns
            .iter()
            .map(|&attribute| ColumnBuilder::new(&layout.attribute_types[attribute]))
            .collect();
        BatchDecoder {
            layout,
            projection,
            decoded_columns,
            output_builder,
            builders,
            rows: 0,
        }
    }

    pub fn layout(&self) -> &TupleLayout {
        &self.layout
    }

    pub fn projection(&self) -> &[usize] {
        &self.projection
    }

    /// Tuples appended since the last [`finish`](Self::finish).
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// True when no column is decoded (empty projection): [`append`](Self::append) only counts,
    /// so a scan may skip fetching the tuple bytes and call [`append_rows`](Self::append_rows).
    pub fn decodes_no_columns(&self) -> bool {
        self.decoded_columns.is_empty()
    }

    /// Count `n` rows without data; only for an empty projection.
    pub fn append_rows(&mut self, n: usize) {
        assert!(
            self.decodes_no_columns(),
            "append_rows needs an empty projection"
        );
        self.rows += n;
    }

    /// Decode the projected columns of one tuple. On error (a corrupted tuple) nothing of
    /// the tuple is kept: the batch so far stays valid.
    #[inline]
    pub fn append(&mut self, tuple: &[u8]) -> Result<(), PgError> {
        if self.decoded_columns.is_empty() {
            self.rows += 1;
            return Ok(());
        }
        match self.decode_tuple(tuple) {
            Ok(()) => {
                self.rows += 1;
                Ok(())
            }
            Err(error) => {
                for builder in &mut self.builders {
                    builder.truncate(self.rows);
                }
                Err(error)
            }
        }
    }

    /// The attribute walk (module comment): for each wanted column in ascending order, start
    /// from its cached offset if the tuple has no nulls and it has one, else step over the
    /// attributes between the previous wanted column and this one.
    #[inline(always)]
    fn decode_tuple(&mut self, tuple: &[u8]) -> Result<(), PgError> {
        let parts = self.layout.split(tuple)?;
        let attributes = &self.layout.attributes;
        let no_nulls = parts.bitmap.is_none();
        // Invariant: the attributes before `walk_column` end at `walk_offset` in parts.data.
        let mut walk_column = 0;
        let mut walk_offset = 0;
        for (builder, &column) in self.builders.iter_mut().zip(&self.decoded_columns) {
            if column >= parts.natts {
                match &self.layout.missing[column] {
                    Some(value) => builder.append_value(value)?,
                    None => builder.append_null(),
                }
                continue;
            }
            if bitmap_says_null(parts.bitmap, column) {
                builder.append_null();
                continue;
            }
            let attr = &attributes[column];
            match attr.cached_offset {
                Some(cached) if no_nulls => walk_offset = cached,
                _ => {
                    while walk_column < column {
                        if !bitmap_says_null(parts.bitmap, walk_column) {
                            walk_offset =
                                locate_value(parts.data, walk_offset, &attributes[walk_column])?.1;
                        }
                        walk_column += 1;
                    }
                }
            }
            let (start, end) = locate_value(parts.data, walk_offset, attr)?;
            builder.append_value(&parts.data[start..end])?;
            walk_offset = end;
            walk_column = column + 1;
        }
        Ok(())
    }

    /// The projected columns of the tuples appended since the last finish, and their number;
    /// the decoder starts a new batch.
    pub fn finish_arrays(&mut self) -> Result<(Vec<ArrayRef>, usize), PgError> {
        let rows = std::mem::take(&mut self.rows);
        let decoded = self
            .builders
            .iter_mut()
            .map(|builder| builder.finish(rows))
            .collect::<Result<Vec<_>, _>>()?;
        let arrays = self
            .output_builder
            .iter()
            .map(|&index| decoded[index].clone())
            .collect();
        Ok((arrays, rows))
    }

    /// The batch of the tuples appended since the last finish, with `schema` (the projected
    /// columns' fields, of their `PgType::arrow_type()`); the decoder starts a new batch.
    pub fn finish(&mut self, schema: &SchemaRef) -> Result<RecordBatch, PgError> {
        let (arrays, rows) = self.finish_arrays()?;
        RecordBatch::try_new_with_options(
            schema.clone(),
            arrays,
            &RecordBatchOptions::new().with_row_count(Some(rows)),
        )
        .map_err(|e| PgError::internal(format!("heap batch decoder: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use datafusion::arrow::array::{
        BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int16Array,
        Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
    };
    use datafusion::arrow::datatypes::{Field, Schema};

    use super::*;
    use crate::heap::tuple;
    use iolab_catalog::types::TIMESTAMPTZ_ZONE;

    fn all_types() -> Vec<PgType> {
        vec![
            PgType::Bool,
            PgType::Int2,
            PgType::Int4,
            PgType::Int8,
            PgType::Float4,
            PgType::Float8,
            PgType::Numeric {
                precision: 38,
                scale: 6,
            },
            PgType::Text,
            PgType::Varchar(Some(400)),
            PgType::Bpchar(5),
            PgType::Date,
            PgType::Timestamp,
            PgType::Timestamptz,
            PgType::Interval,
        ]
    }

    /// Text values around the short-header boundary (126/127/128), 4-byte headers whose first
    /// byte is zero (188 and 252 bytes: total lengths 192 and 256), unicode and empty strings.
    fn text_value(row: usize) -> String {
        const LENGTHS: [usize; 12] = [0, 1, 32, 126, 127, 128, 188, 252, 300, 3, 125, 129];
        match row % 14 {
            12 => "héllo wörld ✓ 日本語 🦀".to_string(),
            13 => "ü".repeat(64), // 128 bytes, 64 characters
            i => "x".repeat(LENGTHS[i]),
        }
    }

    /// Arrays of `rows` rows of every column type; `is_null(row, column)` places the nulls.
    fn make_arrays(
        columns: &[PgType],
        rows: usize,
        is_null: impl Fn(usize, usize) -> bool,
    ) -> Vec<ArrayRef> {
        const I16S: [i16; 5] = [i16::MIN, -1, 0, 1, i16::MAX];
        const I32S: [i32; 5] = [i32::MIN, -1, 0, 1, i32::MAX];
        const I64S: [i64; 5] = [i64::MIN, -1, 0, 1, i64::MAX];
        const I128S: [i128; 6] = [i128::MIN, -1, 0, 1, i128::MAX, 123_456_789];
        const F32S: [f32; 7] = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            1.5,
            f32::MIN_POSITIVE,
            f32::MAX,
        ];
        const F64S: [f64; 7] = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            2.25,
            f64::MIN_POSITIVE,
            f64::MIN,
        ];
        columns
            .iter()
            .enumerate()
            .map(|(column, pg_type)| {
                let present = |row: usize| !is_null(row, column);
                let array: ArrayRef = match pg_type {
                    PgType::Bool => Arc::new(BooleanArray::from(
                        (0..rows)
                            .map(|r| present(r).then_some(r % 3 == 0))
                            .collect::<Vec<_>>(),
                    )),
                    PgType::Int2 => Arc::new(Int16Array::from(
                        (0..rows)
                            .map(|r| present(r).then_some(I16S[r % 5]))
                            .collect::<Vec<_>>(),
                    )),
                    PgType::Int4 => Arc::new(Int32Array::from(
                        (0..rows)
                            .map(|r| present(r).then_some(I32S[r % 5]))
                            .collect::<Vec<_>>(),
                    )),
                    PgType::Int8 => Arc::new(Int64Array::from(
                        (0..rows)
                            .map(|r| present(r).then_some(I64S[r % 5]))
                            .collect::<Vec<_>>(),
                    )),
                    PgType::Float4 => Arc::new(Float32Array::from(
                        (0..rows)
                            .map(|r| present(r).then_some(F32S[r % 7]))
                            .collect::<Vec<_>>(),
                    )),
                    PgType::Float8 => Arc::new(Float64Array::from(
                        (0..rows)
                            .map(|r| present(r).then_some(F64S[r % 7]))
                            .collect::<Vec<_>>(),
                    )),
                    PgType::Numeric { precision, scale } => Arc::new(
                        Decimal128Array::from(
                            (0..rows)
                                .map(|r| present(r).then_some(I128S[r % 6]))
                                .collect::<Vec<_>>(),
                        )
                        .with_precision_and_scale(*precision, *scale)
                        .unwrap(),
                    ),
                    PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => {
                        Arc::new(StringArray::from(
                            (0..rows)
                                .map(|r| present(r).then(|| text_value(r + column)))
                                .collect::<Vec<_>>(),
                        ))
                    }
                    PgType::Date => Arc::new(Date32Array::from(
                        (0..rows)
                            .map(|r| present(r).then_some(I32S[(r + 2) % 5]))
                            .collect::<Vec<_>>(),
                    )),
                    PgType::Timestamp => Arc::new(TimestampMicrosecondArray::from(
                        (0..rows)
                            .map(|r| present(r).then_some(I64S[(r + 1) % 5]))
                            .collect::<Vec<_>>(),
                    )),
                    PgType::Timestamptz => Arc::new(
                        TimestampMicrosecondArray::from(
                            (0..rows)
                                .map(|r| present(r).then_some(I64S[(r + 3) % 5]))
                                .collect::<Vec<_>>(),
                        )
                        .with_timezone(TIMESTAMPTZ_ZONE),
                    ),
                    PgType::Interval => {
                        Arc::new(datafusion::arrow::array::IntervalMonthDayNanoArray::from(
                            (0..rows)
                                .map(|r| {
                                    present(r).then(|| {
                                        datafusion::arrow::datatypes::IntervalMonthDayNano::new(
                                            I32S[r % 5],
                                            I32S[(r + 1) % 5],
                                            I64S[(r + 2) % 5] / 1000 * 1000,
                                        )
                                    })
                                })
                                .collect::<Vec<_>>(),
                        ))
                    }
                };
                assert_eq!(array.data_type(), &pg_type.arrow_type());
                array
            })
            .collect()
    }

    fn schema_for(columns: &[PgType], projection: &[usize]) -> SchemaRef {
        Arc::new(Schema::new(
            projection
                .iter()
                .enumerate()
                .map(|(i, &column)| {
                    Field::new(format!("c{i}_{column}"), columns[column].arrow_type(), true)
                })
                .collect::<Vec<_>>(),
        ))
    }

    /// Encode every row; returns the tuples.
    fn encode_all(columns: &[PgType], arrays: &[ArrayRef]) -> Vec<Vec<u8>> {
        let mut encoder = TupleEncoder::new(columns.to_vec());
        encoder.prepare(arrays).unwrap();
        (0..encoder.prepared_rows())
            .map(|row| {
                let mut out = Vec::new();
                encoder
                    .encode_row(row, 1000 + row as u32, row as u32 % 3, &mut out)
                    .unwrap();
                assert_eq!(out.len(), encoder.tuple_size(row));
                out
            })
            .collect()
    }

    fn decode_all(columns: &[PgType], projection: &[usize], tuples: &[Vec<u8>]) -> RecordBatch {
        let mut decoder = BatchDecoder::new(columns.to_vec(), projection.to_vec());
        for tuple in tuples {
            decoder.append(tuple).unwrap();
        }
        assert_eq!(decoder.len(), tuples.len());
        let batch = decoder.finish(&schema_for(columns, projection)).unwrap();
        assert!(decoder.is_empty());
        batch
    }

    /// Compare decoded arrays with the input, floats by their bits (NaN included).
    fn assert_same_values(decoded: &ArrayRef, expected: &ArrayRef, what: &str) {
        assert_eq!(decoded.len(), expected.len(), "{what}: length");
        assert_eq!(decoded.data_type(), expected.data_type(), "{what}: type");
        assert_eq!(
            decoded.logical_nulls(),
            expected.logical_nulls().filter(|n| n.null_count() > 0),
            "{what}: nulls"
        );
        match expected.data_type() {
            DataType::Float32 => {
                let (d, e) = (
                    decoded.as_primitive::<Float32Type>(),
                    expected.as_primitive::<Float32Type>(),
                );
                for row in 0..e.len() {
                    if e.is_valid(row) {
                        assert_eq!(
                            d.value(row).to_bits(),
                            e.value(row).to_bits(),
                            "{what}: row {row}"
                        );
                    }
                }
            }
            DataType::Float64 => {
                let (d, e) = (
                    decoded.as_primitive::<Float64Type>(),
                    expected.as_primitive::<Float64Type>(),
                );
                for row in 0..e.len() {
                    if e.is_valid(row) {
                        assert_eq!(
                            d.value(row).to_bits(),
                            e.value(row).to_bits(),
                            "{what}: row {row}"
                        );
                    }
                }
            }
            _ => assert_eq!(decoded.as_ref(), expected.as_ref(), "{what}"),
        }
    }

    fn round_trip(columns: &[PgType], arrays: &[ArrayRef]) {
        let tuples = encode_all(columns, arrays);
        let natts = columns.len();
        let all: Vec<usize> = (0..natts).collect();
        let reversed: Vec<usize> = (0..natts).rev().collect();
        let mut projections = vec![
            all,
            reversed,
            vec![natts - 1],
            vec![0],
            vec![natts / 2, 0, natts / 2],
        ];
        for column in 0..natts {
            projections.push(vec![column]);
        }
        for projection in &projections {
            let batch = decode_all(columns, projection, &tuples);
            assert_eq!(batch.num_rows(), tuples.len());
            for (i, &column) in projection.iter().enumerate() {
                let what = format!(
                    "projection {projection:?}, column {column} ({})",
                    columns[column].typname()
                );
                assert_same_values(batch.column(i), &arrays[column], &what);
            }
        }
        // Empty projection: only the row count.
        let batch = decode_all(columns, &[], &tuples);
        assert_eq!(batch.num_rows(), tuples.len());
        assert_eq!(batch.num_columns(), 0);

        // Single-attribute access agrees with the batch decoder.
        let layout = TupleLayout::new(columns.to_vec());
        let full = decode_all(columns, &(0..natts).collect::<Vec<_>>(), &tuples);
        for (row, tuple) in tuples.iter().enumerate() {
            for column in 0..natts {
                let bytes = layout.attribute_bytes(tuple, column).unwrap();
                assert_eq!(bytes.is_none(), full.column(column).is_null(row));
                let datum = layout.datum(tuple, column).unwrap();
                assert_eq!(datum == Datum::Null, bytes.is_none());
                if let (Datum::Text(text), Some(expected)) = (
                    datum,
                    full.column(column)
                        .as_string_opt::<i32>()
                        .map(|a| a.value(row)),
                ) {
                    assert_eq!(text, expected);
                }
            }
        }
    }

    #[test]
    fn round_trips_every_type_without_nulls() {
        let columns = all_types();
        let arrays = make_arrays(&columns, 60, |_, _| false);
        round_trip(&columns, &arrays);
    }

    #[test]
    fn round_trips_every_type_with_a_null_in_every_position() {
        let columns = all_types();
        let natts = columns.len();
        // Row r < natts: column r null. Then all null, then every other, then a pseudo-random mix.
        let rows = natts + 3 + 200;
        let is_null = move |row: usize, column: usize| {
            if row < natts {
                row == column
            } else if row == natts {
                true
            } else if row == natts + 1 {
                column.is_multiple_of(2)
            } else if row == natts + 2 {
                column % 2 == 1
            } else {
                (row.wrapping_mul(2654435761) >> (column % 16)) & 3 == 0
            }
        };
        let arrays = make_arrays(&columns, rows, is_null);
        round_trip(&columns, &arrays);
        // A tuple whose every attribute is null has only the header and bitmap.
        let tuples = encode_all(&columns, &arrays);
        assert_eq!(tuples[natts].len(), 32);
        assert_eq!(tuple::null_bitmap(&tuples[natts]), Some(&[0u8, 0][..]));
    }

    #[test]
    fn round_trips_each_type_alone_and_after_an_unaligning_bool() {
        for pg_type in all_types() {
            for columns in [
                vec![pg_type],
                vec![PgType::Bool, pg_type, PgType::Bool, pg_type],
            ] {
                let no_nulls = make_arrays(&columns, 40, |_, _| false);
                round_trip(&columns, &no_nulls);
                let some_nulls = make_arrays(&columns, 40, |row, column| (row + column) % 3 == 0);
                round_trip(&columns, &some_nulls);
            }
        }
    }

    #[test]
    fn header_fields_of_a_new_tuple() {
        let columns = vec![PgType::Int4, PgType::Text, PgType::Int8];
        let arrays = make_arrays(&columns, 2, |row, column| row == 1 && column == 2);
        let tuples = encode_all(&columns, &arrays);
        for (row, tuple) in tuples.iter().enumerate() {
            let header = TupleHeader::read(tuple);
            assert_eq!(header.xmin, 1000 + row as u32);
            assert_eq!(header.xmax, INVALID_XID);
            assert_eq!(header.cid, row as u32);
            assert_eq!(header.ctid, ItemPointer::INVALID);
            assert_eq!(header.natts(), 3);
            assert_eq!(header.hoff, 24);
            assert!(header.has_varwidth());
            assert_ne!(header.infomask & HEAP_XMAX_INVALID, 0);
        }
        assert!(!tuple::has_nulls(&tuples[0]));
        assert!(tuple::has_nulls(&tuples[1]));
        assert_eq!(tuple::null_bitmap(&tuples[1]), Some(&[0b011u8][..]));

        // No varlena attribute present: no HEAP_HASVARWIDTH.
        let arrays = make_arrays(&columns, 1, |_, column| column == 1);
        let tuples = encode_all(&columns, &arrays);
        assert_eq!(tuple::infomask(&tuples[0]) & HEAP_HASVARWIDTH, 0);
    }

    fn encode_one(columns: Vec<PgType>, arrays: Vec<ArrayRef>) -> Result<Vec<u8>, PgError> {
        let mut out = Vec::new();
        TupleEncoder::new(columns).encode(&arrays, 0, 1, 0, &mut out)?;
        Ok(out)
    }

    fn text(value: &str) -> ArrayRef {
        Arc::new(StringArray::from(vec![value]))
    }

    #[test]
    fn sizes_match_postgres() {
        // (int4, 32-byte text): 24 + 4 + 1 + 32 = 61, as PostgreSQL.
        let tuple = encode_one(
            vec![PgType::Int4, PgType::Text],
            vec![Arc::new(Int32Array::from(vec![7])), text(&"t".repeat(32))],
        )
        .unwrap();
        assert_eq!(tuple.len(), 61);
        assert_eq!(tuple::hoff(&tuple), 24);
        assert_eq!(&tuple[24..28], &7i32.to_le_bytes());
        assert_eq!(tuple[28], (33 << 1) | 1);

        // The worked example of the module comment.
        let tuple = encode_one(
            vec![PgType::Int4, PgType::Text],
            vec![Arc::new(Int32Array::from(vec![42])), text("hello")],
        )
        .unwrap();
        assert_eq!(
            &tuple[23..],
            &[0, 42, 0, 0, 0, 0x0d, b'h', b'e', b'l', b'l', b'o']
        );
        let tuple = encode_one(
            vec![PgType::Text, PgType::Int8],
            vec![text("a"), Arc::new(Int64Array::from(vec![7]))],
        )
        .unwrap();
        assert_eq!(tuple.len(), 40);
        assert_eq!(
            &tuple[24..40],
            &[0x05, b'a', 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0]
        );

        // Short header up to 126 bytes of data, 4-byte header (aligned to 4) from 127 on.
        for (len, size) in [
            (0, 25),
            (126, 24 + 127),
            (127, 24 + 4 + 127),
            (128, 24 + 4 + 128),
            (300, 24 + 4 + 300),
        ] {
            let tuple = encode_one(vec![PgType::Text], vec![text(&"z".repeat(len))]).unwrap();
            assert_eq!(tuple.len(), size, "text of {len} bytes");
        }
        // After a bool: short headers stay unaligned, 4-byte ones are padded to 28.
        let tuple = encode_one(
            vec![PgType::Bool, PgType::Text],
            vec![
                Arc::new(BooleanArray::from(vec![true])),
                text(&"z".repeat(126)),
            ],
        )
        .unwrap();
        assert_eq!(tuple.len(), 25 + 127);
        let tuple = encode_one(
            vec![PgType::Bool, PgType::Text],
            vec![
                Arc::new(BooleanArray::from(vec![true])),
                text(&"z".repeat(188)),
            ],
        )
        .unwrap();
        assert_eq!(tuple.len(), 28 + 4 + 188);
        // 4-byte header 192 << 2 = 0x300: its first byte is zero, like the padding before it.
        assert_eq!(&tuple[24..32], &[1, 0, 0, 0, 0x00, 0x03, 0x00, 0x00]);
        let layout = TupleLayout::new(vec![PgType::Bool, PgType::Text]);
        assert_eq!(
            layout.attribute_bytes(&tuple, 1).unwrap().unwrap().len(),
            188
        );

        // numeric: 16 bytes at 8-byte alignment.
        let tuple = encode_one(
            vec![
                PgType::Int2,
                PgType::Numeric {
                    precision: 10,
                    scale: 2,
                },
            ],
            vec![
                Arc::new(Int16Array::from(vec![1])),
                Arc::new(
                    Decimal128Array::from(vec![-5])
                        .with_precision_and_scale(10, 2)
                        .unwrap(),
                ),
            ],
        )
        .unwrap();
        assert_eq!(tuple.len(), 48);
        assert_eq!(&tuple[32..48], &(-5i128).to_le_bytes());
    }

    #[test]
    fn t_hoff_grows_with_the_null_bitmap() {
        for (natts, with_null, hoff) in [
            (2, false, 24),
            (8, true, 24),
            (9, true, 32),
            (72, true, 32),
            (73, true, 40),
            (100, false, 24),
        ] {
            let columns = vec![PgType::Int4; natts];
            let arrays = make_arrays(&columns, 1, |_, column| with_null && column == natts - 1);
            let tuples = encode_all(&columns, &arrays);
            assert_eq!(
                tuple::hoff(&tuples[0]),
                hoff,
                "{natts} attributes, null: {with_null}"
            );
            assert_eq!(tuples[0].len(), hoff + 4 * (natts - with_null as usize));
            round_trip(&columns, &arrays);
        }
    }

    #[test]
    fn too_big_rows_are_refused_and_leave_out_untouched() {
        let columns = vec![PgType::Text];
        let mut encoder = TupleEncoder::new(columns);
        // 24 + 4 + 8132 = 8160 fits exactly.
        let mut out = vec![9, 9, 9];
        encoder
            .encode(&[text(&"a".repeat(8132))], 0, 1, 0, &mut out)
            .unwrap();
        assert_eq!(out.len(), 3 + 8160);

        for (len, reported) in [(8133, 8168), (8200, 8232), (100_000, 100_032)] {
            let mut out = vec![9, 9, 9];
            let err = encoder
                .encode(&[text(&"a".repeat(len))], 0, 1, 0, &mut out)
                .unwrap_err();
            assert_eq!(err.code, sqlstate::PROGRAM_LIMIT_EXCEEDED);
            assert_eq!(
                err.message,
                format!("row is too big: size {reported}, maximum size 8160")
            );
            assert_eq!(out, vec![9, 9, 9]);
        }

        // Many medium values that only together exceed the limit.
        let columns = vec![PgType::Text; 70];
        let arrays: Vec<ArrayRef> = (0..70).map(|_| text(&"m".repeat(120))).collect();
        let mut out = Vec::new();
        let err = TupleEncoder::new(columns)
            .encode(&arrays, 0, 1, 0, &mut out)
            .unwrap_err();
        assert_eq!(err.code, sqlstate::PROGRAM_LIMIT_EXCEEDED);
        assert!(out.is_empty());
    }

    #[test]
    fn alignment_counts_from_the_tuple_start() {
        let columns = vec![PgType::Bool, PgType::Int8, PgType::Text, PgType::Int4];
        let arrays = make_arrays(&columns, 20, |row, column| row % 4 == column);
        let alone = encode_all(&columns, &arrays);
        let mut encoder = TupleEncoder::new(columns);
        encoder.prepare(&arrays).unwrap();
        let mut out = vec![0xEE; 5];
        for (row, expected) in alone.iter().enumerate() {
            let start = out.len();
            encoder
                .encode_row(row, 1000 + row as u32, row as u32 % 3, &mut out)
                .unwrap();
            assert_eq!(&out[start..], &expected[..]);
        }
    }

    #[test]
    fn sliced_arrays_encode_their_own_rows() {
        let columns = all_types();
        let arrays = make_arrays(&columns, 50, |row, column| (row * 7 + column) % 5 == 0);
        let sliced: Vec<ArrayRef> = arrays.iter().map(|a| a.slice(11, 30)).collect();
        let tuples = encode_all(&columns, &sliced);
        let batch = decode_all(&columns, &(0..columns.len()).collect::<Vec<_>>(), &tuples);
        for (column, expected) in sliced.iter().enumerate() {
            assert_same_values(batch.column(column), expected, &format!("column {column}"));
        }
    }

    #[test]
    fn tuples_of_an_older_definition_read_missing_columns_as_null() {
        let old_columns = vec![PgType::Int4, PgType::Text];
        let arrays = make_arrays(&old_columns, 10, |row, column| row == 3 && column == 1);
        let tuples = encode_all(&old_columns, &arrays);
        let new_columns = vec![PgType::Int4, PgType::Text, PgType::Int8, PgType::Text];
        let batch = decode_all(&new_columns, &[3, 0, 2, 1], &tuples);
        assert_eq!(batch.column(0).null_count(), 10);
        assert_eq!(batch.column(2).null_count(), 10);
        assert_same_values(batch.column(1), &arrays[0], "int4");
        assert_same_values(batch.column(3), &arrays[1], "text");
        let layout = TupleLayout::new(new_columns);
        assert_eq!(layout.attribute_bytes(&tuples[0], 2).unwrap(), None);
        assert_eq!(layout.datum(&tuples[0], 3).unwrap(), Datum::Null);
        assert_eq!(layout.datum(&tuples[0], 0).unwrap(), Datum::Int4(i32::MIN));
    }

    #[test]
    fn dropped_attributes_are_stepped_over_and_missing_values_read() {
        use iolab_catalog::attributes::{DroppedAttribute, MissingValue, StoredAttributes};
        use iolab_catalog::{ColumnDef, Persistence, TableDef};
        // (int4 a, text b, int8 c), two rows, then DROP COLUMN b, ADD COLUMN d int4
        // DEFAULT 7, ADD COLUMN e text DEFAULT 'hello': old tuples store three attributes.
        let old_columns = vec![PgType::Int4, PgType::Text, PgType::Int8];
        let old_arrays = make_arrays(&old_columns, 2, |row, column| row == 1 && column == 1);
        let mut tuples = encode_all(&old_columns, &old_arrays);
        let column = |name: &str, ty| ColumnDef {
            name: name.into(),
            ty,
            not_null: false,
        };
        let table = TableDef {
            oid: 1,
            schema: "public".into(),
            name: "t".into(),
            relfilenode: 1,
            persistence: Persistence::Permanent,
            columns: vec![
                column("a", PgType::Int4),
                column("c", PgType::Int8),
                column("d", PgType::Int4),
                column("e", PgType::Text),
            ],
            reltuples: -1.0,
            relpages: 0,
            stored: StoredAttributes {
                dropped: vec![DroppedAttribute {
                    attnum: 2,
                    ty: PgType::Text,
                }],
                missing: vec![
                    MissingValue {
                        attnum: 4,
                        bytes: 7i32.to_le_bytes().to_vec(),
                    },
                    MissingValue {
                        attnum: 5,
                        bytes: b"hello".to_vec(),
                    },
                ],
            },
            reloptions: vec![],
        };
        // A new tuple: arrays for the four columns, NULL stored for the dropped one.
        let new_columns = vec![PgType::Int4, PgType::Int8, PgType::Int4, PgType::Text];
        let new_arrays = make_arrays(&new_columns, 1, |_, column| column == 2);
        let mut encoder = TupleEncoder::with_layout(TupleLayout::for_table(&table));
        let mut new_tuple = Vec::new();
        encoder
            .encode(&new_arrays, 0, 1, 0, &mut new_tuple)
            .unwrap();
        assert_eq!(tuple::natts(&new_tuple), 5);
        assert_eq!(tuple::null_bitmap(&new_tuple), Some(&[0b1_0101u8][..]));
        tuples.push(new_tuple);

        let layout = TupleLayout::for_table(&table);
        assert_eq!(layout.natts(), 5);
        assert_eq!(layout.columns(), &new_columns[..]);
        let mut decoder = BatchDecoder::with_layout(layout.clone(), vec![3, 2, 1, 0]);
        for t in &tuples {
            decoder.append(t).unwrap();
        }
        let (arrays, rows) = decoder.finish_arrays().unwrap();
        assert_eq!(rows, 3);
        let e = arrays[0].as_string::<i32>();
        assert_eq!(e.value(0), "hello");
        assert_eq!(e.value(1), "hello");
        assert_eq!(e.value(2), new_arrays[3].as_string::<i32>().value(0));
        let d = arrays[1].as_primitive::<Int32Type>();
        assert_eq!((d.value(0), d.value(1), d.is_null(2)), (7, 7, true));
        assert_same_values(&arrays[2].slice(0, 2), &old_arrays[2], "c of old tuples");
        assert_same_values(&arrays[3].slice(0, 2), &old_arrays[0], "a of old tuples");
        assert_same_values(&arrays[3].slice(2, 1), &new_arrays[0], "a of the new tuple");
        // Single attributes read the same way.
        assert_eq!(layout.datum(&tuples[0], 2).unwrap(), Datum::Int4(7));
        assert_eq!(layout.datum(&tuples[1], 3).unwrap(), Datum::Text("hello"));
        assert_eq!(layout.datum(&tuples[2], 2).unwrap(), Datum::Null);
        assert_eq!(
            layout.datum(&tuples[0], 1).unwrap(),
            Datum::Int8(old_arrays[2].as_primitive::<Int64Type>().value(0))
        );
    }

    #[test]
    fn datums_read_typed_values() {
        let columns = all_types();
        let arrays = make_arrays(&columns, 1, |_, _| false);
        let tuples = encode_all(&columns, &arrays);
        let layout = TupleLayout::new(columns);
        let datums: Vec<Datum> = (0..13)
            .map(|c| layout.datum(&tuples[0], c).unwrap())
            .collect();
        assert_eq!(datums[0], Datum::Bool(true));
        assert_eq!(datums[1], Datum::Int2(i16::MIN));
        assert_eq!(datums[2], Datum::Int4(i32::MIN));
        assert_eq!(datums[3], Datum::Int8(i64::MIN));
        assert!(matches!(datums[4], Datum::Float4(f) if f.is_nan()));
        assert!(matches!(datums[5], Datum::Float8(f) if f.is_nan()));
        assert_eq!(datums[6], Datum::Numeric(i128::MIN));
        assert_eq!(datums[7], Datum::Text(&text_value(7)));
        assert_eq!(datums[8], Datum::Text(&text_value(8)));
        assert_eq!(datums[9], Datum::Text(&text_value(9)));
        assert_eq!(datums[10], Datum::Date(0));
        assert_eq!(datums[11], Datum::Timestamp(-1));
        assert_eq!(datums[12], Datum::Timestamptz(1));
    }

    #[test]
    fn the_decoder_is_reused_batch_after_batch() {
        let columns = vec![PgType::Int4, PgType::Text, PgType::Bool];
        let arrays = make_arrays(&columns, 30, |row, column| (row + column) % 4 == 0);
        let tuples = encode_all(&columns, &arrays);
        let projection = vec![2, 1, 0];
        let schema = schema_for(&columns, &projection);
        let mut decoder = BatchDecoder::new(columns.clone(), projection.clone());
        for (start, end) in [(0, 10), (10, 11), (11, 11), (11, 30)] {
            for tuple in &tuples[start..end] {
                decoder.append(tuple).unwrap();
            }
            let batch = decoder.finish(&schema).unwrap();
            assert_eq!(batch.num_rows(), end - start);
            for (i, &column) in projection.iter().enumerate() {
                assert_same_values(
                    batch.column(i),
                    &arrays[column].slice(start, end - start),
                    "batch",
                );
            }
        }
        // Empty projection counts rows, also without tuple bytes.
        let mut decoder = BatchDecoder::new(columns.clone(), vec![]);
        assert!(decoder.decodes_no_columns());
        decoder.append(&[]).unwrap(); // not even looked at
        decoder.append_rows(4);
        let batch = decoder.finish(&Arc::new(Schema::empty())).unwrap();
        assert_eq!(batch.num_rows(), 5);
        assert_eq!(
            decoder
                .finish(&Arc::new(Schema::empty()))
                .unwrap()
                .num_rows(),
            0
        );
    }

    #[test]
    fn corrupted_tuples_are_errors_and_do_not_spoil_the_batch() {
        let columns = vec![PgType::Int4, PgType::Text, PgType::Int8];
        let arrays = make_arrays(&columns, 3, |_, _| false);
        let tuples = encode_all(&columns, &arrays);
        let mut decoder = BatchDecoder::new(columns.clone(), vec![0, 1, 2]);
        decoder.append(&tuples[0]).unwrap();

        let mut bad = Vec::new();
        bad.push(tuples[1][..tuples[1].len() - 1].to_vec()); // truncated
        bad.push(tuples[1][..10].to_vec()); // shorter than a header
        let mut too_many = tuples[1].clone();
        tuple::set_infomask2(&mut too_many, 4);
        bad.push(too_many);
        let mut bad_hoff = tuples[1].clone();
        bad_hoff[22] = 200;
        bad.push(bad_hoff);
        let mut toast_pointer = tuples[0].clone(); // text of 1 byte: short header at 28
        toast_pointer[28] = 0x01;
        bad.push(toast_pointer);
        for tuple in &bad {
            let err = decoder.append(tuple).unwrap_err();
            assert_eq!(err.code, sqlstate::DATA_CORRUPTED, "{}", err.message);
        }
        decoder.append(&tuples[2]).unwrap();
        let batch = decoder.finish(&schema_for(&columns, &[0, 1, 2])).unwrap();
        assert_eq!(batch.num_rows(), 2);
        let expected_rows = [0usize, 2];
        for (column, expected) in arrays.iter().enumerate() {
            for (i, &row) in expected_rows.iter().enumerate() {
                assert_same_values(
                    &batch.column(column).slice(i, 1),
                    &expected.slice(row, 1),
                    "kept row",
                );
            }
        }
    }

    #[test]
    fn input_of_the_wrong_type_is_an_internal_error() {
        let mut encoder = TupleEncoder::new(vec![PgType::Int4, PgType::Text]);
        let wrong: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(vec![1])), text("a")];
        let err = encoder.prepare(&wrong).unwrap_err();
        assert_eq!(encoder.prepared_rows(), 0);
        assert_eq!(err.code, sqlstate::INTERNAL_ERROR);
        let short: Vec<ArrayRef> = vec![Arc::new(Int32Array::from(vec![1]))];
        assert_eq!(
            encoder.prepare(&short).unwrap_err().code,
            sqlstate::INTERNAL_ERROR
        );
        let ragged: Vec<ArrayRef> = vec![Arc::new(Int32Array::from(vec![1, 2])), text("a")];
        assert_eq!(
            encoder.prepare(&ragged).unwrap_err().code,
            sqlstate::INTERNAL_ERROR
        );
    }

    #[test]
    fn tuple_size_hint_is_the_smallest_tuple() {
        assert_eq!(
            TupleEncoder::new(vec![PgType::Int4, PgType::Text]).tuple_size_hint(),
            29
        );
        assert_eq!(
            TupleEncoder::new(vec![PgType::Bool, PgType::Int8]).tuple_size_hint(),
            40
        );
    }

    /// Encode and decode 1 M rows of (int4, 32-byte text), the load benchmark's shape.
    /// `cargo test -p iolab-engine --lib heap::codec::tests::bench -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn bench_encode_decode_one_million_rows() {
        const ROWS: usize = 1_000_000;
        const BATCH: usize = 8192;
        let columns = vec![PgType::Int4, PgType::Text];
        let ints: ArrayRef = Arc::new(Int32Array::from_iter_values(0..ROWS as i32));
        let texts: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..ROWS).map(|i| format!("{i:0>32}")),
        ));
        let arrays = vec![ints, texts];

        // Encode, copying each tuple into an 8 KiB "page" as the page layer would.
        let mut encoder = TupleEncoder::new(columns.clone());
        let mut page = vec![0u8; 8192];
        let mut page_used = 0;
        let mut tuple = Vec::with_capacity(128);
        let started = Instant::now();
        for start in (0..ROWS).step_by(BATCH) {
            let len = BATCH.min(ROWS - start);
            let slices: Vec<ArrayRef> = arrays.iter().map(|a| a.slice(start, len)).collect();
            encoder.prepare(&slices).unwrap();
            for row in 0..len {
                tuple.clear();
                encoder.encode_row(row, 1, 0, &mut tuple).unwrap();
                if page_used + tuple.len() > page.len() {
                    page_used = 0;
                }
                page[page_used..page_used + tuple.len()].copy_from_slice(&tuple);
                page_used = tuple::maxalign(page_used + tuple.len());
            }
        }
        let elapsed = started.elapsed();
        println!(
            "encode: {ROWS} rows in {elapsed:?}, {:.1} M rows/s",
            ROWS as f64 / elapsed.as_secs_f64() / 1e6
        );

        // The tuples to decode, one after another in one buffer.
        let mut heap = Vec::with_capacity(ROWS * 64);
        let mut tuple_ends = Vec::with_capacity(ROWS);
        encoder.prepare(&arrays).unwrap();
        for row in 0..ROWS {
            encoder.encode_row(row, 1, 0, &mut heap).unwrap();
            heap.resize(tuple::maxalign(heap.len()), 0);
            tuple_ends.push(heap.len());
        }
        println!("{} bytes per tuple, MAXALIGNed", heap.len() / ROWS);

        for projection in [vec![], vec![0], vec![0, 1]] {
            let schema = schema_for(&columns, &projection);
            let mut decoder = BatchDecoder::new(columns.clone(), projection.clone());
            let started = Instant::now();
            let mut rows = 0;
            let mut start = 0;
            for &end in &tuple_ends {
                decoder.append(&heap[start..end]).unwrap();
                start = end;
                if decoder.len() == BATCH {
                    rows += decoder.finish(&schema).unwrap().num_rows();
                }
            }
            rows += decoder.finish(&schema).unwrap().num_rows();
            let elapsed = started.elapsed();
            assert_eq!(rows, ROWS);
            println!(
                "decode {projection:?}: {ROWS} rows in {elapsed:?}, {:.1} M rows/s",
                ROWS as f64 / elapsed.as_secs_f64() / 1e6
            );
        }
    }
}
