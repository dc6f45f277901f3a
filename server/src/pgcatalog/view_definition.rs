//! A view's definition as `pg_get_viewdef`, `pg_views.definition` and psql's `\d+`
//! "View definition:" show it.
//!
//! PostgreSQL prints a view by deparsing its stored query tree; iolab keeps the query's
//! SQL text (as sqlparser prints it) and lays it out the way PostgreSQL's pretty printer
//! does for a plain SELECT: a leading space, one select-list item per line, each clause
//! on its own line indented so the keywords end in the same column, and a closing `;`.
//!
//! ```text
//!  SELECT id AS ident,
//!     name
//!    FROM t
//!   WHERE amount > 10;
//! ```
//!
//! An item gets ` AS name` when the view's column name is not the name the expression
//! has by itself (a bare column keeps its own name; any other expression is always
//! named, as PostgreSQL does). Queries that are not a plain SELECT (UNION, WITH, VALUES)
//! are shown on one line. PostgreSQL's deparser also qualifies columns, expands `*` and
//! adds parentheses; iolab shows what was written.

use datafusion::sql::sqlparser::ast::{self, Expr, SelectItem, SetExpr};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use iolab_catalog::ViewDef;

use super::snapshot::Snapshot;

impl Snapshot {
    /// The definition of user view `oid` (`None`: not a user view).
    pub fn view_definition(&self, oid: u32) -> Option<String> {
        self.views.iter().find(|v| v.oid == oid).map(definition)
    }
}

/// The view's query laid out as PostgreSQL prints it (see the module comment).
pub fn definition(view: &ViewDef) -> String {
    let parsed = Parser::parse_sql(&PostgreSqlDialect {}, &view.query).ok();
    let query = match parsed.as_deref() {
        Some([ast::Statement::Query(q)]) => q,
        _ => return format!(" {};", view.query),
    };
    let (SetExpr::Select(select), None, None, None) = (
        query.body.as_ref(),
        &query.with,
        &query.limit_clause,
        &query.fetch,
    ) else {
        return format!(" {query};");
    };
    let names: Vec<&str> = view.columns.iter().map(|c| c.name.as_str()).collect();
    let items: Vec<String> = select
        .projection
        .iter()
        .enumerate()
        .map(|(i, item)| select_item(item, names.get(i).copied()))
        .collect();
    let distinct = match &select.distinct {
        Some(d) => format!("{d} "),
        None => String::new(),
    };
    let mut out = format!(" SELECT {distinct}{}", items.join(",\n    "));
    if !select.from.is_empty() {
        let from: Vec<String> = select.from.iter().map(from_item).collect();
        out.push_str(&format!("\n   FROM {}", from.join(",\n    ")));
    }
    if let Some(w) = &select.selection {
        out.push_str(&format!("\n  WHERE {w}"));
    }
    if let ast::GroupByExpr::Expressions(exprs, _) = &select.group_by {
        if !exprs.is_empty() {
            let list: Vec<String> = exprs.iter().map(|e| e.to_string()).collect();
            out.push_str(&format!("\n  GROUP BY {}", list.join(", ")));
        }
    }
    if let Some(h) = &select.having {
        out.push_str(&format!("\n HAVING {h}"));
    }
    if let Some(order) = &query.order_by {
        out.push_str(&format!("\n  {order}"));
    }
    out.push(';');
    out
}

/// One select-list item, named `AS column` where PostgreSQL would name it.
fn select_item(item: &SelectItem, column: Option<&str>) -> String {
    let (expr, alias) = match item {
        SelectItem::UnnamedExpr(e) => (e, None),
        SelectItem::ExprWithAlias { expr, alias } => (expr, Some(alias.value.as_str())),
        other => return other.to_string(),
    };
    let Some(column) = column.or(alias) else {
        return expr.to_string();
    };
    let own_name = match expr {
        Expr::Identifier(id) => Some(id.value.to_lowercase()),
        Expr::CompoundIdentifier(parts) => parts.last().map(|p| p.value.to_lowercase()),
        _ => None,
    };
    if own_name.as_deref() == Some(column) {
        expr.to_string()
    } else {
        format!("{expr} AS {}", quote(column))
    }
}

/// A FROM item: the relation, then each join on its own line.
fn from_item(t: &ast::TableWithJoins) -> String {
    let mut out = t.relation.to_string();
    for j in &t.joins {
        out.push_str(&format!("\n     {}", j.to_string().trim_start()));
    }
    out
}

/// An identifier as PostgreSQL prints it: quoted unless plain lower-case.
fn quote(name: &str) -> String {
    let plain = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.chars().next().is_some_and(|c| !c.is_ascii_digit());
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_catalog::ViewColumn;

    fn view(query: &str, columns: &[&str]) -> ViewDef {
        ViewDef {
            oid: 1,
            schema: "public".into(),
            name: "v".into(),
            columns: columns
                .iter()
                .map(|c| ViewColumn {
                    name: c.to_string(),
                    type_oid: 23,
                    typmod: -1,
                })
                .collect(),
            query: query.into(),
            depends_on: vec![],
        }
    }

    #[test]
    fn plain_selects_are_laid_out_as_postgres_prints_them() {
        // What PostgreSQL 18 prints for CREATE VIEW v (ident, nm) AS
        // SELECT id, name, amount FROM t WHERE amount > 10.
        let v = view(
            "SELECT id, name, amount FROM t WHERE amount > 10",
            &["ident", "nm", "amount"],
        );
        assert_eq!(
            definition(&v),
            " SELECT id AS ident,\n    name AS nm,\n    amount\n   FROM t\n  WHERE amount > 10;"
        );
        let v = view("SELECT 1 AS a", &["a"]);
        assert_eq!(definition(&v), " SELECT 1 AS a;");
        let v = view(
            "SELECT name, count(*) FROM t GROUP BY name",
            &["name", "count"],
        );
        assert_eq!(
            definition(&v),
            " SELECT name,\n    count(*) AS count\n   FROM t\n  GROUP BY name;"
        );
    }

    #[test]
    fn other_queries_stay_on_one_line() {
        let v = view("SELECT 1 AS a UNION SELECT 2", &["a"]);
        assert_eq!(definition(&v), " SELECT 1 AS a UNION SELECT 2;");
    }
}
