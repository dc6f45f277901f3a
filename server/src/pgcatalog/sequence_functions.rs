//! `nextval`, `currval`, `setval` and `lastval`, and what a session remembers of the
//! sequences it used.
//!
//! Values come from the catalog's durable counters (`iolab_catalog::sequence_values`,
//! which explains what survives a crash); nothing here is part of a transaction, so a
//! ROLLBACK gives no value back, as in PostgreSQL. Each session remembers the last value
//! `nextval` (or `setval(…, true)`) gave it per sequence (`currval`) and which sequence
//! `nextval` used last (`lastval`). A column default `nextval(…)` filled in by INSERT or
//! COPY goes through [`SessionSequences::next_values`] too, so `currval` sees it.
//!
//! A sequence argument is an OID (after `'s'::regclass`) or a name in text (`'s'`,
//! `'public.s'`, `'"S"'`); the name of no relation is 42P01, the name of a table 42809.

use std::collections::HashMap;

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result;
use iolab_catalog::{sqlstate, Catalog, PgError, PgResult, Position, SequenceDef};
use parking_lot::Mutex;

use super::batch::V;
use super::functions::{def, ints, per_row, pg, texts, Ctx, Def};
use super::snapshot::parse_identifier;

/// What one session remembers of the sequences it used.
#[derive(Default)]
pub struct SessionSequences {
    state: Mutex<Remembered>,
}

#[derive(Default)]
struct Remembered {
    /// `currval` of each sequence, by OID.
    current: HashMap<u32, i64>,
    /// The sequence `nextval` used last (`lastval`).
    last_used: Option<u32>,
}

impl SessionSequences {
    /// Hands out `n` values of `def` (`nextval` n times) and remembers the last.
    pub fn next_values(
        &self,
        catalog: &Catalog,
        def: &SequenceDef,
        n: usize,
    ) -> PgResult<Vec<i64>> {
        let values = catalog.sequence_values.next_values(def, n)?;
        if let Some(&last) = values.last() {
            let mut state = self.state.lock();
            state.current.insert(def.oid, last);
            state.last_used = Some(def.oid);
        }
        Ok(values)
    }

    fn currval(&self, def: &SequenceDef) -> PgResult<i64> {
        self.state
            .lock()
            .current
            .get(&def.oid)
            .copied()
            .ok_or_else(|| {
                PgError::new(
                    sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!(
                        "currval of sequence \"{}\" is not yet defined in this session",
                        def.name
                    ),
                )
            })
    }

    fn lastval(&self, catalog: &Catalog) -> PgResult<i64> {
        let state = self.state.lock();
        let not_yet = || {
            PgError::new(
                sqlstate::OBJECT_NOT_IN_PREREQUISITE_STATE,
                "lastval is not yet defined in this session",
            )
        };
        let oid = state.last_used.ok_or_else(not_yet)?;
        if catalog.sequence_by_oid(oid).is_none() {
            return Err(not_yet());
        }
        state.current.get(&oid).copied().ok_or_else(not_yet)
    }

    fn setval(
        &self,
        catalog: &Catalog,
        def: &SequenceDef,
        value: i64,
        called: bool,
    ) -> PgResult<()> {
        def.check_setval(value)?;
        catalog.sequence_values.set(
            def,
            Position {
                last_value: value,
                is_called: called,
            },
        )?;
        if called {
            self.state.lock().current.insert(def.oid, value);
        }
        Ok(())
    }
}

/// The sequence a `regclass` argument names: by OID, or by name — unqualified, in the
/// session's temporary schema `temp` first (a temporary table's `serial` column owns one
/// there), then in `public`.
pub fn resolve_sequence(
    catalog: &Catalog,
    temp: Option<&str>,
    oid: Option<i64>,
    name: Option<&str>,
) -> PgResult<SequenceDef> {
    if let Some(oid) = oid {
        let oid = oid as u32;
        if let Some(def) = catalog.sequence_by_oid(oid) {
            return Ok(def);
        }
        return Err(match catalog.table_by_oid(oid) {
            Some(t) => not_a_sequence(&t.name),
            None => PgError::new(
                sqlstate::UNDEFINED_TABLE,
                format!("could not open relation with OID {oid}"),
            ),
        });
    }
    let text = name.unwrap_or_default();
    let parts = parse_identifier(text).map_err(|_| PgError::undefined_table(text))?;
    let (schema, relname) = match parts.as_slice() {
        [n] => (None, n.as_str()),
        [s, n] | [_, s, n] => (Some(s.as_str()), n.as_str()),
        _ => return Err(PgError::undefined_table(text)),
    };
    let schema = Catalog::schema_in(temp, schema, |s| catalog.sequence(s, relname).is_some());
    let schema = schema.as_str();
    if let Some(def) = catalog.sequence(schema, relname) {
        return Ok(def);
    }
    if catalog.relation_name_taken(schema, relname) {
        return Err(not_a_sequence(relname));
    }
    Err(PgError::undefined_table(text))
}

