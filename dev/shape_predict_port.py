"""A Python copy of autotune/predict.cc's rule (indexEntries, predict: the vote, the bracketing
and the upper-bracket rules), for replaying rules offline on a training database and held-out rows
(dev/shape_verify_check.py). index(db, "shipped") scores the default at a tuned key by its
first-pass median only (the rule before issue 35's tenth pass); index(db, "finalists") also by the
tuning's finalist comparison, as predict.cc does now. Every config counts as applicable (the
held-out rows' recorded predictions are reproduced exactly on seed 9: dev/shape_verify_check.py
checks it). Not a measurement: a replay of recorded times.
wide_tile_pick and row_tiles: predict.cc's wide-tile rule (wideTilePick) over a held-out row's cuBLASLt
ids (dev/shape_tile_check.py)."""
import math
import os
import re

# predict.h / guided.h constants.
CATEGORY_DISTANCE = 4.0   # guided::kCategoryDistance
NEIGHBOURS = 4            # kNeighbours
MAX_DISTANCE = 4.0        # kMaxDistance
UNREACHED = 0.5           # kUnreachedScore
MARGIN = 0.02             # kDefaultMargin
MIN_AGREEMENT = 0.5       # kMinAgreement
UPPER_SLACK = 0.02        # kUpperSlack
NEAR_BEST = 0.97          # "within 3% of the fastest"
DEF = "default"           # kDefaultClass


def parse(key):
    """(names, log2(1 + |v|) per field, category per field, is-numeric per field)."""
    names, num, cat, is_num = [], [], [], []
    for kv in key.split(","):
        name, v = kv.split("=", 1)
        names.append(name)
        try:
            num.append(math.log2(1 + abs(int(v))))
            cat.append("")
            is_num.append(True)
        except ValueError:
            num.append(0.0)
            cat.append(v)
            is_num.append(False)
    return names, num, cat, is_num


def dist(a, b):
    far = CATEGORY_DISTANCE * CATEGORY_DISTANCE
    sq = 0.0
    for i, name in enumerate(a[0]):
        if name not in b[0]:
            sq += far
            continue
        j = b[0].index(name)
        if a[3][i] and b[3][j]:
            sq += (a[1][i] - b[1][j]) ** 2
        elif a[3][i] != b[3][j] or a[2][i] != b[2][j]:
            sq += far
    sq += far * sum(1 for name in b[0] if name not in a[0])
    return math.sqrt(sq)


def timed(c):
    return c["stats"].get("runs", 0) > 0 and c["stats"].get("median_ms", 0) > 0


def default_ms(e):
    vd = e.get("vs_default") or {}
    if not vd.get("baseline"):
        return 0
    for c in e["candidates"]:
        if c["config"] == vd["baseline"] and c["source"] == vd.get("baseline_source") and timed(c):
            return c["stats"]["median_ms"]
    return vd["baseline_ms"] if vd.get("baseline_ms", 0) > 0 and vd.get("ratio", 0) > 0 else 0


def index(db, mode="finalists"):
    """The measured entries as neighbours: key, parsed key, scores (config -> fastest / its median,
    JIT only, plus DEF), fastest median, winner."""
    out = []
    for key, e in db["devices"][0]["entries"].items():
        if not e.get("winner") or e.get("predicted") or e.get("unverified"):
            continue
        ok = [c["stats"]["median_ms"] for c in e["candidates"] if c["status"] == "ok" and timed(c)]
        if not ok:
            continue
        fastest = min(ok)
        sc = {}
        for c in e["candidates"]:
            if c["source"] != "jit" or not timed(c):
                continue
            s = fastest / c["stats"]["median_ms"]
            if c["status"] != "ok":  # stopped early: its median is a lower bound
                s = min(s, UNREACHED)
            sc.setdefault(c["config"], min(1.0, s))
        d = default_ms(e)
        if d > 0:
            s = min(1.0, fastest / d)
            vd = e.get("vs_default") or {}
            if mode == "finalists" and vd.get("rounds", 0) > 0 and vd.get("baseline_ms", 0) > 0 \
                    and vd.get("ratio", 0) > 0:
                s = max(s, min(1.0, vd["ratio"]))  # winner / default in the finalists' rounds
            sc.setdefault(DEF, s)
        out.append(dict(key=key, p=parse(key), sc=sc, fastest=fastest, winner=e["winner"]))
    return out


