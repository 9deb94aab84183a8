#!/usr/bin/env python3
"""dev/fp8_order_device.sh's processes (<kind>_<P>.txt; by default alone_<P>.txt: 3000x5000x1000 NT
and NN only, list_<P>.txt: the same shapes after the list's large ones): per shape and kind of
process, each process's cuBLASLt best / ktune (median to 4 places, so a 0.9797 is not read as meeting
0.98, [min, max] over its rounds), cuBLASLt #0 / ktune and ktune's median µs; then the medians over
the processes.

  python3 dev/fp8_order_table.py DIR
"""
import glob
import os
import re
import statistics as st
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fp8_ring_table import read  # noqa: E402


def lt0(path):
    txt = open(path, errors="replace").read()
    return {s: float(m) for s, m in re.findall(
        r"^RATIO gemm (\S+)/flush cublaslt0/ktune ([\d.]+)", txt, re.M)}


def main(d):
    runs = {}  # (kind, process) -> (read(), lt0())
    for p in glob.glob(os.path.join(d, "*_*.txt")):
        m = re.search(r"/([a-z][a-z0-9]*)_(\d+)\.txt$", p)
        if m:
            runs[(m.group(1), int(m.group(2)))] = (read(p), lt0(p))
    kinds = sorted({k for k, _ in runs})
    print("shape | process kind | cuBLASLt best / ktune per process: median [min, max] | lt#0/ktune"
          " | ktune us | median of the medians")
    for shape in ("NT_3000x5000x1000", "NN_3000x5000x1000", "NT_1024x14336x4096", "NT_4096x6144x4096",
                  "NT_4096x4096x14336", "NT_2048x28672x8192"):
        for kind in kinds:
            ps = sorted(p for k, p in runs if k == kind)
            rows = [(p, runs[(kind, p)][0].get(shape, {}), runs[(kind, p)][1].get(shape)) for p in ps]
            rows = [r for r in rows if "best" in r[1]]
            if not rows:
                continue
            print("%s | %s | %s | %s | %s | %.4f" % (
                shape, kind, "  ".join("p%d %.4f [%.3f, %.3f]" % ((p,) + d["best"]) for p, d, _ in rows),
                " ".join("%.3f" % x for _, _, x in rows if x is not None),
                " ".join("%.1f" % d["us"] for _, d, _ in rows if "us" in d),
                st.median(d["best"][0] for _, d, _ in rows)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
