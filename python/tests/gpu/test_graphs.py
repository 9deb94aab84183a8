"""ktune calls inside torch.cuda.graph (issue 35): tuned RMSNorm, SiLU·Mul and GEMM calls captured
and replayed give the results of the direct calls, and an untuned GEMM key inside the capture runs a
predicted (or default) config without tuning, synchronising or loading. Skips without torch/GPU."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)

import ktune  # noqa: E402


def test_tuned_ops_replay_in_a_cuda_graph_and_an_untuned_key_is_not_tuned():
    torch.manual_seed(0)
    dev, bf = "cuda", torch.bfloat16
    x = torch.randn(64, 4096, device=dev, dtype=bf)
    w = torch.randn(4096, device=dev, dtype=bf)
    xx = torch.cat([x, x], dim=-1)
    a = torch.randn(64, 1024, device=dev, dtype=bf)
    a_new = torch.randn(65, 1024, device=dev, dtype=bf)  # a key never tuned before the capture
    b = torch.randn(1024, 1024, device=dev, dtype=bf)
    # Tuned (and loaded) outside the capture.
    want = (ktune.ops.rms_norm(x, w), ktune.ops.silu_mul(xx), ktune.ops.gemm(a, b.t()))
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        got = (ktune.ops.rms_norm(x, w), ktune.ops.silu_mul(xx), ktune.ops.gemm(a, b.t()))
        new = ktune.ops.gemm(a_new, b.t())
    g.replay()
    torch.cuda.synchronize()
    for o, r in zip(got, want):
        torch.testing.assert_close(o, r, rtol=2e-2, atol=2e-2)
    ref = (a_new.float() @ b.float().t()).to(bf)
    torch.testing.assert_close(new, ref, rtol=2e-2, atol=2e-1)
