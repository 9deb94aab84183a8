"""gemm_bench's pre-pass lines (stderr, "cand <shape> <mode> <kind> [silu_mul] <config> <us>") ->
the N fastest per shape, mode and variant (plain / silu_mul), knobs abbreviated.
   python3 dev/decode/prepass_top.py [N] < bench1.err"""
import re
import sys

best_decode = len(sys.argv) > 2 and sys.argv[1] == "--best-decode"
top = 6 if best_decode or len(sys.argv) < 2 else int(sys.argv[1])
rows = {}
full = {}  # (shape, mode, variant) -> [(us, decode config as gemm_bench prints it)]
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
    if kind == "decode":
        full.setdefault((re.sub(r"^(gemm_)?NT_", "", shape), mode, "silu_mul" if gated else "plain"), []).append((t, cfg))
    short = re.sub(r"DC_MT=\d+,?", "", cfg)
    for k, v in (("DC_WG=", "WG"), ("DC_WARPS=", "W"), ("DC_NT=", "NT"), ("DC_U=", "U"),
                 ("DC_DEPTH=", "D"), ("DC_GRID=", "G"), ("DC_PF=", "PF"), ("DC_XR=", "XR"), (",", " ")):
        short = short.replace(k, v)
    rows.setdefault((shape.replace("gemm_NT_", ""), mode, "silu_mul" if gated else "plain"), []).append(
        (t, kind + " " + short.strip()))
if best_decode:  # --best-decode SHAPES: the fastest decode config (plain, flush) of each, ;-joined
    picks = []
    for sh in sys.argv[2].split(","):
        c = sorted(x for x in full.get((sh, "flush", "plain"), []) if x[0] > 0)
        if c and c[0][1] not in picks:
            picks.append(c[0][1])
    print(";".join(picks))
    sys.exit(0)
for key in sorted(rows):
    best = sorted(r for r in rows[key] if r[0] > 0)[:top]
    print(" ".join(key) + ": " + "; ".join("%.2f %s" % r for r in best))
