#!/usr/bin/env python3
"""The floor probe's table (dev/warm_floor_probe.cc's FLOOR lines, one column per process run):
ms of each start-up step. Other lines are printed as they are.
    python3 dev/floor_table.py OUT/floor.txt"""
import sys
from collections import defaultdict
rows, order = defaultdict(dict), []
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) < 4 or p[1] != "FLOOR":
        print(line.rstrip()); continue
    step, v = " ".join(p[2:-1]), p[-1]
    try: v = float(v)
    except ValueError: continue
    if step not in order: order.append(step)
    rows[p[0]][step] = v
runs = list(rows)
print(f"{'step':26}" + "".join(f"{r:>9}" for r in runs))
for s in order:
    print(f"{s:26}" + "".join(f"{rows[r].get(s, float('nan')):9.1f}" for r in runs))
