#!/bin/bash
# GPU machine, one call (issue 32, twenty-sixth session, helper small): DC_SR = 48 (tiles of 48 weight
# rows, one block per tile: 128 blocks at N = 6144, no K split, no cluster; persistent at 28672)
# against each key's curated picks in the same interleaved rounds (knob_ab: GemmGpu.DecodeTmaSlabRows
# VsReference beside gemm_bench process 0, which compiles, then PROCS processes, read flush and
# rotation, cuBLASLt's best and the read in the same rounds, every second process reversed);
# sr_table.py's X/pick and cfg_ratios.py's read / X and cuBLASLt best / X. First (TRACE=1) the
# per-phase trace of the 6144 picks beside DC_SR and of the 4096 picks (gemm_bench_trace, trace_table.py).
#   OUT=$OUT DEADLINE=150 bash dev/decode/device_sr.sh
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-150}"
SR=DC_SR=48; EF=DC_EF=1
s() { echo "$(d "$1" 4 1 "$2" "$3" 0 "$4"),$SR${5:+,$5}"; }  # MT U DEPTH GRID [knob]
few() {  # MT: the 1..8-row picks at 6144 and the DC_SR configs
  echo "$(d "$1" 4 2 2 2 0 4),$EF:$(d "$1" 4 2 4 1 0 4),$EF:$(s "$1" 4 2 0):$(s "$1" 4 2 0 $EF):$(s "$1" 2 3 0):$(s "$1" 4 2 0 DC_ST=1)"
}
P16="$(d 2 4 2 2 2 3 4),DC_XH=1,DC_ST=1"
G6="$(d 2 8 1 4 1 0 6),$EF"; G6b="$(d 1 8 1 4 1 0 6),$EF"
KEYS_AB=${KEYS_AB:-"1x6144x4096:$(few 1)
4x6144x4096:$(few 1)
8x6144x4096:$(few 1)
16x6144x4096:$P16:$P16,$EF:$(s 2 4 2 0):$(s 2 4 2 0 $EF):$(s 2 2 3 0):$(s 2 4 2 0 DC_ST=1)
16x28672x4096:$G6:$(s 2 4 2 6 $EF):$(s 2 2 3 6 $EF)
4x28672x4096:$G6b:$(s 1 4 2 6 $EF)"}
SHAPES=$(echo "$KEYS_AB" | cut -d: -f1 | paste -sd,)
if [ "${TRACE:-1}" = 1 ] && fits 60 trace; then  # the per-phase trace (pb/bench/gemm_bench_trace: trace_stage.sh)
  TO="$P16,$EF@16x6144x4096;$(s 2 4 2 0 $EF)@16x6144x4096;$(d 1 4 2 2 2 0 4),$EF@1x6144x4096;$(s 1 4 2 0 $EF)@1x6144x4096"
  TO="$TO;$(d 2 4 1 4 2 3 4),$EF@16x4096x4096;$(d 1 4 1 4 2 0 4),DC_XH=1,$EF@1x4096x4096"
  T=$(date +%s)
  KTUNE_CACHE_DIR=/tmp/kcache_trace timeout "${TRACE_S:-40}" "$B/bench/gemm_bench_trace" --kinds=decode \
    --trace="${TRACE_N:-5}" --only="$TO" --shapes=16x6144x4096,1x6144x4096,16x4096x4096,1x4096x4096 \
    > "$OUT/trace.log" 2> "$OUT/trace.err"
  echo "trace rc=$? $(( $(date +%s) - T ))s, $(grep -c '^DCT ' "$OUT/trace.log") block lines"
  python3 dev/decode/trace_table.py < "$OUT/trace.log" > "$OUT/phases.txt" 2>&1
  gzip -f "$OUT/trace.log"
fi
knob_ab "GemmGpu.DecodeTmaSlabRowsVsReference" "${TEST_DEF:-90}" 60 15 "${BENCH_DEF:-18}"
echo "VERIFY ok: $(grep -h '^VERIFY' "$OUT"/bench*.log | grep -c ' ok ') of $(grep -h '^VERIFY' "$OUT"/bench*.log | wc -l)"
grep -h "^CLOCKS" "$OUT"/bench*.log | awk '{print $4, $5}' | sort | uniq -c | head -3
python3 dev/decode/sr_table.py "$OUT" "$n" 2>&1 | cut -c1-200 > "$OUT/ab.txt"
python3 dev/decode/cfg_ratios.py "$OUT" "$n" 2>&1 | cut -c1-170 > "$OUT/ratios.txt"
cat "$OUT/ab.txt" "$OUT/ratios.txt"
[ -f "$OUT/phases.txt" ] && cut -c1-250 "$OUT/phases.txt"
end_call
