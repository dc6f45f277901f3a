//! The PostgreSQL wire protocol (through pgwire): accepting connections, start-up and
//! authentication, and the handlers that feed statements to sessions.
//!
//! Authentication: with no password configured, connections from loopback addresses are
//! trusted (like a `trust` line for 127.0.0.1/::1 in pg_hba.conf) and others refused;
//! with a password, every connection authenticates with SCRAM-SHA-256.

mod connection;
pub mod encode;
pub mod extended;
mod frontend;
pub mod simple;
pub mod startup;
pub mod timeouts;

use std::sync::Arc;

use pgwire::api::cancel::DefaultCancelHandler;
use pgwire::api::copy::CopyHandler;
use pgwire::api::{ClientInfo, ErrorHandler, PgWireServerHandlers};
use pgwire::error::PgWireError;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::PgWireBackendMessage;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::server::Server;
use crate::session::SharedSession;

/// The handlers of one connection.
pub struct Handlers {
    pub server: Arc<Server>,
    simple: Arc<simple::SimpleHandler>,
    extended: Arc<extended::ExtendedHandler>,
    startup: Arc<startup::Startup>,
    copy: Arc<CopyIn>,
    errors: Arc<ErrorRewriter>,
}

/// The connection's `pg_terminate_backend` notification, kept in its session extensions.
pub struct TerminateSignal(pub Arc<tokio::sync::Notify>);

impl Handlers {
    /// `terminate`: notified to end the connection (see [`serve`]); `farewell`: the FATAL a
    /// session timeout ends it with.
    pub fn new(
        server: Arc<Server>,
        terminate: Arc<tokio::sync::Notify>,
        farewell: Arc<timeouts::Farewell>,
    ) -> Handlers {
        Handlers {
            simple: Arc::new(simple::SimpleHandler {
                server: server.clone(),
            }),
            extended: Arc::new(extended::ExtendedHandler::new(server.clone())),
            startup: Arc::new(startup::Startup::new(server.clone(), terminate, farewell)),
            copy: Arc::new(CopyIn {
                server: server.clone(),
            }),
            errors: Arc::new(ErrorRewriter),
            server,
        }
    }
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl pgwire::api::query::SimpleQueryHandler> {
        self.simple.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl pgwire::api::query::ExtendedQueryHandler> {
        self.extended.clone()
    }

    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        self.startup.clone()
    }

    fn copy_handler(&self) -> Arc<impl CopyHandler> {
        self.copy.clone()
    }

    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        Arc::new(DefaultCancelHandler::new(self.server.connections.clone()))
    }

    fn error_handler(&self) -> Arc<impl ErrorHandler> {
        self.errors.clone()
    }
}

/// Gives pgwire's own protocol errors PostgreSQL's codes and words.
pub struct ErrorRewriter;

impl ErrorHandler for ErrorRewriter {
    fn on_error<C>(&self, _client: &C, error: &mut PgWireError)
    where
        C: ClientInfo,
    {
        let replacement = match error {
            PgWireError::StatementNotFound(name) => Some(iolab_catalog::PgError::new(
                iolab_catalog::sqlstate::INVALID_SQL_STATEMENT_NAME,
                format!(
                    "prepared statement \"{}\" does not exist",
                    client_name(name)
                ),
            )),
            PgWireError::PortalNotFound(name) => Some(iolab_catalog::PgError::new(
                iolab_catalog::sqlstate::INVALID_CURSOR_NAME,
                format!("portal \"{}\" does not exist", client_name(name)),
            )),
            PgWireError::InvalidPassword(user) => Some(iolab_catalog::PgError::fatal(
                iolab_catalog::sqlstate::INVALID_PASSWORD,
                format!("password authentication failed for user \"{user}\""),
            )),
            PgWireError::InvalidMessageType(t) => Some(iolab_catalog::PgError::fatal(
                iolab_catalog::sqlstate::PROTOCOL_VIOLATION,
                format!("invalid frontend message type {t}"),
            )),
            PgWireError::InvalidTargetType(t) => Some(iolab_catalog::PgError::new(
                iolab_catalog::sqlstate::PROTOCOL_VIOLATION,
                format!("invalid DESCRIBE message subtype {t}"),
            )),
            PgWireError::IoError(_) => None,
            PgWireError::UserError(_) | PgWireError::QueryCanceled => None,
            PgWireError::ApiError(e) => Some(iolab_catalog::PgError::internal(e.to_string())),
            _ => Some(iolab_catalog::PgError::fatal(
                iolab_catalog::sqlstate::PROTOCOL_VIOLATION,
                error.to_string(),
            )),
        };
        if let Some(e) = replacement {
            *error = crate::errors::to_wire(e);
        }
    }
}

/// A statement or portal name as the client spelled it (pgwire names the unnamed one).
pub(crate) fn client_name(name: &str) -> &str {
    if name == pgwire::api::DEFAULT_NAME {
        ""
    } else {
        name
    }
}

/// Returns the connection's session, creating it on first use.
pub fn session_of<C: ClientInfo>(server: &Arc<Server>, client: &C) -> SharedSession {
    if let Some(s) = client.session_extensions().get::<SharedSession>() {
        return (*s).clone();
    }
    let session = startup::new_session(server, client);
    let shared: SharedSession = Arc::new(tokio::sync::Mutex::new(session));
    client
        .session_extensions()
        .insert::<SharedSession>(shared.clone());
    shared
}

/// COPY FROM STDIN data arriving from the client.
pub struct CopyIn {
    server: Arc<Server>,
}

