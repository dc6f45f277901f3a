//! # iolab-settings: one table of settings, and the values sessions see
//!
//! PostgreSQL calls them GUCs ("grand unified configuration"): named values such as
//! `work_mem` or `effective_io_concurrency` that a user can read with `SHOW`, change with
//! `SET`, and that the server reads from its configuration file and command line. Every one
//! of those paths in iolab goes through this crate, and every fact about a setting — its
//! type, range, unit, default, who may change it — is written once, in one row of the
//! static table in [`table`] ([`SETTINGS`]). Nothing else in iolab spells a setting's rules.
//!
//! ## Where a value comes from
//!
//! A value is assigned from one of several *sources*; a later layer overrides an earlier one,
//! and each assignment remembers its source (`pg_settings.source`) and, for the file, its
//! line (`sourcefile`, `sourceline`):
//!
//! ```text
//!   ServerSettings (fixed once the server has started)
//!     boot value (the table) → iolab.conf → command line -c → server overrides
//!                                                             (data_directory, computed values)
//!   SessionSettings (one per connection, starts as a copy of the server's values)
//!     server value → startup packet (client) → SET / set_config() → SET LOCAL
//! ```
//!
//! What a session starts with — the server's value, or the client's startup parameter if it
//! sent one — is that setting's *reset value*: `RESET` and `RESET ALL` return to it.
//!
//! ## Transactions
//!
//! `SET` inside a transaction that rolls back is undone, and `SET LOCAL` is undone when its
//! transaction ends either way, as in PostgreSQL. The session keeps, per setting, the value
//! in effect (`current`) and, while a `SET LOCAL` masks it, the value the transaction will
//! leave behind on commit (`at_commit`). Each open transaction level (the transaction, then
//! one level per savepoint) records the pair as it was before the level first touched the
//! setting:
//!
//! ```text
//!   BEGIN;  SET work_mem = '8MB';  SAVEPOINT a;  SET LOCAL work_mem = '1MB';
//!
//!   work_mem:  current = 1MB   at_commit = 8MB
//!   levels:    [0] transaction  saved work_mem = (4MB, -)     ← restored on ROLLBACK
//!              [1] savepoint a  saved work_mem = (8MB, -)     ← restored on ROLLBACK TO a
//!
//!   RELEASE a  → level 1's record is dropped (level 0 already holds an older one)
//!   COMMIT     → current = at_commit = 8MB;  ROLLBACK → current = 4MB
//! ```
//!
//! The server calls [`SessionSettings::begin_transaction`] and
//! [`SessionSettings::commit_transaction`] / [`SessionSettings::abort_transaction`] around
//! *every* transaction, including the implicit one of a single statement outside `BEGIN`:
//! that is what makes `SET LOCAL` (and `set_config(…, true)`) outside a block last for one
//! statement only. PostgreSQL also sends `WARNING: SET LOCAL can only be used in transaction
//! blocks` (25P01) for `SET LOCAL` outside a block; that is the server's to send.
//!
//! ## Text in, text out
//!
//! Input is read as PostgreSQL reads it: integers like C's `strtol` (`0x10`, `010`), reals
//! like `strtod`, memory and time units with case (`16MB`, `500ms`, `5min`), booleans as
//! `on/off/true/false/yes/no/1/0` and unique prefixes, enums case-insensitively. `SHOW`
//! prints numbers in the largest unit that divides them exactly (`shared_buffers` → `128MB`,
//! `statement_timeout` 1500 → `1500ms`). Errors carry PostgreSQL 18's exact message,
//! SQLSTATE, detail and hint ([`SettingError`]); they were checked against a live 18.4.
//!
//! ## Reporting
//!
//! Settings flagged `REPORT` (`client_encoding`, `DateStyle`, `TimeZone`, `search_path`, …)
//! are sent to the client as ParameterStatus messages: all of them at connection start
//! ([`SessionSettings::parameter_status_all`]), then those whose value differs from what was
//! last sent ([`SessionSettings::take_parameter_status_changes`]), which the server asks for
//! before each ReadyForQuery — a value set and rolled back is not re-sent.
//!
//! ## Map of the crate
//!
//! | module          | holds |
//! |-----------------|-------|
//! | [`table`]       | [`SettingDef`] and the table itself, with where iolab differs from PostgreSQL |
//! | `units`         | numbers with units in and out (`strtol`/`strtod`/`%g` semantics) |
//! | `checks`        | DateStyle, TimeZone, client_encoding, identifier lists, … |
//! | `value`         | parse one input for one setting; SHOW and `pg_settings` text |
//! | [`config_file`] | `iolab.conf` syntax, `-c name=value`, startup `options` |
//! | `server`        | [`ServerSettings`]: start-up values |
//! | `session`       | [`SessionSettings`]: per-connection values, transactions, views |

