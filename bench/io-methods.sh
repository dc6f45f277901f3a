#!/usr/bin/env bash
# I/O-method benchmark: a cold sequential `SELECT count(*)` over a ≈ 4 GiB table on iolab
# under every io_method (sync, worker, io_uring) × buffered / direct I/O, beside fio's
# sequential read limit on the same file system and PostgreSQL 18 (io_method worker and
# sync). Prints one table and writes it as CSV into bench/results/. Asserts nothing.
#
#   bench/io-methods.sh [--small]        (--small: ≈ 400 MB table, 1 run: a quick check)
#
# Environment (defaults in brackets):
#   ROWS [60000000; --small 6000000]  rows of eic_io(a INT, filler TEXT), md5 filler
#   RUNS [3; --small 1]               cold runs per configuration (median, min–max)
#   DELAY [settle]                    seconds between the cache drop and every cold run, or
#                                     "settle": until freed memory is reported (bench/lib.sh cold_wait)
#   SKIP_PG18=1  SKIP_FIO=1  SKIP_EXPLAIN=1  SKIP_WARM=1  SKIP_POOL=1 (buffer-pool-cached rows)
#   IOLAB_BIN [target/release/iolab]  BENCH_DIR [/var/tmp/iolab-io-bench]
#   METHODS ["sync worker io_uring"]  MODES ["buffered direct"]  SHARED_BUFFERS [128MB]
#   IOLAB_PORT [55441]  PG18_BENCH_PORT [5434]  NR_HUGEPAGES [shared_buffers/2MiB + 64]
#   IOLAB_ARGS [""]                   more iolab server settings, e.g.
#                                     "-c io_max_combine_limit=1MB -c io_combine_limit=1MB"
#   PAIRED_FIO=1                      before every cold direct iolab run, one pass of the best
#                                     fio configuration: "% fio" of each run against the
#                                     device as it was a few seconds earlier
#
# Needs root (drop_caches, vm.nr_hugepages, which it restores), psql, a release build of
# iolab (cargo build --release --bin iolab), optionally fio (apt-get install -y fio) and
# ../shared/tools/pg18-reference. The table is loaded once per ROWS into BENCH_DIR (iolab)
# and beside pg18-reference's own data directory (PostgreSQL), and reused afterwards; the
# PostgreSQL instance is a separate one on PG18_BENCH_PORT, so a reference server already
# running on 5433 is left alone. docs/benchmarks/io-methods.md describes the protocol.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"

# shellcheck source=bench/lib.sh
. "$REPO/bench/lib.sh"
parse_small_flag 24 "$@"
if [ "$SMALL" = 1 ]; then ROWS="${ROWS:-6000000}"; RUNS="${RUNS:-1}"; fi
ROWS="${ROWS:-60000000}"
RUNS="${RUNS:-3}"
DELAY="${DELAY:-settle}"
SKIP_PG18="${SKIP_PG18:-0}"; SKIP_FIO="${SKIP_FIO:-0}"; SKIP_EXPLAIN="${SKIP_EXPLAIN:-0}"
SKIP_WARM="${SKIP_WARM:-0}"; SKIP_POOL="${SKIP_POOL:-0}"; PAIRED_FIO="${PAIRED_FIO:-0}"
IOLAB_ARGS="${IOLAB_ARGS:-}"
IOLAB_BIN="${IOLAB_BIN:-target/release/iolab}"
BENCH_DIR="${BENCH_DIR:-/var/tmp/iolab-io-bench}"
METHODS="${METHODS:-sync worker io_uring}"
MODES="${MODES:-buffered direct}"
SHARED_BUFFERS="${SHARED_BUFFERS:-128MB}"
IOLAB_PORT="${IOLAB_PORT:-55441}"
PG18="${PG18:-$REPO/../shared/tools/pg18-reference}"
PG18_BENCH_PORT="${PG18_BENCH_PORT:-5434}"
START_TIMEOUT="${START_TIMEOUT:-300}"
CHUNK="${CHUNK:-5000000}"
TABLE=eic_io

STAMP="$(date +%Y%m%d-%H%M%S)"
RESULTS="$REPO/bench/results"
CSV="$RESULTS/io-methods-$STAMP.csv"
RUNS_CSV="$RESULTS/io-methods-$STAMP-runs.csv"
EXPLAIN_TXT="$RESULTS/io-methods-$STAMP-explain.txt"
TABLE_TXT="$RESULTS/io-methods-$STAMP.txt"
LOGS="$BENCH_DIR/logs"

