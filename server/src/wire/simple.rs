//! The simple query protocol: a Query message with one or more statements, each
//! answered in order (notices, rows or a command tag), stopping at the first error,
//! then ReadyForQuery with the session's transaction status. Several statements share
//! an implicit transaction block, as in PostgreSQL: it commits after the last one, or
//! rolls back at an error, and statements that refuse a block (VACUUM…) refuse it. The
//! statements after a COPY FROM STDIN run once its data is in.

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use iolab_catalog::{sqlstate, PgError, PgResult};
use pgwire::api::query::{send_query_response, SimpleQueryHandler};
use pgwire::api::results::{FieldFormat, Response, Tag};
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, ConnectionHandle, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyData, CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::response::{
    EmptyQueryResponse, NoticeResponse, ReadyForQuery, TransactionStatus,
};
use pgwire::messages::simplequery::Query;
use pgwire::messages::startup::ParameterStatus;
use pgwire::messages::PgWireBackendMessage;

use crate::errors::to_error_info;
use crate::server::Server;
use crate::session::{Notice, Session};
use crate::sql::{self, split::split_statements, Outcome};
use crate::wire::encode;

pub struct SimpleHandler {
    pub server: Arc<Server>,
}

/// The transaction status byte of ReadyForQuery for a session.
pub fn transaction_status(session: &Session) -> TransactionStatus {
    if !session.txn.in_block {
        TransactionStatus::Idle
    } else if session.txn.is_failed() {
        TransactionStatus::Error
    } else {
        TransactionStatus::Transaction
    }
}

pub async fn send_notices<C>(client: &mut C, notices: &[Notice]) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for n in notices {
        let mut info = crate::errors::message_fields(n.severity, n.code, n.message.clone());
        info.detail = n.detail.clone();
        client
            .feed(PgWireBackendMessage::NoticeResponse(NoticeResponse::from(
                info,
            )))
            .await?;
    }
    Ok(())
}

pub async fn send_error<C>(client: &mut C, e: &PgError) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    send_error_info(client, to_error_info(e)).await
}

/// Sends an error already in wire form — except a statement's error that says its session
/// is being ended ([`CancelFlag::terminate`](iolab_engine::exec::cancel::CancelFlag::terminate)):
/// the connection's task has been told too (`wire::serve`) and drops this query as soon as
/// it waits, then sends the session's FATAL (57P01, or a timeout's). So nothing more goes
/// out from here, neither this error nor a ReadyForQuery.
async fn send_error_info<C>(client: &mut C, info: ErrorInfo) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if info.severity == "FATAL" && info.code == sqlstate::ADMIN_SHUTDOWN {
        std::future::pending::<()>().await;
    }
    client
        .feed(PgWireBackendMessage::ErrorResponse(info.into()))
        .await?;
    Ok(())
}

/// A query's watch for its connection's cancel request: the request sets the running
/// statement's cancel flag at once, from a task of its own (a statement busy in a step
/// that blocks its thread — `pg_sleep`, a wait for a transaction — sees it there), and
/// is told to the query's task through `fired` (which stops a statement waiting
/// elsewhere). Dropped with the query, the watch stops.
struct CancelWatch {
    fired: tokio::sync::oneshot::Receiver<()>,
    task: tokio::task::AbortHandle,
}

impl CancelWatch {
    fn start(request: futures::channel::oneshot::Receiver<()>, session: &Session) -> CancelWatch {
        let running = session.running.clone();
        let (tell, fired) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            if request.await.is_ok() {
                running.lock().cancel();
                let _ = tell.send(());
            }
        });
        CancelWatch {
            fired,
            task: task.abort_handle(),
        }
    }
}

impl Drop for CancelWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Runs one statement (`text`, as the client sent it) with `statement_timeout` applied,
/// and records it in `pg_stat_statements` once its result is done.
pub async fn run_with_timeout(
    session: &mut Session,
    text: &str,
    parsed: &sql::Parsed,
    params: Option<Vec<datafusion::scalar::ScalarValue>>,
    notices: &mut Vec<Notice>,
) -> PgResult<Outcome> {
    let started = std::time::Instant::now();
    session.last_statement = None;
    let timeout_ms = session.settings.statement_timeout_ms();
    let result = if timeout_ms <= 0 {
        session.run(parsed, params, notices).await
    } else {
        let limit = Duration::from_millis(timeout_ms as u64);
        match tokio::time::timeout(limit, session.run(parsed, params, notices)).await {
            Ok(r) => r,
            Err(_) => Err(PgError::new(
                sqlstate::QUERY_CANCELED,
                "canceling statement due to statement timeout",
            )),
        }
    };
    let tracked = crate::statement_stats::Tracked {
        hub: session.db().io_stats.clone(),
        userid: crate::pgcatalog::oids::POSTGRES_ROLE,
        query: session.normalized_texts.get(text),
        started,
        ctx: session.last_statement.take(),
    };
    result.map(|outcome| crate::statement_stats::recorded(tracked, outcome))
}