def sc_at(n, cls):
    """(score, known) of `cls` at neighbour `n`."""
    return (n["sc"][cls], True) if cls in n["sc"] else (UNREACHED, False)


def along(a, b):
    """The index of the one numeric field a and b differ in (-1: none), None when not one axis."""
    if a[0] != b[0] or a[3] != b[3] or a[2] != b[2]:
        return None
    axis = -1
    for i in range(len(a[1])):
        if not a[3][i] or a[1][i] == b[1][i]:
            continue
        if axis >= 0:
            return None
        axis = i
    return axis


def bracketing(idx, pk):
    """The nearest tuned key below and above `pk` along one field, or None."""
    side, gap, axis = [None, None], [0.0, 0.0], -1
    for n in idx:
        a = along(pk, n["p"])
        if a is None or a < 0 or (axis >= 0 and a != axis):
            continue
        axis = a
        d = n["p"][1][a] - pk[1][a]
        if abs(d) >= MAX_DISTANCE:
            continue
        s = 1 if d > 0 else 0
        if side[s] is None or abs(d) < gap[s]:
            side[s], gap[s] = n, abs(d)
    return side if side[0] and side[1] else None


def bracket_rule(idx, pk, applicable):
    side = bracketing(idx, pk)
    if not side:
        return None
    best, best_gain = None, 1 + MARGIN
    for cls in sorted(side[0]["sc"]):
        if cls == DEF:
            continue
        lg, ok = 0.0, True
        for n in side:
            (sc, kc), (sd, kd) = sc_at(n, cls), sc_at(n, DEF)
            ok = kc and kd and sd > 0 and sc >= sd * (1 + MARGIN) and sc >= NEAR_BEST
            if not ok:
                break
            lg += 0.5 * math.log(sc / sd)
        if ok and math.exp(lg) > best_gain and applicable(cls):
            best, best_gain = cls, math.exp(lg)
    return best


def upper_rule(idx, pk, applicable):
    side = bracketing(idx, pk)
    if not side:
        return None
    lo, hi = side
    sd, kd = sc_at(hi, DEF)
    if not kd or sd <= 0:
        return None
    best, best_s = None, 0.0
    for cls in sorted(hi["sc"]):
        s = hi["sc"][cls]
        if cls == DEF or s <= UNREACHED or s <= best_s:
            continue
        if hi["fastest"] / s > (1 + UPPER_SLACK) * lo["fastest"] or s < sd * (1 + MARGIN):
            continue
        if applicable(cls):
            best, best_s = cls, s
    return best


def predict(idx, key, applicable=lambda cls: True):
    """(JIT config or None for the default, rule: "vote", "bracketing", "upper" or "")."""
    pk = parse(key)
    near = [(dist(pk, n["p"]), i, n) for i, n in enumerate(idx) if n["key"] != key]
    near = sorted((x for x in near if x[0] < MAX_DISTANCE), key=lambda x: (x[0], x[1]))[:NEIGHBOURS]
    if not near:
        return None, ""
    classes = {DEF}.union(*(n["sc"] for _, _, n in near))
    wsum = sum(1 / (1 + d) for d, _, _ in near)

    def score(cls):
        acc = wk = 0.0
        for d, _, n in near:
            s, known = sc_at(n, cls)
            if cls == DEF and not known:
                continue
            acc += s / (1 + d)
            wk += 1 / (1 + d)
        return acc / wk if wk > 0 else UNREACHED

    def agreement(cls):
        return sum(1 / (1 + d) for d, _, n in near
                   if sc_at(n, cls)[1] and sc_at(n, cls)[0] >= NEAR_BEST) / wsum

    def consistent(cls):
        s, known = sc_at(near[0][2], cls)
        if s < NEAR_BEST or not known:
            return False
        return not any(kc and kd and sc < sd for (sc, kc), (sd, kd) in
                       ((sc_at(n, cls), sc_at(n, DEF)) for _, _, n in near))

    best, best_score = None, score(DEF) * (1 + MARGIN)
    for cls in sorted(classes - {DEF}):
        s = score(cls)
        if s > best_score and agreement(cls) >= MIN_AGREEMENT and consistent(cls) and applicable(cls):
            best, best_score = cls, s
    if best:
        return best, "vote"
    if c := bracket_rule(idx, pk, applicable):
        return c, "bracketing"
    if c := upper_rule(idx, pk, applicable):
        return c, "upper"
    return None, ""


