"""The model of llama.py (a Llama-style decoder end to end): its shapes (Llama-3-8B and a tiny
one), the torch ops, the decoder stack whose forward takes any variant's ops, and --self-check
(decode after a prefill equals a prefill of one more token). torch is imported inside the
functions (the tests import this module without it)."""
from llama_timing import rel_err

LLAMA3_8B = dict(hidden=4096, inter=14336, n_heads=32, n_kv=8, head_dim=128, eps=1e-5,
                 theta=500000.0)
TINY = dict(hidden=256, inter=512, n_heads=8, n_kv=2, head_dim=32, eps=1e-5, theta=10000.0)


# ---------------------------------------------------------------------------------------------
# The model: one forward for every variant, the ops passed in.

class TorchOps:
    name = "torch"
    clone_input = False

    def __init__(self, eps):
        import torch.nn.functional as F
        self.F, self.eps = F, eps

    def linear(self, x, w):
        return self.F.linear(x, w)

    def norm(self, x, w):
        return self.F.rms_norm(x, (x.shape[-1],), w, self.eps)

    def add_norm(self, delta, resid, w):
        r = resid + delta
        return self.F.rms_norm(r, (r.shape[-1],), w, self.eps), r

    def silu_mul(self, gu):
        d = gu.shape[-1] // 2
        return self.F.silu(gu[..., :d]) * gu[..., d:]


def _op(rec, name, fn, *args):
    if rec is None:
        return fn(*args)
    return rec(name, fn, *args)


