//! The catalog end to end inside one process: a database on a temporary directory, a
//! DataFusion state set up as a session's is, psql's queries through `rewrite`,
//! DataFusion and `intercept`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::arrow::util::display::array_value_to_string;
use datafusion::catalog::{CatalogProvider, MemoryCatalogProvider};
use datafusion::datasource::MemTable;
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::SessionConfig;
use iolab_catalog::{ColumnDef, Persistence, PgError, PgType};
use iolab_engine::exec::schema::PublicSchema;
use iolab_engine::{Database, DatabaseOptions};
use iolab_settings::{ServerSettings, SessionSettings};

use datafusion::sql::sqlparser::{dialect::PostgreSqlDialect, parser::Parser};

use super::psql::tests::{INTERCEPTED, PSQL_QUERIES};
use super::*;

struct Fixture {
    dir: std::path::PathBuf,
    db: Arc<Database>,
    state: SessionState,
    info: SessionInfo,
    /// OIDs of `eic_uniform` (unlogged, empty) and `t2` (one page).
    eic: u32,
    t2: u32,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn fixture() -> Fixture {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "iolab-pgcatalog-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let db = Database::open(
        &dir,
        &DatabaseOptions {
            shared_buffers: 128,
            huge_pages: iolab_engine::db::HugePages::Off,
            ..DatabaseOptions::default()
        },
    )
    .unwrap();
    let col = |name: &str, ty: PgType, not_null: bool| ColumnDef {
        name: name.into(),
        ty,
        not_null,
    };
    let eic = db
        .catalog
        .create_table(
            "public",
            "eic_uniform",
            Persistence::Unlogged,
            vec![
                col("a", PgType::Int4, false),
                col("filler", PgType::Text, false),
            ],
            false,
        )
        .unwrap()
        .unwrap();
    db.create_relation_file(&eic).unwrap();
    let t2 = db
        .catalog
        .create_table(
            "public",
            "t2",
            Persistence::Permanent,
            vec![
                col("id", PgType::Int4, true),
                col("v", PgType::Varchar(Some(20)), false),
                col(
                    "n",
                    PgType::Numeric {
                        precision: 10,
                        scale: 2,
                    },
                    false,
                ),
            ],
            false,
        )
        .unwrap()
        .unwrap();
    // One (empty) page on disk before the file is first opened: 8192 bytes.
    std::fs::write(
        dir.join("base").join(t2.relfilenode.to_string()),
        vec![0u8; 8192],
    )
    .unwrap();
    db.create_relation_file(&t2).unwrap();

    let mut config = SessionConfig::new()
        .with_default_catalog_and_schema("postgres", "public")
        .with_create_default_catalog_and_schema(false)
        .with_information_schema(false);
    config.options_mut().sql_parser.dialect = datafusion::config::Dialect::PostgreSQL;
    let mut state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .build();
    let catalog = MemoryCatalogProvider::new();
    catalog
        .register_schema(
            "public",
            Arc::new(PublicSchema::new(db.clone(), false, Default::default())),
        )
        .unwrap();
    register_schemas(&catalog, db.clone());
    state
        .catalog_list()
        .register_catalog("postgres".into(), Arc::new(catalog));
    let mut settings = SessionSettings::new(&ServerSettings::defaults());
    settings.set_session_user("postgres", true);
    let info = SessionInfo::new(db.clone(), 4242, "postgres", settings);
    register_functions(&mut state, &info);
    Fixture {
        dir,
        db,
        state,
        info,
        eic: eic.oid,
        t2: t2.oid,
    }
}

fn to_text(batches: &[RecordBatch]) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            rows.push(
                b.columns()
                    .iter()
                    .map(|c| {
                        if c.is_null(r) {
                            "NULL".to_string()
                        } else {
                            array_value_to_string(c, r).unwrap()
                        }
                    })
                    .collect(),
            );
        }
    }
    rows
}

/// `sql` as the server hands it to DataFusion: rewritten, parsed, its catalog relations
/// qualified (the rewritten text when it does not parse: DataFusion reports the error).
fn for_datafusion(sql: &str) -> String {
    let rewritten = rewrite_for_datafusion(sql);
    match Parser::parse_sql(&PostgreSqlDialect {}, &rewritten) {
        Ok(mut statements) if statements.len() == 1 => {
            qualify_catalog_relations(&mut statements[0]);
            statements[0].to_string()
        }
        _ => rewritten.into_owned(),
    }
}

impl Fixture {
    /// Runs `sql` as the server would: intercept, else rewrite and DataFusion.
    async fn run(&self, sql: &str) -> Result<(SchemaRef, Vec<Vec<String>>), PgError> {
        if let Some(r) = intercept(sql, &self.info) {
            return r.map(|(s, b)| (s, to_text(&b)));
        }
        let sql = for_datafusion(sql);
        let df = |e: datafusion::error::DataFusionError| match e {
            datafusion::error::DataFusionError::External(b) => match b.downcast::<PgError>() {
                Ok(p) => *p,
                Err(o) => PgError::internal(o.to_string()),
            },
            other => PgError::internal(other.to_string()),
        };
        let plan = self.state.create_logical_plan(&sql).await.map_err(df)?;
        let schema = plan.schema().inner().clone();
        let frame = datafusion::dataframe::DataFrame::new(self.state.clone(), plan);
        let batches = frame.collect().await.map_err(df)?;
        Ok((schema, to_text(&batches)))
    }

