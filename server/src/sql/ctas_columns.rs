//! `CREATE [UNLOGGED] TABLE name (a, b) AS query`: a column list without types, which
//! names the query's first columns (PostgreSQL allows fewer names than columns, not more).
//!
//! sqlparser wants a type after every column name, so the list would be a syntax error.
//! [`cut_column_list`] finds such a list in the statement's text — the parenthesized
//! list right after the table's name, holding only identifiers, followed by `AS` — and
//! blanks it out (one space per character, so positions in error messages stay); after
//! parsing, [`restore_column_list`] puts the names back into the statement as columns of
//! unspecified type, which `ddl::create_table_as` applies to the query's result.

use datafusion::sql::sqlparser::ast::{self, ColumnDef, DataType, Ident};

/// The names of a CTAS column list in `text`, and `text` with the list blanked out;
/// `None` when `text` has no such list.
pub fn cut_column_list(text: &str) -> Option<(Vec<Ident>, String)> {
    let mut scan = Scanner { text, at: 0 };
    scan.word("CREATE")?;
    let _ = scan.word("UNLOGGED");
    scan.word("TABLE")?;
    if scan.word("IF").is_some() {
        scan.word("NOT")?;
        scan.word("EXISTS")?;
    }
    scan.name()?;
    while scan.symbol('.') {
        scan.name()?;
    }
    let open = scan.skip_space();
    if !scan.symbol('(') {
        return None;
    }
    let mut names = vec![scan.name()?];
    while scan.symbol(',') {
        names.push(scan.name()?);
    }
    if !scan.symbol(')') {
        return None;
    }
    let close = scan.at;
    scan.word("AS")?;
    let blank: String = text[open..close].chars().map(|_| ' ').collect();
    Some((names, format!("{}{blank}{}", &text[..open], &text[close..])))
}

/// Gives the parsed CREATE TABLE … AS the column list [`cut_column_list`] took out.
pub fn restore_column_list(stmt: &mut ast::Statement, names: Vec<Ident>) {
    let ast::Statement::CreateTable(create) = stmt else {
        unreachable!("cut_column_list matched only CREATE TABLE");
    };
    assert!(create.columns.is_empty(), "the list was blanked out");
    create.columns = names
        .into_iter()
        .map(|name| ColumnDef {
            name,
            data_type: DataType::Unspecified,
            options: Vec::new(),
        })
        .collect();
}

/// A cursor over a statement's text that skips whitespace, `--` comments and (nested)
/// `/* */` comments.
struct Scanner<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Scanner<'t> {
    fn rest(&self) -> &'t str {
        &self.text[self.at..]
    }

    /// Moves past whitespace and comments; returns where it stopped.
    fn skip_space(&mut self) -> usize {
        loop {
            let rest = self.rest();
            let trimmed = rest.trim_start();
            self.at += rest.len() - trimmed.len();
            if trimmed.starts_with("--") {
                self.at += trimmed.find('\n').unwrap_or(trimmed.len());
            } else if trimmed.starts_with("/*") {
                self.at += block_comment_len(trimmed);
            } else {
                return self.at;
            }
        }
    }

    /// The keyword `word` (any case), as a whole word.
    fn word(&mut self, word: &str) -> Option<()> {
        self.skip_space();
        let rest = self.rest();
        let candidate = rest.get(..word.len())?;
        let after = rest[word.len()..].chars().next();
        (candidate.eq_ignore_ascii_case(word) && !after.is_some_and(is_ident_char)).then(|| {
            self.at += word.len();
        })
    }

    fn symbol(&mut self, symbol: char) -> bool {
        self.skip_space();
        let found = self.rest().starts_with(symbol);
        if found {
            self.at += symbol.len_utf8();
        }
        found
    }

    /// An identifier: plain (folded to lower case by PostgreSQL, kept as written here, as
    /// sqlparser does) or double-quoted.
    fn name(&mut self) -> Option<Ident> {
        self.skip_space();
        let rest = self.rest();
        if let Some(quoted) = rest.strip_prefix('"') {
            // `""` inside stands for one `"`.
            let mut name = String::new();
            let mut chars = quoted.char_indices().peekable();
            loop {
                let (i, c) = chars.next()?;
                if c != '"' {
                    name.push(c);
                } else if chars.peek().is_some_and(|&(_, next)| next == '"') {
                    name.push('"');
                    chars.next();
                } else {
                    self.at += 1 + i + 1;
                    return Some(Ident::with_quote('"', name));
                }
            }
        }
        let first = rest.chars().next()?;
        if !(first.is_alphabetic() || first == '_') {
            return None;
        }
        let len = rest.find(|c: char| !is_ident_char(c)).unwrap_or(rest.len());
        self.at += len;
        Some(Ident::new(&rest[..len]))
    }
}

/// Bytes of the `/* … */` comment `text` starts with (PostgreSQL's nest); all of `text`
/// when it is not closed.
fn block_comment_len(text: &str) -> usize {
    let (mut depth, mut at) = (0usize, 0usize);
    while at < text.len() {
        let rest = &text[at..];
        if rest.starts_with("/*") {
            depth += 1;
            at += 2;
        } else if rest.starts_with("*/") {
            depth -= 1;
            at += 2;
            if depth == 0 {
                return at;
            }
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    text.len()
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_names_before_as_is_cut_out() {
        let (names, text) =
            cut_column_list("CREATE TABLE IF NOT EXISTS s.t (a, \"B c\") AS SELECT 1, 2").unwrap();
        assert_eq!(names, vec![Ident::new("a"), Ident::with_quote('"', "B c")]);
        let blanked = " ".repeat(r#"(a, "B c")"#.len());
        assert_eq!(
            text,
            format!("CREATE TABLE IF NOT EXISTS s.t {blanked} AS SELECT 1, 2")
        );
        let (names, text) = cut_column_list("create         table t(x)as select 1").unwrap();
        assert_eq!(names, vec![Ident::new("x")]);
        assert_eq!(text, "create         table t   as select 1");
        // Comments anywhere (PostgreSQL's block comments nest), quotes doubled in a name.
        let sql = "CREATE /* a /* nested */ one */ TABLE t -- the names:\n (a, \"x\"\"y\") /* two */ AS SELECT 1, 2";
        let (names, text) = cut_column_list(sql).unwrap();
        assert_eq!(names, vec![Ident::new("a"), Ident::with_quote('"', "x\"y")]);
        assert!(text.ends_with(" /* two */ AS SELECT 1, 2"), "{text}");
        assert!(!text.contains("(a"), "{text}");
    }

    #[test]
    fn typed_lists_and_other_statements_stay() {
        for sql in [
            "CREATE TABLE t (a int, b text)",
            "CREATE TABLE t (a, b)",
            "CREATE TABLE t AS SELECT 1",
            "CREATE TABLE t (a int) AS SELECT 1",
            "CREATE INDEX i ON t (a)",
            "CREATE TABLE tab (a, b) ASx SELECT 1",
        ] {
            assert!(cut_column_list(sql).is_none(), "{sql}");
        }
    }
}
