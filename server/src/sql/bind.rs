//! Parameter values as the client sends them — text, or PostgreSQL's binary format for
//! the types that have one here — read into DataFusion scalars of the parameter's type,
//! with PostgreSQL's errors for values that do not fit (22P02, 08P01). Dates, timestamps
//! and intervals sent as text are read by iolab's input functions with the session's
//! `DateStyle` and `TimeZone`, as PostgreSQL reads them. A one-dimensional array of those
//! types (`integer[]`, `text[]` …, what psycopg sends for a Python list) is read element
//! by element from its text form (`{1,2,NULL}`) or PostgreSQL's binary array format.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, IntervalMonthDayNano, IntervalUnit, TimeUnit};
use datafusion::scalar::ScalarValue;
use iolab_catalog::{sqlstate, PgError, PgResult, PgType};
use iolab_engine::values::array_literal::split_array_literal;
use iolab_engine::values::input::parse_array;
use iolab_engine::values::TextFormat;
use pgwire::api::Type;

/// The value of a parameter of type `ty` sent as `raw` (`None`: NULL), in binary format
/// or as text (read as a session with `fmt` reads it).
pub fn param_value(
    raw: Option<&[u8]>,
    ty: &Type,
    binary: bool,
    fmt: &TextFormat,
) -> PgResult<ScalarValue> {
    let target = param_arrow_type(ty);
    let Some(bytes) = raw else {
        return ScalarValue::try_from(&target).map_err(crate::errors::from_datafusion);
    };
    if let Some(element) = array_element(ty) {
        return array_param(bytes, &element, binary, fmt);
    }
    let bad = || {
        PgError::new(
            sqlstate::PROTOCOL_VIOLATION,
            format!(
                "incorrect binary data format in bind parameter of type {}",
                ty.name()
            ),
        )
    };
    if binary {
        let be = |n: usize| -> PgResult<&[u8]> {
            if bytes.len() == n {
                Ok(bytes)
            } else {
                Err(bad())
            }
        };
        return Ok(match *ty {
            Type::BOOL => ScalarValue::Boolean(Some(be(1)?[0] != 0)),
            Type::INT2 => ScalarValue::Int16(Some(i16::from_be_bytes(be(2)?.try_into().unwrap()))),
            Type::INT4 => ScalarValue::Int32(Some(i32::from_be_bytes(be(4)?.try_into().unwrap()))),
            Type::INT8 => ScalarValue::Int64(Some(i64::from_be_bytes(be(8)?.try_into().unwrap()))),
            Type::FLOAT4 => {
                ScalarValue::Float32(Some(f32::from_be_bytes(be(4)?.try_into().unwrap())))
            }
            Type::FLOAT8 => {
                ScalarValue::Float64(Some(f64::from_be_bytes(be(8)?.try_into().unwrap())))
            }
            Type::DATE => ScalarValue::Date32(Some(
                i32::from_be_bytes(be(4)?.try_into().unwrap()) + PG_EPOCH_DAYS,
            )),
            Type::TIMESTAMP => ScalarValue::TimestampMicrosecond(
                Some(i64::from_be_bytes(be(8)?.try_into().unwrap()) + PG_EPOCH_MICROS),
                None,
            ),
            Type::TIMESTAMPTZ => ScalarValue::TimestampMicrosecond(
                Some(i64::from_be_bytes(be(8)?.try_into().unwrap()) + PG_EPOCH_MICROS),
                Some(iolab_catalog::types::TIMESTAMPTZ_ZONE.into()),
            ),
            // PostgreSQL's interval: µs, days, months.
            Type::INTERVAL => {
                let b = be(16)?;
                let micros = i64::from_be_bytes(b[..8].try_into().unwrap());
                let days = i32::from_be_bytes(b[8..12].try_into().unwrap());
                let months = i32::from_be_bytes(b[12..].try_into().unwrap());
                ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(
                    months,
                    days,
                    micros.checked_mul(1000).ok_or_else(bad)?,
                )))
            }
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                ScalarValue::Utf8(Some(String::from_utf8(bytes.to_vec()).map_err(|_| bad())?))
            }
            _ => {
                return Err(PgError::unsupported(format!(
                    "binary parameters of type {} are not supported",
                    ty.name()
                )))
            }
        });
    }
    let text = utf8(bytes)?;
    // Dates, timestamps and intervals by the input functions of iolab's columns.
    let date_time = match *ty {
        Type::DATE => Some(PgType::Date),
        Type::TIMESTAMP => Some(PgType::Timestamp),
        Type::TIMESTAMPTZ => Some(PgType::Timestamptz),
        Type::INTERVAL => Some(PgType::Interval),
        _ => None,
    };
    if let Some(column_type) = date_time {
        let value = parse_array(column_type, [Some(text)], fmt)?;
        return ScalarValue::try_from_array(&value, 0).map_err(crate::errors::from_datafusion);
    }
    let value = ScalarValue::Utf8(Some(text.to_string()));
    if target == DataType::Utf8 {
        return Ok(value);
    }
    value.cast_to(&target).map_err(|_| {
        PgError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!(
                "invalid input syntax for type {}: \"{text}\"",
                pg_type_name(ty)
            ),
        )
    })
}

pub fn pg_type_name(ty: &Type) -> &str {
    match *ty {
        Type::INT2 => "smallint",
        Type::INT4 => "integer",
        Type::INT8 => "bigint",
        Type::FLOAT4 => "real",
        Type::FLOAT8 => "double precision",
        Type::BOOL => "boolean",
        _ => ty.name(),
    }
}

