#!/usr/bin/env python3
"""Where the warps of a kernel wait, by SASS instruction, from ncu's source page.

  ncu -i REP --page source --csv --print-source sass > src.csv; python3 dev/ncu_stalls.py src.csv

Every instruction's warp-stall samples (PC sampling) are summed into classes that tell the TMA
GEMM's waits apart: the consumers' wait on a `full` mbarrier (a try_wait whose next tensor
instruction is a wgmma: the producer has not delivered the stage), the producer's wait on `empty`
(a try_wait followed by a bulk tensor load), the wgmma wait (WARPGROUP.DEPBAR: serialisation on
the tensor pipe), named barriers (BAR: ping-pong's order barrier, the epilogue's), the wgmma issue
itself, and the rest. One table per kernel in the file (ncu prints one block per profiled launch).
"""
import csv
import re
import sys


def classify(rows, i):
    # A warp stalled on a barrier or an mbarrier's try_wait is sampled at the instruction after it
    # (the try_wait's result branch, the first instruction behind a bar.sync): look one or two back.
    op = rows[i][1]
    if i > 0 and "GMMA" not in op and "DEPBAR" not in op:
        prev = rows[i - 1][1]
        if prev.startswith("BAR") and "BAR.ARV" not in prev:
            return "named barrier (BAR): waiting behind it"
        if "TRYWAIT" in prev:
            return classify(rows, i - 1)
    if "DEPBAR" in op and "WARPGROUP" in op:
        return "wgmma wait (WARPGROUP.DEPBAR)"
    if op.startswith("HGMMA") or op.startswith("QGMMA") or "GMMA" in op.split(" ")[0]:
        return "wgmma issue (HGMMA)"
    if "TRYWAIT" in op or "PHASECHK" in op:
        for _, nxt, _ in rows[i + 1:i + 60]:
            if "GMMA" in nxt.split(" ")[0] or "WARPGROUP.ARRIVE" in nxt:
                return "mbarrier wait -> wgmma (consumer: full)"
            if "UTMALDG" in nxt or "UBLKCP" in nxt or "ARRIVE.TRANS64" in nxt or "EXPECT" in nxt:
                return "mbarrier wait -> TMA load (producer: empty)"
        return "mbarrier wait (other)"
    if op.startswith("BAR") or op.startswith("WARPSYNC") or "BAR.SYNC" in op or "BAR.ARV" in op:
        return "named barrier (BAR)"
    if "UTMASTG" in op or "UTMACMDFLUSH" in op or "DEPBAR" in op:
        return "TMA store / bulk wait"
    if op.startswith("STS") or op.startswith("STG") or op.startswith("LDG") or op.startswith("LDS"):
        return "ld/st (epilogue)"
    return "other"


def tables(path):
    with open(path, newline="") as f:
        text = f.read()
    # ncu prints one CSV block per kernel, each starting with its own header line.
    blocks = re.split(r'\n(?=(?:"?Kernel Name|"?#|"?Address"?,))', text)
    for block in blocks:
        lines = [ln for ln in block.splitlines() if ln.strip()]
        hdr = next((k for k, ln in enumerate(lines) if '"Source"' in ln or ln.startswith("Address")), None)
        if hdr is None:
            if lines:
                print(lines[0][:160])
            continue
        reader = list(csv.reader(lines[hdr:]))
        head = reader[0]
        try:
            src = head.index("Source")
        except ValueError:
            continue
        samp = next((k for k, h in enumerate(head) if "Warp Stall Sampling (All" in h), None)
        nis = next((k for k, h in enumerate(head) if "Warp Stall Sampling (Not" in h), None)
        if samp is None:
            print("no stall-sampling column in:", ",".join(head)[:300])
            continue
        rows = []
        for r in reader[1:]:
            if len(r) <= max(src, samp):
                continue
            try:
                rows.append((float(r[samp] or 0), r[src].strip(), float(r[nis] or 0) if nis is not None else 0.0))
            except ValueError:
                continue
        total = sum(r[0] for r in rows) or 1.0
        sums = {}
        for i in range(len(rows)):
            c = classify(rows, i)
            a, n = sums.get(c, (0.0, 0.0))
            sums[c] = (a + rows[i][0], n + rows[i][2])
        for ln in lines[:hdr]:
            print(ln[:200])
        print(f"{'class':48} {'samples %':>10} {'not issued %':>13}")
        for c, (a, n) in sorted(sums.items(), key=lambda kv: -kv[1][0]):
            print(f"{c:48} {100 * a / total:10.1f} {100 * n / total:13.1f}")
        print("top instructions (samples %, SASS):")
        order = sorted(range(len(rows)), key=lambda k: -rows[k][0])[:16]
        for k in order:
            prev = rows[k - 1][1][:40] if k > 0 else ""
            print(f"  {100 * rows[k][0] / total:5.1f}  {rows[k][1][:70]:70}  after: {prev}")
        print()


if __name__ == "__main__":
    for p in sys.argv[1:]:
        tables(p)
