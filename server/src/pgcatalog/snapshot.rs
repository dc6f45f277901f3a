//! One consistent look at everything the catalog views describe: the user's tables (from
//! the persistent catalog), iolab's own catalog tables and views, the session's settings
//! and search path. Each catalog lookup and each catalog function call takes a fresh
//! snapshot, so a table created by one statement is in `pg_class` for the next.
//!
//! Relations are numbered as in PostgreSQL: user tables keep their catalog OIDs (16384
//! up), the catalogs have PostgreSQL 18's OIDs (`pg_class` is 1259), and tables other
//! parts of iolab register into `pg_catalog` (`pg_stat_io`, …) get OIDs from
//! [`EXTRA_RELATION_OID_BASE`] in name order.

use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use iolab_catalog::{ColumnDefault, IndexDef, PgType, SequenceDef, TableDef, ViewDef};
use iolab_engine::Database;
use iolab_settings::SessionSettings;

use super::batch::{parse_columns, ColumnSpec};
use super::{info_schema, oids, tables};

/// First OID given to tables registered into `pg_catalog` by other modules.
pub const EXTRA_RELATION_OID_BASE: u32 = 15000;

/// A column as `pg_attribute` describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct RelColumn {
    pub name: String,
    pub type_oid: u32,
    pub typmod: i32,
    pub not_null: bool,
}

/// A relation as `pg_class` describes it.
#[derive(Clone, Debug)]
pub struct Relation {
    pub oid: u32,
    pub name: String,
    pub namespace: u32,
    /// `relkind`: `r` table, `v` view, `i` index.
    pub kind: char,
    /// `relpersistence`: `p` permanent, `u` unlogged, `t` temporary.
    pub persistence: char,
    /// `relam`: heap for tables, 0 for views.
    pub am: u32,
    pub relfilenode: u32,
    pub pages: i64,
    /// `relallvisible`: a table's pages the visibility map marks all-visible now (at most
    /// `pages`; PostgreSQL records the count at its last VACUUM or ANALYZE).
    pub all_visible: i64,
    pub tuples: f64,
    pub columns: Vec<RelColumn>,
    /// `relhasindex`: a table with at least one index.
    pub has_index: bool,
    /// `reloptions`: storage parameters (`deduplicate_items=off`); empty is NULL.
    pub options: Vec<String>,
    /// A table's dropped columns as (attribute number, type OID the column had),
    /// ascending: `pg_attribute` keeps a row for each (`attisdropped`), and the columns
    /// after them keep their numbers.
    pub dropped_attributes: Vec<(u16, u32)>,
}

impl Relation {
    /// The attribute number (`attnum`) of column `column` (0-based in `columns`).
    pub fn attnum(&self, column: usize) -> u16 {
        let mut attnum = column as u16 + 1;
        for &(dropped, _) in &self.dropped_attributes {
            if dropped <= attnum {
                attnum += 1;
            }
        }
        attnum
    }

    pub fn schema(&self) -> std::borrow::Cow<'static, str> {
        oids::namespace_name(self.namespace).unwrap_or("public".into())
    }

    /// `relreplident`: `d` (default) for user tables, `n` (nothing) for views and
    /// system catalogs, as in PostgreSQL.
    pub fn replica_identity(&self) -> char {
        if self.kind == 'r'
            && self.namespace != oids::PG_CATALOG_NAMESPACE
            && self.namespace != oids::INFORMATION_SCHEMA_NAMESPACE
        {
            'd'
        } else {
            'n'
        }
    }
}

/// A table some other part of iolab registered into `pg_catalog`.
#[derive(Clone, Debug)]
pub struct ExtraTable {
    pub name: String,
    pub schema: SchemaRef,
}

/// The state the catalog views are computed from.
#[derive(Clone)]
pub struct Snapshot {
    pub db: Arc<Database>,
    pub tables: Vec<TableDef>,
    pub indexes: Vec<IndexDef>,
    /// Sequences, by OID.
    pub sequences: Vec<SequenceDef>,
    /// Column defaults as `(table OID, default)`.
    pub defaults: Vec<(u32, ColumnDefault)>,
    /// The user's views, by OID.
    pub views: Vec<ViewDef>,
    pub settings: SessionSettings,
    /// The session's user (`current_user`).
    pub user: String,
    /// The session's temporary schema, if it has one: first on its search path.
    pub temp_schema: Option<String>,
    pub extra: Vec<ExtraTable>,
}

