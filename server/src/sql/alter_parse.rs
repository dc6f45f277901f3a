//! The grammar of the ALTER statements iolab runs (`alter_table.rs` runs them):
//!
//! ```text
//! ALTER {TABLE | INDEX | SEQUENCE | VIEW} [IF EXISTS] name RENAME TO new_name
//! ALTER TABLE [IF EXISTS] name RENAME [COLUMN] column TO new_column
//! ALTER TABLE [IF EXISTS] name subcommand [, subcommand …]
//! ALTER INDEX [IF EXISTS] name {SET | RESET} (…)
//!
//! subcommand:
//!   ADD [COLUMN] [IF NOT EXISTS] column type [column options]
//!   DROP [COLUMN] [IF EXISTS] column [CASCADE | RESTRICT]
//!   ALTER [COLUMN] column {SET DEFAULT expr | DROP DEFAULT | SET NOT NULL | DROP NOT NULL}
//!   SET (name [= value], …)
//!   RESET (name, …)
//! ```
//!
//! sqlparser's own ALTER statements miss too much of PostgreSQL's grammar (IF EXISTS on
//! ALTER INDEX, RESET, ALTER VIEW … RENAME), so this module reads the statement with
//! sqlparser's tokenizer and parser primitives (names, column definitions, expressions)
//! in PostgreSQL's order. Any other subcommand PostgreSQL knows (ALTER COLUMN … TYPE,
//! ADD CONSTRAINT, OWNER TO, …) is kept as [`AlterCommand::Unsupported`] with its words,
//! so that running the statement can refuse it by name (0A000). Other ALTER statements
//! (ALTER SEQUENCE's options, ALTER SYSTEM, …) are not this module's: [`parse`] returns
//! `None` for them.

use datafusion::sql::sqlparser::ast::{self, Ident, ObjectName};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::{Parser, ParserError};
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};
use iolab_catalog::alter::RelationKind;

/// One ALTER statement.
#[derive(Clone, Debug, PartialEq)]
pub struct AlterStatement {
    /// The word after ALTER.
    pub kind: RelationKind,
    pub if_exists: bool,
    pub name: ObjectName,
    pub action: AlterAction,
}

