//! One client connection's message loop, and how its session ended.
//!
//! pgwire's `process_socket` runs a connection to its end but does not say how it ended,
//! which `pg_stat_database` counts (PostgreSQL's `SessionEndType`): a Terminate message is
//! a normal end; a FATAL error (a message PostgreSQL refuses so, see `frontend.rs`; a
//! session timeout in `timeouts.rs`) ends it as `sessions_fatal`;
//! `pg_terminate_backend` as `sessions_killed` (recorded by the signal); and a connection
//! that closes with none of these, say a client process that was killed, is
//! `sessions_abandoned`. So iolab runs the same loop as `process_socket`, built from
//! pgwire's public steps (TLS negotiation, one message, one error) around its own reading
//! of messages (`frontend.rs`), and records the end on the session's activity before the
//! connection, and with it the session, is dropped. The first end recorded stays
//! ([`BackendActivity::end_as`](iolab_stats::BackendActivity::end_as)).
//!
//! A connection still starting up has `STARTUP_TIMEOUT` to finish (PostgreSQL's
//! `authentication_timeout`, 60 s by default, as pgwire's).

use std::time::Duration;

use futures::SinkExt;
use iolab_stats::SessionEnd;
use pgwire::api::{ClientInfo, ErrorHandler, PgWireConnectionState, PgWireServerHandlers};
use pgwire::error::ErrorInfo;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use tokio::net::TcpStream;

use crate::errors::{to_error_info, to_wire};
use crate::pgcatalog::activity::ActivityRegistration;
use crate::session::SharedSession;
use crate::wire::frontend::{next_message, Next};

const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Serve `socket` until the client leaves, an error ends the session, or the start-up
/// times out.
pub async fn process<H: PgWireServerHandlers>(
    socket: TcpStream,
    handlers: H,
) -> std::io::Result<()> {
    let startup_timeout = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_timeout);
    let negotiated = tokio::select! {
        _ = &mut startup_timeout => return Ok(()),
        socket = negotiate_tls(socket, None) => socket?,
    };
    // A client that asked for TLS directly (iolab offers none).
    let Some(mut socket) = negotiated else {
        return Ok(());
    };
    let startup_handler = handlers.startup_handler();
    let simple_query_handler = handlers.simple_query_handler();
    let extended_query_handler = handlers.extended_query_handler();
    let copy_handler = handlers.copy_handler();
    let cancel_handler = handlers.cancel_handler();
    let error_handler = handlers.error_handler();
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let next = if starting {
            tokio::select! {
                _ = &mut startup_timeout => Next::HangUp,
                next = next_message(&mut socket) => next,
            }
        } else {
            next_message(&mut socket).await
        };
        let message = match next {
            Next::Message(message) => message,
            Next::Error {
                error,
                extended,
                sync,
            } => {
                fail_transaction(&mut socket, sync).await;
                process_error(&mut socket, to_wire(error), extended).await?;
                continue;
            }
            Next::Fatal(errors) => {
                end_session_as(&socket, SessionEnd::Fatal);
                send_and_hang_up(&mut socket, errors.iter().map(to_error_info)).await?;
                break;
            }
            // The connection was lost, or its bytes cannot be framed: PostgreSQL hangs up
            // without a reply, and counts the session as abandoned.
            Next::HangUp => break,
        };
        if matches!(message, PgWireFrontendMessage::Terminate(_)) {
            end_session_as(&socket, SessionEnd::Normal);
            break;
        }
        let wait_for_sync = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => message.is_extended_query(),
        };
        // A CancelRequest comes on a connection of its own, which ends after it.
        let is_cancel_request = matches!(message, PgWireFrontendMessage::CancelRequest(_));
        let processed = process_message(
            message,
            &mut socket,
            startup_handler.clone(),
            simple_query_handler.clone(),
            extended_query_handler.clone(),
            copy_handler.clone(),
            cancel_handler.clone(),
        )
        .await;
        if let Err(mut error) = processed {
            error_handler.on_error(&socket, &mut error);
            if error.is_fatal() {
                end_session_as(&socket, SessionEnd::Fatal);
                send_and_hang_up(&mut socket, [ErrorInfo::from(error)]).await?;
                break;
            }
            process_error(&mut socket, error, wait_for_sync).await?;
        }
        if is_cancel_request {
            break;
        }
    }
    Ok(())
}

/// Sends `errors` (the last one FATAL) and closes the connection: no ReadyForQuery
/// follows a FATAL, as in PostgreSQL (pgwire's `process_error` would send one).
async fn send_and_hang_up<S>(
    socket: &mut S,
    errors: impl IntoIterator<Item = ErrorInfo>,
) -> std::io::Result<()>
where
    S: futures::Sink<PgWireBackendMessage, Error = std::io::Error> + Unpin,
{
    for error in errors {
        socket
            .feed(PgWireBackendMessage::ErrorResponse(error.into()))
            .await?;
    }
    socket.close().await
}

/// An error outside a statement still fails the session's transaction block, if any; at
/// a Sync (`ends_pipeline`) it rolls back the extended protocol's implicit block.
async fn fail_transaction(client: &mut impl ClientInfo, ends_pipeline: bool) {
    let Some(session) = client.session_extensions().get::<SharedSession>() else {
        return;
    };
    let mut session = session.lock().await;
    session.txn.fail_if_in_block();
    if ends_pipeline {
        // A rollback that fails leaves nothing more to undo.
        let _ = session.end_implicit_block(false).await;
    }
    client.set_transaction_status(crate::wire::simple::transaction_status(&session));
}

/// Record how the connection's session (if it got as far as having one) ends.
fn end_session_as(client: &impl ClientInfo, end: SessionEnd) {
    if let Some(registration) = client.session_extensions().get::<ActivityRegistration>() {
        registration.activity.end_as(end);
    }
}
