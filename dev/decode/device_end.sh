#!/bin/bash
# GPU machine, one call (issue 32): the cluster K split's end, DC_XR = $XB against DC_XR = $XA on
# the same configs (default 1 against 0; thirteenth session: XA=1 XB=3, the counted hand-over
# probe), through dev/decode/device_trace.sh: the decode GPU tests, the copy rate, the per-phase
# trace of each variant, then gemm_bench processes (cuBLASLt default and best, the read bound,
# same rounds) over the variants (--only), each pair listed A, B, B, A (the pre-pass times them in
# that order: a drift of the GPU's clock during the pre-pass cancels), plus EXTRA_ONLY (more
# --only entries, e.g. other shapes' shipped winners beside the variant).
#   OUT=$OUT [XA=1 XB=3] bash dev/decode/device_end.sh      (binaries staged by stage.sh + trace_stage.sh)
XA=${XA:-0} XB=${XB:-1}
c() { echo "DC_WG=2,DC_WARPS=4,DC_NT=1,DC_MT=$1,DC_U=2,DC_DEPTH=$2,DC_PF=1,DC_XR=$3,DC_GRID=4@$4"; }
abba() { echo "$(c $1 $2 $XA $3);$(c $1 $2 $XB $3);$(c $1 $2 $XB $3);$(c $1 $2 $XA $3)"; }
T64=$(c 8 2 $XA 64x4096x4096)\;$(c 8 2 $XB 64x4096x4096)
T128=$(c 16 2 $XA 128x4096x4096)\;$(c 16 2 $XB 128x4096x4096)
O=""
for k in 4096 14336; do
  O="$O;$(abba 8 2 64x4096x$k);$(abba 8 3 64x4096x$k);$(abba 16 2 128x4096x$k)"
done
O="${O#;}${EXTRA_ONLY:+;$EXTRA_ONLY}"
export TESTS=${TESTS:-GemmGpu.DecodeTmaClusterEndVsReference} TEST_S=${TEST_S:-26}
export TRACE_BINS=${TRACE_BINS:-gemm_bench_trace} TRACE_N=${TRACE_N:-4} TRACE_S=${TRACE_S:-12} TRACE_ONLY="$T64;$T128"
export PROCS=${PROCS:-3} BINS=${BINS:-gemm_bench} ONLY="$O" ROUNDS=${ROUNDS:-3} BENCH_S=${BENCH_S:-14}
export SHAPES=${SHAPES:-64x4096x4096,128x4096x4096,64x4096x14336,128x4096x14336} DEADLINE=${DEADLINE:-64}
exec bash "$(dirname "$0")/device_trace.sh"