impl AlterStatement {
    /// The command tag: `ALTER TABLE`, `ALTER INDEX`, …
    pub fn tag(&self) -> String {
        format!("ALTER {}", self.kind.noun().to_uppercase())
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum AlterAction {
    /// `RENAME TO new_name`
    Rename(Ident),
    /// `RENAME [COLUMN] from TO to` (ALTER TABLE only)
    RenameColumn { from: Ident, to: Ident },
    /// Subcommands, applied in order as one unit.
    Commands(Vec<AlterCommand>),
}

#[derive(Clone, Debug, PartialEq)]
pub enum AlterCommand {
    AddColumn {
        if_not_exists: bool,
        column: ast::ColumnDef,
    },
    DropColumn {
        if_exists: bool,
        column: Ident,
        cascade: bool,
    },
    SetDefault {
        column: Ident,
        expr: ast::Expr,
    },
    DropDefault {
        column: Ident,
    },
    SetNotNull {
        column: Ident,
    },
    DropNotNull {
        column: Ident,
    },
    /// `SET (name = value, …)`: the options as written (see `reloptions.rs`).
    SetOptions(Vec<ast::Expr>),
    /// `RESET (name, …)`
    ResetOptions(Vec<Ident>),
    /// `ADD [CONSTRAINT name] PRIMARY KEY (…) | UNIQUE (…)`
    AddConstraint(ast::TableConstraint),
    /// `DROP CONSTRAINT [IF EXISTS] name [CASCADE | RESTRICT]`
    DropConstraint {
        if_exists: bool,
        name: Ident,
    },
    /// A subcommand iolab does not run, as its words (`OWNER TO`, `ALTER COLUMN TYPE`).
    Unsupported(String),
}

impl AlterCommand {
    /// How PostgreSQL names the subcommand in "ALTER action X cannot be performed …".
    pub fn action_name(&self) -> &'static str {
        match self {
            AlterCommand::AddColumn { .. } => "ADD COLUMN",
            AlterCommand::DropColumn { .. } => "DROP COLUMN",
            AlterCommand::SetDefault { .. } | AlterCommand::DropDefault { .. } => {
                "ALTER COLUMN ... SET DEFAULT"
            }
            AlterCommand::SetNotNull { .. } => "ALTER COLUMN ... SET NOT NULL",
            AlterCommand::DropNotNull { .. } => "ALTER COLUMN ... DROP NOT NULL",
            AlterCommand::SetOptions(_) => "SET",
            AlterCommand::ResetOptions(_) => "RESET",
            AlterCommand::AddConstraint(_) => "ADD CONSTRAINT",
            AlterCommand::DropConstraint { .. } => "DROP CONSTRAINT",
            AlterCommand::Unsupported(_) => "",
        }
    }
}

/// Parses `text` if it is an ALTER statement of this module's grammar; `None` for other
/// statements (which go on to the other parsers).
pub fn parse(text: &str) -> Option<Result<AlterStatement, ParserError>> {
    let dialect = PostgreSqlDialect {};
    let mut p = Parser::new(&dialect).try_with_sql(text).ok()?;
    if !p.parse_keyword(Keyword::ALTER) {
        return None;
    }
    let kind = match p.parse_one_of_keywords(&[
        Keyword::TABLE,
        Keyword::INDEX,
        Keyword::SEQUENCE,
        Keyword::VIEW,
    ])? {
        Keyword::TABLE => RelationKind::Table,
        Keyword::INDEX => RelationKind::Index,
        Keyword::SEQUENCE => RelationKind::Sequence,
        _ => RelationKind::View,
    };
    // ALTER SEQUENCE's options are `sequence.rs`'s; only its RENAME is read here.
    if kind == RelationKind::Sequence && !renames(text) {
        return None;
    }
    Some(parse_rest(&mut p, kind))
}

/// Does `text` (ALTER SEQUENCE …) go on `[IF EXISTS] name RENAME`?
fn renames(text: &str) -> bool {
    let dialect = PostgreSqlDialect {};
    let Ok(mut p) = Parser::new(&dialect).try_with_sql(text) else {
        return false;
    };
    p.parse_keywords(&[Keyword::ALTER, Keyword::SEQUENCE])
        && {
            let _ = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
            p.parse_object_name(false).is_ok()
        }
        && p.parse_keyword(Keyword::RENAME)
}

fn parse_rest(p: &mut Parser, kind: RelationKind) -> Result<AlterStatement, ParserError> {
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = p.parse_object_name(false)?;
    let action = if p.parse_keyword(Keyword::RENAME) {
        if p.parse_keyword(Keyword::TO) {
            AlterAction::Rename(parse_name(p)?)
        } else if kind == RelationKind::Table || kind == RelationKind::View {
            if p.peek_keyword(Keyword::CONSTRAINT) {
                AlterAction::Commands(vec![unsupported(p, "RENAME", 1)?])
            } else {
                let _ = p.parse_keyword(Keyword::COLUMN);
                let from = parse_name(p)?;
                p.expect_keyword_is(Keyword::TO)?;
                let to = parse_name(p)?;
                AlterAction::RenameColumn { from, to }
            }
        } else {
            return expected(p, "TO");
        }
    } else {
        let mut commands = Vec::new();
        loop {
            commands.push(parse_command(p, kind)?);
            if !p.consume_token(&Token::Comma) {
                break;
            }
        }
        AlterAction::Commands(commands)
    };
    let _ = p.consume_token(&Token::SemiColon);
    if p.peek_token_ref().token != Token::EOF {
        return expected(p, "end of statement");
    }
    Ok(AlterStatement {
        kind,
        if_exists,
        name,
        action,
    })
}

/// An identifier (an empty quoted one is refused when the statement runs).
fn parse_name(p: &mut Parser) -> Result<Ident, ParserError> {
    p.parse_identifier()
}

fn parse_command(p: &mut Parser, kind: RelationKind) -> Result<AlterCommand, ParserError> {
    if kind == RelationKind::Table {
        if p.parse_keyword(Keyword::ADD) {
            let constraint = [
                Keyword::CONSTRAINT,
                Keyword::PRIMARY,
                Keyword::UNIQUE,
                Keyword::CHECK,
                Keyword::FOREIGN,
                Keyword::EXCLUDE,
            ]
            .iter()
            .any(|k| p.peek_keyword(*k));
            // PRIMARY KEY and UNIQUE, named or not (`sql::constraints`).
            let key = |n: usize| {
                matches!(&p.peek_nth_token_ref(n).token,
                    Token::Word(w) if w.keyword == Keyword::PRIMARY || w.keyword == Keyword::UNIQUE)
            };
            if key(0) || (p.peek_keyword(Keyword::CONSTRAINT) && key(2)) {
                if let Some(c) = p.parse_optional_table_constraint()? {
                    return Ok(AlterCommand::AddConstraint(c));
                }
            }
            if constraint {
                let words = if p.peek_keyword(Keyword::CONSTRAINT) {
                    1
                } else {
                    2
                };
                return unsupported(p, "ADD", words);
            }
            let _ = p.parse_keyword(Keyword::COLUMN);
            let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
            let column = p.parse_column_def()?;
            return Ok(AlterCommand::AddColumn {
                if_not_exists,
                column,
            });
        }
        if p.parse_keyword(Keyword::DROP) {
            if !p.parse_keyword(Keyword::COLUMN) && p.parse_keyword(Keyword::CONSTRAINT) {
                let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
                let name = parse_name(p)?;
                // Nothing depends on a key constraint here: CASCADE and RESTRICT are alike.
                let _ = p.parse_one_of_keywords(&[Keyword::CASCADE, Keyword::RESTRICT]);
                return Ok(AlterCommand::DropConstraint { if_exists, name });
            }
            let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
            let column = parse_name(p)?;
            let cascade = match p.parse_one_of_keywords(&[Keyword::CASCADE, Keyword::RESTRICT]) {
                Some(k) => k == Keyword::CASCADE,
                None => false,
            };
            return Ok(AlterCommand::DropColumn {
                if_exists,
                column,
                cascade,
            });
        }
        if p.parse_keyword(Keyword::ALTER) {
            let _ = p.parse_keyword(Keyword::COLUMN);
            let column = parse_name(p)?;
            if p.parse_keywords(&[Keyword::SET, Keyword::DEFAULT]) {
                let expr = p.parse_expr()?;
                return Ok(AlterCommand::SetDefault { column, expr });
            }
            if p.parse_keywords(&[Keyword::DROP, Keyword::DEFAULT]) {
                return Ok(AlterCommand::DropDefault { column });
            }
            if p.parse_keywords(&[Keyword::SET, Keyword::NOT, Keyword::NULL]) {
                return Ok(AlterCommand::SetNotNull { column });
            }
            if p.parse_keywords(&[Keyword::DROP, Keyword::NOT, Keyword::NULL]) {
                return Ok(AlterCommand::DropNotNull { column });
            }
            let words = if p.peek_keyword(Keyword::SET) || p.peek_keyword(Keyword::DROP) {
                2
            } else {
                1
            };
            return unsupported(p, "ALTER COLUMN", words);
        }
    }
    let options = matches!(
        p.peek_tokens_ref::<2>(),
        [first, second] if matches!(&first.token, Token::Word(w) if w.keyword == Keyword::SET || w.keyword == Keyword::RESET)
            && second.token == Token::LParen
    );
    if options {
        let set = p.parse_keyword(Keyword::SET);
        if !set {
            p.expect_keyword_is(Keyword::RESET)?;
        }
        p.expect_token(&Token::LParen)?;
        {
            let command = if set {
                AlterCommand::SetOptions(p.parse_comma_separated(Parser::parse_expr)?)
            } else {
                AlterCommand::ResetOptions(p.parse_comma_separated(parse_name)?)
            };
            p.expect_token(&Token::RParen)?;
            return Ok(command);
        }
    }
    if kind == RelationKind::Index && !p.peek_keyword(Keyword::ALTER) {
        // ALTER INDEX knows few subcommands; the rest is a syntax error there.
        let words = command_words(p, 2);
        if words.is_empty()
            || !["ATTACH", "DEPENDS", "NO", "SET", "RESET"]
                .iter()
                .any(|w| words.starts_with(w))
        {
            return expected(p, "RENAME, SET or RESET");
        }
        return Ok(AlterCommand::Unsupported(words));
    }
    unsupported(p, "", 2)
}

/// Reads the rest of a subcommand iolab does not run (up to a comma outside
/// parentheses, or the end) and keeps its words: `lead` (words already read) and up to
/// `words` keywords after it, which name the subcommand (`ALTER COLUMN TYPE`, `OWNER TO`).
fn unsupported(p: &mut Parser, lead: &str, words: usize) -> Result<AlterCommand, ParserError> {
    let rest = command_words(p, words);
    let mut depth = 0usize;
    loop {
        let token = p.peek_token_ref().token.clone();
        match token {
            Token::EOF | Token::SemiColon => break,
            Token::Comma if depth == 0 => break,
            Token::LParen => depth += 1,
            Token::RParen => depth = depth.saturating_sub(1),
            _ => {}
        }
        p.next_token();
    }
    let words = [lead, &rest].join(" ").trim().to_string();
    Ok(AlterCommand::Unsupported(words))
}

/// Up to `max` keywords at the parser's position, stopping at an identifier or symbol;
/// the parser does not move.
fn command_words(p: &Parser, max: usize) -> String {
    let mut words: Vec<String> = Vec::new();
    for n in 0..max {
        match &p.peek_nth_token_ref(n).token {
            Token::Word(w) if w.keyword != Keyword::NoKeyword && w.quote_style.is_none() => {
                words.push(w.value.to_uppercase());
            }
            _ => break,
        }
    }
    words.join(" ")
}

/// sqlparser's "Expected: …, found: …" at the next token, which `errors::from_parser`
/// turns into PostgreSQL's `syntax error at or near "…"` with its position.
fn expected<T>(p: &Parser, what: &str) -> Result<T, ParserError> {
    let token: &TokenWithSpan = p.peek_token_ref();
    let at = token.span.start;
    Err(ParserError::ParserError(format!(
        "Expected: {what}, found: {} at Line: {}, Column: {}",
        token.token, at.line, at.column
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> AlterStatement {
        parse(text).expect("an ALTER statement").unwrap()
    }

    fn commands(text: &str) -> Vec<AlterCommand> {
        match parsed(text).action {
            AlterAction::Commands(c) => c,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn renames_of_every_kind() {
        let s = parsed("ALTER INDEX IF EXISTS public.i RENAME TO j");
        assert_eq!(s.kind, RelationKind::Index);
        assert!(s.if_exists);
        assert_eq!(s.name.to_string(), "public.i");
        assert_eq!(s.action, AlterAction::Rename(Ident::new("j")));
        assert_eq!(s.tag(), "ALTER INDEX");
        assert_eq!(parsed("alter view v rename to w;").tag(), "ALTER VIEW");
        assert_eq!(
            parsed("ALTER SEQUENCE s RENAME TO s2").tag(),
            "ALTER SEQUENCE"
        );
        // Sequence options are another module's.
        assert!(parse("ALTER SEQUENCE s RESTART WITH 5").is_none());
        assert!(parse("ALTER SYSTEM SET work_mem = '1MB'").is_none());
        assert!(parse("SELECT 1").is_none());
        for text in [
            "ALTER TABLE t RENAME a TO b",
            "ALTER TABLE t RENAME COLUMN a TO b",
        ] {
            assert_eq!(
                parsed(text).action,
                AlterAction::RenameColumn {
                    from: Ident::new("a"),
                    to: Ident::new("b")
                }
            );
        }
    }

    #[test]
    fn subcommands_in_order() {
        let c = commands(
            "ALTER TABLE t ADD COLUMN IF NOT EXISTS x int DEFAULT 1 + 1 NOT NULL, add y text, \
             DROP COLUMN IF EXISTS z CASCADE, drop w, ALTER COLUMN a SET DEFAULT now(), \
             ALTER b DROP DEFAULT, ALTER COLUMN c SET NOT NULL, ALTER c DROP NOT NULL, \
             SET (fillfactor = 70), RESET (fillfactor)",
        );
        assert_eq!(c.len(), 10);
        let AlterCommand::AddColumn {
            if_not_exists: true,
            column,
        } = &c[0]
        else {
            panic!("{:?}", c[0])
        };
        assert_eq!(column.to_string(), "x INT DEFAULT 1 + 1 NOT NULL");
        assert!(
            matches!(&c[1], AlterCommand::AddColumn { if_not_exists: false, column } if column.name.value == "y")
        );
        assert!(matches!(
            &c[2],
            AlterCommand::DropColumn {
                if_exists: true,
                cascade: true,
                ..
            }
        ));
        assert!(matches!(
            &c[3],
            AlterCommand::DropColumn {
                if_exists: false,
                cascade: false,
                ..
            }
        ));
        assert!(
            matches!(&c[4], AlterCommand::SetDefault { expr, .. } if expr.to_string() == "now()")
        );
        assert!(matches!(&c[5], AlterCommand::DropDefault { .. }));
        assert!(matches!(&c[6], AlterCommand::SetNotNull { .. }));
        assert!(matches!(&c[7], AlterCommand::DropNotNull { .. }));
        assert!(matches!(&c[8], AlterCommand::SetOptions(o) if o.len() == 1));
        assert!(matches!(&c[9], AlterCommand::ResetOptions(o) if o[0].value == "fillfactor"));
    }

    #[test]
    fn other_subcommands_are_named() {
        let c = commands(
            "ALTER TABLE t ALTER COLUMN a TYPE bigint USING (a + 1), OWNER TO me, \
             ADD CONSTRAINT c CHECK (a > 0), ADD FOREIGN KEY (a) REFERENCES u, SET SCHEMA s, \
             ALTER a SET STATISTICS 5",
        );
        let words: Vec<&str> = c
            .iter()
            .map(|c| match c {
                AlterCommand::Unsupported(w) => w.as_str(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            words,
            [
                "ALTER COLUMN TYPE",
                "OWNER TO",
                "ADD CONSTRAINT",
                "ADD FOREIGN KEY",
                "SET SCHEMA",
                "ALTER COLUMN SET STATISTICS",
            ]
        );
        assert!(matches!(
            &commands("ALTER INDEX i SET (fillfactor = 50)")[0],
            AlterCommand::SetOptions(_)
        ));
        let keys = commands(
            "ALTER TABLE t ADD PRIMARY KEY (a), ADD CONSTRAINT k UNIQUE (b), \
             DROP CONSTRAINT IF EXISTS k CASCADE",
        );
        assert!(matches!(&keys[0], AlterCommand::AddConstraint(_)));
        assert!(matches!(&keys[1], AlterCommand::AddConstraint(_)));
        assert!(
            matches!(&keys[2], AlterCommand::DropConstraint { if_exists: true, name } if name.value == "k")
        );
    }

    #[test]
    fn syntax_errors_say_where() {
        let e = parse("ALTER TABLE t ADD COLUMN x int garbage")
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("found: garbage"), "{e}");
        let e = parse("ALTER INDEX i RENAME COLUMN a TO b")
            .unwrap()
            .unwrap_err();
        assert!(e.to_string().contains("found: COLUMN"), "{e}");
    }
}
