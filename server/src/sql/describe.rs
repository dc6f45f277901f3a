//! What a statement takes and returns, as the extended protocol's Describe and SQL's
//! PREPARE report it: the type of each `$n` parameter (declared by the client, else the
//! type of the column an INSERT puts it in, else what DataFusion's planner infers from
//! its context, else text) and the columns of its rows (a query's, RETURNING's,
//! EXPLAIN's one text column, SHOW's).
//!
//! Describing a query plans it, which costs as much as running a point lookup; a driver
//! that sends its statements unnamed (tokio-postgres' `query`, pgbench `-M extended`,
//! psycopg before it prepares) has each run parsed and described again. So a session
//! keeps the descriptions of its queries, INSERTs, UPDATEs and DELETEs ([`Descriptions`]),
//! keyed by the statement, the declared types and what plans are made from (the
//! catalog's generation, which any DDL bumps, and the settings that resolve names and
//! read constants): at most [`MAX_DESCRIPTIONS`], emptied when full.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::sql::sqlparser::ast;
use iolab_catalog::PgResult;
use pgwire::api::Type;

use crate::session::Session;
use crate::sql::bind::declared_arrow_type;
use crate::sql::Parsed;

/// Descriptions one session keeps at most.
pub const MAX_DESCRIPTIONS: usize = 64;

/// One session's kept descriptions (see the module comment).
#[derive(Default)]
pub struct Descriptions {
    kept: parking_lot::Mutex<HashMap<DescriptionKey, Description>>,
}

#[derive(PartialEq, Eq, Hash)]
struct DescriptionKey {
    statement: String,
    declared: Vec<Option<u32>>,
    context: String,
}

/// A statement's parameter types and result columns.
#[derive(Clone)]
pub struct Description {
    pub params: Vec<Type>,
    /// None for a statement without rows.
    pub schema: Option<SchemaRef>,
}

/// Describes `parsed`, whose parameters the client declared as `types` (`None`: left
/// to the server); a query or a write as the session described it before, if it did.
pub async fn describe(
    session: &Session,
    parsed: &Parsed,
    types: &[Option<Type>],
) -> PgResult<Description> {
    let key = match parsed {
        Parsed::Sql(s)
            if matches!(
                **s,
                ast::Statement::Query(_)
                    | ast::Statement::Insert(_)
                    | ast::Statement::Update(_)
                    | ast::Statement::Delete(_)
            ) =>
        {
            Some(DescriptionKey {
                statement: s.to_string(),
                declared: types.iter().map(|t| t.as_ref().map(Type::oid)).collect(),
                context: session.plans_context(),
            })
        }
        _ => None,
    };
    let kept = &session.descriptions.kept;
    if let Some(found) = key.as_ref().and_then(|k| kept.lock().get(k).cloned()) {
        return Ok(found);
    }
    let description = describe_afresh(session, parsed, types).await?;
    if let Some(key) = key {
        let mut kept = kept.lock();
        if kept.len() >= MAX_DESCRIPTIONS {
            kept.clear();
        }
        kept.insert(key, description.clone());
        assert!(kept.len() <= MAX_DESCRIPTIONS);
    }
    Ok(description)
}