fn not_a_sequence(name: &str) -> PgError {
    PgError::new(
        sqlstate::WRONG_OBJECT_TYPE,
        format!("\"{name}\" is not a sequence"),
    )
}

/// The sequence named by argument `a` in each row (NULL stays NULL).
fn sequences(ctx: &Ctx, a: &ArrayRef, rows: usize) -> Result<Vec<Option<SequenceDef>>> {
    let catalog = &ctx.shared.db.catalog;
    let temp = ctx.shared.session.read().as_ref().and_then(|s| s.2.clone());
    let temp = temp.as_deref();
    let text = matches!(
        a.data_type(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    );
    // Most calls name one sequence for every row: resolve each distinct argument once.
    let mut found: HashMap<String, SequenceDef> = HashMap::new();
    let keys: Vec<Option<String>> = if text {
        texts(a)?
    } else {
        ints(a)?
            .into_iter()
            .map(|o| o.map(|o| format!("#{o}")))
            .collect()
    };
    let mut out = Vec::with_capacity(rows);
    for key in keys.into_iter().take(rows) {
        let Some(key) = key else {
            out.push(None);
            continue;
        };
        if !found.contains_key(&key) {
            let def = match key.strip_prefix('#') {
                Some(oid) if !text => resolve_sequence(catalog, temp, oid.parse().ok(), None),
                _ => resolve_sequence(catalog, temp, None, Some(&key)),
            }
            .map_err(pg)?;
            found.insert(key.clone(), def);
        }
        out.push(found.get(&key).cloned());
    }
    Ok(out)
}

/// The four functions, bound to the session through [`Ctx::sequences`].
pub(super) fn definitions() -> Vec<Def> {
    vec![
        def("nextval", 1..=1, DataType::Int64, |ctx, args, rows| {
            let seqs = sequences(ctx, &args[0], rows)?;
            let catalog = &ctx.shared.db.catalog;
            per_row(rows, |i| match &seqs[i] {
                None => Ok(V::Null),
                Some(def) => {
                    let v = ctx.sequences.next_values(catalog, def, 1).map_err(pg)?;
                    Ok(V::Int(v[0]))
                }
            })
        })
        .volatile()
        .each_row(),
        def("currval", 1..=1, DataType::Int64, |ctx, args, rows| {
            let seqs = sequences(ctx, &args[0], rows)?;
            per_row(rows, |i| match &seqs[i] {
                None => Ok(V::Null),
                Some(def) => Ok(V::Int(ctx.sequences.currval(def).map_err(pg)?)),
            })
        })
        .volatile()
        .each_row(),
        def("lastval", 0..=0, DataType::Int64, |ctx, _, rows| {
            let catalog = &ctx.shared.db.catalog;
            per_row(rows, |_| {
                Ok(V::Int(ctx.sequences.lastval(catalog).map_err(pg)?))
            })
        })
        .volatile()
        .each_row(),
        def("setval", 2..=3, DataType::Int64, |ctx, args, rows| {
            let seqs = sequences(ctx, &args[0], rows)?;
            let values = ints(&args[1])?;
            let called = match args.get(2) {
                Some(a) => super::functions::bools(a)?,
                None => vec![Some(true); rows],
            };
            let catalog = &ctx.shared.db.catalog;
            per_row(rows, |i| match (&seqs[i], values[i], called[i]) {
                (Some(def), Some(v), Some(c)) => {
                    ctx.sequences.setval(catalog, def, v, c).map_err(pg)?;
                    Ok(V::Int(v))
                }
                _ => Ok(V::Null),
            })
        })
        .volatile()
        .each_row(),
    ]
}