pub mod auto_conf;
mod checks;
pub mod config_file;
mod error;
mod server;
mod session;
pub mod table;
mod units;
mod value;

use std::sync::Arc;

pub use checks::{quote_identifier, tz_database_name, DateFieldOrder, DateOutputStyle, DateStyle};
pub use config_file::{
    parse_config_file, parse_name_value, parse_startup_options, ConfigFileEntry,
};
pub use error::{sqlstate, SettingError};
pub use server::{Reloaded, ServerSettings, StartupError};
pub use session::{PgSettingsRow, SessionSettings};
pub use table::{flags, Context, SettingDef, SettingKind, StringCheck, SETTINGS};
pub use units::Unit;

use value::Value;

/// Where the value in effect came from (`pg_settings.source`), lowest priority first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// The boot value.
    Default,
    /// A default the server computed at start (`io_max_concurrency = -1` → 64); shown as
    /// `default`, as PostgreSQL does.
    DynamicDefault,
    ConfigurationFile,
    CommandLine,
    /// A startup packet parameter.
    Client,
    /// Set by the server itself (`data_directory`, `transaction_isolation` at BEGIN).
    Override,
    /// `SET`, `SET LOCAL`, `set_config()`.
    Session,
}

impl Source {
    /// The spelling in `pg_settings.source`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Default | Source::DynamicDefault => "default",
            Source::ConfigurationFile => "configuration file",
            Source::CommandLine => "command line",
            Source::Client => "client",
            Source::Override => "override",
            Source::Session => "session",
        }
    }
}

/// The configuration file line a value was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileLocation {
    pub file: String,
    pub line: u32,
}

/// One assignment of a value: the value, where it came from, and since when (in assignment
/// order) the setting has been away from its default — `EXPLAIN (SETTINGS)` lists settings
/// in that order, as PostgreSQL does.
#[derive(Clone, Debug)]
pub(crate) struct Assigned {
    pub value: Value,
    pub source: Source,
    pub location: Option<Arc<FileLocation>>,
    pub nondefault_since: Option<u64>,
}

impl Assigned {
    pub(crate) fn boot(def: &SettingDef) -> Assigned {
        Assigned {
            value: value::boot_value(def),
            source: Source::Default,
            location: None,
            nondefault_since: None,
        }
    }
}

/// The definition of `name` (any case), if iolab has such a setting.
pub fn lookup(name: &str) -> Option<&'static SettingDef> {
    table_index(name).map(|index| &SETTINGS[index])
}

/// The position of `name` (any case) in [`SETTINGS`], which is sorted by lower-cased name.
pub(crate) fn table_index(name: &str) -> Option<usize> {
    SETTINGS
        .binary_search_by(|def| {
            let defined = def.name.bytes().map(|b| b.to_ascii_lowercase());
            defined.cmp(name.bytes().map(|b| b.to_ascii_lowercase()))
        })
        .ok()
}

