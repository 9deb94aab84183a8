#!/usr/bin/env python3
"""The finalists' rounds by position, from dev/warm_time_device.sh's timelines: per build and
prefill key, a least-squares fit of log(round median) on finalist and round (per run) plus a
position effect for round 0 and one for the later rounds (% against position 0), so a round timed
under other conditions shows as a position profile apart from the later rounds' (the default is
round 0's position 0: finalistOrder). Also the round-0 ratio challenger/default against the later
rounds'. Needs numpy. Usage: finalists_position_fit.py DIR [DIR...] (builds: the runs' prefixes)"""
import glob
import os
import re
import statistics
import sys
from collections import defaultdict

import numpy as np


def marks(path):
    for line in open(path):
        p = line.rstrip("\n").split(" ", 3)
        if len(p) >= 3:
            yield float(p[0]), int(p[1]), p[2], p[3] if len(p) > 3 else ""


data = defaultdict(list)  # (build, key) -> (run, finalist, round, position, log median)
run_id = 0
for d in sys.argv[1:]:
    for f in sorted(glob.glob(os.path.join(d, "*_warm_[0-9]*.tl"))):
        who = os.path.basename(f).split("_")[0]
        key, rnd, pos = None, None, 0
        for t, p, l, dd in marks(f):
            if l == "run_start":
                key = re.sub(r".*M=(\d+),N=(\d+),K=(\d+).*", r"\1x\2x\3", dd)
                rnd, run_id = None, run_id + 1
            elif l == "finalists_round":
                rnd, pos = int(dd.split(":")[0]), 0
            elif l in ("chosen", "finalists_check"):
                rnd = None
            elif l == "bench" and rnd is not None:
                m = re.search(r"median ([\d.]+) status 0 \| (.*)$", dd)
                if m:
                    data[(who, key)].append((run_id, m.group(2), rnd, pos, np.log(float(m.group(1)))))
                    pos += 1

P = 7
for (who, key), rows in sorted(data.items(), key=lambda x: (x[0][1], x[0][0])):
    if not key.startswith("4096"):
        continue
    fins = sorted({(r[0], r[1]) for r in rows})
    rnds = sorted({(r[0], r[2]) for r in rows})
    fi = {k: i for i, k in enumerate(fins)}
    ri = {k: i for i, k in enumerate(rnds)}
    nf, nr = len(fins), len(rnds)
    X = np.zeros((len(rows), nf + nr + 2 * (P - 1)))
    y = np.array([r[4] for r in rows])
    for j, (run, c, r, pos, _) in enumerate(rows):
        X[j, fi[(run, c)]] = 1
        X[j, nf + ri[(run, r)]] = 1
        if 0 < pos < P:
            X[j, nf + nr + (0 if r == 0 else P - 1) + pos - 1] = 1
    b = np.linalg.lstsq(X, y, rcond=None)[0]
    cnt = lambda z, p: sum(1 for r in rows if (r[2] == 0) == z and r[3] == p)
    fmt = lambda z, off: " ".join(f"p{p}:{100 * b[nf + nr + off + p - 1]:+.1f}" for p in range(1, P) if cnt(z, p))
    # Round 0's median ratio of the challengers to the default (position 0) against the later
    # rounds', per run: the bias the fit's round-0 profile makes in the decision.
    r0, rl = [], []
    per = defaultdict(lambda: defaultdict(dict))
    for run, c, r, pos, lm in rows:
        per[run][r][c] = lm
    for run, rs in per.items():
        if 0 not in rs:
            continue
        dflt = next((c for c in rs[0] if c.startswith("cublaslt:idx=0:")), None)
        if not dflt:
            continue
        for r, t in rs.items():
            v = [np.exp(t[c] - t[dflt]) for c in t if c != dflt and dflt in t]
            if v:
                (r0 if r == 0 else rl).append(statistics.median(v))
    med = lambda v: f"{statistics.median(v):.3f} ({len(v)})" if v else "-"
    print(f"{key:16} {who:6} runs {len({r[0] for r in rows}):2} | round 0 {fmt(True, 0):42} | "
          f"later {fmt(False, P - 1):42} | r0 ratio {med(r0)} later {med(rl)}")
