//! The catalog side of ALTER TABLE / INDEX / SEQUENCE / VIEW.
//!
//! Two kinds of change, each undone by its reverse:
//!
//! - **Renaming a relation** ([`Catalog::rename_relation`]): one name in one map; the
//!   old name is returned so that ROLLBACK can rename it back.
//! - **Changing a table's columns or storage parameters** goes through a [`TableState`]:
//!   everything of the catalog that describes a table's columns (its definition, column
//!   defaults, indexes, statistics, the sequences its columns own). The server reads the
//!   state ([`Catalog::table_state`]), changes it in memory, and writes it back whole
//!   ([`Catalog::put_table_state`]); ROLLBACK writes the state from before. Writing a
//!   state is idempotent, so undoing it twice (a crash during recovery) is harmless.
//!
//! Dropping a column drops the indexes on it and the sequence it owns, as PostgreSQL
//! does: those leave the state the server writes back (their files are the server's to
//! remove at COMMIT).
//!
//! A table's attributes are never taken back, not even by an undo: other sessions may have
//! committed rows that store an attribute an ADD COLUMN added before it was rolled back
//! (iolab has no relation locks to keep them out). So when a state with fewer attributes
//! than the table has is written, the extra ones stay as dropped columns' attributes, and
//! `pg_attribute` shows a rolled-back ADD COLUMN as a dropped column.

use serde::{Deserialize, Serialize};

use crate::error::{sqlstate, PgError, PgResult};
use crate::index::IndexDef;
use crate::sequence::SequenceDef;
use crate::sequence_catalog::ColumnDefault;
use crate::statistics::TableStatistics;
use crate::store::{Catalog, TableDef};

/// Everything the catalog says about one table's columns (see the module comment).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TableState {
    pub table: TableDef,
    pub defaults: Vec<ColumnDefault>,
    /// The table's indexes, by OID.
    pub indexes: Vec<IndexDef>,
    pub statistics: Option<TableStatistics>,
    /// The sequences the table's columns own (`serial`, identity), by OID.
    pub sequences: Vec<SequenceDef>,
}

/// The kinds of relation a name may belong to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RelationKind {
    Table,
    Index,
    Sequence,
    View,
}

impl RelationKind {
    /// The word PostgreSQL's messages use (`"x" is not a view`).
    pub fn noun(self) -> &'static str {
        match self {
            RelationKind::Table => "table",
            RelationKind::Index => "index",
            RelationKind::Sequence => "sequence",
            RelationKind::View => "view",
        }
    }
}

impl Catalog {
    /// The kind and OID of relation `name` of `schema`, if there is one.
    pub fn relation(&self, schema: &str, name: &str) -> Option<(RelationKind, u32)> {
        let data = self.data.read();
        let in_schema = |s: &str, n: &str| s == schema && n == name;
        if let Some(t) = data.tables.values().find(|t| in_schema(&t.schema, &t.name)) {
            return Some((RelationKind::Table, t.oid));
        }
        if let Some(i) = data
            .indexes
            .values()
            .find(|i| in_schema(&i.schema, &i.name))
        {
            return Some((RelationKind::Index, i.oid));
        }
        if let Some(s) = data.sequence_named(schema, name) {
            return Some((RelationKind::Sequence, s.oid));
        }
        data.view_named(schema, name)
            .map(|v| (RelationKind::View, v.oid))
    }

