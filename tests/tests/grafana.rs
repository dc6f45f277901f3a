//! Grafana's PostgreSQL data source against iolab: the queries it sends, with its macros
//! expanded as its backend expands them (pkg/tsdb/grafana-postgresql-datasource/macros.go),
//! over the extended protocol with binary results (as pgx reads them) and the simple
//! protocol (as panels are run):
//!
//! - the connection test (`-- ping`), the version query, the TimescaleDB probe;
//! - the visual query builder's introspection (schemas, tables, columns with PostgreSQL's
//!   type names and `udt_name`), with `$1`/`$2` parameters;
//! - seven time-series panels over `pg_stat_io_history` / `pg_stat_aio_history` with
//!   `$__timeFilter`, `$__timeGroupAlias`, `$__time`, `$__unixEpochFilter`,
//!   `$__timeFrom()`/`$__timeTo()`, checked for their column types and values: every
//!   history row's rates are its deltas over its interval, and the history's reads over a
//!   window add up to the change of `pg_stat_io`'s reads over it.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use iolab_tests::{rows, TestServer};
use tokio_postgres::types::{FromSql, Type};
use tokio_postgres::{Client, Row};

/// A result value as pgx would decode it from the binary format.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
    /// Microseconds since 1970-01-01 UTC.
    Timestamptz(i64),
    /// The same, of a `timestamp without time zone`.
    Timestamp(i64),
}

impl Value {
    fn f64(&self) -> f64 {
        match self {
            Value::Int(i) => *i as f64,
            Value::Float(f) => *f,
            other => panic!("not a number: {other:?}"),
        }
    }
}

/// Microseconds between 1970-01-01 and PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_US: i64 = 946_684_800_000_000;

impl<'a> FromSql<'a> for Value {
    fn from_sql(
        ty: &Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(match *ty {
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)? as i64),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)? as i64),
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Float(f32::from_sql(ty, raw)? as f64),
            Type::FLOAT8 => Value::Float(f64::from_sql(ty, raw)?),
            Type::NUMERIC => Value::Float(numeric_to_f64(raw)?),
            Type::TIMESTAMP => Value::Timestamp(i64::from_be_bytes(raw.try_into()?) + PG_EPOCH_US),
            Type::TIMESTAMPTZ => {
                Value::Timestamptz(i64::from_be_bytes(raw.try_into()?) + PG_EPOCH_US)
            }
            _ => Value::Text(String::from_sql(ty, raw)?),
        })
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Value::Null)
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// PostgreSQL's binary numeric: ndigits, weight, sign, dscale, then base-10000 digits.
fn numeric_to_f64(raw: &[u8]) -> Result<f64, Box<dyn std::error::Error + Sync + Send>> {
    let word = |i: usize| i16::from_be_bytes([raw[2 * i], raw[2 * i + 1]]);
    let (ndigits, weight, sign) = (word(0) as usize, word(1) as i32, word(2) as u16);
    let mut v = 0.0;
    for i in 0..ndigits {
        v += word(4 + i) as f64 * 10_000f64.powi(weight - i as i32);
    }
    Ok(if sign == 0x4000 { -v } else { v })
}

/// Every column of every row, with the column types.
fn table(rows: &[Row]) -> (Vec<Type>, Vec<Vec<Value>>) {
    let types = rows
        .first()
        .map(|r| r.columns().iter().map(|c| c.type_().clone()).collect())
        .unwrap_or_default();
    let values = rows
        .iter()
        .map(|r| (0..r.len()).map(|i| r.get::<_, Value>(i)).collect())
        .collect();
    (types, values)
}

/// RFC 3339 in UTC, as Grafana formats the time range (whole seconds, `Z`).
fn rfc3339(unix_s: i64) -> String {
    iolab_tests::rfc3339(unix_s * 1_000_000)
}

/// The dashboard's time range.
struct Range {
    from_s: i64,
    to_s: i64,
}

/// Seconds of a Grafana interval literal: `'1m'` → 60.
fn interval_s(literal: &str) -> i64 {
    let l = literal.trim().trim_matches('\'');
    let (n, unit) = l.split_at(l.len() - 1);
    let n: i64 = n.parse().expect("interval");
    n * match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        other => panic!("unit {other}"),
    }
}

