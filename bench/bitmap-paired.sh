#!/usr/bin/env bash
# Paired cold bitmap heap scans: builds or io_methods side by side on the table
# bench/bitmap-scan.sh loads, each run against a fio random-read pass taken just before it
# (this VM's disk drifts by tens of percent within minutes; only the ratio to the device's
# rate of the moment compares across runs).
#
#   CONFIGS="old:/tmp/old.bin:io_uring new:target/release/iolab:io_uring" bench/bitmap-paired.sh
#
# Every round starts each configuration's server once and runs every eic of EICS once: evict
# the buffer pool, one short fio pass (random 8 KiB, depth 64, O_DIRECT, FIO_MS long), drop
# the page cache, wait DELAY seconds, then EXPLAIN (ANALYZE, IO) of the query with the
# device's reads in flight sampled every millisecond (bench/tools/inflight.c). Prints per run
# the Execution Time, the heap phase (Bitmap Heap Scan's time minus its Bitmap Index Scan's),
# blocks/s, fio's rate just before, their ratio, the node's read-latency line and the device's
# mean reads in flight; then per configuration and eic the medians. Asserts nothing.
#
# Environment (defaults in brackets):
#   CONFIGS [new:target/release/iolab:io_uring]  LABEL:BINARY:IO_METHOD[:EXTRA] entries; EXTRA
#                              is one more server option, e.g. debug_io_direct=data
#   ROUNDS [3]  EICS ["1 64"]  QUERY [sparse | dense]  DELAY [10]  FIO_MS [500]
#   BENCH_DIR [/var/tmp/iolab-bitmap-bench]  ROWS [20000000]  IOLAB_PORT [55481]
# Needs root (drop_caches), psql, fio, cc.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
CONFIGS="${CONFIGS:-new:target/release/iolab:io_uring}"
ROUNDS="${ROUNDS:-3}"; EICS="${EICS:-1 64}"; QUERY="${QUERY:-sparse}"
DELAY="${DELAY:-10}"; FIO_MS="${FIO_MS:-500}"
BENCH_DIR="${BENCH_DIR:-/var/tmp/iolab-bitmap-bench}"
ROWS="${ROWS:-20000000}"
PORT="${IOLAB_PORT:-55481}"
DATA="$BENCH_DIR/iolab-$ROWS"
declare -A PREDICATE=([dense]="a < 140" [sparse]="a < 5")
[ -f "$DATA/.bench-loaded" ] || { echo "no table in $DATA: run bench/bitmap-scan.sh first" >&2; exit 1; }
paired_setup "$DATA"
SERVER=""
cleanup() { [ -z "$SERVER" ] || { kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; }; }
trap cleanup EXIT

q() { psql -X -h 127.0.0.1 -p "$PORT" -U postgres -At "$@"; }
start() { # BINARY METHOD [EXTRA]
  local extra=(); [ -z "${3:-}" ] || extra=(-c "$3")
  "$1" --data-dir "$DATA" --port "$PORT" -c shared_buffers=128MB -c io_method="$2" \
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
echo "$QUERY query on $DEV; fio ${FIO_MS} ms random 8 KiB QD64 before each run; delay ${DELAY} s"

for r in $(seq "$ROUNDS"); do
  for c in $CONFIGS; do
    IFS=: read -r label _ method extra <<<"$c"
    start "${BIN[$label]}" "$method" "$extra"
    for eic in $EICS; do
      q -c "SELECT count(*) FROM pg_buffercache_evict_all()" >/dev/null
      fio_iops="$(fio --name=r --filename="$FIO_FILE" --rw=randread --bs=8k --iodepth=64 --direct=1 \
        --ioengine=io_uring --runtime="${FIO_MS}ms" --time_based --minimal 2>/dev/null |
        awk -F';' '$1==3 {printf "%.0f", $8}')"
      sync; echo 3 >/proc/sys/vm/drop_caches; sleep "$DELAY"
      inflight_start
      out="$(q -c "SET work_mem = '16MB'" -c "SET max_parallel_workers_per_gather = 0" \
        -c "SET effective_io_concurrency = $eic" \
        -c "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, IO) SELECT * FROM eic_uniform WHERE ${PREDICATE[$QUERY]} AND filler > 'fffffff'")"
      inflight_stop
      mean="$(inflight_figure flight)"
      line="$(echo "$out" | awk -v fio="$fio_iops" -v mean="$mean" '
        /^Bitmap Heap Scan/ { split($0, a, "\\.\\."); split(a[2], b, " "); heap = b[1] }
        /Bitmap Index Scan/ { split($0, a, "\\.\\."); split(a[2], b, " "); idx = b[1] }
        /Heap Blocks:/ && !blocks { for (i = 1; i <= NF; i++) if ($i ~ /^exact=/) { sub(/exact=/, "", $i); blocks = $i } }
        /I\/O Latency:/ && !lat { lat = $0; sub(/.*read /, "", lat); gsub(/ /, ",", lat) }
        /Execution Time:/ { ms = $3 }
        END { bps = blocks / (ms / 1000); printf "%.1f %.1f %.0f %s %.3f %s %s", ms, heap - idx, bps, fio, bps / fio, mean, lat }')"
      RESULTS[$label/$method/$eic]="${RESULTS[$label/$method/$eic]:-}$line;"
      read -r ms heapms bps fio ratio inflight lat <<<"$line"
      printf "  [%d/%d] %-16s eic=%-3s %7s ms (heap phase %7s)  %6s blocks/s  fio %6s  ratio %s  in flight %5s  %s\n" \
        "$r" "$ROUNDS" "$label/$method" "$eic" "$ms" "$heapms" "$bps" "$fio" "$ratio" "$inflight" "$lat"
    done
    stop
  done
done

echo
printf "%-20s %4s %5s %10s %10s %9s %9s %7s %10s\n" configuration eic runs "median ms" "heap ms" blocks/s "fio" ratio "in flight"
for c in $CONFIGS; do
  IFS=: read -r label _ method _ <<<"$c"
  for eic in $EICS; do
    rows="$(echo "${RESULTS[$label/$method/$eic]}" | tr ';' '\n' | grep .)"
    col() { echo "$rows" | awk -v k="$1" '{print $k}' | median_of_lines; }
    printf "%-20s %4s %5d %10s %10s %9s %9s %7s %10s\n" "$label/$method" "$eic" "$(echo "$rows" | wc -l)" \
      "$(col 1)" "$(col 2)" "$(col 3)" "$(col 4)" "$(col 5)" "$(col 6)"
  done
done
