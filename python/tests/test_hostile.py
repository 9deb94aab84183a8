"""The Python defects of issue 28 ("trust nothing from outside"): each is a clear ktune exception
now, never a crash or a raw Python error, and the CLI wrappers see the options the process set."""
import numpy as np
import pytest

import ktune

from kernels import SOURCE, cost, saxpy_kernel

SPACE = {"BLOCK": [64, 128, 256], "VEC": [1, 2]}


def make():
    return ktune.autotune(space=SPACE, key=["pow2(n)"])(saxpy_kernel())


def test_sim_array_past_its_allocation_raises(sim):
    def overrun(launch):
        n = launch.arg(0)
        launch.array(3, np.float32, n * 1000)[:] = 1.0  # far past y's 64 floats: was a segfault

    k = ktune.autotune(space={"BLOCK": [64], "VEC": [1]}, key=["n"], name="py_overrun")(
        ktune.kernel(SOURCE, "py_saxpy", grid="cdiv(n, BLOCK)", block="BLOCK", sim_run=overrun,
                     sim_cost=cost))
    x = np.ones(64, dtype=np.float32)
    with pytest.raises(ktune.Error, match="allocation has 256 bytes"):
        k(64, 1.0, x, x.copy())


def test_db_show_uses_the_cache_dir_set_by_set_options(sim, tmp_path):
    other = tmp_path / "elsewhere"
    ktune.set_options(cache_dir=str(other))  # not KTUNE_CACHE_DIR (the fixture's directory)
    saxpy = make()
    x = np.ones(300, dtype=np.float32)
    saxpy(300, 1.0, x, x.copy())
    shown = ktune.db.show("py_saxpy")
    assert [e["key"] for e in shown] == ["pow2(n)=512"]
    assert "pow2(n)=512" in str(ktune.db.export("py_saxpy"))


def test_remote_cache_must_be_a_redis_url(sim):
    with pytest.raises(ktune.InvalidArgument, match="redis://"):
        ktune.set_options(remote_cache="http://x")
    with pytest.raises(ktune.InvalidArgument, match="redis://"):
        ktune.get_tuner(remote_cache="http://x")
    with pytest.raises(ktune.InvalidArgument, match="no host"):  # the engine's full check
        ktune.get_tuner(remote_cache="redis://")


def test_do_bench_refuses_bad_quantiles_and_modes(sim):
    with pytest.raises(ktune.InvalidArgument, match="quantile 2"):
        ktune.do_bench(lambda: None, warmup=1, rep=2, quantiles=[2, -1])
    with pytest.raises(ValueError, match="quantile -1"):
        ktune.do_bench(lambda: None, warmup=1, rep=2, quantiles=[0.5, -1])
    with pytest.raises(ktune.InvalidArgument, match="quantiles="):
        ktune.do_bench(lambda: None, warmup=1, rep=2, quantiles=3)
    with pytest.raises(ktune.InvalidArgument, match="return_mode"):
        ktune.do_bench(lambda: None, warmup=1, rep=2, return_mode="fastest")
    assert len(ktune.do_bench(lambda: None, warmup=1, rep=2, quantiles=[0, 1])) == 2


def test_report_before_any_call_is_a_ktune_error(sim):
    saxpy = make()
    x = np.ones(64, dtype=np.float32)
    with pytest.raises(ktune.NotFound):
        saxpy.report(64, 1.0, x, x.copy())  # not tuned yet: was an AttributeError
    with pytest.raises(ktune.InvalidArgument):
        saxpy.report()
