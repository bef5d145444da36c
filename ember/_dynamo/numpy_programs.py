"""Compiling NumPy programs: ``ember.compile(f)`` on a function of ``np.ndarray``s.

A compiled call whose arguments hold ndarrays comes here (`run_numpy_program`).  Each
ndarray argument is handed to the function as a `NumpyArray` over ``ember.from_numpy`` of
it (zero-copy, so in-place writes reach the caller's array), inside the same kind of
capture session as any compiled call: the NumPy calls the function makes arrive through
NumPy's own protocols (``__array_ufunc__``, ``__array_function__``) and become ember ops
that the session records (`ember._dynamo.numpy_ufuncs`, ``numpy_functions`` ...), with
NumPy's dtypes (float64 by default, NEP 50 promotion).  A NumPy call with no mapping is a
graph break: the pending graph runs and real NumPy answers.  When the function returns, the
graph runs and every NumpyArray in the result becomes an ``np.ndarray`` again (or the NumPy
scalar NumPy would have returned).  Mixed programs stay one graph: ``ember.from_numpy(a)``
of such an array is its tensor, and ``t.numpy()`` of a pending tensor answers a NumpyArray
through the session's ``numpy_hook`` (once lazy.py consults it).

Not captured: ``np.asarray(a)``/``np.array(a)`` (NumPy converts through ``__array__``, so the
values leave the graph and what follows runs in NumPy), ``isinstance(a, np.ndarray)`` is
False for a NumpyArray, and a NumpyArray stored outside the call (a global list) stays one.
"""
import numpy as np

from .._core import dtype as _dt
from .._core.state import STATE
from . import numpy_functions  # noqa: F401  (binds the NumpyArray protocols)
from .numpy_array import NumpyArray
from .session import CaptureSession

__all__ = ["run_numpy_program", "NumpyArray"]


def run_numpy_program(compiled, args, kwargs, explain=None):
    """Call ``compiled.fn(*args, **kwargs)`` with its ndarrays captured (module docstring)."""
    session = _NumpySession(compiled.cache, explain=explain)
    session.module = compiled.module
    session.numpy_hook = _tensor_numpy
    names = compiled._sig_names
    with session:
        memo, flat, flat_names = {}, [], []
        wargs = tuple(_wrap(a, names[i] if i < len(names) else f"args_{i}", memo, flat,
                            flat_names, 0) for i, a in enumerate(args))
        wkwargs = {k: _wrap(v, k, memo, flat, flat_names, 0) for k, v in kwargs.items()}
        session.bind_arguments(flat, flat_names)
        result = compiled.fn(*wargs, **wkwargs)
    # the session has run the last graph: every array's tensor holds its value
    return _unwrap(result, 0)


class _NumpySession(CaptureSession):
    """A capture session during which public ember functions look for NumpyArrays among
    their arguments (``ember.from_numpy(a)``): ``STATE.overrides`` is raised while the
    user's Python runs, and lowered while a graph runs (eager kernels take their fast C
    paths only when no override is possible)."""

    def __enter__(self):
        STATE.overrides += 1
        self._raised = 1
        return super().__enter__()

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            STATE.overrides -= self._raised
            self._raised = 0

    def flush(self, reason="the function returned"):
        _drop_proxies(self.trace)
        raised = self._raised
        STATE.overrides -= raised
        try:
            super().flush(reason)
        finally:
            STATE.overrides += raised


def _drop_proxies(trace):
    """Forget the ``_data`` proxies of the trace's lazy tensors before it runs.  A proxy
    refers back to its tensor, a cycle that keeps dead intermediates alive until the cyclic
    GC happens to run, and every live lazy tensor is a graph output: which ones are would
    vary from call to call (and recompile).  Freed now, the dead ones go; a proxy is made
    again on the next read.  (A workaround until lazy.py breaks the cycle itself.)"""
    if trace is None:
        return
    for h in getattr(trace, "holders", ()):
        t = h()
        if t is not None:
            lz = t.__dict__.get("_lazy")
            if getattr(lz, "proxy", None) is not None:
                lz.proxy = None
        t = None


def _tensor_numpy(t):
    """``t.numpy()`` of a pending tensor inside a NumPy program: a NumpyArray over it."""
    return NumpyArray(t)


def _wrap(x, name, memo, flat, names, depth):
    """Argument ``x`` with its ndarrays as NumpyArrays (one per distinct array object)."""
    if type(x) is np.ndarray:
        if x.dtype not in _dt.FROM_NP:
            return x  # strings, objects, datetimes: real NumPy handles every use
        w = memo.get(id(x))
        if w is None:
            from ..ops import from_numpy
            w = memo[id(x)] = NumpyArray(from_numpy(x))
            flat.append(w._t)
            names.append(name)
        return w
    if depth < 4 and type(x) in (list, tuple):
        return type(x)(_wrap(v, f"{name}_{i}", memo, flat, names, depth + 1)
                       for i, v in enumerate(x))
    if depth < 4 and type(x) is dict:
        return {k: _wrap(v, f"{name}_{k}", memo, flat, names, depth + 1) for k, v in x.items()}
    return x


def _unwrap(x, depth):
    """The function's result with its NumpyArrays as ndarrays (or NumPy scalars)."""
    if type(x) is NumpyArray:
        a = x.materialize()
        return a[()] if x.scalar else a
    if depth < 8 and type(x) in (list, tuple):
        return type(x)(_unwrap(v, depth + 1) for v in x)
    if depth < 8 and isinstance(x, tuple) and hasattr(x, "_fields"):
        return type(x)(*[_unwrap(v, depth + 1) for v in x])
    if depth < 8 and type(x) is dict:
        return {k: _unwrap(v, depth + 1) for k, v in x.items()}
    return x
