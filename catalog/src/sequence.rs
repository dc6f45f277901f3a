//! Sequences: what CREATE SEQUENCE defines, and the arithmetic of handing out values.
//!
//! A sequence is a definition (type, increment, bounds, start, cycle: [`SequenceDef`], kept
//! in the catalog) and a position ([`Position`]: the last value handed out, and whether it
//! was handed out at all — `is_called`; kept by `sequence_values`). `nextval` moves the
//! position one increment: from `(last, called)` the next value is `last + increment`, or
//! `last` itself when it was not called yet (a new sequence, a `setval(s, v, false)`, a
//! RESTART). Past a bound the sequence either stops (2200H "reached maximum value") or,
//! with CYCLE, starts again at the other bound. Arithmetic is checked: a step that would
//! overflow `i64` is past the bound, never a wrap-around.
//!
//! [`SequenceOptions::define`] applies PostgreSQL 18's defaults and checks, with its
//! messages: an ascending sequence runs from 1 to the type's maximum, a descending one
//! from the type's minimum to -1, and starts at the bound it moves away from.

use serde::{Deserialize, Serialize};

use crate::error::{sqlstate, PgError, PgResult};
use crate::types::PgType;

/// A column that owns a sequence: the sequence is dropped with the table (`OWNED BY t.c`,
/// `serial`), and for an identity column it is the column's generator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwnedBy {
    pub table_oid: u32,
    pub column: String,
    /// The sequence of an identity column (`pg_depend.deptype` 'i' rather than 'a').
    #[serde(default)]
    pub identity: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SequenceDef {
    pub oid: u32,
    pub schema: String,
    pub name: String,
    /// smallint, integer or bigint (`pg_sequence.seqtypid`).
    pub ty: PgType,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub start: i64,
    /// CACHE: recorded and shown; iolab hands out values one at a time (as CACHE 1).
    pub cache: i64,
    pub cycle: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<OwnedBy>,
}

/// Where a sequence stands (PostgreSQL's `last_value` and `is_called`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Position {
    pub last_value: i64,
    pub is_called: bool,
}

impl SequenceDef {
    /// A new sequence's position: its start, not yet handed out.
    pub fn initial_position(&self) -> Position {
        Position {
            last_value: self.start,
            is_called: false,
        }
    }

    /// The value `nextval` hands out at `pos` (and so the next position's `last_value`),
    /// or the limit error.
    pub fn next_value(&self, pos: Position) -> PgResult<i64> {
        if !pos.is_called {
            return Ok(pos.last_value);
        }
        let stepped = pos.last_value.checked_add(self.increment);
        if self.increment > 0 {
            match stepped {
                Some(v) if v <= self.max => Ok(v),
                _ if self.cycle => Ok(self.min),
                _ => Err(self.limit_error("maximum", self.max)),
            }
        } else {
            match stepped {
                Some(v) if v >= self.min => Ok(v),
                _ if self.cycle => Ok(self.max),
                _ => Err(self.limit_error("minimum", self.min)),
            }
        }
    }

    /// Moves `pos` up to `steps` values on, stopping at a bound without CYCLE: the new
    /// position and the number of steps taken.
    pub fn advance(&self, mut pos: Position, steps: u64) -> (Position, u64) {
        for taken in 0..steps {
            match self.next_value(pos) {
                Ok(v) => {
                    pos = Position {
                        last_value: v,
                        is_called: true,
                    }
                }
                Err(_) => return (pos, taken),
            }
        }
        (pos, steps)
    }

    fn limit_error(&self, which: &str, bound: i64) -> PgError {
        PgError::new(
            sqlstate::SEQUENCE_GENERATOR_LIMIT_EXCEEDED,
            format!(
                "nextval: reached {which} value of sequence \"{}\" ({bound})",
                self.name
            ),
        )
    }

    /// `setval(s, value, is_called)`'s check: the value within the bounds.
    pub fn check_setval(&self, value: i64) -> PgResult<()> {
        if value < self.min || value > self.max {
            return Err(PgError::new(
                sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                format!(
                    "setval: value {value} is out of bounds for sequence \"{}\" ({}..{})",
                    self.name, self.min, self.max
                ),
            ));
        }
        Ok(())
    }
}