class Decoder:
    """Weights of `layers` Llama layers (wqkv [(nq+2nkv)*hd, H], wo, w_gate_up [2I, H] with the
    gate first, w_down), random with 1/sqrt(fan-in) scale so activations stay O(1)."""

    def __init__(self, cfg, layers, device, dtype, seed=0):
        import torch
        self.cfg, self.torch = cfg, torch
        H, I, nq, nkv, hd = (cfg[k] for k in ("hidden", "inter", "n_heads", "n_kv", "head_dim"))
        g = torch.Generator(device=device).manual_seed(seed)

        def rnd(*shape, scale):
            return (torch.randn(*shape, generator=g, device=device, dtype=torch.float32)
                    * scale).to(dtype)
        self.layers = []
        for _ in range(layers):
            self.layers.append(dict(
                wqkv=rnd((nq + 2 * nkv) * hd, H, scale=H ** -0.5),
                wo=rnd(H, nq * hd, scale=(nq * hd) ** -0.5),
                wgu=rnd(2 * I, H, scale=H ** -0.5), wdown=rnd(H, I, scale=I ** -0.5),
                attn_norm=1 + rnd(H, scale=0.1), mlp_norm=1 + rnd(H, scale=0.1)))
        self.final_norm = 1 + rnd(H, scale=0.1)
        self.gen = g

    def state(self, batch, tokens, context, device, dtype, seq=None):
        """Inputs of one step: hidden states x [B*T, H], per-layer K/V caches [B, nkv, S, hd]
        (random where the step does not write), the positions, the rotary tables."""
        torch, c = self.torch, self.cfg
        pos0 = context if tokens == 1 else 0
        seq = seq or (pos0 + tokens)
        kv = (batch, c["n_kv"], seq, c["head_dim"])
        mk = lambda *s: torch.randn(*s, generator=self.gen, device=device,  # noqa: E731
                                    dtype=torch.float32).to(dtype)
        pos = torch.arange(pos0, pos0 + tokens, device=device)
        inv = 1.0 / (c["theta"] ** (torch.arange(0, c["head_dim"], 2, device=device,
                                                 dtype=torch.float32) / c["head_dim"]))
        ang = pos.float()[:, None] * inv[None, :]
        ang = torch.cat((ang, ang), -1)
        # fp32 [T, hd / 2] tables and the first position: the fused ktune kernel's inputs
        half = c["head_dim"] // 2
        rope_f = (ang[:, :half].cos().contiguous(), ang[:, :half].sin().contiguous(), pos0)
        return dict(x=mk(batch * tokens, c["hidden"]), kcs=[mk(*kv) for _ in self.layers],
                    vcs=[mk(*kv) for _ in self.layers], pos=pos,
                    cos=ang.cos().to(dtype), sin=ang.sin().to(dtype), batch=batch, tokens=tokens,
                    rope_f=rope_f)

    def forward(self, ops, x, kcs, vcs, pos, cos, sin, batch, tokens, rec=None, rope_f=None,
                layer_fn=None):
        """The stack; layer_fn(h, x, w, kc, vc, pos, cos, sin, nxt) -> (h, x) replaces the
        layer (the compile variant passes one compiled layer, reused by every layer)."""
        if ops.clone_input:
            x = x.clone()
        L = self.layers
        h = _op(rec, "norm", ops.norm, x, L[0]["attn_norm"])
        for i, w in enumerate(L):
            nxt = L[i + 1]["attn_norm"] if i + 1 < len(L) else self.final_norm
            if layer_fn is not None:
                h, x = layer_fn(h, x, w, kcs[i], vcs[i], pos, cos, sin, nxt)
            else:
                h, x = self.layer(ops, h, x, w, kcs[i], vcs[i], pos, cos, sin, nxt, batch,
                                  tokens, rec, rope_f)
        return h

    def layer(self, ops, h, x, w, kc, vc, pos, cos, sin, nxt, batch, tokens, rec=None,
              rope_f=None):
        o = self.attention(ops, h, w, kc, vc, pos, cos, sin, batch, tokens, rec, rope_f)
        h, x = _proj_add_norm(ops, rec, "o_proj", o, w["wo"], x, w["mlp_norm"])
        if getattr(ops, "fused_gate_up", False) and h.shape[0] <= ops.FUSED_MAX_ROWS:
            a = _op(rec, "gate_up_silu", ops.gate_up_silu, h, w["wgu"])
        else:
            gu = _op(rec, "gate_up", ops.linear, h, w["wgu"])
            a = _op(rec, "silu_mul", ops.silu_mul, gu)
        return _proj_add_norm(ops, rec, "down", a, w["wdown"], x, nxt)

    def attention(self, ops, h, w, kc, vc, pos, cos, sin, B, T, rec, rope_f=None):
        F = self.torch.nn.functional
        nq, nkv, hd = self.cfg["n_heads"], self.cfg["n_kv"], self.cfg["head_dim"]
        qkv2 = _op(rec, "qkv", ops.linear, h, w["wqkv"])
        q = None
        if getattr(ops, "rope", None) is not None and rope_f is not None:
            try:
                q = _op(rec, "rope_kv", ops.rope_kv, qkv2, kc, vc, rope_f, B, T)
            except Exception as e:  # noqa: BLE001  (torch's rotary from now on, said once)
                print(f"  {ops.name}: fused rotary + KV write failed ({type(e).__name__}: "
                      f"{str(e).splitlines()[0][:160]}); torch's rotary from now on", flush=True)
                ops.rope = None
        if q is None:
            q, k, v = qkv2.view(B, T, nq + 2 * nkv, hd).split([nq, nkv, nkv], dim=2)

            def rope_cache(q, k, v):
                q, k = _rope(q, cos, sin), _rope(k, cos, sin)
                kc[:, :, pos] = k.transpose(1, 2)
                vc[:, :, pos] = v.transpose(1, 2)
                return q
            q = _op(rec, "rope_kv", rope_cache, q, k, v)
        if T == 1:  # decode: the query heads of one KV head form one query block (no K/V repeat)
            sd = lambda: F.scaled_dot_product_attention(  # noqa: E731
                q.reshape(B, nkv, nq // nkv, hd), kc, vc).reshape(B, nq * hd)
        else:  # prefill from position 0: causal (top-left aligned) over the cache
            sd = lambda: F.scaled_dot_product_attention(  # noqa: E731
                q.transpose(1, 2), kc, vc, is_causal=True,
                enable_gqa=True).transpose(1, 2).reshape(B * T, nq * hd)
        return _op(rec, "attn", sd)


def _proj_add_norm(ops, rec, name, a, w, x, norm_w):
    """x + a @ w.T, then its RMSNorm: (normed, new residual). Ops with linear_add (ktune) add the
    residual in the GEMM's epilogue (x updated in place, C = A·Bᵀ + C) and run a plain norm, as
    inductor folds the add into a neighbour; the others run the GEMM, then add + norm in one op.
    The op names stay those of the unfused form (the breakdown's columns): name = the GEMM
    (with the add for linear_add), add_norm = the norm (with the add otherwise)."""
    if getattr(ops, "linear_add", None) is not None:
        x = _op(rec, name, ops.linear_add, a, w, x)
        return _op(rec, "add_norm", ops.norm, x, norm_w), x
    d = _op(rec, name, ops.linear, a, w)
    return _op(rec, "add_norm", ops.add_norm, d, x, norm_w)


def _rope(x, cos, sin):
    """Rotate-half rotary embedding of x [B, T, h, hd] with cos/sin [T, hd]."""
    import torch
    half = x.shape[-1] // 2
    rot = torch.cat((-x[..., half:], x[..., :half]), -1)
    return x * cos[None, :, None, :] + rot * sin[None, :, None, :]


def run(model, ops, st, rec=None):
    return model.forward(ops, st["x"], st["kcs"], st["vcs"], st["pos"], st["cos"], st["sin"],
                         st["batch"], st["tokens"], rec, st.get("rope_f"))


# ---------------------------------------------------------------------------------------------
# Self-check: decode after a prefill of T tokens equals a prefill of T+1 tokens (last row).

def self_check():
    import torch
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    cfg, B, T = TINY, 2, 16
    m = Decoder(cfg, 2, dev, torch.float32, seed=1)
    ops = TorchOps(cfg["eps"])
    full = m.state(B, T + 1, 0, dev, torch.float32)
    xs = full["x"].view(B, T + 1, -1)
    for c in full["kcs"] + full["vcs"]:
        c.zero_()
    ref = run(m, ops, full).view(B, T + 1, -1)[:, -1]
    pre = m.state(B, T, 0, dev, torch.float32, seq=T + 1)  # the decode needs the cache's slot T
    for c in pre["kcs"] + pre["vcs"]:
        c.zero_()
    pre["x"] = xs[:, :T].reshape(B * T, -1).contiguous()
    run(m, ops, pre)
    dec = m.state(B, 1, T, dev, torch.float32)
    dec.update(kcs=pre["kcs"], vcs=pre["vcs"], x=xs[:, T].contiguous())
    out = run(m, ops, dec)
    err = rel_err(out, ref)
    shapes = {k: tuple(v.shape) for k, v in m.layers[0].items()}
    print(f"self-check on {dev}: decode vs prefill last row rel err {err:.2e} (tiny model, fp32, "
          f"B={B}, T={T}); layer weights {shapes}")
    if not err < 1e-4:
        raise SystemExit("self-check FAILED")
    print("self-check ok")
