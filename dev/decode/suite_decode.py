#!/usr/bin/env python3
"""Per decode key (M <= 128) of `ktune tune gemm ... --json` reports: the winner, the fastest JIT
config by kind/body and the fastest cuBLASLt algorithm among the timed candidates (first-round or
exhaustive medians, us), how many decode candidates were applicable / timed / not reached, and the
finalists' decision.   python3 dev/decode/suite_decode.py suite.json [more.json ...]"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from suite_winners import reports  # noqa: E402  (one parser of the concatenated reports)


def body(cfg):
    kind = re.search(r"KIND=(\w+)", cfg)
    kind = kind.group(1) if kind else "cublaslt"
    wg = re.search(r"DC_WG=(\d)", cfg)
    return {"0": "decode-mma", "1": "decode-wgmma", "2": "decode-tma", "3": "decode-fma"}[wg.group(1)] if kind == "decode" and wg else kind


def main(paths):
    for path in paths:
        print(f"== {path}")
        for r in reports(open(path).read()):
            f = dict(re.findall(r"(\w+)=([^,]+)", r.get("key", "")))
            if int(f.get("M", 0)) > 128 or "candidates" not in r:
                continue
            best = {}
            dec = [0, 0, 0]
            for c in r["candidates"]:
                cfg, med = c.get("config", ""), c.get("median_us")
                b = body(cfg) if c.get("source") != "cublaslt" else "cublaslt"
                if b.startswith("decode"):
                    dec[0] += c.get("status") != "unsupported"
                    dec[1] += bool(c.get("runs"))
                    dec[2] += "not reached" in (c.get("reason") or "")
                if med and c.get("runs") and c.get("status") == "ok" and (b not in best or med < best[b][0]):
                    best[b] = (med, cfg)
            vd = r.get("vs_default") or {}
            print(f"{f.get('M')}x{f.get('N')}x{f.get('K')}: winner {r.get('winner_source')} "
                  f"{1000 * r.get('winner_median_ms', 0):.2f} us ({vd.get('decision', '-')}, ratio "
                  f"{vd.get('ratio', 0):.3f}); decode applicable/timed/not reached {dec[0]}/{dec[1]}/{dec[2]}")
            for b, (med, cfg) in sorted(best.items(), key=lambda x: x[1][0]):
                print(f"   {med:8.2f}  {b:<13} {cfg[:110]}")


if __name__ == "__main__":
    main(sys.argv[1:])
