//! PostgreSQL 18's OIDs for the built-in objects iolab reports, and the few fixed objects
//! (schemas, roles, the database, tablespaces, access methods) behind them.

use iolab_catalog::store::TEMP_SCHEMA_PREFIX;

pub const PG_CATALOG_NAMESPACE: u32 = iolab_catalog::store::PG_CATALOG_NAMESPACE_OID;
pub const PUBLIC_NAMESPACE: u32 = iolab_catalog::store::PUBLIC_NAMESPACE_OID;
pub const PG_TOAST_NAMESPACE: u32 = 99;
/// `information_schema` is created by initdb, so its OID varies; this is PostgreSQL 18.4's.
pub const INFORMATION_SCHEMA_NAMESPACE: u32 = 13144;

/// The bootstrap superuser.
pub const POSTGRES_ROLE: u32 = iolab_catalog::store::SUPERUSER_OID;
pub const PG_DATABASE_OWNER_ROLE: u32 = 6171;

/// The one database, `postgres`.
pub const DATABASE_OID: u32 = iolab_catalog::store::DATABASE_OID;
pub const DATABASE_NAME: &str = "postgres";
pub const DEFAULT_TABLESPACE: u32 = 1663;
pub const GLOBAL_TABLESPACE: u32 = 1664;

pub const HEAP_AM: u32 = iolab_catalog::store::HEAP_AM_OID;
pub const BTREE_AM: u32 = iolab_catalog::store::BTREE_AM_OID;

/// Catalog OIDs used as `classoid` (`obj_description(oid, 'pg_class')`).
pub const PG_CLASS: u32 = 1259;
pub const PG_NAMESPACE: u32 = 2615;
pub const PG_DATABASE: u32 = 1262;
pub const PG_AM: u32 = 2601;
pub const PG_TABLESPACE: u32 = 1213;

/// `pg_encoding_to_char(6)` is UTF8: the only encoding iolab speaks.
pub const UTF8_ENCODING: i32 = 6;

/// The schemas: (OID, name, owner, ACL as PostgreSQL 18 shows it right after initdb).
pub const NAMESPACES: &[(u32, &str, u32, Option<&[&str]>)] = &[
    (PG_TOAST_NAMESPACE, "pg_toast", POSTGRES_ROLE, None),
    (
        PG_CATALOG_NAMESPACE,
        "pg_catalog",
        POSTGRES_ROLE,
        Some(&["postgres=UC/postgres", "=U/postgres"]),
    ),
    (
        PUBLIC_NAMESPACE,
        "public",
        PG_DATABASE_OWNER_ROLE,
        Some(&[
            "pg_database_owner=UC/pg_database_owner",
            "=U/pg_database_owner",
        ]),
    ),
    (
        INFORMATION_SCHEMA_NAMESPACE,
        "information_schema",
        POSTGRES_ROLE,
        Some(&["postgres=UC/postgres", "=U/postgres"]),
    ),
];

/// Sessions' temporary schemas `pg_temp_N` have OID `TEMP_NAMESPACE_BASE + N`: fixed
/// numbers below PostgreSQL's FirstNormalObjectId, so they never meet a user object's.
pub const TEMP_NAMESPACE_BASE: u32 = 14000;
const MAX_TEMP_NAMESPACES: u32 = iolab_catalog::store::FIRST_NORMAL_OID - TEMP_NAMESPACE_BASE;

pub fn namespace_oid(name: &str) -> Option<u32> {
    let fixed = NAMESPACES.iter().find(|n| n.1 == name).map(|n| n.0);
    fixed.or_else(|| {
        let n: u32 = name.strip_prefix(TEMP_SCHEMA_PREFIX)?.parse().ok()?;
        (iolab_catalog::store::is_temp_schema(name) && n < MAX_TEMP_NAMESPACES)
            .then_some(TEMP_NAMESPACE_BASE + n)
    })
}

