//! What must be undone however the harness ends (normal exit, error, Ctrl-C, SIGTERM): the
//! iolab server it started, the PostgreSQL 18 it started, a device readahead it changed.
//! Each part registers an undo action under a key and removes it once it undid the change
//! itself; a signal runs whatever is registered, then exits with 130.

use std::collections::BTreeMap;
use std::sync::Mutex;

type Undo = Box<dyn FnOnce() + Send>;

static PENDING: Mutex<BTreeMap<String, Undo>> = Mutex::new(BTreeMap::new());

pub fn register(key: &str, undo: impl FnOnce() + Send + 'static) {
    PENDING
        .lock()
        .unwrap()
        .insert(key.to_string(), Box::new(undo));
}

/// Forget `key` (its owner undid the change itself).
pub fn done(key: &str) {
    PENDING.lock().unwrap().remove(key);
}

/// Runs every pending undo action.
pub fn run_all() {
    let pending = std::mem::take(&mut *PENDING.lock().unwrap());
    for (key, undo) in pending {
        eprintln!("iolab-bench: undoing {key}");
        undo();
    }
}

/// On SIGINT or SIGTERM: undo, then exit.
pub fn on_signals() {
    use tokio::signal::unix::{signal, SignalKind};
    for kind in [SignalKind::interrupt(), SignalKind::terminate()] {
        let mut stream = signal(kind).expect("install signal handler");
        tokio::spawn(async move {
            stream.recv().await;
            eprintln!("iolab-bench: interrupted");
            run_all();
            std::process::exit(130);
        });
    }
}
