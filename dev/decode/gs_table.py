#!/usr/bin/env python3
"""dev/decode/device_gs.sh's pinned processes (OUT/pin1..N.log, cycling gemm_bench_e, gemm_bench,
gemm_bench_i; or the binaries named after N, cycled in that order: device_pb.sh): per key and mode,
the pair over the plain GEMM of the same config (silu_mul/ktune, median of the per-round ratios
[interval]) per process, grouped by binary, and the medians in us.
   python3 dev/decode/gs_table.py OUT N [NAME...]"""
import re
import sys

NAMES = ("e: ex2+rcp", "t: tanh (tree)", "i: g+u probe")


def parse(path):
    rows = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return rows
    for ln in lines:
        m = re.match(r"RESULT gemm NT_(\S+)/(\w+) (ktune|silu_mul) ([\d.]+)", ln)
        if m:
            rows.setdefault((m[1], m[2]), {})[m[3]] = float(m[4])
        m = re.match(r"RATIO gemm NT_(\S+)/(\w+) silu_mul/ktune ([\d.]+) ([\d.]+) ([\d.]+)", ln)
        if m:
            rows.setdefault((m[1], m[2]), {})["ratio"] = (float(m[3]), float(m[4]), float(m[5]))
    return rows


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    names = tuple(sys.argv[3:]) or NAMES
    nb = len(names)
    procs = [parse(f"{out}/pin{p}.log") for p in range(1, n + 1)]
    keys = sorted({k for pr in procs for k in pr},
                  key=lambda k: (tuple(int(x) for x in k[0].split("x")), k[1]))
    tags = " / ".join(b.split(":")[0] for b in names)
    print("| key | mode | " + " | ".join(f"{b} pair/plain" for b in names) +
          f" | plain us {tags} | pair us {tags} |")
    print("|---|---|" + "---|" * (nb + 2))
    for k in keys:
        cells, plain, pair = [], [], []
        for b in range(nb):
            mine = [procs[p].get(k, {}) for p in range(b, n, nb)]
            cells.append(" / ".join("%.3f [%.3f,%.3f]" % c["ratio"] if "ratio" in c else "-" for c in mine))
            med = lambda w: sorted(c[w] for c in mine if w in c)
            pl, pa = med("ktune"), med("silu_mul")
            plain.append("%.2f" % pl[len(pl) // 2] if pl else "-")
            pair.append("%.2f" % pa[len(pa) // 2] if pa else "-")
        print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + f" | {' / '.join(plain)} | {' / '.join(pair)} |")


main()
