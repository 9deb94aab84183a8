"""An A/B of gemm_bench binaries in alternating processes (dev/decode/device_ring_pf.sh): per shape,
mode and config, each binary's median µs in each process round's interleaved rounds (the pick and its
--twin configs), X/ref per round (ref: the second binary named, the tree before the change; the
median over the rounds [range]), cuBLASLt's best / X and the weight read / X from the same process.
   python3 dev/decode/ab_table.py OUT_DIR N_ROUNDS BIN BIN...     (logs OUT_DIR/bench_BIN_P.log)"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2p_table import parse_log  # noqa: E402


def cell(name, q):
    q = [x for x in q if x]
    return "%s %.3f [%.3f,%.3f]" % (name, statistics.median(q), min(q), max(q)) if q else ""


def main():
    out_dir, n, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    ref_bin = bins[1] if len(bins) > 1 else bins[0]
    logs = {b: [parse_log(os.path.join(out_dir, "bench_%s_%d.log" % (b, p))) for p in range(1, n + 1)] for b in bins}
    keys = sorted({k for b in bins for d in logs[b] for k in d},
                  key=lambda k: (int(k[0].split("x")[0]), int(k[0].split("x")[1]), k[0], k[1]))
    print("µs: medians of each process's rounds, p1/p2/..; ratios: median over rounds [range]; ref = %s" % ref_bin)
    for key in keys:
        cfgs = sorted({c[0] for b in bins for d in logs[b] for c in d.get(key, {}).get("rounds", {})})
        print("== %s %s" % key)
        for c in cfgs:
            ref = [d.get(key, {}).get("rounds", {}).get((c, "base")) for d in logs[ref_bin]]
            for b in bins:
                v = [d.get(key, {}).get("rounds", {}).get((c, "base")) for d in logs[b]]
                lt = [d.get(key, {}).get("raw", {}).get("cublaslt_best") for d in logs[b]]
                rd = [min([x for k, x in d.get(key, {}).get("raw", {}).items() if k.startswith("read")] or [0]) or None
                      for d in logs[b]]
                cells = [cell("X/ref", [x / r for x, r in zip(v, ref) if x and r]),
                         cell("lt/X", [a / x for a, x in zip(lt, v) if a and x]),
                         cell("read/X", [a / x for a, x in zip(rd, v) if a and x])]
                print("  %-30s %-16s %s  %s" % (c, b.replace("gemm_bench", "tree") if b == "gemm_bench" else
                                                b.replace("gemm_bench_", ""),
                                                "/".join("%.2f" % x if x else "-" for x in v), "  ".join(cells)))


if __name__ == "__main__":
    main()
