//! Result column names as PostgreSQL chooses them.
//!
//! DataFusion names an unaliased output column after the whole expression
//! (`count(*)`, `min(eic_uniform.a)`); PostgreSQL names it after the outermost function,
//! column or type (`count`, `min`, `a`, `int4`) and uses `?column?` when nothing fits.
//! Names may repeat in PostgreSQL but not inside a DataFusion plan, so the plan keeps
//! its own names and only the RowDescription the client sees gets PostgreSQL's. A select
//! list whose items repeat a name (`SELECT a, a`, `SELECT 1 AS x, 2 AS x`), which DataFusion
//! refuses to plan, is planned with a hidden alias on each repeat
//! ([`hide_duplicate_names`]); the client still sees the repeated names.

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::sql::sqlparser::ast::{self, Expr, SelectItem, SetExpr};
use std::sync::Arc;

/// The names PostgreSQL gives the columns of `query`, or `None` where DataFusion's name
/// is kept (aliases, wildcard expansions, VALUES). A UNION, INTERSECT or EXCEPT is named
/// by its leftmost SELECT.
pub(crate) fn pg_names(query: &ast::Query, width: usize) -> Option<Vec<Option<String>>> {
    let select = leftmost_select(&query.body)?;
    let wildcards = select.projection.iter().filter(|i| is_wildcard(i)).count();
    if wildcards > 1 {
        return None;
    }
    let expanded = width.checked_sub(select.projection.len() - wildcards)?;
    let mut names = Vec::with_capacity(width);
    for item in &select.projection {
        if is_wildcard(item) {
            names.extend(std::iter::repeat_n(None, expanded));
        } else {
            names.push(item_name(item));
        }
    }
    (names.len() == width).then_some(names)
}

fn leftmost_select(body: &SetExpr) -> Option<&ast::Select> {
    match body {
        SetExpr::Select(select) => Some(select),
        SetExpr::SetOperation { left, .. } => leftmost_select(left),
        SetExpr::Query(query) => leftmost_select(&query.body),
        _ => None,
    }
}

fn is_wildcard(item: &SelectItem) -> bool {
    matches!(
        item,
        SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
    )
}

/// The name PostgreSQL gives one select-list item's column: its alias, else its
/// expression's FigureColname, else `?column?`; `None` for `*` and `AS (a, b)` lists.
fn item_name(item: &SelectItem) -> Option<String> {
    match item {
        SelectItem::UnnamedExpr(e) => Some(expr_name(e).unwrap_or_else(|| "?column?".into())),
        SelectItem::ExprWithAlias { alias, .. } => Some(crate::sql::ddl::ident_name(alias)),
        _ => None,
    }
}

/// PostgreSQL's FigureColname for one expression.
fn expr_name(e: &Expr) -> Option<String> {
    named(e).map(|(name, _)| name)
}

/// How sure a name is, as PostgreSQL ranks them: a cast names its column after its
/// operand only when the operand's name is [`Strength::Sure`] (a column, a function, an
/// ARRAY[…]), else after its type (`'1'::int4::text` is `text`, `now()::date` is `now`,
/// `CASE … END::text` is `text`).
#[derive(Clone, Copy, PartialEq, PartialOrd)]
enum Strength {
    Fallback,
    Sure,
}

fn named(e: &Expr) -> Option<(String, Strength)> {
    let sure = |name: &str| Some((name.to_string(), Strength::Sure));
    let fallback = |name: String| Some((name, Strength::Fallback));
    match e {
        Expr::Identifier(id) => sure(&crate::sql::ddl::ident_name(id)),
        Expr::CompoundIdentifier(parts) => sure(&crate::sql::ddl::ident_name(parts.last()?)),
        Expr::Function(f) => {
            let name = crate::sql::ddl::ident_name(f.name.0.last().and_then(|p| p.as_ident())?);
            match crate::pgcatalog::rewrite::reg_cast_type(&name) {
                // A `reg*` cast, rewritten into a call: named as the cast was.
                Some(ty) => match super::calls::only_argument(f).and_then(named) {
                    Some(inner) if inner.1 == Strength::Sure => Some(inner),
                    _ => fallback(ty.to_string()),
                },
                None => sure(&name),
            }
        }
        Expr::Cast {
            expr, data_type, ..
        } => match named(expr) {
            Some(inner) if inner.1 == Strength::Sure => Some(inner),
            _ => fallback(type_name(data_type)),
        },
        Expr::Nested(inner) => named(inner),
        // Named after the last field it reads (`t.arr[1]` is `arr`), else after what it
        // reads from (`(ARRAY[1, 2])[2]` is `array`).
        Expr::CompoundFieldAccess { root, access_chain } => {
            let last_field = access_chain.iter().rev().find_map(|a| match a {
                ast::AccessExpr::Dot(field) => Some(field),
                ast::AccessExpr::Subscript(_) => None,
            });
            named(last_field.unwrap_or(root))
        }
        Expr::Case { .. } => fallback("case".into()),
        Expr::Array(_) => sure("array"),
        Expr::Exists { .. } => sure("exists"),
        Expr::Subquery(q) => {
            let names = pg_names(q, 1)?;
            sure(&names.into_iter().next().flatten()?)
        }
        Expr::Extract { .. } => sure("extract"),
        Expr::Substring {
            shorthand: true, ..
        } => sure("substr"),
        Expr::Substring { .. } => sure("substring"),
        Expr::Trim { .. } => sure("btrim"),
        Expr::Position { .. } => sure("position"),
        Expr::Overlay { .. } => sure("overlay"),
        Expr::Ceil { .. } => sure("ceil"),
        Expr::Floor { .. } => sure("floor"),
        Expr::TypedString(ts) => fallback(type_name(&ts.data_type)),
        _ => None,
    }
}

