//! [`SessionSettings`]: one connection's values — what `SET`, `SHOW`, `RESET`, `SHOW ALL`,
//! `pg_settings`, `current_setting()` and `set_config()` read and change — with the
//! transaction levels that undo `SET` on rollback and `SET LOCAL` at transaction end (see the
//! crate documentation for the picture).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::config_file::parse_startup_options;
use crate::error::{sqlstate, SettingError};
use crate::server::ServerSettings;
use crate::table::{flags, Context, SettingDef, SettingKind, StringCheck, SETTINGS};
use crate::units::format_g;
use crate::value::{self, Value};
use crate::{is_valid_custom_name, table_index, Assigned, Source};

/// One setting's state in a session.
#[derive(Clone, Debug)]
struct Slot {
    /// The value in effect.
    current: Assigned,
    /// While a `SET LOCAL` masks it: the value the transaction leaves behind if it commits.
    at_commit: Option<Assigned>,
    /// What `RESET` returns to: the server's value, or the client's startup parameter.
    reset: Assigned,
}

impl Slot {
    fn new(assigned: Assigned) -> Slot {
        Slot {
            current: assigned.clone(),
            at_commit: None,
            reset: assigned,
        }
    }
}

/// A custom `x.y` setting (PostgreSQL's "placeholder"): any text, settable by anyone,
/// invisible to `SHOW ALL` and `pg_settings`.
#[derive(Clone, Debug)]
struct Placeholder {
    /// Spelled as first set.
    name: String,
    slot: Slot,
}

/// Names a slot: a row of the table or a placeholder (by lower-cased name).
#[derive(Clone, Debug, PartialEq, Eq)]
enum SlotKey {
    Table(usize),
    Placeholder(String),
}

/// A slot's state before a transaction level first changed it.
#[derive(Clone, Debug)]
struct SavedSlot {
    key: SlotKey,
    current: Assigned,
    at_commit: Option<Assigned>,
}

/// One open transaction level: the transaction itself, or a savepoint inside it.
#[derive(Clone, Debug, Default)]
struct TransactionLevel {
    saved: Vec<SavedSlot>,
}

/// Who is assigning: a statement in the session, or the startup packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Statement,
    Startup,
}

/// One row of `pg_settings`, every column as PostgreSQL 18 shows it (NULL = `None`).
#[derive(Clone, Debug, PartialEq)]
pub struct PgSettingsRow {
    pub name: &'static str,
    pub setting: String,
    pub unit: Option<&'static str>,
    pub category: &'static str,
    pub short_desc: &'static str,
    pub extra_desc: Option<&'static str>,
    pub context: &'static str,
    pub vartype: &'static str,
    pub source: &'static str,
    pub min_val: Option<String>,
    pub max_val: Option<String>,
    pub enumvals: Option<Vec<&'static str>>,
    pub boot_val: Option<String>,
    pub reset_val: Option<String>,
    pub sourcefile: Option<String>,
    pub sourceline: Option<i32>,
    pub pending_restart: bool,
}

/// The settings a transaction starts with, and the defaults they are taken from.
const TRANSACTION_CHARACTERISTICS: [(&str, &str); 3] = [
    ("transaction_isolation", "default_transaction_isolation"),
    ("transaction_read_only", "default_transaction_read_only"),
    ("transaction_deferrable", "default_transaction_deferrable"),
];

/// A connection's settings. Cloning is cheap (the table of values is shared until written),
/// so the engine can take a snapshot per query.
#[derive(Clone, Debug)]
pub struct SessionSettings {
    /// One slot per row of [`SETTINGS`], same order; copied on first write.
    slots: Arc<Vec<Slot>>,
    /// Custom settings, by lower-cased name.
    placeholders: BTreeMap<String, Placeholder>,
    /// Open transaction levels, outermost first; empty outside a transaction.
    levels: Vec<TransactionLevel>,
    /// What was last sent as ParameterStatus, per reported setting (index into SETTINGS).
    reported: Vec<(usize, String)>,
    /// The next `nondefault_since` stamp.
    next_nondefault_stamp: u64,
    /// The user the connection authenticated as.
    session_user: String,
    /// Indexes of the settings whose new file value waits for a restart.
    pending_restart: Arc<BTreeSet<usize>>,
}

