#!/bin/bash
# GPU machine, one call (issue 32, twenty-third session, call 3): does the tuned GEMM op pick the
# curated DC_CW / DC_PP twins at 128 rows? `ktune tune gemm` (isolation on, KTUNE_VERBOSE, one kernel
# cache, a fresh database per key, TUNE_S s each) at KEYS (tune_keys, common.sh), then
# dev/decode/tunecmp.py's table (every config the race timed, its winner against cuBLASLt) and each
# report's winner.   OUT=$OUT DEADLINE=80 bash dev/decode/device_cwtune.sh   (stage.sh's binaries)
# (twenty-fifth session: KEYS="64x4096x4096 128x4096x4096 128x4096x14336", the DC_ST twins curated)
set -uo pipefail
source "$(dirname "$0")/common.sh"
device_preamble "${DEADLINE:-80}"
KEYS=${KEYS:-128x4096x4096 128x4096x14336 128x6144x4096 64x4096x4096}
TUNE_S=${TUNE_S:-18} tune_keys
for key in $KEYS; do
  python3 - "$OUT/tune_$key.json" "$key" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:  # noqa: BLE001
    print(sys.argv[2], "no report:", e); sys.exit()
r = r[0] if isinstance(r, list) else r
c = sorted((x for x in r.get("candidates", []) if x.get("median_us")), key=lambda x: x["median_us"])
w = r.get("winner", "")
print(sys.argv[2], "winner", w, "| vs_default", (r.get("vs_default") or {}).get("ratio"))
for x in c[:6]:
    print("   %8.2f us  %s" % (x["median_us"], x.get("config", "").replace("DC_WG=2,", "")[:150]))
cw = [x for x in c if "DC_CW" in x.get("config", "")]
print("   DC_CW/DC_PP timed:", len(cw), " ".join("%.2f" % x["median_us"] for x in cw))
st = [x for x in c if "DC_ST" in x.get("config", "") or "DC_XH" in x.get("config", "")]
print("   DC_ST/DC_XH timed:", len(st), " ".join("%.2f" % x["median_us"] for x in st))
PY
done
echo "call wall $(( $(date +%s) - T0 ))s"
(cd "$OUT" && tar czf logs.tgz ./tune_* 2>/dev/null; rm -f ./tune_*.err)
