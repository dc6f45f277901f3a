//! `FETCH` and `MOVE`: their syntax, and where a direction takes a cursor.
//!
//! sqlparser reads neither `MOVE` nor PostgreSQL's shorter spellings of `FETCH` (`FETCH
//! c`, `FETCH FORWARD FROM c`, a signed count), so both are read here from sqlparser's
//! tokens: `{FETCH | MOVE} [direction] [FROM | IN] cursor`, where the direction is one of
//! NEXT, PRIOR, FIRST, LAST, ABSOLUTE n, RELATIVE n, n, ALL, FORWARD [n | ALL] and
//! BACKWARD [n | ALL] (NEXT when left out).
//!
//! A cursor's position is PostgreSQL's: the rows it has moved over, whether it has not
//! read a row yet (`at_start`) and whether its rows ran out (`at_end`). [`resolve`] turns
//! a direction into a [`Step`]: rows to pass over, then rows to return (FETCH) or count
//! (MOVE), always reading forward. iolab's cursors cannot go back, as PostgreSQL's NO
//! SCROLL cursors cannot, and the rule is PostgreSQL's loose one: any direction is fine
//! whose result is a move forward; one that needs the cursor to go back — PRIOR,
//! BACKWARD n, LAST, a RELATIVE or ABSOLUTE position behind the next row, the current
//! row again (`FETCH 0` on a row) — fails with 55000 "cursor can only scan forward".
//! As in PostgreSQL, ABSOLUTE n goes back to the start (and so fails, unless no row was
//! read yet) when row n is no further than half the rows already passed over.

use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer};
use iolab_catalog::{sqlstate, PgError, PgResult};

/// A FETCH or MOVE statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchStmt {
    /// MOVE: the rows are passed over and counted, not returned.
    pub moving: bool,
    pub direction: Direction,
    /// The cursor's name (folded to lower case unless quoted).
    pub cursor: String,
}

/// Where FETCH or MOVE goes, with negative counts turned around (`FETCH -2` is
/// `BACKWARD 2`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Forward(Count),
    Backward(Count),
    /// Row n (n < 0: the n-th from the end, 0: before the first row).
    Absolute(i64),
    /// The n-th row from the current one.
    Relative(i64),
}

/// How many rows: a number, or all that remain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    Rows(u64),
    All,
}

/// A cursor's position, as PostgreSQL's portal keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position {
    /// Rows moved over so far.
    pub pos: u64,
    /// No row read yet.
    pub at_start: bool,
    /// A read found no more rows.
    pub at_end: bool,
}

impl Default for Position {
    fn default() -> Position {
        Position {
            pos: 0,
            at_start: true,
            at_end: false,
        }
    }
}

/// What a direction comes to, read forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Pass over `skip` rows, then return (or, for MOVE, count) up to `take`.
    Read { skip: u64, take: Count },
    /// `MOVE 0`: 1 when the cursor is on a row, else 0; nothing moves.
    OnRow,
}

/// Is `first_word` (upper case) the start of a statement [`parse`] reads?
pub fn is_fetch_or_move(first_word: &str) -> bool {
    matches!(first_word, "FETCH" | "MOVE")
}

/// Reads a FETCH or MOVE statement.
pub fn parse(text: &str) -> PgResult<FetchStmt> {
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, text)
        .tokenize()
        .map_err(|e| PgError::syntax(e.to_string()))?;
    let mut tokens: Vec<Token> = tokens
        .into_iter()
        .filter(|t| !matches!(t, Token::Whitespace(_)))
        .collect();
    while matches!(tokens.last(), Some(Token::SemiColon)) {
        tokens.pop();
    }
    let near = |t: &Token| PgError::syntax(format!("syntax error at or near \"{t}\""));
    let at_end = || PgError::syntax("syntax error at end of input");
    let moving = match tokens.first().and_then(keyword).as_deref() {
        Some("FETCH") => false,
        Some("MOVE") => true,
        _ => return Err(PgError::syntax("FETCH or MOVE expected")),
    };
    let cursor = match tokens.last() {
        Some(Token::Word(w)) if tokens.len() > 1 => match w.quote_style {
            Some(_) => w.value.clone(),
            None => w.value.to_lowercase(),
        },
        Some(t) if tokens.len() > 1 => return Err(near(t)),
        _ => return Err(at_end()),
    };
    let mut words = &tokens[1..tokens.len() - 1];
    if let Some(last) = words.last() {
        if matches!(keyword(last).as_deref(), Some("FROM" | "IN")) {
            words = &words[..words.len() - 1];
        }
    }
    let direction = direction(words).map_err(|bad| match bad {
        Some(t) => near(t),
        None => near(tokens.last().expect("the cursor's name")),
    })?;
    Ok(FetchStmt {
        moving,
        direction,
        cursor,
    })
}

/// The upper-case keyword a token is, if it is an unquoted word.
fn keyword(t: &Token) -> Option<String> {
    match t {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
        _ => None,
    }
}

