//! The built-in types iolab reports in `pg_type`, and `format_type()`.
//!
//! The rows are PostgreSQL 18's own values for the types iolab's columns, catalogs and
//! psql's queries use (checked against a live 18.4): the scalar types, their array types,
//! the `reg*` OID aliases and the few pseudo-types clients look up by name.

use iolab_catalog::PgType;

/// One row of `pg_type` (the columns clients read; the others are derived).
#[derive(Clone, Copy, Debug)]
pub struct TypeRow {
    pub oid: u32,
    pub name: &'static str,
    /// `typlen`: bytes, -1 varlena, -2 C string.
    pub len: i16,
    pub byval: bool,
    /// `typtype`: b base, p pseudo.
    pub typtype: u8,
    pub category: u8,
    pub preferred: bool,
    /// Element type of an array type (0 otherwise).
    pub elem: u32,
    /// The array type of this type (0 if none).
    pub array: u32,
    pub align: u8,
    pub storage: u8,
    pub collation: u32,
    /// `format_type(oid, NULL)`.
    pub format: &'static str,
    pub input: &'static str,
    pub output: &'static str,
}

#[allow(clippy::too_many_arguments)]
const fn t(
    oid: u32,
    name: &'static str,
    len: i16,
    byval: bool,
    typtype: u8,
    category: u8,
    preferred: bool,
    elem: u32,
    array: u32,
    align: u8,
    storage: u8,
    collation: u32,
    format: &'static str,
    input: &'static str,
    output: &'static str,
) -> TypeRow {
    TypeRow {
        oid,
        name,
        len,
        byval,
        typtype,
        category,
        preferred,
        elem,
        array,
        align,
        storage,
        collation,
        format,
        input,
        output,
    }
}

