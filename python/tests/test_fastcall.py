"""The C++ fast path of a tuned call (ktune._ktune.Launcher): objects with data_ptr(), ints and
scalars reach the engine without Python; everything else takes the Python path, with the same
results and errors."""
import numpy as np
import pytest

import ktune

from kernels import RUNS, saxpy_kernel


class DevArray:
    """A simulated device buffer seen the way torch tensors are: through data_ptr()."""

    def __init__(self, tuner, host):
        self.tuner, self.n = tuner, host.size
        self.addr = tuner.alloc(host.nbytes)
        tuner.copy_to_device(self.addr, host)

    def data_ptr(self):
        return self.addr

    def numpy(self):
        out = np.empty(self.n, dtype=np.float32)
        self.tuner.copy_to_host(out, self.addr)
        return out


def make(**kw):
    return ktune.autotune(space={"BLOCK": [128, 256], "VEC": [1, 2]}, key=["pow2(n)"],
                          **kw)(saxpy_kernel())


def test_fast_calls_launch_once_and_compute(sim):
    saxpy = make()
    n = 100
    t = ktune.get_tuner()
    x = DevArray(t, np.arange(n, dtype=np.float32))
    y = DevArray(t, np.zeros(n, dtype=np.float32))
    saxpy.tune(n, 1.0, x, y)  # tuning accumulates into y: tune first, then reset y
    t.copy_to_device(y.addr, np.zeros(n, dtype=np.float32))
    before = RUNS["count"]
    saxpy(n, 2.0, x, y)                  # data_ptr() objects
    saxpy(n, 1, x.addr, y.addr)          # int addresses, an int for the float scalar
    saxpy(n, 2.0, x, y, stream=0)        # an int stream keyword
    assert RUNS["count"] == before + 3
    np.testing.assert_allclose(y.numpy(), 5.0 * np.arange(n))


def test_what_the_fast_path_refuses_takes_the_python_path(sim):
    saxpy = make()
    n = 64
    x = np.ones(n, dtype=np.float32)
    y = np.zeros(n, dtype=np.float32)
    saxpy(n, 1.0, x, y)  # numpy arrays: copied to the simulated device and back
    y[:] = 0
    saxpy(n=n, a=1.0, x=x, y=y)  # keywords
    np.testing.assert_allclose(y, np.ones(n))
    with pytest.raises(ktune.InvalidArgument, match="argument 'a'"):
        saxpy(n, "two", x, y)
    with pytest.raises(ktune.InvalidArgument, match="expected 4 arguments"):
        saxpy(n, 1.0, x)
    with pytest.raises(ktune.InvalidArgument, match="argument 'x'"):
        saxpy(n, 1.0, object(), 0)


def test_reset_rebinds_a_kernel_bound_before(sim, fresh_cache):
    saxpy = make()
    x = np.ones(8, dtype=np.float32)
    y = np.zeros(8, dtype=np.float32)
    saxpy(8, 1.0, x, y)
    ktune.reset()  # the tuner the fast path was bound to is gone
    ktune.set_options(backend="sim", warmup_ms=0.05, rep_ms=0.2)
    t = ktune.get_tuner()
    xd, yd = DevArray(t, x), DevArray(t, np.zeros(8, dtype=np.float32))
    saxpy(8, 1.0, xd, yd)  # binds on the new tuner (the database already knows the key)
    np.testing.assert_allclose(yd.numpy(), np.ones(8))
    assert saxpy.tuner is t
