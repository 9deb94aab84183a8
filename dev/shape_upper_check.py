#!/usr/bin/env python3
"""Offline checks of bare-prediction rules on held-out runs (issue 35, eighth pass), with the
training database as the tuned neighbours (its cuBLASLt candidates carry their algorithm ids):
  python3 dev/shape_upper_check.py DB.json.gz ROWS.jsonl.gz [ROWS.jsonl.gz ...]
  (bench/data/heldout_seed4/heldout_db.json.gz; bench/data/heldout_seed{4,5,6}/heldout.jsonl.gz)
Rules, each applied only where the shipped rule kept the default (the rows' bare prediction r0):
  upper EPS GAIN  a JIT config timed at the tuned M above within EPS of the fastest time at the
                  tuned M below, and faster than the default above by GAIN (autotune/predict.h:
                  the upper-bracket rule, EPS = kUpperSlack, GAIN = kDefaultMargin);
  algo MODE GAIN  a cuBLASLt algorithm by its id (not its rank): near-best (3%) and faster than the
                  default by GAIN at both bracketing tuned keys (both) or the nearest one (near).
A held-out row knows the id of its default and of its winner only, so an algorithm pick is scored
as the winner when it is the winner's id, else as a range: the fastest (opt) and the slowest
(pess) of the row's other ranks 1-3 and the default (the pick is assumed in the key's first 4).
Rows from the eighth pass on also hold every rank's id (vendor_ids) and are scored exactly.
"""
import gzip
import json
import math
import sys
from collections import defaultdict
from shape_stats import gm, p95  # noqa: E402 (dev/ is the script's own dir)


def algo_of(cfg):
    i = cfg.find("algo=")
    return cfg[i + 5:] if i >= 0 else None


def rank_of(cfg):
    for p in cfg.split(":"):
        if p.startswith("idx="):
            return int(p[4:])
    return None


def load_db(path):
    """(n, k) -> sorted [(m, fastest ms, default ms, {algo id: (rank, ms, ok)}, {jit: (ms, ok)})]."""
    d = json.load(gzip.open(path))
    out = defaultdict(list)
    for dev in d["devices"]:
        for key, e in dev["entries"].items():
            if e.get("predicted") or not e.get("winner"):
                continue
            f = dict(x.split("=", 1) for x in key.split(","))
            timed = [c for c in e["candidates"] if c["stats"]["runs"] > 0 and c["stats"]["median_ms"] > 0]
            fastest = min(c["stats"]["median_ms"] for c in timed if c["status"] == "ok")
            algos, jit, r0 = {}, {}, None
            for c in timed:
                ms, ok = c["stats"]["median_ms"], c["status"] == "ok"
                if c["source"] == "jit":
                    jit[c["config"]] = (ms, ok)
                elif algo_of(c["config"]):
                    algos[algo_of(c["config"])] = (rank_of(c["config"]), ms, ok)
                    r0 = ms if rank_of(c["config"]) == 0 else r0
            out[(int(f["N"]), int(f["K"]))].append((int(f["M"]), fastest, r0, algos, jit))
    for v in out.values():
        v.sort(key=lambda x: x[0])
    return out


def load_rows(path):
    rows = []
    for line in gzip.open(path):
        r = json.loads(line)
        if r.get("error") or not r.get("times"):
            continue
        t, roles = {}, {}
        for role, label, ms in r["times"]:
            t[label] = min(t.get(label, 1e30), ms)
            roles[role] = label
        w = r["winner"]
        ids = {lab: algo_of(c) for lab, c in r.get("vendor_ids", {}).items()}
        if r["predicted_default"] and "r0" not in ids:
            ids["r0"] = algo_of(r["predicted"])
        if algo_of(w):
            ids.setdefault("r%d" % rank_of(w), algo_of(w))
        rows.append(dict(m=r["m"], n=r["n"], k=r["k"], t=t, ids=ids, exact="vendor_ids" in r,
                         bare=roles.get("unraced", roles.get("predicted")), best=min(t.values())))
    return rows