#[async_trait::async_trait]
impl CopyHandler for CopyIn {
    async fn on_copy_data<C>(
        &self,
        client: &mut C,
        copy_data: CopyData,
    ) -> pgwire::error::PgWireResult<()>
    where
        C: ClientInfo + futures::Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session_of(&self.server, client);
        let mut session = session.lock().await;
        crate::copy::on_data(&mut session, &copy_data.data).await;
        Ok(())
    }

    async fn on_copy_done<C>(
        &self,
        client: &mut C,
        _done: CopyDone,
    ) -> pgwire::error::PgWireResult<()>
    where
        C: ClientInfo + futures::Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        use futures::SinkExt;
        let session = session_of(&self.server, client);
        let mut session = session.lock().await;
        let rest = session.rest_of_message.take();
        let succeeded = match crate::copy::on_done(&mut session).await {
            Ok(tag) => {
                client
                    .feed(PgWireBackendMessage::CommandComplete(
                        pgwire::api::results::Tag::new(&tag).into(),
                    ))
                    .await?;
                match rest {
                    Some(rest) => simple::resume_after_copy(client, &mut session, rest).await?,
                    None => true,
                }
            }
            Err(e) => {
                simple::send_error(client, &e).await?;
                false
            }
        };
        simple::end_of_message(client, &mut session, succeeded).await?;
        client.flush().await?;
        Ok(())
    }

    async fn on_copy_fail<C>(&self, client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + futures::Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: std::fmt::Debug,
        PgWireError: From<<C as futures::Sink<PgWireBackendMessage>>::Error>,
    {
        let session = session_of(&self.server, client);
        let mut session = session.lock().await;
        crate::copy::on_fail(&mut session);
        // The statements after the COPY do not run: the message failed.
        session.rest_of_message = None;
        if let Err(e) = simple::end_of_message(client, &mut session, false).await {
            return e;
        }
        crate::errors::to_wire(iolab_catalog::PgError::new(
            iolab_catalog::sqlstate::QUERY_CANCELED,
            format!("COPY from stdin failed: {}", fail.message),
        ))
    }
}

/// Accepts connections until `shutdown` resolves.
pub async fn serve(
    server: Arc<Server>,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => {
                let (socket, addr) = match accepted {
                    Ok(x) => x,
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        continue;
                    }
                };
                let _ = socket.set_nodelay(true);
                let server = server.clone();
                tokio::spawn(async move {
                    let Some(slot) = server.try_connect() else {
                        reject(socket, "53300", "sorry, too many clients already").await;
                        return;
                    };
                    if server.password.is_none() && !addr.ip().is_loopback() {
                        let msg = format!("no pg_hba.conf entry for host \"{}\": iolab trusts only loopback connections unless started with --password", addr.ip());
                        reject(socket, "28000", &msg).await;
                        return;
                    }
                    let terminate = Arc::new(tokio::sync::Notify::new());
                    let farewell = Arc::new(timeouts::Farewell::default());
                    let handlers = Arc::new(Handlers::new(
                        server.clone(),
                        terminate.clone(),
                        farewell.clone(),
                    ));
                    // A second handle on the socket, to send the FATAL of
                    // pg_terminate_backend after the protocol task is dropped.
                    let (socket, farewell_socket) = match split_for_farewell(socket) {
                        Ok(pair) => pair,
                        Err(e) => {
                            tracing::warn!("connection from {addr}: {e}");
                            return;
                        }
                    };
                    tokio::select! {
                        ended = connection::process(socket, handlers) => {
                            if let Err(e) = ended {
                                tracing::debug!("connection from {addr} ended: {e}");
                            }
                        }
                        _ = terminate.notified() => {
                            let (code, message) = farewell.take().unwrap_or((
                                "57P01",
                                "terminating connection due to administrator command",
                            ));
                            tracing::info!("{message} (connection from {addr})");
                            send_fatal(farewell_socket, code, message).await;
                        }
                    }
                    drop(slot);
                });
            }
        }
    }
}

/// The socket, and a duplicate of it for [`send_fatal`].
fn split_for_farewell(socket: TcpStream) -> std::io::Result<(TcpStream, TcpStream)> {
    let std_socket = socket.into_std()?;
    let duplicate = std_socket.try_clone()?;
    Ok((
        TcpStream::from_std(std_socket)?,
        TcpStream::from_std(duplicate)?,
    ))
}

/// Answers a start-up with a FATAL error and closes, without starting a session.
async fn reject(mut socket: TcpStream, code: &str, message: &str) {
    use tokio::io::AsyncReadExt;
    // Read the start-up packet (answering SSL/GSS requests with 'N' first), so the client
    // is waiting for a reply when the error arrives.
    for _ in 0..3 {
        let Ok(len) = socket.read_i32().await else {
            return;
        };
        if !(8..=10_000).contains(&len) {
            return;
        }
        let mut body = vec![0u8; len as usize - 4];
        if socket.read_exact(&mut body).await.is_err() {
            return;
        }
        let code_word = i32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        if code_word == 80877103 || code_word == 80877104 {
            if socket.write_all(b"N").await.is_err() {
                return;
            }
            continue;
        }
        break;
    }
    send_fatal(socket, code, message).await;
}

/// Sends one FATAL ErrorResponse and closes the socket.
async fn send_fatal(mut socket: TcpStream, code: &str, message: &str) {
    let mut fields = Vec::new();
    for (tag, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', code),
        (b'M', message),
    ] {
        fields.push(tag);
        fields.extend_from_slice(value.as_bytes());
        fields.push(0);
    }
    fields.push(0);
    let mut msg = vec![b'E'];
    msg.extend_from_slice(&((fields.len() + 4) as i32).to_be_bytes());
    msg.extend_from_slice(&fields);
    let _ = socket.write_all(&msg).await;
    let _ = socket.shutdown().await;
}
