#!/usr/bin/env python3
"""The short table of dev/final19_device.sh, read from its work folder W: the GPU test programs
(tests.txt, dev/gpu_pass_device.sh's lines), the cold and warm LLM suite walls base against this
tree (walls.txt), the JIT winners per suite run (winners_<tag>.txt, dev/suite_winners.py), the
4096^3 cold/warm walls, the regret rows (regret.txt) and the parts dropped (dropped.txt).
  python3 dev/final19_table.py W"""
import os
import re
import statistics
import sys


def lines(w, name):
    p = os.path.join(w, name)
    return open(p, errors="replace").read().splitlines() if os.path.exists(p) else []


def tests(w):
    rows = lines(w, "tests.txt")
    if not rows:
        return ["GPU tests: no result (tests.txt missing)"]
    ok, skip, bad = [], [], []
    for r in rows:
        m = re.match(r"(\S+)\s+rc=(\d+)\s+\d+s passed (\d+)\s+failed (\d+)\s+skipped (\d+)", r)
        name = r.split()[0].rstrip(":")
        if not m:
            bad.append(name + " (not started)")
        elif m.group(2) == "0" and m.group(4) == "0":
            ok.append(name)
        elif m.group(2) == "77":
            skip.append(name)
        else:
            why = "cut" if m.group(2) == "124" else f"rc={m.group(2)}, {m.group(4)} failed"
            bad.append(f"{name} ({why})")
    out = [f"GPU tests: {len(rows)} runs: {len(ok)} pass, {len(skip)} skip (rc 77), "
           f"{len(bad)} not a pass" + (": " + ", ".join(bad) if bad else "")]
    return out


def walls(w):
    """{tag: (variant, rc, wall)} from walls.txt lines 'tag variant rc=N wall S'."""
    out = {}
    for r in lines(w, "walls.txt"):
        m = re.match(r"(\S+) (\S+) rc=(\d+) wall ([\d.]+)", r)
        if m:
            out[m.group(1)] = (m.group(2), int(m.group(3)), float(m.group(4)))
    return out


def series(ws, prefix, variant):
    v = [(t, x[2], x[1]) for t, x in ws.items() if t.startswith(prefix) and x[0] == variant]
    txt = " ".join(f"{s:.2f}" + ("" if rc == 0 else f"(rc {rc})") for _, s, rc in v)
    good = [s for _, s, rc in v if rc == 0]
    return txt or "-", (statistics.median(good) if good else None)


def suite(w, ws):
    out = []
    meds = {}
    for kind in ("cold", "warm"):
        parts = []
        for v in ("base", "this"):
            txt, med = series(ws, f"suite_{kind}_", v)
            meds[(kind, v)] = med
            parts.append(f"{v} {txt}" + (f" (median {med:.2f})" if med else ""))
        b, t = meds[(kind, "base")], meds[(kind, "this")]
        ratio = f"; this/base {t / b:.3f}" if b and t else ""
        out.append(f"suite {kind} walls (s): " + " | ".join(parts) + ratio)
    for t in sorted(ws):
        if not t.startswith("suite_"):
            continue
        jit = [r for r in lines(w, f"winners_{t}.txt") if r.startswith("JIT winners")]
        counts = ", ".join(re.sub(r"JIT winners, (\w+): (\d+) of (\d+)", r"\1 \2/\3", r) for r in jit)
        out.append(f"  JIT winners {t}: {counts or 'no report'}")
    return out


def tune4096(ws):
    pairs = []
    for t in sorted(ws):
        m = re.match(r"tune_cold_(\d+)$", t)
        if m:
            warm = ws.get(f"tune_warm_{m.group(1)}")
            c = ws[t]
            pairs.append(f"{c[2]:.2f}" + ("" if c[1] == 0 else f"(rc {c[1]})") + " / " +
                         (f"{warm[2]:.2f}" + ("" if warm[1] == 0 else f"(rc {warm[1]})") if warm else "-"))
    return ["4096^3 NT cold / warm walls, this tree (s): " + (", ".join(pairs) or "-")]


def regret(w):
    rows = lines(w, "regret.txt")
    if not rows:
        return ["regret: not run"]
    out = ["regret (guided / exhaustive, re-timed; exhaustive at 0.2x budgets):"]
    for r in rows:
        if re.match(r"(decode|llm|odd|layout|ci) ", r) or r.startswith("keys ") or r.startswith("regret rc"):
            out.append("  " + r[:150])
    return out


def main(w):
    ws = walls(w)
    out = ["== final table: " + " ".join(lines(w, "gpu.txt")[:1]) + " (an H200, not the targets' H100)"]
    out += lines(w, "versions.txt")
    out += tests(w) + suite(w, ws) + tune4096(ws) + regret(w)
    drop = lines(w, "dropped.txt")
    out.append("dropped or cut: " + ("; ".join(drop) if drop else "none"))
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1])
