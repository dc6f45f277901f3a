//! PostgreSQL's value formats, between text or bytes and Arrow arrays.
//!
//! A client never sees an Arrow array: it sees `42`, `1.5e-07`, `2024-01-31 12:34:56+00`, or the
//! bytes of a binary `numeric`. This module is the one place that turns PostgreSQL's external
//! formats into Arrow values and back, so that every path (simple and extended protocol, COPY,
//! INSERT) agrees with PostgreSQL 18 and with itself:
//!
//! | file | direction | PostgreSQL counterpart |
//! |---|---|---|
//! | [`input`] | text → Arrow | the types' input functions (`int4in`, `numeric_in`, `timestamptz_in`, …) |
//! | [`output_text`] | Arrow → text | the output functions (`float8out`, `timestamptz_out`, `array_out`, …) |
//! | [`output_binary`] | Arrow → bytes | the send functions (`numeric_send`, `timestamp_send`, …) |
//! | [`assign`] | Arrow → Arrow | assignment casts applied by INSERT and COPY |
//! | [`copy_format`] | bytes ↔ rows | COPY's text and CSV formats |
//!
//! Session state that changes how values look (TimeZone, extra_float_digits, DateStyle's field
//! order) travels in a [`TextFormat`]; nothing here reads global state.
//!
//! # How iolab's Arrow values map to PostgreSQL's
//!
//! - `date` is Arrow `Date32` (days since 1970-01-01); PostgreSQL counts days since 2000-01-01.
//!   `i32::MAX` / `i32::MIN` stand for `infinity` / `-infinity`, as in PostgreSQL.
//! - `timestamp` and `timestamptz` are `Timestamp(Microsecond)` since 1970-01-01 (`timestamptz`
//!   always in UTC); `i64::MAX` / `i64::MIN` are `infinity` / `-infinity`. Measured from 1970,
//!   an `i64` of microseconds ends in the year 294247, so iolab's latest timestamp is 30 years
//!   earlier than PostgreSQL's (294276-12-31); later values are "out of range".
//! - `numeric(p,s)` is `Decimal128(p,s)`: it cannot hold `NaN` or `±Infinity` (see
//!   [`input::parse_numeric`]).
//! - `char(n)` is stored blank-padded to `n` characters, as PostgreSQL stores it.

pub mod assign;
pub mod copy_format;
mod datetime;
pub mod input;
pub mod interval_input;
pub mod output_binary;
pub mod output_text;
pub mod utf8;
mod zone_abbreviations;

pub use assign::{assign_cast, assign_cast_with, check_not_null};
pub use copy_format::{CopyEncoder, CopyFormat, CopyHeader, CopyOptions, CopyParser};
pub use datetime::{
    calendar_difference, civil_from_days, days_from_civil, days_in_month, scale_interval,
    SessionZone, DATE_NEG_INFINITY, DATE_POS_INFINITY, PG_EPOCH_DAYS, PG_EPOCH_MICROS,
    TS_NEG_INFINITY, TS_POS_INFINITY, USECS_PER_DAY,
};
pub use input::ColumnParser;
pub mod array_literal;
pub use output_binary::{array_element, pg_type_for, write_binary, write_binary_with};
pub use output_text::{text_value, write_text};

use iolab_catalog::{sqlstate, PgError};

/// The order of day, month and year in ambiguous date input such as `1/2/2024`
/// (the second half of PostgreSQL's `DateStyle`; output is always ISO).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum DateOrder {
    #[default]
    Mdy,
    Dmy,
    Ymd,
}

impl DateOrder {
    /// Reads the order from a `DateStyle` value such as `ISO, MDY` (`German`, `SQL, DMY`, …).
    pub fn from_datestyle(datestyle: &str) -> DateOrder {
        let upper = datestyle.to_ascii_uppercase();
        if upper.contains("DMY") || upper.contains("EURO") {
            DateOrder::Dmy
        } else if upper.contains("YMD") {
            DateOrder::Ymd
        } else {
            DateOrder::Mdy
        }
    }
}

/// Session settings that change how values are read and written as text.
#[derive(Clone, Debug)]
pub struct TextFormat {
    /// `extra_float_digits`: 1 (the default) or more gives the shortest text that reads back
    /// to the same float; 0 or less gives `%g` with 15 (float8) or 6 (float4) digits plus it.
    pub extra_float_digits: i32,
    /// `TimeZone`: the zone `timestamptz` values are shown in and unzoned input is read in.
    pub time_zone: SessionZone,
    /// Field order for ambiguous date input.
    pub date_order: DateOrder,
    /// The statement's `now()` in microseconds since 1970-01-01 UTC, for the input words
    /// `now`, `today`, `tomorrow`, `yesterday`; `None` reads the clock.
    pub now_micros: Option<i64>,
}

impl Default for TextFormat {
    fn default() -> TextFormat {
        TextFormat {
            extra_float_digits: 1,
            time_zone: SessionZone::utc(),
            date_order: DateOrder::Mdy,
            now_micros: None,
        }
    }
}

impl TextFormat {
    /// A format for the session's `TimeZone` setting (`UTC`, `Europe/Berlin`, `-3`, `UTC+5`, …).
    /// An unknown zone is PostgreSQL's `invalid value for parameter "TimeZone"` (22023).
    pub fn with_time_zone(mut self, setting: &str) -> Result<TextFormat, PgError> {
        self.time_zone = SessionZone::parse(setting).ok_or_else(|| {
            PgError::new(
                sqlstate::INVALID_PARAMETER_VALUE,
                format!("invalid value for parameter \"TimeZone\": \"{setting}\""),
            )
        })?;
        Ok(self)
    }

    pub fn with_extra_float_digits(mut self, digits: i32) -> TextFormat {
        self.extra_float_digits = digits;
        self
    }

    /// `now()` as this format sees it: the statement's time or the clock.
    pub fn now(&self) -> i64 {
        self.now_micros.unwrap_or_else(|| {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            now.as_micros() as i64
        })
    }
}

/// PostgreSQL's name for the type of an Arrow column, as error messages print it
/// (`integer`, `numeric`, `text`, `interval`, `integer[]`).
pub fn arrow_type_name(dt: &datafusion::arrow::datatypes::DataType) -> String {
    use datafusion::arrow::datatypes::DataType;
    match dt {
        DataType::Null => "unknown".to_string(),
        DataType::Interval(_) | DataType::Duration(_) => "interval".to_string(),
        DataType::Time32(_) | DataType::Time64(_) => "time without time zone".to_string(),
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => "bytea".to_string(),
        DataType::Decimal32(..) | DataType::Decimal64(..) | DataType::Decimal256(..) => {
            "numeric".to_string()
        }
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            let inner = arrow_type_name(f.data_type());
            if inner.ends_with("[]") {
                inner
            } else {
                format!("{inner}[]")
            }
        }
        DataType::Struct(_) => "record".to_string(),
        DataType::Dictionary(_, v) => arrow_type_name(v),
        other => match iolab_catalog::PgType::for_arrow(other) {
            Some(t) => t.sql_name().to_string(),
            None => "text".to_string(),
        },
    }
}
