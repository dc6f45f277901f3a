-- Experiment "aio" (seed 004): a cold sequential scan, SELECT count(*) of eic_uniform (created
-- by eic.sql). iolab-bench runs it under io_method sync, worker and io_uring, each with buffered
-- I/O and with direct I/O (debug_io_direct = data, huge_pages = try), all restart-only settings,
-- and beside fio's sequential read of a file of the table's size on the same file system with
-- the same request size (io_combine_limit).
--
-- By hand, against a server started with the settings you want (in psql, \timing on shows
-- the time; MB/s = pg_relation_size / time):
--   psql -f sql/experiments/aio.sql
-- Cold runs: empty the buffer pool and the page cache first (see eic.sql).
-- @run
SET max_parallel_workers_per_gather = 0;
SELECT count(*) FROM eic_uniform;
-- @size
SELECT pg_relation_size('eic_uniform');
