//! COPY's text and CSV formats: options, a streaming row parser, and row encoders.
//!
//! # Reading (`COPY … FROM STDIN`)
//!
//! CopyData messages cut the stream anywhere: inside a row, inside a CSV quoted field, inside a
//! multi-byte UTF-8 character. [`CopyParser`] takes the chunks as they come ([`CopyParser::feed`])
//! and hands out complete rows ([`CopyParser::next_row`]); [`CopyParser::finish_input`] says
//! that CopyDone arrived. It works in two steps per row:
//!
//! 1. *Find the line.* Scan from where the last scan stopped for the end of the row: a newline
//!    not escaped by a backslash (text) or not inside quotes (CSV). The scan position and the
//!    quote state survive between chunks, so a long row is scanned once however it is cut.
//!    The first line's terminator (`\n`, `\r\n` or `\r`) fixes the newline style; a different
//!    one later is PostgreSQL's "literal newline found in data" error.
//! 2. *Split the line* into fields, de-escaping into one reusable buffer, and check the field
//!    count against the table's columns.
//!
//! ```text
//!   buf:  [ consumed rows | current line ........ | partial next line ]
//!          0              start                    scan ──▶           len
//! ```
//!
//! Bytes before `start` are dropped when the buffer is compacted in `feed`; the buffer holds at
//! most one unfinished row beyond what the caller has fed and not yet read.
//!
//! In the text format a line `\.` ends the data (PostgreSQL 18 rejects `\.` anywhere else); in
//! CSV it is data, as in PostgreSQL 18.
//!
//! Errors carry PostgreSQL's SQLSTATE and message; [`CopyParser::line_number`] and
//! [`CopyParser::error_context`] give the `CONTEXT: COPY t, line 3: "…"` line to add.
//!
//! # Writing (`COPY … TO STDOUT`)
//!
//! [`write_text_row`] / [`write_csv_row`] escape and quote string fields; [`CopyEncoder`]
//! writes rows of Arrow columns directly, using [`super::write_text`] for each value.

use super::output_text::write_text;
use super::TextFormat;
use datafusion::arrow::array::{ArrayRef, RecordBatch};
use iolab_catalog::{sqlstate, PgError};

// ---------------------------------------------------------------------------------------------
// options

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv,
    Binary,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyHeader {
    /// no header line
    None,
    /// a header line: skipped on input, column names on output
    Present,
    /// COPY FROM only: the header line must name the columns, in order
    Match,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyDirection {
    From,
    To,
}

/// A column list option: `FORCE_QUOTE *` or `FORCE_QUOTE (a, b)`.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum ColumnSet {
    #[default]
    None,
    All,
    Columns(Vec<String>),
}

impl ColumnSet {
    /// Whether the set names `column`.
    pub fn contains(&self, column: &str) -> bool {
        match self {
            ColumnSet::None => false,
            ColumnSet::All => true,
            ColumnSet::Columns(names) => names.iter().any(|n| n == column),
        }
    }

    /// `*`, or column names separated by commas (double quotes are removed).
    fn parse(value: &str) -> ColumnSet {
        let v = value.trim();
        let v = v.strip_prefix('(').and_then(|v| v.strip_suffix(')')).unwrap_or(v);
        if v.trim() == "*" {
            return ColumnSet::All;
        }
        ColumnSet::Columns(
            v.split(',')
                .map(|name| {
                    let name = name.trim();
                    match name.strip_prefix('"').and_then(|n| n.strip_suffix('"')) {
                        Some(quoted) => quoted.replace("\"\"", "\""),
                        None => name.to_lowercase(),
                    }
                })
                .filter(|n| !n.is_empty())
                .collect(),
        )
    }
}

/// The options of one COPY statement, checked as PostgreSQL 18's `ProcessCopyOptions` checks
/// them. `delimiter`, `quote` and `escape` are single bytes (ASCII, as UTF-8 requires).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyOptions {
    pub format: CopyFormat,
    pub delimiter: u8,
    /// The NULL string: `\N` (text), empty (CSV).
    pub null: String,
    /// `DEFAULT 'x'`: input fields equal to it take the column default.
    pub default: Option<String>,
    pub header: CopyHeader,
    pub quote: u8,
    pub escape: u8,
    pub force_quote: ColumnSet,
    pub force_not_null: ColumnSet,
    pub force_null: ColumnSet,
    pub freeze: bool,
    pub encoding: Option<String>,
    /// `ON_ERROR ignore`: skip rows whose values fail to convert (the caller's job).
    pub on_error_ignore: bool,
    pub reject_limit: Option<i64>,
    pub log_verbosity: Option<String>,
}

impl Default for CopyOptions {
    fn default() -> CopyOptions {
        CopyOptions::defaults_for(CopyFormat::Text)
    }
}

fn redundant() -> PgError {
    PgError::new(sqlstate::SYNTAX_ERROR, "conflicting or redundant options")
}

/// `defGetBoolean`: no value is true; true/false/on/off/1/0 and unambiguous prefixes.
fn option_bool(name: &str, value: Option<&str>) -> Result<bool, PgError> {
    let Some(v) = value else { return Ok(true) };
    match v.to_ascii_lowercase().as_str() {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(PgError::new(sqlstate::SYNTAX_ERROR, format!("{name} requires a Boolean value"))),
    }
}

