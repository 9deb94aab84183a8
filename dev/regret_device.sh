#!/usr/bin/env bash
# GPU machine, one call: the guided search's quality against the exhaustive one over the whole
# regret set, its tuning time, and the peers' tuning time in the same run (issue 34). Everything
# is time-boxed against one deadline (DEADLINE seconds from the start, default 230: one call of
# at most 330 s with the machine's start), steps in order of priority:
#   1. tuning time, guided: one GEMM shape (4096^3 NT) cold (empty cache) then with the warm
#      code-object store (fresh database; KTUNE_VERBOSE=1: the race's rounds and finalists in
#      its stderr), then both once more (AGAIN=0: not); per run the engine's split, the compile
#      jobs and the process's start-up (JSON "process"); then three launch-bound row-wise keys
#      cold (ROWKEYS=0: not), the launch floor's target;
#   2. `ktune regret --set gpu`: every GEMM key (62: LLM suite, decode M = 1..128, odd shapes,
#      NN/NT/TN), then every row-wise key (24), both searches in one process on one shared store,
#      per key the guided winner's time over the exhaustive winner's (interleaved re-timing, the
#      full do_bench budgets) and each side's tuning time. The exhaustive side runs with its
#      do_bench budgets x EXH_BUDGET (default 0.4; 1 = the full ones) so the whole set fits:
#      every config of every key is still compiled, timed and early-rejected as exhaustively,
#      with fewer runs, and its own finalists re-time the close ones interleaved; the winners'
#      re-timing has RETIME_ROUNDS interleaved rounds (default 4) with the full budgets. --deadline
#      keeps RESERVE seconds for steps 3-4; the shapes run in an order whose every prefix is spread
#      over the set (GEMM_LIMIT / ROW_LIMIT > 0: that many spread shapes instead of all);
#   3. the LLM suite (8 keys), guided, cold and then with the warm store (fresh database); NOLOOK=1
#      then cold once more with --no-lookahead (the look-ahead compiles' A/B);
#   4. the peers, each in its own process killed at its budget (bench/tuning_peers.py): Triton's
#      tutorial autotuner (4096^3 and 16x4096x4096), then torch.compile(mode="max-autotune")
#      with a cold Inductor cache (4096^3), in what is left (PEERS=0: not).
# Binaries: pb.tar.xz from `bash dev/regret_stage.sh` on the dev machine (Release ktune and
# ktune-worker; nothing is built here), else $KB with SKIP_BUILD=1, else a build as
# dev/device_build.sh does (carry .devdeps; minutes). Logs packed in $OUT/logs.tgz; a short table last.
# With two GPUs (PAR=1, the default when nvidia-smi lists two): the suite runs before the regret
# sets, and the GEMM and row-wise sets run at once, one GPU each. One GPU: SUITE_FIRST=1 runs the
# suite before the regret sets (which then take what is left: the GEMM table is written row by row
# to $OUT/regret_gemm.txt, so a deadline cut keeps every finished key); ROWS=0 gives the GEMM set
# all of it.
# Usage: DEADLINE=230 bash dev/regret_device.sh
# Dry run of the logic on a CPU machine: KTUNE_BACKEND=sim SKIP_BUILD=1 KB=build REGRET_SET=ci \
#   SHAPE="--m 512 --n 512 --k 4096" SUITE="--m 256 --n 1024 --k 4096" bash dev/regret_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# The per-run JSON and stderr logs go to $W, packed into $OUT/logs.tgz at the end: a device call
# returns only a few files, and a call cut before the packing must still return the tables.
W=${W:-/tmp/regret-logs}; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s)
DEADLINE=${DEADLINE:-230}
RESERVE=${RESERVE:-60}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
now() { date +%s.%N; }
el() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.2f", b-a}'; }
# Its own build directory (KB): a warm machine may hold another tree's /tmp/kb.
KB=${KB:-/tmp/kb-regret}
[ -f pb.tar.xz ] && [ ! -d pb ] && tar -xJf pb.tar.xz
if [ -x pb/tools/ktune ]; then
  KB=$PWD/pb
