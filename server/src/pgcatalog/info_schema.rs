//! `information_schema`: the SQL-standard views, with PostgreSQL 18's columns and
//! PostgreSQL's type names (`integer`, `character varying`, `timestamp with time zone` in
//! `data_type`; `int4`, `varchar`, `timestamptz` in `udt_name`), which is what Grafana's
//! and other tools' schema browsers read.
//!
//! The standard's domain types are reported as their base types: `sql_identifier` as
//! `name`, `cardinal_number` as `integer`, `character_data` and `yes_or_no` as
//! `character varying`, `time_stamp` as `timestamp with time zone`.

use super::batch::V;
use super::oids;
use super::snapshot::{Relation, Snapshot};
use super::tables::CatalogTable;
use super::types;

fn none(_: &Snapshot) -> Vec<Vec<V>> {
    Vec::new()
}

/// `information_schema`'s views, by name.
#[rustfmt::skip]
pub static INFORMATION_SCHEMA: &[CatalogTable] = &[
    CatalogTable { name: "applicable_roles", oid: 13173, kind: 'v', rows: none,
        columns: "grantee name, role_name name, is_grantable character varying" },
    CatalogTable { name: "character_sets", oid: 13187, kind: 'v', rows: none,
        columns: "character_set_catalog name, character_set_schema name, character_set_name name, character_repertoire name, form_of_use name, default_collate_catalog name, default_collate_schema name, default_collate_name name" },
    CatalogTable { name: "check_constraints", oid: 13197, kind: 'v', rows: none,
        columns: "constraint_catalog name, constraint_schema name, constraint_name name, check_clause character varying" },
    CatalogTable { name: "column_privileges", oid: 13222, kind: 'v', rows: none,
        columns: "grantor name, grantee name, table_catalog name, table_schema name, table_name name, column_name name, privilege_type character varying, is_grantable character varying" },
    CatalogTable { name: "columns", oid: 13232, kind: 'v', rows: columns,
        columns: "table_catalog name, table_schema name, table_name name, column_name name, ordinal_position integer, column_default character varying, is_nullable character varying, data_type character varying, character_maximum_length integer, character_octet_length integer, numeric_precision integer, numeric_precision_radix integer, numeric_scale integer, datetime_precision integer, interval_type character varying, interval_precision integer, character_set_catalog name, character_set_schema name, character_set_name name, collation_catalog name, collation_schema name, collation_name name, domain_catalog name, domain_schema name, domain_name name, udt_catalog name, udt_schema name, udt_name name, scope_catalog name, scope_schema name, scope_name name, maximum_cardinality integer, dtd_identifier name, is_self_referencing character varying, is_identity character varying, identity_generation character varying, identity_start character varying, identity_increment character varying, identity_maximum character varying, identity_minimum character varying, identity_cycle character varying, is_generated character varying, generation_expression character varying, is_updatable character varying" },
    CatalogTable { name: "constraint_column_usage", oid: 13237, kind: 'v', rows: super::constraint_rows::constraint_column_usage,
        columns: "table_catalog name, table_schema name, table_name name, column_name name, constraint_catalog name, constraint_schema name, constraint_name name" },
    CatalogTable { name: "domains", oid: 13256, kind: 'v', rows: none,
        columns: "domain_catalog name, domain_schema name, domain_name name, data_type character varying, character_maximum_length integer, character_octet_length integer, character_set_catalog name, character_set_schema name, character_set_name name, collation_catalog name, collation_schema name, collation_name name, numeric_precision integer, numeric_precision_radix integer, numeric_scale integer, datetime_precision integer, interval_type character varying, interval_precision integer, domain_default character varying, udt_catalog name, udt_schema name, udt_name name, scope_catalog name, scope_schema name, scope_name name, maximum_cardinality integer, dtd_identifier name" },
    CatalogTable { name: "enabled_roles", oid: 13261, kind: 'v', rows: enabled_roles,
        columns: "role_name name" },
    CatalogTable { name: "key_column_usage", oid: 13265, kind: 'v', rows: super::constraint_rows::key_column_usage,
        columns: "constraint_catalog name, constraint_schema name, constraint_name name, table_catalog name, table_schema name, table_name name, column_name name, ordinal_position integer, position_in_unique_constraint integer" },
    CatalogTable { name: "parameters", oid: 13270, kind: 'v', rows: none,
        columns: "specific_catalog name, specific_schema name, specific_name name, ordinal_position integer, parameter_mode character varying, is_result character varying, as_locator character varying, parameter_name name, data_type character varying, character_maximum_length integer, character_octet_length integer, character_set_catalog name, character_set_schema name, character_set_name name, collation_catalog name, collation_schema name, collation_name name, numeric_precision integer, numeric_precision_radix integer, numeric_scale integer, datetime_precision integer, interval_type character varying, interval_precision integer, udt_catalog name, udt_schema name, udt_name name, scope_catalog name, scope_schema name, scope_name name, maximum_cardinality integer, dtd_identifier name, parameter_default character varying" },
    CatalogTable { name: "referential_constraints", oid: 13275, kind: 'v', rows: none,
        columns: "constraint_catalog name, constraint_schema name, constraint_name name, unique_constraint_catalog name, unique_constraint_schema name, unique_constraint_name name, match_option character varying, update_rule character varying, delete_rule character varying" },
    CatalogTable { name: "routines", oid: 13313, kind: 'v', rows: none,
        columns: "specific_catalog name, specific_schema name, specific_name name, routine_catalog name, routine_schema name, routine_name name, routine_type character varying, module_catalog name, module_schema name, module_name name, udt_catalog name, udt_schema name, udt_name name, data_type character varying, character_maximum_length integer, character_octet_length integer, character_set_catalog name, character_set_schema name, character_set_name name, collation_catalog name, collation_schema name, collation_name name, numeric_precision integer, numeric_precision_radix integer, numeric_scale integer, datetime_precision integer, interval_type character varying, interval_precision integer, type_udt_catalog name, type_udt_schema name, type_udt_name name, scope_catalog name, scope_schema name, scope_name name, maximum_cardinality integer, dtd_identifier name, routine_body character varying, routine_definition character varying, external_name character varying, external_language character varying, parameter_style character varying, is_deterministic character varying, sql_data_access character varying, is_null_call character varying, sql_path character varying, schema_level_routine character varying, max_dynamic_result_sets integer, is_user_defined_cast character varying, is_implicitly_invocable character varying, security_type character varying, to_sql_specific_catalog name, to_sql_specific_schema name, to_sql_specific_name name, as_locator character varying, created timestamp with time zone, last_altered timestamp with time zone, new_savepoint_level character varying, is_udt_dependent character varying, result_cast_from_data_type character varying, result_cast_as_locator character varying, result_cast_char_max_length integer, result_cast_char_octet_length integer, result_cast_char_set_catalog name, result_cast_char_set_schema name, result_cast_char_set_name name, result_cast_collation_catalog name, result_cast_collation_schema name, result_cast_collation_name name, result_cast_numeric_precision integer, result_cast_numeric_precision_radix integer, result_cast_numeric_scale integer, result_cast_datetime_precision integer, result_cast_interval_type character varying, result_cast_interval_precision integer, result_cast_type_udt_catalog name, result_cast_type_udt_schema name, result_cast_type_udt_name name, result_cast_scope_catalog name, result_cast_scope_schema name, result_cast_scope_name name, result_cast_maximum_cardinality integer, result_cast_dtd_identifier name" },
    CatalogTable { name: "schemata", oid: 13318, kind: 'v', rows: schemata,
        columns: "catalog_name name, schema_name name, schema_owner name, default_character_set_catalog name, default_character_set_schema name, default_character_set_name name, sql_path character varying" },
    CatalogTable { name: "sequences", oid: 13322, kind: 'v', rows: super::sequence_views::information_schema_sequences,
        columns: "sequence_catalog name, sequence_schema name, sequence_name name, data_type character varying, numeric_precision integer, numeric_precision_radix integer, numeric_scale integer, start_value character varying, minimum_value character varying, maximum_value character varying, increment character varying, cycle_option character varying" },
    CatalogTable { name: "table_constraints", oid: 13347, kind: 'v', rows: super::constraint_rows::table_constraints,
        columns: "constraint_catalog name, constraint_schema name, constraint_name name, table_catalog name, table_schema name, table_name name, constraint_type character varying, is_deferrable character varying, initially_deferred character varying, enforced character varying, nulls_distinct character varying" },
    CatalogTable { name: "table_privileges", oid: 13352, kind: 'v', rows: none,
        columns: "grantor name, grantee name, table_catalog name, table_schema name, table_name name, privilege_type character varying, is_grantable character varying, with_hierarchy character varying" },
    CatalogTable { name: "tables", oid: 13361, kind: 'v', rows: tables,
        columns: "table_catalog name, table_schema name, table_name name, table_type character varying, self_referencing_column_name name, reference_generation character varying, user_defined_type_catalog name, user_defined_type_schema name, user_defined_type_name name, is_insertable_into character varying, is_typed character varying, commit_action character varying" },
    CatalogTable { name: "triggers", oid: 13376, kind: 'v', rows: none,
        columns: "trigger_catalog name, trigger_schema name, trigger_name name, event_manipulation character varying, event_object_catalog name, event_object_schema name, event_object_table name, action_order integer, action_condition character varying, action_statement character varying, action_orientation character varying, action_timing character varying, action_reference_old_table name, action_reference_new_table name, action_reference_old_row name, action_reference_new_row name, created timestamp with time zone" },
    CatalogTable { name: "views", oid: 13419, kind: 'v', rows: views,
        columns: "table_catalog name, table_schema name, table_name name, view_definition character varying, check_option character varying, is_updatable character varying, is_insertable_into character varying, is_trigger_updatable character varying, is_trigger_deletable character varying, is_trigger_insertable_into character varying" },
];

