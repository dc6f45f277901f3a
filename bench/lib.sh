# Shared parts of the benchmark scripts in bench/: starting and stopping iolab and the
# PostgreSQL 18 reference, running SQL on either, dropping the page cache, medians.
# Sourced, not run. The calling script sets, before calling these:
#   IOLAB_BIN IOLAB_DATA IOLAB_PORT SHARED_BUFFERS LOGS START_TIMEOUT    (iolab)
#   PG18 PG18_BENCH_PORT, and PG18_DATA_BENCH through pg_env NAME         (PostgreSQL 18)
# and gets IOLAB_PID, PG18_RUNNING and START_ERR (why a server did not start).

IOLAB_PID=""
PG18_RUNNING=0
PG18_DATA_BENCH=""
START_ERR=""

# parse_small_flag LAST_HELP_LINE ARGS... : the scripts' one option. --small sets SMALL=1;
# -h/--help prints the calling script's header (lines 2..LAST_HELP_LINE) and exits.
parse_small_flag() {
  local help_end=$1 arg
  shift
  SMALL=0
  for arg in "$@"; do
    case "$arg" in
      --small) SMALL=1 ;;
      -h|--help) sed -n "2,${help_end}p" "$0"; exit 0 ;;
      *) echo "unknown argument: $arg (try --help)" >&2; exit 2 ;;
    esac
  done
}

nostyle() { sed 's/\x1b\[[0-9;]*m//g'; }
loadnow() { cut -d" " -f1 /proc/loadavg; }
drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches; }

# cold_wait: the wait between a cache drop and a cold run, as DELAY says: a number of
# seconds, or "settle" — until this VM has reported the pages the drop freed to its host
# (the counter below unchanged for 4 s; at most 60 s). A reported page costs a host page
# fault when the kernel hands it out again, so a buffered read's speed depends on how much
# of the free memory was reported when it started (../shared/reference/machine-io-facts.md);
# after a fixed delay that depends on the previous run and the reporter's timing, which
# made a run's time depend on the run before it. Settled, every cold run starts with all
# free memory reported: slower buffered reads, but the same for every run and system.
# Where the counter does not exist (another machine kind), "settle" waits 10 s.
PAGE_REPORTING_COUNTER=/sys/module/page_reporting/parameters/reported_kib
cold_wait() {
  if [ "$DELAY" != settle ]; then sleep "$DELAY"; return; fi
  [ -r "$PAGE_REPORTING_COUNTER" ] || { sleep 10; return; }
  local last now quiet=0 polls=0
  last="$(cat "$PAGE_REPORTING_COUNTER")"
  while [ "$quiet" -lt 8 ] && [ "$polls" -lt 120 ]; do
    sleep 0.5; polls=$((polls + 1))
    now="$(cat "$PAGE_REPORTING_COUNTER")"
    if [ "$now" = "$last" ]; then quiet=$((quiet + 1)); else quiet=0; last="$now"; fi
  done
}
mb_of() { # 128MB / 1GB / 16384 (8 kB blocks) -> MB
  local v=$1
  case "$v" in
    *GB) echo $(( ${v%GB} * 1024 )) ;; *MB) echo "${v%MB}" ;; *kB) echo $(( ${v%kB} / 1024 )) ;;
    *) echo $(( v * 8 / 1024 )) ;;
  esac
}

