"""DC_CW's A/B (dev/decode/device_cw.sh): per shape and mode, each config's median µs in each
gemm_bench process's interleaved rounds (the pick and its --twin configs, the read bound and
cuBLASLt's best in the same rounds), X/ref per process (ref: the key's first config in KEYS, today's
pick) as median [range] (processes < 1), read/X and cuBLASLt best/X per process.
   python3 dev/decode/cw_table.py OUT_DIR N_PROCESSES KEYS_FILE"""
import os
import re
import statistics
import sys


def short(cfg):
    s = cfg.replace("DC_WG=2,", "")
    for k, v in (("DC_WARPS=", "W"), ("DC_NT=", "NT"), ("DC_U=", "U"), ("DC_DEPTH=", "D"), ("DC_GRID=", "G"),
                 ("DC_PF=", "PF"), ("DC_XR=", "XR"), ("DC_CW=", "CW"), (",", " ")):
        s = s.replace(k, v)
    return re.sub(r"DC_MT=\d+ ?", "", s).strip()


def canon(cfg):
    """A config string with its knobs sorted (gemm_bench prints them sorted)."""
    return ",".join(sorted(cfg.split(",")))


def parse_log(path):
    """(shape, mode) -> {config or 'read_bound'/'cublaslt_best': us}"""
    out, pick, twin = {}, {}, {}
    if not os.path.exists(path):
        return out
    raw = {}
    for line in open(path, errors="replace"):
        m = re.match(r"^NT_(\d+x\d+x\d+)/(flush|rot)/iter.*? decode:([^;\s]+)", line)
        if m:
            pick[(m.group(1), m.group(2))] = canon(m.group(3))
            continue
        m = re.match(r"^TWIN gemm \S*?(\d+x\d+x\d+)/(flush|rot) (twin\d+) decode:(\S+)", line)
        if m:
            twin[(m.group(1), m.group(2), m.group(3))] = canon(m.group(4))
            continue
        m = re.match(r"^RESULT gemm \S*?(\d+x\d+x\d+)/(flush|rot) (\S+) ([\d.]+)", line)
        if m:
            raw.setdefault((m.group(1), m.group(2)), {})[m.group(3)] = float(m.group(4))
    for key, d in raw.items():
        o = out.setdefault(key, {})
        for name, us in d.items():
            cfg = pick.get(key) if name == "ktune" else twin.get((key[0], key[1], name))
            if cfg:
                o[cfg] = us
            elif name in ("read_bound", "cublaslt_best"):
                o[name] = us
    return out


def fmt(v):
    return "%.3f [%.3f, %.3f] (%d of %d < 1)" % (statistics.median(v), min(v), max(v), sum(x < 1 for x in v), len(v))


def main():
    out_dir, n, keys_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    logs = [parse_log(os.path.join(out_dir, "bench%d.log" % p)) for p in range(1, n + 1)]
    print("X/ref per process (ref: the key's first config), µs p1/p2/...; read/X and cuBLASLt best/X per process")
    for line in open(keys_file):
        parts = line.strip().split(":")
        if len(parts) < 2:
            continue
        shape, cfgs = parts[0], [canon(c) for c in parts[1:]]
        for mode in ("flush", "rot"):
            ds = [d.get((shape, mode), {}) for d in logs]
            rd = [d.get("read_bound") for d in ds]
            lt = [d.get("cublaslt_best") for d in ds]
            print("== %s %s  read %s  cuBLASLt best %s" % (shape, mode, "/".join("%.2f" % x if x else "-" for x in rd),
                                                        "/".join("%.2f" % x if x else "-" for x in lt)))
            ref = [d.get(cfgs[0]) for d in ds]
            for c in cfgs:
                v = [d.get(c) for d in ds]
                rel = [x / y for x, y in zip(v, ref) if x and y]
                rb = ["%.2f" % (r / x) for r, x in zip(rd, v) if r and x]
                lb = ["%.2f" % (l / x) for l, x in zip(lt, v) if l and x]
                print("  %-34s %s  X/ref %s  read/X %s  lt/X %s" % (
                    short(c), "/".join("%.2f" % x if x else "-" for x in v), fmt(rel) if rel and c != cfgs[0] else "-",
                    "/".join(rb), "/".join(lb)))


if __name__ == "__main__":
    main()
