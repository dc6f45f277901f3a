#!/usr/bin/env bash
# Nested loops over an index, iolab against PostgreSQL 18: a table of ROWS rows with a
# primary key (`bigc`, ≈ 80 bytes a row, larger than the buffer pool at the default), and
# `probe` (100 000 rows whose `cid` points at random rows of bigc); the query
#
#   SELECT count(*), sum(length(b.pad)) FROM probe p JOIN bigc b ON b.id = p.cid WHERE p.id <= N
#
# for each N, warm (median of 7 runs, psql's \timing) and cold (buffer pool emptied, page
# cache dropped, settled: EXPLAIN ANALYZE's Execution Time, median of RUNS), iolab with
# nestloop_prefetch on and off, PostgreSQL 18 beside. Prints one table and writes it into
# bench/results/. Asserts nothing. docs/benchmarks/nested-loops.md has results.
#
#   bench/nested-loops.sh [--small]     (--small: 1 M rows, N 100 and 1000, 1 cold run)
#
# Environment (defaults in brackets):
#   ROWS [5000000]  NS ["10 100 1000 10000"]  RUNS [3]  DELAY [settle] (see bench/lib.sh)
#   SHARED_BUFFERS [128MB]  IO_METHOD [worker] (PostgreSQL 18 runs worker for io_uring)  EIC [16]
#   IOLAB_BIN [target/release/iolab]  BENCH_DIR [/var/tmp/iolab-nestloop]  IOLAB_PORT [55471]
#   SKIP_PG18=1  PG18 [../shared/tools/pg18-reference]  PG18_BENCH_PORT [5437]
#
# Needs root (drop_caches), psql and a release build (cargo build --release --bin iolab).
# Both servers keep their tables between runs of the script (a second run with the same
# ROWS skips the loads).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"

# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
parse_small_flag 21 "$@"
if [ "$SMALL" = 1 ]; then ROWS="${ROWS:-1000000}"; NS="${NS:-100 1000}"; RUNS="${RUNS:-1}"; fi
ROWS="${ROWS:-5000000}"
NS="${NS:-10 100 1000 10000}"
RUNS="${RUNS:-3}"
DELAY="${DELAY:-settle}"
SHARED_BUFFERS="${SHARED_BUFFERS:-128MB}"
IO_METHOD="${IO_METHOD:-worker}"
EIC="${EIC:-16}"
IOLAB_BIN="${IOLAB_BIN:-target/release/iolab}"
BENCH_DIR="${BENCH_DIR:-/var/tmp/iolab-nestloop}"
IOLAB_PORT="${IOLAB_PORT:-55471}"
SKIP_PG18="${SKIP_PG18:-0}"
PG18="${PG18:-$REPO/../shared/tools/pg18-reference}"
PG18_BENCH_PORT="${PG18_BENCH_PORT:-5437}"

STAMP="$(date +%Y%m%d-%H%M%S)"
RESULTS="$REPO/bench/results"
OUT="$RESULTS/nested-loops-$STAMP.txt"
mkdir -p "$RESULTS" "$BENCH_DIR"
IOLAB_DATA="$BENCH_DIR/data-$ROWS"
LOGS="$BENCH_DIR"
START_TIMEOUT=120

cleanup() {
  iolab_stop
  [ "$PG18_RUNNING" = 1 ] && pg_stop
}
trap cleanup EXIT

