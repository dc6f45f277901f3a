-- Experiment "recovery" (seed 003): how much redo's read-ahead (recovery_prefetch) speeds up
-- crash recovery. A permanent (logged) table several times larger than shared_buffers is
-- loaded and checkpointed; then one transaction updates one random row per 8 pages of the
-- table, so the WAL after the checkpoint references random existing heap pages (and the index
-- leaf pages of the keys); with full_page_writes = off no record carries a page image, so redo
-- must read each page. The server is then killed (kill -9) and restarted on a copy of its
-- crashed data directory, cold, with recovery_prefetch off or on and maintenance_io_concurrency
-- 16 or 64; redo's time is in the server log:
--   redo done at 0/2B03158 system usage: CPU: user: 0.74 s, system: 0.17 s, elapsed: 0.94 s
-- (iolab adds a line "redo replayed N records changing M pages; read-ahead: prefetch=… hit=…";
-- PostgreSQL 18 keeps those counters in pg_stat_recovery_prefetch).
--
-- By hand (docs/experiments.md §5 has the whole sequence): start the server with
--   -c full_page_writes=off -c max_wal_size=4096 -c checkpoint_timeout=86400
-- so that no checkpoint comes between the load and the crash, then
--   psql -v load=1 -v rows=2000000 -f sql/experiments/recovery.sql   load, checkpoint, update, check
-- kill -9 the server, copy its data directory, drop the page cache, start it on the copy with
-- -c recovery_prefetch=on (or off) -c maintenance_io_concurrency=16, and
--   psql -f sql/experiments/recovery.sql                              check the recovered table
-- The check must show the same two numbers after the restart as before the crash.
--
-- iolab-bench reads the sections marked "-- @name" below and fills in the same variables
-- (:rows, :first, :last, :updates); it skips the psql meta-commands and, as \gexec does, runs
-- each UPDATE the @updates query returns (in batches, inside the one transaction).
\if :{?rows} \else \set rows 2000000 \endif
\set first 1
\set last :rows
\if :{?load}
-- @create
DROP TABLE IF EXISTS recovery_uniform;
CREATE TABLE recovery_uniform(a INT, filler TEXT);
-- @fill (iolab-bench runs it once per chunk of rows :first..:last, to show progress)
INSERT INTO recovery_uniform SELECT i, md5(i::text) FROM generate_series(:first, :last) AS T(i);
-- @finish (VACUUM before the checkpoint sets hint bits and the visibility map, so the WAL after
-- it holds the updates' own records; the last query is the number of updates: one per 8 pages)
CREATE INDEX ON recovery_uniform(a);
VACUUM ANALYZE recovery_uniform;
CHECKPOINT;
SELECT greatest(1, pg_relation_size('recovery_uniform') / 65536) AS updates
\gset
-- @begin
BEGIN;
-- @updates (each row is an UPDATE of one random row, found through the index)
SELECT 'UPDATE recovery_uniform SET filler = md5(filler) WHERE a = ' || (1 + floor(random() * :rows))::int
FROM generate_series(1, :updates) AS T(i)
\gexec
-- @commit
COMMIT;
\endif
-- @run (before the crash and after recovery: the rows, and the rows the updates changed)
SELECT count(*) AS row_count, sum(CASE WHEN filler <> md5(a::text) THEN 1 ELSE 0 END) AS updated_rows FROM recovery_uniform;
