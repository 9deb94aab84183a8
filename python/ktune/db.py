"""The tuning database (what `ktune db` offers). Families registered in this process are read
through the engine (ktune.Autotuned.report, report() below); the others through the CLI."""
import json

from . import _cli, _tuners


def ls():
    """Every database file, its families and device blocks with their entry counts."""
    return _cli.run("db", "ls")


def show(family, key=None):
    """A family's entries (winner, time), or with `key` every candidate of that key."""
    return _cli.run("db", "show", family, *([key] if key else []))


def report(family, key, **tuner_options):
    """A key's tuning report as a dict, through the engine (the family must be registered on the
    tuner these options select, e.g. by a call of its ktune.autotune kernel or an op)."""
    return json.loads(_tuners.get_tuner(**tuner_options).report(family, key))


def remove(family, key):
    """Removes `key` from every device block of `family` (it is tuned again on its next call)."""
    return _cli.run("db", "rm", family, key)


def export(family, csv=False):
    """The family's part of the database as a dict (or CSV text)."""
    if csv:
        return _cli.run("db", "export", family, "--csv", parse_json=False)
    return _cli.run("db", "export", family)


def import_(path):
    """Merges a database file (entries pinned here are kept)."""
    return _cli.run("db", "import", path)


def verify():
    return _cli.run("db", "verify")
