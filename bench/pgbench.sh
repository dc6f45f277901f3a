#!/usr/bin/env bash
# pgbench against iolab and PostgreSQL 18, side by side: `pgbench -i -s SCALE` on each
# (timed), then each built-in script (select-only, simple-update, tpcb-like) at each client
# count, DURATION seconds per cell, the two systems alternating for RUNS rounds. Prints one
# table (median tps, min–max, mean latency) and writes it into bench/results/. Asserts
# nothing; stops at a run with a failed transaction.
#
#   bench/pgbench.sh [--small]     (--small: scale 2, 5 s per cell, 1 round)
#
# Environment (defaults in brackets):
#   SCALE [20] (100 000 accounts each; 20 ≈ 260 MB of tables, twice the 128 MB pool)
#   DURATION [15]  RUNS [3]  CLIENTS ["1 4"]  SCRIPTS ["select-only simple-update tpcb-like"]
#   MODE [prepared] (pgbench -M)  SHARED_BUFFERS [128MB]  IO_METHOD [worker]
#   IOLAB_BIN [target/release/iolab]  BENCH_DIR [/var/tmp/iolab-pgbench]  IOLAB_PORT [55461]
#   SKIP_PG18=1  PG18 [../shared/tools/pg18-reference]  PG18_BENCH_PORT [5436]
#
# Both servers keep their data between runs of the script (a second run skips the loads
# unless SCALE changed). Needs psql and pgbench, and a release build (cargo build --release
# --bin iolab).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"

# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
parse_small_flag 19 "$@"
if [ "$SMALL" = 1 ]; then
  SCALE="${SCALE:-2}"; DURATION="${DURATION:-5}"; RUNS="${RUNS:-1}"
fi
SCALE="${SCALE:-20}"
DURATION="${DURATION:-15}"
RUNS="${RUNS:-3}"
CLIENTS="${CLIENTS:-1 4}"
SCRIPTS="${SCRIPTS:-select-only simple-update tpcb-like}"
MODE="${MODE:-prepared}"
SHARED_BUFFERS="${SHARED_BUFFERS:-128MB}"
IO_METHOD="${IO_METHOD:-worker}"
IOLAB_BIN="${IOLAB_BIN:-target/release/iolab}"
BENCH_DIR="${BENCH_DIR:-/var/tmp/iolab-pgbench}"
IOLAB_PORT="${IOLAB_PORT:-55461}"
SKIP_PG18="${SKIP_PG18:-0}"
PG18="${PG18:-$REPO/../shared/tools/pg18-reference}"
PG18_BENCH_PORT="${PG18_BENCH_PORT:-5436}"
ROWS="$SCALE" # names PostgreSQL's data directory (pg_env)

STAMP="$(date +%Y%m%d-%H%M%S)"
RESULTS="$REPO/bench/results"
OUT="$RESULTS/pgbench-$STAMP.txt"
mkdir -p "$RESULTS" "$BENCH_DIR"
IOLAB_DATA="$BENCH_DIR/data-$SCALE"
LOGS="$BENCH_DIR"
START_TIMEOUT=120
WORK="$(mktemp -d)"

cleanup() {
  iolab_stop
  [ "$PG18_RUNNING" = 1 ] && pg_stop
  rm -rf "$WORK"
}
trap cleanup EXIT

[ -x "$IOLAB_BIN" ] || { echo "no $IOLAB_BIN: cargo build --release --bin iolab" >&2; exit 1; }
command -v pgbench >/dev/null || { echo "pgbench is missing (apt-get install postgresql-contrib)" >&2; exit 1; }

SYSTEMS="iolab"
iolab_start pgbench -c io_method="$IO_METHOD" \
  || { echo "iolab did not start ($START_ERR); see $LOGS/iolab.log" >&2; exit 1; }
if [ "$SKIP_PG18" != 1 ]; then
  pg_env pgbench-scale
  pg_start "-c shared_buffers=$SHARED_BUFFERS -c io_method=$IO_METHOD" \
    || { echo "PostgreSQL 18 did not start: $START_ERR" >&2; exit 1; }
  SYSTEMS="iolab pg18"
