//! Short column alias lists on subqueries: `FROM (SELECT 1 AS x, 2 AS y) AS t(a)`.
//!
//! PostgreSQL lets an alias list name fewer columns than the subquery has: the first ones
//! are renamed, the others keep their names (`a`, `y`); more names than columns is an
//! error (42P10). DataFusion wants exactly one name per column. So before planning, a
//! short list is completed with the names the remaining columns have, where the text says
//! what they are: a plain SELECT without `*` (PostgreSQL's column names, `colnames`) or
//! VALUES (`column1`, `column2`, …). A longer list fails as PostgreSQL's does; other short
//! lists are left for DataFusion to refuse.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    self, Ident, SetExpr, TableFactor, Visit, VisitMut, Visitor, VisitorMut,
};
use iolab_catalog::{sqlstate, PgError, PgResult};

use super::colnames;

/// `stmt` with every short alias list of a subquery completed, `None` if there is none.
/// Statements without an aliased subquery (nearly all) are only looked at, not copied.
pub fn complete(stmt: &ast::Statement) -> PgResult<Option<ast::Statement>> {
    if Visit::visit(stmt, &mut FindAliasedSubquery).is_continue() {
        return Ok(None);
    }
    let mut completed = stmt.clone();
    let mut visitor = Completer { changed: false };
    if let ControlFlow::Break(e) = VisitMut::visit(&mut completed, &mut visitor) {
        return Err(e);
    }
    Ok(visitor.changed.then_some(completed))
}

/// Stops at the first subquery with a column alias list.
struct FindAliasedSubquery;

impl Visitor for FindAliasedSubquery {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        match factor {
            TableFactor::Derived {
                alias: Some(alias), ..
            } if !alias.columns.is_empty() => ControlFlow::Break(()),
            _ => ControlFlow::Continue(()),
        }
    }
}

struct Completer {
    changed: bool,
}

impl VisitorMut for Completer {
    type Break = PgError;

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<PgError> {
        let TableFactor::Derived {
            subquery,
            alias: Some(alias),
            ..
        } = factor
        else {
            return ControlFlow::Continue(());
        };
        let given = alias.columns.len();
        if given == 0 {
            return ControlFlow::Continue(());
        }
        let Some(names) = column_names(subquery) else {
            return ControlFlow::Continue(());
        };
        if given > names.len() {
            return ControlFlow::Break(PgError::new(
                sqlstate::INVALID_COLUMN_REFERENCE,
                format!(
                    "table \"{}\" has {} columns available but {given} columns specified",
                    super::ddl::ident_name(&alias.name),
                    names.len()
                ),
            ));
        }
        if given < names.len() {
            alias
                .columns
                .extend(names[given..].iter().map(|n| ast::TableAliasColumnDef {
                    name: Ident::with_quote('"', n),
                    data_type: None,
                }));
            self.changed = true;
        }
        ControlFlow::Continue(())
    }
}

/// The names of a subquery's columns when its text says them.
fn column_names(query: &ast::Query) -> Option<Vec<String>> {
    match query.body.as_ref() {
        SetExpr::Values(values) => {
            let width = values.rows.first()?.len();
            Some((1..=width).map(|i| format!("column{i}")).collect())
        }
        SetExpr::Select(select) => colnames::pg_names(query, select.projection.len())?
            .into_iter()
            .collect(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn completed(sql: &str) -> PgResult<Option<String>> {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        Ok(complete(&stmt)?.map(|s| s.to_string()))
    }

    #[test]
    fn short_lists_take_the_remaining_columns_names() {
        assert_eq!(
            completed("SELECT * FROM (SELECT 1 AS x, 2 AS y, count(*)) AS t(a)").unwrap(),
            Some(
                r#"SELECT * FROM (SELECT 1 AS x, 2 AS y, count(*)) AS t (a, "y", "count")"#.into()
            )
        );
        assert_eq!(
            completed("SELECT * FROM (VALUES (1, 2)) v(a)").unwrap(),
            Some(r#"SELECT * FROM (VALUES (1, 2)) v (a, "column2")"#.into())
        );
        // Nested in a subquery of the WHERE clause too.
        assert!(
            completed("SELECT 1 WHERE 1 IN (SELECT a FROM (SELECT 1, 2) s(a))")
                .unwrap()
                .unwrap()
                .contains(r#"s (a, "?column?")"#)
        );
        for whole in [
            "SELECT * FROM (SELECT 1, 2) t(a, b)",
            "SELECT * FROM (SELECT * FROM x) t(a)",
            "SELECT * FROM x AS t",
        ] {
            assert_eq!(completed(whole).unwrap(), None, "{whole}");
        }
        let e = completed("SELECT * FROM (SELECT 1) AS t(a, b)").unwrap_err();
        assert_eq!(e.code, sqlstate::INVALID_COLUMN_REFERENCE);
        assert_eq!(
            e.message,
            "table \"t\" has 1 columns available but 2 columns specified"
        );
    }
}