# iolab_start LABEL ARGS... : starts iolab on IOLAB_DATA; on failure sets START_ERR, returns 1.
iolab_start() {
  local label=$1; shift
  local log="$LOGS/iolab-start.log"
  "$IOLAB_BIN" --data-dir "$IOLAB_DATA" --port "$IOLAB_PORT" -c "shared_buffers=$SHARED_BUFFERS" \
    -c track_io_timing=on "$@" >"$log" 2>&1 &
  IOLAB_PID=$!
  local waited=0
  while :; do
    if ! kill -0 "$IOLAB_PID" 2>/dev/null; then
      wait "$IOLAB_PID" 2>/dev/null || true; IOLAB_PID=""
      START_ERR="$(nostyle <"$log" | grep -v '^\s*$' | grep -iE 'error|fatal|panic|invalid|unsupported|not supported|cannot|failed' | tail -1 | cut -c1-110)"
      [ -n "$START_ERR" ] || START_ERR="$(nostyle <"$log" | grep -v '^\s*$' | tail -1 | cut -c1-110)"
      { echo "=== $label: refused"; nostyle <"$log"; } >>"$LOGS/iolab.log"
      return 1
    fi
    psql -X -h 127.0.0.1 -p "$IOLAB_PORT" -U postgres -c 'SELECT 1' >/dev/null 2>&1 && break
    sleep 0.2; waited=$((waited + 1))
    if [ "$waited" -gt $((START_TIMEOUT * 5)) ]; then
      START_ERR="not ready after ${START_TIMEOUT} s"; iolab_stop; return 1
    fi
  done
  echo "=== $label: started $(date +%T)" >>"$LOGS/iolab.log"
}
iolab_stop() {
  [ -n "$IOLAB_PID" ] || return 0
  kill "$IOLAB_PID" 2>/dev/null || true
  local i; for i in $(seq 600); do kill -0 "$IOLAB_PID" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$IOLAB_PID" 2>/dev/null || true
  wait "$IOLAB_PID" 2>/dev/null || true
  IOLAB_PID=""
  nostyle <"$LOGS/iolab-start.log" >>"$LOGS/iolab.log"
}
# pg_env NAME : PG18_DATA_BENCH becomes NAME-ROWS beside pg18-reference's own data directory.
pg_env() { eval "$("$PG18" env)"; PG18_HOME="$(dirname "$PG18_DATA")"; PG18_DATA_BENCH="$PG18_HOME/$1-$ROWS"; }
# pg_start OPTS : starts the bench PostgreSQL 18 with extra `-c` options.
pg_start() {
  local out
  if ! out="$(PG18_DATA="$PG18_DATA_BENCH" PG18_PORT="$PG18_BENCH_PORT" \
      PG18_OPTS="-c max_parallel_workers_per_gather=0 -c autovacuum=off $1" "$PG18" start 2>&1)"; then
    START_ERR="$(echo "$out" | tail -1 | cut -c1-110)"
    local slog; slog="$(dirname "$PG18_DATA")/server.log"
    [ -f "$slog" ] && START_ERR="$START_ERR: $(grep -E 'FATAL|ERROR|LOG:  invalid' "$slog" | tail -1 | cut -c1-110)"
    return 1
  fi
  PG18_RUNNING=1
}
pg_stop() {
  PG18_DATA="$PG18_DATA_BENCH" PG18_PORT="$PG18_BENCH_PORT" "$PG18" stop >/dev/null 2>&1 || true
  PG18_RUNNING=0
}
port_of() { [ "$1" = iolab ] && echo "$IOLAB_PORT" || echo "$PG18_BENCH_PORT"; }
q() { # system sql... : unaligned, tuples only
  local port; port="$(port_of "$1")"; shift
  local args=(-X -q -A -t -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1)
  local s; for s in "$@"; do args+=(-c "$s"); done
  psql "${args[@]}"
}

