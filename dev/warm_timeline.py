#!/usr/bin/env python3
"""Where a tuning run's wall time goes, from dev/warm_time_device.sh's logs (KTUNE_TIMELINE files,
base/timeline.h, and the shell's start/end epochs in walls.txt). Usage: warm_timeline.py DIR"""
import os
import re
import sys
from collections import defaultdict

W = sys.argv[1]


def marks(path):
    out = []
    if not os.path.exists(path):
        return out
    for line in open(path):
        p = line.rstrip("\n").split(" ", 3)
        if len(p) < 3:
            continue
        out.append((float(p[0]), int(p[1]), p[2], p[3] if len(p) > 3 else ""))
    return out


def first(ms, label, pid=None):
    for t, p, l, d in ms:
        if l == label and (pid is None or p == pid):
            return t, d
    return None, ""


def last(ms, label):
    r = (None, "")
    for t, p, l, d in ms:
        if l == label:
            r = (t, d)
    return r


def phase_of(t, windows):
    for name, a, b in windows:
        if a is not None and b is not None and a <= t <= b:
            return name
    return "other"


rows = [l.split() for l in open(os.path.join(W, "walls.txt"))]
print("== start-up and exit, ms from the shell's start (S) of each run; wall = the shell's")
print(f"{'run':28} {'wall':>6} {'main':>5} {'gpu':>5} {'tuner':>5} {'op':>5} {'buf1':>5} "
      f"{'sel1':>5} {'vend1':>5} {'tuned':>6} {'exit':>6} {'end':>6} | worker: {'main':>5} "
      f"{'bknd':>5} {'eng':>5} {'ops':>5} {'prob1':>5} {'req1':>5}")
details = []
for name, rc, s, e in rows:
    S, E = float(s) * 1e3, float(e) * 1e3
    ms = marks(os.path.join(W, name + ".tl"))
    if not ms:
        print(f"{name:28} {E - S:6.0f}  (no timeline)")
        continue
    main_pid = first(ms, "main")[0] and [p for t, p, l, d in ms if l == "main"][0]
    rel = lambda t: f"{t - S:5.0f}" if t is not None else "    -"
    wpid = next((p for t, p, l, d in ms if l == "worker_main"), None)
    wf = lambda l: first(ms, l, wpid)[0] if wpid else None
    print(f"{name:28} {E - S:6.0f} {rel(first(ms, 'main')[0])} {rel(first(ms, 'open_gpu')[0])} "
          f"{rel(first(ms, 'tuner')[0])} {rel(first(ms, 'gemm_op')[0])} "
          f"{rel(first(ms, 'buffers')[0])} {rel(first(ms, 'selected')[0])} "
          f"{rel(first(ms, 'race_vendor_done')[0])} {rel(last(ms, 'tuned')[0]):>6} "
          f"{rel(last(ms, 'exit')[0]):>6} {E - S:6.0f} | worker: {rel(wf('worker_main'))} "
          f"{rel(wf('worker_backend'))} {rel(wf('worker_engine'))} {rel(wf('worker_ops'))} "
          f"{rel(wf('worker_problem'))} {rel(wf('worker_request'))}")
    details.append((name, S, E, ms, main_pid, wpid))

print("\n== set-up details (first run of each kind)")
seen = set()
for name, S, E, ms, mp, wp in details:
    kind = name.rsplit("_", 1)[0]
    if kind in seen:
        continue
    seen.add(kind)
    for t, p, l, d in ms:
        if l in ("engine_created", "cublaslt_open", "worker_problem", "cublaslt_heuristic") or \
           (l == "main" or l == "worker_main"):
            who = "main" if p == mp else ("worker" if p == wp else str(p))
            print(f"  {name:28} {t - S:7.1f} {who:6} {l} {d}")
            if l == "cublaslt_heuristic" and p == mp:
                pass

print("\n== per key: phases (ms) from the tuner's marks; bench lines summed per phase (both processes)")
print(f"{'run':28} {'key':22} {'pre':>5} {'vend':>5} {'rnd1':>5} {'later':>5} {'final':>5} "
      f"{'rec':>4} | n  load verify measure  runs(est+warm+timed) per phase: vend / rnd1 / later / final")
