//! CREATE INDEX's sort within `maintenance_work_mem`: sorted runs in temporary files,
//! merged as the tree is loaded.
//!
//! PostgreSQL's index build sorts its `(key, TID)` entries in `maintenance_work_mem` and,
//! beyond it, writes sorted runs to temporary files and merges them. [`IndexSort`] does
//! the same with the build's [`SortBuffer`]:
//!
//! ```text
//!   scan: push entries ──► buffer past maintenance_work_mem? ──► sort it, append it to a
//!                                                                new run file, empty it
//!                                                                (keeping its memory)
//!   end:  no run written ──► sort the buffer, hand out its entries (all in memory)
//!         runs written   ──► sort the buffer too; a k-way merge (a heap of each run's
//!                            and the buffer's next entry) hands out the entries in order
//! ```
//!
//! A run is the buffer's entries in sorted order, one record each, little-endian:
//! fixed-width keys as `(u64 sort form, TID word)`, numeric as `(i128, TID word)`, text
//! and keys of several columns (their leaf tuples) as `(u32 length, bytes, TID word)`. The merge compares records exactly as
//! [`SortBuffer::sort`] compares entries, so the order (NULLs last, equal keys in TID
//! order) is the in-memory one. The files are the session's temporary files
//! (`exec::temp_files`): counted and timed (`temp_blks_*`), held to `temp_file_limit`,
//! counted in `pg_stat_database` when removed. Memory: the buffer (reserved at
//! `maintenance_work_mem` for fixed-width keys, written out once past it) plus one record
//! and one 128 kB read chunk per run during the merge.

use std::borrow::Cow;
use std::cmp::{Ordering, Reverse};
use std::collections::binary_heap::PeekMut;
use std::collections::BinaryHeap;
use std::io::{Read, Write};
use std::sync::Arc;

use iolab_catalog::{PgError, PgResult};

use super::build::{compare_rows, word_tid, SortBuffer, NULL_BIT};
use super::key::{self, Key, KeyColumns, KeyKind};
use super::page::IndexTuple;
use super::Tid;
use crate::exec::context::TempSpace;
use crate::exec::temp_files::TempFileHandle;

/// Entries collected for an index build; see the module comment.
pub struct IndexSort {
    columns: Arc<KeyColumns>,
    buffer: SortBuffer,
    /// Where runs go; none: everything stays in memory.
    temp: Option<TempSpace>,
    runs: Vec<TempFileHandle>,
    entries: u64,
}

impl IndexSort {
    pub fn new(columns: &Arc<KeyColumns>, temp: Option<TempSpace>) -> IndexSort {
        let mut buffer = SortBuffer::new(columns);
        if let Some(temp) = &temp {
            buffer.reserve_bytes(temp.maintenance_work_mem_bytes);
        }
        IndexSort {
            columns: columns.clone(),
            buffer,
            temp,
            runs: Vec::new(),
            entries: 0,
        }
    }

    pub fn push(&mut self, key: &[Key], tid: Tid) -> PgResult<()> {
        // Written out before it would outgrow its memory.
        if let Some(temp) = &self.temp {
            if self.buffer.bytes() >= temp.maintenance_work_mem_bytes {
                self.write_run()?;
            }
        }
        self.buffer.push(key, tid);
        self.entries += 1;
        Ok(())
    }

    /// Entries pushed so far.
    pub fn len(&self) -> u64 {
        self.entries
    }

    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Runs written so far.
    pub fn runs(&self) -> usize {
        self.runs.len()
    }

    /// Sorts the buffer, appends it to a new run file and empties it.
    fn write_run(&mut self) -> PgResult<()> {
        let temp = self
            .temp
            .as_ref()
            .expect("runs are written only with temporary files");
        let io =
            |e: std::io::Error| PgError::io("could not write a sorted run of CREATE INDEX", &e);
        let run = temp.files.create().map_err(io)?;
        let mut out = run.writer();
        self.buffer.sort();
        self.buffer.write_sorted(&mut out).map_err(io)?;
        out.flush().map_err(io)?;
        self.buffer.clear();
        self.runs.push(run);
        Ok(())
    }

