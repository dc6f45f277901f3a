//! Splitting a query string into statements, the way PostgreSQL's scanner sees it.
//!
//! A simple-protocol Query may hold several statements separated by semicolons. The
//! splitter walks the text once, skipping over everything in which a semicolon does not
//! end a statement: single-quoted strings (with `''`, and backslash escapes in `E'…'`),
//! double-quoted identifiers, dollar-quoted strings (`$$…$$`, `$tag$…$tag$`), `--` line
//! comments and nested `/* … */` comments. Each piece keeps its byte offset in the whole
//! query so that error positions point into the text the client sent.

/// One statement's text and where it starts in the query string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementText<'a> {
    pub text: &'a str,
    pub offset: usize,
}

impl StatementText<'_> {
    /// True when the statement holds nothing but whitespace and comments.
    pub fn is_empty(&self) -> bool {
        strip_comments(self.text).trim().is_empty()
    }
}

pub fn split_statements(sql: &str) -> Vec<StatementText<'_>> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\'' => {
                let escapes = i > 0
                    && matches!(bytes[i - 1], b'E' | b'e')
                    && (i < 2 || !is_ident_byte(bytes[i - 2]));
                i = skip_quoted(bytes, i, b'\'', escapes);
            }
            b'"' => i = skip_quoted(bytes, i, b'"', false),
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => i = skip_block_comment(bytes, i),
            b'$' if i == 0 || !is_ident_byte(bytes[i - 1]) => i = skip_dollar_quoted(bytes, i),
            b';' => {
                out.push(StatementText {
                    text: &sql[start..i],
                    offset: start,
                });
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    if start < sql.len() {
        out.push(StatementText {
            text: &sql[start..],
            offset: start,
        });
    }
    out.retain(|s| !s.is_empty());
    out
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Index just past the closing quote (or the end of the text if unterminated).
fn skip_quoted(bytes: &[u8], open: usize, quote: u8, backslash_escapes: bool) -> usize {
    let mut i = open + 1;
    while i < bytes.len() {
        if backslash_escapes && bytes[i] == b'\\' {
            i += 2;
            continue;
        }
        if bytes[i] == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

fn skip_block_comment(bytes: &[u8], open: usize) -> usize {
    let mut depth = 0;
    let mut i = open;
    while i < bytes.len() {
        if bytes[i] == b'/' && bytes.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if bytes[i] == b'*' && bytes.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    bytes.len()
}

fn skip_dollar_quoted(bytes: &[u8], open: usize) -> usize {
    // The tag is `$` [identifier] `$`; a `$1` parameter is not a tag.
    let mut j = open + 1;
    while j < bytes.len()
        && (bytes[j].is_ascii_alphabetic()
            || bytes[j] == b'_'
            || (j > open + 1 && bytes[j].is_ascii_digit()))
    {
        j += 1;
    }
    if bytes.get(j) != Some(&b'$') {
        return open + 1;
    }
    let tag = &bytes[open..=j];
    let mut i = j + 1;
    while i + tag.len() <= bytes.len() {
        if &bytes[i..i + tag.len()] == tag {
            return i + tag.len();
        }
        i += 1;
    }
    bytes.len()
}

/// The text with comments replaced by spaces (quotes respected).
pub fn strip_comments(sql: &str) -> String {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    while i < bytes.len() {
        let next = match bytes[i] {
            b'\'' => skip_quoted(bytes, i, b'\'', false),
            b'"' => skip_quoted(bytes, i, b'"', false),
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                let mut j = i;
                while j < bytes.len() && bytes[j] != b'\n' {
                    j += 1;
                }
                out.push(' ');
                i = j;
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                out.push(' ');
                i = skip_block_comment(bytes, i);
                continue;
            }
            _ => {
                let ch = sql[i..].chars().next().expect("char boundary");
                out.push(ch);
                i += ch.len_utf8();
                continue;
            }
        };
        out.push_str(&sql[i..next]);
        i = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(sql: &str) -> Vec<&str> {
        split_statements(sql)
            .into_iter()
            .map(|s| s.text.trim())
            .collect()
    }

    #[test]
    fn splits_on_semicolons_outside_quotes_and_comments() {
        assert_eq!(texts("SELECT 1; SELECT 2"), vec!["SELECT 1", "SELECT 2"]);
        assert_eq!(
            texts("SELECT ';'; SELECT \"a;b\""),
            vec!["SELECT ';'", "SELECT \"a;b\""]
        );
        assert_eq!(texts("SELECT 'it''s;'; x"), vec!["SELECT 'it''s;'", "x"]);
        assert_eq!(texts("SELECT E'\\';'; y"), vec!["SELECT E'\\';'", "y"]);
        assert_eq!(
            texts("SELECT $$a;b$$; SELECT $q$;$q$"),
            vec!["SELECT $$a;b$$", "SELECT $q$;$q$"]
        );
        assert_eq!(texts("SELECT $1; SELECT 2"), vec!["SELECT $1", "SELECT 2"]);
        assert_eq!(
            texts("-- c;\nSELECT 1 /* ; /* ; */ */; ;;"),
            vec!["-- c;\nSELECT 1 /* ; /* ; */ */"]
        );
        assert!(texts("-- ping").is_empty());
        assert!(texts(" ; ; ").is_empty());
    }

    #[test]
    fn offsets_point_into_the_original_text() {
        let sql = "SELECT 1;  SELECT 2";
        let parts = split_statements(sql);
        assert_eq!(parts[1].offset, 9);
        assert_eq!(&sql[parts[1].offset..], "  SELECT 2");
    }
}
