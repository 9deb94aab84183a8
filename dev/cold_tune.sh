# Sourced by the cold 4096^3 device scripts (fp8_*_device.sh, cold_probe_device.sh), beside them in
# the staged folder. cold_tune KTUNE LABEL TAG [ENV=V ...]: one cold `ktune tune gemm` 4096^3 NT
# into its own store and CUDA cache ($W/kc-TAG, $W/cc-TAG), its timeline, JSON and stderr in
# $W/TAG.*; prints and appends to $W/walls.txt "TUNE LABEL TAG rc=.. wall S", then waits GAP s.
# COLD_LIMIT: the run's limit (default 20 s).
cold_tune() {
  local t=$1 label=$2 tag=$3 S; shift 3
  S=$(date +%s.%N)
  env "$@" KTUNE_COMPILE_PROCESSES=1 KTUNE_CACHE_DIR="$W/kc-$tag" CUDA_CACHE_PATH="$W/cc-$tag" \
    KTUNE_TIMELINE="$W/$tag.tl" timeout "${COLD_LIMIT:-20}" "$t" tune gemm --m 4096 --n 4096 --k 4096 \
    --layout NT --json --quiet > "$W/$tag.json" 2> "$W/$tag.err"
  echo "TUNE $label $tag rc=$? wall $(awk -v a="$S" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}')" \
    | tee -a "$W/walls.txt"
  sleep "${GAP:-0.6}"
}
