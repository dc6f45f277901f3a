//! [`ServerSettings`]: the values fixed when the server starts — boot values, then
//! `iolab.conf`, then the command line, then what the server itself determines (its data
//! directory, computed defaults) — from which every session starts.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use crate::config_file::parse_config_file;
use crate::error::{sqlstate, SettingError};
use crate::table::{Context, SETTINGS};
use crate::value::{self, Value};
use crate::{is_valid_custom_name, table_index, Assigned, FileLocation, Source};

/// The server-wide values. Built once at start with [`ServerSettings::load`], adjusted by the
/// server with [`ServerSettings::set_override`] / [`ServerSettings::set_dynamic_default`],
/// then shared read-only (sessions copy from it with [`crate::SessionSettings::new`]).
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// One entry per row of [`SETTINGS`], same order.
    pub(crate) values: Vec<Assigned>,
    /// Custom `x.y` settings from the file or command line, by lower-cased name.
    pub(crate) placeholders: BTreeMap<String, (String, Assigned)>,
    /// The next `nondefault_since` stamp.
    pub(crate) next_nondefault_stamp: u64,
    /// The defaults the server computed at start, by index (what a value dropped from the
    /// configuration file returns to at a reload).
    dynamic_defaults: BTreeMap<usize, Value>,
    /// Settings whose configuration file value changed since start but apply only at a
    /// restart (`pg_settings.pending_restart`).
    pub(crate) pending_restart: BTreeSet<usize>,
}

/// What [`ServerSettings::reload`] found.
#[derive(Clone, Debug)]
pub struct Reloaded {
    /// The server's values from now on.
    pub settings: ServerSettings,
    /// Settings that took a new value (canonical name, value as SHOW prints it).
    pub changed: Vec<(&'static str, String)>,
    /// Settings whose new value waits for a restart.
    pub needs_restart: Vec<&'static str>,
}

/// Why the server cannot start with the given configuration. `errors` holds every problem
/// found, in order; for a configuration file the last one is PostgreSQL's summary
/// `configuration file "…" contains errors` (F0000). PostgreSQL logs the others at LOG level
/// and the last as FATAL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StartupError {
    pub errors: Vec<SettingError>,
}

