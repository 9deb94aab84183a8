"""reset_to_zero / restore_value applied before every benchmark run (the engine's before_run
hook), ktune.do_bench through the engine's harness, and source_fn (per-config modules from
Python), on the simulated backend."""
import numpy as np
import pytest

import ktune

from kernels import SOURCE

SPACE = {"BLOCK": [64, 128, 256, 512], "VEC": [1, 2, 4]}


class Watch:
    """A saxpy stand-in that records what y held when each launch started."""

    def __init__(self):
        self.first_y = []

    def run(self, launch):
        n, a = launch.arg(0), launch.arg(1)
        x = launch.array(2, np.float32, n)
        y = launch.array(3, np.float32, n)
        self.first_y.append(float(y[0]))
        y[:] = a * x + y

    @staticmethod
    def cost(launch):
        return 0.01 + abs(launch.knob("BLOCK") - 256) * 1e-5 + abs(launch.knob("VEC") - 2) * 1e-3


def watched(name, **kw):
    w = Watch()
    k = ktune.kernel(SOURCE, "py_saxpy", grid="cdiv(n, BLOCK * VEC)", block="BLOCK",
                     sim_run=w.run, sim_cost=w.cost)
    return w, ktune.autotune(space=SPACE, key=["pow2(n)"], name=name, **kw)(k)


def test_restore_value_before_every_run(sim):
    w, saxpy = watched("hooks_restore", restore_value=["y"])
    x = np.ones(64, dtype=np.float32)
    y = np.full(64, 5.0, dtype=np.float32)
    saxpy(64, 3.0, x, y)
    # 12 configs, each run many times: every launch, the final one included, started from y = 5.
    assert len(w.first_y) > 12 * 10
    assert set(w.first_y) == {5.0}
    np.testing.assert_allclose(y, 8.0)


def test_reset_to_zero_before_every_run_and_tune(sim):
    w, saxpy = watched("hooks_zero", reset_to_zero=["y"])
    x = np.ones(64, dtype=np.float32)
    y = np.full(64, 5.0, dtype=np.float32)
    rep = saxpy.tune(64, 3.0, x, y)
    assert rep["winner"] == "BLOCK=256,VEC=2"
    assert len(w.first_y) > 12 * 10 and set(w.first_y) == {0.0}
    np.testing.assert_allclose(y, 3.0)
    w.first_y.clear()
    y[:] = 5.0
    saxpy(64, 3.0, x, y)  # a hit: no hooks, one launch on the caller's y
    assert w.first_y == [5.0]
    np.testing.assert_allclose(y, 8.0)


def test_hook_error_fails_the_candidates(sim):
    w, saxpy = watched("hooks_error", restore_value=["y"])

    class Odd:  # neither numpy nor a tensor: cannot be saved
        def data_ptr(self):
            return ktune.get_tuner().alloc(256)
    with pytest.raises(ktune.Error, match="restore_value"):
        saxpy(64, 1.0, np.ones(64, dtype=np.float32), Odd())


def test_do_bench_is_the_engine_harness(sim):
    w, saxpy = watched("bench_saxpy")
    x = np.ones(256, dtype=np.float32)
    t = ktune.get_tuner()
    xd, yd = t.alloc(x.nbytes), t.alloc(x.nbytes)
    t.copy_to_device(xd, x)
    t.copy_to_device(yd, x)
    saxpy(256, 1.0, xd, yd)  # tunes: BLOCK=256,VEC=2 costs 0.01 simulated ms
    stats = ktune.do_bench(lambda: saxpy(256, 1.0, xd, yd), warmup=0.1, rep=0.5,
                           return_stats=True)
    assert stats["timer"] == "sim"
    assert stats["median_ms"] == pytest.approx(0.01)
    assert stats["runs"] == len(stats["samples_ms"]) >= 10
    assert ktune.do_bench(lambda: saxpy(256, 1.0, xd, yd), warmup=0.1, rep=0.5,
                          quantiles=[0.5, 0.2, 0.8]) == pytest.approx([0.01] * 3)

    # Every flush kind (the read kernel falls back to a memset on the simulated device) stays
    # outside the timed run.
    for flush in (None, "read", "memset"):
        assert ktune.do_bench(lambda: saxpy(256, 1.0, xd, yd), warmup=0.1, rep=0.5, flush=flush,
                              tuner=saxpy) == pytest.approx(0.01)
    with pytest.raises(ktune.InvalidArgument, match="flush"):
        ktune.do_bench(lambda: None, flush="bogus")
    with pytest.raises(ktune.InvalidArgument, match="flush"):
        t.benchmark(lambda: None, 0.1, 0.5, 10, "bogus")

    def boom():
        raise KeyError("from the function")
    with pytest.raises(KeyError, match="from the function"):
        ktune.do_bench(boom, warmup=0.1, rep=0.5)