/// The rows of `pg_type`, by OID.
#[rustfmt::skip]
pub static TYPES: &[TypeRow] = &[
    t(16, "bool", 1, true, b'b', b'B', true, 0, 1000, b'c', b'p', 0, "boolean", "boolin", "boolout"),
    t(17, "bytea", -1, false, b'b', b'U', false, 0, 1001, b'i', b'x', 0, "bytea", "byteain", "byteaout"),
    t(18, "char", 1, true, b'b', b'Z', false, 0, 1002, b'c', b'p', 0, "\"char\"", "charin", "charout"),
    t(19, "name", 64, false, b'b', b'S', false, 18, 1003, b'c', b'p', 950, "name", "namein", "nameout"),
    t(20, "int8", 8, true, b'b', b'N', false, 0, 1016, b'd', b'p', 0, "bigint", "int8in", "int8out"),
    t(21, "int2", 2, true, b'b', b'N', false, 0, 1005, b's', b'p', 0, "smallint", "int2in", "int2out"),
    t(22, "int2vector", -1, false, b'b', b'A', false, 21, 1006, b'i', b'p', 0, "int2vector", "int2vectorin", "int2vectorout"),
    t(23, "int4", 4, true, b'b', b'N', false, 0, 1007, b'i', b'p', 0, "integer", "int4in", "int4out"),
    t(24, "regproc", 4, true, b'b', b'N', false, 0, 1008, b'i', b'p', 0, "regproc", "regprocin", "regprocout"),
    t(25, "text", -1, false, b'b', b'S', true, 0, 1009, b'i', b'x', 100, "text", "textin", "textout"),
    t(26, "oid", 4, true, b'b', b'N', true, 0, 1028, b'i', b'p', 0, "oid", "oidin", "oidout"),
    t(27, "tid", 6, false, b'b', b'U', false, 0, 1010, b's', b'p', 0, "tid", "tidin", "tidout"),
    t(28, "xid", 4, true, b'b', b'U', false, 0, 1011, b'i', b'p', 0, "xid", "xidin", "xidout"),
    t(29, "cid", 4, true, b'b', b'U', false, 0, 1012, b'i', b'p', 0, "cid", "cidin", "cidout"),
    t(30, "oidvector", -1, false, b'b', b'A', false, 26, 1013, b'i', b'p', 0, "oidvector", "oidvectorin", "oidvectorout"),
    t(114, "json", -1, false, b'b', b'U', false, 0, 199, b'i', b'x', 0, "json", "json_in", "json_out"),
    t(142, "xml", -1, false, b'b', b'U', false, 0, 143, b'i', b'x', 0, "xml", "xml_in", "xml_out"),
    t(194, "pg_node_tree", -1, false, b'b', b'Z', false, 0, 0, b'i', b'x', 100, "pg_node_tree", "pg_node_tree_in", "pg_node_tree_out"),
    t(700, "float4", 4, true, b'b', b'N', false, 0, 1021, b'i', b'p', 0, "real", "float4in", "float4out"),
    t(701, "float8", 8, true, b'b', b'N', true, 0, 1022, b'd', b'p', 0, "double precision", "float8in", "float8out"),
    t(705, "unknown", -2, false, b'p', b'X', false, 0, 0, b'c', b'p', 0, "unknown", "unknownin", "unknownout"),
    t(869, "inet", -1, false, b'b', b'I', true, 0, 1041, b'i', b'm', 0, "inet", "inet_in", "inet_out"),
    t(1000, "_bool", -1, false, b'b', b'A', false, 16, 0, b'i', b'x', 0, "boolean[]", "array_in", "array_out"),
    t(1001, "_bytea", -1, false, b'b', b'A', false, 17, 0, b'i', b'x', 0, "bytea[]", "array_in", "array_out"),
    t(1002, "_char", -1, false, b'b', b'A', false, 18, 0, b'i', b'x', 0, "\"char\"[]", "array_in", "array_out"),
    t(1003, "_name", -1, false, b'b', b'A', false, 19, 0, b'i', b'x', 950, "name[]", "array_in", "array_out"),
    t(1005, "_int2", -1, false, b'b', b'A', false, 21, 0, b'i', b'x', 0, "smallint[]", "array_in", "array_out"),
    t(1006, "_int2vector", -1, false, b'b', b'A', false, 22, 0, b'i', b'x', 0, "int2vector[]", "array_in", "array_out"),
    t(1007, "_int4", -1, false, b'b', b'A', false, 23, 0, b'i', b'x', 0, "integer[]", "array_in", "array_out"),
    t(1009, "_text", -1, false, b'b', b'A', false, 25, 0, b'i', b'x', 100, "text[]", "array_in", "array_out"),
    t(1013, "_oidvector", -1, false, b'b', b'A', false, 30, 0, b'i', b'x', 0, "oidvector[]", "array_in", "array_out"),
    t(1014, "_bpchar", -1, false, b'b', b'A', false, 1042, 0, b'i', b'x', 100, "character[]", "array_in", "array_out"),
    t(1015, "_varchar", -1, false, b'b', b'A', false, 1043, 0, b'i', b'x', 100, "character varying[]", "array_in", "array_out"),
    t(1016, "_int8", -1, false, b'b', b'A', false, 20, 0, b'd', b'x', 0, "bigint[]", "array_in", "array_out"),
    t(1021, "_float4", -1, false, b'b', b'A', false, 700, 0, b'i', b'x', 0, "real[]", "array_in", "array_out"),
    t(1022, "_float8", -1, false, b'b', b'A', false, 701, 0, b'd', b'x', 0, "double precision[]", "array_in", "array_out"),
    t(1028, "_oid", -1, false, b'b', b'A', false, 26, 0, b'i', b'x', 0, "oid[]", "array_in", "array_out"),
    t(1033, "aclitem", 16, false, b'b', b'U', false, 0, 1034, b'd', b'p', 0, "aclitem", "aclitemin", "aclitemout"),
    t(1034, "_aclitem", -1, false, b'b', b'A', false, 1033, 0, b'd', b'x', 0, "aclitem[]", "array_in", "array_out"),
    t(1042, "bpchar", -1, false, b'b', b'S', false, 0, 1014, b'i', b'x', 100, "character", "bpcharin", "bpcharout"),
    t(1043, "varchar", -1, false, b'b', b'S', false, 0, 1015, b'i', b'x', 100, "character varying", "varcharin", "varcharout"),
    t(1082, "date", 4, true, b'b', b'D', false, 0, 1182, b'i', b'p', 0, "date", "date_in", "date_out"),
    t(1083, "time", 8, true, b'b', b'D', false, 0, 1183, b'd', b'p', 0, "time without time zone", "time_in", "time_out"),
    t(1114, "timestamp", 8, true, b'b', b'D', false, 0, 1115, b'd', b'p', 0, "timestamp without time zone", "timestamp_in", "timestamp_out"),
    t(1115, "_timestamp", -1, false, b'b', b'A', false, 1114, 0, b'd', b'x', 0, "timestamp without time zone[]", "array_in", "array_out"),
    t(1182, "_date", -1, false, b'b', b'A', false, 1082, 0, b'i', b'x', 0, "date[]", "array_in", "array_out"),
    t(1183, "_time", -1, false, b'b', b'A', false, 1083, 0, b'd', b'x', 0, "time without time zone[]", "array_in", "array_out"),
    t(1184, "timestamptz", 8, true, b'b', b'D', true, 0, 1185, b'd', b'p', 0, "timestamp with time zone", "timestamptz_in", "timestamptz_out"),
    t(1185, "_timestamptz", -1, false, b'b', b'A', false, 1184, 0, b'd', b'x', 0, "timestamp with time zone[]", "array_in", "array_out"),
    t(1186, "interval", 16, false, b'b', b'T', true, 0, 1187, b'd', b'p', 0, "interval", "interval_in", "interval_out"),
    t(1187, "_interval", -1, false, b'b', b'A', false, 1186, 0, b'd', b'x', 0, "interval[]", "array_in", "array_out"),
    t(1231, "_numeric", -1, false, b'b', b'A', false, 1700, 0, b'i', b'x', 0, "numeric[]", "array_in", "array_out"),
    t(1266, "timetz", 12, false, b'b', b'D', false, 0, 1270, b'd', b'p', 0, "time with time zone", "timetz_in", "timetz_out"),
    t(1270, "_timetz", -1, false, b'b', b'A', false, 1266, 0, b'd', b'x', 0, "time with time zone[]", "array_in", "array_out"),
    t(1700, "numeric", -1, false, b'b', b'N', false, 0, 1231, b'i', b'm', 0, "numeric", "numeric_in", "numeric_out"),
    t(2202, "regprocedure", 4, true, b'b', b'N', false, 0, 2207, b'i', b'p', 0, "regprocedure", "regprocedurein", "regprocedureout"),
    t(2203, "regoper", 4, true, b'b', b'N', false, 0, 2208, b'i', b'p', 0, "regoper", "regoperin", "regoperout"),
    t(2204, "regoperator", 4, true, b'b', b'N', false, 0, 2209, b'i', b'p', 0, "regoperator", "regoperatorin", "regoperatorout"),
    t(2205, "regclass", 4, true, b'b', b'N', false, 0, 2210, b'i', b'p', 0, "regclass", "regclassin", "regclassout"),
    t(2206, "regtype", 4, true, b'b', b'N', false, 0, 2211, b'i', b'p', 0, "regtype", "regtypein", "regtypeout"),
    t(2210, "_regclass", -1, false, b'b', b'A', false, 2205, 0, b'i', b'x', 0, "regclass[]", "array_in", "array_out"),
    t(2211, "_regtype", -1, false, b'b', b'A', false, 2206, 0, b'i', b'x', 0, "regtype[]", "array_in", "array_out"),
    t(2249, "record", -1, false, b'p', b'P', false, 0, 2287, b'd', b'x', 0, "record", "record_in", "record_out"),
    t(2275, "cstring", -2, false, b'p', b'P', false, 0, 1263, b'c', b'p', 0, "cstring", "cstring_in", "cstring_out"),
    t(2276, "any", 4, true, b'p', b'P', false, 0, 0, b'i', b'p', 0, "\"any\"", "any_in", "any_out"),
    t(2277, "anyarray", -1, false, b'p', b'P', false, 0, 0, b'd', b'x', 0, "anyarray", "anyarray_in", "anyarray_out"),
    t(2278, "void", 4, true, b'p', b'P', false, 0, 0, b'i', b'p', 0, "void", "void_in", "void_out"),
    t(2283, "anyelement", 4, true, b'p', b'P', false, 0, 0, b'i', b'p', 0, "anyelement", "anyelement_in", "anyelement_out"),
    t(2950, "uuid", 16, false, b'b', b'U', false, 0, 2951, b'c', b'p', 0, "uuid", "uuid_in", "uuid_out"),
    t(2951, "_uuid", -1, false, b'b', b'A', false, 2950, 0, b'i', b'x', 0, "uuid[]", "array_in", "array_out"),
    t(3220, "pg_lsn", 8, true, b'b', b'U', false, 0, 3221, b'd', b'p', 0, "pg_lsn", "pg_lsn_in", "pg_lsn_out"),
    t(3802, "jsonb", -1, false, b'b', b'U', false, 0, 3807, b'i', b'x', 0, "jsonb", "jsonb_in", "jsonb_out"),
    t(3807, "_jsonb", -1, false, b'b', b'A', false, 3802, 0, b'i', b'x', 0, "jsonb[]", "array_in", "array_out"),
    t(4089, "regnamespace", 4, true, b'b', b'N', false, 0, 4090, b'i', b'p', 0, "regnamespace", "regnamespacein", "regnamespaceout"),
    t(4090, "_regnamespace", -1, false, b'b', b'A', false, 4089, 0, b'i', b'x', 0, "regnamespace[]", "array_in", "array_out"),
    t(4096, "regrole", 4, true, b'b', b'N', false, 0, 4097, b'i', b'p', 0, "regrole", "regrolein", "regroleout"),
    t(4097, "_regrole", -1, false, b'b', b'A', false, 4096, 0, b'i', b'x', 0, "regrole[]", "array_in", "array_out"),
];

