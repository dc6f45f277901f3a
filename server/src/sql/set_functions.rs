//! Set-returning functions as PostgreSQL runs and names them, by rewriting the parsed
//! statement before DataFusion plans it.
//!
//! **In `FROM`**, a function that returns a set of a scalar type makes a one-column
//! relation. PostgreSQL names that column after the relation's alias when there is one and
//! after the function otherwise:
//!
//! ```text
//!   FROM generate_series(1, 3)           column "generate_series"
//!   FROM generate_series(1, 3) i         column "i"      (so `SELECT i … FROM generate_series(1, 3) i`)
//!   FROM generate_series(1, 3) AS t(n)   column "n"      (an explicit column list wins)
//!   FROM unnest(ARRAY[1, 2]) u           column "u"
//! ```
//!
//! DataFusion names the column `value` (or an `UNNEST(…)` expression) instead, so a
//! statement as common as `INSERT … SELECT i, md5(i::text) FROM generate_series(1, n) i`
//! fails with "column i does not exist". [`name_function_columns`] gives such a `FROM` item
//! the alias and column list PostgreSQL implies. Only functions known to return one scalar
//! column are touched: `generate_series` and a one-array `unnest`.
//!
//! **In a select list**, `SELECT generate_series(1, 3)` is three rows in PostgreSQL, but
//! DataFusion's `generate_series` there is a scalar function returning one array, so the
//! query gave one row holding `{1,2,3}` (and `SELECT count(*) FROM (SELECT
//! generate_series(1, 10)) s` counted 1). [`expand_select_list_series`] wraps each such
//! call in `unnest(…)`, which DataFusion expands into rows: several in one list run in
//! lockstep, the shorter padded with NULLs, as PostgreSQL has done since version 10. An
//! item that is just the call keeps the column name `generate_series`.
//!
//! **Types.** `generate_series(1, 3)` is a series of `integer`s, `generate_series(1,
//! 3000000000)` of `bigint`s: PostgreSQL types an integer constant by its value. DataFusion
//! plans a `FROM` function's arguments as Int64s (`sql::integer_constants` retypes them
//! only later, in the plan), so [`typed_series_arguments`] writes each of its constants
//! that fits in 32 bits as `CAST(n AS INTEGER)`, which the function sees as an Int32, in
//! the copy of the statement DataFusion plans (a view keeps the text as written).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    self, Expr, FunctionArg, FunctionArgExpr, Ident, ObjectName, ObjectNamePart, SelectItem,
    SetExpr, TableAlias, TableAliasColumnDef, TableFactor, VisitMut, VisitorMut,
};

use iolab_catalog::{sqlstate, PgError, PgResult};

use crate::sql::ddl::ident_name;

/// Set-returning functions of one scalar column, by their lower-case name.
const SCALAR_SET_FUNCTIONS: &[&str] = &["generate_series"];

/// Give every scalar set-returning function in the statement's `FROM` lists its
/// PostgreSQL column name (see the module comment).
pub fn name_function_columns(stmt: &mut ast::Statement) {
    struct Name;
    impl VisitorMut for Name {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            match factor {
                TableFactor::Table {
                    name,
                    args: Some(_),
                    alias,
                    ..
                } => {
                    if let Some(function) = function_name(name) {
                        if SCALAR_SET_FUNCTIONS.contains(&function.as_str()) {
                            name_column(alias, &function);
                        }
                    }
                }
                TableFactor::UNNEST {
                    alias,
                    array_exprs,
                    with_offset: false,
                    with_ordinality: false,
                    ..
                } if array_exprs.len() == 1 => name_column(alias, "unnest"),
                _ => {}
            }
            ControlFlow::Continue(())
        }
    }
    let _ = stmt.visit(&mut Name);
}

