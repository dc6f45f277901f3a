//! The VERBOSE messages of ANALYZE and VACUUM, worded as PostgreSQL 18 words them
//! (`do_analyze_rel`, `acquire_sample_rows`, `heap_vacuum_rel`), and the resource-usage
//! measurement they end with.
//!
//! A finished ANALYZE reports, as one INFO message of several lines:
//!
//! ```text
//! finished analyzing table "postgres.public.t"
//! delay time: 12.350 ms                                 (only with track_cost_delay_timing)
//! I/O timings: read: 9.416 ms, write: 0.000 ms          (only with track_io_timing)
//! avg read rate: 319.795 MB/s, avg write rate: 0.000 MB/s
//! buffer usage: 228 hits, 7409 reads, 0 dirtied
//! WAL usage: 0 records, 0 full page images, 0 bytes, 0 buffers full
//! system usage: CPU: user: 0.09 s, system: 0.01 s, elapsed: 0.18 s
//! ```
//!
//! - the rates divide blocks read and blocks *dirtied* (not written) by the elapsed time
//!   rounded *up* to whole milliseconds (`TimestampDifferenceMilliseconds`); 0 when no time
//!   passed;
//! - `I/O timings: read:` is the time the operation spent on reads: iolab's *read* (blocked
//!   until a read completed) plus *wait* (issuing reads ahead: advice, submissions), which
//!   is what PostgreSQL 18's read time contains; `write:` the time writing victims back;
//! - buffer usage counts the table's blocks only (PostgreSQL's also counts the catalog
//!   lookups of the command, a few hundred hits);
//! - the WAL line counts the records the operation wrote (VACUUM's; ANALYZE writes none:
//!   its statistics go to the catalog file, not to WAL-logged pages);
//! - CPU times are the statement thread's (`RUSAGE_THREAD`), truncated to hundredths as
//!   `pg_rusage_show` does.

use std::time::Instant;

use iolab_stats::BufferUsage;

use crate::storage::page::BLCKSZ;

/// CPU and wall-clock time at the start of an operation (PostgreSQL's `PGRUsage`).
#[derive(Clone, Copy, Debug)]
pub struct ResourceUsage {
    user_us: i64,
    system_us: i64,
    wall: Instant,
}

fn thread_cpu_us() -> (i64, i64) {
    // SAFETY: getrusage writes one rusage struct into the zeroed value we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return (0, 0);
    }
    let us = |tv: libc::timeval| tv.tv_sec * 1_000_000 + tv.tv_usec;
    (us(ru.ru_utime), us(ru.ru_stime))
}

impl ResourceUsage {
    pub fn start() -> ResourceUsage {
        let (user_us, system_us) = thread_cpu_us();
        ResourceUsage {
            user_us,
            system_us,
            wall: Instant::now(),
        }
    }

    /// Wall-clock time since the start.
    pub fn elapsed(&self) -> std::time::Duration {
        self.wall.elapsed()
    }

    /// `CPU: user: 0.09 s, system: 0.01 s, elapsed: 0.18 s` since the start.
    pub fn show(&self) -> String {
        let (user_us, system_us) = thread_cpu_us();
        let wall_us = self.wall.elapsed().as_micros() as i64;
        format!(
            "CPU: user: {}, system: {}, elapsed: {}",
            hundredths(user_us - self.user_us),
            hundredths(system_us - self.system_us),
            hundredths(wall_us)
        )
    }
}

/// `S.hh s`, truncated to hundredths.
fn hundredths(us: i64) -> String {
    let us = us.max(0);
    format!("{}.{:02} s", us / 1_000_000, (us % 1_000_000) / 10_000)
}

/// What one ANALYZE or VACUUM phase used, for its closing message.
#[derive(Clone, Copy, Debug)]
pub struct PhaseUsage {
    pub usage: BufferUsage,
    /// Whether `track_io_timing` was on (the `I/O timings:` line is printed only then).
    pub track_io_timing: bool,
    /// Time slept for the cost-based delay when `track_cost_delay_timing` was on (the
    /// `delay time:` line is printed only then).
    pub delay_time: Option<std::time::Duration>,
    pub elapsed: std::time::Duration,
}

