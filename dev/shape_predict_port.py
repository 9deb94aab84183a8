"""A Python copy of autotune/predict.cc's rule (indexEntries, predict: the vote, the bracketing
and the upper-bracket rules), for replaying rules offline on a training database and held-out rows
(dev/shape_verify_check.py). index(db, "shipped") scores the default at a tuned key by its first-pass
median only (the rule before the tenth pass); index(db, "finalists") also by the tuning's finalist
comparison, as predict.cc does now. Every config counts as applicable (the held-out rows' recorded
predictions are reproduced exactly on seed 9: dev/shape_verify_check.py checks it).
Not a measurement: a replay of recorded times."""
import gzip, json, math
CAT = 4.0; KN = 4; KMAX = 4.0; UNR = 0.5; MARG = 0.02; AGREE = 0.5; USLACK = 0.02
DEF = "default"

def parse(key):
    names, num, st, isn = [], [], [], []
    for kv in key.split(","):
        n, v = kv.split("=", 1)
        try:
            x = int(v); names.append(n); num.append(math.log2(1 + abs(x))); st.append(""); isn.append(True)
        except ValueError:
            names.append(n); num.append(0.0); st.append(v); isn.append(False)
    return (names, num, st, isn)

def dist(a, b):
    sq = 0
    for i, n in enumerate(a[0]):
        if n not in b[0]: sq += CAT * CAT; continue
        j = b[0].index(n)
        if a[3][i] and b[3][j]: sq += (a[1][i] - b[1][j]) ** 2
        elif a[3][i] != b[3][j] or a[2][i] != b[2][j]: sq += CAT * CAT
    for n in b[0]:
        if n not in a[0]: sq += CAT * CAT
    return math.sqrt(sq)

def timed(c): return c["stats"].get("runs", 0) > 0 and c["stats"].get("median_ms", 0) > 0

def default_ms(e):
    vd = e.get("vs_default") or {}
    if not vd.get("baseline"): return 0
    for c in e["candidates"]:
        if c["config"] == vd["baseline"] and c["source"] == vd.get("baseline_source") and timed(c):
            return c["stats"]["median_ms"]
    return vd["baseline_ms"] if vd.get("baseline_ms", 0) > 0 and vd.get("ratio", 0) > 0 else 0

def index(db, mode="shipped"):
    out = []
    for key, e in db["devices"][0]["entries"].items():
        if not e.get("winner") or e.get("predicted") or e.get("unverified"): continue
        ok = [c["stats"]["median_ms"] for c in e["candidates"] if c["status"] == "ok" and timed(c)]
        if not ok: continue
        fastest = min(ok)
        sc = {}
        for c in e["candidates"]:
            if c["source"] != "jit" or not timed(c): continue
            s = fastest / c["stats"]["median_ms"]
            if c["status"] != "ok": s = min(s, UNR)
            sc.setdefault(c["config"], min(1.0, s))
        d = default_ms(e)
        if d > 0: sc.setdefault(DEF, min(1.0, fastest / d))
        vd = e.get("vs_default") or {}
        if mode == "finalists" and vd.get("rounds", 0) > 0 and vd.get("baseline_ms", 0) > 0 \
                and vd.get("ratio", 0) > 0 and DEF in sc:
            sc[DEF] = max(sc[DEF], min(1.0, vd["ratio"]))  # winner / default in the finalists' rounds
        w = e["winner"]
        out.append(dict(key=key, p=parse(key), sc=sc, fastest=fastest, winner=w))
    return out

def along(a, b):
    if a[0] != b[0] or a[3] != b[3] or a[2] != b[2]: return None
    ax = -1
    for i in range(len(a[1])):
        if not a[3][i] or a[1][i] == b[1][i]: continue
        if ax >= 0: return None
        ax = i
    return ax

def sc_at(n, cls):
    return (n["sc"][cls], True) if cls in n["sc"] else (UNR, False)