fi

bench() { # system args...
  local port; port="$(port_of "$1")"; shift
  pgbench -h 127.0.0.1 -p "$port" -U postgres "$@" postgres
}

# Loads (when the tables are missing or of another scale), timed.
declare -A LOAD
for s in $SYSTEMS; do
  have="$(q "$s" "SELECT count(*) FROM pgbench_branches" 2>/dev/null || echo 0)"
  if [ "$have" = "$SCALE" ]; then LOAD[$s]="kept"; continue; fi
  t0=$(date +%s%N)
  bench "$s" -i -q -s "$SCALE" >"$WORK/init-$s.log" 2>&1 || { cat "$WORK/init-$s.log" >&2; exit 1; }
  LOAD[$s]="$(( ($(date +%s%N) - t0) / 1000000 )) ms"
done

# One cell: "tps latency_ms" of a run; fails the script on a failed transaction.
cell() { # system script clients
  local log="$WORK/run.log"
  bench "$1" -M "$MODE" -b "$2" -c "$3" -j "$3" -T "$DURATION" >"$log" 2>&1 \
    || { echo "pgbench failed on $1 ($2, $3 clients):" >&2; cat "$log" >&2; exit 1; }
  grep -q '^number of failed transactions: 0 ' "$log" \
    || { echo "failed transactions on $1 ($2, $3 clients):" >&2; cat "$log" >&2; exit 1; }
  awk '/^latency average/ {lat = $4} /^tps = / {tps = $3} END {printf "%s %s", tps, lat}' "$log"
}

declare -A TPS LAT
for round in $(seq "$RUNS"); do
  for script in $SCRIPTS; do
    for c in $CLIENTS; do
      for s in $SYSTEMS; do
        read -r tps lat <<<"$(cell "$s" "$script" "$c")"
        TPS[$s,$script,$c]="${TPS[$s,$script,$c]:-} $tps"
        LAT[$s,$script,$c]="${LAT[$s,$script,$c]:-} $lat"
      done
    done
  done
done

{
  echo "pgbench $(pgbench --version | awk '{print $3}'), scale $SCALE, -M $MODE, ${DURATION} s per cell, $RUNS round(s), shared_buffers $SHARED_BUFFERS, io_method $IO_METHOD, $(date -u '+%F %H:%M UTC'), load $(loadnow)"
  for s in $SYSTEMS; do echo "pgbench -i ($s): ${LOAD[$s]}"; done
  echo
  echo "| script | clients | iolab tps (min–max) | iolab latency ms | PostgreSQL 18 tps (min–max) | PostgreSQL 18 latency ms | iolab / PG18 |"
  echo "|---|---|---|---|---|---|---|"
  for script in $SCRIPTS; do
    for c in $CLIENTS; do
      read -r im imin imax <<<"$(stats "${TPS[iolab,$script,$c]}")"
      read -r il _ _ <<<"$(stats "${LAT[iolab,$script,$c]}")"
      if [ "$SKIP_PG18" != 1 ]; then
        read -r pm pmin pmax <<<"$(stats "${TPS[pg18,$script,$c]}")"
        read -r pl _ _ <<<"$(stats "${LAT[pg18,$script,$c]}")"
        ratio="$(awk -v a="$im" -v b="$pm" 'BEGIN {printf "%.2f", a / b}')"
        printf '| %s | %s | %.0f (%.0f–%.0f) | %.2f | %.0f (%.0f–%.0f) | %.2f | %s |\n' \
          "$script" "$c" "$im" "$imin" "$imax" "$il" "$pm" "$pmin" "$pmax" "$pl" "$ratio"
      else
        printf '| %s | %s | %.0f (%.0f–%.0f) | %.2f | — | — | — |\n' "$script" "$c" "$im" "$imin" "$imax" "$il"
      fi
    done
  done
} | tee "$OUT"
echo "written to $OUT"
