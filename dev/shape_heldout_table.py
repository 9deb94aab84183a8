#!/usr/bin/env python3
"""Table of a held-out run (bench/shape_heldout_bench --out rows.jsonl), per N x K and overall:
predicted / best of the reduced list (geomean, P95, max), predicted / default (max), default / best
(geomean), how many keys predicted a JIT config or a vendor rank, and how the vendor-rank
predictions did against the default. With --ranks R the "best" is recomputed over the JIT
candidates and the vendor ranks 0..R only (the earlier passes' lists had R = 3); rows without
per-candidate times (older runs) keep their recorded ratios.
  python3 dev/shape_heldout_table.py heldout.jsonl [--ranks 3]
Rows of a --race run (the default) also get the bare prediction's table (before the race), and with
--race-max-ms X the race replayed as if it ran only where the default took under X ms.
"""
import gzip
import json
import math
import sys
from shape_stats import gm, p95  # noqa: E402 (dev/ is the script's own dir)


def ratios(r, max_rank):
    """(predicted / best, predicted / default, default / best) of one row."""
    t = r.get("times") or []
    if not t:
        return r["vs_winner"], r["vs_default"], r["vs_winner"] / r["vs_default"]
    pred = next(ms for role, _, ms in t if role == "predicted")
    # The default: its own row, else the candidate labelled r0 (a race pick or a prediction equal
    # to the default is listed once, under its first role), else the prediction.
    dflt = next((ms for role, _, ms in t if role == "default"),
                next((ms for _, label, ms in t if label == "r0"), pred))
    keep = [ms for role, label, ms in t
            if max_rank is None or role == "predicted" or not label.startswith("r")
            or int(label[1:]) <= max_rank]
    best = min(keep)
    return pred / best, pred / dflt, dflt / best


def main(argv):
    path = argv[1]
    max_rank = int(argv[argv.index("--ranks") + 1]) if "--ranks" in argv else None
    src = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
    rows = [json.loads(x) for x in src if x.strip()]
    rows = [r for r in rows if not r.get("error")]
    groups = {}
    for r in rows:
        groups.setdefault(f'{r["n"]} x {r["k"]}', []).append(r)
    print("| N x K | keys | predicted / best: geomean | P95 | max | predicted / default: max "
          "| default / best: geomean | JIT predicted | rank predicted |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, rs in list(groups.items()) + [("all", rows)]:
        x = [ratios(r, max_rank) for r in rs]
        w, d, db = [a for a, _, _ in x], [b for _, b, _ in x], [c for _, _, c in x]
        jit = sum(1 for r in rs if not r["predicted_default"] and not r.get("predicted_rank"))
        rank = sum(1 for r in rs if r.get("predicted_rank"))
        print(f"| {name} | {len(rs)} | {gm(w):.3f} | {p95(w):.3f} | {max(w):.3f} | {max(d):.3f} "
              f"| {gm(db):.3f} | {jit} | {rank} |")
    raced = [r for r in rows if r.get("raced")]
    if raced:  # the race's pick is "predicted"; the bare prediction was re-timed beside it
        print("\nbare prediction (before the race), same rounds:")
        print("| N x K | keys | / best: geomean | P95 | max | / default: max | race changed the config |")
        print("|---|---|---|---|---|---|---|")
        rg = {}
        for r in raced:
            rg.setdefault(f'{r["n"]} x {r["k"]}', []).append(r)
        for name, rs in list(rg.items()) + [("all", raced)]:
            w = [r["unraced_vs_winner"] for r in rs]
            d = [r["unraced_vs_winner"] / ratios(r, max_rank)[2] for r in rs]
            changed = sum(1 for r in rs if any(role == "unraced" for role, _, _ in r["times"]))
            print(f"| {name} | {len(rs)} | {gm(w):.3f} | {p95(w):.3f} | {max(w):.3f} | {max(d):.3f} | {changed} |")
        if "--race-max-ms" in argv:  # replay predict::kRaceMaxMs on these rows (post hoc)
            lim = float(argv[argv.index("--race-max-ms") + 1])
            print(f"\nrace only where the default ran under {lim} ms (else the bare prediction), same rounds:")
            print("| N x K | keys | / best: geomean | P95 | max | / default: max | keys > 1.02x default |")
            print("|---|---|---|---|---|---|---|")
            for name, rs in list(rg.items()) + [("all", raced)]:
                w, d = [], []
                for r in rs:
                    pw, pd, dw = ratios(r, max_rank)
                    best_ms = min(ms for _, _, ms in r["times"])
                    r0 = dw * best_ms
                    if r0 > lim:
                        pw = r["unraced_vs_winner"]
                    w.append(pw)
                    d.append(pw / dw)
                print(f"| {name} | {len(rs)} | {gm(w):.3f} | {p95(w):.3f} | {max(w):.3f} | {max(d):.3f} "
                      f"| {sum(x > 1.02 for x in d)} |")
        ms = sorted(r["race_ms"] for r in raced)
        print(f"race wall time per key: median {ms[len(ms) // 2]:.1f} ms, max {ms[-1]:.1f} ms")
    for r in rows:
        if r.get("predicted_rank"):
            w, d, db = ratios(r, max_rank)
            lab = next((lb for role, lb, _ in r.get("times", []) if role == "predicted"), "?")
            print(f'rank prediction {r["m"]}x{r["n"]}x{r["k"]}: {lab} predicted/default {d:.3f} '
                  f"predicted/best {w:.3f} default/best {db:.3f} winner {r['winner'][:40]}")


if __name__ == "__main__":
    main(sys.argv)
