//! Where in the statement an error about a name points: psql's `LINE 1: …` and caret.
//!
//! PostgreSQL's parser knows where each name stands, so an unknown relation, column or
//! function gets the position of its first character. iolab learns of these errors only
//! after DataFusion has planned the statement, when the positions are gone, so
//! [`locate`] finds the name again in the statement's text: the first place where it
//! stands as a name, not inside a string constant, a quoted identifier of another name
//! or a comment. Unquoted names compare case-insensitively (PostgreSQL folds them to lower
//! case, and its messages show them folded). A qualified name (`s.t`, `t.a`) is found as
//! its parts with their dots between.
//!
//! | SQLSTATE | message                                   | the name looked for |
//! |---|---|---|
//! | 42P01 | `relation "s.t" does not exist`              | `s.t` |
//! | 42703 | `column "a" does not exist`, `column t.a does not exist` | `a`, `t.a` |
//! | 42883 | `function f(integer) does not exist`, `function f does not exist` | `f`, followed by `(` |
//!
//! PostgreSQL gives these positions for the statements its parse analysis reads (queries,
//! INSERT, UPDATE, DELETE, MERGE, and EXPLAIN or DECLARE of them), not for utility
//! statements (`CREATE INDEX ON nosuch (a)` has no caret); so does iolab, by the
//! statement's first word.

use iolab_catalog::PgError;

/// Gives `err` the position of the name it is about in `text`, the statement, counted in
/// characters of the whole query string the client sent (`text` starts at byte `offset`
/// of it); an error that has a position, or whose name is not found, is left alone.
pub fn locate(mut err: PgError, text: &str, whole: &str, offset: usize) -> PgError {
    if err.position.is_some() || !analyzed(text) {
        return err;
    }
    let Some((name, call)) = named_in(&err.code, &err.message) else {
        return err;
    };
    if let Some(at) = find_name(text, &name, call) {
        let before = whole.get(..offset).map_or(0, |s| s.chars().count());
        err.position = Some(before + text[..at].chars().count() + 1);
    }
    err
}

/// Is `text` a statement PostgreSQL's parse analysis reads (see the module comment)?
fn analyzed(text: &str) -> bool {
    let first = tokens(text).into_iter().find_map(|(_, t)| match t {
        Token::Name {
            text,
            quoted: false,
        } => Some(text.to_ascii_lowercase()),
        _ => None,
    });
    matches!(
        first.as_deref(),
        Some(
            "select"
                | "with"
                | "values"
                | "table"
                | "insert"
                | "update"
                | "delete"
                | "merge"
                | "explain"
                | "declare"
        )
    )
}

/// The name an error is about, split into its parts, and whether it is a function's (a
/// call: `(` follows it).
fn named_in(code: &str, message: &str) -> Option<(Vec<String>, bool)> {
    let (name, call) = match code {
        "42P01" => (between(message, "relation \"", "\" does not exist")?, false),
        "42703" => match between(message, "column \"", "\" does not exist") {
            Some(name) => (name, false),
            None => (between(message, "column ", " does not exist")?, false),
        },
        "42883" => {
            let name = between(message, "function ", " does not exist")?;
            (name.split('(').next()?.to_string(), true)
        }
        _ => return None,
    };
    let parts: Vec<String> = name.split('.').map(str::to_string).collect();
    (!parts.iter().any(String::is_empty)).then_some((parts, call))
}

fn between(message: &str, start: &str, end: &str) -> Option<String> {
    let rest = message.strip_prefix(start)?;
    Some(rest.strip_suffix(end)?.to_string())
}

/// A token of SQL text, as far as finding a name needs: a name (its text as written, and
/// whether it was quoted), a dot, an opening parenthesis, anything else.
#[derive(Debug, PartialEq)]
enum Token<'a> {
    Name { text: &'a str, quoted: bool },
    Dot,
    Open,
    Other,
}