elif [ -z "${SKIP_BUILD:-}" ]; then
  S=$(now)
  { if [ -d .devdeps ]; then for f in .devdeps/*.deb; do dpkg -x "$f" /opt/deps; done; fi
    cmake -S . -B "$KB" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=/opt/deps/usr -DKTUNE_WERROR=OFF &&
    cmake --build "$KB" -j"$(nproc)" --target ktune ktune-worker; } > "$OUT/build.log" 2>&1 ||
    { tail -30 "$OUT/build.log"; exit 1; }
  echo "build $(el $S)s"
fi
K=$KB/tools/ktune
"$K" --version > /dev/null 2>&1 || { echo "no runnable $K"; exit 1; }
SUM="$OUT/summary.txt"; : > "$SUM"
row() { echo "$*" | tee -a "$SUM"; }
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,clocks.sm,power.draw --format=csv,noheader | tee -a "$SUM"
fi
# The tuning reports' split: one line per key, then the process's start-up outside the engine.
split() { python3 - "$1" <<'EOF'
import json, sys
t = open(sys.argv[1]).read(); dec = json.JSONDecoder(); d = []
i = t.find('{')  # one report per key, concatenated (the suite), or one list
while i >= 0:
    try: o, end = dec.raw_decode(t[i:])
    except ValueError: break
    d += o if isinstance(o, list) else [o]
    i = t.find('{', i + end)
if not d: print("  no JSON"); sys.exit()
for r in d:
    s = r.get("search", {}); s = s if isinstance(s, dict) else {}
    v = r.get("vs_default", {})
    rounds = " ".join("r%d:%d/%d/-%d" % (x["round"], x.get("compiled", 0), x["benchmarked"], x["eliminated"]) for x in s.get("rounds", []))
    print("  %-28s total %5.0f ms: compile %4.0f | bench %4.0f = load %3.0f verify %4.0f measure %4.0f + finalists %4.0f (%s x %s rounds, %s) | "
          "compiled %s hits %s not_reached %s regret %.2f%% rounds(compiled/timed/-out) %s" % (
          r.get("key", "")[:28], r.get("total_wall_ms", 0), r.get("compile_wall_ms", 0), r.get("bench_wall_ms", 0),
          r.get("bench_load_ms", 0), r.get("bench_verify_ms", 0), r.get("bench_measure_ms", 0), r.get("finalists_ms", 0),
          v.get("finalists", 0), v.get("rounds", 0), v.get("decision", "-"),
          s.get("compiled"), s.get("store_hits"), s.get("not_reached"), 100 * (s.get("regret_estimate") or 0), rounds)
          + (" launch floor" if s.get("launch_floor") else ""))
for r in d:  # the compile stage: slow compiles (contention, a heavy kernel) or compiles that waited
    c = r.get("compile_jobs") or {}
    if c.get("jobs"):
        print("  %-28s compile jobs %d on %d threads (first wave %d): job sum %.0f max %.0f ms, compiler sum %.0f max %.0f ms; stage %.0f ms" % (
              r.get("key", "")[:28], c["jobs"], c.get("threads", 0), c.get("first_wave", 0), c.get("job_ms_sum", 0),
              c.get("job_ms_max", 0), c.get("compiler_ms_sum", 0), c.get("compiler_ms_max", 0), r.get("compile_wall_ms", 0)))
p = d[-1].get("process", {})
if p:
    print("  process (ms, outside the engine): " + " ".join("%s %.0f" % (k[:-3] if k.endswith("_ms") else k, v) for k, v in sorted(p.items())))
print("  engine total %.0f ms over %d keys" % (sum(r.get("total_wall_ms", 0) for r in d), len(d)))
EOF
}

# 1. Tuning time, guided, one shape: cold (its own empty cache), then the warm code-object store
# with a fresh database (the engine's log in its stderr: the race's rounds, the finalists).
SHAPE=${SHAPE:---m 4096 --n 4096 --k 4096 --layout NT}
SUITE=${SUITE:---suite llm}
# The process tree's resource use (CPU time, page faults, context switches) on stderr's last line:
# whether a slow first process spent CPU or waited; and the output's timeline from the spawn: the
# first stdout bytes (the report: printed once the tuning is done) and the exit, whose difference
# is the teardown after the report.
ru() { python3 -c 'import os, resource, subprocess, sys, time
t0 = time.time(); p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE); first = None
while True:
    b = os.read(p.stdout.fileno(), 1 << 16)
    if not b: break
    first = first or time.time(); os.write(1, b)
r = p.wait(); end = time.time(); u = resource.getrusage(resource.RUSAGE_CHILDREN)
sys.stderr.write("timeline: report at %.3f s, exit at %.3f s, after the report %.0f ms\n" % (
    (first or end) - t0, end - t0, 1e3 * (end - (first or end))))
sys.stderr.write("rusage: user %.2f s sys %.2f s majflt %d minflt %d nvcsw %d nivcsw %d\n" % (u.ru_utime,
    u.ru_stime, u.ru_majflt, u.ru_minflt, u.ru_nvcsw, u.ru_nivcsw)); sys.exit(r)' "$@"; }
# NVRTC 13 keeps its results in the CUDA driver's compute cache (CUDA_CACHE_PATH, ~/.nv by
# default) where libcuda loads: a second process with an empty ktune store compiles nothing. A cold
# pass gets a fresh one (NVRTC_CACHE=kept: the machine's, as before this was known).
tuned() {  # what args passes...: one timed `ktune tune gemm` run, its split into the summary
  local what=$1 args=$2 pass=$3 lim=$4 cc=${CUDA_CACHE_PATH:-}
  case "$pass" in cold*) [ "${NVRTC_CACHE:-fresh}" = fresh ] && cc=$(mktemp -d /tmp/nvcache.XXXX) ;; esac
  S=$(now); CUDA_CACHE_PATH=${cc:-$HOME/.nv/ComputeCache} ru timeout $lim ${KK:-$K} tune gemm $args --json --quiet > "$W/${what}_$pass.json" 2> "$W/${what}_$pass.err"
  rc=$?; row "guided $what ($args) $pass: wall $(el $S)s rc=$rc"; split "$W/${what}_$pass.json" | tee -a "$SUM"
  grep -h '^timeline\|^rusage' "$W/${what}_$pass.err" | tail -2 | sed 's/^/  /' | tee -a "$SUM"
}
# 0. PROBE=1: where a machine's first compiles lose their time (the first process's compile jobs
# took ~5x the second's, with 13x the user CPU): one NVRTC compile (ktune compile, no cache) as the
# machine's first process, then again, then 8 at once (the first compile wave's parallelism); then
# fresh anonymous memory touched twice (GB/s: a machine whose memory is first touched slowly).
if [ "${PROBE:-0}" = 1 ]; then
  pc() { S=$(now); ru $K compile gemm_wgmma --arch sm_90a --no-cache > /dev/null 2> "$W/probe_$1.err"
    row "probe compile $1: wall $(el $S)s $(grep -h '^rusage' "$W/probe_$1.err" | tail -1)"; }
  pc first; pc second
  S=$(now); for i in 1 2 3 4 5 6 7 8; do $K compile gemm_wgmma --arch sm_90a --no-cache > /dev/null 2>&1 & done; wait
  row "probe compile 8 processes at once: wall $(el $S)s"
  for pass in first second; do
    python3 -c 'import ctypes, mmap, time
n = 256 << 20; t0 = time.time(); done = 0; maps = []
while done < (6 << 30) and time.time() - t0 < 2:
    m = mmap.mmap(-1, n); a = ctypes.addressof(ctypes.c_char.from_buffer(m)); ctypes.memset(a, 1, n)
    maps.append(m); done += n
dt = time.time() - t0; print("%.2f GB in %.2f s: %.2f GB/s" % (done / 1e9, dt, done / 1e9 / dt))' > "$W/probe_mem.txt" 2>&1
    row "probe memory touch ($pass process): $(cat "$W/probe_mem.txt")"
  done
  pc after_memory
fi

export KTUNE_CACHE_DIR=/tmp/kr-guided-one; rm -rf "$KTUNE_CACHE_DIR"
tuned one "$SHAPE" cold 40
rm -rf "$KTUNE_CACHE_DIR/db"
KTUNE_VERBOSE=1 tuned one "$SHAPE" warm 30
grep -E "guided: round|finalists [0-9]|engine set-up" "$W/one_warm.err" | sed 's/\[[^]]*\]//' | tee -a "$SUM"
# A second pair (empty cache again, then warm again): the spread between two processes.
if [ "${AGAIN:-1}" = 1 ]; then
  rm -rf "$KTUNE_CACHE_DIR"; tuned one "$SHAPE" cold_again 40
  rm -rf "$KTUNE_CACHE_DIR/db"; tuned one "$SHAPE" warm_again 30
fi
# 1c. BASE: another build's binaries (pb/base from dev/regret_stage.sh BASE=...) against these on
# the same warm store, alternating (base, this) x BASE_PAIRS processes, each with a fresh database.
if [ -x "$KB/base/tools/ktune" ]; then
  for i in $(seq 1 "${BASE_PAIRS:-3}"); do
    rm -rf "$KTUNE_CACHE_DIR/db"; KK=$KB/base/tools/ktune tuned one "$SHAPE" warm_base$i 30
    rm -rf "$KTUNE_CACHE_DIR/db"; tuned one "$SHAPE" warm_this$i 30
  done
fi
unset KTUNE_CACHE_DIR
# 1b. Row-wise keys the launch floor is for (issue 36's tuning time: SiLU·Mul at 32 rows raced 82
# of 96 configs), cold: the race's reach and the tuning time (ROWKEYS=0: not).
if [ "${ROWKEYS:-1}" = 1 ]; then
  export KTUNE_CACHE_DIR=/tmp/kr-guided-rows
  n=0
  for rk in "silu_mul --rows 32 --cols 14336" "silu_mul --rows 8 --cols 14336" "rmsnorm --rows 32 --cols 4096"; do
    n=$((n + 1))
    for k in "$K" "$KB/tools/ktune-nofloor"; do  # the latter: a build without the rule, if staged
      [ -x "$k" ] || continue
      f="$W/rowkey${n}_$(basename $k)"  # its JSON keeps every candidate's time (logs.tgz)
      rm -rf "$KTUNE_CACHE_DIR"; S=$(now); timeout 30 $k tune $rk --json --quiet > "$f.json" 2> "$f.err"
      rc=$?; row "guided $rk cold ($(basename $k)): wall $(el $S)s rc=$rc"; split "$f.json" | head -1 | tee -a "$SUM"
    done
  done
  unset KTUNE_CACHE_DIR
fi

# 2. The regret harness (rows print as they finish; the deadline keeps the summary), and 3. the
# LLM suite, guided, cold (its own empty cache) and with the warm store (fresh database).
SET=${REGRET_SET:-gpu}
EXH_BUDGET=${EXH_BUDGET:-0.4}
RT=${RETIME_ROUNDS:-4}
regret() {  # ops file seconds: one `ktune regret` run of that many seconds at most
  timeout $3 $K regret --set $SET --ops $1 --limit "$4" --deadline $(( $3 - ${5:-15} )) \
    --skip "${6:-0}" --rounds $RT --exhaustive-budget $EXH_BUDGET > "$OUT/$2.txt" 2> "$W/$2.err"
  row "$2 rc=$? (limit ${3}s, exhaustive budgets x $EXH_BUDGET)"; grep -E "^keys" "$OUT/$2.txt" | tee -a "$SUM"
}
suite() {
  [ "${NOSUITE:-0}" = 1 ] && return  # NOSUITE=1: no suite (a call that has time for the sets only)
  export KTUNE_CACHE_DIR=/tmp/kr-guided-suite; rm -rf "$KTUNE_CACHE_DIR"
  tuned suite "$SUITE" cold $(( $(left) - 15 ))
  rm -rf "$KTUNE_CACHE_DIR/db"
  [ "$(left)" -gt 15 ] && tuned suite "$SUITE" warm $(( $(left) - 5 ))
  # NOLOOK=1: the cold suite again without the look-ahead compiles (its own empty cache and a
  # fresh CUDA compute cache), the A/B of `--no-lookahead`.
  if [ "${NOLOOK:-0}" = 1 ] && [ "$(left)" -gt 20 ]; then
    rm -rf "$KTUNE_CACHE_DIR"; tuned suite "$SUITE --no-lookahead" cold_nolook $(( $(left) - 5 ))
  fi
  unset KTUNE_CACHE_DIR
}
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "${PAR:-1}" = 1 ] && [ "$NGPU" -ge 2 ]; then
  # Two GPUs: the suite alone first (its tuning time), then the GEMM and the row-wise regret sets
  # at once, one GPU each, each its own cache (the ratios are GPU timings on separate GPUs; the
  # two processes' tuning times share the host's CPUs).
  [ "$(left)" -gt 35 ] && suite
  L=$(( $(left) - RESERVE - 5 ))
  if [ "$L" -gt 30 ]; then
    ( export CUDA_VISIBLE_DEVICES=0 KTUNE_CACHE_DIR=/tmp/kr-regret-gemm
      regret gemm regret_gemm $L "${GEMM_LIMIT:-0}" ) &
    ( export CUDA_VISIBLE_DEVICES=1 KTUNE_CACHE_DIR=/tmp/kr-regret-rows
      regret rmsnorm,silu_mul regret_rows $L "${ROW_LIMIT:-0}" 10 ) &
    wait
  fi
else
  # One GPU: GEMM gets GEMM_SHARE% (default 70) of what is left after RESERVE (ROWS=0: all of it), the row-wise keys
  # the rest, then the suite (SUITE_FIRST=1: the suite first, then the regret sets in what is left).
  [ "${SUITE_FIRST:-0}" = 1 ] && [ "$(left)" -gt 35 ] && suite
  SHARE=${GEMM_SHARE:-70}; [ "${ROWS:-1}" = 1 ] || SHARE=100
  G=$(( ($(left) - RESERVE - 10) * SHARE / 100 ))
  [ "$G" -gt 30 ] && regret gemm regret_gemm $G "${GEMM_LIMIT:-0}" 15 "${GEMM_SKIP:-0}"
  R=$(( $(left) - RESERVE - 5 ))
  [ "${ROWS:-1}" = 1 ] && [ "$R" -gt 20 ] && regret rmsnorm,silu_mul regret_rows $R "${ROW_LIMIT:-0}" 10
  [ "${SUITE_FIRST:-0}" = 1 ] || { [ "$(left)" -gt 35 ] && suite; }
fi

# 4. The peers, each killed at its budget (their compile caches are cold in a fresh machine).
P=$(( $(left) - 5 ))
if [ "${PEERS:-1}" = 1 ] && [ "$P" -gt 20 ]; then
  TB=$(( P / 3 )); [ "$TB" -gt 40 ] && TB=40
  timeout $(( TB + 10 )) python3 bench/tuning_peers.py --peers=triton --budget=$TB \
    --shapes=4096x4096x4096,16x4096x4096 > "$OUT/peers.txt" 2>&1
  IB=$(( $(left) - 8 ))
  [ "$IB" -gt 15 ] && timeout $(( IB + 5 )) python3 bench/tuning_peers.py --peers=inductor --budget=$IB \
    --shapes=4096x4096x4096 >> "$OUT/peers.txt" 2>&1
  grep -E "^(device|triton|inductor|summary)|skipped|killed|no shape" "$OUT/peers.txt" | tee -a "$SUM"
fi
# Whether the isolation worker ran (a worker that cannot start makes `ktune tune` benchmark in its
# own process, with a line on stderr).
row "in-process fallbacks (worker unavailable): $(cat "$W"/*.err 2>/dev/null | grep -c 'isolated benchmarking unavailable')"
grep -h -m1 'isolated benchmarking unavailable' "$W"/*.err 2>/dev/null | cut -c1-200 | tee -a "$SUM"
# Only a few files come back from a device call: the JSON and stderr logs go in one tarball.
tar -czf "$OUT/logs.tgz" -C "$W" .
# The finalist decisions where the winners differ (the regret tables' indented lines).
grep -h -B1 "finalists: exhaustive" "$OUT"/regret_*.txt 2>/dev/null | cut -c1-220 | tee -a "$SUM"
# The output's tail is what a caller sees first: the summary, then the per-key tables (GEMM last).
echo "== summary =="; cat "$SUM"
echo "== regret (row-wise) =="; cut -c1-110 "$OUT/regret_rows.txt" 2>/dev/null
echo "== regret (GEMM) =="; cut -c1-110 "$OUT/regret_gemm.txt" 2>/dev/null
echo "total $(( $(date +%s) - T0 ))s"