/// Whether `name` may name a custom (placeholder) setting: two or more identifiers joined by
/// dots, each a letter, `_` or non-ASCII character followed by those, digits or `$`.
pub(crate) fn is_valid_custom_name(name: &str) -> bool {
    let mut parts = 0;
    for part in name.split('.') {
        let mut bytes = part.bytes();
        let starts_well = bytes
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_' || b >= 0x80);
        if !starts_well
            || !bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80)
        {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// One value of `SET name = a, b, …` as the SQL parser produced it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetArgument<'a> {
    /// A string literal or identifier (already lower-cased if it was unquoted).
    Text(&'a str),
    /// A numeric literal, as written.
    Number(&'a str),
}

/// Joins the values of `SET name = a, b` into the one string [`SessionSettings::set`] takes,
/// as PostgreSQL does: several values only for list settings (else 22023 `SET name takes only
/// one argument`), joined with `", "`, and for `search_path` each text value quoted as an
/// identifier when it needs it (`SET search_path = 'A', b` → `"A", b`).
pub fn flatten_set_arguments(
    name: &str,
    arguments: &[SetArgument<'_>],
) -> Result<String, SettingError> {
    let def = lookup(name);
    let shown_name = def.map_or(name, |def| def.name);
    let is_list = def.is_some_and(|def| def.has(flags::LIST_INPUT));
    let quote_items = def.is_some_and(|def| def.has(flags::LIST_QUOTE));
    if arguments.len() > 1 && !is_list {
        return Err(SettingError::new(
            sqlstate::INVALID_PARAMETER_VALUE,
            format!("SET {shown_name} takes only one argument"),
        ));
    }
    let items: Vec<String> = arguments
        .iter()
        .map(|argument| match *argument {
            SetArgument::Text(text) if quote_items => quote_identifier(text),
            SetArgument::Text(text) | SetArgument::Number(text) => text.to_string(),
        })
        .collect();
    Ok(items.join(", "))
}

/// The I/O method (`io_method`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoMethod {
    Sync,
    Worker,
    IoUring,
}

impl IoMethod {
    /// The setting's value for this method.
    pub fn name(self) -> &'static str {
        match self {
            IoMethod::Sync => "sync",
            IoMethod::Worker => "worker",
            IoMethod::IoUring => "io_uring",
        }
    }
}

/// When the read stream issues prefetch advice (`read_stream_advice`, iolab's own).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadStreamAdvice {
    /// Advise only reads that do not continue a sequential run (PostgreSQL 17).
    Pg17,
    /// Keep advising until reads catch up with the advised region (PostgreSQL 18).
    Pg18,
    /// Advise every read that misses the buffer pool.
    Always,
    /// Never advise.
    Never,
}

/// How intervals are written (`IntervalStyle`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalStyle {
    Postgres,
    PostgresVerbose,
    SqlStandard,
    Iso8601,
}

