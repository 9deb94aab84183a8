"""Where a ktune.ops call's host time goes before the GPU, on a machine without one (issue 36).

The Python wrapper of ktune.ops (argument checks, output allocation, the parameter dict, the
tuner and stream look-ups) runs here on stand-in tensors (plain Python objects with the
attributes the wrapper reads; torch's own attribute getters are C functions of similar cost) and a
stand-in `torch` module; the engine's binding is timed on the simulated backend, where ktune's ops
stop with kUnsupported right after the arguments are parsed (so its rows include raising that
error). What this cannot see: torch.empty's own cost, the engine's launch path and the driver
(python/bench/ops_host_cost.py times those on a GPU, beside torch's ops).

  python3 ops_host_cpu.py     (needs the ktune package; no torch, no GPU)
"""
import sys
import time
import types


class FakeDtype:
    def __init__(self, name):
        self.name = name


class FakeTensor:
    """What ktune.ops reads of a torch.Tensor (a contiguous 2-D CUDA tensor on device 0)."""
    is_cuda = True

    def __init__(self, shape, dtype, strides=None):
        self.shape, self.dtype = tuple(shape), dtype
        self._strides = strides or ((shape[1], 1) if len(shape) == 2 else (1,))
        self.device = "cuda:0"

    def dim(self):
        return len(self.shape)

    def stride(self, i=None):
        return self._strides if i is None else self._strides[i]

    def data_ptr(self):
        return 1 << 20

    def get_device(self):
        return 0

    def is_contiguous(self):
        return True

    def t(self):
        return FakeTensor(self.shape[::-1], self.dtype, self._strides[::-1])

    def view(self, *shape):
        return self

    def new_empty(self, shape):
        return FakeTensor(shape, self.dtype)


def fake_torch():
    t = types.ModuleType("torch")
    t.float32, t.float16, t.bfloat16 = FakeDtype("f32"), FakeDtype("f16"), FakeDtype("bf16")
    # torch >= 2.1 has them, and ops.gemm looks them up per call: without them each look-up is a
    # failed module attribute (about 1.5 us here), which the real call never pays.
    t.float8_e4m3fn, t.float8_e5m2 = FakeDtype("f8e4m3"), FakeDtype("f8e5m2")
    t.empty = lambda shape, dtype=None, device=None: FakeTensor(shape, dtype)
    t._C = types.SimpleNamespace(_cuda_getCurrentRawStream=lambda idx: 0)
    return t


def per_call_us(fn, n=20000):
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.thread_time_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time_ns() - t0) / n / 1e3)
    return best


def main():
    sys.modules.setdefault("torch", fake_torch())
    import torch
    import ktune
    from ktune import ops
    ktune.set_options(backend="sim")
    bf = torch.bfloat16
    x, w = FakeTensor((1, 4096), bf), FakeTensor((4096, 4096), bf)
    nw, g = FakeTensor((4096,), bf), FakeTensor((1, 28672), bf)
    out = FakeTensor((1, 4096), bf)
    b = w.t()
    tuner = ops._tuner(x)

    def raising(fn):
        def call():
            try:
                fn()
            except ktune.Error:
                pass
        return call
    real = ops._ktune
    stub = types.SimpleNamespace(gemm=lambda *a: None, rmsnorm=lambda *a: None,
                                 silu_mul=lambda *a: None)
    rows = []
    ops._ktune = stub  # the wrapper alone: the binding replaced by a Python no-op
    try:
        rows += [("wrapper: ops.gemm(x, w.t()) (binding stubbed)", lambda: ops.gemm(x, b)),
                 ("wrapper: ops.rms_norm(x, w)", lambda: ops.rms_norm(x, nw, 1e-5)),
                 ("wrapper: ops.rms_norm(d, w, residual=r)",
                  lambda: ops.rms_norm(x, nw, 1e-5, residual=out)),
                 ("wrapper: ops.silu_mul(g)", lambda: ops.silu_mul(g))]
        res = [(label, per_call_us(fn)) for label, fn in rows]
    finally:
        ops._ktune = real
    params = ops._gemm_params(x, b, None, None, out)
    pieces = [
        ("piece: _check(a) + _check(b, a.device, a.dtype)",
         lambda: (ops._check(x, "a"), ops._check(b, "b", x.device, x.dtype))),
        ("piece: _gemm_params (17-entry dict)", lambda: ops._gemm_params(x, b, None, None, out)),
        ("piece: _tuner(a)", lambda: ops._tuner(x)),
        ("piece: _stream(a)", lambda: ops._stream(x)),
        ("binding: _ktune.gemm(dict) -> kUnsupported raised",
         raising(lambda: real.gemm(tuner, params, 0))),
        ("binding: _ktune.rmsnorm(12 ints) -> kUnsupported raised",
         raising(lambda: real.rmsnorm(tuner, 2, 1, 4096, 1 << 20, 1 << 20, 1 << 20, 0, 0, 4096,
                                      4096, 1e-5, 0))),
        ("peer: an empty Python lambda", lambda: None),
    ]
    res += [(label, per_call_us(fn)) for label, fn in pieces]
    print("== ktune.ops host work per call without a GPU (thread CPU us, best of 5 x 20000; "
          "stand-in tensors, simulated backend)")
    for label, us in res:
        print(f"  {label:58s} {us:7.2f}")
        print(f"RESULT ops_host_cpu {label.split(':')[0]} {label.split(':', 1)[1].strip()!r} "
              f"{us * 1e3:.0f} ns")


if __name__ == "__main__":
    main()
