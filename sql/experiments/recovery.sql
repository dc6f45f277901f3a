-- Experiment "recovery" (seed 003): reserved. It needs WAL, which iolab does not have yet;
-- iolab-bench keeps a slot for it and reports "reserved: needs WAL (not built yet)".
-- @run
SELECT 'reserved: needs WAL (not built yet)' AS recovery;