for name, S, E, ms, mp, wp in details:
    starts = [i for i, m in enumerate(ms) if m[2] == "run_start"]
    for k, i0 in enumerate(starts):
        i1 = starts[k + 1] if k + 1 < len(starts) else len(ms)
        seg = ms[i0:i1]
        g = lambda l: first(seg, l)[0]
        t0, tv0, tv1, tr1, tdr, trc, tch, tre = (g("run_start"), g("race_vendor"),
                                                 g("race_vendor_done"), g("race_round1_done"),
                                                 g("race_drift_done"), g("raced"), g("chosen"),
                                                 g("recorded"))
        key = re.sub(r".*M=(\d+),N=(\d+),K=(\d+).*", r"\1x\2x\3", seg[0][3])
        d = lambda a, b: f"{b - a:5.0f}" if a is not None and b is not None else "    -"
        windows = [("vend", tv0, tv1), ("rnd1", tv1, tr1), ("later", tr1, trc), ("final", trc, tch)]
        agg = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0])
        # A worker's bench line lands after the tuner's phase mark that sent it.
        for t, p, l, dd in ms:
            if l != "bench" or t < t0 or (k + 1 < len(starts) and t > ms[i1][0]):
                continue
            m = re.match(r"load ([\d.]+) verify ([\d.]+) measure ([\d.]+) \| est (\d+) warm (\d+) "
                         r"planned (\d+) timed (\d+)", dd)
            if not m:
                continue
            a = agg[phase_of(t, windows)]
            a[0] += 1
            a[1] += float(m.group(1)); a[2] += float(m.group(2)); a[3] += float(m.group(3))
            a[4] += int(m.group(4)) + int(m.group(5)) + int(m.group(7))
        tot = [sum(agg[x][j] for x in agg) for j in range(5)]
        per = " / ".join(f"{agg[x][0]}:{agg[x][3]:.0f}ms,{agg[x][4]}r" for x in ("vend", "rnd1", "later", "final"))
        print(f"{name:28} {key:22} {d(t0, tv0)} {d(tv0, tv1)} {d(tv1, tr1)} {d(tr1, trc)} "
              f"{d(trc, tch)} {d(tch, tre):>4} | {tot[0]:3d} {tot[1]:5.0f} {tot[2]:6.0f} {tot[3]:7.0f} "
              f"{tot[4]:5d}  {per}")

# The A/B: each build's walls (the shell's) and engine ms (the JSON reports' total_wall_ms).
import json


def reports(path):
    if not os.path.exists(path):
        return []
    t, dec, out, i = open(path).read(), json.JSONDecoder(), [], 0
    i = t.find("{")
    while i >= 0:
        try:
            o, end = dec.raw_decode(t[i:])
        except ValueError:
            break
        out += o if isinstance(o, list) else [o]
        i = t.find("{", i + end)
    return out


groups = defaultdict(list)
for name, rc, s, e in rows:
    who, kind, pas, tag = name.split("_", 3)
    r = reports(os.path.join(W, name + ".json"))
    eng = sum(x.get("total_wall_ms", 0) or 0 for x in r)
    fin = sum(x.get("finalists_ms", 0) or 0 for x in r)
    jit = sum(1 for x in r if x.get("winner_source") == "jit")
    comp = sum(x.get("compiled", 0) or 0 for x in r)
    groups[(kind, pas, tag.isdigit(), who)].append((float(e) - float(s), eng / 1e3, fin / 1e3, jit, len(r), rc, comp))
print("\n== walls (s) per build: runs in order; mean; engine s and finalists s from the reports")
for (kind, pas, plain, who), v in sorted(groups.items()):
    if not plain:
        continue
    walls = " ".join(f"{x[0]:.2f}" for x in v)
    mean = sum(x[0] for x in v) / len(v)
    print(f"{kind:6} {pas:5} {who:5} walls {walls:30} mean {mean:.2f} | engine "
          + " ".join(f"{x[1]:.2f}" for x in v) + " | finalists " + " ".join(f"{x[2]:.2f}" for x in v)
          + " | jit winners " + " ".join(f"{x[3]}/{x[4]}" for x in v) + " | compiled "
          + " ".join(str(x[6]) for x in v) + " | rc " + " ".join(x[5] for x in v))

