//! psql's meta-command queries that DataFusion cannot plan, answered from the catalog.
//!
//! Most of what psql sends for `\d`, `\dt+`, `\di`, `\dn+`, `\db`, `\dx` is ordinary SQL
//! over the catalog views and runs through DataFusion after `rewrite`. What `\d NAME`
//! sends after finding the relation is not: correlated sub-selects over `pg_attrdef` and
//! `pg_collation`, `array(select …)`, `= any(array)`, three-way UNIONs over the
//! publication catalogs. Those queries are recognised here by fragments of their text
//! (whitespace normalised, so any psql from 12 to 18 matches, whatever the variant) and
//! answered directly, with the columns psql reads, in the order it reads them. `\l`, whose
//! psql-15 query names a column PostgreSQL 17 renamed, and `\du`, which uses
//! `ARRAY(SELECT …)`, are answered here too.
//!
//! | psql sends (recognised by) | answer |
//! |---|---|
//! | `SELECT c.relchecks, c.relkind, …` (`\d` step 2: the relation's kind) | one row from `pg_class` |
//! | `… FROM pg_catalog.pg_attribute a WHERE a.attrelid = '…'` with `format_type` (columns) | the columns, with storage etc. for `\d+` |
//! | `SELECT c2.relname, i.indisprimary, …` (`\d` step 4: the table's indexes) | one row per index, for the `Indexes:` footer |
//! | `FROM pg_catalog.pg_policy pol` / `pg_statistic_ext` / `pg_publication p` / `pg_inherits i` | none |
//! | `SELECT i.indisunique, i.indisprimary, …` (`\d INDEX`) | the index's kind and table, for its footer |
//! | `FROM pg_catalog.pg_database d` (`\l`, `\l+`) | the `postgres` database, columns as the query names them |
//! | `FROM pg_catalog.pg_roles r` with `memberof` (`\du`) | the login roles |

// Results carry iolab's PgError, as every statement's result does.
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use iolab_catalog::PgError;

use super::batch::{build_batch, V};
use super::snapshot::{Relation, Snapshot};
use super::{functions, oids, types, SessionInfo};

