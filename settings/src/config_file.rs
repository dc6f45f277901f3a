//! Reading `iolab.conf` (postgresql.conf syntax) and the `-c name=value` / `--name=value`
//! options of the command line and of the startup packet's `options` parameter.
//!
//! The file is a sequence of lines `name [=] value [# comment]`. Tokens, longest match
//! first, ties going to the earlier kind (PostgreSQL's `guc-file.l`):
//!
//! | token            | shape                                                     |
//! |------------------|-----------------------------------------------------------|
//! | identifier       | letter (`A-Za-z_`, or any non-ASCII byte) then letters/digits |
//! | qualified name   | identifier `.` identifier                                 |
//! | quoted string    | `'…'` with `''` or backslash escapes inside, one line     |
//! | unquoted string  | letter then letters, digits, `- . _ : /`                  |
//! | integer          | `[+-]` digits or `0x` hex digits, then unit letters (`16MB`) |
//! | real             | `[+-]` digits `.` digits, optional exponent (no unit!)   |
//!
//! A name must be an identifier or qualified name; a value any token but a qualified name or
//! `=`. Anything else is PostgreSQL's `syntax error in file "…" line N, near token "…"`
//! (or `near end of line`). `include` directives are not supported. One deliberate difference:
//! when the file ends in the middle of a line PostgreSQL reports `line 0` (one less than the
//! line it is on); iolab reports the line it is on.

use crate::error::{sqlstate, SettingError};

/// One `name = value` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigFileEntry {
    /// As written; lookups ignore case.
    pub name: String,
    /// With quotes removed and escapes resolved.
    pub value: String,
    /// 1-based line number.
    pub line: u32,
}