/// The direction `words` spell (none: NEXT), or the token that does not fit (`None`: one
/// is missing).
fn direction(words: &[Token]) -> Result<Direction, Option<&Token>> {
    let first = words.first().map(keyword);
    let (direction, used) = match first {
        None => (Direction::Forward(Count::Rows(1)), 0),
        Some(Some(k)) => match k.as_str() {
            "NEXT" => (Direction::Forward(Count::Rows(1)), 1),
            "PRIOR" => (Direction::Backward(Count::Rows(1)), 1),
            "FIRST" => (Direction::Absolute(1), 1),
            "LAST" => (Direction::Absolute(-1), 1),
            "ALL" => (Direction::Forward(Count::All), 1),
            "ABSOLUTE" => (
                Direction::Absolute(signed(&words[1..])?),
                2 + sign_len(&words[1..]),
            ),
            "RELATIVE" => (
                Direction::Relative(signed(&words[1..])?),
                2 + sign_len(&words[1..]),
            ),
            "FORWARD" | "BACKWARD" => {
                let (count, used) = match words.get(1).map(keyword) {
                    None => (Some(1), 1),
                    Some(Some(all)) if all == "ALL" => (None, 2),
                    Some(_) => (Some(signed(&words[1..])?), 2 + sign_len(&words[1..])),
                };
                let forward = k == "FORWARD";
                (rows(forward, count), used)
            }
            _ => return Err(Some(&words[0])),
        },
        Some(None) => (rows(true, Some(signed(words)?)), 1 + sign_len(words)),
    };
    match words.get(used) {
        Some(extra) => Err(Some(extra)),
        None => Ok(direction),
    }
}

/// `count` rows forward (`forward`) or back, `None` for all; a negative count turns the
/// direction around.
fn rows(forward: bool, count: Option<i64>) -> Direction {
    let Some(n) = count else {
        return match forward {
            true => Direction::Forward(Count::All),
            false => Direction::Backward(Count::All),
        };
    };
    let rows = Count::Rows(n.unsigned_abs());
    match forward == (n >= 0) {
        true => Direction::Forward(rows),
        false => Direction::Backward(rows),
    }
}

/// 1 when `words` start with a sign.
fn sign_len(words: &[Token]) -> usize {
    usize::from(matches!(words.first(), Some(Token::Minus | Token::Plus)))
}

/// The signed integer `words` start with.
fn signed(words: &[Token]) -> Result<i64, Option<&Token>> {
    let negative = matches!(words.first(), Some(Token::Minus));
    let digits = &words[sign_len(words)..];
    match digits.first() {
        Some(t @ Token::Number(n, _)) => {
            let n: i64 = n.parse().map_err(|_| Some(t))?;
            Ok(if negative { -n } else { n })
        }
        other => Err(other),
    }
}

/// PostgreSQL's error for a direction that would take a NO SCROLL cursor back.
pub fn only_forward() -> PgError {
    PgError::new(
        sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
        "cursor can only scan forward",
    )
    .with_hint("Declare it with SCROLL option to enable backward scan.")
}