/// A result column: name and Arrow type.
type Col = (&'static str, DataType);

fn text(name: &'static str) -> Col {
    (name, DataType::Utf8)
}

fn boolean(name: &'static str) -> Col {
    (name, DataType::Boolean)
}

fn result(
    cols: Vec<(String, DataType)>,
    rows: Vec<Vec<V>>,
) -> Result<(SchemaRef, Vec<RecordBatch>), PgError> {
    let schema: SchemaRef = Arc::new(Schema::new(
        cols.into_iter()
            .map(|(n, t)| Field::new(n, t, true))
            .collect::<Vec<_>>(),
    ));
    let batch = build_batch(&schema, &rows).map_err(|e| PgError::internal(e.to_string()))?;
    Ok((schema, vec![batch]))
}

fn owned(cols: Vec<Col>) -> Vec<(String, DataType)> {
    cols.into_iter().map(|(n, t)| (n.to_string(), t)).collect()
}

/// An empty result with these columns.
fn empty(cols: Vec<Col>) -> Option<Result<(SchemaRef, Vec<RecordBatch>), PgError>> {
    Some(result(owned(cols), Vec::new()))
}

/// Whitespace runs to one space, no trailing `;`.
fn normalise(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    for word in sql.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out.trim_end_matches(';').trim_end().to_string()
}

/// The number in `<prefix>'<digits>'`, e.g. the OID in `a.attrelid = '16384'`.
fn quoted_number_after(sql: &str, prefix: &str) -> Option<u32> {
    let rest = &sql[sql.find(prefix)? + prefix.len()..];
    let rest = rest.trim_start().strip_prefix('\'')?;
    rest[..rest.find('\'')?].parse().ok()
}

/// The `AS "Alias"` names of a select list, in order.
fn aliases(sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    let lower = sql.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(" as \"") {
        let start = from + i + 5;
        let Some(len) = sql[start..].find('"') else {
            break;
        };
        out.push(sql[start..start + len].to_string());
        from = start + len + 1;
    }
    out
}

/// Answers `sql` if it is one of psql's meta-command queries DataFusion cannot run.
pub fn intercept(
    sql: &str,
    info: &SessionInfo,
) -> Option<Result<(SchemaRef, Vec<RecordBatch>), PgError>> {
    if !sql.contains("pg_catalog.") {
        return None;
    }
    let q = normalise(sql);
    if q.starts_with("SELECT c.relchecks, c.relkind, c.relhasindex") {
        let oid = quoted_number_after(&q, "WHERE c.oid = ")?;
        return Some(relation_kind(&q, &info.snapshot(), oid));
    }
    if q.contains("FROM pg_catalog.pg_attribute a")
        && q.contains("pg_catalog.format_type(a.atttypid, a.atttypmod)")
    {
        let oid = quoted_number_after(&q, "a.attrelid = ")?;
        return Some(columns(&q, &info.snapshot(), oid));
    }
    if q.starts_with("SELECT c2.relname, i.indisprimary, i.indisunique") {
        return Some(table_indexes(&q, &info.snapshot()));
    }
    if q.starts_with("SELECT i.indisunique, i.indisprimary, i.indisclustered") {
        return Some(index_footer(&q, &info.snapshot()));
    }
    if q.contains("FROM pg_catalog.pg_policy pol") && q.starts_with("SELECT pol.polname") {
        return empty(vec![
            text("polname"),
            boolean("polpermissive"),
            text("array_to_string"),
            text("pg_get_expr"),
            text("pg_get_expr"),
            text("cmd"),
        ]);
    }
    if q.contains("FROM pg_catalog.pg_statistic_ext")
        && q.contains("stxrelid")
        && q.starts_with("SELECT oid,")
    {
        return empty(vec![
            ("oid", DataType::Int64),
            text("stxrelid"),
            text("nsp"),
            text("stxname"),
            text("columns"),
            boolean("ndist_enabled"),
            boolean("deps_enabled"),
            boolean("mcv_enabled"),
            ("stxstattarget", DataType::Int16),
        ]);
    }
    if q.starts_with("SELECT pubname") && q.contains("FROM pg_catalog.pg_publication p") {
        return empty(vec![text("pubname"), text("?column?"), text("?column?")]);
    }
    if q.contains("FROM pg_catalog.pg_class c, pg_catalog.pg_inherits i") {
        if q.contains("inhdetachpending") {
            return empty(vec![
                text("oid"),
                text("relkind"),
                boolean("inhdetachpending"),
                text("pg_get_expr"),
            ]);
        }
        return empty(vec![text("oid")]);
    }
    if q.contains("FROM pg_catalog.pg_database d") && q.contains("d.datname as \"Name\"") {
        return Some(databases(sql, info));
    }
    if q.contains("FROM pg_catalog.pg_roles r") && q.contains("as memberof") {
        return Some(roles(&q));
    }
    if q.contains("FROM pg_catalog.pg_class c") && q.contains("AS \"Column privileges\"") {
        return Some(privileges(sql, &q, info));
    }
    if q.contains("FROM pg_catalog.pg_type t")
        && q.contains("AS \"Name\"")
        && q.contains("pg_catalog.pg_type_is_visible(t.oid)")
    {
        return Some(data_types(sql, &q));
    }
    None
}

/// The name patterns of a psql query: `(column, regex)` for each
/// `column OPERATOR(pg_catalog.~) 'regex'`.
fn patterns(q: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let marker = " OPERATOR(pg_catalog.~) '";
    let mut from = 0;
    while let Some(i) = q[from..].find(marker) {
        let at = from + i;
        let column = q[..at].rsplit(' ').next().unwrap_or("").to_string();
        let mut regex = String::new();
        let mut chars = q[at + marker.len()..].chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\'' {
                if chars.peek() == Some(&'\'') {
                    chars.next();
                    regex.push('\'');
                    continue;
                }
                break;
            }
            regex.push(c);
        }
        out.push((column, regex));
        from = at + marker.len();
    }
    out
}

/// Does `name` match `regex`, one of the anchored regular expressions psql makes of a
/// name pattern (`^(eic.*)$`: `.*` for `*`, `.` for `?`, `\\x` for a literal `x`)?
pub fn psql_regex_matches(regex: &str, name: &str) -> bool {
    let body = regex
        .strip_prefix("^(")
        .and_then(|r| r.strip_suffix(")$"))
        .unwrap_or(regex);
    // Compile to: Any (.*), One (.), Lit(c)
    #[derive(Clone, Copy, PartialEq)]
    enum P {
        Any,
        One,
        Lit(char),
    }
    let mut pat = Vec::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    pat.push(P::Lit(n));
                }
            }
            '.' if chars.peek() == Some(&'*') => {
                chars.next();
                pat.push(P::Any);
            }
            '.' => pat.push(P::One),
            c => pat.push(P::Lit(c)),
        }
    }
    fn go(p: &[P], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some(P::Any) => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some(P::One) => !n.is_empty() && go(&p[1..], &n[1..]),
            Some(P::Lit(c)) => n.first() == Some(c) && go(&p[1..], &n[1..]),
        }
    }
    let name: Vec<char> = name.chars().collect();
    go(&pat, &name)
}

