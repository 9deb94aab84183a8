#!/usr/bin/env python3
"""fp8_wave2_table.py DIR: dev/fp8_wave2_device.sh's tables (issue 34). (1) per build and process
(ab_<build>_<p>.txt, gemm_bench RESULT lines, 4096^3 flush medians): the 128x256 EPI_TMA 2 winner
(ktune), its CLUSTER_M 2 twin (twin1) and the EPI_TMA 1 control (twin2), each over the control and
over the best cuBLASLt algorithm of its own process, then each build over base per round;
(2) the wave probes' slowest compile and rusage sums (cs_<env>_1_<i>.txt)."""
import glob, os, re, statistics as st, sys

w = sys.argv[1]
R = {}
for f in glob.glob(f"{w}/ab_*_*.txt"):
    b, p = re.search(r"ab_(\w+?)_(\d+)\.txt$", f).groups()
    for who, med in re.findall(r"^RESULT gemm NT_4096x4096x4096/flush (\S+) ([\d.]+)", open(f).read(), re.M):
        R[(b, int(p), who)] = float(med)
builds = ["base", "c1", "m1", "both"]
ps = sorted({p for _, p, _ in R})
for who, name in (("ktune", "B (E2)"), ("twin1", "CL2 (E2)"), ("twin2", "E1 control")):
    print(f"{name:11s} raw us  " + "  ".join(
        f"{b}: " + " ".join(f"{R[(b, p, who)]:.2f}" for p in ps if (b, p, who) in R) for b in builds))
for peer in ("twin2", "cublaslt_best"):
    for who, name in (("ktune", "B"), ("twin1", "CL2")):
        rel = lambda b, p: R[(b, p, who)] / R[(b, p, peer)]
        for b in builds[1:]:
            r = [rel(b, p) / rel("base", p) for p in ps if (b, p, who) in R and ("base", p, who) in R
                 and (b, p, peer) in R and ("base", p, peer) in R]
            if r:
                print(f"{name:3s} over {peer:13s} {b:4s}/base: " + " ".join(f"{x:.4f}" for x in r) +
                      f"  median {st.median(r):.4f} [{min(r):.4f}, {max(r):.4f}] ({sum(x > 1 for x in r)} of {len(r)} > 1)")
for e in ("plain", "huge"):
    fs = glob.glob(f"{w}/cs_{e}_1_*.txt")
    if not fs:
        continue
    walls, ru = [], []
    for f in fs:
        t = open(f).read()
        m = re.search(r"^SPLIT full \d+ \d+ ([\d.]+)", t, re.M)
        if m: walls.append(float(m.group(1)))
        m = re.search(r"^RU ([\d.]+) ([\d.]+) (\d+) (\d+)", t, re.M)
        if m: ru.append(tuple(float(x) for x in m.groups()))
    print(f"wave {e}: max {max(walls):.0f} ms, mean {st.mean(walls):.0f} ms; user {sum(r[0] for r in ru):.2f} s, "
          f"sys {sum(r[1] for r in ru):.2f} s, minflt {sum(r[2] for r in ru):.0f}, max rss {max(r[3] for r in ru) / 1024:.0f} MB")
