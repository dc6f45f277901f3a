//! The persistent catalog: which tables exist, their columns and types, their file numbers.
//!
//! The whole catalog is small (a description per table), so it lives in memory behind a
//! lock and is written as one JSON document, `global/catalog.json`, through a temporary
//! file, fsync and rename after every change: a reader of the file always sees a whole
//! catalog, old or new. Object ids start at 16384 (PostgreSQL's FirstNormalObjectId), so
//! user objects get OIDs in the same range as in PostgreSQL; a table's first relfilenode
//! is its OID and TRUNCATE gives it a new one (the old file is removed afterwards).
//!
//! The catalog changes at once; the server's transaction log of DDL (`ddl_log.rs`) undoes
//! a rolled-back transaction's changes. Sequences and column defaults are described in
//! `sequence_catalog.rs`; the positions of sequences live beside this file, in
//! `global/sequences/` (`sequence_values.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

use crate::attributes::StoredAttributes;
use crate::error::{sqlstate, PgError, PgResult};
use crate::index::IndexDef;
use crate::sequence::SequenceDef;
use crate::sequence_catalog::ColumnDefault;
use crate::sequence_values::SequenceValues;
use crate::types::PgType;

/// The one database's oid (`postgres`).
pub const DATABASE_OID: u32 = 5;

pub const FIRST_NORMAL_OID: u32 = 16384;
/// The OID of the `public` schema in PostgreSQL.
pub const PUBLIC_NAMESPACE_OID: u32 = 2200;
pub const PG_CATALOG_NAMESPACE_OID: u32 = 11;
/// The OID of the bootstrap superuser in PostgreSQL.
pub const SUPERUSER_OID: u32 = 10;
/// The heap access method's OID.
pub const HEAP_AM_OID: u32 = 2;
pub const BTREE_AM_OID: u32 = 403;
/// PostgreSQL limits identifiers to NAMEDATALEN - 1 bytes.
pub const MAX_IDENTIFIER_LEN: usize = 63;

/// The prefix of sessions' temporary schemas' names, `pg_temp_N`.
pub const TEMP_SCHEMA_PREFIX: &str = "pg_temp_";