pub fn information_schema_table(name: &str) -> Option<&'static CatalogTable> {
    INFORMATION_SCHEMA.iter().find(|t| t.name == name)
}

fn yes_no(b: bool) -> V {
    V::text(if b { "YES" } else { "NO" })
}

fn catalog_name() -> V {
    V::text(oids::DATABASE_NAME)
}

fn tables(s: &Snapshot) -> Vec<Vec<V>> {
    s.relations()
        .iter()
        .filter(|r| r.kind == 'r' || r.kind == 'v')
        .map(|r| {
            vec![
                catalog_name(),
                V::text(r.schema()),
                V::text(&r.name),
                V::text(if r.kind == 'r' { "BASE TABLE" } else { "VIEW" }),
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                yes_no(r.kind == 'r'),
                yes_no(false),
                V::Null,
            ]
        })
        .collect()
}

/// The numeric facts of a column type: (character_maximum_length, character_octet_length,
/// numeric_precision, numeric_precision_radix, numeric_scale, datetime_precision).
fn type_facts(oid: u32, typmod: i32) -> [Option<i64>; 6] {
    let m = (typmod >= 0).then_some(typmod as i64);
    match oid {
        21 => [None, None, Some(16), Some(2), Some(0), None],
        23 => [None, None, Some(32), Some(2), Some(0), None],
        20 => [None, None, Some(64), Some(2), Some(0), None],
        700 => [None, None, Some(24), Some(2), None, None],
        701 => [None, None, Some(53), Some(2), None, None],
        1700 => match m {
            Some(m) => {
                let v = m - 4;
                [
                    None,
                    None,
                    Some((v >> 16) & 0xffff),
                    Some(10),
                    Some(((v & 0x7ff) ^ 1024) - 1024),
                    None,
                ]
            }
            None => [None, None, None, Some(10), None, None],
        },
        1042 | 1043 => match m {
            Some(m) => [Some(m - 4), Some((m - 4) * 4), None, None, None, None],
            None => [None, Some(1_073_741_824), None, None, None, None],
        },
        25 => [None, Some(1_073_741_824), None, None, None, None],
        1082 => [None, None, None, None, None, Some(0)],
        1083 | 1114 | 1184 | 1266 => [None, None, None, None, None, Some(m.unwrap_or(6))],
        1186 => [None, None, None, None, None, Some(6)],
        _ => [None; 6],
    }
}