    async fn rows(&self, sql: &str) -> Vec<Vec<String>> {
        match self.run(sql).await {
            Ok((_, rows)) => rows,
            Err(e) => panic!("{sql}\nfailed: {e} {:?}", e.detail),
        }
    }

    async fn one(&self, sql: &str) -> String {
        let rows = self.rows(sql).await;
        assert_eq!(rows.len(), 1, "{sql}: {rows:?}");
        rows[0][0].clone()
    }
}

fn row(cells: &[&str]) -> Vec<String> {
    cells.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn pgcatalog_psql_list_commands() {
    let f = fixture();
    // \d, \dt+, \di+ (PSQL_QUERIES[0..3])
    assert_eq!(
        f.rows(PSQL_QUERIES[0]).await,
        vec![
            row(&["public", "eic_uniform", "table", "postgres"]),
            row(&["public", "t2", "table", "postgres"])
        ]
    );
    let (schema, rows) = f.run(PSQL_QUERIES[1]).await.unwrap();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(
        names,
        [
            "Schema",
            "Name",
            "Type",
            "Owner",
            "Persistence",
            "Access method",
            "Size",
            "Description"
        ]
    );
    assert_eq!(
        rows,
        vec![
            row(&[
                "public",
                "eic_uniform",
                "table",
                "postgres",
                "unlogged",
                "heap",
                "0 bytes",
                "NULL"
            ]),
            row(&[
                "public",
                "t2",
                "table",
                "postgres",
                "permanent",
                "heap",
                "8192 bytes",
                "NULL"
            ]),
        ]
    );
    assert!(f.rows(PSQL_QUERIES[2]).await.is_empty(), "no indexes yet");
    // \d eic_uniform, step 1
    assert_eq!(
        f.rows(PSQL_QUERIES[3]).await,
        vec![row(&[&f.eic.to_string(), "public", "eic_uniform"])]
    );
    // \dt eic*
    assert_eq!(
        f.rows(PSQL_QUERIES[4]).await,
        vec![row(&["public", "eic_uniform", "table", "postgres"])]
    );
    // \dn+
    assert_eq!(
        f.rows(PSQL_QUERIES[5]).await,
        vec![row(&[
            "public",
            "pg_database_owner",
            "pg_database_owner=UC/pg_database_owner\n=U/pg_database_owner",
            "standard public schema"
        ])]
    );
    // \dx, \db, \df
    assert!(f.rows(PSQL_QUERIES[6]).await.is_empty());
    assert_eq!(
        f.rows(PSQL_QUERIES[7]).await,
        vec![
            row(&["pg_default", "postgres", ""]),
            row(&["pg_global", "postgres", ""])
        ]
    );
    assert!(f.rows(PSQL_QUERIES[8]).await.is_empty());
}

#[tokio::test]
async fn pgcatalog_psql_describe_table() {
    let f = fixture();
    let with_oid = |sql: &str, oid: u32| sql.replace("16384", &oid.to_string());
    // step 2: kind, persistence, access method
    let rows = f.rows(&with_oid(INTERCEPTED[0], f.eic)).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][1], "r");
    assert_eq!(rows[0][12], "u");
    assert_eq!(rows[0][14], "heap");
    // step 3: columns
    let rows = f.rows(&with_oid(INTERCEPTED[1], f.t2)).await;
    assert_eq!(
        rows,
        vec![
            row(&["id", "integer", "NULL", "true", "NULL", "", ""]),
            row(&[
                "v",
                "character varying(20)",
                "NULL",
                "false",
                "NULL",
                "",
                ""
            ]),
            row(&["n", "numeric(10,2)", "NULL", "false", "NULL", "", ""]),
        ]
    );
    // \d+: storage and the rest
    let rows = f.rows(&with_oid(INTERCEPTED[2], f.eic)).await;
    assert_eq!(
        rows[0],
        row(&["a", "integer", "NULL", "false", "NULL", "", "", "p", "", "NULL", "NULL"])
    );
    assert_eq!(rows[1][7], "x");
    // the rest: no indexes, policies, statistics, publications, parents, partitions
    for sql in &INTERCEPTED[3..9] {
        let (schema, rows) = f.run(&with_oid(sql, f.eic)).await.unwrap();
        assert!(rows.is_empty(), "{sql}");
        assert!(!schema.fields().is_empty());
    }
    // an unknown OID: no row, so psql says it found nothing
    assert!(f.rows(&with_oid(INTERCEPTED[0], 99999)).await.is_empty());
    // a catalog describes itself
    let rows = f
        .rows(&PSQL_QUERIES[3].replace("eic_uniform", "pg_class"))
        .await;
    assert_eq!(rows, vec![row(&["1259", "pg_catalog", "pg_class"])]);
    let rows = f.rows(&with_oid(INTERCEPTED[1], 1259)).await;
    assert_eq!(rows[0][..4], row(&["oid", "oid", "NULL", "true"]));
    assert_eq!(rows[16][..2], row(&["relpersistence", "\"char\""]));
}

