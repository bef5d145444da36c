"""Operands of NumPy programs: array_likes as ember tensors, NumPy's dtypes, and the way out
of the graph.

Everything the NumPy protocols of `NumpyArray` need in common: ``arr`` (any array_like as a
NumpyArray), ``cast`` (to a NumPy dtype, recorded), the operands' dtypes as NumPy's promotion
sees them (Python scalars weak, NEP 50), results as NumpyArrays (``finish``, with ``out=``),
and the fallback: a NumPy call that is not captured is a graph break, the pending graph
runs, real NumPy runs the call on the real arrays and its array results are wrapped again
(zero-copy).  ``HANDLERS`` maps NumPy functions to their captured forms
(`ember._dynamo.numpy_functions`, `ember._dynamo.numpy_reductions`); an ember error inside a
handler falls back too, so NumPy, not ember, raises the user's errors.
"""
import operator
import warnings

import numpy as np

from .. import linalg as _linalg
from .. import ops as _ops
from .._core import dtype as _dt
from .._core.tensor import Tensor
from .exc import BackendCompilerFailed, RecompileLimitExceeded, Unsupported
from .numpy_array import NumpyArray, tensor_meta
from .session import current_session

__all__ = ["ember", "Fallback", "arr", "cast", "finish", "fallback", "real_array", "rewrap",
           "HANDLERS", "handles", "function_call", "numpy_meta"]


class _Ember:
    """ember's public functions (``ember.add`` ...), reached from the layers below."""
    linalg = _linalg

    def __getattr__(self, name):
        f = getattr(_ops, name, None)
        if f is None:
            from ..ops import surface_extras
            f = getattr(surface_extras, name)
        return f


ember = _Ember()


class Fallback(Exception):
    """This call is not captured: real NumPy runs it (the message is the reason)."""


# errors of ember that mean "NumPy should answer this", not "compilation failed"
EMBER_ERRORS = (TypeError, ValueError, RuntimeError, IndexError, NotImplementedError)
OUR_ERRORS = (Unsupported, BackendCompilerFailed, RecompileLimitExceeded)
NO = object()


# ---- operands ------------------------------------------------------------------------
def supported(dtype):
    return dtype in _dt.FROM_NP


def from_real(a):
    """A real ndarray met inside the program (a constant, a global, a fallback's input):
    writable ones are copied, so a later NumPy write to them cannot reach the pending graph."""
    if not supported(a.dtype):
        raise Fallback(f"an array of dtype {a.dtype}")
    return ember.from_numpy(a.copy() if a.flags.writeable else a)


def arr(x):
    """``x`` (array_like) as a NumpyArray."""
    if type(x) is NumpyArray:
        return x
    if isinstance(x, Tensor):
        return NumpyArray(x)
    if type(x) is not np.ndarray:
        x = np.asarray(x)
        if type(x) is not np.ndarray:
            raise Fallback(f"an operand of type {type(x).__name__}")
    return NumpyArray(from_real(x))


def dtype_of(t):
    return tensor_meta(t)[1]


def rank_of(t):
    return len(tensor_meta(t)[0])


def cast(t, dtype):
    """``t`` converted to NumPy dtype ``dtype`` (recorded), or ``t`` when it already is."""
    dtype = np.dtype(dtype)
    if dtype_of(t) == dtype:
        return t
    if not supported(dtype):
        raise Fallback(f"dtype {dtype}")
    return t.to(_dt.FROM_NP[dtype])


def dtype_operand(x):
    """What ``np.result_type``/``resolve_dtypes`` should see for ``x`` (Python scalars weak)."""
    if type(x) is NumpyArray or type(x) is np.ndarray or isinstance(x, np.generic):
        return x.dtype
    if type(x) in (int, float, complex):
        return x
    if type(x) is bool:
        return np.dtype(bool)
    if isinstance(x, Tensor):
        return dtype_of(x)
    return np.asarray(x).dtype


def result_type(*xs):
    return np.result_type(*[dtype_operand(x) for x in xs if x is not None])


def scalar_tensor(value, dtype):
    return ember.full((), value, dtype=_dt.FROM_NP[np.dtype(dtype)])


def operand_tensor(x, dtype):
    """Operand ``x`` (array or scalar) as a tensor of NumPy dtype ``dtype``."""
    if type(x) in (int, float, complex, bool) or isinstance(x, np.generic):
        return scalar_tensor(x.item() if isinstance(x, np.generic) else x, dtype)
    return cast(arr(x)._t, dtype)