/// The Arrow type a parameter of type `ty` is bound as (`None` for unknown, and for
/// types iolab binds as text without being text).
pub fn declared_arrow_type(ty: &Type) -> Option<DataType> {
    match *ty {
        Type::TEXT | Type::VARCHAR | Type::BPCHAR => Some(DataType::Utf8),
        _ => Some(param_arrow_type(ty)).filter(|t| *t != DataType::Utf8),
    }
}

pub fn param_arrow_type(ty: &Type) -> DataType {
    if let Some(element) = array_element(ty) {
        return DataType::List(Arc::new(Field::new_list_field(
            param_arrow_type(&element),
            true,
        )));
    }
    match *ty {
        Type::BOOL => DataType::Boolean,
        Type::INT2 => DataType::Int16,
        Type::INT4 => DataType::Int32,
        Type::INT8 => DataType::Int64,
        Type::FLOAT4 => DataType::Float32,
        Type::FLOAT8 => DataType::Float64,
        Type::NUMERIC => DataType::Decimal128(38, 10),
        Type::DATE => DataType::Date32,
        Type::TIMESTAMP => DataType::Timestamp(TimeUnit::Microsecond, None),
        Type::TIMESTAMPTZ => DataType::Timestamp(
            TimeUnit::Microsecond,
            Some(iolab_catalog::types::TIMESTAMPTZ_ZONE.into()),
        ),
        Type::INTERVAL => DataType::Interval(IntervalUnit::MonthDayNano),
        _ => DataType::Utf8,
    }
}

/// A parameter's text, which must be UTF-8 (the only client encoding iolab takes).
fn utf8(bytes: &[u8]) -> PgResult<&str> {
    std::str::from_utf8(bytes)
        .map_err(|e| iolab_engine::values::utf8::invalid_utf8(&bytes[e.valid_up_to()..]))
}

/// The element type of an array type whose elements are bound as their own type.
fn array_element(ty: &Type) -> Option<Type> {
    Some(match *ty {
        Type::BOOL_ARRAY => Type::BOOL,
        Type::INT2_ARRAY => Type::INT2,
        Type::INT4_ARRAY => Type::INT4,
        Type::INT8_ARRAY => Type::INT8,
        Type::FLOAT4_ARRAY => Type::FLOAT4,
        Type::FLOAT8_ARRAY => Type::FLOAT8,
        Type::NUMERIC_ARRAY => Type::NUMERIC,
        Type::TEXT_ARRAY => Type::TEXT,
        Type::VARCHAR_ARRAY => Type::VARCHAR,
        Type::BPCHAR_ARRAY => Type::BPCHAR,
        Type::NAME_ARRAY => Type::NAME,
        Type::DATE_ARRAY => Type::DATE,
        Type::TIMESTAMP_ARRAY => Type::TIMESTAMP,
        Type::TIMESTAMPTZ_ARRAY => Type::TIMESTAMPTZ,
        Type::INTERVAL_ARRAY => Type::INTERVAL,
        _ => return None,
    })
}

/// An array parameter's value: a list of `element` values.
fn array_param(
    bytes: &[u8],
    element: &Type,
    binary: bool,
    fmt: &TextFormat,
) -> PgResult<ScalarValue> {
    let values = if binary {
        binary_array_elements(bytes, element)?
            .into_iter()
            .map(|raw| param_value(raw, element, true, fmt))
            .collect::<PgResult<Vec<_>>>()?
    } else {
        split_array_literal(utf8(bytes)?)?
            .iter()
            .map(|e| param_value(e.as_deref().map(str::as_bytes), element, false, fmt))
            .collect::<PgResult<Vec<_>>>()?
    };
    Ok(ScalarValue::List(ScalarValue::new_list_nullable(
        &values,
        &param_arrow_type(element),
    )))
}

/// The elements of a one-dimensional array in PostgreSQL's binary format (`array_send`):
/// i32 dimensions, i32 has-nulls flag, u32 element OID, per dimension i32 length and i32
/// lower bound, then each element as i32 length (−1: NULL) and its bytes.
fn binary_array_elements<'a>(bytes: &'a [u8], element: &Type) -> PgResult<Vec<Option<&'a [u8]>>> {
    let bad = || {
        PgError::new(
            sqlstate::PROTOCOL_VIOLATION,
            format!(
                "incorrect binary data format in bind parameter of type {}[]",
                element.name()
            ),
        )
    };
    fn take<'b>(rest: &mut &'b [u8], n: usize) -> Option<&'b [u8]> {
        let (head, tail) = rest.split_at_checked(n)?;
        *rest = tail;
        Some(head)
    }
    fn word(rest: &mut &[u8]) -> Option<i32> {
        take(rest, 4).map(|w| i32::from_be_bytes(w.try_into().unwrap()))
    }
    let mut rest = bytes;
    let ndim = word(&mut rest).ok_or_else(bad)?;
    let _has_nulls_and_element_oid = take(&mut rest, 8).ok_or_else(bad)?;
    let len = match ndim {
        0 => 0,
        1 => {
            let len = word(&mut rest).ok_or_else(bad)?;
            let _lower_bound = word(&mut rest).ok_or_else(bad)?;
            usize::try_from(len).map_err(|_| bad())?
        }
        _ => {
            return Err(PgError::unsupported(
                "arrays of more than one dimension are not supported",
            ))
        }
    };
    let mut elements = Vec::with_capacity(len.min(bytes.len() / 4));
    for _ in 0..len {
        let n = word(&mut rest).ok_or_else(bad)?;
        elements.push(match usize::try_from(n) {
            Ok(n) => Some(take(&mut rest, n).ok_or_else(bad)?),
            Err(_) => None,
        });
    }
    if !rest.is_empty() {
        return Err(bad());
    }
    Ok(elements)
}

/// Days and microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_DAYS: i32 = 10_957;
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
