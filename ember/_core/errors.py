"""Exceptions raised inside NumPy become torch's exception types.

A kernel or composite that hands bad input to NumPy gets NumPy's exceptions back
(``AxisError``, ``UFuncTypeError``, ``MemoryError`` for a huge allocation,
``ZeroDivisionError``, a bare ``ValueError`` from ``reshape``...).  torch raises
RuntimeError (IndexError for dims) for all of these, so user code that catches
torch's types keeps working.  The dispatcher and every public function (see
``dispatch.overridable``) catch only the classes in `NUMPY_ERRORS`, on the error
path: the normal path pays nothing (zero-cost ``try`` since Python 3.11).

Exceptions ember raises on purpose (torch's own message and type) pass unchanged:
a ``ValueError`` is translated only when NumPy raised it, not a ``raise`` line of
ember's.
"""
import linecache
import os

import numpy as np

__all__ = ["NUMPY_ERRORS", "translate"]

_NP_EXC = np.exceptions
_UFuncTypeError = getattr(getattr(np, "_core", None), "_exceptions", None)
_UFuncTypeError = getattr(_UFuncTypeError, "UFuncTypeError", None) or TypeError

NUMPY_ERRORS = (MemoryError, ZeroDivisionError, ValueError, _NP_EXC.AxisError,
                _UFuncTypeError, _NP_EXC.DTypePromotionError, OverflowError)

_EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NUMPY_DIR = os.path.dirname(os.path.abspath(np.__file__))
try:
    import scipy
    _LIB_DIRS = (_NUMPY_DIR, os.path.dirname(os.path.abspath(scipy.__file__)))
except ImportError:  # pragma: no cover - scipy is a dependency
    _LIB_DIRS = (_NUMPY_DIR,)


def _raised_by_numpy(exc):
    """Whether ``exc`` came out of NumPy (its C code or its Python), not an ember ``raise``."""
    tb = exc.__traceback__
    if tb is None:
        return True
    while tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code
    fname = os.path.abspath(code.co_filename)
    if fname.startswith(_LIB_DIRS):
        return True
    if not fname.startswith(_EMBER_DIR):
        return False  # user code (a hook, a custom Function) raised it: leave it alone
    line = linecache.getline(code.co_filename, tb.tb_lineno).strip()
    return not line.startswith("raise")


def _describe(args):
    parts = []
    for a in args:
        d = getattr(a, "_data", a)
        if isinstance(d, np.ndarray):
            parts.append(f"{list(d.shape)} {d.dtype.name}")
    return "; inputs: " + ", ".join(parts) if parts else ""


def translate(name, args, exc):
    """The torch-typed exception for NumPy exception ``exc`` raised while running ``name``
    on ``args``, or None when ``exc`` should propagate as it is."""
    t = type(exc)
    if t is RuntimeError or t is IndexError or t is TypeError or t is NotImplementedError:
        return None
    msg = str(exc)
    if isinstance(exc, MemoryError):
        return RuntimeError(f"{name}: not enough memory: {msg or 'allocation failed'}"
                            f"{_describe(args)}")
    if isinstance(exc, ZeroDivisionError):
        return RuntimeError(f"ZeroDivisionError in {name}: {msg}{_describe(args)}")
    if isinstance(exc, _NP_EXC.AxisError):
        return IndexError(f"Dimension out of range in {name}: {msg}")
    if isinstance(exc, (_UFuncTypeError, _NP_EXC.DTypePromotionError)) and t is not TypeError:
        return RuntimeError(f"{name}: unsupported dtype combination: {msg}{_describe(args)}")
    if t is ValueError or t is OverflowError:
        if not _raised_by_numpy(exc):
            return None
        if t is OverflowError:  # "Python integer 300 out of bounds for int8"
            return RuntimeError(f"{name}: value cannot be converted without overflow: {msg}") \
                if "out of bounds" in msg else None
        return RuntimeError(f"{name}: {msg}{_describe(args)}")
    if t.__module__.startswith("numpy"):
        return RuntimeError(f"{name}: {msg}{_describe(args)}")
    return None
