#!/usr/bin/env bash
# GPU machine, one part of the lead's final call: issue 33's whole list re-measured on the staged
# tree against cuBLASLt, the fair method (read flush, ktune, cuBLASLt #0 and the best of its first 8
# in the same interleaved rounds of one process, >= 3 processes), in at most BUDGET seconds (90).
# Run from the staging directory of `GPU=1 bash dev/lead_stage.sh DEST` (pb.tar.xz is unpacked
# into pb/ when pb/ is missing; gemm_bench is pb/bench/gemm_bench, its libbenchmark in pb/lib):
#   cd DEST && OUT=$OUT BUDGET=90 bash dev/final19_prefill.sh
# Each process runs gemm_bench twice (a cut keeps the other part): "bf16" = 1024x14336x4096,
# 4096x6144x4096, 4096x4096x14336, 2048x28672x8192, 3000x5000x1000 NT and NN; "sq" = bf16 4096^3
# and 8192^3 and, unless FP8=0, e4m3 4096^3 and 8192^3 (`--shapes=fp8,...`: the FP8 line gives the
# fp8 JIT TFLOP/s over the bf16 JIT's of the same process). ktune = one fixed JIT config per shape
# (ONLY_NAMES, names of dev/fp8_device_common.sh; the e4m3 shapes take their size's entry).
# BUDGET < 60 drops the FP8 shapes (said on stdout). Each gemm_bench is cut (timeout) at what the
# budget leaves after the time kept for the required parts still to come; processes PROCS+1..
# PROCS_MAX run while the time left holds one more. Skipped or cut parts are named on stdout. Logs
# (run.log, gpu.txt, p<P>_<part>.txt/.err, table.txt) in $OUT/prefill/; the table on stdout last.
# Exit 0 with the table; 1-3 without (gemm_bench does not start, nothing staged, no GPU).
# BUDGET (90) PROCS (3) PROCS_MAX (5) ROUNDS (5) FP8 (1) RESERVE_S (3) PREFILL_CACHE (/tmp/kc-prefill)
# ONLY_NAMES (below); TWIN (gemm_bench's --twin list, CONFIG@shape;...: timed beside the picks in the
# bf16 part's rounds, none by default)
set -uo pipefail
T_START=$(date +%s)
BUDGET=${BUDGET:-90} BUDGET_DEFAULT=90
export OUT=${OUT:-/tmp/out}/prefill
mkdir -p "$OUT"
say() { echo "prefill: $*" | tee -a "$OUT/run.log"; }
DONE=0
trap '[ "$DONE" = 1 ] || say "stopped before the table: bf16 and FP8 parts not measured (logs in $OUT)"' EXIT
[ -f pb.tar.xz ] && [ ! -d pb ] && { tar -xJf pb.tar.xz || say "pb.tar.xz does not unpack"; }
if [ ! -x pb/bench/gemm_bench ] || [ ! -f dev/fp8_device_common.sh ]; then
  say "SKIPPED bf16 and FP8 parts: no pb/bench/gemm_bench or dev/ in $PWD (run from the staging dir of GPU=1 dev/lead_stage.sh)"
  exit 2
fi
export LD_LIBRARY_PATH="$PWD/pb/api${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# Clocks into gpu.txt, gemm_bench checked to start (exit 1 if it does not), configs(), left(), at().
. dev/fp8_device_common.sh
T0=$T_START
export KTUNE_CACHE_DIR=${PREFILL_CACHE:-/tmp/kc-prefill}  # another part's cache may be named
if grep -q "gemm_bench: skipped" "$OUT/gpu.txt"; then
  say "SKIPPED bf16 part (8 shapes) and FP8 part (e4m3 4096^3, 8192^3): $(grep -m1 'gemm_bench: skipped' "$OUT/gpu.txt" | cut -c1-160)"
  exit 3
fi
FP8=${FP8:-1}
if [ "$FP8" = 1 ] && [ "$BUDGET" -lt 60 ]; then
  FP8=0; say "FP8 part dropped: BUDGET=$BUDGET < 60 (bf16 list only)"
