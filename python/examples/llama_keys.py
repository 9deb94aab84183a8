"""Where ktune's tuning time goes, key by key (llama.py, a Llama-style decoder end to end).

The engine accounts for each tuning run itself when KTUNE_VERBOSE=1 (autotune/tuning_run*.cc):
the key's candidates, what it compiled and found in the store, the race's rounds, the finalists,
and its compile / bench / total host wall time. llama.py's first process marks each first call
("[first call] VARIANT SHAPE OP", before the op runs), so each key is placed at the shape and op
whose first call tuned it. Beside the keys, the op's first call as llama.py timed it (the device
synchronised around the op): what it took outside its keys' runs is the process's one-time costs
(the first GEMM's op set-up, library loads) and the call itself.

  python3 llama_keys.py llama.log [llama.json]      the tables from a run's log (and JSON)
"""
import json
import re
import sys

_F = r"([-+0-9.e]+)"
_MARK = re.compile(r"^\s*\[first call\] (\S+) (\S+) (\S+)\s*$")
_HEAD = re.compile(r"^(\S+) \[(.*)\]: (\d+) candidates(.*)$")
_ROUND1 = re.compile(r"^ktune: (\S+) \[(.*)\]: guided: round 1 " + _F + r" ms \(vendor candidates "
                     + _F + r" ms, (\d+) raced, (\d+) compiled\)")
_ROUND = re.compile(r"^ktune: (\S+) \[(.*)\]: guided: round (\d+) " + _F + r" ms \((\d+) cand")
_FINAL = re.compile(r"^ktune: (\S+) \[(.*)\]: finalists " + _F + r" ms \((\d+) finalists")
_WALL = re.compile(r"^\s+compile " + _F + r" ms, bench " + _F + r" ms \(" + _F +
                   r" ms of it while compiling\), total " + _F + " ms")
# The repeat processes' part of the log (llama_procs): their keys come from the database.
_REPEATS = re.compile(r"^process \d+: child process ")
_SHORT = ("M", "N", "K", "epi", "rows", "cols", "d", "res", "pow2(B * T)")


def _count(text, what):
    m = re.search(r"(\d+) " + what, text)
    return int(m.group(1)) if m else 0


def parse(lines):
    """The tuning runs in a log, in order: dicts with variant, shape, op (the first call that
    tuned the key; "?" before any mark), family, key, candidates, compiled, store_hits, raced,
    not_reached, launch_floor (the race stopped at a tie of launch-bound configs), round1_s,
    vendor_s, later_s (rounds 2..), finalists_s, compile_s, bench_s, overlap_s, total_s (the
    engine's host wall figures; 0 where its log has none)."""
    where, pending, runs, last = ("?", "?", "?"), {}, [], None
    for line in lines:
        line = line.rstrip("\n")
        if _REPEATS.match(line):
            break
        m = _MARK.match(line)
        if m:
            where = m.groups()
            continue
        m = _ROUND1.match(line)
        if m:
            p = pending.setdefault((m[1], m[2]), {})
            p.update(round1_s=float(m[3]) / 1e3, vendor_s=float(m[4]) / 1e3)
            continue
        m = _ROUND.match(line)
        if m:
            p = pending.setdefault((m[1], m[2]), {})
            p["later_s"] = p.get("later_s", 0.0) + float(m[4]) / 1e3
            continue
        m = _FINAL.match(line)
        if m:
            pending.setdefault((m[1], m[2]), {})["finalists_s"] = float(m[3]) / 1e3
            continue
        m = _HEAD.match(line)
        if m:
            rest = m[4]
            last = dict(variant=where[0], shape=where[1], op=where[2], family=m[1], key=m[2],
                        candidates=int(m[3]), compiled=_count(rest, "compiled"),
                        store_hits=_count(rest, "store hits"), raced=_count(rest, "raced"),
                        not_reached=_count(rest, "not reached"),
                        launch_floor="at the launch floor" in rest, round1_s=0.0, vendor_s=0.0,
                        later_s=0.0, finalists_s=0.0, compile_s=0.0, bench_s=0.0, overlap_s=0.0,
                        total_s=0.0)
            last.update(pending.pop((m[1], m[2]), {}))
            runs.append(last)
            continue
        m = _WALL.match(line)
        if m and last is not None:
            last.update(compile_s=float(m[1]) / 1e3, bench_s=float(m[2]) / 1e3,
                        overlap_s=float(m[3]) / 1e3, total_s=float(m[4]) / 1e3)
            last = None
    return runs


