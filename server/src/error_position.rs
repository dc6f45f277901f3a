//! Where in the statement an error about a name points: psql's `LINE 1: …` and caret.
//!
//! PostgreSQL's parser knows where each name stands, so an unknown relation, column or
//! function gets the position of its first character. iolab learns of these errors only
//! after DataFusion has planned the statement, when the positions are gone, so
//! [`locate`] finds the name again among the statement's tokens (`sql::tokens`): the
//! first place where it stands as a name, not inside a string constant, a quoted
//! identifier of another name or a comment. Unquoted names are folded to lower case, as
//! PostgreSQL folds them and its messages show them. A qualified name (`s.t`, `t.a`) is
//! found as its parts with their dots between.
//!
//! | SQLSTATE | message                                   | the name looked for |
//! |---|---|---|
//! | 42P01 | `relation "s.t" does not exist`              | `s.t` |
//! | 42703 | `column "a" does not exist`, `column t.a does not exist` | `a`, `t.a` |
//! | 42883 | `function f(integer) does not exist`, `function f does not exist` | `f`, followed by `(` |
//!
//! A constant that does not read as its type (22P02 `invalid input syntax for type integer:
//! "abc"`, 22007 for dates and times, 22008 `date/time field value out of range: "…"`) is
//! found as the string constant with that text, the
//! literal PostgreSQL's parser coerced; a value from a table matches no constant and stays
//! without a position.
//!
//! PostgreSQL gives these positions for the statements its parse analysis reads (queries,
//! INSERT, UPDATE, DELETE, MERGE, and EXPLAIN or DECLARE of them), not for utility
//! statements (`CREATE INDEX ON nosuch (a)` has no caret); so does iolab, by the
//! statement's first word.
//!
//! DataFusion names no argument types for an unknown function (`function f does not
//! exist`); when every argument is a constant or a cast, they are read off the tokens as
//! PostgreSQL's parser types them (`function f(integer, unknown) does not exist`).

use iolab_catalog::PgError;

use crate::sql::tokens::{tokenize, Tok, Token};

/// Gives `err` the position of the name it is about in `text`, the statement, counted in
/// characters of the whole query string the client sent (`text` starts at byte `offset`
/// of it); an error that has a position, or whose name is not found, is left alone.
pub fn locate(mut err: PgError, text: &str, whole: &str, offset: usize) -> PgError {
    if err.position.is_some() {
        return err;
    }
    let Some(target) = target_of(err.code, &err.message) else {
        return err;
    };
    let Ok(tokens) = tokenize(text, usize::MAX) else {
        return err;
    };
    if !analyzed(&tokens) {
        return err;
    }
    let found = match target {
        Target::Name { parts, call } => find_name(&tokens, &parts, call).map(|(start, after)| {
            if call && !err.message.contains('(') {
                if let Some(types) = argument_types(&tokens[after..]) {
                    err.message = format!(
                        "function {}({}) does not exist",
                        parts.join("."),
                        types.join(", ")
                    );
                }
            }
            tokens[start].at
        }),
        Target::Constant(value) => tokens
            .iter()
            .find(|t| matches!(&t.tok, Tok::Str(s) if *s == value))
            .map(|t| t.at),
    };
    if let Some(at) = found {
        let before = whole.get(..offset).map_or(0, |s| s.chars().count());
        err.position = Some(before + text[..at].chars().count() + 1);
    }
    err
}

