"""Background tuning from Python on a GPU (issue 35): an unseen GEMM key runs at once with the
isolation worker found in the package (ktune/bin/ktune-worker beside ktune/libktune.so), is tuned
off the caller's thread, and its measured winner is in the database afterwards. Skips without
torch/GPU."""
import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)

import ktune  # noqa: E402
from ktune import ops  # noqa: E402


def _entries(family):
    blocks = ktune.db.export(family)["devices"]
    return {k: e for b in blocks for k, e in b["entries"].items()}


def test_background_gemm_runs_at_once_and_its_measured_winner_lands_in_the_database():
    ktune.set_options(background=True, isolate=True)
    torch.manual_seed(0)
    dev, bf = "cuda", torch.bfloat16
    a = torch.randn(37, 1024, device=dev, dtype=bf)  # M = 37: a key no other test tunes
    b = torch.randn(1536, 1024, device=dev, dtype=bf)
    ref = (a.float() @ b.float().t()).to(bf)
    out = ops.gemm(a, b.t())  # the default or a predicted config, nothing tuned on this thread
    torch.testing.assert_close(out, ref, rtol=2e-2, atol=2e-1)
    tuner = ops._tuner(a)
    assert tuner.options()["background"] is True and tuner.options()["isolate"] is True
    assert tuner.wait_background() >= 1  # the key was tuned in the background
    entries = _entries("gemm")
    keys = [k for k in entries if "M=37," in k and "N=1536," in k and "K=1024," in k]
    assert keys, "the background run did not record the key"
    entry = entries[keys[0]]
    assert entry["winner"] and entry["stats"]["runs"] > 0, entry
    again = ops.gemm(a, b.t())  # the measured winner now
    torch.testing.assert_close(again, ref, rtol=2e-2, atol=2e-1)
