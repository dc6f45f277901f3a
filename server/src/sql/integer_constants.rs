//! Integer constants typed as PostgreSQL types them: `integer` when the value fits in 32
//! bits, `bigint` otherwise.
//!
//! DataFusion's SQL planner makes every integer constant an Int64, so `SELECT 1` returned
//! a `bigint`, `a + 1` over an `integer` column a `bigint`, and `CREATE TABLE t AS SELECT
//! 1 AS x` made an 8-byte column where PostgreSQL makes a 4-byte one (a table of another
//! size, for a lab that measures reading it). [`integer_constants_as_int4`] rewrites the
//! plan the SQL planner returns, before anything reads its result columns and before the
//! analyzer coerces types, so every later step sees PostgreSQL's types:
//!
//! 1. each Int64 constant that fits in 32 bits becomes an Int32 (the names of the node's
//!    output columns kept), except
//!    - a LIMIT's or OFFSET's count, which DataFusion reads as an Int64 constant;
//!    - the argument of `count()`: `count(*)` is `count(1)` to DataFusion, recognised by
//!      its Int64 constant, and the argument's type does not change the count's;
//!
//!    and `generate_series(…)` of `integer`s in a select list (an array DataFusion's
//!    `unnest` expands) is cast to an array of `integer`s: DataFusion's steps in Int64;
//! 2. a `$n` parameter whose type DataFusion took from the constants beside it (`$1 + 1`,
//!    every place it stands) takes their new type, as PostgreSQL infers `integer` there;
//!    a type the client declared stays;
//! 3. every node's output types are derived again, bottom up: a VALUES list takes the
//!    common type of each column's rows, a UNION the common type of its inputs' columns
//!    (DataFusion's own rules, as the analyzer will apply them).
//!
//! A recursive query is left as it is: its working table was typed by the planner from the
//! non-recursive term and cannot be derived again here.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchemaRef, Result, ScalarValue};
use datafusion::logical_expr::expr::Placeholder;
use datafusion::logical_expr::{
    BinaryExpr, Cast, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Values,
};

use crate::sql::session_time::{recompute_schemas, rewrite_expressions_of};

/// `plan` with its integer constants typed as PostgreSQL's (see the module comment);
/// `declared_parameters`: whether its parameters' types are the client's.
pub fn integer_constants_as_int4(
    plan: LogicalPlan,
    declared_parameters: bool,
) -> Result<LogicalPlan> {
    if is_recursive(&plan)? {
        return Ok(plan);
    }
    let changed = Cell::new(false);
    let plan = rewrite_expressions_of(
        plan,
        |node| !matches!(node, LogicalPlan::Limit(_) | LogicalPlan::Values(_)),
        |e, schemas| {
            let narrowed = narrow(e)?.transform_data(|e| int4_series(e, schemas))?;
            changed.set(changed.get() | narrowed.transformed);
            Ok(narrowed)
        },
    )?;
    let plan = plan
        .transform_up_with_subqueries(|node| match node {
            LogicalPlan::Values(values) => {
                let narrowed = narrow_values(values)?;
                changed.set(changed.get() | narrowed.transformed);
                Ok(narrowed)
            }
            other => Ok(Transformed::no(other)),
        })?
        .data;
    if !changed.get() {
        return Ok(plan);
    }
    let plan = if declared_parameters {
        plan
    } else {
        narrow_parameters(plan)?
    };
    recompute_schemas(plan)
}

/// `e` with an Int64 constant that fits in 32 bits made an Int32; `count(…)` with its
/// arguments as DataFusion planned them (the rewrite is bottom up: they were narrowed
/// already).
fn narrow(e: Expr) -> Result<Transformed<Expr>> {
    match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), metadata) => match i32::try_from(v) {
            Ok(v) => Ok(Transformed::yes(Expr::Literal(
                ScalarValue::Int32(Some(v)),
                metadata,
            ))),
            Err(_) => Ok(Transformed::no(Expr::Literal(
                ScalarValue::Int64(Some(v)),
                metadata,
            ))),
        },
        Expr::AggregateFunction(mut count) if count.func.name() == "count" => {
            let mut widened = false;
            for arg in &mut count.params.args {
                if let Expr::Literal(ScalarValue::Int32(Some(v)), _) = arg {
                    *arg = Expr::Literal(ScalarValue::Int64(Some(i64::from(*v))), None);
                    widened = true;
                }
            }
            Ok(Transformed::new_transformed(
                Expr::AggregateFunction(count),
                widened,
            ))
        }
        other => Ok(Transformed::no(other)),
    }
}

