//! The extended query protocol: Parse plans a statement once (so Describe can report
//! parameter and result types), Bind supplies parameter values in text or binary
//! format, Execute runs it through the same `Session::run` as the simple protocol.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit};
use datafusion::scalar::ScalarValue;
use datafusion::sql::sqlparser::ast;
use futures::{Sink, SinkExt};
use iolab_catalog::{sqlstate, PgError, PgResult};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{send_describe_response, ExtendedQueryHandler};
use pgwire::api::results::{
    DescribePortalResponse, DescribeStatementResponse, FieldFormat, FieldInfo, Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, Type};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::extendedquery::{Describe, Execute, Sync as PgSync, TARGET_TYPE_BYTE_PORTAL};
use pgwire::messages::response::ReadyForQuery;
use pgwire::messages::PgWireBackendMessage;

use crate::errors::to_wire;
use crate::server::Server;
use crate::sql::{self, split::split_statements, Outcome, Parsed};
use crate::wire::{encode, session_of, simple};

/// A prepared statement.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// `None` for an empty statement.
    pub parsed: Option<Parsed>,
    /// Parameter types (as given by the client, else inferred).
    pub params: Vec<Type>,
    /// Result columns of a query (None for commands without rows).
    pub schema: Option<SchemaRef>,
    /// The statement's text as the client sent it (`pg_stat_activity.query`).
    pub sql: String,
}

pub struct ExtendedHandler {
    server: Arc<Server>,
    parser: Arc<PrepareParser>,
}

impl ExtendedHandler {
    pub fn new(server: Arc<Server>) -> ExtendedHandler {
        ExtendedHandler {
            parser: Arc::new(PrepareParser {
                server: server.clone(),
            }),
            server,
        }
    }
}

pub struct PrepareParser {
    server: Arc<Server>,
}

