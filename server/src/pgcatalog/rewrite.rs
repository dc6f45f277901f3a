//! Rewrites of PostgreSQL syntax DataFusion does not take, applied to a query's text
//! before it is parsed. Clients' catalog queries (psql's `\d`, drivers, Grafana) are full
//! of them:
//!
//! | PostgreSQL | becomes |
//! |---|---|
//! | `a OPERATOR(pg_catalog.~) b` | `a ~ b` |
//! | `x COLLATE pg_catalog.default`, `COLLATE "C"` | `x` (iolab compares bytes: every collation is C) |
//! | `pg_catalog.f(…)`, `x::pg_catalog.text` | `f(…)`, `x::text` |
//! | `'t'::regclass` (a literal) | `regclassin('t')`, the OID |
//! | `c.oid::regclass`, `'t'::regclass::text` | `regclassout(c.oid)`, the name |
//! | the same for `regtype`, `regnamespace`, `regrole` | `regtypein` / `regtypeout`, … |
//! | `::regproc`, `::name`, `::"char"`, `::pg_node_tree`, … | `::text` |
//! | `::oid`, `::xid` | `::bigint` |
//! | `x AT LOCAL` | `x AT TIME ZONE current_setting('TimeZone')` |
//! | `current_schema`, `localtimestamp`, `localtime` | the same with `()` |
//!
//! A `reg*` cast of a string literal becomes the OID (what a comparison with an `oid`
//! column or a size function needs); of anything else (a column, a number), the name
//! (what a select list shows). So `WHERE relid = 16384::regclass` compares with a name.
//! A literal's cast that is a whole item of a query's select list (or of its UNION's) shows
//! the name, as in PostgreSQL ([`show_reg_literals_as_names`], on the parsed statement); one
//! in a subquery's select list stays the OID.
//!
//! The rewrite works on sqlparser's tokens (strings, comments and quoted identifiers stay
//! intact) and returns the text unchanged, without tokenizing, when nothing in it could
//! need rewriting.
//!
//! One more change is made to the parsed statement instead ([`qualify_catalog_relations`],
//! called by `sql::parse`): an unqualified catalog relation, `FROM pg_class` or `JOIN
//! pg_roles`, becomes `pg_catalog.pg_class`, ….

use std::borrow::Cow;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{self, VisitMut, VisitorMut};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, Tokenizer, Whitespace, Word};

/// Text fragments (lower case) without which a query needs no rewrite.
const TRIGGERS: &[&str] = &[
    "pg_catalog",
    "pg_node_tree",
    "pg_lsn",
    "operator",
    "collate",
    "current_schema",
    "regclass",
    "regtype",
    "regnamespace",
    "regrole",
    "regproc",
    "regoper",
    "regconfig",
    "regdictionary",
    "regcollation",
    "::oid",
    "::name",
    "::xid",
    "::cid",
    "\"char\"",
    "::int2vector",
    "::aclitem",
    "local",
];

/// The `reg*` types whose casts become calls of `<type>in` / `<type>out`.
const REG_TYPES: [&str; 4] = ["regclass", "regtype", "regnamespace", "regrole"];

/// The `reg*` type a call of `function` stands for, if it is one of the calls a cast was
/// rewritten into (`regclassout` → `regclass`): result columns are named as the cast's.
pub fn reg_cast_type(function: &str) -> Option<&'static str> {
    let ty = function
        .strip_suffix("in")
        .or_else(|| function.strip_suffix("out"))?;
    REG_TYPES.into_iter().find(|t| *t == ty)
}