/// The tokens of `sql` with their byte offsets; string constants, comments and
/// whitespace are skipped.
fn tokens(sql: &str) -> Vec<(usize, Token<'_>)> {
    let bytes = sql.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        match c {
            b'\'' => {
                // A string constant; '' inside it is a quote.
                i += 1;
                while i < bytes.len() {
                    if bytes[i] == b'\'' {
                        if bytes.get(i + 1) == Some(&b'\'') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'"' => {
                let start = i + 1;
                let mut end = start;
                while end < bytes.len() && bytes[end] != b'"' {
                    end += 1;
                }
                out.push((
                    i,
                    Token::Name {
                        text: &sql[start..end.min(bytes.len())],
                        quoted: true,
                    },
                ));
                i = end + 1;
            }
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < bytes.len() && !(bytes[i] == b'*' && bytes[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'.' => {
                out.push((i, Token::Dot));
                i += 1;
            }
            b'(' => {
                out.push((i, Token::Open));
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                let start = i;
                while i < bytes.len()
                    && (bytes[i].is_ascii_alphanumeric()
                        || bytes[i] == b'_'
                        || bytes[i] == b'$'
                        || bytes[i] >= 0x80)
                {
                    i += 1;
                }
                out.push((
                    start,
                    Token::Name {
                        text: &sql[start..i],
                        quoted: false,
                    },
                ));
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => {
                out.push((i, Token::Other));
                i += 1;
            }
        }
    }
    out
}

/// The byte offset in `sql` where `parts` (joined by dots) first stand as a name; with
/// `call`, only where `(` follows.
fn find_name(sql: &str, parts: &[String], call: bool) -> Option<usize> {
    let tokens = tokens(sql);
    let same = |token: &Token, part: &str| match token {
        Token::Name { text, quoted: true } => *text == part,
        Token::Name {
            text,
            quoted: false,
        } => text.eq_ignore_ascii_case(part),
        _ => false,
    };
    'start: for start in 0..tokens.len() {
        let mut at = start;
        for (n, part) in parts.iter().enumerate() {
            if n > 0 {
                if tokens.get(at).map(|t| &t.1) != Some(&Token::Dot) {
                    continue 'start;
                }
                at += 1;
            }
            match tokens.get(at) {
                Some((_, token)) if same(token, part) => at += 1,
                _ => continue 'start,
            }
        }
        // Not the tail of a longer qualified name (`x.t` when looking for `t`).
        if start > 0 && tokens[start - 1].1 == Token::Dot {
            continue;
        }
        if call && tokens.get(at).map(|t| &t.1) != Some(&Token::Open) {
            continue;
        }
        return Some(tokens[start].0);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position(code: &'static str, message: &str, sql: &str) -> Option<usize> {
        locate(PgError::new(code, message), sql, sql, 0).position
    }

    #[test]
    fn names_are_found_where_they_stand_as_names() {
        let missing = |sql| position("42P01", "relation \"nosuch\" does not exist", sql);
        assert_eq!(missing("SELECT * FROM nosuch"), Some(15));
        assert_eq!(missing("INSERT INTO NoSuch VALUES (1)"), Some(13));
        // Not inside a constant, a comment or another quoted name.
        assert_eq!(
            missing("SELECT 'nosuch' /* nosuch */ -- nosuch\n FROM \"nosuch\""),
            Some(46)
        );
        assert_eq!(missing("SELECT 1 FROM x.nosuch, nosuch"), Some(25));
        let qualified = position(
            "42P01",
            "relation \"s.t\" does not exist",
            "SELECT * FROM s . t",
        );
        assert_eq!(qualified, Some(15));
        let column = |message, sql| position("42703", message, sql);
        assert_eq!(
            column(
                "column \"a\" does not exist",
                "SELECT a FROM (SELECT 1 AS b) s"
            ),
            Some(8)
        );
        assert_eq!(
            column("column t.z does not exist", "SELECT t.a, t.z FROM t"),
            Some(13)
        );
        let function = |sql| position("42883", "function f(integer) does not exist", sql);
        assert_eq!(function("SELECT f, f (1) FROM t"), Some(11));
        // A name not found, a known position, other errors: left alone.
        assert_eq!(missing("SELECT 1"), None);
        let placed = PgError::new("42P01", "relation \"t\" does not exist").with_position(3);
        assert_eq!(locate(placed, "SELECT * FROM t", "", 0).position, Some(3));
        assert_eq!(position("22012", "division by zero", "SELECT 1/0"), None);
        // Utility statements have no positions.
        assert_eq!(missing("CREATE INDEX ON nosuch (a)"), None);
        assert_eq!(missing("(SELECT * FROM nosuch)"), Some(16));
    }

    #[test]
    fn positions_count_characters_of_the_whole_query_string() {
        let whole = "SELECT 'é'; SELECT * FROM nosuch";
        let offset = whole.find("SELECT *").unwrap();
        let err = PgError::new("42P01", "relation \"nosuch\" does not exist");
        let placed = locate(err, &whole[offset..], whole, offset);
        assert_eq!(placed.position, Some(whole.chars().count() - 6 + 1));
    }
}
