//! `percentile_disc(fraction) WITHIN GROUP (ORDER BY x)` against a real iolab: values of
//! the input's type (integers, text, timestamps), either sort direction, per group, NULLs
//! left out, an empty group's NULL, an array of fractions, and PostgreSQL's errors for a
//! fraction outside [0, 1] and for OVER.
//! Every expected value is PostgreSQL 18's for the same statements.

use iolab_tests::tokio_postgres::types::Type;
use iolab_tests::{rows, sqlstate, TestServer};

fn text(values: &[&str]) -> Vec<Option<String>> {
    values.iter().map(|v| Some(v.to_string())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn percentile_disc_picks_a_value_of_the_group() {
    let server = TestServer::start("percentile-disc");
    let c = server.client().await;
    c.batch_execute(
        "CREATE TABLE pd AS SELECT i AS x, i % 3 AS g,
                CASE WHEN i % 10 = 0 THEN NULL ELSE md5(i::text) END AS t,
                timestamp '2024-01-01' + i * interval '1 minute' AS ts
           FROM generate_series(1, 1000) i",
    )
    .await
    .unwrap();

    let fractions = "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x),
                            percentile_disc(0.999) WITHIN GROUP (ORDER BY x),
                            percentile_disc(0) WITHIN GROUP (ORDER BY x),
                            percentile_disc(1) WITHIN GROUP (ORDER BY x),
                            percentile_disc(0.1) WITHIN GROUP (ORDER BY x DESC)
                       FROM pd";
    assert_eq!(
        rows(&c, fractions).await,
        [text(&["500", "999", "1", "1000", "901"])]
    );
    let statement = c.prepare(fractions).await.unwrap();
    assert_eq!(statement.columns()[0].type_(), &Type::INT4);

    assert_eq!(
        rows(
            &c,
            "SELECT g, percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM pd GROUP BY g ORDER BY g"
        )
        .await,
        [text(&["0", "501"]), text(&["1", "499"]), text(&["2", "500"])]
    );
    assert_eq!(
        rows(
            &c,
            "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY t),
                    percentile_disc(0.9) WITHIN GROUP (ORDER BY ts) FROM pd"
        )
        .await,
        [text(&[
            "7f5d04d189dfb634e6a85bb9d9adf21e",
            "2024-01-01 15:00:00"
        ])]
    );
    assert_eq!(
        rows(
            &c,
            "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM pd WHERE x < 0"
        )
        .await,
        [[None]]
    );

    // An array of fractions: the array of their values, from one sort.
    let statement = c
        .prepare(
            "SELECT percentile_disc(ARRAY[0.5, 0.9, NULL, 0]) WITHIN GROUP (ORDER BY x) FROM pd",
        )
        .await
        .unwrap();
    assert_eq!(statement.columns()[0].type_(), &Type::INT4_ARRAY);
    let row = c.query_one(&statement, &[]).await.unwrap();
    assert_eq!(
        row.get::<_, Vec<Option<i32>>>(0),
        [Some(500), Some(900), None, Some(1)]
    );
    assert_eq!(
        rows(
            &c,
            "SELECT percentile_disc(ARRAY[0.5]) WITHIN GROUP (ORDER BY x) FROM pd WHERE x < 0"
        )
        .await,
        [[None]]
    );

    for (sql, code, message) in [
        (
            "SELECT percentile_disc(1.5) WITHIN GROUP (ORDER BY x) FROM pd",
            "22003",
            "percentile value 1.5 is not between 0 and 1",
        ),
        (
            "SELECT percentile_disc(ARRAY[0.5, 2]) WITHIN GROUP (ORDER BY x) FROM pd",
            "22003",
            "percentile value 2 is not between 0 and 1",
        ),
        (
            "SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY x) OVER () FROM pd",
            "0A000",
            "OVER is not supported for ordered-set aggregate percentile_disc",
        ),
    ] {
        let e = c.simple_query(sql).await.unwrap_err();
        assert_eq!(sqlstate(&e), code, "{sql}");
        assert_eq!(e.as_db_error().unwrap().message(), message, "{sql}");
    }
}