impl PhaseUsage {
    /// Elapsed milliseconds rounded up (`TimestampDifferenceMilliseconds`).
    fn elapsed_ms_rounded_up(&self) -> u64 {
        let us = self.elapsed.as_micros() as u64;
        us.div_ceil(1000)
    }

    /// The lines from `delay time:` to `WAL usage:`, each ending in a newline.
    pub fn lines(&self) -> String {
        let u = &self.usage;
        let mut out = String::new();
        if let Some(slept) = self.delay_time {
            let ms = slept.as_secs_f64() * 1000.0;
            out.push_str(&format!("delay time: {ms:.3} ms\n"));
        }
        if self.track_io_timing {
            let read_ms = (u.shared_read_ns + u.shared_wait_ns) as f64 / 1e6;
            let write_ms = u.shared_write_ns as f64 / 1e6;
            out.push_str(&format!(
                "I/O timings: read: {read_ms:.3} ms, write: {write_ms:.3} ms\n"
            ));
        }
        let ms = self.elapsed_ms_rounded_up();
        let (read_rate, write_rate) = if ms > 0 {
            let secs = ms as f64 / 1000.0;
            let mb = |blocks: u64| BLCKSZ as f64 * blocks as f64 / (1024.0 * 1024.0) / secs;
            (mb(u.shared_read), mb(u.shared_dirtied))
        } else {
            (0.0, 0.0)
        };
        out.push_str(&format!(
            "avg read rate: {read_rate:.3} MB/s, avg write rate: {write_rate:.3} MB/s\n"
        ));
        out.push_str(&format!(
            "buffer usage: {} hits, {} reads, {} dirtied\n",
            u.shared_hit, u.shared_read, u.shared_dirtied
        ));
        out.push_str(&format!(
            "WAL usage: {} records, {} full page images, {} bytes, {} buffers full\n",
            u.wal_records, u.wal_fpi, u.wal_bytes, u.wal_buffers_full
        ));
        out
    }
}

/// `analyzing "public.t"`
pub fn analyzing(schema: &str, table: &str) -> String {
    format!("analyzing \"{schema}.{table}\"")
}

/// The sample summary of `acquire_sample_rows`.
pub fn sample_summary(
    table: &str,
    scanned: u32,
    total_blocks: u32,
    live_rows: f64,
    dead_rows: f64,
    sample_rows: usize,
    total_rows: f64,
) -> String {
    format!(
        "\"{table}\": scanned {scanned} of {total_blocks} pages, containing {live_rows:.0} live rows and {dead_rows:.0} dead rows; {sample_rows} rows in sample, {total_rows:.0} estimated total rows"
    )
}

/// The closing message of ANALYZE (one message, several lines).
pub fn finished_analyzing(
    database: &str,
    schema: &str,
    table: &str,
    phase: &PhaseUsage,
    rusage: &ResourceUsage,
) -> String {
    format!(
        "finished analyzing table \"{database}.{schema}.{table}\"\n{}system usage: {}",
        phase.lines(),
        rusage.show()
    )
}

/// What a VACUUM of one table found, for its messages.
#[derive(Clone, Debug, Default)]
pub struct VacuumCounts {
    pub rel_pages: u32,
    pub scanned_pages: u32,
    /// Dead tuples removed.
    pub removed_tuples: u64,
    /// Tuples that remain, live or not yet removable.
    pub remaining_tuples: u64,
    /// Of those, deleted tuples some snapshot may still see.
    pub dead_tuples: u64,
    /// Oldest transaction whose deletes a snapshot may not see (`removable cutoff`).
    pub removable_cutoff: u32,
    /// The next transaction id when the operation ended.
    pub next_xid_at_end: u32,
    /// Rounds of index vacuuming, the pages that had dead line pointers for them, and
    /// those line pointers.
    pub index_scans: u32,
    pub pages_with_dead_items: u32,
    pub dead_items: u64,
    pub pages_set_all_visible: u32,
    /// Each vacuumed index's name and pages (only when it was vacuumed).
    pub indexes: Vec<(String, u32)>,
}

