//! CREATE SEQUENCE, ALTER SEQUENCE and DROP SEQUENCE.
//!
//! sqlparser reads CREATE SEQUENCE's options in one fixed order only and does not know
//! ALTER SEQUENCE, so both are read here with PostgreSQL's grammar (options in any order,
//! each at most once):
//!
//! ```text
//! CREATE SEQUENCE [IF NOT EXISTS] name [option …]
//! ALTER SEQUENCE [IF EXISTS] name [option …]
//! option: AS type | INCREMENT [BY] n | MINVALUE n | NO MINVALUE | MAXVALUE n
//!       | NO MAXVALUE | START [WITH] n | RESTART [[WITH] n] (ALTER only) | CACHE n
//!       | [NO] CYCLE | OWNED BY table.column | OWNED BY NONE
//! ```
//!
//! The catalog checks the options (`iolab_catalog::sequence`). CREATE and DROP are
//! recorded in the transaction's DDL log, so ROLLBACK undoes them; ALTER SEQUENCE takes
//! effect at once and is not undone (a RESTART, as `setval`, never is).

use std::sync::Arc;

use datafusion::sql::sqlparser::ast::{self, ObjectName};
use iolab_catalog::{sqlstate, OwnedBy, PgError, PgResult, PgType, SequenceDef, SequenceOptions};
use iolab_engine::Database;

use crate::sql::ddl::split_name;
use crate::sql::ddl_log::{DdlEntry, DdlLog};

/// A CREATE or ALTER SEQUENCE statement.
#[derive(Clone, Debug, PartialEq)]
pub struct SequenceStmt {
    pub alter: bool,
    /// IF NOT EXISTS (CREATE) / IF EXISTS (ALTER).
    pub if_clause: bool,
    pub schema: Option<String>,
    pub name: String,
    pub options: SequenceOptions,
    /// `OWNED BY t.c` as `(schema, table, column)`; `Some(None)` is OWNED BY NONE.
    pub owned_by: OwnedByClause,
}

/// A word, a number or a punctuation mark of the statement.
#[derive(Clone, Debug, PartialEq)]
enum Token {
    /// An identifier or keyword, lower-cased unless quoted; `quoted` says which.
    Word {
        text: String,
        quoted: bool,
    },
    Number(String),
    Punct(char),
}

impl Token {
    fn shown(&self) -> String {
        match self {
            Token::Word { text, .. } | Token::Number(text) => text.clone(),
            Token::Punct(c) => c.to_string(),
        }
    }
}

fn tokens(text: &str) -> PgResult<Vec<Token>> {
    let mut out = Vec::new();
    let mut chars = crate::sql::split::strip_comments(text)
        .chars()
        .collect::<Vec<_>>()
        .into_iter()
        .peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() || c == ';' {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut word = String::new();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        word.push('"');
                    }
                    Some('"') => break,
                    Some(c) => word.push(c),
                    None => {
                        return Err(PgError::syntax(
                            "unterminated quoted identifier at or near \"\"\"",
                        ))
                    }
                }
            }
            out.push(Token::Word {
                text: word,
                quoted: true,
            });
        } else if c.is_ascii_digit()
            || ((c == '-' || c == '+') && {
                let mut ahead = chars.clone();
                ahead.next();
                ahead.peek().is_some_and(|d| d.is_ascii_digit())
            })
        {
            let mut n = String::new();
            n.push(c);
            chars.next();
            while let Some(&d) = chars.peek() {
                if !d.is_ascii_alphanumeric() && d != '.' {
                    break;
                }
                n.push(d);
                chars.next();
            }
            out.push(Token::Number(n));
        } else if c.is_alphanumeric() || c == '_' {
            let mut word = String::new();
            while let Some(&d) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_' || d == '$') {
                    break;
                }
                word.push(d.to_ascii_lowercase());
                chars.next();
            }
            out.push(Token::Word {
                text: word,
                quoted: false,
            });
        } else {
            out.push(Token::Punct(c));
            chars.next();
        }
    }
    Ok(out)
}

/// Reads tokens in order.
struct Reader {
    tokens: Vec<Token>,
    at: usize,
}

impl Reader {
    fn peek_keyword(&self, word: &str) -> bool {
        matches!(self.tokens.get(self.at), Some(Token::Word { text, quoted: false }) if text == word)
    }

    fn keyword(&mut self, word: &str) -> bool {
        let found = self.peek_keyword(word);
        if found {
            self.at += 1;
        }
        found
    }

