#!/usr/bin/env python3
"""Executed instructions of a kernel by SASS opcode, from ncu's source page (the SourceCounters
section's per-instruction "Instructions Executed", warp-level), and its hottest straight-line runs
(the loops: instructions executed equally often, in address order) with their opcode mix.

  ncu -i REP --page source --csv --print-source sass > src.csv; python3 dev/ncu_src_ops.py src.csv
"""
import collections
import csv
import sys


def rows_of(path):
    with open(path, newline="") as f:
        lines = [ln for ln in f.read().splitlines() if ln.strip()]
    hdr = next((k for k, ln in enumerate(lines) if '"Source"' in ln), None)
    if hdr is None:
        return []
    reader = list(csv.reader(lines[hdr:]))
    head = reader[0]
    src = head.index("Source")
    ex = next((k for k, h in enumerate(head) if h.startswith("Instructions Executed")), None)
    adr = next((k for k, h in enumerate(head) if h.lstrip("# ") == "Address"), None)
    if ex is None:
        print("no Instructions Executed column in:", ",".join(head)[:300])
        return []
    out = []
    for r in reader[1:]:
        if len(r) <= max(src, ex):
            continue
        try:
            n = float(r[ex] or 0)
        except ValueError:
            continue
        out.append((r[adr] if adr is not None else "", r[src].strip(), n))
    return out


def opcode(sass):
    tok = sass.split()
    if tok and tok[0].startswith("@"):
        tok = tok[1:]
    return tok[0].split(".")[0] if tok else "?"


def main(path):
    rows = rows_of(path)
    total = sum(n for _, _, n in rows) or 1.0
    ops = collections.Counter()
    for _, s, n in rows:
        ops[opcode(s)] += n
    print("executed instructions (warp level): %.4g" % total)
    print("  " + ", ".join("%s %.1f%%" % (o, 100 * n / total) for o, n in ops.most_common(24)))
    # Runs of consecutive instructions with the same count: the loop bodies, hottest first.
    runs, start = [], 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i][2] != rows[start][2]:
            if rows[start][2] > 0:
                runs.append((rows[start][2] * (i - start), start, i))
            start = i
    print("hottest runs (share of all executed; count per instruction; length; opcode mix):")
    for tot, a, b in sorted(runs, reverse=True)[:10]:
        mix = collections.Counter(opcode(rows[k][1]) for k in range(a, b))
        print("  %5.1f%%  x%-9.0f %3d instr at %s: %s" % (
            100 * tot / total, rows[a][2], b - a, rows[a][0],
            " ".join("%s %d" % kv for kv in mix.most_common(10))))


if __name__ == "__main__":
    for p in sys.argv[1:]:
        main(p)
