#!/usr/bin/env python3
# ab_table.py ONLY FILE...: gemm_bench outputs of two builds (files named ab_<build>_<process>.txt,
# each timing the ';'-separated ONLY configs: the pick as "ktune", the others as twinN) -> per
# config the flush-mode median per process and build, and new / base per process pair
# (dev/fp8_compile_ab_device.sh).
import re, sys, statistics as st
norm = lambda c: ','.join(sorted(kv for kv in c.split(',') if not kv.startswith('KIND=')))
only = [norm(c) for c in sys.argv[1].split(';')]
short = lambda c: ('P' if 'PINGPONG=1' in c else 'C') + re.search(r'BLOCK_N=(\d+)', c).group(1) + \
    '_E' + re.search(r'EPI_TMA=(\d)', c).group(1) + '_K' + re.search(r'SPLIT_K=(\d)', c).group(1)
t = {}  # (build, process) -> {config: us}
for f in sys.argv[2:]:
    m = re.search(r'ab_(\w+?)_(\d+)\.txt$', f)
    txt = open(f).read()
    twins = {n: norm(c) for n, c in re.findall(r'^TWIN gemm \S+/flush (twin\d+) tma:(\S+)', txt, re.M)}
    pick = [c for c in only if c not in twins.values()]
    row = {}
    for name, us in re.findall(r'^RESULT gemm \S+/flush (\S+) ([\d.]+)', txt, re.M):
        cfg = pick[0] if name == 'ktune' and len(pick) == 1 else twins.get(name)
        if cfg: row[short(cfg)] = float(us)
    t[(m.group(1), int(m.group(2)))] = row
procs = sorted({p for _, p in t})
print('config   ' + '  '.join(f'base p{p} / new p{p}' for p in procs) + '   new/base per pair')
for c in sorted({k for r in t.values() for k in r}):
    cells, ratios = [], []
    for p in procs:
        b, n = t.get(('base', p), {}).get(c), t.get(('new', p), {}).get(c)
        cells.append(f'{b or 0:7.1f} / {n or 0:7.1f}')
        if b and n: ratios.append(n / b)
    r = ' '.join(f'{x:.4f}' for x in ratios)
    print(f'{c:9s}' + '  '.join(cells) + f'   {r}' + (f'  median {st.median(ratios):.4f}' if ratios else ''))
