"""Every test runs on a fresh cache directory and fresh tuners; the simulated backend unless a
test asks for a GPU (tests/gpu, skipped without torch + CUDA)."""
import pytest

import ktune


@pytest.fixture(autouse=True)
def fresh_cache(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("KTUNE_CACHE_DIR", str(cache))
    for var in ("KTUNE_DB", "KTUNE_TUNING", "KTUNE_BACKEND", "KTUNE_REMOTE_CACHE"):
        monkeypatch.delenv(var, raising=False)
    ktune.reset()
    yield str(cache)
    ktune.reset()


@pytest.fixture
def sim(fresh_cache):
    # Short do_bench budgets: the simulated costs are exact, a few runs per candidate suffice.
    ktune.set_options(backend="sim", warmup_ms=0.05, rep_ms=0.2)
    return fresh_cache
