//! Indexes in the catalog: which B-tree indexes exist, on which table and column, in which
//! file.
//!
//! An index is a relation like a table: it has an OID and a relfilenode from the same
//! counter (so `base/<relfilenode>` never collides), a name that shares the namespace of
//! tables (PostgreSQL's `pg_class`: `CREATE INDEX t ON …` fails with `relation "t" already
//! exists` when a table `t` exists, and the other way round), and the persistence of its
//! table. Its definition lives in `global/catalog.json` next to the tables, under
//! `"indexes"`; catalogs written before indexes existed read as having none.
//!
//! The key is one to 32 columns of the table, each ordered by its type's default B-tree
//! operator class ([`btree_opclass`]) — ascending, NULLs last, text by bytes (the `C`
//! collation iolab uses everywhere) — the first column first.
//!
//! Creating an index takes two steps, because the file is built before the index becomes
//! visible: [`Catalog::allocate_oid`] reserves the OID (= relfilenode) the builder writes
//! to, and [`Catalog::create_index`] records the finished index (checking the name again,
//! since another session may have taken it meanwhile). Dropping a table drops its indexes
//! from the catalog in the same write (`Catalog::drop_table`).

use serde::{Deserialize, Serialize};

use crate::error::{sqlstate, PgError, PgResult};
use crate::store::{Catalog, CatalogFile, Persistence, TableDef, MAX_IDENTIFIER_LEN};
use crate::types::PgType;

/// One B-tree index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexDef {
    pub oid: u32,
    pub schema: String,
    pub name: String,
    /// The indexed table (`pg_index.indrelid`).
    pub table_oid: u32,
    pub relfilenode: u32,
    /// Key columns as 0-based column numbers of the table (`indkey` minus one), in index
    /// order (1 to 32 of them).
    pub columns: Vec<usize>,
    /// The key columns' types, in the order of `columns` (their default B-tree operator
    /// classes order the keys).
    pub key_types: Vec<PgType>,
    pub unique: bool,
    /// The constraint the index enforces (`pg_constraint`, of the index's name), if it was
    /// made by PRIMARY KEY or UNIQUE rather than CREATE UNIQUE INDEX.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub constraint: Option<IndexConstraint>,
    /// The table's persistence (an index of an unlogged table is unlogged).
    pub persistence: Persistence,
    /// Storage parameters as `pg_class.reloptions` lists them (`deduplicate_items=off`),
    /// checked when the index was created.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reloptions: Vec<String>,
    /// The index CLUSTER last ordered its table by (`pg_index.indisclustered`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub clustered: bool,
}

/// A PRIMARY KEY or UNIQUE constraint: a row of `pg_constraint` named as its index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexConstraint {
    pub kind: ConstraintKind,
    /// `pg_constraint.oid` (from the relations' OID counter).
    pub oid: u32,
}

/// What kind of constraint an index enforces (`pg_constraint.contype`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConstraintKind {
    PrimaryKey,
    Unique,
}

impl ConstraintKind {
    /// `pg_constraint.contype`.
    pub fn contype(self) -> char {
        match self {
            ConstraintKind::PrimaryKey => 'p',
            ConstraintKind::Unique => 'u',
        }
    }

    /// `PRIMARY KEY` or `UNIQUE`, as `pg_get_constraintdef` starts.
    pub fn sql(self) -> &'static str {
        match self {
            ConstraintKind::PrimaryKey => "PRIMARY KEY",
            ConstraintKind::Unique => "UNIQUE",
        }
    }

    /// The label of the name PostgreSQL chooses for an unnamed constraint's index.
    fn name_label(self) -> &'static str {
        match self {
            ConstraintKind::PrimaryKey => "pkey",
            ConstraintKind::Unique => "key",
        }
    }
}

impl IndexDef {
    /// The B-tree index `name` on column `column` of `table`, in the file of its `oid`
    /// (from [`Catalog::allocate_oid`]).
    pub fn on_column(oid: u32, name: String, table: &TableDef, column: usize) -> IndexDef {
        IndexDef::on_columns(oid, name, table, &[column])
    }

