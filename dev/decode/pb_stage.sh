#!/usr/bin/env bash
# Dev machine, after dev/decode/stage.sh DEST: pb/bench/gemm_bench_o, gemm_bench with the decode
# kind's files as at BASE (default 1fb3f29: the one-slab gate/up pair in two 32-row boxes per 64
# rows) and the rest of this tree, for dev/decode/device_pb.sh's A/B against the tree's gemm_bench
# (one 3-D pair box, gemm::decodePairMap). decode_wg_cluster.cuh comes from BASE too: BASE's
# decode_wg.cuh still defines its own sm_90 primitives (mbar_wait<true>, not the tree's
# templates/gemm/hopper.cuh names). The files are restored (git checkout) and gemm_bench
# rebuilt as the tree's at the end. Needs a clean tree for those files.
#   bash dev/decode/pb_stage.sh DEST     (BUILD_DIR=build, BASE=1fb3f29)
set -euo pipefail
DEST=$1
B=${BUILD_DIR:-build}
BASE=${BASE:-1fb3f29}
FILES=(templates/gemm/decode/decode.cc templates/gemm/decode/decode_wg.cuh
       templates/gemm/decode/decode_wg_produce.cuh templates/gemm/decode/decode_tma.cuh
       templates/gemm/decode/decode_wg_cluster.cuh)
git diff --quiet -- "${FILES[@]}" || { echo "pb_stage.sh: ${FILES[*]} have local changes" >&2; exit 1; }
restore() { git checkout HEAD -- "${FILES[@]}"; }
trap restore EXIT
git checkout "$BASE" -- "${FILES[@]}"
nice ninja -C "$B" gemm_bench > /dev/null
cp "$B/bench/gemm_bench" "$DEST/pb/bench/gemm_bench_o"
strip "$DEST/pb/bench/gemm_bench_o"
restore
nice ninja -C "$B" gemm_bench > /dev/null
strip -o /tmp/pb_stage_gemm_bench "$B/bench/gemm_bench"
cmp -s /tmp/pb_stage_gemm_bench "$DEST/pb/bench/gemm_bench" && echo "tree's gemm_bench restored"
for f in "$DEST"/pb/bench/gemm_bench*; do echo "$f: $(grep -c 'tensor.3d' "$f") 3-D copies"; done
du -sh "$DEST"