    /// Calls `f` with every entry in index order: (key, TID), NULLs last, equal keys in
    /// TID order.
    pub fn for_each(mut self, f: &mut dyn FnMut(&[Key], Tid) -> PgResult<()>) -> PgResult<()> {
        if self.runs.is_empty() {
            self.buffer.sort();
            for i in 0..self.buffer.len() {
                self.buffer.with_entry(i, |key, tid| f(key, tid))?;
            }
            return Ok(());
        }
        // The entries still in memory are the merge's last source, sorted where they are.
        self.buffer.sort();
        let kind = Order::of(&self.columns);
        let kind = &kind;
        let mut readers: Vec<_> = self.runs.iter().map(|r| r.reader()).collect();
        let in_memory = readers.len();
        let mut next_in_memory = 0;
        let mut next_of = |source: usize| -> PgResult<Option<Record>> {
            if source < in_memory {
                return Record::read(kind, &mut readers[source]);
            }
            let record = (next_in_memory < self.buffer.len())
                .then(|| Record::of(&self.buffer, next_in_memory));
            next_in_memory += 1;
            Ok(record)
        };
        let mut heap = BinaryHeap::with_capacity(in_memory + 1);
        for source in 0..=in_memory {
            if let Some(record) = next_of(source)? {
                heap.push(Reverse(Next {
                    record,
                    source,
                    kind,
                }));
            }
        }
        // The smallest record is replaced in place by its source's next one (one sift
        // instead of a pop and a push), or removed when its source is done.
        while let Some(mut top) = heap.peek_mut() {
            let Reverse(next) = &mut *top;
            next.record
                .with_key(kind, |key| f(key, word_tid(next.record.word())))?;
            match next_of(next.source)? {
                Some(record) => next.record = record,
                None => drop(PeekMut::pop(top)),
            }
        }
        Ok(())
    }
}

impl SortBuffer {
    /// Writes the entries, in their current order, as run records.
    fn write_sorted(&self, out: &mut impl Write) -> std::io::Result<()> {
        match self {
            SortBuffer::U64 { entries, .. } => {
                for (v, w) in entries {
                    out.write_all(&v.to_le_bytes())?;
                    out.write_all(&w.to_le_bytes())?;
                }
            }
            SortBuffer::Numeric { entries } => {
                for (v, w) in entries {
                    out.write_all(&v.to_le_bytes())?;
                    out.write_all(&w.to_le_bytes())?;
                }
            }
            SortBuffer::Rows { arena, entries, .. } => {
                for e in entries {
                    out.write_all(&e.len.to_le_bytes())?;
                    out.write_all(e.bytes(arena))?;
                    out.write_all(&e.word.to_le_bytes())?;
                }
            }
            SortBuffer::Text { arena, entries, .. } => {
                for &(at, len, w) in entries {
                    out.write_all(&len.to_le_bytes())?;
                    out.write_all(&arena[at..at + len as usize])?;
                    out.write_all(&w.to_le_bytes())?;
                }
            }
        }
        Ok(())
    }
}

/// How a sort's records compare: by one column's kind, or column by column.
enum Order {
    Kind(KeyKind),
    Rows(Arc<KeyColumns>),
}

impl Order {
    fn of(columns: &Arc<KeyColumns>) -> Order {
        match columns.single() {
            Some(ty) => Order::Kind(KeyKind::of(ty)),
            None => Order::Rows(columns.clone()),
        }
    }
}

/// One entry read back from a run: its sort form and TID word.
enum Record {
    U64(u64, u64),
    Numeric(i128, u64),
    Text(Vec<u8>, u64),
}

impl Record {
    /// Entry `i` of `buffer`.
    fn of(buffer: &SortBuffer, i: usize) -> Record {
        match buffer {
            SortBuffer::U64 { entries, .. } => Record::U64(entries[i].0, entries[i].1),
            SortBuffer::Numeric { entries } => Record::Numeric(entries[i].0, entries[i].1),
            SortBuffer::Rows { arena, entries, .. } => {
                let e = entries[i];
                Record::Text(e.bytes(arena).to_vec(), e.word)
            }
            SortBuffer::Text { arena, entries, .. } => {
                let (at, len, w) = entries[i];
                Record::Text(arena[at..at + len as usize].to_vec(), w)
            }
        }
    }