#[async_trait]
impl QueryParser for PrepareParser {
    type Statement = Prepared;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Prepared>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let statements = split_statements(sql);
        if statements.len() > 1 {
            return Err(to_wire(PgError::syntax(
                "cannot insert multiple commands into a prepared statement",
            )));
        }
        let Some(stmt) = statements.first() else {
            return Ok(None);
        };
        let session = session_of(&self.server, client);
        let session = session.lock().await;
        let text = crate::pgcatalog::rewrite_for_datafusion(stmt.text);
        let parsed = sql::parse(&text, sql, stmt.offset).map_err(|e| fail_block(&session, e))?;
        let mut params: Vec<Type> = types
            .iter()
            .map(|t| t.clone().unwrap_or(Type::UNKNOWN))
            .collect();
        if let Parsed::Sql(s) = &parsed {
            if let ast::Statement::Insert(ins) = &**s {
                // `VALUES ($1, …)`: the target columns' types, as in PostgreSQL.
                let typed = sql::insert::parameter_types(session.db(), ins)
                    .map_err(|e| fail_block(&session, e))?;
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
                ast::Statement::Insert(ins) => {
                    sql::defaults::source_with_defaults(session.db(), ins)
                        .map_err(|e| fail_block(&session, e))?
                        .map(|q| ast::Statement::Query(Box::new(q)))
                }
                ast::Statement::Delete(_) | ast::Statement::Update(_) => {
                    sql::dml::row_query(session.db(), s, false)
                        .map_err(|e| fail_block(&session, e))?
                        .map(|found| found.query)
                }
                // EXPLAIN: the explained query's parameters, and one text column.
                ast::Statement::Explain { statement, .. } => {
                    schema = Some(crate::explain::result_schema());
                    matches!(**statement, ast::Statement::Query(_)).then(|| (**statement).clone())
                }
                _ => None,
            },
            _ => None,
        };
        if let Some(target) = plan_target {
            let mut plan = session
                .plan_only(&target, &[])
                .await
                .map_err(|e| fail_block(&session, e))?;
            let inferred = plan
                .get_parameter_types()
                .map_err(|e| to_wire(crate::errors::from_datafusion(e)))?;
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
                        .map(|d| encode::pg_type_of(d).0)
                        .unwrap_or(Type::TEXT);
                }
            }
            if types.iter().any(Option::is_some) {
                // Plan again with every parameter typed (declared, inferred, else text),
                // so that `SELECT $1` reports the declared type (see sql::params).
                let known: Vec<_> = params
                    .iter()
                    .map(|t| match *t {
                        Type::UNKNOWN => Some(DataType::Utf8),
                        _ => declared_arrow_type(t),
                    })
                    .collect();
                plan = session
                    .plan_only(&target, &known)
                    .await
                    .map_err(|e| fail_block(&session, e))?;
            }
            if matches!(&parsed, Parsed::Sql(s) if matches!(**s, ast::Statement::Query(_))) {
                schema = Some(sql::colnames::rename(
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
        for p in params.iter_mut() {
            if *p == Type::UNKNOWN {
                *p = Type::TEXT;
            }
        }
        if let Parsed::Sql(s) = &parsed {
            // INSERT, UPDATE and DELETE with RETURNING: the columns of the rows they return.
            let types: Vec<_> = params.iter().map(declared_arrow_type).collect();
            let returning = session
                .returning_schema(s, &types)
                .await
                .map_err(|e| fail_block(&session, e))?;
            if returning.is_some() {
                schema = returning;
            }
        }
        Ok(Some(Prepared {
            parsed: Some(parsed),
            params,
            schema,
            sql: sql.to_string(),
        }))
    }

    fn get_parameter_types(&self, stmt: &Prepared) -> PgWireResult<Vec<Type>> {
        Ok(stmt.params.clone())
    }

    fn get_result_schema(
        &self,
        stmt: &Prepared,
        column_format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(match &stmt.schema {
            Some(schema) => {
                let fields = encode::fields(schema, |i| {
                    column_format
                        .map(|f| f.format_for(i))
                        .unwrap_or(FieldFormat::Text)
                });
                (*fields).clone()
            }
            None => vec![],
        })
    }
}

#[async_trait]
impl ExtendedQueryHandler for ExtendedHandler {
    type Statement = Prepared;
    type QueryParser = PrepareParser;

    fn query_parser(&self) -> Arc<PrepareParser> {
        self.parser.clone()
    }

    async fn on_execute<C>(&self, client: &mut C, message: Execute) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let result = self._on_execute(client, message).await;
        let session = session_of(&self.server, client);
        let status = simple::transaction_status(&*session.lock().await);
        client.set_transaction_status(status);
        result
    }

    async fn on_sync<C>(&self, client: &mut C, _message: PgSync) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        client.portal_store().rm_portal(pgwire::api::DEFAULT_NAME);
        let session = session_of(&self.server, client);
        let status = {
            let session = session.lock().await;
            session.report_idle();
            simple::transaction_status(&session)
        };
        client.set_transaction_status(status);
        client
            .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                status,
            )))
            .await?;
        client.flush().await?;
        Ok(())
    }

    /// A SQL cursor is a portal too, as in PostgreSQL: Describe of a portal named as a
    /// cursor of the session (psycopg's named cursors ask) gives the cursor's columns.
    async fn on_describe<C>(&self, client: &mut C, message: Describe) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or("");
        if message.target_type == TARGET_TYPE_BYTE_PORTAL
            && client.portal_store().get_portal(name).is_none()
        {
            let session = session_of(&self.server, client);
            let cursor_columns = session.lock().await.cursors.schema_of(name);
            if let Some(schema) = cursor_columns {
                let fields = encode::fields(&schema, |_| FieldFormat::Text);
                let response = DescribePortalResponse::new((*fields).clone());
                return send_describe_response(client, &response).await;
            }
        }
        self._on_describe(client, message).await
    }

    async fn do_describe_statement<C>(
        &self,
        _client: &mut C,
        target: &StoredStatement<Prepared>,
    ) -> PgWireResult<DescribeStatementResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let fields = self.parser.get_result_schema(&target.statement, None)?;
        Ok(DescribeStatementResponse::new(
            target.statement.params.clone(),
            fields,
        ))
    }

    async fn do_describe_portal<C>(
        &self,
        _client: &mut C,
        target: &Portal<Prepared>,
    ) -> PgWireResult<DescribePortalResponse>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let fields = self.parser.get_result_schema(
            &target.statement.statement,
            Some(&target.result_column_format),
        )?;
        Ok(DescribePortalResponse::new(fields))
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Prepared>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let prepared = &portal.statement.statement;
        let Some(parsed) = &prepared.parsed else {
            return Ok(Response::EmptyQuery);
        };
        let shared = session_of(&self.server, client);
        let mut session = shared.lock().await;
        session.report_active(&portal.statement.statement.sql);
        let params = bind_params(portal).map_err(|e| fail_block(&session, e))?;
        let mut notices = Vec::new();
        let result =
            simple::run_with_timeout(&mut session, parsed, Some(params), &mut notices).await;
        simple::send_notices(client, &notices).await?;
        simple::report_settings(client, &mut session).await?;
        match result.map_err(to_wire)? {
            Outcome::Rows {
                schema,
                stream,
                tag,
            } => {
                let formats = &portal.result_column_format;
                let fields = encode::fields(&schema, |i| formats.format_for(i));
                Ok(Response::Query(encode::query_response(
                    stream,
                    fields,
                    session.text_format(),
                    tag,
                )))
            }
            Outcome::Done(tag) => Ok(Response::Execution(Tag::new(&tag))),
            Outcome::TxnStart(tag) => Ok(Response::TransactionStart(Tag::new(&tag))),
            Outcome::TxnEnd(tag) => Ok(Response::TransactionEnd(Tag::new(&tag))),
            Outcome::CopyIn { columns } => Ok(Response::CopyIn(
                pgwire::api::results::CopyResponse::new(0, columns, futures::stream::empty()),
            )),
            Outcome::CopyOut { .. } => Err(to_wire(PgError::unsupported(
                "COPY TO STDOUT through the extended protocol is not supported",
            ))),
        }
    }
}

