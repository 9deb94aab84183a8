"""ktune from PyTorch on a GPU: a registered kernel tuned on torch tensors (the database shared
with the CLI, torch's current stream), the tuned ops against torch references, argument checks,
and the torch.library registration under torch.compile."""
import subprocess

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import ktune  # noqa: E402
from ktune import _cli  # noqa: E402

SAXPY = r"""
#include "prelude.cuh"
KTUNE_KERNEL void py_gpu_saxpy(long long n, float a, const float* x, float* y) {
  long long i = ((long long)ktune::bid_x() * ktune::bdim_x() + ktune::tid_x()) * VEC;
  for (int k = 0; k < VEC; ++k)
    if (i + k < n) y[i + k] = a * x[i + k] + y[i + k];
}
"""


def saxpy_fn(**kw):
    kw.setdefault("restore_value", ["y"])
    return ktune.autotune(space={"BLOCK": [128, 256, 512], "VEC": [1, 2, 4]}, key=["pow2(n)"],
                          warmup=1, rep=5, **kw)(
        ktune.kernel(SAXPY, "py_gpu_saxpy", grid="cdiv(n, BLOCK * VEC)", block="BLOCK"))


def plain_saxpy_fn(name):
    """The saxpy without hooks (VEC=1, a smaller space): its calls after the first take the C++
    fast path and the launch plan."""
    return ktune.autotune(space={"BLOCK": [128, 256]}, key=["pow2(n)"], warmup=1, rep=5,
                          name=name)(
        ktune.kernel(SAXPY, "py_gpu_saxpy", grid="cdiv(n, BLOCK)", block="BLOCK",
                     compile_options=["-DVEC=1"]))


def rel_err(out, ref):
    return ((out.float() - ref.float()).norm() / ref.float().norm()).item()


def test_autotune_on_torch_tensors_and_cli_hit(gpu_cache):
    saxpy = saxpy_fn()
    n = 1 << 20
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    ref = 3.0 * x + y
    saxpy(n, 3.0, x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, ref)
    rep = saxpy.report(n, 3.0, x, y)
    assert rep["winner"] and len(rep["candidates"]) == 9
    env = dict(__import__("os").environ, KTUNE_CACHE_DIR=gpu_cache)
    shown = subprocess.run([_cli.executable(), "db", "show", "py_gpu_saxpy", "--json"],
                           capture_output=True, text=True, env=env, check=True).stdout
    assert rep["winner"] in shown and f"pow2(n)={n}" in shown


def test_current_stream_is_used():
    saxpy = saxpy_fn()
    n = 1 << 16
    x = torch.randn(n, device="cuda")
    y = torch.zeros(n, device="cuda")
    saxpy(n, 1.0, x, y)  # tuned on the default stream
    s = torch.cuda.Stream()
    y2 = torch.zeros(n, device="cuda")
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)  # keeps s busy
        y2.copy_(x)                     # then y2 = x on s
        saxpy(n, 1.0, x, y2)            # y2 = 2x only if this launch is ordered after the copy
        ev = torch.cuda.Event()
        ev.record()
    ev.synchronize()
    torch.testing.assert_close(y2, 2.0 * x)


def test_fast_path_uses_current_stream_and_reset_to_zero():
    # No hooks: calls after the first go through the C++ fast path (torch's raw stream getter).
    plain = plain_saxpy_fn("py_gpu_saxpy_plain")
    n = 1 << 16
    x = torch.randn(n, device="cuda")
    plain(n, 1.0, x, torch.zeros(n, device="cuda"))  # tunes
    s = torch.cuda.Stream()
    y = torch.zeros(n, device="cuda")
    with torch.cuda.stream(s):
        torch.cuda._sleep(20_000_000)
        y.copy_(x)
        plain(n, 1.0, x, y)
        ev = torch.cuda.Event()
        ev.record()
    ev.synchronize()
    torch.testing.assert_close(y, 2.0 * x)
    # reset_to_zero: y is zeroed before every benchmark run and before the winner's launch.
    zeroed = saxpy_fn(reset_to_zero=["y"], restore_value=None, name="py_gpu_saxpy_zero")
    y = torch.full((n,), 7.0, device="cuda")
    try:  # the hooks run only when the key tunes: forget an earlier run's entry (shared cache)
        key = zeroed.key_of(n, 2.0, x, y)  # binds: zeroed.tuner exists from here
        zeroed.tuner.remove_key("py_gpu_saxpy_zero", key)
    except ktune.Error:
        pass
    zeroed(n, 2.0, x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, 2.0 * x)


