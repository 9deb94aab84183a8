#!/usr/bin/env python3
"""The table of dev/early_wave_device.sh: per cold run its wall, the engine's time, compiles and
the timeline's marks in ms after the tuner's `main` mark. Usage: early_wave_table.py DIR (walls.txt,
TAG.json, TAG.tl)."""
import json, statistics, sys

w = sys.argv[1]


def marks(path):
    out = []
    for line in open(path, errors="replace"):
        f = line.split(None, 3)
        if len(f) >= 3:
            out.append((float(f[0]), f[1], f[2], f[3].strip() if len(f) > 3 else ""))
    return out


def row(tag):
    ms = marks(f"{w}/{tag}.tl")
    main = next(m for m in ms if m[2] == "main")
    t0, pid = main[0], main[1]
    at = lambda lab, p=pid: next((m[0] - t0 for m in ms if m[2] == lab and (p is None or m[1] == p)), float("nan"))
    workers = [m for m in ms if m[2] == "worker_main" and m[1] != pid]
    iso = workers[0][1] if workers else None  # the isolation worker starts first
    comp = [m[0] - t0 for m in workers if m[1] != iso]
    first_worker = min(comp) if comp else float("nan")
    issued = at("compile_issued")
    d = json.load(open(f"{w}/{tag}.json"))
    d = d[0] if isinstance(d, list) else d
    ctx = at("context_ready", None) if tag.startswith("this") else at("engine_created")
    return dict(engine=d.get("total_wall_ms", 0) / 1e3, compiled=d.get("compiled", 0),
                hits=d.get("store_hits", 0), pre=d.get("process", {}).get("first_wave_precompiled", 0),
                cwall=d.get("compile_wall_ms", 0) / 1e3,
                issued=issued if issued == issued else first_worker, worker=first_worker,
                ctx=ctx, buffers=at("buffers"), r1=at("race_round1_done"),
                win=f"{d.get('winner_source')} {1e3 * d.get('winner_median_ms', 0):.1f}us")


rows = {}
print("run      wall s  engine s  compiled hits pre  compile s  1st issued  1st worker  context  inputs  round1 end  winner")
for line in open(f"{w}/walls.txt"):
    f = line.split()
    tag, wall = f[2], float(f[-1])
    try:
        r = row(tag)
    except Exception as e:  # a failed run: its wall only
        print(f"{tag:8} {wall:6.2f}  ({e})")
        continue
    r["wall"] = wall
    rows[tag] = r
    print(f"{tag:8} {wall:6.2f} {r['engine']:8.2f} {r['compiled']:9} {r['hits']:4} {r['pre']:3.0f} {r['cwall']:10.2f}"
          f" {r['issued']:11.0f} {r['worker']:11.0f} {r['ctx']:8.0f} {r['buffers']:7.0f} {r['r1']:11.0f}  {r['win']}")
for b in ("base", "this"):
    rs = [r for t, r in rows.items() if t.startswith(b)]
    if rs:
        med = lambda k: statistics.median(r[k] for r in rs)
        print(f"{b} median ({len(rs)}): wall {med('wall'):.2f} s, engine {med('engine'):.2f} s, first compile issued "
              f"{med('issued'):.0f} ms, first compile worker {med('worker'):.0f} ms, round 1 end {med('r1'):.0f} ms")
pairs = [(rows.get(f"base_{i}"), rows.get(f"this_{i}")) for i in range(1, 20)]
d = [t["wall"] - b["wall"] for b, t in pairs if b and t]
if d:
    print("this - base wall per pair (s): " + " ".join(f"{x:+.2f}" for x in d))
