//! PRIMARY KEY, UNIQUE and CREATE UNIQUE INDEX end to end: the errors PostgreSQL 18 gives
//! (captured from it), what survives them, waiting for a transaction that holds an equal
//! key, deadlocks between two such waits, the catalogs and psql's `\d`.

use std::time::Duration;

use iolab_tests::{int, rows, sqlstate, TestServer};
use tokio_postgres::Client;

async fn exec(client: &Client, sql: &str) {
    client
        .batch_execute(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

/// The error of `sql`: (SQLSTATE, message, DETAIL).
async fn error(client: &Client, sql: &str) -> (String, String, Option<String>) {
    let e = client
        .batch_execute(sql)
        .await
        .expect_err(&format!("{sql} should fail"));
    let db = e.as_db_error().expect("a database error");
    (
        sqlstate(&e),
        db.message().to_string(),
        db.detail().map(str::to_string),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn duplicate_keys_fail_as_in_postgres_and_leave_nothing_behind() {
    let server = TestServer::start("unique-errors");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE accounts (id bigserial PRIMARY KEY, email text UNIQUE, note text)",
    )
    .await;
    exec(
        &c,
        "INSERT INTO accounts (email) VALUES ('a@x'), ('b@x'), (NULL), (NULL)",
    )
    .await;

    // As PostgreSQL 18 answered the same statements.
    let e = error(&c, "INSERT INTO accounts (email) VALUES ('c@x'), ('a@x')").await;
    assert_eq!(
        e,
        (
            "23505".into(),
            "duplicate key value violates unique constraint \"accounts_email_key\"".into(),
            Some("Key (email)=(a@x) already exists.".into())
        )
    );
    let e = error(&c, "INSERT INTO accounts (id, email) VALUES (2, 'z@x')").await;
    assert_eq!(
        (e.1.as_str(), e.2.as_deref()),
        (
            "duplicate key value violates unique constraint \"accounts_pkey\"",
            Some("Key (id)=(2) already exists.")
        )
    );
    let e = error(&c, "INSERT INTO accounts (id) VALUES (NULL)").await;
    assert_eq!(e.0, "23502", "a primary key column is NOT NULL: {e:?}");
    // Two equal keys of one statement conflict with each other.
    let e = error(
        &c,
        "INSERT INTO accounts (email) SELECT 'dup' FROM generate_series(1, 3)",
    )
    .await;
    assert_eq!(e.2.as_deref(), Some("Key (email)=(dup) already exists."));
    // COPY and UPDATE are checked too.
    let e = error(&c, "UPDATE accounts SET email = 'a@x' WHERE email = 'b@x'").await;
    assert_eq!(e.0, "23505");
    // Quoting in the DETAIL, as PostgreSQL's.
    exec(&c, "CREATE TABLE q (\"Mixed Case\" int UNIQUE)").await;
    let e = error(&c, "INSERT INTO q VALUES (1), (1)").await;
    assert_eq!(
        (e.1.as_str(), e.2.as_deref()),
        (
            "duplicate key value violates unique constraint \"q_Mixed Case_key\"",
            Some("Key (\"Mixed Case\")=(1) already exists.")
        )
    );

    // Nothing of the failed statements is visible; NULLs never conflict.
    let got = rows(&c, "SELECT id, email FROM accounts ORDER BY id").await;
    let want: Vec<Vec<Option<String>>> = vec![
        vec![Some("1".into()), Some("a@x".into())],
        vec![Some("2".into()), Some("b@x".into())],
        vec![Some("3".into()), None],
        vec![Some("4".into()), None],
    ];
    assert_eq!(got, want);

    // An UPDATE that keeps the key, a key moved to a free value, a key deleted and
    // inserted again (in one transaction and across two) all pass.
    exec(&c, "UPDATE accounts SET note = 'n' WHERE id <= 2").await;
    exec(&c, "UPDATE accounts SET id = id + 100").await;
    exec(
        &c,
        "BEGIN; DELETE FROM accounts WHERE email = 'a@x'; INSERT INTO accounts (id, email) VALUES (1, 'a@x'); COMMIT",
    )
    .await;
    exec(&c, "DELETE FROM accounts WHERE id = 102").await;
    exec(&c, "INSERT INTO accounts (id, email) VALUES (2, 'b@x')").await;
    let got = rows(&c, "SELECT id, email FROM accounts ORDER BY id").await;
    let ids: Vec<&str> = got.iter().map(|r| r[0].as_deref().unwrap()).collect();
    assert_eq!(ids, ["1", "2", "103", "104"]);

    // Inside a transaction block the error aborts the block, as in PostgreSQL.
    let e = error(
        &c,
        "BEGIN; INSERT INTO accounts (id) VALUES (500); INSERT INTO accounts (id) VALUES (1)",
    )
    .await;
    assert_eq!(e.0, "23505");
    let e = error(&c, "SELECT 1").await;
    assert_eq!(e.0, "25P02");
    exec(&c, "ROLLBACK").await;
    assert_eq!(
        int(&c, "SELECT count(*) FROM accounts WHERE id = 500").await,
        0
    );

    // The index backing a constraint cannot be dropped on its own.
    let e = error(&c, "DROP INDEX accounts_pkey").await;
    assert_eq!(
        (e.0.as_str(), e.1.as_str()),
        (
            "2BP01",
            "cannot drop index accounts_pkey because constraint accounts_pkey on table accounts requires it"
        )
    );

    // The constraints hold after a restart, and the indexes check out against the heap.
    let mut server = server;
    server.restart();
    let c = server.client().await;
    let e = error(&c, "INSERT INTO accounts (id, email) VALUES (7, 'b@x')").await;
    assert_eq!(e.2.as_deref(), Some("Key (email)=(b@x) already exists."));
    for index in ["accounts_pkey", "accounts_email_key"] {
        let entries = int(&c, &format!("SELECT iolab_btree_check('{index}')")).await;
        assert_eq!(entries, 4, "{index}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn create_unique_index_checks_the_rows_that_are_live() {
    let server = TestServer::start("unique-build");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE dups (a int, b text); INSERT INTO dups VALUES (1, 'x'), (1, 'y'), (2, 'z'), (NULL, 'n'), (NULL, 'm')",
    )
    .await;
    let e = error(&c, "CREATE UNIQUE INDEX ON dups (a)").await;
    assert_eq!(
        e,
        (
            "23505".into(),
            "could not create unique index \"dups_a_idx\"".into(),
            Some("Key (a)=(1) is duplicated.".into())
        )
    );
    assert_eq!(
        int(
            &c,
            "SELECT count(*) FROM pg_indexes WHERE tablename = 'dups'"
        )
        .await,
        0
    );
    // Once one of the two is deleted (its tuple still on the page), the build passes.
    exec(&c, "DELETE FROM dups WHERE b = 'y'").await;
    exec(&c, "CREATE UNIQUE INDEX ON dups (a)").await;
    let e = error(&c, "INSERT INTO dups VALUES (2, 'again')").await;
    assert_eq!(
        (e.0.as_str(), e.1.as_str()),
        (
            "23505",
            "duplicate key value violates unique constraint \"dups_a_idx\""
        )
    );
    assert_eq!(
        rows(
            &c,
            "SELECT indisunique::text, indisprimary::text FROM pg_index WHERE indexrelid = 'dups_a_idx'::regclass"
        )
        .await,
        vec![vec![Some("true".into()), Some("false".into())]]
    );
    // A unique index is not a constraint.
    assert_eq!(
        int(
            &c,
            "SELECT count(*) FROM pg_constraint WHERE conrelid = 'dups'::regclass"
        )
        .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_insert_waits_for_the_transaction_holding_an_equal_key() {
    let server = TestServer::start("unique-wait");
    let a = server.client().await;
    exec(&a, "CREATE TABLE t (k int PRIMARY KEY, who text)").await;

    // A holds key 1 uncommitted; B's insert of 1 waits; A rolls back; B's goes in.
    exec(&a, "BEGIN; INSERT INTO t VALUES (1, 'a')").await;
    let b = server.client().await;
    let waiting = tokio::spawn(async move {
        let r = b.batch_execute("INSERT INTO t VALUES (1, 'b')").await;
        (b, r)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "B must wait for A");
    exec(&a, "ROLLBACK").await;
    let (b, r) = waiting.await.unwrap();
    r.expect("B inserts once A rolled back");
    assert_eq!(
        rows(&a, "SELECT who FROM t").await,
        vec![vec![Some("b".into())]]
    );

    // A holds key 2 and commits: B's insert of 2 fails after the wait.
    exec(&a, "BEGIN; INSERT INTO t VALUES (2, 'a')").await;
    let waiting = tokio::spawn(async move {
        let r = b.batch_execute("INSERT INTO t VALUES (2, 'b')").await;
        (b, r)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "B must wait for A");
    exec(&a, "COMMIT").await;
    let (b, r) = waiting.await.unwrap();
    let e = r.expect_err("the key is taken once A committed");
    assert_eq!(sqlstate(&e), "23505");

    // A deletes key 1 uncommitted: B's insert of 1 waits, and goes in once A commits.
    exec(&a, "BEGIN; DELETE FROM t WHERE k = 1").await;
    let waiting = tokio::spawn(async move {
        let r = b.batch_execute("INSERT INTO t VALUES (1, 'b2')").await;
        (b, r)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!waiting.is_finished(), "B must wait for A's delete");
    exec(&a, "COMMIT").await;
    let (b, r) = waiting.await.unwrap();
    r.expect("the key is free once A's delete committed");

    // Two transactions each wait for the other's key: one of them is told of the deadlock,
    // the other goes on.
    exec(&a, "BEGIN; INSERT INTO t VALUES (10, 'a')").await;
    exec(&b, "BEGIN; INSERT INTO t VALUES (11, 'b')").await;
    let a_waits = tokio::spawn(async move {
        let r = a.batch_execute("INSERT INTO t VALUES (11, 'a')").await;
        (a, r)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b_result = b.batch_execute("INSERT INTO t VALUES (10, 'b')").await;
    let e = b_result.expect_err("B closes the circle");
    assert_eq!(sqlstate(&e), "40P01");
    exec(&b, "ROLLBACK").await;
    let (a, r) = a_waits.await.unwrap();
    r.expect("A goes on once B rolled back");
    exec(&a, "COMMIT").await;
    assert_eq!(
        rows(&a, "SELECT k, who FROM t ORDER BY k").await,
        [(1, "b2"), (2, "a"), (10, "a"), (11, "a")]
            .iter()
            .map(|(k, w)| vec![Some(k.to_string()), Some(w.to_string())])
            .collect::<Vec<_>>()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn constraints_in_the_catalogs_and_psql_as_in_postgres() {
    let server = TestServer::start("unique-catalog");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE accounts (id bigserial PRIMARY KEY, email text UNIQUE, note text)",
    )
    .await;
    exec(
        &c,
        "CREATE UNIQUE INDEX accounts_note_idx ON accounts (note)",
    )
    .await;
    // psql 15's `\d` against PostgreSQL 18.4 printed exactly this.
    let want = r#"                            Table "public.accounts"
 Column |  Type  | Collation | Nullable |               Default                
--------+--------+-----------+----------+--------------------------------------
 id     | bigint |           | not null | nextval('accounts_id_seq'::regclass)
 email  | text   |           |          | 
 note   | text   |           |          | 
Indexes:
    "accounts_pkey" PRIMARY KEY, btree (id)
    "accounts_email_key" UNIQUE CONSTRAINT, btree (email)
    "accounts_note_idx" UNIQUE, btree (note)

"#;
    assert_eq!(server.psql_ok(&["-c", "\\d accounts"]), want);
    let want = r#"    Index "public.accounts_pkey"
 Column |  Type  | Key? | Definition 
--------+--------+------+------------
 id     | bigint | yes  | id
primary key, btree, for table "public.accounts"

"#;
    assert_eq!(server.psql_ok(&["-c", "\\d accounts_pkey"]), want);

    assert_eq!(
        rows(
            &c,
            "SELECT conname, contype::text, conindid::regclass::text, conkey::text, pg_get_constraintdef(oid) \
             FROM pg_constraint WHERE conrelid = 'accounts'::regclass ORDER BY oid"
        )
        .await,
        [
            ["accounts_pkey", "p", "accounts_pkey", "{1}", "PRIMARY KEY (id)"],
            ["accounts_email_key", "u", "accounts_email_key", "{2}", "UNIQUE (email)"],
        ]
        .iter()
        .map(|r| r.iter().map(|v| Some(v.to_string())).collect())
        .collect::<Vec<Vec<_>>>()
    );
    assert_eq!(
        rows(
            &c,
            "SELECT tc.constraint_name, tc.constraint_type, k.column_name \
             FROM information_schema.table_constraints tc \
             JOIN information_schema.key_column_usage k USING (constraint_name) \
             WHERE tc.table_name = 'accounts' ORDER BY 1"
        )
        .await,
        [
            ["accounts_email_key", "UNIQUE", "email"],
            ["accounts_pkey", "PRIMARY KEY", "id"],
        ]
        .iter()
        .map(|r| r.iter().map(|v| Some(v.to_string())).collect())
        .collect::<Vec<Vec<_>>>()
    );

    // Errors of CREATE TABLE, as PostgreSQL 18's.
    for (sql, code, message) in [
        (
            "CREATE TABLE u2 (a int PRIMARY KEY, b int PRIMARY KEY)",
            "42P16",
            "multiple primary keys for table \"u2\" are not allowed",
        ),
        (
            "CREATE TABLE u4 (a int, PRIMARY KEY (x))",
            "42703",
            "column \"x\" named in key does not exist",
        ),
        (
            "CREATE TABLE u5 (a int NULL PRIMARY KEY)",
            "42601",
            "conflicting NULL/NOT NULL declarations for column \"a\" of table \"u5\"",
        ),
        (
            "CREATE TABLE u6 (a int CONSTRAINT myk PRIMARY KEY, b text CONSTRAINT myk UNIQUE)",
            "42P07",
            "relation \"myk\" already exists",
        ),
    ] {
        let e = error(&c, sql).await;
        assert_eq!((e.0.as_str(), e.1.as_str()), (code, message), "{sql}");
    }
    // The failed CREATE TABLEs left nothing.
    assert_eq!(
        int(&c, "SELECT count(*) FROM pg_class WHERE relname IN ('u2', 'u4', 'u5', 'u6', 'u6_pkey', 'myk')").await,
        0
    );
    // Duplicates folded as PostgreSQL folds them; ROLLBACK takes the indexes with the table.
    exec(
        &c,
        "BEGIN; CREATE TABLE u1 (a int UNIQUE UNIQUE, b int PRIMARY KEY UNIQUE, c int, UNIQUE (c), UNIQUE (c), CONSTRAINT cc UNIQUE (a))",
    )
    .await;
    assert_eq!(
        rows(
            &c,
            "SELECT indexname FROM pg_indexes WHERE tablename = 'u1' ORDER BY 1"
        )
        .await,
        vec![
            vec![Some("cc".to_string())],
            vec![Some("u1_c_key".to_string())],
            vec![Some("u1_pkey".to_string())]
        ]
    );
    exec(&c, "ROLLBACK").await;
    assert_eq!(
        int(
            &c,
            "SELECT count(*) FROM pg_class WHERE relname IN ('u1', 'cc', 'u1_c_key', 'u1_pkey')"
        )
        .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn on_conflict_do_nothing_leaves_out_the_rows_an_arbiter_has() {
    let server = TestServer::start("unique-on-conflict");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE oc (a int PRIMARY KEY, b int UNIQUE, c int); INSERT INTO oc VALUES (1, 1, 1)",
    )
    .await;
    // As PostgreSQL 18: a duplicate within the statement and one already there are left
    // out; RETURNING and the tag count only the rows inserted.
    let msgs = c
        .simple_query("INSERT INTO oc VALUES (1, 5, 5), (2, 2, 2), (2, 3, 3), (3, 3, 3) ON CONFLICT DO NOTHING RETURNING a, b")
        .await
        .unwrap();
    let mut returned = Vec::new();
    let mut tag = None;
    for m in msgs {
        match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                returned.push((r.get(0).unwrap().to_string(), r.get(1).unwrap().to_string()))
            }
            tokio_postgres::SimpleQueryMessage::CommandComplete(n) => tag = Some(n),
            _ => {}
        }
    }
    assert_eq!(
        returned,
        [("2".into(), "2".into()), ("3".into(), "3".into())]
    );
    assert_eq!(tag, Some(2));
    // A target names the arbiters; a conflict on another unique index still fails.
    exec(
        &c,
        "INSERT INTO oc VALUES (1, 9, 9) ON CONFLICT (a) DO NOTHING",
    )
    .await;
    let e = error(
        &c,
        "INSERT INTO oc VALUES (9, 1, 9) ON CONFLICT (a) DO NOTHING",
    )
    .await;
    assert_eq!(
        (e.1.as_str(), e.2.as_deref()),
        (
            "duplicate key value violates unique constraint \"oc_b_key\"",
            Some("Key (b)=(1) already exists.")
        )
    );
    exec(
        &c,
        "INSERT INTO oc VALUES (9, 1, 9) ON CONFLICT ON CONSTRAINT oc_b_key DO NOTHING",
    )
    .await;
    assert_eq!(
        rows(&c, "SELECT a, b, c FROM oc ORDER BY a").await,
        [["1", "1", "1"], ["2", "2", "2"], ["3", "3", "3"]]
            .iter()
            .map(|r| r.iter().map(|v| Some(v.to_string())).collect())
            .collect::<Vec<Vec<_>>>()
    );
    // Errors as PostgreSQL 18's.
    for (sql, code, message) in [
        (
            "INSERT INTO oc VALUES (1, 1, 1) ON CONFLICT (c) DO NOTHING",
            "42P10",
            "there is no unique or exclusion constraint matching the ON CONFLICT specification",
        ),
        (
            "INSERT INTO oc VALUES (1, 1, 1) ON CONFLICT ON CONSTRAINT nope DO NOTHING",
            "42704",
            "constraint \"nope\" for table \"oc\" does not exist",
        ),
        (
            "INSERT INTO oc VALUES (1, 1, 1) ON CONFLICT (zz) DO NOTHING",
            "42703",
            "column \"zz\" does not exist",
        ),
    ] {
        let e = error(&c, sql).await;
        assert_eq!((e.0.as_str(), e.1.as_str()), (code, message), "{sql}");
    }

    // A key another transaction holds is waited for: it commits, the row is left out.
    let d = server.client().await;
    exec(&d, "BEGIN; INSERT INTO oc VALUES (50, 50, 50)").await;
    let waiting = tokio::spawn(async move {
        let r = c
            .simple_query("INSERT INTO oc VALUES (50, 51, 51), (51, 52, 52) ON CONFLICT DO NOTHING")
            .await;
        (c, r)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !waiting.is_finished(),
        "the insert waits for the holder of 50"
    );
    exec(&d, "COMMIT").await;
    let (c, r) = waiting.await.unwrap();
    let tag = r.unwrap().into_iter().find_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::CommandComplete(n) => Some(n),
        _ => None,
    });
    assert_eq!(tag, Some(1));
    assert_eq!(
        rows(&c, "SELECT b FROM oc WHERE a IN (50, 51) ORDER BY a").await,
        vec![vec![Some("50".to_string())], vec![Some("52".to_string())]]
    );
    // The indexes hold exactly the live rows (no entry for a row left out survives a
    // check of index against heap).
    for index in ["oc_pkey", "oc_b_key"] {
        assert_eq!(
            int(&c, &format!("SELECT iolab_btree_check('{index}')")).await,
            5
        );
    }
}

/// Many sessions insert overlapping keys with ON CONFLICT DO NOTHING at once: every key
/// ends up exactly once, and the tags add up to the rows in the table. This is the race
/// PostgreSQL's speculative insertion exists for (a key inserted by another session
/// between the search and the insert).
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_on_conflict_do_nothing_inserts_each_key_once() {
    let server = TestServer::start("unique-on-conflict-race");
    let c = server.client().await;
    exec(&c, "CREATE TABLE race (k int PRIMARY KEY, who int)").await;
    let mut tasks = Vec::new();
    for who in 0..4 {
        let client = server.client().await;
        tasks.push(tokio::spawn(async move {
            let mut inserted = 0u64;
            for round in 0..20 {
                // Each session inserts keys 0..200 in its own order, in batches of 50.
                let start = (round * 50 + who * 37) % 200;
                let sql = format!(
                    "INSERT INTO race SELECT (i + {start}) % 200, {who} FROM generate_series(0, 49) i ON CONFLICT DO NOTHING"
                );
                let msgs = client.simple_query(&sql).await.expect("insert");
                for m in msgs {
                    if let tokio_postgres::SimpleQueryMessage::CommandComplete(n) = m {
                        inserted += n;
                    }
                }
            }
            inserted
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(int(&c, "SELECT count(*) FROM race").await, 200);
    assert_eq!(int(&c, "SELECT count(DISTINCT k) FROM race").await, 200);
    assert_eq!(total, 200, "the tags count each inserted row once");
    assert_eq!(int(&c, "SELECT iolab_btree_check('race_pkey')").await, 200);
}

/// The rows (as text) and the command tag's row count of a simple-protocol statement.
async fn rows_and_count(client: &Client, sql: &str) -> (Vec<Vec<String>>, u64) {
    let mut rows = Vec::new();
    let mut count = None;
    for m in client
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"))
    {
        match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => rows.push(
                (0..r.len())
                    .map(|i| r.get(i).unwrap_or("NULL").to_string())
                    .collect(),
            ),
            tokio_postgres::SimpleQueryMessage::CommandComplete(n) => count = Some(n),
            _ => {}
        }
    }
    (rows, count.expect("a command tag"))
}

fn text_rows(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|v| v.to_string()).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn on_conflict_do_update_as_in_postgres() {
    let server = TestServer::start("unique-upsert");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE kv (k text PRIMARY KEY, v int, n int DEFAULT 0, u int UNIQUE); \
         INSERT INTO kv (k, v, u) VALUES ('a', 1, 1), ('b', 2, 2)",
    )
    .await;
    // Each statement and its answer as PostgreSQL 18.4 gave them.
    let (returned, count) = rows_and_count(
        &c,
        "INSERT INTO kv AS x (k, v) VALUES ('a', 10), ('c', 3), ('b', 5) \
         ON CONFLICT (k) DO UPDATE SET v = x.v + excluded.v, n = x.n + 1 RETURNING k, v, n",
    )
    .await;
    assert_eq!(
        returned,
        text_rows(&[&["a", "11", "1"], &["c", "3", "0"], &["b", "7", "1"]])
    );
    assert_eq!(count, 3);
    let e = error(
        &c,
        "INSERT INTO kv AS x (k, v) VALUES ('a', 10) ON CONFLICT (k) DO UPDATE SET v = excluded.v, n = n + 1",
    )
    .await;
    assert_eq!(
        (e.0.as_str(), e.1.as_str()),
        ("42702", "column reference \"n\" is ambiguous")
    );
    let (_, count) = rows_and_count(
        &c,
        "INSERT INTO kv (k, v) VALUES ('b', 100) ON CONFLICT (k) DO UPDATE SET v = excluded.v WHERE kv.v > 50",
    )
    .await;
    assert_eq!(count, 0, "the WHERE condition is false: nothing changes");
    for sql in [
        "INSERT INTO kv (k, v, u) VALUES ('b', 100, 9) ON CONFLICT ON CONSTRAINT kv_pkey DO UPDATE SET u = 1",
        "INSERT INTO kv (k, v, u) VALUES ('q', 100, 1) ON CONFLICT (k) DO UPDATE SET u = 1",
    ] {
        let e = error(&c, sql).await;
        assert_eq!(
            (e.1.as_str(), e.2.as_deref()),
            (
                "duplicate key value violates unique constraint \"kv_u_key\"",
                Some("Key (u)=(1) already exists.")
            ),
            "{sql}"
        );
    }
    let e = error(
        &c,
        "INSERT INTO kv (k, v) VALUES ('a', 5), ('a', 6) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
    )
    .await;
    assert_eq!(
        (e.0.as_str(), e.1.as_str()),
        (
            "21000",
            "ON CONFLICT DO UPDATE command cannot affect row a second time"
        )
    );
    let e = error(
        &c,
        "INSERT INTO kv (k, v) VALUES ('a', 5) ON CONFLICT DO UPDATE SET v = 1",
    )
    .await;
    assert_eq!(
        (e.0.as_str(), e.1.as_str()),
        (
            "42601",
            "ON CONFLICT DO UPDATE requires inference specification or constraint name"
        )
    );
    assert_eq!(
        rows(&c, "SELECT k, v, n, u FROM kv ORDER BY k").await,
        vec![
            vec![
                Some("a".into()),
                Some("11".into()),
                Some("1".into()),
                Some("1".into())
            ],
            vec![
                Some("b".into()),
                Some("7".into()),
                Some("1".into()),
                Some("2".into())
            ],
            vec![Some("c".into()), Some("3".into()), Some("0".into()), None],
        ]
    );
    for index in ["kv_pkey", "kv_u_key"] {
        assert_eq!(
            int(&c, &format!("SELECT iolab_btree_check('{index}')")).await,
            3
        );
    }
}

/// Sessions counting into the same rows with upserts at once (the classic counter): every
/// increment lands, none twice, though each session meets rows the others are inserting
/// or updating (it waits for them, then updates the newest version).
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_upserts_count_every_increment() {
    let server = TestServer::start("unique-upsert-race");
    let c = server.client().await;
    exec(&c, "CREATE TABLE counter (k int PRIMARY KEY, hits int)").await;
    let (sessions, rounds) = (4, 30);
    let mut tasks = Vec::new();
    for s in 0..sessions {
        let client = server.client().await;
        tasks.push(tokio::spawn(async move {
            for round in 0..rounds {
                let sql = format!(
                    "INSERT INTO counter VALUES ({}, 1), ({}, 1) \
                     ON CONFLICT (k) DO UPDATE SET hits = counter.hits + 1",
                    round % 3,
                    3 + (round + s) % 2
                );
                // Every statement proposes its keys in ascending order, so, as in
                // PostgreSQL, none deadlocks.
                if let Err(e) = client.batch_execute(&sql).await {
                    panic!("upsert: {e:?}");
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(
        int(&c, "SELECT sum(hits) FROM counter").await,
        2 * sessions * rounds
    );
    assert_eq!(int(&c, "SELECT count(*) FROM counter").await, 5);
    assert_eq!(int(&c, "SELECT iolab_btree_check('counter_pkey')").await, 5);
}

/// A multi-row upsert takes its rows in their order, as PostgreSQL does (so two sessions
/// proposing keys in one order wait for each other in that order and do not deadlock).
/// Which error a statement meets shows the order, as PostgreSQL 18 gave them: row 1's
/// update moving key 1 to 2 before row 2 proposes key 2 is 21000; row 1 inserting key 3
/// before row 2's update moves key 1 to 3 is 23505. Inserting the new keys first would
/// swap the two errors.
#[tokio::test(flavor = "multi_thread")]
async fn a_multi_row_upsert_takes_its_rows_in_order() {
    let server = TestServer::start("unique-upsert-order");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE kv (k int PRIMARY KEY, v int); INSERT INTO kv VALUES (1, 10), (6, 60)",
    )
    .await;
    let (code, message, _) = error(
        &c,
        "INSERT INTO kv VALUES (1, 100), (2, 200) ON CONFLICT (k) DO UPDATE SET k = 2",
    )
    .await;
    assert_eq!(
        (code.as_str(), message.as_str()),
        (
            "21000",
            "ON CONFLICT DO UPDATE command cannot affect row a second time"
        )
    );
    let (code, message, detail) = error(
        &c,
        "INSERT INTO kv VALUES (3, 100), (1, 200) ON CONFLICT (k) DO UPDATE SET k = 3",
    )
    .await;
    assert_eq!(
        (code.as_str(), message.as_str(), detail.as_deref()),
        (
            "23505",
            "duplicate key value violates unique constraint \"kv_pkey\"",
            Some("Key (k)=(3) already exists.")
        )
    );
    // Rows left out and rows inserted alternating: each in its place in RETURNING.
    assert_eq!(
        rows(
            &c,
            "INSERT INTO kv VALUES (5, 1), (1, 1), (6, 1), (7, 1), (8, 1) \
             ON CONFLICT (k) DO UPDATE SET v = kv.v + excluded.v RETURNING k, v"
        )
        .await,
        [("5", "1"), ("1", "11"), ("6", "61"), ("7", "1"), ("8", "1")]
            .map(|(k, v)| vec![Some(k.to_string()), Some(v.to_string())])
    );
    // No row left out (the session used to lose its connection here).
    assert_eq!(
        rows(
            &c,
            "INSERT INTO kv VALUES (9, 9) ON CONFLICT (k) DO UPDATE SET v = 0 RETURNING k, v"
        )
        .await,
        vec![vec![Some("9".to_string()), Some("9".to_string())]]
    );
}

/// EXPLAIN of INSERT … ON CONFLICT, line for line as PostgreSQL 18.4 printed it for the
/// same statements (and EXPLAIN ANALYZE of an INSERT fills column defaults, as the INSERT
/// itself does).
#[tokio::test(flavor = "multi_thread")]
async fn explain_shows_the_conflict_resolution_as_postgres() {
    let server = TestServer::start("unique-explain");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE kv (k text PRIMARY KEY, v int, n int DEFAULT 0, u int UNIQUE); \
         INSERT INTO kv (k, v, u) VALUES ('a', 1, 1), ('b', 2, 2)",
    )
    .await;
    let explain = |sql: &str| {
        let out = server.psql_ok(&[
            "-c",
            &format!("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF) {sql}"),
        ]);
        out.lines()
            .skip(2)
            .take_while(|l| !l.starts_with('('))
            .map(|l| l.trim_end().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        explain(
            "INSERT INTO kv AS x (k, v) VALUES ('a', 10), ('c', 3), ('b', 5) \
             ON CONFLICT (k) DO UPDATE SET v = x.v + excluded.v WHERE x.v > 1"
        ),
        [
            " Insert on kv x (actual rows=0.00 loops=1)",
            "   Conflict Resolution: UPDATE",
            "   Conflict Arbiter Indexes: kv_pkey",
            "   Conflict Filter: (x.v > 1)",
            "   Rows Removed by Conflict Filter: 1",
            "   Tuples Inserted: 1",
            "   Conflicting Tuples: 2",
            "   ->  Values Scan on \"*VALUES*\" (actual rows=3.00 loops=1)",
        ]
    );
    assert_eq!(
        explain("INSERT INTO kv AS x (k, v) VALUES ('a', 10), ('d', 3) ON CONFLICT DO NOTHING"),
        [
            " Insert on kv x (actual rows=0.00 loops=1)",
            "   Conflict Resolution: NOTHING",
            "   Tuples Inserted: 1",
            "   Conflicting Tuples: 1",
            "   ->  Values Scan on \"*VALUES*\" (actual rows=2.00 loops=1)",
        ]
    );
    // The rows EXPLAIN ANALYZE wrote (b updated: 2 + 5), defaults included.
    assert_eq!(
        rows(&c, "SELECT k, v, n FROM kv ORDER BY k").await,
        [
            ["a", "1", "0"],
            ["b", "7", "0"],
            ["c", "3", "0"],
            ["d", "3", "0"]
        ]
        .iter()
        .map(|r| r.iter().map(|v| Some(v.to_string())).collect())
        .collect::<Vec<Vec<_>>>()
    );
}

/// ALTER TABLE ADD PRIMARY KEY / UNIQUE and DROP CONSTRAINT, statement by statement as
/// PostgreSQL 18.4 answered them.
#[tokio::test(flavor = "multi_thread")]
async fn alter_table_adds_and_drops_key_constraints() {
    let server = TestServer::start("unique-alter");
    let c = server.client().await;
    exec(
        &c,
        "CREATE TABLE ac (a int, b int); INSERT INTO ac VALUES (1, 1), (2, 1), (NULL, 3)",
    )
    .await;
    for (sql, code, message, detail) in [
        (
            "ALTER TABLE ac ADD PRIMARY KEY (a)",
            "23502",
            "column \"a\" of relation \"ac\" contains null values",
            None,
        ),
        (
            "ALTER TABLE ac ADD UNIQUE (b)",
            "23505",
            "could not create unique index \"ac_b_key\"",
            Some("Key (b)=(1) is duplicated."),
        ),
    ] {
        let e = error(&c, sql).await;
        assert_eq!(
            (e.0.as_str(), e.1.as_str(), e.2.as_deref()),
            (code, message, detail),
            "{sql}"
        );
    }
    exec(&c, "DELETE FROM ac WHERE a IS NULL").await;
    exec(&c, "ALTER TABLE ac ADD PRIMARY KEY (a)").await;
    let e = error(&c, "ALTER TABLE ac ADD CONSTRAINT ac_b_uq UNIQUE (b)").await;
    assert_eq!(e.1, "could not create unique index \"ac_b_uq\"");
    let e = error(&c, "ALTER TABLE ac ADD PRIMARY KEY (b)").await;
    assert_eq!(
        (e.0.as_str(), e.1.as_str()),
        (
            "42P16",
            "multiple primary keys for table \"ac\" are not allowed"
        )
    );
    let want = r#"                 Table "public.ac"
 Column |  Type   | Collation | Nullable | Default 
--------+---------+-----------+----------+---------
 a      | integer |           | not null | 
 b      | integer |           |          | 
Indexes:
    "ac_pkey" PRIMARY KEY, btree (a)

"#;
    assert_eq!(server.psql_ok(&["-c", "\\d ac"]), want);
    let e = error(&c, "INSERT INTO ac VALUES (1, 9)").await;
    assert_eq!(e.2.as_deref(), Some("Key (a)=(1) already exists."));
    // ROLLBACK takes an added key back; DROP CONSTRAINT leaves the column NOT NULL, as
    // PostgreSQL 18 does.
    exec(
        &c,
        "BEGIN; ALTER TABLE ac ADD CONSTRAINT b_one UNIQUE (a); ROLLBACK",
    )
    .await;
    assert_eq!(
        int(&c, "SELECT count(*) FROM pg_class WHERE relname = 'b_one'").await,
        0
    );
    let e = error(&c, "ALTER TABLE ac DROP CONSTRAINT nope").await;
    assert_eq!(
        (e.0.as_str(), e.1.as_str()),
        (
            "42704",
            "constraint \"nope\" of relation \"ac\" does not exist"
        )
    );
    exec(&c, "ALTER TABLE ac DROP CONSTRAINT IF EXISTS nope").await;
    exec(&c, "ALTER TABLE ac DROP CONSTRAINT ac_pkey").await;
    exec(&c, "INSERT INTO ac VALUES (1, 9)").await;
    let want = r#"                 Table "public.ac"
 Column |  Type   | Collation | Nullable | Default 
--------+---------+-----------+----------+---------
 a      | integer |           | not null | 
 b      | integer |           |          | 

"#;
    assert_eq!(server.psql_ok(&["-c", "\\d ac"]), want);
}
