"""Compiled C kernels for the hottest eager operators, each with its NumPy fallback.

NumPy runs softmax, layer_norm and activations as chains of whole-array passes with
temporaries, and some of its transcendentals (sigmoid, erf, float64 log/tanh) are
scalar.  These kernels do one fused pass per element or row.  The library is rendered by
`source.py` (its elementwise kernels from the scalar-function table,
`ember._core.scalar_functions`), compiled on first use by the system C compiler and cached
(see `build.py`).  `EAGER` maps each elementwise function with a kernel to the dtypes it is
used for.  Flash attention's forward and backward (`attention.py`), layer_norm with weight and bias
(`layer_norm.py`) and the other row, selection and pooling kernels are in the same library,
each module with its C source and its callers.

A kernel runs only for C-contiguous float32/float64 NumPy arrays of at least
``MIN_SIZE`` elements (below that the ctypes call costs more than it saves), and only
for the dtypes where it measured faster than NumPy; everything else -- and everything
when no compiler is available or ``EMBER_CKERNELS=0`` -- takes the NumPy path, silently;
``status()`` says which is in use and why.  OpenMP threads are used only from
``PARALLEL_SIZE`` elements, as many as the BLAS pool has (``ember.get_num_threads``), so
the two pools never oversubscribe the cores; a forked child runs them single-threaded
(libgomp's pool does not survive fork).
"""
import os

import numpy as np

from .. import blas_threads as _blas_threads
from . import build as _build
from . import source as _source
from .source import EAGER

__all__ = ["status", "unary", "EAGER", "softmax", "softmax_backward", "softmax_vjp", "normalize",
           "normalize_backward", "activation", "activation_backward", "activation_vjp",
           "MIN_SIZE", "PARALLEL_SIZE"]

MIN_SIZE = 4096
PARALLEL_SIZE = 1 << 18
ENABLED = os.environ.get("EMBER_CKERNELS", "1") != "0"

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_ndarray = np.ndarray
_lib = None
_tried = False
_reason = None
_info = {}
_fns = {}


def _check(lib):
    return lib.ck_abi() == _source.ABI_VERSION


def _load():
    global _lib, _tried, _reason, _info
    _tried = True
    _lib, info, _reason = _build.try_build("ember_eager", _source.render(), _check)
    _info = info or _info
    return _lib


def status():
    """Whether the compiled kernels are in use: a dict with ``available`` (bool),
    ``reason`` (why not, or None), the library ``path``, ``compiler``, ``flags``,
    ``cpu_capability`` (the level the library was built for: DEFAULT/AVX2/AVX512, or None
    when none was loaded), ``openmp``, the ``cache_dir`` in use and ``cache_refused`` (why
    the configured cache directory was not trusted and a private one was used instead, or
    None).  Builds the library if that was not tried yet."""
    if not _tried and ENABLED:
        _load()
    reason = _reason if ENABLED else "disabled by EMBER_CKERNELS=0"
    return dict(_info, available=ENABLED and _lib is not None, reason=reason,
                cpu_capability=_info.get("cpu_capability"),
                cache_dir=_info.get("cache_dir", _build.cache_dir()),
                cache_refused=_info.get("cache_refused"))


def _fn(symbol, nargs, restype=None):
    f = _fns.get(symbol)
    if f is None:
        lib = _lib if _tried else _load()
        if lib is None:
            return None
        f = getattr(lib, symbol)
        f.restype = None if restype is None else _types(restype)[0]
        f.argtypes = nargs
        _fns[symbol] = f
    return f


def _threads(n):
    """OpenMP threads for a kernel over ``n`` elements: 1 below ``PARALLEL_SIZE`` or in a
    library built without OpenMP, else ``blas_threads.openmp_threads()``."""
    if n < PARALLEL_SIZE or not _info.get("openmp"):
        return 1
    return _blas_threads.openmp_threads()


def _fits(x, dtypes):
    # the hot check for every call: cheap attribute tests first
    return (ENABLED and type(x) is _ndarray and x.size >= MIN_SIZE and x.flags.c_contiguous
            and _SUFFIX.get(x.dtype) in dtypes)


_P, _N, _I, _D = "c_void_p", "c_ssize_t", "c_int", "c_double"


_TYPES = {}


def _types(*names):
    t = _TYPES.get(names)  # every kernel call names its argument types: built once
    if t is None:
        import ctypes
        t = _TYPES[names] = [getattr(ctypes, n) for n in names]
    return t


def unary(name, fallback, dtypes=("f32", "f64")):
    """A kernel ``(xp, x) -> array`` computing ``ck_<name>`` on arrays that fit, else
    ``fallback(xp, x)``."""
    argt = _types(_P, _P, _N, _I)

    def kernel(xp, x):
        if _fits(x, dtypes):
            f = _fn(f"ck_{name}_{_SUFFIX[x.dtype]}", argt)
            if f is not None:
                y = np.empty_like(x)
                f(x.ctypes.data, y.ctypes.data, x.size, _threads(x.size))
                return y
        return fallback(xp, x)
    kernel.__name__ = kernel.__qualname__ = f"{name}_kernel"
    return kernel


