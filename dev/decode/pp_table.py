"""The persistent pairs' A/B (dev/decode/device_pp.sh): per shape and mode, each config's median µs
in each gemm_bench process's interleaved rounds (the pick and its --twin configs beside cuBLASLt's
best and the weight read), X/ref (ref: the key's fastest config without DC_GRID = 9, by the median
over the processes; the median over the processes of each process's ratio), cuBLASLt best / X and
read / X per process.   python3 dev/decode/pp_table.py OUT_DIR N_PROCESSES"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2p_table import parse_err, parse_log  # noqa: E402


def fmt(v):
    return "/".join("%.2f" % x if x else "-" for x in v)


def main():
    out_dir, n = sys.argv[1], int(sys.argv[2])
    logs = [parse_log(os.path.join(out_dir, "bench%d.log" % p)) for p in range(1, n + 1)]
    errs = [parse_err(os.path.join(out_dir, "bench%d.err" % p)) for p in range(1, n + 1)]
    keys = sorted({k for d in logs for k in d}, key=lambda k: (int(k[0].split("x")[1]), k[0], k[1]))
    print("rounds: µs medians per process p1/p2/..; X/ref and lt/X: median over processes [range]")
    for key in keys:
        rounds = [d.get(key, {}).get("rounds", {}) for d in logs]
        raw = [d.get(key, {}).get("raw", {}) for d in logs]
        lt = [r.get("cublaslt_best") for r in raw]
        rd = [min([v for k, v in r.items() if k.startswith("read")] or [0]) or None for r in raw]
        cfgs = sorted({c[0] for r in rounds for c in r})
        med = {c: statistics.median([r[(c, "base")] for r in rounds if (c, "base") in r]) for c in cfgs}
        plain = [c for c in cfgs if " G9" not in c + " "]
        ref = min(plain, key=lambda c: med[c]) if plain else None
        print("== %s %s  cuBLASLt best %s  read %s  ref %s" % (key[0], key[1], fmt(lt), fmt(rd), ref))
        for c in sorted(cfgs, key=lambda c: med[c]):
            v = [r.get((c, "base")) for r in rounds]
            cells = []
            for name, num, den in (("X/ref", v, [r.get((ref, "base")) for r in rounds]), ("lt/X", lt, v),
                                   ("read/X", rd, v)):
                q = [a / b for a, b in zip(num, den) if a and b]
                if q:
                    cells.append("%s %.3f [%.3f,%.3f]" % (name, statistics.median(q), min(q), max(q)))
            pre = [e.get(key, {}).get((c, "base")) for e in errs]
            print("  %-34s %s  pre %s  %s" % (c, fmt(v), fmt(pre), "  ".join(cells)))


if __name__ == "__main__":
    main()
