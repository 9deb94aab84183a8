#!/usr/bin/env python3
"""The gate/up pair's DC_EF A/B (dev/decode/device_gu_ef.sh): per key and mode, one line per gemm_bench
process: the pair with / without DC_EF in the same rounds (RATIO gtwin1/silu_mul, turned to EF/base),
and the pair over the plain GEMM: EF pair / EF plain, base pair / base plain, fastest pair / fastest
plain (medians of the rounds, us); then the medians over the processes and k of n (EF pair faster;
fastest pair / fastest plain <= 1.03).   python3 dev/decode/gu_ef_table.py OUT N"""
import re
import statistics
import sys


def parse(path):
    rows, last = {}, None
    try:
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return rows
    for ln in lines:
        m = re.match(r"^NT_(\S+)\s+(flush|rot)\s", ln)
        if m:
            last = (m[1], m[2])
            continue
        m = re.match(r"^\s+ktune decode:(.+?), best cuBLASLt", ln)
        if m and last:
            r = rows.setdefault(last, {})
            plain, _, pair = m[1].partition("; silu_mul decode:")
            r["cfg:ktune"], r["cfg:silu_mul"] = plain, pair
            last = None
            continue
        m = re.match(r"^TWIN gemm \S*?(\d+x\d+x\d+)/(flush|rot) (g?twin1) decode:(\S+)", ln)
        if m:
            rows.setdefault((m[1], m[2]), {})["cfg:" + m[3]] = m[4]
            continue
        m = re.match(r"^RESULT gemm \S*?(\d+x\d+x\d+)/(flush|rot) (\S+) ([\d.]+)", ln)
        if m:
            rows.setdefault((m[1], m[2]), {})["us:" + m[3]] = float(m[4])
            continue
        m = re.match(r"^RATIO gemm \S*?(\d+x\d+x\d+)/(flush|rot) gtwin1/silu_mul ([\d.]+) ([\d.]+) ([\d.]+)", ln)
        if m:
            rows.setdefault((m[1], m[2]), {})["gr"] = (float(m[3]), float(m[4]), float(m[5]))
    return rows


def cells(r):
    """EF pair / base pair [interval], EF pair / EF plain, base pair / base plain, best / best."""
    ef = lambda c: "DC_EF=1" in r.get("cfg:" + c, "")
    need = ("us:ktune", "us:twin1", "us:silu_mul", "us:gtwin1", "gr")
    if any(k not in r for k in need):
        return None
    g = r["gr"]
    e_over_b = g if ef("gtwin1") else (1 / g[0], 1 / g[2], 1 / g[1])
    plain = {ef("ktune"): r["us:ktune"], ef("twin1"): r["us:twin1"]}
    pair = {ef("silu_mul"): r["us:silu_mul"], ef("gtwin1"): r["us:gtwin1"]}
    if set(plain) != {True, False} or set(pair) != {True, False}:
        return None
    return (e_over_b, pair[True] / plain[True], pair[False] / plain[False],
            min(pair.values()) / min(plain.values()), min(plain.values()), min(pair.values()))


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    procs = [parse(f"{out}/bench{p}.log") for p in range(1, n + 1)]
    keys = sorted({k for pr in procs for k in pr}, key=lambda k: (tuple(int(x) for x in k[0].split("x")), k[1]))
    print("| key | mode | process | pair EF / base [interval] | EF pair / EF plain | base pair / base plain |"
          " best pair / best plain | plain us | pair us |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k in keys:
        cs = [cells(pr.get(k, {})) for pr in procs]
        for p, c in enumerate(cs, 1):
            if c:
                print(f"| {k[0]} | {k[1]} | {p} | {c[0][0]:.3f} [{c[0][1]:.3f}, {c[0][2]:.3f}] | {c[1]:.3f} |"
                      f" {c[2]:.3f} | {c[3]:.3f} | {c[4]:.2f} | {c[5]:.2f} |")
        ok = [c for c in cs if c]
        if ok:
            med = lambda i: statistics.median(c[i] for c in ok)
            print(f"| {k[0]} | {k[1]} | median of {len(ok)} | {statistics.median(c[0][0] for c in ok):.3f}"
                  f" ({sum(c[0][0] < 1 for c in ok)} of {len(ok)} < 1) | {med(1):.3f} | {med(2):.3f} |"
                  f" {med(3):.3f} ({sum(c[3] <= 1.03 for c in ok)} of {len(ok)} <= 1.03) | | |")


main()
