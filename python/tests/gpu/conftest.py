"""GPU tests: torch with CUDA, else every test here is skipped (CI has neither; the skip is in
the test modules: a skip raised while importing a conftest would skip the whole session). They share one
cache directory (KTUNE_CACHE_DIR when set, as dev/python_device.sh does) so a tuned GEMM key is
tuned once per run."""
import os

import pytest

import ktune


@pytest.fixture(scope="session")
def gpu_cache(tmp_path_factory):
    return os.environ.get("KTUNE_CACHE_DIR") or str(tmp_path_factory.mktemp("kcache"))


@pytest.fixture(autouse=True)
def fresh_cache(gpu_cache, monkeypatch):  # overrides the CPU suite's per-test cache
    monkeypatch.setenv("KTUNE_CACHE_DIR", gpu_cache)
    monkeypatch.delenv("KTUNE_BACKEND", raising=False)
    ktune.reset()
    yield gpu_cache
