#!/usr/bin/env python3
"""Offline check of prediction rules on a held-out run (issue 35): which config each rule would run
on every held-out key, and how that config did in the key's own interleaved re-timing (the rows'
per-candidate times: the default r0, cuBLASLt ranks r1-r3, the neighbours' JIT configs). A rule's
pick that the row did not time counts as the default (the rule could not be judged there: counted
in "untimed").
  python3 dev/shape_rule_check.py heldout.jsonl[.gz] [heldout_db.json.gz] [--race]
  (the sixth pass's run: bench/data/heldout_seed4/heldout.jsonl.gz and heldout_db.json.gz)
Without the database, each key's neighbours are the other held-out keys of its N x K (leave one
out: how the rules were chosen before the sixth pass); with it, the tuned keys of the run.
Rules: default (r0 always); bracket-jit (autotune/predict.h's bracketing rule: a JIT config near-best
and faster than the default by 2% at the nearest key on each side in M); bracket-rank (the same for
cuBLASLt ranks 1-3, by rank); nearest-jit (the nearest key's JIT winner if it beat the default there).
"""
import gzip
import json
import math
import sys
from shape_stats import gm, p95  # noqa: E402 (dev/ is the script's own dir)

MARGIN, NEAR_BEST = 0.02, 0.97


def row_times(r):
    """label -> ms; the default as r0 (a predicted default is r0)."""
    t = {}
    for role, label, ms in r["times"]:
        if role == "predicted" and r["predicted_default"]:
            label = "r0"
        t[label] = min(t.get(label, 1e30), ms)
    return t


def rank_of(config):
    for part in config.split(":"):
        if part.startswith("idx="):
            return part[4:]
    return None


def db_points(path):
    """(n, k) -> sorted [(m, {label: ms})] from the tuning database (JIT configs and ranks)."""
    d = json.load(gzip.open(path) if path.endswith(".gz") else open(path))
    out = {}
    for dev in d["devices"]:
        for key, e in dev["entries"].items():
            if e.get("predicted") or not e.get("winner"):
                continue
            f = dict(x.split("=", 1) for x in key.split(","))
            t = {}
            for c in e["candidates"]:
                ms = c.get("stats", {}).get("median_ms", 0)
                if ms <= 0:
                    continue
                stopped = c.get("status") != "ok"  # stopped early: a lower bound, at best "not faster"
                if c["source"] == "jit":
                    lab = "jit:" + c["config"]
                else:
                    rk = rank_of(c["config"])
                    if rk is None:
                        continue
                    lab = "r" + rk
                t[lab] = 2 * ms if stopped else ms
            out.setdefault((int(f["N"]), int(f["K"])), []).append((int(f["M"]), t))
    for v in out.values():
        v.sort()
    return out


def bracket(m, pts, kinds):
    lo = [p for p in pts if p[0] < m]
    hi = [p for p in pts if p[0] > m]
    if not lo or not hi or "r0" not in lo[-1][1] or "r0" not in hi[0][1]:
        return "r0"
    sides = [lo[-1][1], hi[0][1]]
    best, best_gain = "r0", 1 + MARGIN
    for c in sides[0]:
        if c == "r0" or not c.startswith(kinds):
            continue
        if not all(c in t and t[c] * (1 + MARGIN) <= t["r0"] and min(t.values()) / t[c] >= NEAR_BEST
                   for t in sides):
            continue
        g = gm([t["r0"] / t[c] for t in sides])
        if g > best_gain:
            best, best_gain = c, g
    return best


def nearest_jit(m, pts):
    if not pts:
        return "r0"
    _, t = min(pts, key=lambda p: abs(math.log(p[0] / m)))
    w = min(t, key=t.get)
    return w if w.startswith("jit:") and "r0" in t and t[w] * (1 + MARGIN) <= t["r0"] else "r0"


RULES = {
    "default": lambda m, pts: "r0",
    "bracket-jit": lambda m, pts: bracket(m, pts, "jit:"),
    "bracket-rank": lambda m, pts: bracket(m, pts, "r"),
    "bracket-jit+rank": lambda m, pts: bracket(m, pts, ("jit:", "r")),
    "nearest-jit": nearest_jit,
}


def main(argv):
    src = gzip.open(argv[1], "rt") if argv[1].endswith(".gz") else open(argv[1])
    rows = [json.loads(x) for x in src if x.strip()]
    rows = [r for r in rows if not r.get("error") and r.get("times")]
    db = db_points(argv[2]) if len(argv) > 2 and not argv[2].startswith("--") else None
    print(f"{len(rows)} keys; neighbours: {'tuned keys (' + argv[2] + ')' if db else 'other held-out keys'}")
    print("| rule | keys | / best: geomean | P95 | max | / default: max | > 1.02x default | fired | untimed |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, rule in RULES.items():
        w, d, fired, untimed = [], [], 0, 0
        for r in rows:
            t = row_times(r)
            if db is not None:
                pts = db.get((r["n"], r["k"]), [])
            else:
                pts = sorted((x["m"], row_times(x)) for x in rows
                             if (x["n"], x["k"]) == (r["n"], r["k"]) and x["m"] != r["m"])
            c = rule(r["m"], pts)
            if c != "r0" and c not in t:
                untimed += 1
                c = "r0"
            fired += c != "r0"
            w.append(t[c] / min(t.values()))
            d.append(t[c] / t["r0"])
        print(f"| {name} | {len(w)} | {gm(w):.4f} | {p95(w):.3f} | {max(w):.3f} | {max(d):.3f} "
              f"| {sum(x > 1.02 for x in d)} | {fired} | {untimed} |")
    if "--race" in argv:
        race_table(rows)


def race_table(rows, draws=40):
    """The race (autotune/predict.h: raceSet / racePick) replayed on the rows' own times: the
    default, the prediction and ranks 1..V timed with a simulated measurement noise (lognormal,
    sigma 0-2%, 40 draws), the fastest kept where it beats the default by the margin. Offline, not a
    measurement: how the race's set and margin were chosen on the sixth pass's rows."""
    import random
    print("\n| race: ranks | margin | noise | / best: geomean | P95 | max | / default: max | keys > 1.02x default (mean per draw) |")
    print("|---|---|---|---|---|---|---|---|")
    for nv in (1, 2, 3):
        for margin in (0.0, 0.02, 0.03):
            for noise in (0.0, 0.01, 0.02):
                w, d = [], []
                for draw in range(draws if noise else 1):
                    rnd = random.Random(draw)
                    for r in rows:
                        t = row_times(r)
                        pred = next((lab for role, lab, _ in r["times"] if role == "predicted"), "r0")
                        pred = "r0" if r["predicted_default"] else pred
                        s = list(dict.fromkeys(["r0", pred] + [f"r{i}" for i in range(1, nv + 1)]))
                        s = [c for c in s if c in t]
                        meas = {c: t[c] * math.exp(rnd.gauss(0, noise)) for c in s}
                        pick = min(s, key=meas.get)
                        if meas[pick] * (1 + margin) >= meas["r0"]:
                            pick = "r0"
                        w.append(t[pick] / min(t.values()))
                        d.append(t[pick] / t["r0"])
                n = draws if noise else 1
                print(f"| 1-{nv} | {margin:.2f} | {noise:.2f} | {gm(w):.4f} | {p95(w):.3f} | {max(w):.3f} "
                      f"| {max(d):.3f} | {sum(x > 1.02 for x in d) / n:.2f} |")


if __name__ == "__main__":
    main(sys.argv)
