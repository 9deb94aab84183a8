#!/usr/bin/env python3
"""The decode kernel's phase split from gemm_bench --trace's DCT lines (stdin; bench/gemm_bench_modes.h,
templates/gemm/decode/decode_wg_trace.cuh). Per (shape, config, mode): medians over the launches of
each launch's median block (ns; clock64 offsets converted at the launch's median ns per cycle from
each block's globaltimer and clock64 between entry and exit), and the launch-level figures:
event: device events around the launch; span: first block entry to last block exit; pre: event -
span (launch to the first block, the last exit to the event); ramp / skew: the median / last block's
entry after the first; tail: last exit after the median exit."""
import statistics as st
import sys
from collections import defaultdict

EV = ["entry", "prologue", "issue0", "ring", "empty1", "lastissue", "full0", "full1", "fulllast",
      "loopend", "red1", "red2", "store0", "done", "gentry", "gexit", "sm", "rank"]
I = {n: i for i, n in enumerate(EV)}
# Per-block phases: (name, from event, to event).
PH = [("prol", "entry", "prologue"), ("issue", "entry", "issue0"), ("fill", "issue0", "full0"),
      ("f0-f1", "full0", "full1"), ("stream", "full0", "fulllast"), ("last", "fulllast", "loopend"),
      ("wait_peer", "loopend", "red1"), ("xchg", "red1", "red2"), ("add", "red2", "store0"),
      ("store", "store0", "done"), ("ring_out", "issue0", "ring"), ("empty1", "issue0", "empty1")]


def read_launches(lines):
    """(shape, config, mode, launch) -> [(event us, block, [the EV clocks])] from the DCT lines."""
    launches = defaultdict(list)
    for line in lines:
        w = line.split()
        if len(w) < 7 + len(EV) or w[0] != "DCT":
            continue
        key = (w[1], w[2], w[3], int(w[4]))
        launches[key].append((float(w[5]), int(w[6]), [int(x) for x in w[7:7 + len(EV)]]))
    return launches


def main():
    launches = read_launches(sys.stdin)
    groups = defaultdict(list)
    for (shape, cfg, mode, _), rows in launches.items():
        g0 = min(r[2][I["gentry"]] for r in rows)
        ns_per_cyc = st.median([(r[2][I["gexit"]] - r[2][I["gentry"]]) / max(1, r[2][I["done"]] - r[2][I["entry"]])
                                for r in rows])
        f = {"event": 1000 * rows[0][0], "span": max(r[2][I["gexit"]] for r in rows) - g0,
             "ramp": st.median(r[2][I["gentry"]] - g0 for r in rows),
             "skew": max(r[2][I["gentry"]] for r in rows) - g0,
             "tail": max(r[2][I["gexit"]] for r in rows) - st.median(r[2][I["gexit"]] for r in rows),
             "GHz": 1 / ns_per_cyc, "blocks": len(rows)}
        f["pre"] = f["event"] - f["span"]
        for name, a, b in PH:
            v = [(r[2][I[b]] - r[2][I[a]]) * ns_per_cyc for r in rows if r[2][I[a]] and r[2][I[b]]]
            f[name] = st.median(v) if v else float("nan")
        groups[(shape, cfg, mode)].append(f)
    cols = ["event", "span", "pre", "ramp", "skew", "tail", "prol", "issue", "fill", "f0-f1", "stream", "last",
            "wait_peer", "xchg", "add", "store", "ring_out", "empty1", "GHz", "blocks"]
    print("ns, medians over launches (n) of each launch's median block; GHz: SM clock from the stamps")
    print("%-14s %-5s %-46s %3s " % ("shape", "mode", "config", "n") + " ".join("%8s" % c for c in cols))
    for (shape, cfg, mode), fs in sorted(groups.items()):
        short = ",".join(x.split("=")[0][3:] + x.split("=")[1] for x in cfg.split(",") if x.startswith("DC_"))
        vals = []
        for c in cols:
            v = [f[c] for f in fs if f[c] == f[c]]
            vals.append("%8.2f" % st.median(v) if c == "GHz" else "%8.0f" % st.median(v) if v else "%8s" % "-")
        print("%-14s %-5s %-46s %3d " % (shape.replace("NT_", ""), mode, short[:46], len(fs)) + " ".join(vals))


if __name__ == "__main__":
    main()
