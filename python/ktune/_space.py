"""Config spaces as the engine takes them (space_json): knob value lists, constraint expressions
and a default. A list of Configs, or a space filtered by Python predicates or a prune hook, is
encoded as the union of each knob's values plus one constraint that admits exactly the listed
configs, so the engine enumerates the same set."""
import itertools
import json

from ._errors import InvalidArgument


class Config:
    """One point of the space, as triton.Config: knob values (integers) and, optionally,
    num_warps / num_stages, which become knobs of those names (-D num_warps=4)."""

    def __init__(self, kwargs, num_warps=None, num_stages=None):
        self.kwargs = dict(kwargs)
        self.num_warps = num_warps
        self.num_stages = num_stages

    def all_kwargs(self):
        out = dict(self.kwargs)
        if self.num_warps is not None:
            out["num_warps"] = self.num_warps
        if self.num_stages is not None:
            out["num_stages"] = self.num_stages
        return out

    def __repr__(self):
        return "Config(" + ", ".join(f"{k}={v}" for k, v in self.all_kwargs().items()) + ")"


def _int(name, v):
    if isinstance(v, bool):
        return int(v)
    if not isinstance(v, int):
        raise InvalidArgument(f"knob {name}={v!r}: knob values are integers")
    return v


def expand(space, predicates):
    """Every Config of a {knob: [values]} space accepted by all predicates (fn(dict) -> bool)."""
    names = list(space)
    out = []
    for values in itertools.product(*(space[n] for n in names)):
        d = dict(zip(names, values))
        if all(p(d) for p in predicates):
            out.append(Config(d))
    return out


def encode(configs=None, space=None, constraints=(), default=None):
    """space_json for the engine, and the list of knob names."""
    if configs is not None:
        points = [c.all_kwargs() if isinstance(c, Config) else dict(c) for c in configs]
        if not points:
            raise InvalidArgument("autotune: no config left (empty list, or all pruned)")
        names = list(points[0])
        for p in points:
            if sorted(p) != sorted(names):
                raise InvalidArgument(f"autotune: every config needs the knobs {names}; got {p}")
        params = {n: sorted({_int(n, p[n]) for p in points}) for n in names}
        size = 1
        for v in params.values():
            size *= len(v)
        exprs = []
        if size != len({tuple(p[n] for n in names) for p in points}):
            exprs.append(" || ".join(
                "(" + " && ".join(f"{n} == {int(p[n])}" for n in names) + ")" for p in points))
        first = default or points[0]
    else:
        if not space:
            raise InvalidArgument("autotune: give configs=[...] or space={knob: [values]}")
        params = {n: [_int(n, v) for v in vals] for n, vals in space.items()}
        exprs = list(constraints)
        first = default
    out = {"params": params, "constraints": exprs}
    if first:
        out["default"] = {n: int(v) for n, v in first.items()}
    return json.dumps(out), list(params)
