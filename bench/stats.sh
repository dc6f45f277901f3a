#!/usr/bin/env bash
# Statistics benchmark (issue 5): what the statistics views cost while I/O runs, and what
# the history sampler costs the I/O. Prints one table and writes it into bench/results/.
# Asserts nothing.
#
#   1. latency (p50 / p99 over pgbench's per-query log) of `SELECT * FROM pg_stat_io` while
#      a count(*) scan loops on another connection (goal p99 < 1 ms), its buffer pool
#      emptied before each scan. SCAN=direct (the default) runs the server with direct I/O
#      (debug_io_direct = data), so every scan of the loop is cold, read from the disk —
#      the issue's condition; SCAN=page-cached runs it buffered, so after the first scan the
#      table comes from the page cache and the scan keeps both CPUs busy, which is harder
#      on latency than a scan waiting for the disk. After the loop, the server's CPU time
#      per query with no scan running (CPU_RUNS queries: a figure this machine's noise
#      hardly moves);
#   2. the same for a one-hour history panel (goal p99 < 5 ms): a Grafana
#      `$__timeGroupAlias(time, '1m')` query over pg_stat_io_history. To get an hour's
#      worth of samples without waiting an hour, the server samples every 100 ms for
#      FILL seconds: 360 s of that is 3 600 samples, the count of one hour at the default
#      1 s (the script prints the rows the panel read);
#   3. the cold scan's time with the sampler on (stats_history_interval = 1 s) against off
#      (0), alternating RUNS times each (goal: slowdown < 2 %); and the same scan with the
#      table in the page cache (only the buffer pool emptied), which is CPU-bound and so
#      varies far less than the cold one on this machine's disk;
#   4. beside it, PostgreSQL 18 (../shared/tools/pg18-reference, its own copy of the table,
#      io_method worker, direct I/O as iolab's with SCAN=direct): `SELECT * FROM pg_stat_io`
#      during the same loop of scans there.
#
#   bench/stats.sh [--small]     (--small: 1 M rows, FILL 20 s, 10 s of pgbench, 3 runs)
#
# Environment (defaults in brackets):
#   ROWS [20000000]  FILL [360]  DURATION [20] (s of pgbench per query)  RUNS [5]  CPU_RUNS [2000]
#   IOLAB_BIN [target/release/iolab]  BENCH_DIR [/var/tmp/iolab-stats-bench]
#   SHARED_BUFFERS [128MB]  IO_METHOD [worker]  SCAN [direct | page-cached]  IOLAB_PORT [55451]
#   SKIP_PG18=1  PG18 [../shared/tools/pg18-reference]  PG18_BENCH_PORT [5436]
#
# Needs psql and pgbench (postgresql-client), a release build (cargo build --release --bin
# iolab; IOLAB_BIN=target/debug/iolab works for a quick check). As root it drops the page
# cache before every cold scan; otherwise only the buffer pool is emptied (the scan then
# reads from the page cache) and the script says so.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"

# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
parse_small_flag 35 "$@"
if [ "$SMALL" = 1 ]; then
  ROWS="${ROWS:-1000000}"; FILL="${FILL:-20}"; DURATION="${DURATION:-10}"; RUNS="${RUNS:-3}"
fi
ROWS="${ROWS:-20000000}"
FILL="${FILL:-360}"
DURATION="${DURATION:-20}"
RUNS="${RUNS:-5}"
CPU_RUNS="${CPU_RUNS:-2000}"
IOLAB_BIN="${IOLAB_BIN:-target/release/iolab}"
BENCH_DIR="${BENCH_DIR:-/var/tmp/iolab-stats-bench}"
SHARED_BUFFERS="${SHARED_BUFFERS:-128MB}"
IO_METHOD="${IO_METHOD:-worker}"
SCAN="${SCAN:-direct}"
case "$SCAN" in
  direct) LOOP_IO=(-c debug_io_direct=data) ;;
  page-cached) LOOP_IO=() ;;
  *) echo "SCAN is direct or page-cached, not $SCAN" >&2; exit 1 ;;
