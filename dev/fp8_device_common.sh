# Sourced by the issue-33 device scripts (dev/fp8_profile.sh, dev/fp8_pingpong_device.sh) after
# they set OUT and T0: the GPU's clocks and power into $OUT/gpu.txt, the prebuilt binaries of pb/
# (their libbenchmark in pb/lib) checked to run here, and one kernel cache for the call.
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
PB=$PWD/pb
export LD_LIBRARY_PATH="$PB/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$PB/bench/gemm_bench" --shapes=none > /dev/null 2> "$OUT/prebuilt.err" ||
  { echo "prebuilt gemm_bench does not run: $(tail -2 "$OUT/prebuilt.err")"; exit 1; }
export KTUNE_CACHE_DIR=/tmp/kc-fp8
