#!/usr/bin/env python3
"""The table of dev/vendor_edge_device.sh. Usage: vendor_edge_table.py DIR (walls.txt, TAG.json,
TAG.tl, compile.txt).
4096^3 (sq_*): wall, engine, compiles, and from the timeline (ms after the tuner's `main` mark):
open (`open_gpu`: cuInit and the device queries), wave (the first compile request), the first and
the last round-1 arrival (a JIT candidate's bench line before `race_round1_done`), the slowest
compile (`compile_jobs.compiler_ms_max`, ms of NVRTC in a worker), the race's stop
decision (`race_stop`, with what it had raced / started), round 1's end, the finalists' end
(`chosen`), exit; the winner.
Suites (su_*): wall, engine (the reports' total_wall_ms summed), and at 16x6144x4096: raced
(reached), compiled, store hits, the `race_owed` marks, the winner's source, time and config."""
import re, statistics, sys

from suite_winners import reports as suite_reports

w = sys.argv[1]
KEY = "M=16,N=6144,K=4096"


def reports(path):
    return suite_reports(open(path).read())


def marks(path):
    out = []
    for line in open(path, errors="replace"):
        f = line.split(None, 3)
        if len(f) >= 3:
            out.append((float(f[0]), f[1], f[2], f[3].strip() if len(f) > 3 else ""))
    return out


def short(cfg):
    keep = ("KIND", "DC_GRID", "DC_NT", "DC_U", "DC_WG", "DC_XR", "DC_DEPTH", "SK_MT", "SK_NT")
    return ",".join(p for p in cfg.split(",") if p.split("=")[0] in keep) or cfg[:40]


def single(tag):
    ms = marks(f"{w}/{tag}.tl")
    main = next(m for m in ms if m[2] == "main")
    t0, pid = main[0], main[1]
    at = lambda lab: next((m[0] - t0 for m in ms if m[2] == lab and m[1] == pid), float("nan"))
    r1 = at("race_round1_done")
    cuinit = at("cuinit")
    arr = [m[0] - t0 for m in ms if m[2] == "bench" and "cublaslt" not in m[3] and m[0] - t0 <= r1]
    stop = next((m for m in ms if m[2] == "race_stop" and m[1] == pid), None)
    d = reports(f"{w}/{tag}.json")[0]
    return dict(engine=d.get("total_wall_ms", 0) / 1e3, compiled=d.get("compiled", 0),
                open=at("open_gpu"), cuinit=cuinit, wave=at("compile_issued"), first=min(arr, default=float("nan")),
                last=max(arr, default=float("nan")), stop=(stop[0] - t0) if stop else float("nan"),
                stop_what=stop[3] if stop else "-", r1=r1, chosen=at("chosen"), exit=at("exit"),
                fin=d.get("finalists_ms", 0), cmax=d.get("compile_jobs", {}).get("compiler_ms_max", 0),
                win=f"{d.get('winner_source')} {1e3 * d.get('winner_median_ms', 0):.1f}")


def suite(tag):
    reps = reports(f"{w}/{tag}.json")
    eng = sum(r.get("total_wall_ms", 0) for r in reps) / 1e3
    r = next((r for r in reps if KEY in r.get("key", "")), {})
    s = r.get("search", {})
    owed, inkey = [], False
    for m in marks(f"{w}/{tag}.tl"):
        if m[2] == "run_start":
            inkey = KEY in m[3]
        elif inkey and m[2] == "race_owed":
            owed.append(m[3].replace(" raced", ""))
    jit = sum(1 for x in reps if x.get("winner_source") == "jit")
    return dict(engine=eng, reached=s.get("reached", 0), compiled=r.get("compiled", 0),
                hits=r.get("store_hits", 0), owed=";".join(owed) or "-", jit=jit,
                win=f"{r.get('winner_source')} {1e3 * r.get('winner_median_ms', 0):.2f}",
                cfg=short(r.get("winner", "")))


rows = {}
print("4096^3 cold     wall  engine comp cuinit open  wave first  last  cmax  stop(raced,started)      r1 chosen  exit  fin  winner us")
sq, su = [], []
for line in open(f"{w}/walls.txt"):
    f = line.split()
    b, tag, wall = f[1], f[2], float(f[-1])
    try:
        r = single(tag) if tag.startswith("sq") else suite(tag)
    except Exception as e:  # a failed run: its wall only
        print(f"{tag:14} {wall:5.2f}  ({e})")
        continue
    r.update(wall=wall, build=b, tag=tag)
    (sq if tag.startswith("sq") else su).append(r)
for r in sq:
    print(f"{r['tag']:14} {r['wall']:5.2f} {r['engine']:7.2f} {r['compiled']:4} {r['cuinit']:6.0f} {r['open']:5.0f} {r['wave']:5.0f}"
          f" {r['first']:5.0f} {r['last']:5.0f} {r['cmax']:5.0f} {r['stop']:5.0f} {r['stop_what'][:20]:20} {r['r1']:5.0f}"
          f" {r['chosen']:6.0f} {r['exit']:5.0f} {r['fin']:4.0f}  {r['win']}")
print(f"\nsuite cold      wall  engine  JIT wins | {KEY}: raced comp hits owed(n at raced)  winner us  config")
for r in su:
    print(f"{r['tag']:14} {r['wall']:5.2f} {r['engine']:7.2f} {r['jit']:8} | {r['reached']:21} {r['compiled']:4}"
          f" {r['hits']:4} {r['owed'][:18]:18} {r['win']:>10}  {r['cfg']}")
for name, rs in (("4096^3", sq), ("suite", su)):
    for b in ("base", "this", "after"):
        x = [r for r in rs if r["build"] == b]
        if x:
            med = lambda k: statistics.median(r[k] for r in x)
            extra = (f", cuinit {med('cuinit'):.0f}, open {med('open'):.0f}, last arrival {med('last'):.0f},"
                     f" exit {med('exit'):.0f} ms") if name == "4096^3" else ""
            print(f"{name} {b} median ({len(x)}): wall {med('wall'):.2f} [{min(r['wall'] for r in x):.2f},"
                  f" {max(r['wall'] for r in x):.2f}] s, engine {med('engine'):.2f} s{extra}")
for f in ("compile.txt", "probe.txt"):
  try:
    print("".join(open(f"{w}/{f}").readlines()))
  except OSError:
    pass
