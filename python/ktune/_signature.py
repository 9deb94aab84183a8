"""A kernel's argument signature: from annotations of a @ktune.jit function, an explicit list, or
the entry's parameter list in the C++ source."""
import inspect
import re

from ._errors import InvalidArgument

TYPES = ("ptr", "i32", "i64", "f32", "f64")

# C parameter types by the words they end with ('*' makes any type a pointer).
_C_TYPES = {
    "int": "i32", "int32_t": "i32", "unsigned": "i32", "uint32_t": "i32",
    "long": "i64", "int64_t": "i64", "uint64_t": "i64", "size_t": "i64", "ptrdiff_t": "i64",
    "float": "f32", "double": "f64",
}


def normalise(sig):
    """[(name, type)] from [(name, type)], "n:i64, x:ptr", or {name: type}."""
    if isinstance(sig, str):
        sig = [tuple(p.strip() for p in part.split(":")) for part in sig.split(",") if part.strip()]
    elif isinstance(sig, dict):
        sig = list(sig.items())
    out = []
    for item in sig:
        if len(item) != 2 or item[1] not in TYPES:
            raise InvalidArgument(f"signature entry {item!r}: expected (name, one of {TYPES})")
        out.append((str(item[0]), str(item[1])))
    return out


def from_function(fn):
    """The signature from a function's parameters, each annotated with a type name ("i64")."""
    out = []
    for p in inspect.signature(fn).parameters.values():
        ann = p.annotation
        if ann is inspect.Parameter.empty:
            return None
        out.append((p.name, getattr(ann, "ktune_type", ann)))
    return normalise(out)


def from_source(source, entry):
    """The signature of `entry` parsed from C++ source: `name(T a, const U* b, ...)`."""
    m = re.search(r"\b" + re.escape(entry) + r"\s*\(([^)]*)\)", source)
    if not m:
        raise InvalidArgument(f"entry '{entry}' not found in the source; pass signature=")
    out = []
    for param in filter(None, (p.strip() for p in m.group(1).split(","))):
        words = re.findall(r"[A-Za-z_]\w*|\*", param.replace("__restrict__", ""))
        if len(words) < 2:
            raise InvalidArgument(f"cannot read parameter '{param}' of '{entry}'; pass signature=")
        name = words[-1]
        if "*" in words:
            out.append((name, "ptr"))
            continue
        ctype = words[-2]
        if ctype == "long" or (ctype == "int" and "long" in words):
            out.append((name, "i64"))
        elif ctype in _C_TYPES:
            out.append((name, _C_TYPES[ctype]))
        else:
            raise InvalidArgument(f"parameter '{param}' of '{entry}': unknown type; pass signature=")
    return out