impl CopyOptions {
    /// The defaults of a format: text `\t` and `\N`, CSV `,`, empty NULL, `"` quote and escape.
    pub fn defaults_for(format: CopyFormat) -> CopyOptions {
        let csv = format == CopyFormat::Csv;
        CopyOptions {
            format,
            delimiter: if csv { b',' } else { b'\t' },
            null: if csv { String::new() } else { "\\N".to_string() },
            default: None,
            header: CopyHeader::None,
            quote: b'"',
            escape: b'"',
            force_quote: ColumnSet::None,
            force_not_null: ColumnSet::None,
            force_null: ColumnSet::None,
            freeze: false,
            encoding: None,
            on_error_ignore: false,
            reject_limit: None,
            log_verbosity: None,
        }
    }

    /// Options of `COPY … FROM` from `WITH (name value, …)` pairs (names lower-case as the
    /// SQL parser gives them; a missing value is `None`). See [`CopyOptions::from_pairs_for`].
    pub fn from_pairs(pairs: &[(String, Option<String>)]) -> Result<CopyOptions, PgError> {
        CopyOptions::from_pairs_for(pairs, CopyDirection::From)
    }

    /// Options from `WITH (…)` pairs for a COPY in `direction`, with PostgreSQL's errors:
    /// 42601 `option "foo" not recognized`, 22023 `COPY format "x" not recognized`,
    /// 0A000 `COPY delimiter must be a single one-byte character`, and the rest of
    /// `ProcessCopyOptions`. Column lists (`force_quote`, …) are `*` or `a, b`.
    pub fn from_pairs_for(
        pairs: &[(String, Option<String>)],
        direction: CopyDirection,
    ) -> Result<CopyOptions, PgError> {
        let mut format = None;
        let mut delimiter: Option<String> = None;
        let mut null: Option<String> = None;
        let mut default: Option<String> = None;
        let mut header = None;
        let mut quote: Option<String> = None;
        let mut escape: Option<String> = None;
        let mut force_quote = None;
        let mut force_not_null = None;
        let mut force_null = None;
        let mut freeze = None;
        let mut encoding = None;
        let mut on_error = None;
        let mut reject_limit = None;
        let mut log_verbosity = None;

        fn set<T>(slot: &mut Option<T>, v: T) -> Result<(), PgError> {
            if slot.is_some() {
                return Err(redundant());
            }
            *slot = Some(v);
            Ok(())
        }
        for (raw_name, value) in pairs {
            let name = raw_name.to_ascii_lowercase();
            let needs = |v: &Option<String>| -> Result<String, PgError> {
                v.clone().ok_or_else(|| {
                    PgError::new(sqlstate::SYNTAX_ERROR, format!("{name} requires a parameter"))
                })
            };
            match name.as_str() {
                "format" => {
                    let v = needs(value)?;
                    let f = match v.to_ascii_lowercase().as_str() {
                        "text" => CopyFormat::Text,
                        "csv" => CopyFormat::Csv,
                        "binary" => CopyFormat::Binary,
                        _ => {
                            if format.is_some() {
                                return Err(redundant());
                            }
                            return Err(PgError::new(
                                sqlstate::INVALID_PARAMETER_VALUE,
                                format!("COPY format \"{v}\" not recognized"),
                            ));
                        }
                    };
                    set(&mut format, f)?
                }
                "delimiter" => set(&mut delimiter, needs(value)?)?,
                "null" => set(&mut null, needs(value)?)?,
                "default" => set(&mut default, needs(value)?)?,
                "header" => {
                    let h = match value.as_deref() {
                        None => CopyHeader::Present,
                        Some(v) if v.eq_ignore_ascii_case("match") => CopyHeader::Match,
                        Some(v) => match option_bool("header", Some(v)) {
                            Ok(true) => CopyHeader::Present,
                            Ok(false) => CopyHeader::None,
                            Err(_) => {
                                return Err(PgError::new(
                                    sqlstate::SYNTAX_ERROR,
                                    "header requires a Boolean value or \"match\"",
                                ))
                            }
                        },
                    };
                    set(&mut header, h)?
                }
                "quote" => set(&mut quote, needs(value)?)?,
                "escape" => set(&mut escape, needs(value)?)?,
                "force_quote" => set(&mut force_quote, ColumnSet::parse(&needs(value)?))?,
                "force_not_null" => set(&mut force_not_null, ColumnSet::parse(&needs(value)?))?,
                "force_null" => set(&mut force_null, ColumnSet::parse(&needs(value)?))?,
                "freeze" => set(&mut freeze, option_bool("freeze", value.as_deref())?)?,
                "encoding" => {
                    let v = needs(value)?;
                    let norm: String =
                        v.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
                    if !matches!(norm.as_str(), "utf8" | "unicode" | "sqlascii") {
                        let known_elsewhere = norm.starts_with("latin")
                            || norm.starts_with("win")
                            || norm.starts_with("iso")
                            || norm.starts_with("euc")
                            || norm.starts_with("koi8");
                        return Err(if known_elsewhere {
                            PgError::unsupported(format!("iolab only reads and writes COPY data in UTF8, not \"{v}\""))
                        } else {
                            PgError::new(
                                sqlstate::INVALID_PARAMETER_VALUE,
                                "argument to option \"encoding\" must be a valid encoding name",
                            )
                        });
                    }
                    set(&mut encoding, v)?
                }
                "on_error" => {
                    let v = needs(value)?;
                    let ignore = match v.to_ascii_lowercase().as_str() {
                        "stop" => false,
                        "ignore" => true,
                        _ => {
                            return Err(PgError::new(
                                sqlstate::INVALID_PARAMETER_VALUE,
                                format!("COPY ON_ERROR \"{v}\" not recognized"),
                            ))
                        }
                    };
                    set(&mut on_error, ignore)?
                }
                "reject_limit" => {
                    let v = needs(value)?;
                    let n: i64 = v.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                        PgError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            format!("REJECT_LIMIT ({v}) must be greater than zero"),
                        )
                    })?;
                    set(&mut reject_limit, n)?
                }
                "log_verbosity" => {
                    let v = needs(value)?;
                    if !matches!(v.to_ascii_lowercase().as_str(), "default" | "verbose" | "silent") {
                        return Err(PgError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            format!("COPY LOG_VERBOSITY \"{v}\" not recognized"),
                        ));
                    }
                    set(&mut log_verbosity, v)?
                }
                _ => {
                    return Err(PgError::new(
                        sqlstate::SYNTAX_ERROR,
                        format!("option \"{raw_name}\" not recognized"),
                    ))
                }
            }
        }

        let format = format.unwrap_or(CopyFormat::Text);
        let binary = format == CopyFormat::Binary;
        let csv = format == CopyFormat::Csv;
        let syntax = |m: &str| PgError::new(sqlstate::SYNTAX_ERROR, m.to_string());
        let invalid = |m: String| PgError::new(sqlstate::INVALID_PARAMETER_VALUE, m);
        let unsupported = |m: &str| PgError::unsupported(m.to_string());
        if binary && delimiter.is_some() {
            return Err(syntax("cannot specify DELIMITER in BINARY mode"));
        }
        if binary && null.is_some() {
            return Err(syntax("cannot specify NULL in BINARY mode"));
        }
        if binary && default.is_some() {
            return Err(syntax("cannot specify DEFAULT in BINARY mode"));
        }
        let mut opts = CopyOptions::defaults_for(format);
        if let Some(d) = &delimiter {
            if d.len() != 1 {
                return Err(unsupported("COPY delimiter must be a single one-byte character"));
            }
            opts.delimiter = d.as_bytes()[0];
        }
        if matches!(opts.delimiter, b'\n' | b'\r') {
            return Err(invalid("COPY delimiter cannot be newline or carriage return".into()));
        }
        if let Some(n) = null {
            opts.null = n;
        }
        if opts.null.contains(['\n', '\r']) {
            return Err(invalid("COPY null representation cannot use newline or carriage return".into()));
        }
        if let Some(d) = &default {
            if d.contains(['\n', '\r']) {
                return Err(invalid("COPY default representation cannot use newline or carriage return".into()));
            }
        }
        if format == CopyFormat::Text
            && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&opts.delimiter)
        {
            return Err(invalid(format!("COPY delimiter cannot be \"{}\"", opts.delimiter as char)));
        }
        let header = header.unwrap_or(CopyHeader::None);
        if binary && header != CopyHeader::None {
            return Err(unsupported("cannot specify HEADER in BINARY mode"));
        }
        if let Some(q) = &quote {
            if !csv {
                return Err(unsupported("COPY QUOTE requires CSV mode"));
            }
            if q.len() != 1 {
                return Err(unsupported("COPY quote must be a single one-byte character"));
            }
            opts.quote = q.as_bytes()[0];
            opts.escape = opts.quote;
        }
        if csv && opts.delimiter == opts.quote {
            return Err(invalid("COPY delimiter and quote must be different".into()));
        }
        if let Some(e) = &escape {
            if !csv {
                return Err(unsupported("COPY ESCAPE requires CSV mode"));
            }
            if e.len() != 1 {
                return Err(unsupported("COPY escape must be a single one-byte character"));
            }
            opts.escape = e.as_bytes()[0];
        }
        for (set, name) in [(&force_quote, "FORCE_QUOTE"), (&force_not_null, "FORCE_NOT_NULL"), (&force_null, "FORCE_NULL")] {
            if set.is_some() {
                if !csv {
                    return Err(unsupported(&format!("COPY {name} requires CSV mode")));
                }
                let wrong_way = if name == "FORCE_QUOTE" {
                    direction == CopyDirection::From
                } else {
                    direction == CopyDirection::To
                };
                if wrong_way {
                    let (dir, code) = if name == "FORCE_QUOTE" {
                        ("FROM", sqlstate::FEATURE_NOT_SUPPORTED)
                    } else {
                        ("TO", sqlstate::INVALID_PARAMETER_VALUE)
                    };
                    return Err(PgError::new(code, format!("COPY {name} cannot be used with COPY {dir}")));
                }
            }
        }
        if opts.null.as_bytes().contains(&opts.delimiter) {
            return Err(invalid("COPY delimiter character must not appear in the NULL specification".into()));
        }
        if csv && opts.null.as_bytes().contains(&opts.quote) {
            return Err(invalid("CSV quote character must not appear in the NULL specification".into()));
        }
        if header == CopyHeader::Match && direction == CopyDirection::To {
            return Err(unsupported("cannot use \"match\" with HEADER in COPY TO"));
        }
        if let Some(d) = &default {
            if direction == CopyDirection::To {
                return Err(unsupported("COPY DEFAULT cannot be used with COPY TO"));
            }
            if d.as_bytes().contains(&opts.delimiter) {
                return Err(invalid("COPY delimiter character must not appear in the DEFAULT specification".into()));
            }
            if csv && d.as_bytes().contains(&opts.quote) {
                return Err(invalid("CSV quote character must not appear in the DEFAULT specification".into()));
            }
            if *d == opts.null {
                return Err(unsupported("NULL specification and DEFAULT specification cannot be the same"));
            }
        }
        let on_error_ignore = on_error.unwrap_or(false);
        if binary && on_error_ignore {
            return Err(syntax("only ON_ERROR STOP is allowed in BINARY mode"));
        }
        if reject_limit.is_some() && !on_error_ignore {
            return Err(invalid("COPY REJECT_LIMIT requires ON_ERROR to be set to IGNORE".into()));
        }
        opts.default = default;
        opts.header = header;
        opts.force_quote = force_quote.unwrap_or_default();
        opts.force_not_null = force_not_null.unwrap_or_default();
        opts.force_null = force_null.unwrap_or_default();
        opts.freeze = freeze.unwrap_or(false);
        opts.encoding = encoding;
        opts.on_error_ignore = on_error_ignore;
        opts.reject_limit = reject_limit;
        opts.log_verbosity = log_verbosity;
        Ok(opts)
    }
}