_ACT = {("gelu", False): "gelu", ("gelu", True): "gelu_tanh", ("silu", False): "silu"}


def activation(name, x, tanh=False, dtypes=("f32", "f64")):
    """gelu (exact or tanh) or silu of ``x``, or None when ``x`` does not fit."""
    if not _fits(x, dtypes):
        return None
    f = _fn(f"ck_{_ACT[name, tanh]}_{_SUFFIX[x.dtype]}", _types(_P, _P, _N, _I))
    if f is None:
        return None
    y = np.empty_like(x)
    f(x.ctypes.data, y.ctypes.data, x.size, _threads(x.size))
    return y


def activation_backward(name, g, x, tanh=False, dtypes=("f32", "f64")):
    """``g * d act(x)/dx`` for gelu/silu, or None when the arrays do not fit."""
    if not (_fits(x, dtypes) and type(g) is _ndarray and g.dtype == x.dtype
            and g.shape == x.shape and g.flags.c_contiguous):
        return None
    f = _fn(f"ck_{_ACT[name, tanh]}_backward_{_SUFFIX[x.dtype]}", _types(_P, _P, _P, _N, _I))
    if f is None:
        return None
    y = np.empty_like(x)
    f(g.ctypes.data, x.ctypes.data, y.ctypes.data, x.size, _threads(x.size))
    return y