impl Snapshot {
    pub fn new(
        db: Arc<Database>,
        settings: SessionSettings,
        user: String,
        extra: Vec<ExtraTable>,
    ) -> Snapshot {
        let tables = db.catalog.tables();
        let indexes = db.catalog.indexes();
        let sequences = db.catalog.sequences();
        let views = db.catalog.views();
        let defaults = tables
            .iter()
            .flat_map(|t| {
                db.catalog
                    .column_defaults(t.oid)
                    .into_iter()
                    .map(move |d| (t.oid, d))
            })
            .collect();
        Snapshot {
            db,
            tables,
            indexes,
            sequences,
            defaults,
            views,
            settings,
            user,
            temp_schema: None,
            extra,
        }
    }

    /// Every relation: user tables, then the `pg_catalog` and `information_schema` ones.
    pub fn relations(&self) -> Vec<Relation> {
        let mut out: Vec<Relation> = self
            .tables
            .iter()
            .map(|t| user_relation(t, self.has_index(t.oid), self.all_visible(t)))
            .collect();
        out.extend(self.indexes.iter().filter_map(|i| self.index_relation(i)));
        out.extend(self.sequences.iter().map(super::sequence_views::relation));
        out.extend(self.views.iter().map(view_relation));
        for t in tables::PG_CATALOG {
            out.push(catalog_relation(
                t.oid,
                t.name,
                oids::PG_CATALOG_NAMESPACE,
                t.kind,
                &parse_columns(t.columns),
            ));
        }
        for t in info_schema::INFORMATION_SCHEMA {
            out.push(catalog_relation(
                t.oid,
                t.name,
                oids::INFORMATION_SCHEMA_NAMESPACE,
                t.kind,
                &parse_columns(t.columns),
            ));
        }
        let mut extra: Vec<&ExtraTable> = self.extra.iter().collect();
        extra.sort_by(|a, b| a.name.cmp(&b.name));
        for (i, t) in extra.into_iter().enumerate() {
            let columns = t
                .schema
                .fields()
                .iter()
                .map(|f| {
                    let ty = PgType::for_arrow(f.data_type());
                    RelColumn {
                        name: f.name().clone(),
                        type_oid: ty.map(|t| t.oid()).unwrap_or(25),
                        typmod: -1,
                        not_null: !f.is_nullable(),
                    }
                })
                .collect();
            out.push(Relation {
                oid: EXTRA_RELATION_OID_BASE + i as u32,
                name: t.name.clone(),
                namespace: oids::PG_CATALOG_NAMESPACE,
                kind: 'v',
                persistence: 'p',
                am: 0,
                relfilenode: 0,
                pages: 0,
                all_visible: 0,
                tuples: -1.0,
                columns,
                has_index: false,
                options: Vec::new(),
                dropped_attributes: Vec::new(),
            });
        }
        out
    }

    pub fn relation(&self, oid: u32) -> Option<Relation> {
        if let Some(t) = self.tables.iter().find(|t| t.oid == oid) {
            return Some(user_relation(t, self.has_index(t.oid), self.all_visible(t)));
        }
        if let Some(i) = self.index_def(oid) {
            return self.index_relation(i);
        }
        if let Some(seq) = self.sequences.iter().find(|q| q.oid == oid) {
            return Some(super::sequence_views::relation(seq));
        }
        if let Some(view) = self.views.iter().find(|v| v.oid == oid) {
            return Some(view_relation(view));
        }
        self.relations().into_iter().find(|r| r.oid == oid)
    }

    /// The schemas searched for unqualified names, in order: `pg_catalog` first unless
    /// the path names it, then the `search_path` entries that exist (`"$user"` is the
    /// session user's schema, which exists only if it was created).
    pub fn search_path(&self) -> Vec<String> {
        let raw = self
            .settings
            .get("search_path")
            .unwrap_or_else(|_| "\"$user\", public".to_string());
        let mut path: Vec<String> = Vec::new();
        for item in split_search_path(&raw) {
            let name = if item == "$user" {
                self.user.clone()
            } else {
                item
            };
            if oids::namespace_oid(&name).is_some() && !path.contains(&name) {
                path.push(name);
            }
        }
        if !path.iter().any(|p| p == "pg_catalog") {
            path.insert(0, "pg_catalog".to_string());
        }
        if let Some(temp) = &self.temp_schema {
            path.insert(0, temp.clone());
        }
        path
    }

