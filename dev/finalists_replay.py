#!/usr/bin/env python3
"""Replays the finalists' stop rules (autotune/finalists_decide.cc) on recorded timelines.

Each KTUNE_TIMELINE file (dev/warm_time_device.sh's *.tl) holds, per key, the finalists' rounds
("finalists_round r: n finalists") and the worker's bench lines with each finalist's median. This
script rebuilds every stage's per-round medians and runs the stage's loop on them under two rule
sets: "old" (finalistsSettled / CanStillWin / Leaving as before issue 34's twenty-fourth session)
and "new" (plus finalistsDecided with --loss and the dominance rule of finalistsLeaving). A replay
takes the recorded rounds as they came (a finalist the new rules keep longer than the recording
did ends the replay: "n/a"). Each config's "truth" is its ratio to the default pooled over every
round of every file given, so a decision's regret is truth(winner) / truth(best finalist).
  python3 dev/finalists_replay.py [--loss 0.002] FILE.tl ...
"""
import argparse
import collections
import math
import re

T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
       2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
       2.060, 2.056, 2.052, 2.048, 2.045, 2.042]
MIN_ROUNDS, TIE, WIN_CHANCE, UNINFORMED = 3, 0.005, 0.05, 0.05


def t95(dof):
    return 0 if dof < 1 else (T95[dof - 1] if dof <= 30 else 1.96)


def complete(t):
    return bool(t) and all(x >= 0 for x in t)


def logs(a, b):
    return [math.log(max(x, 1e-9) / max(y, 1e-9)) for x, y in zip(a, b)]


def mean_sd(l):
    n = len(l)
    m = sum(l) / n
    return m, (math.sqrt(sum((x - m) ** 2 for x in l) / (n - 1)) if n > 1 else 0.0)


def paired(a, b):
    l = logs(a, b)
    if not l:
        return 1.0, 1.0, 1.0
    m, sd = mean_sd(l)
    half = math.inf if len(l) < 2 else t95(len(l) - 1) * sd / math.sqrt(len(l))
    return math.exp(m), math.exp(m - half), math.exp(m + half)


def settled(times, b, margin):
    if len(times[0]) < MIN_ROUNDS:
        return False
    ref, refp, all_kept = -1, None, True
    for i, t in enumerate(times):
        if i == b or not complete(t):
            continue
        p = paired(t, times[b])
        all_kept &= p[1] >= 1 - margin
        if ref < 0 or p[0] < refp[0]:
            ref, refp = i, p
    if ref < 0 or all_kept:
        return True
    if refp[2] >= 1 - margin:
        return False
    return all(paired(t, times[ref])[1] >= 1 - TIE for i, t in enumerate(times)
               if i not in (b, ref) and complete(t))


def decide(times, b, margin):
    ch, bp = -1, None
    for i, t in enumerate(times):
        if i != b and complete(t):
            p = paired(t, times[b])
            if ch < 0 or p[0] < bp[0]:
                ch, bp = i, p
    if ch < 0 or bp[0] >= 1 - margin or bp[2] >= 1:
        return b
    return ch


def chance(l, margin, planned, widen, below):
    """winChance (widen False, below False) / holdChance (widen True, below True)."""
    n, left = len(l), planned - len(l)
    if n < 2 or left <= 0:
        return 1.0
    m, sd = mean_sd(l)
    if widen:
        sd *= t95(n - 1) / 1.96
    bar = math.log(1 - margin)
    need = bar if below else min(bar, -t95(planned - 1) * sd / math.sqrt(planned))
    rest = (planned * need - n * m) / left
    if sd <= 0:
        return 1.0 if (m < rest if below else rest > m) else 0.0
    z = (rest - m) / (sd / math.sqrt(left))
    return 0.5 * math.erfc(-z / math.sqrt(2))


