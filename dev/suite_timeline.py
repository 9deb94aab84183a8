#!/usr/bin/env python3
"""Where a cold suite's wall goes, per key, from one `ktune tune gemm --suite llm --json` run:
its KTUNE_TIMELINE file (base/timeline.h marks) and its JSON reports (one per key).
Usage: suite_timeline.py TIMELINE JSON [LABEL]
Per key (ms): `start` (from the tuner's main mark), `r1` round 1 (run_start to race_round1_done:
the lazy compiles and their first rounds), of which `bench` the tuner's own bench marks (load,
verify, timed runs) and `wait` the rest (waiting for compiles, mostly), `rounds` (round 1's end to
`raced`: drift probe and later rounds), `final` (`raced` to `chosen`: the finalists), `rec` (the
database write and the report), `gap` (to the next key's run_start: its inputs); from the JSON the
engine's total, its compile wall, compile jobs (store misses) and the candidates raced."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite_winners import reports as winner_reports  # noqa: E402


def marks(path):
    out = []
    for line in open(path):
        p = line.rstrip("\n").split(" ", 3)
        if len(p) >= 3:
            out.append((float(p[0]), int(p[1]), p[2], p[3] if len(p) > 3 else ""))
    return out


def reports(path):
    return winner_reports(open(path).read())


def bench_ms(detail):
    # "load 0.05 verify 18.96 measure 63.33 | ..."
    f = detail.split("|")[0].split()
    try:
        return sum(float(f[k + 1]) for k in range(0, len(f) - 1, 2))
    except ValueError:
        return 0.0


def main():
    ms = marks(sys.argv[1])
    reps = reports(sys.argv[2])
    label = sys.argv[3] if len(sys.argv) > 3 else ""
    if not ms:
        print(f"{label}: empty timeline")
        return
    pid = ms[0][1]
    ms = [m for m in ms if m[1] == pid]  # the tuner's marks (the worker has its own)
    t0 = next((t for t, _, l, _ in ms if l == "main"), ms[0][0])
    runs, cur = [], None
    for t, _, l, d in ms:
        if l == "run_start":
            cur = {"start": t, "bench": 0.0}
            runs.append(cur)
        elif cur is not None:
            if l == "bench" and "r1_end" not in cur:
                cur["bench"] += bench_ms(d)
            elif l == "race_round1_done":
                cur["r1_end"] = t
            elif l in ("raced", "chosen", "printed"):
                cur.setdefault(l, t)
    print(f"{label} key | start | r1 | bench | wait | rounds | final | rec | gap | engine | "
          "compile wall | jobs | raced")
    tot = {"r1": 0, "wait": 0, "final": 0}
    for i, r in enumerate(runs):
        o = reps[i] if i < len(reps) else {}
        k = o.get("key", "?")
        short = "x".join(p.split("=")[1] for p in k.split(",") if p[:2] in ("M=", "N=", "K="))
        r1 = r.get("r1_end", r["start"]) - r["start"]
        rounds = r.get("raced", r["start"]) - r.get("r1_end", r["start"])
        final = r.get("chosen", r["start"]) - r.get("raced", r["start"])
        rec = r.get("printed", r["start"]) - r.get("chosen", r["start"])
        nxt = runs[i + 1]["start"] if i + 1 < len(runs) else r.get("printed", r["start"])
        gap = nxt - r.get("printed", r["start"])
        wait = r1 - r["bench"]
        tot["r1"] += r1
        tot["wait"] += wait
        tot["final"] += final
        cj = o.get("compile_jobs", {})
        print(f"{label} {short} | {r['start'] - t0:.0f} | {r1:.0f} | {r['bench']:.0f} | {wait:.0f} | "
              f"{rounds:.0f} | {final:.0f} | {rec:.0f} | {gap:.0f} | {o.get('total_wall_ms', 0):.0f} | "
              f"{o.get('compile_wall_ms', 0):.0f} | {cj.get('jobs', 0)} | "
              f"{o.get('search', {}).get('reached', 0)}")
    end = max(t for t, _, _, _ in ms)
    print(f"{label} total: last mark {end - t0:.0f} ms after main; round 1 {tot['r1']:.0f} "
          f"(waiting {tot['wait']:.0f}), finalists {tot['final']:.0f}")


if __name__ == "__main__":
    main()