fi
ONLY=$(configs "${ONLY_NAMES:-B@4096x4096x4096 D@8192x8192x8192 B@4096x6144x4096 B@4096x4096x14336 P176@1024x14336x4096 D@2048x28672x8192 CL4E2@3000x5000x1000}")
SH_BF16=1024x14336x4096,4096x6144x4096,4096x4096x14336,2048x28672x8192,3000x5000x1000,3000x5000x1000:NN
SH_SQ=4096x4096x4096,8192x8192x8192
# Each part's cap is what the budget leaves after the reserve R and the estimated time of the
# required parts still to come (EST_*: until a part of the kind has run, a guess of a warm one, 12
# and 9 s (6 without FP8), or its share of PROCS + 0.5 processes in the time left if smaller; then
# 1.3x its last wall), so a slow cold first process cannot starve the others.
PROCS=${PROCS:-3} PROCS_MAX=${PROCS_MAX:-5} R=${RESERVE_S:-3}
WB=7 WS=3 GS=6  # shares of a process (shapes + 1 for its start), the sq part's guess
[ "$FP8" = 1 ] && { SH_SQ=fp8,$SH_SQ; WS=5; GS=9; }
SHARE=$(( ($(left) - R - 2) * 10 / (PROCS * 10 + 5) ))
EST_bf16=$(( SHARE * WB / (WB + WS) )) EST_sq=$(( SHARE * WS / (WB + WS) ))
[ "$EST_bf16" -gt 12 ] && EST_bf16=12
[ "$EST_sq" -gt "$GS" ] && EST_sq=$GS
MAX_bf16=$BUDGET MAX_sq=$BUDGET  # caps once measured
Nb=$PROCS Ns=$PROCS  # required parts of each kind (bf16, sq) not yet started
say "BUDGET $BUDGET s, FP8=$FP8, $PROCS processes (up to $PROCS_MAX while the time holds one more), ROUNDS ${ROUNDS:-5}"
# part P KIND SHAPES: one gemm_bench process, cut at what the budget leaves after the reserves.
part() {
  local rsv s0 rc s m f l
  [ "$1" -le "$PROCS" ] && eval "N${2:0:1}=\$(( N${2:0:1} - 1 ))"
  [ "$2" = bf16 ] && [ "$1" -gt "$PROCS" ] && rsv=$EST_sq || rsv=0
  rsv=$(( rsv + Nb * EST_bf16 + Ns * EST_sq ))
  l=$(( $(left) - R - 2 )) s=$(( $(left) - R - 2 - rsv ))
  # Never below the part's own estimate (or 5 s) while the budget holds it: the processes run in
  # order and the last ones go short; once a part of the kind has run, at most 2x its estimate +
  # 10 s (a hung process cannot take the later processes' time).
  eval "f=\$EST_$2 m=\$MAX_$2"
  [ "$f" -lt 5 ] && f=5
  [ "$s" -lt "$f" ] && s=$(( f < l ? f : l ))
  [ "$s" -gt "$m" ] && s=$m
  if [ "$s" -lt 5 ]; then say "process $1 part $2 skipped: $(left) s left"; return 1; fi
  local tw=()
  [ "$2" = bf16 ] && [ -n "${TWIN:-}" ] && tw=(--twin="$TWIN")
  s0=$(date +%s)
  timeout -k 2 "$s" "$PB/bench/gemm_bench" --kinds=tma --only="$ONLY" --shapes="$3" \
    --rounds="${ROUNDS:-5}" "${tw[@]}" > "$OUT/p$1_$2.txt" 2> "$OUT/p$1_$2.err"
  rc=$?
  eval "EST_$2=\$(( ($(date +%s) - s0) * 13 / 10 + 1 ))"
  eval "MAX_$2=\$(( 2 * EST_$2 + 10 ))"
  say "$(at "process $1 part $2 (cap $s s) rc=$rc")$([ "$rc" = 124 ] && echo ' CUT: its shapes are lost')"
  grep -m1 "gemm_bench: skipped" "$OUT/p$1_$2.err" | sed "s/^/prefill: process $1 part $2 SKIPPED: /"
  return 0
}
for p in $(seq 1 "$PROCS_MAX"); do
  if [ "$p" -gt "$PROCS" ] && [ $(( $(left) - R - 2 )) -lt $(( EST_bf16 + EST_sq )) ]; then
    say "no process $p: $(left) s left, one takes about $(( EST_bf16 + EST_sq )) s"; break
  fi
  part "$p" bf16 "$SH_BF16"
  part "$p" sq "$SH_SQ"
done
python3 dev/final19_prefill_table.py "$OUT"/p*_*.txt > "$OUT/table.txt" 2>&1
DONE=1
echo "== prefill (issue 33), $(sed -n 2p "$OUT/gpu.txt" | cut -d, -f1), ROUNDS ${ROUNDS:-5}, FP8=$FP8; cuBLASLt best / ktune (> 1: ktune faster)"
cat "$OUT/table.txt"
say "$(at total)"