/// Expands Grafana's macros as its PostgreSQL backend does.
fn expand(sql: &str, range: &Range) -> String {
    let (from, to) = (rfc3339(range.from_s), rfc3339(range.to_s));
    let mut out = String::new();
    let mut rest = sql;
    while let Some(start) = rest.find("$__") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 3..];
        let name_len = after
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(after.len());
        let name = &after[..name_len];
        let open = &after[name_len..];
        assert!(open.starts_with('('), "macro {name} without arguments");
        let mut depth = 0;
        let close = open
            .char_indices()
            .find(|&(_, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                depth == 0
            })
            .map(|(i, _)| i)
            .expect("closing parenthesis");
        // top-level commas only (none of the arguments used here nests one)
        let args: Vec<&str> = open[1..close].split(',').map(str::trim).collect();
        let expansion = match name {
            "time" => format!("{} AS \"time\"", args[0]),
            "timeFilter" => format!("{} BETWEEN '{from}' AND '{to}'", args[0]),
            "timeFrom" => format!("'{from}'"),
            "timeTo" => format!("'{to}'"),
            "timeGroupAlias" => {
                let s = interval_s(args[1]);
                format!("floor(extract(epoch from {})/{s})*{s} AS \"time\"", args[0])
            }
            "unixEpochFilter" => format!(
                "{} >= {} AND {} <= {}",
                args[0], range.from_s, args[0], range.to_s
            ),
            other => panic!("macro {other}"),
        };
        out.push_str(&expansion);
        rest = &open[close + 1..];
    }
    out.push_str(rest);
    out
}

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

async fn scalar(client: &Client, sql: &str) -> Value {
    let rows = client
        .query(sql, &[])
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    assert_eq!(rows.len(), 1, "{sql}");
    rows[0].get(0)
}