#[tokio::test]
async fn pgcatalog_psql_databases_and_roles() {
    let f = fixture();
    let (schema, rows) = f.run(INTERCEPTED[9]).await.unwrap();
    assert_eq!(schema.fields().len(), 8);
    assert_eq!(
        rows,
        vec![row(&[
            "postgres", "postgres", "UTF8", "C", "C", "NULL", "libc", "NULL"
        ])]
    );
    let (schema, rows) = f.run(INTERCEPTED[10]).await.unwrap();
    assert_eq!(schema.field(8).name(), "Size");
    assert_eq!(
        rows[0][8..],
        row(&[
            "8192 bytes",
            "pg_default",
            "default administrative connection database"
        ])
    );
    let rows = f.rows(INTERCEPTED[11]).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0][0], "postgres");
}

#[tokio::test]
async fn pgcatalog_functions() {
    let f = fixture();
    assert!(f.one("SELECT version()").await.starts_with("PostgreSQL 18"));
    assert_eq!(
        f.one("SELECT pg_catalog.current_setting('work_mem')").await,
        "4MB"
    );
    assert_eq!(
        f.one("SELECT current_setting('nosuch.thing', true)").await,
        "NULL"
    );
    let err = f.run("SELECT current_setting('nosuch')").await.unwrap_err();
    assert_eq!(err.code, "42704");
    assert_eq!(
        err.message,
        "unrecognized configuration parameter \"nosuch\""
    );
    // Planning runs set_config with constant arguments: the change is recorded before the
    // statement's rows are sent.
    let plan = f
        .state
        .create_logical_plan("SELECT set_config('work_mem', '8MB', false)")
        .await
        .unwrap();
    f.state.optimize(&plan).unwrap();
    assert_eq!(
        f.info.take_setting_changes(),
        vec![("work_mem".to_string(), "8MB".to_string(), false)]
    );
    assert_eq!(
        f.one("SELECT set_config('work_mem', '8MB', false)").await,
        "8MB"
    );
    assert_eq!(
        f.info.take_setting_changes(),
        vec![("work_mem".to_string(), "8MB".to_string(), false)]
    );
    assert_eq!(
        f.one("SELECT set_config(name, '2MB', false) FROM pg_settings WHERE name = 'work_mem'")
            .await,
        "2MB"
    );
    assert_eq!(
        f.info.take_setting_changes(),
        vec![("work_mem".to_string(), "2MB".to_string(), false)]
    );
    assert_eq!(f.one("SELECT pg_backend_pid()").await, "4242");
    // No temporary schema yet.
    assert_eq!(f.one("SELECT pg_my_temp_schema()").await, "0");
    // PostgreSQL 18's answers.
    for (sql, expected) in [
        ("SELECT width_bucket(5.35, 0.024, 10.06, 5)", "3"),
        ("SELECT width_bucket(-1, 0, 10, 5)", "0"),
        ("SELECT width_bucket(10, 0, 10, 5)", "6"),
        ("SELECT width_bucket(9.99, 10, 0, 5)", "1"),
        ("SELECT width_bucket(10, 10, 0, 5)", "1"),
        ("SELECT width_bucket(0, 10, 0, 5)", "6"),
        ("SELECT num_nulls(1, NULL, 'a', NULL)", "2"),
        ("SELECT num_nonnulls(1, NULL, 'a')", "2"),
    ] {
        assert_eq!(f.one(sql).await, expected, "{sql}");
    }
    for sql in [
        "SELECT width_bucket(1, 1, 1, 5)",
        "SELECT width_bucket(1, 0, 2, 0)",
    ] {
        assert_eq!(f.run(sql).await.unwrap_err().code, "2201G", "{sql}");
    }
    assert_eq!(f.one("SELECT current_database()").await, "postgres");
    assert_eq!(f.one("SELECT current_user").await, "postgres");
    assert_eq!(f.one("SELECT session_user").await, "postgres");
    assert_eq!(f.one("SELECT user").await, "postgres");
    assert_eq!(f.one("SELECT current_schema()").await, "public");
    assert_eq!(
        f.one("SELECT current_schemas(true)").await,
        "[pg_catalog, public]"
    );
    assert_eq!(
        f.one("SELECT pg_size_pretty(pg_relation_size('t2'::regclass))")
            .await,
        "8192 bytes"
    );
    assert_eq!(
        f.one("SELECT pg_total_relation_size('public.t2')").await,
        "8192"
    );
    assert_eq!(f.one("SELECT pg_size_pretty(1431306240)").await, "1365 MB");
    assert_eq!(f.one("SELECT 't2'::regclass::text").await, "t2");
    assert_eq!(f.one(&format!("SELECT {}::regclass", f.t2)).await, "t2");
    assert_eq!(f.one("SELECT 'pg_class'::regclass::oid").await, "1259");
    assert_eq!(f.one("SELECT to_regclass('nosuch')").await, "NULL");
    assert_eq!(
        f.run("SELECT pg_relation_size('nosuch')")
            .await
            .unwrap_err()
            .code,
        "42P01"
    );
    assert_eq!(
        f.one("SELECT format_type(1043, 24)").await,
        "character varying(20)"
    );
    assert_eq!(
        f.one("SELECT pg_catalog.format_type('integer'::regtype, NULL)")
            .await,
        "integer"
    );
    assert_eq!(f.one("SELECT quote_ident('Foo')").await, "\"Foo\"");
    assert_eq!(
        f.one("SELECT parse_ident('public.\"T\"')").await,
        "[public, T]"
    );
    assert_eq!(f.one("SELECT pg_get_userbyid(10)").await, "postgres");
    assert_eq!(f.one("SELECT pg_encoding_to_char(6)").await, "UTF8");
    assert_eq!(
        f.one("SELECT has_table_privilege('t2', 'SELECT')").await,
        "true"
    );
    assert_eq!(
        f.one("SELECT obj_description(2200, 'pg_namespace')").await,
        "standard public schema"
    );
    assert_eq!(
        f.one("SELECT pg_table_is_visible('t2'::regclass)").await,
        "true"
    );
    assert_eq!(
        f.one("SELECT pg_table_is_visible(13361)").await,
        "false",
        "information_schema.tables"
    );
    assert_eq!(f.one("SELECT pg_typeof(1)").await, "bigint");
}

