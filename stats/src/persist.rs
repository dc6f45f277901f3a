//! Cumulative statistics across a clean restart, as PostgreSQL keeps them.
//!
//! PostgreSQL writes its cumulative statistics to `pg_stat/pgstat.stat` when it shuts down
//! cleanly and reads them back at the next start; after a crash it starts them afresh,
//! since they may describe work the WAL replay undid. iolab does the same with one file:
//!
//! - **save** (after the shutdown checkpoint, so that its writes are counted): everything
//!   is encoded into a new file, `pgstat.tmp`, which is synced and renamed over
//!   `pgstat.stat`, so a file is either whole or absent;
//! - **load** (at start, before anything counts): the file is read and removed. Its
//!   presence means the last shutdown was clean: a start removes it, and only a clean
//!   shutdown writes it again, so after a crash there is none and the statistics start
//!   empty, with `stats_reset` at the start.
//!
//! What is kept: `pg_stat_io` and `pg_stat_aio` by backend type (latency histograms
//! included), `pg_stat_wal`, `pg_stat_checkpointer`, `pg_stat_bgwriter`,
//! `pg_stat_database`'s own counters, each relation file's counts (`pg_stat_*_tables`,
//! `pg_stat_*_indexes`, `pg_statio_*`) and `pg_stat_statements`, each with its
//! `stats_reset`. Not kept, as in PostgreSQL: what belongs to processes
//! (`pg_stat_get_backend_io`), `pg_stat_recovery_prefetch`, and iolab's history ring.
//!
//! The encoding: the magic `iolab-stats`, a format version, then each part in a fixed
//! order as little-endian integers and `f64` bits, lengths before lists. A file that does
//! not decode (another version, cut short) is reported and removed: the statistics
//! start empty, as after a crash.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::io::IoStatsHub;

/// The directory and file PostgreSQL keeps its statistics in.
pub const STATS_DIR: &str = "pg_stat";
pub const STATS_FILE: &str = "pgstat.stat";
const TEMP_FILE: &str = "pgstat.tmp";

const MAGIC: &[u8] = b"iolab-stats";
/// Bumped whenever the encoding changes.
const VERSION: u32 = 3;

/// A file that is not a statistics file of this version.
#[derive(Debug, PartialEq, Eq)]
pub struct Corrupt(pub &'static str);

/// Writes `hub`'s cumulative statistics to `<data_dir>/pg_stat/pgstat.stat`.
pub fn save(hub: &IoStatsHub, data_dir: &Path) -> io::Result<()> {
    let dir = data_dir.join(STATS_DIR);
    fs::create_dir_all(&dir)?;
    let mut e = Encoder::default();
    e.bytes(MAGIC);
    e.u32(VERSION);
    hub.save(&mut e);
    let temp = dir.join(TEMP_FILE);
    let mut file = fs::File::create(&temp)?;
    file.write_all(&e.0)?;
    file.sync_all()?;
    fs::rename(&temp, dir.join(STATS_FILE))?;
    fs::File::open(&dir)?.sync_all()
}

/// The statistics saved at the last clean shutdown, removing their file: `Ok(None)` when
/// there is none (a new cluster, or a crash), `Err` (a message for the log) when it cannot
/// be read or does not decode; the statistics then start empty.
pub fn load(data_dir: &Path) -> Result<Option<IoStatsHub>, String> {
    let path = stats_file(data_dir);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(format!(
                "could not read statistics file \"{}\": {e}",
                path.display()
            ))
        }
    };
    fs::remove_file(&path).map_err(|e| {
        format!(
            "could not remove statistics file \"{}\": {e}",
            path.display()
        )
    })?;
    decode(&bytes).map(Some).map_err(|Corrupt(what)| {
        format!("corrupted statistics file \"{}\": {what}", path.display())
    })
}

fn stats_file(data_dir: &Path) -> PathBuf {
    data_dir.join(STATS_DIR).join(STATS_FILE)
}

fn decode(bytes: &[u8]) -> Result<IoStatsHub, Corrupt> {
    let mut d = Decoder { rest: bytes };
    if d.take(MAGIC.len())? != MAGIC {
        return Err(Corrupt("not a statistics file"));
    }
    if d.u32()? != VERSION {
        return Err(Corrupt("another format version"));
    }
    let mut hub = IoStatsHub::new();
    hub.restore(&mut d)?;
    if !d.rest.is_empty() {
        return Err(Corrupt("bytes after the end"));
    }
    Ok(hub)
}

/// Appends values to a statistics file's bytes.
#[derive(Default)]
pub(crate) struct Encoder(Vec<u8>);

