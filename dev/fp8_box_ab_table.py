#!/usr/bin/env python3
"""The box probe's A/B (dev/fp8_box_final_device.sh's prefill/p<P>_bf16.txt, gemm_bench with
--twin): per shape, ktune's pick (one box per K-major operand) and its twins (the same config
with TMA_ABOX / TMA_BBOX = 64: 64-row boxes) in the same interleaved rounds of each process. Per
process: cuBLASLt best / pick (> 1: the pick faster) and each twin's time over the pick's (median
[interval] of the per-round ratios; > 1: the one-box pick faster); then the medians over the
processes and each twin's cuBLASLt best / twin (the process's lt/pick over its twin/pick).

  python3 dev/fp8_box_ab_table.py p1.txt p2.txt ...
"""
import os
import statistics as st
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fp8_ring_table import read as ring_read  # noqa: E402


def knobs(cfg):
    """The box knobs of a twin's config: 'A64+B64', 'A64', 'B64' (or the whole config)."""
    k = dict(kv.split("=") for kv in cfg.split(",") if "=" in kv)
    s = "+".join(n for n, v in (("A64", k.get("TMA_ABOX")), ("B64", k.get("TMA_BBOX"))) if v)
    return s or cfg


def read(path):
    return ring_read(path, knobs)


def cell(t):
    return "%.3f [%.3f, %.3f]" % t


def main(paths):
    runs = [read(p) for p in paths]
    shapes = sorted({s for r in runs for s in r})
    print("shape | variant | per process: median [interval] | median over processes")
    for s in shapes:
        ds = [r[s] for r in runs if s in r]
        best = [d["best"] for d in ds if "best" in d]
        if best:
            print("%s | lt best / pick (one box) | %s | %.3f" % (
                s, "  ".join(cell(b) for b in best), st.median(b[0] for b in best)))
        names = sorted({n for d in ds for n in d.get("twins", {})})
        for n in names:
            tw = [(d.get("best"), d["twins"][n]) for d in ds if n in d.get("twins", {})]
            rat = [t["ratio"] for _, t in tw if "ratio" in t]
            label = next((t["label"] for _, t in tw), n)
            if not rat:
                print("%s | %s / pick | no ratio (cut?)" % (s, label))
                continue
            lt = [b[0] / t["ratio"][0] for b, t in tw if b and "ratio" in t]
            print("%s | %s / pick | %s | %.4f%s" % (
                s, label, "  ".join(cell(r) for r in rat), st.median(r[0] for r in rat),
                "; lt best / %s %s (median %.3f)" % (label, " ".join("%.3f" % x for x in lt),
                                                     st.median(lt)) if lt else ""))


if __name__ == "__main__":
    main(sys.argv[1:])
