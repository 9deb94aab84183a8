#!/usr/bin/env python3
"""Issue 32's decode table from dev/decode/device_table.sh's gemm_bench logs: one row per key (M x
N x K), both timings (read flush / rotation) in each cell. Ratios are per-round ratios (RATIO lines);
a cell gives the median of the processes' medians and, in brackets, the lowest and highest bound of
their intervals; "k of n" counts the process-modes whose median meets the target. µs cells: the
median of the processes' medians. Targets (issue 32, set for an H100): read / JIT >= 0.95 at M <= 16
and >= 0.92 at 32..128; cuBLASLt best / JIT >= 1.10 at N x K = 4096x4096 and 6144x4096, >= 1.04 at
the others; gate/up (silu_mul) / plain <= 1.03.
   python3 dev/decode/issue_table.py [--fit] [--summary] [--detail] LOG_GROUP [LOG_GROUP ...]
--fit: per M, the fixed cost and streaming rate fitted over the four N at K = 4096 (fit()).
LOG_GROUP: one process's logs, comma-separated (e.g. OUT/b1s.log,OUT/b1l.log)."""
import re
import statistics
import sys

RES = re.compile(r"RESULT gemm NT_(\S+)/(flush|rot) (\w+) ([\d.]+) ([\d.]+) ([\d.]+)")
RAT = re.compile(r"RATIO gemm NT_(\S+)/(flush|rot) (\w+)/ktune ([\d.]+) ([\d.]+) ([\d.]+)")
ROW = re.compile(r"NT_(\d+x\d+x\d+)\s+(flush|rot)\s")
PICK = re.compile(r"  ktune (\w+):(\S+?)(?:; silu_mul (\w+):(\S+?))?, best cuBLASLt")
MODES = ("flush", "rot")


def short(kind, cfg):
    """A config in a few letters: decode G<grid> W NT U D (XR, PF, FMA, the probe knobs), tma BN C S SK E, skinny."""
    kv = dict(x.split("=", 1) for x in cfg.split(",") if "=" in x)
    g = lambda k, d="": kv.get(k, d)
    if kind == "decode":
        s = f"G{g('DC_GRID')} W{g('DC_WARPS')} NT{g('DC_NT')} U{g('DC_U')} D{g('DC_DEPTH')}"
        s += f" XR{g('DC_XR')}" if g("DC_XR", "0") != "0" else ""
        s += f" PF{g('DC_PF')}" if g("DC_PF", "1") not in ("0", "1") else ""
        # The probe knobs of the curated twins (two consumer warpgroups, alternate stages, the
        # hand-over, the start path, the wgmmas in flight, the weights evict-first).
        s += "".join(f" {k[3:]}{g(k)}" for k in ("DC_CW", "DC_PP", "DC_XH", "DC_ST", "DC_WP", "DC_EF") if g(k))
        return ("decode FMA " if g("DC_WG") == "3" else "decode ") + s
    if kind == "tma":
        s = f"tma BN{g('BLOCK_N')} C{g('CONSUMERS')} S{g('NUM_STAGES')} SK{g('SPLIT_K')} E{g('EPI_TMA')}"
        s += f" CL{g('CLUSTER_M')}" if g("CLUSTER_M", "1") != "1" else ""
        return s + (" PP" if g("PINGPONG", "0") != "0" else "")
    if kind == "skinny":
        return f"skinny NT{g('SK_NT')} U{g('SK_U')} D{g('SK_DEPTH')} W{g('NUM_WARPS')} SK{g('SPLIT_K')}"
    return kind


