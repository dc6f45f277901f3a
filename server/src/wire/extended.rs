//! The extended query protocol: Parse plans a statement once (so Describe can report
//! parameter and result types), Bind supplies parameter values in text or binary
//! format, Execute runs it through the same `Session::run` as the simple protocol. The
//! Executes before a Sync share one transaction, which the Sync commits or, after an
//! error, rolls back (PostgreSQL's pipelining; `Session::join_pipeline`).
//!
//! Parse, Bind and Close are checked as PostgreSQL checks them before pgwire stores
//! anything: a named statement is not redefined (42P05); a Bind supplies as many values
//! as the statement has parameters, with format codes 0 or 1, as many parameter formats
//! as values and as many result formats as columns when there is more than one (08P01,
//! 22023); Close names a statement ('S') or a portal ('P').

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::scalar::ScalarValue;
use futures::{Sink, SinkExt};
use iolab_catalog::{sqlstate, PgError, PgResult};
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{send_describe_response, ExtendedQueryHandler};
use pgwire::api::results::{
    DescribePortalResponse, DescribeStatementResponse, FieldFormat, FieldInfo, Response, Tag,
};
use pgwire::api::stmt::{QueryParser, StoredStatement};
use pgwire::api::store::{Entry, PortalStore};
use pgwire::api::{ClientInfo, ClientPortalStore, Type, DEFAULT_NAME};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::extendedquery::{
    Bind, BindComplete, Close, CloseComplete, Describe, Execute, Parse, ParseComplete,
    Sync as PgSync, TARGET_TYPE_BYTE_PORTAL, TARGET_TYPE_BYTE_STATEMENT,
};
use pgwire::messages::response::{ReadyForQuery, TransactionStatus};
use pgwire::messages::PgWireBackendMessage;