die() { echo "io-methods: $*" >&2; exit 1; }
note() { echo "  note: $*"; }

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
SB_MB="$(mb_of "$SHARED_BUFFERS")"
NR_HUGEPAGES="${NR_HUGEPAGES:-$(( SB_MB / 2 + 64 ))}"
mkdir -p "$BENCH_DIR" "$LOGS" "$RESULTS"
# Run a copy: a rebuild during the run (cargo replaces the file) must not change the binary
# between configurations.
IOLAB_BIN_SOURCE="$IOLAB_BIN"
cp "$IOLAB_BIN" "$BENCH_DIR/iolab.bin"
IOLAB_BIN="$BENCH_DIR/iolab.bin"

# ---- state and cleanup ------------------------------------------------------------------
ORIG_HUGEPAGES="$(cat /proc/sys/vm/nr_hugepages)"
cleanup() {
  [ -n "$IOLAB_PID" ] && { kill "$IOLAB_PID" 2>/dev/null; wait "$IOLAB_PID" 2>/dev/null || true; }
  [ "$PG18_RUNNING" = 1 ] && pg_stop
  echo "$ORIG_HUGEPAGES" > /proc/sys/vm/nr_hugepages 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

declare -A TIMES NOTE REFUSED BYTES_OF PAIRED
echo "system,config,io,phase,run,seconds,count,note,load1" > "$RUNS_CSV"
: > "$EXPLAIN_TXT"


# ---- servers ----------------------------------------------------------------------------
IOLAB_DATA="$BENCH_DIR/iolab-$ROWS"
# timed_count SYSTEM [N] : N timed count(*) in one session; prints "seconds count" per query.
timed_count() {
  local port; port="$(port_of "$1")"
  local n=${2:-1} args=(-X -q -A -t -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1 -c '\timing on') i
  for i in $(seq "$n"); do args+=(-c "SELECT count(*) FROM $TABLE"); done
  psql "${args[@]}" 2>&1 | awk '/^Time: /{printf "%.4f %s\n", $2/1000, c; next} /^[0-9]+$/{c=$1; next} {print "ERR " $0}'
}

# ---- configurations ---------------------------------------------------------------------
CONFIGS=()
for m in $METHODS; do for mode in $MODES; do CONFIGS+=("iolab/$m/$mode"); done; done
[ "$SKIP_PG18" = 1 ] || CONFIGS+=("pg18/worker/buffered" "pg18/sync/buffered")
cfg_args() { # iolab config -> server args
  local m; m="$(echo "$1" | cut -d/ -f2)"
  case "$1" in
    */direct) echo "-c io_method=$m -c debug_io_direct=data -c huge_pages=try" ;;
    *) echo "-c io_method=$m" ;;
  esac
}
start_cfg() { # config -> 0 if running
  local sys m; sys="${1%%/*}"; m="$(echo "$1" | cut -d/ -f2)"
  if [ "$sys" = iolab ]; then
    # shellcheck disable=SC2046,SC2086
    iolab_start "$1" $(cfg_args "$1") $IOLAB_ARGS
  else
    pg_start "-c io_method=$m"
  fi
}
stop_cfg() { [ "${1%%/*}" = iolab ] && iolab_stop || pg_stop; }

# What the server says it runs with (a server may fall back from an io_method it cannot use).
effective() { # config
  local sys want; sys="${1%%/*}"; want="$(echo "$1" | cut -d/ -f2)"
  local got direct hp
  got="$(q "$sys" 'SHOW io_method' 2>/dev/null || echo '?')"
  direct="$(q "$sys" 'SHOW debug_io_direct' 2>/dev/null || echo '?')"
  hp="$(q "$sys" 'SHOW huge_pages_status' 2>/dev/null || q "$sys" 'SHOW huge_pages' 2>/dev/null || echo '?')"
  local n="io_method=$got debug_io_direct=${direct:-''} huge_pages=$hp"
  [ "$got" = "$want" ] || n="$n (asked for $want: ran as $got)"
  echo "$n"
}


