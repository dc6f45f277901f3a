//! psql's meta-commands (`\d`, `\d t`, `\dt+`, `\di+`, `\l+`, `\dn+`, `\x`, …) against a
//! real iolab, with the real psql (15, as installed here and in CI; it picks its newest
//! query variants because iolab reports server_version 18.0). The expected texts were
//! taken from psql 15 against PostgreSQL 18.4 (`/work/shared/tools/pg18-reference`) for
//! the same tables, and are compared exactly where iolab matches it.
//!
//! Differences from PostgreSQL 18 that these tests accept:
//! - Sizes (`\dt+`, `\l+`, `pg_table_size`) count the main fork only: iolab keeps no free
//!   space map or visibility map, and packs tuples its own way, so the same rows take a
//!   different number of pages. A table with one page shows `8192 bytes`; PostgreSQL,
//!   counting its free space and visibility maps too, shows more (e.g. `24 kB`).
//! - `\l` lists only `postgres`: iolab has one database, no `template0`/`template1`.
//!   Collate and Ctype read `C` (iolab compares bytes). psql 15's `\l` query does not run
//!   on a real PostgreSQL 18 at all (it names `daticulocale`, renamed in 17); iolab
//!   answers it.
//! - iolab's catalog has no constraints, defaults, triggers, policies, rules or
//!   publications yet, so `\d t` has no footers but `Indexes:` (B-tree indexes and
//!   `\di` are tested in `btree.rs`).
//! - `\du` shows the one login role, `postgres`, whoever is connected; `\dx` lists no
//!   extensions (PostgreSQL always has plpgsql); `\dS` lists iolab's catalogs only.
//! - `\d+` of a catalog view has an empty `View definition:`; `\dTS` lists only the
//!   built-in types iolab knows.
//! - `'t'::regclass` shows the table's name in a query's select list (and its UNION's), as
//!   in PostgreSQL, but its OID in a subquery's.

use iolab_tests::TestServer;

/// A server with PostgreSQL's example tables: `eic_uniform` (unlogged, 1000 rows) and
/// `t2` (one row, a NOT NULL column and a varchar(20)).
fn server_with_tables(name: &str) -> TestServer {
    let server = TestServer::start(name);
    server.psql_ok(&[
        "-c",
        "CREATE UNLOGGED TABLE eic_uniform(a integer, filler text)",
        "-c",
        "INSERT INTO eic_uniform SELECT i, md5(i::text) FROM generate_series(1, 1000) AS T(i)",
        "-c",
        "CREATE TABLE t2(id int NOT NULL, v varchar(20))",
        "-c",
        "INSERT INTO t2 VALUES (1, 'one')",
    ]);
    server
}

fn meta(server: &TestServer, command: &str) -> String {
    server.psql_ok(&["-c", command])
}

