"""ktune: JIT GPU kernel autotuning over a C++ core.

    @ktune.autotune(configs=[ktune.Config({"BLOCK": 256}), ...], key=["n"])
    @ktune.jit(grid="cdiv(n, BLOCK)", block="BLOCK")
    def saxpy(n: "i64", a: "f32", x: "ptr", y: "ptr"):
        return CUDA_SOURCE

The same engine, tuning database and code-object store as the C++ API and the `ktune` CLI: a key
tuned here is a hit there. Importing needs no GPU; a call on a machine without one raises
ktune.Unavailable (or runs on the simulated backend: ktune.set_options(backend="sim"))."""
from . import _ktune
from ._autotune import Autotuned, JitKernel, autotune, jit, kernel
from ._errors import Error, InvalidArgument, NotFound, Unavailable, Unsupported
from ._space import Config
from ._tuners import get_tuner, reset, set_options

# The tuner get_tuner() returns: the C++ ktune::Autotuner (device, store, databases).
Autotuner = _ktune.Autotuner

__version__ = _ktune.version()

from . import cache, db, ops  # noqa: E402  (they use the names above)
from ._bench import do_bench  # noqa: E402
from ._cli import explain  # noqa: E402

__all__ = ["Autotuned", "Autotuner", "Config", "Error", "InvalidArgument", "JitKernel", "NotFound",
           "Unavailable", "Unsupported", "autotune", "cache", "db", "do_bench", "explain",
           "get_tuner", "jit", "kernel", "ops", "reset", "set_options", "__version__"]