    /// The B-tree index `name` on columns `columns` of `table` (in key order).
    pub fn on_columns(oid: u32, name: String, table: &TableDef, columns: &[usize]) -> IndexDef {
        IndexDef {
            oid,
            schema: table.schema.clone(),
            name,
            table_oid: table.oid,
            relfilenode: oid,
            columns: columns.to_vec(),
            key_types: columns.iter().map(|&c| table.columns[c].ty).collect(),
            unique: false,
            constraint: None,
            persistence: table.persistence,
            reloptions: Vec::new(),
            clustered: false,
        }
    }

    /// Is this the table's primary key (`pg_index.indisprimary`)?
    pub fn is_primary(&self) -> bool {
        self.constraint
            .is_some_and(|c| c.kind == ConstraintKind::PrimaryKey)
    }

    /// The value given to storage parameter `name`, if any.
    pub fn reloption(&self, name: &str) -> Option<&str> {
        self.reloptions
            .iter()
            .find_map(|o| o.strip_prefix(name)?.strip_prefix('='))
    }

    /// The default B-tree operator class of key column `i`: `(pg_opclass.oid, opcname)`.
    pub fn opclass(&self, i: usize) -> (u32, &'static str) {
        btree_opclass(self.key_types[i])
    }
}

/// The default B-tree operator class of a type, as PostgreSQL 18's `pg_opclass` has it:
/// `(oid, opcname)`. varchar has none of its own and uses `text_ops`, as in PostgreSQL.
pub fn btree_opclass(ty: PgType) -> (u32, &'static str) {
    match ty {
        PgType::Bool => (424, "bool_ops"),
        PgType::Int2 => (1979, "int2_ops"),
        PgType::Int4 => (1978, "int4_ops"),
        PgType::Int8 => (3124, "int8_ops"),
        PgType::Float4 => (1970, "float4_ops"),
        PgType::Float8 => (3123, "float8_ops"),
        PgType::Numeric { .. } => (3125, "numeric_ops"),
        PgType::Text | PgType::Varchar(_) => (3126, "text_ops"),
        PgType::Bpchar(_) => (426, "bpchar_ops"),
        PgType::Date => (3122, "date_ops"),
        PgType::Timestamp => (3128, "timestamp_ops"),
        PgType::Timestamptz => (3127, "timestamptz_ops"),
        PgType::Interval => (10022, "interval_ops"),
    }
}

impl CatalogFile {
    /// Is `name` taken by a relation (table, index, sequence or view) of `schema`?
    pub(crate) fn relation_name_taken(&self, schema: &str, name: &str) -> bool {
        self.tables
            .values()
            .any(|t| t.schema == schema && t.name == name)
            || self
                .indexes
                .values()
                .any(|i| i.schema == schema && i.name == name)
            || self.sequence_named(schema, name).is_some()
            || self.view_named(schema, name).is_some()
    }
}

impl Catalog {
    /// All indexes, ordered by OID.
    pub fn indexes(&self) -> Vec<IndexDef> {
        self.data.read().indexes.values().cloned().collect()
    }

    /// The indexes of one table, ordered by OID.
    pub fn indexes_of(&self, table_oid: u32) -> Vec<IndexDef> {
        self.data
            .read()
            .indexes
            .values()
            .filter(|i| i.table_oid == table_oid)
            .cloned()
            .collect()
    }

    pub fn index(&self, schema: &str, name: &str) -> Option<IndexDef> {
        self.data
            .read()
            .indexes
            .values()
            .find(|i| i.schema == schema && i.name == name)
            .cloned()
    }

    pub fn index_by_oid(&self, oid: u32) -> Option<IndexDef> {
        self.data.read().indexes.get(&oid).cloned()
    }

    /// Is `name` taken by a table, an index or a sequence of `schema`?
    pub fn relation_name_taken(&self, schema: &str, name: &str) -> bool {
        self.data.read().relation_name_taken(schema, name)
    }