#[test]
fn describe_a_table() {
    let server = server_with_tables("psql_meta_describe");

    // Exactly PostgreSQL 18's output.
    assert_eq!(
        meta(&server, "\\d eic_uniform"),
        concat!(
            "        Unlogged table \"public.eic_uniform\"\n",
            " Column |  Type   | Collation | Nullable | Default \n",
            "--------+---------+-----------+----------+---------\n",
            " a      | integer |           |          | \n",
            " filler | text    |           |          | \n",
            "\n",
        )
    );
    assert_eq!(
        meta(&server, "\\d t2"),
        concat!(
            "                        Table \"public.t2\"\n",
            " Column |         Type          | Collation | Nullable | Default \n",
            "--------+-----------------------+-----------+----------+---------\n",
            " id     | integer               |           | not null | \n",
            " v      | character varying(20) |           |          | \n",
            "\n",
        )
    );
    assert_eq!(
        meta(&server, "\\d+ eic_uniform"),
        concat!(
            "                                   Unlogged table \"public.eic_uniform\"\n",
            " Column |  Type   | Collation | Nullable | Default | Storage  | Compression | Stats target | Description \n",
            "--------+---------+-----------+----------+---------+----------+-------------+--------------+-------------\n",
            " a      | integer |           |          |         | plain    |             |              | \n",
            " filler | text    |           |          |         | extended |             |              | \n",
            "Access method: heap\n",
            "\n",
        )
    );
    // \x does not change \d's layout (as in PostgreSQL), but does change list output.
    let expanded = server.psql_ok(&["-c", "\\x", "-c", "\\d eic_uniform"]);
    assert!(
        expanded.starts_with(
            "Expanded display is on.\n        Unlogged table \"public.eic_uniform\"\n"
        ),
        "{expanded}"
    );
    assert!(
        expanded.contains(" a      | integer |           |          | \n"),
        "{expanded}"
    );

    // A relation that does not exist: psql's message, and failure under ON_ERROR_STOP.
    let out = server.psql(&["-c", "\\d nosuch"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Did not find any relation named \"nosuch\".\n"
    );

    // The catalogs describe themselves.
    let pg_class = meta(&server, "\\d pg_class");
    assert!(
        pg_class.starts_with("                     Table \"pg_catalog.pg_class\"\n"),
        "{pg_class}"
    );
    assert!(
        pg_class.contains(" relpersistence      | \"char\"       |           | not null | \n"),
        "{pg_class}"
    );
    assert!(
        pg_class.contains(" reloptions          | text[]       | C         |          | \n"),
        "{pg_class}"
    );
    let tables = meta(&server, "\\d information_schema.tables");
    assert!(
        tables.contains("View \"information_schema.tables\""),
        "{tables}"
    );
    assert!(
        tables.contains(" table_name                   | name              |"),
        "{tables}"
    );
}

#[test]
fn list_relations() {
    let server = server_with_tables("psql_meta_list");
    let list = concat!(
        "            List of relations\n",
        " Schema |    Name     | Type  |  Owner   \n",
        "--------+-------------+-------+----------\n",
        " public | eic_uniform | table | postgres\n",
        " public | t2          | table | postgres\n",
        "(2 rows)\n",
        "\n",
    );
    assert_eq!(meta(&server, "\\d"), list);
    assert_eq!(meta(&server, "\\dt"), list);
    assert_eq!(
        meta(&server, "\\dt eic*"),
        concat!(
            "            List of relations\n",
            " Schema |    Name     | Type  |  Owner   \n",
            "--------+-------------+-------+----------\n",
            " public | eic_uniform | table | postgres\n",
            "(1 row)\n",
            "\n",
        )
    );

    // \dt+: persistence, access method, the size of the table's file.
    let size = server.psql_ok(&[
        "-At",
        "-c",
        "SELECT pg_size_pretty(pg_table_size('eic_uniform'))",
    ]);
    let size = size.trim();
    assert!(
        size.ends_with(" kB"),
        "1000 rows take several pages: {size}"
    );
    let plus = meta(&server, "\\dt+");
    let lines: Vec<&str> = plus.lines().collect();
    assert_eq!(lines[0].trim(), "List of relations");
    assert_eq!(
        lines[1],
        " Schema |    Name     | Type  |  Owner   | Persistence | Access method |    Size    | Description "
    );
    assert_eq!(
        lines[3],
        format!(" public | eic_uniform | table | postgres | unlogged    | heap          | {size:<10} | ")
    );
    assert_eq!(
        lines[4],
        " public | t2          | table | postgres | permanent   | heap          | 8192 bytes | "
    );
    assert_eq!(lines[5], "(2 rows)");

    // \x: one record per table.
    let expanded = server.psql_ok(&["-c", "\\x", "-c", "\\dt+ t2"]);
    assert!(
        expanded.contains("-[ RECORD 1 ]-+-----------\n"),
        "{expanded}"
    );
    assert!(
        expanded.contains("Persistence   | permanent\n"),
        "{expanded}"
    );
    assert!(
        expanded.contains("Size          | 8192 bytes\n"),
        "{expanded}"
    );

    // No indexes on these tables.
    assert_eq!(meta(&server, "\\di"), "");
    assert_eq!(
        String::from_utf8_lossy(&server.psql(&["-c", "\\di+"]).stderr),
        "Did not find any relations.\n"
    );

    // \dp: default privileges only.
    assert_eq!(
        meta(&server, "\\dp t2"),
        concat!(
            "                            Access privileges\n",
            " Schema | Name | Type  | Access privileges | Column privileges | Policies \n",
            "--------+------+-------+-------------------+-------------------+----------\n",
            " public | t2   | table |                   |                   | \n",
            "(1 row)\n",
            "\n",
        )
    );
}

#[test]
fn list_databases_schemas_and_roles() {
    let server = server_with_tables("psql_meta_databases");
    let l = meta(&server, "\\l");
    let lines: Vec<&str> = l.lines().collect();
    assert_eq!(lines[0].trim(), "List of databases");
    assert_eq!(
        lines[1],
        "   Name   |  Owner   | Encoding | Collate | Ctype | ICU Locale | Locale Provider | Access privileges "
    );
    assert_eq!(
        lines[3],
        " postgres | postgres | UTF8     | C       | C     |            | libc            | "
    );
    assert_eq!(lines[4], "(1 row)");
    let lplus = meta(&server, "\\l+");
    assert!(
        lplus
            .lines()
            .nth(1)
            .unwrap_or("")
            .ends_with("| Tablespace |                Description                 "),
        "{lplus}"
    );
    assert!(
        lplus.contains("| pg_default | default administrative connection database\n"),
        "{lplus}"
    );

    // Exactly PostgreSQL 18's output.
    assert_eq!(
        meta(&server, "\\dn"),
        concat!(
            "      List of schemas\n",
            "  Name  |       Owner       \n",
            "--------+-------------------\n",
            " public | pg_database_owner\n",
            "(1 row)\n",
            "\n",
        )
    );
    assert_eq!(
        meta(&server, "\\dn+"),
        concat!(
            "                                       List of schemas\n",
            "  Name  |       Owner       |           Access privileges            |      Description       \n",
            "--------+-------------------+----------------------------------------+------------------------\n",
            " public | pg_database_owner | pg_database_owner=UC/pg_database_owner+| standard public schema\n",
            "        |                   | =U/pg_database_owner                   | \n",
            "(1 row)\n",
            "\n",
        )
    );
    let du = meta(&server, "\\du");
    assert!(
        du.contains(
            " postgres  | Superuser, Create role, Create DB, Replication, Bypass RLS | {}\n"
        ),
        "{du}"
    );
    let db = meta(&server, "\\db");
    assert!(
        db.contains(" pg_default | postgres | \n") && db.contains("(2 rows)"),
        "{db}"
    );
    assert!(meta(&server, "\\dx").contains("(0 rows)"));
    assert!(meta(&server, "\\df").contains("(0 rows)"));
}

#[test]
fn system_functions() {
    let server = server_with_tables("psql_meta_functions");
    let one = |sql: &str| {
        server
            .psql_ok(&["-At", "-c", sql])
            .trim_end_matches('\n')
            .to_string()
    };
    assert!(one("SELECT version()").starts_with("PostgreSQL 18"));
    assert_eq!(one("SELECT pg_catalog.current_setting('work_mem')"), "4MB");
    assert_eq!(one("SELECT current_setting('no.such', true) IS NULL"), "t");
    let err = server.psql(&["-c", "SELECT current_setting('nosuch')"]);
    assert!(
        String::from_utf8_lossy(&err.stderr)
            .contains("unrecognized configuration parameter \"nosuch\""),
        "{}",
        String::from_utf8_lossy(&err.stderr)
    );
    // set_config changes the session's setting, as SET does.
    let out = server.psql_ok(&[
        "-At",
        "-c",
        "SELECT set_config('work_mem', '8MB', false)",
        "-c",
        "SHOW work_mem",
    ]);
    assert_eq!(out, "8MB\n8MB\n");
    assert_eq!(
        one("SELECT current_user, session_user, user, current_database(), current_schema"),
        "postgres|postgres|postgres|postgres|public"
    );
    assert_eq!(one("SELECT pg_backend_pid() > 0"), "t");
    assert_eq!(
        one("SELECT pg_size_pretty(pg_relation_size('t2'))"),
        "8192 bytes"
    );
    assert_eq!(one("SELECT pg_size_pretty(1431306240::bigint)"), "1365 MB");
    assert_eq!(one("SELECT pg_total_relation_size('t2'::regclass)"), "8192");
    assert_eq!(
        one("SELECT 't2'::regclass::text, format_type('varchar'::regtype, 24)"),
        "t2|character varying(20)"
    );
    assert_eq!(
        one("SELECT relname FROM pg_class WHERE oid = 'eic_uniform'::regclass"),
        "eic_uniform"
    );
    // Shown by name, in columns named as PostgreSQL names them (psql's header line).
    let out = server.psql_ok(&[
        "-A",
        "-c",
        "SELECT 't2'::regclass, c.oid::regclass, 'int4'::regtype AS t, c.relnamespace::regnamespace \
         FROM pg_class c WHERE c.relname = 'eic_uniform'",
    ]);
    assert_eq!(
        out.lines().take(2).collect::<Vec<_>>(),
        [
            "regclass|oid|t|relnamespace",
            "t2|eic_uniform|integer|public"
        ]
    );
    assert_eq!(
        one("SELECT quote_ident('Foo'), pg_get_userbyid(10), pg_encoding_to_char(6)"),
        "\"Foo\"|postgres|UTF8"
    );
    assert_eq!(
        one("SELECT column_name, data_type, udt_name FROM information_schema.columns WHERE table_name = 't2' ORDER BY ordinal_position"),
        "id|integer|int4\nv|character varying|varchar"
    );
    assert_eq!(
        one("SELECT setting FROM pg_settings WHERE name = 'work_mem'"),
        "4096"
    );
}

/// Drivers plan statements at Parse/Describe (the extended protocol): the catalog views
/// and functions must be there too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_through_the_extended_protocol() {
    let server = server_with_tables("psql_meta_extended");
    let client = server.client().await;
    let row = client
        .query_one(
            "SELECT current_setting('work_mem'), pg_size_pretty(pg_relation_size('t2'))",
            &[],
        )
        .await
        .expect("functions plan at Describe");
    assert_eq!(row.get::<_, String>(0), "4MB");
    assert_eq!(row.get::<_, String>(1), "8192 bytes");
    let rows = client
        .query(
            "SELECT column_name, data_type, udt_name FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position",
            &[&"public", &"t2"],
        )
        .await
        .expect("information_schema with parameters");
    let columns: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(
        columns,
        vec![
            ("id".into(), "integer".into(), "int4".into()),
            ("v".into(), "character varying".into(), "varchar".into()),
        ]
    );
}