/// `\dp` / `\z`: privileges of the visible tables and views outside `pg_*` schemas.
/// iolab has default privileges only, no column privileges and no policies: every
/// privilege column is empty, as PostgreSQL shows a table nobody granted anything on.
fn privileges(
    sql: &str,
    q: &str,
    info: &SessionInfo,
) -> Result<(SchemaRef, Vec<RecordBatch>), PgError> {
    let names = aliases(sql);
    let s = info.snapshot();
    let all = s.relations();
    let pats = patterns(q);
    let mut rels: Vec<&Relation> = all
        .iter()
        .filter(|r| {
            matches!(r.kind, 'r' | 'v') && !r.schema().starts_with("pg_") && s.is_visible(r, &all)
        })
        .filter(|r| {
            pats.iter().all(|(col, re)| match col.as_str() {
                "c.relname" => psql_regex_matches(re, &r.name),
                "n.nspname" => psql_regex_matches(re, &r.schema()),
                _ => true,
            })
        })
        .collect();
    rels.sort_by(|a, b| (a.schema(), &a.name).cmp(&(b.schema(), &b.name)));
    let rows = rels
        .iter()
        .map(|r| {
            names
                .iter()
                .map(|n| match n.as_str() {
                    "Schema" => V::text(r.schema()),
                    "Name" => V::text(&r.name),
                    "Type" => V::text(if r.kind == 'v' { "view" } else { "table" }),
                    "Access privileges" => V::Null,
                    _ => V::text(""),
                })
                .collect()
        })
        .collect();
    result(
        names.iter().map(|n| (n.clone(), DataType::Utf8)).collect(),
        rows,
    )
}

/// `\dT[S][+]`: iolab has no user-defined types; `\dTS` lists the built-in ones.
fn data_types(sql: &str, q: &str) -> Result<(SchemaRef, Vec<RecordBatch>), PgError> {
    let names = aliases(sql);
    let pats = patterns(q);
    let rows = if q.contains("n.nspname <> 'pg_catalog'") {
        Vec::new()
    } else {
        let mut list: Vec<(String, &types::TypeRow)> = types::TYPES
            .iter()
            .filter(|t| t.category != b'A' && t.typtype == b'b')
            .map(|t| (types::format_type(t.oid, None), t))
            .filter(|(shown, t)| {
                pats.iter()
                    .all(|(_, re)| psql_regex_matches(re, t.name) || psql_regex_matches(re, shown))
            })
            .collect();
        list.sort_by(|a, b| a.0.cmp(&b.0));
        list.into_iter()
            .map(|(shown, t)| {
                names
                    .iter()
                    .map(|n| match n.as_str() {
                        "Schema" => V::text("pg_catalog"),
                        "Name" => V::text(&shown),
                        "Internal name" => V::text(t.name),
                        "Size" => V::Text(if t.len < 0 {
                            "var".to_string()
                        } else {
                            t.len.to_string()
                        }),
                        "Elements" => V::text(""),
                        "Owner" => V::text("postgres"),
                        _ => V::Null,
                    })
                    .collect()
            })
            .collect()
    };
    result(
        names.iter().map(|n| (n.clone(), DataType::Utf8)).collect(),
        rows,
    )
}

/// `\d` step 2: what kind of relation `oid` is (psql reads the columns by position).
fn relation_kind(
    q: &str,
    s: &Snapshot,
    oid: u32,
) -> Result<(SchemaRef, Vec<RecordBatch>), PgError> {
    let options_column = if q.contains("array_to_string(c.reloptions") {
        "array_to_string"
    } else {
        "?column?"
    };
    let cols = vec![
        ("relchecks".to_string(), DataType::Int16),
        ("relkind".to_string(), DataType::Utf8),
        ("relhasindex".to_string(), DataType::Boolean),
        ("relhasrules".to_string(), DataType::Boolean),
        ("relhastriggers".to_string(), DataType::Boolean),
        ("relrowsecurity".to_string(), DataType::Boolean),
        ("relforcerowsecurity".to_string(), DataType::Boolean),
        ("relhasoids".to_string(), DataType::Boolean),
        ("relispartition".to_string(), DataType::Boolean),
        (options_column.to_string(), DataType::Utf8),
        ("reltablespace".to_string(), DataType::Int64),
        ("reloftype".to_string(), DataType::Utf8),
        ("relpersistence".to_string(), DataType::Utf8),
        ("relreplident".to_string(), DataType::Utf8),
        ("amname".to_string(), DataType::Utf8),
    ];
    let rows = match s.relation(oid) {
        None => Vec::new(),
        Some(r) => vec![vec![
            V::Int(0),
            V::char(r.kind),
            V::Bool(r.has_index),
            V::Bool(r.kind == 'v'),
            V::Bool(false),
            V::Bool(false),
            V::Bool(false),
            V::Bool(false),
            V::Bool(false),
            // `\d+`: the storage parameters, shown as "Options:".
            V::text(if options_column == "array_to_string" {
                r.options.join(", ")
            } else {
                String::new()
            }),
            V::Int(0),
            V::text(""),
            V::char(r.persistence),
            V::char(r.replica_identity()),
            match r.am {
                oids::HEAP_AM => V::text("heap"),
                oids::BTREE_AM => V::text("btree"),
                _ => V::Null,
            },
        ]],
    };
    result(cols, rows)
}