// ---------------------------------------------------------------------------------------------
// reading

fn bad_copy(message: impl Into<String>) -> PgError {
    PgError::new(sqlstate::BAD_COPY_FILE_FORMAT, message)
}

/// 22021 `invalid byte sequence for encoding "UTF8": 0xe2 0x82 0x2c` for the bytes at the
/// start of `bytes` (as many as the first byte announces).
fn invalid_utf8(bytes: &[u8]) -> PgError {
    let first = bytes.first().copied().unwrap_or(0);
    let len = match first {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    };
    let shown: Vec<String> = bytes.iter().take(len).map(|b| format!("0x{b:02x}")).collect();
    PgError::new(
        "22021",
        format!("invalid byte sequence for encoding \"UTF8\": {}", shown.join(" ")),
    )
}

/// Checks UTF-8 and the absence of NUL bytes, which PostgreSQL text cannot hold.
fn check_utf8(bytes: &[u8]) -> Result<(), PgError> {
    match std::str::from_utf8(bytes) {
        Err(e) => Err(invalid_utf8(&bytes[e.valid_up_to()..])),
        Ok(_) => match bytes.iter().position(|&b| b == 0) {
            Some(p) => Err(invalid_utf8(&bytes[p..])),
            None => Ok(()),
        },
    }
}