def softmax(x, dim, log, dtypes=("f32", "f64")):
    """softmax (or log_softmax) of ``x`` along its last dimension ``dim``, or None."""
    if dim != x.ndim - 1 or not _fits(x, dtypes):
        return None
    f = _fn(f"ck_softmax_{_SUFFIX[x.dtype]}", _types(_P, _P, _N, _N, _I, _I))
    if f is None:
        return None
    y = np.empty_like(x)
    n = x.shape[-1]
    f(x.ctypes.data, y.ctypes.data, x.size // n, n, int(log), _threads(x.size))
    return y


def softmax_backward(g, y, dim, log, dtypes=("f32", "f64")):
    """The input gradient of softmax (or log_softmax) along the last dimension ``dim`` from
    the incoming gradient ``g`` and the output ``y``, or None when they do not fit."""
    if (dim != y.ndim - 1 or not _fits(y, dtypes) or type(g) is not _ndarray
            or g.dtype != y.dtype or g.shape != y.shape):
        return None
    f = _fn(f"ck_softmax_backward_{_SUFFIX[y.dtype]}", _types(_P, _P, _P, _N, _N, _I, _I))
    if f is None:
        return None
    g = np.ascontiguousarray(g)  # a broadcast gradient (sum's backward) is copied once
    gx = np.empty_like(y)
    n = y.shape[-1]
    f(g.ctypes.data, y.ctypes.data, gx.ctypes.data, y.size // n, n, int(log), _threads(y.size))
    return gx


def normalize(x, dims, eps, dtypes=("f32", "f64")):
    """``((x - mean) * rstd, mean, rstd)`` over trailing ``dims`` (stats keep those dims as
    1), or None when ``x`` does not fit or ``dims`` are not the trailing ones."""
    nd = x.ndim
    if not dims or tuple(dims) != tuple(range(nd - len(dims), nd)) or not _fits(x, dtypes):
        return None
    f = _fn(f"ck_normalize_{_SUFFIX[x.dtype]}", _types(_P, _P, _P, _P, _N, _N, _D, _I))
    if f is None:
        return None
    lead = x.shape[:nd - len(dims)]
    stat_shape = lead + (1,) * len(dims)
    y = np.empty_like(x)
    mean = np.empty(stat_shape, x.dtype)
    rstd = np.empty(stat_shape, x.dtype)
    rows = mean.size
    f(x.ctypes.data, y.ctypes.data, mean.ctypes.data, rstd.ctypes.data, rows, x.size // rows,
      float(eps), _threads(x.size))
    return y, mean, rstd


def normalize_backward(g, gm, gr, xhat, rstd, dims, dtypes=("f32", "f64")):
    """The gradient of `normalize`'s input from those of its three outputs (``gm``/``gr``
    None when absent), or None when the arrays do not fit or ``dims`` are not the trailing
    ones."""
    nd = xhat.ndim
    if (not dims or tuple(dims) != tuple(range(nd - len(dims), nd)) or not _fits(xhat, dtypes)
            or type(g) is not _ndarray or g.dtype != xhat.dtype or g.shape != xhat.shape
            or type(rstd) is not _ndarray or rstd.dtype != xhat.dtype):
        return None
    f = _fn(f"ck_normalize_backward_{_SUFFIX[xhat.dtype]}",
            _types(_P, _P, _P, _P, _P, _P, _N, _N, _I))
    if f is None:
        return None
    rows = rstd.size
    stat_shape = xhat.shape[:nd - len(dims)] + (1,) * len(dims)
    if rstd.shape != stat_shape:
        return None
    stats = [np.ascontiguousarray(np.broadcast_to(s, stat_shape), xhat.dtype)
             if s is not None else None for s in (rstd, gm, gr)]
    g = np.ascontiguousarray(g)
    gx = np.empty_like(xhat)
    f(g.ctypes.data, xhat.ctypes.data, *(None if s is None else s.ctypes.data for s in stats),
      gx.ctypes.data, rows, xhat.size // rows, _threads(xhat.size))
    return gx


_I64 = np.dtype(np.int64)


def _ce_fits(x, target, weight):
    # no MIN_SIZE: NumPy's log-softmax and gather cost tens of microseconds on any size
    return (ENABLED and type(x) is _ndarray and x.ndim == 2 and x.flags.c_contiguous
            and x.dtype in _SUFFIX and x.size and type(target) is _ndarray
            and target.dtype == _I64 and target.shape == x.shape[:1]
            and (weight is None or (type(weight) is _ndarray and weight.dtype == x.dtype
                                    and weight.shape == x.shape[1:])))


def cross_entropy(x, target, weight, ignore_index, smoothing):
    """Per row of (N, C) logits ``x``: the nll of its target (times its weight), the label
    smoothing term ``-sum_c weight_c log_softmax(x)_c`` (zeros unless ``smoothing``) and the
    target's weight, all 0 for an ignored row; or None when the arrays do not fit.  A target
    out of range raises torch's IndexError."""
    if not _ce_fits(x, target, weight):
        return None
    sfx = _SUFFIX[x.dtype]
    f = _fn(f"ck_ce_{sfx}", _types(_P, _P, _P, "c_int64", _I, _P, _P, _P, _N, _N, _I), _N)
    if f is None:
        return None
    target = np.ascontiguousarray(target)
    weight = None if weight is None else np.ascontiguousarray(weight)
    nll, sm, wt = np.empty((3,) + target.shape, x.dtype)
    bad = f(x.ctypes.data, target.ctypes.data, None if weight is None else weight.ctypes.data,
            int(ignore_index), int(bool(smoothing)), nll.ctypes.data, sm.ctypes.data,
            wt.ctypes.data, x.shape[0], x.shape[1], _threads(x.size))
    if bad >= 0:
        raise IndexError(f"Target {int(target[bad])} is out of bounds.")
    return nll, sm, wt


def cross_entropy_grad(g, x, target, weight, ignore_index, reduction, smoothing):
    """d cross_entropy / d ``x`` for (N, C) logits (``g``: the loss's gradient, one per row
    with reduction "none"), or None when the arrays do not fit or a target is out of range
    (the NumPy path then reports it)."""
    if not _ce_fits(x, target, weight) or type(g) is not _ndarray or g.dtype != x.dtype:
        return None
    rows = reduction == "none"
    if g.shape != (target.shape if rows else ()):
        return None
    f = _fn(f"ck_ce_grad_{_SUFFIX[x.dtype]}",
            _types(_P, _P, _P, "c_int64", _D, _P, _I, _I, _P, _N, _N, _I), _N)
    if f is None:
        return None
    g = np.ascontiguousarray(g)
    target = np.ascontiguousarray(target)
    weight = None if weight is None else np.ascontiguousarray(weight)
    out = np.empty_like(x)
    bad = f(x.ctypes.data, target.ctypes.data, None if weight is None else weight.ctypes.data,
            int(ignore_index), float(smoothing), g.ctypes.data, int(rows),
            int(reduction == "mean"), out.ctypes.data, x.shape[0], x.shape[1], _threads(x.size))
    return None if bad >= 0 else out


def activation_vjp(name, g, x, tanh=False, dtypes=("f32", "f64")):
    """The fused ``g * d act(x)/dx`` as a Tensor when a vjp runs plainly -- no graph being
    recorded (``create_graph=False``), no mode (tracing, vmap, forward AD) or override
    active -- else None (the caller then writes the derivative in ember ops)."""
    if not _plain(g, x):
        return None
    r = activation_backward(name, g._data, x._data, tanh, dtypes)
    return None if r is None else _wrap(r)


def softmax_vjp(g, y, dim, log, dtypes=("f32", "f64")):
    """`softmax_backward` as a Tensor from Tensors ``g`` and ``y`` when the vjp runs plainly
    (as `activation_vjp`), else None."""
    if not _plain(g, y):
        return None
    r = softmax_backward(g._data, y._data, dim, log, dtypes)
    return None if r is None else _wrap(r)


def _plain(*tensors):
    # no graph being recorded, no mode or override active, plain Tensors
    from ..state import SHARED, STATE
    from ..tensor import Tensor
    return not (STATE.grad_enabled or STATE.intercept or SHARED.forward or SHARED.overrides
                or any(type(t) is not Tensor for t in tensors))


def _wrap(a):
    from ..tensor import wrap
    return wrap(a)
