#!/usr/bin/env python3
"""Per suite run of dev/warm_time_device.sh (DIR: its logs): the wall, and per key what the guided
race reached, compiled and took from the store; the race's owed classes (race_owed, race_owed_by)
and coverage picks (race_cover) from its timeline; and the configs a warm run reached at a key that
its build's cold run did not (the warm race past its cold store, bench/NOTES.md, issue 34).
Usage: warm_reach_table.py DIR"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from suite_winners import reports  # noqa: E402
from suite_timeline import marks  # noqa: E402

W = sys.argv[1]


def docs(path):
    """The JSON reports of one `ktune tune --json` run (one document per key); a cut run's last,
    unfinished document is left out."""
    if not os.path.exists(path):
        return []
    text = open(path).read()
    while text:
        try:
            return reports(text)
        except ValueError:
            text = text[:text.rfind("{")]  # drop the unfinished document
    return []


def short(key):
    f = dict(x.split("=", 1) for x in key.split(",") if "=" in x)
    return "%sx%sx%s" % (f.get("M"), f.get("N"), f.get("K"))


def reached(d):
    return {c["config"] for c in d.get("candidates", []) if c.get("source") == "jit"
            and not c.get("reason", "").startswith(("not reached", "decode GEMM"))
            and "covers M" not in c.get("reason", "")}


def race_marks(path):
    """(key, label, detail) of the race's marks, each under the key whose run_start came last."""
    out, key = [], "?"
    for _, _, label, det in (marks(path) if os.path.exists(path) else []):
        if label == "run_start":
            m = re.search(r"M=(\d+),N=(\d+),K=(\d+)", det)
            key = "%sx%sx%s" % m.groups() if m else det[:30]
        elif label in ("race_owed", "race_owed_by", "race_cover", "race_stop"):
            out.append((key, label, det))
    return out


def main():
    walls = {}
    for line in open(os.path.join(W, "walls.txt")):
        n, rc, s, e = line.split()
        walls[n] = (int(rc), float(e) - float(s))
    suites = [n for n in walls if "_suite_" in n]
    cold = {}
    for n in suites:
        if "_suite_cold_" in n:
            cold[n.split("_suite_")[0]] = {short(d["key"]): reached(d) for d in docs(os.path.join(W, n + ".json"))}
    print("run | wall s (rc) | compiled | per key: reached/compiled/hits")
    for n in suites:
        ds = docs(os.path.join(W, n + ".json"))
        rc, wall = walls[n]
        per = " ".join("%s %d/%d/%d" % (short(d["key"]), d["search"]["reached"], d["search"]["compiled"],
                                        d["search"]["store_hits"]) for d in ds if "search" in d)
        comp = sum(d["search"]["compiled"] for d in ds if "search" in d)
        print("%s | %.2f (%d) | %d | %s" % (n, wall, rc, comp, per))
    print("\nrace marks (owed classes, coverage picks, stops) per run and key:")
    for n in suites:
        for key, label, det in race_marks(os.path.join(W, n + ".tl")):
            if label != "race_stop" or key.startswith("4096x6144"):
                print("  %s %s %s %s" % (n, key, label, det[:200]))
    print("\nconfigs a run reached that its build's cold run did not, per key:")
    for n in suites:
        if "_suite_cold_" in n:
            continue
        who = n.split("_suite_")[0]
        for d in docs(os.path.join(W, n + ".json")):
            extra = sorted(reached(d) - cold.get(who, {}).get(short(d["key"]), set()))
            if extra:
                print("  %s %s: %d beyond cold" % (n, short(d["key"]), len(extra)))
                for c in extra:
                    print("    " + c)


if __name__ == "__main__":
    main()
