"""An I/O experiment scripted the way a user would, with psycopg 3, against one server.

Run by tests/tests/python_client.rs with the port of a fresh iolab; it works the same
against PostgreSQL 18 (`--port 5433`). Every expected value is computed here, in Python,
from the rows this script generated; the script exits non-zero on the first mismatch.

    python3 tests/python/client_session.py --port PORT
"""

import argparse
import datetime
import zoneinfo
import decimal
import hashlib
import json
import sys

import psycopg
from psycopg import errors, sql

# Rows loaded by INSERT … SELECT generate_series, and by COPY FROM STDIN after them.
SERIES_ROWS = 20_000
COPY_ROWS = 3_000
# The range query EXPLAIN reads through the index.
RANGE_LIMIT = 40


def series_a(i):
    """The value of column a that the INSERT … SELECT below gives row i."""
    return (i * 7919) % 10_000


def copy_row(i):
    """Row i of the COPY: a unique key, and text that needs COPY escaping (or NULL)."""
    a = 100_000 + i
    filler = None if i % 50 == 0 else f"py\t{i}\\n\n{'é' * (i % 3)}"
    return a, filler


def check(label, got, want):
    if got != want:
        raise AssertionError(f"{label}: got {got!r}, want {want!r}")
    print(f"ok: {label}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    opts = parser.parse_args()
    conninfo = dict(host=opts.host, port=opts.port, user="postgres", dbname="postgres")

    with psycopg.connect(**conninfo, autocommit=True) as conn:
        load(conn)
        typed_values(conn)
        settings(conn)
        explain_range(conn)
        stat_io(conn)
        errors_keep_the_session(conn)
    with psycopg.connect(**conninfo, autocommit=True,
                         options="-c TimeZone=Europe/Berlin") as conn:
        time_zone(conn)
    with psycopg.connect(**conninfo) as conn:
        transactions(conn)
        server_cursors(conn)
    job_queue(conninfo)
    temporary_tables(conninfo)
    pipelines(conninfo)
    print("python client session: all checks passed")


def load(conn):
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS py_io")
    cur.execute("CREATE UNLOGGED TABLE py_io (a int, filler text)")
    # The row count is composed into the text client-side: iolab cannot yet take a
    # parameter as a table function's argument (PostgreSQL can).
    cur.execute(
        sql.SQL(
            "INSERT INTO py_io SELECT (i * 7919) % 10000, md5(i::text)"
            " FROM generate_series(1, {}) AS s(i)"
        ).format(sql.Literal(SERIES_ROWS))
    )
    check("INSERT … SELECT rowcount", cur.rowcount, SERIES_ROWS)

    md5s = [hashlib.md5(str(i).encode()).hexdigest() for i in range(1, SERIES_ROWS + 1)]
    above_f = sum(1 for h in md5s if h > "f")
    cur.execute("SELECT count(*) FROM py_io WHERE filler > %s", ("f",))
    check("md5 fillers above 'f'", cur.fetchone()[0], above_f)

    rows = [copy_row(i) for i in range(1, COPY_ROWS + 1)]
    with cur.copy("COPY py_io (a, filler) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(row)
    check("COPY FROM STDIN rowcount", cur.rowcount, COPY_ROWS)

    with cur.copy(
        "COPY (SELECT a, filler FROM py_io WHERE a >= 100000 ORDER BY a) TO STDOUT"
    ) as copy:
        copy.set_types(["int4", "text"])
        back = [tuple(r) for r in copy.rows()]
    check("COPY TO STDOUT gives back the rows COPY FROM wrote", back, rows)

    # Server-side binding (extended protocol) with binary results.
    cur.execute(
        "SELECT count(*), sum(a), min(filler) FROM py_io WHERE a < %s AND filler > %s",
        (5_000, "f"),
        binary=True,
    )
    want_rows = [(series_a(i), h) for i, h in enumerate(md5s, 1)]
    want_rows += [r for r in rows if r[0] < 5_000]
    matching = [(a, f) for a, f in want_rows if a < 5_000 and f is not None and f > "f"]
    check(
        "binary count/sum/min with bound parameters",
        cur.fetchone(),
        (len(matching), sum(a for a, _ in matching), min(f for _, f in matching)),
    )


def typed_values(conn):
    """int4, int8, float8, text, numeric, date, timestamptz, bool and NULL, both ways."""
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS py_types")
    cur.execute(
        "CREATE TABLE py_types (k int4, big int8, x float8, t text, n numeric(12,3),"
        " d date, ts timestamptz, b bool)"
    )
    utc = datetime.timezone.utc
    values = [
        (1, 2**40 + 7, 0.1 + 0.2, "héllo wörld", decimal.Decimal("-12.345"),
         datetime.date(2024, 2, 29), datetime.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=utc),
         True),
        (2, -(2**62), -1.5e300, "", decimal.Decimal("999999999.999"),
         datetime.date(1999, 12, 31), datetime.datetime(1970, 1, 1, tzinfo=utc), False),
        (3, None, None, None, None, None, None, None),
    ]
    cur.executemany("INSERT INTO py_types VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", values)
    want_oids = [23, 20, 701, 25, 1700, 1082, 1184, 16]
    for binary in (False, True):
        cur.execute("SELECT * FROM py_types ORDER BY k", binary=binary)
        kind = "binary" if binary else "text"
        check(f"{kind} result type OIDs", [d.type_code for d in cur.description], want_oids)
        got = cur.fetchall()
        # The server reports timestamptz in its TimeZone (UTC here); compare instants.
        check(f"{kind} round trip of every type and NULL", got, values)

    # Parameters with no cast take the types psycopg declares for them (int2/int8 by
    # size, float8, text, numeric, date, timestamptz, bool), as result columns too.
    for binary in (False, True):
        cur.execute("SELECT %s, %s, %s, %s, %s, %s, %s, %s", values[0], binary=binary)
        check(f"untyped parameters come back as sent ({'binary' if binary else 'text'})",
              cur.fetchone(), values[0])

    # Parameters bound in binary format (%b) to a typed expression.
    cur.execute(
        "SELECT %b::int4 + 1, %b::int8 * 2, %b::float8 / 4, %b::text || '!', %b::bool",
        (41, 2**40, 10.0, "x", False),
        binary=True,
    )
    check("binary parameters", tuple(cur.fetchone()), (42, 2**41, 2.5, "x!", False))

    # A Python list is an array both ways: `= ANY(%s)`, and array results as lists.
    for binary in (False, True):
        kind = "binary" if binary else "text"
        cur.execute(
            "SELECT count(*), array_agg(k ORDER BY k) FROM py_types WHERE k = ANY(%s)",
            ([1, 3, 99],),
            binary=binary,
        )
        check(f"list parameter and array result ({kind})", cur.fetchone(), (2, [1, 3]))
        check(f"array result type OID ({kind})", cur.description[1].type_code, 1007)
    # psycopg sends a list of strings, and an empty list, untyped: the server types it
    # as an array of the compared column's type, as PostgreSQL does.
    cur.execute("SELECT count(*) FROM py_types WHERE t = ANY(%s)", (["héllo wörld", "", "x"],))
    check("list of strings as an untyped array", cur.fetchone(), (2,))
    cur.execute("SELECT count(*) FROM py_types WHERE k = ANY(%s)", ([],))
    check("empty list: ANY is false", cur.fetchone(), (0,))
    cur.execute("SELECT count(*) FROM py_types WHERE k <> ALL(%s)", ([],))
    check("empty list: ALL is true", cur.fetchone(), (3,))


def time_zone(conn):
    """A session in a zone with daylight saving, set at connection as drivers do."""
    check("TimeZone reported to the client", conn.info.parameter_status("TimeZone"),
          "Europe/Berlin")
    cur = conn.cursor()
    berlin = zoneinfo.ZoneInfo("Europe/Berlin")
    # Text sent as a timestamptz is read on Berlin's wall clock; a timedelta goes in binary.
    cur.execute("SELECT %t::timestamptz, %s::timestamptz + %s::interval * 2, "
                "extract(hour from %s::timestamptz)",
                ("2024-07-01 12:00", datetime.datetime(2024, 3, 30, 12, 0, tzinfo=berlin),
                 datetime.timedelta(hours=12), datetime.datetime(2024, 1, 1, 0, 30, tzinfo=datetime.timezone.utc)))
    noon, next_day, hour = cur.fetchone()
    check("text timestamptz read in the session's zone", noon,
          datetime.datetime(2024, 7, 1, 12, 0, tzinfo=berlin))
    # 24 hours from noon before the change to summer time is 13:00 after it.
    check("interval arithmetic across the change", next_day,
          datetime.datetime(2024, 3, 31, 13, 0, tzinfo=berlin))
    check("extract is a numeric on the wall clock", hour, decimal.Decimal(1))
    # An interval column keeps timedeltas, returned as timedeltas in text and binary.
    cur.execute("DROP TABLE IF EXISTS py_runs")
    cur.execute("CREATE TABLE py_runs (took interval)")
    took = datetime.timedelta(days=1, seconds=3, microseconds=250000)
    cur.execute("INSERT INTO py_runs VALUES (%s)", (took,))
    for binary in (False, True):
        cur.execute("SELECT took, took * 2 FROM py_runs", binary=binary)
        check(f"interval column ({'binary' if binary else 'text'})", cur.fetchone(),
              (took, took * 2))


def settings(conn):
    cur = conn.cursor()
    cur.execute("SET effective_io_concurrency = 7")
    check("SHOW after SET", cur.execute("SHOW effective_io_concurrency").fetchone()[0], "7")
    cur.execute("SELECT set_config('effective_io_concurrency', %s, false)", ("32",))
    check("set_config", cur.execute("SHOW effective_io_concurrency").fetchone()[0], "32")
    cur.execute("RESET effective_io_concurrency")
    check("RESET", cur.execute("SHOW effective_io_concurrency").fetchone()[0], "16")


def plan_nodes(plan):
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def explain_range(conn):
    cur = conn.cursor()
    cur.execute("CREATE INDEX py_io_a ON py_io (a)")
    cur.execute("ANALYZE py_io")
    want = sum(1 for i in range(1, SERIES_ROWS + 1) if series_a(i) < RANGE_LIMIT)
    cur.execute(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT * FROM py_io WHERE a < %s",
        (RANGE_LIMIT,),
    )
    document = cur.fetchone()[0]
    # The column is a json, as PostgreSQL types it: psycopg hands over the parsed document.
    check("EXPLAIN (FORMAT JSON) column type", cur.description[0].type_code, 114)
    if not isinstance(document, list):
        raise AssertionError(f"EXPLAIN (FORMAT JSON) gave a {type(document).__name__}")
    top = document[0]["Plan"]
    scans = [n for n in plan_nodes(top) if n["Node Type"] in ("Bitmap Heap Scan", "Index Scan")]
    if not scans:
        raise AssertionError(f"no index-driven scan in {json.dumps(top, indent=1)}")
    scan = scans[0]
    check("EXPLAIN scan relation", scan["Relation Name"], "py_io")
    check("EXPLAIN Actual Rows", scan["Actual Rows"], want)
    touched = scan["Shared Hit Blocks"] + scan["Shared Read Blocks"]
    if touched <= 0:
        raise AssertionError(f"the scan touched no buffers: {scan}")
    print(f"ok: {scan['Node Type']} touched {touched} buffers")
    cur.execute("SELECT count(*) FROM py_io WHERE a < %s", (RANGE_LIMIT,))
    check("the query itself counts the same", cur.fetchone()[0], want)


def stat_io(conn):
    cur = conn.cursor(binary=True)
    # PostgreSQL publishes a backend's counters when it goes idle, at most once a second
    # unless asked to; iolab's are current (the call does nothing there).
    flush = "SELECT pg_stat_force_next_flush()"
    cur.execute(flush)
    query = (
        "SELECT reads, read_bytes, read_time, hits FROM pg_stat_io"
        " WHERE backend_type = 'client backend' AND object = 'relation'"
        " AND context = 'normal'"
    )
    cur.execute(query)
    check(
        "pg_stat_io column types (bigint, numeric, double precision, bigint)",
        [d.type_code for d in cur.description],
        [20, 1700, 701, 20],
    )
    reads, read_bytes, read_time, hits = cur.fetchone()
    check("typed pg_stat_io values", (type(reads), type(read_time), type(hits)), (int, float, int))
    # One read may combine several blocks (io_combine_limit), so bytes ≥ reads × 8 kB.
    if read_bytes % 8192 != 0 or read_bytes < reads * 8192:
        raise AssertionError(f"read_bytes {read_bytes} for {reads} reads")

    # A scan of the whole table finds every one of its pages (hit or read).
    pages = cur.execute("SELECT pg_relation_size('py_io') / 8192").fetchone()[0]
    cur.execute("SELECT count(*) FROM py_io")
    check("count(*) of all rows", cur.fetchone()[0], SERIES_ROWS + COPY_ROWS)
    cur.execute(flush)
    after_reads, _, _, after_hits = cur.execute(query).fetchone()
    seen = (after_reads - reads) + (after_hits - hits)
    if seen < pages:
        raise AssertionError(f"pg_stat_io counted {seen} buffer accesses for {pages} pages")
    print(f"ok: pg_stat_io counted {seen} accesses for a scan of {pages} pages")


def errors_keep_the_session(conn):
    cur = conn.cursor()
    try:
        cur.execute("SELECT * FROM py_no_such_table")
        raise AssertionError("selecting from a missing table succeeded")
    except errors.UndefinedTable as e:
        check("missing table SQLSTATE", e.sqlstate, "42P01")
    try:
        cur.execute("SELECT %s::int", ("twelve",))
        raise AssertionError("casting 'twelve' to int succeeded")
    except errors.InvalidTextRepresentation as e:
        check("bad integer SQLSTATE", e.sqlstate, "22P02")
    check("the connection goes on working", cur.execute("SELECT 6 * 7").fetchone()[0], 42)


def transactions(conn):
    """A connection that is not in autocommit: psycopg opens a block per transaction."""
    cur = conn.cursor()
    before = cur.execute("SELECT count(*) FROM py_io").fetchone()[0]
    conn.commit()
    cur.execute("INSERT INTO py_io SELECT i, 'rolled back' FROM generate_series(1, 500) AS s(i)")
    check("rows visible inside the transaction",
          cur.execute("SELECT count(*) FROM py_io").fetchone()[0], before + 500)
    conn.rollback()
    check("ROLLBACK leaves no rows", cur.execute("SELECT count(*) FROM py_io").fetchone()[0], before)
    conn.commit()

    try:
        with conn.transaction():
            cur.execute("INSERT INTO py_io VALUES (%s, %s)", (-1, "inside"))
            cur.execute("SELECT * FROM py_no_such_table")
    except errors.UndefinedTable:
        pass
    check("an error rolls the transaction block back",
          cur.execute("SELECT count(*) FROM py_io WHERE a = -1").fetchone()[0], 0)
    conn.rollback()

    try:
        cur.execute("SELECT * FROM py_no_such_table")
    except errors.UndefinedTable:
        pass
    try:
        cur.execute("SELECT 1")
        raise AssertionError("a statement after an error in a block ran")
    except errors.InFailedSqlTransaction as e:
        check("statement in a failed block SQLSTATE", e.sqlstate, "25P02")
    conn.rollback()

    with conn.transaction():
        cur.execute("INSERT INTO py_io VALUES (%s, %s)", (-2, "kept"))
    check("a committed transaction block keeps its row",
          cur.execute("SELECT filler FROM py_io WHERE a = -2").fetchall(), [("kept",)])
    conn.commit()

    # Nested transaction() blocks are savepoints: a failing one is rolled back to its
    # savepoint and the outer block goes on (the insert-or-skip loop of many scripts).
    with conn.transaction():
        for i in range(-10, -3):
            try:
                with conn.transaction():
                    cur.execute("INSERT INTO py_io VALUES (%s, %s)", (i, "nested"))
                    if i % 2 == 0:
                        cur.execute("SELECT 1 / 0")
            except errors.DivisionByZero:
                pass
        with conn.transaction(force_rollback=True):
            cur.execute("DELETE FROM py_io WHERE filler = 'nested'")
    check("nested blocks keep the rows of those that did not fail",
          [r[0] for r in cur.execute(
              "SELECT a FROM py_io WHERE filler = 'nested' ORDER BY a").fetchall()],
          [-9, -7, -5])
    conn.commit()

# Jobs the queue workers share, and how many workers take them at once.
QUEUE_JOBS = 60
QUEUE_WORKERS = 4


def server_cursors(conn):
    """Named (server-side) cursors, how a script reads a result too big to hold: rows come
    in batches of `itersize` through DECLARE and FETCH, in text and in binary; a WITH HOLD
    cursor is read after its transaction commits."""
    want = sorted(
        (series_a(i), hashlib.md5(str(i).encode()).hexdigest())
        for i in range(1, SERIES_ROWS + 1)
        if series_a(i) < 500
    )
    query = "SELECT a, filler FROM py_io WHERE a BETWEEN 0 AND %s ORDER BY a, filler"
    with conn.cursor("py_range") as cur:
        cur.itersize = 97
        cur.execute(query, (499,))
        check("a named cursor's columns", [c.name for c in cur.description], ["a", "filler"])
        check("a named cursor's rows, fetched 97 at a time", list(cur), want)
    with conn.cursor("py_binary", binary=True) as cur:
        cur.execute(query, (499,))
        check("binary FETCH of the first rows", cur.fetchmany(5), want[:5])
        listed = conn.execute("SELECT name, is_holdable FROM pg_cursors").fetchall()
        check("pg_cursors lists the open cursor", listed, [("py_binary", False)])
        check("binary FETCH of the rest", cur.fetchall(), want[5:])
    conn.commit()
    with conn.cursor("py_held", withhold=True) as cur:
        cur.execute(query, (9,))
        conn.commit()
        check("a WITH HOLD cursor read after COMMIT", list(cur), [r for r in want if r[0] <= 9])
    conn.commit()


def job_queue(conninfo):
    """The job queue of PostgreSQL folklore: workers, each in its own connection and
    thread, take the first job nobody holds (FOR UPDATE SKIP LOCKED), mark it done and
    commit, until none is left. Every job must be done exactly once, by the worker that
    took it."""
    import threading

    with psycopg.connect(**conninfo, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS py_jobs")
        conn.execute("CREATE TABLE py_jobs (id int PRIMARY KEY, state text, worker int)")
        conn.execute(
            "INSERT INTO py_jobs SELECT i, 'new', NULL FROM generate_series(1, %s) AS s(i)"
            % QUEUE_JOBS
        )
    taken = [[] for _ in range(QUEUE_WORKERS)]
    failures = []

    def work(me):
        try:
            with psycopg.connect(**conninfo) as conn:
                while True:
                    with conn.transaction():
                        row = conn.execute(
                            "SELECT id FROM py_jobs WHERE state = %s ORDER BY id"
                            " LIMIT 1 FOR UPDATE SKIP LOCKED",
                            ("new",),
                        ).fetchone()
                        if row is None:
                            return
                        conn.execute(
                            "UPDATE py_jobs SET state = 'done', worker = %s WHERE id = %s",
                            (me, row[0]),
                        )
                    taken[me].append(row[0])
        except Exception as e:  # reported by the main thread
            failures.append(f"worker {me}: {e!r}")

    threads = [threading.Thread(target=work, args=(w,)) for w in range(QUEUE_WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    check("job queue workers failed", failures, [])
    every = sorted(i for mine in taken for i in mine)
    check("job queue: each job taken once", every, list(range(1, QUEUE_JOBS + 1)))
    with psycopg.connect(**conninfo, autocommit=True) as conn:
        done = conn.execute(
            "SELECT worker, id FROM py_jobs WHERE state = 'done' ORDER BY worker, id"
        ).fetchall()
    want = [(w, i) for w, mine in enumerate(taken) for i in sorted(mine)]
    check("job queue: done by the worker that took it", done, want)


def temporary_tables(conninfo):
    """A script's scratch table: CREATE TEMP TABLE, filled with executemany and COPY,
    read back, its blocks counted as local in EXPLAIN; gone in the next connection."""
    with psycopg.connect(**conninfo, autocommit=True) as conn:
        conn.execute("CREATE TEMP TABLE py_scratch (run int, ms float8)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO py_scratch VALUES (%s, %s)",
                            [(i, i * 0.5) for i in range(100)])
            with cur.copy("COPY py_scratch (run, ms) FROM STDIN") as copy:
                for i in range(100, 200):
                    copy.write_row((i, i * 0.5))
        check("temporary table rows",
              conn.execute("SELECT count(*), sum(ms) FROM py_scratch").fetchone(),
              (200, 9950.0))
        plan = [r[0] for r in conn.execute(
            "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) SELECT * FROM py_scratch")]
        check("temporary table blocks are local",
              any(line.strip().startswith("Buffers: local hit=") for line in plan), True)
    with psycopg.connect(**conninfo, autocommit=True) as conn:
        check("temporary table gone with its session",
              conn.execute("SELECT to_regclass('py_scratch')").fetchone(), (None,))


def pipelines(conninfo):
    """The statements a pipeline sends before its Sync share one transaction, as in
    PostgreSQL: executemany (a pipeline in psycopg) inserts all of its rows or none, and
    from the second statement on they are in an implicit block, which VACUUM refuses."""
    with psycopg.connect(**conninfo, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS py_pipe")
        conn.execute("CREATE TABLE py_pipe (a int)")
        count = lambda: conn.execute("SELECT count(*) FROM py_pipe").fetchone()[0]
        with conn.cursor() as cur:
            try:
                cur.executemany("INSERT INTO py_pipe VALUES (%s)", [(1,), (2,), ("x",), (4,)])
                raise AssertionError("executemany with a bad row succeeded")
            except errors.InvalidTextRepresentation as e:
                check("executemany's bad row SQLSTATE", e.sqlstate, "22P02")
            check("a failed executemany inserts nothing", count(), 0)
            cur.executemany("INSERT INTO py_pipe VALUES (%s)", [(i,) for i in range(5)])
            check("executemany inserts every row", count(), 5)
        try:
            with conn.pipeline():
                conn.execute("INSERT INTO py_pipe VALUES (10)")
                conn.execute("VACUUM py_pipe")
            raise AssertionError("VACUUM second in a pipeline succeeded")
        except errors.ActiveSqlTransaction as e:
            check("VACUUM in a pipeline", str(e), "VACUUM cannot run inside a transaction block")
        check("the pipeline's INSERT rolled back with it", count(), 5)
        with conn.pipeline():
            conn.execute("VACUUM py_pipe")
            conn.execute("INSERT INTO py_pipe VALUES (11)")
            conn.execute("LOCK TABLE py_pipe IN SHARE MODE")
            conn.execute("DECLARE py_cur CURSOR FOR SELECT a FROM py_pipe")
        check("VACUUM first, LOCK and DECLARE later in a pipeline", count(), 6)
        try:
            with conn.pipeline():
                conn.execute("INSERT INTO py_pipe VALUES (12)")
                conn.execute("SAVEPOINT py_s")
            raise AssertionError("SAVEPOINT in a pipeline succeeded")
        except errors.NoActiveSqlTransaction as e:
            check("SAVEPOINT in a pipeline", e.sqlstate, "25P01")
        check("the INSERT before it rolled back", count(), 6)


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)

