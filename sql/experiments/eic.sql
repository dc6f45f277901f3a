-- Experiment "eic" (seed 001): the bitmap heap scan of eic_uniform under one
-- effective_io_concurrency. iolab-bench runs it cold for eic 0, 1, 16, 64, 256, 512 under every
-- io_method, for the dense predicate (a < 140: ~82 % of the heap) and the sparse one (a < 5).
--
-- By hand, against a server started with the io_method you want:
--   psql -v load=1 -v rows=2000000 -f sql/experiments/eic.sql          create the table, one run
--   psql -v eic=256 -v predicate='a < 5' -f sql/experiments/eic.sql     another run
-- For a cold run, first empty the buffer pool and the page cache:
--   SELECT count(*) FROM pg_buffercache_evict_all();     (PostgreSQL: CREATE EXTENSION pg_buffercache)
--   sync; echo 3 > /proc/sys/vm/drop_caches              (as root)
--
-- iolab-bench reads the sections marked "-- @name" below and fills in the same variables
-- (:rows, :first, :last, :eic, :predicate); it skips the psql meta-commands.
\if :{?rows} \else \set rows 2000000 \endif
\if :{?eic} \else \set eic 16 \endif
\if :{?predicate} \else \set predicate 'a < 140' \endif
\set first 1
\set last :rows
\if :{?load}
-- @create
DROP TABLE IF EXISTS eic_uniform;
CREATE UNLOGGED TABLE eic_uniform(a INT, filler TEXT);
-- @fill (iolab-bench runs it once per chunk of rows :first..:last, to show progress)
INSERT INTO eic_uniform SELECT 10000 * random(), md5(i::text) FROM generate_series(:first, :last) AS T(i);
-- @finish
VACUUM ANALYZE eic_uniform;
CREATE INDEX ON eic_uniform(a);
CHECKPOINT;
\endif
-- @run
SET work_mem = '16MB';
SET max_parallel_workers_per_gather = 0;
SET track_io_timing = on;
SET effective_io_concurrency = :eic;
EXPLAIN (ANALYZE, BUFFERS, SETTINGS, COSTS OFF) SELECT * FROM eic_uniform WHERE :predicate AND filler > 'fffffff';
-- @blocks (the heap blocks holding rows that match the index condition: Heap Blocks must equal it)
SELECT count(DISTINCT split_part(trim(BOTH '()' FROM ctid::text), ',', 1)) FROM eic_uniform WHERE :predicate;