esac
IOLAB_PORT="${IOLAB_PORT:-55451}"
SKIP_PG18="${SKIP_PG18:-0}"
PG18="${PG18:-$REPO/../shared/tools/pg18-reference}"
PG18_BENCH_PORT="${PG18_BENCH_PORT:-5436}"
TABLE=stats_bench

STAMP="$(date +%Y%m%d-%H%M%S)"
RESULTS="$REPO/bench/results"
OUT="$RESULTS/stats-$STAMP.txt"
mkdir -p "$RESULTS" "$BENCH_DIR"
DATA="$BENCH_DIR/data-$ROWS"
WORK="$(mktemp -d)"
SCANNER_PID=""

cleanup() {
  [ -n "$SCANNER_PID" ] && kill "$SCANNER_PID" 2>/dev/null || true
  iolab_stop
  [ "$PG18_RUNNING" = 1 ] && pg_stop
  rm -rf "$WORK"
}
trap cleanup EXIT

[ -x "$IOLAB_BIN" ] || { echo "no $IOLAB_BIN: cargo build --release --bin iolab" >&2; exit 1; }
command -v pgbench >/dev/null || { echo "pgbench is missing (apt-get install postgresql-client)" >&2; exit 1; }

IOLAB_DATA="$DATA"
LOGS="$BENCH_DIR"
START_TIMEOUT=120
# start_server INTERVAL [ARGS...] : iolab with stats_history_interval = INTERVAL (ms; 0 = no
# sampler) and ARGS.
start_server() {
  local interval=$1; shift
  iolab_start "stats_history_interval=$interval" -c io_method="$IO_METHOD" \
    -c stats_history_interval="$interval" "$@" \
    || { echo "iolab did not start ($START_ERR); see $LOGS/iolab.log" >&2; exit 1; }
}

COLD_NOTE="page cache dropped before each cold scan"
make_cold() {
  q iolab "SELECT count(*) FROM pg_buffercache_evict_all()" >/dev/null
  if [ "$(id -u)" = 0 ]; then
    drop_caches
  else
    COLD_NOTE="not root: buffer pool emptied, page cache warm"
  fi
}

# scan_ms cold|warm : one count(*) after emptying the buffer pool, and for `cold` the
# page cache too (see make_cold).
scan_ms() {
  if [ "$1" = cold ]; then make_cold; else q iolab "SELECT count(*) FROM pg_buffercache_evict_all()" >/dev/null; fi
  local t0 t1
  t0=$(date +%s%N)
  q iolab "SELECT count(*) FROM $TABLE" >/dev/null
  t1=$(date +%s%N)
  echo $(( (t1 - t0) / 1000000 ))
}

# p50 and p99 in ms of a pgbench per-transaction log (column 3 = latency in µs)
percentiles() {
  cat "$@" | awk '{print $3}' | sort -n | awk '
    { v[NR] = $1 }
    END {
      if (NR == 0) { print "n/a n/a 0"; exit }
      i50 = int(NR * 0.50); if (i50 < 1) i50 = 1
      i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
      printf "%.3f %.3f %d\n", v[i50] / 1000, v[i99] / 1000, NR
    }'
}

latency_of() { # $1 = name, $2 = SQL, $3 = system (iolab); prints "p50 p99 n"
  printf '%s\n' "$2" > "$WORK/$1.sql"
  (cd "$WORK" && pgbench -n -h 127.0.0.1 -p "$(port_of "${3:-iolab}")" -U postgres -c 1 -T "$DURATION" \
     -f "$WORK/$1.sql" -l --log-prefix="$1" postgres >/dev/null 2>"$WORK/$1.err") \
     || { echo "pgbench failed for $1:" >&2; cat "$WORK/$1.err" >&2; exit 1; }
  percentiles "$WORK/$1".*
}