PTX = ".version 8.0\n// BLOCK={BLOCK} VEC={VEC}\n.visible .entry py_gen() {{ ret; }}\n"


def test_source_fn_generates_each_config(sim):
    seen = []

    def gen(config):
        seen.append(dict(config))
        if config["BLOCK"] == 512:
            raise ValueError("tile too large")
        return PTX.format(**config), "ptx", "py_gen"

    w = Watch()
    k = ktune.kernel(None, "py_gen", grid="cdiv(n, BLOCK * VEC)", block="BLOCK",
                     signature="n:i64, a:f32, x:ptr, y:ptr", sim_run=w.run, sim_cost=w.cost)
    saxpy = ktune.autotune(space=SPACE, key=["pow2(n)"], source_fn=gen, name="py_gen")(k)
    x = np.ones(32, dtype=np.float32)
    y = np.zeros(32, dtype=np.float32)
    rep = saxpy.tune(32, 2.0, x, y)
    assert rep["winner"] == "BLOCK=256,VEC=2"
    assert sorted((c["BLOCK"], c["VEC"]) for c in seen) == sorted(
        (b, v) for b in SPACE["BLOCK"] for v in SPACE["VEC"])
    failed = [c for c in rep["candidates"] if c["config"].startswith("BLOCK=512")]
    assert len(failed) == 3
    assert all("tile too large" in c["reason"] for c in failed), failed


def test_source_fn_misuse_is_refused(sim):
    k = ktune.kernel(SOURCE, "py_saxpy", grid="cdiv(n, BLOCK)", block="BLOCK")
    with pytest.raises(ktune.InvalidArgument, match="source_fn replaces"):
        ktune.autotune(space={"BLOCK": [64]}, source_fn=lambda c: "x")(k)
    with pytest.raises(ktune.InvalidArgument, match="signature"):
        ktune.kernel(None, "py_gen", grid="1", block="BLOCK")
    bad = ktune.autotune(space={"BLOCK": [64]}, key=["n"], name="py_bad_gen",
                         source_fn=lambda c: 42)(
        ktune.kernel(None, "py_gen", grid="1", block="BLOCK", signature="n:i64"))
    with pytest.raises(ktune.Error, match="expected \\(text, language\\)"):
        bad(4)


def test_do_bench_hands_the_flush_kind_to_the_harness():
    """The kind reaches Autotuner::benchmark as asked: "read" by default (as candidates are
    timed), "memset", or "none" for flush=None."""
    class Recorder:
        backend = "sim"

        def __init__(self):
            self.flushes = []

        def options(self):
            return {"device": 0}

        def benchmark(self, fn, warmup, rep, min_runs, flush, stream):
            self.flushes.append(flush)
            return {"median_ms": 1.0}

    r = Recorder()
    ktune.do_bench(lambda: None, tuner=r)
    ktune.do_bench(lambda: None, flush="memset", tuner=r)
    ktune.do_bench(lambda: None, flush="read", tuner=r)
    ktune.do_bench(lambda: None, flush=None, tuner=r)
    assert r.flushes == ["read", "memset", "read", "none"]
