//! Typed `$n` parameters for DataFusion's planner.
//!
//! DataFusion types a placeholder from its context (`a < $1` takes `a`'s type); one
//! without context (`SELECT $1`, `generate_series(1, $1)`) stays untyped, so its result
//! column is reported as text while the bound value is encoded as its own type, or the
//! statement fails to plan. PostgreSQL uses the type the client declared in Parse, as
//! psycopg and other drivers do for every parameter.
//!
//! So when the type of every parameter is known (declared at Parse, or the bound values
//! at Execute), the query is planned as DataFusion's `PREPARE p(type, …) AS query`, whose
//! placeholders carry those types, and the plan inside the Prepare is used. A statement
//! with a parameter of unknown type, or of a type with no SQL spelling here, is planned
//! as it is.

use std::collections::HashMap;

use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::expr::{Cast, TryCast};
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan, Statement as PlanStatement};
use datafusion::sql::sqlparser::ast::{self, ExactNumberInfo, TimezoneInfo};

/// The statement to plan for `stmt` with parameters of `types` (`None` = unknown).
pub fn typed(stmt: &ast::Statement, types: &[Option<DataType>]) -> Option<ast::Statement> {
    if types.is_empty() || !matches!(stmt, ast::Statement::Query(_)) {
        return None;
    }
    let data_types = types
        .iter()
        .map(|t| t.as_ref().and_then(sql_type))
        .collect::<Option<Vec<_>>>()?;
    Some(ast::Statement::Prepare {
        name: ast::Ident::new("iolab_typed_parameters"),
        data_types,
        statement: Box::new(stmt.clone()),
    })
}

