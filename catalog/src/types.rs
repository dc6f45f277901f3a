//! PostgreSQL's column types as iolab stores them.
//!
//! Each `PgType` knows four things about itself: the PostgreSQL type OID and name a client
//! sees (`pg_type`, `format_type`), the Arrow type DataFusion computes with, and the on-page
//! shape its values take in a heap tuple (`typlen`, `typalign`, as in `pg_type`).
//!
//! Differences from PostgreSQL, stated once: `numeric` is stored as a fixed 16-byte
//! two's-complement integer scaled by the column's scale (Arrow `Decimal128`), not as
//! PostgreSQL's variable-length base-10000 digits; an unconstrained `numeric` gets
//! precision 38 and scale [`NUMERIC_DEFAULT_SCALE`].

use datafusion::arrow::datatypes::{DataType, IntervalUnit, TimeUnit};
use serde::{Deserialize, Serialize};

/// Scale used for `numeric` columns declared without a typmod.
pub const NUMERIC_DEFAULT_SCALE: i8 = 6;
/// Largest precision Arrow's Decimal128 holds.
pub const NUMERIC_MAX_PRECISION: u8 = 38;

/// The time zone DataFusion attaches to `timestamptz` values (they are stored as UTC).
pub const TIMESTAMPTZ_ZONE: &str = "+00:00";

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum PgType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    /// numeric(precision, scale)
    Numeric {
        precision: u8,
        scale: i8,
    },
    Text,
    /// varchar(n); `None` = no length limit
    Varchar(Option<u32>),
    /// char(n), blank-padded
    Bpchar(u32),
    Date,
    Timestamp,
    Timestamptz,
    /// months, days and microseconds, as PostgreSQL keeps an interval
    Interval,
}

/// How a value of a type lies in a tuple: fixed length or variable length (varlena).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypLen {
    Fixed(usize),
    Varlena,
}

impl PgType {
    /// PostgreSQL's type OID (`pg_type.oid`).
    pub fn oid(&self) -> u32 {
        match self {
            PgType::Bool => 16,
            PgType::Int2 => 21,
            PgType::Int4 => 23,
            PgType::Int8 => 20,
            PgType::Float4 => 700,
            PgType::Float8 => 701,
            PgType::Numeric { .. } => 1700,
            PgType::Text => 25,
            PgType::Varchar(_) => 1043,
            PgType::Bpchar(_) => 1042,
            PgType::Date => 1082,
            PgType::Timestamp => 1114,
            PgType::Timestamptz => 1184,
            PgType::Interval => 1186,
        }
    }