#[async_trait]
impl SimpleQueryHandler for SimpleHandler {
    async fn on_query<C>(&self, client: &mut C, query: Query) -> PgWireResult<()>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if !matches!(client.state(), PgWireConnectionState::ReadyForQuery) {
            return Err(PgWireError::NotReadyForQuery);
        }
        client.set_state(PgWireConnectionState::QueryInProgress);
        let shared = super::session_of(&self.server, client);
        let mut session = shared.lock().await;
        session.adopt_reloaded_configuration();
        session.report_active(&query.query);
        let cancel_watch = match client.session_extensions().get::<Arc<ConnectionHandle>>() {
            Some(h) => Some(CancelWatch::start(h.start_query().await, &session)),
            None => None,
        };
        let work = run_statements(client, &mut session, &query.query, 0);
        let (succeeded, canceled) = match cancel_watch {
            Some(mut watch) => {
                tokio::pin!(work);
                tokio::select! {
                    r = &mut work => (r?, false),
                    fired = &mut watch.fired => (false, fired.is_ok()),
                }
            }
            None => (work.await?, false),
        };
        if canceled {
            session.cancel.cancel();
            send_error(client, &PgError::canceled()).await?;
        }
        if !matches!(client.state(), PgWireConnectionState::CopyInProgress(_)) {
            let status = end_of_message(client, &mut session, succeeded).await?;
            close_portals_when_idle(client, status);
            client.set_state(PgWireConnectionState::ReadyForQuery);
            client
                .send(PgWireBackendMessage::ReadyForQuery(ReadyForQuery::new(
                    status,
                )))
                .await?;
        } else {
            client.flush().await?;
        }
        Ok(())
    }

    async fn do_query<C>(&self, _client: &mut C, _query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        unreachable!("on_query is overridden")
    }
}

/// Portals (the extended protocol's, which pgwire keeps) end with their transaction, as
/// in PostgreSQL: none outlives a ReadyForQuery that reports no open block.
pub fn close_portals_when_idle<C>(client: &C, status: TransactionStatus)
where
    C: ClientPortalStore,
    C::PortalStore: PortalStore,
{
    if status == TransactionStatus::Idle {
        client.portal_store().clear_portals();
    }
}

/// The end of a Query message's statements (after its COPY's data, if one waited for
/// it): its implicit block ends, the session goes idle, and the client is told the
/// transaction status that ReadyForQuery carries.
pub async fn end_of_message<C>(
    client: &mut C,
    session: &mut Session,
    succeeded: bool,
) -> PgWireResult<TransactionStatus>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if let Err(e) = session.end_implicit_block(succeeded).await {
        send_error(client, &e).await?;
    }
    session.report_idle();
    let status = transaction_status(session);
    client.set_transaction_status(status);
    Ok(status)
}

/// The statements of a Query message after its COPY FROM STDIN: `query` from statement
/// `next` on.
pub struct RestOfMessage {
    query: String,
    next: usize,
}

/// Runs the statements of a Query message that were left for after its COPY's data.
pub async fn resume_after_copy<C>(
    client: &mut C,
    session: &mut Session,
    rest: RestOfMessage,
) -> PgWireResult<bool>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    run_statements(client, session, &rest.query, rest.next).await
}

