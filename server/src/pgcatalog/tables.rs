//! The `pg_catalog` tables and views, computed from a [`Snapshot`] on every lookup.
//!
//! Each entry of [`PG_CATALOG`] is PostgreSQL 18's definition of one catalog — its OID,
//! kind and columns, in order and with their types — and a function giving its rows.
//! Catalogs for things iolab does not have (constraints, policies, publications, triggers,
//! …) have their full column lists and no rows, so a client's join against them plans
//! and returns nothing, as on a fresh PostgreSQL database without such objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use iolab_engine::Database;
use iolab_settings::{ServerSettings, SessionSettings};
use parking_lot::RwLock;

use super::batch::{build_batch, parse_columns, schema_of, V};
use super::snapshot::{ExtraTable, Relation, Snapshot};
use super::{info_schema, oids, types};

/// One catalog table or view: PostgreSQL's definition and where its rows come from.
pub struct CatalogTable {
    pub name: &'static str,
    pub oid: u32,
    /// `r` for a catalog table, `v` for a system view.
    pub kind: char,
    /// Columns as `"name type[!], …"` (see `batch`).
    pub columns: &'static str,
    pub rows: fn(&Snapshot) -> Vec<Vec<V>>,
}

impl CatalogTable {
    /// The table's rows as an in-memory table.
    pub fn provider(&self, snapshot: &Snapshot) -> Result<Arc<dyn TableProvider>> {
        let schema = schema_of(&parse_columns(self.columns));
        let batch = build_batch(&schema, &(self.rows)(snapshot))?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}

fn none(_: &Snapshot) -> Vec<Vec<V>> {
    Vec::new()
}

/// `pg_catalog`'s tables and views, by name.
#[rustfmt::skip]
pub static PG_CATALOG: &[CatalogTable] = &[
    CatalogTable { name: "pg_aggregate", oid: 2600, kind: 'r', rows: none,
        columns: "aggfnoid regproc!, aggkind \"char\"!, aggnumdirectargs smallint!, aggtransfn regproc!, aggfinalfn regproc!, aggcombinefn regproc!, aggserialfn regproc!, aggdeserialfn regproc!, aggmtransfn regproc!, aggminvtransfn regproc!, aggmfinalfn regproc!, aggfinalextra boolean!, aggmfinalextra boolean!, aggfinalmodify \"char\"!, aggmfinalmodify \"char\"!, aggsortop oid!, aggtranstype oid!, aggtransspace integer!, aggmtranstype oid!, aggmtransspace integer!, agginitval text, aggminitval text" },
    CatalogTable { name: "pg_am", oid: 2601, kind: 'r', rows: pg_am,
        columns: "oid oid!, amname name!, amhandler regproc!, amtype \"char\"!" },
    CatalogTable { name: "pg_attrdef", oid: 2604, kind: 'r', rows: super::sequence_views::pg_attrdef,
        columns: "oid oid!, adrelid oid!, adnum smallint!, adbin pg_node_tree!" },
    CatalogTable { name: "pg_attribute", oid: 1249, kind: 'r', rows: pg_attribute,
        columns: "attrelid oid!, attname name!, atttypid oid!, attlen smallint!, attnum smallint!, atttypmod integer!, attndims smallint!, attbyval boolean!, attalign \"char\"!, attstorage \"char\"!, attcompression \"char\"!, attnotnull boolean!, atthasdef boolean!, atthasmissing boolean!, attidentity \"char\"!, attgenerated \"char\"!, attisdropped boolean!, attislocal boolean!, attinhcount smallint!, attcollation oid!, attstattarget smallint, attacl aclitem[], attoptions text[], attfdwoptions text[], attmissingval anyarray" },
    CatalogTable { name: "pg_auth_members", oid: 1261, kind: 'r', rows: none,
        columns: "oid oid!, roleid oid!, member oid!, grantor oid!, admin_option boolean!, inherit_option boolean!, set_option boolean!" },
    CatalogTable { name: "pg_authid", oid: 1260, kind: 'r', rows: pg_authid,
        columns: "oid oid!, rolname name!, rolsuper boolean!, rolinherit boolean!, rolcreaterole boolean!, rolcreatedb boolean!, rolcanlogin boolean!, rolreplication boolean!, rolbypassrls boolean!, rolconnlimit integer!, rolpassword text, rolvaliduntil timestamp with time zone" },
    CatalogTable { name: "pg_cast", oid: 2605, kind: 'r', rows: none,
        columns: "oid oid!, castsource oid!, casttarget oid!, castfunc oid!, castcontext \"char\"!, castmethod \"char\"!" },
    CatalogTable { name: "pg_class", oid: 1259, kind: 'r', rows: pg_class,
        columns: "oid oid!, relname name!, relnamespace oid!, reltype oid!, reloftype oid!, relowner oid!, relam oid!, relfilenode oid!, reltablespace oid!, relpages integer!, reltuples real!, relallvisible integer!, relallfrozen integer!, reltoastrelid oid!, relhasindex boolean!, relisshared boolean!, relpersistence \"char\"!, relkind \"char\"!, relnatts smallint!, relchecks smallint!, relhasrules boolean!, relhastriggers boolean!, relhassubclass boolean!, relrowsecurity boolean!, relforcerowsecurity boolean!, relispopulated boolean!, relreplident \"char\"!, relispartition boolean!, relrewrite oid!, relfrozenxid xid!, relminmxid xid!, relacl aclitem[], reloptions text[], relpartbound pg_node_tree" },
    CatalogTable { name: "pg_collation", oid: 3456, kind: 'r', rows: pg_collation,
        columns: "oid oid!, collname name!, collnamespace oid!, collowner oid!, collprovider \"char\"!, collisdeterministic boolean!, collencoding integer!, collcollate text, collctype text, colllocale text, collicurules text, collversion text" },
    CatalogTable { name: "pg_constraint", oid: 2606, kind: 'r', rows: super::constraint_rows::pg_constraint,
        columns: "oid oid!, conname name!, connamespace oid!, contype \"char\"!, condeferrable boolean!, condeferred boolean!, conenforced boolean!, convalidated boolean!, conrelid oid!, contypid oid!, conindid oid!, conparentid oid!, confrelid oid!, confupdtype \"char\"!, confdeltype \"char\"!, confmatchtype \"char\"!, conislocal boolean!, coninhcount smallint!, connoinherit boolean!, conperiod boolean!, conkey smallint[], confkey smallint[], conpfeqop oid[], conppeqop oid[], conffeqop oid[], confdelsetcols smallint[], conexclop oid[], conbin pg_node_tree" },
    CatalogTable { name: "pg_conversion", oid: 2607, kind: 'r', rows: none,
        columns: "oid oid!, conname name!, connamespace oid!, conowner oid!, conforencoding integer!, contoencoding integer!, conproc regproc!, condefault boolean!" },
    CatalogTable { name: "pg_database", oid: 1262, kind: 'r', rows: pg_database,
        columns: "oid oid!, datname name!, datdba oid!, encoding integer!, datlocprovider \"char\"!, datistemplate boolean!, datallowconn boolean!, dathasloginevt boolean!, datconnlimit integer!, datfrozenxid xid!, datminmxid xid!, dattablespace oid!, datcollate text!, datctype text!, datlocale text, daticurules text, datcollversion text, datacl aclitem[]" },
    CatalogTable { name: "pg_db_role_setting", oid: 2964, kind: 'r', rows: none,
        columns: "setdatabase oid!, setrole oid!, setconfig text[]" },
    CatalogTable { name: "pg_default_acl", oid: 826, kind: 'r', rows: none,
        columns: "oid oid!, defaclrole oid!, defaclnamespace oid!, defaclobjtype \"char\"!, defaclacl aclitem[]!" },
    CatalogTable { name: "pg_depend", oid: 2608, kind: 'r', rows: none,
        columns: "classid oid!, objid oid!, objsubid integer!, refclassid oid!, refobjid oid!, refobjsubid integer!, deptype \"char\"!" },
    CatalogTable { name: "pg_description", oid: 2609, kind: 'r', rows: pg_description,
        columns: "objoid oid!, classoid oid!, objsubid integer!, description text!" },
    CatalogTable { name: "pg_enum", oid: 3501, kind: 'r', rows: none,
        columns: "oid oid!, enumtypid oid!, enumsortorder real!, enumlabel name!" },
    CatalogTable { name: "pg_event_trigger", oid: 3466, kind: 'r', rows: none,
        columns: "oid oid!, evtname name!, evtevent name!, evtowner oid!, evtfoid oid!, evtenabled \"char\"!, evttags text[]" },
    CatalogTable { name: "pg_extension", oid: 3079, kind: 'r', rows: none,
        columns: "oid oid!, extname name!, extowner oid!, extnamespace oid!, extrelocatable boolean!, extversion text!, extconfig oid[], extcondition text[]" },
    CatalogTable { name: "pg_foreign_data_wrapper", oid: 2328, kind: 'r', rows: none,
        columns: "oid oid!, fdwname name!, fdwowner oid!, fdwhandler oid!, fdwvalidator oid!, fdwacl aclitem[], fdwoptions text[]" },
    CatalogTable { name: "pg_foreign_server", oid: 1417, kind: 'r', rows: none,
        columns: "oid oid!, srvname name!, srvowner oid!, srvfdw oid!, srvtype text, srvversion text, srvacl aclitem[], srvoptions text[]" },
    CatalogTable { name: "pg_foreign_table", oid: 3118, kind: 'r', rows: none,
        columns: "ftrelid oid!, ftserver oid!, ftoptions text[]" },
    CatalogTable { name: "pg_index", oid: 2610, kind: 'r', rows: pg_index,
        columns: "indexrelid oid!, indrelid oid!, indnatts smallint!, indnkeyatts smallint!, indisunique boolean!, indnullsnotdistinct boolean!, indisprimary boolean!, indisexclusion boolean!, indimmediate boolean!, indisclustered boolean!, indisvalid boolean!, indcheckxmin boolean!, indisready boolean!, indislive boolean!, indisreplident boolean!, indkey int2vector!, indcollation oidvector!, indclass oidvector!, indoption int2vector!, indexprs pg_node_tree, indpred pg_node_tree" },
    CatalogTable { name: "pg_indexes", oid: 12043, kind: 'v', rows: pg_indexes,
        columns: "schemaname name, tablename name, indexname name, tablespace name, indexdef text" },
    CatalogTable { name: "pg_inherits", oid: 2611, kind: 'r', rows: none,
        columns: "inhrelid oid!, inhparent oid!, inhseqno integer!, inhdetachpending boolean!" },
    CatalogTable { name: "pg_init_privs", oid: 3394, kind: 'r', rows: none,
        columns: "objoid oid!, classoid oid!, objsubid integer!, privtype \"char\"!, initprivs aclitem[]!" },
    CatalogTable { name: "pg_language", oid: 2612, kind: 'r', rows: pg_language,
        columns: "oid oid!, lanname name!, lanowner oid!, lanispl boolean!, lanpltrusted boolean!, lanplcallfoid oid!, laninline oid!, lanvalidator oid!, lanacl aclitem[]" },
    CatalogTable { name: "pg_matviews", oid: 12038, kind: 'v', rows: none,
        columns: "schemaname name, matviewname name, matviewowner name, tablespace name, hasindexes boolean, ispopulated boolean, definition text" },
    CatalogTable { name: "pg_namespace", oid: 2615, kind: 'r', rows: pg_namespace,
        columns: "oid oid!, nspname name!, nspowner oid!, nspacl aclitem[]" },
    CatalogTable { name: "pg_opclass", oid: 2616, kind: 'r', rows: none,
        columns: "oid oid!, opcmethod oid!, opcname name!, opcnamespace oid!, opcowner oid!, opcfamily oid!, opcintype oid!, opcdefault boolean!, opckeytype oid!" },
    CatalogTable { name: "pg_operator", oid: 2617, kind: 'r', rows: none,
        columns: "oid oid!, oprname name!, oprnamespace oid!, oprowner oid!, oprkind \"char\"!, oprcanmerge boolean!, oprcanhash boolean!, oprleft oid!, oprright oid!, oprresult oid!, oprcom oid!, oprnegate oid!, oprcode regproc!, oprrest regproc!, oprjoin regproc!" },
    CatalogTable { name: "pg_parameter_acl", oid: 6243, kind: 'r', rows: none,
        columns: "oid oid!, parname text!, paracl aclitem[]" },
    CatalogTable { name: "pg_partitioned_table", oid: 3350, kind: 'r', rows: none,
        columns: "partrelid oid!, partstrat \"char\"!, partnatts smallint!, partdefid oid!, partattrs int2vector!, partclass oidvector!, partcollation oidvector!, partexprs pg_node_tree" },
    CatalogTable { name: "pg_policy", oid: 3256, kind: 'r', rows: none,
        columns: "oid oid!, polname name!, polrelid oid!, polcmd \"char\"!, polpermissive boolean!, polroles oid[]!, polqual pg_node_tree, polwithcheck pg_node_tree" },
    CatalogTable { name: "pg_proc", oid: 1255, kind: 'r', rows: none,
        columns: "oid oid!, proname name!, pronamespace oid!, proowner oid!, prolang oid!, procost real!, prorows real!, provariadic oid!, prosupport regproc!, prokind \"char\"!, prosecdef boolean!, proleakproof boolean!, proisstrict boolean!, proretset boolean!, provolatile \"char\"!, proparallel \"char\"!, pronargs smallint!, pronargdefaults smallint!, prorettype oid!, proargtypes oidvector!, proallargtypes oid[], proargmodes \"char\"[], proargnames text[], proargdefaults pg_node_tree, protrftypes oid[], prosrc text!, probin text, prosqlbody pg_node_tree, proconfig text[], proacl aclitem[]" },
    CatalogTable { name: "pg_publication", oid: 6104, kind: 'r', rows: none,
        columns: "oid oid!, pubname name!, pubowner oid!, puballtables boolean!, pubinsert boolean!, pubupdate boolean!, pubdelete boolean!, pubtruncate boolean!, pubviaroot boolean!, pubgencols \"char\"!" },
    CatalogTable { name: "pg_publication_namespace", oid: 6237, kind: 'r', rows: none,
        columns: "oid oid!, pnpubid oid!, pnnspid oid!" },
    CatalogTable { name: "pg_publication_rel", oid: 6106, kind: 'r', rows: none,
        columns: "oid oid!, prpubid oid!, prrelid oid!, prqual pg_node_tree, prattrs int2vector" },
    CatalogTable { name: "pg_range", oid: 3541, kind: 'r', rows: none,
        columns: "rngtypid oid!, rngsubtype oid!, rngmultitypid oid!, rngcollation oid!, rngsubopc oid!, rngcanonical regproc!, rngsubdiff regproc!" },
    CatalogTable { name: "pg_rewrite", oid: 2618, kind: 'r', rows: none,
        columns: "oid oid!, rulename name!, ev_class oid!, ev_type \"char\"!, ev_enabled \"char\"!, is_instead boolean!, ev_qual pg_node_tree!, ev_action pg_node_tree!" },
    CatalogTable { name: "pg_roles", oid: 12000, kind: 'v', rows: pg_roles,
        columns: "rolname name, rolsuper boolean, rolinherit boolean, rolcreaterole boolean, rolcreatedb boolean, rolcanlogin boolean, rolreplication boolean, rolconnlimit integer, rolpassword text, rolvaliduntil timestamp with time zone, rolbypassrls boolean, rolconfig text[], oid oid" },
    CatalogTable { name: "pg_sequence", oid: 2224, kind: 'r', rows: super::sequence_views::pg_sequence,
        columns: "seqrelid oid!, seqtypid oid!, seqstart bigint!, seqincrement bigint!, seqmax bigint!, seqmin bigint!, seqcache bigint!, seqcycle boolean!" },
    CatalogTable { name: "pg_sequences", oid: 12048, kind: 'v', rows: super::sequence_views::pg_sequences,
        columns: "schemaname name, sequencename name, sequenceowner name, data_type regtype, start_value bigint, min_value bigint, max_value bigint, increment_by bigint, cycle boolean, cache_size bigint, last_value bigint" },
    CatalogTable { name: "pg_settings", oid: 12104, kind: 'v', rows: pg_settings,
        columns: "name text, setting text, unit text, category text, short_desc text, extra_desc text, context text, vartype text, source text, min_val text, max_val text, enumvals text[], boot_val text, reset_val text, sourcefile text, sourceline integer, pending_restart boolean" },
    CatalogTable { name: "pg_shdepend", oid: 1214, kind: 'r', rows: none,
        columns: "dbid oid!, classid oid!, objid oid!, objsubid integer!, refclassid oid!, refobjid oid!, deptype \"char\"!" },
    CatalogTable { name: "pg_shdescription", oid: 2396, kind: 'r', rows: pg_shdescription,
        columns: "objoid oid!, classoid oid!, description text!" },
    CatalogTable { name: "pg_statistic_ext", oid: 3381, kind: 'r', rows: none,
        columns: "oid oid!, stxrelid oid!, stxname name!, stxnamespace oid!, stxowner oid!, stxkeys int2vector!, stxstattarget smallint, stxkind \"char\"[]!, stxexprs pg_node_tree" },
    CatalogTable { name: "pg_subscription", oid: 6100, kind: 'r', rows: none,
        columns: "oid oid!, subdbid oid!, subskiplsn pg_lsn!, subname name!, subowner oid!, subenabled boolean!, subbinary boolean!, substream \"char\"!, subtwophasestate \"char\"!, subdisableonerr boolean!, subpasswordrequired boolean!, subrunasowner boolean!, subfailover boolean!, subconninfo text!, subslotname name, subsynccommit text!, subpublications text[]!, suborigin text" },
    CatalogTable { name: "pg_tables", oid: 12033, kind: 'v', rows: pg_tables,
        columns: "schemaname name, tablename name, tableowner name, tablespace name, hasindexes boolean, hasrules boolean, hastriggers boolean, rowsecurity boolean" },
    CatalogTable { name: "pg_tablespace", oid: 1213, kind: 'r', rows: pg_tablespace,
        columns: "oid oid!, spcname name!, spcowner oid!, spcacl aclitem[], spcoptions text[]" },
    CatalogTable { name: "pg_trigger", oid: 2620, kind: 'r', rows: none,
        columns: "oid oid!, tgrelid oid!, tgparentid oid!, tgname name!, tgfoid oid!, tgtype smallint!, tgenabled \"char\"!, tgisinternal boolean!, tgconstrrelid oid!, tgconstrindid oid!, tgconstraint oid!, tgdeferrable boolean!, tginitdeferred boolean!, tgnargs smallint!, tgattr int2vector!, tgargs bytea!, tgqual pg_node_tree, tgoldtable name, tgnewtable name" },
    CatalogTable { name: "pg_type", oid: 1247, kind: 'r', rows: pg_type,
        columns: "oid oid!, typname name!, typnamespace oid!, typowner oid!, typlen smallint!, typbyval boolean!, typtype \"char\"!, typcategory \"char\"!, typispreferred boolean!, typisdefined boolean!, typdelim \"char\"!, typrelid oid!, typsubscript regproc!, typelem oid!, typarray oid!, typinput regproc!, typoutput regproc!, typreceive regproc!, typsend regproc!, typmodin regproc!, typmodout regproc!, typanalyze regproc!, typalign \"char\"!, typstorage \"char\"!, typnotnull boolean!, typbasetype oid!, typtypmod integer!, typndims integer!, typcollation oid!, typdefaultbin pg_node_tree, typdefault text, typacl aclitem[]" },
    CatalogTable { name: "pg_user", oid: 12014, kind: 'v', rows: pg_user,
        columns: "usename name, usesysid oid, usecreatedb boolean, usesuper boolean, userepl boolean, usebypassrls boolean, passwd text, valuntil timestamp with time zone, useconfig text[]" },
    CatalogTable { name: "pg_user_mapping", oid: 1418, kind: 'r', rows: none,
        columns: "oid oid!, umuser oid!, umserver oid!, umoptions text[]" },
    CatalogTable { name: "pg_views", oid: 12028, kind: 'v', rows: pg_views,
        columns: "schemaname name, viewname name, viewowner name, definition text" },
];

pub fn pg_catalog_table(name: &str) -> Option<&'static CatalogTable> {
    PG_CATALOG.iter().find(|t| t.name == name)
}