/// `plan` with each `$n` that stands only beside Int32 constants (`$1 + 1`, `a_int8 <
/// $1 * 2` is not) typed Int32; DataFusion typed it as the constants were, Int64.
fn narrow_parameters(plan: LogicalPlan) -> Result<LogicalPlan> {
    // Per parameter: (places it stands, places beside an Int32 constant).
    let mut places: HashMap<String, (usize, usize)> = HashMap::new();
    plan.apply_with_subqueries(|node| {
        node.apply_expressions(|e| {
            e.apply(|e| {
                if let Expr::Placeholder(p) = e {
                    places.entry(p.id.clone()).or_default().0 += 1;
                }
                if let Some(p) = parameter_beside_int4(e) {
                    places.entry(p.id.clone()).or_default().1 += 1;
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    let narrowed: HashSet<String> = places
        .into_iter()
        .filter(|(_, (all, beside_int4))| all == beside_int4)
        .map(|(id, _)| id)
        .collect();
    if narrowed.is_empty() {
        return Ok(plan);
    }
    rewrite_expressions_of(
        plan,
        |_| true,
        |e, _| match e {
            Expr::Placeholder(mut p)
                if narrowed.contains(&p.id)
                    && p.field.as_ref().map(|f| f.data_type()) == Some(&DataType::Int64) =>
            {
                p.field = p
                    .field
                    .map(|f| Arc::new(f.as_ref().clone().with_data_type(DataType::Int32)));
                Ok(Transformed::yes(Expr::Placeholder(p)))
            }
            other => Ok(Transformed::no(other)),
        },
    )
}

/// The parameter of `e` when `e` is `$n op constant` or `constant op $n` with an Int32
/// constant.
fn parameter_beside_int4(e: &Expr) -> Option<&Placeholder> {
    let Expr::BinaryExpr(BinaryExpr { left, right, .. }) = e else {
        return None;
    };
    let int4 = |x: &Expr| matches!(x, Expr::Literal(ScalarValue::Int32(_), _));
    match (left.as_ref(), right.as_ref()) {
        (Expr::Placeholder(p), other) | (other, Expr::Placeholder(p)) if int4(other) => Some(p),
        _ => None,
    }
}

/// `generate_series(…)` of integers none of which is a `bigint` as an array of Int32s.
fn int4_series(e: Expr, schemas: &[DFSchemaRef]) -> Result<Transformed<Expr>> {
    let Expr::ScalarFunction(series) = &e else {
        return Ok(Transformed::no(e));
    };
    let int4 = |x: &Expr| {
        matches!(
            schemas.iter().find_map(|s| x.get_type(s).ok()),
            Some(DataType::Int16 | DataType::Int32)
        )
    };
    if series.func.name() != "generate_series" || !series.args.iter().all(int4) {
        return Ok(Transformed::no(e));
    }
    let int4_list = DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true)));
    Ok(Transformed::yes(Expr::Cast(Cast::new(
        Box::new(e),
        int4_list,
    ))))
}

/// A VALUES list with its constants narrowed and each column given the common type of
/// its rows again; as it was when a row does not type without a schema (a parameter).
/// A NULL is typed by the other rows again (the planner made it an Int64 NULL; a
/// `NULL::bigint` written so stays a cast).
fn narrow_values(values: Values) -> Result<Transformed<LogicalPlan>> {
    let mut narrowed_any = false;
    let mut rows = Vec::with_capacity(values.values.len());
    for row in &values.values {
        let mut narrowed_row = Vec::with_capacity(row.len());
        for e in row {
            let narrowed = e.clone().transform_up(narrow)?;
            narrowed_any |= narrowed.transformed;
            narrowed_row.push(narrowed.data);
        }
        rows.push(narrowed_row);
    }
    if !narrowed_any {
        return Ok(Transformed::no(LogicalPlan::Values(values)));
    }
    for e in rows.iter_mut().flatten() {
        if let Expr::Literal(ScalarValue::Int64(None), metadata) = e {
            *e = Expr::Literal(ScalarValue::Null, metadata.clone());
        }
    }
    match LogicalPlanBuilder::values(rows).and_then(|b| b.build()) {
        Ok(plan) if plan.schema().fields().len() == values.schema.fields().len() => {
            Ok(Transformed::yes(rename_like(plan, &values)?))
        }
        _ => Ok(Transformed::no(LogicalPlan::Values(values))),
    }
}

/// `plan`, a VALUES list built again, with the columns named as in `original`.
fn rename_like(plan: LogicalPlan, original: &Values) -> Result<LogicalPlan> {
    let LogicalPlan::Values(rebuilt) = plan else {
        unreachable!("LogicalPlanBuilder::values builds a Values node")
    };
    let fields = rebuilt
        .schema
        .fields()
        .iter()
        .zip(original.schema.fields())
        .map(|(typed, named)| Arc::new(typed.as_ref().clone().with_name(named.name())))
        .collect::<Vec<_>>();
    let qualified = original
        .schema
        .iter()
        .map(|(qualifier, _)| qualifier.cloned())
        .zip(fields)
        .collect::<Vec<_>>();
    let schema = datafusion::common::DFSchema::new_with_metadata(
        qualified,
        original.schema.metadata().clone(),
    )?;
    Ok(LogicalPlan::Values(Values {
        schema: Arc::new(schema),
        values: rebuilt.values,
    }))
}

/// Does `plan` hold a recursive query (a `WITH RECURSIVE` that recurses)?
fn is_recursive(plan: &LogicalPlan) -> Result<bool> {
    let mut found = false;
    plan.apply_with_subqueries(|node| {
        found = matches!(node, LogicalPlan::RecursiveQuery(_));
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    Ok(found)
}
