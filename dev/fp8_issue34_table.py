#!/usr/bin/env python3
# fp8_issue34_table.py ONLY FILE...: gemm_bench outputs of two builds (ab_<build>_<process>.txt,
# each timing the ';'-separated ONLY configs at one or more shapes: the pick as "ktune", the others
# as twinN, cuBLASLt #0 as the peer) -> per shape and config the flush-mode median per process and
# build, and new / base per process pair (dev/fp8_issue34_device.sh, issue 34).
import re, sys, statistics as st
norm = lambda c: ','.join(sorted(kv for kv in c.split(',') if not kv.startswith('KIND=')))
only = [norm(c) for c in sys.argv[1].split(';')]
def short(c):
    g = lambda k: re.search(k + r'=(\d+)', c).group(1)
    return ('P' if g('PINGPONG') == '1' else 'C') + g('BLOCK_N') + '_E' + g('EPI_TMA') + '_K' + \
        g('SPLIT_K') + ('_CL' + g('CLUSTER_M') if g('CLUSTER_M') != '1' else '')
t = {}  # (shape, build, process) -> {config: us}
for f in sys.argv[2:]:
    m = re.search(r'ab_(\w+?)_(\d+)\.txt$', f)
    txt = open(f).read()
    twins = {(s, n): norm(c) for s, n, c in
             re.findall(r'^TWIN gemm (\S+)/flush (twin\d+) tma:(\S+)', txt, re.M)}
    for s, name, us in re.findall(r'^RESULT gemm (\S+)/flush (\S+) ([\d.]+)', txt, re.M):
        tw = {n: c for (ss, n), c in twins.items() if ss == s}
        pick = [c for c in only if c not in tw.values()]
        if name == 'ktune' and len(pick) == 1: cfg = short(pick[0])
        elif name in tw: cfg = short(tw[name])
        elif name.startswith('cublaslt'): cfg = name
        else: continue
        t.setdefault((s, m.group(1), int(m.group(2))), {})[cfg] = float(us)
for s in sorted({k[0] for k in t}):
    procs = sorted({p for ss, _, p in t if ss == s})
    print(f'== {s} (flush medians us)')
    print('config        ' + '  '.join(f'base p{p} / new p{p}' for p in procs) +
          '   new/base per pair')
    for c in sorted({k for (ss, _, _), r in t.items() if ss == s for k in r}):
        cells, ratios = [], []
        for p in procs:
            b, n = t.get((s, 'base', p), {}).get(c), t.get((s, 'new', p), {}).get(c)
            cells.append(f'{b or 0:7.1f} / {n or 0:7.1f}')
            if b and n: ratios.append(n / b)
        r = ' '.join(f'{x:.4f}' for x in ratios)
        print(f'{c:13s} ' + '  '.join(cells) + f'   {r}' +
              (f'  median {st.median(ratios):.4f}' if ratios else ''))
