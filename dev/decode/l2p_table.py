"""The probe knobs' A/B (dev/decode/device_l2p.sh, device_skt.sh, device_run.sh, device_lanes.sh, device_spread.sh, device_c8.sh, device_small*.sh, device_tail.sh): per shape, mode and base config
(the config without the probe knobs DC_L2P, DC_AL2P, DC_SKT, DC_RUN, DC_LANES, DC_SPREAD, DC_C8, DC_WP, DC_PW), the median µs of each variant (the
probe knobs a config sets; "base" = none, the defaults) in each gemm_bench process's interleaved
rounds (the pick and its --twin configs, cuBLASLt's best in the same rounds) and in its pre-pass
("cand" lines, 10 launches each), and X/base per process (its median over the processes).
   python3 dev/decode/l2p_table.py OUT_DIR N_PROCESSES"""
import os
import re
import statistics
import sys

SHAPE = re.compile(r"(\d+x\d+x\d+)")


PROBE = re.compile(r"(DC_L2P|DC_AL2P|DC_SKT|DC_RUN|DC_LANES|DC_SPREAD|DC_KS|DC_C8|DC_WP|DC_PW|DC_XH|DC_ST|DC_TAIL|DC_EF|DC_BB)=(\d+),?")


def base_and_l2p(cfg):
    """(short base config, variant): the variant names the probe knobs set, e.g. "AL2P128 SKT1"."""
    variant = " ".join(m.group(1)[3:] + m.group(2) for m in PROBE.finditer(cfg)) or "base"
    base = PROBE.sub("", cfg).rstrip(",")
    for k, v in (("DC_WG=2,", ""), ("DC_WARPS=", "W"), ("DC_NT=", "NT"), ("DC_U=", "U"),
                 ("DC_DEPTH=", "D"), ("DC_GRID=", "G"), ("DC_PF=", "PF"), ("DC_XR=", "XR"),
                 (",", " ")):
        base = base.replace(k, v)
    return re.sub(r"DC_MT=\d+ ?", "", base).strip(), variant


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
          " X/base = median over processes of each process's X/base")
    for key in keys:
        dicts = [d.get(key, {}).get("rounds", {}) for d in logs] + [d.get(key, {}) for d in errs]
        bases = sorted({x[0] for d in dicts for x in d if isinstance(x, tuple)})
        lt_r = [d[key]["lt"] for d in logs if key in d and d[key].get("lt")]
        lt_p = [d[key]["lt"] for d in errs if key in d and "lt" in d[key]]
        print("== %s %s  cuBLASLt best: rounds %s | pre-pass %s" % (
            key[0], key[1], "/".join("%.2f" % x for x in lt_r), "/".join("%.2f" % x for x in lt_p)))
        for b in bases:
            variants = sorted({x[1] for d in dicts for x in d if isinstance(x, tuple) and x[0] == b},
                              key=lambda v: (v != "base", v))
            # the reference: "base" (no probe knob), else the variant with the fewest (a curated twin's)
            ref = "base" if "base" in variants else min(variants, key=lambda v: (len(v.split()), v))
            for src, data in (("rounds", [d.get(key, {}).get("rounds", {}) for d in logs]),
                              ("pre", [d.get(key, {}) for d in errs])):
                cells, rel = [], {}
                for var in variants:
                    v = [d.get((b, var)) for d in data]
                    cells.append("%s: %s" % (var, "/".join("%.2f" % x if x else "-" for x in v)))
                    ratios = [x / y for x, y in zip(v, [d.get((b, ref)) for d in data]) if x and y]
                    if var != ref and ratios:
                        rel[var] = ratios
                print("  %-26s %-6s %s  | %s" % (b, src, "  ".join(cells), "  ".join(
                    "%s/%s %.3f [%.3f, %.3f] (%d of %d < 1)" % (k, ref, statistics.median(v), min(v), max(v),
                                                                 sum(x < 1 for x in v), len(v))
                    for k, v in rel.items())))


if __name__ == "__main__":
    main()