/// Typed getters for the settings iolab's code reads, shared by [`ServerSettings`] and
/// [`SessionSettings`] (each provides `value(name) -> &Value`).
macro_rules! typed_getters {
    () => {
        /// `effective_io_concurrency`: the read stream's I/O depth; 0 = synchronous, no advice.
        pub fn effective_io_concurrency(&self) -> i32 {
            self.value("effective_io_concurrency").as_int()
        }
        /// `maintenance_io_concurrency`, for maintenance read streams (VACUUM, ANALYZE).
        pub fn maintenance_io_concurrency(&self) -> i32 {
            self.value("maintenance_io_concurrency").as_int()
        }
        /// `io_combine_limit` as set, in 8 kB blocks (what SHOW prints).
        pub fn io_combine_limit(&self) -> i32 {
            self.value("io_combine_limit").as_int()
        }
        /// `io_max_combine_limit`, in 8 kB blocks.
        pub fn io_max_combine_limit(&self) -> i32 {
            self.value("io_max_combine_limit").as_int()
        }
        /// The combine limit I/O actually uses: `min(io_combine_limit, io_max_combine_limit)`.
        pub fn effective_io_combine_limit(&self) -> i32 {
            self.io_combine_limit().min(self.io_max_combine_limit())
        }
        pub fn io_method(&self) -> $crate::IoMethod {
            match self.value("io_method").as_text() {
                "sync" => $crate::IoMethod::Sync,
                "io_uring" => $crate::IoMethod::IoUring,
                _ => $crate::IoMethod::Worker,
            }
        }
        pub fn io_workers(&self) -> i32 {
            self.value("io_workers").as_int()
        }
        /// `io_max_concurrency`; -1 until the server replaces it with the computed value.
        pub fn io_max_concurrency(&self) -> i32 {
            self.value("io_max_concurrency").as_int()
        }
        pub fn shared_buffers_blocks(&self) -> i32 {
            self.value("shared_buffers").as_int()
        }
        pub fn temp_buffers_blocks(&self) -> i32 {
            self.value("temp_buffers").as_int()
        }
        pub fn effective_cache_size_blocks(&self) -> i32 {
            self.value("effective_cache_size").as_int()
        }
        pub fn work_mem_kb(&self) -> i32 {
            self.value("work_mem").as_int()
        }
        /// `hash_mem_multiplier`: hash tables may use this many times `work_mem`.
        pub fn hash_mem_multiplier(&self) -> f64 {
            self.value("hash_mem_multiplier").as_real()
        }
        /// `temp_file_limit` in kB; -1 = no limit.
        pub fn temp_file_limit_kb(&self) -> i32 {
            self.value("temp_file_limit").as_int()
        }
        /// `log_temp_files` in kB; -1 = log none.
        pub fn log_temp_files_kb(&self) -> i32 {
            self.value("log_temp_files").as_int()
        }
        pub fn maintenance_work_mem_kb(&self) -> i32 {
            self.value("maintenance_work_mem").as_int()
        }
        pub fn vacuum_buffer_usage_limit_kb(&self) -> i32 {
            self.value("vacuum_buffer_usage_limit").as_int()
        }
        /// `vacuum_cost_delay` in milliseconds (0: no cost-based delay).
        pub fn vacuum_cost_delay_ms(&self) -> f64 {
            self.value("vacuum_cost_delay").as_real()
        }
        pub fn vacuum_cost_limit(&self) -> i32 {
            self.value("vacuum_cost_limit").as_int()
        }
        pub fn vacuum_cost_page_hit(&self) -> i32 {
            self.value("vacuum_cost_page_hit").as_int()
        }
        pub fn vacuum_cost_page_miss(&self) -> i32 {
            self.value("vacuum_cost_page_miss").as_int()
        }
        pub fn vacuum_cost_page_dirty(&self) -> i32 {
            self.value("vacuum_cost_page_dirty").as_int()
        }
        pub fn track_cost_delay_timing(&self) -> bool {
            self.value("track_cost_delay_timing").as_bool()
        }
        pub fn track_io_timing(&self) -> bool {
            self.value("track_io_timing").as_bool()
        }
        pub fn track_wal_io_timing(&self) -> bool {
            self.value("track_wal_io_timing").as_bool()
        }
        pub fn track_counts(&self) -> bool {
            self.value("track_counts").as_bool()
        }
        pub fn zero_damaged_pages(&self) -> bool {
            self.value("zero_damaged_pages").as_bool()
        }
        pub fn synchronize_seqscans(&self) -> bool {
            self.value("synchronize_seqscans").as_bool()
        }
        /// `fsync`: whether WAL and data file writes are forced to disk.
        pub fn fsync(&self) -> bool {
            self.value("fsync").as_bool()
        }
        /// Whether a commit waits for its WAL to be flushed: `synchronous_commit` is anything
        /// but `off` (`local`, `remote_write`, `remote_apply`, `on`).
        pub fn synchronous_commit_on(&self) -> bool {
            self.value("synchronous_commit").as_text() != "off"
        }
        /// `wal_buffers`, in 8 kB blocks; -1 (a fraction of `shared_buffers`) until the server
        /// replaces it with the computed value.
        pub fn wal_buffers_blocks(&self) -> i32 {
            self.value("wal_buffers").as_int()
        }
        /// `full_page_writes`: whether a page's first change after a checkpoint logs the page.
        pub fn full_page_writes(&self) -> bool {
            self.value("full_page_writes").as_bool()
        }
        /// `bgwriter_delay`: the background writer's sleep between rounds, in ms.
        pub fn bgwriter_delay_ms(&self) -> i32 {
            self.value("bgwriter_delay").as_int()
        }
        /// `bgwriter_flush_after`: blocks the background writer writes between writeback
        /// requests (0: none).
        pub fn bgwriter_flush_after_blocks(&self) -> i32 {
            self.value("bgwriter_flush_after").as_int()
        }
        /// `checkpoint_flush_after`: blocks a checkpoint writes between writeback requests
        /// (0: none).
        pub fn checkpoint_flush_after_blocks(&self) -> i32 {
            self.value("checkpoint_flush_after").as_int()
        }
        /// `bgwriter_lru_maxpages`: most buffers the background writer writes per round.
        pub fn bgwriter_lru_maxpages(&self) -> i32 {
            self.value("bgwriter_lru_maxpages").as_int()
        }
        /// `bgwriter_lru_multiplier`: how many buffers ahead of the expected allocations
        /// the background writer cleans.
        pub fn bgwriter_lru_multiplier(&self) -> f64 {
            self.value("bgwriter_lru_multiplier").as_real()
        }
        /// `wal_writer_delay`: time between the WAL writer's flushes, in ms.
        pub fn wal_writer_delay_ms(&self) -> i32 {
            self.value("wal_writer_delay").as_int()
        }
        /// `checkpoint_timeout`: the longest time between automatic checkpoints, in seconds.
        pub fn checkpoint_timeout_s(&self) -> i32 {
            self.value("checkpoint_timeout").as_int()
        }
        /// `checkpoint_completion_target`: the fraction of the interval a checkpoint spreads
        /// its writes over (0 .. 1).
        pub fn checkpoint_completion_target(&self) -> f64 {
            self.value("checkpoint_completion_target").as_real()
        }
        /// `min_wal_size`: below this size of `pg_wal/`, checkpoints recycle old segments, in MB.
        pub fn min_wal_size_mb(&self) -> i32 {
            self.value("min_wal_size").as_int()
        }
        /// `wal_init_zero`: whether a new WAL segment is written full of zeros before use.
        pub fn wal_init_zero(&self) -> bool {
            self.value("wal_init_zero").as_bool()
        }
        /// `wal_recycle`: whether checkpoints rename old segments for reuse.
        pub fn wal_recycle(&self) -> bool {
            self.value("wal_recycle").as_bool()
        }
        /// `max_wal_size`: the WAL size that triggers a checkpoint, in MB.
        pub fn max_wal_size_mb(&self) -> i32 {
            self.value("max_wal_size").as_int()
        }
        /// `log_checkpoints`: whether each checkpoint is logged.
        pub fn log_checkpoints(&self) -> bool {
            self.value("log_checkpoints").as_bool()
        }
        /// `recovery_prefetch`: `off`, `on` or `try`.
        pub fn recovery_prefetch(&self) -> &'static str {
            match self.value("recovery_prefetch").as_text() {
                "on" => "on",
                "off" => "off",
                _ => "try",
            }
        }
        /// `wal_decode_buffer_size`: how far recovery reads ahead in the WAL, in bytes.
        pub fn wal_decode_buffer_size_bytes(&self) -> i32 {
            self.value("wal_decode_buffer_size").as_int()
        }
        /// `debug_io_direct`'s items, lower-cased (`data`, `wal`, `wal_init`).
        pub fn debug_io_direct(&self) -> Vec<String> {
            let text = self.value("debug_io_direct").as_text();
            text.split(',')
                .map(|item| item.trim().to_ascii_lowercase())
                .filter(|item| !item.is_empty())
                .collect()
        }
        /// `huge_pages`: `off`, `on` or `try`.
        pub fn huge_pages(&self) -> &'static str {
            match self.value("huge_pages").as_text() {
                "on" => "on",
                "off" => "off",
                _ => "try",
            }
        }
        /// `log_startup_progress_interval`: how often long start-up work (redo) logs
        /// progress, in ms; 0 = never.
        pub fn log_startup_progress_interval_ms(&self) -> i32 {
            self.value("log_startup_progress_interval").as_int()
        }
        pub fn statement_timeout_ms(&self) -> i32 {
            self.value("statement_timeout").as_int()
        }
        pub fn lock_timeout_ms(&self) -> i32 {
            self.value("lock_timeout").as_int()
        }
        pub fn deadlock_timeout_ms(&self) -> i32 {
            self.value("deadlock_timeout").as_int()
        }
        pub fn max_locks_per_transaction(&self) -> i32 {
            self.value("max_locks_per_transaction").as_int()
        }
        pub fn idle_in_transaction_session_timeout_ms(&self) -> i32 {
            self.value("idle_in_transaction_session_timeout").as_int()
        }
        pub fn idle_session_timeout_ms(&self) -> i32 {
            self.value("idle_session_timeout").as_int()
        }
        pub fn transaction_timeout_ms(&self) -> i32 {
            self.value("transaction_timeout").as_int()
        }
        pub fn read_stream_advice(&self) -> $crate::ReadStreamAdvice {
            match self.value("read_stream_advice").as_text() {
                "pg17" => $crate::ReadStreamAdvice::Pg17,
                "always" => $crate::ReadStreamAdvice::Always,
                "never" => $crate::ReadStreamAdvice::Never,
                _ => $crate::ReadStreamAdvice::Pg18,
            }
        }
        /// `nestloop_prefetch`: a nested loop's inner scans read ahead.
        pub fn nestloop_prefetch(&self) -> bool {
            self.value("nestloop_prefetch").as_bool()
        }
        /// `read_stream_gap_limit`, in 8 kB blocks: 0 = read only the blocks asked for.
        pub fn read_stream_gap_limit(&self) -> i32 {
            self.value("read_stream_gap_limit").as_int()
        }
        /// `read_stream_drop_behind`, in 8 kB blocks: 0 = leave read blocks in the page cache.
        pub fn read_stream_drop_behind(&self) -> i32 {
            self.value("read_stream_drop_behind").as_int()
        }
        /// `search_path` as schema names, quotes removed, `$user` kept literally.
        pub fn search_path(&self) -> Vec<String> {
            $crate::checks::split_identifier_list(self.value("search_path").as_text(), ',', true)
                .unwrap_or_default()
        }
        pub fn extra_float_digits(&self) -> i32 {
            self.value("extra_float_digits").as_int()
        }
        pub fn date_style(&self) -> $crate::DateStyle {
            $crate::DateStyle::from_canonical(self.value("DateStyle").as_text())
        }
        pub fn interval_style(&self) -> $crate::IntervalStyle {
            match self.value("IntervalStyle").as_text() {
                "postgres_verbose" => $crate::IntervalStyle::PostgresVerbose,
                "sql_standard" => $crate::IntervalStyle::SqlStandard,
                "iso_8601" => $crate::IntervalStyle::Iso8601,
                _ => $crate::IntervalStyle::Postgres,
            }
        }
        /// `TimeZone` as SHOW prints it.
        pub fn time_zone(&self) -> String {
            self.value("TimeZone").as_text().to_string()
        }
        /// `client_encoding`: `UTF8` or `SQL_ASCII`.
        pub fn client_encoding(&self) -> String {
            self.value("client_encoding").as_text().to_string()
        }
        pub fn application_name(&self) -> String {
            self.value("application_name").as_text().to_string()
        }
        /// `bytea_output`: `hex` or `escape`.
        pub fn bytea_output(&self) -> &'static str {
            if self.value("bytea_output").as_text() == "escape" {
                "escape"
            } else {
                "hex"
            }
        }
        pub fn standard_conforming_strings(&self) -> bool {
            self.value("standard_conforming_strings").as_bool()
        }
        pub fn default_statistics_target(&self) -> i32 {
            self.value("default_statistics_target").as_int()
        }
        pub fn max_parallel_workers_per_gather(&self) -> i32 {
            self.value("max_parallel_workers_per_gather").as_int()
        }
        pub fn seq_page_cost(&self) -> f64 {
            self.value("seq_page_cost").as_real()
        }
        pub fn random_page_cost(&self) -> f64 {
            self.value("random_page_cost").as_real()
        }
        pub fn cpu_tuple_cost(&self) -> f64 {
            self.value("cpu_tuple_cost").as_real()
        }
        pub fn cpu_index_tuple_cost(&self) -> f64 {
            self.value("cpu_index_tuple_cost").as_real()
        }
        pub fn cpu_operator_cost(&self) -> f64 {
            self.value("cpu_operator_cost").as_real()
        }
        pub fn enable_seqscan(&self) -> bool {
            self.value("enable_seqscan").as_bool()
        }
        pub fn enable_indexscan(&self) -> bool {
            self.value("enable_indexscan").as_bool()
        }
        pub fn enable_indexonlyscan(&self) -> bool {
            self.value("enable_indexonlyscan").as_bool()
        }
        pub fn enable_hashjoin(&self) -> bool {
            self.value("enable_hashjoin").as_bool()
        }
        pub fn enable_mergejoin(&self) -> bool {
            self.value("enable_mergejoin").as_bool()
        }
        pub fn enable_nestloop(&self) -> bool {
            self.value("enable_nestloop").as_bool()
        }
        pub fn enable_sort(&self) -> bool {
            self.value("enable_sort").as_bool()
        }
        pub fn enable_incremental_sort(&self) -> bool {
            self.value("enable_incremental_sort").as_bool()
        }
        pub fn enable_bitmapscan(&self) -> bool {
            self.value("enable_bitmapscan").as_bool()
        }
        pub fn max_connections(&self) -> i32 {
            self.value("max_connections").as_int()
        }
        pub fn port(&self) -> i32 {
            self.value("port").as_int()
        }
        /// `listen_addresses` items (`*`, host names, addresses).
        pub fn listen_addresses(&self) -> Vec<String> {
            let text = self.value("listen_addresses").as_text();
            text.split(',')
                .map(|item| item.trim().to_string())
                .filter(|item| !item.is_empty())
                .collect()
        }
        pub fn data_directory(&self) -> String {
            self.value("data_directory").as_text().to_string()
        }
        pub fn stats_history_interval_ms(&self) -> i32 {
            self.value("stats_history_interval").as_int()
        }
        pub fn stats_history_retention_s(&self) -> i32 {
            self.value("stats_history_retention").as_int()
        }
        /// The Prometheus endpoint's port; 0 = off.
        pub fn metrics_port(&self) -> i32 {
            self.value("metrics_port").as_int()
        }
        pub fn metrics_listen_address(&self) -> String {
            self.value("metrics_listen_address").as_text().to_string()
        }
        /// `transaction_isolation`, e.g. `read committed`.
        pub fn transaction_isolation(&self) -> String {
            self.value("transaction_isolation").as_text().to_string()
        }
        pub fn transaction_read_only(&self) -> bool {
            self.value("transaction_read_only").as_bool()
        }
        pub fn is_superuser(&self) -> bool {
            self.value("is_superuser").as_bool()
        }
        /// `client_min_messages`, e.g. `notice`.
        pub fn client_min_messages(&self) -> String {
            self.value("client_min_messages").as_text().to_string()
        }
        /// Any boolean setting by name; `None` if there is no such boolean setting.
        pub fn bool_value(&self, name: &str) -> Option<bool> {
            let def = $crate::lookup(name)?;
            matches!(def.kind, $crate::SettingKind::Bool).then(|| self.value(def.name).as_bool())
        }
        /// Any integer setting by name, in its base unit.
        pub fn int_value(&self, name: &str) -> Option<i32> {
            let def = $crate::lookup(name)?;
            matches!(def.kind, $crate::SettingKind::Int { .. })
                .then(|| self.value(def.name).as_int())
        }
        /// Any real setting by name, in its base unit.
        pub fn real_value(&self, name: &str) -> Option<f64> {
            let def = $crate::lookup(name)?;
            matches!(def.kind, $crate::SettingKind::Real { .. })
                .then(|| self.value(def.name).as_real())
        }
    };
}
pub(crate) use typed_getters;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_unique_by_lowercase_name() {
        for pair in SETTINGS.windows(2) {
            assert!(
                pair[0].name.to_ascii_lowercase() < pair[1].name.to_ascii_lowercase(),
                "{} must sort before {}",
                pair[0].name,
                pair[1].name
            );
        }
    }

    #[test]
    fn every_boot_value_is_valid() {
        for def in SETTINGS {
            let parsed = value::parse_value(def, def.boot, None);
            assert!(parsed.is_ok(), "{}: {:?}", def.name, parsed);
        }
    }

    #[test]
    fn custom_names_follow_postgres_rules() {
        assert!(is_valid_custom_name("x.y"));
        assert!(is_valid_custom_name("x.y.z"));
        assert!(is_valid_custom_name("my_app.v$1"));
        assert!(!is_valid_custom_name("foo"));
        assert!(!is_valid_custom_name("a-b.c"));
        assert!(!is_valid_custom_name("x..y"));
        assert!(!is_valid_custom_name(".x"));
        assert!(!is_valid_custom_name("x.1y"));
    }
}
