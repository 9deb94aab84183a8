"""A knob's A/B against each key's picks (dev/decode/device_sr.sh: DC_SR; device_st26.sh: DC_ST): per
shape and mode, each process's interleaved-round µs of every config (the key's picks without the
knob, the configs with it), and for each config with it X/ref per process against each pick (median
[range] over the processes, processes < 1), cuBLASLt's best and the read of the same rounds. TOKEN:
the knob as the short labels spell it (SR48, default; ST1).
   python3 dev/decode/sr_table.py OUT_DIR N_PROCESSES [TOKEN]"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2p_table import parse_log  # noqa: E402


def label(c):
    return (c[0].replace("DC_SR=", "SR").replace(" PF1", "") + ("" if c[1] == "base" else " " + c[1])).strip()


def main():
    out_dir, n = sys.argv[1], int(sys.argv[2])
    tok = sys.argv[3] if len(sys.argv) > 3 else "SR48"
    has = lambda c: tok in label(c).split()  # noqa: E731
    logs = [parse_log(os.path.join(out_dir, "bench%d.log" % p)) for p in range(1, n + 1)]
    keys = sorted({k for d in logs for k in d}, key=lambda k: (int(k[0].split("x")[1]), int(k[0].split("x")[0]), k[1]))
    for key in keys:
        rounds = [d.get(key, {}).get("rounds", {}) for d in logs]
        lt = [d[key].get("lt") for d in logs if key in d]
        rb = [d[key]["raw"].get("read_bound") for d in logs if key in d]
        cfgs = sorted({c for r in rounds for c in r}, key=lambda c: (has(c), c))
        refs = [c for c in cfgs if not has(c)]
        print("== %s %s  cuBLASLt best %s  read %s" % (key[0], key[1], "/".join("%.2f" % x for x in lt if x),
                                                      "/".join("%.2f" % x for x in rb if x)))
        for c in cfgs:
            v = [r.get(c) for r in rounds]
            print("  %-34s %s" % (label(c), "/".join("%.2f" % x if x else "-" for x in v)))
            if not has(c):
                continue
            for ref in refs:
                ratios = [x / y for x, y in zip(v, [r.get(ref) for r in rounds]) if x and y]
                if ratios:
                    print("      / %-30s %.3f [%.3f, %.3f] (%d of %d < 1)" % (
                        label(ref), statistics.median(ratios), min(ratios), max(ratios),
                        sum(x < 1 for x in ratios), len(ratios)))


if __name__ == "__main__":
    main()