    /// `current_schema()`: the first schema of the search path that exists, not counting
    /// the implicit `pg_catalog`.
    pub fn current_schema(&self) -> Option<String> {
        self.current_schemas(false).into_iter().next()
    }

    /// `current_schemas(include_implicit)`.
    pub fn current_schemas(&self, include_implicit: bool) -> Vec<String> {
        let raw = self.settings.get("search_path").unwrap_or_default();
        let explicit: Vec<String> = split_search_path(&raw)
            .into_iter()
            .map(|i| if i == "$user" { self.user.clone() } else { i })
            .filter(|n| oids::namespace_oid(n).is_some())
            .collect();
        if include_implicit {
            self.search_path()
        } else {
            let mut out: Vec<String> = Vec::new();
            for n in explicit {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
            out
        }
    }

    /// `pg_table_is_visible`: the relation's schema is on the search path and no schema
    /// before it has a relation of the same name.
    pub fn is_visible(&self, rel: &Relation, all: &[Relation]) -> bool {
        for schema in self.search_path() {
            let Some(ns) = oids::namespace_oid(&schema) else {
                continue;
            };
            if ns == rel.namespace {
                return true;
            }
            if all.iter().any(|r| r.namespace == ns && r.name == rel.name) {
                return false;
            }
        }
        false
    }

    /// Looks a relation up by the text of a `regclass` value: `name`, `schema.name`, with
    /// double quotes where needed, or a number (an OID).
    pub fn resolve_relation(&self, text: &str, all: &[Relation]) -> Option<u32> {
        let text = text.trim();
        if let Ok(oid) = text.parse::<u32>() {
            return Some(oid);
        }
        let parts = parse_identifier(text).ok()?;
        match parts.as_slice() {
            [name] => {
                for schema in self.search_path() {
                    let ns = oids::namespace_oid(&schema)?;
                    if let Some(r) = all.iter().find(|r| r.namespace == ns && &r.name == name) {
                        return Some(r.oid);
                    }
                }
                None
            }
            [schema, name] | [_, schema, name] => {
                let ns = oids::namespace_oid(schema)?;
                all.iter()
                    .find(|r| r.namespace == ns && &r.name == name)
                    .map(|r| r.oid)
            }
            _ => None,
        }
    }

    /// The text of a `regclass` value: the name, schema-qualified when the relation is not
    /// visible, the number when there is no such relation.
    pub fn regclass_text(&self, oid: u32, all: &[Relation]) -> String {
        match all.iter().find(|r| r.oid == oid) {
            Some(r) if self.is_visible(r, all) => quote_ident(&r.name),
            Some(r) => format!("{}.{}", quote_ident(&r.schema()), quote_ident(&r.name)),
            None => oid.to_string(),
        }
    }

    /// Bytes in the relation's main fork (`pg_relation_size`, `pg_table_size`); 0 for
    /// iolab's catalogs, which live in memory. `None` when there is no such relation.
    pub fn relation_size(&self, oid: u32) -> Option<i64> {
        if let Some(t) = self.tables.iter().find(|t| t.oid == oid) {
            return Some(
                self.db
                    .table_blocks(t)
                    .map(|b| b as i64 * 8192)
                    .unwrap_or(0),
            );
        }
        if let Some(i) = self.index_def(oid) {
            return Some(self.index_blocks(i) * 8192);
        }
        self.relation(oid).map(|_| 0)
    }

    /// The default of column `column` of table `table_oid`, if it has one.
    pub fn column_default(&self, table_oid: u32, column: &str) -> Option<&ColumnDefault> {
        self.defaults
            .iter()
            .find(|(t, d)| *t == table_oid && d.column == column)
            .map(|(_, d)| d)
    }

    /// Whether table `table_oid` has an index (`relhasindex`).
    pub fn has_index(&self, table_oid: u32) -> bool {
        self.indexes.iter().any(|i| i.table_oid == table_oid)
    }

    /// The index with OID `oid`, if it is one.
    pub fn index_def(&self, oid: u32) -> Option<&IndexDef> {
        self.indexes.iter().find(|i| i.oid == oid)
    }

    /// Bytes of the indexes of table `table_oid` (`pg_indexes_size`).
    pub fn indexes_size(&self, table_oid: u32) -> i64 {
        self.indexes
            .iter()
            .filter(|i| i.table_oid == table_oid)
            .map(|i| self.index_blocks(i) * 8192)
            .sum()
    }

    fn all_visible(&self, t: &TableDef) -> u32 {
        self.db.vm.count(t.relfilenode, t.relpages)
    }

    fn index_blocks(&self, index: &IndexDef) -> i64 {
        self.db
            .relfile(index.relfilenode)
            .map(|f| f.nblocks() as i64)
            .unwrap_or(0)
    }

    /// An index as `pg_class` describes it: its key columns are its attributes, named
    /// and typed as the table's columns.
    fn index_relation(&self, index: &IndexDef) -> Option<Relation> {
        let table = self.tables.iter().find(|t| t.oid == index.table_oid)?;
        Some(Relation {
            oid: index.oid,
            name: index.name.clone(),
            namespace: oids::namespace_oid(&index.schema).unwrap_or(oids::PUBLIC_NAMESPACE),
            kind: 'i',
            persistence: index.persistence.code(),
            am: oids::BTREE_AM,
            relfilenode: index.relfilenode,
            pages: self.index_blocks(index),
            all_visible: 0,
            // A B-tree holds an entry for every row, so its count is the table's (as
            // PostgreSQL's VACUUM and ANALYZE record it for the index too).
            tuples: table.reltuples,
            columns: index
                .columns
                .iter()
                .map(|&c| {
                    let col = &table.columns[c];
                    RelColumn {
                        name: col.name.clone(),
                        type_oid: col.ty.oid(),
                        typmod: col.ty.typmod(),
                        not_null: false,
                    }
                })
                .collect(),
            has_index: false,
            options: index.reloptions.clone(),
            dropped_attributes: Vec::new(),
        })
    }

    /// `pg_get_indexdef(index)`: the statement that creates the index, as PostgreSQL
    /// prints it (`CREATE INDEX t_a_idx ON public.t USING btree (a)`).
    pub fn indexdef(&self, index: &IndexDef) -> Option<String> {
        let table = self.tables.iter().find(|t| t.oid == index.table_oid)?;
        let columns: Vec<String> = index
            .columns
            .iter()
            .map(|&c| quote_ident(&table.columns[c].name))
            .collect();
        let with = if index.reloptions.is_empty() {
            String::new()
        } else {
            format!(
                " WITH ({})",
                crate::sql::reloptions::with_clause(&index.reloptions)
            )
        };
        Some(format!(
            "CREATE {}INDEX {} ON {}.{} USING btree ({}){with}",
            if index.unique { "UNIQUE " } else { "" },
            quote_ident(&index.name),
            quote_ident(&table.schema),
            quote_ident(&table.name),
            columns.join(", ")
        ))
    }

    /// `pg_get_indexdef(index, column, …)`: the key of column `column` (from 1).
    pub fn indexdef_column(&self, index: &IndexDef, column: usize) -> Option<String> {
        let table = self.tables.iter().find(|t| t.oid == index.table_oid)?;
        let c = *index.columns.get(column.checked_sub(1)?)?;
        Some(quote_ident(&table.columns[c].name))
    }
}

/// A user's view as `pg_class` describes it: relkind 'v', no storage.
fn view_relation(v: &ViewDef) -> Relation {
    Relation {
        oid: v.oid,
        name: v.name.clone(),
        namespace: oids::namespace_oid(&v.schema).unwrap_or(oids::PUBLIC_NAMESPACE),
        kind: 'v',
        persistence: 'p',
        am: 0,
        relfilenode: 0,
        pages: 0,
        all_visible: 0,
        tuples: -1.0,
        columns: v
            .columns
            .iter()
            .map(|c| RelColumn {
                name: c.name.clone(),
                type_oid: c.type_oid,
                typmod: c.typmod,
                not_null: false,
            })
            .collect(),
        has_index: false,
        options: Vec::new(),
        dropped_attributes: Vec::new(),
    }
}

fn user_relation(t: &TableDef, has_index: bool, all_visible: u32) -> Relation {
    Relation {
        oid: t.oid,
        name: t.name.clone(),
        namespace: oids::namespace_oid(&t.schema).unwrap_or(oids::PUBLIC_NAMESPACE),
        kind: 'r',
        persistence: t.persistence.code(),
        am: oids::HEAP_AM,
        relfilenode: t.relfilenode,
        pages: t.relpages as i64,
        all_visible: all_visible as i64,
        tuples: t.reltuples,
        columns: t
            .columns
            .iter()
            .map(|c| RelColumn {
                name: c.name.clone(),
                type_oid: c.ty.oid(),
                typmod: c.ty.typmod(),
                not_null: c.not_null,
            })
            .collect(),
        has_index,
        options: t.reloptions.clone(),
        dropped_attributes: t
            .stored
            .dropped
            .iter()
            .map(|d| (d.attnum, d.ty.oid()))
            .collect(),
    }
}

fn catalog_relation(
    oid: u32,
    name: &str,
    namespace: u32,
    kind: char,
    columns: &[ColumnSpec],
) -> Relation {
    Relation {
        oid,
        name: name.to_string(),
        namespace,
        kind,
        persistence: 'p',
        am: if kind == 'r' { oids::HEAP_AM } else { 0 },
        relfilenode: if kind == 'r' { oid } else { 0 },
        pages: 0,
        all_visible: 0,
        tuples: -1.0,
        columns: columns
            .iter()
            .map(|c| RelColumn {
                name: c.name.clone(),
                type_oid: c.type_oid(),
                typmod: -1,
                not_null: c.not_null,
            })
            .collect(),
        has_index: false,
        options: Vec::new(),
        dropped_attributes: Vec::new(),
    }
}

/// The entries of a `search_path` value, unquoted (`"$user"` stays `$user`).
pub fn split_search_path(raw: &str) -> Vec<String> {
    raw.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(
            |s| match s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                Some(inner) => inner.replace("\"\"", "\""),
                None => s.to_lowercase(),
            },
        )
        .collect()
}