# ---- header -----------------------------------------------------------------------------
echo "iolab I/O-method benchmark, $(date '+%Y-%m-%d %H:%M:%S')"
echo "  rows $ROWS, runs $RUNS, wait after each cache drop: ${DELAY}, shared_buffers $SHARED_BUFFERS"
echo "  binary $IOLAB_BIN_SOURCE ($(date -r "$IOLAB_BIN_SOURCE" '+%Y-%m-%d %H:%M:%S'), run from a copy in $BENCH_DIR)"
echo "  $(nproc) CPUs, $(awk '/MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r), load average $(cut -d' ' -f1-3 /proc/loadavg)"
dev="$(df --output=source "$BENCH_DIR" | tail -1)"
echo "  bench directory $BENCH_DIR on $dev ($(findmnt -no FSTYPE -T "$BENCH_DIR" 2>/dev/null || echo '?'))"
blk="$(basename "$dev")"
[ -r "/sys/block/$blk/queue/read_ahead_kb" ] && echo "  $blk: read_ahead_kb $(cat /sys/block/$blk/queue/read_ahead_kb), scheduler $(cat /sys/block/$blk/queue/scheduler)"
load1="$(cut -d' ' -f1 /proc/loadavg)"
awk -v l="$load1" 'BEGIN{exit !(l > 0.5)}' && echo "  warning: the load average is $load1 — other processes use the CPU; figures will be noisier"

echo "$NR_HUGEPAGES" > /proc/sys/vm/nr_hugepages
HUGEPAGES="$(cat /proc/sys/vm/nr_hugepages)"
echo "  vm.nr_hugepages $HUGEPAGES for the run (was $ORIG_HUGEPAGES; restored at exit)"
[ "$HUGEPAGES" -ge "$NR_HUGEPAGES" ] || echo "  warning: asked for $NR_HUGEPAGES huge pages, the kernel gave $HUGEPAGES (memory fragmented)"

# ---- load -------------------------------------------------------------------------------
# load SYSTEM : chunked INSERT … SELECT with progress, then one scan, VACUUM, CHECKPOINT.
load() {
  local sys=$1 t0 done=0 n start
  q "$sys" "DROP TABLE IF EXISTS $TABLE" "CREATE UNLOGGED TABLE $TABLE(a INT, filler TEXT)" >/dev/null 2>&1 \
    || q "$sys" "CREATE UNLOGGED TABLE $TABLE(a INT, filler TEXT)" >/dev/null
  t0=$(date +%s.%N)
  while [ "$done" -lt "$ROWS" ]; do
    n=$CHUNK; [ $((done + n)) -gt "$ROWS" ] && n=$((ROWS - done))
    start=$((done + 1))
    q "$sys" "INSERT INTO $TABLE SELECT 10000 * random(), md5(i::text) FROM generate_series($start, $((done + n))) AS T(i)" >/dev/null
    done=$((done + n))
    awk -v d="$done" -v r="$ROWS" -v t0="$t0" -v t="$(date +%s.%N)" \
      'BEGIN{printf "    %6.1f M / %.1f M rows  %7.1f s  (%.0f k rows/s)\n", d/1e6, r/1e6, t-t0, d/(t-t0)/1e3}'
  done
  local t1; t1=$(date +%s.%N)
  q "$sys" "SELECT count(*) FROM $TABLE" >/dev/null            # sets hint bits where there are any
  q "$sys" "VACUUM (FREEZE) $TABLE" >/dev/null 2>&1 || q "$sys" "VACUUM $TABLE" >/dev/null 2>&1 || note "VACUUM not supported: skipped"
  q "$sys" "CHECKPOINT" >/dev/null
  awk -v a="$t0" -v b="$t1" -v c="$(date +%s.%N)" 'BEGIN{printf "    loaded in %.1f s; first scan + VACUUM + CHECKPOINT %.1f s\n", b-a, c-b}'
}

echo
echo "== iolab: table $TABLE, $ROWS rows, in $IOLAB_DATA"
if [ -f "$IOLAB_DATA/.bench-loaded" ]; then
  BYTES_OF[iolab]="$(sed -n 's/^bytes=//p' "$IOLAB_DATA/.bench-loaded")"
  echo "  reusing it ($(( ${BYTES_OF[iolab]} / 1048576 )) MiB)"
