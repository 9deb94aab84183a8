#!/usr/bin/env python3
"""gemm_bench pre-pass lines (stderr: "cand <shape> <mode> <kind> [silu_mul] <config> <us>") -> an
--only list of the N fastest JIT configs per key, mode and variant (plain / silu_mul), as
CONFIG@MxNxK entries joined by ';' (cuBLASLt lines skipped). The later processes of
dev/decode/device_table.sh time only these, so their pre-pass is short; the pick of process 1
is among them.      python3 dev/decode/table_picks.py N FILE.err [FILE.err ...]"""
import sys


def picks(lines, top):
    by = {}  # (shape, mode, variant) -> [(us, config)]
    for line in lines:
        f = line.split()
        if len(f) < 6 or f[0] != "cand" or f[3] == "cublaslt":
            continue
        gated = f[4] == "silu_mul"
        cfg, us = (f[5], f[6]) if gated else (f[4], f[5])
        try:
            t = float(us)
        except ValueError:
            continue
        if t <= 0:
            continue
        shape = f[1].split("_")[-1]  # NT_16x4096x4096 -> 16x4096x4096
        by.setdefault((shape, f[2], gated), []).append((t, cfg))
    out = []
    for key in sorted(by):
        for _, cfg in sorted(by[key])[:top]:
            entry = f"{cfg}@{key[0]}"
            if entry not in out:
                out.append(entry)
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    lines = []
    for path in sys.argv[2:]:
        try:
            lines += open(path).read().splitlines()
        except OSError:
            pass
    print(";".join(picks(lines, int(sys.argv[1]))))


if __name__ == "__main__":
    main()