/// Reads a configuration file's text. `filename` is only used in error messages. Stops at the
/// first syntax error.
pub fn parse_config_file(text: &str, filename: &str) -> Result<Vec<ConfigFileEntry>, SettingError> {
    let mut lexer = Lexer {
        bytes: text.as_bytes(),
        text,
        at: 0,
        line: 1,
    };
    let mut entries = Vec::new();
    let syntax_error = |token: &Token| {
        let message = match token.kind {
            TokenKind::EndOfLine | TokenKind::EndOfFile => {
                format!(
                    "syntax error in file \"{filename}\" line {}, near end of line",
                    token.line
                )
            }
            _ => format!(
                "syntax error in file \"{filename}\" line {}, near token \"{}\"",
                token.line, token.text
            ),
        };
        SettingError::new(sqlstate::SYNTAX_ERROR, message)
    };
    loop {
        let name = lexer.next_token();
        match name.kind {
            TokenKind::EndOfFile => return Ok(entries),
            TokenKind::EndOfLine => continue,
            TokenKind::Identifier | TokenKind::QualifiedName => {}
            _ => return Err(syntax_error(&name)),
        }
        let mut value = lexer.next_token();
        if value.kind == TokenKind::Equals {
            value = lexer.next_token();
        }
        let value_text = match value.kind {
            TokenKind::QuotedString => unescape_quoted(value.text),
            TokenKind::Identifier
            | TokenKind::UnquotedString
            | TokenKind::Integer
            | TokenKind::Real => value.text.to_string(),
            _ => return Err(syntax_error(&value)),
        };
        let end = lexer.next_token();
        if !matches!(end.kind, TokenKind::EndOfLine | TokenKind::EndOfFile) {
            return Err(syntax_error(&end));
        }
        if ["include", "include_dir", "include_if_exists"]
            .iter()
            .any(|d| d.eq_ignore_ascii_case(name.text))
        {
            return Err(SettingError::new(
                sqlstate::FEATURE_NOT_SUPPORTED,
                format!(
                    "\"{}\" directives are not supported, in file \"{filename}\" line {}",
                    name.text, name.line
                ),
            ));
        }
        entries.push(ConfigFileEntry {
            name: name.text.to_string(),
            value: value_text,
            line: name.line,
        });
        if end.kind == TokenKind::EndOfFile {
            return Ok(entries);
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TokenKind {
    EndOfLine,
    EndOfFile,
    Equals,
    Identifier,
    QualifiedName,
    QuotedString,
    UnquotedString,
    Integer,
    Real,
    /// A character no rule accepts.
    Stray,
}

struct Token<'a> {
    kind: TokenKind,
    text: &'a str,
    line: u32,
}

struct Lexer<'a> {
    bytes: &'a [u8],
    text: &'a str,
    at: usize,
    line: u32,
}

fn is_letter(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || byte >= 0x80
}

fn is_letter_or_digit(byte: u8) -> bool {
    is_letter(byte) || byte.is_ascii_digit()
}

impl<'a> Lexer<'a> {
    fn next_token(&mut self) -> Token<'a> {
        loop {
            while matches!(self.bytes.get(self.at), Some(b' ' | b'\t' | b'\r')) {
                self.at += 1;
            }
            let line = self.line;
            let Some(&byte) = self.bytes.get(self.at) else {
                return Token {
                    kind: TokenKind::EndOfFile,
                    text: "",
                    line,
                };
            };
            match byte {
                b'#' => {
                    while self.bytes.get(self.at).is_some_and(|b| *b != b'\n') {
                        self.at += 1;
                    }
                    continue;
                }
                b'\n' => {
                    self.at += 1;
                    self.line += 1;
                    return Token {
                        kind: TokenKind::EndOfLine,
                        text: "\n",
                        line,
                    };
                }
                _ => {}
            }
            // Longest match wins; on a tie the kind listed first wins.
            let candidates = [
                (TokenKind::Identifier, self.identifier_len(self.at)),
                (TokenKind::QualifiedName, self.qualified_name_len()),
                (TokenKind::QuotedString, self.quoted_string_len()),
                (TokenKind::UnquotedString, self.unquoted_string_len()),
                (TokenKind::Integer, self.integer_len()),
                (TokenKind::Real, self.real_len()),
                (TokenKind::Equals, usize::from(byte == b'=')),
            ];
            let (mut kind, mut len) = (TokenKind::Stray, 0);
            for (candidate_kind, candidate_len) in candidates {
                if candidate_len > len {
                    (kind, len) = (candidate_kind, candidate_len);
                }
            }
            if len == 0 {
                len = self.text[self.at..]
                    .chars()
                    .next()
                    .map_or(1, char::len_utf8);
            }
            let start = self.at;
            self.at += len;
            return Token {
                kind,
                text: &self.text[start..self.at],
                line,
            };
        }
    }

    fn identifier_len(&self, from: usize) -> usize {
        match self.bytes.get(from) {
            Some(b) if is_letter(*b) => {
                1 + self.bytes[from + 1..]
                    .iter()
                    .take_while(|b| is_letter_or_digit(**b))
                    .count()
            }
            _ => 0,
        }
    }

    fn qualified_name_len(&self) -> usize {
        let first = self.identifier_len(self.at);
        if first == 0 || self.bytes.get(self.at + first) != Some(&b'.') {
            return 0;
        }
        match self.identifier_len(self.at + first + 1) {
            0 => 0,
            second => first + 1 + second,
        }
    }

    fn unquoted_string_len(&self) -> usize {
        match self.bytes.get(self.at) {
            Some(b) if is_letter(*b) => {
                1 + self.bytes[self.at + 1..]
                    .iter()
                    .take_while(|b| {
                        is_letter_or_digit(**b) || matches!(b, b'-' | b'.' | b'_' | b':' | b'/')
                    })
                    .count()
            }
            _ => 0,
        }
    }

    /// `'…'`: the longest prefix that is a complete quoted string, or 0.
    fn quoted_string_len(&self) -> usize {
        if self.bytes.get(self.at) != Some(&b'\'') {
            return 0;
        }
        let mut longest_complete = 0;
        let mut i = self.at + 1;
        while let Some(&byte) = self.bytes.get(i) {
            match byte {
                b'\'' => {
                    longest_complete = i + 1 - self.at;
                    if self.bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                    } else {
                        break;
                    }
                }
                b'\\' if self.bytes.get(i + 1).is_some_and(|b| *b != b'\n') => i += 2,
                b'\\' | b'\n' => break,
                _ => i += 1,
            }
        }
        longest_complete
    }

    fn sign_len(&self) -> usize {
        usize::from(matches!(self.bytes.get(self.at), Some(b'+' | b'-')))
    }

    fn integer_len(&self) -> usize {
        let start = self.at + self.sign_len();
        let rest = &self.bytes[start.min(self.bytes.len())..];
        let unit_letters = |from: usize| {
            rest[from..]
                .iter()
                .take_while(|b| b.is_ascii_alphabetic())
                .count()
        };
        let decimal = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let mut longest = if decimal > 0 {
            decimal + unit_letters(decimal)
        } else {
            0
        };
        if rest.len() > 2 && rest[0] == b'0' && rest[1] == b'x' {
            let hex = rest[2..]
                .iter()
                .take_while(|b| b.is_ascii_hexdigit())
                .count();
            if hex > 0 {
                longest = longest.max(2 + hex + unit_letters(2 + hex));
            }
        }
        if longest == 0 {
            0
        } else {
            start - self.at + longest
        }
    }

    fn real_len(&self) -> usize {
        let start = self.at + self.sign_len();
        let rest = &self.bytes[start.min(self.bytes.len())..];
        let whole = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        if rest.get(whole) != Some(&b'.') {
            return 0;
        }
        let mut len = whole
            + 1
            + rest[whole + 1..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
        if matches!(rest.get(len), Some(b'e' | b'E')) {
            let mut digits_at = len + 1;
            if matches!(rest.get(digits_at), Some(b'+' | b'-')) {
                digits_at += 1;
            }
            let digits = rest[digits_at.min(rest.len())..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if digits > 0 {
                len = digits_at + digits;
            }
        }
        start - self.at + len
    }
}

/// The text of a quoted string token: quotes removed, `''` → `'`, `\n` `\t` `\r` `\b` `\f`,
/// up to three octal digits → that byte, backslash before anything else → that character.
fn unescape_quoted(token: &str) -> String {
    let inner = &token.as_bytes()[1..token.len() - 1];
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        match inner[i] {
            b'\\' if i + 1 < inner.len() => {
                i += 1;
                match inner[i] {
                    b'b' => out.push(0x08),
                    b'f' => out.push(0x0c),
                    b'n' => out.push(b'\n'),
                    b'r' => out.push(b'\r'),
                    b't' => out.push(b'\t'),
                    b'0'..=b'7' => {
                        let digits = inner[i..]
                            .iter()
                            .take(3)
                            .take_while(|b| (b'0'..=b'7').contains(b))
                            .count();
                        let byte = inner[i..i + digits]
                            .iter()
                            .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
                        out.push(byte as u8);
                        i += digits - 1;
                    }
                    other => out.push(other),
                }
            }
            b'\'' if inner.get(i + 1) == Some(&b'\'') => {
                out.push(b'\'');
                i += 1;
            }
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Splits `name=value` as given to `-c` (dashes in the name become underscores, as
/// PostgreSQL does). `shown_as` is the option as the user wrote it, for the error.
pub fn parse_name_value(argument: &str, shown_as: &str) -> Result<(String, String), SettingError> {
    match argument.split_once('=') {
        Some((name, value)) => Ok((name.replace('-', "_"), value.to_string())),
        None => Err(SettingError::new(
            sqlstate::SYNTAX_ERROR,
            format!("{shown_as} requires a value"),
        )),
    }
}

/// Reads the startup packet's `options` parameter (`-c geqo=off --work-mem=8MB`): words are
/// separated by white space, a backslash makes the next character literal (`\ ` is a space
/// inside a word). Accepts `-c name=value`, `-cname=value` and `--name=value`.
pub fn parse_startup_options(options: &str) -> Result<Vec<(String, String)>, SettingError> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(literal) = chars.next() {
                    word.push(literal);
                }
                in_word = true;
            }
            c if c.is_ascii_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    let mut settings = Vec::new();
    let mut words = words.into_iter();
    while let Some(word) = words.next() {
        if word == "-c" {
            let argument = words.next().ok_or_else(|| invalid_option(&word))?;
            settings.push(parse_name_value(&argument, &format!("-c {argument}"))?);
        } else if let Some(argument) = word.strip_prefix("-c") {
            settings.push(parse_name_value(argument, &format!("-c {argument}"))?);
        } else if let Some(argument) = word.strip_prefix("--").filter(|a| !a.is_empty()) {
            settings.push(parse_name_value(argument, &word)?);
        } else {
            return Err(invalid_option(&word));
        }
    }
    Ok(settings)
}

fn invalid_option(word: &str) -> SettingError {
    SettingError::new(
        sqlstate::SYNTAX_ERROR,
        format!("invalid command-line argument for server process: {word}"),
    )
    .with_hint("Try \"iolab --help\" for more information.")
}
