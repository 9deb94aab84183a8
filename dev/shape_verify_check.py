#!/usr/bin/env python3
"""Offline checks of issue 35's tenth pass (bench/NOTES.md): the re-timing's verification method and
the finalist-ratio default score, on the held-out rows of seeds 4-10.
  python3 dev/shape_verify_check.py [DATA_DIR]      (default bench/data)
Sets: seed 9 "pass" (heldout_seed9/heldout.jsonl.gz: verification in a pass of its own, a 10 ms
lead-in), seed 9 "round0" (heldout_again.jsonl.gz: the same keys, round 0 verifying each candidate
just before timing it, the method of passes four to nine), seed 10 "pass+lead-in" (verification
pass, then 100 ms of back-to-back lead-in before the race and the rounds). Seeds 4-8: the sixth
pass's training database; 9 and 10: the one retuned in the seed-9 call.
1. The rule copy (dev/shape_predict_port.py) reproduces the bare predictions recorded in the rows.
2. Bare prediction replayed with the default scored by its first-pass median only ("shipped") or
   also by the finalists' ratio ("finalists", predict.cc now): / best geomean, P95, / default max.
3. Race vs re-timing, same process (rank / default ratios and each label's race / re-timing bias).
4. Position effect: a candidate's round-0 median over its round-1 median, by its position in
   round 0 (round 1 runs the order reversed, right after round 0).
5. The same keys under both methods (seed 9): rank / default ratios, pass over round0.
6. A rejected rule family ("tie"): a JIT config within T of the fastest at both bracketing tuned
   keys and no more than S slower than the default there, on the seen sets.
Not a measurement: a replay of recorded times."""
import collections
import gzip
import json
import math
import os
import statistics as st
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shape_predict_port as port  # noqa: E402
from shape_stats import corr, gm, p95, race_pairs, times  # noqa: E402 (dev/ is the script's own dir)

LIM = 0.2  # predict::kRaceMaxMs
RANKS = ("r1", "r2", "r3")
BANDS = ((0, LIM), (LIM, 1e9))


def load(path):
    return [r for r in (json.loads(x) for x in gzip.open(path, "rt")) if not r["error"]]


def band(lo):
    return f"<= {LIM}" if lo == 0 else f"> {LIM}"


def bare_label(r):
    for role, lab, _ in r["times"]:
        if role == "unraced":
            return lab
    return "r0" if r["predicted_default"] else "jit:" + r["predicted"]


def reproduced(db, rs):
    idx = port.index(db, "shipped")
    bad = sum(1 for r in rs if ("r0" if (c := port.predict(idx, port.key_of(r["m"], r["n"], r["k"]))[0]) is None
                                else "jit:" + c) != bare_label(r))
    print(f"1. seed 9 rows: the rule copy's bare prediction differs from the recorded one on {bad} of {len(rs)}")


def replay(db, rs, mode):
    idx = port.index(db, mode)
    w, d, fired = [], [], 0
    for r in rs:
        t = times(r)
        c = port.predict(idx, port.key_of(r["m"], r["n"], r["k"]))[0]
        lab = "r0" if c is None or "jit:" + c not in t else "jit:" + c
        fired += lab != "r0"
        w.append(t[lab] / min(t.values()))
        d.append(t[lab] / t["r0"])
    return f"{gm(w):.4f} / {p95(w):.3f} / {max(d):.3f} ({fired} JIT)"


def race_bias(name, rs):
    for lo, hi in BANDS:
        xs, ys, bias = race_pairs(rs, lo, hi, RANKS)
        c = corr(xs, ys)
        same = sum((a < 0) == (b < 0) for a, b in zip(xs, ys))
        print(f"| {name} | {band(lo)} | {len(xs)} | {c:.2f} | {same} | "
              + " | ".join(f"{math.exp(st.mean(bias[k])):.3f}" for k in ("r0",) + RANKS) + " |")


def positions(name, rs):
    for lo, hi in BANDS:
        by = collections.defaultdict(list)
        for r in rs:
            if not lo < times(r)["r0"] <= hi:
                continue
            order = [lab for _, lab, _ in r["times"] if len(r["rounds"].get(lab, [])) == 2]
            for i, lab in enumerate(order):
                a, b = r["rounds"][lab]
                by[min(i, 5)].append(math.log(a / b))
        print(f"| {name} | {band(lo)} | " + " | ".join(
            f"{math.exp(st.mean(by[p])):.3f}" for p in range(6)) + " |")


