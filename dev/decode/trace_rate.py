"""The weight bytes landed over time, rebuilt from gemm_bench --trace's DCT lines (the decode
kernel's trace, templates/gemm/decode/decode_wg_trace.cuh): per (shape, config, mode), each block's
share of the weights (N*K*2 / blocks: grids of equal blocks) spread evenly between its first and its
last landed stage, summed over the blocks in 1 µs bins from the launch's first block entry (TB/s,
mean over launches; the middle reads a little above the true rate, since the ring's later stages
are already in flight when the first lands), with the first / last landed stage and the exit (median
and tail), and with --per-sm each SM's first-to-last landed stream time (mean over launches).
   python3 dev/decode/trace_rate.py TRACE_LOG [--per-sm]"""
import os
import statistics as st
import sys
from collections import defaultdict
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_table import I, read_launches
L = read_launches(open(sys.argv[1]))
grp = defaultdict(list)
for (shape,cfg,mode,l), rows in L.items():
    grp[(shape,cfg,mode)].append(rows)
BIN=1000
for key, launches in sorted(grp.items()):
    shape=key[0].replace("NT_",""); m,n,k=map(int,shape.split("x"))
    curves=[]; firsts=[]; lasts=[]; exits=[]
    for rows in launches:
        nb=len(rows); W=n*k*2/nb  # bytes per block (even split; ok for G0/G6 equal tiles)
        g0=min(r[2][I["gentry"]] for r in rows)
        c=defaultdict(float)
        for _,_,e in rows:
            npc=(e[I["gexit"]]-e[I["gentry"]])/max(1,e[I["done"]]-e[I["entry"]])
            t=lambda ev: e[I["gentry"]]-g0+(e[I[ev]]-e[I["entry"]])*npc
            f0,fl,ex=t("full0"),t("fulllast"),t("done")
            firsts.append(f0); lasts.append(fl); exits.append(ex)
            # spread W uniformly over [f0 - (fl-f0)/S, fl] approx: use [f0, fl]
            a,b=f0,fl
            for bi in range(int(a//BIN), int(b//BIN)+1):
                lo=max(a,bi*BIN); hi=min(b,(bi+1)*BIN)
                if hi>lo: c[bi]+=W*(hi-lo)/(b-a)
        curves.append(c)
    bins=sorted(set(b for c in curves for b in c))
    prof=" ".join("%.1f"%(st.mean(c.get(b,0) for c in curves)/BIN/1e3) for b in bins)
    print("%s %s %s: first-landed med %.2f p90 %.2f us; last-landed med %.2f max %.2f; exit med %.2f max %.2f" % (
        shape, key[2], ",".join(x for x in key[1].split(",") if x.split("=")[0] in ("DC_WARPS","DC_NT","DC_U","DC_DEPTH","DC_GRID","DC_XR")).replace("DC_",""),
        st.median(firsts)/1e3, sorted(firsts)[int(.9*len(firsts))]/1e3, st.median(lasts)/1e3, max(lasts)/1e3, st.median(exits)/1e3, max(exits)/1e3))
    print("   TB/s per us bin:", prof)
    if "--per-sm" in sys.argv:
        per = defaultdict(list)
        for rows in launches:
            for _, _, e in rows:
                per[e[I["sm"]]].append((e[I["fulllast"]] - e[I["full0"]]) *
                                       (e[I["gexit"]] - e[I["gentry"]]) / max(1, e[I["done"]] - e[I["entry"]]) / 1e3)
        m = {sm: st.mean(v) for sm, v in per.items()}
        lo, hi = min(m.values()), max(m.values())
        print("   per-SM stream us: %d SMs, %.1f-%.1f; slowest %s" % (
            len(m), lo, hi, " ".join(str(s) for s in sorted(m, key=m.get)[-8:])))