    fn keywords(&mut self, words: &[&str]) -> bool {
        let save = self.at;
        if words.iter().all(|w| self.keyword(w)) {
            return true;
        }
        self.at = save;
        false
    }

    fn error_here(&self) -> PgError {
        match self.tokens.get(self.at) {
            Some(t) => PgError::syntax(format!("syntax error at or near \"{}\"", t.shown())),
            None => PgError::syntax("syntax error at end of input"),
        }
    }

    fn expect(&mut self, word: &str) -> PgResult<()> {
        if self.keyword(word) {
            Ok(())
        } else {
            Err(self.error_here())
        }
    }

    fn ident(&mut self) -> PgResult<String> {
        match self.tokens.get(self.at) {
            Some(Token::Word { text, .. }) => {
                self.at += 1;
                Ok(text.clone())
            }
            _ => Err(self.error_here()),
        }
    }

    /// `a`, `a.b`, `a.b.c`: the parts.
    fn dotted_name(&mut self) -> PgResult<Vec<String>> {
        let mut parts = vec![self.ident()?];
        while self.tokens.get(self.at) == Some(&Token::Punct('.')) {
            self.at += 1;
            parts.push(self.ident()?);
        }
        Ok(parts)
    }

    fn number(&mut self) -> PgResult<i64> {
        match self.tokens.get(self.at) {
            Some(Token::Number(n)) => {
                let value = n.parse::<i64>().map_err(|_| {
                    PgError::new(
                        sqlstate::INVALID_PARAMETER_VALUE,
                        format!("value \"{n}\" is out of range for type bigint"),
                    )
                })?;
                self.at += 1;
                Ok(value)
            }
            _ => Err(self.error_here()),
        }
    }

    fn done(&self) -> bool {
        self.at >= self.tokens.len()
    }
}

/// Parses CREATE / ALTER SEQUENCE; `None` if the text is neither (the SQL parser then
/// reports it).
pub fn parse(text: &str) -> Option<PgResult<SequenceStmt>> {
    let tokens = tokens(text).ok()?;
    let mut r = Reader { tokens, at: 0 };
    let alter = if r.keywords(&["create", "sequence"]) {
        false
    } else if r.keywords(&["alter", "sequence"]) {
        true
    } else {
        return None;
    };
    Some(parse_rest(&mut r, alter))
}

fn parse_rest(r: &mut Reader, alter: bool) -> PgResult<SequenceStmt> {
    let if_clause = if alter {
        r.keywords(&["if", "exists"])
    } else {
        r.keywords(&["if", "not", "exists"])
    };
    let (schema, name) = match r.dotted_name()?.as_slice() {
        [n] => (None, n.clone()),
        [s, n] => (Some(s.clone()), n.clone()),
        [_, s, n] => (Some(s.clone()), n.clone()),
        _ => {
            return Err(PgError::syntax(
                "improper qualified name (too many dotted names)",
            ))
        }
    };
    let mut stmt = SequenceStmt {
        alter,
        if_clause,
        schema,
        name,
        options: SequenceOptions::default(),
        owned_by: None,
    };
    read_options(r, alter, &mut stmt.options, &mut stmt.owned_by)?;
    Ok(stmt)
}

/// `OWNED BY` as read: `Some(None)` is OWNED BY NONE.
type OwnedByClause = Option<Option<(Option<String>, String, String)>>;