/// An error before a statement runs still fails an open transaction block.
fn fail_block(session: &crate::session::Session, e: PgError) -> PgWireError {
    if session.txn.in_block {
        session
            .txn
            .failed
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    to_wire(e)
}

/// Decodes a portal's parameter values into DataFusion scalars of their types.
fn bind_params(portal: &Portal<Prepared>) -> PgResult<Vec<ScalarValue>> {
    let types = &portal.statement.statement.params;
    let mut values = Vec::with_capacity(portal.parameters.len());
    for (i, raw) in portal.parameters.iter().enumerate() {
        let ty = types.get(i).cloned().unwrap_or(Type::TEXT);
        let binary = portal.parameter_format.is_binary(i);
        values.push(param_value(raw.as_deref(), &ty, binary)?);
    }
    Ok(values)
}

fn param_value(raw: Option<&[u8]>, ty: &Type, binary: bool) -> PgResult<ScalarValue> {
    let target = param_arrow_type(ty);
    let Some(bytes) = raw else {
        return ScalarValue::try_from(&target).map_err(crate::errors::from_datafusion);
    };
    let bad = || {
        PgError::new(
            sqlstate::PROTOCOL_VIOLATION,
            format!(
                "incorrect binary data format in bind parameter of type {}",
                ty.name()
            ),
        )
    };
    if binary {
        let be = |n: usize| -> PgResult<&[u8]> {
            if bytes.len() == n {
                Ok(bytes)
            } else {
                Err(bad())
            }
        };
        return Ok(match *ty {
            Type::BOOL => ScalarValue::Boolean(Some(be(1)?[0] != 0)),
            Type::INT2 => ScalarValue::Int16(Some(i16::from_be_bytes(be(2)?.try_into().unwrap()))),
            Type::INT4 => ScalarValue::Int32(Some(i32::from_be_bytes(be(4)?.try_into().unwrap()))),
            Type::INT8 => ScalarValue::Int64(Some(i64::from_be_bytes(be(8)?.try_into().unwrap()))),
            Type::FLOAT4 => {
                ScalarValue::Float32(Some(f32::from_be_bytes(be(4)?.try_into().unwrap())))
            }
            Type::FLOAT8 => {
                ScalarValue::Float64(Some(f64::from_be_bytes(be(8)?.try_into().unwrap())))
            }
            Type::DATE => ScalarValue::Date32(Some(
                i32::from_be_bytes(be(4)?.try_into().unwrap()) + PG_EPOCH_DAYS,
            )),
            Type::TIMESTAMP => ScalarValue::TimestampMicrosecond(
                Some(i64::from_be_bytes(be(8)?.try_into().unwrap()) + PG_EPOCH_MICROS),
                None,
            ),
            Type::TIMESTAMPTZ => ScalarValue::TimestampMicrosecond(
                Some(i64::from_be_bytes(be(8)?.try_into().unwrap()) + PG_EPOCH_MICROS),
                Some(iolab_catalog::types::TIMESTAMPTZ_ZONE.into()),
            ),
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                ScalarValue::Utf8(Some(String::from_utf8(bytes.to_vec()).map_err(|_| bad())?))
            }
            _ => {
                return Err(PgError::unsupported(format!(
                    "binary parameters of type {} are not supported",
                    ty.name()
                )))
            }
        });
    }
    let text = std::str::from_utf8(bytes)
        .map_err(|_| PgError::new("22021", "invalid byte sequence for encoding \"UTF8\""))?;
    let value = ScalarValue::Utf8(Some(text.to_string()));
    if target == DataType::Utf8 {
        return Ok(value);
    }
    value.cast_to(&target).map_err(|_| {
        PgError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!(
                "invalid input syntax for type {}: \"{text}\"",
                pg_type_name(ty)
            ),
        )
    })
}