def parse(paths):
    """One process: {(key, mode): {"us": {var: (med, lo, hi)}, "ratio": {...}, "pick", "gu"}}."""
    rows, cur = {}, None
    for path in paths:
        try:
            lines = open(path).read().splitlines()
        except OSError:
            continue
        for ln in lines:
            m = RES.match(ln)
            if m:
                rows.setdefault((m[1], m[2]), {}).setdefault("us", {})[m[3]] = tuple(map(float, m.groups()[3:]))
                continue
            m = RAT.match(ln)
            if m:
                rows.setdefault((m[1], m[2]), {}).setdefault("ratio", {})[m[3]] = tuple(map(float, m.groups()[3:]))
                continue
            m = ROW.match(ln)
            if m:
                cur = (m[1], m[2])
                continue
            m = PICK.match(ln)
            if m and cur:
                r = rows.setdefault(cur, {})
                r["pick"] = short(m[1], m[2])
                r["gu"] = short(m[3], m[4]) if m[3] else "-"
                cur = None
    return rows


def target_read(m):
    return 0.95 if m <= 16 else 0.92


def target_best(n, k):
    return 1.10 if (n, k) in ((4096, 4096), (6144, 4096)) else 1.04


def cell(procs, key, var, kind="ratio"):
    """(median of the process medians, lowest lo, highest hi, [medians]) or None."""
    xs = [p[key][kind][var] for p in procs if key in p and var in p[key].get(kind, {})]
    if not xs:
        return None
    return statistics.median(x[0] for x in xs), min(x[1] for x in xs), max(x[2] for x in xs), [x[0] for x in xs]


def fmt_ratio(c):
    return "-" if c is None else "%.3f [%.3f, %.3f]" % c[:3]


def met(procs, key_modes, var, ok):
    """How many process-modes' medians meet the target, of how many."""
    vals = [c for km in key_modes for c in (cell(procs, km, var) or (0, 0, 0, []))[3]]
    return sum(1 for v in vals if ok(v)), len(vals)


def key_order(key):
    m, n, k = (int(x) for x in key.split("x"))
    return ((n, k) != (4096, 4096), (n, k) != (6144, 4096), (n, k) != (14336, 4096), (n, k) != (4096, 14336), m)


def row(procs, key):
    m, n, k = (int(x) for x in key.split("x"))
    kms = [(key, md) for md in MODES]
    picks = []
    for p in procs:
        for md in MODES:
            x = p.get((key, md), {}).get("pick")
            if x and x not in picks:
                picks.append(x)
    us = lambda var: " / ".join("-" if cell(procs, km, var, "us") is None else "%.2f" % cell(procs, km, var, "us")[0]
                                for km in kms)
    rat = lambda var: " / ".join(fmt_ratio(cell(procs, km, var)) for km in kms)
    tr, tb = target_read(m), target_best(n, k)
    mr = met(procs, kms, "read_bound", lambda v: v >= tr)
    mb = met(procs, kms, "cublaslt_best", lambda v: v >= tb)
    mg = met(procs, kms, "silu_mul", lambda v: v <= 1.03)
    return (f"| {key} | {'; '.join(picks[:2])}{' (+%d)' % (len(picks) - 2) if len(picks) > 2 else ''} | "
            f"{us('ktune')} | {us('read_bound')} | {rat('read_bound')} | ≥ {tr:.2f}: {mr[0]} of {mr[1]} | "
            f"{us('cublaslt0')} | {us('cublaslt_best')} | {rat('cublaslt_best')} | ≥ {tb:.2f}: {mb[0]} of {mb[1]} | "
            f"{rat('silu_mul')} | {mg[0]} of {mg[1]} |")


def detail(procs, keys):
    print("| key | mode | JIT µs p1 / p2 / p3 | read / JIT per process | cuBLASLt best / JIT per process | "
          "gate/up / plain per process | picks (plain; pair) |")
    print("|---|---|---|---|---|---|---|")
    for key in keys:
        for md in MODES:
            rs = [p.get((key, md), {}) for p in procs]
            us = " / ".join("%.2f" % r["us"]["ktune"][0] if "ktune" in r.get("us", {}) else "-" for r in rs)
            rt = lambda var: " / ".join("%.3f [%.3f,%.3f]" % r["ratio"][var] if var in r.get("ratio", {}) else "-"
                                        for r in rs)
            pk = " / ".join("%s; %s" % (r.get("pick", "-"), r.get("gu", "-")) for r in rs)
            print(f"| {key} | {md} | {us} | {rt('read_bound')} | {rt('cublaslt_best')} | {rt('silu_mul')} | {pk} |")


