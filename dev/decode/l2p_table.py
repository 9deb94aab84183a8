"""The DC_L2P A/B (dev/decode/device_l2p.sh): per shape, mode and base config (the config without
DC_L2P), the median µs of each weight-map L2 promotion (256 = the default, absent from the config)
in each gemm_bench process's interleaved rounds (the pick and its --twin configs, cuBLASLt's best in
the same rounds) and in its pre-pass ("cand" lines, 10 launches each), and X/256 per process.
   python3 dev/decode/l2p_table.py OUT_DIR N_PROCESSES"""
import os
import re
import statistics
import sys

SHAPE = re.compile(r"(\d+x\d+x\d+)")


def base_and_l2p(cfg):
    m = re.search(r"DC_L2P=(\d+),?", cfg)
    l2p = int(m.group(1)) if m else 256
    base = re.sub(r"DC_L2P=\d+,?", "", cfg).rstrip(",")
    for k, v in (("DC_WG=2,", ""), ("DC_WARPS=", "W"), ("DC_NT=", "NT"), ("DC_U=", "U"),
                 ("DC_DEPTH=", "D"), ("DC_GRID=", "G"), ("DC_PF=", "PF"), ("DC_XR=", "XR"),
                 (",", " ")):
        base = base.replace(k, v)
    return re.sub(r"DC_MT=\d+ ?", "", base).strip(), l2p


def parse_log(path):
    """(shape, mode) -> {"rounds": {(base, l2p): us}, "lt": us}"""
    out, pick, twin, last = {}, {}, {}, None
    if not os.path.exists(path):
        return out
    for line in open(path, errors="replace"):
        m = re.match(r"^NT_(\S+)\s+(flush|rot)\s", line)
        if m:
            last = (m.group(1), m.group(2))
            continue
        m = re.match(r"^\s+ktune decode:([^;\s]+)", line)
        if m and last:
            pick[last] = m.group(1)
            continue
        m = re.match(r"^TWIN gemm \S*?(\d+x\d+x\d+)/(flush|rot) (twin\d+) decode:(\S+)", line)
        if m:
            twin[(m.group(1), m.group(2), m.group(3))] = m.group(4)
            continue
        m = re.match(r"^RESULT gemm \S*?(\d+x\d+x\d+)/(flush|rot) (\S+) ([\d.]+)", line)
        if m:
            out.setdefault((m.group(1), m.group(2)), {"rounds": {}, "raw": {}})["raw"][m.group(3)] = float(m.group(4))
    for key, d in out.items():
        for name, us in d["raw"].items():
            cfg = pick.get(key) if name == "ktune" else twin.get((key[0], key[1], name))
            if cfg:
                d["rounds"][base_and_l2p(cfg)] = us
        d["lt"] = d["raw"].get("cublaslt_best")
    return out


def parse_err(path):
    """(shape, mode) -> {(base, l2p): us} from the pre-pass's plain decode lines; cuBLASLt's best."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path, errors="replace"):
        f = line.split()
        if len(f) < 6 or f[0] != "cand" or f[4] == "silu_mul":
            continue
        sh = SHAPE.search(f[1])
        if not sh:
            continue
        key = (sh.group(1), f[2])
        try:
            us = float(f[5])
        except ValueError:
            continue
        d = out.setdefault(key, {})
        if f[3] == "decode":
            d[base_and_l2p(f[4])] = us
        elif f[3] == "cublaslt" and us > 0:
            d["lt"] = min(us, d.get("lt", us))
    return out


def main():
    out_dir, n = sys.argv[1], int(sys.argv[2])
    logs = [parse_log(os.path.join(out_dir, "bench%d.log" % p)) for p in range(1, n + 1)]
    errs = [parse_err(os.path.join(out_dir, "bench%d.err" % p)) for p in range(1, n + 1)]
    keys = sorted({k for d in logs + errs for k in d}, key=lambda k: (int(k[0].split("x")[1]), k[1]))
    print("rounds (interleaved, pick + --twin, µs medians per process p1/p2/p3) and pre-pass (10 launches);"
          " X/256 = median over processes of each process's X/256")
    for key in keys:
        dicts = [d.get(key, {}).get("rounds", {}) for d in logs] + [d.get(key, {}) for d in errs]
        bases = sorted({x[0] for d in dicts for x in d if isinstance(x, tuple)})
        lt_r = [d[key]["lt"] for d in logs if key in d and d[key].get("lt")]
        lt_p = [d[key]["lt"] for d in errs if key in d and "lt" in d[key]]
        print("== %s %s  cuBLASLt best: rounds %s | pre-pass %s" % (
            key[0], key[1], "/".join("%.2f" % x for x in lt_r), "/".join("%.2f" % x for x in lt_p)))
        for b in bases:
            for src, data in (("rounds", [d.get(key, {}).get("rounds", {}) for d in logs]),
                              ("pre", [d.get(key, {}) for d in errs])):
                cells, rel = [], {}
                for l2p in (256, 128, 0):
                    v = [d.get((b, l2p)) for d in data]
                    cells.append("%d: %s" % (l2p, "/".join("%.2f" % x if x else "-" for x in v)))
                    ratios = [x / y for x, y in zip(v, [d.get((b, 256)) for d in data]) if x and y]
                    if l2p != 256 and ratios:
                        rel[l2p] = statistics.median(ratios)
                print("  %-26s %-6s %s  | %s" % (b, src, "  ".join(cells),
                                                 "  ".join("%d/256 %.3f" % (k, v) for k, v in rel.items())))


if __name__ == "__main__":
    main()
