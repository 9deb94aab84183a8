#!/usr/bin/env python3
"""Offline check of the wide-tile rule (issue 35, autotune/predict.h wideTilePick) on held-out rows:
every key's bare prediction as the library makes it (the database rules replayed with
dev/shape_predict_port.py on the training database, then, where they keep the default, the
wide-tile pick over the row's cuBLASLt ranks), scored on the row's own interleaved re-timing.
  python3 dev/shape_tile_check.py [rows.jsonl.gz ...]   (default: seeds 9, 10 and 11)
  --db heldout_db.json.gz   the training database (default: seed 9's, every set's since then)
  --rotate                  the threshold choice: each seed's from the other two (the grid below)
  --recorded                rows recorded with the rule in the library (seed 12 on): every key whose
                            recorded bare prediction differs from the replay is listed Not a measurement: a replay of recorded times."""
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import shape_predict_port as P  # noqa: E402
from shape_stats import gm, p95  # noqa: E402

DATA = os.path.join(os.path.dirname(__file__), "..", "bench", "data")


def load(path):
    return [r for r in (json.loads(x) for x in gzip.open(path, "rt") if x.strip()) if not r.get("error")]


def times(r):
    return {lab: ms for _, lab, ms in r["times"]}


def recorded_bare(r):
    roles = {}
    for role, lab, _ in r["times"]:
        roles.setdefault(role, lab)
    return roles.get("unraced", roles.get("predicted"))


def pick(r, idx, m0=P.WIDE_MIN_ROWS, slack=0.0, deep=False):
    """The bare prediction's label: the database rules, else the wide-tile variant (m0, slack, deep:
    search past the first wide rank) over the row's ranks; the library's rule is the default args."""
    c, _ = P.predict(idx, P.key_of(r["m"], r["n"], r["k"]))
    if c is not None:
        return "jit:" + c
    tiles = P.row_tiles(r)
    if not tiles or r["m"] < m0 or not 0 < tiles[0][1] < P.WIDE_COLS:
        return "r0"
    pad = lambda rows: -(-r["m"] // rows) * rows  # noqa: E731
    for i in range(1, min(len(tiles), P.RACE_VENDOR + 1)):
        rows, cols = tiles[i]
        if rows > 0 and cols >= P.WIDE_COLS:
            if pad(rows) <= pad(tiles[0][0]) * (1 + slack):
                return f"r{i}"
            if not deep:
                break
    return "r0"


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


def rotate(sets, idx):
    grid = [(m0, sl, dp) for m0 in (64, 96, 128, 150, 192, 256) for sl in (0, 0.02, 0.05, 0.1, 9)
            for dp in (False, True)]
    res = {g: {n: score(rs, lambda r, g=g: pick(r, idx, *g)) for n, rs in sets.items()} for g in grid}
    print("\nThresholds from the other sets (the fewest rank picks among the variants that meet "
          "geomean <= 1.03, P95 <= 1.10 and no key > 1.02x the default on both):")
    print("| held out | chosen (M0, slack, past the first wide rank) | geomean | P95 | / default max | keys > 1.02x |")
    print("|---|---|---|---|---|---|")
    for held in sets:
        train = [n for n in sets if n != held]
        ok = [g for g in grid if all(res[g][n][0] <= 1.03 and res[g][n][1] <= 1.10 and res[g][n][5] == 0
                                     for n in train)]
        ok.sort(key=lambda g: (sum(res[g][n][6] for n in train), max(res[g][n][1] for n in train)))
        if not ok:
            print(f"| {held} | none meets the targets on the others | | | | |")
            continue
        h = res[ok[0]][held]
        print(f"| {held} | {ok[0]} | {h[0]:.4f} | {h[1]:.3f} | {h[4]:.3f} | {h[5]} |")


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    db = argv[argv.index("--db") + 1] if "--db" in argv else os.path.join(DATA, "heldout_seed9", "heldout_db.json.gz")
    args = [a for a in args if a != db]
    paths = args or [os.path.join(DATA, f"heldout_seed{s}", "heldout.jsonl.gz") for s in (9, 10, 11)]
    idx = P.index(json.load(gzip.open(db)), "finalists")
    sets = {os.path.basename(os.path.dirname(p)) or p: load(p) for p in paths}
    print("| set, bare prediction | / best: geomean | P95 | max | keys > 1.10 | / default: max | keys > 1.02x | rank picks |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rs in sets.items():
        print(line(f"{name}, database rules only", score(rs, lambda r: pick(r, idx, m0=1 << 62))))
        print(line(f"{name}, + wide-tile rule", score(rs, lambda r: pick(r, idx))))
    for name, rs in sets.items():
        for r in rs:
            lab, rec = pick(r, idx), recorded_bare(r)
            t = times(r)
            if lab.startswith("r") and lab != "r0":
                print(f"  {name} {r['m']}x{r['n']}x{r['k']}: {lab} {t[lab] / t['r0']:.3f} of the default, "
                      f"{t[lab] / min(t.values()):.3f} of the best (the default {t['r0'] / min(t.values()):.3f})")
            if "--recorded" in argv and rec != lab:
                print(f"  {name} {r['m']}x{r['n']}x{r['k']}: recorded {rec}, replay {lab}")
    if "--rotate" in argv:
        rotate(sets, idx)


if __name__ == "__main__":
    main(sys.argv)