else
  rm -rf "$IOLAB_DATA"
  iolab_start load || die "iolab did not start: $START_ERR"
  load iolab
  BYTES_OF[iolab]="$(q iolab "SELECT pg_relation_size('$TABLE')")"
  iolab_stop
  printf 'rows=%s\nbytes=%s\n' "$ROWS" "${BYTES_OF[iolab]}" >"$IOLAB_DATA/.bench-loaded"
  echo "  $(( ${BYTES_OF[iolab]} / 1048576 )) MiB (${BYTES_OF[iolab]} bytes)"
fi
if ! iolab_start check; then
  die "iolab refuses to start on $IOLAB_DATA ($START_ERR); if the storage format changed, remove it: rm -rf $IOLAB_DATA"
fi
IOLAB_VERSION="$(q iolab 'SELECT version()')"
iolab_stop
BYTES="${BYTES_OF[iolab]}"

if [ "$SKIP_PG18" != 1 ]; then
  pg_env iolab-io-bench
  echo
  echo "== PostgreSQL 18: table $TABLE, $ROWS rows, in $PG18_DATA_BENCH (port $PG18_BENCH_PORT)"
  echo "  same file system: $(df --output=source "$(dirname "$PG18_DATA_BENCH")" | tail -1) (iolab: $dev)"
  if [ -f "$BENCH_DIR/pg18-$ROWS.loaded" ] && [ -f "$PG18_DATA_BENCH/PG_VERSION" ]; then
    BYTES_OF[pg18]="$(sed -n 's/^bytes=//p' "$BENCH_DIR/pg18-$ROWS.loaded")"
    echo "  reusing it ($(( ${BYTES_OF[pg18]} / 1048576 )) MiB)"
  elif pg_start "-c io_method=worker"; then
    load pg18
    BYTES_OF[pg18]="$(q pg18 "SELECT pg_relation_size('$TABLE')")"
    pg_stop
    printf 'rows=%s\nbytes=%s\n' "$ROWS" "${BYTES_OF[pg18]}" >"$BENCH_DIR/pg18-$ROWS.loaded"
    echo "  $(( ${BYTES_OF[pg18]} / 1048576 )) MiB (${BYTES_OF[pg18]} bytes)"
  else
    echo "  PostgreSQL 18 did not start ($START_ERR): PostgreSQL rows skipped"
    SKIP_PG18=1
    CONFIGS=("${CONFIGS[@]/pg18*/}")
  fi
  if [ "$SKIP_PG18" != 1 ]; then
    pg_start "-c io_method=worker" && PG_VERSION_STR="$(q pg18 'SHOW server_version')" && pg_stop
  fi
fi

# ---- fio --------------------------------------------------------------------------------
declare -A FIO_MBS FIO_S FIO_NOTE
FIO_KEYS=()
if [ "$SKIP_FIO" != 1 ]; then
  FIO_FILE="$BENCH_DIR/fio-$BYTES.dat"
  echo
  echo "== fio $(fio --version), sequential read of $FIO_FILE ($(( BYTES / 1048576 )) MiB, the table's size)"
  if [ ! -f "$FIO_FILE" ] || [ "$(stat -c %s "$FIO_FILE")" != "$BYTES" ]; then
    rm -f "$BENCH_DIR"/fio-*.dat
    echo "  writing it once"
    fio --name=layout --filename="$FIO_FILE" --size="$BYTES" --rw=write --bs=1m --direct=1 \
      --ioengine=io_uring --iodepth=8 --minimal >/dev/null
  fi
  fio_run() { # key args... -> "MB/s seconds" or "ERR msg"
    local out; out="$(fio --name=seq --filename="$FIO_FILE" --size="$BYTES" --rw=read "$@" --minimal 2>&1)" \
      || { echo "ERR $(echo "$out" | tail -1 | cut -c1-100)"; return; }
    echo "$out" | awk -F';' '$1==3 {if ($5 != 0) print "ERR fio error " $5; else printf "%.1f %.3f\n", $6*1.024/$9, $9/1000}'
  }
  fio_direct() { # key (direct/MEM/BS/QD) -> what fio_run prints
    local mem bs qd
    IFS=/ read -r _ mem bs qd <<<"$1"
    fio_run --bs="$bs" --direct=1 --ioengine=io_uring --iodepth="$qd" --iomem="$mem"
  }
  for mem in malloc shmhuge; do
    for bs in 128k 1m; do
      for qd in 8 32; do FIO_KEYS+=("direct/$mem/$bs/$qd"); done
    done
  done
  FIO_KEYS+=("buffered/malloc/8k/1")
  declare -A FIO_ALL
  for r in $(seq "$RUNS"); do
    for k in "${FIO_KEYS[@]}"; do
      io="${k%%/*}"
      if [ "$io" = direct ]; then
        res="$(fio_direct "$k")"
      else
        drop_caches; cold_wait
        res="$(fio_run --bs=8k --direct=0 --ioengine=psync)"
      fi
      if [ "${res%% *}" = ERR ]; then
        FIO_NOTE[$k]="${res#ERR }"
      else
        FIO_ALL[$k]="${FIO_ALL[$k]:-} ${res%% *}"
        echo "fio,$k,$io,fio,$r,${res#* },,${res%% *} MB/s,$(loadnow)" >>"$RUNS_CSV"
      fi
      printf "  [%d/%d] %-26s %s\n" "$r" "$RUNS" "$k" "$( [ "${res%% *}" = ERR ] && echo "n/a: ${res#ERR }" || echo "${res%% *} MB/s")"
    done
  done
  for k in "${FIO_KEYS[@]}"; do
    [ -n "${FIO_ALL[$k]:-}" ] || continue
    FIO_MBS[$k]="$(printf '%s\n' ${FIO_ALL[$k]} | sort -g | awk '{a[NR]=$1} END{m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.1f %.1f %.1f", m, a[1], a[NR]}')"
  done