def two_methods(a, b):
    bk = {(r["m"], r["n"], r["k"]): r for r in b}
    for lo, hi in BANDS:
        diffs, dflt, n5, kept5 = [], [], 0, 0
        for r in a:
            o = bk.get((r["m"], r["n"], r["k"]))
            if not o or not lo < times(r)["r0"] <= hi:
                continue
            ta, tb = times(r), times(o)
            dflt.append(math.log(ta["r0"] / tb["r0"]))
            for x in RANKS:
                if x in ta and x in tb:
                    ra, rb = ta[x] / ta["r0"], tb[x] / tb["r0"]
                    diffs.append(math.log(ra / rb))
                    if rb < 0.95:
                        n5 += 1
                        kept5 += ra < 0.98
        print(f"| {band(lo)} | {len(diffs)} | {math.exp(st.mean(diffs)):.3f} | {st.pstdev(diffs):.3f} | "
              f"{math.exp(st.mean(dflt)):.3f} | {kept5} of {n5} |")


def tie(db, rs, near, slack):
    idx = port.index(db, "finalists")
    w, d, fired = [], [], 0
    for r in rs:
        t = times(r)
        key = port.key_of(r["m"], r["n"], r["k"])
        c = port.predict(idx, key)[0]
        side = port.bracketing(idx, port.parse(key)) if c is None else None
        if side:
            best = 0
            for cls in side[0]["sc"]:
                sc = [port.sc_at(n, cls) for n in side]
                sd = [port.sc_at(n, port.DEF) for n in side]
                if cls != port.DEF and all(k and kd and s >= near and s >= x * (1 - slack)
                                           for (s, k), (x, kd) in zip(sc, sd)) and sum(s for s, _ in sc) > best:
                    c, best = cls, sum(s for s, _ in sc)
        lab = "r0" if c is None or "jit:" + c not in t else "jit:" + c
        fired += lab != "r0"
        w.append(t[lab] / min(t.values()))
        d.append(t[lab] / t["r0"])
    return f"{gm(w):.4f} / {p95(w):.3f} / {max(d):.3f} ({fired})"


def main(argv):
    d = argv[1] if len(argv) > 1 else "bench/data"
    db4 = json.load(gzip.open(f"{d}/heldout_seed4/heldout_db.json.gz", "rt"))
    db9 = json.load(gzip.open(f"{d}/heldout_seed9/heldout_db.json.gz", "rt"))
    s9p, s9r = load(f"{d}/heldout_seed9/heldout.jsonl.gz"), load(f"{d}/heldout_seed9/heldout_again.jsonl.gz")
    s10 = load(f"{d}/heldout_seed10/heldout.jsonl.gz")
    reproduced(db9, s9p)
    print("\n2. bare prediction replayed: / best geomean / P95 / / default max (JIT picks)")
    print("| set | shipped rule | finalist-ratio default score |\n|---|---|---|")
    sets = [(f"seed {s}", db4, load(f"{d}/heldout_seed{s}/heldout.jsonl.gz")) for s in (4, 5, 6, 7)]
    sets += [("seed 8", db4, load(f"{d}/heldout_seed8/heldout_shipped.jsonl.gz")),
             ("seed 9 pass", db9, s9p), ("seed 9 round0", db9, s9r), ("seed 10 pass+lead-in", db9, s10)]
    for name, db, rs in sets:
        print(f"| {name} | {replay(db, rs, 'shipped')} | {replay(db, rs, 'finalists')} |")
    print("\n3. race vs re-timing, same process")
    print("| set | default ms | rank pairs | corr | same sign | race / re-timing: r0 | r1 | r2 | r3 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, rs in (("seed 9 pass", s9p), ("seed 9 round0", s9r), ("seed 10 pass+lead-in", s10)):
        race_bias(name, rs)
    print("\n4. round-0 median / round-1 median by position in round 0 (5: 5th and later)")
    print("| set | default ms | 0 | 1 | 2 | 3 | 4 | 5+ |\n|---|---|---|---|---|---|---|---|")
    for name, rs in (("seed 9 pass", s9p), ("seed 9 round0", s9r), ("seed 10 pass+lead-in", s10)):
        positions(name, rs)
    print("\n5. seed 9, the same keys under both methods (rank / default, pass over round0)")
    print("| default ms | pairs | geomean | sd of log | default pass / round0 | rank > 5% faster in round0: "
          "> 2% faster in pass |\n|---|---|---|---|---|---|")
    two_methods(s9p, s9r)
    print("\n6. rejected: the tie rule on the seen sets (/ best geomean / P95 / / default max (JIT picks, the tie rule's and the others'))")
    for near, slack in ((0.97, 0.0), (0.97, 0.01), (0.99, 0.01), (0.97, 0.02)):
        print(f"near {near} slack {slack}: seed 4 {tie(db4, sets[0][2], near, slack)}; "
              f"seed 9 pass {tie(db9, s9p, near, slack)}; seed 9 round0 {tie(db9, s9r, near, slack)}")


if __name__ == "__main__":
    main(sys.argv)
