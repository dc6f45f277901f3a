//! The error every layer returns to a client: PostgreSQL's severity, SQLSTATE and message.
//!
//! Errors carry the SQLSTATE of the PostgreSQL error class they belong to, so that a client
//! sees the same code PostgreSQL 18 would send; `position` is the 1-based character offset
//! into the statement text that psql turns into its `LINE 1:` caret.

use std::fmt;

/// SQLSTATE codes iolab sends (PostgreSQL's `errcodes.txt` names, lower-cased).
pub mod sqlstate {
    pub const SUCCESSFUL_COMPLETION: &str = "00000";
    pub const WARNING: &str = "01000";
    pub const CONNECTION_EXCEPTION: &str = "08000";
    pub const PROTOCOL_VIOLATION: &str = "08P01";
    pub const FEATURE_NOT_SUPPORTED: &str = "0A000";
    pub const CARDINALITY_VIOLATION: &str = "21000";
    pub const DATA_EXCEPTION: &str = "22000";
    pub const STRING_DATA_RIGHT_TRUNCATION: &str = "22001";
    pub const NUMERIC_VALUE_OUT_OF_RANGE: &str = "22003";
    pub const NULL_VALUE_NOT_ALLOWED: &str = "22004";
    pub const INVALID_DATETIME_FORMAT: &str = "22007";
    pub const DATETIME_FIELD_OVERFLOW: &str = "22008";
    pub const INTERVAL_FIELD_OVERFLOW: &str = "22015";
    pub const DIVISION_BY_ZERO: &str = "22012";
    pub const INVALID_PARAMETER_VALUE: &str = "22023";
    pub const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";
    pub const SEQUENCE_GENERATOR_LIMIT_EXCEEDED: &str = "2200H";
    pub const GENERATED_ALWAYS: &str = "428C9";
    pub const DEPENDENT_OBJECTS_STILL_EXIST: &str = "2BP01";
    pub const INVALID_TEXT_REPRESENTATION: &str = "22P02";
    pub const BAD_COPY_FILE_FORMAT: &str = "22P04";
    pub const NOT_NULL_VIOLATION: &str = "23502";
    pub const UNIQUE_VIOLATION: &str = "23505";
    pub const INVALID_CURSOR_STATE: &str = "24000";
    pub const ACTIVE_SQL_TRANSACTION: &str = "25001";
    pub const NO_ACTIVE_SQL_TRANSACTION: &str = "25P01";
    pub const READ_ONLY_SQL_TRANSACTION: &str = "25006";
    pub const IN_FAILED_SQL_TRANSACTION: &str = "25P02";
    pub const INVALID_SQL_STATEMENT_NAME: &str = "26000";
    pub const INVALID_PASSWORD: &str = "28P01";
    pub const INVALID_AUTHORIZATION_SPECIFICATION: &str = "28000";
    pub const INVALID_SAVEPOINT_SPECIFICATION: &str = "3B001";
    pub const INVALID_CATALOG_NAME: &str = "3D000";
    pub const INVALID_SCHEMA_NAME: &str = "3F000";
    pub const TOO_MANY_COLUMNS: &str = "54011";
    pub const NAME_TOO_LONG: &str = "42622";
    pub const INVALID_COLUMN_REFERENCE: &str = "42P10";
    pub const INVALID_CURSOR_NAME: &str = "34000";
    pub const SYNTAX_ERROR: &str = "42601";
    pub const INSUFFICIENT_PRIVILEGE: &str = "42501";
    pub const UNDEFINED_COLUMN: &str = "42703";
    pub const UNDEFINED_FUNCTION: &str = "42883";
    pub const UNDEFINED_TABLE: &str = "42P01";
    pub const UNDEFINED_OBJECT: &str = "42704";
    pub const DUPLICATE_TABLE: &str = "42P07";
    pub const DUPLICATE_PSTATEMENT: &str = "42P05";
    pub const DUPLICATE_OBJECT: &str = "42710";
    pub const DUPLICATE_COLUMN: &str = "42701";
    pub const AMBIGUOUS_COLUMN: &str = "42702";
    pub const DATATYPE_MISMATCH: &str = "42804";
    pub const WRONG_OBJECT_TYPE: &str = "42809";
    pub const INVALID_COLUMN_DEFINITION: &str = "42611";
    pub const INVALID_TABLE_DEFINITION: &str = "42P16";
    pub const INVALID_RECURSION: &str = "42P17";
    pub const GROUPING_ERROR: &str = "42803";
    pub const CANT_CHANGE_RUNTIME_PARAM: &str = "55P02";
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: &str = "55000";
    pub const QUERY_CANCELED: &str = "57014";
    pub const T_R_SERIALIZATION_FAILURE: &str = "40001";
    pub const T_R_DEADLOCK_DETECTED: &str = "40P01";
    pub const LOCK_NOT_AVAILABLE: &str = "55P03";
    pub const ADMIN_SHUTDOWN: &str = "57P01";
    pub const TOO_MANY_CONNECTIONS: &str = "53300";
    pub const OUT_OF_MEMORY: &str = "53200";
    pub const PROGRAM_LIMIT_EXCEEDED: &str = "54000";
    pub const CONFIGURATION_LIMIT_EXCEEDED: &str = "53400";
    pub const IO_ERROR: &str = "58030";
    pub const DUPLICATE_FILE: &str = "58P02";
    pub const INTERNAL_ERROR: &str = "XX000";
    pub const DATA_CORRUPTED: &str = "XX001";
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Fatal,
}

impl Severity {
    pub fn as_str(&self) -> &'static str {
        match self {
            Severity::Error => "ERROR",
            Severity::Fatal => "FATAL",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgError {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// 1-based character position in the statement text.
    pub position: Option<usize>,
    /// Where the error happened (`CONTEXT:` in psql), e.g. `COPY t, line 3`.
    pub context: Option<String>,
}

impl PgError {
    pub fn new(code: &'static str, message: impl Into<String>) -> PgError {
        PgError {
            severity: Severity::Error,
            code,
            message: message.into(),
            detail: None,
            hint: None,
            position: None,
            context: None,
        }
    }

    pub fn fatal(code: &'static str, message: impl Into<String>) -> PgError {
        PgError {
            severity: Severity::Fatal,
            ..PgError::new(code, message)
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> PgError {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> PgError {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_context(mut self, context: impl Into<String>) -> PgError {
        self.context = Some(context.into());
        self
    }

    pub fn with_position(mut self, position: usize) -> PgError {
        self.position = Some(position);
        self
    }

    pub fn internal(message: impl Into<String>) -> PgError {
        PgError::new(sqlstate::INTERNAL_ERROR, message)
    }

    pub fn io(context: &str, err: &std::io::Error) -> PgError {
        PgError::new(sqlstate::IO_ERROR, format!("{context}: {err}"))
    }

    pub fn syntax(message: impl Into<String>) -> PgError {
        PgError::new(sqlstate::SYNTAX_ERROR, message)
    }

    pub fn unsupported(message: impl Into<String>) -> PgError {
        PgError::new(sqlstate::FEATURE_NOT_SUPPORTED, message)
    }

    pub fn undefined_table(name: &str) -> PgError {
        PgError::new(
            sqlstate::UNDEFINED_TABLE,
            format!("relation \"{name}\" does not exist"),
        )
    }

    pub fn canceled() -> PgError {
        PgError::new(
            sqlstate::QUERY_CANCELED,
            "canceling statement due to user request",
        )
    }
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} ({})",
            self.severity.as_str(),
            self.message,
            self.code
        )
    }
}

impl std::error::Error for PgError {}

pub type PgResult<T> = Result<T, PgError>;
