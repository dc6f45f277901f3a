#!/usr/bin/env bash
# Foundation benchmark: load 20 M rows of eic_uniform and time a warm count(*), on iolab
# and on PostgreSQL 18, side by side in one run. Prints figures; asserts nothing.
#
#   bench/foundation.sh [ROWS]        (default 20000000)
#
# Needs a release build of iolab (cargo build --release --bin iolab), psql, and
# ../shared/tools/pg18-reference (skipped with a note when absent). Both servers run with
# shared_buffers = 128MB; PostgreSQL with max_parallel_workers_per_gather = 0.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${1:-20000000}"
IOLAB_PORT="${IOLAB_PORT:-55440}"
PG18="${PG18:-$(pwd)/../shared/tools/pg18-reference}"
DATA="$(mktemp -d /tmp/iolab-bench.XXXXXX)"
BIN=target/release/iolab
[ -x "$BIN" ] || { echo "build first: cargo build --release --bin iolab" >&2; exit 1; }

LOAD="INSERT INTO eic_uniform SELECT 10000 * random(), md5(i::text) FROM generate_series(1, $ROWS) AS T(i)"

# Runs SQL through psql with \timing and prints each statement's milliseconds.
timed() { # host port sql...
  local port=$1; shift
  local args=(-X -q -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1 -c '\timing on')
  for s in "$@"; do args+=(-c "$s"); done
  psql "${args[@]}" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}

run() { # name port
  local name=$1 port=$2
  psql -X -q -h 127.0.0.1 -p "$port" -U postgres -c "DROP TABLE IF EXISTS eic_uniform" -c "CREATE UNLOGGED TABLE eic_uniform(a INT, filler TEXT)" >/dev/null 2>&1
  local load; load=$(timed "$port" "$LOAD" | tail -1)
  local counts; counts=$(timed "$port" "SET max_parallel_workers_per_gather = 0" \
    "SELECT count(*) FROM eic_uniform" "SELECT count(*) FROM eic_uniform" "SELECT count(*) FROM eic_uniform" \
    "SELECT count(*) FROM eic_uniform" | tail -4 | sort -n)
  local best median; best=$(echo "$counts" | head -1); median=$(echo "$counts" | sed -n 2p)
  printf "%-14s load %9.0f ms   warm count(*) best %7.1f ms  median %7.1f ms\n" "$name" "$load" "$best" "$median"
}

echo "rows: $ROWS"
"$BIN" --data-dir "$DATA" --port "$IOLAB_PORT" >"$DATA.log" 2>&1 &
IOLAB_PID=$!
trap 'kill $IOLAB_PID 2>/dev/null; wait $IOLAB_PID 2>/dev/null; rm -rf "$DATA" "$DATA.log"' EXIT
for _ in $(seq 100); do psql -X -h 127.0.0.1 -p "$IOLAB_PORT" -U postgres -c 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.2; done
run iolab "$IOLAB_PORT"
if [ -x "$PG18" ]; then
  "$PG18" start >/dev/null
  run "PostgreSQL 18" 5433
  psql -X -q -h 127.0.0.1 -p 5433 -U postgres -c "DROP TABLE IF EXISTS eic_uniform" >/dev/null
else
  echo "PostgreSQL 18 reference not found at $PG18: skipped"
fi