/// Longest data text PostgreSQL shows in a COPY CONTEXT line before cutting it with `...`.
const MAX_CONTEXT_BYTES: usize = 100;

/// `s` cut to PostgreSQL's display limit for COPY context lines.
pub fn clip_for_context(s: &str) -> String {
    if s.len() <= MAX_CONTEXT_BYTES {
        return s.to_string();
    }
    let mut cut = MAX_CONTEXT_BYTES;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &s[..cut])
}

/// PostgreSQL's CONTEXT line for an error converting one column's value:
/// `COPY t, line 3, column a: "abc"` or `COPY t, line 3, column a: null input`.
pub fn column_context(table: &str, line: u64, column: &str, value: Option<&str>) -> String {
    match value {
        Some(v) => format!("COPY {table}, line {line}, column {column}: \"{}\"", clip_for_context(v)),
        None => format!("COPY {table}, line {line}, column {column}: null input"),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Newline {
    Lf,
    CrLf,
    Cr,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FieldKind {
    Value,
    Null,
    Default,
}

#[derive(Clone, Copy, Debug)]
struct FieldSpan {
    start: u32,
    end: u32,
    kind: FieldKind,
}

/// One row of COPY input: its fields, borrowed from the parser until the next call.
#[derive(Clone, Copy, Debug)]
pub struct CopyRow<'a> {
    values: &'a str,
    fields: &'a [FieldSpan],
}

impl<'a> CopyRow<'a> {
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Field `i`; `None` for NULL (and for the DEFAULT marker, see [`CopyRow::is_default`]).
    pub fn get(&self, i: usize) -> Option<&'a str> {
        let f = self.fields[i];
        match f.kind {
            FieldKind::Value => Some(&self.values[f.start as usize..f.end as usize]),
            FieldKind::Null | FieldKind::Default => None,
        }
    }

    /// Whether field `i` was the `DEFAULT` option's marker (the column default applies).
    pub fn is_default(&self, i: usize) -> bool {
        self.fields[i].kind == FieldKind::Default
    }

    pub fn iter(&self) -> impl Iterator<Item = Option<&'a str>> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    pub fn to_vec(&self) -> Vec<Option<String>> {
        self.iter().map(|v| v.map(str::to_string)).collect()
    }
}

/// Where the last error's CONTEXT line comes from.
#[derive(Clone, Debug)]
enum ErrorContext {
    Line,
    LineWithText(String),
}

/// Splits a COPY text or CSV stream into rows. See the module comment.
///
/// ```ignore
/// let mut parser = CopyParser::new(&opts, vec!["a".into(), "b".into()]);
/// parser.feed(b"1\tx\n2\t");
/// while let Some(row) = parser.next_row()? { /* row.get(0), row.get(1) */ }
/// parser.feed(b"\\N\n");
/// parser.finish_input();
/// while let Some(row) = parser.next_row()? { /* … */ }
/// ```
pub struct CopyParser {
    csv: bool,
    delimiter: u8,
    quote: u8,
    escape: u8,
    null: Vec<u8>,
    default: Option<Vec<u8>>,
    header: CopyHeader,
    force_not_null: Vec<bool>,
    force_null: Vec<bool>,
    columns: Vec<String>,
    /// Input not yet consumed starts at `start`.
    buf: Vec<u8>,
    start: usize,
    /// The line-end search resumes here (≥ `start`), with this CSV quote state.
    scan: usize,
    in_quote: bool,
    newline: Option<Newline>,
    /// Number of the line most recently taken (1-based; 0 before the first).
    line: u64,
    input_done: bool,
    /// `\.` seen or all input consumed.
    finished: bool,
    header_pending: bool,
    /// The row handed out: field bytes and their spans.
    values: String,
    fields: Vec<FieldSpan>,
    context: Option<ErrorContext>,
}

