//! PostgreSQL's `format(formatstr text [, formatarg "any" [, ...]])` and the quoting
//! functions `quote_ident(text)`, `quote_literal(anyelement)`, `quote_nullable(anyelement)`.
//!
//! ## Values as text
//!
//! Every argument is first turned into the text PostgreSQL's output function for its type
//! would write — the text a client sees for it on the wire (`t`/`f` for booleans, `1e+20`
//! for a float8, `2024-01-31` for a date, `{1,2,NULL}` for an array): [`text_value`] with
//! the session's text settings (TimeZone, extra_float_digits, DateStyle), not an Arrow cast
//! to Utf8 (which writes `true` and `1e20`). One exception, as in PostgreSQL:
//! `quote_literal(anyelement)` and `quote_nullable(anyelement)` cast their argument to
//! `text`, and PostgreSQL's boolean-to-text cast writes `true`/`false`, not `t`/`f`.
//!
//! ## The format string
//!
//! [`format_text`] copies the format string to the result and replaces each conversion
//! specification, read left to right:
//!
//! ```text
//!   %%                       a single %
//!   %[position$][flags][width]type
//!       position  digits then $: the argument to format (1 = the first after formatstr)
//!       flags     any number of -: pad on the right instead of the left
//!       width     digits, or * (the next argument is the width), or *position$
//!       type      s: the value as text, NULL as nothing
//!                 I: quote_ident(value); NULL is an error
//!                 L: quote_literal(value); NULL as NULL
//! ```
//!
//! Digits right after `%` are a position when a `$` follows them and a width otherwise (a
//! width read that way takes no flags after it: `%5-s` is the type `-`). Padding counts
//! characters, not bytes; a negative width from an argument pads on the right, as `-` does;
//! a NULL width argument means no width. A width argument is read as PostgreSQL reads an
//! `integer` from its text (so `'3'` and `3::bigint` work and `true` is an error).
//!
//! Arguments without a position are taken in turn, continuing after the last one used,
//! whether that one was named by position or taken in turn, and a width from an argument
//! comes before the value:
//!
//! ```text
//!   format('%s %1$s %s', 'a', 'b')          → a a b      (%1$s names 1, so the next is 2)
//!   format('|%*s|%-*s|', 3, 'x', 3, 'y')    → |  x|y  |  (width, value, width, value)
//!   format('|%3$*2$s|', 'a', 4, 'z')        → |   z|     (width = argument 2, value = 3)
//! ```
//!
//! Each specification is read in full (up to and including its type) before any argument is
//! fetched, and the specifications run one after another, so errors come in PostgreSQL's
//! order: `format('%s %x')` fails with "too few arguments", `format('%x')` with the type.
//! Unused arguments are allowed. A NULL format string gives NULL.
//!
//! The result is bounded as PostgreSQL bounds a string it builds: 1 GiB - 1 bytes
//! ([`MAX_TEXT_BYTES`]); padding beyond it is an error, not an allocation.
//!
//! ## Identifiers
//!
//! `%I` and `quote_ident` leave an identifier bare when it is a lower-case ASCII letter or
//! underscore followed by lower-case letters, digits and underscores, and is not one of
//! PostgreSQL 18's keywords other than the unreserved ones (reserved, column-name and
//! type/function-name keywords: `select`, `user`, `analyze`, `time`, `int`, `between` are
//! quoted; the unreserved `name`, `set`, `value`, `data` are not). The list is
//! PostgreSQL's own (`iolab_settings::quote_identifier`, from `pg_get_keywords()`), not
//! sqlparser's, whose keywords are a different set. `quote_all_identifiers` is not
//! supported (iolab has no such setting).

// The parser's errors are PostgreSQL errors, raised at most once per call.
#![allow(clippy::result_large_err)]

use datafusion::arrow::array::{Array, ArrayRef};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use iolab_catalog::{sqlstate, PgError};
use iolab_engine::values::output_text::text_value;
use iolab_engine::values::TextFormat;

use super::batch::V;
use super::functions::{def, per_row, pg, Def};
use super::snapshot::quote_ident;

/// The longest text PostgreSQL builds (`MaxAllocSize - 1`).
pub const MAX_TEXT_BYTES: usize = 0x3fff_ffff;

