"""ktune.autotune on the simulated backend: tuning through the engine, the database shared with
the CLI, spaces, prune hooks, restore_value/reset_to_zero, argument conversion and errors."""
import json
import subprocess

import numpy as np
import pytest

import ktune
from ktune import _cli

from kernels import RUNS, SOURCE, cli_env, cost, run, saxpy_kernel

SPACE = {"BLOCK": [64, 128, 256, 512], "VEC": [1, 2, 4]}


def make(**kw):
    kw.setdefault("space", SPACE)
    kw.setdefault("key", ["pow2(n)"])
    return ktune.autotune(**kw)(saxpy_kernel())


def test_import_and_version():
    assert ktune.__version__.count(".") == 2
    assert ktune.__version__ == ktune._ktune.version()


def test_the_tuner_is_named_autotuner_as_in_cpp(sim):
    # One name per concept: the C++ ktune::Autotuner is ktune.Autotuner, with no second name.
    assert isinstance(ktune.get_tuner(), ktune.Autotuner)
    assert ktune.Autotuner.__name__ == "Autotuner"
    assert not hasattr(ktune._ktune, "Tuner")


def test_tunes_first_call_then_hits(sim):
    saxpy = make(restore_value=["y"])  # y += a*x: tuning runs it many times
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    saxpy(n, 2.0, x, y)
    np.testing.assert_allclose(y, 2.0 * np.arange(n) + 1.0)
    rep = saxpy.report(n, 2.0, x, y)
    assert rep["winner"] == "BLOCK=256,VEC=2"
    assert len(rep["candidates"]) == 12
    before = RUNS["count"]
    saxpy(n, 2.0, x, y)  # a hit: exactly one launch
    assert RUNS["count"] == before + 1


def test_key_tuned_from_python_is_a_hit_for_the_cli(sim):
    saxpy = make(constraints=["BLOCK * VEC <= 1024"])
    x = np.ones(300, dtype=np.float32)
    y = np.zeros(300, dtype=np.float32)
    saxpy(300, 1.0, x, y)
    shown = subprocess.run([_cli.executable(), "db", "show", "py_saxpy", "--json"],
                           capture_output=True, text=True, env=cli_env(sim), check=True)
    assert "pow2(n)=512" in shown.stdout and "BLOCK=256,VEC=2" in shown.stdout
    assert ktune.db.show("py_saxpy")  # the same through the Python wrapper
    # A new process's tuner (another registration of the family) finds it in the database.
    ktune.reset()
    ktune.set_options(backend="sim", warmup_ms=0.05, rep_ms=0.2)
    again = make(constraints=["BLOCK * VEC <= 1024"])
    before = RUNS["count"]
    again(300, 1.0, x, y)
    assert RUNS["count"] == before + 1
    assert again.report(300, 1.0, x, y)["winner"] == "BLOCK=256,VEC=2"
    assert "pow2(n)=512" in json.dumps(ktune.db.export("py_saxpy"))
    ktune.db.remove("py_saxpy", "pow2(n)=512")  # through the CLI: the next tuner tunes again
    ktune.reset()
    ktune.set_options(backend="sim", warmup_ms=0.05, rep_ms=0.2)
    third = make(constraints=["BLOCK * VEC <= 1024"])
    before = RUNS["count"]
    third(300, 1.0, x, y)
    assert RUNS["count"] > before + 1


def test_configs_list_is_exactly_the_space(sim):
    configs = [ktune.Config({"BLOCK": 128, "VEC": 1}), ktune.Config({"BLOCK": 512, "VEC": 4}),
               ktune.Config({"BLOCK": 128, "VEC": 4})]
    saxpy = make(configs=configs, space=None)
    x = np.ones(64, dtype=np.float32)
    y = np.zeros(64, dtype=np.float32)
    rep = saxpy.tune(64, 1.0, x, y)
    tried = sorted(c["config"] for c in rep["candidates"])
    assert tried == ["BLOCK=128,VEC=1", "BLOCK=128,VEC=4", "BLOCK=512,VEC=4"]
    assert rep["winner"] == "BLOCK=128,VEC=1"  # the cost model's best of these three