fn b(v: bool) -> V {
    V::Bool(v)
}

fn pg_am(_: &Snapshot) -> Vec<Vec<V>> {
    vec![
        vec![
            V::oid(oids::HEAP_AM),
            V::text("heap"),
            V::text("heap_tableam_handler"),
            V::char('t'),
        ],
        vec![
            V::oid(oids::BTREE_AM),
            V::text("btree"),
            V::text("bthandler"),
            V::char('i'),
        ],
    ]
}

/// `pg_attribute.attstorage`/`attalign` etc. for one column.
fn attribute_row(rel: &Relation, attnum: usize, col: &super::snapshot::RelColumn) -> Vec<V> {
    let (len, byval, align, storage) = types::column_layout(col.type_oid);
    let collation = types::type_row(col.type_oid)
        .map(|t| t.collation)
        .unwrap_or(0);
    let is_array = types::type_row(col.type_oid).is_some_and(|t| t.category == b'A');
    vec![
        V::oid(rel.oid),
        V::text(&col.name),
        V::oid(col.type_oid),
        V::Int(len as i64),
        V::Int(attnum as i64),
        V::Int(col.typmod as i64),
        V::Int(is_array as i64),
        b(byval),
        V::char(align as char),
        V::char(storage as char),
        V::text(""),
        b(col.not_null),
        b(false),
        b(false),
        V::text(""),
        V::text(""),
        b(false),
        b(true),
        V::Int(0),
        V::oid(collation),
        V::Null,
        V::Null,
        V::Null,
        V::Null,
        V::Null,
    ]
}

