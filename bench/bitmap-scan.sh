#!/usr/bin/env bash
# Bitmap heap scan benchmark — the seed experiment: the `eic_uniform` query
#   SELECT * FROM eic_uniform WHERE a < 140 AND filler > 'fffffff'      ("dense": ≈ 82 % of the heap)
#   SELECT * FROM eic_uniform WHERE a < 5   AND filler > 'fffffff'      ("sparse": ≈ 5 %, random)
# cold (buffer pool emptied, page cache dropped) for every effective_io_concurrency and
# io_method, on iolab and on PostgreSQL 18 side by side, beside fio's limits for the same
# blocks on the same file system. Prints one table per query and writes CSV into
# bench/results/. Asserts nothing.
#
#   bench/bitmap-scan.sh [--small]       (--small: 2 M rows, 1 run, eic 0 16 256)
#
# Environment (defaults in brackets):
#   ROWS [20000000; --small 2000000]   rows of eic_uniform(a INT, filler TEXT)
#   RUNS [3; --small 1]                cold runs per cell (median, min–max)
#   DELAY [settle]                     seconds between the cache drop and every cold run, or
#                                      "settle": until freed memory is reported (bench/lib.sh cold_wait)
#   EICS ["0 1 16 64 256 512"; --small "0 16 256"]   METHODS ["sync worker io_uring"; an entry
#                                      METHOD+direct adds debug_io_direct=data, METHOD+gapN
#                                      read_stream_gap_limit=N, METHOD+dropN read_stream_drop_behind=N
#                                      (blocks), METHOD+combineN io_max_combine_limit and
#                                      io_combine_limit = N, e.g. io_uring+direct+gap4,
#                                      worker+drop1024, io_uring+direct+gap16+combine128]
#   QUERIES ["dense sparse"]   SHARED_BUFFERS [128MB]   WORK_MEM [16MB]
#   SKIP_PG18=1  SKIP_FIO=1    IOLAB_BIN [target/release/iolab]  BENCH_DIR [/var/tmp/iolab-bitmap-bench]
#   IOLAB_PORT [55442]  PG18_BENCH_PORT [5435]  FIO_REST [60] (seconds the device rests after fio)
#
# Protocol: one server per io_method (a restart-only setting); before every cold run the
# buffer pool is emptied (pg_buffercache_evict_all(), on both systems), the page cache dropped
# and DELAY waited (see ../shared/reference/machine-io-facts.md on why the delay must
# be the same for everyone); then one psql session runs SET … and EXPLAIN (ANALYZE, BUFFERS).
# The figure is EXPLAIN's Execution Time. Cells run round-robin (every configuration once,
# then again), so drift in the machine's speed spreads over all of them; round r starts at
# configuration r (and wraps), so no one configuration always runs first, right after the
# load or fio.
#
# Needs root (drop_caches), psql, a release build of iolab, optionally fio and
# ../shared/tools/pg18-reference (PostgreSQL 18 offers sync and worker: no io_uring there).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"

# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
parse_small_flag 31 "$@"
if [ "$SMALL" = 1 ]; then ROWS="${ROWS:-2000000}"; RUNS="${RUNS:-1}"; EICS="${EICS:-0 16 256}"; fi
ROWS="${ROWS:-20000000}"
RUNS="${RUNS:-3}"
DELAY="${DELAY:-settle}"
EICS="${EICS:-0 1 16 64 256 512}"
METHODS="${METHODS:-sync worker io_uring}"
QUERIES="${QUERIES:-dense sparse}"
SHARED_BUFFERS="${SHARED_BUFFERS:-128MB}"
WORK_MEM="${WORK_MEM:-16MB}"
SKIP_PG18="${SKIP_PG18:-0}"; SKIP_FIO="${SKIP_FIO:-0}"
IOLAB_BIN="${IOLAB_BIN:-target/release/iolab}"
BENCH_DIR="${BENCH_DIR:-/var/tmp/iolab-bitmap-bench}"
IOLAB_PORT="${IOLAB_PORT:-55442}"
PG18="${PG18:-$REPO/../shared/tools/pg18-reference}"
PG18_BENCH_PORT="${PG18_BENCH_PORT:-5435}"
START_TIMEOUT="${START_TIMEOUT:-300}"
FIO_REST="${FIO_REST:-60}"
CHUNK="${CHUNK:-5000000}"
TABLE=eic_uniform
declare -A PREDICATE=([dense]="a < 140" [sparse]="a < 5")

