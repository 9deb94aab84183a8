#!/usr/bin/env bash
# Where a warm one-shape tuning's wall goes (issue 34's 0.5 s target): 4096^3 NT guided, cold then
# warm store (fresh databases), KTUNE_VERBOSE=1, isolation on, then warm without isolation; each
# stderr line stamped with the seconds since its process started. Staged: dev/lead_stage.sh.
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"; [ -d pb ] || tar -xJf pb.tar.xz
PB=$PWD/pb; export LD_LIBRARY_PATH="$PB/api:$PB/lib"
export KTUNE_CACHE_DIR=/tmp/kc-warm11 CUDA_CACHE_PATH=/tmp/cc-warm11
stamp() { awk -v s="$1" '{ cmd="date +%s.%N"; cmd | getline t; close(cmd); printf "%7.3f %s\n", t-s, $0 }'; }
one() {  # name, extra args
  local n=$1; shift; local s; s=$(date +%s.%N)
  KTUNE_VERBOSE=1 KTUNE_DB=/tmp/kc-warm11/db.$n.json "$PB/tools/ktune" tune gemm --m 4096 --n 4096 \
    --k 4096 --layout NT --json "$@" 2> >(stamp "$s" > "$OUT/$n.err") > "$OUT/$n.json"
  echo "$n rc=$? wall $(awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN{printf "%.3f", b-a}') s"
}
one cold; one warm; one warm2; one warm_noiso --no-isolate; one warm3
sleep 1; for n in warm2 warm_noiso; do echo "== $n"; grep -v '"event":"progress"' "$OUT/$n.err" | cut -c1-220 | head -40; done
python3 - "$OUT" <<'PY'
import json, sys, os
for n in ["cold", "warm", "warm2", "warm_noiso", "warm3"]:
    try: d = json.load(open(os.path.join(sys.argv[1], n + ".json")))
    except Exception as e: print(n, "no json", e); continue
    print(n, "total %.0f compile %.0f bench %.0f fin %.0f" % (d["total_wall_ms"], d["compile_wall_ms"], d["bench_wall_ms"], d["finalists_ms"]),
          {k: round(v) for k, v in d.get("process", {}).items()})
PY