fn pg_type_name(ty: &Type) -> &str {
    match *ty {
        Type::INT2 => "smallint",
        Type::INT4 => "integer",
        Type::INT8 => "bigint",
        Type::FLOAT4 => "real",
        Type::FLOAT8 => "double precision",
        Type::BOOL => "boolean",
        _ => ty.name(),
    }
}

/// The Arrow type a parameter of type `ty` is bound as (`None` for unknown, and for
/// types iolab binds as text without being text).
fn declared_arrow_type(ty: &Type) -> Option<DataType> {
    match *ty {
        Type::TEXT | Type::VARCHAR | Type::BPCHAR => Some(DataType::Utf8),
        _ => Some(param_arrow_type(ty)).filter(|t| *t != DataType::Utf8),
    }
}

fn param_arrow_type(ty: &Type) -> DataType {
    match *ty {
        Type::BOOL => DataType::Boolean,
        Type::INT2 => DataType::Int16,
        Type::INT4 => DataType::Int32,
        Type::INT8 => DataType::Int64,
        Type::FLOAT4 => DataType::Float32,
        Type::FLOAT8 => DataType::Float64,
        Type::NUMERIC => DataType::Decimal128(38, 10),
        Type::DATE => DataType::Date32,
        Type::TIMESTAMP => DataType::Timestamp(TimeUnit::Microsecond, None),
        Type::TIMESTAMPTZ => DataType::Timestamp(
            TimeUnit::Microsecond,
            Some(iolab_catalog::types::TIMESTAMPTZ_ZONE.into()),
        ),
        _ => DataType::Utf8,
    }
}

/// Days and microseconds from the Unix epoch to PostgreSQL's (2000-01-01).
const PG_EPOCH_DAYS: i32 = 10_957;
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;