/// The `pg_attribute` row PostgreSQL keeps for a dropped column: its number, a made-up
/// name, no type (`atttypid` 0) but the old type's storage facts, `attisdropped`.
fn dropped_attribute_row(rel: &Relation, attnum: u16, type_oid: u32) -> Vec<V> {
    let column = super::snapshot::RelColumn {
        name: iolab_catalog::attributes::dropped_column_name(attnum),
        type_oid,
        typmod: -1,
        not_null: false,
    };
    let mut row = attribute_row(rel, attnum as usize, &column);
    row[2] = V::oid(0); // atttypid
    row[16] = b(true); // attisdropped
    row
}

fn pg_attribute(s: &Snapshot) -> Vec<Vec<V>> {
    let mut rows = Vec::new();
    for rel in s.relations() {
        for &(attnum, type_oid) in &rel.dropped_attributes {
            rows.push(dropped_attribute_row(&rel, attnum, type_oid));
        }
        for (i, col) in rel.columns.iter().enumerate() {
            let mut row = attribute_row(&rel, rel.attnum(i) as usize, col);
            if let Some(d) = s.column_default(rel.oid, &col.name) {
                // atthasdef, attidentity
                row[12] = b(d.identity.is_none());
                row[14] = d.identity.map(|i| V::char(i.code())).unwrap_or(V::text(""));
            }
            rows.push(row);
        }
    }
    rows
}

