"""The `ktune` CLI shipped in the package (bin/ktune, built with the extension), for what the CLI
offers and the public C++ API does not: cache and database inspection across families, and the
resource/occupancy/ISA report of a config. Every command runs with --json."""
import json
import os
import shutil
import subprocess

from ._errors import InvalidArgument, NotFound, Unavailable, error_class

_HERE = os.path.dirname(os.path.abspath(__file__))


def executable():
    """KTUNE_CLI, else the package's bin/ktune, else `ktune` on PATH."""
    path = os.environ.get("KTUNE_CLI") or os.path.join(_HERE, "bin", "ktune")
    if os.access(path, os.X_OK):
        return path
    found = shutil.which("ktune")
    if not found:
        raise Unavailable("the ktune CLI was not found (bin/ktune in the package, KTUNE_CLI, PATH)")
    return found


# The CLI's exit codes (tools/): 2 usage, 3 not found, 4 corrupt/failed check.
_EXIT = {2: InvalidArgument, 3: NotFound}


def run(*args, parse_json=True):
    """Runs `ktune ARGS --json` and returns its output parsed (or the text)."""
    from . import _tuners
    argv = [executable(), *map(str, args)] + (["--json"] if parse_json else [])
    p = subprocess.run(argv, capture_output=True, text=True, env=_tuners.cli_env())
    if p.returncode != 0:
        cls = _EXIT.get(p.returncode, error_class("internal"))
        raise cls(f"ktune {' '.join(map(str, args))}: {(p.stderr or p.stdout).strip()}")
    return json.loads(p.stdout) if parse_json else p.stdout


def explain(target, arch, defines=None, entry=None, lang=None):
    """Resource usage, occupancy and ISA report of one config as a dict (`ktune explain`):
    target is a template name ("rmsnorm", "gemm_wgmma", ...) or a kernel source file; defines
    the config's knobs ({"BLOCK": 256}). Compiles without a GPU."""
    args = ["explain", target, "--arch", arch]
    for k, v in (defines or {}).items():
        args += ["-D", f"{k}={v}"]
    if entry:
        args += ["--entry", entry]
    if lang:
        args += ["--lang", lang]
    return run(*args)