/// See the module documentation.
pub fn rewrite_for_datafusion(sql: &str) -> Cow<'_, str> {
    let lower = sql.to_ascii_lowercase();
    if !TRIGGERS.iter().any(|t| lower.contains(t)) {
        return Cow::Borrowed(sql);
    }
    let Some(tokens) = faithful_tokens(sql) else {
        return Cow::Borrowed(sql);
    };
    let original = tokens.clone();
    let tokens = rewrite_operators(tokens);
    let tokens = remove_collate(tokens);
    let tokens = strip_pg_catalog(tokens);
    let tokens = rewrite_casts(tokens);
    let tokens = call_bare_functions(tokens);
    let tokens = at_local(tokens);
    if tokens == original {
        return Cow::Borrowed(sql);
    }
    Cow::Owned(tokens.iter().map(|t| t.to_string()).collect())
}

/// The tokens of `sql`, each of which prints back as exactly the text it came from: a
/// token whose printed form differs (sqlparser prints `E'a\\'b'` as `E'a'b'`) is replaced
/// by a bare word holding its source text, which no rewrite touches.
fn faithful_tokens(sql: &str) -> Option<Vec<Token>> {
    let dialect = PostgreSqlDialect {};
    let spanned = Tokenizer::new(&dialect, sql)
        .with_unescape(false)
        .tokenize_with_location()
        .ok()?;
    // Token start locations are (line, column) in characters; walk the text once to turn
    // them into byte offsets (they come in order).
    let mut starts = Vec::with_capacity(spanned.len());
    let mut chars = sql.char_indices().peekable();
    let (mut line, mut column) = (1u64, 1u64);
    for t in &spanned {
        let want = (t.span.start.line, t.span.start.column);
        while (line, column) < want {
            let (_, c) = chars.next()?;
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        if (line, column) != want {
            return None;
        }
        starts.push(chars.peek().map(|(i, _)| *i).unwrap_or(sql.len()));
    }
    let mut tokens = Vec::with_capacity(spanned.len());
    for (i, t) in spanned.into_iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(sql.len());
        let source = sql.get(starts[i]..end)?;
        if prints_as(&t.token, source) {
            tokens.push(t.token);
        } else {
            tokens.push(Token::Word(Word {
                value: source.to_string(),
                quote_style: None,
                keyword: Keyword::NoKeyword,
            }));
        }
    }
    // Every byte must be covered, or we cannot trust the spans.
    if starts.first().is_some_and(|s| *s != 0) {
        return None;
    }
    Some(tokens)
}

/// Does `token` print as exactly `source`? Unquoted words and single spaces, most of a
/// query's tokens, are compared without printing them.
fn prints_as(token: &Token, source: &str) -> bool {
    match token {
        Token::Word(w) if w.quote_style.is_none() => w.value == source,
        Token::Whitespace(Whitespace::Space) => source == " ",
        other => other.to_string() == source,
    }
}

fn is_word(t: &Token, word: &str) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

fn is_space(t: &Token) -> bool {
    matches!(t, Token::Whitespace(_))
}

fn word(text: &str) -> Token {
    Token::make_word(text, None)
}