# Where each build's warm runs spend their wall, phase by phase (ms, mean over the plain warm runs;
# suites: the keys' phases summed). Phases end at the tuner's marks (base/timeline.h).
PH = [("exec", None, "main"), ("cuInit", "main", "open_gpu"), ("context+engine", "open_gpu", "tuner"),
      ("vendor lib", "tuner", "gemm_op"), ("inputs 1st", "gemm_op", "buffers"),
      ("select 1st", "buffers", "selected")]
KEYPH = [("vendor round", "selected", "race_vendor_done"), ("JIT round 1", "race_vendor_done", "race_round1_done"),
         ("later rounds", "race_round1_done", "raced"), ("finalists", "raced", "chosen"),
         ("record", "chosen", "recorded"), ("between keys", None, None)]
acc = defaultdict(lambda: defaultdict(list))
for name, S, E, ms, mp, wp in details:
    who, kind, pas, tag = name.split("_", 3)
    if pas != "warm" or not tag.isdigit():
        continue
    g = acc[(kind, who)]
    t = lambda l: first(ms, l, None)[0]
    prev = S
    for lab, a, b in PH:
        ta = S if a is None else t(a)
        tb = t(b)
        g[lab].append((tb - ta) if ta is not None and tb is not None else float("nan"))
    starts = [i for i, m in enumerate(ms) if m[2] == "run_start"]
    sums = defaultdict(float)
    last_rec = None
    for k, i0 in enumerate(starts):
        i1 = starts[k + 1] if k + 1 < len(starts) else len(ms)
        seg = ms[i0:i1]
        f = lambda l: first(seg, l)[0]
        if k == 0:
            sel = f("selected")
        else:
            sums["between keys"] += f("selected") - last_rec
        for lab, a, b in KEYPH[:-1]:
            if f(a) is not None and f(b) is not None:
                sums[lab] += f(b) - f(a)
        last_rec = f("recorded")
    for lab, _, _ in KEYPH:
        g[lab].append(sums[lab])
    g["after last key"].append(last(ms, "exit")[0] - last_rec if last_rec else float("nan"))
    g["teardown (exit to end)"].append(E - last(ms, "exit")[0])
    g["wall"].append(E - S)
print("\n== phases of the warm runs, ms (mean of the runs; suites: summed over keys)")
cols = sorted(acc)
print(f"{'phase':24}" + "".join(f"{k + ' ' + w:>14}" for k, w in cols))
labels = [p[0] for p in PH] + [p[0] for p in KEYPH] + ["after last key", "teardown (exit to end)", "wall"]
for lab in labels:
    row = f"{lab:24}"
    for c in cols:
        v = acc[c][lab]
        row += f"{sum(v) / len(v):14.0f}" if v else f"{'-':>14}"
    print(row)

# Winners per key and build (the plain warm runs): source and config of each run, its recorded
# median (us); the ratio of the builds' medians of those (not an interleaved re-timing).
win = defaultdict(lambda: defaultdict(list))
for name, rc, s, e in rows:
    who, kind, pas, tag = name.split("_", 3)
    if pas != "warm" or not tag.isdigit():
        continue
    for x in reports(os.path.join(W, name + ".json")):
        key = re.sub(r".*M=(\d+),N=(\d+),K=(\d+).*", r"\1x\2x\3", x.get("key", "?"))
        cfg = (x.get("winner_source", "") + ":" + str(x.get("winner", ""))[:40])
        win[key][who].append((cfg, 1e3 * (x.get("winner_median_ms") or 0)))
