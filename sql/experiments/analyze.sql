-- Experiment "analyze" (seed 000): a cold ANALYZE VERBOSE of eic_uniform (created by eic.sql),
-- a table several times shared_buffers, with read-stream look-ahead on
-- (maintenance_io_concurrency = 16, the default) or off (0). iolab-bench also runs it with the
-- device's readahead as it is and set to 0 (/sys/block/DEV/queue/read_ahead_kb, what
-- `blockdev --setra 0` sets), and restores the old value afterwards.
--
-- By hand (the INFO lines carry "I/O timings: read: … ms", "avg read rate: … MB/s" and
-- "buffer usage: … hits, … reads"):
--   psql -v mic=0 -f sql/experiments/analyze.sql
-- Cold runs: empty the buffer pool and the page cache first (see eic.sql).
\if :{?mic} \else \set mic 16 \endif
-- @run
SET maintenance_io_concurrency = :mic;
SET track_io_timing = on;
ANALYZE VERBOSE eic_uniform;