use crate::errors::to_wire;
use crate::server::Server;
use crate::sql::bind::param_value;
use crate::sql::describe::{describe, Description};
use crate::sql::prepare::{too_many_prepared, MAX_PREPARED};
use crate::sql::{self, split::split_statements, Outcome, Parsed};
use crate::wire::{client_name, encode, session_of, simple};
use iolab_engine::values::TextFormat;

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
        let failed = |e| {
            fail_block(
                &session,
                crate::error_position::locate(e, stmt.text, sql, stmt.offset),
            )
        };
        let parsed = sql::parse_in_session(&text, sql, stmt.offset, &session.text_format())
            .map_err(failed)?;
        let Description { params, schema } =
            describe(&session, &parsed, types).await.map_err(failed)?;
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

    /// pgwire's Parse, refusing to redefine a named statement (the unnamed one is
    /// replaced, as in PostgreSQL) or to keep more than `MAX_PREPARED` named ones.
    async fn on_parse<C>(&self, client: &mut C, message: Parse) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        let named = name != DEFAULT_NAME;
        if named {
            let refusal = if client.portal_store().get_statement(name).is_some() {
                Some(PgError::new(
                    sqlstate::DUPLICATE_PSTATEMENT,
                    format!("prepared statement \"{name}\" already exists"),
                ))
            } else {
                let session = session_of(&self.server, client);
                let kept = session.lock().await.protocol_statements;
                (kept >= MAX_PREPARED).then(too_many_prepared)
            };
            if let Some(e) = refusal {
                return Err(self.refuse(client, e).await);
            }
        }
        match StoredStatement::parse(client, &message, self.query_parser()).await? {
            Some(statement) => client.portal_store().put_statement(Arc::new(statement)),
            None => client.portal_store().put_empty_statement(name),
        }
        if named {
            let session = session_of(&self.server, client);
            let mut session = session.lock().await;
            session.protocol_statements += 1;
            assert!(session.protocol_statements <= MAX_PREPARED);
        }
        client
            .send(PgWireBackendMessage::ParseComplete(ParseComplete::new()))
            .await?;
        Ok(())
    }

    /// pgwire's Bind, after PostgreSQL's checks of the message against its statement
    /// ([`check_bind`]).
    async fn on_bind<C>(&self, client: &mut C, message: Bind) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let name = message.statement_name.as_deref().unwrap_or(DEFAULT_NAME);
        let Some(statement) = client.portal_store().get_statement(name) else {
            return Err(PgWireError::StatementNotFound(name.to_owned()));
        };
        if let Err(e) = check_bind(&message, &statement, client_name(name)) {
            return Err(self.refuse(client, e).await);
        }
        match statement {
            Entry::Value(statement) => {
                let portal = Portal::try_new(&message, statement)?;
                client.portal_store().put_portal(Arc::new(portal));
            }
            Entry::Empty => {
                let portal = message.portal_name.as_deref().unwrap_or(DEFAULT_NAME);
                client.portal_store().put_empty_portal(portal);
            }
        }
        client
            .send(PgWireBackendMessage::BindComplete(BindComplete::new()))
            .await?;
        Ok(())
    }

    /// pgwire's Close, refusing a target that is neither a statement nor a portal.
    async fn on_close<C>(&self, client: &mut C, message: Close) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Self::Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let target = message.target_type;
        if target != TARGET_TYPE_BYTE_STATEMENT && target != TARGET_TYPE_BYTE_PORTAL {
            let e = PgError::new(
                sqlstate::PROTOCOL_VIOLATION,
                format!("invalid CLOSE message subtype {target}"),
            );
            return Err(self.refuse(client, e).await);
        }
        let name = message.name.as_deref().unwrap_or(DEFAULT_NAME);
        if target == TARGET_TYPE_BYTE_STATEMENT {
            if name != DEFAULT_NAME && client.portal_store().get_statement(name).is_some() {
                let session = session_of(&self.server, client);
                session.lock().await.protocol_statements -= 1;
            }
            client.portal_store().rm_statement(name);
        } else {
            client.portal_store().rm_portal(name);
        }
        client
            .send(PgWireBackendMessage::CloseComplete(CloseComplete::new()))
            .await?;
        Ok(())
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
        // An error since the last Sync (ours, or one pgwire answered itself) left the
        // status failed: the Executes' implicit block rolls back.
        let succeeded = client.transaction_status() != TransactionStatus::Error;
        let session = session_of(&self.server, client);
        let (ended, status) = {
            let mut session = session.lock().await;
            let ended = session.end_implicit_block(succeeded).await;
            session.report_idle();
            (ended, simple::transaction_status(&session))
        };
        if let Err(e) = ended {
            simple::send_error(client, &e).await?;
        }
        simple::close_portals_when_idle(client, status);
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
        session.adopt_reloaded_configuration();
        session.report_active(&portal.statement.statement.sql);
        session.join_pipeline(parsed);
        let params =
            bind_params(portal, &session.text_format()).map_err(|e| fail_block(&session, e))?;
        let mut notices = Vec::new();
        let result = simple::run_with_timeout(
            &mut session,
            &prepared.sql,
            parsed,
            Some(params),
            &mut notices,
        )
        .await;
        simple::send_notices(client, &notices).await?;
        simple::report_settings(client, &mut session).await?;
        let located = |e| crate::error_position::locate(e, &prepared.sql, &prepared.sql, 0);
        match result.map_err(|e| to_wire(located(e)))? {
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

impl ExtendedHandler {
    /// `e` as the answer to a protocol message, failing an open transaction block.
    async fn refuse<C: ClientInfo>(&self, client: &C, e: PgError) -> PgWireError {
        let session = session_of(&self.server, client);
        let session = session.lock().await;
        fail_block(&session, e)
    }
}

/// PostgreSQL's checks of a Bind message against its statement (`name` as the client
/// spelled it), in PostgreSQL's order; a result format code PostgreSQL checks only at
/// Execute (or Describe) is checked here too.
fn check_bind(
    bind: &Bind,
    statement: &Entry<StoredStatement<Prepared>>,
    name: &str,
) -> PgResult<()> {
    let supplied = bind.parameters.len();
    let formats = &bind.parameter_format_codes;
    if formats.len() > 1 && formats.len() != supplied {
        return Err(PgError::new(
            sqlstate::PROTOCOL_VIOLATION,
            format!(
                "bind message has {} parameter formats but {supplied} parameters",
                formats.len()
            ),
        ));
    }
    let (required, columns) = match statement {
        Entry::Value(s) => (
            s.statement.params.len(),
            s.statement
                .schema
                .as_ref()
                .map(|schema| schema.fields().len()),
        ),
        Entry::Empty => (0, None),
    };
    if supplied != required {
        return Err(PgError::new(
            sqlstate::PROTOCOL_VIOLATION,
            format!(
                "bind message supplies {supplied} parameters, but prepared statement \"{name}\" requires {required}"
            ),
        ));
    }
    let unsupported = |codes: &[i16]| match codes.iter().find(|&&c| c != 0 && c != 1) {
        Some(code) => Err(PgError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("unsupported format code: {code}"),
        )),
        None => Ok(()),
    };
    if supplied > 0 {
        unsupported(formats)?;
    }
    let results = &bind.result_column_format_codes;
    if let Some(columns) = columns {
        if results.len() > 1 && results.len() != columns {
            return Err(PgError::new(
                sqlstate::PROTOCOL_VIOLATION,
                format!(
                    "bind message has {} result formats but query has {columns} columns",
                    results.len()
                ),
            ));
        }
    }
    unsupported(results)
}

/// An error before a statement runs still fails an open transaction block.
fn fail_block(session: &crate::session::Session, e: PgError) -> PgWireError {
    session.txn.fail_if_in_block();
    to_wire(e)
}

/// Decodes a portal's parameter values into DataFusion scalars of their types (text read
/// as the session reads it, `fmt`).
fn bind_params(portal: &Portal<Prepared>, fmt: &TextFormat) -> PgResult<Vec<ScalarValue>> {
    let types = &portal.statement.statement.params;
    let mut values = Vec::with_capacity(portal.parameters.len());
    for (i, raw) in portal.parameters.iter().enumerate() {
        let ty = types.get(i).cloned().unwrap_or(Type::TEXT);
        let binary = portal.parameter_format.is_binary(i);
        values.push(param_value(raw.as_deref(), &ty, binary, fmt)?);
    }
    Ok(values)
}