/// Whether `schema` is a session's temporary schema, `pg_temp_N` (see the engine's
/// `temp` module).
pub fn is_temp_schema(schema: &str) -> bool {
    schema
        .strip_prefix(TEMP_SCHEMA_PREFIX)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Persistence {
    Permanent,
    Unlogged,
    /// A session's temporary relation (`CREATE TEMP TABLE`): in its session's schema
    /// `pg_temp_N`, cached in its local buffers, never logged, gone when the session ends.
    Temporary,
}

impl Persistence {
    /// `pg_class.relpersistence`
    pub fn code(&self) -> char {
        match self {
            Persistence::Permanent => 'p',
            Persistence::Unlogged => 'u',
            Persistence::Temporary => 't',
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub ty: PgType,
    pub not_null: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableDef {
    pub oid: u32,
    pub schema: String,
    pub name: String,
    pub relfilenode: u32,
    pub persistence: Persistence,
    pub columns: Vec<ColumnDef>,
    /// Estimated row count (`pg_class.reltuples`), -1 until ANALYZE or VACUUM.
    pub reltuples: f64,
    /// Pages at the last ANALYZE or VACUUM (`pg_class.relpages`).
    pub relpages: u32,
    /// The attributes of dropped columns and the values of added ones that old tuples
    /// read (`attributes.rs`); empty until ALTER TABLE adds or drops a column.
    #[serde(default, skip_serializing_if = "StoredAttributes::is_plain")]
    pub stored: StoredAttributes,
    /// Storage parameters as `pg_class.reloptions` lists them (`fillfactor=70`), set by
    /// ALTER TABLE … SET (…).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reloptions: Vec<String>,
}

impl TableDef {
    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// Writes `bytes` to `path` through a temporary file, fsync and rename (and fsyncs the
/// directory): after a crash the file holds the old bytes or the new, never a mix.
pub fn write_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// What [`Catalog::drop_table`] removed: enough to put the table back.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DroppedTable {
    pub table: TableDef,
    pub indexes: Vec<IndexDef>,
    pub statistics: Option<crate::statistics::TableStatistics>,
    /// Its column defaults.
    #[serde(default)]
    pub defaults: Vec<ColumnDefault>,
    /// The sequences its columns owned.
    #[serde(default)]
    pub sequences: Vec<SequenceDef>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(crate) struct CatalogFile {
    pub(crate) next_oid: u32,
    pub(crate) tables: BTreeMap<u32, TableDef>,
    /// B-tree indexes by OID (see `index.rs`); absent in catalogs written before indexes.
    #[serde(default)]
    pub(crate) indexes: BTreeMap<u32, IndexDef>,
    /// ANALYZE's per-column statistics by table OID (see `statistics.rs`).
    #[serde(default)]
    pub(crate) statistics: BTreeMap<u32, crate::statistics::TableStatistics>,
    /// Sequences by OID (see `sequence_catalog.rs`).
    #[serde(default)]
    pub(crate) sequences: BTreeMap<u32, SequenceDef>,
    /// Column defaults by table OID, in column order.
    #[serde(default)]
    pub(crate) defaults: BTreeMap<u32, Vec<ColumnDefault>>,
    /// Views by OID (see `view.rs`).
    #[serde(default)]
    pub(crate) views: BTreeMap<u32, crate::view::ViewDef>,
}

pub struct Catalog {
    path: PathBuf,
    pub(crate) data: RwLock<CatalogFile>,
    /// Where each sequence stands (`nextval`), kept in `global/sequences/`.
    pub sequence_values: SequenceValues,
    /// Bumped by every change of a view (create, replace, drop, put back): plans made
    /// from views' definitions are good for one generation (see `view.rs`).
    pub(crate) views_generation: std::sync::atomic::AtomicU64,
    /// Bumped by every change written to the catalog (any DDL, its undoing, ANALYZE's
    /// statistics): plans made from the catalog are good for one generation.
    generation: std::sync::atomic::AtomicU64,
}

impl Catalog {
    /// Opens `global/catalog.json` under `data_dir`, creating an empty catalog if absent.
    pub fn open(data_dir: &Path) -> PgResult<Catalog> {
        let dir = data_dir.join("global");
        std::fs::create_dir_all(&dir)
            .map_err(|e| PgError::io("could not create global directory", &e))?;
        let path = dir.join("catalog.json");
        let data = match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                PgError::new(
                    sqlstate::DATA_CORRUPTED,
                    format!("catalog file \"{}\" is corrupt: {e}", path.display()),
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => CatalogFile {
                next_oid: FIRST_NORMAL_OID,
                ..CatalogFile::default()
            },
            Err(e) => {
                return Err(PgError::io(
                    &format!("could not read \"{}\"", path.display()),
                    &e,
                ))
            }
        };
        let catalog = Catalog {
            path,
            data: RwLock::new(data),
            sequence_values: SequenceValues::open(dir.join("sequences"))?,
            views_generation: std::sync::atomic::AtomicU64::new(0),
            generation: std::sync::atomic::AtomicU64::new(0),
        };
        catalog.save(&catalog.data.read())?;
        Ok(catalog)
    }

    /// Which generation of the catalog this is (see `generation`).
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    pub(crate) fn save(&self, data: &CatalogFile) -> PgResult<()> {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        let bytes =
            serde_json::to_vec_pretty(data).map_err(|e| PgError::internal(e.to_string()))?;
        write_durably(&self.path, &bytes).map_err(|e| PgError::io("could not write catalog", &e))
    }

    /// The persistence and schema of the table or index whose file is `relfilenode`, if
    /// the catalog has one.
    pub fn persistence_of(&self, relfilenode: u32) -> Option<(Persistence, String)> {
        let data = self.data.read();
        data.tables
            .values()
            .find(|t| t.relfilenode == relfilenode)
            .map(|t| (t.persistence, t.schema.clone()))
            .or_else(|| {
                data.indexes
                    .values()
                    .find(|i| i.relfilenode == relfilenode)
                    .map(|i| (i.persistence, i.schema.clone()))
            })
    }

    /// All tables, ordered by OID.
    pub fn tables(&self) -> Vec<TableDef> {
        self.data.read().tables.values().cloned().collect()
    }

    pub fn table_by_oid(&self, oid: u32) -> Option<TableDef> {
        self.data.read().tables.get(&oid).cloned()
    }

    pub fn table(&self, schema: &str, name: &str) -> Option<TableDef> {
        self.data
            .read()
            .tables
            .values()
            .find(|t| t.schema == schema && t.name == name)
            .cloned()
    }

    /// Looks a table up by name: `schema.name`, or `name` in the `public` schema.
    pub fn resolve(&self, schema: Option<&str>, name: &str) -> PgResult<TableDef> {
        self.resolve_in(None, schema, name)
    }

    /// The schema an object written `[schema.]name` is in, as a session whose temporary
    /// schema is `temp` sees it: `pg_temp` is `temp`; an unqualified name is in `temp` if
    /// `found_in(temp)` says the object is there, else in `public`.
    pub fn schema_in(
        temp: Option<&str>,
        schema: Option<&str>,
        found_in: impl FnOnce(&str) -> bool,
    ) -> String {
        match (schema, temp) {
            (Some("pg_temp"), Some(temp)) => temp.to_string(),
            (Some(schema), _) => schema.to_string(),
            (None, Some(temp)) if found_in(temp) => temp.to_string(),
            (None, _) => "public".to_string(),
        }
    }

    /// Looks a table up by name as a session whose temporary schema is `temp` sees it
    /// (PostgreSQL's search path `pg_temp, public`): `name` in `temp` first, then in
    /// `public`; `pg_temp.name` in `temp`; `schema.name` in `schema` — but another
    /// session's temporary schema is refused.
    pub fn resolve_in(
        &self,
        temp: Option<&str>,
        schema: Option<&str>,
        name: &str,
    ) -> PgResult<TableDef> {
        let found = match schema {
            None => temp
                .and_then(|t| self.table(t, name))
                .or_else(|| self.table("public", name)),
            Some("pg_temp") => temp.and_then(|t| self.table(t, name)),
            Some(s) if is_temp_schema(s) && Some(s) != temp => {
                return match self.table(s, name) {
                    Some(_) => Err(PgError::new(
                        sqlstate::FEATURE_NOT_SUPPORTED,
                        "cannot access temporary tables of other sessions",
                    )),
                    None => Err(PgError::undefined_table(&format!("{s}.{name}"))),
                };
            }
            Some(s) => self.table(s, name),
        };
        found.ok_or_else(|| match schema {
            Some(s) => PgError::undefined_table(&format!("{s}.{name}")),
            None => PgError::undefined_table(name),
        })
    }

    /// Creates a table; returns its definition with OID and relfilenode assigned.
    pub fn create_table(
        &self,
        schema: &str,
        name: &str,
        persistence: Persistence,
        columns: Vec<ColumnDef>,
        if_not_exists: bool,
    ) -> PgResult<Option<TableDef>> {
        let created = self.create_table_with_defaults(
            schema,
            name,
            persistence,
            columns,
            vec![],
            vec![],
            if_not_exists,
        )?;
        Ok(created.map(|(table, _)| table))
    }

    /// Removes a table, its indexes and its statistics from the catalog; returns them (the
    /// caller removes the files, its indexes' too, or puts them back with
    /// [`restore_table`](Self::restore_table)).
    pub fn drop_table(&self, oid: u32) -> PgResult<DroppedTable> {
        let mut data = self.data.write();
        let table = data
            .tables
            .remove(&oid)
            .ok_or_else(|| PgError::internal(format!("no table with oid {oid}")))?;
        let statistics = data.statistics.remove(&oid);
        let defaults = data.defaults.remove(&oid).unwrap_or_default();
        let owned: Vec<u32> = data
            .sequences
            .values()
            .filter(|s| s.owned_by.as_ref().is_some_and(|o| o.table_oid == oid))
            .map(|s| s.oid)
            .collect();
        let sequences = owned
            .iter()
            .filter_map(|s| data.sequences.remove(s))
            .collect();
        let indexes: Vec<IndexDef> = data
            .indexes
            .values()
            .filter(|index| index.table_oid == oid)
            .cloned()
            .collect();
        data.indexes.retain(|_, index| index.table_oid != oid);
        self.save(&data)?;
        Ok(DroppedTable {
            table,
            indexes,
            statistics,
            defaults,
            sequences,
        })
    }

    /// Puts a dropped table back as it was (a DROP TABLE rolled back). Fails if its name
    /// was taken meanwhile.
    pub fn restore_table(&self, dropped: DroppedTable) -> PgResult<()> {
        let mut data = self.data.write();
        let DroppedTable {
            table,
            indexes,
            statistics,
            defaults,
            sequences,
        } = dropped;
        let names = std::iter::once(&table.name)
            .chain(indexes.iter().map(|i| &i.name))
            .chain(sequences.iter().map(|s| &s.name));
        for name in names {
            if data.relation_name_taken(&table.schema, name) {
                return Err(PgError::new(
                    sqlstate::DUPLICATE_TABLE,
                    format!("relation \"{name}\" already exists"),
                ));
            }
        }
        assert!(
            !data.tables.contains_key(&table.oid),
            "a dropped table's OID is never reused"
        );
        if let Some(statistics) = statistics {
            data.statistics.insert(table.oid, statistics);
        }
        for index in indexes {
            data.indexes.insert(index.oid, index);
        }
        for sequence in sequences {
            data.sequences.insert(sequence.oid, sequence);
        }
        if !defaults.is_empty() {
            data.defaults.insert(table.oid, defaults);
        }
        data.tables.insert(table.oid, table);
        self.save(&data)
    }

    /// Gives a table a relation file number and the page and row counts that go with it
    /// (TRUNCATE: a new, empty file and zeros; its rollback: the old file and counts).
    pub fn set_relfilenode(
        &self,
        oid: u32,
        relfilenode: u32,
        reltuples: f64,
        relpages: u32,
    ) -> PgResult<()> {
        let mut data = self.data.write();
        let table = data
            .tables
            .get_mut(&oid)
            .ok_or_else(|| PgError::internal(format!("no table with oid {oid}")))?;
        table.relfilenode = relfilenode;
        table.reltuples = reltuples;
        table.relpages = relpages;
        self.save(&data)
    }

    /// Records statistics from ANALYZE / VACUUM.
    pub fn set_stats(&self, oid: u32, reltuples: f64, relpages: u32) -> PgResult<()> {
        let mut data = self.data.write();
        if let Some(t) = data.tables.get_mut(&oid) {
            t.reltuples = reltuples;
            t.relpages = relpages;
        }
        self.save(&data)
    }
}

impl CatalogFile {
    /// Checks a new table (schema, name, columns) and describes it, without an OID yet;
    /// `None` when the name is taken and `if_not_exists` was given.
    pub(crate) fn new_table(
        &self,
        schema: &str,
        name: &str,
        persistence: Persistence,
        columns: Vec<ColumnDef>,
        if_not_exists: bool,
    ) -> PgResult<Option<TableDef>> {
        if schema != "public" && !is_temp_schema(schema) {
            return Err(PgError::new(
                sqlstate::INVALID_SCHEMA_NAME,
                format!("schema \"{schema}\" does not exist"),
            ));
        }
        if self.relation_name_taken(schema, name) {
            if if_not_exists {
                return Ok(None);
            }
            return Err(PgError::new(
                sqlstate::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].iter().any(|o| o.name == c.name) {
                return Err(PgError::new(
                    sqlstate::DUPLICATE_COLUMN,
                    format!("column \"{}\" specified more than once", c.name),
                ));
            }
        }
        if columns.len() > 1600 {
            return Err(PgError::new(
                sqlstate::TOO_MANY_COLUMNS,
                "tables can have at most 1600 columns",
            ));
        }
        Ok(Some(TableDef {
            oid: 0,
            schema: schema.to_string(),
            name: name.to_string(),
            relfilenode: 0,
            persistence,
            columns,
            reltuples: -1.0,
            relpages: 0,
            stored: StoredAttributes::default(),
            reloptions: Vec::new(),
        }))
    }
}
