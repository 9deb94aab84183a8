#!/usr/bin/env python3
"""Base build against this one in interleaved gemm_bench processes (dev/fp8_ring_device.sh's
ab_<build>_<pair>.txt): per shape, each process's cuBLASLt best / ktune (median [interval] over its
rounds) for both builds, the pair's time ratio new / base (< 1: this build faster), and the ratio
of the two cuBLASLt-normalised figures (each process's own cuBLASLt in its rounds: clock drift
between the processes cancels).

  python3 dev/fp8_ring_table.py ab_base_1.txt ab_new_1.txt ...
"""
import re
import statistics as st
import sys


def read(path, label=None):
    """shape -> {"us": ktune median, "best": (median, lo, hi), "twins": {name: {"label":
    label(config) (short() by default), "ratio": (median, lo, hi) of twin / pick}}}."""
    label = label or short
    out = {}
    txt = open(path, errors="replace").read()
    for shape, us in re.findall(r"^RESULT gemm (\S+)/flush ktune ([\d.]+)", txt, re.M):
        out.setdefault(shape, {})["us"] = float(us)
    for shape, m, lo, hi in re.findall(
            r"^RATIO gemm (\S+)/flush cublaslt_best/ktune ([\d.]+) ([\d.]+) ([\d.]+)", txt, re.M):
        out.setdefault(shape, {})["best"] = (float(m), float(lo), float(hi))
    for shape, name, cfg in re.findall(r"^TWIN gemm (\S+)/flush (twin\d+) tma:(\S+)", txt, re.M):
        out.setdefault(shape, {}).setdefault("twins", {})[name] = {"label": label(cfg)}
    for shape, name, m, lo, hi in re.findall(
            r"^RATIO gemm (\S+)/flush (twin\d+)/ktune ([\d.]+) ([\d.]+) ([\d.]+)", txt, re.M):
        out.setdefault(shape, {}).setdefault("twins", {}).setdefault(name, {"label": name})[
            "ratio"] = (float(m), float(lo), float(hi))
    return out


def short(cfg):
    """BLOCK_N, ping-pong, stages, split tail and cluster of a tma config, e.g. P176S4 or C256S4K2."""
    k = dict(kv.split("=") for kv in cfg.split(",") if "=" in kv)
    return "%s%s%sS%s%s%s" % ("P" if k.get("PINGPONG") == "1" else "C", k.get("BLOCK_N"),
                              "x2" if k.get("WG_M") == "2" else "", k.get("NUM_STAGES"),
                              "K" + k["SPLIT_K"] if k.get("SPLIT_K", "1") != "1" else "",
                              "CL" + k["CLUSTER_M"] if k.get("CLUSTER_M", "1") != "1" else "")


def main(paths):
    runs = {}  # (build, pair) -> read()
    for p in paths:
        m = re.search(r"ab_(base|new)_(\d+)\.txt$", p)
        if m:
            runs[(m.group(1), int(m.group(2)))] = read(p)
    pairs = sorted({p for _, p in runs})
    shapes = sorted({s for r in runs.values() for s in r})
    print("shape | build | cuBLASLt best / ktune per pair: median [interval] | ktune us")
    for s in shapes:
        tr, nr = [], []
        for b in ("base", "new"):
            cells, us = [], []
            for p in pairs:
                d = runs.get((b, p), {}).get(s, {})
                if "best" in d:
                    cells.append("%.3f [%.3f, %.3f]" % d["best"])
                if "us" in d:
                    us.append("%.1f" % d["us"])
            print("%s | %s | %s | %s" % (s, b, "  ".join(cells), " / ".join(us)))
        for p in pairs:
            bd, nd = runs.get(("base", p), {}).get(s, {}), runs.get(("new", p), {}).get(s, {})
            if "us" in bd and "us" in nd:
                tr.append(nd["us"] / bd["us"])
            if "best" in bd and "best" in nd:
                nr.append(nd["best"][0] / bd["best"][0])
        for b in ("base", "new"):
            for p in pairs:
                for name, v in sorted(runs.get((b, p), {}).get(s, {}).get("twins", {}).items()):
                    r = "%.3f [%.3f, %.3f]" % v["ratio"] if "ratio" in v else "?"
                    print("%s | %s p%d | %s / pick: %s" % (s, b, p, v["label"], r))
        if tr:
            print("%s | new/base time per pair %s (median %.4f); normalised (lt/ktune new / base) %s"
                  % (s, " ".join("%.4f" % x for x in tr), st.median(tr),
                     " ".join("%.4f" % x for x in nr)))


if __name__ == "__main__":
    main(sys.argv[1:])