    /// Renames relation `oid` (of any kind) to `new_name`; returns its old name. Fails
    /// with PostgreSQL's 42P07 if another relation of the schema has that name, and with
    /// an internal error if there is no relation `oid`.
    pub fn rename_relation(&self, oid: u32, new_name: &str) -> PgResult<String> {
        let mut data = self.data.write();
        let (schema, name) = if let Some(t) = data.tables.get(&oid) {
            (t.schema.clone(), t.name.clone())
        } else if let Some(i) = data.indexes.get(&oid) {
            (i.schema.clone(), i.name.clone())
        } else if let Some(s) = data.sequences.get(&oid) {
            (s.schema.clone(), s.name.clone())
        } else if let Some(v) = data.views.get(&oid) {
            (v.schema.clone(), v.name.clone())
        } else {
            return Err(PgError::internal(format!("no relation with oid {oid}")));
        };
        if name == new_name {
            return Ok(name); // already so (an undo done twice)
        }
        if data.relation_name_taken(&schema, new_name) {
            return Err(PgError::new(
                sqlstate::DUPLICATE_TABLE,
                format!("relation \"{new_name}\" already exists"),
            ));
        }
        let new = new_name.to_string();
        let old = if let Some(t) = data.tables.get_mut(&oid) {
            std::mem::replace(&mut t.name, new)
        } else if let Some(i) = data.indexes.get_mut(&oid) {
            std::mem::replace(&mut i.name, new)
        } else if let Some(s) = data.sequences.get_mut(&oid) {
            std::mem::replace(&mut s.name, new)
        } else {
            let v = data.views.get_mut(&oid).expect("found above");
            std::mem::replace(&mut v.name, new)
        };
        self.save(&data)?;
        if data.views.contains_key(&oid) {
            self.views_changed();
        }
        Ok(old)
    }

    /// Sets the storage parameters of index `oid`; returns the old ones.
    pub fn set_index_reloptions(&self, oid: u32, reloptions: Vec<String>) -> PgResult<Vec<String>> {
        let mut data = self.data.write();
        let index = data
            .indexes
            .get_mut(&oid)
            .ok_or_else(|| PgError::internal(format!("no index with oid {oid}")))?;
        let old = std::mem::replace(&mut index.reloptions, reloptions);
        self.save(&data)?;
        Ok(old)
    }

    /// Marks index `index` (none: no index) as the one table `table_oid` is clustered on
    /// (`pg_index.indisclustered`), unmarking the others; returns the one marked before.
    pub fn set_clustered_index(&self, table_oid: u32, index: Option<u32>) -> PgResult<Option<u32>> {
        let mut data = self.data.write();
        let mut before = None;
        for def in data
            .indexes
            .values_mut()
            .filter(|i| i.table_oid == table_oid)
        {
            if def.clustered {
                before = Some(def.oid);
            }
            def.clustered = Some(def.oid) == index;
        }
        self.save(&data)?;
        Ok(before)
    }

    /// What the catalog says about table `oid`'s columns, if the table exists.
    pub fn table_state(&self, oid: u32) -> Option<TableState> {
        let data = self.data.read();
        let table = data.tables.get(&oid)?.clone();
        Some(TableState {
            defaults: data.defaults.get(&oid).cloned().unwrap_or_default(),
            indexes: data
                .indexes
                .values()
                .filter(|i| i.table_oid == oid)
                .cloned()
                .collect(),
            statistics: data.statistics.get(&oid).cloned(),
            sequences: data
                .sequences
                .values()
                .filter(|s| s.owned_by.as_ref().is_some_and(|o| o.table_oid == oid))
                .cloned()
                .collect(),
            table,
        })
    }

