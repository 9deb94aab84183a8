#!/usr/bin/env python3
"""Tables of dev/cold_probe_device.sh's call (issue 34): the host, cuInit against NVML, one config's
compile with N copies at once, and the cold 4096^3 runs' walls with their timelines' marks (ms after
`main`: open_gpu, the first compile request, round 1's end, exit) and the workers' longest compile.
Usage: cold_probe_table.py DIR"""
import glob, json, os, re, statistics, sys

d = sys.argv[1]
host = open(os.path.join(d, "host.txt")).read()
for key in ("Model name", "Thread(s) per core", "Core(s) per socket", "Socket(s)", "NUMA node(s)",
            "CPU max MHz", "CPU MHz", "L3", "Hypervisor", "nproc", "siblings"):
    for line in host.splitlines():
        if line.startswith(key) or (key in ("nproc", "siblings") and key in line):
            print("HOST", " ".join(line.split()))
for line in open(os.path.join(d, "init.txt")):
    if line.startswith("INIT"): print(line.rstrip())
runs = {}
for f in glob.glob(os.path.join(d, "cs_*_*.txt")):
    n = int(os.path.basename(f).split("_")[1])
    wall = ru = None
    for line in open(f):
        p = line.split()
        if p[:1] == ["SPLIT"] and p[-1] == "ok": wall = float(p[4])
        if p[:1] == ["RU"]: ru = (float(p[1]), float(p[2]))
    runs.setdefault(n, []).append((wall, ru))
for n in sorted(runs):
    w = [x[0] for x in runs[n] if x[0] is not None]
    u = [x[1][0] for x in runs[n] if x[1]]
    s = [x[1][1] for x in runs[n] if x[1]]
    if w:
        print(f"COMPILE B x{n}: wall ms median {statistics.median(w):.0f} min {min(w):.0f} "
              f"max {max(w):.0f} (ok {len(w)} of {len(runs[n])}); user s mean "
              f"{statistics.mean(u):.2f} sys {statistics.mean(s):.2f}")


def marks(tl):
    t0, m = None, {}
    for line in open(tl):
        p = line.split()
        if len(p) < 3: continue
        t = float(p[0])
        if p[2] == "main" and t0 is None: t0 = t
        if t0 is None: continue
        for k in ("open_gpu", "race_round1_done", "exit", "first_wave_started"):
            if p[2] == k and k not in m: m[k] = t - t0
        if p[2] == "compile_issued" and "compile" not in m: m["compile"] = t - t0
        if p[2] == "early_wave_started" and "early" not in m: m["early"] = t - t0
        if p[2] == "early_wave_device": m["dev"] = "_".join(p[3:])
    return m


rows = {}
for line in open(os.path.join(d, "walls.txt")):
    p = line.split()
    tag, run, wall = p[1], p[2], float(p[-1])
    m = marks(os.path.join(d, run + ".tl")) if os.path.exists(os.path.join(d, run + ".tl")) else {}
    try:
        j = json.load(open(os.path.join(d, run + ".json")))
        cj = j.get("compile_jobs", {})
        extra = (f"cmax {cj.get('compiler_ms_max', 0):.0f} threads {cj.get('threads')} "
                 f"wave {cj.get('first_wave')} compiled {j.get('compiled')} "
                 f"winner {j.get('winner', '')[:60]} {1e3 * j.get('winner_median_ms', 0):.1f}us")
    except (OSError, ValueError):
        extra = "no json"
    print(f"RUN {run} wall {wall:.2f} open {m.get('open_gpu', -1):.0f} compile "
          f"{m.get('compile', -1):.0f} round1 {m.get('race_round1_done', -1):.0f} exit "
          f"{m.get('exit', -1):.0f} early {m.get('early', -1):.0f} {m.get('dev', '-')} {extra}")
    rows.setdefault(tag, []).append((wall, m.get("compile", 0), m.get("race_round1_done", 0)))
for tag, v in rows.items():
    w = sorted(x[0] for x in v)
    print(f"VARIANT {tag}: n {len(w)} wall median {statistics.median(w):.2f} [{w[0]:.2f}, {w[-1]:.2f}]"
          f" first compile median {statistics.median(x[1] for x in v):.0f} ms, round1 median "
          f"{statistics.median(x[2] for x in v):.0f} ms")
