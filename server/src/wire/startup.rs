//! Start-up: protocol negotiation, authentication (trust on loopback, or SCRAM-SHA-256
//! with the configured password), the parameters reported to the client, and the new
//! session's settings from the start-up packet (`application_name`, `options=-c …`).

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth};
use pgwire::api::auth::sasl::SASLAuthStartupHandler;
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata, AuthSource,
    LoginInfo, Password, ServerParameterProvider, StartupHandler,
};
use pgwire::api::{ClientInfo, ConnectionGuard, ConnectionHandle, PidSecretKeyGenerator};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::pgcatalog::activity::{ActivityRegistration, ConnectionSignals};
use crate::server::Server;
use crate::session::Session;
use iolab_catalog::{sqlstate, PgError};
use iolab_settings::SessionSettings;

pub struct Startup {
    server: Arc<Server>,
    scram: Option<SASLAuthStartupHandler<Parameters>>,
    /// Notified by `pg_terminate_backend` (see `wire::serve`).
    terminate: Arc<tokio::sync::Notify>,
    /// The FATAL a session timeout leaves for `wire::serve` (`wire::timeouts`).
    farewell: Arc<super::timeouts::Farewell>,
}

impl Startup {
    pub fn new(
        server: Arc<Server>,
        terminate: Arc<tokio::sync::Notify>,
        farewell: Arc<super::timeouts::Farewell>,
    ) -> Startup {
        let scram = server.password.as_ref().map(|pw| {
            let source = Arc::new(PasswordSource {
                password: pw.clone(),
            });
            SASLAuthStartupHandler::new(Arc::new(Parameters {
                server: server.clone(),
            }))
            .with_scram(ScramAuth::new(source))
            .with_connection_manager(server.connections.clone())
            .with_pid_secret_key_generator(server.pids.clone())
        });
        Startup {
            server,
            scram,
            terminate,
            farewell,
        }
    }
}

#[async_trait]
impl StartupHandler for Startup {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        if client
            .session_extensions()
            .get::<super::TerminateSignal>()
            .is_none()
        {
            client
                .session_extensions()
                .insert(super::TerminateSignal(self.terminate.clone()));
            client.session_extensions().insert(self.farewell.clone());
        }
        if let Some(scram) = &self.scram {
            // The role and the database are checked before the password exchange here
            // (PostgreSQL checks them after): pgwire's exchange ends in ReadyForQuery, no
            // place for a FATAL. An unknown role fails as a wrong password does, which is
            // what PostgreSQL answers with password authentication (it does not say which
            // roles exist).
            if let PgWireFrontendMessage::Startup(ref startup) = message {
                let parameters = startup.parameters.clone().into_iter().collect();
                if let Some(user) = unknown_role(&parameters).and(parameters.get("user")) {
                    let e = PgError::fatal(
                        sqlstate::INVALID_PASSWORD,
                        format!("password authentication failed for user \"{user}\""),
                    );
                    return refuse(client, false, e).await;
                }
                if let Some(e) = unknown_database(&parameters) {
                    return refuse(client, false, e).await;
                }
            }
            return scram.on_startup(client, message).await;
        }
        if let PgWireFrontendMessage::Startup(ref startup) = message {
            protocol_negotiation(client, startup).await?;
            save_startup_parameters_to_metadata(client, startup);
            // PostgreSQL checks that there is a user name before authenticating, and the
            // role and then the database after.
            if let Some(e) = missing_user(client.metadata()) {
                return refuse(client, false, e).await;
            }
            if let Some(e) = unknown_role(client.metadata()) {
                return refuse(client, true, e).await;
            }
            if let Some(e) = unknown_database(client.metadata()) {
                return refuse(client, true, e).await;
            }
            let (pid, key) = self.server.pids.generate(client);
            client.set_pid_and_secret_key(pid, key.clone());
            let (handle, guard) = self.server.connections.register(pid, key);
            client
                .session_extensions()
                .insert::<Arc<ConnectionHandle>>(handle);
            client.session_extensions().insert::<ConnectionGuard>(guard);
            // Create the session now so that bad start-up options fail the connection.
            let _ = super::session_of(&self.server, client);
            finish_authentication(
                client,
                &Parameters {
                    server: self.server.clone(),
                },
            )
            .await?;
        }
        Ok(())
    }
}

/// End a start-up with the FATAL `e` (after AuthenticationOk if `authenticated`) and hang
/// up: returning the error to pgwire would add a ReadyForQuery.
async fn refuse<C>(client: &mut C, authenticated: bool, e: PgError) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if authenticated {
        client
            .feed(PgWireBackendMessage::Authentication(Authentication::Ok))
            .await?;
    }
    let fatal = crate::errors::to_error_info(&e);
    client
        .send(PgWireBackendMessage::ErrorResponse(fatal.into()))
        .await?;
    futures::SinkExt::close(client).await?;
    Ok(())
}

/// A start-up packet without a user name, in PostgreSQL's words.
fn missing_user(parameters: &HashMap<String, String>) -> Option<PgError> {
    let user = parameters.get("user").filter(|u| !u.is_empty());
    user.is_none().then(|| {
        PgError::fatal(
            sqlstate::INVALID_AUTHORIZATION_SPECIFICATION,
            "no PostgreSQL user name specified in startup packet",
        )
    })
}

