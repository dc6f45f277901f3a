//! Views in the catalog (PostgreSQL's `pg_class` rows of relkind 'v' with their
//! `pg_rewrite` rule and `pg_depend` entries).
//!
//! A view is kept as the SQL text of its query, its result columns (name, type OID and
//! typmod, as a client sees them in a RowDescription) and the relations its query reads
//! directly (`depends_on`: table and view OIDs). The server plans the text again each time
//! a statement names the view, so the view always reads the current rows and statistics.
//!
//! Dependencies work as PostgreSQL's `pg_depend` does for views: a table or view that
//! other views read cannot be dropped without CASCADE, and with CASCADE its dependents go
//! too, found by following `depends_on` backwards ([`Catalog::dependent_views`]: every
//! view that reads the relation directly or through other views, each once, depth first
//! as PostgreSQL lists them; a cycle, which CREATE OR REPLACE can make as in
//! PostgreSQL, ends the walk).
//!
//! CREATE OR REPLACE VIEW keeps the view's OID and may only add columns at the end:
//! [`check_replacement`] is PostgreSQL's rule. Every change of a view bumps
//! [`Catalog::views_generation`], so plans cached from view definitions can tell they
//! are stale.

use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};

use crate::error::{sqlstate, PgError, PgResult};
use crate::store::{Catalog, CatalogFile};

/// One result column of a view.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewColumn {
    pub name: String,
    /// PostgreSQL type OID (`pg_attribute.atttypid`).
    pub type_oid: u32,
    /// `pg_attribute.atttypmod` (-1: none).
    pub typmod: i32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ViewDef {
    pub oid: u32,
    pub schema: String,
    pub name: String,
    pub columns: Vec<ViewColumn>,
    /// The view's query as SQL text (what the view runs and `pg_get_viewdef` shows).
    pub query: String,
    /// OIDs of the tables and views the query reads directly.
    pub depends_on: Vec<u32>,
}

/// PostgreSQL's rule for CREATE OR REPLACE VIEW: the new query must produce the old
/// columns, with the same names and types, in the same places; it may add columns after
/// them. `type_name` spells a type for the message (`integer`).
pub fn check_replacement(
    old: &[ViewColumn],
    new: &[ViewColumn],
    type_name: impl Fn(u32, i32) -> String,
) -> PgResult<()> {
    if new.len() < old.len() {
        return Err(PgError::new(
            sqlstate::INVALID_TABLE_DEFINITION,
            "cannot drop columns from view",
        ));
    }
    for (o, n) in old.iter().zip(new) {
        if o.name != n.name {
            return Err(PgError::new(
                sqlstate::INVALID_TABLE_DEFINITION,
                format!(
                    "cannot change name of view column \"{}\" to \"{}\"",
                    o.name, n.name
                ),
            )
            .with_hint(
                "Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead.",
            ));
        }
        if (o.type_oid, o.typmod) != (n.type_oid, n.typmod) {
            return Err(PgError::new(
                sqlstate::INVALID_TABLE_DEFINITION,
                format!(
                    "cannot change data type of view column \"{}\" from {} to {}",
                    o.name,
                    type_name(o.type_oid, o.typmod),
                    type_name(n.type_oid, n.typmod)
                ),
            ));
        }
    }
    Ok(())
}

impl CatalogFile {
    pub(crate) fn view_named(&self, schema: &str, name: &str) -> Option<&ViewDef> {
        self.views
            .values()
            .find(|v| v.schema == schema && v.name == name)
    }
}