/// `columns.data_type`: the SQL name without modifiers, `ARRAY` for arrays.
pub fn data_type_name(oid: u32) -> String {
    match types::type_row(oid) {
        Some(t) if t.category == b'A' => "ARRAY".to_string(),
        Some(_) => types::format_type(oid, None),
        None => "USER-DEFINED".to_string(),
    }
}

fn columns(s: &Snapshot) -> Vec<Vec<V>> {
    let mut rows = Vec::new();
    for r in s
        .relations()
        .iter()
        .filter(|r| r.kind == 'r' || r.kind == 'v')
    {
        rows.extend(column_rows(s, r));
    }
    rows
}

fn column_rows(s: &Snapshot, r: &Relation) -> Vec<Vec<V>> {
    // `column_default`: the expression `\d` shows (none for identity columns).
    let default = |column: &str| {
        s.column_default(r.oid, column)
            .filter(|d| d.identity.is_none())
            .map(|d| crate::sql::defaults::default_text(&s.sequences, &d.value))
    };
    // An identity column: `ALWAYS` or `BY DEFAULT`, and its sequence.
    let identity = |column: &str| {
        let kind = s.column_default(r.oid, column)?.identity?;
        let sequence = s.sequences.iter().find(|q| {
            q.owned_by
                .as_ref()
                .is_some_and(|o| o.table_oid == r.oid && o.column == column && o.identity)
        })?;
        let generation = match kind {
            iolab_catalog::Identity::Always => "ALWAYS",
            iolab_catalog::Identity::ByDefault => "BY DEFAULT",
        };
        Some((generation, sequence))
    };
    r.columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let identity = identity(&c.name);
            let sequence = |f: fn(&iolab_catalog::SequenceDef) -> i64| {
                V::opt_text(identity.map(|(_, q)| f(q).to_string()))
            };
            let facts = type_facts(c.type_oid, c.typmod);
            let n = |x: Option<i64>| x.map(V::Int).unwrap_or(V::Null);
            let udt = types::type_row(c.type_oid)
                .map(|t| t.name)
                .unwrap_or("text");
            vec![
                catalog_name(),
                V::text(r.schema()),
                V::text(&r.name),
                V::text(&c.name),
                V::Int(r.attnum(i) as i64),
                V::opt_text(default(&c.name)),
                yes_no(!c.not_null),
                V::text(data_type_name(c.type_oid)),
                n(facts[0]),
                n(facts[1]),
                n(facts[2]),
                n(facts[3]),
                n(facts[4]),
                n(facts[5]),
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                catalog_name(),
                V::text("pg_catalog"),
                V::text(udt),
                V::Null,
                V::Null,
                V::Null,
                V::Null,
                V::text(r.attnum(i).to_string()),
                yes_no(false),
                yes_no(identity.is_some()),
                V::opt_text(identity.map(|(g, _)| g)),
                sequence(|q| q.start),
                sequence(|q| q.increment),
                sequence(|q| q.max),
                sequence(|q| q.min),
                yes_no(identity.is_some_and(|(_, q)| q.cycle)),
                V::text("NEVER"),
                V::Null,
                yes_no(r.kind == 'r'),
            ]
        })
        .collect()
}