/// A user name that is no role, or a role that may not log in, in PostgreSQL's words.
/// iolab's roles are PostgreSQL's built-in ones, of which only `postgres` logs in.
fn unknown_role(parameters: &HashMap<String, String>) -> Option<PgError> {
    let user = parameters.get("user")?;
    let role = crate::pgcatalog::oids::ROLES.iter().find(|r| r.1 == user);
    let message = match role {
        Some(&(_, _, true)) => return None,
        Some(_) => format!("role \"{user}\" is not permitted to log in"),
        None => format!("role \"{user}\" does not exist"),
    };
    Some(PgError::fatal(
        sqlstate::INVALID_AUTHORIZATION_SPECIFICATION,
        message,
    ))
}

/// A database other than the one iolab serves (it defaults to the user's name, as in
/// PostgreSQL), in PostgreSQL's words.
fn unknown_database(parameters: &HashMap<String, String>) -> Option<PgError> {
    let named = |key: &str| parameters.get(key).filter(|v| !v.is_empty());
    let database = named("database").or(named("user"))?;
    (database != crate::pgcatalog::oids::DATABASE_NAME).then(|| {
        PgError::fatal(
            sqlstate::INVALID_CATALOG_NAME,
            format!("database \"{database}\" does not exist"),
        )
    })
}

/// Reports the settings of the connection's session.
pub struct Parameters {
    server: Arc<Server>,
}

impl ServerParameterProvider for Parameters {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let session = super::session_of(&self.server, client);
        let mut session = session.try_lock().ok()?;
        Some(
            session
                .settings
                .parameter_status_all()
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .collect(),
        )
    }
}

/// The one password iolab knows (every user name shares it).
#[derive(Debug)]
struct PasswordSource {
    password: String,
}

#[async_trait]
impl AuthSource for PasswordSource {
    async fn get_password(&self, _login: &LoginInfo) -> PgWireResult<Password> {
        let salt: Vec<u8> = (0..16).map(|_| rand_byte()).collect();
        let hashed = gen_salted_password(&self.password, &salt, 4096);
        Ok(Password::new(Some(salt), hashed))
    }
}

fn rand_byte() -> u8 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
    );
    h.finish() as u8
}

/// A new session for the connection, with settings from the start-up packet.
pub fn new_session<C: ClientInfo>(server: &Arc<Server>, client: &C) -> Session {
    let meta = client.metadata();
    let user = meta
        .get("user")
        .cloned()
        .unwrap_or_else(|| "postgres".into());
    let (pid, _) = client.pid_and_secret_key();
    // The server's values as last reloaded (as started, in a process without files).
    let reloaded = crate::config_reload::current().map(|(settings, _)| settings);
    let mut settings = SessionSettings::new(reloaded.as_deref().unwrap_or(&server.settings));
    settings.set_session_user(&user, true);
    for (key, value) in meta {
        let result = match key.as_str() {
            "user" | "database" | "replication" => Ok(()),
            "options" => settings.apply_startup_options(value),
            name => settings.apply_startup_parameter(name, value),
        };
        if let Err(e) = result {
            tracing::warn!("ignoring start-up parameter {key}={value}: {}", e.message);
        }
    }
    // Per-process I/O statistics (pg_stat_get_backend_io) and the pg_stat_activity row,
    // for as long as the connection lives.
    let extensions = client.session_extensions();
    // The running statement's flag, which the signals set too; the session takes it below.
    let running: Arc<parking_lot::Mutex<_>> = Arc::default();
    let signals = ConnectionSignals {
        cancel: extensions
            .get::<Arc<ConnectionHandle>>()
            .map(|h| (*h).clone()),
        terminate: extensions
            .get::<super::TerminateSignal>()
            .map(|t| t.0.clone())
            .unwrap_or_default(),
        running: running.clone(),
    };
    // Registered before the session is made: its temporary files find the activity by pid.
    let registration = ActivityRegistration::client_backend(
        &server.db,
        pid,
        &user,
        &settings.application_name(),
        Some(client.socket_addr()),
        signals,
    );
    let mut session = Session::new(server.clone(), pid, user, settings);
    session.running = running;
    session.activity = Some(registration.activity.clone());
    session.publish_timeouts();
    if let Some(farewell) = extensions.get::<Arc<super::timeouts::Farewell>>() {
        super::timeouts::spawn_watchdog(
            Arc::downgrade(&registration.activity),
            session.timeouts.clone(),
            (*farewell).clone(),
        );
    }
    extensions.insert(registration);
    session
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parameters(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        (pairs.iter())
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_database_defaults_to_the_user_s_name() {
        let refused =
            |pairs: &[(&str, &str)]| unknown_database(&parameters(pairs)).map(|e| e.message);
        assert_eq!(refused(&[("user", "postgres")]), None);
        assert_eq!(
            refused(&[("user", "alice"), ("database", "postgres")]),
            None
        );
        assert_eq!(
            refused(&[("user", "alice")]).as_deref(),
            Some("database \"alice\" does not exist")
        );
        assert_eq!(
            refused(&[("user", "postgres"), ("database", "")]),
            None,
            "an empty name is no name"
        );
        assert!(missing_user(&parameters(&[("database", "postgres")])).is_some());
        assert!(missing_user(&parameters(&[("user", "alice")])).is_none());
    }

    #[test]
    fn only_postgres_logs_in() {
        let refused = |user: &str| unknown_role(&parameters(&[("user", user)])).map(|e| e.message);
        assert_eq!(refused("postgres"), None);
        assert_eq!(
            refused("alice").as_deref(),
            Some("role \"alice\" does not exist")
        );
        assert_eq!(
            refused("pg_monitor").as_deref(),
            Some("role \"pg_monitor\" is not permitted to log in")
        );
    }
}
