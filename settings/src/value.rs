//! A setting's value in memory, and the two ways in and out of text: [`parse_value`] (what
//! SET, the config file and the command line go through) and [`show_value`] /
//! [`setting_column`] (what SHOW and `pg_settings.setting` print).

use std::sync::Arc;

use crate::checks::{self, CheckFailure, DateStyle};
use crate::error::{sqlstate, SettingError};
use crate::table::{SettingDef, SettingKind, StringCheck};
use crate::units::{self, NumberError, Unit};

/// A parsed, validated value. Integers and reals are in the setting's base unit; enums hold
/// the name SHOW prints; strings hold their canonical text.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Bool(bool),
    Int(i32),
    Real(f64),
    Text(Arc<str>),
    Enum(&'static str),
}

impl Value {
    pub(crate) fn as_bool(&self) -> bool {
        debug_assert!(matches!(self, Value::Bool(_)), "not a bool: {self:?}");
        matches!(self, Value::Bool(true))
    }

    pub(crate) fn as_int(&self) -> i32 {
        match self {
            Value::Int(value) => *value,
            other => unreachable!("not an integer: {other:?}"),
        }
    }

    pub(crate) fn as_real(&self) -> f64 {
        match self {
            Value::Real(value) => *value,
            other => unreachable!("not a real: {other:?}"),
        }
    }

    /// The text of a string or enum value.
    pub(crate) fn as_text(&self) -> &str {
        match self {
            Value::Text(text) => text,
            Value::Enum(name) => name,
            other => unreachable!("not text: {other:?}"),
        }
    }
}

/// PostgreSQL's boolean spellings: `on`/`off`, `true`/`false`, `yes`/`no`, `1`/`0`, any case,
/// and any unique prefix (`t`, `fa`, `y`, `of`, but not `o`). No surrounding white space.
pub(crate) fn parse_bool(text: &str) -> Option<bool> {
    let lower = text.to_ascii_lowercase();
    let prefix_of =
        |word: &str, shortest: usize| lower.len() >= shortest && word.starts_with(lower.as_str());
    match lower.as_bytes().first()? {
        b't' if prefix_of("true", 1) => Some(true),
        b'f' if prefix_of("false", 1) => Some(false),
        b'y' if prefix_of("yes", 1) => Some(true),
        b'n' if prefix_of("no", 1) => Some(false),
        b'o' if prefix_of("on", 2) => Some(true),
        b'o' if prefix_of("off", 2) => Some(false),
        b'1' if lower.len() == 1 => Some(true),
        b'0' if lower.len() == 1 => Some(false),
        _ => None,
    }
}

/// Reads `input` for `def`, checks it, and returns the value to store. `current` is the value
/// the setting has now (`DateStyle` keeps the half an input does not name).
pub(crate) fn parse_value(
    def: &SettingDef,
    input: &str,
    current: Option<&Value>,
) -> Result<Value, SettingError> {
    let name = def.name;
    match def.kind {
        SettingKind::Bool => parse_bool(input)
            .map(Value::Bool)
            .ok_or_else(|| SettingError::requires_boolean(name)),
        SettingKind::Int { min, max, unit } => {
            let value = units::parse_integer(input, unit)
                .map_err(|e| number_error(name, input, unit, e))?;
            if value < min || value > max {
                let unit_name = unit.spaced_name();
                return Err(SettingError::out_of_range(
                    &format!("{value}{unit_name}"),
                    name,
                    &format!("{min}{unit_name}"),
                    &format!("{max}{unit_name}"),
                ));
            }
            Ok(Value::Int(value))
        }
        SettingKind::Real { min, max, unit } => {
            let value =
                units::parse_real(input, unit).map_err(|e| number_error(name, input, unit, e))?;
            if value < min || value > max {
                let unit_name = unit.spaced_name();
                return Err(SettingError::out_of_range(
                    &format!("{}{unit_name}", units::format_g(value)),
                    name,
                    &format!("{}{unit_name}", units::format_g(min)),
                    &format!("{}{unit_name}", units::format_g(max)),
                ));
            }
            Ok(Value::Real(value))
        }
        SettingKind::Enum { values, aliases } => values
            .iter()
            .copied()
            .find(|value| value.eq_ignore_ascii_case(input))
            .or_else(|| {
                aliases
                    .iter()
                    .find(|(alias, _)| alias.eq_ignore_ascii_case(input))
                    .map(|(_, shown)| *shown)
            })
            .map(Value::Enum)
            .ok_or_else(|| {
                SettingError::invalid_value(name, input)
                    .with_hint(format!("Available values: {}.", values.join(", ")))
            }),
        SettingKind::String(check) => {
            let checked = match check {
                StringCheck::None | StringCheck::Role | StringCheck::SessionAuthorization => {
                    Ok(input.to_string())
                }
                StringCheck::DateStyle => {
                    let current = current.map_or(DateStyle::DEFAULT, |value| {
                        DateStyle::from_canonical(value.as_text())
                    });
                    checks::check_date_style(input, current).map(DateStyle::canonical)
                }
                StringCheck::TimeZone => checks::check_time_zone(input),
                StringCheck::ClientEncoding => {
                    checks::check_client_encoding(input).map(str::to_string)
                }
                StringCheck::SearchPath => checks::check_search_path(input),
                StringCheck::ApplicationName => Ok(checks::clean_application_name(input)),
                StringCheck::Locale => checks::check_locale(input),
                StringCheck::DebugIoDirect => checks::check_debug_io_direct(input),
            };
            checked
                .map(|text| Value::Text(text.into()))
                .map_err(|failure| check_error(name, input, failure))
        }
    }
}

