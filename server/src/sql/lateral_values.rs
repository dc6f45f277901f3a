//! LATERAL subqueries that only compute values: `CROSS JOIN LATERAL (SELECT f(x.a)) AS o(n)`.
//!
//! Such a subquery has no FROM: it gives one row of expressions over the columns of the
//! items before it, a way PostgreSQL users name an expression once (pgbench finds its
//! tables' partitioning with `cross join lateral (select array_position(current_schemas(true),
//! n.nspname)) as o(n)`). DataFusion cannot plan the outer column references inside it.
//! Since joining one computed row changes nothing but the columns, the subquery is taken
//! out of the FROM list and every `o.n` of the statement becomes its expression:
//!
//! ```text
//!   SELECT o.n FROM c JOIN ns ON … CROSS JOIN LATERAL (SELECT f(ns.x)) AS o(n) WHERE o.n IS NOT NULL
//!   SELECT (f(ns.x)) FROM c JOIN ns ON … WHERE (f(ns.x)) IS NOT NULL
//! ```
//!
//! Only a subquery of plain expressions is inlined: with a FROM, WHERE, GROUP BY, HAVING,
//! DISTINCT, ORDER BY, LIMIT, an aggregate or a set-returning function (which make it not
//! one row) the statement is left as it is, as it is when a bare `n` names one of its
//! columns (only `o.n` is replaced).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    self, Expr, JoinConstraint, JoinOperator, SelectItem, SetExpr, TableFactor, Visit, VisitMut,
    Visitor, VisitorMut,
};

use super::colnames;

/// `stmt` with its value-only LATERAL subqueries inlined; `None` if it has none.
pub fn inline(stmt: &ast::Statement) -> Option<ast::Statement> {
    if Visit::visit(stmt, &mut FindLateral).is_continue() {
        return None;
    }
    let mut inlined = stmt.clone();
    let mut inliner = Inliner { changed: false };
    let _ = VisitMut::visit(&mut inlined, &mut inliner);
    inliner.changed.then_some(inlined)
}

/// Stops at the first LATERAL subquery.
struct FindLateral;

impl Visitor for FindLateral {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        match factor {
            TableFactor::Derived { lateral: true, .. } => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        }
    }
}

struct Inliner {
    changed: bool,
}

impl VisitorMut for Inliner {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<()> {
        // Each inlinable subquery of this query's SELECT: taken out, then its columns
        // replaced everywhere in the query (its ORDER BY too).
        while let Some(values) = take_one(query) {
            let _ = VisitMut::visit(query, &mut Replace(&values));
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

/// A LATERAL subquery taken out of a FROM list: its alias and its columns' names and
/// expressions.
struct Values {
    alias: ast::Ident,
    columns: Vec<(String, Expr)>,
}

/// Takes the first inlinable LATERAL subquery out of `query`'s SELECT.
fn take_one(query: &mut ast::Query) -> Option<Values> {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return None;
    };
    // `*` would lose the subquery's columns.
    let wildcard = select.projection.iter().any(|item| {
        matches!(
            item,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
        )
    });
    if wildcard {
        return None;
    }
    let names_used_bare = bare_names(select);
    for (i, item) in select.from.iter_mut().enumerate() {
        // `, LATERAL (…)` as a FROM item of its own (not the first: it reads the others).
        if i > 0 && item.joins.is_empty() {
            if let Some(values) = values_of(&item.relation, &names_used_bare) {
                select.from.remove(i);
                return Some(values);
            }
        }
        for (j, join) in item.joins.iter().enumerate() {
            let plain = matches!(
                &join.join_operator,
                JoinOperator::CrossJoin(JoinConstraint::None)
            );
            if plain {
                if let Some(values) = values_of(&join.relation, &names_used_bare) {
                    item.joins.remove(j);
                    return Some(values);
                }
            }
        }
    }
    None
}

/// The alias and columns of `factor` if it is a value-only LATERAL subquery none of whose
/// column names `bare` holds.
fn values_of(factor: &TableFactor, bare: &[String]) -> Option<Values> {
    let TableFactor::Derived {
        lateral: true,
        subquery,
        alias: Some(alias),
        sample: None,
    } = factor
    else {
        return None;
    };
    let plain_query = subquery.with.is_none()
        && subquery.order_by.is_none()
        && subquery.limit_clause.is_none()
        && subquery.fetch.is_none();
    let SetExpr::Select(select) = subquery.body.as_ref() else {
        return None;
    };
    let plain_select = plain_query
        && select.from.is_empty()
        && select.selection.is_none()
        && select.distinct.is_none()
        && select.having.is_none()
        && matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty());
    if !plain_select || select.projection.len() < alias.columns.len() {
        return None;
    }
    let names = colnames::pg_names(subquery, select.projection.len())?;
    let mut columns = Vec::with_capacity(select.projection.len());
    for (k, item) in select.projection.iter().enumerate() {
        let expr = match item {
            SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e,
            _ => return None,
        };
        if !one_row_per_row(expr) {
            return None;
        }
        let name = match alias.columns.get(k) {
            Some(column) => column.name.value.clone(),
            None => match item {
                SelectItem::ExprWithAlias { alias, .. } => alias.value.clone(),
                _ => names[k].clone()?,
            },
        };
        if bare.contains(&name) {
            return None;
        }
        columns.push((name, Expr::Nested(Box::new(expr.clone()))));
    }
    Some(Values {
        alias: alias.name.clone(),
        columns,
    })
}

/// Functions that make a subquery without FROM give other than one row (aggregates over
/// its one row would become aggregates of the outer query; set-returning functions give
/// many rows).
const NOT_ONE_VALUE: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "array_agg",
    "string_agg",
    "bool_and",
    "bool_or",
    "every",
    "json_agg",
    "jsonb_agg",
    "generate_series",
    "unnest",
    "regexp_matches",
    "jsonb_array_elements",
    "json_array_elements",
];