#[tokio::test]
async fn pgcatalog_tables_and_information_schema() {
    let f = fixture();
    assert_eq!(
        f.rows("SELECT relname, relkind, relpersistence, relnatts, relam FROM pg_class WHERE relnamespace = 2200 ORDER BY oid").await,
        vec![row(&["eic_uniform", "r", "u", "2", "2"]), row(&["t2", "r", "p", "3", "2"])]
    );
    assert_eq!(
        f.rows(&format!("SELECT attname, atttypid, atttypmod, attnotnull, attlen FROM pg_attribute WHERE attrelid = {} ORDER BY attnum", f.t2)).await,
        vec![row(&["id", "23", "-1", "true", "4"]), row(&["v", "1043", "24", "false", "-1"]), row(&["n", "1700", "655366", "false", "-1"])]
    );
    assert_eq!(
        f.one("SELECT typname FROM pg_type WHERE oid = 1184").await,
        "timestamptz"
    );
    assert_eq!(f.one("SELECT count(*) FROM pg_namespace").await, "4");
    assert_eq!(
        f.one("SELECT setting FROM pg_settings WHERE name = 'work_mem'")
            .await,
        "4096"
    );
    assert_eq!(
        f.one("SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename = 't2'")
            .await,
        "t2"
    );
    assert_eq!(
        f.one("SELECT rolname FROM pg_roles WHERE oid = 10").await,
        "postgres"
    );
    assert_eq!(f.one("SELECT datname FROM pg_database").await, "postgres");
    assert_eq!(
        f.rows("SELECT table_name, table_type FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1")
            .await,
        vec![row(&["eic_uniform", "BASE TABLE"]), row(&["t2", "BASE TABLE"])]
    );
    assert_eq!(
        f.rows("SELECT column_name, data_type, udt_name, is_nullable, character_maximum_length, numeric_precision FROM information_schema.columns WHERE table_name = 't2' ORDER BY ordinal_position").await,
        vec![
            row(&["id", "integer", "int4", "NO", "NULL", "32"]),
            row(&["v", "character varying", "varchar", "YES", "20", "NULL"]),
            row(&["n", "numeric", "numeric", "YES", "NULL", "10"]),
        ]
    );
    assert_eq!(
        f.rows("SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT LIKE 'pg_%' ORDER BY 1")
            .await,
        vec![row(&["information_schema"]), row(&["public"])]
    );
}

#[tokio::test]
async fn pgcatalog_registered_views_join_the_catalog() {
    let f = fixture();
    let schema = Arc::new(datafusion::arrow::datatypes::Schema::new(vec![
        datafusion::arrow::datatypes::Field::new(
            "backend_type",
            datafusion::arrow::datatypes::DataType::Utf8,
            true,
        ),
        datafusion::arrow::datatypes::Field::new(
            "reads",
            datafusion::arrow::datatypes::DataType::Int64,
            true,
        ),
    ]));
    let table = MemTable::try_new(schema, vec![vec![]]).unwrap();
    let catalog = f.state.catalog_list().catalog("postgres").unwrap();
    catalog
        .schema("pg_catalog")
        .unwrap()
        .register_table("pg_stat_test_io".into(), Arc::new(table))
        .unwrap();
    assert_eq!(f.one("SELECT count(*) FROM pg_stat_test_io").await, "0");
    assert_eq!(
        f.one("SELECT relkind FROM pg_class WHERE relname = 'pg_stat_test_io'")
            .await,
        "v"
    );
    assert_eq!(
        f.rows("SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = 'pg_stat_test_io' ORDER BY a.attnum").await,
        vec![row(&["backend_type", "text"]), row(&["reads", "bigint"])]
    );
    let _ = &f.db;
}

