"""gemm_bench's pre-pass lines (stderr, "cand <shape> <mode> <kind> [silu_mul] <config> <us>") ->
the N fastest per shape, mode and variant (plain / silu_mul), knobs abbreviated.
   python3 dev/decode/prepass_top.py [N] < bench1.err"""
import re
import sys

top = int(sys.argv[1]) if len(sys.argv) > 1 else 6
rows = {}
for line in sys.stdin:
    f = line.split()
    if len(f) < 6 or f[0] != "cand":
        continue
    shape, mode, kind = f[1], f[2], f[3]
    gated = f[4] == "silu_mul"
    cfg, us = (f[5], f[6]) if gated else (f[4], f[5])
    if kind == "cublaslt":
        cfg = f[4]
    try:
        t = float(us)
    except ValueError:
        continue
    short = re.sub(r"DC_(PF|XR|MT)=\d+,?", "", cfg)
    for k, v in (("DC_WG=", "WG"), ("DC_WARPS=", "W"), ("DC_NT=", "NT"), ("DC_U=", "U"),
                 ("DC_DEPTH=", "D"), ("DC_GRID=", "G"), (",", " ")):
        short = short.replace(k, v)
    rows.setdefault((shape.replace("gemm_NT_", ""), mode, "silu_mul" if gated else "plain"), []).append(
        (t, kind + " " + short.strip()))
for key in sorted(rows):
    best = sorted(r for r in rows[key] if r[0] > 0)[:top]
    print(" ".join(key) + ": " + "; ".join("%.2f %s" % r for r in best))