/// The highest `$n` that `stmt` refers to (0 when none). PostgreSQL's statement has that
/// many parameters when its Parse declared fewer types, whatever the statement (a
/// DECLARE, a CREATE TABLE AS), so a Bind must supply that many values.
pub fn highest_placeholder(stmt: &ast::Statement) -> usize {
    let mut highest = 0;
    let _ = ast::visit_expressions(stmt, |e| {
        if let ast::Expr::Value(v) = e {
            if let ast::Value::Placeholder(p) = &v.value {
                let n = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok());
                highest = highest.max(n.unwrap_or(0));
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    highest
}

/// The plan inside a Prepare made by [`typed`]; any other plan as it is.
pub fn unwrap_prepare(plan: LogicalPlan) -> LogicalPlan {
    match plan {
        LogicalPlan::Statement(PlanStatement::Prepare(p)) => {
            std::sync::Arc::unwrap_or_clone(p.input)
        }
        other => other,
    }
}

/// The types of `$n` placeholders that DataFusion leaves untyped and PostgreSQL types
/// from where they stand: the operand of a cast (`$1::int`) has the cast's type, a LIMIT
/// or OFFSET is a bigint (so a client that asks for the parameter types sends an int4
/// for `$1::int` and an int8 for `LIMIT $2`), the array of `x op ANY ($1)` or
/// `x op ALL ($1)` is an array of `x`'s type (what psycopg sends for a Python list of
/// strings, or an empty one, is untyped).
pub fn implied_placeholder_types(plan: &LogicalPlan) -> HashMap<String, DataType> {
    let mut found = HashMap::new();
    let _ = plan.apply_with_subqueries(|node| {
        if let LogicalPlan::Limit(limit) = node {
            for count in [&limit.skip, &limit.fetch].into_iter().flatten() {
                if let Expr::Placeholder(p) = count.as_ref() {
                    found.entry(p.id.clone()).or_insert(DataType::Int64);
                }
            }
        }
        let inputs = node.inputs();
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Some((id, element)) = quantified_array(e, &inputs) {
                    found
                        .entry(id)
                        .or_insert_with(|| DataType::new_list(element, true));
                    return Ok(TreeNodeRecursion::Continue);
                }
                let (operand, ty) = match e {
                    Expr::Cast(Cast { expr, field }) => (expr, field.data_type()),
                    Expr::TryCast(TryCast { expr, field }) => (expr, field.data_type()),
                    _ => return Ok(TreeNodeRecursion::Continue),
                };
                if let Expr::Placeholder(p) = operand.as_ref() {
                    found.entry(p.id.clone()).or_insert_with(|| ty.clone());
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    });
    found
}

/// `(placeholder, element type)` when `e` is one of the comparisons DataFusion writes for
/// `x op ANY|ALL ($n)` with `$n` untyped: `array_has($n, x)`, or `array_min($n)` /
/// `array_max($n)` compared with `x`, `x`'s type found in one of `inputs`' schemas.
fn quantified_array(e: &Expr, inputs: &[&LogicalPlan]) -> Option<(String, DataType)> {
    let untyped_array = |e: &Expr| match e {
        Expr::Placeholder(p) if p.field.is_none() => Some(p.id.clone()),
        _ => None,
    };
    let (array, needle) = match e {
        Expr::ScalarFunction(f) if f.func.name() == "array_has" && f.args.len() == 2 => {
            (untyped_array(&f.args[0])?, &f.args[1])
        }
        Expr::BinaryExpr(b) => {
            let bound = |e: &Expr| match e {
                Expr::ScalarFunction(f)
                    if matches!(f.func.name(), "array_min" | "array_max") && f.args.len() == 1 =>
                {
                    untyped_array(&f.args[0])
                }
                _ => None,
            };
            match (bound(&b.left), bound(&b.right)) {
                (Some(id), None) => (id, b.right.as_ref()),
                (None, Some(id)) => (id, b.left.as_ref()),
                _ => return None,
            }
        }
        _ => return None,
    };
    let element = inputs
        .iter()
        .find_map(|input| needle.get_type(input.schema()).ok())?;
    (!element.is_null()).then_some((array, element))
}

/// The SQL type DataFusion plans back into `dt` (timestamptz into the session's zone).
fn sql_type(dt: &DataType) -> Option<ast::DataType> {
    Some(match dt {
        DataType::Boolean => ast::DataType::Boolean,
        DataType::Int16 => ast::DataType::SmallInt(None),
        DataType::Int32 => ast::DataType::Integer(None),
        DataType::Int64 => ast::DataType::BigInt(None),
        DataType::Float32 => ast::DataType::Real,
        DataType::Float64 => ast::DataType::DoublePrecision,
        DataType::Decimal128(p, s) => {
            ast::DataType::Numeric(ExactNumberInfo::PrecisionAndScale(*p as u64, *s as i64))
        }
        DataType::Date32 => ast::DataType::Date,
        DataType::Timestamp(unit, zone) => ast::DataType::Timestamp(
            Some(match unit {
                TimeUnit::Second => 0,
                TimeUnit::Millisecond => 3,
                TimeUnit::Microsecond => 6,
                TimeUnit::Nanosecond => 9,
            }),
            if zone.is_some() {
                TimezoneInfo::WithTimeZone
            } else {
                TimezoneInfo::None
            },
        ),
        DataType::Utf8 | DataType::Utf8View => ast::DataType::Text,
        DataType::List(element) => ast::DataType::Array(ast::ArrayElemTypeDef::SquareBracket(
            Box::new(sql_type(element.data_type())?),
            None,
        )),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn query(sql: &str) -> ast::Statement {
        Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0)
    }

    #[test]
    fn highest_placeholder_is_found_anywhere_in_the_statement() {
        let highest = |sql| highest_placeholder(&query(sql));
        assert_eq!(highest("SELECT 1"), 0);
        assert_eq!(highest("SELECT '$3', $1"), 1);
        assert_eq!(highest("SELECT a FROM t WHERE b = $2 LIMIT $5"), 5);
        assert_eq!(
            highest("DECLARE c CURSOR FOR SELECT * FROM t WHERE a IN (SELECT $3)"),
            3
        );
    }

    #[test]
    fn known_types_make_a_prepare() {
        let stmt = query("SELECT $1, $2");
        let typed = typed(&stmt, &[Some(DataType::Int16), Some(DataType::Utf8)]).unwrap();
        assert_eq!(
            typed.to_string(),
            "PREPARE iolab_typed_parameters (SMALLINT, TEXT) AS SELECT $1, $2"
        );
    }

    #[test]
    fn an_unknown_or_unspellable_type_plans_as_is() {
        let stmt = query("SELECT $1, $2");
        assert!(typed(&stmt, &[Some(DataType::Int32), None]).is_none());
        assert!(typed(&stmt, &[Some(DataType::Binary)]).is_none());
        assert!(typed(&stmt, &[]).is_none());
        assert!(typed(&query("SET work_mem = '1MB'"), &[Some(DataType::Int32)]).is_none());
    }
}
