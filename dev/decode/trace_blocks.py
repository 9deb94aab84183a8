#!/usr/bin/env python3
"""Each SM's block exit time from gemm_bench --trace's DCT lines (stdin; the decode kernel's trace,
templates/gemm/decode/decode_wg_trace.cuh): per (shape, config, mode) the mean and spread over
launches of every SM's block exit after the launch's first block entry (us), and the spread of
those means over the SMs. A mean that is stable over launches but far from the others' says the
block's rate is a property of its SM, not of the launch.
   python3 dev/decode/trace_blocks.py [--per-sm] < trace.log"""
import statistics as st
import sys
from collections import defaultdict

EV = ["entry", "prologue", "issue0", "ring", "empty1", "lastissue", "full0", "full1", "fulllast",
      "loopend", "red1", "red2", "store0", "done", "gentry", "gexit", "sm", "rank"]
I = {n: i for i, n in enumerate(EV)}


def main():
    launches = defaultdict(list)
    for line in sys.stdin:
        w = line.split()
        if len(w) < 7 + len(EV) or w[0] != "DCT":
            continue
        launches[(w[1], w[2], w[3], int(w[4]))].append([int(x) for x in w[7:7 + len(EV)]])
    per_sm = defaultdict(lambda: defaultdict(list))
    for (shape, cfg, mode, _), rows in launches.items():
        g0 = min(r[I["gentry"]] for r in rows)
        for r in rows:
            per_sm[(shape, cfg, mode)][r[I["sm"]]].append((r[I["gexit"]] - g0) / 1000.0)
    for key, sms in sorted(per_sm.items()):
        means = sorted((st.mean(v), s) for s, v in sms.items())
        sd = max(st.pstdev(v) for v in sms.values())
        print("%s %s %s: %d SMs, exit mean min / median / max %.1f / %.1f / %.1f us, largest sd over "
              "launches %.1f us; earliest SMs %s" % (
                  key[0], key[1], key[2], len(means), means[0][0], means[len(means) // 2][0],
                  means[-1][0], sd, " ".join(str(s) for _, s in means[:6])))
        if "--per-sm" in sys.argv:
            print("  " + " ".join("%d:%.1f" % (s, m) for m, s in sorted(means, key=lambda x: x[1])))


if __name__ == "__main__":
    main()