/// Where `direction` takes a cursor at `at` (see the module comment).
pub fn resolve(direction: Direction, at: Position, moving: bool) -> PgResult<Step> {
    let on_row = !at.at_start && !at.at_end;
    let read = |skip: u64, take: Count| Ok(Step::Read { skip, take });
    // Back to the start: nothing to do if no row was read yet, else impossible.
    let rewind = || match at.at_start && !at.at_end {
        true => Ok(()),
        false => Err(only_forward()),
    };
    match direction {
        Direction::Forward(Count::Rows(0))
        | Direction::Backward(Count::Rows(0))
        | Direction::Relative(0) => match (moving, on_row) {
            (true, _) => Ok(Step::OnRow),
            (false, true) => Err(only_forward()),
            (false, false) => read(0, Count::Rows(0)),
        },
        Direction::Forward(take) => read(0, take),
        Direction::Backward(_) => Err(only_forward()),
        Direction::Relative(n) if n > 0 => read(n as u64 - 1, Count::Rows(1)),
        Direction::Relative(_) => Err(only_forward()),
        Direction::Absolute(0) => {
            rewind()?;
            read(0, Count::Rows(0))
        }
        Direction::Absolute(n) if n > 0 => {
            let n = n as u64;
            if n - 1 <= at.pos / 2 {
                rewind()?;
                return read(n - 1, Count::Rows(1));
            }
            // Just past the last row counts as a position once the rows ran out.
            let here = at.pos + u64::from(at.at_end);
            match n > here {
                true => read(n - here - 1, Count::Rows(1)),
                false => Err(only_forward()),
            }
        }
        Direction::Absolute(_) => Err(only_forward()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> (bool, Direction, String) {
        let s = parse(text).unwrap_or_else(|e| panic!("{text}: {e:?}"));
        (s.moving, s.direction, s.cursor)
    }

    #[test]
    fn every_spelling_of_a_direction() {
        use Count::*;
        use Direction::*;
        let cases = [
            ("FETCH c", Forward(Rows(1))),
            ("fetch from c;", Forward(Rows(1))),
            ("FETCH NEXT IN c", Forward(Rows(1))),
            ("FETCH PRIOR FROM c", Backward(Rows(1))),
            ("FETCH FIRST c", Absolute(1)),
            ("FETCH LAST FROM c", Absolute(-1)),
            ("FETCH ABSOLUTE -3 FROM c", Absolute(-3)),
            ("FETCH RELATIVE 2 c", Relative(2)),
            ("FETCH 5 FROM c", Forward(Rows(5))),
            ("FETCH -5 FROM c", Backward(Rows(5))),
            ("FETCH ALL c", Forward(All)),
            ("FETCH FORWARD FROM c", Forward(Rows(1))),
            ("FETCH FORWARD 100 FROM c", Forward(Rows(100))),
            ("FETCH FORWARD -2 FROM c", Backward(Rows(2))),
            ("FETCH FORWARD ALL FROM c", Forward(All)),
            ("FETCH BACKWARD c", Backward(Rows(1))),
            ("FETCH BACKWARD -4 c", Forward(Rows(4))),
            ("FETCH BACKWARD ALL IN c", Backward(All)),
        ];
        for (text, want) in cases {
            assert_eq!(parsed(text), (false, want, "c".into()), "{text}");
        }
        assert_eq!(
            parsed("MOVE FORWARD 3 IN \"My Cursor\""),
            (true, Forward(Rows(3)), "My Cursor".into())
        );
        assert_eq!(parsed("MOVE Big").2, "big");
    }

    #[test]
    fn what_is_not_a_fetch() {
        for (text, message) in [
            ("FETCH", "syntax error at end of input"),
            ("FETCH FORWARD 1", "syntax error at or near \"1\""),
            (
                "FETCH SIDEWAYS FROM c",
                "syntax error at or near \"SIDEWAYS\"",
            ),
            ("FETCH 1 2 FROM c", "syntax error at or near \"2\""),
            ("FETCH ABSOLUTE FROM c", "syntax error at or near \"c\""),
            ("FETCH 1 FROM 'c'", "syntax error at or near \"'c'\""),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!((e.code, e.message.as_str()), ("42601", message), "{text}");
        }
    }

    const START: Position = Position {
        pos: 0,
        at_start: true,
        at_end: false,
    };

    fn on_row(pos: u64) -> Position {
        Position {
            pos,
            at_start: false,
            at_end: false,
        }
    }

    fn step(direction: Direction, at: Position) -> Result<Step, &'static str> {
        resolve(direction, at, false).map_err(|e| {
            assert_eq!(e.message, "cursor can only scan forward");
            e.code
        })
    }

    #[test]
    fn directions_read_forward_or_fail() {
        use Count::*;
        use Direction::*;
        let read = |skip, take| Ok(Step::Read { skip, take });
        let back = Err("55000");
        assert_eq!(step(Forward(Rows(3)), on_row(4)), read(0, Rows(3)));
        assert_eq!(step(Forward(All), START), read(0, All));
        assert_eq!(step(Relative(3), on_row(4)), read(2, Rows(1)));
        assert_eq!(step(Relative(-1), on_row(4)), back);
        assert_eq!(step(Backward(Rows(1)), START), back);
        assert_eq!(step(Backward(All), on_row(2)), back);
        // FETCH 0: the current row again, which only works when there is none.
        assert_eq!(step(Forward(Rows(0)), START), read(0, Rows(0)));
        assert_eq!(step(Relative(0), on_row(1)), back);
        assert_eq!(resolve(Relative(0), on_row(1), true), Ok(Step::OnRow));
        // FIRST before any row is read; not after.
        assert_eq!(step(Absolute(1), START), read(0, Rows(1)));
        assert_eq!(step(Absolute(1), on_row(1)), back);
        assert_eq!(step(Absolute(0), START), read(0, Rows(0)));
        assert_eq!(step(Absolute(0), on_row(1)), back);
        // Ahead of the current row: pass over the rows between.
        assert_eq!(step(Absolute(10), on_row(4)), read(5, Rows(1)));
        assert_eq!(step(Absolute(4), on_row(4)), back);
        // Behind: back, and so is a row no further than half the rows passed over.
        assert_eq!(step(Absolute(3), on_row(10)), back);
        assert_eq!(step(Absolute(-1), START), back);
        // Past the end, the position just after the last row counts.
        let end = Position {
            pos: 10,
            at_start: false,
            at_end: true,
        };
        assert_eq!(step(Absolute(11), end), back);
        assert_eq!(step(Absolute(12), end), read(0, Rows(1)));
        assert_eq!(step(Forward(Rows(0)), end), read(0, Rows(0)));
        assert_eq!(resolve(Forward(Rows(0)), end, true), Ok(Step::OnRow));
    }
}