fn pg_authid(_: &Snapshot) -> Vec<Vec<V>> {
    oids::ROLES
        .iter()
        .map(|&(oid, name, login)| {
            vec![
                V::oid(oid),
                V::text(name),
                b(login),
                b(true),
                b(login),
                b(login),
                b(login),
                b(login),
                b(login),
                V::Int(-1),
                V::Null,
                V::Null,
            ]
        })
        .collect()
}

fn pg_roles(_: &Snapshot) -> Vec<Vec<V>> {
    oids::ROLES
        .iter()
        .map(|&(oid, name, login)| {
            vec![
                V::text(name),
                b(login),
                b(true),
                b(login),
                b(login),
                b(login),
                b(login),
                V::Int(-1),
                V::text("********"),
                V::Null,
                b(login),
                V::Null,
                V::oid(oid),
            ]
        })
        .collect()
}

fn pg_user(_: &Snapshot) -> Vec<Vec<V>> {
    oids::ROLES
        .iter()
        .filter(|r| r.2)
        .map(|&(oid, name, _)| {
            vec![
                V::text(name),
                V::oid(oid),
                b(true),
                b(true),
                b(true),
                b(true),
                V::text("********"),
                V::Null,
                V::Null,
            ]
        })
        .collect()
}

/// One `pg_class` row.
pub fn class_row(rel: &Relation) -> Vec<V> {
    vec![
        V::oid(rel.oid),
        V::text(&rel.name),
        V::oid(rel.namespace),
        V::Int(0),
        V::Int(0),
        V::oid(oids::POSTGRES_ROLE),
        V::oid(rel.am),
        V::oid(rel.relfilenode),
        V::Int(0),
        V::Int(rel.pages),
        V::Float(rel.tuples),
        V::Int(rel.all_visible),
        V::Int(0),
        V::Int(0),
        b(rel.has_index),
        b(false),
        V::char(rel.persistence),
        V::char(rel.kind),
        V::Int((rel.columns.len() + rel.dropped_attributes.len()) as i64),
        V::Int(0),
        b(rel.kind == 'v'),
        b(false),
        b(false),
        b(false),
        b(false),
        b(true),
        V::char(rel.replica_identity()),
        b(false),
        V::Int(0),
        V::Int(0),
        V::Int(if rel.kind == 'r' { 1 } else { 0 }),
        V::Null,
        if rel.options.is_empty() {
            V::Null
        } else {
            V::TextArray(rel.options.clone())
        },
        V::Null,
    ]
}

