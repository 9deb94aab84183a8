#!/usr/bin/env python3
"""Offline check of prediction rules on a held-out run (issue 35): which config each rule would run
on every held-out key, and how that config did in the key's own interleaved re-timing (the rows'
per-candidate times: the default r0, cuBLASLt ranks r1-r3, the neighbours' JIT configs). A rule's
pick that the row did not time counts as the default (the rule could not be judged there: counted
in "untimed").
  python3 dev/shape_rule_check.py heldout.jsonl[.gz] [heldout_db.json.gz]
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

MARGIN, NEAR_BEST = 0.02, 0.97


def gm(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def p95(v):
    v = sorted(v)
    return v[min(len(v) - 1, math.ceil(0.95 * len(v)) - 1)]


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
    db = db_points(argv[2]) if len(argv) > 2 else None
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


if __name__ == "__main__":
    main(sys.argv)
