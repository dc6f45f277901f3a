//! Array constants written as text, `'{1,2,3}'::int[]` or `CAST('{a,b}' AS text[])`, read
//! as PostgreSQL reads them.
//!
//! DataFusion cannot cast a text to a list. Before planning, each such constant is split
//! into its elements (`iolab_engine::values::array_literal`) and written as the array
//! constructor DataFusion casts element by element: `'{1,NULL}'::int[]` becomes
//! `ARRAY['1', NULL]::int[]`, so each element is then read by its type's input as any
//! `'1'::int` is. A malformed text fails here with PostgreSQL's error.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast;
use iolab_catalog::{PgError, PgResult};
use iolab_engine::values::array_literal::split_array_literal;

/// `stmt` with every text constant cast to an array type written as an array
/// constructor (see the module comment); `None` when it has none. The statement kept (a
/// view's text, the result's column names) is the one written.
pub fn as_constructors(stmt: &ast::Statement) -> PgResult<Option<ast::Statement>> {
    let found = ast::visit_expressions(stmt, |e| match array_text(e) {
        Some(_) => ControlFlow::Break(()),
        None => ControlFlow::Continue(()),
    });
    if found.is_continue() {
        return Ok(None);
    }
    let mut stmt = stmt.clone();
    let mut failed: Option<PgError> = None;
    let _ = ast::visit_expressions_mut(&mut stmt, |e| {
        let Some(elements) = array_text(e).map(split_array_literal) else {
            return ControlFlow::Continue(());
        };
        let ast::Expr::Cast { expr, .. } = e else {
            unreachable!("array_text reads casts only")
        };
        match elements {
            Ok(elements) => {
                let elem = elements
                    .into_iter()
                    .map(|element| {
                        ast::Expr::Value(
                            match element {
                                Some(s) => ast::Value::SingleQuotedString(s),
                                None => ast::Value::Null,
                            }
                            .into(),
                        )
                    })
                    .collect();
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