    /// `pg_type.typname`, e.g. `int4`.
    pub fn typname(&self) -> &'static str {
        match self {
            PgType::Bool => "bool",
            PgType::Int2 => "int2",
            PgType::Int4 => "int4",
            PgType::Int8 => "int8",
            PgType::Float4 => "float4",
            PgType::Float8 => "float8",
            PgType::Numeric { .. } => "numeric",
            PgType::Text => "text",
            PgType::Varchar(_) => "varchar",
            PgType::Bpchar(_) => "bpchar",
            PgType::Date => "date",
            PgType::Timestamp => "timestamp",
            PgType::Timestamptz => "timestamptz",
            PgType::Interval => "interval",
        }
    }

    /// The SQL-standard name `information_schema.columns.data_type` reports.
    pub fn sql_name(&self) -> &'static str {
        match self {
            PgType::Bool => "boolean",
            PgType::Int2 => "smallint",
            PgType::Int4 => "integer",
            PgType::Int8 => "bigint",
            PgType::Float4 => "real",
            PgType::Float8 => "double precision",
            PgType::Numeric { .. } => "numeric",
            PgType::Text => "text",
            PgType::Varchar(_) => "character varying",
            PgType::Bpchar(_) => "character",
            PgType::Date => "date",
            PgType::Timestamp => "timestamp without time zone",
            PgType::Timestamptz => "timestamp with time zone",
            PgType::Interval => "interval",
        }
    }

    /// `format_type(atttypid, atttypmod)` as psql's `\d` shows it, e.g. `character varying(20)`.
    pub fn format_type(&self) -> String {
        match self {
            PgType::Numeric { precision, scale } if !self.is_unconstrained_numeric() => {
                format!("numeric({precision},{scale})")
            }
            PgType::Varchar(Some(n)) => format!("character varying({n})"),
            PgType::Bpchar(n) => format!("character({n})"),
            other => other.sql_name().to_string(),
        }
    }

    /// `pg_attribute.atttypmod`: -1 when the type has no modifier.
    pub fn typmod(&self) -> i32 {
        match self {
            PgType::Numeric { precision, scale } if !self.is_unconstrained_numeric() => {
                (((*precision as i32) << 16) | (*scale as i32 & 0xffff)) + 4
            }
            PgType::Varchar(Some(n)) | PgType::Bpchar(n) => *n as i32 + 4,
            _ => -1,
        }
    }

    /// An unconstrained `numeric` (declared without precision and scale).
    pub fn unconstrained_numeric() -> PgType {
        PgType::Numeric {
            precision: NUMERIC_MAX_PRECISION,
            scale: NUMERIC_DEFAULT_SCALE,
        }
    }

    pub fn is_unconstrained_numeric(&self) -> bool {
        *self == PgType::unconstrained_numeric()
    }

    /// The Arrow type DataFusion sees for this column.
    pub fn arrow_type(&self) -> DataType {
        match self {
            PgType::Bool => DataType::Boolean,
            PgType::Int2 => DataType::Int16,
            PgType::Int4 => DataType::Int32,
            PgType::Int8 => DataType::Int64,
            PgType::Float4 => DataType::Float32,
            PgType::Float8 => DataType::Float64,
            PgType::Numeric { precision, scale } => DataType::Decimal128(*precision, *scale),
            PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => DataType::Utf8,
            PgType::Date => DataType::Date32,
            PgType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            PgType::Timestamptz => {
                DataType::Timestamp(TimeUnit::Microsecond, Some(TIMESTAMPTZ_ZONE.into()))
            }
            PgType::Interval => DataType::Interval(IntervalUnit::MonthDayNano),
        }
    }

    /// `pg_type.typlen`, as iolab lays the value out in a tuple.
    pub fn typlen(&self) -> TypLen {
        match self {
            PgType::Bool => TypLen::Fixed(1),
            PgType::Int2 => TypLen::Fixed(2),
            PgType::Int4 | PgType::Float4 | PgType::Date => TypLen::Fixed(4),
            PgType::Int8 | PgType::Float8 | PgType::Timestamp | PgType::Timestamptz => {
                TypLen::Fixed(8)
            }
            PgType::Numeric { .. } | PgType::Interval => TypLen::Fixed(16),
            PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => TypLen::Varlena,
        }
    }

    /// `pg_type.typalign` in bytes (1, 2, 4 or 8).
    pub fn typalign(&self) -> usize {
        match self {
            PgType::Bool => 1,
            PgType::Int2 => 2,
            PgType::Int4 | PgType::Float4 | PgType::Date => 4,
            PgType::Int8 | PgType::Float8 | PgType::Timestamp | PgType::Timestamptz => 8,
            PgType::Numeric { .. } | PgType::Interval => 8,
            PgType::Text | PgType::Varchar(_) | PgType::Bpchar(_) => 4,
        }
    }

    /// Parse a type name as written in `CREATE TABLE` (lower-case, modifiers already split off).
    /// `mods` are the numbers in parentheses, e.g. `[10, 2]` for `numeric(10,2)`.
    pub fn from_sql_name(name: &str, mods: &[u32]) -> Option<PgType> {
        let name = name.trim().to_ascii_lowercase();
        let name = name.strip_prefix("pg_catalog.").unwrap_or(&name);
        Some(match name {
            "bool" | "boolean" => PgType::Bool,
            "int2" | "smallint" => PgType::Int2,
            "int4" | "int" | "integer" => PgType::Int4,
            "int8" | "bigint" => PgType::Int8,
            "float4" | "real" => PgType::Float4,
            "float8" | "double precision" | "float" => PgType::Float8,
            "numeric" | "decimal" => match mods {
                [] => PgType::unconstrained_numeric(),
                [p] => PgType::Numeric {
                    precision: (*p).min(38) as u8,
                    scale: 0,
                },
                [p, s] => PgType::Numeric {
                    precision: (*p).min(38) as u8,
                    scale: *s as i8,
                },
                _ => return None,
            },
            "text" => PgType::Text,
            "varchar" | "character varying" => PgType::Varchar(mods.first().copied()),
            "bpchar" | "char" | "character" => PgType::Bpchar(mods.first().copied().unwrap_or(1)),
            "date" => PgType::Date,
            "timestamp" | "timestamp without time zone" => PgType::Timestamp,
            "timestamptz" | "timestamp with time zone" => PgType::Timestamptz,
            "interval" => PgType::Interval,
            _ => return None,
        })
    }

    /// The PostgreSQL type a DataFusion result column of this Arrow type is reported as.
    pub fn for_arrow(dt: &DataType) -> Option<PgType> {
        Some(match dt {
            DataType::Boolean => PgType::Bool,
            DataType::Int8 | DataType::Int16 | DataType::UInt8 => PgType::Int2,
            DataType::Int32 | DataType::UInt16 => PgType::Int4,
            DataType::Int64 | DataType::UInt32 => PgType::Int8,
            DataType::UInt64 => PgType::Numeric {
                precision: 20,
                scale: 0,
            },
            DataType::Float16 | DataType::Float32 => PgType::Float4,
            DataType::Float64 => PgType::Float8,
            DataType::Decimal128(p, s) => PgType::Numeric {
                precision: *p,
                scale: *s,
            },
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => PgType::Text,
            DataType::Date32 | DataType::Date64 => PgType::Date,
            DataType::Timestamp(_, None) => PgType::Timestamp,
            DataType::Timestamp(_, Some(_)) => PgType::Timestamptz,
            DataType::Interval(_) => PgType::Interval,
            _ => return None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_sql_names() {
        for t in [
            PgType::Bool,
            PgType::Int2,
            PgType::Int4,
            PgType::Int8,
            PgType::Float4,
            PgType::Float8,
            PgType::Text,
            PgType::Date,
            PgType::Timestamp,
            PgType::Timestamptz,
            PgType::Interval,
        ] {
            assert_eq!(PgType::from_sql_name(t.sql_name(), &[]), Some(t));
            assert_eq!(PgType::from_sql_name(t.typname(), &[]), Some(t));
        }
    }

    #[test]
    fn typmods_match_postgres() {
        // pg_attribute.atttypmod for varchar(20) is 24, for numeric(10,2) 655366.
        assert_eq!(PgType::Varchar(Some(20)).typmod(), 24);
        assert_eq!(
            PgType::Numeric {
                precision: 10,
                scale: 2
            }
            .typmod(),
            655366
        );
        assert_eq!(PgType::unconstrained_numeric().typmod(), -1);
        assert_eq!(PgType::unconstrained_numeric().format_type(), "numeric");
        assert_eq!(
            PgType::Varchar(Some(20)).format_type(),
            "character varying(20)"
        );
    }
}