fn pg_class(s: &Snapshot) -> Vec<Vec<V>> {
    s.relations().iter().map(class_row).collect()
}

fn pg_collation(_: &Snapshot) -> Vec<Vec<V>> {
    let row = |oid: u32, name: &str, provider: char, collate: Option<&str>| {
        vec![
            V::oid(oid),
            V::text(name),
            V::oid(oids::PG_CATALOG_NAMESPACE),
            V::oid(oids::POSTGRES_ROLE),
            V::char(provider),
            b(true),
            V::Int(-1),
            V::opt_text(collate),
            V::opt_text(collate),
            V::Null,
            V::Null,
            V::Null,
        ]
    };
    vec![
        row(100, "default", 'd', None),
        row(950, "C", 'c', Some("C")),
        row(951, "POSIX", 'c', Some("POSIX")),
    ]
}

fn pg_database(_: &Snapshot) -> Vec<Vec<V>> {
    vec![vec![
        V::oid(oids::DATABASE_OID),
        V::text(oids::DATABASE_NAME),
        V::oid(oids::POSTGRES_ROLE),
        V::Int(oids::UTF8_ENCODING as i64),
        V::char('c'),
        b(false),
        b(true),
        b(false),
        V::Int(-1),
        V::Int(0),
        V::Int(1),
        V::oid(oids::DEFAULT_TABLESPACE),
        V::text("C"),
        V::text("C"),
        V::Null,
        V::Null,
        V::Null,
        V::Null,
    ]]
}

