//! The table of settings: one [`SettingDef`] per setting, sorted by lower-cased name.
//!
//! Every row states PostgreSQL 18's facts for that setting — name spelling, type, boot value,
//! range, unit, context, category, descriptions and flags — as the live PostgreSQL 18.4
//! reference reports them in `pg_settings` and `pg_settings_get_flags()`. iolab's own settings
//! follow the same conventions. `tests/pg18/pg_settings.tsv` holds the reference's answers and
//! `tests/pg18_differential.rs` compares every shared row with it, column by column;
//! `tests/pg18/set_config_cases.tsv` does the same for ~420 inputs and their errors.
//! `is_superuser`, `role` and `session_authorization` are hidden in PostgreSQL (no
//! `pg_settings` row), so their rows follow PostgreSQL's source (`guc_tables.c`) instead.
//!
//! # Where iolab differs from PostgreSQL 18 on purpose
//!
//! * `server_version` is `18.0` and `server_version_num` 180000 (the reference is 18.4 /
//!   180004): iolab claims the major version whose behaviour it follows, not a bug-fix level.
//! * Boot values that PostgreSQL leaves to `initdb` or to the environment are iolab's real
//!   values: `client_encoding` and `server_encoding` boot as `UTF8` (PostgreSQL: `SQL_ASCII`,
//!   replaced at start), `TimeZone` as `UTC` (PostgreSQL: `GMT`, then initdb writes the host's
//!   zone), `lc_messages` as `C` (PostgreSQL: empty = environment), `max_stack_depth` as 2048 kB
//!   (PostgreSQL: 100, then derived from the stack rlimit), `data_checksums` as `on`
//!   (PostgreSQL: boot `off`, then read from the control file; initdb enables checksums by
//!   default in 18).
//! * `jit` is `off`: iolab has no JIT compiler; it still accepts `SET jit = on` so scripts run.
//! * `io_method` also offers `io_uring` (the reference build has no liburing, so its
//!   `enumvals` is `{sync,worker}`).
//! * `lc_collate` and `lc_ctype` are absent, as in PostgreSQL 16 and later (they became
//!   per-database properties); `SHOW lc_collate` fails with 42704 there too.
//! * Locale settings accept only `C`, `POSIX`, `C.UTF-8` and `C.utf8`; `TimeZone` accepts only
//!   UTC and fixed offsets (see `checks.rs`); `client_encoding` only `UTF8` (and its aliases)
//!   and `SQL_ASCII` (no conversion); `role` and `session_authorization` only the session's
//!   own user. iolab has no time zone database, no encoding conversions and one role per
//!   session, so accepting more would be a lie that shows up later in query results.
//! * `huge_pages_status` is `on` when transparent huge pages back the buffer pool, not only
//!   hugetlb pages as in PostgreSQL (which ignores THP): what matters for I/O into the pool
//!   is the page size, not where the pages came from. The server sets it at start, as
//!   PostgreSQL does; it boots as `unknown`.
//! * iolab's own settings: `read_stream_advice`, `read_stream_gap_limit`, `read_stream_drop_behind` and `nestloop_prefetch` (listed by
//!   `EXPLAIN (SETTINGS)` when changed, like the planner settings), `stats_history_interval` (100 ms .. 1 h, 0 = off) and
//!   `stats_history_retention` (1 min .. 1 day), whose ratio bounds the history ring (which
//!   never holds more than 64 MiB), and `metrics_port` / `metrics_listen_address` (the
//!   Prometheus endpoint, off by default, loopback-only by default). The history settings
//!   take effect at start (`postmaster`), since the ring is sized then.
//! * `config_file` and `data_directory` show an empty boot value where PostgreSQL shows NULL.
//! * Where iolab refuses what PostgreSQL would accept (a region time zone, LATIN1), it uses
//!   PostgreSQL's wording for the nearest refusal PostgreSQL has (for encodings, 0A000 with
//!   `Conversion between LATIN1 and UTF8 is not supported.`) and adds a hint saying what
//!   iolab accepts.

use crate::units::Unit;
use crate::units::Unit::*;

/// Who may change a setting, and when (`pg_settings.context`). Ordered from the most
/// restricted to the least, like PostgreSQL's `GucContext`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Context {
    /// Fixed when iolab is built; nobody changes it (`server_version`, `block_size`).
    Internal,
    /// Set in `iolab.conf` or on the command line; a change needs a restart.
    Postmaster,
    /// Set in `iolab.conf` or on the command line; a reload would apply it.
    Sighup,
    /// Settable by superusers at connection start only (startup packet / options).
    SuperuserBackend,
    /// Settable by anyone at connection start only.
    Backend,
    /// Settable by superusers at any time with `SET`.
    Superuser,
    /// Settable by anyone at any time with `SET`.
    User,
}

impl Context {
    /// The spelling in `pg_settings.context`.
    pub fn as_str(self) -> &'static str {
        match self {
            Context::Internal => "internal",
            Context::Postmaster => "postmaster",
            Context::Sighup => "sighup",
            Context::SuperuserBackend => "superuser-backend",
            Context::Backend => "backend",
            Context::Superuser => "superuser",
            Context::User => "user",
        }
    }
}

/// Extra validation for string settings, beyond "any text".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StringCheck {
    /// Any text is accepted and shown as given.
    None,
    /// `ISO, MDY` style: output style and field order, shown canonically.
    DateStyle,
    /// UTC and fixed offsets only; shown as PostgreSQL shows them.
    TimeZone,
    /// UTF8 (and aliases) or SQL_ASCII; shown canonically.
    ClientEncoding,
    /// A comma-separated list of SQL identifiers (`"$user", public`).
    SearchPath,
    /// Non-printable ASCII escaped as `\xNN`, truncated to 63 bytes.
    ApplicationName,
    /// `C`, `POSIX`, `C.UTF-8`, `C.utf8`.
    Locale,
    /// A list of `data`, `wal`, `wal_init`.
    DebugIoDirect,
    /// `none` or the session's own user (checked by the session).
    Role,
    /// The session's own user (checked by the session).
    SessionAuthorization,
}