def test_python_constraints_and_prune_hooks(sim):
    seen = {}

    def early(configs, named_args):
        seen["n"] = len(configs)
        return [c for c in configs if c.kwargs["BLOCK"] != 256]

    saxpy = make(constraints=[lambda c: c["VEC"] != 4], prune=lambda c: c.kwargs["BLOCK"] >= 128,
                 prune_configs_by={"early_config_prune": early})
    x = np.ones(10, dtype=np.float32)
    y = np.zeros(10, dtype=np.float32)
    rep = saxpy.tune(10, 1.0, x, y)
    assert seen["n"] == 6  # 3 blocks x 2 vecs reached the early prune
    tried = sorted(c["config"] for c in rep["candidates"])
    assert tried == ["BLOCK=128,VEC=1", "BLOCK=128,VEC=2", "BLOCK=512,VEC=1", "BLOCK=512,VEC=2"]


def test_restore_value_and_reset_to_zero(sim):
    # y += a*x runs many times while tuning; restore_value puts y back before the real run.
    saxpy = make(restore_value=["y"])
    x = np.ones(100, dtype=np.float32)
    y = np.full(100, 5.0, dtype=np.float32)
    saxpy(100, 3.0, x, y)
    np.testing.assert_allclose(y, 8.0)
    zeroed = make(reset_to_zero=["y"], name="py_saxpy_zero")
    y = np.full(100, 5.0, dtype=np.float32)
    zeroed(100, 3.0, x, y)
    np.testing.assert_allclose(y, 3.0)
    # Without hooks the benchmark runs accumulate into y (what the hooks are for).
    plain = make(name="py_saxpy_plain")
    y = np.full(100, 5.0, dtype=np.float32)
    plain(100, 3.0, x, y)
    assert y[0] > 8.0


def test_keyword_arguments_and_pointer_kinds(sim):
    saxpy = make()
    t = ktune.get_tuner()
    n = 16
    xs = t.alloc(n * 4)
    ys = t.alloc(n * 4)
    t.copy_to_device(xs, np.arange(n, dtype=np.float32))
    t.copy_to_device(ys, np.zeros(n, dtype=np.float32))

    class Cai:  # an object exposing only __cuda_array_interface__
        __cuda_array_interface__ = {"data": (ys, False), "shape": (n,), "typestr": "<f4",
                                    "version": 3}

    saxpy.tune(n, 2.0, xs, ys)  # tuning runs accumulate into y: tune first, then reset y
    t.copy_to_device(ys, np.zeros(n, dtype=np.float32))
    saxpy(n=n, a=2.0, x=xs, y=Cai())
    out = np.empty(n, dtype=np.float32)
    t.copy_to_host(out, ys)
    np.testing.assert_allclose(out, 2.0 * np.arange(n))
    t.free(xs)
    t.free(ys)


def test_errors_are_clear(sim):
    saxpy = make()
    x = np.ones(4, dtype=np.float32)
    with pytest.raises(ktune.InvalidArgument, match="expected 4 arguments"):
        saxpy(4, 1.0, x)
    with pytest.raises(ktune.InvalidArgument, match="argument 'a'"):
        saxpy(4, "two", x, x)
    with pytest.raises(ktune.InvalidArgument, match="argument 'x'"):
        saxpy(4, 1.0, object(), x)
    bad = ktune.autotune(space=SPACE, key=["pow2(n)"])(
        ktune.kernel(SOURCE, "py_saxpy", grid="cdiv(n, BLOK)", block="BLOCK", sim_run=run))
    with pytest.raises(ktune.InvalidArgument, match="BLOK"):
        bad(4, 1.0, x, x)
    with pytest.raises(ktune.InvalidArgument, match="entry 'nope'"):
        ktune.kernel(SOURCE, "nope", grid="1")


def test_signature_from_source_and_jit_decorator():
    k = ktune.kernel(SOURCE, "py_saxpy", grid="1")
    assert k.signature == [("n", "i64"), ("a", "f32"), ("x", "ptr"), ("y", "ptr")]

    @ktune.jit(grid="cdiv(n, BLOCK)", block="BLOCK")
    def scale(n: "i64", s: "f32", x: "ptr"):
        """extern "C" __global__ void scale(long long n, float s, float* x) {}"""

    assert scale.entry == "scale" and scale.signature[1] == ("s", "f32")