# cpu_us SQL : the server's CPU time (user + system) per run of SQL in µs, over CPU_RUNS
# runs on one connection
cpu_us() {
  printf '%s\n' "$1" > "$WORK/cpu.sql"
  local ticks0 ticks1
  ticks0=$(awk '{ print $14 + $15 }' "/proc/$IOLAB_PID/stat")
  pgbench -n -h 127.0.0.1 -p "$(port_of iolab)" -U postgres -c 1 -t "$CPU_RUNS" \
    -f "$WORK/cpu.sql" postgres >/dev/null 2>&1
  ticks1=$(awk '{ print $14 + $15 }' "/proc/$IOLAB_PID/stat")
  awk -v a="$ticks0" -v b="$ticks1" -v n="$CPU_RUNS" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.0f", (b - a) * 1e6 / hz / n }'
}

# The scan a killed scan_loop started runs on in the server: wait (at most 30 s) until no
# other statement is active, so that cpu_us counts only its own queries.
wait_for_no_other_statement() {
  local i
  for i in $(seq 1 150); do
    [ "$(q iolab "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()")" = 0 ] && return 0
    sleep 0.2
  done
}

scan_loop() { # system
  while true; do
    q "$1" "SELECT count(*) FROM pg_buffercache_evict_all()" >/dev/null 2>&1 || true
    q "$1" "SELECT count(*) FROM $TABLE" >/dev/null 2>&1 || break
  done
}

# ---- load (once per ROWS) ------------------------------------------------------------
if [ ! -d "$DATA" ]; then
  echo "loading $ROWS rows into $DATA"
  start_server 1000
  q iolab "CREATE TABLE $TABLE(a int, filler text)"
  q iolab "INSERT INTO $TABLE SELECT i, md5(i::text) FROM generate_series(1, $ROWS) AS s(i)"
  q iolab "CHECKPOINT"
  iolab_stop
fi

# ---- 1 + 2: view latency during a cold scan -------------------------------------------
start_server 100 "${LOOP_IO[@]}"
echo "filling the history: ${FILL}s of 100 ms samples while scanning ($SCAN scans)"
scan_loop iolab & SCANNER_PID=$!
sleep "$FILL"
PANEL="SELECT floor(extract(epoch from time)/60)*60 AS \"time\", backend_type || ' / ' || context AS metric, sum(reads) / 60.0 AS reads_per_s, sum(read_bytes) / 60e6 AS mb_per_s FROM pg_stat_io_history WHERE time BETWEEN now() - interval '1 hour' AND now() GROUP BY 1, 2 ORDER BY 1"
PANEL_ROWS=$(q iolab "SELECT count(*) FROM pg_stat_io_history WHERE time BETWEEN now() - interval '1 hour' AND now()")
PANEL_SAMPLES=$(q iolab "SELECT count(DISTINCT time) FROM pg_stat_io_history")
read -r IO_P50 IO_P99 IO_N < <(latency_of stat_io "SELECT * FROM pg_stat_io")
read -r PANEL_P50 PANEL_P99 PANEL_N < <(latency_of panel "$PANEL")
kill "$SCANNER_PID" 2>/dev/null || true; wait "$SCANNER_PID" 2>/dev/null || true; SCANNER_PID=""
wait_for_no_other_statement
IO_CPU=$(cpu_us "SELECT * FROM pg_stat_io")
PANEL_CPU=$(cpu_us "$PANEL")
iolab_stop