def axes_of(axis, ndim):
    """NumPy's ``axis`` as ember's ``dim``: None, or a tuple of dims."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return tuple(operator.index(a) for a in axis)
    return (operator.index(axis),)


def finish(t, scalar=False, out=None):
    """Wrap result ``t``; with ``out``, write it there (recorded) and return ``out``."""
    if out is not None:
        if type(out) is tuple and len(out) == 1:
            out = out[0]
        if type(out) is not NumpyArray:
            raise Fallback("out= that is not an array of this program")
        if not np.can_cast(dtype_of(t), out.dtype, "same_kind"):
            raise Fallback("out= of another kind")
        out._t.copy_(t)
        return out
    return NumpyArray(t, scalar)


# ---- leaving the graph -------------------------------------------------------------
def real_array(a, reason=None):
    """The real ndarray of NumpyArray ``a``.  ``reason``: log a graph break (the value
    leaves the graph); without one this is a plain flush, as reading a tensor's value is."""
    s = current_session()
    if reason is not None and s is not None and s.trace is not None:
        s.graph_break(reason)
    d = a._t._data
    if type(d) is not np.ndarray:
        d = d.__ember_array__()
    return d


def to_real(x):
    if type(x) is NumpyArray:
        a = real_array(x)
        return a[()] if x.scalar else a
    if type(x) in (list, tuple):
        return type(x)(to_real(i) for i in x)
    if type(x) is dict:
        return {k: to_real(v) for k, v in x.items()}
    return x


def rewrap(x):
    """Results of real NumPy as values of this program (arrays zero-copy)."""
    if type(x) is np.ndarray:
        return NumpyArray(ember.from_numpy(x)) if supported(x.dtype) else x
    if type(x) in (list, tuple):
        return type(x)(rewrap(i) for i in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # namedtuple results (EigResult)
        return type(x)(*[rewrap(i) for i in x])
    return x


def fallback(func, args, kwargs, reason):
    s = current_session()
    if s is not None:
        s.graph_break(reason)
    return rewrap(func(*to_real(args), **to_real(kwargs)))


def func_name(func):
    mod = getattr(func, "__module__", None) or "numpy"
    mod = "np" if mod in ("numpy", "numpy._core.multiarray") else mod.replace("numpy.", "np.")
    return f"{mod}.{getattr(func, '__name__', func)}"


def real_attribute(a, name):
    """``a.name`` for an ndarray attribute this module does not capture."""
    real = real_array(a, f"ndarray.{name} is not captured")
    value = getattr(real, name)
    if callable(value):
        def method(*args, **kwargs):
            return rewrap(value(*to_real(args), **to_real(kwargs)))
        return method
    return rewrap(value)


# ---- the table of NumPy functions ---------------------------------------------------
HANDLERS = {}


def handles(*funcs):
    def register(h):
        for f in funcs:
            HANDLERS[f] = h
        return h
    return register


def function_call(func, args, kwargs):
    """``__array_function__``: ``func(*args, **kwargs)``."""
    h = HANDLERS.get(func)
    if h is None:
        reason = f"{func_name(func)} is not captured"
    else:
        try:
            return h(*args, **kwargs)
        except Fallback as e:
            reason = f"{func_name(func)}: {e}"
        except OUR_ERRORS:
            raise
        except EMBER_ERRORS as e:
            reason = f"{func_name(func)}: ember raised {type(e).__name__}: {e}"
    return fallback(func, args, kwargs, reason)


def numpy_meta(func, a, **kwargs):
    """(dtype, is a NumPy scalar) of ``func`` on an array like ``a``, asked of NumPy on a
    one-element array of the same dtype and rank (it also validates axis and dtype)."""
    try:
        key = (func, a.dtype, a.ndim, tuple(kwargs.items()))
        hit = _METAS.get(key)
    except TypeError:  # an unhashable argument (a list of axes)
        key = hit = None
    if hit is not None:
        return hit
    dummy = np.ones((1,) * a.ndim, dtype=a.dtype)
    with warnings.catch_warnings():  # ddof=1 of one element warns; only the dtype counts
        warnings.simplefilter("ignore")
        r = func(dummy, **kwargs)
    hit = np.asarray(r).dtype, isinstance(r, np.generic)
    if key is not None:
        _METAS[key] = hit
    return hit


_METAS = {}  # (func, dtype, rank, kwargs) -> what `numpy_meta` found


def no_complex(a):
    """ember's orderings and variances have no complex kernels (NumPy orders complex
    numbers lexicographically): real NumPy answers."""
    if a.dtype.kind == "c":
        raise Fallback("complex numbers")