pub fn namespace_name(oid: u32) -> Option<std::borrow::Cow<'static, str>> {
    match NAMESPACES.iter().find(|n| n.0 == oid) {
        Some(n) => Some(n.1.into()),
        None => (TEMP_NAMESPACE_BASE..iolab_catalog::store::FIRST_NORMAL_OID)
            .contains(&oid)
            .then(|| format!("{TEMP_SCHEMA_PREFIX}{}", oid - TEMP_NAMESPACE_BASE).into()),
    }
}

/// The roles: (OID, name, can log in and is superuser). `postgres` is the superuser every
/// iolab object belongs to; the others are PostgreSQL 18's predefined roles.
pub const ROLES: &[(u32, &str, bool)] = &[
    (POSTGRES_ROLE, "postgres", true),
    (PG_DATABASE_OWNER_ROLE, "pg_database_owner", false),
    (6181, "pg_read_all_data", false),
    (6182, "pg_write_all_data", false),
    (3373, "pg_monitor", false),
    (3374, "pg_read_all_settings", false),
    (3375, "pg_read_all_stats", false),
    (3377, "pg_stat_scan_tables", false),
    (4569, "pg_read_server_files", false),
    (4570, "pg_write_server_files", false),
    (4571, "pg_execute_server_program", false),
    (4200, "pg_signal_backend", false),
    (4544, "pg_checkpoint", false),
    (6337, "pg_maintain", false),
    (4550, "pg_use_reserved_connections", false),
    (6304, "pg_create_subscription", false),
    (6392, "pg_signal_autovacuum_worker", false),
];

pub fn role_name(oid: u32) -> Option<&'static str> {
    ROLES.iter().find(|r| r.0 == oid).map(|r| r.1)
}

pub fn role_oid(name: &str) -> Option<u32> {
    ROLES.iter().find(|r| r.1 == name).map(|r| r.0)
}

/// Object comments (`pg_description`): (objoid, classoid, description).
pub const DESCRIPTIONS: &[(u32, u32, &str)] = &[
    (PG_CATALOG_NAMESPACE, PG_NAMESPACE, "system catalog schema"),
    (
        PG_TOAST_NAMESPACE,
        PG_NAMESPACE,
        "reserved schema for TOAST tables",
    ),
    (PUBLIC_NAMESPACE, PG_NAMESPACE, "standard public schema"),
    (HEAP_AM, PG_AM, "heap table access method"),
    (BTREE_AM, PG_AM, "b-tree index access method"),
];

/// Comments on shared objects (`pg_shdescription`).
pub const SHARED_DESCRIPTIONS: &[(u32, u32, &str)] = &[(
    DATABASE_OID,
    PG_DATABASE,
    "default administrative connection database",
)];

/// `pg_encoding_to_char`: PostgreSQL's encoding names by number.
pub fn encoding_name(id: i64) -> &'static str {
    const NAMES: &[&str] = &[
        "SQL_ASCII",
        "EUC_JP",
        "EUC_CN",
        "EUC_KR",
        "EUC_TW",
        "EUC_JIS_2004",
        "UTF8",
        "MULE_INTERNAL",
        "LATIN1",
        "LATIN2",
        "LATIN3",
        "LATIN4",
        "LATIN5",
        "LATIN6",
        "LATIN7",
        "LATIN8",
        "LATIN9",
        "LATIN10",
        "WIN1256",
        "WIN1258",
        "WIN866",
        "WIN874",
        "KOI8R",
        "WIN1251",
        "WIN1252",
        "ISO_8859_5",
        "ISO_8859_6",
        "ISO_8859_7",
        "ISO_8859_8",
        "WIN1250",
        "WIN1253",
        "WIN1254",
        "WIN1255",
        "WIN1257",
        "KOI8U",
        "SJIS",
        "BIG5",
        "GBK",
        "UHC",
        "GB18030",
        "JOHAB",
        "SHIFT_JIS_2004",
    ];
    usize::try_from(id)
        .ok()
        .and_then(|i| NAMES.get(i))
        .copied()
        .unwrap_or("")
}