    /// The next record of a run, `None` at its end.
    fn read(order: &Order, from: &mut impl Read) -> PgResult<Option<Record>> {
        let kind = match order {
            Order::Kind(kind) => *kind,
            Order::Rows(_) => KeyKind::Text, // a length and bytes, as text
        };
        let io = |e: std::io::Error| PgError::io("could not read a sorted run of CREATE INDEX", &e);
        let mut head = [0u8; 16];
        // The first field tells whether there is a record at all.
        let first = match kind {
            KeyKind::Numeric => 16,
            KeyKind::Text | KeyKind::Bpchar => 4,
            _ => 8,
        };
        if !read_or_end(from, &mut head[..first]).map_err(io)? {
            return Ok(None);
        }
        let mut word = [0u8; 8];
        let record = match kind {
            KeyKind::Numeric => {
                from.read_exact(&mut word).map_err(io)?;
                Record::Numeric(i128::from_le_bytes(head), u64::from_le_bytes(word))
            }
            KeyKind::Text | KeyKind::Bpchar => {
                let len = u32::from_le_bytes(head[..4].try_into().unwrap()) as usize;
                let mut bytes = vec![0u8; len];
                from.read_exact(&mut bytes).map_err(io)?;
                from.read_exact(&mut word).map_err(io)?;
                Record::Text(bytes, u64::from_le_bytes(word))
            }
            _ => {
                from.read_exact(&mut word).map_err(io)?;
                let v = u64::from_le_bytes(head[..8].try_into().unwrap());
                Record::U64(v, u64::from_le_bytes(word))
            }
        };
        Ok(Some(record))
    }

    fn word(&self) -> u64 {
        match self {
            Record::U64(_, w) | Record::Numeric(_, w) | Record::Text(_, w) => *w,
        }
    }

    /// Calls `f` with the record's key.
    fn with_key<R>(&self, order: &Order, f: impl FnOnce(&[Key]) -> R) -> R {
        let kind = match order {
            Order::Kind(kind) => *kind,
            Order::Rows(columns) => {
                let Record::Text(tuple, _) = self else {
                    unreachable!("rows are written as bytes")
                };
                let keys = IndexTuple { bytes: tuple }.key(columns);
                return f(&keys.expect("the build formed the tuple"));
            }
        };
        let key = if self.word() & NULL_BIT != 0 {
            Key::Null
        } else {
            match self {
                Record::U64(v, _) => key::from_sort_u64(kind, *v),
                Record::Numeric(v, _) => Key::Numeric(*v),
                Record::Text(bytes, _) => Key::Text(Cow::Borrowed(bytes)),
            }
        };
        f(std::slice::from_ref(&key))
    }

    /// The order of [`SortBuffer::sort`].
    fn cmp(&self, other: &Record, order: &Order) -> Ordering {
        let kind = match order {
            Order::Kind(kind) => *kind,
            Order::Rows(columns) => {
                let (Record::Text(a, aw), Record::Text(b, bw)) = (self, other) else {
                    unreachable!("rows are written as bytes")
                };
                return compare_rows(columns, a, b).then(aw.cmp(bw));
            }
        };
        match (self, other) {
            (Record::U64(a, aw), Record::U64(b, bw)) => (a, aw).cmp(&(b, bw)),
            (Record::Numeric(a, aw), Record::Numeric(b, bw)) => {
                (aw >> 63, a, aw).cmp(&(bw >> 63, b, bw))
            }
            (Record::Text(a, aw), Record::Text(b, bw)) => (aw >> 63)
                .cmp(&(bw >> 63))
                .then_with(|| key::text_sort_bytes(kind, a).cmp(key::text_sort_bytes(kind, b)))
                .then(aw.cmp(bw)),
            _ => unreachable!("the runs of one sort hold records of one kind"),
        }
    }
}

/// Fills `buf`, or returns false if the reader was at its end before the first byte.
fn read_or_end(from: &mut impl Read, buf: &mut [u8]) -> std::io::Result<bool> {
    let mut done = 0;
    while done < buf.len() {
        match from.read(&mut buf[done..])? {
            0 if done == 0 => return Ok(false),
            0 => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            n => done += n,
        }
    }
    Ok(true)
}

/// A source's next record in the merge's heap (sources: the runs, then the buffer).
struct Next<'o> {
    record: Record,
    source: usize,
    kind: &'o Order,
}

impl PartialEq for Next<'_> {
    fn eq(&self, other: &Next) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Next<'_> {}

