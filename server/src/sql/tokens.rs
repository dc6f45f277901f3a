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
            let start = i;
            let mut s = String::new();
            i += 1;
            loop {
                match text[i..].find('"') {
                    None => {
                        return Err(PgError::syntax("unterminated quoted identifier"));
                    }
                    Some(n) => {
                        s.push_str(&text[i..i + n]);
                        i += n + 1;
                        if bytes.get(i) == Some(&b'"') {
                            s.push('"');
                            i += 1;
                        } else {
                            break;
                        }
                    }
                }
            }
            out.push(Token {
                tok: Tok::Word {
                    text: s,
                    quoted: true,
                },
                at: start,
            });
        } else if c == b'\'' {
            let start = i;
            let mut s = String::new();
            i += 1;
            loop {
                match text[i..].find('\'') {
                    None => {
                        return Err(PgError::syntax("unterminated quoted string"));
                    }
                    Some(n) => {
                        s.push_str(&text[i..i + n]);
                        i += n + 1;
                        if bytes.get(i) == Some(&b'\'') {
                            s.push('\'');
                            i += 1;
                        } else {
                            break;
                        }
                    }
                }
            }
            out.push(Token {
                tok: Tok::Str(s),
                at: start,
            });
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