/// PostgreSQL caps a function's arguments at 100; `format` takes the format string and
/// up to 99 values.
const MAX_ARGS: usize = 100;

/// The functions of this module, for `functions::definitions`.
pub(super) fn functions() -> Vec<Def> {
    vec![
        def("format", 1..=MAX_ARGS, DataType::Utf8, |ctx, args, rows| {
            let fmt = crate::session::text_format_for(&ctx.settings.lock());
            per_row(rows, |row| {
                let Some(format) = text_value(args[0].as_ref(), row, &fmt) else {
                    return Ok(V::Null);
                };
                let values: Vec<Option<String>> = args[1..]
                    .iter()
                    .map(|a| text_value(a.as_ref(), row, &fmt))
                    .collect();
                let values: Vec<Option<&str>> = values.iter().map(Option::as_deref).collect();
                format_text(&format, &values).map(V::Text).map_err(pg)
            })
        }),
        def("quote_ident", 1..=1, DataType::Utf8, |ctx, args, rows| {
            let fmt = crate::session::text_format_for(&ctx.settings.lock());
            per_row(rows, |row| {
                Ok(V::opt_text(
                    text_value(args[0].as_ref(), row, &fmt).map(|s| quote_ident(&s)),
                ))
            })
        }),
        def("quote_literal", 1..=1, DataType::Utf8, |ctx, args, rows| {
            let fmt = crate::session::text_format_for(&ctx.settings.lock());
            per_row(rows, |row| {
                Ok(V::opt_text(
                    cast_to_text(&args[0], row, &fmt).map(|s| quote_literal(&s)),
                ))
            })
        }),
        def(
            "quote_nullable",
            1..=1,
            DataType::Utf8,
            |ctx, args, rows| {
                let fmt = crate::session::text_format_for(&ctx.settings.lock());
                per_row(rows, |row| {
                    Ok(V::Text(
                        cast_to_text(&args[0], row, &fmt)
                            .map_or_else(|| "NULL".to_string(), |s| quote_literal(&s)),
                    ))
                })
            },
        ),
    ]
}

/// `value::text` as PostgreSQL casts: the output function's text, except booleans, whose
/// cast to text writes `true`/`false`.
fn cast_to_text(a: &ArrayRef, row: usize, fmt: &TextFormat) -> Option<String> {
    if a.is_null(row) {
        return None;
    }
    match a.data_type() {
        DataType::Boolean => {
            let b = text_value(a.as_ref(), row, fmt)?;
            Some(if b == "t" { "true" } else { "false" }.to_string())
        }
        _ => text_value(a.as_ref(), row, fmt),
    }
}

/// `quote_literal`: in single quotes, inner quotes doubled; when the text has a backslash,
/// also doubled backslashes and the `E` prefix, so the literal reads back the same whatever
/// `standard_conforming_strings` is.
pub fn quote_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 3);
    if s.contains('\\') {
        out.push('E');
    }
    out.push('\'');
    for c in s.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

// ---------------------------------------------------------------------------------------
// The format string
// ---------------------------------------------------------------------------------------

/// What a specification's type letter asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Conversion {
    /// `%s`
    Text,
    /// `%I`
    Identifier,
    /// `%L`
    Literal,
}

/// Where a specification's width comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Width {
    None,
    /// Digits in the format string.
    Fixed(u32),
    /// `*` (the next argument) or `*n$` (argument `n`, 1-based).
    FromArgument(Option<usize>),
}

/// One conversion specification, `%…` up to its type letter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Spec {
    /// `n$`: the argument to format, 1-based.
    position: Option<usize>,
    /// `-`: pad on the right.
    left: bool,
    width: Width,
    conversion: Conversion,
}

fn hint_percent(e: PgError) -> PgError {
    e.with_hint("For a single \"%\" use \"%%\".")
}

fn unterminated() -> PgError {
    hint_percent(PgError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        "unterminated format() type specifier",
    ))
}

fn too_few_arguments() -> PgError {
    PgError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        "too few arguments for format()",
    )
}

fn argument_zero() -> PgError {
    PgError::new(
        sqlstate::INVALID_PARAMETER_VALUE,
        "format specifies argument 0, but arguments are numbered from 1",
    )
}