def sides(db, r):
    v = db[(r["n"], r["k"])]
    lo = [x for x in v if x[0] < r["m"]]
    hi = [x for x in v if x[0] > r["m"]]
    return (lo[-1] if lo else None), (hi[0] if hi else None)


def upper(db, r, eps, gain):
    lo, hi = sides(db, r)
    if not lo or not hi:
        return None
    best = None
    for c, (ms, ok) in hi[4].items():
        if ok and ms <= (1 + eps) * lo[1] and ms * (1 + gain) <= hi[2] and (not best or ms < best[1]):
            best = (c, ms)
    return "jit:" + best[0] if best else None


def algo(db, r, mode, gain):
    lo, hi = sides(db, r)
    at = [s for s in (lo, hi) if s]
    if mode == "both" and len(at) < 2:
        return None
    if mode == "near" and at:
        at = [min(at, key=lambda s: abs(math.log2((1 + s[0]) / (1 + r["m"]))))]
    best, best_gain = None, 1 + gain
    for a in at[0][3] if at else []:
        g, ok = 0.0, True
        for (_, fastest, r0, algos, _) in at:
            rk, ms, good = algos.get(a, (None, 0, False))
            ok = ok and good and rk != 0 and fastest / ms >= 0.97 and ms * (1 + gain) <= r0
            g += math.log(r0 / ms) / len(at) if ok else 0
        if ok and math.exp(g) > best_gain:
            best, best_gain = a, math.exp(g)
    return best


def score(rows, pick):
    """(opt, pess) time lists of the rule `pick(row) -> label, algo id or None`."""
    opt, pess, fired, unknown = [], [], 0, 0
    for r in rows:
        t, base = r["t"], r["t"][r["bare"]]
        c = pick(r) if r["bare"] == "r0" else None
        lab = next((k for k, a in r["ids"].items() if a == c), c)
        if c is None or lab == "r0":
            opt.append(base), pess.append(base)
            continue
        fired += 1
        if lab in t:
            opt.append(t[lab]), pess.append(t[lab])
        elif lab.startswith("jit:") or r["exact"]:
            unknown += 1  # not timed at this key (or not in its first 4): counted as the default
            opt.append(base), pess.append(base)
        else:
            known = set(r["ids"])
            rest = [t[x] for x in ("r1", "r2", "r3") if x in t and x not in known] + [t["r0"]]
            opt.append(min(rest)), pess.append(max(rest))
            unknown += 1
    return opt, pess, fired, unknown


def line(rows, times):
    w = [x / r["best"] for x, r in zip(times, rows)]
    d = [x / r["t"]["r0"] for x, r in zip(times, rows)]
    return f"{gm(w):.4f} | {p95(w):.3f} | {max(d):.3f} | {sum(x > 1.02 for x in d)}"


def main(argv):
    db = load_db(argv[1])
    rules = [("the shipped rule (bare)", lambda r: None)]
    for eps in (0.0, 0.02, 0.05, 0.1):
        for gain in (0.0, 0.02):
            rules.append((f"upper slack {eps:.2f} gain {gain:.2f}", lambda r, e=eps, g=gain: upper(db, r, e, g)))
    for mode in ("both", "near"):
        for gain in (0.02, 0.05):
            rules.append((f"algorithm id, {mode}, gain {gain:.2f}", lambda r, m=mode, g=gain: algo(db, r, m, g)))
    print("| rows | rule | fired | not scored exactly | / best: geomean | P95 | / default: max | keys > 1.02x "
          "| (pessimistic) geomean | P95 | max | > 1.02x |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for path in argv[2:]:
        rows = load_rows(path)
        for name, pick in rules:
            opt, pess, fired, unknown = score(rows, pick)
            print(f"| {path.split('/')[-2]} | {name} | {fired} | {unknown} | {line(rows, opt)} | {line(rows, pess)} |")


if __name__ == "__main__":
    main(sys.argv)