    /// Makes `state` what the catalog says about its table, in one write: the table's
    /// definition, defaults and statistics are replaced; its indexes and owned sequences
    /// become exactly those of `state` (others of the table are removed, missing ones put
    /// back). Nothing happens if the table does not exist (it was dropped, or its creation
    /// undone). Fails with 42P07 if a name `state` puts back was taken meanwhile.
    pub fn put_table_state(&self, state: TableState) -> PgResult<()> {
        let mut data = self.data.write();
        let oid = state.table.oid;
        if !data.tables.contains_key(&oid) {
            return Ok(());
        }
        let TableState {
            mut table,
            defaults,
            indexes,
            statistics,
            sequences,
        } = state;
        keep_attributes(&data.tables[&oid], &mut table);
        assert!(
            indexes.iter().all(|i| i.table_oid == oid)
                && sequences
                    .iter()
                    .all(|s| s.owned_by.as_ref().is_some_and(|o| o.table_oid == oid)),
            "a table state holds only the table's own indexes and sequences"
        );
        // Names put back must be free (or still be theirs).
        let taken = |data: &crate::store::CatalogFile, schema: &str, name: &str, own: bool| {
            !own && data.relation_name_taken(schema, name)
        };
        let own_table = data.tables.get(&oid).is_some_and(|t| t.name == table.name);
        let mut clashes = vec![(table.schema.as_str(), table.name.as_str(), own_table)];
        for i in &indexes {
            let own = data.indexes.get(&i.oid).is_some_and(|o| o.name == i.name);
            clashes.push((i.schema.as_str(), i.name.as_str(), own));
        }
        for s in &sequences {
            let own = data.sequences.get(&s.oid).is_some_and(|o| o.name == s.name);
            clashes.push((s.schema.as_str(), s.name.as_str(), own));
        }
        if let Some((_, name, _)) = clashes
            .iter()
            .find(|(schema, name, own)| taken(&data, schema, name, *own))
        {
            return Err(PgError::new(
                sqlstate::DUPLICATE_TABLE,
                format!("relation \"{name}\" already exists"),
            ));
        }
        data.indexes.retain(|_, i| i.table_oid != oid);
        for i in indexes {
            data.indexes.insert(i.oid, i);
        }
        data.sequences
            .retain(|_, s| s.owned_by.as_ref().is_none_or(|o| o.table_oid != oid));
        for s in sequences {
            data.sequences.insert(s.oid, s);
        }
        match statistics {
            Some(s) => data.statistics.insert(oid, s),
            None => data.statistics.remove(&oid),
        };
        if defaults.is_empty() {
            data.defaults.remove(&oid);
        } else {
            data.defaults.insert(oid, defaults);
        }
        data.tables.insert(oid, table);
        self.save(&data)
    }
}

/// Makes the attributes `current` has beyond those of `new` dropped ones of `new` (see the
/// module comment).
fn keep_attributes(current: &TableDef, new: &mut TableDef) {
    use crate::attributes::{Attribute, DroppedAttribute};
    let kept = new.attribute_count();
    for (i, attribute) in current.attributes().into_iter().enumerate().skip(kept) {
        let ty = match attribute {
            Attribute::Column(c) => current.columns[c].ty,
            Attribute::Dropped(ty) => ty,
        };
        new.stored.dropped.push(DroppedAttribute {
            attnum: i as u16 + 1,
            ty,
        });
    }
    debug_assert!(new.attribute_count() >= current.attribute_count());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::{Attribute, StoredAttributes};
    use crate::store::{ColumnDef, Persistence};
    use crate::types::PgType;

    fn table(columns: &[(&str, PgType)]) -> TableDef {
        TableDef {
            oid: 16384,
            schema: "public".into(),
            name: "t".into(),
            relfilenode: 16384,
            persistence: Persistence::Permanent,
            columns: columns
                .iter()
                .map(|(n, ty)| ColumnDef {
                    name: n.to_string(),
                    ty: *ty,
                    not_null: false,
                })
                .collect(),
            reltuples: -1.0,
            relpages: 0,
            stored: StoredAttributes::default(),
            reloptions: vec![],
        }
    }

    #[test]
    fn an_undone_add_column_leaves_a_dropped_attribute() {
        let dir = std::env::temp_dir().join(format!("iolab-alter-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let catalog = Catalog::open(&dir).unwrap();
        let created = catalog
            .create_table(
                "public",
                "t",
                Persistence::Permanent,
                table(&[("a", PgType::Int4)]).columns,
                false,
            )
            .unwrap()
            .unwrap();
        let before = catalog.table_state(created.oid).unwrap();
        let mut after = before.clone();
        after.table.columns = table(&[("a", PgType::Int4), ("b", PgType::Text)]).columns;
        catalog.put_table_state(after).unwrap();
        assert_eq!(
            catalog.table_by_oid(created.oid).unwrap().attribute_count(),
            2
        );
        // The undo: column b goes, its attribute stays.
        catalog.put_table_state(before.clone()).unwrap();
        let undone = catalog.table_by_oid(created.oid).unwrap();
        assert_eq!(undone.columns, before.table.columns);
        assert_eq!(
            undone.attributes(),
            [Attribute::Column(0), Attribute::Dropped(PgType::Text)]
        );
        // Undoing twice changes nothing more.
        catalog.put_table_state(before).unwrap();
        assert_eq!(catalog.table_by_oid(created.oid).unwrap(), undone);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