fi
# The device's sequential limit: the best median among fio's direct runs.
FIO_BEST=0; FIO_BEST_KEY=""
for k in "${!FIO_MBS[@]}"; do
  case "$k" in direct/*) ;; *) continue ;; esac
  m="${FIO_MBS[$k]%% *}"
  if awk -v a="$m" -v b="$FIO_BEST" 'BEGIN{exit !(a > b)}'; then FIO_BEST="$m"; FIO_BEST_KEY="$k"; fi
done

# ---- cold runs --------------------------------------------------------------------------
echo
echo "== cold count(*): per run restart, drop the page cache, wait (${DELAY}), one psql session"
for r in $(seq "$RUNS"); do
  for cfg in "${CONFIGS[@]}"; do
    [ -n "$cfg" ] || continue
    [ -z "${REFUSED[$cfg]:-}" ] || continue
    sys="${cfg%%/*}"
    if ! start_cfg "$cfg"; then
      REFUSED[$cfg]="server refused: $START_ERR"
      printf "  [%d/%d] %-22s n/a (%s)\n" "$r" "$RUNS" "$cfg" "${REFUSED[$cfg]}"
      continue
    fi
    [ -n "${NOTE[$cfg]:-}" ] || NOTE[$cfg]="$(effective "$cfg")"
    paired=""
    if [ "$PAIRED_FIO" = 1 ] && [ -n "$FIO_BEST_KEY" ] && [ "${cfg##*/}" = direct ]; then
      # The device's rate drifts over minutes on this VM: measure it right before the run.
      paired="$(fio_direct "$FIO_BEST_KEY")"
      paired="${paired%% *}"; [ "$paired" != ERR ] || paired=""
    fi
    drop_caches; cold_wait
    res="$(timed_count "$sys" 1 | tail -1)"
    [ "$r" != 1 ] || NOTE[$cfg]="${NOTE[$cfg]}; $(observe "$sys")"
    stop_cfg "$cfg"
    if [ "${res%% *}" = ERR ] || [ -z "$res" ]; then
      printf "  [%d/%d] %-22s failed: %s\n" "$r" "$RUNS" "$cfg" "${res#ERR }"
      NOTE[$cfg]="${NOTE[$cfg]}; run $r failed: ${res#ERR }"
      echo "$sys,$cfg,${cfg##*/},cold,$r,,,\"failed: ${res#ERR }\",$(loadnow)" >>"$RUNS_CSV"
      continue
    fi
    secs="${res%% *}"; cnt="${res#* }"
    [ "$cnt" = "$ROWS" ] || NOTE[$cfg]="${NOTE[$cfg]}; count(*) returned $cnt, not $ROWS"
    TIMES[$cfg]="${TIMES[$cfg]:-} $secs"
    mbs="$(awk -v b="${BYTES_OF[$sys]}" -v s="$secs" 'BEGIN{printf "%.1f", b/s/1e6}')"
    echo "$sys,$cfg,${cfg##*/},cold,$r,$secs,$cnt,${paired:+paired fio $paired MB/s},$(loadnow)" >>"$RUNS_CSV"
    [ -z "$paired" ] || PAIRED[$cfg]="${PAIRED[$cfg]:-} $(awk -v a="$mbs" -v b="$paired" 'BEGIN{printf "%.3f", a/b}')"
    printf "  [%d/%d] %-23s %8.3f s  %6.0f MB/s %s  %s\n" "$r" "$RUNS" "$cfg" "$secs" "$mbs" \
      "${paired:+(fio just before: $paired MB/s)}" "$( [ "$r" = 1 ] && echo "(${NOTE[$cfg]})")"
  done