impl PartialOrd for Next<'_> {
    fn partial_cmp(&self, other: &Next) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Next<'_> {
    fn cmp(&self, other: &Next) -> Ordering {
        self.record.cmp(&other.record, self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::temp_files::{TempFiles, TEMP_FILES_DIR};
    use iolab_catalog::PgType;
    use iolab_stats::IoStatsHub;
    use std::sync::Arc;

    /// Sorts `keys` (TIDs in push order) in memory and with runs of about 4 kB, and checks
    /// that both hand out the same entries, and that runs were written.
    fn same_both_ways(types: &[PgType], keys: Vec<Vec<Key<'static>>>, tag: &str) {
        let columns = Arc::new(KeyColumns::new(types));
        let dir =
            std::env::temp_dir().join(format!("iolab-index-sort-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(TEMP_FILES_DIR)).unwrap();
        let files = Arc::new(TempFiles::new(&dir, 7, Arc::new(IoStatsHub::new())));
        let collect = |mut sort: IndexSort| {
            for (i, k) in keys.iter().enumerate() {
                sort.push(k, (i as u32 / 100, (i % 100) as u16 + 1))
                    .unwrap();
            }
            let runs = sort.runs();
            let mut out = Vec::new();
            sort.for_each(&mut |k, tid| {
                out.push((
                    k.iter().map(|k| k.clone().into_owned()).collect::<Vec<_>>(),
                    tid,
                ));
                Ok(())
            })
            .unwrap();
            (out, runs)
        };
        let (in_memory, none) = collect(IndexSort::new(&columns, None));
        assert!(
            in_memory.windows(2).all(|w| columns
                .compare(&w[0].0, &w[1].0)
                .then(w[0].1.cmp(&w[1].1))
                .is_lt()),
            "{tag}: not in (key, TID) order"
        );
        let temp = TempSpace {
            files: files.clone(),
            maintenance_work_mem_bytes: 4096,
        };
        let (merged, runs) = collect(IndexSort::new(&columns, Some(temp)));
        assert_eq!(none, 0);
        assert!(runs > 3, "{runs} runs");
        assert_eq!(merged.len(), keys.len());
        assert!(merged == in_memory, "{tag}: the merge's order differs");
        assert_eq!(files.in_use(), 0, "runs removed after the merge");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A repeatable spread of numbers (a linear congruential sequence).
    fn numbers(n: usize) -> Vec<i64> {
        let mut x = 12345u64;
        (0..n)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 40) as i64 % 500 - 250
            })
            .collect()
    }

    #[test]
    fn runs_merge_into_the_in_memory_order() {
        let with_nulls = |keys: Vec<Key<'static>>| {
            keys.into_iter()
                .enumerate()
                .map(|(i, k)| vec![if i % 97 == 0 { Key::Null } else { k }])
                .collect::<Vec<_>>()
        };
        let n = numbers(3000);
        same_both_ways(
            &[PgType::Int8],
            with_nulls(n.iter().map(|&v| Key::Int(v)).collect()),
            "int",
        );
        same_both_ways(
            &[PgType::Numeric {
                precision: 20,
                scale: 3,
            }],
            with_nulls(n.iter().map(|&v| Key::Numeric(v as i128 * 1000)).collect()),
            "numeric",
        );
        let texts = n
            .iter()
            .map(|v| Key::Text(Cow::Owned(format!("k{v}").into_bytes())));
        same_both_ways(&[PgType::Text], with_nulls(texts.collect()), "text");
        // Two columns: few distinct first keys, so the second column decides often; NULLs
        // in either.
        let rows = n.iter().enumerate().map(|(i, &v)| {
            let first = if i % 89 == 0 {
                Key::Null
            } else {
                Key::Int(v % 7)
            };
            let second = if i % 61 == 0 {
                Key::Null
            } else {
                Key::Text(Cow::Owned(format!("s{v}").into_bytes()))
            };
            vec![first, second]
        });
        same_both_ways(&[PgType::Int4, PgType::Text], rows.collect(), "rows");
        // Text first, its first 8 bytes often equal (the abbreviation ties) or short.
        let rows = n.iter().enumerate().map(|(i, &v)| {
            let text = match i % 3 {
                0 => format!("common prefix {}", v % 13),
                1 => format!("c{}", v % 5),
                _ => String::new(),
            };
            vec![Key::Text(Cow::Owned(text.into_bytes())), Key::Int(v)]
        });
        same_both_ways(&[PgType::Text, PgType::Int8], rows.collect(), "text rows");
    }
}
