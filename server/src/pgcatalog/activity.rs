//! `pg_stat_activity`, `pg_cancel_backend(pid)` and `pg_terminate_backend(pid)`, over the
//! server's [`ActivityRegistry`](iolab_stats::ActivityRegistry).
//!
//! Each client connection registers its session there when it starts
//! ([`ActivityRegistration`]) and is removed when the connection ends. The view has
//! PostgreSQL 18's 22 columns in its order; iolab has one database, so `datid`/`datname`
//! are the one database's; `leader_pid`, `client_hostname` and `query_id` are NULL.
//! `backend_xid` is the open transaction's id once it has written, `backend_xmin` the
//! running statement's snapshot xmin (NULL between statements, as under PostgreSQL's READ
//! COMMITTED): the session holding VACUUM's removal horizon back is the one whose
//! `backend_xid` or `backend_xmin` equals VERBOSE's `removable cutoff`.
//!
//! The auxiliary threads are listed as PostgreSQL 18 lists its auxiliary processes: the
//! checkpointer (which also writes the WAL out), the background writer and each I/O
//! worker, with fixed pids below the client backends' (`iolab_stats::AuxiliaryActivity`), no
//! database, user, state or transaction, an empty query, and their `Activity` wait event
//! (`CheckpointerMain`, `BgwriterMain`, `IoWorkerMain`) while they wait for work.
//!
//! An idle session shows `Client` / `ClientRead` as PostgreSQL's does; a running one shows
//! the I/O wait event its scan sets while it blocks (`IO` / `DataFileRead`,
//! `IO` / `AioIoCompletion`, `IO` / `AioIoUringExecution`, …), or NULL while it computes.

use std::net::SocketAddr;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::error::Result;
use iolab_engine::Database;
use iolab_stats::{
    BackendActivity, BackendSignals, BackendState, BackendType, IoStatsHub, WaitEvent,
};
use pgwire::api::ConnectionHandle;

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::functions::{def, ints, per_row, Def};
use super::oids;

/// PostgreSQL 18's `pg_stat_activity` columns.
const COLUMNS: &str = "datid oid, datname name, pid integer, leader_pid integer, \
    usesysid oid, usename name, application_name text, client_addr inet, \
    client_hostname text, client_port integer, backend_start timestamp with time zone, \
    xact_start timestamp with time zone, query_start timestamp with time zone, \
    state_change timestamp with time zone, wait_event_type text, wait_event text, \
    state text, backend_xid xid, backend_xmin xid, query_id bigint, query text, \
    backend_type text";

/// The bootstrap superuser's OID, which every iolab user is.
const SUPERUSER_OID: u32 = 10;

pub fn schema() -> SchemaRef {
    static SCHEMA: std::sync::LazyLock<SchemaRef> =
        std::sync::LazyLock::new(|| schema_of(&parse_columns(COLUMNS)));
    SCHEMA.clone()
}

fn micros(t: Option<chrono::DateTime<chrono::Utc>>) -> V {
    t.map_or(V::Null, |t| V::Int(t.timestamp_micros()))
}

fn row(a: &BackendActivity) -> Vec<V> {
    if a.backend_type != BackendType::ClientBackend {
        return auxiliary_row(a);
    }
    let s = a.status();
    let wait = match s.state {
        BackendState::Active => a.wait_event(),
        _ => WaitEvent::ClientRead,
    };
    vec![
        V::oid(oids::DATABASE_OID),
        V::text(oids::DATABASE_NAME),
        V::Int(a.pid as i64),
        V::Null,
        V::oid(SUPERUSER_OID),
        V::text(&a.user),
        V::text(s.application_name),
        V::opt_text(a.client_addr.map(|c| c.ip().to_string())),
        V::Null,
        a.client_addr.map_or(V::Null, |c| V::Int(c.port() as i64)),
        micros(Some(a.backend_start)),
        micros(s.xact_start),
        micros(s.query_start),
        micros(Some(s.state_change)),
        V::opt_text(wait.type_name()),
        V::opt_text(wait.name()),
        V::text(s.state.name()),
        s.xid.map_or(V::Null, |x| V::Int(x as i64)),
        s.xmin.map_or(V::Null, |x| V::Int(x as i64)),
        V::Null,
        V::text(s.query),
        V::text(a.backend_type.name()),
    ]
}

