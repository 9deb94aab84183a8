#!/bin/bash
# Builds dev/decode/decode_probe into $1 (default dev/decode/bin): one object per decode config
# (variant.cu with that config's defines), variants.inc listing them, then the probe. -j jobs.
set -e
cd "$(dirname "$0")"
BIN=${1:-bin}
JOBS=${JOBS:-2}
NVCC=${NVCC:-nvcc}
mkdir -p "$BIN"
ARCH="-gencode=arch=compute_90a,code=sm_90a"
COMMON="-O3 -std=c++17 -I../.. -I../../compiler -I. -DLAYOUT=1 -DDTYPE_AB=2 -DDTYPE_C=2 -DHAS_BIAS=0 -DACT=0"
# name: WARPS NT U DEPTH PF XR
CONFIGS=${CONFIGS:-"
a 8 1 2 2 1 0
b 8 1 2 4 1 0
c 8 1 4 2 1 0
d 4 2 1 2 1 0
e 4 2 2 2 1 0
f 8 1 2 4 2 0
g 8 1 2 2 1 1
h 8 2 1 4 1 0
i 8 1 1 4 1 0
j 4 1 4 4 1 0
"}
: > "$BIN/variants.inc.tmp"
decl=""; list=""; objs=""
for MT in ${MTS:-1 2 4 8 16}; do
  while read -r n W NT U D PF XR; do
    [ -z "$n" ] && continue
    v="dv_${n}_mt${MT}"
    desc="m${MT}_w${W}_nt${NT}_u${U}_d${D}_pf${PF}_x${XR}"
    objs="$objs $BIN/$v.o"
    decl="$decl extern \"C\" int $v(const void*, const void*, void*, float*, unsigned*, int, int, int, int, cudaStream_t, int*, int*);"
    list="$list {\"$desc\", $v, $MT},"
    echo "$NVCC $ARCH $COMMON -DVNAME=$v -Dkd=kd_$v -Dktune_gemm_decode=k_$v -DDC_WARPS=$W -DDC_NT=$NT -DDC_MT=$MT -DDC_U=$U -DDC_DEPTH=$D -DDC_PF=$PF -DDC_XR=$XR -Xptxas -v -c variant.cu -o $BIN/$v.o > $BIN/$v.log 2>&1 || (cat $BIN/$v.log; exit 1)"
  done <<< "$CONFIGS"
done > "$BIN/jobs.txt"
# The skinny kernel's first curated configs (M <= 64 tiers), SK_MT = the decode tier.
for MT in ${SKINNY_MTS:-1 2 4 8}; do
  for sc in "sa 1 2 8 1 2 1" "sb 2 1 4 1 2 1"; do
    set -- $sc; n=$1
    v="sk_${n}_mt${MT}"
    objs="$objs $BIN/$v.o"
    decl="$decl extern \"C\" int $v(const void*, const void*, void*, float*, unsigned*, int, int, int, int, cudaStream_t, int*, int*);"
    list="$list {\"skinny_m${MT}_nt$2_u$3_w$4_sk$5_d$6_pf$7\", $v, $MT},"
    echo "$NVCC $ARCH $COMMON -DVNAME=$v -Dks=ks_$v -Dktune_gemm_skinny=k_$v -DSK_NT=$2 -DSK_MT=$MT -DSK_U=$3 -DNUM_WARPS=$4 -DSPLIT_K=$5 -DSK_DEPTH=$6 -DSK_PF=$7 -Xptxas -v -c variant_skinny.cu -o $BIN/$v.o > $BIN/$v.log 2>&1 || (cat $BIN/$v.log; exit 1)" >> "$BIN/jobs.txt"
  done
done
{ echo "$decl"; echo "static const Variant kVariants[] = {$list};"; } > "$BIN/variants.inc"
xargs -P "$JOBS" -I{} sh -c '{}' < "$BIN/jobs.txt"
for f in "$BIN"/dv_*.log "$BIN"/sk_*.log; do
  r=$(grep -o "Used [0-9]* registers" "$f"); s=$(grep -o "[0-9]* bytes spill stores" "$f")
  echo "$(basename "$f" .log): $r, $s"
done
$NVCC $ARCH -O3 -std=c++17 -I"$BIN" decode_probe.cu $objs -lcublasLt -o "$BIN/decode_probe"
echo built "$BIN/decode_probe"