/// What kind of value a setting holds (`pg_settings.vartype`) and its limits.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SettingKind {
    Bool,
    /// A 32-bit integer stored in `unit` (the base unit: `kB`, `8kB`, `ms`, ...).
    Int {
        min: i32,
        max: i32,
        unit: Unit,
    },
    /// A double stored in `unit`.
    Real {
        min: f64,
        max: f64,
        unit: Unit,
    },
    String(StringCheck),
    /// One of `values` (matched case-insensitively). `aliases` are accepted spellings that
    /// `pg_settings.enumvals` and the error hint do not list, each with the name SHOW prints.
    Enum {
        values: &'static [&'static str],
        aliases: &'static [(&'static str, &'static str)],
    },
}

impl SettingKind {
    /// The spelling in `pg_settings.vartype`.
    pub fn vartype(&self) -> &'static str {
        match self {
            SettingKind::Bool => "bool",
            SettingKind::Int { .. } => "integer",
            SettingKind::Real { .. } => "real",
            SettingKind::String(_) => "string",
            SettingKind::Enum { .. } => "enum",
        }
    }

    /// The base unit values are stored in, if any.
    pub fn unit(&self) -> Unit {
        match *self {
            SettingKind::Int { unit, .. } | SettingKind::Real { unit, .. } => unit,
            _ => NoUnit,
        }
    }
}

/// Flags, as PostgreSQL's `GUC_*` flags of the same names.
pub mod flags {
    /// Sent to the client as ParameterStatus at connection start and whenever it changes.
    pub const REPORT: u16 = 1 << 0;
    /// Listed by `EXPLAIN (SETTINGS)` when it differs from its boot value.
    pub const EXPLAIN: u16 = 1 << 1;
    /// Hidden from `SHOW ALL` and `pg_settings` (but `SHOW name` works).
    pub const NO_SHOW_ALL: u16 = 1 << 2;
    /// `RESET name` is refused.
    pub const NO_RESET: u16 = 1 << 3;
    /// `RESET ALL` leaves it alone.
    pub const NO_RESET_ALL: u16 = 1 << 4;
    /// `SET name = a, b` accepts several values, joined with ", ".
    pub const LIST_INPUT: u16 = 1 << 5;
    /// The list items are SQL identifiers and are quoted when needed (`search_path`).
    pub const LIST_QUOTE: u16 = 1 << 6;
    /// Only superusers may read it.
    pub const SUPERUSER_ONLY: u16 = 1 << 7;
}
use flags::*;

/// One setting: everything `SET`, `SHOW`, `pg_settings` and the config file need to know.
#[derive(Clone, Copy, Debug)]
pub struct SettingDef {
    /// The canonical spelling (`DateStyle`, `work_mem`); lookups ignore case.
    pub name: &'static str,
    pub kind: SettingKind,
    /// The compiled-in value, written as a user would write it (`pg_settings.boot_val`).
    pub boot: &'static str,
    pub context: Context,
    /// `pg_settings.category`, e.g. `Resource Usage / I/O`.
    pub category: &'static str,
    /// `pg_settings.short_desc`, also the third column of `SHOW ALL`.
    pub short_desc: &'static str,
    /// `pg_settings.extra_desc`.
    pub extra_desc: Option<&'static str>,
    /// A union of [`flags`] constants.
    pub flags: u16,
}

impl SettingDef {
    /// Whether this setting carries all of the given [`flags`].
    pub fn has(&self, flag: u16) -> bool {
        self.flags & flag == flag
    }

    const fn extra(mut self, extra_desc: &'static str) -> Self {
        self.extra_desc = Some(extra_desc);
        self
    }

    const fn flags(mut self, flags: u16) -> Self {
        self.flags = flags;
        self
    }
}

const fn setting(
    name: &'static str,
    kind: SettingKind,
    boot: &'static str,
    context: Context,
    category: &'static str,
    short_desc: &'static str,
) -> SettingDef {
    SettingDef {
        name,
        kind,
        boot,
        context,
        category,
        short_desc,
        extra_desc: None,
        flags: 0,
    }
}

/// The hidden spellings PostgreSQL accepts for the on/off members of "boolean-like" enums
/// (`huge_pages`, `constraint_exclusion`, `backslash_quote`, `synchronous_commit`,
/// `recovery_prefetch`).
const BOOLEAN_SPELLINGS: &[(&str, &str)] = &[
    ("true", "on"),
    ("false", "off"),
    ("yes", "on"),
    ("no", "off"),
    ("1", "on"),
    ("0", "off"),
];

use Context::*;
use SettingKind::*;