# What the running server really does, seen from outside: relation files open with O_DIRECT
# (iolab only: its process holds them), and the server process's memory in 2 MiB pages —
# hugetlb mappings (MAP_HUGETLB / SysV SHM_HUGETLB) and transparent huge pages.
observe() { # system
  local out="" pid=""
  if [ "$1" = iolab ]; then pid="$IOLAB_PID"; else pid="$(head -1 "$PG18_DATA_BENCH/postmaster.pid" 2>/dev/null || true)"; fi
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || { echo "process not found"; return; }
  if [ "$1" = iolab ]; then
    local f t flags n=0 d=0
    for f in /proc/"$pid"/fd/*; do
      t="$(readlink "$f" 2>/dev/null)" || continue
      case "$t" in "$IOLAB_DATA"/base/*) ;; *) continue ;; esac
      flags="$(awk '/^flags/{print $2}' "/proc/$pid/fdinfo/${f##*/}" 2>/dev/null)" || continue
      n=$((n + 1)); [ $(( 8#$flags & 8#40000 )) = 0 ] || d=$((d + 1))
    done
    out="O_DIRECT on $d of $n open relation files; "
  fi
  out="$out$(awk '/^Size:/{size=$2} /^KernelPageSize:/{if ($2 == 2048) h += size} /^AnonHugePages:/{thp += $2}
                 END{printf "hugetlb mappings %d MB, THP %d MB", h/1024, thp/1024}' "/proc/$pid/smaps" 2>/dev/null)"
  echo "$out"
}
# stats "x y z" : "median min max" of the numbers, 3 decimals.
stats() { printf '%s\n' $1 | sort -g | awk '{a[NR]=$1} END{m=(NR%2)?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2; printf "%.3f %.3f %.3f", m, a[1], a[NR]}'; }

# ---- paired runs (bench/*-paired.sh) -----------------------------------------------------
# paired_setup DATA : needs psql, fio and cc; builds the device in-flight sampler
# (bench/tools/inflight.c) as SAMPLER in BENCH_DIR and finds the block device holding DATA
# (DEV).
paired_setup() {
  local tool
  for tool in psql fio cc; do command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }; done
  SAMPLER="$BENCH_DIR/inflight"
  cc -O2 -o "$SAMPLER" bench/tools/inflight.c
  DEV="$(basename "$(df --output=source "$1" | tail -1)")"
  [ -e "/sys/block/$DEV/inflight" ] || DEV="$(lsblk -no pkname "/dev/$DEV" | head -1)"
}
# reserve_hugepages SHARED_BUFFERS : vm.nr_hugepages for a buffer pool of that size (the
# server runs with huge_pages=try), some slack, and fio's 32 MiB of buffers. The caller
# keeps the old count and restores it at exit.
reserve_hugepages() {
  local mb
  case "$1" in *GB) mb=$(( ${1%GB} * 1024 )) ;; *MB) mb=${1%MB} ;; *) echo "shared_buffers in MB or GB, not $1" >&2; exit 1 ;; esac
  echo $(( mb / 2 + 64 + 32 )) > /proc/sys/vm/nr_hugepages
}
# copy_config_binaries : BIN[LABEL] becomes a copy in BENCH_DIR of each CONFIGS entry's
# binary (LABEL:BINARY:…), so a rebuild during the runs changes nothing. (declare -A BIN first.)
copy_config_binaries() {
  local c label bin
  for c in $CONFIGS; do
    IFS=: read -r label bin _ <<<"$c"
    BIN[$label]="$BENCH_DIR/paired-$label.bin"
    cp "$bin" "${BIN[$label]}"
  done
}
# inflight_start, then inflight_stop: the device's reads in flight sampled every ms in
# between; inflight_figure WORD then prints the sampler's number after WORD ("flight" for
# the mean in flight, "idle" for the idle share).
inflight_start() { "$SAMPLER" "$DEV" 60 >"$BENCH_DIR/inflight.out" & INFLIGHT_PID=$!; }
inflight_stop() { kill -INT "$INFLIGHT_PID"; wait "$INFLIGHT_PID" || true; }
inflight_figure() {
  awk -v word="$1" '{for (i = 1; i < NF; i++) if ($i == word) {v = $(i+1); gsub(/[,%]/, "", v); print v}}' \
    "$BENCH_DIR/inflight.out"
}
# median_of_lines : the median of the numbers on stdin, one per line, as written.
median_of_lines() { sort -g | awk '{a[NR] = $1} END {printf "%s", (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

# ---- the device on a query's own blocks (bench/bitmap-*.sh) ------------------------------
# ctid_blocks : ctids "(b,o)" on stdin, one per line → their block numbers, sorted, unique.
ctid_blocks() { tr -d '()' | cut -d, -f1 | sort -n -u; }
# replay_log FILE GAP : block numbers on stdin (sorted) → a fio I/O log reading them from FILE
# in block order: runs of adjacent blocks, joined across gaps of at most GAP blocks, cut at
# 1 MiB. Says on stderr how many reads and blocks it wrote.
replay_log() {
  awk -v file="$1" -v gap="$2" -v max=128 '
    function emit() { printf "%s read %d %d\n", file, first * 8192, (last - first + 1) * 8192; reads++; blocks += last - first + 1 }
    BEGIN { print "fio version 2 iolog"; print file " add"; print file " open" }
    NR == 1 { first = last = $1; next }
    { if ($1 - last - 1 <= gap && $1 - first + 1 <= max) last = $1; else { emit(); first = last = $1 } }
    END { if (NR) emit(); print file " close"; printf "%d reads, %d blocks\n", reads, blocks > "/dev/stderr" }'
}
# How each query's blocks are replayed, the fastest way found on this machine kind
# (2026-12-03): the sparse query's blocks one 8 KiB read each at depth 64; the dense query's
# joined across gaps of up to 2 blocks into reads of up to 1 MiB at depth 32 (375–399 ms,
# where reading exactly the blocks asked for took 509–557 ms even at depth 64).
declare -A REPLAY_GAP_OF=([dense]=2 [sparse]=0) REPLAY_QD_OF=([dense]=32 [sparse]=64)
# replay_ms LOG QD : fio replays LOG as fast as it can (O_DIRECT, buffers in huge pages, depth
# QD; needs 32 MiB of vm.nr_hugepages) and prints the milliseconds it took.
replay_ms() {
  fio --name=replay --read_iolog="$1" --replay_no_stall=1 --direct=1 --ioengine=io_uring \
    --iodepth="$2" --iomem=shmhuge --minimal 2>/dev/null | awk -F';' '$1==3 {print $9}'
}
