//! Casts between text and the date/time types through iolab's input and output functions,
//! which read and write values as PostgreSQL does: `'01/02/2024'::date` in the session's
//! `DateStyle`, `'2024-07-01 12:00'::timestamptz` in its `TimeZone`, `'today'`, `'1 day
//! 02:00'::interval`; `now()::text` as `2024-07-01 12:00:00.123456+02`, not Arrow's
//! `2024-07-01T10:00:00.123456Z`.
//!
//! `sql::session_time` puts a [`TextCast`] where a plan casts text to `date`, `timestamp`,
//! `timestamptz` or `interval`, or one of those to text. The session's reading of text is
//! written into the function (its `TimeZone` and `DateStyle`), as PostgreSQL reads a
//! literal when it parses a statement; a plan is only reused under the same settings
//! (`sql::plan_cache`).

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, IntervalUnit};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use iolab_catalog::PgType;
use iolab_engine::values::input::parse_array;
use iolab_engine::values::{write_text, DateOrder, TextFormat};
use iolab_settings::SessionSettings;

use crate::pgcatalog::functions::pg;
use crate::pgcatalog::zoned_time::{result, rows_of};

/// The settings that read and write date/time text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TextSettings {
    /// `TimeZone` as stored (`Europe/Berlin`, `<-05>+05`).
    pub time_zone: String,
    /// `DateStyle` as stored (`ISO, MDY`).
    pub date_style: String,
}

impl TextSettings {
    /// A session's.
    pub fn of(settings: &SessionSettings) -> TextSettings {
        TextSettings {
            time_zone: settings.time_zone(),
            date_style: settings.get("DateStyle").unwrap_or_default(),
        }
    }

    pub fn format(&self) -> TextFormat {
        let fmt = TextFormat::default();
        let mut fmt = fmt.clone().with_time_zone(&self.time_zone).unwrap_or(fmt);
        fmt.date_order = DateOrder::from_datestyle(&self.date_style);
        fmt
    }
}

/// Which way a [`TextCast`] goes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Text to this date/time type (`date`, `timestamp`, `timestamptz`, `interval`).
    Read(DataType),
    /// A date/time value to text.
    Write,
}

/// Is `t` a type [`TextCast`] reads text into?
pub fn reads_into(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Date32
            | DataType::Timestamp(_, _)
            | DataType::Interval(IntervalUnit::MonthDayNano)
    )
}

/// Is `t` a type [`TextCast`] writes as text?
pub fn writes_from(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Date32
            | DataType::Timestamp(_, _)
            | DataType::Time64(_)
            | DataType::Interval(IntervalUnit::MonthDayNano)
    )
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TextCast {
    direction: Direction,
    settings: TextSettings,
    signature: Signature,
}

impl TextCast {
    pub fn new(direction: Direction, settings: TextSettings) -> TextCast {
        if let Direction::Read(t) = &direction {
            assert!(reads_into(t), "no input function for {t}");
        }
        TextCast {
            direction,
            settings,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for TextCast {
    /// PostgreSQL's names of the functions a cast calls.
    fn name(&self) -> &str {
        match &self.direction {
            Direction::Read(DataType::Date32) => "date_in",
            Direction::Read(DataType::Timestamp(_, Some(_))) => "timestamptz_in",
            Direction::Read(DataType::Timestamp(_, None)) => "timestamp_in",
            Direction::Read(_) => "interval_in",
            Direction::Write => "text_out",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(match &self.direction {
            Direction::Read(t) => t.clone(),
            Direction::Write => DataType::Utf8,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let values = args.args[0].to_array(rows_of(&args))?;
        result(self.convert(&values)?, &args.args)
    }
}

impl TextCast {
    /// The cast of each value of `array`.
    pub fn convert(&self, array: &ArrayRef) -> Result<ArrayRef> {
        let fmt = self.settings.format();
        let target = match &self.direction {
            Direction::Write => {
                let mut out = StringBuilder::with_capacity(array.len(), array.len() * 24);
                let mut text = Vec::with_capacity(64);
                for row in 0..array.len() {
                    text.clear();
                    if write_text(array.as_ref(), row, &fmt, &mut text) {
                        // The writers of these types write ASCII.
                        out.append_value(String::from_utf8_lossy(&text));
                    } else {
                        out.append_null();
                    }
                }
                return Ok(Arc::new(out.finish()));
            }
            Direction::Read(target) => target,
        };
        // The input functions of iolab's columns, then the cast's own unit (DataFusion's
        // `timestamp` is in nanoseconds).
        let ty = PgType::for_arrow(target).expect("reads_into names column types");
        let text = cast(array, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let read = parse_array(ty, text.iter(), &fmt).map_err(pg)?;
        Ok(cast(&read, target)?)
    }
}