/// The views that read `oid` directly or through other views, each once, depth first:
/// a view that reads `oid` (in OID order), then the views that read it, and so on, as
/// PostgreSQL lists them (`views` is every view; a cycle ends the walk).
fn dependents_in<'a>(views: impl Iterator<Item = &'a ViewDef> + Clone, oid: u32) -> Vec<ViewDef> {
    let mut found: Vec<ViewDef> = Vec::new();
    // The relations whose readers are still to be listed, innermost last.
    let mut stack: Vec<std::vec::IntoIter<ViewDef>> = Vec::new();
    let readers = |of: u32| -> Vec<ViewDef> {
        let mut r: Vec<ViewDef> = views
            .clone()
            .filter(|v| v.depends_on.contains(&of))
            .cloned()
            .collect();
        r.sort_by_key(|v| v.oid);
        r
    };
    stack.push(readers(oid).into_iter());
    while let Some(level) = stack.last_mut() {
        let Some(view) = level.next() else {
            stack.pop();
            continue;
        };
        if view.oid == oid || found.iter().any(|f| f.oid == view.oid) {
            continue;
        }
        let below = readers(view.oid);
        found.push(view);
        stack.push(below.into_iter());
    }
    found
}

impl Catalog {
    /// All views, ordered by OID.
    pub fn views(&self) -> Vec<ViewDef> {
        self.data.read().views.values().cloned().collect()
    }

    pub fn view(&self, schema: &str, name: &str) -> Option<ViewDef> {
        self.data.read().view_named(schema, name).cloned()
    }

    pub fn view_by_oid(&self, oid: u32) -> Option<ViewDef> {
        self.data.read().views.get(&oid).cloned()
    }

    /// Which generation of view definitions the catalog holds (see the module comment).
    pub fn views_generation(&self) -> u64 {
        self.views_generation.load(Ordering::Acquire)
    }

    pub(crate) fn views_changed(&self) {
        self.views_generation.fetch_add(1, Ordering::AcqRel);
    }

    /// The views that read relation `oid`, directly or through other views, nearest first.
    pub fn dependent_views(&self, oid: u32) -> Vec<ViewDef> {
        dependents_in(self.data.read().views.values(), oid)
    }

    /// Creates view `def` (its OID is assigned), or with `replace` replaces the view of
    /// that name, keeping its OID (the caller checked [`check_replacement`]). Returns the
    /// view as stored and the definition it replaced.
    pub fn create_view(
        &self,
        mut def: ViewDef,
        replace: bool,
    ) -> PgResult<(ViewDef, Option<ViewDef>)> {
        if def.schema != "public" {
            return Err(PgError::new(
                sqlstate::INVALID_SCHEMA_NAME,
                format!("schema \"{}\" does not exist", def.schema),
            ));
        }
        let mut data = self.data.write();
        let old = data.view_named(&def.schema, &def.name).cloned();
        match &old {
            Some(old) if replace => def.oid = old.oid,
            _ if data.relation_name_taken(&def.schema, &def.name) => {
                return Err(PgError::new(
                    sqlstate::DUPLICATE_TABLE,
                    format!("relation \"{}\" already exists", def.name),
                ))
            }
            _ => {
                def.oid = data.next_oid;
                data.next_oid += 1;
            }
        }
        assert!(
            old.as_ref().is_none_or(|o| o.oid == def.oid),
            "a replaced view keeps its OID"
        );
        data.views.insert(def.oid, def.clone());
        self.save(&data)?;
        self.views_changed();
        Ok((def, old))
    }

    /// Removes a view; returns it.
    pub fn drop_view(&self, oid: u32) -> PgResult<ViewDef> {
        let mut data = self.data.write();
        let def = data
            .views
            .remove(&oid)
            .ok_or_else(|| PgError::internal(format!("no view with oid {oid}")))?;
        self.save(&data)?;
        self.views_changed();
        Ok(def)
    }