impl Encoder {
    pub fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn i64(&mut self, v: i64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn f64(&mut self, v: f64) {
        self.u64(v.to_bits());
    }

    pub fn len(&mut self, n: usize) {
        self.u64(n as u64);
    }

    fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }

    pub fn str(&mut self, s: &str) {
        self.len(s.len());
        self.bytes(s.as_bytes());
    }

    pub fn time(&mut self, t: DateTime<Utc>) {
        self.i64(t.timestamp());
        self.u32(t.timestamp_subsec_nanos());
    }

    /// Whether an optional value follows.
    pub fn present(&mut self, present: bool) {
        self.u32(u32::from(present));
    }

    pub fn opt_time(&mut self, t: Option<DateTime<Utc>>) {
        self.present(t.is_some());
        if let Some(t) = t {
            self.time(t);
        }
    }
}

/// Reads values back, in the order they were appended.
pub(crate) struct Decoder<'a> {
    rest: &'a [u8],
}

impl<'a> Decoder<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Corrupt> {
        if self.rest.len() < n {
            return Err(Corrupt("cut short"));
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    pub fn u32(&mut self) -> Result<u32, Corrupt> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    pub fn u64(&mut self) -> Result<u64, Corrupt> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub fn i64(&mut self) -> Result<i64, Corrupt> {
        Ok(self.u64()? as i64)
    }

    pub fn f64(&mut self) -> Result<f64, Corrupt> {
        Ok(f64::from_bits(self.u64()?))
    }

    /// A list's length, which must fit in what is left (every element takes a byte at
    /// least), so that a damaged length cannot ask for a huge allocation.
    pub fn len(&mut self) -> Result<usize, Corrupt> {
        let n = self.u64()?;
        match usize::try_from(n) {
            Ok(n) if n <= self.rest.len() => Ok(n),
            _ => Err(Corrupt("a length beyond the end")),
        }
    }

    pub fn str(&mut self) -> Result<String, Corrupt> {
        let n = self.len()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| Corrupt("text not UTF-8"))
    }

    pub fn time(&mut self) -> Result<DateTime<Utc>, Corrupt> {
        let (secs, nanos) = (self.i64()?, self.u32()?);
        DateTime::from_timestamp(secs, nanos).ok_or(Corrupt("a time out of range"))
    }

    /// Whether an optional value follows.
    pub fn present(&mut self) -> Result<bool, Corrupt> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(Corrupt("a bad presence flag")),
        }
    }

    pub fn opt_time(&mut self) -> Result<Option<DateTime<Utc>>, Corrupt> {
        self.present()?.then(|| self.time()).transpose()
    }
}

/// `save` and `restore` of a struct whose every field is a number or a time, each field
/// in the order written, by the encoder method named after its kind (`u64`, `i64`, `f64`,
/// `opt_time`). The pattern names every field, so a field added to the struct is a
/// compile error here until it is kept too.
macro_rules! persisted_fields {
    ($ty:ident { $($field:ident: $kind:ident),* $(,)? }) => {
        impl $ty {
            pub(crate) fn save(&self, e: &mut $crate::persist::Encoder) {
                let $ty { $($field),* } = self;
                $( e.$kind(*$field); )*
            }

            pub(crate) fn restore(
                d: &mut $crate::persist::Decoder<'_>,
            ) -> Result<$ty, $crate::persist::Corrupt> {
                Ok($ty { $($field: d.$kind()?),* })
            }
        }
    };
}
pub(crate) use persisted_fields;

/// The values of `counters`, in order.
pub(crate) fn save_atomics(e: &mut Encoder, counters: &[&std::sync::atomic::AtomicU64]) {
    for c in counters {
        e.u64(c.load(std::sync::atomic::Ordering::Relaxed));
    }
}

