#!/usr/bin/env bash
# Dev machine, after dev/decode/stage.sh DEST: gemm_bench rebuilt with the gate/up SiLU's other
# build-time forms (KT_GU_FORM in templates/gemm/common.cuh: 0 ex2 +
# rcp -> pb/bench/gemm_bench_e, 2 the g + u probe -> pb/bench/gemm_bench_i), for
# dev/decode/device_gs.sh; the file is restored (git checkout) and gemm_bench rebuilt as the
# tree's at the end. Needs a clean tree for that file.
#   bash dev/decode/gs_stage.sh DEST     (BUILD_DIR=build)
set -euo pipefail
DEST=$1
B=${BUILD_DIR:-build}
FILES=(templates/gemm/common.cuh)
git diff --quiet -- "${FILES[@]}" || { echo "gs_stage.sh: ${FILES[*]} have local changes" >&2; exit 1; }
restore() { git checkout -- "${FILES[@]}"; }
trap restore EXIT
for v in e:0 i:2; do
  sed -i "s/^#define KT_GU_FORM 1$/#define KT_GU_FORM ${v#*:}/" "${FILES[@]}"
  grep -c "^#define KT_GU_FORM ${v#*:}$" "${FILES[@]}"
  nice ninja -C "$B" gemm_bench > /dev/null
  cp "$B/bench/gemm_bench" "$DEST/pb/bench/gemm_bench_${v%%:*}"
  strip "$DEST/pb/bench/gemm_bench_${v%%:*}"
  restore
done
nice ninja -C "$B" gemm_bench > /dev/null
strip -o /tmp/gs_stage_gemm_bench "$B/bench/gemm_bench"
cmp -s /tmp/gs_stage_gemm_bench "$DEST/pb/bench/gemm_bench" && echo "tree's gemm_bench restored"
grep -ao "#define KT_GU_FORM [0-9]" "$DEST"/pb/bench/gemm_bench* | sort | uniq -c
du -sh "$DEST"
