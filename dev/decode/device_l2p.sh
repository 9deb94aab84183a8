#!/bin/bash
# GPU machine, one call (issue 32, fifteenth session): the weight maps' L2 promotion (DC_L2P 256 =
# the default / 128 / 0) on the best persistent (DC_GRID = 6) and DC_XR = 3 configs at the suite's
# wide 16-row keys. Binaries from pb/ (dev/decode/stage.sh); logs under $OUT:
#   1. the copy rate; GemmGpu.DecodeTmaVsReference (with its DC_L2P = 0 rows) in the background
#      beside process 0 of gemm_bench (it compiles the probe's kernels; its times are not used);
#   2. PROCS gemm_bench processes, --only each key's two base configs at the three promotions and
#      --twin the same, so every promotion is timed in the pick's interleaved rounds with cuBLASLt's
#      best (the order of the --only list reversed in even processes);
#   3. dev/decode/l2p_table.py: per key, mode and base config, each promotion's µs and X/256.
#   OUT=$OUT DEADLINE=60 bash dev/decode/device_l2p.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-60}"
d() { echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=2,DC_U=$3,DC_DEPTH=$4,DC_PF=1,DC_XR=$5,DC_GRID=$6"; }
G6=$(d 8 1 2 2 0 6)       # G6 W8 NT1 U2 D2: the fastest JIT config at 16x28672x4096
XB=$(d 4 2 2 2 3 4)       # G4 W4 NT2 U2 D2 XR3: at 16x6144x4096
XC=$(d 4 1 4 2 3 4)       # G4 W4 NT1 U4 D2 XR3: at 16x4096x14336
list() {  # list ORDER: the --only/--twin entries, promotions in ORDER
  local l2p key cfg out=""
  for key in 16x28672x4096:"$G6 $XB" 16x6144x4096:"$XB $G6" 16x4096x14336:"$XC $G6"; do
    for cfg in ${key#*:}; do
      for l2p in $1; do
        if [ "$l2p" = 256 ]; then out="$out;$cfg@${key%%:*}"; else out="$out;$cfg,DC_L2P=$l2p@${key%%:*}"; fi
      done
    done
  done
  echo "${out#;}"
}
SHAPES=${SHAPES:-16x28672x4096,16x6144x4096,16x4096x14336}
fits 10 copy && timeout 12 python3 dev/copy_rate.py 2>&1 | tail -1
S=$(date +%s)
PIDS=()
if [ "${TESTS:-}" != none ]; then
  start_gpu_tests "GemmGpu.DecodeTmaVsReference" "${TEST_S:-40}"
fi
KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout 30 "$B/bench/gemm_bench" --kinds=decode \
  --only="$(list '256 128 0')" --twin="$(list '256 128 0')" --shapes="$SHAPES" --rounds=3 \
  > "$OUT/bench0.log" 2> "$OUT/bench0.err"
echo "bench 0 (compiles; beside the tests) rc=$? $(( $(date +%s) - S ))s"
rcs=""
for q in "${PIDS[@]}"; do wait "$q"; rcs="$rcs $?"; done
echo "tests rc:$rcs ($(( $(date +%s) - S ))s)"
grep -hE "^\[ *(OK|FAILED|PASSED) |Failure|bad," "$OUT"/test*.log 2>/dev/null | cut -c1-220 | head -20
n=0
for p in $(seq 1 "${PROCS:-3}"); do
  fits 12 "bench $p" || break
  lim=${BENCH_S:-14}; [ "$(left)" -lt "$lim" ] && lim=$(( $(left) - 3 ))
  order='256 128 0'; [ $((p % 2)) = 0 ] && order='0 128 256'
  S=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_gemm_bench timeout "$lim" "$B/bench/gemm_bench" --kinds=decode \
    --only="$(list "$order")" --twin="$(list "$order")" --shapes="$SHAPES" --rounds="${ROUNDS:-5}" \
    > "$OUT/bench$p.log" 2> "$OUT/bench$p.err"
  echo "bench $p rc=$? $(( $(date +%s) - S ))s (limit $lim, order $order)"; n=$p
done
grep -h "^VERIFY" "$OUT"/bench*.log 2>/dev/null | grep -v " ok " | head -10
grep -hE "failed|error" "$OUT"/bench*.err 2>/dev/null | head -5
echo "VERIFY ok: $(grep -h '^VERIFY' "$OUT"/bench*.log 2>/dev/null | grep -c ' ok ') of $(grep -h '^VERIFY' "$OUT"/bench*.log 2>/dev/null | wc -l)"
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | cut -c1-230
print_bench_tables "$n" 200 | grep -v "^  ktune" | head -30
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./*.log ./*.err 2>/dev/null; rm -f ./*.err)