/// Compaction moves the unconsumed tail to the front when at least this much is consumed.
const COMPACT_AT: usize = 64 * 1024;

impl CopyParser {
    /// A parser for rows of `columns` (their names, for "missing data for column" and HEADER
    /// MATCH). `opts` must be text or CSV.
    pub fn new(opts: &CopyOptions, columns: Vec<String>) -> CopyParser {
        assert!(opts.format != CopyFormat::Binary, "CopyParser reads text and CSV, not binary");
        let flags = |set: &ColumnSet| columns.iter().map(|c| set.contains(c)).collect::<Vec<_>>();
        CopyParser {
            csv: opts.format == CopyFormat::Csv,
            delimiter: opts.delimiter,
            quote: opts.quote,
            escape: opts.escape,
            null: opts.null.as_bytes().to_vec(),
            default: opts.default.as_ref().map(|d| d.as_bytes().to_vec()),
            header: opts.header,
            force_not_null: flags(&opts.force_not_null),
            force_null: flags(&opts.force_null),
            header_pending: opts.header != CopyHeader::None,
            columns,
            buf: Vec::new(),
            start: 0,
            scan: 0,
            in_quote: false,
            newline: None,
            line: 0,
            input_done: false,
            finished: false,
            values: String::new(),
            fields: Vec::new(),
            context: None,
        }
    }