def test_torch_api_keeps_torch_function_modes():
    # Where the package was built with ktune._ktune_torch, the launcher reads data pointers and the
    # stream through torch's C++ API, except while a torch function mode is active: the mode then
    # sees data_ptr() as it would without ktune's shortcut.
    import importlib.util  # noqa: PLC0415
    from torch.overrides import TorchFunctionMode  # noqa: PLC0415

    class CountDataPtr(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.calls = 0

        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") == "data_ptr":
                self.calls += 1
            return func(*args, **(kwargs or {}))

    plain = plain_saxpy_fn("py_gpu_saxpy_mode")
    n = 1 << 12
    x = torch.randn(n, device="cuda")
    plain(n, 1.0, x, torch.zeros(n, device="cuda"))  # tunes
    built = importlib.util.find_spec("ktune._ktune_torch") is not None
    assert ktune._ktune.torch_api_installed() == built
    y = torch.zeros(n, device="cuda")
    plain(n, 1.0, x, y)
    plain(n, 1.0, x, y)  # the launch plan of the call before
    with CountDataPtr() as mode:
        plain(n, 1.0, x, y)
    assert mode.calls == 2  # x and y
    torch.cuda.synchronize()
    torch.testing.assert_close(y, 3.0 * x)


def test_do_bench_is_the_engine_harness_on_the_gpu():
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
    stats = ktune.do_bench(lambda: a @ a, warmup=5, rep=20, return_stats=True)
    assert stats["timer"] == "device_events"
    assert 0 < stats["p20_ms"] <= stats["median_ms"] <= stats["p80_ms"]
    assert len(stats["samples_ms"]) == stats["runs"] >= 10
    for flush in ("read", "memset", None):
        st = ktune.do_bench(lambda: a @ a, warmup=5, rep=20, flush=flush, return_stats=True)
        assert st["timer"] == "device_events" and st["median_ms"] > 0, flush


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_rms_norm(dtype):
    x = torch.randn(64, 4096, device="cuda", dtype=dtype)
    w = torch.randn(4096, device="cuda", dtype=dtype)
    ref = (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float())
    assert rel_err(ktune.ops.rms_norm(x, w, 1e-6), ref) < 1e-2
    res = torch.randn_like(x)
    s = (x.float() + res.float())
    y, r = ktune.ops.rms_norm(x, w, 1e-6, residual=res.clone())
    ref2 = s * torch.rsqrt(s.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()
    assert rel_err(y, ref2) < 1e-2 and rel_err(r, s) < 1e-2


def test_silu_mul():
    x = torch.randn(3, 50, 2 * 2048, device="cuda", dtype=torch.bfloat16)
    out = ktune.ops.silu_mul(x)
    assert out.shape == (3, 50, 2048)
    ref = F.silu(x[..., :2048].float()) * x[..., 2048:].float()
    assert rel_err(out, ref) < 1e-2


@pytest.mark.parametrize("epilogue", [None, "silu"])
def test_gemm_nt_with_bias(epilogue):
    a = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(384, 512, device="cuda", dtype=torch.bfloat16)  # nn.Linear weight [N, K]
    bias = torch.randn(384, device="cuda", dtype=torch.bfloat16)
    out = ktune.ops.gemm(a, w.t(), bias=bias, epilogue=epilogue)
    ref = a.float() @ w.float().t() + bias.float()
    if epilogue == "silu":
        ref = F.silu(ref)
    assert out.shape == (256, 384) and rel_err(out, ref) < 2e-2


@pytest.mark.skipif(not hasattr(torch, "float8_e4m3fn") or
                    torch.cuda.get_device_capability() != (9, 0), reason="fp8 GEMM needs sm_90a")
def test_gemm_fp8_scaled():
    """FP8 (issue 33): e4m3 a [M, K] and w.t() of a [N, K] weight, per-tensor scales (a tensor and
    a number), bf16 out, against float math on the dequantised values; other layouts refused."""
    a = (torch.randn(256, 512, device="cuda") * 4).to(torch.float8_e4m3fn)
    w = (torch.randn(384, 512, device="cuda") * 4).to(torch.float8_e4m3fn)
    sa = torch.tensor([0.25], device="cuda")
    out = ktune.ops.gemm(a, w.t(), scale_a=sa, scale_b=0.5)
    ref = (a.float() * 0.25) @ (w.float() * 0.5).t()
    assert out.dtype == torch.bfloat16 and out.shape == (256, 384) and rel_err(out, ref) < 2e-2
    with pytest.raises(ktune.Unsupported, match="layout NT"):
        ktune.ops.gemm(a, w.t().contiguous(), scale_a=sa)  # B stored [K][N]: layout NN


@pytest.mark.parametrize("m", [1, 16, 128])
def test_gemm_gate_up_silu_mul_and_residual(m):
    """The decode path's fused epilogues: [gate; up] in one GEMM (silu_mul, N/2 columns out) with
    bias and a residual, and a plain GEMM adding into its residual in place (out=residual)."""
    k, d = 1024, 688
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(2 * d, k, device="cuda", dtype=torch.bfloat16) / 16  # cat([w_gate, w_up])
    bias = torch.randn(2 * d, device="cuda", dtype=torch.bfloat16)
    res = torch.randn(m, d, device="cuda", dtype=torch.bfloat16)
    out = ktune.ops.gemm(x, w.t(), bias=bias, epilogue="silu_mul", residual=res)
    h = x.float() @ w.float().t() + bias.float()
    ref = F.silu(h[:, :d]) * h[:, d:] + res.float()
    assert out.shape == (m, d) and rel_err(out, ref) < 2e-2
    w2 = torch.randn(d, k, device="cuda", dtype=torch.bfloat16) / 16
    acc = res.clone()
    got = ktune.ops.gemm(x, w2.t(), residual=acc, out=acc)
    assert got.data_ptr() == acc.data_ptr()
    assert rel_err(acc, x.float() @ w2.float().t() + res.float()) < 2e-2
    with pytest.raises(ktune.InvalidArgument, match="silu_mul"):
        ktune.ops.gemm(x, w[:-1].t(), epilogue="silu_mul")


def test_checks_name_the_argument():
    x = torch.randn(4, 8, dtype=torch.bfloat16)
    with pytest.raises(ktune.InvalidArgument, match="x: tensor is on cpu"):
        ktune.ops.rms_norm(x)
    g = torch.randn(4, 8, device="cuda", dtype=torch.bfloat16)
    with pytest.raises(ktune.InvalidArgument, match="weight: dtype"):
        ktune.ops.rms_norm(g, torch.ones(8, device="cuda"))
    with pytest.raises(ktune.InvalidArgument, match="odd"):
        ktune.ops.silu_mul(g[:, :7])
    with pytest.raises(ktune.InvalidArgument, match="do not multiply"):
        ktune.ops.gemm(g, g)
    with pytest.raises(ktune.InvalidArgument, match="a: dtype torch.float32; gemm takes float16, bfloat16"):
        ktune.ops.gemm(g.float(), g.float().t())


def test_torch_library_ops_under_compile():
    if not hasattr(torch.library, "custom_op"):
        pytest.skip("torch.library.custom_op needs torch >= 2.4")
    ops = ktune.ops.register_torch_ops()
    x = torch.randn(32, 1024, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(1024, device="cuda", dtype=torch.bfloat16)

    @torch.compile(fullgraph=True)
    def f(x, w):
        return ops.silu_mul(torch.cat([x, x], dim=-1)) + ops.rms_norm(x, w, 1e-6)

    ref = ktune.ops.silu_mul(torch.cat([x, x], dim=-1)) + ktune.ops.rms_norm(x, w, 1e-6)
    torch.testing.assert_close(f(x, w), ref)