/// The options of CREATE / ALTER SEQUENCE (or of an identity column) as written; `None`
/// is "not given". `Some(None)` for min / max is `NO MINVALUE` / `NO MAXVALUE`, and for
/// restart a RESTART without a value.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SequenceOptions {
    pub ty: Option<PgType>,
    pub increment: Option<i64>,
    pub min: Option<Option<i64>>,
    pub max: Option<Option<i64>>,
    pub start: Option<i64>,
    pub restart: Option<Option<i64>>,
    pub cache: Option<i64>,
    pub cycle: Option<bool>,
}

/// The bounds of a sequence type.
pub fn type_range(ty: PgType) -> (i64, i64) {
    match ty {
        PgType::Int2 => (i16::MIN as i64, i16::MAX as i64),
        PgType::Int4 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

fn invalid(message: String) -> PgError {
    PgError::new(sqlstate::INVALID_PARAMETER_VALUE, message)
}

impl SequenceOptions {
    /// The definition these options give a new sequence (`oid`, names and owner are left
    /// for the caller), or the error PostgreSQL 18 reports.
    pub fn define(&self) -> PgResult<SequenceDef> {
        self.apply(None).map(|(def, _)| def)
    }

    /// The definition after ALTER SEQUENCE with these options (`old` = None: CREATE), and
    /// the position a RESTART asks for.
    pub fn apply(&self, old: Option<&SequenceDef>) -> PgResult<(SequenceDef, Option<Position>)> {
        let ty = self.ty.or(old.map(|o| o.ty)).unwrap_or(PgType::Int8);
        if !matches!(ty, PgType::Int2 | PgType::Int4 | PgType::Int8) {
            return Err(invalid(
                "sequence type must be smallint, integer, or bigint".into(),
            ));
        }
        let increment = self.increment.or(old.map(|o| o.increment)).unwrap_or(1);
        if increment == 0 {
            return Err(invalid("INCREMENT must not be zero".into()));
        }
        let (type_min, type_max) = type_range(ty);
        // A bound left at the old type's default follows a change of type (as PostgreSQL).
        let old_default = |o: &SequenceDef, max: bool| {
            let (lo, hi) = type_range(o.ty);
            if max {
                o.max == hi || (o.increment < 0 && o.max == -1)
            } else {
                o.min == lo || (o.increment > 0 && o.min == 1)
            }
        };
        let max = match (self.max, old) {
            (Some(Some(v)), _) => v,
            (None, Some(o)) if !(self.ty.is_some() && old_default(o, true)) => o.max,
            _ if increment > 0 => type_max,
            _ => -1,
        };
        let min = match (self.min, old) {
            (Some(Some(v)), _) => v,
            (None, Some(o)) if !(self.ty.is_some() && old_default(o, false)) => o.min,
            _ if increment > 0 => 1,
            _ => type_min,
        };
        let type_name = ty.format_type();
        if max < type_min || max > type_max {
            return Err(invalid(format!(
                "MAXVALUE ({max}) is out of range for sequence data type {type_name}"
            )));
        }
        if min < type_min || min > type_max {
            return Err(invalid(format!(
                "MINVALUE ({min}) is out of range for sequence data type {type_name}"
            )));
        }
        if min >= max {
            return Err(invalid(format!(
                "MINVALUE ({min}) must be less than MAXVALUE ({max})"
            )));
        }
        let start = match (self.start, old) {
            (Some(v), _) => v,
            (None, Some(o)) => o.start,
            _ if increment > 0 => min,
            _ => max,
        };
        if start < min {
            return Err(invalid(format!(
                "START value ({start}) cannot be less than MINVALUE ({min})"
            )));
        }
        if start > max {
            return Err(invalid(format!(
                "START value ({start}) cannot be greater than MAXVALUE ({max})"
            )));
        }
        let restart = self.restart.map(|r| r.unwrap_or(start));
        if let Some(r) = restart {
            if r < min {
                return Err(invalid(format!(
                    "RESTART value ({r}) cannot be less than MINVALUE ({min})"
                )));
            }
            if r > max {
                return Err(invalid(format!(
                    "RESTART value ({r}) cannot be greater than MAXVALUE ({max})"
                )));
            }
        }
        let cache = self.cache.or(old.map(|o| o.cache)).unwrap_or(1);
        if cache <= 0 {
            return Err(invalid(format!(
                "CACHE ({cache}) must be greater than zero"
            )));
        }
        let def = SequenceDef {
            oid: old.map(|o| o.oid).unwrap_or(0),
            schema: old.map(|o| o.schema.clone()).unwrap_or_default(),
            name: old.map(|o| o.name.clone()).unwrap_or_default(),
            ty,
            increment,
            min,
            max,
            start,
            cache,
            cycle: self.cycle.or(old.map(|o| o.cycle)).unwrap_or(false),
            owned_by: old.and_then(|o| o.owned_by.clone()),
        };
        let restart = restart.map(|last_value| Position {
            last_value,
            is_called: false,
        });
        Ok((def, restart))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seq(options: SequenceOptions) -> SequenceDef {
        SequenceDef {
            name: "s".into(),
            ..options.define().unwrap()
        }
    }

    /// The first `n` values from a new sequence (stopping at the first error).
    fn values(def: &SequenceDef, n: usize) -> (Vec<i64>, Option<PgError>) {
        let mut pos = def.initial_position();
        let mut out = Vec::new();
        for _ in 0..n {
            match def.next_value(pos) {
                Ok(v) => {
                    out.push(v);
                    pos = Position {
                        last_value: v,
                        is_called: true,
                    };
                }
                Err(e) => return (out, Some(e)),
            }
        }
        (out, None)
    }

    #[test]
    fn defaults_follow_the_direction_and_type() {
        let up = seq(SequenceOptions::default());
        assert_eq!(
            (up.min, up.max, up.start, up.ty),
            (1, i64::MAX, 1, PgType::Int8)
        );
        let down = seq(SequenceOptions {
            increment: Some(-1),
            ..Default::default()
        });
        assert_eq!((down.min, down.max, down.start), (i64::MIN, -1, -1));
        let small = seq(SequenceOptions {
            ty: Some(PgType::Int2),
            ..Default::default()
        });
        assert_eq!(small.max, 32767);
    }

    #[test]
    fn values_step_by_the_increment() {
        let (v, e) = values(&seq(SequenceOptions::default()), 3);
        assert_eq!((v, e), (vec![1, 2, 3], None));
        let by5 = seq(SequenceOptions {
            increment: Some(5),
            start: Some(100),
            ..Default::default()
        });
        assert_eq!(values(&by5, 3).0, vec![100, 105, 110]);
        let down = seq(SequenceOptions {
            increment: Some(-2),
            ..Default::default()
        });
        assert_eq!(values(&down, 3).0, vec![-1, -3, -5]);
    }

    #[test]
    fn the_bounds_stop_or_cycle() {
        let three = seq(SequenceOptions {
            ty: Some(PgType::Int4),
            max: Some(Some(3)),
            ..Default::default()
        });
        let (v, e) = values(&three, 5);
        assert_eq!(v, vec![1, 2, 3]);
        let e = e.unwrap();
        assert_eq!(e.code, "2200H");
        assert_eq!(
            e.message,
            "nextval: reached maximum value of sequence \"s\" (3)"
        );
        let cycling = seq(SequenceOptions {
            max: Some(Some(3)),
            cycle: Some(true),
            ..Default::default()
        });
        assert_eq!(values(&cycling, 7).0, vec![1, 2, 3, 1, 2, 3, 1]);
        let down = seq(SequenceOptions {
            increment: Some(-1),
            min: Some(Some(-2)),
            ..Default::default()
        });
        let (v, e) = values(&down, 5);
        assert_eq!(v, vec![-1, -2]);
        assert_eq!(
            e.unwrap().message,
            "nextval: reached minimum value of sequence \"s\" (-2)"
        );
        let down_cycle = seq(SequenceOptions {
            increment: Some(-1),
            min: Some(Some(-2)),
            cycle: Some(true),
            ..Default::default()
        });
        assert_eq!(values(&down_cycle, 4).0, vec![-1, -2, -1, -2]);
    }

    #[test]
    fn bigint_limits_do_not_overflow() {
        let near_max = seq(SequenceOptions {
            increment: Some(i64::MAX),
            start: Some(i64::MAX - 1),
            ..Default::default()
        });
        let (v, e) = values(&near_max, 3);
        assert_eq!(v, vec![i64::MAX - 1]);
        assert_eq!(e.unwrap().code, "2200H");
        let near_min = seq(SequenceOptions {
            increment: Some(-3),
            start: Some(i64::MIN + 2),
            ..Default::default()
        });
        let (v, e) = values(&near_min, 3);
        assert_eq!(v, vec![i64::MIN + 2]);
        assert!(e.unwrap().message.contains("minimum value"));
        let cycles_at_max = seq(SequenceOptions {
            increment: Some(i64::MAX),
            min: Some(Some(0)),
            start: Some(i64::MAX),
            cycle: Some(true),
            ..Default::default()
        });
        assert_eq!(values(&cycles_at_max, 3).0, vec![i64::MAX, 0, i64::MAX]);
    }

    #[test]
    fn advance_stops_at_a_bound() {
        let ten = seq(SequenceOptions {
            max: Some(Some(10)),
            ..Default::default()
        });
        let (pos, taken) = ten.advance(ten.initial_position(), 32);
        assert_eq!((pos.last_value, pos.is_called, taken), (10, true, 10));
        let (pos, taken) = ten.advance(pos, 32);
        assert_eq!((pos.last_value, taken), (10, 0));
        let (pos, taken) = ten.advance(
            Position {
                last_value: 3,
                is_called: true,
            },
            4,
        );
        assert_eq!((pos.last_value, taken), (7, 4));
    }

    #[test]
    fn options_are_checked_as_postgres_checks_them() {
        // Messages as PostgreSQL 18 reports them (all 22023).
        let cases: Vec<(SequenceOptions, &str)> = vec![
            (
                SequenceOptions {
                    increment: Some(0),
                    ..Default::default()
                },
                "INCREMENT must not be zero",
            ),
            (
                SequenceOptions {
                    min: Some(Some(10)),
                    max: Some(Some(5)),
                    ..Default::default()
                },
                "MINVALUE (10) must be less than MAXVALUE (5)",
            ),
            (
                SequenceOptions {
                    start: Some(0),
                    ..Default::default()
                },
                "START value (0) cannot be less than MINVALUE (1)",
            ),
            (
                SequenceOptions {
                    start: Some(100),
                    max: Some(Some(10)),
                    ..Default::default()
                },
                "START value (100) cannot be greater than MAXVALUE (10)",
            ),
            (
                SequenceOptions {
                    ty: Some(PgType::Text),
                    ..Default::default()
                },
                "sequence type must be smallint, integer, or bigint",
            ),
            (
                SequenceOptions {
                    cache: Some(0),
                    ..Default::default()
                },
                "CACHE (0) must be greater than zero",
            ),
            (
                SequenceOptions {
                    ty: Some(PgType::Int2),
                    max: Some(Some(100000)),
                    ..Default::default()
                },
                "MAXVALUE (100000) is out of range for sequence data type smallint",
            ),
        ];
        for (options, message) in cases {
            let e = options.define().unwrap_err();
            assert_eq!((e.code, e.message.as_str()), ("22023", message));
        }
    }

    #[test]
    fn alter_keeps_what_it_does_not_change() {
        let s = seq(SequenceOptions {
            increment: Some(-1),
            ..Default::default()
        });
        let (restarted, pos) = SequenceOptions {
            restart: Some(None),
            ..Default::default()
        }
        .apply(Some(&s))
        .unwrap();
        assert_eq!(restarted, s);
        assert_eq!(pos.unwrap().last_value, -1);
        let e = SequenceOptions {
            restart: Some(Some(50)),
            ..Default::default()
        }
        .apply(Some(&s))
        .unwrap_err();
        assert_eq!(
            e.message,
            "RESTART value (50) cannot be greater than MAXVALUE (-1)"
        );
        // To integer: the default maximum follows the type.
        let up = seq(SequenceOptions::default());
        let (int, _) = SequenceOptions {
            ty: Some(PgType::Int4),
            ..Default::default()
        }
        .apply(Some(&up))
        .unwrap();
        assert_eq!((int.min, int.max), (1, i32::MAX as i64));
    }

    #[test]
    fn setval_checks_the_bounds() {
        let s = seq(SequenceOptions {
            max: Some(Some(3)),
            ..Default::default()
        });
        assert!(s.check_setval(3).is_ok());
        let e = s.check_setval(100).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                "22003",
                "setval: value 100 is out of bounds for sequence \"s\" (1..3)"
            )
        );
    }
}