/// `\d TABLE` step 4: the table's indexes, by name, for the `Indexes:` footer (psql prints
/// what follows `USING` in the definition: `"t_a_idx" btree (a)`).
fn table_indexes(q: &str, s: &Snapshot) -> Result<(SchemaRef, Vec<RecordBatch>), PgError> {
    let cols = vec![
        text("relname"),
        boolean("indisprimary"),
        boolean("indisunique"),
        boolean("indisclustered"),
        boolean("indisvalid"),
        text("pg_get_indexdef"),
        text("pg_get_constraintdef"),
        text("contype"),
        boolean("condeferrable"),
        boolean("condeferred"),
        boolean("indisreplident"),
        ("reltablespace", DataType::Int64),
    ];
    let oid = quoted_number_after(q, "WHERE c.oid = ");
    let mut indexes: Vec<_> = s
        .indexes
        .iter()
        .filter(|i| Some(i.table_oid) == oid)
        .collect();
    // ORDER BY i.indisprimary DESC, c2.relname
    indexes.sort_by(|a, b| (!a.is_primary(), &a.name).cmp(&(!b.is_primary(), &b.name)));
    let rows = indexes
        .iter()
        .map(|i| {
            let constraint = i.constraint.map(|c| c.oid);
            vec![
                V::text(&i.name),
                V::Bool(i.is_primary()),
                V::Bool(i.unique),
                V::Bool(i.clustered),
                V::Bool(true),
                V::opt_text(s.indexdef(i)),
                V::opt_text(constraint.and_then(|c| super::constraint_rows::definition(s, c))),
                V::opt_text(i.constraint.map(|c| c.kind.contype().to_string())),
                constraint.map_or(V::Null, |_| V::Bool(false)),
                constraint.map_or(V::Null, |_| V::Bool(false)),
                V::Bool(false),
                V::Int(0),
            ]
        })
        .collect();
    result(owned(cols), rows)
}

/// `\d INDEX`: what the footer `btree, for table "public.t"` is made of.
fn index_footer(q: &str, s: &Snapshot) -> Result<(SchemaRef, Vec<RecordBatch>), PgError> {
    let cols = vec![
        boolean("indisunique"),
        boolean("indisprimary"),
        boolean("indisclustered"),
        boolean("indisvalid"),
        boolean("condeferrable"),
        boolean("condeferred"),
        boolean("indisreplident"),
        boolean("indnullsnotdistinct"),
        text("amname"),
        text("relname"),
        text("pg_get_expr"),
    ];
    let rows = quoted_number_after(q, "c.oid = ")
        .and_then(|oid| s.index_def(oid))
        .and_then(|i| {
            let table = s.tables.iter().find(|t| t.oid == i.table_oid)?;
            Some(vec![
                V::Bool(i.unique),
                V::Bool(i.is_primary()),
                V::Bool(i.clustered),
                V::Bool(true),
                V::Bool(false),
                V::Bool(false),
                V::Bool(false),
                V::Bool(false),
                V::text("btree"),
                V::text(&table.name),
                V::Null,
            ])
        })
        .into_iter()
        .collect();
    result(owned(cols), rows)
}

/// `\d` step 3: the columns of relation `oid`, with the extra ones `\d+` asks for.
fn columns(q: &str, s: &Snapshot, oid: u32) -> Result<(SchemaRef, Vec<RecordBatch>), PgError> {
    let rel: Option<Relation> = s.relation(oid);
    if q.contains("AS is_key") {
        // The columns of an index: its keys, named as the table's columns.
        let mut cols = owned(vec![
            text("attname"),
            text("format_type"),
            text("is_key"),
            text("indexdef"),
        ]);
        let storage = q.contains("a.attstorage");
        let stattarget = q.contains("attstattarget");
        if storage {
            cols.push(("attstorage".into(), DataType::Utf8));
        }
        if stattarget {
            cols.push(("attstattarget".into(), DataType::Int16));
        }
        let index = s.index_def(oid);
        let rows = rel
            .iter()
            .flat_map(|r| r.columns.iter().enumerate())
            .map(|(n, c)| {
                let mut row = vec![
                    V::text(&c.name),
                    V::Text(types::format_type(c.type_oid, Some(c.typmod))),
                    V::text("yes"),
                    V::opt_text(index.and_then(|i| s.indexdef_column(i, n + 1))),
                ];
                if storage {
                    row.push(V::char(types::column_layout(c.type_oid).3 as char));
                }
                if stattarget {
                    row.push(V::Null);
                }
                row
            })
            .collect();
        return result(cols, rows);
    }
    let mut cols = owned(vec![
        text("attname"),
        text("format_type"),
        text("pg_get_expr"),
        boolean("attnotnull"),
        text("attcollation"),
        text("attidentity"),
        text("attgenerated"),
    ]);
    let storage = q.contains("a.attstorage");
    let compression = q.contains("attcompression");
    let stattarget = q.contains("attstattarget");
    let description = q.contains("col_description(a.attrelid, a.attnum)");
    if storage {
        cols.push(("attstorage".into(), DataType::Utf8));
    }
    if compression {
        cols.push(("attcompression".into(), DataType::Utf8));
    }
    if stattarget {
        cols.push(("attstattarget".into(), DataType::Int16));
    }
    if description {
        cols.push(("col_description".into(), DataType::Utf8));
    }
    let rows = rel
        .iter()
        .flat_map(|r| r.columns.iter())
        .map(|c| {
            // The catalogs' text columns are declared COLLATE "C", which psql shows.
            let catalog_table = rel
                .as_ref()
                .is_some_and(|r| r.namespace == oids::PG_CATALOG_NAMESPACE && r.kind == 'r');
            let collatable = types::type_row(c.type_oid).is_some_and(|t| t.collation == 100);
            let (default, identity) = super::sequence_views::psql_default(s, oid, &c.name);
            let mut row = vec![
                V::text(&c.name),
                V::Text(types::format_type(c.type_oid, Some(c.typmod))),
                default,
                V::Bool(c.not_null),
                if catalog_table && collatable {
                    V::text("C")
                } else {
                    V::Null
                },
                identity,
                V::text(""),
            ];
            if storage {
                row.push(V::char(types::column_layout(c.type_oid).3 as char));
            }
            if compression {
                row.push(V::text(""));
            }
            if stattarget {
                row.push(V::Null);
            }
            if description {
                row.push(V::Null);
            }
            row
        })
        .collect();
    result(cols, rows)
}