    /// Puts a view definition back as it was (a DROP or CREATE OR REPLACE rolled back):
    /// replaces the view of the same OID if there is one.
    pub fn restore_view(&self, def: ViewDef) -> PgResult<()> {
        let mut data = self.data.write();
        let same = data.views.get(&def.oid).is_some_and(|v| v.name == def.name);
        if !same && data.relation_name_taken(&def.schema, &def.name) {
            return Err(PgError::new(
                sqlstate::DUPLICATE_TABLE,
                format!("relation \"{}\" already exists", def.name),
            ));
        }
        data.views.insert(def.oid, def);
        self.save(&data)?;
        self.views_changed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(name: &str, type_oid: u32) -> ViewColumn {
        ViewColumn {
            name: name.into(),
            type_oid,
            typmod: -1,
        }
    }

    fn view(oid: u32, name: &str, depends_on: &[u32]) -> ViewDef {
        ViewDef {
            oid,
            schema: "public".into(),
            name: name.into(),
            columns: vec![col("a", 23)],
            query: "SELECT 1 AS a".into(),
            depends_on: depends_on.to_vec(),
        }
    }

    fn type_name(oid: u32, _: i32) -> String {
        match oid {
            23 => "integer".into(),
            20 => "bigint".into(),
            _ => oid.to_string(),
        }
    }

    #[test]
    fn replacement_may_only_add_columns_at_the_end() {
        let old = [col("a", 23), col("b", 25)];
        check_replacement(&old, &[col("a", 23), col("b", 25), col("c", 20)], type_name).unwrap();
        check_replacement(&old, &old, type_name).unwrap();
        let e = check_replacement(&old, &[col("a", 23)], type_name).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("42P16", "cannot drop columns from view")
        );
        let e = check_replacement(&old, &[col("x", 23), col("b", 25)], type_name).unwrap_err();
        assert_eq!(
            e.message,
            "cannot change name of view column \"a\" to \"x\""
        );
        assert!(e.hint.is_some());
        let e = check_replacement(&old, &[col("a", 20), col("b", 25)], type_name).unwrap_err();
        assert_eq!(
            e.message,
            "cannot change data type of view column \"a\" from integer to bigint"
        );
        // A new column in front shifts the old ones: a rename.
        let e = check_replacement(&old, &[col("c", 23), col("a", 23), col("b", 25)], type_name)
            .unwrap_err();
        assert_eq!(
            e.message,
            "cannot change name of view column \"a\" to \"c\""
        );
    }

    #[test]
    fn dependents_are_found_through_views_nearest_first() {
        // t = 1; v reads t; w reads v; x reads t and w; y reads nothing.
        let views = [
            view(4, "x", &[1, 3]),
            view(2, "v", &[1]),
            view(3, "w", &[2]),
            view(5, "y", &[]),
        ];
        let names = |oid| -> Vec<String> {
            dependents_in(views.iter(), oid)
                .into_iter()
                .map(|v| v.name)
                .collect()
        };
        assert_eq!(names(1), ["v", "w", "x"]);
        assert_eq!(names(2), ["w", "x"]);
        assert!(names(5).is_empty());
        // A cycle (a reads b, b reads a) ends.
        let cycle = [view(10, "a", &[11]), view(11, "b", &[10])];
        let found: Vec<String> = dependents_in(cycle.iter(), 10)
            .into_iter()
            .map(|v| v.name)
            .collect();
        assert_eq!(found, ["b"]);
    }

    #[test]
    fn views_take_relation_names_and_keep_their_oid_when_replaced() {
        let dir = std::env::temp_dir().join(format!("iolab-view-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let catalog = Catalog::open(&dir).unwrap();
        let g0 = catalog.views_generation();
        let (v, old) = catalog.create_view(view(0, "v", &[]), false).unwrap();
        assert!(old.is_none());
        assert!(catalog.relation_name_taken("public", "v"));
        let e = catalog.create_view(view(0, "v", &[]), false).unwrap_err();
        assert_eq!(e.code, "42P07");
        let mut wider = view(0, "v", &[]);
        wider.columns.push(col("b", 25));
        let (replaced, old) = catalog.create_view(wider, true).unwrap();
        assert_eq!(replaced.oid, v.oid);
        assert_eq!(old.unwrap().columns.len(), 1);
        assert!(catalog.views_generation() > g0);
        drop(catalog);
        // Persisted.
        let catalog = Catalog::open(&dir).unwrap();
        assert_eq!(catalog.view("public", "v").unwrap().columns.len(), 2);
        let dropped = catalog.drop_view(v.oid).unwrap();
        assert!(catalog.view("public", "v").is_none());
        catalog.restore_view(dropped).unwrap();
        assert_eq!(catalog.view_by_oid(v.oid).unwrap().name, "v");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
