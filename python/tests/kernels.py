"""A saxpy kernel for the simulated backend: the CUDA source the GPU would compile, and the host
function and cost model that stand in for it (BLOCK=256, VEC=2 is the fastest config)."""
import os

import numpy as np

import ktune

SOURCE = r"""
#include "prelude.cuh"
KTUNE_KERNEL void py_saxpy(long long n, float a, const float* x, float* y) {
  long long i = ((long long)ktune::bid_x() * ktune::bdim_x() + ktune::tid_x()) * VEC;
  for (int k = 0; k < VEC; ++k)
    if (i + k < n) y[i + k] = a * x[i + k] + y[i + k];
}
"""

RUNS = {"count": 0}


def run(launch):
    n, a = launch.arg(0), launch.arg(1)
    x = launch.array(2, np.float32, n)
    y = launch.array(3, np.float32, n)
    covered = launch.grid(0) * launch.block(0) * launch.knob("VEC", 1)
    m = min(n, covered)  # a wrong launch rule leaves elements unwritten
    y[:m] = a * x[:m] + y[:m]
    RUNS["count"] += 1


def cost(launch):
    return 0.01 + abs(launch.knob("BLOCK") - 256) * 1e-5 + abs(launch.knob("VEC") - 2) * 1e-3


def saxpy_kernel():
    return ktune.kernel(SOURCE, "py_saxpy", grid="cdiv(n, BLOCK * VEC)", block="BLOCK",
                        sim_run=run, sim_cost=cost)


def cli_env(cache):
    """The environment for a `ktune` CLI process that must see this test's cache."""
    env = dict(os.environ)
    env["KTUNE_CACHE_DIR"] = cache
    return env
