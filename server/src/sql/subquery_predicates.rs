//! `EXISTS (…)` and `x IN (…)` outside WHERE: in a select list, a CASE, an aggregate's
//! FILTER, a join's ON.
//!
//! DataFusion turns these predicates into joins only where they filter rows (a `Filter`
//! node); anywhere else they reach the physical planner, which cannot run them. PostgreSQL
//! runs them anywhere (`SELECT EXISTS (SELECT 1 FROM t WHERE …)`). This analyzer rule
//! rewrites each one outside a `Filter` into scalar subqueries that count rows, which
//! DataFusion decorrelates into joins (an aggregate over the subquery, grouped by its
//! correlated columns):
//!
//! ```text
//!   EXISTS (S)          →  (SELECT count(*) > 0 FROM S)
//!   x IN (S), S of c    →  CASE WHEN EXISTS (S WHERE c = x) THEN true
//!                               WHEN NOT EXISTS (S) THEN false
//!                               WHEN x IS NULL OR EXISTS (S WHERE c IS NULL) THEN NULL
//!                               ELSE false END
//! ```
//!
//! the second being SQL's three-valued `IN`: true on a match, false over no rows, NULL
//! when a comparison with a NULL could have matched, else false. `NOT` of either is the
//! negation. `x` moves into the subquery as outer references, as a correlated subquery's
//! columns are. Each node keeps its output names. DataFusion decorrelates these scalar
//! subqueries in a select list only; elsewhere (an aggregate's FILTER, a join's ON) an
//! uncorrelated one runs once before the plan, and a correlated one is refused (0A000).

use std::cell::Cell;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{plan_err, Column, DFSchemaRef, ExprSchema, Result, ScalarValue};
use datafusion::functions_aggregate::count::count_all;
use datafusion::logical_expr::expr::{Exists, InSubquery};
use datafusion::logical_expr::{lit, not, when, Expr, LogicalPlan, LogicalPlanBuilder, Subquery};
use datafusion::optimizer::AnalyzerRule;

use iolab_catalog::PgError;

use crate::pgcatalog::functions::pg;
use crate::sql::session_time::rewrite_expressions_of;

#[derive(Debug)]
pub struct SubqueryPredicatesRule;

impl AnalyzerRule for SubqueryPredicatesRule {
    fn name(&self) -> &str {
        "iolab_subquery_predicates"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        // Numbers the IN subqueries of the statement.
        let in_subqueries = Cell::new(0);
        let projections = |node: &LogicalPlan| matches!(node, LogicalPlan::Projection(_));
        let plan = rewrite_expressions_of(plan, projections, |e, schemas| {
            rewrite(e, schemas, &in_subqueries)
        })?;
        // Elsewhere (an aggregate's FILTER, a join's ON) DataFusion decorrelates no scalar
        // subquery: only an uncorrelated one can run there, once, before the plan.
        let elsewhere = |node: &LogicalPlan| {
            !matches!(node, LogicalPlan::Filter(_) | LogicalPlan::Projection(_))
        };
        rewrite_expressions_of(plan, elsewhere, |e, schemas| {
            // `x IN (…)` reads the row through `x` too: its rewrite is correlated.
            let correlated = match &e {
                Expr::Exists(Exists { subquery, .. }) => !subquery.outer_ref_columns.is_empty(),
                Expr::InSubquery(InSubquery { expr, subquery, .. }) => {
                    !subquery.outer_ref_columns.is_empty() || !expr.column_refs().is_empty()
                }
                _ => false,
            };
            if correlated {
                return Err(pg(PgError::unsupported(
                    "a correlated EXISTS or IN subquery is supported in a select list and in WHERE only",
                )));
            }
            rewrite(e, schemas, &in_subqueries)
        })
    }
}

fn rewrite(
    e: Expr,
    schemas: &[DFSchemaRef],
    in_subqueries: &Cell<u32>,
) -> Result<Transformed<Expr>> {
    Ok(match e {
        Expr::Exists(Exists { subquery, negated }) => {
            Transformed::yes(negate(exists(subquery)?, negated))
        }
        Expr::InSubquery(InSubquery {
            expr,
            subquery,
            negated,
        }) => {
            in_subqueries.set(in_subqueries.get() + 1);
            let alias = format!("__in_subquery_{}", in_subqueries.get());
            Transformed::yes(negate(
                in_subquery(*expr, subquery, schemas, alias)?,
                negated,
            ))
        }
        other => Transformed::no(other),
    })
}

fn negate(e: Expr, negated: bool) -> Expr {
    if negated {
        not(e)
    } else {
        e
    }
}

/// `(SELECT count(*) > 0 FROM S)`.
fn exists(subquery: Subquery) -> Result<Expr> {
    let counted = LogicalPlanBuilder::from(Arc::unwrap_or_clone(subquery.subquery))
        .aggregate(Vec::<Expr>::new(), vec![count_all()])?
        .build()?;
    let count = Expr::Column(Column::from(counted.schema().qualified_field(0)));
    let plan = LogicalPlanBuilder::from(counted)
        .project(vec![count.gt(lit(0i64))])?
        .build()?;
    Ok(Expr::ScalarSubquery(Subquery {
        subquery: Arc::new(plan),
        outer_ref_columns: subquery.outer_ref_columns,
        spans: subquery.spans,
    }))
}

/// SQL's `x IN (S)` through EXISTS (see the module comment).
fn in_subquery(
    x: Expr,
    subquery: Subquery,
    schemas: &[DFSchemaRef],
    alias: String,
) -> Result<Expr> {
    if subquery.subquery.schema().fields().len() != 1 {
        return plan_err!("subquery has too many columns");
    }
    // Named apart from the outer query, which may read the same table under the same name.
    let plan = LogicalPlanBuilder::from(subquery.subquery.as_ref().clone())
        .alias(alias)?
        .build()?;
    let c = Expr::Column(Column::from(plan.schema().qualified_field(0)));
    let outer_x = x
        .clone()
        .transform_up(|e| {
            Ok(match e {
                Expr::Column(column) => {
                    let Some(field) = schemas
                        .iter()
                        .find_map(|s| s.field_from_column(&column).ok())
                    else {
                        return plan_err!("column {column} not found beside its IN subquery");
                    };
                    Transformed::yes(Expr::OuterReferenceColumn(field.clone(), column))
                }
                other => Transformed::no(other),
            })
        })?
        .data;
    let outer_columns: Vec<Expr> = subquery
        .outer_ref_columns
        .iter()
        .cloned()
        .chain(x.column_refs().into_iter().map(|c| Expr::Column(c.clone())))
        .collect();
    let restricted = |condition: Expr| -> Result<Subquery> {
        Ok(Subquery {
            subquery: Arc::new(
                LogicalPlanBuilder::from(plan.clone())
                    .filter(condition)?
                    .build()?,
            ),
            outer_ref_columns: outer_columns.clone(),
            spans: subquery.spans.clone(),
        })
    };
    let matched = exists(restricted(c.clone().eq(outer_x))?)?;
    let any = exists(subquery.clone())?;
    let null_candidate = exists(restricted(c.is_null())?)?;
    when(matched, lit(true))
        .when(not(any), lit(false))
        .when(
            x.is_null().or(null_candidate),
            lit(ScalarValue::Boolean(None)),
        )
        .otherwise(lit(false))
}