/// Runs the statements of `query` (a Query message's) from the `first`th on, sending
/// each one's response; false when one failed. A COPY FROM STDIN stops the run until
/// its data is in, leaving the statements after it in `rest_of_message`.
async fn run_statements<C>(
    client: &mut C,
    session: &mut Session,
    query: &str,
    first: usize,
) -> PgWireResult<bool>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let statements = split_statements(query);
    if statements.is_empty() {
        client
            .feed(PgWireBackendMessage::EmptyQueryResponse(
                EmptyQueryResponse::new(),
            ))
            .await?;
        return Ok(true);
    }
    let shared_block = statements.len() > 1;
    for (i, stmt) in statements.iter().enumerate().skip(first) {
        if shared_block {
            session.begin_implicit_block();
        }
        let mut notices = Vec::new();
        if let Some(answer) = session
            .intercept(stmt.text)
            .filter(|_| !session.txn.is_failed())
        {
            if !send_outcome(client, session, answer).await? {
                return Ok(false);
            }
            continue;
        }
        let text = crate::pgcatalog::rewrite_for_datafusion(stmt.text);
        let fmt = session.text_format();
        let result = match sql::parse_in_session(&text, query, stmt.offset, &fmt) {
            // pgwire ends a COPY with ReadyForQuery: after one COPY's data, another
            // cannot wait for its own.
            Ok(parsed) if first > 0 && crate::copy::reads_stdin(&parsed) => {
                session.fail_block();
                Err(PgError::unsupported(
                    "a second COPY FROM STDIN in one Query message is not supported",
                ))
            }
            Ok(parsed) => run_with_timeout(session, stmt.text, &parsed, None, &mut notices).await,
            Err(e) => {
                session.fail_block();
                Err(e)
            }
        }
        .map_err(|e| crate::error_position::locate(e, stmt.text, query, stmt.offset));
        send_notices(client, &notices).await?;
        report_settings(client, session).await?;
        if !send_outcome(client, session, result).await? {
            return Ok(false);
        }
        if session.copy_in.is_some() {
            session.rest_of_message = (i + 1 < statements.len()).then(|| RestOfMessage {
                query: query.to_string(),
                next: i + 1,
            });
            break;
        }
    }
    Ok(true)
}

/// Sends ParameterStatus for reported settings the last statement changed.
pub async fn report_settings<C>(client: &mut C, session: &mut Session) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    for (name, value) in session.settings.take_parameter_status_changes() {
        client
            .feed(PgWireBackendMessage::ParameterStatus(ParameterStatus::new(
                name.to_string(),
                value,
            )))
            .await?;
    }
    Ok(())
}

/// Sends a statement's outcome; false when it was an error (processing stops).
pub async fn send_outcome<C>(
    client: &mut C,
    session: &mut Session,
    result: PgResult<Outcome>,
) -> PgWireResult<bool>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let outcome = match result {
        Ok(o) => o,
        Err(e) => {
            send_error(client, &e).await?;
            return Ok(false);
        }
    };
    match outcome {
        Outcome::Rows {
            schema,
            stream,
            tag,
        } => {
            let fields = encode::fields(&schema, |_| FieldFormat::Text);
            let response = encode::query_response(stream, fields, session.text_format(), tag);
            if let Err(e) = send_query_response(client, response, true).await {
                // An error while rows were streaming: it arrives already in wire form.
                let info = match e {
                    PgWireError::UserError(info) => *info,
                    other => to_error_info(&PgError::internal(other.to_string())),
                };
                session.fail_block();
                send_error_info(client, info).await?;
                return Ok(false);
            }
        }
        Outcome::Done(tag) | Outcome::TxnStart(tag) | Outcome::TxnEnd(tag) => {
            client
                .feed(PgWireBackendMessage::CommandComplete(Tag::new(&tag).into()))
                .await?;
        }
        Outcome::CopyIn { columns } => {
            let resp = CopyInResponse::new(0, columns as i16, vec![0; columns]);
            client
                .send(PgWireBackendMessage::CopyInResponse(resp))
                .await?;
            client.set_state(PgWireConnectionState::CopyInProgress(false));
        }
        Outcome::CopyOut {
            columns,
            mut stream,
            mut encoder,
            text_format,
        } => {
            use futures::StreamExt;
            client
                .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
                    0,
                    columns as i16,
                    vec![0; columns],
                )))
                .await?;
            let mut rows = 0;
            let mut first = true;
            while let Some(batch) = stream.next().await {
                let batch = match batch {
                    Ok(b) => b,
                    Err(e) => {
                        send_error(client, &crate::errors::from_datafusion(e)).await?;
                        return Ok(false);
                    }
                };
                rows += batch.num_rows();
                for chunk in
                    crate::copy::encode_copy_batch(&mut encoder, &batch, &text_format, first)
                {
                    client
                        .feed(PgWireBackendMessage::CopyData(CopyData::new(chunk)))
                        .await?;
                }
                first = false;
            }
            if first {
                for chunk in crate::copy::encode_copy_batch(
                    &mut encoder,
                    &datafusion::arrow::record_batch::RecordBatch::new_empty(stream.schema()),
                    &text_format,
                    true,
                ) {
                    client
                        .feed(PgWireBackendMessage::CopyData(CopyData::new(chunk)))
                        .await?;
                }
            }
            client
                .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
                .await?;
            client
                .feed(PgWireBackendMessage::CommandComplete(
                    Tag::new(&format!("COPY {rows}")).into(),
                ))
                .await?;
        }
    }
    Ok(true)
}