done

# ---- EXPLAIN (ANALYZE, BUFFERS), once per configuration, cold -----------------------------
if [ "$SKIP_EXPLAIN" != 1 ]; then
  echo
  echo "== EXPLAIN (ANALYZE, BUFFERS) SELECT count(*), cold, once per configuration (full text: $EXPLAIN_TXT)"
  for cfg in "${CONFIGS[@]}"; do
    [ -n "$cfg" ] || continue
    [ -z "${REFUSED[$cfg]:-}" ] || continue
    sys="${cfg%%/*}"
    start_cfg "$cfg" || continue
    drop_caches; cold_wait
    out="$(q "$sys" "EXPLAIN (ANALYZE, BUFFERS) SELECT count(*) FROM $TABLE" 2>&1 || true)"
    stop_cfg "$cfg"
    { echo "=== $cfg"; echo "$out"; echo; } >>"$EXPLAIN_TXT"
    echo "  $cfg:"
    echo "$out" | awk '/^Planning/{skip=1} /Execution Time|ERROR/{skip=0} !skip{print "      " $0}'
  done
fi

# ---- warm runs --------------------------------------------------------------------------
# OS-cached: the table in the page cache, the pool (128MB, a bulk-read ring) not holding it.
# Pool-cached: every page in the buffer pool. iolab: shared_buffers > 4 × table, so a scan
# does not use a ring and its pages stay; PostgreSQL: pg_prewarm into a pool ≥ the table.
declare -A WARM
warm() { # key system server-args-or-opts prep-sql
  local key=$1 sys=$2 opts=$3 prep=$4
  if [ "$sys" = iolab ]; then
    # shellcheck disable=SC2086
    iolab_start "$key" $opts || { REFUSED[$key]="server refused: $START_ERR"; echo "  $key: n/a (${REFUSED[$key]})"; return; }
  else
    pg_start "$opts" || { REFUSED[$key]="server refused: $START_ERR"; echo "  $key: n/a (${REFUSED[$key]})"; return; }
  fi
  if [ -n "$prep" ]; then
    local stmts; IFS='|' read -ra stmts <<<"$prep"
    q "$sys" "${stmts[@]}" >/dev/null 2>&1 || NOTE[$key]="preparation failed: $prep"
  fi
  timed_count "$sys" 1 >/dev/null
  local out; out="$(timed_count "$sys" "$RUNS")"
  stop_cfg "$sys/"
  if echo "$out" | grep -q '^ERR'; then
    REFUSED[$key]="query failed: $(echo "$out" | grep '^ERR' | head -1 | cut -c5-110)"; echo "  $key: n/a (${REFUSED[$key]})"; return
  fi
  TIMES[$key]="$(echo "$out" | awk '{printf " %s", $1}')"
  local i=0; while read -r s c; do i=$((i + 1)); echo "$sys,$key,buffered,warm,$i,$s,$c,,$(loadnow)" >>"$RUNS_CSV"; done <<<"$out"
  echo "  $key: $(echo "$out" | awk '{printf "%.3f s  ", $1}')"
}
if [ "$SKIP_WARM" != 1 ]; then
  echo
  echo "== warm count(*): one unmeasured scan, then $RUNS timed in the same session"
  warm "iolab/worker/os-cached" iolab "-c io_method=worker" ""
  [ "$SKIP_PG18" = 1 ] || warm "pg18/worker/os-cached" pg18 "-c io_method=worker" ""
  if [ "$SKIP_POOL" != 1 ]; then
    avail_mb="$(awk '/MemAvailable/{print int($2/1024)}' /proc/meminfo)"
    need_mb=$(( BYTES * 41 / 10 / 1048576 + 64 ))
    if [ $(( avail_mb - need_mb )) -ge 4096 ]; then
      SHARED_BUFFERS_SAVED="$SHARED_BUFFERS"; SHARED_BUFFERS="${need_mb}MB"
      warm "iolab/worker/pool-cached" iolab "-c io_method=worker" ""
      SHARED_BUFFERS="$SHARED_BUFFERS_SAVED"
      NOTE[iolab/worker/pool-cached]="shared_buffers ${need_mb}MB (> 4 × table: no ring)"
    else
      REFUSED[iolab/worker/pool-cached]="needs shared_buffers ${need_mb}MB (> 4 × table) + 4 GiB spare; MemAvailable ${avail_mb}MB"
      echo "  iolab/worker/pool-cached: n/a (${REFUSED[iolab/worker/pool-cached]})"
    fi
    if [ "$SKIP_PG18" != 1 ]; then
      pg_mb=$(( ${BYTES_OF[pg18]} * 11 / 10 / 1048576 + 128 ))
      warm "pg18/worker/pool-cached" pg18 "-c io_method=worker -c shared_buffers=${pg_mb}MB" \
        "CREATE EXTENSION IF NOT EXISTS pg_prewarm|SELECT pg_prewarm('$TABLE')"
      NOTE[pg18/worker/pool-cached]="shared_buffers ${pg_mb}MB, pg_prewarm"
    fi
  fi