    /// Adds a chunk of input (a CopyData message's payload), cut anywhere.
    pub fn feed(&mut self, data: &[u8]) {
        if self.finished {
            return; // after `\.` PostgreSQL ignores the rest
        }
        if self.start >= COMPACT_AT && self.start * 2 >= self.buf.len() {
            self.buf.drain(..self.start);
            self.scan -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// Says that no more input comes (CopyDone): a last line without newline is a row.
    pub fn finish_input(&mut self) {
        self.input_done = true;
    }

    /// Whether all rows have been read (`\.` seen, or input finished and consumed).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The number of the line most recently read (the row just returned, or the line an error
    /// is about), counting the header line; PostgreSQL's `COPY t, line N`.
    pub fn line_number(&self) -> u64 {
        self.line
    }

    /// The CONTEXT line for the last error [`CopyParser::next_row`] returned:
    /// `COPY t, line 3` or `COPY t, line 3: "1	x"`, as PostgreSQL writes it.
    pub fn error_context(&self, table: &str) -> String {
        match &self.context {
            Some(ErrorContext::LineWithText(text)) => {
                format!("COPY {table}, line {}: \"{}\"", self.line, clip_for_context(text))
            }
            _ => format!("COPY {table}, line {}", self.line),
        }
    }

    /// The next complete row, `Ok(None)` when more input is needed (or, after
    /// [`CopyParser::finish_input`] / `\.`, when there are no more rows).
    pub fn next_row(&mut self) -> Result<Option<CopyRow<'_>>, PgError> {
        loop {
            if self.finished {
                return Ok(None);
            }
            let Some((line_start, line_end)) = self.find_line()? else {
                return Ok(None);
            };
            self.line += 1;
            self.context = Some(ErrorContext::Line);
            let line = &self.buf[line_start..line_end];
            check_utf8(line)?;
            if self.csv {
                self.split_csv(line_start, line_end)?;
            } else {
                self.split_text(line_start, line_end)?;
            }
            if self.header_pending {
                self.header_pending = false;
                if self.header == CopyHeader::Match {
                    self.check_header(line_start, line_end)?;
                }
                continue;
            }
            self.check_field_count(line_start, line_end)?;
            self.context = None;
            return Ok(Some(CopyRow { values: &self.values, fields: &self.fields }));
        }
    }

    fn line_text(&self, start: usize, end: usize) -> String {
        String::from_utf8_lossy(&self.buf[start..end]).into_owned()
    }

    fn fail_with_text<T>(&mut self, err: PgError, start: usize, end: usize) -> Result<T, PgError> {
        self.context = Some(ErrorContext::LineWithText(self.line_text(start, end)));
        Err(err)
    }

    /// Finds the next line: returns its byte range in `buf` (without the terminator) and moves
    /// `start` past it, or `None` if it is not complete yet.
    fn find_line(&mut self) -> Result<Option<(usize, usize)>, PgError> {
        let len = self.buf.len();
        let line_start = self.start;
        let mut i = self.scan;
        while i < len {
            let c = self.buf[i];
            if self.csv {
                if self.in_quote {
                    if c == self.escape && self.escape != self.quote {
                        if i + 1 >= len {
                            if !self.input_done {
                                break;
                            }
                        } else {
                            let next = self.buf[i + 1];
                            if next == self.quote || next == self.escape {
                                i += 2;
                                continue;
                            }
                        }
                    }
                    if c == self.quote {
                        self.in_quote = false;
                    }
                    i += 1;
                    continue;
                }
                if c == self.quote {
                    self.in_quote = true;
                    i += 1;
                    continue;
                }
            } else if c == b'\\' {
                if i + 1 >= len {
                    if self.input_done {
                        i += 1;
                        continue;
                    }
                    break;
                }
                if self.buf[i + 1] == b'.' {
                    match self.end_marker(line_start, i)? {
                        Some(true) => {
                            self.finished = true;
                            return Ok(None);
                        }
                        Some(false) => unreachable!("end_marker only confirms or fails"),
                        None => break, // need more input
                    }
                }
                i += 2;
                continue;
            }
            if c == b'\n' || c == b'\r' {
                let (term_len, style) = if c == b'\n' {
                    (1, Newline::Lf)
                } else if i + 1 < len {
                    if self.buf[i + 1] == b'\n' {
                        (2, Newline::CrLf)
                    } else {
                        (1, Newline::Cr)
                    }
                } else if self.input_done {
                    (1, Newline::Cr)
                } else {
                    break; // `\r` at the end: `\r\n` or `\r`? wait for the next byte
                };
                let style = match (self.newline, style) {
                    (None, s) => s,
                    (Some(expected), s) if expected == s => s,
                    // In `\r` mode a `\r\n` is a line end followed by a stray newline.
                    (Some(Newline::Cr), Newline::CrLf) => Newline::Cr,
                    (Some(_), s) => {
                        self.line += 1;
                        self.context = Some(ErrorContext::Line);
                        return Err(self.newline_error(if s == Newline::Lf { b'\n' } else { b'\r' }));
                    }
                };
                let term_len = if style == Newline::Cr { 1 } else { term_len };
                self.newline = Some(style);
                self.start = i + term_len;
                self.scan = self.start;
                self.in_quote = false;
                return Ok(Some((line_start, i)));
            }
            i += 1;
        }
        self.scan = i;
        if self.input_done && i >= len {
            if line_start == len {
                self.finished = true;
                return Ok(None);
            }
            // The last line has no terminator.
            self.start = len;
            self.scan = len;
            return Ok(Some((line_start, len)));
        }
        Ok(None)
    }

    fn newline_error(&self, found: u8) -> PgError {
        match (self.csv, found) {
            (false, b'\n') => bad_copy("literal newline found in data").with_hint("Use \"\\n\" to represent newline."),
            (false, _) => bad_copy("literal carriage return found in data")
                .with_hint("Use \"\\r\" to represent carriage return."),
            (true, b'\n') => bad_copy("unquoted newline found in data")
                .with_hint("Use quoted CSV field to represent newline."),
            (true, _) => bad_copy("unquoted carriage return found in data")
                .with_hint("Use quoted CSV field to represent carriage return."),
        }
    }

    /// A `\.` at `at`: `Some(true)` when it is a proper end marker, `None` when more input is
    /// needed to tell, an error otherwise (PostgreSQL 18 wants it alone on its line).
    fn end_marker(&mut self, line_start: usize, at: usize) -> Result<Option<bool>, PgError> {
        let not_alone = |p: &mut CopyParser| {
            p.line += 1;
            p.context = Some(ErrorContext::Line);
            Err(bad_copy("end-of-copy marker is not alone on its line"))
        };
        let mismatch = |p: &mut CopyParser| {
            p.line += 1;
            p.context = Some(ErrorContext::Line);
            Err(bad_copy("end-of-copy marker does not match previous newline style"))
        };
        if at != line_start {
            return not_alone(self);
        }
        let after = at + 2;
        let Some(&c) = self.buf.get(after) else {
            return if self.input_done { not_alone(self) } else { Ok(None) };
        };
        match c {
            b'\n' => match self.newline {
                None | Some(Newline::Lf) => Ok(Some(true)),
                Some(_) => mismatch(self),
            },
            b'\r' => {
                let next = self.buf.get(after + 1).copied();
                if next.is_none() && !self.input_done {
                    return Ok(None);
                }
                let style = if next == Some(b'\n') { Newline::CrLf } else { Newline::Cr };
                match self.newline {
                    None => Ok(Some(true)),
                    Some(s) if s == style => Ok(Some(true)),
                    Some(_) => mismatch(self),
                }
            }
            _ => not_alone(self),
        }
    }

    fn begin_row(&mut self) -> Vec<u8> {
        self.fields.clear();
        let mut bytes = std::mem::take(&mut self.values).into_bytes();
        bytes.clear();
        bytes
    }

    fn end_row(&mut self, bytes: Vec<u8>) -> Result<(), PgError> {
        // Every field was checked on its own, so this only confirms it.
        self.values = String::from_utf8(bytes).map_err(|e| invalid_utf8(&e.as_bytes()[e.utf8_error().valid_up_to()..]))?;
        Ok(())
    }

    /// Text format: fields split at the delimiter, `\N` (the NULL string, compared before
    /// de-escaping) is NULL, backslash escapes decoded.
    fn split_text(&mut self, start: usize, end: usize) -> Result<(), PgError> {
        let mut out = self.begin_row();
        let mut i = start;
        loop {
            let field_start = i;
            let mut escaped = false;
            while i < end {
                let c = self.buf[i];
                if c == self.delimiter {
                    break;
                }
                if c == b'\\' {
                    escaped = true;
                    i += 1;
                }
                i += 1;
            }
            let field_end = i.min(end);
            let raw = &self.buf[field_start..field_end];
            let out_start = out.len();
            let kind = if raw == self.null.as_slice() {
                FieldKind::Null
            } else if self.default.as_deref() == Some(raw) {
                FieldKind::Default
            } else {
                if escaped {
                    let high = unescape_text(raw, &mut out);
                    if high {
                        if let Err(e) = check_utf8(&out[out_start..]) {
                            self.values = String::new();
                            return self.fail_with_text(e, start, end);
                        }
                    }
                } else {
                    out.extend_from_slice(raw);
                }
                FieldKind::Value
            };
            self.fields.push(FieldSpan { start: out_start as u32, end: out.len() as u32, kind });
            if i >= end {
                break;
            }
            i += 1; // the delimiter
        }
        self.end_row(out)
    }

    /// CSV: quotes may open anywhere in a field and toggle until the field ends; inside
    /// quotes the escape character escapes a quote or itself. An unquoted field equal to the
    /// NULL string is NULL.
    fn split_csv(&mut self, start: usize, end: usize) -> Result<(), PgError> {
        let mut out = self.begin_row();
        let (delimiter, quote, escape) = (self.delimiter, self.quote, self.escape);
        let mut i = start;
        loop {
            let field_start = i;
            let out_start = out.len();
            let mut saw_quote = false;
            let mut in_quote = false;
            let mut ended_by_delimiter = false;
            loop {
                if i >= end {
                    if in_quote {
                        self.values = String::new();
                        return self.fail_with_text(bad_copy("unterminated CSV quoted field"), start, end);
                    }
                    break;
                }
                let c = self.buf[i];
                if !in_quote {
                    if c == delimiter {
                        ended_by_delimiter = true;
                        i += 1;
                        break;
                    }
                    if c == quote {
                        in_quote = true;
                        saw_quote = true;
                        i += 1;
                        continue;
                    }
                    // Copy the run of plain bytes at once.
                    let run_end = self.buf[i..end]
                        .iter()
                        .position(|&b| b == delimiter || b == quote)
                        .map_or(end, |p| i + p);
                    out.extend_from_slice(&self.buf[i..run_end]);
                    i = run_end;
                } else {
                    if c == escape && i + 1 < end {
                        let next = self.buf[i + 1];
                        if next == quote || next == escape {
                            out.push(next);
                            i += 2;
                            continue;
                        }
                    }
                    if c == quote {
                        in_quote = false;
                        i += 1;
                        continue;
                    }
                    out.push(c);
                    i += 1;
                }
            }
            let raw_end = if ended_by_delimiter { i - 1 } else { i };
            let raw = &self.buf[field_start..raw_end];
            let column = self.fields.len();
            let forced_not_null = self.force_not_null.get(column).copied().unwrap_or(false);
            let forced_null = self.force_null.get(column).copied().unwrap_or(false);
            let kind = if !saw_quote && raw == self.null.as_slice() && !forced_not_null {
                FieldKind::Null
            } else if forced_null && out[out_start..] == *self.null.as_slice() {
                FieldKind::Null
            } else if !saw_quote && self.default.as_deref() == Some(raw) {
                FieldKind::Default
            } else {
                FieldKind::Value
            };
            if kind != FieldKind::Value {
                out.truncate(out_start);
            }
            self.fields.push(FieldSpan { start: out_start as u32, end: out.len() as u32, kind });
            if !ended_by_delimiter {
                break;
            }
        }
        self.end_row(out)
    }

    fn check_field_count(&mut self, start: usize, end: usize) -> Result<(), PgError> {
        let n = self.fields.len();
        let expected = self.columns.len();
        if n > expected {
            return self.fail_with_text(bad_copy("extra data after last expected column"), start, end);
        }
        if n < expected {
            let column = self.columns[n].clone();
            return self.fail_with_text(bad_copy(format!("missing data for column \"{column}\"")), start, end);
        }
        Ok(())
    }

    /// HEADER MATCH: the header line must name the table's columns, in order.
    fn check_header(&mut self, start: usize, end: usize) -> Result<(), PgError> {
        let n = self.fields.len();
        if n != self.columns.len() {
            let err = bad_copy(format!(
                "wrong number of fields in header line: got {n}, expected {}",
                self.columns.len()
            ));
            return self.fail_with_text(err, start, end);
        }
        for k in 0..n {
            let expected = &self.columns[k];
            let f = self.fields[k];
            let err = match f.kind {
                FieldKind::Value => {
                    let got = &self.values[f.start as usize..f.end as usize];
                    if got == expected {
                        continue;
                    }
                    format!("column name mismatch in header line field {}: got \"{got}\", expected \"{expected}\"", k + 1)
                }
                _ => format!(
                    "column name mismatch in header line field {}: got null value (\"{}\"), expected \"{expected}\"",
                    k + 1,
                    String::from_utf8_lossy(&self.null)
                ),
            };
            return self.fail_with_text(bad_copy(err), start, end);
        }
        Ok(())
    }
}

/// Decodes text-format backslash escapes of `raw` into `out`; returns whether an escape
/// produced a byte outside ASCII (or NUL), so the caller re-checks the encoding.
fn unescape_text(raw: &[u8], out: &mut Vec<u8>) -> bool {
    let mut suspicious = false;
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        i += 1;
        if c != b'\\' {
            out.push(c);
            continue;
        }
        let Some(&e) = raw.get(i) else { break }; // a lone backslash at the end is dropped
        i += 1;
        let byte = match e {
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'v' => 0x0b,
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match raw.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                (v & 0xff) as u8
            }
            b'x' => {
                let hex = |b: u8| (b as char).to_digit(16);
                match raw.get(i).and_then(|&b| hex(b)) {
                    None => b'x',
                    Some(h) => {
                        i += 1;
                        let mut v = h;
                        if let Some(l) = raw.get(i).and_then(|&b| hex(b)) {
                            v = v * 16 + l;
                            i += 1;
                        }
                        v as u8
                    }
                }
            }
            other => other,
        };
        if matches!(e, b'0'..=b'7' | b'x') && (byte >= 0x80 || byte == 0) {
            suspicious = true;
        }
        out.push(byte);
    }
    suspicious
}

