//! A statement's normalized form for the plan cache: its constants taken out as `$n`
//! parameters, so statements that differ only in those constants share one plan.
//!
//! A dashboard sends the same statement again and again with new constants in its
//! filter — Grafana's `$__timeFilter(time)` becomes `time BETWEEN '…' AND '…'` with the
//! panel's window, which moves on every refresh — and with `now()`, whose value is the
//! statement's start. Normalizing replaces, in the top-level `WHERE` and `HAVING`:
//!
//! - a string or integer or decimal constant compared with something that is not a
//!   constant (`=`, `<>`, `<`, `<=`, `>`, `>=`, `BETWEEN`, `IN (…)`; also under a cast,
//!   `'…'::timestamptz`) by `$n`, typed as DataFusion types the constant (text, bigint,
//!   double precision), with the constant as the parameter's value;
//! - `now()` and `CURRENT_TIMESTAMP` by `$n` whose value is the statement's start (what
//!   `now()` folds to), so a plan made earlier does not keep an earlier `now()`.
//!
//! ```text
//!   SELECT … FROM pg_catalog.pg_stat_io_history WHERE time BETWEEN '2026-12-01T10:00:00Z' AND now() GROUP BY 1
//!   SELECT … FROM pg_catalog.pg_stat_io_history WHERE time BETWEEN $1 AND $2 GROUP BY 1     ($1 text, $2 timestamptz)
//! ```
//!
//! Constants elsewhere (the select list, `GROUP BY 1`, `LIMIT`, function arguments such
//! as `'1 hour'` in an interval, joins) stay in the text and so in the cache key: they can
//! change a plan's shape or its column names, and dashboards do not vary them. Only
//! queries over iolab's statistics views (`pgcatalog::stat_views`) are normalized (see
//! `plan_cache`); a statement that already has `$n` parameters is not.

use std::ops::ControlFlow;

use datafusion::arrow::datatypes::DataType;
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast::{self, BinaryOperator, Expr, Value};

use crate::pgcatalog::stat_views::is_view_name;

/// One parameter of a normalized statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Param {
    /// A constant of the statement's text.
    Constant(ScalarValue),
    /// `now()`: the statement's start.
    Now,
}

/// A statement with its constants as parameters.
#[derive(Clone, Debug)]
pub struct Normalized {
    pub statement: ast::Statement,
    /// `statement` as text: the cache key's main part.
    pub text: String,
    /// `$1`, `$2`, … in order.
    pub params: Vec<Param>,
}

impl Normalized {
    /// The parameters' types, `now_type` being the type of `now()`.
    pub fn types(&self, now_type: &DataType) -> Vec<DataType> {
        self.params
            .iter()
            .map(|p| match p {
                Param::Constant(v) => v.data_type(),
                Param::Now => now_type.clone(),
            })
            .collect()
    }
}

/// The normalized form of `stmt`, when it is a query that reads only statistics views
/// and has no parameters of its own; `None` otherwise.
pub fn normalize(stmt: &ast::Statement) -> Option<Normalized> {
    let ast::Statement::Query(query) = stmt else {
        return None;
    };
    if !reads_only_statistics_views(stmt) || has_placeholders(stmt) {
        return None;
    }
    let mut query = query.clone();
    let mut params = Vec::new();
    if let ast::SetExpr::Select(select) = query.body.as_mut() {
        for clause in [&mut select.selection, &mut select.having]
            .into_iter()
            .flatten()
        {
            parameterize(clause, &mut params);
        }
    }
    let statement = ast::Statement::Query(query);
    Some(Normalized {
        text: statement.to_string(),
        statement,
        params,
    })
}

/// Does `stmt` name at least one relation, and only statistics views (unqualified or in
/// `pg_catalog`)? A CTE's or a table function's name is not one of them.
fn reads_only_statistics_views(stmt: &ast::Statement) -> bool {
    let mut relations = 0;
    let flow = ast::visit_relations(stmt, |name| {
        relations += 1;
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|p| p.as_ident().map(|i| i.value.to_ascii_lowercase()))
            .collect::<Option<_>>()
            .unwrap_or_default();
        let ok = match parts.as_slice() {
            [view] => is_view_name(view),
            [schema, view] => schema == "pg_catalog" && is_view_name(view),
            _ => false,
        };
        if ok {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    });
    flow.is_continue() && relations > 0
}

