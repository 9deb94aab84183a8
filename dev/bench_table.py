#!/usr/bin/env python3
"""Combines the RESULT / RATIO / DIFF / CLOCKS lines of repeated bench processes into one table.

Each process prints, per figure, a median over its interleaved rounds with a distribution-free
interval (bench/fair/fair_timing.h). Across processes this prints the median of the per-process
medians and the range [min, max] of those medians (the process-to-process spread), the mean
in-process interval half-width in percent, and the number of processes.

  python3 dev/bench_table.py LOG...        python3 dev/bench_table.py --self-test
"""
import re
import statistics
import sys
from collections import OrderedDict

NUM = r"([-\d.eE+]+)"
# "<KIND> <bench> <row> [<figure>] <median> <lo> <hi> <n>" (host_cost_bench has no figure column).
LINE = re.compile(r"^(RESULT|RATIO|DIFF) (\S+) (\S+)(?: (\S+))? %s %s %s (\d+)\b" % (NUM, NUM, NUM))
CLOCK = re.compile(r"sm (\d+) MHz, mem (\d+) MHz, ([\d.]+) W, (\d+) C")


def parse(lines):
    figs, clocks = OrderedDict(), []
    for ln in lines:
        m = LINE.match(ln)
        if m:
            kind, bench, row, var = m.group(1, 2, 3, 4)
            var = var or ""
            med, lo, hi, n = float(m.group(5)), float(m.group(6)), float(m.group(7)), int(m.group(8))
            figs.setdefault((kind, bench, row, var), []).append((med, lo, hi, n))
        elif ln.startswith("CLOCKS"):
            clocks += [tuple(float(x) for x in c) for c in CLOCK.findall(ln)]
    return figs, clocks


def table(figs, clocks):
    out = []
    head = "%-6s %-8s %-40s %-22s %11s %23s %7s %3s" % (
        "kind", "bench", "row", "figure", "median", "range over procs", "±in%", "n")
    out.append(head)
    for (kind, bench, row, var), v in figs.items():
        meds = [x[0] for x in v]
        half = [(x[2] - x[1]) / 2 / abs(x[0]) * 100 for x in v if x[0]]
        out.append("%-6s %-8s %-40s %-22s %11.4g %11.4g..%-10.4g %7.2f %3d" % (
            kind, bench, row[:40], var[:22], statistics.median(meds), min(meds), max(meds),
            statistics.mean(half) if half else 0.0, len(v)))
    if clocks:
        sm = [c[0] for c in clocks]
        pw = [c[2] for c in clocks]
        out.append("clocks over %d readings: SM %d..%d MHz, power %.0f..%.0f W, temp %d..%d C" % (
            len(clocks), min(sm), max(sm), min(pw), max(pw), min(c[3] for c in clocks),
            max(c[3] for c in clocks)))
    else:
        out.append("clocks: none read (NVML unavailable?)")
    return "\n".join(out)


def self_test():
    a = ["RATIO gemm NT_4096x4096x4096/flush cublaslt0/ktune 1.0100 1.0000 1.0200 15",
         "CLOCKS gemm x sm 1980 MHz, mem 2619 MHz, 300.0 W, 40 C | sm 1755 MHz, mem 2619 MHz, 650.5 W, 55 C"]
    b = ["RATIO gemm NT_4096x4096x4096/flush cublaslt0/ktune 0.9900 0.9800 1.0000 15", "junk"]
    c = ["RATIO gemm NT_4096x4096x4096/flush cublaslt0/ktune 1.0300 1.0200 1.0400 15",
         "RESULT hostcost raw 3400.0 3300.0 3500.0 30",
         "DIFF hostcost gemm_tma-raw_gemm_args 812.5 700.0 900.0 30   (target <= 2000 ns)"]
    figs, clocks = parse(a + b + c)
    v = figs[("RATIO", "gemm", "NT_4096x4096x4096/flush", "cublaslt0/ktune")]
    assert [x[0] for x in v] == [1.01, 0.99, 1.03], v
    assert figs[("RESULT", "hostcost", "raw", "")] == [(3400.0, 3300.0, 3500.0, 30)], figs
    assert figs[("DIFF", "hostcost", "gemm_tma-raw_gemm_args", "")][0][0] == 812.5, figs
    t = table(figs, clocks)
    assert "1.01" in t and "0.99..1.03" in t.replace(" ", ""), t
    assert "SM 1755..1980 MHz" in t and "power 300..650 W" in t, t
    print("self-test ok")


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    lines = []
    for path in argv[1:]:
        with open(path, errors="replace") as f:
            lines += f.read().splitlines()
    figs, clocks = parse(lines)
    print(table(figs, clocks))


if __name__ == "__main__":
    main(sys.argv)
