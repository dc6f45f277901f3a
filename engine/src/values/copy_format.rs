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
use super::utf8::{check_utf8, invalid_utf8};
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
        let v = v
            .strip_prefix('(')
            .and_then(|v| v.strip_suffix(')'))
            .unwrap_or(v);
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
        _ => Err(PgError::new(
            sqlstate::SYNTAX_ERROR,
            format!("{name} requires a Boolean value"),
        )),
    }
}

impl CopyOptions {
    /// The defaults of a format: text `\t` and `\N`, CSV `,`, empty NULL, `"` quote and escape.
    pub fn defaults_for(format: CopyFormat) -> CopyOptions {
        let csv = format == CopyFormat::Csv;
        CopyOptions {
            format,
            delimiter: if csv { b',' } else { b'\t' },
            null: if csv {
                String::new()
            } else {
                "\\N".to_string()
            },
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
                    PgError::new(
                        sqlstate::SYNTAX_ERROR,
                        format!("{name} requires a parameter"),
                    )
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
                    let norm: String = v
                        .chars()
                        .filter(|c| c.is_ascii_alphanumeric())
                        .collect::<String>()
                        .to_ascii_lowercase();
                    if !matches!(norm.as_str(), "utf8" | "unicode" | "sqlascii") {
                        let known_elsewhere = norm.starts_with("latin")
                            || norm.starts_with("win")
                            || norm.starts_with("iso")
                            || norm.starts_with("euc")
                            || norm.starts_with("koi8");
                        return Err(if known_elsewhere {
                            PgError::unsupported(format!(
                                "iolab only reads and writes COPY data in UTF8, not \"{v}\""
                            ))
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
                    if !matches!(
                        v.to_ascii_lowercase().as_str(),
                        "default" | "verbose" | "silent"
                    ) {
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
                return Err(unsupported(
                    "COPY delimiter must be a single one-byte character",
                ));
            }
            opts.delimiter = d.as_bytes()[0];
        }
        if matches!(opts.delimiter, b'\n' | b'\r') {
            return Err(invalid(
                "COPY delimiter cannot be newline or carriage return".into(),
            ));
        }
        if let Some(n) = null {
            opts.null = n;
        }
        if opts.null.contains(['\n', '\r']) {
            return Err(invalid(
                "COPY null representation cannot use newline or carriage return".into(),
            ));
        }
        if let Some(d) = &default {
            if d.contains(['\n', '\r']) {
                return Err(invalid(
                    "COPY default representation cannot use newline or carriage return".into(),
                ));
            }
        }
        if format == CopyFormat::Text
            && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&opts.delimiter)
        {
            return Err(invalid(format!(
                "COPY delimiter cannot be \"{}\"",
                opts.delimiter as char
            )));
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
                return Err(unsupported(
                    "COPY quote must be a single one-byte character",
                ));
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
                return Err(unsupported(
                    "COPY escape must be a single one-byte character",
                ));
            }
            opts.escape = e.as_bytes()[0];
        }
        for (set, name) in [
            (&force_quote, "FORCE_QUOTE"),
            (&force_not_null, "FORCE_NOT_NULL"),
            (&force_null, "FORCE_NULL"),
        ] {
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
                    return Err(PgError::new(
                        code,
                        format!("COPY {name} cannot be used with COPY {dir}"),
                    ));
                }
            }
        }
        if opts.null.as_bytes().contains(&opts.delimiter) {
            return Err(invalid(
                "COPY delimiter character must not appear in the NULL specification".into(),
            ));
        }
        if csv && opts.null.as_bytes().contains(&opts.quote) {
            return Err(invalid(
                "CSV quote character must not appear in the NULL specification".into(),
            ));
        }
        if header == CopyHeader::Match && direction == CopyDirection::To {
            return Err(unsupported("cannot use \"match\" with HEADER in COPY TO"));
        }
        if let Some(d) = &default {
            if direction == CopyDirection::To {
                return Err(unsupported("COPY DEFAULT cannot be used with COPY TO"));
            }
            if d.as_bytes().contains(&opts.delimiter) {
                return Err(invalid(
                    "COPY delimiter character must not appear in the DEFAULT specification".into(),
                ));
            }
            if csv && d.as_bytes().contains(&opts.quote) {
                return Err(invalid(
                    "CSV quote character must not appear in the DEFAULT specification".into(),
                ));
            }
            if *d == opts.null {
                return Err(unsupported(
                    "NULL specification and DEFAULT specification cannot be the same",
                ));
            }
        }
        let on_error_ignore = on_error.unwrap_or(false);
        if binary && on_error_ignore {
            return Err(syntax("only ON_ERROR STOP is allowed in BINARY mode"));
        }
        if reject_limit.is_some() && !on_error_ignore {
            return Err(invalid(
                "COPY REJECT_LIMIT requires ON_ERROR to be set to IGNORE".into(),
            ));
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
        Some(v) => format!(
            "COPY {table}, line {line}, column {column}: \"{}\"",
            clip_for_context(v)
        ),
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
        assert!(
            opts.format != CopyFormat::Binary,
            "CopyParser reads text and CSV, not binary"
        );
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
        debug_assert!(self.start <= self.scan && self.scan <= self.buf.len());
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
    /// `COPY t, line 3` or `COPY t, line 3: "1<TAB>x"`, as PostgreSQL writes it.
    pub fn error_context(&self, table: &str) -> String {
        match &self.context {
            Some(ErrorContext::LineWithText(text)) => {
                format!(
                    "COPY {table}, line {}: \"{}\"",
                    self.line,
                    clip_for_context(text)
                )
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
            return Ok(Some(CopyRow {
                values: &self.values,
                fields: &self.fields,
            }));
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
        let (quote, escape) = (self.quote, self.escape);
        while i < len {
            // Skip the bytes that cannot end or escape anything in one go.
            let rest = &self.buf[i..];
            let skip = match (self.csv, self.in_quote) {
                (false, _) => rest
                    .iter()
                    .position(|&c| c == b'\\' || c == b'\n' || c == b'\r'),
                (true, false) => rest
                    .iter()
                    .position(|&c| c == quote || c == b'\n' || c == b'\r'),
                (true, true) => rest.iter().position(|&c| c == quote || c == escape),
            };
            i += skip.unwrap_or(rest.len());
            if i >= len {
                break;
            }
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
                    if !self.end_marker(line_start, i)? {
                        break; // need more input
                    }
                    self.finished = true;
                    return Ok(None);
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
                        return Err(self.newline_error(if s == Newline::Lf {
                            b'\n'
                        } else {
                            b'\r'
                        }));
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
            (false, b'\n') => bad_copy("literal newline found in data")
                .with_hint("Use \"\\n\" to represent newline."),
            (false, _) => bad_copy("literal carriage return found in data")
                .with_hint("Use \"\\r\" to represent carriage return."),
            (true, b'\n') => bad_copy("unquoted newline found in data")
                .with_hint("Use quoted CSV field to represent newline."),
            (true, _) => bad_copy("unquoted carriage return found in data")
                .with_hint("Use quoted CSV field to represent carriage return."),
        }
    }

    /// A `\.` at `at`: `true` when it is a proper end marker, `false` when more input is
    /// needed to tell, an error otherwise (PostgreSQL 18 wants it alone on its line).
    fn end_marker(&mut self, line_start: usize, at: usize) -> Result<bool, PgError> {
        let not_alone = |p: &mut CopyParser| {
            p.line += 1;
            p.context = Some(ErrorContext::Line);
            Err(bad_copy("end-of-copy marker is not alone on its line"))
        };
        let mismatch = |p: &mut CopyParser| {
            p.line += 1;
            p.context = Some(ErrorContext::Line);
            Err(bad_copy(
                "end-of-copy marker does not match previous newline style",
            ))
        };
        if at != line_start {
            return not_alone(self);
        }
        let after = at + 2;
        let Some(&c) = self.buf.get(after) else {
            return if self.input_done {
                not_alone(self)
            } else {
                Ok(false)
            };
        };
        match c {
            b'\n' => match self.newline {
                None | Some(Newline::Lf) => Ok(true),
                Some(_) => mismatch(self),
            },
            b'\r' => {
                let next = self.buf.get(after + 1).copied();
                if next.is_none() && !self.input_done {
                    return Ok(false);
                }
                let style = if next == Some(b'\n') {
                    Newline::CrLf
                } else {
                    Newline::Cr
                };
                match self.newline {
                    None => Ok(true),
                    Some(s) if s == style => Ok(true),
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
        self.values = String::from_utf8(bytes)
            .map_err(|e| invalid_utf8(&e.as_bytes()[e.utf8_error().valid_up_to()..]))?;
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
                let delimiter = self.delimiter;
                let skip = self.buf[i..end]
                    .iter()
                    .position(|&c| c == delimiter || c == b'\\');
                i += skip.unwrap_or(end - i);
                if i >= end || self.buf[i] == delimiter {
                    break;
                }
                escaped = true; // a backslash: skip it and the byte it escapes
                i += 2;
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
            self.fields.push(FieldSpan {
                start: out_start as u32,
                end: out.len() as u32,
                kind,
            });
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
                        return self.fail_with_text(
                            bad_copy("unterminated CSV quoted field"),
                            start,
                            end,
                        );
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
            let is_null = (!saw_quote && raw == self.null.as_slice() && !forced_not_null)
                || (forced_null && out[out_start..] == *self.null.as_slice());
            let kind = if is_null {
                FieldKind::Null
            } else if !saw_quote && self.default.as_deref() == Some(raw) {
                FieldKind::Default
            } else {
                FieldKind::Value
            };
            if kind != FieldKind::Value {
                out.truncate(out_start);
            }
            self.fields.push(FieldSpan {
                start: out_start as u32,
                end: out.len() as u32,
                kind,
            });
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
            return self.fail_with_text(
                bad_copy("extra data after last expected column"),
                start,
                end,
            );
        }
        if n < expected {
            let column = self.columns[n].clone();
            return self.fail_with_text(
                bad_copy(format!("missing data for column \"{column}\"")),
                start,
                end,
            );
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
pub fn write_csv_field(
    value: &[u8],
    opts: &CopyOptions,
    force: bool,
    single_column: bool,
    out: &mut Vec<u8>,
) {
    let (d, q, e) = (opts.delimiter, opts.quote, opts.escape);
    let needs_quotes = force
        || value == opts.null.as_bytes()
        || (single_column && value == b"\\.")
        || value
            .iter()
            .any(|&c| c == d || c == q || c == b'\n' || c == b'\r');
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
        assert!(
            opts.format != CopyFormat::Binary,
            "CopyEncoder writes text and CSV, not binary"
        );
        let force_quote = columns
            .iter()
            .map(|c| opts.force_quote.contains(c))
            .collect();
        CopyEncoder {
            opts: opts.clone(),
            columns,
            force_quote,
            value: Vec::new(),
        }
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
    pub fn write_row(
        &mut self,
        columns: &[ArrayRef],
        row: usize,
        fmt: &TextFormat,
        out: &mut Vec<u8>,
    ) {
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

#[cfg(test)]
#[allow(clippy::type_complexity)] // the tables of cases
mod tests {
    //! Rows, errors and output were compared with PostgreSQL 18.4 (`\copy … from file`,
    //! `COPY … FROM STDIN` with the same bytes, `COPY … TO STDOUT`).
    use super::*;
    use datafusion::arrow::array::{Int32Array, StringArray};
    use std::sync::Arc;

    fn pairs(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        list.iter()
            .map(|(n, v)| (n.to_string(), v.map(str::to_string)))
            .collect()
    }

    fn opts(list: &[(&str, Option<&str>)]) -> CopyOptions {
        CopyOptions::from_pairs(&pairs(list)).unwrap()
    }

    fn opt_err(list: &[(&str, Option<&str>)]) -> (&'static str, String) {
        let e = CopyOptions::from_pairs(&pairs(list)).unwrap_err();
        (e.code, e.message)
    }

    fn row(values: &[Option<&str>]) -> Vec<Option<String>> {
        values.iter().map(|v| v.map(str::to_string)).collect()
    }

    const ABC: &[&str] = &["a", "b", "c"];

    type Rows = Vec<Vec<Option<String>>>;

    #[test]
    fn options_and_their_errors() {
        let text = opts(&[]);
        assert_eq!(
            (text.format, text.delimiter, text.null.as_str()),
            (CopyFormat::Text, b'\t', "\\N")
        );
        let csv = opts(&[
            ("format", Some("csv")),
            ("header", Some("true")),
            ("delimiter", Some(";")),
            ("null", Some("x")),
            ("quote", Some("'")),
            ("escape", Some("\\")),
        ]);
        assert_eq!(
            (
                csv.format,
                csv.header,
                csv.delimiter,
                csv.null.as_str(),
                csv.quote,
                csv.escape
            ),
            (
                CopyFormat::Csv,
                CopyHeader::Present,
                b';',
                "x",
                b'\'',
                b'\\'
            )
        );
        let csv = opts(&[("format", Some("csv"))]);
        assert_eq!(
            (csv.delimiter, csv.null.as_str(), csv.quote, csv.escape),
            (b',', "", b'"', b'"')
        );
        assert_eq!(
            opts(&[("format", Some("csv")), ("quote", Some("'"))]).escape,
            b'\''
        );
        assert_eq!(opts(&[("header", None)]).header, CopyHeader::Present);
        assert_eq!(opts(&[("header", Some("match"))]).header, CopyHeader::Match);
        assert_eq!(
            opts(&[("format", Some("csv")), ("header", Some("0"))]).header,
            CopyHeader::None
        );
        assert_eq!(
            opts(&[("format", Some("csv")), ("header", Some("on"))]).header,
            CopyHeader::Present
        );
        assert_eq!(
            opts(&[("format", Some("csv")), ("force_null", Some("*"))]).force_null,
            ColumnSet::All
        );
        assert_eq!(
            opts(&[
                ("format", Some("csv")),
                ("force_not_null", Some("a, \"B\""))
            ])
            .force_not_null,
            ColumnSet::Columns(vec!["a".into(), "B".into()])
        );
        assert_eq!(
            opts(&[("encoding", Some("utf8"))]).encoding.as_deref(),
            Some("utf8")
        );
        assert!(opts(&[("on_error", Some("ignore"))]).on_error_ignore);

        let cases: &[(&[(&str, Option<&str>)], &str, &str)] = &[
            (
                &[("foo", Some("1"))],
                "42601",
                "option \"foo\" not recognized",
            ),
            (
                &[("format", Some("x"))],
                "22023",
                "COPY format \"x\" not recognized",
            ),
            (
                &[("format", Some("csv")), ("delimiter", Some(";;"))],
                "0A000",
                "COPY delimiter must be a single one-byte character",
            ),
            (
                &[("format", Some("csv")), ("delimiter", Some("é"))],
                "0A000",
                "COPY delimiter must be a single one-byte character",
            ),
            (
                &[("delimiter", Some(",")), ("delimiter", Some(";"))],
                "42601",
                "conflicting or redundant options",
            ),
            (
                &[("quote", Some("x"))],
                "0A000",
                "COPY QUOTE requires CSV mode",
            ),
            (
                &[("format", Some("csv")), ("quote", Some("xx"))],
                "0A000",
                "COPY quote must be a single one-byte character",
            ),
            (
                &[
                    ("format", Some("csv")),
                    ("delimiter", Some(",")),
                    ("quote", Some(",")),
                ],
                "22023",
                "COPY delimiter and quote must be different",
            ),
            (
                &[("format", Some("csv")), ("delimiter", Some("\""))],
                "22023",
                "COPY delimiter and quote must be different",
            ),
            (
                &[("format", Some("csv")), ("header", Some("maybe"))],
                "42601",
                "header requires a Boolean value or \"match\"",
            ),
            (
                &[("format", Some("csv")), ("header", Some("2"))],
                "42601",
                "header requires a Boolean value or \"match\"",
            ),
            (
                &[("format", Some("csv")), ("escape", Some(""))],
                "0A000",
                "COPY escape must be a single one-byte character",
            ),
            (
                &[("escape", Some("\\"))],
                "0A000",
                "COPY ESCAPE requires CSV mode",
            ),
            (
                &[("delimiter", Some("\\"))],
                "22023",
                "COPY delimiter cannot be \"\\\"",
            ),
            (
                &[("delimiter", Some("a"))],
                "22023",
                "COPY delimiter cannot be \"a\"",
            ),
            (
                &[("null", Some("\n"))],
                "22023",
                "COPY null representation cannot use newline or carriage return",
            ),
            (
                &[("format", Some("csv")), ("null", Some(","))],
                "22023",
                "COPY delimiter character must not appear in the NULL specification",
            ),
            (
                &[("delimiter", Some("|")), ("null", Some("a|b"))],
                "22023",
                "COPY delimiter character must not appear in the NULL specification",
            ),
            (
                &[("format", Some("csv")), ("null", Some("a\"b"))],
                "22023",
                "CSV quote character must not appear in the NULL specification",
            ),
            (
                &[("format", Some("csv")), ("delimiter", Some("\n"))],
                "22023",
                "COPY delimiter cannot be newline or carriage return",
            ),
            (
                &[("format", Some("binary")), ("delimiter", Some(","))],
                "42601",
                "cannot specify DELIMITER in BINARY mode",
            ),
            (
                &[("format", Some("binary")), ("null", Some("x"))],
                "42601",
                "cannot specify NULL in BINARY mode",
            ),
            (
                &[("format", Some("binary")), ("header", None)],
                "0A000",
                "cannot specify HEADER in BINARY mode",
            ),
            (&[("format", None)], "42601", "format requires a parameter"),
            (
                &[("delimiter", None)],
                "42601",
                "delimiter requires a parameter",
            ),
            (
                &[("format", Some("csv")), ("force_quote", Some("a"))],
                "0A000",
                "COPY FORCE_QUOTE cannot be used with COPY FROM",
            ),
            (
                &[("force_not_null", Some("a"))],
                "0A000",
                "COPY FORCE_NOT_NULL requires CSV mode",
            ),
            (
                &[("on_error", Some("foo"))],
                "22023",
                "COPY ON_ERROR \"foo\" not recognized",
            ),
            (
                &[("encoding", Some("foo"))],
                "22023",
                "argument to option \"encoding\" must be a valid encoding name",
            ),
            (
                &[("freeze", Some("x"))],
                "42601",
                "freeze requires a Boolean value",
            ),
            (
                &[
                    ("format", Some("csv")),
                    ("null", Some("x")),
                    ("default", Some("x")),
                ],
                "0A000",
                "NULL specification and DEFAULT specification cannot be the same",
            ),
            (
                &[("format", Some("binary")), ("on_error", Some("ignore"))],
                "42601",
                "only ON_ERROR STOP is allowed in BINARY mode",
            ),
            (
                &[("reject_limit", Some("5"))],
                "22023",
                "COPY REJECT_LIMIT requires ON_ERROR to be set to IGNORE",
            ),
            (
                &[("log_verbosity", Some("foo"))],
                "22023",
                "COPY LOG_VERBOSITY \"foo\" not recognized",
            ),
            (
                &[("default", Some("\n"))],
                "22023",
                "COPY default representation cannot use newline or carriage return",
            ),
        ];
        for (list, code, message) in cases {
            assert_eq!(opt_err(list), (*code, message.to_string()), "{list:?}");
        }
        let to = |list: &[(&str, Option<&str>)]| {
            let e = CopyOptions::from_pairs_for(&pairs(list), CopyDirection::To).unwrap_err();
            (e.code, e.message)
        };
        assert_eq!(
            to(&[("header", Some("match"))]),
            (
                "0A000",
                "cannot use \"match\" with HEADER in COPY TO".into()
            )
        );
        assert_eq!(
            to(&[("force_quote", Some("a"))]),
            ("0A000", "COPY FORCE_QUOTE requires CSV mode".into())
        );
        assert_eq!(
            to(&[("format", Some("csv")), ("force_not_null", Some("a"))]),
            (
                "22023",
                "COPY FORCE_NOT_NULL cannot be used with COPY TO".into()
            )
        );
        assert!(CopyOptions::from_pairs_for(
            &pairs(&[("format", Some("csv")), ("force_quote", Some("*"))]),
            CopyDirection::To
        )
        .is_ok());
    }

    /// Text input verified with `\copy cp from file` on PostgreSQL 18: escapes, `\N`, an
    /// escaped tab and newline, multi-byte characters, and the end marker with junk after it.
    const TRICKY_TEXT: &[u8] = b"1\tx\\ny\t\\N\n2\t\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\t\\x41\\101\\t\\\\\n3\t\\\t\t\n4\tend\\\nline\tz\n5\t\\N\\N\t\\z\\0101\\x4g\n\\.\ngarbage\n";

    fn tricky_text_rows() -> Rows {
        vec![
            row(&[Some("1"), Some("x\ny"), None]),
            row(&[Some("2"), Some("é€😀"), Some("AA\t\\")]),
            row(&[Some("3"), Some("\t"), Some("")]),
            row(&[Some("4"), Some("end\nline"), Some("z")]),
            row(&[Some("5"), Some("NN"), Some("z\u{8}1\u{4}g")]),
        ]
    }

    /// CSV input verified with `\copy cp from file with (format csv)`: CRLF lines, a quoted
    /// CRLF inside a field, doubled quotes, empty quoted vs unquoted, `\.` as data.
    const TRICKY_CSV: &[u8] = b"1,\"a,b\",\"multi\r\nline\"\r\n2,\"he said \"\"hi\"\"\",\r\n3,\"\",\xc3\xa9\xf0\x9f\x98\x80\r\n4,\"x\"\"\",\"\"\"\"\r\n5, q ,\"\\.\"\r\n";

    fn tricky_csv_rows() -> Rows {
        vec![
            row(&[Some("1"), Some("a,b"), Some("multi\r\nline")]),
            row(&[Some("2"), Some("he said \"hi\""), None]),
            row(&[Some("3"), Some(""), Some("é😀")]),
            row(&[Some("4"), Some("x\""), Some("\"")]),
            row(&[Some("5"), Some(" q "), Some("\\.")]),
        ]
    }

    /// Feeds `data` cut at `cuts` and collects rows, reading after every chunk.
    fn parse_chunked(
        opts: &CopyOptions,
        data: &[u8],
        cuts: &[usize],
    ) -> Result<Rows, (PgError, u64)> {
        let mut parser = CopyParser::new(opts, ABC.iter().map(|c| c.to_string()).collect());
        let mut rows = Vec::new();
        let mut last = 0;
        let drain = |parser: &mut CopyParser, rows: &mut Vec<_>| -> Result<(), (PgError, u64)> {
            loop {
                match parser.next_row() {
                    Ok(Some(r)) => rows.push(r.to_vec()),
                    Ok(None) => return Ok(()),
                    Err(e) => return Err((e, parser.line_number())),
                }
            }
        };
        for &cut in cuts.iter().chain(std::iter::once(&data.len())) {
            parser.feed(&data[last..cut]);
            last = cut;
            drain(&mut parser, &mut rows)?;
        }
        parser.finish_input();
        drain(&mut parser, &mut rows)?;
        assert!(parser.is_finished());
        Ok(rows)
    }

    #[test]
    fn tricky_inputs_parse_like_postgres() {
        assert_eq!(
            parse_all(&opts(&[]), ABC, TRICKY_TEXT).unwrap(),
            tricky_text_rows()
        );
        let csv = opts(&[("format", Some("csv"))]);
        assert_eq!(parse_all(&csv, ABC, TRICKY_CSV).unwrap(), tricky_csv_rows());
    }

    #[test]
    fn every_split_gives_the_same_rows() {
        let text = opts(&[]);
        let csv = opts(&[("format", Some("csv"))]);
        let csv_backslash = opts(&[("format", Some("csv")), ("escape", Some("\\"))]);
        let escaped_csv: &[u8] = b"1,\"a\\\"b\\\\\",\"c\\d\"\r\n2,\"x\\\"\r\ny\",\r\n";
        let escaped_rows = vec![
            row(&[Some("1"), Some("a\"b\\"), Some("c\\d")]),
            row(&[Some("2"), Some("x\"\r\ny"), None]),
        ];
        let cases: [(&CopyOptions, &[u8], Rows); 3] = [
            (&text, TRICKY_TEXT, tricky_text_rows()),
            (&csv, TRICKY_CSV, tricky_csv_rows()),
            (&csv_backslash, escaped_csv, escaped_rows),
        ];
        for (o, data, want) in cases {
            // one cut anywhere, two cuts anywhere, and one byte at a time
            for i in 0..=data.len() {
                assert_eq!(parse_chunked(o, data, &[i]).unwrap(), want, "cut at {i}");
                for j in i..=data.len() {
                    assert_eq!(
                        parse_chunked(o, data, &[i, j]).unwrap(),
                        want,
                        "cuts at {i}, {j}"
                    );
                }
            }
            let every: Vec<usize> = (1..data.len()).collect();
            assert_eq!(parse_chunked(o, data, &every).unwrap(), want);
        }
    }

    #[test]
    fn every_split_gives_the_same_error() {
        let text = opts(&[]);
        let cases: &[(&[u8], &str, u64)] = &[
            (b"1\tx\ty\r\n2\ta\tb\n", "literal newline found in data", 2),
            (
                b"1\tx\ty\n2\tc\rd\te\n",
                "literal carriage return found in data",
                2,
            ),
            (b"1\tx\n", "missing data for column \"c\"", 1),
            (
                b"1\ta\tb\n\\.\r\n",
                "end-of-copy marker does not match previous newline style",
                2,
            ),
        ];
        for (data, message, line) in cases {
            for i in 0..=data.len() {
                let (e, l) = parse_chunked(&text, data, &[i]).unwrap_err();
                assert_eq!((e.message.as_str(), l), (*message, *line), "cut at {i}");
            }
        }
    }

    fn first_error(o: &CopyOptions, data: &[u8]) -> (PgError, String) {
        let mut parser = CopyParser::new(o, ABC.iter().map(|c| c.to_string()).collect());
        parser.feed(data);
        parser.finish_input();
        loop {
            match parser.next_row() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("no error in {data:?}"),
                Err(e) => return (e, parser.error_context("vt")),
            }
        }
    }

    #[test]
    fn text_errors_and_context_like_postgres() {
        let text = opts(&[]);
        let cases: &[(&[u8], &str, &str, Option<&str>, &str)] = &[
            (
                b"1\tx\n2\ty\n3\n",
                "22P04",
                "missing data for column \"c\"",
                None,
                "COPY vt, line 1: \"1\tx\"",
            ),
            (
                b"1\tx\ty\tz\n",
                "22P04",
                "extra data after last expected column",
                None,
                "COPY vt, line 1: \"1\tx\ty\tz\"",
            ),
            (
                b"1\tx\ty\r\n2\ta\tb\n",
                "22P04",
                "literal newline found in data",
                Some("Use \"\\n\" to represent newline."),
                "COPY vt, line 2",
            ),
            (
                b"1\ta\tb\rc\n",
                "22P04",
                "literal newline found in data",
                Some("Use \"\\n\" to represent newline."),
                "COPY vt, line 2",
            ),
            (
                b"1\ta\tb\r2\tc\td\n",
                "22P04",
                "literal newline found in data",
                Some("Use \"\\n\" to represent newline."),
                "COPY vt, line 2",
            ),
            (
                b"1\ta\tb\n2\tc\rd\te\n",
                "22P04",
                "literal carriage return found in data",
                Some("Use \"\\r\" to represent carriage return."),
                "COPY vt, line 2",
            ),
            (
                b"1\ta\tb\r\n2\tc\rd\te\r\n",
                "22P04",
                "literal carriage return found in data",
                Some("Use \"\\r\" to represent carriage return."),
                "COPY vt, line 2",
            ),
            (
                b"1\ta\\.\tb\n",
                "22P04",
                "end-of-copy marker is not alone on its line",
                None,
                "COPY vt, line 1",
            ),
            (
                b"\\.x\n",
                "22P04",
                "end-of-copy marker is not alone on its line",
                None,
                "COPY vt, line 1",
            ),
            (
                b"1\ta\t\\.\n",
                "22P04",
                "end-of-copy marker is not alone on its line",
                None,
                "COPY vt, line 1",
            ),
            (
                b"1\ta\tb\n\\.\r\n",
                "22P04",
                "end-of-copy marker does not match previous newline style",
                None,
                "COPY vt, line 2",
            ),
            (
                b"1\ta\tb\n\\.",
                "22P04",
                "end-of-copy marker is not alone on its line",
                None,
                "COPY vt, line 2",
            ),
            (
                b"1\ta\t\\x80\n",
                "22021",
                "invalid byte sequence for encoding \"UTF8\": 0x80",
                None,
                "COPY vt, line 1: \"1\ta\t\\x80\"",
            ),
            (
                b"1\ta\t\\0\n",
                "22021",
                "invalid byte sequence for encoding \"UTF8\": 0x00",
                None,
                "COPY vt, line 1: \"1\ta\t\\0\"",
            ),
            (
                b"1\t\\x41\\101\\x4g\\q\\\n",
                "22P04",
                "missing data for column \"c\"",
                None,
                "COPY vt, line 1: \"1\t\\x41\\101\\x4g\\q\\\n\"",
            ),
        ];
        for (data, code, message, hint, context) in cases {
            let (e, ctx) = first_error(&text, data);
            assert_eq!(
                (e.code, e.message.as_str(), e.hint.as_deref(), ctx.as_str()),
                (*code, *message, *hint, *context),
                "{data:?}"
            );
        }
    }

    #[test]
    fn text_end_marker_and_line_endings() {
        let text = opts(&[]);
        // `\.` then anything: the rest is ignored (COPY 1).
        assert_eq!(parse_all(&text, ABC, b"1\ta\tb\n\\.\n\n").unwrap().len(), 1);
        assert_eq!(
            parse_all(&text, ABC, b"1\tx\ty\n\\.\nextra junk\n")
                .unwrap()
                .len(),
            1
        );
        // A last line without newline is a row; \r and \r\n styles work.
        assert_eq!(
            parse_all(&text, ABC, b"1\tx\ty").unwrap(),
            vec![row(&[Some("1"), Some("x"), Some("y")])]
        );
        assert_eq!(
            parse_all(&text, ABC, b"1\tx\ty\r\n2\ta\tb\r\n")
                .unwrap()
                .len(),
            2
        );
        assert_eq!(
            parse_all(&text, ABC, b"1\ta\tb\r2\tc\td\r").unwrap().len(),
            2
        );
        assert_eq!(
            parse_all(&text, ABC, b"1\ta\tb\r\n\\.\r\n").unwrap().len(),
            1
        );
        // `\x` without hex digits is `x`; an empty line is one empty field.
        assert_eq!(
            parse_all(&text, ABC, b"1\ta\t\\x\n").unwrap()[0][2].as_deref(),
            Some("x")
        );
        assert_eq!(
            parse_all(&text, &["a"], b"\n").unwrap(),
            vec![row(&[Some("")])]
        );
        assert_eq!(parse_all(&text, ABC, b"").unwrap().len(), 0);
        // NULL is compared before de-escaping: `\\N` is the text `\N`.
        assert_eq!(
            parse_all(&text, &["a"], b"\\\\N\n").unwrap(),
            vec![row(&[Some("\\N")])]
        );
        let custom = opts(&[("delimiter", Some("|")), ("null", Some("NULL"))]);
        assert_eq!(
            parse_all(&custom, ABC, b"1|NULL|a\\|b\n").unwrap(),
            vec![row(&[Some("1"), None, Some("a|b")])]
        );
    }

    #[test]
    fn csv_rows_and_errors_like_postgres() {
        let csv = opts(&[("format", Some("csv"))]);
        let rows = parse_all(
            &csv,
            ABC,
            b"1,\"abc\nde\",x\n2,,\"\"\n1,a ,  b  \n1,\"a\"x,b\n1,x\"a\",b\n",
        )
        .unwrap();
        assert_eq!(
            rows,
            vec![
                row(&[Some("1"), Some("abc\nde"), Some("x")]),
                row(&[Some("2"), None, Some("")]),
                row(&[Some("1"), Some("a "), Some("  b  ")]),
                row(&[Some("1"), Some("ax"), Some("b")]),
                row(&[Some("1"), Some("xa"), Some("b")]),
            ]
        );
        // `\.` is data in CSV (PostgreSQL 18).
        assert_eq!(parse_all(&csv, &["a"], b"1\n\\.\n2\n").unwrap().len(), 3);
        let cases: &[(&CopyOptions, &[u8], &str, &str, &str)] = &[
            (
                &csv,
                b"1,\"abc\n",
                "22P04",
                "unterminated CSV quoted field",
                "COPY vt, line 1: \"1,\"abc\n\"",
            ),
            (
                &csv,
                b"1,a,b,c\n",
                "22P04",
                "extra data after last expected column",
                "COPY vt, line 1: \"1,a,b,c\"",
            ),
            (
                &csv,
                b"1\n",
                "22P04",
                "missing data for column \"b\"",
                "COPY vt, line 1: \"1\"",
            ),
            (
                &csv,
                b"1,a,b\n\n2,c,d\n",
                "22P04",
                "missing data for column \"b\"",
                "COPY vt, line 2: \"\"",
            ),
            (
                &csv,
                b"1,a,b\n2,c\rd,e\n",
                "22P04",
                "unquoted carriage return found in data",
                "COPY vt, line 2",
            ),
            (
                &csv,
                b"1,a,b\r2,c\nd,e\r",
                "22P04",
                "unquoted newline found in data",
                "COPY vt, line 2",
            ),
            (
                &csv,
                b"1,a,b\r\n2,c\rd,e\r\n",
                "22P04",
                "unquoted carriage return found in data",
                "COPY vt, line 2",
            ),
            (
                &csv,
                b"1,a,b\r\n2,c,e\n",
                "22P04",
                "unquoted newline found in data",
                "COPY vt, line 2",
            ),
            (
                &csv,
                b"\xc3\x28,a,b\n",
                "22021",
                "invalid byte sequence for encoding \"UTF8\": 0xc3 0x28",
                "COPY vt, line 1",
            ),
            (
                &csv,
                b"1,a\xe2\x82,b\n",
                "22021",
                "invalid byte sequence for encoding \"UTF8\": 0xe2 0x82 0x2c",
                "COPY vt, line 1",
            ),
        ];
        for (o, data, code, message, context) in cases {
            let (e, ctx) = first_error(o, data);
            assert_eq!(
                (e.code, e.message.as_str(), ctx.as_str()),
                (*code, *message, *context),
                "{data:?}"
            );
        }
        let (e, _) = first_error(&csv, b"1,a,b\r\n2,c\rd,e\r\n");
        assert_eq!(
            e.hint.as_deref(),
            Some("Use quoted CSV field to represent carriage return.")
        );
        let backslash = opts(&[("format", Some("csv")), ("escape", Some("\\"))]);
        let (e, ctx) = first_error(&backslash, b"1,a\\\"b,c\n");
        assert_eq!(
            (e.message.as_str(), ctx.as_str()),
            (
                "unterminated CSV quoted field",
                "COPY vt, line 1: \"1,a\\\"b,c\n\""
            )
        );
        // QUOTE '''' ESCAPE '\': 1,'a\'b',c → a'b
        let single = opts(&[
            ("format", Some("csv")),
            ("quote", Some("'")),
            ("escape", Some("\\")),
        ]);
        assert_eq!(
            parse_all(&single, ABC, b"1,'a\\'b',c\n").unwrap()[0][1].as_deref(),
            Some("a'b")
        );
        // NULL 'x': unquoted x is NULL, quoted "x" is the text x.
        let null_x = opts(&[("format", Some("csv")), ("null", Some("x"))]);
        assert_eq!(
            parse_all(&null_x, ABC, b"1,x,\"x\"\n").unwrap(),
            vec![row(&[Some("1"), None, Some("x")])]
        );
        // FORCE_NOT_NULL / FORCE_NULL
        let fnn = opts(&[
            ("format", Some("csv")),
            ("force_not_null", Some("b")),
            ("force_null", Some("c")),
        ]);
        assert_eq!(
            parse_all(&fnn, ABC, b"1,,\"\"\n").unwrap(),
            vec![row(&[Some("1"), Some(""), None])]
        );
    }

    #[test]
    fn headers_skip_or_match() {
        let csv_header = opts(&[("format", Some("csv")), ("header", Some("true"))]);
        assert_eq!(
            parse_all(&csv_header, ABC, b"a,b,c\n1,\"\",\n").unwrap(),
            vec![row(&[Some("1"), Some(""), None])]
        );
        let text_header = opts(&[("header", None)]);
        assert_eq!(
            parse_all(&text_header, ABC, b"whatever\n1\t2\t3\n")
                .unwrap()
                .len(),
            1
        );
        let csv_match = opts(&[("format", Some("csv")), ("header", Some("match"))]);
        assert_eq!(
            parse_all(&csv_match, ABC, b"a,b,c\n5,\"\",\n")
                .unwrap()
                .len(),
            1
        );
        let cases: &[(&CopyOptions, &[u8], &str, &str)] = &[
            (
                &csv_match,
                b"a,b,x\n",
                "column name mismatch in header line field 3: got \"x\", expected \"c\"",
                "COPY vt, line 1: \"a,b,x\"",
            ),
            (
                &csv_match,
                b"a,b\n",
                "wrong number of fields in header line: got 2, expected 3",
                "COPY vt, line 1: \"a,b\"",
            ),
            (
                &csv_match,
                b"\"a\",\\N,c\n",
                "column name mismatch in header line field 2: got \"\\N\", expected \"b\"",
                "COPY vt, line 1: \"\"a\",\\N,c\"",
            ),
        ];
        for (o, data, message, context) in cases {
            let (e, ctx) = first_error(o, data);
            assert_eq!(
                (e.code, e.message.as_str(), ctx.as_str()),
                ("22P04", *message, *context)
            );
        }
        let text_match = opts(&[("header", Some("match"))]);
        let (e, ctx) = first_error(&text_match, b"a\t\\N\tc\n");
        assert_eq!(
            e.message,
            "column name mismatch in header line field 2: got null value (\"\\N\"), expected \"b\""
        );
        assert_eq!(ctx, "COPY vt, line 1: \"a\t\\N\tc\"");
    }

    #[test]
    fn default_marker_and_line_numbers() {
        let o = opts(&[("format", Some("csv")), ("default", Some("D"))]);
        let mut p = CopyParser::new(&o, vec!["a".into(), "b".into()]);
        p.feed(b"1,D\n2,\"D\"\n");
        p.finish_input();
        let r = p.next_row().unwrap().unwrap();
        assert!(r.is_default(1) && r.get(1).is_none());
        assert_eq!(p.line_number(), 1);
        let r = p.next_row().unwrap().unwrap();
        assert!(!r.is_default(1));
        assert_eq!(r.get(1), Some("D"));
        assert_eq!(p.line_number(), 2);
        assert!(p.next_row().unwrap().is_none());
        assert_eq!(
            column_context("vt", 1, "a", Some("abc")),
            "COPY vt, line 1, column a: \"abc\""
        );
        assert_eq!(
            column_context("vt", 4, "a", None),
            "COPY vt, line 4, column a: null input"
        );
        let long = "x".repeat(150);
        assert_eq!(clip_for_context(&long), format!("{}...", "x".repeat(100)));
    }

    #[test]
    fn text_and_csv_output_like_postgres() {
        // COPY o TO STDOUT for the values of `o` (one text column), then with CSV options.
        let values: &[Option<&str>] = &[
            Some("plain"),
            Some(""),
            None,
            Some("a,b"),
            Some("q\"q"),
            Some("l\nf"),
            Some("c\rr"),
            Some("\\."),
            Some(" sp "),
            Some("t\tb"),
            Some("back\\s"),
            Some("NULL"),
            Some("x"),
            Some("\u{1}v\u{7f}"),
            Some("\u{b}\u{8}\u{c}"),
        ];
        let text_want = "plain\n\n\\N\na,b\nq\"q\nl\\nf\nc\\rr\n\\\\.\n sp \nt\\tb\nback\\\\s\nNULL\nx\n\u{1}v\u{7f}\n\\v\\b\\f\n";
        let csv_want = "plain\n\"\"\n\n\"a,b\"\n\"q\"\"q\"\n\"l\nf\"\n\"c\rr\"\n\"\\.\"\n sp \nt\tb\nback\\s\nNULL\nx\n\u{1}v\u{7f}\n\u{b}\u{8}\u{c}\n";
        let csv_null_x = "plain\n\n\"x\"";
        let escape_want = "plain\n''\n\n'a,b'\nq\"q\n'l\nf'\n'c\rr'\n'\\\\.'\n";
        let text = opts(&[]);
        let csv = opts(&[("format", Some("csv"))]);
        let mut out = Vec::new();
        for v in values {
            write_text_row(&[*v], &text, &mut out);
        }
        assert_eq!(String::from_utf8(out).unwrap(), text_want);
        let mut out = Vec::new();
        for v in values {
            write_csv_row(&[*v], &csv, &mut out);
        }
        assert_eq!(String::from_utf8(out).unwrap(), csv_want);
        let null_x = opts(&[("format", Some("csv")), ("null", Some("x"))]);
        let mut out = Vec::new();
        for v in [Some("plain"), Some(""), Some("x")] {
            write_csv_row(&[v], &null_x, &mut out);
        }
        assert_eq!(String::from_utf8(out).unwrap().trim_end(), csv_null_x);
        let quote = opts(&[
            ("format", Some("csv")),
            ("quote", Some("'")),
            ("escape", Some("\\")),
        ]);
        let mut out = Vec::new();
        for v in &values[..8] {
            write_csv_row(&[*v], &quote, &mut out);
        }
        assert_eq!(String::from_utf8(out).unwrap(), escape_want);
        // `\.` is only quoted when it is the whole row; FORCE_QUOTE * quotes everything.
        let mut out = Vec::new();
        write_csv_row(&[Some("\\."), Some("\\.")], &csv, &mut out);
        let forced = CopyOptions::from_pairs_for(
            &pairs(&[("format", Some("csv")), ("force_quote", Some("*"))]),
            CopyDirection::To,
        )
        .unwrap();
        write_csv_row(&[Some(" sp "), None, Some("")], &forced, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), "\\.,\\.\n\" sp \",,\"\"\n");
    }

    #[test]
    fn encoder_writes_arrow_rows_and_headers() {
        // COPY "we,ird" TO STDOUT (FORMAT csv, HEADER) → a b,"c,d","q""x"; text header → a b\tc,d\tq"x
        let names = vec!["a b".to_string(), "c,d".to_string(), "q\"x".to_string()];
        let csv_header = CopyOptions::from_pairs_for(
            &pairs(&[("format", Some("csv")), ("header", None)]),
            CopyDirection::To,
        )
        .unwrap();
        let mut out = Vec::new();
        CopyEncoder::new(&csv_header, names.clone()).write_header(&mut out);
        assert_eq!(out, b"a b,\"c,d\",\"q\"\"x\"\n");
        let text_header =
            CopyOptions::from_pairs_for(&pairs(&[("header", None)]), CopyDirection::To).unwrap();
        let mut out = Vec::new();
        CopyEncoder::new(&text_header, names).write_header(&mut out);
        assert_eq!(out, b"a b\tc,d\tq\"x\n");

        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int32Array::from(vec![Some(1), None])),
            Arc::new(StringArray::from(vec![Some("a\tb"), Some("")])),
        ];
        let fmt = TextFormat::default();
        let mut text = CopyEncoder::new(&opts(&[]), vec!["i".into(), "s".into()]);
        let mut out = Vec::new();
        text.write_row(&columns, 0, &fmt, &mut out);
        text.write_row(&columns, 1, &fmt, &mut out);
        assert_eq!(out, b"1\ta\\tb\n\\N\t\n");
        let forced = CopyOptions::from_pairs_for(
            &pairs(&[("format", Some("csv")), ("force_quote", Some("i"))]),
            CopyDirection::To,
        )
        .unwrap();
        let mut csv = CopyEncoder::new(&forced, vec!["i".into(), "s".into()]);
        let batch =
            RecordBatch::try_from_iter(vec![("i", columns[0].clone()), ("s", columns[1].clone())])
                .unwrap();
        let mut out = Vec::new();
        csv.write_batch(&batch, &fmt, &mut out);
        assert_eq!(out, b"\"1\",a\tb\n,\"\"\n");
    }

    #[test]
    fn a_hundred_thousand_rows_stream_through() {
        let mut data = Vec::new();
        for i in 0..100_000 {
            data.extend_from_slice(format!("{i}\tname {i}\t\\N\n").as_bytes());
        }
        let o = opts(&[]);
        let mut parser = CopyParser::new(&o, ABC.iter().map(|c| c.to_string()).collect());
        let mut count = 0;
        for chunk in data.chunks(8192) {
            parser.feed(chunk);
            while let Some(r) = parser.next_row().unwrap() {
                assert_eq!(r.get(0).unwrap().len() + 5, r.get(1).unwrap().len());
                count += 1;
            }
        }
        parser.finish_input();
        assert!(parser.next_row().unwrap().is_none());
        assert_eq!(count, 100_000);
        assert_eq!(parser.line_number(), 100_000);
        assert!(
            parser.buf.len() < 200_000,
            "the buffer is compacted as rows are read"
        );
    }

    /// Throughput of COPY FROM parsing plus conversion to Arrow, for a rough number:
    /// `cargo test -p iolab-engine --lib values::copy_format::tests::throughput -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn throughput() {
        use crate::values::input::ColumnParser;
        use iolab_catalog::PgType;
        let rows = 1_000_000;
        let mut data = Vec::new();
        for i in 0..rows {
            data.extend_from_slice(
                format!(
                    "{i}\tname number {i}\t2024-01-31 12:34:{:02}.789+00\t{}.45\n",
                    i % 60,
                    i % 100_000
                )
                .as_bytes(),
            );
        }
        let types = [
            PgType::Int4,
            PgType::Text,
            PgType::Timestamptz,
            PgType::Numeric {
                precision: 10,
                scale: 2,
            },
        ];
        let fmt = TextFormat::default();
        let started = std::time::Instant::now();
        let mut parser = CopyParser::new(
            &opts(&[]),
            vec!["a".into(), "b".into(), "c".into(), "d".into()],
        );
        let mut columns: Vec<ColumnParser> = types
            .iter()
            .map(|t| ColumnParser::with_capacity(*t, 8192))
            .collect();
        let mut count = 0;
        for chunk in data.chunks(65536) {
            parser.feed(chunk);
            while let Some(r) = parser.next_row().unwrap() {
                if std::env::var_os("PARSE_ONLY").is_none() {
                    for (i, c) in columns.iter_mut().enumerate() {
                        c.append(r.get(i), &fmt).unwrap();
                    }
                }
                count += 1;
                if columns[0].len() == 8192 {
                    columns.iter_mut().for_each(|c| drop(c.finish()));
                }
            }
        }
        parser.finish_input();
        assert!(parser.next_row().unwrap().is_none());
        let secs = started.elapsed().as_secs_f64();
        assert_eq!(count, rows);
        println!(
            "{rows} rows, {:.1} MB in {secs:.2}s: {:.0} rows/s, {:.1} MB/s",
            data.len() as f64 / 1e6,
            rows as f64 / secs,
            data.len() as f64 / 1e6 / secs
        );
    }
}