fn number_error(name: &str, input: &str, unit: Unit, error: NumberError) -> SettingError {
    let refused = SettingError::invalid_value(name, input);
    match error {
        NumberError::Invalid => refused,
        NumberError::BadUnit => match unit.units_hint() {
            Some(hint) => refused.with_hint(hint),
            None => refused,
        },
        NumberError::IntegerOverflow => refused.with_hint(units::INTEGER_RANGE_HINT),
    }
}

fn check_error(name: &str, input: &str, failure: CheckFailure) -> SettingError {
    let mut error = SettingError::invalid_value(name, input);
    if let Some(message) = failure.message {
        error.message = message;
    }
    error.sqlstate = failure
        .sqlstate
        .unwrap_or(sqlstate::INVALID_PARAMETER_VALUE);
    error.detail = failure.detail;
    error.hint = failure.hint;
    error
}

/// The value a setting has before anything sets it.
pub(crate) fn boot_value(def: &SettingDef) -> Value {
    match parse_value(def, def.boot, None) {
        Ok(value) => value,
        // Boot values that no check accepts (none today) are stored as written.
        Err(error) => {
            debug_assert!(false, "boot value of {} is invalid: {error}", def.name);
            Value::Text(def.boot.into())
        }
    }
}

/// What SHOW, `current_setting()` and `SHOW ALL` print: numbers in the largest unit that
/// divides them exactly, booleans as on/off.
pub(crate) fn show_value(def: &SettingDef, value: &Value) -> String {
    match value {
        Value::Bool(on) => on_off(*on).to_string(),
        Value::Int(number) => units::show_integer(*number, def.kind.unit()),
        Value::Real(number) => units::show_real(*number, def.kind.unit()),
        Value::Text(text) => text.to_string(),
        Value::Enum(name) => name.to_string(),
    }
}

/// What `pg_settings.setting`, `boot_val` and `reset_val` print: numbers in the base unit.
pub(crate) fn setting_column(value: &Value) -> String {
    match value {
        Value::Bool(on) => on_off(*on).to_string(),
        Value::Int(number) => number.to_string(),
        Value::Real(number) => units::format_g(*number),
        Value::Text(text) => text.to_string(),
        Value::Enum(name) => name.to_string(),
    }
}

fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_accept_postgres_spellings() {
        for yes in ["on", "ON", "true", "tr", "t", "TRUE", "yes", "y", "1"] {
            assert_eq!(parse_bool(yes), Some(true), "{yes}");
        }
        for no in ["off", "of", "OFF", "false", "f", "fal", "no", "n", "0"] {
            assert_eq!(parse_bool(no), Some(false), "{no}");
        }
        for bad in ["", "o", "maybe", "truex", " on", "on ", "2", "10", "yess"] {
            assert_eq!(parse_bool(bad), None, "{bad}");
        }
    }
}