fn has_placeholders(stmt: &ast::Statement) -> bool {
    ast::visit_expressions(stmt, |e| match e {
        Expr::Value(v) if matches!(v.value, Value::Placeholder(_)) => ControlFlow::Break(()),
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

/// Replaces the constants of comparisons in `e`, and `now()`, by parameters.
fn parameterize(e: &mut Expr, params: &mut Vec<Param>) {
    let _ = ast::visit_expressions_mut(e, |e| {
        match e {
            Expr::BinaryOp { left, op, right } if is_comparison(op) => {
                if !is_constant(right) {
                    take_constant(left, params);
                }
                if !is_constant(left) {
                    take_constant(right, params);
                }
            }
            Expr::Between {
                expr, low, high, ..
            } if !is_constant(expr) => {
                take_constant(low, params);
                take_constant(high, params);
            }
            Expr::InList { expr, list, .. } if !is_constant(expr) => {
                for item in list {
                    take_constant(item, params);
                }
            }
            Expr::Function(f) if is_now(f) => {
                params.push(Param::Now);
                *e = placeholder(params.len());
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
}

fn is_comparison(op: &BinaryOperator) -> bool {
    use BinaryOperator::*;
    matches!(op, Eq | NotEq | Lt | LtEq | Gt | GtEq)
}

/// A constant of the text (perhaps under a cast): what [`take_constant`] takes.
fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::Value(v) => constant_value(&v.value).is_some(),
        Expr::Cast { expr, .. } => is_constant(expr),
        _ => false,
    }
}

/// Replaces the constant `e` is (or casts) by the next parameter.
fn take_constant(e: &mut Expr, params: &mut Vec<Param>) {
    match e {
        Expr::Value(v) => {
            if let Some(value) = constant_value(&v.value) {
                params.push(Param::Constant(value));
                *e = placeholder(params.len());
            }
        }
        Expr::Cast { expr, .. } => take_constant(expr, params),
        _ => {}
    }
}

/// The value DataFusion gives a constant: text, bigint, or double precision (a number
/// beyond bigint that is not a decimal stays in the text: DataFusion makes it unsigned).
fn constant_value(v: &Value) -> Option<ScalarValue> {
    match v {
        Value::SingleQuotedString(s) => Some(ScalarValue::Utf8(Some(s.clone()))),
        Value::Number(n, _) => {
            let n = n.replace('_', "");
            if let Ok(i) = n.parse::<i64>() {
                Some(ScalarValue::Int64(Some(i)))
            } else if n.parse::<u64>().is_ok() {
                None
            } else {
                n.parse::<f64>().ok().map(|f| ScalarValue::Float64(Some(f)))
            }
        }
        _ => None,
    }
}

/// `now()` or `CURRENT_TIMESTAMP`.
fn is_now(f: &ast::Function) -> bool {
    let name = f.name.to_string().to_ascii_lowercase();
    let no_args = match &f.args {
        ast::FunctionArguments::None => name == "current_timestamp",
        ast::FunctionArguments::List(l) => l.args.is_empty() && name == "now",
        ast::FunctionArguments::Subquery(_) => false,
    };
    no_args && f.filter.is_none() && f.over.is_none()
}

fn placeholder(n: usize) -> Expr {
    Expr::value(Value::Placeholder(format!("${n}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn normalized(sql: &str) -> Option<Normalized> {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        normalize(&stmt)
    }

    #[test]
    fn filter_constants_and_now_become_parameters() {
        let n = normalized(
            "SELECT floor(extract(epoch FROM time) / 60) * 60 AS t, sum(reads) / 60.0 FROM pg_catalog.pg_stat_io_history \
             WHERE time BETWEEN now() - interval '1 hour' AND now() AND backend_type IN ('client backend', 'io worker') \
             AND reads > 5 AND '2026-12-01T10:00:00Z'::timestamptz <= time GROUP BY 1 ORDER BY 1 LIMIT 10",
        )
        .unwrap();
        assert_eq!(
            n.text,
            "SELECT FLOOR(EXTRACT(EPOCH FROM time) / 60) * 60 AS t, sum(reads) / 60.0 FROM pg_catalog.pg_stat_io_history \
             WHERE time BETWEEN $1 - INTERVAL '1 hour' AND $2 AND backend_type IN ($3, $4) \
             AND reads > $5 AND $6::TIMESTAMPTZ <= time GROUP BY 1 ORDER BY 1 LIMIT 10"
        );
        let text = |s: &str| Param::Constant(ScalarValue::Utf8(Some(s.into())));
        assert_eq!(
            n.params,
            vec![
                Param::Now,
                Param::Now,
                text("client backend"),
                text("io worker"),
                Param::Constant(ScalarValue::Int64(Some(5))),
                text("2026-12-01T10:00:00Z"),
            ]
        );
    }

    #[test]
    fn two_windows_give_one_text() {
        let a = normalized("SELECT * FROM pg_stat_io_history WHERE time BETWEEN '2026-12-01 10:00' AND '2026-12-01 11:00'");
        let b = normalized("SELECT * FROM pg_stat_io_history WHERE time BETWEEN '2026-12-01 12:00' AND '2026-12-01 12:30'");
        let (a, b) = (a.unwrap(), b.unwrap());
        assert_eq!(a.text, b.text);
        assert_ne!(a.params, b.params);
    }

    #[test]
    fn only_queries_over_statistics_views_without_parameters() {
        assert!(normalized("SELECT * FROM pg_stat_io").is_some());
        assert!(normalized(
            "SELECT * FROM pg_catalog.pg_stat_aio a JOIN pg_stat_io i USING (backend_type)"
        )
        .is_some());
        for sql in [
            "SELECT 1",
            "SELECT * FROM t",
            "SELECT * FROM public.pg_stat_io",
            "SELECT * FROM pg_class",
            "SELECT * FROM pg_stat_io, t",
            "SELECT * FROM pg_stat_io WHERE reads > (SELECT count(*) FROM t)",
            "WITH x AS (SELECT * FROM pg_stat_io) SELECT * FROM x",
            "SELECT * FROM pg_stat_get_backend_io(1)",
            "SELECT * FROM pg_stat_io WHERE reads > $1",
            "INSERT INTO t SELECT reads FROM pg_stat_io",
        ] {
            assert!(normalized(sql).is_none(), "{sql}");
        }
    }

    #[test]
    fn constants_outside_filters_and_constant_comparisons_stay() {
        let n = normalized("SELECT reads > 5, 'x' FROM pg_stat_io WHERE 1 = 1 AND reads <= -3")
            .unwrap();
        assert_eq!(
            n.text,
            "SELECT reads > 5, 'x' FROM pg_stat_io WHERE 1 = 1 AND reads <= -3"
        );
        assert!(n.params.is_empty());
    }
}