    /// Reserves a new OID, to be the OID and relfilenode of an index being built.
    pub fn allocate_oid(&self) -> PgResult<u32> {
        let mut data = self.data.write();
        let oid = data.next_oid;
        data.next_oid += 1;
        self.save(&data)?;
        Ok(oid)
    }

    /// Records a built index (its OID from [`allocate_oid`](Self::allocate_oid)), or puts
    /// a dropped one back (a DROP INDEX rolled back). Fails with PostgreSQL's `relation "x"
    /// already exists` (42P07) if the name was taken meanwhile, and if the table is gone.
    pub fn create_index(&self, index: IndexDef) -> PgResult<IndexDef> {
        let mut data = self.data.write();
        if data.relation_name_taken(&index.schema, &index.name) {
            return Err(PgError::new(
                sqlstate::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", index.name),
            ));
        }
        if !data.tables.contains_key(&index.table_oid) {
            return Err(PgError::internal(format!(
                "table {} of index \"{}\" was dropped meanwhile",
                index.table_oid, index.name
            )));
        }
        assert!(
            index.oid < data.next_oid && !data.indexes.contains_key(&index.oid),
            "index OID {} was not allocated, or is in use",
            index.oid
        );
        data.indexes.insert(index.oid, index.clone());
        self.save(&data)?;
        Ok(index)
    }

    /// Removes an index from the catalog; returns its definition (the caller removes the
    /// file).
    pub fn drop_index(&self, oid: u32) -> PgResult<IndexDef> {
        let mut data = self.data.write();
        let index = data
            .indexes
            .remove(&oid)
            .ok_or_else(|| PgError::internal(format!("no index with oid {oid}")))?;
        self.save(&data)?;
        Ok(index)
    }

    /// Gives an index a relation file number (a new one from [`allocate_oid`] for TRUNCATE,
    /// or its old one back when that rolls back).
    ///
    /// [`allocate_oid`]: Self::allocate_oid
    pub fn set_index_relfilenode(&self, oid: u32, relfilenode: u32) -> PgResult<()> {
        let mut data = self.data.write();
        data.indexes
            .get_mut(&oid)
            .ok_or_else(|| PgError::internal(format!("no index with oid {oid}")))?
            .relfilenode = relfilenode;
        self.save(&data)
    }

    /// The name PostgreSQL gives the index of a constraint declared without one:
    /// `<table>_pkey` for a primary key, `<table>_<col>[_<col>…]_key` for UNIQUE, made
    /// unique as [`choose_index_name`](Self::choose_index_name) does.
    pub fn choose_constraint_name(
        &self,
        schema: &str,
        table: &str,
        columns: &[&str],
        kind: ConstraintKind,
    ) -> String {
        let data = self.data.read();
        let columns = match kind {
            ConstraintKind::PrimaryKey => String::new(),
            ConstraintKind::Unique => columns.join("_"),
        };
        choose_relation_name(table, &columns, kind.name_label(), |name| {
            data.relation_name_taken(schema, name)
        })
    }

    /// The name PostgreSQL gives an index created without one (`ChooseIndexName`):
    /// `<table>_<col>[_<col>…]_idx`, shortened to fit 63 bytes, and if that name is taken,
    /// `…_idx1`, `…_idx2`, … (the first free one).
    pub fn choose_index_name(&self, schema: &str, table: &str, columns: &[&str]) -> String {
        let data = self.data.read();
        choose_relation_name(table, &columns.join("_"), "idx", |name| {
            data.relation_name_taken(schema, name)
        })
    }
}

/// PostgreSQL's `ChooseRelationName`: `makeObjectName(name1, name2, label)`, then with
/// `label1`, `label2`, … until `taken` says no.
fn choose_relation_name(
    name1: &str,
    name2: &str,
    label: &str,
    taken: impl Fn(&str) -> bool,
) -> String {
    let mut pass = 0u32;
    loop {
        let label = if pass == 0 {
            label.to_string()
        } else {
            format!("{label}{pass}")
        };
        let name = make_object_name(name1, name2, &label);
        if !taken(&name) {
            return name;
        }
        pass += 1;
    }
}