def bracketing(idx, pk):
    side = [None, None]; gap = [0, 0]; axis = -1
    for n in idx:
        a = along(pk, n["p"])
        if a is None or a < 0 or (axis >= 0 and a != axis): continue
        axis = a
        d = n["p"][1][a] - pk[1][a]
        if abs(d) >= KMAX: continue
        s = 1 if d > 0 else 0
        if side[s] is None or abs(d) < gap[s]: side[s] = n; gap[s] = abs(d)
    return side if side[0] and side[1] else None

def bracket_rule(idx, pk, app):
    side = bracketing(idx, pk)
    if not side: return None, 0
    best, bg, bs = None, 1 + MARG, 0
    for cls in sorted(side[0]["sc"]):
        if cls == DEF: continue
        lg = s = 0; ok = True
        for n in side:
            sc, kc = sc_at(n, cls); sd, kd = sc_at(n, DEF)
            ok = ok and kc and kd and sd > 0 and sc >= sd * (1 + MARG) and sc >= 0.97
            if not ok: break
            lg += 0.5 * math.log(sc / sd); s += 0.5 * sc
        if ok and math.exp(lg) > bg and app(cls): best, bg, bs = cls, math.exp(lg), s
    return best, bs

def upper_rule(idx, pk, app):
    side = bracketing(idx, pk)
    if not side: return None, 0
    lo, hi = side
    sd, kd = sc_at(hi, DEF)
    if not kd or sd <= 0: return None, 0
    best, bs, score = None, 0, 0
    for cls in sorted(hi["sc"]):
        s = hi["sc"][cls]
        if cls == DEF or s <= UNR or s <= bs: continue
        ms = hi["fastest"] / s
        if ms > (1 + USLACK) * lo["fastest"] or s < sd * (1 + MARG): continue
        if not app(cls): continue
        best, bs, score = cls, s, min(1.0, lo["fastest"] / ms)
    return best, score

def predict(idx, key, app=lambda c: True):
    pk = parse(key)
    near = sorted(((dist(pk, n["p"]), i, n) for i, n in enumerate(idx) if n["key"] != key and dist(pk, n["p"]) < KMAX), key=lambda x: (x[0], x[1]))[:KN]
    if not near: return None, "none"
    classes = {DEF}
    for _, _, n in near: classes |= set(n["sc"])
    wsum = sum(1 / (1 + d) for d, _, _ in near)
    def score(cls):
        acc = wk = 0
        for d, _, n in near:
            s, k = sc_at(n, cls); w = 1 / (1 + d)
            if cls == DEF and not k: continue
            acc += w * s; wk += w
        return acc / wk if wk > 0 else UNR
    def agreement(cls):
        return sum(1 / (1 + d) for d, _, n in near if sc_at(n, cls)[1] and sc_at(n, cls)[0] >= 0.97) / wsum
    def consistent(cls):
        s, k = sc_at(near[0][2], cls)
        if s < 0.97 or not k: return False
        for _, _, n in near:
            sc, kc = sc_at(n, cls); sd, kd = sc_at(n, DEF)
            if kc and kd and sc < sd: return False
        return True
    best, rule = DEF, ""
    bscore = score(DEF) * (1 + MARG)
    for cls in sorted(classes):
        if cls == DEF: continue
        s = score(cls)
        if s > bscore and agreement(cls) >= AGREE and consistent(cls) and app(cls):
            best, bscore, rule = cls, s, "vote"
    if best == DEF:
        c, s = bracket_rule(idx, pk, app)
        if c: best, rule = c, "bracketing"
        else:
            c, s = upper_rule(idx, pk, app)
            if c: best, rule = c, "upper"
    return (None if best == DEF else best), rule

def key_of(m, n, k):
    return f"layout=NT,ab=bf16,c=bf16,M={m},N={n},K={k},lda={k},ldb={k},ldc={n},epi=16"
