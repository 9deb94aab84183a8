#!/usr/bin/env python3
"""The tuner's times against gemm_bench's for the same configs at prefill keys (issue 33;
dev/fp8_tunecmp_device.sh's call). Reads OUT/tune_<run>_<MxNxK>.json (`ktune tune gemm --json`:
the race's medians), OUT/tune_<run>_<MxNxK>.err (KTUNE_VERBOSE=1: the finalists' medians per
round), OUT/bench_<p>.err (gemm_bench's pre-pass "cand" lines) and OUT/bench_<p>.txt (TMETHOD,
SUSTAIN, RESULT lines: bench/gemm_bench_tuner.h).
  python3 dev/fp8_tunecmp.py only OUT KEY...    the --only list: B, D and each key's three
                                                fastest JIT configs of run t1, "CFG@KEY"
  python3 dev/fp8_tunecmp.py table OUT KEY...   per key and config: the tuner's race medians
                                                (t1 t2 t3), its finalists' medians over their
                                                rounds, gemm_bench's pre-pass per process, the
                                                three methods' medians over rounds and processes,
                                                the sustained runs (median, last quarter, MHz, W)"""
import glob
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite_winners import reports  # noqa: E402

B = "BLOCK_N=256,CLUSTER_M=1,CONSUMERS=2,EPI_TMA=2,GROUP_M=16,NUM_STAGES=4,PINGPONG=0,SPLIT_K=1,WG_M=1"
D = B.replace("SPLIT_K=1", "SPLIT_K=2")
RUNS = ("t1", "t2", "t3")


def norm(cfg):
    """A config or cuBLASLt algorithm as one comparable string (KIND dropped, knobs sorted)."""
    m = re.match(r"cublaslt[: ]idx=(\d+)", cfg) or re.match(r"idx=(\d+)", cfg)
    if m:
        return "lt#" + m.group(1)
    kv = dict(x.split("=", 1) for x in cfg.split(",") if "=" in x)
    kv.pop("KIND", None)
    return ",".join(f"{k}={kv[k]}" for k in sorted(kv))


def short(n):
    if n.startswith("lt#"):
        return n
    if n == norm(B):
        return "B"
    if n == norm(D):
        return "D"
    kv = dict(x.split("=", 1) for x in n.split(","))
    return (f"N{kv.get('BLOCK_N')} CL{kv.get('CLUSTER_M')} E{kv.get('EPI_TMA')} G{kv.get('GROUP_M')} "
            f"S{kv.get('NUM_STAGES')} K{kv.get('SPLIT_K')} W{kv.get('WG_M')} P{kv.get('PINGPONG')}")


def tuner(out, run, key):
    """(report, {norm config: median us}) of a tuning's timed candidates."""
    path = os.path.join(out, f"tune_{run}_{key}.json")
    try:
        rep = next((r for r in reports(open(path).read()) if "candidates" in r), None)
    except (OSError, ValueError):
        return None, {}
    got = {}
    for c in (rep or {}).get("candidates", []):
        if c.get("status") == "ok" and c.get("runs") and c.get("median_us"):
            got[norm(c["config"])] = c["median_us"]
    return rep, got


def finalists(out, run, key):
    """{norm config: [median us per round]} from the verbose log's finalist lines."""
    got = {}
    try:
        lines = open(os.path.join(out, f"tune_{run}_{key}.err"), errors="replace").readlines()
    except OSError:
        return got
    for line in lines:
        m = re.match(r"ktune: gemm \[.*\]: finalist \d+ (?:cublaslt )?(\S+):((?: \S+)*)$", line.strip())
        if m:
            got[norm(m.group(1))] = [float(x) for x in m.group(2).split() if x != "-"]
    return got


def bench(out, key):
    """Per process: pre-pass {cfg: us}, methods {cfg: {gb|q1|q10: [us]}}, sustain {cfg: fields}."""
    procs = []
    for txt in sorted(glob.glob(os.path.join(out, "bench_*.txt"))):
        pre, meth, sus = {}, {}, {}
        err = txt[:-4] + ".err"
        for line in open(err, errors="replace") if os.path.exists(err) else []:
            f = line.split()
            if len(f) >= 6 and f[0] == "cand" and f[1] == "NT_" + key and f[2] == "flush":
                pre[norm(f[4])] = float(f[5])
        for line in open(txt, errors="replace"):
            f = line.split()
            if len(f) >= 7 and f[0] == "TMETHOD" and f[1] == "NT_" + key:
                d = meth.setdefault(norm(f[2]), {"gb": [], "q1": [], "q10": []})
                for name, v in zip(("gb", "q1", "q10"), f[4:7]):
                    if float(v) > 0:
                        d[name].append(float(v))
            elif len(f) >= 10 and f[0] == "SUSTAIN" and f[1] == "NT_" + key:
                sus[norm(f[2])] = [float(x) for x in f[3:10]]
        procs.append((pre, meth, sus))
    return procs