/// Index of the next non-whitespace token at or after `i`.
fn next_significant(tokens: &[Token], mut i: usize) -> Option<usize> {
    while i < tokens.len() {
        if !is_space(&tokens[i]) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Index of the last non-whitespace token before `i`.
fn prev_significant(tokens: &[Token], i: usize) -> Option<usize> {
    (0..i).rev().find(|&j| !is_space(&tokens[j]))
}

/// `OPERATOR(schema.op)` → `op`.
fn rewrite_operators(tokens: Vec<Token>) -> Vec<Token> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        if is_word(&tokens[i], "operator") {
            if let Some(open) =
                next_significant(&tokens, i + 1).filter(|&j| tokens[j] == Token::LParen)
            {
                if let Some(close) = (open + 1..tokens.len()).find(|&j| tokens[j] == Token::RParen)
                {
                    let inner = &tokens[open + 1..close];
                    let start = inner
                        .iter()
                        .rposition(|t| *t == Token::Period)
                        .map(|p| p + 1)
                        .unwrap_or(0);
                    out.extend(inner[start..].iter().filter(|t| !is_space(t)).cloned());
                    i = close + 1;
                    continue;
                }
            }
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    out
}

/// Drops `COLLATE name` / `COLLATE schema.name`.
fn remove_collate(tokens: Vec<Token>) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        if is_word(&tokens[i], "collate") {
            let mut j = next_significant(&tokens, i + 1);
            let mut end = None;
            while let Some(k) = j {
                if !matches!(tokens[k], Token::Word(_)) {
                    break;
                }
                end = Some(k);
                match tokens.get(k + 1) {
                    Some(Token::Period) => j = Some(k + 2),
                    _ => break,
                }
            }
            if let Some(end) = end {
                // Also drop the whitespace before COLLATE.
                while out.last().is_some_and(is_space) {
                    out.pop();
                }
                i = end + 1;
                continue;
            }
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    out
}

/// `pg_catalog.f(` → `f(` and `::pg_catalog.t` → `::t`; relation names keep the schema.
fn strip_pg_catalog(tokens: Vec<Token>) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        if is_word(&tokens[i], "pg_catalog") && tokens.get(i + 1) == Some(&Token::Period) {
            let after_cast =
                prev_significant(&tokens, i).is_some_and(|p| tokens[p] == Token::DoubleColon);
            let is_call = matches!(tokens.get(i + 2), Some(Token::Word(_)))
                && next_significant(&tokens, i + 3).is_some_and(|k| tokens[k] == Token::LParen);
            if after_cast || is_call {
                i += 2;
                continue;
            }
        }
        out.push(tokens[i].clone());
        i += 1;
    }
    out
}

/// The token span `[start, end)` of the operand that ends just before index `end`
/// (the `::` of a cast): a literal, a (qualified) column, or a parenthesised expression
/// or function call.
fn operand_start(tokens: &[Token], end: usize) -> Option<usize> {
    let last = prev_significant(tokens, end)?;
    match &tokens[last] {
        Token::SingleQuotedString(_) | Token::EscapedStringLiteral(_) | Token::Number(_, _) => {
            Some(last)
        }
        Token::Word(_) => {
            let mut start = last;
            while start >= 2
                && tokens[start - 1] == Token::Period
                && matches!(tokens[start - 2], Token::Word(_))
            {
                start -= 2;
            }
            Some(start)
        }
        Token::RParen => {
            let mut depth = 0usize;
            let mut j = last;
            loop {
                match tokens[j] {
                    Token::RParen => depth += 1,
                    Token::LParen => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    _ => {}
                }
                if j == 0 {
                    return None;
                }
                j -= 1;
            }
            // A function call: include its (qualified) name.
            let mut start = j;
            if let Some(name) =
                prev_significant(tokens, j).filter(|&k| is_function_name(&tokens[k]))
            {
                start = name;
                while start >= 2
                    && tokens[start - 1] == Token::Period
                    && matches!(tokens[start - 2], Token::Word(_))
                {
                    start -= 2;
                }
            }
            Some(start)
        }
        _ => None,
    }
}

/// Is `t` (just before a `(`) the name of a called function rather than a keyword?
fn is_function_name(t: &Token) -> bool {
    const NOT_FUNCTIONS: &[&str] = &[
        "all", "and", "any", "as", "between", "by", "case", "distinct", "else", "exists", "from",
        "having", "ilike", "in", "is", "join", "like", "not", "on", "or", "select", "some", "then",
        "using", "values", "when", "where", "with",
    ];
    match t {
        Token::Word(w) if w.quote_style.is_some() => true,
        Token::Word(w) => !NOT_FUNCTIONS.contains(&w.value.to_ascii_lowercase().as_str()),
        _ => false,
    }
}