def test_sim_kernel_error_becomes_an_exception(sim):
    def broken(launch):
        raise RuntimeError("boom")

    k = ktune.autotune(space={"BLOCK": [64], "VEC": [1]}, key=["n"], name="py_broken")(
        ktune.kernel(SOURCE, "py_saxpy", grid="cdiv(n, BLOCK)", block="BLOCK", sim_run=broken,
                     sim_cost=cost))
    x = np.ones(4, dtype=np.float32)
    with pytest.raises(ktune.Error, match="boom"):
        k(4, 1.0, x, x)


def test_tuner_options_reach_the_engine(sim):
    t = ktune.get_tuner(warmup_ms=1.5, rep_ms=3.0, remote_cache="redis://127.0.0.1:1/0")
    o = t.options()
    assert (o["warmup_ms"], o["rep_ms"], o["remote_cache"]) == (1.5, 3.0, "redis://127.0.0.1:1/0")
    with pytest.raises(ktune.InvalidArgument, match="warmup_ms"):
        ktune.get_tuner(warmup_ms="fast")


def test_search_options_reach_the_engine(sim):
    t = ktune.get_tuner(search="exhaustive", budget_s=2.5)
    o = t.options()
    assert (o["search"], o["budget_s"]) == ("exhaustive", 2.5)
    with pytest.raises(ktune.InvalidArgument, match="search"):
        ktune.get_tuner(search="random")


def test_do_bench_and_explain(sim):
    stats = ktune.do_bench(lambda: sum(range(100)), warmup=1, rep=5, return_stats=True)
    assert stats["timer"] == "sim"  # the engine's harness on the simulated device
    assert stats["p20_ms"] <= stats["median_ms"] <= stats["p80_ms"]
    q = ktune.do_bench(lambda: None, warmup=1, rep=2, quantiles=[0.5, 0.2, 0.8])
    assert len(q) == 3
    errors = []
    for arch in ("gfx90a", "sm_80"):  # hiprtc on Debian (CI), NVRTC on a CUDA machine
        try:
            rep = ktune.explain("rmsnorm", arch=arch)
        except ktune.Error as e:
            errors.append(str(e))
            continue
        assert rep["arch"] == arch and rep["binary_bytes"] > 0
        return
    pytest.fail("no compiler could explain rmsnorm: " + " | ".join(errors))


def test_dlpack_pointer_is_the_data_address():
    from ktune import _dlpack
    a = np.arange(8, dtype=np.float32)[2:]
    assert _dlpack.pointer(a) == a.ctypes.data


def test_ops_refuse_non_tensors():
    with pytest.raises(ktune.InvalidArgument, match="expected a torch.Tensor"):
        ktune.ops.rms_norm(np.ones((2, 4), dtype=np.float32))
    with pytest.raises(ktune.InvalidArgument, match="expected a torch.Tensor"):
        ktune.ops.silu_mul([1, 2])


def test_same_kernel_declared_twice_shares_its_family(sim):
    x = np.ones(8, dtype=np.float32)
    y = np.zeros(8, dtype=np.float32)
    make(restore_value=["y"])(8, 1.0, x, y)
    make(restore_value=["y"])(8, 1.0, x, y)  # a notebook cell run again: same family
    other = make(space={"BLOCK": [64], "VEC": [1]})
    with pytest.raises(ktune.InvalidArgument, match="py_saxpy"):
        other(8, 1.0, x, y)  # another space under a registered name


def test_background_mode_runs_at_once_and_waits_on_request(sim):
    # Background tuning (KTUNE_TUNING=background): the first call of an unseen key runs at once
    # (one launch, nothing tuned on the caller's thread). A kernel registered from Python cannot
    # have its buffers rebuilt on the tuning thread (no make_problem), so nothing is queued and
    # wait_background() returns at once with 0 keys tuned in the background.
    ktune.set_options(background=True)
    t = ktune.get_tuner()
    assert t.options()["background"] is True
    saxpy = make(restore_value=["y"])
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    before = RUNS["count"]
    saxpy(n, 2.0, x, y)
    np.testing.assert_allclose(y, 2.0 * np.arange(n) + 1.0)
    assert RUNS["count"] == before + 1
    assert t.wait_background() == 0