/// `\l` / `\l+`: the one database, with the columns the query names (psql 15 asks for
/// `daticulocale`, which PostgreSQL 17 renamed; later psqls ask for `datlocale` and
/// `daticurules`).
fn databases(sql: &str, info: &SessionInfo) -> Result<(SchemaRef, Vec<RecordBatch>), PgError> {
    let names = aliases(sql);
    if names.is_empty() {
        return Err(PgError::internal("unrecognised \\l query"));
    }
    let s = info.snapshot();
    let size: i64 = s
        .tables
        .iter()
        .map(|t| s.relation_size(t.oid).unwrap_or(0) + s.indexes_size(t.oid))
        .sum();
    let cols: Vec<(String, DataType)> = names.iter().map(|n| (n.clone(), DataType::Utf8)).collect();
    let row: Vec<V> = names
        .iter()
        .map(|n| match n.as_str() {
            "Name" => V::text(oids::DATABASE_NAME),
            "Owner" => V::text("postgres"),
            "Encoding" => V::text("UTF8"),
            "Collate" | "Ctype" => V::text("C"),
            "Locale Provider" => V::text("libc"),
            "Size" => V::Text(functions::size_pretty(size)),
            "Tablespace" => V::text("pg_default"),
            "Description" => V::opt_text(
                oids::SHARED_DESCRIPTIONS
                    .iter()
                    .find(|d| d.0 == oids::DATABASE_OID)
                    .map(|d| d.2),
            ),
            _ => V::Null,
        })
        .collect();
    result(cols, vec![row])
}