/// Parses a whole COPY input at once (tests and small inputs). On error returns it with the
/// line number.
pub fn parse_all(
    opts: &CopyOptions,
    columns: &[&str],
    data: &[u8],
) -> Result<Vec<Vec<Option<String>>>, (PgError, u64)> {
    let mut parser = CopyParser::new(opts, columns.iter().map(|c| c.to_string()).collect());
    parser.feed(data);
    parser.finish_input();
    let mut rows = Vec::new();
    loop {
        match parser.next_row() {
            Ok(Some(row)) => rows.push(row.to_vec()),
            Ok(None) => return Ok(rows),
            Err(e) => return Err((e, parser.line_number())),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// writing

/// Appends `value` in the text format: backslash escapes for `\b \f \n \r \t \v`, backslash
/// and the delimiter; other bytes as they are.
pub fn write_text_field(value: &[u8], delimiter: u8, out: &mut Vec<u8>) {
    let mut run = 0;
    for (i, &c) in value.iter().enumerate() {
        let escaped = match c {
            0x08 => b'b',
            0x0c => b'f',
            b'\n' => b'n',
            b'\r' => b'r',
            b'\t' => b't',
            0x0b => b'v',
            b'\\' => b'\\',
            _ if c == delimiter => c,
            _ => continue,
        };
        out.extend_from_slice(&value[run..i]);
        out.push(b'\\');
        out.push(escaped);
        run = i + 1;
    }
    out.extend_from_slice(&value[run..]);
}

/// Appends `value` as a CSV field: quoted when `force`, when it equals the NULL string
/// (so the empty string is `""`), when it is `\.` in a one-column row, or when it contains
/// the delimiter, the quote, CR or LF; inside quotes the quote and escape characters are
/// preceded by the escape character.
pub fn write_csv_field(value: &[u8], opts: &CopyOptions, force: bool, single_column: bool, out: &mut Vec<u8>) {
    let (d, q, e) = (opts.delimiter, opts.quote, opts.escape);
    let needs_quotes = force
        || value == opts.null.as_bytes()
        || (single_column && value == b"\\.")
        || value.iter().any(|&c| c == d || c == q || c == b'\n' || c == b'\r');
    if !needs_quotes {
        out.extend_from_slice(value);
        return;
    }
    out.push(q);
    let mut run = 0;
    for (i, &c) in value.iter().enumerate() {
        if c == q || c == e {
            out.extend_from_slice(&value[run..i]);
            out.push(e);
            run = i;
        }
    }
    out.extend_from_slice(&value[run..]);
    out.push(q);
}

/// One text-format row: fields joined by the delimiter, NULL as the NULL string, `\n` at the end.
pub fn write_text_row(fields: &[Option<&str>], opts: &CopyOptions, out: &mut Vec<u8>) {
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(opts.delimiter);
        }
        match f {
            Some(v) => write_text_field(v.as_bytes(), opts.delimiter, out),
            None => out.extend_from_slice(opts.null.as_bytes()),
        }
    }
    out.push(b'\n');
}

/// One CSV row (FORCE_QUOTE `*` honoured; column lists need [`CopyEncoder`]).
pub fn write_csv_row(fields: &[Option<&str>], opts: &CopyOptions, out: &mut Vec<u8>) {
    let force = opts.force_quote == ColumnSet::All;
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(opts.delimiter);
        }
        match f {
            Some(v) => write_csv_field(v.as_bytes(), opts, force, fields.len() == 1, out),
            None => out.extend_from_slice(opts.null.as_bytes()),
        }
    }
    out.push(b'\n');
}