impl SessionSettings {
    /// A session starting from the server's values.
    pub fn new(server: &ServerSettings) -> SessionSettings {
        let mut session = SessionSettings {
            slots: Arc::new(server.values.iter().cloned().map(Slot::new).collect()),
            placeholders: server
                .placeholders
                .iter()
                .map(|(key, (name, assigned))| {
                    (
                        key.clone(),
                        Placeholder {
                            name: name.clone(),
                            slot: Slot::new(assigned.clone()),
                        },
                    )
                })
                .collect(),
            levels: Vec::new(),
            reported: Vec::new(),
            next_nondefault_stamp: server.next_nondefault_stamp,
            session_user: String::new(),
            pending_restart: Arc::new(server.pending_restart.clone()),
        };
        // Outside a transaction PostgreSQL shows these with source `override` too.
        session.take_transaction_characteristics_from_defaults();
        session
    }

    /// Takes the server's values after a configuration reload (`pg_reload_conf()`), as a
    /// PostgreSQL backend does between commands: every setting this session did not set
    /// itself (its value, and what RESET returns to, came from a file or a default) takes
    /// the server's, `sighup` ones (which only the server changes) included. Settings fixed
    /// at connection start (contexts `backend`, `superuser-backend`) or server start keep
    /// theirs. Inside a transaction block nothing changes and `false` is returned: the
    /// caller tries again after it.
    pub fn adopt_reloaded(&mut self, server: &ServerSettings) -> bool {
        if self.in_transaction() {
            return false;
        }
        let slots = Arc::make_mut(&mut self.slots);
        for ((def, slot), wanted) in SETTINGS.iter().zip(slots.iter_mut()).zip(&server.values) {
            if !matches!(
                def.context,
                Context::User | Context::Superuser | Context::Sighup
            ) {
                continue;
            }
            if slot.reset.source <= Source::ConfigurationFile {
                slot.reset = wanted.clone();
            }
            if slot.current.source <= Source::ConfigurationFile {
                slot.current = wanted.clone();
            }
        }
        self.pending_restart = Arc::new(server.pending_restart.clone());
        true
    }

    /// Records who logged in: sets `session_authorization` and `is_superuser` (both reported
    /// to the client). Call before [`SessionSettings::parameter_status_all`].
    pub fn set_session_user(&mut self, user: &str, is_superuser: bool) {
        self.session_user = user.to_string();
        for (name, value) in [
            ("session_authorization", Value::Text(user.into())),
            ("is_superuser", Value::Bool(is_superuser)),
        ] {
            let index = table_index(name).expect("login settings are in the table");
            let assigned = self.stamped(index, value, Source::Override);
            let slot = &mut Arc::make_mut(&mut self.slots)[index];
            slot.current = assigned.clone();
            slot.reset = assigned;
        }
    }

    /// Applies a startup packet parameter (`application_name`, `client_encoding`, `DateStyle`,
    /// …, but not `user`, `database`, `options` or `replication`, which are the server's). It
    /// becomes the reset value, with source `client`.
    pub fn apply_startup_parameter(&mut self, name: &str, value: &str) -> Result<(), SettingError> {
        self.assign(name, Some(value), false, Phase::Startup)
            .map(|_| ())
    }

    /// Applies the startup packet's `options` parameter (`-c name=value --name=value`).
    pub fn apply_startup_options(&mut self, options: &str) -> Result<(), SettingError> {
        for (name, value) in parse_startup_options(options)? {
            self.apply_startup_parameter(&name, &value)?;
        }
        Ok(())
    }

    // -------------------------------------------------------------------------------------
    // Reading
    // -------------------------------------------------------------------------------------

