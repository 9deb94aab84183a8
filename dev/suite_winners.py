#!/usr/bin/env python3
"""The main job's winners: `ktune tune gemm --suite llm --json` writes one JSON report per key;
print per key M x N x K, the winner's source (jit or the vendor library), its time and its time over the
family default's (interleaved re-timing), then how many prefill (M > 128) and decode keys a JIT kernel won.
  python3 dev/suite_winners.py suite.json"""
import json
import re
import sys


def reports(text):
    dec, i, out = json.JSONDecoder(), 0, []
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        obj, i = dec.raw_decode(text, i)
        out.extend(obj if isinstance(obj, list) else [obj])
    return out


def main(path):
    jit = {"prefill": [0, 0], "decode": [0, 0]}
    print(f"{'key':<22} {'winner':<8} {'us':>9} {'vs default':>10}  config")
    for r in reports(open(path).read()):
        f = dict(re.findall(r"(\w+)=([^,]+)", r.get("key", "")))
        m, n, k = int(f.get("M", 0)), f.get("N", "?"), f.get("K", "?")
        src = r.get("winner_source", "?")
        kind = "prefill" if m > 128 else "decode"
        jit[kind][1] += 1
        jit[kind][0] += src == "jit"
        us = 1000.0 * r.get("winner_median_ms", float("nan"))
        vd = r.get("vs_default") or {}
        ratio = vd.get("ratio", float("nan")) if isinstance(vd, dict) else float(vd)
        print(f"{m}x{n}x{k:<10} {src:<8} {us:9.1f} {ratio:10.3f}  {r.get('winner', '')[:60]}"
              f"  (default: {vd.get('baseline_source', '?') if isinstance(vd, dict) else '?'})")
    for kind, (won, total) in jit.items():
        print(f"JIT winners, {kind}: {won} of {total}")


if __name__ == "__main__":
    main(sys.argv[1])
