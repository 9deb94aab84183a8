"""DC_KS's A/B (dev/decode/device_ks.sh): per shape and mode, each process's interleaved-round µs
of the key's reference (the config without a probe knob: the current pick) and of every DC_KS
config, and X/ref per process with its median over the processes [range] (processes < 1).
   python3 dev/decode/ks_table.py OUT_DIR N_PROCESSES"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from l2p_table import parse_log  # noqa: E402


def main():
    out_dir, n = sys.argv[1], int(sys.argv[2])
    logs = [parse_log(os.path.join(out_dir, "bench%d.log" % p)) for p in range(1, n + 1)]
    keys = sorted({k for d in logs for k in d}, key=lambda k: (int(k[0].split("x")[0]), int(k[0].split("x")[1]), k[1]))
    for key in keys:
        rounds = [d.get(key, {}).get("rounds", {}) for d in logs]
        lt = [d[key].get("lt") for d in logs if key in d]
        cfgs = sorted({c for r in rounds for c in r}, key=lambda c: (c[1] != "base", c))
        refs = [c for c in cfgs if c[1] == "base"]
        print("== %s %s  cuBLASLt best %s" % (key[0], key[1], "/".join("%.2f" % x for x in lt if x)))
        for c in cfgs:
            v = [r.get(c) for r in rounds]
            line = "  %-28s %-5s %s" % (c[0], c[1], "/".join("%.2f" % x if x else "-" for x in v))
            if c[1] != "base" and refs:
                ratios = [x / y for x, y in zip(v, [r.get(refs[0]) for r in rounds]) if x and y]
                if ratios:
                    line += "  /ref %.3f [%.3f, %.3f] (%d of %d < 1)" % (
                        statistics.median(ratios), min(ratios), max(ratios), sum(x < 1 for x in ratios), len(ratios))
            print(line)


if __name__ == "__main__":
    main()
