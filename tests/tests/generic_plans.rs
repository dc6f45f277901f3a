//! Generic plans of prepared statements (server/src/sql/prepared_plans.rs,
//! server/src/sql/generic_plan.rs): after five runs planned with their values, a
//! statement whose plan made with its parameters unknown costs no more takes that plan,
//! as PostgreSQL 18's plan cache does (the same counts and plans as PostgreSQL 18.4 for
//! the same statements); `pg_prepared_statements` counts the runs of each
//! kind, EXPLAIN EXECUTE shows `$n` where the generic plan has them, and every answer
//! is the one a plan made with the values gives.

use iolab_tests::{error, int, plan, rows, TestServer};
use tokio_postgres::Client;

async fn load(c: &Client) {
    c.batch_execute(
        "CREATE TABLE acc (aid int PRIMARY KEY, bid int, abalance int, name text);
         INSERT INTO acc SELECT i, i % 10, i * 2, 'n' || (i % 1000)
           FROM generate_series(1, 20000) AS g(i);
         CREATE INDEX ON acc (name);
         ANALYZE acc;",
    )
    .await
    .unwrap();
}

/// (generic_plans, custom_plans) of the SQL prepared statement `name`.
async fn plan_counts(c: &Client, name: &str) -> (i64, i64) {
    let r = rows(
        c,
        &format!(
            "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = '{name}'"
        ),
    )
    .await;
    let n = |i: usize| r[0][i].as_deref().unwrap().parse::<i64>().unwrap();
    (n(0), n(1))
}

