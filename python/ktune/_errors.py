"""ktune's exceptions: one class per status code of the C++ core (ktune::Code)."""


class Error(RuntimeError):
    """A ktune call failed; ``code`` is the core's status name ("invalid_argument", ...)."""

    code = "internal"


class InvalidArgument(Error, ValueError):
    code = "invalid_argument"


class NotFound(Error, LookupError):
    code = "not_found"


class Unavailable(Error):
    """No driver, device or compiler for what was asked (e.g. no GPU)."""

    code = "unavailable"


class Unsupported(Error):
    code = "unsupported"


_BY_CODE = {c.code: c for c in (InvalidArgument, NotFound, Unavailable, Unsupported)}


def error_class(code):
    """The exception class of a status name; other codes get an Error subclass named after them."""
    cls = _BY_CODE.get(code)
    if cls is None:
        name = "".join(part.title() for part in code.split("_"))
        cls = type(name, (Error,), {"code": code})
        _BY_CODE[code] = cls
    return cls