fn pg_description(_: &Snapshot) -> Vec<Vec<V>> {
    oids::DESCRIPTIONS
        .iter()
        .map(|&(obj, class, text)| vec![V::oid(obj), V::oid(class), V::Int(0), V::text(text)])
        .collect()
}

fn pg_shdescription(_: &Snapshot) -> Vec<Vec<V>> {
    oids::SHARED_DESCRIPTIONS
        .iter()
        .map(|&(obj, class, text)| vec![V::oid(obj), V::oid(class), V::text(text)])
        .collect()
}

fn pg_language(_: &Snapshot) -> Vec<Vec<V>> {
    [
        (12u32, "internal", 2246u32),
        (13, "c", 2247),
        (14, "sql", 2248),
    ]
    .iter()
    .map(|&(oid, name, validator)| {
        vec![
            V::oid(oid),
            V::text(name),
            V::oid(oids::POSTGRES_ROLE),
            b(false),
            b(name == "sql"),
            V::Int(0),
            V::Int(0),
            V::oid(validator),
            V::Null,
        ]
    })
    .collect()
}

/// The fixed schemas, then the temporary schemas of the sessions that have one.
fn pg_namespace(s: &Snapshot) -> Vec<Vec<V>> {
    let fixed = oids::NAMESPACES.iter().map(|&(oid, name, owner, acl)| {
        vec![
            V::oid(oid),
            V::text(name),
            V::oid(owner),
            acl.map(|a| V::TextArray(a.iter().map(|s| s.to_string()).collect()))
                .unwrap_or(V::Null),
        ]
    });
    let temp = iolab_engine::temp::live_schemas(&s.db)
        .into_iter()
        .filter_map(|name| {
            let oid = oids::namespace_oid(&name)?;
            Some(vec![
                V::oid(oid),
                V::text(name),
                V::oid(oids::POSTGRES_ROLE),
                V::Null,
            ])
        });
    fixed.chain(temp).collect()
}

fn pg_settings(s: &Snapshot) -> Vec<Vec<V>> {
    s.settings
        .pg_settings_rows()
        .into_iter()
        .map(|r| {
            vec![
                V::text(r.name),
                V::text(r.setting),
                V::opt_text(r.unit),
                V::text(r.category),
                V::text(r.short_desc),
                V::opt_text(r.extra_desc),
                V::text(r.context),
                V::text(r.vartype),
                V::text(r.source),
                V::opt_text(r.min_val),
                V::opt_text(r.max_val),
                r.enumvals
                    .map(|e| V::TextArray(e.iter().map(|s| s.to_string()).collect()))
                    .unwrap_or(V::Null),
                V::opt_text(r.boot_val),
                V::opt_text(r.reset_val),
                V::opt_text(r.sourcefile),
                r.sourceline.map(|l| V::Int(l as i64)).unwrap_or(V::Null),
                b(r.pending_restart),
            ]
        })
        .collect()
}

fn pg_tables(s: &Snapshot) -> Vec<Vec<V>> {
    s.relations()
        .iter()
        .filter(|r| r.kind == 'r')
        .map(|r| {
            vec![
                V::text(r.schema()),
                V::text(&r.name),
                V::text("postgres"),
                V::Null,
                b(s.has_index(r.oid)),
                b(false),
                b(false),
                b(false),
            ]
        })
        .collect()
}