/// The type name of a cast starting at `i` (just after `::`): its lower-cased word and
/// the index after it (and after a trailing `[]`).
fn cast_type(tokens: &[Token], i: usize) -> Option<(String, bool, usize)> {
    let k = next_significant(tokens, i)?;
    let Token::Word(w) = &tokens[k] else {
        return None;
    };
    let name = if w.quote_style == Some('"') {
        format!("\"{}\"", w.value)
    } else {
        w.value.to_ascii_lowercase()
    };
    if tokens.get(k + 1) == Some(&Token::LBracket) && tokens.get(k + 2) == Some(&Token::RBracket) {
        return Some((name, true, k + 3));
    }
    Some((name, false, k + 1))
}

/// Replaces casts to PostgreSQL's OID alias and internal types (see the module docs).
fn rewrite_casts(tokens: Vec<Token>) -> Vec<Token> {
    let mut out: Vec<Token> = Vec::with_capacity(tokens.len());
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] != Token::DoubleColon {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        let Some((ty, is_array, after)) = cast_type(&tokens, i + 1) else {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        };
        let simple = match ty.as_str() {
            "oid" | "xid" | "cid" | "xid8" => Some("bigint"),
            "name" | "\"char\"" | "regproc" | "regprocedure" | "regoper" | "regoperator"
            | "pg_node_tree" | "int2vector" | "oidvector" | "aclitem" | "pg_lsn" | "regconfig"
            | "regdictionary" | "regcollation" => Some("text"),
            _ => None,
        };
        if let Some(target) = simple {
            out.push(Token::DoubleColon);
            out.push(word(target));
            if is_array {
                out.push(Token::LBracket);
                out.push(Token::RBracket);
            }
            i = after;
            continue;
        }
        let family = REG_TYPES.into_iter().find(|t| *t == ty).unwrap_or("");
        if family.is_empty() || is_array {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        }
        // The operand is already in `out` (same tokens as in the input, which we can
        // measure on `out` because earlier rewrites in this pass only touch `out` ahead
        // of the operand).
        let Some(start) = operand_start(&out, out.len()) else {
            out.push(tokens[i].clone());
            i += 1;
            continue;
        };
        let operand: Vec<Token> = out.drain(start..).collect();
        let operand_end = operand
            .iter()
            .rposition(|t| !is_space(t))
            .map(|p| p + 1)
            .unwrap_or(0);
        let (operand, trailing) = operand.split_at(operand_end);
        let literal = matches!(
            operand.first(),
            Some(Token::SingleQuotedString(_) | Token::EscapedStringLiteral(_))
        ) && operand.len() == 1;
        // `x::regclass::text` shows the name.
        let mut next = after;
        let mut to_text = false;
        if let Some(k) =
            next_significant(&tokens, after).filter(|&k| tokens[k] == Token::DoubleColon)
        {
            if let Some((t2, false, after2)) = cast_type(&tokens, k + 1) {
                if matches!(t2.as_str(), "text" | "name" | "varchar") {
                    to_text = true;
                    next = after2;
                }
            }
        }
        let function = if literal && !to_text {
            format!("{family}in")
        } else {
            format!("{family}out")
        };
        out.push(word(&function));
        out.push(Token::LParen);
        out.extend(operand.iter().cloned());
        out.push(Token::RParen);
        out.extend(trailing.iter().cloned());
        i = next;
    }
    out
}

/// `AT LOCAL` (PostgreSQL 17's spelling of the session's zone) → `AT TIME ZONE
/// current_setting('TimeZone')`.
fn at_local(mut tokens: Vec<Token>) -> Vec<Token> {
    for i in 0..tokens.len() {
        if !is_word(&tokens[i], "local") {
            continue;
        }
        let after_at = prev_significant(&tokens, i).is_some_and(|p| is_word(&tokens[p], "at"));
        if after_at {
            tokens[i] = word("TIME ZONE current_setting('TimeZone')");
        }
    }
    tokens
}

/// Functions SQL calls without parentheses.
const BARE_FUNCTIONS: &[&str] = &["current_schema", "localtimestamp", "localtime"];