/// Sets `counters` to the next values, in order.
pub(crate) fn restore_atomics(
    d: &mut Decoder<'_>,
    counters: &[&std::sync::atomic::AtomicU64],
) -> Result<(), Corrupt> {
    for c in counters {
        c.store(d.u64()?, std::sync::atomic::Ordering::Relaxed);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aio::{AioEvent, AioLatencyOp};
    use crate::io::{BackendType, IoContext, IoObject, IoOp, PendingIoStats};
    use crate::relation::PendingRelationCounts;
    use crate::statements::StatementRun;
    use crate::usage::BufferUsage;
    use std::sync::atomic::Ordering;

    fn data_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("iolab-persist-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A hub with something in every part the file keeps.
    fn busy_hub() -> IoStatsHub {
        let hub = IoStatsHub::new();
        let mut pending = PendingIoStats::new();
        for i in 1..=1000u64 {
            let (obj, ctx) = (IoObject::Relation, IoContext::BulkRead);
            pending.count_op(obj, ctx, IoOp::Read, 131072, 20_000 + i);
            pending.record_latency(obj, ctx, IoOp::Read, 90_000 + 37 * i);
        }
        pending.count_wait(IoObject::Relation, IoContext::Normal, 4_000);
        pending.count_aio(AioEvent::Started);
        pending.count_aio(AioEvent::QueueFull);
        pending.record_aio_latency(AioLatencyOp::Read, 123_456);
        hub.flush(&mut pending, BackendType::ClientBackend, 100_000);
        let mut relations = PendingRelationCounts::default();
        relations.hit(16384);
        relations.seq_scan(16384);
        relations.read(16390, 4);
        hub.relation_counts.add(&mut relations);
        hub.wal.records.fetch_add(77, Ordering::Relaxed);
        hub.checkpointer.num_done.fetch_add(3, Ordering::Relaxed);
        hub.bgwriter.buffers_alloc.fetch_add(900, Ordering::Relaxed);
        hub.database.transaction_ended(true);
        hub.database.reset();
        hub.database.transaction_ended(false);
        let usage = BufferUsage {
            shared_read: 12,
            temp_written: 3,
            ..Default::default()
        };
        for ms in [1.5, 2.5, 9.0] {
            hub.statements.record(&StatementRun {
                userid: 10,
                query: "SELECT count(*) FROM t WHERE a = $1",
                exec_ms: ms,
                rows: 1,
                usage: &usage,
            });
        }
        hub
    }

    #[test]
    fn a_saved_hub_loads_back_whole_and_its_file_goes() {
        let dir = data_dir("whole");
        let hub = busy_hub();
        save(&hub, &dir).unwrap();
        let loaded = load(&dir).unwrap().expect("a file was saved");
        assert!(!stats_file(&dir).exists(), "loading removes the file");
        assert!(
            matches!(load(&dir), Ok(None)),
            "nothing to load a second time"
        );

        assert_eq!(loaded.pg_stat_io_batch(), hub.pg_stat_io_batch());
        let (a, b) = (loaded.aio_snapshot(), hub.aio_snapshot());
        assert_eq!(a.stats_reset, b.stats_reset);
        let client = BackendType::ClientBackend;
        for event in [AioEvent::Started, AioEvent::QueueFull, AioEvent::Advised] {
            assert_eq!(a.counts(client).get(event), b.counts(client).get(event));
        }
        assert_eq!(a.counts(client).get(AioEvent::QueueFull), 1);
        let latency = |s: &crate::io::AioSnapshot| {
            (s.counts(client).latency(AioLatencyOp::Read)).map(|h| h.summary())
        };
        assert!(latency(&b).is_some());
        assert_eq!(latency(&a), latency(&b));
        assert_eq!(
            loaded.relation_counts.snapshot(),
            hub.relation_counts.snapshot()
        );
        assert_eq!(loaded.wal.snapshot(), hub.wal.snapshot());
        assert_eq!(loaded.checkpointer.snapshot(), hub.checkpointer.snapshot());
        assert_eq!(loaded.bgwriter.snapshot(), hub.bgwriter.snapshot());
        assert_eq!(loaded.database.snapshot(), hub.database.snapshot());
        let entries = |h: &IoStatsHub| {
            let e = h.statements.entries();
            let row = |e: &crate::statements::StatementEntry| {
                (
                    e.query.clone(),
                    e.calls,
                    e.min_exec_ms,
                    e.max_exec_ms,
                    e.stddev_exec_ms(),
                    e.usage,
                )
            };
            e.iter().map(row).collect::<Vec<_>>()
        };
        assert_eq!(entries(&loaded), entries(&hub));
        assert_eq!(entries(&loaded)[0].1, 3);
        assert_eq!(loaded.statements.info(), hub.statements.info());
        assert!(
            loaded.started >= hub.started,
            "the start time is the new server's"
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_file_is_reported_and_set_aside() {
        let dir = data_dir("damaged");
        save(&busy_hub(), &dir).unwrap();
        let bytes = fs::read(stats_file(&dir)).unwrap();
        for cut in [0, 5, MAGIC.len() + 4, bytes.len() / 2, bytes.len() - 1] {
            fs::write(stats_file(&dir), &bytes[..cut]).unwrap();
            let err = load(&dir).unwrap_err();
            assert!(err.starts_with("corrupted statistics file"), "{err}");
            assert!(!stats_file(&dir).exists());
        }
        let mut other_version = bytes.clone();
        other_version[MAGIC.len()] += 1;
        fs::write(stats_file(&dir), &other_version).unwrap();
        assert!(load(&dir).unwrap_err().ends_with("another format version"));
        fs::remove_dir_all(&dir).unwrap();
    }
}