[ -x "$IOLAB_BIN" ] || { echo "no $IOLAB_BIN: cargo build --release --bin iolab" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root (drop_caches)" >&2; exit 1; }

SYSTEMS="iolab"
iolab_start nested-loops -c io_method="$IO_METHOD" \
  || { echo "iolab did not start ($START_ERR); see $LOGS/iolab.log" >&2; exit 1; }
if [ "$SKIP_PG18" != 1 ]; then
  pg_env nestloop
  # The reference's build has no io_uring: it runs worker then.
  pg_method="$IO_METHOD"; [ "$pg_method" = io_uring ] && pg_method=worker
  pg_start "-c shared_buffers=$SHARED_BUFFERS -c io_method=$pg_method" \
    || { echo "PostgreSQL 18 did not start: $START_ERR" >&2; exit 1; }
  SYSTEMS="iolab pg18"
  q pg18 "CREATE EXTENSION IF NOT EXISTS pg_buffercache" >/dev/null
fi

LOAD=(
  "DROP TABLE IF EXISTS bigc, probe"
  "CREATE TABLE bigc(id int PRIMARY KEY, name text, pad text)"
  "INSERT INTO bigc SELECT i, 'c' || i, md5(i::text) FROM generate_series(1, $ROWS) i"
  "CREATE TABLE probe(id int PRIMARY KEY, cid int)"
  "INSERT INTO probe SELECT i, 1 + ((i::bigint * 2654435761) % $ROWS)::int FROM generate_series(1, 100000) i"
  "VACUUM ANALYZE bigc" "VACUUM ANALYZE probe"
)
for s in $SYSTEMS; do
  have="$(q "$s" "SELECT count(*) FROM bigc" 2>/dev/null || echo 0)"
  [ "$have" = "$ROWS" ] && continue
  echo "loading $ROWS rows into $s ..." >&2
  q "$s" "${LOAD[@]}" >/dev/null 2>&1
done

query() { echo "SELECT count(*), sum(length(b.pad)) FROM probe p JOIN bigc b ON b.id = p.cid WHERE p.id <= $1"; }
settings() { # system prefetch
  local s="SET max_parallel_workers_per_gather = 0; SET effective_io_concurrency = $EIC; SET track_io_timing = on;"
  [ "$1" = iolab ] && s="$s SET nestloop_prefetch = $2;"
  echo "$s"
}
# warm SYSTEM PREFETCH N : median ms of 7 runs after one unmeasured run, and the join node
warm() {
  local port; port="$(port_of "$1")"
  local sql; sql="$(query "$3")"
  { settings "$1" "$2"; echo "$sql;"; echo '\timing on'; for _ in 1 2 3 4 5 6 7; do echo "$sql;"; done; } \
    | psql -X -q -h 127.0.0.1 -p "$port" -U postgres 2>&1 | awk '/^Time:/ {print $2}' | median_of_lines
}
node() { # system n : the join method the plan uses
  q "$1" "$(settings "$1" on)" "EXPLAIN (COSTS OFF) $(query "$2")" | grep -m1 -oE 'Nested Loop|Hash Join|Merge Join' || echo '?'
}
# cold SYSTEM PREFETCH N : Execution Time ms and the inner scan's reads, from empty caches
cold() {
  q "$1" "SELECT * FROM pg_buffercache_evict_all()" >/dev/null
  drop_caches; cold_wait
  local out; out="$(q "$1" "$(settings "$1" "$2")" "EXPLAIN (ANALYZE, BUFFERS) $(query "$3")")"
  echo "$(echo "$out" | awk '/Execution Time/ {print $3}') $(echo "$out" | grep -m1 -oE 'read=[0-9]+' | cut -d= -f2)"
}

CONFIGS="iolab:on iolab:off"
[ "$SKIP_PG18" != 1 ] && CONFIGS="$CONFIGS pg18:-"
declare -A WARM COLD READS NODE
for n in $NS; do
  for c in $CONFIGS; do
    s="${c%:*}"; p="${c#*:}"
    WARM[$c,$n]="$(warm "$s" "$p" "$n")"
    NODE[$s,$n]="$(node "$s" "$n")"
  done
done
for _ in $(seq "$RUNS"); do
  for n in $NS; do
    for c in $CONFIGS; do
      read -r ms reads <<<"$(cold "${c%:*}" "${c#*:}" "$n")"
      COLD[$c,$n]="${COLD[$c,$n]:-} $ms"; READS[$c,$n]="$reads"
    done
  done
done

{
  echo "nested loops: bigc $ROWS rows, shared_buffers $SHARED_BUFFERS, io_method $IO_METHOD, effective_io_concurrency $EIC, $RUNS cold run(s), $(date -u '+%F %H:%M UTC'), load $(loadnow)"
  echo
  echo "| N outer rows | plan (iolab / PG18) | warm ms: iolab read-ahead / one by one / PG18 | cold ms, median (min–max): iolab read-ahead | iolab one by one | PG18 | blocks read cold |"
  echo "|---|---|---|---|---|---|---|"
  for n in $NS; do
    row="| $n | ${NODE[iolab,$n]} / ${NODE[pg18,$n]:-—} | ${WARM[iolab:on,$n]} / ${WARM[iolab:off,$n]} / ${WARM[pg18:-,$n]:-—}"
    for c in iolab:on iolab:off pg18:-; do
      if [ -n "${COLD[$c,$n]:-}" ]; then
        read -r m lo hi <<<"$(stats "${COLD[$c,$n]}")"
        row="$row | $(printf '%.0f (%.0f–%.0f)' "$m" "$lo" "$hi")"
      else
        row="$row | —"
      fi
    done
    echo "$row | ${READS[iolab:on,$n]} / ${READS[iolab:off,$n]} / ${READS[pg18:-,$n]:-—} |"
  done
} | tee "$OUT"
echo "written to $OUT"