const CLIENT_READS: &str =
    "SELECT sum(reads) FROM pg_stat_io WHERE backend_type = 'client backend'";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grafana_data_source_queries_work() {
    let server = TestServer::start_with(
        "grafana",
        &[
            "-c",
            "stats_history_interval=200ms",
            "-c",
            "shared_buffers=4MB",
            "-c",
            "track_io_timing=on",
            "-c",
            "io_method=worker",
        ],
    );
    let client = server.client().await;

    // Save & test: pgx's ping is a comment-only simple query
    let ping = client.simple_query("-- ping").await.expect("ping");
    assert!(ping
        .iter()
        .all(|m| !matches!(m, tokio_postgres::SimpleQueryMessage::Row(_))));
    // version detection (frontend), then the TimescaleDB probe
    let version = client
        .query(
            "SELECT current_setting('server_version_num')::int/100 as version",
            &[],
        )
        .await
        .unwrap();
    // PostgreSQL answers int4; iolab int8, as DataFusion types the literal 100 as bigint
    // (a known difference, README) — pgx and Grafana read either as a number.
    assert!([Type::INT4, Type::INT8].contains(version[0].columns()[0].type_()));
    assert_eq!(version[0].get::<_, Value>(0), Value::Int(1800));
    let timescale = client
        .query(
            "SELECT extversion FROM pg_extension WHERE extname = 'timescaledb'",
            &[],
        )
        .await
        .unwrap();
    assert!(timescale.is_empty());

    // the schema API (extended protocol, parameters)
    let schemas = client
        .query(
            "SELECT schema_name FROM information_schema.schemata
		 WHERE schema_name NOT LIKE 'pg_%' AND schema_name != 'information_schema'
		 ORDER BY schema_name",
            &[],
        )
        .await
        .unwrap();
    let schemas: Vec<String> = schemas.iter().map(|r| r.get(0)).collect();
    assert!(schemas.contains(&"public".to_string()), "{schemas:?}");
    let tables = client
        .query(
            "SELECT table_name FROM information_schema.tables
		 WHERE table_schema = $1 AND table_type IN ('BASE TABLE', 'VIEW')
		 ORDER BY table_name",
            &[&"pg_catalog"],
        )
        .await
        .unwrap();
    let tables: Vec<String> = tables.iter().map(|r| r.get(0)).collect();
    for view in [
        "pg_stat_io_history",
        "pg_stat_aio_history",
        "pg_stat_aio",
        "pg_stat_activity",
    ] {
        assert!(
            tables.contains(&view.to_string()),
            "{view} not in {tables:?}"
        );
    }
    let columns = client
        .query(
            "SELECT column_name, data_type, udt_name, numeric_precision, numeric_scale
		 FROM information_schema.columns
		 WHERE table_schema = $1 AND table_name = $2
		 ORDER BY ordinal_position",
            &[&"pg_catalog", &"pg_stat_io_history"],
        )
        .await
        .unwrap();
    let described: Vec<(String, String, String)> = columns
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    let find = |name: &str| described.iter().find(|c| c.0 == name).cloned().unwrap();
    assert_eq!(
        find("time"),
        (
            "time".into(),
            "timestamp with time zone".into(),
            "timestamptz".into()
        )
    );
    assert_eq!(
        find("reads"),
        ("reads".into(), "bigint".into(), "int8".into())
    );
    assert_eq!(
        find("reads_per_s"),
        (
            "reads_per_s".into(),
            "double precision".into(),
            "float8".into()
        )
    );
    assert_eq!(
        find("backend_type"),
        ("backend_type".into(), "text".into(), "text".into())
    );
    // the frontend's builder (simple protocol)
    let of_schema = rows(
        &client,
        "SELECT quote_ident(table_name) AS \"table\"
      FROM information_schema.tables
      WHERE quote_ident(table_schema) = 'pg_catalog'
      ORDER BY 1",
    )
    .await;
    assert!(of_schema.contains(&vec![Some("pg_stat_aio_history".into())]));
    let builder_columns = rows(
        &client,
        "SELECT quote_ident(column_name) AS \"column\", data_type AS \"type\"
    FROM information_schema.columns
    WHERE
      CASE WHEN array_length(parse_ident('pg_catalog.pg_stat_aio_history'),1) = 2
        THEN quote_ident(table_schema) = (parse_ident('pg_catalog.pg_stat_aio_history'))[1]
          AND quote_ident(table_name) = (parse_ident('pg_catalog.pg_stat_aio_history'))[2]
        ELSE quote_ident(table_name) = 'pg_catalog.pg_stat_aio_history'
      END",
    )
    .await;
    assert!(builder_columns.contains(&vec![Some("in_flight".into()), Some("bigint".into())]));
    assert!(builder_columns.contains(&vec![
        // quote_ident quotes the keyword, as PostgreSQL does
        Some("\"time\"".into()),
        Some("timestamp with time zone".into())
    ]));

    // some I/O to chart: a table scanned cold a few times
    client
        .batch_execute(
            "CREATE TABLE t(a int, filler text);
             INSERT INTO t SELECT i, md5(i::text) FROM generate_series(1, 100000) AS s(i);
             CREATE TABLE small(a int);
             INSERT INTO small SELECT i FROM generate_series(1, 1000) AS s(i);
             CHECKPOINT",
        )
        .await
        .unwrap();
    // let the sampler take in the load's I/O before the window opens
    tokio::time::sleep(Duration::from_millis(1500)).await;
    // the window opens at a whole second, as Grafana's time range does (the load's I/O
    // was sampled more than a second earlier)
    let window_start_s = now_s();
    let reads_before = match scalar(&client, &format!("SELECT ({CLIENT_READS})::bigint")).await {
        Value::Int(v) => v,
        other => panic!("{other:?}"),
    };
    let window_start = format!("'{}'", rfc3339(window_start_s));
    tokio::time::sleep(Duration::from_millis(600)).await;
    for _ in 0..3 {
        client
            .query("SELECT * FROM pg_buffercache_evict_all()", &[])
            .await
            .unwrap();
        let n: i64 = client
            .query_one("SELECT count(*) FROM t", &[])
            .await
            .unwrap()
            .get(0);
        assert_eq!(n, 100_000);
        // and a small table twice: read, then hits
        client
            .batch_execute("SELECT count(*) FROM small; SELECT count(*) FROM small")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let reads_after = match scalar(&client, &format!("SELECT ({CLIENT_READS})::bigint")).await {
        Value::Int(v) => v,
        other => panic!("{other:?}"),
    };
    let scanned = reads_after - reads_before;
    assert!(scanned > 0);

    // the history's reads in the window add up to pg_stat_io's (once sampled)
    let history_reads = format!(
        "SELECT coalesce(sum(reads), 0)::bigint FROM pg_stat_io_history \
         WHERE backend_type = 'client backend' AND time > {window_start}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let Value::Int(sampled) = scalar(&client, &history_reads).await else {
            panic!()
        };
        assert!(
            sampled <= scanned,
            "history {sampled} > pg_stat_io {scanned}"
        );
        if sampled == scanned {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "history has {sampled} of {scanned} reads"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // every row's rates are its deltas over its interval
    let history = client
        .query(
            &format!(
                "SELECT reads, interval_s, reads_per_s, read_bytes, read_mb_per_s, hits, hits_per_s, \
                        read_time, read_time_per_s
                 FROM pg_stat_io_history WHERE time > {window_start}"
            ),
            &[],
        )
        .await
        .unwrap();
    let (types, values) = table(&history);
    assert_eq!(types[..3], [Type::INT8, Type::FLOAT8, Type::FLOAT8]);
    assert!(!values.is_empty());
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0);
    for v in &values {
        let secs = v[1].f64();
        assert!(secs > 0.0, "{v:?}");
        assert!(close(v[2].f64(), v[0].f64() / secs), "reads/s: {v:?}");
        assert!(close(v[4].f64(), v[3].f64() / 1e6 / secs), "MB/s: {v:?}");
        assert!(close(v[6].f64(), v[5].f64() / secs), "hits/s: {v:?}");
        assert!(close(v[8].f64(), v[7].f64() / secs), "read ms/s: {v:?}");
    }

    let range = Range {
        from_s: window_start_s - 60,
        to_s: now_s() + 60,
    };
    let panels = [
        // 1. I/O rate by backend type and context, per minute bucket
        "SELECT $__timeGroupAlias(time, '1m'), backend_type || ' / ' || context AS metric,
                sum(reads) / 60.0 AS reads_per_s
           FROM pg_stat_io_history WHERE $__timeFilter(time) GROUP BY 1, 2 ORDER BY 1",
        // 2. MB/s, raw samples
        "SELECT $__time(time), backend_type || ' / ' || context AS metric, read_mb_per_s
           FROM pg_stat_io_history WHERE $__timeFilter(time) ORDER BY 1",
        // 3. read latency percentiles of the client backends' bulk reads
        "SELECT $__time(time), read_p50, read_p99, read_p999
           FROM pg_stat_io_history
          WHERE $__timeFilter(time) AND backend_type = 'client backend' AND context = 'bulkread'
          ORDER BY 1",
        // 4. wait vs read time (ms per second)
        "SELECT $__timeGroupAlias(time, '5s'), sum(wait_time) / 5 AS wait_ms_per_s,
                sum(read_time) / 5 AS read_ms_per_s
           FROM pg_stat_io_history WHERE $__timeFilter(time) GROUP BY 1 ORDER BY 1",
        // 5. I/Os in flight
        "SELECT $__time(time), max(in_flight) AS in_flight
           FROM pg_stat_aio_history WHERE $__timeFilter(time) GROUP BY 1 ORDER BY 1",
        // 6. AIO events by epoch filter
        "SELECT $__timeGroupAlias(time, '1m'), sum(ios) AS ios, sum(queue_full) AS queue_full,
                sum(submissions) AS submissions
           FROM pg_stat_aio_history
          WHERE $__unixEpochFilter(extract(epoch from time)) AND backend_type = 'client backend'
          GROUP BY 1 ORDER BY 1",
        // 7. hits per second between $__timeFrom() and $__timeTo(), seconds buckets
        "SELECT to_timestamp(floor(extract(epoch from time))) AS \"time\", sum(hits_per_s) AS hits
           FROM pg_stat_io_history
          WHERE time >= $__timeFrom() AND time <= $__timeTo()
          GROUP BY 1 ORDER BY 1 /*application='grafana',source='bi'*/",
    ];
    let mut results = Vec::new();
    for panel in panels {
        let sql = expand(panel, &range);
        assert!(!sql.contains("$__"), "{sql}");
        let rows = client
            .query(&sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{sql}\n{e:?}"));
        assert!(!rows.is_empty(), "no rows: {sql}");
        // the same query over the simple protocol, as Grafana's panels run it
        let simple = iolab_tests::rows(&client, &sql).await;
        assert_eq!(simple.len(), rows.len(), "{sql}");
        results.push(table(&rows));
    }
    let is_time_number = |t: &Type| *t == Type::FLOAT8 || *t == Type::NUMERIC;

    let (t, v) = &results[0];
    assert!(
        is_time_number(&t[0]) && t[1] == Type::TEXT && is_time_number(&t[2]),
        "{t:?}"
    );
    let bucketed: f64 = v
        .iter()
        .filter(|r| matches!(&r[1], Value::Text(m) if m.starts_with("client backend")))
        .map(|r| r[2].f64() * 60.0)
        .sum();
    assert!(
        (bucketed - scanned as f64).abs() < 1e-6 * scanned as f64,
        "{bucketed} vs {scanned}"
    );
    assert!(
        v.iter().all(|r| r[0].f64() % 60.0 == 0.0),
        "minute buckets: {v:?}"
    );

    let (t, v) = &results[1];
    assert_eq!(t[..], [Type::TIMESTAMPTZ, Type::TEXT, Type::FLOAT8]);
    assert!(v.iter().any(|r| r[2].f64() > 0.0));

    let (t, v) = &results[2];
    assert_eq!(
        t[..],
        [Type::TIMESTAMPTZ, Type::FLOAT8, Type::FLOAT8, Type::FLOAT8]
    );
    for r in v.iter().filter(|r| r[1] != Value::Null) {
        assert!(
            r[1].f64() > 0.0 && r[1].f64() <= r[2].f64() && r[2].f64() <= r[3].f64(),
            "{r:?}"
        );
    }

    let (t, v) = &results[3];
    assert!(
        is_time_number(&t[0]) && t[1] == Type::FLOAT8 && t[2] == Type::FLOAT8,
        "{t:?}"
    );
    assert!(
        v.iter().any(|r| r[2].f64() > 0.0),
        "track_io_timing is on: {v:?}"
    );

    let (t, _) = &results[4];
    assert_eq!(t[..], [Type::TIMESTAMPTZ, Type::INT8]);

    // sum() of bigint counters is numeric, as in PostgreSQL.
    let (t, v) = &results[5];
    assert!(t[1..].iter().all(|t| *t == Type::NUMERIC), "{t:?}");
    let ios: f64 = v.iter().map(|r| r[1].f64()).sum();
    assert_eq!(
        ios as i64, scanned,
        "pg_stat_aio_history's I/Os are pg_stat_io's reads"
    );

    // to_timestamp gives timestamptz in PostgreSQL, timestamp in iolab (DataFusion's
    // function; a known difference): Grafana reads both as the time column.
    let (t, v) = &results[6];
    assert!(
        [Type::TIMESTAMPTZ, Type::TIMESTAMP].contains(&t[0]) && t[1] == Type::FLOAT8,
        "{t:?}"
    );
    let whole_seconds = |v: &Value| matches!(v, Value::Timestamptz(us) | Value::Timestamp(us) if us % 1_000_000 == 0);
    assert!(v.iter().all(|r| whole_seconds(&r[0])), "{v:?}");

    // the shipped dashboard: every panel's query runs and returns rows, with a time column
    let dashboard: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/grafana/iolab-io.json"
        ))
        .expect("docs/grafana/iolab-io.json"),
    )
    .expect("the dashboard is JSON");
    let panels = dashboard["panels"].as_array().expect("panels");
    assert!(panels.len() >= 6);
    for panel in panels {
        let raw = panel["targets"][0]["rawSql"].as_str().expect("rawSql");
        assert_eq!(panel["datasource"]["uid"], "iolab");
        // Grafana interpolates its global variables before expanding macros
        let raw = raw
            .replace("$__interval_ms", "1000")
            .replace("$__interval", "1s");
        let sql = expand(&raw, &range);
        let rows = client
            .query(&sql, &[])
            .await
            .unwrap_or_else(|e| panic!("{}: {sql}\n{e:?}", panel["title"]));
        let time = rows.first().map(|r| {
            (
                r.columns()[0].name().to_string(),
                r.columns()[0].type_().clone(),
            )
        });
        let Some((name, ty)) = time else {
            // queue-full events need an overflowing worker queue; the others must have rows
            assert_eq!(panel["title"], "Worker queue full", "no rows: {sql}");
            continue;
        };
        assert_eq!(name, "time", "{sql}");
        assert!(
            is_time_number(&ty) || ty == Type::TIMESTAMPTZ || ty == Type::TIMESTAMP,
            "{sql}"
        );
    }
}

#[test]
fn macros_expand_as_grafanas() {
    let range = Range {
        from_s: 1523556000,
        to_s: 1523556300,
    };
    assert_eq!(
        expand(
            "SELECT $__timeGroupAlias(time, '1m'), v FROM t WHERE $__timeFilter(time)",
            &range
        ),
        "SELECT floor(extract(epoch from time)/60)*60 AS \"time\", v FROM t \
         WHERE time BETWEEN '2018-04-12T18:00:00Z' AND '2018-04-12T18:05:00Z'"
    );
    assert_eq!(
        expand("$__unixEpochFilter(t) $__timeFrom() $__time(c)", &range),
        "t >= 1523556000 AND t <= 1523556300 '2018-04-12T18:00:00Z' c AS \"time\""
    );
}
