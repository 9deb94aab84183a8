"""Shared helpers of the held-out analysis scripts (dev/shape_*.py): the statistics the issue-35
tables use and the rows' time and race fields, written once."""
import math
import statistics as st


def gm(v):
    """Geometric mean; nan for an empty list."""
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float("nan")


def p95(v):
    """The 95th percentile as the tables take it: the ceil(0.95 n)-th smallest value."""
    v = sorted(v)
    return v[min(len(v) - 1, math.ceil(0.95 * len(v)) - 1)]


def times(r):
    """label -> ms (the default is r0: the rows label vendor picks by rank, whatever their role)."""
    return {lab: ms for _, lab, ms in r["times"]}


def race_pairs(rs, lo, hi, ranks):
    """Race vs re-timing over the rows whose default (r0) re-timed in (lo, hi] ms: per rank, the
    log of race time / re-timed time (bias), and for ranks other than r0 the pairs (log race
    rank/default, log re-timed rank/default)."""
    xs, ys, bias = [], [], {}
    for r in rs:
        race, t = dict(r.get("race", [])), times(r)
        if not race or not lo < t["r0"] <= hi or race.get("r0", 0) <= 0:
            continue
        for k in ("r0",) + tuple(ranks):
            if k in t and race.get(k, 0) > 0:
                bias.setdefault(k, []).append(math.log(race[k] / t[k]))
                if k != "r0":
                    xs.append(math.log(race[k] / race["r0"]))
                    ys.append(math.log(t[k] / t["r0"]))
    return xs, ys, bias


def corr(xs, ys):
    """Pearson correlation of two equally long lists."""
    mx, my = st.mean(xs), st.mean(ys)
    return sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / len(xs) / st.pstdev(xs) / st.pstdev(ys)
