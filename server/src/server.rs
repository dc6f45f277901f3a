//! What every connection shares: the database, the server-wide settings, and the
//! bookkeeping of connections (count against `max_connections`, cancel keys).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use iolab_engine::Database;
use iolab_settings::ServerSettings;
use pgwire::api::{ConnectionManager, RandomPidSecretKeyGenerator};

pub struct Server {
    pub db: Arc<Database>,
    pub settings: ServerSettings,
    /// Cancel keys of live connections (pgwire's registry).
    pub connections: Arc<ConnectionManager>,
    /// Hands out session pids (from 100000, one server-wide counter) and cancel keys.
    pub pids: Arc<RandomPidSecretKeyGenerator>,
    /// Live client connections.
    pub connection_count: AtomicUsize,
    /// Password for SCRAM-SHA-256; `None` = trust connections from loopback.
    pub password: Option<String>,
    /// Plans of statistics queries, shared by all sessions (see `sql::plan_cache`).
    pub plan_cache: Arc<crate::sql::plan_cache::PlanCache>,
}

impl Server {
    pub fn max_connections(&self) -> usize {
        self.settings.max_connections().max(1) as usize
    }

    /// Counts a new connection if there is room; the returned slot uncounts it on drop.
    pub fn try_connect(self: &Arc<Self>) -> Option<ConnectionSlot> {
        let max = self.max_connections();
        let mut current = self.connection_count.load(Ordering::Relaxed);
        loop {
            if current >= max {
                return None;
            }
            match self.connection_count.compare_exchange(
                current,
                current + 1,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    return Some(ConnectionSlot {
                        server: self.clone(),
                    })
                }
                Err(now) => current = now,
            }
        }
    }
}

/// One counted connection.
pub struct ConnectionSlot {
    server: Arc<Server>,
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.server.connection_count.fetch_sub(1, Ordering::AcqRel);
    }
}