def short_key(key):
    """The fields of a key that tell its shape apart (M, N, K, epi, rows, ...)."""
    keep = [f for f in key.split(",") if f.split("=", 1)[0] in _SHORT]
    return ",".join(keep) or key[:40]


def _md(header, rows):
    print("| " + " | ".join(header) + " |")
    print("|---" * len(header) + "|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")


def report(runs, first_ops=None):
    """The per-key table, the sums by op and by shape, and each op's first call beside its keys."""
    if not runs:
        print("\n== tuning by key: no engine lines in the log (KTUNE_VERBOSE=1 prints them)")
        return
    print(f"\n== ktune's tuning by key (the engine's host wall figures, KTUNE_VERBOSE=1; "
          f"{len(runs)} tuning runs, markdown, s)")
    _md(["variant shape op", "family", "key", "cand.", "compiled / hits", "raced",
         "round 1 (vendor)", "rounds 2+", "finalists", "compile", "bench", "total"],
        [[f"{r['variant']} {r['shape']} {r['op']}", r["family"], short_key(r["key"]),
          r["candidates"], f"{r['compiled']} / {r['store_hits']}",
          f"{r['raced'] or 'all'}{' (floor)' if r.get('launch_floor') else ''}",
          f"{r['round1_s']:.2f} ({r['vendor_s']:.2f})", f"{r['later_s']:.2f}",
          f"{r['finalists_s']:.2f}", f"{r['compile_s']:.2f}", f"{r['bench_s']:.2f}",
          f"**{r['total_s']:.2f}**"] for r in runs])
    for what in ("op", "shape", "family"):
        tot = {}
        for r in runs:
            k = (r["variant"], r[what])
            t = tot.setdefault(k, [0, 0, 0.0, 0.0, 0.0])
            t[0] += 1
            t[1] += r["compiled"]
            t[2] += r["compile_s"]
            t[3] += r["bench_s"]
            t[4] += r["total_s"]
        print(f"\n  by {what}: " + "; ".join(
            f"{v} {k}: {t[0]} keys, {t[1]} compiled, compile {t[2]:.2f} s, bench {t[3]:.2f} s, "
            f"total {t[4]:.2f} s" for (v, k), t in tot.items()))
    compiled = sum(r["compile_s"] for r in runs)
    print(f"  all: {len(runs)} keys, {sum(r['compiled'] for r in runs)} compiles, compile "
          f"{compiled:.2f} s, bench {sum(r['bench_s'] for r in runs):.2f} s (of it while "
          f"compiling {sum(r['overlap_s'] for r in runs):.2f} s), total "
          f"{sum(r['total_s'] for r in runs):.2f} s")
    _beside_first_calls(runs, first_ops or {})


def _beside_first_calls(runs, first_ops):
    """Each ktune op's first call (llama.py's own timing, first layer only) against its keys'
    tuning runs: the rest is outside the engine's runs."""
    rows, quick = [], 0
    for shape, ops in first_ops.items():
        for op, sec in ops.items():
            keys = [r for r in runs if r["variant"] == "ktune" and r["shape"] == shape and
                    r["op"] == op]
            tuned = sum(r["total_s"] for r in keys)
            if not keys and sec < 0.05:  # a hit (another layer's or shape's key): not listed
                quick += 1
                continue
            rows.append([f"{shape} {op}", f"{sec:.2f}", len(keys), f"{tuned:.2f}",
                         f"{sec - tuned:.2f}"])
    if not rows:
        return
    print("\n== ktune's first call of each op (first layer, the device synchronised around it) "
          "against its keys' tuning runs (markdown, s)")
    _md(["shape op", "first call", "keys tuned", "their runs", "outside the runs"], rows)
    print(f"  sum: first calls {sum(float(r[1]) for r in rows):.2f} s, runs "
          f"{sum(float(r[3]) for r in rows):.2f} s, outside {sum(float(r[4]) for r in rows):.2f} s"
          f" ({quick} first calls under 0.05 s that tuned no key not listed)")


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    with open(argv[0], errors="replace") as f:
        runs = parse(f)
    first = {}
    if len(argv) > 1:
        try:
            with open(argv[1]) as f:
                first = json.load(f).get("first_ops_first") or {}
        except (OSError, ValueError) as e:
            print(f"  {argv[1]}: not read ({e})")
    report(runs, first)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