/// Reads options up to the end of the tokens (RESTART only when `alter`).
fn read_options(
    r: &mut Reader,
    alter: bool,
    o: &mut SequenceOptions,
    owned_by: &mut OwnedByClause,
) -> PgResult<()> {
    fn once<T>(slot: &mut Option<T>, value: T) -> PgResult<()> {
        if slot.is_some() {
            return Err(PgError::syntax("conflicting or redundant options"));
        }
        *slot = Some(value);
        Ok(())
    }
    while !r.done() {
        if r.keyword("as") {
            let mut words = vec![r.ident()?];
            if words[0] == "double" && r.keyword("precision") {
                words.push("precision".into());
            }
            let name = words.join(" ");
            let ty = PgType::from_sql_name(&name, &[]).ok_or_else(|| {
                PgError::new(
                    sqlstate::UNDEFINED_OBJECT,
                    format!("type \"{name}\" does not exist"),
                )
            })?;
            once(&mut o.ty, ty)?;
        } else if r.keyword("increment") {
            r.keyword("by");
            once(&mut o.increment, r.number()?)?;
        } else if r.keyword("minvalue") {
            once(&mut o.min, Some(r.number()?))?;
        } else if r.keyword("maxvalue") {
            once(&mut o.max, Some(r.number()?))?;
        } else if r.keywords(&["no", "minvalue"]) {
            once(&mut o.min, None)?;
        } else if r.keywords(&["no", "maxvalue"]) {
            once(&mut o.max, None)?;
        } else if r.keywords(&["no", "cycle"]) {
            once(&mut o.cycle, false)?;
        } else if r.keyword("cycle") {
            once(&mut o.cycle, true)?;
        } else if r.keyword("start") {
            r.keyword("with");
            once(&mut o.start, r.number()?)?;
        } else if alter && r.keyword("restart") {
            let with = r.keyword("with");
            let value = if with || matches!(r.tokens.get(r.at), Some(Token::Number(_))) {
                Some(r.number()?)
            } else {
                None
            };
            once(&mut o.restart, value)?;
        } else if r.keyword("cache") {
            once(&mut o.cache, r.number()?)?;
        } else if r.keyword("owned") {
            r.expect("by")?;
            let owner = if r.keyword("none") {
                None
            } else {
                match r.dotted_name()?.as_slice() {
                    [t, c] => Some((None, t.clone(), c.clone())),
                    [s, t, c] => Some((Some(s.clone()), t.clone(), c.clone())),
                    _ => {
                        return Err(PgError::syntax("invalid OWNED BY option")
                            .with_hint("Specify OWNED BY table.column or OWNED BY NONE."))
                    }
                }
            };
            once(owned_by, owner)?;
        } else {
            return Err(r.error_here());
        }
    }
    Ok(())
}

/// CREATE TABLE's text with each identity column's `AS IDENTITY (options)` rewritten in
/// the one order sqlparser reads (PostgreSQL takes them in any order); `None` when there
/// is nothing to rewrite or the options do not read (sqlparser then reports them).
pub fn order_identity_options(text: &str) -> Option<String> {
    let upper = text.to_ascii_uppercase();
    let mut out = String::new();
    let mut from = 0;
    let mut changed = false;
    while let Some(i) = upper[from..].find("IDENTITY") {
        let after = from + i + "IDENTITY".len();
        let rest = &text[after..];
        let open = after + rest.len() - rest.trim_start().len();
        if !text[open..].starts_with('(') {
            out.push_str(&text[from..after]);
            from = after;
            continue;
        }
        let close = open + text[open..].find(')')?;
        let mut r = Reader {
            tokens: tokens(&text[open + 1..close]).ok()?,
            at: 0,
        };
        let mut o = SequenceOptions::default();
        let mut owned_by = None;
        read_options(&mut r, false, &mut o, &mut owned_by).ok()?;
        if o.ty.is_some() || owned_by.is_some() {
            return None;
        }
        let mut parts = Vec::new();
        if let Some(n) = o.increment {
            parts.push(format!("INCREMENT BY {n}"));
        }
        match o.min {
            Some(Some(n)) => parts.push(format!("MINVALUE {n}")),
            Some(None) => parts.push("NO MINVALUE".into()),
            None => {}
        }
        match o.max {
            Some(Some(n)) => parts.push(format!("MAXVALUE {n}")),
            Some(None) => parts.push("NO MAXVALUE".into()),
            None => {}
        }
        if let Some(n) = o.start {
            parts.push(format!("START WITH {n}"));
        }
        if let Some(n) = o.cache {
            parts.push(format!("CACHE {n}"));
        }
        match o.cycle {
            Some(true) => parts.push("CYCLE".into()),
            Some(false) => parts.push("NO CYCLE".into()),
            None => {}
        }
        out.push_str(&text[from..open]);
        out.push('(');
        out.push_str(&parts.join(" "));
        out.push(')');
        from = close + 1;
        changed = true;
    }
    out.push_str(&text[from..]);
    changed.then_some(out)
}

