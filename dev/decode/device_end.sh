#!/bin/bash
# GPU machine, one call (issue 32, twelfth session): the cluster K split's end with DC_XR = 1 (C
# staged through the ring as 16-byte vectors) against DC_XR = 0 (the session's other variant, the
# sums counted on the receiver's barrier, was measured and removed), through dev/decode/device_trace.sh: the
# decode cluster GPU test, the copy rate, the per-phase trace of each variant, then 3 gemm_bench
# processes (cuBLASLt default and best, the read bound, same rounds) over the variants (--only).
#   OUT=$OUT bash dev/decode/device_end.sh      (binaries staged by stage.sh + trace_stage.sh)
c() { echo "DC_WG=2,DC_WARPS=4,DC_NT=1,DC_MT=$1,DC_U=2,DC_DEPTH=$2,DC_PF=1,DC_XR=$3,DC_GRID=4@$4"; }
T64=$(c 8 2 0 64x4096x4096)\;$(c 8 2 1 64x4096x4096)
T128=$(c 16 2 0 128x4096x4096)\;$(c 16 2 1 128x4096x4096)
O=""
for k in 4096 14336; do
  O="$O;$(c 8 2 0 64x4096x$k);$(c 8 2 1 64x4096x$k);$(c 8 3 0 64x4096x$k);$(c 8 3 1 64x4096x$k)"
  O="$O;$(c 16 2 0 128x4096x$k);$(c 16 2 1 128x4096x$k)"
done
export TESTS=${TESTS:-GemmGpu.DecodeTmaClusterEndVsReference} TEST_S=${TEST_S:-26}
export TRACE_BINS=${TRACE_BINS:-gemm_bench_trace} TRACE_N=${TRACE_N:-4} TRACE_S=${TRACE_S:-12} TRACE_ONLY="$T64;$T128"
export PROCS=${PROCS:-3} BINS=${BINS:-gemm_bench} ONLY="${O#;}" ROUNDS=${ROUNDS:-3} BENCH_S=${BENCH_S:-14}
export SHAPES=${SHAPES:-64x4096x4096,128x4096x4096,64x4096x14336,128x4096x14336} DEADLINE=${DEADLINE:-64}
exec bash "$(dirname "$0")/device_trace.sh"