/// PostgreSQL's `makeObjectName`: `name1_name2_label`, where name1 and name2 are
/// shortened — the longer one first, a character at a time — until the whole fits in
/// 63 bytes (cut at character boundaries).
fn make_object_name(name1: &str, name2: &str, label: &str) -> String {
    let overhead = label.len() + 1 + if name2.is_empty() { 0 } else { 1 };
    let avail = MAX_IDENTIFIER_LEN.saturating_sub(overhead);
    let (mut n1, mut n2) = (name1.len(), name2.len());
    while n1 + n2 > avail {
        if n1 > n2 {
            n1 -= 1;
        } else {
            n2 -= 1;
        }
    }
    let clip = |s: &str, mut n: usize| {
        while !s.is_char_boundary(n) {
            n -= 1;
        }
        s[..n].to_string()
    };
    let mut out = clip(name1, n1);
    if !name2.is_empty() {
        out.push('_');
        out.push_str(&clip(name2, n2));
    }
    out.push('_');
    out.push_str(label);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::ColumnDef;

    #[test]
    fn default_names_follow_postgres() {
        assert_eq!(make_object_name("t", "a", "idx"), "t_a_idx");
        let long = "x".repeat(70);
        let name = make_object_name(&long, "a", "idx");
        assert_eq!(name.len(), 63);
        assert!(name.ends_with("_a_idx"));
        // Both long: each gets about half.
        let name = make_object_name(&"t".repeat(40), &"c".repeat(40), "idx1");
        assert_eq!(name.len(), 63);
        assert_eq!(name, format!("{}_{}_idx1", "t".repeat(29), "c".repeat(28)));
        let taken = ["t_a_idx", "t_a_idx1"];
        assert_eq!(
            choose_relation_name("t", "a", "idx", |n| taken.contains(&n)),
            "t_a_idx2"
        );
    }

    #[test]
    fn indexes_share_the_relation_namespace_and_persist() {
        let dir = std::env::temp_dir().join(format!("iolab-index-catalog-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let catalog = Catalog::open(&dir).unwrap();
        let t = catalog
            .create_table(
                "public",
                "t",
                Persistence::Permanent,
                vec![ColumnDef {
                    name: "a".into(),
                    ty: PgType::Int4,
                    not_null: false,
                }],
                false,
            )
            .unwrap()
            .unwrap();
        assert_eq!(catalog.choose_index_name("public", "t", &["a"]), "t_a_idx");
        let oid = catalog.allocate_oid().unwrap();
        let def = IndexDef {
            oid,
            schema: "public".into(),
            name: "t_a_idx".into(),
            table_oid: t.oid,
            relfilenode: oid,
            columns: vec![0],
            key_types: vec![PgType::Int4],
            unique: false,
            constraint: None,
            persistence: Persistence::Permanent,
            reloptions: Vec::new(),
            clustered: false,
        };
        catalog.create_index(def.clone()).unwrap();
        assert_eq!(catalog.choose_index_name("public", "t", &["a"]), "t_a_idx1");
        let e = catalog.create_index(def.clone()).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("42P07", "relation \"t_a_idx\" already exists")
        );
        let e = catalog
            .create_table("public", "t_a_idx", Persistence::Permanent, vec![], false)
            .unwrap_err();
        assert_eq!(e.code, "42P07");

        // Reopened, the index is still there; dropping the table drops it.
        drop(catalog);
        let catalog = Catalog::open(&dir).unwrap();
        assert_eq!(catalog.indexes_of(t.oid), vec![def.clone()]);
        assert_eq!(catalog.index("public", "t_a_idx"), Some(def));
        catalog.drop_table(t.oid).unwrap();
        assert!(catalog.indexes().is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