def key_of(m, n, k):
    """The database key of a held-out row (bf16 NT, aligned, the bench's shapes)."""
    return f"layout=NT,ab=bf16,c=bf16,M={m},N={n},K={k},lda={k},ldb={k},ldc={n},epi=16"


# predict.h's wide-tile constants.
WIDE_MIN_ROWS = 128       # kWideTileMinRows
WIDE_COLS = 128           # kWideTileCols
WIDE_PAD_SLACK_PCT = 5    # kWideTilePadSlackPct
WIDE_FILL = 7 / 8         # kWideTileFillNum / kWideTileFillDen
RACE_VENDOR = 3           # kRaceVendor
SMS = 132                 # the held-out rows' device (H100 and H200 SXM both have 132 SMs)


def wide_tile_pick(m, n, sms, tiles, m0=WIDE_MIN_ROWS, slack_pct=WIDE_PAD_SLACK_PCT, fill=WIDE_FILL,
                   deep=False):
    """predict::wideTilePick: tiles = [(rows along M, cols along N, split-K count)] of ranks 0..
    (rows 0: unknown); the index of the pick, 0 to keep the default. The other arguments are the
    offline variants (dev/shape_tile_check.py --rotate): the defaults are the library's rule; deep:
    look past the first wide rank."""
    if not tiles or m < m0:
        return 0
    r0, c0, s0 = tiles[0]
    if r0 <= 0 or c0 <= 0 or c0 >= WIDE_COLS or s0 <= 0:
        return 0
    ctas = -(-n // c0) * -(-m // r0) * s0
    if ctas < fill * sms:  # the integer form of predict.cc's ctas * den >= sms * num
        return 0
    pad = lambda rows: -(-m // rows) * rows  # noqa: E731
    for i in range(1, min(len(tiles), RACE_VENDOR + 1)):
        rows, cols, _ = tiles[i]
        if rows <= 0 or cols < WIDE_COLS:
            continue
        if pad(rows) * 100 <= pad(r0) * (100 + slack_pct):
            return i
        if not deep:
            return 0
    return 0


_TILES = None


def lt_tiles():
    """cublasLtMatmulTile_t id -> (m, n), from ops/vendor/cublaslt_tiles.cc (the library's table)."""
    global _TILES
    if _TILES is None:
        src = os.path.join(os.path.dirname(__file__), "..", "ops", "vendor", "cublaslt_tiles.cc")
        _TILES = {int(i): (int(a), int(b)) for i, a, b in re.findall(r"\{(\d+), (\d+), (\d+)\}", open(src).read())}
    return _TILES


def row_tiles(r):
    """[(rows along M, cols along N, split-K count)] of a held-out row's cuBLASLt ranks r0, r1, ...
    (its vendor_ids). The algorithm's 4-byte words, big-endian, hold its CUBLASLT_ALGO_CONFIG_TILE_ID
    (word 0) and CUBLASLT_ALGO_CONFIG_SPLITK_NUM (word 2: 1, 2, 3, 4 or 6 on seeds 9-12, and above 1
    exactly where word 5, the reduction scheme, is 2, CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE). Read
    off the ids offline: the library asks cublasLtMatmulAlgoConfigGetAttribute. The tile's m runs
    along N."""
    out = []
    ids = r.get("vendor_ids", {})
    for i in range(RACE_VENDOR + 1):
        vid = ids.get(f"r{i}")
        if not vid:
            break
        h = vid.split("algo=")[1]
        m, n = lt_tiles().get(int(h[:8], 16), (0, 0))
        out.append((n, m, int(h[16:24], 16)))
    return out