/// `pg_index`: one row per index; key columns as 1-based `indkey`, the default operator
/// class of each key's type, the default collation for text keys.
fn pg_index(s: &Snapshot) -> Vec<Vec<V>> {
    s.indexes
        .iter()
        .map(|i| {
            let table = s.tables.iter().find(|t| t.oid == i.table_oid);
            let attnum = |c: usize| table.map_or(c as u16 + 1, |t| t.attnum(c));
            let vector = |f: &dyn Fn(usize) -> String| {
                (0..i.columns.len()).map(f).collect::<Vec<_>>().join(" ")
            };
            vec![
                V::oid(i.oid),
                V::oid(i.table_oid),
                V::Int(i.columns.len() as i64),
                V::Int(i.columns.len() as i64),
                b(i.unique),
                b(false),
                b(i.is_primary()),
                b(false),
                b(true),
                b(i.clustered),
                b(true),
                b(false),
                b(true),
                b(true),
                b(false),
                V::Text(vector(&|k| attnum(i.columns[k]).to_string())),
                V::Text(vector(&|k| {
                    types::type_row(i.key_types[k].oid())
                        .map(|t| t.collation)
                        .unwrap_or(0)
                        .to_string()
                })),
                V::Text(vector(&|k| i.opclass(k).0.to_string())),
                V::Text(vector(&|_| "0".to_string())),
                V::Null,
                V::Null,
            ]
        })
        .collect()
}

/// `pg_indexes`: schema, table, index and the CREATE INDEX statement.
fn pg_indexes(s: &Snapshot) -> Vec<Vec<V>> {
    s.indexes
        .iter()
        .filter_map(|i| {
            let table = s.tables.iter().find(|t| t.oid == i.table_oid)?;
            Some(vec![
                V::text(&i.schema),
                V::text(&table.name),
                V::text(&i.name),
                V::Null,
                V::opt_text(s.indexdef(i)),
            ])
        })
        .collect()
}

fn pg_views(s: &Snapshot) -> Vec<Vec<V>> {
    s.relations()
        .iter()
        .filter(|r| r.kind == 'v')
        .map(|r| {
            vec![
                V::text(r.schema()),
                V::text(&r.name),
                V::text("postgres"),
                V::opt_text(s.view_definition(r.oid)),
            ]
        })
        .collect()
}

fn pg_tablespace(_: &Snapshot) -> Vec<Vec<V>> {
    vec![
        vec![
            V::oid(oids::DEFAULT_TABLESPACE),
            V::text("pg_default"),
            V::oid(oids::POSTGRES_ROLE),
            V::Null,
            V::Null,
        ],
        vec![
            V::oid(oids::GLOBAL_TABLESPACE),
            V::text("pg_global"),
            V::oid(oids::POSTGRES_ROLE),
            V::Null,
            V::Null,
        ],
    ]
}

fn pg_type(_: &Snapshot) -> Vec<Vec<V>> {
    types::TYPES
        .iter()
        .map(|t| {
            let is_array = t.category == b'A';
            let subscript = if is_array {
                "array_subscript_handler"
            } else if t.elem != 0 {
                "raw_array_subscript_handler"
            } else {
                "-"
            };
            let (recv, send) = if is_array {
                ("array_recv".to_string(), "array_send".to_string())
            } else {
                (recv_name(t.input), send_name(t.output))
            };
            vec![
                V::oid(t.oid),
                V::text(t.name),
                V::oid(oids::PG_CATALOG_NAMESPACE),
                V::oid(oids::POSTGRES_ROLE),
                V::Int(t.len as i64),
                b(t.byval),
                V::char(t.typtype as char),
                V::char(t.category as char),
                b(t.preferred),
                b(true),
                V::char(','),
                V::Int(0),
                V::text(subscript),
                V::oid(t.elem),
                V::oid(t.array),
                V::text(t.input),
                V::text(t.output),
                V::text(recv),
                V::text(send),
                V::text("-"),
                V::text("-"),
                V::text("-"),
                V::char(t.align as char),
                V::char(t.storage as char),
                b(false),
                V::Int(0),
                V::Int(-1),
                V::Int(0),
                V::oid(t.collation),
                V::Null,
                V::Null,
                V::Null,
            ]
        })
        .collect()
}

/// `typreceive` from `typinput`: `int4in` → `int4recv`, `date_in` → `date_recv`.
fn recv_name(input: &str) -> String {
    match input.strip_suffix("in") {
        Some(stem) => format!("{stem}recv"),
        None => "-".to_string(),
    }
}

/// `typsend` from `typoutput`: `int4out` → `int4send`.
fn send_name(output: &str) -> String {
    match output.strip_suffix("out") {
        Some(stem) => format!("{stem}send"),
        None => "-".to_string(),
    }
}