fi

# ---- table ------------------------------------------------------------------------------
median_of() { [ -n "${TIMES[$1]:-}" ] && stats "${TIMES[$1]}" | cut -d' ' -f1 || echo ""; }
echo "system,method,io,phase,runs,median_s,min_s,max_s,mb_s,pct_of_fio,vs_pg18_worker,rows_per_s,table_bytes,rows,delay_s,note" >"$CSV"
FMT="%-6s %-26s %-9s %9s %15s %7s %6s %8s %9s\n"
{
  echo
  echo "== results: $ROWS rows, iolab table ${BYTES} bytes; $IOLAB_VERSION; PostgreSQL ${PG_VERSION_STR:-skipped}"
  if [ -n "$FIO_BEST_KEY" ]; then fio_txt="% fio = of $FIO_BEST MB/s (fio $FIO_BEST_KEY, the best direct median)"; else fio_txt="% fio: fio skipped"; fi
  echo "   cold = restart, drop caches, wait (${DELAY}); median of $RUNS (min–max); $fio_txt;"
  echo "   vs PG18 worker = PostgreSQL 18 worker's median time / this median (> 1: faster), cold vs cold, warm vs warm"
  echo "   load average at the start $load1, now $(cut -d' ' -f1-3 /proc/loadavg) (other processes on the CPUs make every figure noisier)"
  printf "$FMT" system method I/O "median s" "min–max s" "MB/s" "% fio" "vs PG18w" "rows/s"
  printf "$FMT" ------ -------------------------- --------- --------- --------------- ------- ------ -------- ---------
} | tee "$TABLE_TXT"
row() { # system method io phase key ref-key
  local sys=$1 method=$2 io=$3 phase=$4 key=$5 ref=$6
  if [ -n "${REFUSED[$key]:-}" ] || [ -z "${TIMES[$key]:-}" ]; then
    local why="${REFUSED[$key]:-}"
    [ -n "$why" ] || why="no successful run${NOTE[$key]:+: ${NOTE[$key]}}"
    printf "%-6s %-26s %-9s n/a (%s)\n" "$sys" "$method" "$io" "$why" | tee -a "$TABLE_TXT"
    echo "$sys,$method,$io,$phase,0,,,,,,,,${BYTES_OF[$sys]:-},$ROWS,$DELAY,\"n/a ($why)\"" >>"$CSV"
    return
  fi
  local med mn mx; read -r med mn mx <<<"$(stats "${TIMES[$key]}")"
  local refmed; refmed="$(median_of "$ref")"
  local b="${BYTES_OF[$sys]}"
  local line; line="$(awk -v b="$b" -v m="$med" -v lo="$mn" -v hi="$mx" -v f="$FIO_BEST" -v rm="$refmed" -v rows="$ROWS" -v ph="$phase" \
    'BEGIN{mbs=b/m/1e6; pf=(f>0 && ph=="cold")?sprintf("%.0f%%", 100*mbs/f):"-"; vs=(rm!="")?sprintf("%.2fx", rm/m):"-";
           printf "%.3f|%.3f–%.3f|%.0f|%s|%s|%.0f", m, lo, hi, mbs, pf, vs, rows/m}')"
  IFS='|' read -r c1 c2 c3 c4 c5 c6 <<<"$line"
  printf "$FMT" "$sys" "$method" "$io" "$c1" "$c2" "$c3" "$c4" "$c5" "$(awk -v r="$c6" 'BEGIN{printf "%.1f M", r/1e6}')" | tee -a "$TABLE_TXT"
  local n; n="$(echo "${TIMES[$key]}" | wc -w)"
  [ "$c4" != - ] || c4=""; [ "$c5" != - ] || c5=""
  echo "$sys,$method,$io,$phase,$n,$med,$mn,$mx,$c3,${c4%\%},${c5%x},$c6,$b,$ROWS,$DELAY,\"${NOTE[$key]:-}\"" >>"$CSV"
}
for k in "${FIO_KEYS[@]}"; do
  IFS=/ read -r io mem bs qd <<<"$k"
  if [ "$io" = direct ]; then
    label="io_uring $bs QD$qd"; iol="direct-4K"; [ "$mem" != shmhuge ] || iol="direct-2M"
  else
    label="psync 8k (readahead) cold"; iol="buffered"
  fi
  if [ -z "${FIO_MBS[$k]:-}" ]; then
    printf "%-6s %-26s %-9s n/a (%s)\n" fio "$label" "$iol" "${FIO_NOTE[$k]:-no run}" | tee -a "$TABLE_TXT"
    echo "fio,$label,$iol,fio,0,,,,,,,,$BYTES,,$DELAY,\"n/a (${FIO_NOTE[$k]:-no run})\"" >>"$CSV"
    continue
  fi
  read -r m lo hi <<<"${FIO_MBS[$k]}"
  printf "$FMT" fio "$label" "$iol" "$(awk -v b="$BYTES" -v m="$m" 'BEGIN{printf "%.3f", b/m/1e6}')" \
    "$(awk -v b="$BYTES" -v lo="$lo" -v hi="$hi" 'BEGIN{printf "%.3f–%.3f", b/hi/1e6, b/lo/1e6}')" \
    "$(printf %.0f "$m")" "$(awk -v m="$m" -v f="$FIO_BEST" 'BEGIN{printf "%.0f%%", 100*m/f}')" "-" "-" | tee -a "$TABLE_TXT"
  echo "fio,$label,$iol,fio,$RUNS,$(awk -v b="$BYTES" -v m="$m" -v lo="$lo" -v hi="$hi" 'BEGIN{printf "%.3f,%.3f,%.3f", b/m/1e6, b/hi/1e6, b/lo/1e6}'),$m,$(awk -v m="$m" -v f="$FIO_BEST" 'BEGIN{printf "%.0f", 100*m/f}'),,,$BYTES,,$DELAY,\"MB/s min-max $lo-$hi\"" >>"$CSV"
