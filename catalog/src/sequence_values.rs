//! The positions of sequences, kept durable ahead of the values handed out.
//!
//! `nextval` must never hand out a value twice, across restarts and crashes, and must not
//! write a file for every value. As PostgreSQL does with its WAL (`log_cnt`), each
//! sequence writes down a position *ahead* of the one it is at, and hands out values up
//! to that position from memory:
//!
//! ```text
//!   values:  41 42 43 44 ... 72 73 74
//!               ^ position in memory (last handed out: 42)
//!                                 ^ position on disk (42 + LOG_AHEAD values on)
//!   log_cnt = values left before the disk position must move again (here 30)
//! ```
//!
//! When a request for `n` values finds fewer than `n` left (`log_cnt < n`), it first
//! writes the position `n + LOG_AHEAD` values on (stopping at a bound without CYCLE) to
//! `global/sequences/<oid>.json` — temporary file, fsync, rename, directory fsync
//! ([`write_durably`]) — and only then hands the values out. So every value handed out
//! lies at or before the position on disk, and after a crash the sequence resumes from
//! that position: **values may be skipped, at most `LOG_AHEAD` plus the size of the last
//! multi-value request (an INSERT of a batch of rows reserves one value per row at once),
//! and none is repeated**. A clean shutdown loses the same: nothing is written at exit.
//! `setval` and `ALTER SEQUENCE … RESTART` write their position at once (`log_cnt` 0).
//!
//! Each sequence has its own mutex; the map from OID to sequence is locked only to find
//! it. The mutex is held across the write, once every `LOG_AHEAD` values, so concurrent
//! callers of one sequence wait for that write (as PostgreSQL's callers wait for the
//! sequence's buffer lock) and callers of other sequences do not.
//!
//! A sequence without a file is at its start (CREATE SEQUENCE writes nothing). A
//! dropped sequence's file is removed when the DROP commits ([`SequenceValues::remove`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::error::{PgError, PgResult};
use crate::sequence::{Position, SequenceDef};
use crate::store::write_durably;

/// Values written ahead of the last one handed out (PostgreSQL's SEQ_LOG_VALS).
pub const LOG_AHEAD: u64 = 32;

/// One sequence's position in memory.
#[derive(Debug)]
struct Counter {
    position: Position,
    /// Values that may still be handed out before the position on disk must move.
    log_cnt: u64,
}

/// The positions of every sequence used since start-up, by OID.
pub struct SequenceValues {
    dir: PathBuf,
    counters: RwLock<HashMap<u32, Arc<Mutex<Counter>>>>,
}

/// What `SELECT * FROM seq` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequenceState {
    pub position: Position,
    pub log_cnt: u64,
}

impl SequenceValues {
    /// The positions kept in `dir` (created if missing).
    pub fn open(dir: PathBuf) -> PgResult<SequenceValues> {
        std::fs::create_dir_all(&dir)
            .map_err(|e| PgError::io(&format!("could not create \"{}\"", dir.display()), &e))?;
        Ok(SequenceValues {
            dir,
            counters: RwLock::new(HashMap::new()),
        })
    }

    fn path(&self, oid: u32) -> PathBuf {
        self.dir.join(format!("{oid}.json"))
    }

    /// The sequence's counter, read from its file (or at its start) on first use.
    fn counter(&self, def: &SequenceDef) -> PgResult<Arc<Mutex<Counter>>> {
        if let Some(c) = self.counters.read().get(&def.oid) {
            return Ok(c.clone());
        }
        let position = read_position(&self.path(def.oid))?.unwrap_or(def.initial_position());
        let mut counters = self.counters.write();
        Ok(counters
            .entry(def.oid)
            .or_insert_with(|| {
                Arc::new(Mutex::new(Counter {
                    position,
                    log_cnt: 0,
                }))
            })
            .clone())
    }

    /// Hands out the next `n` values of the sequence, in order (`nextval` n times), or the
    /// limit error (then none is handed out).
    pub fn next_values(&self, def: &SequenceDef, n: usize) -> PgResult<Vec<i64>> {
        let counter = self.counter(def)?;
        let mut c = counter.lock();
        let mut values = Vec::with_capacity(n);
        let mut position = c.position;
        for _ in 0..n {
            let v = def.next_value(position)?;
            values.push(v);
            position = Position {
                last_value: v,
                is_called: true,
            };
        }
        let n = n as u64;
        if c.log_cnt < n {
            let (ahead, taken) = def.advance(position, LOG_AHEAD);
            self.write(def.oid, ahead)?;
            c.log_cnt = taken;
        } else {
            c.log_cnt -= n;
        }
        c.position = position;
        Ok(values)
    }