/// An auxiliary thread's row: what PostgreSQL shows of an auxiliary process.
fn auxiliary_row(a: &BackendActivity) -> Vec<V> {
    let wait = a.wait_event();
    let none = || V::Null;
    vec![
        none(), // datid
        none(), // datname
        V::Int(a.pid as i64),
        none(), // leader_pid
        none(), // usesysid
        none(), // usename
        V::text(""),
        none(), // client_addr
        none(), // client_hostname
        none(), // client_port
        micros(Some(a.backend_start)),
        none(), // xact_start
        none(), // query_start
        none(), // state_change
        V::opt_text(wait.type_name()),
        V::opt_text(wait.name()),
        none(), // state
        none(), // backend_xid
        none(), // backend_xmin
        none(), // query_id
        V::text(""),
        V::text(a.backend_type.name()),
    ]
}

pub fn batch(db: &Database) -> Result<RecordBatch> {
    let rows: Vec<Vec<V>> = db.io_stats.activity.all().iter().map(|a| row(a)).collect();
    build_batch(&schema(), &rows)
}

/// How a client connection is cancelled and terminated: through pgwire's cancel handle
/// (the same path a CancelRequest takes: the statement's future is dropped, which
/// cancels its scans) and the connection's terminate notification (see `wire::serve`).
/// A statement in a step that holds its thread (`pg_sleep`, a wait for a transaction)
/// cannot be dropped there, so a terminate also sets the running statement's flag
/// (`running`, the session's), which such steps look at.
pub struct ConnectionSignals {
    pub cancel: Option<Arc<ConnectionHandle>>,
    pub terminate: Arc<tokio::sync::Notify>,
    pub running: Arc<parking_lot::Mutex<iolab_engine::exec::cancel::CancelFlag>>,
}

impl BackendSignals for ConnectionSignals {
    fn cancel(&self) {
        let (Some(handle), Ok(runtime)) =
            (self.cancel.clone(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        runtime.spawn(async move {
            handle.cancel().await;
        });
    }

    /// The connection's task is dropped (see `wire::serve`), and with it the running
    /// statement, whose guard cancels its scans.
    fn terminate(&self) {
        self.running.lock().terminate();
        self.terminate.notify_one();
    }
}

/// A client session's entries in the server's statistics — its per-process I/O
/// statistics (`pg_stat_get_backend_io`) and its `pg_stat_activity` row — from its start
/// until this value is dropped with the connection.
pub struct ActivityRegistration {
    hub: Arc<IoStatsHub>,
    pub activity: Arc<BackendActivity>,
}

impl ActivityRegistration {
    pub fn client_backend(
        db: &Database,
        pid: i32,
        user: &str,
        application_name: &str,
        client_addr: Option<SocketAddr>,
        signals: ConnectionSignals,
    ) -> ActivityRegistration {
        let hub = db.io_stats.clone();
        hub.register_backend(pid, BackendType::ClientBackend);
        let activity = Arc::new(BackendActivity::new(
            pid,
            BackendType::ClientBackend,
            user,
            application_name,
            client_addr,
            Some(Box::new(signals)),
        ));
        hub.activity.register(activity.clone());
        hub.database.session_started();
        ActivityRegistration { hub, activity }
    }
}

impl Drop for ActivityRegistration {
    fn drop(&mut self) {
        // Counted before the session leaves the registry: whoever waits for it to leave
        // (a shutdown, before saving the statistics) then finds its end counted.
        let lasted = (chrono::Utc::now() - self.activity.backend_start).to_std();
        self.hub
            .database
            .session_ended(lasted.unwrap_or_default(), self.activity.end());
        self.hub.activity.unregister(self.activity.pid);
        self.hub.unregister_backend(self.activity.pid);
    }
}

/// `pg_cancel_backend(pid)` and `pg_terminate_backend(pid [, timeout])`: true when the
/// signal was sent, false for a pid that is not a live session (PostgreSQL adds a
/// WARNING there, iolab does not).
pub(super) fn signal_functions() -> Vec<Def> {
    let signal = |name: &'static str, arity, send: fn(&BackendActivity) -> bool| {
        def(name, arity, DataType::Boolean, move |ctx, args, rows| {
            let pids = ints(&args[0])?;
            let registry = &ctx.shared.db.io_stats.activity;
            per_row(rows, |i| {
                Ok(match pids[i] {
                    None => V::Null,
                    Some(pid) => V::Bool(
                        i32::try_from(pid)
                            .ok()
                            .and_then(|pid| registry.get(pid))
                            .is_some_and(|a| send(&a)),
                    ),
                })
            })
        })
        .volatile()
    };
    vec![
        signal("pg_cancel_backend", 1..=1, BackendActivity::cancel),
        signal("pg_terminate_backend", 1..=2, BackendActivity::terminate),
    ]
}
