#!/usr/bin/env python3
"""The tuner's times against gemm_bench's for the same configs at decode keys (issue 32): reads
`ktune tune gemm --json` reports (OUT/tune_<MxNxK>.json) and gemm_bench logs (OUT/bench<p>.err:
the pre-pass's "cand" lines; OUT/bench<p>.log: the interleaved rounds' RESULT lines).
  python3 dev/decode/tunecmp.py twins OUT KEY...   the --twin list: each key's TOP (3) fastest
                                                   decode configs of the tuner, "CFG@KEY"
  python3 dev/decode/tunecmp.py table OUT KEY...   per key: every config both timed (tuner median,
                                                   gemm_bench flush pre-pass per process), the
                                                   curated ones the tuner did not time, the race's
                                                   and the bench's best JIT / best cuBLASLt"""
import glob
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from suite_winners import reports  # noqa: E402


def norm(cfg):
    """A config or cuBLASLt algorithm as one comparable string (KIND dropped, knobs sorted)."""
    m = re.match(r"cublaslt:idx=(\d+)", cfg) or re.match(r"idx=(\d+)", cfg)
    if m:
        return "cublaslt #" + m.group(1)
    kv = dict(x.split("=", 1) for x in cfg.split(",") if "=" in x)
    kv.pop("KIND", None)
    return ",".join(f"{k}={kv[k]}" for k in sorted(kv))


def short(n):
    s = re.sub(r"DC_MT=\d+,?", "", n)
    for k, v in (("DC_WG=", "WG"), ("DC_WARPS=", "W"), ("DC_NT=", "NT"), ("DC_U=", "U"),
                 ("DC_DEPTH=", "D"), ("DC_GRID=", "G"), ("DC_PF=", "PF"), ("DC_XR=", "XR"), (",", " ")):
        s = s.replace(k, v)
    return s.strip()


def tuner(out, key, run=""):
    """(report, {norm config: (median us, runs, kind)}) of the tuner's timed candidates (run: the
    file's suffix, "" for the first tuning, "_2" for the second)."""
    path = os.path.join(out, f"tune_{key}{run}.json")
    if not os.path.exists(path):
        return None, {}
    try:
        reps = reports(open(path).read())
    except ValueError:
        return None, {}
    rep = next((r for r in reps if "candidates" in r), None)
    got = {}
    for c in (rep or {}).get("candidates", []):
        if c.get("status") == "ok" and c.get("runs") and c.get("median_us"):
            kind = "cublaslt" if c.get("source") == "cublaslt" else (
                re.search(r"KIND=(\w+)", c["config"]) or [None, "?"])[1]
            got[norm(c["config"])] = (c["median_us"], c["runs"], kind)
    return rep, got


def bench(out, key):
    """Per process: {(mode, norm config): us} from the pre-pass (plain variant only)."""
    procs = []
    for err in sorted(glob.glob(os.path.join(out, "bench*.err"))):
        d = {}
        for line in open(err, errors="replace"):
            f = line.split()
            if len(f) < 6 or f[0] != "cand" or not f[1].endswith("_" + key) or f[4] == "silu_mul":
                continue
            try:
                d[(f[2], norm(f[4]), f[3])] = float(f[5])
            except ValueError:
                pass
        procs.append(d)
    return procs


def twins(out, keys, top=3):
    picks = []
    for key in keys:
        _, got = tuner(out, key)
        dec = sorted((v[0], k) for k, v in got.items() if v[2] == "decode")[:top]
        picks += [f"{k}@{key}" for _, k in dec]
    print(";".join(picks))


def table(out, keys):
    for key in keys:
        rep, got = tuner(out, key)
        procs = bench(out, key)
        print(f"== {key}")
        for run in ("", "_2"):
            r2, g2 = tuner(out, key, run)
            if not r2:
                continue
            vd = r2.get("vs_default") or {}
            print(f"tuner{run or '_1'} winner: {r2.get('winner_source')} {short(norm(r2.get('winner', '')))[:90]} "
                  f"{1000 * r2.get('winner_median_ms', 0):.2f} us; {vd.get('decision', '-')}, ratio "
                  f"{vd.get('ratio', 0):.3f} [{vd.get('ratio_lo', 0):.3f}, {vd.get('ratio_hi', 0):.3f}], "
                  f"{vd.get('rounds', 0)} rounds; timed {len(g2)} (decode "
                  f"{sum(v[2] == 'decode' for v in g2.values())})")
        rows = []
        for (mode, cfg, kind) in sorted({k for p in procs for k in p}):
            if mode != "flush":
                continue
            b = [p.get((mode, cfg, kind)) for p in procs]
            t = got.get(cfg)
            rows.append((min([x for x in b if x] or [1e9]), cfg, kind, t, b))
        print(f"{'config':<44} {'tuner us (runs)':>16} {'bench flush us p1/p2..':>24} {'tuner/bench p1':>14}")
        for _, cfg, kind, t, b in sorted(rows)[:40]:
            bs = "/".join(f"{x:.2f}" if x else "-" for x in b)
            ts = f"{t[0]:.2f} ({t[1]})" if t else "not timed"
            r = f"{t[0] / b[0]:.3f}" if t and b and b[0] else "-"
            print(f"{(kind[:4] + ' ' + short(cfg))[:44]:<44} {ts:>16} {bs:>24} {r:>14}")
        runs = [tuner(out, key, r)[1] for r in ("", "_2")]
        tuned = [{("flush", k, v[2]): v[0] for k, v in g.items()} for g in runs if g]
        for label, src in (("tuner", tuned), ("bench", procs)):
            for i, p in enumerate(src):
                jit = [v for (m, c, k), v in p.items() if m == "flush" and k != "cublaslt"]
                lt = [v for (m, c, k), v in p.items() if m == "flush" and k == "cublaslt"]
                if jit and lt:
                    print(f"{label} p{i + 1}: best JIT {min(jit):.2f} us, best cuBLASLt {min(lt):.2f} us, "
                          f"cuBLASLt best / JIT best {min(lt) / min(jit):.3f}")
        for log in sorted(glob.glob(os.path.join(out, "bench*.log"))):
            res = [line.split()[2:7] for line in open(log, errors="replace")
                   if line.startswith("RESULT") and f"_{key}/" in line]
            if res:
                print(os.path.basename(log) + ": " + "; ".join(
                    f"{r[0].split('/')[-1]} {r[1]} {r[2]} [{r[3]},{r[4]}]" for r in res))


if __name__ == "__main__":
    what, out, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
    twins(out, keys) if what == "twins" else table(out, keys)