/// `vacuuming "postgres.public.t"` (`aggressively vacuuming …` with FREEZE).
pub fn vacuuming(database: &str, schema: &str, table: &str, aggressive: bool) -> String {
    let word = if aggressive {
        "aggressively vacuuming"
    } else {
        "vacuuming"
    };
    format!("{word} \"{database}.{schema}.{table}\"")
}

fn percent(part: u32, whole: u32) -> f64 {
    if whole == 0 {
        100.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// The closing message of a (lazy) VACUUM of one table.
pub fn finished_vacuuming(
    database: &str,
    schema: &str,
    table: &str,
    counts: &VacuumCounts,
    phase: &PhaseUsage,
    rusage: &ResourceUsage,
) -> String {
    let c = counts;
    let none_pct = if c.rel_pages == 0 { 100.0 } else { 0.0 };
    let index_scan = if c.index_scans > 0 {
        "index scan needed"
    } else {
        "index scan not needed"
    };
    let (dead_pages, dead_items) = if c.index_scans > 0 {
        (c.pages_with_dead_items, c.dead_items)
    } else {
        (0, 0)
    };
    let indexes: String = c
        .indexes
        .iter()
        .map(|(name, pages)| {
            format!(
                "index \"{name}\": pages: {pages} in total, 0 newly deleted, 0 currently deleted, 0 reusable\n"
            )
        })
        .collect();
    format!(
        "finished vacuuming \"{database}.{schema}.{table}\": index scans: {}\n\
         pages: 0 removed, {} remain, {} scanned ({:.2}% of total), 0 eagerly scanned\n\
         tuples: {} removed, {} remain, {} are dead but not yet removable\n\
         removable cutoff: {}, which was {} XIDs old when operation ended\n\
         frozen: 0 pages from table ({none_pct:.2}% of total) had 0 tuples frozen\n\
         visibility map: {} pages set all-visible, 0 pages set all-frozen (0 were all-visible)\n\
         {index_scan}: {dead_pages} pages from table ({:.2}% of total) had {dead_items} dead item identifiers removed\n\
         {indexes}{}system usage: {}",
        c.index_scans,
        c.rel_pages,
        c.scanned_pages,
        percent(c.scanned_pages, c.rel_pages),
        c.removed_tuples,
        c.remaining_tuples,
        c.dead_tuples,
        c.removable_cutoff,
        c.next_xid_at_end.saturating_sub(c.removable_cutoff) as i64,
        c.pages_set_all_visible,
        percent(dead_pages, c.rel_pages),
        phase.lines(),
        rusage.show()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn finished_analyzing_has_postgres_lines() {
        let phase = PhaseUsage {
            usage: BufferUsage {
                shared_hit: 228,
                shared_read: 7409,
                shared_read_ns: 9_000_000,
                shared_wait_ns: 416_000,
                ..BufferUsage::default()
            },
            track_io_timing: true,
            delay_time: None,
            elapsed: Duration::from_micros(180_500),
        };
        let text = finished_analyzing(
            "postgres",
            "public",
            "t_big",
            &phase,
            &ResourceUsage::start(),
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "finished analyzing table \"postgres.public.t_big\""
        );
        assert_eq!(lines[1], "I/O timings: read: 9.416 ms, write: 0.000 ms");
        // 7409 blocks in 181 ms (rounded up).
        let rate = 8192.0 * 7409.0 / 1048576.0 / 0.181;
        assert_eq!(
            lines[2],
            format!("avg read rate: {rate:.3} MB/s, avg write rate: 0.000 MB/s")
        );
        assert_eq!(lines[3], "buffer usage: 228 hits, 7409 reads, 0 dirtied");
        assert_eq!(
            lines[4],
            "WAL usage: 0 records, 0 full page images, 0 bytes, 0 buffers full"
        );
        assert!(
            lines[5].starts_with("system usage: CPU: user: "),
            "{}",
            lines[5]
        );
        assert!(lines[5].ends_with(" s"));
        assert_eq!(lines.len(), 6);

        let quiet = PhaseUsage {
            track_io_timing: false,
            elapsed: Duration::ZERO,
            ..phase
        };
        let text = quiet.lines();
        assert!(text.starts_with("avg read rate: 0.000 MB/s, avg write rate: 0.000 MB/s\n"));

        let throttled = PhaseUsage {
            delay_time: Some(Duration::from_micros(12_345_678)),
            ..phase
        };
        let text = throttled.lines();
        assert!(
            text.starts_with("delay time: 12345.678 ms\nI/O timings: "),
            "{text}"
        );
    }

    #[test]
    fn sample_summary_wording() {
        assert_eq!(
            sample_summary("t_big", 3000, 7408, 81000.0, 0.0, 3000, 200016.0),
            "\"t_big\": scanned 3000 of 7408 pages, containing 81000 live rows and 0 dead rows; 3000 rows in sample, 200016 estimated total rows"
        );
        assert_eq!(analyzing("public", "t"), "analyzing \"public.t\"");
    }

    #[test]
    fn hundredths_truncate() {
        assert_eq!(hundredths(189_999), "0.18 s");
        assert_eq!(hundredths(1_005_000), "1.00 s");
        assert_eq!(hundredths(-5), "0.00 s");
    }

    #[test]
    fn vacuum_wording() {
        let counts = VacuumCounts {
            rel_pages: 1021,
            scanned_pages: 1021,
            remaining_tuples: 100_000,
            removable_cutoff: 886,
            next_xid_at_end: 886,
            ..VacuumCounts::default()
        };
        let phase = PhaseUsage {
            usage: BufferUsage::default(),
            track_io_timing: false,
            delay_time: None,
            elapsed: Duration::ZERO,
        };
        let text = finished_vacuuming(
            "db",
            "public",
            "t",
            &counts,
            &phase,
            &ResourceUsage::start(),
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "finished vacuuming \"db.public.t\": index scans: 0"
        );
        assert_eq!(
            lines[1],
            "pages: 0 removed, 1021 remain, 1021 scanned (100.00% of total), 0 eagerly scanned"
        );
        assert_eq!(
            lines[2],
            "tuples: 0 removed, 100000 remain, 0 are dead but not yet removable"
        );
        assert_eq!(
            lines[3],
            "removable cutoff: 886, which was 0 XIDs old when operation ended"
        );
        assert_eq!(
            lines[4],
            "frozen: 0 pages from table (0.00% of total) had 0 tuples frozen"
        );
        assert_eq!(
            lines[5],
            "visibility map: 0 pages set all-visible, 0 pages set all-frozen (0 were all-visible)"
        );
        assert_eq!(
            lines[6],
            "index scan not needed: 0 pages from table (0.00% of total) had 0 dead item identifiers removed"
        );
        assert!(lines[7].starts_with("avg read rate: "));
        assert_eq!(
            vacuuming("db", "public", "t", false),
            "vacuuming \"db.public.t\""
        );
        // Dead tuples removed, an index vacuumed (PostgreSQL 18's lines for the same).
        let cleaned = VacuumCounts {
            rel_pages: 45,
            scanned_pages: 45,
            removed_tuples: 5000,
            remaining_tuples: 5000,
            removable_cutoff: 827,
            next_xid_at_end: 827,
            index_scans: 1,
            pages_with_dead_items: 45,
            dead_items: 5000,
            indexes: vec![("v2_a_idx".into(), 30)],
            ..VacuumCounts::default()
        };
        let text = finished_vacuuming(
            "db",
            "public",
            "v2",
            &cleaned,
            &phase,
            &ResourceUsage::start(),
        );
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "finished vacuuming \"db.public.v2\": index scans: 1"
        );
        assert_eq!(
            lines[2],
            "tuples: 5000 removed, 5000 remain, 0 are dead but not yet removable"
        );
        assert_eq!(
            lines[6],
            "index scan needed: 45 pages from table (100.00% of total) had 5000 dead item identifiers removed"
        );
        assert_eq!(
            lines[7],
            "index \"v2_a_idx\": pages: 30 in total, 0 newly deleted, 0 currently deleted, 0 reusable"
        );
        let empty = VacuumCounts::default();
        let text = finished_vacuuming("db", "public", "e", &empty, &phase, &ResourceUsage::start());
        assert!(text.contains("0 scanned (100.00% of total)"));
        assert!(text.contains("frozen: 0 pages from table (100.00% of total)"));
    }
}
