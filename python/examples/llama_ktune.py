"""The ktune variant of llama.py (a Llama-style decoder end to end): its ops, and the fused
rotary + KV-cache write kernel of examples/llama_kernels.h (the C++ decoder's, examples/llama.cc)
registered as a tuned ktune family."""
import os


_KERNELS_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                          "llama_kernels.h")


def rope_kv_family():
    """llama_rope_kv of examples/llama_kernels.h as a tuned ktune family (its source, space, key
    and launch rule as llama.cc registers them), or None when that file is not beside us."""
    import ktune
    try:
        with open(_KERNELS_H) as f:
            src = f.read().split('R"(', 1)[1].split(')";', 1)[0]
    except (OSError, IndexError):
        return None
    sig = [("qkv", "ptr"), ("ld", "i64"), ("qo", "ptr"), ("kc", "ptr"), ("vc", "ptr"),
           ("cos", "ptr"), ("sin", "ptr")] + [(n, "i32") for n in
                                              ("B", "T", "nq", "nkv", "hd", "S", "pos0")]
    k = ktune.kernel(src, "llama_rope_kv", grid=["B * T", "cdiv(nq + 2 * nkv, HPB)"],
                     block="HPB * cdiv(hd / 2, VEC)", signature=sig, programmatic_wait=True)
    return ktune.autotune(space={"HPB": [4, 8], "VEC": [1, 4]},
                          key=["pow2(B * T)", "nq", "nkv", "hd"], name="llama_rope_kv",
                          default={"HPB": 4, "VEC": 1})(k)


_PDL = [None]  # the pdl option last set through pdl_switch


def pdl_switch(on):
    """A variant's `pre`: ktune.set_options(pdl=on) where it changes (the ops then use the tuner
    of that setting; the other stays alive in ktune's tuner table, with its selections, over the
    same database and code objects). A ktune without the option (no KTUNE_PDL): a no-op."""
    import ktune
    if not hasattr(ktune, "set_options"):  # a stand-in package (dev/llama_cpu)
        return lambda: None

    def pre():
        if _PDL[0] is not on:
            _PDL[0] = on
            if "pdl" in ktune.get_tuner().options():
                ktune.set_options(pdl=on)
    return pre


class KtuneOps:
    name = "ktune"
    clone_input = True  # the fused residual add writes the residual in place

    def __init__(self, eps, cfg=None, residual_gemm=True):
        import ktune.ops
        self.k, self.eps, self.cfg = ktune.ops, eps, cfg
        # The residual add in the o_proj / down GEMM's epilogue (C = A·Bᵀ + C in place) and a plain
        # RMSNorm after it, instead of GEMM + fused add-and-norm: one M x H pass less per add, and
        # the step's norms share one key per shape (the step's first norm is a plain one too), so
        # the residual-norm keys are not tuned at all. None: the GEMM + add_norm form.
        if not residual_gemm:
            self.linear_add = None
        self.residual_refused = False
        self.rope = rope_kv_family() if cfg is not None else None
        # ktune.ops.gemm(epilogue="silu_mul"): gate/up GEMM and SiLU·Mul in one kernel, where
        # this ktune has it. It runs on the decode kernel only, which keeps up with cuBLASLt up to
        # M = 16 and falls behind above (bench/NOTES.md: 64x28672x4096 127 µs vs 86; the Llama
        # step at batch 128 lost 0.785x with it; at batch 8, against the GEMM + SiLU·Mul pair in
        # the same rounds, the graphed step was 1.017x faster fused over 3 processes and the
        # fused kernel took 63.3 µs per layer against 60.1 + 4.7), so it is used up to
        # FUSED_MAX_ROWS rows; a row count it refuses runs GEMM + SiLU·Mul from then on (the
        # others stay fused: a step captured fused must run the same eager).
        self.fused_gate_up = "silu_mul" in getattr(self.k, "_EPILOGUES", ())
        self.unfused_rows = set()

    FUSED_MAX_ROWS = 8

    def gate_up_silu(self, h, wgu):
        m = h.shape[0]
        if self.fused_gate_up and m <= self.FUSED_MAX_ROWS and m not in self.unfused_rows:
            import ktune
            try:
                return self.k.gemm(h, wgu.t(), epilogue="silu_mul")
            except (ktune.InvalidArgument, ktune.Unsupported) as e:
                print(f"  ktune: gemm epilogue='silu_mul' refused at M={m} "
                      f"({str(e).splitlines()[0][:200]}); unfused at M={m}", flush=True)
                self.unfused_rows.add(m)
        return self.k.silu_mul(self.k.gemm(h, wgu.t()))

    def rope_kv(self, qkv, kc, vc, rope_f, B, T):
        """Rotated q [B, T, nq, hd] (a new tensor); rotated k and v written into the caches."""
        import torch
        c = self.cfg
        cosf, sinf, pos0 = rope_f
        q = torch.empty((B * T, c["n_heads"] * c["head_dim"]), dtype=qkv.dtype, device=qkv.device)
        self.rope(qkv, qkv.stride(0), q, kc, vc, cosf, sinf, B, T, c["n_heads"], c["n_kv"],
                  c["head_dim"], kc.shape[2], pos0)
        return q.view(B, T, c["n_heads"], c["head_dim"])

    def linear(self, x, w):
        return self.k.gemm(x, w.t())

    def linear_add(self, a, w, resid):
        """resid += a @ w.T in the GEMM's epilogue; resid returned. A ktune that refuses the
        residual form adds it with a torch op from then on (said once)."""
        if not self.residual_refused:
            import ktune
            try:
                return self.k.gemm(a, w.t(), residual=resid, out=resid)
            except (ktune.InvalidArgument, ktune.Unsupported) as e:
                print(f"  ktune: gemm residual= refused ({str(e).splitlines()[0][:200]}); "
                      "GEMM + add from now on", flush=True)
                self.residual_refused = True
        return resid.add_(self.k.gemm(a, w.t()))

    def norm(self, x, w):
        return self.k.rms_norm(x, w, self.eps)

    def add_norm(self, delta, resid, w):
        return self.k.rms_norm(delta, w, self.eps, residual=resid)

    def silu_mul(self, gu):
        return self.k.silu_mul(gu)
