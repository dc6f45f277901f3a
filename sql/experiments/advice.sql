-- Experiment "advice" (seed 002): a bitmap heap scan whose matching tuples lie in runs of two
-- adjacent blocks followed by a gap of six ("two sequential reads, gap, two sequential reads"),
-- at effective_io_concurrency 16, under one read_stream_advice policy (iolab's setting:
-- pg18 = PostgreSQL 18's rule, the default; pg17 = PostgreSQL 17's rule; always; never).
-- Advice (posix_fadvise WILLNEED) is issued only under io_method = sync, so run the server with it.
-- PostgreSQL 18 has no such setting: it always follows its own rule (pg18).
--
-- By hand:
--   psql -v load=1 -v rows=2000000 -f sql/experiments/advice.sql      create the table, one run
--   psql -v policy=pg17 -f sql/experiments/advice.sql                  another policy (iolab only)
-- Cold runs: empty the buffer pool and the page cache first (see eic.sql).
--
-- The table is loaded in order (ORDER BY i) with 120 tuples of this width per 8 KiB page, so
-- block b holds rows 120·b+1 … 120·b+120 and a = 1 exactly in the blocks with b % 8 < 2.
\if :{?rows} \else \set rows 2000000 \endif
\if :{?policy} \else \set policy pg18 \endif
\set first 1
\set last :rows
\if :{?load}
-- @create
DROP TABLE IF EXISTS advice_cyclic;
CREATE UNLOGGED TABLE advice_cyclic(a INT, filler TEXT);
-- @fill
INSERT INTO advice_cyclic
  SELECT CASE WHEN ((i - 1) / 120) % 8 < 2 THEN 1 ELSE 2 + i % 1000 END, md5(i::text)
  FROM generate_series(:first, :last) AS T(i) ORDER BY i;
-- @finish
VACUUM ANALYZE advice_cyclic;
CREATE INDEX ON advice_cyclic(a);
CHECKPOINT;
\endif
-- @run
SET work_mem = '64MB';
SET max_parallel_workers_per_gather = 0;
SET track_io_timing = on;
SET enable_seqscan = off;
SET enable_indexscan = off;
SET effective_io_concurrency = 16;
SET read_stream_advice = :'policy';
EXPLAIN (ANALYZE, BUFFERS, SETTINGS, COSTS OFF) SELECT * FROM advice_cyclic WHERE a = 1 AND filler > 'fffffff';
-- @blocks
SELECT count(DISTINCT split_part(trim(BOTH '()' FROM ctid::text), ',', 1)) FROM advice_cyclic WHERE a = 1;