/// Two samples around one interval of I/O: 4 reads of 128 kB (10 ms blocked, 500 µs
/// latency each) in 2 s, one client backend with 3 I/Os in flight at the second sample.
fn sampled_history(db: &Database) {
    use iolab_stats::{
        AioEvent, AioLatencyOp, BackendType, IoContext, IoObject, IoOp, PendingIoStats,
        StatsHistory,
    };
    let mut history = StatsHistory::new(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(3600),
    );
    let t0 = chrono::Utc::now();
    let (io, aio) = db.io_stats.snapshots();
    history.record(t0, io, aio, &[0; BackendType::COUNT]);
    let mut pending = PendingIoStats::new();
    for _ in 0..4 {
        let (rel, bulk) = (IoObject::Relation, IoContext::BulkRead);
        pending.count_op(rel, bulk, IoOp::Read, 131072, 2_500_000);
        pending.record_latency(rel, bulk, IoOp::Read, 500_000);
        pending.count_aio(AioEvent::Started);
        pending.record_aio_latency(AioLatencyOp::Read, 500_000);
    }
    db.io_stats
        .flush(&mut pending, BackendType::ClientBackend, 0);
    let (io, aio) = db.io_stats.snapshots();
    let mut flying = [0; BackendType::COUNT];
    flying[BackendType::ClientBackend as usize] = 3;
    history.record(t0 + chrono::Duration::seconds(2), io, aio, &flying);
    *db.io_stats.history.lock() = Some(history);
}

#[tokio::test]
async fn history_views_build_only_the_columns_a_statement_reads() {
    let f = fixture();
    sampled_history(&f.db);
    // every column, through the projected builder, typed as the schema says
    let io = stat_aio::pg_stat_io_history_batch(&f.db, None, Default::default()).unwrap();
    assert_eq!(io.schema(), stat_aio::pg_stat_io_history_schema());
    let aio = stat_aio::pg_stat_aio_history_batch(&f.db, None, Default::default()).unwrap();
    assert_eq!(aio.schema(), stat_aio::pg_stat_aio_history_schema());
    assert_eq!((io.num_rows(), aio.num_rows()), (1, 1));
    // a projection is the same columns of the whole batch, in the projection's order
    let some =
        stat_aio::pg_stat_io_history_batch(&f.db, Some(&[20, 0, 5]), Default::default()).unwrap();
    assert_eq!(some.num_columns(), 3);
    for (i, column) in [20, 0, 5].into_iter().enumerate() {
        assert_eq!(some.schema().field(i), io.schema().field(column));
        assert_eq!(some.column(i), io.column(column));
    }
    // the values, through SQL
    let io_row = f
        .rows(
            "SELECT backend_type, context, interval_s, reads, read_bytes, read_time, \
             reads_per_s, read_mb_per_s, read_time_per_s, write_p50 FROM pg_stat_io_history",
        )
        .await;
    let expected = [
        "client backend",
        "bulkread",
        "2.0",
        "4",
        "524288",
        "10.0",
        "2.0",
        "0.262144",
        "5.0",
        "NULL",
    ];
    assert_eq!(io_row, vec![row(&expected)]);
    let p50: f64 = f
        .one("SELECT read_p50 FROM pg_stat_io_history")
        .await
        .parse()
        .unwrap();
    assert!((0.5..=0.505).contains(&p50), "{p50} ms: 500 µs within 1 %");
    let aio_row = f
        .rows("SELECT ios, in_flight, ios_per_s, fsync_p50 FROM pg_stat_aio_history")
        .await;
    assert_eq!(aio_row, vec![row(&["4", "3", "2.0", "NULL"])]);
}

#[tokio::test]
async fn a_time_window_builds_only_its_samples_and_keeps_exact_results() {
    use iolab_stats::{BackendType, IoContext, IoObject, IoOp, PendingIoStats};
    let f = fixture();
    sampled_history(&f.db);
    // a third sample, 2 s after the second, with one more read
    let mut pending = PendingIoStats::new();
    pending.count_op(IoObject::Relation, IoContext::Normal, IoOp::Read, 8192, 0);
    f.db.io_stats
        .flush(&mut pending, BackendType::ClientBackend, 0);
    let (io, aio) = f.db.io_stats.snapshots();
    let second = {
        let mut history = f.db.io_stats.history.lock();
        let history = history.as_mut().unwrap();
        let second = history.samples().back().unwrap().time;
        let none = [0; BackendType::COUNT];
        history.record(second + chrono::Duration::seconds(2), io, aio, &none);
        second
    };
    let at =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let after_second = at(second + chrono::Duration::seconds(1));
    let whole = f.one("SELECT sum(reads) FROM pg_stat_io_history").await;
    assert_eq!(whole, "5");
    // Grafana's $__timeFilter, and a bare comparison: the window holds the third sample only
    for filter in [
        format!(
            "time BETWEEN '{after_second}' AND '{}'",
            at(second + chrono::Duration::hours(1))
        ),
        format!("time > '{after_second}'"),
        format!("'{after_second}' < time"),
    ] {
        let sql = format!("SELECT sum(reads), count(*) FROM pg_stat_io_history WHERE {filter}");
        assert_eq!(f.rows(&sql).await, vec![row(&["1", "1"])], "{sql}");
        assert!(
            pushed_range(&f, &sql).await.from_us.is_some(),
            "{sql}: the view gets the window's start"
        );
    }
    // the second sample exactly, at its microsecond
    let sql = format!(
        "SELECT reads FROM pg_stat_io_history WHERE time = '{}'",
        at(second)
    );
    assert_eq!(f.rows(&sql).await, vec![row(&["4"])]);
    let sql = format!(
        "SELECT count(*) FROM pg_stat_aio_history WHERE time <= '{}'",
        at(second)
    );
    assert_eq!(f.one(&sql).await, "1");
}