/// The options of an identity column (`GENERATED … AS IDENTITY (START WITH 10 …)`), as
/// sqlparser read them (in its order: see [`order_identity_options`]).
pub fn identity_options(options: &[ast::SequenceOptions]) -> PgResult<SequenceOptions> {
    let number = |e: &ast::Expr| {
        e.to_string()
            .replace(' ', "")
            .parse::<i64>()
            .map_err(|_| PgError::syntax(format!("syntax error at or near \"{e}\"")))
    };
    let mut o = SequenceOptions::default();
    for option in options {
        match option {
            ast::SequenceOptions::IncrementBy(e, _) => o.increment = Some(number(e)?),
            ast::SequenceOptions::MinValue(e) => o.min = Some(e.as_ref().map(number).transpose()?),
            ast::SequenceOptions::MaxValue(e) => o.max = Some(e.as_ref().map(number).transpose()?),
            ast::SequenceOptions::StartWith(e, _) => o.start = Some(number(e)?),
            ast::SequenceOptions::Cache(e) => o.cache = Some(number(e)?),
            // sqlparser's flag is "NO" was written.
            ast::SequenceOptions::Cycle(no) => o.cycle = Some(!no),
        }
    }
    Ok(o)
}

/// The owner `OWNED BY t.c` names: the table must exist and have the column.
fn owner(
    db: &Database,
    seq_schema: &str,
    owned_by: &(Option<String>, String, String),
) -> PgResult<OwnedBy> {
    let (schema, table, column) = owned_by;
    let table = db.catalog.resolve(schema.as_deref(), table)?;
    if table.column_index(column).is_none() {
        return Err(PgError::new(
            sqlstate::UNDEFINED_COLUMN,
            format!(
                "column \"{column}\" of relation \"{}\" does not exist",
                table.name
            ),
        ));
    }
    if table.schema != seq_schema {
        return Err(PgError::new(
            sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
            "sequence must be in same schema as table it is linked to",
        ));
    }
    Ok(OwnedBy {
        table_oid: table.oid,
        column: column.clone(),
        identity: false,
    })
}

/// Runs CREATE or ALTER SEQUENCE; returns the notice of an IF [NOT] EXISTS that found
/// (or did not find) the sequence.
pub fn run(db: &Arc<Database>, stmt: &SequenceStmt, log: &mut DdlLog) -> PgResult<Option<String>> {
    let schema = stmt.schema.clone().unwrap_or_else(|| "public".into());
    if stmt.alter {
        return alter(db, stmt, &schema);
    }
    crate::sql::ddl::check_identifier(&stmt.name)?;
    if stmt.options.restart.is_some() {
        return Err(PgError::syntax("syntax error at or near \"restart\""));
    }
    let mut def = stmt.options.define()?;
    def.schema = schema.clone();
    def.name = stmt.name.clone();
    if let Some(Some(owned_by)) = &stmt.owned_by {
        def.owned_by = Some(owner(db, &schema, owned_by)?);
    }
    match db.catalog.create_sequence(def, stmt.if_clause)? {
        Some(created) => {
            log.record(db, DdlEntry::CreatedSequence { oid: created.oid })?;
            Ok(None)
        }
        None => Ok(Some(format!(
            "relation \"{}\" already exists, skipping",
            stmt.name
        ))),
    }
}

fn alter(db: &Arc<Database>, stmt: &SequenceStmt, schema: &str) -> PgResult<Option<String>> {
    let Some(old) = db.catalog.sequence(schema, &stmt.name) else {
        if stmt.if_clause {
            return Ok(Some(format!(
                "relation \"{}\" does not exist, skipping",
                stmt.name
            )));
        }
        if db.catalog.relation_name_taken(schema, &stmt.name) {
            return Err(not_a_sequence(&stmt.name));
        }
        return Err(PgError::undefined_table(&stmt.name));
    };
    let (mut def, restart) = stmt.options.apply(Some(&old))?;
    match &stmt.owned_by {
        Some(Some(owned_by)) => def.owned_by = Some(owner(db, schema, owned_by)?),
        Some(None) => def.owned_by = None,
        None => {}
    }
    db.catalog.update_sequence(def.clone())?;
    // Values the old definition wrote ahead of are written again under the new one (an
    // increment or bound change must not leave handed-out values past the disk position).
    let values = &db.catalog.sequence_values;
    let position = match restart {
        Some(p) => p,
        None => values.state(&def)?.position,
    };
    values.set(&def, position)?;
    Ok(None)
}

fn not_a_sequence(name: &str) -> PgError {
    PgError::new(
        sqlstate::WRONG_OBJECT_TYPE,
        format!("\"{name}\" is not a sequence"),
    )
}

