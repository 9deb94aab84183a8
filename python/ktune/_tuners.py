"""The tuners a process uses: one per set of options, shared by every kernel and op that asks for
the same options (one device, store and database per tuner, as in C++)."""
import threading

from . import _ktune
from ._errors import InvalidArgument

_lock = threading.Lock()
_defaults = {}
_tuners = {}


def set_options(**options):
    """Sets default TunerOptions fields for tuners created from now on (backend, device, cache_dir,
    tuning, warmup_ms, rep_ms, remote_cache, ...); the environment (KTUNE_*) fills the rest.
    cache_dir and database_path also apply to the CLI commands of ktune.db and ktune.cache."""
    _check_remote(options.get("remote_cache"))
    with _lock:
        _defaults.update(options)
        _defaults_version[0] += 1


def _check_remote(url):
    """A shared cache must be a redis:// URL: anything else (an http:// URL, a typo) would leave
    the process silently without its shared cache. The engine checks the URL fully when the
    tuner is created."""
    if url is None or url == "":
        return
    if not isinstance(url, str) or not url.startswith("redis://"):
        raise InvalidArgument(f"remote_cache={url!r}: expected redis://[user:password@]host:port/db")


def cli_env():
    """The environment of a `ktune` CLI command run for this process: the cache directory and
    database that set_options() chose (the CLI reads them from KTUNE_CACHE_DIR / KTUNE_DB)."""
    import os
    env = dict(os.environ)
    with _lock:
        for opt, var in (("cache_dir", "KTUNE_CACHE_DIR"), ("database_path", "KTUNE_DB")):
            if _defaults.get(opt):
                env[var] = str(_defaults[opt])
    return env


def get_tuner(**options):
    """The ktune.Autotuner for the default options overlaid with ``options`` (created on first
    use).
    Raises ktune.Unavailable when the backend has no device."""
    merged = dict(_defaults)
    merged.update({k: v for k, v in options.items() if v is not None})
    _check_remote(merged.get("remote_cache"))
    key = tuple(sorted(merged.items()))
    with _lock:
        t = _tuners.get(key)
        if t is None:
            t = _ktune.Autotuner(merged)
            _tuners[key] = t
        return t


_kernels = {}


def kernel_for(tuner, spec, add):
    """(kernel, spec) of the family `spec` registered on `tuner`: registered once; the same spec
    again (a module reloaded, a notebook cell run twice) gets the same kernel and the spec it was
    registered with (its callbacks: source_fn, before_run), another spec under a registered name
    is the engine's InvalidArgument. Callables compare by their qualified name."""
    import json
    text = json.dumps(spec, sort_keys=True,
                      default=lambda v: getattr(v, "__qualname__", type(v).__qualname__))
    with _lock:
        hit = _kernels.get((id(tuner), spec["name"]))
        if hit is not None and hit[0] is tuner and hit[1] == text:
            return hit[2], hit[3]
    k = add(tuner, spec)
    with _lock:
        _kernels[(id(tuner), spec["name"])] = (tuner, text, k, spec)
    return k, spec


def reset():
    """Drops every tuner of this process (their families and in-memory tables); databases and the
    store stay on disk. Mainly for tests."""
    with _lock:
        _tuners.clear()
        _kernels.clear()
        _defaults.clear()
        _generation[0] += 1
        _ktune.next_generation()  # bound fast paths (Launcher) go back to binding


_generation = [0]
_defaults_version = [0]


def generation():
    """Changes whenever reset() drops the tuners (kernels then register on the new ones)."""
    return _generation[0]


def state():
    """Changes whenever reset() or set_options() may change the tuner get_tuner() returns (the
    ops cache their tuner per device under it)."""
    return _generation[0], _defaults_version[0]