/// Does `expr` compute one value from one row (no aggregate, window or set-returning
/// function, no subquery)?
fn one_row_per_row(expr: &Expr) -> bool {
    struct Check;
    impl Visitor for Check {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            match expr {
                Expr::Function(f) => {
                    let name = f.name.0.last().and_then(|p| p.as_ident());
                    let name = name.map(|i| i.value.to_ascii_lowercase());
                    let refused = f.over.is_some()
                        || name.is_some_and(|n| NOT_ONE_VALUE.contains(&n.as_str()));
                    if refused {
                        return ControlFlow::Break(());
                    }
                }
                Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => {
                    return ControlFlow::Break(())
                }
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    Visit::visit(expr, &mut Check).is_continue()
}

/// The unqualified column names `select` uses (its select list, WHERE, GROUP BY, HAVING
/// and join conditions).
fn bare_names(select: &ast::Select) -> Vec<String> {
    struct Bare(Vec<String>);
    impl Visitor for Bare {
        type Break = ();
        fn pre_visit_expr(&mut self, expr: &Expr) -> ControlFlow<()> {
            if let Expr::Identifier(ident) = expr {
                self.0.push(ident.value.clone());
            }
            ControlFlow::Continue(())
        }
    }
    let mut bare = Bare(Vec::new());
    let _ = Visit::visit(select, &mut bare);
    bare.0
}

/// Replaces `alias.column` by the column's expression.
struct Replace<'a>(&'a Values);

impl VisitorMut for Replace<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::CompoundIdentifier(parts) = expr {
            if let [table, column] = parts.as_slice() {
                if same_name(table, &self.0.alias) {
                    let found = self.0.columns.iter().find(|(n, _)| *n == column.value);
                    if let Some((_, value)) = found {
                        *expr = value.clone();
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Do two identifiers name the same thing (unquoted names fold to lower case)?
fn same_name(a: &ast::Ident, b: &ast::Ident) -> bool {
    let fold = |i: &ast::Ident| match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_lowercase(),
    };
    fold(a) == fold(b)
}

#[cfg(test)]
mod tests {
    use super::inline;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn inlined(sql: &str) -> Option<String> {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        inline(&stmt).map(|s| s.to_string())
    }

    #[test]
    fn value_subqueries_become_their_expressions() {
        assert_eq!(
            inlined(
                "SELECT o.n, c.relname FROM c JOIN n ON n.oid = c.ns CROSS JOIN LATERAL \
                 (SELECT array_position(current_schemas(true), n.nspname)) AS o(n) \
                 LEFT JOIN p ON p.id = c.oid WHERE o.n IS NOT NULL ORDER BY o.n"
            )
            .as_deref(),
            Some(
                "SELECT (array_position(current_schemas(true), n.nspname)), c.relname FROM c \
                 JOIN n ON n.oid = c.ns LEFT JOIN p ON p.id = c.oid \
                 WHERE (array_position(current_schemas(true), n.nspname)) IS NOT NULL \
                 ORDER BY (array_position(current_schemas(true), n.nspname))"
            )
        );
        // A FROM item of its own, columns named by the subquery.
        assert_eq!(
            inlined("SELECT v.doubled FROM t, LATERAL (SELECT t.a * 2 AS doubled) v").as_deref(),
            Some("SELECT (t.a * 2) FROM t")
        );
    }

    #[test]
    fn other_lateral_subqueries_stay() {
        for sql in [
            "SELECT * FROM t CROSS JOIN LATERAL (SELECT u.b FROM u WHERE u.a = t.a) AS s",
            "SELECT s.c FROM t CROSS JOIN LATERAL (SELECT count(t.a)) AS s(c)",
            "SELECT s.g FROM t CROSS JOIN LATERAL (SELECT generate_series(1, t.a)) AS s(g)",
            // A bare `n` may be the subquery's column or another table's: left to the planner.
            "SELECT n FROM t CROSS JOIN LATERAL (SELECT t.a + 1) AS o(n)",
            "SELECT * FROM t",
        ] {
            assert_eq!(inlined(sql), None, "{sql}");
        }
    }
}
