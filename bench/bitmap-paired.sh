#!/usr/bin/env bash
# Paired cold bitmap heap scans: builds or io_methods side by side on the table
# bench/bitmap-scan.sh loads, each run against a fio random-read pass taken just before it
# (this VM's disk drifts by tens of percent within minutes; only the ratio to the device's
# rate of the moment compares across runs).
#
#   CONFIGS="old:/tmp/old.bin:io_uring new:target/release/iolab:io_uring" bench/bitmap-paired.sh
#
# Every round starts each configuration's server once and runs every eic of EICS once: evict
# the buffer pool, one fio pass, drop the page cache, wait (DELAY), then EXPLAIN
# (ANALYZE, IO) of the query with the device's reads in flight sampled every millisecond
# (bench/tools/inflight.c).
#
# The fio pass is the device's time for the query's own heap blocks ("device ms"): before
# the first run the script asks the server for the blocks (the ctids the query's condition
# selects) and writes them as a fio I/O log of reads in block order — runs of adjacent
# blocks, joined across gaps of at most REPLAY_GAP blocks, cut at 1 MiB — which fio replays
# against a file of the heap's size (O_DIRECT, buffers in huge pages, depth REPLAY_QD).
# Defaults: the sparse query's blocks one 8 KiB read each at depth 64; the dense query's
# joined across gaps of 2 blocks at depth 32, the fastest way found to read them on this
# machine kind (2026-12-03: 375–399 ms, against 509–557 ms for exactly the blocks asked for
# at depth 64, and 376–389 ms for the whole heap). "ratio" is device ms / Execution Time:
# 1 means the query ran as fast as the device reads its blocks. Prints one line per run
# (with the heap phase: the Bitmap Heap Scan's time minus its Bitmap Index Scan's; the gap
# blocks iolab's read_stream_gap_limit added; the node's read-latency line; the device's
# mean reads in flight), then per configuration and eic the medians. Asserts nothing.
#
# Environment (defaults in brackets):
#   CONFIGS [new:target/release/iolab:io_uring]  LABEL:BINARY:IO_METHOD[:SETTINGS] entries;
#                              SETTINGS: name=value[,name=value…], server settings of that
#                              configuration only, e.g. debug_io_direct=data,huge_pages=try
#   ROUNDS [3]  EICS ["1 64"]  QUERY [sparse | dense]  DELAY [settle: bench/lib.sh cold_wait]
#   SHARED_BUFFERS [128MB]
#   REPLAY_GAP [sparse 0, dense 2]  REPLAY_QD [sparse 64, dense 32]
#   BENCH_DIR [/var/tmp/iolab-bitmap-bench]  ROWS [20000000]  IOLAB_PORT [55481]
# Needs root (drop_caches), psql, fio, cc.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
CONFIGS="${CONFIGS:-new:target/release/iolab:io_uring}"
ROUNDS="${ROUNDS:-3}"; EICS="${EICS:-1 64}"; QUERY="${QUERY:-sparse}"
DELAY="${DELAY:-settle}"
REPLAY_GAP="${REPLAY_GAP:-${REPLAY_GAP_OF[$QUERY]}}"; REPLAY_QD="${REPLAY_QD:-${REPLAY_QD_OF[$QUERY]}}"
SHARED_BUFFERS="${SHARED_BUFFERS:-128MB}"
BENCH_DIR="${BENCH_DIR:-/var/tmp/iolab-bitmap-bench}"
ROWS="${ROWS:-20000000}"
PORT="${IOLAB_PORT:-55481}"
DATA="$BENCH_DIR/iolab-$ROWS"
declare -A PREDICATE=([dense]="a < 140" [sparse]="a < 5")
[ -f "$DATA/.bench-loaded" ] || { echo "no table in $DATA: run bench/bitmap-scan.sh first" >&2; exit 1; }
paired_setup "$DATA"
SERVER=""
ORIG_HUGEPAGES="$(cat /proc/sys/vm/nr_hugepages)"
cleanup() {
  [ -z "$SERVER" ] || { kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; }
  echo "$ORIG_HUGEPAGES" > /proc/sys/vm/nr_hugepages
}
trap cleanup EXIT
reserve_hugepages "$SHARED_BUFFERS"

q() { psql -X -h 127.0.0.1 -p "$PORT" -U postgres -At "$@"; }
start() { # BINARY METHOD [SETTINGS]
  local extra=() kv
  IFS=, read -ra kv <<<"${3:-}"
  for s in "${kv[@]}"; do extra+=(-c "$s"); done
  "$1" --data-dir "$DATA" --port "$PORT" -c shared_buffers="$SHARED_BUFFERS" -c io_method="$2" \
    -c track_io_timing=on "${extra[@]}" >>"$BENCH_DIR/logs/bitmap-paired.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 600); do q -c 'SELECT 1' >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "server did not start: see $BENCH_DIR/logs/bitmap-paired.log" >&2; exit 1
}
stop() { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""; }