/// All settings, sorted by lower-cased name (the order of `SHOW ALL` and `pg_settings`).
pub static SETTINGS: &[SettingDef] = &[
    setting("application_name", String(StringCheck::ApplicationName), "", User,
        "Reporting and Logging / What to Log",
        "Sets the application name to be reported in statistics and logs.")
        .flags(REPORT),
    setting("array_nulls", Bool, "on", User,
        "Version and Platform Compatibility / Previous PostgreSQL Versions",
        "Enables input of NULL elements in arrays.")
        .extra("When turned on, unquoted NULL in an array input value means a null value; otherwise it is taken literally."),
    setting("backslash_quote", Enum { values: &["safe_encoding", "on", "off"], aliases: BOOLEAN_SPELLINGS }, "safe_encoding", User,
        "Version and Platform Compatibility / Previous PostgreSQL Versions",
        "Sets whether \"\\'\" is allowed in string literals."),
    setting("bgwriter_delay", Int { min: 10, max: 10000, unit: Milliseconds }, "200", Sighup,
        "Resource Usage / Background Writer",
        "Background writer sleep time between rounds."),
    setting("bgwriter_flush_after", Int { min: 0, max: 256, unit: Blocks }, "64", Sighup,
        "Resource Usage / Background Writer",
        "Number of pages after which previously performed writes are flushed to disk.")
        .extra("0 disables forced writeback."),
    setting("bgwriter_lru_maxpages", Int { min: 0, max: 1073741823, unit: NoUnit }, "100", Sighup,
        "Resource Usage / Background Writer",
        "Background writer maximum number of LRU pages to flush per round.")
        .extra("0 disables background writing."),
    setting("bgwriter_lru_multiplier", Real { min: 0.0, max: 10.0, unit: NoUnit }, "2", Sighup,
        "Resource Usage / Background Writer",
        "Multiple of the average buffer usage to free per round."),
    setting("block_size", Int { min: 8192, max: 8192, unit: NoUnit }, "8192", Internal,
        "Preset Options",
        "Shows the size of a disk block."),
    setting("bytea_output", Enum { values: &["escape", "hex"], aliases: &[] }, "hex", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the output format for bytea."),
    setting("check_function_bodies", Bool, "on", User,
        "Client Connection Defaults / Statement Behavior",
        "Check routine bodies during CREATE FUNCTION and CREATE PROCEDURE."),
    setting("checkpoint_completion_target", Real { min: 0.0, max: 1.0, unit: NoUnit }, "0.9", Sighup,
        "Write-Ahead Log / Checkpoints",
        "Time spent flushing dirty buffers during checkpoint, as fraction of checkpoint interval."),
    setting("checkpoint_flush_after", Int { min: 0, max: 256, unit: Blocks }, "32", Sighup,
        "Write-Ahead Log / Checkpoints",
        "Number of pages after which previously performed writes are flushed to disk.")
        .extra("0 disables forced writeback."),
    setting("checkpoint_timeout", Int { min: 30, max: 86400, unit: Seconds }, "300", Sighup,
        "Write-Ahead Log / Checkpoints",
        "Sets the maximum time between automatic WAL checkpoints."),
    setting("client_encoding", String(StringCheck::ClientEncoding), "UTF8", User,
        "Client Connection Defaults / Locale and Formatting",
        "Sets the client's character set encoding.")
        .flags(REPORT),
    setting("client_min_messages", Enum { values: &["debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"], aliases: &[("debug", "debug2"), ("info", "info")] }, "notice", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the message levels that are sent to the client.")
        .extra("Each level includes all the levels that follow it. The later the level, the fewer messages are sent."),
    setting("cluster_name", String(StringCheck::None), "", Postmaster,
        "Reporting and Logging / Process Title",
        "Sets the name of the cluster, which is included in the process title."),
    setting("config_file", String(StringCheck::None), "", Postmaster,
        "File Locations",
        "Sets the server's main configuration file.")
        .flags(SUPERUSER_ONLY),
    setting("constraint_exclusion", Enum { values: &["partition", "on", "off"], aliases: BOOLEAN_SPELLINGS }, "partition", User,
        "Query Tuning / Other Planner Options",
        "Enables the planner to use constraints to optimize queries.")
        .extra("Table scans will be skipped if their constraints guarantee that no rows match the query.")
        .flags(EXPLAIN),
    setting("cpu_index_tuple_cost", Real { min: 0.0, max: f64::MAX, unit: NoUnit }, "0.005", User,
        "Query Tuning / Planner Cost Constants",
        "Sets the planner's estimate of the cost of processing each index entry during an index scan.")
        .flags(EXPLAIN),
    setting("cpu_operator_cost", Real { min: 0.0, max: f64::MAX, unit: NoUnit }, "0.0025", User,
        "Query Tuning / Planner Cost Constants",
        "Sets the planner's estimate of the cost of processing each operator or function call.")
        .flags(EXPLAIN),
    setting("cpu_tuple_cost", Real { min: 0.0, max: f64::MAX, unit: NoUnit }, "0.01", User,
        "Query Tuning / Planner Cost Constants",
        "Sets the planner's estimate of the cost of processing each tuple (row).")
        .flags(EXPLAIN),
    setting("cursor_tuple_fraction", Real { min: 0.0, max: 1.0, unit: NoUnit }, "0.1", User,
        "Query Tuning / Other Planner Options",
        "Sets the planner's estimate of the fraction of a cursor's rows that will be retrieved.")
        .flags(EXPLAIN),
    setting("data_checksums", Bool, "on", Internal,
        "Preset Options",
        "Shows whether data checksums are turned on for this cluster."),
    setting("data_directory", String(StringCheck::None), "", Postmaster,
        "File Locations",
        "Sets the server's data directory.")
        .flags(SUPERUSER_ONLY),
    setting("DateStyle", String(StringCheck::DateStyle), "ISO, MDY", User,
        "Client Connection Defaults / Locale and Formatting",
        "Sets the display format for date and time values.")
        .extra("Also controls interpretation of ambiguous date inputs.")
        .flags(LIST_INPUT | REPORT),
    setting("deadlock_timeout", Int { min: 1, max: 2147483647, unit: Milliseconds }, "1000", Superuser,
        "Lock Management",
        "Sets the time to wait on a lock before checking for deadlock."),
    setting("debug_io_direct", String(StringCheck::DebugIoDirect), "", Postmaster,
        "Developer Options",
        "Use direct I/O for file access.")
        .extra("An empty string disables direct I/O.")
        .flags(LIST_INPUT),
    setting("default_statistics_target", Int { min: 1, max: 10000, unit: NoUnit }, "100", User,
        "Query Tuning / Other Planner Options",
        "Sets the default statistics target.")
        .extra("This applies to table columns that have not had a column-specific target set via ALTER TABLE SET STATISTICS."),
    setting("default_transaction_deferrable", Bool, "off", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the default deferrable status of new transactions."),
    setting("default_transaction_isolation", Enum { values: &["serializable", "repeatable read", "read committed", "read uncommitted"], aliases: &[] }, "read committed", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the transaction isolation level of each new transaction."),
    setting("default_transaction_read_only", Bool, "off", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the default read-only status of new transactions.")
        .flags(REPORT),
    setting("effective_cache_size", Int { min: 1, max: 2147483647, unit: Blocks }, "524288", User,
        "Query Tuning / Planner Cost Constants",
        "Sets the planner's assumption about the total size of the data caches.")
        .extra("That is, the total size of the caches (kernel cache and shared buffers) used for PostgreSQL data files. This is measured in disk pages, which are normally 8 kB each.")
        .flags(EXPLAIN),
    setting("effective_io_concurrency", Int { min: 0, max: 1000, unit: NoUnit }, "16", User,
        "Resource Usage / I/O",
        "Number of simultaneous requests that can be handled efficiently by the disk subsystem.")
        .extra("0 disables simultaneous requests.")
        .flags(EXPLAIN),
    setting("enable_bitmapscan", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of bitmap-scan plans.")
        .flags(EXPLAIN),
    setting("enable_hashagg", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of hashed aggregation plans.")
        .flags(EXPLAIN),
    setting("enable_hashjoin", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of hash join plans.")
        .flags(EXPLAIN),
    setting("enable_incremental_sort", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of incremental sort steps.")
        .flags(EXPLAIN),
    setting("enable_indexonlyscan", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of index-only-scan plans.")
        .flags(EXPLAIN),
    setting("enable_indexscan", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of index-scan plans.")
        .flags(EXPLAIN),
    setting("enable_material", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of materialization.")
        .flags(EXPLAIN),
    setting("enable_mergejoin", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of merge join plans.")
        .flags(EXPLAIN),
    setting("enable_nestloop", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of nested-loop join plans.")
        .flags(EXPLAIN),
    setting("enable_partition_pruning", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables plan-time and execution-time partition pruning.")
        .extra("Allows the query planner and executor to compare partition bounds to conditions in the query to determine which partitions must be scanned.")
        .flags(EXPLAIN),
    setting("enable_seqscan", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of sequential-scan plans.")
        .flags(EXPLAIN),
    setting("enable_sort", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of explicit sort steps.")
        .flags(EXPLAIN),
    setting("enable_tidscan", Bool, "on", User,
        "Query Tuning / Planner Method Configuration",
        "Enables the planner's use of TID scan plans.")
        .flags(EXPLAIN),
    setting("escape_string_warning", Bool, "on", User,
        "Version and Platform Compatibility / Previous PostgreSQL Versions",
        "Warn about backslash escapes in ordinary string literals."),
    setting("extra_float_digits", Int { min: -15, max: 3, unit: NoUnit }, "1", User,
        "Client Connection Defaults / Locale and Formatting",
        "Sets the number of digits displayed for floating-point values.")
        .extra("This affects real, double precision, and geometric data types. A zero or negative parameter value is added to the standard number of digits (FLT_DIG or DBL_DIG as appropriate). Any value greater than zero selects precise output mode."),
    setting("from_collapse_limit", Int { min: 1, max: 2147483647, unit: NoUnit }, "8", User,
        "Query Tuning / Other Planner Options",
        "Sets the FROM-list size beyond which subqueries are not collapsed.")
        .extra("The planner will merge subqueries into upper queries if the resulting FROM list would have no more than this many items.")
        .flags(EXPLAIN),
    setting("fsync", Bool, "on", Sighup,
        "Write-Ahead Log / Settings",
        "Forces synchronization of updates to disk.")
        .extra("The server will use the fsync() system call in several places to make sure that updates are physically written to disk. This ensures that a database cluster will recover to a consistent state after an operating system or hardware crash."),
    setting("full_page_writes", Bool, "on", Sighup,
        "Write-Ahead Log / Settings",
        "Writes full pages to WAL when first modified after a checkpoint.")
        .extra("A page write in process during an operating system crash might be only partially written to disk.  During recovery, the row changes stored in WAL are not enough to recover.  This option writes pages when first modified after a checkpoint to WAL so full recovery is possible."),
    setting("hash_mem_multiplier", Real { min: 1.0, max: 1000.0, unit: NoUnit }, "2", User,
        "Resource Usage / Memory",
        "Multiple of \"work_mem\" to use for hash tables.")
        .flags(EXPLAIN),
    setting("huge_pages", Enum { values: &["off", "on", "try"], aliases: BOOLEAN_SPELLINGS }, "try", Postmaster,
        "Resource Usage / Memory",
        "Use of huge pages on Linux or Windows."),
    setting("huge_pages_status", Enum { values: &["off", "on", "unknown"], aliases: &[] }, "unknown", Internal,
        "Preset Options",
        "Indicates the status of huge pages."),
    setting("idle_in_transaction_session_timeout", Int { min: 0, max: 2147483647, unit: Milliseconds }, "0", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the maximum allowed idle time between queries, when in a transaction.")
        .extra("0 disables the timeout."),
    setting("idle_session_timeout", Int { min: 0, max: 2147483647, unit: Milliseconds }, "0", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the maximum allowed idle time between queries, when not in a transaction.")
        .extra("0 disables the timeout."),
    setting("in_hot_standby", Bool, "off", Internal,
        "Preset Options",
        "Shows whether hot standby is currently active.")
        .flags(REPORT),
    setting("integer_datetimes", Bool, "on", Internal,
        "Preset Options",
        "Shows whether datetimes are integer based.")
        .flags(REPORT),
    setting("IntervalStyle", Enum { values: &["postgres", "postgres_verbose", "sql_standard", "iso_8601"], aliases: &[] }, "postgres", User,
        "Client Connection Defaults / Locale and Formatting",
        "Sets the display format for interval values.")
        .flags(REPORT),
    setting("io_combine_limit", Int { min: 1, max: 128, unit: Blocks }, "16", User,
        "Resource Usage / I/O",
        "Limit on the size of data reads and writes."),
    setting("io_max_combine_limit", Int { min: 1, max: 128, unit: Blocks }, "16", Postmaster,
        "Resource Usage / I/O",
        "Server-wide limit that clamps io_combine_limit."),
    setting("io_max_concurrency", Int { min: -1, max: 1024, unit: NoUnit }, "-1", Postmaster,
        "Resource Usage / I/O",
        "Max number of IOs that one process can execute simultaneously."),
    setting("io_method", Enum { values: &["sync", "worker", "io_uring"], aliases: &[] }, "worker", Postmaster,
        "Resource Usage / I/O",
        "Selects the method for executing asynchronous I/O."),
    setting("io_workers", Int { min: 1, max: 32, unit: NoUnit }, "3", Sighup,
        "Resource Usage / I/O",
        "Number of IO worker processes, for io_method=worker."),
    setting("is_superuser", Bool, "off", Internal,
        "Ungrouped",
        "Shows whether the current user is a superuser.")
        .flags(REPORT | NO_SHOW_ALL | NO_RESET_ALL),
    setting("jit", Bool, "off", User,
        "Query Tuning / Other Planner Options",
        "Allow JIT compilation.")
        .flags(EXPLAIN),
    setting("join_collapse_limit", Int { min: 1, max: 2147483647, unit: NoUnit }, "8", User,
        "Query Tuning / Other Planner Options",
        "Sets the FROM-list size beyond which JOIN constructs are not flattened.")
        .extra("The planner will flatten explicit JOIN constructs into lists of FROM items whenever a list of no more than this many items would result.")
        .flags(EXPLAIN),
    setting("lc_messages", String(StringCheck::Locale), "C", Superuser,
        "Client Connection Defaults / Locale and Formatting",
        "Sets the language in which messages are displayed.")
        .extra("An empty string means use the operating system setting."),
    setting("lc_monetary", String(StringCheck::Locale), "C", User,
        "Client Connection Defaults / Locale and Formatting",
        "Sets the locale for formatting monetary amounts.")
        .extra("An empty string means use the operating system setting."),
    setting("lc_numeric", String(StringCheck::Locale), "C", User,
        "Client Connection Defaults / Locale and Formatting",
        "Sets the locale for formatting numbers.")
        .extra("An empty string means use the operating system setting."),
    setting("lc_time", String(StringCheck::Locale), "C", User,
        "Client Connection Defaults / Locale and Formatting",
        "Sets the locale for formatting date and time values.")
        .extra("An empty string means use the operating system setting."),
    setting("listen_addresses", String(StringCheck::None), "localhost", Postmaster,
        "Connections and Authentication / Connection Settings",
        "Sets the host name or IP address(es) to listen to.")
        .flags(LIST_INPUT),
    setting("lock_timeout", Int { min: 0, max: 2147483647, unit: Milliseconds }, "0", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the maximum allowed duration of any wait for a lock.")
        .extra("0 disables the timeout."),
    setting("log_checkpoints", Bool, "on", Sighup,
        "Reporting and Logging / What to Log",
        "Logs each checkpoint."),
    setting("log_min_messages", Enum { values: &["debug5", "debug4", "debug3", "debug2", "debug1", "info", "notice", "warning", "error", "log", "fatal", "panic"], aliases: &[("debug", "debug2")] }, "warning", Superuser,
        "Reporting and Logging / When to Log",
        "Sets the message levels that are logged.")
        .extra("Each level includes all the levels that follow it. The later the level, the fewer messages are sent."),
    setting("log_startup_progress_interval", Int { min: 0, max: 2147483647, unit: Milliseconds }, "10000", Sighup,
        "Reporting and Logging / When to Log",
        "Time between progress updates for long-running startup operations.")
        .extra("0 disables progress updates."),
    setting("log_temp_files", Int { min: -1, max: 2147483647, unit: Kilobytes }, "-1", Superuser,
        "Reporting and Logging / What to Log",
        "Log the use of temporary files larger than this number of kilobytes.")
        .extra("-1 disables logging temporary files. 0 means log all temporary files."),
    setting("maintenance_io_concurrency", Int { min: 0, max: 1000, unit: NoUnit }, "16", User,
        "Resource Usage / I/O",
        "A variant of \"effective_io_concurrency\" that is used for maintenance work.")
        .extra("0 disables simultaneous requests.")
        .flags(EXPLAIN),
    setting("maintenance_work_mem", Int { min: 64, max: 2147483647, unit: Kilobytes }, "65536", User,
        "Resource Usage / Memory",
        "Sets the maximum memory to be used for maintenance operations.")
        .extra("This includes operations such as VACUUM and CREATE INDEX."),
    setting("max_connections", Int { min: 1, max: 262143, unit: NoUnit }, "100", Postmaster,
        "Connections and Authentication / Connection Settings",
        "Sets the maximum number of concurrent connections."),
    setting("max_function_args", Int { min: 100, max: 100, unit: NoUnit }, "100", Internal,
        "Preset Options",
        "Shows the maximum number of function arguments."),
    setting("max_identifier_length", Int { min: 63, max: 63, unit: NoUnit }, "63", Internal,
        "Preset Options",
        "Shows the maximum identifier length."),
    setting("max_index_keys", Int { min: 32, max: 32, unit: NoUnit }, "32", Internal,
        "Preset Options",
        "Shows the maximum number of index keys."),
    setting("max_locks_per_transaction", Int { min: 10, max: 2147483647, unit: NoUnit }, "64", Postmaster,
        "Lock Management",
        "Sets the maximum number of locks per transaction.")
        .extra("The shared lock table is sized on the assumption that at most \"max_locks_per_transaction\" objects per server process or prepared transaction will need to be locked at any one time."),
    setting("max_parallel_workers", Int { min: 0, max: 1024, unit: NoUnit }, "8", User,
        "Resource Usage / Worker Processes",
        "Sets the maximum number of parallel workers that can be active at one time.")
        .flags(EXPLAIN),
    setting("max_parallel_workers_per_gather", Int { min: 0, max: 1024, unit: NoUnit }, "2", User,
        "Resource Usage / Worker Processes",
        "Sets the maximum number of parallel processes per executor node.")
        .flags(EXPLAIN),
    setting("max_stack_depth", Int { min: 100, max: 2147483647, unit: Kilobytes }, "2048", Superuser,
        "Resource Usage / Memory",
        "Sets the maximum stack depth, in kilobytes."),
    setting("max_wal_size", Int { min: 2, max: 2147483647, unit: Megabytes }, "1024", Sighup,
        "Write-Ahead Log / Checkpoints",
        "Sets the WAL size that triggers a checkpoint."),
    setting("metrics_listen_address", String(StringCheck::None), "127.0.0.1", Postmaster,
        "Statistics / Monitoring",
        "Sets the IP address the Prometheus /metrics endpoint listens on.")
        .extra("Loopback by default; see metrics_port."),
    setting("metrics_port", Int { min: 0, max: 65535, unit: NoUnit }, "0", Postmaster,
        "Statistics / Monitoring",
        "Sets the TCP port of the Prometheus /metrics endpoint.")
        .extra("0 disables the endpoint."),
    setting("min_parallel_index_scan_size", Int { min: 0, max: 715827882, unit: Blocks }, "64", User,
        "Query Tuning / Planner Cost Constants",
        "Sets the minimum amount of index data for a parallel scan.")
        .extra("If the planner estimates that it will read a number of index pages too small to reach this limit, a parallel scan will not be considered.")
        .flags(EXPLAIN),
    setting("min_parallel_table_scan_size", Int { min: 0, max: 715827882, unit: Blocks }, "1024", User,
        "Query Tuning / Planner Cost Constants",
        "Sets the minimum amount of table data for a parallel scan.")
        .extra("If the planner estimates that it will read a number of table pages too small to reach this limit, a parallel scan will not be considered.")
        .flags(EXPLAIN),
    setting("min_wal_size", Int { min: 2, max: 2147483647, unit: Megabytes }, "80", Sighup,
        "Write-Ahead Log / Checkpoints",
        "Sets the minimum size to shrink the WAL to."),
    setting("nestloop_prefetch", Bool, "on", User,
        "Resource Usage / I/O",
        "Reads the inner index scans of a nested loop ahead through read streams.")
        .extra("For a chunk of outer rows at a time, the first leaves of their index scans, then the heap pages of the rows found, as far ahead as effective_io_concurrency allows. off (or effective_io_concurrency 0) runs one scan at a time, reading each page when it needs it, as PostgreSQL 18 does.")
        .flags(EXPLAIN),
    setting("parallel_setup_cost", Real { min: 0.0, max: f64::MAX, unit: NoUnit }, "1000", User,
        "Query Tuning / Planner Cost Constants",
        "Sets the planner's estimate of the cost of starting up worker processes for parallel query.")
        .flags(EXPLAIN),
    setting("parallel_tuple_cost", Real { min: 0.0, max: f64::MAX, unit: NoUnit }, "0.1", User,
        "Query Tuning / Planner Cost Constants",
        "Sets the planner's estimate of the cost of passing each tuple (row) from worker to leader backend.")
        .flags(EXPLAIN),
    setting("password_encryption", Enum { values: &["md5", "scram-sha-256"], aliases: &[] }, "scram-sha-256", User,
        "Connections and Authentication / Authentication",
        "Chooses the algorithm for encrypting passwords."),
    setting("plan_cache_mode", Enum { values: &["auto", "force_generic_plan", "force_custom_plan"], aliases: &[] }, "auto", User,
        "Query Tuning / Other Planner Options",
        "Controls the planner's selection of custom or generic plan.")
        .extra("Prepared statements can have custom and generic plans, and the planner will attempt to choose which is better.  This can be set to override the default behavior.")
        .flags(EXPLAIN),
    setting("port", Int { min: 1, max: 65535, unit: NoUnit }, "5432", Postmaster,
        "Connections and Authentication / Connection Settings",
        "Sets the TCP port the server listens on."),
    setting("random_page_cost", Real { min: 0.0, max: f64::MAX, unit: NoUnit }, "4", User,
        "Query Tuning / Planner Cost Constants",
        "Sets the planner's estimate of the cost of a nonsequentially fetched disk page.")
        .flags(EXPLAIN),
    setting("read_stream_advice", Enum { values: &["pg17", "pg18", "always", "never"], aliases: &[] }, "pg18", User,
        "Resource Usage / I/O",
        "Chooses when the read stream issues prefetch advice.")
        .extra("pg17 advises only reads that do not continue a sequential run, as PostgreSQL 17 did; pg18 keeps advising until the reads catch up with the advised region, as PostgreSQL 18 does with io_method=sync; always advises every read that misses the buffer pool; never issues no advice.")
        .flags(EXPLAIN),
    setting("read_stream_drop_behind", Int { min: 0, max: 131072, unit: Blocks }, "0", User,
        "Resource Usage / I/O",
        "Sets the number of blocks a read stream consumes before it drops them from the operating system's page cache.")
        .extra("0 leaves the blocks read into the buffer pool in the page cache, as PostgreSQL does. With N > 0, a stream that moves forward through a buffered relation (Seq Scan, Bitmap Heap Scan, ANALYZE, VACUUM) calls posix_fadvise(POSIX_FADV_DONTNEED) on every N blocks it has consumed, so that a large scan neither fills the page cache nor evicts others from it; a later scan reads those blocks from the device again.")
        .flags(EXPLAIN),
    setting("read_stream_gap_limit", Int { min: 0, max: 128, unit: Blocks }, "0", User,
        "Resource Usage / I/O",
        "Sets the largest run of unrequested blocks a read stream reads through to combine two reads into one.")
        .extra("0 reads only the blocks asked for, as PostgreSQL does. With N > 0, a gap of up to N blocks between two requested blocks is read too, if the combined read stays within io_combine_limit; the unrequested blocks enter the buffer pool and are counted as reads.")
        .flags(EXPLAIN),
    setting("recovery_prefetch", Enum { values: &["off", "on", "try"], aliases: BOOLEAN_SPELLINGS }, "try", Sighup,
        "Write-Ahead Log / Recovery",
        "Prefetch referenced blocks during recovery.")
        .extra("Look ahead in the WAL to find references to uncached data."),
    setting("role", String(StringCheck::Role), "none", User,
        "Ungrouped",
        "Sets the current role.")
        .flags(NO_SHOW_ALL | NO_RESET_ALL),
    setting("scram_iterations", Int { min: 1, max: 2147483647, unit: NoUnit }, "4096", User,
        "Connections and Authentication / Authentication",
        "Sets the iteration count for SCRAM secret generation.")
        .flags(REPORT),
    setting("search_path", String(StringCheck::SearchPath), "\"$user\", public", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the schema search order for names that are not schema-qualified.")
        .flags(EXPLAIN | LIST_INPUT | LIST_QUOTE | REPORT),
    setting("segment_size", Int { min: 131072, max: 131072, unit: Blocks }, "131072", Internal,
        "Preset Options",
        "Shows the number of pages per disk file."),
    setting("seq_page_cost", Real { min: 0.0, max: f64::MAX, unit: NoUnit }, "1", User,
        "Query Tuning / Planner Cost Constants",
        "Sets the planner's estimate of the cost of a sequentially fetched disk page.")
        .flags(EXPLAIN),
    setting("server_encoding", String(StringCheck::None), "UTF8", Internal,
        "Preset Options",
        "Shows the server (database) character set encoding.")
        .flags(REPORT),
    setting("server_version", String(StringCheck::None), "18.0", Internal,
        "Preset Options",
        "Shows the server version.")
        .flags(REPORT),
    setting("server_version_num", Int { min: 180000, max: 180000, unit: NoUnit }, "180000", Internal,
        "Preset Options",
        "Shows the server version as an integer."),
    setting("session_authorization", String(StringCheck::SessionAuthorization), "", User,
        "Ungrouped",
        "Sets the session user name.")
        .flags(REPORT | NO_SHOW_ALL | NO_RESET_ALL),
    setting("shared_buffers", Int { min: 16, max: 1073741823, unit: Blocks }, "16384", Postmaster,
        "Resource Usage / Memory",
        "Sets the number of shared memory buffers used by the server."),
    setting("ssl", Bool, "off", Sighup,
        "Connections and Authentication / SSL",
        "Enables SSL connections."),
    setting("standard_conforming_strings", Bool, "on", User,
        "Version and Platform Compatibility / Previous PostgreSQL Versions",
        "Causes '...' strings to treat backslashes literally.")
        .flags(REPORT),
    setting("statement_timeout", Int { min: 0, max: 2147483647, unit: Milliseconds }, "0", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the maximum allowed duration of any statement.")
        .extra("0 disables the timeout."),
    setting("stats_history_interval", Int { min: 0, max: 3600000, unit: Milliseconds }, "1000", Postmaster,
        "Statistics / Monitoring",
        "Sets the interval between snapshots of the I/O statistics kept for history views.")
        .extra("0 turns the sampler and the history off. Each snapshot adds one row per statistics key with I/O in the interval; see stats_history_retention."),
    setting("stats_history_retention", Int { min: 60, max: 86400, unit: Seconds }, "3600", Postmaster,
        "Statistics / Monitoring",
        "Sets how long snapshots of the I/O statistics are kept for history views.")
        .extra("Together with stats_history_interval this bounds the history ring: at most retention / interval snapshots are kept."),
    setting("synchronize_seqscans", Bool, "on", User,
        "Version and Platform Compatibility / Previous PostgreSQL Versions",
        "Enables synchronized sequential scans."),
    setting("synchronous_commit", Enum { values: &["local", "remote_write", "remote_apply", "on", "off"], aliases: BOOLEAN_SPELLINGS }, "on", User,
        "Write-Ahead Log / Settings",
        "Sets the current transaction's synchronization level."),
    setting("temp_buffers", Int { min: 100, max: 1073741823, unit: Blocks }, "1024", User,
        "Resource Usage / Memory",
        "Sets the maximum number of temporary buffers used by each session.")
        .flags(EXPLAIN),
    setting("temp_file_limit", Int { min: -1, max: 2147483647, unit: Kilobytes }, "-1", Superuser,
        "Resource Usage / Disk",
        "Limits the total size of all temporary files used by each process.")
        .extra("-1 means no limit."),
    setting("TimeZone", String(StringCheck::TimeZone), "UTC", User,
        "Client Connection Defaults / Locale and Formatting",
        "Sets the time zone for displaying and interpreting time stamps.")
        .flags(REPORT),
    setting("track_cost_delay_timing", Bool, "off", Superuser,
        "Statistics / Cumulative Query and Index Statistics",
        "Collects timing statistics for cost-based vacuum delay."),
    setting("track_counts", Bool, "on", Superuser,
        "Statistics / Cumulative Query and Index Statistics",
        "Collects statistics on database activity."),
    setting("track_io_timing", Bool, "off", Superuser,
        "Statistics / Cumulative Query and Index Statistics",
        "Collects timing statistics for database I/O activity."),
    setting("track_wal_io_timing", Bool, "off", Superuser,
        "Statistics / Cumulative Query and Index Statistics",
        "Collects timing statistics for WAL I/O activity."),
    setting("transaction_deferrable", Bool, "off", User,
        "Client Connection Defaults / Statement Behavior",
        "Whether to defer a read-only serializable transaction until it can be executed with no possible serialization failures.")
        .flags(NO_RESET | NO_RESET_ALL),
    setting("transaction_isolation", Enum { values: &["serializable", "repeatable read", "read committed", "read uncommitted"], aliases: &[] }, "read committed", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the current transaction's isolation level.")
        .flags(NO_RESET | NO_RESET_ALL),
    setting("transaction_read_only", Bool, "off", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the current transaction's read-only status.")
        .flags(NO_RESET | NO_RESET_ALL),
    setting("transaction_timeout", Int { min: 0, max: 2147483647, unit: Milliseconds }, "0", User,
        "Client Connection Defaults / Statement Behavior",
        "Sets the maximum allowed duration of any transaction within a session (not a prepared transaction).")
        .extra("0 disables the timeout."),
    setting("vacuum_buffer_usage_limit", Int { min: 0, max: 16777216, unit: Kilobytes }, "2048", User,
        "Resource Usage / Memory",
        "Sets the buffer pool size for VACUUM, ANALYZE, and autovacuum."),
    setting("vacuum_cost_delay", Real { min: 0.0, max: 100.0, unit: Milliseconds }, "0", User,
        "Vacuuming / Cost-Based Vacuum Delay",
        "Vacuum cost delay in milliseconds."),
    setting("vacuum_cost_limit", Int { min: 1, max: 10000, unit: NoUnit }, "200", User,
        "Vacuuming / Cost-Based Vacuum Delay",
        "Vacuum cost amount available before napping."),
    setting("vacuum_cost_page_dirty", Int { min: 0, max: 10000, unit: NoUnit }, "20", User,
        "Vacuuming / Cost-Based Vacuum Delay",
        "Vacuum cost for a page dirtied by vacuum."),
    setting("vacuum_cost_page_hit", Int { min: 0, max: 10000, unit: NoUnit }, "1", User,
        "Vacuuming / Cost-Based Vacuum Delay",
        "Vacuum cost for a page found in the buffer cache."),
    setting("vacuum_cost_page_miss", Int { min: 0, max: 10000, unit: NoUnit }, "2", User,
        "Vacuuming / Cost-Based Vacuum Delay",
        "Vacuum cost for a page not found in the buffer cache."),
    setting("wal_block_size", Int { min: 8192, max: 8192, unit: NoUnit }, "8192", Internal,
        "Preset Options",
        "Shows the block size in the write ahead log."),
    setting("wal_buffers", Int { min: -1, max: 262143, unit: Blocks }, "-1", Postmaster,
        "Write-Ahead Log / Settings",
        "Sets the number of disk-page buffers in shared memory for WAL.")
        .extra("-1 means use a fraction of \"shared_buffers\"."),
    setting("wal_decode_buffer_size", Int { min: 65536, max: 1073741823, unit: Bytes }, "524288", Postmaster,
        "Write-Ahead Log / Recovery",
        "Buffer size for reading ahead in the WAL during recovery.")
        .extra("Maximum distance to read ahead in the WAL to prefetch referenced data blocks."),
    setting("wal_init_zero", Bool, "on", Superuser,
        "Write-Ahead Log / Settings",
        "Writes zeroes to new WAL files before first use."),
    setting("wal_level", Enum { values: &["minimal", "replica", "logical"], aliases: &[("archive", "replica"), ("hot_standby", "replica")] }, "replica", Postmaster,
        "Write-Ahead Log / Settings",
        "Sets the level of information written to the WAL."),
    setting("wal_recycle", Bool, "on", Superuser,
        "Write-Ahead Log / Settings",
        "Recycles WAL files by renaming them."),
    setting("wal_segment_size", Int { min: 1048576, max: 1073741824, unit: Bytes }, "16777216", Internal,
        "Preset Options",
        "Shows the size of write ahead log segments."),
    setting("wal_writer_delay", Int { min: 1, max: 10000, unit: Milliseconds }, "200", Sighup,
        "Write-Ahead Log / Settings",
        "Time between WAL flushes performed in the WAL writer."),
    setting("work_mem", Int { min: 64, max: 2147483647, unit: Kilobytes }, "4096", User,
        "Resource Usage / Memory",
        "Sets the maximum memory to be used for query workspaces.")
        .extra("This much memory can be used by each internal sort operation and hash table before switching to temporary disk files.")
        .flags(EXPLAIN),
    setting("zero_damaged_pages", Bool, "off", Superuser,
        "Developer Options",
        "Continues processing past damaged page headers.")
        .extra("Detection of a damaged page header normally causes PostgreSQL to report an error, aborting the current transaction. Setting \"zero_damaged_pages\" to true causes the system to instead report a warning, zero out the damaged page, and continue processing. This behavior will destroy data, namely all the rows on the damaged page."),
];
