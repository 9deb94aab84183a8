"""The content-addressed code-object cache (what `ktune cache` offers)."""
from . import _cli


def path():
    """The cache directory (KTUNE_CACHE_DIR, else the XDG default)."""
    return _cli.run("cache", "path", parse_json=False).strip()


def ls():
    """Every stored code object: key, arch, compiler, size, compile time, entry."""
    return _cli.run("cache", "ls")


def show(key):
    return _cli.run("cache", "show", key)


def verify():
    return _cli.run("cache", "verify")


def clear():
    """Removes every stored code object (compiled again on demand)."""
    _cli.run("cache", "clear", "--yes", parse_json=False)
