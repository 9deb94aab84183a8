#!/usr/bin/env python3
"""The table of dev/wave_width_device.sh: per cold run its variant, wall, engine time, the first
key's wave (round 1's end less the first compile issued, ms), compiles, candidates reached, the
compile workers' longest and mean compile, the winner; medians per variant; for suites each key's
compiled/reached and winner. Usage: wave_width_table.py DIR (walls.txt, TAG.json, TAG.tl)."""
import json, statistics, sys

w = sys.argv[1]


def tl(tag):
    ms = []
    for line in open(f"{w}/{tag}.tl", errors="replace"):
        f = line.split(None, 3)
        if len(f) >= 3:
            ms.append((float(f[0]), f[2]))
    t0 = next(t for t, lab in ms if lab == "main")
    at = lambda lab: next((t - t0 for t, l in ms if l == lab), float("nan"))
    return at("compile_issued"), at("race_round1_done")


def reports(tag):
    text, out, i, dec = open(f"{w}/{tag}.json").read(), [], 0, json.JSONDecoder()
    while True:  # a suite prints one document per key
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        d, i = dec.raw_decode(text, i)
        out += d if isinstance(d, list) else [d]


def short(r):
    c = r.get("winner", "")
    if r.get("winner_source") != "jit":
        return f"{r.get('winner_source')} {1e3 * r.get('winner_median_ms', 0):.1f}"
    keep = ("BLOCK_N", "EPI_TMA", "CLUSTER_M", "SPLIT_K", "KIND", "DC_GRID", "DC_NT", "DC_U")
    kv = [p for p in c.split(",") if p.split("=")[0] in keep]
    return f"{'/'.join(p.split('=')[1] for p in kv)} {1e3 * r.get('winner_median_ms', 0):.1f}"


rows = []
print("tag            wall  engine  wave ms  1st_wave compiled reached  cmax  cmean  winner (us)")
for line in open(f"{w}/walls.txt"):
    f = line.split()
    v, tag, wall = f[1], f[2], float(f[-1])
    try:
        reps = reports(tag)
        issued, r1 = tl(tag)
    except Exception as e:
        print(f"{tag:14} {wall:5.2f} ({e})")
        continue
    r = reps[0]
    cj = r.get("compile_jobs", {})
    n = max(1, cj.get("jobs", 0))
    eng = sum(x.get("total_wall_ms", 0) for x in reps) / 1e3
    rows.append(dict(p=tag.split("_")[0], v=v, wall=wall, eng=eng, wave=r1 - issued))
    print(f"{tag:14} {wall:5.2f} {eng:7.2f} {r1 - issued:8.0f} {cj.get('first_wave', 0):9} "
          f"{r.get('compiled', 0):8} {r.get('search', {}).get('reached', 0):7} "
          f"{cj.get('compiler_ms_max', 0):5.0f} {cj.get('compiler_ms_sum', 0) / n:6.0f}  {short(r)}")
    if len(reps) > 1:
        for x in reps:
            k = x.get("key", "")
            dims = "x".join(p.split("=")[1] for p in k.split(",") if p.split("=")[0] in ("M", "N", "K"))
            print(f"    {dims:18} compiled {x.get('compiled', 0):3} reached "
                  f"{x.get('search', {}).get('reached', 0):3}  {short(x)}")
print("== medians")
for p in dict.fromkeys(r["p"] for r in rows):
    for v in dict.fromkeys(r["v"] for r in rows if r["p"] == p):
        rs = [r for r in rows if r["p"] == p and r["v"] == v]
        med = lambda k: statistics.median(r[k] for r in rs)
        print(f"{p} {v:4} n {len(rs)}: wall {med('wall'):.2f} s [{min(r['wall'] for r in rs):.2f}, "
              f"{max(r['wall'] for r in rs):.2f}], engine {med('eng'):.2f} s, wave {med('wave'):.0f} ms")