/// `current_schema`, `localtimestamp`, `localtime` without parentheses (SQL's spelling) →
/// `current_schema()`, ….
fn call_bare_functions(tokens: Vec<Token>) -> Vec<Token> {
    let mut out = Vec::with_capacity(tokens.len());
    for i in 0..tokens.len() {
        out.push(tokens[i].clone());
        if BARE_FUNCTIONS.iter().any(|f| is_word(&tokens[i], f)) {
            let call = next_significant(&tokens, i + 1).is_some_and(|n| tokens[n] == Token::LParen);
            let qualified = i > 0 && tokens[i - 1] == Token::Period;
            if !call && !qualified {
                out.push(Token::LParen);
                out.push(Token::RParen);
            }
        }
    }
    out
}

/// Is `name` one of `pg_catalog`'s relations (iolab's catalogs, or a table registered
/// into `pg_catalog` by another module)?
fn is_catalog_relation(name: &str) -> bool {
    super::tables::pg_catalog_table(name).is_some() || super::tables::is_extra_table(name)
}

/// Qualifies every unqualified `pg_…` catalog relation the parsed statement reads (`FROM
/// pg_class`, `JOIN pg_stat_io`, `FROM "pg_class"`) with `pg_catalog.`, as PostgreSQL
/// finds them through the implicit `pg_catalog` on every search path. Table functions
/// (`pg_get_keywords()`) and names iolab's catalog does not have are left alone.
///
/// This one works on the statement rather than the text, so a query whose only
/// PostgreSQL-ism is a catalog name (every statistics query) is not tokenized twice.
pub fn qualify_catalog_relations(stmt: &mut ast::Statement) {
    struct Qualify;
    impl VisitorMut for Qualify {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut ast::TableFactor) -> ControlFlow<()> {
            if let ast::TableFactor::Table {
                name, args: None, ..
            } = factor
            {
                if let [ast::ObjectNamePart::Identifier(ident)] = name.0.as_slice() {
                    // An unquoted name is folded to lower case; a quoted one is taken as is.
                    let in_catalog = match ident.quote_style {
                        None => ident.value.to_ascii_lowercase(),
                        Some('"') => ident.value.clone(),
                        Some(_) => return ControlFlow::Continue(()),
                    };
                    if in_catalog.starts_with("pg_") && is_catalog_relation(&in_catalog) {
                        let schema = ast::Ident::new("pg_catalog");
                        name.0.insert(0, ast::ObjectNamePart::Identifier(schema));
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Qualify);
}

/// In the select lists of a query (and of each SELECT of its UNION, INTERSECT or EXCEPT;
/// not of a subquery, nor of `INSERT … SELECT`), a `reg*` cast of a literal shows the name,
/// as PostgreSQL's does: `regclassin('t')` (the OID, see the module documentation) becomes
/// `regclassout(regclassin('t'))`, which still fails for a relation that does not exist.
pub fn show_reg_literals_as_names(stmt: &mut ast::Statement) {
    if let ast::Statement::Query(query) = stmt {
        show_in_select_lists(query.body.as_mut());
    }
}

fn show_in_select_lists(body: &mut ast::SetExpr) {
    let select = match body {
        ast::SetExpr::Select(select) => select,
        ast::SetExpr::SetOperation { left, right, .. } => {
            show_in_select_lists(left);
            show_in_select_lists(right);
            return;
        }
        _ => return,
    };
    for item in &mut select.projection {
        let (ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. }) =
            item
        else {
            continue;
        };
        let ast::Expr::Function(f) = e else {
            continue;
        };
        let name = f
            .name
            .0
            .last()
            .and_then(|p| p.as_ident())
            .map(|i| i.value.as_str());
        let Some(ty) = name.filter(|n| n.ends_with("in")).and_then(reg_cast_type) else {
            continue;
        };
        *e = crate::sql::calls::call(&format!("{ty}out"), vec![e.clone()]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::parser::Parser;

    fn rw(sql: &str) -> String {
        rewrite_for_datafusion(sql).into_owned()
    }

    #[test]
    fn plain_queries_are_untouched() {
        let sql = "SELECT a, filler FROM eic_uniform WHERE a > 5";
        assert!(matches!(rewrite_for_datafusion(sql), Cow::Borrowed(_)));
        let sql = "SELECT 'it''s', E'a\\nb' FROM t -- pg_class\n";
        assert_eq!(rw(sql), sql);
    }

    #[test]
    fn untouched_tokens_keep_their_text() {
        let sql = "SELECT 'a''b', E'x\\'y', $$d'o$$, $t$x$t$, \"Quo\"\"ted\", 1.5e3, x::regclass FROM t -- c'\n /* b */ WHERE a <> b;";
        let expected = sql.replace("x::regclass", "regclassout(x)");
        assert_eq!(rw(sql), expected);
        let sql = "SELECT 'héllo wörld',\n\t'ünï' AS \"ç\", x::oid\n FROM t";
        assert_eq!(rw(sql), sql.replace("x::oid", "x::bigint"));
    }

    #[test]
    fn long_statements_rewrite_in_linear_time() {
        let values: Vec<String> = (0..20_000).map(|i| format!("({i}::oid, 'é{i}')")).collect();
        let sql = format!("INSERT INTO t VALUES {}", values.join(", "));
        let start = std::time::Instant::now();
        let out = rw(&sql);
        assert_eq!(out, sql.replace("::oid", "::bigint"));
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn operator_and_collate_go() {
        assert_eq!(
            rw("WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default\n  AND x"),
            "WHERE c.relname ~ '^(t)$'\n  AND x"
        );
        assert_eq!(rw("SELECT a COLLATE \"C\" FROM t"), "SELECT a FROM t");
    }

    #[test]
    fn pg_catalog_prefix_leaves_functions_and_types() {
        assert_eq!(
            rw("SELECT pg_catalog.pg_get_userbyid(c.relowner) FROM pg_catalog.pg_class c"),
            "SELECT pg_get_userbyid(c.relowner) FROM pg_catalog.pg_class c"
        );
        assert_eq!(rw("SELECT x::pg_catalog.text"), "SELECT x::text");
        assert_eq!(
            rw("SELECT current_schema, current_schema()"),
            "SELECT current_schema(), current_schema()"
        );
    }

    #[test]
    fn reg_casts_become_functions() {
        assert_eq!(
            rw("SELECT pg_relation_size('t'::regclass)"),
            "SELECT pg_relation_size(regclassin('t'))"
        );
        assert_eq!(
            rw("WHERE c.oid = 'public.t'::regclass"),
            "WHERE c.oid = regclassin('public.t')"
        );
        assert_eq!(
            rw("SELECT c.oid::pg_catalog.regclass FROM x"),
            "SELECT regclassout(c.oid) FROM x"
        );
        assert_eq!(
            rw("CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END"),
            "CASE WHEN c.reloftype = 0 THEN '' ELSE regtypeout(c.reloftype) END"
        );
        assert_eq!(rw("SELECT 't'::regclass::text"), "SELECT regclassout('t')");
        assert_eq!(
            rw("SELECT count(x)::regclass"),
            "SELECT regclassout(count(x))"
        );
        assert_eq!(
            rw("SELECT 'integer'::regtype::oid"),
            "SELECT regtypein('integer')::bigint"
        );
        assert_eq!(
            rw("SELECT relname::name, 1::oid, x::regproc"),
            "SELECT relname::text, 1::bigint, x::text"
        );
        assert_eq!(
            rw("SELECT stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp"),
            "SELECT regnamespaceout(stxnamespace) AS nsp"
        );
    }

    #[test]
    fn a_literal_reg_cast_in_the_select_list_shows_the_name() {
        let shown = |sql: &str| {
            let mut stmt = Parser::parse_sql(&PostgreSqlDialect {}, &rw(sql))
                .unwrap()
                .remove(0);
            show_reg_literals_as_names(&mut stmt);
            stmt.to_string()
        };
        assert_eq!(
            shown("SELECT 't'::regclass, 'int4'::regtype AS x, c.oid::regclass FROM pg_class c"),
            "SELECT regclassout(regclassin('t')), regtypeout(regtypein('int4')) AS x, \
             regclassout(c.oid) FROM pg_class c"
        );
        // Compared, or one level down, it stays the OID.
        assert_eq!(
            shown("SELECT x FROM (SELECT 't'::regclass AS x) s WHERE x = 't'::regclass"),
            "SELECT x FROM (SELECT regclassin('t') AS x) s WHERE x = regclassin('t')"
        );
        assert_eq!(
            shown("INSERT INTO r SELECT 't'::regclass"),
            "INSERT INTO r SELECT regclassin('t')"
        );
        assert_eq!(
            shown("SELECT 't'::regclass UNION ALL SELECT c.oid::regclass FROM pg_class c"),
            "SELECT regclassout(regclassin('t')) UNION ALL SELECT regclassout(c.oid) FROM pg_class c"
        );
    }

    /// `sql` parsed, its catalog relations qualified, printed.
    fn qualified(sql: &str) -> String {
        let mut stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        qualify_catalog_relations(&mut stmt);
        stmt.to_string()
    }

    #[test]
    fn unqualified_catalogs_get_their_schema() {
        assert_eq!(
            qualified("SELECT * FROM pg_class"),
            "SELECT * FROM pg_catalog.pg_class"
        );
        assert_eq!(
            qualified("select * from pg_roles, PG_NAMESPACE n join pg_am a on true where x in (select 1 from pg_type)"),
            "SELECT * FROM pg_catalog.pg_roles, pg_catalog.PG_NAMESPACE n JOIN pg_catalog.pg_am a ON true WHERE x IN (SELECT 1 FROM pg_catalog.pg_type)"
        );
        // Relations pg_catalog does not have are left to whoever provides them.
        assert_eq!(
            qualified("SELECT * FROM pg_not_a_catalog"),
            "SELECT * FROM pg_not_a_catalog"
        );
        // Not relations: columns, functions, qualified names.
        assert_eq!(
            qualified("SELECT pg_class, a FROM t, generate_series(1, 2)"),
            "SELECT pg_class, a FROM t, generate_series(1, 2)"
        );
        assert_eq!(
            qualified("SELECT * FROM pg_get_keywords()"),
            "SELECT * FROM pg_get_keywords()"
        );
        assert_eq!(
            qualified("SELECT * FROM pg_catalog.pg_class"),
            "SELECT * FROM pg_catalog.pg_class"
        );
        assert_eq!(
            qualified("SELECT * FROM public.pg_class"),
            "SELECT * FROM public.pg_class"
        );
        // A quoted name is taken as written.
        assert_eq!(
            qualified("SELECT * FROM \"pg_class\", \"PG_CLASS\""),
            "SELECT * FROM pg_catalog.\"pg_class\", \"PG_CLASS\""
        );
        // Statistics queries no longer need the text rewrite at all.
        assert!(matches!(
            rewrite_for_datafusion("SELECT * FROM pg_stat_io"),
            Cow::Borrowed(_)
        ));
    }

    /// Every query psql 15 sends for the meta-commands iolab supports must parse after
    /// the rewrite (the ones `psql::intercept` answers are checked there).
    #[test]
    fn psql_queries_parse_after_rewrite() {
        for sql in super::super::psql::tests::PSQL_QUERIES {
            let rewritten = rw(sql);
            Parser::parse_sql(&PostgreSqlDialect {}, &rewritten)
                .unwrap_or_else(|e| panic!("{e}\n{rewritten}"));
        }
    }
}