def summary(procs, keys):
    """Per target: process-modes meeting it, of how many, over the keys it applies to."""
    groups = {}
    for key in keys:
        m, n, k = (int(x) for x in key.split("x"))
        kms = [(key, md) for md in MODES]
        tr, tb = target_read(m), target_best(n, k)
        for name, var, ok in ((f"read / JIT >= {tr:.2f} ({'M <= 16' if m <= 16 else 'M = 32..128'})", "read_bound",
                               lambda v, t=tr: v >= t),
                              (f"cuBLASLt best / JIT >= {tb:.2f} (N x K = {n}x{k}, M <= 16)" if m <= 16 else
                               f"cuBLASLt best / JIT >= {tb:.2f} (N x K = {n}x{k}, M = 32..128)", "cublaslt_best",
                               lambda v, t=tb: v >= t),
                              ("gate/up / plain <= 1.03", "silu_mul", lambda v: v <= 1.03)):
            got, of = met(procs, kms, var, ok)
            g = groups.setdefault(name, [0, 0, []])
            g[0] += got
            g[1] += of
            if got * 2 < of:
                g[2].append(key)
    for name in sorted(groups):
        got, of, miss = groups[name]
        print(f"- {name}: {got} of {of} process-modes; keys met in fewer than half: {len(miss)}"
              + (f" ({', '.join(miss)})" if 0 < len(miss) <= 12 else ""))


def fit(procs):
    """Per M and timing: t = a + MB / rate fitted (least squares) over N = 4096, 6144, 14336, 28672 at
    K = 4096 (the median µs of the processes), for the JIT pick, the read and cuBLASLt's best: a is
    the fixed cost (launch, start, end), rate the streaming rate in TB/s (its spread's drain in it)."""
    mbs = {n: n * 4096 * 2 / 1e6 for n in (4096, 6144, 14336, 28672)}
    print("| M | timing | JIT: fixed µs, TB/s | read: fixed µs, TB/s | cuBLASLt best: fixed µs, TB/s |")
    print("|---|---|---|---|---|")
    for m in (1, 2, 4, 8, 16, 32, 64, 128):
        for md in MODES:
            cells = []
            for var in ("ktune", "read_bound", "cublaslt_best"):
                pts = [(mb, cell(procs, (f"{m}x{n}x4096", md), var, "us")) for n, mb in mbs.items()]
                pts = [(x, c[0]) for x, c in pts if c]
                if len(pts) < 2:
                    cells.append("-")
                    continue
                mx, my = statistics.mean(x for x, _ in pts), statistics.mean(y for _, y in pts)
                b = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
                cells.append("%.2f, %.2f" % (my - b * mx, 1 / b))
            print(f"| {m} | {md} | " + " | ".join(cells) + " |")


def main():
    args = [a for a in sys.argv[1:] if a not in ("--detail", "--summary", "--fit")]
    if not args:
        sys.exit(__doc__)
    procs = [parse(g.split(",")) for g in args]
    keys = sorted({k for p in procs for (k, _) in p}, key=key_order)
    print("| key (MxNxK) | JIT pick (flush, rot; every process) | JIT µs flush / rot | read µs | read / JIT "
          "flush / rot | target met | cuBLASLt #0 µs | cuBLASLt best µs | cuBLASLt best / JIT flush / rot | "
          "target met | gate/up (silu_mul) / plain flush / rot | ≤ 1.03 met |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in keys:
        print(row(procs, key))
    if "--fit" in sys.argv:
        print()
        fit(procs)
    if "--summary" in sys.argv:
        print()
        summary(procs, keys)
    if "--detail" in sys.argv:
        print()
        detail(procs, keys)


if __name__ == "__main__":
    main()