/// `\du`: the roles that are not predefined (`pg_…`), as psql reads them.
fn roles(q: &str) -> Result<(SchemaRef, Vec<RecordBatch>), PgError> {
    let mut cols = owned(vec![
        text("rolname"),
        boolean("rolsuper"),
        boolean("rolinherit"),
        boolean("rolcreaterole"),
        boolean("rolcreatedb"),
        boolean("rolcanlogin"),
        ("rolconnlimit", DataType::Int32),
        text("rolvaliduntil"),
        text("memberof"),
    ]);
    let replication = q.contains("r.rolreplication");
    let bypassrls = q.contains("r.rolbypassrls");
    if replication {
        cols.push(("rolreplication".into(), DataType::Boolean));
    }
    if bypassrls {
        cols.push(("rolbypassrls".into(), DataType::Boolean));
    }
    let rows = oids::ROLES
        .iter()
        .filter(|r| !r.1.starts_with("pg_"))
        .map(|&(_, name, login)| {
            let mut row = vec![
                V::text(name),
                V::Bool(login),
                V::Bool(true),
                V::Bool(login),
                V::Bool(login),
                V::Bool(login),
                V::Int(-1),
                V::Null,
                V::text("{}"),
            ];
            if replication {
                row.push(V::Bool(login));
            }
            if bypassrls {
                row.push(V::Bool(login));
            }
            row
        })
        .collect();
    result(cols, rows)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// The queries psql 15 sends (to a server of version 15 or later) for the
    /// meta-commands iolab supports, that DataFusion runs after `rewrite`. OIDs and names
    /// as in a capture; tests substitute their own.
    pub const PSQL_QUERIES: &[&str] = &[
        // \d
        "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as \"Type\",\n  pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\"\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam\nWHERE c.relkind IN ('r','p','v','m','S','f','')\n      AND n.nspname <> 'pg_catalog'\n      AND n.nspname !~ '^pg_toast'\n      AND n.nspname <> 'information_schema'\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 1,2;",
        // \dt+
        "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as \"Type\",\n  pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\",\n  CASE c.relpersistence WHEN 'p' THEN 'permanent' WHEN 't' THEN 'temporary' WHEN 'u' THEN 'unlogged' END as \"Persistence\",\n  am.amname as \"Access method\",\n  pg_catalog.pg_size_pretty(pg_catalog.pg_table_size(c.oid)) as \"Size\",\n  pg_catalog.obj_description(c.oid, 'pg_class') as \"Description\"\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam\nWHERE c.relkind IN ('r','p','')\n      AND n.nspname <> 'pg_catalog'\n      AND n.nspname !~ '^pg_toast'\n      AND n.nspname <> 'information_schema'\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 1,2;",
        // \di+
        "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as \"Type\",\n  pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\",\n  c2.relname as \"Table\",\n  CASE c.relpersistence WHEN 'p' THEN 'permanent' WHEN 't' THEN 'temporary' WHEN 'u' THEN 'unlogged' END as \"Persistence\",\n  am.amname as \"Access method\",\n  pg_catalog.pg_size_pretty(pg_catalog.pg_table_size(c.oid)) as \"Size\",\n  pg_catalog.obj_description(c.oid, 'pg_class') as \"Description\"\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam\n     LEFT JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid\n     LEFT JOIN pg_catalog.pg_class c2 ON i.indrelid = c2.oid\nWHERE c.relkind IN ('i','I','')\n      AND n.nspname <> 'pg_catalog'\n      AND n.nspname !~ '^pg_toast'\n      AND n.nspname <> 'information_schema'\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 1,2;",
        // \d NAME, step 1
        "SELECT c.oid,\n  n.nspname,\n  c.relname\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\nWHERE c.relname OPERATOR(pg_catalog.~) '^(eic_uniform)$' COLLATE pg_catalog.default\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 2, 3;",
        // \dt eic*
        "SELECT n.nspname as \"Schema\",\n  c.relname as \"Name\",\n  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as \"Type\",\n  pg_catalog.pg_get_userbyid(c.relowner) as \"Owner\"\nFROM pg_catalog.pg_class c\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam\nWHERE c.relkind IN ('r','p','t','s','')\n  AND c.relname OPERATOR(pg_catalog.~) '^(eic.*)$' COLLATE pg_catalog.default\n  AND pg_catalog.pg_table_is_visible(c.oid)\nORDER BY 1,2;",
        // \dn+
        "SELECT n.nspname AS \"Name\",\n  pg_catalog.pg_get_userbyid(n.nspowner) AS \"Owner\",\n  pg_catalog.array_to_string(n.nspacl, E'\\n') AS \"Access privileges\",\n  pg_catalog.obj_description(n.oid, 'pg_namespace') AS \"Description\"\nFROM pg_catalog.pg_namespace n\nWHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'\nORDER BY 1;",
        // \dx
        "SELECT e.extname AS \"Name\", e.extversion AS \"Version\", n.nspname AS \"Schema\", c.description AS \"Description\"\nFROM pg_catalog.pg_extension e LEFT JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace LEFT JOIN pg_catalog.pg_description c ON c.objoid = e.oid AND c.classoid = 'pg_catalog.pg_extension'::pg_catalog.regclass\nORDER BY 1;",
        // \db
        "SELECT spcname AS \"Name\",\n  pg_catalog.pg_get_userbyid(spcowner) AS \"Owner\",\n  pg_catalog.pg_tablespace_location(oid) AS \"Location\"\nFROM pg_catalog.pg_tablespace\nORDER BY 1;",
        // \df
        "SELECT n.nspname as \"Schema\",\n  p.proname as \"Name\",\n  pg_catalog.pg_get_function_result(p.oid) as \"Result data type\",\n  pg_catalog.pg_get_function_arguments(p.oid) as \"Argument data types\",\n CASE p.prokind\n  WHEN 'a' THEN 'agg'\n  WHEN 'w' THEN 'window'\n  WHEN 'p' THEN 'proc'\n  ELSE 'func'\n END as \"Type\"\nFROM pg_catalog.pg_proc p\n     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace\nWHERE pg_catalog.pg_function_is_visible(p.oid)\n      AND n.nspname <> 'pg_catalog'\n      AND n.nspname <> 'information_schema'\nORDER BY 1, 2, 4;",
    ];

    /// psql's queries for `\d NAME` after step 1, `\l`, `\l+`, `\du`, answered here.
    pub const INTERCEPTED: &[&str] = &[
        "SELECT c.relchecks, c.relkind, c.relhasindex, c.relhasrules, c.relhastriggers, c.relrowsecurity, c.relforcerowsecurity, false AS relhasoids, c.relispartition, '', c.reltablespace, CASE WHEN c.reloftype = 0 THEN '' ELSE c.reloftype::pg_catalog.regtype::pg_catalog.text END, c.relpersistence, c.relreplident, am.amname\nFROM pg_catalog.pg_class c\n LEFT JOIN pg_catalog.pg_class tc ON (c.reltoastrelid = tc.oid)\nLEFT JOIN pg_catalog.pg_am am ON (c.relam = am.oid)\nWHERE c.oid = '16384';",
        "SELECT a.attname,\n  pg_catalog.format_type(a.atttypid, a.atttypmod),\n  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)\n   FROM pg_catalog.pg_attrdef d\n   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),\n  a.attnotnull,\n  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t\n   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,\n  a.attidentity,\n  a.attgenerated\nFROM pg_catalog.pg_attribute a\nWHERE a.attrelid = '16384' AND a.attnum > 0 AND NOT a.attisdropped\nORDER BY a.attnum;",
        "SELECT a.attname,\n  pg_catalog.format_type(a.atttypid, a.atttypmod),\n  (SELECT pg_catalog.pg_get_expr(d.adbin, d.adrelid, true)\n   FROM pg_catalog.pg_attrdef d\n   WHERE d.adrelid = a.attrelid AND d.adnum = a.attnum AND a.atthasdef),\n  a.attnotnull,\n  (SELECT c.collname FROM pg_catalog.pg_collation c, pg_catalog.pg_type t\n   WHERE c.oid = a.attcollation AND t.oid = a.atttypid AND a.attcollation <> t.typcollation) AS attcollation,\n  a.attidentity,\n  a.attgenerated,\n  a.attstorage,\n  a.attcompression AS attcompression,\n  CASE WHEN a.attstattarget=-1 THEN NULL ELSE a.attstattarget END AS attstattarget,\n  pg_catalog.col_description(a.attrelid, a.attnum)\nFROM pg_catalog.pg_attribute a\nWHERE a.attrelid = '16384' AND a.attnum > 0 AND NOT a.attisdropped\nORDER BY a.attnum;",
        "SELECT c2.relname, i.indisprimary, i.indisunique, i.indisclustered, i.indisvalid, pg_catalog.pg_get_indexdef(i.indexrelid, 0, true),\n  pg_catalog.pg_get_constraintdef(con.oid, true), contype, condeferrable, condeferred, i.indisreplident, c2.reltablespace\nFROM pg_catalog.pg_class c, pg_catalog.pg_class c2, pg_catalog.pg_index i\n  LEFT JOIN pg_catalog.pg_constraint con ON (conrelid = i.indrelid AND conindid = i.indexrelid AND contype IN ('p','u','x'))\nWHERE c.oid = '16384' AND c.oid = i.indrelid AND i.indexrelid = c2.oid\nORDER BY i.indisprimary DESC, c2.relname;",
        "SELECT pol.polname, pol.polpermissive,\n  CASE WHEN pol.polroles = '{0}' THEN NULL ELSE pg_catalog.array_to_string(array(select rolname from pg_catalog.pg_roles where oid = any (pol.polroles) order by 1),',') END,\n  pg_catalog.pg_get_expr(pol.polqual, pol.polrelid),\n  pg_catalog.pg_get_expr(pol.polwithcheck, pol.polrelid),\n  CASE pol.polcmd\n    WHEN 'r' THEN 'SELECT'\n    WHEN 'a' THEN 'INSERT'\n    WHEN 'w' THEN 'UPDATE'\n    WHEN 'd' THEN 'DELETE'\n    END AS cmd\nFROM pg_catalog.pg_policy pol\nWHERE pol.polrelid = '16384' ORDER BY 1;",
        "SELECT oid, stxrelid::pg_catalog.regclass, stxnamespace::pg_catalog.regnamespace::pg_catalog.text AS nsp, stxname,\npg_catalog.pg_get_statisticsobjdef_columns(oid) AS columns,\n  'd' = any(stxkind) AS ndist_enabled,\n  'f' = any(stxkind) AS deps_enabled,\n  'm' = any(stxkind) AS mcv_enabled,\nstxstattarget\nFROM pg_catalog.pg_statistic_ext\nWHERE stxrelid = '16384'\nORDER BY nsp, stxname;",
        "SELECT pubname\n     , NULL\n     , NULL\nFROM pg_catalog.pg_publication p\n     JOIN pg_catalog.pg_publication_namespace pn ON p.oid = pn.pnpubid\n     JOIN pg_catalog.pg_class pc ON pc.relnamespace = pn.pnnspid\nWHERE pc.oid ='16384' and pg_catalog.pg_relation_is_publishable('16384')\nUNION\nSELECT pubname\n     , pg_get_expr(pr.prqual, c.oid)\n     , (CASE WHEN pr.prattrs IS NOT NULL THEN\n         (SELECT string_agg(attname, ', ')\n           FROM pg_catalog.generate_series(0, pg_catalog.array_upper(pr.prattrs::pg_catalog.int2[], 1)) s,\n                pg_catalog.pg_attribute\n          WHERE attrelid = pr.prrelid AND attnum = prattrs[s])\n        ELSE NULL END) FROM pg_catalog.pg_publication p\n     JOIN pg_catalog.pg_publication_rel pr ON p.oid = pr.prpubid\n     JOIN pg_catalog.pg_class c ON c.oid = pr.prrelid\nWHERE pr.prrelid = '16384'\nUNION\nSELECT pubname\n     , NULL\n     , NULL\nFROM pg_catalog.pg_publication p\nWHERE p.puballtables AND pg_catalog.pg_relation_is_publishable('16384')\nORDER BY 1;",
        "SELECT c.oid::pg_catalog.regclass\nFROM pg_catalog.pg_class c, pg_catalog.pg_inherits i\nWHERE c.oid = i.inhparent AND i.inhrelid = '16384'\n  AND c.relkind != 'p' AND c.relkind != 'I'\nORDER BY inhseqno;",
        "SELECT c.oid::pg_catalog.regclass, c.relkind, inhdetachpending, pg_catalog.pg_get_expr(c.relpartbound, c.oid)\nFROM pg_catalog.pg_class c, pg_catalog.pg_inherits i\nWHERE c.oid = i.inhrelid AND i.inhparent = '16384'\nORDER BY pg_catalog.pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT', c.oid::pg_catalog.regclass::pg_catalog.text;",
        "SELECT d.datname as \"Name\",\n       pg_catalog.pg_get_userbyid(d.datdba) as \"Owner\",\n       pg_catalog.pg_encoding_to_char(d.encoding) as \"Encoding\",\n       d.datcollate as \"Collate\",\n       d.datctype as \"Ctype\",\n       d.daticulocale as \"ICU Locale\",\n       CASE d.datlocprovider WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS \"Locale Provider\",\n       pg_catalog.array_to_string(d.datacl, E'\\n') AS \"Access privileges\"\nFROM pg_catalog.pg_database d\nORDER BY 1;",
        "SELECT d.datname as \"Name\",\n       pg_catalog.pg_get_userbyid(d.datdba) as \"Owner\",\n       pg_catalog.pg_encoding_to_char(d.encoding) as \"Encoding\",\n       d.datcollate as \"Collate\",\n       d.datctype as \"Ctype\",\n       d.daticulocale as \"ICU Locale\",\n       CASE d.datlocprovider WHEN 'c' THEN 'libc' WHEN 'i' THEN 'icu' END AS \"Locale Provider\",\n       pg_catalog.array_to_string(d.datacl, E'\\n') AS \"Access privileges\",\n       CASE WHEN pg_catalog.has_database_privilege(d.datname, 'CONNECT')\n            THEN pg_catalog.pg_size_pretty(pg_catalog.pg_database_size(d.datname))\n            ELSE 'No Access'\n       END as \"Size\",\n       t.spcname as \"Tablespace\",\n       pg_catalog.shobj_description(d.oid, 'pg_database') as \"Description\"\nFROM pg_catalog.pg_database d\n  JOIN pg_catalog.pg_tablespace t on d.dattablespace = t.oid\nORDER BY 1;",
        "SELECT r.rolname, r.rolsuper, r.rolinherit,\n  r.rolcreaterole, r.rolcreatedb, r.rolcanlogin,\n  r.rolconnlimit, r.rolvaliduntil,\n  ARRAY(SELECT b.rolname\n        FROM pg_catalog.pg_auth_members m\n        JOIN pg_catalog.pg_roles b ON (m.roleid = b.oid)\n        WHERE m.member = r.oid) as memberof\n, r.rolreplication\n, r.rolbypassrls\nFROM pg_catalog.pg_roles r\nWHERE r.rolname !~ '^pg_'\nORDER BY 1;",
    ];

    #[test]
    fn psql_patterns_match_like_its_regexes() {
        assert!(psql_regex_matches("^(eic.*)$", "eic_uniform"));
        assert!(!psql_regex_matches("^(eic.*)$", "t2"));
        assert!(psql_regex_matches("^(t.)$", "t2"));
        assert!(!psql_regex_matches("^(t.)$", "t"));
        assert!(psql_regex_matches("^(a\\$b)$", "a$b"));
        let q = normalise("WHERE c.relname OPERATOR(pg_catalog.~) '^(eic.*)$' COLLATE pg_catalog.default AND n.nspname OPERATOR(pg_catalog.~) '^(pub''lic)$'");
        assert_eq!(
            patterns(&q),
            vec![
                ("c.relname".to_string(), "^(eic.*)$".to_string()),
                ("n.nspname".to_string(), "^(pub'lic)$".to_string())
            ]
        );
    }

    #[test]
    fn aliases_are_found_in_order() {
        assert_eq!(
            aliases(INTERCEPTED[9]),
            vec![
                "Name",
                "Owner",
                "Encoding",
                "Collate",
                "Ctype",
                "ICU Locale",
                "Locale Provider",
                "Access privileges"
            ]
        );
    }

    #[test]
    fn oids_are_read_from_the_query() {
        assert_eq!(
            quoted_number_after(&normalise(INTERCEPTED[0]), "WHERE c.oid = "),
            Some(16384)
        );
        assert_eq!(
            quoted_number_after(&normalise(INTERCEPTED[1]), "a.attrelid = "),
            Some(16384)
        );
    }
}
