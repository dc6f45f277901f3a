//! The progress of a session's long command, as PostgreSQL's `pgstat_progress_*` keeps
//! it: the command sets its kind and relation when it starts ([`Progress::start`]), sets
//! numbered parameters as it goes ([`Progress::set`]) and clears them when it ends; the
//! `pg_stat_progress_vacuum | analyze | create_index | copy` views read them from each
//! session's row. Each parameter is one atomic: readers see every value as it was set,
//! without a lock, never a torn one.
//!
//! The parameters of each command are numbered by the constants of its module
//! ([`vacuum`], [`analyze`], [`create_index`], [`copy`]); a `phase` parameter holds a
//! number the view turns into PostgreSQL's phase name.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU8, Ordering};

/// The commands that report progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressCommand {
    Vacuum = 1,
    Analyze,
    CreateIndex,
    Copy,
    Cluster,
}

/// Parameters a command may set.
pub const PARAMS: usize = 12;

/// One session's progress slot.
#[derive(Debug, Default)]
pub struct Progress {
    /// 0: no command running; else a [`ProgressCommand`].
    command: AtomicU8,
    relid: AtomicU32,
    params: [AtomicI64; PARAMS],
}

/// What a progress slot holds now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProgressSnapshot {
    pub command: ProgressCommand,
    pub relid: u32,
    pub params: [i64; PARAMS],
}

impl Progress {
    /// `command` on relation `relid` starts: every parameter is 0.
    pub fn start(&self, command: ProgressCommand, relid: u32) {
        self.command.store(0, Ordering::Release);
        for p in &self.params {
            p.store(0, Ordering::Relaxed);
        }
        self.relid.store(relid, Ordering::Relaxed);
        self.command.store(command as u8, Ordering::Release);
    }

    pub fn set(&self, param: usize, value: i64) {
        self.params[param].store(value, Ordering::Relaxed);
    }

    pub fn end(&self) {
        self.command.store(0, Ordering::Release);
    }

    /// The running command's progress, if one is running.
    pub fn snapshot(&self) -> Option<ProgressSnapshot> {
        let command = match self.command.load(Ordering::Acquire) {
            1 => ProgressCommand::Vacuum,
            2 => ProgressCommand::Analyze,
            3 => ProgressCommand::CreateIndex,
            4 => ProgressCommand::Copy,
            5 => ProgressCommand::Cluster,
            _ => return None,
        };
        Some(ProgressSnapshot {
            command,
            relid: self.relid.load(Ordering::Relaxed),
            params: std::array::from_fn(|i| self.params[i].load(Ordering::Relaxed)),
        })
    }
}

/// `pg_stat_progress_vacuum`'s parameters and phases.
pub mod vacuum {
    pub const PHASE: usize = 0;
    pub const HEAP_BLKS_TOTAL: usize = 1;
    pub const HEAP_BLKS_SCANNED: usize = 2;
    pub const HEAP_BLKS_VACUUMED: usize = 3;
    pub const INDEX_VACUUM_COUNT: usize = 4;
    pub const MAX_DEAD_TUPLE_BYTES: usize = 5;
    pub const DEAD_TUPLE_BYTES: usize = 6;
    pub const NUM_DEAD_ITEM_IDS: usize = 7;
    pub const INDEXES_TOTAL: usize = 8;
    pub const INDEXES_PROCESSED: usize = 9;
    /// Nanoseconds slept for the cost-based delay (`track_cost_delay_timing`).
    pub const DELAY_TIME: usize = 10;

    pub const SCANNING_HEAP: i64 = 1;
    pub const VACUUMING_INDEXES: i64 = 2;
    pub const VACUUMING_HEAP: i64 = 3;
    pub const FINAL_CLEANUP: i64 = 6;

    /// PostgreSQL's name of phase `n`.
    pub fn phase_name(n: i64) -> &'static str {
        match n {
            1 => "scanning heap",
            2 => "vacuuming indexes",
            3 => "vacuuming heap",
            4 => "cleaning up indexes",
            5 => "truncating heap",
            6 => "performing final cleanup",
            _ => "initializing",
        }
    }
}

/// `pg_stat_progress_analyze`'s parameters and phases.
pub mod analyze {
    pub const PHASE: usize = 0;
    pub const SAMPLE_BLKS_TOTAL: usize = 1;
    pub const SAMPLE_BLKS_SCANNED: usize = 2;
    /// Nanoseconds slept for the cost-based delay (`track_cost_delay_timing`).
    pub const DELAY_TIME: usize = 3;

    pub const ACQUIRING_SAMPLE_ROWS: i64 = 1;
    pub const COMPUTING_STATISTICS: i64 = 3;
    pub const FINALIZING: i64 = 5;

    pub fn phase_name(n: i64) -> &'static str {
        match n {
            1 => "acquiring sample rows",
            2 => "acquiring inherited sample rows",
            3 => "computing statistics",
            4 => "computing extended statistics",
            5 => "finalizing analyze",
            _ => "initializing",
        }
    }
}