async fn describe_afresh(
    session: &Session,
    parsed: &Parsed,
    types: &[Option<Type>],
) -> PgResult<Description> {
    let mut params: Vec<Type> = types
        .iter()
        .map(|t| t.clone().unwrap_or(Type::UNKNOWN))
        .collect();
    if let Parsed::Sql(s) = &parsed {
        if let ast::Statement::Insert(ins) = &**s {
            // `VALUES ($1, …)`: the target columns' types, as in PostgreSQL.
            let typed =
                crate::sql::insert::parameter_types(session.db(), session.temp.schema(), ins)?;
            for (n, ty) in typed {
                if params.len() < n {
                    params.resize(n, Type::UNKNOWN);
                }
                if params[n - 1] == Type::UNKNOWN {
                    params[n - 1] = Type::from_oid(ty.oid()).unwrap_or(Type::TEXT);
                }
            }
        }
    }
    let mut schema = None;
    let plan_target = match &parsed {
        Parsed::Sql(s) => match &**s {
            ast::Statement::Query(_) => Some((**s).clone()),
            ast::Statement::Insert(ins) => crate::sql::defaults::source_with_defaults(
                session.db(),
                session.temp.schema(),
                ins,
            )?
            .map(|q| ast::Statement::Query(Box::new(q))),
            ast::Statement::Delete(_) | ast::Statement::Update(_) => {
                crate::sql::dml::row_query(session.db(), session.temp.schema(), s, false)?
                    .map(|found| found.query)
            }
            // EXPLAIN: the explained query's parameters, and one column.
            ast::Statement::Explain { statement, .. } => {
                let format = crate::explain::options::ExplainOptions::from_statement(s)
                    .map(|o| o.format)
                    .unwrap_or_default();
                schema = Some(crate::explain::result_schema(format));
                matches!(**statement, ast::Statement::Query(_)).then(|| (**statement).clone())
            }
            _ => None,
        },
        _ => None,
    };
    if let Some(target) = plan_target {
        let mut plan = session.plan_only(&target, &[]).await?;
        let inferred = plan
            .get_parameter_types()
            .map_err(crate::errors::from_datafusion)?;
        let implied = crate::sql::params::implied_placeholder_types(&plan);
        for (name, dt) in inferred {
            let dt = dt.or_else(|| implied.get(&name).cloned());
            let Some(idx) = name.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) else {
                continue;
            };
            if idx == 0 {
                continue;
            }
            if params.len() < idx {
                params.resize(idx, Type::UNKNOWN);
            }
            if params[idx - 1] == Type::UNKNOWN {
                params[idx - 1] = dt
                    .as_ref()
                    .map(|d| crate::wire::encode::pg_type_of(d).0)
                    .unwrap_or(Type::TEXT);
            }
        }
        if types.iter().any(Option::is_some) {
            // Plan again with every parameter typed (declared, inferred, else text),
            // so that `SELECT $1` reports the declared type (see crate::sql::params).
            let known: Vec<_> = params
                .iter()
                .map(|t| match *t {
                    Type::UNKNOWN => Some(DataType::Utf8),
                    _ => declared_arrow_type(t),
                })
                .collect();
            plan = session.plan_only(&target, &known).await?;
        }
        if matches!(&parsed, Parsed::Sql(s) if matches!(**s, ast::Statement::Query(_))) {
            schema = Some(crate::sql::colnames::rename(
                &target,
                Arc::new(plan.schema().as_arrow().clone()),
            ));
        }
    } else if let Parsed::Sql(s) = &parsed {
        if let ast::Statement::ShowVariable { variable } = &**s {
            let name = variable
                .iter()
                .map(|i| i.value.clone())
                .collect::<Vec<_>>()
                .join(" ");
            schema = Some(crate::show::show_schema(&name));
        }
    }
    if let Parsed::Fetch(fetch) = &parsed {
        if !fetch.moving {
            schema = session.cursors.schema_of(&fetch.cursor);
        }
    }
    if let Parsed::Sql(s) = &parsed {
        let highest = crate::sql::params::highest_placeholder(s);
        if params.len() < highest {
            params.resize(highest, Type::UNKNOWN);
        }
    }
    for p in params.iter_mut() {
        if *p == Type::UNKNOWN {
            *p = Type::TEXT;
        }
    }
    if let Parsed::Sql(s) = &parsed {
        // INSERT, UPDATE and DELETE with RETURNING: the columns of the rows they return.
        let types: Vec<_> = params.iter().map(declared_arrow_type).collect();
        let returning = session.returning_schema(s, &types).await?;
        if returning.is_some() {
            schema = returning;
        }
    }
    Ok(Description { params, schema })
}
