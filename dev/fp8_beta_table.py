#!/usr/bin/env python3
"""fp8_beta_table.py DIR: dev/fp8_beta_device.sh's compile tables (issue 34). (1) the 4096^3 wave's
15 compiles started at once per build and round (cs_<build>_<round>_<i>.txt: SPLIT lines, wall ms
from --at): per config the wall, and the wave's slowest; (2) each cold tuning run's compile workers'
longest and mean compile and the compile stage (TAG.json)."""
import glob, json, os, re, statistics as st, sys

w = sys.argv[1]
cfgs = [l.strip() for l in open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                              "fp8_wave4096.cfg")) if l.strip()]


def short(c):
    g = lambda k: re.search(k + r"=(\d+)", c).group(1)
    return (("P" if g("PINGPONG") == "1" else "C") + g("BLOCK_N") + "_W" + g("WG_M") + "_E" + g("EPI_TMA")
            + "_S" + g("NUM_STAGES") + "_G" + g("GROUP_M") + ("_CL" + g("CLUSTER_M") if g("CLUSTER_M") != "1" else ""))


t = {}  # (build, round) -> {i: ms}
for f in glob.glob(f"{w}/cs_*_*_*.txt"):
    _, b, r, i = os.path.basename(f)[:-4].split("_")
    m = re.search(r"^SPLIT full \d+ \d+ ([\d.]+) ([\d.]+) ([\d.]+) tma ok", open(f).read(), re.M)
    if m: t.setdefault((b, int(r)), {})[int(i)] = float(m.group(1))
runs = sorted(t, key=lambda k: (k[1], k[0] != "base"))
print("compile wall ms, 15 at once: " + "  ".join(f"{b} r{r}" for b, r in runs))
for i, c in enumerate(cfgs):
    print(f"{i:2} {short(c):22} " + "  ".join(f"{t[k].get(i, 0):7.0f}" for k in runs))
print("wave max                  " + "  ".join(f"{max(t[k].values()):7.0f}" for k in runs))
print("wave mean                 " + "  ".join(f"{st.mean(t[k].values()):7.0f}" for k in runs))
for b in ("base", "new"):
    mx = [max(t[k].values()) for k in runs if k[0] == b]
    if mx: print(f"{b}: wave max median {st.median(mx):.0f} ms ({min(mx):.0f}-{max(mx):.0f})")
print("cold runs: tag  compile_wall s  compiler_ms max / mean  compiled  winner")
for f in sorted(glob.glob(f"{w}/*_[0-9]*.json")):
    try:
        d = json.load(open(f)); d = d[0] if isinstance(d, list) else d
        cj = d.get("compile_jobs", {}); n = max(cj.get("jobs", 1), 1)
        print(f"{os.path.basename(f)[:-5]:8} {d.get('compile_wall_ms', 0) / 1e3:6.2f} {cj.get('compiler_ms_max', 0):8.0f} / "
              f"{cj.get('compiler_ms_sum', 0) / n:5.0f} {d.get('compiled', 0):5} {d.get('winner_source')} "
              f"{1e3 * d.get('winner_median_ms', 0):.1f}us")
    except Exception as e:
        print(f"{f}: {e}")