def only(out, keys, top=3):
    picks = []
    for key in keys:
        _, got = tuner(out, "t1", key)
        jit = sorted((v, k) for k, v in got.items() if not k.startswith("lt#"))[:top]
        cfgs = [norm(B), norm(D)] + [k for _, k in jit]
        picks += [f"{c}@{key}" for c in dict.fromkeys(cfgs)]
    print(";".join(picks))


def med(v):
    return statistics.median(v) if v else None


def fmt(x, w=7):
    return f"{x:{w}.2f}" if x else " " * (w - 1) + "-"


def table(out, keys):
    for key in keys:
        print(f"== {key} (us; race = the tuner's recorded median; fin = median of its finalist rounds;"
              " pre = gemm_bench's pre-pass; gb/q1/q10 = median over rounds and processes)")
        runs = {r: tuner(out, r, key) for r in RUNS}
        fins = {r: finalists(out, r, key) for r in RUNS}
        procs = bench(out, key)
        for r, (rep, _) in runs.items():
            if rep:
                vd = rep.get("vs_default") or {}
                print(f"  {r}: winner {rep.get('winner_source')} {short(norm(rep.get('winner', '')))}; "
                      f"{vd.get('decision', '-')}, ratio {vd.get('ratio', 0):.3f} [{vd.get('ratio_lo', 0):.3f}, "
                      f"{vd.get('ratio_hi', 0):.3f}], {vd.get('rounds', 0)} rounds")
        cfgs = set()
        for p in procs:
            cfgs |= set(p[0]) | set(p[1])
        for r in RUNS:
            cfgs |= set(fins[r]) | set(sorted(runs[r][1], key=runs[r][1].get)[:6])
        hdr = ("config", "race t1", "t2", "t3", "fin t1", "t2", "t3", "pre p1", "p2", "p3",
               "gb", "q1", "q10", "sus", "last4", "MHz", "W")
        print("  " + " ".join(f"{h:>7}" if i else f"{h:<28}" for i, h in enumerate(hdr)))
        rows = []
        for c in cfgs:
            race = [runs[r][1].get(c) for r in RUNS]
            fin = [med(fins[r].get(c, [])) for r in RUNS]
            pre = [p[0].get(c) for p in procs] + [None] * (3 - len(procs))
            m = {k: med([x for p in procs for x in p[1].get(c, {}).get(k, [])]) for k in ("gb", "q1", "q10")}
            s = [p[2][c] for p in procs if c in p[2]]
            sus = [med([x[i] for x in s]) for i in (0, 2, 4, 5)] if s else [None] * 4
            order = m["gb"] or min([x for x in race + pre[:3] if x] or [1e9])
            rows.append([order, c, race, fin, pre[:3], m, sus])
        for _, c, race, fin, pre, m, sus in sorted(rows):
            cells = race + fin + pre + [m["gb"], m["q1"], m["q10"], sus[0], sus[1]]
            extra = f" {sus[2]:7.0f} {sus[3]:7.1f}" if sus[2] else ""
            print(f"  {short(c):<28} " + " ".join(fmt(x) for x in cells) + extra)
        # The JIT pick against cuBLASLt's best under each method: best lt time / best JIT time.
        for label, col in (("race t1", lambda r: r[2][0]), ("race t2", lambda r: r[2][1]),
                           ("race t3", lambda r: r[2][2]), ("pre p1", lambda r: r[4][0]),
                           ("gb", lambda r: r[5]["gb"]), ("q1", lambda r: r[5]["q1"]),
                           ("q10", lambda r: r[5]["q10"]), ("sustained", lambda r: r[6][0])):
            jit = [col(r) for r in rows if not r[1].startswith("lt#") and col(r)]
            lt = [col(r) for r in rows if r[1].startswith("lt#") and col(r)]
            if jit and lt:
                print(f"  {label:<10} best lt {min(lt):8.2f} / best JIT {min(jit):8.2f} = {min(lt) / min(jit):.4f}")
        for p, txt in enumerate(sorted(glob.glob(os.path.join(out, "bench_*.txt")))):
            res = [line.split()[3:8] for line in open(txt, errors="replace")
                   if line.startswith("RATIO") and line.split()[2] == f"NT_{key}/flush"]
            if res:
                print(f"  rounds p{p + 1}: " + "; ".join(f"{r[0]} {r[1]} [{r[2]}, {r[3]}]" for r in res))


if __name__ == "__main__":
    what, out, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
    only(out, keys) if what == "only" else table(out, keys)