/// `pg_stat_progress_create_index`'s parameters and phases (a B-tree's build).
pub mod create_index {
    pub const PHASE: usize = 0;
    pub const INDEX_RELID: usize = 1;
    pub const BLOCKS_TOTAL: usize = 2;
    pub const BLOCKS_DONE: usize = 3;
    pub const TUPLES_TOTAL: usize = 4;
    pub const TUPLES_DONE: usize = 5;
    /// [`COMMAND_CREATE_INDEX`] (0 reads as it too) or [`COMMAND_REINDEX`].
    pub const COMMAND: usize = 6;

    /// PostgreSQL's `PROGRESS_CREATEIDX_COMMAND_*` values.
    pub const COMMAND_CREATE_INDEX: i64 = 1;
    pub const COMMAND_REINDEX: i64 = 3;

    pub fn command_name(n: i64) -> &'static str {
        match n {
            COMMAND_REINDEX => "REINDEX",
            _ => "CREATE INDEX",
        }
    }

    pub const SCANNING_TABLE: i64 = 1;
    pub const SORTING: i64 = 2;
    pub const LOADING: i64 = 3;

    pub fn phase_name(n: i64) -> &'static str {
        match n {
            1 => "building index: scanning table",
            2 => "building index: sorting live tuples",
            3 => "building index: loading tuples in tree",
            _ => "initializing",
        }
    }
}

/// `pg_stat_progress_cluster`'s parameters (CLUSTER and VACUUM FULL).
pub mod cluster {
    /// [`COMMAND_CLUSTER`] or [`COMMAND_VACUUM_FULL`].
    pub const COMMAND: usize = 0;
    pub const PHASE: usize = 1;
    pub const INDEX_RELID: usize = 2;
    pub const HEAP_TUPLES_SCANNED: usize = 3;
    pub const HEAP_TUPLES_WRITTEN: usize = 4;
    pub const HEAP_BLKS_TOTAL: usize = 5;
    pub const HEAP_BLKS_SCANNED: usize = 6;
    pub const INDEX_REBUILD_COUNT: usize = 7;

    pub const COMMAND_CLUSTER: i64 = 1;
    pub const COMMAND_VACUUM_FULL: i64 = 2;

    pub const SEQ_SCANNING_HEAP: i64 = 1;
    pub const WRITING_NEW_HEAP: i64 = 4;
    pub const REBUILDING_INDEX: i64 = 6;
    pub const FINAL_CLEANUP: i64 = 7;

    pub fn command_name(n: i64) -> &'static str {
        if n == COMMAND_VACUUM_FULL {
            "VACUUM FULL"
        } else {
            "CLUSTER"
        }
    }

    /// PostgreSQL's phase names (iolab's rewrite has no index scan or file swap phase).
    pub fn phase_name(n: i64) -> &'static str {
        match n {
            1 => "seq scanning heap",
            2 => "index scanning heap",
            3 => "sorting tuples",
            4 => "writing new heap",
            5 => "swapping relation files",
            6 => "rebuilding index",
            7 => "performing final cleanup",
            _ => "initializing",
        }
    }
}

/// `pg_stat_progress_copy`'s parameters.
pub mod copy {
    /// 1: COPY FROM, 2: COPY TO.
    pub const COMMAND: usize = 0;
    /// 1: FILE, 2: PROGRAM, 3: PIPE, 4: CALLBACK.
    pub const TYPE: usize = 1;
    pub const BYTES_PROCESSED: usize = 2;
    pub const BYTES_TOTAL: usize = 3;
    pub const TUPLES_PROCESSED: usize = 4;
    pub const TUPLES_EXCLUDED: usize = 5;
    pub const TUPLES_SKIPPED: usize = 6;

    pub const FROM: i64 = 1;
    pub const TO: i64 = 2;
    pub const FILE: i64 = 1;
    pub const PIPE: i64 = 3;

    pub fn command_name(n: i64) -> &'static str {
        if n == TO {
            "COPY TO"
        } else {
            "COPY FROM"
        }
    }

    pub fn type_name(n: i64) -> &'static str {
        match n {
            FILE => "FILE",
            2 => "PROGRAM",
            4 => "CALLBACK",
            _ => "PIPE",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_starts_from_zero_and_ends_empty() {
        let p = Progress::default();
        assert_eq!(p.snapshot(), None);
        p.start(ProgressCommand::Vacuum, 42);
        p.set(vacuum::HEAP_BLKS_TOTAL, 10);
        let s = p.snapshot().unwrap();
        assert_eq!(
            (s.command, s.relid, s.params[vacuum::HEAP_BLKS_TOTAL]),
            (ProgressCommand::Vacuum, 42, 10)
        );
        p.end();
        assert_eq!(p.snapshot(), None);
        // The next command sees none of the last one's values.
        p.start(ProgressCommand::Copy, 7);
        assert_eq!(p.snapshot().unwrap().params, [0; PARAMS]);
    }
}