print("\n== winners per key (warm runs): build: config (us) per run | median ratio of the builds")
for key in sorted(win):
    ws = win[key]
    meds = {}
    for who, v in sorted(ws.items()):
        us = sorted(u for _, u in v)
        meds[who] = us[len(us) // 2] if us else 0
        print(f"  {key:22} {who:5} " + " | ".join(f"{c} ({u:.1f})" for c, u in v))
    for other in sorted(meds):
        if other != "this" and "this" in meds and meds[other] > 0:
            print(f"  {key:22} this/{other} median winner time {meds['this'] / meds[other]:.4f}")

# The finalists' rounds per run and key (the plain warm runs): each round's median ratio of the
# challengers to the default (cuBLASLt #0) and the default's position in it ("r0:p0:0.95"), from
# the bench lines between finalists_round marks: a round timed under other conditions than the
# rest (round 0 after the race) shows as a ratio apart from the later rounds'.
import statistics
print("\n== finalists' rounds: r<round>:p<default's position>:<median challenger/default>")
r0s = defaultdict(lambda: ([], [], []))  # (build, key): round-0 ratios, later rounds', round counts
for name, S, E, ms, mp, wp in details:
    if "_warm_" not in name or not name.rsplit("_", 1)[1].isdigit():
        continue
    key, rnd, rounds = None, None, defaultdict(list)

    def show():
        if not key or not rounds or not key.startswith("4096"):
            return
        who = name.split("_", 1)[0]
        d = next((c for c, _ in rounds.get(0, []) if c.startswith("cublaslt:idx=0:")), None)
        if not d:
            return
        out = []
        for r in sorted(rounds):
            t = dict(rounds[r])
            rs = [t[c] / t[d] for c in t if c != d and d in t and t[d] > 0]
            if rs:
                out.append(f"r{r}:p{[c for c, _ in rounds[r]].index(d)}:{statistics.median(rs):.3f}")
                r0s[(who, key)][0 if r == 0 else 1].append(statistics.median(rs))
        r0s[(who, key)][2].append(len(rounds))
        print(f"  {name:22} {key:18} " + " ".join(out))
    for t, p, l, dd in ms:
        if l == "run_start":
            show()
            key, rnd, rounds = re.sub(r".*M=(\d+),N=(\d+),K=(\d+).*", r"\1x\2x\3", dd), None, defaultdict(list)
        elif l == "finalists_round":
            rnd = int(dd.split(":")[0])
        elif l in ("chosen", "finalists_check"):  # the winner's check after the rounds: no round's
            rnd = None
        elif l == "bench" and rnd is not None:
            m = re.search(r"median ([\d.]+) status 0 \| (.*)$", dd)
            if m:
                rounds[rnd].append((m.group(2), float(m.group(1))))
    show()

# Per build and key: round 0's ratios against the later rounds' (medians over the runs), and the
# round counts. A first round in line with the later ones reads the same here.
print("\n== round 0 against the later rounds, per build and key: median [range] (runs), rounds per run")
for (who, key), (a, b, n) in sorted(r0s.items()):
    f = lambda v: f"{statistics.median(v):.3f} [{min(v):.3f}, {max(v):.3f}] ({len(v)})" if v else "-"
    print(f"  {who:7} {key:18} r0 {f(a):28} later {f(b):28} rounds {' '.join(map(str, n))}")

# The checks (verification) per build, warm plain runs: device comparisons (verify_device marks)
# and host ones (verify_rows marks: the sampled rows' gather, read-back and host compare), count
# and mean ms per run; the bench lines' verify laps summed per run (a first-round finalist's lap
# holds its three checks).
print("\n== checks per run: device n x mean ms | host rows n x mean ms | verify laps ms (sum)")
chk = defaultdict(list)
for name, S, E, ms, mp, wp in details:
    who, kind, pas, tag = name.split("_", 3)
    if pas != "warm" or not tag.isdigit():
        continue
    dev = [float(d.split()[0]) for t, p, l, d in ms if l == "verify_device"]
    host = []
    for t, p, l, d in ms:
        if l == "verify_rows":
            m = re.findall(r"[\d.]+", d.split("|")[0])
            host.append(sum(float(x) for x in m[:2] + m[3:6]) if len(m) >= 6 else 0)
    laps = sum(float(m.group(1)) for t, p, l, d in ms if l == "bench"
               for m in [re.search(r"verify ([\d.]+)", d)] if m)
    chk[(kind, who)].append((len(dev), sum(dev) / len(dev) if dev else 0, len(host),
                             sum(host) / len(host) if host else 0, laps))
for (kind, who), v in sorted(chk.items()):
    print(f"  {kind:6} {who:7} " + " | ".join(f"{a} x {b:.2f} / {c} x {d:.2f} / {e:.0f}" for a, b, c, d, e in v))