STAMP="$(date +%Y%m%d-%H%M%S)"
RESULTS="$REPO/bench/results"
CSV="$RESULTS/bitmap-scan-$STAMP.csv"
RUNS_CSV="$RESULTS/bitmap-scan-$STAMP-runs.csv"
EXPLAIN_TXT="$RESULTS/bitmap-scan-$STAMP-explain.txt"
TABLE_TXT="$RESULTS/bitmap-scan-$STAMP.txt"
LOGS="$BENCH_DIR/logs"

die() { echo "bitmap-scan: $*" >&2; exit 1; }

# ---- preconditions --------------------------------------------------------------------
[ -w /proc/sys/vm/drop_caches ] || die "needs root: cold runs drop the page cache (echo 3 > /proc/sys/vm/drop_caches)"
command -v psql >/dev/null || die "psql not found (apt-get install -y postgresql-client)"
[ -x "$IOLAB_BIN" ] || die "no iolab binary at $IOLAB_BIN: build first (cargo build --release --bin iolab) or set IOLAB_BIN"
case "$IOLAB_BIN" in */debug/*) echo "warning: $IOLAB_BIN looks like a debug build; figures will mean little" >&2 ;; esac
if [ "$SKIP_FIO" != 1 ] && ! command -v fio >/dev/null; then
  echo "fio not found: fio rows skipped. Install it with: apt-get install -y fio"
  SKIP_FIO=1
fi
if [ "$SKIP_PG18" != 1 ] && [ ! -x "$PG18" ]; then
  echo "PostgreSQL 18 reference not found at $PG18: PostgreSQL rows skipped"
  SKIP_PG18=1
fi
mkdir -p "$BENCH_DIR" "$LOGS" "$RESULTS"
cp "$IOLAB_BIN" "$BENCH_DIR/iolab.bin"   # a rebuild during the run must not change the binary
IOLAB_BIN_SOURCE="$IOLAB_BIN"
IOLAB_BIN="$BENCH_DIR/iolab.bin"
IOLAB_DATA="$BENCH_DIR/iolab-$ROWS"

ORIG_HUGEPAGES="$(cat /proc/sys/vm/nr_hugepages)"
cleanup() {
  [ -n "$IOLAB_PID" ] && { kill "$IOLAB_PID" 2>/dev/null; wait "$IOLAB_PID" 2>/dev/null || true; }
  [ "$PG18_RUNNING" = 1 ] && pg_stop
  echo "$ORIG_HUGEPAGES" > /proc/sys/vm/nr_hugepages 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "bitmap heap scan benchmark, $(date '+%Y-%m-%d %H:%M:%S')"
echo "  rows $ROWS, runs $RUNS, wait after each cache drop: ${DELAY}, shared_buffers $SHARED_BUFFERS, work_mem $WORK_MEM"
echo "  effective_io_concurrency: $EICS; iolab io_method: $METHODS; queries: $QUERIES"
echo "  binary $IOLAB_BIN_SOURCE ($(date -r "$IOLAB_BIN_SOURCE" '+%Y-%m-%d %H:%M:%S'))"
echo "  $(nproc) CPUs, kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
dev="$(df --output=source "$BENCH_DIR" | tail -1)"; blk="$(basename "$dev")"
echo "  bench directory $BENCH_DIR on $dev ($(findmnt -no FSTYPE -T "$BENCH_DIR" 2>/dev/null || echo '?'))"
[ -r "/sys/block/$blk/queue/read_ahead_kb" ] && echo "  $blk: read_ahead_kb $(cat "/sys/block/$blk/queue/read_ahead_kb"), scheduler $(cat "/sys/block/$blk/queue/scheduler")"

# ---- load -------------------------------------------------------------------------------
# load SYSTEM : the seed's script — INSERT … SELECT in chunks, VACUUM ANALYZE, CREATE INDEX.
load() {
  local sys=$1 done=0 n t0
  q "$sys" "DROP TABLE IF EXISTS $TABLE" "CREATE UNLOGGED TABLE $TABLE(a INT, filler TEXT)" >/dev/null
  t0=$(date +%s.%N)
  while [ "$done" -lt "$ROWS" ]; do
    n=$CHUNK; [ $((done + n)) -gt "$ROWS" ] && n=$((ROWS - done))
    q "$sys" "INSERT INTO $TABLE SELECT 10000 * random(), md5(i::text) FROM generate_series($((done + 1)), $((done + n))) AS T(i)" >/dev/null
    done=$((done + n))
    awk -v d="$done" -v r="$ROWS" -v t0="$t0" -v t="$(date +%s.%N)" \
      'BEGIN{printf "    %6.1f M / %.1f M rows  %7.1f s\n", d/1e6, r/1e6, t-t0}'
  done
  q "$sys" "VACUUM ANALYZE $TABLE" "CREATE INDEX ON $TABLE(a)" "CHECKPOINT" >/dev/null
  awk -v t0="$t0" -v t="$(date +%s.%N)" 'BEGIN{printf "    loaded, analyzed and indexed in %.1f s\n", t-t0}'
}
# loaded SYSTEM MARKER : the table was loaded (MARKER exists) and still has its rows — an
# unlogged table comes back empty from a restart after a crash or a killed server.
loaded() { [ -f "$2" ] && [ "$(q "$1" "SELECT pg_relation_size('$TABLE')" 2>/dev/null || echo 0)" -gt 0 ]; }
declare -A HEAP_BYTES
iolab_start check -c io_method=worker || die "iolab did not start: $START_ERR"
if loaded iolab "$IOLAB_DATA/.bench-loaded"; then
  echo "== iolab: reusing $TABLE in $IOLAB_DATA"
else
  echo "== iolab: loading $TABLE ($ROWS rows) into $IOLAB_DATA"
  load iolab
  touch "$IOLAB_DATA/.bench-loaded"
fi
HEAP_BYTES[iolab]="$(q iolab "SELECT pg_relation_size('$TABLE')")"
IOLAB_VERSION="$(q iolab 'SELECT version()')"
# Each query's heap blocks, for fio to replay below (the device's time for those blocks).
FIO_FILE="$BENCH_DIR/fio-${HEAP_BYTES[iolab]}.dat"
[ "$SKIP_FIO" = 1 ] || for query in $QUERIES; do
  printf "  %s query's heap blocks: " "$query"
  q iolab "SELECT ctid FROM $TABLE WHERE ${PREDICATE[$query]}" | ctid_blocks >"$BENCH_DIR/blocks-$query.txt"
  wc -l <"$BENCH_DIR/blocks-$query.txt"
done
iolab_stop
if [ "$SKIP_PG18" != 1 ]; then
  pg_env iolab-bitmap-bench
  if pg_start "-c io_method=worker"; then
    if loaded pg18 "$BENCH_DIR/pg18-$ROWS.loaded"; then
      echo "== PostgreSQL 18: reusing $TABLE in $PG18_DATA_BENCH"
    else
      echo "== PostgreSQL 18: loading $TABLE ($ROWS rows) into $PG18_DATA_BENCH"
      load pg18
      touch "$BENCH_DIR/pg18-$ROWS.loaded"
    fi
    q pg18 "CREATE EXTENSION IF NOT EXISTS pg_buffercache" >/dev/null
    HEAP_BYTES[pg18]="$(q pg18 "SELECT pg_relation_size('$TABLE')")"
    PG_VERSION_STR="$(q pg18 'SHOW server_version')"
    pg_stop
  else
    echo "PostgreSQL 18 did not start ($START_ERR): PostgreSQL rows skipped"
    SKIP_PG18=1
  fi
fi

# ---- fio: what the device allows -------------------------------------------------------
# The device's time for each query's own heap blocks: fio replays them in block order from a
# file the size of the heap on the same file system, O_DIRECT, buffers in 2 MiB pages (the
# device's real limit, machine-io-facts.md), as REPLAY_GAP_OF and REPLAY_QD_OF (lib.sh) say.
# For reference also sequential 128 KiB reads at depth 16 and random 8 KiB reads at depth 64.
declare -A DEVICE_MS
FIO_SEQ_MBS=""; FIO_RAND_IOPS=""
if [ "$SKIP_FIO" != 1 ]; then
  if [ ! -f "$FIO_FILE" ]; then
    rm -f "$BENCH_DIR"/fio-*.dat
    fio --name=layout --filename="$FIO_FILE" --size="${HEAP_BYTES[iolab]}" --rw=write --bs=1m --direct=1 \
      --ioengine=io_uring --iodepth=8 --minimal >/dev/null
  fi
  fio_field() { # field (7 = bandwidth in KiB/s, 8 = IOPS) args...
    local f=$1; shift
    fio --name=b --filename="$FIO_FILE" --size="${HEAP_BYTES[iolab]}" --direct=1 --ioengine=io_uring "$@" --minimal 2>/dev/null \
      | awk -F';' -v f="$f" '$1==3 {print $f}'
  }
  [ "$ORIG_HUGEPAGES" -ge 24 ] || echo 24 > /proc/sys/vm/nr_hugepages   # fio's buffers: 32 MiB for the replays
  for query in $QUERIES; do
    printf "  replay log for %s: " "$query"
    replay_log "$FIO_FILE" "${REPLAY_GAP_OF[$query]}" <"$BENCH_DIR/blocks-$query.txt" >"$BENCH_DIR/replay-$query.iolog"
  done
  seq_all=""; rand_all=""; declare -A replay_all
  for r in $(seq "$RUNS"); do
    seq_all="$seq_all $(fio_field 7 --rw=read --bs=128k --iodepth=16 --iomem=shmhuge | awk '{printf "%.1f", $1*1.024/1000}')"
    rand_all="$rand_all $(fio_field 8 --rw=randread --bs=8k --iodepth=64 --runtime=2 --time_based)"
    for query in $QUERIES; do
      replay_all[$query]="${replay_all[$query]:-} $(replay_ms "$BENCH_DIR/replay-$query.iolog" "${REPLAY_QD_OF[$query]}")"
    done
  done
  # The VM's disk has an I/O budget (a token bucket: bursts of ≈ 50–60 k reads/s until some
  # 300 k reads are spent, then ≈ 6.5 k/s while it refills at about that rate). A long fio run
  # empties it and throttles the cells after it, so fio runs briefly and then the device rests.
  echo "  (resting the device ${FIO_REST}s after fio so that its I/O budget refills)"
  sleep "$FIO_REST"
  echo "$ORIG_HUGEPAGES" > /proc/sys/vm/nr_hugepages
  [ -n "${seq_all// /}" ] && [ -n "${rand_all// /}" ] || die "fio gave no figures (run it by hand, or SKIP_FIO=1)"
  FIO_SEQ_MBS="$(stats "$seq_all" | cut -d' ' -f1)"
  FIO_RAND_IOPS="$(stats "$rand_all" | cut -d' ' -f1)"
  for query in $QUERIES; do
    [ -n "${replay_all[$query]// /}" ] || die "fio did not replay the $query query's blocks (run it by hand, or SKIP_FIO=1)"
    DEVICE_MS[$query]="$(stats "${replay_all[$query]}" | awk '{printf "%.0f", $1}')"
  done
  echo "== fio $(fio --version): sequential 128 KiB QD16 into huge pages $FIO_SEQ_MBS MB/s; random 8 KiB QD64 $FIO_RAND_IOPS IOPS;" \
    "the queries' own blocks: $(for query in $QUERIES; do printf "%s %s ms  " "$query" "${DEVICE_MS[$query]}"; done)(medians of $RUNS)"
fi

# ---- cold runs --------------------------------------------------------------------------
# cold_run SYSTEM QUERY EIC : evict the pool, drop the page cache, wait, EXPLAIN ANALYZE.
# Prints "ms heap_blocks read_ms wait_ms node" or "ERR message".
IO_OPTION=""
cold_run() {
  local sys=$1 query=$2 eic=$3 out
  q "$sys" "SELECT count(*) FROM pg_buffercache_evict_all()" >/dev/null 2>&1 \
    || q "$sys" "SELECT count(pg_buffercache_evict(bufferid)) FROM pg_buffercache" >/dev/null
  drop_caches; cold_wait
  local opts="ANALYZE, BUFFERS, SETTINGS, COSTS OFF"
  [ "$sys" = iolab ] && [ -n "$IO_OPTION" ] && opts="$opts, IO"
  out="$(q "$sys" "SET work_mem = '$WORK_MEM'" "SET max_parallel_workers_per_gather = 0" "SET track_io_timing = on" \
      "SET effective_io_concurrency = $eic" \
      "EXPLAIN ($opts) SELECT * FROM $TABLE WHERE ${PREDICATE[$query]} AND filler > 'fffffff'" 2>&1)" \
    || { echo "ERR $(echo "$out" | tail -1 | cut -c1-100)"; return; }
  { echo "=== $sys $query eic=$eic"; echo "$out"; echo; } >>"$EXPLAIN_TXT"
  echo "$out" | awk '
    NR==1 { node=$0; sub(/ on .*/, "", node); sub(/^ */, "", node); gsub(/ /, "_", node) }
    /Heap Blocks:/ { for (i=1;i<=NF;i++) if ($i ~ /^(exact|lossy)=/) { split($i, kv, "="); blocks += kv[2] } }
    /I\/O Timings:/ && !io { io=1; for (i=1;i<=NF;i++) { if ($i ~ /^read=/) { split($i, kv, "="); rd=kv[2] } if ($i ~ /^wait=/) { split($i, kv, "="); wt=kv[2] } } }
    /Execution Time:/ { ms=$3 }
    END { if (ms == "") print "ERR no Execution Time"; else printf "%s %d %s %s %s\n", ms, blocks, (rd==""?0:rd), (wt==""?0:wt), node }'
}

