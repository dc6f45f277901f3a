//! SQL text as tokens, for the statements iolab reads itself (VACUUM, ANALYZE) and for
//! finding a name again in a statement (`error_position`): words (identifiers and
//! keywords, folded to lower case unless quoted), numbers, string constants and single
//! punctuation characters, each with its byte offset. Comments and whitespace are
//! skipped; an unterminated quoted string or identifier is PostgreSQL's syntax error.

use iolab_catalog::{PgError, PgResult};

#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier or keyword: folded to lower case unless quoted.
    Word {
        text: String,
        quoted: bool,
    },
    Number(String),
    Str(String),
    Punct(char),
}

#[derive(Clone, Debug)]
pub struct Token {
    pub tok: Tok,
    /// Byte offset in the statement text.
    pub at: usize,
}

/// Splits `text` into tokens, at most `limit`; comments and whitespace are skipped.
pub fn tokenize(text: &str, limit: usize) -> PgResult<Vec<Token>> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() && out.len() < limit {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if text[i..].starts_with("--") {
            i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
        } else if text[i..].starts_with("/*") {
            i = text[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |n| i + 2 + n + 2);
        } else if c == b'"' {
            let (text, end) = quoted(text, i, '"', "unterminated quoted identifier")?;
            out.push(Token {
                tok: Tok::Word { text, quoted: true },
                at: i,
            });
            i = end;
        } else if c == b'\'' {
            let (text, end) = quoted(text, i, '\'', "unterminated quoted string")?;
            out.push(Token {
                tok: Tok::Str(text),
                at: i,
            });
            i = end;
        } else if c.is_ascii_digit()
            || (c == b'-' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            i += 1;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.') {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Number(text[start..i].to_string()),
                at: start,
            });
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric()
                    || bytes[i] == b'_'
                    || bytes[i] == b'$'
                    || bytes[i] >= 0x80)
            {
                i += 1;
            }
            out.push(Token {
                tok: Tok::Word {
                    text: text[start..i].to_lowercase(),
                    quoted: false,
                },
                at: start,
            });
        } else {
            let ch = text[i..].chars().next().expect("not at the end");
            out.push(Token {
                tok: Tok::Punct(ch),
                at: i,
            });
            i += ch.len_utf8();
        }
    }
    Ok(out)
}

/// The text quoted by `quote` starting at byte `start` of `text` (a doubled quote inside
/// stands for one), and the byte after the closing quote; `unterminated` is the error
/// without one.
fn quoted(text: &str, start: usize, quote: char, unterminated: &str) -> PgResult<(String, usize)> {
    let mut s = String::new();
    let mut i = start + 1;
    loop {
        let n = text[i..]
            .find(quote)
            .ok_or_else(|| PgError::syntax(unterminated))?;
        s.push_str(&text[i..i + n]);
        i += n + 1;
        if text[i..].starts_with(quote) {
            s.push(quote);
            i += 1;
        } else {
            return Ok((s, i));
        }
    }
}

/// A cursor over a statement's tokens for the parsers iolab writes itself (VACUUM,
/// ANALYZE, ALTER SYSTEM), with PostgreSQL's syntax errors.
pub struct TokenParser<'a> {
    tokens: Vec<Token>,
    /// The next token's index.
    pub pos: usize,
    text: &'a str,
    whole: &'a str,
    offset: usize,
}

impl<'a> TokenParser<'a> {
    /// Reads `tokens` of `text`, a statement at byte `offset` of the query string `whole`.
    pub fn new(tokens: Vec<Token>, text: &'a str, whole: &'a str, offset: usize) -> Self {
        TokenParser {
            tokens,
            pos: 0,
            text,
            whole,
            offset,
        }
    }

    pub fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.pos).map(|t| &t.tok)
    }

    pub fn next(&mut self) -> Option<Tok> {
        let t = self.tokens.get(self.pos).map(|t| t.tok.clone());
        self.pos += 1;
        t
    }

    /// The 1-based character position of token `index` in the whole query string.
    pub fn position_of(&self, index: usize) -> usize {
        let at = self.tokens.get(index).map_or(self.text.len(), |t| t.at);
        self.whole[..self.offset].chars().count() + self.text[..at].chars().count() + 1
    }

    /// `syntax error at or near "…"` at the current token (or `at end of input`; at the
    /// `;` that ends the statement, if the query string has one there, as PostgreSQL's
    /// lexer sees it).
    pub fn syntax_error(&self) -> PgError {
        let message = match self.tokens.get(self.pos) {
            None if self.ends_with_semicolon() => "syntax error at or near \";\"".to_string(),
            None => "syntax error at end of input".to_string(),
            Some(t) => {
                let text = match &t.tok {
                    Tok::Word { .. } | Tok::Number(_) => {
                        let end = self.text[t.at..]
                            .find(|c: char| {
                                !(c.is_alphanumeric()
                                    || c == '_'
                                    || c == '$'
                                    || c == '.'
                                    || c == '"')
                            })
                            .map_or(self.text.len(), |n| t.at + n);
                        self.text[t.at..end].to_string()
                    }
                    Tok::Str(s) => format!("'{s}'"),
                    Tok::Punct(c) => c.to_string(),
                };
                format!("syntax error at or near \"{text}\"")
            }
        };
        PgError::syntax(message).with_position(self.position_of(self.pos))
    }

    /// Whether the query string has a `;` right after this statement's text.
    fn ends_with_semicolon(&self) -> bool {
        let after = self.offset + self.text.len();
        self.whole
            .get(after..)
            .is_some_and(|rest| rest.trim_start().starts_with(';'))
    }

    pub fn is_word(&self, word: &str) -> bool {
        matches!(self.peek(), Some(Tok::Word { text, quoted: false }) if text == word)
    }

    pub fn is_punct(&self, c: char) -> bool {
        self.peek() == Some(&Tok::Punct(c))
    }

    /// The next token's text if it is a word (quoted or not), else a syntax error at it.
    pub fn word(&mut self) -> PgResult<String> {
        match self.peek() {
            Some(Tok::Word { text, .. }) => {
                let text = text.clone();
                self.pos += 1;
                Ok(text)
            }
            _ => Err(self.syntax_error()),
        }
    }

    /// The value of a Boolean option in a parenthesized option list (`VERBOSE`, `VERBOSE
    /// off`): a following on / off, true / false, yes / no, 1 / 0 is taken as its value;
    /// none means true, as PostgreSQL's `defGetBoolean` reads a bare option.
    pub fn optional_boolean(&mut self) -> bool {
        let value = match self.peek() {
            Some(Tok::Word { text, .. }) => match text.as_str() {
                "on" | "true" | "yes" => Some(true),
                "off" | "false" | "no" => Some(false),
                _ => None,
            },
            Some(Tok::Number(n)) => match n.as_str() {
                "1" => Some(true),
                "0" => Some(false),
                _ => None,
            },
            _ => None,
        };
        if value.is_some() {
            self.pos += 1;
        }
        value.unwrap_or(true)
    }

    pub fn expect_punct(&mut self, c: char) -> PgResult<()> {
        if self.is_punct(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.syntax_error())
        }
    }
}