impl fmt::Display for StartupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (position, error) in self.errors.iter().enumerate() {
            let level = if position + 1 == self.errors.len() {
                "FATAL"
            } else {
                "LOG"
            };
            writeln!(f, "{level}:  {error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for StartupError {}

impl Default for ServerSettings {
    fn default() -> Self {
        Self::defaults()
    }
}

impl ServerSettings {
    /// Every setting at its boot value.
    pub fn defaults() -> ServerSettings {
        ServerSettings {
            values: SETTINGS.iter().map(Assigned::boot).collect(),
            placeholders: BTreeMap::new(),
            next_nondefault_stamp: 0,
            dynamic_defaults: BTreeMap::new(),
            pending_restart: BTreeSet::new(),
        }
    }

    /// Boot values, then the configuration file (`(path, text)`, if any), then the command
    /// line's `-c name=value` pairs in order (later ones win).
    pub fn load(
        config_file: Option<(&str, &str)>,
        command_line: &[(String, String)],
    ) -> Result<ServerSettings, StartupError> {
        Self::load_files(config_file.as_slice(), command_line)
    }

    /// [`ServerSettings::load`] with several configuration files (`iolab.conf`, then
    /// `postgresql.auto.conf`), each applied over the ones before it.
    pub fn load_files(
        config_files: &[(&str, &str)],
        command_line: &[(String, String)],
    ) -> Result<ServerSettings, StartupError> {
        let mut settings = ServerSettings::defaults();
        for (path, text) in config_files {
            settings.apply_config_file(path, text)?;
        }
        for (name, value) in command_line {
            settings
                .apply_command_line(name, value)
                .map_err(|error| StartupError {
                    errors: vec![error],
                })?;
        }
        Ok(settings)
    }

    /// Applies a configuration file. Only the last line for each name counts (earlier ones
    /// are not even checked, as in PostgreSQL); every bad line is reported.
    pub fn apply_config_file(&mut self, path: &str, text: &str) -> Result<(), StartupError> {
        let contains_errors = || {
            SettingError::new(
                sqlstate::CONFIG_FILE_ERROR,
                format!("configuration file \"{path}\" contains errors"),
            )
        };
        let entries = parse_config_file(text, path).map_err(|error| StartupError {
            errors: vec![error, contains_errors()],
        })?;
        let mut errors = Vec::new();
        for (position, entry) in entries.iter().enumerate() {
            let overridden_later = entries[position + 1..]
                .iter()
                .any(|later| later.name.eq_ignore_ascii_case(&entry.name));
            if overridden_later {
                continue;
            }
            let location = Arc::new(FileLocation {
                file: path.to_string(),
                line: entry.line,
            });
            let context = format!("line {} of configuration file \"{path}\"", entry.line);
            let result = match table_index(&entry.name) {
                None if !is_valid_custom_name(&entry.name) => Err(SettingError::new(
                    sqlstate::UNDEFINED_OBJECT,
                    format!(
                        "unrecognized configuration parameter \"{}\" in file \"{path}\" line {}",
                        entry.name, entry.line
                    ),
                )),
                _ => self
                    .assign(
                        &entry.name,
                        &entry.value,
                        Source::ConfigurationFile,
                        Some(location),
                    )
                    .map_err(|error| error.with_context(context)),
            };
            if let Err(error) = result {
                errors.push(error);
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            errors.push(contains_errors());
            Err(StartupError { errors })
        }
    }

    /// Applies one `-c name=value` (or `--name=value`) from the command line.
    pub fn apply_command_line(&mut self, name: &str, value: &str) -> Result<(), SettingError> {
        self.assign(name, value, Source::CommandLine, None)
    }

    /// Sets a value the server determines itself (`data_directory`, `config_file`, the
    /// `io_method` it fell back to); `pg_settings.source` shows `override`. Any context is
    /// allowed, even `internal`.
    pub fn set_override(&mut self, name: &str, value: &str) -> Result<(), SettingError> {
        let index = table_index(name).ok_or_else(|| SettingError::unrecognized(name))?;
        let parsed = value::parse_value(&SETTINGS[index], value, Some(&self.values[index].value))?;
        self.store(index, parsed, Source::Override, None);
        Ok(())
    }

    /// Replaces a boot value the server computes at start (`io_max_concurrency = -1` → 64),
    /// unless the file or command line set the setting. The source still shows `default`.
    pub fn set_dynamic_default(&mut self, name: &str, value: &str) -> Result<(), SettingError> {
        let index = table_index(name).ok_or_else(|| SettingError::unrecognized(name))?;
        let parsed = value::parse_value(&SETTINGS[index], value, Some(&self.values[index].value))?;
        self.dynamic_defaults.insert(index, parsed.clone());
        if self.values[index].source > Source::DynamicDefault {
            return Ok(());
        }
        self.store(index, parsed, Source::DynamicDefault, None);
        Ok(())
    }

    /// The values after the configuration files (`(path, text)`, in the order of
    /// [`ServerSettings::load_files`]) were read again, as `pg_reload_conf()` asks. Only
    /// settings whose value came from a file or a default take the files' new value (or,
    /// when no file sets them any more, their default); the command line and the server's
    /// own overrides still win. Settings of context `postmaster`, and those of context
    /// `sighup` that `live` does not accept (the server reads them once at start), keep
    /// their value and are listed in `needs_restart`. A file with an error changes nothing.
    pub fn reload(
        &self,
        config_files: &[(&str, &str)],
        live: impl Fn(&str) -> bool,
    ) -> Result<Reloaded, StartupError> {
        let from_files = ServerSettings::load_files(config_files, &[])?;
        let mut next = self.clone();
        let mut changed = Vec::new();
        let mut needs_restart = Vec::new();
        for (index, def) in SETTINGS.iter().enumerate() {
            let running = &self.values[index];
            if running.source > Source::ConfigurationFile || def.context == Context::Internal {
                continue;
            }
            let wanted = match &from_files.values[index] {
                file if file.source == Source::ConfigurationFile => file.clone(),
                _ => self.start_default(index),
            };
            if wanted.value == running.value {
                next.values[index].source = wanted.source;
                next.values[index].location = wanted.location;
                next.pending_restart.remove(&index);
                continue;
            }
            let restart = match def.context {
                Context::Postmaster => true,
                Context::Sighup => !live(def.name),
                _ => false,
            };
            if restart {
                needs_restart.push(def.name);
                next.pending_restart.insert(index);
                continue;
            }
            changed.push((def.name, value::show_value(def, &wanted.value)));
            if wanted.source == Source::ConfigurationFile {
                next.store(index, wanted.value, wanted.source, wanted.location);
            } else {
                next.values[index] = wanted;
            }
        }
        // Custom settings: the files' own, then those the command line set.
        let kept = self
            .placeholders
            .iter()
            .filter(|(_, (_, a))| a.source > Source::ConfigurationFile);
        next.placeholders = from_files.placeholders.clone();
        next.placeholders
            .extend(kept.map(|(key, entry)| (key.clone(), entry.clone())));
        Ok(Reloaded {
            settings: next,
            changed,
            needs_restart,
        })
    }

    /// Setting `index` as it was before any file or command line set it.
    fn start_default(&self, index: usize) -> Assigned {
        match self.dynamic_defaults.get(&index) {
            Some(value) => Assigned {
                value: value.clone(),
                source: Source::DynamicDefault,
                location: None,
                nondefault_since: None,
            },
            None => Assigned::boot(&SETTINGS[index]),
        }
    }

    /// A value as SHOW prints it (`shared_buffers` → `128MB`).
    pub fn get(&self, name: &str) -> Result<String, SettingError> {
        if let Some(index) = table_index(name) {
            return Ok(value::show_value(
                &SETTINGS[index],
                &self.values[index].value,
            ));
        }
        self.placeholders
            .get(&name.to_ascii_lowercase())
            .map(|(_, assigned)| assigned.value.as_text().to_string())
            .ok_or_else(|| SettingError::unrecognized(name))
    }

    /// Where the value in effect came from.
    pub fn source(&self, name: &str) -> Option<Source> {
        table_index(name).map(|index| self.values[index].source)
    }

    /// The configuration file line the value was read from, if it was.
    pub fn file_location(&self, name: &str) -> Option<FileLocation> {
        table_index(name).and_then(|index| self.values[index].location.as_deref().cloned())
    }

    /// Assignment from the file or command line: every context but `internal` may be set.
    fn assign(
        &mut self,
        name: &str,
        input: &str,
        source: Source,
        location: Option<Arc<FileLocation>>,
    ) -> Result<(), SettingError> {
        let Some(index) = table_index(name) else {
            if !name.contains('.') {
                return Err(SettingError::unrecognized(name));
            }
            if !is_valid_custom_name(name) {
                return Err(SettingError::invalid_custom_name(name));
            }
            let stamp = self.next_stamp();
            let assigned = Assigned {
                value: Value::Text(input.into()),
                source,
                location,
                nondefault_since: Some(stamp),
            };
            self.placeholders
                .insert(name.to_ascii_lowercase(), (name.to_string(), assigned));
            return Ok(());
        };
        let def = &SETTINGS[index];
        if def.context == Context::Internal {
            return Err(SettingError::cannot_change(def.name));
        }
        let parsed = value::parse_value(def, input, Some(&self.values[index].value))?;
        self.store(index, parsed, source, location);
        Ok(())
    }

    fn store(
        &mut self,
        index: usize,
        value: Value,
        source: Source,
        location: Option<Arc<FileLocation>>,
    ) {
        let nondefault_since = match self.values[index].nondefault_since {
            Some(stamp) => Some(stamp),
            None => Some(self.next_stamp()),
        };
        self.values[index] = Assigned {
            value,
            source,
            location,
            nondefault_since,
        };
    }

    fn next_stamp(&mut self) -> u64 {
        self.next_nondefault_stamp += 1;
        self.next_nondefault_stamp
    }

    pub(crate) fn value(&self, name: &str) -> &Value {
        let index =
            table_index(name).unwrap_or_else(|| panic!("{name} is not in the settings table"));
        &self.values[index].value
    }

    crate::typed_getters!();
}
