# Sourced first by the issue-33 device scripts (dev/fp8_profile.sh, dev/fp8_pingpong_device.sh,
# dev/fp8_pp2_device.sh, dev/fp8_final_device.sh, dev/fp8_ncu_device.sh): OUT, the clock T0,
# left() (seconds of BUDGET left; the script's own default in BUDGET_DEFAULT) and at(), the
# cooperative default D and its one-slice form B (D4, T2, T2CL, Q4 and D's schedule on 224- and
# 176-wide tiles, W224 / W176, ping-pong 128x176 tiles, P176, and the cluster pairs CL2, CL2E2);
# the GPU's clocks and power into $OUT/gpu.txt, the prebuilt binaries of pb/ (their libbenchmark
# in pb/lib) checked to run here, and one kernel cache for the call.
export PATH="$PATH:/usr/local/cuda/bin"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s)
left() { echo $(( ${BUDGET:-${BUDGET_DEFAULT:-150}} - ($(date +%s) - T0) )); }
at() { echo "$1 at $(( $(date +%s) - T0 )) s"; }
C2='CONSUMERS=2,CLUSTER_M=1'
D="BLOCK_N=256,$C2,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=2,PINGPONG=0"
B="BLOCK_N=256,$C2,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=1,PINGPONG=0"
# D's schedule on 224- and 176-wide tiles (tile counts that fill whole rounds where 256 does not).
W224="BLOCK_N=224,$C2,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=2,PINGPONG=0"
W176="BLOCK_N=176,$C2,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=2,PINGPONG=0"
# D with SPLIT_K 4 (up to 4 ranges per tail tile; the eleventh session's probe built it to share
# any last round, bench/NOTES.md) and W224K4 on 128x224 tiles (4096x28672x4096: 4096 tiles, a tail
# of 4). T2 / T2CL: cuBLASLt's 256x128 cooperative tile (two 128 x 128 consumers) with the
# deferred epilogue, alone and as a cluster pair (B multicast).
D4="BLOCK_N=256,$C2,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=4,PINGPONG=0"
# D8: D walking its tiles in groups of 8 tile rows (GROUP_M 8) instead of 16.
D8="BLOCK_N=256,$C2,WG_M=1,NUM_STAGES=4,GROUP_M=8,EPI_TMA=2,SPLIT_K=2,PINGPONG=0"
W224K4="BLOCK_N=224,$C2,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=4,PINGPONG=0"
T2="BLOCK_N=128,$C2,WG_M=2,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=2,PINGPONG=0"
T2CL="BLOCK_N=128,CONSUMERS=2,CLUSTER_M=2,WG_M=2,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=1,PINGPONG=0"
Q4="BLOCK_N=192,$C2,WG_M=2,NUM_STAGES=4,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
# Ping-pong with a 128x176 tile per consumer (4 and 5 stages).
P176="BLOCK_N=176,$C2,WG_M=2,NUM_STAGES=4,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
P176S5="BLOCK_N=176,$C2,WG_M=2,NUM_STAGES=5,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=1"
# Cluster pairs (B multicast) for rows that are not 128-byte aligned (K = 1000): the curated pair
# CL2 (TMA-store epilogue, GROUP_M 8) and its deferred-epilogue twin CL2E2 (GROUP_M 16). (The
# four-block clusters CL4 / CL4E2 of commit 8400acc's probe are not in the kernel: bench/NOTES.md.)
CL2="BLOCK_N=256,CONSUMERS=2,CLUSTER_M=2,WG_M=1,NUM_STAGES=4,GROUP_M=8,EPI_TMA=1,SPLIT_K=1,PINGPONG=0"
CL2E2="BLOCK_N=256,CONSUMERS=2,CLUSTER_M=2,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=1,PINGPONG=0"
# CL4E2: four-block clusters (a quarter of B per block) with the deferred epilogue, a config of
# the space on the grid of the kernel's resident clusters; CL4E1 (the TMA-store epilogue) is
# outside the space (a pinned value).
CL4E2="BLOCK_N=256,CONSUMERS=2,CLUSTER_M=4,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=2,SPLIT_K=1,PINGPONG=0"
CL4E1="BLOCK_N=256,CONSUMERS=2,CLUSTER_M=4,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=1,SPLIT_K=1,PINGPONG=0"
# E4: D with a deferred-epilogue piece every second k-tile (EPI_TMA 3, a probe value outside the
# space). (The split-tail pair CL2E2S and the 192-wide pair CL192 of the fourteenth session's probe
# are not in the kernel: bench/NOTES.md.)
E4="BLOCK_N=256,$C2,WG_M=1,NUM_STAGES=4,GROUP_M=16,EPI_TMA=3,SPLIT_K=2,PINGPONG=0"
timeout 15 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
# A list of NAME[+KNOB=V...][@shape] (names of the configs above, each +KNOB=V replacing or adding
# one knob: B+GROUP_M=8, B+TMA_L2A=128+TMA_L2B=128) as gemm_bench's CONFIG[@shape];... list.
configs() {
  local out="" n v b x kv cfg
  for n in $1; do
    v=${n%%@*}; b=${v%%+*}; cfg=${!b}; x=${v#"$b"}
    for kv in ${x//+/ }; do
      if [[ ",$cfg," == *",${kv%%=*}="* ]]; then cfg=$(sed -E "s/(^|,)${kv%%=*}=[^,]*/\1$kv/" <<< "$cfg")
      else cfg="$cfg,$kv"; fi
    done
    out="$out${out:+;}$cfg${n#"$v"}"
  done
  echo "$out"
}
PB=$PWD/pb
export LD_LIBRARY_PATH="$PB/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
timeout -k 2 30 "$PB/bench/gemm_bench" --shapes=none > /dev/null 2> "$OUT/prebuilt.err" ||
  { echo "prebuilt gemm_bench does not run: $(tail -2 "$OUT/prebuilt.err")"; exit 1; }
# Its device line goes with the clocks; the file itself would take one of the 8 returned files.
head -1 "$OUT/prebuilt.err" >> "$OUT/gpu.txt" && rm -f "$OUT/prebuilt.err"
export KTUNE_CACHE_DIR=/tmp/kc-fp8
# The main job's suite (`ktune tune gemm --suite llm`) in its own empty cache, at most $1 seconds:
# $OUT/suite.json and its winners in $OUT/suite.txt (dev/suite_winners.py), the stderr's last lines.
run_suite() {
  local s sd=/tmp/kc-suite-fp8-$$
  s=$(date +%s)
  KTUNE_CACHE_DIR=$sd KTUNE_DB=$sd/db.json timeout "$1" \
    "$PB/tools/ktune" tune gemm --suite llm --json > "$OUT/suite.json" 2> /tmp/suite.err
  echo "suite: rc=$? wall $(( $(date +%s) - s )) s" > "$OUT/suite.txt"
  python3 dev/suite_winners.py "$OUT/suite.json" >> "$OUT/suite.txt" 2>&1
  tail -5 /tmp/suite.err >> "$OUT/suite.txt"
  at "suite"
}
# bench P SECONDS: process P (SHAPES_A first, in a gemm_bench of its own of at most SECONDS_A,
# so that a cut cannot lose them; then $SHAPES), both into bench_P.txt / .err.
bench() {
  [ "$(left)" -ge "$2" ] || { echo "bench $1 skipped: $(left) s left"; return; }
  : > "$OUT/bench_$1.txt"; : > "$OUT/bench_$1.err"
  local sh
  for sh in ${SHAPES_A:+"$SHAPES_A"} "$SHAPES"; do
    local s=$2
    [ "$sh" = "${SHAPES_A:-}" ] && s=${BENCHA_S:-15}
    timeout "$s" stdbuf -oL "$PB/bench/gemm_bench" --kinds=tma --only="$ONLY" --shapes="$sh" \
      --rounds="${ROUNDS:-3}" ${TWIN:+--twin="$TWIN"} >> "$OUT/bench_$1.txt" 2>> "$OUT/bench_$1.err"
    at "bench $1 ($sh) rc=$?"
  done
  grep -E "^VERIFY" "$OUT/bench_$1.txt" | grep -v " ok " | head -5
}
# The measuring part of a probe call (ONLY and TWIN set by the caller): the main job (SUITE_S s; 0:
# none), the copy rate (COPY), process 1 (BENCH1_S), the ncu table of NCU_NAMES at NCU_SHAPE beside
# cuBLASLt's algorithm NCU_LT (NCU_S s; 0: none), then processes 2..PROCS (BENCH_S s each).
measure_phase() {
  [ "${SUITE_S:-20}" -gt 0 ] && [ "$(left)" -gt $(( ${SUITE_S:-20} + 60 )) ] && run_suite "${SUITE_S:-20}"
  [ "${COPY:-1}" = 0 ] || { timeout 12 python3 dev/copy_rate.py >> "$OUT/gpu.txt" 2>&1; at "copy rate"; }
  [ "${PROCS:-3}" -ge 1 ] && bench 1 "${BENCH1_S:-45}"
  if [ "${NCU_S:-30}" -gt 0 ] && command -v ncu > /dev/null && [ "$(left)" -ge "${NCU_S:-30}" ]; then
    timeout 10 ncu --query-metrics > /tmp/ncu_query.txt 2>&1
    M=$(python3 dev/ncu_table.py --metrics /tmp/ncu_query.txt)
    at "ncu metrics"
    NO=$(configs "$NCU_NAMES")
    timeout $(( ${NCU_S:-30} - 4 )) ncu --clock-control none -k 'regex:^(ktune_gemm|[^k])' \
      --launch-count 12 --metrics "$M" --csv --page raw --log-file /tmp/ncu.csv \
      "$PB/bench/gemm_bench" --kinds=tma --profile --only="$NO" --profile_lt="$NCU_LT@$NCU_SHAPE" \
      --shapes="$NCU_SHAPE" > /tmp/ncu_bench.txt 2> /tmp/ncu_bench.err
    at "ncu rc=$?"
    python3 dev/ncu_table.py /tmp/ncu.csv /tmp/ncu_bench.txt > "$OUT/ncu_table.txt" 2>&1
  fi
  for p in $(seq 2 "${PROCS:-3}"); do bench "$p" "${BENCH_S:-28}"; done
}
# The call's short table: clocks, tests, the main job's winners, each process's ratio lines, the ncu
# table, the total time.
print_summary() {
  [ -s "$OUT/prebuilt.err" ] || rm -f "$OUT/prebuilt.err"
  cat "$OUT/gpu.txt" "$OUT/tests.txt"
  cat "$OUT/suite.txt" 2>/dev/null | head -14
  for p in $(seq 1 "${PROCS:-3}"); do
    [ -f "$OUT/bench_$p.txt" ] || continue
    echo "== process $p"
    grep -E "^(RATIO|FP8|TWIN)" "$OUT/bench_$p.txt" | sed 's/ gemm / /; s/cublaslt/lt/g' | cut -c1-110
  done
  grep -A12 "^metric" "$OUT/ncu_table.txt" 2>/dev/null | head -14
  at total
}
