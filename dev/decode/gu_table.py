#!/usr/bin/env python3
"""The gate/up pair against the plain GEMM per key and mode, one column per gemm_bench process:
silu_mul/ktune (median of the per-round ratios, [interval]), the plain pick's kind and the pair's
kind, and both medians in us.   python3 dev/decode/gu_table.py OUT N   (OUT/bench1..N.log)"""
import re
import sys


def parse(path):
    rows, res = {}, {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return rows
    for ln in lines:
        m = re.match(r"RESULT gemm (\S+)/(\w+) (ktune|silu_mul) ([\d.]+)", ln)
        if m:
            res[(m[1], m[2], m[3])] = float(m[4])
        m = re.match(r"RATIO gemm (\S+)/(\w+) silu_mul/ktune ([\d.]+) ([\d.]+) ([\d.]+)", ln)
        if m:
            rows.setdefault((m[1], m[2]), {})["ratio"] = (float(m[3]), float(m[4]), float(m[5]))
    key = None
    for ln in lines:
        m = re.match(r"(NT_\S+)\s+(flush|rot)\s", ln)
        if m:
            key = (m[1], m[2])
            continue
        m = re.match(r"  ktune (\w+):.*?(?:; silu_mul (\w+):)?", ln)
        if key and m:
            r = rows.setdefault(key, {})
            r["pick"] = m[1]
            s = re.search(r"; silu_mul (\w+):", ln)
            r["gu"] = s[1] if s else "-"
            key = None
    for (name, mode, what), us in res.items():
        rows.setdefault((name, mode), {})[what] = us
    return rows


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    procs = [parse(f"{out}/bench{p}.log") for p in range(1, n + 1)]
    keys = sorted({k for pr in procs for k in pr if "ratio" in pr[k]},
                  key=lambda k: (tuple(int(x) for x in k[0][3:].split("x")), k[1]))
    print("| key | mode | plain pick | pair kind | silu_mul / plain per process [interval] | plain us | pair us |")
    print("|---|---|---|---|---|---|---|")
    for k in keys:
        cells = [pr.get(k, {}) for pr in procs]
        ratio = " / ".join("%.3f [%.3f,%.3f]" % c["ratio"] if "ratio" in c else "-" for c in cells)
        pick = "/".join(c.get("pick", "-") for c in cells)
        gu = "/".join(c.get("gu", "-") for c in cells)
        us = lambda w: " / ".join("%.2f" % c[w] if w in c else "-" for c in cells)
        print(f"| {k[0][3:]} | {k[1]} | {pick} | {gu} | {ratio} | {us('ktune')} | {us('silu_mul')} |")


main()