async fn explain(c: &Client, sql: &str) -> Vec<String> {
    plan(c, &format!("EXPLAIN (COSTS OFF) {sql}")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_takes_its_generic_plan_after_five_custom_runs() {
    let server = TestServer::start("generic-plans");
    let c = server.client().await;
    load(&c).await;
    c.batch_execute("PREPARE q(int) AS SELECT abalance FROM acc WHERE aid = $1")
        .await
        .unwrap();
    for aid in 1..=5 {
        assert_eq!(int(&c, &format!("EXECUTE q({aid})")).await, aid * 2);
    }
    assert_eq!(plan_counts(&c, "q").await, (0, 5));
    // PostgreSQL 18.4 prints the same for the same table after five runs.
    assert_eq!(
        explain(&c, "EXECUTE q(7)").await,
        [
            "Index Scan using acc_pkey on acc",
            "  Index Cond: (aid = $1)"
        ]
    );
    // Each run's value is its own: present, absent, NULL.
    for aid in [19999, 20000, 3, 77] {
        assert_eq!(int(&c, &format!("EXECUTE q({aid})")).await, aid * 2);
    }
    assert!(rows(&c, "EXECUTE q(20001)").await.is_empty());
    assert!(rows(&c, "EXECUTE q(NULL)").await.is_empty());
    assert_eq!(plan_counts(&c, "q").await, (7, 5));

    // A parameter in the index condition and one in the filter; an ORDER BY … LIMIT the
    // index gives.
    c.batch_execute(
        "PREPARE r(int, int) AS SELECT aid FROM acc WHERE aid > $1 AND bid = $2
           ORDER BY aid LIMIT 3",
    )
    .await
    .unwrap();
    for (after, bid) in [
        (10, 3),
        (100, 7),
        (19990, 1),
        (5, 0),
        (0, 9),
        (20000, 1),
        (42, 4),
    ] {
        let sql =
            format!("SELECT aid FROM acc WHERE aid > {after} AND bid = {bid} ORDER BY aid LIMIT 3");
        assert_eq!(
            rows(&c, &format!("EXECUTE r({after}, {bid})")).await,
            rows(&c, &sql).await,
            "{sql}"
        );
    }
    assert_eq!(plan_counts(&c, "r").await, (2, 5));
    assert_eq!(
        explain(&c, "EXECUTE r(10, 3)").await,
        [
            "Limit",
            "  ->  Index Scan using acc_pkey on acc",
            "        Index Cond: (aid > $1)",
            "        Filter: (bid = $2)"
        ]
    );

    // A text key, and a bigint parameter against an integer column.
    c.batch_execute(
        "PREPARE t(text) AS SELECT count(*) FROM acc WHERE name = $1;
         PREPARE b(bigint) AS SELECT bid FROM acc WHERE aid = $1 + 1",
    )
    .await
    .unwrap();
    for i in 0..8 {
        assert_eq!(int(&c, &format!("EXECUTE t('n{i}')")).await, 20);
        assert_eq!(
            int(&c, &format!("EXECUTE b({})", i * 10)).await,
            (i * 10 + 1) % 10
        );
    }
    assert!(plan_counts(&c, "t").await.0 > 0);
    assert!(plan_counts(&c, "b").await.0 > 0);
    assert_eq!(int(&c, "EXECUTE t('absent')").await, 0);
    // A value the condition cannot compute is PostgreSQL's error.
    assert_eq!(
        error(&c, "EXECUTE b(9223372036854775807)").await,
        ("22003".to_string(), "bigint out of range".to_string())
    );

    // An UPDATE whose SET takes a parameter (pgbench's): its row query's generic plan.
    c.batch_execute(
        "PREPARE u(int, int) AS UPDATE acc SET abalance = abalance + $2 WHERE aid = $1",
    )
    .await
    .unwrap();
    for delta in 1..=7 {
        let changed = c
            .execute(&format!("EXECUTE u(4, {delta})"), &[])
            .await
            .unwrap();
        assert_eq!(changed, 1);
    }
    assert_eq!(
        int(&c, "SELECT abalance FROM acc WHERE aid = 4").await,
        8 + 28
    );
    assert_eq!(plan_counts(&c, "u").await, (2, 5));
    assert_eq!(
        explain(&c, "EXECUTE u(4, 1)").await,
        [
            "Update on acc",
            "  ->  Index Scan using acc_pkey on acc",
            "        Index Cond: (aid = $1)"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_choice_follows_cost_settings_and_ddl() {
    let server = TestServer::start("generic-plan-choice");
    let c = server.client().await;
    load(&c).await;
    // `aid < $1` without its value selects a third of the table (PostgreSQL's default
    // for an inequality), which costs more than the custom plans of small ranges: every
    // run keeps planning with its value, as in PostgreSQL 18.4 (8 custom, 0 generic).
    c.batch_execute("PREPARE r(int) AS SELECT count(*) FROM acc WHERE aid < $1")
        .await
        .unwrap();
    for _ in 0..8 {
        assert_eq!(int(&c, "EXECUTE r(10)").await, 9);
    }
    assert_eq!(plan_counts(&c, "r").await, (0, 8));

    // An aggregate over a Seq Scan whose filter takes the parameter: a parameter costs
    // nothing to evaluate (PostgreSQL's Param), so the generic plan costs what the custom
    // ones did and is taken; each run's groups are those of the statement with its value.
    c.batch_execute(
        "PREPARE agg(int) AS SELECT bid, count(*), sum(aid) FROM acc WHERE aid > $1
           GROUP BY bid ORDER BY bid",
    )
    .await
    .unwrap();
    for after in [100, 200, 300, 400, 500, 15000, 19990, 20000, 0] {
        let sql = format!(
            "SELECT bid, count(*), sum(aid) FROM acc WHERE aid > {after} GROUP BY bid ORDER BY bid"
        );
        assert_eq!(
            rows(&c, &format!("EXECUTE agg({after})")).await,
            rows(&c, &sql).await,
            "{sql}"
        );
    }
    assert_eq!(plan_counts(&c, "agg").await, (4, 5));
    let lines = explain(&c, "EXECUTE agg(1)").await;
    assert!(
        lines.iter().any(|l| l.ends_with("(aid > $1)")),
        "{lines:#?}"
    );

    // force_generic_plan takes it from the first run, force_custom_plan never.
    c.batch_execute(
        "SET plan_cache_mode = force_generic_plan;
         PREPARE g(int) AS SELECT abalance FROM acc WHERE aid = $1",
    )
    .await
    .unwrap();
    assert_eq!(int(&c, "EXECUTE g(4)").await, 8);
    assert_eq!(int(&c, "EXECUTE r(100)").await, 99);
    assert_eq!(plan_counts(&c, "g").await, (1, 0));
    assert_eq!(plan_counts(&c, "r").await, (1, 8));
    c.batch_execute("SET plan_cache_mode = force_custom_plan")
        .await
        .unwrap();
    assert_eq!(int(&c, "EXECUTE g(5)").await, 10);
    assert_eq!(plan_counts(&c, "g").await, (1, 1));
    c.batch_execute("RESET plan_cache_mode").await.unwrap();

    // The generic plan is planned again when a planner setting changes (iolab's:
    // PostgreSQL keeps the one it made), and after DDL.
    for _ in 0..6 {
        assert_eq!(int(&c, "EXECUTE g(6)").await, 12);
    }
    assert_eq!(
        explain(&c, "EXECUTE g(6)").await[0],
        "Index Scan using acc_pkey on acc"
    );
    c.batch_execute("SET enable_indexscan = off").await.unwrap();
    let lines = explain(&c, "EXECUTE g(6)").await;
    assert!(!lines[0].starts_with("Index Scan"), "{lines:#?}");
    assert_eq!(int(&c, "EXECUTE g(6)").await, 12);
    c.batch_execute("RESET enable_indexscan; ALTER TABLE acc DROP CONSTRAINT acc_pkey")
        .await
        .unwrap();
    for aid in [6, 7, 8, 9, 10, 11, 12] {
        assert_eq!(int(&c, &format!("EXECUTE g({aid})")).await, aid * 2);
    }
    let lines = explain(&c, "EXECUTE g(6)").await;
    assert!(lines.iter().all(|l| !l.contains("acc_pkey")), "{lines:#?}");
}

/// The extended protocol's prepared statements (what drivers and `pgbench -M prepared`
/// send) take the generic plan too; two sessions run the same statement at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_prepared_statements_share_nothing_between_runs() {
    let server = TestServer::start("generic-plan-protocol");
    let c = server.client().await;
    load(&c).await;
    let other = server.client().await;
    let mut tasks = Vec::new();
    for (client, offset) in [(c, 0), (other, 7)] {
        tasks.push(tokio::spawn(async move {
            let lookup = client
                .prepare("SELECT abalance FROM acc WHERE aid = $1")
                .await
                .unwrap();
            for i in 0..200 {
                let aid: i32 = (i * 97 + offset) % 20000 + 1;
                let row = client.query_one(&lookup, &[&aid]).await.unwrap();
                assert_eq!(row.get::<_, i32>(0), aid * 2);
            }
            client
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// A statement sent unnamed, parsed and described on every run (tokio-postgres' `query`
/// with a string): its kept description (server/src/sql/describe.rs) follows DDL — the
/// columns a `SELECT *` returns after ALTER TABLE — and its runs take the generic plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unnamed_statements_are_described_again_after_ddl() {
    let server = TestServer::start("generic-plan-unnamed");
    let c = server.client().await;
    load(&c).await;
    let sql = "SELECT * FROM acc WHERE aid = $1";
    for aid in 1..=8 {
        let row = c.query_one(sql, &[&aid]).await.unwrap();
        assert_eq!(row.len(), 4);
        assert_eq!(row.get::<_, i32>("abalance"), aid * 2);
    }
    c.batch_execute("ALTER TABLE acc ADD COLUMN note text DEFAULT 'n'")
        .await
        .unwrap();
    for aid in 1..=3 {
        let row = c.query_one(sql, &[&aid]).await.unwrap();
        assert_eq!(row.len(), 5);
        assert_eq!(row.get::<_, String>("note"), "n");
    }
    c.batch_execute("ALTER TABLE acc DROP COLUMN name")
        .await
        .unwrap();
    let row = c.query_one(sql, &[&2i32]).await.unwrap();
    let names: Vec<&str> = row.columns().iter().map(|col| col.name()).collect();
    assert_eq!(names, ["aid", "bid", "abalance", "note"]);
}