    /// Moves the sequence to `position` (setval, RESTART), durably.
    pub fn set(&self, def: &SequenceDef, position: Position) -> PgResult<()> {
        let counter = self.counter(def)?;
        let mut c = counter.lock();
        self.write(def.oid, position)?;
        c.position = position;
        c.log_cnt = 0;
        Ok(())
    }

    /// Where the sequence stands.
    pub fn state(&self, def: &SequenceDef) -> PgResult<SequenceState> {
        let counter = self.counter(def)?;
        let c = counter.lock();
        Ok(SequenceState {
            position: c.position,
            log_cnt: c.log_cnt,
        })
    }

    /// Forgets a dropped sequence and removes its file.
    pub fn remove(&self, oid: u32) -> PgResult<()> {
        self.counters.write().remove(&oid);
        match std::fs::remove_file(self.path(oid)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(PgError::io(
                &format!("could not remove \"{}\"", self.path(oid).display()),
                &e,
            )),
            _ => Ok(()),
        }
    }

    fn write(&self, oid: u32, position: Position) -> PgResult<()> {
        let path = self.path(oid);
        let bytes = serde_json::to_vec(&position).map_err(|e| PgError::internal(e.to_string()))?;
        write_durably(&path, &bytes)
            .map_err(|e| PgError::io(&format!("could not write \"{}\"", path.display()), &e))
    }
}

fn read_position(path: &Path) -> PgResult<Option<Position>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            PgError::new(
                crate::error::sqlstate::DATA_CORRUPTED,
                format!("sequence file \"{}\" is corrupt: {e}", path.display()),
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(PgError::io(
            &format!("could not read \"{}\"", path.display()),
            &e,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sequence::SequenceOptions;

    fn def(options: SequenceOptions) -> SequenceDef {
        SequenceDef {
            oid: 16400,
            name: "s".into(),
            ..options.define().unwrap()
        }
    }

    fn temp_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("iolab-seq-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_restart_resumes_after_every_value_handed_out() {
        let dir = temp_dir("restart");
        let s = def(SequenceOptions::default());
        let values = SequenceValues::open(dir.clone()).unwrap();
        let handed: Vec<i64> = (0..40)
            .flat_map(|_| values.next_values(&s, 1).unwrap())
            .collect();
        assert_eq!(handed, (1..=40).collect::<Vec<_>>());
        // 1 wrote 33 (1 + 32 on), 34 wrote 66: 26 left.
        let state = values.state(&s).unwrap();
        assert_eq!((state.position.last_value, state.log_cnt), (40, 26));
        drop(values); // a crash: nothing more is written
        let reopened = SequenceValues::open(dir.clone()).unwrap();
        let next = reopened.next_values(&s, 1).unwrap()[0];
        assert_eq!(next, 67, "resumes after the position on disk");
        assert!(next - 40 <= LOG_AHEAD as i64 + 1, "skips at most LOG_AHEAD");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_batch_is_covered_by_one_write() {
        let dir = temp_dir("batch");
        let s = def(SequenceOptions::default());
        let values = SequenceValues::open(dir.clone()).unwrap();
        assert_eq!(values.next_values(&s, 1000).unwrap().last(), Some(&1000));
        assert_eq!(values.state(&s).unwrap().log_cnt, LOG_AHEAD);
        let reopened = SequenceValues::open(dir.clone()).unwrap();
        assert_eq!(reopened.next_values(&s, 1).unwrap(), vec![1033]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn near_a_bound_the_disk_position_is_the_bound() {
        let dir = temp_dir("bound");
        let s = def(SequenceOptions {
            max: Some(Some(10)),
            ..Default::default()
        });
        let values = SequenceValues::open(dir.clone()).unwrap();
        assert_eq!(values.next_values(&s, 3).unwrap(), vec![1, 2, 3]);
        assert_eq!(values.state(&s).unwrap().log_cnt, 7);
        assert_eq!(values.next_values(&s, 8).unwrap_err().code, "2200H");
        assert_eq!(values.next_values(&s, 7).unwrap().last(), Some(&10));
        let reopened = SequenceValues::open(dir.clone()).unwrap();
        assert_eq!(reopened.next_values(&s, 1).unwrap_err().code, "2200H");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn setval_is_written_at_once_and_remove_forgets() {
        let dir = temp_dir("setval");
        let s = def(SequenceOptions::default());
        let values = SequenceValues::open(dir.clone()).unwrap();
        values
            .set(
                &s,
                Position {
                    last_value: 500,
                    is_called: false,
                },
            )
            .unwrap();
        let reopened = SequenceValues::open(dir.clone()).unwrap();
        assert_eq!(reopened.next_values(&s, 2).unwrap(), vec![500, 501]);
        reopened.remove(s.oid).unwrap();
        assert_eq!(reopened.next_values(&s, 1).unwrap(), vec![1]);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