/// The time range DataFusion hands the history view of `sql` after optimising it.
async fn pushed_range(f: &Fixture, sql: &str) -> time_range::TimeRange {
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    let plan = f
        .state
        .create_logical_plan(&for_datafusion(sql))
        .await
        .unwrap();
    let plan = f.state.optimize(&plan).unwrap();
    let mut range = None;
    plan.apply(|node| {
        if let datafusion::logical_expr::LogicalPlan::TableScan(scan) = node {
            range = Some(time_range::TimeRange::of_filters(&scan.filters));
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .unwrap();
    range.expect("the plan scans the view")
}

#[tokio::test]
async fn only_statements_over_in_memory_catalogs_are_planned_in_one_partition() {
    let f = fixture();
    for (sql, single) in [
        ("SELECT * FROM pg_stat_io", true),
        (
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace",
            true,
        ),
        (
            "SELECT count(*) FROM pg_stat_io_history GROUP BY backend_type",
            true,
        ),
        ("SELECT * FROM eic_uniform", false),
        (
            "SELECT * FROM pg_class WHERE oid IN (SELECT a FROM eic_uniform)",
            false,
        ),
        ("SELECT sum(i) FROM generate_series(1, 10) AS s(i)", false),
        ("SELECT 1", false),
    ] {
        let plan = f
            .state
            .create_logical_plan(&for_datafusion(sql))
            .await
            .unwrap();
        assert_eq!(
            crate::sql::reads_only_in_memory_catalogs(&plan),
            single,
            "{sql}"
        );
    }
}

/// The plan cache's path (`sql::plan_cache`): one plan made from the normalized panel
/// query of one window, bound to the constants of other windows, hands the history view
/// each window's bounds and returns each window's rows, as planning afresh does.
#[tokio::test]
async fn a_cached_plan_narrows_the_history_to_each_bound_window() {
    use crate::sql::{bind, normalize, plan_cache, plan_statement};
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    let f = fixture();
    sampled_history(&f.db);
    let (first, second) = {
        let history = f.db.io_stats.history.lock();
        let samples = history.as_ref().unwrap().samples();
        (samples.front().unwrap().time, samples.back().unwrap().time)
    };
    // a third sample, 2 s after the second, with one more read
    let mut pending = iolab_stats::PendingIoStats::new();
    pending.count_op(
        iolab_stats::IoObject::Relation,
        iolab_stats::IoContext::Normal,
        iolab_stats::IoOp::Read,
        8192,
        0,
    );
    f.db.io_stats
        .flush(&mut pending, iolab_stats::BackendType::ClientBackend, 0);
    let (io, aio) = f.db.io_stats.snapshots();
    let third = second + chrono::Duration::seconds(2);
    let none = [0; iolab_stats::BackendType::COUNT];
    f.db.io_stats
        .history
        .lock()
        .as_mut()
        .unwrap()
        .record(third, io, aio, &none);
    let at =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let panel = |from: chrono::DateTime<chrono::Utc>, to: chrono::DateTime<chrono::Utc>| {
        format!(
            "SELECT count(DISTINCT time), sum(reads) FROM pg_stat_io_history WHERE time BETWEEN '{}' AND '{}'",
            at(from),
            at(to)
        )
    };
    let normalized = |sql: &str| {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, &for_datafusion(sql))
            .unwrap()
            .remove(0);
        normalize::normalize(&stmt).unwrap()
    };
    let later = panel(
        second + chrono::Duration::seconds(1),
        third + chrono::Duration::hours(1),
    );
    let earlier = panel(first - chrono::Duration::seconds(1), second);
    let (a, b) = (normalized(&later), normalized(&earlier));
    assert_eq!(a.text, b.text);
    let types: Vec<_> = a
        .types(&datafusion::arrow::datatypes::DataType::Null)
        .into_iter()
        .map(Some)
        .collect();
    let plan = plan_statement(&f.state, &a.statement, &types)
        .await
        .unwrap();
    assert!(plan_cache::cacheable(&plan));
    let cached = Arc::new(f.state.optimize(&plan).unwrap());
    let mut results = Vec::new();
    for (sql, normal, from) in [
        (&later, a, second + chrono::Duration::seconds(1)),
        (&earlier, b, first - chrono::Duration::seconds(1)),
    ] {
        let values = normal
            .params
            .iter()
            .map(|p| match p {
                normalize::Param::Constant(v) => v.clone(),
                normalize::Param::Now => unreachable!(),
            })
            .collect();
        let bound = bind(&f.state, cached.clone(), values).unwrap();
        let mut range = None;
        bound
            .apply(|node| {
                if let datafusion::logical_expr::LogicalPlan::TableScan(scan) = node {
                    range = Some(time_range::TimeRange::of_filters(&scan.filters));
                    return Ok(TreeNodeRecursion::Stop);
                }
                Ok(TreeNodeRecursion::Continue)
            })
            .unwrap();
        assert_eq!(
            range.unwrap().from_us,
            Some(from.timestamp_micros()),
            "{sql}: the view gets the new window"
        );
        let physical = f
            .state
            .query_planner()
            .create_physical_plan(&bound, &f.state)
            .await
            .unwrap();
        let batches = datafusion::physical_plan::collect(physical, f.state.task_ctx())
            .await
            .unwrap();
        let cached_rows = to_text(&batches);
        assert_eq!(cached_rows, f.rows(sql).await, "{sql}: as planned afresh");
        results.push(cached_rows);
    }
    assert_eq!(results[0], vec![row(&["1", "1"])], "the third sample");
    assert_eq!(results[1][0][1], "4", "the first two samples");
}

/// The generic physical plan of a panel query (`sql::generic_plan`): each copy's view
/// scan reads the window of that run's values, the template's reads every sample; a
/// projection's parameter takes its value too; a parameter where a copy could not take
/// it (an aggregate's argument) leaves the statement without a template.
#[tokio::test]
async fn a_generic_plan_gives_each_run_its_own_window() {
    use crate::pgcatalog::time_range::TimeRange;
    use crate::pgcatalog::view_scan::ViewScanExec;
    use crate::sql::generic_plan::{instantiate, template};
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::physical_plan::ExecutionPlan;
    use datafusion::scalar::ScalarValue;

    let fx = fixture();
    let state = &fx.state;
    let plan = |sql: &'static str| async move {
        let logical = state.create_logical_plan(sql).await.unwrap();
        state.optimize(&logical).unwrap()
    };
    let scan_range = |plan: &Arc<dyn ExecutionPlan>| {
        let mut range = None;
        plan.apply(|node| {
            if let Some(scan) = node.downcast_ref::<ViewScanExec>() {
                range = Some(TimeRange::of_filters(scan.filters()));
                return Ok(TreeNodeRecursion::Stop);
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .unwrap();
        range.expect("a view scan")
    };

    let panel =
        plan("SELECT count(*) FROM pg_catalog.pg_stat_io_history WHERE time BETWEEN $1 AND $2")
            .await;
    let fields = panel.get_parameter_fields().unwrap();
    let at = |name: &str, us: i64| {
        let ty = fields[name].as_ref().unwrap().data_type().clone();
        ScalarValue::TimestampMicrosecond(Some(us), None)
            .cast_to(&ty)
            .unwrap()
    };
    let generic = template(&panel, &fx.state).await.expect("a template");
    assert_eq!(scan_range(&generic), TimeRange::default());
    for (from, to) in [(1_000_000, 2_000_000), (5_000_000, 5_000_000)] {
        let run = instantiate(&generic, &[at("$1", from), at("$2", to)]).unwrap();
        assert_eq!(
            scan_range(&run),
            TimeRange {
                from_us: Some(from),
                to_us: Some(to)
            }
        );
        let mut markers = 0;
        run.apply(|node| {
            node.apply_expressions(&mut |e| {
                markers += iolab_engine::plan::statement_params::has_marker(e) as usize;
                Ok(TreeNodeRecursion::Continue)
            })?;
            Ok(TreeNodeRecursion::Continue)
        })
        .unwrap();
        assert_eq!(markers, 0);
        let rows = datafusion::physical_plan::collect(run, fx.state.task_ctx())
            .await
            .unwrap();
        assert_eq!(to_text(&rows), vec![vec!["0".to_string()]]);
    }
    // the template itself is untouched
    assert_eq!(scan_range(&generic), TimeRange::default());

    let projected = plan("SELECT reads + $1 FROM pg_catalog.pg_stat_io").await;
    let generic = template(&projected, &fx.state).await.expect("a template");
    let run = instantiate(&generic, &[ScalarValue::Int64(Some(5))]).unwrap();
    let rows = datafusion::physical_plan::collect(run, fx.state.task_ctx())
        .await
        .unwrap();
    let literal = plan("SELECT reads + 5 FROM pg_catalog.pg_stat_io").await;
    let physical = fx.state.create_physical_plan(&literal).await.unwrap();
    let want = datafusion::physical_plan::collect(physical, fx.state.task_ctx())
        .await
        .unwrap();
    assert_eq!(to_text(&rows), to_text(&want));
    let aggregated = plan("SELECT sum(reads + $1) FROM pg_catalog.pg_stat_io").await;
    assert!(template(&aggregated, &fx.state).await.is_none());
}

#[tokio::test]
async fn pgcatalog_wal_views_and_functions() {
    let f = fixture();
    // Columns and types as PostgreSQL 18.4's \d shows them.
    let columns = |view: &str| {
        format!(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a \
             JOIN pg_class c ON c.oid = a.attrelid WHERE c.relname = '{view}' ORDER BY a.attnum"
        )
    };
    assert_eq!(
        f.rows(&columns("pg_stat_wal")).await,
        vec![
            row(&["wal_records", "bigint"]),
            row(&["wal_fpi", "bigint"]),
            row(&["wal_bytes", "numeric"]),
            row(&["wal_buffers_full", "bigint"]),
            row(&["stats_reset", "timestamp with time zone"]),
        ]
    );
    let prefetch: Vec<Vec<String>> = f.rows(&columns("pg_stat_recovery_prefetch")).await;
    assert_eq!(
        prefetch
            .iter()
            .map(|r| format!("{} {}", r[0], r[1]))
            .collect::<Vec<_>>()
            .join(", "),
        "stats_reset timestamp with time zone, prefetch bigint, hit bigint, skip_init bigint, \
         skip_new bigint, skip_fpw bigint, skip_rep bigint, wal_distance integer, \
         block_distance integer, io_depth integer"
    );
    assert_eq!(
        f.one("SELECT relkind FROM pg_class WHERE relname = 'pg_stat_wal'")
            .await,
        "v"
    );

    // The view reads the hub's counters; 'wal' resets them and moves stats_reset.
    let hub = &f.db.io_stats;
    hub.wal.reset();
    hub.wal
        .records
        .fetch_add(3, std::sync::atomic::Ordering::Relaxed);
    hub.wal
        .bytes
        .fetch_add(1 << 40, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        f.rows("SELECT wal_records, wal_fpi, wal_bytes, wal_buffers_full FROM pg_stat_wal")
            .await,
        vec![row(&["3", "0", "1099511627776", "0"])]
    );
    assert_eq!(
        f.rows("SELECT * FROM pg_stat_get_wal()").await.len(),
        1,
        "the table function"
    );
    let before = f.one("SELECT stats_reset FROM pg_stat_wal").await;
    std::thread::sleep(std::time::Duration::from_millis(2));
    f.one("SELECT pg_stat_reset_shared('wal')").await;
    assert_eq!(f.one("SELECT wal_records FROM pg_stat_wal").await, "0");
    assert!(f.one("SELECT stats_reset FROM pg_stat_wal").await > before);
    hub.recovery_prefetch
        .skip_fpw
        .fetch_add(2, std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        f.one("SELECT skip_fpw FROM pg_stat_recovery_prefetch")
            .await,
        "2"
    );
    f.one("SELECT pg_stat_reset_shared('recovery_prefetch')")
        .await;
    assert_eq!(
        f.rows(
            "SELECT prefetch, hit, skip_fpw, wal_distance, io_depth FROM pg_stat_recovery_prefetch"
        )
        .await,
        vec![row(&["0", "0", "0", "0", "0"])]
    );

    // LSNs: PostgreSQL's spelling, ordered insert ≥ write ≥ flush.
    let lsn = |s: String| wal::parse_lsn(&s).unwrap();
    let insert = lsn(f.one("SELECT pg_current_wal_insert_lsn()").await);
    let write = lsn(f.one("SELECT pg_current_wal_lsn()").await);
    let flush = lsn(f.one("SELECT pg_current_wal_flush_lsn()").await);
    assert!(
        insert >= write && write >= flush && flush > 0,
        "{insert} {write} {flush}"
    );
    assert_eq!(
        f.one("SELECT pg_current_wal_insert_lsn()").await,
        iolab_engine::wal::format_lsn(f.db.wal.insert_lsn())
    );

    // pg_walfile_name and pg_wal_lsn_diff: values checked on PostgreSQL 18.4.
    for (lsn, name) in [
        ("0/FFFFFF", "000000010000000000000000"),
        ("0/1000000", "000000010000000000000001"),
        ("0/1000001", "000000010000000000000001"),
        ("1/0", "000000010000000100000000"),
        ("FFFFFFFF/FFFFFFFF", "00000001FFFFFFFF000000FF"),
    ] {
        assert_eq!(
            f.one(&format!("SELECT pg_walfile_name('{lsn}')")).await,
            name,
            "{lsn}"
        );
    }
    assert_eq!(
        f.one("SELECT pg_walfile_name('0/1000000'::pg_lsn)").await,
        "000000010000000000000001"
    );
    assert_eq!(f.one("SELECT pg_walfile_name(NULL)").await, "NULL");
    assert_eq!(
        f.rows("SELECT pg_wal_lsn_diff('1/0', '0/1'), pg_wal_lsn_diff('0/1', '1/0'), pg_typeof(pg_wal_lsn_diff('1/0', '0/1'))")
            .await,
        vec![row(&["4294967295", "-4294967295", "numeric"])]
    );
    assert_eq!(
        f.one("SELECT pg_wal_lsn_diff('FFFFFFFF/FFFFFFFF', '0/0')")
            .await,
        "18446744073709551615"
    );
    assert_eq!(f.one("SELECT pg_wal_lsn_diff('0/1', NULL)").await, "NULL");
    let e = f.run("SELECT pg_walfile_name('0/')").await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("22P02", "invalid input syntax for type pg_lsn: \"0/\"")
    );
    let e = f
        .run("SELECT pg_wal_lsn_diff('0/1', '123456789/0')")
        .await
        .unwrap_err();
    assert_eq!(
        e.message,
        "invalid input syntax for type pg_lsn: \"123456789/0\""
    );
    assert_eq!(
        f.run("SELECT pg_walfile_name(1)").await.unwrap_err().code,
        "42883"
    );
}
