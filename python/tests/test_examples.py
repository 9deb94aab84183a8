"""examples/python runs as documented on the simulated backend, and a second run finds its key in
the database (one launch, nothing tuned)."""
import os
import subprocess
import sys

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "python",
                       "autotune_walkthrough.py")


def test_walkthrough_runs_twice(fresh_cache):
    env = dict(os.environ, KTUNE_CACHE_DIR=fresh_cache,
               PYTHONPATH=os.path.dirname(os.path.dirname(__import__("ktune").__file__)))
    for _ in range(2):
        out = subprocess.run([sys.executable, EXAMPLE, "--sim"], capture_output=True, text=True,
                             env=env, timeout=120)
        assert out.returncode == 0, out.stderr
        assert "winner BLOCK=256,num_warps=4 of 11 configs" in out.stdout
        assert "axpy median 0.0100 ms" in out.stdout  # do_bench: the simulated kernel's cost
        assert "scale winner BLOCK=256" in out.stdout  # the source_fn kernel