done
for cfg in "${CONFIGS[@]}"; do
  [ -n "$cfg" ] || continue
  IFS=/ read -r sys m io <<<"$cfg"
  [ "$io" != direct ] || io="direct-hp"
  row "$sys" "$m cold" "$io" cold "$cfg" "pg18/worker/buffered"
done
for k in iolab/worker/os-cached pg18/worker/os-cached iolab/worker/pool-cached pg18/worker/pool-cached; do
  [ -n "${TIMES[$k]:-}${REFUSED[$k]:-}" ] || continue
  IFS=/ read -r sys m phase <<<"$k"
  row "$sys" "$m $phase" buffered "$phase" "$k" "pg18/worker/$phase"
done
if [ -n "${PAIRED[*]:-}" ]; then
  echo
  echo "paired with fio ($FIO_BEST_KEY) run just before each cold run: iolab MB/s / fio MB/s, median (min-max)" | tee -a "$TABLE_TXT"
  for k in "${!PAIRED[@]}"; do
    printf "  %-24s %s\n" "$k" "$(stats "${PAIRED[$k]}" | awk '{printf "%.2f (%.2f-%.2f)", $1, $2, $3}')"
  done | sort | tee -a "$TABLE_TXT"
fi
echo
echo "notes per configuration:"
for k in "${!NOTE[@]}"; do echo "  $k: ${NOTE[$k]}"; done | sort
echo
echo "CSV: $CSV (per run: $RUNS_CSV); table: $TABLE_TXT; server logs: $LOGS"