/// Is the statement of `tokens` one PostgreSQL's parse analysis reads (see the module
/// comment)?
fn analyzed(tokens: &[Token]) -> bool {
    let first = tokens.iter().find_map(|t| match &t.tok {
        Tok::Word {
            text,
            quoted: false,
        } => Some(text.as_str()),
        _ => None,
    });
    matches!(
        first,
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

/// What an error points at.
enum Target {
    /// A name, split into its parts; with `call`, a function's (`(` follows it).
    Name { parts: Vec<String>, call: bool },
    /// A string constant's text.
    Constant(String),
}

fn target_of(code: &str, message: &str) -> Option<Target> {
    if matches!(code, "22P02" | "22007" | "22008") {
        let rest = message
            .strip_prefix("invalid input syntax for type ")
            .or_else(|| message.strip_prefix("date/time field value out of range"))?;
        let value = rest.split_once(": \"")?.1.strip_suffix('"')?;
        return Some(Target::Constant(value.to_string()));
    }
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
    (!parts.iter().any(String::is_empty)).then_some(Target::Name { parts, call })
}

fn between(message: &str, start: &str, end: &str) -> Option<String> {
    let rest = message.strip_prefix(start)?;
    Some(rest.strip_suffix(end)?.to_string())
}

/// Where `parts` (joined by dots) first stand as a name among a statement's `tokens`: the
/// index of its first token and of the token after it; with `call`, only where `(`
/// follows. Unquoted words come folded to lower case, as the messages show unquoted names.
fn find_name(tokens: &[Token], parts: &[String], call: bool) -> Option<(usize, usize)> {
    let tok = |i: usize| tokens.get(i).map(|t| &t.tok);
    let is_word =
        |i: usize, part: &str| matches!(tok(i), Some(Tok::Word { text, .. }) if text == part);
    'start: for start in 0..tokens.len() {
        let mut at = start;
        for (n, part) in parts.iter().enumerate() {
            if n > 0 {
                if tok(at) != Some(&Tok::Punct('.')) {
                    continue 'start;
                }
                at += 1;
            }
            if !is_word(at, part) {
                continue 'start;
            }
            at += 1;
        }
        // Not the tail of a longer qualified name (`x.t` when looking for `t`).
        if start > 0 && tok(start - 1) == Some(&Tok::Punct('.')) {
            continue;
        }
        if call && tok(at) != Some(&Tok::Punct('(')) {
            continue;
        }
        return Some((start, at));
    }
    None
}

/// The types PostgreSQL's parser gives the arguments of the call whose `(` opens `call`,
/// when each is a constant (`1` integer, `3000000000` bigint, `1.5` numeric, `'x'`
/// unknown, `NULL` unknown, `true` boolean, `date '…'`) or a cast (`x::int`) to a type
/// named here; `None` when one is anything else, whose type only planning knows.
fn argument_types(call: &[Token]) -> Option<Vec<String>> {
    let mut args: Vec<&[Token]> = Vec::new();
    let (mut depth, mut start) = (0usize, 1usize);
    for (i, t) in call.iter().enumerate() {
        match t.tok {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => {
                depth -= 1;
                if depth == 0 {
                    if i > start {
                        args.push(&call[start..i]);
                    }
                    return args.into_iter().map(constant_type).collect();
                }
            }
            Tok::Punct(',') if depth == 1 => {
                args.push(&call[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    None
}

fn constant_type(arg: &[Token]) -> Option<String> {
    fn word(t: &Token) -> Option<&str> {
        match &t.tok {
            Tok::Word {
                text,
                quoted: false,
            } => Some(text.as_str()),
            _ => None,
        }
    }
    // A cast: the type after the last `::`.
    if let Some(i) = (0..arg.len().saturating_sub(2))
        .rev()
        .find(|&i| arg[i].tok == Tok::Punct(':') && arg[i + 1].tok == Tok::Punct(':'))
    {
        let name: Vec<&str> = arg[i + 2..].iter().map(word).collect::<Option<_>>()?;
        return type_name(&name.join(" "));
    }
    match arg {
        [t] => match &t.tok {
            Tok::Number(n) if n.contains(['.', 'e', 'E']) => Some("numeric".into()),
            Tok::Number(n) => Some(match n.parse::<i64>() {
                Ok(v) if i32::try_from(v).is_ok() => "integer".into(),
                Ok(_) => "bigint".into(),
                Err(_) => "numeric".into(),
            }),
            Tok::Str(_) => Some("unknown".into()),
            Tok::Word {
                text,
                quoted: false,
            } => match text.as_str() {
                "null" => Some("unknown".into()),
                "true" | "false" => Some("boolean".into()),
                _ => None,
            },
            _ => None,
        },
        // A typed literal: `date '2024-01-01'`.
        [ty, Token {
            tok: Tok::Str(_), ..
        }] => type_name(word(ty)?),
        _ => None,
    }
}

/// PostgreSQL's name of a type as SQL spells it, for the types iolab has.
fn type_name(spelled: &str) -> Option<String> {
    Some(
        match spelled {
            "int" | "int4" | "integer" => "integer",
            "int8" | "bigint" => "bigint",
            "int2" | "smallint" => "smallint",
            "float8" | "double precision" => "double precision",
            "float4" | "real" => "real",
            "numeric" | "decimal" => "numeric",
            "text" => "text",
            "varchar" | "character varying" => "character varying",
            "bool" | "boolean" => "boolean",
            "date" => "date",
            "timestamp" => "timestamp without time zone",
            "timestamptz" => "timestamp with time zone",
            "interval" => "interval",
            "regclass" => "regclass",
            _ => return None,
        }
        .to_string(),
    )
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
    fn an_unknown_call_of_constants_names_their_types() {
        let message = |sql: &str| {
            let err = PgError::new("42883", "function nosuch does not exist");
            locate(err, sql, sql, 0).message
        };
        assert_eq!(
            message("SELECT nosuch(1, -2, 3000000000, 1.5, 'x', NULL, true)"),
            "function nosuch(integer, integer, bigint, numeric, unknown, unknown, boolean) \
             does not exist"
        );
        assert_eq!(
            message("SELECT nosuch(a::int8, '1'::double precision, date '2024-01-01', f(2)::text)"),
            "function nosuch(bigint, double precision, date, text) does not exist"
        );
        assert_eq!(
            message("SELECT nosuch()"),
            "function nosuch() does not exist"
        );
        // An argument only planning could type: the message stays as it was.
        assert_eq!(
            message("SELECT nosuch(a) FROM t"),
            "function nosuch does not exist"
        );
        assert_eq!(
            message("SELECT nosuch(1 + 1)"),
            "function nosuch does not exist"
        );
    }

    #[test]
    fn constants_that_do_not_read_point_at_their_literal() {
        let bad = |code, message, sql| position(code, message, sql);
        let int = "invalid input syntax for type integer: \"abc\"";
        assert_eq!(
            bad("22P02", int, "SELECT a FROM t WHERE b = 'x' OR a = 'abc'"),
            Some(38)
        );
        assert_eq!(bad("22P02", int, "SELECT 'abc'::int"), Some(8));
        // A table's value: no constant holds it.
        assert_eq!(bad("22P02", int, "SELECT s::int FROM t"), None);
        let date = "invalid input syntax for type date: \"soon\"";
        assert_eq!(bad("22007", date, "SELECT date 'soon'"), Some(13));
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