/// The `pg_type` row of a type OID.
pub fn type_row(oid: u32) -> Option<&'static TypeRow> {
    TYPES
        .binary_search_by_key(&oid, |t| t.oid)
        .ok()
        .map(|i| &TYPES[i])
}

/// The type OID of a type name as SQL or `pg_type` spells it (`integer`, `int4`,
/// `character varying`, `"char"`, `text[]`).
pub fn type_oid_by_name(name: &str) -> Option<u32> {
    let lower = name.trim().to_ascii_lowercase();
    let lower = lower.strip_prefix("pg_catalog.").unwrap_or(&lower);
    if let Some(elem) = lower.strip_suffix("[]") {
        return type_row(type_oid_by_name(elem)?)
            .map(|t| t.array)
            .filter(|a| *a != 0);
    }
    if let Some(t) = PgType::from_sql_name(lower, &[]) {
        return Some(t.oid());
    }
    TYPES
        .iter()
        .find(|t| t.name == lower || t.format == lower)
        .map(|t| t.oid)
}

/// `format_type(type_oid, typmod)`: the type's SQL name with its modifier, as `\d` shows
/// it. `typmod` is `None` when the caller passed NULL (then `bpchar` reads `character`),
/// `Some(-1)` when the type has no modifier (then it reads `bpchar`, as in PostgreSQL).
pub fn format_type(oid: u32, typmod: Option<i32>) -> String {
    let m = typmod.filter(|m| *m >= 0);
    match (oid, m) {
        (1042, Some(m)) => return format!("character({})", m - 4),
        (1042, None) if typmod.is_some() => return "bpchar".to_string(),
        (1043, Some(m)) => return format!("character varying({})", m - 4),
        (1700, Some(m)) => {
            let v = m - 4;
            return format!(
                "numeric({},{})",
                (v >> 16) & 0xffff,
                ((v & 0x7ff) ^ 1024) - 1024
            );
        }
        (1083 | 1114 | 1184 | 1266, Some(p)) => {
            let (base, zone) = match oid {
                1083 => ("time", "without"),
                1114 => ("timestamp", "without"),
                1184 => ("timestamp", "with"),
                _ => ("time", "with"),
            };
            return format!("{base}({p}) {zone} time zone");
        }
        (1186, Some(_)) => return "interval".to_string(),
        _ => {}
    }
    match type_row(oid) {
        Some(t) => t.format.to_string(),
        None => "???".to_string(),
    }
}