/// `stmt` with each integer constant of a `FROM generate_series(…)` that fits in 32 bits
/// written `CAST(n AS INTEGER)` (see the module comment); `None` when it has none.
pub fn typed_series_arguments(stmt: &ast::Statement) -> Option<ast::Statement> {
    struct Type {
        typed: bool,
    }
    impl VisitorMut for Type {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table {
                name,
                args: Some(args),
                ..
            } = factor
            {
                if is_scalar_set_function(name) {
                    for arg in &mut args.args {
                        if let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = arg {
                            self.typed |= type_as_integer(e);
                        }
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    if ast::visit_relations(stmt, |name| match is_scalar_set_function(name) {
        true => ControlFlow::Break(()),
        false => ControlFlow::Continue(()),
    })
    .is_continue()
    {
        return None;
    }
    let mut typed = stmt.clone();
    let mut visitor = Type { typed: false };
    let _ = typed.visit(&mut visitor);
    visitor.typed.then_some(typed)
}

/// `e` written `CAST(e AS INTEGER)` when it is an integer constant that fits in 32 bits.
fn type_as_integer(e: &mut Expr) -> bool {
    let number = |e: &Expr| match e {
        Expr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => Some(n.clone()),
            _ => None,
        },
        _ => None,
    };
    let digits = match &*e {
        Expr::UnaryOp {
            op: ast::UnaryOperator::Minus,
            expr,
        } => number(expr).map(|n| format!("-{n}")),
        other => number(other),
    };
    if !digits.is_some_and(|d| d.parse::<i32>().is_ok()) {
        return false;
    }
    let constant = std::mem::replace(e, Expr::Value(ast::Value::Null.into()));
    *e = Expr::Cast {
        kind: ast::CastKind::Cast,
        expr: Box::new(constant),
        data_type: ast::DataType::Integer(None),
        array: false,
        format: None,
    };
    true
}

/// Without an alias: alias and column both named `function`. With an alias but no column
/// list: the column named as the alias. An explicit column list stays.
fn name_column(alias: &mut Option<TableAlias>, function: &str) {
    let alias = alias.get_or_insert_with(|| TableAlias {
        explicit: false,
        name: Ident::new(function),
        columns: Vec::new(),
        at: None,
    });
    if alias.columns.is_empty() {
        alias.columns.push(TableAliasColumnDef {
            name: alias.name.clone(),
            data_type: None,
        });
    }
}

/// Wrap every `generate_series(…)` call of a select list that is not already inside an
/// `unnest(…)` in one, so that it makes rows (see the module comment); a select-list item
/// that is just the call is aliased `generate_series`, PostgreSQL's name for its column.
/// Where PostgreSQL refuses a set-returning function — in `WHERE`, `HAVING`, `CASE` or
/// an aggregate's arguments — so does this, with PostgreSQL's error.
pub fn expand_select_list_series(stmt: &mut ast::Statement) -> PgResult<()> {
    struct Expand {
        /// How many `unnest(…)` calls enclose the expression being visited.
        unnest_depth: usize,
        /// How many aggregate calls, and how many `CASE`s, enclose it.
        aggregate_depth: usize,
        case_depth: usize,
    }
    impl VisitorMut for Expand {
        type Break = PgError;
        fn pre_visit_query(&mut self, query: &mut ast::Query) -> ControlFlow<PgError> {
            match name_bare_calls(&mut query.body) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => ControlFlow::Break(e),
            }
        }
        fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<PgError> {
            self.enter(expr, 1);
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<PgError> {
            self.enter(expr, -1);
            if called(expr).as_deref() == Some("generate_series") && self.unnest_depth == 0 {
                if self.aggregate_depth > 0 {
                    return ControlFlow::Break(misplaced(
                        "aggregate function calls cannot contain set-returning function calls",
                    ));
                }
                if self.case_depth > 0 {
                    return ControlFlow::Break(misplaced(
                        "set-returning functions are not allowed in CASE",
                    ));
                }
                let call = std::mem::replace(expr, Expr::value(ast::Value::Null));
                *expr = super::calls::call("unnest", vec![call]);
            }
            ControlFlow::Continue(())
        }
    }
    impl Expand {
        /// Counts `expr` in (step 1) or out (step -1) of the enclosing calls it opens.
        fn enter(&mut self, expr: &Expr, step: isize) {
            let depth = match (expr, called(expr).as_deref()) {
                (_, Some("unnest")) => &mut self.unnest_depth,
                (Expr::Function(f), Some(name))
                    if f.over.is_none() && AGGREGATES.contains(&name) =>
                {
                    &mut self.aggregate_depth
                }
                (Expr::Case { .. }, _) => &mut self.case_depth,
                _ => return,
            };
            *depth = depth.checked_add_signed(step).expect("entered before left");
        }
    }
    match stmt.visit(&mut Expand {
        unnest_depth: 0,
        aggregate_depth: 0,
        case_depth: 0,
    }) {
        ControlFlow::Continue(()) => Ok(()),
        ControlFlow::Break(e) => Err(e),
    }
}

/// Aggregates whose arguments PostgreSQL checks for set-returning calls (the common ones;
/// others fail in DataFusion's planner).
const AGGREGATES: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "string_agg",
    "array_agg",
    "bool_and",
    "bool_or",
    "every",
    "stddev",
    "stddev_samp",
    "stddev_pop",
    "variance",
    "var_samp",
    "var_pop",
];

fn misplaced(message: &str) -> PgError {
    PgError::new(sqlstate::FEATURE_NOT_SUPPORTED, message)
        .with_hint("You might be able to move the set-returning function into a LATERAL FROM item.")
}

/// Alias `generate_series` the select-list items of `body` that are just a call of it
/// (their unnest, added later, would otherwise name the column `unnest`); refuse such a
/// call in `WHERE` or `HAVING`, as PostgreSQL does.
fn name_bare_calls(body: &mut SetExpr) -> PgResult<()> {
    match body {
        SetExpr::Select(select) => {
            for (clause, condition) in [("WHERE", &select.selection), ("HAVING", &select.having)] {
                if condition.as_ref().is_some_and(calls_series) {
                    return Err(PgError::new(
                        sqlstate::FEATURE_NOT_SUPPORTED,
                        format!("set-returning functions are not allowed in {clause}"),
                    ));
                }
            }
            for item in &mut select.projection {
                if let SelectItem::UnnamedExpr(expr) = item {
                    if called(expr).as_deref() == Some("generate_series") {
                        let expr = std::mem::replace(expr, Expr::value(ast::Value::Null));
                        *item = SelectItem::ExprWithAlias {
                            expr,
                            alias: Ident::new("generate_series"),
                        };
                    }
                }
            }
            Ok(())
        }
        SetExpr::SetOperation { left, right, .. } => {
            name_bare_calls(left)?;
            name_bare_calls(right)
        }
        _ => Ok(()),
    }
}

/// Whether `expr` calls `generate_series` anywhere.
fn calls_series(expr: &Expr) -> bool {
    ast::visit_expressions(expr, |e| {
        if called(e).as_deref() == Some("generate_series") {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}

/// The lower-case name of the function `expr` calls, if it is a call.
fn called(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Function(f) => function_name(&f.name),
        _ => None,
    }
}

/// A function's name as PostgreSQL matches it (`pg_catalog.Generate_Series` →
/// `generate_series`).
fn is_scalar_set_function(name: &ObjectName) -> bool {
    function_name(name).is_some_and(|f| SCALAR_SET_FUNCTIONS.contains(&f.as_str()))
}

fn function_name(name: &ObjectName) -> Option<String> {
    match name.0.last()? {
        ObjectNamePart::Identifier(name) => Some(ident_name(name)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn parse(sql: &str) -> ast::Statement {
        Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0)
    }

    fn named(sql: &str) -> String {
        let mut stmt = parse(sql);
        name_function_columns(&mut stmt);
        stmt.to_string()
    }

    #[test]
    fn the_alias_or_the_function_names_the_column() {
        assert_eq!(
            named("SELECT i FROM generate_series(1, 3) i"),
            "SELECT i FROM generate_series(1, 3) i (i)"
        );
        assert_eq!(
            named("SELECT * FROM generate_series(1, 3)"),
            "SELECT * FROM generate_series(1, 3) generate_series (generate_series)"
        );
        assert_eq!(
            named("SELECT * FROM unnest(ARRAY[1, 2]) AS u"),
            "SELECT * FROM UNNEST(ARRAY[1, 2]) AS u (u)"
        );
        assert_eq!(
            named("INSERT INTO t SELECT g, md5(g::TEXT) FROM GENERATE_SERIES(1, 9) g"),
            "INSERT INTO t SELECT g, md5(g::TEXT) FROM GENERATE_SERIES(1, 9) g (g)"
        );
    }

    #[test]
    fn explicit_columns_tables_and_other_functions_stay() {
        for sql in [
            "SELECT n FROM generate_series(1, 3) AS t (n)",
            "SELECT * FROM t AS i",
            "SELECT * FROM pg_get_keywords() AS k",
            "SELECT * FROM UNNEST(ARRAY[1], ARRAY[2]) AS u",
            "SELECT * FROM \"Generate_Series\"(1, 2) AS g",
        ] {
            assert_eq!(named(sql), sql);
        }
    }

    fn expanded(sql: &str) -> String {
        let mut stmt = parse(sql);
        expand_select_list_series(&mut stmt).unwrap();
        stmt.to_string()
    }

    #[test]
    fn select_list_series_become_rows() {
        assert_eq!(
            expanded("SELECT generate_series(1, 3)"),
            "SELECT unnest(generate_series(1, 3)) AS generate_series"
        );
        assert_eq!(
            expanded("SELECT count(*) FROM (SELECT generate_series(1, 10) AS g) AS s"),
            "SELECT count(*) FROM (SELECT unnest(generate_series(1, 10)) AS g) AS s"
        );
        assert_eq!(
            expanded("SELECT a, generate_series(1, a) + 1 FROM t UNION ALL SELECT 0, GENERATE_SERIES(2, 3)"),
            "SELECT a, unnest(generate_series(1, a)) + 1 FROM t UNION ALL SELECT 0, unnest(GENERATE_SERIES(2, 3)) AS generate_series"
        );
    }

    #[test]
    fn series_already_unnested_or_in_from_stay() {
        for sql in [
            "SELECT unnest(generate_series(1, 3))",
            "SELECT i FROM generate_series(1, 3) AS i",
            "SELECT * FROM t WHERE a < 3",
        ] {
            assert_eq!(expanded(sql), sql);
        }
    }

    #[test]
    fn series_where_postgres_refuses_them_fail_alike() {
        for (sql, message) in [
            (
                "SELECT 1 FROM t WHERE a = generate_series(1, 2)",
                "set-returning functions are not allowed in WHERE",
            ),
            (
                "SELECT sum(generate_series(1, 3))",
                "aggregate function calls cannot contain set-returning function calls",
            ),
            (
                "SELECT CASE WHEN a > 0 THEN generate_series(1, 2) END FROM t",
                "set-returning functions are not allowed in CASE",
            ),
        ] {
            let err = expand_select_list_series(&mut parse(sql)).unwrap_err();
            assert_eq!(
                (err.code, err.message.as_str()),
                ("0A000", message),
                "{sql}"
            );
        }
        assert_eq!(
            expanded("SELECT sum(g) OVER () FROM (SELECT generate_series(1, 3) AS g) AS s"),
            "SELECT sum(g) OVER () FROM (SELECT unnest(generate_series(1, 3)) AS g) AS s"
        );
    }
}