/// `stmt` with a hidden alias on every select-list item whose PostgreSQL name repeats an
/// earlier item's — and on every item beside a `*`, whose columns' names are not known here,
/// except one whose alias ORDER BY names (PostgreSQL sorts by it, or finds it ambiguous) —
/// or `None` if nothing needs one (or `stmt` is not a plain SELECT).
/// [`rename`] of the original statement gives the columns their names back.
pub fn hide_duplicate_names(stmt: &ast::Statement) -> Option<ast::Statement> {
    let ast::Statement::Query(query) = stmt else {
        return None;
    };
    let SetExpr::Select(select) = query.body.as_ref() else {
        return None;
    };
    // Found on the borrowed list first: most statements need nothing, and are not copied.
    let beside_wildcard = select.projection.iter().any(is_wildcard);
    let mut seen = std::collections::HashSet::new();
    let hidden: Vec<(usize, String)> = (select.projection.iter().enumerate())
        .filter_map(|(position, item)| {
            let name = item_name(item)?;
            let repeat = !seen.insert(name.clone());
            let sorted_by =
                matches!(item, SelectItem::ExprWithAlias { .. }) && orders_by_name(query, &name);
            (repeat || (beside_wildcard && !sorted_by))
                .then(|| (position, format!("{name} #{}", position + 1)))
        })
        .collect();
    if hidden.is_empty() {
        return None;
    }
    let mut query = query.clone();
    let SetExpr::Select(select) = query.body.as_mut() else {
        unreachable!("checked above");
    };
    for (position, alias) in hidden {
        let (SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. }) =
            &select.projection[position]
        else {
            unreachable!("item_name named only these");
        };
        select.projection[position] = SelectItem::ExprWithAlias {
            expr: expr.clone(),
            alias: ast::Ident::with_quote('"', alias),
        };
    }
    Some(ast::Statement::Query(query))
}

/// Whether `query`'s ORDER BY names an output column `name` by itself (`ORDER BY x DESC`).
fn orders_by_name(query: &ast::Query, name: &str) -> bool {
    let Some(ast::OrderBy {
        kind: ast::OrderByKind::Expressions(keys),
        ..
    }) = &query.order_by
    else {
        return false;
    };
    keys.iter().any(
        |key| matches!(&key.expr, Expr::Identifier(id) if crate::sql::ddl::ident_name(id) == name),
    )
}

/// The name PostgreSQL gives a cast's column: the type's internal name.
fn type_name(dt: &ast::DataType) -> String {
    // Without the type modifiers: `timestamp(6) with time zone` is `timestamp with time zone`.
    let text = dt.to_string().to_lowercase();
    let mut unmodified = String::with_capacity(text.len());
    let mut depth = 0;
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            c if depth == 0 => unmodified.push(c),
            _ => {}
        }
    }
    let base = unmodified.split_whitespace().collect::<Vec<_>>().join(" ");
    // An array type is named after its element type (`'{1}'::int[]` is `int4`).
    let base = base.trim_end_matches("[]").trim_end();
    match iolab_catalog::PgType::from_sql_name(base, &[]) {
        Some(t) => t.typname().to_string(),
        None => base.to_string(),
    }
}

