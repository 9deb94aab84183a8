#!/usr/bin/env bash
# Dev machine, after dev/decode/stage.sh DEST: adds DEST/pb/bench/NAME, the tree's gemm_bench built
# with one kernel-source line changed (sed expression EXPR on FILE, which must change it), then puts
# the file back and rebuilds: the B side of an A/B of a kernel source in alternating processes
# (dev/decode/device_wide.sh's gemm_bench_base: DC_XR = 3's wait at CTA scope).
#   bash dev/decode/variant_stage.sh FILE EXPR DEST [NAME]   (BUILD_DIR=build; NAME: gemm_bench_base)
#   e.g. bash dev/decode/variant_stage.sh templates/gemm/decode/decode_wg_cluster.cuh \
#          's/mbar_wait_acquire_cluster(red, 0)/mbar_wait(red, 0)/' $LEAD/.devwork/decode
set -euo pipefail
F=$1; EXPR=$2; DEST=$3; NAME=${4:-gemm_bench_base}
B=${BUILD_DIR:-build}
cp "$F" "$F.orig"
trap 'mv -f "$F.orig" "$F"' EXIT
sed -i "$EXPR" "$F"
! cmp -s "$F" "$F.orig" || { echo "$EXPR changes nothing in $F" >&2; exit 1; }
nice ninja -C "$B" -j2 gemm_bench > /dev/null
mkdir -p "$DEST/pb/bench" && cp "$B/bench/gemm_bench" "$DEST/pb/bench/$NAME" && strip "$DEST/pb/bench/$NAME"
mv -f "$F.orig" "$F"
trap - EXIT
nice ninja -C "$B" -j2 gemm_bench > /dev/null
echo "staged $DEST/pb/bench/$NAME"
