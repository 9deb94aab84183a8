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

from trace_table import I, read_launches


def main():
    launches = {k: [r[2] for r in rows] for k, rows in read_launches(sys.stdin).items()}
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