/// `schema` with the column names PostgreSQL would report for `stmt`.
pub fn rename(stmt: &ast::Statement, schema: SchemaRef) -> SchemaRef {
    let ast::Statement::Query(query) = stmt else {
        return schema;
    };
    let Some(names) = pg_names(query, schema.fields().len()) else {
        return schema;
    };
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .zip(names)
        .map(|(f, name)| match name {
            Some(n) => f.as_ref().clone().with_name(n),
            None => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::DataType;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn names(sql: &str, df_names: &[&str]) -> Vec<String> {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        let schema = Arc::new(Schema::new(
            df_names
                .iter()
                .map(|n| Field::new(*n, DataType::Int64, true))
                .collect::<Vec<_>>(),
        ));
        rename(&stmt, schema)
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    #[test]
    fn unaliased_expressions_get_postgres_names() {
        assert_eq!(
            names(
                "SELECT count(*), min(a), t.b, 1 + 2, a::text, 'x'::int4, c AS d FROM t",
                &[
                    "count(*)",
                    "min(t.a)",
                    "b",
                    "Int64(1) + Int64(2)",
                    "a",
                    "x",
                    "d"
                ]
            ),
            vec!["count", "min", "b", "?column?", "a", "int4", "d"]
        );
        assert_eq!(
            names("SELECT *, count(*) FROM t", &["a", "b", "count(*)"]),
            vec!["a", "b", "count"]
        );
        assert_eq!(names("SELECT 1", &["Int64(1)"]), vec!["?column?"]);
        assert_eq!(
            names(
                "SELECT (ARRAY[1, 2])[2], arr[1], t.arr[1:2]",
                &["x", "y", "z"]
            ),
            vec!["array", "arr", "arr"]
        );
        assert_eq!(
            names(
                "SELECT substr(f, 2), substring(f, 2), substring(f FROM 2) FROM t",
                &["x", "y", "z"]
            ),
            vec!["substr", "substring", "substring"]
        );
    }

    /// `reg*` casts reach the parser as calls (`pgcatalog/rewrite.rs`) and are named as
    /// PostgreSQL names the casts: after a column operand, else after the type.
    #[test]
    fn reg_casts_are_named_as_casts() {
        let sql = crate::pgcatalog::rewrite::rewrite_for_datafusion(
            "SELECT 't'::regclass, 16384::regclass, relation::regclass, l.database::regclass, \
             'int4'::regtype, count(*)::regclass, regclassout FROM pg_locks l",
        )
        .into_owned();
        assert!(sql.contains("regclassin('t')"), "{sql}");
        assert_eq!(
            names(&sql, &["a", "b", "c", "d", "e", "f", "g"]),
            vec![
                "regclass",
                "regclass",
                "relation",
                "database",
                "regtype",
                "count",
                "regclassout"
            ]
        );
    }

    #[test]
    fn a_set_operation_is_named_by_its_leftmost_select() {
        assert_eq!(
            names(
                "SELECT 1 AS a, 2 UNION SELECT 3, 4 AS b",
                &["a", "Int64(2)"]
            ),
            vec!["a", "?column?"]
        );
        assert_eq!(
            names(
                "(SELECT count(*) FROM t EXCEPT SELECT 1) UNION ALL SELECT 2",
                &["count(*)"]
            ),
            vec!["count"]
        );
    }

    #[test]
    fn repeated_names_are_hidden_for_planning_and_shown_again() {
        let parse = |sql: &str| {
            Parser::parse_sql(&PostgreSqlDialect {}, sql)
                .unwrap()
                .remove(0)
        };
        let stmt = parse("SELECT a, b, a, 1 AS b, t.a, c FROM t");
        let hidden = hide_duplicate_names(&stmt).expect("names repeat");
        assert_eq!(
            hidden.to_string(),
            r#"SELECT a, b, a AS "a #3", 1 AS "b #4", t.a AS "a #5", c FROM t"#
        );
        assert_eq!(
            names(
                "SELECT a, b, a, 1 AS b, t.a, c FROM t",
                &["a", "b", "a #3", "b #4", "a #5", "c"]
            ),
            vec!["a", "b", "a", "b", "a", "c"]
        );
        assert_eq!(
            hide_duplicate_names(&parse("SELECT *, a FROM t"))
                .unwrap()
                .to_string(),
            r#"SELECT *, a AS "a #2" FROM t"#
        );
        assert_eq!(
            hide_duplicate_names(&parse("SELECT *, 1 AS id FROM t ORDER BY a"))
                .unwrap()
                .to_string(),
            r#"SELECT *, 1 AS "id #2" FROM t ORDER BY a"#
        );
        for unique in [
            "SELECT a, b AS c FROM t",
            "SELECT 1 UNION SELECT 1",
            "SELECT *, a + 1 AS x FROM t ORDER BY x",
        ] {
            assert_eq!(hide_duplicate_names(&parse(unique)), None, "{unique}");
        }
    }
}
