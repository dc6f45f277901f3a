//! The error every settings operation returns, worded as PostgreSQL 18 words it.

use std::fmt;

/// The SQLSTATEs this crate raises, named as in PostgreSQL's `errcodes.txt`.
pub mod sqlstate {
    pub const UNDEFINED_OBJECT: &str = "42704";
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    pub const CANT_CHANGE_RUNTIME_PARAM: &str = "55P02";
    pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const SYNTAX_ERROR: &str = "42601";
    pub const INVALID_NAME: &str = "42602";
    pub const CONFIG_FILE_ERROR: &str = "F0000";
}

/// A refused setting operation: PostgreSQL's error fields. `context` (PostgreSQL's CONTEXT
/// line) says where a bad value came from when it was not typed by the client, e.g.
/// `line 3 of configuration file "iolab.conf"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingError {
    pub sqlstate: &'static str,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    pub context: Option<String>,
}

impl SettingError {
    pub fn new(sqlstate: &'static str, message: impl Into<String>) -> Self {
        SettingError {
            sqlstate,
            message: message.into(),
            detail: None,
            hint: None,
            context: None,
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_context(mut self, context: impl Into<String>) -> Self {
        self.context = Some(context.into());
        self
    }

    pub(crate) fn unrecognized(name: &str) -> Self {
        Self::new(
            sqlstate::UNDEFINED_OBJECT,
            format!("unrecognized configuration parameter \"{name}\""),
        )
    }

    pub(crate) fn invalid_value(name: &str, value: &str) -> Self {
        Self::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("invalid value for parameter \"{name}\": \"{value}\""),
        )
    }

    pub(crate) fn requires_boolean(name: &str) -> Self {
        Self::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("parameter \"{name}\" requires a Boolean value"),
        )
    }

    pub(crate) fn out_of_range(value: &str, name: &str, min: &str, max: &str) -> Self {
        Self::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("{value} is outside the valid range for parameter \"{name}\" ({min} .. {max})"),
        )
    }

    pub(crate) fn cannot_change(name: &str) -> Self {
        Self::new(
            sqlstate::CANT_CHANGE_RUNTIME_PARAM,
            format!("parameter \"{name}\" cannot be changed"),
        )
    }

    pub(crate) fn needs_restart(name: &str) -> Self {
        Self::new(
            sqlstate::CANT_CHANGE_RUNTIME_PARAM,
            format!("parameter \"{name}\" cannot be changed without restarting the server"),
        )
    }

    pub(crate) fn cannot_change_now(name: &str) -> Self {
        Self::new(
            sqlstate::CANT_CHANGE_RUNTIME_PARAM,
            format!("parameter \"{name}\" cannot be changed now"),
        )
    }

    pub(crate) fn only_at_connection_start(name: &str) -> Self {
        Self::new(
            sqlstate::CANT_CHANGE_RUNTIME_PARAM,
            format!("parameter \"{name}\" cannot be set after connection start"),
        )
    }

    pub(crate) fn permission_denied_to_set(name: &str) -> Self {
        Self::new(
            sqlstate::INSUFFICIENT_PRIVILEGE,
            format!("permission denied to set parameter \"{name}\""),
        )
    }

    pub(crate) fn permission_denied_to_examine(name: &str) -> Self {
        Self::new(sqlstate::INSUFFICIENT_PRIVILEGE, format!("permission denied to examine \"{name}\"")).with_detail(
            "Only roles with privileges of the \"pg_read_all_settings\" role may examine this parameter.",
        )
    }

    pub(crate) fn cannot_reset(name: &str) -> Self {
        Self::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("parameter \"{name}\" cannot be reset"),
        )
    }

    pub(crate) fn invalid_custom_name(name: &str) -> Self {
        Self::new(
            sqlstate::INVALID_NAME,
            format!("invalid configuration parameter name \"{name}\""),
        )
        .with_detail(
            "Custom parameter names must be two or more simple identifiers separated by dots.",
        )
    }
}

impl fmt::Display for SettingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(detail) = &self.detail {
            write!(f, "\nDETAIL:  {detail}")?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\nHINT:  {hint}")?;
        }
        if let Some(context) = &self.context {
            write!(f, "\nCONTEXT:  {context}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SettingError {}