/// Splits a possibly qualified SQL identifier (`public."My Table"`) into its parts, as
/// `parse_ident` does: unquoted parts are lower-cased, quoted ones kept exactly.
pub fn parse_identifier(text: &str) -> Result<Vec<String>, String> {
    let invalid = || format!("string is not a valid identifier: \"{text}\"");
    let mut parts = Vec::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut part = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        part.push('"');
                    }
                    Some('"') => break,
                    Some(c) => part.push(c),
                    None => return Err(format!("string is not a valid identifier: \"{text}\"")),
                }
            }
            if part.is_empty() {
                return Err(invalid());
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' || c.is_whitespace() {
                    break;
                }
                if !(c.is_alphanumeric() || c == '_' || c == '$') {
                    return Err(invalid());
                }
                part.push(c.to_ascii_lowercase());
                chars.next();
            }
            if part.is_empty() {
                return Err(invalid());
            }
        }
        parts.push(part);
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            None => return Ok(parts),
            Some('.') => continue,
            Some(_) => return Err(invalid()),
        }
    }
}

/// `quote_ident`: double quotes unless the name is a lower-case identifier that is not a
/// keyword (the settings crate holds PostgreSQL's keyword list).
pub fn quote_ident(name: &str) -> String {
    iolab_settings::quote_identifier(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_parse_like_parse_ident() {
        assert_eq!(parse_identifier("public.T").unwrap(), vec!["public", "t"]);
        assert_eq!(
            parse_identifier("\"My \"\"T\"\"\"").unwrap(),
            vec!["My \"T\""]
        );
        assert_eq!(parse_identifier(" a . \"B\" ").unwrap(), vec!["a", "B"]);
        assert!(parse_identifier("a..b").is_err());
        assert!(parse_identifier("a-b").is_err());
        assert!(parse_identifier("\"\"").is_err());
    }

    #[test]
    fn quote_ident_quotes_what_postgres_quotes() {
        assert_eq!(quote_ident("eic_uniform"), "eic_uniform");
        assert_eq!(quote_ident("Foo"), "\"Foo\"");
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("a b"), "\"a b\"");
        assert_eq!(quote_ident("1a"), "\"1a\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn search_path_entries_unquote() {
        assert_eq!(
            split_search_path("\"$user\", public"),
            vec!["$user", "public"]
        );
        assert_eq!(split_search_path("Public, \"My\""), vec!["public", "My"]);
    }
}