    /// `SHOW name` / `current_setting(name)`: the value as SHOW prints it.
    pub fn get(&self, name: &str) -> Result<String, SettingError> {
        self.show(name).map(|(_, value)| value)
    }

    /// `current_setting(name, missing_ok => true)`: `None` for an unknown name.
    pub fn get_if_exists(&self, name: &str) -> Result<Option<String>, SettingError> {
        match self.show(name) {
            Ok((_, value)) => Ok(Some(value)),
            Err(error) if error.sqlstate == sqlstate::UNDEFINED_OBJECT => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// `SHOW name`: the column name (the setting's canonical spelling, `DateStyle`) and value.
    pub fn show(&self, name: &str) -> Result<(String, String), SettingError> {
        if let Some(index) = table_index(name) {
            let def = &SETTINGS[index];
            if def.has(flags::SUPERUSER_ONLY) && !self.is_superuser() {
                return Err(SettingError::permission_denied_to_examine(def.name));
            }
            return Ok((
                def.name.to_string(),
                value::show_value(def, &self.slots[index].current.value),
            ));
        }
        match self.placeholders.get(&name.to_ascii_lowercase()) {
            Some(placeholder) => Ok((
                placeholder.name.clone(),
                placeholder.slot.current.value.as_text().to_string(),
            )),
            None => Err(SettingError::unrecognized(name)),
        }
    }

    /// `SHOW ALL`: name, setting, description; sorted by name ignoring case; without hidden
    /// settings and (for non-superusers) superuser-only ones.
    pub fn show_all(&self) -> Vec<(&'static str, String, &'static str)> {
        let superuser = self.is_superuser();
        SETTINGS
            .iter()
            .zip(self.slots.iter())
            .filter(|(def, _)| {
                !def.has(flags::NO_SHOW_ALL) && (superuser || !def.has(flags::SUPERUSER_ONLY))
            })
            .map(|(def, slot)| {
                (
                    def.name,
                    value::show_value(def, &slot.current.value),
                    def.short_desc,
                )
            })
            .collect()
    }

    /// The rows of `pg_settings`, sorted by name ignoring case. As in PostgreSQL,
    /// non-superusers see neither the superuser-only settings nor `sourcefile`/`sourceline`.
    pub fn pg_settings_rows(&self) -> Vec<PgSettingsRow> {
        let superuser = self.is_superuser();
        SETTINGS
            .iter()
            .zip(self.slots.iter())
            .enumerate()
            .filter(|(_, (def, _))| {
                !def.has(flags::NO_SHOW_ALL) && (superuser || !def.has(flags::SUPERUSER_ONLY))
            })
            .map(|(index, (def, slot))| {
                let (min_val, max_val) = match def.kind {
                    SettingKind::Int { min, max, .. } => {
                        (Some(min.to_string()), Some(max.to_string()))
                    }
                    SettingKind::Real { min, max, .. } => {
                        (Some(format_g(min)), Some(format_g(max)))
                    }
                    _ => (None, None),
                };
                let enumvals = match def.kind {
                    SettingKind::Enum { values, .. } => Some(values.to_vec()),
                    _ => None,
                };
                let location = slot.current.location.as_deref().filter(|_| superuser);
                let shown = |value: &Value| Some(value::setting_column(value));
                PgSettingsRow {
                    name: def.name,
                    setting: value::setting_column(&slot.current.value),
                    unit: def.kind.unit().name(),
                    category: def.category,
                    short_desc: def.short_desc,
                    extra_desc: def.extra_desc,
                    context: def.context.as_str(),
                    vartype: def.kind.vartype(),
                    source: slot.current.source.as_str(),
                    min_val,
                    max_val,
                    enumvals,
                    boot_val: shown(&value::boot_value(def)),
                    reset_val: shown(&slot.reset.value),
                    sourcefile: location.map(|l| l.file.clone()),
                    sourceline: location.map(|l| l.line as i32),
                    pending_restart: self.pending_restart.contains(&index),
                }
            })
            .collect()
    }

    /// `EXPLAIN (SETTINGS)`: the settings flagged for EXPLAIN whose value differs from the boot
    /// value, as (name, SHOW text), in the order they left their defaults — PostgreSQL's
    /// `Settings: work_mem = '8MB', effective_io_concurrency = '32'` line.
    pub fn explain_settings(&self) -> Vec<(&'static str, String)> {
        let mut changed: Vec<(u64, &'static str, String)> = SETTINGS
            .iter()
            .zip(self.slots.iter())
            .filter(|(def, _)| def.has(flags::EXPLAIN) && !def.has(flags::NO_SHOW_ALL))
            .filter(|(def, slot)| slot.current.value != value::boot_value(def))
            .map(|(def, slot)| {
                let stamp = slot.current.nondefault_since.unwrap_or(u64::MAX);
                (stamp, def.name, value::show_value(def, &slot.current.value))
            })
            .collect();
        changed.sort_by_key(|(stamp, _, _)| *stamp);
        changed
            .into_iter()
            .map(|(_, name, value)| (name, value))
            .collect()
    }

    /// The ParameterStatus messages for connection start: every reported setting. Marks them
    /// all as sent.
    pub fn parameter_status_all(&mut self) -> Vec<(&'static str, String)> {
        self.reported.clear();
        self.parameter_status_changes_since_last_report()
    }

    /// The ParameterStatus messages to send now: reported settings whose value differs from
    /// what was last sent. Marks them as sent. Call before each ReadyForQuery.
    pub fn take_parameter_status_changes(&mut self) -> Vec<(&'static str, String)> {
        self.parameter_status_changes_since_last_report()
    }

    fn parameter_status_changes_since_last_report(&mut self) -> Vec<(&'static str, String)> {
        let mut changes = Vec::new();
        for (index, def) in SETTINGS
            .iter()
            .enumerate()
            .filter(|(_, def)| def.has(flags::REPORT))
        {
            let now = value::show_value(def, &self.slots[index].current.value);
            match self
                .reported
                .iter_mut()
                .find(|(reported, _)| *reported == index)
            {
                Some((_, sent)) if *sent == now => continue,
                Some((_, sent)) => *sent = now.clone(),
                None => self.reported.push((index, now.clone())),
            }
            changes.push((def.name, now));
        }
        changes
    }

    // -------------------------------------------------------------------------------------
    // Changing
    // -------------------------------------------------------------------------------------

    /// `SET name = value` (`local` false) or `SET LOCAL name = value` (`local` true). Outside
    /// a transaction `SET LOCAL` has no lasting effect and changes nothing (the server opens a
    /// transaction around every statement, see the crate documentation).
    pub fn set(&mut self, name: &str, value: &str, local: bool) -> Result<(), SettingError> {
        self.assign(name, Some(value), local, Phase::Statement)
            .map(|_| ())
    }

    /// `RESET name` / `SET name TO DEFAULT`: back to the value the session started with.
    pub fn reset(&mut self, name: &str) -> Result<(), SettingError> {
        self.assign(name, None, false, Phase::Statement).map(|_| ())
    }

    /// `set_config(name, value, is_local)`: like SET (a NULL value is RESET), returning the new
    /// value as SHOW prints it.
    pub fn set_config(
        &mut self,
        name: &str,
        value: Option<&str>,
        is_local: bool,
    ) -> Result<String, SettingError> {
        self.assign(name, value, is_local, Phase::Statement)
    }

    /// `RESET ALL`: every setting the session changed and that users may change goes back to
    /// its reset value, except those PostgreSQL exempts (`transaction_isolation`, `role`, …).
    /// Inside a transaction this is undone by a rollback like any SET.
    pub fn reset_all(&mut self) {
        for (index, def) in SETTINGS.iter().enumerate() {
            let resettable = matches!(def.context, Context::User | Context::Superuser)
                && !def.has(flags::NO_RESET_ALL);
            let slot = &self.slots[index];
            if resettable && slot.current.source == Source::Session {
                let reset = slot.reset.clone();
                self.store(SlotKey::Table(index), reset, false);
            }
        }
        let keys: Vec<String> = self.placeholders.keys().cloned().collect();
        for key in keys {
            let placeholder = &self.placeholders[&key];
            if placeholder.slot.current.source == Source::Session {
                let reset = placeholder.slot.reset.clone();
                self.store(SlotKey::Placeholder(key), reset, false);
            }
        }
    }

    /// The common path of SET, RESET, set_config() and startup parameters. `input` `None`
    /// means RESET. Returns the new value as SHOW prints it.
    fn assign(
        &mut self,
        name: &str,
        input: Option<&str>,
        local: bool,
        phase: Phase,
    ) -> Result<String, SettingError> {
        let Some(index) = table_index(name) else {
            return self.assign_placeholder(name, input, local, phase);
        };
        let def = &SETTINGS[index];
        self.check_context(def, phase)?;
        let new = match input {
            None if def.has(flags::NO_RESET) => return Err(SettingError::cannot_reset(def.name)),
            None => self.slots[index].reset.clone(),
            Some(text) => {
                let value = match def.kind {
                    SettingKind::String(StringCheck::Role) => self.check_role(text)?,
                    SettingKind::String(StringCheck::SessionAuthorization) => {
                        self.check_session_authorization(text)?
                    }
                    _ => value::parse_value(def, text, Some(&self.slots[index].current.value))?,
                };
                let source = if phase == Phase::Startup {
                    Source::Client
                } else {
                    Source::Session
                };
                self.stamped(index, value, source)
            }
        };
        let shown = value::show_value(def, &new.value);
        if phase == Phase::Startup {
            let slot = &mut Arc::make_mut(&mut self.slots)[index];
            slot.current = new.clone();
            slot.reset = new;
        } else {
            self.store(SlotKey::Table(index), new, local);
        }
        Ok(shown)
    }

    fn assign_placeholder(
        &mut self,
        name: &str,
        input: Option<&str>,
        local: bool,
        phase: Phase,
    ) -> Result<String, SettingError> {
        if !name.contains('.') {
            return Err(SettingError::unrecognized(name));
        }
        if !is_valid_custom_name(name) {
            return Err(SettingError::invalid_custom_name(name));
        }
        let key = name.to_ascii_lowercase();
        let placeholder = self
            .placeholders
            .entry(key.clone())
            .or_insert_with(|| Placeholder {
                name: name.to_string(),
                slot: Slot::new(Assigned {
                    value: Value::Text("".into()),
                    source: Source::Default,
                    location: None,
                    nondefault_since: None,
                }),
            });
        let new = match input {
            None => placeholder.slot.reset.clone(),
            Some(text) => {
                let source = if phase == Phase::Startup {
                    Source::Client
                } else {
                    Source::Session
                };
                Assigned {
                    value: Value::Text(text.into()),
                    source,
                    location: None,
                    nondefault_since: None,
                }
            }
        };
        let shown = new.value.as_text().to_string();
        if phase == Phase::Startup {
            placeholder.slot.current = new.clone();
            placeholder.slot.reset = new;
        } else {
            self.store(SlotKey::Placeholder(key), new, local);
        }
        Ok(shown)
    }

    /// May this setting be changed now, by this session?
    fn check_context(&self, def: &SettingDef, phase: Phase) -> Result<(), SettingError> {
        let needs_superuser = match (def.context, phase) {
            (Context::Internal, _) => return Err(SettingError::cannot_change(def.name)),
            (Context::Postmaster, _) => return Err(SettingError::needs_restart(def.name)),
            (Context::Sighup, _) => return Err(SettingError::cannot_change_now(def.name)),
            (Context::Backend | Context::SuperuserBackend, Phase::Statement) => {
                return Err(SettingError::only_at_connection_start(def.name))
            }
            (Context::SuperuserBackend | Context::Superuser, _) => true,
            (Context::Backend | Context::User, _) => false,
        };
        if needs_superuser && !self.is_superuser() {
            return Err(SettingError::permission_denied_to_set(def.name));
        }
        Ok(())
    }

    /// `role`: iolab has one role per session, so only `none` or the session's own user.
    fn check_role(&self, input: &str) -> Result<Value, SettingError> {
        if input.eq_ignore_ascii_case("none") {
            return Ok(Value::Text("none".into()));
        }
        self.check_own_user(input)
    }

    /// `session_authorization`: only the session's own user.
    fn check_session_authorization(&self, input: &str) -> Result<Value, SettingError> {
        self.check_own_user(input)
    }

    fn check_own_user(&self, input: &str) -> Result<Value, SettingError> {
        if input == self.session_user {
            return Ok(Value::Text(input.into()));
        }
        Err(SettingError::new(
            sqlstate::FEATURE_NOT_SUPPORTED,
            format!("cannot switch to role \"{input}\""),
        )
        .with_detail(format!(
            "iolab sessions act only as the user that logged in (\"{}\").",
            self.session_user
        )))
    }

    /// Wraps a new value with its source and `nondefault_since` stamp (kept from the value it
    /// replaces if that was already away from its default).
    fn stamped(&mut self, index: usize, value: Value, source: Source) -> Assigned {
        let nondefault_since = match self.slots[index].current.nondefault_since {
            Some(stamp) => Some(stamp),
            None => {
                self.next_nondefault_stamp += 1;
                Some(self.next_nondefault_stamp)
            }
        };
        Assigned {
            value,
            source,
            location: None,
            nondefault_since,
        }
    }

    fn slot_mut(&mut self, key: &SlotKey) -> &mut Slot {
        match key {
            SlotKey::Table(index) => &mut Arc::make_mut(&mut self.slots)[*index],
            SlotKey::Placeholder(name) => {
                &mut self
                    .placeholders
                    .get_mut(name)
                    .expect("placeholders are never removed")
                    .slot
            }
        }
    }

    /// Puts `new` in effect, recording the slot's previous state in the innermost transaction
    /// level the first time that level changes it.
    fn store(&mut self, key: SlotKey, new: Assigned, local: bool) {
        if self.levels.is_empty() {
            if !local {
                let slot = self.slot_mut(&key);
                debug_assert!(
                    slot.at_commit.is_none(),
                    "values are masked only inside transactions"
                );
                slot.current = new;
            }
            return;
        }
        let (current, at_commit) = {
            let slot = self.slot_mut(&key);
            (slot.current.clone(), slot.at_commit.clone())
        };
        let level = self.levels.last_mut().expect("checked non-empty");
        if !level.saved.iter().any(|saved| saved.key == key) {
            level.saved.push(SavedSlot {
                key: key.clone(),
                current,
                at_commit,
            });
        }
        let slot = self.slot_mut(&key);
        if local {
            if slot.at_commit.is_none() {
                slot.at_commit = Some(slot.current.clone());
            }
        } else {
            slot.at_commit = None;
        }
        slot.current = new;
    }

    // -------------------------------------------------------------------------------------
    // Transactions
    // -------------------------------------------------------------------------------------

    /// Whether a transaction is open.
    pub fn in_transaction(&self) -> bool {
        !self.levels.is_empty()
    }

    /// Opens a transaction (explicit `BEGIN` or the implicit one of a single statement).
    /// `transaction_isolation`, `transaction_read_only` and `transaction_deferrable` take the
    /// values of their `default_…` settings, as at the start of every PostgreSQL transaction.
    pub fn begin_transaction(&mut self) {
        debug_assert!(
            self.levels.is_empty(),
            "begin_transaction inside a transaction"
        );
        if !self.levels.is_empty() {
            return;
        }
        self.levels.push(TransactionLevel::default());
        self.take_transaction_characteristics_from_defaults();
    }

    /// COMMIT AND CHAIN (`commit`) or ROLLBACK AND CHAIN: ends the transaction and opens
    /// the next one with the same `transaction_isolation`, `transaction_read_only` and
    /// `transaction_deferrable`.
    pub fn chain_transaction(&mut self, commit: bool) {
        let index = |name| table_index(name).expect("transaction settings are in the table");
        let kept: Vec<_> = (TRANSACTION_CHARACTERISTICS.iter())
            .map(|(current, _)| self.slots[index(current)].current.clone())
            .collect();
        match commit {
            true => self.commit_transaction(),
            false => self.abort_transaction(),
        }
        self.levels.push(TransactionLevel::default());
        for ((current, _), assigned) in TRANSACTION_CHARACTERISTICS.iter().zip(kept) {
            Arc::make_mut(&mut self.slots)[index(current)].current = assigned;
        }
    }

    /// `transaction_isolation`, `transaction_read_only` and `transaction_deferrable` take the
    /// values of their `default_…` settings (not undone by a rollback: it is where the
    /// transaction starts from).
    fn take_transaction_characteristics_from_defaults(&mut self) {
        for (current, default) in TRANSACTION_CHARACTERISTICS {
            let from = table_index(default).expect("transaction defaults are in the table");
            let to = table_index(current).expect("transaction settings are in the table");
            let value = self.slots[from].current.value.clone();
            let assigned = self.stamped(to, value, Source::Override);
            Arc::make_mut(&mut self.slots)[to].current = assigned;
        }
    }

    /// Commits the transaction (and any savepoints still open): `SET` values stay, `SET LOCAL`
    /// values give way to what they masked.
    pub fn commit_transaction(&mut self) {
        while self.levels.len() > 1 {
            self.release_savepoint();
        }
        let Some(level) = self.levels.pop() else {
            return;
        };
        for saved in level.saved {
            let slot = self.slot_mut(&saved.key);
            if let Some(unmasked) = slot.at_commit.take() {
                slot.current = unmasked;
            }
        }
    }

    /// Rolls the transaction back: every setting returns to its value before `BEGIN`.
    pub fn abort_transaction(&mut self) {
        while let Some(level) = self.levels.pop() {
            self.restore(level);
        }
    }

    /// `SAVEPOINT`: opens a nested level.
    pub fn begin_savepoint(&mut self) {
        debug_assert!(!self.levels.is_empty(), "savepoint outside a transaction");
        if !self.levels.is_empty() {
            self.levels.push(TransactionLevel::default());
        }
    }

    /// `RELEASE SAVEPOINT`: the innermost level's changes become the enclosing level's.
    pub fn release_savepoint(&mut self) {
        if self.levels.len() < 2 {
            debug_assert!(false, "release_savepoint without a savepoint");
            return;
        }
        let released = self.levels.pop().expect("checked length");
        let enclosing = self.levels.last_mut().expect("checked length");
        for saved in released.saved {
            if !enclosing.saved.iter().any(|older| older.key == saved.key) {
                enclosing.saved.push(saved);
            }
        }
    }

    /// `ROLLBACK TO SAVEPOINT`: undoes the innermost level's changes; the savepoint stays open.
    pub fn rollback_to_savepoint(&mut self) {
        if self.levels.len() < 2 {
            debug_assert!(false, "rollback_to_savepoint without a savepoint");
            return;
        }
        let level = std::mem::take(self.levels.last_mut().expect("checked length"));
        self.restore(level);
    }

    fn restore(&mut self, level: TransactionLevel) {
        for saved in level.saved.into_iter().rev() {
            let slot = self.slot_mut(&saved.key);
            slot.current = saved.current;
            slot.at_commit = saved.at_commit;
        }
    }

    pub(crate) fn value(&self, name: &str) -> &Value {
        let index =
            table_index(name).unwrap_or_else(|| panic!("{name} is not in the settings table"));
        &self.slots[index].current.value
    }

    /// `session_authorization`: the user the session logged in as.
    pub fn session_authorization(&self) -> String {
        self.value("session_authorization").as_text().to_string()
    }

    crate::typed_getters!();
}