fn schemata(_: &Snapshot) -> Vec<Vec<V>> {
    let mut list: Vec<_> = oids::NAMESPACES.to_vec();
    list.sort_by_key(|n| n.1);
    list.iter()
        .map(|&(_, name, owner, _)| {
            vec![
                catalog_name(),
                V::text(name),
                V::text(oids::role_name(owner).unwrap_or("postgres")),
                V::Null,
                V::Null,
                V::Null,
                V::Null,
            ]
        })
        .collect()
}

fn views(s: &Snapshot) -> Vec<Vec<V>> {
    s.relations()
        .iter()
        .filter(|r| r.kind == 'v')
        .map(|r| {
            vec![
                catalog_name(),
                V::text(r.schema()),
                V::text(&r.name),
                V::opt_text(s.view_definition(r.oid)),
                V::text("NONE"),
                yes_no(false),
                yes_no(false),
                yes_no(false),
                yes_no(false),
                yes_no(false),
            ]
        })
        .collect()
}

fn enabled_roles(_: &Snapshot) -> Vec<Vec<V>> {
    vec![vec![V::text("postgres")]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_types_use_postgres_names() {
        assert_eq!(data_type_name(23), "integer");
        assert_eq!(data_type_name(1043), "character varying");
        assert_eq!(data_type_name(1042), "character");
        assert_eq!(data_type_name(1184), "timestamp with time zone");
        assert_eq!(data_type_name(1009), "ARRAY");
        assert_eq!(type_facts(1043, 24)[0], Some(20));
        assert_eq!(type_facts(1043, 24)[1], Some(80));
        assert_eq!(type_facts(1700, 655366)[2], Some(10));
        assert_eq!(type_facts(1700, 655366)[4], Some(2));
        assert_eq!(type_facts(23, -1)[2], Some(32));
    }
}
