//! Date, timestamp and interval literals as PostgreSQL reads them: times without seconds,
//! month names, AM/PM, zones; intervals' clock times, `ago`, `@`, ISO 8601, SQL's
//! year-month, fractions spilling down, and the text iolab writes for an interval read
//! back; each case's output as PostgreSQL 18 printed it, and its errors.

use iolab_tests::{rows, sqlstate, TestServer};
use tokio_postgres::Client;

/// Each `(expression, value)`: `SELECT expression` gives the value.
async fn check_values(c: &Client, cases: &[(&str, &str)]) {
    for (expr, want) in cases {
        let got = rows(c, &format!("SELECT {expr}")).await;
        assert_eq!(got[0][0].as_deref(), Some(*want), "{expr}");
    }
}

/// Each `(expression, SQLSTATE, message)`: `SELECT expression` fails so.
async fn check_errors(c: &Client, cases: &[(&str, &str, &str)]) {
    for (expr, code, message) in cases {
        let err = c.simple_query(&format!("SELECT {expr}")).await.unwrap_err();
        assert_eq!(sqlstate(&err), *code, "{expr}");
        assert_eq!(err.as_db_error().unwrap().message(), *message);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn interval_literals_read_as_postgresql_reads_them() {
    let server = TestServer::start("datetime-literals");
    let c = server.client().await;
    let cases = [
        ("interval '1 day 02:00'", "1 day 02:00:00"),
        ("interval '01:30'", "01:30:00"),
        ("interval '25:04:05'", "25:04:05"),
        ("interval '1.5 months'", "1 mon 15 days"),
        ("interval '1.5 weeks'", "10 days 12:00:00"),
        ("interval '2 weeks ago'", "-14 days"),
        ("interval '1 day -1 hour'", "1 day -01:00:00"),
        ("interval 'P1Y2M3DT4H5M6S'", "1 year 2 mons 3 days 04:05:06"),
        ("interval '1-2'", "1 year 2 mons"),
        ("interval '@ 3 mins'", "00:03:00"),
        ("interval '1:02:03.5 ago'", "-01:02:03.5"),
        // What iolab writes for an interval reads back to the same interval.
        (
            "interval '1 year 2 mons 3 days 04:05:06.789'",
            "1 year 2 mons 3 days 04:05:06.789",
        ),
        ("'01:30'::interval", "01:30:00"),
        ("CAST('2 weeks ago' AS interval)", "-14 days"),
        (
            "timestamp '2024-01-01 00:00' + interval '1 day 02:30'",
            "2024-01-02 02:30:00",
        ),
    ];
    check_values(&c, &cases).await;
    check_errors(
        &c,
        &[
            (
                "interval 'xyz'",
                "22007",
                "invalid input syntax for type interval: \"xyz\"",
            ),
            (
                "interval '1:60'",
                "22015",
                "interval field value out of range: \"1:60\"",
            ),
        ],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn date_and_timestamp_literals_read_as_postgresql_reads_them() {
    let server = TestServer::start("datetime-literals-ts");
    let c = server.client().await;
    let cases = [
        ("timestamp '2024-01-01 00:00'", "2024-01-01 00:00:00"),
        ("timestamp '2024-03-05 4:05 PM'", "2024-03-05 16:05:00"),
        ("timestamp '2024-01-01 10:30:00+05'", "2024-01-01 10:30:00"),
        ("date 'Jan 5 2024'", "2024-01-05"),
        ("date '2024-01-05 10:30'", "2024-01-05"),
        (
            "'2024-01-01 10:30+02'::timestamptz",
            "2024-01-01 08:30:00+00",
        ),
        ("CAST('2024-01-01' AS date) + 1", "2024-01-02"),
        ("timestamp '01/02/2024'", "2024-01-02 00:00:00"),
        ("date 'today' = current_date", "t"),
    ];
    check_values(&c, &cases).await;
    // What depends on the session is read with its settings, in a PREPARE's statement too.
    c.batch_execute(
        "SET datestyle = 'ISO, DMY'; SET timezone = -3; PREPARE p AS SELECT date '01/02/2024'",
    )
    .await
    .unwrap();
    check_values(
        &c,
        &[
            ("date '01/02/2024'", "2024-02-01"),
            ("timestamptz '2024-01-01 10:00'", "2024-01-01 10:00:00-03"),
        ],
    )
    .await;
    assert_eq!(
        rows(&c, "EXECUTE p").await[0][0].as_deref(),
        Some("2024-02-01")
    );
    check_errors(
        &c,
        &[
            (
                "date '2024-02-30'",
                "22008",
                "date/time field value out of range: \"2024-02-30\"",
            ),
            (
                "timestamp 'garbage'",
                "22007",
                "invalid input syntax for type timestamp: \"garbage\"",
            ),
        ],
    )
    .await;
}
