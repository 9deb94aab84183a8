#!/usr/bin/env bash
# GPU machine (carry .devwork/search, staged by `BASE=<main's build dir> bash dev/regret_stage.sh
# DEST`): issue 34's split-tail twins (this tree, pb/tools) against the base (pb/base), cold.
# 1. `ktune tune gemm --m 4096 --n 4096 --k 4096 --layout NT` in PAIRS pairs (default 4), the order
#    alternating (dev/early_wave_device.sh ALT=1; its table).
# 2. The cold LLM suite in SUITE_PAIRS pairs (default 2; the order alternating) with the GPU regret at the keys where the
#    twins are left out between them (dev/cold_suite_device.sh; REGRET=0 skips it).
# 3. A probe: cuInit against NVML's init in fresh processes (dev/init_probe.py).
# The steps share DEADLINE (seconds, default 120); logs under $OUT (ew.tgz, cs.tgz, init.txt).
#   OUT=$OUT DEADLINE=120 bash dev/split_twin_device.sh
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
T0=$(date +%s); DEADLINE=${DEADLINE:-120}
left() { echo $(( DEADLINE - ($(date +%s) - T0) )); }
[ -d pb ] || tar -xJf pb.tar.xz
echo "== 4096^3 cold pairs"
OUT=$OUT PAIRS=${PAIRS:-4} ALT=1 DEADLINE=${EW_DEADLINE:-30} bash dev/early_wave_device.sh
echo "== cold suite"
OUT=$OUT PAIRS=${SUITE_PAIRS:-2} ONE=0 ALT=1 REGRET=${REGRET:-1} RUN_MIN=14 \
  REGRET_ONLY="${REGRET_ONLY:-prefill 4096x4096x4096 NT|prefill 4096x6144x4096 NT}" \
  DEADLINE=$(( $(left) - ${PROBE_S:-8} )) bash dev/cold_suite_device.sh
echo "== init probe"
timeout "${PROBE_S:-8}" python3 dev/init_probe.py "${PROBE_ROUNDS:-3}" 2>&1 | tee "$OUT/init.txt" | tail -4
echo "total $(( $(date +%s) - T0 )) s"
