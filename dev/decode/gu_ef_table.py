#!/usr/bin/env python3
"""A probe knob's A/B on the plain GEMM and on the gate/up pair in the same gemm_bench rounds
(dev/decode/device_gu_ef.sh: --only and --twin list each config with and without the knob; the plain
side is the pick and its twinN, the pair side silu_mul and its gtwinN). Per key, mode, side and knob
(DC_EF, DC_BB): X/base per process (medians of the rounds; the rounds' own ratio interval where one of
the two is the side's pick), their median and k of n (X faster); then the fastest pair over the fastest
plain per process (the issue's gate/up <= 1.03).   python3 dev/decode/gu_ef_table.py OUT N"""
import re
import statistics
import sys

KNOBS = ("DC_EF=1", "DC_BB=1")


def strip(cfg, knob):
    return ",".join(x for x in cfg.split(",") if x != knob)


def short(cfg):
    d = dict(x.split("=") for x in cfg.split(",") if "=" in x)
    s = "G%s W%s NT%s U%s D%s XR%s" % tuple(d.get(k, "?") for k in
                                          ("DC_GRID", "DC_WARPS", "DC_NT", "DC_U", "DC_DEPTH", "DC_XR"))
    return s + "".join(" " + k[3:] + v for k, v in d.items() if k in ("DC_XH", "DC_ST", "DC_EF", "DC_BB", "DC_WP"))


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
            plain, _, pair = m[1].partition("; silu_mul decode:")
            r = rows.setdefault(last, {"cfg": {}, "us": {}, "ratio": {}})
            r["cfg"]["ktune"], r["cfg"]["silu_mul"] = plain, pair
            last = None
            continue
        m = re.match(r"^TWIN gemm \S*?(\d+x\d+x\d+)/(flush|rot) (g?twin\d+) decode:(\S+)", ln)
        if m:
            rows.setdefault((m[1], m[2]), {"cfg": {}, "us": {}, "ratio": {}})["cfg"][m[3]] = m[4]
            continue
        m = re.match(r"^RESULT gemm \S*?(\d+x\d+x\d+)/(flush|rot) (\S+) ([\d.]+)", ln)
        if m:
            rows.setdefault((m[1], m[2]), {"cfg": {}, "us": {}, "ratio": {}})["us"][m[3]] = float(m[4])
            continue
        m = re.match(r"^RATIO gemm \S*?(\d+x\d+x\d+)/(flush|rot) (g?twin\d+)/(ktune|silu_mul) ([\d.]+) ([\d.]+) ([\d.]+)", ln)
        if m:
            rows.setdefault((m[1], m[2]), {"cfg": {}, "us": {}, "ratio": {}})["ratio"][(m[3], m[4])] = \
                (float(m[5]), float(m[6]), float(m[7]))
    return rows


def sides(r):
    """{"plain"|"pair": {cfg: (name, us)}}"""
    out = {"plain": {}, "pair": {}}
    for name, cfg in r["cfg"].items():
        if not cfg or name not in r["us"]:
            continue
        side = "pair" if name == "silu_mul" or name.startswith("gtwin") else "plain"
        out[side][cfg] = (name, r["us"][name])
    return out


def compare(r, side, knob, cfg):
    """X/base for cfg (with knob) and its base: (ratio, interval or None)."""
    s = sides(r)[side]
    base = strip(cfg, knob)
    if cfg not in s or base not in s:
        return None
    (xn, xu), (bn, bu) = s[cfg], s[base]
    pick = "ktune" if side == "plain" else "silu_mul"
    iv = None
    if bn == pick and (xn, pick) in r["ratio"]:
        iv = r["ratio"][(xn, pick)]
    elif xn == pick and (bn, pick) in r["ratio"]:
        g = r["ratio"][(bn, pick)]
        iv = (1 / g[0], 1 / g[2], 1 / g[1])
    return (iv[0] if iv else xu / bu), iv


def main():
    out, n = sys.argv[1], int(sys.argv[2])
    procs = [parse(f"{out}/bench{p}.log") for p in range(1, n + 1)]
    keys = sorted({k for pr in procs for k in pr}, key=lambda k: (tuple(int(x) for x in k[0].split("x")), k[1]))
    print("| key | mode | side | knob | X (base: X without the knob) | X/base per process [rounds' interval] | median | X faster |")
    print("|---|---|---|---|---|---|---|---|")
    for k in keys:
        for side in ("plain", "pair"):
            cfgs = sorted({c for pr in procs if k in pr for c in sides(pr[k])[side]})
            for knob in KNOBS:
                for cfg in cfgs:
                    if knob not in cfg.split(","):
                        continue
                    got = [compare(pr[k], side, knob, cfg) if k in pr else None for pr in procs]
                    vals = [g for g in got if g]
                    if not vals:
                        continue
                    cell = " / ".join(("%.3f [%.3f, %.3f]" % g[1] if g[1] else "%.3f" % g[0]) if g else "-" for g in got)
                    print(f"| {k[0]} | {k[1]} | {side} | {knob[3:5]} | {short(cfg)} | {cell} | "
                          f"{statistics.median(v[0] for v in vals):.3f} | {sum(v[0] < 1 for v in vals)} of {len(vals)} |")
        best = []
        for pr in procs:
            if k not in pr:
                continue
            s = sides(pr[k])
            if s["plain"] and s["pair"]:
                best.append((min(u for _, u in s["pair"].values()) / min(u for _, u in s["plain"].values()),
                             min(u for _, u in s["plain"].values()), min(u for _, u in s["pair"].values())))
        if best:
            cell = " / ".join("%.3f (%.2f / %.2f us)" % b for b in best)
            print(f"| {k[0]} | {k[1]} | fastest pair / fastest plain | | | {cell} | "
                  f"{statistics.median(b[0] for b in best):.3f} | <= 1.03: {sum(b[0] <= 1.03 for b in best)} of {len(best)} |")


main()
