#!/bin/bash
# GPU machine, one call (issue 32, twentieth session): the probe knob DC_RUN = 2 (a unit's two
# stages each over half the tile's rows and twice the k: weight rows read in runs of 2*128*DC_U
# bytes per stage in the same ring bytes) against the same configs without it, at the five 16-row
# keys. Binaries from pb/ (dev/decode/stage.sh); logs under $OUT:
#   1. GemmGpu.DecodeTmaRunVsReference in the background beside process 0 of gemm_bench (it
#      compiles every config; its times are not used);
#   2. PROCS gemm_bench processes, --only each key's configs with and without the knob and --twin
#      the same, so both are timed in the same interleaved rounds with cuBLASLt's best and the read
#      (the --only order reversed in even processes); at 16x4096x4096 and 16x4096x14336 the knob
#      needs a 128-row tile, so the pair there is G4 W4 NT2 U2 D2 XR3 and the key's 64-row pick
#      runs beside it without a twin;
#   3. dev/decode/l2p_table.py: per key, mode and config, both µs and RUN2/base per process.
#   OUT=$OUT DEADLINE=55 bash dev/decode/device_run.sh
# DC_RUN was refuted and reverted (bench/NOTES.md): run it on 2015e12's tree.
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-55}"
d() {  # WARPS NT U DEPTH XR GRID (16 rows: DC_MT = 2)
  echo "DC_WG=2,DC_WARPS=$1,DC_NT=$2,DC_MT=2,DC_U=$3,DC_DEPTH=$4,DC_PF=1,DC_XR=$5,DC_GRID=$6"
}
XB=$(d 4 2 2 2 3 4)   # G4 W4 NT2 U2 D2 XR3 (16x6144x4096's pick)
KEYS="16x4096x4096:$XB:-$(d 4 1 4 2 3 4)
16x6144x4096:$XB:$(d 8 1 2 2 0 6)
16x14336x4096:$(d 4 2 4 1 0 0):$(d 8 1 4 1 0 6)
16x4096x14336:$XB:-$(d 4 1 4 2 0 4)
16x28672x4096:$(d 8 1 2 2 0 6):$(d 8 1 4 1 0 6)"
list() {  # list [rev]: the --only/--twin entries (a config marked - runs without its twin)
  local key cfg out="" cfgs i
  for key in $KEYS; do
    IFS=: read -ra cfgs <<< "$key"
    for i in $(seq 1 $(( ${#cfgs[@]} - 1 ))); do
      cfg=${cfgs[$i]}
      if [ "${cfg:0:1}" = - ]; then out="$out;${cfg#-}@${cfgs[0]}"; continue; fi
      if [ "${1:-}" = rev ]; then out="$out;$cfg,DC_RUN=2@${cfgs[0]};$cfg@${cfgs[0]}"
      else out="$out;$cfg@${cfgs[0]};$cfg,DC_RUN=2@${cfgs[0]}"; fi
    done
  done
  echo "${out#;}"
}
SHAPES=${SHAPES:-16x4096x4096,16x6144x4096,16x14336x4096,16x4096x14336,16x28672x4096}
knob_ab "GemmGpu.DecodeTmaRunVsReference" 30 25 9 12
python3 dev/decode/l2p_table.py "$OUT" "$n" 2>&1 | grep -v " pre " | cut -c1-260
end_call
