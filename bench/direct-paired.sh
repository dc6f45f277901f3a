#!/usr/bin/env bash
# Paired cold direct-I/O scans: builds or io_methods side by side, each run against a fio pass
# taken just before it. For A/B comparisons on a disk whose speed drifts by tens of percent
# within minutes (this VM's), where only the ratio to the device's rate of the moment counts.
#
#   CONFIGS="old:/tmp/old.bin:io_uring new:target/release/iolab:io_uring" bench/direct-paired.sh
#   CONFIGS="plain:target/release/iolab:io_uring gap16:target/release/iolab:io_uring:read_stream_gap_limit=16" \
#     bench/direct-paired.sh
#
# Every round starts each configuration's server once (`debug_io_direct=data`,
# `huge_pages=try`) and runs it RUNS times: evict the buffer pool (pg_buffercache_evict_all;
# direct I/O bypasses the page cache, so nothing else is cold-started), one fio pass (1 MiB
# reads, depth 32, buffers in 2 MiB pages: io-methods.sh's best configuration), then one
# timed `SELECT count(*)` with the device's reads in flight sampled every millisecond
# (bench/tools/inflight.c) and the server's CPU time. Configurations alternate within each
# round, so drift spreads over all of them. Prints one line per run and, per configuration,
# the medians; asserts nothing.
#
# Environment (defaults in brackets):
#   CONFIGS [new:target/release/iolab:io_uring new:target/release/iolab:worker]
#                              LABEL:BINARY:IO_METHOD[:SETTINGS] entries, LABEL unique; each binary
#                              is copied first; SETTINGS: name=value[,name=value…], server
#                              settings of that configuration only
#   ROUNDS [3]  RUNS [2]       rounds, and runs per server start
#   SHARED_BUFFERS [1GB]  IOLAB_ARGS ["-c io_max_combine_limit=1MB -c io_combine_limit=1MB";
#                              set it empty for the server's defaults]
#   SETS [""]                  SQL run in the query's session first, e.g. "SET effective_io_concurrency=32"
#   BENCH_DIR [/var/tmp/iolab-io-bench]  ROWS [60000000]: the table bench/io-methods.sh loads
#   IOLAB_PORT [55471]
# Needs root (vm.nr_hugepages, restored at exit), psql, fio, cc.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
CONFIGS="${CONFIGS:-new:target/release/iolab:io_uring new:target/release/iolab:worker}"
ROUNDS="${ROUNDS:-3}"; RUNS="${RUNS:-2}"
SHARED_BUFFERS="${SHARED_BUFFERS:-1GB}"
IOLAB_ARGS="${IOLAB_ARGS--c io_max_combine_limit=1MB -c io_combine_limit=1MB}"
SETS="${SETS:-}"
BENCH_DIR="${BENCH_DIR:-/var/tmp/iolab-io-bench}"
ROWS="${ROWS:-60000000}"
PORT="${IOLAB_PORT:-55471}"
DATA="$BENCH_DIR/iolab-$ROWS"
[ -f "$DATA/.bench-loaded" ] || { echo "no table in $DATA: run bench/io-methods.sh with ROWS=$ROWS first" >&2; exit 1; }
paired_setup "$DATA"
ORIG_HUGEPAGES="$(cat /proc/sys/vm/nr_hugepages)"
SERVER=""
cleanup() {
  [ -z "$SERVER" ] || { kill "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; }
  echo "$ORIG_HUGEPAGES" > /proc/sys/vm/nr_hugepages
}
trap cleanup EXIT
reserve_hugepages "$SHARED_BUFFERS"

q() { psql -X -h 127.0.0.1 -p "$PORT" -U postgres -At "$@"; }
start() { # BINARY METHOD [SETTINGS]
  local settings=() kv
  IFS=, read -ra kv <<<"${3:-}"
  for s in "${kv[@]}"; do settings+=(-c "$s"); done
  # shellcheck disable=SC2086
  "$1" -D "$DATA" -p "$PORT" -c shared_buffers="$SHARED_BUFFERS" -c io_method="$2" \
    -c debug_io_direct=data -c huge_pages=try -c track_io_timing=on $IOLAB_ARGS "${settings[@]}" \
    >>"$BENCH_DIR/logs/direct-paired.log" 2>&1 &
  SERVER=$!
  for _ in $(seq 1 240); do q -c 'SELECT 1' >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "server did not start: see $BENCH_DIR/logs/direct-paired.log" >&2; exit 1
}
stop() { kill "$SERVER"; wait "$SERVER" 2>/dev/null || true; SERVER=""; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$SERVER/stat"; }   # the process, threads gone included

mkdir -p "$BENCH_DIR/logs"
declare -A BIN RESULTS
copy_config_binaries
start "${BIN[${CONFIGS%%:*}]}" worker
BYTES="$(q -c "SELECT pg_relation_size('eic_io')")"
stop
FIO_FILE="$BENCH_DIR/paired-fio-$BYTES.dat"   # not fio-*.dat: io-methods.sh removes those
[ -f "$FIO_FILE" ] || fio --name=layout --filename="$FIO_FILE" --size="$BYTES" --rw=write --bs=1m \
  --direct=1 --ioengine=io_uring --iodepth=8 --minimal >/dev/null
echo "table $BYTES bytes on $DEV; shared_buffers $SHARED_BUFFERS; $IOLAB_ARGS${SETS:+; $SETS}"

for r in $(seq "$ROUNDS"); do
  for c in $CONFIGS; do
    IFS=: read -r label _ method settings <<<"$c"
    start "${BIN[$label]}" "$method" "$settings"
    for i in $(seq "$RUNS"); do
      q -c "SELECT count(*) FROM pg_buffercache_evict_all()" >/dev/null
      fio_mbs="$(fio --name=seq --filename="$FIO_FILE" --size="$BYTES" --rw=read --bs=1m --direct=1 \
        --ioengine=io_uring --iodepth=32 --iomem=shmhuge --minimal 2>/dev/null |
        awk -F';' '$1==3 {printf "%.0f", $6*1.024/$9}')"
      inflight_start
      t0="$(cpu_ticks)"
      out="$(q -c '\timing on' ${SETS:+-c "$SETS"} -c 'SELECT count(*) FROM eic_io')"
      t1="$(cpu_ticks)"
      inflight_stop
      [ "$(echo "$out" | grep -v Time | tail -1)" = "$ROWS" ] || { echo "wrong count: $out" >&2; exit 1; }
      ms="$(echo "$out" | awk '/Time:/ {t = $2} END {print t}')"
      line="$(awk -v ms="$ms" -v b="$BYTES" -v f="$fio_mbs" -v cpu=$(( (t1 - t0) * 10 )) \
        'BEGIN {m = b / 1e3 / ms; printf "%.0f %.0f %s %.3f %d", ms, m, f, m / f, cpu}')"
      idle="$(inflight_figure idle)"
      mean="$(inflight_figure flight)"
      RESULTS[$label/$method]="${RESULTS[$label/$method]:-}$line $idle $mean;"
      read -r ms mbs _ ratio cpu <<<"$line"
      printf "  [%d/%d] %-22s %6s ms %5s MB/s  fio just before %5s MB/s  ratio %s  CPU %5s ms  device idle %5s %%, %s reads in flight\n" \
        "$r" "$ROUNDS" "$label/$method" "$ms" "$mbs" "$fio_mbs" "$ratio" "$cpu" "$idle" "$mean"
    done
    stop
  done
done

echo
printf "%-22s %5s %9s %7s %11s %8s %12s %10s\n" configuration runs "median ms" "MB/s" "ratio" "CPU ms" "device idle" "in flight"
for c in $CONFIGS; do
  IFS=: read -r label _ method _ <<<"$c"
  rows="$(echo "${RESULTS[$label/$method]}" | tr ';' '\n' | grep .)"
  col() { echo "$rows" | awk -v k="$1" '{print $k}' | median_of_lines; }
  printf "%-22s %5d %9s %7s %5s (%s–%s) %8s %10s %% %10s\n" "$label/$method" "$(echo "$rows" | wc -l)" \
    "$(col 1)" "$(col 2)" "$(col 4)" "$(echo "$rows" | awk '{print $4}' | sort -g | head -1)" \
    "$(echo "$rows" | awk '{print $4}' | sort -g | tail -1)" "$(col 5)" "$(col 6)" "$(col 7)"
done