def can_win(times, b, i, margin, planned):
    if i == b or not complete(times[i]):
        return False
    l = logs(times[i], times[b])
    m, bar = sum(l) / len(l), math.log(1 - margin)
    med = sorted(l)[len(l) // 2] if len(l) % 2 else sum(sorted(l)[len(l) // 2 - 1:len(l) // 2 + 1]) / 2
    p = paired(times[i], times[b])
    return (m < bar or med < bar or math.log(p[2] / p[0]) > UNINFORMED or
            chance(l, margin, planned, False, False) >= WIN_CHANCE)


def worth_more(times, b, margin):
    ps = [paired(t, times[b]) for i, t in enumerate(times) if i != b and complete(t)]
    best = min(ps, default=None)
    return best is not None and best[0] < 1 - margin and best[2] >= 1


def expected_loss(a, w):
    l = logs(a, w)
    if len(l) < 2:
        return math.inf
    m, sd = mean_sd(l)
    se = sd / math.sqrt(len(l)) * t95(len(l) - 1) / 1.96
    if se <= 0:
        return max(0.0, -m)
    z = m / se
    return se * math.exp(-z * z / 2) / math.sqrt(2 * math.pi) - m * 0.5 * math.erfc(z / math.sqrt(2))


def decided(times, b, margin, planned, loss):
    if len(times[0]) < MIN_ROUNDS:
        return False
    w = decide(times, b, margin)
    if w == b or chance(logs(times[w], times[b]), margin, planned, True, True) < 1 - WIN_CHANCE:
        return False
    return all(expected_loss(t, times[w]) <= loss for i, t in enumerate(times)
               if i not in (b, w) and complete(t))


def leaving(times, b, margin, planned, out, new):
    if len(times[b]) < MIN_ROUNDS:
        return []
    live = lambda i: not out[i] and complete(times[i])
    gone, ref, ref_r, another = [], -1, 0.0, False
    for i in range(len(times)):
        if i == b:
            continue
        if not can_win(times, b, i, margin, planned):
            if live(i):
                gone.append(i)
            continue
        another = True
        r = paired(times[i], times[b])[0] if live(i) else None
        if r is not None and (ref < 0 or r < ref_r):
            ref, ref_r = i, r
    if not another:
        return []
    if new and ref >= 0:
        gone += [i for i in range(len(times)) if i not in (b, ref) and live(i) and i not in gone
                 and paired(times[i], times[ref])[1] > 1]
    return gone


def replay(full, b, new, loss, margin=0.01, planned=6, extra=6):
    """(rounds, winner, finalist-rounds timed) or None where the recording ran out."""
    n = len(full)
    times, out, cost = [[] for _ in range(n)], [False] * n, 0
    while True:
        done = len(times[0])
        if done and (settled(times, b, margin) or (new and decided(times, b, margin, planned, loss))):
            break
        if done >= planned:
            if done >= planned + extra or not worth_more(times, b, margin):
                break
        elif done >= MIN_ROUNDS and not any(can_win(times, b, i, margin, planned) for i in range(n)):
            break
        horizon = planned if done < planned else planned + extra
        for j in leaving(times, b, margin, horizon, out, new):
            out[j] = True
        for j in range(n):
            if out[j]:
                times[j].append(-1.0)
                continue
            if done >= len(full[j]) or full[j][done] < 0:
                return None
            times[j].append(full[j][done])
            cost += 1
    return len(times[0]), decide(times, b, margin), cost


def stages(path):
    """Per finalists stage of a timeline: (key, names, per-finalist medians per round)."""
    out, cur, key = [], None, ''
    for line in open(path):
        p = line.split(' ', 3)
        if len(p) < 3:
            continue
        lab, rest = p[2], (p[3] if len(p) > 3 else '')
        if lab == 'run_start':
            key, cur = rest.strip(), None
        elif lab == 'finalists_round':
            if rest.startswith('0:'):
                cur = {'key': key, 'rounds': []}
                out.append(cur)
            if cur is not None:
                cur['rounds'].append({})
        elif lab == 'finalists_check' and cur is not None:
            cur = None
        elif lab == 'bench' and cur is not None:
            m = re.search(r'median ([0-9.]+) status (\d+) \| (.*)$', rest)
            if m and m.group(2) == '0':
                cur['rounds'][-1][m.group(3).strip()] = float(m.group(1))
    for c in out:
        names = list(dict.fromkeys(k for r in c['rounds'] for k in r))
        yield c['key'], names, [[r.get(k, -1.0) for r in c['rounds']] for k in names]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--loss', type=float, default=0.002)
    ap.add_argument('files', nargs='+')
    a = ap.parse_args()
    cases = [(f, k, n, full) for f in a.files for k, n, full in stages(f)]
    pooled = collections.defaultdict(list)
    for _, key, names, full in cases:
        b = next((i for i, x in enumerate(names) if x.startswith('cublaslt:idx=0')), -1)
        for i, x in enumerate(names):
            if b >= 0:
                pooled[(key, x)] += logs(*zip(*[(u, v) for u, v in zip(full[i], full[b])
                                               if u > 0 and v > 0])) if any(
                    u > 0 and v > 0 for u, v in zip(full[i], full[b])) else []
    truth = {k: math.exp(sum(v) / len(v)) for k, v in pooled.items() if v}
    tot = collections.Counter()
    print('%-28s %-40s %6s %6s  %s' % ('file', 'key', 'old', 'new', 'regret old / new'))
    for f, key, names, full in cases:
        b = next((i for i, x in enumerate(names) if x.startswith('cublaslt:idx=0')), -1)
        if b < 0:
            continue
        r = [replay(full, b, new, a.loss) for new in (False, True)]
        if None in r:
            print('%-28s %-40s n/a' % (f.split('/')[-1][:28], key[29:69]))
            continue
        t = [truth.get((key, x), 1.0) for x in names]
        reg = [t[x[1]] / min(t) for x in r]
        tot['old'] += r[0][2]
        tot['new'] += r[1][2]
        print('%-28s %-40s %2d/%-3d %2d/%-3d  %.4f / %.4f' % (f.split('/')[-1][:28], key[29:69],
              r[0][0], r[0][2], r[1][0], r[1][2], reg[0], reg[1]))
    print('finalist-rounds timed: old %d, new %d' % (tot['old'], tot['new']))


if __name__ == '__main__':
    main()