/// What the `pg_catalog` and `information_schema` schemas of one session share: the
/// database, the session's settings and user as of its current statement, and the tables
/// other parts of iolab registered into `pg_catalog`.
pub struct SharedCatalogState {
    pub db: Arc<Database>,
    /// Set by `register_functions` before each statement; until then a default session.
    pub session: RwLock<Option<(SessionSettings, String, Option<String>)>>,
    pub extra: RwLock<BTreeMap<String, Arc<dyn TableProvider>>>,
}

impl SharedCatalogState {
    pub fn new(db: Arc<Database>) -> Arc<SharedCatalogState> {
        Arc::new(SharedCatalogState {
            db,
            session: RwLock::new(None),
            extra: RwLock::new(BTreeMap::new()),
        })
    }

    pub fn snapshot(&self) -> Snapshot {
        let (settings, user, temp_schema) = self.session.read().clone().unwrap_or_else(|| {
            (
                SessionSettings::new(&ServerSettings::defaults()),
                "postgres".to_string(),
                None,
            )
        });
        let mut snapshot = Snapshot::new(self.db.clone(), settings, user, extra_tables());
        snapshot.temp_schema = temp_schema;
        snapshot
    }
}

/// The names and columns of every table registered into any session's `pg_catalog`, so
/// that all sessions — and `intercept`, which has no DataFusion state — number and
/// describe them alike. (The tables themselves stay with each session's schema.)
static EXTRA_TABLES: std::sync::RwLock<BTreeMap<String, SchemaRef>> =
    std::sync::RwLock::new(BTreeMap::new());

/// Has a table of this name been registered into `pg_catalog`?
pub fn is_extra_table(name: &str) -> bool {
    EXTRA_TABLES
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(name)
}

/// The registered `pg_catalog` tables, by name.
pub fn extra_tables() -> Vec<ExtraTable> {
    let map = EXTRA_TABLES.read().unwrap_or_else(|e| e.into_inner());
    map.iter()
        .map(|(name, schema)| ExtraTable {
            name: name.clone(),
            schema: schema.clone(),
        })
        .collect()
}

/// Which of the two schemas a [`CatalogSchema`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    PgCatalog,
    InformationSchema,
}

/// `pg_catalog` or `information_schema` as DataFusion sees it: each table is computed
/// when a statement looks it up. `pg_catalog` also holds tables registered with
/// `register_table` (other modules' statistics views); they appear in `pg_class` too.
pub struct CatalogSchema {
    pub which: Which,
    pub shared: Arc<SharedCatalogState>,
}

impl std::fmt::Debug for CatalogSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CatalogSchema({:?})", self.which)
    }
}

impl CatalogSchema {
    fn static_table(&self, name: &str) -> Option<&'static CatalogTable> {
        match self.which {
            Which::PgCatalog => pg_catalog_table(name),
            Which::InformationSchema => info_schema::information_schema_table(name),
        }
    }

    fn static_names(&self) -> Vec<String> {
        let list = match self.which {
            Which::PgCatalog => PG_CATALOG,
            Which::InformationSchema => info_schema::INFORMATION_SCHEMA,
        };
        list.iter().map(|t| t.name.to_string()).collect()
    }
}

#[async_trait]
impl SchemaProvider for CatalogSchema {
    fn table_names(&self) -> Vec<String> {
        let mut names = self.static_names();
        if self.which == Which::PgCatalog {
            names.extend(self.shared.extra.read().keys().cloned());
        }
        names
    }

    async fn table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        if self.which == Which::PgCatalog {
            if let Some(t) = self.shared.extra.read().get(name) {
                return Ok(Some(t.clone()));
            }
        }
        match self.static_table(name) {
            Some(t) => t.provider(&self.shared.snapshot()).map(Some),
            None => Ok(None),
        }
    }

    fn register_table(
        &self,
        name: String,
        table: Arc<dyn TableProvider>,
    ) -> Result<Option<Arc<dyn TableProvider>>> {
        if self.which != Which::PgCatalog {
            return Err(DataFusionError::Plan(
                "information_schema does not accept new tables".into(),
            ));
        }
        EXTRA_TABLES
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.clone(), table.schema());
        Ok(self.shared.extra.write().insert(name, table))
    }

    fn deregister_table(&self, name: &str) -> Result<Option<Arc<dyn TableProvider>>> {
        Ok(self.shared.extra.write().remove(name))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.static_table(name).is_some()
            || (self.which == Which::PgCatalog && self.shared.extra.read().contains_key(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_definitions_parse_and_are_unique() {
        let mut names = std::collections::HashSet::new();
        let mut oids = std::collections::HashSet::new();
        for t in PG_CATALOG.iter().chain(info_schema::INFORMATION_SCHEMA) {
            let cols = parse_columns(t.columns);
            assert!(!cols.is_empty(), "{}", t.name);
            for c in &cols {
                assert_ne!(
                    c.type_oid(),
                    0,
                    "{}.{} has unknown type {}",
                    t.name,
                    c.name,
                    c.pg_type
                );
            }
            assert!(oids.insert(t.oid), "duplicate oid {}", t.oid);
            names.insert(t.name);
        }
        let sorted: Vec<&str> = PG_CATALOG.iter().map(|t| t.name).collect();
        let mut check = sorted.clone();
        check.sort();
        assert_eq!(sorted, check, "PG_CATALOG is kept in name order");
    }
}