fn out_of_range() -> PgError {
    PgError::new(
        sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
        "number is out of range",
    )
}

/// A cursor over the characters of one specification.
struct Reader<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
}

impl Reader<'_> {
    /// The next character; the string ending inside a specification is an error.
    fn peek(&mut self) -> Result<char, PgError> {
        self.chars.peek().map(|&(_, c)| c).ok_or_else(unterminated)
    }

    fn bump(&mut self) {
        self.chars.next();
    }

    /// Decimal digits (at least one, the caller has seen it) as a number up to `i32::MAX`.
    fn number(&mut self) -> Result<u32, PgError> {
        let mut n: u32 = 0;
        while let Some(d) = self.peek()?.to_digit(10) {
            n = n
                .checked_mul(10)
                .and_then(|n| n.checked_add(d))
                .filter(|&n| n <= i32::MAX as u32)
                .ok_or_else(out_of_range)?;
            self.bump();
        }
        Ok(n)
    }

    /// An argument position `n`, already read, checked to be 1 or more.
    fn position(n: u32) -> Result<usize, PgError> {
        if n == 0 {
            Err(argument_zero())
        } else {
            Ok(n as usize)
        }
    }

    /// One specification, the reader just after its `%` (which is not followed by `%`).
    fn spec(&mut self) -> Result<Spec, PgError> {
        let mut spec = Spec {
            position: None,
            left: false,
            width: Width::None,
            conversion: Conversion::Text,
        };
        let mut flags_and_width = true;
        if self.peek()?.is_ascii_digit() {
            let n = self.number()?;
            if self.peek()? == '$' {
                self.bump();
                spec.position = Some(Self::position(n)?);
            } else {
                // A bare width: the type letter must follow.
                spec.width = Width::Fixed(n);
                flags_and_width = false;
            }
        }
        if flags_and_width {
            while self.peek()? == '-' {
                spec.left = true;
                self.bump();
            }
            let c = self.peek()?;
            if c.is_ascii_digit() {
                spec.width = Width::Fixed(self.number()?);
            } else if c == '*' {
                self.bump();
                spec.width = Width::FromArgument(None);
                if self.peek()?.is_ascii_digit() {
                    let n = self.number()?;
                    if self.peek()? != '$' {
                        return Err(PgError::new(
                            sqlstate::INVALID_PARAMETER_VALUE,
                            "width argument position must be ended by \"$\"",
                        ));
                    }
                    self.bump();
                    spec.width = Width::FromArgument(Some(Self::position(n)?));
                }
            }
        }
        let c = self.peek()?;
        self.bump();
        spec.conversion = match c {
            's' => Conversion::Text,
            'I' => Conversion::Identifier,
            'L' => Conversion::Literal,
            other => {
                return Err(hint_percent(PgError::new(
                    sqlstate::INVALID_PARAMETER_VALUE,
                    format!("unrecognized format() type specifier \"{other}\""),
                )))
            }
        };
        Ok(spec)
    }
}

/// `format(format, args…)` for one row: `args` are the arguments after the format string
/// as text (`None` for NULL).
pub fn format_text(format: &str, args: &[Option<&str>]) -> Result<String, PgError> {
    let mut out = String::with_capacity(format.len());
    // 0-based index of the argument a specification without a position takes.
    let mut next = 0usize;
    let mut reader = Reader {
        chars: format.char_indices().peekable(),
    };
    while let Some((_, c)) = reader.chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if reader.peek()? == '%' {
            reader.bump();
            out.push('%');
            continue;
        }
        let spec = reader.spec()?;
        let mut argument = |position: Option<usize>| -> Result<Option<&str>, PgError> {
            let index = position.map_or(next, |p| p - 1);
            let value = args.get(index).ok_or_else(too_few_arguments)?;
            next = index + 1;
            Ok(*value)
        };
        let (width, mut left) = match spec.width {
            Width::None => (0, false),
            Width::Fixed(w) => (w, false),
            Width::FromArgument(position) => match argument(position)? {
                None => (0, false),
                Some(text) => {
                    let w = parse_int4(text)?;
                    if w == i32::MIN {
                        return Err(out_of_range());
                    }
                    (w.unsigned_abs(), w < 0)
                }
            },
        };
        left |= spec.left;
        let value = argument(spec.position)?;
        let converted = match (spec.conversion, value) {
            (Conversion::Text, v) => v.unwrap_or("").to_string(),
            (Conversion::Identifier, Some(v)) => quote_ident(v),
            (Conversion::Identifier, None) => {
                return Err(PgError::new(
                    sqlstate::NULL_VALUE_NOT_ALLOWED,
                    "null values cannot be formatted as an SQL identifier",
                ))
            }
            (Conversion::Literal, Some(v)) => quote_literal(v),
            (Conversion::Literal, None) => "NULL".to_string(),
        };
        push_padded(&mut out, &converted, width as usize, left)?;
    }
    Ok(out)
}