/// DROP SEQUENCE [IF EXISTS] a, b; returns the notices. The catalog entries go now, the
/// position files at COMMIT.
pub fn drop(
    db: &Arc<Database>,
    names: &[ObjectName],
    if_exists: bool,
    log: &mut DdlLog,
) -> PgResult<Vec<String>> {
    let mut notices = Vec::new();
    let mut found = Vec::new();
    for name in names {
        let (schema, seq) = split_name(name)?;
        let schema = schema.unwrap_or_else(|| "public".into());
        match db.catalog.sequence(&schema, &seq) {
            Some(def) => found.push(def),
            None if db.catalog.relation_name_taken(&schema, &seq) => {
                return Err(not_a_sequence(&seq).with_hint(
                    if db.catalog.index(&schema, &seq).is_some() {
                        "Use DROP INDEX to remove an index."
                    } else if db.catalog.view(&schema, &seq).is_some() {
                        "Use DROP VIEW to remove a view."
                    } else {
                        "Use DROP TABLE to remove a table."
                    },
                ))
            }
            None if if_exists => {
                notices.push(format!("sequence \"{seq}\" does not exist, skipping"))
            }
            None => {
                return Err(PgError::new(
                    sqlstate::UNDEFINED_TABLE,
                    format!("sequence \"{seq}\" does not exist"),
                ))
            }
        }
    }
    for def in &found {
        db.catalog.check_sequence_unused(def)?;
    }
    for def in found {
        let oid = def.oid;
        log.record(db, DdlEntry::DroppedSequence(def))?;
        db.catalog.drop_sequence(oid)?;
    }
    Ok(notices)
}

/// The sequence a column gets for `serial` or an identity (its options; names and owner
/// are the catalog's to fill in).
pub fn column_sequence(ty: PgType, options: &SequenceOptions) -> PgResult<SequenceDef> {
    SequenceOptions {
        ty: Some(ty),
        ..options.clone()
    }
    .define()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> SequenceStmt {
        parse(text).expect("a sequence statement").expect("parses")
    }

    #[test]
    fn options_come_in_any_order() {
        let s = parsed(
            "CREATE SEQUENCE IF NOT EXISTS public.\"S\" START WITH 10 INCREMENT BY -2 NO MAXVALUE \
             MINVALUE -100 CACHE 5 CYCLE AS integer OWNED BY t.id;",
        );
        assert!(!s.alter && s.if_clause);
        assert_eq!(
            (s.schema.as_deref(), s.name.as_str()),
            (Some("public"), "S")
        );
        let o = &s.options;
        assert_eq!(o.start, Some(10));
        assert_eq!(o.increment, Some(-2));
        assert_eq!(o.max, Some(None));
        assert_eq!(o.min, Some(Some(-100)));
        assert_eq!(
            (o.cache, o.cycle, o.ty),
            (Some(5), Some(true), Some(PgType::Int4))
        );
        assert_eq!(s.owned_by, Some(Some((None, "t".into(), "id".into()))));
    }

    #[test]
    fn alter_reads_restart() {
        let s = parsed("alter sequence s restart");
        assert!(s.alter);
        assert_eq!(s.options.restart, Some(None));
        assert_eq!(
            parsed("ALTER SEQUENCE s RESTART WITH 50").options.restart,
            Some(Some(50))
        );
        assert_eq!(
            parsed("ALTER SEQUENCE s RESTART 7").options.restart,
            Some(Some(7))
        );
        assert_eq!(
            parsed("ALTER SEQUENCE s OWNED BY NONE").owned_by,
            Some(None)
        );
    }

    #[test]
    fn identity_options_are_put_in_sqlparser_order() {
        let sql = "CREATE TABLE t (id bigint GENERATED BY DEFAULT AS IDENTITY (start with 100 increment by 5), b text)";
        assert_eq!(
            order_identity_options(sql).unwrap(),
            "CREATE TABLE t (id bigint GENERATED BY DEFAULT AS IDENTITY (INCREMENT BY 5 START WITH 100), b text)"
        );
        assert_eq!(
            order_identity_options("CREATE TABLE t (id int GENERATED ALWAYS AS IDENTITY)"),
            None
        );
    }

    #[test]
    fn mistakes_are_postgres_errors() {
        let e = parse("create sequence s increment 1 increment 2")
            .unwrap()
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("42601", "conflicting or redundant options")
        );
        let e = parse("create sequence s bogus 1").unwrap().unwrap_err();
        assert_eq!(e.message, "syntax error at or near \"bogus\"");
        let e = parse("create sequence s start").unwrap().unwrap_err();
        assert_eq!(e.message, "syntax error at end of input");
        assert!(parse("create table t (a int)").is_none());
    }
}
