#!/usr/bin/env python3
"""fp8_beta_norm.py ONLY FILE...: dev/fp8_issue34_table.py's A/B (ab_<build>_<process>.txt) with each
config's flush median divided by a peer's in the same process (cuBLASLt #0 and the best cuBLASLt
algorithm, timed in the same interleaved rounds), then new / base per process pair: a process-wide
shift (every kernel of a process 5-20% slower, seen on the lent H200) cancels out. Issue 34."""
import re, statistics as st, sys
only = sys.argv[1]
t = {}
for f in sys.argv[2:]:
    m = re.search(r'ab_(\w+?)_(\d+)\.txt$', f)
    txt = open(f).read()
    norm = lambda c: ','.join(sorted(kv for kv in c.split(',') if not kv.startswith('KIND=')))
    cfgs = [norm(c) for c in only.split(';')]
    twins = {(s, n): norm(c) for s, n, c in re.findall(r'^TWIN gemm (\S+)/flush (twin\d+) tma:(\S+)', txt, re.M)}
    def short(c):
        g = lambda k: re.search(k + r'=(\d+)', c).group(1)
        cl = re.search(r'CLUSTER_M=(\d+)', c)  # CLUSTER_M twins must not share a name
        return (('P' if g('PINGPONG') == '1' else 'C') + g('BLOCK_N') + '_E' + g('EPI_TMA') + '_K' +
                g('SPLIT_K') + ('_CL' + cl.group(1) if cl and cl.group(1) != '1' else ''))
    for s, name, us in re.findall(r'^RESULT gemm (\S+)/flush (\S+) ([\d.]+)', txt, re.M):
        tw = {n: c for (ss, n), c in twins.items() if ss == s}
        pick = [c for c in cfgs if c not in tw.values()]
        if name == 'ktune' and len(pick) == 1: cfg = short(pick[0])
        elif name in tw: cfg = short(tw[name])
        elif name.startswith('cublaslt'): cfg = name
        else: continue
        t.setdefault((s, m.group(1), int(m.group(2))), {})[cfg] = float(us)
for peer in ('cublaslt_best', 'cublaslt0'):
    print(f'== new / base per process pair, each config over {peer} of its process')
    allr = {}
    for s in sorted({k[0] for k in t}):
        procs = sorted({p for ss, _, p in t if ss == s})
        for c in sorted({k for (ss, _, _), r in t.items() if ss == s for k in r if not k.startswith('cublas')}):
            rs = []
            for p in procs:
                b, n = t.get((s, 'base', p), {}), t.get((s, 'new', p), {})
                if c in b and c in n and peer in b and peer in n:
                    rs.append((n[c] / n[peer]) / (b[c] / b[peer]))
            allr.setdefault(c, []).extend(rs)
            print(f'{s:22} {c:12} ' + ' '.join(f'{x:.4f}' for x in rs) +
                  (f'   median {st.median(rs):.4f} [{min(rs):.4f}, {max(rs):.4f}]' if rs else ''))
    for c, rs in allr.items():
        print(f'all keys {c:12} median {st.median(rs):.4f} over {len(rs)} pairs, {sum(r < 1 for r in rs)} below 1')