/// Writes rows of Arrow columns in a COPY TO format.
pub struct CopyEncoder {
    opts: CopyOptions,
    columns: Vec<String>,
    force_quote: Vec<bool>,
    value: Vec<u8>,
}

impl CopyEncoder {
    /// An encoder for `columns` (names, for HEADER and FORCE_QUOTE); text or CSV.
    pub fn new(opts: &CopyOptions, columns: Vec<String>) -> CopyEncoder {
        assert!(opts.format != CopyFormat::Binary, "CopyEncoder writes text and CSV, not binary");
        let force_quote = columns.iter().map(|c| opts.force_quote.contains(c)).collect();
        CopyEncoder { opts: opts.clone(), columns, force_quote, value: Vec::new() }
    }

    /// The header line if the options ask for one (nothing otherwise).
    pub fn write_header(&mut self, out: &mut Vec<u8>) {
        if self.opts.header == CopyHeader::None {
            return;
        }
        let single = self.columns.len() == 1;
        for (i, name) in self.columns.iter().enumerate() {
            if i > 0 {
                out.push(self.opts.delimiter);
            }
            if self.opts.format == CopyFormat::Csv {
                write_csv_field(name.as_bytes(), &self.opts, false, single, out);
            } else {
                write_text_field(name.as_bytes(), self.opts.delimiter, out);
            }
        }
        out.push(b'\n');
    }

    /// Row `row` of `columns` (one array per column, in order).
    pub fn write_row(&mut self, columns: &[ArrayRef], row: usize, fmt: &TextFormat, out: &mut Vec<u8>) {
        debug_assert_eq!(columns.len(), self.columns.len());
        let csv = self.opts.format == CopyFormat::Csv;
        let single = columns.len() == 1;
        for (i, column) in columns.iter().enumerate() {
            if i > 0 {
                out.push(self.opts.delimiter);
            }
            self.value.clear();
            if !write_text(column.as_ref(), row, fmt, &mut self.value) {
                out.extend_from_slice(self.opts.null.as_bytes());
                continue;
            }
            if csv {
                let force = self.force_quote.get(i).copied().unwrap_or(false);
                write_csv_field(&self.value, &self.opts, force, single, out);
            } else {
                write_text_field(&self.value, self.opts.delimiter, out);
            }
        }
        out.push(b'\n');
    }

    /// Every row of `batch`.
    pub fn write_batch(&mut self, batch: &RecordBatch, fmt: &TextFormat, out: &mut Vec<u8>) {
        for row in 0..batch.num_rows() {
            self.write_row(batch.columns(), row, fmt, out);
        }
    }
}