/// `pg_attribute.attlen` / `attbyval` / `attalign` / `attstorage` for a column type, as
/// PostgreSQL lays it out (iolab's own page layout may differ, e.g. for `numeric`).
pub fn column_layout(oid: u32) -> (i16, bool, u8, u8) {
    match type_row(oid) {
        Some(t) => (t.len, t.byval, t.align, t.storage),
        None => (-1, false, b'i', b'x'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_table_is_sorted_and_consistent() {
        for w in TYPES.windows(2) {
            assert!(w[0].oid < w[1].oid, "TYPES must be sorted by OID");
        }
        for t in TYPES {
            if t.elem != 0 && t.category == b'A' && t.name.starts_with('_') {
                let elem = type_row(t.elem).expect("element type present");
                assert_eq!(elem.array, t.oid, "{}", t.name);
            }
        }
        for ty in [
            PgType::Bool,
            PgType::Int2,
            PgType::Int4,
            PgType::Int8,
            PgType::Float4,
            PgType::Float8,
            PgType::Text,
            PgType::Varchar(None),
            PgType::Bpchar(1),
            PgType::Date,
            PgType::Timestamp,
            PgType::Timestamptz,
            PgType::unconstrained_numeric(),
        ] {
            assert_eq!(type_row(ty.oid()).unwrap().name, ty.typname());
        }
    }

    #[test]
    fn format_type_matches_postgres() {
        // Values checked with format_type() on PostgreSQL 18.
        assert_eq!(format_type(23, Some(-1)), "integer");
        assert_eq!(format_type(1043, Some(24)), "character varying(20)");
        assert_eq!(format_type(1043, Some(-1)), "character varying");
        assert_eq!(format_type(1042, Some(9)), "character(5)");
        assert_eq!(format_type(1042, Some(-1)), "bpchar");
        assert_eq!(format_type(1042, None), "character");
        assert_eq!(format_type(1700, Some(655366)), "numeric(10,2)");
        assert_eq!(format_type(1700, Some(-1)), "numeric");
        assert_eq!(format_type(1114, Some(3)), "timestamp(3) without time zone");
        assert_eq!(format_type(1184, None), "timestamp with time zone");
        assert_eq!(format_type(18, None), "\"char\"");
        assert_eq!(format_type(1034, None), "aclitem[]");
        assert_eq!(format_type(1007, Some(-1)), "integer[]");
        assert_eq!(format_type(999_999, None), "???");
        assert_eq!(type_oid_by_name("integer"), Some(23));
        assert_eq!(type_oid_by_name("int4"), Some(23));
        assert_eq!(type_oid_by_name("text[]"), Some(1009));
        assert_eq!(type_oid_by_name("regclass"), Some(2205));
        assert_eq!(type_oid_by_name("\"char\""), Some(18));
    }
}
