#!/usr/bin/env python3
"""Offline check of the wide-tile rule (issue 35, autotune/predict.h wideTilePick) on held-out rows:
every key's bare prediction as the library makes it (the database rules replayed with
dev/shape_predict_port.py on the training database, then, where they keep the default, the
wide-tile pick over the row's cuBLASLt ranks: tiles and split-K counts read off the ids, the rows'
device's 132 SMs), scored on the row's own interleaved re-timing.
  python3 dev/shape_tile_check.py [rows.jsonl.gz ...]   (default: seeds 9, 10, 11 and 12)
  --db heldout_db.json.gz   the training database (default: seed 9's, every set's since then)
  --rotate                  the threshold choice: each seed's from the others (the grid below)
  --deep                    the rotation's grid also looks past the first wide rank
  --recorded                rows recorded with the rule in the library (seed 12 on): every key whose
                            recorded bare prediction differs from the replay is listed
Not a measurement: a replay of recorded times."""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import shape_predict_port as P  # noqa: E402
from shape_stats import gm, p95  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "bench", "data")
# The twelfth pass's rule (M >= 192, no padding slack, no grid condition), for comparison.
PASS12 = dict(m0=192, slack_pct=0, fill=0)


def load(path):
    return [r for r in (json.loads(x) for x in gzip.open(path, "rt") if x.strip()) if not r.get("error")]


def times(r):
    return {lab: ms for _, lab, ms in r["times"]}


def recorded_bare(r):
    roles = {}
    for role, lab, _ in r["times"]:
        roles.setdefault(role, lab)
    return roles.get("unraced", roles.get("predicted"))


_DB = {}


def pick(r, idx, **variant):
    """The bare prediction's label: the database rules, else the wide-tile variant (keyword
    arguments of P.wide_tile_pick; none: the library's rule) over the row's ranks."""
    key = (id(idx), r["m"], r["n"], r["k"])
    if key not in _DB:
        _DB[key] = P.predict(idx, P.key_of(r["m"], r["n"], r["k"]))[0]
    if _DB[key] is not None:
        return "jit:" + _DB[key]
    return f"r{P.wide_tile_pick(r['m'], r['n'], P.SMS, P.row_tiles(r), **variant)}"


def score(rows, label_of):
    """(geomean, P95, max, keys > 1.10, max / default, keys > 1.02x the default, rank picks)."""
    w, d, fired = [], [], 0
    for r in rows:
        t = times(r)
        lab = label_of(r)
        fired += lab.startswith("r") and lab != "r0"
        w.append(t[lab] / min(t.values()))
        d.append(t[lab] / t["r0"])
    return gm(w), p95(w), max(w), sum(x > 1.10 for x in w), max(d), sum(x > 1.02 for x in d), fired


def line(name, s):
    return (f"| {name} | {s[0]:.4f} | {s[1]:.3f} | {s[2]:.3f} | {s[3]} | {s[4]:.3f} | {s[5]} | {s[6]} |")


def meets(s):
    return s[0] <= 1.03 and s[1] <= 1.10 and s[5] == 0


def rotate(sets, idx, deep):
    """Each set's thresholds from the others, by two criteria among the variants that meet the
    targets on every other set: (a) the fewest rank picks there, then the lowest worst P95 (the
    twelfth pass's); (b) the lowest worst P95 there, then the fewest picks (this pass's)."""
    grid = [dict(m0=m0, slack_pct=sl, fill=fl, deep=dp) for m0 in (64, 96, 128, 150, 192, 256)
            for sl in (0, 2, 5, 10, 1000) for fl in (0, 1 / 2, 3 / 4, 7 / 8, 1) for dp in ((False, True) if deep else (False,))]
    res = [{n: score(rs, lambda r, g=g: pick(r, idx, **g)) for n, rs in sets.items()} for g in grid]
    show = lambda g: f"M0 {g['m0']}, slack {g['slack_pct']}%, fill {g['fill']:.3g}" + (", deep" if g["deep"] else "")  # noqa
    print("\nThresholds from the other sets (variants meeting geomean <= 1.03, P95 <= 1.10 and no key "
          "> 1.02x the default on all of them; (a) fewest picks, (b) lowest worst P95 first):")
    print("| held out | criterion | chosen | tied with | held out: geomean | P95 | / default max | keys > 1.02x |")
    print("|---|---|---|---|---|---|---|---|")
    for held in sets:
        train = [n for n in sets if n != held]
        ok = [i for i in range(len(grid)) if all(meets(res[i][n]) for n in train)]
        picks = lambda i: sum(res[i][n][6] for n in train)  # noqa: E731
        worst = lambda i: round(max(res[i][n][1] for n in train), 4)  # noqa: E731
        for name, key in (("(a)", lambda i: (picks(i), worst(i))), ("(b)", lambda i: (worst(i), picks(i)))):
            if not ok:
                print(f"| {held} | {name} | none meets the targets on the others | | | | | |")
                continue
            best = min(ok, key=key)
            ties = "; ".join(show(grid[i]) for i in ok if key(i) == key(best) and i != best)
            h = res[best][held]
            print(f"| {held} | {name} | {show(grid[best])} | {ties or '-'} | {h[0]:.4f} | {h[1]:.3f} | {h[4]:.3f} | {h[5]} |")


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    db = argv[argv.index("--db") + 1] if "--db" in argv else os.path.join(DATA, "heldout_seed9", "heldout_db.json.gz")
    args = [a for a in args if a != db]
    paths = args or [os.path.join(DATA, f"heldout_seed{s}", "heldout.jsonl.gz") for s in (9, 10, 11, 12)]
    idx = P.index(json.load(gzip.open(db)), "finalists")
    sets = {os.path.basename(os.path.dirname(p)) or p: load(p) for p in paths}
    print("| set, bare prediction | / best: geomean | P95 | max | keys > 1.10 | / default: max | keys > 1.02x | rank picks |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rs in sets.items():
        print(line(f"{name}, database rules only", score(rs, lambda r: pick(r, idx, m0=1 << 62))))
        print(line(f"{name}, + the twelfth pass's rule", score(rs, lambda r: pick(r, idx, **PASS12))))
        print(line(f"{name}, + wide-tile rule", score(rs, lambda r: pick(r, idx))))
    for name, rs in sets.items():
        for r in rs:
            lab, rec = pick(r, idx), recorded_bare(r)
            t = times(r)
            if lab != "r0" and lab.startswith("r"):
                print(f"  {name} {r['m']}x{r['n']}x{r['k']}: {lab} {t[lab] / t['r0']:.3f} of the default, "
                      f"{t[lab] / min(t.values()):.3f} of the best (the default {t['r0'] / min(t.values()):.3f})")
            if "--recorded" in argv and rec != lab:
                print(f"  {name} {r['m']}x{r['n']}x{r['k']}: recorded {rec}, replay {lab}")
    if "--rotate" in argv:
        rotate(sets, idx, "--deep" in argv)


if __name__ == "__main__":
    main(sys.argv)
