#!/usr/bin/env bash
# The lead's final device call of the twentieth session: ONE `nvidia-h200-x2` call (two GPUs of one
# host) of at most DEADLINE seconds (default 500), on binaries staged by `BASE=<the base's build dir>
# bash dev/final19_stage.sh DEST`. Two phases:
#   A. alone on the host (tuning time is CPU-bound, so nothing else runs): dev/final19_device.sh with
#      its GPU tests and regret off (TESTS=0 REGRET=0 PREFILL_S=0): the cold LLM suite base against
#      this tree PAIRS pairs (default 1) and one warm run of each, then ONE_PAIRS (default 2) cold/warm
#      pairs of 4096^3 NT; then the peers' first call to result (bench/tuning_peers.py, each peer in
#      its own process with cold caches: Triton's tutorial autotuner at 4096^3 and 16x4096x4096,
#      Inductor max-autotune at 4096^3; PEERS=0: not), about 90 s in all;
#   B. at once: GPU 1 every GPU test program (dev/gpu_pass_device.sh as final19 runs them, TEST_S
#      default 300); GPU 0 the GEMM regret set (`ktune regret --set gpu --ops gemm`: 62 keys, guided
#      against exhaustive at EXH_BUDGET x budgets, default 0.2, winners re-timed over 4 interleaved
#      rounds), then the row-wise set (24 keys) in what is left. Rows are written as keys end, and no
#      key starts after --deadline, so a cut keeps every finished key. TESTS=0: no GPU tests (on a
#      one-GPU host, where they would share the GPU with the regret's timings); ROWS=0: the GEMM
#      regret set alone.
# Every log goes into $OUT/final20.tgz (re-packed after each phase); the table last on stdout.
#   (dev machine: BASE=<base build> bash dev/final19_stage.sh .devwork/lead; carry .devwork/lead)
#   cd .devwork/lead && OUT=$OUT DEADLINE=500 bash dev/final20_device.sh     (timeout_s DEADLINE + 20)
# Dry run (simulated device): KTUNE_BACKEND=sim DEADLINE=120 TEST_S=10 PEERS=0 REGRET_SET=ci \
#   OUT=/tmp/f20out bash dev/final20_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; W=/tmp/final20; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s); DEADLINE=${DEADLINE:-500}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
pack() { tar -czf "$OUT/final20.tgz.part" -C "$W" . && mv "$OUT/final20.tgz.part" "$OUT/final20.tgz"; }
[ -d pb ] || tar -xJf pb.tar.xz
PB=$PWD/pb
LIBS_THIS="$PB/api:$PB/lib"

# A. Tuning time, alone on the host.
OUT=$W/a DEADLINE=${A_S:-80} TESTS=0 REGRET=0 PREFILL_S=0 PAIRS=${PAIRS:-1} ONE_PAIRS=${ONE_PAIRS:-2} \
  bash dev/final19_device.sh > "$W/a.log" 2>&1
tar -xzf "$W/a/final19.tgz" -C "$W/a" 2>/dev/null
echo "phase A (tuning time) done at $(( $(date +%s) - T0 )) s"
if [ "${PEERS:-1}" = 1 ]; then
  timeout 60 python3 bench/tuning_peers.py --peers=triton --budget=45 \
    --shapes=4096x4096x4096,16x4096x4096 > "$W/peers.txt" 2>&1
  timeout 60 python3 bench/tuning_peers.py --peers=inductor --budget=45 \
    --shapes=4096x4096x4096 >> "$W/peers.txt" 2>&1
  echo "peers done at $(( $(date +%s) - T0 )) s"
fi
pack

# B. GPU 1: the GPU test programs; GPU 0: the regret sets.
B_S=$(( $(left) - 8 ))
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
T1=1; [ "$NGPU" -ge 2 ] || T1=0  # one GPU (a dry run): both on it
[ "${TESTS:-1}" = 0 ] || ( export CUDA_VISIBLE_DEVICES=$T1
  TS=${TEST_S:-$(( B_S < 300 ? B_S : 300 ))}
  OUT=$W/gpu_pass DEADLINE=1 TEST_S=$TS JOBS=${JOBS:-8} GEMM_SHARDS=${GEMM_SHARDS:-4} PROGRAMS=none \
    TUNE=0 SUITE=0 bash dev/gpu_pass_device.sh > "$W/gpu_pass.log" 2>&1
  cp /tmp/gpu-pass-logs/tests.txt "$W/a/tests.txt" 2>/dev/null
  grep -q "not started\|cut by the budget" "$W/a/tests.txt" 2>/dev/null &&
    echo "GPU tests: some cut or not started at TEST_S=$TS" >> "$W/a/dropped.txt"
  echo "tests done at $(( $(date +%s) - T0 )) s" ) &
regret() {  # ops name seconds: one `ktune regret` run (in-process) of at most that many seconds
  CUDA_CACHE_PATH=/tmp/cc-regret-$2 LD_LIBRARY_PATH="$LIBS_THIS" timeout "$3" "$PB/tools/ktune" \
    regret --set "${REGRET_SET:-gpu}" --ops "$1" --rounds 4 --exhaustive-budget "${EXH_BUDGET:-0.2}" \
    --cache "/tmp/kc-regret-$2" --deadline $(( $3 > 30 ? $3 - 15 : $3 / 2 )) > "$W/regret_$2.txt" 2> "$W/regret_$2.err"
  echo "regret $2 rc=$? at $(( $(date +%s) - T0 )) s (limit $3 s)" | tee -a "$W/regret_$2.txt"
}
( export CUDA_VISIBLE_DEVICES=0
  regret gemm gemm $(( B_S - ${ROWS_S:-75} ))
  l=$(( $(left) - 8 )); [ "${ROWS:-1}" = 1 ] && [ "$l" -gt 30 ] && regret rmsnorm,silu_mul rows "$l" ) &
wait
pack

{ python3 dev/final19_table.py "$W/a"
  echo; echo "peers (first call to result, cold caches)"
  grep -E "^(device|triton|inductor|summary)|skipped|killed|no shape" "$W/peers.txt" 2>/dev/null
  for s in gemm rows; do
    echo; echo "regret $s"; grep -E "^keys|rc=|within|geomean|worst" "$W/regret_$s.txt" 2>/dev/null | head -8
  done
  echo "total $(( $(date +%s) - T0 )) s of DEADLINE=$DEADLINE"; } > "$W/table.txt" 2>&1
pack; cp "$W/table.txt" "$OUT/table.txt"
echo; cat "$W/table.txt"
