//! Array constants written as text, `'{1,2,3}'::int[]` or `CAST('{a,b}' AS text[])`, read
//! as PostgreSQL reads them.
//!
//! DataFusion cannot cast a text to a list. Before planning, each such constant is split
//! into its elements (`iolab_engine::values::array_literal`) and written as the array
//! constructor DataFusion casts element by element: `'{1,NULL}'::int[]` becomes
//! `ARRAY['1', NULL]::int[]`, so each element is then read by its type's input as any
//! `'1'::int` is. A malformed text fails here with PostgreSQL's error.
//!
//! An untyped text as the array of `x op ANY (…)` or `x op ALL (…)` is an array of `x`'s
//! type to PostgreSQL (`id = ANY ('{1,2}')`); DataFusion has no type to give it. Such a
//! comparison is written out by its definition, each element an untyped constant compared
//! with `x` as in `x = '1'`: `x = ANY ('{1,2}')` becomes `x IN ('1', '2')`, `x <> ALL (…)`
//! `x NOT IN (…)`, any other operator an `OR` (ANY) or `AND` (ALL) of the comparisons;
//! over an empty array ANY is false and ALL true.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast;
use iolab_catalog::{PgError, PgResult};
use iolab_engine::values::array_literal::split_array_literal;

/// `stmt` with every text constant cast to an array type written as an array
/// constructor (see the module comment); `None` when it has none. The statement kept (a
/// view's text, the result's column names) is the one written.
pub fn as_constructors(stmt: &ast::Statement) -> PgResult<Option<ast::Statement>> {
    let found = ast::visit_expressions(stmt, |e| {
        match array_text(e).or_else(|| quantified_over_text(e).map(|q| q.text)) {
            Some(_) => ControlFlow::Break(()),
            None => ControlFlow::Continue(()),
        }
    });
    if found.is_continue() {
        return Ok(None);
    }
    let mut stmt = stmt.clone();
    let mut failed: Option<PgError> = None;
    let _ = ast::visit_expressions_mut(&mut stmt, |e| {
        if let Some(q) = quantified_over_text(e) {
            match q.written_out() {
                Ok(comparisons) => *e = comparisons,
                Err(error) => {
                    failed = Some(error);
                    return ControlFlow::Break(());
                }
            }
            return ControlFlow::Continue(());
        }
        let Some(elements) = array_text(e).map(split_array_literal) else {
            return ControlFlow::Continue(());
        };
        let ast::Expr::Cast { expr, .. } = e else {
            unreachable!("array_text reads casts only")
        };
        match elements {
            Ok(elements) => {
                let elem = elements.into_iter().map(untyped_constant).collect();
                **expr = ast::Expr::Array(ast::Array { elem, named: true });
                ControlFlow::Continue(())
            }
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        }
    });
    failed.map_or(Ok(Some(stmt)), Err)
}

/// The text of `e` when it is a text constant cast to an array type.
fn array_text(e: &ast::Expr) -> Option<&str> {
    let ast::Expr::Cast {
        expr,
        data_type: ast::DataType::Array(_),
        ..
    } = e
    else {
        return None;
    };
    match expr.as_ref() {
        ast::Expr::Value(ast::ValueWithSpan {
            value: ast::Value::SingleQuotedString(literal),
            ..
        }) => Some(literal),
        _ => None,
    }
}

/// An element of an array text as an untyped constant (text or NULL).
fn untyped_constant(element: Option<String>) -> ast::Expr {
    ast::Expr::Value(
        match element {
            Some(s) => ast::Value::SingleQuotedString(s),
            None => ast::Value::Null,
        }
        .into(),
    )
}

/// `left op ANY|ALL ('text')`: a quantified comparison whose array is an untyped text.
struct QuantifiedOverText<'a> {
    left: &'a ast::Expr,
    op: &'a ast::BinaryOperator,
    all: bool,
    text: &'a str,
}

fn quantified_over_text(e: &ast::Expr) -> Option<QuantifiedOverText<'_>> {
    let (left, op, right, all) = match e {
        ast::Expr::AnyOp {
            left,
            compare_op,
            right,
            ..
        } => (left, compare_op, right, false),
        ast::Expr::AllOp {
            left,
            compare_op,
            right,
        } => (left, compare_op, right, true),
        _ => return None,
    };
    match right.as_ref() {
        ast::Expr::Value(ast::ValueWithSpan {
            value: ast::Value::SingleQuotedString(text),
            ..
        }) => Some(QuantifiedOverText {
            left,
            op,
            all,
            text,
        }),
        _ => None,
    }
}

impl QuantifiedOverText<'_> {
    /// The comparison written out element by element (see the module comment).
    fn written_out(&self) -> PgResult<ast::Expr> {
        let elements: Vec<ast::Expr> = split_array_literal(self.text)?
            .into_iter()
            .map(untyped_constant)
            .collect();
        if elements.is_empty() {
            return Ok(ast::Expr::Value(ast::Value::Boolean(self.all).into()));
        }
        let in_list = |negated| ast::Expr::InList {
            expr: Box::new(self.left.clone()),
            list: elements.clone(),
            negated,
        };
        Ok(match (self.op, self.all) {
            (ast::BinaryOperator::Eq, false) => in_list(false),
            (ast::BinaryOperator::NotEq, true) => in_list(true),
            _ => {
                let joiner = if self.all {
                    ast::BinaryOperator::And
                } else {
                    ast::BinaryOperator::Or
                };
                let comparisons = elements.iter().map(|element| ast::Expr::BinaryOp {
                    left: Box::new(self.left.clone()),
                    op: self.op.clone(),
                    right: Box::new(element.clone()),
                });
                let joined = comparisons
                    .reduce(|a, b| ast::Expr::BinaryOp {
                        left: Box::new(a),
                        op: joiner.clone(),
                        right: Box::new(b),
                    })
                    .expect("elements is not empty");
                ast::Expr::Nested(Box::new(joined))
            }
        })
    }
}