# ---- 4: PostgreSQL 18's pg_stat_io during its own scans ------------------------------------
PG_IO="n/a n/a 0"
if [ "$SKIP_PG18" != 1 ] && [ -x "$PG18" ]; then
  pg_env stats-bench
  if pg_start "-c io_method=worker ${LOOP_IO[*]}"; then
    if [ ! -f "$BENCH_DIR/pg18-$ROWS.loaded" ]; then
      echo "loading $ROWS rows into PostgreSQL 18"
      q pg18 "DROP TABLE IF EXISTS $TABLE" "CREATE TABLE $TABLE(a int, filler text)" \
        "INSERT INTO $TABLE SELECT i, md5(i::text) FROM generate_series(1, $ROWS) AS s(i)" \
        "VACUUM ANALYZE $TABLE" "CHECKPOINT" >/dev/null
      touch "$BENCH_DIR/pg18-$ROWS.loaded"
    fi
    q pg18 "CREATE EXTENSION IF NOT EXISTS pg_buffercache" >/dev/null
    scan_loop pg18 & SCANNER_PID=$!
    sleep 3
    read -r -a PG_IO_PARTS < <(latency_of pg18_stat_io "SELECT * FROM pg_stat_io" pg18)
    PG_IO="${PG_IO_PARTS[*]}"
    kill "$SCANNER_PID" 2>/dev/null || true; wait "$SCANNER_PID" 2>/dev/null || true; SCANNER_PID=""
    pg_stop
  else
    echo "PostgreSQL 18 did not start ($START_ERR): its row is skipped"
  fi
fi
read -r PG_P50 PG_P99 PG_N <<<"$PG_IO"

# ---- 3: the scan with the sampler on and off ---------------------------------------------
ON=(); OFF=(); WARM_ON=(); WARM_OFF=()
for run in $(seq 1 "$RUNS"); do
  for interval in 0 1000; do
    start_server "$interval"
    ms=$(scan_ms cold)
    warm=$(scan_ms warm)
    iolab_stop
    if [ "$interval" = 0 ]; then OFF+=("$ms"); WARM_OFF+=("$warm"); else ON+=("$ms"); WARM_ON+=("$warm"); fi
    echo "run $run sampler $([ "$interval" = 0 ] && echo off || echo on): cold $ms ms, page-cached $warm ms"
  done
done
median() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
slowdown() { awk -v on="$1" -v off="$2" 'BEGIN { printf "%+.1f", (on - off) * 100 / off }'; }
MED_ON=$(median "${ON[@]}"); MED_OFF=$(median "${OFF[@]}")
SLOWDOWN=$(slowdown "$MED_ON" "$MED_OFF")
MED_WARM_ON=$(median "${WARM_ON[@]}"); MED_WARM_OFF=$(median "${WARM_OFF[@]}")
WARM_SLOWDOWN=$(slowdown "$MED_WARM_ON" "$MED_WARM_OFF")

{
  echo "# bench/stats.sh $STAMP — $ROWS rows, shared_buffers $SHARED_BUFFERS, io_method $IO_METHOD, $(basename "$IOLAB_BIN") at $IOLAB_BIN"
  echo "# cold scans: $COLD_NOTE; the scan loop of the latency rows: $SCAN"
  echo
  echo "| query, during a $SCAN scan loop on another connection | p50 ms | p99 ms | queries | goal p99 | server CPU µs per query, no scan |"
  echo "|---|---|---|---|---|---|"
  echo "| SELECT * FROM pg_stat_io | $IO_P50 | $IO_P99 | $IO_N | < 1 ms | $IO_CPU |"
  echo "| one-hour panel ($PANEL_ROWS history rows, $PANEL_SAMPLES samples) | $PANEL_P50 | $PANEL_P99 | $PANEL_N | < 5 ms | $PANEL_CPU |"
  echo "| PostgreSQL 18: SELECT * FROM pg_stat_io (its own scan loop) | $PG_P50 | $PG_P99 | $PG_N | | |"
  echo
  echo "| count(*) | sampler off (stats_history_interval = 0), median ms | sampler on (1 s) | slowdown | runs off / on (ms) |"
  echo "|---|---|---|---|---|"
  echo "| cold | $MED_OFF | $MED_ON | $SLOWDOWN % | ${OFF[*]} / ${ON[*]} |"
  echo "| page-cached | $MED_WARM_OFF | $MED_WARM_ON | $WARM_SLOWDOWN % | ${WARM_OFF[*]} / ${WARM_ON[*]} |"
  echo
  echo "slowdown with the sampler on: $SLOWDOWN % cold, $WARM_SLOWDOWN % page-cached (goal < 2 %)"
} | tee "$OUT"
echo "written to $OUT"