mkdir -p "$BENCH_DIR/logs"
declare -A BIN RESULTS
copy_config_binaries
FIO_FILE="$(ls "$BENCH_DIR"/fio-*.dat | head -1)"
REPLAY_LOG="$BENCH_DIR/replay-$QUERY-gap$REPLAY_GAP.iolog"
echo "$QUERY query on $DEV, shared_buffers $SHARED_BUFFERS; before each run fio replays its heap blocks" \
  "(gaps ≤ $REPLAY_GAP blocks read through, depth $REPLAY_QD); wait after each cache drop: ${DELAY}"

write_replay_log() { # needs a server up
  q -c "SELECT ctid FROM eic_uniform WHERE ${PREDICATE[$QUERY]}" | ctid_blocks | replay_log "$FIO_FILE" "$REPLAY_GAP" >"$REPLAY_LOG"
}

for r in $(seq "$ROUNDS"); do
  for c in $CONFIGS; do
    IFS=: read -r label _ method extra <<<"$c"
    start "${BIN[$label]}" "$method" "$extra"
    for eic in $EICS; do
      [ -s "$REPLAY_LOG" ] || { printf "  replay log: "; write_replay_log; }
      q -c "SELECT count(*) FROM pg_buffercache_evict_all()" >/dev/null
      device_ms="$(replay_ms "$REPLAY_LOG" "$REPLAY_QD")"
      drop_caches; cold_wait
      inflight_start
      out="$(q -c "SET work_mem = '16MB'" -c "SET max_parallel_workers_per_gather = 0" \
        -c "SET effective_io_concurrency = $eic" \
        -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, IO) SELECT * FROM eic_uniform WHERE ${PREDICATE[$QUERY]} AND filler > 'fffffff'")"
      inflight_stop
      mean="$(inflight_figure flight)"
      line="$(echo "$out" | awk -v dev="$device_ms" -v mean="$mean" '
        /^Bitmap Heap Scan/ { split($0, a, "\\.\\."); split(a[2], b, " "); heap = b[1]; inheap = 1 }
        /Bitmap Index Scan/ { split($0, a, "\\.\\."); split(a[2], b, " "); idx = b[1]; inheap = 0 }
        /Heap Blocks:/ && !blocks { for (i = 1; i <= NF; i++) if ($i ~ /^exact=/) { sub(/exact=/, "", $i); blocks = $i } }
        /I\/O: stalls=/ && inheap { for (i = 1; i <= NF; i++) if ($i ~ /^gap=/) { sub(/gap=/, "", $i); gap = $i } }
        /I\/O Latency:/ && !lat { lat = $0; sub(/.*read /, "", lat); gsub(/ /, ",", lat) }
        /Execution Time:/ { ms = $3 }
        END { printf "%.1f %.1f %d %d %s %.3f %s %s", ms, heap - idx, blocks, gap + 0, dev, dev / ms, mean, lat }')"
      RESULTS[$label/$method/$eic]="${RESULTS[$label/$method/$eic]:-}$line;"
      read -r ms heapms blocks gap dev ratio inflight lat <<<"$line"
      printf "  [%d/%d] %-16s eic=%-3s %7s ms (heap phase %7s)  blocks %6s + gap %6s  device %5s ms  ratio %s  in flight %5s  %s\n" \
        "$r" "$ROUNDS" "$label/$method" "$eic" "$ms" "$heapms" "$blocks" "$gap" "$dev" "$ratio" "$inflight" "$lat"
    done
    stop
  done
done

echo
printf "%-20s %4s %5s %10s %10s %10s %7s %10s\n" configuration eic runs "median ms" "heap ms" "device ms" ratio "in flight"
for c in $CONFIGS; do
  IFS=: read -r label _ method _ <<<"$c"
  for eic in $EICS; do
    rows="$(echo "${RESULTS[$label/$method/$eic]}" | tr ';' '\n' | grep .)"
    col() { echo "$rows" | awk -v k="$1" '{print $k}' | median_of_lines; }
    printf "%-20s %4s %5d %10s %10s %10s %7s %10s\n" "$label/$method" "$eic" "$(echo "$rows" | wc -l)" \
      "$(col 1)" "$(col 2)" "$(col 5)" "$(col 6)" "$(col 7)"
  done
done