CONFIGS=()
for m in $METHODS; do CONFIGS+=("iolab/$m"); done
[ "$SKIP_PG18" = 1 ] || CONFIGS+=("pg18/worker" "pg18/sync")
declare -A TIMES BLOCKS READMS WAITMS NODE REFUSED
echo "system,io_method,query,eic,run,ms,heap_blocks,read_ms,wait_ms,node" >"$RUNS_CSV"
echo
echo "== cold runs: per cell evict the pool, drop the page cache, wait (${DELAY}), EXPLAIN ANALYZE"
for r in $(seq "$RUNS"); do
  first=$(( (r - 1) % ${#CONFIGS[@]} ))
  for cfg in "${CONFIGS[@]:$first}" "${CONFIGS[@]:0:$first}"; do
    sys="${cfg%%/*}"; m="${cfg#*/}"
    [ -z "${REFUSED[$cfg]:-}" ] || continue
    if [ "$sys" = iolab ]; then
      # METHOD+direct: the same io_method with debug_io_direct = data (no page cache);
      # METHOD+gapN: with read_stream_gap_limit = N; METHOD+dropN: read_stream_drop_behind = N;
      # METHOD+combineN: reads of up to N blocks (io_max_combine_limit = io_combine_limit = N).
      method="${m%%+*}"; extra=()
      case "$m" in *+direct*) extra+=(-c debug_io_direct=data) ;; esac
      if [[ "$m" =~ \+gap([0-9]+) ]]; then extra+=(-c "read_stream_gap_limit=${BASH_REMATCH[1]}"); fi
      if [[ "$m" =~ \+drop([0-9]+) ]]; then extra+=(-c "read_stream_drop_behind=${BASH_REMATCH[1]}"); fi
      if [[ "$m" =~ \+combine([0-9]+) ]]; then
        extra+=(-c "io_max_combine_limit=${BASH_REMATCH[1]}" -c "io_combine_limit=${BASH_REMATCH[1]}")
      fi
      iolab_start "$cfg" -c "io_method=$method" "${extra[@]}" || { REFUSED[$cfg]="$START_ERR"; echo "  $cfg: server refused: $START_ERR"; continue; }
      got="$(q iolab 'SHOW io_method')"
      [ "$got" = "$method" ] || { REFUSED[$cfg]="asked for io_method=$method, the server runs $got"; iolab_stop; echo "  $cfg: ${REFUSED[$cfg]}"; continue; }
      [ -n "$IO_OPTION" ] || { q iolab "EXPLAIN (ANALYZE, IO) SELECT 1" >/dev/null 2>&1 && IO_OPTION=1 || IO_OPTION=""; }
    else
      pg_start "-c io_method=$m -c shared_buffers=$SHARED_BUFFERS" || { REFUSED[$cfg]="$START_ERR"; echo "  $cfg: server refused: $START_ERR"; continue; }
    fi
    for query in $QUERIES; do
      for eic in $EICS; do
        key="$cfg/$query/$eic"
        res="$(cold_run "$sys" "$query" "$eic")"
        if [ "${res%% *}" = ERR ]; then
          printf "  [%d/%d] %-15s %-6s eic=%-3s failed: %s\n" "$r" "$RUNS" "$cfg" "$query" "$eic" "${res#ERR }"
          continue
        fi
        read -r ms blocks rd wt node <<<"$res"
        TIMES[$key]="${TIMES[$key]:-} $ms"; BLOCKS[$key]="$blocks"; NODE[$key]="$node"
        READMS[$key]="${READMS[$key]:-} $rd"; WAITMS[$key]="${WAITMS[$key]:-} $wt"
        echo "$sys,$m,$query,$eic,$r,$ms,$blocks,$rd,$wt,$node" >>"$RUNS_CSV"
        printf "  [%d/%d] %-15s %-6s eic=%-3s %9.1f ms  %7d heap blocks  read %8.1f ms  wait %7.1f ms  %s\n" \
          "$r" "$RUNS" "$cfg" "$query" "$eic" "$ms" "$blocks" "$rd" "$wt" "$node"
      done
    done
    [ "$sys" = iolab ] && iolab_stop || pg_stop
  done
done

# ---- tables -----------------------------------------------------------------------------
median() { stats "$1" | cut -d' ' -f1; }
echo "system,io_method,query,eic,runs,median_ms,min_ms,max_ms,heap_blocks,blocks_per_s,read_ms,wait_ms,vs_pg18_same_method,vs_pg18_best,device_ms,node" >"$CSV"
{
  echo
  echo "== results: $ROWS rows; $IOLAB_VERSION; PostgreSQL ${PG_VERSION_STR:-skipped}"
  echo "   Execution Time, median of $RUNS cold runs in ms (min–max); vs PG = PostgreSQL 18's median / iolab's (> 1: iolab faster)"
  if [ -n "$FIO_SEQ_MBS" ]; then
    echo "   device = the time fio takes to read the query's heap blocks (replayed in block order; sparse: one 8 KiB read each at depth 64; dense: gaps ≤ 2 blocks read through, reads ≤ 1 MiB, depth 32)"
  fi
} | tee "$TABLE_TXT"
for query in $QUERIES; do
  {
    echo
    echo "-- $query: WHERE ${PREDICATE[$query]} AND filler > 'fffffff'"
    printf "%-15s" "eic"; for eic in $EICS; do printf " %16s" "$eic"; done; echo
  } | tee -a "$TABLE_TXT"
  for cfg in "${CONFIGS[@]}"; do
    line="$(printf "%-15s" "$cfg")"
    for eic in $EICS; do
      key="$cfg/$query/$eic"
      if [ -z "${TIMES[$key]:-}" ]; then line="$line $(printf "%16s" "n/a")"; continue; fi
      read -r med mn mx <<<"$(stats "${TIMES[$key]}")"
      line="$line $(printf "%16s" "$(printf "%.0f (%.0f–%.0f)" "$med" "$mn" "$mx")")"
      sys="${cfg%%/*}"; m="${cfg#*/}"
      pg_same=""; pg_best=""
      if [ "$sys" = iolab ] && [ "$SKIP_PG18" != 1 ]; then
        [ -n "${TIMES[pg18/$m/$query/$eic]:-}" ] && pg_same="$(awk -v p="$(median "${TIMES[pg18/$m/$query/$eic]}")" -v i="$med" 'BEGIN{printf "%.2f", p/i}')"
        best=""
        for pm in worker sync; do
          [ -n "${TIMES[pg18/$pm/$query/$eic]:-}" ] || continue
          v="$(median "${TIMES[pg18/$pm/$query/$eic]}")"
          { [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN{exit !(a < b)}'; } && best="$v"
        done
        [ -n "$best" ] && pg_best="$(awk -v p="$best" -v i="$med" 'BEGIN{printf "%.2f", p/i}')"
      fi
      device="${DEVICE_MS[$query]:-}"
      blocks="${BLOCKS[$key]}"
      bps="$(awk -v b="$blocks" -v ms="$med" 'BEGIN{printf "%.0f", b/(ms/1000)}')"
      echo "$sys,$m,$query,$eic,$(echo "${TIMES[$key]}" | wc -w),$med,$mn,$mx,$blocks,$bps,$(median "${READMS[$key]}"),$(median "${WAITMS[$key]}"),$pg_same,$pg_best,$device,${NODE[$key]}" >>"$CSV"
    done
    echo "$line" | tee -a "$TABLE_TXT"
  done
  {
    # Blocks per second and the device's figure, per eic, from the first configuration that ran.
    printf "%-15s" "heap blocks"
    for eic in $EICS; do
      b=""; for cfg in "${CONFIGS[@]}"; do b="${BLOCKS[$cfg/$query/$eic]:-}"; [ -n "$b" ] && break; done
      printf " %16s" "${b:-n/a}"
    done; echo
    [ -z "${DEVICE_MS[$query]:-}" ] || printf "%-15s %16s\n" "device ms" "${DEVICE_MS[$query]}"
  } | tee -a "$TABLE_TXT"
done
echo
echo "iolab blocks/s, read ms and wait ms per cell, ratios to PostgreSQL: $CSV (per run: $RUNS_CSV)"
echo "EXPLAIN output of every run: $EXPLAIN_TXT; server logs: $LOGS"