/// Appends `value` padded with spaces to `width` characters, on the right when `left`.
fn push_padded(out: &mut String, value: &str, width: usize, left: bool) -> Result<(), PgError> {
    let pad = width.saturating_sub(value.chars().count());
    if left {
        reserve(out, value.len())?;
        out.push_str(value);
    }
    reserve(out, pad)?;
    out.extend(std::iter::repeat_n(' ', pad));
    if !left {
        reserve(out, value.len())?;
        out.push_str(value);
    }
    Ok(())
}

/// Fails as PostgreSQL does when `more` bytes would take `out` past [`MAX_TEXT_BYTES`].
fn reserve(out: &str, more: usize) -> Result<(), PgError> {
    if more >= MAX_TEXT_BYTES - out.len() {
        return Err(PgError::new(
            sqlstate::PROGRAM_LIMIT_EXCEEDED,
            format!("string buffer exceeds maximum allowed length ({MAX_TEXT_BYTES} bytes)"),
        )
        .with_detail(format!(
            "Cannot enlarge string buffer containing {} bytes by {more} more bytes.",
            out.len()
        )));
    }
    Ok(())
}

/// A width argument's text read as PostgreSQL reads an `integer`: blanks around, an
/// optional sign, decimal digits or `0x`/`0o`/`0b` and their digits, single underscores
/// between digits.
fn parse_int4(text: &str) -> Result<i32, PgError> {
    let invalid = || {
        PgError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("invalid input syntax for type integer: \"{text}\""),
        )
    };
    let blank = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c');
    let s = text.trim_matches(blank);
    let (negative, s) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (radix, digits) = match s.get(..2) {
        Some("0x" | "0X") => (16, &s[2..]),
        Some("0o" | "0O") => (8, &s[2..]),
        Some("0b" | "0B") => (2, &s[2..]),
        _ => (10, s),
    };
    // The magnitude, up to 2^31 (i32::MIN's).
    let mut magnitude: i64 = 0;
    let mut any_digit = false;
    // An underscore may follow a digit or a radix prefix (`0x_1F`), and a digit must follow it.
    let mut underscore_allowed = radix != 10;
    let mut chars = digits.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '_' {
            let next_is_digit = chars.peek().is_some_and(|n| n.is_digit(radix));
            if !underscore_allowed || !next_is_digit {
                return Err(invalid());
            }
            underscore_allowed = false;
            continue;
        }
        let d = c.to_digit(radix).ok_or_else(invalid)?;
        magnitude = magnitude * radix as i64 + d as i64;
        if magnitude > 1 << 31 {
            return Err(PgError::new(
                sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
                format!("value \"{text}\" is out of range for type integer"),
            ));
        }
        any_digit = true;
        underscore_allowed = true;
    }
    if !any_digit {
        return Err(invalid());
    }
    let value = if negative { -magnitude } else { magnitude };
    i32::try_from(value).map_err(|_| {
        PgError::new(
            sqlstate::NUMERIC_VALUE_OUT_OF_RANGE,
            format!("value \"{text}\" is out of range for type integer"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(format: &str, args: &[Option<&str>]) -> String {
        format_text(format, args).unwrap_or_else(|e| panic!("{format}: {}", e.message))
    }

    /// `(SQLSTATE, message)` of the error `format` fails with.
    fn err(format: &str, args: &[Option<&str>]) -> (&'static str, String) {
        match format_text(format, args) {
            Ok(s) => panic!("{format}: expected an error, got {s:?}"),
            Err(e) => (e.code, e.message),
        }
    }

    #[allow(non_snake_case)]
    fn S(s: &str) -> Option<&str> {
        Some(s)
    }

    #[test]
    fn formats_like_postgres() {
        // Each expectation is `SELECT format(…)` on PostgreSQL 18 with the same arguments
        // (given there as text or as the type whose output the text is).
        for (format, args, expected) in [
            ("Hello %s", vec![S("World")], "Hello World"),
            ("%s %s", vec![None, S("x")], " x"),
            ("", vec![], ""),
            ("no args", vec![], "no args"),
            ("%%", vec![], "%"),
            ("%% %s %%", vec![S("5")], "% 5 %"),
            ("%s", vec![S("1"), S("2")], "1"),
            ("%I", vec![S("Foo bar")], "\"Foo bar\""),
            ("%I", vec![S("select")], "\"select\""),
            ("%I", vec![S("abc")], "abc"),
            ("%I", vec![S("a\"b")], "\"a\"\"b\""),
            ("%I", vec![S("")], "\"\""),
            ("%I", vec![S("1")], "\"1\""),
            ("%I", vec![S("user")], "\"user\""),
            ("%I", vec![S("name")], "name"),
            ("%I", vec![S("table")], "\"table\""),
            ("%I", vec![S("int")], "\"int\""),
            ("%I", vec![S("between")], "\"between\""),
            ("%I", vec![S("a1_$")], "\"a1_$\""),
            ("%I", vec![S("é")], "\"é\""),
            ("%I", vec![S("_x")], "_x"),
            ("%I", vec![S("SET")], "\"SET\""),
            ("%L", vec![S("it's")], "'it''s'"),
            ("%L", vec![S("a\\b")], "E'a\\\\b'"),
            ("%L", vec![S("\\")], "E'\\\\'"),
            ("%L", vec![S("O'Reilly\\x")], "E'O''Reilly\\\\x'"),
            ("%L", vec![S("a\nb")], "'a\nb'"),
            ("%L", vec![None], "NULL"),
            ("%L", vec![S("42")], "'42'"),
            ("%L", vec![S("t")], "'t'"),
            ("%L", vec![S("{\"a b\",c}")], "'{\"a b\",c}'"),
            ("%s", vec![None], ""),
            ("|%10s|", vec![S("abc")], "|       abc|"),
            ("|%-10s|", vec![S("abc")], "|abc       |"),
            ("|%*s|", vec![S("10"), S("abc")], "|       abc|"),
            ("|%-*s|", vec![S("10"), S("abc")], "|abc       |"),
            ("|%*s|", vec![S("-10"), S("abc")], "|abc       |"),
            ("|%-*s|", vec![S("-10"), S("abc")], "|abc       |"),
            ("|%*s|", vec![None, S("abc")], "|abc|"),
            ("|%2s|", vec![S("abcdef")], "|abcdef|"),
            ("|%10L|", vec![S("x")], "|       'x'|"),
            ("|%-10I|", vec![S("X")], "|\"X\"       |"),
            ("|%10s|", vec![None], "|          |"),
            ("|%10L|", vec![None], "|      NULL|"),
            ("%-*s|", vec![S("3"), None], "   |"),
            ("%1$s %1$s", vec![S("a")], "a a"),
            ("%2$s %1$s", vec![S("a"), S("b")], "b a"),
            ("%1$s %s", vec![S("a"), S("b")], "a b"),
            ("%2$s %s", vec![S("a"), S("b"), S("c")], "b c"),
            ("%s %1$s %s", vec![S("a"), S("b")], "a a b"),
            ("|%1$*2$s|", vec![S("abc"), S("6")], "|   abc|"),
            ("|%3$*2$s|", vec![S("abc"), S("6"), S("z")], "|     z|"),
            ("%1$-*s", vec![S("5")], "5    "),
            ("%1$*s", vec![S("5"), S("a")], "    5"),
            ("%*1$s", vec![S("5"), S("a")], "    a"),
            ("%*1$s", vec![None, S("a")], "a"),
            ("|%--5s|", vec![S("ab")], "|ab   |"),
            ("|%05s|", vec![S("ab")], "|   ab|"),
            ("|%0s|", vec![S("a")], "|a|"),
            ("|%1$-5s|", vec![S("ab")], "|ab   |"),
            ("%s %s %s", vec![S("1"), S("2"), S("3.5")], "1 2 3.5"),
            ("%s, %s", vec![S("ä"), S("ö")], "ä, ö"),
            ("|%5s|", vec![S("äö")], "|   äö|"),
            ("%*s", vec![S(" 3 "), S("a")], "  a"),
            ("%*s", vec![S("+3"), S("a")], "  a"),
            ("%*s", vec![S("0x10"), S("a")], "               a"),
            ("%*s", vec![S("1_0"), S("a")], "         a"),
            ("%*s", vec![S("-0"), S("a")], "a"),
            ("%-*s|", vec![S("-3"), S("a")], "a  |"),
            (
                "SET effective_io_concurrency = %s",
                vec![S("16")],
                "SET effective_io_concurrency = 16",
            ),
            (
                "CREATE TABLE %I (a int)",
                vec![S("My Table")],
                "CREATE TABLE \"My Table\" (a int)",
            ),
        ] {
            assert_eq!(f(format, &args), expected, "format({format:?}, {args:?})");
        }
    }

    #[test]
    fn errors_like_postgres() {
        const PARAM: &str = "22023";
        let too_few = (PARAM, "too few arguments for format()".to_string());
        let unterminated = (PARAM, "unterminated format() type specifier".to_string());
        let unrecognized = |c: &str| {
            (
                PARAM,
                format!("unrecognized format() type specifier \"{c}\""),
            )
        };
        let zero = (
            PARAM,
            "format specifies argument 0, but arguments are numbered from 1".to_string(),
        );
        let range = ("22003", "number is out of range".to_string());
        let syntax = |t: &str| {
            (
                "22P02",
                format!("invalid input syntax for type integer: \"{t}\""),
            )
        };
        // Each error is PostgreSQL 18's for the same call.
        for (format, args, expected) in [
            ("%s %s", vec![S("1")], too_few.clone()),
            ("%s", vec![], too_few.clone()),
            ("%2$s", vec![S("1")], too_few.clone()),
            ("%3$s", vec![S("1"), S("2")], too_few.clone()),
            ("%1$s %3$s", vec![S("1")], too_few.clone()),
            ("%2147483647$s", vec![S("a")], too_few.clone()),
            ("%*s", vec![S("5")], too_few.clone()),
            ("%-*s", vec![S("5")], too_few.clone()),
            ("|%*2$s|", vec![S("abc"), S("6")], too_few.clone()),
            ("|%-*2$s|", vec![S("abc"), S("6")], too_few.clone()),
            ("%x", vec![S("1")], unrecognized("x")),
            ("%x", vec![], unrecognized("x")),
            ("%*x", vec![], unrecognized("x")),
            ("%1$s %2$x", vec![S("1")], unrecognized("x")),
            ("% s", vec![S("1")], unrecognized(" ")),
            ("%1x", vec![S("1")], unrecognized("x")),
            ("%S", vec![S("1")], unrecognized("S")),
            ("%i", vec![S("1")], unrecognized("i")),
            ("%$s", vec![S("1")], unrecognized("$")),
            ("%1$1$s", vec![S("1")], unrecognized("$")),
            ("%-1$s", vec![S("5"), S("a")], unrecognized("$")),
            ("%*1$1s", vec![S("5"), S("a")], unrecognized("1")),
            ("%5-s", vec![S("1")], unrecognized("-")),
            ("%é", vec![S("1")], unrecognized("é")),
            ("abc %", vec![], unterminated.clone()),
            ("%s %", vec![S("1")], unterminated.clone()),
            ("%1", vec![], unterminated.clone()),
            ("%1$", vec![], unterminated.clone()),
            ("%5$", vec![S("1")], unterminated.clone()),
            ("%-", vec![S("1")], unterminated.clone()),
            ("%-5", vec![S("1")], unterminated.clone()),
            ("%*", vec![S("1")], unterminated.clone()),
            ("%*1", vec![S("1")], unterminated.clone()),
            ("%*1$", vec![S("1")], unterminated.clone()),
            ("%0$s", vec![S("1")], zero.clone()),
            ("|%00$s|", vec![S("a")], zero.clone()),
            ("%*0$s", vec![S("1")], zero.clone()),
            ("%2147483648s", vec![S("a")], range.clone()),
            ("%2147483648$s", vec![S("a")], range.clone()),
            ("%99999999999999999999s", vec![S("a")], range.clone()),
            ("%99999999999999999999", vec![], range.clone()),
            ("%*s", vec![S("-2147483648"), S("a")], range.clone()),
            ("%*s", vec![S("x"), S("a")], syntax("x")),
            ("%*s", vec![S("x")], syntax("x")),
            ("%*s", vec![S("1.5"), S("a")], syntax("1.5")),
            ("%*s", vec![S("t"), S("a")], syntax("t")),
            ("%*s", vec![S(""), S("a")], syntax("")),
            ("%1$s %1$*s", vec![S("3"), S("a")], syntax("a")),
            (
                "%*s",
                vec![S("3000000000"), S("a")],
                (
                    "22003",
                    "value \"3000000000\" is out of range for type integer".to_string(),
                ),
            ),
            (
                "%I",
                vec![None],
                (
                    "22004",
                    "null values cannot be formatted as an SQL identifier".to_string(),
                ),
            ),
            (
                "%*0s",
                vec![S("1")],
                (
                    PARAM,
                    "width argument position must be ended by \"$\"".to_string(),
                ),
            ),
            (
                "%*1s",
                vec![S("1")],
                (
                    PARAM,
                    "width argument position must be ended by \"$\"".to_string(),
                ),
            ),
        ] {
            assert_eq!(err(format, &args), expected, "format({format:?}, {args:?})");
        }
    }

    #[test]
    fn format_errors_carry_postgres_hints() {
        let hint = |format: &str| format_text(format, &[S("1")]).unwrap_err().hint;
        let percent = Some("For a single \"%\" use \"%%\".".to_string());
        assert_eq!(hint("%x"), percent);
        assert_eq!(hint("%"), percent);
        assert_eq!(hint("%s %s"), None);
        assert_eq!(hint("%0$s"), None);
    }

    #[test]
    fn huge_widths_fail_instead_of_allocating() {
        // PostgreSQL 18: format('|%*s|', 2147483647, 'a') and
        // format('%*s', -2147483647, 'a').
        let e = format_text("|%*s|", &[S("2147483647"), S("a")]).unwrap_err();
        assert_eq!(e.code, "54000");
        assert_eq!(
            e.message,
            "string buffer exceeds maximum allowed length (1073741823 bytes)"
        );
        assert_eq!(
            e.detail.as_deref(),
            Some("Cannot enlarge string buffer containing 1 bytes by 2147483646 more bytes.")
        );
        let e = format_text("%*s", &[S("-2147483647"), S("a")]).unwrap_err();
        assert_eq!(
            e.detail.as_deref(),
            Some("Cannot enlarge string buffer containing 1 bytes by 2147483646 more bytes.")
        );
    }

    #[test]
    fn literals_quote_like_postgres() {
        // quote_literal() on PostgreSQL 18.
        assert_eq!(quote_literal("it's"), "'it''s'");
        assert_eq!(quote_literal("a\\b"), "E'a\\\\b'");
        assert_eq!(quote_literal("a\\b'c"), "E'a\\\\b''c'");
        assert_eq!(quote_literal(""), "''");
        assert_eq!(quote_literal("ä"), "'ä'");
    }

    #[test]
    fn width_arguments_read_as_integers() {
        assert_eq!(parse_int4("  42\n").unwrap(), 42);
        assert_eq!(parse_int4("-2147483648").unwrap(), i32::MIN);
        assert_eq!(parse_int4("2147483647").unwrap(), i32::MAX);
        assert_eq!(parse_int4("0b101").unwrap(), 5);
        assert_eq!(parse_int4("-0o17").unwrap(), -15);
        assert!(parse_int4("2147483648").is_err());
        assert!(parse_int4("1__0").is_err());
        assert!(parse_int4("_1").is_err());
        assert!(parse_int4("1_").is_err());
        assert!(parse_int4("0x").is_err());
        assert_eq!(parse_int4("0x_1").unwrap(), 1);
        assert_eq!(parse_int4(" +0x1F ").unwrap(), 31);
        assert!(parse_int4("- 1").is_err());
    }
}
