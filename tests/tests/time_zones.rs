//! Date/time values in the session's `TimeZone` (a zone of the tz database, with daylight
//! saving) and `DateStyle`: casts, `extract`, `date_trunc`, interval arithmetic on the wall
//! clock, `AT TIME ZONE`, `date_add`, text casts read and written as PostgreSQL does; each
//! value as PostgreSQL 18 printed it.

use iolab_tests::{error, rows, TestServer};
use tokio_postgres::Client;

async fn value(c: &Client, sql: &str) -> Option<String> {
    rows(c, sql).await[0][0].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn values_follow_a_zone_with_daylight_saving() {
    let server = TestServer::start("time-zones");
    let c = server.client().await;
    let default_zone = value(&c, "SHOW timezone").await;
    c.batch_execute("SET timezone = 'europe/berlin'")
        .await
        .unwrap();
    assert_eq!(
        value(&c, "SHOW timezone").await.as_deref(),
        Some("Europe/Berlin")
    );
    let cases = [
        (
            "timestamptz '2024-07-01 03:00+00'",
            "2024-07-01 05:00:00+02",
        ),
        ("(timestamptz '2024-07-01 03:00+00')::date", "2024-07-01"),
        ("(timestamptz '2024-06-30 22:30+00')::date", "2024-07-01"),
        (
            "(timestamptz '2024-07-01 03:00+00')::timestamp",
            "2024-07-01 05:00:00",
        ),
        ("(timestamptz '2024-07-01 03:00+00')::time", "05:00:00"),
        ("extract(hour from timestamptz '2024-07-01 03:00+00')", "5"),
        ("date_part('day', timestamptz '2024-06-30 22:30+00')", "1"),
        (
            "extract(timezone from timestamptz '2024-07-01 03:00+00')",
            "7200",
        ),
        (
            "extract(timezone_hour from timestamptz '2024-01-01 03:00+00')",
            "1",
        ),
        (
            "date_trunc('day', timestamptz '2024-03-31 12:00+00')",
            "2024-03-31 00:00:00+01",
        ),
        (
            "date_trunc('month', timestamptz '2024-06-30 22:30+00')",
            "2024-07-01 00:00:00+02",
        ),
        (
            "date_trunc('day', timestamptz '2024-03-31 12:00+00', 'UTC')",
            "2024-03-31 01:00:00+01",
        ),
        (
            "timestamp '2024-03-31 02:30'::timestamptz",
            "2024-03-31 03:30:00+02",
        ),
        (
            "timestamp '2024-10-27 02:30'::timestamptz",
            "2024-10-27 02:30:00+01",
        ),
        ("date '2024-07-01'::timestamptz", "2024-07-01 00:00:00+02"),
        ("'2024-07-01 12:00'::timestamptz", "2024-07-01 12:00:00+02"),
        (
            "timestamptz '2024-03-30 12:00+01' + interval '1 day'",
            "2024-03-31 12:00:00+02",
        ),
        (
            "timestamptz '2024-03-30 12:00+01' + interval '24 hours'",
            "2024-03-31 13:00:00+02",
        ),
        (
            "interval '1 day' + timestamptz '2024-03-30 12:00+01'",
            "2024-03-31 12:00:00+02",
        ),
        (
            "timestamptz '2024-04-01 12:00+02' - interval '2 days'",
            "2024-03-30 12:00:00+01",
        ),
        (
            "timestamptz '2024-01-31 12:00+01' + interval '1 month'",
            "2024-02-29 12:00:00+01",
        ),
        (
            "timestamptz '2024-07-01 03:00+00' AT TIME ZONE 'America/New_York'",
            "2024-06-30 23:00:00",
        ),
        (
            "timestamp '2024-07-01 03:00' AT TIME ZONE 'America/New_York'",
            "2024-07-01 09:00:00+02",
        ),
        (
            "timestamptz '2024-07-01 03:00+00' AT TIME ZONE 'PST'",
            "2024-06-30 19:00:00",
        ),
        (
            "timestamptz '2024-07-01 03:00+00' AT TIME ZONE '-5'",
            "2024-07-01 08:00:00",
        ),
        (
            "timestamptz '2024-07-01 03:00+00' AT TIME ZONE 'utc+3'",
            "2024-07-01 00:00:00",
        ),
        (
            "timestamptz '2024-07-01 03:00+00' AT TIME ZONE interval '-03:00'",
            "2024-07-01 00:00:00",
        ),
        (
            "timestamptz '2024-07-01 03:00+00' AT LOCAL",
            "2024-07-01 05:00:00",
        ),
        (
            "timezone('Asia/Kolkata', timestamptz '2024-07-01 03:00+00')",
            "2024-07-01 08:30:00",
        ),
        (
            "date_add(timestamptz '2024-03-30 12:00+01', interval '1 day')",
            "2024-03-31 12:00:00+02",
        ),
        (
            "date_add(timestamptz '2024-03-30 12:00+01', interval '1 day', 'America/New_York')",
            "2024-03-31 13:00:00+02",
        ),
        (
            "date_subtract(timestamptz '2024-03-31 12:00+02', interval '1 day', 'Europe/Berlin')",
            "2024-03-30 12:00:00+01",
        ),
        ("interval '1 day 02:00'::text", "1 day 02:00:00"),
        (
            "(timestamptz '2024-07-01 03:00+00')::text",
            "2024-07-01 05:00:00+02",
        ),
        (
            "(timestamp '2024-07-01 03:00')::text",
            "2024-07-01 03:00:00",
        ),
        ("(date '2024-07-01')::text", "2024-07-01"),
        ("timestamptz 'infinity'::timestamp", "infinity"),
        (
            "(timestamptz 'infinity' + interval '1 day')::text",
            "infinity",
        ),
        (
            "age(timestamptz '2024-04-01 00:00+02', timestamptz '2024-03-01 00:00+01')",
            "1 mon",
        ),
        (
            "age(timestamp '2024-03-31 10:00', timestamp '2024-01-31 12:00')",
            "1 mon 30 days 22:00:00",
        ),
        (
            "age(timestamp '2024-01-31', timestamp '2024-03-01')",
            "-1 mons -1 days",
        ),
        ("age(date '2024-03-01', date '2023-02-28')", "1 year 1 day"),
        ("age(current_date::timestamp)", "00:00:00"),
        (
            "date '2024-07-01' + interval '1 hour'",
            "2024-07-01 01:00:00",
        ),
        (
            "interval '2 days' + date '2024-07-01'",
            "2024-07-03 00:00:00",
        ),
        (
            "make_interval(1, 2, 3, 4, 5, 6, 7.5)",
            "1 year 2 mons 25 days 05:06:07.5",
        ),
        (
            "make_interval(weeks => 2, hours => -3)",
            "14 days -03:00:00",
        ),
        (
            "make_timestamp(-44, 3, 15, 12, 0, 0)",
            "0044-03-15 12:00:00 BC",
        ),
        (
            "make_timestamptz(2024, 7, 1, 12, 0, 0)",
            "2024-07-01 12:00:00+02",
        ),
        (
            "make_timestamptz(2024, 7, 1, 12, 0, 0, 'America/New_York')",
            "2024-07-01 18:00:00+02",
        ),
        ("justify_hours(interval '-27 hours')", "-1 days -03:00:00"),
        ("justify_days(interval '1 mon -35 days')", "-5 days"),
        (
            "justify_interval(interval '-1 mon 1 hour')",
            "-29 days -23:00:00",
        ),
        ("isfinite(date 'infinity')", "f"),
        ("localtimestamp - now()::timestamp", "00:00:00"),
        (
            "to_timestamp('01 Jul 2024 03:04:05 PM', 'DD Mon YYYY HH:MI:SS AM')",
            "2024-07-01 15:04:05+02",
        ),
        (
            "to_timestamp('20240701123005', 'YYYYMMDDHH24MISS')",
            "2024-07-01 12:30:05+02",
        ),
        (
            "to_timestamp('2024-07-01 12:30 -03:30', 'YYYY-MM-DD HH24:MI TZH:TZM')",
            "2024-07-01 18:00:00+02",
        ),
        (
            "to_date('1st of July 2024', 'DDth \"of\" Month YYYY')",
            "2024-07-01",
        ),
        ("to_date('240701', 'YYMMDD')", "2024-07-01"),
        ("to_timestamp(1700000000.5)", "2023-11-14 23:13:20.5+01"),
        (
            "extract(epoch from timestamptz '2024-07-01 03:00+00')",
            "1719802800.000000",
        ),
        ("extract(epoch from date '2024-07-01')", "1719792000"),
        (
            "extract(second from timestamp '2024-07-01 03:04:05.25')",
            "5.250000",
        ),
        (
            "date_part('second', timestamp '2024-07-01 03:04:05.25')",
            "5.25",
        ),
        ("pg_typeof(extract(hour from now()))", "numeric"),
        ("3 * interval '1 minute'", "00:03:00"),
        ("interval '1 mon 1 day' * 0.3", "9 days 07:12:00"),
        ("interval '1 day' / 7", "03:25:42.857143"),
    ];
    for (expr, want) in cases {
        assert_eq!(
            value(&c, &format!("SELECT {expr}")).await.as_deref(),
            Some(want),
            "{expr}"
        );
    }
    // PostgreSQL's other spelling of SET TIME ZONE DEFAULT.
    c.batch_execute("SET TIME ZONE LOCAL").await.unwrap();
    assert_eq!(value(&c, "SHOW timezone").await, default_zone);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_table_of_instants_is_read_in_the_session_zone() {
    let server = TestServer::start("time-zones-table");
    let c = server.client().await;
    c.batch_execute(
        "SET timezone = 'Europe/Berlin';
         CREATE TABLE ev(id int, t timestamptz);
         INSERT INTO ev VALUES (1, '2024-06-30 21:30+00'), (2, '2024-06-30 22:30+00'),
           (3, '2024-07-01 12:00'), (4, '2024-07-01 23:59:59'), (5, '2024-03-30 12:00+00');",
    )
    .await
    .unwrap();
    let by_day = "SELECT t::date AS day, count(*) FROM ev GROUP BY 1 ORDER BY 1";
    let since = "SELECT count(*) FROM ev WHERE t >= '2024-07-01'";
    let day = |r: Vec<Vec<Option<String>>>| -> Vec<String> {
        r.into_iter()
            .map(|row| {
                format!(
                    "{} {}",
                    row[0].as_deref().unwrap(),
                    row[1].as_deref().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(
        day(rows(&c, by_day).await),
        ["2024-03-30 1", "2024-06-30 1", "2024-07-01 3"]
    );
    assert_eq!(value(&c, since).await.as_deref(), Some("3"));
    let hours = rows(
        &c,
        "SELECT id, extract(hour from t), date_trunc('day', t) FROM ev ORDER BY id",
    )
    .await;
    let hours: Vec<String> = hours
        .into_iter()
        .map(|r| {
            format!(
                "{} {} {}",
                r[0].as_deref().unwrap(),
                r[1].as_deref().unwrap(),
                r[2].as_deref().unwrap()
            )
        })
        .collect();
    assert_eq!(
        hours,
        [
            "1 23 2024-06-30 00:00:00+02",
            "2 0 2024-07-01 00:00:00+02",
            "3 12 2024-07-01 00:00:00+02",
            "4 23 2024-07-01 00:00:00+02",
            "5 13 2024-03-30 00:00:00+01",
        ]
    );
    // A day across the change to summer time is 23 hours long.
    assert_eq!(
        value(
            &c,
            "SELECT id FROM ev WHERE t + interval '1 day' = timestamptz '2024-03-31 13:00+02'"
        )
        .await
        .as_deref(),
        Some("5")
    );
    // A series of days steps on the wall clock across the change to summer time.
    let days = rows(
        &c,
        "SELECT * FROM generate_series(timestamptz '2024-03-30', timestamptz '2024-04-01', '1 day')",
    )
    .await;
    let days: Vec<&str> = days.iter().map(|r| r[0].as_deref().unwrap()).collect();
    let want = [
        "2024-03-30 00:00:00+01",
        "2024-03-31 00:00:00+01",
        "2024-04-01 00:00:00+02",
    ];
    assert_eq!(days, want);
    // An untyped literal as a bound is read as the other bound's type, in the session's
    // zone.
    let days = rows(
        &c,
        "SELECT * FROM generate_series(timestamptz '2024-03-30', '2024-04-01', '1 day')",
    )
    .await;
    let days: Vec<&str> = days.iter().map(|r| r[0].as_deref().unwrap()).collect();
    assert_eq!(days, want);
    // So does a select list's.
    let days = rows(
        &c,
        "SELECT generate_series(timestamptz '2024-03-30', timestamptz '2024-04-01', interval '1 day')",
    )
    .await;
    let days: Vec<&str> = days.iter().map(|r| r[0].as_deref().unwrap()).collect();
    assert_eq!(days, want);
    // The same statements in another zone: nothing planned under Berlin is reused.
    c.batch_execute("SET timezone = 'UTC'").await.unwrap();
    assert_eq!(
        day(rows(&c, by_day).await),
        ["2024-03-30 1", "2024-06-30 2", "2024-07-01 2"]
    );
    assert_eq!(value(&c, since).await.as_deref(), Some("2"));
}

#[tokio::test(flavor = "multi_thread")]
async fn text_casts_read_as_postgresql_reads_them() {
    let server = TestServer::start("time-zones-text");
    let c = server.client().await;
    c.batch_execute("SET datestyle = 'ISO, DMY'").await.unwrap();
    let r = rows(
        &c,
        "SELECT d::date, d::timestamp, s::interval FROM (VALUES ('01/02/2024', '1 day 02:00')) v(d, s)",
    )
    .await;
    assert_eq!(
        r[0],
        [
            Some("2024-02-01".to_string()),
            Some("2024-02-01 00:00:00".to_string()),
            Some("1 day 02:00:00".to_string())
        ]
    );
    let r = rows(
        &c,
        "SELECT '1500-01-01'::timestamp, timestamp '2500-06-01 00:00', '4713-01-01 BC'::date",
    )
    .await;
    assert_eq!(
        r[0],
        [
            Some("1500-01-01 00:00:00".to_string()),
            Some("2500-06-01 00:00:00".to_string()),
            Some("4713-01-01 BC".to_string())
        ]
    );
    let cases = [
        (
            "SELECT d::date FROM (VALUES ('2024-02-30')) v(d)",
            "22008",
            "date/time field value out of range: \"2024-02-30\"",
        ),
        (
            "SELECT timestamptz '2024-07-01 03:00+00' AT TIME ZONE 'nowhere'",
            "22023",
            "time zone \"nowhere\" not recognized",
        ),
        (
            "SELECT timestamptz '2024-07-01 03:00+00' AT TIME ZONE interval '1 day'",
            "22023",
            "interval time zone \"1 day\" must not include months or days",
        ),
        ("SELECT interval '1 day' / 0", "22012", "division by zero"),
        (
            "SELECT to_date('2024-13-01', 'YYYY-MM-DD')",
            "22008",
            "date/time field value out of range: \"2024-13-01\"",
        ),
        (
            "SELECT to_date('xx-02-01', 'YYYY-MM-DD')",
            "22007",
            "invalid value \"xx-0\" for \"YYYY\"",
        ),
        (
            "SELECT make_timestamp(2024, 2, 30, 0, 0, 0)",
            "22008",
            "date field value out of range: 2024-02-30",
        ),
        (
            "SET timezone = 'Mars/Olympus'",
            "22023",
            "invalid value for parameter \"TimeZone\": \"Mars/Olympus\"",
        ),
    ];
    for (sql, code, message) in cases {
        assert_eq!(
            error(&c, sql).await,
            (code.to_string(), message.to_string()),
            "{sql}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn now_is_the_transactions_start() {
    let server = TestServer::start("time-zones-now");
    let c = server.client().await;
    c.batch_execute("BEGIN").await.unwrap();
    let first = value(&c, "SELECT now()").await;
    c.batch_execute("SELECT pg_sleep(0.2)").await.unwrap();
    assert_eq!(value(&c, "SELECT now()").await, first);
    let both = rows(
        &c,
        "SELECT transaction_timestamp() = now(), statement_timestamp() - now() >= interval '0.2 s'",
    )
    .await;
    assert_eq!(both[0], [Some("t".to_string()), Some("t".to_string())]);
    c.batch_execute("COMMIT").await.unwrap();
    // A statement outside a block is its own transaction.
    assert_ne!(value(&c, "SELECT now()").await, first);

    // timeofday() reads the clock as text in the session's zone, with its abbreviation,
    // in PostgreSQL's layout.
    c.batch_execute("SET TimeZone = 'Europe/Berlin'")
        .await
        .unwrap();
    let read = rows(
        &c,
        "SELECT timeofday(), to_char(clock_timestamp(), 'Dy Mon DD'), \
                extract(year FROM clock_timestamp())::text",
    )
    .await;
    let [Some(text), Some(day), Some(year)] = &read[0][..] else {
        panic!("{read:?}")
    };
    let fields: Vec<&str> = text.split(' ').collect();
    assert_eq!(fields.len(), 6, "{text}");
    assert_eq!(fields[..3].join(" "), *day, "{text}");
    assert_eq!(fields[4], year, "{text}");
    assert!(fields[5] == "CET" || fields[5] == "CEST", "{text}");
    let (seconds, micros) = fields[3].split_once('.').expect("a fraction");
    assert!(seconds.len() == 8 && micros.len() == 6, "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn interval_columns_keep_intervals() {
    let mut server = TestServer::start("interval-columns");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE runs(id int, took interval);
         INSERT INTO runs VALUES (1, '1 day 02:00'), (2, '90 minutes'), (3, NULL),
           (4, '-1 mons 3 days -00:00:01.5');
         INSERT INTO runs SELECT i + 10, i * interval '1 minute' FROM generate_series(1, 2) i;
         UPDATE runs SET took = took + interval '1 hour' WHERE id = 2;",
    )
    .await
    .unwrap();
    // Values as PostgreSQL 18 printed them for the same statements.
    let want = [
        ["1", "1 day 02:00:00", "2 days 04:00:00", "93600.000000"],
        ["2", "02:30:00", "05:00:00", "9000.000000"],
        [
            "4",
            "-1 mons +3 days -00:00:01.5",
            "-2 mons +6 days -00:00:03",
            "-2332801.500000",
        ],
        ["11", "00:01:00", "00:02:00", "60.000000"],
        ["12", "00:02:00", "00:04:00", "120.000000"],
    ];
    let query = "SELECT id, took, took * 2, extract(epoch from took) FROM runs \
                 WHERE took IS NOT NULL ORDER BY id";
    let check = |got: Vec<Vec<Option<String>>>| {
        let got: Vec<Vec<String>> = got
            .into_iter()
            .map(|r| r.into_iter().map(Option::unwrap).collect())
            .collect();
        assert_eq!(got, want);
    };
    check(rows(&c, query).await);
    assert_eq!(
        rows(&c, "SELECT pg_typeof(took) FROM runs LIMIT 1").await[0][0].as_deref(),
        Some("interval")
    );
    // An index on one is refused (iolab has no B-tree order for intervals), not a crash.
    let (code, _) = error(&c, "CREATE INDEX ON runs(took)").await;
    assert_eq!(code, "0A000");
    // The values are the table's: they come back after a restart.
    drop(c);
    server.restart();
    let c = server.client().await;
    check(rows(&c, query).await);
}
